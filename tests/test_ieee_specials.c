/* The backends agree on IEEE special values: every elementwise op of the op table, the
 * neuron's aggregations, matmul and softmax run on +-0, +-inf, NaN, subnormals, FLT_MAX and
 * the edges of the math library's ranges, on the interpreter, the JIT and the emitted C. The
 * interpreter (libm) is the reference: NaN matches NaN (any payload and sign), other results
 * bit for bit, or within 1 ulp where the op computes exp, log, tanh, sin or cos. */
#include <float.h>
#include <stdint.h>

#include "backend_support.h"

static const float specials[] = {0.0f,       -0.0f,
                                 INFINITY,   -INFINITY,
                                 NAN,        0x1p-149f,
                                 -0x1p-149f, 0x1p-126f,
                                 FLT_MAX,    -FLT_MAX,
                                 1.0f,       -1.0f,
                                 0.5f,       -2.5f,
                                 88.5f,      -88.5f,
                                 89.0f,      -95.0f,
                                 -104.0f,    1e-7f,
                                 1e-8f,      -1.0f + 0x1p-24f,
                                 3.4f,       60.0f,
                                 1e20f,      -1e20f,
                                 1e38f,      0.01f,
                                 -0.01f,     100.0f};
#define NS ((int)(sizeof specials / sizeof specials[0]))

/* The ordered distance in ulps between two non-NaN floats (+0 and -0 one apart). */
static int64_t ulps(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia - 1 : ia;
    int64_t ob = ib < 0 ? (int64_t)INT32_MIN - ib - 1 : ib;
    return oa > ob ? oa - ob : ob - oa;
}

static bool agree(float ref, float got, bool transcendental) {
    if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got);
    if (memcmp(&ref, &got, 4) == 0) return true;
    return transcendental && isfinite(ref) && isfinite(got) && signbit(ref) == signbit(got) &&
           ulps(ref, got) <= 1;
}

/* Whether tree e computes a libm function (its results may differ in the last place). */
static bool calls_libm(const otc_expr *e) {
    if (!e) return false;
    if (e->op >= OTC_EX_EXP && e->op <= OTC_EX_COS) return true;
    return calls_libm(e->a) || calls_libm(e->b) || calls_libm(e->c);
}

/* One probe: a node of the graph, what its elements mean, and how close they must be. */
typedef struct {
    otc_id id;
    char what[48];
    bool transcendental;
    const float *a, *b; /* the operands of element i: a[i] (and b[i]) */
} probe;

typedef struct {
    otc_graph *g;
    otc_id pa, pb, pair, soft;
    probe p[96];
    int n;
    float a[NS * NS], b[NS * NS], pairs[NS * NS * 2], soft_in[NS * NS * 3];
} suite;

static void add_probe(suite *s, otc_id id, const char *what, bool tr, const float *a,
                      const float *b) {
    REQUIRE(id >= 0 && s->n < (int)(sizeof s->p / sizeof s->p[0]));
    REQUIRE(otc_graph_mark_output(s->g, id) == OTC_OK);
    probe *p = &s->p[s->n++];
    p->id = id;
    snprintf(p->what, sizeof p->what, "%s", what);
    p->transcendental = tr;
    p->a = a;
    p->b = b;
}

/* Every elementwise op on every special (unary: one row of NS; binary: NS x NS pairs), the
 * neuron's aggregations of two weighted inputs, softmax over triples and (with `product`) a
 * two-term matmul. */
