/* The emitted C's own float math: exp, expm1, log, log1p, tanh, sin and cos as static inline
 * C99 functions with the JIT's formulas (math_poly.h, after Cephes' single-precision routines)
 * and selects instead of branches, so the C compiler vectorises batch loops that call them
 * (libm calls keep a loop scalar), and the two backends agree. */
#include <stdio.h>
#include <string.h>

#include "math_poly.h"
#include "render_c_internal.h"

static const char *const suffix[OTC_CRM_COUNT] = {"sel",  "exp", "expm1", "log", "log1p",
                                                  "tanh", "sin", "cos",   "fmax"};

const char *otc_cr_math(otc_cr *c, otc_cr_mathfn f, char *buf, size_t len) {
    c->math_used[c->outline][f] = true;
    snprintf(buf, len, "%s_%s%s", c->name, suffix[f], c->outline ? "_s" : "");
    return buf;
}

/* NAME_<what>, upper case like the header's macros. */
static const char *macro(char *buf, size_t len, const char *name, const char *what) {
    size_t i = 0;
    for (; name[i] && i + 16 < len; i++)
        buf[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 'a' + 'A' : name[i]);
    snprintf(buf + i, len - i, "_%s", what);
    return buf;
}

const char *otc_cr_inline(otc_cr *c) {
    return macro(c->inline_macro, sizeof c->inline_macro, c->name, "INLINE");
}

const char *otc_cr_outline(otc_cr *c) {
    return macro(c->outline_macro, sizeof c->outline_macro, c->name, "OUTLINE");
}

/* ---- the helpers' text ---- */

/* What the helpers' text is spelled with: the inline macro, the model's name and the
 * variant's suffix ("" for vector loops, "_s" for scalar code). */
typedef struct {
    const char *I, *N, *S;
} names;

/* Append tmpl with "@I", "@N" and "@S" from nm and "@0" .. "@9" the constants k[0 ..] as
 * float literals (rounded to float as the JIT's constants are). */
static void put(otc_text *t, const names *nm, const char *tmpl, const double *k) {
    for (const char *s = tmpl; *s; s++) {
        if (s[0] == '@' && (s[1] == 'I' || s[1] == 'N' || s[1] == 'S')) {
            otc_text_puts(t, s[1] == 'I' ? nm->I : s[1] == 'N' ? nm->N : nm->S);
            s++;
        } else if (s[0] == '@' && s[1] >= '0' && s[1] <= '9' && k) {
            char lit[40];
            otc_text_puts(t, otc_cr_float_literal(lit, sizeof lit, (float)k[s[1] - '0']));
            s++;
        } else {
            otc_text_printf(t, "%c", *s);
        }
    }
}

/* "    y = c0;\n    y = N_fma(y, x, c1);\n..." (Horner's rule, as llvm_math.c's poly). */
static void horner(otc_text *t, const char *N, const char *y, const char *x, const double *p,
                   int n) {
    char a[40];
    otc_text_printf(t, "    %s = %s;\n", y, otc_cr_float_literal(a, sizeof a, (float)p[0]));
    for (int i = 1; i < n; i++)
        otc_text_printf(t, "    %s = %s_fma(%s, %s, %s);\n", y, N, y, x,
                        otc_cr_float_literal(a, sizeof a, (float)p[i]));
}

/* The basics: a fused multiply-add where the hardware has one (as LLVM's fmuladd; a libm
 * fmaf call would keep the loop scalar) and bit casts. */
static const char basics[] =
    "/* Float math as the otc JIT computes it (after Cephes' single-precision routines), with\n"
    " * selects instead of branches so loops calling it vectorise. It assumes IEEE single\n"
    " * precision and a 32-bit unsigned int. */\n"
    "typedef char @N_float_is_32_bits[sizeof(float) == sizeof(unsigned int) ? 1 : -1];\n\n"
    "@I float @N_fma(float a, float b, float c) {\n"
    "#ifdef FP_FAST_FMAF\n    return fmaf(a, b, c);\n#else\n    return a * b + c;\n#endif\n}\n\n"
    "@I float @N_from_bits(unsigned int u) {\n"
    "    union {\n        unsigned int u;\n        float f;\n    } v;\n"
    "    v.u = u;\n    return v.f;\n}\n\n"
    "@I unsigned int @N_to_bits(float f) {\n"
    "    union {\n        float f;\n        unsigned int u;\n    } v;\n"
    "    v.f = f;\n    return v.u;\n}\n\n";

