/* Tests for the pole-balancing tasks: physics against an independent derivation (Lagrangian
 * mass-matrix form, generic Euler/RK4), failure steps, controllers, Gruau's fitness and the
 * 625-start generalisation grid. */
#include "harness.h"

#include <stdint.h>

#include "otc/pole.h"

#define PI_ 3.14159265358979323846

/* ---- Independent reference physics --------------------------------------------------------
 * Both systems written as M(q)·q'' = b(q, q') from the Lagrangian of a cart with uniform
 * poles hinged on it (moment about the pivot (4/3)·m·l² for half-length l), solved as a linear
 * system, rather than the closed forms the library uses. θ > 0 leans towards +x; G = +9.8. */

static void solve_linear(int n, double a[3][3], double *b, double *x) {
    int i, j, k;
    for (k = 0; k < n; k++) {
        int p = k;
        for (i = k + 1; i < n; i++)
            if (fabs(a[i][k]) > fabs(a[p][k])) p = i;
        for (j = 0; j < n; j++) {
            double t = a[k][j];
            a[k][j] = a[p][j];
            a[p][j] = t;
        }
        {
            double t = b[k];
            b[k] = b[p];
            b[p] = t;
        }
        for (i = k + 1; i < n; i++) {
            double f = a[i][k] / a[k][k];
            for (j = k; j < n; j++) a[i][j] -= f * a[k][j];
            b[i] -= f * b[k];
        }
    }
    for (i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (j = i + 1; j < n; j++) s -= a[i][j] * x[j];
        x[i] = s / a[i][i];
    }
}

/* Single pole: state x, dx, θ, dθ. */
static void ref_pole1_deriv(double force, const double *y, double *dy) {
    const double mc = 1.0, m = 0.1, l = 0.5, g = 9.8;
    double a[3][3] = {
        {mc + m, m * l * cos(y[2]), 0}, {m * l * cos(y[2]), 4.0 / 3.0 * m * l * l, 0}, {0, 0, 1}};
    double b[3] = {force + m * l * y[3] * y[3] * sin(y[2]), m * g * l * sin(y[2]), 0};
    double acc[3];
    solve_linear(2, a, b, acc);
    dy[0] = y[1];
    dy[1] = acc[0];
    dy[2] = y[3];
    dy[3] = acc[1];
}

static void ref_pole1_euler(double *y, double force) {
    double dy[4];
    int i;
    ref_pole1_deriv(force, y, dy);
    for (i = 0; i < 4; i++) y[i] += 0.02 * dy[i];
}

static int ref_pole1_failed(const double *y) {
    return fabs(y[0]) > 2.4 || fabs(y[2]) > 12.0 * PI_ / 180.0;
}

/* Double pole: x, dx, θ1, dθ1, θ2, dθ2; pivot friction μ·dθ as a torque on each pole. */
static void ref_dpole_deriv(double force, const double *y, double *dy) {
    const double mc = 1.0, m1 = 0.1, m2 = 0.01, l1 = 0.5, l2 = 0.05, g = 9.8, mu = 2e-6;
    double a[3][3] = {{mc + m1 + m2, m1 * l1 * cos(y[2]), m2 * l2 * cos(y[4])},
                      {m1 * l1 * cos(y[2]), 4.0 / 3.0 * m1 * l1 * l1, 0},
                      {m2 * l2 * cos(y[4]), 0, 4.0 / 3.0 * m2 * l2 * l2}};
    double b[3] = {force + m1 * l1 * y[3] * y[3] * sin(y[2]) + m2 * l2 * y[5] * y[5] * sin(y[4]),
                   m1 * g * l1 * sin(y[2]) - mu * y[3], m2 * g * l2 * sin(y[4]) - mu * y[5]};
    double acc[3];
    solve_linear(3, a, b, acc);
    dy[0] = y[1];
    dy[1] = acc[0];
    dy[2] = y[3];
    dy[3] = acc[1];
    dy[4] = y[5];
    dy[5] = acc[2];
}

/* Textbook RK4 (k1..k4) of step h. */
static void ref_rk4(double *y, double force, double h) {
    double k1[6], k2[6], k3[6], k4[6], t[6];
    int i;
    ref_dpole_deriv(force, y, k1);
    for (i = 0; i < 6; i++) t[i] = y[i] + h / 2 * k1[i];
    ref_dpole_deriv(force, t, k2);
    for (i = 0; i < 6; i++) t[i] = y[i] + h / 2 * k2[i];
    ref_dpole_deriv(force, t, k3);
    for (i = 0; i < 6; i++) t[i] = y[i] + h * k3[i];
    ref_dpole_deriv(force, t, k4);
    for (i = 0; i < 6; i++) y[i] += h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
}

