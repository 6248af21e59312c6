/* Forward values of every op through the interpreter, against values computed by hand (or,
 * for the larger cases, by a direct double-precision loop in the test). */
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "neat_python_ref.h"
#include "otc/otc.h"

#define TOL 1e-5

/* Runs a forward of g (inputs set by the caller through *exp when given) and returns the
 * value of `id`; the executor is kept in *exp for the caller to free. */
static const float *eval(otc_graph *g, otc_id id, otc_executor **exp, otc_shape *shape) {
    if (!*exp) *exp = otc_interpreter_new(g, NULL);
    if (!*exp) {
        fprintf(stderr, "interpreter: %s\n", otc_last_error());
        return NULL;
    }
    const float *v = NULL;
    if (otc_exec_forward(*exp) != OTC_OK || otc_exec_value(*exp, id, &v, shape) != OTC_OK) {
        fprintf(stderr, "forward: %s\n", otc_last_error());
        return NULL;
    }
    return v;
}

static otc_id vec(otc_graph *g, int n, const float *v) {
    return otc_param(g, NULL, otc_shape_1d(n), v);
}

static void check_values(const float *got, const float *want, int n, double tol) {
    for (int i = 0; i < n; i++) CHECK_NEAR(got[i], want[i], tol);
}

/* The binary and unary arithmetic ops on one pair of vectors. */
TEST(ops_arithmetic) {
    otc_graph *g = otc_graph_new();
    const float x[4] = {1.5f, -2.0f, 3.0f, 0.25f}, y[4] = {2.0f, 4.0f, -1.5f, 0.5f};
    otc_id a = vec(g, 4, x), b = vec(g, 4, y);
    otc_id ids[7] = {otc_add(g, a, b), otc_sub(g, a, b),       otc_mul(g, a, b), otc_div(g, a, b),
                     otc_neg(g, a),    otc_scale(g, a, -3.0f), otc_detach(g, a)};
    const float want[7][4] = {
        {3.5f, 2.0f, 1.5f, 0.75f},   {-0.5f, -6.0f, 4.5f, -0.25f}, {3.0f, -8.0f, -4.5f, 0.125f},
        {0.75f, -0.5f, -2.0f, 0.5f}, {-1.5f, 2.0f, -3.0f, -0.25f}, {-4.5f, 6.0f, -9.0f, -0.75f},
        {1.5f, -2.0f, 3.0f, 0.25f},
    };
    otc_executor *ex = NULL;
    for (int k = 0; k < 7; k++) {
        REQUIRE(ids[k] >= 0);
        const float *v = eval(g, ids[k], &ex, NULL);
        REQUIRE(v);
        check_values(v, want[k], 4, TOL);
    }
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Each activation op at a few points, against textbook values. */
TEST(ops_activations) {
    const float x[4] = {-1.0f, 0.0f, 0.5f, 2.0f};
    const double e1 = exp(-1.0);
    struct {
        otc_op op;
        float alpha;
        double want[4];
    } cases[] = {
        {OTC_OP_SIGMOID, 0, {1 / (1 + exp(1.0)), 0.5, 1 / (1 + exp(-0.5)), 1 / (1 + exp(-2.0))}},
        {OTC_OP_TANH, 0, {-0.7615941559557649, 0.0, 0.46211715726000974, 0.9640275800758169}},
        {OTC_OP_RELU, 0, {0.0, 0.0, 0.5, 2.0}},
        {OTC_OP_LEAKY_RELU, 0.1f, {-0.1, 0.0, 0.5, 2.0}},
        {OTC_OP_SOFTPLUS, 0, {log(1 + e1), log(2.0), log(1 + exp(0.5)), log(1 + exp(2.0))}},
        {OTC_OP_ELU, 1.5f, {1.5 * (e1 - 1), 0.0, 0.5, 2.0}},
        {OTC_OP_GAUSSIAN, 0, {e1, 1.0, exp(-0.25), exp(-4.0)}},
        {OTC_OP_SIN, 0, {-0.8414709848078965, 0.0, 0.479425538604203, 0.9092974268256817}},
        {OTC_OP_ABS, 0, {1.0, 0.0, 0.5, 2.0}},
        {OTC_OP_IDENTITY, 0, {-1.0, 0.0, 0.5, 2.0}},
        {OTC_OP_SQRT, 0, {NAN, 0.0, 0.7071067811865476, 1.4142135623730951}},
        {OTC_OP_COS, 0, {0.5403023058681398, 1.0, 0.8775825618903728, -0.4161468365471424}},
        {OTC_OP_RECIPROCAL, 0, {-1.0, INFINITY, 2.0, 0.5}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        otc_graph *g = otc_graph_new();
        otc_id y = otc_activation(g, cases[c].op, vec(g, 4, x), cases[c].alpha);
        REQUIRE(y >= 0);
        otc_executor *ex = NULL;
        const float *v = eval(g, y, &ex, NULL);
        REQUIRE(v);
        for (int i = 0; i < 4; i++)
            CHECK_MSG(fabs(v[i] - cases[c].want[i]) <= 1e-6 ||
                          (isnan(v[i]) && isnan(cases[c].want[i])) || v[i] == cases[c].want[i],
                      "%s(%g) = %g, want %g", otc_op_get(cases[c].op)->name, x[i], v[i],
                      cases[c].want[i]);
        otc_exec_free(ex);
        otc_graph_free(g);
    }
}

/* Each activation in double precision, written independently of the op spec (the reference
 * for its expressions); a = 0.3. */
static double reference_act(int act, double x) {
    const double a = 0.3;
    switch (act) {
    case OTC_ACT_IDENTITY:
        return x;
    case OTC_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-x));
    case OTC_ACT_TANH:
        return tanh(x);
    case OTC_ACT_RELU:
        return x > 0 ? x : 0;
    case OTC_ACT_LEAKY_RELU:
        return x > 0 ? x : a * x;
    case OTC_ACT_SOFTPLUS:
        return log(1.0 + exp(x));
    case OTC_ACT_ELU:
        return x > 0 ? x : a * (exp(x) - 1.0);
    case OTC_ACT_GAUSSIAN:
        return exp(-x * x);
    case OTC_ACT_SIN:
        return sin(x);
    case OTC_ACT_ABS:
        return fabs(x);
    case OTC_ACT_STEEP_SIGMOID:
        return 1.0 / (1.0 + exp(-4.9 * x));
    case OTC_ACT_SQRT:
        return sqrt(x);
    case OTC_ACT_COS:
        return cos(x);
    case OTC_ACT_RECIPROCAL:
        return 1.0 / x;
    default:
        break;
    }
    /* neat-python's, by its own names (neat_python_ref.h). */
    static const char *np[OTC_ACT_COUNT] = {[OTC_ACT_NP_SIGMOID] = "sigmoid",
                                            [OTC_ACT_NP_TANH] = "tanh",
                                            [OTC_ACT_NP_SIN] = "sin",
                                            [OTC_ACT_NP_GAUSS] = "gauss",
                                            [OTC_ACT_SELU] = "selu",
                                            [OTC_ACT_NP_SOFTPLUS] = "softplus",
                                            [OTC_ACT_CLAMPED] = "clamped",
                                            [OTC_ACT_INV] = "inv",
                                            [OTC_ACT_LOG] = "log",
                                            [OTC_ACT_EXP] = "exp",
                                            [OTC_ACT_HAT] = "hat",
                                            [OTC_ACT_SQUARE] = "square",
                                            [OTC_ACT_CUBE] = "cube"};
    if (act >= 0 && act < OTC_ACT_COUNT && np[act]) return np_ref_act(np[act], x);
    return NAN;
}

