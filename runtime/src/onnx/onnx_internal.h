/* Private to runtime/src/onnx: the importer's state shared by its files: the table of ONNX
 * values (constants folded at import, or otc graph nodes), node attributes and messages. */
#ifndef OTC_ONNX_INTERNAL_H
#define OTC_ONNX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "name_index.h"
#include "onnx.pb-c.h"
#include "otc/graph.h"

/* ONNX tensors of up to this rank are handled as constants (otc's own values have 4). */
#define OX_MAX_RANK 8
/* In a folded int64 shape tensor: the batch size, which is only known when the graph runs. */
#define OX_BATCH INT64_MIN
/* ... and a sequence's length, which the step graph never knows. */
#define OX_TIME (INT64_MIN + 1)
/* Elements of a tensor the importer makes rather than reads (ConstantOfShape, a folded
 * broadcast, a constant repeated over a value's shape): a small file cannot make it allocate
 * more than 64 MiB of floats per tensor. */
#define OX_MAX_MADE_ELEMS ((size_t)1 << 24)
/* Attribute arrays (pads, kernel_shape, perm, axes...) longer than this are refused. */
#define OX_MAX_ATTR_INTS 64
/* Opsets and IR versions the importer reads. */
#define OX_MIN_OPSET 7
#define OX_MAX_OPSET 17
#define OX_MIN_IR    3
#define OX_MAX_IR    8

/* A constant known at import: an initializer, a Constant node, or a folded shape computation.
 * Exactly one of f (float data) and i (int64 data) is set. */
typedef struct {
    int rank;
    int64_t dim[OX_MAX_RANK];
    size_t n;
    float *f;
    int64_t *i;
} ox_const;

/* How a BatchNormalization that follows this value may be folded into weights. */
typedef enum { OX_FOLD_NONE, OX_FOLD_CONV, OX_FOLD_GEMM } ox_fold;

typedef struct {
    const char *name; /* in the unpacked model */
    ox_const *c;      /* a constant, or NULL for a graph value */
    otc_id id;        /* the graph node (a constant's parameter once made), or -1 */
    bool init;        /* the constant is an initializer: a trainable parameter */
    bool defined;     /* an input, initializer or output of a node already imported */
    int producer;     /* index of the node that outputs it, or -1 */
    int uses;         /* how many node inputs read it */
    ox_fold fold;     /* set by Conv and Gemm: the weight (fw) and bias (fb) parameters */
    otc_id fw, fb;
    int time;      /* a sequence: its time axis in the file (absent in the step graph), or -1 */
    int dir;       /* a recurrent op's output: its directions axis (absent in the graph), or -1 */
    otc_id *stack; /* stacked layers' final states (Concat of their Y_h along axis 0): the
                      layers' nodes, n_stack of them, indexed by a later Gather; or NULL */
    int n_stack;
    bool delay; /* a graph input "state_in:K" read back as the Delay its "state_out:K" feeds */
    bool graph_output; /* named among the graph's outputs (set by ox_match_graph) */
} ox_value;

/* What the nodes of otc's own exports are read back as (onnx_match.c). */
typedef enum { OX_MATCH_NONE, OX_MATCH_INNER, OX_MATCH_ACT, OX_MATCH_NEURON } ox_match_kind;
typedef struct {
    ox_match_kind kind; /* INNER: computed by the match at a later node, skipped */
    int act;            /* the activation (otc_act) and its parameter */
    float alpha;
    int xv;        /* ACT: the value it applies to */
    int k, agg, w; /* NEURON: sources, aggregation, the weights' value */
    float bias, scale;
    int *src, *col; /* NEURON: each source's value and column (-1: a one-column value) */
} ox_match;

typedef struct {
    const char *label; /* the file, starting every message */
    const char *dir;   /* external data's folder, or NULL */
    int opset;
    otc_graph *g;
    ox_value *vals;
    int n_vals, cap_vals;
    otc_name_index index;
    const Onnx__NodeProto *node; /* the node being imported (for messages), or NULL */
    int node_index;
    int64_t batch; /* the graph inputs' leading dimension in the file (-1 symbolic) */
    const Onnx__GraphProto *gp;
    ox_match *match; /* per node of gp, or NULL */
    int *scratch;    /* the best match's nodes */
    int *count;      /* per value: its reads within a match (zero between matches) */
} ox_ctx;

