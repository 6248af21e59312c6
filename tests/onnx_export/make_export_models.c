/* Writes the models the ONNX export test (tests/onnx_export_check.py) exports and runs: every
 * elementwise op and activation, NEAT neurons with every activation and aggregation (0 to 5
 * sources), the structural ops, a CNN, recurrent layers (RNN, LSTM, GRU) and a neuron loop
 * through Delays, two the export must refuse (a loss output, no batched input) and one with
 * 1 GiB values per sample.
 * Usage: make_export_models OUTDIR */
#include <stdio.h>

#include "otc/otc.h"

static int save(otc_graph *g, const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    otc_status st = g ? otc_model_save(g, path) : OTC_ERR_ARG;
    if (st != OTC_OK) fprintf(stderr, "make_export_models: %s: %s\n", name, otc_last_error());
    otc_graph_free(g);
    return st != OTC_OK;
}

/* Marks out as the one output, or frees g (NULL) when building failed. */
static otc_graph *done(otc_graph *g, otc_id out) {
    if (out < 0 || otc_graph_mark_output(g, out)) {
        fprintf(stderr, "make_export_models: %s\n", otc_last_error());
        otc_graph_free(g);
        return NULL;
    }
    return g;
}

/* x [B,4] -> every elementwise op and activation op, concatenated [B,4*n]. */
static otc_graph *elementwise(void) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 4));
    otc_id y = otc_scale(g, x, -0.75f);
    otc_id parts[64];
    int n = 0;
    parts[n++] = otc_add(g, x, y);
    parts[n++] = otc_sub(g, x, y);
    parts[n++] = otc_mul(g, x, y);
    /* a divisor kept away from zero: 1 + |x|... spelled with ops under test */
    parts[n++] = otc_div(
        g, x,
        otc_add(g, otc_activation(g, OTC_OP_SQUARE, y, 0), otc_activation(g, OTC_OP_EXP, y, 0)));
    parts[n++] = otc_neg(g, x);
    parts[n++] = otc_detach(g, x);
    for (otc_op op = OTC_OP_SIGMOID; op <= OTC_OP_IDENTITY; op++)
        parts[n++] = otc_activation(g, op, x,
                                    op == OTC_OP_LEAKY_RELU ? 0.1f
                                    : op == OTC_OP_ELU      ? 0.7f
                                                            : 0.0f);
    return done(g, otc_concat(g, n, parts, 1));
}

/* x [B,5] -> one neuron per (activation, aggregation), sources 0..5 of x's columns and of the
 * neurons before, concatenated [B,n]. */
static otc_graph *neurons(void) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 5));
    otc_id all[OTC_ACT_COUNT * OTC_AGG_COUNT];
    int n = 0;
    for (int a = 0; a < OTC_ACT_COUNT; a++)
        for (int agg = 0; agg < OTC_AGG_COUNT; agg++) {
            int k = (a + agg) % 6;
            otc_id src[5];
            int cols[5];
            float w[5];
            for (int i = 0; i < k; i++) {
                /* every other source is an earlier neuron (a [B,1] column), but not a sqrt
                 * one: its NaN (below 0) would make min, max and median depend on how a
                 * runtime orders NaN, which ONNX leaves open */
                bool neuron = i % 2 && n > i && (n - 1 - i) / OTC_AGG_COUNT != OTC_ACT_SQRT;
                src[i] = neuron ? all[n - 1 - i] : x;
                cols[i] = neuron ? 0 : (a + 2 * i + agg) % 5;
                w[i] = (float)((i * 7 + a * 3 + agg) % 11 - 5) * 0.37f;
            }
            char name[32];
            snprintf(name, sizeof name, "n%d_%d", a, agg);
            otc_id id = otc_neuron(g, name, (otc_act)a, 0.1f * (float)(agg - 3),
                                   0.5f + 0.25f * (float)agg, k, src, cols, w);
            if (id < 0 || otc_graph_set_agg(g, id, agg)) return done(g, -1);
            if (a == OTC_ACT_LEAKY_RELU || a == OTC_ACT_ELU) otc_graph_set_alpha(g, id, 0.3f);
            all[n++] = id;
        }
    return done(g, otc_concat(g, n, all, 1));
}

