/* The double-pole tasks (dpv, dpnv): Wieland's equations integrated as in Stanley's NEAT 1.2.1
 * CartPole, Gruau's anti-wiggle fitness and the 625-start generalisation test. */
#include <math.h>
#include <stddef.h>

#include "otc/pole.h"
#include "otc/pole_lanes.h"
#include "pole_lanes_drive.h"
#include "pole_trig.h"

/* The reference's constants, digit for digit, so trajectories and failure steps match it. */
#define DP_MUP         0.000002
#define DP_GRAVITY     (-9.8)
#define DP_MASS_CART   1.0
#define DP_MASS_POLE_1 0.1
#define DP_MASS_POLE_2 0.01
#define DP_LENGTH_1    0.5  /* half the long pole's length */
#define DP_LENGTH_2    0.05 /* half the short pole's length */
#define DP_FORCE_MAG   10.0
#define DP_TAU         0.01 /* one RK4 step; two per action */
#define DP_X_LIMIT     2.4
#define DP_ANGLE_LIMIT 0.628329 /* the reference's thirty_six_degrees */
#define DP_START_ANGLE 0.07
#define JIGGLE_WINDOW  OTC_POLE_JIGGLE_WINDOW

/* Accelerations (derivs[1], [3], [5]) for the state st under `force`, as the reference's
 * CartPole::step; derivs[0], [2], [4] are the caller's (the velocities). sin and cos come from
 * pole_trig.h (the caller's), and the reference's divisions by constants are multiplications
 * by their quotients: one division is left, by the total effective mass. One function for the
 * scalar step and the lanes, so both compute the same operations. */
static inline void dp_accel_of(double force, double dtheta_1, double dtheta_2, double sintheta_1,
                               double costheta_1, double sintheta_2, double costheta_2,
                               double *xacc, double *thacc_1, double *thacc_2) {
    double gsintheta_1, gsintheta_2, temp_1, temp_2, fi_1, fi_2, mi_1, mi_2, acc;
    const double ml_1 = DP_LENGTH_1 * DP_MASS_POLE_1;
    const double ml_2 = DP_LENGTH_2 * DP_MASS_POLE_2;
    gsintheta_1 = DP_GRAVITY * sintheta_1;
    gsintheta_2 = DP_GRAVITY * sintheta_2;
    temp_1 = dtheta_1 * (DP_MUP / ml_1);
    temp_2 = dtheta_2 * (DP_MUP / ml_2);
    /* Effective forces and masses the poles put on the cart. */
    fi_1 = (ml_1 * dtheta_1 * dtheta_1 * sintheta_1) +
           (0.75 * DP_MASS_POLE_1 * costheta_1 * (temp_1 + gsintheta_1));
    fi_2 = (ml_2 * dtheta_2 * dtheta_2 * sintheta_2) +
           (0.75 * DP_MASS_POLE_2 * costheta_2 * (temp_2 + gsintheta_2));
    mi_1 = DP_MASS_POLE_1 * (1 - (0.75 * costheta_1 * costheta_1));
    mi_2 = DP_MASS_POLE_2 * (1 - (0.75 * costheta_2 * costheta_2));

    acc = (force + fi_1 + fi_2) / (mi_1 + mi_2 + DP_MASS_CART);
    *xacc = acc;
    *thacc_1 = (acc * costheta_1 + gsintheta_1 + temp_1) * (-0.75 / DP_LENGTH_1);
    *thacc_2 = (acc * costheta_2 + gsintheta_2 + temp_2) * (-0.75 / DP_LENGTH_2);
}

static void dp_accel(double force, const double *st, double *derivs) {
    double sintheta_1, costheta_1, sintheta_2, costheta_2;
    pole_sincos(st[2], &sintheta_1, &costheta_1);
    pole_sincos(st[4], &sintheta_2, &costheta_2);
    dp_accel_of(force, st[3], st[5], sintheta_1, costheta_1, sintheta_2, costheta_2, &derivs[1],
                &derivs[3], &derivs[5]);
}

/* Full derivative of the 6-vector. */
static void dp_derivs(double force, const double *y, double *dydx) {
    dydx[0] = y[1];
    dydx[2] = y[3];
    dydx[4] = y[5];
    dp_accel(force, y, dydx);
}

