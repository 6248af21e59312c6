/* Emitted C training (--train): gradients of random graphs against the interpreter's backward
 * pass (within 1e-4 relative: |c - i| <= 1e-4 * max(1, |i|)), 100 training steps tracking the
 * interpreter's, and the generated code cross-compiled for 64-bit Arm (run under qemu-user)
 * and 32-bit Arm hard-float. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emitc_support.h"
#include "harness.h"
#include "otc/random_graph.h"

#define GRAD_TOL 1e-4

static otc_emit_c_options train_options(otc_optim_kind kind) {
    otc_emit_c_options eo = otc_emit_c_defaults();
    eo.train = true;
    eo.optim = otc_optim_defaults(kind);
    return eo;
}

/* A graph of the kind `i` picks, with a loss; classes gets what the targets must be. */
static otc_graph *graph_for(int i, otc_rng *rng, otc_op *loss, int *classes) {
    *loss = OTC_OP_MSE;
    *classes = 0;
    if (i % 4 != 3) {
        otc_testgen_neat_options o = otc_testgen_neat_defaults(1 + (int)otc_rng_below(rng, 50));
        o.n_inputs = 1 + (int)otc_rng_below(rng, 6);
        o.mixed_ops = i % 2 == 0;
        o.two_inputs = i % 5 == 1;
        o.n_outputs = 1 + (int)otc_rng_below(rng, o.n_neurons < 3 ? (uint32_t)o.n_neurons : 3);
        if (i % 8 == 2) {
            /* Sigmoid outputs for BCE: only sigmoid activations. */
            o.act_mask = 1u << OTC_ACT_SIGMOID | 1u << OTC_ACT_STEEP_SIGMOID;
            *loss = OTC_OP_BCE;
            *classes = -1;
        }
        return otc_testgen_neat(1000 + (uint64_t)i, &o);
    }
    static const otc_op acts[] = {OTC_OP_RELU,       OTC_OP_TANH,     OTC_OP_SIGMOID, OTC_OP_ELU,
                                  OTC_OP_LEAKY_RELU, OTC_OP_SOFTPLUS, OTC_OP_SIN};
    int sizes[4] = {1 + (int)otc_rng_below(rng, 10), 1 + (int)otc_rng_below(rng, 24),
                    2 + (int)otc_rng_below(rng, 12), 2 + (int)otc_rng_below(rng, 4)};
    int n = 2 + (int)otc_rng_below(rng, 3);
    bool ce = i % 8 == 7;
    if (ce) {
        *loss = OTC_OP_SOFTMAX_CE;
        *classes = sizes[n - 1];
    }
    return otc_testgen_mlp((uint64_t)i, n, sizes, acts[i % 7], ce ? -1 : (int)OTC_OP_TANH);
}

static void gradients(int n, uint64_t seed) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    emitc_case *cs = calloc((size_t)n, sizeof *cs);
    int *classes = calloc((size_t)n, sizeof *classes);
    REQUIRE(cs && classes);
    for (int i = 0; i < n; i++) {
        otc_op loss;
        otc_graph *g = graph_for((int)seed * 100 + i, &rng, &loss, &classes[i]);
        REQUIRE(g);
        otc_emit_c_options eo = train_options(OTC_OPTIM_SGD);
        REQUIRE(otc_compile_add_loss(g, loss, &eo.loss, NULL) == OTC_OK);
        REQUIRE(emitc_case_init(&cs[i], g, i, &eo));
    }
    emitc_build b;
    /* -O0 keeps the compile short; optimised builds of training code are covered by the
     * all-ops and 100-step tests. */
    CHECK(emitc_build_cases(cs, n, "-std=c99 -O0", &b));
    int failures = 0;
    for (int i = 0; b.so && i < n; i++) {
        bool ok =
            emitc_check_gradients(&cs[i], &b, 1, 7 * (uint64_t)i, GRAD_TOL, classes[i]) &&
            emitc_check_gradients(&cs[i], &b, 11, 7 * (uint64_t)i + 1, GRAD_TOL, classes[i]) &&
            emitc_check_forward(&cs[i], &b, 4, (uint64_t)i, 1e-5);
        failures += !ok;
    }
    CHECK_MSG(failures == 0, "%d of %d graphs' gradients disagree", failures, n);
    emitc_unload(&b);
    for (int i = 0; i < n; i++) emitc_case_free(&cs[i]);
    free(cs);
    free(classes);
}

