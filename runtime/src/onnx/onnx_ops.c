/* ONNX elementwise, activation and shape ops onto the otc IR; on constants they are folded
 * at import. Each handler reads the current node (ctx->node) and defines its outputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_fold.h"
#include "onnx_internal.h"

#define TRY(e)                                                                                     \
    do {                                                                                           \
        otc_status st_ = (e);                                                                      \
        if (st_) return st_;                                                                       \
    } while (0)

/* Normalises an axis of a rank-r tensor; false when out of range. */
static bool norm_axis(int64_t axis, int r, int *out) {
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) return false;
    *out = (int)axis;
    return true;
}

/* Per-sample shape of a batched ONNX shape dims[0..r) (the batch dropped). */
static otc_status node_shape(ox_ctx *x, int r, const int64_t *dim, otc_shape *sh) {
    if (r < 1 || r > OTC_MAX_DIMS)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "the result has rank %d (otc: 1 to %d)", r,
                       OTC_MAX_DIMS);
    sh->ndim = r;
    sh->dim[0] = OTC_BATCH;
    for (int d = 1; d < r; d++) {
        if (dim[d] < 1 || dim[d] > (1 << 24))
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "the result has a dimension of %lld",
                           (long long)dim[d]);
        sh->dim[d] = (int)dim[d];
    }
    return OTC_OK;
}

otc_id ox_const_like(ox_ctx *x, ox_value *c, otc_id like) {
    int64_t ld[OX_MAX_RANK];
    int lr = ox_dims(x, &(ox_value){.c = NULL, .id = like}, ld);
    const ox_const *k = c->c;
    bool ok = k->rank <= lr && (k->rank < lr || k->dim[0] == 1);
    for (int d = 0; ok && d < k->rank; d++) {
        int od = d + lr - k->rank;
        ok = od == 0 || k->dim[d] == 1 || k->dim[d] == ld[od];
    }
    if (!ok) {
        ox_fail(x, OTC_ERR_UNSUPPORTED,
                "constant '%.80s' does not broadcast over the per-sample shape of the other "
                "input",
                c->name);
        return -1;
    }
    otc_shape sh = otc_graph_node(x->g, like)->shape;
    otc_shape ps = {.ndim = sh.ndim - 1};
    for (int d = 1; d < sh.ndim; d++) ps.dim[d - 1] = sh.dim[d];
    int64_t pd[OTC_MAX_DIMS];
    size_t n;
    for (int d = 0; d < ps.ndim; d++) pd[d] = ps.dim[d];
    if (ox_count_made(x, ps.ndim, pd, "the repeated constant", &n)) return -1;
    otc_id p = -1;
    bool same = k->n == n && k->rank == ps.ndim;
    if (same && k->f) {
        p = ox_param_of(x, c); /* already the per-sample shape: the parameter itself */
        if (p >= 0 && !otc_shape_equal(otc_graph_node(x->g, p)->shape, ps)) p = -1;
    }
    if (p < 0) {
        float *buf = malloc((n ? n : 1) * sizeof *buf);
        if (!buf) {
            ox_fail(x, OTC_ERR_NOMEM, "out of memory");
            return -1;
        }
        int64_t full[OX_MAX_RANK];
        full[0] = 1;
        for (int d = 1; d < lr; d++) full[d] = ld[d];
        for (size_t e = 0; e < n; e++) {
            /* the element of k that broadcasts to per-sample element e */
            size_t rem = e, idx = 0, stride = 1;
            for (int d = lr - 1; d >= 1; d--) {
                size_t i = rem % (size_t)full[d];
                rem /= (size_t)full[d];
                int kd = d - (lr - k->rank);
                if (kd >= 0) {
                    if (k->dim[kd] != 1) idx += i * stride;
                    stride *= (size_t)k->dim[kd];
                }
            }
            buf[e] = (float)ox_const_get(k, idx);
        }
        /* A broadcast copy is not the file's tensor: it stays constant when trained. */
        p = ox_param_new(x, c->name, ps, buf, same && c->init);
        free(buf);
        if (p < 0) {
            ox_built(x, -1);
            return -1;
        }
    }
    otc_id r = otc_row_broadcast(x->g, p, like);
    if (r < 0) ox_built(x, -1);
    return r;
}

/* x + s for a scalar s: a constant repeated over x's shape. */
static otc_id add_scalar(ox_ctx *x, otc_id id, float s) {
    int64_t one = 1;
    ox_const *k = ox_const_new(1, &one, false);
    if (!k) return -1;
    k->f[0] = s;
    ox_value v = {.name = "const", .c = k, .id = -1};
    otc_id c = ox_const_like(x, &v, id);
    ox_const_free(k);
    return c < 0 ? -1 : otc_add(x->g, id, c);
}

/* ---- elementwise ---- */

static otc_status binary(ox_ctx *x, char op) {
    ox_value *a, *b;
    TRY(ox_need(x, 0, &a));
    TRY(ox_need(x, 1, &b));
    if (a->c && b->c) {
        ox_const *r = NULL;
        TRY(ox_fold_binary(x, op, a->c, b->c, &r));
        return ox_set_const(x, 0, r);
    }
    otc_graph *g = x->g;
    otc_id ia = a->id, ib = b->id;
    if (b->c && b->c->n == 1 && (op == '*' || (op == '/' && b->c->f)) && b->c->rank <= 1) {
        float s = (float)ox_const_get(b->c, 0);
        if (op == '*') return ox_set_node(x, 0, otc_scale(g, ia, s));
    }
    if (a->c && a->c->n == 1 && op == '*' && a->c->rank <= 1)
        return ox_set_node(x, 0, otc_scale(g, ib, (float)ox_const_get(a->c, 0)));
    if (a->c) ia = ox_const_like(x, a, ib);
    if (b->c) ib = ox_const_like(x, b, ia);
    if (ia < 0 || ib < 0) return OTC_ERR_UNSUPPORTED;
    if (!otc_shape_equal(otc_graph_node(g, ia)->shape, otc_graph_node(g, ib)->shape)) {
        char s1[64], s2[64];
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "broadcasting between two computed values of shapes %s and %s",
                       otc_shape_str(otc_graph_node(g, ia)->shape, s1, sizeof s1),
                       otc_shape_str(otc_graph_node(g, ib)->shape, s2, sizeof s2));
    }
    switch (op) {
    case '+':
        return ox_set_node(x, 0, otc_add(g, ia, ib));
    case '-':
        return ox_set_node(x, 0, otc_sub(g, ia, ib));
    case '*':
        return ox_set_node(x, 0, otc_mul(g, ia, ib));
    default:
        return ox_set_node(x, 0, otc_div(g, ia, ib));
    }
}
static otc_status op_add(ox_ctx *x) {
    return binary(x, '+');
}
static otc_status op_sub(ox_ctx *x) {
    return binary(x, '-');
}
static otc_status op_mul(ox_ctx *x) {
    return binary(x, '*');
}
static otc_status op_div(ox_ctx *x) {
    return binary(x, '/');
}

