/* The scalar expression IR's queries and its evaluator: one point at a time (exactly, integer
 * and bit operations included) or over arrays a chunk of elements per node, which is how the
 * interpreter runs every elementwise op. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "otc/expr.h"

static const struct {
    const char *name;
    int arity;
    otc_ex_type type;
} ops[OTC_EX_COUNT] = {
    [OTC_EX_CONST] = {"const", 0, OTC_EX_FLOAT},
    [OTC_EX_ICONST] = {"iconst", 0, OTC_EX_INT},
    [OTC_EX_X] = {"x", 0, OTC_EX_FLOAT},
    [OTC_EX_X1] = {"x1", 0, OTC_EX_FLOAT},
    [OTC_EX_Y] = {"y", 0, OTC_EX_FLOAT},
    [OTC_EX_A] = {"a", 0, OTC_EX_FLOAT},
    [OTC_EX_NEG] = {"neg", 1, OTC_EX_FLOAT},
    [OTC_EX_ABS] = {"abs", 1, OTC_EX_FLOAT},
    [OTC_EX_EXP] = {"exp", 1, OTC_EX_FLOAT},
    [OTC_EX_EXPM1] = {"expm1", 1, OTC_EX_FLOAT},
    [OTC_EX_LOG] = {"log", 1, OTC_EX_FLOAT},
    [OTC_EX_LOG1P] = {"log1p", 1, OTC_EX_FLOAT},
    [OTC_EX_TANH] = {"tanh", 1, OTC_EX_FLOAT},
    [OTC_EX_SIN] = {"sin", 1, OTC_EX_FLOAT},
    [OTC_EX_COS] = {"cos", 1, OTC_EX_FLOAT},
    [OTC_EX_ADD] = {"add", 2, OTC_EX_FLOAT},
    [OTC_EX_SUB] = {"sub", 2, OTC_EX_FLOAT},
    [OTC_EX_MUL] = {"mul", 2, OTC_EX_FLOAT},
    [OTC_EX_DIV] = {"div", 2, OTC_EX_FLOAT},
    [OTC_EX_MAX] = {"max", 2, OTC_EX_FLOAT},
    [OTC_EX_COPYSIGN] = {"copysign", 2, OTC_EX_FLOAT},
    [OTC_EX_FMA] = {"fma", 3, OTC_EX_FLOAT},
    [OTC_EX_POLY] = {"poly", 1, OTC_EX_FLOAT},
    [OTC_EX_LT] = {"lt", 2, OTC_EX_TRUTH},
    [OTC_EX_GT] = {"gt", 2, OTC_EX_TRUTH},
    [OTC_EX_EQ] = {"eq", 2, OTC_EX_TRUTH},
    [OTC_EX_SELECT] = {"select", 3, OTC_EX_FLOAT},
    [OTC_EX_F2I] = {"f2i", 1, OTC_EX_INT},
    [OTC_EX_I2F] = {"i2f", 1, OTC_EX_FLOAT},
    [OTC_EX_BITS] = {"bits", 1, OTC_EX_INT},
    [OTC_EX_FROM_BITS] = {"from_bits", 1, OTC_EX_FLOAT},
    [OTC_EX_IADD] = {"iadd", 2, OTC_EX_INT},
    [OTC_EX_ISUB] = {"isub", 2, OTC_EX_INT},
    [OTC_EX_IAND] = {"iand", 2, OTC_EX_INT},
    [OTC_EX_IOR] = {"ior", 2, OTC_EX_INT},
    [OTC_EX_SHL] = {"shl", 2, OTC_EX_INT},
    [OTC_EX_LSHR] = {"lshr", 2, OTC_EX_INT},
    [OTC_EX_INE] = {"ine", 2, OTC_EX_TRUTH},
    [OTC_EX_ARG] = {"arg", 0, OTC_EX_FLOAT},
    [OTC_EX_SQRT] = {"sqrt", 1, OTC_EX_FLOAT},
};
_Static_assert(sizeof ops / sizeof ops[0] == OTC_EX_COUNT, "every expression op has its row");

otc_ex_type otc_expr_type(const otc_expr *e) {
    while (e->op == OTC_EX_SELECT) e = e->b;
    return ops[e->op].type;
}

int otc_expr_arity(otc_ex_op op) {
    return (unsigned)op < OTC_EX_COUNT ? ops[op].arity : -1;
}

const char *otc_expr_op_name(otc_ex_op op) {
    return (unsigned)op < OTC_EX_COUNT ? ops[op].name : "?";
}

bool otc_expr_reads(const otc_expr *e, otc_ex_op leaf) {
    if (!e) return false;
    if (e->op == leaf) return true;
    return otc_expr_reads(e->a, leaf) || otc_expr_reads(e->b, leaf) || otc_expr_reads(e->c, leaf);
}

bool otc_expr_reads_arg(const otc_expr *e, int n) {
    if (!e) return false;
    if (e->op == OTC_EX_ARG && e->n == n) return true;
    return otc_expr_reads_arg(e->a, n) || otc_expr_reads_arg(e->b, n) ||
           otc_expr_reads_arg(e->c, n);
}

bool otc_expr_calls_math(const otc_expr *e) {
    if (!e) return false;
    if (e->op >= OTC_EX_EXP && e->op <= OTC_EX_COS) return true;
    return otc_expr_calls_math(e->a) || otc_expr_calls_math(e->b) || otc_expr_calls_math(e->c);
}

bool otc_expr_is_const(const otc_expr *e, double k) {
    return e && e->op == OTC_EX_CONST && e->k == k;
}

/* ---- one point ---- */