/* One action of the double pole: output in [0, 1] → force (out - 0.5)·20 N, 2 × 0.01 s. */
static void ref_dpole_action(double *y, double output) {
    double force = (output - 0.5) * 20.0;
    ref_rk4(y, force, 0.01);
    ref_rk4(y, force, 0.01);
}

static int ref_dpole_failed(const double *y) {
    double lim = 36.0 * PI_ / 180.0;
    return fabs(y[0]) > 2.4 || fabs(y[2]) > lim || fabs(y[4]) > lim;
}

/* Observations scaled as Stanley's CartPole::evalNet, written out here independently. */
static void ref_dpole_obs(const double *y, int velocities, double *obs) {
    if (velocities) {
        double o[7] = {y[0] / 4.8, y[1] / 2, y[2] / 0.52, y[3] / 2, y[4] / 0.52, y[5] / 2, 0.5};
        memcpy(obs, o, sizeof o);
    } else {
        double o[4] = {y[0] / 4.8, y[2] / 0.52, y[4] / 0.52, 0.5};
        memcpy(obs, o, sizeof o);
    }
}

/* ---- Policies ---------------------------------------------------------------------------- */

typedef struct {
    double value[2];
    int calls, resets;
} const_ctx;

static void const_policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    const_ctx *c = ctx;
    int i;
    (void)obs;
    (void)n_obs;
    for (i = 0; i < n_out; i++) out[i] = c->value[i];
    c->calls++;
}

static void const_reset(void *ctx) {
    ((const_ctx *)ctx)->resets++;
}

/* pole1: bang-bang on the sign of k·(x, dx, θ, dθ), unscaling pole1.cpp's observations. */
typedef struct {
    int two_outputs;
} lin1_ctx;

static void lin1_policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    const lin1_ctx *c = ctx;
    double x = obs[0] * 4.8 - 2.4, dx = obs[1] * 1.5 - 0.75;
    double th = obs[2] * 0.41 - 0.2094384, dth = obs[3] * 2.0 - 1.0;
    double u = 0.05 * x + 0.1 * dx + 1.0 * th + 0.3 * dth;
    (void)n_obs;
    (void)n_out;
    if (c->two_outputs) {
        out[0] = u > 0 ? 0.0 : 1.0; /* out[0] > out[1] pushes left */
        out[1] = u > 0 ? 1.0 : 0.0;
    } else {
        out[0] = u > 0 ? 1.0 : 0.0;
    }
}

/* Double pole: a discrete LQR gain for this plant (found offline by iterating the Riccati
 * equation on its linearisation at rest; Q = diag(1, .1, 10, .1, 10, .1), R = .01), u = -K·s. */
static const double lqr_k[6] = {5.0787, 8.1526, 117.435, 30.5707, -66.6754, -5.5560};

static double lqr_output(const double *s) {
    double u = 0;
    int i;
    for (i = 0; i < 6; i++) u -= lqr_k[i] * s[i];
    return 0.5 + u / 20.0; /* the library clamps to [0, 1], i.e. ±10 N */
}

static void lqr_v_policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    double s[6] = {obs[0] * 4.8, obs[1] * 2, obs[2] * 0.52, obs[3] * 2, obs[4] * 0.52, obs[5] * 2};
    (void)ctx;
    (void)n_obs;
    (void)n_out;
    out[0] = lqr_output(s);
}

/* Without velocities: estimate them by differencing the positions of successive steps, so the
 * controller has state that reset must clear. */
typedef struct {
    double prev[3];
    int has_prev, resets;
} observer_ctx;

static void observer_policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    observer_ctx *c = ctx;
    double p[3] = {obs[0] * 4.8, obs[1] * 0.52, obs[2] * 0.52}, s[6];
    int i;
    (void)n_obs;
    (void)n_out;
    for (i = 0; i < 3; i++) {
        s[2 * i] = p[i];
        s[2 * i + 1] = c->has_prev ? (p[i] - c->prev[i]) / 0.02 : 0.0;
        c->prev[i] = p[i];
    }
    c->has_prev = 1;
    out[0] = lqr_output(s);
}

static void observer_reset(void *ctx) {
    observer_ctx *c = ctx;
    c->has_prev = 0;
    c->resets++;
}

/* The observer controller with a dither that keeps the system wiggling (so Gruau's wiggle sum
 * is not vanishingly small), and from step `kick_at` on a hard push right: a trajectory that
 * balances for a while and then fails at a step the test does not know in advance. */
typedef struct {
    observer_ctx obs;
    int step, kick_at;
} kicked_ctx;

static void kicked_policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    kicked_ctx *c = ctx;
    observer_policy(&c->obs, obs, n_obs, out, n_out);
    out[0] += 0.2 * sin(0.1 * c->step);
    if (++c->step > c->kick_at) out[0] = 1.0;
}

static void kicked_reset(void *ctx) {
    kicked_ctx *c = ctx;
    observer_reset(&c->obs);
    c->step = 0;
}