/* The node input of a unary op (a constant input is refused: nothing to fold it with). */
static otc_status node_in(ox_ctx *x, ox_value **v) {
    TRY(ox_need(x, 0, v));
    if ((*v)->c)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "a constant input (otc folds only shape computations)");
    return OTC_OK;
}

static otc_status act(ox_ctx *x, otc_op op, float alpha) {
    ox_value *v;
    TRY(node_in(x, &v));
    return ox_set_node(x, 0, otc_activation(x->g, op, v->id, alpha));
}
static otc_status op_relu(ox_ctx *x) {
    return act(x, OTC_OP_RELU, 0);
}
static otc_status op_sigmoid(ox_ctx *x) {
    return act(x, OTC_OP_SIGMOID, 0);
}
static otc_status op_tanh(ox_ctx *x) {
    return act(x, OTC_OP_TANH, 0);
}
static otc_status op_softplus(ox_ctx *x) {
    return act(x, OTC_OP_SOFTPLUS, 0);
}
static otc_status op_abs(ox_ctx *x) {
    return act(x, OTC_OP_ABS, 0);
}
static otc_status op_exp(ox_ctx *x) {
    return act(x, OTC_OP_EXP, 0);
}
static otc_status op_log(ox_ctx *x) {
    return act(x, OTC_OP_LOG, 0);
}
static otc_status op_sqrt(ox_ctx *x) {
    return act(x, OTC_OP_SQRT, 0);
}
static otc_status op_sin(ox_ctx *x) {
    return act(x, OTC_OP_SIN, 0);
}
static otc_status op_cos(ox_ctx *x) {
    return act(x, OTC_OP_COS, 0);
}
static otc_status op_reciprocal(ox_ctx *x) {
    return act(x, OTC_OP_RECIPROCAL, 0);
}
/* Pow(x, e) for a constant exponent otc has as an activation: 1, 2 (square), 3 (cube), 0.5
 * (sqrt), -1 (reciprocal). */
static otc_status op_pow(ox_ctx *x) {
    ox_value *v, *e;
    TRY(node_in(x, &v));
    TRY(ox_need(x, 1, &e));
    double k = e->c && e->c->n == 1 ? ox_const_get(e->c, 0) : 0.25;
    if (k == 1) return ox_set_node(x, 0, v->id);
    if (k == 2 || k == 3) return act(x, k == 2 ? OTC_OP_SQUARE : OTC_OP_CUBE, 0);
    if (k == 0.5 || k == -1) return act(x, k == 0.5 ? OTC_OP_SQRT : OTC_OP_RECIPROCAL, 0);
    return ox_fail(x, OTC_ERR_UNSUPPORTED,
                   "the exponent must be the constant 1, 2, 3, 0.5 or -1 (otc's square, cube, "
                   "sqrt and reciprocal)");
}
static otc_status op_leaky(ox_ctx *x) {
    float a;
    TRY(ox_attr_float(x, "alpha", 0.01f, &a));
    return act(x, OTC_OP_LEAKY_RELU, a);
}
static otc_status op_elu(ox_ctx *x) {
    float a;
    TRY(ox_attr_float(x, "alpha", 1.0f, &a));
    return act(x, OTC_OP_ELU, a);
}
static otc_status op_selu(ox_ctx *x) {
    float a, gm;
    TRY(ox_attr_float(x, "alpha", 1.67326319217681884765625f, &a));
    TRY(ox_attr_float(x, "gamma", 1.05070102214813232421875f, &gm));
    if (fabsf(a - 1.6732632f) > 1e-6f || fabsf(gm - 1.0507010f) > 1e-6f)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "alpha %g, gamma %g (otc's selu has the defaults 1.67326, 1.0507)",
                       (double)a, (double)gm);
    return act(x, OTC_OP_SELU, 0);
}
static otc_status op_neg(ox_ctx *x) {
    ox_value *v;
    TRY(ox_need(x, 0, &v));
    if (v->c) {
        int64_t one = 1;
        ox_const *m = ox_const_new(0, &one, v->c->i != NULL), *r = NULL;
        if (!m) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        if (m->f) m->f[0] = -1;
        if (m->i) m->i[0] = -1;
        otc_status st = ox_fold_binary(x, '*', v->c, m, &r);
        ox_const_free(m);
        return st ? st : ox_set_const(x, 0, r);
    }
    return ox_set_node(x, 0, otc_neg(x->g, v->id));
}

/* min(max(v, lo), hi) as lo + relu(v - lo) and hi - relu(hi - v): otc has no clamp op with
 * bounds, and these agree with it to a rounding. Infinite bounds are left out. */
static otc_id clip(ox_ctx *x, otc_id v, float lo, float hi) {
    otc_graph *g = x->g;
    if (lo == 0)
        v = otc_activation(g, OTC_OP_RELU, v, 0);
    else if (isfinite(lo)) {
        otc_id d = add_scalar(x, v, -lo);
        v = d < 0 ? -1 : add_scalar(x, otc_activation(g, OTC_OP_RELU, d, 0), lo);
    }
    if (v >= 0 && isfinite(hi)) {
        otc_id d = add_scalar(x, otc_neg(g, v), hi);
        v = d < 0 ? -1 : add_scalar(x, otc_neg(g, otc_activation(g, OTC_OP_RELU, d, 0)), hi);
    }
    return v;
}