static void build(suite *s, bool product) {
    s->g = otc_graph_new();
    REQUIRE(s->g);
    for (int i = 0; i < NS; i++)
        for (int j = 0; j < NS; j++) {
            s->a[i * NS + j] = specials[i];
            s->b[i * NS + j] = specials[j];
            s->pairs[2 * (i * NS + j)] = specials[i];
            s->pairs[2 * (i * NS + j) + 1] = specials[j];
        }
    for (int i = 0; i < NS * NS * 3; i++) s->soft_in[i] = specials[(i * 7 + i / 3) % NS];
    /* One batch of NS x NS rows: row i * NS + j holds specials i and j. */
    s->pa = otc_input(s->g, "a", otc_shape_2d(OTC_BATCH, 1));
    s->pb = otc_input(s->g, "b", otc_shape_2d(OTC_BATCH, 1));
    s->pair = otc_input(s->g, "pair", otc_shape_2d(OTC_BATCH, 2));
    s->soft = otc_input(s->g, "soft", otc_shape_2d(OTC_BATCH, 3));
    for (int op = 0; op < OTC_OP_COUNT; op++) {
        const otc_op_info *info = otc_op_get((otc_op)op);
        if (info->kind != OTC_OPKIND_ELEMENTWISE) continue;
        bool tr = calls_libm(otc_op_map_expr((otc_op)op));
        otc_id y;
        if (info->max_inputs == 2) {
            const otc_id in[2] = {s->pa, s->pb};
            otc_node_spec sp = {.op = (otc_op)op, .n_inputs = 2, .inputs = in};
            y = otc_graph_add(s->g, &sp);
            add_probe(s, y, info->name, tr, s->a, s->b);
            continue;
        }
        if (op == OTC_OP_NEG)
            y = otc_neg(s->g, s->pa);
        else if (op == OTC_OP_SCALE)
            y = otc_scale(s->g, s->pa, 10.0f);
        else if (op == OTC_OP_DETACH)
            y = otc_detach(s->g, s->pa);
        else
            y = otc_activation(s->g, (otc_op)op, s->pa, 0.5f);
        add_probe(s, y, info->name, tr, s->a, NULL);
    }
    /* The neuron: 10 a + 10 b aggregated, then the identity (F12: inf + -inf). */
    for (int agg = 0; agg < OTC_AGG_COUNT; agg++) {
        const otc_id src[2] = {s->pa, s->pb};
        const int cols[2] = {0, 0};
        const float w[2] = {10.0f, 10.0f};
        char name[32];
        snprintf(name, sizeof name, "n_%s", otc_agg_name(agg));
        otc_id n = otc_neuron(s->g, name, OTC_ACT_IDENTITY, 0.0f, 1.0f, 2, src, cols, w);
        REQUIRE(n >= 0);
        REQUIRE(otc_graph_set_agg(s->g, n, agg) == OTC_OK);
        add_probe(s, n, name, false, NULL, NULL);
    }
    if (product) {
        const float wm[2] = {10.0f, 10.0f};
        otc_id w = otc_param(s->g, "w", otc_shape_2d(2, 1), wm);
        add_probe(s, otc_matmul(s->g, s->pair, w), "matmul", false, NULL, NULL);
    }
    add_probe(s, otc_softmax(s->g, s->soft), "softmax", true, NULL, NULL);
    add_probe(s, otc_log_softmax(s->g, s->soft), "log_softmax", true, NULL, NULL);
}

static const char *const kind_names[] = {"interpreter", "jit", "emitc"};

/* Runs the suite's graph on k; out[i] the values of probe i (malloc'd copies). */
static bool run_on(bk *k, suite *s, float **out, int *size) {
    otc_executor *ex = bk_new(k, s->g, &(bk_options){.inference = true, .loss = -1});
    CHECK_MSG(ex, "%s executor: %s", k->name, otc_last_error());
    if (!ex) return false;
    const int B = NS * NS;
    bool ok = otc_exec_set_input(ex, s->pa, s->a, B) == OTC_OK &&
              otc_exec_set_input(ex, s->pb, s->b, B) == OTC_OK &&
              otc_exec_set_input(ex, s->pair, s->pairs, B) == OTC_OK &&
              otc_exec_set_input(ex, s->soft, s->soft_in, B) == OTC_OK &&
              otc_exec_forward(ex) == OTC_OK;
    CHECK_MSG(ok, "%s: %s", k->name, otc_last_error());
    for (int i = 0; ok && i < s->n; i++) {
        const float *v = NULL;
        otc_shape sh;
        ok = otc_exec_value(ex, s->p[i].id, &v, &sh) == OTC_OK;
        CHECK_MSG(ok, "%s: value of %s: %s", k->name, s->p[i].what, otc_last_error());
        if (!ok) break;
        size[i] = (int)otc_shape_size(sh);
        out[i] = malloc(sizeof(float) * (size_t)size[i]);
        if (!(ok = out[i] != NULL)) break;
        memcpy(out[i], v, sizeof(float) * (size_t)size[i]);
    }
    otc_exec_free(ex);
    return ok;
}

