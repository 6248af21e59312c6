/* Private: the interpreter's forward and backward kernels, one pair per computing op, which
 * the op table in ops.c references by these names. */
#ifndef OTC_KERNELS_H
#define OTC_KERNELS_H

#include "op_table.h"

/* Which kernel each op row in ops.c uses (forward / backward):
 *
 *   add          otc_fwd_add            otc_bwd_add
 *   sub          otc_fwd_sub            otc_bwd_sub
 *   mul          otc_fwd_mul            otc_bwd_mul
 *   div          otc_fwd_div            otc_bwd_div
 *   neg          otc_fwd_neg            otc_bwd_neg
 *   scale        otc_fwd_scale          otc_bwd_scale
 *   detach       otc_fwd_detach         NULL (no gradient flows)
 *   sigmoid, tanh, relu, leaky_relu, softplus, elu, gaussian, sin, abs, identity:
 *                otc_fwd_activation     otc_bwd_activation
 *     (one kernel for all ten: it reads otc_op_def_get(node->op)->info.act and uses
 *      node->alpha as the activation parameter `a`)
 *   matmul       otc_fwd_matmul         otc_bwd_matmul
 *   row_broadcast otc_fwd_row_broadcast otc_bwd_row_broadcast
 *   sum          otc_fwd_sum            otc_bwd_sum
 *   mean         otc_fwd_mean           otc_bwd_mean
 *   reshape      otc_fwd_reshape        otc_bwd_reshape
 *   flatten      otc_fwd_flatten        otc_bwd_flatten
 *   concat       otc_fwd_concat         otc_bwd_concat
 *   slice        otc_fwd_slice          otc_bwd_slice
 *   select       otc_fwd_select         otc_bwd_select
 *   softmax      otc_fwd_softmax        otc_bwd_softmax
 *   log_softmax  otc_fwd_log_softmax    otc_bwd_log_softmax
 *   mse          otc_fwd_mse            otc_bwd_mse
 *   bce          otc_fwd_bce            otc_bwd_bce
 *   softmax_ce   otc_fwd_softmax_ce     otc_bwd_softmax_ce
 *   neuron       otc_fwd_neuron         otc_bwd_neuron
 *   input, parameter, delay: NULL / NULL (the interpreter handles them itself)
 *
 * Gradient conventions a compiled backend must match:
 *   - BCE clamps p to [1e-7, 1-1e-7] and uses the clamped p in the gradient without masking
 *     (d/dp = (p - t) / (p (1 - p)) / n; d/dt = (log(1-p) - log p) / n).
 *   - softmax_ce's labels, row_broadcast's `like` and a Delay's input get no gradient.
 *   - Activations (ops and Neuron) take their parameter `a` from node->alpha.
 */

/* Activation loops shared by the activation ops and the Neuron (kernels_act.c): the switch on
 * `act` sits outside the loop, and each case spells the same formula as activations.c (a test
 * compares them). y = f(x) may be computed in place (x == y). Unknown activations fall back
 * to otc_act_get's function pointers; both return false only for an act outside the table. */
bool otc_act_forward_n(int act, float alpha, const float *x, float *y, size_t n);
/* gx[i] += gy[i] * f'(x[i]) (given y[i] = f(x[i])). */
bool otc_act_backward_n(int act, float alpha, const float *x, const float *y, const float *gy,
                        float *gx, size_t n);

/* Element count of a resolved shape (a scalar is 1). */
static inline size_t otc_kshape_size(otc_shape s) {
    size_t n = 1;
    for (int i = 0; i < s.ndim; i++) n *= (size_t)s.dim[i];
    return n;
}

/* elementwise (kernels_elementwise.c) */
otc_status otc_fwd_add(const otc_kernel_args *a);
void otc_bwd_add(const otc_kernel_args *a);
otc_status otc_fwd_sub(const otc_kernel_args *a);
void otc_bwd_sub(const otc_kernel_args *a);
otc_status otc_fwd_mul(const otc_kernel_args *a);
void otc_bwd_mul(const otc_kernel_args *a);
otc_status otc_fwd_div(const otc_kernel_args *a);
void otc_bwd_div(const otc_kernel_args *a);
otc_status otc_fwd_neg(const otc_kernel_args *a);
void otc_bwd_neg(const otc_kernel_args *a);
otc_status otc_fwd_scale(const otc_kernel_args *a);
void otc_bwd_scale(const otc_kernel_args *a);
otc_status otc_fwd_detach(const otc_kernel_args *a);
otc_status otc_fwd_activation(const otc_kernel_args *a);
void otc_bwd_activation(const otc_kernel_args *a);

/* matmul (kernels_matmul.c) */
otc_status otc_fwd_matmul(const otc_kernel_args *a);
void otc_bwd_matmul(const otc_kernel_args *a);

/* shapes, reductions, softmax (kernels_structural.c) */
otc_status otc_fwd_row_broadcast(const otc_kernel_args *a);
void otc_bwd_row_broadcast(const otc_kernel_args *a);
otc_status otc_fwd_sum(const otc_kernel_args *a);
void otc_bwd_sum(const otc_kernel_args *a);
otc_status otc_fwd_mean(const otc_kernel_args *a);
void otc_bwd_mean(const otc_kernel_args *a);
otc_status otc_fwd_reshape(const otc_kernel_args *a);
void otc_bwd_reshape(const otc_kernel_args *a);
otc_status otc_fwd_flatten(const otc_kernel_args *a);
void otc_bwd_flatten(const otc_kernel_args *a);
otc_status otc_fwd_concat(const otc_kernel_args *a);
void otc_bwd_concat(const otc_kernel_args *a);
otc_status otc_fwd_slice(const otc_kernel_args *a);
void otc_bwd_slice(const otc_kernel_args *a);
otc_status otc_fwd_select(const otc_kernel_args *a);
void otc_bwd_select(const otc_kernel_args *a);
otc_status otc_fwd_softmax(const otc_kernel_args *a);
void otc_bwd_softmax(const otc_kernel_args *a);
otc_status otc_fwd_log_softmax(const otc_kernel_args *a);
void otc_bwd_log_softmax(const otc_kernel_args *a);

/* losses (kernels_loss.c) */
otc_status otc_fwd_mse(const otc_kernel_args *a);
void otc_bwd_mse(const otc_kernel_args *a);
otc_status otc_fwd_bce(const otc_kernel_args *a);
void otc_bwd_bce(const otc_kernel_args *a);
otc_status otc_fwd_softmax_ce(const otc_kernel_args *a);
void otc_bwd_softmax_ce(const otc_kernel_args *a);

/* NEAT (kernels_neuron.c) */
otc_status otc_fwd_neuron(const otc_kernel_args *a);
void otc_bwd_neuron(const otc_kernel_args *a);

#endif