static otc_status scalar_input(ox_ctx *x, int i, float def, float *out) {
    ox_value *v = ox_in(x, i);
    *out = def;
    if (!v) return OTC_OK;
    if (!v->c || v->c->n != 1)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "input %d must be a constant scalar", i);
    *out = (float)ox_const_get(v->c, 0);
    return OTC_OK;
}

static otc_status op_clip(ox_ctx *x) {
    ox_value *v;
    float lo, hi;
    TRY(node_in(x, &v));
    if (x->opset < 11) {
        TRY(ox_attr_float(x, "min", -INFINITY, &lo));
        TRY(ox_attr_float(x, "max", INFINITY, &hi));
    } else {
        TRY(scalar_input(x, 1, -INFINITY, &lo));
        TRY(scalar_input(x, 2, INFINITY, &hi));
    }
    otc_id r = clip(x, v->id, lo, hi);
    return r < 0 ? ox_built(x, -1) : ox_set_node(x, 0, r);
}

/* max(0, min(1, alpha v + beta)). */
static otc_id hard_sigmoid(ox_ctx *x, otc_id v, float alpha, float beta) {
    otc_id a = otc_scale(x->g, v, alpha);
    a = a < 0 ? -1 : add_scalar(x, a, beta);
    return a < 0 ? -1 : clip(x, a, 0, 1);
}

static otc_status op_hard_sigmoid(ox_ctx *x) {
    ox_value *v;
    float a, b;
    TRY(node_in(x, &v));
    TRY(ox_attr_float(x, "alpha", 0.2f, &a));
    TRY(ox_attr_float(x, "beta", 0.5f, &b));
    otc_id r = hard_sigmoid(x, v->id, a, b);
    return r < 0 ? ox_built(x, -1) : ox_set_node(x, 0, r);
}

static otc_status op_hard_swish(ox_ctx *x) {
    ox_value *v;
    TRY(node_in(x, &v));
    otc_id r = hard_sigmoid(x, v->id, 1.0f / 6, 0.5f);
    return r < 0 ? ox_built(x, -1) : ox_set_node(x, 0, otc_mul(x->g, v->id, r));
}

/* ---- pass-through and constants ---- */

static otc_status op_identity(ox_ctx *x) {
    ox_value *v;
    TRY(ox_need(x, 0, &v));
    if (v->c) {
        ox_const *c = ox_const_dup(v->c);
        return c ? ox_set_const(x, 0, c) : ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    }
    return ox_set_node(x, 0, v->id);
}

static otc_status op_constant(ox_ctx *x) {
    const Onnx__AttributeProto *a;
    ox_const *c = NULL;
    int64_t n;
    if ((a = ox_attr(x, "value")) && a->t) {
        TRY(ox_const_from_tensor(x, a->t, &c));
    } else if ((a = ox_attr(x, "value_float")) && a->has_f) {
        if (!(c = ox_const_new(0, &n, false))) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        c->f[0] = a->f;
    } else if ((a = ox_attr(x, "value_int")) && a->has_i) {
        if (!(c = ox_const_new(0, &n, true))) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        c->i[0] = a->i;
    } else if ((a = ox_attr(x, "value_floats")) || (a = ox_attr(x, "value_ints"))) {
        bool fl = a->n_floats > 0 || !a->n_ints;
        n = fl ? (int64_t)a->n_floats : (int64_t)a->n_ints;
        if (!(c = ox_const_new(1, &n, !fl))) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        for (int64_t k = 0; k < n; k++)
            if (fl)
                c->f[k] = a->floats[k];
            else
                c->i[k] = a->ints[k];
    } else {
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "no value, value_float(s) or value_int(s) attribute (sparse and string "
                       "values are not read)");
    }
    return ox_set_const(x, 0, c);
}

static otc_status op_shape(ox_ctx *x) {
    ox_value *v;
    TRY(ox_need(x, 0, &v));
    int64_t dim[OX_MAX_RANK];
    int r = ox_dims(x, v, dim);
    int64_t start = 0, end = r;
    if (x->opset >= 15) {
        TRY(ox_attr_int(x, "start", 0, &start));
        TRY(ox_attr_int(x, "end", r, &end));
        if (start < 0) start += r;
        if (end < 0) end += r;
        start = start < 0 ? 0 : start > r ? r : start;
        end = end < start ? start : end > r ? r : end;
    }
    int64_t n = end - start;
    ox_const *c = ox_const_new(1, &n, true);
    if (!c) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < n; k++) c->i[k] = dim[start + k];
    return ox_set_const(x, 0, c);
}

/* Expand(v, shape): v broadcast (numpy rules) to shape. Over the batch otc repeats a row
 * (row_broadcast) to the shape of the value whose Shape gives it, as otc's export writes it;
 * a value that has the shape already stays itself; constants are folded. */
