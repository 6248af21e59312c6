/* int8 quantisation: the emitted integer-only C equals the host's integer reference bit for
 * bit, both stay near the float interpreter, and bad calibration data or ops without an
 * integer lowering are refused by name. Weight-only storage (f16, int8 weights): the emitted
 * C decodes exactly the host's weights and computes what the f32 C computes with them. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "otc/compiler.h"
#include "otc/otc.h"
#include "otc/quant.h"

/* n rows of w uniform values in [-2, 2). */
static otc_dataset *random_rows(int n, int w, uint64_t seed) {
    otc_dataset *d = otc_dataset_new(n, w, 0);
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    for (size_t i = 0; i < (size_t)n * (size_t)w; i++)
        d->x[i] = 4.0f * otc_rng_uniform(&rng) - 2.0f;
    return d;
}

static void fill(otc_graph *g, otc_id p, uint64_t seed) {
    otc_tensor *t = otc_graph_param(g, p);
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    for (size_t i = 0; i < t->size; i++) t->data[i] = otc_rng_uniform(&rng) - 0.5f;
}

/* A graph of input x [B, width] and two branches of 8: *h = ReLU(dense(x)) (fused) and
 * *s = sigmoid(dense(x)). */
static otc_graph *two_branches(int width, otc_rng *rng, otc_id *h, otc_id *s) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_make(2, (int[]){OTC_BATCH, width}));
    *h = otc_activation(g, OTC_OP_RELU, otc_linear(g, x, 8, rng, "l1"), 0);
    *s = otc_activation(g, OTC_OP_SIGMOID, otc_linear(g, x, 8, rng, "l2"), 0);
    return g;
}

/* Both branches, their sum and product, tanh, a clamp fused into a dense layer, then every
 * activation op of the spec on a slice-free path. */
static otc_graph *mlp_graph(void) {
    otc_rng rng;
    otc_rng_seed(&rng, 7);
    otc_id h, s;
    otc_graph *g = two_branches(5, &rng, &h, &s);
    otc_id sum = otc_add(g, h, s), prod = otc_mul(g, h, s), diff = otc_sub(g, sum, prod);
    otc_id t = otc_activation(g, OTC_OP_TANH, diff, 0);
    otc_id c = otc_activation(g, OTC_OP_CLAMPED, otc_linear(g, t, 6, &rng, "l3"), 0);
    otc_id y = c;
    otc_id mag = otc_activation(g, OTC_OP_ABS, c, 0); /* sqrt's domain */
    for (int op = OTC_OP_SIGMOID; op <= OTC_OP_IDENTITY; op++)
        if (op != OTC_OP_INV && op != OTC_OP_LOG && op != OTC_OP_EXP &&
            op != OTC_OP_RECIPROCAL) /* poles and blow-ups */
            y = otc_add(g, y, otc_activation(g, (otc_op)op, op == OTC_OP_SQRT ? mag : c, 0.1f));
    otc_graph_mark_output(g, otc_linear(g, y, 3, &rng, "out"));
    otc_graph_mark_output(g, t);
    for (otc_id id = 0; id < otc_graph_size(g); id++)
        if (otc_graph_node(g, id)->op == OTC_OP_PARAMETER) fill(g, id, 100 + (uint64_t)id);
    return g;
}

/* NEAT neurons with every aggregation but product and a recurrent one through a delay. */
static otc_graph *neat_graph(void) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_make(2, (int[]){OTC_BATCH, 3}));
    otc_id d = otc_delay(g, "d", otc_shape_make(2, (int[]){OTC_BATCH, 1}));
    float w[4] = {1.5f, -0.7f, 0.4f, 0.8f};
    otc_id prev = -1, outs[8];
    int acts[] = {OTC_ACT_STEEP_SIGMOID, OTC_ACT_TANH, OTC_ACT_GAUSSIAN,
                  OTC_ACT_NP_SIGMOID,    OTC_ACT_HAT,  OTC_ACT_SELU};
    int aggs[] = {OTC_AGG_SUM,    OTC_AGG_MIN,    OTC_AGG_MAX,
                  OTC_AGG_MAXABS, OTC_AGG_MEDIAN, OTC_AGG_MEAN};
    for (int i = 0; i < 6; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        otc_id ns[5] = {x, x, x, d, prev};
        int nc[5] = {0, 1, 2, 0, 0};
        float nw[5] = {w[0], w[1], w[2], w[3], -1.1f};
        outs[i] = otc_neuron(g, name, (otc_act)acts[i], 0.2f * (float)i - 0.3f, 1.0f + 0.1f * i,
                             prev < 0 ? 4 : 5, ns, nc, nw);
        otc_graph_set_agg(g, outs[i], aggs[i]);
        prev = outs[i];
    }
    otc_graph_set_input(g, d, 0, outs[0]);
    for (int i = 0; i < 6; i++) otc_graph_mark_output(g, outs[i]);
    return g;
}

/* A small CNN on 6x6 images: conv + ReLU (fused) with unequal padding and a dilation, max pool,
 * a grouped strided conv with padding, average pool, dense. */
