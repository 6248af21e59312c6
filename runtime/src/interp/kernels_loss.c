/* Interpreter kernels of the losses: the mean over all elements of a per-element loss (MSE,
 * BCE: their trees in the op table) and softmax cross-entropy (mean over rows, from logits
 * and float class indices). */
#include <math.h>

#include "kernels.h"

enum { BLOCK = 256 }; /* elements per pass: the per-element values stay in cache */

/* The sum runs in double over the float per-element losses: the mean of many elements then
 * keeps its digits. */
otc_status otc_fwd_mean_loss(const otc_kernel_args *a) {
    const otc_expr *term = otc_op_loss_expr(a->node->op);
    if (!term) return otc_fail(OTC_ERR_ARG, "op %d is no mean loss", (int)a->node->op);
    const otc_expr_arrays in = {.x = a->in[0], .x1 = a->in[1]};
    const size_t n = otc_kshape_size(a->in_shape[0]);
    float buf[BLOCK];
    double s = 0.0;
    for (size_t off = 0; off < n; off += BLOCK) {
        const size_t m = n - off < BLOCK ? n - off : BLOCK;
        const otc_expr_arrays at = {.x = in.x + off, .x1 = in.x1 + off};
        otc_expr_eval_n(term, &at, buf, m);
        for (size_t i = 0; i < m; i++) s += (double)buf[i];
    }
    a->out[0] = (float)(s / (double)n);
    return OTC_OK;
}

/* grad(input i) += (out_grad / n) * d(loss)/d(input i) at each element. */
void otc_bwd_mean_loss(const otc_kernel_args *a) {
    const size_t n = otc_kshape_size(a->in_shape[0]);
    const float k = a->out_grad[0] / (float)n;
    float buf[BLOCK];
    for (int i = 0; i < 2; i++) {
        const otc_expr *d = otc_op_loss_grad_expr(a->node->op, i);
        float *acc = a->in_grad[i];
        if (!d || !acc) continue;
        for (size_t off = 0; off < n; off += BLOCK) {
            const size_t m = n - off < BLOCK ? n - off : BLOCK;
            const otc_expr_arrays at = {.x = a->in[0] + off, .x1 = a->in[1] + off};
            otc_expr_eval_n(d, &at, buf, m);
            for (size_t j = 0; j < m; j++) acc[off + j] += k * buf[j];
        }
    }
}

/* Rows and classes of the logits [M,C]; labels hold M floats either way ([M] or [M,1]). */
static void ce_dims(const otc_kernel_args *a, size_t *rows, size_t *classes) {
    otc_shape s = a->in_shape[0];
    *classes = (size_t)s.dim[s.ndim - 1];
    *rows = otc_kshape_size(s) / *classes;
}

otc_status otc_fwd_softmax_ce(const otc_kernel_args *a) {
    size_t M, C;
    ce_dims(a, &M, &C);
    const float *labels = a->in[1];
    double total = 0.0;
    for (size_t r = 0; r < M; r++) {
        float l = labels[r];
        /* Written so that NaN fails too. */
        if (!(l >= 0.0f && l < (float)C && l == floorf(l)))
            return otc_fail(OTC_ERR_ARG,
                            "softmax_ce: label %g in row %zu is not a class index in [0,%zu)",
                            (double)l, r, C);
        const float *x = a->in[0] + r * C;
        float m = x[0], s = 0.0f;
        for (size_t c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
        for (size_t c = 0; c < C; c++) s += expf(x[c] - m);
        total += (double)((m - x[(size_t)l]) + logf(s));
    }
    a->out[0] = (float)(total / (double)M);
    return OTC_OK;
}

/* d/dx = (softmax(x) - onehot(label)) / M; the labels get no gradient. The forward
 * validated the labels. */
void otc_bwd_softmax_ce(const otc_kernel_args *a) {
    float *gx = a->in_grad[0];
    if (!gx) return;
    size_t M, C;
    ce_dims(a, &M, &C);
    float k = a->out_grad[0] / (float)M;
    for (size_t r = 0; r < M; r++) {
        const float *x = a->in[0] + r * C;
        float *d = gx + r * C, m = x[0], s = 0.0f;
        for (size_t c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
        for (size_t c = 0; c < C; c++) s += expf(x[c] - m);
        float inv = 1.0f / s;
        for (size_t c = 0; c < C; c++) d[c] += k * expf(x[c] - m) * inv;
        d[(size_t)a->in[1][r]] -= k;
    }
}