/* 100 graphs with MSE, BCE or softmax cross-entropy losses: loss and every weight's gradient
 * at batch 1 and 11, and the training build's forward. */
TEST(emitc_diff_gradients_a) {
    gradients(25, 1);
}
TEST(emitc_diff_gradients_b) {
    gradients(25, 2);
}
TEST(emitc_diff_gradients_c) {
    gradients(25, 3);
}
TEST(emitc_diff_gradients_d) {
    gradients(25, 4);
}

/* ---- 100 training steps ---- */

typedef int (*step_fn)(void *, const float *, const float *, int, float, float *, void *);
typedef void (*init_fn)(void *);

static void track(emitc_case *c, const emitc_build *b, int classes, uint64_t seed) {
    enum { ROWS = 64, BATCH = 16, STEPS = 100 };
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    const otc_plan *t = c->train;
    float *in = emitc_rows(t, OTC_IO_IN, ROWS, &rng, 0);
    float *target = emitc_rows(t, OTC_IO_TARGET, ROWS, &rng, classes);
    size_t bytes = emitc_workspace_bytes(c, b, BATCH);
    float *ws = aligned_alloc(64, (bytes + 63) / 64 * 64);
    void *params = aligned_alloc(64, ((3 * (size_t)c->fwd->param_floats + 16) * 4 + 63) / 64 * 64);
    step_fn step = (step_fn)emitc_sym(b, c->name, "train_step");
    init_fn init = (init_fn)emitc_sym(b, c->name, "params_init");
    otc_executor *ex = otc_interpreter_new(c->g, NULL);
    otc_optimizer *opt = otc_optimizer_new(&c->eo.optim);
    REQUIRE(in && target && ws && params && step && init && ex && opt);
    init(params);
    double worst = 0.0;
    for (int s = 0; s < STEPS; s++) {
        int r0 = (s * BATCH) % ROWS;
        const float *xi = in + r0 * t->in_width, *ti = target + r0 * t->target_width;
        float li = NAN, lc = NAN;
        REQUIRE(emitc_set_inputs(ex, t, xi, ti, BATCH));
        REQUIRE(otc_exec_train_step(ex, c->eo.loss, opt, &li) == OTC_OK);
        REQUIRE(step(params, xi, ti, BATCH, c->eo.optim.lr, &lc, ws) == 0);
        double rel = fabs((double)lc - li) / fmax(1.0, fabs((double)li));
        if (rel > worst) worst = rel;
    }
    CHECK_MSG(worst <= 1e-4, "%s: losses drift apart by %g over %d steps", c->name, worst, STEPS);
    /* The weights after 100 steps: the interpreter trained the graph's tensors in place. */
    const float *w = params; /* params->w is the struct's first member */
    for (int i = 0; i < c->fwd->n_params; i++) {
        otc_id id = c->fwd->params[i];
        const otc_tensor *pt = otc_graph_node(c->g, id)->value;
        int64_t off = c->fwd->values[id].param_offset;
        for (size_t j = 0; j < pt->size; j++)
            CHECK(emitc_close(w[off + (int64_t)j], pt->data[j], 1e-3, "weight", c->name,
                              (int)(off + (int64_t)j)));
    }
    otc_optimizer_free(opt);
    otc_exec_free(ex);
    free(in);
    free(target);
    free(ws);
    free(params);
}

