/* A saved network that standardises its own input: the task's (x - mean) / std built into the
 * graph ahead of the network, so the model runs on raw rows on every backend. */
#include <stdlib.h>

#include "neat_internal.h"

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
    /* The raw Input first (it keeps its name), then the frozen statistics and the two ops, then
     * the network reading the standardised value where it read the raw one: every node comes
     * after what it reads, as a saved model must. */
    otc_id x = otc_input(c, in->name, in->shape);
    otc_id m = otc_param(c, OTC_NEAT_INPUT_MEAN, otc_shape_1d(features), mean);
    otc_id s = otc_param(c, OTC_NEAT_INPUT_STD, otc_shape_1d(features), std);
    otc_id sx = -1;
    if (x >= 0 && m >= 0 && s >= 0 && otc_graph_set_trainable(c, m, false) == OTC_OK &&
        otc_graph_set_trainable(c, s, false) == OTC_OK) {
        otc_id centred = otc_sub(c, x, otc_row_broadcast(c, m, x));
        sx = otc_div(c, centred, otc_row_broadcast(c, s, x));
    }
    otc_status st = sx >= 0 ? OTC_OK : OTC_ERR_SHAPE;
    if (st == OTC_OK) {
        for (otc_id i = 0; i < n; i++) map[i] = -1;
        map[input] = sx;
        st = otc_graph_copy_into(c, g, map);
    }
    free(map);
    if (st != OTC_OK) {
        otc_graph_free(c);
        return otc_fail_context(st, "standardising the network's input");
    }
    *out = c;
    return OTC_OK;
}
