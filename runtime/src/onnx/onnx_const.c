/* ONNX TensorProtos as import-time constants: every byte count checked against the dims
 * (raw, typed or external data), external files confined to the model's folder. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_internal.h"
#include "otc/limits.h"

ox_const *ox_const_new(int rank, const int64_t *dim, bool is_int) {
    size_t n = 1;
    for (int d = 0; d < rank; d++) n *= (size_t)dim[d];
    ox_const *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->rank = rank;
    if (rank) memcpy(c->dim, dim, (size_t)rank * sizeof *dim);
    c->n = n;
    if (is_int)
        c->i = calloc(n ? n : 1, sizeof *c->i);
    else
        c->f = calloc(n ? n : 1, sizeof *c->f);
    if (!c->i && !c->f) {
        free(c);
        return NULL;
    }
    return c;
}

void ox_const_free(ox_const *c) {
    if (!c) return;
    free(c->f);
    free(c->i);
    free(c);
}

double ox_const_get(const ox_const *c, size_t k) {
    return c->f ? (double)c->f[k] : (double)c->i[k];
}

int64_t ox_const_int(const ox_const *c, size_t k) {
    if (c->i) return c->i[k];
    float v = c->f[k];
    return v >= -9.2e18f && v <= 9.2e18f ? (int64_t)v : 0;
}

otc_status ox_count(const ox_ctx *x, int rank, const int64_t *dim, const char *what, size_t *n) {
    uint64_t total = 1;
    if (rank > OX_MAX_RANK)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "%s has rank %d (at most %d)", what, rank,
                       OX_MAX_RANK);
    for (int d = 0; d < rank; d++) {
        if (dim[d] < 0 || dim[d] > OTC_MAX_DIM)
            return ox_fail(x, OTC_ERR_FORMAT, "%s: dimension %d is %lld (0 .. %d allowed)", what, d,
                           (long long)dim[d], OTC_MAX_DIM);
        total *= (uint64_t)dim[d];
        if (total > OTC_MAX_ELEMS)
            return ox_fail(x, OTC_ERR_FORMAT, "%s has more than %llu elements (OTC_MAX_ELEMS)",
                           what, (unsigned long long)OTC_MAX_ELEMS);
    }
    *n = (size_t)total;
    return OTC_OK;
}

otc_status ox_count_made(const ox_ctx *x, int rank, const int64_t *dim, const char *what,
                         size_t *n) {
    otc_status st = ox_count(x, rank, dim, what, n);
    if (!st && *n > OX_MAX_MADE_ELEMS)
        st = ox_fail(x, OTC_ERR_UNSUPPORTED,
                     "%s would have %zu elements (at most %zu for a tensor made at import)", what,
                     *n, OX_MAX_MADE_ELEMS);
    return st;
}

/* Bytes per element of the types read, 0 for the others. */
static size_t elem_bytes(int type) {
    switch (type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
        return 1;
    default:
        return 0;
    }
}

/* Little-endian element k of raw bytes as a double (floats) or int64. */
static void from_raw(ox_const *c, int type, const uint8_t *p, size_t k) {
    uint64_t u = 0;
    size_t nb = elem_bytes(type);
    for (size_t b = 0; b < nb; b++) u |= (uint64_t)p[k * nb + b] << (8 * b);
    switch (type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        c->f[k] = f;
        break;
    }
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: {
        double d;
        memcpy(&d, &u, 8);
        c->f[k] = (float)d;
        break;
    }
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
        c->i[k] = (int32_t)(uint32_t)u;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
        c->i[k] = (int8_t)(uint8_t)u;
        break;
    default:
        c->i[k] = (int64_t)u;
        break; /* INT64, UINT8, BOOL */
    }
}

/* The external data of t: "location" a plain file name inside dir, "offset" and "length"
 * within the file. *buf gets exactly `want` bytes. */
