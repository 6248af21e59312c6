/* Compiled convolution and pooling on every backend (BACKEND_TEST): random conv/pool graphs
 * (shapes, channels, kernels, strides, padding, dilation, groups; max and average pooling)
 * followed by a dense layer and softmax cross-entropy. Each backend's forward, gradients and
 * Adam steps agree with the interpreter's, and its gradients with central finite differences
 * of its own forward; a hand-computed case pins the arithmetic. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_support.h"
#include "otc/compiler.h"
#include "otc/rng.h"

enum { CLASSES = 3, STEPS = 3 };

/* Float32 tolerances. Forward values and the loss: 2e-5 relative (sums of up to ~100
 * products summed in other orders). Gradients: 1e-4 of the largest gradient of the
 * parameter. Parameters after Adam steps of lr 1e-3: 1e-5 absolute (Adam's update is
 * m / sqrt(v), so a gradient differing in its last bits moves a weight by ~lr * 1e-3).
 * Finite differences (h = 1e-3, small enough to cross no max-pool tie here; float32 loss): 2e-3
 * absolute plus 3% relative. */
#define TOL_VALUE 2e-5
#define TOL_GRAD  1e-4
#define TOL_PARAM 1e-5
#define FD_H      1e-3
#define FD_ABS    2e-3
#define FD_REL    3e-2

typedef struct {
    int batch, c, h, w; /* input [B, C, H, W] */
    int oc, kh, kw;     /* conv weight [OC, C/G, KH, KW] */
    otc_conv2d_params cp;
    bool bias, max_pool, act;
    otc_pool2d_params pp;
} conv_case;

static int pick(otc_rng *r, int lo, int hi) {
    return lo + (int)otc_rng_below(r, (uint32_t)(hi - lo + 1));
}

/* A random case whose windows fit (the shape rules refuse the others; drawn again). */
static conv_case random_case(otc_rng *r) {
    for (;;) {
        conv_case k = {0};
        int groups = pick(r, 1, 2);
        k.batch = pick(r, 1, 5);
        k.c = groups * pick(r, 1, 2);
        k.oc = groups * pick(r, 1, 3);
        k.h = pick(r, 4, 9);
        k.w = pick(r, 4, 9);
        k.kh = pick(r, 1, 3);
        k.kw = pick(r, 1, 3);
        k.cp = (otc_conv2d_params){.stride_h = pick(r, 1, 2),
                                   .stride_w = pick(r, 1, 2),
                                   .pad_h = pick(r, 0, 2),
                                   .pad_w = pick(r, 0, 2),
                                   .dilation_h = pick(r, 1, 2),
                                   .dilation_w = pick(r, 1, 2),
                                   .groups = groups};
        k.bias = otc_rng_below(r, 2);
        k.max_pool = otc_rng_below(r, 2);
        k.act = otc_rng_below(r, 2);
        k.pp.kernel_h = pick(r, 1, 3);
        k.pp.kernel_w = pick(r, 1, 3);
        k.pp.stride_h = pick(r, 1, 2);
        k.pp.stride_w = pick(r, 1, 2);
        k.pp.pad_h = pick(r, 0, k.pp.kernel_h / 2);
        k.pp.pad_w = pick(r, 0, k.pp.kernel_w / 2);
        int oh = otc_window_out(k.h, k.kh, k.cp.stride_h, k.cp.pad_h, k.cp.dilation_h);
        int ow = otc_window_out(k.w, k.kw, k.cp.stride_w, k.cp.pad_w, k.cp.dilation_w);
        if (oh < 1 || ow < 1) continue;
        if (otc_window_out(oh, k.pp.kernel_h, k.pp.stride_h, k.pp.pad_h, 1) < 1) continue;
        if (otc_window_out(ow, k.pp.kernel_w, k.pp.stride_w, k.pp.pad_w, 1) < 1) continue;
        return k;
    }
}

