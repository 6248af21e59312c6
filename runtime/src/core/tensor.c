/* f32 tensors: shapes, allocation, scalar arithmetic and random initialisation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/tensor.h"

otc_shape otc_shape_make(int ndim, const int *dims) {
    otc_shape s = {0};
    s.ndim = ndim;
    for (int i = 0; i < ndim && i < OTC_MAX_DIMS; i++) s.dim[i] = dims[i];
    return s;
}

otc_shape otc_shape_scalar(void) {
    return (otc_shape){0};
}
otc_shape otc_shape_1d(int n) {
    return (otc_shape){1, {n}};
}
otc_shape otc_shape_2d(int rows, int cols) {
    return (otc_shape){2, {rows, cols}};
}

bool otc_shape_equal(otc_shape a, otc_shape b) {
    if (a.ndim != b.ndim) return false;
    for (int i = 0; i < a.ndim; i++)
        if (a.dim[i] != b.dim[i]) return false;
    return true;
}

bool otc_shape_is_batched(otc_shape s) {
    return s.ndim > 0 && s.dim[0] == OTC_BATCH;
}

size_t otc_shape_size(otc_shape s) {
    size_t n = 1;
    for (int i = 0; i < s.ndim; i++) n *= (i == 0 && s.dim[0] == OTC_BATCH) ? 1 : (size_t)s.dim[i];
    return n;
}

otc_shape otc_shape_resolve(otc_shape s, int batch) {
    if (otc_shape_is_batched(s)) s.dim[0] = batch;
    return s;
}

const char *otc_shape_str(otc_shape s, char *buf, size_t len) {
    size_t used = 0;
    used += (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < s.ndim && i < OTC_MAX_DIMS && used < len; i++) {
        if (s.dim[i] == OTC_BATCH)
            used += (size_t)snprintf(buf + used, len - used, "%sB", i ? "," : "");
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : "", s.dim[i]);
    }
    if (used < len) snprintf(buf + used, len - used, "]");
    return buf;
}

static bool shape_valid(otc_shape s) {
    if (s.ndim < 0 || s.ndim > OTC_MAX_DIMS) return false;
    for (int i = 0; i < s.ndim; i++)
        if (s.dim[i] <= 0) return false;
    return true;
}

otc_tensor *otc_tensor_new(otc_shape shape) {
    char buf[64];
    if (!shape_valid(shape)) {
        otc_fail(OTC_ERR_SHAPE, "invalid tensor shape %s", otc_shape_str(shape, buf, sizeof buf));
        return NULL;
    }
    size_t n = otc_shape_size(shape);
    otc_tensor *t = malloc(sizeof *t);
    float *data = calloc(n ? n : 1, sizeof(float));
    if (!t || !data) {
        free(t);
        free(data);
        otc_fail(OTC_ERR_NOMEM, "out of memory for a tensor of %zu floats", n);
        return NULL;
    }
    t->shape = shape;
    t->size = n;
    t->data = data;
    return t;
}

otc_tensor *otc_tensor_from(otc_shape shape, const float *values) {
    otc_tensor *t = otc_tensor_new(shape);
    if (t && values) memcpy(t->data, values, t->size * sizeof(float));
    return t;
}

otc_tensor *otc_tensor_copy(const otc_tensor *t) {
    return otc_tensor_from(t->shape, t->data);
}

void otc_tensor_free(otc_tensor *t) {
    if (!t) return;
    free(t->data);
    free(t);
}

void otc_tensor_fill(otc_tensor *t, float v) {
    for (size_t i = 0; i < t->size; i++) t->data[i] = v;
}

void otc_tensor_add_scalar(otc_tensor *t, float s) {
    for (size_t i = 0; i < t->size; i++) t->data[i] += s;
}

void otc_tensor_mul_scalar(otc_tensor *t, float s) {
    for (size_t i = 0; i < t->size; i++) t->data[i] *= s;
}

static otc_status same_shapes(const otc_tensor *a, const otc_tensor *b, const otc_tensor *out) {
    char sa[64], sb[64], so[64];
    if (!otc_shape_equal(a->shape, b->shape) || !otc_shape_equal(a->shape, out->shape))
        return otc_fail(OTC_ERR_SHAPE, "elementwise shapes differ: %s, %s -> %s",
                        otc_shape_str(a->shape, sa, 64), otc_shape_str(b->shape, sb, 64),
                        otc_shape_str(out->shape, so, 64));
    return OTC_OK;
}

#define ELEMENTWISE(fname, expr)                                                                   \
    otc_status fname(const otc_tensor *a, const otc_tensor *b, otc_tensor *out) {                  \
        otc_status st = same_shapes(a, b, out);                                                    \
        if (st) return st;                                                                         \
        for (size_t i = 0; i < a->size; i++) out->data[i] = expr;                                  \
        return OTC_OK;                                                                             \
    }
ELEMENTWISE(otc_tensor_add, a->data[i] + b->data[i])
ELEMENTWISE(otc_tensor_sub, a->data[i] - b->data[i])
ELEMENTWISE(otc_tensor_mul, a->data[i] * b->data[i])

void otc_tensor_uniform(otc_tensor *t, otc_rng *rng, float lo, float hi) {
    for (size_t i = 0; i < t->size; i++) t->data[i] = lo + (hi - lo) * otc_rng_uniform(rng);
}

void otc_tensor_normal(otc_tensor *t, otc_rng *rng, float mean, float std) {
    for (size_t i = 0; i < t->size; i++) t->data[i] = mean + std * otc_rng_normal(rng);
}

void otc_tensor_xavier(otc_tensor *t, otc_rng *rng, int fan_in, int fan_out) {
    float limit = sqrtf(6.0f / (float)(fan_in + fan_out));
    otc_tensor_uniform(t, rng, -limit, limit);
}

void otc_tensor_he(otc_tensor *t, otc_rng *rng, int fan_in) {
    otc_tensor_normal(t, rng, 0.0f, sqrtf(2.0f / (float)fan_in));
}
