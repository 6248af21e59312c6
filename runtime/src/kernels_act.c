/* Activations for the interpreter (the activation ops and the Neuron): the activation
 * table's expression trees evaluated over the arrays. */
#include "kernels.h"

bool otc_act_forward_n(int act, float alpha, const float *x, float *y, size_t n) {
    const otc_act_info *info = otc_act_get((otc_act)act);
    if (!info) return false;
    otc_expr_eval_n(info->f, &(otc_expr_arrays){.x = x, .a = alpha}, y, n);
    return true;
}

bool otc_act_backward_n(int act, float alpha, const float *x, const float *y, const float *gy,
                        float *gx, size_t n) {
    const otc_act_info *info = otc_act_get((otc_act)act);
    if (!info) return false;
    otc_expr_accumulate_n(info->df, &(otc_expr_arrays){.x = x, .y = y, .a = alpha}, gy, gx, n);
    return true;
}