static otc_graph *cnn_graph(void) {
    otc_graph *g = otc_graph_new();
    otc_rng rng;
    otc_rng_seed(&rng, 11);
    otc_id x = otc_input(g, "x", otc_shape_make(4, (int[]){OTC_BATCH, 2, 6, 6}));
    otc_id c1 = otc_conv2d_layer(
        g, x, 4, 3, &(otc_conv2d_params){.pad_h = 1, .pad_w = 2, .dilation_w = 2}, &rng, "c1");
    otc_id p1 = otc_maxpool2d(g, "p1", otc_activation(g, OTC_OP_RELU, c1, 0),
                              &(otc_pool2d_params){.kernel_h = 2, .kernel_w = 2});
    otc_id c2 = otc_conv2d_layer(
        g, p1, 4, 2,
        &(otc_conv2d_params){.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 2},
        &rng, "c2");
    otc_id p2 = otc_avgpool2d(g, "p2", otc_activation(g, OTC_OP_TANH, c2, 0),
                              &(otc_pool2d_params){.kernel_h = 2, .kernel_w = 2, .pad_h = 1});
    if (otc_graph_mark_output(g, otc_linear(g, otc_flatten(g, p2), 3, &rng, "out"))) {
        otc_graph_free(g);
        return NULL;
    }
    for (otc_id id = 0; id < otc_graph_size(g); id++)
        if (otc_graph_node(g, id)->op == OTC_OP_PARAMETER) fill(g, id, 300 + (uint64_t)id);
    return g;
}

typedef void (*fwd_fn)(const int8_t *, int8_t *);
typedef void (*reset_fn)(void);

/* Emits q as C into a temporary directory, builds it with the system compiler, and runs
 * n_in rows through it and through otc_qmodel_forward: every byte must agree. */
static bool emitted_matches_host(const otc_qmodel *q, const otc_dataset *d, bool recurrent) {
    char dir[] = "/tmp/otc_quant_XXXXXX";
    if (!mkdtemp(dir)) return false;
    bool ok = otc_emit_c_int8_files(q, "qm", "test", dir) == OTC_OK;
    char cmd[640], so[128];
    snprintf(so, sizeof so, "%s/qm.so", dir);
    /* The float wrappers too, so they are held to -Werror. */
    snprintf(cmd, sizeof cmd,
             "cc -std=c99 -Wall -Wextra -Werror -O1 -DOTC_QM_FLOAT_API -shared -fPIC -o %s %s/qm.c",
             so, dir);
    if (ok) ok = system(cmd) == 0;
    /* With the Arm toolchain installed: a Cortex-M0 object without any soft-float helper. */
    snprintf(cmd, sizeof cmd,
             "! command -v arm-none-eabi-gcc > /dev/null || { arm-none-eabi-gcc -mcpu=cortex-m0 "
             "-mthumb -Os -std=c99 -Wall -Wextra -Werror -c -o %s/qm.o %s/qm.c && ! "
             "arm-none-eabi-nm %s/qm.o | grep -E '__aeabi_[fd]|__aeabi_[il]2[fd]|__(add|sub|mul|"
             "div)[sd]f3'; }",
             dir, dir, dir);
    if (ok && system(cmd) != 0) {
        fprintf(stderr, "the Cortex-M0 build failed or calls soft-float helpers\n");
        ok = false;
    }
    void *h = ok ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
    fwd_fn fwd = h ? (fwd_fn)(uintptr_t)dlsym(h, "qm_forward") : NULL;
    reset_fn rst = h ? (reset_fn)(uintptr_t)dlsym(h, "qm_reset") : NULL;
    ok = fwd && rst;
    int8_t *work = calloc((size_t)q->workspace_bytes + 1, 1);
    int8_t *state = calloc((size_t)q->state_bytes + 1, 1);
    int8_t *in = malloc((size_t)q->in_width), *a = malloc((size_t)q->out_width),
           *b = malloc((size_t)q->out_width);
    otc_qmodel_reset(q, state);
    if (ok) rst();
    int mismatches = 0;
    for (int r = 0; ok && r < d->rows; r++) {
        otc_qmodel_quantize_input(q, d->x + (size_t)r * (size_t)q->in_width, in);
        otc_qmodel_forward(q, in, a, work, state);
        fwd(in, b);
        if (memcmp(a, b, (size_t)q->out_width) && mismatches++ < 3)
            fprintf(stderr, "row %d: emitted C and host reference differ\n", r);
    }
    (void)recurrent;
    if (h) dlclose(h);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    free(work);
    free(state);
    free(in);
    free(a);
    free(b);
    return ok && mismatches == 0;
}

/* The largest |int8 reference - float interpreter| over the rows, in units of each output's
 * scale; *over counts the values off by more than 5% of the
 * output range (12.75 steps). */
