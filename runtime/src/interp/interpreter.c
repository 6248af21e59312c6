/* The interpreter backend: runs a graph node by node in topological order through the op
 * table's kernels, with buffers laid out once per batch size (no allocation per forward at a
 * fixed batch), reverse-mode gradients, the training step, and backpropagation through time
 * over recorded steps (each step's values copied to a tape, replayed in reverse). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/executor.h"
#include "otc/limits.h"
#include "kernels.h"

/* One forward step: the kernel, or NULL for a Delay, which copies its state (index delay). */
typedef struct {
    otc_forward_kernel fn;
    otc_id id;
    int delay;
} fwd_step;

typedef struct {
    otc_executor base;
    bool inference;
    int n;
    otc_id *order;
    const otc_op_def **def; /* per node */
    const otc_node **node;  /* per node (stable while the graph does not change) */

    /* Per node, for the current batch. */
    otc_shape *shape;
    size_t *size;
    float **val;
    float **grad; /* NULL where no gradient is kept */
    bool *needs_grad;

    /* Kernel arguments, built by layout(): per node, plus flat per-edge tables. */
    otc_kernel_args *args;
    const float **edge_in;
    otc_shape *edge_shape;
    float **edge_grad;
    fwd_step *steps;
    int n_steps;

    /* Inputs: staged data (the Input's value buffer), capacity, batch (-1 unset, 0 set and
     * unbatched). */
    int n_inputs;
    otc_id *inputs;
    float **in_data;
    size_t *in_cap;
    int *in_batch;

    /* Delay nodes: the state each outputs on the next forward. */
    int n_delays;
    otc_id *delays;
    float **state;

    /* Parameters in id order, their persistent gradients, and the optimiser's tables. */
    int n_params;
    otc_id *params;
    float **opt_params;
    const float **opt_grads;
    size_t *opt_sizes;

    /* Value and intermediate-gradient arenas, grown to the largest batch seen; vals_used is
     * what the current layout uses. */
    float *vals;
    size_t vals_cap, vals_used;
    float *grads;
    size_t grads_cap;

    int batch;         /* batch of the current layout, -1 before the first */
    bool layout_valid; /* pointer tables match the buffers */
    bool values_valid; /* a forward ran since the last set_input / layout change */

    /* Backward plan for bw_loss: nodes whose kernels run (reverse topological order) and
     * intermediate gradients zeroed first. */
    otc_id bw_loss;
    int n_bw, n_zero;
    otc_id *bw_nodes, *zero_nodes;
    bool *mark;
    bool bw_seq; /* the plan also starts from the Delay sources (BPTT) */

    /* BPTT: while rec_max > 0 every forward appends its step to the tape: the value arena
     * (vals_used floats) then every input's data, slot floats per step. cut[t]: the state was
     * reset or set before step t, so no gradient crosses from t to t-1. */
    int rec_max, rec_n, rec_batch;
    bool pending_cut;
    float *tape;
    size_t tape_cap, slot;
    bool *cut;
    int cut_cap;
    float **carry;      /* per Delay: gradient reaching its value, passed to the step before */
    bool state_grad_ok; /* carry holds the initial state's gradient (after seq_backward) */
} interp;

static interp *as_interp(otc_executor *ex) {
    return (interp *)ex;
}

static const char *label(const interp *it, otc_id id, char *buf) {
    return otc_graph_node_label(it->base.graph, id, buf, 64);
}

static void destroy(otc_executor *ex) {
    interp *it = as_interp(ex);
    if (it->in_data)
        for (int i = 0; i < it->n_inputs; i++) free(it->in_data[i]);
    if (it->state)
        for (int i = 0; i < it->n_delays; i++) free(it->state[i]);
    if (it->grad && it->params)
        for (int i = 0; i < it->n_params; i++) free(it->grad[it->params[i]]);
    if (it->carry)
        for (int i = 0; i < it->n_delays; i++) free(it->carry[i]);
    free(it->carry);
    free(it->tape);
    free(it->cut);
    free(it->order);
    free(it->def);
    free(it->node);
    free(it->shape);
    free(it->size);
    free(it->val);
    free(it->grad);
    free(it->needs_grad);
    free(it->args);
    free(it->edge_in);
    free(it->edge_shape);
    free(it->edge_grad);
    free(it->steps);
    free(it->inputs);
    free(it->in_data);
    free(it->in_cap);
    free(it->in_batch);
    free(it->delays);
    free(it->state);
    free(it->params);
    free(it->opt_params);
    free(it->opt_grads);
    free(it->opt_sizes);
    free(it->vals);
    free(it->grads);
    free(it->bw_nodes);
    free(it->zero_nodes);
    free(it->mark);
    free(it);
}

