/* The integer reference: fixed-point multipliers and one sample through a quantised model's
 * steps, the arithmetic the emitted C (render_c_int8.c) spells statement for statement. */
#include <math.h>
#include <string.h>

#include "otc/quant.h"

otc_status otc_qmult_from_real(double real, otc_qmult *out) {
    out->m = 0;
    out->shift = 1;
    if (!isfinite(real)) return otc_fail(OTC_ERR_ARG, "a requantisation factor is not finite");
    if (real == 0.0) return OTC_OK;
    int e;
    double f = frexp(fabs(real), &e); /* |real| = f 2^e, f in [0.5, 1) */
    int64_t m = (int64_t)llround(f * 2147483648.0);
    if (m == 2147483648LL) { /* f rounded up to 1 */
        m = 1073741824LL;
        e++;
    }
    int shift = 31 - e;
    if (shift < 1)
        return otc_fail(OTC_ERR_ARG, "a requantisation factor of %g is too large for int32", real);
    if (shift > 62) return OTC_OK; /* below 2^-31: nothing of an int32 survives it */
    out->m = (int32_t)(real < 0 ? -m : m);
    out->shift = shift;
    return OTC_OK;
}

/* Arithmetic right shift of a negative int64 is what every compiler the emitted code
 * targets does (GCC and Clang define it). The result saturates at +-2^29, far past any int8,
 * so that a zero point plus two of them (add; a median's middle pair) stays in int32. */
int32_t otc_qmult_apply(int32_t acc, otc_qmult m) {
    int64_t p = ((int64_t)acc * m.m + ((int64_t)1 << (m.shift - 1))) >> m.shift;
    const int64_t lim = (int64_t)1 << 29;
    return (int32_t)(p > lim ? lim : p < -lim ? -lim : p);
}

int32_t otc_qprod_factor(int32_t p, int32_t d, int32_t *e) {
    int64_t v = (int64_t)p * d;
    while (v >= 2147483648LL || v < -2147483648LL) {
        v = (v + 1) >> 1;
        (*e)++;
    }
    return (int32_t)v;
}

int32_t otc_qprod_apply(int32_t p, int32_t m, int32_t sh) {
    if (p == 0 || m == 0 || sh > 62) return 0;
    if (sh < 1) return (p < 0) != (m < 0) ? -(1 << 29) : 1 << 29;
    return otc_qmult_apply(p, (otc_qmult){m, sh});
}

/* In float, rounding half away from zero, statement for statement as the emitted C's float
 * wrapper (render_c_int8.c) quantises, so that both give the same bytes, ties included (a
 * per-column scale of range / 255 puts decimal data on exact halves). */
int8_t otc_quantize_value(float x, otc_qparam p) {
    float v = x / p.scale + (float)p.zero_point;
    if (!(v > -128.0f)) return v < 0.0f ? -128 : (int8_t)p.zero_point; /* NaN: zero */
    if (v > 127.0f) return 127;
    return (int8_t)(int32_t)(v < 0.0f ? v - 0.5f : v + 0.5f);
}

float otc_dequantize_value(int8_t q, otc_qparam p) {
    return p.scale * (float)((int32_t)q - p.zero_point);
}

otc_qparam otc_qtensor_col(const otc_qtensor *t, int c) {
    return t->cols ? t->cols[c] : t->q;
}

void otc_qmodel_quantize_input(const otc_qmodel *q, const float *x, int8_t *in) {
    const otc_qtensor *t = &q->tensors[q->input];
    for (int c = 0; c < q->in_width; c++) in[c] = otc_quantize_value(x[c], otc_qtensor_col(t, c));
}

static int8_t sat(int32_t v, int lo, int hi) {
    return (int8_t)(v < lo ? lo : v > hi ? hi : v);
}

static int8_t *tensor_at(const otc_qmodel *q, int t, int8_t *work, int8_t *state) {
    const otc_qtensor *qt = &q->tensors[t];
    return (qt->state ? state : work) + qt->offset;
}

/* Term i of a neuron: its weighted source in the common term units. */
static int32_t neuron_term(const otc_qmodel *q, const otc_qstep *s, int i, int8_t *work,
                           int8_t *state) {
    const int8_t *x = tensor_at(q, s->src[i], work, state);
    int32_t z = otc_qtensor_col(&q->tensors[s->src[i]], s->col[i]).zero_point;
    return otc_qmult_apply((int32_t)x[s->col[i]] - z, s->term[i]);
}