typedef union {
    float f;
    uint32_t i; /* integers as their two's-complement bits: no signed overflow */
    bool t;
} value;

/* float -> int32 truncating, defined everywhere: out of range and NaN give INT32_MIN, as
 * the x86 conversion instruction does (the math trees guard what they convert). */
static uint32_t to_int(float f) {
    if (!(f > -2147483648.0f && f < 2147483648.0f)) return 0x80000000u;
    return (uint32_t)(int32_t)f;
}

static value eval(const otc_expr *e, const otc_expr_env *env) {
    value r = {0}, a = {0}, b = {0}, c = {0};
    int n = ops[e->op].arity;
    if (e->op == OTC_EX_SELECT) { /* only the taken arm: the other may be meaningless */
        return eval(e->a, env).t ? eval(e->b, env) : eval(e->c, env);
    }
    if (n > 0) a = eval(e->a, env);
    if (n > 1) b = eval(e->b, env);
    if (n > 2) c = eval(e->c, env);
    switch (e->op) {
    case OTC_EX_CONST:
        r.f = (float)e->k;
        break;
    case OTC_EX_ICONST:
        r.i = (uint32_t)(int64_t)e->k;
        break;
    case OTC_EX_X:
        r.f = env->x;
        break;
    case OTC_EX_X1:
        r.f = env->x1;
        break;
    case OTC_EX_Y:
        r.f = env->y;
        break;
    case OTC_EX_A:
        r.f = env->a;
        break;
    case OTC_EX_NEG:
        r.f = -a.f;
        break;
    case OTC_EX_ABS:
        r.f = fabsf(a.f);
        break;
    case OTC_EX_EXP:
        r.f = expf(a.f);
        break;
    case OTC_EX_EXPM1:
        r.f = expm1f(a.f);
        break;
    case OTC_EX_LOG:
        r.f = logf(a.f);
        break;
    case OTC_EX_LOG1P:
        r.f = log1pf(a.f);
        break;
    case OTC_EX_TANH:
        r.f = tanhf(a.f);
        break;
    case OTC_EX_SIN:
        r.f = sinf(a.f);
        break;
    case OTC_EX_COS:
        r.f = cosf(a.f);
        break;
    case OTC_EX_ADD:
        r.f = a.f + b.f;
        break;
    case OTC_EX_SUB:
        r.f = a.f - b.f;
        break;
    case OTC_EX_MUL:
        r.f = a.f * b.f;
        break;
    case OTC_EX_DIV:
        r.f = a.f / b.f;
        break;
    case OTC_EX_MAX:
        r.f = a.f > b.f ? a.f : b.f;
        break;
    case OTC_EX_COPYSIGN:
        r.f = copysignf(a.f, b.f);
        break;
    case OTC_EX_FMA:
        r.f = fmaf(a.f, b.f, c.f);
        break;
    case OTC_EX_POLY:
        r.f = (float)e->coef[0];
        for (int i = 1; i < e->n; i++) r.f = fmaf(r.f, a.f, (float)e->coef[i]);
        break;
    case OTC_EX_LT:
        r.t = a.f < b.f;
        break;
    case OTC_EX_GT:
        r.t = a.f > b.f;
        break;
    case OTC_EX_EQ:
        r.t = a.f == b.f;
        break;
    case OTC_EX_SELECT:
        break; /* above */
    case OTC_EX_F2I:
        r.i = to_int(a.f);
        break;
    case OTC_EX_I2F:
        r.f = (float)(int32_t)a.i;
        break;
    case OTC_EX_BITS:
        memcpy(&r.i, &a.f, sizeof r.i);
        break;
    case OTC_EX_FROM_BITS:
        memcpy(&r.f, &a.i, sizeof r.f);
        break;
    case OTC_EX_IADD:
        r.i = a.i + b.i;
        break;
    case OTC_EX_ISUB:
        r.i = a.i - b.i;
        break;
    case OTC_EX_IAND:
        r.i = a.i & b.i;
        break;
    case OTC_EX_IOR:
        r.i = a.i | b.i;
        break;
    case OTC_EX_SHL:
        r.i = a.i << (b.i & 31);
        break;
    case OTC_EX_LSHR:
        r.i = a.i >> (b.i & 31);
        break;
    case OTC_EX_INE:
        r.t = a.i != b.i;
        break;
    case OTC_EX_ARG:
        r.f = e->n >= 0 && e->n < env->n_arg ? env->arg[e->n] : 0.0f;
        break;
    case OTC_EX_SQRT:
        r.f = sqrtf(a.f);
        break;
    case OTC_EX_COUNT:
        break;
    }
    return r;
}

