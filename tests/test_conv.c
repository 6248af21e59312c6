/* Conv2d, MaxPool2d and AvgPool2d in the interpreter: forward values computed by hand on tiny
 * cases, gradients by central finite differences over strides, paddings, dilations and
 * groups, a direct double-precision loop for a convolution large enough to be done in
 * blocks, shape errors naming the node, and a model file round trip of the attributes. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "otc/otc.h"
#include "otc/plan.h"
#include "otm_ref.h"

#define TOL 1e-5

static const float *eval(otc_graph *g, otc_id id, otc_executor **exp) {
    if (!*exp) *exp = otc_interpreter_new(g, NULL);
    if (!*exp) {
        fprintf(stderr, "interpreter: %s\n", otc_last_error());
        return NULL;
    }
    const float *v = NULL;
    if (otc_exec_forward(*exp) != OTC_OK || otc_exec_value(*exp, id, &v, NULL) != OTC_OK) {
        fprintf(stderr, "forward: %s\n", otc_last_error());
        return NULL;
    }
    return v;
}

static otc_id param4(otc_graph *g, const char *name, int a, int b, int c, int d, const float *v) {
    otc_shape s = {4, {a, b, c, d}};
    return otc_param(g, name, s, v);
}

static const float one_to_nine[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const float one_to_16[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void check_forward(otc_graph *g, otc_id y, const float *want, int n) {
    REQUIRE(y >= 0);
    otc_executor *ex = NULL;
    const float *v = eval(g, y, &ex);
    if (v)
        for (int i = 0; i < n; i++) CHECK_NEAR(v[i], want[i], TOL);
    else
        CHECK(v);
    otc_exec_free(ex);
}

/* x = 1..9 in 3x3, w = [[1,0],[0,-1]], b = 0.5: every output is x[i][j] - x[i+1][j+1] + 0.5
 * = -4 + 0.5. */
TEST(conv_forward_plain) {
    otc_graph *g = otc_graph_new();
    otc_id x = param4(g, "x", 1, 1, 3, 3, one_to_nine);
    otc_id w = param4(g, "w", 1, 1, 2, 2, (const float[]){1, 0, 0, -1});
    otc_id b = otc_param(g, "b", otc_shape_1d(1), (const float[]){0.5f});
    otc_id y = otc_conv2d(g, "c", x, w, b, NULL);
    CHECK(otc_graph_node(g, y)->shape.dim[2] == 2 && otc_graph_node(g, y)->shape.dim[3] == 2);
    check_forward(g, y, (const float[]){-3.5f, -3.5f, -3.5f, -3.5f}, 4);
    otc_graph_free(g);
}

/* Ones 2x2, padding 1, stride 2 over 1..9: the padded 5x5's windows at (0,0), (0,2), (2,0),
 * (2,2) hold {1}, {2,3}, {4,7}, {5,6,8,9}. */
TEST(conv_forward_pad_stride) {
    otc_graph *g = otc_graph_new();
    otc_id x = param4(g, "x", 1, 1, 3, 3, one_to_nine);
    otc_id w = param4(g, "w", 1, 1, 2, 2, (const float[]){1, 1, 1, 1});
    otc_conv2d_params p = {.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1};
    check_forward(g, otc_conv2d(g, "c", x, w, -1, &p), (const float[]){1, 5, 11, 28}, 4);
    otc_graph_free(g);
}

/* Ones 2x2 at dilation 2 span 3x3: the four corners 1 + 3 + 7 + 9. */
TEST(conv_forward_dilation) {
    otc_graph *g = otc_graph_new();
    otc_id x = param4(g, "x", 1, 1, 3, 3, one_to_nine);
    otc_id w = param4(g, "w", 1, 1, 2, 2, (const float[]){1, 1, 1, 1});
    otc_conv2d_params p = {.dilation_h = 2, .dilation_w = 2};
    check_forward(g, otc_conv2d(g, "c", x, w, -1, &p), (const float[]){20}, 1);
    otc_graph_free(g);
}

