/* Backpropagation through time in the JIT over a tape: the step graph's training plan
 * (otc_unroll over one step, plus a term per Delay that brings in the gradient carried from the
 * step after) is compiled once per loss, and a window of any length runs as loops over it:
 * step t's forward into tape slot t (a whole activation buffer), then from the last step down
 * the backward reading slot t, the state's gradient carried from step t + 1 into it, the
 * weights' gradients summed over the steps. A forward while recording stages its inputs (the
 * first one also the state it starts from) and is deferred: the tape computes the same values,
 * so the step plan runs the deferred steps only when something reads their values or state
 * first (a loss read every step, as `otc train` does, runs each step as before); else the tape
 * hands over the state after the window. seq_backward only stages the window: the tape runs
 * when its gradients are read or an optimizer_step comes, whose update over the summed
 * gradients is the step executor's compiled update (the rule's trees for any parameter its plan
 * does not train), with the moments and step count kept here per step-graph parameter, so the
 * updates are the interpreter's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llvm_exec.h"
#include "otc/expr.h"
#include "otc/limits.h"
#include "otc/unroll.h"

/* Step executors kept per executor (the losses in use). */
#define SEQ_CACHE 4

typedef struct {
    otc_id loss;
    otc_unrolled *u; /* the step graph: one step, its carry terms added to u->total */
    otc_id *carry;   /* [n_delays] Inputs "<delay>.carry": the gradient of what the Delay holds
                        after this step, from the step after (zeros in the forward) */
    otc_id *out_at;  /* [n_delays] the stored value (in the slots) of what the Delay holds
                        after the step */
    otc_id *direct;  /* [2 n_delays] the state inputs, then the carries: the step plan's
                        direct inputs, written into each slot by the tape itself */
    int *io_src;     /* per io entry of the step plan: the step input it is; -1: an output */
    otc_executor *ex;
    long used;
} seq_entry;

struct jit_seq {
    bool recording, cut;
    int max_steps, recorded, batch;
    int64_t in_floats; /* per sample, all inputs */
    int64_t *in_off;   /* per input: floats before it in a sample's staged row */
    float *staged;     /* [step][input block of batch rows] */
    size_t staged_cap;
    int n_delays;
    otc_id *delays;
    int64_t *d_off; /* per delay: floats before it in a sample's state */
    int64_t state_floats;
    float *init; /* the window's starting state, per delay batch rows */
    size_t init_cap;
    int64_t *g_off; /* per node: its gradient's offset in acc, -1 for non-parameters */
    float *acc;
    int64_t acc_floats;
    bool has_grads;
    bool dirty;    /* acc holds gradients (not zeroed since) */
    bool pending;  /* a window staged in `pend`, its gradient not yet computed */
    bool pend_add; /* its parameter gradients go into acc (a zero_grad since drops them) */
    seq_entry *pend;
    float *mom; /* the optimiser's moments: m at g_off, v at acc_floats + g_off */
    const otc_optimizer *mopt;
    long t;       /* its steps so far */
    int n_params; /* the graph's Parameters, id order */
    otc_id *params;
    const float **src;
    otc_id *ids;
    float *wbuf;
    float *w_val; /* [max_steps]: the staged window's loss weights */
    int w_cap;
    int pend_steps;          /* the staged window's length */
    const seq_entry *synced; /* the step executor holding this executor's weights of version */
    long synced_wver;        /* synced_wver */
    float *ust;              /* the moments in a step plan's layout, for its compiled update */
    size_t ust_cap;
    const seq_entry *ust_of; /* the step executor whose trained parameters' moments live in ust
                                (not in mom) while its updates come one after another */
    const seq_entry *acc_of; /* acc is exactly this step executor's parameter gradients (one
                                window since zero_grad): its update need not copy them back */
    bool *done;              /* per parameter: updated by the compiled update */
    /* The tape: slot t holds step t's activation buffer (the step plan's work, swapped in
     * while step t runs, so each slot grows to the plan's size on its own). */
    float **tape;
    size_t *tape_cap;
    int tape_n;
    float *rows[2]; /* a step's input and target rows (the carries' places zero) */
    size_t rows_cap[2];
    float *sbuf;  /* the state after the window, per delay batch rows */
    float *spre;  /* the state the window's last step read */
    float *zeros; /* a Delay's batch rows of zeros (the carry inputs in the forward) */
    float *ginit; /* the gradient reaching the window's starting state, per delay batch rows */
    size_t sbuf_cap, spre_cap, zeros_cap, ginit_cap;
    bool state_grad_ok; /* ginit is (or, with a window pending, will be) the last window's */
    seq_entry cache[SEQ_CACHE];
    long tick;
    otc_jit_stats retired; /* the compiles of step executors dropped from the cache */
    /* Forwards while recording do not run: the tape computes the same values again. The last
     * `deferred` recorded steps have not run on `defer_plan` (whose slots hold the state
     * before them); a read of their values or state runs them (catch_up), else the tape
     * hands its last state over (settle) and `tail`, the step executor, answers for the last
     * step's values until the next forward or input. */
    int deferred;
    jit_plan *defer_plan;
    seq_entry *tail;
    float **saved_data; /* per input: the caller's data while a catch-up replays steps */
    int *saved_batch;
    const float **state_src; /* per delay: the tape's state after the window */
};

static jit_exec *as_jit(otc_executor *ex) {
    return (jit_exec *)ex;
}

/* Frees what a cache entry owns and empties it. */
static void entry_clear(seq_entry *e) {
    otc_exec_free(e->ex);
    otc_unrolled_free(e->u);
    free(e->carry);
    free(e->direct);
    free(e->out_at);
    free(e->io_src);
    memset(e, 0, sizeof *e);
}

