/* The compiler's math library trees themselves (otc_math_tree: exp, expm1, log, log1p, tanh,
 * sin, cos), evaluated point by point with otc_expr_eval (fused multiply-adds exact, calls
 * inside a tree from libm) against libm's double-precision functions: the same bounds as the
 * emitted C's (test_render_c_math.c), the special values, and every float -> integer
 * conversion in range for every input (NaN, inf, huge), so no backend converts out of range. */
#include <float.h>
#include <stdint.h>

#include "harness.h"
#include "otc/math_lib.h"

static const otc_ex_op fns[] = {OTC_EX_EXP,  OTC_EX_EXPM1, OTC_EX_LOG, OTC_EX_LOG1P,
                                OTC_EX_TANH, OTC_EX_SIN,   OTC_EX_COS};
enum { N_FNS = sizeof fns / sizeof fns[0] };

static float eval(otc_ex_op f, float x) {
    return otc_expr_eval(otc_math_tree(f), &(otc_expr_env){.x = x});
}

/* libm's functions in double (exp overflows and underflows as libm's float exp). */
static double ref(otc_ex_op f, double x) {
    switch (f) {
    case OTC_EX_EXP:
        return exp(x);
    case OTC_EX_EXPM1:
        return expm1(x);
    case OTC_EX_LOG:
        return log(x);
    case OTC_EX_LOG1P:
        return log1p(x);
    case OTC_EX_TANH:
        return tanh(x);
    case OTC_EX_SIN:
        return sin(x);
    default:
        return cos(x);
    }
}

/* Error of y against want in ulps of want (the spacing of floats at |want|, never below
 * FLT_MIN's). */
static double ulps(float y, double want) {
    int e;
    frexp(fabs(want) > FLT_MIN ? want : FLT_MIN, &e);
    return fabs((double)y - want) / ldexp(1.0, e - 24);
}

typedef struct {
    otc_ex_op f;
    double lo, hi, max_ulp, max_abs; /* a bound < 0: not checked */
} range;

/* As test_render_c_math.c's: in ulps of the result, absolute where the result crosses zero
 * (sin, cos) or leaves the normal floats (exp's lower clamp). */
static const range ranges[] = {
    {OTC_EX_EXP, -87.3, 88.37, 2.0, -1},
    {OTC_EX_EXP, -88.37, -87.3, -1, 1.2e-38},
    {OTC_EX_EXP, -1.0, 1.0, 2.0, -1},
    {OTC_EX_EXP, 88.37, 88.72, 2.0, -1},
    {OTC_EX_EXP, -103.9, -88.37, -1, 2e-45}, /* subnormal results: within an ulp */
    {OTC_EX_EXPM1, -0.125, 0.125, 2.0, -1},
    {OTC_EX_EXPM1, -87.0, 88.3, 16.0, -1},
    {OTC_EX_LOG, 1.17549435e-38, 3.4e38, 2.0, -1},
    {OTC_EX_LOG, 0.5, 2.0, 2.0, -1},
    {OTC_EX_LOG, 0.999, 1.001, 2.0, -1},
    {OTC_EX_LOG1P, -0.999, 10.0, 4.0, -1},
    {OTC_EX_LOG1P, -1e-3, 1e-3, 4.0, -1},
    {OTC_EX_LOG1P, 10.0, 1e30, 4.0, -1},
    {OTC_EX_TANH, -20.0, 20.0, 4.0, -1},
    {OTC_EX_TANH, -0.7, 0.7, 2.0, -1},
    {OTC_EX_TANH, -1e30, 1e30, 4.0, -1},
    {OTC_EX_SIN, -8192.0, 8192.0, -1, 4e-7},
    {OTC_EX_SIN, -3.2, 3.2, -1, 2e-7},
    {OTC_EX_SIN, -0.78, 0.78, 2.0, -1},
    {OTC_EX_COS, -8192.0, 8192.0, -1, 4e-7},
    {OTC_EX_COS, -3.2, 3.2, -1, 2e-7},
    {OTC_EX_COS, -0.78, 0.78, 2.0, -1},
};