/* The select, c ? a : b with both evaluated. For vector loops it blends bit masks: gcc
 * threads jumps through `c ? a : b` on constants (the clamps) into control flow its
 * vectoriser gives up on, and a blend is what a vector select is anyway. In scalar code the
 * masks cost moves between register files on every select (the small-batch path runs at
 * half speed), so the scalar variant is the plain conditional. */
static const char sel_vector[] =
    "/* c ? a : b as bit masks: no branch for the compiler to thread, so loops vectorise. */\n"
    "@I float @N_sel(int c, float a, float b) {\n"
    "    const unsigned int m = 0u - (unsigned int)(c != 0);\n"
    "    return @N_from_bits((@N_to_bits(a) & m) | (@N_to_bits(b) & ~m));\n}\n\n";
static const char sel_scalar[] =
    "/* The same functions for scalar code (the small-batch path), selecting by branches. */\n"
    "@I float @N_sel_s(int c, float a, float b) {\n    return c ? a : b;\n}\n\n";

static void write_exp(otc_text *t, const names *nm) {
    static const double p[] = OTC_MP_EXP_P;
    const double k[] = {OTC_MP_EXP_HI, OTC_MP_EXP_LO, OTC_MP_LOG2E, OTC_MP_LN2_C1, OTC_MP_LN2_C2};
    put(t, nm,
        "/* e^x: x = n ln2 + r, e^r = 1 + r + r^2 P(r), 2^n built in the exponent bits. */\n"
        "@I float @N_exp@S(float x) {\n"
        "    float fx, t, r, z, y;\n    int i;\n"
        "    x = @N_sel@S(x > @0, @0, x);\n"
        "    x = @N_sel@S(x < @1, @1, x);\n"
        "    fx = @N_fma(x, @2, 0.5f);\n"
        "    fx = @N_sel@S(fx == fx, fx, 0.0f); /* NaN: a defined conversion; r stays NaN */\n"
        "    i = (int)fx;\n    t = (float)i;\n"
        "    i = i - (t > fx); /* floor */\n"
        "    t = t - @N_sel@S(t > fx, 1.0f, 0.0f);\n"
        "    r = x - t * @3;\n    r = r - t * @4;\n    z = r * r;\n",
        k);
    horner(t, nm->N, "y", "r", p, OTC_MP_EXP_N);
    put(t, nm,
        "    y = @N_fma(y, z, r + 1.0f);\n"
        "    return y * @N_from_bits((unsigned int)(i + 127) << 23);\n}\n\n",
        NULL);
}

static void write_expm1(otc_text *t, const names *nm) {
    static const double p[] = OTC_MP_EXPM1_P;
    const double k[] = {OTC_MP_EXPM1_SMALL};
    put(t, nm,
        "/* e^x - 1: a Taylor polynomial near 0, where the difference cancels. */\n"
        "@I float @N_expm1@S(float x) {\n    float s;\n",
        k);
    horner(t, nm->N, "s", "x", p, OTC_MP_EXPM1_N);
    put(t, nm, "    return @N_sel@S(fabsf(x) < @0, s, @N_exp@S(x) - 1.0f);\n}\n\n", k);
}

