/* Built-in NEAT tasks: XOR (the paper's fitness and success test) and the pole-balancing
 * benchmarks through pole.h's policy callbacks, plus the runner every task uses to make a
 * genome runnable (the flat program, or a phenotype graph under the task's executor). */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"
#include "otc/pole.h"
#include "otc/pole_lanes.h"

otc_status otc_neat_runner_open(const otc_neat_task *task, const otc_neat_config *c,
                                const otc_neat_genome *g, otc_neat_runner *r) {
    *r = (otc_neat_runner){.task = task, .c = c, .g = g, .fixed = !task->make_compiled};
    if (!task->make_executor) {
        r->flat = otc_neat_eval_scratch();
        if (!r->flat && !(r->flat = r->own = otc_neat_flat_new())) return OTC_ERR_NOMEM;
        otc_status s = otc_neat_flat_build(r->flat, g, c);
        if (s != OTC_OK) otc_neat_runner_close(r);
        return s;
    }
    otc_status s = otc_neat_phenotype_build(g, c, &r->ph);
    if (s != OTC_OK) return s;
    otc_exec_options o = {.inference = true};
    r->ex = task->make_executor(r->ph->graph, &o);
    if (!r->ex) {
        otc_neat_phenotype_free(r->ph);
        r->ph = NULL;
        return otc_fail_context(OTC_ERR_STATE, "phenotype executor");
    }
    return OTC_OK;
}

void otc_neat_runner_close(otc_neat_runner *r) {
    otc_neat_flat_free(r->own);
    otc_exec_free(r->ex);
    otc_neat_phenotype_free(r->ph);
    memset(r, 0, sizeof *r);
}

otc_status otc_neat_runner_forward(otc_neat_runner *r, const float *x, int batch, float *y) {
    if (r->cancel && atomic_load_explicit(r->cancel, memory_order_relaxed)) return OTC_ERR_STATE;
    if (r->flat && !r->fixed && (r->rows += batch) > r->task->compile_after)
        otc_neat_runner_switch(r);
    if (r->flat) return otc_neat_flat_forward(r->flat, x, batch, y);
    otc_status s = otc_exec_set_input(r->ex, r->ph->input, x, batch);
    if (s == OTC_OK) s = otc_exec_forward(r->ex);
    for (int k = 0; k < r->ph->n_outputs && s == OTC_OK; k++) {
        const float *v;
        s = otc_exec_value(r->ex, otc_graph_output(r->ph->graph, k), &v, NULL);
        if (s == OTC_OK)
            for (int b = 0; b < batch; b++) y[b * r->ph->n_outputs + k] = v[b];
    }
    return s;
}

void otc_neat_runner_reset(otc_neat_runner *r) {
    if (r->flat)
        otc_neat_flat_reset(r->flat);
    else
        otc_exec_reset_state(r->ex);
}

/* ---- xor --------------------------------------------------------------------------------- */

static otc_status xor_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                               otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    (void)seed;
    static const float x[8] = {0, 0, 0, 1, 1, 0, 1, 1}, target[4] = {0, 1, 1, 0};
    otc_neat_runner r;
    otc_status s = otc_neat_runner_open(task, c, g, &r);
    if (s != OTC_OK) return s;
    float y[4];
    s = otc_neat_runner_forward(&r, x, 4, y);
    otc_neat_runner_close(&r);
    if (s != OTC_OK) return s;
    /* The paper: fitness (4 - sum |error|)^2, solved when every output is on the right side
     * of 0.5. neat-python's example (task "xor:neat-python"): 4 - sum error^2, solved when
     * the fitness reaches fitness_threshold, so a neat-python config's threshold means what
     * it means there. */
    double err = 0, sq = 0;
    bool right = true;
    for (int i = 0; i < 4; i++) {
        double yi = isfinite(y[i]) ? y[i] : 0.5;
        err += fabs(yi - target[i]);
        sq += (yi - target[i]) * (yi - target[i]);
        right &= (yi > 0.5) == (target[i] > 0.5);
    }
    out->n_bc = 4; /* the behaviour: what it answers to each case */
    for (int i = 0; i < 4; i++) out->bc[i] = isfinite(y[i]) ? y[i] : 0.5f;
    if (task->ctx) {
        out->fitness = 4 - sq;
        out->solved = !c->no_fitness_termination && out->fitness >= c->fitness_threshold;
    } else {
        out->fitness = (4 - err) * (4 - err);
        out->solved = right;
    }
    return OTC_OK;
}

