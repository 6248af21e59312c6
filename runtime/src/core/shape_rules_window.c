/* Shape rules of the windowed image ops (Conv2d, MaxPool2d, AvgPool2d, NCHW): the window's
 * attributes, the input ranks and channel counts, and that the window fits the padded input;
 * errors name the node and its inputs. */
#include <stdint.h>
#include <stdio.h>

#include "shape_rules.h"

#include "otc/limits.h"

#define IN(i)        (otc_graph_node(g, s->inputs[i])->shape)
#define LABEL(i)     otc_graph_node_label(g, s->inputs[(i)], lab[(i) % 2], sizeof lab[0])
#define SHAPE(sh, k) otc_shape_str((sh), shp[k], sizeof shp[0])

int otc_window_out(int in, int kernel, int stride, int pad, int dilation) {
    if (in <= 0 || kernel <= 0 || stride <= 0 || pad < 0 || dilation <= 0) return 0;
    int64_t span = (int64_t)dilation * (kernel - 1) + 1, padded = (int64_t)in + 2 * (int64_t)pad;
    if (span > padded) return 0;
    return (int)((padded - span) / stride + 1);
}

/* "3x3" or "3" when both sides are equal. */
static void pair(char *buf, size_t len, int h, int w) {
    if (h == w)
        snprintf(buf, len, "%d", h);
    else
        snprintf(buf, len, "%dx%d", h, w);
}

const char *otc_window_str(const otc_node *nd, char *buf, size_t len) {
    if (!buf || !len) return "";
    buf[0] = '\0';
    if (!nd ||
        (nd->op != OTC_OP_CONV2D && nd->op != OTC_OP_MAXPOOL2D && nd->op != OTC_OP_AVGPOOL2D))
        return buf;
    const otc_window *w = &nd->win;
    char s[32], p[32], d[32];
    pair(s, sizeof s, w->stride_h, w->stride_w);
    pair(p, sizeof p, w->pad_h, w->pad_w);
    pair(d, sizeof d, w->dilation_h, w->dilation_w);
    int n = snprintf(buf, len, "%dx%d stride %s pad %s", w->kernel_h, w->kernel_w, s, p);
    if (n > 0 && (size_t)n < len && (w->dilation_h != 1 || w->dilation_w != 1))
        n += snprintf(buf + n, len - (size_t)n, " dilation %s", d);
    if (n > 0 && (size_t)n < len && w->groups != 1)
        snprintf(buf + n, len - (size_t)n, " groups %d", w->groups);
    return buf;
}

/* "conv2d 'c1'" or "conv2d" for messages. */
static const char *who(const otc_node_spec *s, char *buf, size_t len) {
    snprintf(buf, len, "%s%s%s%s", otc_op_get(s->op)->name, s->name ? " '" : "",
             s->name ? s->name : "", s->name ? "'" : "");
    return buf;
}

/* The attributes alone: positive kernel, stride, dilation and groups, padding >= 0, all
 * bounded by OTC_MAX_DIM (so the arithmetic below cannot overflow). */
static otc_status check_window(const otc_node_spec *s, const char *me) {
    const otc_window *w = &s->win;
    int v[] = {w->kernel_h,   w->kernel_w,   w->stride_h, w->stride_w,
               w->dilation_h, w->dilation_w, w->groups};
    static const char *names[] = {"kernel_h",   "kernel_w",   "stride_h", "stride_w",
                                  "dilation_h", "dilation_w", "groups"};
    for (int i = 0; i < 7; i++)
        if (v[i] < 1 || v[i] > OTC_MAX_DIM)
            return otc_fail(OTC_ERR_SHAPE, "%s: %s is %d (must be 1..%d)", me, names[i], v[i],
                            OTC_MAX_DIM);
    if (w->pad_h < 0 || w->pad_w < 0 || w->pad_h > OTC_MAX_DIM || w->pad_w > OTC_MAX_DIM)
        return otc_fail(OTC_ERR_SHAPE, "%s: padding %d x %d (must be 0..%d)", me, w->pad_h,
                        w->pad_w, OTC_MAX_DIM);
    return OTC_OK;
}

