/* A painted substrate as an otc graph (matmul, bias and activation per layer): what leaves
 * evolution, so that otc run / otc compile take a HyperNEAT champion like any model. */
#include <stdio.h>
#include <stdlib.h>

#include "otc/hyperneat.h"

/* The graph op that computes activation act (ops.c's table says which op is which). */
static int act_op(otc_act act) {
    for (int op = OTC_OP_SIGMOID; op <= OTC_OP_IDENTITY; op++)
        if (otc_op_get((otc_op)op)->act == (int)act) return op;
    return -1;
}

otc_status otc_substrate_graph(otc_substrate *s, float alpha, otc_graph **out) {
    if (!s || !out) return otc_fail(OTC_ERR_ARG, "otc_substrate_graph: NULL argument");
    *out = NULL;
    const otc_es_network *es = otc_substrate_es(s);
    if (otc_substrate_es_config(s)) {
        if (!es) return otc_fail(OTC_ERR_STATE, "otc_substrate_graph: not painted");
        otc_neat_phenotype *ph = NULL;
        otc_status st = otc_neat_phenotype_build(es->net, otc_substrate_es_config(s), &ph);
        if (st != OTC_OK) return st;
        *out = ph->graph;
        ph->graph = NULL;
        otc_neat_phenotype_free(ph);
        return OTC_OK;
    }
    otc_act act = otc_substrate_activation(s);
    int op = act_op(act);
    if (op < 0)
        return otc_fail(OTC_ERR_ARG, "[Substrate] activation: %s has no graph op",
                        otc_neat_act_name(act));
    otc_graph *g = otc_graph_new();
    if (!g) return otc_fail(OTC_ERR_NOMEM, "out of memory for the substrate graph");
    int n_layers = otc_substrate_layers(s);
    int dims[2] = {OTC_BATCH, otc_substrate_size(s, 0)};
    otc_id x = otc_input(g, "input", otc_shape_make(2, dims));
    for (int l = 0; l + 1 < n_layers && x >= 0; l++) {
        int n_in = otc_substrate_size(s, l), n_out = otc_substrate_size(s, l + 1);
        /* The graph's matmul takes [in, out]: the painted [out][in] transposed. */
        float *wt = malloc(sizeof(float) * (size_t)n_in * (size_t)n_out);
        if (!wt) {
            otc_graph_free(g);
            return otc_fail(OTC_ERR_NOMEM, "out of memory for the substrate graph");
        }
        const float *w = otc_substrate_weights(s, l);
        for (int j = 0; j < n_out; j++)
            for (int i = 0; i < n_in; i++)
                wt[(size_t)i * (size_t)n_out + (size_t)j] = w[(size_t)j * (size_t)n_in + (size_t)i];
        char wname[32], bname[32];
        snprintf(wname, sizeof wname, "layer%d.weight", l + 1);
        snprintf(bname, sizeof bname, "layer%d.bias", l + 1);
        otc_id wp = otc_param(g, wname, otc_shape_2d(n_in, n_out), wt);
        free(wt);
        otc_id bp = otc_param(g, bname, otc_shape_1d(n_out), otc_substrate_biases(s, l));
        otc_id xw = wp >= 0 && bp >= 0 ? otc_matmul(g, x, wp) : -1;
        otc_id b = xw >= 0 ? otc_row_broadcast(g, bp, xw) : -1;
        x = b >= 0 ? otc_add(g, xw, b) : -1;
        if (x >= 0 && act != OTC_ACT_IDENTITY) x = otc_activation(g, (otc_op)op, x, alpha);
    }
    otc_status st = x >= 0 ? otc_graph_mark_output(g, x) : OTC_ERR_STATE;
    if (st != OTC_OK) {
        otc_graph_free(g);
        return otc_fail_context(st == OTC_ERR_STATE ? OTC_ERR_ARG : st, "substrate graph");
    }
    *out = g;
    return OTC_OK;
}

otc_status otc_substrate_genome_graph(const otc_neat_genome *cppn, const otc_neat_config *c,
                                      otc_graph **out) {
    if (!cppn || !c || !out) return otc_fail(OTC_ERR_ARG, "otc_substrate_genome_graph: NULL");
    otc_substrate *s = NULL;
    otc_status st = otc_substrate_from_genome(cppn, c, 1, NULL, &s);
    if (st == OTC_OK)
        st = otc_substrate_graph(s, otc_neat_act_alpha(c, c->substrate.activation), out);
    otc_substrate_free(s);
    return st;
}