/* ---- pole balancing ------------------------------------------------------------------------ */

/* The observations a pole behaviour keeps: the last one and the mean, POLE_BC_OBS each. */
#define POLE_BC_OBS (OTC_NEAT_SHORT_BC / 2)

typedef struct {
    otc_neat_runner *r;
    otc_status status;
    /* The behaviour (novelty search): the last observation and the sum of all of them. */
    int n_obs;
    long seen;
    double last[POLE_BC_OBS], sum[POLE_BC_OBS];
} pole_ctx;

static void pole_policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    pole_ctx *pc = ctx;
    pc->n_obs = n_obs < POLE_BC_OBS ? n_obs : POLE_BC_OBS;
    for (int i = 0; i < pc->n_obs; i++) pc->sum[i] += pc->last[i] = obs[i];
    pc->seen++;
    float x[16], y[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    for (int i = 0; i < n_obs && i < 16; i++) x[i] = (float)obs[i];
    if (pc->status == OTC_OK) pc->status = otc_neat_runner_forward(pc->r, x, 1, y);
    for (int k = 0; k < n_out; k++) out[k] = k < 4 && isfinite(y[k]) ? y[k] : 0.5;
}

static void pole_reset(void *ctx) {
    pole_ctx *pc = ctx;
    otc_neat_runner_reset(pc->r);
}

typedef enum { POLE1, DPV, DPNV, POLE1_NP } pole_kind;

/* pole1's trial for the config's outputs (one, or pole1.cpp's two). */
static otc_pole1_config pole1_config(const otc_neat_config *c) {
    otc_pole1_config pcfg;
    otc_pole1_default_config(&pcfg);
    pcfg.n_outputs = c->num_outputs;
    return pcfg;
}

/* A double-pole trial's length: dpv's is its success test, dpnv's the Gruau fitness trial. */
static int dpole_trial_steps(pole_kind kind) {
    return kind == DPV ? OTC_DPOLE_SUCCESS_STEPS : OTC_DPNV_TRIAL_STEPS;
}

/* A trial's fitness and success as evolution sees them: dpnv's success is the champion test
 * (confirm), not a single trial; neat-python's pole is solved as neat-python stops, at the
 * fitness threshold. */
static otc_neat_eval pole_outcome(pole_kind kind, const otc_neat_config *c,
                                  const otc_pole_result *res) {
    otc_neat_eval ev = {.fitness = res->fitness};
    if (kind == POLE1_NP)
        ev.solved = !c->no_fitness_termination && ev.fitness >= c->fitness_threshold;
    else
        ev.solved = kind != DPNV && res->success;
    return ev;
}

static otc_status pole_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    pole_kind kind = (pole_kind)(intptr_t)task->ctx;
    otc_neat_runner r;
    otc_status s = otc_neat_runner_open(task, c, g, &r);
    if (s != OTC_OK) return s;
    pole_ctx pc = {.r = &r, .status = OTC_OK};
    otc_pole_agent agent = {pole_policy, pole_reset, &pc};
    otc_pole_result res = {0, 0, 0};
    if (kind == POLE1_NP) {
        s = otc_np_pole_run(seed, &agent, &res);
    } else if (kind == POLE1) {
        otc_pole1_config pcfg = pole1_config(c);
        s = otc_pole1_run(&pcfg, &agent, &res);
    } else {
        s = otc_dpole_run(kind == DPV, dpole_trial_steps(kind), &agent, &res);
    }
    otc_neat_runner_close(&r);
    if (s == OTC_OK) s = pc.status;
    if (s != OTC_OK) return s;
    *out = pole_outcome(kind, c, &res);
    /* The behaviour: where the cart and poles ended and where they were on average. */
    out->n_bc = 2 * pc.n_obs;
    for (int i = 0; i < pc.n_obs; i++) {
        out->bc[i] = (float)pc.last[i];
        out->bc[pc.n_obs + i] = (float)(pc.seen ? pc.sum[i] / (double)pc.seen : 0);
    }
    return OTC_OK;
}

