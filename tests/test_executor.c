/* The executor API on every backend (BACKEND_TEST: the interpreter, the JIT, the emitted C):
 * inputs and batches, values, errors named by node, parameters written from outside, and
 * the training step. Graphs mark what tests read as outputs: compiled backends compute
 * outputs (and the loss), not every node. */
#include "backend_support.h"
#include "neat_python_ref.h"

BACKEND_TEST(exec_backend_and_graph) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    REQUIRE(otc_graph_mark_output(g, otc_neg(g, x)) == OTC_OK);
    otc_executor *ex = bk_new(k, g, NULL);
    REQUIRE_EX(ex);
    CHECK(strcmp(otc_exec_backend(ex), k->name) == 0);
    CHECK(otc_exec_graph(ex) == g);
    const float one = 1;
    CHECK(otc_exec_set_input(ex, x, &one, 1) == OTC_OK);
    CHECK(otc_exec_forward(ex) == OTC_OK);
    CHECK(otc_exec_sync_params(ex) == OTC_OK);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* The interpreter runs an empty graph; compiled backends have nothing to compile and say
 * so (at creation or at forward). */
BACKEND_TEST(exec_empty_graph) {
    otc_graph *g = otc_graph_new();
    otc_executor *ex = bk_new(k, g, NULL);
    otc_status st = ex ? otc_exec_forward(ex) : OTC_ERR_ARG;
    if (bk_compiled(k)) {
        CHECK(st != OTC_OK);
        const char *msg = otc_last_error();
        CHECK_MSG(strstr(msg, "output") || strstr(msg, "empty"), "message: %s", msg);
    } else {
        CHECK(st == OTC_OK);
    }
    otc_exec_free(ex);
    otc_graph_free(g);
}

BACKEND_TEST(exec_null_arguments) {
    CHECK(bk_new(k, NULL, NULL) == NULL);
    CHECK(otc_exec_forward(NULL) == OTC_ERR_ARG);
    CHECK(otc_exec_backward(NULL, 0) == OTC_ERR_ARG);
    CHECK(otc_exec_set_input(NULL, 0, NULL, 1) == OTC_ERR_ARG);
    CHECK(otc_exec_graph(NULL) == NULL);
    otc_exec_free(NULL);
    otc_exec_zero_grad(NULL);
    otc_exec_reset_state(NULL);
}

BACKEND_TEST(exec_set_input_errors) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id y = otc_neg(g, x);
    REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
    otc_executor *ex = bk_new(k, g, NULL);
    REQUIRE_EX(ex);
    const float d[2] = {1, 2};
    CHECK(otc_exec_set_input(ex, y, d, 1) == OTC_ERR_ARG);
    CHECK(otc_exec_set_input(ex, 99, d, 1) == OTC_ERR_ARG);
    CHECK(otc_exec_set_input(ex, x, NULL, 1) == OTC_ERR_ARG);
    CHECK(otc_exec_set_input(ex, x, d, 0) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "'x'") != NULL);
    otc_exec_free(ex);
    otc_graph_free(g);
}

BACKEND_TEST(exec_unset_input_named) {
    otc_graph *g = otc_graph_new();
    otc_id a = otc_input(g, "alpha", otc_shape_2d(OTC_BATCH, 2));
    otc_id b = otc_input(g, "beta", otc_shape_2d(OTC_BATCH, 2));
    otc_id y = otc_add(g, a, b);
    REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
    otc_executor *ex = bk_new(k, g, NULL);
    REQUIRE_EX(ex);
    const float d[2] = {1, 2};
    REQUIRE(otc_exec_set_input(ex, a, d, 1) == OTC_OK);
    CHECK(otc_exec_forward(ex) == OTC_ERR_STATE);
    CHECK_MSG(strstr(otc_last_error(), "beta") != NULL, "message: %s", otc_last_error());
    otc_exec_free(ex);
    otc_graph_free(g);
}

BACKEND_TEST(exec_batch_mismatch_named) {
    otc_graph *g = otc_graph_new();
    otc_id a = otc_input(g, "alpha", otc_shape_2d(OTC_BATCH, 1));
    otc_id b = otc_input(g, "beta", otc_shape_2d(OTC_BATCH, 1));
    otc_id y = otc_add(g, a, b);
    REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
    otc_executor *ex = bk_new(k, g, NULL);
    REQUIRE_EX(ex);
    const float d[3] = {1, 2, 3};
    REQUIRE(otc_exec_set_input(ex, a, d, 3) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, b, d, 2) == OTC_OK);
    CHECK(otc_exec_forward(ex) != OTC_OK);
    const char *msg = otc_last_error();
    CHECK_MSG(strstr(msg, "alpha") && strstr(msg, "beta"), "message: %s", msg);
    REQUIRE(otc_exec_set_input(ex, b, d, 3) == OTC_OK);
    CHECK(otc_exec_forward(ex) == OTC_OK);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* A small MLP, y = tanh(x W1 + b1) W2 + b2, against a direct computation, at batch sizes that
 * grow, shrink and repeat (buffers re-laid out each time). */
