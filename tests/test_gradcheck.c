/* Gradient checks, one per op, on every backend (BACKEND_TEST: the interpreter, the JIT, the
 * emitted C): the analytic gradient from otc_exec_backward against central finite
 * differences of the same backend's float forward, on random inputs. Per-sample values are
 * made differentiable parameters by multiplying a batched identity input into a parameter.
 * Compiled backends read the weights when an executor is made, so each perturbed forward
 * runs on a fresh executor (the JIT's structure cache and the emitted C's one build keep
 * that cheap). */
#include <stdint.h>

#include "backend_support.h"

#define MAX_CHECK  16
#define MAX_INPUTS 8

typedef struct {
    bk *k;
    otc_graph *g;
    otc_rng rng;
    int batch;  /* rows of the per-sample values (gc_rows) */
    otc_id eye; /* Input [B, batch]: the identity, set with `batch` rows */
    float *eye_data;
    int n_inputs; /* constant inputs (labels) */
    otc_id inputs[MAX_INPUTS];
    const float *input_data[MAX_INPUTS];
    int n_check; /* parameters whose gradient is checked */
    otc_id check[MAX_CHECK];
    double h, rtol, atol;
} gc;

static void gc_init(gc *c, bk *k, uint64_t seed, int batch) {
    memset(c, 0, sizeof *c);
    c->k = k;
    c->g = otc_graph_new();
    otc_rng_seed(&c->rng, seed);
    c->batch = batch;
    c->eye = -1;
    c->h = 1e-2;
    c->rtol = 1e-2;
    c->atol = 1e-3;
}

static void gc_free(gc *c) {
    otc_graph_free(c->g);
    free(c->eye_data);
}

static float uniform(gc *c, float lo, float hi) {
    return lo + (hi - lo) * otc_rng_uniform(&c->rng);
}

/* Values with |x| in [lo, hi] and a random sign: away from the kinks of relu, abs, ... */
static void fill_signed(gc *c, float *v, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) {
        float m = uniform(c, lo, hi);
        v[i] = otc_rng_uniform(&c->rng) < 0.5f ? -m : m;
    }
}

static otc_id param_filled(gc *c, otc_shape shape, float lo, float hi, bool signed_away) {
    otc_id p = otc_param(c->g, NULL, shape, NULL);
    if (p < 0) return -1;
    otc_tensor *t = otc_graph_param(c->g, p);
    if (signed_away)
        fill_signed(c, t->data, t->size, lo, hi);
    else
        for (size_t i = 0; i < t->size; i++) t->data[i] = uniform(c, lo, hi);
    return p;
}

/* A checked parameter of `shape`, uniform in [lo, hi]. */
static otc_id gc_param(gc *c, otc_shape shape, float lo, float hi) {
    otc_id p = param_filled(c, shape, lo, hi, false);
    if (p >= 0 && c->n_check < MAX_CHECK) c->check[c->n_check++] = p;
    return p;
}

static otc_id gc_eye(gc *c) {
    if (c->eye < 0) {
        c->eye = otc_input(c->g, "eye", otc_shape_2d(OTC_BATCH, c->batch));
        c->eye_data = calloc((size_t)c->batch * c->batch, sizeof(float));
        for (int i = 0; i < c->batch; i++) c->eye_data[i * c->batch + i] = 1.0f;
    }
    return c->eye;
}

static otc_id eye_matmul(gc *c, otc_id p) {
    return otc_matmul(c->g, gc_eye(c), p);
}

/* Compiled forward code needs a per-sample output (the scalar loss comes from their
 * training code): out when it is per-sample, else the identity input passed through. */
static otc_status mark_sample_output(gc *c, otc_id out) {
    if (!otc_shape_is_batched(otc_graph_node(c->g, out)->shape))
        out = otc_scale(c->g, gc_eye(c), 1.0f);
    return otc_graph_mark_output(c->g, out);
}

/* A per-sample value [B, n] whose rows are a checked parameter [batch, n]. */
static otc_id gc_rows_ex(gc *c, int n, float lo, float hi, bool signed_away) {
    otc_id p = param_filled(c, otc_shape_2d(c->batch, n), lo, hi, signed_away);
    if (p < 0) return -1;
    if (c->n_check < MAX_CHECK) c->check[c->n_check++] = p;
    return eye_matmul(c, p);
}