static bool truth(const otc_expr *e, const otc_expr_env *env);

/* The float subset, lean (the interpreter's per-element path at batch 1); integer and bit
 * work goes through eval. */
static float evalf(const otc_expr *e, const otc_expr_env *env) {
    switch (e->op) {
    case OTC_EX_CONST:
        return (float)e->k;
    case OTC_EX_X:
        return env->x;
    case OTC_EX_X1:
        return env->x1;
    case OTC_EX_Y:
        return env->y;
    case OTC_EX_A:
        return env->a;
    case OTC_EX_NEG:
        return -evalf(e->a, env);
    case OTC_EX_ABS:
        return fabsf(evalf(e->a, env));
    case OTC_EX_EXP:
        return expf(evalf(e->a, env));
    case OTC_EX_EXPM1:
        return expm1f(evalf(e->a, env));
    case OTC_EX_LOG:
        return logf(evalf(e->a, env));
    case OTC_EX_LOG1P:
        return log1pf(evalf(e->a, env));
    case OTC_EX_TANH:
        return tanhf(evalf(e->a, env));
    case OTC_EX_SIN:
        return sinf(evalf(e->a, env));
    case OTC_EX_COS:
        return cosf(evalf(e->a, env));
    case OTC_EX_ADD:
        return evalf(e->a, env) + evalf(e->b, env);
    case OTC_EX_SUB:
        return evalf(e->a, env) - evalf(e->b, env);
    case OTC_EX_MUL:
        return evalf(e->a, env) * evalf(e->b, env);
    case OTC_EX_DIV:
        return evalf(e->a, env) / evalf(e->b, env);
    case OTC_EX_SQRT:
        return sqrtf(evalf(e->a, env));
    case OTC_EX_ARG:
        return e->n >= 0 && e->n < env->n_arg ? env->arg[e->n] : 0.0f;
    case OTC_EX_MAX: {
        float a = evalf(e->a, env), b = evalf(e->b, env);
        return a > b ? a : b;
    }
    case OTC_EX_SELECT:
        return truth(e->a, env) ? evalf(e->b, env) : evalf(e->c, env);
    default:
        return eval(e, env).f;
    }
}

static bool truth(const otc_expr *e, const otc_expr_env *env) {
    switch (e->op) {
    case OTC_EX_LT:
        return evalf(e->a, env) < evalf(e->b, env);
    case OTC_EX_GT:
        return evalf(e->a, env) > evalf(e->b, env);
    case OTC_EX_EQ:
        return evalf(e->a, env) == evalf(e->b, env);
    default:
        return eval(e, env).t;
    }
}

float otc_expr_eval(const otc_expr *e, const otc_expr_env *env) {
    return evalf(e, env);
}

/* ---- arrays: a tree flattened into steps once, each step one tight loop over a chunk ---- */

enum { CHUNK = 64 };

