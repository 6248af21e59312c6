/* Interpreter kernels of the structural ops: row broadcast, reductions, reshapes, concat,
 * slice, select and the softmaxes along the last axis. */
#include <math.h>
#include <string.h>

#include "kernels.h"

/* A resolved shape seen around one axis: outer blocks, the axis itself, inner elements. */
typedef struct {
    size_t outer, mid, inner;
} axis_split;

static axis_split split_at(otc_shape s, int axis) {
    axis_split r = {1, 1, 1};
    if (axis < 0) axis += s.ndim; /* the node keeps the axis as given; the rule checked it */
    for (int d = 0; d < s.ndim; d++) {
        if (d < axis)
            r.outer *= (size_t)s.dim[d];
        else if (d == axis)
            r.mid = (size_t)s.dim[d];
        else
            r.inner *= (size_t)s.dim[d];
    }
    return r;
}

static void accumulate(float *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

otc_status otc_fwd_row_broadcast(const otc_kernel_args *a) {
    size_t n = otc_kshape_size(a->in_shape[0]);
    size_t rows = otc_kshape_size(a->out_shape) / n;
    for (size_t r = 0; r < rows; r++) memcpy(a->out + r * n, a->in[0], n * sizeof(float));
    return OTC_OK;
}

/* `like` only lends its shape: no gradient reaches it. */
void otc_bwd_row_broadcast(const otc_kernel_args *a) {
    float *gv = a->in_grad[0];
    if (!gv) return;
    size_t n = otc_kshape_size(a->in_shape[0]);
    size_t rows = otc_kshape_size(a->out_shape) / n;
    for (size_t r = 0; r < rows; r++) accumulate(gv, a->out_grad + r * n, n);
}

/* Reductions accumulate in double: a mean over a large batch then does not depend on the
 * order of the rows to float precision. */
static double sum_of(const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return s;
}

otc_status otc_fwd_sum(const otc_kernel_args *a) {
    a->out[0] = (float)sum_of(a->in[0], otc_kshape_size(a->in_shape[0]));
    return OTC_OK;
}

void otc_bwd_sum(const otc_kernel_args *a) {
    float *gx = a->in_grad[0], g = a->out_grad[0];
    if (!gx) return;
    size_t n = otc_kshape_size(a->in_shape[0]);
    for (size_t i = 0; i < n; i++) gx[i] += g;
}

otc_status otc_fwd_mean(const otc_kernel_args *a) {
    size_t n = otc_kshape_size(a->in_shape[0]);
    a->out[0] = (float)(sum_of(a->in[0], n) / (double)n);
    return OTC_OK;
}

void otc_bwd_mean(const otc_kernel_args *a) {
    float *gx = a->in_grad[0];
    if (!gx) return;
    size_t n = otc_kshape_size(a->in_shape[0]);
    float g = a->out_grad[0] / (float)n;
    for (size_t i = 0; i < n; i++) gx[i] += g;
}

/* Reshape and flatten keep the row-major order: a copy forward, a pass-through backward. */
otc_status otc_fwd_reshape(const otc_kernel_args *a) {
    memcpy(a->out, a->in[0], otc_kshape_size(a->out_shape) * sizeof(float));
    return OTC_OK;
}

void otc_bwd_reshape(const otc_kernel_args *a) {
    if (a->in_grad[0]) accumulate(a->in_grad[0], a->out_grad, otc_kshape_size(a->out_shape));
}

otc_status otc_fwd_flatten(const otc_kernel_args *a) {
    return otc_fwd_reshape(a);
}

void otc_bwd_flatten(const otc_kernel_args *a) {
    otc_bwd_reshape(a);
}

otc_status otc_fwd_concat(const otc_kernel_args *a) {
    axis_split o = split_at(a->out_shape, a->node->axis);
    size_t out_row = o.mid * o.inner, off = 0;
    for (int i = 0; i < a->n_in; i++) {
        axis_split s = split_at(a->in_shape[i], a->node->axis);
        size_t chunk = s.mid * s.inner;
        for (size_t r = 0; r < o.outer; r++)
            memcpy(a->out + r * out_row + off, a->in[i] + r * chunk, chunk * sizeof(float));
        off += chunk;
    }
    return OTC_OK;
}

void otc_bwd_concat(const otc_kernel_args *a) {
    axis_split o = split_at(a->out_shape, a->node->axis);
    size_t out_row = o.mid * o.inner, off = 0;
    for (int i = 0; i < a->n_in; i++) {
        axis_split s = split_at(a->in_shape[i], a->node->axis);
        size_t chunk = s.mid * s.inner;
        if (a->in_grad[i])
            for (size_t r = 0; r < o.outer; r++)
                accumulate(a->in_grad[i] + r * chunk, a->out_grad + r * out_row + off, chunk);
        off += chunk;
    }
}

/* Slice and select copy `len` planes starting at `start` from each outer block. */
static void take(const otc_kernel_args *a, size_t len) {
    axis_split s = split_at(a->in_shape[0], a->node->axis);
    size_t chunk = len * s.inner, skip = (size_t)a->node->start * s.inner;
    for (size_t r = 0; r < s.outer; r++)
        memcpy(a->out + r * chunk, a->in[0] + r * s.mid * s.inner + skip, chunk * sizeof(float));
}

static void take_back(const otc_kernel_args *a, size_t len) {
    float *gx = a->in_grad[0];
    if (!gx) return;
    axis_split s = split_at(a->in_shape[0], a->node->axis);
    size_t chunk = len * s.inner, skip = (size_t)a->node->start * s.inner;
    for (size_t r = 0; r < s.outer; r++)
        accumulate(gx + r * s.mid * s.inner + skip, a->out_grad + r * chunk, chunk);
}

otc_status otc_fwd_slice(const otc_kernel_args *a) {
    take(a, (size_t)a->node->len);
    return OTC_OK;
}

void otc_bwd_slice(const otc_kernel_args *a) {
    take_back(a, (size_t)a->node->len);
}

otc_status otc_fwd_select(const otc_kernel_args *a) {
    take(a, 1);
    return OTC_OK;
}

void otc_bwd_select(const otc_kernel_args *a) {
    take_back(a, 1);
}

/* Softmaxes run along the last axis, each row shifted by its maximum so exp never
 * overflows (log-sum-exp). */
static size_t last_dim(otc_shape s) {
    return s.ndim > 0 ? (size_t)s.dim[s.ndim - 1] : 1;
}

otc_status otc_fwd_softmax(const otc_kernel_args *a) {
    size_t C = last_dim(a->out_shape), rows = otc_kshape_size(a->out_shape) / C;
    for (size_t r = 0; r < rows; r++) {
        const float *x = a->in[0] + r * C;
        float *y = a->out + r * C, m = x[0], s = 0.0f;
        for (size_t c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
        for (size_t c = 0; c < C; c++) {
            y[c] = expf(x[c] - m);
            s += y[c];
        }
        float inv = 1.0f / s;
        for (size_t c = 0; c < C; c++) y[c] *= inv;
    }
    return OTC_OK;
}

/* dx = y * (g - sum(g * y)) per row. */
void otc_bwd_softmax(const otc_kernel_args *a) {
    float *gx = a->in_grad[0];
    if (!gx) return;
    size_t C = last_dim(a->out_shape), rows = otc_kshape_size(a->out_shape) / C;
    for (size_t r = 0; r < rows; r++) {
        const float *y = a->out + r * C, *g = a->out_grad + r * C;
        float *d = gx + r * C, dot = 0.0f;
        for (size_t c = 0; c < C; c++) dot += g[c] * y[c];
        for (size_t c = 0; c < C; c++) d[c] += y[c] * (g[c] - dot);
    }
}

otc_status otc_fwd_log_softmax(const otc_kernel_args *a) {
    size_t C = last_dim(a->out_shape), rows = otc_kshape_size(a->out_shape) / C;
    for (size_t r = 0; r < rows; r++) {
        const float *x = a->in[0] + r * C;
        float *y = a->out + r * C, m = x[0], s = 0.0f;
        for (size_t c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
        for (size_t c = 0; c < C; c++) s += expf(x[c] - m);
        /* (x - m) - log(s), not x - (m + log(s)): the shifted value is exact, so large logits
         * keep their precision. */
        float ls = logf(s);
        for (size_t c = 0; c < C; c++) y[c] = (x[c] - m) - ls;
    }
    return OTC_OK;
}

/* dx = g - softmax * sum(g) per row; softmax = exp(y). */
void otc_bwd_log_softmax(const otc_kernel_args *a) {
    float *gx = a->in_grad[0];
    if (!gx) return;
    size_t C = last_dim(a->out_shape), rows = otc_kshape_size(a->out_shape) / C;
    for (size_t r = 0; r < rows; r++) {
        const float *y = a->out + r * C, *g = a->out_grad + r * C;
        float *d = gx + r * C, s = 0.0f;
        for (size_t c = 0; c < C; c++) s += g[c];
        for (size_t c = 0; c < C; c++) d[c] += g[c] - expf(y[c]) * s;
    }
}
