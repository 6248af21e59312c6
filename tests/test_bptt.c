/* Backpropagation through time: the gradients otc_exec_seq_backward computes over 12 recorded
 * steps against central finite differences of the summed loss of the same steps run forward
 * again (every op that can sit on a recurrent path), truncated BPTT against differences with
 * the carried state held fixed, the initial state's gradient, resets inside a record, and the
 * errors (full record, batch change, the emitted C). */
#include "backend_support.h"
#include "otc/layers.h"

#define T_STEPS 12
#define BATCH   2

typedef struct {
    otc_graph *g;
    otc_rng rng;
    otc_id x, y, loss;
    int nin, nout;
    float xs[T_STEPS][BATCH * 8];
    float ys[T_STEPS][BATCH * 8];
    float w[T_STEPS];
    double h, rtol, atol;
} seqc;

static float unif(seqc *c, float lo, float hi) {
    return lo + (hi - lo) * otc_rng_uniform(&c->rng);
}

static otc_id rparam(seqc *c, int rows, int cols, float r) {
    float v[256];
    int n = (rows > 0 ? rows : 1) * cols; /* rows 0: a vector [cols] */
    for (int i = 0; i < n; i++) v[i] = unif(c, -r, r);
    return otc_param(c->g, NULL, rows > 0 ? otc_shape_2d(rows, cols) : otc_shape_1d(cols), v);
}

/* A constant (frozen) row [n] of value v repeated over the rows of like. */
static otc_id crow(seqc *c, int n, float v, otc_id like) {
    float d[64];
    for (int i = 0; i < n; i++) d[i] = v;
    otc_id p = otc_param(c->g, NULL, otc_shape_1d(n), d);
    otc_graph_set_trainable(c->g, p, false);
    return otc_row_broadcast(c->g, p, like);
}

static void seqc_init(seqc *c, uint64_t seed, int nin, int nout) {
    memset(c, 0, sizeof *c);
    c->g = otc_graph_new();
    otc_rng_seed(&c->rng, seed);
    c->nin = nin;
    c->nout = nout;
    c->x = otc_input(c->g, "x", otc_shape_2d(OTC_BATCH, nin));
    c->y = otc_input(c->g, "y", otc_shape_2d(OTC_BATCH, nout));
    for (int t = 0; t < T_STEPS; t++) {
        for (int i = 0; i < BATCH * nin; i++) c->xs[t][i] = unif(c, -1, 1);
        for (int i = 0; i < BATCH * nout; i++) c->ys[t][i] = unif(c, -0.5f, 0.5f);
        c->w[t] = t % 3 == 1 ? 0.0f : 0.5f + 0.1f * (float)t; /* some steps carry no loss */
    }
    c->h = 5e-3;
    c->rtol = 2e-2;
    c->atol = 2e-3;
}

/* out = h Wo -> mse against y: the per-step loss. */
static void seqc_head(seqc *c, otc_id h, int H) {
    otc_id wo = rparam(c, H, c->nout, 0.8f);
    c->loss = otc_mse(c->g, otc_matmul(c->g, h, wo), c->y);
}

static void run_step(otc_executor *ex, seqc *c, int t) {
    REQUIRE(otc_exec_set_input(ex, c->x, c->xs[t], BATCH) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, c->y, c->ys[t], BATCH) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
}

/* sum_t w_t loss_t over steps [t0, t1) from the executor's current state. */
static double seq_loss(otc_executor *ex, seqc *c, int t0, int t1) {
    double total = 0;
    for (int t = t0; t < t1; t++) {
        run_step(ex, c, t);
        const float *l = NULL;
        otc_exec_value(ex, c->loss, &l, NULL);
        total += (double)c->w[t] * l[0];
    }
    return total;
}

/* The recorded gradient of every trainable parameter against central differences. With
 * state0 != NULL (delay `sd`), both start from that state instead of zeros. */
