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