/* ---- pole balancing by lanes --------------------------------------------------------------
 * Several trials stepped side by side (otc/pole_lanes.h), each lane with its own flat program
 * and the same policy glue as one trial at a time, so every trial's result is the same. */

/* Trials a thread steps at once: the double pole's RK4 is a chain of dependent accelerations,
 * and this many independent chains keep the core busy (bench/neat_pole_lanes measures it). */
#define POLE_LANES 8

typedef struct {
    otc_neat_runner r; /* on the lane's flat program; switches to compiled code (--jit) when
                          the genome runs past compile_after rows in its trial */
    pole_ctx pc;
    const otc_neat_genome *built; /* the genome the program holds in this run, or NULL */
    int item;                     /* the lane's genome (evaluation) or start (generalisation) */
} pole_lane;

typedef struct gen_job gen_job;

typedef struct {
    const otc_neat_task *task;
    const otc_neat_config *c;
    pole_kind kind;
    pole_lane lane[OTC_POLE_LANES_MAX];
    otc_pole_agent agents[OTC_POLE_LANES_MAX];
    otc_neat_flat *flats[OTC_POLE_LANES_MAX]; /* the lanes' programs */
    otc_neat_feed *feed;                      /* evaluation: the worker's genomes */
    gen_job *gen;                             /* generalisation: the chunks of starts */
    int start, end; /* generalisation: the current chunk's starts not yet taken */
} pole_lanes_run;

/* Lanes only where the genome runs on the flat program (no executor) and where the driver
 * exists (not neat-python's single pole). A lane's runner may switch to compiled code within
 * its trial, as a runner alone does (`switching`); the generalisation's lanes, which open a
 * runner per 1,000-step start where a runner alone counts every start's rows, do not. */
static bool pole_lanes_fit(const otc_neat_task *task, bool switching) {
    pole_kind kind = (pole_kind)(intptr_t)task->ctx;
    return !task->make_executor && (switching || !task->make_compiled) && kind != POLE1_NP &&
           task->lanes >= 1 && task->lanes <= OTC_POLE_LANES_MAX;
}

static void pole_lanes_setup(pole_lanes_run *run, const otc_neat_task *task,
                             const otc_neat_config *c) {
    run->task = task;
    run->c = c;
    run->kind = (pole_kind)(intptr_t)task->ctx;
    for (int l = 0; l < OTC_POLE_LANES_MAX; l++) {
        run->lane[l] = (pole_lane){.built = NULL};
        run->agents[l] = (otc_pole_agent){pole_policy, pole_reset, &run->lane[l].pc};
    }
}

/* Lane l runs g on program f, as otc_neat_runner_open would open it (rebuilt only for another
 * genome: the driver resets the program before every trial, as a trial does). */
static otc_status pole_lane_open(pole_lanes_run *run, int l, const otc_neat_genome *g,
                                 otc_neat_flat *f) {
    pole_lane *ln = &run->lane[l];
    otc_neat_runner_close(&ln->r); /* the last genome's compiled code, if it switched */
    ln->r = (otc_neat_runner){
        .task = run->task, .c = run->c, .g = g, .fixed = !run->task->make_compiled, .flat = f};
    ln->pc = (pole_ctx){.r = &ln->r, .status = OTC_OK};
    if (ln->built == g) return OTC_OK;
    ln->built = NULL;
    otc_status s = otc_neat_flat_build(f, g, run->c);
    if (s == OTC_OK) ln->built = g;
    return s;
}

/* Trials from `src` on the task's lanes: pole_evaluate's trial for each. */
static otc_status pole_lanes_trials(pole_lanes_run *run, const otc_pole_lane_source *src) {
    int lanes = run->task->lanes;
    if (run->kind == POLE1) {
        otc_pole1_config pcfg = pole1_config(run->c);
        return otc_pole1_lanes_run(lanes, &pcfg, src);
    }
    return otc_dpole_lanes_run(lanes, run->kind == DPV, dpole_trial_steps(run->kind), src);
}

