/* The IDX reader (MNIST-style image and label files, gzip or plain, through zlib): headers
 * checked field by field, data read in chunks so memory follows what the file really holds,
 * and images and labels joined into one dataset of [1, rows, cols] images scaled to [0, 1]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#include "otc/data.h"
#include "otc/limits.h"

#define IDX_UBYTE           0x08
#define IDX_DEFAULT_CLASSES 10
#define IDX_CHUNK           (1u << 20) /* bytes read (and grown) at a time */

#define IDX_INBUF (1u << 16) /* compressed (or plain) bytes read from the file at a time */

/* One IDX file, gzip or plain (told by gzip's magic bytes). gzip goes through inflate rather
 * than gzread: gzread ignores whatever follows the last gzip member, and a file with data
 * after its stream is not the file it claims to be. */
typedef struct {
    const char *path;
    FILE *f;
    bool gz, ended, inflating; /* ended: every byte of the data delivered */
    z_stream z;                /* next_in/avail_in: unread file bytes, gzip or plain */
    long long base;            /* the file offset of in[0] */
    unsigned char in[IDX_INBUF];
} idx_file;

/* Tops up the buffer of unread file bytes; the count added (0 at the end of the file), or -1
 * with the error set. */
static long long fill(idx_file *in) {
    size_t keep = in->z.avail_in, used = (size_t)(in->z.next_in - in->in);
    if (keep) memmove(in->in, in->z.next_in, keep);
    in->base += (long long)used;
    size_t got = fread(in->in + keep, 1, IDX_INBUF - keep, in->f);
    if (got == 0 && ferror(in->f)) {
        otc_fail(OTC_ERR_IO, "%s: read error", in->path);
        return -1;
    }
    in->z.next_in = in->in;
    in->z.avail_in = (uInt)(keep + got);
    return (long long)got;
}

static otc_status stream_error(const idx_file *in, const char *why) {
    return otc_fail(OTC_ERR_FORMAT, "%s: gzip stream: %s", in->path, why);
}

/* A gzip member ended: another may follow (gzip concatenates them); anything else after it
 * is refused, naming where it starts. */
static int after_member(idx_file *in) {
    if (in->z.avail_in < 2 && fill(in) < 0) return -1;
    if (in->z.avail_in == 0) {
        in->ended = true;
        return 0;
    }
    if (in->z.avail_in >= 2 && in->z.next_in[0] == 0x1f && in->z.next_in[1] == 0x8b) {
        inflateReset(&in->z);
        return 0;
    }
    long long at = in->base + (long long)(in->z.next_in - in->in);
    otc_fail(OTC_ERR_FORMAT, "%s: data after the end of the gzip stream (from byte %lld)", in->path,
             at);
    return -1;
}

/* Reads up to n bytes; the count read (short only at the end of the data), or -1 with the
 * error set. */
static long long read_bytes(idx_file *in, unsigned char *buf, size_t n) {
    size_t got = 0;
    while (got < n && !in->ended) {
        if (!in->gz) {
            if (in->z.avail_in == 0) {
                long long f = fill(in);
                if (f < 0) return -1;
                if (f == 0) {
                    in->ended = true;
                    break;
                }
            }
            size_t k = n - got < in->z.avail_in ? n - got : in->z.avail_in;
            memcpy(buf + got, in->z.next_in, k);
            in->z.next_in += k;
            in->z.avail_in -= (uInt)k;
            got += k;
            continue;
        }
        if (in->z.avail_in == 0) {
            long long f = fill(in);
            if (f < 0) return -1;
            if (f == 0) {
                stream_error(in, "unexpected end of file");
                return -1;
            }
        }
        size_t want = n - got > IDX_CHUNK ? IDX_CHUNK : n - got;
        in->z.next_out = buf + got;
        in->z.avail_out = (uInt)want;
        int r = inflate(&in->z, Z_NO_FLUSH);
        got += want - in->z.avail_out;
        if (r == Z_STREAM_END) {
            if (after_member(in) < 0) return -1;
        } else if (r == Z_MEM_ERROR) {
            otc_fail(OTC_ERR_NOMEM, "%s: out of memory inflating the gzip stream", in->path);
            return -1;
        } else if (r != Z_OK && r != Z_BUF_ERROR) {
            stream_error(in, in->z.msg ? in->z.msg : "invalid data");
            return -1;
        }
    }
    return (long long)got;
}

static otc_status open_idx(idx_file *in, const char *path) {
    in->path = path;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return otc_fail(OTC_ERR_IO, "%s: cannot open: no such regular file", path);
    in->f = fopen(path, "rb");
    if (!in->f) return otc_fail(OTC_ERR_IO, "%s: cannot open", path);
    in->z.next_in = in->in;
    if (fill(in) < 0) return OTC_ERR_IO;
    in->gz = in->z.avail_in >= 2 && in->in[0] == 0x1f && in->in[1] == 0x8b;
    if (in->gz) {
        if (inflateInit2(&in->z, 16 + MAX_WBITS) != Z_OK)
            return otc_fail(OTC_ERR_NOMEM, "%s: cannot start inflating", path);
        in->inflating = true;
    }
    return OTC_OK;
}