static void check_grads(seqc *c, int t0, int t1, otc_id sd, const float *state0) {
    otc_executor *ex = otc_interpreter_new(c->g, NULL);
    REQUIRE(ex);
    otc_exec_zero_grad(ex);
    otc_exec_reset_state(ex);
    if (state0) REQUIRE(otc_exec_set_state(ex, sd, state0, BATCH) == OTC_OK);
    REQUIRE(otc_exec_seq_begin(ex, t1 - t0) == OTC_OK);
    for (int t = t0; t < t1; t++) run_step(ex, c, t);
    REQUIRE(otc_exec_seq_backward(ex, c->loss, c->w + t0) == OTC_OK);
    int checked = 0, n = otc_graph_size(c->g);
    for (otc_id p = 0; p < n; p++) {
        const otc_node *nd = otc_graph_node(c->g, p);
        if (nd->op != OTC_OP_PARAMETER || !nd->trainable) continue;
        const float *ga = NULL;
        REQUIRE(otc_exec_grad(ex, p, &ga) == OTC_OK);
        otc_tensor *v = otc_graph_param(c->g, p);
        size_t stride = v->size > 10 ? v->size / 10 : 1;
        for (size_t i = 0; i < v->size; i += stride) {
            float keep = v->data[i];
            double l[2];
            for (int s = 0; s < 2; s++) {
                v->data[i] = keep + (float)(s ? -c->h : c->h);
                otc_exec_reset_state(ex);
                if (state0) otc_exec_set_state(ex, sd, state0, BATCH);
                l[s] = seq_loss(ex, c, t0, t1);
            }
            v->data[i] = keep;
            double fd = (l[0] - l[1]) / (2 * c->h);
            double tol = c->atol + c->rtol * fabs(fd);
            if (!(fabs(fd - ga[i]) <= tol)) {
                char lab[64];
                fprintf(stderr, "param %s[%zu]: bptt %.6g, finite differences %.6g\n",
                        otc_graph_node_label(c->g, p, lab, 64), i, ga[i], fd);
                otc_test_failures++;
            }
            checked++;
        }
    }
    CHECK(checked > 0);
    otc_exec_free(ex);
}

/* h_t = cell(x_t, h_{t-1}) with h [B, H], closed through a Delay, then the head. */
typedef otc_id (*cell_fn)(seqc *c, otc_id hprev, int H, int arg);

static void gradcheck_cell_steps(uint64_t seed, cell_fn cell, int H, int arg, int steps) {
    seqc c;
    seqc_init(&c, seed, 3, 2);
    otc_id d = otc_delay(c.g, "h_prev", otc_shape_2d(OTC_BATCH, H));
    otc_id h = cell(&c, d, H, arg);
    REQUIRE(h >= 0);
    REQUIRE(otc_graph_set_input(c.g, d, 0, h) == OTC_OK);
    seqc_head(&c, h, H);
    REQUIRE(c.loss >= 0);
    check_grads(&c, 0, steps, -1, NULL);
    otc_graph_free(c.g);
}

static void gradcheck_cell(uint64_t seed, cell_fn cell, int H, int arg) {
    gradcheck_cell_steps(seed, cell, H, arg, T_STEPS);
}

/* act(x Wx + h Wh + b): matmul, add, row_broadcast and one activation op on the path. */
static otc_id cell_act(seqc *c, otc_id hp, int H, int op) {
    otc_graph *g = c->g;
    otc_id xw = otc_matmul(g, c->x, rparam(c, c->nin, H, 0.8f));
    otc_id hw = otc_matmul(g, hp, rparam(c, H, H, 0.6f));
    otc_id b = otc_row_broadcast(g, rparam(c, 0, H, 0.3f), xw);
    otc_id pre = otc_add(g, otc_add(g, xw, hw), b);
    const otc_act_info *ai = otc_act_get((otc_act)otc_op_get((otc_op)op)->act);
    otc_id a = otc_activation(g, (otc_op)op, pre, ai->default_a);
    /* Unbounded activations are squashed so twelve steps stay finite. */
    return otc_activation(g, OTC_OP_TANH, a, 0);
}

