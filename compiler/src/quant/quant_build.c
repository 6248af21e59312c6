/* Lowering to int8: each calibrated range (quant_calibrate.c) gives a value's scale and zero
 * point, and every node becomes an integer step (dense layers with per-output-channel weights,
 * lookup tables from the op spec's expression trees, NEAT neurons). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant_internal.h"

/* Asymmetric int8 over [lo, hi] widened to hold 0 (so zero, padding and ReLU's floor are
 * exact); a value that never varies gets a unit range. */
static otc_qparam qparam_of(range r) {
    double lo = r.lo < 0 ? r.lo : 0, hi = r.hi > 0 ? r.hi : 0;
    if (!(hi - lo > 1e-12)) hi = lo + 1.0;
    double scale = (hi - lo) / 255.0;
    double zp = nearbyint(-128.0 - lo / scale);
    otc_qparam p = {(float)scale, (int32_t)(zp < -128 ? -128 : zp > 127 ? 127 : zp)};
    return p;
}

/* The int8 grid spanning exactly r, 0 included or not: for a neuron's pre-activation, an
 * int32 sum that is only saturated to int8 to index the table, so its zero point may lie
 * outside int8 (a range wholly on one side of 0 keeps all 256 steps). |zp| < 2^28 keeps
 * bias + zp + the requantised sum (< 1e9 + 2^28 + 2^29) inside int32. */
static otc_qparam qparam_span(range r) {
    if (!(r.hi - r.lo > 1e-12)) return qparam_of(r);
    double scale = (r.hi - r.lo) / 255.0, zp = nearbyint(-128.0 - r.lo / scale);
    if (!(fabs(zp) < 268435456.0)) return qparam_of(r);
    otc_qparam p = {(float)scale, (int32_t)zp};
    return p;
}

/* ---- lowering ---- */

typedef struct {
    otc_graph *g;
    const otc_dataset *d; /* the calibration rows (the input's per-column ranges) */
    node_stats *st;
    int *tensor_of; /* node -> tensor (-1: none yet) */
    int *uses;      /* node -> consumers + output marks */
    bool *done;     /* fused into an earlier step */
    otc_qmodel *q;
    int cap_t, cap_s;
} builder;

static otc_status no_lowering(builder *b, otc_id id, const char *reason) {
    char lb[96], why_buf[256];
    /* reason may be otc_last_error()'s buffer, which otc_fail rewrites. */
    const char *why = reason ? strncpy(why_buf, reason, sizeof why_buf - 1) : NULL;
    why_buf[sizeof why_buf - 1] = '\0';
    return otc_fail(OTC_ERR_UNSUPPORTED, "node %s (%s) has no integer lowering%s%s",
                    otc_graph_node_label(b->g, id, lb, sizeof lb),
                    otc_op_get(otc_graph_node(b->g, id)->op)->name, why ? ": " : "",
                    why ? why : "");
}

static int new_tensor(builder *b, int width, otc_qparam p, bool state) {
    otc_qmodel *q = b->q;
    if (q->n_tensors == b->cap_t) {
        int cap = b->cap_t ? 2 * b->cap_t : 16;
        otc_qtensor *t = realloc(q->tensors, sizeof *t * (size_t)cap);
        if (!t) return -1;
        q->tensors = t;
        b->cap_t = cap;
    }
    otc_qtensor *t = &q->tensors[q->n_tensors];
    *t = (otc_qtensor){.width = width, .q = p, .state = state, .delay_of = -1};
    int *bytes = state ? &q->state_bytes : &q->workspace_bytes;
    if (width < 0 || *bytes > INT32_MAX / 2 - width) return -1;
    t->offset = *bytes;
    *bytes += width;
    return q->n_tensors++;
}

