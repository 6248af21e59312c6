/* Interpreter kernels of MaxPool2d and AvgPool2d (NCHW): direct loops over each window, which
 * the padding clips. Max: the first maximum in row-major order takes the gradient. Avg: the
 * window's sum over KH*KW always (padding counts as zeros, PyTorch's default). */
#include "kernels.h"

typedef struct {
    int planes, H, W, OH, OW, KH, KW, sh, sw, ph, pw;
} pgeom;

static pgeom pgeom_of(const otc_kernel_args *a) {
    const otc_window *w = &a->node->win;
    otc_shape x = a->in_shape[0];
    return (pgeom){x.dim[0] * x.dim[1], x.dim[2],    x.dim[3],    a->out_shape.dim[2],
                   a->out_shape.dim[3], w->kernel_h, w->kernel_w, w->stride_h,
                   w->stride_w,         w->pad_h,    w->pad_w};
}

/* The window of output (oh, ow), clipped to the input: rows [*h0, *h1), columns [*w0, *w1). */
static void window(const pgeom *g, int oh, int ow, int *h0, int *h1, int *w0, int *w1) {
    int hs = oh * g->sh - g->ph, ws = ow * g->sw - g->pw;
    *h0 = hs < 0 ? 0 : hs;
    *w0 = ws < 0 ? 0 : ws;
    *h1 = hs + g->KH < g->H ? hs + g->KH : g->H;
    *w1 = ws + g->KW < g->W ? ws + g->KW : g->W;
}

/* Index in the plane of the window's first maximum (the shape rule keeps windows non-empty).
 * Branch-free selects: which element wins is data, and a branch on it mispredicts half the
 * time (the backward spent most of its time there). */
static int argmax(const pgeom *g, const float *x, int oh, int ow) {
    int h0, h1, w0, w1;
    window(g, oh, ow, &h0, &h1, &w0, &w1);
    int best = h0 * g->W + w0;
    float bv = x[best];
    for (int h = h0; h < h1; h++)
        for (int w = w0; w < w1; w++) {
            int i = h * g->W + w;
            float v = x[i];
            bool more = v > bv;
            best = more ? i : best;
            bv = more ? v : bv;
        }
    return best;
}

otc_status otc_fwd_maxpool2d(const otc_kernel_args *a) {
    pgeom g = pgeom_of(a);
    size_t in_plane = (size_t)g.H * g.W, out_plane = (size_t)g.OH * g.OW;
    for (int p = 0; p < g.planes; p++) {
        const float *x = a->in[0] + p * in_plane;
        float *y = a->out + p * out_plane;
        for (int oh = 0; oh < g.OH; oh++)
            for (int ow = 0; ow < g.OW; ow++) y[oh * g.OW + ow] = x[argmax(&g, x, oh, ow)];
    }
    return OTC_OK;
}

void otc_bwd_maxpool2d(const otc_kernel_args *a) {
    if (!a->in_grad[0]) return;
    pgeom g = pgeom_of(a);
    size_t in_plane = (size_t)g.H * g.W, out_plane = (size_t)g.OH * g.OW;
    for (int p = 0; p < g.planes; p++) {
        const float *x = a->in[0] + p * in_plane;
        const float *gy = a->out_grad + p * out_plane;
        float *gx = a->in_grad[0] + p * in_plane;
        for (int oh = 0; oh < g.OH; oh++)
            for (int ow = 0; ow < g.OW; ow++) gx[argmax(&g, x, oh, ow)] += gy[oh * g.OW + ow];
    }
}

otc_status otc_fwd_avgpool2d(const otc_kernel_args *a) {
    pgeom g = pgeom_of(a);
    size_t in_plane = (size_t)g.H * g.W, out_plane = (size_t)g.OH * g.OW;
    float inv = 1.0f / (float)(g.KH * g.KW);
    for (int p = 0; p < g.planes; p++) {
        const float *x = a->in[0] + p * in_plane;
        float *y = a->out + p * out_plane;
        for (int oh = 0; oh < g.OH; oh++)
            for (int ow = 0; ow < g.OW; ow++) {
                int h0, h1, w0, w1;
                window(&g, oh, ow, &h0, &h1, &w0, &w1);
                float s = 0;
                for (int h = h0; h < h1; h++)
                    for (int w = w0; w < w1; w++) s += x[h * g.W + w];
                y[oh * g.OW + ow] = s * inv;
            }
    }
    return OTC_OK;
}

void otc_bwd_avgpool2d(const otc_kernel_args *a) {
    if (!a->in_grad[0]) return;
    pgeom g = pgeom_of(a);
    size_t in_plane = (size_t)g.H * g.W, out_plane = (size_t)g.OH * g.OW;
    float inv = 1.0f / (float)(g.KH * g.KW);
    for (int p = 0; p < g.planes; p++) {
        const float *gy = a->out_grad + p * out_plane;
        float *gx = a->in_grad[0] + p * in_plane;
        for (int oh = 0; oh < g.OH; oh++)
            for (int ow = 0; ow < g.OW; ow++) {
                int h0, h1, w0, w1;
                window(&g, oh, ow, &h0, &h1, &w0, &w1);
                float v = gy[oh * g.OW + ow] * inv;
                for (int h = h0; h < h1; h++)
                    for (int w = w0; w < w1; w++) gx[h * g.W + w] += v;
            }
    }
}
