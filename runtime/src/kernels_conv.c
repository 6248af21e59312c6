/* Interpreter kernels of Conv2d (NCHW, groups, stride, padding, dilation): im2col of a block
 * of output rows into a per-thread scratch, then one OpenBLAS sgemm per sample and group;
 * the gradients are the two transposed products, the input's scattered back by col2im. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

/* The im2col block is at most this many floats (16 MiB): a large image is done a block of
 * output rows at a time, so memory stays bounded whatever the model says. */
#define CONV_SCRATCH_MAX ((size_t)1 << 22)

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
    int block_rows; /* output rows per im2col block */
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
    size_t per_row = (size_t)g.ckk * (size_t)g.OW;
    size_t rows = per_row ? CONV_SCRATCH_MAX / per_row : 1;
    g.block_rows = rows < 1 ? 1 : rows > (size_t)g.OH ? g.OH : (int)rows;
    return g;
}

static size_t block_floats(const geom *g) {
    return (size_t)g->ckk * (size_t)g->block_rows * (size_t)g->OW;
}

/* The output columns ow whose input column ow*sw - pw + off lies in [0, W): [*lo, *hi). */
static void valid_cols(int OW, int W, int sw, int start, int *lo, int *hi) {
    /* iw = ow*sw + start >= 0  <=>  ow >= ceil(-start / sw) */
    int l = start >= 0 ? 0 : (-start + sw - 1) / sw;
    /* iw < W  <=>  ow < ceil((W - start) / sw) */
    int h = W - start <= 0 ? 0 : (W - start + sw - 1) / sw;
    *lo = l < OW ? l : OW;
    *hi = h < OW ? h : OW;
    if (*hi < *lo) *hi = *lo;
}

/* col[r][(oh - oh0)*OW + ow] for rows r = (c, kh, kw) of group channels x[0..Cg), output rows
 * [oh0, oh1): the input element under that kernel tap, 0 in the padding. */
static void im2col(const geom *g, const float *x, int oh0, int oh1, float *col) {
    int n = (oh1 - oh0) * g->OW;
    for (int c = 0; c < g->Cg; c++)
        for (int kh = 0; kh < g->KH; kh++)
            for (int kw = 0; kw < g->KW; kw++) {
                float *row = col + (size_t)((c * g->KH + kh) * g->KW + kw) * n;
                int start = kw * g->dw - g->pw, lo, hi;
                valid_cols(g->OW, g->W, g->sw, start, &lo, &hi);
                for (int oh = oh0; oh < oh1; oh++) {
                    float *r = row + (size_t)(oh - oh0) * g->OW;
                    int ih = oh * g->sh - g->ph + kh * g->dh;
                    if (ih < 0 || ih >= g->H) {
                        memset(r, 0, (size_t)g->OW * sizeof *r);
                        continue;
                    }
                    const float *xr = x + ((size_t)c * g->H + ih) * g->W + start;
                    for (int ow = 0; ow < lo; ow++) r[ow] = 0;
                    if (g->sw == 1)
                        memcpy(r + lo, xr + lo, (size_t)(hi - lo) * sizeof *r);
                    else
                        for (int ow = lo; ow < hi; ow++) r[ow] = xr[(size_t)ow * g->sw];
                    for (int ow = hi; ow < g->OW; ow++) r[ow] = 0;
                }
            }
}

/* The adjoint of im2col: gx += each column entry at the input element it was taken from. */
static void col2im(const geom *g, const float *col, int oh0, int oh1, float *gx) {
    int n = (oh1 - oh0) * g->OW;
    for (int c = 0; c < g->Cg; c++)
        for (int kh = 0; kh < g->KH; kh++)
            for (int kw = 0; kw < g->KW; kw++) {
                const float *row = col + (size_t)((c * g->KH + kh) * g->KW + kw) * n;
                int start = kw * g->dw - g->pw, lo, hi;
                valid_cols(g->OW, g->W, g->sw, start, &lo, &hi);
                for (int oh = oh0; oh < oh1; oh++) {
                    int ih = oh * g->sh - g->ph + kh * g->dh;
                    if (ih < 0 || ih >= g->H) continue;
                    const float *r = row + (size_t)(oh - oh0) * g->OW;
                    float *xr = gx + ((size_t)c * g->H + ih) * g->W + start;
                    for (int ow = lo; ow < hi; ow++) xr[(size_t)ow * g->sw] += r[ow];
                }
            }
}

