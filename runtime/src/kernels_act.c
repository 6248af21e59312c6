/* Activations for the interpreter (the activation ops and the Neuron): the activation
 * table's expression trees, compiled once, run over the arrays. */
#include "kernels.h"

bool otc_act_forward_n(int act, float alpha, const float *x, float *y, size_t n) {
    const otc_expr_program *p = otc_act_program(act, false);
    if (!p) return false;
    otc_expr_run_n(p, &(otc_expr_arrays){.x = x, .a = alpha}, y, n);
    return true;
}

bool otc_act_backward_n(int act, float alpha, const float *x, const float *y, const float *gy,
                        float *gx, size_t n) {
    const otc_expr_program *p = otc_act_program(act, true);
    if (!p) return false;
    otc_expr_run_accumulate_n(p, &(otc_expr_arrays){.x = x, .y = y, .a = alpha}, gy, gx, n);
    return true;
}