/* Channel 0 all 1, channel 1 all 2 (2x2 each), 1x1 kernels. Two groups: 3*1 and 5*2; one
 * group with w = [[1,1],[1,-1]]: 1+2 and 1-2. */
TEST(conv_forward_groups) {
    const float xv[8] = {1, 1, 1, 1, 2, 2, 2, 2};
    otc_graph *g = otc_graph_new();
    otc_id x = param4(g, "x", 1, 2, 2, 2, xv);
    otc_id w2 = param4(g, "w2", 2, 1, 1, 1, (const float[]){3, 5});
    otc_conv2d_params p = {.groups = 2};
    check_forward(g, otc_conv2d(g, "grouped", x, w2, -1, &p),
                  (const float[]){3, 3, 3, 3, 10, 10, 10, 10}, 8);
    otc_id w1 = param4(g, "w1", 2, 2, 1, 1, (const float[]){1, 1, 1, -1});
    check_forward(g, otc_conv2d(g, "full", x, w1, -1, NULL),
                  (const float[]){3, 3, 3, 3, -1, -1, -1, -1}, 8);
    otc_graph_free(g);
}

/* 1..16 in 4x4, 2x2 windows at stride 2: max {6,8,14,16}, mean {3.5,5.5,11.5,13.5}. With
 * padding 1 (3x3 outputs): max 1, 3, 4 / 9, 11, 12 / 13, 15, 16; the mean divides by 4
 * whatever the padding holds: (0,0) 1/4, (0,1) (2+3)/4, (1,1) (6+7+10+11)/4. */
