/* The ONNX export's builder (onnx_export_build.h): protobuf-c messages allocated from one arena
 * so a failure anywhere frees everything at once, fresh tensor names, nodes, attributes,
 * initializers and typed graph inputs and outputs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_export_build.h"

void oxw_push(oxw_builder *b, oxw_list *l, void *item) {
    if (b->st) return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        void **v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            b->st = otc_fail(OTC_ERR_NOMEM, "onnx export: out of memory");
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = item;
}

void *oxw_alloc(oxw_builder *b, size_t size) {
    if (b->st) return NULL;
    void *p = calloc(1, size ? size : 1);
    if (!p) {
        b->st = otc_fail(OTC_ERR_NOMEM, "onnx export: out of memory");
        return NULL;
    }
    oxw_push(b, &b->blocks, p);
    if (b->st) {
        free(p);
        return NULL;
    }
    return p;
}

char *oxw_strdup(oxw_builder *b, const char *s) {
    size_t n = strlen(s) + 1;
    char *d = oxw_alloc(b, n);
    if (d) memcpy(d, s, n);
    return d;
}

char *oxw_fresh(oxw_builder *b, const char *hint) {
    char buf[96];
    /* otc names are free text, so a generated one could be taken: skip those. */
    do snprintf(buf, sizeof buf, "%s:%ld", hint, b->counter++);
    while (otc_graph_find(b->g, buf) >= 0);
    return oxw_strdup(b, buf);
}

otc_status oxw_unsupported(oxw_builder *b, const char *fmt, ...) {
    if (b->st) return b->st;
    char msg[512], lab[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const otc_node *nd = otc_graph_node(b->g, b->at);
    b->st = otc_fail(OTC_ERR_UNSUPPORTED, "onnx export: node %s (%s): %s",
                     otc_graph_node_label(b->g, b->at, lab, sizeof lab),
                     nd ? otc_op_get(nd->op)->name : "?", msg);
    return b->st;
}

Onnx__NodeProto *oxw_node(oxw_builder *b, const char *op_type, const char *out, int n_in,
                          const char *const *in) {
    Onnx__NodeProto *n = oxw_alloc(b, sizeof *n);
    char **ins = oxw_alloc(b, (size_t)n_in * sizeof *ins);
    char **outs = oxw_alloc(b, sizeof *outs);
    if (!n || !ins || !outs) return NULL;
    *n = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) { /* an operand that failed (st says why) */
            if (!b->st) b->st = otc_fail(OTC_ERR_STATE, "onnx export: %s lost an operand", op_type);
            return NULL;
        }
        ins[i] = (char *)in[i];
    }
    outs[0] = out ? (char *)out : oxw_fresh(b, op_type);
    if (!outs[0]) return NULL;
    n->n_input = (size_t)n_in;
    n->input = ins;
    n->n_output = 1;
    n->output = outs;
    n->op_type = (char *)op_type;
    n->name = outs[0]; /* unique, and what viewers show for the node */
    oxw_push(b, &b->nodes, n);
    return b->st ? NULL : n;
}

const char *oxw_op1(oxw_builder *b, const char *op_type, const char *out, const char *x) {
    Onnx__NodeProto *n = oxw_node(b, op_type, out, 1, (const char *[]){x});
    return n ? n->output[0] : NULL;
}

const char *oxw_op2(oxw_builder *b, const char *op_type, const char *out, const char *x,
                    const char *y) {
    Onnx__NodeProto *n = oxw_node(b, op_type, out, 2, (const char *[]){x, y});
    return n ? n->output[0] : NULL;
}

static Onnx__AttributeProto *add_attr(oxw_builder *b, Onnx__NodeProto *n, const char *name) {
    if (!n) return NULL;
    Onnx__AttributeProto *a = oxw_alloc(b, sizeof *a);
    Onnx__AttributeProto **v = oxw_alloc(b, (n->n_attribute + 1) * sizeof *v);
    if (!a || !v) return NULL;
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = (char *)name;
    a->has_type = 1;
    if (n->n_attribute) memcpy(v, n->attribute, n->n_attribute * sizeof *v);
    v[n->n_attribute++] = a;
    n->attribute = v;
    return a;
}

void oxw_attr_int(oxw_builder *b, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = add_attr(b, n, name);
    if (!a) return;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
}

void oxw_attr_ints(oxw_builder *b, Onnx__NodeProto *n, const char *name, const int64_t *v,
                   int count) {
    Onnx__AttributeProto *a = add_attr(b, n, name);
    int64_t *copy = oxw_alloc(b, (size_t)count * sizeof *copy);
    if (!a || !copy) return;
    memcpy(copy, v, (size_t)count * sizeof *copy);
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a->n_ints = (size_t)count;
    a->ints = copy;
}