/* Operand kinds of a step. */
enum { IN_REG, IN_CONST, IN_PARAM };
/* Registers 0, 1, 2 are the leaves x, x1, y (pointers into the arrays); step i writes
 * register FIRST_STEP_REG + i. */
enum { REG_X, REG_X1, REG_Y, FIRST_STEP_REG };
/* Steps beyond the tree's ops: a subtree evaluated point by point (integer and bit work),
 * and a copy of a leaf (a tree that is just x). */
#define OP_POINT OTC_EX_COUNT
#define OP_COPY  (OTC_EX_COUNT + 1)
#define OP_ARG   (OTC_EX_COUNT + 2) /* argument .b: its array, or its value spread */

/* The leaves at element j (argv: room for the arguments). */
static otc_expr_env env_at(const otc_expr_arrays *in, size_t j, float *argv) {
    const int n_arg = in->n_arg < OTC_EX_MAX_ARGS ? in->n_arg : OTC_EX_MAX_ARGS;
    for (int k = 0; k < n_arg; k++) argv[k] = in->arg[k].v ? in->arg[k].v[j] : in->arg[k].k;
    return (otc_expr_env){in->x ? in->x[j] : 0.0f,
                          in->x1 ? in->x1[j] : 0.0f,
                          in->y ? in->y[j] : 0.0f,
                          in->a,
                          argv,
                          n_arg};
}

/* Does e compute or read an integer? */
static bool on_integers(const otc_expr *e) {
    const otc_expr *operand[3] = {e->a, e->b, e->c};
    if (otc_expr_type(e) == OTC_EX_INT) return true;
    for (int i = 0; i < ops[e->op].arity; i++)
        if (otc_expr_type(operand[i]) == OTC_EX_INT) return true;
    return false;
}

static int add_step(otc_expr_program *p, otc_expr_step st) {
    if (p->n >= OTC_EXPR_MAX_STEPS) return -1;
    p->step[p->n] = st;
    return FIRST_STEP_REG + p->n++;
}

/* Appends the steps computing e; returns its register, or -1 when the program is full. For a
 * constant or the parameter sets *kind instead (the parent takes it as a scalar operand). */
static int flatten(otc_expr_program *p, const otc_expr *e, int *kind, float *k);

/* An operand as a register (materialising a scalar when the step cannot take one). */
static int operand_reg(otc_expr_program *p, const otc_expr *e) {
    int kind = IN_REG;
    float k = 0.0f;
    int r = flatten(p, e, &kind, &k);
    if (kind == IN_REG) return r;
    otc_expr_step fill = {.op = OTC_EX_CONST, .kind_a = (unsigned char)kind, .k_a = k};
    return add_step(p, fill);
}

static int flatten(otc_expr_program *p, const otc_expr *e, int *kind, float *k) {
    *kind = IN_REG;
    switch (e->op) {
    case OTC_EX_ARG:
        if (e->n < 0 || e->n >= OTC_EX_MAX_ARGS) return -1;
        return add_step(p, (otc_expr_step){.op = OP_ARG, .b = (unsigned char)e->n});
    case OTC_EX_X:
        return REG_X;
    case OTC_EX_X1:
        return REG_X1;
    case OTC_EX_Y:
        return REG_Y;
    case OTC_EX_CONST:
        *kind = IN_CONST, *k = (float)e->k;
        return 0;
    case OTC_EX_A:
        *kind = IN_PARAM;
        return 0;
    default:
        break;
    }
    if (on_integers(e)) return add_step(p, (otc_expr_step){.op = OP_POINT, .point = e});
    otc_expr_step st = {.op = (unsigned char)e->op, .point = e};
    const int arity = ops[e->op].arity;
    if (arity == 2) { /* one operand may stay a scalar */
        int ka, kb;
        float va = 0.0f, vb = 0.0f;
        int ra = flatten(p, e->a, &ka, &va);
        int rb = flatten(p, e->b, &kb, &vb);
        if (ka != IN_REG && kb != IN_REG) {
            otc_expr_step fill = {.op = OTC_EX_CONST, .kind_a = (unsigned char)ka, .k_a = va};
            ra = add_step(p, fill), ka = IN_REG;
        }
        if (ra < 0 || rb < 0) return -1;
        st.a = (unsigned char)ra, st.b = (unsigned char)rb;
        st.kind_a = (unsigned char)ka, st.kind_b = (unsigned char)kb;
        st.k_a = va, st.k_b = vb;
    } else {
        const otc_expr *operand[3] = {e->a, e->b, e->c};
        unsigned char *reg[3] = {&st.a, &st.b, &st.c};
        for (int i = 0; i < arity; i++) {
            int r = operand_reg(p, operand[i]);
            if (r < 0) return -1;
            *reg[i] = (unsigned char)r;
        }
    }
    return add_step(p, st);
}