TEST(pool_forward) {
    otc_graph *g = otc_graph_new();
    otc_id x = param4(g, "x", 1, 1, 4, 4, one_to_16);
    otc_pool2d_params p = {.kernel_h = 2, .kernel_w = 2};
    check_forward(g, otc_maxpool2d(g, "m", x, &p), (const float[]){6, 8, 14, 16}, 4);
    check_forward(g, otc_avgpool2d(g, "a", x, &p), (const float[]){3.5f, 5.5f, 11.5f, 13.5f}, 4);
    otc_pool2d_params pp = {
        .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1};
    check_forward(g, otc_maxpool2d(g, "mp", x, &pp),
                  (const float[]){1, 3, 4, 9, 11, 12, 13, 15, 16}, 9);
    otc_id a = otc_avgpool2d(g, "ap", x, &pp);
    otc_executor *ex = NULL;
    const float *v = eval(g, a, &ex);
    REQUIRE(v);
    CHECK_NEAR(v[0], 0.25, TOL);
    CHECK_NEAR(v[1], 1.25, TOL);
    CHECK_NEAR(v[4], 8.5, TOL);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Equal values: the whole window's gradient goes to its first element. */
TEST(pool_max_ties_first) {
    otc_graph *g = otc_graph_new();
    const float xv[4] = {2, 2, 2, 2};
    otc_id x = param4(g, "x", 1, 1, 2, 2, xv);
    otc_id m = otc_maxpool2d(g, "m", x, &(otc_pool2d_params){.kernel_h = 2, .kernel_w = 2});
    otc_id loss = otc_sum(g, m);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    const float *gx;
    REQUIRE(otc_exec_grad(ex, x, &gx) == OTC_OK);
    CHECK(gx[0] == 1 && gx[1] == 0 && gx[2] == 0 && gx[3] == 0);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* ---- gradients by central differences ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

static void fill(otc_graph *g, otc_id p) {
    otc_tensor *t = otc_graph_param(g, p);
    for (size_t i = 0; i < t->size; i++) t->data[i] = frand();
}

static double loss_value(otc_executor *ex, otc_id loss) {
    const float *v;
    if (otc_exec_forward(ex) != OTC_OK || otc_exec_value(ex, loss, &v, NULL) != OTC_OK) return NAN;
    return v[0];
}

/* Every analytic gradient entry of each parameter against (L(p+e) - L(p-e)) / 2e. */
static void gradcheck(otc_graph *g, otc_id loss, const otc_id *params, int n, double eps,
                      double tol) {
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    for (int k = 0; k < n; k++) {
        const float *gp;
        REQUIRE(otc_exec_grad(ex, params[k], &gp) == OTC_OK);
        otc_tensor *t = otc_graph_param(g, params[k]);
        float *analytic = malloc(t->size * sizeof *analytic);
        REQUIRE(analytic);
        memcpy(analytic, gp, t->size * sizeof *analytic);
        for (size_t i = 0; i < t->size; i++) {
            float keep = t->data[i];
            t->data[i] = keep + (float)eps;
            double up = loss_value(ex, loss);
            t->data[i] = keep - (float)eps;
            double down = loss_value(ex, loss);
            t->data[i] = keep;
            double fd = (up - down) / (2 * eps);
            CHECK_MSG(fabs(fd - analytic[i]) <= tol * (1 + fabs(fd)),
                      "param %d entry %zu: analytic %.6g, finite difference %.6g", k, i,
                      (double)analytic[i], fd);
        }
        free(analytic);
    }
    otc_exec_free(ex);
}

typedef struct {
    int B, C, H, W, O, KH, KW;
    otc_conv2d_params p;
    bool bias;
} conv_case;

/* loss = sum(conv(x, w, b) * R): linear in each of x, w, b, so the central difference is
 * exact up to rounding, and a large step keeps that rounding small. */
static void conv_gradcheck(const conv_case *c) {
    otc_graph *g = otc_graph_new();
    int groups = c->p.groups ? c->p.groups : 1;
    otc_id x = param4(g, "x", c->B, c->C, c->H, c->W, NULL);
    otc_id w = param4(g, "w", c->O, c->C / groups, c->KH, c->KW, NULL);
    otc_id b = c->bias ? otc_param(g, "b", otc_shape_1d(c->O), NULL) : -1;
    otc_id y = otc_conv2d(g, "conv", x, w, b, &c->p);
    REQUIRE(y >= 0);
    otc_shape ys = otc_graph_node(g, y)->shape;
    otc_id r = otc_param(g, "R", ys, NULL);
    otc_id loss = otc_sum(g, otc_mul(g, y, r));
    otc_id ps[3] = {x, w, b};
    for (int i = 0; i < 3; i++)
        if (ps[i] >= 0) fill(g, ps[i]);
    fill(g, r);
    gradcheck(g, loss, ps, c->bias ? 3 : 2, 0.25, 2e-3);
    otc_graph_free(g);
}

TEST(conv_grad_plain) {
    conv_case c = {2, 3, 5, 5, 4, 3, 3, {.pad_h = 1, .pad_w = 1}, true};
    conv_gradcheck(&c);
}

TEST(conv_grad_stride_pad_asymmetric) {
    conv_case c = {1, 2, 7, 6, 2, 3, 2, {.stride_h = 2, .pad_w = 1}, true};
    conv_gradcheck(&c);
}

TEST(conv_grad_groups_stride) {
    conv_case c = {2,   4, 6, 6, 6, 2, 2, {.stride_h = 2, .stride_w = 2, .pad_h = 1, .groups = 2},
                   true};
    conv_gradcheck(&c);
}

TEST(conv_grad_dilation) {
    conv_case c = {
        1,
        1,
        8,
        8,
        3,
        3,
        3,
        {.stride_h = 3, .stride_w = 2, .pad_h = 2, .pad_w = 2, .dilation_h = 2, .dilation_w = 3},
        false};
    conv_gradcheck(&c);
}

TEST(conv_grad_depthwise) {
    conv_case c = {2, 4, 5, 4, 4, 3, 3, {.pad_h = 1, .pad_w = 1, .groups = 4}, true};
    conv_gradcheck(&c);
}

TEST(conv_grad_pointwise_groups) {
    conv_case c = {2, 6, 4, 5, 6, 1, 1, {.groups = 3}, false};
    conv_gradcheck(&c);
}

/* Pools: loss = sum(pool(x) * R) with distinct inputs (no ties within eps of each other for
 * the max), so the max's choice does not change under the step. */
static void pool_gradcheck(bool max, otc_pool2d_params p, int B, int C, int H, int W) {
    otc_graph *g = otc_graph_new();
    otc_id x = param4(g, "x", B, C, H, W, NULL);
    otc_tensor *t = otc_graph_param(g, x);
    /* a shuffled ramp: distinct values 0.1 apart */
    for (size_t i = 0; i < t->size; i++) t->data[i] = (float)((i * 7919) % t->size) * 0.1f;
    otc_id y = max ? otc_maxpool2d(g, "pool", x, &p) : otc_avgpool2d(g, "pool", x, &p);
    REQUIRE(y >= 0);
    otc_id r = otc_param(g, "R", otc_graph_node(g, y)->shape, NULL);
    fill(g, r);
    otc_id loss = otc_sum(g, otc_mul(g, y, r));
    gradcheck(g, loss, &x, 1, 0.01, 2e-3);
    otc_graph_free(g);
}

TEST(pool_grad_max) {
    pool_gradcheck(true, (otc_pool2d_params){.kernel_h = 2, .kernel_w = 2}, 2, 3, 6, 6);
    pool_gradcheck(true, (otc_pool2d_params){3, 2, 2, 1, 1, 1}, 1, 2, 7, 5);
}

TEST(pool_grad_avg) {
    pool_gradcheck(false, (otc_pool2d_params){.kernel_h = 2, .kernel_w = 2}, 2, 3, 6, 6);
    pool_gradcheck(false, (otc_pool2d_params){3, 2, 2, 1, 1, 1}, 1, 2, 7, 5);
}

/* Forward and gradients of loss = sum(conv(x, w) * R) (stride 1, no bias) against direct
 * double loops. */
static void direct_check(int B, int C, int H, int W, int O, int K, int pad) {
    int OH = H + 2 * pad - K + 1, OW = W + 2 * pad - K + 1;
    otc_graph *g = otc_graph_new();
    otc_id x = param4(g, "x", B, C, H, W, NULL), w = param4(g, "w", O, C, K, K, NULL);
    fill(g, x);
    fill(g, w);
    otc_id y = otc_conv2d(g, "big", x, w, -1, &(otc_conv2d_params){.pad_h = pad, .pad_w = pad});
    REQUIRE(y >= 0);
    otc_id r = otc_param(g, "R", otc_graph_node(g, y)->shape, NULL);
    fill(g, r);
    otc_id loss = otc_sum(g, otc_mul(g, y, r));
    const float *xv = otc_graph_param(g, x)->data, *wv = otc_graph_param(g, w)->data;
    const float *rv = otc_graph_param(g, r)->data;
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    const float *yv, *gx, *gw;
    REQUIRE(otc_exec_value(ex, y, &yv, NULL) == OTC_OK);
    REQUIRE(otc_exec_grad(ex, x, &gx) == OTC_OK);
    REQUIRE(otc_exec_grad(ex, w, &gw) == OTC_OK);
    size_t nx = (size_t)B * C * H * W, nw = (size_t)O * C * K * K;
    double *rgx = calloc(nx, sizeof *rgx), *rgw = calloc(nw, sizeof *rgw);
    REQUIRE(rgx && rgw);
    double worst_y = 0;
    for (int b = 0; b < B; b++)
        for (int o = 0; o < O; o++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    size_t yi = (((size_t)b * O + o) * OH + oh) * OW + ow;
                    double s = 0, gr = rv[yi];
                    for (int c = 0; c < C; c++)
                        for (int kh = 0; kh < K; kh++)
                            for (int kw = 0; kw < K; kw++) {
                                int ih = oh + kh - pad, iw = ow + kw - pad;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                size_t xi = (((size_t)b * C + c) * H + ih) * W + iw;
                                size_t wi = (((size_t)o * C + c) * K + kh) * K + kw;
                                s += (double)xv[xi] * wv[wi];
                                rgx[xi] += gr * wv[wi];
                                rgw[wi] += gr * xv[xi];
                            }
                    double d = fabs(s - yv[yi]);
                    if (d > worst_y) worst_y = d;
                }
    CHECK_MSG(worst_y < 1e-3, "forward differs by %g", worst_y);
    double worst_x = 0, worst_w = 0, scale_w = 0;
    for (size_t i = 0; i < nx; i++)
        if (fabs(rgx[i] - gx[i]) > worst_x) worst_x = fabs(rgx[i] - gx[i]);
    for (size_t i = 0; i < nw; i++) {
        if (fabs(rgw[i] - gw[i]) > worst_w) worst_w = fabs(rgw[i] - gw[i]);
        if (fabs(rgw[i]) > scale_w) scale_w = fabs(rgw[i]);
    }
    CHECK_MSG(worst_x < 1e-3, "input gradient differs by %g", worst_x);
    /* a weight's gradient sums B*OH*OW products: compare relative to the largest */
    CHECK_MSG(worst_w < 1e-4 * (1 + scale_w), "weight gradient differs by %g (largest %g)", worst_w,
              scale_w);
    free(rgx);
    free(rgw);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* A convolution whose im2col does not fit the 2^22-float scratch even for one sample (5184
 * rows x 800 columns per output row): done a block of output rows at a time. */
TEST(conv_row_blocks_match_direct) {
    direct_check(1, 64, 10, 808, 2, 9, 0);
}

/* Samples side by side in blocks of 3 ((72 + 8) x 1024 floats each, 2^17 a block), the last
 * block holding the seventh alone. */
TEST(conv_sample_blocks_match_direct) {
    direct_check(7, 8, 32, 32, 8, 3, 1);
}

/* A sample over the block target but within the scratch ((144 + 16) x 4096 floats): one
 * sample at a time, all its rows. */
TEST(conv_single_samples_match_direct) {
    direct_check(3, 16, 64, 64, 16, 3, 1);
}

/* ---- shapes and errors ---- */

static void expect_error(otc_id id, const char *a, const char *b) {
    CHECK(id < 0);
    const char *e = otc_last_error();
    CHECK_MSG(strstr(e, a) && (!b || strstr(e, b)), "message: %s", e);
}

TEST(conv_shape_errors_name_the_node) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "img", (otc_shape){4, {OTC_BATCH, 3, 5, 5}});
    otc_id w = param4(g, "w", 4, 3, 7, 7, NULL);
    expect_error(otc_conv2d(g, "c1", x, w, -1, NULL), "conv2d 'c1'", "larger than input");
    otc_id w2 = param4(g, "w2", 4, 3, 3, 3, NULL);
    expect_error(otc_conv2d(g, "c2", x, w2, -1, &(otc_conv2d_params){.groups = 2}), "conv2d 'c2'",
                 "groups do not divide");
    otc_id w3 = param4(g, "w3", 4, 2, 3, 3, NULL);
    expect_error(otc_conv2d(g, "c3", x, w3, -1, NULL), "conv2d 'c3'", "channels");
    otc_id flat = otc_input(g, "flat", otc_shape_2d(OTC_BATCH, 75));
    expect_error(otc_conv2d(g, "c4", flat, w2, -1, NULL), "conv2d 'c4'", "[B,C,H,W]");
    otc_id b5 = otc_param(g, "b5", otc_shape_1d(5), NULL);
    expect_error(otc_conv2d(g, "c5", x, w2, b5, NULL), "conv2d 'c5'", "bias");
    expect_error(otc_conv2d(g, "c6", x, w2, -1, &(otc_conv2d_params){.stride_h = -1}),
                 "conv2d 'c6'", "stride_h");
    expect_error(otc_maxpool2d(g, "p1", x, &(otc_pool2d_params){.kernel_h = 6, .kernel_w = 2}),
                 "maxpool2d 'p1'", "larger than input");
    expect_error(
        otc_avgpool2d(g, "p2", x, &(otc_pool2d_params){.kernel_h = 2, .kernel_w = 2, .pad_h = 2}),
        "avgpool2d 'p2'", "half the kernel");
    expect_error(otc_avgpool2d(g, "p3", x, NULL), "avgpool2d 'p3'", "kernel_h");
    /* a good one: [B,4,3,3], stride 2 with padding 1 -> 3x3 */
    otc_id ok =
        otc_conv2d(g, "ok", x, w2, -1,
                   &(otc_conv2d_params){.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1});
    REQUIRE(ok >= 0);
    otc_shape s = otc_graph_node(g, ok)->shape;
    CHECK(s.ndim == 4 && s.dim[0] == OTC_BATCH && s.dim[1] == 4 && s.dim[2] == 3 && s.dim[3] == 3);
    otc_graph_free(g);
}

/* The attributes survive a save and load, and the loaded model computes the same values. */
TEST(conv_model_round_trip) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "img", (otc_shape){4, {OTC_BATCH, 2, 6, 5}});
    otc_id w = param4(g, "w", 4, 1, 3, 2, NULL);
    otc_id b = otc_param(g, "b", otc_shape_1d(4), NULL);
    fill(g, w);
    fill(g, b);
    otc_conv2d_params p = {2, 1, 1, 0, 1, 2, 2};
    otc_id c = otc_conv2d(g, "conv", x, w, b, &p);
    otc_id m = otc_maxpool2d(g, "max", c, &(otc_pool2d_params){2, 2, 1, 1, 1, 0});
    otc_id a = otc_avgpool2d(g, "avg", m, &(otc_pool2d_params){.kernel_h = 2, .kernel_w = 1});
    REQUIRE(a >= 0);
    otc_graph_mark_output(g, a);
    char path[256];
    snprintf(path, sizeof path, "%s/conv_round_trip.otm", OTC_BINARY_DIR);
    REQUIRE(otc_model_save(g, path) == OTC_OK);
    otc_graph *h = NULL;
    REQUIRE(otc_model_load(path, &h) == OTC_OK);
    for (otc_id id = c; id <= a; id++) {
        const otc_window *u = &otc_graph_node(g, id)->win, *v = &otc_graph_node(h, id)->win;
        CHECK(memcmp(u, v, sizeof *u) == 0);
    }
    CHECK(otc_graph_node(h, c)->win.kernel_h == 3 && otc_graph_node(h, c)->win.dilation_w == 2);
    float in[2 * 2 * 6 * 5];
    for (int i = 0; i < 120; i++) in[i] = frand();
    otc_executor *e1 = otc_interpreter_new(g, NULL), *e2 = otc_interpreter_new(h, NULL);
    REQUIRE(e1 && e2);
    REQUIRE(otc_exec_set_input(e1, x, in, 2) == OTC_OK);
    REQUIRE(otc_exec_set_input(e2, x, in, 2) == OTC_OK);
    const float *v1, *v2;
    otc_shape s1;
    REQUIRE(otc_exec_forward(e1) == OTC_OK && otc_exec_value(e1, a, &v1, &s1) == OTC_OK);
    REQUIRE(otc_exec_forward(e2) == OTC_OK && otc_exec_value(e2, a, &v2, NULL) == OTC_OK);
    for (size_t i = 0; i < otc_shape_size(s1); i++) CHECK(v1[i] == v2[i]);
    otc_exec_free(e1);
    otc_exec_free(e2);
    otc_graph_free(h);
    otc_graph_free(g);
    remove(path);
}

