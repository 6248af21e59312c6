/* neat-python's single cart-pole (otc/pole.h): its example's physics, starts and fitness. */
#include <math.h>
#include <stddef.h>

#include "otc/pole.h"

#define NPP_GRAVITY     9.8
#define NPP_MASS_CART   1.0
#define NPP_MASS_POLE   0.1
#define NPP_HALF_LEN    0.5
#define NPP_FORCE       10.0
#define NPP_X_LIMIT     2.4
#define NPP_ANGLE_LIMIT (45 * 3.14159265358979323846 / 180) /* cart_pole.py: 45 * pi / 180 */

static double uniform(otc_rng *rng, double lo, double hi) {
    return lo + (hi - lo) * otc_rng_uniform(rng);
}

void otc_np_pole_start(otc_rng *rng, otc_np_pole_state *st) {
    *st = (otc_np_pole_state){0};
    st->x = uniform(rng, -0.5 * NPP_X_LIMIT, 0.5 * NPP_X_LIMIT);
    st->theta = uniform(rng, -0.5 * NPP_ANGLE_LIMIT, 0.5 * NPP_ANGLE_LIMIT);
    st->dx = uniform(rng, -1.0, 1.0);
    st->dtheta = uniform(rng, -1.0, 1.0);
}

void otc_np_pole_step(otc_np_pole_state *st, double force) {
    const double g = NPP_GRAVITY, mp = NPP_MASS_POLE, mt = NPP_MASS_POLE + NPP_MASS_CART,
                 L = NPP_HALF_LEN, dt = OTC_NP_POLE_TIME_STEP;
    double tacc0 = st->tacc, xacc0 = st->xacc;
    st->x += dt * st->dx + 0.5 * xacc0 * dt * dt;
    st->theta += dt * st->dtheta + 0.5 * tacc0 * dt * dt;
    /* Florian, "Correct equations for the dynamics of the cart-pole system", as cart_pole.py */
    double s = sin(st->theta), c = cos(st->theta);
    double tacc1 = (g * s + c * (-force - mp * L * st->dtheta * st->dtheta * s) / mt) /
                   (L * (4.0 / 3 - mp * c * c / mt));
    double xacc1 = (force + mp * L * (st->dtheta * st->dtheta * s - tacc1 * c)) / mt;
    st->dx += 0.5 * (xacc0 + xacc1) * dt;
    st->dtheta += 0.5 * (tacc0 + tacc1) * dt;
    st->tacc = tacc1;
    st->xacc = xacc1;
    st->t += dt;
}

int otc_np_pole_failed(const otc_np_pole_state *st) {
    return !(fabs(st->x) < NPP_X_LIMIT && fabs(st->theta) < NPP_ANGLE_LIMIT && isfinite(st->dx) &&
             isfinite(st->dtheta));
}

void otc_np_pole_observe(const otc_np_pole_state *st, double *obs) {
    obs[0] = 0.5 * (st->x + NPP_X_LIMIT) / NPP_X_LIMIT;
    obs[1] = (st->dx + 0.75) / 1.5;
    obs[2] = 0.5 * (st->theta + NPP_ANGLE_LIMIT) / NPP_ANGLE_LIMIT;
    obs[3] = (st->dtheta + 1.0) / 2.0;
}

otc_status otc_np_pole_run(uint64_t seed, const otc_pole_agent *agent, otc_pole_result *result) {
    if (!agent || !agent->policy || !result)
        return otc_fail(OTC_ERR_ARG,
                        "otc_np_pole_run: agent, agent->policy and result are required");
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    double obs[OTC_NP_POLE_N_OBS], out[1];
    *result = (otc_pole_result){0, 0, INFINITY};
    for (int run = 0; run < OTC_NP_POLE_RUNS; run++) {
        otc_np_pole_state st;
        otc_np_pole_start(&rng, &st);
        if (agent->reset) agent->reset(agent->ctx);
        double fitness = 0.0;
        int steps = 0;
        while (st.t < OTC_NP_POLE_SECONDS) {
            otc_np_pole_observe(&st, obs);
            out[0] = 0.0;
            agent->policy(agent->ctx, obs, OTC_NP_POLE_N_OBS, out, 1);
            otc_np_pole_step(&st, out[0] > 0.5 ? NPP_FORCE : -NPP_FORCE);
            if (otc_np_pole_failed(&st)) break;
            fitness = st.t;
            steps++;
        }
        if (fitness < result->fitness) {
            result->fitness = fitness;
            result->steps = steps;
            result->success = fitness >= OTC_NP_POLE_SECONDS;
        }
    }
    return OTC_OK;
}
