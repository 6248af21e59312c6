/* Interpreter kernels of Conv2d (NCHW, groups, stride, padding, dilation): im2col of a block
 * of samples (side by side, so one OpenBLAS sgemm per block and group has all their pixels
 * as its columns) into a per-thread scratch; the gradients are the two transposed products,
 * the input's scattered back by col2im. A sample too large for the scratch goes a block of
 * output rows at a time. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

/* The scratch (im2col block and the block's outputs) is at most this many floats (16 MiB): a
 * large image is done a block of output rows at a time, so memory stays bounded whatever the
 * model says. */
#define CONV_SCRATCH_MAX ((size_t)1 << 22)
/* Samples per block: as many as keep the block (im2col and outputs) within this many floats
 * (512 KiB), so it is still in L2 when its sgemm reads it. User time of 94 LeNet training
 * steps at batch 64, one thread (the Fashion-MNIST example on 6,000 images): 1.20 s with
 * blocks of up to 2^22 floats, 1.00 s at 2^18, 0.97 s at 2^17. */
#define CONV_BLOCK_TARGET ((size_t)1 << 17)

/* ---- per-thread scratch: grown, never shrunk, freed when the thread ends ---- */

typedef struct {
    float *p;
    size_t cap;
} scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;

static void scratch_free(void *v) {
    scratch *s = v;
    free(s->p);
    free(s);
}

static void scratch_make_key(void) {
    scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

static float *scratch_get(size_t n) {
    pthread_once(&scratch_once, scratch_make_key);
    if (!scratch_key_ok) return NULL;
    scratch *s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s) return NULL;
        if (pthread_setspecific(scratch_key, s)) {
            free(s);
            return NULL;
        }
    }
    if (s->cap < n) {
        free(s->p);
        s->p = malloc(n * sizeof *s->p);
        s->cap = s->p ? n : 0;
    }
    return s->p;
}

/* ---- geometry ---- */

typedef struct {
    int B, C, H, W;     /* input */
    int O, OH, OW;      /* output */
    int KH, KW, groups; /* kernel */
    int Cg, Og;         /* channels per group */
    int sh, sw, ph, pw, dh, dw;
    int ckk;        /* rows of a group's im2col block: Cg*KH*KW */
    int ohw;        /* output pixels per channel */
    int nb;         /* samples per block (all their rows) */
    int block_rows; /* output rows per block when nb is 1 (a sample too large for one) */
} geom;

static geom geom_of(const otc_kernel_args *a) {
    const otc_window *w = &a->node->win;
    geom g;
    g.B = a->in_shape[0].dim[0];
    g.C = a->in_shape[0].dim[1];
    g.H = a->in_shape[0].dim[2];
    g.W = a->in_shape[0].dim[3];
    g.O = a->out_shape.dim[1];
    g.OH = a->out_shape.dim[2];
    g.OW = a->out_shape.dim[3];
    g.KH = w->kernel_h;
    g.KW = w->kernel_w;
    g.groups = w->groups;
    g.Cg = g.C / g.groups;
    g.Og = g.O / g.groups;
    g.sh = w->stride_h;
    g.sw = w->stride_w;
    g.ph = w->pad_h;
    g.pw = w->pad_w;
    g.dh = w->dilation_h;
    g.dw = w->dilation_w;
    g.ckk = g.Cg * g.KH * g.KW;
    g.ohw = g.OH * g.OW;
    /* a sample's im2col block and its outputs (staged for several samples) */
    size_t per_sample = ((size_t)g.ckk + (size_t)g.Og) * (size_t)g.ohw;
    size_t nb = per_sample ? CONV_BLOCK_TARGET / per_sample : 1;
    g.nb = nb < 1 ? 1 : nb > (size_t)g.B ? (g.B > 0 ? g.B : 1) : (int)nb;
    size_t per_row = (size_t)g.ckk * (size_t)g.OW;
    size_t rows = per_row ? CONV_SCRATCH_MAX / per_row : 1;
    g.block_rows = nb >= 1 ? g.OH : rows < 1 ? 1 : rows > (size_t)g.OH ? g.OH : (int)rows;
    return g;
}