BACKEND_TEST(exec_batch_changes) {
    enum { IN = 3, HID = 4, OUT = 2, MAXB = 6 };
    otc_graph *g = otc_graph_new();
    float w1[IN * HID], b1[HID], w2[HID * OUT], b2[OUT], xs[MAXB * IN];
    for (int i = 0; i < IN * HID; i++) w1[i] = (float)((i * 7) % 5) / 5.0f - 0.4f;
    for (int i = 0; i < HID; i++) b1[i] = 0.1f * (float)i - 0.15f;
    for (int i = 0; i < HID * OUT; i++) w2[i] = (float)((i * 3) % 7) / 7.0f - 0.5f;
    for (int i = 0; i < OUT; i++) b2[i] = 0.25f * (float)i;
    for (int i = 0; i < MAXB * IN; i++) xs[i] = (float)((i * 11) % 9) / 9.0f - 0.5f;
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, IN));
    otc_id W1 = otc_param(g, "w1", otc_shape_2d(IN, HID), w1);
    otc_id B1 = otc_param(g, "b1", otc_shape_1d(HID), b1);
    otc_id W2 = otc_param(g, "w2", otc_shape_2d(HID, OUT), w2);
    otc_id B2 = otc_param(g, "b2", otc_shape_1d(OUT), b2);
    otc_id h = otc_matmul(g, x, W1);
    h = otc_activation(g, OTC_OP_TANH, otc_add(g, h, otc_row_broadcast(g, B1, h)), 0);
    otc_id y = otc_matmul(g, h, W2);
    y = otc_add(g, y, otc_row_broadcast(g, B2, y));
    REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
    otc_executor *ex = bk_new(k, g, NULL);
    REQUIRE_EX(ex);
    const int batches[5] = {2, 5, 1, 6, 2};
    for (int run = 0; run < 5; run++) {
        int nb = batches[run];
        REQUIRE(otc_exec_set_input(ex, x, xs, nb) == OTC_OK);
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        const float *v;
        otc_shape s;
        REQUIRE(otc_exec_value(ex, y, &v, &s) == OTC_OK);
        CHECK(s.ndim == 2 && s.dim[0] == nb && s.dim[1] == OUT);
        for (int r = 0; r < nb; r++) {
            double hid[HID];
            for (int j = 0; j < HID; j++) {
                double acc = b1[j];
                for (int i = 0; i < IN; i++) acc += (double)xs[r * IN + i] * w1[i * HID + j];
                hid[j] = tanh(acc);
            }
            for (int o = 0; o < OUT; o++) {
                double acc = b2[o];
                for (int j = 0; j < HID; j++) acc += hid[j] * w2[j * OUT + o];
                CHECK_NEAR(v[r * OUT + o], acc, 1e-5);
            }
        }
    }
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* An unbatched input keeps its size whatever the batch of the others. Compiled inputs are
 * per-sample: there the plan refuses the graph, naming the input. */
BACKEND_TEST(exec_unbatched_input) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id off = otc_input(g, "offset", otc_shape_1d(2));
    otc_id y = otc_add(g, x, otc_row_broadcast(g, off, x));
    REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
    otc_executor *ex = bk_new(k, g, NULL);
    if (bk_compiled(k)) {
        bk_not_applicable(k, "compiled inputs are per-sample; checking the refusal instead");
        CHECK(ex == NULL);
        CHECK_MSG(strstr(otc_last_error(), "'offset'") && strstr(otc_last_error(), "per-sample"),
                  "message: %s", otc_last_error());
        otc_exec_free(ex);
        otc_graph_free(g);
        return;
    }
    REQUIRE_EX(ex);
    const float xs[4] = {1, 2, 3, 4}, o[2] = {10, 20};
    REQUIRE(otc_exec_set_input(ex, x, xs, 2) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, off, o, 7) == OTC_OK); /* batch ignored */
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    const float *v;
    REQUIRE(otc_exec_value(ex, y, &v, NULL) == OTC_OK);
    CHECK(v[0] == 11 && v[1] == 22 && v[2] == 13 && v[3] == 24);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* set_input copies: the caller's buffer may change afterwards. */
BACKEND_TEST(exec_input_is_copied) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id y = otc_scale(g, x, 2.0f);
    REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
    otc_executor *ex = bk_new(k, g, NULL);
    REQUIRE_EX(ex);
    float buf[2] = {1, 2};
    REQUIRE(otc_exec_set_input(ex, x, buf, 2) == OTC_OK);
    buf[0] = 100;
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    const float *v;
    REQUIRE(otc_exec_value(ex, y, &v, NULL) == OTC_OK);
    CHECK(v[0] == 2 && v[1] == 4);
    otc_exec_free(ex);
    otc_graph_free(g);
}