/* ---- The physics' sin and cos ----------------------------------------------------------- */

/* Distance in units in the last place between two finite doubles (their bit patterns made
 * monotonic in value). */
static int64_t ulps_apart(double a, double b) {
    int64_t ia, ib;
    memcpy(&ia, &a, sizeof ia);
    memcpy(&ib, &b, sizeof ib);
    if (ia < 0) ia = INT64_MIN - ia;
    if (ib < 0) ib = INT64_MIN - ib;
    return ia > ib ? ia - ib : ib - ia;
}

TEST(pole_sincos_within_one_ulp_of_libm) {
    /* Every 2^-20 rad of [-pi/4, pi/4] (1.6 million angles) and the ends. */
    const double lim = 0.78539816339744828;
    int64_t worst_s = 0, worst_c = 0;
    double x, s, c;
    for (x = -lim; x <= lim; x += 0x1p-20) {
        otc_pole_sincos(x, &s, &c);
        if (ulps_apart(s, sin(x)) > worst_s) worst_s = ulps_apart(s, sin(x));
        if (ulps_apart(c, cos(x)) > worst_c) worst_c = ulps_apart(c, cos(x));
    }
    otc_pole_sincos(lim, &s, &c);
    if (ulps_apart(s, sin(lim)) > worst_s) worst_s = ulps_apart(s, sin(lim));
    if (ulps_apart(c, cos(lim)) > worst_c) worst_c = ulps_apart(c, cos(lim));
    CHECK_MSG(worst_s <= 1 && worst_c <= 1, "worst sin %lld ulp, cos %lld ulp", (long long)worst_s,
              (long long)worst_c);
}

TEST(pole_sincos_hand_checked_values) {
    /* 25-digit values from bc -l (s(x), c(x)). */
    static const double cases[4][3] = {
        {0.07, 0.0699428473375327639765473, 0.9975510002532795746209083},
        {0.5, 0.4794255386042030002732879, 0.8775825618903727161162815},
        {-0.6, -0.5646424733950353572009454, 0.8253356149096782972409524},
        {0.785, 0.7068251811053659237461389, 0.7073882691671997629032978}};
    double s, c;
    int i;
    for (i = 0; i < 4; i++) {
        otc_pole_sincos(cases[i][0], &s, &c);
        CHECK_MSG(ulps_apart(s, cases[i][1]) <= 1 && ulps_apart(c, cases[i][2]) <= 1,
                  "x %g: sin %.17g cos %.17g", cases[i][0], s, c);
    }
    /* Exact where the functions are: 0, and sin x = x for tiny x. */
    otc_pole_sincos(0.0, &s, &c);
    CHECK(s == 0.0 && c == 1.0);
    otc_pole_sincos(1e-10, &s, &c);
    CHECK(s == 1e-10 && c == 1.0);
    /* Outside pi/4 the answer is libm's, bit for bit; NaN stays NaN. */
    otc_pole_sincos(2.5, &s, &c);
    CHECK(s == sin(2.5) && c == cos(2.5));
    otc_pole_sincos(-100.0, &s, &c);
    CHECK(s == sin(-100.0) && c == cos(-100.0));
    otc_pole_sincos(NAN, &s, &c);
    CHECK(isnan(s) && isnan(c));
}

/* ---- Single pole -------------------------------------------------------------------------- */

TEST(pole_single_euler_step_matches_independent_derivation) {
    static const double starts[3][4] = {
        {0.1, -0.2, 0.05, 0.3}, {-1.5, 0.8, -0.18, -1.2}, {0.0, 0.0, 0.0, 0.0}};
    int i, j, push;
    for (i = 0; i < 3; i++)
        for (push = 0; push <= 1; push++) {
            otc_pole1_state st;
            double ref[4];
            memcpy(st.s, starts[i], sizeof st.s);
            memcpy(ref, starts[i], sizeof ref);
            otc_pole1_step(&st, push);
            ref_pole1_euler(ref, push ? 10.0 : -10.0);
            for (j = 0; j < 4; j++) CHECK_NEAR(st.s[j], ref[j], 1e-12);
        }
    /* Sanity of the sign convention: from rest, pushing right accelerates the cart to +x and
     * tips the pole towards -x (after one step only the velocities have moved). */
    {
        otc_pole1_state st = {{0, 0, 0, 0}};
        otc_pole1_step(&st, 1);
        CHECK(st.s[0] == 0.0 && st.s[2] == 0.0);
        CHECK(st.s[1] > 0 && st.s[3] < 0);
    }
}

