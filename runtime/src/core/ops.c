/* The op table: every op described once — name, arity, kind, shape rule and interpreter
 * kernels. The compiler reads the public part (otc_op_get); the interpreter the rest. */
#include <pthread.h>
#include <string.h>

#include "kernels.h"
#include "otc/expr_spell.h"
#include "shape_rules.h"

#define ROW(op, name, lo, hi, kind, act, shape, fwd, bwd)                                          \
    [op] = {{name, lo, hi, kind, act, NULL, {NULL, NULL}}, shape, fwd, bwd}
/* An elementwise op: its value and derivatives as expressions, run by the generic kernels. */
#define MAP_ROW(op, name, arity, value, d0, d1)                                                    \
    [op] = {{name, arity, arity, OTC_OPKIND_ELEMENTWISE, -1, value, {d0, d1}},                     \
            arity == 1 ? otc_shape_same : otc_shape_binary,                                        \
            otc_fwd_map,                                                                           \
            otc_bwd_map}
/* A loss that is the mean over all elements of a per-element loss of the prediction x and
 * the target x1, given as a tree with its derivatives by both (otc_op_loss_expr). */
#define LOSS_ROW(op, name, term, d0, d1)                                                           \
    [op] = {{name, 2, 2, OTC_OPKIND_LOSS, -1, term, {d0, d1}},                                     \
            otc_shape_loss,                                                                        \
            otc_fwd_mean_loss,                                                                     \
            otc_bwd_mean_loss}
/* An activation op: the activation table's expressions (otc_op_map_expr reads them). */
#define ACT_ROW(op, name, act)                                                                     \
    ROW(op, name, 1, 1, OTC_OPKIND_ELEMENTWISE, act, otc_shape_same, otc_fwd_map, otc_bwd_map)

/* The losses' shared subtrees (one object each, so renderers compute them once). */
#define BCE_EPS 1e-7f /* the probability clamp of BCE */
static const otc_expr mse_diff = {.op = OTC_EX_SUB, .a = EX_X, .b = EX_X1};
static const otc_expr bce_q = {
    .op = OTC_EX_SELECT,
    .a = EX_LT(EX_X, EX_K(BCE_EPS)),
    .b = EX_K(BCE_EPS),
    .c = EX_SEL(EX_GT(EX_X, EX_K(1.0f - BCE_EPS)), EX_K(1.0f - BCE_EPS), EX_X)};