/* sub, mul, div, neg, scale: h' = tanh(a) * sigmoid(b) - neg(scale(h, 0.5)) / (2 + sigmoid(b)) */
static otc_id cell_elementwise(seqc *c, otc_id hp, int H, int unused) {
    (void)unused;
    otc_graph *g = c->g;
    otc_id a = otc_add(g, otc_matmul(g, c->x, rparam(c, c->nin, H, 0.8f)),
                       otc_matmul(g, hp, rparam(c, H, H, 0.6f)));
    otc_id b = otc_add(g, otc_matmul(g, c->x, rparam(c, c->nin, H, 0.8f)),
                       otc_matmul(g, hp, rparam(c, H, H, 0.6f)));
    otc_id sb = otc_activation(g, OTC_OP_SIGMOID, b, 0);
    otc_id gate = otc_mul(g, otc_activation(g, OTC_OP_TANH, a, 0), sb);
    otc_id den = otc_add(g, crow(c, H, 2.0f, sb), sb);
    otc_id carry = otc_div(g, otc_neg(g, otc_scale(g, hp, 0.5f)), den);
    return otc_sub(g, gate, carry);
}

/* concat, slice, softmax, log_softmax, reshape, select, flatten on the path. */
static otc_id cell_structural(seqc *c, otc_id hp, int H, int unused) {
    (void)unused;
    otc_graph *g = c->g;
    otc_id xh[2] = {c->x, hp};
    otc_id z = otc_matmul(g, otc_concat(g, 2, xh, 1), rparam(c, c->nin + H, 2 * H, 0.7f));
    otc_id s1 = otc_slice(g, z, 1, 0, H), s2 = otc_slice(g, z, 1, H, H);
    otc_id mix = otc_add(g, otc_mul(g, otc_activation(g, OTC_OP_TANH, s1, 0), otc_softmax(g, s2)),
                         otc_scale(g, otc_log_softmax(g, s1), 0.1f));
    /* [B, H] -> [B, 2, H/2] -> rows swapped through select + concat -> flat [B, H] */
    otc_id r = otc_reshape(g, mix, (otc_shape){3, {OTC_BATCH, 2, H / 2}});
    otc_id parts[2] = {otc_select(g, r, 1, 1), otc_select(g, r, 1, 0)};
    otc_id sw = otc_concat(g, 2, parts, 1);
    otc_id back = otc_flatten(g, otc_reshape(g, sw, (otc_shape){3, {OTC_BATCH, 2, H / 2}}));
    return otc_activation(g, OTC_OP_TANH, back, 0);
}

/* Two Delays in a chain: h_t = tanh(x W + h_{t-1} U + h_{t-2} V). */
static otc_id cell_two_delays(seqc *c, otc_id hp, int H, int unused) {
    (void)unused;
    otc_graph *g = c->g;
    otc_id d2 = otc_delay(g, "h_prev2", otc_shape_2d(OTC_BATCH, H));
    otc_graph_set_input(g, d2, 0, hp);
    otc_id pre = otc_add(g, otc_matmul(g, c->x, rparam(c, c->nin, H, 0.8f)),
                         otc_add(g, otc_matmul(g, hp, rparam(c, H, H, 0.6f)),
                                 otc_matmul(g, d2, rparam(c, H, H, 0.6f))));
    return otc_activation(g, OTC_OP_TANH, pre, 0);
}

TEST(bptt_gradcheck_activations) {
    for (int op = OTC_OP_SIGMOID; op <= OTC_OP_IDENTITY; op++) {
        int before = otc_test_failures;
        /* hat and clamped are piecewise linear with kinks (hat at 0 and +-1, clamped at
         * +-1) that a central difference straddles somewhere in twelve steps (their
         * derivatives are checked element by element in test_ops.c). neat-python's sin(5x)
         * makes twelve steps chaotic, so a finite difference no longer measures the
         * derivative: it is checked through 2 steps. sqrt is NaN below zero, where a
         * cell's pre-activations go; its derivative is checked on its domain in
         * gradcheck_ieee_acts. */
        if (op == OTC_OP_HAT || op == OTC_OP_CLAMPED || op == OTC_OP_SQRT) continue;
        if (op == OTC_OP_NP_SIN)
            gradcheck_cell_steps(400 + (uint64_t)op, cell_act, 4, op, 2);
        else
            gradcheck_cell(400 + (uint64_t)op, cell_act, 4, op);
        if (otc_test_failures != before) fprintf(stderr, "  in %s\n", otc_op_get(op)->name);
    }
}

TEST(bptt_gradcheck_elementwise) {
    gradcheck_cell(7, cell_elementwise, 4, 0);
}

TEST(bptt_gradcheck_structural) {
    gradcheck_cell(8, cell_structural, 4, 0);
}

