/* The JIT executor: the executor interface over compiled plans. A forward plan (outputs,
 * buffer sharing) is compiled at creation; a training plan (to a loss, with backward and the
 * fused optimiser step) on the first backward or train_step. Inputs are staged sample-major
 * as the interpreter takes them; values are handed back sample-major too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llvm_exec.h"

static jit_exec *as_jit(otc_executor *ex) {
    return (jit_exec *)ex;
}

const char *otc_lvx_label(const jit_exec *j, otc_id id, char *buf) {
    return otc_graph_node_label(j->base.graph, id, buf, 64);
}

/* Grows a buffer to hold need floats, the new part zeroed (the padding samples of a batch
 * hold what the buffer held: never garbage that is not a finite number). Aligned to a cache
 * line: the generated code's vectors of a value's samples then never straddle two (realloc's
 * 16-byte alignment left that to where the heap happened to put the buffer: the 121-wide
 * substrate's fast tier at batch 256 ran 0.29 or 0.38 us per sample from one build to the
 * next). */
bool otc_lvx_grow(float **buf, size_t *cap, size_t need) {
    size_t had = *buf ? *cap : 0, now = need ? need : 1;
    float *p = aligned_alloc(64, (now * sizeof(float) + 63) / 64 * 64);
    if (!p) return false;
    if (had) memcpy(p, *buf, had * sizeof(float));
    memset(p + had, 0, (now - had) * sizeof(float));
    free(*buf);
    *buf = p;
    *cap = need;
    return true;
}

/* Every call's path (a tiny genome's forward is ~50 ns): the check inline, the growth not. */
static inline bool grow(float **buf, size_t *cap, size_t need) {
    return (need <= *cap && *buf) || otc_lvx_grow(buf, cap, need);
}

void otc_lvx_plan_free(jit_plan *p) {
    otc_llvm_module_release(p->mod);
    for (int f = 0; f <= OTC_LV_FORMS_SCALAR; f++) otc_llvm_module_release(p->form_mod[f]);
    otc_plan_free(p->plan);
    free(p->work);
    if (p->own_weights) free(p->weights);
    free(p->in_rows);
    free(p->target_rows);
    free(p->out_rows);
    free(p->io_input);
    memset(p, 0, sizeof *p);
}

void otc_lvx_destroy(otc_executor *ex) {
    jit_exec *j = as_jit(ex);
    otc_lvx_seq_free(j);
    otc_lvx_plan_free(&j->fwd);
    otc_lvx_plan_free(&j->train);
    otc_lvx_plan_free(&j->fwdl);
    free(j->pre);
    for (int i = 0; i < j->n_inputs; i++) free(j->inputs[i].data);
    free(j->inputs);
    if (j->scratch)
        for (int i = 0; i < j->n; i++) free(j->scratch[i]);
    free(j->scratch);
    free(j->scratch_cap);
    free(j->grads);
    free(j->side);
    free(j->side_off);
    free(j->state);
    otc_optimizer_free(j->orphan_opt);
    free(j->orphan_p);
    free(j->orphan_g);
    free(j->orphan_n);
    free(j->zeros);
    free(j);
}

/* Copy the latest weights into p (by parameter id; layouts may differ). */
void otc_lvx_refresh_weights(jit_exec *j, jit_plan *p) {
    if (p->wver == j->wver || !j->wsrc) return;
    jit_plan *src = j->wsrc;
    if (src->weights != p->weights) {
        for (int i = 0; i < p->plan->n_params; i++) {
            otc_id id = p->plan->params[i];
            const otc_plan_value *dv = &p->plan->values[id], *sv = &src->plan->values[id];
            if (sv->storage != OTC_STORE_PARAM) continue;
            memcpy(p->weights + dv->param_offset, src->weights + sv->param_offset,
                   (size_t)dv->size * sizeof(float));
        }
    }
    p->wver = j->wver;
}

/* A compiled module arrived for p: count it and give the plan its weights (from the graph,
 * or shared with the other plan, or copied from whichever holds newer ones). */

int otc_lvx_input_index(const jit_exec *j, otc_id id) {
    for (int i = 0; i < j->n_inputs; i++)
        if (j->inputs[i].id == id) return i;
    return -1;
}

static otc_status set_input(otc_executor *ex, otc_id id, const float *data, int batch) {
    jit_exec *j = as_jit(ex);
    char lab[64];
    int k = otc_lvx_input_index(j, id);
    if (k < 0) return otc_fail(OTC_ERR_ARG, "set_input: node #%d is not an input", (int)id);
    if (!data) return otc_fail(OTC_ERR_ARG, "set_input: no data for %s", otc_lvx_label(j, id, lab));
    /* Its floats per sample, looked up once at creation: this is every call's path. */
    if (!j->inputs[k].per_sample)
        return otc_fail(OTC_ERR_UNSUPPORTED,
                        "set_input: input %s is not batched (compiled inputs are per-sample)",
                        otc_lvx_label(j, id, lab));
    if (batch < 1)
        return otc_fail(OTC_ERR_ARG, "set_input: batch %d for %s (must be >= 1)", batch,
                        otc_lvx_label(j, id, lab));
    size_t n = j->inputs[k].per_sample * (size_t)batch;
    if (!grow(&j->inputs[k].data, &j->inputs[k].cap, n))
        return otc_fail(OTC_ERR_NOMEM, "set_input: out of memory for %s",
                        otc_lvx_label(j, id, lab));
    memcpy(j->inputs[k].data, data, n * sizeof(float));
    j->inputs[k].batch = batch;
    j->last = NULL;
    otc_lvx_seq_stale(j);
    return OTC_OK;
}