/* Index of an Input node in it->inputs, or -1. */
static int input_index(const interp *it, otc_id id) {
    for (int i = 0; i < it->n_inputs; i++)
        if (it->inputs[i] == id) return i;
    return -1;
}

static bool grow(float **buf, size_t *cap, size_t need) {
    if (need <= *cap && *buf) return true;
    float *p = realloc(*buf, (need ? need : 1) * sizeof(float));
    if (!p) return false;
    *buf = p;
    *cap = need;
    return true;
}

/* Resolve shapes for `batch`, place every value and gradient, and rebuild the kernel
 * argument tables. Runs when the batch changes or a buffer moved, never per forward. */
static otc_status layout(interp *it, int batch) {
    size_t vals_need = 0, grads_need = 0;
    for (int id = 0; id < it->n; id++) {
        it->shape[id] = otc_shape_resolve(it->node[id]->shape, batch);
        it->size[id] = otc_kshape_size(it->shape[id]);
        otc_op op = it->node[id]->op;
        if (op != OTC_OP_INPUT && op != OTC_OP_PARAMETER) vals_need += it->size[id];
        if (it->needs_grad[id] && op != OTC_OP_PARAMETER) grads_need += it->size[id];
    }
    if (!grow(&it->vals, &it->vals_cap, vals_need) ||
        (!it->inference && !grow(&it->grads, &it->grads_cap, grads_need)))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for the values of a batch of %d", batch);
    /* A batch change resets Delay state: the old state has the old batch's rows. */
    if (batch != it->batch) {
        for (int i = 0; i < it->n_delays; i++) {
            otc_id d = it->delays[i];
            size_t bytes = (it->size[d] ? it->size[d] : 1) * sizeof(float);
            float *s = realloc(it->state[i], bytes);
            float *c = it->inference ? NULL : realloc(it->carry[i], bytes);
            if (!s || (!it->inference && !c)) {
                if (s) it->state[i] = s;
                if (c) it->carry[i] = c;
                return otc_fail(OTC_ERR_NOMEM, "out of memory for delay state");
            }
            it->state[i] = s;
            if (c) it->carry[i] = c;
            memset(s, 0, it->size[d] * sizeof(float));
        }
        it->pending_cut = true;
        it->state_grad_ok = false;
    }
    it->vals_used = vals_need;
    size_t vo = 0, go = 0;
    for (int id = 0; id < it->n; id++) {
        otc_op op = it->node[id]->op;
        if (op == OTC_OP_INPUT) {
            it->val[id] = it->in_data[input_index(it, id)];
        } else if (op == OTC_OP_PARAMETER) {
            it->val[id] = it->node[id]->value->data;
        } else {
            it->val[id] = it->vals + vo;
            vo += it->size[id];
            if (it->needs_grad[id]) {
                it->grad[id] = it->grads + go;
                go += it->size[id];
            }
        }
    }
    size_t e = 0;
    for (int id = 0; id < it->n; id++) {
        const otc_node *nd = it->node[id];
        otc_kernel_args *a = &it->args[id];
        a->node = nd;
        a->batch = batch;
        a->n_in = nd->n_inputs;
        a->in = it->edge_in + e;
        a->in_shape = it->edge_shape + e;
        a->in_grad = it->edge_grad + e;
        a->out = it->val[id];
        a->out_shape = it->shape[id];
        a->out_grad = it->grad ? it->grad[id] : NULL;
        for (int j = 0; j < nd->n_inputs; j++, e++) {
            otc_id src = nd->inputs[j];
            it->edge_in[e] = it->val[src];
            it->edge_shape[e] = it->shape[src];
            it->edge_grad[e] = it->grad && it->needs_grad[src] ? it->grad[src] : NULL;
        }
    }
    it->batch = batch;
    it->layout_valid = true;
    it->values_valid = false;
    return OTC_OK;
}

