/* The C renderer's small spelling helpers: literals, offsets, pointers, element indexing and
 * loops over the node-major layout. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_c_internal.h"

const char *otc_cr_comment(char *buf, size_t len, const char *text) {
    otc_text t;
    otc_text_init(&t);
    otc_text_c_comment(&t, text);
    snprintf(buf, len, "%s", t.failed || !t.text ? "?" : t.text);
    otc_text_free(&t);
    return buf;
}

void otc_cr_upper(char *dst, const char *src, size_t len) {
    size_t i = 0;
    for (; src[i] && i + 1 < len; i++)
        dst[i] = (char)(src[i] >= 'a' && src[i] <= 'z' ? src[i] - 'a' + 'A' : src[i]);
    dst[i] = '\0';
}

const char *otc_cr_label(const otc_graph *g, otc_id id, char *buf, size_t len) {
    const otc_node *nd = otc_graph_node(g, id);
    if (!nd || !nd->name) {
        snprintf(buf, len, "#%d", (int)id);
        return buf;
    }
    char safe[OTC_CR_LABEL_LEN];
    snprintf(buf, len, "'%s'", otc_cr_comment(safe, sizeof safe, nd->name));
    return buf;
}

void otc_cr_line(otc_cr *c, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (int i = 0; i < c->indent; i++) otc_text_puts(c->sb, "    ");
    if (n >= (int)sizeof buf) {
        /* Rare long lines (a neuron with many sources is written term by term instead). */
        char *big = malloc((size_t)n + 1);
        if (!big) {
            c->sb->failed = true;
            return;
        }
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        otc_text_puts(c->sb, big);
        free(big);
    } else {
        otc_text_puts(c->sb, buf);
    }
    otc_text_puts(c->sb, "\n");
}

const char *otc_cr_float_literal(char *buf, size_t len, float f) {
    /* Nine significant digits read back to the same float; a literal needs a '.' or an
     * exponent before the 'f' suffix to be a floating constant. */
    char tmp[24]; /* "%.9g" of a float is at most 15 characters */
    snprintf(tmp, sizeof tmp, "%.9g", (double)f);
    bool has_point = strpbrk(tmp, ".e") != NULL;
    snprintf(buf, len, "%s%sf", tmp, has_point ? "" : ".0");
    return buf;
}

const char *otc_cr_float(otc_cr *c, char *buf, float f) {
    if (!isfinite(f)) {
        if (!c->st)
            c->st = otc_fail(OTC_ERR_UNSUPPORTED,
                             "emit-c: a constant (weight, bias, scale or alpha) is %g; the "
                             "generated code needs finite values",
                             (double)f);
        f = 0.0f;
    }
    return otc_cr_float_literal(buf, 40, f);
}

const char *otc_cr_offset(char *buf, otc_extent e) {
    if (e.per_batch == 0)
        snprintf(buf, 64, "%" PRId64, e.base);
    else if (e.base == 0)
        snprintf(buf, 64, "%" PRId64 " * S", e.per_batch);
    else
        snprintf(buf, 64, "%" PRId64 " + %" PRId64 " * S", e.base, e.per_batch);
    return buf;
}

static bool first_use(otc_cr *c, otc_id id, int plane) {
    /* mark holds (generation * 4 + plane + 1): a pointer per kind per step. */
    int key = c->mark_gen * 4 + plane + 1;
    int *m = &c->mark[4 * id + plane];
    if (*m == key) return false;
    *m = key;
    return true;
}

void otc_cr_pointer(otc_cr *c, otc_id id, bool writable) {
    const otc_plan *p = c->plan;
    otc_id o = otc_plan_owner(p, id);
    const otc_plan_value *v = &p->values[o];
    if (!first_use(c, o, 0)) return;
    char off[64];
    if (v->storage == OTC_STORE_PARAM)
        otc_cr_line(c, "const float *restrict v%d = w + %" PRId64 ";", (int)o, v->param_offset);
    else
        otc_cr_line(c, "%sfloat *restrict v%d = ws + %s;", writable ? "" : "const ", (int)o,
                    otc_cr_offset(off, v->offset));
}