/* x [B,6] -> matmul, row_broadcast, reshape, flatten, slice, select, concat, softmax,
 * log_softmax, and the batch's sum and mean broadcast back over the rows. */
static otc_graph *structural(void) {
    otc_graph *g = otc_graph_new();
    otc_rng rng;
    otc_rng_seed(&rng, 3);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 6));
    otc_id w = otc_param(g, "w", otc_shape_2d(6, 4), NULL);
    otc_id b = otc_param(g, "b", otc_shape_1d(4), NULL);
    otc_tensor_uniform(otc_graph_param(g, w), &rng, -1, 1);
    otc_tensor_uniform(otc_graph_param(g, b), &rng, -1, 1);
    otc_id h = otc_add(g, otc_matmul(g, x, w), otc_row_broadcast(g, b, otc_matmul(g, x, w)));
    otc_id r = otc_reshape(g, x, (otc_shape){3, {OTC_BATCH, 2, 3}});
    otc_id sl = otc_flatten(g, otc_slice(g, r, 2, 1, 2));
    otc_id se = otc_select(g, r, -1, 2);
    otc_id one = otc_reshape(g, otc_sum(g, x), otc_shape_1d(1));
    otc_id mean = otc_reshape(g, otc_mean(g, h), otc_shape_1d(1));
    otc_id col = otc_slice(g, x, 1, 0, 1);
    otc_id parts[] = {otc_softmax(g, h),
                      otc_log_softmax(g, h),
                      sl,
                      se,
                      otc_row_broadcast(g, one, col),
                      otc_row_broadcast(g, mean, col)};
    return done(g, otc_concat(g, 6, parts, 1));
}

/* image [B,2,6,6] -> grouped dilated strided conv, relu, padded maxpool, padded avgpool, conv,
 * flatten, dense logits. */
static otc_graph *cnn(void) {
    otc_graph *g = otc_graph_new();
    otc_rng rng;
    otc_rng_seed(&rng, 7);
    otc_id x = otc_input(g, "image", (otc_shape){4, {OTC_BATCH, 2, 6, 6}});
    otc_id c = otc_conv2d_layer(
        g, x, 4, 3, &(otc_conv2d_params){.pad_h = 2, .pad_w = 1, .dilation_h = 2, .groups = 2},
        &rng, "conv1");
    otc_id mp = otc_maxpool2d(
        g, "pool1", otc_activation(g, OTC_OP_RELU, c, 0),
        &(otc_pool2d_params){.kernel_h = 3, .kernel_w = 2, .stride_h = 1, .pad_h = 1, .pad_w = 1});
    otc_id ap = otc_avgpool2d(
        g, "pool2", mp, &(otc_pool2d_params){.kernel_h = 2, .kernel_w = 2, .pad_h = 1, .pad_w = 1});
    otc_id c2 = otc_conv2d_layer(g, ap, 3, 2, &(otc_conv2d_params){.stride_h = 2, .stride_w = 1},
                                 &rng, "conv2");
    otc_id logits = otc_linear(g, otc_flatten(g, c2), 3, &rng, "fc");
    return done(g, otc_softmax(g, logits));
}

/* x [B,3] -> one recurrent layer stack of the cell, its h_t the output. */
static otc_graph *recurrent(otc_cell cell) {
    otc_graph *g = otc_graph_new();
    otc_rng rng;
    otc_rng_seed(&rng, 11 + cell);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    return done(g, otc_recurrent(g, cell, x, 4, 2, &rng, "rnn"));
}

