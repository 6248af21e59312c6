/* Tests for layers: the nodes, shapes, names and initial values otc_linear and otc_mlp build,
 * their forward values against hand computation, PyTorch's Linear initialisation, and a Linear
 * layer learning a line. */
#include "harness.h"

#include "otc/executor.h"
#include "otc/layers.h"

static int param_count(const otc_graph *g) {
    int n = 0;
    for (int i = 0; i < otc_graph_size(g); i++) {
        const otc_node *node = otc_graph_node(g, i);
        if (node->op == OTC_OP_PARAMETER) n += (int)node->value->size;
    }
    return n;
}

static bool shape_is(otc_shape s, int d0, int d1) {
    return s.ndim == 2 && s.dim[0] == d0 && s.dim[1] == d1;
}

TEST(layers_linear_structure) {
    otc_graph *g = otc_graph_new();
    REQUIRE(g);
    otc_rng rng;
    otc_rng_seed(&rng, 1);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    int before = otc_graph_size(g);
    otc_id y = otc_linear(g, x, 2, &rng, "fc");
    REQUIRE(y >= 0);
    CHECK(otc_graph_size(g) == before + 5); /* W, b, matmul, broadcast, add */
    const otc_node *yn = otc_graph_node(g, y);
    CHECK(yn->op == OTC_OP_ADD && shape_is(yn->shape, OTC_BATCH, 2));

    otc_id w = otc_graph_find(g, "fc.weight"), b = otc_graph_find(g, "fc.bias");
    REQUIRE(w >= 0 && b >= 0);
    const otc_node *wn = otc_graph_node(g, w), *bn = otc_graph_node(g, b);
    CHECK(wn->op == OTC_OP_PARAMETER && wn->trainable && shape_is(wn->shape, 3, 2));
    CHECK(bn->op == OTC_OP_PARAMETER && bn->trainable && bn->shape.ndim == 1 &&
          bn->shape.dim[0] == 2);
    CHECK(param_count(g) == 3 * 2 + 2);

    /* y = add(matmul(x, W), row_broadcast(b, matmul)). */
    REQUIRE(yn->n_inputs == 2);
    const otc_node *mm = otc_graph_node(g, yn->inputs[0]);
    const otc_node *bc = otc_graph_node(g, yn->inputs[1]);
    CHECK(mm->op == OTC_OP_MATMUL && mm->inputs[0] == x && mm->inputs[1] == w);
    CHECK(bc->op == OTC_OP_ROW_BROADCAST && bc->inputs[0] == b && bc->inputs[1] == yn->inputs[0]);

    /* Xavier-uniform weights: inside +-sqrt(6 / (3 + 2)), not all equal; zero bias. */
    double limit = sqrt(6.0 / 5.0);
    bool varied = false;
    for (int i = 0; i < 6; i++) {
        CHECK(fabs(wn->value->data[i]) <= limit);
        varied |= wn->value->data[i] != wn->value->data[0];
    }
    CHECK(varied);
    CHECK(bn->value->data[0] == 0.0f && bn->value->data[1] == 0.0f);

    /* The same seed draws the same weights: the draw is -l + 2l u, u the rng's uniforms. */
    otc_rng again;
    otc_rng_seed(&again, 1);
    for (int i = 0; i < 6; i++) {
        float u = otc_rng_uniform(&again);
        CHECK_NEAR(wn->value->data[i], -limit + 2 * limit * u, 1e-6);
    }
    otc_graph_free(g);
}

/* PyTorch's nn.Linear initialisation: W and b uniform in +-1/sqrt(in_features) (kaiming_uniform
 * with a = sqrt(5) gives gain sqrt(1/3), bound gain * sqrt(3 / in) = 1/sqrt(in)), W drawn
 * first, then b, each -bound + 2 bound u from the rng's uniforms u. */
TEST(layers_linear_torch_init) {
    otc_graph *g = otc_graph_new();
    REQUIRE(g);
    otc_rng rng, again;
    otc_rng_seed(&rng, 7);
    otc_rng_seed(&again, 7);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 50));
    REQUIRE(otc_linear_torch(g, x, 40, &rng, "fc") >= 0);
    const otc_node *wn = otc_graph_node(g, otc_graph_find(g, "fc.weight"));
    const otc_node *bn = otc_graph_node(g, otc_graph_find(g, "fc.bias"));
    REQUIRE(wn && bn && wn->value->size == 2000 && bn->value->size == 40);
    double bound = 1.0 / sqrt(50.0), sq = 0;
    for (int i = 0; i < 2000; i++) {
        float v = wn->value->data[i];
        CHECK(fabs(v) <= bound);
        CHECK_NEAR(v, -bound + 2 * bound * otc_rng_uniform(&again), 1e-6);
        sq += (double)v * v;
    }
    /* a uniform on [-b, b] has variance b^2 / 3 */
    CHECK_NEAR(sq / 2000, bound * bound / 3, 0.1 * bound * bound / 3);
    bool nonzero = false;
    for (int i = 0; i < 40; i++) {
        float v = bn->value->data[i];
        CHECK(fabs(v) <= bound);
        CHECK_NEAR(v, -bound + 2 * bound * otc_rng_uniform(&again), 1e-6);
        nonzero |= v != 0;
    }
    CHECK(nonzero);
    otc_graph_free(g);
}