void otc_lvx_seq_free(jit_exec *j) {
    struct jit_seq *s = j->seq;
    if (!s) return;
    for (int i = 0; i < SEQ_CACHE; i++) {
        entry_clear(&s->cache[i]);
    }
    for (int t = 0; t < s->tape_n; t++) free(s->tape[t]);
    free(s->tape);
    free(s->tape_cap);
    free(s->sbuf);
    free(s->spre);
    free(s->zeros);
    free(s->ginit);
    free(s->rows[0]);
    free(s->rows[1]);
    free(s->ust);
    free(s->done);
    free(s->in_off);
    free(s->staged);
    free(s->delays);
    free(s->d_off);
    free(s->init);
    free(s->g_off);
    free(s->acc);
    free(s->mom);
    free(s->params);
    free(s->src);
    free(s->ids);
    free(s->wbuf);
    free(s->w_val);
    free(s->saved_data);
    free(s->saved_batch);
    free(s->state_src);
    free(s);
    j->seq = NULL;
}

static otc_status seq_new(jit_exec *j) {
    const otc_graph *g = j->base.graph;
    struct jit_seq *s = calloc(1, sizeof *s);
    if (!s) return otc_fail(OTC_ERR_NOMEM, "out of memory for a sequence");
    j->seq = s;
    int n = j->n;
    s->in_off = calloc((size_t)j->n_inputs + 1, sizeof *s->in_off);
    s->delays = calloc((size_t)n + 1, sizeof *s->delays);
    s->d_off = calloc((size_t)n + 1, sizeof *s->d_off);
    s->g_off = calloc((size_t)n + 1, sizeof *s->g_off);
    s->params = calloc((size_t)n + 1, sizeof *s->params);
    s->saved_data = calloc((size_t)j->n_inputs + 1, sizeof *s->saved_data);
    s->saved_batch = calloc((size_t)j->n_inputs + 1, sizeof *s->saved_batch);
    s->state_src = calloc((size_t)n + 1, sizeof *s->state_src);
    if (!s->in_off || !s->delays || !s->d_off || !s->g_off || !s->params || !s->saved_data ||
        !s->saved_batch || !s->state_src)
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a sequence");
    for (int i = 0; i < j->n_inputs; i++) {
        s->in_off[i] = s->in_floats;
        s->in_floats += (int64_t)otc_shape_size(otc_graph_node(g, j->inputs[i].id)->shape);
    }
    for (otc_id id = 0; id < n; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        s->g_off[id] = -1;
        if (nd->op == OTC_OP_DELAY) {
            s->d_off[s->n_delays] = s->state_floats;
            s->delays[s->n_delays++] = id;
            s->state_floats += (int64_t)otc_shape_size(nd->shape);
        } else if (nd->op == OTC_OP_PARAMETER) {
            s->g_off[id] = s->acc_floats;
            s->acc_floats += (int64_t)nd->value->size;
            s->params[s->n_params++] = id;
        }
    }
    size_t np = (size_t)s->n_params + 1;
    s->acc = calloc((size_t)s->acc_floats + 1, sizeof *s->acc);
    s->mom = calloc(2 * (size_t)s->acc_floats + 1, sizeof *s->mom);
    s->wbuf = calloc((size_t)s->acc_floats + 1, sizeof *s->wbuf);
    s->src = calloc(np, sizeof *s->src);
    s->ids = calloc(np, sizeof *s->ids);
    s->done = calloc(np, sizeof *s->done);
    if (!s->acc || !s->mom || !s->wbuf || !s->src || !s->ids || !s->done)
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a sequence");
    return OTC_OK;
}

/* The sequence state, made on first use (and left unmade when that fails). */
static otc_status seq_ensure(jit_exec *j) {
    if (j->seq) return OTC_OK;
    otc_status st = seq_new(j);
    if (st != OTC_OK) otc_lvx_seq_free(j);
    return st;
}

otc_status otc_lvx_seq_begin(otc_executor *ex, int max_steps) {
    jit_exec *j = as_jit(ex);
    if (j->o.inference)
        return otc_fail(OTC_ERR_STATE, "seq_begin: this executor was built for inference");
    if (max_steps < 1 || max_steps > OTC_MAX_SEQ_STEPS)
        return otc_fail(OTC_ERR_ARG, "seq_begin: max_steps %d outside 1..%d", max_steps,
                        OTC_MAX_SEQ_STEPS);
    otc_status made = seq_ensure(j);
    if (made == OTC_OK) made = otc_lvx_seq_catch_up(j, NULL); /* the staged rows get reused */
    if (made != OTC_OK) return made;
    struct jit_seq *s = j->seq;
    s->tail = NULL;
    if (max_steps > s->w_cap) {
        float *w = realloc(s->w_val, (size_t)max_steps * sizeof *w);
        if (!w) return otc_fail(OTC_ERR_NOMEM, "out of memory for a sequence");
        s->w_val = w;
        s->w_cap = max_steps;
    }
    s->recording = true;
    s->cut = false;
    s->state_grad_ok = false;
    s->max_steps = max_steps;
    s->recorded = 0;
    return OTC_OK;
}