/* The spec's value and derivative of every activation against the independent formulas and
 * their central differences; the interpreter's activation ops and Neurons (which run the spec
 * over arrays) agree with its point-by-point evaluation. */
TEST(ops_activation_spec_matches_reference) {
    enum { N = 41 };
    float x[N];
    for (int i = 0; i < N; i++) x[i] = -4.0f + 0.2f * (float)i + 0.01f; /* off the kinks at 0 */
    for (int act = 0; act < OTC_ACT_COUNT; act++) {
        const otc_act_info *info = otc_act_get((otc_act)act);
        REQUIRE(info && info->f && info->df);
        for (int i = 0; i < N; i++) {
            /* h shrinks near 0, where inv's truncation error h^2/x^2 would dominate. */
            const double want = reference_act(act, x[i]), h = 1e-4 * fmin(1.0, fabs(x[i]));
            const double dwant =
                (reference_act(act, x[i] + h) - reference_act(act, x[i] - h)) / (2 * h);
            otc_expr_env env = {.x = x[i], .a = 0.3f};
            env.y = otc_expr_eval(info->f, &env);
            const float d = otc_expr_eval(info->df, &env);
            if (isnan(want)) { /* outside the domain (sqrt below 0): NaN, as IEEE says */
                CHECK_MSG(isnan(env.y) && isnan(d), "%s(%g) = %g, %s' = %g, want NaN", info->name,
                          x[i], env.y, info->name, d);
                continue;
            }
            CHECK_MSG(fabs(env.y - want) <= 1e-6 * fmax(1.0, fabs(want)), "%s(%g) = %g, want %g",
                      info->name, x[i], env.y, want);
            CHECK_MSG(fabs(d - dwant) <= 1e-4 * fmax(1.0, fabs(dwant)), "%s'(%g) = %g, want %g",
                      info->name, x[i], d, dwant);
        }
    }
    for (int op = OTC_OP_SIGMOID; op <= OTC_OP_IDENTITY; op++) {
        const otc_expr *f = otc_op_map_expr((otc_op)op);
        REQUIRE(f);
        otc_graph *g = otc_graph_new();
        otc_id y = otc_activation(g, (otc_op)op, vec(g, N, x), 0.3f);
        otc_executor *ex = NULL;
        const float *v = eval(g, y, &ex, NULL);
        REQUIRE(v);
        for (int i = 0; i < N; i++) {
            const float want = otc_expr_eval(f, &(otc_expr_env){.x = x[i], .a = 0.3f});
            CHECK_MSG(v[i] == want || (isnan(v[i]) && isnan(want)), "%s(%g): %g vs the spec's %g",
                      otc_op_get((otc_op)op)->name, x[i], v[i], want);
        }
        otc_exec_free(ex);
        otc_graph_free(g);
    }
    /* Every activation, including NEAT's steep sigmoid, through a one-source Neuron. */
    for (int act = 0; act < OTC_ACT_COUNT; act++) {
        const otc_act_info *info = otc_act_get((otc_act)act);
        otc_graph *g = otc_graph_new();
        otc_id in = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
        int col = 0;
        float w = 1.0f;
        otc_id y = otc_neuron(g, NULL, (otc_act)act, 0.0f, 1.0f, 1, &in, &col, &w);
        REQUIRE(y >= 0);
        otc_executor *ex = otc_interpreter_new(g, NULL);
        REQUIRE(ex);
        REQUIRE(otc_exec_set_input(ex, in, x, N) == OTC_OK);
        const float *v = eval(g, y, &ex, NULL);
        REQUIRE(v);
        const float a = otc_graph_node(g, y)->alpha;
        for (int i = 0; i < N; i++) {
            const float want = otc_expr_eval(info->f, &(otc_expr_env){.x = x[i], .a = a});
            CHECK_MSG(v[i] == want || (isnan(v[i]) && isnan(want)),
                      "neuron %s(%g): %g vs the spec's %g", info->name, x[i], v[i], want);
        }
        otc_exec_free(ex);
        otc_graph_free(g);
    }
}

/* neat-python's activations at hand-picked points, the clamps included: values computed by
 * hand from neat/activations.py, and the op spec against neat_python_ref.h on both sides
 * of every clamp and kink (through the activation ops, i.e. the interpreter's programs). */