TEST(layers_linear_unnamed_and_errors) {
    otc_graph *g = otc_graph_new();
    REQUIRE(g);
    otc_rng rng;
    otc_rng_seed(&rng, 2);
    otc_id x = otc_input(g, "x", otc_shape_2d(4, 5)); /* a fixed row count works too */
    otc_id y = otc_linear(g, x, 3, &rng, NULL);
    REQUIRE(y >= 0);
    CHECK(shape_is(otc_graph_node(g, y)->shape, 4, 3));
    for (int i = 0; i < otc_graph_size(g); i++)
        if (otc_graph_node(g, i)->op == OTC_OP_PARAMETER) CHECK(otc_graph_node(g, i)->name == NULL);

    otc_id v = otc_input(g, "v", otc_shape_1d(3));
    int size = otc_graph_size(g);
    CHECK(otc_linear(g, v, 2, &rng, "bad") == -1); /* not [rows, features] */
    CHECK(strstr(otc_last_error(), "bad") != NULL);
    CHECK(otc_linear(g, x, 0, &rng, "fc") == -1);
    CHECK(otc_linear(g, 999, 2, &rng, "fc") == -1);
    CHECK(otc_linear(NULL, x, 2, &rng, "fc") == -1);
    CHECK(otc_linear(g, x, 2, NULL, "fc") == -1);
    CHECK(otc_graph_size(g) == size);

    /* A name clash part way (the weight is added, the bias's name is taken) leaves the
     * graph as it was. */
    REQUIRE(otc_input(g, "clash.bias", otc_shape_1d(1)) >= 0);
    size = otc_graph_size(g);
    CHECK(otc_linear(g, x, 2, &rng, "clash") == -1);
    CHECK(otc_graph_size(g) == size);
    CHECK(otc_graph_find(g, "clash.weight") == -1);
    otc_graph_free(g);
}

TEST(layers_mlp_structure) {
    otc_graph *g = otc_graph_new();
    REQUIRE(g);
    otc_rng rng;
    otc_rng_seed(&rng, 3);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 4));
    const int sizes[3] = {8, 6, 3};
    otc_id y = otc_mlp(g, x, 3, sizes, OTC_OP_LEAKY_RELU, -1, &rng);
    REQUIRE(y >= 0);
    CHECK(shape_is(otc_graph_node(g, y)->shape, OTC_BATCH, 3));
    CHECK(otc_graph_node(g, y)->op == OTC_OP_ADD); /* no output activation */
    CHECK(param_count(g) == 4 * 8 + 8 + 8 * 6 + 6 + 6 * 3 + 3);
    const char *names[6] = {"fc1.weight", "fc1.bias",   "fc2.weight",
                            "fc2.bias",   "fc3.weight", "fc3.bias"};
    const int rows[6] = {4, 8, 8, 6, 6, 3}, cols[6] = {8, 0, 6, 0, 3, 0};
    for (int i = 0; i < 6; i++) {
        otc_id id = otc_graph_find(g, names[i]);
        REQUIRE(id >= 0);
        otc_shape s = otc_graph_node(g, id)->shape;
        if (cols[i])
            CHECK_MSG(shape_is(s, rows[i], cols[i]), "%s", names[i]);
        else
            CHECK_MSG(s.ndim == 1 && s.dim[0] == rows[i], "%s", names[i]);
    }
    int acts = 0;
    for (int i = 0; i < otc_graph_size(g); i++) {
        const otc_node *n = otc_graph_node(g, i);
        if (n->op != OTC_OP_LEAKY_RELU) continue;
        acts++;
        CHECK_NEAR(n->alpha, 0.01, 1e-7); /* the activation's default slope */
    }
    CHECK(acts == 2);

    /* An output activation goes after the last layer. */
    otc_graph *g2 = otc_graph_new();
    REQUIRE(g2);
    otc_id x2 = otc_input(g2, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id y2 = otc_mlp(g2, x2, 1, (const int[]){1}, OTC_OP_TANH, OTC_OP_SIGMOID, &rng);
    REQUIRE(y2 >= 0);
    CHECK(otc_graph_node(g2, y2)->op == OTC_OP_SIGMOID);
    otc_graph_free(g2);

    /* A failure in the second layer undoes the first. */
    otc_graph *g3 = otc_graph_new();
    REQUIRE(g3);
    otc_id x3 = otc_input(g3, "x", otc_shape_2d(OTC_BATCH, 2));
    CHECK(otc_mlp(g3, x3, 0, sizes, OTC_OP_TANH, -1, &rng) == -1);
    CHECK(otc_mlp(g3, x3, 2, (const int[]){4, -1}, OTC_OP_TANH, -1, &rng) == -1);
    CHECK(otc_graph_size(g3) == 1 && otc_graph_find(g3, "fc1.weight") == -1);
    CHECK(otc_mlp(g3, x3, 2, (const int[]){4, 1}, OTC_OP_COUNT, -1, &rng) == -1);
    CHECK(otc_graph_size(g3) == 1);
    otc_graph_free(g3);
    otc_graph_free(g);
}

