/* Recurrent layers (RNN, LSTM, GRU, stacked) built from graph nodes: one time step of
 * matmuls, slices and elementwise gates, closed through Delay nodes; PyTorch's equations and
 * parameter names, with the weights stored transposed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "otc/layers.h"

int otc_cell_gates(otc_cell cell) {
    return cell == OTC_CELL_LSTM ? 4 : cell == OTC_CELL_GRU ? 3 : 1;
}

static const char *cell_name(otc_cell cell) {
    return cell == OTC_CELL_LSTM ? "otc_lstm" : cell == OTC_CELL_GRU ? "otc_gru" : "otc_rnn";
}

/* A parameter of `shape` drawn from U(-k, k), named "<prefix>.<key>_l<layer>". */
static otc_id uparam(otc_graph *g, const char *prefix, const char *key, int layer, otc_shape shape,
                     float k, otc_rng *rng) {
    otc_tensor *t = otc_tensor_new(shape);
    if (!t) return -1;
    otc_tensor_uniform(t, rng, -k, k);
    char name[300];
    snprintf(name, sizeof name, "%s.%s_l%d", prefix, key, layer);
    otc_id p = otc_param(g, name, shape, t->data);
    otc_tensor_free(t);
    return p;
}

/* x W + row_broadcast(b): one affine map of the step. */
static otc_id affine(otc_graph *g, otc_id x, otc_id w, otc_id b) {
    otc_id xw = otc_matmul(g, x, w);
    return otc_add(g, xw, otc_row_broadcast(g, b, xw));
}

static otc_id gate(otc_graph *g, otc_id pre, int k, int H, otc_op act) {
    return otc_activation(g, act, otc_slice(g, pre, 1, k * H, H), 0.0f);
}

/* One layer's step; every builder returns -1 on error, which propagates. */
static otc_id cell_step(otc_graph *g, otc_cell cell, otc_id x, int in, int H, int layer,
                        otc_rng *rng, const char *prefix) {
    int G = otc_cell_gates(cell);
    float k = 1.0f / sqrtf((float)H);
    otc_id w_ih = uparam(g, prefix, "weight_ih", layer, otc_shape_2d(in, G * H), k, rng);
    otc_id w_hh = uparam(g, prefix, "weight_hh", layer, otc_shape_2d(H, G * H), k, rng);
    otc_id b_ih = uparam(g, prefix, "bias_ih", layer, otc_shape_1d(G * H), k, rng);
    otc_id b_hh = uparam(g, prefix, "bias_hh", layer, otc_shape_1d(G * H), k, rng);
    if (w_ih < 0 || w_hh < 0 || b_ih < 0 || b_hh < 0) return -1;
    char name[300];
    snprintf(name, sizeof name, "%s.h_l%d", prefix, layer);
    otc_id h = otc_delay(g, name, otc_shape_2d(OTC_BATCH, H));
    if (h < 0) return -1;
    otc_id gi = affine(g, x, w_ih, b_ih), gh = affine(g, h, w_hh, b_hh), h_new = -1;
    if (cell == OTC_CELL_RNN) {
        h_new = otc_activation(g, OTC_OP_TANH, otc_add(g, gi, gh), 0.0f);
    } else if (cell == OTC_CELL_LSTM) {
        snprintf(name, sizeof name, "%s.c_l%d", prefix, layer);
        otc_id c = otc_delay(g, name, otc_shape_2d(OTC_BATCH, H));
        if (c < 0) return -1;
        otc_id pre = otc_add(g, gi, gh);
        otc_id i = gate(g, pre, 0, H, OTC_OP_SIGMOID), f = gate(g, pre, 1, H, OTC_OP_SIGMOID);
        otc_id gg = gate(g, pre, 2, H, OTC_OP_TANH), o = gate(g, pre, 3, H, OTC_OP_SIGMOID);
        otc_id c_new = otc_add(g, otc_mul(g, f, c), otc_mul(g, i, gg));
        if (c_new < 0 || otc_graph_set_input(g, c, 0, c_new) != OTC_OK) return -1;
        h_new = otc_mul(g, o, otc_activation(g, OTC_OP_TANH, c_new, 0.0f));
    } else {
        otc_id rz = otc_activation(
            g, OTC_OP_SIGMOID,
            otc_add(g, otc_slice(g, gi, 1, 0, 2 * H), otc_slice(g, gh, 1, 0, 2 * H)), 0.0f);
        otc_id r = otc_slice(g, rz, 1, 0, H), z = otc_slice(g, rz, 1, H, H);
        otc_id n = otc_activation(
            g, OTC_OP_TANH,
            otc_add(g, otc_slice(g, gi, 1, 2 * H, H), otc_mul(g, r, otc_slice(g, gh, 1, 2 * H, H))),
            0.0f);
        /* (1 - z) n + z h = n + z (h - n) */
        h_new = otc_add(g, n, otc_mul(g, z, otc_sub(g, h, n)));
    }
    if (h_new < 0 || otc_graph_set_input(g, h, 0, h_new) != OTC_OK) return -1;
    return h_new;
}