TEST(bptt_gradcheck_two_delays) {
    gradcheck_cell(9, cell_two_delays, 3, 0);
}

/* NEAT's recurrent genomes: Neuron nodes reading each other's previous outputs. */
TEST(bptt_gradcheck_neurons) {
    seqc c;
    seqc_init(&c, 11, 2, 1);
    otc_graph *g = c.g;
    otc_id d1 = otc_delay(g, "n1_prev", otc_shape_2d(OTC_BATCH, 1));
    otc_id d2 = otc_delay(g, "n2_prev", otc_shape_2d(OTC_BATCH, 1));
    otc_id s1[2] = {c.x, d2};
    int c1[2] = {0, 0};
    float w1[2] = {0.9f, -0.7f};
    otc_id n1 = otc_neuron(g, "n1", OTC_ACT_SIGMOID, 0.1f, 1.0f, 2, s1, c1, w1);
    otc_id s2[3] = {n1, d1, c.x};
    int c2[3] = {0, 0, 1};
    float w2[3] = {1.1f, 0.8f, -0.5f};
    otc_id n2 = otc_neuron(g, "n2", OTC_ACT_TANH, -0.2f, 1.3f, 3, s2, c2, w2);
    REQUIRE(n1 >= 0 && n2 >= 0);
    REQUIRE(otc_graph_set_input(g, d1, 0, n1) == OTC_OK);
    REQUIRE(otc_graph_set_input(g, d2, 0, n2) == OTC_OK);
    c.loss = otc_mse(g, n2, c.y);
    check_grads(&c, 0, T_STEPS, -1, NULL);
    otc_graph_free(g);
}

/* The recurrent layers, two stacked, through twelve steps. */
TEST(bptt_gradcheck_layers) {
    for (int cell = 0; cell < 3; cell++) {
        seqc c;
        seqc_init(&c, 90 + (uint64_t)cell, 2, 2);
        otc_id h = otc_recurrent(c.g, (otc_cell)cell, c.x, 3, 2, &c.rng, "rnn");
        REQUIRE(h >= 0);
        seqc_head(&c, h, 3);
        int before = otc_test_failures;
        check_grads(&c, 0, T_STEPS, -1, NULL);
        if (otc_test_failures != before) fprintf(stderr, "  in cell %d\n", cell);
        otc_graph_free(c.g);
    }
}

/* A per-step softmax cross-entropy loss (labels as an input) on an RNN. */
TEST(bptt_gradcheck_softmax_ce) {
    seqc c;
    seqc_init(&c, 12, 2, 1);
    int H = 4;
    otc_id d = otc_delay(c.g, "h_prev", otc_shape_2d(OTC_BATCH, H));
    otc_id h = cell_act(&c, d, H, OTC_OP_TANH);
    REQUIRE(otc_graph_set_input(c.g, d, 0, h) == OTC_OK);
    otc_id logits = otc_matmul(c.g, h, rparam(&c, H, 3, 0.8f));
    c.loss = otc_softmax_ce(c.g, logits, c.y);
    REQUIRE(c.loss >= 0);
    for (int t = 0; t < T_STEPS; t++)
        for (int b = 0; b < BATCH; b++) c.ys[t][b] = (float)((t + b) % 3);
    check_grads(&c, 0, T_STEPS, -1, NULL);
    otc_graph_free(c.g);
}

static otc_id first_param(const otc_graph *g) {
    for (otc_id p = 0; p < otc_graph_size(g); p++)
        if (otc_graph_node(g, p)->op == OTC_OP_PARAMETER) return p;
    return -1;
}

/* An RNN of the standard form, its record and the Delay inside it. */
static otc_id build_rnn(seqc *c, int H) {
    otc_id d = otc_delay(c->g, "h_prev", otc_shape_2d(OTC_BATCH, H));
    otc_id h = cell_act(c, d, H, OTC_OP_TANH);
    otc_graph_set_input(c->g, d, 0, h);
    seqc_head(c, h, H);
    return d;
}

/* Truncated BPTT: the second chunk of 6 steps starts from the state the first left, and its
 * gradient is that of the chunk's loss with that state held fixed. */
