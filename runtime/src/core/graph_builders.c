/* Convenience builders over otc_graph_add, one per op. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/graph.h"

static otc_id add(otc_graph *g, otc_op op, int n, const otc_id *in) {
    otc_node_spec s = {.op = op, .n_inputs = n, .inputs = in};
    return otc_graph_add(g, &s);
}

otc_id otc_input(otc_graph *g, const char *name, otc_shape shape) {
    otc_node_spec s = {.op = OTC_OP_INPUT, .name = name, .shape = shape};
    return otc_graph_add(g, &s);
}

otc_id otc_param(otc_graph *g, const char *name, otc_shape shape, const float *init) {
    otc_node_spec s = {.op = OTC_OP_PARAMETER, .name = name, .shape = shape};
    otc_id id = otc_graph_add(g, &s);
    if (id >= 0 && init) {
        otc_tensor *t = otc_graph_param(g, id);
        memcpy(t->data, init, t->size * sizeof(float));
    }
    return id;
}

otc_id otc_add(otc_graph *g, otc_id a, otc_id b) {
    return add(g, OTC_OP_ADD, 2, (otc_id[]){a, b});
}
otc_id otc_sub(otc_graph *g, otc_id a, otc_id b) {
    return add(g, OTC_OP_SUB, 2, (otc_id[]){a, b});
}
otc_id otc_mul(otc_graph *g, otc_id a, otc_id b) {
    return add(g, OTC_OP_MUL, 2, (otc_id[]){a, b});
}
otc_id otc_div(otc_graph *g, otc_id a, otc_id b) {
    return add(g, OTC_OP_DIV, 2, (otc_id[]){a, b});
}
otc_id otc_neg(otc_graph *g, otc_id x) {
    return add(g, OTC_OP_NEG, 1, &x);
}
otc_id otc_detach(otc_graph *g, otc_id x) {
    return add(g, OTC_OP_DETACH, 1, &x);
}
otc_id otc_sum(otc_graph *g, otc_id x) {
    return add(g, OTC_OP_SUM, 1, &x);
}
otc_id otc_mean(otc_graph *g, otc_id x) {
    return add(g, OTC_OP_MEAN, 1, &x);
}
otc_id otc_flatten(otc_graph *g, otc_id x) {
    return add(g, OTC_OP_FLATTEN, 1, &x);
}
otc_id otc_softmax(otc_graph *g, otc_id x) {
    return add(g, OTC_OP_SOFTMAX, 1, &x);
}
otc_id otc_log_softmax(otc_graph *g, otc_id x) {
    return add(g, OTC_OP_LOG_SOFTMAX, 1, &x);
}
otc_id otc_matmul(otc_graph *g, otc_id a, otc_id b) {
    return add(g, OTC_OP_MATMUL, 2, (otc_id[]){a, b});
}
otc_id otc_row_broadcast(otc_graph *g, otc_id v, otc_id like) {
    return add(g, OTC_OP_ROW_BROADCAST, 2, (otc_id[]){v, like});
}
otc_id otc_mse(otc_graph *g, otc_id p, otc_id t) {
    return add(g, OTC_OP_MSE, 2, (otc_id[]){p, t});
}
otc_id otc_bce(otc_graph *g, otc_id p, otc_id t) {
    return add(g, OTC_OP_BCE, 2, (otc_id[]){p, t});
}
otc_id otc_softmax_ce(otc_graph *g, otc_id logits, otc_id labels) {
    return add(g, OTC_OP_SOFTMAX_CE, 2, (otc_id[]){logits, labels});
}

otc_id otc_scale(otc_graph *g, otc_id x, float factor) {
    otc_node_spec s = {.op = OTC_OP_SCALE, .n_inputs = 1, .inputs = &x, .scale = factor};
    return otc_graph_add(g, &s);
}

otc_id otc_activation(otc_graph *g, otc_op op, otc_id x, float alpha) {
    const otc_op_info *info = otc_op_get(op);
    if (!info || info->act < 0) {
        otc_fail(OTC_ERR_ARG, "op %d is not an activation", (int)op);
        return -1;
    }
    otc_node_spec s = {.op = op, .n_inputs = 1, .inputs = &x, .alpha = alpha};
    return otc_graph_add(g, &s);
}

otc_id otc_reshape(otc_graph *g, otc_id x, otc_shape shape) {
    otc_node_spec s = {.op = OTC_OP_RESHAPE, .n_inputs = 1, .inputs = &x, .shape = shape};
    return otc_graph_add(g, &s);
}

otc_id otc_concat(otc_graph *g, int n, const otc_id *xs, int axis) {
    otc_node_spec s = {.op = OTC_OP_CONCAT, .n_inputs = n, .inputs = xs, .axis = axis};
    return otc_graph_add(g, &s);
}

otc_id otc_slice(otc_graph *g, otc_id x, int axis, int start, int len) {
    otc_node_spec s = {
        .op = OTC_OP_SLICE, .n_inputs = 1, .inputs = &x, .axis = axis, .start = start, .len = len};
    return otc_graph_add(g, &s);
}

otc_id otc_select(otc_graph *g, otc_id x, int axis, int index) {
    otc_node_spec s = {
        .op = OTC_OP_SELECT, .n_inputs = 1, .inputs = &x, .axis = axis, .start = index, .len = 1};
    return otc_graph_add(g, &s);
}

otc_id otc_neuron(otc_graph *g, const char *name, otc_act act, float bias, float response, int n,
                  const otc_id *srcs, const int *cols, const float *weights) {
    char wname[256], bname[256];
    if (n < 0 || n > 65534) {
        otc_fail(OTC_ERR_ARG, "neuron: bad source count %d", n);
        return -1;
    }
    if (name) {
        snprintf(wname, sizeof wname, "%s.w", name);
        snprintf(bname, sizeof bname, "%s.b", name);
    }
    int size = g ? otc_graph_size(g) : 0;
    otc_id w = otc_param(g, name ? wname : NULL, otc_shape_1d(n > 0 ? n : 1), weights);
    otc_id b = w >= 0 ? otc_param(g, name ? bname : NULL, otc_shape_1d(1), &bias) : -1;
    if (b < 0) {
        if (g) otc_graph_truncate(g, size);
        return -1;
    }
    otc_id stack_in[64];
    otc_id *in = n + 2 <= 64 ? stack_in : malloc((size_t)(n + 2) * sizeof *in);
    if (!in) {
        otc_graph_truncate(g, size);
        otc_fail(OTC_ERR_NOMEM, "out of memory");
        return -1;
    }
    in[0] = w;
    in[1] = b;
    for (int i = 0; i < n; i++) in[2 + i] = srcs[i];
    otc_node_spec s = {.op = OTC_OP_NEURON,
                       .name = name,
                       .n_inputs = n + 2,
                       .inputs = in,
                       .cols = cols,
                       .scale = response,
                       .alpha = otc_act_get(act) ? otc_act_get(act)->default_a : 0.0f,
                       .act = (int)act};
    otc_id id = otc_graph_add(g, &s);
    if (in != stack_in) free(in);
    if (id < 0) {
        /* keep the message from the failed add; drop the orphaned parameters */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", otc_last_error());
        otc_graph_truncate(g, size);
        otc_fail(OTC_ERR_SHAPE, "%s", msg);
    }
    return id;
}

