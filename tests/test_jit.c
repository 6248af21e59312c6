/* The LLVM JIT against the interpreter: forward values, gradients and 100 training steps on
 * random evolved-style graphs and MLPs; the executor API's errors; the structure cache;
 * memory staying flat over 10,000 compiles; LLVM errors as otc errors; an aarch64 object
 * file linked and run under qemu.
 *
 * Tolerances: the JIT evaluates exp/tanh/log/sin with its own polynomials (a few ulp from
 * libm) and fuses multiply-adds, so values agree to rounding, not bit for bit: forward within
 * 2e-5 * max(1, |x|), gradients within 1e-3 * max(1, |g|) (they pass through derivative
 * formulas that cancel, e.g. 1 - y^2), training trajectories within 2e-3 after 100 steps.
 *
 * OTC_JIT_TEST_SCALE (a float, default 1) scales the number of graphs, e.g. 0.2 under ASan. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "otc/jit.h"
#include "otc/otc.h"
#include "random_graph.h"

/* REQUIRE, printing otc_last_error() first when it fails. */
#define NEED(cond)                                                                          \
    do {                                                                                    \
        if (!(cond)) fprintf(stderr, "otc: %s\n", otc_last_error());                        \
        REQUIRE(cond);                                                                      \
    } while (0)

static int scaled(int n) {
    const char *s = getenv("OTC_JIT_TEST_SCALE");
    double f = s ? atof(s) : 1.0;
    int k = (int)(n * f + 0.5);
    return k < 1 ? 1 : k;
}

static bool close_to(double got, double want, double tol) {
    double m = fabs(want) > 1.0 ? fabs(want) : 1.0;
    return fabs(got - want) <= tol * m || (isnan(got) && isnan(want));
}

/* Random rows for every Input of g at batch; returns them per input (malloc'd). */
static float **random_inputs(otc_graph *g, int batch, otc_rng *rng) {
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

static void free_rows(otc_graph *g, float **rows) {
    for (int i = 0; i < otc_graph_input_count(g); i++) free(rows[i]);
    free(rows);
}

static bool set_all(otc_executor *ex, otc_graph *g, float **rows, int batch) {
    for (int i = 0; i < otc_graph_input_count(g); i++)
        if (otc_exec_set_input(ex, otc_graph_input(g, i), rows[i], batch)) return false;
    return true;
}

/* Forward through both backends; every output compared. */
static bool forward_agrees(otc_graph *g, otc_executor *jit, int batch, uint64_t seed,
                           const char *what) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    float **rows = random_inputs(g, batch, &rng);
    otc_executor *in = otc_interpreter_new(g, NULL);
    bool ok = in && set_all(in, g, rows, batch) && set_all(jit, g, rows, batch) &&
              otc_exec_forward(in) == OTC_OK && otc_exec_forward(jit) == OTC_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", what, otc_last_error());
    for (int o = 0; ok && o < otc_graph_output_count(g); o++) {
        otc_id id = otc_graph_output(g, o);
        const float *a, *b;
        otc_shape sa, sb;
        ok = otc_exec_value(in, id, &a, &sa) == OTC_OK && otc_exec_value(jit, id, &b, &sb) == OTC_OK;
        if (!ok) {
            fprintf(stderr, "%s: value: %s\n", what, otc_last_error());
            break;
        }
        size_t n = otc_shape_size(otc_graph_node(g, id)->shape) * (size_t)batch;
        for (size_t i = 0; ok && i < n; i++) {
            if (!close_to(b[i], a[i], 2e-5)) {
                fprintf(stderr, "%s batch %d: output %d [%zu]: jit %.9g, interpreter %.9g\n", what,
                        batch, o, i, (double)b[i], (double)a[i]);
                ok = false;
            }
        }
    }
    otc_exec_free(in);
    free_rows(g, rows);
    return ok;
}

static otc_graph *neat_graph(uint64_t seed, int neurons, bool mixed, bool two_inputs) {
    otc_testgen_neat_options o = otc_testgen_neat_defaults(neurons);
    o.mixed_ops = mixed;
    o.two_inputs = two_inputs;
    return otc_testgen_neat(seed, &o);
}

TEST(jit_forward_small_graph) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    otc_id srcs[3] = {x, x, x};
    int cols[3] = {0, 1, 2};
    float w[3] = {0.5f, -1.0f, 2.0f};
    otc_id h = otc_neuron(g, "h", OTC_ACT_TANH, 0.25f, 1.0f, 3, srcs, cols, w);
    otc_id h2 = otc_neuron(g, "h2", OTC_ACT_SIGMOID, -0.5f, 1.0f, 1, &h, cols, w);
    REQUIRE(h2 >= 0);
    REQUIRE(otc_graph_mark_output(g, h2) == OTC_OK);
    otc_executor *jit = otc_jit_executor_new(g, NULL);
    NEED(jit);
    CHECK(strcmp(otc_exec_backend(jit), "jit") == 0);
    /* By hand: h = tanh(0.25 + 0.5*1 - 1*2 + 2*3) = tanh(4.75); h2 = sigmoid(-0.5 + 0.5 h). */
    const float in[3] = {1, 2, 3};
    REQUIRE(otc_exec_set_input(jit, x, in, 1) == OTC_OK);
    REQUIRE(otc_exec_forward(jit) == OTC_OK);
    const float *y;
    REQUIRE(otc_exec_value(jit, h2, &y, NULL) == OTC_OK);
    double hv = tanh(4.75);
    CHECK_NEAR(y[0], 1.0 / (1.0 + exp(-(-0.5 + 0.5 * hv))), 1e-6);
    for (int b = 1; b <= 40; b += 13) CHECK(forward_agrees(g, jit, b, 7 + (uint64_t)b, "small"));
    otc_exec_free(jit);
    otc_graph_free(g);
}

