/* Import-time arithmetic on constants: ONNX broadcasting, reshapes, transposes, slices,
 * concatenation and gathers of constants, so the shape computations exporters emit
 * (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) become plain constants. */
#include <stdlib.h>
#include <string.h>

#include "onnx_fold.h"

ox_const *ox_const_dup(const ox_const *c) {
    ox_const *r = ox_const_new(c->rank, c->dim, c->i != NULL);
    if (!r) return NULL;
    if (c->f) memcpy(r->f, c->f, c->n * sizeof *c->f);
    if (c->i) memcpy(r->i, c->i, c->n * sizeof *c->i);
    return r;
}

/* Row-major strides of dims. */
static void strides(int rank, const int64_t *dim, int64_t *st) {
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= dim[d];
    }
}

bool ox_broadcast_dims(int ra, const int64_t *a, int rb, const int64_t *b, int *rank,
                       int64_t *out) {
    int r = ra > rb ? ra : rb;
    for (int d = 0; d < r; d++) {
        int64_t da = d - (r - ra) >= 0 ? a[d - (r - ra)] : 1;
        int64_t db = d - (r - rb) >= 0 ? b[d - (r - rb)] : 1;
        if (da != db && da != 1 && db != 1) return false;
        out[d] = da == 1 ? db : da;
    }
    *rank = r;
    return true;
}

/* Index into a (rank ra, right-aligned against out) of the element at out index k. */
static size_t bcast_index(size_t k, int r, const int64_t *out, int ra, const int64_t *a) {
    int64_t so[OX_MAX_RANK], sa[OX_MAX_RANK];
    strides(r, out, so);
    strides(ra, a, sa);
    size_t idx = 0;
    for (int d = 0; d < r; d++) {
        int64_t i = (int64_t)(k / (size_t)so[d]) % out[d];
        int ad = d - (r - ra);
        if (ad >= 0 && a[ad] != 1) idx += (size_t)(i * sa[ad]);
    }
    return idx;
}

/* p op q (+ - * /) in p's and q's own type: integers truncate, floats round to f32. */
#define ARITH(op, p, q)                                                                            \
    ((op) == '+' ? (p) + (q) : (op) == '-' ? (p) - (q) : (op) == '*' ? (p) * (q) : (p) / (q))

otc_status ox_fold_binary(const ox_ctx *x, char op, const ox_const *a, const ox_const *b,
                          ox_const **out) {
    int r = 0;
    int64_t dim[OX_MAX_RANK];
    if (!ox_broadcast_dims(a->rank, a->dim, b->rank, b->dim, &r, dim))
        return ox_fail(x, OTC_ERR_FORMAT, "the constants' shapes do not broadcast");
    size_t n = 0;
    otc_status st = ox_count_made(x, r, dim, "the result", &n);
    if (st) return st;
    bool is_int = a->i && b->i;
    ox_const *c = ox_const_new(r, dim, is_int);
    if (!c) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < n; k++) {
        size_t ia = bcast_index(k, r, dim, a->rank, a->dim);
        size_t ib = bcast_index(k, r, dim, b->rank, b->dim);
        if (is_int) {
            int64_t p = a->i[ia], q = b->i[ib];
            if (p == OX_BATCH || q == OX_BATCH || (op == '/' && q == 0) || p > INT32_MAX ||
                p < INT32_MIN || q > INT32_MAX || q < INT32_MIN) {
                ox_const_free(c);
                return ox_fail(x, OTC_ERR_UNSUPPORTED,
                               "integer arithmetic on the batch size, by zero or on values "
                               "beyond 32 bits");
            }
            c->i[k] = ARITH(op, p, q);
        } else {
            float p = (float)ox_const_get(a, ia), q = (float)ox_const_get(b, ib);
            c->f[k] = ARITH(op, p, q);
        }
    }
    *out = c;
    return OTC_OK;
}

ox_const *ox_const_reshaped(const ox_const *c, int rank, const int64_t *dim) {
    ox_const *r = ox_const_dup(c);
    if (!r) return NULL;
    r->rank = rank;
    memset(r->dim, 0, sizeof r->dim);
    if (rank) memcpy(r->dim, dim, (size_t)rank * sizeof *dim);
    return r;
}

ox_const *ox_const_transpose(const ox_const *c, const int *perm) {
    int64_t dim[OX_MAX_RANK], si[OX_MAX_RANK], so[OX_MAX_RANK];
    for (int d = 0; d < c->rank; d++) dim[d] = c->dim[perm[d]];
    ox_const *r = ox_const_new(c->rank, dim, c->i != NULL);
    if (!r) return NULL;
    strides(c->rank, c->dim, si);
    strides(c->rank, dim, so);
    for (size_t k = 0; k < c->n; k++) {
        size_t src = 0;
        for (int d = 0; d < c->rank; d++)
            src += (size_t)(((int64_t)k / so[d]) % dim[d] * si[perm[d]]);
        if (c->f)
            r->f[k] = c->f[src];
        else
            r->i[k] = c->i[src];
    }
    return r;
}

ox_const *ox_const_slice(const ox_const *c, int axis, int64_t start, int64_t len) {
    int64_t dim[OX_MAX_RANK], st[OX_MAX_RANK];
    memcpy(dim, c->dim, sizeof dim);
    dim[axis] = len;
    ox_const *r = ox_const_new(c->rank, dim, c->i != NULL);
    if (!r) return NULL;
    strides(c->rank, c->dim, st);
    int64_t outer = 1, inner = st[axis];
    for (int d = 0; d < axis; d++) outer *= c->dim[d];
    size_t k = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < len; j++)
            for (int64_t i = 0; i < inner; i++, k++) {
                size_t src = (size_t)(o * c->dim[axis] * inner + (start + j) * inner + i);
                if (c->f)
                    r->f[k] = c->f[src];
                else
                    r->i[k] = c->i[src];
            }
    return r;
}

ox_const *ox_const_concat(ox_const *const *cs, int n, int axis) {
    int64_t dim[OX_MAX_RANK];
    memcpy(dim, cs[0]->dim, sizeof dim);
    bool is_int = true;
    dim[axis] = 0;
    for (int k = 0; k < n; k++) {
        dim[axis] += cs[k]->dim[axis];
        is_int = is_int && cs[k]->i;
    }
    ox_const *r = ox_const_new(cs[0]->rank, dim, is_int);
    if (!r) return NULL;
    int64_t outer = 1;
    for (int d = 0; d < axis; d++) outer *= dim[d];
    size_t w = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < n; k++) {
            size_t chunk = outer ? cs[k]->n / (size_t)outer : 0;
            for (size_t e = 0; e < chunk; e++, w++) {
                size_t src = (size_t)o * chunk + e;
                if (is_int)
                    r->i[w] = cs[k]->i[src];
                else
                    r->f[w] = (float)ox_const_get(cs[k], src);
            }
        }
    return r;
}