/* The batch stride plan p runs `batch` samples at (otc_llvm_stride_of). */
static int64_t stride_of(const jit_exec *j, const jit_plan *p, int64_t batch) {
    return otc_llvm_stride_of(p->forms, j->lanes, batch);
}

/* The state in `from`'s layout (its slots at `src`, a work buffer of that plan, at stride Sf)
 * into `to`'s slots at stride St, Delay by Delay (two step plans of one graph place them
 * differently; one of them may hold a single sample contiguously). */
static void move_state(jit_exec *j, const jit_plan *from, const float *src, int64_t Sf,
                       jit_plan *to, int64_t St) {
    int64_t batch = from->state_batch > 0 ? from->state_batch : 1;
    for (otc_id id = 0; id < j->n; id++) {
        if (otc_graph_node(j->base.graph, id)->op != OTC_OP_DELAY) continue;
        const otc_plan_value *a = &from->plan->values[id], *b = &to->plan->values[id];
        if (b->storage != OTC_STORE_WORK) continue;
        float *dst = to->work + otc_extent_at(b->offset, St);
        const float *at = src + otc_extent_at(a->offset, Sf) - from->plan->state_offset;
        if (a->storage != OTC_STORE_WORK) {
            memset(dst, 0, (size_t)(b->size * St) * sizeof(float));
        } else if (Sf == St) {
            memcpy(dst, at, (size_t)(b->size * St) * sizeof(float));
        } else {
            memset(dst, 0, (size_t)(b->size * St) * sizeof(float));
            for (int64_t e = 0; e < b->size; e++)
                for (int64_t s = 0; s < batch && s < Sf && s < St; s++)
                    dst[e * St + s] = at[e * Sf + s];
        }
    }
    to->state_batch = from->state_batch;
}

/* Fills the argument block for plan p at the inputs' batch (assembling multi-input rows). */
static otc_status prepare(jit_exec *j, jit_plan *p, otc_llvm_args *a) {
    const otc_plan *pl = p->plan;
    char lab[64], lab2[64];
    int64_t batch = -1;
    otc_id from = -1;
    for (int i = 0; i < pl->n_io; i++) {
        if (p->io_input[i] < 0) continue;
        const jit_input *in = &j->inputs[p->io_input[i]];
        if (in->batch < 0)
            return otc_fail(OTC_ERR_STATE, "forward: input %s was not set",
                            otc_lvx_label(j, pl->io[i].node, lab));
        if (in->batch == batch) continue;
        if (batch >= 0)
            return otc_fail(OTC_ERR_SHAPE, "forward: input %s has batch %d but input %s has %d",
                            otc_lvx_label(j, pl->io[i].node, lab), in->batch,
                            otc_lvx_label(j, from, lab2), (int)batch);
        batch = in->batch;
        from = pl->io[i].node;
    }
    /* No input reaches an output (a recurrent graph may run on its state alone): the batch
     * the caller set, as the interpreter takes it. */
    for (int i = 0; i < j->n_inputs && batch < 0; i++)
        if (j->inputs[i].batch > 0) batch = j->inputs[i].batch;
    if (batch < 0) batch = 1;
    int64_t S = stride_of(j, p, batch);
    size_t wneed = (size_t)otc_extent_at(pl->work, S);
    if (!grow(&p->work, &p->work_cap, wneed) ||
        !grow(&p->out_rows, &p->out_cap, (size_t)(pl->out_width * batch)))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a batch of %d", (int)batch);
    /* Recurrent: a reset or a new batch (the old state has the old batch's rows, as in the
     * interpreter) starts from zeros. */
    if (pl->state_per_sample > 0 && p->state_batch != batch) {
        memset(p->work + pl->state_offset, 0, (size_t)(pl->state_per_sample * S) * sizeof(float));
        p->state_batch = batch;
    }
    if (pl->state_per_sample > 0 && j->live && j->live != p && j->live->state_batch == batch)
        move_state(j, j->live, j->live->work + j->live->plan->state_offset,
                   stride_of(j, j->live, batch), p, S);
    /* The rows are written into the block itself: kept in a local array, the two 8-byte
     * stores were read back as one 16-byte load, a stalled store forward on every call. */
    *a = (otc_llvm_args){NULL, NULL, p->out_rows, p->weights, p->work, NULL,
                         NULL, NULL, batch,       S,          NULL};
    for (int s = 0; s < 2; s++) {
        const float **rows_of = s == 0 ? &a->in : &a->target;
        if (p->n_stream[s] == 0) continue;
        if (p->n_stream[s] == 1 && p->single[s] >= 0) {
            /* One input fills the whole row: hand its staged data over as is. */
            *rows_of = j->inputs[p->io_input[p->single[s]]].data;
            continue;
        }
        otc_io_stream stream = s == 0 ? OTC_IO_IN : OTC_IO_TARGET;
        int64_t width = s == 0 ? pl->in_width : pl->target_width;
        float **rows = s == 0 ? &p->in_rows : &p->target_rows;
        size_t *cap = s == 0 ? &p->in_cap : &p->target_cap;
        if (!grow(rows, cap, (size_t)(width * batch)))
            return otc_fail(OTC_ERR_NOMEM, "out of memory for a batch of %d", (int)batch);
        for (int i = 0; i < pl->n_io; i++) {
            const otc_plan_io *io = &pl->io[i];
            if (io->stream != stream) continue;
            const float *src = j->inputs[p->io_input[i]].data;
            for (int64_t b = 0; b < batch; b++)
                memcpy(*rows + b * width + io->offset, src + b * io->width,
                       (size_t)io->width * sizeof(float));
        }
        *rows_of = *rows;
    }
    if (p->wver != j->wver) otc_lvx_refresh_weights(j, p);
    j->batch = batch;
    j->stride = S;
    return OTC_OK;
}