void otc_cr_grad_pointer(otc_cr *c, otc_id id) {
    const otc_plan *p = c->plan;
    otc_id o = otc_plan_owner(p, id);
    if (!first_use(c, o, 1)) return;
    char off[64];
    otc_cr_line(c, "float *restrict g%d = g + %s;", (int)o, otc_cr_offset(off, p->values[o].grad));
}

static bool simple(const char *elem) {
    for (const char *s = elem; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
    return true;
}

static void at(otc_cr *c, char *buf, size_t len, otc_id id, const char *elem, char prefix) {
    const otc_plan *p = c->plan;
    otc_id o = otc_plan_owner(p, id);
    const otc_plan_value *v = &p->values[o];
    if (!v->batched || c->one_sample) /* one sample: S = 1, b = 0 */
        snprintf(buf, len, "%c%d[%s]", prefix, (int)o, elem);
    else if (!strcmp(elem, "0"))
        snprintf(buf, len, "%c%d[b]", prefix, (int)o);
    else if (simple(elem))
        snprintf(buf, len, "%c%d[%s * S + b]", prefix, (int)o, elem);
    else
        snprintf(buf, len, "%c%d[(%s) * S + b]", prefix, (int)o, elem);
}

void otc_cr_at(otc_cr *c, char *buf, size_t len, otc_id id, const char *elem) {
    at(c, buf, len, id, elem, 'v');
}

void otc_cr_grad_at(otc_cr *c, char *buf, size_t len, otc_id id, const char *elem) {
    at(c, buf, len, id, elem, 'g');
}

int otc_cr_loops(otc_cr *c, int64_t n, bool batched, bool sample_outer) {
    int opened = 0;
    for (int pass = 0; pass < 2; pass++) {
        bool samples = (pass == 0) == sample_outer;
        if (samples && batched) {
            otc_cr_line(c, "for (size_t b = 0; b < B; b++) {");
            c->indent++;
            opened++;
        } else if (!samples && n > 1) {
            otc_cr_line(c, "for (size_t e = 0; e < %" PRId64 "; e++) {", n);
            c->indent++;
            opened++;
        }
    }
    return opened;
}

void otc_cr_assume_independent(otc_cr *c, bool clang) {
    if (clang) {
        otc_cr_line(c, "#if defined(__clang__)");
        otc_cr_line(c, "#pragma clang loop vectorize(assume_safety)");
        otc_cr_line(c, "#elif defined(__GNUC__)");
    } else {
        otc_cr_line(c, "#if defined(__GNUC__) && !defined(__clang__)");
    }
    otc_cr_line(c, "#pragma GCC ivdep");
    otc_cr_line(c, "#endif");
}

void otc_cr_close(otc_cr *c, int n) {
    for (int i = 0; i < n; i++) {
        c->indent--;
        otc_cr_line(c, "}");
    }
}

void otc_cr_split(const otc_node *nd, const otc_shape *s, int axis, int64_t *outer, int64_t *mid,
                  int64_t *inner) {
    (void)nd;
    if (axis < 0) axis += s->ndim;
    *outer = *mid = *inner = 1;
    for (int d = 0; d < s->ndim; d++) {
        if (s->dim[d] == OTC_BATCH) continue; /* only ever dim 0: per sample */
        if (d < axis)
            *outer *= s->dim[d];
        else if (d == axis)
            *mid = s->dim[d];
        else
            *inner *= s->dim[d];
    }
}

const otc_act_info *otc_cr_act(const otc_node *nd) {
    if (nd->op == OTC_OP_NEURON) return otc_act_get((otc_act)nd->act);
    const otc_op_info *info = otc_op_get(nd->op);
    return info && info->act >= 0 ? otc_act_get((otc_act)info->act) : NULL;
}

static int act_index(const otc_node *nd) {
    if (nd->op == OTC_OP_NEURON) return nd->act;
    return otc_op_get(nd->op)->act;
}

void otc_cr_act_call(otc_cr *c, char *buf, size_t len, const otc_node *nd, const char *x) {
    int a = act_index(nd);
    char lit[48];
    bool out = c->outline && otc_expr_calls_math(otc_act_get((otc_act)a)->f);
    if (out)
        c->fo_used[a] = true;
    else
        c->f_used[a] = true;
    snprintf(buf, len, "%s_f%s_%s(%s, %s)", c->name, out ? "o" : "", otc_act_get((otc_act)a)->name,
             x, otc_cr_float(c, lit, nd->alpha));
}

void otc_cr_dact_call(otc_cr *c, char *buf, size_t len, const otc_node *nd, const char *x,
                      const char *y) {
    int a = act_index(nd);
    char lit[48];
    c->df_used[a] = true;
    snprintf(buf, len, "%s_df_%s(%s, %s, %s)", c->name, otc_act_get((otc_act)a)->name, x, y,
             otc_cr_float(c, lit, nd->alpha));
}

/* The Neuron aggregations' helpers over t[0..n), n >= 1, with neat-python's semantics
 * (otc/ops.h otc_agg; the interpreter's are runtime/src/core/aggregations.c). Median sorts t in
 * place: its caller passes a fresh array. */
static const char *const agg_bodies[OTC_AGG_COUNT] = {
    [OTC_AGG_PRODUCT] = "    float p = 1.0f;\n    for (int i = 0; i < n; i++) p *= t[i];\n"
                        "    return p;\n",
    [OTC_AGG_MIN] = "    float m = t[0];\n    for (int i = 1; i < n; i++)\n"
                    "        if (t[i] < m) m = t[i];\n    return m;\n",
    [OTC_AGG_MAX] = "    float m = t[0];\n    for (int i = 1; i < n; i++)\n"
                    "        if (t[i] > m) m = t[i];\n    return m;\n",
    [OTC_AGG_MAXABS] = "    float m = t[0];\n    for (int i = 1; i < n; i++)\n"
                       "        if (fabsf(t[i]) > fabsf(m)) m = t[i];\n    return m;\n",
    [OTC_AGG_MEDIAN] = "    if (n <= 2) return n == 1 ? t[0] : (t[0] + t[1]) / 2.0f;\n"
                       "    for (int i = 1; i < n; i++) {\n"
                       "        float v = t[i];\n        int j = i;\n"
                       "        for (; j > 0 && t[j - 1] > v; j--) t[j] = t[j - 1];\n"
                       "        t[j] = v;\n    }\n"
                       "    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2.0f;\n",
    [OTC_AGG_MEAN] = "    float s = 0.0f;\n    for (int i = 0; i < n; i++) s += t[i];\n"
                     "    return s / (float)n;\n",
};

/* Their gradients g[i] = d agg / d t[i] over t[0..n), n >= 1, as the interpreter's
 * otc_agg_grad: at a tie of min, max or maxabs the first picked input takes it all; the
 * median's middle inputs of the sort, equal values ordered by position (n at most
 * OTC_PLAN_MEDIAN_MAX: its index array, ix, is declared before the body). */
static const char *const agg_grad_bodies[OTC_AGG_COUNT] = {
    [OTC_AGG_PRODUCT] = "    float s = 1.0f, p = 1.0f;\n"
                        "    for (int i = n - 1; i >= 0; i--) { g[i] = s; s *= t[i]; }\n"
                        "    for (int i = 0; i < n; i++) { g[i] *= p; p *= t[i]; }\n",
    [OTC_AGG_MIN] = "    int m = 0;\n    for (int i = 0; i < n; i++) g[i] = 0.0f;\n"
                    "    for (int i = 1; i < n; i++)\n        if (t[i] < t[m]) m = i;\n"
                    "    g[m] = 1.0f;\n",
    [OTC_AGG_MAX] = "    int m = 0;\n    for (int i = 0; i < n; i++) g[i] = 0.0f;\n"
                    "    for (int i = 1; i < n; i++)\n        if (t[i] > t[m]) m = i;\n"
                    "    g[m] = 1.0f;\n",
    [OTC_AGG_MAXABS] = "    int m = 0;\n    for (int i = 0; i < n; i++) g[i] = 0.0f;\n"
                       "    for (int i = 1; i < n; i++)\n"
                       "        if (fabsf(t[i]) > fabsf(t[m])) m = i;\n    g[m] = 1.0f;\n",
    [OTC_AGG_MEDIAN] = "    for (int i = 0; i < n; i++) { g[i] = 0.0f; ix[i] = i; }\n"
                       "    if (n <= 2) {\n"
                       "        for (int i = 0; i < n; i++) g[i] = 1.0f / (float)n;\n"
                       "        return;\n    }\n"
                       "    for (int i = 1; i < n; i++) {\n"
                       "        int v = ix[i], j = i;\n"
                       "        for (; j > 0 && t[ix[j - 1]] > t[v]; j--) ix[j] = ix[j - 1];\n"
                       "        ix[j] = v;\n    }\n"
                       "    if (n % 2) {\n        g[ix[n / 2]] = 1.0f;\n    } else {\n"
                       "        g[ix[n / 2 - 1]] = 0.5f;\n        g[ix[n / 2]] = 0.5f;\n    }\n",
    [OTC_AGG_MEAN] = "    (void)t;\n    for (int i = 0; i < n; i++) g[i] = 1.0f / (float)n;\n",
};

static void agg_helpers(otc_cr *c, otc_text *out) {
    for (int a = 0; a < OTC_AGG_COUNT; a++) {
        if (c->agg_used[a] && agg_bodies[a])
            otc_text_printf(out, "static float %s_agg_%s(float *t, int n) {\n%s}\n\n", c->name,
                            otc_agg_name(a), agg_bodies[a]);
        if (c->agg_grad_used[a] && agg_grad_bodies[a]) {
            otc_text_printf(out, "static void %s_agg_grad_%s(const float *t, int n, float *g) {\n",
                            c->name, otc_agg_name(a));
            if (a == OTC_AGG_MEDIAN) otc_text_printf(out, "    int ix[%d];\n", OTC_PLAN_MEDIAN_MAX);
            otc_text_printf(out, "%s}\n\n", agg_grad_bodies[a]);
        }
    }
}

void otc_cr_act_helpers(otc_cr *c, otc_text *out) {
    agg_helpers(c, out);
    /* NAME_INLINE: a helper left out of line keeps the batch loop calling it scalar. */
    const otc_cr_leaves f_leaves = {.x = "x", .a = "a"}, df_leaves = {.x = "x", .y = "y", .a = "a"};
    for (int a = 0; a < OTC_ACT_COUNT; a++) {
        const otc_act_info *info = otc_act_get((otc_act)a);
        if (c->f_used[a]) {
            otc_text_printf(out, "%s float %s_f_%s(float x, float a) {\n    (void)a;\n",
                            otc_cr_inline(c), c->name, info->name);
            otc_cr_expr_body(c, out, info->f, &f_leaves, "    ");
            otc_text_puts(out, "}\n\n");
        }
        if (c->fo_used[a]) {
            /* Out of line, with the scalar variant of the math. */
            otc_text_printf(out, "%s float %s_fo_%s(float x, float a) {\n    (void)a;\n",
                            otc_cr_outline(c), c->name, info->name);
            bool saved = c->outline;
            c->outline = true;
            otc_cr_expr_body(c, out, info->f, &f_leaves, "    ");
            c->outline = saved;
            otc_text_puts(out, "}\n\n");
        }
        if (c->df_used[a]) {
            otc_text_printf(out,
                            "%s float %s_df_%s(float x, float y, float a) {\n"
                            "    (void)x;\n    (void)y;\n    (void)a;\n",
                            otc_cr_inline(c), c->name, info->name);
            otc_cr_expr_body(c, out, info->df, &df_leaves, "    ");
            otc_text_puts(out, "}\n\n");
        }
    }
}
