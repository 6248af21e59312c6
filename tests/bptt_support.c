/* Test support for compiled training through time (bptt_support.h). */
#include "bptt_support.h"

#include <math.h>
#include <stdio.h>

#include "otc/random_graph.h"

otc_graph *bptt_layer_graph(otc_cell cell, uint64_t seed, int hidden) {
    otc_graph *g = otc_graph_new();
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    otc_id h = otc_recurrent(g, cell, x, hidden, 1, &rng, "rnn");
    float w[64];
    if (hidden * 2 > 64) return g;
    otc_testgen_fill(&rng, w, (size_t)hidden * 2, -0.5f, 0.5f);
    otc_id y = otc_matmul(g, h, otc_param(g, "head", otc_shape_2d(hidden, 2), w));
    otc_graph_mark_output(g, y);
    return g;
}

bool bptt_close_all(const float *got, const float *want, size_t n, double tol, double *worst,
                    const char *what, int id) {
    double scale = 1.0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs((double)want[i]));
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]) / scale;
        if (d > *worst) *worst = d;
        if (!(d <= tol)) {
            fprintf(stderr, "%s: param #%d [%zu]: %.9g, interpreter %.9g\n", what, id, i,
                    (double)got[i], (double)want[i]);
            return false;
        }
    }
    return true;
}

bool bptt_same_params(const otc_graph *a, const otc_graph *b, double tol, double *worst,
                      const char *what) {
    for (otc_id p = 0; p < otc_graph_size(a); p++) {
        const otc_node *nd = otc_graph_node(a, p);
        if (nd->op != OTC_OP_PARAMETER) continue;
        if (!bptt_close_all(otc_graph_node(b, p)->value->data, nd->value->data, nd->value->size,
                            tol, worst, what, p))
            return false;
    }
    return true;
}