otc_status otc_lvx_seq_record(jit_exec *j, jit_plan *p) {
    struct jit_seq *s = j->seq;
    if (!s->recording) return OTC_OK;
    int64_t B = j->batch, S = j->stride;
    if (s->recorded >= s->max_steps)
        return otc_fail(OTC_ERR_STATE, "forward: more than the %d steps seq_begin allowed",
                        s->max_steps);
    if (s->recorded == 0) {
        size_t need = (size_t)(s->max_steps * s->in_floats * B);
        size_t ineed = (size_t)(s->state_floats * B);
        if (need > s->staged_cap) { /* growing: the staged inputs fit in memory */
            otc_status st =
                otc_memory_check((uint64_t)need * sizeof(float), "the recorded steps' inputs");
            if (st) return st;
            float *q = realloc(s->staged, (need + 1) * sizeof *q);
            if (!q) return otc_fail(OTC_ERR_NOMEM, "out of memory for a sequence");
            s->staged = q;
            s->staged_cap = need;
        }
        if (ineed > s->init_cap) {
            float *q = realloc(s->init, (ineed + 1) * sizeof *q);
            if (!q) return otc_fail(OTC_ERR_NOMEM, "out of memory for a sequence");
            s->init = q;
            s->init_cap = ineed;
        }
        s->batch = (int)B;
        /* The state this step reads: the Delays' slots (prepare has zeroed them after a
         * reset or for a new batch). A Delay no output reads has no slot and stays zero. */
        for (int k = 0; k < s->n_delays; k++) {
            const otc_plan_value *v = &p->plan->values[s->delays[k]];
            float *dst = s->init + s->d_off[k] * B;
            int64_t n = (int64_t)otc_shape_size(otc_graph_node(j->base.graph, s->delays[k])->shape);
            if (p->plan->state_per_sample == 0 || v->storage != OTC_STORE_WORK) {
                memset(dst, 0, (size_t)(n * B) * sizeof(float));
                continue;
            }
            const float *base = p->work + otc_extent_at(v->offset, S);
            for (int64_t e = 0; e < n; e++)
                for (int64_t b = 0; b < B; b++) dst[b * n + e] = base[e * S + b];
        }
    } else if (B != s->batch) {
        return otc_fail(OTC_ERR_SHAPE, "forward: batch %d in a sequence recorded at batch %d",
                        (int)B, s->batch);
    }
    float *row = s->staged + (size_t)(s->recorded * s->in_floats * B);
    for (int i = 0; i < j->n_inputs; i++) {
        int64_t n = (int64_t)otc_shape_size(otc_graph_node(j->base.graph, j->inputs[i].id)->shape);
        float *dst = row + s->in_off[i] * B;
        if (j->inputs[i].batch == B)
            memcpy(dst, j->inputs[i].data, (size_t)(n * B) * sizeof(float));
        else
            memset(dst, 0, (size_t)(n * B) * sizeof(float)); /* not read by this step */
    }
    s->recorded++;
    return OTC_OK;
}

void otc_lvx_seq_cut(jit_exec *j) {
    if (j->seq && j->seq->recording && j->seq->recorded > 0) j->seq->cut = true;
}

bool otc_lvx_seq_defer(jit_exec *j, jit_plan *p) {
    struct jit_seq *s = j->seq;
    if (!s || !s->recording) return false;
    s->deferred++;
    s->defer_plan = p;
    return true;
}

otc_status otc_lvx_seq_catch_up(jit_exec *j, const jit_plan *keep) {
    struct jit_seq *s = j->seq;
    if (!s || s->deferred == 0 || (s->recording && s->defer_plan == keep)) return OTC_OK;
    int n = s->deferred;
    s->deferred = 0;
    s->tail = NULL;
    int64_t B = s->batch;
    for (int i = 0; i < j->n_inputs; i++) {
        s->saved_data[i] = j->inputs[i].data;
        s->saved_batch[i] = j->inputs[i].batch;
        j->inputs[i].batch = (int)B;
    }
    otc_status st = OTC_OK;
    for (int t = s->recorded - n; t < s->recorded && !st; t++) {
        float *row = s->staged + (size_t)((int64_t)t * s->in_floats * B);
        for (int i = 0; i < j->n_inputs; i++) j->inputs[i].data = row + s->in_off[i] * B;
        st = otc_lvx_run_step(j, s->defer_plan);
    }
    for (int i = 0; i < j->n_inputs; i++) {
        j->inputs[i].data = s->saved_data[i];
        j->inputs[i].batch = s->saved_batch[i];
    }
    return st;
}

/* After the tape ran the window: the state it left after the last step into the plan the
 * deferred steps would have run on (those steps then never run), and the step executor
 * answers for the last step's values. */
static void settle(jit_exec *j, seq_entry *e) {
    struct jit_seq *s = j->seq;
    if (s->deferred == 0) return;
    jit_plan *p = s->defer_plan;
    int64_t B = s->batch, S = otc_llvm_stride_of(p->forms, j->lanes, B);
    for (int k = 0; k < s->n_delays; k++) {
        const otc_plan_value *v = &p->plan->values[s->delays[k]];
        if (v->storage != OTC_STORE_WORK) continue;
        float *base = p->work + otc_extent_at(v->offset, S);
        const float *src = s->sbuf + s->d_off[k] * B;
        for (int64_t f = 0; f < v->size; f++)
            for (int64_t b = 0; b < B; b++) base[f * S + b] = src[b * v->size + f];
    }
    p->state_batch = B;
    j->live = p;
    j->last = NULL;
    s->deferred = 0;
    s->tail = e;
}

otc_status otc_lvx_seq_tail_value(jit_exec *j, otc_id id, const float **data, otc_shape *shape,
                                  bool *answered) {
    struct jit_seq *s = j->seq;
    *answered = false;
    if (!s || !s->tail) return OTC_OK;
    const seq_entry *e = s->tail;
    otc_id m = e->u->map[id];
    if (m < 0) return OTC_OK;
    *answered = true;
    return otc_exec_value(e->ex, m, data, shape);
}

void otc_lvx_seq_stale(jit_exec *j) {
    if (j->seq) j->seq->tail = NULL;
}

void otc_lvx_seq_zero(jit_exec *j) {
    struct jit_seq *s = j->seq;
    if (!s) return;
    memset(s->acc, 0, (size_t)s->acc_floats * sizeof(float));
    s->dirty = false;
    s->acc_of = NULL;
    /* A staged window's gradient is dropped with the rest; only the starting state's
     * gradient may still be asked for. */
    s->pend_add = false;
}