/* pole_evaluate's start: pole1 at rest in the centre, the double pole's standard start. */
static void pole_start(pole_kind kind, void *start) {
    if (kind == POLE1)
        *(otc_pole1_state *)start = (otc_pole1_state){{0.0, 0.0, 0.0, 0.0}};
    else
        otc_dpole_standard_start(start);
}

static int eval_next(void *ctx, int l, bool wait, void *start) {
    pole_lanes_run *run = ctx;
    for (;;) {
        otc_neat_genome *g;
        uint64_t seed;
        int i = otc_neat_feed_take(run->feed, wait, &g, &seed);
        if (i == -2) return -1;
        if (i < 0) return 0;
        otc_status s = pole_lane_open(run, l, g, run->flats[l]);
        if (s != OTC_OK) {
            otc_neat_feed_done(run->feed, i, s, NULL);
            continue;
        }
        run->lane[l].item = i;
        pole_start(run->kind, start);
        return 1;
    }
}

static void eval_done(void *ctx, int l, const otc_pole_result *res) {
    pole_lanes_run *run = ctx;
    pole_lane *ln = &run->lane[l];
    otc_neat_eval ev = pole_outcome(run->kind, run->c, res);
    otc_neat_feed_done(run->feed, ln->item, ln->pc.status, &ev);
}

static otc_status pole_evaluate_lanes(const otc_neat_task *task, const otc_neat_config *c,
                                      otc_neat_flat **flats, otc_neat_feed *feed) {
    if (!pole_lanes_fit(task, true)) return OTC_ERR_ARG; /* the worker takes them one by one */
    pole_lanes_run run;
    pole_lanes_setup(&run, task, c);
    run.feed = feed;
    for (int l = 0; l < task->lanes; l++) run.flats[l] = flats[l];
    otc_pole_lane_source src = {eval_next, eval_done, &run, run.agents};
    otc_status s = pole_lanes_trials(&run, &src);
    for (int l = 0; l < task->lanes; l++) otc_neat_runner_close(&run.lane[l].r);
    return s;
}

/* dpnv's generalisation starts, split among threads in chunks taken from a shared counter;
 * the count is a sum, so it does not depend on which thread ran which chunk. */
#define GEN_CHUNK  25
#define GEN_CHUNKS (OTC_DPOLE_GENERALISATION_STARTS / GEN_CHUNK)
/* Steps of the 100,000-step trial after which the other threads start on the generalisation
 * speculatively: most candidates fail well before, and a wake-up per confirm would cost them
 * more than it gains. */
#define GEN_SPECULATE_AFTER 5000

struct gen_job {
    const otc_neat_task *task;
    const otc_neat_config *c;
    const otc_neat_genome *g;
    atomic_int next;
    atomic_bool cancel; /* the trial failed: the count is not wanted */
    int passed[GEN_CHUNKS];
    otc_status status[GEN_CHUNKS];
};

/* The next start for a lane: the current chunk's, else the first of the next chunk taken. */
static int gen_next(void *ctx, int l, bool wait, void *start) {
    pole_lanes_run *run = ctx;
    gen_job *j = run->gen;
    /* A cancelled test takes no further start: the lanes end within one start's 1,000 steps. */
    if (atomic_load_explicit(&j->cancel, memory_order_relaxed)) return 0;
    if (run->start == run->end) {
        int k = atomic_fetch_add(&j->next, 1);
        if (k >= GEN_CHUNKS) return 0;
        j->passed[k] = 0;
        j->status[k] = OTC_OK;
        run->start = k * GEN_CHUNK;
        run->end = run->start + GEN_CHUNK;
    }
    otc_status s = pole_lane_open(run, l, j->g, run->flats[l]);
    if (s != OTC_OK) {
        j->status[run->start / GEN_CHUNK] = s;
        run->start++;
        return gen_next(ctx, l, wait, start);
    }
    run->lane[l].item = run->start++;
    otc_dpole_generalisation_start(run->lane[l].item, start);
    return 1;
}

