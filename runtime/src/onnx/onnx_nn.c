/* ONNX's layer ops onto the otc IR: Gemm and MatMul with constant weights (transposed and
 * scaled at import), Conv and pooling (1-D as 2-D with H = 1; asymmetric padding as a
 * symmetric one and a slice where strides allow), BatchNormalization folded into the Conv or
 * Gemm before it or else a per-channel affine, LayerNormalization over a [batch, N] value's
 * features in graph ops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

#define TRY(e)                                                                                     \
    do {                                                                                           \
        otc_status st_ = (e);                                                                      \
        if (st_) return st_;                                                                       \
    } while (0)

static otc_status gemm_or_matmul(ox_ctx *x, bool gemm) {
    ox_value *a, *b, *c = gemm ? ox_in(x, 2) : NULL;
    int64_t ta = 0, tb = 0, ad[OX_MAX_RANK];
    float alpha = 1, beta = 1;
    TRY(ox_need(x, 0, &a));
    TRY(ox_need(x, 1, &b));
    if (gemm) {
        TRY(ox_attr_int(x, "transA", 0, &ta));
        TRY(ox_attr_int(x, "transB", 0, &tb));
        TRY(ox_attr_float(x, "alpha", 1, &alpha));
        TRY(ox_attr_float(x, "beta", 1, &beta));
    }
    if (a->c || ta || ox_dims(x, a, ad) != 2)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "the first input must be a computed [batch, K] value, not transposed");
    if (!b->c || b->c->rank != 2 || !b->c->f)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "the second input must be a constant float matrix (the weights)");
    int64_t K = tb ? b->c->dim[1] : b->c->dim[0], N = tb ? b->c->dim[0] : b->c->dim[1];
    if (K != ad[1])
        return ox_fail(x, OTC_ERR_FORMAT, "weights %lldx%lld do not fit K = %lld",
                       (long long)b->c->dim[0], (long long)b->c->dim[1], (long long)ad[1]);
    otc_id w;
    if (!tb && alpha == 1) {
        w = ox_param_of(x, b);
    } else {
        float *buf = malloc((size_t)(K * N) * sizeof *buf + 1);
        if (!buf) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < N; n++)
                buf[k * N + n] = alpha * (tb ? b->c->f[n * K + k] : b->c->f[k * N + n]);
        w = ox_param_new(x, b->name, otc_shape_2d((int)K, (int)N), buf, b->init);
        free(buf);
    }
    TRY(ox_built(x, w));
    otc_id y = otc_matmul(x->g, a->id, w);
    TRY(ox_built(x, y));
    if (!c || beta == 0) return ox_set_node(x, 0, y);
    if (!c->c || !c->c->f || c->c->n != (size_t)N || (c->c->rank == 2 && c->c->dim[0] != 1) ||
        c->c->rank > 2)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "the bias C must be a constant of N = %lld floats ([N] or [1,N])",
                       (long long)N);
    float *bias = malloc((size_t)N * sizeof *bias);
    if (!bias) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    for (int64_t n = 0; n < N; n++) bias[n] = beta * c->c->f[n];
    otc_id bid = ox_param_new(x, c->name, otc_shape_1d((int)N), bias, c->init);
    free(bias);
    TRY(ox_built(x, bid));
    otc_id r = otc_row_broadcast(x->g, bid, y);
    r = r < 0 ? -1 : otc_add(x->g, y, r);
    return ox_set_node(x, 0, r);
}

static otc_status op_gemm(ox_ctx *x) {
    TRY(gemm_or_matmul(x, true));
    ox_value *a = ox_in(x, 1), *c = ox_in(x, 2), *o = ox_out(x, 0);
    const otc_node *n = o ? otc_graph_node(x->g, o->id) : NULL;
    /* y = add(matmul(a, W), row_broadcast(bias)): BatchNormalization may fold into W, bias
     * when nothing else reads them. */
    if (a && c && n && a->uses == 1 && c->uses == 1 && n->op == OTC_OP_ADD) {
        const otc_node *mm = otc_graph_node(x->g, n->inputs[0]);
        const otc_node *rb = otc_graph_node(x->g, n->inputs[1]);
        o->fold = OX_FOLD_GEMM;
        o->fw = mm->inputs[1];
        o->fb = rb->inputs[0];
    }
    return OTC_OK;
}

