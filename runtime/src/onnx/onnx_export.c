/* otc_onnx_export: an otc graph as an ONNX model (opset 13, IR version 8). Inputs keep their
 * names with the batch as the symbolic first dimension "batch"; parameters become initializers
 * of their names; each Delay becomes a graph input "state_in:<delay>" and an output
 * "state_out:<delay>" (the caller carries the state, as the emitted C's caller does). Only what
 * the outputs need is written; a loss or an op ONNX cannot express is refused naming it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_export_build.h"
#include "otc/onnx.h"
#include "otc/version.h"

#define OPSET      13
#define IR_VERSION 8
/* protobuf's hard limit on one message: a model past it could not be read back. */
#define MAX_MODEL_BYTES ((size_t)INT32_MAX)

static const char model_doc[] =
    "Exported by otc. Inputs have the batch as their first dimension 'batch'. A recurrent "
    "model carries its state explicitly: for each delay node D, the input 'state_in:D' is D's "
    "value at this step (zeros at the first) and the output 'state_out:D' is what to feed as "
    "'state_in:D' at the next step.";

/* An otc node's name, or "#id" for an unnamed node (the label messages use). */
static char *base_name(oxw_builder *b, otc_id id) {
    const otc_node *nd = otc_graph_node(b->g, id);
    if (nd->name && *nd->name) return oxw_strdup(b, nd->name);
    char buf[32];
    snprintf(buf, sizeof buf, "#%d", (int)id);
    return oxw_strdup(b, buf);
}

/* The tensor name of an otc node's value: its base name, unless an unnamed node's "#id" is
 * another node's name. */
static char *value_name(oxw_builder *b, otc_id id) {
    const otc_node *nd = otc_graph_node(b->g, id);
    char *name = base_name(b, id);
    if (name && !(nd->name && *nd->name) && otc_graph_find(b->g, name) >= 0)
        return oxw_fresh(b, "node");
    return name;
}

static char *prefixed(oxw_builder *b, const char *prefix, const char *name) {
    size_t n = strlen(prefix) + strlen(name) + 1;
    char *s = oxw_alloc(b, n);
    if (!s) return NULL;
    snprintf(s, n, "%s%s", prefix, name);
    if (otc_graph_find(b->g, s) >= 0) return oxw_fresh(b, s);
    return s;
}

/* The key K of a delay's "state_in:K" / "state_out:K": its base name, or a fresh one when an
 * otc node already has either name (the pair must stay a pair). */
static char *state_key(oxw_builder *b, otc_id id) {
    char *key = base_name(b, id);
    for (int tries = 0; key && tries < 1000; tries++) {
        size_t n = strlen(key) + 16;
        char *in = oxw_alloc(b, n), *out = oxw_alloc(b, n);
        if (!in || !out) return NULL;
        snprintf(in, n, "state_in:%s", key);
        snprintf(out, n, "state_out:%s", key);
        if (otc_graph_find(b->g, in) < 0 && otc_graph_find(b->g, out) < 0) return key;
        key = oxw_fresh(b, base_name(b, id));
    }
    oxw_unsupported(b, "no free name for its state");
    return NULL;
}

/* A window's attributes: kernel, strides, pads (top, left, bottom, right), and for Conv the
 * dilations and group. */
static void window_attrs(oxw_builder *b, Onnx__NodeProto *n, const otc_window *w, bool conv) {
    if (!n) return;
    oxw_attr_ints(b, n, "kernel_shape", (const int64_t[]){w->kernel_h, w->kernel_w}, 2);
    oxw_attr_ints(b, n, "strides", (const int64_t[]){w->stride_h, w->stride_w}, 2);
    oxw_attr_ints(b, n, "pads", (const int64_t[]){w->pad_h, w->pad_w, w->pad_h, w->pad_w}, 4);
    if (conv) {
        oxw_attr_ints(b, n, "dilations", (const int64_t[]){w->dilation_h, w->dilation_w}, 2);
        oxw_attr_int(b, n, "group", w->groups);
    }
}

static int axis_of(int axis, int ndim) {
    return axis < 0 ? axis + ndim : axis;
}

