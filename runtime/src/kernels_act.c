/* Activation loops for the interpreter: one tight loop per activation, the switch hoisted
 * out of it, each formula spelled exactly as in activations.c so the table, the interpreter
 * and the renderers agree. */
#include <math.h>

#include "kernels.h"

#define FWD_LOOP(EXPR)                                                                             \
    for (size_t i = 0; i < n; i++) {                                                               \
        float x_ = x[i];                                                                           \
        y[i] = (EXPR);                                                                             \
    }                                                                                              \
    return true

#define BWD_LOOP(DEXPR)                                                                            \
    for (size_t i = 0; i < n; i++) {                                                               \
        float x_ = x[i], y_ = y[i];                                                                \
        (void)x_;                                                                                  \
        (void)y_;                                                                                  \
        gx[i] += gy[i] * (DEXPR);                                                                  \
    }                                                                                              \
    return true

bool otc_act_forward_n(int act, float alpha, const float *x, float *y, size_t n) {
    const float a = alpha;
    switch (act) {
    case OTC_ACT_IDENTITY:
        FWD_LOOP(x_);
    case OTC_ACT_SIGMOID:
        FWD_LOOP(1.0f / (1.0f + expf(-x_)));
    case OTC_ACT_TANH:
        FWD_LOOP(tanhf(x_));
    case OTC_ACT_RELU:
        FWD_LOOP(x_ > 0.0f ? x_ : 0.0f);
    case OTC_ACT_LEAKY_RELU:
        FWD_LOOP(x_ > 0.0f ? x_ : a * x_);
    case OTC_ACT_SOFTPLUS:
        FWD_LOOP(fmaxf(x_, 0.0f) + log1pf(expf(-fabsf(x_))));
    case OTC_ACT_ELU:
        FWD_LOOP(x_ > 0.0f ? x_ : a * expm1f(x_));
    case OTC_ACT_GAUSSIAN:
        FWD_LOOP(expf(-x_ * x_));
    case OTC_ACT_SIN:
        FWD_LOOP(sinf(x_));
    case OTC_ACT_ABS:
        FWD_LOOP(fabsf(x_));
    case OTC_ACT_STEEP_SIGMOID:
        FWD_LOOP(1.0f / (1.0f + expf(-4.9f * x_)));
    default: {
        /* An activation added to the table but not (yet) given a loop here. */
        const otc_act_info *info = otc_act_get((otc_act)act);
        if (!info) return false;
        for (size_t i = 0; i < n; i++) y[i] = info->f(x[i], a);
        return true;
    }
    }
}

bool otc_act_backward_n(int act, float alpha, const float *x, const float *y, const float *gy,
                        float *gx, size_t n) {
    const float a = alpha;
    switch (act) {
    case OTC_ACT_IDENTITY:
        BWD_LOOP(1.0f);
    case OTC_ACT_SIGMOID:
        BWD_LOOP(y_ * (1.0f - y_));
    case OTC_ACT_TANH:
        BWD_LOOP(1.0f - y_ * y_);
    case OTC_ACT_RELU:
        BWD_LOOP(x_ > 0.0f ? 1.0f : 0.0f);
    case OTC_ACT_LEAKY_RELU:
        BWD_LOOP(x_ > 0.0f ? 1.0f : a);
    case OTC_ACT_SOFTPLUS:
        BWD_LOOP(1.0f / (1.0f + expf(-x_)));
    case OTC_ACT_ELU:
        BWD_LOOP(x_ > 0.0f ? 1.0f : y_ + a);
    case OTC_ACT_GAUSSIAN:
        BWD_LOOP(-2.0f * x_ * y_);
    case OTC_ACT_SIN:
        BWD_LOOP(cosf(x_));
    case OTC_ACT_ABS:
        BWD_LOOP(x_ > 0.0f ? 1.0f : (x_ < 0.0f ? -1.0f : 0.0f));
    case OTC_ACT_STEEP_SIGMOID:
        BWD_LOOP(4.9f * y_ * (1.0f - y_));
    default: {
        const otc_act_info *info = otc_act_get((otc_act)act);
        if (!info) return false;
        for (size_t i = 0; i < n; i++) gx[i] += gy[i] * info->df(x[i], y[i], a);
        return true;
    }
    }
}