static void fill(otc_rng *r, float *v, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) v[i] = scale * (2 * otc_rng_uniform(r) - 1);
}

/* x -> conv2d (+ bias) -> tanh? -> max/avg pool -> flatten -> dense -> softmax_ce(labels).
 * The same seed builds the same graph (weights included). */
static otc_graph *build(const conv_case *k, uint64_t seed, otc_id *loss) {
    otc_rng r;
    otc_rng_seed(&r, seed);
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", (otc_shape){4, {OTC_BATCH, k->c, k->h, k->w}});
    otc_id lab = otc_input(g, "labels", otc_shape_2d(OTC_BATCH, 1));
    int cg = k->c / k->cp.groups;
    size_t nw = (size_t)k->oc * (size_t)(cg * k->kh * k->kw);
    float *wv = malloc(nw * sizeof *wv), bv[8];
    fill(&r, wv, nw, 0.5f);
    fill(&r, bv, 8, 0.5f);
    otc_id w = otc_param(g, "w", (otc_shape){4, {k->oc, cg, k->kh, k->kw}}, wv);
    otc_id b = k->bias ? otc_param(g, "b", otc_shape_1d(k->oc), bv) : -1;
    otc_id y = otc_conv2d(g, "conv", x, w, b, &k->cp);
    if (k->act) y = otc_activation(g, OTC_OP_TANH, y, 0);
    y = k->max_pool ? otc_maxpool2d(g, "pool", y, &k->pp) : otc_avgpool2d(g, "pool", y, &k->pp);
    y = otc_flatten(g, y);
    int feat = (int)otc_graph_node(g, y)->shape.dim[1];
    float *dv = malloc((size_t)feat * CLASSES * sizeof *dv);
    fill(&r, dv, (size_t)feat * CLASSES, 1.0f / sqrtf((float)feat));
    otc_id d = otc_param(g, "dense", otc_shape_2d(feat, CLASSES), dv);
    otc_id db = otc_param(g, "dense_b", otc_shape_1d(CLASSES), bv);
    otc_id logits = otc_matmul(g, y, d);
    logits = otc_add(g, logits, otc_row_broadcast(g, db, logits));
    otc_graph_mark_output(g, logits);
    *loss = otc_softmax_ce(g, logits, lab);
    free(wv);
    free(dv);
    return g;
}

typedef struct {
    float *x, *labels;
} batch_data;

static batch_data data_for(const conv_case *k, uint64_t seed) {
    otc_rng r;
    otc_rng_seed(&r, seed ^ 0x5eed);
    size_t n = (size_t)k->batch * (size_t)(k->c * k->h * k->w);
    batch_data d = {malloc(n * sizeof(float)), malloc((size_t)k->batch * sizeof(float))};
    fill(&r, d.x, n, 1.0f);
    for (int i = 0; i < k->batch; i++) d.labels[i] = (float)otc_rng_below(&r, CLASSES);
    return d;
}

static bool set_data(otc_executor *ex, const otc_graph *g, const conv_case *k,
                     const batch_data *d) {
    return otc_exec_set_input(ex, otc_graph_find(g, "x"), d->x, k->batch) == OTC_OK &&
           otc_exec_set_input(ex, otc_graph_find(g, "labels"), d->labels, k->batch) == OTC_OK;
}

static bool near(double got, double want, double tol) {
    return fabs(got - want) <= tol;
}

static double loss_of(otc_executor *ex, otc_id loss) {
    const float *v;
    if (otc_exec_forward(ex) || otc_exec_value(ex, loss, &v, NULL)) return NAN;
    return v[0];
}

static const char *const PARAMS[] = {"w", "b", "dense", "dense_b"};

/* The case on backend k against the interpreter: forward, gradients, finite differences of
 * k's own forward for a few weights, then STEPS Adam steps and the trained weights. Keeps
 * the case's graph in *kept, which the caller frees at the end of the test: the emitted-C executors
 * reuse code built for the same graph pointer (backend_support.c), so no later graph may
 * get its address. */
