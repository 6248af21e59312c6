/* The single cart-pole task (pole1): Sutton/Anderson/Barto physics as in Stanley's pole1.cpp. */
#include <math.h>
#include <stddef.h>

#include "otc/pole.h"
#include "otc/pole_lanes.h"
#include "otc/rng.h"
#include "pole_lanes_drive.h"
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

/* One Euler step of state (x, dx, th, dth) given sin and cos of th; one function for the scalar
 * step and the lanes, so both compute the same operations. */
static inline void pole1_euler(double force, double s, double c, double *x, double *dx, double *th,
                               double *dth) {
    /* The reference's divisions by the total mass as multiplications by its inverse (one
     * division is left); sin and cos from pole_trig.h. */
    const double inv_mass = 1.0 / POLE1_TOTAL_MASS;
    double temp, thacc, xacc, v = *dx, w = *dth;
    temp = (force + POLE1_POLEMASS_LEN * w * w * s) * inv_mass;
    thacc = (POLE1_GRAVITY * s - c * temp) /
            (POLE1_LENGTH * (POLE1_FOURTHIRDS - POLE1_MASS_POLE * c * c * inv_mass));
    xacc = temp - POLE1_POLEMASS_LEN * thacc * c * inv_mass;
    /* Euler: positions advance with the old velocities. */
    *x = *x + POLE1_TAU * v;
    *dx = v + POLE1_TAU * xacc;
    *th = *th + POLE1_TAU * w;
    *dth = w + POLE1_TAU * thacc;
}

static double pole1_force(int push_right) {
    return push_right ? POLE1_FORCE_MAG : -POLE1_FORCE_MAG;
}

void otc_pole1_step(otc_pole1_state *st, int push_right) {
    double c, s;
    pole_sincos(st->s[2], &s, &c);
    pole1_euler(pole1_force(push_right), s, c, &st->s[0], &st->s[1], &st->s[2], &st->s[3]);
}

/* Written as !(inside) so a NaN state counts as a failure rather than balancing forever. */
static int pole1_failed(double x, double dx, double th, double dth) {
    return !(fabs(x) <= POLE1_X_LIMIT && fabs(th) <= POLE1_TWELVE_DEG && isfinite(dx) &&
             isfinite(dth));
}

int otc_pole1_failed(const otc_pole1_state *st) {
    return pole1_failed(st->s[0], st->s[1], st->s[2], st->s[3]);
}

/* Two outputs: pole1.cpp pushes left when out1 > out2 and right otherwise. */
static int pole1_push_right(const double *out, int n_outputs) {
    return n_outputs == 2 ? !(out[0] > out[1]) : out[0] > 0.5;
}

void otc_pole1_observe(const otc_pole1_state *st, double *obs) {
    obs[0] = (st->s[0] + 2.4) / 4.8;
    obs[1] = (st->s[1] + 0.75) / 1.5;
    obs[2] = (st->s[2] + POLE1_TWELVE_DEG) / 0.41;
    obs[3] = (st->s[3] + 1.0) / 2.0;
    obs[4] = 1.0;
}

static otc_status pole1_check(const otc_pole1_config *cfg, const char *who) {
    if (cfg->max_steps <= 0)
        return otc_fail(OTC_ERR_ARG, "%s: max_steps = %d, must be > 0", who, cfg->max_steps);
    if (cfg->n_outputs != 1 && cfg->n_outputs != 2)
        return otc_fail(OTC_ERR_ARG, "%s: n_outputs = %d, must be 1 or 2", who, cfg->n_outputs);
    return OTC_OK;
}

/* A trial's steps from *st after `steps` balanced ones until it fails or balances max_steps;
 * returns the steps balanced. One loop for the scalar trial and a lane left running alone. */
static int pole1_trial(otc_pole1_state *st, int steps, int max_steps, int n_outputs,
                       const otc_pole_agent *agent) {
    double obs[OTC_POLE1_N_OBS], out[2];
    while (steps < max_steps) {
        otc_pole1_observe(st, obs);
        out[0] = out[1] = 0.0;
        agent->policy(agent->ctx, obs, OTC_POLE1_N_OBS, out, n_outputs);
        otc_pole1_step(st, pole1_push_right(out, n_outputs));
        if (otc_pole1_failed(st)) break;
        steps++;
    }
    return steps;
}

otc_status otc_pole1_run(const otc_pole1_config *cfg, const otc_pole_agent *agent,
                         otc_pole_result *result) {
    otc_pole1_config def;
    otc_pole1_state st = {{0.0, 0.0, 0.0, 0.0}};
    int steps;

    otc_status status;
    if (!cfg) {
        otc_pole1_default_config(&def);
        cfg = &def;
    }
    if (!agent || !agent->policy || !result)
        return otc_fail(OTC_ERR_ARG, "otc_pole1_run: agent, agent->policy and result are required");
    if ((status = pole1_check(cfg, "otc_pole1_run")) != OTC_OK) return status;

    if (cfg->random_start) otc_pole1_random_start(cfg->seed, &st);
    if (agent->reset) agent->reset(agent->ctx);
    steps = pole1_trial(&st, 0, cfg->max_steps, cfg->n_outputs, agent);
    result->steps = steps;
    result->success = steps == cfg->max_steps;
    result->fitness = steps;
    return OTC_OK;
}

