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
 * OTC_JIT_TEST_SCALE (a float) scales the number of graphs: default 1, or 0.25 in a build
 * with AddressSanitizer (LLVM itself is not instrumented; the counts are about our code). */
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
#define NEED(cond)                                                                                 \
    do {                                                                                           \
        bool need_ok_ = (cond);                                                                    \
        if (!need_ok_) fprintf(stderr, "otc: %s\n", otc_last_error());                             \
        REQUIRE(need_ok_ &&#cond);                                                                 \
    } while (0)

#if defined(__SANITIZE_ADDRESS__)
#define OTC_JIT_ASAN 1
#else
#define OTC_JIT_ASAN 0
#endif

static int scaled(int n) {
    const char *s = getenv("OTC_JIT_TEST_SCALE");
    double f = s ? atof(s) : (OTC_JIT_ASAN ? 0.25 : 1.0);
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
        ok =
            otc_exec_value(in, id, &a, &sa) == OTC_OK && otc_exec_value(jit, id, &b, &sb) == OTC_OK;
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

/* Graphs are compiled in groups: one LLVM module per group keeps the test fast (the
 * optimiser and code generator have a fixed cost per module). */
#define GROUP 40

static otc_graph *random_graph_for(int i, uint64_t seed_base, int max_neurons) {
    if (i % 10 == 9) {
        /* A layered MLP now and then: matmul kernels with epilogues. */
        int sizes[4] = {1 + i % 7, 4 + i % 13, 3 + i % 5, 1 + i % 3};
        otc_op hidden = i % 20 == 9 ? OTC_OP_TANH : OTC_OP_RELU;
        return otc_testgen_mlp(seed_base + (uint64_t)i, 4, sizes, hidden,
                               i % 30 == 9 ? OTC_OP_SIGMOID : -1);
    }
    int neurons = 1 + (i * 37) % max_neurons;
    return neat_graph(seed_base + (uint64_t)i, neurons, i % 2 == 1, i % 3 == 2);
}

TEST(jit_forward_random_graphs) {
    int n = scaled(240), failures = 0;
    for (int g0 = 0; g0 < n && failures < 3; g0 += GROUP) {
        int k = n - g0 < GROUP ? n - g0 : GROUP;
        otc_graph *gs[GROUP];
        otc_executor *ex[GROUP];
        for (int i = 0; i < k; i++) {
            gs[i] = random_graph_for(g0 + i, 1000, 120);
            NEED(gs[i]);
        }
        NEED(otc_jit_executors_new(gs, NULL, k, NULL, ex) == OTC_OK);
        for (int i = 0; i < k; i++) {
            int idx = g0 + i;
            char what[64];
            snprintf(what, sizeof what, "graph %d", idx);
            int batch = idx % 4 == 0 ? 1 : (idx % 4 == 1 ? 8 : (idx % 4 == 2 ? 13 : 67));
            if (!forward_agrees(gs[i], ex[i], batch, (uint64_t)idx, what)) failures++;
            otc_exec_free(ex[i]);
            otc_graph_free(gs[i]);
        }
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
static bool gradients_agree_with(otc_graph *g, otc_executor *jit, otc_id loss, int batch,
                                 uint64_t seed, const char *what) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    float **rows = random_inputs(g, batch, &rng);
    otc_executor *in = otc_interpreter_new(g, NULL);
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
                    fprintf(stderr, "%s: no jit gradient for #%d: %s\n", what, (int)id,
                            otc_last_error());
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
    free_rows(g, rows);
    return ok;
}

TEST(jit_gradients_random_graphs) {
    int n = scaled(80), failures = 0;
    for (int g0 = 0; g0 < n && failures < 3; g0 += GROUP) {
        int k = n - g0 < GROUP ? n - g0 : GROUP;
        otc_graph *gs[GROUP];
        otc_id loss[GROUP];
        otc_executor *ex[GROUP];
        for (int i = 0; i < k; i++) {
            gs[i] = random_graph_for(g0 + i, 5000, 48);
            NEED(gs[i]);
            loss[i] = add_mse_loss(gs[i]);
            NEED(loss[i] >= 0);
        }
        NEED(otc_jit_executors_new(gs, loss, k, NULL, ex) == OTC_OK);
        for (int i = 0; i < k; i++) {
            int idx = g0 + i;
            char what[64];
            snprintf(what, sizeof what, "graph %d", idx);
            int batch = idx % 3 == 0 ? 1 : (idx % 3 == 1 ? 9 : 40);
            if (!gradients_agree_with(gs[i], ex[i], loss[i], batch, (uint64_t)idx, what))
                failures++;
            otc_exec_free(ex[i]);
            otc_graph_free(gs[i]);
        }
    }
    CHECK(failures == 0);
}

/* A training case: a graph, its loss, and how to fill the target input. */
typedef struct {
    otc_graph *g;
    otc_id loss, target;
    int classes; /* > 0: class labels for softmax_ce; -1: values in [0,1) for BCE; 0: any */
    otc_optim_config optim;
} train_case;

static train_case training_case(int i) {
    train_case c = {0};
    c.target = -1;
    if (i % 5 == 3) {
        /* Classification: MLP logits, softmax cross-entropy over class labels [B]. */
        int sizes[3] = {3 + i % 4, 6 + i % 5, 3 + i % 3};
        c.g = otc_testgen_mlp(700 + (uint64_t)i, 3, sizes, OTC_OP_TANH, -1);
        c.classes = sizes[2];
        c.target = otc_input(c.g, "label", otc_shape_1d(OTC_BATCH));
        c.loss = otc_softmax_ce(c.g, otc_graph_output(c.g, 0), c.target);
    } else if (i % 5 == 4) {
        /* Probabilities against targets in [0,1): BCE. */
        int sizes[3] = {2 + i % 3, 5 + i % 4, 2};
        c.g = otc_testgen_mlp(900 + (uint64_t)i, 3, sizes, OTC_OP_RELU, OTC_OP_SIGMOID);
        c.classes = -1;
        c.target = otc_input(c.g, "p", otc_shape_2d(OTC_BATCH, 2));
        c.loss = otc_bce(c.g, otc_graph_output(c.g, 0), c.target);
    } else {
        otc_testgen_neat_options o = otc_testgen_neat_defaults(2 + (i * 13) % 40);
        o.mixed_ops = i % 2 == 1;
        c.g = otc_testgen_neat(300 + (uint64_t)i, &o);
        c.loss = c.g ? add_mse_loss(c.g) : -1;
        c.target = c.g ? otc_graph_find(c.g, "t") : -1;
    }
    /* Optimisers in turn: SGD with momentum, Nesterov, Adam, AdamW (small steps keep both
     * trajectories in the region where rounding differences stay small). */
    switch (i % 4) {
    case 0:
        c.optim = otc_optim_defaults(OTC_OPTIM_SGD);
        c.optim.lr = 0.01f;
        c.optim.momentum = 0.9f;
        break;
    case 1:
        c.optim = otc_optim_defaults(OTC_OPTIM_SGD);
        c.optim.lr = 0.01f;
        c.optim.momentum = 0.5f;
        c.optim.nesterov = true;
        c.optim.weight_decay = 0.01f;
        break;
    case 2:
        c.optim = otc_optim_defaults(OTC_OPTIM_ADAM);
        c.optim.lr = 0.003f;
        c.optim.eps = 1e-4f;
        break;
    default:
        c.optim = otc_optim_defaults(OTC_OPTIM_ADAMW);
        c.optim.lr = 0.003f;
        c.optim.eps = 1e-4f;
        break;
    }
    return c;
}

/* Fill every input for one step (targets by the case's kind). */
static bool feed(otc_executor *ex, const train_case *c, int batch, otc_rng *rng) {
    bool ok = true;
    for (int i = 0; i < otc_graph_input_count(c->g) && ok; i++) {
        otc_id x = otc_graph_input(c->g, i);
        size_t n = otc_shape_size(otc_graph_node(c->g, x)->shape) * (size_t)batch;
        float *d = malloc(n * sizeof(float));
        if (x == c->target && c->classes > 0)
            for (size_t k = 0; k < n; k++) d[k] = (float)otc_rng_below(rng, (uint32_t)c->classes);
        else if (x == c->target && c->classes < 0)
            otc_testgen_fill(rng, d, n, 0.0f, 1.0f);
        else
            otc_testgen_fill(rng, d, n, -2.0f, 2.0f);
        ok = otc_exec_set_input(ex, x, d, batch) == OTC_OK;
        free(d);
    }
    return ok;
}

static bool training_agrees(train_case *c, otc_executor *jit, int idx) {
    otc_graph *ig = otc_graph_clone(c->g);
    otc_executor *in = ig ? otc_interpreter_new(ig, NULL) : NULL;
    otc_optimizer *oi = otc_optimizer_new(&c->optim), *oj = otc_optimizer_new(&c->optim);
    bool ok = in && oi && oj;
    otc_rng ri, rj;
    otc_rng_seed(&ri, 40 + (uint64_t)idx);
    rj = ri;
    int batch = 1 + idx % 17;
    int steps = getenv("OTC_JIT_DEBUG_STEPS") ? atoi(getenv("OTC_JIT_DEBUG_STEPS")) : 100;
    for (int step = 0; step < steps && ok; step++) {
        float li = 0, lj = 0;
        ok = feed(in, c, batch, &ri) && feed(jit, c, batch, &rj) &&
             otc_exec_train_step(in, c->loss, oi, &li) == OTC_OK &&
             otc_exec_train_step(jit, c->loss, oj, &lj) == OTC_OK;
        if (!ok) {
            fprintf(stderr, "case %d step %d: %s\n", idx, step, otc_last_error());
        } else if (!close_to(lj, li, 2e-3)) {
            fprintf(stderr, "case %d step %d: loss jit %.9g interpreter %.9g\n", idx, step,
                    (double)lj, (double)li);
            ok = false;
        }
    }
    if (ok) ok = otc_exec_sync_params(jit) == OTC_OK;
    if (getenv("OTC_JIT_DEBUG_STEPS")) {
        double worst = 0;
        for (otc_id id = 0; id < otc_graph_size(c->g); id++) {
            const otc_node *nd = otc_graph_node(c->g, id);
            if (nd->op != OTC_OP_PARAMETER) continue;
            for (size_t k = 0; k < nd->value->size; k++)
                worst =
                    fmax(worst, fabs(nd->value->data[k] - otc_graph_node(ig, id)->value->data[k]));
        }
        fprintf(stderr, "case %d: largest weight difference %g\n", idx, worst);
    }
    for (otc_id id = 0; ok && id < otc_graph_size(c->g); id++) {
        const otc_node *nd = otc_graph_node(c->g, id);
        if (nd->op != OTC_OP_PARAMETER) continue;
        const otc_tensor *a = otc_graph_node(ig, id)->value, *b = nd->value;
        for (size_t k = 0; ok && k < a->size; k++) {
            if (!close_to(b->data[k], a->data[k], 2e-3)) {
                char lab[64];
                fprintf(stderr, "case %d: after 100 steps %s[%zu]: jit %.9g interpreter %.9g\n",
                        idx, otc_graph_node_label(c->g, id, lab, sizeof lab), k, (double)b->data[k],
                        (double)a->data[k]);
                ok = false;
            }
        }
    }
    otc_optimizer_free(oi);
    otc_optimizer_free(oj);
    otc_exec_free(in);
    otc_graph_free(ig);
    return ok;
}

TEST(jit_training_100_steps) {
    int n = scaled(40), failures = 0;
    int only = getenv("OTC_JIT_DEBUG_CASE") ? atoi(getenv("OTC_JIT_DEBUG_CASE")) : -1;
    if (only >= 0) {
        train_case c = training_case(only);
        otc_executor *ex;
        NEED(otc_jit_executors_new(&c.g, &c.loss, 1, NULL, &ex) == OTC_OK);
        CHECK(training_agrees(&c, ex, only));
        otc_exec_free(ex);
        otc_graph_free(c.g);
        return;
    }
    for (int g0 = 0; g0 < n && failures < 3; g0 += GROUP) {
        int k = n - g0 < GROUP ? n - g0 : GROUP;
        train_case cs[GROUP];
        otc_graph *gs[GROUP];
        otc_id loss[GROUP];
        otc_executor *ex[GROUP];
        for (int i = 0; i < k; i++) {
            cs[i] = training_case(g0 + i);
            NEED(cs[i].g && cs[i].loss >= 0);
            gs[i] = cs[i].g;
            loss[i] = cs[i].loss;
        }
        NEED(otc_jit_executors_new(gs, loss, k, NULL, ex) == OTC_OK);
        for (int i = 0; i < k; i++) {
            if (!training_agrees(&cs[i], ex[i], g0 + i)) failures++;
            otc_exec_free(ex[i]);
            otc_graph_free(gs[i]);
        }
    }
    CHECK(failures == 0);
}

/* Resident set size in KiB, from /proc/self/statm (pages). */
static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* 10,000 graphs compiled (in groups of 100: one LLVM module, one ResourceTracker each; the
 * cache off so every one is compiled), run once and freed: resident memory after the first
 * 2,000 stays where it was. The graph is the smallest there is (x -> one neuron), so the
 * test measures the JIT's bookkeeping, not the optimiser. */
TEST(jit_memory_flat_over_10000_graphs) {
    enum { BATCH = 100 };
    int total = scaled(10000);
    otc_jit_options o = otc_jit_defaults();
    o.no_cache = true;
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    int col = 0;
    float w = 0.5f;
    otc_id y = otc_neuron(g, "y", OTC_ACT_IDENTITY, 0.25f, 1.0f, 1, &x, &col, &w);
    NEED(y >= 0 && otc_graph_mark_output(g, y) == OTC_OK);
    otc_graph *gs[BATCH];
    for (int i = 0; i < BATCH; i++) gs[i] = g;
    long warm = 0, peak = 0;
    const float in[1] = {2.0f};
    for (int done = 0; done < total; done += BATCH) {
        otc_executor *ex[BATCH];
        int k = total - done < BATCH ? total - done : BATCH;
        NEED(otc_jit_executors_new(gs, NULL, k, &o, ex) == OTC_OK);
        for (int i = 0; i < k; i++) {
            const float *out;
            CHECK(otc_exec_set_input(ex[i], x, in, 1) == OTC_OK);
            CHECK(otc_exec_forward(ex[i]) == OTC_OK);
            CHECK(otc_exec_value(ex[i], y, &out, NULL) == OTC_OK && out[0] == 1.25f);
            otc_exec_free(ex[i]);
        }
        long now = rss_kib();
        if (getenv("OTC_JIT_DEBUG_RSS")) fprintf(stderr, "%d %ld\n", done + k, now);
        if (done + k <= total / 5) warm = now;
        if (now > peak) peak = now;
    }
    otc_graph_free(g);
    /* Flat: allocator slack at most, where keeping each module would add ~100 MiB. */
    fprintf(stderr, "jit memory: rss %ld KiB after %d compiles, peak %ld KiB over %d\n", warm,
            total / 5, peak, total);
    /* AddressSanitizer keeps freed memory in quarantine: resident size says nothing there
     * (leaks are its own report). */
    if (!OTC_JIT_ASAN) CHECK_MSG(peak - warm < 8 * 1024, "grew from %ld to %ld KiB", warm, peak);
}

/* ---- ahead of time: object files linked by a C compiler ---- */

/* Writes the C program that runs NAME_forward on `batch` rows of `in` and prints the outputs
 * one per line. */
static bool write_main(const char *path, const char *name, const float *in, int batch, int in_w,
                       int out_w) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fprintf(f, "#include <stdio.h>\n#include <stdlib.h>\n#include \"%s.h\"\n", name);
    fprintf(f, "static const float in[] = {");
    for (int i = 0; i < batch * in_w; i++)
        fprintf(f, "%.9g%s", (double)in[i], i + 1 < batch * in_w ? "," : "");
    fprintf(f, "};\nint main(void) {\n    float out[%d];\n", batch * out_w);
    fprintf(f, "    void *ws = malloc(%s_workspace_bytes(%d));\n", name, batch);
    fprintf(f, "    if (%s_forward(in, out, %d, ws) != 0) return 1;\n", name, batch);
    fprintf(f, "    for (int i = 0; i < %d; i++) printf(\"%%.9g\\n\", out[i]);\n", batch * out_w);
    fprintf(f, "    free(ws);\n    return %s_INPUTS == %d && %s_OUTPUTS == %d ? 0 : 2;\n}\n", name,
            in_w, name, out_w);
    return fclose(f) == 0;
}

/* Emit the graph's object for triple (NULL: host), link it with cc, run it (through runner,
 * e.g. qemu), compare with the interpreter. */
static bool object_runs(otc_graph *g, const char *triple, const char *cc, const char *runner,
                        const char *tag) {
    char dir[] = "/tmp/otc_jit_objXXXXXX";
    if (!mkdtemp(dir)) return false;
    int batch = 11, in_w = otc_testgen_input_width(g), out_w = otc_testgen_output_width(g);
    otc_rng rng;
    otc_rng_seed(&rng, 99);
    float *in = malloc((size_t)(batch * in_w) * sizeof(float));
    otc_testgen_fill(&rng, in, (size_t)(batch * in_w), -2.0f, 2.0f);
    char obj[128], mainc[128], exe[128], cmd[1024], out_path[128];
    snprintf(obj, sizeof obj, "%s/net.o", dir);
    snprintf(mainc, sizeof mainc, "%s/main.c", dir);
    snprintf(exe, sizeof exe, "%s/run", dir);
    snprintf(out_path, sizeof out_path, "%s/out.txt", dir);
    otc_emit_llvm_options eo = otc_emit_llvm_defaults();
    eo.name = "net";
    eo.triple = triple;
    bool ok = otc_emit_llvm_file(g, &eo, OTC_EMIT_OBJ, obj, NULL) == OTC_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", tag, otc_last_error());
    ok = ok && write_main(mainc, "net", in, batch, in_w, out_w);
    snprintf(cmd, sizeof cmd, "%s -O1 -I%s %s %s -o %s", cc, dir, mainc, obj, exe);
    if (ok && system(cmd) != 0) {
        fprintf(stderr, "%s: link failed: %s\n", tag, cmd);
        ok = false;
    }
    snprintf(cmd, sizeof cmd, "%s %s > %s", runner, exe, out_path);
    if (ok && system(cmd) != 0) {
        fprintf(stderr, "%s: run failed: %s\n", tag, cmd);
        ok = false;
    }
    /* The interpreter's outputs, sample-major like the object's rows. */
    otc_executor *ref = otc_interpreter_new(g, NULL);
    ok = ok && ref && otc_exec_set_input(ref, otc_graph_input(g, 0), in, batch) == OTC_OK &&
         otc_exec_forward(ref) == OTC_OK;
    FILE *f = ok ? fopen(out_path, "r") : NULL;
    for (int b = 0; f && ok && b < batch; b++) {
        int col = 0;
        for (int o = 0; ok && o < otc_graph_output_count(g); o++) {
            otc_id id = otc_graph_output(g, o);
            const float *v;
            int w = (int)otc_shape_size(otc_graph_node(g, id)->shape);
            ok = otc_exec_value(ref, id, &v, NULL) == OTC_OK;
            for (int e = 0; ok && e < w; e++, col++) {
                double got;
                if (fscanf(f, "%lf", &got) != 1) ok = false;
                if (ok && !close_to(got, v[b * w + e], 2e-5)) {
                    fprintf(stderr, "%s: sample %d output %d: object %.9g interpreter %.9g\n", tag,
                            b, col, got, (double)v[b * w + e]);
                    ok = false;
                }
            }
        }
    }
    if (f) fclose(f);
    otc_exec_free(ref);
    free(in);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) ok = false;
    return ok;
}

TEST(jit_object_host_links_and_runs) {
    otc_graph *g = neat_graph(4242, 30, true, false);
    NEED(g);
    CHECK(object_runs(g, NULL, "cc", "", "host object"));
    otc_graph_free(g);
}

TEST(jit_object_aarch64_under_qemu) {
    otc_graph *g = neat_graph(4343, 30, true, false);
    NEED(g);
    CHECK(object_runs(g, "aarch64-linux-gnu", "aarch64-linux-gnu-gcc",
                      "qemu-aarch64 -L /usr/aarch64-linux-gnu", "aarch64 object"));
    otc_graph_free(g);
    /* And a dense model: matmul kernels on NEON. */
    int sizes[4] = {5, 16, 8, 3};
    g = otc_testgen_mlp(4344, 4, sizes, OTC_OP_TANH, -1);
    NEED(g);
    NEED(otc_graph_mark_output(g, otc_softmax(g, otc_graph_output(g, 0))) == OTC_OK);
    CHECK(object_runs(g, "aarch64-linux-gnu", "aarch64-linux-gnu-gcc",
                      "qemu-aarch64 -L /usr/aarch64-linux-gnu", "aarch64 mlp object"));
    otc_graph_free(g);
}

/* ---- errors from LLVM and from the executor API ---- */

TEST(jit_llvm_errors_are_otc_errors) {
    /* Not IR at all: LLVM's parser error, as an otc error. */
    CHECK(otc_jit_check_ir("this is not IR") == OTC_ERR_FORMAT);
    CHECK(strstr(otc_last_error(), "does not parse") != NULL);
    /* Parses, but %x does not dominate its use: the verifier's message, never an abort. */
    const char *bad = "define i32 @f(i1 %c) {\n"
                      "entry:\n  br i1 %c, label %a, label %b\n"
                      "a:\n  %x = add i32 1, 2\n  br label %b\n"
                      "b:\n  ret i32 %x\n}\n";
    CHECK(otc_jit_check_ir(bad) == OTC_ERR_STATE);
    CHECK_MSG(strstr(otc_last_error(), "verification") != NULL, "%s", otc_last_error());
    CHECK_MSG(strstr(otc_last_error(), "dominate") != NULL, "%s", otc_last_error());
    /* A call to a function nobody defines: the JIT's linker error. */
    const char *unresolved = "declare i32 @otc_no_such_function(i32)\n"
                             "define i32 @g(i32 %x) {\n"
                             "  %y = call i32 @otc_no_such_function(i32 %x)\n  ret i32 %y\n}\n";
    CHECK(otc_jit_check_ir(unresolved) == OTC_ERR_STATE);
    CHECK_MSG(strstr(otc_last_error(), "otc_no_such_function") != NULL, "%s", otc_last_error());
    /* And good IR compiles. */
    CHECK(otc_jit_check_ir("define i32 @h(i32 %x) {\n  %y = mul i32 %x, 3\n  ret i32 %y\n}\n") ==
          OTC_OK);
}

TEST(jit_bad_label_is_an_error_naming_the_node) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    otc_id lab = otc_input(g, "label", otc_shape_1d(OTC_BATCH));
    otc_id loss = otc_softmax_ce(g, x, lab);
    NEED(loss >= 0 && otc_graph_set_name(g, loss, "ce") == OTC_OK);
    otc_id losses[1] = {loss};
    otc_executor *ex;
    NEED(otc_jit_executors_new(&g, losses, 1, NULL, &ex) == OTC_OK);
    const float xv[6] = {1, 2, 3, 4, 5, 6}, good[2] = {0, 2}, bad[2] = {1, 3};
    CHECK(otc_exec_set_input(ex, x, xv, 2) == OTC_OK);
    CHECK(otc_exec_set_input(ex, lab, good, 2) == OTC_OK);
    CHECK(otc_exec_forward(ex) == OTC_OK);
    const float *v;
    CHECK(otc_exec_value(ex, loss, &v, NULL) == OTC_OK);
    /* By hand: mean over the rows of logsumexp(row) - row[label]. */
    double l0 = log(exp(1.0) + exp(2.0) + exp(3.0)) - 1.0;
    double l1 = log(exp(4.0) + exp(5.0) + exp(6.0)) - 6.0;
    CHECK_NEAR(v[0], (l0 + l1) / 2, 1e-5);
    CHECK(otc_exec_set_input(ex, lab, bad, 2) == OTC_OK);
    CHECK(otc_exec_forward(ex) == OTC_ERR_ARG);
    CHECK_MSG(strstr(otc_last_error(), "'ce'") != NULL, "%s", otc_last_error());
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(jit_executor_errors) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id h = otc_activation(g, OTC_OP_TANH, x, 0.0f);
    otc_id y = otc_activation(g, OTC_OP_SIGMOID, h, 0.0f);
    NEED(y >= 0 && otc_graph_mark_output(g, y) == OTC_OK);
    otc_jit_options o = otc_jit_defaults();
    o.inference = true;
    otc_executor *ex = otc_jit_executor_new(g, &o);
    NEED(ex);
    CHECK(otc_is_jit_executor(ex));
    const float d[4] = {1, 2, 3, 4};
    CHECK(otc_exec_forward(ex) == OTC_ERR_STATE); /* x not set */
    CHECK(strstr(otc_last_error(), "'x'") != NULL);
    CHECK(otc_exec_set_input(ex, y, d, 1) == OTC_ERR_ARG);
    CHECK(otc_exec_set_input(ex, x, d, 0) == OTC_ERR_ARG);
    CHECK(otc_exec_set_input(ex, x, d, 2) == OTC_OK);
    CHECK(otc_exec_forward(ex) == OTC_OK);
    const float *v;
    CHECK(otc_exec_value(ex, y, &v, NULL) == OTC_OK);
    CHECK_NEAR(v[3], 1.0 / (1.0 + exp(-tanh(4.0))), 1e-6);
    /* h lives in a register inside the fused kernel: asking for it is a clear error. */
    CHECK(otc_exec_value(ex, h, &v, NULL) == OTC_ERR_UNSUPPORTED);
    CHECK(strstr(otc_last_error(), "output") != NULL);
    CHECK(otc_exec_backward(ex, y) == OTC_ERR_STATE);
    otc_exec_free(ex);
    /* Recurrent state is not compiled: the error names the op and the node. */
    otc_id dl = otc_delay(g, "state", otc_shape_2d(OTC_BATCH, 2));
    otc_id z = otc_add(g, dl, x);
    NEED(z >= 0 && otc_graph_mark_output(g, z) == OTC_OK);
    CHECK(otc_jit_executor_new(g, NULL) == NULL);
    CHECK_MSG(strstr(otc_last_error(), "delay") && strstr(otc_last_error(), "'state'"), "%s",
              otc_last_error());
    otc_graph_free(g);
}