/* Closes an idx_file (any state open_idx left it in). */
static void close_idx(idx_file *in) {
    if (in->inflating) inflateEnd(&in->z);
    if (in->f) fclose(in->f);
}

/* The magic (unsigned bytes, `ndims` dimensions) and the dimensions, each 1..OTC_MAX_DIM. */
static otc_status read_header(idx_file *in, int ndims, int *dims) {
    unsigned char h[16];
    size_t len = 4 + 4 * (size_t)ndims;
    long long got = read_bytes(in, h, len);
    if (got < 0) return OTC_ERR_FORMAT;
    if (got < 4)
        return otc_fail(OTC_ERR_FORMAT, "%s: magic: the file holds only %lld bytes", in->path, got);
    unsigned magic = (unsigned)h[0] << 24 | (unsigned)h[1] << 16 | (unsigned)h[2] << 8 | h[3];
    unsigned want = IDX_UBYTE << 8 | (unsigned)ndims;
    if (magic != want)
        return otc_fail(OTC_ERR_FORMAT,
                        "%s: magic: 0x%08x, expected 0x%08x (IDX, unsigned bytes, %d "
                        "dimension%s)",
                        in->path, magic, want, ndims, ndims == 1 ? "" : "s");
    if (got < (long long)len)
        return otc_fail(OTC_ERR_FORMAT, "%s: header: truncated (%lld of %zu bytes)", in->path, got,
                        len);
    static const char *names[] = {"item count", "rows", "columns"};
    for (int i = 0; i < ndims; i++) {
        const unsigned char *p = h + 4 + 4 * i;
        unsigned long v =
            (unsigned long)p[0] << 24 | (unsigned long)p[1] << 16 | (unsigned long)p[2] << 8 | p[3];
        if (v < 1 || v > OTC_MAX_DIM)
            return otc_fail(OTC_ERR_FORMAT, "%s: dimension %d (%s): %lu is outside 1..%d", in->path,
                            i, names[i], v, OTC_MAX_DIM);
        dims[i] = (int)v;
    }
    return OTC_OK;
}

/* Exactly n bytes of data into a malloc'd *out (grown as they arrive); then, when the whole
 * file was meant (`whole`), nothing after them. */
static otc_status read_data(idx_file *in, size_t n, bool whole, const char *what,
                            unsigned char **out) {
    unsigned char *buf = NULL;
    size_t have = 0;
    while (have < n) {
        size_t step = n - have > IDX_CHUNK ? IDX_CHUNK : n - have;
        unsigned char *nb = realloc(buf, have + step);
        if (!nb) {
            free(buf);
            return otc_fail(OTC_ERR_NOMEM, "%s: out of memory for %zu bytes of %s", in->path, n,
                            what);
        }
        buf = nb;
        long long got = read_bytes(in, buf + have, step);
        if (got < 0) {
            free(buf);
            return OTC_ERR_FORMAT;
        }
        have += (size_t)got;
        if ((size_t)got < step) {
            free(buf);
            return otc_fail(OTC_ERR_FORMAT,
                            "%s: %s: the header's dimensions need %zu bytes, the file holds "
                            "only %zu",
                            in->path, what, n, have);
        }
    }
    if (whole) {
        unsigned char extra;
        long long got = read_bytes(in, &extra, 1);
        if (got != 0) {
            free(buf);
            if (got < 0) return OTC_ERR_FORMAT;
            return otc_fail(OTC_ERR_FORMAT,
                            "%s: %s: the file holds more than the %zu bytes its dimensions "
                            "give",
                            in->path, what, n);
        }
    }
    *out = buf ? buf : malloc(1);
    if (!*out) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    return OTC_OK;
}