bool otc_expr_compile(const otc_expr *e, otc_expr_program *p) {
    memset(p, 0, sizeof *p);
    p->root = e;
    int kind;
    float k = 0.0f;
    int r = flatten(p, e, &kind, &k);
    if (r < 0) return false;
    if (kind != IN_REG || r < FIRST_STEP_REG) { /* a bare leaf: copy it */
        otc_expr_step st = {.op = OTC_EX_CONST, .kind_a = (unsigned char)kind, .k_a = k};
        if (kind == IN_REG) st = (otc_expr_step){.op = OP_COPY, .a = (unsigned char)r};
        if (add_step(p, st) < 0) return false;
    }
    return true;
}

#define MAP1(EXPR)                                                                                 \
    do {                                                                                           \
        for (size_t i = 0; i < n; i++) d[i] = (EXPR);                                              \
    } while (0)
/* A binary step: register operands, or one of them a scalar. */
#define BIN(OP)                                                                                    \
    do {                                                                                           \
        if (st->kind_a != IN_REG)                                                                  \
            MAP1(ka OP b[i]);                                                                      \
        else if (st->kind_b != IN_REG)                                                             \
            MAP1(a[i] OP kb);                                                                      \
        else                                                                                       \
            MAP1(a[i] OP b[i]);                                                                    \
    } while (0)
#define CMP(OP)                                                                                    \
    do {                                                                                           \
        if (st->kind_a != IN_REG)                                                                  \
            MAP1(ka OP b[i] ? 1.0f : 0.0f);                                                        \
        else if (st->kind_b != IN_REG)                                                             \
            MAP1(a[i] OP kb ? 1.0f : 0.0f);                                                        \
        else                                                                                       \
            MAP1(a[i] OP b[i] ? 1.0f : 0.0f);                                                      \
    } while (0)