static otc_status op_expand(ox_ctx *x) {
    ox_value *v, *s;
    TRY(ox_need(x, 0, &v));
    TRY(ox_need(x, 1, &s));
    if (!s->c || !s->c->i || s->c->rank != 1 || s->c->n > OX_MAX_RANK)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "the shape must be a constant int64 vector (or a shape computation otc "
                       "folds)");
    int rs = (int)s->c->n, rv, rb;
    int64_t vd[OX_MAX_RANK], bd[OX_MAX_RANK];
    rv = ox_dims(x, v, vd);
    if (!ox_broadcast_dims(rv, vd, rs, s->c->i, &rb, bd))
        return ox_fail(x, OTC_ERR_FORMAT, "the input does not broadcast to the shape");
    bool same = rb == rv;
    for (int d = 0; same && d < rv; d++) same = bd[d] == vd[d];
    if (same) return op_identity(x);
    bool batched = rb > 0 && bd[0] == OX_BATCH;
    if (v->c && !batched) {
        size_t n;
        TRY(ox_count_made(x, rb, bd, "the expanded constant", &n));
        ox_const *z = ox_const_new(rb, bd, false), *r = NULL;
        if (!z) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        otc_status st = ox_fold_binary(x, '+', v->c, z, &r);
        ox_const_free(z);
        return st ? st : ox_set_const(x, 0, r);
    }
    /* the value whose shape it is: the input of the Shape the shape was folded from */
    const ox_value *like = NULL;
    if (s->producer >= 0) {
        const Onnx__NodeProto *nd = x->gp->node[s->producer];
        int lv =
            nd->op_type && !strcmp(nd->op_type, "Shape") && nd->n_attribute == 0 && nd->n_input == 1
                ? ox_find_value(x, nd->input[0])
                : -1;
        if (lv >= 0 && !x->vals[lv].c && x->vals[lv].id >= 0) like = &x->vals[lv];
    }
    if (!batched || !like || (!v->c && rv > 0 && vd[0] == OX_BATCH))
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "otc expands only a row over the batch, to the Shape of a value it "
                       "computes");
    if (v->c) return ox_set_node(x, 0, ox_const_like(x, v, like->id));
    return ox_set_node(x, 0, otc_row_broadcast(x->g, v->id, like->id));
}

static otc_status op_cast(ox_ctx *x) {
    ox_value *v;
    int64_t to;
    TRY(ox_need(x, 0, &v));
    TRY(ox_attr_int(x, "to", 0, &to));
    bool to_float =
        to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
    bool to_int =
        to == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || to == ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    if (!v->c) {
        if (to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "cast of a computed value to type %lld",
                           (long long)to);
        return ox_set_node(x, 0, v->id);
    }
    if (!to_float && !to_int)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "cast to type %lld", (long long)to);
    ox_const *c = ox_const_new(v->c->rank, v->c->dim, to_int);
    if (!c) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < c->n; k++)
        if (to_int)
            c->i[k] = ox_const_int(v->c, k);
        else
            c->f[k] = (float)ox_const_get(v->c, k);
    return ox_set_const(x, 0, c);
}

static otc_status op_constant_of_shape(ox_ctx *x) {
    ox_value *v;
    TRY(ox_need(x, 0, &v));
    if (!v->c || v->c->rank != 1 || v->c->n > OX_MAX_RANK)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "the shape must be a constant of rank <= %d",
                       OX_MAX_RANK);
    int64_t dim[OX_MAX_RANK];
    for (size_t k = 0; k < v->c->n; k++) {
        dim[k] = ox_const_int(v->c, k);
        /* A tensor sized by the batch (exporters' zero initial states) stands as size 1
         * there, which broadcasts alike in the elementwise ops and the recurrent ops'
         * initial state that read it. */
        if (dim[k] == OX_BATCH) dim[k] = 1;
        if (dim[k] == OX_TIME)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "a tensor sized by a sequence's length");
    }
    size_t n;
    TRY(ox_count_made(x, (int)v->c->n, dim, "the result", &n));
    const Onnx__AttributeProto *a = ox_attr(x, "value");
    ox_const *val = NULL;
    if (a && a->t) TRY(ox_const_from_tensor(x, a->t, &val));
    if (val && val->n != 1) {
        ox_const_free(val);
        return ox_fail(x, OTC_ERR_FORMAT, "value must hold one element");
    }
    ox_const *c = ox_const_new((int)v->c->n, dim, val && val->i);
    if (!c) {
        ox_const_free(val);
        return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    }
    for (size_t k = 0; k < n; k++)
        if (c->i)
            c->i[k] = val->i[0];
        else
            c->f[k] = val ? val->f[0] : 0;
    ox_const_free(val);
    return ox_set_const(x, 0, c);
}

/* ---- shapes ---- */

/* The result of a Reshape-like op on v: a folded constant, or a reshape node when the batch
 * stays the leading dimension. */
static otc_status reshaped(ox_ctx *x, ox_value *v, int r, const int64_t *dim) {
    if (v->c) {
        size_t n;
        TRY(ox_count(x, r, dim, "the result", &n));
        if (n != v->c->n)
            return ox_fail(x, OTC_ERR_FORMAT, "%zu elements cannot become %zu", v->c->n, n);
        ox_const *c = ox_const_reshaped(v->c, r, dim);
        return c ? ox_set_const(x, 0, c) : ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    }
    otc_shape sh;
    if (otc_shape_is_batched(otc_graph_node(x->g, v->id)->shape)) {
        TRY(node_shape(x, r, dim, &sh));
    } else { /* a value without the batch (a whole-batch reduction) */
        size_t n;
        TRY(ox_count(x, r, dim, "the result", &n));
        if (r > OTC_MAX_DIMS)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "the result has rank %d (otc: at most %d)", r,
                           OTC_MAX_DIMS);
        sh.ndim = r;
        for (int d = 0; d < r; d++) sh.dim[d] = (int)dim[d];
    }
    if (otc_shape_equal(sh, otc_graph_node(x->g, v->id)->shape)) return ox_set_node(x, 0, v->id);
    return ox_set_node(x, 0, otc_reshape(x->g, v->id, sh));
}

