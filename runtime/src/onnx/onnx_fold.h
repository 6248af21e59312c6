/* Private to runtime/src/onnx: arithmetic and reshaping of import-time constants
 * (onnx_fold.c). Arguments are checked by the callers (axes in range, shapes that fit). */
#ifndef OTC_ONNX_FOLD_H
#define OTC_ONNX_FOLD_H

#include "onnx_internal.h"

ox_const *ox_const_dup(const ox_const *c);
/* The ONNX (numpy) broadcast of two shapes; false when they do not broadcast. */
bool ox_broadcast_dims(int ra, const int64_t *a, int rb, const int64_t *b, int *rank, int64_t *out);
/* a op b with broadcasting, op one of + - * /; int64 when both are (the batch size refused). */
otc_status ox_fold_binary(const ox_ctx *x, char op, const ox_const *a, const ox_const *b,
                          ox_const **out);
/* A copy with other dims (same element count). */
ox_const *ox_const_reshaped(const ox_const *c, int rank, const int64_t *dim);
/* Axis d of the result is axis perm[d] of c. */
ox_const *ox_const_transpose(const ox_const *c, const int *perm);
/* Elements start .. start+len-1 along axis. */
ox_const *ox_const_slice(const ox_const *c, int axis, int64_t start, int64_t len);
/* Along axis; int64 when every part is. */
ox_const *ox_const_concat(ox_const *const *cs, int n, int axis);

#endif