static otc_status set_input(otc_executor *ex, otc_id id, const float *data, int batch) {
    interp *it = as_interp(ex);
    char lab[64];
    int k = input_index(it, id);
    if (k < 0) return otc_fail(OTC_ERR_ARG, "set_input: node #%d is not an input", (int)id);
    if (!data) return otc_fail(OTC_ERR_ARG, "set_input: no data for %s", label(it, id, lab));
    otc_shape s = it->node[id]->shape;
    bool batched = otc_shape_is_batched(s);
    if (batched && batch < 1)
        return otc_fail(OTC_ERR_ARG, "set_input: batch %d for %s (must be >= 1)", batch,
                        label(it, id, lab));
    size_t n = otc_shape_size(s) * (batched ? (size_t)batch : 1);
    float *old = it->in_data[k];
    if (!grow(&it->in_data[k], &it->in_cap[k], n))
        return otc_fail(OTC_ERR_NOMEM, "set_input: out of memory for %s", label(it, id, lab));
    if (it->in_data[k] != old) it->layout_valid = false;
    memcpy(it->in_data[k], data, n * sizeof(float));
    it->in_batch[k] = batched ? batch : 0;
    it->values_valid = false;
    return OTC_OK;
}

/* The batch of this forward from the inputs set; 1 when nothing is batched. */
static otc_status resolve_batch(interp *it, int *batch) {
    char lab[64], lab2[64];
    int b = -1, from = -1;
    for (int k = 0; k < it->n_inputs; k++) {
        otc_id id = it->inputs[k];
        if (it->in_batch[k] < 0)
            return otc_fail(OTC_ERR_STATE, "forward: input %s was not set", label(it, id, lab));
        if (it->in_batch[k] == 0) continue;
        if (b < 0) {
            b = it->in_batch[k];
            from = id;
        } else if (it->in_batch[k] != b) {
            return otc_fail(OTC_ERR_SHAPE, "forward: input %s has batch %d but input %s has %d",
                            label(it, id, lab), it->in_batch[k], label(it, from, lab2), b);
        }
    }
    *batch = b < 0 ? 1 : b;
    return OTC_OK;
}

/* Floats one recorded step takes: the value arena and every input's data. */
static size_t slot_size(const interp *it) {
    size_t n = it->vals_used;
    for (int k = 0; k < it->n_inputs; k++) n += it->size[it->inputs[k]];
    return n;
}

/* Copy the step's values to tape slot t (to_tape) or back from it. */
static void tape_copy(interp *it, int t, bool to_tape) {
    float *p = it->tape + (size_t)t * it->slot;
    if (to_tape)
        memcpy(p, it->vals, it->vals_used * sizeof(float));
    else
        memcpy(it->vals, p, it->vals_used * sizeof(float));
    p += it->vals_used;
    for (int k = 0; k < it->n_inputs; k++) {
        size_t n = it->size[it->inputs[k]];
        if (to_tape)
            memcpy(p, it->in_data[k], n * sizeof(float));
        else
            memcpy(it->in_data[k], p, n * sizeof(float));
        p += n;
    }
}

/* Append the step forward just computed to the tape, sized at the first step. */
static otc_status record_step(interp *it, int batch) {
    if (it->rec_n == 0) {
        it->rec_batch = batch;
        it->slot = slot_size(it);
        uint64_t need = (uint64_t)it->rec_max * it->slot;
        char what[96];
        snprintf(what, sizeof what, "the record of a sequence of %d steps at batch %d", it->rec_max,
                 batch);
        otc_status st = otc_memory_check(need * sizeof(float), what);
        if (st) return st;
        if (!grow(&it->tape, &it->tape_cap, (size_t)need))
            return otc_fail(OTC_ERR_NOMEM, "out of memory for %s", what);
    }
    tape_copy(it, it->rec_n, true);
    it->cut[it->rec_n] = it->pending_cut;
    it->pending_cut = false;
    it->rec_n++;
    return OTC_OK;
}