TEST(math_tree_vs_libm) {
    enum { N = 20001 };
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
        const range *R = &ranges[r];
        double worst_ulp = 0, worst_abs = 0, at_ulp = 0, at_abs = 0;
        for (int i = 0; i < N; i++) {
            /* Evenly spaced, or log-spaced for ranges spanning many octaves of one sign. */
            double x = R->lo > 0 && R->hi / R->lo > 1e3
                           ? R->lo * pow(R->hi / R->lo, (double)i / (N - 1))
                           : R->lo + (R->hi - R->lo) * i / (N - 1);
            const float xf = (float)x;
            const float y = eval(R->f, xf);
            const double want = ref(R->f, (double)xf), u = ulps(y, want),
                         a = fabs((double)y - want);
            if (!(u <= worst_ulp)) worst_ulp = u, at_ulp = xf;
            if (!(a <= worst_abs)) worst_abs = a, at_abs = xf;
        }
        const bool ok = (R->max_ulp < 0 || worst_ulp <= R->max_ulp) &&
                        (R->max_abs < 0 || worst_abs <= R->max_abs);
        CHECK_MSG(ok, "%s on [%g, %g]: %.2f ulp at %.9g, abs %.3g at %.9g", otc_expr_op_name(R->f),
                  R->lo, R->hi, worst_ulp, at_ulp, worst_abs, at_abs);
    }
}

