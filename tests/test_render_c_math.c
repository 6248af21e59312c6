/* The emitted C's own float math (otc_emit_c_math: exp, expm1, log, log1p, tanh, sin, cos,
 * in a vector-loop and a scalar variant) against libm's double-precision functions over a
 * dense sweep of each range, the clamps and the special values, built with the system C
 * compiler both with and without hardware FMA. */
#include <dlfcn.h>
#include <float.h>
#include <stdint.h>
#include <unistd.h>

#include "harness.h"
#include "otc/compiler.h"
#include "otc/otc.h"

typedef void (*sweep_fn)(const float *x, float *y, int n);

enum { F_EXP, F_EXPM1, F_LOG, F_LOG1P, F_TANH, F_SIN, F_COS, F_FMAX, F_COUNT };
static const char *const fn_names[F_COUNT] = {"exp",  "expm1", "log", "log1p",
                                              "tanh", "sin",   "cos", "fmax"};

typedef struct {
    char dir[64];
    void *so;
    sweep_fn f[2][F_COUNT]; /* [0] the vector variant in a loop, [1] the scalar one */
} math_build;

/* The math with a loop per function (the vector variant's loops vectorise), built into a
 * shared object with `cc cflags`. */
static bool build_math(math_build *b, const char *cflags) {
    memset(b, 0, sizeof *b);
    char *src = NULL;
    if (otc_emit_c_math("m", &src) != OTC_OK) {
        fprintf(stderr, "otc_emit_c_math: %s\n", otc_last_error());
        return false;
    }
    snprintf(b->dir, sizeof b->dir, "/tmp/otc_emitc_math_XXXXXX");
    if (!mkdtemp(b->dir)) {
        free(src);
        return false;
    }
    char c_path[128], so_path[128], cmd[512];
    snprintf(c_path, sizeof c_path, "%s/m.c", b->dir);
    snprintf(so_path, sizeof so_path, "%s/m.so", b->dir);
    FILE *f = fopen(c_path, "w");
    if (!f) {
        free(src);
        return false;
    }
    fprintf(f, "#include <math.h>\n\n%s", src);
    free(src);
    for (int v = 0; v < 2; v++)
        for (int i = 0; i < F_COUNT; i++) {
            /* fmax is tested as the table uses it: against 0. */
            const char *args = i == F_FMAX ? "x[i], 0.0f" : "x[i]";
            fprintf(f,
                    "void t_%s%s(const float *x, float *y, int n);\n"
                    "void t_%s%s(const float *x, float *y, int n) {\n"
                    "    int i;\n    for (i = 0; i < n; i++) y[i] = m_%s%s(%s);\n}\n",
                    fn_names[i], v ? "_s" : "", fn_names[i], v ? "_s" : "", fn_names[i],
                    v ? "_s" : "", args);
        }
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc %s -std=c99 -shared -fPIC -o %s %s -lm", cflags, so_path, c_path);
    bool ok = system(cmd) == 0;
    if (ok) b->so = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    unlink(c_path);
    unlink(so_path);
    rmdir(b->dir);
    if (!b->so) {
        fprintf(stderr, "building the math failed: %s\n", cmd);
        return false;
    }
    for (int v = 0; v < 2; v++)
        for (int i = 0; i < F_COUNT; i++) {
            char name[32];
            snprintf(name, sizeof name, "t_%s%s", fn_names[i], v ? "_s" : "");
            *(void **)&b->f[v][i] = dlsym(b->so, name);
            if (!b->f[v][i]) return false;
        }
    return true;
}

static double ref(int fn, double x) {
    switch (fn) {
    case F_EXP:
        return exp(x);
    case F_EXPM1:
        return expm1(x);
    case F_LOG:
        return log(x);
    case F_LOG1P:
        return log1p(x);
    case F_TANH:
        return tanh(x);
    case F_SIN:
        return sin(x);
    case F_COS:
        return cos(x);
    default:
        return x > 0.0 ? x : 0.0;
    }
}

/* Worst error of fn over n points evenly spaced in [lo, hi] (both ends included), in ulps of
 * the reference (the spacing of floats at |ref|, never below FLT_MIN's) and absolute. */
typedef struct {
    double ulp, abs, at_ulp, at_abs;
} worst;

