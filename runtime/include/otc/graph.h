/* The graph IR: nodes in an arena, referred to by integer ids, shapes checked as they are
 * built. One graph is what everything builds, saves, draws, runs and compiles. */
#ifndef OTC_GRAPH_H
#define OTC_GRAPH_H

#include <stdint.h>

#include "ops.h"
#include "tensor.h"

typedef int32_t otc_id; /* -1 is "no node" and what builders return on error */

/* The window of a Conv2d or pooling node (NCHW). Output size along H (W alike):
 * OH = (H + 2 pad_h - dilation_h (kernel_h - 1) - 1) / stride_h + 1, at least 1. */
typedef struct {
    int kernel_h, kernel_w;     /* pooling: the window; Conv2d: its weight's KH, KW */
    int stride_h, stride_w;     /* >= 1 */
    int pad_h, pad_w;           /* >= 0 on each side; pooling: at most half the kernel */
    int dilation_h, dilation_w; /* Conv2d: >= 1; pooling: 1 */
    int groups;                 /* Conv2d: >= 1, divides C and O; pooling: 1 */
} otc_window;

/* A read-only view of a node; change a graph only through the functions below. */
typedef struct {
    otc_op op;
    char *name; /* NULL or unique within the graph */
    int n_inputs;
    otc_id *inputs;       /* Neuron: W, b, then the sources */
    int *cols;            /* Neuron: column read from each source (n_inputs - 2 of them) */
    otc_shape shape;      /* a leading OTC_BATCH marks a per-sample value */
    float alpha;          /* activation parameter (LeakyReLU slope, ELU alpha) */
    float scale;          /* ScalarMultiply factor; Neuron response */
    int act;              /* Neuron activation (otc_act) */
    int agg;              /* Neuron aggregation (otc_agg; 0 is sum) */
    int axis, start, len; /* Concat/Slice/Select */
    otc_tensor *value;    /* Parameter: its values (owned by the graph) */
    bool trainable;       /* Parameter: updated by optimisers */
    otc_window win;       /* Conv2d, MaxPool2d, AvgPool2d (all zero for other ops) */
} otc_node;

typedef struct otc_graph otc_graph;

otc_graph *otc_graph_new(void);
void otc_graph_free(otc_graph *g);
otc_graph *otc_graph_clone(const otc_graph *g);
/* Copies g's nodes, outputs and metadata into dst, nodes in id order. On entry map[i] >= 0
 * says node i is dst's node map[i] already: it is not copied, and its readers read map[i]
 * (e.g. a transformed input); every other node is copied, parameters with their values and
 * trainability, and map[i] set to its id in dst. map has g's size. */
otc_status otc_graph_copy_into(otc_graph *dst, const otc_graph *g, otc_id *map);
/* A training graph's inference graph: a copy of what its marked outputs compute (losses
 * marked as outputs left out), without the loss nodes and the target inputs only they read;
 * parameters, names and metadata copied. NULL with the error set when no output remains.
 * The caller frees it. */
otc_graph *otc_graph_inference(const otc_graph *g);
int otc_graph_size(const otc_graph *g);
/* Does the graph hold state between forwards (a Delay node)? */
bool otc_graph_is_recurrent(const otc_graph *g);
const otc_node *otc_graph_node(const otc_graph *g, otc_id id);
/* The value the leaf `a` of the node's expressions stands for (otc/expr.h): the scale of a
 * ScalarMultiply, the alpha of an activation or a Neuron. */
float otc_node_param(const otc_node *nd);
/* "name" or "#id", for messages; buf >= 64 bytes. */
const char *otc_graph_node_label(const otc_graph *g, otc_id id, char *buf, size_t len);
otc_id otc_graph_find(const otc_graph *g, const char *name);
otc_status otc_graph_set_name(otc_graph *g, otc_id id, const char *name);
/* Parameter values, writable (for initialisation and for writing trained weights back). */
otc_tensor *otc_graph_param(otc_graph *g, otc_id id);
otc_status otc_graph_set_trainable(otc_graph *g, otc_id id, bool trainable);

/* Outputs, in the order marked; inputs are the Input nodes in id order. */
otc_status otc_graph_mark_output(otc_graph *g, otc_id id);
int otc_graph_output_count(const otc_graph *g);
otc_id otc_graph_output(const otc_graph *g, int i);
int otc_graph_input_count(const otc_graph *g);
otc_id otc_graph_input(const otc_graph *g, int i);

/* Drop every node with id >= n (e.g. loss nodes added for training, before saving). */
otc_status otc_graph_truncate(otc_graph *g, int n);

/* Free-form metadata saved with the model: key -> JSON text (e.g. "genome"). */
otc_status otc_graph_meta_set(otc_graph *g, const char *key, const char *json);
const char *otc_graph_meta_get(const otc_graph *g, const char *key);
int otc_graph_meta_count(const otc_graph *g);
const char *otc_graph_meta_key(const otc_graph *g, int i);

/* Topological order of all nodes (a Delay's input edge does not order). Fills order[size]
 * and returns OTC_OK, or OTC_ERR_CYCLE with a message naming the cycle "a -> b -> a". */
otc_status otc_graph_topo_order(const otc_graph *g, otc_id *order);

/* ---- builders: each returns the new node's id, or -1 with otc_last_error() set ---- */

/* The generic builder every other one (and the model loader) goes through: checks the op's
 * arity, that inputs exist, and infers the shape (Input/Parameter/Reshape use spec.shape). */
