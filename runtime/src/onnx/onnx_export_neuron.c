/* A NEAT Neuron as ONNX nodes: act(bias + scale * agg_i(w_i * src_i[:, col_i])). The sources'
 * columns are sliced and concatenated into a [B,k] tensor, weighted by W (broadcast), and
 * reduced along axis 1 by the aggregation (otc/ops.h otc_agg); the activation is its tree. */
#include "onnx_export_build.h"

/* [B,1] of the constant v: a Neuron with no sources still has a value per row. */
static const char *per_row(oxw_builder *b, float v) {
    if (!b->batch_shape) {
        if (!b->batch_like) {
            oxw_unsupported(b, "it has no inputs and the graph no batched input to size it by");
            return NULL;
        }
        const char *shape = oxw_op1(b, "Shape", NULL, b->batch_like);
        int64_t one = 1;
        const char *rows = oxw_slice(b, shape, 0, 0, 1, NULL);
        Onnx__NodeProto *n =
            oxw_node(b, "Concat", NULL, 2, (const char *[]){rows, oxw_const_i64(b, &one, 1)});
        if (!n) return NULL;
        oxw_attr_int(b, n, "axis", 0);
        b->batch_shape = n->output[0];
    }
    return oxw_op2(b, "Expand", NULL, oxw_const_f(b, v), b->batch_shape);
}

/* Reduce* along axis 1 keeping it ([B,k] -> [B,1]); ReduceSum takes its axes as an input from
 * opset 13, the others as an attribute. */
static const char *reduce(oxw_builder *b, const char *op, const char *t) {
    int64_t axis = 1;
    bool axes_input = op[6] == 'S'; /* ReduceSum */
    Onnx__NodeProto *n =
        axes_input ? oxw_node(b, op, NULL, 2, (const char *[]){t, oxw_const_i64(b, &axis, 1)})
                   : oxw_node(b, op, NULL, 1, (const char *[]){t});
    if (!n) return NULL;
    if (!axes_input) oxw_attr_ints(b, n, "axes", &axis, 1);
    oxw_attr_int(b, n, "keepdims", 1);
    return n->output[0];
}

/* The aggregation of the weighted terms t [B,k], k >= 2 -> [B,1]. */
static const char *aggregate(oxw_builder *b, int agg, const char *t, int k) {
    switch (agg) {
    case OTC_AGG_PRODUCT:
        return reduce(b, "ReduceProd", t);
    case OTC_AGG_MIN:
        return reduce(b, "ReduceMin", t);
    case OTC_AGG_MAX:
        return reduce(b, "ReduceMax", t);
    case OTC_AGG_MEAN:
        return reduce(b, "ReduceMean", t);
    case OTC_AGG_MAXABS: {
        /* the term of the largest magnitude, its sign kept; ArgMax picks the first of ties as
         * otc does */
        Onnx__NodeProto *n =
            oxw_node(b, "ArgMax", NULL, 1, (const char *[]){oxw_op1(b, "Abs", NULL, t)});
        if (!n) return NULL;
        oxw_attr_int(b, n, "axis", 1);
        oxw_attr_int(b, n, "keepdims", 1);
        n = oxw_node(b, "GatherElements", NULL, 2, (const char *[]){t, n->output[0]});
        if (!n) return NULL;
        oxw_attr_int(b, n, "axis", 1);
        return n->output[0];
    }
    case OTC_AGG_MEDIAN: {
        /* neat-python's median of two is their mean; otherwise the middle of the ascending
         * sort (TopK of all k, smallest first), the mean of the two middle ones for even k */
        if (k == 2) return reduce(b, "ReduceMean", t);
        int64_t kk = k;
        Onnx__NodeProto *n =
            oxw_node(b, "TopK", NULL, 2, (const char *[]){t, oxw_const_i64(b, &kk, 1)});
        char **outs = oxw_alloc(b, 2 * sizeof *outs);
        if (!n || !outs) return NULL;
        outs[0] = n->output[0];
        outs[1] = oxw_fresh(b, "TopK_indices");
        n->output = outs;
        n->n_output = 2;
        oxw_attr_int(b, n, "axis", 1);
        oxw_attr_int(b, n, "largest", 0);
        oxw_attr_int(b, n, "sorted", 1);
        if (k % 2) return oxw_slice(b, outs[0], 1, k / 2, 1, NULL);
        return reduce(b, "ReduceMean", oxw_slice(b, outs[0], 1, k / 2 - 1, 2, NULL));
    }
    default:
        return reduce(b, "ReduceSum", t);
    }
}

const char *oxw_neuron(oxw_builder *b, const otc_node *nd, const char *const *in, const char *out) {
    int k = nd->n_inputs - 2;
    const char *agg = NULL;
    if (k == 0) {
        agg = per_row(b, nd->agg == OTC_AGG_PRODUCT ? 1.0f : 0.0f);
    } else {
        const char **cols = oxw_alloc(b, (size_t)k * sizeof *cols);
        if (!cols) return NULL;
        for (int i = 0; i < k; i++) {
            /* a [B,1] source (another neuron) is its own column */
            int width = otc_graph_node(b->g, nd->inputs[2 + i])->shape.dim[1];
            cols[i] = width == 1 ? in[2 + i] : oxw_slice(b, in[2 + i], 1, nd->cols[i], 1, NULL);
        }
        const char *x = cols[0];
        if (k > 1) {
            Onnx__NodeProto *n = oxw_node(b, "Concat", NULL, k, cols);
            if (!n) return NULL;
            oxw_attr_int(b, n, "axis", 1);
            x = n->output[0];
        }
        const char *t = oxw_op2(b, "Mul", NULL, x, in[0]);
        /* every aggregation of one term is the term */
        agg = k == 1 ? t : aggregate(b, nd->agg, t, k);
    }
    const char *pre =
        oxw_op2(b, "Add", NULL, in[1], oxw_op2(b, "Mul", NULL, agg, oxw_const_f(b, nd->scale)));
    if (!pre) return NULL;
    return oxw_expr(b, otc_act_get(nd->act)->f, pre, NULL, otc_node_param(nd), out);
}