TEST(ops_neat_python_activations) {
    static const struct {
        otc_op op;
        float x, want;
    } hand[] = {
        {OTC_OP_NP_SIGMOID, 0.0f, 0.5f},
        {OTC_OP_NP_SIGMOID, 13.0f, 1.0f},        /* 5x clamped to 60 */
        {OTC_OP_NP_TANH, 0.4f, 0.76159416f},     /* tanh(1) */
        {OTC_OP_NP_SIN, 0.1f, 0.47942554f},      /* sin(0.5) */
        {OTC_OP_NP_GAUSS, 0.2f, 0.81873075f},    /* exp(-0.2) */
        {OTC_OP_NP_GAUSS, 9.0f, 8.6516952e-26f}, /* exp(-5 3.4^2) */
        {OTC_OP_SELU, -1.0f, -1.1113307f},       /* 1.7580993 (e^-1 - 1) */
        {OTC_OP_SELU, 2.0f, 2.1014020f},         /* 2 lambda */
        {OTC_OP_NP_SOFTPLUS, 0.0f, 0.13862944f}, /* 0.2 log 2 */
        {OTC_OP_NP_SOFTPLUS, 20.0f, 12.0f},      /* 0.2 * 60 */
        {OTC_OP_CLAMPED, -3.0f, -1.0f},
        {OTC_OP_CLAMPED, 0.25f, 0.25f},
        {OTC_OP_INV, 0.0f, 0.0f}, /* ZeroDivisionError -> 0 */
        {OTC_OP_INV, -4.0f, -0.25f},
        {OTC_OP_LOG, -1.0f, -16.118096f}, /* log(1e-7) */
        {OTC_OP_LOG, 1.0f, 0.0f},
        {OTC_OP_EXP, 100.0f, 1.1420074e26f},   /* exp(60) */
        {OTC_OP_EXP, -100.0f, 8.7565108e-27f}, /* exp(-60) */
        {OTC_OP_HAT, 0.25f, 0.75f},
        {OTC_OP_HAT, -2.0f, 0.0f},
        {OTC_OP_SQUARE, -3.0f, 9.0f},
        {OTC_OP_CUBE, -2.0f, -8.0f},
    };
    for (size_t i = 0; i < sizeof hand / sizeof hand[0]; i++) {
        const float v = otc_expr_eval(otc_op_map_expr(hand[i].op), &(otc_expr_env){.x = hand[i].x});
        CHECK_MSG(fabsf(v - hand[i].want) <= 1e-6f * fmaxf(1.0f, fabsf(hand[i].want)),
                  "%s(%g) = %g, want %g", otc_op_get(hand[i].op)->name, hand[i].x, v, hand[i].want);
    }
    static const struct {
        otc_op op;
        const char *np;
    } ops[] = {{OTC_OP_NP_SIGMOID, "sigmoid"},
               {OTC_OP_NP_TANH, "tanh"},
               {OTC_OP_NP_SIN, "sin"},
               {OTC_OP_NP_GAUSS, "gauss"},
               {OTC_OP_RELU, "relu"},
               {OTC_OP_SELU, "selu"},
               {OTC_OP_NP_SOFTPLUS, "softplus"},
               {OTC_OP_IDENTITY, "identity"},
               {OTC_OP_CLAMPED, "clamped"},
               {OTC_OP_INV, "inv"},
               {OTC_OP_LOG, "log"},
               {OTC_OP_EXP, "exp"},
               {OTC_OP_ABS, "abs"},
               {OTC_OP_HAT, "hat"},
               {OTC_OP_SQUARE, "square"},
               {OTC_OP_CUBE, "cube"}};
    /* Each clamp and kink, and a step to either side: 5x = +-60, 2.5x = +-60, +-3.4, 1e-7,
     * +-60, +-1, 0. */
    enum { N = 33 };
    const float x[N] = {-13,   -12.5f, -12.0f, -11.5f, -24.5f, -24,    -23.5f, -3.5f, -3.4f,
                        -3.3f, -1.01f, -1.0f,  -0.99f, -0.5f,  -1e-7f, 0.0f,   1e-8f, 1e-7f,
                        2e-7f, 0.5f,   0.99f,  1.0f,   1.01f,  3.3f,   3.5f,   11.5f, 12.0f,
                        12.5f, 23.5f,  24.5f,  59.0f,  61.0f,  -61.0f};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        otc_graph *g = otc_graph_new();
        otc_id y = otc_activation(g, ops[k].op, vec(g, N, x), 0.0f);
        otc_executor *ex = NULL;
        const float *v = eval(g, y, &ex, NULL);
        REQUIRE(v);
        for (int i = 0; i < N; i++) {
            const double want = np_ref_act(ops[k].np, x[i]);
            CHECK_MSG(fabs(v[i] - want) <= 2e-6 * fmax(1.0, fabs(want)), "%s(%g) = %g, want %g",
                      ops[k].np, x[i], v[i], want);
        }
        otc_exec_free(ex);
        otc_graph_free(g);
    }
    /* neat-python's elu and lelu are otc's elu (a = 1) and leaky_relu (a = 0.005). */
    for (int i = 0; i < N; i++) {
        otc_expr_env e = {.x = x[i], .a = 1.0f};
        CHECK(fabs(otc_expr_eval(otc_op_map_expr(OTC_OP_ELU), &e) - np_ref_act("elu", x[i])) <=
              1e-6);
        e.a = 0.005f;
        CHECK(fabs(otc_expr_eval(otc_op_map_expr(OTC_OP_LEAKY_RELU), &e) -
                   np_ref_act("lelu", x[i])) <= 1e-6 * fmax(1.0, fabs(x[i])));
    }
}

/* The interpreter's hand-written activation loops (kept where measurably faster) are the
 * table's formulas bit for bit, forward and backward, over a grid with large and signed-zero
 * points: the forward of each activation op against the tree's point evaluation, the
 * gradient of sum(act(x)) against its derivative tree. */