/* Hand-checked values at the edges: zeros, infinities, NaN, tiny and huge arguments. */
TEST(math_tree_special_values) {
    const float nan = NAN, inf = INFINITY, tiny = 1e-30f, sub = 1e-40f;
    /* exp overflows to inf and underflows through the subnormals to 0, as libm's; NaN stays
     * NaN. e^-100 = 3.72e-44 is 26.6 times 2^-149. */
    CHECK(eval(OTC_EX_EXP, 0.0f) == 1.0f && eval(OTC_EX_EXP, -0.0f) == 1.0f);
    CHECK(eval(OTC_EX_EXP, tiny) == 1.0f && eval(OTC_EX_EXP, sub) == 1.0f);
    CHECK(eval(OTC_EX_EXP, inf) == inf && eval(OTC_EX_EXP, 3e38f) == inf);
    CHECK(eval(OTC_EX_EXP, 88.8f) == inf && eval(OTC_EX_EXP, 88.7f) < FLT_MAX);
    CHECK(eval(OTC_EX_EXP, -inf) == 0.0f && eval(OTC_EX_EXP, -3e38f) == 0.0f);
    CHECK(eval(OTC_EX_EXP, -104.0f) == 0.0f && eval(OTC_EX_EXP, -100.0f) == 27 * 0x1p-149f);
    CHECK(isnan(eval(OTC_EX_EXP, nan)));
    /* expm1: exact below float resolution, -1 far left. */
    CHECK(eval(OTC_EX_EXPM1, 0.0f) == 0.0f && eval(OTC_EX_EXPM1, tiny) == tiny);
    CHECK(eval(OTC_EX_EXPM1, -tiny) == -tiny && eval(OTC_EX_EXPM1, sub) == sub);
    CHECK(eval(OTC_EX_EXPM1, -100.0f) == -1.0f && eval(OTC_EX_EXPM1, -inf) == -1.0f);
    CHECK(eval(OTC_EX_EXPM1, inf) == inf && isnan(eval(OTC_EX_EXPM1, nan)));
    CHECK(signbit(eval(OTC_EX_EXPM1, -0.0f)) && eval(OTC_EX_EXPM1, -0.0f) == 0.0f);
    /* log over the normal floats. */
    CHECK(eval(OTC_EX_LOG, 1.0f) == 0.0f);
    CHECK(fabs(eval(OTC_EX_LOG, FLT_MIN) - log((double)FLT_MIN)) < 1e-5);
    CHECK(fabs(eval(OTC_EX_LOG, FLT_MAX) - log((double)FLT_MAX)) < 1e-5);
    CHECK(fabs(eval(OTC_EX_LOG, tiny) - log((double)tiny)) < 1e-5);
    /* ... the subnormals (log 2^-149 = -103.279), and libm's special cases. */
    CHECK(fabs(eval(OTC_EX_LOG, 0x1p-149f) - (-149 * log(2.0))) < 1e-5);
    CHECK(fabs(eval(OTC_EX_LOG, sub) - log((double)sub)) < 1e-5);
    CHECK(eval(OTC_EX_LOG, inf) == inf && eval(OTC_EX_LOG, 0.0f) == -inf);
    CHECK(eval(OTC_EX_LOG, -0.0f) == -inf && isnan(eval(OTC_EX_LOG, -1.0f)));
    CHECK(isnan(eval(OTC_EX_LOG, nan)) && isnan(eval(OTC_EX_LOG, -inf)));
    /* log1p: exact below float resolution; NaN stays NaN. */
    CHECK(eval(OTC_EX_LOG1P, 0.0f) == 0.0f && eval(OTC_EX_LOG1P, tiny) == tiny);
    CHECK(eval(OTC_EX_LOG1P, -tiny) == -tiny && eval(OTC_EX_LOG1P, sub) == sub);
    CHECK(isnan(eval(OTC_EX_LOG1P, nan)));
    CHECK(eval(OTC_EX_LOG1P, inf) == inf && eval(OTC_EX_LOG1P, -1.0f) == -inf);
    CHECK(fabs(eval(OTC_EX_LOG1P, FLT_MAX) - log((double)FLT_MAX)) < 1e-5);
    CHECK(isnan(eval(OTC_EX_LOG1P, -2.0f)) && isnan(eval(OTC_EX_LOG1P, -inf)));
    /* tanh: odd, +-1 far out, exact near 0. */
    CHECK(eval(OTC_EX_TANH, 0.0f) == 0.0f && eval(OTC_EX_TANH, tiny) == tiny);
    CHECK(eval(OTC_EX_TANH, -tiny) == -tiny && eval(OTC_EX_TANH, sub) == sub);
    CHECK(eval(OTC_EX_TANH, 100.0f) == 1.0f && eval(OTC_EX_TANH, -100.0f) == -1.0f);
    CHECK(eval(OTC_EX_TANH, inf) == 1.0f && eval(OTC_EX_TANH, -inf) == -1.0f);
    CHECK(eval(OTC_EX_TANH, 3e38f) == 1.0f && isnan(eval(OTC_EX_TANH, nan)));
    CHECK(signbit(eval(OTC_EX_TANH, -0.0f)) && signbit(eval(OTC_EX_SIN, -0.0f)));
    /* sin, cos: exact near 0, NaN stays NaN; past |x| = 8192 no accuracy is promised, but the
     * result is defined (checked below). */
    CHECK(eval(OTC_EX_SIN, 0.0f) == 0.0f && eval(OTC_EX_SIN, tiny) == tiny);
    CHECK(eval(OTC_EX_SIN, -tiny) == -tiny && eval(OTC_EX_SIN, sub) == sub);
    CHECK(eval(OTC_EX_COS, 0.0f) == 1.0f && eval(OTC_EX_COS, -0.0f) == 1.0f);
    CHECK(eval(OTC_EX_COS, tiny) == 1.0f);
    CHECK(isnan(eval(OTC_EX_SIN, nan)) && isnan(eval(OTC_EX_COS, nan)));
    CHECK(isnan(eval(OTC_EX_SIN, inf)) && isnan(eval(OTC_EX_COS, -inf)));
    CHECK(fabsf(eval(OTC_EX_SIN, FLT_MAX)) <= 1.0f && fabsf(eval(OTC_EX_COS, 1e20f)) <= 1.0f);
    /* Quadrants: sin and cos at multiples of pi/2 (within float rounding of pi). */
    CHECK(fabs(eval(OTC_EX_SIN, 1.57079637f) - 1.0) < 1e-7);
    CHECK(fabs(eval(OTC_EX_SIN, -1.57079637f) + 1.0) < 1e-7);
    CHECK(fabs(eval(OTC_EX_COS, 3.14159274f) + 1.0) < 1e-7);
    CHECK(fabs(eval(OTC_EX_SIN, 4.71238899f) + 1.0) < 1e-7);
    CHECK(fabs(eval(OTC_EX_COS, 6.28318548f) - 1.0) < 1e-7);
}

