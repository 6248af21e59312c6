/* Optimisers (SGD with momentum/Nesterov, Adam, AdamW) and learning-rate schedules. */
#ifndef OTC_OPTIM_H
#define OTC_OPTIM_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "expr.h"

typedef enum { OTC_OPTIM_SGD, OTC_OPTIM_ADAM, OTC_OPTIM_ADAMW } otc_optim_kind;

typedef struct {
    otc_optim_kind kind;
    float lr;
    float momentum;     /* SGD */
    bool nesterov;      /* SGD */
    float beta1, beta2; /* Adam/AdamW */
    float eps;
    float weight_decay; /* SGD/Adam: L2 added to the gradient; AdamW: decoupled */
} otc_optim_config;

/* PyTorch's defaults for the kind (lr 0.01 for SGD, 0.001 for Adam/AdamW, betas 0.9/0.999,
 * eps 1e-8, AdamW weight decay 0.01). */
otc_optim_config otc_optim_defaults(otc_optim_kind kind);
/* "sgd", "adam", "adamw"; -1 if unknown. */
int otc_optim_kind_from_name(const char *name);
/* The kind's name, as otc_optim_kind_from_name reads it. */
const char *otc_optim_kind_name(otc_optim_kind kind);

typedef struct otc_optimizer otc_optimizer;

otc_optimizer *otc_optimizer_new(const otc_optim_config *config);
void otc_optimizer_free(otc_optimizer *opt);
const otc_optim_config *otc_optimizer_config(const otc_optimizer *opt);
void otc_optimizer_set_lr(otc_optimizer *opt, float lr);
/* Forget every step taken: the next step is a first step (t 1, moments and momentum 0), on
 * parameter groups of any sizes (one optimiser for many trainings in turn). The state's memory
 * is kept, zeroed, for a next step on groups of the same sizes. */
void otc_optimizer_reset(otc_optimizer *opt);
/* Steps taken so far (Adam's t). */
long otc_optimizer_steps(const otc_optimizer *opt);
/* One update of n parameter groups in place. State (momentum, moments) is kept per group
 * index; the sizes must be the same on every call (OTC_ERR_ARG otherwise). */
otc_status otc_optimizer_step(otc_optimizer *opt, int n, float *const *params,
                              const float *const *grads, const size_t *sizes);

/* ---- the update rules, written once as expression trees (otc/expr.h) ----
 * The interpreter evaluates them and both compiler renderers spell them. Their leaves are
 * OTC_EX_ARG n, n an otc_optim_arg: four per-element arrays, then scalars fixed by the
 * configuration, then scalars that change per step (with lr and the step count). */
typedef enum {
    OTC_OPTIM_ARG_P, /* the parameter */
    OTC_OPTIM_ARG_G, /* its gradient */
    OTC_OPTIM_ARG_M, /* momentum buffer / Adam's first moment */
    OTC_OPTIM_ARG_V, /* Adam's second moment */
    OTC_OPTIM_ARG_MOMENTUM,
    OTC_OPTIM_ARG_L2, /* weight decay added to the gradient (SGD, Adam) */
    OTC_OPTIM_ARG_BETA1,
    OTC_OPTIM_ARG_BETA2,
    OTC_OPTIM_ARG_EPS,
    OTC_OPTIM_ARG_LR,        /* per step from here on */
    OTC_OPTIM_ARG_DECAY,     /* AdamW: 1 - lr * weight_decay */
    OTC_OPTIM_ARG_STEP_SIZE, /* Adam: lr / (1 - beta1^t) */
    OTC_OPTIM_ARG_BC2_SQRT,  /* Adam: sqrt(1 - beta2^t) */
    OTC_OPTIM_ARG_COUNT
} otc_optim_arg;

#define OTC_OPTIM_ARG_FIRST_SCALAR   OTC_OPTIM_ARG_MOMENTUM
#define OTC_OPTIM_ARG_FIRST_PER_STEP OTC_OPTIM_ARG_LR

typedef enum {
    OTC_OPTIM_RULE_SGD,
    OTC_OPTIM_RULE_MOMENTUM,
    OTC_OPTIM_RULE_NESTEROV,
    OTC_OPTIM_RULE_ADAM,
    OTC_OPTIM_RULE_ADAMW,
    OTC_OPTIM_RULE_COUNT
} otc_optim_rule_id;

/* One element's update: m = tree m, then v = tree v, then p = tree p, in that order, each
 * tree reading the values stored before it (p's tree reads the new m and v). NULL: that
 * state is not kept. */
typedef struct {
    const char *name;
    const otc_expr *m, *v, *p;
} otc_optim_rule;

const otc_optim_rule *otc_optim_rule_get(otc_optim_rule_id rule);
/* The rule of a configuration (which the optimiser's checks accepted). */
otc_optim_rule_id otc_optim_rule_of(const otc_optim_config *c);
/* The scalar arguments (OTC_OPTIM_ARG_FIRST_SCALAR ..) of step t (1 for the first); the
 * per-element slots are set to 0. Bias corrections are computed in double. */
void otc_optim_step_args(const otc_optim_config *c, long t, float args[OTC_OPTIM_ARG_COUNT]);

typedef enum { OTC_SCHED_CONSTANT, OTC_SCHED_STEP, OTC_SCHED_COSINE } otc_sched_kind;

typedef struct {
    otc_sched_kind kind;
    float base_lr;
    int step_size;   /* STEP: multiply by gamma every step_size steps */
    float gamma;     /* STEP */
    int total_steps; /* COSINE: anneal from base_lr to min_lr over total_steps */
    float min_lr;    /* COSINE */
} otc_lr_schedule;

float otc_lr_at(const otc_lr_schedule *s, int step);

#endif