TEST(ops_activation_loops_match_spec) {
    enum { N = 48 };
    float x[N];
    for (int i = 0; i < 40; i++) x[i] = -6.0f + 0.3f * (float)i + 0.001f * (float)i;
    const float special[8] = {0.0f, -0.0f, 1e-6f, -1e-6f, 30.0f, -30.0f, 95.0f, -95.0f};
    for (int i = 0; i < 8; i++) x[40 + i] = special[i];
    for (int op = OTC_OP_SIGMOID; op <= OTC_OP_IDENTITY; op++) {
        const otc_expr *f = otc_op_map_expr((otc_op)op), *df = otc_op_grad_expr((otc_op)op, 0);
        REQUIRE(f && df);
        otc_graph *g = otc_graph_new();
        otc_id in = vec(g, N, x);
        otc_id y = otc_activation(g, (otc_op)op, in, 0.3f);
        otc_id loss = otc_sum(g, y);
        otc_executor *ex = otc_interpreter_new(g, NULL);
        REQUIRE(ex);
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        REQUIRE(otc_exec_backward(ex, loss) == OTC_OK);
        const float *v, *gx;
        REQUIRE(otc_exec_value(ex, y, &v, NULL) == OTC_OK);
        REQUIRE(otc_exec_grad(ex, in, &gx) == OTC_OK);
        const float a = otc_graph_node(g, y)->alpha;
        for (int i = 0; i < N; i++) {
            otc_expr_env env = {.x = x[i], .a = a};
            env.y = otc_expr_eval(f, &env);
            const float d = otc_expr_eval(df, &env);
            CHECK_MSG(memcmp(&v[i], &env.y, sizeof v[i]) == 0, "%s(%g): %a vs the spec's %a",
                      otc_op_get((otc_op)op)->name, x[i], v[i], env.y);
            /* gx = 0 + 1 * d: equal as numbers (a -0 derivative lands as +0). */
            CHECK_MSG(gx[i] == d || (isnan(gx[i]) && isnan(d)), "%s'(%g): %a vs the spec's %a",
                      otc_op_get((otc_op)op)->name, x[i], gx[i], d);
        }
        otc_exec_free(ex);
        otc_graph_free(g);
    }
}

/* The op table cannot be incomplete: every op has its row (a name, an arity, a shape rule),
 * every computing op its kernels, and every elementwise op its expressions. */
TEST(ops_table_complete) {
    for (int op = 0; op < OTC_OP_COUNT; op++) {
        const otc_op_info *info = otc_op_get((otc_op)op);
        REQUIRE(info && info->name);
        CHECK_MSG(otc_op_from_name(info->name) == op, "op %d: name %s", op, info->name);
        if (info->kind == OTC_OPKIND_ELEMENTWISE) {
            const otc_expr *f = otc_op_map_expr((otc_op)op);
            CHECK_MSG(f != NULL, "elementwise op %s has no value expression", info->name);
            CHECK_MSG(!otc_expr_reads(f, OTC_EX_Y), "%s's value reads its own output", info->name);
            CHECK_MSG(info->max_inputs > 1 || !otc_expr_reads(f, OTC_EX_X1),
                      "unary %s reads a second input", info->name);
        }
    }
    for (int act = 0; act < OTC_ACT_COUNT; act++)
        CHECK(otc_act_get((otc_act)act) && otc_act_get((otc_act)act)->name);
}

/* The point evaluator on hand-computed values, integer and bit operations included (the
 * math library's trees use them). */
TEST(expr_eval_by_hand) {
    const otc_expr k2 = {.op = OTC_EX_CONST, .k = 2}, x = {.op = OTC_EX_X};
    const otc_expr x1 = {.op = OTC_EX_X1}, a = {.op = OTC_EX_A};
    const otc_expr mul = {.op = OTC_EX_MUL, .a = &x, .b = &k2};          /* 2x */
    const otc_expr fma = {.op = OTC_EX_FMA, .a = &x, .b = &x1, .c = &a}; /* x x1 + a */
    const otc_expr gt = {.op = OTC_EX_GT, .a = &x, .b = &x1};
    const otc_expr sel = {.op = OTC_EX_SELECT, .a = &gt, .b = &mul, .c = &fma};
    otc_expr_env env = {.x = 3, .x1 = 1, .a = 0.5f};
    CHECK(otc_expr_eval(&sel, &env) == 6.0f); /* 3 > 1: 2 * 3 */
    env.x1 = 4;
    CHECK(otc_expr_eval(&sel, &env) == 12.5f); /* 3 * 4 + 0.5 */
    static const double coef[] = {1, -2, 3};   /* x^2 - 2x + 3 */
    const otc_expr poly = {.op = OTC_EX_POLY, .a = &x, .coef = coef, .n = 3};
    CHECK(otc_expr_eval(&poly, &(otc_expr_env){.x = 5}) == 18.0f);
    /* 2^3 assembled in the exponent bits: (3 + 127) << 23. */
    const otc_expr three = {.op = OTC_EX_ICONST, .k = 3}, bias = {.op = OTC_EX_ICONST, .k = 127};
    const otc_expr k23 = {.op = OTC_EX_ICONST, .k = 23};
    const otc_expr sum = {.op = OTC_EX_IADD, .a = &three, .b = &bias};
    const otc_expr shl = {.op = OTC_EX_SHL, .a = &sum, .b = &k23};
    const otc_expr pow2 = {.op = OTC_EX_FROM_BITS, .a = &shl};
    CHECK(otc_expr_eval(&pow2, &env) == 8.0f);
    /* -1.0f is 0xbf800000; truncation toward zero; NaN converts to INT32_MIN, not UB. */
    const otc_expr bits = {.op = OTC_EX_BITS, .a = &x}, f2i = {.op = OTC_EX_F2I, .a = &x};
    const otc_expr i2f = {.op = OTC_EX_I2F, .a = &f2i}, i2fb = {.op = OTC_EX_I2F, .a = &bits};
    CHECK(otc_expr_eval(&i2fb, &(otc_expr_env){.x = -1.0f}) == (float)(int32_t)0xbf800000u);
    CHECK(otc_expr_eval(&i2f, &(otc_expr_env){.x = -2.7f}) == -2.0f);
    CHECK(otc_expr_eval(&i2f, &(otc_expr_env){.x = NAN}) == -2147483648.0f);
    /* Over arrays the same values, in chunks. */
    enum { N = 200 };
    float xs[N], x1s[N], out[N];
    for (int i = 0; i < N; i++) xs[i] = (float)i - 100.0f, x1s[i] = 0.5f * (float)i;
    otc_expr_eval_n(&sel, &(otc_expr_arrays){.x = xs, .x1 = x1s, .a = 0.5f}, out, N);
    for (int i = 0; i < N; i++) {
        float want = xs[i] > x1s[i] ? 2 * xs[i] : fmaf(xs[i], x1s[i], 0.5f);
        CHECK_MSG(out[i] == want, "element %d: %g, want %g", i, out[i], want);
    }
    /* In place (out is the input), the polynomial over more than a chunk. */
    for (int i = 0; i < N; i++) out[i] = 0.01f * (float)i;
    otc_expr_eval_n(&poly, &(otc_expr_arrays){.x = out}, out, N);
    for (int i = 0; i < N; i++) {
        float v = 0.01f * (float)i, want = fmaf(fmaf(1.0f, v, -2.0f), v, 3.0f);
        CHECK_MSG(out[i] == want, "in place, element %d: %g, want %g", i, out[i], want);
    }
    otc_expr_eval_n(&pow2, &(otc_expr_arrays){.x = xs}, out, 3);
    CHECK(out[0] == 8.0f && out[2] == 8.0f);
}