/* The nodes of one otc node (not Input, Parameter or Delay: those are named values). */
static void export_node(oxw_builder *b, otc_id id, char **names, const char *out) {
    const otc_node *nd = otc_graph_node(b->g, id);
    const otc_op_info *info = otc_op_get(nd->op);
    const char *in[3] = {NULL, NULL, NULL};
    for (int i = 0; i < nd->n_inputs && i < 3; i++) in[i] = names[nd->inputs[i]];
    otc_shape x = nd->n_inputs ? otc_graph_node(b->g, nd->inputs[0])->shape : nd->shape;
    Onnx__NodeProto *n = NULL;
    b->at = id;
    if (info->kind == OTC_OPKIND_ELEMENTWISE) {
        oxw_expr(b, otc_op_map_expr(nd->op), in[0], in[1], otc_node_param(nd), out);
        return;
    }
    switch (nd->op) {
    case OTC_OP_NEURON: {
        const char **all = oxw_alloc(b, (size_t)nd->n_inputs * sizeof *all);
        if (!all) return;
        for (int i = 0; i < nd->n_inputs; i++) all[i] = names[nd->inputs[i]];
        oxw_neuron(b, nd, all, out);
        return;
    }
    case OTC_OP_MATMUL:
        oxw_op2(b, "MatMul", out, in[0], in[1]);
        return;
    case OTC_OP_ROW_BROADCAST:
        oxw_op2(b, "Expand", out, in[0], oxw_op1(b, "Shape", NULL, in[1]));
        return;
    case OTC_OP_SUM:
    case OTC_OP_MEAN:
        /* over every axis (no axes given), to a scalar */
        n = oxw_node(b, nd->op == OTC_OP_SUM ? "ReduceSum" : "ReduceMean", out, 1, in);
        oxw_attr_int(b, n, "keepdims", 0);
        return;
    case OTC_OP_RESHAPE:
    case OTC_OP_FLATTEN: {
        if (nd->op == OTC_OP_FLATTEN && otc_shape_is_batched(x) && x.ndim >= 1) {
            n = oxw_node(b, "Flatten", out, 1, in);
            oxw_attr_int(b, n, "axis", 1);
            return;
        }
        int64_t dims[OTC_MAX_DIMS];
        for (int i = 0; i < nd->shape.ndim; i++) dims[i] = nd->shape.dim[i]; /* batch: -1 */
        oxw_op2(b, "Reshape", out, in[0], oxw_const_i64(b, dims, nd->shape.ndim));
        return;
    }
    case OTC_OP_CONCAT: {
        const char **all = oxw_alloc(b, (size_t)nd->n_inputs * sizeof *all);
        if (!all) return;
        for (int i = 0; i < nd->n_inputs; i++) all[i] = names[nd->inputs[i]];
        n = oxw_node(b, "Concat", out, nd->n_inputs, all);
        oxw_attr_int(b, n, "axis", axis_of(nd->axis, x.ndim));
        return;
    }
    case OTC_OP_SLICE:
        oxw_slice(b, in[0], axis_of(nd->axis, x.ndim), nd->start, nd->len, out);
        return;
    case OTC_OP_SELECT: {
        int64_t index = nd->start;
        n = oxw_node(b, "Gather", out, 2, (const char *[]){in[0], oxw_const_i64(b, &index, 0)});
        oxw_attr_int(b, n, "axis", axis_of(nd->axis, x.ndim));
        return;
    }
    case OTC_OP_SOFTMAX:
    case OTC_OP_LOG_SOFTMAX:
        n = oxw_node(b, nd->op == OTC_OP_SOFTMAX ? "Softmax" : "LogSoftmax", out, 1, in);
        oxw_attr_int(b, n, "axis", -1);
        return;
    case OTC_OP_CONV2D:
        window_attrs(b, oxw_node(b, "Conv", out, nd->n_inputs, in), &nd->win, true);
        return;
    case OTC_OP_MAXPOOL2D:
        window_attrs(b, oxw_node(b, "MaxPool", out, 1, in), &nd->win, false);
        return;
    case OTC_OP_AVGPOOL2D:
        /* otc divides by the whole window, padding included */
        n = oxw_node(b, "AveragePool", out, 1, in);
        window_attrs(b, n, &nd->win, false);
        oxw_attr_int(b, n, "count_include_pad", 1);
        return;
    default:
        if (info->kind == OTC_OPKIND_LOSS)
            oxw_unsupported(b, "a loss is not exported (ONNX export writes the inference graph: "
                               "save the model without its loss, as 'otc train' does)");
        else
            oxw_unsupported(b, "the ONNX export has no spelling of this op");
        return;
    }
}

