/* Dense work and the machine's peak: a graph's floating-point operations per sample (matmul,
 * Conv2d and Neuron multiply-adds, 2 flops each) and one-thread OpenBLAS sgemm GFLOP/s, the
 * ceiling every dense row is divided by (header only, like bench_timing.h). */
#ifndef OTC_BENCH_GFLOPS_H
#define OTC_BENCH_GFLOPS_H

#include <stdlib.h>

#include <cblas.h>

#include "bench_timing.h"
#include "otc/otc.h"

/* Forward flops per sample of g's dense work; a training step is counted as 3x this (the
 * backward computes two products per forward one). Per-sample means: a product whose left
 * operand is batched counts its rows per sample; an unbatched one counts once. */
static inline double bench_graph_flops(const otc_graph *g) {
    double flops = 0;
    for (otc_id id = 0; id < otc_graph_size(g); id++) {
        const otc_node *n = otc_graph_node(g, id);
        if (n->op == OTC_OP_MATMUL) {
            const otc_shape *a = &otc_graph_node(g, n->inputs[0])->shape;
            double rows = a->ndim == 2 && a->dim[0] == OTC_BATCH ? 1 : a->dim[0];
            flops += 2.0 * rows * a->dim[a->ndim - 1] * n->shape.dim[n->shape.ndim - 1];
        } else if (n->op == OTC_OP_CONV2D) {
            const otc_shape *w = &otc_graph_node(g, n->inputs[1])->shape;
            flops += 2.0 * n->shape.dim[1] * n->shape.dim[2] * n->shape.dim[3] * w->dim[1] *
                     w->dim[2] * w->dim[3];
        } else if (n->op == OTC_OP_NEURON) {
            flops += 2.0 * (n->n_inputs - 2);
        }
    }
    return flops;
}

typedef struct {
    int n;
    float *a, *b, *c;
} bench_square;

static inline int bench_square_gemm(void *arg) {
    bench_square *s = arg;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->n, s->n, s->n, 1.0f, s->a, s->n, s->b,
                s->n, 0.0f, s->c, s->n);
    return 0;
}

/* OpenBLAS sgemm GFLOP/s on n x n x n at the current thread count; -1 out of memory. */
static inline double bench_sgemm_gflops(int n, double block_seconds) {
    size_t len = (size_t)n * (size_t)n;
    bench_square s = {n, malloc(len * sizeof(float)), malloc(len * sizeof(float)),
                      malloc(len * sizeof(float))};
    double gflops = -1;
    if (s.a && s.b && s.c) {
        for (size_t i = 0; i < len; i++) {
            s.a[i] = (float)(i % 17) * 0.01f;
            s.b[i] = (float)(i % 13) * 0.02f;
        }
        double sec = bench_median_time(bench_square_gemm, &s, block_seconds);
        gflops = 2.0 * n * (double)n * n / sec * 1e-9;
    }
    free(s.a);
    free(s.b);
    free(s.c);
    return gflops;
}

/* The peak: the best one-thread sgemm GFLOP/s over square sizes 256 and 512 (where OpenBLAS
 * reaches its plateau on one core), the thread count restored to one. */
static inline double bench_sgemm_peak(double block_seconds) {
    openblas_set_num_threads(1);
    double a = bench_sgemm_gflops(256, block_seconds), b = bench_sgemm_gflops(512, block_seconds);
    return a > b ? a : b;
}

#endif