static otc_status run_status(jit_exec *j, int32_t rc) {
    if (rc == 0) return OTC_OK;
    char lab[64];
    otc_id id = rc - 1;
    const otc_node *nd = otc_graph_node(j->base.graph, id);
    int C = nd && nd->n_inputs > 0 ? otc_graph_node(j->base.graph, nd->inputs[0])->shape.dim[1] : 0;
    return otc_fail(OTC_ERR_ARG, "softmax_ce %s: a otc_lvx_label is not a class index in [0,%d)",
                    otc_lvx_label(j, id, lab), C);
}

/* Every output is stored by the training plan, so its forward can stand for the plain one. */
static bool covers_outputs(const jit_exec *j, const otc_plan *p) {
    int n = otc_graph_output_count(j->base.graph);
    for (int i = 0; i < n; i++) {
        otc_id o = otc_plan_owner(p, otc_graph_output(j->base.graph, i));
        if (p->values[o].storage != OTC_STORE_WORK) return false;
    }
    return true;
}

/* Every input the plan reads is set, all with one batch (targets left from training at
 * another batch mean the plain forward plan should run instead). */
static bool inputs_set(const jit_exec *j, const jit_plan *p) {
    int batch = -1;
    for (int i = 0; i < p->plan->n_io; i++) {
        if (p->io_input[i] < 0) continue;
        int b = j->inputs[p->io_input[i]].batch;
        if (b < 0 || (batch >= 0 && b != batch)) return false;
        batch = b;
    }
    return true;
}

static otc_status run_forward_as(jit_exec *j, jit_plan *p, bool record) {
    otc_llvm_args a;
    otc_lvx_seq_stale(j);
    otc_status st = otc_lvx_seq_catch_up(j, record ? p : NULL);
    if (!st) st = prepare(j, p, &a);
    if (!st && j->seq && record) st = otc_lvx_seq_record(j, p);
    if (st) return st;
    const otc_plan *pl = p->plan;
    if (record && otc_lvx_seq_defer(j, p)) { /* recording: the tape computes it */
        if (pl->state_per_sample > 0) j->live = p;
        j->last = NULL;
        return OTC_OK;
    }
    if (pl->state_per_sample > 0) {
        /* Keep the state this step reads: a loss read afterwards reruns the step (only the
         * plain forward's missing losses are: a 16 KB copy per LSTM 32->128 step otherwise). */
        if (p == &j->fwd && p->loss_rerun) {
            size_t n = (size_t)(pl->state_per_sample * j->stride);
            if (!grow(&j->pre, &j->pre_cap, n)) return otc_fail(OTC_ERR_NOMEM, "out of memory");
            memcpy(j->pre, p->work + pl->state_offset, n * sizeof(float));
        }
        j->live = p;
    }
    j->last = NULL;
    otc_jit_module *mod = NULL;
    st = otc_lvx_plan_module(j, p, &mod);
    if (st) return st;
    st = run_status(j, mod->fn[OTC_JIT_FORWARD](&a));
    if (!st) j->last = p;
    return st;
}

static otc_status run_forward(jit_exec *j, jit_plan *p) {
    return run_forward_as(j, p, true);
}

otc_status otc_lvx_run_step(jit_exec *j, jit_plan *p) {
    return run_forward_as(j, p, false);
}

/* A recurrent step's loss, read after a forward whose plan does not compute it: the step
 * plan with the loss, from the state the step read, run again (not recorded twice); it then
 * runs the steps while the targets are set. */
static otc_status loss_step(jit_exec *j, otc_id loss) {
    jit_plan *ran = j->last;
    if (!j->has_fwdl || j->fwdl.plan->options.loss != loss) {
        if (j->live == &j->fwdl) j->live = NULL;
        otc_lvx_plan_free(&j->fwdl);
        j->has_fwdl = false;
        otc_plan_options po = otc_lvx_fwd_options(j);
        po.loss = loss;
        po.keep_loss = true;
        otc_status st = otc_lvx_plan_make(j, &j->fwdl, &po, false);
        if (st) {
            otc_lvx_plan_free(&j->fwdl);
            return st;
        }
        j->has_fwdl = true;
    }
    jit_plan *p = &j->fwdl;
    int64_t S = stride_of(j, p, j->batch);
    if (!grow(&p->work, &p->work_cap, (size_t)otc_extent_at(p->plan->work, S)))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a batch of %d", (int)j->batch);
    move_state(j, ran, j->pre, j->stride, p, S);
    p->state_batch = j->batch;
    j->live = p;
    return run_forward_as(j, p, false);
}