static otc_status forward(otc_executor *ex) {
    interp *it = as_interp(ex);
    char lab[64];
    if (otc_graph_size(ex->graph) != it->n)
        return otc_fail(OTC_ERR_STATE,
                        "forward: the graph changed (%d nodes, the executor was built for %d)",
                        otc_graph_size(ex->graph), it->n);
    int batch = 1;
    otc_status st = resolve_batch(it, &batch);
    if (st) return st;
    if (it->rec_max > 0) {
        if (it->rec_n >= it->rec_max)
            return otc_fail(OTC_ERR_STATE,
                            "forward: the sequence record is full (%d steps, the max_steps of "
                            "seq_begin)",
                            it->rec_max);
        if (it->rec_n > 0 && batch != it->rec_batch)
            return otc_fail(OTC_ERR_SHAPE,
                            "forward: batch %d in a sequence recorded at batch %d (one sequence "
                            "length per batch: bucket the sequences)",
                            batch, it->rec_batch);
    }
    /* Parameter tensors may have been replaced through otc_graph_param. */
    for (int i = 0; i < it->n_params && it->layout_valid; i++)
        if (it->val[it->params[i]] != it->node[it->params[i]]->value->data)
            it->layout_valid = false;
    if (batch != it->batch || !it->layout_valid) {
        st = layout(it, batch);
        if (st) return st;
    }
    it->values_valid = false;
    for (int s = 0; s < it->n_steps; s++) {
        const fwd_step *step = &it->steps[s];
        if (!step->fn) {
            memcpy(it->val[step->id], it->state[step->delay], it->size[step->id] * sizeof(float));
            continue;
        }
        st = step->fn(&it->args[step->id]);
        if (st) return otc_fail_context(st, "node %s", label(it, step->id, lab));
    }
    for (int k = 0; k < it->n_delays; k++) {
        otc_id d = it->delays[k];
        memcpy(it->state[k], it->val[it->node[d]->inputs[0]], it->size[d] * sizeof(float));
    }
    it->values_valid = true;
    if (it->rec_max > 0) {
        st = record_step(it, batch);
        if (st) return st;
    }
    return OTC_OK;
}

static otc_status value(otc_executor *ex, otc_id id, const float **data, otc_shape *shape) {
    interp *it = as_interp(ex);
    if (id < 0 || id >= it->n) return otc_fail(OTC_ERR_ARG, "value: no node #%d", (int)id);
    if (!data) return otc_fail(OTC_ERR_ARG, "value: data is NULL");
    if (!it->values_valid)
        return otc_fail(OTC_ERR_STATE, "value: run forward first (after setting the inputs)");
    *data = it->val[id];
    if (shape) *shape = it->shape[id];
    return OTC_OK;
}

/* Which nodes the reverse pass from `loss` visits: ancestors of loss through edges that
 * carry gradient, in reverse topological order. */
static void plan_backward(interp *it, otc_id loss, bool seq) {
    memset(it->mark, 0, (size_t)it->n * sizeof(bool));
    it->mark[loss] = true;
    /* Through time, a Delay's gradient also enters at its source (from the next step). */
    for (int k = 0; seq && k < it->n_delays; k++) {
        otc_id src = it->node[it->delays[k]]->inputs[0];
        if (it->needs_grad[src]) it->mark[src] = true;
    }
    it->n_bw = it->n_zero = 0;
    for (int p = it->n - 1; p >= 0; p--) {
        otc_id id = it->order[p];
        if (!it->mark[id] || !it->needs_grad[id]) continue;
        const otc_node *nd = it->node[id];
        if (nd->op != OTC_OP_PARAMETER) it->zero_nodes[it->n_zero++] = id;
        if (!it->def[id]->backward) continue;
        it->bw_nodes[it->n_bw++] = id;
        for (int j = 0; j < nd->n_inputs; j++)
            if (it->needs_grad[nd->inputs[j]]) it->mark[nd->inputs[j]] = true;
    }
    it->bw_loss = loss;
    it->bw_seq = seq;
}