BACKEND_TEST(exec_value_errors) {
    otc_graph *g = otc_graph_new();
    const float p[1] = {1.5f}, xs[1] = {2};
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id a = otc_param(g, "a", otc_shape_1d(1), p);
    otc_id y = otc_add(g, x, otc_row_broadcast(g, a, x));
    REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
    otc_executor *ex = bk_new(k, g, NULL);
    REQUIRE_EX(ex);
    const float *v;
    CHECK(otc_exec_value(ex, y, &v, NULL) == OTC_ERR_STATE);
    REQUIRE(otc_exec_set_input(ex, x, xs, 1) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    CHECK(otc_exec_value(ex, a, &v, NULL) == OTC_OK && v[0] == 1.5f);
    CHECK(otc_exec_value(ex, y, &v, NULL) == OTC_OK && v[0] == 3.5f);
    CHECK(otc_exec_value(ex, -1, &v, NULL) == OTC_ERR_ARG);
    CHECK(otc_exec_value(ex, 5, &v, NULL) == OTC_ERR_ARG);
    CHECK(otc_exec_value(ex, a, NULL, NULL) == OTC_ERR_ARG);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* The interpreter reads parameters from the graph on every forward, so writes through
 * otc_graph_param show up. Compiled backends read them when the executor is made (jit.h):
 * there a new executor sees the write. */
BACKEND_TEST(exec_param_write_visible) {
    otc_graph *g = otc_graph_new();
    const float p[2] = {1, 2}, zeros[2] = {0, 0};
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id a = otc_param(g, "a", otc_shape_1d(2), p);
    otc_id s = otc_add(g, x, otc_row_broadcast(g, a, x));
    REQUIRE(otc_graph_mark_output(g, s) == OTC_OK);
    otc_executor *ex = bk_new(k, g, NULL);
    REQUIRE_EX(ex);
    const float *v;
    REQUIRE(otc_exec_set_input(ex, x, zeros, 1) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_value(ex, s, &v, NULL) == OTC_OK);
    CHECK(v[0] == 1 && v[1] == 2);
    otc_graph_param(g, a)->data[1] = 10;
    if (bk_compiled(k)) {
        bk_not_applicable(k, "compiled backends copy the weights when the executor is made; "
                             "checking that a new executor sees the write");
        otc_exec_free(ex);
        ex = bk_new(k, g, NULL);
        REQUIRE_EX(ex);
        REQUIRE(otc_exec_set_input(ex, x, zeros, 1) == OTC_OK);
    }
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_value(ex, s, &v, NULL) == OTC_OK);
    CHECK(v[0] == 1 && v[1] == 10);
    otc_exec_free(ex);
    otc_graph_free(g);
}

BACKEND_TEST(exec_graph_changed) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    REQUIRE(otc_graph_mark_output(g, otc_neg(g, x)) == OTC_OK);
    otc_executor *ex = bk_new(k, g, NULL);
    REQUIRE_EX(ex);
    const float one = 1;
    REQUIRE(otc_exec_set_input(ex, x, &one, 1) == OTC_OK);
    REQUIRE(otc_neg(g, x) >= 0);
    CHECK(otc_exec_forward(ex) == OTC_ERR_STATE);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* One plain SGD step, computed by hand: loss = mean((x w + b - t)^2). */
BACKEND_TEST(exec_train_step_sgd) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id t = otc_input(g, "t", otc_shape_2d(OTC_BATCH, 1));
    const float wv[1] = {0.5f}, bv[1] = {0.25f};
    otc_id w = otc_param(g, "w", otc_shape_2d(1, 1), wv);
    otc_id b = otc_param(g, "b", otc_shape_1d(1), bv);
    otc_id y = otc_matmul(g, x, w);
    y = otc_add(g, y, otc_row_broadcast(g, b, y));
    otc_id loss = otc_mse(g, y, t);
    REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_SGD);
    cfg.lr = 0.1f;
    cfg.momentum = 0;
    cfg.weight_decay = 0;
    otc_executor *ex = bk_new(k, g, &(bk_options){.loss = loss, .optim = &cfg});
    REQUIRE_EX(ex);
    const float xs[2] = {1, 2}, ts[2] = {2, 3};
    REQUIRE(otc_exec_set_input(ex, x, xs, 2) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, t, ts, 2) == OTC_OK);
    otc_optimizer *opt = otc_optimizer_new(&cfg);
    REQUIRE(opt);
    float lv = -1;
    REQUIRE(otc_exec_train_step(ex, loss, opt, &lv) == OTC_OK);
    REQUIRE(otc_exec_sync_params(ex) == OTC_OK); /* compiled backends train their own copy */
    /* y = (0.75, 1.25), e = y - t = (-1.25, -1.75); loss = (1.5625 + 3.0625) / 2 = 2.3125;
     * dL/dw = mean(2 e x) = (-2.5 - 7) / 2 = -4.75; dL/db = mean(2 e) = -3. */
    CHECK_NEAR(lv, 2.3125, 1e-6);
    CHECK_NEAR(otc_graph_param(g, w)->data[0], 0.5 + 0.475, 1e-6);
    CHECK_NEAR(otc_graph_param(g, b)->data[0], 0.25 + 0.3, 1e-6);
    const float *gw;
    REQUIRE(otc_exec_grad(ex, w, &gw) == OTC_OK);
    CHECK_NEAR(gw[0], -4.75, 1e-6);
    /* the next step starts from zeroed gradients */
    REQUIRE(otc_exec_train_step(ex, loss, opt, &lv) == OTC_OK);
    REQUIRE(otc_exec_grad(ex, w, &gw) == OTC_OK);
    double w1 = 0.975, b1 = 0.55;
    double e0 = w1 * 1 + b1 - 2, e1 = w1 * 2 + b1 - 3;
    CHECK_NEAR(gw[0], (2 * e0 * 1 + 2 * e1 * 2) / 2, 1e-5);
    CHECK(otc_exec_train_step(ex, loss, NULL, &lv) == OTC_ERR_ARG);
    otc_optimizer_free(opt);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Training fits y = 2x - 1 with Adam; a frozen parameter never moves. */
BACKEND_TEST(exec_train_step_learns) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id t = otc_input(g, "t", otc_shape_2d(OTC_BATCH, 1));
    const float zero[1] = {0}, frozen_v[1] = {1};
    otc_id w = otc_param(g, "w", otc_shape_2d(1, 1), zero);
    otc_id b = otc_param(g, "b", otc_shape_1d(1), zero);
    otc_id f = otc_param(g, "frozen", otc_shape_2d(1, 1), frozen_v);
    REQUIRE(otc_graph_set_trainable(g, f, false) == OTC_OK);
    otc_id y = otc_matmul(g, otc_matmul(g, x, w), f);
    y = otc_add(g, y, otc_row_broadcast(g, b, y));
    otc_id loss = otc_mse(g, y, t);
    REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_ADAM);
    cfg.lr = 0.05f;
    otc_executor *ex = bk_new(k, g, &(bk_options){.loss = loss, .optim = &cfg});
    REQUIRE_EX(ex);
    float xs[8], ts[8];
    for (int i = 0; i < 8; i++) {
        xs[i] = (float)i / 4.0f - 1.0f;
        ts[i] = 2 * xs[i] - 1;
    }
    REQUIRE(otc_exec_set_input(ex, x, xs, 8) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, t, ts, 8) == OTC_OK);
    otc_optimizer *opt = otc_optimizer_new(&cfg);
    REQUIRE(opt);
    float first = 0, lv = 0;
    for (int step = 0; step < 500; step++) {
        REQUIRE(otc_exec_train_step(ex, loss, opt, &lv) == OTC_OK);
        if (step == 0) first = lv;
    }
    CHECK(lv < 1e-3f * first);
    REQUIRE(otc_exec_sync_params(ex) == OTC_OK);
    CHECK_NEAR(otc_graph_param(g, w)->data[0], 2, 0.05);
    CHECK_NEAR(otc_graph_param(g, b)->data[0], -1, 0.05);
    CHECK(otc_graph_param(g, f)->data[0] == 1.0f);
    otc_optimizer_free(opt);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* A NEAT-style net run at batch 1 many times: the result is the same every time. */
