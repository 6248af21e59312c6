/* A recurrent step graph unrolled over T steps into a feed-forward graph (otc/unroll.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/limits.h"
#include "otc/unroll.h"

void otc_unrolled_free(otc_unrolled *u) {
    if (!u) return;
    otc_graph_free(u->graph);
    free(u->map);
    free(u->inputs);
    free(u->delays);
    free(u->state_in);
    free(u->state_out);
    free(u->weights);
    free(u);
}

/* "<name>.<tag>" for a copy ("x.step3", "h.init"): C-header friendly; a clash with a name the
 * step graph already has is an error from the builder. */
static void copy_name(const otc_graph *g, otc_id id, const char *tag, char *buf, size_t len) {
    const otc_node *nd = otc_graph_node(g, id);
    if (nd->name)
        snprintf(buf, len, "%s.%s", nd->name, tag);
    else
        snprintf(buf, len, "node%d.%s", (int)id, tag);
}

static otc_status unroll(const otc_graph *g, otc_unrolled *u, otc_id loss) {
    int n = u->n_step_nodes, T = u->steps;
    otc_graph *ug = u->graph;
    char name[160], tag[32];
    otc_id *order = malloc((size_t)n * sizeof *order);
    int most = 1;
    for (otc_id id = 0; id < n; id++)
        if (otc_graph_node(g, id)->n_inputs > most) most = otc_graph_node(g, id)->n_inputs;
    otc_id *ins = malloc((size_t)most * sizeof *ins);
    if (!order || !ins) {
        free(order);
        free(ins);
        return otc_fail(OTC_ERR_NOMEM, "unroll: out of memory");
    }
    otc_status st = otc_graph_topo_order(g, order);
    /* Parameters first, in id order: the unrolled graph's weight layout follows the step
     * graph's. */
    for (otc_id id = 0; id < n && !st; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op != OTC_OP_PARAMETER) continue;
        otc_id p = otc_param(ug, nd->name, nd->shape, nd->value->data);
        if (p < 0 || otc_graph_set_trainable(ug, p, nd->trainable))
            st = otc_fail_context(OTC_ERR_ARG, "unroll: parameter");
        for (int t = 0; t < T; t++) u->map[(size_t)t * n + id] = p;
    }
    for (int k = 0; k < u->n_delays && !st; k++) {
        otc_id d = u->delays[k];
        copy_name(g, d, "init", name, sizeof name);
        u->state_in[k] = otc_input(ug, name, otc_graph_node(g, d)->shape);
        if (u->state_in[k] < 0) st = otc_fail_context(OTC_ERR_ARG, "unroll: state of a delay");
    }
    for (int t = 0; t < T && !st; t++) {
        otc_id *m = u->map + (size_t)t * n;
        snprintf(tag, sizeof tag, "step%d", t);
        for (int i = 0; i < n && !st; i++) {
            otc_id id = order[i];
            const otc_node *nd = otc_graph_node(g, id);
            switch (nd->op) {
            case OTC_OP_PARAMETER:
                break;
            case OTC_OP_DELAY: {
                int k = 0;
                while (u->delays[k] != id) k++;
                /* A Delay reading a Delay: the source's copy at t - 1 is itself resolved. */
                m[id] = t == 0 ? u->state_in[k] : u->map[(size_t)(t - 1) * n + nd->inputs[0]];
                break;
            }
            case OTC_OP_INPUT:
                copy_name(g, id, tag, name, sizeof name);
                m[id] = otc_input(ug, name, nd->shape);
                if (m[id] < 0) st = otc_fail_context(OTC_ERR_ARG, "unroll: input");
                break;
            default: {
                for (int j = 0; j < nd->n_inputs; j++) ins[j] = m[nd->inputs[j]];
                otc_node_spec s = {.op = nd->op,
                                   .n_inputs = nd->n_inputs,
                                   .inputs = ins,
                                   .cols = nd->cols,
                                   .shape = nd->shape,
                                   .alpha = nd->alpha,
                                   .scale = nd->scale,
                                   .act = nd->act,
                                   .axis = nd->axis,
                                   .start = nd->start,
                                   .len = nd->len,
                                   .agg = nd->agg,
                                   .win = nd->win};
                m[id] = otc_graph_add(ug, &s);
                if (m[id] < 0) {
                    char lab[64];
                    st = otc_fail_context(OTC_ERR_ARG, "unroll: node %s at step %d",
                                          otc_graph_node_label(g, id, lab, sizeof lab), t);
                }
            }
            }
        }
    }
    for (int t = 0; t < T && !st; t++)
        for (int k = 0; k < u->n_inputs; k++)
            u->inputs[t * u->n_inputs + k] = u->map[(size_t)t * n + otc_graph_input(g, k)];
    /* After the last step each Delay holds its source's last copy. */
    for (int k = 0; k < u->n_delays && !st; k++) {
        otc_id src = otc_graph_node(g, u->delays[k])->inputs[0];
        u->state_out[k] = u->map[(size_t)(T - 1) * n + src];
        bool marked = false;
        for (int i = 0; i < otc_graph_output_count(ug); i++)
            marked |= otc_graph_output(ug, i) == u->state_out[k];
        if (marked) continue;
        st = otc_graph_mark_output(ug, u->state_out[k]);
        /* Named for the emitted header's layout, unless it has a name (an input's). */
        if (!st && !otc_graph_node(ug, u->state_out[k])->name) {
            copy_name(g, u->delays[k], "next", name, sizeof name);
            st = otc_graph_set_name(ug, u->state_out[k], name);
        }
    }
    if (loss >= 0 && !st) {
        for (int t = 0; t < T && !st; t++) {
            float w0 = 1.0f / (float)T;
            snprintf(name, sizeof name, "loss_weight.step%d", t);
            u->weights[t] = otc_param(ug, name, otc_graph_node(g, loss)->shape, &w0);
            if (u->weights[t] < 0 || otc_graph_set_trainable(ug, u->weights[t], false)) {
                st = otc_fail_context(OTC_ERR_ARG, "unroll: loss weight");
                break;
            }
            otc_id term = otc_mul(ug, u->map[(size_t)t * n + loss], u->weights[t]);
            u->total = t == 0 ? term : otc_add(ug, u->total, term);
            if (term < 0 || u->total < 0) st = otc_fail_context(OTC_ERR_ARG, "unroll: loss");
        }
    }
    free(order);
    free(ins);
    return st;
}

