/* The ONNX export's builder: an arena of protobuf-c messages (the model's nodes, initializers,
 * inputs and outputs) and the helpers the export's parts (graph ops, expression trees, Neuron
 * aggregations) append through. Private to runtime/src/onnx/. */
#ifndef OTC_ONNX_EXPORT_BUILD_H
#define OTC_ONNX_EXPORT_BUILD_H

#include <stdint.h>

#include "onnx.pb-c.h"
#include "otc/error.h"
#include "otc/graph.h"

/* A float constant's initializer, shared by every node that uses it. */
typedef struct {
    float v;
    const char *name;
} oxw_konst;

/* A growable array of message pointers. */
typedef struct {
    void **v;
    size_t n, cap;
} oxw_list;

typedef struct {
    const otc_graph *g;
    oxw_list blocks; /* every allocation, freed at the end */
    oxw_list nodes, inits, inputs, outputs;
    long counter;            /* fresh tensor names */
    otc_id at;               /* the otc node being exported (for messages) */
    otc_status st;           /* the first failure; later calls do nothing */
    const char *batch_like;  /* a graph input with the batch as its first dimension */
    const char *batch_shape; /* [B,1] as an int64 tensor, made from it on first use */
    oxw_konst konst[256];    /* the first float constants (later ones are not shared) */
    int n_konst;
} oxw_builder;

/* calloc, owned by the builder (NULL after setting st on failure). */
void *oxw_alloc(oxw_builder *b, size_t size);
char *oxw_strdup(oxw_builder *b, const char *s);
/* A tensor name used nowhere else (nor by any otc node): "<hint>:<n>". */
char *oxw_fresh(oxw_builder *b, const char *hint);
/* Fail with OTC_ERR_UNSUPPORTED naming the otc node being exported. */
otc_status oxw_unsupported(oxw_builder *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A node op_type(in...) -> out (a fresh name when out is NULL); NULL after a failure. */
Onnx__NodeProto *oxw_node(oxw_builder *b, const char *op_type, const char *out, int n_in,
                          const char *const *in);
/* One-output nodes; return the output's name (NULL after a failure). */
const char *oxw_op1(oxw_builder *b, const char *op_type, const char *out, const char *x);
const char *oxw_op2(oxw_builder *b, const char *op_type, const char *out, const char *x,
                    const char *y);
void oxw_attr_int(oxw_builder *b, Onnx__NodeProto *n, const char *name, int64_t v);
void oxw_attr_ints(oxw_builder *b, Onnx__NodeProto *n, const char *name, const int64_t *v,
                   int count);

/* Initializers: a float scalar (shared), int64 values (1-D of count, or a scalar when count
 * is 0 with *v the value), and a named float tensor pointing at data the graph owns. */
const char *oxw_const_f(oxw_builder *b, float v);
const char *oxw_const_i64(oxw_builder *b, const int64_t *v, int count);
const char *oxw_init_f(oxw_builder *b, const char *name, otc_shape shape, const float *data);

/* A graph input or output of an otc shape (a leading OTC_BATCH as the symbolic "batch"). */
void oxw_value_info(oxw_builder *b, oxw_list *to, const char *name, otc_shape shape,
                    const char *doc);

/* x's columns [start, start + len) along axis (Slice). */
const char *oxw_slice(oxw_builder *b, const char *x, int axis, int start, int len, const char *out);

void oxw_push(oxw_builder *b, oxw_list *l, void *item);

/* The expression tree e (otc/expr.h) over the tensors x and x1 (NULL where e does not read
 * it) and the parameter a, one node per tree node; its root writes out (fresh when NULL).
 * Returns the result's name, NULL after a failure (onnx_export_expr.c). */
const char *oxw_expr(oxw_builder *b, const otc_expr *e, const char *x, const char *x1, float a,
                     const char *out);

/* The Neuron nd (its value named out) from the tensors of its inputs in[] (W, b, then the
 * sources) (onnx_export_neuron.c). */
const char *oxw_neuron(oxw_builder *b, const otc_node *nd, const char *const *in, const char *out);

#endif
