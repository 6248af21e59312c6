/* The compiler's float math, each function once as an expression tree with its constants
 * (after Cephes' single-precision expf, logf, tanhf, sinf and cosf): selects instead of
 * branches so batch loops vectorise, float -> integer conversions guarded so they are defined
 * for NaN, inf and huge inputs. The C renderer prints these trees as the emitted file's
 * helpers, the LLVM renderer builds them as IR. Constants are rounded to float where used. */
#include "otc/expr_spell.h"
#include "otc/math_lib.h"

/* Named nodes: subtrees a function uses more than once (each renderer computes them once). */
#define N1(o, p)                                                                                   \
    { .op = (o), .a = (p) }
#define N2(o, p, q)                                                                                \
    { .op = (o), .a = (p), .b = (q) }
#define N3(o, p, q, r)                                                                             \
    { .op = (o), .a = (p), .b = (q), .c = (r) }
#define NPOLY(p, coefs)                                                                            \
    { .op = OTC_EX_POLY, .a = (p), .coef = (coefs), .n = (int)(sizeof(coefs) / sizeof(coefs)[0]) }

/* IEEE special values as bit patterns (the C renderer prints no non-finite literal). */
#define K_INF    EX_FROM_BITS(EX_KI(0x7f800000))
#define K_NINF   EX_FROM_BITS(EX_KI(0xff800000))
#define K_NAN    EX_FROM_BITS(EX_KI(0x7fc00000))
#define FLT_MAXK 3.4028234663852886e38
/* Below this |x|, sin x and tanh x round to x itself (x^2/3 < 2^-25): the tree returns x,
 * which keeps -0 and subnormals exactly as libm does. */
#define TINY 0x1p-12

/* ln 2 in two parts: C1 has few bits, so n * C1 is exact for the n exp and log meet. */
#define LN2_C1 0.693359375
#define LN2_C2 -2.12194440e-4

/* ---- exp: x = n ln2 + r with n = x log2 e rounded to the nearest integer,
 * e^r = 1 + r + r^2 P(r), times 2^n as two powers of two assembled in exponent bits,
 * 2^(n - s) 2^s: s = -64 below 0, so results under FLT_MIN round once to the subnormal libm
 * gives, and s = 1 above, so n = 128 overflows to inf as libm's does ---- */

/* Clamps past both ends of the float range: e^89 is inf and e^-104 rounds to 0 (under half
 * of 2^-149), so every x beyond gives the same result as libm, +-inf included. A NaN fails
 * both compares (and stays NaN through r). */
#define EXP_HI 89.0
#define EXP_LO -104.0
/* 1.5 2^23 + 127: x log2 e + this lies in [2^23, 2^24), where floats are the integers, so the
 * sum is n + 127 + 1.5 2^23 rounded to nearest, and its low bits are n + 127, the biased
 * exponent of 2^n. No float -> integer conversion: defined for every input, and fast. */
#define EXP_SHIFT  12583039.0
#define EXP_SHIFTB 0x4b400000 /* the bits of 1.5 2^23 */
static const double exp_p[] = {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3,
                               4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1};

static const otc_expr exp_hi = N3(OTC_EX_SELECT, EX_GT(EX_X, EX_K(EXP_HI)), EX_K(EXP_HI), EX_X);
static const otc_expr exp_x =
    N3(OTC_EX_SELECT, EX_LT(&exp_hi, EX_K(EXP_LO)), EX_K(EXP_LO), &exp_hi);
static const otc_expr exp_k = N3(OTC_EX_FMA, &exp_x, EX_K(1.44269504088896341), EX_K(EXP_SHIFT));
static const otc_expr exp_n = N2(OTC_EX_SUB, &exp_k, EX_K(EXP_SHIFT)); /* exact */
static const otc_expr exp_r =
    N2(OTC_EX_SUB, EX_SUB(&exp_x, EX_MUL(&exp_n, EX_K(LN2_C1))), EX_MUL(&exp_n, EX_K(LN2_C2)));
