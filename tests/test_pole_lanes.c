/* Pole trials stepped side by side (otc/pole_lanes.h) against pole.h's scalar trials, bit for
 * bit: every observation a controller sees and every result, over random starts and random
 * recurrent controllers (with NaN and out-of-range outputs, trials ending at different steps);
 * and the NEAT pole tasks' evaluation by lanes and dpnv's generalisation test against the
 * scalar trials of the same genomes. */
#include "harness.h"

#include <stdint.h>
#include <string.h>

#include "otc/neat.h"
#include "otc/pole_lanes.h"

#include "flat_agent.h"

/* ---- a random recurrent controller that records what it saw -------------------------------- */

typedef struct {
    double w[8][2], u[2][2], bias[2]; /* out = w·obs + u·h + bias, h = tanh of the last out */
    double h[2];
    int calls, nan_every; /* every nan_every-th call answers NaN (0: never) */
    uint64_t seen;        /* FNV-1a of the observations' bits, the trajectory's fingerprint */
    int resets;
} ctl;

static double uniform(otc_rng *rng, double lo, double hi) {
    return lo + (hi - lo) * (double)otc_rng_u32(rng) / 4294967296.0;
}

static void ctl_init(ctl *c, otc_rng *rng) {
    memset(c, 0, sizeof *c);
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 2; k++) c->w[i][k] = uniform(rng, -3, 3);
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 2; k++) c->u[i][k] = uniform(rng, -2, 2);
        c->bias[i] = uniform(rng, -0.5, 1.5); /* outputs beyond [0, 1] test the clamp */
    }
    c->nan_every = otc_rng_below(rng, 3) == 0 ? 5 + (int)otc_rng_below(rng, 40) : 0;
}

static void ctl_policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    ctl *c = ctx;
    for (int i = 0; i < n_obs; i++) {
        uint64_t bits;
        memcpy(&bits, &obs[i], sizeof bits);
        for (int b = 0; b < 8; b++)
            c->seen = (c->seen ^ ((bits >> (8 * b)) & 0xff)) * 1099511628211u;
    }
    c->calls++;
    for (int k = 0; k < n_out && k < 2; k++) {
        double v = c->bias[k];
        for (int i = 0; i < n_obs && i < 8; i++) v += c->w[i][k] * obs[i];
        for (int j = 0; j < 2; j++) v += c->u[j][k] * c->h[j];
        out[k] = c->nan_every && c->calls % c->nan_every == 0 ? NAN : v;
    }
    for (int k = 0; k < 2; k++) {
        c->h[k] = tanh(k < n_out ? out[k] : 0.0);
        if (!(c->h[k] == c->h[k])) c->h[k] = 0.0;
    }
}

static void ctl_reset(void *ctx) {
    ctl *c = ctx;
    c->h[0] = c->h[1] = 0.0;
    c->resets++;
}

/* ---- lanes against the scalar trials -------------------------------------------------------- */

#define N_TRIALS 160

typedef struct {
    int pole1, velocities;
    otc_dpole_state dstart[N_TRIALS];
    otc_pole1_state pstart[N_TRIALS];
    ctl proto[N_TRIALS]; /* each trial's controller as it starts */
    ctl lane_ctl[OTC_POLE_LANES_MAX];
    otc_pole_agent agents[OTC_POLE_LANES_MAX];
    int lane_trial[OTC_POLE_LANES_MAX];
    int next;
    otc_pole_result result[N_TRIALS];
    uint64_t seen[N_TRIALS];
    int calls[N_TRIALS], resets[N_TRIALS];
    int not_ready; /* the source says "not yet" this many times first, when it may */
} trials;

static int t_next(void *ctx, int lane, bool wait, void *start) {
    trials *t = ctx;
    if (t->not_ready > 0 && !wait) {
        t->not_ready--;
        return -1;
    }
    if (t->next == N_TRIALS) return 0;
    int i = t->next++;
    t->lane_trial[lane] = i;
    t->lane_ctl[lane] = t->proto[i];
    if (t->pole1)
        *(otc_pole1_state *)start = t->pstart[i];
    else
        *(otc_dpole_state *)start = t->dstart[i];
    return 1;
}

static void t_done(void *ctx, int lane, const otc_pole_result *r) {
    trials *t = ctx;
    int i = t->lane_trial[lane];
    t->result[i] = *r;
    t->seen[i] = t->lane_ctl[lane].seen;
    t->calls[i] = t->lane_ctl[lane].calls;
    t->resets[i] = t->lane_ctl[lane].resets;
}