static otc_qstep *new_step(builder *b, otc_qop_kind kind, otc_id node) {
    otc_qmodel *q = b->q;
    if (q->n_steps == b->cap_s) {
        int cap = b->cap_s ? 2 * b->cap_s : 16;
        otc_qstep *s = realloc(q->steps, sizeof *s * (size_t)cap);
        if (!s) return NULL;
        q->steps = s;
        b->cap_s = cap;
    }
    otc_qstep *s = &q->steps[q->n_steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->node = node;
    s->b = -1;
    s->lo = -128;
    s->hi = 127;
    return s;
}

/* The part of the calibrated input range r where a table of f (output quantised to out) still
 * varies: the ends where f stays within half an output LSB of its value at r's end are cut
 * off. Inputs there then saturate to the cut, whose entry is within that half LSB of f's
 * value anywhere in the cut-off end (for a monotone end), so the table's 256 entries spread
 * over where the output changes instead of a steep sigmoid's flat tails. f sampled on a grid
 * of 4096 points; r unchanged where f is flat or not finite. */
static range active_range(const otc_expr *f, float a, range r, otc_qparam out) {
    enum { N = 4096 };
    if (!f || !(r.hi > r.lo)) return r;
    double y[N + 1], tol = 0.5 * out.scale;
    for (int i = 0; i <= N; i++) {
        otc_expr_env env = {.x = (float)(r.lo + (r.hi - r.lo) * i / N), .a = a};
        y[i] = otc_expr_eval(f, &env);
        if (!isfinite(y[i])) return r;
    }
    int lo = 0, hi = N;
    while (lo < N && fabs(y[lo + 1] - y[0]) <= tol) lo++;
    while (hi > 0 && fabs(y[hi - 1] - y[N]) <= tol) hi--;
    if (lo >= hi) return r;
    range c = {r.lo + (r.hi - r.lo) * lo / N, r.lo + (r.hi - r.lo) * hi / N};
    return c;
}

/* The elementwise op that becomes a table step (lower_unary), or NULL. */
static const otc_expr *table_op(const otc_node *nd) {
    const otc_op_info *info = otc_op_get(nd->op);
    return info->kind == OTC_OPKIND_ELEMENTWISE && info->max_inputs == 1 ? otc_op_map_expr(nd->op)
                                                                         : NULL;
}

static otc_id sole_consumer(builder *b, otc_id id);

/* The output tensor of node id, with its calibrated scale; when a table step is its only
 * reader, only the range where that table varies (active_range). */
static int out_tensor(builder *b, otc_id id) {
    range r = b->st[id].v;
    otc_id c = sole_consumer(b, id);
    const otc_node *cn = c >= 0 ? otc_graph_node(b->g, c) : NULL;
    if (cn && table_op(cn))
        r = active_range(table_op(cn), otc_node_param(cn), r, qparam_of(b->st[c].v));
    int t =
        new_tensor(b, otc_quant_row_width(otc_graph_node(b->g, id)->shape), qparam_of(r), false);
    if (t >= 0) b->tensor_of[id] = t;
    return t;
}

/* A table of f over every int8 input: x dequantised, f evaluated as the op spec says,
 * the result quantised to the output's parameters. */
static void fill_lut(int8_t *lut, const otc_expr *f, float a, otc_qparam in, otc_qparam out) {
    for (int v = -128; v < 128; v++) {
        otc_expr_env env = {.x = otc_dequantize_value((int8_t)v, in), .a = a};
        lut[v + 128] = otc_quantize_value(otc_expr_eval(f, &env), out);
    }
}

/* The node the only consumer of id is, or -1 (an output or a value read twice has none). */
static otc_id sole_consumer(builder *b, otc_id id) {
    if (b->uses[id] != 1) return -1;
    int n = otc_graph_size(b->g);
    for (otc_id c = id + 1; c < n; c++) {
        const otc_node *nd = otc_graph_node(b->g, c);
        for (int i = 0; i < nd->n_inputs; i++)
            if (nd->inputs[i] == id) return c;
    }
    return -1;
}

static bool is_param(builder *b, otc_id id) {
    return otc_graph_node(b->g, id)->op == OTC_OP_PARAMETER;
}

/* The int32 accumulator of k products (|x - zx| <= 255, |w| <= 127) plus a bias cannot
 * overflow (signed overflow would be undefined in both the host and the device code); nor
 * can the emitted C's order, the bias less zx times the weights' sum (<= 128 * 127 * k) and
 * then k products x * w (|x| <= 128). */
static bool acc_fits(int64_t k, double bias_q) {
    return fabs(bias_q) + (double)k * 256.0 * 127.0 < 2147483647.0;
}

/* matmul(x, W [K,N]) [+ row_broadcast(bias [N])] [-> ReLU or clamp]: one dense step. */
/* ReLU and clamp after `last` are saturation in the output's own range: fused as the step's
 * clamp bounds. The node that now ends the step; *fused_act the fused op, or -1. */
static otc_id fuse_saturation(builder *b, otc_id last, int *fused_act) {
    otc_id c = sole_consumer(b, last);
    if (c >= 0 && (otc_graph_node(b->g, c)->op == OTC_OP_RELU ||
                   otc_graph_node(b->g, c)->op == OTC_OP_CLAMPED)) {
        *fused_act = otc_graph_node(b->g, c)->op;
        b->done[c] = true;
        return c;
    }
    return last;
}

/* A dense or conv step's weights, biases and multipliers, one output channel at a time:
 * symmetric int8 per channel, the bias in the accumulator's scale, and the requantising
 * multiplier to the output's scale. n channels of k inputs each; input i of channel j is
 * w[i * stride_i + j * stride_j]; stored as s->w[j * k + i]. */
static otc_status quantize_channels(builder *b, otc_qstep *s, otc_id node, const float *w,
                                    const float *bias, int k, int n, size_t stride_i,
                                    size_t stride_j, int fused_act) {
    s->k = k;
    s->n = n;
    s->w = malloc((size_t)k * (size_t)n);
    s->bias = calloc((size_t)n, sizeof *s->bias);
    s->mult = calloc((size_t)n, sizeof *s->mult);
    if (!s->w || !s->bias || !s->mult) return OTC_ERR_NOMEM;
    const otc_qtensor *xt = &b->q->tensors[s->a];
    otc_qparam qx = xt->q, qy = b->q->tensors[s->out].q;
    if (fused_act == OTC_OP_RELU) s->lo = otc_quantize_value(0.0f, qy);
    if (fused_act == OTC_OP_CLAMPED) {
        s->lo = otc_quantize_value(-1.0f, qy);
        s->hi = otc_quantize_value(1.0f, qy);
    }
    /* Per-column input scales (a dense step on the input) are folded into the weights:
     * x_i w_i = (q_i - z_i) (s_i / qx.scale) w_i qx.scale, so input i's weight is scaled by
     * s_i / qx.scale before the channel is quantised (by 1: one scale for all). */
    double *wr = malloc(sizeof *wr * (size_t)(k ? k : 1));
    if (!wr) return OTC_ERR_NOMEM;
    for (int j = 0; j < n; j++) {
        double amax = 0;
        for (int i = 0; i < k; i++) {
            wr[i] = w[(size_t)i * stride_i + (size_t)j * stride_j];
            if (xt->cols) wr[i] *= (double)xt->cols[i].scale / qx.scale;
            if (!isfinite(wr[i])) {
                free(wr);
                return no_lowering(b, node, "a weight is not finite");
            }
            if (fabs(wr[i]) > amax) amax = fabs(wr[i]);
        }
        double sw = amax > 0 ? amax / 127.0 : 1.0; /* symmetric, per output channel */
        for (int i = 0; i < k; i++)
            s->w[(size_t)j * (size_t)k + (size_t)i] = (int8_t)nearbyint(wr[i] / sw);
        double sacc = (double)qx.scale * sw;
        double bq = bias ? nearbyint(bias[j] / sacc) : 0.0;
        if (!acc_fits(k, bq)) {
            free(wr);
            return no_lowering(b, node,
                               "its accumulator could overflow int32 (a bias or the number of "
                               "inputs is too large)");
        }
        s->bias[j] = (int32_t)bq;
        if (otc_qmult_from_real(sacc / qy.scale, &s->mult[j])) {
            free(wr);
            return no_lowering(b, node, otc_last_error());
        }
    }
    free(wr);
    return OTC_OK;
}

static otc_status lower_dense(builder *b, otc_id mm) {
    const otc_node *nd = otc_graph_node(b->g, mm);
    otc_id x = nd->inputs[0], wid = nd->inputs[1];
    const otc_node *wn = otc_graph_node(b->g, wid);
    if (b->tensor_of[x] < 0 || !is_param(b, wid) || wn->shape.ndim != 2)
        return no_lowering(b, mm, "only a value times a weight parameter [K,N] is lowered");
    int k = wn->shape.dim[0], n = wn->shape.dim[1];
    const float *w = wn->value->data, *bias = NULL;
    otc_id last = mm;
    /* otc_linear's shape: add(mm, row_broadcast(bias, like = mm)); the broadcast reads mm
     * only for its shape, so mm's value goes to the add alone. */
    for (otc_id c = mm + 1; c < otc_graph_size(b->g) && b->uses[mm] == 2; c++) {
        const otc_node *an = otc_graph_node(b->g, c);
        if (an->op != OTC_OP_ADD || (an->inputs[0] != mm && an->inputs[1] != mm)) continue;
        otc_id rb = an->inputs[an->inputs[0] == mm ? 1 : 0];
        const otc_node *rn = otc_graph_node(b->g, rb);
        if (rn->op == OTC_OP_ROW_BROADCAST && rn->inputs[1] == mm && b->uses[rb] == 1 &&
            is_param(b, rn->inputs[0])) {
            bias = otc_graph_node(b->g, rn->inputs[0])->value->data;
            b->done[c] = b->done[rb] = true;
            last = c;
        }
        break;
    }
    int fused_act = -1;
    last = fuse_saturation(b, last, &fused_act);
    int xt = b->tensor_of[x], yt = out_tensor(b, last);
    otc_qstep *s = yt < 0 ? NULL : new_step(b, OTC_QOP_DENSE, last);
    if (!s) return OTC_ERR_NOMEM;
    /* Every fused node had one consumer, the next: none but `last` is read again. */
    b->tensor_of[mm] = b->tensor_of[last] = yt;
    s->a = xt;
    s->out = yt;
    /* W [k, n]: input i of channel j at i * n + j. */
    return quantize_channels(b, s, mm, w, bias, k, n, (size_t)n, 1, fused_act);
}

/* x [B,C,H,W] -> geometry of a Conv2d or pool node (see otc_qstep.geo). */
static void window_geo(const otc_graph *g, const otc_node *nd, int out_c, int32_t *geo) {
    const otc_node *x = otc_graph_node(g, nd->inputs[0]);
    const otc_window *w = &nd->win;
    int32_t v[15] = {x->shape.dim[1],
                     x->shape.dim[2],
                     x->shape.dim[3],
                     out_c,
                     nd->shape.dim[2],
                     nd->shape.dim[3],
                     w->kernel_h,
                     w->kernel_w,
                     w->stride_h,
                     w->stride_w,
                     w->pad_h,
                     w->pad_w,
                     w->dilation_h ? w->dilation_h : 1,
                     w->dilation_w ? w->dilation_w : 1,
                     w->groups ? w->groups : 1};
    memcpy(geo, v, sizeof v);
}

/* Conv2d (weights per output channel, symmetric) [-> ReLU or clamp]. */
static otc_status lower_conv(builder *b, otc_id id) {
    const otc_node *nd = otc_graph_node(b->g, id);
    otc_id x = nd->inputs[0], wid = nd->inputs[1];
    if (b->tensor_of[x] < 0 || !is_param(b, wid) || nd->shape.ndim != 4 ||
        (nd->n_inputs > 2 && !is_param(b, nd->inputs[2])))
        return no_lowering(b, id, "only a value convolved with parameters is lowered");
    const otc_node *wn = otc_graph_node(b->g, wid);
    const float *w = wn->value->data;
    const float *bias = nd->n_inputs > 2 ? otc_graph_node(b->g, nd->inputs[2])->value->data : NULL;
    int o = wn->shape.dim[0], per = (int)(wn->value->size / (size_t)o);
    int fused_act = -1;
    otc_id last = fuse_saturation(b, id, &fused_act);
    int xt = b->tensor_of[x], yt = out_tensor(b, last);
    otc_qstep *s = yt < 0 ? NULL : new_step(b, OTC_QOP_CONV, last);
    if (!s) return OTC_ERR_NOMEM;
    b->tensor_of[id] = yt;
    s->a = xt;
    s->out = yt;
    window_geo(b->g, nd, o, s->geo);
    /* weight [o, C/groups, KH, KW]: input i of channel j at j * per + i. */
    return quantize_channels(b, s, id, w, bias, per, o, 1, (size_t)per, fused_act);
}

/* Max pooling keeps the input's scale (a maximum of int8 values is exact); average pooling
 * requantises the window's sum. */
static otc_status lower_pool(builder *b, otc_id id) {
    const otc_node *nd = otc_graph_node(b->g, id);
    int xt = b->tensor_of[nd->inputs[0]];
    if (xt < 0 || nd->shape.ndim != 4) return no_lowering(b, id, NULL);
    bool avg = nd->op == OTC_OP_AVGPOOL2D;
    if (avg && !acc_fits((int64_t)nd->win.kernel_h * nd->win.kernel_w, 0))
        return no_lowering(b, id, "its window's sum could overflow int32");
    otc_qparam qx = b->q->tensors[xt].q;
    int yt = avg ? out_tensor(b, id) : new_tensor(b, otc_quant_row_width(nd->shape), qx, false);
    otc_qstep *s = yt < 0 ? NULL : new_step(b, avg ? OTC_QOP_AVGPOOL : OTC_QOP_MAXPOOL, id);
    if (!s) return OTC_ERR_NOMEM;
    b->tensor_of[id] = yt;
    s->a = xt;
    s->out = yt;
    window_geo(b->g, nd, nd->shape.dim[1], s->geo);
    if (avg && otc_qmult_from_real((double)qx.scale / ((double)nd->win.kernel_h * nd->win.kernel_w *
                                                       b->q->tensors[yt].q.scale),
                                   &s->ma))
        return no_lowering(b, id, otc_last_error());
    return OTC_OK;
}

static otc_status lower_binary(builder *b, otc_id id) {
    const otc_node *nd = otc_graph_node(b->g, id);
    int at = b->tensor_of[nd->inputs[0]], bt = b->tensor_of[nd->inputs[1]];
    if (at < 0 || bt < 0 || b->q->tensors[at].width != b->q->tensors[bt].width)
        return no_lowering(b, id, "both operands must be per-sample values of one width");
    int yt = out_tensor(b, id);
    otc_qstep *s =
        yt < 0 ? NULL : new_step(b, nd->op == OTC_OP_MUL ? OTC_QOP_MUL : OTC_QOP_ADD, id);
    if (!s) return OTC_ERR_NOMEM;
    s->out = yt;
    s->a = at;
    s->b = bt;
    double sa = b->q->tensors[at].q.scale, sb = b->q->tensors[bt].q.scale,
           sy = b->q->tensors[yt].q.scale;
    otc_status st;
    if (nd->op == OTC_OP_MUL) {
        st = otc_qmult_from_real(sa * sb / sy, &s->ma);
    } else {
        st = otc_qmult_from_real(sa / sy, &s->ma);
        if (!st) st = otc_qmult_from_real((nd->op == OTC_OP_SUB ? -sb : sb) / sy, &s->mb);
    }
    return st ? no_lowering(b, id, otc_last_error()) : OTC_OK;
}

static otc_status lower_unary(builder *b, otc_id id) {
    const otc_node *nd = otc_graph_node(b->g, id);
    int at = b->tensor_of[nd->inputs[0]];
    if (at < 0) return no_lowering(b, id, "its operand is not a per-sample value");
    int yt = out_tensor(b, id);
    otc_qstep *s = yt < 0 ? NULL : new_step(b, OTC_QOP_LUT, id);
    if (!s) return OTC_ERR_NOMEM;
    s->a = at;
    s->out = yt;
    fill_lut(s->lut, otc_op_map_expr(nd->op), otc_node_param(nd), b->q->tensors[at].q,
             b->q->tensors[yt].q);
    return OTC_OK;
}

/* The product aggregation: prod_i w_i x_i = C prod_i (q_i - z_i), C = prod_i w_i s_i known at
 * compile time. The integer factors are multiplied at run time (otc_qprod_factor: exact
 * until the product needs 31 bits, then rounded to 31 significant bits, a relative error
 * under 2^-30 a factor); response * C / (the pre-activation's scale) is one multiplier of
 * [0.5, 1) times a power of two, which with the run time's exponent sets the final shift.
 * The error is thus the inputs' own int8 rounding, a relative error of about
 * sum_i 0.5 / |q_i - z_i| in the product, plus half a pre-activation step. */
static otc_status lower_product(builder *b, otc_id id, otc_qstep *s, double pre_scale) {
    const otc_node *nd = otc_graph_node(b->g, id);
    const float *w = otc_graph_node(b->g, nd->inputs[0])->value->data;
    double cm = (double)nd->scale / pre_scale;
    int ce = 0, e;
    for (int i = 0; i < s->n_src; i++) {
        cm = frexp(cm * w[i] * otc_qtensor_col(&b->q->tensors[s->src[i]], s->col[i]).scale, &e);
        ce += e;
    }
    cm = frexp(cm, &e);
    ce += e;
    if (!isfinite(cm)) return no_lowering(b, id, "its product's scale is not finite");
    otc_status st = otc_qmult_from_real(cm, &s->ma); /* |cm| in [0.5, 1): always representable */
    if (st) return no_lowering(b, id, otc_last_error());
    if (abs(ce) > (1 << 20)) return no_lowering(b, id, "its product's scale is out of range");
    s->prod_shift = s->ma.shift - ce;
    return OTC_OK;
}

static otc_status lower_neuron(builder *b, otc_id id) {
    const otc_node *nd = otc_graph_node(b->g, id);
    int k = nd->n_inputs - 2;
    for (int i = 0; i < k; i++)
        if (b->tensor_of[nd->inputs[2 + i]] < 0)
            return no_lowering(b, id, "a source is not a per-sample value");
    int yt = out_tensor(b, id);
    otc_qstep *s = yt < 0 ? NULL : new_step(b, OTC_QOP_NEURON, id);
    if (!s) return OTC_ERR_NOMEM;
    s->out = yt;
    s->a = yt; /* unused; a valid tensor for the common prologue */
    s->n_src = k;
    s->agg = nd->agg;
    s->src = calloc((size_t)(k ? k : 1), sizeof *s->src);
    s->col = calloc((size_t)(k ? k : 1), sizeof *s->col);
    s->term = calloc((size_t)(k ? k : 1), sizeof *s->term);
    if (!s->src || !s->col || !s->term) return OTC_ERR_NOMEM;
    const node_stats *ns = &b->st[id];
    /* Terms and their aggregate in 16-bit units of the largest seen: exact integer
     * comparisons and sums, with room for the runtime to exceed calibration 65536-fold. */
    double s_t = ns->tmax > 0 ? ns->tmax / 32767.0 : 1.0 / 32767.0;
    const otc_expr *act = otc_act_get((otc_act)nd->act)->f;
    otc_qparam qp =
        qparam_span(active_range(act, otc_node_param(nd), ns->pre, b->q->tensors[yt].q));
    const float *w = otc_graph_node(b->g, nd->inputs[0])->value->data;
    double bias = otc_graph_node(b->g, nd->inputs[1])->value->data[0];
    otc_status st = OTC_OK;
    for (int i = 0; !st && i < k; i++) {
        s->src[i] = b->tensor_of[nd->inputs[2 + i]];
        s->col[i] = nd->cols[i];
        double sx = otc_qtensor_col(&b->q->tensors[s->src[i]], s->col[i]).scale;
        if (nd->agg != OTC_AGG_PRODUCT) /* a product multiplies the raw factors */
            st = otc_qmult_from_real(sx * (double)w[i] / s_t, &s->term[i]);
    }
    double f = nd->agg == OTC_AGG_MEAN && k > 0 ? 1.0 / k : nd->agg == OTC_AGG_MEDIAN ? 0.5 : 1.0;
    if (st) return no_lowering(b, id, otc_last_error());
    if (nd->agg == OTC_AGG_PRODUCT) {
        if ((st = lower_product(b, id, s, qp.scale))) return st;
    } else if (otc_qmult_from_real((double)nd->scale * s_t * f / qp.scale, &s->ma)) {
        return no_lowering(b, id, otc_last_error());
    }
    if (!isfinite(bias) || !(fabs(bias / qp.scale) < 1e9))
        return no_lowering(b, id, "its bias is out of range");
    s->bias_q = (int32_t)nearbyint(bias / qp.scale);
    s->pre_zp = qp.zero_point;
    fill_lut(s->lut, act, otc_node_param(nd), qp, b->q->tensors[yt].q);
    return OTC_OK;
}

/* Slice and select copy a block of x and keep its scale (a multiplier of 1: exact); concat
 * copies each input's block into its place, requantised to the output's scale. A block is,
 * per sample, `outer` runs of len * inner bytes along the axis. */
static otc_status lower_copy(builder *b, otc_id id) {
    const otc_node *nd = otc_graph_node(b->g, id);
    otc_shape xs = otc_graph_node(b->g, nd->inputs[0])->shape;
    int axis = nd->axis < 0 ? nd->axis + xs.ndim : nd->axis;
    if (otc_quant_row_width(xs) < 0 || axis < 1 || axis >= xs.ndim)
        return no_lowering(b, id, "only along a per-sample axis of per-sample values");
    for (int k = 0; k < nd->n_inputs; k++)
        if (b->tensor_of[nd->inputs[k]] < 0)
            return no_lowering(b, id, "an operand is not a per-sample value");
    int32_t outer = 1, inner = 1;
    for (int d = 1; d < axis; d++) outer *= xs.dim[d];
    for (int d = axis + 1; d < xs.ndim; d++) inner *= xs.dim[d];
    bool concat = nd->op == OTC_OP_CONCAT;
    int yt = concat ? out_tensor(b, id)
                    : new_tensor(b, otc_quant_row_width(nd->shape),
                                 b->q->tensors[b->tensor_of[nd->inputs[0]]].q, false);
    if (yt < 0) return OTC_ERR_NOMEM;
    b->tensor_of[id] = yt;
    int32_t off = 0, total = concat ? nd->shape.dim[axis] : nd->len;
    for (int k = 0; k < nd->n_inputs; k++) {
        int32_t dk = otc_graph_node(b->g, nd->inputs[k])->shape.dim[axis];
        otc_qstep *s = new_step(b, OTC_QOP_COPY, id);
        if (!s) return OTC_ERR_NOMEM;
        s->a = b->tensor_of[nd->inputs[k]];
        s->out = yt;
        int32_t geo[7] = {
            outer, dk, total, concat ? 0 : nd->start, concat ? off : 0, concat ? dk : nd->len,
            inner};
        memcpy(s->geo, geo, sizeof geo);
        off += dk;
        double r = b->q->tensors[s->a].q.scale / b->q->tensors[yt].q.scale;
        if (otc_qmult_from_real(r, &s->ma)) return no_lowering(b, id, otc_last_error());
    }
    return OTC_OK;
}

/* Whether every reader of the input can take a scale per column: dense steps on it and NEAT
 * neurons fold column c's scale into c's weight or term multiplier; anything else (a table,
 * a sum, a conv, a delay, an output) reads all its columns on one grid. */
static bool per_column_ok(builder *b, otc_id input) {
    for (int i = 0; i < otc_graph_output_count(b->g); i++)
        if (otc_graph_output(b->g, i) == input) return false;
    for (otc_id c = 0; c < otc_graph_size(b->g); c++) {
        const otc_node *nd = otc_graph_node(b->g, c);
        for (int i = 0; i < nd->n_inputs; i++) {
            if (nd->inputs[i] != input) continue;
            bool dense = nd->op == OTC_OP_MATMUL && i == 0 && nd->inputs[1] != input;
            bool neuron = nd->op == OTC_OP_NEURON && i >= 2;
            if (!dense && !neuron) return false;
        }
    }
    return true;
}

/* The input's tensor: a scale and zero point per column from that column's calibrated range
 * when its readers allow it (features of different ranges each keep 256 steps), else one
 * for all. */
static otc_status lower_input(builder *b, otc_id id) {
    int t = out_tensor(b, id);
    if (t < 0) return OTC_ERR_NOMEM;
    if (!per_column_ok(b, id)) return OTC_OK;
    otc_qtensor *qt = &b->q->tensors[t];
    int w = qt->width;
    qt->cols = malloc(sizeof *qt->cols * (size_t)(w ? w : 1));
    if (!qt->cols) return OTC_ERR_NOMEM;
    for (int c = 0; c < w; c++) {
        range r = {INFINITY, -INFINITY};
        for (int row = 0; row < b->d->rows; row++)
            otc_quant_widen(&r, b->d->x[(size_t)row * (size_t)w + (size_t)c]);
        qt->cols[c] = qparam_of(r);
    }
    return OTC_OK;
}

static otc_status lower_node(builder *b, otc_id id) {
    const otc_node *nd = otc_graph_node(b->g, id);
    const node_stats *st = &b->st[id];
    if (st->seen && !(isfinite(st->v.lo) && isfinite(st->v.hi) &&
                      (nd->op != OTC_OP_NEURON ||
                       (isfinite(st->pre.lo) && isfinite(st->pre.hi) && isfinite(st->tmax)))))
        return no_lowering(b, id, "its value on the calibration rows is not finite");
    switch (nd->op) {
    case OTC_OP_INPUT:
        return lower_input(b, id);
    case OTC_OP_PARAMETER:
        return OTC_OK; /* read by the dense step or neuron that uses it */
    case OTC_OP_MATMUL:
        return lower_dense(b, id);
    case OTC_OP_ADD:
    case OTC_OP_SUB:
    case OTC_OP_MUL:
        return lower_binary(b, id);
    case OTC_OP_NEURON:
        return lower_neuron(b, id);
    case OTC_OP_CONV2D:
        return lower_conv(b, id);
    case OTC_OP_MAXPOOL2D:
    case OTC_OP_AVGPOOL2D:
        return lower_pool(b, id);
    case OTC_OP_RESHAPE:
    case OTC_OP_FLATTEN: /* the same bytes, per sample */
        if (b->tensor_of[nd->inputs[0]] < 0) return no_lowering(b, id, NULL);
        b->tensor_of[id] = b->tensor_of[nd->inputs[0]];
        return OTC_OK;
    case OTC_OP_DELAY: {
        /* The state shares its source's scale (the pair's ranges were merged) so that
         * carrying it is a copy. */
        int t = new_tensor(b, otc_quant_row_width(nd->shape), qparam_of(b->st[id].v), true);
        if (t < 0) return OTC_ERR_NOMEM;
        b->tensor_of[id] = t;
        return OTC_OK;
    }
    case OTC_OP_CONCAT:
    case OTC_OP_SLICE:
    case OTC_OP_SELECT:
        return lower_copy(b, id);
    case OTC_OP_SOFTMAX:
    case OTC_OP_LOG_SOFTMAX:
        if (b->uses[id] == 1 && sole_consumer(b, id) < 0 && b->tensor_of[nd->inputs[0]] >= 0)
            return OTC_OK; /* an output: the caller applies it to the dequantised logits */
        return no_lowering(b, id, "softmax is left to the caller, so only as an output");
    default:
        if (table_op(nd)) return lower_unary(b, id);
        return no_lowering(b, id, NULL);
    }
}

void otc_qmodel_free(otc_qmodel *q) {
    if (!q) return;
    for (int i = 0; i < q->n_steps; i++) {
        free(q->steps[i].w);
        free(q->steps[i].bias);
        free(q->steps[i].mult);
        free(q->steps[i].src);
        free(q->steps[i].col);
        free(q->steps[i].term);
    }
    for (int i = 0; i < q->n_tensors; i++) free(q->tensors[i].cols);
    free(q->steps);
    free(q->tensors);
    free(q->outputs);
    free(q->logits);
    free(q);
}

static otc_status lower(builder *b, otc_id input) {
    otc_graph *g = b->g;
    int n = otc_graph_size(g);
    otc_id *order = malloc(sizeof *order * (size_t)n);
    if (!order) return OTC_ERR_NOMEM;
    otc_status s = otc_graph_topo_order(g, order);
    for (otc_id id = 0; id < n; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        for (int i = 0; i < nd->n_inputs; i++) b->uses[nd->inputs[i]]++;
    }
    for (int i = 0; i < otc_graph_output_count(g); i++) b->uses[otc_graph_output(g, i)]++;
    /* A delay and its source share one range: the state is the source's value. */
    for (otc_id id = 0; id < n; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op != OTC_OP_DELAY) continue;
        node_stats *a = &b->st[id], *c = &b->st[nd->inputs[0]];
        otc_quant_widen(&c->v, a->v.lo);
        otc_quant_widen(&c->v, a->v.hi);
        a->v = c->v;
    }
    for (int i = 0; !s && i < n; i++)
        if (!b->done[order[i]]) s = lower_node(b, order[i]);
    free(order);
    if (s) return s;
    otc_qmodel *q = b->q;
    q->input = b->tensor_of[input];
    q->in_width = q->tensors[q->input].width;
    for (int t = 0; t < q->n_tensors; t++) {
        otc_qtensor *qt = &q->tensors[t];
        if (!qt->state) continue;
        for (otc_id id = 0; id < n; id++)
            if (b->tensor_of[id] == t && otc_graph_node(g, id)->op == OTC_OP_DELAY) {
                otc_id src = otc_graph_node(g, id)->inputs[0];
                qt->delay_of = b->tensor_of[src];
                if (qt->delay_of < 0 || q->tensors[qt->delay_of].q.scale != qt->q.scale ||
                    q->tensors[qt->delay_of].q.zero_point != qt->q.zero_point)
                    return no_lowering(b, id, "its source has a scale of its own");
            }
    }
    q->n_outputs = otc_graph_output_count(g);
    q->outputs = calloc((size_t)q->n_outputs + 1, sizeof *q->outputs);
    q->logits = calloc((size_t)q->n_outputs + 1, sizeof *q->logits);
    if (!q->outputs || !q->logits) return OTC_ERR_NOMEM;
    for (int i = 0; i < q->n_outputs; i++) {
        otc_id o = otc_graph_output(g, i);
        const otc_node *nd = otc_graph_node(g, o);
        if (nd->op == OTC_OP_SOFTMAX || nd->op == OTC_OP_LOG_SOFTMAX) {
            q->logits[i] = true;
            o = nd->inputs[0];
        }
        q->outputs[i] = b->tensor_of[o];
        if (q->outputs[i] < 0) return no_lowering(b, o, "an output must be a per-sample value");
        q->out_width += q->tensors[q->outputs[i]].width;
    }
    return OTC_OK;
}

