/* Graph IR: construction, shape errors naming nodes and shapes, cycles named, names,
 * outputs, truncation, cloning and metadata. */
#include "harness.h"
#include "otc/otc.h"

static bool contains(const char *haystack, const char *needle) {
    return strstr(haystack, needle) != NULL;
}

TEST(graph_builds_and_infers_shapes) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    otc_id w = otc_param(g, "w", otc_shape_2d(3, 5), NULL);
    otc_id m = otc_matmul(g, x, w);
    otc_id b = otc_param(g, "b", otc_shape_1d(5), NULL);
    otc_id rb = otc_row_broadcast(g, b, m);
    otc_id y = otc_add(g, m, rb);
    otc_id s = otc_slice(g, y, 1, 1, 2);
    otc_id sel = otc_select(g, y, 1, 4);
    otc_id cat = otc_concat(g, 2, (otc_id[]){y, s}, -1);
    otc_id flat = otc_flatten(g, cat);
    otc_id r = otc_reshape(g, y, otc_shape_make(3, (int[]){OTC_BATCH, 5, 1}));
    otc_id sum = otc_sum(g, y);
    REQUIRE(sum >= 0);
    CHECK(otc_shape_equal(otc_graph_node(g, m)->shape, otc_shape_2d(OTC_BATCH, 5)));
    CHECK(otc_shape_equal(otc_graph_node(g, s)->shape, otc_shape_2d(OTC_BATCH, 2)));
    CHECK(otc_shape_equal(otc_graph_node(g, sel)->shape, otc_shape_1d(OTC_BATCH)));
    CHECK(otc_shape_equal(otc_graph_node(g, cat)->shape, otc_shape_2d(OTC_BATCH, 7)));
    CHECK(otc_shape_equal(otc_graph_node(g, flat)->shape, otc_shape_2d(OTC_BATCH, 7)));
    CHECK(otc_graph_node(g, r)->shape.ndim == 3);
    CHECK(otc_graph_node(g, sum)->shape.ndim == 0);
    CHECK(otc_graph_node(g, w)->trainable);
    CHECK(otc_graph_find(g, "b") == b);
    CHECK(otc_graph_find(g, "nope") == -1);
    CHECK(otc_graph_input_count(g) == 1 && otc_graph_input(g, 0) == x);
    otc_graph_free(g);
}

TEST(graph_shape_error_names_both_nodes) {
    otc_graph *g = otc_graph_new();
    otc_id a = otc_input(g, "left", otc_shape_2d(OTC_BATCH, 3));
    otc_id b = otc_input(g, "right", otc_shape_2d(OTC_BATCH, 4));
    int before = otc_graph_size(g);
    CHECK(otc_add(g, a, b) == -1);
    const char *msg = otc_last_error();
    CHECK_MSG(contains(msg, "'left'") && contains(msg, "'right'"), "%s", msg);
    CHECK_MSG(contains(msg, "[B,3]") && contains(msg, "[B,4]"), "%s", msg);
    CHECK(otc_graph_size(g) == before);
    /* matmul inner dimensions */
    otc_id w = otc_param(g, "w", otc_shape_2d(4, 2), NULL);
    CHECK(otc_matmul(g, a, w) == -1);
    CHECK_MSG(contains(otc_last_error(), "'w'"), "%s", otc_last_error());
    /* losses need equal shapes, softmax CE needs [M,C] logits */
    CHECK(otc_mse(g, a, b) == -1);
    CHECK(otc_softmax_ce(g, otc_sum(g, a), a) == -1);
    /* slices outside, select on the batch axis, bad reshape */
    CHECK(otc_slice(g, a, 1, 2, 2) == -1);
    CHECK(otc_select(g, a, 0, 0) == -1);
    CHECK(otc_reshape(g, a, otc_shape_2d(OTC_BATCH, 4)) == -1);
    /* parameters have no batch dimension; shapes must be positive */
    CHECK(otc_param(g, "p", otc_shape_2d(OTC_BATCH, 2), NULL) == -1);
    CHECK(otc_input(g, "z", otc_shape_2d(3, 0)) == -1);
    /* unknown input ids */
    CHECK(otc_neg(g, 99) == -1);
    CHECK_MSG(contains(otc_last_error(), "99"), "%s", otc_last_error());
    otc_graph_free(g);
}

TEST(graph_names_are_unique) {
    otc_graph *g = otc_graph_new();
    otc_id a = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    CHECK(otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1)) == -1);
    CHECK(contains(otc_last_error(), "'x'"));
    otc_id b = otc_neg(g, a);
    CHECK(otc_graph_set_name(g, b, "x") != OTC_OK);
    CHECK(otc_graph_set_name(g, b, "negx") == OTC_OK);
    CHECK(otc_graph_find(g, "negx") == b);
    otc_graph_free(g);
}