BACKEND_TEST(exec_repeat_batch1) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    const float w[2] = {0.7f, -0.3f};
    otc_id h =
        otc_neuron(g, "h", OTC_ACT_SIGMOID, 0.1f, 1.0f, 2, (otc_id[]){x, x}, (int[]){0, 1}, w);
    otc_id o = otc_neuron(g, "o", OTC_ACT_TANH, -0.2f, 2.0f, 2, (otc_id[]){h, x}, (int[]){0, 1}, w);
    REQUIRE(otc_graph_mark_output(g, o) == OTC_OK);
    otc_executor *ex = bk_new(k, g, &(bk_options){.inference = true, .loss = -1});
    REQUIRE_EX(ex);
    const float in[2] = {0.5f, -1.0f};
    double hv = 1 / (1 + exp(-(0.1 + 0.7 * 0.5 + 0.3))), want = tanh(-0.2 + 2 * (0.7 * hv + 0.3));
    for (int i = 0; i < 1000; i++) {
        REQUIRE(otc_exec_set_input(ex, x, in, 1) == OTC_OK);
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
    }
    const float *v;
    REQUIRE(otc_exec_value(ex, o, &v, NULL) == OTC_OK);
    CHECK_NEAR(v[0], want, 1e-6);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* A recurrent accumulator through a Delay, h_t = x_t + h_{t-1}: every backend steps and
 * resets it (the compilers keep the state in the workspace, plan.h). */
BACKEND_TEST(exec_delay_state) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id d = otc_delay(g, "h_prev", otc_shape_2d(OTC_BATCH, 1));
    otc_id h = otc_add(g, x, d);
    REQUIRE(otc_graph_set_input(g, d, 0, h) == OTC_OK);
    REQUIRE(otc_graph_mark_output(g, h) == OTC_OK);
    otc_executor *ex = bk_new(k, g, NULL);
    const float xs[2] = {1, 10};
    REQUIRE_EX(ex);
    REQUIRE(otc_exec_set_input(ex, x, xs, 2) == OTC_OK);
    const float *v;
    for (int t = 1; t <= 3; t++) {
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        REQUIRE(otc_exec_value(ex, h, &v, NULL) == OTC_OK);
        CHECK_NEAR(v[0], t * 1.0, 1e-6);
        CHECK_NEAR(v[1], t * 10.0, 1e-5);
    }
    otc_exec_reset_state(ex);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_value(ex, h, &v, NULL) == OTC_OK);
    CHECK_NEAR(v[1], 10.0, 1e-6);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* value(loss) after a forward, with the loss named when the executor is made (jit.h: the
 * forward then runs the training plan), and an output the loss does not read. By hand:
 * y = 2x, loss = mean((x - t)^2) = ((1 - 0)^2 + (2 - 4)^2) / 2 = 2.5. */
