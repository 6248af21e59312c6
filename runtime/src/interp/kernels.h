/* Private: the interpreter's forward and backward kernels, one pair per computing op, which
 * the op table in ops.c references by these names. */
#ifndef OTC_KERNELS_H
#define OTC_KERNELS_H

#include "op_table.h"

/* Which kernel each op row in ops.c uses (forward / backward):
 *
 *   add, sub, mul, div, neg, scale, detach and the activation ops:
 *                otc_fwd_map            otc_bwd_map (detach: NULL, no gradient flows)
 *     (the op's expressions, otc_op_map_expr / otc_op_grad_expr, evaluated over the arrays;
 *      the parameter `a` is otc_node_param(node))
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
 *   mse, bce     otc_fwd_mean_loss      otc_bwd_mean_loss
 *     (the mean of the op's per-element loss, otc_op_loss_expr / otc_op_loss_grad_expr)
 *   softmax_ce   otc_fwd_softmax_ce     otc_bwd_softmax_ce
 *   neuron       otc_fwd_neuron         otc_bwd_neuron
 *   conv2d       otc_fwd_conv2d         otc_bwd_conv2d
 *   maxpool2d    otc_fwd_maxpool2d      otc_bwd_maxpool2d
 *   avgpool2d    otc_fwd_avgpool2d      otc_bwd_avgpool2d
 *   input, parameter, delay: NULL / NULL (the interpreter handles them itself)
 *
 * Gradient conventions a compiled backend must match:
 *   - MSE and BCE: the gradient of an input is (out_grad / n) times the per-element
 *     derivative tree of ops.c (BCE clamps p and uses the clamped p without masking).
 *   - softmax_ce's labels, row_broadcast's `like` and a Delay's input get no gradient.
 *   - Activations (ops and Neuron) take their parameter `a` from node->alpha.
 *   - maxpool2d: a window's gradient goes to its first maximum in row-major order (ties:
 *     the first); padding is never the maximum. avgpool2d divides by KH*KW always (padding
 *     counts as zeros, PyTorch's count_include_pad=True).
 */

/* Activations shared by the activation ops and the Neuron (kernels_act.c): y = f(x) (in place
 * allowed, x == y); false only for an act outside the table. */
bool otc_act_forward_n(int act, float alpha, const float *x, float *y, size_t n);
/* gx[i] += gy[i] * f'(x[i]) (given y[i] = f(x[i])). */
bool otc_act_backward_n(int act, float alpha, const float *x, const float *y, const float *gy,
                        float *gx, size_t n);

/* A Neuron's aggregation of one row's weighted inputs t[0..k) (aggregations.c): the value,
 * and d value / d t_i into g[0..k). Median sorts into scratch (k items; unused otherwise).
 * At a kink (ties of min, max, maxabs, median) the input the value took gets the gradient. */
typedef struct {
    float v;
    int i;
} otc_agg_item;
float otc_agg_value(int agg, const float *t, int k, otc_agg_item *scratch);
void otc_agg_grad(int agg, const float *t, int k, float *g, otc_agg_item *scratch);

/* Element count of a resolved shape (a scalar is 1). */
static inline size_t otc_kshape_size(otc_shape s) {
    size_t n = 1;
    for (int i = 0; i < s.ndim; i++) n *= (size_t)s.dim[i];
    return n;
}

/* elementwise (kernels_elementwise.c) */
otc_status otc_fwd_map(const otc_kernel_args *a);
void otc_bwd_map(const otc_kernel_args *a);

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
otc_status otc_fwd_mean_loss(const otc_kernel_args *a);
void otc_bwd_mean_loss(const otc_kernel_args *a);
otc_status otc_fwd_softmax_ce(const otc_kernel_args *a);
void otc_bwd_softmax_ce(const otc_kernel_args *a);

/* NEAT (kernels_neuron.c) */
otc_status otc_fwd_neuron(const otc_kernel_args *a);
void otc_bwd_neuron(const otc_kernel_args *a);

/* images, NCHW (kernels_conv.c, kernels_pool.c) */
otc_status otc_fwd_conv2d(const otc_kernel_args *a);
void otc_bwd_conv2d(const otc_kernel_args *a);
otc_status otc_fwd_maxpool2d(const otc_kernel_args *a);
void otc_bwd_maxpool2d(const otc_kernel_args *a);
otc_status otc_fwd_avgpool2d(const otc_kernel_args *a);
void otc_bwd_avgpool2d(const otc_kernel_args *a);

#endif