TEST(bptt_truncated) {
    seqc c;
    seqc_init(&c, 21, 3, 2);
    int H = 4, k = 6;
    otc_id d = build_rnn(&c, H);
    otc_executor *ex = otc_interpreter_new(c.g, NULL);
    REQUIRE(ex);
    otc_exec_reset_state(ex);
    REQUIRE(otc_exec_seq_begin(ex, k) == OTC_OK);
    for (int t = 0; t < k; t++) run_step(ex, &c, t);
    REQUIRE(otc_exec_seq_backward(ex, c.loss, c.w) == OTC_OK);
    /* the state after step k-1 is the Delay's source value then */
    const float *hv = NULL;
    REQUIRE(otc_exec_value(ex, otc_graph_node(c.g, d)->inputs[0], &hv, NULL) == OTC_OK);
    float state[BATCH * 4];
    memcpy(state, hv, sizeof state);
    /* the second chunk on the same executor, state carried */
    otc_exec_zero_grad(ex);
    REQUIRE(otc_exec_seq_begin(ex, k) == OTC_OK);
    for (int t = k; t < 2 * k; t++) run_step(ex, &c, t);
    REQUIRE(otc_exec_seq_backward(ex, c.loss, c.w + k) == OTC_OK);
    const float *g_carried = NULL;
    otc_id wo = -1;
    for (otc_id p = 0; p < otc_graph_size(c.g); p++)
        if (otc_graph_node(c.g, p)->op == OTC_OP_PARAMETER) wo = p; /* any; take the last */
    REQUIRE(otc_exec_grad(ex, wo, &g_carried) == OTC_OK);
    float gc_copy[64];
    size_t nwo = otc_graph_param(c.g, wo)->size;
    memcpy(gc_copy, g_carried, nwo * sizeof(float));
    otc_exec_free(ex);
    /* a fresh executor set to that state gives the same gradient, and both match
     * finite differences with the state fixed */
    check_grads(&c, k, 2 * k, d, state);
    ex = otc_interpreter_new(c.g, NULL);
    otc_exec_reset_state(ex);
    REQUIRE(otc_exec_set_state(ex, d, state, BATCH) == OTC_OK);
    REQUIRE(otc_exec_seq_begin(ex, k) == OTC_OK);
    for (int t = k; t < 2 * k; t++) run_step(ex, &c, t);
    REQUIRE(otc_exec_seq_backward(ex, c.loss, c.w + k) == OTC_OK);
    const float *g2 = NULL;
    REQUIRE(otc_exec_grad(ex, wo, &g2) == OTC_OK);
    for (size_t i = 0; i < nwo; i++) CHECK_NEAR(gc_copy[i], g2[i], 1e-6);
    otc_exec_free(ex);
    otc_graph_free(c.g);
}

/* The gradient reaching the initial state against differences of set_state. */
TEST(bptt_initial_state_grad) {
    seqc c;
    seqc_init(&c, 31, 3, 2);
    int H = 4;
    otc_id d = build_rnn(&c, H);
    float s0[BATCH * 4];
    for (int i = 0; i < BATCH * H; i++) s0[i] = unif(&c, -0.5f, 0.5f);
    otc_executor *ex = otc_interpreter_new(c.g, NULL);
    REQUIRE(ex);
    const float *sg = NULL;
    CHECK(otc_exec_seq_state_grad(ex, d, &sg) == OTC_ERR_STATE);
    REQUIRE(otc_exec_set_state(ex, d, s0, BATCH) == OTC_OK);
    REQUIRE(otc_exec_seq_begin(ex, T_STEPS) == OTC_OK);
    for (int t = 0; t < T_STEPS; t++) run_step(ex, &c, t);
    REQUIRE(otc_exec_seq_backward(ex, c.loss, c.w) == OTC_OK);
    REQUIRE(otc_exec_seq_state_grad(ex, d, &sg) == OTC_OK);
    float ga[BATCH * 4];
    memcpy(ga, sg, sizeof ga);
    for (int i = 0; i < BATCH * H; i++) {
        double l[2];
        for (int s = 0; s < 2; s++) {
            float sp[BATCH * 4];
            memcpy(sp, s0, sizeof sp);
            sp[i] += (float)(s ? -c.h : c.h);
            REQUIRE(otc_exec_set_state(ex, d, sp, BATCH) == OTC_OK);
            l[s] = seq_loss(ex, &c, 0, T_STEPS);
        }
        double fd = (l[0] - l[1]) / (2 * c.h);
        CHECK_NEAR(ga[i], fd, c.atol + c.rtol * fabs(fd));
    }
    otc_exec_free(ex);
    otc_graph_free(c.g);
}