static void write_log(otc_text *t, const names *nm) {
    static const double p[] = OTC_MP_LOG_P;
    const double k[] = {OTC_MP_SQRTH, OTC_MP_LN2_C1, OTC_MP_LN2_C2};
    put(t, nm,
        "/* log(w) for normal w > 0: w = m 2^e, m in [sqrt(1/2), sqrt(2)). */\n"
        "@I float @N_log@S(float w) {\n"
        "    const unsigned int bits = @N_to_bits(w);\n"
        "    const float m = @N_from_bits((bits & 0x807fffffu) | 0x3f000000u); /* [0.5, 1) */\n"
        "    float fe = (float)((int)(bits >> 23) - 126), xm, z, y;\n"
        "    fe = @N_sel@S(m < @0, fe - 1.0f, fe);\n"
        "    xm = @N_sel@S(m < @0, (m + m) - 1.0f, m - 1.0f);\n"
        "    z = xm * xm;\n",
        k);
    horner(t, nm->N, "y", "xm", p, OTC_MP_LOG_N);
    put(t, nm,
        "    y = xm * z * y;\n    y = @N_fma(fe, @2, y);\n    y = @N_fma(z, -0.5f, y);\n"
        "    return @N_fma(fe, @1, xm + y);\n}\n\n",
        k);
}

static void write_log1p(otc_text *t, const names *nm) {
    put(t, nm,
        "/* log(1 + x) = log(w) x / (w - 1), w = 1 + x rounded (the quotient cancels w's\n"
        " * rounding); w == 1 means x is below float resolution. */\n"
        "@I float @N_log1p@S(float x) {\n"
        "    const float w = x + 1.0f, wm1 = w - 1.0f;\n"
        "    const float r = @N_log@S(w) * x / @N_sel@S(wm1 == 0.0f, 1.0f, wm1);\n"
        "    return @N_sel@S(wm1 == 0.0f, x, r);\n}\n\n",
        NULL);
}

static void write_tanh(otc_text *t, const names *nm) {
    static const double p[] = OTC_MP_TANH_P;
    const double k[] = {OTC_MP_TANH_SMALL};
    put(t, nm,
        "/* tanh: an odd polynomial near 0, else 1 - 2 / (e^{2|x|} + 1) with x's sign. */\n"
        "@I float @N_tanh@S(float x) {\n"
        "    const float ax = fabsf(x), z = x * x;\n    float y, big;\n",
        k);
    horner(t, nm->N, "y", "z", p, OTC_MP_TANH_N);
    put(t, nm,
        "    y = @N_fma(y * z, x, x);\n"
        "    big = copysignf(1.0f - 2.0f / (@N_exp@S(ax + ax) + 1.0f), x);\n"
        "    return @N_sel@S(ax < @0, y, big);\n}\n\n",
        k);
}

/* sin and cos share the reduction by multiples j of pi/4 and both polynomials. */
static void write_sincos(otc_text *t, const names *nm, bool cosine) {
    static const double sp[] = OTC_MP_SIN_P, cp[] = OTC_MP_COS_P;
    const double k[] = {OTC_MP_FOPI, OTC_MP_DP1, OTC_MP_DP2, OTC_MP_DP3, 8388608.0};
    put(t, nm, cosine ? "@I float @N_cos@S(float x) {\n" : "@I float @N_sin@S(float x) {\n", k);
    put(t, nm,
        "    const float ax = fabsf(x);\n"
        "    float q = ax * @0, y, r, z, s, c;\n    int j;\n"
        "    /* NaN and |x| past float resolution: a defined conversion (meaningless there). */\n"
        "    q = @N_sel@S(q < @4, q, 0.0f);\n"
        "    j = ((int)q + 1) & ~1;\n    y = (float)j;\n"
        "    r = ax - y * @1;\n    r = r - y * @2;\n    r = r - y * @3;\n    z = r * r;\n",
        k);
    horner(t, nm->N, "s", "z", sp, OTC_MP_SIN_N);
    put(t, nm, "    s = @N_fma(s * z, r, r);\n", k);
    horner(t, nm->N, "c", "z", cp, OTC_MP_COS_N);
    put(t, nm, "    c = @N_fma(c * z, z, z * -0.5f) + 1.0f;\n", k);
    if (!cosine) /* j & 7 in {0, 2, 4, 6}: 4 and 6 negative, 2 and 6 the cosine polynomial */
        put(t, nm,
            "    y = @N_sel@S(j & 2, c, s);\n    y = @N_sel@S(j & 4, -y, y);\n"
            "    return @N_sel@S(x < 0.0f, -y, y);\n}\n\n",
            k);
    else /* even; j 2 and 6 the sine polynomial, 2 and 4 negative */
        put(t, nm,
            "    y = @N_sel@S(j & 2, s, c);\n"
            "    return @N_sel@S(((j & 2) != 0) != ((j & 4) != 0), -y, y);\n}\n\n",
            k);
}

