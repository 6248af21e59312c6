/* The activation table: each activation and its derivative once, as expression trees that the
 * interpreter evaluates and both renderers spell. */
#include <pthread.h>
#include <string.h>

#include "otc/expr_spell.h"
#include "op_table.h"
#include "otc/ops.h"

/* The sigmoid of p, written once for sigmoid, softplus's derivative and the steep sigmoid. */
#define SIGMOID_OF(p) EX_DIV(EX_K(1), EX_ADD(EX_K(1), EX_EXP(EX_NEG(p))))
/* d/dx of a sigmoid from its output: y (1 - y). */
#define SIGMOID_D EX_MUL(EX_Y, EX_SUB(EX_K(1), EX_Y))
#define POSITIVE  EX_GT(EX_X, EX_K(0))

/* neat-python's activations (neat/activations.py, 2.1): the argument scaled, then clamped
 * as neat-python clamps it (max(-lim, min(lim, t))); the derivative is 0 where the clamp
 * holds, and at a kink (clamped and hat at +-1, hat at 0) it is the flat side's, 0. */
#define CLAMP(t, lim)                                                                              \
    EX_SEL(EX_GT(t, EX_K(lim)), EX_K(lim), EX_SEL(EX_LT(t, EX_K(-(lim))), EX_K(-(lim)), t))
#define INSIDE(t, lim)  EX_LT(EX_ABS(t), EX_K(lim))
#define MASK(t, lim, d) EX_SEL(INSIDE(t, lim), d, EX_K(0))
#define NP_LIM          60.0 /* sigmoid, tanh, sin, softplus, exp */
#define NP_GAUSS_LIM    3.4
#define NP_LOG_FLOOR    1e-7
/* SELU's lambda and alpha as neat-python spells them; lambda * alpha once, in double. */
#define SELU_LAMBDA 1.0507009873554804934193349852946
#define SELU_ALPHA  1.6732632423543772848170429916717
/* The scaled arguments, one object each (a subtree used twice is one object). */
static const otc_expr x5 = {.op = OTC_EX_MUL, .a = EX_K(5), .b = EX_X};
static const otc_expr x25 = {.op = OTC_EX_MUL, .a = EX_K(2.5), .b = EX_X};
static const otc_expr c5 = {.op = OTC_EX_SELECT,
                            .a = EX_GT(&x5, EX_K(NP_LIM)),
                            .b = EX_K(NP_LIM),
                            .c = EX_SEL(EX_LT(&x5, EX_K(-NP_LIM)), EX_K(-NP_LIM), &x5)};
static const otc_expr c25 = {.op = OTC_EX_SELECT,
                             .a = EX_GT(&x25, EX_K(NP_LIM)),
                             .b = EX_K(NP_LIM),
                             .c = EX_SEL(EX_LT(&x25, EX_K(-NP_LIM)), EX_K(-NP_LIM), &x25)};
static const otc_expr cg = {
    .op = OTC_EX_SELECT,
    .a = EX_GT(EX_X, EX_K(NP_GAUSS_LIM)),
    .b = EX_K(NP_GAUSS_LIM),
    .c = EX_SEL(EX_LT(EX_X, EX_K(-NP_GAUSS_LIM)), EX_K(-NP_GAUSS_LIM), EX_X)};
static const otc_expr c5_sigmoid = {
    .op = OTC_EX_DIV, .a = EX_K(1), .b = EX_ADD(EX_K(1), EX_EXP(EX_NEG(&c5)))};

