/* Pole-balancing benchmark tasks (single pole, double pole with and without velocities), as
 * in the NEAT paper; the controller is any policy callback, so nothing here depends on NEAT. */
#ifndef OTC_POLE_H
#define OTC_POLE_H

#include <stdint.h>

#include "error.h"
#include "rng.h"

/* ---- The controller ---------------------------------------------------------------------- */

/* Called once per action step: read n_obs scaled observations, write n_out outputs. */
typedef void (*otc_pole_policy)(void *ctx, const double *obs, int n_obs, double *out, int n_out);
/* Called before every trial, so a recurrent controller starts each trial from a clean state. */
typedef void (*otc_pole_reset_fn)(void *ctx);

typedef struct {
    otc_pole_policy policy;  /* required */
    otc_pole_reset_fn reset; /* optional: NULL when the controller keeps no state */
    void *ctx;               /* passed back to both callbacks */
} otc_pole_agent;

/* What one trial measured. */
typedef struct {
    int steps;      /* actions after which the system was still inside the bounds */
    int success;    /* 1 when every one of max_steps actions was balanced */
    double fitness; /* pole1 and dpv: steps; dpnv: Gruau's anti-wiggle fitness */
} otc_pole_result;

/* ---- Physics helpers ---------------------------------------------------------------------- */

/* sin and cos as the pole tasks compute them: polynomials (under one ulp) for |x| <= pi/4,
 * libm outside. NULL outputs are not allowed. */
void otc_pole_sincos(double x, double *s, double *c);

/* ---- Single pole (pole1) ------------------------------------------------------------------
 * Sutton/Anderson/Barto cart-pole as in Stanley's pole1.cpp, in double precision: cart 1 kg,
 * pole 0.1 kg, half-length 0.5 m, g = 9.8, bang-bang ±10 N, one Euler step of 0.02 s per action,
 * failure at |x| > 2.4 m or |θ| > 12° (0.2094384 rad). θ > 0 leans towards +x.
 * Observations (pole1.cpp's scaling into about [0, 1], bias moved last like the double pole):
 *   (x + 2.4)/4.8, (dx + 0.75)/1.5, (θ + 0.2094384)/0.41, (dθ + 1)/2, 1.0 */

#define OTC_POLE1_N_OBS         5
#define OTC_POLE1_SUCCESS_STEPS 100000

/* x (m), dx (m/s), θ (rad), dθ (rad/s). */
typedef struct {
    double s[4];
} otc_pole1_state;

typedef struct {
    int max_steps;    /* trial length; success when all are balanced (default 100,000) */
    int n_outputs;    /* 1: push +10 N when out[0] > 0.5; 2: push -10 N when out[0] > out[1]
                         (pole1.cpp's two-output rule), else +10 N (default 1) */
    int random_start; /* 0: at rest in the centre (default); 1: pole1.cpp's random start */
    uint64_t seed;    /* seeds the random start */
} otc_pole1_config;

/* Fill cfg with the defaults above. */
void otc_pole1_default_config(otc_pole1_config *cfg);
/* pole1.cpp's random start, drawn on its 0.001 grid: x ∈ [-2.4, 2.4), dx ∈ [-1, 1),
 * θ ∈ [-0.2, 0.2), dθ ∈ [-1.5, 1.5). */
void otc_pole1_random_start(uint64_t seed, otc_pole1_state *st);
/* Advance one action (one Euler step of 0.02 s) pushing +10 N if push_right, else -10 N. */
void otc_pole1_step(otc_pole1_state *st, int push_right);
/* 1 when the state is out of bounds (or not finite). */
int otc_pole1_failed(const otc_pole1_state *st);
/* Write the OTC_POLE1_N_OBS scaled observations. */
void otc_pole1_observe(const otc_pole1_state *st, double *obs);
/* Run one trial; result->fitness = result->steps. */
otc_status otc_pole1_run(const otc_pole1_config *cfg, const otc_pole_agent *agent,
                         otc_pole_result *result);

/* ---- Double pole (dpv, dpnv) --------------------------------------------------------------
 * Wieland's equations exactly as in Stanley's NEAT 1.2.1 CartPole (experiments.cpp, physics by
 * Gomez): cart 1 kg, poles 0.1 and 0.01 kg, half-lengths 0.5 and 0.05 m, pivot friction
 * μp = 2e-6, g = -9.8 (that code's sign convention), no cart friction (the reference declares
 * MUC = 0.0005 but its step() never uses it, so neither do we), force (out - 0.5)·20 N with out
 * clamped to [0, 1], two RK4 steps of 0.01 s per action, failure at |x| > 2.4 m or either
 * |θ| > 0.628329 rad (36°). Standard start: at rest, long pole at 0.07 rad.
 * Observations with velocities (dpv, 7): x/4.8, dx/2, θ1/0.52, dθ1/2, θ2/0.52, dθ2/2, 0.5.
 * Without (dpnv, 4): x/4.8, θ1/0.52, θ2/0.52, 0.5. The policy's out[0] is the action. */

#define OTC_DPV_N_OBS                   7
#define OTC_DPNV_N_OBS                  4
#define OTC_DPOLE_SUCCESS_STEPS         100000 /* dpv success; dpnv champion's long test */
#define OTC_DPNV_TRIAL_STEPS            1000   /* dpnv's Gruau-fitness trial */
#define OTC_DPOLE_GENERALISATION_STARTS 625
#define OTC_DPOLE_GENERALISATION_STEPS  1000
#define OTC_DPOLE_GENERALISATION_PASS   200 /* starts to balance for the dpnv success test */