static otc_id gc_rows(gc *c, int n, float lo, float hi) {
    return gc_rows_ex(c, n, lo, hi, false);
}

static otc_id gc_input(gc *c, const char *name, otc_shape shape, const float *data) {
    otc_id id = otc_input(c->g, name, shape);
    if (id >= 0 && c->n_inputs < MAX_INPUTS) {
        c->inputs[c->n_inputs] = id;
        c->input_data[c->n_inputs++] = data;
    }
    return id;
}

/* loss = sum(out * R) with R a fixed random tensor of out's shape, so every output element
 * carries a distinct weight. */
static otc_id weighted_loss(gc *c, otc_id out) {
    otc_shape s = otc_graph_node(c->g, out)->shape;
    otc_id r;
    if (otc_shape_is_batched(s)) {
        size_t per = otc_shape_size(s);
        otc_id rp = param_filled(c, otc_shape_2d(c->batch, (int)per), -1.0f, 1.0f, false);
        r = eye_matmul(c, rp);
        if (s.ndim != 2) r = otc_reshape(c->g, r, s);
    } else {
        r = param_filled(c, s, -1.0f, 1.0f, false);
    }
    return otc_sum(c->g, otc_mul(c->g, out, r));
}

static bool set_inputs(gc *c, otc_executor *ex) {
    if (c->eye >= 0 && otc_exec_set_input(ex, c->eye, c->eye_data, c->batch) != OTC_OK)
        return false;
    for (int i = 0; i < c->n_inputs; i++)
        if (otc_exec_set_input(ex, c->inputs[i], c->input_data[i], c->batch) != OTC_OK)
            return false;
    return true;
}

/* An executor on the test's backend that will train loss, inputs set (NULL after printing). */
static otc_executor *gc_executor(gc *c, otc_id loss) {
    otc_executor *ex = bk_new(c->k, c->g, &(bk_options){.loss = loss});
    if (!ex) fprintf(stderr, "%s executor: %s\n", c->k->name, otc_last_error());
    if (ex && !set_inputs(c, ex)) {
        fprintf(stderr, "set_input: %s\n", otc_last_error());
        otc_exec_free(ex);
        ex = NULL;
    }
    return ex;
}

/* The loss at the graph's current parameter values, on a fresh executor, as backward sees
 * it: compiled forward code computes outputs, and the JIT hands back the loss after a plain
 * forward only when its training plan also covers the outputs (exec_loss_after_forward). */
static double loss_at(gc *c, otc_id loss) {
    otc_executor *ex = gc_executor(c, loss);
    const float *v;
    double l = NAN;
    if (ex && otc_exec_forward(ex) == OTC_OK && otc_exec_backward(ex, loss) == OTC_OK &&
        otc_exec_value(ex, loss, &v, NULL) == OTC_OK)
        l = v[0];
    else if (ex)
        fprintf(stderr, "forward: %s\n", otc_last_error());
    otc_exec_free(ex);
    return l;
}

static double central(gc *c, otc_id loss, float *x, double h) {
    float orig = *x;
    *x = (float)(orig + h);
    double hp = (double)*x - orig; /* the step actually taken in float */
    double lp = loss_at(c, loss);
    *x = (float)(orig - h);
    double hm = orig - (double)*x;
    double lm = loss_at(c, loss);
    *x = orig;
    return (lp - lm) / (hp + hm);
}

static bool close_enough(const gc *c, double a, double n) {
    return fabs(a - n) <= c->atol + c->rtol * fmax(fabs(a), fabs(n));
}

/* The analytic gradient of p into dst. A compiled backend has no gradient for a parameter
 * its plan never reads (it says so); then it must be zero, which the finite differences
 * check. */
static bool analytic_grad(gc *c, otc_executor *ex, otc_id p, float *dst, size_t n) {
    const float *gp;
    otc_status st = otc_exec_grad(ex, p, &gp);
    if (st == OTC_ERR_UNSUPPORTED && bk_compiled(c->k)) {
        printf("%s: %s has no gradient for parameter #%d (%s): checking that it is zero\n",
               c->k->test, c->k->name, (int)p, otc_last_error());
        memset(dst, 0, n * sizeof(float));
        return true;
    }
    if (st) fprintf(stderr, "grad: %s\n", otc_last_error());
    if (!st) memcpy(dst, gp, n * sizeof(float));
    return st == OTC_OK;
}

