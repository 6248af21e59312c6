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
    enum { CASES = 12 };
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