/* Floats of scratch: the im2col block, then (several samples) their staged outputs. */
static size_t scratch_floats(const geom *g) {
    size_t col = (size_t)g->ckk * (size_t)g->nb * (size_t)g->block_rows * (size_t)g->OW;
    return col + (g->nb > 1 ? (size_t)g->Og * (size_t)g->nb * (size_t)g->ohw : 0);
}

/* The output columns ow whose input column ow*sw + start lies in [0, W): [*lo, *hi). */
static void valid_cols(int OW, int W, int sw, int start, int *lo, int *hi) {
    /* iw = ow*sw + start >= 0  <=>  ow >= ceil(-start / sw) */
    int l = start >= 0 ? 0 : (-start + sw - 1) / sw;
    /* iw < W  <=>  ow < ceil((W - start) / sw) */
    int h = W - start <= 0 ? 0 : (W - start + sw - 1) / sw;
    *lo = l < OW ? l : OW;
    *hi = h < OW ? h : OW;
    if (*hi < *lo) *hi = *lo;
}

/* Short copies and fills (a row of 10 or 28 floats) inline: constant-size memcpy compiles to
 * vector moves, where a library call per row cost as much as the row (a quarter of a LeNet
 * training step went to memcpy and memset calls from here). */
static inline void copy_floats(float *d, const float *s, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) memcpy(d + i, s + i, 8 * sizeof *d);
    if (i + 4 <= n) {
        memcpy(d + i, s + i, 4 * sizeof *d);
        i += 4;
    }
    switch (n - i) {
    case 3:
        d[i + 2] = s[i + 2];
        /* fall through */
    case 2:
        d[i + 1] = s[i + 1];
        /* fall through */
    case 1:
        d[i] = s[i];
        break;
    default:
        break;
    }
}

static inline void zero_floats(float *d, int n) {
    static const float zeros[8];
    int i = 0;
    for (; i + 8 <= n; i += 8) memcpy(d + i, zeros, 8 * sizeof *d);
    for (; i < n; i++) d[i] = 0;
}

/* col[r * ld + (oh - oh0)*OW + ow] for rows r = (c, kh, kw) of one sample's group channels
 * x[0..Cg), output rows [oh0, oh1): the input element under that kernel tap, 0 in the
 * padding. ld is the block's row length (several samples sit side by side). */
static void im2col(const geom *g, const float *x, int oh0, int oh1, float *col, size_t ld) {
    for (int c = 0; c < g->Cg; c++)
        for (int kh = 0; kh < g->KH; kh++)
            for (int kw = 0; kw < g->KW; kw++) {
                float *row = col + (size_t)((c * g->KH + kh) * g->KW + kw) * ld;
                int start = kw * g->dw - g->pw, lo, hi;
                valid_cols(g->OW, g->W, g->sw, start, &lo, &hi);
                for (int oh = oh0; oh < oh1; oh++) {
                    float *r = row + (size_t)(oh - oh0) * g->OW;
                    int ih = oh * g->sh - g->ph + kh * g->dh;
                    if (ih < 0 || ih >= g->H) {
                        zero_floats(r, g->OW);
                        continue;
                    }
                    const float *xr = x + ((size_t)c * g->H + ih) * g->W + start;
                    zero_floats(r, lo);
                    if (g->sw == 1)
                        copy_floats(r + lo, xr + lo, hi - lo);
                    else
                        for (int ow = lo; ow < hi; ow++) r[ow] = xr[(size_t)ow * g->sw];
                    zero_floats(r + hi, g->OW - hi);
                }
            }
}