static const otc_expr bce_1q = {.op = OTC_EX_SUB, .a = EX_K(1), .b = &bce_q};
#define MSE_DIFF (&mse_diff)
#define BCE_Q    (&bce_q)
#define BCE_1Q   (&bce_1q) /* 1 - q */
static const otc_op_def defs[] = {
    ROW(OTC_OP_INPUT, "input", 0, 0, OTC_OPKIND_SOURCE, -1, otc_shape_source, NULL, NULL),
    ROW(OTC_OP_PARAMETER, "parameter", 0, 0, OTC_OPKIND_SOURCE, -1, otc_shape_source, NULL, NULL),
    MAP_ROW(OTC_OP_ADD, "add", 2, EX_ADD(EX_X, EX_X1), EX_K(1), EX_K(1)),
    MAP_ROW(OTC_OP_SUB, "sub", 2, EX_SUB(EX_X, EX_X1), EX_K(1), EX_K(-1)),
    MAP_ROW(OTC_OP_MUL, "mul", 2, EX_MUL(EX_X, EX_X1), EX_X1, EX_X),
    /* Division by zero follows IEEE (inf/nan) everywhere: no hidden epsilon. d/dx1 = -x/x1^2
     * = -y/x1, from the saved output. */
    MAP_ROW(OTC_OP_DIV, "div", 2, EX_DIV(EX_X, EX_X1), EX_DIV(EX_K(1), EX_X1),
            EX_NEG(EX_DIV(EX_Y, EX_X1))),
    MAP_ROW(OTC_OP_NEG, "neg", 1, EX_NEG(EX_X), EX_K(-1), NULL),
    MAP_ROW(OTC_OP_SCALE, "scale", 1, EX_MUL(EX_X, EX_A), EX_A, NULL),
    /* The value passes, the gradient stops. */
    [OTC_OP_DETACH] = {{"detach", 1, 1, OTC_OPKIND_ELEMENTWISE, -1, EX_X, {NULL, NULL}},
                       otc_shape_same,
                       otc_fwd_map,
                       NULL},
    ACT_ROW(OTC_OP_SIGMOID, "sigmoid", OTC_ACT_SIGMOID),
    ACT_ROW(OTC_OP_TANH, "tanh", OTC_ACT_TANH),
    ACT_ROW(OTC_OP_RELU, "relu", OTC_ACT_RELU),
    ACT_ROW(OTC_OP_LEAKY_RELU, "leaky_relu", OTC_ACT_LEAKY_RELU),
    ACT_ROW(OTC_OP_SOFTPLUS, "softplus", OTC_ACT_SOFTPLUS),
    ACT_ROW(OTC_OP_ELU, "elu", OTC_ACT_ELU),
    ACT_ROW(OTC_OP_GAUSSIAN, "gaussian", OTC_ACT_GAUSSIAN),
    ACT_ROW(OTC_OP_SIN, "sin", OTC_ACT_SIN),
    ACT_ROW(OTC_OP_ABS, "abs", OTC_ACT_ABS),
    ACT_ROW(OTC_OP_NP_SIGMOID, "np_sigmoid", OTC_ACT_NP_SIGMOID),
    ACT_ROW(OTC_OP_NP_TANH, "np_tanh", OTC_ACT_NP_TANH),
    ACT_ROW(OTC_OP_NP_SIN, "np_sin", OTC_ACT_NP_SIN),
    ACT_ROW(OTC_OP_NP_GAUSS, "np_gauss", OTC_ACT_NP_GAUSS),
    ACT_ROW(OTC_OP_SELU, "selu", OTC_ACT_SELU),
    ACT_ROW(OTC_OP_NP_SOFTPLUS, "np_softplus", OTC_ACT_NP_SOFTPLUS),
    ACT_ROW(OTC_OP_CLAMPED, "clamped", OTC_ACT_CLAMPED),
    ACT_ROW(OTC_OP_INV, "inv", OTC_ACT_INV),
    ACT_ROW(OTC_OP_LOG, "log", OTC_ACT_LOG),
    ACT_ROW(OTC_OP_EXP, "exp", OTC_ACT_EXP),
    ACT_ROW(OTC_OP_HAT, "hat", OTC_ACT_HAT),
    ACT_ROW(OTC_OP_SQUARE, "square", OTC_ACT_SQUARE),
    ACT_ROW(OTC_OP_CUBE, "cube", OTC_ACT_CUBE),
    ACT_ROW(OTC_OP_STEEP_SIGMOID, "steep_sigmoid", OTC_ACT_STEEP_SIGMOID),
    ACT_ROW(OTC_OP_SQRT, "sqrt", OTC_ACT_SQRT),
    ACT_ROW(OTC_OP_COS, "cos", OTC_ACT_COS),
    ACT_ROW(OTC_OP_RECIPROCAL, "reciprocal", OTC_ACT_RECIPROCAL),
    ACT_ROW(OTC_OP_IDENTITY, "identity", OTC_ACT_IDENTITY),
    ROW(OTC_OP_MATMUL, "matmul", 2, 2, OTC_OPKIND_STRUCTURAL, -1, otc_shape_matmul, otc_fwd_matmul,
        otc_bwd_matmul),
    ROW(OTC_OP_ROW_BROADCAST, "row_broadcast", 2, 2, OTC_OPKIND_STRUCTURAL, -1,
        otc_shape_row_broadcast, otc_fwd_row_broadcast, otc_bwd_row_broadcast),
    ROW(OTC_OP_SUM, "sum", 1, 1, OTC_OPKIND_STRUCTURAL, -1, otc_shape_reduce, otc_fwd_sum,
        otc_bwd_sum),
    ROW(OTC_OP_MEAN, "mean", 1, 1, OTC_OPKIND_STRUCTURAL, -1, otc_shape_reduce, otc_fwd_mean,
        otc_bwd_mean),
    ROW(OTC_OP_RESHAPE, "reshape", 1, 1, OTC_OPKIND_STRUCTURAL, -1, otc_shape_reshape,
        otc_fwd_reshape, otc_bwd_reshape),
    ROW(OTC_OP_FLATTEN, "flatten", 1, 1, OTC_OPKIND_STRUCTURAL, -1, otc_shape_flatten,
        otc_fwd_flatten, otc_bwd_flatten),
    ROW(OTC_OP_CONCAT, "concat", 1, -1, OTC_OPKIND_STRUCTURAL, -1, otc_shape_concat, otc_fwd_concat,
        otc_bwd_concat),
    ROW(OTC_OP_SLICE, "slice", 1, 1, OTC_OPKIND_STRUCTURAL, -1, otc_shape_slice, otc_fwd_slice,
        otc_bwd_slice),
    ROW(OTC_OP_SELECT, "select", 1, 1, OTC_OPKIND_STRUCTURAL, -1, otc_shape_select, otc_fwd_select,
        otc_bwd_select),
    ROW(OTC_OP_SOFTMAX, "softmax", 1, 1, OTC_OPKIND_STRUCTURAL, -1, otc_shape_softmax,
        otc_fwd_softmax, otc_bwd_softmax),
    ROW(OTC_OP_LOG_SOFTMAX, "log_softmax", 1, 1, OTC_OPKIND_STRUCTURAL, -1, otc_shape_softmax,
        otc_fwd_log_softmax, otc_bwd_log_softmax),
    LOSS_ROW(OTC_OP_MSE, "mse", EX_MUL(MSE_DIFF, MSE_DIFF), EX_MUL(EX_K(2), MSE_DIFF),
             EX_MUL(EX_K(-2), MSE_DIFF)),
    /* -(t log q + (1-t) log(1-q)) with q the probability clamped to [eps, 1-eps]. The
     * gradient uses the clamped q without masking the clamp (as PyTorch does): a saturated
     * prediction still gets a large gradient in the right direction instead of a zero one
     * that would stall training. d/dt = log(1-q) - log q. */
    LOSS_ROW(OTC_OP_BCE, "bce",
             EX_NEG(EX_ADD(EX_MUL(EX_X1, EX_LOG(BCE_Q)),
                           EX_MUL(EX_SUB(EX_K(1), EX_X1), EX_LOG(BCE_1Q)))),
             EX_DIV(EX_SUB(BCE_Q, EX_X1), EX_MUL(BCE_Q, BCE_1Q)),
             EX_SUB(EX_LOG(BCE_1Q), EX_LOG(BCE_Q))),
    ROW(OTC_OP_SOFTMAX_CE, "softmax_ce", 2, 2, OTC_OPKIND_LOSS, -1, otc_shape_softmax_ce,
        otc_fwd_softmax_ce, otc_bwd_softmax_ce),
    ROW(OTC_OP_NEURON, "neuron", 2, -1, OTC_OPKIND_NEURON, -1, otc_shape_neuron, otc_fwd_neuron,
        otc_bwd_neuron),
    ROW(OTC_OP_DELAY, "delay", 1, 1, OTC_OPKIND_STATE, -1, otc_shape_delay, NULL, NULL),
    ROW(OTC_OP_CONV2D, "conv2d", 2, 3, OTC_OPKIND_STRUCTURAL, -1, otc_shape_conv2d, otc_fwd_conv2d,
        otc_bwd_conv2d),
    ROW(OTC_OP_MAXPOOL2D, "maxpool2d", 1, 1, OTC_OPKIND_STRUCTURAL, -1, otc_shape_pool2d,
        otc_fwd_maxpool2d, otc_bwd_maxpool2d),
    ROW(OTC_OP_AVGPOOL2D, "avgpool2d", 1, 1, OTC_OPKIND_STRUCTURAL, -1, otc_shape_pool2d,
        otc_fwd_avgpool2d, otc_bwd_avgpool2d),
};