static otc_status op_reshape(ox_ctx *x) {
    ox_value *v, *s;
    TRY(ox_need(x, 0, &v));
    int64_t in[OX_MAX_RANK], out[OX_MAX_RANK];
    int ri = ox_dims(x, v, in), ro;
    const int64_t *req;
    if (x->opset < 5) return ox_fail(x, OTC_ERR_UNSUPPORTED, "opset < 5 reshape");
    TRY(ox_need(x, 1, &s));
    if (!s->c || s->c->rank != 1 || !s->c->i || s->c->n > OX_MAX_RANK)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "the shape must be a constant int64 vector of at most %d (or a shape "
                       "computation otc folds)",
                       OX_MAX_RANK);
    int64_t allowzero = 0;
    if (x->opset >= 14) TRY(ox_attr_int(x, "allowzero", 0, &allowzero));
    req = s->c->i;
    ro = (int)s->c->n;
    int infer = -1;
    size_t known = 1, total = 1;
    bool batched = !v->c && ri > 0 && in[0] == OX_BATCH;
    for (int d = batched ? 1 : 0; d < ri; d++) total *= (size_t)in[d];
    for (int d = 0; d < ro; d++) {
        int64_t q = req[d];
        if (q == 0 && !allowzero) {
            if (d >= ri)
                return ox_fail(x, OTC_ERR_FORMAT, "shape entry %d is 0 past the input's rank", d);
            q = in[d];
        }
        if (batched && d == 0 && (q == OX_BATCH || (x->batch > 0 && q == x->batch))) q = OX_BATCH;
        if (q == -1) {
            if (infer >= 0) return ox_fail(x, OTC_ERR_FORMAT, "two -1 entries in the shape");
            infer = d;
        } else if (q == OX_BATCH) {
            if (!batched || d != 0)
                return ox_fail(x, OTC_ERR_UNSUPPORTED,
                               "the batch size moves from the first dimension");
        } else if (q < 1 || q > (1 << 24)) {
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "shape entry %d is %lld", d, (long long)q);
        } else {
            known *= (size_t)q;
        }
        out[d] = q;
    }
    if (infer >= 0) {
        if (known == 0 || total % known)
            return ox_fail(x, OTC_ERR_FORMAT, "the -1 in the shape cannot be inferred");
        out[infer] = batched && infer == 0 ? OX_BATCH : (int64_t)(total / known);
        if (batched && infer == 0 && known != total)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "the batch size would change");
    }
    if (batched && (ro < 1 || out[0] != OX_BATCH))
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "the first dimension of the new shape is not the batch (0, -1 or the "
                       "batch's Shape)");
    return reshaped(x, v, ro, out);
}

static otc_status op_flatten(ox_ctx *x) {
    ox_value *v;
    int64_t axis, in[OX_MAX_RANK];
    TRY(ox_need(x, 0, &v));
    TRY(ox_attr_int(x, "axis", 1, &axis));
    int r = ox_dims(x, v, in), ax;
    if (!norm_axis(axis, r + 1, &ax))
        return ox_fail(x, OTC_ERR_FORMAT, "axis %lld", (long long)axis);
    if (!v->c && ax != 1)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "axis %d would merge the batch with other dimensions (axis 1 is read)", ax);
    int64_t out[2] = {1, 1};
    for (int d = 0; d < r; d++) {
        if (d < ax)
            out[0] *= in[d];
        else
            out[1] *= in[d];
    }
    if (!v->c) out[0] = OX_BATCH;
    return reshaped(x, v, 2, out);
}

/* The axes of Squeeze/Unsqueeze: an attribute before opset 13, an input from it. */
static otc_status axes_of(ox_ctx *x, int *n, int64_t *axes) {
    const int64_t *a = NULL;
    *n = 0;
    if (x->opset < 13) {
        TRY(ox_attr_ints(x, "axes", n, &a));
        if (*n > OX_MAX_RANK) return ox_fail(x, OTC_ERR_FORMAT, "too many axes");
        for (int k = 0; k < *n; k++) axes[k] = a[k];
        return OTC_OK;
    }
    ox_value *v = ox_in(x, 1);
    if (!v) return OTC_OK;
    if (!v->c || v->c->n > OX_MAX_RANK)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "the axes must be a constant");
    *n = (int)v->c->n;
    for (int k = 0; k < *n; k++) axes[k] = ox_const_int(v->c, (size_t)k);
    return OTC_OK;
}

static otc_status op_squeeze(ox_ctx *x) {
    ox_value *v;
    int64_t in[OX_MAX_RANK], axes[OX_MAX_RANK], out[OX_MAX_RANK];
    int n, ro = 0;
    TRY(ox_need(x, 0, &v));
    TRY(axes_of(x, &n, axes));
    int r = ox_dims(x, v, in);
    bool drop[OX_MAX_RANK] = {0};
    for (int k = 0; k < n; k++) {
        int a;
        if (!norm_axis(axes[k], r, &a) || (in[a] != 1 && in[a] != OX_BATCH))
            return ox_fail(x, OTC_ERR_FORMAT, "axis %lld is not a dimension of size 1",
                           (long long)axes[k]);
        if (in[a] == OX_BATCH)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "squeezing the batch dimension");
        drop[a] = true;
    }
    for (int d = 0; d < r; d++)
        if (!(n ? drop[d] : in[d] == 1)) out[ro++] = in[d];
    return reshaped(x, v, ro, out);
}

static otc_status op_unsqueeze(ox_ctx *x) {
    ox_value *v;
    int64_t in[OX_MAX_RANK], axes[OX_MAX_RANK], out[OX_MAX_RANK];
    int n;
    TRY(ox_need(x, 0, &v));
    TRY(axes_of(x, &n, axes));
    int r = ox_dims(x, v, in), ro = r + n;
    if (ro > OX_MAX_RANK) return ox_fail(x, OTC_ERR_UNSUPPORTED, "rank %d", ro);
    bool ins[OX_MAX_RANK] = {0};
    for (int k = 0; k < n; k++) {
        int a;
        if (!norm_axis(axes[k], ro, &a) || ins[a])
            return ox_fail(x, OTC_ERR_FORMAT, "axis %lld", (long long)axes[k]);
        if (a == 0 && !v->c)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "a new axis before the batch dimension");
        ins[a] = true;
    }
    for (int d = 0, s = 0; d < ro; d++) out[d] = ins[d] ? 1 : in[s++];
    return reshaped(x, v, ro, out);
}