/* The step executor's parameter gradients added to acc (frozen or unreached: zero). */
static void add_grads(jit_exec *j, seq_entry *e) {
    struct jit_seq *s = j->seq;
    s->acc_of = s->dirty ? NULL : e;
    for (int i = 0; i < s->n_params; i++) {
        otc_id id = s->params[i];
        const float *gd;
        if (otc_exec_grad(e->ex, e->u->map[id], &gd)) continue;
        float *acc = s->acc + s->g_off[id];
        size_t m = otc_graph_node(j->base.graph, id)->value->size;
        for (size_t k = 0; k < m; k++) acc[k] += gd[k];
    }
    s->dirty = true;
    s->has_grads = true;
}

/* Buffers for a window of T steps at batch B of the step plan pl at stride S: T - 1 slots
 * (the last step runs in the plan's own buffer, where tail_value reads it), the rows. */
static otc_status tape_ready(struct jit_seq *s, const otc_plan *pl, int T, int64_t B, int64_t S) {
    if (T > s->tape_n) {
        float **t = realloc(s->tape, (size_t)T * sizeof *t);
        if (t) s->tape = t;
        size_t *c = t ? realloc(s->tape_cap, (size_t)T * sizeof *c) : NULL;
        if (!c) return otc_fail(OTC_ERR_NOMEM, "out of memory for a tape of %d steps", T);
        s->tape_cap = c;
        for (int i = s->tape_n; i < T; i++) {
            s->tape[i] = NULL;
            s->tape_cap[i] = 0;
        }
        s->tape_n = T;
    }
    size_t slot = (size_t)otc_extent_at(pl->work, S) + 1;
    if (T > 1 && s->tape_cap[T - 2] < slot) { /* growing: the slots fit in memory */
        otc_status st =
            otc_memory_check((uint64_t)(T - 1) * slot * sizeof(float), "the tape's slots");
        if (st) return st;
    }
    size_t state = (size_t)(s->state_floats * B) + 1;
    struct {
        float **buf;
        size_t *cap, need;
    } want[6] = {{&s->sbuf, &s->sbuf_cap, state},
                 {&s->spre, &s->spre_cap, state},
                 {&s->zeros, &s->zeros_cap, state},
                 {&s->ginit, &s->ginit_cap, state},
                 {&s->rows[0], &s->rows_cap[0], (size_t)(pl->in_width * B) + 1},
                 {&s->rows[1], &s->rows_cap[1], (size_t)(pl->target_width * B) + 1}};
    for (int i = 0; i < 6; i++) {
        if (want[i].need <= *want[i].cap) continue;
        free(*want[i].buf);
        *want[i].buf = calloc(want[i].need, sizeof(float)); /* the zeros stay zeros */
        *want[i].cap = *want[i].buf ? want[i].need : 0;
        if (!*want[i].buf) return otc_fail(OTC_ERR_NOMEM, "out of memory for a sequence");
    }
    /* Grown as the plan's own buffer (otc_lvx_grow: cache-line aligned, so the compiled
     * code's vectors never straddle two; a slot from realloc, 16-byte aligned, made the steps'
     * loops ~30% slower at batch 64 with AVX-512). */
    for (int t = 0; t + 1 < T; t++)
        if (s->tape_cap[t] < slot && !otc_lvx_grow(&s->tape[t], &s->tape_cap[t], slot))
            return otc_fail(OTC_ERR_NOMEM, "out of memory for a tape of %d steps", T);
    return OTC_OK;
}

/* Step t's activation buffer. */
static float *slot_of(struct jit_seq *s, seq_entry *e, int t, int T) {
    return t + 1 == T ? as_jit(e->ex)->train.work : s->tape[t];
}

/* What the Delays hold after a step (the step graph's outputs, in its slot `work` at stride
 * S) into dst, per delay batch rows. */
static void state_after(struct jit_seq *s, const seq_entry *e, const otc_plan *pl,
                        const float *work, int64_t S, float *dst) {
    int64_t B = s->batch;
    for (int k = 0; k < s->n_delays; k++) {
        const otc_plan_value *v = &pl->values[e->out_at[k]];
        const float *src = work + otc_extent_at(v->offset, S);
        float *d = dst + s->d_off[k] * B;
        for (int64_t f = 0; f < v->size; f++)
            for (int64_t b = 0; b < B; b++) d[b * v->size + f] = src[f * S + b];
    }
}

/* The step executor's inputs: step t's, from `state` (its values readable: tail_value). */
static otc_status step_inputs(jit_exec *j, seq_entry *e, int t, const float *state) {
    struct jit_seq *s = j->seq;
    const otc_unrolled *u = e->u;
    int B = s->batch;
    const float *row = s->staged + (size_t)((int64_t)t * s->in_floats * B);
    otc_status st = OTC_OK;
    for (int i = 0; i < u->n_inputs && !st; i++)
        st = otc_exec_set_input(e->ex, u->inputs[i], row + s->in_off[i] * B, B);
    for (int k = 0; k < s->n_delays && !st; k++) {
        st = otc_exec_set_input(e->ex, u->state_in[k], state + s->d_off[k] * B, B);
        if (!st) st = otc_exec_set_input(e->ex, e->carry[k], s->zeros, B);
    }
    return st;
}

/* Step t's rows: its inputs from the staged window. */
static void step_rows(struct jit_seq *s, const seq_entry *e, const otc_plan *pl, int t) {
    int64_t B = s->batch;
    const float *row = s->staged + (size_t)((int64_t)t * s->in_floats * B);
    for (int i = 0; i < pl->n_io; i++) {
        const otc_plan_io *io = &pl->io[i];
        int code = e->io_src[i];
        if (code < 0) continue; /* an output */
        bool in = io->stream == OTC_IO_IN;
        int64_t w = in ? pl->in_width : pl->target_width, n = io->width;
        float *dst = s->rows[in ? 0 : 1] + io->offset;
        const float *src = row + s->in_off[code] * B;
        if (w == n)
            memcpy(dst, src, (size_t)(n * B) * sizeof(float));
        else
            for (int64_t b = 0; b < B; b++)
                memcpy(dst + b * w, src + b * n, (size_t)n * sizeof(float));
    }
}