static void check_case(bk *k, const conv_case *c, uint64_t seed, const char *what,
                       otc_graph **kept) {
    otc_id loss, loss_i;
    otc_graph *g = build(c, seed, &loss), *gi = build(c, seed, &loss_i);
    *kept = g;
    REQUIRE(g && gi && loss >= 0);
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_ADAM);
    cfg.lr = 1e-3f;
    otc_executor *ex = bk_new(k, g, &(bk_options){.loss = loss, .optim = &cfg});
    REQUIRE_EX(ex);
    otc_executor *ref = otc_interpreter_new(gi, NULL);
    REQUIRE(ref);
    batch_data d = data_for(c, seed);
    REQUIRE(set_data(ex, g, c, &d) && set_data(ref, gi, c, &d));
    /* forward */
    double l = loss_of(ex, loss), li = loss_of(ref, loss_i);
    CHECK_MSG(near(l, li, TOL_VALUE * fmax(1, fabs(li))), "%s: loss %.9g vs %.9g", what, l, li);
    const float *y, *yi;
    otc_shape ys;
    otc_id out = otc_graph_output(g, 0), out_i = otc_graph_output(gi, 0);
    REQUIRE(otc_exec_value(ex, out, &y, &ys) == OTC_OK);
    REQUIRE(otc_exec_value(ref, out_i, &yi, NULL) == OTC_OK);
    for (int i = 0; i < c->batch * CLASSES; i++)
        CHECK_MSG(near(y[i], yi[i], TOL_VALUE * fmax(1, fabs(yi[i]))), "%s: logit %d %g vs %g",
                  what, i, y[i], yi[i]);
    /* gradients */
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    REQUIRE(otc_exec_backward(ref, loss_i) == OTC_OK);
    for (int p = 0; p < 4; p++) {
        otc_id id = otc_graph_find(g, PARAMS[p]), id_i = otc_graph_find(gi, PARAMS[p]);
        if (id < 0) continue;
        size_t n = otc_graph_param(g, id)->size;
        const float *gr, *gri;
        REQUIRE(otc_exec_grad(ex, id, &gr) == OTC_OK);
        REQUIRE(otc_exec_grad(ref, id_i, &gri) == OTC_OK);
        double big = 1e-6;
        for (size_t i = 0; i < n; i++) big = fmax(big, fabs(gri[i]));
        for (size_t i = 0; i < n; i++)
            CHECK_MSG(near(gr[i], gri[i], TOL_GRAD * big), "%s: d%s[%zu] %.9g vs %.9g", what,
                      PARAMS[p], i, gr[i], gri[i]);
        /* finite differences of this backend's own forward: three weights and a bias of the
         * convolution (the dense layer's are checked elsewhere) */
        float *copy = malloc(n * sizeof *copy);
        REQUIRE(copy);
        memcpy(copy, gr, n * sizeof *copy);
        float *pv = otc_graph_param(g, id)->data;
        for (int t = 0; t < (p == 0 ? 3 : p == 1 ? 1 : 0); t++) {
            size_t i = (size_t)(seed * 7 + (uint64_t)t * 13) % n;
            float keep = pv[i];
            double at[2];
            for (int side = 0; side < 2; side++) { /* the interpreter reads pv as it runs */
                pv[i] = keep + (side ? -1.0f : 1.0f) * (float)FD_H;
                otc_executor *e = bk_new(k, g, &(bk_options){.loss = loss});
                REQUIRE_EX(e);
                REQUIRE(set_data(e, g, c, &d));
                at[side] = loss_of(e, loss);
                otc_exec_free(e);
            }
            pv[i] = keep;
            double fd = (at[0] - at[1]) / (2 * FD_H);
            CHECK_MSG(near(copy[i], fd, FD_ABS + FD_REL * fabs(fd)),
                      "%s: d%s[%zu] %.6g, finite differences %.6g", what, PARAMS[p], i, copy[i],
                      fd);
        }
        free(copy);
    }
    /* Adam steps (the compiled backends' fused optimiser step) */
    otc_optimizer *opt = otc_optimizer_new(&cfg), *opt_i = otc_optimizer_new(&cfg);
    REQUIRE(opt && opt_i);
    for (int s = 0; s < STEPS; s++) {
        float lv = 0, lvi = 0;
        REQUIRE(otc_exec_train_step(ex, loss, opt, &lv) == OTC_OK);
        REQUIRE(otc_exec_train_step(ref, loss_i, opt_i, &lvi) == OTC_OK);
        CHECK_MSG(near(lv, lvi, TOL_VALUE * fmax(1, fabs(lvi))), "%s: step %d loss %g vs %g", what,
                  s, lv, lvi);
    }
    REQUIRE(otc_exec_sync_params(ex) == OTC_OK);
    REQUIRE(otc_exec_sync_params(ref) == OTC_OK);
    for (int p = 0; p < 4; p++) {
        otc_id id = otc_graph_find(g, PARAMS[p]), id_i = otc_graph_find(gi, PARAMS[p]);
        if (id < 0) continue;
        const otc_tensor *a = otc_graph_param(g, id), *b = otc_graph_param(gi, id_i);
        for (size_t i = 0; i < a->size; i++)
            CHECK_MSG(near(a->data[i], b->data[i], TOL_PARAM), "%s: trained %s[%zu] %.9g vs %.9g",
                      what, PARAMS[p], i, a->data[i], b->data[i]);
    }
    otc_optimizer_free(opt);
    otc_optimizer_free(opt_i);
    free(d.x);
    free(d.labels);
    otc_exec_free(ex);
    otc_exec_free(ref);
    otc_graph_free(gi);
}