TEST(graph_cycle_is_named) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id a = otc_neg(g, x);
    otc_id b = otc_activation(g, OTC_OP_TANH, a, 0);
    otc_id c = otc_neg(g, b);
    otc_graph_set_name(g, a, "a");
    otc_graph_set_name(g, b, "b");
    otc_graph_set_name(g, c, "c");
    otc_id order[8];
    CHECK(otc_graph_topo_order(g, order) == OTC_OK);
    /* a now reads c: a -> b -> c -> a */
    CHECK(otc_graph_set_input(g, a, 0, c) == OTC_OK);
    CHECK(otc_graph_topo_order(g, order) == OTC_ERR_CYCLE);
    const char *msg = otc_last_error();
    CHECK_MSG(contains(msg, "'a'") && contains(msg, "'b'") && contains(msg, "'c'"), "%s", msg);
    CHECK_MSG(!contains(msg, "'x'"), "%s", msg);
    otc_graph_free(g);
}

TEST(graph_delay_breaks_cycles) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    CHECK(!otc_graph_is_recurrent(g) && !otc_graph_is_recurrent(NULL));
    otc_id d = otc_delay(g, "d", otc_shape_2d(OTC_BATCH, 1));
    CHECK(otc_graph_is_recurrent(g));
    otc_id h = otc_neuron(g, "h", OTC_ACT_TANH, 0.0f, 1.0f, 2, (otc_id[]){x, d}, (int[]){0, 0},
                          (float[]){1.0f, 0.5f});
    REQUIRE(h >= 0);
    CHECK(otc_graph_set_input(g, d, 0, h) == OTC_OK);
    otc_id order[8];
    CHECK(otc_graph_topo_order(g, order) == OTC_OK);
    /* delay of a different shape is refused */
    otc_id wide = otc_input(g, "wide", otc_shape_2d(OTC_BATCH, 3));
    CHECK(otc_graph_set_input(g, d, 0, wide) == OTC_ERR_SHAPE);
    CHECK(otc_graph_node(g, d)->inputs[0] == h);
    otc_graph_free(g);
}

TEST(graph_neuron_checks_sources) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    int before = otc_graph_size(g);
    CHECK(otc_neuron(g, "n", OTC_ACT_SIGMOID, 0, 1, 1, &x, (int[]){2}, NULL) == -1);
    CHECK_MSG(contains(otc_last_error(), "column 2"), "%s", otc_last_error());
    CHECK(otc_graph_size(g) == before); /* no orphaned parameters left behind */
    otc_id n = otc_neuron(g, "n", OTC_ACT_SIGMOID, 0.5f, 1, 2, (otc_id[]){x, x}, (int[]){1, 0},
                          (float[]){2, 3});
    REQUIRE(n >= 0);
    const otc_node *node = otc_graph_node(g, n);
    CHECK(node->n_inputs == 4 && node->cols[0] == 1 && node->cols[1] == 0);
    CHECK(otc_graph_param(g, node->inputs[0])->data[1] == 3.0f);
    CHECK(otc_graph_param(g, node->inputs[1])->data[0] == 0.5f);
    CHECK(otc_graph_find(g, "n.w") == node->inputs[0]);
    /* a neuron with no sources is allowed (NEAT outputs may lose every connection) */
    CHECK(otc_neuron(g, "lonely", OTC_ACT_TANH, 1.0f, 1, 0, NULL, NULL, NULL) >= 0);
    otc_graph_free(g);
}

TEST(graph_truncate_clone_meta_outputs) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id w = otc_param(g, "w", otc_shape_2d(2, 1), (float[]){1.5f, -2.0f});
    otc_id y = otc_matmul(g, x, w);
    otc_graph_mark_output(g, y);
    otc_graph_meta_set(g, "genome", "{\"nodes\":3}");
    otc_graph_meta_set(g, "genome", "{\"nodes\":4}");
    int keep = otc_graph_size(g);
    otc_id t = otc_input(g, "t", otc_shape_2d(OTC_BATCH, 1));
    otc_mse(g, y, t);
    otc_graph *c = otc_graph_clone(g);
    REQUIRE(c);
    CHECK(otc_graph_size(c) == otc_graph_size(g));
    CHECK(otc_graph_param(c, w)->data[1] == -2.0f);
    CHECK(otc_graph_param(c, w) != otc_graph_param(g, w));
    CHECK(strcmp(otc_graph_meta_get(c, "genome"), "{\"nodes\":4}") == 0);
    CHECK(otc_graph_meta_count(c) == 1);
    CHECK(otc_graph_truncate(g, keep) == OTC_OK);
    CHECK(otc_graph_size(g) == keep && otc_graph_output(g, 0) == y);
    CHECK(otc_graph_find(g, "t") == -1);
    CHECK(otc_graph_truncate(g, 1) == OTC_OK); /* the output goes with its node */
    CHECK(otc_graph_output_count(g) == 0);
    /* a delay reading a later node keeps that node alive */
    otc_id d = otc_delay(g, "d", otc_shape_2d(OTC_BATCH, 2));
    otc_id n = otc_neg(g, x);
    CHECK(otc_graph_set_input(g, d, 0, n) == OTC_OK);
    CHECK(otc_graph_truncate(g, d + 1) != OTC_OK);
    CHECK(otc_graph_size(g) == n + 1);
    otc_graph_free(c);
    otc_graph_free(g);
}