static double worst_error_steps(otc_graph *g, const otc_qmodel *q, const otc_dataset *d,
                                int *over) {
    *over = 0;
    otc_executor *ex = otc_interpreter_new(g, &(otc_exec_options){.inference = true});
    int8_t *work = calloc((size_t)q->workspace_bytes + 1, 1);
    int8_t *state = calloc((size_t)q->state_bytes + 1, 1);
    int8_t *in = malloc((size_t)q->in_width), *out = malloc((size_t)q->out_width);
    otc_qmodel_reset(q, state);
    double worst = 0;
    for (int r = 0; r < d->rows; r++) {
        const float *row = d->x + (size_t)r * (size_t)q->in_width;
        otc_exec_set_input(ex, otc_graph_input(g, 0), row, 1);
        otc_exec_forward(ex);
        otc_qmodel_quantize_input(q, row, in);
        otc_qmodel_forward(q, in, out, work, state);
        int off = 0;
        for (int o = 0; o < q->n_outputs; o++) {
            const float *v;
            otc_exec_value(ex, otc_graph_output(g, o), &v, NULL);
            otc_qparam p = q->tensors[q->outputs[o]].q;
            for (int j = 0; j < q->tensors[q->outputs[o]].width; j++) {
                double e = fabs(otc_dequantize_value(out[off + j], p) - v[j]) / p.scale;
                if (e > worst) worst = e;
                *over += e > 12.75;
            }
            off += q->tensors[q->outputs[o]].width;
        }
    }
    otc_exec_free(ex);
    free(work);
    free(state);
    free(in);
    free(out);
    return worst;
}

/* g quantised on cal: the emitted C equals the host on test, whose outputs stay within
 * max_steps of the float interpreter's, with at most max_over values off by over 5% of the
 * range. Frees g, cal and test. */
static void check_quantized(otc_graph *g, otc_dataset *cal, otc_dataset *test, double max_steps,
                            int max_over, const char *what) {
    otc_qmodel *q = NULL;
    otc_status st = otc_quantize_int8(g, cal, &q);
    CHECK_MSG(st == OTC_OK, "%s: %s", what, otc_last_error());
    if (q) {
        CHECK_MSG(emitted_matches_host(q, test, false), "%s", what);
        int over;
        double e = worst_error_steps(g, q, test, &over);
        fprintf(stderr, "%s: worst %.2f output steps, %d values off by over 5%% of the range\n",
                what, e, over);
        CHECK_MSG(e < max_steps && over <= max_over,
                  "%s: worst error %.2f output steps, %d over 5%%", what, e, over);
    }
    otc_qmodel_free(q);
    otc_dataset_free(cal);
    otc_dataset_free(test);
    otc_graph_free(g);
}

TEST(quant_qmult_rounds) {
    /* 0.75 = 0.75 * 2^0: m = 0.75 * 2^31, shift 31; 10 * 0.75 = 7.5 rounds half up to 8. */
    otc_qmult m;
    REQUIRE(otc_qmult_from_real(0.75, &m) == OTC_OK);
    CHECK(m.m == 1610612736 && m.shift == 31);
    CHECK(otc_qmult_apply(10, m) == 8);
    CHECK(otc_qmult_apply(-10, m) == -7); /* -7.5 rounds half up */
    CHECK(otc_qmult_apply(3, m) == 2);    /* 2.25 */
    REQUIRE(otc_qmult_from_real(-0.001, &m) == OTC_OK);
    CHECK(otc_qmult_apply(5000, m) == -5);
    CHECK(otc_qmult_from_real(3e9, &m) != OTC_OK);
    /* Quantisation: scale 0.5, zero point -3: 1.0 -> -1, saturating at the ends. */
    otc_qparam p = {0.5f, -3};
    CHECK(otc_quantize_value(1.0f, p) == -1);
    CHECK(otc_quantize_value(1000.0f, p) == 127);
    CHECK(otc_quantize_value(-1000.0f, p) == -128);
    CHECK(otc_dequantize_value(-1, p) == 1.0f);
}

TEST(quant_mlp_emitted_equals_host) {
    otc_graph *g = mlp_graph();
    otc_dataset *cal = random_rows(300, 5, 1), *test = random_rows(200, 5, 2);
    otc_qmodel *q = NULL;
    otc_status st = otc_quantize_int8(g, cal, &q);
    CHECK_MSG(st == OTC_OK, "%s", otc_last_error());
    if (q) {
        CHECK(emitted_matches_host(q, test, false));
        /* Within a few output steps of float: int8 error compounds through ~6 layers. */
        int over;
        double e = worst_error_steps(g, q, test, &over);
        CHECK_MSG(e < 12.0, "worst error %.2f output steps", e);
    }
    otc_qmodel_free(q);
    otc_dataset_free(cal);
    otc_dataset_free(test);
    otc_graph_free(g);
}