/* The float -> integer conversions (F2I nodes) of tree e, at most max of them. */
static int conversions(const otc_expr *e, const otc_expr **found, int n, int max) {
    if (!e) return n;
    if (e->op == OTC_EX_F2I) {
        bool seen = false;
        for (int i = 0; i < n; i++) seen |= found[i] == e;
        if (!seen && n < max) found[n++] = e;
    }
    n = conversions(e->a, found, n, max);
    n = conversions(e->b, found, n, max);
    return conversions(e->c, found, n, max);
}

/* A conversion out of int32's range is undefined in C and poison in LLVM: the trees guard
 * each one so that its operand is in range for every float, NaN, inf and subnormal included.
 * Checked over a sweep of all bit patterns and the special values. */
TEST(math_tree_conversions_defined_everywhere) {
    const otc_expr *found[8];
    int total = 0;
    for (int k = 0; k < N_FNS; k++) {
        const int n = conversions(otc_math_tree(fns[k]), found, 0, 8);
        total += n;
        long bad = 0;
        uint32_t first = 0;
        const float specials[] = {NAN,   -NAN,    INFINITY,      -INFINITY, 0.0f,
                                  -0.0f, FLT_MAX, -FLT_MAX,      1e-40f,    -1e-40f,
                                  3e9f,  -3e9f,   2147483648.0f, 1e20f};
        const int n_specials = (int)(sizeof specials / sizeof specials[0]);
        for (int64_t i = -n_specials; i < 100003; i++) {
            float x;
            if (i < 0) {
                x = specials[-i - 1];
            } else {
                const uint32_t u = (uint32_t)(i * 42947ll + 12345); /* all exponents, signs */
                memcpy(&x, &u, sizeof x);
            }
            for (int c = 0; c < n; c++) {
                const float v = otc_expr_eval(found[c]->a, &(otc_expr_env){.x = x});
                if (!(v > -2147483648.0f && v < 2147483648.0f) && !bad++)
                    memcpy(&first, &x, sizeof first);
            }
        }
        CHECK_MSG(bad == 0, "%s: %ld conversions out of range (first at x bits %08x)",
                  otc_expr_op_name(fns[k]), bad, (unsigned)first);
    }
    CHECK(total >= 2); /* sin's and cos's (exp has none) */
}

TEST(math_tree_shape) {
    for (int k = 0; k < N_FNS; k++) {
        const otc_expr *t = otc_math_tree(fns[k]);
        REQUIRE(t != NULL);
        CHECK(otc_expr_type(t) == OTC_EX_FLOAT);
        CHECK(otc_expr_reads(t, OTC_EX_X));
        CHECK(!otc_expr_reads(t, OTC_EX_X1) && !otc_expr_reads(t, OTC_EX_Y) &&
              !otc_expr_reads(t, OTC_EX_A));
    }
    /* Calls between functions go through nodes: tanh and expm1 call exp, log1p calls log. */
    CHECK(otc_expr_calls_math(otc_math_tree(OTC_EX_TANH)));
    CHECK(otc_expr_calls_math(otc_math_tree(OTC_EX_EXPM1)));
    CHECK(otc_expr_calls_math(otc_math_tree(OTC_EX_LOG1P)));
    CHECK(!otc_expr_calls_math(otc_math_tree(OTC_EX_EXP)));
    CHECK(!otc_expr_calls_math(otc_math_tree(OTC_EX_SIN)));
    CHECK(otc_math_tree(OTC_EX_ADD) == NULL && otc_math_tree(OTC_EX_X) == NULL);
    CHECK(otc_math_tree((otc_ex_op)-1) == NULL && otc_math_tree(OTC_EX_COUNT) == NULL);
}
