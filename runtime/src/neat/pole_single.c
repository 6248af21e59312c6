/* The single cart-pole task (pole1): Sutton/Anderson/Barto physics as in Stanley's pole1.cpp. */
#include <math.h>
#include <stddef.h>

#include "otc/pole.h"
#include "otc/rng.h"
#include "pole_trig.h"

#define POLE1_GRAVITY      9.8
#define POLE1_MASS_CART    1.0
#define POLE1_MASS_POLE    0.1
#define POLE1_TOTAL_MASS   (POLE1_MASS_POLE + POLE1_MASS_CART)
#define POLE1_LENGTH       0.5 /* half the pole's length */
#define POLE1_POLEMASS_LEN (POLE1_MASS_POLE * POLE1_LENGTH)
#define POLE1_FORCE_MAG    10.0
#define POLE1_TAU          0.02
#define POLE1_FOURTHIRDS   (4.0 / 3.0)
/* The reference's constants, kept digit for digit so failure steps match it. */
#define POLE1_X_LIMIT    2.4
#define POLE1_TWELVE_DEG 0.2094384

void otc_pole1_default_config(otc_pole1_config *cfg) {
    if (!cfg) return;
    cfg->max_steps = OTC_POLE1_SUCCESS_STEPS;
    cfg->n_outputs = 1;
    cfg->random_start = 0;
    cfg->seed = 0;
}

void otc_pole1_random_start(uint64_t seed, otc_pole1_state *st) {
    otc_rng rng;
    if (!st) return;
    otc_rng_seed(&rng, seed);
    /* Integer draws on the 0.001 grid, like pole1.cpp's lrand48() % N / 1000. */
    st->s[0] = otc_rng_below(&rng, 4800) / 1000.0 - 2.4;
    st->s[1] = otc_rng_below(&rng, 2000) / 1000.0 - 1.0;
    st->s[2] = otc_rng_below(&rng, 400) / 1000.0 - 0.2;
    st->s[3] = otc_rng_below(&rng, 3000) / 1000.0 - 1.5;
}

void otc_pole1_step(otc_pole1_state *st, int push_right) {
    double x = st->s[0], dx = st->s[1], th = st->s[2], dth = st->s[3];
    double force = push_right ? POLE1_FORCE_MAG : -POLE1_FORCE_MAG;
    /* The reference's divisions by the total mass as multiplications by its inverse (one
     * division is left); sin and cos from pole_trig.h. */
    const double inv_mass = 1.0 / POLE1_TOTAL_MASS;
    double c, s, temp, thacc, xacc;
    pole_sincos(th, &s, &c);
    temp = (force + POLE1_POLEMASS_LEN * dth * dth * s) * inv_mass;
    thacc = (POLE1_GRAVITY * s - c * temp) /
            (POLE1_LENGTH * (POLE1_FOURTHIRDS - POLE1_MASS_POLE * c * c * inv_mass));
    xacc = temp - POLE1_POLEMASS_LEN * thacc * c * inv_mass;
    /* Euler: positions advance with the old velocities. */
    st->s[0] = x + POLE1_TAU * dx;
    st->s[1] = dx + POLE1_TAU * xacc;
    st->s[2] = th + POLE1_TAU * dth;
    st->s[3] = dth + POLE1_TAU * thacc;
}

int otc_pole1_failed(const otc_pole1_state *st) {
    /* Written as !(inside) so a NaN state counts as a failure rather than balancing forever. */
    return !(fabs(st->s[0]) <= POLE1_X_LIMIT && fabs(st->s[2]) <= POLE1_TWELVE_DEG &&
             isfinite(st->s[1]) && isfinite(st->s[3]));
}

void otc_pole1_observe(const otc_pole1_state *st, double *obs) {
    obs[0] = (st->s[0] + 2.4) / 4.8;
    obs[1] = (st->s[1] + 0.75) / 1.5;
    obs[2] = (st->s[2] + POLE1_TWELVE_DEG) / 0.41;
    obs[3] = (st->s[3] + 1.0) / 2.0;
    obs[4] = 1.0;
}

otc_status otc_pole1_run(const otc_pole1_config *cfg, const otc_pole_agent *agent,
                         otc_pole_result *result) {
    otc_pole1_config def;
    otc_pole1_state st = {{0.0, 0.0, 0.0, 0.0}};
    double obs[OTC_POLE1_N_OBS], out[2];
    int steps = 0;

    if (!cfg) {
        otc_pole1_default_config(&def);
        cfg = &def;
    }
    if (!agent || !agent->policy || !result)
        return otc_fail(OTC_ERR_ARG, "otc_pole1_run: agent, agent->policy and result are required");
    if (cfg->max_steps <= 0)
        return otc_fail(OTC_ERR_ARG, "otc_pole1_run: max_steps = %d, must be > 0", cfg->max_steps);
    if (cfg->n_outputs != 1 && cfg->n_outputs != 2)
        return otc_fail(OTC_ERR_ARG, "otc_pole1_run: n_outputs = %d, must be 1 or 2",
                        cfg->n_outputs);

    if (cfg->random_start) otc_pole1_random_start(cfg->seed, &st);
    if (agent->reset) agent->reset(agent->ctx);
    while (steps < cfg->max_steps) {
        int push_right;
        otc_pole1_observe(&st, obs);
        out[0] = out[1] = 0.0;
        agent->policy(agent->ctx, obs, OTC_POLE1_N_OBS, out, cfg->n_outputs);
        /* Two outputs: pole1.cpp pushes left when out1 > out2 and right otherwise. */
        push_right = cfg->n_outputs == 2 ? !(out[0] > out[1]) : out[0] > 0.5;
        otc_pole1_step(&st, push_right);
        if (otc_pole1_failed(&st)) break;
        steps++;
    }
    result->steps = steps;
    result->success = steps == cfg->max_steps;
    result->fitness = steps;
    return OTC_OK;
}