TEST(quant_neat_emitted_equals_host) {
    otc_graph *g = neat_graph();
    otc_dataset *cal = random_rows(300, 3, 3), *test = random_rows(200, 3, 4);
    otc_qmodel *q = NULL;
    otc_status st = otc_quantize_int8(g, cal, &q);
    CHECK_MSG(st == OTC_OK, "%s", otc_last_error());
    if (q) {
        CHECK(q->state_bytes == 1);
        CHECK(emitted_matches_host(q, test, true));
        /* min, max, maxabs and median choose between inputs: where two are nearly tied,
         * rounding can choose the other one, and a steep activation after it moves far. Such
         * flips stay rare: at most 1% of the 1200 values off by over 5% of the range. */
        int over;
        worst_error_steps(g, q, test, &over);
        CHECK_MSG(over <= 12, "%d of 1200 values off by over 5%% of the range", over);
    }
    otc_qmodel_free(q);
    otc_dataset_free(cal);
    otc_dataset_free(test);
    otc_graph_free(g);
}

/* Product neurons of 0 to 6 factors: the 6-factor one's integer product (up to 255^6, 48
 * bits) is renormalised as it grows; one reads a delay. The emitted C equals the host; the
 * float interpreter bounds the error, which is the int8 rounding of the factors. */
TEST(quant_neat_product_emitted_equals_host) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_make(2, (int[]){OTC_BATCH, 3}));
    otc_id d = otc_delay(g, "d", otc_shape_make(2, (int[]){OTC_BATCH, 1}));
    otc_id src[6] = {x, x, x, x, x, d};
    int col[6] = {0, 1, 2, 0, 1, 0};
    float w[6] = {1.2f, -0.9f, 0.7f, 1.1f, 0.8f, 1.3f};
    int ks[4] = {0, 2, 3, 6},
        acts[4] = {OTC_ACT_TANH, OTC_ACT_IDENTITY, OTC_ACT_SIGMOID, OTC_ACT_IDENTITY};
    otc_id outs[4];
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        outs[i] = otc_neuron(g, name, (otc_act)acts[i], 0.1f * (float)i, 0.5f + 0.25f * (float)i,
                             ks[i], src, col, w);
        otc_graph_set_agg(g, outs[i], OTC_AGG_PRODUCT);
        otc_graph_mark_output(g, outs[i]);
    }
    otc_graph_set_input(g, d, 0, outs[2]);
    /* A product of k factors off by up to half a step each: a few output steps at most. */
    check_quantized(g, random_rows(300, 3, 31), random_rows(200, 3, 32), 6.0, 0, "product");
}

/* Slice, select and concat (along the last axis and along a middle one): copies of blocks,
 * each concat input requantised to the concat's scale. */
TEST(quant_slice_concat_emitted_equals_host) {
    otc_rng rng;
    otc_rng_seed(&rng, 41);
    otc_id h, s;
    otc_graph *g = two_branches(6, &rng, &h, &s);
    otc_id h3 = otc_reshape(g, h, otc_shape_make(3, (int[]){OTC_BATCH, 2, 4}));
    otc_id s3 = otc_reshape(g, s, otc_shape_make(3, (int[]){OTC_BATCH, 2, 4}));
    otc_id mid = otc_concat(g, 2, (otc_id[]){h3, s3}, 2); /* [B, 2, 8]: 2 runs of each */
    otc_id sel = otc_select(g, h3, 1, 1), sl = otc_slice(g, s, 1, 2, 5);
    otc_id cat = otc_concat(g, 3, (otc_id[]){sel, sl, otc_flatten(g, mid)}, -1);
    otc_graph_mark_output(g, otc_linear(g, cat, 3, &rng, "out"));
    otc_graph_mark_output(g, cat);
    for (otc_id id = 0; id < otc_graph_size(g); id++)
        if (otc_graph_node(g, id)->op == OTC_OP_PARAMETER) fill(g, id, 500 + (uint64_t)id);
    /* As in the MLP: the dense layer over the concat's 25 values compounds their steps. */
    check_quantized(g, random_rows(300, 6, 41), random_rows(200, 6, 42), 12.0, 0, "slice/concat");
}

TEST(quant_cnn_emitted_equals_host) {
    otc_graph *g = cnn_graph();
    REQUIRE(g != NULL);
    otc_dataset *cal = random_rows(200, 72, 8), *test = random_rows(100, 72, 9);
    otc_qmodel *q = NULL;
    otc_status st = otc_quantize_int8(g, cal, &q);
    CHECK_MSG(st == OTC_OK, "%s", otc_last_error());
    if (q) {
        CHECK(emitted_matches_host(q, test, false));
        /* The output's range is narrow next to its inputs' (a dense layer of random weights
         * over averaged tanh values), so a step of error there is several output steps. */
        int over;
        double e = worst_error_steps(g, q, test, &over);
        fprintf(stderr, "cnn: worst %.2f steps, %d of 300 values off by over 5%% of the range\n", e,
                over);
        CHECK_MSG(e < 40.0 && over <= 15, "worst error %.2f output steps, %d over 5%%", e, over);
    }
    otc_qmodel_free(q);
    otc_dataset_free(cal);
    otc_dataset_free(test);
    otc_graph_free(g);
}

