/* The plan's entry point: which nodes a plan computes, in what order, which ops it can
 * lower, the weight layout; then fusion, training marks and buffers (the other plan_*.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

const char *otc_plan_label(const otc_graph *g, otc_id id, char *buf) {
    return otc_graph_node_label(g, id, buf, 64);
}

bool otc_plan_reads_input(const otc_graph *g, otc_id node, int slot) {
    const otc_node *nd = otc_graph_node(g, node);
    if (!nd || slot < 0 || slot >= nd->n_inputs) return false;
    if (nd->op == OTC_OP_ROW_BROADCAST && slot == 1) return false;
    if (nd->op == OTC_OP_DELAY) return false; /* the previous step's value: no order */
    return true;
}

bool otc_plan_is_map_op(otc_op op) {
    const otc_op_info *info = otc_op_get(op);
    return (info && info->kind == OTC_OPKIND_ELEMENTWISE) || op == OTC_OP_ROW_BROADCAST ||
           op == OTC_OP_NEURON;
}

/* Element e of a sample of a Slice along the first axis after the batch is element e + from
 * of its input's sample: a contiguous run of the node-major layout. */
static bool slice_offset(const otc_plan *p, otc_id id, int64_t *from) {
    const otc_node *nd = otc_graph_node(p->graph, id);
    if (!nd || nd->op != OTC_OP_SLICE || nd->axis != 1) return false;
    const otc_node *x = otc_graph_node(p->graph, nd->inputs[0]);
    if (!x || !otc_shape_is_batched(x->shape)) return false;
    int64_t inner = 1;
    for (int d = 2; d < x->shape.ndim; d++) inner *= x->shape.dim[d];
    if (from) *from = (int64_t)nd->start * inner;
    return true;
}

/* Only inference plans: a training plan's backward has no rule for a slice inside a fused
 * elementwise run (its gradient goes to other elements of its input). */
bool otc_plan_slice_as_map(const otc_plan *p, otc_id id) {
    return !p->options.train && slice_offset(p, id, NULL);
}

bool otc_plan_slice_member(const otc_plan *plan, otc_id id, int64_t *from) {
    if (!plan || id < 0 || id >= plan->n_values) return false;
    int k = plan->values[id].kernel;
    if (k < 0 || plan->kernels[k].kind != OTC_KERNEL_MAP) return false;
    return slice_offset(plan, id, from);
}

otc_id otc_plan_owner(const otc_plan *plan, otc_id id) {
    if (!plan || id < 0 || id >= plan->n_values) return id;
    const otc_plan_value *v = &plan->values[id];
    return v->storage == OTC_STORE_ALIAS ? v->alias_of : id;
}

int otc_plan_optim_slots(const otc_optim_config *c) {
    const otc_optim_rule *rule = otc_optim_rule_get(otc_optim_rule_of(c));
    return rule->v ? 2 : rule->m ? 1 : 0;
}

otc_status otc_plan_add_step(otc_plan_ctx *c, otc_plan_step step) {
    otc_plan *p = c->p;
    if (p->n_steps == c->cap_steps) {
        int cap = c->cap_steps ? 2 * c->cap_steps : 64;
        otc_plan_step *s = realloc(p->steps, (size_t)cap * sizeof *s);
        if (!s) return otc_fail(OTC_ERR_NOMEM, "out of memory for plan steps");
        p->steps = s;
        c->cap_steps = cap;
    }
    p->steps[p->n_steps++] = step;
    return OTC_OK;
}

/* Post-order depth-first walk along data edges from the roots: every node after its inputs,
 * and a chain's nodes next to each other (which is what fusion wants). A back edge is a
 * cycle, reported along the walk's stack. `order` may be NULL (marking only). */