static const otc_expr exp_neg = N2(OTC_EX_LT, &exp_x, EX_K(0));
/* k - s: k is an integer-valued float near 2^23, so adding 64 or -1 is exact. */
static const otc_expr exp_ks = N2(OTC_EX_ADD, &exp_k, EX_SEL(&exp_neg, EX_K(64), EX_K(-1)));
static const otc_expr exp_tree =
    N2(OTC_EX_MUL,
       EX_MUL(EX_FMA(EX_POLY(&exp_r, exp_p), EX_MUL(&exp_r, &exp_r), EX_ADD(&exp_r, EX_K(1))),
              EX_FROM_BITS(EX_SHL(EX_ISUB(EX_BITS(&exp_ks), EX_KI(EXP_SHIFTB)), EX_KI(23)))),
       EX_SEL(&exp_neg, EX_K(0x1p-64), EX_K(2)));

/* ---- expm1: below |x| < 1/8 the Taylor series to x^6 as x Q(x) (exact to float there,
 * where e^x - 1 cancels; x times keeps -0), else e^x - 1 ---- */

static const double expm1_p[] = {1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0};
static const otc_expr expm1_tree =
    N3(OTC_EX_SELECT, EX_LT(EX_ABS(EX_X), EX_K(0.125)), EX_MUL(EX_X, EX_POLY(EX_X, expm1_p)),
       EX_SUB(EX_EXP(EX_X), EX_K(1)));

/* ---- log(w) for finite w > 0: w = m 2^e with m in [sqrt(1/2), sqrt(2)),
 * log(1 + x) = x - x^2/2 + x^3 P(x) on x = m - 1, plus e ln 2; a subnormal w scaled by 2^25
 * first. Then libm's special cases: log(+inf) = inf, log(+-0) = -inf, below 0 and NaN NaN ---- */

#define SQRTH 0.707106781186547524
static const double log_p[] = {7.0376836292E-2,  -1.1514610310E-1, 1.1676998740E-1,
                               -1.2420140846E-1, 1.4249322787E-1,  -1.6668057665E-1,
                               2.0000714765E-1,  -2.4999993993E-1, 3.3333331174E-1};

static const otc_expr log_sub = N2(OTC_EX_LT, EX_X, EX_K(0x1p-126));
static const otc_expr log_bits =
    N1(OTC_EX_BITS, EX_SEL(&log_sub, EX_MUL(EX_X, EX_K(0x1p25)), EX_X));
/* The mantissa with the exponent of 0.5: m in [0.5, 1), w = m 2^(e + 126 - 126). */
static const otc_expr log_m =
    N1(OTC_EX_FROM_BITS, EX_IOR(EX_IAND(&log_bits, EX_KI(0x807fffff)), EX_KI(0x3f000000)));
static const otc_expr log_e0 = N1(OTC_EX_I2F, EX_ISUB(EX_LSHR(&log_bits, EX_KI(23)), EX_KI(126)));
static const otc_expr log_e = N2(OTC_EX_SUB, &log_e0, EX_SEL(&log_sub, EX_K(25), EX_K(0)));
static const otc_expr log_low = N2(OTC_EX_LT, &log_m, EX_K(SQRTH)); /* then use 2m, e - 1 */
static const otc_expr log_fe = N3(OTC_EX_SELECT, &log_low, EX_SUB(&log_e, EX_K(1)), &log_e);
static const otc_expr log_xm =
    N3(OTC_EX_SELECT, &log_low, EX_SUB(EX_ADD(&log_m, &log_m), EX_K(1)), EX_SUB(&log_m, EX_K(1)));