BACKEND_TEST(exec_loss_after_forward) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id t = otc_input(g, "t", otc_shape_2d(OTC_BATCH, 1));
    const float wv[1] = {1};
    otc_id w = otc_param(g, "w", otc_shape_2d(1, 1), wv);
    otc_id p = otc_matmul(g, x, w);
    otc_id loss = otc_mse(g, p, t);
    otc_id y = otc_scale(g, x, 2.0f);
    REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
    otc_executor *ex = bk_new(k, g, &(bk_options){.loss = loss});
    REQUIRE_EX(ex);
    const float xs[2] = {1, 2}, ts[2] = {0, 4};
    REQUIRE(otc_exec_set_input(ex, x, xs, 2) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, t, ts, 2) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    const float *v;
    REQUIRE(otc_exec_value(ex, y, &v, NULL) == OTC_OK);
    CHECK(v[0] == 2 && v[1] == 4);
    otc_status st = otc_exec_value(ex, loss, &v, NULL);
    CHECK_MSG(st == OTC_OK, "%s", otc_last_error());
    if (st == OTC_OK) CHECK_NEAR(v[0], 2.5, 1e-6);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Every op the compilers lower, forward, against values computed here in double from the
 * ops' definitions: elementwise arithmetic, all activations, matmul, row broadcast, concat,
 * slice, select (of a reshape), softmax, log_softmax, sum and mean, the three losses (each
 * broadcast to a per-sample output, which compiled outputs must be) and a steep-sigmoid
 * neuron. Inputs x, z [2,4]; tolerance 2e-5 relative (the compilers' own exp/tanh/log). */
enum { OPS_B = 2, OPS_N = 4, OPS_MAX = 60 };
static const double ops_x[OPS_B][OPS_N] = {{0.5, -1.2, 2.0, -0.3}, {1.1, 0.4, -0.7, 1.6}};
static const double ops_z[OPS_B][OPS_N] = {{1.5, 0.8, -2.0, 0.6}, {-0.9, 2.5, 1.3, -1.1}};
static const double ops_w[OPS_N][3] = {
    {0.2, -0.5, 1.0}, {0.7, 0.1, -0.3}, {-1.1, 0.4, 0.6}, {0.3, 0.9, -0.8}};
static const float ops_labels[OPS_B] = {2, 0};

static double sigm(double v) {
    return 1.0 / (1.0 + exp(-v));
}

static double act_ref(otc_op op, double v) {
    switch (op) {
    case OTC_OP_SIGMOID:
        return sigm(v);
    case OTC_OP_TANH:
        return tanh(v);
    case OTC_OP_RELU:
        return v > 0 ? v : 0;
    case OTC_OP_LEAKY_RELU:
        return v > 0 ? v : 0.1 * v;
    case OTC_OP_SOFTPLUS:
        return log1p(exp(v));
    case OTC_OP_ELU:
        return v > 0 ? v : 0.8 * expm1(v);
    case OTC_OP_GAUSSIAN:
        return exp(-v * v);
    case OTC_OP_SIN:
        return sin(v);
    case OTC_OP_ABS:
        return fabs(v);
    case OTC_OP_STEEP_SIGMOID: /* NEAT's: the slope 4.9 */
        return sigm(4.9 * v);
    case OTC_OP_IDENTITY:
        return v;
    case OTC_OP_SQRT:
        return sqrt(v); /* NaN below 0 */
    case OTC_OP_COS:
        return cos(v);
    case OTC_OP_RECIPROCAL:
        return 1.0 / v;
    default:
        break;
    }
    /* neat-python's: np_<name> and the new names are neat-python's names (neat_python_ref.h). */
    const char *name = otc_op_get(op)->name;
    return np_ref_act(strncmp(name, "np_", 3) ? name : name + 3, v);
}

/* log(sum(exp(row))) of a row of x. */
static double ops_lse(int b) {
    double s = 0;
    for (int e = 0; e < OPS_N; e++) s += exp(ops_x[b][e]);
    return log(s);
}

typedef struct {
    otc_id id;
    int width;
    double want[OPS_B][2 * OPS_N];
} ops_out;

static ops_out *ops_add(ops_out *outs, int *n, otc_id id, int width) {
    ops_out *o = &outs[(*n)++];
    o->id = id;
    o->width = width;
    return o;
}

BACKEND_TEST(exec_ops_forward) {
    static ops_out outs[OPS_MAX];
    int n = 0;
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, OPS_N));
    otc_id z = otc_input(g, "z", otc_shape_2d(OTC_BATCH, OPS_N));
    otc_id lab = otc_input(g, "labels", otc_shape_1d(OTC_BATCH));
    float wf[OPS_N * 3], bf[OPS_N] = {0.25f, -0.5f, 1.5f, 2.0f};
    for (int i = 0; i < OPS_N * 3; i++) wf[i] = (float)ops_w[i / 3][i % 3];
    otc_id W = otc_param(g, "W", otc_shape_2d(OPS_N, 3), wf);
    otc_id bias = otc_param(g, "bias", otc_shape_1d(OPS_N), bf);
    otc_id col = otc_slice(g, x, 1, 0, 1); /* [B,1]: the shape scalars are broadcast to */
    double sum = 0, mse = 0, bce = 0, ce = 0;
    for (int b = 0; b < OPS_B; b++) {
        for (int e = 0; e < OPS_N; e++) {
            double d = ops_x[b][e] - ops_z[b][e], p = sigm(ops_x[b][e]), t = sigm(ops_z[b][e]);
            sum += ops_x[b][e];
            mse += d * d / (OPS_B * OPS_N);
            bce -= (t * log(p) + (1 - t) * log(1 - p)) / (OPS_B * OPS_N);
        }
        ce += (ops_lse(b) - ops_x[b][(int)ops_labels[b]]) / OPS_B;
    }
    otc_id ew[7] = {otc_add(g, x, z), otc_sub(g, x, z),      otc_mul(g, x, z), otc_div(g, x, z),
                    otc_neg(g, x),    otc_scale(g, x, 0.7f), otc_detach(g, x)};
    for (int i = 0; i < 7; i++) {
        ops_out *o = ops_add(outs, &n, ew[i], OPS_N);
        for (int b = 0; b < OPS_B; b++)
            for (int e = 0; e < OPS_N; e++) {
                double a = ops_x[b][e], c = ops_z[b][e];
                const double r[7] = {a + c, a - c, a * c, a / c, -a, 0.7 * a, a};
                o->want[b][e] = r[i];
            }
    }
    for (otc_op op = OTC_OP_SIGMOID; op <= OTC_OP_IDENTITY; op++) {
        float alpha = op == OTC_OP_LEAKY_RELU ? 0.1f : op == OTC_OP_ELU ? 0.8f : 0.0f;
        ops_out *o = ops_add(outs, &n, otc_activation(g, op, x, alpha), OPS_N);
        for (int b = 0; b < OPS_B; b++)
            for (int e = 0; e < OPS_N; e++) o->want[b][e] = act_ref(op, ops_x[b][e]);
    }
    ops_out *o = ops_add(outs, &n, otc_matmul(g, x, W), 3);
    for (int b = 0; b < OPS_B; b++)
        for (int j = 0; j < 3; j++) {
            o->want[b][j] = 0;
            for (int e = 0; e < OPS_N; e++) o->want[b][j] += ops_x[b][e] * ops_w[e][j];
        }
    o = ops_add(outs, &n, otc_row_broadcast(g, bias, x), OPS_N);
    for (int b = 0; b < OPS_B; b++)
        for (int e = 0; e < OPS_N; e++) o->want[b][e] = bf[e];
    o = ops_add(outs, &n, otc_concat(g, 2, (otc_id[]){x, z}, 1), 2 * OPS_N);
    for (int b = 0; b < OPS_B; b++)
        for (int e = 0; e < 2 * OPS_N; e++)
            o->want[b][e] = e < OPS_N ? ops_x[b][e] : ops_z[b][e - OPS_N];
    o = ops_add(outs, &n, otc_slice(g, x, 1, 1, 2), 2);
    for (int b = 0; b < OPS_B; b++)
        for (int e = 0; e < 2; e++) o->want[b][e] = ops_x[b][1 + e];
    otc_id x3 = otc_reshape(g, x, otc_shape_make(3, (int[]){OTC_BATCH, 2, 2}));
    o = ops_add(outs, &n, otc_select(g, x3, 1, 1), 2);
    for (int b = 0; b < OPS_B; b++)
        for (int e = 0; e < 2; e++) o->want[b][e] = ops_x[b][2 + e];
    o = ops_add(outs, &n, otc_softmax(g, x), OPS_N);
    ops_out *ol = ops_add(outs, &n, otc_log_softmax(g, x), OPS_N);
    for (int b = 0; b < OPS_B; b++)
        for (int e = 0; e < OPS_N; e++) {
            ol->want[b][e] = ops_x[b][e] - ops_lse(b);
            o->want[b][e] = exp(ol->want[b][e]);
        }
    otc_id scalars[5] = {otc_sum(g, x), otc_mean(g, x), otc_mse(g, x, z),
                         otc_bce(g, otc_activation(g, OTC_OP_SIGMOID, x, 0),
                                 otc_activation(g, OTC_OP_SIGMOID, z, 0)),
                         otc_softmax_ce(g, x, lab)};
    const double sref[5] = {sum, sum / (OPS_B * OPS_N), mse, bce, ce};
    for (int i = 0; i < 5; i++) {
        otc_id s1 = otc_reshape(g, scalars[i], otc_shape_1d(1));
        o = ops_add(outs, &n, otc_row_broadcast(g, s1, col), 1);
        for (int b = 0; b < OPS_B; b++) o->want[b][0] = sref[i];
    }
    /* steep_sigmoid(0.3 + 1.5 * (0.8 x0 - 0.6 x3)) */
    otc_id nrn = otc_neuron(g, "n", OTC_ACT_STEEP_SIGMOID, 0.3f, 1.5f, 2, (otc_id[]){x, x},
                            (int[]){0, 3}, (float[]){0.8f, -0.6f});
    o = ops_add(outs, &n, nrn, 1);
    for (int b = 0; b < OPS_B; b++)
        o->want[b][0] = sigm(4.9 * (0.3 + 1.5 * (0.8 * ops_x[b][0] - 0.6 * ops_x[b][3])));
    for (int i = 0; i < n; i++) REQUIRE(otc_graph_mark_output(g, outs[i].id) == OTC_OK);
    otc_executor *ex = bk_new(k, g, &(bk_options){.inference = true, .loss = -1});
    REQUIRE_EX(ex);
    float xf[OPS_B * OPS_N], zf[OPS_B * OPS_N];
    for (int i = 0; i < OPS_B * OPS_N; i++) {
        xf[i] = (float)ops_x[i / OPS_N][i % OPS_N];
        zf[i] = (float)ops_z[i / OPS_N][i % OPS_N];
    }
    REQUIRE(otc_exec_set_input(ex, x, xf, OPS_B) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, z, zf, OPS_B) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, lab, ops_labels, OPS_B) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    for (int i = 0; i < n; i++) {
        const float *v;
        REQUIRE(otc_exec_value(ex, outs[i].id, &v, NULL) == OTC_OK);
        const char *op = otc_op_get(otc_graph_node(g, outs[i].id)->op)->name;
        for (int b = 0; b < OPS_B; b++)
            for (int e = 0; e < outs[i].width; e++) {
                double want = outs[i].want[b][e];
                CHECK_MSG(fabs(v[b * outs[i].width + e] - want) <= 2e-5 * fmax(1, fabs(want)) ||
                              (isnan(want) && isnan(v[b * outs[i].width + e])),
                          "%s output %d (%s) [%d,%d]: %.9g, want %.9g", k->name, i, op, b, e,
                          (double)v[b * outs[i].width + e], want);
            }
    }
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* An output without a batch dimension (a sum of parameters): the interpreter computes it;
 * compiled outputs are per-sample, and the compilers refuse the graph naming the output. */