static otc_status op_matmul(ox_ctx *x) {
    return gemm_or_matmul(x, false);
}

/* A window attribute along the spatial axes (ns of them), or def. */
static otc_status window_ints(ox_ctx *x, const char *name, int ns, int64_t def, int64_t *out) {
    int n;
    const int64_t *v;
    TRY(ox_attr_ints(x, name, &n, &v));
    int want = strcmp(name, "pads") ? ns : 2 * ns;
    if (v && n != want)
        return ox_fail(x, OTC_ERR_FORMAT, "%s has %d values for %d spatial axes", name, n, ns);
    for (int k = 0; k < want; k++) {
        out[k] = v ? v[k] : def;
        if (out[k] < 0 || out[k] > (1 << 20) || (strcmp(name, "pads") && out[k] < 1))
            return ox_fail(x, OTC_ERR_FORMAT, "%s value %lld", name, (long long)out[k]);
    }
    return OTC_OK;
}

typedef struct {
    int ns;                          /* spatial axes: 1 or 2 */
    int64_t in[2], k[2], s[2], d[2]; /* input size, kernel, stride, dilation per axis */
    int64_t pb[2], pe[2];            /* pads at the start and the end */
    int p[2], shift[2], out[2];      /* the symmetric pad otc uses, the slice start, the size */
} window;

/* pads from auto_pad or the attribute, then the symmetric pad and slice that give them. */
static otc_status resolve_pads(ox_ctx *x, window *w, bool ceil_mode) {
    char ap[32];
    int64_t pads[4];
    TRY(ox_attr_str(x, "auto_pad", "NOTSET", ap, sizeof ap));
    TRY(window_ints(x, "pads", w->ns, 0, pads));
    for (int a = 0; a < w->ns; a++) {
        int64_t ext = w->d[a] * (w->k[a] - 1) + 1;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            int64_t o = (w->in[a] + w->s[a] - 1) / w->s[a];
            int64_t total = (o - 1) * w->s[a] + ext - w->in[a];
            if (total < 0) total = 0;
            w->pb[a] = ap[5] == 'U' ? total / 2 : total - total / 2;
            w->pe[a] = total - w->pb[a];
        } else if (!strcmp(ap, "VALID")) {
            w->pb[a] = w->pe[a] = 0;
        } else if (!strcmp(ap, "NOTSET")) {
            w->pb[a] = pads[a];
            w->pe[a] = pads[a + w->ns];
        } else {
            return ox_fail(x, OTC_ERR_FORMAT, "auto_pad '%s'", ap);
        }
        int64_t span = w->in[a] + w->pb[a] + w->pe[a] - ext;
        if (span < 0) return ox_fail(x, OTC_ERR_FORMAT, "the window does not fit the input");
        int64_t out = span / w->s[a] + 1;
        /* ceil_mode adds a last, partial window where the stride does not divide the span;
         * otc rounds down. */
        if (ceil_mode && span % w->s[a])
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "ceil_mode=1 adds a partial window here (otc rounds down)");
        int64_t P = w->pb[a] > w->pe[a] ? w->pb[a] : w->pe[a];
        if ((P - w->pb[a]) % w->s[a])
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "asymmetric pads %lld,%lld with stride %lld (otc pads both sides "
                           "alike)",
                           (long long)w->pb[a], (long long)w->pe[a], (long long)w->s[a]);
        w->p[a] = (int)P;
        w->shift[a] = (int)((P - w->pb[a]) / w->s[a]);
        w->out[a] = (int)out;
    }
    return OTC_OK;
}