static otc_status forward(otc_executor *ex) {
    jit_exec *j = as_jit(ex);
    if (otc_graph_size(ex->graph) != j->n)
        return otc_fail(OTC_ERR_STATE,
                        "forward: the graph changed (%d nodes, the executor was built for %d)",
                        otc_graph_size(ex->graph), j->n);
    if (j->has_train && covers_outputs(j, j->train.plan) && inputs_set(j, &j->train))
        return run_forward(j, &j->train);
    if (j->has_fwdl && inputs_set(j, &j->fwdl)) return run_forward(j, &j->fwdl);
    otc_status st = otc_lvx_fwd_ready(j);
    return st ? st : run_forward(j, &j->fwd);
}

otc_status otc_lvx_fwd_ready(jit_exec *j) {
    if (j->has_fwd) return OTC_OK;
    if (otc_graph_output_count(j->base.graph) == 0)
        return otc_fail(OTC_ERR_STATE, "forward: the graph has no outputs to compute (mark "
                                       "one, or train a loss first)");
    otc_plan_options po = otc_lvx_fwd_options(j);
    otc_status st = otc_lvx_plan_make(j, &j->fwd, &po, false);
    if (st) {
        otc_lvx_plan_free(&j->fwd);
        return st;
    }
    j->has_fwd = true;
    return OTC_OK;
}

void otc_lvx_params_set(jit_exec *j, int n, const otc_id *ids, const float *const *src) {
    jit_plan *plans[3] = {j->has_fwd ? &j->fwd : NULL, j->has_train ? &j->train : NULL,
                          j->has_fwdl ? &j->fwdl : NULL};
    for (int k = 0; k < 3; k++)
        if (plans[k]) otc_lvx_refresh_weights(j, plans[k]);
    for (int i = 0; i < n; i++) {
        bool held = false;
        for (int k = 0; k < 3; k++) {
            jit_plan *p = plans[k];
            if (!p || p->plan->values[ids[i]].storage != OTC_STORE_PARAM) continue;
            const otc_plan_value *v = &p->plan->values[ids[i]];
            memcpy(p->weights + v->param_offset, src[i], (size_t)v->size * sizeof(float));
            held = true;
        }
        otc_tensor *t = otc_graph_param(j->base.graph, ids[i]);
        if (!held && t) memcpy(t->data, src[i], t->size * sizeof(float));
    }
    /* Every plan now holds the newest weights. */
    j->wver++;
    for (int k = 0; k < 3; k++)
        if (plans[k]) plans[k]->wver = j->wver;
    for (int k = 2; k >= 0; k--)
        if (plans[k]) j->wsrc = plans[k];
}

otc_status otc_lvx_set_state(otc_executor *ex, otc_id delay, const float *data, int batch) {
    jit_exec *j = as_jit(ex);
    char lab[64];
    if (delay < 0 || delay >= j->n || otc_graph_node(ex->graph, delay)->op != OTC_OP_DELAY)
        return otc_fail(OTC_ERR_ARG, "set_state: node #%d is not a delay", (int)delay);
    if (!data || batch < 1)
        return otc_fail(OTC_ERR_ARG, "set_state: no data or a batch of %d for %s", batch,
                        otc_lvx_label(j, delay, lab));
    otc_status st = otc_lvx_seq_catch_up(j, NULL);
    if (!st) st = otc_lvx_fwd_ready(j);
    if (st) return st;
    jit_plan *p = j->live ? j->live : &j->fwd;
    const otc_plan *pl = p->plan;
    const otc_plan_value *v = &pl->values[delay];
    if (v->storage != OTC_STORE_WORK) return OTC_OK; /* no output reads it: nothing to hold */
    int64_t S = stride_of(j, p, batch);
    if (!grow(&p->work, &p->work_cap, (size_t)otc_extent_at(pl->work, S)))
        return otc_fail(OTC_ERR_NOMEM, "set_state: out of memory for a batch of %d", batch);
    if (p->state_batch != batch) { /* the other Delays start from zeros, as in the interpreter */
        memset(p->work + pl->state_offset, 0, (size_t)(pl->state_per_sample * S) * sizeof(float));
        p->state_batch = batch;
    }
    j->live = p;
    float *base = p->work + otc_extent_at(v->offset, S);
    for (int64_t e = 0; e < v->size; e++)
        for (int64_t b = 0; b < batch; b++) base[e * S + b] = data[b * v->size + e];
    otc_lvx_seq_cut(j);
    if (j->last == p) j->last = NULL; /* the slot no longer holds the next state's source */
    return OTC_OK;
}

static float *scratch_for(jit_exec *j, otc_id id, size_t n) {
    if (!grow(&j->scratch[id], &j->scratch_cap[id], n)) return NULL;
    return j->scratch[id];
}