TEST(ops_matmul_small) {
    otc_graph *g = otc_graph_new();
    const float A[6] = {1, 2, 3, 4, 5, 6};    /* [2,3] */
    const float B[6] = {7, 8, 9, 10, 11, 12}; /* [3,2] */
    otc_id a = otc_param(g, "A", otc_shape_2d(2, 3), A);
    otc_id b = otc_param(g, "B", otc_shape_2d(3, 2), B);
    otc_id c = otc_matmul(g, a, b);
    otc_executor *ex = NULL;
    otc_shape s;
    const float *v = eval(g, c, &ex, &s);
    REQUIRE(v);
    CHECK(s.ndim == 2 && s.dim[0] == 2 && s.dim[1] == 2);
    const float want[4] = {58, 64, 139, 154};
    check_values(v, want, 4, TOL);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* A batched product large enough to go through sgemm, against a double loop. */
TEST(ops_matmul_blas) {
    enum { M = 24, K = 40, N = 16 };
    otc_graph *g = otc_graph_new();
    static float A[M * K], B[K * N];
    for (int i = 0; i < M * K; i++) A[i] = (float)((i * 7) % 11) / 11.0f - 0.4f;
    for (int i = 0; i < K * N; i++) B[i] = (float)((i * 5) % 13) / 13.0f - 0.6f;
    otc_id a = otc_input(g, "A", otc_shape_2d(OTC_BATCH, K));
    otc_id b = otc_param(g, "B", otc_shape_2d(K, N), B);
    otc_id c = otc_matmul(g, a, b);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_set_input(ex, a, A, M) == OTC_OK);
    otc_shape s;
    const float *v = eval(g, c, &ex, &s);
    REQUIRE(v);
    CHECK(s.dim[0] == M && s.dim[1] == N);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double r = 0;
            for (int k = 0; k < K; k++) r += (double)A[i * K + k] * B[k * N + j];
            CHECK_NEAR(v[i * N + j], r, 1e-4);
        }
    /* The same product at batch 1 goes through the loop. */
    REQUIRE(otc_exec_set_input(ex, a, A + 5 * K, 1) == OTC_OK);
    v = eval(g, c, &ex, &s);
    REQUIRE(v);
    CHECK(s.dim[0] == 1);
    for (int j = 0; j < N; j++) {
        double r = 0;
        for (int k = 0; k < K; k++) r += (double)A[5 * K + k] * B[k * N + j];
        CHECK_NEAR(v[j], r, 1e-4);
    }
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(ops_row_broadcast) {
    otc_graph *g = otc_graph_new();
    const float bias[3] = {1, -2, 0.5f}, x[6] = {0, 0, 0, 1, 1, 1};
    otc_id in = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    otc_id y = otc_add(g, in, otc_row_broadcast(g, vec(g, 3, bias), in));
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_set_input(ex, in, x, 2) == OTC_OK);
    const float *v = eval(g, y, &ex, NULL);
    REQUIRE(v);
    const float want[6] = {1, -2, 0.5f, 2, -1, 1.5f};
    check_values(v, want, 6, TOL);
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(ops_sum_mean) {
    otc_graph *g = otc_graph_new();
    const float x[6] = {1, 2, 3, 4, 5, -6};
    otc_id p = otc_param(g, NULL, otc_shape_2d(2, 3), x);
    otc_id s = otc_sum(g, p), m = otc_mean(g, p);
    otc_executor *ex = NULL;
    otc_shape sh;
    const float *v = eval(g, s, &ex, &sh);
    REQUIRE(v);
    CHECK(sh.ndim == 0);
    CHECK_NEAR(v[0], 9.0, TOL);
    v = eval(g, m, &ex, NULL);
    REQUIRE(v);
    CHECK_NEAR(v[0], 1.5, TOL);
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(ops_reshape_flatten) {
    otc_graph *g = otc_graph_new();
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)i;
    otc_id in = otc_input(g, "x", otc_shape_make(3, (int[]){OTC_BATCH, 2, 3}));
    otc_id f = otc_flatten(g, in);
    otc_id r = otc_reshape(g, in, otc_shape_make(3, (int[]){OTC_BATCH, 3, 2}));
    REQUIRE(f >= 0 && r >= 0);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_set_input(ex, in, x, 2) == OTC_OK);
    otc_shape s;
    const float *v = eval(g, f, &ex, &s);
    REQUIRE(v);
    CHECK(s.ndim == 2 && s.dim[0] == 2 && s.dim[1] == 6);
    check_values(v, x, 12, 0);
    v = eval(g, r, &ex, &s);
    REQUIRE(v);
    CHECK(s.ndim == 3 && s.dim[1] == 3 && s.dim[2] == 2);
    check_values(v, x, 12, 0);
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(ops_concat) {
    otc_graph *g = otc_graph_new();
    const float a[4] = {1, 2, 3, 4}, b[6] = {5, 6, 7, 8, 9, 10};
    otc_id pa = otc_param(g, NULL, otc_shape_2d(2, 2), a);
    otc_id pb = otc_param(g, NULL, otc_shape_2d(2, 3), b);
    otc_id c1 = otc_concat(g, 2, (otc_id[]){pa, pb}, 1);
    otc_id pc = otc_param(g, NULL, otc_shape_2d(3, 2), b);
    otc_id c0 = otc_concat(g, 2, (otc_id[]){pa, pc}, 0);
    otc_id cm = otc_concat(g, 3, (otc_id[]){pb, pa, pb}, -1);
    REQUIRE(c1 >= 0 && c0 >= 0 && cm >= 0);
    otc_executor *ex = NULL;
    otc_shape s;
    const float *v = eval(g, c1, &ex, &s);
    REQUIRE(v);
    CHECK(s.dim[0] == 2 && s.dim[1] == 5);
    const float w1[10] = {1, 2, 5, 6, 7, 3, 4, 8, 9, 10};
    check_values(v, w1, 10, 0);
    v = eval(g, c0, &ex, &s);
    REQUIRE(v);
    CHECK(s.dim[0] == 5 && s.dim[1] == 2);
    const float w0[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    check_values(v, w0, 10, 0);
    v = eval(g, cm, &ex, &s);
    REQUIRE(v);
    CHECK(s.dim[0] == 2 && s.dim[1] == 8);
    const float wm[16] = {5, 6, 7, 1, 2, 5, 6, 7, 8, 9, 10, 3, 4, 8, 9, 10};
    check_values(v, wm, 16, 0);
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(ops_slice_select) {
    otc_graph *g = otc_graph_new();
    float x[24]; /* [B=2, 3, 4] */
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    otc_id in = otc_input(g, "x", otc_shape_make(3, (int[]){OTC_BATCH, 3, 4}));
    otc_id sl = otc_slice(g, in, 2, 1, 2);   /* [B,3,2]: columns 1..2 */
    otc_id se = otc_select(g, in, 1, 2);     /* [B,4]: row 2 */
    otc_id sl1 = otc_slice(g, in, -2, 0, 2); /* [B,2,4] */
    REQUIRE(sl >= 0 && se >= 0 && sl1 >= 0);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_set_input(ex, in, x, 2) == OTC_OK);
    otc_shape s;
    const float *v = eval(g, sl, &ex, &s);
    REQUIRE(v);
    CHECK(s.ndim == 3 && s.dim[2] == 2);
    const float wsl[12] = {1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22};
    check_values(v, wsl, 12, 0);
    v = eval(g, se, &ex, &s);
    REQUIRE(v);
    CHECK(s.ndim == 2 && s.dim[0] == 2 && s.dim[1] == 4);
    const float wse[8] = {8, 9, 10, 11, 20, 21, 22, 23};
    check_values(v, wse, 8, 0);
    v = eval(g, sl1, &ex, &s);
    REQUIRE(v);
    const float wsl1[16] = {0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15, 16, 17, 18, 19};
    check_values(v, wsl1, 16, 0);
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(ops_softmax) {
    otc_graph *g = otc_graph_new();
    /* The second row is the first shifted by 1000: log-sum-exp keeps it finite and equal. */
    const float x[6] = {1, 2, 3, 1001, 1002, 1003};
    otc_id p = otc_param(g, NULL, otc_shape_2d(2, 3), x);
    otc_id sm = otc_softmax(g, p), ls = otc_log_softmax(g, p);
    double z = exp(1.0) + exp(2.0) + exp(3.0);
    otc_executor *ex = NULL;
    const float *v = eval(g, sm, &ex, NULL);
    REQUIRE(v);
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) CHECK_NEAR(v[r * 3 + c], exp(c + 1.0) / z, 1e-6);
    v = eval(g, ls, &ex, NULL);
    REQUIRE(v);
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) CHECK_NEAR(v[r * 3 + c], (c + 1.0) - log(z), 1e-5);
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(ops_mse_bce) {
    otc_graph *g = otc_graph_new();
    const float p[4] = {0.9f, 0.2f, 0.5f, 0.0f}, t[4] = {1.0f, 0.0f, 1.0f, 1.0f};
    otc_id pp = vec(g, 4, p), pt = vec(g, 4, t);
    otc_id mse = otc_mse(g, pp, pt), bce = otc_bce(g, pp, pt);
    otc_executor *ex = NULL;
    const float *v = eval(g, mse, &ex, NULL);
    REQUIRE(v);
    CHECK_NEAR(v[0], (0.01 + 0.04 + 0.25 + 1.0) / 4, 1e-6);
    v = eval(g, bce, &ex, NULL);
    REQUIRE(v);
    /* p = 0 with t = 1 is clamped to 1e-7: -log(1e-7) = 16.118. */
    double want = -(log(0.9) + log(0.8) + log(0.5) + log(1e-7)) / 4;
    CHECK_NEAR(v[0], want, 1e-4);
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(ops_softmax_ce) {
    otc_graph *g = otc_graph_new();
    const float x[6] = {1, 2, 3, -1, 0, 1};
    const float labels[2] = {2, 0};
    otc_id lg = otc_input(g, "logits", otc_shape_2d(OTC_BATCH, 3));
    otc_id l1 = otc_input(g, "labels", otc_shape_1d(OTC_BATCH));
    otc_id l2 = otc_input(g, "labels2", otc_shape_2d(OTC_BATCH, 1));
    otc_id ce1 = otc_softmax_ce(g, lg, l1), ce2 = otc_softmax_ce(g, lg, l2);
    REQUIRE(ce1 >= 0 && ce2 >= 0);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_set_input(ex, lg, x, 2) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, l1, labels, 2) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, l2, labels, 2) == OTC_OK);
    double z = log(exp(1.0) + exp(2.0) + exp(3.0));
    double want = ((z - 3) + (z - 2 - -1)) / 2; /* row 2 is row 1 shifted by -2 */
    const float *v = eval(g, ce1, &ex, NULL);
    REQUIRE(v);
    CHECK_NEAR(v[0], want, 1e-5);
    v = eval(g, ce2, &ex, NULL);
    REQUIRE(v);
    CHECK_NEAR(v[0], want, 1e-5);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* A label that is not a class index fails the forward, naming the node and the row. */