/* ---- Lanes (otc/pole_lanes.h): otc_pole1_step's stages over every lane -------------------- */

#define LN OTC_POLE_LANES_MAX

otc_status otc_pole1_lanes_init(otc_pole1_lanes *L, int lanes, const otc_pole1_config *cfg) {
    if (!L || !cfg) return otc_fail(OTC_ERR_ARG, "otc_pole1_lanes_init: NULL argument");
    if (lanes < 1 || lanes > LN)
        return otc_fail(OTC_ERR_ARG, "otc_pole1_lanes_init: %d lanes, must be 1 to %d", lanes, LN);
    otc_status status = pole1_check(cfg, "otc_pole1_lanes_init");
    if (status != OTC_OK) return status;
    *L =
        (otc_pole1_lanes){.lanes = lanes, .max_steps = cfg->max_steps, .n_outputs = cfg->n_outputs};
    return OTC_OK;
}

/* Lane `lane`'s state as a scalar trial's. */
static otc_pole1_state pole1_lane_state(const otc_pole1_lanes *L, int lane) {
    otc_pole1_state st;
    for (int i = 0; i < 4; i++) st.s[i] = L->s[i][lane];
    return st;
}

void otc_pole1_lanes_start(otc_pole1_lanes *L, int lane, const otc_pole1_state *start) {
    for (int i = 0; i < 4; i++) L->s[i][lane] = start->s[i];
    L->steps[lane] = 0;
    L->running[lane] = true;
}

void otc_pole1_lanes_observe(const otc_pole1_lanes *L, int lane, double *obs) {
    otc_pole1_state st = pole1_lane_state(L, lane);
    otc_pole1_observe(&st, obs);
}

unsigned otc_pole1_lanes_step(otc_pole1_lanes *L, const double *out) {
    int n = L->lanes, at[LN], m = 0;
    double force[LN] = {0}, y[4][LN], s[LN], c[LN];
    unsigned ended = 0;
    /* The running lanes packed side by side (idle ones cost nothing). */
    for (int l = 0; l < n; l++)
        if (L->running[l]) at[m++] = l;
    for (int k = 0; k < m; k++) {
        force[k] = pole1_force(pole1_push_right(&out[2 * at[k]], L->n_outputs));
        for (int i = 0; i < 4; i++) y[i][k] = L->s[i][at[k]];
    }
    pole_sincos_lanes(m, y[2], s, c);
    for (int k = 0; k < m; k++)
        pole1_euler(force[k], s[k], c[k], &y[0][k], &y[1][k], &y[2][k], &y[3][k]);
    for (int k = 0; k < m; k++)
        for (int i = 0; i < 4; i++) L->s[i][at[k]] = y[i][k];
    for (int l = 0; l < n; l++) {
        if (!L->running[l]) continue;
        if (pole1_failed(L->s[0][l], L->s[1][l], L->s[2][l], L->s[3][l]) ||
            ++L->steps[l] == L->max_steps) {
            L->running[l] = false;
            ended |= 1u << l;
        }
    }
    return ended;
}

void otc_pole1_lanes_result(const otc_pole1_lanes *L, int lane, otc_pole_result *result) {
    result->steps = L->steps[lane];
    result->success = L->steps[lane] == L->max_steps;
    result->fitness = L->steps[lane];
}

/* The driver's view of the single pole's lanes (pole_lanes_drive.h). */
static void pole1_lane_start(void *L, int lane, const void *start) {
    otc_pole1_lanes_start(L, lane, start);
}

static void pole1_lane_finish_alone(void *vL, int lane, const otc_pole_agent *agent) {
    otc_pole1_lanes *L = vL;
    otc_pole1_state st = pole1_lane_state(L, lane);
    L->steps[lane] = pole1_trial(&st, L->steps[lane], L->max_steps, L->n_outputs, agent);
    L->running[lane] = false;
}

static unsigned pole1_lane_act(void *vL, const otc_pole_lane_source *src) {
    otc_pole1_lanes *L = vL;
    double obs[OTC_POLE1_N_OBS], out[2 * LN];
    for (int l = 0; l < L->lanes; l++) {
        if (!L->running[l]) continue;
        const otc_pole_agent *a = &src->agents[l];
        otc_pole1_lanes_observe(L, l, obs);
        out[2 * l] = out[2 * l + 1] = 0.0;
        a->policy(a->ctx, obs, OTC_POLE1_N_OBS, &out[2 * l], L->n_outputs);
    }
    return otc_pole1_lanes_step(L, out);
}

static void pole1_lane_result(const void *L, int lane, otc_pole_result *result) {
    otc_pole1_lanes_result(L, lane, result);
}

otc_status otc_pole1_lanes_run(int lanes, const otc_pole1_config *cfg,
                               const otc_pole_lane_source *src) {
    otc_pole1_lanes L;
    otc_status status = otc_pole1_lanes_init(&L, lanes, cfg);
    if (status != OTC_OK) return status;
    otc_pole_lanes_kind k = {&L,
                             lanes,
                             L.running,
                             pole1_lane_start,
                             pole1_lane_finish_alone,
                             pole1_lane_act,
                             pole1_lane_result};
    otc_pole_lanes_drive(&k, src);
    return OTC_OK;
}