otc_status otc_idx_load(const char *images_path, const char *labels_path,
                        const otc_idx_options *opt, otc_dataset **out, otc_idx_info *info) {
    if (!images_path || !labels_path || !out)
        return otc_fail(OTC_ERR_ARG, "idx_load: NULL argument");
    *out = NULL;
    otc_idx_options o = opt ? *opt : (otc_idx_options){0};
    if (o.max_items < 0 || o.classes < 0)
        return otc_fail(OTC_ERR_ARG, "idx_load: max_items %d / classes %d is negative", o.max_items,
                        o.classes);
    int classes = o.classes ? o.classes : IDX_DEFAULT_CLASSES;
    idx_file *im = calloc(1, sizeof *im), *lb = calloc(1, sizeof *lb); /* 64 KiB buffers */
    unsigned char *pixels = NULL, *labels = NULL;
    otc_dataset *d = NULL;
    int idim[3] = {0}, ldim[1] = {0};
    otc_status st = im && lb ? OTC_OK : otc_fail(OTC_ERR_NOMEM, "out of memory");
    if (st || (st = open_idx(im, images_path)) || (st = open_idx(lb, labels_path)) ||
        (st = read_header(im, 3, idim)) || (st = read_header(lb, 1, ldim)))
        goto done;
    if (idim[0] != ldim[0]) {
        st = otc_fail(OTC_ERR_FORMAT, "%s: item count: %d labels, but %s holds %d images",
                      labels_path, ldim[0], images_path, idim[0]);
        goto done;
    }
    size_t plane = (size_t)idim[1] * (size_t)idim[2];
    if (plane > OTC_MAX_ELEMS || (uint64_t)idim[0] * plane > OTC_MAX_ELEMS) {
        st = otc_fail(OTC_ERR_FORMAT,
                      "%s: dimensions: %d images of %dx%d exceed the %llu-element limit",
                      images_path, idim[0], idim[1], idim[2], (unsigned long long)OTC_MAX_ELEMS);
        goto done;
    }
    int n = o.max_items && o.max_items < idim[0] ? o.max_items : idim[0];
    bool whole = n == idim[0];
    if ((st = read_data(im, (size_t)n * plane, whole, "pixels", &pixels)) ||
        (st = read_data(lb, (size_t)n, whole, "labels", &labels)))
        goto done;
    for (int i = 0; i < n; i++)
        if (labels[i] >= classes) {
            st = otc_fail(OTC_ERR_FORMAT, "%s: label of item %d: %d is not below %d classes",
                          labels_path, i, labels[i], classes);
            goto done;
        }
    d = otc_dataset_new(n, (int)plane, 1);
    if (!d) {
        st = OTC_ERR_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < (size_t)n * plane; i++) d->x[i] = (float)pixels[i] * (1.0f / 255.0f);
    for (int i = 0; i < n; i++) d->y[i] = (float)labels[i];
    if (info) *info = (otc_idx_info){n, idim[1], idim[2]};
    *out = d;
    d = NULL;
done:
    otc_dataset_free(d);
    free(pixels);
    free(labels);
    if (im) close_idx(im);
    if (lb) close_idx(lb);
    free(im);
    free(lb);
    return st;
}

/* DIR/<split>-<kind>-idx<k>-ubyte.gz, or without .gz when only that exists. */
static otc_status idx_path(const char *dir, const char *split, const char *kind, int k, char *buf,
                           size_t len) {
    int n = snprintf(buf, len, "%s/%s-%s-idx%d-ubyte.gz", dir, split, kind, k);
    if (n < 0 || (size_t)n >= len) return otc_fail(OTC_ERR_ARG, "%s: path too long", dir);
    struct stat st;
    if (stat(buf, &st) != 0) {
        char plain[4096];
        snprintf(plain, sizeof plain, "%s/%s-%s-idx%d-ubyte", dir, split, kind, k);
        if (stat(plain, &st) == 0) snprintf(buf, len, "%s", plain);
    }
    return OTC_OK;
}

/* DIR's images and labels files for split, or an error naming what is missing. */
static otc_status dir_paths(const char *dir, const char *split, char *images, char *labels,
                            size_t len) {
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return otc_fail(OTC_ERR_IO,
                        "%s: not a directory (IDX data: a directory holding %s-images-"
                        "idx3-ubyte.gz and %s-labels-idx1-ubyte.gz)",
                        dir, split, split);
    otc_status s = idx_path(dir, split, "images", 3, images, len);
    return s ? s : idx_path(dir, split, "labels", 1, labels, len);
}

otc_status otc_idx_load_dir(const char *dir, const char *split, const otc_idx_options *opt,
                            otc_dataset **out, otc_idx_info *info) {
    if (!dir || !split || !out) return otc_fail(OTC_ERR_ARG, "idx_load_dir: NULL argument");
    char images[4096], labels[4096];
    otc_status s = dir_paths(dir, split, images, labels, sizeof images);
    return s ? s : otc_idx_load(images, labels, opt, out, info);
}

otc_status otc_idx_peek_dir(const char *dir, const char *split, otc_idx_info *info) {
    if (!dir || !split || !info) return otc_fail(OTC_ERR_ARG, "idx_peek_dir: NULL argument");
    char images[4096], labels[4096];
    otc_status s = dir_paths(dir, split, images, labels, sizeof images);
    if (s) return s;
    idx_file *im = calloc(1, sizeof *im);
    if (!im) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    int dim[3] = {0};
    if (!(s = open_idx(im, images)) && !(s = read_header(im, 3, dim)))
        *info = (otc_idx_info){dim[0], dim[1], dim[2]};
    close_idx(im);
    free(im);
    return s;
}