/* One classical RK4 step of DP_TAU, with the reference's (Numerical Recipes) operation order. */
static void dp_rk4(double force, double *y) {
    const double hh = DP_TAU * 0.5, h6 = DP_TAU / 6.0;
    double dydx[6], dym[6], dyt[6], yt[6];
    int i;
    dp_derivs(force, y, dydx);
    for (i = 0; i < 6; i++) yt[i] = y[i] + hh * dydx[i];
    dp_derivs(force, yt, dyt);
    for (i = 0; i < 6; i++) yt[i] = y[i] + hh * dyt[i];
    dp_derivs(force, yt, dym);
    for (i = 0; i < 6; i++) {
        yt[i] = y[i] + DP_TAU * dym[i];
        dym[i] += dyt[i];
    }
    dp_derivs(force, yt, dyt);
    for (i = 0; i < 6; i++) y[i] = y[i] + h6 * (dydx[i] + dyt[i] + 2.0 * dym[i]);
}

void otc_dpole_standard_start(otc_dpole_state *st) {
    int i;
    if (!st) return;
    for (i = 0; i < 6; i++) st->s[i] = 0.0;
    st->s[2] = DP_START_ANGLE;
}

/* The force of a policy output. fmin/fmax return the non-NaN operand, so a NaN output becomes
 * 1 (a full push) instead of a NaN state; a sigmoid output is never changed by the clamp. */
static double dp_force(double output) {
    double out = fmax(0.0, fmin(1.0, output));
    return (out - 0.5) * DP_FORCE_MAG * 2;
}

void otc_dpole_step(otc_dpole_state *st, double output) {
    double force = dp_force(output);
    dp_rk4(force, st->s);
    dp_rk4(force, st->s);
}

/* !(inside) so that a NaN state counts as a failure. */
static int dp_failed(double x, double dx, double th1, double dth1, double th2, double dth2) {
    return !(fabs(x) <= DP_X_LIMIT && fabs(th1) <= DP_ANGLE_LIMIT && fabs(th2) <= DP_ANGLE_LIMIT &&
             isfinite(dx) && isfinite(dth1) && isfinite(dth2));
}

int otc_dpole_failed(const otc_dpole_state *st) {
    return dp_failed(st->s[0], st->s[1], st->s[2], st->s[3], st->s[4], st->s[5]);
}

int otc_dpole_n_obs(int velocities) {
    return velocities ? OTC_DPV_N_OBS : OTC_DPNV_N_OBS;
}

void otc_dpole_observe(const otc_dpole_state *st, int velocities, double *obs) {
    if (velocities) {
        obs[0] = st->s[0] / 4.8;
        obs[1] = st->s[1] / 2;
        obs[2] = st->s[2] / 0.52;
        obs[3] = st->s[3] / 2;
        obs[4] = st->s[4] / 0.52;
        obs[5] = st->s[5] / 2;
        obs[6] = 0.5;
    } else {
        obs[0] = st->s[0] / 4.8;
        obs[1] = st->s[2] / 0.52;
        obs[2] = st->s[4] / 0.52;
        obs[3] = 0.5;
    }
}

double otc_dpnv_gruau_fitness(int steps_balanced, double jiggle_sum) {
    double f1 = 0.1 * ((double)steps_balanced / 1000.0);
    if (steps_balanced <= JIGGLE_WINDOW) return f1;
    /* Keeps the fitness finite for a (physically impossible) perfectly still trajectory. */
    if (!(jiggle_sum > 1e-9)) jiggle_sum = 1e-9;
    return f1 + 0.9 * (0.75 / jiggle_sum);
}

/* One balanced step's entry in the anti-wiggle sum: |x| + |dx| + |θ1| + |dθ1|. */
static double dp_jiggle(double x, double dx, double th1, double dth1) {
    return fabs(x) + fabs(dx) + fabs(th1) + fabs(dth1);
}

/* A trial's result from its balanced steps and its jiggle ring. */
static void dp_result(int steps, int max_steps, int velocities, const double *jiggle,
                      otc_pole_result *result) {
    result->steps = steps;
    result->success = steps == max_steps;
    if (velocities) {
        result->fitness = steps;
    } else {
        /* Summed once at the end (not as a running sum) so rounding matches a plain sum. */
        double jiggle_sum = 0.0;
        int first = steps > JIGGLE_WINDOW ? steps - JIGGLE_WINDOW : 0;
        for (int i = first; i < steps; i++) jiggle_sum += jiggle[i % JIGGLE_WINDOW];
        result->fitness = otc_dpnv_gruau_fitness(steps, jiggle_sum);
    }
}