static otc_status value(otc_executor *ex, otc_id id, const float **data, otc_shape *shape) {
    jit_exec *j = as_jit(ex);
    char lab[64];
    /* Every call's case first: the output a forward just stored in its row, sample-major (what
     * the path below ends in for it, with no sequence recorded). */
    if (j->last && id == j->last->out_row_node && data && !j->seq) {
        *data = j->last->out_rows;
        if (shape) *shape = otc_shape_resolve(otc_graph_node(ex->graph, id)->shape, (int)j->batch);
        return OTC_OK;
    }
    if (id < 0 || id >= j->n) return otc_fail(OTC_ERR_ARG, "value: no node #%d", (int)id);
    if (!data) return otc_fail(OTC_ERR_ARG, "value: data is NULL");
    const otc_node *nd = otc_graph_node(ex->graph, id);
    if (nd->op == OTC_OP_PARAMETER) {
        jit_plan *p = j->wsrc ? j->wsrc : (j->has_fwd ? &j->fwd : &j->train);
        if (p->plan && p->plan->values[id].storage == OTC_STORE_PARAM) {
            otc_lvx_refresh_weights(j, p);
            *data = p->weights + p->plan->values[id].param_offset;
        } else {
            *data = nd->value->data; /* no plan reads it: the graph's value is current */
        }
        if (shape) *shape = nd->shape;
        return OTC_OK;
    }
    otc_status caught = otc_lvx_seq_catch_up(j, NULL);
    if (caught) return caught;
    if (!j->last) {
        bool answered = false;
        caught = otc_lvx_seq_tail_value(j, id, data, shape, &answered);
        if (caught || answered) return caught;
    }
    jit_plan *p = j->last;
    if (!p) return otc_fail(OTC_ERR_STATE, "value: run forward first (after setting the inputs)");
    if (shape) *shape = otc_shape_resolve(nd->shape, (int)j->batch);
    if (nd->op == OTC_OP_INPUT) {
        int k = otc_lvx_input_index(j, id);
        if (j->inputs[k].batch < 0)
            return otc_fail(OTC_ERR_STATE, "value: input %s was not set",
                            otc_lvx_label(j, id, lab));
        *data = j->inputs[k].data;
        return OTC_OK;
    }
    if (p == &j->fwd && p->plan->values[id].storage == OTC_STORE_NONE &&
        otc_op_get(nd->op)->kind == OTC_OPKIND_LOSS && !otc_shape_is_batched(nd->shape) &&
        otc_graph_is_recurrent(ex->graph)) {
        otc_status st = loss_step(j, id);
        if (st) return st;
        p = j->last;
    }
    const otc_plan *pl = p->plan;
    otc_id o = otc_plan_owner(pl, id);
    const otc_plan_value *v = &pl->values[o];
    if (otc_graph_node(ex->graph, o)->op == OTC_OP_DELAY) {
        /* Its slot holds the next step's state by now; an output's row has this step's. */
        for (int k = 0; k < pl->n_io; k++) {
            const otc_plan_io *io = &pl->io[k];
            if (io->stream != OTC_IO_OUT || otc_plan_owner(pl, io->node) != o) continue;
            float *dst = scratch_for(j, id, (size_t)io->width * (size_t)j->batch);
            if (!dst) return otc_fail(OTC_ERR_NOMEM, "value: out of memory");
            for (int64_t b = 0; b < j->batch; b++)
                memcpy(dst + b * io->width, p->out_rows + b * pl->out_width + io->offset,
                       (size_t)io->width * sizeof(float));
            *data = dst;
            return OTC_OK;
        }
        return otc_fail(OTC_ERR_UNSUPPORTED,
                        "value: delay %s holds the next step's state after a compiled forward; "
                        "mark it as an output to read it",
                        otc_lvx_label(j, id, lab));
    }
    if (v->storage != OTC_STORE_WORK)
        return otc_fail(OTC_ERR_UNSUPPORTED,
                        "value: node %s is not kept by the compiled plan (%s); mark it as an "
                        "output to read it",
                        otc_lvx_label(j, id, lab),
                        v->storage == OTC_STORE_REGISTER ? "it lives in a register"
                                                         : "the plan does not compute it");
    /* Storage shared with a later value no longer holds this one. */
    if (v->last_step < p->last_kernel)
        return otc_fail(OTC_ERR_UNSUPPORTED,
                        "value: node %s is not kept by the compiled plan (its space is reused "
                        "by later values); mark it as an output to read it",
                        otc_lvx_label(j, id, lab));
    const float *base = p->work + otc_extent_at(v->offset, j->stride);
    if (!v->batched) {
        *data = base;
        return OTC_OK;
    }
    /* A single output is already sample-major in the output rows. */
    if (p->out_owner == o) {
        *data = p->out_rows;
        return OTC_OK;
    }
    size_t n = (size_t)v->size * (size_t)j->batch;
    float *dst = scratch_for(j, id, n);
    if (!dst) return otc_fail(OTC_ERR_NOMEM, "value: out of memory");
    for (int64_t e = 0; e < v->size; e++)
        for (int64_t b = 0; b < j->batch; b++) dst[b * v->size + e] = base[e * j->stride + b];
    *data = dst;
    return OTC_OK;
}

/* The parameter gradients accumulated under the training plan about to be replaced, as a
 * copy per parameter (offsets[id] into it, -1: none), so the next plan starts from them:
 * backward accumulates until zero_grad whatever loss it runs from. NULL when out of memory. */
static float *carried_grads(const jit_exec *j, int64_t *offsets) {
    const otc_plan *pl = j->train.plan;
    float *carry = malloc(((size_t)pl->grads.base + 1) * sizeof(float));
    if (!carry) return NULL;
    memcpy(carry, j->grads, (size_t)pl->grads.base * sizeof(float));
    for (otc_id id = 0; id < j->n; id++) {
        bool param = otc_graph_node(j->base.graph, id)->op == OTC_OP_PARAMETER;
        offsets[id] = param && pl->values[id].needs_grad ? pl->values[id].grad.base : -1;
    }
    return carry;
}

