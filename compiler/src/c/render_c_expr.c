/* Expression trees (otc/expr.h) spelled as C: selects as the file's branch-free NAME_sel, the
 * math library as the file's NAME_exp ..., integers as unsigned int (wrapping, never UB), and
 * a subtree used twice as one local. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "render_c_internal.h"

enum { MAX_SHARED = 64 };

typedef struct {
    otc_cr *c;
    const otc_cr_leaves *leaves;
    const otc_expr *shared[MAX_SHARED]; /* subtrees referenced twice */
    int n_shared;
    const otc_expr *bound[MAX_SHARED]; /* those with a local so far: bound[i] is ti */
    int n_bound;
} printer;

static bool is_leaf(const otc_expr *e) {
    return otc_expr_arity(e->op) == 0;
}

/* Collects the non-leaf subtrees reached twice. */
static void find_shared(printer *pr, const otc_expr *e, const otc_expr **seen, int *n_seen) {
    if (!e || is_leaf(e)) return;
    for (int i = 0; i < *n_seen; i++)
        if (seen[i] == e) {
            for (int j = 0; j < pr->n_shared; j++)
                if (pr->shared[j] == e) return;
            if (pr->n_shared < MAX_SHARED) pr->shared[pr->n_shared++] = e;
            return;
        }
    find_shared(pr, e->a, seen, n_seen);
    find_shared(pr, e->b, seen, n_seen);
    find_shared(pr, e->c, seen, n_seen);
    if (*n_seen < 4 * MAX_SHARED) seen[(*n_seen)++] = e;
}

static const char *math_name(otc_cr *c, otc_cr_mathfn f, char *buf, size_t len) {
    return otc_cr_math(c, f, buf, len);
}

static void put(printer *pr, otc_text *out, const otc_expr *e);

static void call(printer *pr, otc_text *out, const char *fn, const otc_expr *e) {
    otc_text_printf(out, "%s(", fn);
    put(pr, out, e->a);
    if (e->b) {
        otc_text_puts(out, ", ");
        put(pr, out, e->b);
    }
    if (e->c) {
        otc_text_puts(out, ", ");
        put(pr, out, e->c);
    }
    otc_text_puts(out, ")");
}

static void infix(printer *pr, otc_text *out, const char *op, const otc_expr *e) {
    otc_text_puts(out, "(");
    put(pr, out, e->a);
    otc_text_printf(out, " %s ", op);
    put(pr, out, e->b);
    otc_text_puts(out, ")");
}

static const char *leaf(printer *pr, const char *spelling, const char *what) {
    if (spelling) return spelling;
    pr->c->st =
        otc_fail(OTC_ERR_UNSUPPORTED, "emit-c: an expression reads %s, which is not there", what);
    return "0.0f";
}