/* The program over elements off .. off+n-1 (n <= CHUNK); returns the result's values. */
static const float *run_chunk(const otc_expr_program *p, const otc_expr_arrays *in, size_t off,
                              size_t n, float (*regs)[CHUNK], float *last) {
    const float *reg[FIRST_STEP_REG + OTC_EXPR_MAX_STEPS];
    reg[REG_X] = in->x ? in->x + off : NULL;
    reg[REG_X1] = in->x1 ? in->x1 + off : NULL;
    reg[REG_Y] = in->y ? in->y + off : NULL;
    for (int s = 0; s < p->n; s++) {
        const otc_expr_step *st = &p->step[s];
        /* The last step may write the caller's array directly: every step reads and writes
         * element i alone, so even an output that aliases an input is safe. */
        float *d = last && s == p->n - 1 ? last : regs[s];
        const float *a = reg[st->a], *b = reg[st->b], *c = reg[st->c];
        const float ka = st->kind_a == IN_PARAM ? in->a : st->k_a;
        const float kb = st->kind_b == IN_PARAM ? in->a : st->k_b;
        switch (st->op) {
        case OP_ARG: {
            const otc_expr_arg *arg = st->b < in->n_arg ? &in->arg[st->b] : NULL;
            if (arg && arg->v) { /* the array itself, no copy */
                reg[FIRST_STEP_REG + s] = arg->v + off;
                continue;
            }
            MAP1(arg ? arg->k : 0.0f);
            break;
        }
        case OTC_EX_SQRT:
            MAP1(sqrtf(a[i]));
            break;
        case OTC_EX_CONST:
            MAP1(ka);
            break;
        case OTC_EX_NEG:
            MAP1(-a[i]);
            break;
        case OTC_EX_ABS:
            MAP1(fabsf(a[i]));
            break;
        case OTC_EX_EXP:
            MAP1(expf(a[i]));
            break;
        case OTC_EX_EXPM1:
            MAP1(expm1f(a[i]));
            break;
        case OTC_EX_LOG:
            MAP1(logf(a[i]));
            break;
        case OTC_EX_LOG1P:
            MAP1(log1pf(a[i]));
            break;
        case OTC_EX_TANH:
            MAP1(tanhf(a[i]));
            break;
        case OTC_EX_SIN:
            MAP1(sinf(a[i]));
            break;
        case OTC_EX_COS:
            MAP1(cosf(a[i]));
            break;
        case OTC_EX_ADD:
            BIN(+);
            break;
        case OTC_EX_SUB:
            BIN(-);
            break;
        case OTC_EX_MUL:
            BIN(*);
            break;
        case OTC_EX_DIV:
            BIN(/);
            break;
        case OTC_EX_MAX:
            if (st->kind_a != IN_REG)
                MAP1(ka > b[i] ? ka : b[i]);
            else if (st->kind_b != IN_REG)
                MAP1(a[i] > kb ? a[i] : kb);
            else
                MAP1(a[i] > b[i] ? a[i] : b[i]);
            break;
        case OTC_EX_COPYSIGN:
            if (st->kind_a != IN_REG)
                MAP1(copysignf(ka, b[i]));
            else if (st->kind_b != IN_REG)
                MAP1(copysignf(a[i], kb));
            else
                MAP1(copysignf(a[i], b[i]));
            break;
        case OTC_EX_FMA:
            MAP1(fmaf(a[i], b[i], c[i]));
            break;
        case OTC_EX_POLY: {
            const otc_expr *e = st->point;
            for (size_t i = 0; i < n; i++) { /* element by element: d may alias a */
                float acc = (float)e->coef[0];
                for (int j = 1; j < e->n; j++) acc = fmaf(acc, a[i], (float)e->coef[j]);
                d[i] = acc;
            }
            break;
        }
        case OTC_EX_LT:
            CMP(<);
            break;
        case OTC_EX_GT:
            CMP(>);
            break;
        case OTC_EX_EQ:
            CMP(==);
            break;
        case OTC_EX_SELECT:
            MAP1(a[i] != 0.0f ? b[i] : c[i]);
            break;
        case OP_POINT:
            for (size_t i = 0; i < n; i++) {
                float argv[OTC_EX_MAX_ARGS];
                const otc_expr_env env = env_at(in, off + i, argv);
                value v = eval(st->point, &env);
                d[i] = otc_expr_type(st->point) == OTC_EX_TRUTH ? (v.t ? 1.0f : 0.0f) : v.f;
            }
            break;
        case OP_COPY:
            MAP1(a[i]);
            break;
        default:
            MAP1(0.0f);
            break; /* integer ops run inside OP_POINT steps */
        }
        reg[FIRST_STEP_REG + s] = d;
    }
    return reg[FIRST_STEP_REG + p->n - 1];
}

/* out = the program's values (g NULL), or out += g times them (a gradient contribution). */
static void run(const otc_expr_program *p, const otc_expr_arrays *in, const float *g, float *out,
                size_t n) {
    if (n == 1) { /* one element (NEAT's batch of one): the tree itself is quicker */
        float argv[OTC_EX_MAX_ARGS];
        const otc_expr_env env = env_at(in, 0, argv);
        const float v = evalf(p->root, &env);
        out[0] = g ? out[0] + g[0] * v : v;
        return;
    }
    float regs[OTC_EXPR_MAX_STEPS][CHUNK];
    for (size_t off = 0; off < n; off += CHUNK) {
        size_t m = n - off < CHUNK ? n - off : CHUNK;
        const float *v = run_chunk(p, in, off, m, regs, g ? NULL : out + off);
        if (g)
            for (size_t i = 0; i < m; i++) out[off + i] += g[off + i] * v[i];
        else if (v != out + off)
            memmove(out + off, v, m * sizeof *out);
    }
}

void otc_expr_run_n(const otc_expr_program *p, const otc_expr_arrays *in, float *out, size_t n) {
    run(p, in, NULL, out, n);
}

void otc_expr_run_accumulate_n(const otc_expr_program *p, const otc_expr_arrays *in, const float *g,
                               float *acc, size_t n) {
    run(p, in, g, acc, n);
}

void otc_expr_eval_n(const otc_expr *e, const otc_expr_arrays *in, float *out, size_t n) {
    otc_expr_program p;
    if (otc_expr_compile(e, &p)) {
        otc_expr_run_n(&p, in, out, n);
        return;
    }
    float argv[OTC_EX_MAX_ARGS];
    for (size_t i = 0; i < n; i++) { /* too large a tree for a program */
        const otc_expr_env env = env_at(in, i, argv);
        out[i] = otc_expr_eval(e, &env);
    }
}
