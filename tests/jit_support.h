/* Shared by the LLVM JIT tests (test_jit.c, test_jit_api.c): random graphs and inputs, the
 * interpreter-vs-JIT comparison, the graph-count scale. */
#ifndef OTC_JIT_SUPPORT_H
#define OTC_JIT_SUPPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "harness.h"
#include "otc/jit.h"
#include "otc/otc.h"
#include "otc/random_graph.h"

/* REQUIRE, printing otc_last_error() first when it fails. */
#define NEED(cond)                                                                                 \
    do {                                                                                           \
        bool need_ok_ = (cond);                                                                    \
        if (!need_ok_) fprintf(stderr, "otc: %s\n", otc_last_error());                             \
        REQUIRE(need_ok_ &&#cond);                                                                 \
    } while (0)

#if defined(__SANITIZE_ADDRESS__)
#define OTC_JIT_ASAN 1
#else
#define OTC_JIT_ASAN 0
#endif

/* n scaled by OTC_JIT_TEST_SCALE (default 1; 0.25 with AddressSanitizer), at least 1. */
int jit_scaled(int n);
/* |got - want| <= tol * max(1, |want|) (or both NaN). */
bool jit_close_to(double got, double want, double tol);
/* Uniform [-2, 2) rows for every Input of g at batch, one malloc'd array per input. */
float **jit_random_inputs(otc_graph *g, int batch, otc_rng *rng);
void jit_free_rows(otc_graph *g, float **rows);
bool jit_set_all(otc_executor *ex, otc_graph *g, float **rows, int batch);
/* Forward through the interpreter and jit on the same random inputs; every output compared
 * within 2e-5 (printing the first difference). */
bool jit_forward_agrees(otc_graph *g, otc_executor *jit, int batch, uint64_t seed,
                        const char *what);
otc_graph *jit_neat_graph(uint64_t seed, int neurons, bool mixed, bool two_inputs);
/* MSE of g's outputs (concatenated when several) against a new Input "t". */
otc_id jit_add_mse_loss(otc_graph *g);

#endif