/* Reads the spatial sizes and the kernel (from kernel_shape or kshape), strides and
 * dilations of the current Conv or pool over v. */
static otc_status read_window(ox_ctx *x, ox_value *v, const int64_t *kshape, bool dil, window *w,
                              int64_t *dims, int *rank) {
    *rank = ox_dims(x, v, dims);
    if (v->c || (*rank != 3 && *rank != 4))
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "the input must be a computed [batch, C, L] or [batch, C, H, W] value");
    memset(w, 0, sizeof *w);
    w->ns = *rank - 2;
    for (int a = 0; a < w->ns; a++) w->in[a] = dims[2 + a];
    int64_t ks[2];
    TRY(window_ints(x, "kernel_shape", w->ns, 1, ks));
    for (int a = 0; a < w->ns; a++) {
        if (kshape && ox_attr(x, "kernel_shape") && ks[a] != kshape[a])
            return ox_fail(x, OTC_ERR_FORMAT, "kernel_shape does not match the weights");
        w->k[a] = kshape ? kshape[a] : ks[a];
    }
    if (!kshape && !ox_attr(x, "kernel_shape"))
        return ox_fail(x, OTC_ERR_FORMAT, "no kernel_shape");
    TRY(window_ints(x, "strides", w->ns, 1, w->s));
    TRY(window_ints(x, "dilations", w->ns, 1, w->d));
    if (!dil)
        for (int a = 0; a < w->ns; a++)
            if (w->d[a] != 1) return ox_fail(x, OTC_ERR_UNSUPPORTED, "pooling with dilations");
    return OTC_OK;
}

/* v as [B,C,1,L] when 1-D. */
static otc_id as_2d(ox_ctx *x, const window *w, otc_id v) {
    if (w->ns == 2) return v;
    otc_shape s = otc_graph_node(x->g, v)->shape;
    otc_shape t = {.ndim = 4, .dim = {OTC_BATCH, s.dim[1], 1, s.dim[2]}};
    return otc_reshape(x->g, v, t);
}

/* The slice of an asymmetric pad, then back to 1-D: the result in *out. */
static otc_status finish(ox_ctx *x, const window *w, otc_id y, otc_id *out) {
    TRY(ox_built(x, y));
    for (int a = 0; a < w->ns; a++) {
        int axis = w->ns == 2 ? 2 + a : 3;
        if (otc_graph_node(x->g, y)->shape.dim[axis] == w->out[a]) continue;
        y = otc_slice(x->g, y, axis, w->shift[a], w->out[a]);
        TRY(ox_built(x, y));
    }
    if (w->ns == 1) {
        otc_shape s = otc_graph_node(x->g, y)->shape;
        otc_shape t = {.ndim = 3, .dim = {OTC_BATCH, s.dim[1], s.dim[3]}};
        y = otc_reshape(x->g, y, t);
    }
    *out = y;
    return ox_built(x, y);
}

