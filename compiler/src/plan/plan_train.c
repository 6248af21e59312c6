/* The training half of the plan: which values need gradients, which values the backward
 * pass reads (so they are stored and kept), the gradient buffer, and the backward and
 * optimiser steps. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "otc/loops.h"
#include "plan_internal.h"

/* The activation of an activation op or a Neuron; NULL for other ops. */
static const otc_act_info *act_of(const otc_node *nd) {
    if (nd->op == OTC_OP_NEURON) return otc_act_get((otc_act)nd->act);
    const otc_op_info *info = otc_op_get(nd->op);
    return info && info->act >= 0 ? otc_act_get((otc_act)info->act) : NULL;
}

static void keep(otc_plan_ctx *c, otc_id id) {
    otc_plan_value *v = &c->p->values[otc_plan_owner(c->p, id)];
    if (v->storage == OTC_STORE_WORK) v->kept = true;
}

/* Mark what node id's gradient rule reads: for an op with a loop program, the values its
 * backward program loads; for the others, what their gradient trees read. */
static otc_status mark_reads(otc_plan_ctx *c, otc_id id) {
    otc_plan *p = c->p;
    const otc_node *nd = otc_graph_node(p->graph, id);
    const otc_id *in = nd->inputs;
#define NEEDS(i) (p->values[in[i]].needs_grad)
    const otc_act_info *act = act_of(nd);
    if (nd->op != OTC_OP_MATMUL && otc_loop_lowers(nd->op)) {
        otc_loop_program *prog = NULL;
        otc_status st = otc_plan_lower(p, id, true, &prog);
        for (int b = 0; !st && b < prog->n_bufs; b++)
            if (!prog->buf[b].grad) keep(c, prog->buf[b].node);
        otc_loop_program_free(prog);
        return st;
    }
    switch (nd->op) {
    case OTC_OP_MATMUL: /* batched or not: each operand's gradient reads the other operand */
        if (NEEDS(0)) keep(c, in[1]);
        if (NEEDS(1)) keep(c, in[0]);
        break;
    case OTC_OP_NEURON:
        if (NEEDS(0))
            for (int s = 2; s < nd->n_inputs; s++) keep(c, in[s]);
        if (otc_expr_reads(act->df, OTC_EX_Y)) keep(c, id);
        p->values[id].has_pre = otc_expr_reads(act->df, OTC_EX_X);
        break;
    default:
        /* An elementwise op: what its derivatives by the inputs needing a gradient read. */
        for (int i = 0; i < nd->n_inputs && i < 2; i++) {
            const otc_expr *d = NEEDS(i) ? otc_op_grad_expr(nd->op, i) : NULL;
            if (otc_expr_reads(d, OTC_EX_X)) keep(c, in[0]);
            if (otc_expr_reads(d, OTC_EX_X1)) keep(c, in[1]);
            if (otc_expr_reads(d, OTC_EX_Y)) keep(c, id);
        }
        break;
    }
#undef NEEDS
    return OTC_OK;
}