/* The term of rank r (0 the smallest) among the neuron's terms, found without a buffer. */
static int32_t neuron_rank(const otc_qmodel *q, const otc_qstep *s, int r, int8_t *work,
                           int8_t *state) {
    for (int i = 0; i < s->n_src; i++) {
        int32_t ti = neuron_term(q, s, i, work, state);
        int lt = 0, le = 0;
        for (int j = 0; j < s->n_src; j++) {
            int32_t tj = neuron_term(q, s, j, work, state);
            lt += tj < ti;
            le += tj <= ti;
        }
        if (lt <= r && r < le) return ti;
    }
    return 0;
}

/* The aggregation in term units (median doubled, mean as the sum: the step's multiplier
 * holds the 1/2 or 1/k). */
static int32_t neuron_agg(const otc_qmodel *q, const otc_qstep *s, int8_t *work, int8_t *state) {
    int k = s->n_src;
    if (k == 0) return 0;
    if (s->agg == OTC_AGG_MEDIAN)
        return neuron_rank(q, s, (k - 1) / 2, work, state) + neuron_rank(q, s, k / 2, work, state);
    int64_t acc = 0;
    for (int i = 0; i < k; i++) {
        int32_t t = neuron_term(q, s, i, work, state);
        if (s->agg == OTC_AGG_SUM || s->agg == OTC_AGG_MEAN) {
            acc += t;
        } else if (i == 0) {
            acc = t;
        } else if (s->agg == OTC_AGG_MIN) {
            if (t < acc) acc = t;
        } else if (s->agg == OTC_AGG_MAX) {
            if (t > acc) acc = t;
        } else { /* maxabs */
            if ((t < 0 ? -(int64_t)t : t) > (acc < 0 ? -acc : acc)) acc = t;
        }
    }
    return acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : (int32_t)acc;
}

/* Conv2d and the pools over one sample (NCHW, geometry in s->geo). Integer sums are exact
 * in any order, so the loop order need not match the float kernels'. */
static void run_window(const otc_qstep *s, const int8_t *x, int8_t *y, int32_t zx, int32_t zy) {
    const int32_t *g = s->geo;
    int32_t C = g[0], H = g[1], W = g[2], O = g[3], OH = g[4], OW = g[5], KH = g[6], KW = g[7];
    int32_t cg = C / g[14], og = O / g[14];
    for (int32_t o = 0; o < O; o++) {
        int32_t c0 = s->kind == OTC_QOP_CONV ? (o / og) * cg : o; /* one division per channel */
        for (int32_t oh = 0; oh < OH; oh++)
            for (int32_t ow = 0; ow < OW; ow++) {
                int32_t acc = s->kind == OTC_QOP_CONV ? s->bias[o] : 0, best = -128;
                for (int32_t ci = 0; ci < (s->kind == OTC_QOP_CONV ? cg : 1); ci++) {
                    int32_t c = c0 + ci;
                    for (int32_t kh = 0; kh < KH; kh++) {
                        int32_t ih = oh * g[8] - g[10] + kh * g[12];
                        if (ih < 0 || ih >= H) continue;
                        for (int32_t kw = 0; kw < KW; kw++) {
                            int32_t iw = ow * g[9] - g[11] + kw * g[13];
                            if (iw < 0 || iw >= W) continue;
                            int32_t v = x[(c * H + ih) * W + iw];
                            if (s->kind == OTC_QOP_CONV)
                                acc += (v - zx) * s->w[((o * cg + ci) * KH + kh) * KW + kw];
                            else if (s->kind == OTC_QOP_AVGPOOL)
                                acc += v - zx;
                            else if (v > best)
                                best = v;
                        }
                    }
                }
                int8_t *out = &y[(o * OH + oh) * OW + ow];
                if (s->kind == OTC_QOP_CONV)
                    *out = sat(zy + otc_qmult_apply(acc, s->mult[o]), s->lo, s->hi);
                else if (s->kind == OTC_QOP_AVGPOOL)
                    *out = sat(zy + otc_qmult_apply(acc, s->ma), s->lo, s->hi);
                else
                    *out = (int8_t)best;
            }
    }
}

