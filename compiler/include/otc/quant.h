/* Integer-only inference: a graph calibrated on float rows and lowered to int8 steps with
 * int32 accumulators and fixed-point requantisation, for CPUs without an FPU. The same
 * steps run on the host (otc_qmodel_forward) and come out as standalone C
 * (otc_emit_c_int8); both do the same integer arithmetic, bit for bit. */
#ifndef OTC_QUANT_H
#define OTC_QUANT_H

#include <stdint.h>

#include "otc/otc.h"

/* real = scale * (q - zero_point), q in [-128, 127]. */
typedef struct {
    float scale;
    int32_t zero_point;
} otc_qparam;

/* A real multiplier as fixed point: real ~= m * 2^-shift, |m| in [2^30, 2^31) (or 0),
 * shift in [1, 62]. Applied as round-half-up((int64)acc * m >> shift). */
typedef struct {
    int32_t m;
    int32_t shift;
} otc_qmult;

typedef enum {
    OTC_QOP_DENSE,   /* y = clamp(zy + rq(bias[n] + sum_k (x[k] - zx) w[n][k], mult[n])) */
    OTC_QOP_LUT,     /* y = lut[x + 128]: any elementwise unary op, from its expression tree */
    OTC_QOP_ADD,     /* y = clamp(zy + rq(a - za, ma) + rq(b - zb, mb)); subtraction: mb < 0 */
    OTC_QOP_MUL,     /* y = clamp(zy + rq((a - za)(b - zb), ma)) */
    OTC_QOP_NEURON,  /* terms t_i = rq(src_i[col_i] - z_i, term[i]); aggregated; pre =
                        clamp(zp + rq(agg, ma) + bias); y = lut[pre + 128]. Product: the
                        factors src_i[col_i] - z_i multiplied into a 32-bit mantissa p with a
                        power-of-two exponent e (otc_qprod_factor), then pre = clamp(zp +
                        otc_qprod_apply(p, ma.m, prod_shift - e) + bias) */
    OTC_QOP_CONV,    /* dense over each window (NCHW); padding reads the zero point (real 0) */
    OTC_QOP_MAXPOOL, /* the int8 maximum of each window; the output keeps the input's scale */
    OTC_QOP_AVGPOOL, /* y = clamp(zy + rq(sum of (x - zx) over the window, ma)), ma with 1/(KH KW)
                      */
    OTC_QOP_COPY,    /* a block of a into y (slice, select, one input of a concat): for o < geo[0],
                        j < geo[5], i < geo[6]: y[(o geo[2] + geo[4] + j) geo[6] + i] =
                        clamp(zy + rq(a[(o geo[1] + geo[3] + j) geo[6] + i] - za, ma)) */
    OTC_QOP_COUNT
} otc_qop_kind;

/* A quantised tensor: per-sample width and its place in the workspace or the state. */
typedef struct {
    int width;
    otc_qparam q;
    /* The input, when every reader folds a column's scale into its weights (dense steps and
     * NEAT neurons): a scale and zero point per column (width of them); NULL: q for all. */
    otc_qparam *cols;
    int offset;   /* bytes into the workspace (state: into the state) */
    bool state;   /* a Delay's value, carried between calls */
    int delay_of; /* state: the tensor copied into it after each step (-1 otherwise) */
} otc_qtensor;

typedef struct {
    otc_qop_kind kind;
    otc_id node;   /* the graph node whose value the step writes (for messages and comments) */
    int out, a, b; /* tensor indices (b: -1 when unused) */
    int lo, hi;    /* output clamp (a fused ReLU or clamp narrows it) */
    /* dense: n outputs of k inputs; weights [n][k], per output channel symmetric */
    int k, n;
    int8_t *w;
    int32_t *bias;
    otc_qmult *mult;
    /* add / mul / neuron */
    otc_qmult ma, mb;
    /* neuron: its sources (tensor, column) and their term multipliers */
    int n_src;
    int *src, *col;
    otc_qmult *term;
    int agg;            /* otc_agg */
    int32_t prod_shift; /* product neuron: ma's shift less the weights' power of two */
    int32_t bias_q;     /* neuron: the bias in the pre-activation's units */
    int32_t pre_zp;     /* neuron: the pre-activation's zero point */
    int8_t lut[256];
    /* conv / pools: C, H, W, O, OH, OW, KH, KW, stride h w, pad h w, dilation h w, groups */
    int32_t geo[15];
} otc_qstep;

typedef struct otc_qmodel {
    int n_tensors, n_steps;
    otc_qtensor *tensors;
    otc_qstep *steps;
    int input; /* tensor index of the one Input */
    int n_outputs;
    int *outputs; /* tensor index of each output */
    bool *logits; /* output i was a softmax/log_softmax's input: the caller applies it */
    int in_width, out_width;
    int workspace_bytes, state_bytes;
} otc_qmodel;