/* Checks d(sum(out * R))/dp for every checked parameter p (at most max_elems elements of
 * each, evenly spread). A mismatch at step h is re-checked at h/2 before it counts, so a
 * large third derivative does not fail a correct gradient. */
static void gc_run(gc *c, otc_id out, int max_elems) {
    REQUIRE(out >= 0);
    otc_id loss = otc_graph_node(c->g, out)->shape.ndim == 0 &&
                          otc_op_get(otc_graph_node(c->g, out)->op)->kind == OTC_OPKIND_LOSS
                      ? out
                      : weighted_loss(c, out);
    REQUIRE(loss >= 0);
    REQUIRE(mark_sample_output(c, out) == OTC_OK);
    otc_executor *ex = gc_executor(c, loss);
    REQUIRE(ex);
    CHECK(strcmp(otc_exec_backend(ex), c->k->name) == 0);
    otc_status st = otc_exec_forward(ex);
    if (!st) st = otc_exec_backward(ex, loss);
    if (st) fprintf(stderr, "%s: %s\n", c->k->name, otc_last_error());
    CHECK(st == OTC_OK);
    int checked = 0;
    for (int i = 0; !st && i < c->n_check; i++) {
        otc_id p = c->check[i];
        otc_tensor *t = otc_graph_param(c->g, p);
        float *analytic = malloc(t->size * sizeof(float));
        if (!analytic || !analytic_grad(c, ex, p, analytic, t->size)) {
            CHECK(!"analytic gradient");
            free(analytic);
            break;
        }
        size_t step = t->size > (size_t)max_elems ? t->size / (size_t)max_elems : 1;
        for (size_t e = 0; e < t->size; e += step) {
            double num = central(c, loss, &t->data[e], c->h);
            if (!close_enough(c, analytic[e], num)) num = central(c, loss, &t->data[e], c->h / 2);
            CHECK_MSG(close_enough(c, analytic[e], num),
                      "%s: parameter #%d element %zu: analytic %.7g, finite difference %.7g",
                      c->k->name, (int)p, e, analytic[e], num);
            checked++;
        }
        free(analytic);
    }
    CHECK(checked > 0);
    otc_exec_free(ex);
}

#define B 3

