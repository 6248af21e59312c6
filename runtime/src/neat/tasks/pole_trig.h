/* Private to the pole tasks: sin and cos of the small angles the poles live at, as inline
 * polynomials (libm outside their range), so the physics need no libm call per step. */
#ifndef OTC_POLE_TRIG_H
#define OTC_POLE_TRIG_H

#include <math.h>

/* Balancing poles stay within 36 degrees (0.63 rad), so libm is left only to failing states'
 * last steps. Inside pi/4 the Taylor series below stop where the first dropped term is under
 * 1e-19 (x^19/19! and x^20/20! at pi/4), far below half an ulp; what remains is the rounding of
 * Horner's steps, which tests/test_pole.c measures against libm (within one ulp). */
#define POLE_TRIG_MAX 0.78539816339744828 /* pi/4, rounded down */

/* sin x = x + x·z·(-1/3! + z/5! - z²/7! + ...), z = x². The correction x·z·(...) is under a
 * tenth of x, so its rounding barely reaches the result's last bit. */
static inline double pole_sin_small(double x) {
    double z = x * x;
    double p = 1.0 / 355687428096000.0; /* 1/17! */
    p = p * z - 1.0 / 1307674368000.0;  /* 1/15! */
    p = p * z + 1.0 / 6227020800.0;     /* 1/13! */
    p = p * z - 1.0 / 39916800.0;       /* 1/11! */
    p = p * z + 1.0 / 362880.0;         /* 1/9! */
    p = p * z - 1.0 / 5040.0;           /* 1/7! */
    p = p * z + 1.0 / 120.0;            /* 1/5! */
    p = p * z - 1.0 / 6.0;              /* 1/3! */
    return x + x * z * p;
}

/* cos x = (1 - z/2) + z²·(1/4! - z/6! + ...). 1 - z/2 is formed with its rounding error
 * recovered (exact because z/2 < 1), which is added back with the small terms. */
static inline double pole_cos_small(double x) {
    double z = x * x, half = 0.5 * z, head = 1.0 - half, head_error = (1.0 - head) - half;
    double p = 1.0 / 6402373705728000.0; /* 1/18! */
    p = p * z - 1.0 / 20922789888000.0;  /* 1/16! */
    p = p * z + 1.0 / 87178291200.0;     /* 1/14! */
    p = p * z - 1.0 / 479001600.0;       /* 1/12! */
    p = p * z + 1.0 / 3628800.0;         /* 1/10! */
    p = p * z - 1.0 / 40320.0;           /* 1/8! */
    p = p * z + 1.0 / 720.0;             /* 1/6! (negated below with the 1/4! term) */
    p = 1.0 / 24.0 - p * z;
    return head + (head_error + z * z * p);
}

/* sin and cos of x: the polynomials inside [-pi/4, pi/4] (NaN fails the test and goes to libm),
 * libm outside. */
static inline void pole_sincos(double x, double *s, double *c) {
    if (fabs(x) <= POLE_TRIG_MAX) {
        *s = pole_sin_small(x);
        *c = pole_cos_small(x);
    } else {
        *s = sin(x);
        *c = cos(x);
    }
}

/* On a function stepping lanes: a copy for CPUs with 4-wide vectors (AVX2) chosen at load
 * time, beside the baseline's 2-wide one. The same IEEE operations lane by lane either way (no
 * FMA: AVX2 does not bring it, and -ffp-contract=off forbids it), so the same bits. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define POLE_LANES_VECTOR __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef POLE_LANES_VECTOR
#define POLE_LANES_VECTOR
#endif

/* pole_sincos of x[0 .. n): the polynomials for every lane side by side (independent work the
 * core overlaps, and the compiler may vectorise), then libm for the lanes outside pi/4 (and
 * NaN), so each lane gets exactly pole_sincos's values. */
static inline void pole_sincos_lanes(int n, const double *x, double *s, double *c) {
    for (int l = 0; l < n; l++) {
        s[l] = pole_sin_small(x[l]);
        c[l] = pole_cos_small(x[l]);
    }
    for (int l = 0; l < n; l++)
        if (!(fabs(x[l]) <= POLE_TRIG_MAX)) {
            s[l] = sin(x[l]);
            c[l] = cos(x[l]);
        }
}

#endif
