/* The LLVM JIT against the interpreter: forward values, gradients and 100 training steps on
 * 360 random evolved-style graphs and MLPs, and 160 more through the fast tier (the API
 * tests are in test_jit_api.c).
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

#include "jit_support.h"
#include "otc/plan.h"

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
    for (int b = 1; b <= 40; b += 13)
        CHECK(jit_forward_agrees(g, jit, b, 7 + (uint64_t)b, "small"));
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
    return jit_neat_graph(seed_base + (uint64_t)i, neurons, i % 2 == 1, i % 3 == 2);
}

/* n random graphs compiled with options o agree with the interpreter's forward. */
static int forward_disagreements(int n, const otc_jit_options *o, uint64_t seed_base) {
    int failures = 0;
    for (int g0 = 0; g0 < n && failures < 3; g0 += GROUP) {
        int k = n - g0 < GROUP ? n - g0 : GROUP;
        otc_graph *gs[GROUP];
        otc_executor *ex[GROUP];
        for (int i = 0; i < k; i++) {
            gs[i] = random_graph_for(g0 + i, seed_base, 120);
            if (!gs[i]) return failures + 1;
        }
        if (otc_jit_executors_new(gs, NULL, k, o, ex) != OTC_OK) {
            fprintf(stderr, "compiling graphs %d..: %s\n", g0, otc_last_error());
            for (int i = 0; i < k; i++) otc_graph_free(gs[i]);
            return failures + 1;
        }
        for (int i = 0; i < k; i++) {
            int idx = g0 + i;
            char what[64];
            snprintf(what, sizeof what, "graph %d", idx);
            int batch = idx % 4 == 0 ? 1 : (idx % 4 == 1 ? 8 : (idx % 4 == 2 ? 13 : 67));
            if (!jit_forward_agrees(gs[i], ex[i], batch, (uint64_t)idx, what)) failures++;
            otc_exec_free(ex[i]);
            otc_graph_free(gs[i]);
        }
    }
    return failures;
}

TEST(jit_forward_random_graphs) {
    CHECK(forward_disagreements(jit_scaled(240), NULL, 1000) == 0);
}

/* The fast tier (quick pipeline, fast code generator) computes the same values; its graphs
 * and the optimised tier's share the math library's functions. */
TEST(jit_fast_tier_forward_random_graphs) {
    otc_jit_options o = otc_jit_defaults();
    o.tier = OTC_JIT_TIER_FAST;
    CHECK(forward_disagreements(jit_scaled(120), &o, 3000) == 0);
}

/* Gradients of every trainable parameter after one backward through both backends. */
static bool gradients_agree_with(otc_graph *g, otc_executor *jit, otc_id loss, int batch,
                                 uint64_t seed, const char *what) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    float **rows = jit_random_inputs(g, batch, &rng);
    otc_executor *in = otc_interpreter_new(g, NULL);
    bool ok = in && jit && jit_set_all(in, g, rows, batch) && jit_set_all(jit, g, rows, batch) &&
              otc_exec_forward(in) == OTC_OK && otc_exec_forward(jit) == OTC_OK &&
              otc_exec_backward(in, loss) == OTC_OK && otc_exec_backward(jit, loss) == OTC_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", what, otc_last_error());
    const float *la, *lb;
    if (ok && otc_exec_value(in, loss, &la, NULL) == OTC_OK &&
        otc_exec_value(jit, loss, &lb, NULL) == OTC_OK && !jit_close_to(lb[0], la[0], 2e-5)) {
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
            if (!jit_close_to(gb[i], ga[i], 1e-3)) {
                char lab[64];
                fprintf(stderr, "%s batch %d: grad %s[%zu]: jit %.9g interpreter %.9g\n", what,
                        batch, otc_graph_node_label(g, id, lab, sizeof lab), i, (double)gb[i],
                        (double)ga[i]);
                ok = false;
            }
        }
    }
    otc_exec_free(in);
    jit_free_rows(g, rows);
    return ok;
}