/* The operands of element e of probe p, for messages. */
static void operands(const suite *s, const probe *p, int e, char *buf, size_t n) {
    if (p->a && p->b)
        snprintf(buf, n, "(%g, %g)", (double)p->a[e], (double)p->b[e]);
    else if (p->a)
        snprintf(buf, n, "(%g)", (double)p->a[e]);
    else if (!strcmp(p->what, "matmul") || !strncmp(p->what, "n_", 2))
        snprintf(buf, n, "(%g, %g)", (double)s->pairs[2 * e], (double)s->pairs[2 * e + 1]);
    else
        snprintf(buf, n, "row %d (%g, %g, %g)", e / 3, (double)s->soft_in[e / 3 * 3],
                 (double)s->soft_in[e / 3 * 3 + 1], (double)s->soft_in[e / 3 * 3 + 2]);
}

static void compare(const suite *s, const char *name, float **ref, float **got, const int *n) {
    int bad = 0;
    for (int i = 0; i < s->n; i++)
        for (int e = 0; e < n[i]; e++) {
            const probe *p = &s->p[i];
            float r = ref[i][e], v = got[i][e];
            if (p->a && !p->b && e % NS) continue; /* unary: the rest of the row repeats */
            bool ok = agree(r, v, p->transcendental);
            /* sin and cos reduce exactly only to |x| = 8192 (otc/math_lib.h): beyond, both
             * are finite and in [-1, 1], not the same value. */
            if ((!strcmp(p->what, "sin") || !strcmp(p->what, "cos")) && fabsf(p->a[e]) > 8192.0f &&
                isfinite(p->a[e]))
                ok = fabsf(v) <= 1.0f;
            if (ok) continue;
            char args[96];
            operands(s, p, e, args, sizeof args);
            if (bad++ < 40)
                fprintf(stderr, "%s: %s%s = %a (%.9g), interpreter %a (%.9g)\n", name, p->what,
                        args, (double)v, (double)v, (double)r, (double)r);
        }
    CHECK_MSG(bad == 0, "%s disagrees with the interpreter on %d values", name, bad);
}

static void differential(bk_kind kind, bool fast_tier) {
    suite *s = calloc(1, sizeof *s);
    REQUIRE(s);
    /* A product loop would give the fast tier's module the other code generator. */
    build(s, !fast_tier);
    float *ref[96] = {0}, *got[96] = {0};
    int nref[96] = {0}, ngot[96] = {0};
    bk ki = {.kind = BK_INTERPRETER, .name = kind_names[0], .test = "ieee_interpreter"};
    bk kc = {
        .kind = kind, .name = kind_names[kind], .test = "ieee_compiled", .fast_tier = fast_tier};
    if (run_on(&ki, s, ref, nref) && run_on(&kc, s, got, ngot)) {
        for (int i = 0; i < s->n; i++) REQUIRE(nref[i] == ngot[i]);
        compare(s, kc.name, ref, got, nref);
    }
    for (int i = 0; i < s->n; i++) {
        free(ref[i]);
        free(got[i]);
    }
    for (int i = 0; i < kc.n_progs; i++) emitc_program_free(kc.progs[i]);
    free(kc.progs);
    otc_graph_free(s->g);
    free(s);
}

TEST(ieee_specials_jit) {
#ifdef OTC_TEST_JIT
    differential(BK_JIT, false);
#else
    printf("this build has no LLVM backend\n");
    exit(77);
#endif
}

/* The fast tier's code (no product, so the fast code generator) is rewritten for the fast
 * instruction selector (constants loaded, weight broadcasts from a table, selects on compares
 * called, fabs as a bit mask): the same bits. */
TEST(ieee_specials_jit_fast) {
#ifdef OTC_TEST_JIT
    differential(BK_JIT, true);
#else
    printf("this build has no LLVM backend\n");
    exit(77);
#endif
}

TEST(ieee_specials_emitc) {
    differential(BK_EMITC, false);
}