/* ensure_train's plan: kept when it is for loss, else compiled (the old one freed). */
static otc_status ensure_train_plan(jit_exec *j, otc_id loss, const otc_optim_config *optim) {
    char lab[64];
    if (j->has_train && j->train.plan->options.loss == loss) return OTC_OK;
    if (j->has_train) {
        /* Keep the trained weights: make another plan (or the graph) their holder. */
        if (j->wsrc == &j->train) {
            if (j->has_fwd) {
                otc_lvx_refresh_weights(j, &j->fwd);
                j->wsrc = &j->fwd;
            } else {
                otc_status st = otc_exec_sync_params(&j->base);
                if (st) return st;
                j->wsrc = NULL;
            }
        }
        if (j->has_fwd && j->fwd.weights == j->train.weights) {
            /* The two plans share one buffer (whichever made it): the forward plan keeps it. */
            j->fwd.own_weights = j->fwd.own_weights || j->train.own_weights;
            j->train.own_weights = false;
        }
        if (j->last == &j->train) j->last = NULL;
        otc_lvx_plan_free(&j->train);
        j->has_train = false;
        free(j->state);
        j->state = NULL;
        j->opt = NULL;
    }
    otc_plan_options po = otc_lvx_train_options(j, loss, optim);
    otc_status st = otc_lvx_plan_make(j, &j->train, &po, true);
    if (st) {
        otc_lvx_plan_free(&j->train);
        return otc_fail_context(st, "compiling the training step for loss %s",
                                otc_lvx_label(j, loss, lab));
    }
    j->has_train = true;
    return otc_lvx_train_ready(j);
}

/* j->side and j->side_off, allocated (zeros) on first use. */
static otc_status side_ready(jit_exec *j) {
    if (j->side) return OTC_OK;
    j->side_off = malloc(((size_t)j->n + 1) * sizeof *j->side_off);
    if (!j->side_off) return otc_fail(OTC_ERR_NOMEM, "out of memory for gradients");
    size_t total = 0;
    for (otc_id id = 0; id < j->n; id++) {
        const otc_node *nd = otc_graph_node(j->base.graph, id);
        j->side_off[id] = nd->op == OTC_OP_PARAMETER ? (int64_t)total : -1;
        if (nd->op == OTC_OP_PARAMETER) total += otc_shape_size(nd->shape);
    }
    j->side = calloc(total + 1, sizeof(float));
    if (!j->side) return otc_fail(OTC_ERR_NOMEM, "out of memory for gradients");
    j->side_n = total;
    return OTC_OK;
}

/* The training plan for loss, compiled on first use (a new loss replaces the old plan). */
static otc_status ensure_train(jit_exec *j, otc_id loss, const otc_optim_config *optim) {
    if (j->o.inference)
        return otc_fail(OTC_ERR_STATE, "backward: this executor was built for inference");
    if (loss < 0 || loss >= j->n) return otc_fail(OTC_ERR_ARG, "backward: no node #%d", (int)loss);
    if (j->has_train && j->train.plan->options.loss == loss) return OTC_OK;
    float *carry = NULL;
    int64_t *offsets = NULL;
    if (j->has_train && j->grads) {
        offsets = malloc(((size_t)j->n + 1) * sizeof *offsets);
        carry = offsets ? carried_grads(j, offsets) : NULL;
        if (!carry) {
            free(offsets);
            return otc_fail(OTC_ERR_NOMEM, "out of memory for gradients");
        }
    }
    otc_status st = side_ready(j);
    if (!st) st = ensure_train_plan(j, loss, optim);
    /* Each parameter's gradient so far (the old plan's, or the side buffer's) goes where the
     * new plan keeps it: its gradient buffer when the new loss reaches it, else the side. */
    for (otc_id id = 0; st == OTC_OK && id < j->n; id++) {
        if (j->side_off[id] < 0) continue;
        const otc_plan_value *v = &j->train.plan->values[id];
        size_t size = otc_shape_size(otc_graph_node(j->base.graph, id)->shape);
        float *side = j->side + j->side_off[id];
        const float *old = carry && offsets[id] >= 0 ? carry + offsets[id] : NULL;
        float *dst = v->needs_grad ? j->grads + v->grad.base : side;
        for (size_t i = 0; i < size; i++) {
            if (dst != side) dst[i] += side[i];
            if (old) dst[i] += old[i];
        }
        if (dst != side) memset(side, 0, size * sizeof(float));
    }
    free(carry);
    free(offsets);
    return st;
}

/* The gradient buffer at the current stride, keeping the parameter gradients (first). */
static otc_status grads_for(jit_exec *j, otc_llvm_args *a) {
    const otc_plan *pl = j->train.plan;
    size_t need = (size_t)otc_extent_at(pl->grads, a->stride);
    if (need > j->grads_cap) {
        float *g = realloc(j->grads, (need + 1) * sizeof(float));
        if (!g) return otc_fail(OTC_ERR_NOMEM, "out of memory for gradients");
        j->grads = g;
        j->grads_cap = need;
    }
    a->grads = j->grads;
    return OTC_OK;
}