TEST(ops_softmax_ce_bad_label) {
    const float x[6] = {1, 2, 3, -1, 0, 1};
    const float bad[][2] = {{0, 3}, {0, -1}, {0, 1.5f}, {0, NAN}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        otc_graph *g = otc_graph_new();
        otc_id lg = otc_input(g, "logits", otc_shape_2d(OTC_BATCH, 3));
        otc_id l1 = otc_input(g, "labels", otc_shape_1d(OTC_BATCH));
        otc_id ce = otc_softmax_ce(g, lg, l1);
        REQUIRE(otc_graph_set_name(g, ce, "the_loss") == OTC_OK);
        otc_executor *ex = otc_interpreter_new(g, NULL);
        REQUIRE(ex);
        REQUIRE(otc_exec_set_input(ex, lg, x, 2) == OTC_OK);
        REQUIRE(otc_exec_set_input(ex, l1, bad[k], 2) == OTC_OK);
        CHECK(otc_exec_forward(ex) == OTC_ERR_ARG);
        const char *msg = otc_last_error();
        CHECK_MSG(strstr(msg, "the_loss") && strstr(msg, "row 1"), "message: %s", msg);
        const float *v;
        CHECK(otc_exec_value(ex, ce, &v, NULL) == OTC_ERR_STATE);
        otc_exec_free(ex);
        otc_graph_free(g);
    }
}

