/* A saved network that standardises its own input: the task's (x - mean) / std built into the
 * graph ahead of the network, so the model runs on raw rows on every backend. */
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"

/* The new id of g's node `src`: the standardised input where the network read the raw one. */
static otc_id mapped(const otc_id *map, otc_id input, otc_id std_x, otc_id src) {
    return src == input ? std_x : map[src];
}

otc_status otc_neat_graph_standardize_input(const otc_graph *g, const float *mean, const float *std,
                                            otc_graph **out) {
    *out = NULL;
    if (otc_graph_input_count(g) != 1)
        return otc_fail(OTC_ERR_ARG, "standardised input: the network has %d inputs, not one",
                        otc_graph_input_count(g));
    otc_id input = otc_graph_input(g, 0);
    const otc_node *in = otc_graph_node(g, input);
    if (in->shape.ndim != 2)
        return otc_fail(OTC_ERR_SHAPE, "standardised input: input x is not [batch, features]");
    int n = otc_graph_size(g), features = (int)in->shape.dim[1];
    otc_id *map = malloc(((size_t)n + 1) * sizeof *map);
    otc_graph *c = otc_graph_new();
    if (!map || !c) {
        free(map);
        otc_graph_free(c);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a standardised network");
    }
    /* The raw Input first (it keeps its name), then the frozen statistics and the two ops, so
     * every node of the network comes after what it reads (as a saved model must). */
    otc_id x = otc_input(c, in->name, in->shape);
    otc_id m = otc_param(c, "input_mean", otc_shape_1d(features), mean);
    otc_id s = otc_param(c, "input_std", otc_shape_1d(features), std);
    otc_id sx = -1;
    if (x >= 0 && m >= 0 && s >= 0 && otc_graph_set_trainable(c, m, false) == OTC_OK &&
        otc_graph_set_trainable(c, s, false) == OTC_OK) {
        otc_id centred = otc_sub(c, x, otc_row_broadcast(c, m, x));
        sx = otc_div(c, centred, otc_row_broadcast(c, s, x));
    }
    otc_status st = sx >= 0 ? OTC_OK : OTC_ERR_SHAPE;
    map[input] = x;
    for (otc_id i = 0; i < n && st == OTC_OK; i++) {
        if (i == input) continue;
        const otc_node *nd = otc_graph_node(g, i);
        otc_id *ins = malloc(((size_t)nd->n_inputs + 1) * sizeof *ins);
        if (!ins) {
            st = otc_fail(OTC_ERR_NOMEM, "out of memory for a standardised network");
            break;
        }
        for (int k = 0; k < nd->n_inputs; k++) {
            if (nd->op != OTC_OP_DELAY && nd->inputs[k] > i) {
                st = otc_fail(OTC_ERR_ARG, "standardised input: node #%d reads a later node",
                              (int)i);
                break;
            }
            /* A delay's source may come later: it reads itself until every node exists. */
            ins[k] = nd->op == OTC_OP_DELAY ? (otc_id)otc_graph_size(c)
                                            : mapped(map, input, sx, nd->inputs[k]);
        }
        otc_node_spec spec = {nd->op,    nd->name,  nd->n_inputs, ins,     nd->cols,
                              nd->shape, nd->alpha, nd->scale,    nd->act, nd->axis,
                              nd->start, nd->len,   nd->agg,      nd->win};
        if (st == OTC_OK && (map[i] = otc_graph_add(c, &spec)) < 0) st = OTC_ERR_SHAPE;
        free(ins);
        if (st == OTC_OK && nd->op == OTC_OP_PARAMETER) {
            otc_tensor *to = otc_graph_param(c, map[i]);
            memcpy(to->data, nd->value->data, nd->value->size * sizeof(float));
            st = otc_graph_set_trainable(c, map[i], nd->trainable);
        }
    }
    for (otc_id i = 0; i < n && st == OTC_OK; i++) {
        const otc_node *nd = otc_graph_node(g, i);
        if (nd->op == OTC_OP_DELAY)
            st = otc_graph_set_input(c, map[i], 0, mapped(map, input, sx, nd->inputs[0]));
    }
    for (int k = 0; k < otc_graph_output_count(g) && st == OTC_OK; k++)
        st = otc_graph_mark_output(c, mapped(map, input, sx, otc_graph_output(g, k)));
    for (int k = 0; k < otc_graph_meta_count(g) && st == OTC_OK; k++) {
        const char *key = otc_graph_meta_key(g, k);
        st = otc_graph_meta_set(c, key, otc_graph_meta_get(g, key));
    }
    free(map);
    if (st != OTC_OK) {
        otc_graph_free(c);
        return otc_fail_context(st, "standardising the network's input");
    }
    *out = c;
    return OTC_OK;
}