TEST(graph_deep_chain_topo_order) {
    /* 100k nodes: the order must not recurse. */
    otc_graph *g = otc_graph_new();
    otc_id v = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    for (int i = 0; i < 100000; i++) v = otc_neg(g, v);
    otc_id *order = malloc(sizeof(otc_id) * (size_t)otc_graph_size(g));
    CHECK(otc_graph_topo_order(g, order) == OTC_OK);
    CHECK(order[0] == 0 && order[otc_graph_size(g) - 1] == v);
    free(order);
    otc_graph_free(g);
}

/* A training graph's inference graph: the loss and the target it alone reads are gone, the
 * rest (a recurrent state included) computes what the training graph's output computed. */
TEST(graph_inference_drops_loss_and_target) {
    otc_graph *g = otc_graph_new();
    REQUIRE(g);
    const float w0[6] = {0.5f, -1, 2, 0.25f, 1.5f, -0.75f};
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    otc_id w = otc_param(g, "w", otc_shape_2d(3, 2), w0);
    otc_id d = otc_delay(g, "h", otc_shape_2d(OTC_BATCH, 2));
    otc_id y = otc_add(g, otc_matmul(g, x, w), d);
    REQUIRE(y >= 0 && otc_graph_set_input(g, d, 0, y) == OTC_OK);
    REQUIRE(otc_graph_set_name(g, y, "y") == OTC_OK && otc_graph_mark_output(g, y) == OTC_OK);
    otc_id t = otc_input(g, "target", otc_shape_2d(OTC_BATCH, 2));
    otc_id loss = otc_mse(g, y, t);
    REQUIRE(loss >= 0 && otc_graph_mark_output(g, loss) == OTC_OK);
    REQUIRE(otc_graph_meta_set(g, "about", "{}") == OTC_OK);

    otc_graph *inf = otc_graph_inference(g);
    REQUIRE(inf);
    CHECK(otc_graph_input_count(inf) == 1 && otc_graph_find(inf, "target") < 0);
    CHECK(otc_graph_output_count(inf) == 1);
    CHECK(otc_graph_meta_get(inf, "about") != NULL);
    for (int i = 0; i < otc_graph_size(inf); i++) CHECK(otc_graph_node(inf, i)->op != OTC_OP_MSE);
    CHECK(otc_graph_is_recurrent(inf));
    /* two steps by hand: y1 = x W, y2 = x W + y1 = 2 x W; x = (1, 2, 3), W's rows (0.5, -1),
     * (2, 0.25), (1.5, -0.75): x W = (0.5 + 4 + 4.5, -1 + 0.5 - 2.25) = (9, -2.75) */
    otc_executor *ex = otc_interpreter_new(inf, NULL);
    REQUIRE(ex);
    const float xv[3] = {1, 2, 3};
    const float *out;
    otc_id yo = otc_graph_output(inf, 0);
    REQUIRE(otc_exec_set_input(ex, otc_graph_input(inf, 0), xv, 1) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK && otc_exec_value(ex, yo, &out, NULL) == OTC_OK);
    CHECK_NEAR(out[0], 9, 1e-6);
    CHECK_NEAR(out[1], -2.75, 1e-6);
    REQUIRE(otc_exec_forward(ex) == OTC_OK && otc_exec_value(ex, yo, &out, NULL) == OTC_OK);
    CHECK_NEAR(out[0], 18, 1e-6);
    CHECK_NEAR(out[1], -5.5, 1e-6);
    otc_exec_free(ex);
    otc_graph_free(inf);
    /* a graph whose only output is its loss has no inference graph */
    otc_graph *bare = otc_graph_new();
    otc_id a = otc_input(bare, "a", otc_shape_2d(OTC_BATCH, 1));
    REQUIRE(otc_graph_mark_output(bare, otc_mse(bare, a, a)) == OTC_OK);
    CHECK(otc_graph_inference(bare) == NULL);
    otc_graph_free(bare);
    otc_graph_free(g);
}