/* A reset inside a record cuts the gradient: one record of two sequences gives the sum of
 * the two recorded apart. Weights NULL: every step counts 1. */
TEST(bptt_reset_cuts) {
    seqc c;
    seqc_init(&c, 41, 3, 2);
    build_rnn(&c, 4);
    otc_executor *ex = otc_interpreter_new(c.g, NULL);
    REQUIRE(ex);
    otc_id w0 = first_param(c.g); /* Wx */
    size_t n = otc_graph_param(c.g, w0)->size;
    float apart[64] = {0};
    for (int part = 0; part < 2; part++) {
        otc_exec_zero_grad(ex);
        otc_exec_reset_state(ex);
        REQUIRE(otc_exec_seq_begin(ex, 5) == OTC_OK);
        for (int t = part * 5; t < part * 5 + 5; t++) run_step(ex, &c, t);
        REQUIRE(otc_exec_seq_backward(ex, c.loss, NULL) == OTC_OK);
        const float *g = NULL;
        otc_exec_grad(ex, w0, &g);
        for (size_t i = 0; i < n; i++) apart[i] += g[i];
    }
    otc_exec_zero_grad(ex);
    otc_exec_reset_state(ex);
    REQUIRE(otc_exec_seq_begin(ex, 10) == OTC_OK);
    for (int t = 0; t < 10; t++) {
        if (t == 5) otc_exec_reset_state(ex);
        run_step(ex, &c, t);
    }
    REQUIRE(otc_exec_seq_backward(ex, c.loss, NULL) == OTC_OK);
    const float *g = NULL;
    otc_exec_grad(ex, w0, &g);
    for (size_t i = 0; i < n; i++) CHECK_NEAR(g[i], apart[i], 1e-5 + 1e-5 * fabs(apart[i]));
    otc_exec_free(ex);
    otc_graph_free(c.g);
}

/* One step recorded is plain backward; a plain backward after a record still stops at the
 * Delay; the value read after seq_backward is the last step's. */
TEST(bptt_one_step_is_backward) {
    seqc c;
    seqc_init(&c, 51, 3, 2);
    build_rnn(&c, 4);
    otc_executor *ex = otc_interpreter_new(c.g, NULL);
    REQUIRE(ex);
    otc_id w0 = first_param(c.g);
    size_t n = otc_graph_param(c.g, w0)->size;
    float seq[64];
    for (int t = 0; t < 3; t++) run_step(ex, &c, t); /* some state */
    const float *lv = NULL;
    REQUIRE(otc_exec_seq_begin(ex, 4) == OTC_OK);
    run_step(ex, &c, 3);
    otc_exec_value(ex, c.loss, &lv, NULL);
    float last = lv[0];
    REQUIRE(otc_exec_seq_backward(ex, c.loss, NULL) == OTC_OK);
    otc_exec_value(ex, c.loss, &lv, NULL);
    CHECK(lv[0] == last);
    const float *g = NULL;
    otc_exec_grad(ex, w0, &g);
    memcpy(seq, g, n * sizeof(float));
    otc_exec_zero_grad(ex);
    REQUIRE(otc_exec_backward(ex, c.loss) == OTC_OK);
    otc_exec_grad(ex, w0, &g);
    for (size_t i = 0; i < n; i++) CHECK(g[i] == seq[i]);
    otc_exec_free(ex);
    otc_graph_free(c.g);
}