/* Inputs whose ranges differ 10^5-fold, read by a dense layer that scales each back to about
 * [-1, 1] and by NEAT neurons that each read one column: on one shared grid (a step of
 * 2000/255) the two small columns would all round to 0; with a scale per column each output is
 * within a few of its steps of the float model. */
TEST(quant_input_scale_per_column) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_make(2, (int[]){OTC_BATCH, 3}));
    float wv[9] = {0.001f, 0, 0, 0, 100, 0, 0, 0, 1};
    otc_id w = otc_param(g, "w", otc_shape_make(2, (int[]){3, 3}), wv);
    otc_graph_mark_output(g, otc_matmul(g, x, w));
    for (int c = 0; c < 3; c++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", c);
        otc_graph_mark_output(g, otc_neuron(g, name, OTC_ACT_IDENTITY, 0, 1, 1, (otc_id[]){x},
                                            (int[]){c}, (float[]){wv[4 * c]}));
    }
    otc_dataset *cal = random_rows(300, 3, 21), *test = random_rows(200, 3, 22);
    for (otc_dataset *d = cal; d; d = d == cal ? test : NULL)
        for (int r = 0; r < d->rows; r++) {
            d->x[r * 3] *= 500.0f;     /* [-1000, 1000) */
            d->x[r * 3 + 1] *= 0.005f; /* [-0.01, 0.01) */
            d->x[r * 3 + 2] += 2.0f;   /* [0, 4) */
        }
    otc_qmodel *q = NULL;
    otc_status st = otc_quantize_int8(g, cal, &q);
    CHECK_MSG(st == OTC_OK, "%s", otc_last_error());
    if (q) {
        const otc_qtensor *in = &q->tensors[q->input];
        REQUIRE(in->cols != NULL);
        /* Each column's own range, widened to 0, over 255 steps: [0, 4) has its zero point at
         * -128 and a scale just under 4/255. */
        for (int c = 0; c < 3; c++) {
            float lo = 0, hi = 0;
            for (int r = 0; r < cal->rows; r++) {
                lo = fminf(lo, cal->x[r * 3 + c]);
                hi = fmaxf(hi, cal->x[r * 3 + c]);
            }
            CHECK_MSG(fabs(in->cols[c].scale - (hi - lo) / 255.0) < 1e-6 * (hi - lo),
                      "column %d: scale %g, range [%g, %g]", c, (double)in->cols[c].scale,
                      (double)lo, (double)hi);
        }
        CHECK(in->cols[2].zero_point == -128 && in->cols[2].scale < 4.0f / 255);
        char *h = NULL, *c = NULL;
        REQUIRE(otc_emit_c_int8(q, "qm", "test", &h, &c) == OTC_OK);
        CHECK(strstr(h, "#define QM_IN_SCALES {") != NULL);
        CHECK(strstr(h, "QM_IN_SCALE ") == NULL); /* no single scale to misuse */
        free(h);
        free(c);
        CHECK(emitted_matches_host(q, test, false));
        int over;
        double e = worst_error_steps(g, q, test, &over);
        fprintf(stderr, "per-column inputs: worst %.2f output steps\n", e);
        CHECK_MSG(e < 3.0, "worst error %.2f output steps", e);
    }
    otc_qmodel_free(q);
    otc_dataset_free(cal);
    otc_dataset_free(test);
    otc_graph_free(g);
}

TEST(quant_table_spans_where_sigmoid_varies) {
    /* A sigmoid calibrated over [-40, 40]: it is flat within half an output LSB (1/510) past
     * |x| ~ 6.2, so a table over the whole range would spend ~210 of its 256 entries on the two
     * saturated ends. The input's range is cut to where the output varies: most entries differ
     * from both ends, and every entry, and every calibrated input past the cut (saturated to
     * the end entry), is within one output LSB of the sigmoid computed here. */
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_make(2, (int[]){OTC_BATCH, 1}));
    otc_graph_mark_output(g, otc_activation(g, OTC_OP_SIGMOID, x, 0));
    otc_dataset *d = otc_dataset_new(81, 1, 0);
    for (int i = 0; i <= 80; i++) d->x[i] = (float)(i - 40);
    otc_qmodel *q = NULL;
    otc_status st = otc_quantize_int8(g, d, &q);
    CHECK_MSG(st == OTC_OK, "%s", otc_last_error());
    if (q) {
        CHECK(q->n_steps == 1 && q->steps[0].kind == OTC_QOP_LUT);
        const int8_t *lut = q->steps[0].lut;
        otc_qparam in = q->tensors[q->input].q, out = q->tensors[q->outputs[0]].q;
        int varied = 0;
        double worst = 0;
        for (int v = -128; v < 128; v++) {
            varied += lut[v + 128] != lut[0] && lut[v + 128] != lut[255];
            double xv = otc_dequantize_value((int8_t)v, in), ref = 1.0 / (1.0 + exp(-xv));
            worst = fmax(worst, fabs(otc_dequantize_value(lut[v + 128], out) - ref));
        }
        CHECK_MSG(varied >= 200, "%d of 256 entries vary", varied);
        for (double xv = -40; xv <= 40; xv += 0.01) {
            int8_t in_q = otc_quantize_value((float)xv, in), y;
            otc_qmodel_forward(q, &in_q, &y, (int8_t[256]){0}, NULL);
            if (xv < otc_dequantize_value(-128, in) || xv > otc_dequantize_value(127, in))
                worst = fmax(worst, fabs(otc_dequantize_value(y, out) - 1.0 / (1.0 + exp(-xv))));
        }
        CHECK_MSG(worst <= out.scale, "worst error %g, LSB %g", worst, (double)out.scale);
    }
    otc_qmodel_free(q);
    otc_dataset_free(d);
    otc_graph_free(g);
}