/* Random starts: most near upright (long trials), some far out (a trial of one action, sin
 * and cos from libm beyond pi/4). */
static void make_trials(trials *t, otc_rng *rng) {
    for (int i = 0; i < N_TRIALS; i++) {
        double spread = i % 7 == 0 ? 1.0 : 0.05;
        for (int k = 0; k < 6; k++) t->dstart[i].s[k] = uniform(rng, -spread, spread);
        if (i % 11 == 0) t->dstart[i].s[2] = uniform(rng, 0.7, 1.2);
        for (int k = 0; k < 4; k++) t->pstart[i].s[k] = uniform(rng, -spread, spread);
        if (i % 13 == 0) t->pstart[i].s[2] = 0.21; /* fails at its first step */
        ctl_init(&t->proto[i], rng);
    }
}

/* Every trial run alone by pole.h must equal its run in a lane. */
static void check_against_scalar(trials *t, int max_steps, int n_outputs) {
    for (int i = 0; i < N_TRIALS; i++) {
        ctl c = t->proto[i];
        otc_pole_agent a = {ctl_policy, ctl_reset, &c};
        otc_pole_result r;
        if (t->pole1) {
            /* otc_pole1_run starts at rest unless random_start: step from the start by hand
             * through the public pieces as otc_pole1_run does, then compare with it where the
             * start is the origin. */
            otc_pole1_state st = t->pstart[i];
            double obs[OTC_POLE1_N_OBS], out[2];
            int steps = 0;
            ctl_reset(&c);
            while (steps < max_steps) {
                otc_pole1_observe(&st, obs);
                out[0] = out[1] = 0.0;
                ctl_policy(&c, obs, OTC_POLE1_N_OBS, out, n_outputs);
                otc_pole1_step(&st, n_outputs == 2 ? !(out[0] > out[1]) : out[0] > 0.5);
                if (otc_pole1_failed(&st)) break;
                steps++;
            }
            r = (otc_pole_result){steps, steps == max_steps, steps};
        } else {
            REQUIRE(otc_dpole_run_from(&t->dstart[i], t->velocities, max_steps, &a, &r) == OTC_OK);
        }
        CHECK_MSG(r.steps == t->result[i].steps, "trial %d: %d steps alone, %d in a lane", i,
                  r.steps, t->result[i].steps);
        CHECK(r.success == t->result[i].success);
        CHECK_MSG(memcmp(&r.fitness, &t->result[i].fitness, sizeof r.fitness) == 0,
                  "trial %d: fitness %.17g alone, %.17g in a lane", i, r.fitness,
                  t->result[i].fitness);
        CHECK_MSG(c.seen == t->seen[i], "trial %d: the observations differ", i);
        CHECK(c.calls == t->calls[i]);
        CHECK(t->resets[i] == 1);
    }
}

TEST(pole_lanes_double_pole_bit_identical_to_scalar) {
    otc_rng rng;
    otc_rng_seed(&rng, 20261125);
    static trials t;
    int spread_steps = 0;
    for (int round = 0; round < 6; round++) {
        memset(&t, 0, sizeof t);
        t.velocities = round % 2;
        make_trials(&t, &rng);
        int max_steps = round < 4 ? 1000 : 40; /* short trials: some lanes succeed */
        int lanes = 1 + (int)otc_rng_below(&rng, OTC_POLE_LANES_MAX);
        if (round == 0) lanes = OTC_POLE_LANES_MAX;
        t.not_ready = round == 3 ? 50 : 0;
        for (int l = 0; l < OTC_POLE_LANES_MAX; l++)
            t.agents[l] = (otc_pole_agent){ctl_policy, ctl_reset, &t.lane_ctl[l]};
        otc_pole_lane_source src = {t_next, t_done, &t, t.agents};
        REQUIRE(otc_dpole_lanes_run(lanes, t.velocities, max_steps, &src) == OTC_OK);
        check_against_scalar(&t, max_steps, 1);
        int lo = max_steps, hi = 0;
        for (int i = 0; i < N_TRIALS; i++) {
            lo = t.result[i].steps < lo ? t.result[i].steps : lo;
            hi = t.result[i].steps > hi ? t.result[i].steps : hi;
        }
        spread_steps += hi > lo + 10;
    }
    CHECK(spread_steps == 6); /* lanes did end at different steps */
}

