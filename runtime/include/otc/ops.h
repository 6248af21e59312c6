/* The op vocabulary of the graph IR and the activation functions, described once for the
 * interpreter and both compiler renderers. */
#ifndef OTC_OPS_H
#define OTC_OPS_H

#include <stdbool.h>

#include "otc/expr.h"

typedef enum {
    OTC_OP_INPUT,
    OTC_OP_PARAMETER,
    /* elementwise binary, equal shapes */
    OTC_OP_ADD,
    OTC_OP_SUB,
    OTC_OP_MUL,
    OTC_OP_DIV,
    /* elementwise unary */
    OTC_OP_NEG,
    OTC_OP_SCALE, /* ScalarMultiply: x * node.scale */
    OTC_OP_DETACH,
    OTC_OP_SIGMOID,
    OTC_OP_TANH,
    OTC_OP_RELU,
    OTC_OP_LEAKY_RELU, /* slope node.alpha */
    OTC_OP_SOFTPLUS,
    OTC_OP_ELU, /* node.alpha */
    OTC_OP_GAUSSIAN,
    OTC_OP_SIN,
    OTC_OP_ABS,
    /* neat-python's activations whose math no op above has (otc/ops.h OTC_ACT_NP_*) */
    OTC_OP_NP_SIGMOID,
    OTC_OP_NP_TANH,
    OTC_OP_NP_SIN,
    OTC_OP_NP_GAUSS,
    OTC_OP_SELU,
    OTC_OP_NP_SOFTPLUS,
    OTC_OP_CLAMPED,
    OTC_OP_INV,
    OTC_OP_LOG,
    OTC_OP_EXP,
    OTC_OP_HAT,
    OTC_OP_SQUARE,
    OTC_OP_CUBE,
    /* NEAT's steep sigmoid (OTC_ACT_STEEP_SIGMOID), elementwise: a HyperNEAT substrate of
     * NEAT's `sigmoid` as a graph. After cube, so the ops before keep their numbers. */
    OTC_OP_STEEP_SIGMOID,
    /* IEEE math as ONNX and numpy define it (no clamp, no floor) */
    OTC_OP_SQRT,
    OTC_OP_COS,
    OTC_OP_RECIPROCAL,
    OTC_OP_IDENTITY, /* the last activation op (OTC_OP_SIGMOID .. OTC_OP_IDENTITY) */
    /* structure */
    OTC_OP_MATMUL,        /* [M,K] x [K,N] -> [M,N]; M may be the batch */
    OTC_OP_ROW_BROADCAST, /* inputs (v [N], like [B,N]) -> v repeated per row, shape of like */
    OTC_OP_SUM,           /* all elements -> scalar */
    OTC_OP_MEAN,          /* all elements -> scalar */
    OTC_OP_RESHAPE,       /* to node.shape (same per-sample element count) */
    OTC_OP_FLATTEN,       /* [B,...] -> [B,prod] */
    OTC_OP_CONCAT,        /* variadic, along node.axis */
    OTC_OP_SLICE,         /* node.axis, node.start, node.len */
    OTC_OP_SELECT,        /* node.axis, index node.start; drops the axis */
    OTC_OP_SOFTMAX,       /* along the last axis */
    OTC_OP_LOG_SOFTMAX,   /* along the last axis */
    /* losses -> scalar, mean over elements (MSE, BCE) or over rows (softmax CE) */
    OTC_OP_MSE,        /* (pred, target) */
    OTC_OP_BCE,        /* (probability, target in [0,1]) */
    OTC_OP_SOFTMAX_CE, /* (logits [B,C], class indices [B] or [B,1] stored as floats) */
    /* NEAT */
    OTC_OP_NEURON, /* act(bias + scale * agg_i(w_i * src_i[:, col_i])) -> [B,1], agg the
                      node's aggregation (otc_agg, sum unless set);
                      inputs (W [k], b [1], src_0 .. src_{k-1}), node.cols[i] */
    OTC_OP_DELAY,  /* the value its input had on the previous step (zeros at first) */
    /* images, NCHW with the batch leading; attributes in node.win (otc/graph.h otc_window) */
    OTC_OP_CONV2D,    /* (x [B,C,H,W], weight [O,C/groups,KH,KW], optional bias [O]) ->
                         [B,O,OH,OW]; stride, padding (zeros), dilation, groups */
    OTC_OP_MAXPOOL2D, /* x [B,C,H,W] -> [B,C,OH,OW]; kernel, stride, padding (never chosen);
                         the gradient goes to the first maximum of each window */
    OTC_OP_AVGPOOL2D, /* as maxpool2d, the mean of each window; padding counts as zeros in it
                         (PyTorch's count_include_pad=True: the divisor is always KH*KW) */
    OTC_OP_COUNT
} otc_op;