static otc_status op_transpose(ox_ctx *x) {
    ox_value *v;
    int64_t in[OX_MAX_RANK], out[OX_MAX_RANK];
    int n, perm[OX_MAX_RANK];
    const int64_t *p;
    TRY(ox_need(x, 0, &v));
    TRY(ox_attr_ints(x, "perm", &n, &p));
    int r = ox_dims(x, v, in);
    bool seen[OX_MAX_RANK] = {0};
    if (n && n != r) return ox_fail(x, OTC_ERR_FORMAT, "perm has %d entries for rank %d", n, r);
    for (int d = 0; d < r; d++) {
        perm[d] = n ? (int)p[d] : r - 1 - d;
        if (!n) continue;
        if (p[d] < 0 || p[d] >= r || seen[p[d]])
            return ox_fail(x, OTC_ERR_FORMAT, "perm is not a permutation");
        seen[p[d]] = true;
    }
    if (v->c) {
        ox_const *c = ox_const_transpose(v->c, perm);
        return c ? ox_set_const(x, 0, c) : ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    }
    /* On a computed value: only a permutation that keeps the batch first and the order of the
     * dimensions larger than 1 moves no data; it is a reshape. */
    int last = -1;
    for (int d = 0; d < r; d++) {
        out[d] = in[perm[d]];
        if (in[perm[d]] == 1) continue;
        if (perm[d] < last || (d == 0) != (perm[d] == 0))
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "a transpose of a computed value that moves data (otc has no "
                           "transpose op)");
        last = perm[d];
    }
    return reshaped(x, v, r, out);
}

static otc_status op_concat(ox_ctx *x) {
    int64_t axis;
    int n = (int)x->node->n_input, ax = 0;
    TRY(ox_attr_int(x, "axis", 0, &axis));
    if (n < 1) return ox_fail(x, OTC_ERR_FORMAT, "no inputs");
    ox_value **vs = malloc((size_t)n * sizeof *vs);
    if (!vs) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    otc_status st = OTC_OK;
    bool all_const = true, any_const = false;
    for (int k = 0; k < n && !st; k++) {
        st = ox_need(x, k, &vs[k]);
        if (!st) {
            all_const = all_const && vs[k]->c;
            any_const = any_const || vs[k]->c;
        }
    }
    int64_t d0[OX_MAX_RANK], dk[OX_MAX_RANK];
    int r = st ? 0 : ox_dims(x, vs[0], d0);
    if (!st && !norm_axis(axis, r, &ax))
        st = ox_fail(x, OTC_ERR_FORMAT, "axis %lld", (long long)axis);
    for (int k = 1; k < n && !st; k++) {
        bool ok = ox_dims(x, vs[k], dk) == r;
        for (int d = 0; ok && d < r; d++) ok = d == ax || dk[d] == d0[d];
        if (!ok) st = ox_fail(x, OTC_ERR_FORMAT, "input %d's shape does not fit input 0's", k);
    }
    if (!st && all_const) {
        ox_const **cs = malloc((size_t)n * sizeof *cs);
        if (!cs) st = ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        for (int k = 0; cs && k < n; k++) cs[k] = vs[k]->c;
        ox_const *c = cs ? ox_const_concat(cs, n, ax) : NULL;
        free(cs);
        st = st ? st : c ? ox_set_const(x, 0, c) : ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    } else if (!st) {
        if (any_const || ax == 0)
            st = ox_fail(x, OTC_ERR_UNSUPPORTED,
                         "concatenation along the batch or of constants with computed values");
        otc_id *ids = st ? NULL : malloc((size_t)n * sizeof *ids);
        if (!st && !ids) st = ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        for (int k = 0; ids && k < n; k++) ids[k] = vs[k]->id;
        if (!st) st = ox_set_node(x, 0, n == 1 ? ids[0] : otc_concat(x->g, n, ids, ax));
        free(ids);
    }
    free(vs);
    return st;
}

/* Part [start, start+len) of v along axis (a constant, or a slice node). */
static otc_status part(ox_ctx *x, int out, ox_value *v, int axis, int64_t start, int64_t len,
                       int64_t full) {
    if (v->c) {
        ox_const *c = ox_const_slice(v->c, axis, start, len);
        return c ? ox_set_const(x, out, c) : ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    }
    if (start == 0 && len == full) return ox_set_node(x, out, v->id);
    return ox_set_node(x, out, otc_slice(x->g, v->id, axis, (int)start, (int)len));
}

static otc_status op_split(ox_ctx *x) {
    ox_value *v;
    int64_t axis, in[OX_MAX_RANK], sizes[OX_MAX_ATTR_INTS];
    int ns = 0, ax, no = (int)x->node->n_output;
    TRY(ox_need(x, 0, &v));
    TRY(ox_attr_int(x, "axis", 0, &axis));
    int r = ox_dims(x, v, in);
    if (!norm_axis(axis, r, &ax) || (!v->c && ax == 0))
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "axis %lld (not the batch)", (long long)axis);
    if (x->opset < 13) {
        const int64_t *s;
        TRY(ox_attr_ints(x, "split", &ns, &s));
        for (int k = 0; k < ns; k++) sizes[k] = s[k];
    } else if (ox_in(x, 1)) {
        ox_value *s = ox_in(x, 1);
        if (!s->c || s->c->n > OX_MAX_ATTR_INTS)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "split sizes must be a constant");
        ns = (int)s->c->n;
        for (int k = 0; k < ns; k++) sizes[k] = ox_const_int(s->c, (size_t)k);
    }
    if (no < 1 || no > OX_MAX_ATTR_INTS) return ox_fail(x, OTC_ERR_FORMAT, "%d outputs", no);
    if (!ns) {
        if (in[ax] % no)
            return ox_fail(x, OTC_ERR_FORMAT, "%lld does not split into %d", (long long)in[ax], no);
        for (int k = 0; k < no; k++) sizes[k] = in[ax] / no;
        ns = no;
    }
    if (ns != no) return ox_fail(x, OTC_ERR_FORMAT, "%d sizes for %d outputs", ns, no);
    int64_t at = 0;
    for (int k = 0; k < ns; k++) {
        if (sizes[k] < 1 || sizes[k] > in[ax] - at)
            return ox_fail(x, OTC_ERR_FORMAT, "split sizes do not fit dimension %lld",
                           (long long)in[ax]);
        TRY(part(x, k, v, ax, at, sizes[k], in[ax]));
        at += sizes[k];
    }
    if (at != in[ax])
        return ox_fail(x, OTC_ERR_FORMAT, "split sizes do not add up to %lld", (long long)in[ax]);
    return OTC_OK;
}