/* The direct inputs in step t's slot `work` at stride S: the state it reads (the window's
 * before step 0, its padding samples zero as a load leaves them; else what step t - 1's slot
 * holds, copied as it lies) and the carries zero (the backward writes them; the forward's
 * loss reads them). */
static void step_state(struct jit_seq *s, const seq_entry *e, const otc_plan *pl, int t, int64_t S,
                       float *work) {
    int64_t B = s->batch;
    for (int k = 0; k < s->n_delays; k++) {
        const otc_plan_value *v = &pl->values[e->u->state_in[k]];
        const otc_plan_value *c = &pl->values[e->carry[k]];
        if (c->storage == OTC_STORE_WORK)
            memset(work + otc_extent_at(c->offset, S), 0, (size_t)(c->size * S) * sizeof(float));
        if (v->storage != OTC_STORE_WORK) continue; /* the step does not read it */
        float *dst = work + otc_extent_at(v->offset, S);
        if (t > 0) { /* padding samples as step t - 1 left them, as in one unrolled graph */
            const otc_plan_value *o = &pl->values[e->out_at[k]];
            memcpy(dst, s->tape[t - 1] + otc_extent_at(o->offset, S),
                   (size_t)(v->size * S) * sizeof(float));
            continue;
        }
        const float *src = s->init + s->d_off[k] * B;
        for (int64_t f = 0; f < v->size; f++)
            for (int64_t b = 0; b < S; b++) dst[f * S + b] = b < B ? src[b * v->size + f] : 0.0f;
    }
}

/* Step t's forward into its slot. The last step's inputs are also set in the step executor
 * (its values readable after the window: tail_value) and the state it leaves kept in sbuf. */
static otc_status tape_forward(jit_exec *j, seq_entry *e, int t, int T, otc_llvm_args *a) {
    struct jit_seq *s = j->seq;
    jit_exec *uj = as_jit(e->ex);
    const otc_plan *pl = uj->train.plan;
    step_rows(s, e, pl, t);
    a->work = slot_of(s, e, t, T);
    step_state(s, e, pl, t, a->stride, a->work);
    otc_status st = OTC_OK;
    if (t + 1 == T) {
        if (T > 1) state_after(s, e, pl, s->tape[T - 2], a->stride, s->spre);
        st = step_inputs(j, e, t, T > 1 ? s->spre : s->init);
    }
    if (!st) st = otc_lvx_forward_at(uj, a);
    if (!st && t + 1 == T) state_after(s, e, pl, a->work, a->stride, s->sbuf);
    return st;
}

/* Step t's backward from its slot: its loss weight, the state's gradient step t + 1 computed
 * (in the step executor's gradients) as its carry, the weights' gradients adding up; after
 * step 0 the gradient reaching the window's starting state into ginit. */
static otc_status tape_backward(jit_exec *j, seq_entry *e, int t, int T, otc_llvm_args *a) {
    struct jit_seq *s = j->seq;
    const otc_unrolled *u = e->u;
    jit_exec *uj = as_jit(e->ex);
    const otc_plan *pl = uj->train.plan;
    const otc_plan_value *wv = u->weights ? &pl->values[u->weights[0]] : NULL;
    /* The loss weight is only read by this plan's backward: written into its weights. */
    if (wv && wv->storage == OTC_STORE_PARAM) a->weights[wv->param_offset] = s->w_val[t];
    a->work = slot_of(s, e, t, T);
    for (int k = 0; k < s->n_delays && t + 1 < T; k++) {
        const otc_plan_value *g = &pl->values[u->state_in[k]];
        const otc_plan_value *c = &pl->values[otc_plan_owner(pl, e->carry[k])];
        size_t n = (size_t)(c->size * a->stride);
        float *dst = a->work + otc_extent_at(c->offset, a->stride);
        if (g->needs_grad)
            memcpy(dst, a->grads + otc_extent_at(g->grad, a->stride), n * sizeof(float));
        else /* the step does not read it, or nothing it reads needs a gradient */
            memset(dst, 0, n * sizeof(float));
    }
    otc_status st = otc_lvx_backward_at(uj, a);
    for (int k = 0; k < s->n_delays && t == 0 && !st; k++) {
        const otc_plan_value *g = &pl->values[u->state_in[k]];
        int64_t B = s->batch, n = g->size;
        float *dst = s->ginit + s->d_off[k] * B;
        if (!g->needs_grad) {
            memset(dst, 0, (size_t)(n * B) * sizeof(float));
            continue;
        }
        const float *src = a->grads + otc_extent_at(g->grad, a->stride);
        for (int64_t f = 0; f < n; f++)
            for (int64_t b = 0; b < B; b++) dst[b * n + f] = src[f * a->stride + b];
    }
    return st;
}

/* The staged window's forward and backward over the tape, its gradients added (unless a
 * zero_grad dropped them). */
static otc_status materialize(jit_exec *j) {
    struct jit_seq *s = j->seq;
    if (!s->pending) return OTC_OK;
    s->pending = false;
    seq_entry *e = s->pend;
    jit_exec *uj = as_jit(e->ex);
    const otc_plan *pl = uj->train.plan;
    int T = s->pend_steps;
    otc_exec_zero_grad(e->ex);
    /* The weights (refreshed here, once: they cannot change inside the window), the batch
     * and the gradients; the rows and the work buffer each step then points elsewhere. */
    otc_llvm_args a;
    otc_status st = otc_lvx_train_args(uj, s->batch, &a);
    if (!st) st = tape_ready(s, pl, T, s->batch, a.stride);
    if (!st) {
        memset(s->rows[0], 0, (size_t)(pl->in_width * s->batch) * sizeof(float));
        memset(s->rows[1], 0, (size_t)(pl->target_width * s->batch) * sizeof(float));
        a.in = s->rows[0];
        a.target = s->rows[1];
    }
    for (int t = 0; t < T && !st; t++) st = tape_forward(j, e, t, T, &a);
    for (int t = T - 1; t >= 0 && !st; t--) st = tape_backward(j, e, t, T, &a);
    if (st) {
        s->state_grad_ok = false;
        return otc_fail_context(st, "the compiled steps through time");
    }
    uj->last = &uj->train;
    if (s->pend_add) add_grads(j, e);
    settle(j, e);
    return OTC_OK;
}