static otc_status op_conv(ox_ctx *x) {
    ox_value *v, *wv, *bv = ox_in(x, 2);
    window w;
    int64_t dims[OX_MAX_RANK], group;
    int r;
    TRY(ox_need(x, 0, &v));
    TRY(ox_need(x, 1, &wv));
    if (!wv->c || !wv->c->f || (wv->c->rank != 3 && wv->c->rank != 4))
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "the weights must be a constant float tensor");
    TRY(read_window(x, v, wv->c->dim + 2, true, &w, dims, &r));
    if (wv->c->rank != r) return ox_fail(x, OTC_ERR_FORMAT, "weights of rank %d", wv->c->rank);
    TRY(ox_attr_int(x, "group", 1, &group));
    TRY(resolve_pads(x, &w, false));
    int64_t O = wv->c->dim[0];
    if (group < 1 || dims[1] % group || O % group || wv->c->dim[1] * group != dims[1])
        return ox_fail(x, OTC_ERR_FORMAT, "group %lld does not fit %lld channels", (long long)group,
                       (long long)dims[1]);
    otc_id wid;
    if (w.ns == 2) {
        wid = ox_param_of(x, wv);
    } else {
        otc_shape s = {.ndim = 4, .dim = {(int)O, (int)wv->c->dim[1], 1, (int)wv->c->dim[2]}};
        wid = ox_param_new(x, wv->name, s, wv->c->f, wv->init);
    }
    TRY(ox_built(x, wid));
    otc_id bid = -1;
    if (bv) {
        if (!bv->c || !bv->c->f || bv->c->n != (size_t)O)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "the bias must be %lld constant floats",
                           (long long)O);
        bid = bv->c->rank == 1
                  ? ox_param_of(x, bv)
                  : ox_param_new(x, bv->name, otc_shape_1d((int)O), bv->c->f, bv->init);
        TRY(ox_built(x, bid));
    }
    otc_conv2d_params p = {.stride_h = w.ns == 2 ? (int)w.s[0] : 1,
                           .stride_w = (int)w.s[w.ns - 1],
                           .pad_h = w.ns == 2 ? w.p[0] : 0,
                           .pad_w = w.p[w.ns - 1],
                           .dilation_h = w.ns == 2 ? (int)w.d[0] : 1,
                           .dilation_w = (int)w.d[w.ns - 1],
                           .groups = (int)group};
    otc_id xin = as_2d(x, &w, v->id);
    TRY(ox_built(x, xin));
    otc_id y;
    TRY(finish(x, &w, otc_conv2d(x->g, NULL, xin, wid, bid, &p), &y));
    TRY(ox_set_node(x, 0, y));
    ox_value *o = ox_out(x, 0);
    if (o && bv && w.ns == 2 && wv->uses == 1 && bv->uses == 1 &&
        otc_graph_node(x->g, o->id)->op == OTC_OP_CONV2D) {
        o->fold = OX_FOLD_CONV;
        o->fw = wid;
        o->fb = bid;
    }
    return OTC_OK;
}

/* The pooled value of v (its window from the current node, or global), in *out. */
static otc_status pool_node(ox_ctx *x, ox_value *v, bool max, bool global, otc_id *out) {
    window w;
    int64_t dims[OX_MAX_RANK], ceil_mode = 0, cip = 0;
    int r;
    if (global) {
        r = ox_dims(x, v, dims);
        int64_t k[2] = {dims[2], r == 4 ? dims[3] : 0};
        TRY(read_window(x, v, k, false, &w, dims, &r));
        w.s[0] = w.s[1] = 1;
        for (int a = 0; a < w.ns; a++) w.out[a] = 1;
    } else {
        TRY(read_window(x, v, NULL, false, &w, dims, &r));
        if (x->opset >= 10) TRY(ox_attr_int(x, "ceil_mode", 0, &ceil_mode));
        TRY(resolve_pads(x, &w, ceil_mode != 0));
        if (!max) {
            TRY(ox_attr_int(x, "count_include_pad", 0, &cip));
            for (int a = 0; a < w.ns; a++)
                if (!cip && (w.pb[a] || w.pe[a]))
                    return ox_fail(x, OTC_ERR_UNSUPPORTED,
                                   "count_include_pad=0 with padding (otc's average counts the "
                                   "padding, as count_include_pad=1)");
        }
    }
    otc_pool2d_params p = {.kernel_h = w.ns == 2 ? (int)w.k[0] : 1,
                           .kernel_w = (int)w.k[w.ns - 1],
                           .stride_h = w.ns == 2 ? (int)w.s[0] : 1,
                           .stride_w = (int)w.s[w.ns - 1],
                           .pad_h = w.ns == 2 ? w.p[0] : 0,
                           .pad_w = w.p[w.ns - 1]};
    otc_id xin = as_2d(x, &w, v->id);
    TRY(ox_built(x, xin));
    otc_id y = max ? otc_maxpool2d(x->g, NULL, xin, &p) : otc_avgpool2d(x->g, NULL, xin, &p);
    return finish(x, &w, y, out);
}