TEST(bptt_errors) {
    seqc c;
    seqc_init(&c, 61, 3, 2);
    otc_id d = build_rnn(&c, 4);
    otc_executor *ex = otc_interpreter_new(c.g, NULL);
    REQUIRE(ex);
    CHECK(otc_exec_seq_backward(ex, c.loss, NULL) == OTC_ERR_STATE);
    CHECK(strstr(otc_last_error(), "seq_begin"));
    CHECK(otc_exec_seq_begin(ex, 0) == OTC_ERR_ARG);
    REQUIRE(otc_exec_seq_begin(ex, 2) == OTC_OK);
    run_step(ex, &c, 0);
    run_step(ex, &c, 1);
    otc_exec_set_input(ex, c.x, c.xs[2], BATCH);
    otc_exec_set_input(ex, c.y, c.ys[2], BATCH);
    CHECK(otc_exec_forward(ex) == OTC_ERR_STATE);
    CHECK(strstr(otc_last_error(), "record is full (2 steps"));
    CHECK(otc_exec_seq_backward(ex, c.loss, NULL) == OTC_OK);
    /* a batch change within a record */
    REQUIRE(otc_exec_seq_begin(ex, 3) == OTC_OK);
    run_step(ex, &c, 0);
    otc_exec_set_input(ex, c.x, c.xs[1], 1);
    otc_exec_set_input(ex, c.y, c.ys[1], 1);
    CHECK(otc_exec_forward(ex) == OTC_ERR_SHAPE);
    CHECK(strstr(otc_last_error(), "bucket"));
    CHECK(otc_exec_seq_backward(ex, c.loss, NULL) == OTC_OK);
    CHECK(otc_exec_seq_backward(ex, c.loss, NULL) == OTC_ERR_STATE); /* the record ended */
    /* not a delay; not a scalar loss */
    float s[8] = {0};
    CHECK(otc_exec_set_state(ex, c.x, s, BATCH) == OTC_ERR_ARG);
    CHECK(otc_exec_set_state(ex, d, NULL, BATCH) == OTC_ERR_ARG);
    REQUIRE(otc_exec_seq_begin(ex, 1) == OTC_OK);
    run_step(ex, &c, 0);
    CHECK(otc_exec_seq_backward(ex, c.x, NULL) == OTC_ERR_SHAPE);
    otc_exec_free(ex);
    /* inference executors record nothing */
    otc_exec_options inf = {.inference = true};
    ex = otc_interpreter_new(c.g, &inf);
    REQUIRE(ex);
    CHECK(otc_exec_seq_begin(ex, 4) == OTC_ERR_STATE);
    otc_exec_free(ex);
    otc_graph_free(c.g);
}

/* The memory of a record is checked against the limit before it is allocated. */
TEST(bptt_record_memory_limit) {
    seqc c;
    seqc_init(&c, 71, 3, 2);
    build_rnn(&c, 4);
    otc_executor *ex = otc_interpreter_new(c.g, NULL);
    REQUIRE(ex);
    setenv("OTC_MEMORY_LIMIT", "1M", 1);
    REQUIRE(otc_exec_seq_begin(ex, 1 << 20) == OTC_OK);
    otc_exec_set_input(ex, c.x, c.xs[0], BATCH);
    otc_exec_set_input(ex, c.y, c.ys[0], BATCH);
    CHECK(otc_exec_forward(ex) == OTC_ERR_NOMEM);
    CHECK(strstr(otc_last_error(), "sequence of 1048576 steps"));
    unsetenv("OTC_MEMORY_LIMIT");
    otc_exec_free(ex);
    otc_graph_free(c.g);
}

/* The interpreter and the JIT run sequences; the emitted C (a step function with no recording;
 * its training through time is the unrolled graph's, tests/test_bptt_compiled.c) says so. */
BACKEND_TEST(bptt_entry_points) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    float w[4] = {1, 2, 3, 4};
    otc_id y = otc_matmul(g, x, otc_param(g, "w", otc_shape_2d(2, 2), w));
    otc_id loss = otc_mean(g, y);
    otc_graph_mark_output(g, y);
    bk_options o = {.loss = loss};
    otc_executor *ex = bk_new(k, g, &o);
    REQUIRE_EX(ex);
    otc_status st = otc_exec_seq_begin(ex, 3);
    if (k->kind != BK_EMITC) {
        CHECK(st == OTC_OK);
    } else {
        CHECK(st == OTC_ERR_UNSUPPORTED);
        CHECK(strstr(otc_last_error(), "interpreter-only"));
        CHECK(otc_exec_seq_backward(ex, loss, NULL) == OTC_ERR_UNSUPPORTED);
        CHECK(otc_exec_set_state(ex, 0, w, 1) == OTC_ERR_UNSUPPORTED);
        CHECK(otc_exec_optimizer_step(ex, NULL) == OTC_ERR_UNSUPPORTED);
    }
    otc_exec_free(ex);
    otc_graph_free(g);
}