TEST(quant_refuses_bad_data) {
    otc_graph *g = mlp_graph();
    otc_qmodel *q = NULL;
    otc_dataset *d = random_rows(20, 4, 5);
    CHECK(otc_quantize_int8(g, d, &q) == OTC_ERR_SHAPE);
    CHECK(strstr(otc_last_error(), "4 feature column") != NULL);
    otc_dataset_free(d);
    d = random_rows(20, 5, 5);
    /* As from a CSV (line numbers): a constant feature is refused; image pixels are not. */
    d->lines = malloc(20 * sizeof *d->lines);
    REQUIRE(d->lines != NULL);
    for (int r = 0; r < 20; r++) d->lines[r] = r + 2;
    for (int r = 0; r < 20; r++) d->x[r * 5 + 2] = 1.5f;
    CHECK(otc_quantize_int8(g, d, &q) != OTC_OK);
    CHECK(strstr(otc_last_error(), "column 3 (x2) is constant") != NULL);
    d->x[7 * 5 + 2] = NAN;
    CHECK(otc_quantize_int8(g, d, &q) != OTC_OK);
    CHECK(strstr(otc_last_error(), "(line 9), column 3 is not a finite") != NULL);
    CHECK(q == NULL);
    otc_dataset_free(d);
    otc_graph_free(g);
}

TEST(quant_refuses_ops_without_lowering) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_make(2, (int[]){OTC_BATCH, 2}));
    otc_id n = otc_div(g, x, x);
    otc_graph_set_name(g, n, "ratio");
    otc_graph_mark_output(g, n);
    otc_dataset *d = random_rows(20, 2, 6);
    otc_qmodel *q = NULL;
    CHECK(otc_quantize_int8(g, d, &q) == OTC_ERR_UNSUPPORTED);
    CHECK(strstr(otc_last_error(), "node 'ratio' (div)") != NULL);
    otc_graph_free(g);
    /* A softmax that is not the output has no integer form either. */
    g = otc_graph_new();
    x = otc_input(g, "x", otc_shape_make(2, (int[]){OTC_BATCH, 2}));
    otc_id s = otc_softmax(g, x);
    otc_graph_set_name(g, s, "sm");
    otc_graph_mark_output(g, otc_activation(g, OTC_OP_TANH, s, 0));
    CHECK(otc_quantize_int8(g, d, &q) == OTC_ERR_UNSUPPORTED);
    CHECK(strstr(otc_last_error(), "node 'sm' (softmax)") != NULL);
    otc_graph_free(g);
    otc_dataset_free(d);
}

/* ---- weight-only storage ---- */

TEST(quant_f16_bits) {
    /* Hand-checked halves: 1, -2, 65504 (the largest), 2^-24 (the smallest subnormal), 1/3
     * rounded to nearest (0x3555 = 0.33325195...), and ties (1 + 2^-11, 1 + 3 * 2^-11)
     * rounding to even. */
    CHECK(otc_f16_from_f32(1.0f) == 0x3c00);
    CHECK(otc_f16_from_f32(-2.0f) == 0xc000);
    CHECK(otc_f16_from_f32(65504.0f) == 0x7bff);
    CHECK(otc_f16_from_f32(65520.0f) == 0x7c00);
    CHECK(otc_f16_from_f32(0x1p-24f) == 0x0001);
    CHECK(otc_f16_from_f32(1.0f / 3.0f) == 0x3555);
    CHECK(otc_f16_from_f32(1.0f + 0x1p-11f) == 0x3c00);
    CHECK(otc_f16_from_f32(1.0f + 0x1.8p-10f) == 0x3c02);
    CHECK(otc_f32_from_f16(0x3555) == 0.333251953125f);
    CHECK(otc_f32_from_f16(0x8001) == -0x1p-24f);
    /* Every half reads back to itself. */
    int bad = 0;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        bad += otc_f16_from_f32(otc_f32_from_f16((uint16_t)h)) != h;
        bad += otc_f16_from_f32(otc_f32_from_f16((uint16_t)(h | 0x8000))) != (h | 0x8000);
    }
    CHECK_MSG(bad == 0, "%d halves do not read back", bad);
}

typedef int (*c_fwd_fn)(const float *, float *, int, void *);
typedef size_t (*c_bytes_fn)(int);
typedef int (*c_reset_fn)(void *, int);