static void run_step(const otc_qmodel *q, const otc_qstep *s, int8_t *work, int8_t *state) {
    int8_t *y = tensor_at(q, s->out, work, state);
    const int8_t *a = tensor_at(q, s->a, work, state);
    const int8_t *b = s->b >= 0 ? tensor_at(q, s->b, work, state) : NULL;
    int32_t zy = q->tensors[s->out].q.zero_point, za = q->tensors[s->a].q.zero_point;
    int32_t zb = s->b >= 0 ? q->tensors[s->b].q.zero_point : 0;
    int width = q->tensors[s->out].width;
    switch (s->kind) {
    case OTC_QOP_DENSE:
        for (int j = 0; j < s->n; j++) {
            int32_t acc = s->bias[j];
            const int8_t *w = s->w + (size_t)j * (size_t)s->k;
            for (int i = 0; i < s->k; i++)
                acc += ((int32_t)a[i] - otc_qtensor_col(&q->tensors[s->a], i).zero_point) * w[i];
            y[j] = sat(zy + otc_qmult_apply(acc, s->mult[j]), s->lo, s->hi);
        }
        break;
    case OTC_QOP_LUT:
        for (int j = 0; j < width; j++) y[j] = s->lut[a[j] + 128];
        break;
    case OTC_QOP_ADD:
        for (int j = 0; j < width; j++)
            y[j] = sat(zy + otc_qmult_apply((int32_t)a[j] - za, s->ma) +
                           otc_qmult_apply((int32_t)b[j] - zb, s->mb),
                       s->lo, s->hi);
        break;
    case OTC_QOP_MUL:
        for (int j = 0; j < width; j++)
            y[j] = sat(zy + otc_qmult_apply(((int32_t)a[j] - za) * ((int32_t)b[j] - zb), s->ma),
                       s->lo, s->hi);
        break;
    case OTC_QOP_NEURON: {
        int32_t pre = s->bias_q + s->pre_zp;
        if (s->agg == OTC_AGG_PRODUCT) {
            int32_t p = 1, e = 0;
            for (int i = 0; i < s->n_src; i++) {
                const otc_qtensor *t = &q->tensors[s->src[i]];
                int32_t x = tensor_at(q, s->src[i], work, state)[s->col[i]];
                p = otc_qprod_factor(p, x - otc_qtensor_col(t, s->col[i]).zero_point, &e);
            }
            pre += otc_qprod_apply(p, s->ma.m, s->prod_shift - e);
        } else {
            pre += otc_qmult_apply(neuron_agg(q, s, work, state), s->ma);
        }
        y[0] = s->lut[sat(pre, -128, 127) + 128];
        break;
    }
    case OTC_QOP_CONV:
    case OTC_QOP_MAXPOOL:
    case OTC_QOP_AVGPOOL:
        run_window(s, a, y, za, zy);
        break;
    case OTC_QOP_COPY: {
        const int32_t *g = s->geo;
        for (int32_t o = 0; o < g[0]; o++)
            for (int32_t j = 0; j < g[5]; j++)
                for (int32_t i = 0; i < g[6]; i++)
                    y[(o * g[2] + g[4] + j) * g[6] + i] =
                        sat(zy + otc_qmult_apply(a[(o * g[1] + g[3] + j) * g[6] + i] - za, s->ma),
                            s->lo, s->hi);
        break;
    }
    default:
        break;
    }
}

void otc_qmodel_reset(const otc_qmodel *q, int8_t *state) {
    for (int t = 0; t < q->n_tensors; t++) {
        const otc_qtensor *qt = &q->tensors[t];
        if (qt->state) memset(state + qt->offset, qt->q.zero_point, (size_t)qt->width);
    }
}

void otc_qmodel_forward(const otc_qmodel *q, const int8_t *in, int8_t *out, int8_t *work,
                        int8_t *state) {
    memcpy(tensor_at(q, q->input, work, state), in, (size_t)q->in_width);
    for (int i = 0; i < q->n_steps; i++) run_step(q, &q->steps[i], work, state);
    for (int i = 0; i < q->n_outputs; i++) {
        int t = q->outputs[i];
        memcpy(out, tensor_at(q, t, work, state), (size_t)q->tensors[t].width);
        out += q->tensors[t].width;
    }
    /* The new state after the outputs, which may read the old one. */
    for (int t = 0; t < q->n_tensors; t++) {
        const otc_qtensor *qt = &q->tensors[t];
        if (qt->state)
            memcpy(state + qt->offset, tensor_at(q, qt->delay_of, work, state), (size_t)qt->width);
    }
}