/* The adjoint of im2col: gx += each column entry at the input element it was taken from. */
static void col2im(const geom *g, const float *col, int oh0, int oh1, float *gx, size_t ld) {
    for (int c = 0; c < g->Cg; c++)
        for (int kh = 0; kh < g->KH; kh++)
            for (int kw = 0; kw < g->KW; kw++) {
                const float *row = col + (size_t)((c * g->KH + kh) * g->KW + kw) * ld;
                int start = kw * g->dw - g->pw, lo, hi;
                valid_cols(g->OW, g->W, g->sw, start, &lo, &hi);
                for (int oh = oh0; oh < oh1; oh++) {
                    int ih = oh * g->sh - g->ph + kh * g->dh;
                    if (ih < 0 || ih >= g->H) continue;
                    const float *r = row + (size_t)(oh - oh0) * g->OW;
                    float *xr = gx + ((size_t)c * g->H + ih) * g->W + start;
                    if (g->sw == 1)
                        for (int ow = lo; ow < hi; ow++) xr[ow] += r[ow];
                    else
                        for (int ow = lo; ow < hi; ow++) xr[(size_t)ow * g->sw] += r[ow];
                }
            }
}

/* One block: samples [b0, b0 + nb) whole, or (nb 1) output rows [oh0, oh1) of sample b0. */
typedef struct {
    int b0, nb, oh0, oh1;
    int n; /* columns of the block (its row length): nb * (oh1 - oh0) * OW */
} block;

/* blk runs over the blocks of the batch, in order. */
#define FOR_BLOCKS(g, blk) for (block blk = {0, 0, 0, 0, 0}; next_block(g, &blk);)

static bool next_block(const geom *g, block *b) {
    if (b->nb == 0) { /* first */
        b->b0 = 0;
        b->oh0 = 0;
    } else if (g->nb > 1 || b->oh1 >= g->OH) { /* next samples */
        b->b0 += b->nb;
        b->oh0 = 0;
    } else { /* next rows of the same sample */
        b->oh0 = b->oh1;
    }
    if (b->b0 >= g->B) return false;
    b->nb = g->B - b->b0 < g->nb ? g->B - b->b0 : g->nb;
    b->oh1 = b->oh0 + g->block_rows < g->OH ? b->oh0 + g->block_rows : g->OH;
    b->n = b->nb * (b->oh1 - b->oh0) * g->OW;
    return true;
}

static const float *group_x(const geom *g, const float *x, int b, int gi) {
    return x + ((size_t)b * g->C + (size_t)gi * g->Cg) * (size_t)g->H * g->W;
}

/* The im2col of group gi over the block's samples, side by side. */
static void block_im2col(const geom *g, const block *b, const float *x, int gi, float *col) {
    for (int j = 0; j < b->nb; j++)
        im2col(g, group_x(g, x, b->b0 + j, gi), b->oh0, b->oh1,
               col + (size_t)j * (size_t)(b->oh1 - b->oh0) * g->OW, (size_t)b->n);
}

otc_status otc_fwd_conv2d(const otc_kernel_args *a) {
    geom g = geom_of(a);
    const float *x = a->in[0], *w = a->in[1], *bias = a->n_in > 2 ? a->in[2] : NULL;
    float *col = scratch_get(scratch_floats(&g));
    if (!col) {
        const char *name = a->node->name;
        return otc_fail(OTC_ERR_NOMEM, "conv2d%s%s%s: out of memory for its %zu-float im2col block",
                        name ? " '" : "", name ? name : "", name ? "'" : "", scratch_floats(&g));
    }
    float *stage = col + (size_t)g.ckk * g.nb * (size_t)g.block_rows * g.OW;
    FOR_BLOCKS(&g, b) {
        for (int gi = 0; gi < g.groups; gi++) {
            block_im2col(&g, &b, x, gi, col);
            const float *wg = w + (size_t)gi * g.Og * g.ckk;
            float *y0 =
                a->out + ((size_t)b.b0 * g.O + (size_t)gi * g.Og) * g.ohw + (size_t)b.oh0 * g.OW;
            if (b.nb == 1) {
                /* y[Og, n] = w[Og, ckk] col[ckk, n], straight into y (rows ohw apart) */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g.Og, b.n, g.ckk, 1.0f, wg,
                            g.ckk, col, b.n, 0.0f, y0, g.ohw);
                continue;
            }
            /* stage[Og, nb*ohw], then each sample's channels to their place in y */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g.Og, b.n, g.ckk, 1.0f, wg,
                        g.ckk, col, b.n, 0.0f, stage, b.n);
            for (int j = 0; j < b.nb; j++)
                for (int o = 0; o < g.Og; o++)
                    memcpy(y0 + ((size_t)j * g.O + o) * g.ohw,
                           stage + (size_t)o * (size_t)b.n + (size_t)j * g.ohw,
                           (size_t)g.ohw * sizeof *stage);
        }
    }
    if (bias)
        for (int b = 0; b < g.B; b++)
            for (int o = 0; o < g.O; o++) {
                float *y = a->out + ((size_t)b * g.O + o) * g.ohw, v = bias[o];
                for (int i = 0; i < g.ohw; i++) y[i] += v;
            }
    return OTC_OK;
}