/* y = act(b + scale * sum_i w_i * src_i[:, col_i]) over a batch, sources of different
 * widths, one source read twice. */
TEST(ops_neuron) {
    otc_graph *g = otc_graph_new();
    const float s0[6] = {1, 2, 3, 4, 5, 6}; /* [2,3] */
    const float s1[4] = {-1, 0.5f, 2, -3};  /* [2,2] */
    otc_id a = otc_input(g, "a", otc_shape_2d(OTC_BATCH, 3));
    otc_id b = otc_input(g, "b", otc_shape_2d(OTC_BATCH, 2));
    const float w[3] = {0.5f, -1.0f, 0.25f};
    otc_id y =
        otc_neuron(g, "n", OTC_ACT_TANH, 0.1f, 0.7f, 3, (otc_id[]){a, b, a}, (int[]){2, 1, 0}, w);
    otc_id lin = otc_neuron(g, "lin", OTC_ACT_IDENTITY, -1.0f, 2.0f, 3, (otc_id[]){a, b, a},
                            (int[]){2, 1, 0}, w);
    REQUIRE(y >= 0 && lin >= 0);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    REQUIRE(otc_exec_set_input(ex, a, s0, 2) == OTC_OK);
    REQUIRE(otc_exec_set_input(ex, b, s1, 2) == OTC_OK);
    otc_shape s;
    const float *v = eval(g, y, &ex, &s);
    REQUIRE(v);
    CHECK(s.ndim == 2 && s.dim[0] == 2 && s.dim[1] == 1);
    /* row 0: 0.5*3 - 1*0.5 + 0.25*1 = 1.25; row 1: 0.5*6 - 1*(-3) + 0.25*4 = 7 */
    CHECK_NEAR(v[0], tanh(0.1 + 0.7 * 1.25), 1e-6);
    CHECK_NEAR(v[1], tanh(0.1 + 0.7 * 7.0), 1e-6);
    v = eval(g, lin, &ex, NULL);
    REQUIRE(v);
    CHECK_NEAR(v[0], -1.0 + 2.0 * 1.25, 1e-6);
    CHECK_NEAR(v[1], -1.0 + 2.0 * 7.0, 1e-6);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* A neuron without sources outputs act(bias) for every row. */
TEST(ops_neuron_no_sources) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id n = otc_neuron(g, NULL, OTC_ACT_SIGMOID, 0.3f, 1.0f, 0, NULL, NULL, NULL);
    otc_id y = otc_add(g, x, n);
    REQUIRE(y >= 0);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    const float xs[3] = {0, 1, 2};
    REQUIRE(otc_exec_set_input(ex, x, xs, 3) == OTC_OK);
    const float *v = eval(g, y, &ex, NULL);
    REQUIRE(v);
    for (int i = 0; i < 3; i++) CHECK_NEAR(v[i], i + 1 / (1 + exp(-0.3)), 1e-6);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Delay outputs its input's value from the previous forward (zeros first). */
TEST(ops_delay) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id d = otc_delay(g, "d", otc_shape_2d(OTC_BATCH, 2));
    otc_id y = otc_scale(g, x, 2.0f);
    REQUIRE(otc_graph_set_input(g, d, 0, y) == OTC_OK);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    const float x1[2] = {1, 2}, x2[2] = {3, 4};
    REQUIRE(otc_exec_set_input(ex, x, x1, 1) == OTC_OK);
    const float *v = eval(g, d, &ex, NULL);
    REQUIRE(v);
    CHECK(v[0] == 0 && v[1] == 0);
    REQUIRE(otc_exec_set_input(ex, x, x2, 1) == OTC_OK);
    v = eval(g, d, &ex, NULL);
    REQUIRE(v);
    CHECK(v[0] == 2 && v[1] == 4);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* The mean losses' per-element trees against hand-computed values: MSE (x - t)^2 and its
 * derivatives 2(x - t), -2(x - t); BCE -(t log p + (1-t) log(1-p)), d/dp (p-t)/(p(1-p)),
 * d/dt log(1-p) - log p, with p clamped to [1e-7, 1 - 1e-7] in all three. */
TEST(ops_loss_trees_hand_computed) {
    const otc_expr *mse = otc_op_loss_expr(OTC_OP_MSE), *bce = otc_op_loss_expr(OTC_OP_BCE);
    REQUIRE(mse && bce);
    CHECK(otc_op_loss_expr(OTC_OP_SOFTMAX_CE) == NULL && otc_op_loss_expr(OTC_OP_ADD) == NULL);
    CHECK(otc_op_map_expr(OTC_OP_MSE) == NULL);
    otc_expr_env e = {.x = 3.0f, .x1 = 0.5f};
    CHECK(otc_expr_eval(mse, &e) == 6.25f);
    CHECK(otc_expr_eval(otc_op_loss_grad_expr(OTC_OP_MSE, 0), &e) == 5.0f);
    CHECK(otc_expr_eval(otc_op_loss_grad_expr(OTC_OP_MSE, 1), &e) == -5.0f);
    e = (otc_expr_env){.x = 0.25f, .x1 = 1.0f};
    CHECK_NEAR(otc_expr_eval(bce, &e), log(4.0), 1e-6);
    CHECK_NEAR(otc_expr_eval(otc_op_loss_grad_expr(OTC_OP_BCE, 0), &e), -4.0, 1e-5);
    CHECK_NEAR(otc_expr_eval(otc_op_loss_grad_expr(OTC_OP_BCE, 1), &e), log(3.0), 1e-6);
    /* p = 0 with target 1: the clamp gives -log(1e-7) and d/dp (1e-7 - 1) / (1e-7 (1 - 1e-7)),
     * finite and pointing the right way. */
    e = (otc_expr_env){.x = 0.0f, .x1 = 1.0f};
    CHECK_NEAR(otc_expr_eval(bce, &e), -log(1e-7), 1e-4);
    CHECK_NEAR(otc_expr_eval(otc_op_loss_grad_expr(OTC_OP_BCE, 0), &e), -1e7, 1e1);
    e = (otc_expr_env){.x = 1.0f, .x1 = 0.0f};
    CHECK_NEAR(otc_expr_eval(bce, &e), -log(1.1920929e-7), 1e-4); /* 1 - q, q the float below 1 */
    CHECK(otc_expr_eval(otc_op_loss_grad_expr(OTC_OP_BCE, 0), &e) > 1e6f);
}

/* The optimiser rules' trees at one element against the torch.optim formulas by hand. */
TEST(ops_optimiser_rule_trees_hand_computed) {
    float arg[OTC_OPTIM_ARG_COUNT] = {0};
    arg[OTC_OPTIM_ARG_P] = 2.0f;
    arg[OTC_OPTIM_ARG_G] = 0.5f;
    arg[OTC_OPTIM_ARG_M] = 1.0f;
    arg[OTC_OPTIM_ARG_V] = 4.0f;
    arg[OTC_OPTIM_ARG_MOMENTUM] = 0.5f;
    arg[OTC_OPTIM_ARG_L2] = 0.25f;
    arg[OTC_OPTIM_ARG_BETA1] = 0.75f;
    arg[OTC_OPTIM_ARG_BETA2] = 0.5f;
    arg[OTC_OPTIM_ARG_EPS] = 0.5f;
    arg[OTC_OPTIM_ARG_LR] = 0.125f;
    arg[OTC_OPTIM_ARG_DECAY] = 0.5f;
    arg[OTC_OPTIM_ARG_STEP_SIZE] = 0.25f;
    arg[OTC_OPTIM_ARG_BC2_SQRT] = 0.5f;
    const otc_expr_env env = {.arg = arg, .n_arg = OTC_OPTIM_ARG_COUNT};
    /* g with decay: 0.5 + 0.25 * 2 = 1 */
    const otc_optim_rule *sgd = otc_optim_rule_get(OTC_OPTIM_RULE_SGD);
    CHECK(sgd->m == NULL && sgd->v == NULL);
    CHECK(otc_expr_eval(sgd->p, &env) == 2.0f - 0.125f * 1.0f);
    /* momentum: m = 0.5 * 1 + 1 = 1.5 (the p tree then reads the new m) */
    const otc_optim_rule *mom = otc_optim_rule_get(OTC_OPTIM_RULE_MOMENTUM);
    CHECK(otc_expr_eval(mom->m, &env) == 1.5f);
    CHECK(otc_expr_eval(mom->p, &env) == 2.0f - 0.125f * 1.0f); /* reads M = 1 here */
    const otc_optim_rule *nes = otc_optim_rule_get(OTC_OPTIM_RULE_NESTEROV);
    CHECK(otc_expr_eval(nes->p, &env) == 2.0f - 0.125f * (1.0f + 0.5f * 1.0f));
    /* Adam: m = 0.75 + 0.25 * 1 = 1, v = 0.5 * 4 + 0.5 * 1 = 2.5,
     * p = 2 - 0.25 * M / (sqrt(V) / 0.5 + 0.5) with the stored M = 1, V = 4: 2 - 0.25 / 4.5 */
    const otc_optim_rule *adam = otc_optim_rule_get(OTC_OPTIM_RULE_ADAM);
    CHECK(otc_expr_eval(adam->m, &env) == 1.0f);
    CHECK(otc_expr_eval(adam->v, &env) == 2.5f);
    CHECK_NEAR(otc_expr_eval(adam->p, &env), 2.0 - 0.25 / 4.5, 1e-7);
    /* AdamW: the plain gradient in the moments, p * decay first */
    const otc_optim_rule *adamw = otc_optim_rule_get(OTC_OPTIM_RULE_ADAMW);
    CHECK(otc_expr_eval(adamw->m, &env) == 0.75f * 1.0f + 0.25f * 0.5f);
    CHECK(otc_expr_eval(adamw->v, &env) == 0.5f * 4.0f + 0.5f * 0.25f);
    CHECK_NEAR(otc_expr_eval(adamw->p, &env), 1.0 - 0.25 / 4.5, 1e-7);
    /* which rule a configuration gets, and its per-step scalars */
    otc_optim_config c = otc_optim_defaults(OTC_OPTIM_SGD);
    CHECK(otc_optim_rule_of(&c) == OTC_OPTIM_RULE_SGD);
    c.momentum = 0.9f;
    CHECK(otc_optim_rule_of(&c) == OTC_OPTIM_RULE_MOMENTUM);
    c.nesterov = true;
    CHECK(otc_optim_rule_of(&c) == OTC_OPTIM_RULE_NESTEROV);
    c = otc_optim_defaults(OTC_OPTIM_ADAMW);
    CHECK(otc_optim_rule_of(&c) == OTC_OPTIM_RULE_ADAMW);
    float s[OTC_OPTIM_ARG_COUNT];
    otc_optim_step_args(&c, 2, s);
    CHECK(s[OTC_OPTIM_ARG_L2] == 0.0f);
    CHECK(s[OTC_OPTIM_ARG_DECAY] == 1.0f - 0.001f * 0.01f);
    /* in double from the float hyper-parameters */
    const double b1 = 0.9f, b2 = 0.999f;
    CHECK_NEAR(s[OTC_OPTIM_ARG_STEP_SIZE], (double)0.001f / (1.0 - b1 * b1), 1e-9);
    CHECK_NEAR(s[OTC_OPTIM_ARG_BC2_SQRT], sqrt(1.0 - b2 * b2), 1e-8);
}