otc_status otc_fwd_conv2d(const otc_kernel_args *a) {
    geom g = geom_of(a);
    const float *x = a->in[0], *w = a->in[1], *bias = a->n_in > 2 ? a->in[2] : NULL;
    size_t ohw = (size_t)g.OH * g.OW, x_sample = (size_t)g.C * g.H * g.W;
    float *col = scratch_get(block_floats(&g));
    if (!col) {
        char lab[64];
        const char *name = a->node->name;
        if (name) snprintf(lab, sizeof lab, "'%s'", name);
        return otc_fail(OTC_ERR_NOMEM, "conv2d %s: out of memory for its %zu-float im2col block",
                        name ? lab : "", block_floats(&g));
    }
    for (int b = 0; b < g.B; b++)
        for (int gi = 0; gi < g.groups; gi++) {
            const float *xg = x + (size_t)b * x_sample + (size_t)gi * g.Cg * g.H * g.W;
            const float *wg = w + (size_t)gi * g.Og * g.ckk;
            float *yg = a->out + ((size_t)b * g.O + (size_t)gi * g.Og) * ohw;
            for (int oh0 = 0; oh0 < g.OH; oh0 += g.block_rows) {
                int oh1 = oh0 + g.block_rows < g.OH ? oh0 + g.block_rows : g.OH;
                int n = (oh1 - oh0) * g.OW;
                im2col(&g, xg, oh0, oh1, col);
                /* y[Og, n] = w[Og, ckk] col[ckk, n], into the block's columns of y (ldc ohw) */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g.Og, n, g.ckk, 1.0f, wg,
                            g.ckk, col, n, 0.0f, yg + (size_t)oh0 * g.OW, (int)ohw);
            }
        }
    if (bias)
        for (int b = 0; b < g.B; b++)
            for (int o = 0; o < g.O; o++) {
                float *y = a->out + ((size_t)b * g.O + o) * ohw, v = bias[o];
                for (size_t i = 0; i < ohw; i++) y[i] += v;
            }
    return OTC_OK;
}

void otc_bwd_conv2d(const otc_kernel_args *a) {
    geom g = geom_of(a);
    const float *x = a->in[0], *w = a->in[1], *gy = a->out_grad;
    float *gx = a->in_grad[0], *gw = a->in_grad[1], *gb = a->n_in > 2 ? a->in_grad[2] : NULL;
    size_t ohw = (size_t)g.OH * g.OW, x_sample = (size_t)g.C * g.H * g.W;
    if (gb)
        for (int b = 0; b < g.B; b++)
            for (int o = 0; o < g.O; o++) {
                const float *r = gy + ((size_t)b * g.O + o) * ohw;
                float s = 0;
                for (size_t i = 0; i < ohw; i++) s += r[i];
                gb[o] += s;
            }
    if (!gx && !gw) return;
    /* The forward grew this thread's scratch to the same size, so this cannot fail unless the
     * backward runs on another thread; then the gradients are poisoned rather than wrong. */
    float *col = scratch_get(block_floats(&g));
    if (!col) {
        if (gx)
            for (size_t i = 0; i < (size_t)g.B * x_sample; i++) gx[i] = NAN;
        if (gw)
            for (size_t i = 0; i < (size_t)g.O * g.ckk; i++) gw[i] = NAN;
        return;
    }
    for (int b = 0; b < g.B; b++)
        for (int gi = 0; gi < g.groups; gi++) {
            size_t x_off = (size_t)b * x_sample + (size_t)gi * g.Cg * g.H * g.W;
            const float *wg = w + (size_t)gi * g.Og * g.ckk;
            const float *gyg = gy + ((size_t)b * g.O + (size_t)gi * g.Og) * ohw;
            for (int oh0 = 0; oh0 < g.OH; oh0 += g.block_rows) {
                int oh1 = oh0 + g.block_rows < g.OH ? oh0 + g.block_rows : g.OH;
                int n = (oh1 - oh0) * g.OW;
                const float *gyb = gyg + (size_t)oh0 * g.OW;
                if (gw) {
                    /* gw[Og, ckk] += gy[Og, n] col[ckk, n]^T */
                    im2col(&g, x + x_off, oh0, oh1, col);
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g.Og, g.ckk, n, 1.0f, gyb,
                                (int)ohw, col, n, 1.0f, gw + (size_t)gi * g.Og * g.ckk, g.ckk);
                }
                if (gx) {
                    /* col[ckk, n] = w[Og, ckk]^T gy[Og, n], scattered back into gx */
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, g.ckk, n, g.Og, 1.0f, wg,
                                g.ckk, gyb, (int)ohw, 0.0f, col, n);
                    col2im(&g, col, oh0, oh1, gx + x_off);
                }
            }
        }
}