TEST(pole_single_constant_push_fails_at_independent_step) {
    const_ctx c = {{1.0, 0.0}, 0, 0};
    otc_pole_agent agent = {const_policy, const_reset, &c};
    otc_pole1_config cfg;
    otc_pole_result r, r2;
    double y[4] = {0, 0, 0, 0};
    int expect = 0;
    while (expect < 100000) {
        ref_pole1_euler(y, 10.0);
        if (ref_pole1_failed(y)) break;
        expect++;
    }
    otc_pole1_default_config(&cfg);
    REQUIRE(otc_pole1_run(&cfg, &agent, &r) == OTC_OK);
    CHECK_MSG(r.steps == expect, "steps %d, independent %d", r.steps, expect);
    CHECK(r.steps > 5 && r.steps < 100); /* well under a few seconds of simulated time */
    CHECK(!r.success);
    CHECK(r.fitness == r.steps);
    CHECK(c.calls == r.steps + 1); /* one action per step, including the failing one */
    CHECK(c.resets == 1);
    REQUIRE(otc_pole1_run(&cfg, &agent, &r2) == OTC_OK);
    CHECK(r2.steps == r.steps); /* stable run to run */
}

TEST(pole_single_two_output_rule) {
    /* pole1.cpp: out[0] > out[1] pushes left, otherwise right. From rest, always-left is the
     * exact mirror of always-right, so both fail at the same step. */
    const_ctx right1 = {{1.0, 0.0}, 0, 0}, right2 = {{0.0, 1.0}, 0, 0}, left2 = {{1.0, 0.0}, 0, 0};
    const_ctx tie2 = {{0.5, 0.5}, 0, 0};
    otc_pole_agent a;
    otc_pole1_config cfg;
    otc_pole_result r1, r2, r3, r4;
    otc_pole1_default_config(&cfg);
    a = (otc_pole_agent){const_policy, NULL, &right1};
    REQUIRE(otc_pole1_run(&cfg, &a, &r1) == OTC_OK);
    cfg.n_outputs = 2;
    a.ctx = &right2;
    REQUIRE(otc_pole1_run(&cfg, &a, &r2) == OTC_OK);
    a.ctx = &left2;
    REQUIRE(otc_pole1_run(&cfg, &a, &r3) == OTC_OK);
    a.ctx = &tie2;
    REQUIRE(otc_pole1_run(&cfg, &a, &r4) == OTC_OK);
    CHECK(r1.steps == r2.steps);
    CHECK(r3.steps == r1.steps);
    CHECK(r4.steps == r1.steps); /* a tie pushes right */
}

TEST(pole_single_linear_controller_balances) {
    lin1_ctx one = {0}, two = {1};
    otc_pole_agent a = {lin1_policy, NULL, &one};
    otc_pole1_config cfg;
    otc_pole_result r;
    int seed, successes = 0;
    otc_pole1_default_config(&cfg);
    REQUIRE(otc_pole1_run(&cfg, &a, &r) == OTC_OK);
    CHECK_MSG(r.steps == 100000 && r.success, "steps %d", r.steps);
    CHECK(r.fitness == 100000);
    cfg.n_outputs = 2;
    a.ctx = &two;
    REQUIRE(otc_pole1_run(&cfg, &a, &r) == OTC_OK);
    CHECK_MSG(r.steps == 100000 && r.success, "steps %d", r.steps);
    /* Random starts include hopeless ones (cart near the edge heading out), so only most. */
    cfg.random_start = 1;
    cfg.max_steps = 10000;
    for (seed = 1; seed <= 20; seed++) {
        cfg.seed = (uint64_t)seed;
        REQUIRE(otc_pole1_run(&cfg, &a, &r) == OTC_OK);
        successes += r.success;
    }
    CHECK_MSG(successes >= 10, "%d of 20 random starts balanced", successes);
}

TEST(pole_single_random_start_seeded) {
    otc_pole1_state a, b;
    int seed, j, differ = 0;
    for (seed = 0; seed < 200; seed++) {
        otc_pole1_random_start((uint64_t)seed, &a);
        otc_pole1_random_start((uint64_t)seed, &b);
        CHECK(memcmp(&a, &b, sizeof a) == 0);
        CHECK(a.s[0] >= -2.4 && a.s[0] < 2.4);
        CHECK(a.s[1] >= -1.0 && a.s[1] < 1.0);
        CHECK(a.s[2] >= -0.2 && a.s[2] < 0.2);
        CHECK(a.s[3] >= -1.5 && a.s[3] < 1.5);
        for (j = 0; j < 4; j++) { /* on pole1.cpp's 0.001 grid */
            double milli = a.s[j] * 1000.0;
            CHECK_NEAR(milli, floor(milli + 0.5), 1e-6);
        }
        otc_pole1_random_start((uint64_t)seed + 1, &b);
        differ += memcmp(&a, &b, sizeof a) != 0;
    }
    CHECK(differ == 200);
}