static void put(printer *pr, otc_text *out, const otc_expr *e) {
    for (int i = 0; i < pr->n_bound; i++)
        if (pr->bound[i] == e) {
            otc_text_printf(out, "t%d", i);
            return;
        }
    otc_cr *c = pr->c;
    char buf[96];
    switch (e->op) {
    case OTC_EX_CONST:
        otc_text_puts(out, otc_cr_float(c, buf, (float)e->k));
        return;
    case OTC_EX_ICONST:
        otc_text_printf(out, "%uu", (unsigned)(uint32_t)(int64_t)e->k);
        return;
    case OTC_EX_X:
        otc_text_puts(out, leaf(pr, pr->leaves->x, "the input x"));
        return;
    case OTC_EX_X1:
        otc_text_puts(out, leaf(pr, pr->leaves->x1, "a second input"));
        return;
    case OTC_EX_Y:
        otc_text_puts(out, leaf(pr, pr->leaves->y, "the output y"));
        return;
    case OTC_EX_A:
        otc_text_puts(out, leaf(pr, pr->leaves->a, "the parameter a"));
        return;
    case OTC_EX_NEG:
        otc_text_puts(out, "(-");
        put(pr, out, e->a);
        otc_text_puts(out, ")");
        return;
    case OTC_EX_ABS:
        call(pr, out, "fabsf", e);
        return;
    case OTC_EX_EXP:
        call(pr, out, math_name(c, OTC_CRM_EXP, buf, sizeof buf), e);
        return;
    case OTC_EX_EXPM1:
        call(pr, out, math_name(c, OTC_CRM_EXPM1, buf, sizeof buf), e);
        return;
    case OTC_EX_LOG:
        call(pr, out, math_name(c, OTC_CRM_LOG, buf, sizeof buf), e);
        return;
    case OTC_EX_LOG1P:
        call(pr, out, math_name(c, OTC_CRM_LOG1P, buf, sizeof buf), e);
        return;
    case OTC_EX_TANH:
        call(pr, out, math_name(c, OTC_CRM_TANH, buf, sizeof buf), e);
        return;
    case OTC_EX_SIN:
        call(pr, out, math_name(c, OTC_CRM_SIN, buf, sizeof buf), e);
        return;
    case OTC_EX_COS:
        call(pr, out, math_name(c, OTC_CRM_COS, buf, sizeof buf), e);
        return;
    case OTC_EX_ADD:
        infix(pr, out, "+", e);
        return;
    case OTC_EX_SUB:
        infix(pr, out, "-", e);
        return;
    case OTC_EX_MUL:
        infix(pr, out, "*", e);
        return;
    case OTC_EX_DIV:
        infix(pr, out, "/", e);
        return;
    case OTC_EX_MAX:
        call(pr, out, math_name(c, OTC_CRM_FMAX, buf, sizeof buf), e);
        return;
    case OTC_EX_COPYSIGN:
        call(pr, out, "copysignf", e);
        return;
    case OTC_EX_FMA:
        otc_cr_math(c, OTC_CRM_BASICS, buf, sizeof buf);
        snprintf(buf, sizeof buf, "%s_fma", c->name);
        call(pr, out, buf, e);
        return;
    case OTC_EX_POLY: {
        /* Horner: fma(fma(c0, a, c1), a, c2) ... */
        otc_cr_math(c, OTC_CRM_BASICS, buf, sizeof buf);
        for (int i = 1; i < e->n; i++) otc_text_printf(out, "%s_fma(", c->name);
        otc_text_puts(out, otc_cr_float(c, buf, (float)e->coef[0]));
        for (int i = 1; i < e->n; i++) {
            otc_text_puts(out, ", ");
            put(pr, out, e->a);
            otc_text_printf(out, ", %s)", otc_cr_float(c, buf, (float)e->coef[i]));
        }
        return;
    }
    case OTC_EX_LT:
        infix(pr, out, "<", e);
        return;
    case OTC_EX_GT:
        infix(pr, out, ">", e);
        return;
    case OTC_EX_EQ:
        infix(pr, out, "==", e);
        return;
    case OTC_EX_SELECT:
        call(pr, out, math_name(c, OTC_CRM_BASICS, buf, sizeof buf), e);
        return;
    case OTC_EX_F2I:
        otc_text_puts(out, "(unsigned int)(int)(");
        put(pr, out, e->a);
        otc_text_puts(out, ")");
        return;
    case OTC_EX_I2F:
        otc_text_puts(out, "(float)(int)(");
        put(pr, out, e->a);
        otc_text_puts(out, ")");
        return;
    case OTC_EX_BITS:
    case OTC_EX_FROM_BITS:
        otc_cr_math(c, OTC_CRM_BASICS, buf, sizeof buf);
        snprintf(buf, sizeof buf, "%s_%s", c->name, e->op == OTC_EX_BITS ? "to_bits" : "from_bits");
        call(pr, out, buf, e);
        return;
    case OTC_EX_IADD:
        infix(pr, out, "+", e);
        return;
    case OTC_EX_ISUB:
        infix(pr, out, "-", e);
        return;
    case OTC_EX_IAND:
        infix(pr, out, "&", e);
        return;
    case OTC_EX_IOR:
        infix(pr, out, "|", e);
        return;
    case OTC_EX_SHL:
        infix(pr, out, "<<", e);
        return;
    case OTC_EX_LSHR:
        infix(pr, out, ">>", e);
        return;
    case OTC_EX_INE:
        infix(pr, out, "!=", e);
        return;
    case OTC_EX_ARG:
        otc_text_puts(out,
                      leaf(pr, e->n >= 0 && e->n < pr->leaves->n_arg ? pr->leaves->arg[e->n] : NULL,
                           "an argument"));
        return;
    case OTC_EX_SQRT:
        call(pr, out, otc_cr_sqrt(c), e);
        return;
    case OTC_EX_COUNT:
        break;
    }
    c->st = otc_fail(OTC_ERR_UNSUPPORTED, "emit-c: expression op %d has no C spelling", (int)e->op);
}