otc_status otc_plan_mark_training(otc_plan_ctx *c) {
    otc_plan *p = c->p;
    const otc_graph *g = p->graph;
    /* Every trainable parameter of the weight layout is updated, as the interpreter's
     * train_step does, even one the loss does not reach (its gradient is then zero). */
    for (int i = 0; i < p->n_params; i++)
        p->values[p->params[i]].needs_grad = otc_graph_node(g, p->params[i])->trainable;
    for (int i = 0; i < c->n_order; i++) {
        otc_id id = c->order[i];
        const otc_node *nd = otc_graph_node(g, id);
        otc_plan_value *v = &p->values[id];
        if (nd->op == OTC_OP_PARAMETER) {
            v->needs_grad = nd->trainable;
        } else if (nd->op == OTC_OP_INPUT) {
            v->needs_grad = false;
            for (int k = 0; k < p->options.n_grad_inputs; k++)
                v->needs_grad |= p->options.grad_inputs[k] == id;
        } else if (nd->op == OTC_OP_DETACH) {
            v->needs_grad = false;
        } else {
            for (int s = 0; s < nd->n_inputs && !v->needs_grad; s++)
                if (otc_plan_reads_input(g, id, s))
                    v->needs_grad = p->values[nd->inputs[s]].needs_grad;
        }
        c->needs_bwd[id] = v->needs_grad && v->storage == OTC_STORE_WORK &&
                           nd->op != OTC_OP_PARAMETER && nd->op != OTC_OP_INPUT;
    }
    for (int i = 0; i < c->n_order; i++) {
        otc_id id = c->order[i];
        const otc_node *nd = otc_graph_node(g, id);
        if (c->needs_bwd[id] && nd->op == OTC_OP_NEURON && nd->agg != OTC_AGG_SUM &&
            !c->p->options.agg_gradients) {
            char lab[64];
            return otc_fail(OTC_ERR_UNSUPPORTED,
                            "compiler: neuron %s aggregates with %s, whose gradient only the "
                            "interpreter has; train it interpreted (its forward compiles)",
                            otc_plan_label(g, id, lab), otc_agg_name(nd->agg));
        }
        otc_status st = c->needs_bwd[id] ? mark_reads(c, id) : OTC_OK;
        if (st) return st;
    }
    return OTC_OK;
}

/* Does id's gradient want zeroing before it is first written (batched, a slot, not yet)? */
static bool unzeroed(const otc_plan *p, otc_id id, const bool *zeroed) {
    otc_id o = otc_plan_owner(p, id);
    const otc_plan_value *v = &p->values[o];
    return !zeroed[o] && v->needs_grad && v->batched && v->storage != OTC_STORE_PARAM;
}

/* A ZERO_GRAD step for id's storage owner unless it is done, not batched or has no slot. */
static otc_status zero_once(otc_plan_ctx *c, otc_id id, bool *zeroed) {
    otc_plan *p = c->p;
    if (!unzeroed(p, id, zeroed)) return OTC_OK;
    otc_id o = otc_plan_owner(p, id);
    zeroed[o] = true;
    return otc_plan_add_step(c, (otc_plan_step){OTC_STEP_ZERO_GRAD, o, -1, -1, 0, 0, 0, 0});
}

/* Can fused backward step s store input k's gradient whole, as its first writer? Its rule
 * is an elementwise op's (one value per element, as the JIT's map backward writes it) over
 * the input's own loop space, and no other input is the same value. */
static bool can_store(const otc_plan *p, const otc_plan_step *s, int k) {
    const otc_node *nd = otc_graph_node(p->graph, s->node);
    const otc_plan_kernel *K = &p->kernels[s->kernel];
    if (!p->options.first_grad_stores || s->fused == 0 || !K->batched || nd->op == OTC_OP_NEURON ||
        nd->op == OTC_OP_ROW_BROADCAST || k > 1)
        return false;
    if (act_of(nd) ? k != 0 : !otc_op_map_expr(nd->op) || !otc_op_grad_expr(nd->op, k))
        return false;
    otc_id o = otc_plan_owner(p, nd->inputs[k]);
    for (int j = 0; j < nd->n_inputs; j++)
        if (j != k && otc_plan_owner(p, nd->inputs[j]) == o) return false;
    return p->values[o].size == K->n && p->values[s->node].size == K->n;
}

/* options.zero_lazily (plan.h): the backward schedule again, each batched gradient zeroed
 * before the first step (a fused run as a whole, so the run stays one loop nest) that reads
 * or accumulates into it; what no step touches is zeroed before the updates, so every
 * gradient reads as it would after one sweep. */