TEST(emitc_input_gradient_tails) {
    /* The input gradient's product adds into the hidden layer's gradient (+=) in blocks of
     * 16 samples; a batch short of a block ends with one overlapping the one before, which
     * must add only the samples not yet added. A 6-24-9 MLP (the gradient into the 24 hidden
     * units: six blocks of 4 rows) at batches that end in such a block (17, 75), narrower
     * ones (5, 9, 15) and one at a time (3), against the interpreter's backward. */
    int sizes[3] = {6, 24, 9};
    otc_graph *g = otc_testgen_mlp(77, 3, sizes, OTC_OP_TANH, -1);
    REQUIRE(g);
    otc_emit_c_options eo = train_options(OTC_OPTIM_SGD);
    REQUIRE(otc_compile_add_loss(g, OTC_OP_MSE, &eo.loss, NULL) == OTC_OK);
    emitc_case cs;
    REQUIRE(emitc_case_init(&cs, g, 0, &eo));
    emitc_build b;
    CHECK(emitc_build_cases(&cs, 1, "-std=c99 -O1", &b));
    static const int batches[] = {3, 5, 9, 15, 16, 17, 75};
    for (size_t k = 0; b.so && k < sizeof batches / sizeof batches[0]; k++)
        CHECK_MSG(emitc_check_gradients(&cs, &b, batches[k], 40 + (uint64_t)k, GRAD_TOL, 0),
                  "batch %d", batches[k]);
    emitc_unload(&b);
    emitc_case_free(&cs);
}

TEST(emitc_train_tracks_interpreter_100_steps) {
    /* SGD with momentum (and Nesterov, weight decay), Adam, AdamW on evolved-style graphs and
     * MLPs with MSE, BCE and softmax cross-entropy: losses within 1e-4 relative at every
     * step, weights within 1e-3 relative after 100 steps. */
    enum { N = 6 };
    emitc_case cs[N];
    int classes[N] = {0, 0, 0, -1, 3, 0};
    for (int i = 0; i < N; i++) {
        otc_graph *g;
        otc_op loss = i == 3 ? OTC_OP_BCE : i == 4 ? OTC_OP_SOFTMAX_CE : OTC_OP_MSE;
        if (i <= 1 || i == 3) {
            otc_testgen_neat_options o = otc_testgen_neat_defaults(24);
            o.mixed_ops = i == 1;
            if (i == 3) o.act_mask = 1u << OTC_ACT_SIGMOID;
            o.n_outputs = 1;
            g = otc_testgen_neat(40 + (uint64_t)i, &o);
        } else {
            int sizes[4] = {4, 16, 8, i == 4 ? 3 : 1};
            g = otc_testgen_mlp(50 + (uint64_t)i, 4, sizes, OTC_OP_TANH,
                                i == 4 ? -1 : (int)OTC_OP_IDENTITY);
        }
        REQUIRE(g);
        otc_optim_kind kind = i == 0 || i == 4 ? OTC_OPTIM_SGD
                              : i == 5         ? OTC_OPTIM_ADAMW
                                               : OTC_OPTIM_ADAM;
        otc_emit_c_options eo = train_options(kind);
        if (kind == OTC_OPTIM_SGD) {
            eo.optim.lr = 0.05f;
            eo.optim.momentum = 0.9f;
            eo.optim.nesterov = i == 4;
            eo.optim.weight_decay = i == 0 ? 1e-3f : 0.0f;
        } else {
            eo.optim.lr = 0.01f;
        }
        REQUIRE(otc_compile_add_loss(g, loss, &eo.loss, NULL) == OTC_OK);
        REQUIRE(emitc_case_init(&cs[i], g, i, &eo));
    }
    emitc_build b;
    CHECK(emitc_build_cases(cs, N, "-std=c99 -O2", &b));
    for (int i = 0; b.so && i < N; i++) track(&cs[i], &b, classes[i], 100 + (uint64_t)i);
    emitc_unload(&b);
    for (int i = 0; i < N; i++) emitc_case_free(&cs[i]);
}

/* ---- deep graphs: the schedule in parts ---- */

/* x -> n1 -> n2 -> ... -> n`depth`, tanh and sigmoid neurons by turns, two sources each from
 * the chain (the one before and the input). */
static otc_graph *deep_chain(int depth) {
    otc_graph *g = otc_graph_new();
    if (!g) return NULL;
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2)), prev = x;
    for (int i = 0; i < depth && prev >= 0; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i + 1);
        otc_id srcs[2] = {prev, x};
        int cols[2] = {0, i % 2};
        float w[2] = {0.9f + 0.01f * (float)(i % 7), 0.05f * (float)(i % 3) - 0.05f};
        prev = otc_neuron(g, name, i % 2 ? OTC_ACT_SIGMOID : OTC_ACT_TANH, 0.01f * (float)(i % 5),
                          1.0f, 2, srcs, cols, w);
    }
    if (prev < 0 || otc_graph_mark_output(g, prev)) {
        otc_graph_free(g);
        return NULL;
    }
    return g;
}