typedef enum {
    OTC_ACT_IDENTITY,
    OTC_ACT_SIGMOID,
    OTC_ACT_TANH,
    OTC_ACT_RELU,
    OTC_ACT_LEAKY_RELU,
    OTC_ACT_SOFTPLUS,
    OTC_ACT_ELU,
    OTC_ACT_GAUSSIAN,
    OTC_ACT_SIN,
    OTC_ACT_ABS,
    OTC_ACT_STEEP_SIGMOID, /* NEAT's 1/(1+exp(-OTC_STEEPNESS x)) */
    /* neat-python 2.1's activations (neat/activations.py) with its clamps and constants, where
     * otc's own of the same name differs: sigmoid(5x), tanh(2.5x), sin(5x), exp(-5x^2),
     * 0.2 softplus(5x), each argument clamped as neat-python clamps it. neat-python's relu,
     * elu, lelu, identity and abs are otc's relu, elu (a = 1), leaky_relu (a = 0.005),
     * identity and abs. */
    OTC_ACT_NP_SIGMOID,
    OTC_ACT_NP_TANH,
    OTC_ACT_NP_SIN,
    OTC_ACT_NP_GAUSS,
    OTC_ACT_SELU,
    OTC_ACT_NP_SOFTPLUS,
    OTC_ACT_CLAMPED,
    OTC_ACT_INV, /* 1/x, 0 at x = 0 */
    OTC_ACT_LOG, /* log(max(x, 1e-7)) */
    OTC_ACT_EXP, /* exp(x clamped to [-60, 60]) */
    OTC_ACT_HAT, /* max(0, 1 - |x|) */
    OTC_ACT_SQUARE,
    OTC_ACT_CUBE,
    /* IEEE math as ONNX and numpy define it: sqrt of a negative is NaN, 1/0 is inf (unlike
     * neat-python's inv) */
    OTC_ACT_SQRT,
    OTC_ACT_COS,
    OTC_ACT_RECIPROCAL,
    OTC_ACT_COUNT
} otc_act;

/* Activations before neat-python's set: what random graphs draw from by default. */
#define OTC_ACT_CLASSIC_COUNT OTC_ACT_NP_SIGMOID

/* The steep sigmoid's slope: Stanley's NEAT choice, near-linear over [-1, 1]. */
#define OTC_STEEPNESS 4.9

/* How a Neuron combines its weighted inputs t_i = w_i * src_i: neat-python 2.1's aggregations
 * (neat/aggregations.py). Over no inputs: product 1, every other 0. min, max and maxabs take
 * the first input that attains the extreme (maxabs: the largest |t_i|, its sign kept); median
 * is the middle of the sorted inputs, the mean of the two middle ones for an even count and
 * the mean for one or two inputs; mean is sum / k. */
typedef enum {
    OTC_AGG_SUM, /* the default (0) */
    OTC_AGG_PRODUCT,
    OTC_AGG_MIN,
    OTC_AGG_MAX,
    OTC_AGG_MAXABS,
    OTC_AGG_MEDIAN,
    OTC_AGG_MEAN,
    OTC_AGG_COUNT
} otc_agg;

/* "sum", "median", ...; NULL for a value outside otc_agg. */
const char *otc_agg_name(int agg);
/* Aggregation by name; -1 if unknown. */
int otc_agg_from_name(const char *name);

/* Scalar activation, described once as expression trees (otc/expr.h) in the input x, the
 * output y and the parameter a, which the interpreter and both renderers read. */
typedef struct {
    const char *name;
    const otc_expr *f;  /* y = f(x, a) */
    const otc_expr *df; /* dy/dx in x, y and a */
    float default_a;    /* LeakyReLU slope 0.01, ELU alpha 1.0; 0 where unused */
} otc_act_info;

const otc_act_info *otc_act_get(otc_act act);
/* Activation by name ("tanh"); -1 if unknown. */
int otc_act_from_name(const char *name);

typedef enum {
    OTC_OPKIND_SOURCE,      /* input, parameter */
    OTC_OPKIND_ELEMENTWISE, /* unary or binary elementwise (fusable) */
    OTC_OPKIND_STRUCTURAL,  /* shape changes, reductions, matmul, softmax */
    OTC_OPKIND_LOSS,
    OTC_OPKIND_NEURON,
    OTC_OPKIND_STATE
} otc_op_kind;

typedef struct {
    const char *name; /* "matmul", "neuron", ... (the name in model files) */
    int min_inputs;
    int max_inputs; /* -1 for variadic */
    otc_op_kind kind;
    int act; /* the otc_act for activation ops, -1 otherwise */
    /* Elementwise ops' math (read through otc_op_map_expr / otc_op_grad_expr, which also
     * answer for the activation ops): the value in the inputs x, x1 and the parameter a, and
     * its derivative by each input in x, x1, y and a (NULL: no gradient flows there).
     * MSE and BCE (read through otc_op_loss_expr / otc_op_loss_grad_expr): the loss of one
     * element, prediction x and target x1, whose mean is the op's value, and its
     * derivatives by x and x1; softmax_ce has none (a row reduction). */
    const otc_expr *map;
    const otc_expr *d[2];
} otc_op_info;

const otc_op_info *otc_op_get(otc_op op);
/* The value of an elementwise op as an expression tree; NULL for other ops. */
const otc_expr *otc_op_map_expr(otc_op op);
/* d(value)/d(input i) of an elementwise op; NULL when no gradient flows to input i. The
 * gradient of input i is the incoming gradient times this. */
const otc_expr *otc_op_grad_expr(otc_op op, int input);
/* A loss that is the mean over the elements of a per-element loss (MSE, BCE): that loss of
 * the prediction x and the target x1; NULL for other ops. */
const otc_expr *otc_op_loss_expr(otc_op op);
/* Its derivative by input i (0 the prediction, 1 the target). The gradient of input i at an
 * element is (the incoming gradient / the element count) times this. */
const otc_expr *otc_op_loss_grad_expr(otc_op op, int input);
/* Op by name; -1 if unknown. */
int otc_op_from_name(const char *name);

#endif