otc_status otc_lvx_seq_state_grad(otc_executor *ex, otc_id delay, const float **data) {
    jit_exec *j = as_jit(ex);
    struct jit_seq *s = j->seq;
    if (delay < 0 || delay >= j->n || otc_graph_node(ex->graph, delay)->op != OTC_OP_DELAY)
        return otc_fail(OTC_ERR_ARG, "seq_state_grad: node #%d is not a delay", (int)delay);
    if (!data) return otc_fail(OTC_ERR_ARG, "seq_state_grad: data is NULL");
    if (j->o.inference || !s || !s->state_grad_ok)
        return otc_fail(OTC_ERR_STATE, "seq_state_grad: run seq_backward first");
    otc_status st = materialize(j);
    if (st) return st;
    int k = 0;
    while (s->delays[k] != delay) k++; /* every Delay of the graph is in delays */
    *data = s->ginit + s->d_off[k] * s->batch;
    return OTC_OK;
}

otc_status otc_lvx_seq_grad(jit_exec *j, otc_id id, const float **data, bool *answered) {
    struct jit_seq *s = j->seq;
    *answered = false;
    if (!s || !s->has_grads || s->g_off[id] < 0) return OTC_OK;
    otc_status st = materialize(j);
    if (st) return st;
    *data = s->acc + s->g_off[id];
    *answered = true;
    return OTC_OK;
}

/* from's compiles added to *to. */
static void add_compiles(otc_jit_stats *to, const otc_jit_stats *from) {
    to->compile_ms += from->compile_ms;
    to->compile_cpu_ms += from->compile_cpu_ms;
    to->compiles += from->compiles;
    to->cache_hits += from->cache_hits;
}

/* A step executor's compiles added to *to. */
static void add_stats(otc_jit_stats *to, const otc_executor *ex) {
    otc_jit_stats st;
    if (!otc_jit_executor_stats(ex, &st)) add_compiles(to, &st);
}

void otc_lvx_seq_stats(const jit_exec *j, otc_jit_stats *out) {
    const struct jit_seq *s = j->seq;
    if (!s) return;
    add_compiles(out, &s->retired);
    for (int i = 0; i < SEQ_CACHE; i++)
        if (s->cache[i].ex) add_stats(out, s->cache[i].ex);
}

/* The step graph a tape trains: g over one step (otc_unroll), and per Delay k an Input
 * "<delay>.carry" c_k with sum(c_k * what the Delay holds after the step) added to the loss, so
 * the backward seeded at the loss adds c_k (the gradient from the steps after) to that value's
 * gradient, as the emitted C's tape does by hand (render_c_tape.c). */
static otc_status step_graph(const otc_graph *g, otc_id loss, seq_entry *e) {
    char lab[64], name[160];
    otc_status st = otc_unroll(g, 1, loss, &e->u);
    if (st) return st;
    otc_unrolled *u = e->u;
    e->carry = malloc(((size_t)u->n_delays + 1) * sizeof *e->carry);
    e->direct = malloc((2 * (size_t)u->n_delays + 1) * sizeof *e->direct);
    if (!e->carry || !e->direct) return otc_fail(OTC_ERR_NOMEM, "out of memory for a sequence");
    for (int k = 0; k < u->n_delays; k++) {
        const otc_node *d = otc_graph_node(g, u->delays[k]);
        if (d->name)
            snprintf(name, sizeof name, "%s.carry", d->name);
        else
            snprintf(name, sizeof name, "node%d.carry", (int)u->delays[k]);
        otc_graph_node_label(g, u->delays[k], lab, sizeof lab);
        e->carry[k] = otc_input(u->graph, name, otc_graph_node(g, u->delays[k])->shape);
        otc_id term = e->carry[k] < 0 ? -1 : otc_mul(u->graph, e->carry[k], u->state_out[k]);
        term = term < 0 ? -1 : otc_sum(u->graph, term);
        u->total = term < 0 ? -1 : otc_add(u->graph, u->total, term);
        if (u->total < 0)
            return otc_fail_context(OTC_ERR_ARG, "the carried gradient of delay %s", lab);
        e->direct[k] = u->state_in[k];
        e->direct[u->n_delays + k] = e->carry[k];
    }
    return OTC_OK;
}

/* Whether step executor e's compiled update trains graph parameter id (at v in its plan). */
static bool trained_by(const seq_entry *e, otc_id id, const otc_plan_value **v) {
    *v = &as_jit(e->ex)->train.plan->values[e->u->map[id]];
    return (*v)->storage == OTC_STORE_PARAM && (*v)->needs_grad;
}

/* The moments ust holds (those of the parameters ust_of's update trains) back into mom. */
static void moments_home(struct jit_seq *s) {
    const seq_entry *e = s->ust_of;
    if (!e) return;
    s->ust_of = NULL;
    size_t pf = (size_t)as_jit(e->ex)->train.plan->param_floats, af = (size_t)s->acc_floats;
    for (int i = 0; i < s->n_params; i++) {
        const otc_plan_value *v;
        if (!trained_by(e, s->params[i], &v)) continue;
        size_t n = (size_t)v->size * sizeof(float), at = (size_t)s->g_off[s->params[i]];
        memcpy(s->mom + at, s->ust + v->param_offset, n);
        memcpy(s->mom + af + at, s->ust + pf + (size_t)v->param_offset, n);
    }
}