static int gradient_disagreements(int n, const otc_jit_options *o, uint64_t seed_base) {
    int failures = 0;
    for (int g0 = 0; g0 < n && failures < 3; g0 += GROUP) {
        int k = n - g0 < GROUP ? n - g0 : GROUP;
        otc_graph *gs[GROUP];
        otc_id loss[GROUP];
        otc_executor *ex[GROUP];
        for (int i = 0; i < k; i++) {
            gs[i] = random_graph_for(g0 + i, seed_base, 48);
            loss[i] = gs[i] ? jit_add_mse_loss(gs[i]) : -1;
            if (loss[i] < 0) return failures + 1;
        }
        if (otc_jit_executors_new(gs, loss, k, o, ex) != OTC_OK) {
            fprintf(stderr, "compiling graphs %d..: %s\n", g0, otc_last_error());
            for (int i = 0; i < k; i++) otc_graph_free(gs[i]);
            return failures + 1;
        }
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
    return failures;
}

TEST(jit_gradients_random_graphs) {
    CHECK(gradient_disagreements(jit_scaled(80), NULL, 5000) == 0);
}

TEST(jit_fast_tier_gradients_random_graphs) {
    otc_jit_options o = otc_jit_defaults();
    o.tier = OTC_JIT_TIER_FAST;
    CHECK(gradient_disagreements(jit_scaled(40), &o, 7000) == 0);
}

/* The copies between the caller's sample-major rows and node-major storage, which run in
 * blocks of 16 elements where the rows are 1024 floats or wider: two inputs of 1030 and 20
 * floats (partial blocks; the second at column 1030 of the assembled rows) into one output of
 * 1050, at one sample, around a vector width and at 75, in both tiers, against the
 * interpreter. */
TEST(jit_row_copies_in_blocks_wide_rows) {
    static const int batches[] = {1, 15, 16, 17, 75};
    otc_graph *g = otc_graph_new();
    otc_id x1 = otc_input(g, "x1", otc_shape_2d(OTC_BATCH, 1030));
    otc_id x2 = otc_input(g, "x2", otc_shape_2d(OTC_BATCH, 20));
    otc_id parts[2] = {otc_activation(g, OTC_OP_TANH, x1, 0),
                       otc_activation(g, OTC_OP_SIGMOID, otc_scale(g, x2, 3.0f), 0)};
    otc_id y = otc_concat(g, 2, parts, 1);
    NEED(y >= 0 && otc_graph_mark_output(g, y) == OTC_OK);
    for (int tier = 0; tier < 2; tier++) {
        otc_jit_options o = otc_jit_defaults();
        o.tier = tier ? OTC_JIT_TIER_FAST : OTC_JIT_TIER_OPTIMIZED;
        o.no_cache = true;
        otc_executor *jit = otc_jit_executor_new(g, &o);
        NEED(jit);
        for (size_t i = 0; i < sizeof batches / sizeof *batches; i++)
            CHECK(jit_forward_agrees(g, jit, batches[i], 90 + (uint64_t)i,
                                     tier ? "row copies, fast tier" : "row copies"));
        otc_exec_free(jit);
    }
    otc_graph_free(g);
}

/* A product whose W (400 x 331 floats) is larger than OTC_PLAN_PANEL_W: the forward runs in
 * panels of the shared dimension (resumed between panels, the epilogue after the last; the
 * blocks of 12 columns where vectors are 16 lanes). Integer inputs and weights make every sum
 * exact in any order, so y = relu(x W + b) is checked for equality against the sums in double
 * here, at batches giving one panel (1, 16), several with a short last one (17, 37, 75) and 13
 * of 32 q (256), in both tiers at the host's vector width and at 8 lanes (blocks of 4 columns,
 * OpenBLAS from 32 samples); and the gradients against the interpreter at 37. */
TEST(jit_product_in_panels_exact) {
    enum { K = 400, N = 331 };
    static const int batches[] = {1, 16, 17, 37, 75, 256};
    float *w = malloc(sizeof(float) * K * N), bias[N];
    REQUIRE(w);
    for (int i = 0; i < K * N; i++) w[i] = (float)((i * 7 + i / N) % 5 - 2);
    for (int e = 0; e < N; e++) bias[e] = (float)(e % 9 - 4);
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, K));
    otc_id W = otc_param(g, "W", otc_shape_2d(K, N), w);
    otc_id b = otc_param(g, "b", otc_shape_1d(N), bias);
    otc_id mm = otc_matmul(g, x, W);
    otc_id y = otc_activation(g, OTC_OP_RELU, otc_add(g, mm, otc_row_broadcast(g, b, mm)), 0);
    NEED(y >= 0 && otc_graph_mark_output(g, y) == OTC_OK);
    CHECK((int64_t)K * N > OTC_PLAN_PANEL_W);
    float *in = malloc(sizeof(float) * 256 * K);
    REQUIRE(in);
    for (int i = 0; i < 256 * K; i++) in[i] = (float)((i * 13 + i / K) % 7 - 3);
    for (int tier = 0; tier < 3; tier++) {
        otc_jit_options o = otc_jit_defaults();
        o.tier = tier == 1 ? OTC_JIT_TIER_FAST : OTC_JIT_TIER_OPTIMIZED;
        o.lanes = tier == 2 ? 8 : 0;
        o.no_cache = true;
        otc_executor *jit = otc_jit_executor_new(g, &o);
        NEED(jit);
        for (size_t i = 0; i < sizeof batches / sizeof *batches; i++) {
            int B = batches[i], wrong = 0;
            const float *out;
            NEED(otc_exec_set_input(jit, x, in, B) == OTC_OK && otc_exec_forward(jit) == OTC_OK &&
                 otc_exec_value(jit, y, &out, NULL) == OTC_OK);
            for (int s = 0; s < B; s++)
                for (int e = 0; e < N; e++) {
                    double sum = bias[e];
                    for (int q = 0; q < K; q++) sum += (double)in[s * K + q] * w[q * N + e];
                    if ((double)out[s * N + e] != (sum > 0 ? sum : 0) && wrong++ < 3)
                        fprintf(stderr, "form %d batch %d sample %d column %d: %g, want %g\n", tier,
                                B, s, e, (double)out[s * N + e], sum > 0 ? sum : 0);
                }
            CHECK(wrong == 0);
        }
        otc_exec_free(jit);
    }
    otc_id loss = jit_add_mse_loss(g);
    otc_executor *jit = NULL;
    NEED(loss >= 0 && otc_jit_executors_new(&g, &loss, 1, NULL, &jit) == OTC_OK);
    CHECK(gradients_agree_with(g, jit, loss, 37, 71, "panels"));
    otc_exec_free(jit);
    otc_graph_free(g);
    free(in);
    free(w);
}

