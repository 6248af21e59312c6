/* Interpreter kernels of the elementwise ops: arithmetic on equal shapes, negation, scaling,
 * detach and the activation ops (one kernel for all of them). */
#include <string.h>

#include "kernels.h"

/* Every elementwise op works on the output's element count; the shape rules guarantee that
 * the inputs have the output's shape. */
static size_t out_size(const otc_kernel_args *a) {
    return otc_kshape_size(a->out_shape);
}

otc_status otc_fwd_add(const otc_kernel_args *a) {
    const float *x = a->in[0], *y = a->in[1];
    float *o = a->out;
    size_t n = out_size(a);
    for (size_t i = 0; i < n; i++) o[i] = x[i] + y[i];
    return OTC_OK;
}

void otc_bwd_add(const otc_kernel_args *a) {
    const float *g = a->out_grad;
    size_t n = out_size(a);
    for (int k = 0; k < 2; k++) {
        float *gx = a->in_grad[k];
        if (gx)
            for (size_t i = 0; i < n; i++) gx[i] += g[i];
    }
}

otc_status otc_fwd_sub(const otc_kernel_args *a) {
    const float *x = a->in[0], *y = a->in[1];
    float *o = a->out;
    size_t n = out_size(a);
    for (size_t i = 0; i < n; i++) o[i] = x[i] - y[i];
    return OTC_OK;
}

void otc_bwd_sub(const otc_kernel_args *a) {
    const float *g = a->out_grad;
    size_t n = out_size(a);
    float *gx = a->in_grad[0], *gy = a->in_grad[1];
    if (gx)
        for (size_t i = 0; i < n; i++) gx[i] += g[i];
    if (gy)
        for (size_t i = 0; i < n; i++) gy[i] -= g[i];
}

otc_status otc_fwd_mul(const otc_kernel_args *a) {
    const float *x = a->in[0], *y = a->in[1];
    float *o = a->out;
    size_t n = out_size(a);
    for (size_t i = 0; i < n; i++) o[i] = x[i] * y[i];
    return OTC_OK;
}

void otc_bwd_mul(const otc_kernel_args *a) {
    const float *g = a->out_grad, *x = a->in[0], *y = a->in[1];
    size_t n = out_size(a);
    float *gx = a->in_grad[0], *gy = a->in_grad[1];
    /* gx and gy may be the same buffer (x * x): each loop only adds, so both terms land. */
    if (gx)
        for (size_t i = 0; i < n; i++) gx[i] += g[i] * y[i];
    if (gy)
        for (size_t i = 0; i < n; i++) gy[i] += g[i] * x[i];
}

/* Division by zero follows IEEE (inf/nan), as in the compiled code: no hidden epsilon. */
otc_status otc_fwd_div(const otc_kernel_args *a) {
    const float *x = a->in[0], *y = a->in[1];
    float *o = a->out;
    size_t n = out_size(a);
    for (size_t i = 0; i < n; i++) o[i] = x[i] / y[i];
    return OTC_OK;
}

void otc_bwd_div(const otc_kernel_args *a) {
    const float *g = a->out_grad, *y = a->in[1], *o = a->out;
    size_t n = out_size(a);
    float *gx = a->in_grad[0], *gy = a->in_grad[1];
    if (gx)
        for (size_t i = 0; i < n; i++) gx[i] += g[i] / y[i];
    /* d(x/y)/dy = -x/y^2 = -(x/y)/y, from the saved output. */
    if (gy)
        for (size_t i = 0; i < n; i++) gy[i] -= g[i] * o[i] / y[i];
}

otc_status otc_fwd_neg(const otc_kernel_args *a) {
    const float *x = a->in[0];
    float *o = a->out;
    size_t n = out_size(a);
    for (size_t i = 0; i < n; i++) o[i] = -x[i];
    return OTC_OK;
}

void otc_bwd_neg(const otc_kernel_args *a) {
    const float *g = a->out_grad;
    float *gx = a->in_grad[0];
    size_t n = out_size(a);
    if (gx)
        for (size_t i = 0; i < n; i++) gx[i] -= g[i];
}

otc_status otc_fwd_scale(const otc_kernel_args *a) {
    const float *x = a->in[0];
    float *o = a->out, s = a->node->scale;
    size_t n = out_size(a);
    for (size_t i = 0; i < n; i++) o[i] = x[i] * s;
    return OTC_OK;
}

void otc_bwd_scale(const otc_kernel_args *a) {
    const float *g = a->out_grad;
    float *gx = a->in_grad[0], s = a->node->scale;
    size_t n = out_size(a);
    if (gx)
        for (size_t i = 0; i < n; i++) gx[i] += g[i] * s;
}

otc_status otc_fwd_detach(const otc_kernel_args *a) {
    memcpy(a->out, a->in[0], out_size(a) * sizeof(float));
    return OTC_OK;
}

otc_status otc_fwd_activation(const otc_kernel_args *a) {
    const otc_op_info *info = otc_op_get(a->node->op);
    if (!info || !otc_act_forward_n(info->act, a->node->alpha, a->in[0], a->out, out_size(a)))
        return otc_fail(OTC_ERR_ARG, "op %d is not an activation", (int)a->node->op);
    return OTC_OK;
}

void otc_bwd_activation(const otc_kernel_args *a) {
    const otc_op_info *info = otc_op_get(a->node->op);
    if (!a->in_grad[0] || !info) return;
    otc_act_backward_n(info->act, a->node->alpha, a->in[0], a->out, a->out_grad, a->in_grad[0],
                       out_size(a));
}