static void gen_done(void *ctx, int l, const otc_pole_result *res) {
    pole_lanes_run *run = ctx;
    pole_lane *ln = &run->lane[l];
    int k = ln->item / GEN_CHUNK;
    /* All 1,000 steps, as otc_dpole_generalisation_range counts them. */
    run->gen->passed[k] += res->success;
    if (ln->pc.status != OTC_OK && run->gen->status[k] == OTC_OK)
        run->gen->status[k] = ln->pc.status;
}

/* gen_chunks on the task's lanes, each with a program of its own (lane 0 on r's); false when
 * the task does not run by lanes or the programs cannot be made (nothing taken then). */
static bool gen_chunks_lanes(gen_job *j, otc_neat_runner *r) {
    if (!pole_lanes_fit(j->task, false) || !r->flat) return false;
    pole_lanes_run run;
    pole_lanes_setup(&run, j->task, j->c);
    run.gen = j;
    run.start = run.end = 0;
    run.flats[0] = r->flat;
    run.lane[0].built = j->g; /* r holds the genome already */
    int made = 1;
    for (; made < j->task->lanes; made++)
        if (!(run.flats[made] = otc_neat_flat_new())) break;
    bool ok = made == j->task->lanes;
    if (ok) {
        otc_pole_lane_source src = {gen_next, gen_done, &run, run.agents};
        ok = otc_dpole_lanes_run(j->task->lanes, 0, OTC_DPOLE_GENERALISATION_STEPS, &src) == OTC_OK;
    }
    for (int l = 1; l < made; l++) otc_neat_flat_free(run.flats[l]);
    return ok;
}

static void gen_chunks(gen_job *j, otc_neat_runner *r) {
    if (gen_chunks_lanes(j, r)) return;
    pole_ctx pc = {.r = r, .status = OTC_OK};
    otc_pole_agent agent = {pole_policy, pole_reset, &pc};
    for (;;) {
        int k = atomic_fetch_add(&j->next, 1);
        if (k >= GEN_CHUNKS) break;
        otc_status s =
            otc_dpole_generalisation_range(0, &agent, k * GEN_CHUNK, GEN_CHUNK, &j->passed[k]);
        j->status[k] = s == OTC_OK ? pc.status : s;
    }
}

/* A helper's share (otc_neat_pool_fn). A helper has no bound scratch: the runner makes its
 * own program. If that fails, the other threads take this one's chunks. */
static void gen_worker(void *arg, int worker) {
    (void)worker;
    gen_job *j = arg;
    otc_neat_runner r;
    if (atomic_load(&j->cancel) || otc_neat_runner_open(j->task, j->c, j->g, &r) != OTC_OK) return;
    r.cancel = &j->cancel;
    gen_chunks(j, &r);
    otc_neat_runner_close(&r);
}

/* Cancelling: no chunk is taken any more and the runners stop at their next step, so the
 * helpers leave within a few hundred steps of physics; the caller waits for them only so
 * that nothing of the job outlives it. */
static void gen_cancel(gen_job *j, otc_neat_evaluator *e, bool started) {
    atomic_store(&j->cancel, true);
    atomic_store(&j->next, GEN_CHUNKS);
    if (started) otc_neat_pool_wait(e);
}

/* The trial's policy: pole_policy, and once the trial has lasted GEN_SPECULATE_AFTER steps,
 * the generalisation starts on the evaluator's helpers while the trial goes on. */
typedef struct {
    pole_ctx pc;
    int steps;
    gen_job *j;
    otc_neat_evaluator *e;
    int threads;
    bool started;
} trial_ctx;

static void trial_policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    trial_ctx *t = ctx;
    if (++t->steps == GEN_SPECULATE_AFTER && t->threads > 1)
        t->started = otc_neat_pool_start(t->e, t->threads, gen_worker, t->j) > 0;
    pole_policy(&t->pc, obs, n_obs, out, n_out);
}

static void trial_reset(void *ctx) {
    trial_ctx *t = ctx;
    pole_reset(&t->pc);
}

/* otc_dpnv_champion_test's test (100,000 steps from the standard start, then the
 * generalisation starts), with the starts shared among the bound evaluator's threads, which
 * begin on them while the calling thread still runs the long trial. */