static otc_status zero_lazily(otc_plan_ctx *c) {
    otc_plan *p = c->p;
    otc_plan_step *old = p->steps;
    int n_old = p->n_steps;
    bool *zeroed = calloc((size_t)p->n_values + 1, sizeof *zeroed);
    if (!zeroed) return otc_fail(OTC_ERR_NOMEM, "out of memory for plan steps");
    p->steps = NULL;
    p->n_steps = c->cap_steps = 0;
    otc_status st = OTC_OK;
    bool rest_done = false;
    for (int i = 0; i < n_old && !st; i++) {
        const otc_plan_step *s = &old[i];
        if (s->kind == OTC_STEP_BACKWARD && s->fused >= 0) {
            int end = i + (s->fused > 1 ? s->fused : 1);
            for (int j = i; j < end && !st; j++) {
                const otc_node *nd = otc_graph_node(p->graph, old[j].node);
                st = zero_once(c, old[j].node, zeroed);
                for (int k = 0; k < nd->n_inputs && !st; k++) {
                    if (unzeroed(p, nd->inputs[k], zeroed) && can_store(p, &old[j], k)) {
                        old[j].stores |= 1u << k;
                        zeroed[otc_plan_owner(p, nd->inputs[k])] = true;
                    }
                    st = zero_once(c, nd->inputs[k], zeroed);
                }
            }
        }
        if (!rest_done && (s->kind == OTC_STEP_UPDATE || i == n_old - 1)) {
            /* Before the updates, or after the last backward step. */
            bool before = s->kind == OTC_STEP_UPDATE;
            if (!before) st = st ? st : otc_plan_add_step(c, *s);
            for (otc_id id = 0; id < p->n_values && !st; id++) st = zero_once(c, id, zeroed);
            rest_done = true;
            if (!before) break;
        }
        if (!st) st = otc_plan_add_step(c, *s);
    }
    free(old);
    free(zeroed);
    return st;
}

/* A batched gradient with a slot of its own (not a parameter's, not an alias's)? */
static bool own_batched_grad(const otc_plan_value *v) {
    return v->needs_grad && v->batched && v->storage != OTC_STORE_PARAM &&
           v->storage != OTC_STORE_ALIAS;
}

/* options.share_grads (plan.h): the batched gradients placed again by their lifetimes in the
 * final backward schedule. A unit of time is a step, or a fused run as a whole (its rules
 * interleave element by element); a gradient lives from the step that zeroes or first writes
 * it to the last that reads it (its own rule; a rule touches its node's gradient and its
 * inputs'). An Input's gradient is read after the step, so it lives to the end. */
static otc_status share_grads(otc_plan_ctx *c) {
    otc_plan *p = c->p;
    int n = p->n_values, t = 0, count = 0;
    otc_plan_lifetime *life = malloc(((size_t)n + 1) * sizeof *life);
    int *slot_of = malloc(((size_t)n + 1) * sizeof *slot_of);
    if (!life || !slot_of) {
        free(life);
        free(slot_of);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for the gradient plan");
    }
    for (otc_id id = 0; id < n; id++) {
        slot_of[id] = -1;
        if (own_batched_grad(&p->values[id])) {
            life[count] = (otc_plan_lifetime){p->values[id].size, -1, -1, 0};
            slot_of[id] = count++;
        }
    }
    for (int i = 0; i < p->n_steps; i++) {
        const otc_plan_step *s = &p->steps[i];
        if (s->kind != OTC_STEP_BACKWARD || s->fused != -1) t++;
        if (s->kind != OTC_STEP_BACKWARD && s->kind != OTC_STEP_ZERO_GRAD) continue;
        const otc_node *nd = otc_graph_node(p->graph, s->node);
        int touched = s->kind == OTC_STEP_BACKWARD ? nd->n_inputs : 0;
        for (int k = -1; k < touched; k++) {
            int at = slot_of[otc_plan_owner(p, k < 0 ? s->node : nd->inputs[k])];
            if (at < 0) continue;
            if (life[at].first < 0) life[at].first = t;
            life[at].last = t;
        }
    }
    for (otc_id id = 0; id < n; id++) {
        if (slot_of[id] < 0) continue;
        otc_plan_lifetime *l = &life[slot_of[id]];
        if (l->first < 0) l->first = t + 1; /* untouched: after everything */
        if (l->last < l->first || otc_graph_node(p->graph, id)->op == OTC_OP_INPUT) l->last = t + 1;
    }
    int64_t total = otc_plan_place_lifetimes(life, count);
    if (total >= 0) {
        for (otc_id id = 0; id < n; id++)
            if (slot_of[id] >= 0) p->values[id].grad.per_batch = life[slot_of[id]].off;
        for (otc_id id = 0; id < n; id++) {
            otc_plan_value *v = &p->values[id];
            if (v->storage == OTC_STORE_ALIAS) v->grad = p->values[v->alias_of].grad;
        }
        p->grads.per_batch = total;
    }
    free(life);
    free(slot_of);
    return total < 0 ? otc_fail(OTC_ERR_NOMEM, "out of memory for the gradient plan") : OTC_OK;
}

