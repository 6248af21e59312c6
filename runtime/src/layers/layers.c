/* Layers built from graph nodes: Linear (matmul + row-broadcast bias) and an MLP of them.
 * Layers are only a way to add nodes; the graph keeps no trace of them beyond names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "otc/layers.h"

/* Builders add nodes as they go; on a failure part way, drop what this call added so the
 * graph is as the caller left it. The failure's message is kept. */
static otc_id undo(otc_graph *g, int size_before) {
    char saved[512];
    snprintf(saved, sizeof saved, "%s", otc_last_error());
    otc_graph_truncate(g, size_before);
    otc_fail(OTC_ERR_ARG, "%s", saved);
    return -1;
}

/* The Linear layer under either initialisation: Xavier with a zero bias, or PyTorch's
 * nn.Linear default (kaiming_uniform(a=sqrt(5)) is U(-1/sqrt(in), 1/sqrt(in)), the bias
 * alike). */
static otc_id linear(otc_graph *g, otc_id x, int out_features, otc_rng *rng, const char *prefix,
                     bool torch_init) {
    if (!g || !rng) {
        otc_fail(OTC_ERR_ARG, "otc_linear: %s is NULL", !g ? "graph" : "rng");
        return -1;
    }
    char label[64];
    const otc_node *in = otc_graph_node(g, x);
    if (!in) {
        otc_fail(OTC_ERR_ARG, "otc_linear: no node with id %d", (int)x);
        return -1;
    }
    if (in->shape.ndim != 2 || in->shape.dim[1] <= 0) {
        char shape[64];
        otc_fail(OTC_ERR_SHAPE, "otc_linear%s%s: input %s has shape %s, want [rows, features]",
                 prefix ? " " : "", prefix ? prefix : "", otc_graph_node_label(g, x, label, 64),
                 otc_shape_str(in->shape, shape, sizeof shape));
        return -1;
    }
    if (out_features <= 0) {
        otc_fail(OTC_ERR_ARG, "otc_linear%s%s: out_features %d must be positive", prefix ? " " : "",
                 prefix ? prefix : "", out_features);
        return -1;
    }
    int in_features = in->shape.dim[1];

    otc_tensor *w0 = otc_tensor_new(otc_shape_2d(in_features, out_features));
    if (!w0) return -1;
    otc_tensor *b0 = torch_init ? otc_tensor_new(otc_shape_1d(out_features)) : NULL;
    if (torch_init && !b0) {
        otc_tensor_free(w0);
        return -1;
    }
    if (torch_init) {
        float bound = 1.0f / sqrtf((float)in_features);
        otc_tensor_uniform(w0, rng, -bound, bound);
        otc_tensor_uniform(b0, rng, -bound, bound);
    } else {
        otc_tensor_xavier(w0, rng, in_features, out_features);
    }

    char w_name[256], b_name[256];
    if (prefix) {
        snprintf(w_name, sizeof w_name, "%s.weight", prefix);
        snprintf(b_name, sizeof b_name, "%s.bias", prefix);
    }
    int size_before = otc_graph_size(g);
    otc_id w = otc_param(g, prefix ? w_name : NULL, w0->shape, w0->data);
    otc_tensor_free(w0);
    if (w < 0) {
        otc_tensor_free(b0);
        return undo(g, size_before);
    }
    otc_id b =
        otc_param(g, prefix ? b_name : NULL, otc_shape_1d(out_features), b0 ? b0->data : NULL);
    otc_tensor_free(b0);
    if (b < 0) return undo(g, size_before);
    otc_id xw = otc_matmul(g, x, w);
    if (xw < 0) return undo(g, size_before);
    otc_id bias = otc_row_broadcast(g, b, xw);
    if (bias < 0) return undo(g, size_before);
    otc_id y = otc_add(g, xw, bias);
    if (y < 0) return undo(g, size_before);
    return y;
}

otc_id otc_linear(otc_graph *g, otc_id x, int out_features, otc_rng *rng, const char *prefix) {
    return linear(g, x, out_features, rng, prefix, false);
}

otc_id otc_linear_torch(otc_graph *g, otc_id x, int out_features, otc_rng *rng,
                        const char *prefix) {
    return linear(g, x, out_features, rng, prefix, true);
}

otc_id otc_mlp(otc_graph *g, otc_id x, int n, const int *sizes, otc_op hidden_act, int out_act,
               otc_rng *rng) {
    if (!g || !rng || n <= 0 || !sizes) {
        otc_fail(OTC_ERR_ARG, "otc_mlp: %s",
                 !g     ? "graph is NULL"
                 : !rng ? "rng is NULL"
                        : "needs at least one layer size");
        return -1;
    }
    int size_before = otc_graph_size(g);
    otc_id h = x;
    for (int i = 0; i < n; i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "fc%d", i + 1);
        h = otc_linear(g, h, sizes[i], rng, prefix);
        if (h < 0) return undo(g, size_before);
        int act = i < n - 1 ? (int)hidden_act : out_act;
        if (act < 0) continue;
        /* The activation's own default parameter (LeakyReLU slope, ELU alpha). */
        const otc_op_info *op = otc_op_get((otc_op)act);
        const otc_act_info *info = op && op->act >= 0 ? otc_act_get((otc_act)op->act) : NULL;
        h = otc_activation(g, (otc_op)act, h, info ? info->default_a : 0.0f);
        if (h < 0) return undo(g, size_before);
    }
    return h;
}