/* A dense layer's gradient products at few samples (fewer than half a vector: one sample at a
 * time along W's rows) and around a vector width (vectorised along the samples), against the
 * interpreter in both tiers. The layers' widths cover fewer outputs than lanes (3), whole
 * vectors (48 at 8 and 16 lanes) and a remainder (37). */
TEST(jit_dense_gradients_few_samples_and_vector_widths) {
    static const int batches[] = {1, 2, 7, 15, 16, 17};
    int sizes[4] = {5, 37, 48, 3};
    for (int tier = 0; tier < 2; tier++) {
        otc_jit_options o = otc_jit_defaults();
        o.tier = tier ? OTC_JIT_TIER_FAST : OTC_JIT_TIER_OPTIMIZED;
        o.no_cache = true;
        otc_graph *g = otc_testgen_mlp(31 + (uint64_t)tier, 4, sizes, OTC_OP_TANH, -1);
        NEED(g);
        otc_id loss = jit_add_mse_loss(g);
        otc_executor *jit = NULL;
        NEED(loss >= 0 && otc_jit_executors_new(&g, &loss, 1, &o, &jit) == OTC_OK);
        for (size_t i = 0; i < sizeof batches / sizeof *batches; i++) {
            otc_exec_zero_grad(jit); /* a backward adds to the parameters' gradients */
            CHECK(gradients_agree_with(g, jit, loss, batches[i], 60 + (uint64_t)i,
                                       tier ? "dense, fast tier" : "dense"));
        }
        otc_exec_free(jit);
        otc_graph_free(g);
    }
}

/* One lane (the evolve policy's pole-task code) is spelled as plain floats, not <1 x float>:
 * forward and gradients still match the interpreter in both tiers, with dense layers and
 * reductions over the batch (batches 1 to 67, each sample its own chunk; every tenth
 * graph an MLP). */
TEST(jit_one_lane_scalar_code_random_graphs) {
    otc_jit_options o = otc_jit_defaults();
    o.lanes = 1;
    for (int tier = 0; tier < 2; tier++) {
        o.tier = tier ? OTC_JIT_TIER_FAST : OTC_JIT_TIER_OPTIMIZED;
        CHECK(forward_disagreements(jit_scaled(10), &o, 9000 + (uint64_t)tier * 100) == 0);
        CHECK(gradient_disagreements(jit_scaled(10), &o, 9500 + (uint64_t)tier * 100) == 0);
    }
}

/* A chain of n neurons (activations in turn; each also reads a column of the input and, from
 * the fourth, the neuron three back, so values cross kernel boundaries and every depth has a
 * gradient), with an MSE loss. */
static otc_graph *deep_chain(int n, otc_id *loss) {
    static const otc_act acts[4] = {OTC_ACT_TANH, OTC_ACT_SIGMOID, OTC_ACT_RELU, OTC_ACT_SIN};
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id prev = x, back3[3] = {x, x, x};
    for (int i = 0; i < n; i++) {
        otc_id srcs[3] = {prev, x, back3[i % 3]};
        int cols[3] = {0, 1 - i % 2, 0};
        float w[3] = {0.8f, 0.3f - 0.1f * (float)(i % 5), 0.25f};
        otc_id h = otc_neuron(g, NULL, acts[i % 4], 0.05f * (float)(i % 3), 1.0f, i < 3 ? 2 : 3,
                              srcs, cols, w);
        back3[i % 3] = prev = h;
    }
    otc_graph_mark_output(g, prev);
    *loss = jit_add_mse_loss(g);
    return g;
}

