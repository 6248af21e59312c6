/* Training graphs for the compiler: a loss and its target input added to a forward graph. */
#include <stdio.h>

#include "otc/compiler.h"

static otc_id add_target(otc_graph *g, otc_shape shape) {
    char name[32] = "target";
    for (int i = 1; otc_graph_find(g, name) >= 0 && i < 1000; i++)
        snprintf(name, sizeof name, "target_%d", i);
    return otc_input(g, name, shape);
}

otc_status otc_compile_add_loss(otc_graph *g, otc_op loss, otc_id *loss_out, otc_id *target_out) {
    char lab[64], shp[64];
    if (!g || !loss_out) return otc_fail(OTC_ERR_ARG, "add_loss: graph or loss_out is NULL");
    int n_out = otc_graph_output_count(g);
    if (n_out == 0) return otc_fail(OTC_ERR_ARG, "add_loss: the graph has no outputs");
    if (target_out) *target_out = -1;
    otc_id last = otc_graph_output(g, n_out - 1);
    if (otc_op_get(otc_graph_node(g, last)->op)->kind == OTC_OPKIND_LOSS) {
        *loss_out = last;
        return OTC_OK;
    }
    otc_id pred = -1, target = -1;
    if (loss == OTC_OP_SOFTMAX_CE) {
        if (n_out != 1)
            return otc_fail(OTC_ERR_ARG,
                            "add_loss: softmax_ce needs one output (the logits), "
                            "not %d",
                            n_out);
        pred = last;
        const otc_node *nd = otc_graph_node(g, pred);
        if (nd->shape.ndim != 2 || !otc_shape_is_batched(nd->shape))
            return otc_fail(OTC_ERR_SHAPE, "add_loss: logits %s have shape %s, not [B,C]",
                            otc_graph_node_label(g, pred, lab, 64),
                            otc_shape_str(nd->shape, shp, 64));
        target = add_target(g, otc_shape_2d(OTC_BATCH, 1));
    } else if (loss == OTC_OP_MSE || loss == OTC_OP_BCE) {
        otc_id outs[256];
        if (n_out > 256) return otc_fail(OTC_ERR_ARG, "add_loss: more than 256 outputs");
        int width = 0;
        for (int i = 0; i < n_out; i++) {
            outs[i] = otc_graph_output(g, i);
            const otc_node *nd = otc_graph_node(g, outs[i]);
            if (nd->shape.ndim != 2 || !otc_shape_is_batched(nd->shape))
                return otc_fail(OTC_ERR_SHAPE, "add_loss: output %s has shape %s, not [B,n]",
                                otc_graph_node_label(g, outs[i], lab, 64),
                                otc_shape_str(nd->shape, shp, 64));
            width += nd->shape.dim[1];
        }
        pred = n_out == 1 ? outs[0] : otc_concat(g, n_out, outs, 1);
        if (pred < 0) return otc_fail_context(OTC_ERR_SHAPE, "add_loss");
        target = add_target(g, otc_shape_2d(OTC_BATCH, width));
    } else {
        const otc_op_info *info = otc_op_get(loss);
        return otc_fail(OTC_ERR_ARG, "add_loss: '%s' is not a loss (mse, bce or softmax_ce)",
                        info ? info->name : "?");
    }
    if (target < 0) return otc_fail_context(OTC_ERR_ARG, "add_loss");
    otc_id l = loss == OTC_OP_MSE   ? otc_mse(g, pred, target)
               : loss == OTC_OP_BCE ? otc_bce(g, pred, target)
                                    : otc_softmax_ce(g, pred, target);
    if (l < 0) return otc_fail_context(OTC_ERR_SHAPE, "add_loss");
    *loss_out = l;
    if (target_out) *target_out = target;
    return OTC_OK;
}