void otc_cr_math_helpers(otc_cr *c, otc_text *out) {
    bool math = false, any = false, outline = false;
    for (int v = 0; v < 2; v++) {
        bool *u = c->math_used[v];
        /* What the used functions call. */
        if (u[OTC_CRM_TANH] || u[OTC_CRM_EXPM1]) u[OTC_CRM_EXP] = true;
        if (u[OTC_CRM_LOG1P]) u[OTC_CRM_LOG] = true;
        for (int f = 0; f < OTC_CRM_COUNT; f++) u[OTC_CRM_BASICS] |= u[f];
        math |= u[OTC_CRM_BASICS];
    }
    for (int a = 0; a < OTC_ACT_COUNT; a++) {
        any |= c->f_used[a] || c->df_used[a] || c->fo_used[a];
        outline |= c->fo_used[a];
    }
    if (!math && !any) return;
    names nm = {otc_cr_inline(c), c->name, ""};
    /* Forced: gcc's inliner gives up on a helper called from a hundred neurons' loops, and
     * one call left out of line keeps that loop scalar. */
    put(out, &nm,
        "#if defined(__GNUC__)\n#define @I static inline __attribute__((always_inline))\n"
        "#else\n#define @I static inline\n#endif\n\n",
        NULL);
    if (outline) {
        const char *O = otc_cr_outline(c);
        otc_text_printf(out,
                        "#if defined(__GNUC__)\n#define %s static __attribute__((noinline))\n"
                        "#else\n#define %s static\n#endif\n\n",
                        O, O);
    }
    if (!math) return;
    put(out, &nm, basics, NULL);
    for (int v = 0; v < 2; v++) {
        const bool *u = c->math_used[v];
        if (!u[OTC_CRM_BASICS]) continue;
        nm.S = v ? "_s" : "";
        put(out, &nm, v ? sel_scalar : sel_vector, NULL);
        if (u[OTC_CRM_EXP]) write_exp(out, &nm);
        if (u[OTC_CRM_EXPM1]) write_expm1(out, &nm);
        if (u[OTC_CRM_LOG]) write_log(out, &nm);
        if (u[OTC_CRM_LOG1P]) write_log1p(out, &nm);
        if (u[OTC_CRM_TANH]) write_tanh(out, &nm);
        if (u[OTC_CRM_SIN]) write_sincos(out, &nm, false);
        if (u[OTC_CRM_COS]) write_sincos(out, &nm, true);
        if (u[OTC_CRM_FMAX])
            put(out, &nm,
                "@I float @N_fmax@S(float a, float b) {\n    return @N_sel@S(a > b, a, b);\n}\n\n",
                NULL);
    }
}

otc_status otc_emit_c_math(const char *name, char **source) {
    if (!source) return otc_fail(OTC_ERR_ARG, "emit-c math: NULL argument");
    *source = NULL;
    if (!otc_emit_c_valid_name(name))
        return otc_fail(OTC_ERR_ARG, "emit-c math: name '%s' is not a C identifier",
                        name ? name : "(null)");
    otc_cr c;
    memset(&c, 0, sizeof c);
    c.name = name;
    for (int v = 0; v < 2; v++)
        for (int f = 0; f < OTC_CRM_COUNT; f++) c.math_used[v][f] = true;
    otc_text t;
    otc_text_init(&t);
    otc_cr_math_helpers(&c, &t);
    *source = otc_text_take(&t);
    return *source ? OTC_OK : otc_fail(OTC_ERR_NOMEM, "out of memory for the generated C");
}