static otc_status walk(const otc_graph *g, const otc_id *roots, int n_roots, bool *seen,
                       otc_id *order, int *n_order) {
    int n = otc_graph_size(g);
    unsigned char *colour = calloc((size_t)n + 1, 1);
    otc_id *stack = malloc(((size_t)n + 1) * sizeof *stack);
    int *next = malloc(((size_t)n + 1) * sizeof *next);
    otc_status st = OTC_OK;
    if (!colour || !stack || !next) st = otc_fail(OTC_ERR_NOMEM, "out of memory");
    for (int r = 0; r < n_roots && !st; r++) {
        if (colour[roots[r]] || seen[roots[r]]) continue; /* seen: by an earlier walk */
        int top = 0;
        stack[top++] = roots[r];
        colour[roots[r]] = 1;
        next[roots[r]] = 0;
        while (top > 0 && !st) {
            otc_id v = stack[top - 1];
            const otc_node *nd = otc_graph_node(g, v);
            if (next[v] < nd->n_inputs) {
                int slot = next[v]++;
                if (!otc_plan_reads_input(g, v, slot)) continue;
                otc_id u = nd->inputs[slot];
                if (seen[u] && colour[u] == 0) continue; /* placed by an earlier walk */
                if (colour[u] == 0) {
                    colour[u] = 1;
                    next[u] = 0;
                    stack[top++] = u;
                } else if (colour[u] == 1) {
                    char msg[512], lab[64];
                    size_t used = 0;
                    int from = top - 1;
                    while (stack[from] != u) from--;
                    /* The stack runs from consumers down to inputs: print it the way data
                     * flows, input first. */
                    for (int i = top - 1; i >= from && used < sizeof msg - 80; i--)
                        used += (size_t)snprintf(msg + used, sizeof msg - used, "%s -> ",
                                                 otc_plan_label(g, stack[i], lab));
                    snprintf(msg + used, sizeof msg - used, "%s",
                             otc_plan_label(g, stack[top - 1], lab));
                    st = otc_fail(OTC_ERR_CYCLE, "cycle without a delay node: %s", msg);
                }
            } else {
                colour[v] = 2;
                seen[v] = true;
                if (order) order[(*n_order)++] = v;
                top--;
            }
        }
    }
    free(colour);
    free(stack);
    free(next);
    return st;
}

/* walk, then from the source of every Delay reached, until no Delay adds a node: what a
 * step computes includes what its Delays will hold at the next step. */
static otc_status walk_closed(const otc_graph *g, const otc_id *roots, int n_roots, bool *seen,
                              otc_id *order, int *n_order) {
    otc_status st = walk(g, roots, n_roots, seen, order, n_order);
    int n = otc_graph_size(g);
    for (bool grew = true; grew && !st;) {
        grew = false;
        for (otc_id id = 0; id < n && !st; id++) {
            const otc_node *nd = otc_graph_node(g, id);
            if (!seen[id] || nd->op != OTC_OP_DELAY || seen[nd->inputs[0]]) continue;
            st = walk(g, &nd->inputs[0], 1, seen, order, n_order);
            grew = true;
        }
    }
    return st;
}