static otc_status pool(ox_ctx *x, bool max, bool global) {
    ox_value *v;
    otc_id y;
    TRY(ox_need(x, 0, &v));
    TRY(pool_node(x, v, max, global, &y));
    return ox_set_node(x, 0, y);
}
static otc_status op_maxpool(ox_ctx *x) {
    return pool(x, true, false);
}
static otc_status op_avgpool(ox_ctx *x) {
    return pool(x, false, false);
}
static otc_status op_global_max(ox_ctx *x) {
    return pool(x, true, true);
}
static otc_status op_global_avg(ox_ctx *x) {
    return pool(x, false, true);
}

/* ReduceMean, ReduceMax, ReduceSum over the spatial axes of [B, C, L] or [B, C, H, W] (what
 * x.mean([2, 3]) exports): a global pool, the sum a scaled mean. */
static otc_status reduce_spatial(ox_ctx *x, bool max, bool sum) {
    ox_value *v;
    int64_t dims[OX_MAX_RANK], keep, axes[OX_MAX_RANK];
    int n = 0;
    TRY(ox_need(x, 0, &v));
    TRY(ox_attr_int(x, "keepdims", 1, &keep));
    int r = v->c ? 0 : ox_dims(x, v, dims);
    if (sum && x->opset >= 13) {
        ox_value *a = ox_in(x, 1);
        if (a && (!a->c || a->c->n > OX_MAX_RANK))
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "the axes must be a constant");
        n = a ? (int)a->c->n : 0;
        for (int k = 0; k < n; k++) axes[k] = ox_const_int(a->c, (size_t)k);
    } else {
        const int64_t *a;
        TRY(ox_attr_ints(x, "axes", &n, &a));
        if (n > OX_MAX_RANK) return ox_fail(x, OTC_ERR_FORMAT, "%d axes", n);
        for (int k = 0; k < n; k++) axes[k] = a[k];
    }
    if (n == 0 && !keep && !max && !v->c) /* everything, the batch too: a scalar */
        return ox_set_node(x, 0, sum ? otc_sum(x->g, v->id) : otc_mean(x->g, v->id));
    bool ok = (r == 3 || r == 4) && n == r - 2;
    for (int k = 0; ok && k < n; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
        ok = a >= 2 && a < r;
        for (int j = 0; ok && j < k; j++) ok = (axes[j] < 0 ? axes[j] + r : axes[j]) != a;
    }
    if (!ok)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "only a reduction over all the spatial axes of a computed [B,C,L] or "
                       "[B,C,H,W] value is read (a global pool)");
    otc_id y = -1;
    TRY(pool_node(x, v, max, true, &y));
    if (sum) {
        float hw = (float)(dims[2] * (r == 4 ? dims[3] : 1));
        y = otc_scale(x->g, y, hw);
        TRY(ox_built(x, y));
    }
    if (!keep) y = otc_reshape(x->g, y, otc_shape_2d(OTC_BATCH, (int)dims[1]));
    return ox_set_node(x, 0, y);
}
static otc_status op_reduce_mean(ox_ctx *x) {
    return reduce_spatial(x, false, false);
}
static otc_status op_reduce_max(ox_ctx *x) {
    return reduce_spatial(x, true, false);
}
static otc_status op_reduce_sum(ox_ctx *x) {
    return reduce_spatial(x, false, true);
}

