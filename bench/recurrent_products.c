/* What one product over a whole window would save the JIT's LSTM 32->128 (T50, B64) training
 * step against its per-step products: the weight gradients dW_hh += h_{t-1} dG_t^T and
 * dW_ih += x_t dG_t^T as 50 cblas_sgemm calls of 64 samples each (the unrolled plan's, in its
 * node-major layout) or as one call over all 3,200 (a time-major layout the plan does not have),
 * and what copying the gate gradients into that layout costs. OpenBLAS, one thread, thread CPU
 * time, median and quartiles of 25 repeats. Usage: recurrent_products */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "bench_timing.h"

enum { T = 50, S = 64, H = 128, IN = 32, N = 4 * H, REPEATS = 25 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* C[k,N] += sum over the steps of A_t[k,S] G_t[N,S]^T, step t's blocks at t * k * S and
 * t * N * S (per step), or A[k, T*S] G[N, T*S]^T (one call). */
static void per_step(int k, const float *a, const float *g, float *c) {
    for (int t = 0; t < T; t++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, k, N, S, 1.0f, a + (size_t)t * k * S,
                    S, g + (size_t)t * N * S, S, 1.0f, c, N);
}

static void one_call(int k, const float *a, const float *g, float *c) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, k, N, T * S, 1.0f, a, T * S, g, T * S,
                1.0f, c, N);
}

/* Step-major gate gradients [T][N][S] into the time-major layout [N][T*S]. */
static void to_time_major(const float *g, float *out) {
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N; n++)
            memcpy(out + (size_t)n * T * S + (size_t)t * S, g + ((size_t)t * N + n) * S,
                   S * sizeof *out);
}

static void report(const char *what, double *ms) {
    qsort(ms, REPEATS, sizeof *ms, bench_cmp_double);
    printf("  %-34s %7.2f ms  (%.2f-%.2f)\n", what, ms[REPEATS / 2], ms[REPEATS / 4],
           ms[3 * REPEATS / 4]);
}

int main(void) {
    openblas_set_num_threads(1);
    size_t nh = (size_t)T * H * S, nx = (size_t)T * IN * S, ng = (size_t)T * N * S;
    float *h = malloc(nh * sizeof *h), *x = malloc(nx * sizeof *x), *g = malloc(ng * sizeof *g);
    float *gt = malloc(ng * sizeof *gt), *dwh = calloc((size_t)H * N, sizeof *dwh);
    float *dwx = calloc((size_t)IN * N, sizeof *dwx);
    if (!h || !x || !g || !gt || !dwh || !dwx) return 2;
    unsigned s = 1;
    for (size_t i = 0; i < ng; i++)
        g[i] = gt[i] = (float)((s = s * 1103515245u + 12345u) >> 9) * 0x1p-23f - 1.0f;
    for (size_t i = 0; i < nh; i++) h[i] = g[i];
    for (size_t i = 0; i < nx; i++) x[i] = g[ng - 1 - i];
    double ms[5][REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        double t0 = now();
        per_step(H, h, g, dwh);
        double t1 = now();
        one_call(H, h, gt, dwh);
        double t2 = now();
        per_step(IN, x, g, dwx);
        double t3 = now();
        one_call(IN, x, gt, dwx);
        double t4 = now();
        to_time_major(g, gt);
        double t5 = now();
        ms[0][r] = (t1 - t0) * 1e3;
        ms[1][r] = (t2 - t1) * 1e3;
        ms[2][r] = (t3 - t2) * 1e3;
        ms[3][r] = (t4 - t3) * 1e3;
        ms[4][r] = (t5 - t4) * 1e3;
    }
    printf("recurrent_products: LSTM 32->128, T%d, B%d, weight gradients over one window "
           "(OpenBLAS, one thread, thread CPU time, median (quartiles) of %d)\n",
           T, S, REPEATS);
    report("dW_hh, 50 calls of 64 samples", ms[0]);
    report("dW_hh, one call of 3,200", ms[1]);
    report("dW_ih, 50 calls of 64 samples", ms[2]);
    report("dW_ih, one call of 3,200", ms[3]);
    report("gate gradients to time-major", ms[4]);
    free(h);
    free(x);
    free(g);
    free(gt);
    free(dwh);
    free(dwx);
    return 0;
}
