/* Test support for compiled training through time: the recurrent layer models and the weight
 * comparisons test_bptt_compiled.c and test_bptt_tape.c share. */
#ifndef OTC_BPTT_SUPPORT_H
#define OTC_BPTT_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "otc/layers.h"
#include "otc/otc.h"

/* Input "x" [B,3], one layer of `cell` with `hidden` units ("rnn"), a head matmul to 2
 * outputs (the output); weights from seed. */
otc_graph *bptt_layer_graph(otc_cell cell, uint64_t seed, int hidden);

/* |got - want| <= tol * max(1, the largest |want|) for each of n values of param #id; the
 * worst difference so far in *worst; false (after printing what, id and where) otherwise. */
bool bptt_close_all(const float *got, const float *want, size_t n, double tol, double *worst,
                    const char *what, int id);

/* bptt_close_all over every Parameter of a against the same node of b (the interpreter's). */
bool bptt_same_params(const otc_graph *a, const otc_graph *b, double tol, double *worst,
                      const char *what);

#endif