static otc_status backward(otc_executor *ex, otc_id loss) {
    jit_exec *j = as_jit(ex);
    char lab[64], shp[64];
    if (j->o.inference)
        return otc_fail(OTC_ERR_STATE, "backward: this executor was built for inference");
    if (loss < 0 || loss >= j->n) return otc_fail(OTC_ERR_ARG, "backward: no node #%d", (int)loss);
    otc_status caught = otc_lvx_seq_catch_up(j, NULL);
    if (caught) return caught;
    if (!j->last)
        return otc_fail(OTC_ERR_STATE, "backward: run forward first (after setting the inputs)");
    const otc_node *ln = otc_graph_node(ex->graph, loss);
    if (otc_shape_is_batched(ln->shape) || otc_shape_size(ln->shape) != 1)
        return otc_fail(OTC_ERR_SHAPE, "backward: loss %s has shape %s, not a single value",
                        otc_lvx_label(j, loss, lab), otc_shape_str(ln->shape, shp, sizeof shp));
    otc_status st = ensure_train(j, loss, NULL);
    if (st) return st;
    /* The training plan keeps what backward reads; recompute its forward when another plan
     * ran (the result is the same values). */
    if (j->last != &j->train) {
        st = run_forward(j, &j->train);
        if (st) return st;
    }
    otc_llvm_args a;
    st = prepare(j, &j->train, &a);
    if (!st) st = grads_for(j, &a);
    if (st) return st;
    return run_status(j, j->train.mod->fn[OTC_JIT_BACKWARD](&a));
}

otc_status otc_lvx_train_ensure(jit_exec *j, otc_id loss) {
    return ensure_train(j, loss, NULL);
}

otc_status otc_lvx_train_args(jit_exec *j, int64_t batch, otc_llvm_args *a) {
    jit_plan *p = &j->train;
    const otc_plan *pl = p->plan;
    int64_t S = stride_of(j, p, batch);
    if (!grow(&p->work, &p->work_cap, (size_t)otc_extent_at(pl->work, S)) ||
        !grow(&p->out_rows, &p->out_cap, (size_t)(pl->out_width * batch)))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a batch of %d", (int)batch);
    if (p->wver != j->wver) otc_lvx_refresh_weights(j, p);
    *a = (otc_llvm_args){NULL, NULL, p->out_rows, p->weights, p->work, NULL,
                         NULL, NULL, batch,       S,          NULL};
    j->batch = batch;
    j->stride = S;
    return grads_for(j, a);
}

otc_status otc_lvx_forward_at(jit_exec *j, const otc_llvm_args *a) {
    return run_status(j, j->train.mod->fn[OTC_JIT_FORWARD]((otc_llvm_args *)a));
}

otc_status otc_lvx_backward_at(jit_exec *j, const otc_llvm_args *a) {
    return run_status(j, j->train.mod->fn[OTC_JIT_BACKWARD]((otc_llvm_args *)a));
}

static otc_status grad(otc_executor *ex, otc_id id, const float **data) {
    jit_exec *j = as_jit(ex);
    if (j->o.inference)
        return otc_fail(OTC_ERR_STATE, "grad: this executor was built for inference");
    if (id < 0 || id >= j->n || otc_graph_node(ex->graph, id)->op != OTC_OP_PARAMETER)
        return otc_fail(OTC_ERR_ARG, "grad: node #%d is not a parameter", (int)id);
    if (!data) return otc_fail(OTC_ERR_ARG, "grad: data is NULL");
    bool seq = false;
    otc_status sst = otc_lvx_seq_grad(j, id, data, &seq);
    if (sst || seq) return sst;
    /* A parameter the current plan leaves out (no backward yet, frozen, or the loss does not
     * reach it) has what earlier losses accumulated, else zeros: the interpreter's answer. */
    if (!j->has_train || !j->train.plan->values[id].needs_grad) {
        otc_status st = side_ready(j);
        if (st) return st;
        *data = j->side + j->side_off[id];
        return OTC_OK;
    }
    *data = j->grads + j->train.plan->values[id].grad.base;
    return OTC_OK;
}

static void zero_grad(otc_executor *ex) {
    jit_exec *j = as_jit(ex);
    otc_lvx_seq_zero(j);
    if (j->has_train && j->grads)
        memset(j->grads, 0, (size_t)j->train.plan->param_floats * sizeof(float));
    if (j->side) memset(j->side, 0, j->side_n * sizeof(float));
}

/* The trainable parameters the training plan leaves out, with an optimiser of their own. */
static otc_status orphans_ready(jit_exec *j, const otc_optim_config *c) {
    otc_optimizer_free(j->orphan_opt);
    j->orphan_opt = NULL;
    j->n_orphans = 0;
    const otc_plan *pl = j->train.plan;
    size_t most = 0;
    int n = 0;
    for (otc_id id = 0; id < j->n; id++) {
        const otc_node *nd = otc_graph_node(j->base.graph, id);
        if (nd->op != OTC_OP_PARAMETER || !nd->trainable) continue;
        if (pl->values[id].storage == OTC_STORE_PARAM) continue;
        n++;
        if (nd->value->size > most) most = nd->value->size;
    }
    if (n == 0) return OTC_OK;
    free(j->orphan_p);
    free(j->orphan_g);
    free(j->orphan_n);
    free(j->zeros);
    j->orphan_p = calloc((size_t)n, sizeof *j->orphan_p);
    j->orphan_g = calloc((size_t)n, sizeof *j->orphan_g);
    j->orphan_n = calloc((size_t)n, sizeof *j->orphan_n);
    j->zeros = calloc(most + 1, sizeof(float));
    j->orphan_opt = otc_optimizer_new(c);
    if (!j->orphan_p || !j->orphan_g || !j->orphan_n || !j->zeros || !j->orphan_opt)
        return otc_fail(OTC_ERR_NOMEM, "out of memory for optimiser state");
    for (otc_id id = 0; id < j->n; id++) {
        otc_node const *nd = otc_graph_node(j->base.graph, id);
        if (nd->op != OTC_OP_PARAMETER || !nd->trainable) continue;
        if (pl->values[id].storage == OTC_STORE_PARAM) continue;
        otc_tensor *t = otc_graph_param(j->base.graph, id);
        j->orphan_p[j->n_orphans] = t->data;
        j->orphan_g[j->n_orphans] = j->zeros;
        j->orphan_n[j->n_orphans++] = t->size;
    }
    return OTC_OK;
}