typedef void (*c_decode_fn)(void *);

typedef struct {
    c_fwd_fn fwd, fwd_decoded;
    c_reset_fn reset;
    c_decode_fn decode;
    void *ws;
} c_model;

static bool c_model_load(void *h, const char *name, c_model *m) {
    char sym[64];
    snprintf(sym, sizeof sym, "%s_forward", name);
    m->fwd = (c_fwd_fn)(uintptr_t)dlsym(h, sym);
    snprintf(sym, sizeof sym, "%s_reset", name);
    m->reset = (c_reset_fn)(uintptr_t)dlsym(h, sym);
    snprintf(sym, sizeof sym, "%s_forward_decoded", name);
    m->fwd_decoded = (c_fwd_fn)(uintptr_t)dlsym(h, sym);
    snprintf(sym, sizeof sym, "%s_decode", name);
    m->decode = (c_decode_fn)(uintptr_t)dlsym(h, sym);
    snprintf(sym, sizeof sym, "%s_workspace_bytes", name);
    c_bytes_fn bytes = (c_bytes_fn)(uintptr_t)dlsym(h, sym);
    m->ws = bytes ? calloc(bytes(4) / sizeof(float) + 1, sizeof(float)) : NULL;
    if (m->ws && m->reset) m->reset(m->ws, 1);
    return m->fwd && m->ws;
}

/* Each graph emitted with its weights stored as f16 and as int8 ("<what>_<mode>"), and as
 * f32 C with the host's decoded weights (otc_weights_round, "<what>_<mode>_host"), all built
 * into one shared object (one compiler run: the suite's time is short). */
typedef struct {
    const char *what;
    otc_graph *g, *host[2];
    int width;
} wcase;

static bool build_weight_modes(wcase *cs, int n, const char *dir, void **h) {
    char cmd[4096];
    int used = snprintf(cmd, sizeof cmd,
                        "cc -std=c99 -Wall -Wextra -Werror -O0 -shared -fPIC -o %s/w.so", dir);
    bool ok = true;
    for (int i = 0; i < n && ok; i++)
        for (int m = 0; m < 2 && ok; m++) {
            char name[2][64];
            snprintf(name[0], sizeof name[0], "%s_%d", cs[i].what, m);
            snprintf(name[1], sizeof name[1], "%s_%d_host", cs[i].what, m);
            cs[i].host[m] = otc_graph_clone(cs[i].g);
            otc_weight_storage mode = m ? OTC_WEIGHTS_INT8 : OTC_WEIGHTS_F16;
            ok = cs[i].host[m] && otc_weights_round(cs[i].host[m], mode) == OTC_OK;
            otc_emit_c_options o = otc_emit_c_defaults();
            o.name = name[0];
            o.weights = mode;
            ok = ok && otc_emit_c_files(cs[i].g, &o, dir) == OTC_OK;
            o.name = name[1];
            o.weights = OTC_WEIGHTS_F32;
            ok = ok && otc_emit_c_files(cs[i].host[m], &o, dir) == OTC_OK;
            for (int k = 0; k < 2; k++)
                used += snprintf(cmd + used, sizeof cmd - (size_t)used, " %s/%s.c", dir, name[k]);
        }
    if (!ok) fprintf(stderr, "emit: %s\n", otc_last_error());
    snprintf(cmd + used, sizeof cmd - (size_t)used, " -lm");
    if (ok) ok = system(cmd) == 0;
    char so[128];
    snprintf(so, sizeof so, "%s/w.so", dir);
    *h = ok ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
    return *h != NULL;
}

/* The stored-weights C must decode exactly the host's weights and compute what the f32 C
 * computes with them, bit for bit, whether it decodes at every call (rows 0, 2, ...) or once
 * (NAME_decode, then NAME_forward_decoded: rows 1, 3, ...); the largest |stored - interpreter on
 * the trained weights| relative to max(1, |y|) goes to *err. */
