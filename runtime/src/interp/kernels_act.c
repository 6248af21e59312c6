/* Activations for the interpreter (the activation ops and the Neuron). The activation
 * table's trees, compiled once, run over the arrays; the activations that have one take a
 * hand-written loop instead, which is measurably faster where a graph is many small calls
 * (a 100-neuron genome at batch 1: 4.0 against 6.8 us per sample through the programs). Each
 * loop spells its table formula with the same operations in the same order, and the test
 * ops_activation_loops_match_spec holds them to the table bit for bit. */
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

/* neat-python's clamp of a scaled argument, as the table's CLAMP selects it. */
static inline float np_clamp(float t, float lim) {
    return t > lim ? lim : (t < -lim ? -lim : t);
}

static bool forward_by_hand(int act, float alpha, const float *x, float *y, size_t n) {
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
        FWD_LOOP(1.0f / (1.0f + expf(-((float)OTC_STEEPNESS * x_))));
    /* neat-python's: every genome of a neat-python run evaluates these, one row at a time
     * (the program costs ~800 instructions a value there, the loop ~20). */
    case OTC_ACT_NP_SIGMOID:
        FWD_LOOP(1.0f / (1.0f + expf(-np_clamp(5.0f * x_, 60.0f))));
    case OTC_ACT_NP_TANH:
        FWD_LOOP(tanhf(np_clamp(2.5f * x_, 60.0f)));
    default:
        return false; /* no loop here: the table's program */
    }
}

static bool backward_by_hand(int act, float alpha, const float *x, const float *y, const float *gy,
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
        BWD_LOOP((float)OTC_STEEPNESS * (y_ * (1.0f - y_)));
    default:
        return false;
    }
}

bool otc_act_forward_n(int act, float alpha, const float *x, float *y, size_t n) {
    if (forward_by_hand(act, alpha, x, y, n)) return true;
    const otc_expr_program *p = otc_act_program(act, false);
    if (!p) return false;
    otc_expr_run_n(p, &(otc_expr_arrays){.x = x, .a = alpha}, y, n);
    return true;
}

bool otc_act_backward_n(int act, float alpha, const float *x, const float *y, const float *gy,
                        float *gx, size_t n) {
    if (backward_by_hand(act, alpha, x, y, gy, gx, n)) return true;
    const otc_expr_program *p = otc_act_program(act, true);
    if (!p) return false;
    otc_expr_run_accumulate_n(p, &(otc_expr_arrays){.x = x, .y = y, .a = alpha}, gy, gx, n);
    return true;
}
