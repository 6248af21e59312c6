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

typedef struct {
    otc_neat_runner *r;
    otc_status status;
} pole_ctx;

static void pole_policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    pole_ctx *pc = ctx;
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

static otc_status pole_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    pole_kind kind = (pole_kind)(intptr_t)task->ctx;
    otc_neat_runner r;
    otc_status s = otc_neat_runner_open(task, c, g, &r);
    if (s != OTC_OK) return s;
    pole_ctx pc = {&r, OTC_OK};
    otc_pole_agent agent = {pole_policy, pole_reset, &pc};
    otc_pole_result res = {0, 0, 0};
    if (kind == POLE1_NP) {
        s = otc_np_pole_run(seed, &agent, &res);
    } else if (kind == POLE1) {
        otc_pole1_config pcfg;
        otc_pole1_default_config(&pcfg);
        pcfg.n_outputs = c->num_outputs;
        s = otc_pole1_run(&pcfg, &agent, &res);
    } else if (kind == DPV) {
        s = otc_dpole_run(1, OTC_DPOLE_SUCCESS_STEPS, &agent, &res);
    } else {
        s = otc_dpole_run(0, OTC_DPNV_TRIAL_STEPS, &agent, &res);
    }
    otc_neat_runner_close(&r);
    if (s == OTC_OK) s = pc.status;
    if (s != OTC_OK) return s;
    out->fitness = res.fitness;
    /* dpnv's success is the champion test (confirm), not a single trial; neat-python's pole
     * is solved as neat-python stops, at the fitness threshold. */
    if (kind == POLE1_NP)
        out->solved = !c->no_fitness_termination && out->fitness >= c->fitness_threshold;
    else
        out->solved = kind != DPNV && res.success;
    return OTC_OK;
}

/* dpnv's generalisation starts, split among threads in chunks taken from a shared counter;
 * the count is a sum, so it does not depend on which thread ran which chunk. */
#define GEN_CHUNK  25
#define GEN_CHUNKS (OTC_DPOLE_GENERALISATION_STARTS / GEN_CHUNK)
/* Steps of the 100,000-step trial after which the other threads start on the generalisation
 * speculatively: most candidates fail well before, and a wake-up per confirm would cost them
 * more than it gains. */
#define GEN_SPECULATE_AFTER 5000

typedef struct {
    const otc_neat_task *task;
    const otc_neat_config *c;
    const otc_neat_genome *g;
    atomic_int next;
    atomic_bool cancel; /* the trial failed: the count is not wanted */
    int passed[GEN_CHUNKS];
    otc_status status[GEN_CHUNKS];
} gen_job;

static void gen_chunks(gen_job *j, otc_neat_runner *r) {
    pole_ctx pc = {r, OTC_OK};
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
    gen_job *j = calloc(1, sizeof *j);
    if (!j) return otc_fail(OTC_ERR_NOMEM, "out of memory for the generalisation test");
    *j = (gen_job){.task = task, .c = c, .g = g};
    atomic_init(&j->next, 0);
    atomic_init(&j->cancel, false);
    otc_neat_runner r;
    otc_status s = otc_neat_runner_open(task, c, g, &r);
    if (s != OTC_OK) {
        free(j);
        return s;
    }
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
    free(j);
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

otc_status otc_neat_task_create(const char *spec, const otc_neat_config *c, otc_neat_task **out) {
    if (!spec || !c || !out) return otc_fail(OTC_ERR_ARG, "otc_neat_task_create: NULL argument");
    if (!strncmp(spec, "csv:", 4)) return otc_neat_csv_task_create(spec + 4, c, out);
    if (!strncmp(spec, "exec:", 5)) return otc_neat_exec_task_create(spec + 5, c, out);
    otc_status s;
    otc_neat_task *t = calloc(1, sizeof *t);
    if (!t) return otc_fail(OTC_ERR_NOMEM, "out of memory for a task");
    snprintf(t->name, sizeof t->name, "%s", spec);
    if (!strcmp(spec, "xor") || !strcmp(spec, "xor:neat-python")) {
        s = check_io(c, spec, 2, 1, 1);
        t->evaluate = xor_evaluate;
        t->ctx = (void *)(intptr_t)(spec[3] == ':'); /* neat-python's fitness */
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
    } else if (!strcmp(spec, "pole1:neat-python")) {
        s = check_io(c, spec, OTC_NP_POLE_N_OBS, 1, 1);
        t->evaluate = pole_evaluate;
        t->ctx = (void *)(intptr_t)POLE1_NP;
        t->action_time = OTC_NP_POLE_TIME_STEP;
    } else if (!strcmp(spec, "dpv")) {
        s = check_io(c, spec, OTC_DPV_N_OBS, 1, 1);
        t->evaluate = pole_evaluate;
        t->ctx = (void *)(intptr_t)DPV;
    } else if (!strcmp(spec, "dpnv")) {
        s = check_io(c, spec, OTC_DPNV_N_OBS, 1, 1);
        t->evaluate = pole_evaluate;
        t->confirm = dpnv_confirm;
        t->confirm_rotates_species = true;
        t->score_name = "generalisation";
        t->ctx = (void *)(intptr_t)DPNV;
    } else {
        /* An environment otc does not simulate (neat-python's lunar-lander example runs
         * Gymnasium's LunarLander) can drive evolution as an external program. */
        s = otc_fail(OTC_ERR_ARG,
                     "unknown task '%s' (expected xor, xor:neat-python, pole1, pole1:neat-python, "
                     "dpv, dpnv, csv:FILE or exec:PROGRAM; an environment otc does not have, "
                     "such as Gymnasium's LunarLander, runs as exec:PROGRAM: see examples/exec/)",
                     spec);
    }
    if (s != OTC_OK) {
        free(t);
        return s;
    }
    t->n_inputs = c->num_inputs;
    t->n_outputs = c->num_outputs;
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