/* A trial's actions from *st after `steps` balanced ones until it fails or balances
 * max_steps; returns the steps balanced. jiggle: |x|+|dx|+|θ1|+|dθ1| of the last
 * JIGGLE_WINDOW balanced steps, a ring indexed by step. One loop for the scalar trial and a
 * lane left running alone. */
static int dp_trial(otc_dpole_state *st, int velocities, int steps, int max_steps,
                    const otc_pole_agent *agent, double *jiggle) {
    double obs[OTC_DPV_N_OBS], out[1];
    int n_obs = otc_dpole_n_obs(velocities);
    while (steps < max_steps) {
        otc_dpole_observe(st, velocities, obs);
        out[0] = 0.5;
        agent->policy(agent->ctx, obs, n_obs, out, 1);
        otc_dpole_step(st, out[0]);
        /* The reference sums the 100 steps before the failing one, i.e. the last 100 balanced. */
        if (otc_dpole_failed(st)) break;
        jiggle[steps % JIGGLE_WINDOW] = dp_jiggle(st->s[0], st->s[1], st->s[2], st->s[3]);
        steps++;
    }
    return steps;
}

otc_status otc_dpole_run_from(const otc_dpole_state *start, int velocities, int max_steps,
                              const otc_pole_agent *agent, otc_pole_result *result) {
    otc_dpole_state st;
    double jiggle[JIGGLE_WINDOW];
    int steps;

    if (!start || !agent || !agent->policy || !result)
        return otc_fail(OTC_ERR_ARG,
                        "otc_dpole_run: start, agent, agent->policy and result are required");
    if (max_steps <= 0)
        return otc_fail(OTC_ERR_ARG, "otc_dpole_run: max_steps = %d, must be > 0", max_steps);

    st = *start;
    if (agent->reset) agent->reset(agent->ctx);
    steps = dp_trial(&st, velocities, 0, max_steps, agent, jiggle);
    dp_result(steps, max_steps, velocities, jiggle, result);
    return OTC_OK;
}

otc_status otc_dpole_run(int velocities, int max_steps, const otc_pole_agent *agent,
                         otc_pole_result *result) {
    otc_dpole_state st;
    otc_dpole_standard_start(&st);
    return otc_dpole_run_from(&st, velocities, max_steps, agent, result);
}

otc_status otc_dpole_generalisation_start(int index, otc_dpole_state *st) {
    static const double statevals[5] = {0.05, 0.25, 0.5, 0.75, 0.95};
    if (!st) return otc_fail(OTC_ERR_ARG, "otc_dpole_generalisation_start: st is NULL");
    if (index < 0 || index >= OTC_DPOLE_GENERALISATION_STARTS)
        return otc_fail(OTC_ERR_ARG, "otc_dpole_generalisation_start: index %d not in [0, %d)",
                        index, OTC_DPOLE_GENERALISATION_STARTS);
    /* Ranges and the reference's radian constants for 3.6° and 8.6°/s. */
    st->s[0] = statevals[index / 125] * 4.32 - 2.16;
    st->s[1] = statevals[index / 25 % 5] * 2.70 - 1.35;
    st->s[2] = statevals[index / 5 % 5] * 0.12566304 - 0.06283152;
    st->s[3] = statevals[index % 5] * 0.30019504 - 0.15009752;
    st->s[4] = 0.0;
    st->s[5] = 0.0;
    return OTC_OK;
}

otc_status otc_dpole_generalisation_range(int velocities, const otc_pole_agent *agent, int first,
                                          int n, int *count) {
    otc_dpole_state st;
    otc_pole_result r;
    int i, passed = 0;
    if (!count) return otc_fail(OTC_ERR_ARG, "otc_dpole_generalisation: count is NULL");
    if (first < 0 || n < 0 || n > OTC_DPOLE_GENERALISATION_STARTS - first)
        return otc_fail(OTC_ERR_ARG, "otc_dpole_generalisation: starts %d..%d not in [0, %d)",
                        first, first + n - 1, OTC_DPOLE_GENERALISATION_STARTS);
    for (i = first; i < first + n; i++) {
        otc_status status;
        otc_dpole_generalisation_start(i, &st);
        status = otc_dpole_run_from(&st, velocities, OTC_DPOLE_GENERALISATION_STEPS, agent, &r);
        if (status != OTC_OK) return status;
        /* All 1,000 steps; the reference's `fitness >= 999` also let a failure on the very
         * last step pass. */
        passed += r.success;
    }
    *count = passed;
    return OTC_OK;
}