static otc_status dpnv_confirm(const otc_neat_task *task, const otc_neat_config *c,
                               const otc_neat_genome *g, bool *solved, double *score) {
    /* On the stack: the helpers are waited for (pool_wait, gen_cancel) before it ends. */
    gen_job job = {.task = task, .c = c, .g = g}, *j = &job;
    atomic_init(&j->next, 0);
    atomic_init(&j->cancel, false);
    otc_neat_runner r;
    otc_status s = otc_neat_runner_open(task, c, g, &r);
    if (s != OTC_OK) return s;
    otc_neat_evaluator *e = otc_neat_eval_evaluator();
    int threads = e ? otc_neat_eval_threads() : 1;
    if (threads > GEN_CHUNKS) threads = GEN_CHUNKS;
    trial_ctx t = {.pc = {&r, OTC_OK}, .j = j, .e = e, .threads = threads};
    otc_pole_agent agent = {trial_policy, trial_reset, &t};
    otc_pole_result lr = {0, 0, 0};
    s = otc_dpole_run(0, OTC_DPOLE_SUCCESS_STEPS, &agent, &lr);
    if (s == OTC_OK) s = t.pc.status;
    int general = 0;
    if (s == OTC_OK && lr.success) {
        gen_chunks(j, &r); /* the calling thread joins the helpers */
        if (t.started) otc_neat_pool_wait(e);
        for (int k = 0; k < GEN_CHUNKS && s == OTC_OK; k++) {
            s = j->status[k];
            general += j->passed[k];
        }
    } else {
        gen_cancel(j, e, t.started);
    }
    otc_neat_runner_close(&r);
    if (s != OTC_OK) return s;
    *solved = lr.success && general >= OTC_DPOLE_GENERALISATION_PASS;
    *score = general;
    return OTC_OK;
}

otc_status otc_neat_confirm(const otc_neat_task *task, const otc_neat_config *c,
                            const otc_neat_genome *g, int threads, bool *solved, double *score) {
    if (!task || !c || !g || !solved || !score)
        return otc_fail(OTC_ERR_ARG, "otc_neat_confirm: NULL argument");
    if (!task->confirm) return otc_fail(OTC_ERR_ARG, "task %s has no confirm test", task->name);
    int outer = otc_neat_eval_threads();
    otc_neat_evaluator *outer_e = otc_neat_eval_evaluator(), *own = NULL;
    /* Called on its own (not from a population's step, which binds its evaluator): threads
     * for this test alone. */
    if (threads > 1 && !outer_e && !(own = otc_neat_evaluator_new()))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for the confirm test's threads");
    if (own) otc_neat_bind_eval_evaluator(own);
    otc_neat_bind_eval_threads(threads > 0 ? threads : 1);
    otc_status s = task->confirm(task, c, g, solved, score);
    otc_neat_bind_eval_threads(outer);
    otc_neat_bind_eval_evaluator(outer_e);
    otc_neat_evaluator_free(own);
    return s;
}

/* ---- the factory ---------------------------------------------------------------------------- */

static otc_status check_io(const otc_neat_config *c, const char *task, int n_in, int out_lo,
                           int out_hi) {
    if (c->num_inputs != n_in)
        return otc_fail(OTC_ERR_CONFIG,
                        "[DefaultGenome] num_inputs: task %s has %d inputs, the config says %d",
                        task, n_in, c->num_inputs);
    if (c->num_outputs < out_lo || c->num_outputs > out_hi) {
        if (out_lo == out_hi)
            return otc_fail(OTC_ERR_CONFIG,
                            "[DefaultGenome] num_outputs: task %s has %d output(s), the config "
                            "says %d",
                            task, out_lo, c->num_outputs);
        return otc_fail(OTC_ERR_CONFIG,
                        "[DefaultGenome] num_outputs: task %s takes %d to %d outputs, the config "
                        "says %d",
                        task, out_lo, out_hi, c->num_outputs);
    }
    return OTC_OK;
}

static otc_status builtin_task_create(const char *spec, const otc_neat_config *c,
                                      otc_neat_task **out);

