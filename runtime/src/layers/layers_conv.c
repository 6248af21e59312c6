/* The Conv2d layer: a weight and a bias parameter initialised as PyTorch's Conv2d does, and
 * the conv node over them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "otc/layers.h"
#include "otc/limits.h"

otc_id otc_conv2d_layer(otc_graph *g, otc_id x, int out_channels, int kernel,
                        const otc_conv2d_params *params, otc_rng *rng, const char *prefix) {
    const char *me = prefix ? prefix : "";
    if (!g || !rng) {
        otc_fail(OTC_ERR_ARG, "otc_conv2d_layer %s: %s is NULL", me, !g ? "graph" : "rng");
        return -1;
    }
    const otc_node *in = otc_graph_node(g, x);
    if (!in) {
        otc_fail(OTC_ERR_ARG, "otc_conv2d_layer %s: no node with id %d", me, (int)x);
        return -1;
    }
    int groups = params && params->groups ? params->groups : 1;
    if (in->shape.ndim != 4 || groups < 1 || in->shape.dim[1] % groups || out_channels < 1 ||
        kernel < 1 || kernel > OTC_MAX_DIM) {
        char label[64], shape[64];
        otc_fail(OTC_ERR_SHAPE,
                 "otc_conv2d_layer %s: input %s %s, %d output channels, kernel %d, %d groups "
                 "do not make a convolution (input [B,C,H,W], C and the outputs divisible by "
                 "the groups)",
                 me, otc_graph_node_label(g, x, label, sizeof label),
                 otc_shape_str(in->shape, shape, sizeof shape), out_channels, kernel, groups);
        return -1;
    }
    int cg = in->shape.dim[1] / groups;
    otc_shape ws = {4, {out_channels, cg, kernel, kernel}};
    otc_tensor *w0 = otc_tensor_new(ws);
    otc_tensor *b0 = otc_tensor_new(otc_shape_1d(out_channels));
    if (!w0 || !b0) {
        otc_tensor_free(w0);
        otc_tensor_free(b0);
        return -1;
    }
    float bound = 1.0f / sqrtf((float)cg * (float)kernel * (float)kernel);
    for (size_t i = 0; i < w0->size; i++) w0->data[i] = (2 * otc_rng_uniform(rng) - 1) * bound;
    for (size_t i = 0; i < b0->size; i++) b0->data[i] = (2 * otc_rng_uniform(rng) - 1) * bound;
    char w_name[256], b_name[256];
    if (prefix) {
        snprintf(w_name, sizeof w_name, "%s.weight", prefix);
        snprintf(b_name, sizeof b_name, "%s.bias", prefix);
    }
    int size_before = otc_graph_size(g);
    otc_id w = otc_param(g, prefix ? w_name : NULL, ws, w0->data);
    otc_id b = w >= 0 ? otc_param(g, prefix ? b_name : NULL, b0->shape, b0->data) : -1;
    otc_tensor_free(w0);
    otc_tensor_free(b0);
    otc_id y = b >= 0 ? otc_conv2d(g, prefix, x, w, b, params) : -1;
    if (y < 0) {
        char saved[512];
        snprintf(saved, sizeof saved, "%s", otc_last_error());
        otc_graph_truncate(g, size_before);
        otc_fail(OTC_ERR_SHAPE, "%s", saved);
    }
    return y;
}