TEST(emitc_deep_chain_in_parts) {
    /* 160 neurons deep: many kernels, and the forward pass, the backward pass and the update
     * cut into parts (otc_plan_part_end), each its own function NAME_part_N. They build clean
     * under -Wall -Wextra -Werror and agree with the interpreter: the forward pass, every
     * gradient, and 100 Adam steps. */
    emitc_case c;
    otc_graph *g = deep_chain(160);
    REQUIRE(g);
    otc_emit_c_options eo = train_options(OTC_OPTIM_ADAM);
    eo.optim.lr = 0.01f;
    REQUIRE(otc_compile_add_loss(g, OTC_OP_MSE, &eo.loss, NULL) == OTC_OK);
    REQUIRE(emitc_case_init(&c, g, 0, &eo));
    char *h = NULL, *src = NULL;
    REQUIRE(otc_emit_c(c.g, &c.eo, &h, &src) == OTC_OK);
    int parts = 0;
    for (const char *at = src; (at = strstr(at, "_PART int g0_part_")); at++) parts++;
    CHECK_MSG(parts >= 6, "%d parts", parts);
    free(h);
    free(src);
    emitc_build b;
    CHECK(emitc_build_cases(&c, 1, "-std=c99 -O0 -Wall -Wextra -Werror", &b));
    if (b.so) {
        CHECK(emitc_check_forward(&c, &b, 1, 1, 1e-5));
        CHECK(emitc_check_forward(&c, &b, 19, 2, 1e-5));
        CHECK(emitc_check_gradients(&c, &b, 5, 3, GRAD_TOL, 0));
        track(&c, &b, 0, 4);
    }
    emitc_unload(&b);
    emitc_case_free(&c);
}

static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *at = text; (at = strstr(at, what)); at++) n++;
    return n;
}

TEST(emitc_evolved_train_loops_bounded) {
    /* A 60-neuron evolved-style genome (about 180 connections): the training step's bias and
     * weight gradients (a sum over the batch each) and sources' gradients call the file's one
     * out-of-line copy of each loop (NAME_batch_sum, NAME_batch_dot, NAME_batch_axpy) instead
     * of spelling a vectorisable loop per connection, which took gcc -O3 40 s on 100 neurons
     * (here about 560 loops in the file before, 181 after). Then the gradients against the
     * interpreter's at batches below, past and at a multiple of the sums' eight lanes. */
    otc_testgen_neat_options o = otc_testgen_neat_defaults(60);
    otc_graph *g = otc_testgen_neat(30, &o);
    REQUIRE(g);
    otc_emit_c_options eo = train_options(OTC_OPTIM_SGD);
    REQUIRE(otc_compile_add_loss(g, OTC_OP_MSE, &eo.loss, NULL) == OTC_OK);
    emitc_case c;
    REQUIRE(emitc_case_init(&c, g, 0, &eo));
    char *h = NULL, *src = NULL;
    REQUIRE(otc_emit_c(c.g, &c.eo, &h, &src) == OTC_OK);
    int loops = count(src, "for (");
    CHECK_MSG(loops <= 4 * 60, "%d loops in the training C of 60 neurons", loops);
    CHECK(count(src, "_batch_dot(const float") == 1);
    CHECK(count(src, "_batch_dot(") > 60);
    CHECK(count(src, "_batch_axpy(") > 30);
    free(h);
    free(src);
    emitc_build b;
    CHECK(emitc_build_cases(&c, 1, "-std=c99 -O0 -Wall -Wextra -Werror", &b));
    static const int batches[] = {1, 9, 64};
    for (size_t k = 0; b.so && k < sizeof batches / sizeof batches[0]; k++)
        CHECK_MSG(emitc_check_gradients(&c, &b, batches[k], 60 + (uint64_t)k, GRAD_TOL, 0),
                  "batch %d", batches[k]);
    emitc_unload(&b);
    emitc_case_free(&c);
}