/* Fails with "label: node 'name' (#i, Op, opset N): message"; status is returned. */
otc_status ox_fail(const ox_ctx *x, otc_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- constants (onnx_const.c) ---- */
ox_const *ox_const_new(int rank, const int64_t *dim, bool is_int);
void ox_const_free(ox_const *c);
/* Element count of dims, or fails when negative, overflowing or over OTC_MAX_ELEMS. */
otc_status ox_count(const ox_ctx *x, int rank, const int64_t *dim, const char *what, size_t *n);
/* ox_count for a tensor the importer makes: at most OX_MAX_MADE_ELEMS. */
otc_status ox_count_made(const ox_ctx *x, int rank, const int64_t *dim, const char *what,
                         size_t *n);
/* A TensorProto (an initializer or a Constant's value) as a constant: float, or int64 from
 * INT64/INT32/BOOL...; the byte counts checked against the dims; external data read from dir. */
otc_status ox_const_from_tensor(const ox_ctx *x, const Onnx__TensorProto *t, ox_const **out);
/* Element k as a double / as an int64. */
double ox_const_get(const ox_const *c, size_t k);
int64_t ox_const_int(const ox_const *c, size_t k);

/* ---- values (onnx_import.c) ---- */
/* The value named name, or -1. */
int ox_find_value(const ox_ctx *x, const char *name);
/* Input i of the current node, or NULL when absent or empty (an omitted optional input). */
ox_value *ox_in(ox_ctx *x, int i);
/* Input i, which must be present (fails naming it otherwise). */
otc_status ox_need(ox_ctx *x, int i, ox_value **v);
/* Output i of the current node, or NULL when not named. */
ox_value *ox_out(ox_ctx *x, int i);
/* Defines output i of the current node as a graph node / as a constant (taken over). */
otc_status ox_set_node(ox_ctx *x, int i, otc_id id);
otc_status ox_set_const(ox_ctx *x, int i, ox_const *c);
/* The parameter holding constant v (made once, named after it, trainable if an
 * initializer). */
otc_id ox_param_of(ox_ctx *x, ox_value *v);
/* A new parameter from data (a transposed or folded initializer), named after base
 * (made unique); trainable when the value it came from was an initializer. */
otc_id ox_param_new(ox_ctx *x, const char *base, otc_shape shape, const float *data,
                    bool trainable);
/* ONNX dims of a graph value (the batch as OX_BATCH). */
int ox_dims(const ox_ctx *x, const ox_value *v, int64_t *dim);
/* Records the failure of a builder (-1) with the node's context. */
otc_status ox_built(ox_ctx *x, otc_id id);

/* ---- attributes (onnx_import.c) ---- */
const Onnx__AttributeProto *ox_attr(const ox_ctx *x, const char *name);
otc_status ox_attr_int(const ox_ctx *x, const char *name, int64_t def, int64_t *out);
otc_status ox_attr_float(const ox_ctx *x, const char *name, float def, float *out);
/* An INTS attribute (absent: *n = 0, *v = NULL); more than OX_MAX_ATTR_INTS is refused. */
otc_status ox_attr_ints(const ox_ctx *x, const char *name, int *n, const int64_t **v);
/* A STRING attribute, or def. */
otc_status ox_attr_str(const ox_ctx *x, const char *name, const char *def, char *buf, size_t len);

/* ---- ops: one handler per op_type (onnx_ops.c, onnx_nn.c) ---- */
typedef otc_status (*ox_handler)(ox_ctx *x);
/* The handler for op_type, or NULL. */
ox_handler ox_find_op(const char *op_type);
/* The handler of an op in onnx_nn.c, or NULL. */
ox_handler ox_find_nn_op(const char *op_type);
/* x op c where c is a constant: c broadcast (ONNX rules) to x's per-sample shape, made a
 * parameter and repeated over the batch; the new node's id or -1 with the message set. */
otc_id ox_const_like(ox_ctx *x, ox_value *c, otc_id like);
/* ---- otc's own exports read back (onnx_match.c) ---- */
/* Finds the nodes (x->gp's, in topological order) that spell an otc activation's expression
 * tree or a NEAT Neuron as otc's export writes them, filling x->match. */
otc_status ox_match_graph(ox_ctx *x, const int *order);
/* Builds the otc node of the match whose root is the current node. */
otc_status ox_match_build(ox_ctx *x, const ox_match *m);
void ox_match_free(ox_ctx *x);
/* Is op_type read only inside such a match (otc's graph has no op of its own for it)? */
bool ox_match_only(const char *op_type);
/* ---- sequences (onnx_recurrent.c) ---- */
/* The time axis of graph input `input` when it reaches a recurrent op's X (through
 * Transposes), or -1. */
int ox_input_time_axis(const Onnx__GraphProto *gp, const char *input);
/* The current node when it is RNN/LSTM/GRU or reads a sequence (a value with a time or
 * directions axis); plain is the op's ordinary handler (NULL if none), used for per-step ops. */
otc_status ox_op_on_sequence(ox_ctx *x, ox_handler plain);
/* True for RNN, LSTM, GRU. */
bool ox_is_recurrent(const char *op_type);
/* Refuses, before any node is imported, a recurrent node that is not forward (its state
 * wrappers would otherwise fail first, naming a node the user did not write). */
otc_status ox_recurrent_directions(ox_ctx *x);

/* Comma-separated op types the importer reads, for messages and docs. */
extern const char ox_supported_ops[];

#endif