otc_status otc_quantize_int8(otc_graph *g, const otc_dataset *d, otc_qmodel **out) {
    *out = NULL;
    otc_id input = -1;
    otc_status s = otc_quant_check_data(g, d, &input);
    if (s) return s;
    int n = otc_graph_size(g);
    builder b = {.g = g, .d = d};
    b.st = calloc((size_t)n, sizeof *b.st);
    b.tensor_of = malloc(sizeof *b.tensor_of * (size_t)n);
    b.uses = calloc((size_t)n, sizeof *b.uses);
    b.done = calloc((size_t)n, sizeof *b.done);
    b.q = calloc(1, sizeof *b.q);
    if (!b.st || !b.tensor_of || !b.uses || !b.done || !b.q) {
        s = otc_fail(OTC_ERR_NOMEM, "out of memory quantising the model");
    } else {
        for (otc_id id = 0; id < n; id++) b.tensor_of[id] = -1;
        s = otc_quant_calibrate(g, d, input, b.st);
        if (!s) s = lower(&b, input);
    }
    free(b.st);
    free(b.tensor_of);
    free(b.uses);
    free(b.done);
    if (s) {
        otc_qmodel_free(b.q);
        return s == OTC_ERR_NOMEM ? otc_fail(s, "out of memory quantising the model") : s;
    }
    *out = b.q;
    return OTC_OK;
}