/* The optimised IR of a chain (module name "chain"), from --emit-llvm's path (the JIT's
 * pipeline choice); the caller frees it. */
static char *chain_ir(const otc_graph *inf) {
    otc_emit_llvm_options eo = otc_emit_llvm_defaults();
    eo.name = "chain";
    char *ir = NULL;
    size_t len = 0;
    if (otc_emit_llvm(inf, &eo, OTC_EMIT_LLVM_IR, &ir, &len) != OTC_OK) return NULL;
    return ir;
}

/* Does an optimised-tier inference executor of inf agree with the interpreter at batches 1
 * and 40? */
static bool inference_jit_agrees(otc_graph *inf, uint64_t seed, const char *what) {
    otc_jit_options o = otc_jit_defaults();
    o.inference = true;
    otc_executor *jit = otc_jit_executor_new(inf, &o);
    if (!jit) return false;
    bool ok = true;
    for (int b = 1; b <= 40; b += 39)
        ok = jit_forward_agrees(inf, jit, b, seed + (uint64_t)b, what) && ok;
    otc_exec_free(jit);
    return ok;
}

/* A deep graph is rendered as several kernels (the plan bounds a fused kernel's code) and
 * several functions (the renderer bounds a function's size, so LLVM's passes see bounded work
 * and compile time stays linear in depth), and computes what the interpreter does: 520
 * neurons make 44 kernels (a member costs 1 + its inputs, 6 more for a math call: three of
 * four neurons here cost 12, a ReLU 6; 128 per kernel holds 12 of them, the last 4), at
 * least three functions of the forward; 80
 * neurons make 80 backward steps, two functions of the backward, whose gradients are
 * compared. */
TEST(jit_deep_chain_split_into_functions) {
    otc_id loss;
    otc_graph *g = deep_chain(520, &loss);
    REQUIRE(loss >= 0);
    otc_graph *inf = otc_graph_inference(g);
    NEED(inf);
    otc_plan *plan = NULL;
    NEED(otc_plan_build(inf, NULL, &plan) == OTC_OK);
    CHECK_MSG(plan->n_kernels == 44, "%d kernels", plan->n_kernels);
    otc_plan_free(plan);
    /* The forward in parts: PREFIXfwd_0, PREFIXfwd_1, ... called in order by the entry. */
    char *ir = chain_ir(inf);
    NEED(ir);
    CHECK(strstr(ir, "@chain_fwd_0(") && strstr(ir, "@chain_fwd_2("));
    free(ir);
    CHECK(inference_jit_agrees(inf, 11, "deep chain"));
    otc_graph_free(inf);
    otc_graph_free(g);

    g = deep_chain(80, &loss);
    REQUIRE(loss >= 0);
    otc_executor *jit = otc_jit_executor_new(g, NULL);
    NEED(jit);
    for (int b = 1; b <= 40; b += 39) {
        otc_exec_zero_grad(jit); /* backward accumulates */
        CHECK(gradients_agree_with(g, jit, loss, b, 13 + (uint64_t)b, "deep chain"));
    }
    otc_exec_free(jit);
    otc_graph_free(g);
}

/* The optimised tier skips O3 for a large module of straight-line kernels (O3 cost seconds on
 * thousands of neurons and changed almost nothing): a 1,600-neuron chain gets the quick
 * pipeline, whose output keeps the entry as rendered (O3's interprocedural passes mark it
 * local_unnamed_addr, as they do at 200 neurons), and still computes what the interpreter
 * does. */