TEST(layers_forward_matches_hand_computation) {
    /* x [2,3] -> Linear(3,2) -> tanh -> Linear(2,1), weights set by hand. */
    otc_graph *g = otc_graph_new();
    REQUIRE(g);
    otc_rng rng;
    otc_rng_seed(&rng, 4);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    otc_id y = otc_mlp(g, x, 2, (const int[]){2, 1}, OTC_OP_TANH, -1, &rng);
    REQUIRE(y >= 0);
    const float w1[6] = {0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 0.1f}; /* [3,2] row-major */
    const float b1[2] = {0.1f, -0.2f}, w2[2] = {1.5f, -0.5f}, b2[1] = {0.3f};
    memcpy(otc_graph_param(g, otc_graph_find(g, "fc1.weight"))->data, w1, sizeof w1);
    memcpy(otc_graph_param(g, otc_graph_find(g, "fc1.bias"))->data, b1, sizeof b1);
    memcpy(otc_graph_param(g, otc_graph_find(g, "fc2.weight"))->data, w2, sizeof w2);
    memcpy(otc_graph_param(g, otc_graph_find(g, "fc2.bias"))->data, b2, sizeof b2);
    const float in[6] = {1.0f, 2.0f, -1.0f, 0.5f, 0.0f, 3.0f};

    otc_executor *ex = otc_interpreter_new(g, &(otc_exec_options){.inference = true});
    REQUIRE(ex);
    REQUIRE(otc_exec_set_input(ex, x, in, 2) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    const float *out;
    otc_shape shape;
    REQUIRE(otc_exec_value(ex, y, &out, &shape) == OTC_OK);
    CHECK(shape_is(shape, 2, 1));
    for (int r = 0; r < 2; r++) {
        double h[2];
        for (int j = 0; j < 2; j++) {
            double s = b1[j];
            for (int k = 0; k < 3; k++) s += (double)in[r * 3 + k] * w1[k * 2 + j];
            h[j] = tanh(s);
        }
        double want = b2[0] + h[0] * w2[0] + h[1] * w2[1];
        CHECK_NEAR(out[r], want, 1e-5);
    }
    /* Row 0 by hand, x = (1, 2, -1): fc1 = (0.1 + 0.5 + 0.5 + 0.75, -0.2 - 1 + 4 - 0.1)
     * = (1.85, 2.7). */
    CHECK_NEAR(out[0], 0.3 + 1.5 * tanh(1.85) - 0.5 * tanh(2.7), 1e-5);
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(layers_linear_learns_a_line) {
    /* y = 2 x0 - x1 + 0.5 from 32 points: Linear + MSE + Adam recover the coefficients. */
    otc_graph *g = otc_graph_new();
    REQUIRE(g);
    otc_rng rng;
    otc_rng_seed(&rng, 5);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id t = otc_input(g, "t", otc_shape_2d(OTC_BATCH, 1));
    otc_id y = otc_linear(g, x, 1, &rng, "fc");
    otc_id loss = otc_mse(g, y, t);
    REQUIRE(y >= 0 && loss >= 0);
    float xs[64], ts[32];
    for (int i = 0; i < 32; i++) {
        xs[2 * i] = 2.0f * otc_rng_uniform(&rng) - 1.0f;
        xs[2 * i + 1] = 2.0f * otc_rng_uniform(&rng) - 1.0f;
        ts[i] = 2.0f * xs[2 * i] - xs[2 * i + 1] + 0.5f;
    }
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    otc_optim_config c = otc_optim_defaults(OTC_OPTIM_ADAM);
    c.lr = 0.05f;
    otc_optimizer *opt = otc_optimizer_new(&c);
    REQUIRE(opt);
    REQUIRE(otc_exec_set_input(ex, x, xs, 32) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, t, ts, 32) == OTC_OK);
    float first = 0, value = 0;
    for (int step = 0; step < 500; step++) {
        REQUIRE(otc_exec_train_step(ex, loss, opt, &value) == OTC_OK);
        if (step == 0) first = value;
    }
    CHECK(value < 1e-4f && value < first);
    REQUIRE(otc_exec_sync_params(ex) == OTC_OK);
    const float *w = otc_graph_param(g, otc_graph_find(g, "fc.weight"))->data;
    const float *b = otc_graph_param(g, otc_graph_find(g, "fc.bias"))->data;
    CHECK_NEAR(w[0], 2.0, 0.02);
    CHECK_NEAR(w[1], -1.0, 0.02);
    CHECK_NEAR(b[0], 0.5, 0.02);
    otc_optimizer_free(opt);
    otc_exec_free(ex);
    otc_graph_free(g);
}