/* A hand-written model whose conv/pool node carries `fields`: loads or fails with `want`. */
static void load_hostile(const char *fields, const char *want) {
    char json[2048];
    snprintf(json, sizeof json,
             "{\"format\":\"otm\",\"version\":1,\"nodes\":["
             "{\"id\":0,\"op\":\"input\",\"name\":\"x\",\"shape\":[-1,1,4,4],\"inputs\":[]},"
             "{\"id\":1,\"op\":\"parameter\",\"name\":\"w\",\"shape\":[2,1,3,3],\"inputs\":[],"
             "\"trainable\":true,\"offset\":0},"
             "{\"id\":2,\"op\":\"conv2d\",\"name\":\"c\",\"shape\":[-1,2,2,2],\"inputs\":[0,1]%s}"
             "],\"outputs\":[2]}",
             fields);
    float w[18] = {0};
    size_t len;
    unsigned char *buf = otm_ref_pack(json, strlen(json), w, 18, &len);
    REQUIRE(buf);
    otc_graph *g = NULL;
    otc_status st = otc_model_load_buffer(buf, len, "hostile.otm", &g);
    if (!want) {
        CHECK_MSG(st == OTC_OK, "%s", otc_last_error());
    } else {
        CHECK(st == OTC_ERR_FORMAT);
        CHECK_MSG(strstr(otc_last_error(), want), "wanted '%s' in: %s", want, otc_last_error());
    }
    otc_graph_free(g);
    free(buf);
}