otc_status otc_dpole_generalisation(int velocities, const otc_pole_agent *agent, int *count) {
    return otc_dpole_generalisation_range(velocities, agent, 0, OTC_DPOLE_GENERALISATION_STARTS,
                                          count);
}

otc_status otc_dpnv_champion_test(const otc_pole_agent *agent, int *long_steps, int *generalisation,
                                  int *success) {
    otc_pole_result r;
    int gen = 0;
    otc_status status = otc_dpole_run(0, OTC_DPOLE_SUCCESS_STEPS, agent, &r);
    if (status != OTC_OK) return status;
    if (r.success) {
        status = otc_dpole_generalisation(0, agent, &gen);
        if (status != OTC_OK) return status;
    }
    if (long_steps) *long_steps = r.steps;
    if (generalisation) *generalisation = gen;
    if (success) *success = r.success && gen >= OTC_DPOLE_GENERALISATION_PASS;
    return OTC_OK;
}

/* ---- Lanes (otc/pole_lanes.h) ----------------------------------------------------------------
 * dp_rk4 over every lane: each stage loops over the lanes (every lane's sincos, then every
 * lane's accelerations, ...), so the lanes' independent chains sit side by side. Each lane
 * computes exactly dp_rk4's operations in its order. */

#define LN OTC_POLE_LANES_MAX

/* Inlined into dp_rk4_lanes, so it is compiled for each of its targets. */
static inline __attribute__((always_inline)) void
dp_derivs_lanes(int n, const double *force, double y[6][LN], double dydx[6][LN]) {
    double s1[LN], c1[LN], s2[LN], c2[LN];
    pole_sincos_lanes(n, y[2], s1, c1);
    pole_sincos_lanes(n, y[4], s2, c2);
    for (int l = 0; l < n; l++) {
        dydx[0][l] = y[1][l];
        dydx[2][l] = y[3][l];
        dydx[4][l] = y[5][l];
        dp_accel_of(force[l], y[3][l], y[5][l], s1[l], c1[l], s2[l], c2[l], &dydx[1][l],
                    &dydx[3][l], &dydx[5][l]);
    }
}

POLE_LANES_VECTOR static void dp_rk4_lanes(int n, const double *force, double y[6][LN]) {
    const double hh = DP_TAU * 0.5, h6 = DP_TAU / 6.0;
    double dydx[6][LN], dym[6][LN], dyt[6][LN], yt[6][LN];
    dp_derivs_lanes(n, force, y, dydx);
    for (int i = 0; i < 6; i++)
        for (int l = 0; l < n; l++) yt[i][l] = y[i][l] + hh * dydx[i][l];
    dp_derivs_lanes(n, force, yt, dyt);
    for (int i = 0; i < 6; i++)
        for (int l = 0; l < n; l++) yt[i][l] = y[i][l] + hh * dyt[i][l];
    dp_derivs_lanes(n, force, yt, dym);
    for (int i = 0; i < 6; i++)
        for (int l = 0; l < n; l++) {
            yt[i][l] = y[i][l] + DP_TAU * dym[i][l];
            dym[i][l] += dyt[i][l];
        }
    dp_derivs_lanes(n, force, yt, dyt);
    for (int i = 0; i < 6; i++)
        for (int l = 0; l < n; l++)
            y[i][l] = y[i][l] + h6 * (dydx[i][l] + dyt[i][l] + 2.0 * dym[i][l]);
}

otc_status otc_dpole_lanes_init(otc_dpole_lanes *L, int lanes, int velocities, int max_steps) {
    if (!L) return otc_fail(OTC_ERR_ARG, "otc_dpole_lanes_init: L is NULL");
    if (lanes < 1 || lanes > LN)
        return otc_fail(OTC_ERR_ARG, "otc_dpole_lanes_init: %d lanes, must be 1 to %d", lanes, LN);
    if (max_steps <= 0)
        return otc_fail(OTC_ERR_ARG, "otc_dpole_lanes_init: max_steps = %d, must be > 0",
                        max_steps);
    *L = (otc_dpole_lanes){.lanes = lanes, .velocities = velocities, .max_steps = max_steps};
    return OTC_OK;
}

/* Lane `lane`'s state as a scalar trial's, and back. */
static otc_dpole_state dp_lane_state(const otc_dpole_lanes *L, int lane) {
    otc_dpole_state st;
    for (int i = 0; i < 6; i++) st.s[i] = L->s[i][lane];
    return st;
}

static void dp_lane_set(otc_dpole_lanes *L, int lane, const otc_dpole_state *st) {
    for (int i = 0; i < 6; i++) L->s[i][lane] = st->s[i];
}

