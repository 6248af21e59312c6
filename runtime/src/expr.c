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

/* Here, not through the exported function: the array evaluator asks at every node. */
static otc_ex_type type_of(const otc_expr *e) {
    while (e->op == OTC_EX_SELECT) e = e->b;
    return ops[e->op].type;
}

otc_ex_type otc_expr_type(const otc_expr *e) {
    return type_of(e);
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

float otc_expr_eval(const otc_expr *e, const otc_expr_env *env) {
    return eval(e, env).f;
}

/* ---- arrays, a chunk at a time: each node one tight loop over CHUNK elements ---- */

/* Elements per pass: long enough that walking the tree costs little per element, short
 * enough that a node's operands stay in L1 (3 x 1 KiB of stack per tree level). */
enum { CHUNK = 256 };

typedef struct {
    const otc_expr_arrays *in;
    size_t off, n;
} chunk;

/* Does e compute or read an integer? */
static bool on_integers(const otc_expr *e) {
    const otc_expr *operand[3] = {e->a, e->b, e->c};
    if (type_of(e) == OTC_EX_INT) return true;
    for (int i = 0; i < ops[e->op].arity; i++)
        if (type_of(operand[i]) == OTC_EX_INT) return true;
    return false;
}

#define MAP1(EXPR)                                                                                 \
    do {                                                                                           \
        for (size_t i = 0; i < n; i++) buf[i] = (EXPR);                                            \
    } while (0)

static const float *spread(float *t, float v, size_t n) {
    for (size_t i = 0; i < n; i++) t[i] = v;
    return t;
}

/* The arithmetic ops with one side the same for every element (a hyper-parameter times an
 * array, ...): one pass with the scalar in a register. False for other ops. */
static bool binary_with_scalar(otc_ex_op op, const float *a, const float *b, bool a_uniform,
                               float *buf, size_t n) {
    const float s = a_uniform ? a[0] : b[0];
    const float *v = a_uniform ? b : a;
    switch (op) {
    case OTC_EX_ADD:
        MAP1(v[i] + s);
        return true;
    case OTC_EX_MUL:
        MAP1(v[i] * s);
        return true;
    case OTC_EX_SUB:
        if (a_uniform)
            MAP1(s - v[i]);
        else
            MAP1(v[i] - s);
        return true;
    case OTC_EX_DIV:
        if (a_uniform)
            MAP1(s / v[i]);
        else
            MAP1(v[i] / s);
        return true;
    default:
        return false;
    }
}

/* The n values of e for elements off .. off+n-1: a pointer into an input array or into buf.
 * Truth values are 1.0f / 0.0f. *uniform: every element's value is the one at [0] (only that
 * one is written). */
static const float *eval_chunk(const otc_expr *e, const chunk *ch, float *buf, bool *uniform) {
    size_t n = ch->n;
    *uniform = false;
    switch (e->op) {
    case OTC_EX_X:
        return ch->in->x + ch->off;
    case OTC_EX_X1:
        return ch->in->x1 + ch->off;
    case OTC_EX_Y:
        return ch->in->y + ch->off;
    case OTC_EX_CONST:
        buf[0] = (float)e->k;
        *uniform = true;
        return buf;
    case OTC_EX_A:
        buf[0] = ch->in->a;
        *uniform = true;
        return buf;
    case OTC_EX_ARG: {
        const otc_expr_arg *arg = e->n >= 0 && e->n < ch->in->n_arg ? &ch->in->arg[e->n] : NULL;
        if (arg && arg->v) return arg->v + ch->off;
        buf[0] = arg ? arg->k : 0.0f;
        *uniform = true;
        return buf;
    }
    default:
        break;
    }
    if (on_integers(e)) {
        /* Integer work (only the math library's trees have it): point by point. */
        const otc_expr_arrays *in = ch->in;
        for (size_t i = 0; i < n; i++) {
            size_t j = ch->off + i;
            float argv[OTC_EX_MAX_ARGS];
            const int n_arg = in->n_arg < OTC_EX_MAX_ARGS ? in->n_arg : OTC_EX_MAX_ARGS;
            for (int k = 0; k < n_arg; k++) argv[k] = in->arg[k].v ? in->arg[k].v[j] : in->arg[k].k;
            otc_expr_env env = {in->x ? in->x[j] : 0,
                                in->x1 ? in->x1[j] : 0,
                                in->y ? in->y[j] : 0,
                                in->a,
                                argv,
                                n_arg};
            value v = eval(e, &env);
            buf[i] = ops[e->op].type == OTC_EX_TRUTH ? (v.t ? 1.0f : 0.0f) : v.f;
        }
        return buf;
    }
    float ta[CHUNK], tb[CHUNK], tc[CHUNK];
    const int arity = ops[e->op].arity;
    bool ua = true, ub = true, uc = true;
    const float *a = arity > 0 ? eval_chunk(e->a, ch, ta, &ua) : NULL;
    const float *b = arity > 1 ? eval_chunk(e->b, ch, tb, &ub) : NULL;
    const float *c = arity > 2 ? eval_chunk(e->c, ch, tc, &uc) : NULL;
    if (ua && ub && uc) {
        /* Operands the same for every element (constants, the parameter, scalar arguments):
         * so is the result, computed once. */
        n = 1;
        *uniform = true;
    } else if (arity == 2 && (ua || ub) && binary_with_scalar(e->op, a, b, ua, buf, n)) {
        return buf;
    } else {
        /* Spread a uniform operand over the chunk for the general loops below. */
        if (arity > 0 && ua) a = spread(ta, a[0], n);
        if (arity > 1 && ub) b = spread(tb, b[0], n);
        if (arity > 2 && uc) c = spread(tc, c[0], n);
    }
    switch (e->op) {
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
        MAP1(a[i] + b[i]);
        break;
    case OTC_EX_SUB:
        MAP1(a[i] - b[i]);
        break;
    case OTC_EX_MUL:
        MAP1(a[i] * b[i]);
        break;
    case OTC_EX_DIV:
        MAP1(a[i] / b[i]);
        break;
    case OTC_EX_MAX:
        MAP1(a[i] > b[i] ? a[i] : b[i]);
        break;
    case OTC_EX_COPYSIGN:
        MAP1(copysignf(a[i], b[i]));
        break;
    case OTC_EX_FMA:
        MAP1(fmaf(a[i], b[i], c[i]));
        break;
    case OTC_EX_POLY:
        MAP1((float)e->coef[0]);
        for (int k = 1; k < e->n; k++) MAP1(fmaf(buf[i], a[i], (float)e->coef[k]));
        break;
    case OTC_EX_LT:
        MAP1(a[i] < b[i] ? 1.0f : 0.0f);
        break;
    case OTC_EX_GT:
        MAP1(a[i] > b[i] ? 1.0f : 0.0f);
        break;
    case OTC_EX_EQ:
        MAP1(a[i] == b[i] ? 1.0f : 0.0f);
        break;
    case OTC_EX_SELECT:
        MAP1(a[i] != 0.0f ? b[i] : c[i]);
        break;
    case OTC_EX_SQRT:
        MAP1(sqrtf(a[i]));
        break;
    default:
        MAP1(0.0f);
        break; /* leaves and integer ops are handled above */
    }
    return buf;
}

void otc_expr_eval_n(const otc_expr *e, const otc_expr_arrays *in, float *out, size_t n) {
    float buf[CHUNK];
    for (size_t off = 0; off < n; off += CHUNK) {
        chunk ch = {in, off, n - off < CHUNK ? n - off : CHUNK};
        bool uniform;
        const float *v = eval_chunk(e, &ch, buf, &uniform);
        if (uniform)
            spread(out + off, v[0], ch.n);
        else
            memmove(out + off, v, ch.n * sizeof *out);
    }
}

void otc_expr_accumulate_n(const otc_expr *e, const otc_expr_arrays *in, const float *g, float *acc,
                           size_t n) {
    float buf[CHUNK];
    for (size_t off = 0; off < n; off += CHUNK) {
        chunk ch = {in, off, n - off < CHUNK ? n - off : CHUNK};
        bool uniform;
        const float *v = eval_chunk(e, &ch, buf, &uniform);
        if (uniform) v = spread(buf, v[0], ch.n);
        for (size_t i = 0; i < ch.n; i++) acc[off + i] += g[off + i] * v[i];
    }
}