TEST(pole_single_observations_scaled) {
    otc_pole1_state st = {{1.2, 0.75, 0.1, -1.0}};
    double obs[OTC_POLE1_N_OBS];
    otc_pole1_observe(&st, obs);
    CHECK_NEAR(obs[0], 0.75, 1e-15);                             /* (1.2 + 2.4) / 4.8 */
    CHECK_NEAR(obs[1], 1.0, 1e-15);                              /* (0.75 + 0.75) / 1.5 */
    CHECK_NEAR(obs[2], (0.1 + 12.0 * PI_ / 180.0) / 0.41, 1e-5); /* (θ + 12°) / 0.41 */
    CHECK_NEAR(obs[3], 0.0, 1e-15);                              /* (-1 + 1) / 2 */
    CHECK(obs[4] == 1.0);                                        /* bias */
}

/* ---- Double pole -------------------------------------------------------------------------- */

TEST(pole_double_rk4_step_matches_independent_derivation) {
    static const double starts[4][6] = {{0, 0, 0.07, 0, 0, 0},
                                        {0.3, -0.4, 0.2, 1.1, -0.3, 2.5},
                                        {-2.0, 1.3, -0.5, -0.8, 0.6, -4.0},
                                        {0, 0, 0, 0, 0, 0}};
    static const double outputs[4] = {0.0, 0.5, 0.73, 1.0};
    int i, o, j;
    for (i = 0; i < 4; i++)
        for (o = 0; o < 4; o++) {
            otc_dpole_state st;
            double ref[6];
            memcpy(st.s, starts[i], sizeof st.s);
            memcpy(ref, starts[i], sizeof ref);
            otc_dpole_step(&st, outputs[o]);
            ref_dpole_action(ref, outputs[o]);
            for (j = 0; j < 6; j++)
                CHECK_MSG(fabs(st.s[j] - ref[j]) <= 1e-12 * (1 + fabs(ref[j])),
                          "start %d output %g component %d: %.17g vs %.17g", i, outputs[o], j,
                          st.s[j], ref[j]);
        }
    /* Outputs are clamped to [0, 1]: beyond it the force stays ±10 N. */
    {
        otc_dpole_state a = {{0.1, 0, 0.05, 0, 0.01, 0}}, b = a;
        otc_dpole_step(&a, 7.0);
        otc_dpole_step(&b, 1.0);
        CHECK(memcmp(&a, &b, sizeof a) == 0);
        a = (otc_dpole_state){{0.1, 0, 0.05, 0, 0.01, 0}};
        b = a;
        otc_dpole_step(&a, -3.0);
        otc_dpole_step(&b, 0.0);
        CHECK(memcmp(&a, &b, sizeof a) == 0);
    }
}

TEST(pole_double_zero_force_fails_at_independent_step) {
    const_ctx c = {{0.5, 0}, 0, 0};
    otc_pole_agent agent = {const_policy, const_reset, &c};
    otc_pole_result r, r2, r3;
    double y[6] = {0, 0, 0.07, 0, 0, 0};
    int expect = 0;
    while (expect < 100000) {
        ref_dpole_action(y, 0.5);
        if (ref_dpole_failed(y)) break;
        expect++;
    }
    REQUIRE(otc_dpole_run(1, 100000, &agent, &r) == OTC_OK);
    CHECK_MSG(r.steps == expect, "steps %d, independent %d", r.steps, expect);
    /* The long pole starts at 4°; the short one is dragged over in well under a second. */
    CHECK(r.steps > 5 && r.steps < 50);
    CHECK(!r.success && r.fitness == r.steps);
    REQUIRE(otc_dpole_run(1, 100000, &agent, &r2) == OTC_OK);
    CHECK(r2.steps == r.steps);
    REQUIRE(otc_dpole_run(0, 1000, &agent, &r3) == OTC_OK); /* inputs do not matter here */
    CHECK(r3.steps == r.steps);
    CHECK_NEAR(r3.fitness, 0.1 * r.steps / 1000.0, 1e-15); /* < 100 steps: no wiggle term */
    CHECK(c.resets == 3);
}

TEST(pole_double_observations_scaled) {
    otc_dpole_state st = {{1.2, -1.0, 0.26, 0.5, -0.13, 2.0}};
    double obs[OTC_DPV_N_OBS];
    static const double with_v[7] = {0.25, -0.5, 0.5, 0.25, -0.25, 1.0, 0.5};
    static const double without_v[4] = {0.25, 0.5, -0.25, 0.5};
    int i;
    CHECK(otc_dpole_n_obs(1) == 7 && otc_dpole_n_obs(0) == 4);
    otc_dpole_observe(&st, 1, obs);
    for (i = 0; i < 7; i++) CHECK_NEAR(obs[i], with_v[i], 1e-15);
    otc_dpole_observe(&st, 0, obs);
    for (i = 0; i < 4; i++) CHECK_NEAR(obs[i], without_v[i], 1e-15);
}