/* The compiled step for loss: from the cache, or planned and compiled now. */
static otc_status entry_for(jit_exec *j, otc_id loss, seq_entry **out) {
    struct jit_seq *s = j->seq;
    seq_entry *e = NULL;
    for (int i = 0; i < SEQ_CACHE && !e; i++)
        if (s->cache[i].ex && s->cache[i].loss == loss) e = &s->cache[i];
    if (!e) {
        e = &s->cache[0];
        for (int i = 1; i < SEQ_CACHE; i++)
            if (!s->cache[i].ex || (e->ex && s->cache[i].used < e->used)) e = &s->cache[i];
        if (e->ex) add_stats(&s->retired, e->ex);
        if (s->tail == e) s->tail = NULL;
        if (s->ust_of == e) moments_home(s);
        if (s->acc_of == e) s->acc_of = NULL;
        entry_clear(e);
        otc_status st = step_graph(j->base.graph, loss, e);
        otc_jit_options jo = j->o;
        jo.inference = false;
        jo.defer_forward = true;
        if (!st) {
            e->ex = otc_jit_executor_new(e->u->graph, &jo);
            if (!e->ex) st = OTC_ERR_STATE;
        }
        if (!st) {
            jit_exec *uj = as_jit(e->ex);
            uj->grad_inputs = e->u->state_in;
            uj->n_grad_inputs = e->u->n_delays;
            uj->direct_inputs = e->direct;
            uj->n_direct_inputs = 2 * e->u->n_delays;
            st = otc_lvx_train_ensure(uj, e->u->total);
        }
        const otc_plan *pl = st ? NULL : as_jit(e->ex)->train.plan;
        if (!st) {
            e->out_at = malloc(((size_t)e->u->n_delays + 1) * sizeof *e->out_at);
            e->io_src = malloc(((size_t)pl->n_io + 1) * sizeof *e->io_src);
            if (!e->out_at || !e->io_src)
                st = otc_fail(OTC_ERR_NOMEM, "out of memory for a sequence");
        }
        for (int i = 0; i < (st ? 0 : pl->n_io); i++) {
            const otc_unrolled *u = e->u;
            otc_id node = pl->io[i].node;
            e->io_src[i] = -1;
            for (int k = 0; k < u->n_inputs && pl->io[i].stream != OTC_IO_OUT; k++)
                if (u->inputs[k] == node) e->io_src[i] = k;
        }
        for (int k = 0; k < (st ? 0 : e->u->n_delays); k++) {
            char lab[64];
            e->out_at[k] = otc_plan_owner(pl, e->u->state_out[k]);
            if (pl->values[e->out_at[k]].storage != OTC_STORE_WORK)
                st = otc_fail(OTC_ERR_UNSUPPORTED, "the state delay %s holds is not stored",
                              otc_lvx_label(j, e->u->delays[k], lab));
            /* The carries are written into the slots between the forward and the backward. */
            else if (pl->values[otc_plan_owner(pl, e->carry[k])].storage != OTC_STORE_WORK)
                st = otc_fail(OTC_ERR_UNSUPPORTED, "the carried gradient of delay %s is not stored",
                              otc_lvx_label(j, e->u->delays[k], lab));
        }
        if (st) {
            entry_clear(e);
            return otc_fail_context(st, "compiling a step to train through time");
        }
        e->loss = loss;
    }
    e->used = ++s->tick;
    *out = e;
    return OTC_OK;
}

/* This executor's newest weights into the step executor (unless it holds them already). */
static otc_status sync_weights(jit_exec *j, seq_entry *e) {
    struct jit_seq *s = j->seq;
    if (s->synced == e && s->synced_wver == j->wver) return OTC_OK;
    int n = 0;
    for (int i = 0; i < s->n_params; i++) {
        otc_id id = s->params[i];
        otc_status st = otc_exec_value(&j->base, id, &s->src[n], NULL);
        if (st) return st;
        s->ids[n++] = e->u->map[id];
    }
    otc_lvx_params_set(as_jit(e->ex), n, s->ids, s->src);
    s->synced = e;
    s->synced_wver = j->wver;
    return OTC_OK;
}

/* The compiled update of the parameters the step executor's plan trains (`done` set for
 * them), with this executor's gradients and moments (which stay in that plan's layout, in
 * ust, while the same step executor updates); the new weights come back here. */
static otc_status compiled_update(jit_exec *j, seq_entry *e, const float *hyper, bool *done) {
    struct jit_seq *s = j->seq;
    jit_exec *uj = as_jit(e->ex);
    otc_status st = sync_weights(j, e);
    if (st) return st;
    const otc_plan *pl = uj->train.plan;
    size_t pf = (size_t)pl->param_floats, af = (size_t)s->acc_floats;
    bool moved = s->ust_of != e;
    if (moved) moments_home(s);
    if (moved && 2 * pf + 1 > s->ust_cap) {
        float *q = realloc(s->ust, (2 * pf + 1) * sizeof *q);
        if (!q) return otc_fail(OTC_ERR_NOMEM, "out of memory for optimiser state");
        s->ust = q;
        s->ust_cap = 2 * pf + 1;
    }
    for (int i = 0; i < s->n_params; i++) {
        otc_id id = s->params[i];
        const otc_plan_value *v;
        done[i] = trained_by(e, id, &v);
        if (!done[i]) continue;
        size_t n = (size_t)v->size * sizeof(float), at = (size_t)s->g_off[id];
        if (moved) {
            memcpy(s->ust + v->param_offset, s->mom + at, n);
            memcpy(s->ust + pf + (size_t)v->param_offset, s->mom + af + at, n);
        }
        if (s->acc_of != e) memcpy(uj->grads + v->grad.base, s->acc + at, n);
    }
    s->ust_of = e;
    s->acc_of = NULL; /* the update may be asked again: then copied, as the general case */
    if ((st = otc_lvx_update(uj, hyper, s->ust))) return st;
    int n = 0;
    for (int i = 0; i < s->n_params; i++) {
        if (!done[i]) continue;
        otc_id id = s->params[i];
        const otc_plan_value *v = &pl->values[e->u->map[id]];
        s->ids[n] = id;
        s->src[n++] = uj->train.weights + v->param_offset;
    }
    otc_lvx_params_set(j, n, s->ids, s->src);
    s->synced_wver = j->wver; /* the step executor holds them already */
    return OTC_OK;
}