otc_id otc_recurrent(otc_graph *g, otc_cell cell, otc_id x, int hidden, int layers, otc_rng *rng,
                     const char *prefix) {
    const char *fn = cell_name(cell);
    if (!g || !rng || !prefix) {
        otc_fail(OTC_ERR_ARG, "%s: %s is NULL", fn, !g ? "graph" : !rng ? "rng" : "prefix");
        return -1;
    }
    if ((int)cell < 0 || cell > OTC_CELL_GRU) {
        otc_fail(OTC_ERR_ARG, "otc_recurrent: unknown cell %d", (int)cell);
        return -1;
    }
    const otc_node *in = otc_graph_node(g, x);
    if (!in) {
        otc_fail(OTC_ERR_ARG, "%s %s: no node with id %d", fn, prefix, (int)x);
        return -1;
    }
    if (in->shape.ndim != 2 || !otc_shape_is_batched(in->shape) || in->shape.dim[1] <= 0) {
        char lab[64], shp[64];
        otc_fail(OTC_ERR_SHAPE, "%s %s: input %s has shape %s, want [batch, features]", fn, prefix,
                 otc_graph_node_label(g, x, lab, 64), otc_shape_str(in->shape, shp, sizeof shp));
        return -1;
    }
    if (hidden <= 0 || layers <= 0) {
        otc_fail(OTC_ERR_ARG, "%s %s: hidden %d and layers %d must be positive", fn, prefix, hidden,
                 layers);
        return -1;
    }
    int size_before = otc_graph_size(g);
    otc_id h = x;
    int in_features = in->shape.dim[1];
    for (int l = 0; l < layers; l++) {
        h = cell_step(g, cell, h, l ? hidden : in_features, hidden, l, rng, prefix);
        if (h < 0) {
            char saved[512];
            snprintf(saved, sizeof saved, "%s", otc_last_error());
            otc_graph_truncate(g, size_before);
            otc_fail(OTC_ERR_ARG, "%s %s layer %d: %s", fn, prefix, l, saved);
            return -1;
        }
    }
    return h;
}

otc_id otc_rnn(otc_graph *g, otc_id x, int hidden, int layers, otc_rng *rng, const char *prefix) {
    return otc_recurrent(g, OTC_CELL_RNN, x, hidden, layers, rng, prefix);
}

otc_id otc_lstm(otc_graph *g, otc_id x, int hidden, int layers, otc_rng *rng, const char *prefix) {
    return otc_recurrent(g, OTC_CELL_LSTM, x, hidden, layers, rng, prefix);
}

otc_id otc_gru(otc_graph *g, otc_id x, int hidden, int layers, otc_rng *rng, const char *prefix) {
    return otc_recurrent(g, OTC_CELL_GRU, x, hidden, layers, rng, prefix);
}

/* The parameter "<prefix>.<key>", checked against count. */
static otc_status torch_param(otc_graph *g, const char *prefix, const char *key, size_t count,
                              const void *data, const char *fn, otc_tensor **out) {
    char name[300];
    snprintf(name, sizeof name, "%s.%s", prefix ? prefix : "", key ? key : "");
    if (!g || !prefix || !key || !data)
        return otc_fail(OTC_ERR_ARG, "%s: graph, prefix, key and data are required", fn);
    otc_id id = otc_graph_find(g, name);
    otc_tensor *t = id >= 0 ? otc_graph_param(g, id) : NULL;
    if (!t) return otc_fail(OTC_ERR_ARG, "%s: no parameter '%s'", fn, name);
    if (t->size != count)
        return otc_fail(OTC_ERR_SHAPE, "%s: '%s' has %zu values, given %zu", fn, name, t->size,
                        count);
    *out = t;
    return OTC_OK;
}

/* The graph holds [cols, rows] for PyTorch's [rows, cols]; biases are 1-D and copy as is. */
static void transpose_copy(const otc_tensor *t, const float *src, float *dst, bool to_graph) {
    if (t->shape.ndim != 2) {
        memcpy(dst, src, t->size * sizeof(float));
        return;
    }
    int gr = t->shape.dim[0], gc = t->shape.dim[1]; /* graph rows (in), cols (gates*H) */
    for (int i = 0; i < gr; i++)
        for (int j = 0; j < gc; j++) {
            if (to_graph)
                dst[(size_t)i * gc + j] = src[(size_t)j * gr + i];
            else
                dst[(size_t)j * gr + i] = src[(size_t)i * gc + j];
        }
}

otc_status otc_recurrent_load_torch(otc_graph *g, const char *prefix, const char *key,
                                    const float *data, size_t count) {
    otc_tensor *t = NULL;
    otc_status st = torch_param(g, prefix, key, count, data, "otc_recurrent_load_torch", &t);
    if (st) return st;
    transpose_copy(t, data, t->data, true);
    return OTC_OK;
}

otc_status otc_recurrent_read_torch(otc_graph *g, const char *prefix, const char *key, float *data,
                                    size_t count) {
    otc_tensor *t = NULL;
    otc_status st = torch_param(g, prefix, key, count, data, "otc_recurrent_read_torch", &t);
    if (st) return st;
    transpose_copy(t, t->data, data, false);
    return OTC_OK;
}
