/* Pole trials stepped one at a time (pole.h) against K side by side (pole_lanes.h): ns per
 * double-pole action and per single-pole step, with an evolved champion (its flat program) as
 * the controller, from the 625 generalisation starts (double pole) or pole1's random starts.
 * Usage: neat_pole_lanes [SECONDS_PER_ROW] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <time.h>

#include "bench_timing.h"
#include "otc/neat.h"
#include "otc/pole_lanes.h"

#define TRIALS      625
#define POLE1_STEPS 2000

typedef struct {
    otc_neat_flat *flat;
} agent_ctx;

/* task.c's policy glue: float observations, the output when finite, else 0.5. */
static void policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    agent_ctx *a = ctx;
    float x[8], y[2] = {0.5f, 0.5f};
    for (int i = 0; i < n_obs && i < 8; i++) x[i] = (float)obs[i];
    otc_neat_flat_forward(a->flat, x, 1, y);
    for (int k = 0; k < n_out; k++) out[k] = k < 2 && isfinite(y[k]) ? y[k] : 0.5;
}

static void reset(void *ctx) {
    otc_neat_flat_reset(((agent_ctx *)ctx)->flat);
}

typedef struct {
    int pole1; /* else the double pole with velocities */
    int lanes; /* 0: the scalar functions */
    otc_pole1_config p1;
    agent_ctx ctx[OTC_POLE_LANES_MAX];
    otc_pole_agent agents[OTC_POLE_LANES_MAX];
    int next;     /* the next trial */
    long actions; /* computed in the last run (balanced steps + the failing one) */
} run;

static void start_of(const run *r, int t, void *start) {
    if (r->pole1)
        otc_pole1_random_start((uint64_t)t + 1, start);
    else
        otc_dpole_generalisation_start(t, start);
}

static int next(void *ctx, int lane, bool wait, void *start) {
    (void)lane;
    (void)wait;
    run *r = ctx;
    if (r->next == TRIALS) return 0;
    start_of(r, r->next++, start);
    return 1;
}

static void done(void *ctx, int lane, const otc_pole_result *res) {
    (void)lane;
    run *r = ctx;
    r->actions += res->steps + !res->success;
}

static int run_all(void *arg) {
    run *r = arg;
    r->next = 0;
    r->actions = 0;
    if (r->lanes > 0) {
        otc_pole_lane_source src = {next, done, r, r->agents};
        return r->pole1 ? otc_pole1_lanes_run(r->lanes, &r->p1, &src) != OTC_OK
                        : otc_dpole_lanes_run(r->lanes, 1, OTC_DPOLE_GENERALISATION_STEPS, &src) !=
                              OTC_OK;
    }
    for (int t = 0; t < TRIALS; t++) {
        otc_pole_result res;
        if (r->pole1) {
            /* otc_pole1_run draws its own start: hand it this trial's seed. */
            otc_pole1_config cfg = r->p1;
            cfg.random_start = 1;
            cfg.seed = (uint64_t)t + 1;
            if (otc_pole1_run(&cfg, &r->agents[0], &res) != OTC_OK) return 1;
        } else {
            otc_dpole_state st;
            otc_dpole_generalisation_start(t, &st);
            if (otc_dpole_run_from(&st, 1, OTC_DPOLE_GENERALISATION_STEPS, &r->agents[0], &res) !=
                OTC_OK)
                return 1;
        }
        done(r, 0, &res);
    }
    return 0;
}

/* CPU seconds of this thread: other programs sharing the cores blur it least. */
static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Median thread-CPU seconds of run_all(r) over 7 blocks of about `secs` / 7 each. */
static double median_cpu(run *r, double secs) {
    enum { BLOCKS = 7 };
    double t[BLOCKS];
    long calls = 1;
    for (;;) {
        double t0 = thread_cpu();
        for (long i = 0; i < calls; i++) run_all(r);
        if ((thread_cpu() - t0) * BLOCKS >= secs || calls >= 1 << 20) break;
        calls *= 2;
    }
    for (int b = 0; b < BLOCKS; b++) {
        double t0 = thread_cpu();
        for (long i = 0; i < calls; i++) run_all(r);
        t[b] = (thread_cpu() - t0) / (double)calls;
    }
    qsort(t, BLOCKS, sizeof t[0], bench_cmp_double);
    return t[BLOCKS / 2];
}

/* A champion of `task` evolved from the shipped config (seed 1), lowered into every lane's
 * program. */
static int champion(const char *task_name, const char *ini, run *r) {
    otc_neat_config c;
    otc_neat_task *task = NULL;
    otc_neat_population *p = NULL;
    if (otc_neat_config_load(ini, &c) != OTC_OK || otc_neat_task_create(task_name, &c, &task) ||
        otc_neat_population_new(&c, 1, &p) != OTC_OK)
        return 1;
    otc_neat_step_options o = {.threads = 1};
    for (int g = 0; g < 100 && !otc_neat_solved(p); g++) {
        bool solved = false;
        if (otc_neat_step(p, task, &o, &solved) != OTC_OK) return 1;
    }
    for (int l = 0; l < OTC_POLE_LANES_MAX; l++) {
        r->ctx[l].flat = otc_neat_flat_new();
        if (!r->ctx[l].flat || otc_neat_flat_build(r->ctx[l].flat, otc_neat_champion(p), &c))
            return 1;
        r->agents[l] = (otc_pole_agent){policy, reset, &r->ctx[l]};
    }
    otc_pole1_default_config(&r->p1);
    r->p1.max_steps = POLE1_STEPS;
    r->p1.n_outputs = c.num_outputs;
    otc_neat_population_free(p);
    otc_neat_task_free(task);
    return 0;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 0.5;
    if (!(secs > 0)) secs = 0.5;
    static const struct {
        const char *name, *task, *ini;
        int pole1;
    } systems[] = {
        {"double pole (dpv), ns/action", "dpv", OTC_SOURCE_DIR "/examples/neat/dpv.ini", 0},
        {"single pole (pole1), ns/step", "pole1", OTC_SOURCE_DIR "/examples/neat/pole1.ini", 1},
    };
    printf(
        "Pole trials one at a time (scalar) and K side by side (lanes), an evolved champion "
        "as controller;\nns of thread CPU time (median of 7 blocks); speedup against scalar\n\n");
    for (size_t s = 0; s < sizeof systems / sizeof *systems; s++) {
        static run r;
        r = (run){.pole1 = systems[s].pole1};
        if (champion(systems[s].task, systems[s].ini, &r)) {
            fprintf(stderr, "neat_pole_lanes: %s: %s\n", systems[s].task, otc_last_error());
            return 2;
        }
        printf("%s\n%8s %10s %8s %10s\n", systems[s].name, "lanes", "ns", "speedup", "actions");
        double scalar = 0;
        long scalar_actions = 0;
        for (int k = 0; k <= OTC_POLE_LANES_MAX; k++) {
            r.lanes = k;
            double t = median_cpu(&r, secs);
            double ns = 1e9 * t / (double)r.actions;
            if (k == 0) {
                scalar = ns;
                scalar_actions = r.actions;
            }
            /* Lanes run the same trials: the same actions, or something is wrong. */
            char label[16];
            snprintf(label, sizeof label, k ? "%d" : "scalar", k);
            printf("%8s %10.1f %7.2fx %10ld%s\n", label, ns, scalar / ns, r.actions,
                   r.actions == scalar_actions ? "" : " MISMATCH");
        }
        printf("\n");
        for (int l = 0; l < OTC_POLE_LANES_MAX; l++) otc_neat_flat_free(r.ctx[l].flat);
    }
    return 0;
}