static const char *const builtin_tasks[] = {
    "xor", "xor:neat-python", "pole1", "pole1:neat-python", "dpv", "dpnv"};

int otc_neat_task_names(const char *const **names) {
    if (names) *names = builtin_tasks;
    return (int)(sizeof builtin_tasks / sizeof builtin_tasks[0]);
}

otc_status otc_neat_task_create(const char *spec, const otc_neat_config *c, otc_neat_task **out) {
    if (!spec || !c || !out) return otc_fail(OTC_ERR_ARG, "otc_neat_task_create: NULL argument");
    otc_status s = !strncmp(spec, "csv:", 4)    ? otc_neat_csv_task_create(spec + 4, c, out)
                   : !strncmp(spec, "exec:", 5) ? otc_neat_exec_task_create(spec + 5, c, out)
                   : !strncmp(spec, "maze:", 5) ? otc_neat_maze_task_create(spec + 5, c, out)
                   : !strncmp(spec, "visual", 6) && (!spec[6] || spec[6] == ':')
                       ? otc_neat_visual_task_create(spec, c, out)
                   : !strncmp(spec, "retina", 6) && (!spec[6] || spec[6] == ':')
                       ? otc_neat_retina_task_create(spec, c, out)
                       : builtin_task_create(spec, c, out);
    if (s == OTC_OK && c->selection == OTC_NEAT_SELECT_NOVELTY && (*out)->n_bc == 0) {
        s = otc_fail(OTC_ERR_CONFIG,
                     "[NEAT] selection: novelty needs a behaviour characterisation, and task %s "
                     "gives none (xor, maze:*, exec: with bc lines do)",
                     (*out)->name);
        otc_neat_task_free(*out);
        *out = NULL;
    } else if (s == OTC_OK && (*out)->n_bc == 0 && otc_neat_wants_diversity(c)) {
        s = otc_fail(OTC_ERR_CONFIG,
                     "[NEAT] objectives: diversity needs a behaviour characterisation, and task "
                     "%s gives none (xor, maze:*, retina*, exec: with bc lines do)",
                     (*out)->name);
        otc_neat_task_free(*out);
        *out = NULL;
    } else if (s == OTC_OK && c->selection == OTC_NEAT_SELECT_NOVELTY &&
               !((*out)->novelty_threshold > 0) && !(c->novelty_threshold > 0)) {
        s = otc_fail(OTC_ERR_CONFIG,
                     "[NEAT] novelty_threshold: task %s has no scale for its behaviours: give "
                     "the archive's initial threshold",
                     (*out)->name);
        otc_neat_task_free(*out);
        *out = NULL;
    }
    return s;
}

