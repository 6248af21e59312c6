/* The activation table: each activation once, as a scalar function with its derivative for
 * the interpreter and as C99 expression text for the C renderer. */
#include <math.h>
#include <string.h>

#include "otc/ops.h"

static float f_identity(float x, float a) {
    return x;
}
static float d_identity(float x, float y, float a) {
    return 1.0f;
}
static float f_sigmoid(float x, float a) {
    return 1.0f / (1.0f + expf(-x));
}
static float d_sigmoid(float x, float y, float a) {
    return y * (1.0f - y);
}
static float f_tanh(float x, float a) {
    return tanhf(x);
}
static float d_tanh(float x, float y, float a) {
    return 1.0f - y * y;
}
static float f_relu(float x, float a) {
    return x > 0.0f ? x : 0.0f;
}
static float d_relu(float x, float y, float a) {
    return x > 0.0f ? 1.0f : 0.0f;
}
static float f_leaky(float x, float a) {
    return x > 0.0f ? x : a * x;
}
static float d_leaky(float x, float y, float a) {
    return x > 0.0f ? 1.0f : a;
}
/* log(1 + e^x) without overflow: max(x,0) + log1p(e^-|x|). */
static float f_softplus(float x, float a) {
    return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}
static float d_softplus(float x, float y, float a) {
    return 1.0f / (1.0f + expf(-x));
}
static float f_elu(float x, float a) {
    return x > 0.0f ? x : a * expm1f(x);
}
static float d_elu(float x, float y, float a) {
    return x > 0.0f ? 1.0f : y + a;
}
static float f_gauss(float x, float a) {
    return expf(-x * x);
}
static float d_gauss(float x, float y, float a) {
    return -2.0f * x * y;
}
static float f_sin(float x, float a) {
    return sinf(x);
}
static float d_sin(float x, float y, float a) {
    return cosf(x);
}
static float f_abs(float x, float a) {
    return fabsf(x);
}
static float d_abs(float x, float y, float a) {
    return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
}
static float f_steep(float x, float a) {
    return 1.0f / (1.0f + expf(-4.9f * x));
}
static float d_steep(float x, float y, float a) {
    return 4.9f * y * (1.0f - y);
}

static const otc_act_info acts[OTC_ACT_COUNT] = {
    [OTC_ACT_IDENTITY] = {"identity", f_identity, d_identity, "x", "1.0f", 0.0f},
    [OTC_ACT_SIGMOID] = {"sigmoid", f_sigmoid, d_sigmoid, "1.0f / (1.0f + expf(-x))",
                         "y * (1.0f - y)", 0.0f},
    [OTC_ACT_TANH] = {"tanh", f_tanh, d_tanh, "tanhf(x)", "1.0f - y * y", 0.0f},
    [OTC_ACT_RELU] = {"relu", f_relu, d_relu, "(x > 0.0f ? x : 0.0f)", "(x > 0.0f ? 1.0f : 0.0f)",
                      0.0f},
    [OTC_ACT_LEAKY_RELU] = {"leaky_relu", f_leaky, d_leaky, "(x > 0.0f ? x : a * x)",
                            "(x > 0.0f ? 1.0f : a)", 0.01f},
    [OTC_ACT_SOFTPLUS] = {"softplus", f_softplus, d_softplus,
                          "(fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))))", "1.0f / (1.0f + expf(-x))",
                          0.0f},
    [OTC_ACT_ELU] = {"elu", f_elu, d_elu, "(x > 0.0f ? x : a * expm1f(x))",
                     "(x > 0.0f ? 1.0f : y + a)", 1.0f},
    [OTC_ACT_GAUSSIAN] = {"gaussian", f_gauss, d_gauss, "expf(-x * x)", "-2.0f * x * y", 0.0f},
    [OTC_ACT_SIN] = {"sin", f_sin, d_sin, "sinf(x)", "cosf(x)", 0.0f},
    [OTC_ACT_ABS] = {"abs", f_abs, d_abs, "fabsf(x)",
                     "(x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f))", 0.0f},
    [OTC_ACT_STEEP_SIGMOID] = {"steep_sigmoid", f_steep, d_steep, "1.0f / (1.0f + expf(-4.9f * x))",
                               "4.9f * y * (1.0f - y)", 0.0f},
};

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
