/* Pole-balancing trials stepped several at once ("lanes"): each lane is one trial computing
 * exactly the operations of pole.h's scalar functions (otc_pole1_run, otc_dpole_run_from), bit
 * for bit, but the lanes' independent arithmetic sits side by side so the core overlaps it.
 * The caller drives the loop: start a lane, each action observe every running lane, run its
 * policy, step them all; a lane whose trial ended reports it and can start another trial. */
#ifndef OTC_POLE_LANES_H
#define OTC_POLE_LANES_H

#include <stdbool.h>

#include "pole.h"

#define OTC_POLE_LANES_MAX     8   /* lanes one set can step */
#define OTC_POLE_JIGGLE_WINDOW 100 /* dpnv's anti-wiggle sum: the last 100 balanced steps */

/* ---- Double pole ---------------------------------------------------------------------------- */

typedef struct {
    int lanes, velocities, max_steps;
    double s[6][OTC_POLE_LANES_MAX]; /* state by variable, then lane (x, dx, θ1, dθ1, θ2, dθ2) */
    int steps[OTC_POLE_LANES_MAX];
    bool running[OTC_POLE_LANES_MAX];
    double jiggle[OTC_POLE_LANES_MAX][OTC_POLE_JIGGLE_WINDOW]; /* as otc_dpole_run_from's ring */
} otc_dpole_lanes;

/* `lanes` idle lanes of trials of max_steps actions (velocities: dpv's observations and
 * fitness, else dpnv's). OTC_ERR_ARG outside 1..OTC_POLE_LANES_MAX lanes or max_steps <= 0. */
otc_status otc_dpole_lanes_init(otc_dpole_lanes *L, int lanes, int velocities, int max_steps);
/* Lane `lane` starts a trial from `start` (its controller must be reset by the caller). */
void otc_dpole_lanes_start(otc_dpole_lanes *L, int lane, const otc_dpole_state *start);
/* A running lane's observations (otc_dpole_n_obs of them), as otc_dpole_observe. */
void otc_dpole_lanes_observe(const otc_dpole_lanes *L, int lane, double *obs);
/* One action on every running lane, out[lane] its policy's output (as otc_dpole_step; idle
 * lanes' entries are not read). Returns a bit per lane whose trial ended at this action
 * (failed, or max_steps balanced): it is idle from now on and its result is ready. */
unsigned otc_dpole_lanes_step(otc_dpole_lanes *L, const double *out);
/* An ended lane's result, as otc_dpole_run_from reports it. */
void otc_dpole_lanes_result(const otc_dpole_lanes *L, int lane, otc_pole_result *result);

/* ---- Single pole (pole1) --------------------------------------------------------------------- */

typedef struct {
    int lanes, max_steps, n_outputs;
    double s[4][OTC_POLE_LANES_MAX]; /* x, dx, θ, dθ by lane */
    int steps[OTC_POLE_LANES_MAX];
    bool running[OTC_POLE_LANES_MAX];
} otc_pole1_lanes;

/* As otc_dpole_lanes_init, for cfg's max_steps and n_outputs (its start fields are the
 * caller's: see otc_pole1_lanes_start). OTC_ERR_ARG as otc_pole1_run rejects cfg. */
otc_status otc_pole1_lanes_init(otc_pole1_lanes *L, int lanes, const otc_pole1_config *cfg);
void otc_pole1_lanes_start(otc_pole1_lanes *L, int lane, const otc_pole1_state *start);
void otc_pole1_lanes_observe(const otc_pole1_lanes *L, int lane, double *obs);
/* out holds 2 outputs per lane (out[2 * lane], out[2 * lane + 1]); a lane's push follows
 * otc_pole1_run's rule for n_outputs. Returns the ended lanes as otc_dpole_lanes_step. */
unsigned otc_pole1_lanes_step(otc_pole1_lanes *L, const double *out);
void otc_pole1_lanes_result(const otc_pole1_lanes *L, int lane, otc_pole_result *result);

/* ---- Trials from a source, as many at once as there are lanes --------------------------------
 * The loop of otc_dpole_run_from / otc_pole1_run on every lane: a lane that is idle asks the
 * source for its next trial, resets that lane's agent, and runs the trial; each ended trial's
 * result goes to done. */

typedef struct {
    /* Lane `lane`'s next trial: make agents[lane] its controller and write its start (an
     * otc_dpole_state or otc_pole1_state), return 1; 0 when no trial is left for this lane;
     * -1 when none is ready yet (asked again after the next action), allowed only when `wait`
     * is false (no lane is running: the source must then wait, or say 0). */
    int (*next)(void *ctx, int lane, bool wait, void *start);
    void (*done)(void *ctx, int lane, const otc_pole_result *result);
    void *ctx;
    otc_pole_agent *agents; /* one per lane */
} otc_pole_lane_source;

/* Trials of max_steps actions from `src` on `lanes` lanes (OTC_ERR_ARG as the init functions). */
otc_status otc_dpole_lanes_run(int lanes, int velocities, int max_steps,
                               const otc_pole_lane_source *src);
otc_status otc_pole1_lanes_run(int lanes, const otc_pole1_config *cfg,
                               const otc_pole_lane_source *src);

#endif