/* The training plan's weights were just updated: they are now the newest (a forward plan
 * sharing them is current too; the others refresh from them). */
static void train_weights_newest(jit_exec *j) {
    j->wver++;
    j->train.wver = j->wver;
    if (j->has_fwd && j->fwd.weights == j->train.weights) j->fwd.wver = j->wver;
    j->wsrc = &j->train;
}

/* The training plan for loss and optimiser state for opt (fresh moments for a new opt). */
static otc_status train_prepare(jit_exec *j, otc_id loss, otc_optimizer *opt) {
    if (j->o.inference)
        return otc_fail(OTC_ERR_STATE, "train_step: this executor was built for inference");
    if (!opt) return otc_fail(OTC_ERR_ARG, "train_step: no optimiser");
    const otc_optim_config *c = otc_optimizer_config(opt);
    otc_status st = ensure_train(j, loss, c);
    if (st) return st;
    const otc_plan *pl = j->train.plan;
    if (j->opt != opt || !j->state) {
        /* A new optimiser: fresh moments, step count from zero. */
        free(j->state);
        j->state = calloc(2 * (size_t)pl->param_floats + 1, sizeof(float));
        if (!j->state) return otc_fail(OTC_ERR_NOMEM, "out of memory for optimiser state");
        j->opt = opt;
        j->t = 0;
        st = orphans_ready(j, c);
        if (st) return st;
    }
    return OTC_OK;
}

static otc_status train_step(otc_executor *ex, otc_id loss, otc_optimizer *opt, float *loss_value) {
    jit_exec *j = as_jit(ex);
    otc_status st = otc_lvx_seq_catch_up(j, NULL); /* before the weights change */
    if (!st) st = train_prepare(j, loss, opt);
    if (st) return st;
    const otc_optim_config *c = otc_optimizer_config(opt);
    otc_llvm_args a;
    st = prepare(j, &j->train, &a);
    if (!st) st = grads_for(j, &a);
    if (st) return st;
    /* The interpreter's rule and scalars (runtime/src/train/optim_rules.c). */
    long t = j->t + 1;
    float h[OTC_LH_COUNT];
    h[OTC_LH_RULE] = (float)otc_optim_rule_of(c);
    otc_optim_step_args(c, t, h + OTC_LH_ARGS);
    float lv = 0.0f;
    a.state = j->state;
    a.hyper = h;
    a.loss = &lv;
    j->last = NULL;
    st = run_status(j, j->train.mod->fn[OTC_JIT_TRAIN_STEP](&a));
    if (st) return st;
    j->t = t;
    if (j->n_orphans > 0) {
        otc_optimizer_set_lr(j->orphan_opt, c->lr);
        st = otc_optimizer_step(j->orphan_opt, j->n_orphans, j->orphan_p, j->orphan_g, j->orphan_n);
        if (st) return st;
    }
    train_weights_newest(j);
    j->last = &j->train;
    if (loss_value) *loss_value = lv;
    return OTC_OK;
}

otc_status otc_lvx_update(jit_exec *j, const float *hyper, float *state) {
    otc_lvx_refresh_weights(j, &j->train);
    otc_llvm_args a = {0};
    a.weights = j->train.weights;
    a.grads = j->grads;
    a.state = state;
    a.hyper = hyper;
    otc_status st = run_status(j, j->train.mod->fn[OTC_JIT_UPDATE](&a));
    if (st) return st;
    train_weights_newest(j);
    return OTC_OK;
}

static void reset_state(otc_executor *ex) {
    jit_exec *j = as_jit(ex);
    /* Deferred steps run first (their values stay readable); a failure there leaves the
     * values stale, which value() reports. */
    if (otc_lvx_seq_catch_up(j, NULL)) j->last = NULL;
    j->fwd.state_batch = 0;
    j->train.state_batch = 0;
    j->fwdl.state_batch = 0;
    j->live = NULL;
    otc_lvx_seq_cut(j);
}

static otc_status sync_params(otc_executor *ex) {
    jit_exec *j = as_jit(ex);
    jit_plan *p = j->wsrc;
    if (!p) return OTC_OK; /* never trained: the graph holds the same values */
    for (int i = 0; i < p->plan->n_params; i++) {
        otc_id id = p->plan->params[i];
        otc_tensor *t = otc_graph_param(ex->graph, id);
        if (!t) continue;
        memcpy(t->data, p->weights + p->plan->values[id].param_offset, t->size * sizeof(float));
    }
    return OTC_OK;
}

const otc_executor_vtable otc_lvx_vtable = {
    "jit",
    otc_lvx_destroy,
    set_input,
    forward,
    value,
    backward,
    grad,
    zero_grad,
    train_step,
    reset_state,
    sync_params,
    otc_lvx_seq_begin,
    otc_lvx_seq_backward,
    otc_lvx_seq_state_grad,
    otc_lvx_set_state,
    otc_lvx_optimizer_step,
};