static otc_status builtin_task_create(const char *spec, const otc_neat_config *c,
                                      otc_neat_task **out) {
    otc_status s;
    otc_neat_task *t = calloc(1, sizeof *t);
    if (!t) return otc_fail(OTC_ERR_NOMEM, "out of memory for a task");
    snprintf(t->name, sizeof t->name, "%s", spec);
    if (!strcmp(spec, "xor") || !strcmp(spec, "xor:neat-python")) {
        s = check_io(c, spec, 2, 1, 1);
        /* A threshold a neat-python XOR config sets (3.9) is on its fitness's scale: under
         * the paper's fitness every first generation would pass it, stopping unsolved. */
        if (s == OTC_OK && spec[3] == '\0' && !c->no_fitness_termination &&
            c->fitness_threshold <= 4)
            s = otc_fail(OTC_ERR_CONFIG,
                         "[NEAT] fitness_threshold: %g is on neat-python's XOR scale (4 - sum "
                         "err^2, at most 4), but task xor scores (4 - sum |err|)^2, up to 16: "
                         "use --task xor:neat-python, or a threshold on xor's scale (16 with "
                         "no_fitness_termination = true stops when every case is right)",
                         c->fitness_threshold);
        t->evaluate = xor_evaluate;
        t->ctx = (void *)(intptr_t)(spec[3] == ':'); /* neat-python's fitness */
        t->n_bc = 4;
        t->novelty_threshold = 0.1;
    } else if (!strcmp(spec, "pole1")) {
        s = check_io(c, spec, OTC_POLE1_N_OBS, 1, 2);
        if (s == OTC_ERR_CONFIG && c->num_inputs == OTC_NP_POLE_N_OBS) {
            char why[256]; /* otc_fail writes where otc_last_error reads */
            snprintf(why, sizeof why, "%s", otc_last_error());
            s = otc_fail(OTC_ERR_CONFIG,
                         "%s (neat-python's single-pole example has %d: --task "
                         "pole1:neat-python)",
                         why, OTC_NP_POLE_N_OBS);
        }
        t->evaluate = pole_evaluate;
        t->ctx = (void *)(intptr_t)POLE1;
        t->lanes = POLE_LANES;
        t->evaluate_lanes = pole_evaluate_lanes;
    } else if (!strcmp(spec, "pole1:neat-python")) {
        s = check_io(c, spec, OTC_NP_POLE_N_OBS, 1, 1);
        t->evaluate = pole_evaluate;
        t->ctx = (void *)(intptr_t)POLE1_NP;
        t->action_time = OTC_NP_POLE_TIME_STEP;
    } else if (!strcmp(spec, "dpv")) {
        s = check_io(c, spec, OTC_DPV_N_OBS, 1, 1);
        t->evaluate = pole_evaluate;
        t->ctx = (void *)(intptr_t)DPV;
        t->lanes = POLE_LANES;
        t->evaluate_lanes = pole_evaluate_lanes;
    } else if (!strcmp(spec, "dpnv")) {
        s = check_io(c, spec, OTC_DPNV_N_OBS, 1, 1);
        t->evaluate = pole_evaluate;
        t->confirm = dpnv_confirm;
        t->confirm_rotates_species = true;
        t->score_name = "generalisation";
        t->ctx = (void *)(intptr_t)DPNV;
        t->lanes = POLE_LANES;
        t->evaluate_lanes = pole_evaluate_lanes;
    } else {
        /* An environment otc does not simulate (neat-python's lunar-lander example runs
         * Gymnasium's LunarLander) can drive evolution as an external program. */
        s = otc_fail(OTC_ERR_ARG,
                     "unknown task '%s' (expected xor, xor:neat-python, pole1, pole1:neat-python, "
                     "dpv, dpnv, maze:medium, maze:hard, visual, visual:N, retina, retina:or, "
                     "retina:sides, csv:FILE or "
                     "exec:PROGRAM; an environment otc does not have, "
                     "such as Gymnasium's LunarLander, runs as exec:PROGRAM: see examples/exec/)",
                     spec);
    }
    if (s != OTC_OK) {
        free(t);
        return s;
    }
    t->n_inputs = c->num_inputs;
    t->n_outputs = c->num_outputs;
    if (t->evaluate == pole_evaluate) {
        t->n_bc = 2 * (c->num_inputs < POLE_BC_OBS ? c->num_inputs : POLE_BC_OBS);
        t->novelty_threshold = 0.1;
        /* Lanes report results only: novelty's behaviours come from one trial at a time,
         * whose results are the lanes' by their contract. */
        if (c->selection == OTC_NEAT_SELECT_NOVELTY) t->lanes = 0, t->evaluate_lanes = NULL;
    }
    *out = t;
    return OTC_OK;
}

otc_status otc_neat_ctrnn_times(otc_neat_config *c, const otc_neat_task *task) {
    if (!c || !task) return otc_fail(OTC_ERR_ARG, "otc_neat_ctrnn_times: NULL argument");
    if (!c->ctrnn || c->ctrnn_time_step > 0) return OTC_OK;
    if (!(task->action_time > 0))
        return otc_fail(OTC_ERR_CONFIG,
                        "[DefaultGenome] ctrnn_advance_time, ctrnn_time_step: task %s has no "
                        "time per action, so a CTRNN needs both (or --advance-time and "
                        "--time-step)",
                        task->name);
    c->ctrnn_advance_time = c->ctrnn_time_step = task->action_time;
    return OTC_OK;
}

void otc_neat_task_free(otc_neat_task *t) {
    if (!t) return;
    if (t->destroy) t->destroy(t);
    free(t);
}