/* Each activation: f(x, a) and its derivative df(x, y, a) given y = f(x). */
static const otc_act_info acts[] = {
    [OTC_ACT_IDENTITY] = {"identity", EX_X, EX_K(1), 0.0f},
    [OTC_ACT_SIGMOID] = {"sigmoid", SIGMOID_OF(EX_X), SIGMOID_D, 0.0f},
    [OTC_ACT_TANH] = {"tanh", EX_TANH(EX_X), EX_SUB(EX_K(1), EX_MUL(EX_Y, EX_Y)), 0.0f},
    [OTC_ACT_RELU] = {"relu", EX_SEL(POSITIVE, EX_X, EX_K(0)), EX_SEL(POSITIVE, EX_K(1), EX_K(0)),
                      0.0f},
    [OTC_ACT_LEAKY_RELU] = {"leaky_relu", EX_SEL(POSITIVE, EX_X, EX_MUL(EX_A, EX_X)),
                            EX_SEL(POSITIVE, EX_K(1), EX_A), 0.01f},
    /* log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|). */
    [OTC_ACT_SOFTPLUS] = {"softplus",
                          EX_ADD(EX_MAX(EX_X, EX_K(0)), EX_LOG1P(EX_EXP(EX_NEG(EX_ABS(EX_X))))),
                          SIGMOID_OF(EX_X), 0.0f},
    [OTC_ACT_ELU] = {"elu", EX_SEL(POSITIVE, EX_X, EX_MUL(EX_A, EX_EXPM1(EX_X))),
                     EX_SEL(POSITIVE, EX_K(1), EX_ADD(EX_Y, EX_A)), 1.0f},
    [OTC_ACT_GAUSSIAN] = {"gaussian", EX_EXP(EX_NEG(EX_MUL(EX_X, EX_X))),
                          EX_MUL(EX_MUL(EX_K(-2), EX_X), EX_Y), 0.0f},
    [OTC_ACT_SIN] = {"sin", EX_SIN(EX_X), EX_COS(EX_X), 0.0f},
    [OTC_ACT_ABS] = {"abs", EX_ABS(EX_X),
                     EX_SEL(POSITIVE, EX_K(1), EX_SEL(EX_LT(EX_X, EX_K(0)), EX_K(-1), EX_K(0))),
                     0.0f},
    [OTC_ACT_STEEP_SIGMOID] = {"steep_sigmoid", SIGMOID_OF(EX_MUL(EX_K(OTC_STEEPNESS), EX_X)),
                               EX_MUL(EX_K(OTC_STEEPNESS), SIGMOID_D), 0.0f},
    [OTC_ACT_NP_SIGMOID] = {"np_sigmoid", &c5_sigmoid,
                            MASK(&x5, NP_LIM, EX_MUL(EX_K(5), SIGMOID_D)), 0.0f},
    [OTC_ACT_NP_TANH] = {"np_tanh", EX_TANH(&c25),
                         MASK(&x25, NP_LIM, EX_MUL(EX_K(2.5), EX_SUB(EX_K(1), EX_MUL(EX_Y, EX_Y)))),
                         0.0f},
    [OTC_ACT_NP_SIN] = {"np_sin", EX_SIN(&c5), MASK(&x5, NP_LIM, EX_MUL(EX_K(5), EX_COS(&c5))),
                        0.0f},
    [OTC_ACT_NP_GAUSS] = {"np_gauss", EX_EXP(EX_MUL(EX_K(-5), EX_MUL(&cg, &cg))),
                          MASK(EX_X, NP_GAUSS_LIM, EX_MUL(EX_MUL(EX_K(-10), EX_X), EX_Y)), 0.0f},
    [OTC_ACT_SELU] = {"selu",
                      EX_SEL(POSITIVE, EX_MUL(EX_K(SELU_LAMBDA), EX_X),
                             EX_MUL(EX_K(SELU_LAMBDA *SELU_ALPHA), EX_EXPM1(EX_X))),
                      EX_SEL(POSITIVE, EX_K(SELU_LAMBDA),
                             EX_ADD(EX_Y, EX_K(SELU_LAMBDA *SELU_ALPHA))),
                      0.0f},
    /* 0.2 log(1 + e^c) as 0.2 (max(c, 0) + log1p(e^-|c|)); d/dx = sigmoid(c) inside. */
    [OTC_ACT_NP_SOFTPLUS] = {"np_softplus",
                             EX_MUL(EX_K(0.2), EX_ADD(EX_MAX(&c5, EX_K(0)),
                                                      EX_LOG1P(EX_EXP(EX_NEG(EX_ABS(&c5)))))),
                             MASK(&x5, NP_LIM, &c5_sigmoid), 0.0f},
    [OTC_ACT_CLAMPED] = {"clamped", CLAMP(EX_X, 1.0), MASK(EX_X, 1.0, EX_K(1)), 0.0f},
    /* neat-python answers 0 where 1/x raises (x = 0). */
    [OTC_ACT_INV] = {"inv", EX_SEL(EX_EQ(EX_X, EX_K(0)), EX_K(0), EX_DIV(EX_K(1), EX_X)),
                     EX_NEG(EX_MUL(EX_Y, EX_Y)), 0.0f},
    [OTC_ACT_LOG] = {"log", EX_LOG(EX_MAX(EX_X, EX_K(NP_LOG_FLOOR))),
                     EX_SEL(EX_GT(EX_X, EX_K(NP_LOG_FLOOR)), EX_DIV(EX_K(1), EX_X), EX_K(0)), 0.0f},
    [OTC_ACT_EXP] = {"exp", EX_EXP(CLAMP(EX_X, NP_LIM)), MASK(EX_X, NP_LIM, EX_Y), 0.0f},
    [OTC_ACT_HAT] = {"hat", EX_MAX(EX_SUB(EX_K(1), EX_ABS(EX_X)), EX_K(0)),
                     MASK(EX_X, 1.0,
                          EX_SEL(POSITIVE, EX_K(-1),
                                 EX_SEL(EX_LT(EX_X, EX_K(0)), EX_K(1), EX_K(0)))),
                     0.0f},
    [OTC_ACT_SQUARE] = {"square", EX_MUL(EX_X, EX_X), EX_MUL(EX_K(2), EX_X), 0.0f},
    [OTC_ACT_CUBE] = {"cube", EX_MUL(EX_MUL(EX_X, EX_X), EX_X), EX_MUL(EX_K(3), EX_MUL(EX_X, EX_X)),
                      0.0f},
    /* d/dx sqrt(x) = 0.5 / sqrt(x) = 0.5 / y: inf at +-0, NaN below 0, as the value. */
    [OTC_ACT_SQRT] = {"sqrt", EX_SQRT(EX_X), EX_DIV(EX_K(0.5), EX_Y), 0.0f},
    [OTC_ACT_COS] = {"cos", EX_COS(EX_X), EX_NEG(EX_SIN(EX_X)), 0.0f},
    /* d/dx 1/x = -1/x^2 = -y^2. */
    [OTC_ACT_RECIPROCAL] = {"reciprocal", EX_DIV(EX_K(1), EX_X), EX_NEG(EX_MUL(EX_Y, EX_Y)), 0.0f},
};
_Static_assert(sizeof acts / sizeof acts[0] == OTC_ACT_COUNT, "every activation has its row");

const otc_act_info *otc_act_get(otc_act act) {
    if ((int)act < 0 || act >= OTC_ACT_COUNT) return NULL;
    return &acts[act];
}

int otc_act_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < OTC_ACT_COUNT; i++)
        if (!strcmp(acts[i].name, name)) return i;
    return -1;
}

static otc_expr_program programs[OTC_ACT_COUNT][2];
static pthread_once_t compiled = PTHREAD_ONCE_INIT;

static void compile_programs(void) {
    for (int a = 0; a < OTC_ACT_COUNT; a++) {
        /* The trees are a few steps each: a failure here is a table bug the tests catch. */
        if (!otc_expr_compile(acts[a].f, &programs[a][0])) programs[a][0].n = 0;
        if (!otc_expr_compile(acts[a].df, &programs[a][1])) programs[a][1].n = 0;
    }
}

const otc_expr_program *otc_act_program(int act, bool derivative) {
    if (act < 0 || act >= OTC_ACT_COUNT) return NULL;
    pthread_once(&compiled, compile_programs);
    const otc_expr_program *p = &programs[act][derivative ? 1 : 0];
    return p->n > 0 ? p : NULL;
}