TEST(pole_double_standard_start_and_bounds) {
    otc_dpole_state st;
    otc_dpole_standard_start(&st);
    CHECK(st.s[0] == 0 && st.s[1] == 0 && st.s[3] == 0 && st.s[4] == 0 && st.s[5] == 0);
    CHECK(st.s[2] == 0.07); /* the reference's init(): 0.07 rad (4.01°) */
    CHECK(!otc_dpole_failed(&st));
    st.s[0] = 2.39;
    CHECK(!otc_dpole_failed(&st));
    st.s[0] = -2.41;
    CHECK(otc_dpole_failed(&st));
    st.s[0] = 0;
    st.s[4] = 35.9 * PI_ / 180.0;
    CHECK(!otc_dpole_failed(&st));
    st.s[4] = -36.1 * PI_ / 180.0;
    CHECK(otc_dpole_failed(&st));
    st.s[4] = 0;
    st.s[2] = 36.1 * PI_ / 180.0;
    CHECK(otc_dpole_failed(&st));
    st.s[2] = NAN; /* a NaN state must never count as balanced */
    CHECK(otc_dpole_failed(&st));
}

TEST(pole_double_lqr_controller_solves_dpv) {
    otc_pole_agent agent = {lqr_v_policy, NULL, NULL};
    otc_pole_result r;
    REQUIRE(otc_dpole_run(1, OTC_DPOLE_SUCCESS_STEPS, &agent, &r) == OTC_OK);
    CHECK_MSG(r.success && r.steps == 100000, "steps %d", r.steps);
    CHECK(r.fitness == 100000);
}

/* ---- Gruau's fitness ---------------------------------------------------------------------- */

TEST(pole_dpnv_gruau_fitness_values) {
    CHECK_NEAR(otc_dpnv_gruau_fitness(0, 5.0), 0.0, 1e-15);
    CHECK_NEAR(otc_dpnv_gruau_fitness(50, 3.0), 0.005, 1e-15);
    CHECK_NEAR(otc_dpnv_gruau_fitness(100, 3.0), 0.01, 1e-15); /* reference: t > 100 */
    CHECK_NEAR(otc_dpnv_gruau_fitness(101, 7.5), 0.0101 + 0.09, 1e-15);
    CHECK_NEAR(otc_dpnv_gruau_fitness(1000, 0.75), 1.0, 1e-15);
    CHECK_NEAR(otc_dpnv_gruau_fitness(1000, 9.0), 0.1 + 0.075, 1e-15);
    CHECK(isfinite(otc_dpnv_gruau_fitness(1000, 0.0)));
}

/* Run `policy` through the independent physics for up to `max_steps` and return Gruau's fitness
 * computed by hand from the trajectory: the wiggle of the last 100 balanced steps. */
static double ref_gruau(otc_pole_policy policy, otc_pole_reset_fn reset, void *ctx, int max_steps,
                        int *balanced) {
    double y[6] = {0, 0, 0.07, 0, 0, 0}, obs[4], out[1], wiggle[1000], sum = 0;
    int t = 0, i;
    reset(ctx);
    while (t < max_steps) {
        ref_dpole_obs(y, 0, obs);
        policy(ctx, obs, 4, out, 1);
        ref_dpole_action(y, out[0] < 0 ? 0 : out[0] > 1 ? 1 : out[0]);
        if (ref_dpole_failed(y)) break;
        wiggle[t++] = fabs(y[0]) + fabs(y[1]) + fabs(y[2]) + fabs(y[3]);
    }
    *balanced = t;
    if (t <= 100) return 0.1 * t / 1000.0;
    for (i = t - 100; i < t; i++) sum += wiggle[i];
    return 0.1 * t / 1000.0 + 0.9 * 0.75 / sum;
}

TEST(pole_dpnv_gruau_fitness_on_trajectory) {
    static const int kicks[3] = {40, 300, 5000}; /* fail < 100, fail in 100..1000, survive */
    int k;
    for (k = 0; k < 3; k++) {
        kicked_ctx c;
        otc_pole_agent agent = {kicked_policy, kicked_reset, &c};
        otc_pole_result r;
        int balanced;
        double expect;
        memset(&c, 0, sizeof c);
        c.kick_at = kicks[k];
        expect = ref_gruau(kicked_policy, kicked_reset, &c, 1000, &balanced);
        REQUIRE(otc_dpole_run(0, OTC_DPNV_TRIAL_STEPS, &agent, &r) == OTC_OK);
        CHECK_MSG(r.steps == balanced, "kick %d: steps %d, independent %d", kicks[k], r.steps,
                  balanced);
        CHECK_MSG(fabs(r.fitness - expect) <= 1e-9 * fabs(expect), "kick %d: %.12g vs %.12g",
                  kicks[k], r.fitness, expect);
        if (k == 0) CHECK(balanced > kicks[0] && balanced <= 100);
        if (k == 1) CHECK(balanced > 100 && balanced < 1000);
        if (k == 2) CHECK(balanced == 1000 && r.success);
    }
}