static otc_status backward(otc_executor *ex, otc_id loss) {
    interp *it = as_interp(ex);
    char lab[64], shp[64];
    if (it->inference)
        return otc_fail(OTC_ERR_STATE, "backward: this executor was built for inference");
    if (loss < 0 || loss >= it->n) return otc_fail(OTC_ERR_ARG, "backward: no node #%d", (int)loss);
    if (!it->values_valid)
        return otc_fail(OTC_ERR_STATE, "backward: run forward first (after setting the inputs)");
    if (it->size[loss] != 1)
        return otc_fail(OTC_ERR_SHAPE, "backward: loss %s has shape %s, not a single value",
                        label(it, loss, lab), otc_shape_str(it->shape[loss], shp, sizeof shp));
    /* No parameter reaches the loss: nothing to accumulate. */
    if (!it->needs_grad[loss]) return OTC_OK;
    if (it->bw_loss != loss || it->bw_seq) plan_backward(it, loss, false);
    for (int i = 0; i < it->n_zero; i++) {
        otc_id id = it->zero_nodes[i];
        memset(it->grad[id], 0, it->size[id] * sizeof(float));
    }
    it->grad[loss][0] += 1.0f;
    for (int i = 0; i < it->n_bw; i++) {
        otc_id id = it->bw_nodes[i];
        it->def[id]->backward(&it->args[id]);
    }
    return OTC_OK;
}

static otc_status grad(otc_executor *ex, otc_id id, const float **data) {
    interp *it = as_interp(ex);
    if (it->inference)
        return otc_fail(OTC_ERR_STATE, "grad: this executor was built for inference");
    if (id < 0 || id >= it->n || it->node[id]->op != OTC_OP_PARAMETER)
        return otc_fail(OTC_ERR_ARG, "grad: node #%d is not a parameter", (int)id);
    if (!data) return otc_fail(OTC_ERR_ARG, "grad: data is NULL");
    *data = it->grad[id];
    return OTC_OK;
}

static void zero_grad(otc_executor *ex) {
    interp *it = as_interp(ex);
    if (it->inference) return;
    for (int i = 0; i < it->n_params; i++) {
        otc_id p = it->params[i];
        memset(it->grad[p], 0, it->node[p]->value->size * sizeof(float));
    }
}

static otc_status optimizer_step(otc_executor *ex, otc_optimizer *opt);

static otc_status train_step(otc_executor *ex, otc_id loss, otc_optimizer *opt, float *loss_value) {
    interp *it = as_interp(ex);
    if (it->inference)
        return otc_fail(OTC_ERR_STATE, "train_step: this executor was built for inference");
    if (!opt) return otc_fail(OTC_ERR_ARG, "train_step: no optimiser");
    zero_grad(ex);
    otc_status st = forward(ex);
    if (!st) st = backward(ex, loss);
    if (!st) st = optimizer_step(ex, opt);
    if (st) return st;
    if (loss_value) *loss_value = it->val[loss][0];
    return OTC_OK;
}

static otc_status optimizer_step(otc_executor *ex, otc_optimizer *opt) {
    interp *it = as_interp(ex);
    if (it->inference)
        return otc_fail(OTC_ERR_STATE, "optimizer_step: this executor was built for inference");
    if (!opt) return otc_fail(OTC_ERR_ARG, "optimizer_step: no optimiser");
    int k = 0;
    for (int i = 0; i < it->n_params; i++) {
        const otc_node *p = it->node[it->params[i]];
        if (!p->trainable) continue;
        it->opt_params[k] = p->value->data;
        it->opt_grads[k] = it->grad[it->params[i]];
        it->opt_sizes[k] = p->value->size;
        k++;
    }
    return otc_optimizer_step(opt, k, it->opt_params, it->opt_grads, it->opt_sizes);
}