TEST(jit_forward_random_neat) {
    int n = scaled(200);
    int failures = 0;
    for (int i = 0; i < n && failures < 3; i++) {
        int neurons = 1 + (i * 37) % 120;
        otc_graph *g = neat_graph(1000 + (uint64_t)i, neurons, i % 2 == 1, i % 3 == 2);
        NEED(g);
        otc_executor *jit = otc_jit_executor_new(g, NULL);
        if (!jit) {
            fprintf(stderr, "graph %d: %s\n", i, otc_last_error());
            failures++;
            otc_graph_free(g);
            continue;
        }
        char what[64];
        snprintf(what, sizeof what, "neat graph %d (%d neurons)", i, neurons);
        int batch = i % 4 == 0 ? 1 : (i % 4 == 1 ? 8 : (i % 4 == 2 ? 13 : 67));
        if (!forward_agrees(g, jit, batch, (uint64_t)i, what)) failures++;
        otc_exec_free(jit);
        otc_graph_free(g);
    }
    CHECK(failures == 0);
}

/* A loss for a generated graph: MSE of its outputs (concatenated when there are several)
 * against a new target input "t". Returns the loss node. */
static otc_id add_mse_loss(otc_graph *g) {
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

/* Gradients of every trainable parameter after one backward through both backends. */
static bool gradients_agree(otc_graph *g, otc_id loss, int batch, uint64_t seed,
                            const char *what) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    float **rows = random_inputs(g, batch, &rng);
    otc_executor *in = otc_interpreter_new(g, NULL);
    otc_executor *jit = otc_jit_executor_new(g, NULL);
    bool ok = in && jit && set_all(in, g, rows, batch) && set_all(jit, g, rows, batch) &&
              otc_exec_forward(in) == OTC_OK && otc_exec_forward(jit) == OTC_OK &&
              otc_exec_backward(in, loss) == OTC_OK && otc_exec_backward(jit, loss) == OTC_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", what, otc_last_error());
    const float *la, *lb;
    if (ok && otc_exec_value(in, loss, &la, NULL) == OTC_OK &&
        otc_exec_value(jit, loss, &lb, NULL) == OTC_OK && !close_to(lb[0], la[0], 2e-5)) {
        fprintf(stderr, "%s: loss jit %.9g interpreter %.9g\n", what, (double)lb[0], (double)la[0]);
        ok = false;
    }
    for (otc_id id = 0; ok && id < otc_graph_size(g); id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op != OTC_OP_PARAMETER || !nd->trainable) continue;
        const float *ga, *gb;
        if (otc_exec_grad(in, id, &ga) != OTC_OK) continue;
        if (otc_exec_grad(jit, id, &gb) != OTC_OK) {
            /* The plan leaves out parameters the loss cannot reach: their gradient is 0. */
            for (size_t i = 0; i < nd->value->size; i++)
                if (ga[i] != 0.0f) {
                    fprintf(stderr, "%s: no jit gradient for #%d: %s\n", what, (int)id, otc_last_error());
                    ok = false;
                    break;
                }
            continue;
        }
        for (size_t i = 0; ok && i < nd->value->size; i++) {
            if (!close_to(gb[i], ga[i], 1e-3)) {
                char lab[64];
                fprintf(stderr, "%s batch %d: grad %s[%zu]: jit %.9g interpreter %.9g\n", what,
                        batch, otc_graph_node_label(g, id, lab, sizeof lab), i, (double)gb[i],
                        (double)ga[i]);
                ok = false;
            }
        }
    }
    otc_exec_free(in);
    otc_exec_free(jit);
    free_rows(g, rows);
    return ok;
}

TEST(jit_gradients_random_neat) {
    int n = scaled(60);
    int failures = 0;
    for (int i = 0; i < n && failures < 3; i++) {
        int neurons = 1 + (i * 29) % 60;
        otc_graph *g = neat_graph(5000 + (uint64_t)i, neurons, i % 2 == 0, i % 3 == 1);
        NEED(g);
        otc_id loss = add_mse_loss(g);
        NEED(loss >= 0);
        char what[64];
        snprintf(what, sizeof what, "neat graph %d (%d neurons)", i, neurons);
        int batch = i % 3 == 0 ? 1 : (i % 3 == 1 ? 9 : 40);
        if (!gradients_agree(g, loss, batch, (uint64_t)i, what)) failures++;
        otc_graph_free(g);
    }
    CHECK(failures == 0);
}
