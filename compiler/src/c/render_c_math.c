/* The emitted C's own float math: exp, expm1, log, log1p, tanh, sin and cos as static inline
 * C99 functions printed from the math library's trees (otc/math_lib.h), which the JIT builds
 * too, with selects instead of branches, so the C compiler vectorises batch loops that call them
 * (libm calls keep a loop scalar), and the two backends agree. */
#include <stdio.h>
#include <string.h>

#include "otc/math_lib.h"
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
    otc_cr_upper(buf, name, len);
    size_t i = strlen(buf);
    snprintf(buf + i, len - i, "_%s", what);
    return buf;
}

const char *otc_cr_inline(otc_cr *c) {
    return macro(c->inline_macro, sizeof c->inline_macro, c->name, "INLINE");
}

const char *otc_cr_outline(otc_cr *c) {
    return macro(c->outline_macro, sizeof c->outline_macro, c->name, "OUTLINE");
}

const char *otc_cr_sqrt(otc_cr *c) {
    c->sqrt_used = true;
    return macro(c->sqrt_macro, sizeof c->sqrt_macro, c->name, "SQRT");
}

/* sqrtf may set errno (a negative argument), and gcc and clang keep a loop that calls it
 * scalar unless the user compiles with -fno-math-errno. clang's elementwise builtin is the
 * same correctly rounded square root (sqrtps) without errno: Adam's update loop vectorises
 * (4000 weights: 10.5 -> 1.8 ns per weight at -O2, the same bits). gcc 12 has no such
 * spelling (neither __builtin_sqrtf, an optimize attribute or pragma, nor a fabs argument
 * lifts the errno check), so it keeps sqrtf. */
void otc_cr_sqrt_macro(otc_cr *c, otc_text *out) {
    if (!c->sqrt_used) return;
    const char *S = c->sqrt_macro;
    otc_text_printf(out,
                    "#if defined(__clang__) && defined(__has_builtin)\n"
                    "#if __has_builtin(__builtin_elementwise_sqrt)\n"
                    "#define %s(x) __builtin_elementwise_sqrt(x)\n#endif\n#endif\n"
                    "#ifndef %s\n#define %s(x) sqrtf(x)\n#endif\n\n",
                    S, S, S);
}

/* ---- the helpers' text ---- */

/* What the helpers' text is spelled with: the inline macro, the model's name and the
 * variant's suffix ("" for vector loops, "_s" for scalar code). */
typedef struct {
    const char *I, *N, *S;
} names;