/* Gradients accumulate over backward calls until zero_grad; train_step writes back with
 * sync_params; batches may change between calls. */
TEST(jit_executor_accumulates_and_syncs) {
    otc_graph *g = neat_graph(808, 12, false, false);
    NEED(g);
    otc_id loss = add_mse_loss(g);
    otc_id t = otc_graph_find(g, "t");
    NEED(loss >= 0 && t >= 0);
    otc_executor *ex = otc_jit_executor_new(g, NULL);
    NEED(ex);
    otc_rng rng;
    otc_rng_seed(&rng, 5);
    float **rows = random_inputs(g, 20, &rng);
    NEED(set_all(ex, g, rows, 20) && otc_exec_forward(ex) == OTC_OK);
    NEED(otc_exec_backward(ex, loss) == OTC_OK);
    otc_id w = otc_graph_find(g, "o0.w");
    NEED(w >= 0);
    const float *gr;
    NEED(otc_exec_grad(ex, w, &gr) == OTC_OK);
    float once = gr[0];
    NEED(otc_exec_backward(ex, loss) == OTC_OK);
    NEED(otc_exec_grad(ex, w, &gr) == OTC_OK);
    CHECK_NEAR(gr[0], 2.0 * once, 1e-6 * (1 + fabs(once)));
    otc_exec_zero_grad(ex);
    NEED(otc_exec_grad(ex, w, &gr) == OTC_OK);
    CHECK(gr[0] == 0.0f);
    /* Three batch sizes in turn. */
    int batches[3] = {20, 3, 9};
    otc_optim_config c = otc_optim_defaults(OTC_OPTIM_SGD);
    c.lr = 0.1f;
    otc_optimizer *opt = otc_optimizer_new(&c);
    float before = otc_graph_node(g, w)->value->data[0];
    for (int i = 0; i < 3; i++) {
        NEED(set_all(ex, g, rows, batches[i]));
        float lv;
        CHECK(otc_exec_train_step(ex, loss, opt, &lv) == OTC_OK && isfinite(lv));
    }
    /* The graph keeps its values until the executor writes its own back. */
    CHECK(otc_graph_node(g, w)->value->data[0] == before);
    CHECK(otc_exec_sync_params(ex) == OTC_OK);
    CHECK(otc_graph_node(g, w)->value->data[0] != before);
    otc_optimizer_free(opt);
    free_rows(g, rows);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Identical structures compile once; each executor still computes with its own weights. */
TEST(jit_cache_keys_on_structure_not_weights) {
    otc_jit_cache_clear();
    otc_graph *a = neat_graph(9090, 20, false, false);
    otc_graph *b = otc_graph_clone(a);
    NEED(a && b);
    for (otc_id id = 0; id < otc_graph_size(b); id++) {
        if (otc_graph_node(b, id)->op != OTC_OP_PARAMETER) continue;
        otc_tensor *p = otc_graph_param(b, id);
        for (size_t i = 0; i < p->size; i++) p->data[i] = -0.5f * p->data[i] + 0.1f;
    }
    otc_executor *ea = otc_jit_executor_new(a, NULL), *eb = otc_jit_executor_new(b, NULL);
    NEED(ea && eb);
    otc_jit_stats sa, sb;
    CHECK(otc_jit_executor_stats(ea, &sa) == OTC_OK && sa.compiles == 1 && sa.cache_hits == 0);
    CHECK(otc_jit_executor_stats(eb, &sb) == OTC_OK && sb.compiles == 0 && sb.cache_hits == 1);
    CHECK(sa.compile_ms > 0.0 && sb.compile_ms == 0.0);
    CHECK(forward_agrees(a, ea, 5, 1, "cached a"));
    CHECK(forward_agrees(b, eb, 5, 1, "cached b"));
    otc_jit_cache_stats cs = otc_jit_cache_info();
    CHECK(cs.entries >= 1 && cs.in_use >= 1);
    otc_exec_free(ea);
    otc_exec_free(eb);
    /* Unused entries stay for the next genome of that shape, until the cache is cleared. */
    CHECK(otc_jit_cache_info().in_use == 0);
    otc_jit_cache_clear();
    CHECK(otc_jit_cache_info().entries == 0);
    otc_graph_free(a);
    otc_graph_free(b);
}

/* The evolve policy: interprets while the work is small, switches to compiled code when it
 * has done as much work as a compile costs (inputs replayed), and stays correct across. */
TEST(jit_policy_switches_when_work_pays) {
    otc_graph *g = neat_graph(6060, 15, false, false);
    NEED(g);
    otc_jit_policy pol = otc_jit_policy_defaults();
    /* A compile "costs" 50 forwards of this graph. */
    pol.compile_ms = 0.0;
    pol.compile_ms_per_node = 50.0 * pol.interp_ns * 1e-6;
    otc_jit_policy_set(&pol);
    otc_jit_policy_stats before = otc_jit_policy_info();
    otc_exec_options o = {.inference = true};
    otc_executor *ex = otc_jit_policy_executor(g, &o);
    NEED(ex);
    for (int i = 0; i < 80; i++) {
        if (!forward_agrees(g, ex, 1, (uint64_t)i, "policy")) {
            CHECK(false);
            break;
        }
        otc_jit_policy_stats now = otc_jit_policy_info();
        /* Interpreted for the first 50 forwards, compiled from the 51st. */
        CHECK(now.compiled - before.compiled == (i >= 50 ? 1 : 0));
    }
    otc_exec_free(ex);
    /* Training: decided at creation from the expected training samples. */
    o.inference = false;
    pol = otc_jit_policy_defaults();
    pol.train_samples = 10; /* nothing worth compiling */
    otc_jit_policy_set(&pol);
    ex = otc_jit_policy_executor(g, &o);
    NEED(ex);
    CHECK(strcmp(otc_exec_backend(ex), "interpreter") == 0);
    otc_exec_free(ex);
    pol.train_samples = 1e9; /* a long training job */
    otc_jit_policy_set(&pol);
    ex = otc_jit_policy_executor(g, &o);
    NEED(ex);
    CHECK(strcmp(otc_exec_backend(ex), "jit") == 0);
    otc_exec_free(ex);
    otc_jit_policy_set(NULL);
    otc_graph_free(g);
}