static bool weights_mode_matches_host(void *h, const wcase *wc, int m, const otc_dataset *d,
                                      double *err) {
    char name[2][64];
    snprintf(name[0], sizeof name[0], "%s_%d", wc->what, m);
    snprintf(name[1], sizeof name[1], "%s_%d_host", wc->what, m);
    c_model cm[2] = {{0}};
    bool ok = c_model_load(h, name[0], &cm[0]) && c_model_load(h, name[1], &cm[1]) &&
              cm[0].decode && cm[0].fwd_decoded;
    otc_plan *fwd = NULL, *big = NULL, *tr = NULL;
    otc_emit_c_options o = otc_emit_c_defaults();
    ok = ok && otc_emit_c_plans(wc->host[m], &o, &fwd, &big, &tr) == OTC_OK;
    otc_executor *ex = otc_interpreter_new(wc->g, &(otc_exec_options){.inference = true});
    ok = ok && ex;
    float y[2][64];
    int mismatches = 0;
    *err = 0;
    for (int row = 0; ok && row < d->rows; row++) {
        const float *x = d->x + (size_t)row * (size_t)d->n_features;
        if (ok && row == 1) cm[0].decode(cm[0].ws);
        ok = ok && (row % 2 ? cm[0].fwd_decoded : cm[0].fwd)(x, y[0], 1, cm[0].ws) == 0;
        ok = ok && cm[1].fwd(x, y[1], 1, cm[1].ws) == 0;
        if (ok && memcmp(y[0], y[1], (size_t)fwd->out_width * sizeof(float)) && mismatches++ < 3)
            fprintf(stderr, "%s row %d: stored-weights C and f32 C on the host's weights differ\n",
                    name[0], row);
        ok = ok && otc_exec_set_input(ex, otc_graph_input(wc->g, 0), x, 1) == OTC_OK &&
             otc_exec_forward(ex) == OTC_OK;
        int at = 0;
        for (int k = 0; ok && k < otc_graph_output_count(wc->g); k++) {
            const float *v;
            otc_exec_value(ex, otc_graph_output(wc->g, k), &v, NULL);
            int n = (int)otc_graph_node(wc->g, otc_graph_output(wc->g, k))->shape.dim[1];
            for (int j = 0; j < n; j++, at++) {
                double e = fabs(y[0][at] - v[j]) / fmax(1.0, fabs(v[j]));
                if (e > *err) *err = e;
            }
        }
    }
    /* The decoded weights at the workspace's head are the host's, in the plan's order. */
    for (int i = 0; ok && i < fwd->n_params; i++) {
        const otc_node *nd = otc_graph_node(wc->host[m], fwd->params[i]);
        const float *w = (const float *)cm[0].ws + fwd->values[fwd->params[i]].param_offset;
        if (memcmp(w, nd->value->data, nd->value->size * sizeof(float)) && mismatches++ < 3)
            fprintf(stderr, "%s parameter %d: the emitted C decodes other weights\n", name[0], i);
    }
    otc_exec_free(ex);
    otc_plan_free(fwd);
    otc_plan_free(big);
    otc_plan_free(tr);
    for (int k = 0; k < 2; k++) free(cm[k].ws);
    return ok && mismatches == 0;
}

TEST(quant_weights_emitted_equals_host) {
    /* NEAT neurons (one weight scale each) and a CNN (per output channel of its convs and,
     * in its dense layer, of the matmul's columns). */
    wcase cs[2] = {{"neat", neat_graph(), {NULL, NULL}, 3}, {"cnn", cnn_graph(), {NULL, NULL}, 72}};
    char dir[] = "/tmp/otc_wquant_XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    void *h = NULL;
    CHECK(build_weight_modes(cs, 2, dir, &h));
    for (int i = 0; h && i < 2; i++) {
        otc_dataset *d = random_rows(20, cs[i].width, 40 + (uint64_t)i);
        for (int m = 0; m < 2; m++) {
            double err;
            bool same = weights_mode_matches_host(h, &cs[i], m, d, &err);
            const char *mode = m ? "weights-int8" : "f16";
            CHECK_MSG(same, "%s %s: emitted C and host differ", cs[i].what, mode);
            fprintf(stderr, "%s %s: largest error vs f32 %.2g\n", cs[i].what, mode, err);
            /* f16 keeps 11 significant bits; int8 7, through a few layers. */
            CHECK_MSG(err < (m ? 0.1 : 5e-3), "%s %s: error %.3g vs f32", cs[i].what, mode, err);
        }
        otc_dataset_free(d);
    }
    if (h) dlclose(h);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    for (int i = 0; i < 2; i++) {
        otc_graph_free(cs[i].g);
        otc_graph_free(cs[i].host[0]);
        otc_graph_free(cs[i].host[1]);
    }
}

TEST(quant_weights_refuses) {
    /* A weight past f16's range is refused by name; training keeps f32 weights. */
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_make(2, (int[]){OTC_BATCH, 2}));
    otc_id n = otc_neuron(g, "big", OTC_ACT_TANH, 0, 1, 2, (otc_id[]){x, x}, (int[]){0, 1},
                          (float[]){1e5f, 1});
    otc_graph_mark_output(g, n);
    otc_graph *r = otc_graph_clone(g);
    CHECK(otc_weights_round(r, OTC_WEIGHTS_F16) == OTC_ERR_UNSUPPORTED);
    CHECK(strstr(otc_last_error(), "65504") != NULL);
    CHECK(otc_weights_round(r, OTC_WEIGHTS_INT8) == OTC_OK);
    otc_emit_c_options o = otc_emit_c_defaults();
    o.weights = OTC_WEIGHTS_F16;
    char *hd = NULL, *src = NULL;
    CHECK(otc_emit_c(g, &o, &hd, &src) == OTC_ERR_UNSUPPORTED);
    CHECK(strstr(otc_last_error(), "65504") != NULL);
    o.train = true;
    o.loss = n;
    CHECK(otc_emit_c(g, &o, &hd, &src) == OTC_ERR_ARG);
    CHECK(hd == NULL && src == NULL);
    otc_graph_free(r);
    otc_graph_free(g);
}