BACKEND_TEST(conv_compiled_random) {
    otc_rng r;
    otc_rng_seed(&r, 17);
    enum { CASES = 24 };
    otc_graph *gs[CASES] = {NULL};
    for (int t = 0; t < CASES; t++) {
        conv_case c = random_case(&r);
        char what[400];
        snprintf(what, sizeof what,
                 "case %d (B%d C%d %dx%d -> O%d k%dx%d s%d,%d p%d,%d d%d,%d g%d bias %d %s "
                 "k%dx%d s%d,%d p%d,%d)",
                 t, c.batch, c.c, c.h, c.w, c.oc, c.kh, c.kw, c.cp.stride_h, c.cp.stride_w,
                 c.cp.pad_h, c.cp.pad_w, c.cp.dilation_h, c.cp.dilation_w, c.cp.groups, c.bias,
                 c.max_pool ? "max" : "avg", c.pp.kernel_h, c.pp.kernel_w, c.pp.stride_h,
                 c.pp.stride_w, c.pp.pad_h, c.pp.pad_w);
        check_case(k, &c, 100 + (uint64_t)t, what, &gs[t]);
    }
    for (int t = 0; t < CASES; t++) otc_graph_free(gs[t]);
}

/* By hand, on x = 1..9 as a 3x3 image: a 2x2 convolution [[1, 0], [0, -1]] + 0.5 with stride 2
 * and padding 1 (y = [-0.5, -2.5, -6.5, -3.5]: each output is the top-left tap minus the
 * bottom-right one, a padding tap reading 0), a 2x2 average pool with stride 2 and padding 1
 * (the divisor is always 4: [1, 5, 11, 28] / 4) and a 2x2 max pool with stride 1
 * ([5, 6, 8, 9]). Gradients of sum(y) + sum(maxpool(p)): dw[kh, kw] = the sum of the inputs
 * each tap read (5, 10, 10, 20), db = 4 outputs; and for the image p = [1 1 0; 1 1 0; 0 0 0]
 * (ties in every window) the first maximum of each window takes its gradient: p0, p1, p3 and
 * p4 get 1 each (the last maximum would give p4 all four). */