static worst sweep(sweep_fn f, int fn, double lo, double hi, int n) {
    worst w = {0, 0, 0, 0};
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    if (!x || !y) {
        free(x);
        free(y);
        w.ulp = w.abs = INFINITY;
        return w;
    }
    for (int i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * i / (n - 1));
    f(x, y, n);
    for (int i = 0; i < n; i++) {
        double want = ref(fn, (double)x[i]), err = fabs((double)y[i] - want);
        int e;
        frexp(fabs(want) > FLT_MIN ? want : FLT_MIN, &e);
        double ulp = err / ldexp(1.0, e - 24);
        if (!(ulp <= w.ulp)) w.ulp = ulp, w.at_ulp = x[i];
        if (!(err <= w.abs)) w.abs = err, w.at_abs = x[i];
    }
    free(x);
    free(y);
    return w;
}

static float one(sweep_fn f, float x) {
    float y;
    f(&x, &y, 1);
    return y;
}

/* The bounds: each function over its range, in ulps of the result (abs: an absolute bound
 * instead, where the result crosses zero and ulps of it mean nothing). */
typedef struct {
    int fn;
    double lo, hi, max_ulp, max_abs;
} range;

static const range ranges[] = {
    /* exp: results normal; the lower clamp region gives 0 or subnormals (absolute). */
    {F_EXP, -87.3, 88.37, 2.0, -1},
    {F_EXP, -88.37, -87.3, -1, 1.2e-38},
    {F_EXP, 88.37, 88.72, 2.0, -1},
    {F_EXP, -103.9, -88.37, -1, 2e-45},
    {F_EXP, -1.0, 1.0, 2.0, -1},
    /* expm1: near 0 the series; e^x - 1 loses up to 3 bits just past |x| = 0.125. */
    {F_EXPM1, -0.125, 0.125, 2.0, -1},
    {F_EXPM1, -87.0, 88.3, 16.0, -1},
    /* log over the normal floats, dense around 1. */
    {F_LOG, 1.17549435e-38, 3.4e38, 2.0, -1},
    {F_LOG, 0.5, 2.0, 2.0, -1},
    {F_LOG, 0.999, 1.001, 2.0, -1},
    {F_LOG1P, -0.999, 10.0, 4.0, -1},
    {F_LOG1P, -1e-3, 1e-3, 4.0, -1},
    {F_TANH, -20.0, 20.0, 4.0, -1},
    {F_TANH, -0.7, 0.7, 2.0, -1},
    /* sin, cos: absolute near their zeros; reduction good to |x| = 8192 (Cephes' range). */
    {F_SIN, -8192.0, 8192.0, -1, 4e-7},
    {F_SIN, -3.2, 3.2, -1, 2e-7},
    {F_SIN, -0.78, 0.78, 2.0, -1},
    {F_COS, -8192.0, 8192.0, -1, 4e-7},
    {F_COS, -3.2, 3.2, -1, 2e-7},
    {F_COS, -0.78, 0.78, 2.0, -1},
    {F_FMAX, -10.0, 10.0, 0.0, 0.0},
};

static void check_ranges(const math_build *b, const char *what) {
    for (int v = 0; v < 2; v++)
        for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
            const range *R = &ranges[r];
            worst w = sweep(b->f[v][R->fn], R->fn, R->lo, R->hi, 400001);
            bool ok =
                (R->max_ulp < 0 || w.ulp <= R->max_ulp) && (R->max_abs < 0 || w.abs <= R->max_abs);
            CHECK_MSG(ok, "%s %s%s on [%g, %g]: %.2f ulp at %.9g, abs %.3g at %.9g", what,
                      fn_names[R->fn], v ? "_s" : "", R->lo, R->hi, w.ulp, w.at_ulp, w.abs,
                      w.at_abs);
            if (getenv("OTC_MATH_VERBOSE"))
                printf("%s %s%s [%g, %g]: %.3f ulp at %.9g, abs %.3g at %.9g\n", what,
                       fn_names[R->fn], v ? "_s" : "", R->lo, R->hi, w.ulp, w.at_ulp, w.abs,
                       w.at_abs);
        }
}

