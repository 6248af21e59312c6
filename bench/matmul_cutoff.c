/* Measures where cblas_sgemm starts beating a plain loop for C[M,N] = A[M,K] B[K,N], the
 * figures behind the interpreter's BLAS cut-off (runtime/src/interp/kernels_matmul.c). Prints a
 * table; never pass/fail. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The same i-k-j loop as the interpreter's small-matrix path. */
static void loop_mm(int M, int K, int N, const float *A, const float *B, float *C) {
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * N;
        for (int j = 0; j < N; j++) c[j] = 0.0f;
        for (int k = 0; k < K; k++) {
            float aik = A[(size_t)i * K + k];
            const float *b = B + (size_t)k * N;
            for (int j = 0; j < N; j++) c[j] += aik * b[j];
        }
    }
}

static void blas_mm(int M, int K, int N, const float *A, const float *B, float *C) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Median over 7 repeats of the mean time per call, with enough calls per repeat to last
 * ~2 ms. */
static double time_mm(void (*mm)(int, int, int, const float *, const float *, float *), int M,
                      int K, int N, const float *A, const float *B, float *C) {
    double flops = 2.0 * M * K * N;
    long reps = (long)(2e6 / (flops / 2.0 + 50.0)) + 1;
    double t[7];
    mm(M, K, N, A, B, C);
    for (int r = 0; r < 7; r++) {
        double t0 = now_ns();
        for (long i = 0; i < reps; i++) mm(M, K, N, A, B, C);
        t[r] = (now_ns() - t0) / reps;
    }
    for (int i = 1; i < 7; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double s = t[j];
            t[j] = t[j - 1];
            t[j - 1] = s;
        }
    return t[3];
}

static void row(int M, int K, int N) {
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
    float *C = malloc(sizeof(float) * M * N);
    if (!A || !B || !C) exit(1);
    for (int i = 0; i < M * K; i++) A[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
    for (int i = 0; i < K * N; i++) B[i] = (float)((i * 11) % 13) / 13.0f - 0.5f;
    double tl = time_mm(loop_mm, M, K, N, A, B, C);
    double tb = time_mm(blas_mm, M, K, N, A, B, C);
    printf("%6d %6d %6d %12ld %12.0f %12.0f %8.2f  %s\n", M, K, N, (long)M * K * N, tl, tb, tl / tb,
           tl <= tb ? "loop" : "sgemm");
    free(A);
    free(B);
    free(C);
}

int main(void) {
    /* A grid over the batch-like M and square K=N, then shapes seen in practice (MLP layers
     * on a batch, NEAT-sized). */
    static const int ms[] = {1, 2, 4, 8, 16, 32, 64};
    static const int ks[] = {4, 8, 16, 32, 64, 128};
    static const int shapes[][3] = {{32, 2, 16},    {1024, 4, 8},  {256, 10, 10},  {128, 32, 32},
                                    {64, 784, 128}, {1, 784, 128}, {256, 256, 256}};
    printf("%6s %6s %6s %12s %12s %12s %8s  %s\n", "M", "K", "N", "M*K*N", "loop ns", "sgemm ns",
           "loop/sg", "faster");
    for (size_t m = 0; m < sizeof ms / sizeof ms[0]; m++)
        for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) row(ms[m], ks[k], ks[k]);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        row(shapes[s][0], shapes[s][1], shapes[s][2]);
    return 0;
}
