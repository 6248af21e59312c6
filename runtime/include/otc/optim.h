/* Optimisers (SGD with momentum/Nesterov, Adam, AdamW) and learning-rate schedules. */
#ifndef OTC_OPTIM_H
#define OTC_OPTIM_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

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
/* Steps taken so far (Adam's t). */
long otc_optimizer_steps(const otc_optimizer *opt);
/* One update of n parameter groups in place. State (momentum, moments) is kept per group
 * index; the sizes must be the same on every call (OTC_ERR_ARG otherwise). */
otc_status otc_optimizer_step(otc_optimizer *opt, int n, float *const *params,
                              const float *const *grads, const size_t *sizes);

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