/* Does any helper function (NAME_mmN, NAME_lpN) of src have the body and parameters of
 * another? Each definition runs from its name to the next line "}". */
static bool helpers_distinct(const char *src, const char *name) {
    const char *kinds[] = {"_mm", "_lp"};
    char pat[48];
    const char *def[256];
    size_t len[256];
    int n = 0;
    for (int k = 0; k < 2; k++) {
        snprintf(pat, sizeof pat, " %s%s", name, kinds[k]);
        for (const char *at = src; (at = strstr(at, pat)) && n < 256; at++) {
            const char *paren = strchr(at, '('), *eol = strchr(at, '\n');
            if (!paren || !eol || eol[-1] != '{') continue; /* a call, not a definition */
            const char *end = strstr(paren, "\n}\n");
            if (!end) return false;
            def[n] = paren;
            len[n++] = (size_t)(end - paren);
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (len[i] == len[j] && !memcmp(def[i], def[j], len[i])) return false;
    return n > 0;
}

TEST(emitc_train_forward_shared) {
    /* A training file spells the forward pass twice, in NAME_forward and in
     * NAME_train_step: the convolution's and the pool's loop programs are one function each
     * (NAME_lpN) that both call, and no product or loop program is defined twice with the
     * same text (LeNet's file: gcc -O3's time ~40% less). NAME_forward of the training file
     * then agrees with the interpreter at batches of one, of a partial chunk and past one,
     * and its gradients too (built -O0 -Wall -Wextra -Werror). */
    otc_rng rng;
    otc_rng_seed(&rng, 5);
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", (otc_shape){4, {OTC_BATCH, 1, 8, 8}});
    otc_id h =
        otc_conv2d_layer(g, x, 4, 3, &(otc_conv2d_params){.pad_h = 1, .pad_w = 1}, &rng, "conv");
    otc_pool2d_params pool = {.kernel_h = 2, .kernel_w = 2};
    h = otc_maxpool2d(g, "pool", otc_activation(g, OTC_OP_RELU, h, 0), &pool);
    otc_id y = otc_linear(g, otc_flatten(g, h), 3, &rng, "fc");
    otc_graph_mark_output(g, y);
    otc_emit_c_options eo = train_options(OTC_OPTIM_SGD);
    REQUIRE(otc_compile_add_loss(g, OTC_OP_MSE, &eo.loss, NULL) == OTC_OK);
    emitc_case c;
    REQUIRE(emitc_case_init(&c, g, 0, &eo));
    char *hd = NULL, *src = NULL;
    REQUIRE(otc_emit_c(c.g, &c.eo, &hd, &src) == OTC_OK);
    /* the convolution's, the pool's (each defined and called twice) and the loss's */
    CHECK_MSG(count(src, "_KERNEL int g0_lp") == 3, "%d loop programs defined",
              count(src, "_KERNEL int g0_lp"));
    CHECK(count(src, "g0_lp0(") == 3 && count(src, "g0_lp1(") == 3);
    CHECK(helpers_distinct(src, "g0"));
    free(hd);
    free(src);
    emitc_build b;
    CHECK(emitc_build_cases(&c, 1, "-std=c99 -O0 -Wall -Wextra -Werror", &b));
    static const int batches[] = {1, 11, 17};
    for (int j = 0; b.so && j < 3; j++) {
        CHECK(emitc_check_forward(&c, &b, batches[j], (uint64_t)j, 1e-5));
        CHECK(emitc_check_gradients(&c, &b, batches[j], (uint64_t)(10 + j), GRAD_TOL, 0));
    }
    emitc_unload(&b);
    emitc_case_free(&c);
}

/* ---- shipping to phones: cross-compiled for Arm, run under qemu-user ---- */

#define SKIP_CODE 77

static bool have(const char *tool) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s > /dev/null 2>&1", tool);
    return system(cmd) == 0;
}

static void put_floats(FILE *f, const char *name, const float *x, size_t n) {
    fprintf(f, "static const float %s[%zu] = {", name, n ? n : 1);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%.9gf", i == 0 ? "\n    " : i % 6 ? ", " : ",\n    ", (double)x[i]);
    fprintf(f, "%s};\n", n ? "\n" : "0.0f");
}

/* Three models (an evolved-style graph, an MLP, a graph trained on the device for 20 SGD
 * steps) with test vectors from the interpreter, and a driver checking them: forward
 * within 1e-5 relative, losses and trained outputs within 1e-4. Writes dir/driver.c and the
 * models; returns the file names for the compiler command line. */
static bool write_cross_project(const char *dir, char *files, size_t len) {
    enum { B = 5, STEPS = 20 };
    char path[256];
    snprintf(path, sizeof path, "%s/driver.c", dir);
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fprintf(f, "#include <math.h>\n#include <stdio.h>\n\n");
    fprintf(f, "static int check(const char *what, const float *got, const float *want, int n, "
               "float tol) {\n    int bad = 0;\n    for (int i = 0; i < n; i++) {\n"
               "        float t = tol * (fabsf(want[i]) > 1.0f ? fabsf(want[i]) : 1.0f);\n"
               "        if (!(fabsf(got[i] - want[i]) <= t)) {\n"
               "            if (bad++ < 5) printf(\"%%s[%%d]: %%.9g, want %%.9g\\n\", what, i, "
               "got[i], want[i]);\n        }\n    }\n    return bad;\n}\n\n");
    snprintf(files, len, "%s/driver.c", dir);
    otc_rng rng;
    otc_rng_seed(&rng, 2024);
    bool ok = true;
    for (int m = 0; m < 3 && ok; m++) {
        otc_graph *g;
        if (m == 1) {
            int sizes[4] = {8, 16, 8, 2};
            g = otc_testgen_mlp(3, 4, sizes, OTC_OP_RELU, OTC_OP_SIGMOID);
        } else {
            otc_testgen_neat_options o = otc_testgen_neat_defaults(m == 0 ? 40 : 16);
            o.mixed_ops = m == 0;
            o.n_outputs = 1;
            g = otc_testgen_neat(90 + (uint64_t)m, &o);
        }
        otc_emit_c_options eo = otc_emit_c_defaults();
        char name[8];
        snprintf(name, sizeof name, "m%d", m);
        eo.name = name;
        if (m == 2) {
            eo.train = true;
            eo.optim = otc_optim_defaults(OTC_OPTIM_SGD);
            eo.optim.lr = 0.05f;
            eo.optim.momentum = 0.9f;
            ok = otc_compile_add_loss(g, OTC_OP_MSE, &eo.loss, NULL) == OTC_OK;
        }
        emitc_case c;
        ok = ok && emitc_case_init(&c, g, m, &eo);
        c.eo.name = name;
        ok = ok && otc_emit_c_files(g, &c.eo, dir) == OTC_OK;
        size_t used = strlen(files);
        snprintf(files + used, len - used, " %s/%s.c", dir, name);
        fprintf(f, "#include \"%s.h\"\n", name);
        const otc_plan *p = c.fwd;
        float *in = emitc_rows(p, OTC_IO_IN, B, &rng, 0);
        float *target = m == 2 ? emitc_rows(c.train, OTC_IO_TARGET, B, &rng, 0) : NULL;
        float losses[STEPS];
        otc_executor *ex = otc_interpreter_new(g, NULL);
        otc_optimizer *opt = m == 2 ? otc_optimizer_new(&eo.optim) : NULL;
        for (int s = 0; ok && m == 2 && s < STEPS; s++)
            ok = emitc_set_inputs(ex, c.train, in, target, B) &&
                 otc_exec_train_step(ex, eo.loss, opt, &losses[s]) == OTC_OK;
        ok = ok && emitc_set_inputs(ex, p, in, NULL, B) && otc_exec_forward(ex) == OTC_OK;
        float *want = calloc((size_t)(B * p->out_width), sizeof *want);
        for (int k = 0; ok && want && k < p->n_io; k++) {
            const otc_plan_io *io = &p->io[k];
            const float *v;
            if (io->stream != OTC_IO_OUT || otc_exec_value(ex, io->node, &v, NULL)) continue;
            for (int b = 0; b < B; b++)
                for (int64_t e = 0; e < io->width; e++)
                    want[b * p->out_width + io->offset + e] = v[b * io->width + e];
        }
        char vname[32];
        snprintf(vname, sizeof vname, "%s_in", name);
        put_floats(f, vname, in, (size_t)(B * p->in_width));
        snprintf(vname, sizeof vname, "%s_want", name);
        put_floats(f, vname, want, (size_t)(B * p->out_width));
        if (m == 2) {
            put_floats(f, "m2_target", target, (size_t)(B * c.train->target_width));
            put_floats(f, "m2_losses", losses, STEPS);
        }
        fprintf(f, "static float %s_ws[%s_%s(%d) / sizeof(float) + 1];\n", name,
                m == 2   ? "M2"
                : m == 1 ? "M1"
                         : "M0",
                m == 2 ? "TRAIN_WORKSPACE_BYTES" : "WORKSPACE_BYTES", B);
        fprintf(f, "static float %s_out[%d];\n\n", name, (int)(B * p->out_width) + 1);
        otc_optimizer_free(opt);
        otc_exec_free(ex);
        free(in);
        free(target);
        free(want);
        c.g = g;
        emitc_case_free(&c);
    }
    fprintf(f, "int main(void) {\n    int bad = 0;\n");
    fprintf(f, "    if (m0_forward(m0_in, m0_out, %d, m0_ws)) return 3;\n", B);
    fprintf(f, "    bad += check(\"m0\", m0_out, m0_want, %d * M0_OUT_FLOATS, 1e-5f);\n", B);
    fprintf(f, "    if (m1_forward(m1_in, m1_out, %d, m1_ws)) return 3;\n", B);
    fprintf(f, "    bad += check(\"m1\", m1_out, m1_want, %d * M1_OUT_FLOATS, 1e-5f);\n", B);
    fprintf(f, "    {\n        static m2_params p;\n        float losses[%d];\n", STEPS);
    fprintf(f,
            "        m2_params_init(&p);\n        for (int s = 0; s < %d; s++)\n"
            "            if (m2_train_step(&p, m2_in, m2_target, %d, M2_LR, &losses[s], "
            "m2_ws)) return 3;\n",
            STEPS, B);
    fprintf(f, "        bad += check(\"m2 loss\", losses, m2_losses, %d, 1e-4f);\n", STEPS);
    fprintf(f, "        if (m2_forward(&p, m2_in, m2_out, %d, m2_ws)) return 3;\n", B);
    fprintf(f,
            "        bad += check(\"m2 trained\", m2_out, m2_want, %d * M2_OUT_FLOATS, "
            "1e-4f);\n    }\n",
            B);
    fprintf(f,
            "    printf(\"%%s\\n\", bad ? \"MISMATCH\" : \"ok\");\n    return bad ? 1 : 0;\n}\n");
    return fclose(f) == 0 && ok;
}

static void cross(const char *cc, const char *flags, const char *qemu, const char *sysroot) {
    if (!have(cc)) {
        printf("SKIP: %s is not installed (scripts/install-deps.sh installs it)\n", cc);
        exit(SKIP_CODE);
    }
    char dir[] = "/tmp/otc_emitc_cross_XXXXXX";
    REQUIRE(mkdtemp(dir));
    char files[1024] = "", cmd[2048];
    CHECK(write_cross_project(dir, files, sizeof files));
    snprintf(cmd, sizeof cmd,
             "%s -std=c99 -O2 -Wall -Wextra -Werror -pedantic %s -o %s/driver %s -lm", cc, flags,
             dir, files);
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
    if (have(qemu)) {
        snprintf(cmd, sizeof cmd, "%s -L %s %s/driver", qemu, sysroot, dir);
        CHECK_MSG(system(cmd) == 0, "%s", cmd);
    } else {
        printf("note: %s not installed: built, not run\n", qemu);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

TEST(emitc_cross_aarch64_qemu) {
    cross("aarch64-linux-gnu-gcc", "", "qemu-aarch64", "/usr/aarch64-linux-gnu");
}

TEST(emitc_cross_armhf) {
    /* 32-bit Arm, hard-float with NEON (a typical older Android ABI). */
    cross("arm-linux-gnueabihf-gcc", "-mfpu=neon", "qemu-arm", "/usr/arm-linux-gnueabihf");
}