/* x, dx, θ1, dθ1, θ2, dθ2 (m, m/s, rad, rad/s); pole 1 is the long one. */
typedef struct {
    double s[6];
} otc_dpole_state;

/* The standard start: everything zero but θ1 = 0.07 rad. */
void otc_dpole_standard_start(otc_dpole_state *st);
/* Advance one action: force (clamp(out, 0, 1) - 0.5)·20 N held for two RK4 steps of 0.01 s. */
void otc_dpole_step(otc_dpole_state *st, double output);
/* 1 when the state is out of bounds (or not finite). */
int otc_dpole_failed(const otc_dpole_state *st);
/* Number of observations: OTC_DPV_N_OBS with velocities, else OTC_DPNV_N_OBS. */
int otc_dpole_n_obs(int velocities);
/* Write the scaled observations (7 with velocities, 4 without). */
void otc_dpole_observe(const otc_dpole_state *st, int velocities, double *obs);
/* Gruau's fitness from the steps balanced t (of a 1,000-step trial) and the sum over the last
 * 100 balanced steps of |x|+|dx|+|θ1|+|dθ1|: 0.1·t/1000 + (t > 100 ? 0.9·0.75/sum : 0), with
 * t > 100 as in the reference code (the paper writes t ≥ 100). A sum ≤ 1e-9 counts as 1e-9. */
double otc_dpnv_gruau_fitness(int steps_balanced, double jiggle_sum);
/* Run one trial from the standard start. fitness: steps with velocities, else Gruau's fitness
 * (meant for max_steps = OTC_DPNV_TRIAL_STEPS). */
otc_status otc_dpole_run(int velocities, int max_steps, const otc_pole_agent *agent,
                         otc_pole_result *result);
/* Same as otc_dpole_run from a given start state. */
otc_status otc_dpole_run_from(const otc_dpole_state *start, int velocities, int max_steps,
                              const otc_pole_agent *agent, otc_pole_result *result);
/* Start `index` ∈ [0, 625) of the generalisation grid: x, dx, θ1, dθ1 each at
 * {0.05, 0.25, 0.5, 0.75, 0.95} of ±2.16 m, ±1.35 m/s, ±3.6°, ±8.6°/s (x slowest, dθ1
 * fastest, as the reference's nested loops), short pole at rest upright. */
otc_status otc_dpole_generalisation_start(int index, otc_dpole_state *st);
/* How many of the 625 starts the agent balances for all 1,000 steps (reset before each). */
otc_status otc_dpole_generalisation(int velocities, const otc_pole_agent *agent, int *count);
/* The same over starts first .. first + n - 1 only (so several agents can share the grid). */
otc_status otc_dpole_generalisation_range(int velocities, const otc_pole_agent *agent, int first,
                                          int n, int *count);
/* The NEAT paper's dpnv success test for a champion: balance 100,000 steps from the standard
 * start without velocities, then balance ≥ 200 of the 625 generalisation starts. Fills
 * *long_steps, *generalisation (0 when the long test failed, as it is then not run) and
 * *success; each pointer may be NULL. */
otc_status otc_dpnv_champion_test(const otc_pole_agent *agent, int *long_steps, int *generalisation,
                                  int *success);

/* ---- neat-python's single pole (pole1:neat-python) -----------------------------------------
 * neat-python's examples/single-pole-balancing (cart_pole.py, evolve-feedforward.py,
 * evolve-ctrnn.py): cart 1 kg, pole 0.1 kg, half-length 0.5 m, g = 9.8, Florian's corrected
 * equations integrated leapfrog with steps of 0.01 s, one action per step, ±10 N (out[0] > 0.5
 * pushes +x), failure at |x| >= 2.4 m or |θ| >= 45°. A run starts at x ∈ U(-1.2, 1.2),
 * θ ∈ U(-22.5°, 22.5°), dx, dθ ∈ U(-1, 1) and lasts while t < 60 s; its fitness is the time t
 * after the last step still inside the limits; a genome's fitness is its worst of 5 runs.
 * Observations (get_scaled_state): 0.5 (x + 2.4)/2.4, (dx + 0.75)/1.5, 0.5 (θ + θmax)/θmax,
 * (dθ + 1)/2. */

#define OTC_NP_POLE_N_OBS     4
#define OTC_NP_POLE_TIME_STEP 0.01 /* s per step and action; the CTRNN advances this much */
#define OTC_NP_POLE_SECONDS   60.0
#define OTC_NP_POLE_RUNS      5

typedef struct {
    double x, dx, theta, dtheta; /* m, m/s, rad, rad/s */
    double xacc, tacc;           /* the last step's accelerations (leapfrog) */
    double t;                    /* s */
} otc_np_pole_state;

/* The random start above, drawn from rng. */
void otc_np_pole_start(otc_rng *rng, otc_np_pole_state *st);
/* One leapfrog step of 0.01 s under `force` newtons. */
void otc_np_pole_step(otc_np_pole_state *st, double force);
/* 1 when out of the limits (or not finite). */
int otc_np_pole_failed(const otc_np_pole_state *st);
/* The OTC_NP_POLE_N_OBS scaled observations. */
void otc_np_pole_observe(const otc_np_pole_state *st, double *obs);
/* The worst of OTC_NP_POLE_RUNS runs from starts drawn from seed (agent reset before each):
 * result->fitness (seconds), ->steps of that run, ->success when it lasted the 60 s. */
otc_status otc_np_pole_run(uint64_t seed, const otc_pole_agent *agent, otc_pole_result *result);

#endif
