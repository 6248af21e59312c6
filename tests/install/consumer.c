/* A program built against an installed otc (pkg-config or find_package): builds
 * y = tanh(x W + b) for two rows, runs forward and checks y against values worked out by
 * hand; with OTC_TEST_JIT also through the LLVM JIT (libotc_compiler). Exit 0 when right. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "otc/otc.h"
#ifdef OTC_TEST_JIT
#include "otc/jit.h"
#endif

/* x W + b = [1*0.5 + 2*(-1) + 0.25, 3*0.5 + (-1)*(-1) + 0.25] = [-1.25, 2.75]. */
static const float expect[2] = {-0.84828364f /* tanh(-1.25) */, 0.99185972f /* tanh(2.75) */};

static int check(const char *what, otc_executor *ex, otc_id x, otc_id y) {
    const float xs[4] = {1, 2, 3, -1};
    const float *out = NULL;
    if (!ex || otc_exec_set_input(ex, x, xs, 2) || otc_exec_forward(ex) ||
        otc_exec_value(ex, y, &out, NULL)) {
        fprintf(stderr, "%s: %s\n", what, otc_last_error());
        return 1;
    }
    for (int i = 0; i < 2; i++)
        if (fabsf(out[i] - expect[i]) > 1e-5f) {
            fprintf(stderr, "%s: y[%d] = %.7f, expected %.7f\n", what, i, out[i], expect[i]);
            return 1;
        }
    printf("%s: y = [%.6f, %.6f]\n", what, out[0], out[1]);
    return 0;
}

int main(void) {
    const float w[2] = {0.5f, -1.0f}, b[1] = {0.25f};
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id wp = otc_param(g, "W", otc_shape_2d(2, 1), w);
    otc_id bp = otc_param(g, "b", otc_shape_1d(1), b);
    otc_id xw = otc_matmul(g, x, wp);
    otc_id y = otc_activation(g, OTC_OP_TANH, otc_add(g, xw, otc_row_broadcast(g, bp, xw)), 0);
    if (y < 0 || otc_graph_mark_output(g, y)) {
        fprintf(stderr, "graph: %s\n", otc_last_error());
        return 1;
    }
    printf("otc %s\n", OTC_VERSION);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    int rc = check("interpreter", ex, x, y);
    otc_exec_free(ex);
#ifdef OTC_TEST_JIT
    otc_jit_options o = otc_jit_defaults();
    ex = otc_jit_executor_new(g, &o);
    rc |= check("jit", ex, x, y);
    if (ex) otc_exec_free(ex);
#endif
    otc_graph_free(g);
    return rc;
}
