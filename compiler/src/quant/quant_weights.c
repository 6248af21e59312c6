/* Weight-only storage: IEEE half and per-output-channel int8 weights, decoded to the floats
 * the host computes with and the emitted C decodes to (otc/quant.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "otc/quant.h"

uint16_t otc_f16_from_f32(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    float a = fabsf(f);
    if (a != a) return (uint16_t)(sign | 0x7e00u);
    if (!(a < 65520.0f)) return (uint16_t)(sign | 0x7c00u); /* past the largest half, 65504 */
    /* Below 2^-14 a half is subnormal: a multiple of 2^-24, exact after the scaling. */
    if (a < 0x1p-14f) return (uint16_t)(sign | (uint16_t)rintf(a * 0x1p24f));
    /* A normal half: drop 13 mantissa bits, rounding to nearest even (a carry into the
     * exponent is the right result too), then rebias the exponent from 127 to 15. */
    uint32_t ax = x & 0x7fffffffu;
    uint32_t r = (ax + 0xfffu + ((ax >> 13) & 1u)) >> 13;
    return (uint16_t)(sign | (r - ((127u - 15u) << 10)));
}

float otc_f32_from_f16(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float f;
    if (e == 0) {
        f = (float)m * 0x1p-24f;
        return sign ? -f : f;
    }
    uint32_t x = sign | (e == 31 ? 0x7f800000u : (e + 112u) << 23) | m << 13;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* The layout one consumer reads parameter id in, or false for a use without one. */
static bool use_layout(const otc_graph *g, const otc_node *nd, int input, otc_id id,
                       int64_t *channels, int64_t *inner) {
    const otc_node *p = otc_graph_node(g, id);
    int64_t n = (int64_t)p->value->size;
    if (nd->op == OTC_OP_MATMUL && input == 1 && p->shape.ndim == 2) {
        *channels = p->shape.dim[1];
        *inner = 1;
    } else if (nd->op == OTC_OP_CONV2D && input == 1 && p->shape.ndim == 4) {
        *channels = p->shape.dim[0];
        *inner = n / *channels;
    } else if (nd->op == OTC_OP_NEURON && input == 0) {
        *channels = 1;
        *inner = n;
    } else {
        return false;
    }
    return *channels > 0 && *inner > 0;
}

bool otc_weights_int8_layout(const otc_graph *g, otc_id id, int64_t *channels, int64_t *inner) {
    const otc_node *p = otc_graph_node(g, id);
    if (!p || p->op != OTC_OP_PARAMETER || !p->value || p->value->size == 0) return false;
    bool seen = false;
    for (otc_id c = 0; c < otc_graph_size(g); c++) {
        const otc_node *nd = otc_graph_node(g, c);
        for (int i = 0; i < nd->n_inputs; i++) {
            if (nd->inputs[i] != id) continue;
            int64_t ch, in;
            if (!use_layout(g, nd, i, id, &ch, &in)) return false;
            /* Two consumers must agree on the channels, or one scale cannot serve both. */
            if (seen && (ch != *channels || in != *inner)) return false;
            *channels = ch;
            *inner = in;
            seen = true;
        }
    }
    return seen;
}

void otc_weights_int8_quantize(const float *w, int64_t n, int64_t channels, int64_t inner,
                               int8_t *q, float *scale) {
    for (int64_t c = 0; c < channels; c++) scale[c] = 0.0f;
    for (int64_t j = 0; j < n; j++) {
        float a = fabsf(w[j]);
        int64_t c = (j / inner) % channels;
        if (a > scale[c]) scale[c] = a;
    }
    for (int64_t c = 0; c < channels; c++) scale[c] /= 127.0f;
    for (int64_t j = 0; j < n; j++) {
        float s = scale[(j / inner) % channels];
        /* A channel of zeros keeps scale 0 and q 0, which decode to 0. */
        float v = s > 0.0f ? roundf(w[j] / s) : 0.0f;
        q[j] = (int8_t)(v > 127.0f ? 127 : v < -127.0f ? -127 : (int)v);
    }
}

otc_status otc_weights_round(otc_graph *g, otc_weight_storage mode) {
    if (!g) return otc_fail(OTC_ERR_ARG, "weights: NULL graph");
    for (otc_id id = 0; id < otc_graph_size(g) && mode != OTC_WEIGHTS_F32; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op != OTC_OP_PARAMETER || !nd->value) continue;
        otc_tensor *t = otc_graph_param(g, id);
        char lab[64];
        for (size_t j = 0; j < t->size; j++)
            if (!isfinite(t->data[j]))
                return otc_fail(OTC_ERR_UNSUPPORTED, "parameter %s element %zu is %g: not a weight",
                                otc_graph_node_label(g, id, lab, sizeof lab), j,
                                (double)t->data[j]);
        if (mode == OTC_WEIGHTS_F16) {
            for (size_t j = 0; j < t->size; j++) {
                float v = otc_f32_from_f16(otc_f16_from_f32(t->data[j]));
                if (isinf(v) && !isinf(t->data[j]))
                    return otc_fail(OTC_ERR_UNSUPPORTED,
                                    "parameter %s element %zu is %g, past f16's largest value "
                                    "(65504): store it in f32 or int8",
                                    otc_graph_node_label(g, id, lab, sizeof lab), j,
                                    (double)t->data[j]);
                t->data[j] = v;
            }
            continue;
        }
        int64_t channels, inner;
        if (!otc_weights_int8_layout(g, id, &channels, &inner)) continue;
        int64_t n = (int64_t)t->size;
        int8_t *q = malloc((size_t)n);
        float *scale = malloc((size_t)channels * sizeof *scale);
        if (!q || !scale) {
            free(q);
            free(scale);
            return otc_fail(OTC_ERR_NOMEM, "out of memory");
        }
        otc_weights_int8_quantize(t->data, n, channels, inner, q, scale);
        for (int64_t j = 0; j < n; j++) t->data[j] = (float)q[j] * scale[(j / inner) % channels];
        free(q);
        free(scale);
    }
    return OTC_OK;
}

int64_t otc_weights_stored_bytes(const otc_graph *g, otc_weight_storage mode) {
    int64_t bytes = 0;
    for (otc_id id = 0; id < otc_graph_size(g); id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op != OTC_OP_PARAMETER || !nd->value) continue;
        int64_t n = (int64_t)nd->value->size, channels, inner;
        if (mode == OTC_WEIGHTS_F16)
            bytes += 2 * n;
        else if (mode == OTC_WEIGHTS_INT8 && otc_weights_int8_layout(g, id, &channels, &inner))
            bytes += n + 4 * channels;
        else
            bytes += 4 * n;
        if (mode == OTC_WEIGHTS_INT8) bytes += 3 * (int64_t)sizeof(size_t); /* its run */
    }
    return bytes;
}
