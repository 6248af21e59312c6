/* Private: the constants of the compiler's branch-free float math (after Cephes' single-precision
 * expf, logf, tanhf, sinf and cosf), shared by the LLVM renderer (llvm_math.c) and the C
 * renderer (render_c_math.c) so the JIT and the emitted C compute the same formulas.
 * Coefficient lists are initialisers, highest power first (Horner's rule); every value is
 * rounded to float where it is used. */
#ifndef OTC_MATH_POLY_H
#define OTC_MATH_POLY_H

/* clang-format off */

/* exp: clamp so 2^n stays a normal float, x = n ln2 + r with ln2 split in two (C1 has few
 * bits so n * C1 is exact), then e^r = 1 + r + r^2 P(r). */
/* The upper clamp sits a little below Cephes' 88.3762626647949: that value rounds to a float
 * whose x log2(e) + 1/2 is 128 exactly when computed with a fused multiply-add, and 2^128
 * overflows; at 88.37 the result is a finite 2.4e38. */
#define OTC_MP_EXP_HI  88.37
#define OTC_MP_EXP_LO  -88.3762626647949
#define OTC_MP_LOG2E   1.44269504088896341
#define OTC_MP_LN2_C1  0.693359375
#define OTC_MP_LN2_C2  -2.12194440e-4
#define OTC_MP_EXP_P   {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3, \
                        4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1}
#define OTC_MP_EXP_N   6

/* expm1: below |x| < OTC_MP_EXPM1_SMALL the Taylor series to x^6 (exact to float there),
 * else exp(x) - 1. */
#define OTC_MP_EXPM1_SMALL  0.125
#define OTC_MP_EXPM1_P      {1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 0.0}
#define OTC_MP_EXPM1_N      7

/* log(w), w = m 2^e with m in [sqrt(1/2), sqrt(2)): log(1 + x) = x - x^2/2 + x^3 P(x). */
#define OTC_MP_SQRTH  0.707106781186547524
#define OTC_MP_LOG_P  {7.0376836292E-2,  -1.1514610310E-1, 1.1676998740E-1,  \
                       -1.2420140846E-1, 1.4249322787E-1,  -1.6668057665E-1, \
                       2.0000714765E-1,  -2.4999993993E-1, 3.3333331174E-1}
#define OTC_MP_LOG_N  9

/* tanh: below |x| < OTC_MP_TANH_SMALL the odd polynomial x + x^3 P(x^2), else
 * 1 - 2 / (e^{2|x|} + 1) with x's sign. */
#define OTC_MP_TANH_SMALL  0.625
#define OTC_MP_TANH_P      {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2, \
                            1.33314422036E-1, -3.33332819422E-1}
#define OTC_MP_TANH_N      5

/* sin/cos: |x| reduced by multiples j of pi/4 (4/pi, then pi/4 in three parts), the sine
 * polynomial r + r^3 S(r^2) and the cosine 1 - r^2/2 + r^4 C(r^2) on the remainder. */
#define OTC_MP_FOPI   1.27323954473516
#define OTC_MP_DP1    0.78515625
#define OTC_MP_DP2    2.4187564849853515625e-4
#define OTC_MP_DP3    3.77489497744594108e-8
#define OTC_MP_SIN_P  {-1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1}
#define OTC_MP_SIN_N  3
#define OTC_MP_COS_P  {2.443315711809948E-5, -1.388731625493765E-3, 4.166664568298827E-2}
#define OTC_MP_COS_N  3

/* clang-format on */

#endif