/* Can the compiler lower this node? Errors name the op and the node. */
static otc_status check_node(const otc_plan_ctx *c, otc_id id) {
    const otc_graph *g = c->g;
    const otc_node *nd = otc_graph_node(g, id);
    char lab[64], shp[64];
    const char *op = otc_op_get(nd->op) ? otc_op_get(nd->op)->name : "?";
    switch (nd->op) {
    case OTC_OP_DELAY:
        if (c->p->options.train)
            return otc_fail(OTC_ERR_UNSUPPORTED,
                            "compiler: op '%s' (node %s): a training plan is feed-forward; "
                            "train a recurrent graph through time unrolled (otc_unroll, the "
                            "executors' seq_ calls, otc compile --train --bptt K)",
                            op, otc_plan_label(g, id, lab));
        if (!otc_shape_is_batched(nd->shape))
            return otc_fail(OTC_ERR_UNSUPPORTED,
                            "compiler: delay %s has shape %s; compiled state must be per-sample "
                            "(a leading batch dimension)",
                            otc_plan_label(g, id, lab), otc_shape_str(nd->shape, shp, 64));
        return OTC_OK;
    case OTC_OP_INPUT:
        if (!otc_shape_is_batched(nd->shape))
            return otc_fail(OTC_ERR_UNSUPPORTED,
                            "compiler: input %s has shape %s; compiled inputs must be per-sample "
                            "(a leading batch dimension)",
                            otc_plan_label(g, id, lab), otc_shape_str(nd->shape, shp, 64));
        return OTC_OK;
    case OTC_OP_NEURON:
        if (otc_act_get((otc_act)nd->act) == NULL)
            return otc_fail(OTC_ERR_UNSUPPORTED, "compiler: neuron %s has unknown activation %d",
                            otc_plan_label(g, id, lab), nd->act);
        if (!otc_agg_name(nd->agg))
            return otc_fail(OTC_ERR_UNSUPPORTED, "compiler: neuron %s has unknown aggregation %d",
                            otc_plan_label(g, id, lab), nd->agg);
        if (nd->agg == OTC_AGG_MEDIAN && nd->n_inputs - 2 > OTC_PLAN_MEDIAN_MAX)
            return otc_fail(OTC_ERR_UNSUPPORTED,
                            "compiler: neuron %s takes the median of %d inputs; compiled medians "
                            "(a sorting network) take at most %d",
                            otc_plan_label(g, id, lab), nd->n_inputs - 2, OTC_PLAN_MEDIAN_MAX);
        return OTC_OK;
    default:
        if (nd->op < 0 || nd->op >= OTC_OP_COUNT || !otc_op_get(nd->op))
            return otc_fail(OTC_ERR_UNSUPPORTED, "compiler: node %s has unknown op %d",
                            otc_plan_label(g, id, lab), (int)nd->op);
        if (otc_op_get(nd->op)->act >= 0 && !otc_act_get((otc_act)otc_op_get(nd->op)->act))
            return otc_fail(OTC_ERR_UNSUPPORTED, "compiler: op '%s' (node %s) has no activation",
                            op, otc_plan_label(g, id, lab));
        return OTC_OK;
    }
}

/* Parameters either plan of this graph may read, in id order: one weight layout for the
 * forward and the training plan of a model. */
static otc_status lay_out_params(otc_plan_ctx *c) {
    otc_plan *p = c->p;
    const otc_graph *g = c->g;
    otc_id roots[2 + 256];
    bool *seen = calloc((size_t)c->n + 1, sizeof *seen);
    if (!seen) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    otc_status st = OTC_OK;
    int n_out = otc_graph_output_count(g);
    for (int i = 0; i < n_out && !st; i += 256) {
        int k = 0;
        for (int j = i; j < n_out && k < 256; j++) roots[k++] = otc_graph_output(g, j);
        st = walk_closed(g, roots, k, seen, NULL, NULL);
    }
    if (!st && p->options.loss >= 0 && p->options.loss < c->n)
        st = walk_closed(g, &p->options.loss, 1, seen, NULL, NULL);
    if (!st) {
        p->params = malloc(((size_t)c->n + 1) * sizeof *p->params);
        if (!p->params) st = otc_fail(OTC_ERR_NOMEM, "out of memory");
    }
    for (otc_id id = 0; !st && id < c->n; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (!seen[id] || nd->op != OTC_OP_PARAMETER) continue;
        otc_plan_value *v = &p->values[id];
        v->param_offset = p->param_floats;
        p->params[p->n_params++] = id;
        int64_t size = (int64_t)otc_shape_size(nd->shape);
        p->param_floats += size;
        if (nd->trainable) p->trainable_floats += size;
    }
    free(seen);
    return st;
}

/* Included nodes in order; their values' sizes, storage kinds (sources, aliases) and read
 * counts. */
