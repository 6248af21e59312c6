/* f32 tensors of up to four dimensions, row-major, owning their storage. */
#ifndef OTC_TENSOR_H
#define OTC_TENSOR_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "rng.h"

#define OTC_MAX_DIMS 4
/* In a graph shape, a leading dimension of OTC_BATCH stands for the batch size, which is
 * fixed per execution, not per graph. */
#define OTC_BATCH (-1)

typedef struct {
    int ndim; /* 0 (a scalar) .. OTC_MAX_DIMS */
    int dim[OTC_MAX_DIMS];
} otc_shape;

typedef struct {
    otc_shape shape;
    size_t size; /* number of elements */
    float *data;
} otc_tensor;

otc_shape otc_shape_make(int ndim, const int *dims);
otc_shape otc_shape_scalar(void);
otc_shape otc_shape_1d(int n);
otc_shape otc_shape_2d(int rows, int cols);
bool otc_shape_equal(otc_shape a, otc_shape b);
bool otc_shape_is_batched(otc_shape s);
/* Element count; a batched shape counts one sample (the batch dim as 1). */
size_t otc_shape_size(otc_shape s);
/* Replace a leading OTC_BATCH with `batch`. */
otc_shape otc_shape_resolve(otc_shape s, int batch);
/* "[B,3]" / "[4]" / "[]" into buf (>= 64 bytes); returns buf. */
const char *otc_shape_str(otc_shape s, char *buf, size_t len);

/* New zero-filled tensor; NULL (with otc_last_error set) on a bad shape or no memory. */
otc_tensor *otc_tensor_new(otc_shape shape);
otc_tensor *otc_tensor_from(otc_shape shape, const float *values);
otc_tensor *otc_tensor_copy(const otc_tensor *t);
void otc_tensor_free(otc_tensor *t);
void otc_tensor_fill(otc_tensor *t, float v);

/* Scalar<->tensor arithmetic, in place. */
void otc_tensor_add_scalar(otc_tensor *t, float s);
void otc_tensor_mul_scalar(otc_tensor *t, float s);
/* Elementwise out = a (op) b; all three must have equal shapes (no silent broadcasting). */
otc_status otc_tensor_add(const otc_tensor *a, const otc_tensor *b, otc_tensor *out);
otc_status otc_tensor_sub(const otc_tensor *a, const otc_tensor *b, otc_tensor *out);
otc_status otc_tensor_mul(const otc_tensor *a, const otc_tensor *b, otc_tensor *out);

/* Random initialisation. fan_in/fan_out as for a [fan_in, fan_out] weight matrix. */
void otc_tensor_uniform(otc_tensor *t, otc_rng *rng, float lo, float hi);
void otc_tensor_normal(otc_tensor *t, otc_rng *rng, float mean, float std);
void otc_tensor_xavier(otc_tensor *t, otc_rng *rng, int fan_in, int fan_out); /* uniform */
void otc_tensor_he(otc_tensor *t, otc_rng *rng, int fan_in);                  /* normal */

#endif