/* ---- Generalisation ----------------------------------------------------------------------- */

TEST(pole_generalisation_grid) {
    static const double frac[5] = {0.05, 0.25, 0.5, 0.75, 0.95};
    const double range[4] = {2.16, 1.35, 3.6 * PI_ / 180.0, 8.6 * PI_ / 180.0};
    int seen[5][5][5][5];
    int i, j, k, unique = 0;
    memset(seen, 0, sizeof seen);
    for (i = 0; i < OTC_DPOLE_GENERALISATION_STARTS; i++) {
        otc_dpole_state st;
        int idx[4];
        REQUIRE(otc_dpole_generalisation_start(i, &st) == OTC_OK);
        CHECK(st.s[4] == 0.0 && st.s[5] == 0.0);
        for (j = 0; j < 4; j++) { /* which of the five fractions of ±range each value is */
            idx[j] = -1;
            for (k = 0; k < 5; k++)
                if (fabs(st.s[j] - (2 * frac[k] - 1) * range[j]) < 1e-6) idx[j] = k;
            CHECK_MSG(idx[j] >= 0, "start %d component %d = %.9g off the grid", i, j, st.s[j]);
        }
        if (idx[0] < 0 || idx[1] < 0 || idx[2] < 0 || idx[3] < 0) continue;
        /* x varies slowest and dθ1 fastest, as the reference's nested loops. */
        CHECK(i == ((idx[0] * 5 + idx[1]) * 5 + idx[2]) * 5 + idx[3]);
        unique += seen[idx[0]][idx[1]][idx[2]][idx[3]]++ == 0;
    }
    CHECK(unique == 625);
    {
        otc_dpole_state st;
        REQUIRE(otc_dpole_generalisation_start(0, &st) == OTC_OK);
        CHECK_NEAR(st.s[0], -1.944, 1e-12);
        CHECK_NEAR(st.s[1], -1.215, 1e-12);
        CHECK_NEAR(st.s[2], -0.9 * 3.6 * PI_ / 180.0, 1e-6);
        CHECK_NEAR(st.s[3], -0.9 * 8.6 * PI_ / 180.0, 1e-6);
        REQUIRE(otc_dpole_generalisation_start(312, &st) == OTC_OK); /* the centre */
        CHECK(fabs(st.s[0]) < 1e-12 && fabs(st.s[1]) < 1e-12 && fabs(st.s[2]) < 1e-12 &&
              fabs(st.s[3]) < 1e-12);
        CHECK(otc_dpole_generalisation_start(-1, &st) == OTC_ERR_ARG);
        CHECK(otc_dpole_generalisation_start(625, &st) == OTC_ERR_ARG);
    }
}

TEST(pole_generalisation_counts) {
    otc_pole_agent agent = {lqr_v_policy, NULL, NULL};
    const_ctx zero = {{0.5, 0}, 0, 0};
    otc_pole_agent zero_agent = {const_policy, const_reset, &zero};
    otc_pole_result r;
    int count = -1, i, t, checked = 0;
    /* Every fifth start (the independent physics is slow): the same steps balanced. */
    for (i = 0; i < OTC_DPOLE_GENERALISATION_STARTS; i += 5) {
        otc_dpole_state st;
        double y[6], obs[7], out[1];
        otc_dpole_generalisation_start(i, &st);
        memcpy(y, st.s, sizeof y);
        for (t = 0; t < 1000; t++) {
            ref_dpole_obs(y, 1, obs);
            lqr_v_policy(NULL, obs, 7, out, 1);
            ref_dpole_action(y, out[0] < 0 ? 0 : out[0] > 1 ? 1 : out[0]);
            if (ref_dpole_failed(y)) break;
        }
        REQUIRE(otc_dpole_run_from(&st, 1, 1000, &agent, &r) == OTC_OK);
        CHECK_MSG(r.steps == t, "start %d: steps %d, independent %d", i, r.steps, t);
        checked++;
    }
    CHECK(checked == 125);
    REQUIRE(otc_dpole_generalisation(1, &agent, &count) == OTC_OK);
    /* A good controller, but from some corners of the grid no ±10 N push can recover. */
    CHECK_MSG(count >= 200 && count < 625, "count %d", count);
    /* Without a push only the five starts at rest with both poles upright (dx = θ1 = dθ1 = 0,
     * any x) stay balanced: they are exact equilibria. */
    REQUIRE(otc_dpole_generalisation(0, &zero_agent, &count) == OTC_OK);
    CHECK_MSG(count == 5, "zero-force count %d", count);
    CHECK(zero.resets == 625);
    /* Parts of the grid: those equilibria are starts 125 x + 62. */
    REQUIRE(otc_dpole_generalisation_range(0, &zero_agent, 0, 125, &count) == OTC_OK);
    CHECK_MSG(count == 1, "starts 0..124: %d", count);
    REQUIRE(otc_dpole_generalisation_range(0, &zero_agent, 62, 1, &count) == OTC_OK);
    CHECK(count == 1);
    REQUIRE(otc_dpole_generalisation_range(0, &zero_agent, 63, 437, &count) == OTC_OK);
    CHECK_MSG(count == 3, "starts 63..499: %d", count);
}