/* Calibration: run g (one batched Input of width d->n_features) on d's rows with the
 * interpreter, collect every value's range and lower the graph to integer steps. A recurrent
 * graph steps through the rows in order as one sequence. Errors name the node without an
 * integer lowering, or the calibration column (wrong width, constant, not finite). */
otc_status otc_quantize_int8(otc_graph *g, const otc_dataset *d, otc_qmodel **out);
void otc_qmodel_free(otc_qmodel *q);

/* One sample through the integer steps: in [in_width] -> out [out_width] (outputs
 * concatenated). work holds workspace_bytes, state state_bytes (carried between calls;
 * otc_qmodel_reset fills it with each state's zero). */
void otc_qmodel_forward(const otc_qmodel *q, const int8_t *in, int8_t *out, int8_t *work,
                        int8_t *state);
void otc_qmodel_reset(const otc_qmodel *q, int8_t *state);

/* x / scale + zero_point in float, rounded half away from zero and saturated to int8 (NaN:
 * the zero point), as the emitted float wrapper does; and back. */
int8_t otc_quantize_value(float x, otc_qparam p);
float otc_dequantize_value(int8_t q, otc_qparam p);
/* Column c's parameters of tensor t (its own with per-column scales, else t's). */
otc_qparam otc_qtensor_col(const otc_qtensor *t, int c);
/* One float sample x[in_width] quantised column by column into in[in_width]. */
void otc_qmodel_quantize_input(const otc_qmodel *q, const float *x, int8_t *in);

/* The fixed-point form of a real multiplier; fails when it is too large (>= 2^30). */
otc_status otc_qmult_from_real(double real, otc_qmult *out);
/* round-half-up(acc * m / 2^shift) saturated at +-2^29, the requantisation both the host
 * and the emitted C do. */
int32_t otc_qmult_apply(int32_t acc, otc_qmult m);

/* A product neuron's integer product: p = p * d with its exponent *e, the result halved
 * (rounding half up) while it needs more than 32 bits, so p keeps 31 significant bits. */
int32_t otc_qprod_factor(int32_t p, int32_t d, int32_t *e);
/* round-half-up(p * m / 2^sh) saturated at +-2^29 for any sh: 0 past 62, saturated below 1. */
int32_t otc_qprod_apply(int32_t p, int32_t m, int32_t sh);

/* The model as standalone C without floating point at run time: header and source text
 * (malloc'd). The float wrappers are compiled only with OTC_<NAME>_FLOAT_API defined. */
otc_status otc_emit_c_int8(const otc_qmodel *q, const char *name, const char *source_name,
                           char **header, char **source);
/* The same written to DIR/NAME.h and DIR/NAME.c. */
otc_status otc_emit_c_int8_files(const otc_qmodel *q, const char *name, const char *source_name,
                                 const char *dir);

/* ---- Weight-only storage (--quantize f16 / weights-int8), quant_weights.c ----
 * For CPUs with an FPU: the computation stays f32, only the stored weights shrink. The
 * emitted C decodes them into its workspace; the host runs the float graph whose weights are
 * the decoded values (otc_weights_round), so both compute with the same floats. */
typedef enum {
    OTC_WEIGHTS_F32,  /* as trained */
    OTC_WEIGHTS_F16,  /* every parameter as IEEE half (2 bytes) */
    OTC_WEIGHTS_INT8, /* matmul, conv and neuron weights as symmetric int8 per output channel
                         with an f32 scale each (1 byte); the other parameters (biases) f32 */
} otc_weight_storage;

/* IEEE half bits of f, rounded to nearest even (|f| >= 65520 gives infinity), and back
 * (exact). */
uint16_t otc_f16_from_f32(float f);
float otc_f32_from_f16(uint16_t h);

/* How OTC_WEIGHTS_INT8 stores parameter id: element j belongs to output channel
 * (j / inner) % channels (a matmul weight [K,N]: N channels, inner 1; a conv weight
 * [O,C,KH,KW]: O channels, inner C*KH*KW; a NEAT neuron's weights: one channel). false: the
 * parameter stays f32 (a bias, or a weight something else also reads). */
bool otc_weights_int8_layout(const otc_graph *g, otc_id id, int64_t *channels, int64_t *inner);
/* The int8 values and per-channel scales of n weights in that layout: scale[c] = max |w| of
 * channel c / 127, q = round(w / scale); w is decoded as (float)q * scale[c]. */
void otc_weights_int8_quantize(const float *w, int64_t n, int64_t channels, int64_t inner,
                               int8_t *q, float *scale);
/* Every parameter of g replaced by the value its storage decodes to: the host's side of
 * weight-only storage. Fails, naming the parameter, on a weight f16 cannot hold. */
otc_status otc_weights_round(otc_graph *g, otc_weight_storage mode);
/* Bytes the emitted C stores g's parameters in (values, scales and the int8 run table). */
int64_t otc_weights_stored_bytes(const otc_graph *g, otc_weight_storage mode);

#endif