typedef struct {
    otc_op op;
    const char *name;
    int n_inputs;
    const otc_id *inputs;
    const int *cols;
    otc_shape shape;
    float alpha, scale;
    int act;
    int axis, start, len;
    int agg;        /* Neuron: otc_agg (0, sum, when left out) */
    otc_window win; /* Conv2d (kernel_h/w must match the weight), MaxPool2d, AvgPool2d */
} otc_node_spec;
otc_id otc_graph_add(otc_graph *g, const otc_node_spec *spec);
/* Rewire input `slot` of `node` (shapes rechecked); may create a cycle, which
 * otc_graph_topo_order then reports. Delay nodes are connected this way. */
otc_status otc_graph_set_input(otc_graph *g, otc_id node, int slot, otc_id src);

otc_id otc_input(otc_graph *g, const char *name, otc_shape shape);
/* Zero-initialised unless init != NULL (otc_shape_size(shape) floats). */
otc_id otc_param(otc_graph *g, const char *name, otc_shape shape, const float *init);
otc_id otc_add(otc_graph *g, otc_id a, otc_id b);
otc_id otc_sub(otc_graph *g, otc_id a, otc_id b);
otc_id otc_mul(otc_graph *g, otc_id a, otc_id b);
otc_id otc_div(otc_graph *g, otc_id a, otc_id b);
otc_id otc_neg(otc_graph *g, otc_id x);
otc_id otc_scale(otc_graph *g, otc_id x, float factor);
otc_id otc_detach(otc_graph *g, otc_id x);
/* Any activation op (OTC_OP_SIGMOID .. OTC_OP_IDENTITY); alpha for LeakyReLU/ELU. */
otc_id otc_activation(otc_graph *g, otc_op op, otc_id x, float alpha);
otc_id otc_matmul(otc_graph *g, otc_id a, otc_id b);
otc_id otc_row_broadcast(otc_graph *g, otc_id v, otc_id like);
otc_id otc_sum(otc_graph *g, otc_id x);
otc_id otc_mean(otc_graph *g, otc_id x);
otc_id otc_reshape(otc_graph *g, otc_id x, otc_shape shape);
otc_id otc_flatten(otc_graph *g, otc_id x);
otc_id otc_concat(otc_graph *g, int n, const otc_id *xs, int axis);
otc_id otc_slice(otc_graph *g, otc_id x, int axis, int start, int len);
otc_id otc_select(otc_graph *g, otc_id x, int axis, int index);
otc_id otc_softmax(otc_graph *g, otc_id x);
otc_id otc_log_softmax(otc_graph *g, otc_id x);
otc_id otc_mse(otc_graph *g, otc_id pred, otc_id target);
otc_id otc_bce(otc_graph *g, otc_id prob, otc_id target);
otc_id otc_softmax_ce(otc_graph *g, otc_id logits, otc_id labels);
/* A NEAT neuron: creates its weight [n] and bias [1] parameters ("<name>.w", "<name>.b"
 * when named). weights may be NULL (zeros). Sources are [B,n] values; cols pick a column. */
otc_id otc_neuron(otc_graph *g, const char *name, otc_act act, float bias, float response, int n,
                  const otc_id *srcs, const int *cols, const float *weights);
/* Set a Neuron's aggregation (otc_agg; a new neuron sums). */
otc_status otc_graph_set_agg(otc_graph *g, otc_id neuron, int agg);
/* Set a Neuron's activation parameter (a new neuron has its activation's default). */
otc_status otc_graph_set_alpha(otc_graph *g, otc_id neuron, float alpha);
/* A delay of a value of `shape`; connect its source later with otc_graph_set_input(.., 0, src).
 * Until connected its input is itself (it then holds zeros). */
otc_id otc_delay(otc_graph *g, const char *name, otc_shape shape);

/* Conv2d attributes for otc_conv2d; a zero stride, dilation or groups means 1, so
 * (otc_conv2d_params){.pad_h = 2, .pad_w = 2} is a stride-1 "same" 5x5 convolution. */
typedef struct {
    int stride_h, stride_w;
    int pad_h, pad_w;
    int dilation_h, dilation_w;
    int groups;
} otc_conv2d_params;
/* y = conv2d(x [B,C,H,W], w [O,C/groups,KH,KW]) + b [O] (bias -1 for none); params NULL for
 * stride 1, no padding, dilation 1, one group. name may be NULL. Cross-correlation, as
 * PyTorch's Conv2d. */
otc_id otc_conv2d(otc_graph *g, const char *name, otc_id x, otc_id w, otc_id b,
                  const otc_conv2d_params *params);
/* Pooling attributes; a zero stride means the kernel (PyTorch's default). */
typedef struct {
    int kernel_h, kernel_w;
    int stride_h, stride_w;
    int pad_h, pad_w;
} otc_pool2d_params;
otc_id otc_maxpool2d(otc_graph *g, const char *name, otc_id x, const otc_pool2d_params *params);
otc_id otc_avgpool2d(otc_graph *g, const char *name, otc_id x, const otc_pool2d_params *params);
/* A Conv2d's or pool's output height or width from the input's (the formula of otc_window);
 * 0 when the window does not fit. */
int otc_window_out(int in, int kernel, int stride, int pad, int dilation);
/* A Conv2d's or pool's window for people: "5x5 stride 1 pad 2" (dilation and groups when not
 * 1); "" for other nodes. buf >= 96 bytes. */
const char *otc_window_str(const otc_node *nd, char *buf, size_t len);

#endif