TEST(pole_dpnv_champion_test) {
    observer_ctx c;
    otc_pole_agent agent = {observer_policy, observer_reset, &c};
    const_ctx zero = {{0.5, 0}, 0, 0};
    otc_pole_agent zero_agent = {const_policy, const_reset, &zero};
    int long_steps = -1, gen = -1, success = -1;
    memset(&c, 0, sizeof c);
    REQUIRE(otc_dpnv_champion_test(&agent, &long_steps, &gen, &success) == OTC_OK);
    CHECK(long_steps == 100000);
    CHECK_MSG(gen >= 200 && gen <= 625, "generalisation %d", gen);
    CHECK(success == 1);
    CHECK(c.resets == 626); /* the long trial, then each of the 625 starts */
    REQUIRE(otc_dpnv_champion_test(&zero_agent, &long_steps, &gen, &success) == OTC_OK);
    CHECK(long_steps < 100 && gen == 0 && success == 0);
    CHECK(zero.resets == 1); /* failed the long test: generalisation not run */
    CHECK(otc_dpnv_champion_test(&zero_agent, NULL, NULL, NULL) == OTC_OK);
}

/* ---- Bad input ---------------------------------------------------------------------------- */

static void nan_policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    int i;
    (void)ctx;
    (void)obs;
    (void)n_obs;
    for (i = 0; i < n_out; i++) out[i] = NAN;
}

TEST(pole_bad_arguments_and_nan_outputs) {
    const_ctx c = {{0.5, 0}, 0, 0};
    otc_pole_agent good = {const_policy, NULL, &c}, no_policy = {NULL, NULL, &c};
    otc_pole_agent nan_agent = {nan_policy, NULL, NULL};
    otc_pole1_config cfg;
    otc_pole_result r;
    int count;
    otc_pole1_default_config(&cfg);
    CHECK(otc_pole1_run(&cfg, NULL, &r) == OTC_ERR_ARG);
    CHECK(otc_pole1_run(&cfg, &no_policy, &r) == OTC_ERR_ARG);
    CHECK(otc_pole1_run(&cfg, &good, NULL) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "otc_pole1_run") != NULL);
    cfg.n_outputs = 3;
    CHECK(otc_pole1_run(&cfg, &good, &r) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "n_outputs") != NULL);
    cfg.n_outputs = 1;
    cfg.max_steps = 0;
    CHECK(otc_pole1_run(&cfg, &good, &r) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "max_steps") != NULL);
    CHECK(otc_pole1_run(NULL, &good, &r) == OTC_OK); /* NULL config: the defaults */
    CHECK(otc_dpole_run(1, 0, &good, &r) == OTC_ERR_ARG);
    CHECK(otc_dpole_run(1, 10, &no_policy, &r) == OTC_ERR_ARG);
    CHECK(otc_dpole_run(1, 10, &good, NULL) == OTC_ERR_ARG);
    CHECK(otc_dpole_run_from(NULL, 1, 10, &good, &r) == OTC_ERR_ARG);
    CHECK(otc_dpole_generalisation(1, &good, NULL) == OTC_ERR_ARG);
    CHECK(otc_dpole_generalisation(1, &no_policy, &count) == OTC_ERR_ARG);
    CHECK(otc_dpole_generalisation_range(1, &good, 600, 26, &count) == OTC_ERR_ARG);
    CHECK(otc_dpole_generalisation_range(1, &good, -1, 5, &count) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "not in [0, 625)") != NULL);
    CHECK(otc_dpole_generalisation_start(0, NULL) == OTC_ERR_ARG);
    CHECK(otc_dpnv_champion_test(&no_policy, NULL, NULL, NULL) == OTC_ERR_ARG);
    /* A NaN output must not freeze the simulation into "balancing" forever. */
    REQUIRE(otc_pole1_run(NULL, &nan_agent, &r) == OTC_OK);
    CHECK(!r.success && r.steps < 100);
    REQUIRE(otc_dpole_run(1, 100000, &nan_agent, &r) == OTC_OK);
    CHECK(!r.success && r.steps < 100);
    REQUIRE(otc_dpole_run(0, 1000, &nan_agent, &r) == OTC_OK);
    CHECK(!r.success && r.steps < 100 && isfinite(r.fitness));
}