static otc_status read_external(const ox_ctx *x, const Onnx__TensorProto *t, const char *what,
                                size_t want, uint8_t **buf) {
    const char *loc = NULL;
    long long off = 0, length = -1;
    for (size_t k = 0; k < t->n_external_data; k++) {
        const Onnx__StringStringEntryProto *e = t->external_data[k];
        if (!e->key || !e->value) continue;
        char *end = NULL;
        if (!strcmp(e->key, "location")) {
            loc = e->value;
        } else if (!strcmp(e->key, "offset") || !strcmp(e->key, "length")) {
            errno = 0;
            long long v = strtoll(e->value, &end, 10);
            if (errno || end == e->value || *end || v < 0)
                return ox_fail(x, OTC_ERR_FORMAT, "%s: external data %s '%.40s' is not a size",
                               what, e->key, e->value);
            if (e->key[0] == 'o')
                off = v;
            else
                length = v;
        }
    }
    if (!x->dir) return ox_fail(x, OTC_ERR_UNSUPPORTED, "%s: external data is not read here", what);
    if (!loc || !*loc || strchr(loc, '/') || strchr(loc, '\\') || !strcmp(loc, ".") ||
        !strcmp(loc, ".."))
        return ox_fail(x, OTC_ERR_FORMAT,
                       "%s: external data location '%.80s' is not a plain file name in the "
                       "model's folder",
                       what, loc ? loc : "");
    if (length >= 0 && (unsigned long long)length != want)
        return ox_fail(x, OTC_ERR_FORMAT, "%s: external data length %lld, the dims need %zu bytes",
                       what, length, want);
    size_t plen = strlen(x->dir) + strlen(loc) + 2;
    char *path = malloc(plen);
    if (!path) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    snprintf(path, plen, "%s/%s", x->dir, loc);
    /* O_NOFOLLOW: a symbolic link in the folder must not lead the read elsewhere. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (fd >= 0 && !f) close(fd);
    struct stat sb;
    otc_status st = OTC_OK;
    if (!f || fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode))
        st = ox_fail(x, OTC_ERR_IO, "%s: external data file '%.200s' cannot be read", what, loc);
    else if ((unsigned long long)off > (unsigned long long)sb.st_size ||
             want > (unsigned long long)sb.st_size - (unsigned long long)off)
        st = ox_fail(x, OTC_ERR_FORMAT,
                     "%s: external data offset %lld + %zu bytes is past the end of '%.200s' "
                     "(%lld bytes)",
                     what, off, want, loc, (long long)sb.st_size);
    else if (!(*buf = malloc(want ? want : 1)))
        st = ox_fail(x, OTC_ERR_NOMEM, "%s: out of memory", what);
    else if (fseeko(f, (off_t)off, SEEK_SET) != 0 || fread(*buf, 1, want, f) != want) {
        free(*buf);
        *buf = NULL;
        st = ox_fail(x, OTC_ERR_IO, "%s: external data file '%.200s' cannot be read", what, loc);
    }
    if (f) fclose(f);
    free(path);
    return st;
}

otc_status ox_const_from_tensor(const ox_ctx *x, const Onnx__TensorProto *t, ox_const **out) {
    char what[160];
    snprintf(what, sizeof what, "tensor '%.100s'", t->name ? t->name : "");
    *out = NULL;
    if (t->segment) return ox_fail(x, OTC_ERR_UNSUPPORTED, "%s: segmented tensors", what);
    int type = t->has_data_type ? t->data_type : 0;
    size_t nb = elem_bytes(type);
    if (!nb)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "%s: data type %d (float, double, int64, int32, int8, uint8, bool are "
                       "read)",
                       what, type);
    if (t->n_dims > OX_MAX_RANK)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "%s has rank %zu (at most %d)", what, t->n_dims,
                       OX_MAX_RANK);
    size_t n = 0;
    otc_status st = ox_count(x, (int)t->n_dims, t->dims, what, &n);
    if (st) return st;
    bool is_float = type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
                    type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
    ox_const *c = ox_const_new((int)t->n_dims, t->dims, !is_float);
    if (!c) return ox_fail(x, OTC_ERR_NOMEM, "%s: out of memory", what);
    uint8_t *ext = NULL;
    const uint8_t *raw = NULL;
    size_t have = 0;
    bool external =
        t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (external) {
        st = read_external(x, t, what, n * nb, &ext);
        raw = ext;
        have = n * nb;
    } else if (t->has_raw_data) {
        raw = t->raw_data.data;
        have = t->raw_data.len;
        if (have != n * nb)
            st = ox_fail(x, OTC_ERR_FORMAT, "%s: %zu bytes of raw data, its dims need %zu", what,
                         have, n * nb);
    }
    if (!st && raw) {
        for (size_t k = 0; k < n; k++) from_raw(c, type, raw, k);
    } else if (!st) {
        size_t got = 0;
        switch (type) {
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
            got = t->n_float_data;
            if (got == n && n) memcpy(c->f, t->float_data, n * sizeof *c->f);
            break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
            got = t->n_double_data;
            for (size_t k = 0; got == n && k < n; k++) c->f[k] = (float)t->double_data[k];
            break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
            got = t->n_int64_data;
            if (got == n && n) memcpy(c->i, t->int64_data, n * sizeof *c->i);
            break;
        default: /* int32, int8, uint8, bool live in int32_data */
            got = t->n_int32_data;
            for (size_t k = 0; got == n && k < n; k++) c->i[k] = t->int32_data[k];
            break;
        }
        if (got != n)
            st = ox_fail(x, OTC_ERR_FORMAT, "%s: %zu values, its dims need %zu", what, got, n);
    }
    free(ext);
    if (st) {
        ox_const_free(c);
        return st;
    }
    *out = c;
    return OTC_OK;
}