BACKEND_TEST(exec_unbatched_output) {
    otc_graph *g = otc_graph_new();
    const float p[2] = {1, 2};
    otc_id a = otc_param(g, "a", otc_shape_1d(2), p);
    otc_id s = otc_sum(g, a);
    REQUIRE(otc_graph_set_name(g, s, "total") == OTC_OK);
    REQUIRE(otc_graph_mark_output(g, s) == OTC_OK);
    otc_executor *ex = bk_new(k, g, NULL);
    otc_status st = ex ? otc_exec_forward(ex) : OTC_ERR_UNSUPPORTED;
    if (bk_compiled(k)) {
        bk_not_applicable(k, "compiled outputs are per-sample; checking the refusal instead");
        CHECK(st == OTC_ERR_UNSUPPORTED);
        CHECK_MSG(strstr(otc_last_error(), "'total'") && strstr(otc_last_error(), "per-sample"),
                  "message: %s", otc_last_error());
    } else {
        const float *v;
        CHECK(st == OTC_OK);
        CHECK(otc_exec_value(ex, s, &v, NULL) == OTC_OK && v[0] == 3);
    }
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* neat-python's aggregations in a Neuron, y = 0.5 + 2 agg(t), t_i = w_i x_i, by hand:
 *   row 0: x = (1, -2, 3, 0.5, -4), w = (1, 1, 1, 2, 0.5): t = (1, -2, 3, 1, -2)
 *   row 1: x = (2, 0.5, -1, -1, -8):                        t = (2, 0.5, -1, -2, -4)
 * sum 1 | -4.5, product 12 | -8, min -2 | -4, max 3 | 2, maxabs 3 | -4 (the sign kept),
 * median of 5: sorted (-2 -2 1 1 3) -> 1 | (-4 -2 -1 0.5 2) -> -1, mean 0.2 | -0.9;
 * median of the first 4: (1 + 1) / 2 = 1 | (-1 + 0.5) / 2 = -0.25; of the first 2: their
 * mean -0.5 | 1.25; maxabs of (3, -3) | (-1, 0.75) (x_2 and 1.5 x_1): the first, 3 | -1;
 * over no inputs: product 1, min 0. */
enum { AGG_CASES = 12 };
BACKEND_TEST(exec_neuron_aggregations) {
    static const struct {
        int agg, k;
        int cols[5];
        float w[5];
        double want[2];
    } cs[AGG_CASES] = {
        {OTC_AGG_SUM, 5, {0, 1, 2, 3, 4}, {1, 1, 1, 2, 0.5f}, {2.5, -8.5}},
        {OTC_AGG_PRODUCT, 5, {0, 1, 2, 3, 4}, {1, 1, 1, 2, 0.5f}, {24.5, -15.5}},
        {OTC_AGG_MIN, 5, {0, 1, 2, 3, 4}, {1, 1, 1, 2, 0.5f}, {-3.5, -7.5}},
        {OTC_AGG_MAX, 5, {0, 1, 2, 3, 4}, {1, 1, 1, 2, 0.5f}, {6.5, 4.5}},
        {OTC_AGG_MAXABS, 5, {0, 1, 2, 3, 4}, {1, 1, 1, 2, 0.5f}, {6.5, -7.5}},
        {OTC_AGG_MEDIAN, 5, {0, 1, 2, 3, 4}, {1, 1, 1, 2, 0.5f}, {2.5, -1.5}},
        {OTC_AGG_MEAN, 5, {0, 1, 2, 3, 4}, {1, 1, 1, 2, 0.5f}, {0.9, -1.3}},
        {OTC_AGG_MEDIAN, 4, {0, 1, 2, 3}, {1, 1, 1, 2}, {2.5, 0.0}},
        {OTC_AGG_MEDIAN, 2, {0, 1}, {1, 1}, {-0.5, 3.0}},
        {OTC_AGG_MAXABS, 2, {2, 1}, {1, 1.5f}, {6.5, -1.5}},
        {OTC_AGG_PRODUCT, 0, {0}, {0}, {2.5, 2.5}},
        {OTC_AGG_MIN, 0, {0}, {0}, {0.5, 0.5}},
    };
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 5));
    otc_id y[AGG_CASES];
    for (int c = 0; c < AGG_CASES; c++) {
        otc_id src[5] = {x, x, x, x, x};
        char name[16];
        snprintf(name, sizeof name, "n%d", c);
        y[c] = otc_neuron(g, name, OTC_ACT_IDENTITY, 0.5f, 2.0f, cs[c].k, src, cs[c].cols, cs[c].w);
        REQUIRE(y[c] >= 0);
        REQUIRE(otc_graph_set_agg(g, y[c], cs[c].agg) == OTC_OK);
        REQUIRE(otc_graph_mark_output(g, y[c]) == OTC_OK);
    }
    CHECK(otc_graph_set_agg(g, y[0], OTC_AGG_COUNT) == OTC_ERR_ARG);
    CHECK(otc_graph_set_agg(g, x, OTC_AGG_MAX) == OTC_ERR_ARG);
    otc_executor *ex = bk_new(k, g, &(bk_options){.inference = true, .loss = -1});
    REQUIRE_EX(ex);
    const float xs[10] = {1, -2, 3, 0.5f, -4, 2, 0.5f, -1, -1, -8};
    REQUIRE(otc_exec_set_input(ex, x, xs, 2) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    for (int c = 0; c < AGG_CASES; c++) {
        const float *v;
        REQUIRE(otc_exec_value(ex, y[c], &v, NULL) == OTC_OK);
        for (int r = 0; r < 2; r++)
            CHECK_MSG(fabs(v[r] - cs[c].want[r]) <= 1e-6 * fmax(1.0, fabs(cs[c].want[r])),
                      "%s over %d, row %d: %g, want %g", otc_agg_name(cs[c].agg), cs[c].k, r, v[r],
                      cs[c].want[r]);
    }
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Their gradients (row 0 above, loss = y = 0.5 + 2 agg(t)): dL/dw_i = 2 g_i x_i with g_i =
 * d agg / d t_i: product, the product of the others 12 / t_i = (12, -6, 4, 12, -6); min,
 * the first of the tied -2 (input 1); max and maxabs input 2; median the middle of the
 * sort with ties by position, (-2,1) (-2,4) (1,0) (1,3) (3,2): input 0; mean 1/5 each.
 * Every backend trains them (the compilers by the same rules). */
BACKEND_TEST(exec_neuron_aggregation_gradients) {
    static const struct {
        int agg;
        double dw[5];
    } cs[] = {
        {OTC_AGG_SUM, {2, -4, 6, 1, -8}},
        {OTC_AGG_PRODUCT, {24, 24, 24, 12, 48}},
        {OTC_AGG_MIN, {0, -4, 0, 0, 0}},
        {OTC_AGG_MAX, {0, 0, 6, 0, 0}},
        {OTC_AGG_MAXABS, {0, 0, 6, 0, 0}},
        {OTC_AGG_MEDIAN, {2, 0, 0, 0, 0}},
        {OTC_AGG_MEAN, {0.4, -0.8, 1.2, 0.2, -1.6}},
    };
    const float xs[5] = {1, -2, 3, 0.5f, -4}, w[5] = {1, 1, 1, 2, 0.5f};
    const int cols[5] = {0, 1, 2, 3, 4};
    /* Every graph lives to the end: the emitted-C backend reuses a program for a graph at
     * the same address and size, and the aggregation is compiled in. */
    otc_graph *graphs[sizeof cs / sizeof cs[0]] = {0};
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        otc_graph *g = graphs[c] = otc_graph_new();
        otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 5));
        otc_id src[5] = {x, x, x, x, x};
        otc_id y = otc_neuron(g, "n", OTC_ACT_IDENTITY, 0.5f, 2.0f, 5, src, cols, w);
        REQUIRE(otc_graph_set_agg(g, y, cs[c].agg) == OTC_OK);
        otc_id loss = otc_sum(g, y);
        REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
        otc_executor *ex = bk_new(k, g, &(bk_options){.loss = loss});
        REQUIRE_EX(ex);
        REQUIRE(otc_exec_set_input(ex, x, xs, 1) == OTC_OK);
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
        const float *gw, *gb;
        const otc_node *nd = otc_graph_node(g, y);
        REQUIRE(otc_exec_grad(ex, nd->inputs[0], &gw) == OTC_OK);
        REQUIRE(otc_exec_grad(ex, nd->inputs[1], &gb) == OTC_OK);
        CHECK_NEAR(gb[0], 1.0, 1e-6);
        for (int i = 0; i < 5; i++)
            CHECK_MSG(fabs(gw[i] - cs[c].dw[i]) <= 1e-5, "%s: dL/dw%d = %g, want %g",
                      otc_agg_name(cs[c].agg), i, gw[i], cs[c].dw[i]);
        otc_exec_free(ex);
    }
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) otc_graph_free(graphs[c]);
}