/* The clamps and special values, the same in both variants (and as the JIT's IR). */
static void check_specials(const math_build *b, const char *what) {
    for (int v = 0; v < 2; v++) {
        sweep_fn const *f = b->f[v];
        /* exp: overflow to inf and underflow through the subnormals to 0, as libm's
         * (e^-100 is 26.5 times 2^-149); NaN stays NaN. */
        CHECK(one(f[F_EXP], 88.8f) == INFINITY && one(f[F_EXP], INFINITY) == INFINITY);
        CHECK(isfinite(one(f[F_EXP], 88.72f)));
        CHECK(one(f[F_EXP], -100.0f) == 27 * 0x1p-149f && one(f[F_EXP], -104.0f) == 0.0f);
        CHECK(one(f[F_EXP], -INFINITY) == 0.0f);
        CHECK(one(f[F_LOG], INFINITY) == INFINITY && one(f[F_LOG], 0.0f) == -INFINITY);
        CHECK(isnan(one(f[F_LOG], -1.0f)) && isnan(one(f[F_SIN], INFINITY)));
        CHECK(signbit(one(f[F_TANH], -0.0f)) && signbit(one(f[F_SIN], -0.0f)));
        CHECK(isnan(one(f[F_EXP], NAN)));
        CHECK(one(f[F_EXP], 0.0f) == 1.0f);
        CHECK(isnan(one(f[F_EXPM1], NAN)) && one(f[F_EXPM1], -100.0f) == -1.0f);
        CHECK(one(f[F_EXPM1], 1e-30f) == 1e-30f);
        CHECK(one(f[F_LOG], 1.0f) == 0.0f);
        CHECK(one(f[F_LOG1P], 1e-30f) == 1e-30f && one(f[F_LOG1P], 0.0f) == 0.0f);
        CHECK(one(f[F_TANH], 100.0f) == 1.0f && one(f[F_TANH], -100.0f) == -1.0f);
        CHECK(one(f[F_TANH], INFINITY) == 1.0f && one(f[F_TANH], -INFINITY) == -1.0f);
        CHECK(isnan(one(f[F_TANH], NAN)) && one(f[F_TANH], 1e-30f) == 1e-30f);
        CHECK(isnan(one(f[F_SIN], NAN)) && isnan(one(f[F_COS], NAN)));
        CHECK(one(f[F_SIN], 0.0f) == 0.0f && one(f[F_COS], 0.0f) == 1.0f);
        CHECK(one(f[F_FMAX], -1.0f) == 0.0f && one(f[F_FMAX], 2.5f) == 2.5f);
    }
}

static void run(const char *cflags) {
    math_build b;
    REQUIRE(build_math(&b, cflags));
    check_ranges(&b, cflags);
    check_specials(&b, cflags);
    dlclose(b.so);
}

/* Vectorised loops with the hardware's FMA (what `otc bench` builds). */
TEST(emitc_math_vs_libm_native) {
    run("-O3 -march=native");
}

/* Portable code: no FMA (a * b + c), no vectorisation. */
TEST(emitc_math_vs_libm_portable) {
    run("-O1");
}

/* The whole math (both variants) compiles cleanly under the strictest flags the generated
 * files promise. */
TEST(emitc_math_strict_flags) {
    char *src = NULL;
    REQUIRE(otc_emit_c_math("strict", &src) == OTC_OK);
    char dir[] = "/tmp/otc_emitc_math_strict_XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    char path[128], cmd[512];
    snprintf(path, sizeof path, "%s/s.c", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    /* A user of every function, so none is unused. */
    fprintf(f,
            "#include <math.h>\n\n%s"
            "float strict_all(float x);\nfloat strict_all(float x) {\n"
            "    return strict_exp(x) + strict_expm1(x) + strict_log(x) + strict_log1p(x) +\n"
            "           strict_tanh(x) + strict_sin(x) + strict_cos(x) + strict_fmax(x, 0.0f) +\n"
            "           strict_exp_s(x) + strict_expm1_s(x) + strict_log_s(x) + "
            "strict_log1p_s(x) +\n"
            "           strict_tanh_s(x) + strict_sin_s(x) + strict_cos_s(x) + "
            "strict_fmax_s(x, 0.0f);\n}\n",
            src);
    fclose(f);
    free(src);
    const char *compilers[] = {"gcc", "clang-19"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "command -v %s > /dev/null", compilers[i]);
        if (system(cmd) != 0) continue;
        snprintf(cmd, sizeof cmd, "%s -std=c99 -Wall -Wextra -Werror -pedantic -O2 -c -o %s/s.o %s",
                 compilers[i], dir, path);
        CHECK_MSG(system(cmd) == 0, "%s", cmd);
        snprintf(cmd, sizeof cmd, "%s/s.o", dir);
        unlink(cmd);
    }
    unlink(path);
    rmdir(dir);
}

TEST(emitc_math_bad_arguments) {
    char *src = (char *)"x";
    CHECK(otc_emit_c_math("1bad", &src) == OTC_ERR_ARG && src == NULL);
    CHECK(otc_emit_c_math("ok", NULL) == OTC_ERR_ARG);
}