static void reset_state(otc_executor *ex) {
    interp *it = as_interp(ex);
    if (it->batch < 0) return; /* no state allocated yet: it starts at zeros */
    for (int k = 0; k < it->n_delays; k++)
        memset(it->state[k], 0, it->size[it->delays[k]] * sizeof(float));
    it->pending_cut = true;
}

static otc_status seq_begin(otc_executor *ex, int max_steps) {
    interp *it = as_interp(ex);
    if (it->inference)
        return otc_fail(OTC_ERR_STATE, "seq_begin: this executor was built for inference");
    if (max_steps < 1 || max_steps > OTC_MAX_SEQ_STEPS)
        return otc_fail(OTC_ERR_ARG, "seq_begin: max_steps %d outside 1..%d", max_steps,
                        OTC_MAX_SEQ_STEPS);
    if (max_steps > it->cut_cap) {
        bool *c = realloc(it->cut, (size_t)max_steps * sizeof *c);
        if (!c)
            return otc_fail(OTC_ERR_NOMEM, "out of memory for a sequence of %d steps", max_steps);
        it->cut = c;
        it->cut_cap = max_steps;
    }
    it->rec_max = max_steps;
    it->rec_n = 0;
    it->pending_cut = false;
    it->state_grad_ok = false;
    return OTC_OK;
}

/* Reverse over the tape: per step, restore its values, seed the loss (weighted) and the
 * Delay sources (the gradient their Delay got at the next step), run the backward kernels,
 * and take each Delay's gradient along to the step before. */
static otc_status seq_backward(otc_executor *ex, otc_id loss, const float *weight) {
    interp *it = as_interp(ex);
    char lab[64], shp[64];
    if (it->inference)
        return otc_fail(OTC_ERR_STATE, "seq_backward: this executor was built for inference");
    if (it->rec_max == 0 || it->rec_n == 0)
        return otc_fail(OTC_ERR_STATE,
                        "seq_backward: no recorded steps (seq_begin, then forward each step)");
    if (loss < 0 || loss >= it->n)
        return otc_fail(OTC_ERR_ARG, "seq_backward: no node #%d", (int)loss);
    if (it->size[loss] != 1)
        return otc_fail(OTC_ERR_SHAPE, "seq_backward: loss %s has shape %s, not a single value",
                        label(it, loss, lab), otc_shape_str(it->shape[loss], shp, sizeof shp));
    int T = it->rec_n;
    it->rec_max = 0; /* the recording ends here, whatever happens */
    if (!it->needs_grad[loss]) return OTC_OK;
    if (it->bw_loss != loss || !it->bw_seq) plan_backward(it, loss, true);
    for (int k = 0; k < it->n_delays; k++)
        memset(it->carry[k], 0, it->size[it->delays[k]] * sizeof(float));
    for (int t = T - 1; t >= 0; t--) {
        tape_copy(it, t, false);
        for (int i = 0; i < it->n_zero; i++) {
            otc_id id = it->zero_nodes[i];
            memset(it->grad[id], 0, it->size[id] * sizeof(float));
        }
        it->grad[loss][0] += weight ? weight[t] : 1.0f;
        for (int k = 0; k < it->n_delays; k++) {
            otc_id src = it->node[it->delays[k]]->inputs[0];
            if (!it->mark[src] || !it->needs_grad[src]) continue;
            float *g = it->grad[src];
            const float *c = it->carry[k];
            for (size_t i = 0; i < it->size[src]; i++) g[i] += c[i];
        }
        for (int i = 0; i < it->n_bw; i++) {
            otc_id id = it->bw_nodes[i];
            it->def[id]->backward(&it->args[id]);
        }
        for (int k = 0; k < it->n_delays; k++) {
            otc_id d = it->delays[k];
            size_t bytes = it->size[d] * sizeof(float);
            if (it->mark[d] && it->needs_grad[d] && !(t > 0 && it->cut[t]))
                memcpy(it->carry[k], it->grad[d], bytes);
            else
                memset(it->carry[k], 0, bytes);
        }
    }
    tape_copy(it, T - 1, false);
    it->state_grad_ok = true;
    return OTC_OK;
}

static int delay_index(const interp *it, otc_id id) {
    for (int k = 0; k < it->n_delays; k++)
        if (it->delays[k] == id) return k;
    return -1;
}