TEST(pole_lanes_single_pole_bit_identical_to_scalar) {
    otc_rng rng;
    otc_rng_seed(&rng, 7);
    static trials t;
    for (int round = 0; round < 6; round++) {
        memset(&t, 0, sizeof t);
        t.pole1 = 1;
        make_trials(&t, &rng);
        otc_pole1_config cfg;
        otc_pole1_default_config(&cfg);
        cfg.max_steps = round < 4 ? 2000 : 30;
        cfg.n_outputs = 1 + round % 2;
        int lanes = 1 + (int)otc_rng_below(&rng, OTC_POLE_LANES_MAX);
        t.not_ready = round == 2 ? 30 : 0;
        for (int l = 0; l < OTC_POLE_LANES_MAX; l++)
            t.agents[l] = (otc_pole_agent){ctl_policy, ctl_reset, &t.lane_ctl[l]};
        otc_pole_lane_source src = {t_next, t_done, &t, t.agents};
        REQUIRE(otc_pole1_lanes_run(lanes, &cfg, &src) == OTC_OK);
        check_against_scalar(&t, cfg.max_steps, cfg.n_outputs);
    }
    /* And otc_pole1_run itself, from rest, against a lane started at rest. */
    memset(&t, 0, sizeof t);
    t.pole1 = 1;
    make_trials(&t, &rng);
    for (int i = 0; i < N_TRIALS; i++) t.pstart[i] = (otc_pole1_state){{0, 0, 0, 0}};
    otc_pole1_config cfg;
    otc_pole1_default_config(&cfg);
    cfg.max_steps = 3000;
    for (int l = 0; l < OTC_POLE_LANES_MAX; l++)
        t.agents[l] = (otc_pole_agent){ctl_policy, ctl_reset, &t.lane_ctl[l]};
    otc_pole_lane_source src = {t_next, t_done, &t, t.agents};
    REQUIRE(otc_pole1_lanes_run(4, &cfg, &src) == OTC_OK);
    for (int i = 0; i < N_TRIALS; i++) {
        ctl c = t.proto[i];
        otc_pole_agent a = {ctl_policy, ctl_reset, &c};
        otc_pole_result r;
        REQUIRE(otc_pole1_run(&cfg, &a, &r) == OTC_OK);
        CHECK(r.steps == t.result[i].steps && r.success == t.result[i].success);
        CHECK(c.seen == t.seen[i]);
    }
}

TEST(pole_lanes_bad_arguments) {
    otc_dpole_lanes d;
    otc_pole1_lanes p;
    otc_pole1_config cfg;
    otc_pole1_default_config(&cfg);
    CHECK(otc_dpole_lanes_init(&d, 0, 1, 100) == OTC_ERR_ARG);
    CHECK(otc_dpole_lanes_init(&d, OTC_POLE_LANES_MAX + 1, 1, 100) == OTC_ERR_ARG);
    CHECK(otc_dpole_lanes_init(&d, 2, 1, 0) == OTC_ERR_ARG);
    CHECK(otc_pole1_lanes_init(&p, 9, &cfg) == OTC_ERR_ARG);
    cfg.n_outputs = 3;
    CHECK(otc_pole1_lanes_init(&p, 2, &cfg) == OTC_ERR_ARG);
}

/* ---- the NEAT tasks: evaluation by lanes against one genome at a time ------------------------ */

/* A population of `task` evolved a few generations from its shipped config made recurrent (so
 * genomes carry state across steps), then its unevaluated genomes evaluated both ways. */