/* Int64 vector input i (or attribute name before opset 10) into v; *n = -1 when absent. */
static otc_status ints_in(ox_ctx *x, int i, const char *attr, int *n, int64_t *v) {
    *n = -1;
    if (x->opset < 10) {
        const int64_t *a;
        int k;
        TRY(ox_attr_ints(x, attr, &k, &a));
        if (!a) return OTC_OK;
        if (k > OX_MAX_RANK) return ox_fail(x, OTC_ERR_FORMAT, "%s has %d entries", attr, k);
        for (int e = 0; e < k; e++) v[e] = a[e];
        *n = k;
        return OTC_OK;
    }
    ox_value *c = ox_in(x, i);
    if (!c) return OTC_OK;
    if (!c->c || c->c->rank != 1 || c->c->n > OX_MAX_RANK)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "input %d (%s) must be a constant vector", i, attr);
    for (size_t e = 0; e < c->c->n; e++) v[e] = ox_const_int(c->c, e);
    *n = (int)c->c->n;
    return OTC_OK;
}

static otc_status op_slice(ox_ctx *x) {
    ox_value *v;
    int64_t in[OX_MAX_RANK], starts[OX_MAX_RANK], ends[OX_MAX_RANK], axes[OX_MAX_RANK],
        steps[OX_MAX_RANK];
    int ns, ne, na, nst;
    TRY(ox_need(x, 0, &v));
    TRY(ints_in(x, 1, "starts", &ns, starts));
    TRY(ints_in(x, 2, "ends", &ne, ends));
    TRY(ints_in(x, 3, "axes", &na, axes));
    TRY(ints_in(x, 4, "steps", &nst, steps));
    int r = ox_dims(x, v, in);
    if (ns < 0 || ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return ox_fail(x, OTC_ERR_FORMAT, "starts, ends, axes and steps differ in length");
    ox_value cur = *v;
    ox_const *owned = NULL;
    otc_status st = OTC_OK;
    bool done[OX_MAX_RANK] = {0};
    for (int k = 0; k < ns && !st; k++) {
        int ax;
        if (!norm_axis(na >= 0 ? axes[k] : k, r, &ax) || done[ax]) {
            st = ox_fail(x, OTC_ERR_FORMAT, "axis %lld", (long long)(na >= 0 ? axes[k] : k));
            break;
        }
        done[ax] = true;
        if (nst >= 0 && steps[k] != 1) {
            st = ox_fail(x, OTC_ERR_UNSUPPORTED, "step %lld (only 1 is read)", (long long)steps[k]);
            break;
        }
        int64_t dim = in[ax], s = starts[k], e = ends[k];
        if (dim == OX_BATCH) {
            if (s == 0 && e >= INT32_MAX) continue; /* the whole batch */
            st = ox_fail(x, OTC_ERR_UNSUPPORTED, "a slice of the batch dimension");
            break;
        }
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        s = s < 0 ? 0 : s > dim ? dim : s;
        e = e < 0 ? 0 : e > dim ? dim : e;
        if (e <= s) {
            st = ox_fail(x, OTC_ERR_UNSUPPORTED, "an empty slice");
            break;
        }
        if (s == 0 && e == dim) continue;
        if (cur.c) {
            ox_const *c = ox_const_slice(cur.c, ax, s, e - s);
            if (!c) st = ox_fail(x, OTC_ERR_NOMEM, "out of memory");
            ox_const_free(owned);
            owned = cur.c = c;
        } else {
            cur.id = otc_slice(x->g, cur.id, ax, (int)s, (int)(e - s));
            st = ox_built(x, cur.id);
        }
        in[ax] = e - s;
    }
    if (st) {
        ox_const_free(owned);
        return st;
    }
    if (!cur.c) return ox_set_node(x, 0, cur.id);
    if (owned) return ox_set_const(x, 0, owned);
    ox_const *c = ox_const_dup(cur.c);
    return c ? ox_set_const(x, 0, c) : ox_fail(x, OTC_ERR_NOMEM, "out of memory");
}

static otc_status op_gather(ox_ctx *x) {
    ox_value *v, *iv;
    int64_t axis, in[OX_MAX_RANK];
    int ax;
    TRY(ox_need(x, 0, &v));
    TRY(ox_need(x, 1, &iv));
    TRY(ox_attr_int(x, "axis", 0, &axis));
    int r = ox_dims(x, v, in);
    if (!norm_axis(axis, r, &ax)) return ox_fail(x, OTC_ERR_FORMAT, "axis %lld", (long long)axis);
    if (!iv->c || iv->c->rank > 1)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "the indices must be a constant scalar or vector");
    if (in[ax] == OX_BATCH) return ox_fail(x, OTC_ERR_UNSUPPORTED, "a gather along the batch");
    size_t ni = iv->c->n;
    int64_t idx[OX_MAX_ATTR_INTS];
    if (ni > OX_MAX_ATTR_INTS || ni < 1)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "%zu indices (1 to %d)", ni, OX_MAX_ATTR_INTS);
    for (size_t k = 0; k < ni; k++) {
        idx[k] = ox_const_int(iv->c, k);
        if (idx[k] < 0) idx[k] += in[ax];
        if (idx[k] < 0 || idx[k] >= in[ax])
            return ox_fail(x, OTC_ERR_FORMAT, "index %lld is outside 0 .. %lld", (long long)idx[k],
                           (long long)in[ax] - 1);
    }
    bool scalar = iv->c->rank == 0;
    if (v->c) {
        ox_const **cs = calloc(ni, sizeof *cs);
        ox_const *c = NULL;
        bool ok = cs != NULL;
        for (size_t k = 0; ok && k < ni; k++) ok = (cs[k] = ox_const_slice(v->c, ax, idx[k], 1));
        if (ok) c = ox_const_concat(cs, (int)ni, ax);
        for (size_t k = 0; cs && k < ni; k++) ox_const_free(cs[k]);
        free(cs);
        if (!c) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        if (scalar) { /* the axis goes */
            for (int d = ax; d + 1 < c->rank; d++) c->dim[d] = c->dim[d + 1];
            c->rank--;
        }
        return ox_set_const(x, 0, c);
    }
    if (scalar) return ox_set_node(x, 0, otc_select(x->g, v->id, ax, (int)idx[0]));
    otc_id ids[OX_MAX_ATTR_INTS];
    for (size_t k = 0; k < ni; k++) {
        ids[k] = otc_slice(x->g, v->id, ax, (int)idx[k], 1);
        TRY(ox_built(x, ids[k]));
    }
    return ox_set_node(x, 0, ni == 1 ? ids[0] : otc_concat(x->g, (int)ni, ids, ax));
}