otc_status otc_plan_schedule_backward(otc_plan_ctx *c) {
    otc_plan *p = c->p;
    /* Parameter gradients first, laid out like the weights, so one loop can update them. */
    int64_t fixed = p->param_floats, per_batch = 0;
    for (int i = 0; i < p->n_params; i++) {
        otc_plan_value *v = &p->values[p->params[i]];
        if (v->needs_grad) v->grad = (otc_extent){v->param_offset, 0};
    }
    for (int pass = 0; pass < 2; pass++) {
        for (otc_id id = 0; id < p->n_values; id++) {
            otc_plan_value *v = &p->values[id];
            if (!v->needs_grad || v->storage == OTC_STORE_PARAM || v->storage == OTC_STORE_ALIAS ||
                v->batched != (pass == 1))
                continue;
            if (pass == 0) {
                v->grad = (otc_extent){fixed, 0};
                fixed += v->size;
            } else {
                v->grad = (otc_extent){0, per_batch};
                per_batch += v->size;
            }
        }
    }
    if (per_batch > 0) fixed = otc_plan_align(fixed);
    for (otc_id id = 0; id < p->n_values; id++) {
        otc_plan_value *v = &p->values[id];
        if (own_batched_grad(v)) v->grad.base = fixed;
    }
    for (otc_id id = 0; id < p->n_values; id++) {
        otc_plan_value *v = &p->values[id];
        if (v->storage == OTC_STORE_ALIAS) v->grad = p->values[v->alias_of].grad;
    }
    p->grads = (otc_extent){fixed, per_batch};

    otc_status st =
        otc_plan_add_step(c, (otc_plan_step){OTC_STEP_ZERO_GRADS, -1, -1, -1, 0, 0, 0, 0});
    otc_id loss = p->options.loss;
    if (!st && p->values[loss].needs_grad)
        st = otc_plan_add_step(c, (otc_plan_step){OTC_STEP_SEED, loss, -1, -1, 0, 0, 0, 0});
    for (int i = p->n_members - 1; i >= 0 && !st; i--) {
        otc_id id = p->members[i];
        if (c->needs_bwd[id])
            st = otc_plan_add_step(
                c, (otc_plan_step){OTC_STEP_BACKWARD, id, p->values[id].kernel, -1, 0, 0, 0, 0});
    }
    /* Runs of neighbouring trainable parameters become one update loop. */
    for (int i = 0; i < p->n_params && !st;) {
        const otc_plan_value *v = &p->values[p->params[i]];
        if (!v->needs_grad) {
            i++;
            continue;
        }
        int64_t from = v->param_offset, count = 0;
        int j = i;
        for (; j < p->n_params && p->values[p->params[j]].needs_grad; j++)
            count += p->values[p->params[j]].size;
        st = otc_plan_add_step(
            c, (otc_plan_step){OTC_STEP_UPDATE, p->params[i], -1, -1, from, count, 0, 0});
        i = j;
    }
    if (!st) otc_plan_fuse_backward(p);
    if (!st && p->options.zero_lazily) st = zero_lazily(c);
    if (!st && p->options.zero_lazily && p->options.share_grads) st = share_grads(c);
    return st;
}