static otc_status seq_state_grad(otc_executor *ex, otc_id delay, const float **data) {
    interp *it = as_interp(ex);
    int k = delay_index(it, delay);
    if (k < 0) return otc_fail(OTC_ERR_ARG, "seq_state_grad: node #%d is not a delay", (int)delay);
    if (!data) return otc_fail(OTC_ERR_ARG, "seq_state_grad: data is NULL");
    if (it->inference || !it->state_grad_ok)
        return otc_fail(OTC_ERR_STATE, "seq_state_grad: run seq_backward first");
    *data = it->carry[k];
    return OTC_OK;
}

static otc_status set_state(otc_executor *ex, otc_id delay, const float *data, int batch) {
    interp *it = as_interp(ex);
    char lab[64];
    int k = delay_index(it, delay);
    if (k < 0) return otc_fail(OTC_ERR_ARG, "set_state: node #%d is not a delay", (int)delay);
    if (!data) return otc_fail(OTC_ERR_ARG, "set_state: no data for %s", label(it, delay, lab));
    if (!otc_shape_is_batched(it->node[delay]->shape)) batch = 1;
    if (batch < 1)
        return otc_fail(OTC_ERR_ARG, "set_state: batch %d for %s (must be >= 1)", batch,
                        label(it, delay, lab));
    if (it->rec_max > 0 && it->rec_n > 0 && batch != it->rec_batch)
        return otc_fail(OTC_ERR_SHAPE, "set_state: batch %d in a sequence recorded at batch %d",
                        batch, it->rec_batch);
    if (batch != it->batch) {
        otc_status st = layout(it, batch);
        if (st) return st;
    }
    memcpy(it->state[k], data, it->size[delay] * sizeof(float));
    it->pending_cut = true;
    return OTC_OK;
}

static otc_status sync_params(otc_executor *ex) {
    return OTC_OK;
}

static const otc_executor_vtable interp_vtable = {
    "interpreter", destroy,        set_input,  forward,        value,       backward,
    grad,          zero_grad,      train_step, reset_state,    sync_params, seq_begin,
    seq_backward,  seq_state_grad, set_state,  optimizer_step,
};

#define ALLOC(ptr, count) ((ptr) = calloc((size_t)(count) ? (size_t)(count) : 1, sizeof *(ptr)))

/* Which nodes keep a gradient: Parameters (trainable or frozen, so any parameter's gradient
 * can be read), every node computed from one through a differentiable op, and a Delay whose
 * source has one (BPTT carries it to the step before; a plain backward stops there).
 * Inputs and Detach do not. A Delay's edge goes back in the order, so repeat until stable. */
static void mark_gradients(interp *it) {
    bool changed = true;
    while (changed) {
        changed = false;
        for (int p = 0; p < it->n; p++) {
            otc_id id = it->order[p];
            const otc_node *nd = it->node[id];
            bool need = false;
            if (nd->op == OTC_OP_PARAMETER)
                need = true;
            else if (nd->op == OTC_OP_DELAY)
                need = it->needs_grad[nd->inputs[0]];
            else if (it->def[id]->backward)
                for (int j = 0; j < nd->n_inputs && !need; j++)
                    need = it->needs_grad[nd->inputs[j]];
            if (need != it->needs_grad[id]) changed = true;
            it->needs_grad[id] = need;
        }
    }
}