/* Append tmpl with "@I", "@N" and "@S" from nm. */
static void put(otc_text *t, const names *nm, const char *tmpl) {
    for (const char *s = tmpl; *s; s++) {
        if (s[0] == '@' && (s[1] == 'I' || s[1] == 'N' || s[1] == 'S')) {
            otc_text_puts(t, s[1] == 'I' ? nm->I : s[1] == 'N' ? nm->N : nm->S);
            s++;
        } else {
            otc_text_printf(t, "%c", *s);
        }
    }
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

/* The math function each helper spells: its tree (otc/math_lib.h). */
static const otc_expr *tree(int f) {
    return f >= OTC_CRM_EXP && f <= OTC_CRM_COS
               ? otc_math_tree((otc_ex_op)(OTC_EX_EXP + (f - OTC_CRM_EXP)))
               : NULL;
}
_Static_assert(OTC_CRM_COS - OTC_CRM_EXP == OTC_EX_COS - OTC_EX_EXP,
               "the helpers exp .. cos in the expression ops' order");

/* Marks in calls the helpers e calls (the math functions, and fmax for its max). */
static void mark_calls(const otc_expr *e, bool *calls) {
    if (!e) return;
    if (e->op == OTC_EX_MAX) calls[OTC_CRM_FMAX] = true;
    if (e->op >= OTC_EX_EXP && e->op <= OTC_EX_COS)
        calls[OTC_CRM_EXP + (e->op - OTC_EX_EXP)] = true;
    mark_calls(e->a, calls);
    mark_calls(e->b, calls);
    mark_calls(e->c, calls);
}

/* Helper f of the variant c->outline selects, after the helpers it calls (C needs them
 * defined first): its tree's body, a local per shared subtree. */
static void write_fn(otc_cr *c, otc_text *out, const names *nm, int f, bool *done) {
    if (done[f]) return;
    done[f] = true;
    if (f == OTC_CRM_FMAX) {
        put(out, nm,
            "@I float @N_fmax@S(float a, float b) {\n    return @N_sel@S(a > b, a, b);\n}\n\n");
        return;
    }
    bool calls[OTC_CRM_COUNT] = {false};
    mark_calls(tree(f), calls);
    for (int g = 0; g < OTC_CRM_COUNT; g++)
        if (calls[g]) write_fn(c, out, nm, g, done);
    otc_text_printf(out, "%s float %s_%s%s(float x) {\n", nm->I, nm->N, suffix[f], nm->S);
    otc_cr_expr_body(c, out, tree(f), &(otc_cr_leaves){.x = "x"}, "    ");
    otc_text_puts(out, "}\n\n");
}

void otc_cr_math_helpers(otc_cr *c, otc_text *out) {
    bool math = false, any = false, outline = false;
    for (int v = 0; v < 2; v++) {
        bool *u = c->math_used[v];
        /* What the used functions call, and what those call. */
        for (bool grew = true; grew;) {
            grew = false;
            for (int f = 0; f < OTC_CRM_COUNT; f++) {
                bool calls[OTC_CRM_COUNT] = {false};
                if (u[f]) mark_calls(tree(f), calls);
                for (int g = 0; g < OTC_CRM_COUNT; g++)
                    if (calls[g] && !u[g]) u[g] = grew = true;
            }
        }
        for (int f = 0; f < OTC_CRM_COUNT; f++) u[OTC_CRM_BASICS] |= u[f];
        math |= u[OTC_CRM_BASICS];
    }
    for (int a = 0; a < OTC_ACT_COUNT; a++) {
        any |= c->f_used[a] || c->df_used[a] || c->fo_used[a];
        outline |= c->fo_used[a];
    }
    /* The backward's batch sums are out of line too (render_c_backward.c). */
    outline |= c->batch_sum_used || c->batch_dot_used || c->batch_axpy_used;
    if (!math && !any && !outline) return;
    names nm = {otc_cr_inline(c), c->name, ""};
    /* Forced: gcc's inliner gives up on a helper called from a hundred neurons' loops, and
     * one call left out of line keeps that loop scalar. Unused: the basics come as a set, and
     * clang's -Wunused-function flags the one a file does not call (an MLP's NAME_fma). */
    put(out, &nm,
        "#if defined(__GNUC__)\n#define @I static inline __attribute__((always_inline, unused))\n"
        "#else\n#define @I static inline\n#endif\n\n");
    if (outline) {
        const char *O = otc_cr_outline(c);
        otc_text_printf(out,
                        "#if defined(__GNUC__)\n#define %s static __attribute__((noinline))\n"
                        "#else\n#define %s static\n#endif\n\n",
                        O, O);
    }
    if (!math) return;
    put(out, &nm, basics);
    for (int v = 0; v < 2; v++) {
        const bool *u = c->math_used[v];
        if (!u[OTC_CRM_BASICS]) continue;
        nm.S = v ? "_s" : "";
        put(out, &nm, v ? sel_scalar : sel_vector);
        bool done[OTC_CRM_COUNT] = {false};
        const bool was = c->outline;
        c->outline = v; /* the selects and calls of this variant */
        for (int f = OTC_CRM_EXP; f < OTC_CRM_COUNT; f++)
            if (u[f]) write_fn(c, out, &nm, f, done);
        c->outline = was;
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