TEST(conv_model_hostile_attributes) {
    const char *good = ",\"kernel\":[3,3],\"stride\":[1,1],\"padding\":[0,0],\"dilation\":[1,1],"
                       "\"groups\":1";
    load_hostile(good, NULL);
    load_hostile("", "kernel");
    load_hostile(",\"kernel\":[3,3],\"stride\":[1,1],\"padding\":[0,0],\"dilation\":[1,1]",
                 "groups");
    load_hostile(",\"kernel\":[3],\"stride\":[1,1],\"padding\":[0,0],\"dilation\":[1,1],"
                 "\"groups\":1",
                 "expected [h, w]");
    load_hostile(",\"kernel\":[3,3],\"stride\":[0,1],\"padding\":[0,0],\"dilation\":[1,1],"
                 "\"groups\":1",
                 "stride_h");
    load_hostile(",\"kernel\":[3,3],\"stride\":[1,1],\"padding\":[-1,0],\"dilation\":[1,1],"
                 "\"groups\":1",
                 "padding");
    load_hostile(",\"kernel\":[3,3],\"stride\":[1,1],\"padding\":[0,0],\"dilation\":[1,1],"
                 "\"groups\":99999999999",
                 "groups");
    load_hostile(",\"kernel\":[2,2],\"stride\":[1,1],\"padding\":[0,0],\"dilation\":[1,1],"
                 "\"groups\":1",
                 "does not match weight");
    load_hostile(",\"kernel\":[3,3],\"stride\":[1,1],\"padding\":[0,0],\"dilation\":[9,9],"
                 "\"groups\":1",
                 "larger than input");
    load_hostile(",\"kernel\":[3,3],\"stride\":[1,1],\"padding\":[0,0],\"dilation\":[1,1],"
                 "\"groups\":2",
                 "groups do not divide");
    /* a shape field that lies about the output */
    load_hostile(",\"kernel\":[3,3],\"stride\":[1,1],\"padding\":[1,1],\"dilation\":[1,1],"
                 "\"groups\":1",
                 "field \"shape\"");
}