static otc_status order_nodes(otc_plan_ctx *c) {
    otc_plan *p = c->p;
    const otc_graph *g = c->g;
    /* A training plan computes the loss and the outputs too, so its forward can stand for
     * the plain one (an executor's forward with the targets set runs it). */
    bool with_loss = p->options.train || (p->options.keep_loss && p->options.loss >= 0);
    int n_out = otc_graph_output_count(g), n_roots = n_out + (with_loss ? 1 : 0);
    otc_id *roots = malloc(((size_t)n_roots + 1) * sizeof *roots);
    if (!roots) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    /* With share_grads, the loss first: the walk then places each term of a sum of losses
     * right after what it reads (an unrolled window's loss at step t after step t, not all of
     * them after the last step), so the backward reaches a step's loss just before the step
     * itself and its gradients live a step, not the whole window. */
    int loss_first = with_loss && p->options.share_grads;
    if (with_loss) roots[loss_first ? 0 : n_out] = p->options.loss;
    for (int i = 0; i < n_out; i++) roots[loss_first + i] = otc_graph_output(g, i);
    otc_status st = walk_closed(g, roots, n_roots, c->included, c->order, &c->n_order);
    free(roots);
    for (int i = 0; !st && i < c->n_order; i++) st = check_node(c, c->order[i]);
    if (st) return st;

    for (int i = 0; i < c->n_order; i++) {
        otc_id id = c->order[i];
        const otc_node *nd = otc_graph_node(g, id);
        otc_plan_value *v = &p->values[id];
        v->size = (int64_t)otc_shape_size(nd->shape);
        v->batched = otc_shape_is_batched(nd->shape);
        if (nd->op == OTC_OP_PARAMETER) {
            v->storage = OTC_STORE_PARAM;
        } else if (nd->op == OTC_OP_RESHAPE || nd->op == OTC_OP_FLATTEN) {
            v->storage = OTC_STORE_ALIAS;
            v->alias_of = otc_plan_owner(p, nd->inputs[0]); /* inputs come first in order */
        } else {
            v->storage = OTC_STORE_WORK; /* fusion may turn it into a register */
        }
    }
    /* A Delay's source is read after the last kernel (its state copy): stored, never a
     * local of its kernel. */
    for (int i = 0; i < c->n_order; i++) {
        const otc_node *nd = otc_graph_node(g, c->order[i]);
        if (nd->op == OTC_OP_DELAY && nd->inputs[0] != c->order[i])
            c->external[otc_plan_owner(p, nd->inputs[0])] = true;
    }
    /* Reads, counted on the owner of the storage read. */
    for (int i = 0; i < c->n_order; i++) {
        otc_id id = c->order[i];
        const otc_node *nd = otc_graph_node(g, id);
        if (p->values[id].storage != OTC_STORE_WORK || nd->op == OTC_OP_INPUT) continue;
        for (int s = 0; s < nd->n_inputs; s++)
            if (otc_plan_reads_input(g, id, s)) c->readers[otc_plan_owner(p, nd->inputs[s])]++;
    }
    return OTC_OK;
}

/* The Inputs the caller writes into the activation buffer itself (options.direct_inputs). */
static otc_status mark_direct(otc_plan_ctx *c) {
    otc_plan *p = c->p;
    char lab[64];
    for (int k = 0; k < p->options.n_direct_inputs; k++) {
        otc_id id = p->options.direct_inputs[k];
        const otc_node *nd = otc_graph_node(c->g, id);
        if (!nd || nd->op != OTC_OP_INPUT)
            return otc_fail(OTC_ERR_ARG, "plan: direct input #%d is not an Input", (int)id);
        if (!otc_shape_is_batched(nd->shape))
            return otc_fail(OTC_ERR_UNSUPPORTED, "plan: direct input %s is not per-sample",
                            otc_plan_label(c->g, id, lab));
        p->values[id].direct = c->included[id]; /* one the plan leaves out stays unstored */
    }
    return OTC_OK;
}