static void check_task_lanes(const char *task_name, const char *ini, int gens, int threads,
                             double long_fitness) {
    otc_neat_config c;
    REQUIRE(otc_neat_config_load(ini, &c) == OTC_OK);
    c.feed_forward = false;
    c.node_add_prob = 0.2; /* hidden neurons early */
    c.conn_add_prob = 0.5;
    otc_neat_task *lanes = NULL, *alone = NULL;
    REQUIRE(otc_neat_task_create(task_name, &c, &lanes) == OTC_OK);
    REQUIRE(otc_neat_task_create(task_name, &c, &alone) == OTC_OK);
    REQUIRE(lanes->evaluate_lanes != NULL && lanes->lanes > 1);
    alone->evaluate_lanes = NULL;
    otc_neat_population *p = NULL;
    REQUIRE(otc_neat_population_new(&c, 3, &p) == OTC_OK);
    otc_neat_step_options o = {.threads = 1};
    for (int g = 0; g < gens; g++) {
        bool solved = false;
        REQUIRE(otc_neat_step(p, alone, &o, &solved) == OTC_OK);
    }
    int n = otc_neat_population_size(p);
    otc_neat_genome **gs = calloc((size_t)n, sizeof *gs);
    uint64_t *seeds = calloc((size_t)n, sizeof *seeds);
    double *fit = calloc((size_t)n, sizeof *fit);
    bool *s1 = calloc((size_t)n, sizeof *s1), *s2 = calloc((size_t)n, sizeof *s2);
    REQUIRE(gs && seeds && fit && s1 && s2);
    for (int i = 0; i < n; i++) {
        gs[i] = otc_neat_population_genome(p, i);
        gs[i]->evaluated = false;
        seeds[i] = otc_neat_genome_seed(p, i);
    }
    otc_neat_evaluator *e = otc_neat_evaluator_new();
    otc_neat_batch b = {gs, seeds, NULL, n, 0, s1};
    REQUIRE(otc_neat_evaluate_batch(e, alone, &c, &b, 1) == OTC_OK);
    int long_trials = 0;
    for (int i = 0; i < n; i++) {
        fit[i] = gs[i]->fitness;
        long_trials += fit[i] >= long_fitness;
        gs[i]->evaluated = false;
    }
    b.solved = s2;
    REQUIRE(otc_neat_evaluate_batch(e, lanes, &c, &b, threads) == OTC_OK);
    for (int i = 0; i < n; i++) {
        CHECK(gs[i]->evaluated);
        CHECK_MSG(memcmp(&fit[i], &gs[i]->fitness, sizeof fit[i]) == 0,
                  "%s genome %d: %.17g alone, %.17g by lanes", task_name, i, fit[i],
                  gs[i]->fitness);
        CHECK(s1[i] == s2[i]);
    }
    CHECK_MSG(long_trials > 0, "%s: no long trial", task_name); /* not only quick failures */
    otc_neat_evaluator_free(e);
    free(gs);
    free(seeds);
    free(fit);
    free(s1);
    free(s2);
    otc_neat_population_free(p);
    otc_neat_task_free(lanes);
    otc_neat_task_free(alone);
}

TEST(pole_lanes_evaluation_matches_one_at_a_time) {
    /* Long trials: 100 balanced steps (dpnv's fitness 0.1 t / 1000 for t steps). */
    check_task_lanes("pole1", OTC_SOURCE_DIR "/examples/neat/pole1.ini", 1, 1, 100);
    check_task_lanes("dpv", OTC_SOURCE_DIR "/examples/neat/dpv.ini", 4, 1, 100);
    check_task_lanes("dpv", OTC_SOURCE_DIR "/examples/neat/dpv.ini", 3, 2, 100);
    check_task_lanes("dpnv", OTC_SOURCE_DIR "/examples/neat/dpnv.ini", 8, 2, 0.01);
}

/* dpnv's generalisation test by lanes (otc_neat_confirm) against otc_dpnv_champion_test run
 * on the same genome's flat program one start at a time. */
TEST(pole_lanes_dpnv_generalisation_matches_scalar) {
    otc_neat_config c;
    REQUIRE(otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/dpnv.ini", &c) == OTC_OK);
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("dpnv", &c, &task) == OTC_OK);
    otc_neat_population *p = NULL;
    REQUIRE(otc_neat_population_new(&c, 1, &p) == OTC_OK); /* solves in a few generations */
    otc_neat_step_options o = {.threads = 1};
    for (int g = 0; g < 40 && !otc_neat_solved(p); g++) {
        bool solved = false;
        REQUIRE(otc_neat_step(p, task, &o, &solved) == OTC_OK);
    }
    REQUIRE(otc_neat_solved(p));
    const otc_neat_genome *champ = otc_neat_champion(p);
    flat_agent fa = {otc_neat_flat_new()};
    REQUIRE(fa.f && otc_neat_flat_build(fa.f, champ, &c) == OTC_OK);
    otc_pole_agent a = {flat_policy, flat_reset, &fa};
    int long_steps = 0, general = 0, success = 0;
    REQUIRE(otc_dpnv_champion_test(&a, &long_steps, &general, &success) == OTC_OK);
    CHECK(long_steps == OTC_DPOLE_SUCCESS_STEPS && success);
    for (int threads = 1; threads <= 3; threads++) {
        bool solved = false;
        double score = -1;
        REQUIRE(otc_neat_confirm(task, &c, champ, threads, &solved, &score) == OTC_OK);
        CHECK_MSG(score == general, "%d threads: %g by lanes, %d alone", threads, score, general);
        CHECK(solved);
    }
    otc_neat_flat_free(fa.f);
    otc_neat_population_free(p);
    otc_neat_task_free(task);
}