static otc_status op_batchnorm(ox_ctx *x) {
    ox_value *v, *in[4];
    int64_t dims[OX_MAX_RANK], training = 0;
    float eps;
    TRY(ox_need(x, 0, &v));
    for (int k = 0; k < 4; k++) TRY(ox_need(x, k + 1, &in[k]));
    TRY(ox_attr_float(x, "epsilon", 1e-5f, &eps));
    if (x->opset >= 14) TRY(ox_attr_int(x, "training_mode", 0, &training));
    if (training) return ox_fail(x, OTC_ERR_UNSUPPORTED, "training_mode=1");
    int r = ox_dims(x, v, dims);
    if (v->c || r < 2) return ox_fail(x, OTC_ERR_UNSUPPORTED, "a constant or rank-1 input");
    int64_t C = dims[1];
    for (int k = 0; k < 4; k++)
        if (!in[k]->c || !in[k]->c->f || in[k]->c->n != (size_t)C)
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "scale, B, mean and var must be %lld constant floats", (long long)C);
    float *a = malloc((size_t)C * 2 * sizeof *a);
    if (!a) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    float *b = a + C;
    for (int64_t c = 0; c < C; c++) {
        double s = in[0]->c->f[c] / sqrt((double)in[3]->c->f[c] + eps);
        a[c] = (float)s;
        b[c] = (float)(in[1]->c->f[c] - in[2]->c->f[c] * s);
    }
    otc_status st = OTC_OK;
    if ((v->fold == OX_FOLD_CONV || v->fold == OX_FOLD_GEMM) && v->uses == 1) {
        otc_tensor *wt = otc_graph_param(x->g, v->fw), *bt = otc_graph_param(x->g, v->fb);
        bool conv = v->fold == OX_FOLD_CONV;
        size_t per = conv ? wt->size / (size_t)C : 1;
        for (size_t e = 0; e < wt->size; e++) {
            size_t c = conv ? e / per : e % (size_t)C;
            wt->data[e] *= a[c];
        }
        for (int64_t c = 0; c < C; c++) bt->data[c] = bt->data[c] * a[c] + b[c];
        st = ox_set_node(x, 0, v->id);
    } else {
        /* y = x * a + b per channel (axis 1), a and b repeated over the other axes. */
        int64_t cd[OX_MAX_RANK];
        cd[0] = C;
        for (int d = 1; d < r - 1; d++) cd[d] = 1;
        ox_const *ca = ox_const_new(r - 1, cd, false), *cb = ox_const_new(r - 1, cd, false);
        if (!ca || !cb) st = ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        if (!st) {
            memcpy(ca->f, a, (size_t)C * sizeof *a);
            memcpy(cb->f, b, (size_t)C * sizeof *b);
            ox_value va = {.name = in[0]->name, .c = ca, .id = -1};
            ox_value vb = {.name = in[1]->name, .c = cb, .id = -1};
            otc_id pa = ox_const_like(x, &va, v->id);
            otc_id y = pa < 0 ? -1 : otc_mul(x->g, v->id, pa);
            otc_id pb = y < 0 ? -1 : ox_const_like(x, &vb, y);
            st = pb < 0 ? OTC_ERR_UNSUPPORTED : ox_set_node(x, 0, otc_add(x->g, y, pb));
        }
        ox_const_free(ca);
        ox_const_free(cb);
    }
    free(a);
    return st;
}

/* LayerNormalization over the features of a [batch, N] value, in graph ops: the per-sample
 * mean is a product with a constant column of 1/N (x @ [N,1]) and is spread back over the
 * features by a constant row of ones ([B,1] @ [1,N]); the variance is the mean of the
 * centred squares; then 1 / sqrt(var + epsilon), scale and B (trainable, by their names).
 * The optional outputs Mean and InvStdDev are the [batch, 1] values it computes. */