otc_id otc_delay(otc_graph *g, const char *name, otc_shape shape) {
    otc_id self = -1;
    otc_node_spec s = {
        .op = OTC_OP_DELAY, .name = name, .n_inputs = 1, .inputs = &self, .shape = shape};
    return otc_graph_add(g, &s);
}

/* Zero means 1 for stride, dilation and groups: a zero-initialised params struct is the
 * plain convolution. */
static int one_if_zero(int v) {
    return v == 0 ? 1 : v;
}

otc_id otc_conv2d(otc_graph *g, const char *name, otc_id x, otc_id w, otc_id b,
                  const otc_conv2d_params *params) {
    otc_conv2d_params p = params ? *params : (otc_conv2d_params){0};
    const otc_node *wn = g ? otc_graph_node(g, w) : NULL;
    otc_window win = {.stride_h = one_if_zero(p.stride_h),
                      .stride_w = one_if_zero(p.stride_w),
                      .pad_h = p.pad_h,
                      .pad_w = p.pad_w,
                      .dilation_h = one_if_zero(p.dilation_h),
                      .dilation_w = one_if_zero(p.dilation_w),
                      .groups = one_if_zero(p.groups)};
    /* The kernel is the weight's; a weight that is not 4-d is reported by the shape rule. */
    if (wn && wn->shape.ndim == 4) {
        win.kernel_h = wn->shape.dim[2];
        win.kernel_w = wn->shape.dim[3];
    }
    otc_id in[3] = {x, w, b};
    otc_node_spec s = {
        .op = OTC_OP_CONV2D, .name = name, .n_inputs = b >= 0 ? 3 : 2, .inputs = in, .win = win};
    return otc_graph_add(g, &s);
}

static otc_id pool(otc_graph *g, otc_op op, const char *name, otc_id x,
                   const otc_pool2d_params *params) {
    otc_pool2d_params p = params ? *params : (otc_pool2d_params){0};
    otc_window win = {.kernel_h = p.kernel_h,
                      .kernel_w = p.kernel_w,
                      .stride_h = p.stride_h ? p.stride_h : p.kernel_h,
                      .stride_w = p.stride_w ? p.stride_w : p.kernel_w,
                      .pad_h = p.pad_h,
                      .pad_w = p.pad_w,
                      .dilation_h = 1,
                      .dilation_w = 1,
                      .groups = 1};
    otc_node_spec s = {.op = op, .name = name, .n_inputs = 1, .inputs = &x, .win = win};
    return otc_graph_add(g, &s);
}

otc_id otc_maxpool2d(otc_graph *g, const char *name, otc_id x, const otc_pool2d_params *params) {
    return pool(g, OTC_OP_MAXPOOL2D, name, x, params);
}

otc_id otc_avgpool2d(otc_graph *g, const char *name, otc_id x, const otc_pool2d_params *params) {
    return pool(g, OTC_OP_AVGPOOL2D, name, x, params);
}