static otc_status softmax(ox_ctx *x, bool log) {
    ox_value *v;
    int64_t axis, in[OX_MAX_RANK];
    TRY(node_in(x, &v));
    TRY(ox_attr_int(x, "axis", x->opset < 13 ? 1 : -1, &axis));
    int r = ox_dims(x, v, in), ax;
    if (!norm_axis(axis, r, &ax) || ax == 0)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "axis %lld (not the batch)", (long long)axis);
    otc_graph *g = x->g;
    if (ax == r - 1)
        return ox_set_node(x, 0, log ? otc_log_softmax(g, v->id) : otc_softmax(g, v->id));
    if (x->opset < 13 && ax == 1) { /* over everything but the batch: flattened */
        otc_id f = otc_flatten(g, v->id);
        f = f < 0 ? -1 : log ? otc_log_softmax(g, f) : otc_softmax(g, f);
        TRY(ox_built(x, f));
        return ox_set_node(x, 0, otc_reshape(g, f, otc_graph_node(g, v->id)->shape));
    }
    return ox_fail(x, OTC_ERR_UNSUPPORTED, "axis %d of %d (otc's softmax is over the last axis)",
                   ax, r);
}
static otc_status op_softmax(ox_ctx *x) {
    return softmax(x, false);
}
static otc_status op_log_softmax(ox_ctx *x) {
    return softmax(x, true);
}

/* Pad: only the zero padding exporters emit before pools (an identity); otc has no pad op. */
static otc_status op_pad(ox_ctx *x) {
    ox_value *v;
    int64_t pads[2 * OX_MAX_RANK];
    int n;
    char mode[16];
    TRY(ox_need(x, 0, &v));
    TRY(ox_attr_str(x, "mode", "constant", mode, sizeof mode));
    if (x->opset < 11) {
        const int64_t *p;
        TRY(ox_attr_ints(x, "pads", &n, &p));
        if (n > 2 * OX_MAX_RANK) return ox_fail(x, OTC_ERR_FORMAT, "%d pads", n);
        for (int k = 0; k < n; k++) pads[k] = p[k];
    } else {
        ox_value *p = ox_in(x, 1);
        if (!p || !p->c || p->c->n > 2 * OX_MAX_RANK)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "the pads must be a constant");
        n = (int)p->c->n;
        for (int k = 0; k < n; k++) pads[k] = ox_const_int(p->c, (size_t)k);
    }
    for (int k = 0; k < n; k++)
        if (pads[k])
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "padding by %lld (otc pads only inside Conv and pooling)",
                           (long long)pads[k]);
    return op_identity(x);
}

static const struct {
    const char *name;
    ox_handler h;
} ops[] = {
    {"Pad", op_pad},
    {"Add", op_add},
    {"Sub", op_sub},
    {"Mul", op_mul},
    {"Div", op_div},
    {"Relu", op_relu},
    {"LeakyRelu", op_leaky},
    {"Elu", op_elu},
    {"Selu", op_selu},
    {"Sigmoid", op_sigmoid},
    {"HardSigmoid", op_hard_sigmoid},
    {"HardSwish", op_hard_swish},
    {"Tanh", op_tanh},
    {"Softplus", op_softplus},
    {"Clip", op_clip},
    {"Exp", op_exp},
    {"Log", op_log},
    {"Abs", op_abs},
    {"Sqrt", op_sqrt},
    {"Sin", op_sin},
    {"Cos", op_cos},
    {"Reciprocal", op_reciprocal},
    {"Pow", op_pow},
    {"Neg", op_neg},
    {"Softmax", op_softmax},
    {"LogSoftmax", op_log_softmax},
    {"Identity", op_identity},
    {"Dropout", op_identity},
    {"Constant", op_constant},
    {"ConstantOfShape", op_constant_of_shape},
    {"Shape", op_shape},
    {"Cast", op_cast},
    {"Reshape", op_reshape},
    {"Flatten", op_flatten},
    {"Squeeze", op_squeeze},
    {"Unsqueeze", op_unsqueeze},
    {"Transpose", op_transpose},
    {"Concat", op_concat},
    {"Split", op_split},
    {"Slice", op_slice},
    {"Gather", op_gather},
    {"Expand", op_expand},
};

const char ox_supported_ops[] =
    "Add, Sub, Mul, Div, Relu, LeakyRelu, Elu, Selu, Sigmoid, HardSigmoid, HardSwish, Tanh, "
    "Softplus, Clip, Exp, Log, Abs, Sqrt, Sin, Cos, Reciprocal, Pow (by 1, 2, 3, 0.5 or -1), "
    "Neg, Softmax, LogSoftmax, Identity, "
    "Dropout, Constant, "
    "ConstantOfShape, Shape, Cast, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, "
    "Split, Slice, Gather, Expand, Pad (zero), Gemm, MatMul, Conv, MaxPool, AveragePool, "
    "GlobalAveragePool, "
    "GlobalMaxPool, BatchNormalization, ReduceMean/ReduceMax/ReduceSum (spatial; mean and sum "
    "also of everything), RNN, LSTM, GRU, and the nodes otc's export writes for its activations "
    "(Max, Less, Greater, Equal, Where) and NEAT neurons (ReduceProd, "
    "ReduceMin, ArgMax, GatherElements, TopK)";

ox_handler ox_find_op(const char *op_type) {
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (!strcmp(ops[k].name, op_type)) return ops[k].h;
    return ox_find_nn_op(op_type);
}