/* Marks what the outputs need; a Delay also needs its source (its next state). */
static otc_status mark_needed(const otc_graph *g, bool *need) {
    int size = otc_graph_size(g);
    otc_id *stack = malloc((size_t)(size > 0 ? size : 1) * sizeof *stack);
    if (!stack) return otc_fail(OTC_ERR_NOMEM, "onnx export: out of memory");
    int top = 0;
    for (int i = 0; i < otc_graph_output_count(g); i++) {
        otc_id o = otc_graph_output(g, i);
        if (!need[o]) need[o] = true, stack[top++] = o;
    }
    while (top) {
        const otc_node *nd = otc_graph_node(g, stack[--top]);
        for (int i = 0; i < nd->n_inputs; i++) {
            otc_id s = nd->inputs[i];
            if (!need[s]) need[s] = true, stack[top++] = s;
        }
    }
    free(stack);
    return OTC_OK;
}

static void free_builder(oxw_builder *b) {
    for (size_t i = 0; i < b->blocks.n; i++) free(b->blocks.v[i]);
    free(b->blocks.v);
    free(b->nodes.v);
    free(b->inits.v);
    free(b->inputs.v);
    free(b->outputs.v);
}

/* The graph's nodes, inputs, outputs and initializers into b. */
static void build(oxw_builder *b, char **names, const bool *need, const otc_id *order) {
    const otc_graph *g = b->g;
    int size = otc_graph_size(g);
    for (int i = 0; i < otc_graph_input_count(g); i++) {
        otc_id id = otc_graph_input(g, i);
        const otc_node *nd = otc_graph_node(g, id);
        if (!b->batch_like && otc_shape_is_batched(nd->shape)) b->batch_like = names[id];
        oxw_value_info(b, &b->inputs, names[id], nd->shape, NULL);
    }
    for (int i = 0; i < otc_graph_output_count(g); i++) {
        otc_id id = otc_graph_output(g, i);
        const otc_node *nd = otc_graph_node(g, id);
        b->at = id;
        if (otc_op_get(nd->op)->kind == OTC_OPKIND_LOSS) {
            oxw_unsupported(b,
                            "output %d is a loss, which is not exported (ONNX export writes "
                            "the inference graph: save the model without its loss, as 'otc "
                            "train' does)",
                            i);
            return;
        }
    }
    for (otc_id id = 0; id < size && !b->st; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (!need[id]) continue;
        if (nd->op == OTC_OP_PARAMETER) {
            oxw_init_f(b, names[id], nd->shape, nd->value->data);
        } else if (nd->op == OTC_OP_DELAY) {
            char lab[64];
            char *doc = oxw_alloc(b, 160);
            if (doc)
                snprintf(doc, 160,
                         "the state of delay %s: zeros at the first step, then "
                         "state_out of the step before",
                         otc_graph_node_label(g, id, lab, sizeof lab));
            oxw_value_info(b, &b->inputs, names[id], nd->shape, doc);
        }
    }
    for (int i = 0; i < size && !b->st; i++) {
        otc_id id = order[i];
        otc_op op = otc_graph_node(g, id)->op;
        if (!need[id] || op == OTC_OP_INPUT || op == OTC_OP_PARAMETER || op == OTC_OP_DELAY)
            continue;
        export_node(b, id, names, names[id]);
    }
    /* Outputs: a value can be a graph output once, and never an input or initializer as
     * well, so those are copied to an output of their own. */
    bool *used = oxw_alloc(b, (size_t)size * sizeof *used);
    for (int i = 0; i < otc_graph_output_count(g) && !b->st; i++) {
        otc_id id = otc_graph_output(g, i);
        const otc_node *nd = otc_graph_node(g, id);
        const char *name = names[id];
        if (used[id] || otc_op_get(nd->op)->kind == OTC_OPKIND_SOURCE || nd->op == OTC_OP_DELAY) {
            char buf[32];
            snprintf(buf, sizeof buf, "output:%d", i);
            name = oxw_op1(b, "Identity", prefixed(b, buf, ""), names[id]);
        }
        used[id] = true;
        oxw_value_info(b, &b->outputs, name, nd->shape, NULL);
    }
    for (otc_id id = 0; id < size && !b->st; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (!need[id] || nd->op != OTC_OP_DELAY) continue;
        /* names[id] is "state_in:K", K chosen so that "state_out:K" is free too */
        size_t n = strlen(names[id]) + 2;
        char *key = oxw_alloc(b, n);
        if (!key) return;
        snprintf(key, n, "state_out:%s", names[id] + strlen("state_in:"));
        const char *out = oxw_op1(b, "Identity", key, names[nd->inputs[0]]);
        oxw_value_info(b, &b->outputs, out, nd->shape, "the delay's state for the next step");
    }
}