BACKEND_TEST(gradcheck_add) {
    gc c;
    gc_init(&c, k, 1, B);
    gc_run(&c, otc_add(c.g, gc_rows(&c, 4, -1, 1), gc_rows(&c, 4, -1, 1)), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_sub) {
    gc c;
    gc_init(&c, k, 2, B);
    gc_run(&c, otc_sub(c.g, gc_rows(&c, 4, -1, 1), gc_rows(&c, 4, -1, 1)), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_mul) {
    gc c;
    gc_init(&c, k, 3, B);
    gc_run(&c, otc_mul(c.g, gc_rows(&c, 4, -1, 1), gc_rows(&c, 4, -1, 1)), 1000);
    gc_free(&c);
    /* Both operands the same node: the two gradient terms land in one buffer. */
    gc_init(&c, k, 4, B);
    otc_id x = gc_param(&c, otc_shape_2d(2, 3), -1, 1);
    gc_run(&c, otc_mul(c.g, x, x), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_div) {
    gc c;
    gc_init(&c, k, 5, B);
    otc_id den = gc_rows_ex(&c, 4, 0.5f, 2.0f, true);
    gc_run(&c, otc_div(c.g, gc_rows(&c, 4, -1, 1), den), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_neg) {
    gc c;
    gc_init(&c, k, 6, B);
    gc_run(&c, otc_neg(c.g, gc_rows(&c, 4, -1, 1)), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_scale) {
    gc c;
    gc_init(&c, k, 7, B);
    gc_run(&c, otc_scale(c.g, gc_rows(&c, 4, -1, 1), -1.7f), 1000);
    gc_free(&c);
}

/* Detach passes values but no gradient, so finite differences (which see the value) and the
 * analytic gradient differ by design: for loss = sum(x * detach(x)) the gradient is x, not
 * 2x. */
BACKEND_TEST(gradcheck_detach) {
    gc c;
    gc_init(&c, k, 8, B);
    otc_id x = gc_param(&c, otc_shape_1d(5), -1, 1);
    otc_id loss = otc_sum(c.g, otc_mul(c.g, x, otc_detach(c.g, x)));
    REQUIRE(mark_sample_output(&c, loss) == OTC_OK);
    otc_executor *ex = gc_executor(&c, loss);
    REQUIRE(ex);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    const float *gx;
    REQUIRE(otc_exec_grad(ex, x, &gx) == OTC_OK);
    const float *xv = otc_graph_param(c.g, x)->data;
    for (int i = 0; i < 5; i++) CHECK_NEAR(gx[i], xv[i], 1e-6);
    otc_exec_free(ex);
    gc_free(&c);
}

/* One activation op on per-sample values; kinked ones get inputs away from 0. */
static void check_activation(bk *k, otc_op op, float alpha, uint64_t seed, bool kinked) {
    gc c;
    gc_init(&c, k, seed, B);
    otc_id x = kinked ? gc_rows_ex(&c, 5, 0.1f, 2.0f, true) : gc_rows(&c, 5, -2.0f, 2.0f);
    gc_run(&c, otc_activation(c.g, op, x, alpha), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_sigmoid) {
    check_activation(k, OTC_OP_SIGMOID, 0, 11, false);
}
BACKEND_TEST(gradcheck_tanh) {
    check_activation(k, OTC_OP_TANH, 0, 12, false);
}
BACKEND_TEST(gradcheck_relu) {
    check_activation(k, OTC_OP_RELU, 0, 13, true);
}
BACKEND_TEST(gradcheck_leaky_relu) {
    check_activation(k, OTC_OP_LEAKY_RELU, 0.05f, 14, true);
}
BACKEND_TEST(gradcheck_softplus) {
    check_activation(k, OTC_OP_SOFTPLUS, 0, 15, false);
}
BACKEND_TEST(gradcheck_elu) {
    check_activation(k, OTC_OP_ELU, 0.7f, 16, true);
}
BACKEND_TEST(gradcheck_gaussian) {
    check_activation(k, OTC_OP_GAUSSIAN, 0, 17, false);
}
BACKEND_TEST(gradcheck_sin) {
    check_activation(k, OTC_OP_SIN, 0, 18, false);
}
BACKEND_TEST(gradcheck_abs) {
    check_activation(k, OTC_OP_ABS, 0, 19, true);
}
BACKEND_TEST(gradcheck_identity) {
    check_activation(k, OTC_OP_IDENTITY, 0, 20, false);
}

/* neat-python's activations (ops OTC_OP_NP_SIGMOID .. OTC_OP_CUBE). Those with kinks or a
 * pole near the range (hat and clamped at 0 and +-1, inv at 0, log at 1e-7, selu at 0) get
 * |x| in [0.4, 0.9] (inv and log also need it for finite differences at the emitted C's
 * step); the rest x in [-2, 2], inside every clamp. */
BACKEND_TEST(gradcheck_neat_python_acts) {
    /* Every graph lives to the end: the emitted-C backend knows its programs by graph
     * address, which a freed graph's successor could reuse. */
    static gc cs[OTC_OP_CUBE - OTC_OP_NP_SIGMOID + 1];
    for (int op = OTC_OP_NP_SIGMOID; op <= OTC_OP_CUBE; op++) {
        bool kinked = op == OTC_OP_HAT || op == OTC_OP_CLAMPED || op == OTC_OP_INV ||
                      op == OTC_OP_LOG || op == OTC_OP_SELU;
        gc *c = &cs[op - OTC_OP_NP_SIGMOID];
        gc_init(c, k, 80 + (uint64_t)op, B);
        otc_id x = kinked ? gc_rows_ex(c, 5, 0.4f, 0.9f, true) : gc_rows(c, 5, -2.0f, 2.0f);
        gc_run(c, otc_activation(c->g, (otc_op)op, x, 0.0f), 1000);
    }
    for (int i = 0; i <= OTC_OP_CUBE - OTC_OP_NP_SIGMOID; i++) gc_free(&cs[i]);
}

/* The IEEE ops ONNX reads (OTC_OP_SQRT .. OTC_OP_RECIPROCAL), side by side in one graph (one
 * compile): sqrt on x in [0.4, 2] (its domain, away from the pole of its derivative at 0),
 * cos on [-2, 2], reciprocal on |x| in [0.4, 0.9]. */
BACKEND_TEST(gradcheck_ieee_acts) {
    gc c;
    gc_init(&c, k, 120, B);
    otc_id parts[3] = {
        otc_activation(c.g, OTC_OP_SQRT, gc_rows(&c, 5, 0.4f, 2.0f), 0.0f),
        otc_activation(c.g, OTC_OP_COS, gc_rows(&c, 5, -2.0f, 2.0f), 0.0f),
        otc_activation(c.g, OTC_OP_RECIPROCAL, gc_rows_ex(&c, 5, 0.4f, 0.9f, true), 0.0f)};
    gc_run(&c, otc_concat(c.g, 3, parts, 1), 1000);
    gc_free(&c);
}

/* Below the BLAS cut-off: the loops. */
BACKEND_TEST(gradcheck_matmul) {
    gc c;
    gc_init(&c, k, 21, B);
    otc_id a = gc_rows(&c, 4, -1, 1);
    otc_id w = gc_param(&c, otc_shape_2d(4, 5), -1, 1);
    gc_run(&c, otc_matmul(c.g, a, w), 1000);
    gc_free(&c);
    /* unbatched on both sides */
    gc_init(&c, k, 22, B);
    otc_id p = gc_param(&c, otc_shape_2d(2, 3), -1, 1);
    otc_id q = gc_param(&c, otc_shape_2d(3, 2), -1, 1);
    gc_run(&c, otc_matmul(c.g, p, q), 1000);
    gc_free(&c);
}

/* [24,32] x [32,16]: forward and both gradient products go through sgemm. */
BACKEND_TEST(gradcheck_matmul_blas) {
    gc c;
    gc_init(&c, k, 23, 24);
    otc_id a = gc_rows(&c, 32, -1, 1);
    otc_id w = gc_param(&c, otc_shape_2d(32, 16), -0.5f, 0.5f);
    c.rtol = 2e-2;
    c.atol = 3e-3; /* the loss sums 384 products: float round-off in the differences */
    gc_run(&c, otc_matmul(c.g, a, w), 300);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_row_broadcast) {
    gc c;
    gc_init(&c, k, 24, B);
    otc_id v = gc_param(&c, otc_shape_1d(4), -1, 1);
    otc_id like = gc_rows(&c, 4, -1, 1); /* gets no gradient: its values are not used */
    gc_run(&c, otc_row_broadcast(c.g, v, like), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_sum) {
    gc c;
    gc_init(&c, k, 25, B);
    gc_run(&c, otc_sum(c.g, gc_rows(&c, 4, -1, 1)), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_mean) {
    gc c;
    gc_init(&c, k, 26, B);
    gc_run(&c, otc_mean(c.g, gc_rows(&c, 4, -1, 1)), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_reshape) {
    gc c;
    gc_init(&c, k, 27, B);
    otc_id x = gc_rows(&c, 6, -1, 1);
    gc_run(&c, otc_reshape(c.g, x, otc_shape_make(3, (int[]){OTC_BATCH, 3, 2})), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_flatten) {
    gc c;
    gc_init(&c, k, 28, B);
    otc_id x = otc_reshape(c.g, gc_rows(&c, 6, -1, 1), otc_shape_make(3, (int[]){OTC_BATCH, 2, 3}));
    gc_run(&c, otc_flatten(c.g, x), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_concat) {
    gc c;
    gc_init(&c, k, 29, B);
    otc_id xs[3] = {gc_rows(&c, 2, -1, 1), gc_rows(&c, 4, -1, 1), gc_rows(&c, 1, -1, 1)};
    gc_run(&c, otc_concat(c.g, 3, xs, 1), 1000);
    gc_free(&c);
    gc_init(&c, k, 30, B);
    otc_id ys[2] = {gc_param(&c, otc_shape_2d(2, 3), -1, 1),
                    gc_param(&c, otc_shape_2d(1, 3), -1, 1)};
    gc_run(&c, otc_concat(c.g, 2, ys, 0), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_slice) {
    gc c;
    gc_init(&c, k, 31, B);
    otc_id x =
        otc_reshape(c.g, gc_rows(&c, 12, -1, 1), otc_shape_make(3, (int[]){OTC_BATCH, 3, 4}));
    gc_run(&c, otc_slice(c.g, x, 2, 1, 2), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_select) {
    gc c;
    gc_init(&c, k, 32, B);
    otc_id x =
        otc_reshape(c.g, gc_rows(&c, 12, -1, 1), otc_shape_make(3, (int[]){OTC_BATCH, 3, 4}));
    gc_run(&c, otc_select(c.g, x, 1, 2), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_softmax) {
    gc c;
    gc_init(&c, k, 33, B);
    gc_run(&c, otc_softmax(c.g, gc_rows(&c, 5, -2, 2)), 1000);
    gc_free(&c);
    gc_init(&c, k, 34, B);
    gc_run(&c, otc_softmax(c.g, gc_param(&c, otc_shape_1d(4), -2, 2)), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_log_softmax) {
    gc c;
    gc_init(&c, k, 35, B);
    gc_run(&c, otc_log_softmax(c.g, gc_rows(&c, 5, -2, 2)), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_mse) {
    gc c;
    gc_init(&c, k, 36, B);
    gc_run(&c, otc_mse(c.g, gc_rows(&c, 4, -1, 1), gc_rows(&c, 4, -1, 1)), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_bce) {
    gc c;
    gc_init(&c, k, 37, B);
    otc_id p = gc_rows(&c, 4, 0.05f, 0.95f);
    otc_id t = gc_rows(&c, 4, 0.0f, 1.0f);
    c.h = 2e-3;
    gc_run(&c, otc_bce(c.g, p, t), 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_softmax_ce) {
    static const float labels[4] = {2, 0, 4, 2};
    gc c;
    gc_init(&c, k, 38, 4);
    otc_id logits = gc_rows(&c, 5, -2, 2);
    otc_id l = gc_input(&c, "labels", otc_shape_1d(OTC_BATCH), labels);
    gc_run(&c, otc_softmax_ce(c.g, logits, l), 1000);
    gc_free(&c);
}

/* A neuron reading several columns of several sources (one source twice, one column twice)
 * over more rows than the backward's chunk, so the chunking is exercised. */
static void check_neuron(bk *k, otc_act act, float bias, float wmax, int batch, uint64_t seed) {
    gc c;
    gc_init(&c, k, seed, batch);
    otc_id s0 = gc_rows(&c, 3, -1, 1), s1 = gc_rows(&c, 2, -1, 1);
    otc_id srcs[5] = {s0, s1, s0, s1, s0};
    int cols[5] = {2, 0, 0, 1, 2};
    otc_id n = otc_neuron(c.g, NULL, act, bias, 0.8f, 5, srcs, cols, NULL);
    REQUIRE(n >= 0);
    const otc_node *nd = otc_graph_node(c.g, n);
    otc_tensor *w = otc_graph_param(c.g, nd->inputs[0]);
    for (size_t i = 0; i < w->size; i++) w->data[i] = uniform(&c, -wmax, wmax);
    c.check[c.n_check++] = nd->inputs[0];
    c.check[c.n_check++] = nd->inputs[1];
    gc_run(&c, n, 1000);
    gc_free(&c);
}

BACKEND_TEST(gradcheck_neuron) {
    check_neuron(k, OTC_ACT_TANH, 0.2f, 1.0f, 70, 39);
}

/* Every activation inside a neuron, on both sides of 0: the bias keeps the pre-activation
 * in (0.7, 2.3) or (-2.3, -0.7), away from the kinks. */
BACKEND_TEST(gradcheck_neuron_acts) {
    for (int act = 0; act < OTC_ACT_COUNT; act++) {
        check_neuron(k, (otc_act)act, 1.5f, 0.2f, 4, 40 + (uint64_t)act);
        if (act != OTC_ACT_SQRT) /* below 0 sqrt is NaN: no gradient to check */
            check_neuron(k, (otc_act)act, -1.5f, 0.2f, 4, 60 + (uint64_t)act);
    }
}