static otc_status op_layernorm(ox_ctx *x) {
    ox_value *v, *sc, *bv = NULL;
    int64_t axis, stash, dims[OX_MAX_RANK];
    float eps;
    TRY(ox_need(x, 0, &v));
    TRY(ox_need(x, 1, &sc));
    if (ox_in(x, 2)) TRY(ox_need(x, 2, &bv));
    TRY(ox_attr_int(x, "axis", -1, &axis));
    TRY(ox_attr_float(x, "epsilon", 1e-5f, &eps));
    TRY(ox_attr_int(x, "stash_type", 1, &stash));
    int r = v->c ? 0 : ox_dims(x, v, dims);
    if (r != 2 || (axis != 1 && axis != -1))
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "normalises over axis %lld of a %s of rank %d: otc reads only the last "
                       "axis of a computed [batch, N] value (its graph has no per-sample mean "
                       "over part of a sample)",
                       (long long)axis, v->c ? "constant" : "value", v->c ? v->c->rank : r);
    if (stash != 1)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "stash_type %lld (otc computes in float, 1)",
                       (long long)stash);
    const int N = (int)dims[1];
    if (N < 1) return ox_fail(x, OTC_ERR_UNSUPPORTED, "no features to normalise over");
    for (ox_value *c = sc; c; c = c == sc ? bv : NULL)
        if (!c->c || !c->c->f || c->c->n != (size_t)N)
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "Scale and B must be constant floats of the %d features (initializers), "
                           "'%.80s' is not",
                           N, c->name);
    float *k = malloc((size_t)N * 2 * sizeof *k);
    if (!k) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < N; i++) {
        k[i] = 1.0f / (float)N;
        k[N + i] = 1.0f;
    }
    char base[256];
    const ox_value *o0 = ox_out(x, 0);
    snprintf(base, sizeof base, "%.200s/mean", o0 ? o0->name : "LayerNormalization");
    otc_graph *g = x->g;
    otc_id col = ox_param_new(x, base, otc_shape_2d(N, 1), k, false);
    snprintf(base, sizeof base, "%.200s/spread", o0 ? o0->name : "LayerNormalization");
    otc_id row = col < 0 ? -1 : ox_param_new(x, base, otc_shape_2d(1, N), k + N, false);
    snprintf(base, sizeof base, "%.200s/epsilon", o0 ? o0->name : "LayerNormalization");
    otc_id e = row < 0 ? -1 : ox_param_new(x, base, otc_shape_1d(1), &eps, false);
    free(k);
    TRY(ox_built(x, e));
    otc_id mean = otc_matmul(g, v->id, col);
    otc_id xc = otc_sub(g, v->id, otc_matmul(g, mean, row));
    otc_id var = otc_matmul(g, otc_mul(g, xc, xc), col);
    var = otc_add(g, var, otc_row_broadcast(g, e, var));
    otc_id inv = otc_activation(g, OTC_OP_RECIPROCAL, otc_activation(g, OTC_OP_SQRT, var, 0), 0);
    otc_id y = otc_mul(g, xc, otc_matmul(g, inv, row));
    TRY(ox_built(x, y));
    otc_id ps = ox_const_like(x, sc, y);
    y = ps < 0 ? -1 : otc_mul(g, y, ps);
    if (y >= 0 && bv) {
        otc_id pb = ox_const_like(x, bv, y);
        y = pb < 0 ? -1 : otc_add(g, y, pb);
    }
    if (y < 0) return ox_built(x, y);
    TRY(ox_set_node(x, 0, y));
    if (ox_out(x, 1)) TRY(ox_set_node(x, 1, mean));
    if (ox_out(x, 2)) TRY(ox_set_node(x, 2, inv));
    return OTC_OK;
}

static const struct {
    const char *name;
    ox_handler h;
} ops[] = {
    {"Gemm", op_gemm},
    {"MatMul", op_matmul},
    {"Conv", op_conv},
    {"MaxPool", op_maxpool},
    {"AveragePool", op_avgpool},
    {"GlobalAveragePool", op_global_avg},
    {"GlobalMaxPool", op_global_max},
    {"BatchNormalization", op_batchnorm},
    {"LayerNormalization", op_layernorm},
    {"ReduceMean", op_reduce_mean},
    {"ReduceMax", op_reduce_max},
    {"ReduceSum", op_reduce_sum},
};

ox_handler ox_find_nn_op(const char *op_type) {
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (!strcmp(ops[k].name, op_type)) return ops[k].h;
    return NULL;
}
