/* Private to the pole tasks: sin and cos of the small angles the poles live at, as inline
 * polynomials (libm outside their range), so the physics need no libm call per step. */
#ifndef OTC_POLE_TRIG_H
#define OTC_POLE_TRIG_H

#include <math.h>

/* The polynomials are Sun's fdlibm kernels (__kernel_sin, __kernel_cos in FreeBSD msun's
 * k_sin.c and k_cos.c: "Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
 * Developed at SunPro, a Sun Microsystems, Inc. business. Permission to use, copy, modify,
 * and distribute this software is freely granted, provided that this notice is preserved."),
 * with the tail y of an argument reduction at 0. Their published bound is an error under one
 * ulp for |x| <= pi/4; tests/test_pole.c measures them against libm. Balancing poles stay
 * within 36 degrees (0.63 rad), so libm is left only to failing states' last steps. */
#define POLE_TRIG_MAX 0.78539816339744828 /* pi/4, rounded down */

static inline double pole_sin_kernel(double x) {
    const double s1 = -1.66666666666666324348e-01, s2 = 8.33333333332248946124e-03,
                 s3 = -1.98412698298579493134e-04, s4 = 2.75573137070700676789e-06,
                 s5 = -2.50507602534068634195e-08, s6 = 1.58969099521155010221e-10;
    double z = x * x, w = z * z;
    double r = s2 + z * (s3 + z * s4) + z * w * (s5 + z * s6);
    return x + z * x * (s1 + z * r);
}

static inline double pole_cos_kernel(double x) {
    const double c1 = 4.16666666666666019037e-02, c2 = -1.38888888888741095749e-03,
                 c3 = 2.48015872894767294178e-05, c4 = -2.75573143513906633035e-07,
                 c5 = 2.08757232129817482790e-09, c6 = -1.13596475577881948265e-11;
    double z = x * x, w = z * z;
    double r = z * (c1 + z * (c2 + z * c3)) + w * w * (c4 + z * (c5 + z * c6));
    double hz = 0.5 * z, t = 1.0 - hz;
    /* 1 - z/2 split so its rounding error is added back with the small terms. */
    return t + (((1.0 - t) - hz) + z * r);
}

/* sin and cos of x: the kernels inside [-pi/4, pi/4] (NaN included: it fails the test and
 * goes to libm), libm outside. */
static inline void pole_sincos(double x, double *s, double *c) {
    if (fabs(x) <= POLE_TRIG_MAX) {
        *s = pole_sin_kernel(x);
        *c = pole_cos_kernel(x);
    } else {
        *s = sin(x);
        *c = cos(x);
    }
}

#endif