/* The same through a hidden neuron, over a batch of 3 and input columns other than 0: every
 * parameter's gradient as the interpreter's (the reference), so the sources' gradients flow
 * through the aggregation too. */
BACKEND_TEST(exec_neuron_aggregation_gradients_chain) {
    static const int aggs[] = {OTC_AGG_PRODUCT, OTC_AGG_MIN,    OTC_AGG_MAX,
                               OTC_AGG_MAXABS,  OTC_AGG_MEDIAN, OTC_AGG_MEAN};
    const float xs[9] = {0.5f, -1, 2, 1.5f, 0.25f, -0.75f, -2, 1, 0.3f};
    const float wh[2] = {0.7f, -0.4f}, wy[4] = {1.5f, -0.8f, 0.6f, 1.1f};
    const int ch[2] = {0, 1}, cy[4] = {2, 0, 0, 1};
    otc_graph *graphs[2 * (sizeof aggs / sizeof aggs[0])] = {0};
    for (size_t a = 0; a < sizeof aggs / sizeof aggs[0]; a++) {
        const float *ref[4] = {0};
        otc_executor *exs[2] = {0};
        for (int run = 0; run < 2; run++) {
            otc_graph *g = graphs[2 * a + (size_t)run] = otc_graph_new();
            otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
            otc_id hs[2] = {x, x};
            otc_id h = otc_neuron(g, "h", OTC_ACT_TANH, 0.1f, 1.0f, 2, hs, ch, wh);
            otc_id ys[4] = {x, h, x, x};
            otc_id y = otc_neuron(g, "y", OTC_ACT_IDENTITY, -0.2f, 1.5f, 4, ys, cy, wy);
            REQUIRE(otc_graph_set_agg(g, y, aggs[a]) == OTC_OK);
            otc_id loss = otc_sum(g, y);
            REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
            otc_executor *ex = run ? bk_new(k, g, &(bk_options){.loss = loss})
                                   : otc_interpreter_new(g, &(otc_exec_options){0});
            exs[run] = ex;
            REQUIRE_EX(ex);
            REQUIRE(otc_exec_set_input(ex, x, xs, 3) == OTC_OK);
            REQUIRE(otc_exec_forward(ex) == OTC_OK);
            REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
            const otc_node *hn = otc_graph_node(g, h), *yn = otc_graph_node(g, y);
            otc_id ps[4] = {hn->inputs[0], hn->inputs[1], yn->inputs[0], yn->inputs[1]};
            int sizes[4] = {2, 1, 4, 1};
            for (int q = 0; q < 4; q++) {
                const float *gr = NULL;
                REQUIRE(otc_exec_grad(ex, ps[q], &gr) == OTC_OK);
                if (!run) {
                    ref[q] = gr;
                    continue;
                }
                for (int e = 0; e < sizes[q]; e++)
                    CHECK_MSG(fabs(gr[e] - ref[q][e]) <= 1e-5 * (1 + fabs(ref[q][e])),
                              "%s: parameter %d[%d]: %g, interpreter %g", otc_agg_name(aggs[a]), q,
                              e, gr[e], ref[q][e]);
            }
        }
        otc_exec_free(exs[0]);
        otc_exec_free(exs[1]);
    }
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) otc_graph_free(graphs[i]);
}