void otc_cr_expr(otc_cr *c, otc_text *out, const otc_expr *e, const otc_cr_leaves *leaves) {
    printer pr = {.c = c, .leaves = leaves};
    put(&pr, out, e);
}

/* A local for each shared subtree within e, those it uses first (children before parents). */
static void bind(printer *pr, otc_text *out, const otc_expr *e, const char *indent) {
    if (!e || is_leaf(e)) return;
    for (int i = 0; i < pr->n_bound; i++)
        if (pr->bound[i] == e) return;
    bind(pr, out, e->a, indent);
    bind(pr, out, e->b, indent);
    bind(pr, out, e->c, indent);
    for (int i = 0; i < pr->n_shared; i++)
        if (pr->shared[i] == e) {
            static const char *const type[] = {"float", "unsigned int", "int"};
            otc_text_printf(out, "%sconst %s t%d = ", indent, type[otc_expr_type(e)], pr->n_bound);
            put(pr, out, e);
            otc_text_puts(out, ";\n");
            pr->bound[pr->n_bound++] = e;
            return;
        }
}

void otc_cr_expr_body(otc_cr *c, otc_text *out, const otc_expr *e, const otc_cr_leaves *leaves,
                      const char *indent) {
    printer pr = {.c = c, .leaves = leaves};
    const otc_expr *seen[4 * MAX_SHARED];
    int n_seen = 0;
    find_shared(&pr, e, seen, &n_seen);
    bind(&pr, out, e, indent);
    otc_text_printf(out, "%sreturn ", indent);
    put(&pr, out, e);
    otc_text_puts(out, ";\n");
}

void otc_cr_expr_lines(otc_cr *c, const otc_expr *const *trees, const char *const *prefix, int n,
                       const otc_cr_leaves *leaves) {
    printer pr = {.c = c, .leaves = leaves};
    const otc_expr *seen[4 * MAX_SHARED];
    int n_seen = 0;
    for (int i = 0; i < n; i++)
        if (trees[i]) find_shared(&pr, trees[i], seen, &n_seen);
    static const char *const type[] = {"float", "unsigned int", "int"};
    otc_text t;
    otc_text_init(&t);
    for (int i = 0; i < pr.n_shared; i++) {
        otc_text_printf(&t, "const %s t%d = ", type[otc_expr_type(pr.shared[i])], pr.n_bound);
        put(&pr, &t, pr.shared[i]);
        pr.bound[pr.n_bound++] = pr.shared[i];
        char *text = otc_text_take(&t);
        if (!text) {
            c->sb->failed = true;
            return;
        }
        otc_cr_line(c, "%s;", text);
        free(text);
        otc_text_init(&t);
    }
    for (int i = 0; i < n; i++) {
        if (!trees[i]) continue;
        otc_text_init(&t);
        put(&pr, &t, trees[i]);
        char *text = otc_text_take(&t);
        if (!text) {
            c->sb->failed = true;
            return;
        }
        otc_cr_line(c, "%s%s;", prefix[i], text);
        free(text);
    }
}