TEST(jit_large_straight_line_module_skips_o3) {
    otc_id loss;
    int sizes[2] = {200, 1600};
    for (int s = 0; s < 2; s++) {
        otc_graph *g = deep_chain(sizes[s], &loss);
        REQUIRE(loss >= 0);
        otc_graph *inf = otc_graph_inference(g);
        NEED(inf);
        char *ir = chain_ir(inf);
        NEED(ir);
        const char *entry = strstr(ir, "@chain_forward(");
        NEED(entry);
        /* The entry's definition line: "define ... @chain_forward(...) [attributes] {". */
        const char *line = entry;
        while (line > ir && line[-1] != '\n') line--;
        const char *end = strchr(entry, '\n');
        const char *mark = strstr(line, "local_unnamed_addr");
        bool o3 = mark && end && mark < end;
        CHECK(o3 == (s == 0));
        free(ir);
        if (s == 1) CHECK(inference_jit_agrees(inf, 17, "large chain"));
        otc_graph_free(inf);
        otc_graph_free(g);
    }
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
        c.loss = c.g ? jit_add_mse_loss(c.g) : -1;
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
        } else if (!jit_close_to(lj, li, 2e-3)) {
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
            if (!jit_close_to(b->data[k], a->data[k], 2e-3)) {
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
    int n = jit_scaled(40), failures = 0;
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

/* The optimiser update in both tiers: the same weights, bit for bit, as the interpreter after
 * three steps of each rule, over 37 weights (whole vectors and a remainder at 8 and 16
 * lanes). y = x + w (a row broadcast) against t at batch 1 gives both backends the same gradient,
 * so any difference is the update's; it fails with the vector loop's or the remainder's indexing
 * off. */
TEST(jit_optimizer_update_same_bits_both_tiers) {
    enum { N = 37 };
    otc_optim_config rules[4] = {
        otc_optim_defaults(OTC_OPTIM_SGD), otc_optim_defaults(OTC_OPTIM_SGD),
        otc_optim_defaults(OTC_OPTIM_ADAM), otc_optim_defaults(OTC_OPTIM_ADAMW)};
    rules[0].momentum = 0.9f;
    rules[1].momentum = 0.5f;
    rules[1].nesterov = true;
    rules[1].weight_decay = 0.01f;
    rules[3].weight_decay = 0.1f;
    float w0[N], x[N], t[N];
    otc_rng rng;
    otc_rng_seed(&rng, 77);
    otc_testgen_fill(&rng, w0, N, -1.0f, 1.0f);
    otc_testgen_fill(&rng, x, N, -2.0f, 2.0f);
    otc_testgen_fill(&rng, t, N, -2.0f, 2.0f);
    for (int tier = 0; tier < 2; tier++) {
        for (int k = 0; k < 4; k++) {
            otc_graph *g[2] = {otc_graph_new(), otc_graph_new()};
            otc_id loss = -1, xi = -1, ti = -1;
            for (int b = 0; b < 2; b++) {
                NEED(g[b]);
                xi = otc_input(g[b], "x", otc_shape_2d(OTC_BATCH, N));
                ti = otc_input(g[b], "t", otc_shape_2d(OTC_BATCH, N));
                otc_id w = otc_param(g[b], "w", otc_shape_1d(N), w0);
                loss = otc_mse(g[b], otc_add(g[b], xi, otc_row_broadcast(g[b], w, xi)), ti);
                NEED(loss >= 0);
            }
            otc_jit_options o = otc_jit_defaults();
            o.tier = tier ? OTC_JIT_TIER_FAST : OTC_JIT_TIER_OPTIMIZED;
            o.no_cache = true;
            otc_executor *ex[2] = {otc_interpreter_new(g[0], NULL), NULL};
            NEED(ex[0] && otc_jit_executors_new(&g[1], &loss, 1, &o, &ex[1]) == OTC_OK);
            otc_optimizer *opt[2] = {otc_optimizer_new(&rules[k]), otc_optimizer_new(&rules[k])};
            NEED(opt[0] && opt[1]);
            for (int step = 0; step < 3; step++)
                for (int b = 0; b < 2; b++) {
                    float l;
                    NEED(otc_exec_set_input(ex[b], xi, x, 1) == OTC_OK &&
                         otc_exec_set_input(ex[b], ti, t, 1) == OTC_OK &&
                         otc_exec_train_step(ex[b], loss, opt[b], &l) == OTC_OK);
                }
            NEED(otc_exec_sync_params(ex[1]) == OTC_OK);
            const otc_tensor *a = otc_graph_node(g[0], otc_graph_find(g[0], "w"))->value;
            const otc_tensor *c = otc_graph_node(g[1], otc_graph_find(g[1], "w"))->value;
            int differ = 0;
            for (int i = 0; i < N; i++)
                if (memcmp(&a->data[i], &c->data[i], sizeof(float)) != 0) {
                    if (differ++ == 0)
                        fprintf(stderr, "tier %d rule %d: w[%d] jit %.9g interpreter %.9g\n", tier,
                                k, i, (double)c->data[i], (double)a->data[i]);
                }
            CHECK(differ == 0);
            for (int b = 0; b < 2; b++) {
                otc_optimizer_free(opt[b]);
                otc_exec_free(ex[b]);
                otc_graph_free(g[b]);
            }
        }
    }
}