void otc_bwd_conv2d(const otc_kernel_args *a) {
    geom g = geom_of(a);
    const float *x = a->in[0], *w = a->in[1], *gy = a->out_grad;
    float *gx = a->in_grad[0], *gw = a->in_grad[1], *gb = a->n_in > 2 ? a->in_grad[2] : NULL;
    if (gb)
        for (int b = 0; b < g.B; b++)
            for (int o = 0; o < g.O; o++) {
                const float *r = gy + ((size_t)b * g.O + o) * g.ohw;
                float s = 0;
                for (int i = 0; i < g.ohw; i++) s += r[i];
                gb[o] += s;
            }
    if (!gx && !gw) return;
    /* The forward grew this thread's scratch to the same size, so this cannot fail unless the
     * backward runs on another thread; then the gradients are poisoned rather than wrong. */
    float *col = scratch_get(scratch_floats(&g));
    if (!col) {
        if (gx)
            for (size_t i = 0; i < (size_t)g.B * g.C * g.H * g.W; i++) gx[i] = NAN;
        if (gw)
            for (size_t i = 0; i < (size_t)g.O * g.ckk; i++) gw[i] = NAN;
        return;
    }
    float *stage = col + (size_t)g.ckk * g.nb * (size_t)g.block_rows * g.OW;
    FOR_BLOCKS(&g, b) {
        for (int gi = 0; gi < g.groups; gi++) {
            const float *wg = w + (size_t)gi * g.Og * g.ckk;
            const float *g0 =
                gy + ((size_t)b.b0 * g.O + (size_t)gi * g.Og) * g.ohw + (size_t)b.oh0 * g.OW;
            /* the block's output gradient as [Og, n]: in place for one sample, else gathered */
            const float *gyb = g0;
            int ldg = g.ohw;
            if (b.nb > 1) {
                for (int j = 0; j < b.nb; j++)
                    for (int o = 0; o < g.Og; o++)
                        memcpy(stage + (size_t)o * (size_t)b.n + (size_t)j * g.ohw,
                               g0 + ((size_t)j * g.O + o) * g.ohw, (size_t)g.ohw * sizeof *stage);
                gyb = stage;
                ldg = b.n;
            }
            if (gw) {
                /* gw[Og, ckk] += gy[Og, n] col[ckk, n]^T */
                block_im2col(&g, &b, x, gi, col);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g.Og, g.ckk, b.n, 1.0f, gyb,
                            ldg, col, b.n, 1.0f, gw + (size_t)gi * g.Og * g.ckk, g.ckk);
            }
            if (gx) {
                /* col[ckk, n] = w[Og, ckk]^T gy[Og, n], scattered back into gx */
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, g.ckk, b.n, g.Og, 1.0f, wg,
                            g.ckk, gyb, ldg, 0.0f, col, b.n);
                for (int j = 0; j < b.nb; j++)
                    col2im(&g, col + (size_t)j * (size_t)(b.oh1 - b.oh0) * g.OW, b.oh0, b.oh1,
                           gx + ((size_t)(b.b0 + j) * g.C + (size_t)gi * g.Cg) * g.H * g.W,
                           (size_t)b.n);
            }
        }
    }
}