void otc_dpole_lanes_start(otc_dpole_lanes *L, int lane, const otc_dpole_state *start) {
    dp_lane_set(L, lane, start);
    L->steps[lane] = 0;
    L->running[lane] = true;
}

void otc_dpole_lanes_observe(const otc_dpole_lanes *L, int lane, double *obs) {
    otc_dpole_state st = dp_lane_state(L, lane);
    otc_dpole_observe(&st, L->velocities, obs);
}

unsigned otc_dpole_lanes_step(otc_dpole_lanes *L, const double *out) {
    int n = L->lanes, at[LN], m = 0;
    double force[LN] = {0}, y[6][LN];
    unsigned ended = 0;
    /* The running lanes packed side by side (idle ones cost nothing: a long trial left alone
     * at the end of a batch runs at the scalar step's speed). */
    for (int l = 0; l < n; l++)
        if (L->running[l]) at[m++] = l;
    if (m == 1) {
        otc_dpole_state st = dp_lane_state(L, at[0]);
        otc_dpole_step(&st, out[at[0]]);
        dp_lane_set(L, at[0], &st);
    } else if (m > 1) {
        for (int k = 0; k < m; k++) {
            force[k] = dp_force(out[at[k]]);
            for (int i = 0; i < 6; i++) y[i][k] = L->s[i][at[k]];
        }
        dp_rk4_lanes(m, force, y);
        dp_rk4_lanes(m, force, y);
        for (int k = 0; k < m; k++)
            for (int i = 0; i < 6; i++) L->s[i][at[k]] = y[i][k];
    }
    for (int l = 0; l < n; l++) {
        if (!L->running[l]) continue;
        /* otc_dpole_run_from's loop body after the step. */
        if (dp_failed(L->s[0][l], L->s[1][l], L->s[2][l], L->s[3][l], L->s[4][l], L->s[5][l])) {
            L->running[l] = false;
            ended |= 1u << l;
            continue;
        }
        L->jiggle[l][L->steps[l] % JIGGLE_WINDOW] =
            dp_jiggle(L->s[0][l], L->s[1][l], L->s[2][l], L->s[3][l]);
        if (++L->steps[l] == L->max_steps) {
            L->running[l] = false;
            ended |= 1u << l;
        }
    }
    return ended;
}

void otc_dpole_lanes_result(const otc_dpole_lanes *L, int lane, otc_pole_result *result) {
    dp_result(L->steps[lane], L->max_steps, L->velocities, L->jiggle[lane], result);
}

/* The driver's view of the double pole's lanes (pole_lanes_drive.h). */
static void dp_lane_start(void *L, int lane, const void *start) {
    otc_dpole_lanes_start(L, lane, start);
}

static void dp_lane_finish_alone(void *vL, int lane, const otc_pole_agent *agent) {
    otc_dpole_lanes *L = vL;
    otc_dpole_state st = dp_lane_state(L, lane);
    L->steps[lane] =
        dp_trial(&st, L->velocities, L->steps[lane], L->max_steps, agent, L->jiggle[lane]);
    L->running[lane] = false;
}

static unsigned dp_lane_act(void *vL, const otc_pole_lane_source *src) {
    otc_dpole_lanes *L = vL;
    double obs[OTC_DPV_N_OBS], out[LN];
    int n_obs = otc_dpole_n_obs(L->velocities);
    for (int l = 0; l < L->lanes; l++) {
        if (!L->running[l]) continue;
        const otc_pole_agent *a = &src->agents[l];
        otc_dpole_lanes_observe(L, l, obs);
        out[l] = 0.5;
        a->policy(a->ctx, obs, n_obs, &out[l], 1);
    }
    return otc_dpole_lanes_step(L, out);
}

static void dp_lane_result(const void *L, int lane, otc_pole_result *result) {
    otc_dpole_lanes_result(L, lane, result);
}

otc_status otc_dpole_lanes_run(int lanes, int velocities, int max_steps,
                               const otc_pole_lane_source *src) {
    otc_dpole_lanes L;
    otc_status status = otc_dpole_lanes_init(&L, lanes, velocities, max_steps);
    if (status != OTC_OK) return status;
    otc_pole_lanes_kind k = {
        &L, lanes, L.running, dp_lane_start, dp_lane_finish_alone, dp_lane_act, dp_lane_result};
    otc_pole_lanes_drive(&k, src);
    return OTC_OK;
}
