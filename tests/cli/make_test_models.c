/* Writes the small models the CLI tests run on into a directory: a NEAT-style network of
 * neurons with genome metadata, one with unreadable metadata, and models each wrong for
 * `train` and `run` in one way (two inputs, no outputs, no Input, no batch, nothing to train),
 * a recurrent one (a weighted running sum through a Delay), and a small CNN on 4x4 images.
 * Usage: make_test_models OUTDIR */
#include <stdio.h>
#include <string.h>

#include "otc/otc.h"

static int save(otc_graph *g, const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    otc_status st = otc_model_save(g, path);
    if (st != OTC_OK) fprintf(stderr, "make_test_models: %s\n", otc_last_error());
    otc_graph_free(g);
    return st != OTC_OK;
}

/* x [B,2] -> h1, h2 -> o: an XOR-shaped net as NEAT would phenotype it. The genome facts
 * are made up for the test; real ones come from `otc evolve`. */
static otc_graph *neat_like(const char *meta) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id s2[2] = {x, x};
    int c01[2] = {0, 1};
    float w1[2] = {4.2f, -3.9f}, w2[2] = {-4.4f, 4.1f};
    otc_id h1 = otc_neuron(g, "h1", OTC_ACT_TANH, -1.5f, 1.0f, 2, s2, c01, w1);
    otc_id h2 = otc_neuron(g, "h2", OTC_ACT_TANH, -1.6f, 1.0f, 2, s2, c01, w2);
    otc_id s3[3] = {h1, h2, x};
    int c3[3] = {0, 0, 1};
    float w3[3] = {3.0f, 3.2f, 0.0f};
    otc_id o = otc_neuron(g, "out", OTC_ACT_SIGMOID, 1.0f, 1.0f, 3, s3, c3, w3);
    if (o < 0 || otc_graph_mark_output(g, o) || otc_graph_meta_set(g, "neat", meta)) {
        fprintf(stderr, "make_test_models: %s\n", otc_last_error());
        otc_graph_free(g);
        return NULL;
    }
    return g;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_test_models OUTDIR\n");
        return 2;
    }
    const char *dir = argv[1];
    int bad = 0;
    otc_graph *g = neat_like("{\"generation\":12,\"fitness\":3.91,\"species\":3,"
                             "\"hidden_nodes\":2,\"enabled_connections\":6,"
                             "\"disabled_connections\":1,\"note\":\"test\\u001b[31m\"}");
    bad |= !g || save(g, dir, "neat_xor.otm");
    g = neat_like("[1, 2, 3]");
    bad |= !g || save(g, dir, "bad_neat_meta.otm");

    g = otc_graph_new();
    otc_id a = otc_input(g, "a", otc_shape_2d(OTC_BATCH, 2));
    otc_id b = otc_input(g, "b", otc_shape_2d(OTC_BATCH, 2));
    otc_id s = otc_add(g, a, b);
    bad |= s < 0 || otc_graph_mark_output(g, s) || save(g, dir, "two_inputs.otm");

    g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 4));
    bad |= otc_activation(g, OTC_OP_TANH, x, 0) < 0 || save(g, dir, "no_output.otm");

    /* x [B,4] -> sum: one number per batch, not one per row */
    g = otc_graph_new();
    x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 4));
    otc_id sum = otc_sum(g, x);
    bad |= sum < 0 || otc_graph_mark_output(g, sum) || save(g, dir, "scalar_output.otm");

    /* an Input without a batch dimension */
    g = otc_graph_new();
    x = otc_input(g, "x", otc_shape_1d(4));
    otc_id t = otc_activation(g, OTC_OP_TANH, x, 0);
    bad |= t < 0 || otc_graph_mark_output(g, t) || save(g, dir, "unbatched.otm");

    /* no Input at all: a parameter through tanh */
    g = otc_graph_new();
    otc_id p = otc_param(g, "p", otc_shape_2d(1, 4), NULL);
    t = otc_activation(g, OTC_OP_TANH, p, 0);
    bad |= t < 0 || otc_graph_mark_output(g, t) || save(g, dir, "no_input.otm");

    /* nothing to train: x [B,3] -> tanh */
    g = otc_graph_new();
    x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    t = otc_activation(g, OTC_OP_TANH, x, 0);
    bad |= t < 0 || otc_graph_mark_output(g, t) || save(g, dir, "no_params.otm");

    /* two output neurons, each its own output, as NEAT marks them */
    g = otc_graph_new();
    x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id s2[2] = {x, x};
    int c01[2] = {0, 1};
    float w[2] = {0.5f, -0.5f};
    otc_id o0 = otc_neuron(g, "out0", OTC_ACT_SIGMOID, 0, 1, 2, s2, c01, w);
    otc_id o1 = otc_neuron(g, "out1", OTC_ACT_SIGMOID, 0, 1, 2, s2, c01, w);
    bad |= o1 < 0 || otc_graph_mark_output(g, o0) || otc_graph_mark_output(g, o1) ||
           save(g, dir, "two_outputs.otm");

    /* recurrent: h_t = w x_t + u h_{t-1} with w = u = 0.5 (h_0 = 0), so the steps 1, 2, 3
     * give 0.5, 1.25, 2.125; trained on running sums, w and u go to 1 */
    g = otc_graph_new();
    x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id pw = otc_param(g, "w", otc_shape_2d(1, 1), (float[]){0.5f});
    otc_id pu = otc_param(g, "u", otc_shape_2d(1, 1), (float[]){0.5f});
    otc_id prev = otc_delay(g, "h_prev", otc_shape_2d(OTC_BATCH, 1));
    otc_id h = otc_add(g, otc_matmul(g, x, pw), otc_matmul(g, prev, pu));
    bad |= h < 0 || otc_graph_set_input(g, prev, 0, h) || otc_graph_mark_output(g, h) ||
           save(g, dir, "running_sum.otm");

    /* a CNN for 4x4 one-channel images and 3 classes: conv 3x3 (2 channels, padding 1),
     * relu, maxpool 2, avgpool 1x2, flatten, a dense layer to the logits */
    g = otc_graph_new();
    otc_rng rng;
    otc_rng_seed(&rng, 5);
    x = otc_input(g, "image", (otc_shape){4, {OTC_BATCH, 1, 4, 4}});
    otc_id c =
        otc_conv2d_layer(g, x, 2, 3, &(otc_conv2d_params){.pad_h = 1, .pad_w = 1}, &rng, "conv1");
    otc_id mp = otc_maxpool2d(g, "pool1", otc_activation(g, OTC_OP_RELU, c, 0),
                              &(otc_pool2d_params){.kernel_h = 2, .kernel_w = 2});
    otc_id ap = otc_avgpool2d(g, "pool2", mp, &(otc_pool2d_params){.kernel_h = 1, .kernel_w = 2});
    otc_id logits = otc_linear(g, otc_flatten(g, ap), 3, &rng, "fc");
    bad |= logits < 0 || otc_graph_set_name(g, logits, "logits") ||
           otc_graph_mark_output(g, logits) || save(g, dir, "cnn.otm");
    return bad ? 1 : 0;
}
