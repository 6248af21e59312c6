/* Interpreter kernels of the losses: MSE and BCE (means over all elements) and softmax
 * cross-entropy (mean over rows, from logits and float class indices). */
#include <math.h>

#include "kernels.h"

#define OTC_BCE_EPS 1e-7f

otc_status otc_fwd_mse(const otc_kernel_args *a) {
    const float *p = a->in[0], *t = a->in[1];
    size_t n = otc_kshape_size(a->in_shape[0]);
    double s = 0.0;
    for (size_t i = 0; i < n; i++) {
        float d = p[i] - t[i];
        s += (double)(d * d);
    }
    a->out[0] = (float)(s / (double)n);
    return OTC_OK;
}

void otc_bwd_mse(const otc_kernel_args *a) {
    const float *p = a->in[0], *t = a->in[1];
    float *gp = a->in_grad[0], *gt = a->in_grad[1];
    size_t n = otc_kshape_size(a->in_shape[0]);
    float k = 2.0f * a->out_grad[0] / (float)n;
    for (size_t i = 0; i < n; i++) {
        float d = k * (p[i] - t[i]);
        if (gp) gp[i] += d;
        if (gt) gt[i] -= d;
    }
}

static float clamp_prob(float p) {
    return p < OTC_BCE_EPS ? OTC_BCE_EPS : (p > 1.0f - OTC_BCE_EPS ? 1.0f - OTC_BCE_EPS : p);
}

otc_status otc_fwd_bce(const otc_kernel_args *a) {
    const float *p = a->in[0], *t = a->in[1];
    size_t n = otc_kshape_size(a->in_shape[0]);
    double s = 0.0;
    for (size_t i = 0; i < n; i++) {
        float q = clamp_prob(p[i]);
        s -= (double)(t[i] * logf(q) + (1.0f - t[i]) * logf(1.0f - q));
    }
    a->out[0] = (float)(s / (double)n);
    return OTC_OK;
}

/* The gradient uses the clamped probability without masking the clamp (as PyTorch does):
 * a saturated prediction still gets a large gradient in the right direction instead of a
 * zero one that would stall training. */
void otc_bwd_bce(const otc_kernel_args *a) {
    const float *p = a->in[0], *t = a->in[1];
    float *gp = a->in_grad[0], *gt = a->in_grad[1];
    size_t n = otc_kshape_size(a->in_shape[0]);
    float k = a->out_grad[0] / (float)n;
    for (size_t i = 0; i < n; i++) {
        float q = clamp_prob(p[i]);
        if (gp) gp[i] += k * (q - t[i]) / (q * (1.0f - q));
        if (gt) gt[i] += k * (logf(1.0f - q) - logf(q));
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
