/* Interpreter kernels of MatMul, C[M,N] = A[M,K] B[K,N], and its gradients: a plain loop for
 * small products (NEAT at batch 1, tiny layers) and OpenBLAS sgemm above a measured cut-off. */
#include <cblas.h>
#include <string.h>

#include "kernels.h"

/* The cut-off, from bench/matmul_cutoff.c on the 2-core AMD EPYC build machine (OpenBLAS
 * 0.3.21, gcc -O3; ns per forward product, median of 7):
 *
 *      M    K    N   loop ns  sgemm ns            M    K    N   loop ns  sgemm ns
 *      1   64   64     1087      2020             8    8    8      351       417
 *      1  128  128     4023      8306             8   16   16      816       605
 *      1  784  128    28847     46928            16    4    4      382       438
 *      2   32   32      661       657            16    8    8      741       515
 *      2  128  128     8332      8543            32    4    4      764       698
 *      4    8    8      177       289            32    2   16      778       851
 *      4   16   16      454       432            64   64   64    70810     19034
 *      4   32   32     1265       685           256  256  256  4339014    432540
 *
 * sgemm never wins with one or two rows (its fixed cost is ~200 ns and it does not
 * specialise the matrix-vector case), nor with an inner dimension below 4; past that it
 * wins from about a thousand multiply-adds and by 3-10x on real layers. The same rule is
 * applied to the two gradient products with their own (rows, inner, cols). */
#define OTC_BLAS_MIN_ROWS  4
#define OTC_BLAS_MIN_INNER 4
#define OTC_BLAS_MIN_MACS  1024

static bool use_blas(int rows, int inner, int cols) {
    return rows >= OTC_BLAS_MIN_ROWS && inner >= OTC_BLAS_MIN_INNER &&
           (size_t)rows * (size_t)inner * (size_t)cols >= OTC_BLAS_MIN_MACS;
}

typedef struct {
    int M, K, N;
} mm_dims;

static mm_dims dims_of(const otc_kernel_args *a) {
    mm_dims d;
    otc_shape sb = a->in_shape[1];
    d.K = sb.ndim > 0 ? sb.dim[0] : 1;
    d.N = d.K > 0 ? (int)(otc_kshape_size(sb) / (size_t)d.K) : 0;
    d.M = d.K > 0 ? (int)(otc_kshape_size(a->in_shape[0]) / (size_t)d.K) : 0;
    return d;
}

otc_status otc_fwd_matmul(const otc_kernel_args *a) {
    mm_dims d = dims_of(a);
    const float *A = a->in[0], *B = a->in[1];
    float *C = a->out;
    if (d.M == 0 || d.N == 0) return OTC_OK;
    if (use_blas(d.M, d.K, d.N)) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d.M, d.N, d.K, 1.0f, A, d.K, B, d.N,
                    0.0f, C, d.N);
        return OTC_OK;
    }
    /* i-k-j: the inner loop runs along contiguous rows of B and C and vectorises. */
    for (int i = 0; i < d.M; i++) {
        float *c = C + (size_t)i * d.N;
        const float *ar = A + (size_t)i * d.K;
        memset(c, 0, sizeof(float) * (size_t)d.N);
        for (int k = 0; k < d.K; k++) {
            float aik = ar[k];
            const float *b = B + (size_t)k * d.N;
            for (int j = 0; j < d.N; j++) c[j] += aik * b[j];
        }
    }
    return OTC_OK;
}

void otc_bwd_matmul(const otc_kernel_args *a) {
    mm_dims d = dims_of(a);
    const float *A = a->in[0], *B = a->in[1], *G = a->out_grad;
    float *gA = a->in_grad[0], *gB = a->in_grad[1];
    if (d.M == 0 || d.N == 0 || d.K == 0) return;
    /* gA[M,K] += G[M,N] B^T: row-by-row dot products over N. */
    if (gA) {
        if (use_blas(d.M, d.N, d.K)) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d.M, d.K, d.N, 1.0f, G, d.N, B,
                        d.N, 1.0f, gA, d.K);
        } else {
            for (int i = 0; i < d.M; i++) {
                const float *g = G + (size_t)i * d.N;
                float *ga = gA + (size_t)i * d.K;
                for (int k = 0; k < d.K; k++) {
                    const float *b = B + (size_t)k * d.N;
                    float s = 0.0f;
                    for (int j = 0; j < d.N; j++) s += g[j] * b[j];
                    ga[k] += s;
                }
            }
        }
    }
    /* gB[K,N] += A^T G: the reduction runs over the M rows. */
    if (gB) {
        if (use_blas(d.K, d.M, d.N)) {
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d.K, d.N, d.M, 1.0f, A, d.K, G,
                        d.N, 1.0f, gB, d.N);
        } else {
            for (int i = 0; i < d.M; i++) {
                const float *g = G + (size_t)i * d.N;
                const float *ar = A + (size_t)i * d.K;
                for (int k = 0; k < d.K; k++) {
                    float aik = ar[k];
                    float *gb = gB + (size_t)k * d.N;
                    for (int j = 0; j < d.N; j++) gb[j] += aik * g[j];
                }
            }
        }
    }
}