otc_executor *otc_interpreter_new(otc_graph *g, const otc_exec_options *options) {
    char lab[64];
    if (!g) {
        otc_fail(OTC_ERR_ARG, "interpreter: no graph");
        return NULL;
    }
    interp *it = calloc(1, sizeof *it);
    if (!it) {
        otc_fail(OTC_ERR_NOMEM, "out of memory for an interpreter");
        return NULL;
    }
    it->base.vt = &interp_vtable;
    it->base.graph = g;
    it->inference = options && options->inference;
    it->n = otc_graph_size(g);
    it->batch = -1;
    it->bw_loss = -1;
    int n = it->n, edges = 0;
    bool ok = ALLOC(it->order, n) && ALLOC(it->def, n) && ALLOC(it->node, n) &&
              ALLOC(it->shape, n) && ALLOC(it->size, n) && ALLOC(it->val, n) &&
              ALLOC(it->needs_grad, n) && ALLOC(it->args, n) && ALLOC(it->steps, n) &&
              ALLOC(it->bw_nodes, n) && ALLOC(it->zero_nodes, n) && ALLOC(it->mark, n);
    if (ok && !it->inference) ok = ALLOC(it->grad, n);
    if (!ok) goto nomem;
    otc_status st = otc_graph_topo_order(g, it->order);
    if (st) goto fail;
    for (int id = 0; id < n; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        it->node[id] = nd;
        it->def[id] = otc_op_def_get(nd->op);
        edges += nd->n_inputs;
        if (!it->def[id]) {
            otc_fail(OTC_ERR_UNSUPPORTED, "interpreter: node %s has unknown op %d",
                     label(it, id, lab), (int)nd->op);
            goto fail;
        }
        if (nd->op == OTC_OP_INPUT) it->n_inputs++;
        if (nd->op == OTC_OP_DELAY) it->n_delays++;
        if (nd->op == OTC_OP_PARAMETER) {
            if (!nd->value) {
                otc_fail(OTC_ERR_STATE, "interpreter: parameter %s has no value",
                         label(it, id, lab));
                goto fail;
            }
            it->n_params++;
        }
    }
    ok = ALLOC(it->edge_in, edges) && ALLOC(it->edge_shape, edges) && ALLOC(it->edge_grad, edges) &&
         ALLOC(it->inputs, it->n_inputs) && ALLOC(it->in_data, it->n_inputs) &&
         ALLOC(it->in_cap, it->n_inputs) && ALLOC(it->in_batch, it->n_inputs) &&
         ALLOC(it->delays, it->n_delays) && ALLOC(it->state, it->n_delays) &&
         ALLOC(it->carry, it->n_delays) && ALLOC(it->params, it->n_params) &&
         ALLOC(it->opt_params, it->n_params) && ALLOC(it->opt_grads, it->n_params) &&
         ALLOC(it->opt_sizes, it->n_params);
    if (!ok) goto nomem;
    int ki = 0, kd = 0, kp = 0;
    for (int id = 0; id < n; id++) {
        otc_op op = it->node[id]->op;
        if (op == OTC_OP_INPUT) {
            it->in_batch[ki] = -1;
            it->inputs[ki++] = id;
        } else if (op == OTC_OP_DELAY) {
            it->delays[kd++] = id;
        } else if (op == OTC_OP_PARAMETER) {
            it->params[kp++] = id;
        }
    }
    /* The forward program: every node but the sources, in topological order. */
    for (int p = 0; p < n; p++) {
        otc_id id = it->order[p];
        otc_op op = it->node[id]->op;
        if (op == OTC_OP_INPUT || op == OTC_OP_PARAMETER) continue;
        if (op != OTC_OP_DELAY && !it->def[id]->forward) {
            otc_fail(OTC_ERR_UNSUPPORTED, "interpreter: op %s of node %s has no kernel",
                     it->def[id]->info.name, label(it, id, lab));
            goto fail;
        }
        fwd_step step = {it->def[id]->forward, id, -1};
        if (op == OTC_OP_DELAY) {
            step.fn = NULL;
            for (int k = 0; k < it->n_delays; k++)
                if (it->delays[k] == id) step.delay = k;
        }
        it->steps[it->n_steps++] = step;
    }
    if (!it->inference) {
        mark_gradients(it);
        /* Parameter gradients live outside the per-batch arena: they accumulate across
         * calls whatever the batch. */
        for (int i = 0; i < it->n_params; i++) {
            otc_id p = it->params[i];
            if (!ALLOC(it->grad[p], it->node[p]->value->size)) goto nomem;
        }
    }
    return &it->base;
nomem:
    otc_fail(OTC_ERR_NOMEM, "out of memory for an interpreter of %d nodes", n);
fail:
    destroy(&it->base);
    return NULL;
}
