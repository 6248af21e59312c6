/* Reverse-mode semantics of the interpreter: accumulation, detach, inference mode, scalar
 * losses, topological order under rewiring, cycles, and Delay state across forwards. */
#include "harness.h"
#include "otc/otc.h"

static otc_id vec(otc_graph *g, int n, const float *v) {
    return otc_param(g, NULL, otc_shape_1d(n), v);
}

/* Gradients accumulate across backward calls until zeroed. */
TEST(autograd_accumulates_until_zeroed) {
    otc_graph *g = otc_graph_new();
    const float x[3] = {1, -2, 3};
    otc_id p = vec(g, 3, x);
    otc_id loss = otc_sum(g, otc_mul(g, p, p)); /* d/dp = 2p */
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    const float *gp;
    REQUIRE(otc_exec_grad(ex, p, &gp) == OTC_OK);
    for (int i = 0; i < 3; i++) CHECK(gp[i] == 0.0f); /* zero before any backward */
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    REQUIRE(otc_exec_grad(ex, p, &gp) == OTC_OK);
    for (int i = 0; i < 3; i++) CHECK_NEAR(gp[i], 4 * x[i], 1e-6);
    /* a second forward does not clear them either */
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    for (int i = 0; i < 3; i++) CHECK_NEAR(gp[i], 6 * x[i], 1e-6);
    otc_exec_zero_grad(ex);
    for (int i = 0; i < 3; i++) CHECK(gp[i] == 0.0f);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    for (int i = 0; i < 3; i++) CHECK_NEAR(gp[i], 2 * x[i], 1e-6);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Intermediate gradients are per backward call: two losses over a shared subgraph each give
 * their own gradient, and their sum when both are run. */
TEST(autograd_two_losses) {
    otc_graph *g = otc_graph_new();
    const float x[2] = {0.5f, -1.5f};
    otc_id p = vec(g, 2, x);
    otc_id t = otc_activation(g, OTC_OP_TANH, p, 0);
    otc_id l1 = otc_sum(g, t), l2 = otc_sum(g, otc_scale(g, t, 3.0f));
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    const float *gp;
    REQUIRE(otc_exec_grad(ex, p, &gp) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, l1) == OTC_OK);
    for (int i = 0; i < 2; i++) CHECK_NEAR(gp[i], 1 - tanh(x[i]) * tanh(x[i]), 1e-6);
    REQUIRE(otc_exec_backward(ex, l2) == OTC_OK);
    for (int i = 0; i < 2; i++) CHECK_NEAR(gp[i], 4 * (1 - tanh(x[i]) * tanh(x[i])), 1e-5);
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(autograd_detach_stops_gradient) {
    otc_graph *g = otc_graph_new();
    const float xv[2] = {2, 3}, yv[2] = {5, 7};
    otc_id x = vec(g, 2, xv), y = vec(g, 2, yv);
    otc_id loss = otc_sum(g, otc_mul(g, otc_detach(g, x), y));
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    const float *gx, *gy;
    REQUIRE(otc_exec_grad(ex, x, &gx) == OTC_OK);
    REQUIRE(otc_exec_grad(ex, y, &gy) == OTC_OK);
    CHECK(gx[0] == 0 && gx[1] == 0);
    CHECK_NEAR(gy[0], 2, 1e-6);
    CHECK_NEAR(gy[1], 3, 1e-6);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* An inference executor runs forward but keeps no gradient state. */
TEST(autograd_inference_mode) {
    otc_graph *g = otc_graph_new();
    const float xv[2] = {2, 3};
    otc_id x = vec(g, 2, xv);
    otc_id loss = otc_sum(g, otc_mul(g, x, x));
    otc_exec_options opt = {.inference = true};
    otc_executor *ex = otc_interpreter_new(g, &opt);
    REQUIRE(ex);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    const float *v;
    REQUIRE(otc_exec_value(ex, loss, &v, NULL) == OTC_OK);
    CHECK_NEAR(v[0], 13, 1e-6);
    CHECK(otc_exec_backward(ex, loss) == OTC_ERR_STATE);
    CHECK(strstr(otc_last_error(), "inference") != NULL);
    CHECK(otc_exec_grad(ex, x, &v) == OTC_ERR_STATE);
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_SGD);
    otc_optimizer *o = otc_optimizer_new(&cfg);
    REQUIRE(o);
    CHECK(otc_exec_train_step(ex, loss, o, NULL) == OTC_ERR_STATE);
    otc_exec_zero_grad(ex); /* harmless */
    otc_optimizer_free(o);
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(autograd_backward_needs_scalar) {
    otc_graph *g = otc_graph_new();
    const float xv[3] = {1, 2, 3};
    otc_id x = vec(g, 3, xv);
    otc_id y = otc_scale(g, x, 2.0f);
    otc_id in = otc_input(g, "in", otc_shape_2d(OTC_BATCH, 1));
    otc_id col = otc_add(g, in, in); /* [B,1]: one value at batch 1 only */
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    const float one[2] = {1, 2};
    REQUIRE(otc_exec_set_input(ex, in, one, 2) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    CHECK(otc_exec_backward(ex, y) == OTC_ERR_SHAPE);
    CHECK(strstr(otc_last_error(), "[3]") != NULL);
    CHECK(otc_exec_backward(ex, col) == OTC_ERR_SHAPE);
    CHECK(otc_exec_backward(ex, 1000) == OTC_ERR_ARG);
    /* no parameter behind it: nothing to do, not an error */
    REQUIRE(otc_exec_set_input(ex, in, one, 1) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    CHECK(otc_exec_backward(ex, col) == OTC_OK);
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(autograd_backward_before_forward) {
    otc_graph *g = otc_graph_new();
    const float xv[1] = {1};
    otc_id x = vec(g, 1, xv);
    otc_id loss = otc_sum(g, x);
    otc_id in = otc_input(g, "in", otc_shape_1d(1));
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    CHECK(otc_exec_backward(ex, loss) == OTC_ERR_STATE);
    REQUIRE(otc_exec_set_input(ex, in, xv, 1) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    CHECK(otc_exec_backward(ex, loss) == OTC_OK);
    /* new inputs invalidate the values until the next forward */
    REQUIRE(otc_exec_set_input(ex, in, xv, 1) == OTC_OK);
    CHECK(otc_exec_backward(ex, loss) == OTC_ERR_STATE);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Nodes rewired so that a lower id consumes a higher one: the executor must follow the
 * topological order, not the id order, forward and backward. */
TEST(autograd_topological_order) {
    otc_graph *g = otc_graph_new();
    const float pv[2] = {1, -2};
    otc_id p = vec(g, 2, pv);          /* #0 */
    otc_id a1 = otc_neg(g, p);         /* #1, rewired to neg(a2) */
    otc_id a2 = otc_scale(g, p, 1.0f); /* #2, rewired to scale(c, 1) */
    otc_id c = otc_scale(g, p, 3.0f);  /* #3 = 3p */
    REQUIRE(otc_graph_set_input(g, a2, 0, c) == OTC_OK);
    REQUIRE(otc_graph_set_input(g, a1, 0, a2) == OTC_OK);
    otc_id loss = otc_sum(g, otc_mul(g, a1, a1)); /* sum(9 p^2) */
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    const float *v;
    REQUIRE(otc_exec_value(ex, a1, &v, NULL) == OTC_OK);
    CHECK_NEAR(v[0], -3, 1e-6);
    CHECK_NEAR(v[1], 6, 1e-6);
    REQUIRE(otc_exec_value(ex, loss, &v, NULL) == OTC_OK);
    CHECK_NEAR(v[0], 45, 1e-5);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    const float *gp;
    REQUIRE(otc_exec_grad(ex, p, &gp) == OTC_OK);
    CHECK_NEAR(gp[0], 18 * pv[0], 1e-5);
    CHECK_NEAR(gp[1], 18 * pv[1], 1e-5);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* A cycle without a delay is rejected when the executor is built, with the cycle named. */
TEST(autograd_cycle_rejected) {
    otc_graph *g = otc_graph_new();
    const float pv[1] = {1};
    otc_id p = vec(g, 1, pv);
    otc_id a = otc_neg(g, p);
    otc_id b = otc_neg(g, a);
    REQUIRE(otc_graph_set_name(g, a, "first") == OTC_OK);
    REQUIRE(otc_graph_set_name(g, b, "second") == OTC_OK);
    REQUIRE(otc_graph_set_input(g, a, 0, b) == OTC_OK);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    CHECK(ex == NULL);
    const char *msg = otc_last_error();
    CHECK_MSG(strstr(msg, "first") && strstr(msg, "second"), "message: %s", msg);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* A recurrent accumulator through a Delay: h_t = x_t + h_{t-1}. The state carries across
 * forwards, resets on demand, and gradient does not cross a step. */
TEST(autograd_delay_state) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id d = otc_delay(g, "h_prev", otc_shape_2d(OTC_BATCH, 1));
    const float wv[1] = {1.0f};
    otc_id w = otc_param(g, "w", otc_shape_2d(1, 1), wv);
    otc_id h = otc_add(g, otc_matmul(g, x, w), d);
    REQUIRE(otc_graph_set_input(g, d, 0, h) == OTC_OK);
    otc_id loss = otc_sum(g, h);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    const float xs[2] = {1, 10};
    REQUIRE(otc_exec_set_input(ex, x, xs, 2) == OTC_OK);
    const float *v;
    for (int t = 1; t <= 3; t++) {
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        REQUIRE(otc_exec_value(ex, h, &v, NULL) == OTC_OK);
        CHECK_NEAR(v[0], t * 1.0, 1e-6);
        CHECK_NEAR(v[1], t * 10.0, 1e-5);
    }
    /* d(loss)/dw sees only this step's x (the delay output is a constant). */
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    const float *gw;
    REQUIRE(otc_exec_grad(ex, w, &gw) == OTC_OK);
    CHECK_NEAR(gw[0], 11.0, 1e-5);
    otc_exec_reset_state(ex);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_value(ex, h, &v, NULL) == OTC_OK);
    CHECK_NEAR(v[0], 1.0, 1e-6);
    CHECK_NEAR(v[1], 10.0, 1e-6);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_value(ex, d, &v, NULL) == OTC_OK);
    CHECK_NEAR(v[0], 1.0, 1e-6);
    /* a new batch size starts from zeros */
    REQUIRE(otc_exec_set_input(ex, x, xs, 1) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_value(ex, h, &v, NULL) == OTC_OK);
    CHECK_NEAR(v[0], 1.0, 1e-6);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Two delays in a chain give a two-step delay; an unconnected delay holds zeros. */
TEST(autograd_delay_chain) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_1d(1));
    otc_id d1 = otc_delay(g, "d1", otc_shape_1d(1));
    otc_id d2 = otc_delay(g, "d2", otc_shape_1d(1));
    otc_id lone = otc_delay(g, "lone", otc_shape_1d(1));
    REQUIRE(otc_graph_set_input(g, d1, 0, x) == OTC_OK);
    REQUIRE(otc_graph_set_input(g, d2, 0, d1) == OTC_OK);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    const float want_d2[5] = {0, 0, 1, 2, 3};
    for (int t = 0; t < 5; t++) {
        float xv = (float)(t + 1);
        REQUIRE(otc_exec_set_input(ex, x, &xv, 1) == OTC_OK);
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        const float *v;
        REQUIRE(otc_exec_value(ex, d1, &v, NULL) == OTC_OK);
        CHECK_NEAR(v[0], t, 0);
        REQUIRE(otc_exec_value(ex, d2, &v, NULL) == OTC_OK);
        CHECK_NEAR(v[0], want_d2[t], 0);
        REQUIRE(otc_exec_value(ex, lone, &v, NULL) == OTC_OK);
        CHECK(v[0] == 0);
    }
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Frozen parameters still get a gradient (for inspection); parameters that do not reach
 * the loss keep zeros. */
TEST(autograd_frozen_and_unused_params) {
    otc_graph *g = otc_graph_new();
    const float av[2] = {1, 2}, bv[2] = {3, 4};
    otc_id a = vec(g, 2, av), b = vec(g, 2, bv), unused = vec(g, 2, av);
    REQUIRE(otc_graph_set_trainable(g, b, false) == OTC_OK);
    otc_id loss = otc_sum(g, otc_mul(g, a, b));
    otc_id other = otc_sum(g, unused);
    REQUIRE(other >= 0);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    const float *gb, *gu;
    REQUIRE(otc_exec_grad(ex, b, &gb) == OTC_OK);
    REQUIRE(otc_exec_grad(ex, unused, &gu) == OTC_OK);
    CHECK_NEAR(gb[0], 1, 0);
    CHECK_NEAR(gb[1], 2, 0);
    CHECK(gu[0] == 0 && gu[1] == 0);
    CHECK(otc_exec_grad(ex, loss, &gb) == OTC_ERR_ARG); /* not a parameter */
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Parameter gradients survive a change of batch size (they do not depend on it). */
TEST(autograd_grad_across_batches) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    const float wv[2] = {0.5f, -1};
    otc_id w = otc_param(g, "w", otc_shape_2d(2, 1), wv);
    otc_id loss = otc_sum(g, otc_matmul(g, x, w));
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    const float xs[6] = {1, 2, 3, 4, 5, 6};
    REQUIRE(otc_exec_set_input(ex, x, xs, 3) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, x, xs, 1) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    const float *gw;
    REQUIRE(otc_exec_grad(ex, w, &gw) == OTC_OK);
    CHECK_NEAR(gw[0], (1 + 3 + 5) + 1, 1e-5);
    CHECK_NEAR(gw[1], (2 + 4 + 6) + 2, 1e-5);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Accumulation also holds on the sgemm path (16 x 8 x 8 is above the cut-off):
 * loss = sum(A W) gives dA[i,k] = sum_j W[k,j] and dW[k,j] = sum_i A[i,k]. */
TEST(autograd_accumulates_blas) {
    enum { M = 16, K = 8, N = 8 };
    otc_graph *g = otc_graph_new();
    float av[M * K], wv[K * N];
    for (int i = 0; i < M * K; i++) av[i] = (float)((i * 5) % 7) - 3.0f;
    for (int i = 0; i < K * N; i++) wv[i] = (float)((i * 3) % 5) - 2.0f;
    otc_id a = otc_param(g, "A", otc_shape_2d(M, K), av);
    otc_id w = otc_param(g, "W", otc_shape_2d(K, N), wv);
    otc_id loss = otc_sum(g, otc_matmul(g, a, w));
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
    const float *ga, *gw;
    REQUIRE(otc_exec_grad(ex, a, &ga) == OTC_OK);
    REQUIRE(otc_exec_grad(ex, w, &gw) == OTC_OK);
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++) {
            double s = 0;
            for (int j = 0; j < N; j++) s += wv[k * N + j];
            CHECK_NEAR(ga[i * K + k], 2 * s, 1e-4);
        }
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int i = 0; i < M; i++) s += av[i * K + k];
            CHECK_NEAR(gw[k * N + j], 2 * s, 1e-4);
        }
    otc_exec_free(ex);
    otc_graph_free(g);
}