static otc_status pack(oxw_builder *b, void **data, size_t *len) {
    Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
    graph.name = "otc";
    graph.n_node = b->nodes.n;
    graph.node = (Onnx__NodeProto **)b->nodes.v;
    graph.n_initializer = b->inits.n;
    graph.initializer = (Onnx__TensorProto **)b->inits.v;
    graph.n_input = b->inputs.n;
    graph.input = (Onnx__ValueInfoProto **)b->inputs.v;
    graph.n_output = b->outputs.n;
    graph.output = (Onnx__ValueInfoProto **)b->outputs.v;
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    opset.domain = "";
    opset.has_version = 1;
    opset.version = OPSET;
    Onnx__OperatorSetIdProto *opsets[1] = {&opset};
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1;
    m.ir_version = IR_VERSION;
    m.n_opset_import = 1;
    m.opset_import = opsets;
    m.producer_name = "otc";
    m.producer_version = OTC_VERSION;
    m.doc_string = (char *)model_doc;
    m.graph = &graph;
    size_t n = onnx__model_proto__get_packed_size(&m);
    if (n > MAX_MODEL_BYTES)
        return otc_fail(OTC_ERR_UNSUPPORTED,
                        "onnx export: the model would be %zu bytes, past the 2 GiB a protobuf "
                        "message can hold (ONNX's external data is not written)",
                        n);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return otc_fail(OTC_ERR_NOMEM, "onnx export: out of memory for %zu bytes", n);
    *len = onnx__model_proto__pack(&m, buf);
    *data = buf;
    return OTC_OK;
}

otc_status otc_onnx_export(const otc_graph *g, void **data, size_t *len) {
    if (!g || !data || !len) return otc_fail(OTC_ERR_ARG, "onnx export: NULL argument");
    *data = NULL;
    *len = 0;
    if (otc_graph_output_count(g) == 0)
        return otc_fail(OTC_ERR_ARG, "onnx export: the graph has no outputs");
    int size = otc_graph_size(g);
    oxw_builder b = {.g = g, .at = -1};
    otc_id *order = malloc((size_t)size * sizeof *order);
    bool *need = calloc((size_t)size, sizeof *need);
    char **names = calloc((size_t)size, sizeof *names);
    otc_status st = !order || !need || !names
                        ? otc_fail(OTC_ERR_NOMEM, "onnx export: out of memory")
                        : otc_graph_topo_order(g, order);
    if (!st) st = mark_needed(g, need);
    for (otc_id id = 0; !st && id < size; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        /* every input is written, used or not, so they keep their order */
        if (!need[id] && nd->op != OTC_OP_INPUT) continue;
        b.at = id;
        if (nd->op == OTC_OP_DELAY) {
            const char *key = state_key(&b, id);
            size_t n = key ? strlen(key) + 16 : 0;
            if (key && (names[id] = oxw_alloc(&b, n))) snprintf(names[id], n, "state_in:%s", key);
        } else
            names[id] = value_name(&b, id);
        st = b.st;
    }
    if (!st) {
        build(&b, names, need, order);
        st = b.st;
    }
    if (!st) st = pack(&b, data, len);
    free(order);
    free(need);
    free(names);
    free_builder(&b);
    return st;
}
