/* The benchmarks' shared clock and median-of-blocks timer (header only: each .c file in bench/
 * is its own executable). */
#ifndef OTC_BENCH_TIMING_H
#define OTC_BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

/* Wall-clock seconds (monotonic). */
static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds per call of fn(arg) over 7 blocks that together take about block_seconds
 * (calls per block doubled until they do, at most 2^20); -1 when a call fails (non-zero). */
static inline double bench_median_time(int (*fn)(void *), void *arg, double block_seconds) {
    enum { BLOCKS = 7 };
    for (int i = 0; i < 2; i++)
        if (fn(arg)) return -1;
    long calls = 1;
    for (;;) {
        double t0 = bench_now();
        for (long i = 0; i < calls; i++) fn(arg);
        if ((bench_now() - t0) * BLOCKS >= block_seconds || calls >= (1L << 20)) break;
        calls *= 2;
    }
    double t[BLOCKS];
    for (int b = 0; b < BLOCKS; b++) {
        double t0 = bench_now();
        for (long i = 0; i < calls; i++)
            if (fn(arg)) return -1;
        t[b] = (bench_now() - t0) / (double)calls;
    }
    qsort(t, BLOCKS, sizeof t[0], bench_cmp_double);
    return t[BLOCKS / 2];
}

#endif