/* ---- against PyTorch (tests/conv_torch_ref.py, run by the ctest conv_torch) ---- */

/* n numbers from f into a fresh array (NULL on a short file). */
static float *read_floats(FILE *f, size_t n) {
    float *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        if (fscanf(f, "%f", &v[i]) != 1) {
            free(v);
            return NULL;
        }
    return v;
}

static void check_close(const char *what, const float *got, const float *want, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]) / (1 + fabs(want[i]));
        if (d > worst) worst = d;
    }
    CHECK_MSG(worst < 1e-5, "%s: worst relative difference %g from PyTorch", what, worst);
}

/* Forward and gradients of sum(op(x) * R) against PyTorch's, case by case. */
TEST(conv_torch_file) {
    const char *path = getenv("OTC_TORCH_REF");
    if (!path) {
        printf("OTC_TORCH_REF not set: run through the ctest conv_torch\n");
        return;
    }
    FILE *f = fopen(path, "r");
    REQUIRE(f);
    char op[16];
    int cases = 0;
    while (fscanf(f, "%15s", op) == 1) {
        bool conv = !strcmp(op, "conv");
        int B, C, H, W, O = 0, KH, KW, sh, sw, ph, pw, dh = 1, dw = 1, groups = 1, bias = 0;
        if (conv)
            REQUIRE(fscanf(f, "%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d", &B, &C, &H, &W, &O,
                           &KH, &KW, &sh, &sw, &ph, &pw, &dh, &dw, &groups, &bias) == 15);
        else
            REQUIRE(fscanf(f, "%d %d %d %d %d %d %d %d %d %d", &B, &C, &H, &W, &KH, &KW, &sh, &sw,
                           &ph, &pw) == 10);
        otc_graph *g = otc_graph_new();
        otc_id x = param4(g, "x", B, C, H, W, NULL), w = -1, b = -1, y;
        size_t nx = (size_t)B * C * H * W, nw = 0;
        float *xv = read_floats(f, nx), *wv = NULL, *bv = NULL;
        REQUIRE(xv);
        memcpy(otc_graph_param(g, x)->data, xv, nx * sizeof *xv);
        if (conv) {
            nw = (size_t)O * (C / groups) * KH * KW;
            wv = read_floats(f, nw);
            REQUIRE(wv);
            w = param4(g, "w", O, C / groups, KH, KW, wv);
            if (bias) {
                bv = read_floats(f, (size_t)O);
                REQUIRE(bv);
                b = otc_param(g, "b", otc_shape_1d(O), bv);
            }
            otc_conv2d_params p = {sh, sw, ph, pw, dh, dw, groups};
            y = otc_conv2d(g, "conv", x, w, b, &p);
        } else {
            otc_pool2d_params p = {KH, KW, sh, sw, ph, pw};
            y = !strcmp(op, "maxpool") ? otc_maxpool2d(g, "pool", x, &p)
                                       : otc_avgpool2d(g, "pool", x, &p);
        }
        REQUIRE(y >= 0);
        otc_shape ys = otc_graph_node(g, y)->shape;
        size_t ny = otc_shape_size(ys);
        float *rv = read_floats(f, ny), *want_y = read_floats(f, ny), *want_gx = read_floats(f, nx);
        float *want_gw = conv ? read_floats(f, nw) : NULL;
        float *want_gb = conv && bias ? read_floats(f, (size_t)O) : NULL;
        REQUIRE(rv && want_y && want_gx && (!conv || want_gw) && (!bias || want_gb));
        otc_id r = otc_param(g, "R", ys, rv);
        otc_id loss = otc_sum(g, otc_mul(g, y, r));
        otc_executor *ex = otc_interpreter_new(g, NULL);
        REQUIRE(ex);
        REQUIRE(otc_exec_forward(ex) == OTC_OK && otc_exec_backward(ex, loss) == OTC_OK);
        const float *got;
        char what[64];
        snprintf(what, sizeof what, "%s case %d: y", op, cases);
        REQUIRE(otc_exec_value(ex, y, &got, NULL) == OTC_OK);
        check_close(what, got, want_y, ny);
        snprintf(what, sizeof what, "%s case %d: dx", op, cases);
        REQUIRE(otc_exec_grad(ex, x, &got) == OTC_OK);
        check_close(what, got, want_gx, nx);
        if (conv) {
            snprintf(what, sizeof what, "%s case %d: dw", op, cases);
            REQUIRE(otc_exec_grad(ex, w, &got) == OTC_OK);
            check_close(what, got, want_gw, nw);
        }
        if (bias) {
            snprintf(what, sizeof what, "%s case %d: db", op, cases);
            REQUIRE(otc_exec_grad(ex, b, &got) == OTC_OK);
            check_close(what, got, want_gb, (size_t)O);
        }
        otc_exec_free(ex);
        otc_graph_free(g);
        free(xv);
        free(wv);
        free(bv);
        free(rv);
        free(want_y);
        free(want_gx);
        free(want_gw);
        free(want_gb);
        cases++;
    }
    fclose(f);
    CHECK_MSG(cases == 8, "%d cases in %s, 8 expected", cases, path);
}
