/* Shared by the LLVM JIT tests: random graphs and inputs, the interpreter-vs-JIT comparison,
 * the graph-count scale. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jit_support.h"

int jit_scaled(int n) {
    const char *s = getenv("OTC_JIT_TEST_SCALE");
    double f = s ? atof(s) : (OTC_JIT_ASAN ? 0.25 : 1.0);
    int k = (int)(n * f + 0.5);
    return k < 1 ? 1 : k;
}

bool jit_close_to(double got, double want, double tol) {
    double m = fabs(want) > 1.0 ? fabs(want) : 1.0;
    return fabs(got - want) <= tol * m || (isnan(got) && isnan(want));
}

/* Random rows for every Input of g at batch; returns them per input (malloc'd). */
float **jit_random_inputs(otc_graph *g, int batch, otc_rng *rng) {
    int n = otc_graph_input_count(g);
    float **rows = calloc((size_t)n + 1, sizeof *rows);
    for (int i = 0; i < n; i++) {
        const otc_node *nd = otc_graph_node(g, otc_graph_input(g, i));
        size_t w = otc_shape_size(nd->shape);
        rows[i] = malloc(w * (size_t)batch * sizeof(float));
        otc_testgen_fill(rng, rows[i], w * (size_t)batch, -2.0f, 2.0f);
    }
    return rows;
}

void jit_free_rows(otc_graph *g, float **rows) {
    for (int i = 0; i < otc_graph_input_count(g); i++) free(rows[i]);
    free(rows);
}

bool jit_set_all(otc_executor *ex, otc_graph *g, float **rows, int batch) {
    for (int i = 0; i < otc_graph_input_count(g); i++)
        if (otc_exec_set_input(ex, otc_graph_input(g, i), rows[i], batch)) return false;
    return true;
}

/* Forward through both backends; every output compared. */
bool jit_forward_agrees(otc_graph *g, otc_executor *jit, int batch, uint64_t seed,
                        const char *what) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    float **rows = jit_random_inputs(g, batch, &rng);
    otc_executor *in = otc_interpreter_new(g, NULL);
    bool ok = in && jit_set_all(in, g, rows, batch) && jit_set_all(jit, g, rows, batch) &&
              otc_exec_forward(in) == OTC_OK && otc_exec_forward(jit) == OTC_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", what, otc_last_error());
    for (int o = 0; ok && o < otc_graph_output_count(g); o++) {
        otc_id id = otc_graph_output(g, o);
        const float *a, *b;
        otc_shape sa, sb;
        ok =
            otc_exec_value(in, id, &a, &sa) == OTC_OK && otc_exec_value(jit, id, &b, &sb) == OTC_OK;
        if (!ok) {
            fprintf(stderr, "%s: value: %s\n", what, otc_last_error());
            break;
        }
        size_t n = otc_shape_size(otc_graph_node(g, id)->shape) * (size_t)batch;
        for (size_t i = 0; ok && i < n; i++) {
            if (!jit_close_to(b[i], a[i], 2e-5)) {
                fprintf(stderr, "%s batch %d: output %d [%zu]: jit %.9g, interpreter %.9g\n", what,
                        batch, o, i, (double)b[i], (double)a[i]);
                ok = false;
            }
        }
    }
    otc_exec_free(in);
    jit_free_rows(g, rows);
    return ok;
}

otc_graph *jit_neat_graph(uint64_t seed, int neurons, bool mixed, bool two_inputs) {
    otc_testgen_neat_options o = otc_testgen_neat_defaults(neurons);
    o.mixed_ops = mixed;
    o.two_inputs = two_inputs;
    return otc_testgen_neat(seed, &o);
}

/* A loss for a generated graph: MSE of its outputs (concatenated when there are several)
 * against a new target input "t". Returns the loss node. */
otc_id jit_add_mse_loss(otc_graph *g) {
    int n = otc_graph_output_count(g);
    otc_id outs[64];
    int w = 0;
    for (int i = 0; i < n && i < 64; i++) {
        outs[i] = otc_graph_output(g, i);
        w += (int)otc_shape_size(otc_graph_node(g, outs[i])->shape);
    }
    otc_id pred = n == 1 ? outs[0] : otc_concat(g, n < 64 ? n : 64, outs, 1);
    otc_id t = otc_input(g, "t", otc_shape_2d(OTC_BATCH, w));
    return otc_mse(g, pred, t);
}