/* x [B,2] -> two neurons in a loop through Delays (one unnamed), as a recurrent NEAT net. */
static otc_graph *neuron_loop(void) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id d1 = otc_delay(g, "h1_prev", otc_shape_2d(OTC_BATCH, 1));
    otc_id d2 = otc_delay(g, NULL, otc_shape_2d(OTC_BATCH, 1));
    otc_id s1[3] = {x, d2, d1};
    otc_id h1 = otc_neuron(g, "h1", OTC_ACT_TANH, 0.1f, 1.0f, 3, s1, (int[]){0, 0, 0},
                           (float[]){0.9f, -0.8f, 0.5f});
    otc_id s2[2] = {x, h1};
    otc_id h2 = otc_neuron(g, "h2", OTC_ACT_NP_SIGMOID, -0.2f, 1.5f, 2, s2, (int[]){1, 0},
                           (float[]){0.7f, 1.1f});
    if (h2 < 0 || otc_graph_set_input(g, d1, 0, h1) || otc_graph_set_input(g, d2, 0, h2))
        return done(g, -1);
    return done(g, h2);
}

/* Names the export's generated ones would take ("const:0", "#4", "state_in:d", ...): each
 * tensor must still have one name (the checker's single assignment). */
static otc_graph *taken_names(void) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "const:0", otc_shape_2d(OTC_BATCH, 2));
    otc_id d = otc_delay(g, "d", otc_shape_2d(OTC_BATCH, 2));
    otc_id h = otc_add(g, x, d);
    otc_id r = otc_activation(g, OTC_OP_RELU, h, 0);        /* unnamed: "#3" */
    otc_id e = otc_activation(g, OTC_OP_ELU, r, 1.0f);      /* unnamed, but see below */
    otc_id s = otc_activation(g, OTC_OP_SOFTPLUS, e, 0.0f); /* takes the name "#3" */
    if (s < 0 || otc_graph_set_name(g, h, "state_in:d") || otc_graph_set_name(g, s, "#3") ||
        otc_graph_set_name(g, e, "Greater:1") || otc_graph_set_input(g, d, 0, r))
        return done(g, -1);
    return done(g, s);
}

/* x [B,2] -> tanh -> mse against a target: a loss as the output. */
static otc_graph *loss_output(void) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id t = otc_input(g, "target", otc_shape_2d(OTC_BATCH, 2));
    otc_id l = otc_mse(g, otc_activation(g, OTC_OP_TANH, x, 0), t);
    if (l >= 0) otc_graph_set_name(g, l, "the_loss");
    return done(g, l);
}

/* A neuron with no sources in a graph with no batched input: no batch to size it by. */
static otc_graph *unsized(void) {
    otc_graph *g = otc_graph_new();
    otc_input(g, "x", otc_shape_1d(2));
    return done(g, otc_neuron(g, "lonely", OTC_ACT_TANH, 0.5f, 1.0f, 0, NULL, NULL, NULL));
}

/* x [B,16384,16384] -> relu: 1 GiB per sample, a few hundred bytes of model. */
static otc_graph *huge_values(void) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_make(3, (int[]){OTC_BATCH, 1 << 14, 1 << 14}));
    return done(g, otc_activation(g, OTC_OP_RELU, x, 0));
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_export_models OUTDIR\n");
        return 2;
    }
    const char *dir = argv[1];
    int bad = save(elementwise(), dir, "elementwise.otm");
    bad |= save(neurons(), dir, "neurons.otm");
    bad |= save(structural(), dir, "structural.otm");
    bad |= save(cnn(), dir, "cnn.otm");
    bad |= save(recurrent(OTC_CELL_RNN), dir, "rnn.otm");
    bad |= save(recurrent(OTC_CELL_LSTM), dir, "lstm.otm");
    bad |= save(recurrent(OTC_CELL_GRU), dir, "gru.otm");
    bad |= save(neuron_loop(), dir, "neuron_loop.otm");
    bad |= save(taken_names(), dir, "taken_names.otm");
    bad |= save(loss_output(), dir, "loss_output.otm");
    bad |= save(unsized(), dir, "unsized.otm");
    bad |= save(huge_values(), dir, "huge_values.otm");
    return bad ? 1 : 0;
}