/* The caller's rows: forward inputs (read on the way to an output), targets (read only on
 * the way to the loss) and outputs. */
static otc_status lay_out_io(otc_plan_ctx *c) {
    otc_plan *p = c->p;
    const otc_graph *g = c->g;
    char lab[64], shp[64];
    int n_in = otc_graph_input_count(g), n_out = otc_graph_output_count(g);
    p->io = calloc((size_t)(n_in + n_out) + 1, sizeof *p->io);
    if (!p->io) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    /* Which inputs feed the outputs: in a forward plan all included ones. */
    bool *fwd = calloc((size_t)c->n + 1, sizeof *fwd);
    if (!fwd) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    otc_status st = OTC_OK;
    if (p->options.train) {
        for (int i = 0; i < n_out && !st; i++) {
            otc_id o = otc_graph_output(g, i);
            st = walk(g, &o, 1, fwd, NULL, NULL);
        }
    } else {
        memcpy(fwd, c->included, (size_t)c->n * sizeof *fwd);
    }
    for (int pass = 0; pass < 2 && !st; pass++) {
        for (int i = 0; i < n_in; i++) {
            otc_id id = otc_graph_input(g, i);
            if (!c->included[id] || fwd[id] != (pass == 0) || p->values[id].direct) continue;
            otc_plan_io *io = &p->io[p->n_io++];
            io->node = id;
            io->stream = pass == 0 ? OTC_IO_IN : OTC_IO_TARGET;
            io->width = p->values[id].size;
            int64_t *w = pass == 0 ? &p->in_width : &p->target_width;
            io->offset = *w;
            *w += io->width;
        }
    }
    free(fwd);
    if (st) return st;
    if (p->options.train) { /* outputs stay stored (no caller rows: the step has none) */
        for (int i = 0; i < n_out; i++)
            c->external[otc_plan_owner(p, otc_graph_output(g, i))] = true;
        return OTC_OK;
    }
    for (int i = 0; i < n_out; i++) {
        otc_id id = otc_graph_output(g, i);
        const otc_node *nd = otc_graph_node(g, id);
        if (!otc_shape_is_batched(nd->shape))
            return otc_fail(OTC_ERR_UNSUPPORTED,
                            "compiler: output %s has shape %s; compiled outputs must be "
                            "per-sample (a leading batch dimension)",
                            otc_plan_label(g, id, lab), otc_shape_str(nd->shape, shp, 64));
        otc_plan_io *io = &p->io[p->n_io++];
        io->node = id;
        io->stream = OTC_IO_OUT;
        io->width = p->values[id].size;
        io->offset = p->out_width;
        p->out_width += io->width;
        c->external[otc_plan_owner(p, id)] = true;
    }
    return OTC_OK;
}

static otc_status check_request(const otc_graph *g, const otc_plan_options *o) {
    char lab[64], shp[64];
    if (!g) return otc_fail(OTC_ERR_ARG, "plan: no graph");
    if (otc_graph_size(g) == 0) return otc_fail(OTC_ERR_ARG, "plan: the graph is empty");
    if (!o->train) {
        if (otc_graph_output_count(g) == 0)
            return otc_fail(OTC_ERR_ARG, "plan: the graph has no outputs (mark one with "
                                         "otc_graph_mark_output)");
        return OTC_OK;
    }
    const otc_node *loss = otc_graph_node(g, o->loss);
    if (!loss) return otc_fail(OTC_ERR_ARG, "plan: loss node #%d does not exist", (int)o->loss);
    if (otc_shape_is_batched(loss->shape) || otc_shape_size(loss->shape) != 1)
        return otc_fail(OTC_ERR_SHAPE, "plan: loss %s has shape %s, not a single value",
                        otc_plan_label(g, o->loss, lab), otc_shape_str(loss->shape, shp, 64));
    if (o->optim.kind != OTC_OPTIM_SGD && o->optim.kind != OTC_OPTIM_ADAM &&
        o->optim.kind != OTC_OPTIM_ADAMW)
        return otc_fail(OTC_ERR_ARG, "plan: unknown optimiser kind %d", (int)o->optim.kind);
    return OTC_OK;
}

