/* The optimisers' per-element update rules as expression trees (torch.optim's formulas), and
 * the per-step scalars they read: the one statement of the arithmetic that the interpreter
 * (optim.c), the emitted C and the LLVM JIT all follow, so their updates agree bit for bit. */
#include <math.h>

#include "otc/expr_spell.h"
#include "otc/optim.h"

#define P     EX_ARG(OTC_OPTIM_ARG_P)
#define G     EX_ARG(OTC_OPTIM_ARG_G)
#define M     EX_ARG(OTC_OPTIM_ARG_M)
#define V     EX_ARG(OTC_OPTIM_ARG_V)
#define MU    EX_ARG(OTC_OPTIM_ARG_MOMENTUM)
#define L2    EX_ARG(OTC_OPTIM_ARG_L2)
#define BETA1 EX_ARG(OTC_OPTIM_ARG_BETA1)
#define BETA2 EX_ARG(OTC_OPTIM_ARG_BETA2)
#define EPS   EX_ARG(OTC_OPTIM_ARG_EPS)
#define LR    EX_ARG(OTC_OPTIM_ARG_LR)

/* The gradient with L2 weight decay, g + wd * p. With wd 0 this is g exactly for every
 * finite p (the sign of a zero included, as far as the update can tell), so one rule serves
 * both and the compiled code need not be specialised on the decay. */
static const otc_expr grad_l2 = {.op = OTC_EX_ADD, .a = G, .b = EX_MUL(L2, P)};
#define GD (&grad_l2)

/* SGD momentum buffer, dampening 0: b = mu b + g (b starts at 0, so step 1 stores g). */
static const otc_expr sgd_m = {.op = OTC_EX_ADD, .a = EX_MUL(MU, M), .b = GD};

/* Adam's moments from a gradient g. */
#define ADAM_M(g) EX_ADD(EX_MUL(BETA1, M), EX_MUL(EX_SUB(EX_K(1), BETA1), g))
#define ADAM_V(g) EX_ADD(EX_MUL(BETA2, V), EX_MUL(EX_MUL(EX_SUB(EX_K(1), BETA2), g), g))
/* step_size m / (sqrt(v) / sqrt(1 - beta2^t) + eps), from the new m and v */
#define ADAM_STEP                                                                                  \
    EX_DIV(EX_MUL(EX_ARG(OTC_OPTIM_ARG_STEP_SIZE), M),                                             \
           EX_ADD(EX_DIV(EX_SQRT(V), EX_ARG(OTC_OPTIM_ARG_BC2_SQRT)), EPS))

static const otc_optim_rule rules[] = {
    [OTC_OPTIM_RULE_SGD] = {"sgd", NULL, NULL, EX_SUB(P, EX_MUL(LR, GD))},
    [OTC_OPTIM_RULE_MOMENTUM] = {"sgd_momentum", &sgd_m, NULL, EX_SUB(P, EX_MUL(LR, M))},
    [OTC_OPTIM_RULE_NESTEROV] = {"sgd_nesterov", &sgd_m, NULL,
                                 EX_SUB(P, EX_MUL(LR, EX_ADD(GD, EX_MUL(MU, M))))},
    /* Adam: L2 decay in the gradient. */
    [OTC_OPTIM_RULE_ADAM] = {"adam", ADAM_M(GD), ADAM_V(GD), EX_SUB(P, ADAM_STEP)},
    /* AdamW: decoupled decay, p (1 - lr wd) first, the plain gradient in the moments. */
    [OTC_OPTIM_RULE_ADAMW] = {"adamw", ADAM_M(G), ADAM_V(G),
                              EX_SUB(EX_MUL(P, EX_ARG(OTC_OPTIM_ARG_DECAY)), ADAM_STEP)},
};
_Static_assert(sizeof rules / sizeof rules[0] == OTC_OPTIM_RULE_COUNT, "every rule has its row");
_Static_assert((int)OTC_OPTIM_ARG_COUNT <= (int)OTC_EX_MAX_ARGS, "the arguments fit an expression");

const otc_optim_rule *otc_optim_rule_get(otc_optim_rule_id rule) {
    return (unsigned)rule < OTC_OPTIM_RULE_COUNT ? &rules[rule] : NULL;
}

otc_optim_rule_id otc_optim_rule_of(const otc_optim_config *c) {
    if (c->kind == OTC_OPTIM_ADAM) return OTC_OPTIM_RULE_ADAM;
    if (c->kind == OTC_OPTIM_ADAMW) return OTC_OPTIM_RULE_ADAMW;
    if (c->momentum == 0.0f) return OTC_OPTIM_RULE_SGD;
    return c->nesterov ? OTC_OPTIM_RULE_NESTEROV : OTC_OPTIM_RULE_MOMENTUM;
}

void otc_optim_step_args(const otc_optim_config *c, long t, float args[OTC_OPTIM_ARG_COUNT]) {
    const bool adam = c->kind != OTC_OPTIM_SGD;
    for (int i = 0; i < OTC_OPTIM_ARG_COUNT; i++) args[i] = 0.0f;
    args[OTC_OPTIM_ARG_MOMENTUM] = c->momentum;
    args[OTC_OPTIM_ARG_L2] = c->kind == OTC_OPTIM_ADAMW ? 0.0f : c->weight_decay;
    args[OTC_OPTIM_ARG_BETA1] = c->beta1;
    args[OTC_OPTIM_ARG_BETA2] = c->beta2;
    args[OTC_OPTIM_ARG_EPS] = c->eps;
    args[OTC_OPTIM_ARG_LR] = c->lr;
    args[OTC_OPTIM_ARG_DECAY] = c->kind == OTC_OPTIM_ADAMW ? 1.0f - c->lr * c->weight_decay : 1.0f;
    /* Bias corrections in double: 1 - beta^t loses digits in float for small t. */
    const double bc1 = 1.0 - pow((double)c->beta1, (double)t);
    const double bc2 = 1.0 - pow((double)c->beta2, (double)t);
    args[OTC_OPTIM_ARG_STEP_SIZE] = adam ? (float)((double)c->lr / bc1) : 0.0f;
    args[OTC_OPTIM_ARG_BC2_SQRT] = adam ? (float)sqrt(bc2) : 1.0f;
}
