/* The interpreter's one kernel pair for every elementwise op (arithmetic, negation, scaling,
 * detach, the activations): the op's expression trees evaluated over its arrays. */

#include "kernels.h"

/* Every elementwise op works on the output's element count; the shape rules guarantee that
 * the inputs have the output's shape. */
static size_t out_size(const otc_kernel_args *a) {
    return otc_kshape_size(a->out_shape);
}

static otc_expr_arrays leaves(const otc_kernel_args *a) {
    return (otc_expr_arrays){.x = a->in[0],
                             .x1 = a->n_in > 1 ? a->in[1] : NULL,
                             .y = a->out,
                             .a = otc_node_param(a->node)};
}

otc_status otc_fwd_map(const otc_kernel_args *a) {
    const int act = otc_op_get(a->node->op)->act;
    if (act >= 0) /* through the activation loops the Neuron uses too */
        return otc_act_forward_n(act, a->node->alpha, a->in[0], a->out, out_size(a))
                   ? OTC_OK
                   : otc_fail(OTC_ERR_ARG, "op %d: unknown activation", (int)a->node->op);
    const otc_expr_program *value = otc_op_program(a->node->op, -1);
    if (!value) return otc_fail(OTC_ERR_ARG, "op %d is not elementwise", (int)a->node->op);
    otc_expr_arrays in = leaves(a);
    otc_expr_run_n(value, &in, a->out, out_size(a));
    return OTC_OK;
}

/* in_grad[i] += out_grad * d(value)/d(input i). in_grad[0] and [1] may be the same buffer
 * (x * x): each pass only adds, so both terms land. */
void otc_bwd_map(const otc_kernel_args *a) {
    const int act = otc_op_get(a->node->op)->act;
    if (act >= 0) {
        if (a->in_grad[0])
            otc_act_backward_n(act, a->node->alpha, a->in[0], a->out, a->out_grad, a->in_grad[0],
                               out_size(a));
        return;
    }
    otc_expr_arrays in = leaves(a);
    for (int i = 0; i < a->n_in && i < 2; i++) {
        const otc_expr_program *d = otc_op_program(a->node->op, i);
        if (d && a->in_grad[i])
            otc_expr_run_accumulate_n(d, &in, a->out_grad, a->in_grad[i], out_size(a));
    }
}