BACKEND_TEST(conv_compiled_hand_values) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", (otc_shape){4, {OTC_BATCH, 1, 3, 3}});
    otc_id z = otc_input(g, "z", otc_shape_2d(OTC_BATCH, 9));
    const float wv[4] = {1, 0, 0, -1}, bv[1] = {0.5f}, pv[9] = {1, 1, 0, 1, 1, 0, 0, 0, 0};
    otc_id w = otc_param(g, "w", (otc_shape){4, {1, 1, 2, 2}}, wv);
    otc_id b = otc_param(g, "b", otc_shape_1d(1), bv);
    otc_id p = otc_param(g, "p", otc_shape_1d(9), pv);
    otc_id y =
        otc_conv2d(g, "conv", x, w, b,
                   &(otc_conv2d_params){.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1});
    otc_id a = otc_avgpool2d(
        g, "avg", x,
        &(otc_pool2d_params){
            .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1});
    otc_pool2d_params one = {.kernel_h = 2, .kernel_w = 2, .stride_h = 1, .stride_w = 1};
    otc_id m = otc_maxpool2d(g, "max", x, &one);
    otc_id img = otc_reshape(g, otc_add(g, z, otc_row_broadcast(g, p, z)),
                             (otc_shape){4, {OTC_BATCH, 1, 3, 3}});
    otc_id mp = otc_maxpool2d(g, "maxp", img, &one);
    REQUIRE(y >= 0 && a >= 0 && m >= 0 && mp >= 0);
    otc_graph_mark_output(g, y);
    otc_graph_mark_output(g, a);
    otc_graph_mark_output(g, m);
    otc_id loss = otc_add(g, otc_sum(g, y), otc_sum(g, mp));
    REQUIRE(loss >= 0);
    otc_executor *ex = bk_new(k, g, &(bk_options){.loss = loss});
    REQUIRE_EX(ex);
    const float xs[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, zs[9] = {0};
    REQUIRE(otc_exec_set_input(ex, x, xs, 1) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, z, zs, 1) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    const float want_y[4] = {-0.5f, -2.5f, -6.5f, -3.5f}, want_a[4] = {0.25f, 1.25f, 2.75f, 7};
    const float want_m[4] = {5, 6, 8, 9};
    const float *v;
    REQUIRE(otc_exec_value(ex, y, &v, NULL) == OTC_OK);
    for (int i = 0; i < 4; i++) CHECK_NEAR(v[i], want_y[i], 1e-6);
    REQUIRE(otc_exec_value(ex, a, &v, NULL) == OTC_OK);
    for (int i = 0; i < 4; i++) CHECK_NEAR(v[i], want_a[i], 1e-6);
    REQUIRE(otc_exec_value(ex, m, &v, NULL) == OTC_OK);
    for (int i = 0; i < 4; i++) CHECK_NEAR(v[i], want_m[i], 0);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    const float want_dw[4] = {5, 10, 10, 20}, want_dp[9] = {1, 1, 0, 1, 1, 0, 0, 0, 0};
    REQUIRE(otc_exec_grad(ex, w, &v) == OTC_OK);
    for (int i = 0; i < 4; i++) CHECK_NEAR(v[i], want_dw[i], 1e-6);
    REQUIRE(otc_exec_grad(ex, b, &v) == OTC_OK);
    CHECK_NEAR(v[0], 4, 1e-6);
    REQUIRE(otc_exec_grad(ex, p, &v) == OTC_OK);
    for (int i = 0; i < 9; i++) CHECK_NEAR(v[i], want_dp[i], 0);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* y[b, o, i, j] = bias[o] + sum over the group's channels and the taps inside the input of
 * x w, in double: the reference for one_sample_wide_rows. */
static double direct_conv(const float *x, const float *w, const float *bias, int C, int H, int W,
                          int O, int G, int KH, int KW, int ph, int pw, int b, int o, int i,
                          int j) {
    int cg = C / G, og = O / G;
    double s = bias[o];
    for (int c = 0; c < cg; c++)
        for (int kh = 0; kh < KH; kh++)
            for (int kw = 0; kw < KW; kw++) {
                int ih = i + kh - ph, iw = j + kw - pw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                int ch = (o / og) * cg + c;
                s += (double)x[((b * C + ch) * H + ih) * W + iw] *
                     w[((o * cg + c) * KH + kh) * KW + kw];
            }
    return s;
}

/* Rows wider than a vector (21 pixels: a whole and a partial block of lanes), padding on
 * both sides, groups, output channels that do not fill a register block: batch 1 (the
 * compiled one-sample paths), then 2 and 1 again on the same executor, against direct sums. */
BACKEND_TEST(conv_compiled_one_sample_wide_rows) {
    enum { C = 2, H = 4, W = 21, B = 2 };
    static const struct {
        int O, G, KH, KW, ph, pw;
    } shapes[2] = {{6, 1, 3, 3, 1, 1}, {4, 2, 1, 5, 0, 2}};
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", (otc_shape){4, {OTC_BATCH, C, H, W}});
    otc_rng r;
    otc_rng_seed(&r, 5);
    float xs[B * C * H * W], wv[2][6 * 2 * 3 * 5], bv[2][6];
    fill(&r, xs, B * C * H * W, 1);
    otc_id y[2];
    for (int q = 0; q < 2; q++) {
        int O = shapes[q].O, KH = shapes[q].KH, KW = shapes[q].KW;
        fill(&r, wv[q], (size_t)(O * (C / shapes[q].G) * KH * KW), 1);
        fill(&r, bv[q], (size_t)O, 1);
        otc_id w =
            otc_param(g, q ? "w2" : "w1", (otc_shape){4, {O, C / shapes[q].G, KH, KW}}, wv[q]);
        otc_id b = otc_param(g, q ? "b2" : "b1", otc_shape_1d(O), bv[q]);
        y[q] = otc_conv2d(g, q ? "conv2" : "conv1", x, w, b,
                          &(otc_conv2d_params){
                              .pad_h = shapes[q].ph, .pad_w = shapes[q].pw, .groups = shapes[q].G});
        REQUIRE(y[q] >= 0);
        otc_graph_mark_output(g, y[q]);
    }
    otc_executor *ex = bk_new(k, g, &(bk_options){.inference = true, .loss = -1});
    REQUIRE_EX(ex);
    const int batches[3] = {1, B, 1};
    for (int t = 0; t < 3; t++) {
        REQUIRE(otc_exec_set_input(ex, x, xs, batches[t]) == OTC_OK);
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        for (int q = 0; q < 2; q++) {
            const float *v;
            REQUIRE(otc_exec_value(ex, y[q], &v, NULL) == OTC_OK);
            int O = shapes[q].O, n = 0;
            for (int b = 0; b < batches[t]; b++)
                for (int o = 0; o < O; o++)
                    for (int i = 0; i < H; i++)
                        for (int j = 0; j < W; j++, n++) {
                            double want =
                                direct_conv(xs, wv[q], bv[q], C, H, W, O, shapes[q].G, shapes[q].KH,
                                            shapes[q].KW, shapes[q].ph, shapes[q].pw, b, o, i, j);
                            CHECK_NEAR(v[n], want, TOL_VALUE * (1 + fabs(want)));
                        }
        }
    }
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* ---- the trained CNN shipped: emitted C built for aarch64, run under qemu ---- */

#define SKIP_CODE   77
#define FASHION_DIR "/usr/share/datasets/fashion-mnist"

enum { TEST_IMAGES = 300, TRAIN_IMAGES = 3000, TRAIN_STEPS = 150, TRAIN_BATCH = 32 };

static bool have(const char *tool) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s > /dev/null 2>&1", tool);
    return system(cmd) == 0;
}

static int argmax10(const float *v) {
    int best = 0;
    for (int k = 1; k < 10; k++)
        if (v[k] > v[best]) best = k;
    return best;
}

/* The driver: reads TEST_IMAGES images from argv[1], prints each one's class (one call per
 * image at batch 1, then all of them in one call: both must agree). */
static const char DRIVER[] =
    "#include <stdio.h>\n#include \"cnn.h\"\n"
    "#if CNN_IN_FLOATS != 784 || CNN_OUT_FLOATS != 10\n#error unexpected io\n#endif\n"
    "#define N 300\n"
    "static float img[N * 784], out[N * 10];\n"
    "static float ws[CNN_WORKSPACE_BYTES(N) / sizeof(float) + 1];\n"
    "static int argmax(const float *v) {\n"
    "    int b = 0;\n    for (int k = 1; k < 10; k++) if (v[k] > v[b]) b = k;\n    return b;\n}\n"
    "int main(int argc, char **argv) {\n"
    "    FILE *f = argc > 1 ? fopen(argv[1], \"rb\") : NULL;\n"
    "    if (!f || fread(img, sizeof(float), N * 784, f) != N * 784) return 3;\n"
    "    fclose(f);\n"
    "    int one[N];\n"
    "    for (int i = 0; i < N; i++) {\n"
    "        if (cnn_forward(img + i * 784, out, 1, ws)) return 4;\n"
    "        one[i] = argmax(out);\n    }\n"
    "    if (cnn_forward(img, out, N, ws)) return 4;\n"
    "    for (int i = 0; i < N; i++) {\n"
    "        if (argmax(out + i * 10) != one[i]) return 5;\n"
    "        printf(\"%d\\n\", one[i]);\n    }\n"
    "    return 0;\n}\n";

TEST(conv_emitc_aarch64_qemu) {
    if (!have("aarch64-linux-gnu-gcc") || !have("qemu-aarch64")) {
        printf("SKIP: aarch64-linux-gnu-gcc or qemu-aarch64 is not installed "
               "(scripts/install-deps.sh installs them)\n");
        exit(SKIP_CODE);
    }
    otc_dataset *train = NULL, *test = NULL;
    otc_idx_options io = {.max_items = TRAIN_IMAGES};
    if (otc_idx_load_dir(FASHION_DIR, "train", &io, &train, NULL)) {
        printf("SKIP: no Fashion-MNIST in %s (%s)\n", FASHION_DIR, otc_last_error());
        exit(SKIP_CODE);
    }
    io.max_items = TEST_IMAGES;
    REQUIRE(otc_idx_load_dir(FASHION_DIR, "t10k", &io, &test, NULL) == OTC_OK);
    REQUIRE(test->rows == TEST_IMAGES && test->n_features == 784);
    /* A small LeNet-style CNN, trained by the interpreter on the first 3,000 images. */
    otc_rng rng;
    otc_rng_seed(&rng, 3);
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "image", (otc_shape){4, {OTC_BATCH, 1, 28, 28}});
    otc_pool2d_params pool = {.kernel_h = 2, .kernel_w = 2};
    otc_id h =
        otc_conv2d_layer(g, x, 4, 5, &(otc_conv2d_params){.pad_h = 2, .pad_w = 2}, &rng, "conv1");
    h = otc_maxpool2d(g, "pool1", otc_activation(g, OTC_OP_RELU, h, 0), &pool);
    h = otc_conv2d_layer(g, h, 8, 5, NULL, &rng, "conv2");
    h = otc_avgpool2d(g, "pool2", otc_activation(g, OTC_OP_RELU, h, 0), &pool);
    otc_id logits = otc_linear(g, otc_flatten(g, h), 10, &rng, "fc");
    REQUIRE(logits >= 0);
    otc_graph_mark_output(g, logits);
    int model_size = otc_graph_size(g);
    otc_id lab = otc_input(g, "label", otc_shape_2d(OTC_BATCH, 1));
    otc_id loss = otc_softmax_ce(g, logits, lab);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_ADAM);
    cfg.lr = 3e-3f;
    otc_optimizer *opt = otc_optimizer_new(&cfg);
    REQUIRE(ex && opt);
    for (int s = 0; s < TRAIN_STEPS; s++) {
        int from = (s * TRAIN_BATCH) % (TRAIN_IMAGES - TRAIN_BATCH);
        float lv;
        REQUIRE(otc_exec_set_input(ex, x, train->x + (size_t)from * 784, TRAIN_BATCH) == OTC_OK);
        REQUIRE(otc_exec_set_input(ex, lab, train->y + from, TRAIN_BATCH) == OTC_OK);
        REQUIRE(otc_exec_train_step(ex, loss, opt, &lv) == OTC_OK);
    }
    otc_optimizer_free(opt);
    otc_exec_free(ex);
    REQUIRE(otc_graph_truncate(g, model_size) == OTC_OK); /* the model shipped: no loss */
    /* The interpreter's classes for the test images: a trained model (better than 60%). */
    ex = otc_interpreter_new(g, &(otc_exec_options){.inference = true});
    REQUIRE(ex);
    REQUIRE(otc_exec_set_input(ex, x, test->x, TEST_IMAGES) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    const float *lv;
    REQUIRE(otc_exec_value(ex, logits, &lv, NULL) == OTC_OK);
    int want[TEST_IMAGES], right = 0;
    for (int i = 0; i < TEST_IMAGES; i++) {
        want[i] = argmax10(lv + i * 10);
        right += want[i] == (int)test->y[i];
    }
    CHECK_MSG(right > TEST_IMAGES * 6 / 10, "only %d of %d right: not trained", right, TEST_IMAGES);
    /* Emitted C (weights compiled in) + the driver, cross-built and run under qemu. */
    char dir[] = "/tmp/otc_conv_a64_XXXXXX", cmd[2048], path[256];
    REQUIRE(mkdtemp(dir));
    otc_emit_c_options eo = otc_emit_c_defaults();
    eo.name = "cnn";
    REQUIRE(otc_emit_c_files(g, &eo, dir) == OTC_OK);
    snprintf(path, sizeof path, "%s/driver.c", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs(DRIVER, f);
    REQUIRE(fclose(f) == 0);
    snprintf(path, sizeof path, "%s/images.bin", dir);
    f = fopen(path, "wb");
    REQUIRE(f);
    REQUIRE(fwrite(test->x, sizeof(float), (size_t)TEST_IMAGES * 784, f) ==
            (size_t)TEST_IMAGES * 784);
    REQUIRE(fclose(f) == 0);
    snprintf(cmd, sizeof cmd,
             "aarch64-linux-gnu-gcc -std=c99 -O2 -Wall -Wextra -Werror -pedantic -I%s -o "
             "%s/driver %s/driver.c %s/cnn.c -lm && qemu-aarch64 -L /usr/aarch64-linux-gnu "
             "%s/driver %s/images.bin > %s/classes.txt",
             dir, dir, dir, dir, dir, dir, dir);
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
    snprintf(path, sizeof path, "%s/classes.txt", dir);
    f = fopen(path, "r");
    REQUIRE(f);
    int same = 0, n = 0, c;
    while (n < TEST_IMAGES && fscanf(f, "%d", &c) == 1) {
        CHECK_MSG(c == want[n], "image %d: aarch64 says class %d, the interpreter %d", n, c,
                  want[n]);
        same += c == want[n];
        n++;
    }
    fclose(f);
    CHECK_MSG(n == TEST_IMAGES, "%d classes read", n);
    printf("aarch64 (qemu): %d of %d classes as the interpreter's; %d of %d right\n", same,
           TEST_IMAGES, right, TEST_IMAGES);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    otc_exec_free(ex);
    otc_dataset_free(train);
    otc_dataset_free(test);
    otc_graph_free(g);
}
