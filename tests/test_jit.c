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

/* Graphs are compiled in groups: one LLVM module per group keeps the test fast (the
 * optimiser and code generator have a fixed cost per module). */
#define GROUP 40

static otc_graph *random_graph_for(int i, uint64_t seed_base) {
    if (i % 10 == 9) {
        /* A layered MLP now and then: matmul kernels with epilogues. */
        int sizes[4] = {1 + i % 7, 4 + i % 13, 3 + i % 5, 1 + i % 3};
        otc_op hidden = i % 20 == 9 ? OTC_OP_TANH : OTC_OP_RELU;
        return otc_testgen_mlp(seed_base + (uint64_t)i, 4, sizes, hidden,
                               i % 30 == 9 ? OTC_OP_SIGMOID : -1);
    }
    int neurons = 1 + (i * 37) % 120;
    return neat_graph(seed_base + (uint64_t)i, neurons, i % 2 == 1, i % 3 == 2);
}

TEST(jit_forward_random_graphs) {
    int n = scaled(240), failures = 0;
    for (int g0 = 0; g0 < n && failures < 3; g0 += GROUP) {
        int k = n - g0 < GROUP ? n - g0 : GROUP;
        otc_graph *gs[GROUP];
        otc_executor *ex[GROUP];
        for (int i = 0; i < k; i++) {
            gs[i] = random_graph_for(g0 + i, 1000);
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
            gs[i] = random_graph_for(g0 + i, 5000);
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
                worst = fmax(worst, fabs(nd->value->data[k] - otc_graph_node(ig, id)->value->data[k]));
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
                        idx, otc_graph_node_label(c->g, id, lab, sizeof lab), k,
                        (double)b->data[k], (double)a->data[k]);
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

/* 10,000 distinct graphs compiled (in groups of 100, one LLVM module and ResourceTracker
 * each), run once and freed: resident memory after the first 2,000 stays where it was. */
TEST(jit_memory_flat_over_10000_graphs) {
    enum { BATCH = 100 };
    int total = scaled(10000);
    otc_jit_options o = otc_jit_defaults();
    o.no_cache = true; /* every graph compiled, every module freed with its executors */
    long warm = 0, peak = 0;
    const float in[4] = {0.5f, -1.0f, 0.25f, 2.0f};
    for (int done = 0; done < total; done += BATCH) {
        otc_graph *gs[BATCH];
        otc_executor *ex[BATCH];
        int k = total - done < BATCH ? total - done : BATCH;
        for (int i = 0; i < k; i++) {
            otc_testgen_neat_options no = otc_testgen_neat_defaults(1 + (done + i) % 3);
            gs[i] = otc_testgen_neat(77000 + (uint64_t)(done + i), &no);
            NEED(gs[i]);
        }
        NEED(otc_jit_executors_new(gs, NULL, k, &o, ex) == OTC_OK);
        for (int i = 0; i < k; i++) {
            CHECK(otc_exec_set_input(ex[i], otc_graph_input(gs[i], 0), in, 1) == OTC_OK);
            CHECK(otc_exec_forward(ex[i]) == OTC_OK);
            otc_exec_free(ex[i]);
            otc_graph_free(gs[i]);
        }
        long now = rss_kib();
        if (done + k <= total / 5) warm = now;
        if (now > peak) peak = now;
    }
    /* Flat: a few MiB of allocator slack at most, where a leak of one module per graph would
     * add tens of MiB over these compiles. */
    fprintf(stderr, "rss after warm-up %ld KiB, peak %ld KiB\n", warm, peak);
    CHECK_MSG(peak - warm < 8 * 1024, "grew from %ld to %ld KiB", warm, peak);
}