void otc_plan_free(otc_plan *plan) {
    if (!plan) return;
    free(plan->values);
    free(plan->members);
    free(plan->kernels);
    free(plan->steps);
    free(plan->io);
    free(plan->params);
    free(plan);
}

otc_status otc_plan_build(const otc_graph *g, const otc_plan_options *options, otc_plan **out) {
    if (!out) return otc_fail(OTC_ERR_ARG, "plan: out is NULL");
    *out = NULL;
    otc_plan_options o = {0};
    if (options) o = *options;
    if (!options) o.loss = -1;
    if (o.fuse == OTC_FUSE_DEFAULT) o.fuse = OTC_FUSE_LOOPS;
    otc_status st = check_request(g, &o);
    if (st) return st;

    otc_plan *p = calloc(1, sizeof *p);
    otc_plan_ctx c = {0};
    c.p = p;
    c.g = g;
    c.n = otc_graph_size(g);
    size_t n1 = (size_t)c.n + 1;
    if (!p || !(p->values = calloc(n1, sizeof *p->values)) ||
        !(c.order = malloc(n1 * sizeof *c.order)) || !(c.included = calloc(n1, sizeof(bool))) ||
        !(c.readers = calloc(n1, sizeof(int))) || !(c.external = calloc(n1, sizeof(bool))) ||
        !(c.needs_bwd = calloc(n1, sizeof(bool)))) {
        st = otc_fail(OTC_ERR_NOMEM, "out of memory for a plan");
    } else {
        p->graph = g;
        p->options = o;
        p->n_values = c.n;
        for (int i = 0; i < c.n; i++) {
            p->values[i].alias_of = -1;
            p->values[i].kernel = -1;
            p->values[i].first_step = p->values[i].last_step = -1;
        }
        st = lay_out_params(&c);
    }
    if (!st) st = order_nodes(&c);
    if (!st) st = mark_direct(&c);
    if (!st) st = lay_out_io(&c);
    if (!st && o.keep_loss && !o.train && o.loss >= 0) c.external[otc_plan_owner(p, o.loss)] = true;
    if (!st && o.train) {
        c.external[otc_plan_owner(p, o.loss)] = true; /* train_step reports it */
        st = otc_plan_mark_training(&c);
    }
    if (!st) st = otc_plan_fuse(&c);
    if (!st) {
        otc_plan_choose_registers(&c);
        st = otc_plan_assign_buffers(&c);
    }
    if (!st && o.train) st = otc_plan_schedule_backward(&c);
    free(c.order);
    free(c.included);
    free(c.readers);
    free(c.external);
    free(c.needs_bwd);
    if (st) {
        otc_plan_free(p);
        return st;
    }
    /* Read while building; the caller's array need not outlive the call. */
    p->options.grad_inputs = NULL;
    p->options.n_grad_inputs = 0;
    p->options.direct_inputs = NULL;
    p->options.n_direct_inputs = 0;
    *out = p;
    return OTC_OK;
}

otc_plan_bytes otc_plan_sizes(const otc_plan *plan, int64_t batch) {
    otc_plan_bytes b = {0};
    if (!plan) return b;
    const int64_t f = (int64_t)sizeof(float);
    b.weights = plan->param_floats * f;
    b.activations = otc_extent_at(plan->work, batch) * f;
    b.activations_unshared = otc_extent_at(plan->work_unshared, batch) * f;
    if (plan->options.train) {
        b.gradients = otc_extent_at(plan->grads, batch) * f;
        b.optimizer_state =
            (int64_t)otc_plan_optim_slots(&plan->options.optim) * plan->param_floats * f;
    }
    b.workspace = b.activations + b.gradients;
    return b;
}