/* Two losses, each reached by one parameter only: after backward from both, each parameter
 * holds its own loss's gradient, and a parameter no backward reached reads zeros (the JIT
 * once lost the first loss's gradient and refused grad() for a parameter its current plan
 * leaves out). The emitted C trains the one loss it was built for: its part is the first
 * loss's. Reference: d/dW mean_b (x_b . W)^2 = 2/B sum_b (x_b . W) x_b, by hand. */
BACKEND_TEST(exec_grad_of_parameter_one_loss_reaches) {
    enum { B = 3 };
    const float x[B * 2] = {1, 2, -1, 0.5f, 0.25f, -3}, w1[2] = {0.5f, -1}, w2[2] = {2, 0.25f};
    otc_graph *g = otc_graph_new();
    otc_id in = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id p1 = otc_param(g, "w1", otc_shape_2d(2, 1), w1);
    otc_id p2 = otc_param(g, "w2", otc_shape_2d(2, 1), w2);
    otc_id h1 = otc_matmul(g, in, p1), h2 = otc_matmul(g, in, p2);
    otc_id l1 = otc_mean(g, otc_mul(g, h1, h1)), l2 = otc_mean(g, otc_mul(g, h2, h2));
    REQUIRE(l1 >= 0 && l2 >= 0 && otc_graph_mark_output(g, h1) == OTC_OK);
    float want1[2] = {0}, want2[2] = {0};
    for (int b = 0; b < B; b++) {
        float d1 = x[2 * b] * w1[0] + x[2 * b + 1] * w1[1];
        float d2 = x[2 * b] * w2[0] + x[2 * b + 1] * w2[1];
        for (int i = 0; i < 2; i++) {
            want1[i] += 2.0f / B * d1 * x[2 * b + i];
            want2[i] += 2.0f / B * d2 * x[2 * b + i];
        }
    }
    otc_executor *ex = bk_new(k, g, &(bk_options){.loss = l1});
    REQUIRE_EX(ex);
    const float *g1, *g2;
    REQUIRE(otc_exec_set_input(ex, in, x, B) == OTC_OK && otc_exec_forward(ex) == OTC_OK);
    /* before any backward, and for the parameter the one loss run does not reach: zeros */
    CHECK(otc_exec_grad(ex, p2, &g2) == OTC_OK && g2[0] == 0 && g2[1] == 0);
    REQUIRE(otc_exec_backward(ex, l1) == OTC_OK);
    CHECK(otc_exec_grad(ex, p2, &g2) == OTC_OK && g2[0] == 0 && g2[1] == 0);
    CHECK(otc_exec_grad(ex, p1, &g1) == OTC_OK && fabsf(g1[1] - want1[1]) < 1e-5f);
    if (k->kind == BK_EMITC) {
        bk_not_applicable(k, "the emitted C trains one loss");
    } else {
        REQUIRE(otc_exec_backward(ex, l2) == OTC_OK);
        CHECK(otc_exec_grad(ex, p1, &g1) == OTC_OK && otc_exec_grad(ex, p2, &g2) == OTC_OK);
        for (int i = 0; i < 2; i++) {
            CHECK_NEAR(g1[i], want1[i], 1e-5);
            CHECK_NEAR(g2[i], want2[i], 1e-5);
        }
        /* back to the first loss: the second's gradient stays, the first's doubles */
        REQUIRE(otc_exec_backward(ex, l1) == OTC_OK);
        CHECK(otc_exec_grad(ex, p2, &g2) == OTC_OK && fabsf(g2[0] - want2[0]) < 1e-5f);
        CHECK(otc_exec_grad(ex, p1, &g1) == OTC_OK && fabsf(g1[0] - 2 * want1[0]) < 1e-5f);
    }
    otc_exec_zero_grad(ex);
    CHECK(otc_exec_grad(ex, p2, &g2) == OTC_OK && g2[0] == 0 && g2[1] == 0);
    CHECK(otc_exec_grad(ex, p1, &g1) == OTC_OK && g1[0] == 0 && g1[1] == 0);
    otc_exec_free(ex);
    otc_graph_free(g);
}