_Static_assert(sizeof defs / sizeof defs[0] == OTC_OP_COUNT, "every op has its row");

const otc_op_def *otc_op_def_get(otc_op op) {
    if ((int)op < 0 || op >= OTC_OP_COUNT) return NULL;
    return &defs[op];
}

const otc_op_info *otc_op_get(otc_op op) {
    const otc_op_def *d = otc_op_def_get(op);
    return d ? &d->info : NULL;
}

int otc_op_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < OTC_OP_COUNT; i++)
        if (!strcmp(defs[i].info.name, name)) return i;
    return -1;
}

const otc_expr *otc_op_map_expr(otc_op op) {
    const otc_op_info *info = otc_op_get(op);
    if (!info || info->kind != OTC_OPKIND_ELEMENTWISE) return NULL;
    if (info->act >= 0) return otc_act_get((otc_act)info->act)->f;
    return info->map;
}

const otc_expr *otc_op_grad_expr(otc_op op, int input) {
    const otc_op_info *info = otc_op_get(op);
    if (!info || info->kind != OTC_OPKIND_ELEMENTWISE || input < 0 || input >= 2) return NULL;
    if (info->act >= 0) return input == 0 ? otc_act_get((otc_act)info->act)->df : NULL;
    return info->d[input];
}

const otc_expr *otc_op_loss_expr(otc_op op) {
    const otc_op_info *info = otc_op_get(op);
    return info && info->kind == OTC_OPKIND_LOSS ? info->map : NULL;
}

const otc_expr *otc_op_loss_grad_expr(otc_op op, int input) {
    const otc_op_info *info = otc_op_get(op);
    if (!info || info->kind != OTC_OPKIND_LOSS || input < 0 || input >= 2) return NULL;
    return info->d[input];
}

/* [op][0]: the value, [op][1 + i]: the derivative by input i (elementwise ops with trees). */
static otc_expr_program programs[OTC_OP_COUNT][3];
static pthread_once_t compiled = PTHREAD_ONCE_INIT;

static void compile_programs(void) {
    for (int op = 0; op < OTC_OP_COUNT; op++) {
        const otc_expr *tree[3] = {defs[op].info.map, defs[op].info.d[0], defs[op].info.d[1]};
        for (int i = 0; i < 3; i++)
            if (!tree[i] || !otc_expr_compile(tree[i], &programs[op][i])) programs[op][i].n = 0;
    }
}

const otc_expr_program *otc_op_program(otc_op op, int which) {
    const otc_op_info *info = otc_op_get(op);
    if (!info || info->act >= 0 || which < -1 || which > 1) return NULL;
    pthread_once(&compiled, compile_programs);
    const otc_expr_program *p = &programs[op][which + 1];
    return p->n > 0 ? p : NULL;
}