otc_status otc_unroll(const otc_graph *g, int steps, otc_id loss, otc_unrolled **out) {
    char lab[64];
    if (!g || !out) return otc_fail(OTC_ERR_ARG, "unroll: NULL argument");
    *out = NULL;
    int n = otc_graph_size(g);
    if (steps < 1) return otc_fail(OTC_ERR_ARG, "unroll: %d steps (must be at least 1)", steps);
    if ((int64_t)steps * n > OTC_MAX_GRAPH_NODES)
        return otc_fail(OTC_ERR_ARG,
                        "unroll: %d steps of a %d-node graph exceed the node limit %d "
                        "(OTC_MAX_GRAPH_NODES): train through fewer steps (--bptt)",
                        steps, n, OTC_MAX_GRAPH_NODES);
    if (loss >= n) return otc_fail(OTC_ERR_ARG, "unroll: no node #%d", (int)loss);
    if (loss >= 0) {
        const otc_node *ln = otc_graph_node(g, loss);
        if (otc_shape_is_batched(ln->shape) || otc_shape_size(ln->shape) != 1)
            return otc_fail(OTC_ERR_SHAPE, "unroll: loss %s is not a single value",
                            otc_graph_node_label(g, loss, lab, sizeof lab));
    }
    otc_unrolled *u = calloc(1, sizeof *u);
    if (!u) return otc_fail(OTC_ERR_NOMEM, "unroll: out of memory");
    u->steps = steps;
    u->n_step_nodes = n;
    u->total = -1;
    u->n_inputs = otc_graph_input_count(g);
    for (otc_id id = 0; id < n; id++) u->n_delays += otc_graph_node(g, id)->op == OTC_OP_DELAY;
    u->graph = otc_graph_new();
    u->map = malloc((size_t)steps * (size_t)n * sizeof *u->map + 1);
    u->inputs = malloc((size_t)steps * (size_t)u->n_inputs * sizeof *u->inputs + 1);
    u->delays = malloc((size_t)u->n_delays * sizeof *u->delays + 1);
    u->state_in = malloc((size_t)u->n_delays * sizeof *u->state_in + 1);
    u->state_out = malloc((size_t)u->n_delays * sizeof *u->state_out + 1);
    if (loss >= 0) u->weights = malloc((size_t)steps * sizeof *u->weights);
    if (!u->graph || !u->map || !u->inputs || !u->delays || !u->state_in || !u->state_out ||
        (loss >= 0 && !u->weights)) {
        otc_unrolled_free(u);
        return otc_fail(OTC_ERR_NOMEM, "unroll: out of memory");
    }
    for (size_t i = 0; i < (size_t)steps * (size_t)n; i++) u->map[i] = -1;
    for (otc_id id = 0, k = 0; id < n; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op != OTC_OP_DELAY) continue;
        if (nd->n_inputs < 1 || nd->inputs[0] < 0 || nd->inputs[0] == id) {
            otc_unrolled_free(u);
            return otc_fail(OTC_ERR_ARG, "unroll: delay %s has no source",
                            otc_graph_node_label(g, id, lab, sizeof lab));
        }
        u->delays[k++] = id;
    }
    otc_status st = unroll(g, u, loss);
    if (st) {
        otc_unrolled_free(u);
        return st;
    }
    *out = u;
    return OTC_OK;
}

otc_status otc_unroll_step(const otc_graph *g, int window, otc_id loss, otc_unrolled **out) {
    if (window < 1) return otc_fail(OTC_ERR_ARG, "unroll: a window of %d steps", window);
    otc_status st = otc_unroll(g, 1, loss, out);
    if (!st && (*out)->weights)
        otc_graph_param((*out)->graph, (*out)->weights[0])->data[0] = 1.0f / (float)window;
    return st;
}
