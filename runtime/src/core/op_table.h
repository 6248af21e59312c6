/* Private: the one table that describes every op (arity, shape rule, interpreter kernels).
 * Adding an op is one row in ops.c plus its kernels and tests. */
#ifndef OTC_OP_TABLE_H
#define OTC_OP_TABLE_H

#include "otc/graph.h"

/* Shape of the node `spec` would create, given its (existing) inputs in g. */
typedef otc_status (*otc_shape_rule)(const otc_graph *g, const otc_node_spec *spec, otc_shape *out);

/* What a kernel sees. Shapes are resolved (the batch substituted). */
typedef struct {
    const otc_node *node;
    int batch;
    int n_in;
    const float *const *in;    /* input values */
    const otc_shape *in_shape; /* resolved input shapes */
    float *out;                /* forward: written; backward: the forward's output */
    otc_shape out_shape;
    const float *out_grad; /* backward: dLoss/dOut */
    float *const *in_grad; /* backward: dLoss/dIn, ACCUMULATED (+=); an entry is NULL
                              when that input needs no gradient */
} otc_kernel_args;

typedef otc_status (*otc_forward_kernel)(const otc_kernel_args *a);
typedef void (*otc_backward_kernel)(const otc_kernel_args *a);

typedef struct {
    otc_op_info info;
    otc_shape_rule shape;
    otc_forward_kernel forward;   /* NULL for Input/Parameter/Delay (the executor fills them) */
    otc_backward_kernel backward; /* NULL where no gradient flows (Detach, sources) */
} otc_op_def;

const otc_op_def *otc_op_def_get(otc_op op);

/* The interpreter's compiled forms (otc_expr_program) of an elementwise op's trees (which: -1
 * its value, 0 or 1 its derivative by that input; NULL for an activation op, which runs
 * through otc_act_forward_n) and of an activation's; NULL where there is no tree. Compiled
 * once, on first use, by whichever thread comes first. */
const otc_expr_program *otc_op_program(otc_op op, int which);
const otc_expr_program *otc_act_program(int act, bool derivative);

#endif