static const otc_expr log_z = N2(OTC_EX_MUL, &log_xm, &log_xm);
static const otc_expr log_finite =
    N3(OTC_EX_FMA, &log_fe, EX_K(LN2_C1),
       EX_ADD(&log_xm, EX_FMA(&log_z, EX_K(-0.5),
                              EX_FMA(&log_fe, EX_K(LN2_C2),
                                     EX_MUL(EX_MUL(&log_xm, &log_z), EX_POLY(&log_xm, log_p))))));
static const otc_expr log_tree =
    N3(OTC_EX_SELECT, EX_GT(EX_X, EX_K(0)), EX_SEL(EX_GT(EX_X, EX_K(FLT_MAXK)), EX_X, &log_finite),
       EX_SEL(EX_EQ(EX_X, EX_K(0)), K_NINF, K_NAN));

/* ---- log1p(x) = log(w) x / (w - 1) with w = 1 + x rounded: the quotient cancels w's
 * rounding (Goldberg's trick); w - 1 == 0 means x is below float resolution, and above
 * 2^24 w is x and log w is log1p x to float (x / (w - 1) would overflow or be inf/inf) ---- */

static const otc_expr log1p_w = N2(OTC_EX_ADD, EX_X, EX_K(1));
static const otc_expr log1p_wm1 = N2(OTC_EX_SUB, &log1p_w, EX_K(1));
static const otc_expr log1p_tiny = N2(OTC_EX_EQ, &log1p_wm1, EX_K(0));
static const otc_expr log1p_tree =
    N3(OTC_EX_SELECT, &log1p_tiny, EX_X,
       EX_SEL(EX_GT(&log1p_w, EX_K(0x1p24)), EX_LOG(&log1p_w),
              EX_DIV(EX_MUL(EX_LOG(&log1p_w), EX_X), EX_SEL(&log1p_tiny, EX_K(1), &log1p_wm1))));

/* ---- tanh: below TINY x itself, below |x| < 0.625 the odd polynomial x + x^3 P(x^2), else
 * 1 - 2 / (e^{2|x|} + 1) with x's sign ---- */

static const double tanh_p[] = {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2,
                                1.33314422036E-1, -3.33332819422E-1};
static const otc_expr tanh_ax = N1(OTC_EX_ABS, EX_X);
static const otc_expr tanh_z = N2(OTC_EX_MUL, EX_X, EX_X);
static const otc_expr tanh_tree = N3(
    OTC_EX_SELECT, EX_LT(&tanh_ax, EX_K(TINY)), EX_X,
    EX_SEL(EX_LT(&tanh_ax, EX_K(0.625)),
           EX_FMA(EX_MUL(EX_POLY(&tanh_z, tanh_p), &tanh_z), EX_X, EX_X),
           EX_COPYSIGN(EX_SUB(EX_K(1),
                              EX_DIV(EX_K(2), EX_ADD(EX_EXP(EX_ADD(&tanh_ax, &tanh_ax)), EX_K(1)))),
                       EX_X)));

/* ---- sin and cos: |x| reduced by the even multiple j of pi/4 nearest (4/pi, then pi/4 in
 * three parts), the sine polynomial r + r^3 S(r^2) and the cosine 1 - r^2/2 + r^4 C(r^2) on
 * the remainder r; j's bits pick the polynomial and the sign. Accurate to |x| = 8192; past
 * float resolution (|x| 4/pi >= 2^23) r is taken as 0, a value in [-1, 1] but not libm's.
 * Infinities and NaN give NaN (x - x), as libm. ---- */

static const double sin_p[] = {-1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1};
static const double cos_p[] = {2.443315711809948E-5, -1.388731625493765E-3, 4.166664568298827E-2};