static Onnx__TensorProto *new_init(oxw_builder *b, const char *name, int ndim, const int64_t *dims,
                                   int32_t type) {
    Onnx__TensorProto *t = oxw_alloc(b, sizeof *t);
    int64_t *d = oxw_alloc(b, (size_t)ndim * sizeof *d);
    if (!t || !d) return NULL;
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    if (ndim) memcpy(d, dims, (size_t)ndim * sizeof *d);
    t->n_dims = (size_t)ndim;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = type;
    t->name = (char *)name;
    oxw_push(b, &b->inits, t);
    return b->st ? NULL : t;
}

const char *oxw_const_f(oxw_builder *b, float v) {
    for (int i = 0; i < b->n_konst; i++)
        if (memcmp(&b->konst[i].v, &v, sizeof v) == 0) return b->konst[i].name;
    char *name = oxw_fresh(b, "const");
    float *data = oxw_alloc(b, sizeof *data);
    if (!name || !data) return NULL;
    *data = v;
    Onnx__TensorProto *t = new_init(b, name, 0, NULL, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    if (!t) return NULL;
    t->n_float_data = 1;
    t->float_data = data;
    if (b->n_konst < (int)(sizeof b->konst / sizeof b->konst[0]))
        b->konst[b->n_konst++] = (oxw_konst){v, name};
    return name;
}

const char *oxw_const_i64(oxw_builder *b, const int64_t *v, int count) {
    char *name = oxw_fresh(b, "shape");
    int64_t *data = oxw_alloc(b, (size_t)(count ? count : 1) * sizeof *data);
    if (!name || !data) return NULL;
    memcpy(data, v, (size_t)(count ? count : 1) * sizeof *data);
    int64_t dim = count;
    Onnx__TensorProto *t =
        new_init(b, name, count ? 1 : 0, &dim, ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
    if (!t) return NULL;
    t->n_int64_data = (size_t)(count ? count : 1);
    t->int64_data = data;
    return name;
}

const char *oxw_init_f(oxw_builder *b, const char *name, otc_shape shape, const float *data) {
    int64_t dims[OTC_MAX_DIMS];
    for (int i = 0; i < shape.ndim; i++) dims[i] = shape.dim[i];
    Onnx__TensorProto *t =
        new_init(b, name, shape.ndim, dims, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    if (!t) return NULL;
    /* The graph's own values, packed as they are (no copy of large weights). */
    t->n_float_data = otc_shape_size(shape);
    t->float_data = (float *)data;
    return name;
}

void oxw_value_info(oxw_builder *b, oxw_list *to, const char *name, otc_shape shape,
                    const char *doc) {
    Onnx__ValueInfoProto *vi = oxw_alloc(b, sizeof *vi);
    Onnx__TypeProto *tp = oxw_alloc(b, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = oxw_alloc(b, sizeof *tt);
    Onnx__TensorShapeProto *sh = oxw_alloc(b, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dims =
        oxw_alloc(b, (size_t)(shape.ndim ? shape.ndim : 1) * sizeof *dims);
    if (!vi || !tp || !tt || !sh || !dims) return;
    *vi = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    *tp = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
    *tt = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
    *sh = (Onnx__TensorShapeProto)ONNX__TENSOR_SHAPE_PROTO__INIT;
    for (int i = 0; i < shape.ndim; i++) {
        Onnx__TensorShapeProto__Dimension *d = oxw_alloc(b, sizeof *d);
        if (!d) return;
        *d = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        if (shape.dim[i] == OTC_BATCH) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = "batch";
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = shape.dim[i];
        }
        dims[i] = d;
    }
    sh->n_dim = (size_t)shape.ndim;
    sh->dim = dims;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = (char *)name;
    vi->type = tp;
    vi->doc_string = (char *)doc;
    oxw_push(b, to, vi);
}

const char *oxw_slice(oxw_builder *b, const char *x, int axis, int start, int len,
                      const char *out) {
    int64_t s = start, e = (int64_t)start + len, a = axis;
    const char *in[4] = {x, oxw_const_i64(b, &s, 1), oxw_const_i64(b, &e, 1),
                         oxw_const_i64(b, &a, 1)};
    Onnx__NodeProto *n = oxw_node(b, "Slice", out, 4, in);
    return n ? n->output[0] : NULL;
}
