/* An otc expression tree (otc/expr.h) as ONNX nodes, one per tree node: how every elementwise
 * op and activation is exported from the op spec itself, with no ONNX spelling per activation.
 * Truth values become bool tensors (Less, Greater, Equal) that Where selects by. */
#include "onnx_export_build.h"

/* Subtrees already emitted in this tree (a subtree used twice is one object, so one node). */
typedef struct {
    const otc_expr *e[OTC_EXPR_MAX_STEPS * 2];
    const char *name[OTC_EXPR_MAX_STEPS * 2];
    int n;
} seen_set;

typedef struct {
    oxw_builder *b;
    const char *x, *x1;
    float a;
    seen_set seen;
} walk;

static const char *emit(walk *w, const otc_expr *e, const char *out);

static const char *unary(walk *w, const char *op, const otc_expr *e, const char *out) {
    return oxw_op1(w->b, op, out, emit(w, e->a, NULL));
}

static const char *binary(walk *w, const char *op, const otc_expr *e, const char *out) {
    const char *l = emit(w, e->a, NULL);
    return oxw_op2(w->b, op, out, l, emit(w, e->b, NULL));
}

/* Where(cond, p, q). */
static const char *where(walk *w, const char *cond, const char *p, const char *q, const char *out) {
    Onnx__NodeProto *n = oxw_node(w->b, "Where", out, 3, (const char *[]){cond, p, q});
    return n ? n->output[0] : NULL;
}

static const char *emit_node(walk *w, const otc_expr *e, const char *out) {
    oxw_builder *b = w->b;
    switch (e->op) {
    case OTC_EX_CONST:
        return out ? oxw_op1(b, "Identity", out, oxw_const_f(b, (float)e->k))
                   : oxw_const_f(b, (float)e->k);
    case OTC_EX_A:
        return out ? oxw_op1(b, "Identity", out, oxw_const_f(b, w->a)) : oxw_const_f(b, w->a);
    case OTC_EX_X:
    case OTC_EX_X1: {
        const char *v = e->op == OTC_EX_X ? w->x : w->x1;
        if (!v) break;
        return out ? oxw_op1(b, "Identity", out, v) : v;
    }
    case OTC_EX_NEG:
        return unary(w, "Neg", e, out);
    case OTC_EX_ABS:
        return unary(w, "Abs", e, out);
    case OTC_EX_EXP:
        return unary(w, "Exp", e, out);
    case OTC_EX_LOG:
        return unary(w, "Log", e, out);
    case OTC_EX_TANH:
        return unary(w, "Tanh", e, out);
    case OTC_EX_SIN:
        return unary(w, "Sin", e, out);
    case OTC_EX_COS:
        return unary(w, "Cos", e, out);
    case OTC_EX_SQRT:
        return unary(w, "Sqrt", e, out);
    /* ONNX has neither expm1 nor log1p: exp(p) - 1 and log(1 + p), exact but for the last
     * bits near 0. */
    case OTC_EX_EXPM1:
        return oxw_op2(b, "Sub", out, unary(w, "Exp", e, NULL), oxw_const_f(b, 1.0f));
    case OTC_EX_LOG1P:
        return oxw_op1(b, "Log", out,
                       oxw_op2(b, "Add", NULL, emit(w, e->a, NULL), oxw_const_f(b, 1.0f)));
    case OTC_EX_ADD:
        return binary(w, "Add", e, out);
    case OTC_EX_SUB:
        return binary(w, "Sub", e, out);
    case OTC_EX_MUL:
        return binary(w, "Mul", e, out);
    case OTC_EX_DIV:
        return binary(w, "Div", e, out);
    case OTC_EX_MAX:
        return binary(w, "Max", e, out);
    case OTC_EX_LT:
        return binary(w, "Less", e, out);
    case OTC_EX_GT:
        return binary(w, "Greater", e, out);
    case OTC_EX_EQ:
        return binary(w, "Equal", e, out);
    case OTC_EX_COPYSIGN: {
        /* |a| with b's sign (a negative zero b counts as positive here) */
        const char *mag = unary(w, "Abs", e, NULL);
        const char *neg = oxw_op2(b, "Less", NULL, emit(w, e->b, NULL), oxw_const_f(b, 0.0f));
        return where(w, neg, oxw_op1(b, "Neg", NULL, mag), mag, out);
    }
    case OTC_EX_FMA: {
        const char *ab = binary(w, "Mul", e, NULL);
        return oxw_op2(b, "Add", out, ab, emit(w, e->c, NULL));
    }
    case OTC_EX_POLY: {
        /* Horner's rule, as the tree means it */
        if (e->n < 1) break;
        const char *x = emit(w, e->a, NULL), *acc = oxw_const_f(b, (float)e->coef[0]);
        for (int i = 1; i < e->n; i++)
            acc = oxw_op2(b, "Add", i == e->n - 1 ? out : NULL, oxw_op2(b, "Mul", NULL, acc, x),
                          oxw_const_f(b, (float)e->coef[i]));
        return e->n == 1 && out ? oxw_op1(b, "Identity", out, acc) : acc;
    }
    case OTC_EX_SELECT: {
        const char *c = emit(w, e->a, NULL), *p = emit(w, e->b, NULL);
        return where(w, c, p, emit(w, e->c, NULL), out);
    }
    default:
        break;
    }
    oxw_unsupported(b, "its math uses '%s', which the ONNX export does not write",
                    otc_expr_op_name(e->op));
    return NULL;
}

static const char *emit(walk *w, const otc_expr *e, const char *out) {
    if (w->b->st) return NULL;
    if (!out)
        for (int i = 0; i < w->seen.n; i++)
            if (w->seen.e[i] == e) return w->seen.name[i];
    const char *r = emit_node(w, e, out);
    if (r && !out && w->seen.n < (int)(sizeof w->seen.e / sizeof w->seen.e[0])) {
        w->seen.e[w->seen.n] = e;
        w->seen.name[w->seen.n++] = r;
    }
    return r;
}

const char *oxw_expr(oxw_builder *b, const otc_expr *e, const char *x, const char *x1, float a,
                     const char *out) {
    walk w = {.b = b, .x = x, .x1 = x1, .a = a};
    return emit(&w, e, out);
}