otc_status otc_lvx_seq_backward(otc_executor *ex, otc_id loss, const float *weight) {
    jit_exec *j = as_jit(ex);
    struct jit_seq *s = j->seq;
    char lab[64], shp[64];
    if (!s || !s->recording || s->recorded == 0)
        return otc_fail(OTC_ERR_STATE,
                        "seq_backward: no recorded steps (seq_begin, then forward each step)");
    s->recording = false;
    if (s->cut)
        return otc_fail(OTC_ERR_UNSUPPORTED,
                        "seq_backward: the state was reset or set during the recording; the JIT "
                        "trains through whole windows (begin the recording after it)");
    if (loss < 0 || loss >= j->n)
        return otc_fail(OTC_ERR_ARG, "seq_backward: no node #%d", (int)loss);
    const otc_node *ln = otc_graph_node(ex->graph, loss);
    if (otc_shape_is_batched(ln->shape) || otc_shape_size(ln->shape) != 1)
        return otc_fail(OTC_ERR_SHAPE, "seq_backward: loss %s has shape %s, not a single value",
                        otc_lvx_label(j, loss, lab), otc_shape_str(ln->shape, shp, sizeof shp));
    int T = s->recorded;
    seq_entry *e = NULL;
    otc_status st = materialize(j); /* an earlier window still staged: its gradient first */
    if (!st) st = entry_for(j, loss, &e);
    if (st) return st;
    if ((st = sync_weights(j, e))) return st;
    for (int t = 0; t < T; t++) s->w_val[t] = weight ? weight[t] : 1.0f;
    s->pend = e;
    s->pend_steps = T;
    s->pending = true;
    s->pend_add = true;
    s->state_grad_ok = true;
    s->has_grads = true;
    /* Onto gradients already there: compute now (a zero_grad would drop it). */
    return s->dirty ? materialize(j) : OTC_OK;
}

otc_status otc_lvx_optimizer_step(otc_executor *ex, otc_optimizer *opt) {
    jit_exec *j = as_jit(ex);
    if (!opt) return otc_fail(OTC_ERR_ARG, "optimizer_step: no optimiser");
    if (j->o.inference)
        return otc_fail(OTC_ERR_STATE, "optimizer_step: this executor was built for inference");
    otc_status made = seq_ensure(j);
    if (made != OTC_OK) return made;
    struct jit_seq *s = j->seq;
    if (s->mopt != opt) { /* a new optimiser: fresh moments, step count from zero */
        memset(s->mom, 0, 2 * (size_t)s->acc_floats * sizeof(float));
        s->ust_of = NULL; /* its moments are the old optimiser's */
        s->t = 0;
        s->mopt = opt;
    }
    otc_status st = materialize(j);              /* a staged window's gradients */
    if (!st) st = otc_lvx_seq_catch_up(j, NULL); /* before the weights change */
    if (st) return st;
    /* The gradients as they are: the step executor's compiled update for the parameters its
     * plan trains, the rule's trees for the rest (in a copy of the weights, then written back
     * into the compiled plans). */
    const otc_optim_config *c = otc_optimizer_config(opt);
    const otc_optim_rule *rule = otc_optim_rule_get(otc_optim_rule_of(c));
    float h[OTC_LH_COUNT];
    h[OTC_LH_RULE] = (float)otc_optim_rule_of(c);
    otc_optim_step_args(c, s->t + 1, h + OTC_LH_ARGS);
    memset(s->done, 0, (size_t)s->n_params * sizeof *s->done);
    if (s->pend && s->pend->ex && (st = compiled_update(j, s->pend, h, s->done))) return st;
    if (!s->pend || !s->pend->ex) moments_home(s); /* every moment read below from mom */
    otc_expr_arg arg[OTC_OPTIM_ARG_COUNT];
    for (int k = 0; k < OTC_OPTIM_ARG_COUNT; k++) arg[k] = (otc_expr_arg){NULL, h[OTC_LH_ARGS + k]};
    const otc_expr_arrays in = {.arg = arg, .n_arg = OTC_OPTIM_ARG_COUNT};
    int n = 0;
    for (int i = 0; i < s->n_params; i++) {
        otc_id id = s->params[i];
        const otc_node *nd = otc_graph_node(ex->graph, id);
        if (!nd->trainable || s->done[i]) continue;
        const float *w;
        st = otc_exec_value(ex, id, &w, NULL);
        if (st) return st;
        size_t at = (size_t)s->g_off[id], size = nd->value->size;
        float *p = s->wbuf + at, *m = s->mom + at, *v = s->mom + s->acc_floats + at;
        memcpy(p, w, size * sizeof(float));
        arg[OTC_OPTIM_ARG_P].v = p;
        arg[OTC_OPTIM_ARG_G].v = s->acc + at;
        arg[OTC_OPTIM_ARG_M].v = m;
        arg[OTC_OPTIM_ARG_V].v = v;
        /* m, then v, then p: each tree reads what the one before it wrote. */
        if (rule->m) otc_expr_eval_n(rule->m, &in, m, size);
        if (rule->v) otc_expr_eval_n(rule->v, &in, v, size);
        otc_expr_eval_n(rule->p, &in, p, size);
        s->ids[n] = id;
        s->src[n++] = p;
    }
    s->t++;
    if (n > 0) otc_lvx_params_set(j, n, s->ids, s->src);
    return OTC_OK;
}