static const otc_expr sc_ax = N1(OTC_EX_ABS, EX_X);
static const otc_expr sc_q0 = N2(OTC_EX_MUL, &sc_ax, EX_K(1.27323954473516)); /* |x| 4/pi */
/* NaN and |x| past float resolution convert as 0 (defined; the result is fixed at the end). */
static const otc_expr sc_in = N2(OTC_EX_LT, &sc_q0, EX_K(8388608));
static const otc_expr sc_q = N3(OTC_EX_SELECT, &sc_in, &sc_q0, EX_K(0));
static const otc_expr sc_axr = N3(OTC_EX_SELECT, &sc_in, &sc_ax, EX_K(0));
static const otc_expr sc_j = N2(OTC_EX_IAND, EX_IADD(EX_F2I(&sc_q), EX_KI(1)), EX_KI(-2));
static const otc_expr sc_y = N1(OTC_EX_I2F, &sc_j);
static const otc_expr sc_r = N2(OTC_EX_SUB,
                                EX_SUB(EX_SUB(&sc_axr, EX_MUL(&sc_y, EX_K(0.78515625))),
                                       EX_MUL(&sc_y, EX_K(2.4187564849853515625e-4))),
                                EX_MUL(&sc_y, EX_K(3.77489497744594108e-8)));
static const otc_expr sc_z = N2(OTC_EX_MUL, &sc_r, &sc_r);
static const otc_expr sc_s = N3(OTC_EX_FMA, EX_MUL(EX_POLY(&sc_z, sin_p), &sc_z), &sc_r, &sc_r);
static const otc_expr sc_c =
    N2(OTC_EX_ADD, EX_FMA(EX_MUL(EX_POLY(&sc_z, cos_p), &sc_z), &sc_z, EX_MUL(&sc_z, EX_K(-0.5))),
       EX_K(1));
/* j & 7 in {0, 2, 4, 6}: bit 2 set takes the other polynomial. */
static const otc_expr sc_bit2 = N2(OTC_EX_INE, EX_IAND(&sc_j, EX_KI(2)), EX_KI(0));

/* sin: j 4 and 6 negative, and x's sign (odd). */
static const otc_expr sin_y = N3(OTC_EX_SELECT, &sc_bit2, &sc_c, &sc_s);
static const otc_expr sin_y4 =
    N3(OTC_EX_SELECT, EX_INE(EX_IAND(&sc_j, EX_KI(4)), EX_KI(0)), EX_NEG(&sin_y), &sin_y);
static const otc_expr sin_odd = N3(OTC_EX_SELECT, EX_LT(EX_X, EX_K(0)), EX_NEG(&sin_y4), &sin_y4);
/* x - x: 0 for finite x, NaN for +-inf and NaN. */
static const otc_expr sc_nan = N2(OTC_EX_SUB, EX_X, EX_X);
static const otc_expr sc_finite = N2(OTC_EX_EQ, &sc_nan, EX_K(0));
static const otc_expr sin_tree =
    N3(OTC_EX_SELECT, &sc_finite, EX_SEL(EX_LT(&sc_ax, EX_K(TINY)), EX_X, &sin_odd), &sc_nan);

/* cos (even): j 2 and 4 negative, that is bit 2 of j + 2. */
static const otc_expr cos_y = N3(OTC_EX_SELECT, &sc_bit2, &sc_s, &sc_c);
static const otc_expr cos_even =
    N3(OTC_EX_SELECT, EX_INE(EX_IAND(EX_IADD(&sc_j, EX_KI(2)), EX_KI(4)), EX_KI(0)), EX_NEG(&cos_y),
       &cos_y);
static const otc_expr cos_tree = N3(OTC_EX_SELECT, &sc_finite, &cos_even, &sc_nan);

const otc_expr *otc_math_tree(otc_ex_op f) {
    switch (f) {
    case OTC_EX_EXP:
        return &exp_tree;
    case OTC_EX_EXPM1:
        return &expm1_tree;
    case OTC_EX_LOG:
        return &log_tree;
    case OTC_EX_LOG1P:
        return &log1p_tree;
    case OTC_EX_TANH:
        return &tanh_tree;
    case OTC_EX_SIN:
        return &sin_tree;
    case OTC_EX_COS:
        return &cos_tree;
    default:
        return NULL;
    }
}