/* Output spatial size, or an error when the (dilated) kernel exceeds the padded input. */
static otc_status fit(const otc_node_spec *s, const char *me, otc_shape x, const char *xlab,
                      int *oh, int *ow) {
    char shp[1][64];
    const otc_window *w = &s->win;
    *oh = otc_window_out(x.dim[2], w->kernel_h, w->stride_h, w->pad_h, w->dilation_h);
    *ow = otc_window_out(x.dim[3], w->kernel_w, w->stride_w, w->pad_w, w->dilation_w);
    if (*oh < 1 || *ow < 1)
        return otc_fail(OTC_ERR_SHAPE,
                        "%s: kernel %dx%d (dilation %dx%d) is larger than input %s %s padded by "
                        "%dx%d",
                        me, w->kernel_h, w->kernel_w, w->dilation_h, w->dilation_w, xlab,
                        SHAPE(x, 0), w->pad_h, w->pad_w);
    return OTC_OK;
}

otc_status otc_shape_conv2d(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char lab[2][64], shp[3][64], me[96];
    who(s, me, sizeof me);
    otc_status st = check_window(s, me);
    if (st) return st;
    otc_shape x = IN(0), w = IN(1);
    if (x.ndim != 4)
        return otc_fail(OTC_ERR_SHAPE, "%s: input %s is %s; conv2d takes [B,C,H,W]", me, LABEL(0),
                        SHAPE(x, 0));
    if (w.ndim != 4 || otc_shape_is_batched(w))
        return otc_fail(OTC_ERR_SHAPE, "%s: weight %s is %s; conv2d takes [O,C/groups,KH,KW]", me,
                        LABEL(1), SHAPE(w, 0));
    int C = x.dim[1], O = w.dim[0], groups = s->win.groups;
    if (C % groups || O % groups)
        return otc_fail(OTC_ERR_SHAPE,
                        "%s: %d groups do not divide the %d input channels of %s %s and the %d "
                        "output channels of weight %s %s",
                        me, groups, C, LABEL(0), SHAPE(x, 0), O, LABEL(1), SHAPE(w, 1));
    if (w.dim[1] != C / groups)
        return otc_fail(OTC_ERR_SHAPE,
                        "%s: weight %s %s takes %d channels per group, but input %s %s has %d "
                        "channels in %d group(s)",
                        me, LABEL(1), SHAPE(w, 0), w.dim[1], LABEL(0), SHAPE(x, 1), C, groups);
    if (w.dim[2] != s->win.kernel_h || w.dim[3] != s->win.kernel_w)
        return otc_fail(OTC_ERR_SHAPE, "%s: kernel %dx%d does not match weight %s %s", me,
                        s->win.kernel_h, s->win.kernel_w, LABEL(1), SHAPE(w, 0));
    if (s->n_inputs == 3) {
        otc_shape b = IN(2);
        if (b.ndim != 1 || otc_shape_is_batched(b) || b.dim[0] != O) {
            char blab[64];
            return otc_fail(
                OTC_ERR_SHAPE, "%s: bias %s is %s; expected [%d] (one per output channel)", me,
                otc_graph_node_label(g, s->inputs[2], blab, sizeof blab), SHAPE(b, 2), O);
        }
    }
    int oh, ow;
    if ((st = fit(s, me, x, LABEL(0), &oh, &ow))) return st;
    *out = x;
    out->dim[1] = O;
    out->dim[2] = oh;
    out->dim[3] = ow;
    return OTC_OK;
}

otc_status otc_shape_pool2d(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char lab[2][64], shp[1][64], me[96];
    who(s, me, sizeof me);
    otc_status st = check_window(s, me);
    if (st) return st;
    const otc_window *w = &s->win;
    if (w->dilation_h != 1 || w->dilation_w != 1 || w->groups != 1)
        return otc_fail(OTC_ERR_SHAPE, "%s: pooling takes dilation 1 and one group", me);
    /* Every window then holds at least one real element (PyTorch's rule). */
    if (2 * w->pad_h > w->kernel_h || 2 * w->pad_w > w->kernel_w)
        return otc_fail(OTC_ERR_SHAPE, "%s: padding %dx%d is more than half the kernel %dx%d", me,
                        w->pad_h, w->pad_w, w->kernel_h, w->kernel_w);
    otc_shape x = IN(0);
    if (x.ndim != 4)
        return otc_fail(OTC_ERR_SHAPE, "%s: input %s is %s; pooling takes [B,C,H,W]", me, LABEL(0),
                        SHAPE(x, 0));
    int oh, ow;
    if ((st = fit(s, me, x, LABEL(0), &oh, &ow))) return st;
    *out = x;
    out->dim[2] = oh;
    out->dim[3] = ow;
    return OTC_OK;
}
