/* otc's own ONNX exports read back: the nodes an activation's expression tree (otc/expr.h) or
 * a NEAT Neuron was written as (onnx_export_expr.c, onnx_export_neuron.c) are found before the
 * import and rebuilt as that one otc node. The trees are the op spec's own, so an activation
 * added to the table is recognised with no change here, whichever exporter wrote its nodes. */
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"
#include "otc/limits.h"

/* ONNX nodes one match may cover (a Neuron of many sources covers a Slice per source). */
enum { MAX_COVER = 1024 };

typedef struct {
    const ox_ctx *x;
    int xv; /* the value the tree's X stands for, or -1 */
    bool has_a;
    float a;
    int cover[MAX_COVER]; /* the nodes matched (indices into the graph's nodes) */
    int n;
} matcher;

static int in_val(const ox_ctx *x, const Onnx__NodeProto *nd, size_t i) {
    return i < nd->n_input && nd->input[i][0] ? ox_find_value(x, nd->input[i]) : -1;
}

/* The node that computes value v as its first output, when its op is op with n_in inputs. */
static const Onnx__NodeProto *producer(const ox_ctx *x, int v, const char *op, size_t n_in) {
    if (v < 0 || x->vals[v].producer < 0) return NULL;
    const Onnx__NodeProto *nd = x->gp->node[x->vals[v].producer];
    if (!nd->op_type || strcmp(nd->op_type, op) || nd->n_input != n_in || nd->n_output < 1 ||
        strcmp(nd->output[0], x->vals[v].name))
        return NULL;
    if (nd->domain && *nd->domain && strcmp(nd->domain, "ai.onnx")) return NULL;
    for (size_t k = 0; k < nd->n_attribute; k++)
        if (nd->attribute[k]->g || nd->attribute[k]->n_graphs) return NULL;
    return nd;
}

/* producer(), recording the node as covered. */
static bool node_of(matcher *m, int v, const char *op, size_t n_in, const Onnx__NodeProto **nd) {
    *nd = producer(m->x, v, op, n_in);
    if (!*nd) return false;
    int p = m->x->vals[v].producer;
    for (int i = 0; i < m->n; i++)
        if (m->cover[i] == p) return true;
    if (m->n == MAX_COVER) return false;
    m->cover[m->n++] = p;
    return true;
}

/* A one-element float constant. */
static bool scalar(const ox_ctx *x, int v, float *out) {
    const ox_const *c = v >= 0 ? x->vals[v].c : NULL;
    if (!c || c->n != 1 || !c->f || c->rank > 1) return false;
    *out = c->f[0];
    return true;
}

static bool is_const(const matcher *m, int v, double k) {
    float f;
    return scalar(m->x, v, &f) && f == (float)k;
}

/* A one-element int64 constant. */
static bool int_scalar(const ox_ctx *x, int v, int64_t *out) {
    const ox_const *c = v >= 0 ? x->vals[v].c : NULL;
    if (!c || c->n != 1 || !c->i || c->rank > 1) return false;
    *out = c->i[0];
    return true;
}

static const Onnx__AttributeProto *node_attr(const Onnx__NodeProto *nd, const char *name) {
    for (size_t k = 0; k < nd->n_attribute; k++)
        if (nd->attribute[k]->name && !strcmp(nd->attribute[k]->name, name))
            return nd->attribute[k];
    return NULL;
}

/* An INT attribute equal to want (def when absent). */
static bool attr_is(const Onnx__NodeProto *nd, const char *name, int64_t def, int64_t want) {
    const Onnx__AttributeProto *a = node_attr(nd, name);
    return (a ? (a->has_i ? a->i : want + 1) : def) == want;
}

static bool match(matcher *m, const otc_expr *e, int v);

static bool op1(matcher *m, const char *op, const otc_expr *e, int v) {
    const Onnx__NodeProto *nd;
    return node_of(m, v, op, 1, &nd) && match(m, e->a, in_val(m->x, nd, 0));
}

static bool op2(matcher *m, const char *op, const otc_expr *e, int v) {
    const Onnx__NodeProto *nd;
    return node_of(m, v, op, 2, &nd) && match(m, e->a, in_val(m->x, nd, 0)) &&
           match(m, e->b, in_val(m->x, nd, 1));
}

/* Does value v compute tree e, as onnx_export_expr.c spells each tree node? */
static bool match(matcher *m, const otc_expr *e, int v) {
    const ox_ctx *x = m->x;
    const Onnx__NodeProto *nd, *n2;
    float f;
    if (v < 0) return false;
    switch (e->op) {
    case OTC_EX_CONST:
        return is_const(m, v, e->k);
    case OTC_EX_A:
        if (!scalar(x, v, &f) || (m->has_a && f != m->a)) return false;
        m->has_a = true;
        m->a = f;
        return true;
    case OTC_EX_X:
        if (x->vals[v].c || (m->xv >= 0 && m->xv != v)) return false;
        m->xv = v;
        return true;
    case OTC_EX_NEG:
        return op1(m, "Neg", e, v);
    case OTC_EX_ABS:
        return op1(m, "Abs", e, v);
    case OTC_EX_EXP:
        return op1(m, "Exp", e, v);
    case OTC_EX_LOG:
        return op1(m, "Log", e, v);
    case OTC_EX_TANH:
        return op1(m, "Tanh", e, v);
    case OTC_EX_SIN:
        return op1(m, "Sin", e, v);
    case OTC_EX_COS:
        return op1(m, "Cos", e, v);
    case OTC_EX_SQRT:
        return op1(m, "Sqrt", e, v);
    case OTC_EX_EXPM1: /* Exp(a) - 1 */
        return node_of(m, v, "Sub", 2, &nd) && is_const(m, in_val(x, nd, 1), 1.0) &&
               op1(m, "Exp", e, in_val(x, nd, 0));
    case OTC_EX_LOG1P: /* Log(a + 1) */
        return node_of(m, v, "Log", 1, &nd) && node_of(m, in_val(x, nd, 0), "Add", 2, &n2) &&
               is_const(m, in_val(x, n2, 1), 1.0) && match(m, e->a, in_val(x, n2, 0));
    case OTC_EX_ADD:
        return op2(m, "Add", e, v);
    case OTC_EX_SUB:
        return op2(m, "Sub", e, v);
    case OTC_EX_MUL:
        return op2(m, "Mul", e, v);
    case OTC_EX_DIV:
        return op2(m, "Div", e, v);
    case OTC_EX_MAX:
        return op2(m, "Max", e, v);
    case OTC_EX_LT:
        return op2(m, "Less", e, v);
    case OTC_EX_GT:
        return op2(m, "Greater", e, v);
    case OTC_EX_EQ:
        return op2(m, "Equal", e, v);
    case OTC_EX_COPYSIGN: { /* Where(Less(b, 0), Neg(Abs(a)), Abs(a)) */
        if (!node_of(m, v, "Where", 3, &nd) || !node_of(m, in_val(x, nd, 0), "Less", 2, &n2) ||
            !is_const(m, in_val(x, n2, 1), 0.0) || !match(m, e->b, in_val(x, n2, 0)) ||
            !node_of(m, in_val(x, nd, 1), "Neg", 1, &n2))
            return false;
        int mag = in_val(x, nd, 2);
        return in_val(x, n2, 0) == mag && op1(m, "Abs", e, mag);
    }
    case OTC_EX_FMA: /* Add(Mul(a, b), c) */
        return node_of(m, v, "Add", 2, &nd) && match(m, e->c, in_val(x, nd, 1)) &&
               op2(m, "Mul", e, in_val(x, nd, 0));
    case OTC_EX_POLY: /* Horner's rule from the outside in: Add(Mul(acc, a), coef[i]) */
        for (int i = e->n - 1; i >= 1; i--) {
            if (!node_of(m, v, "Add", 2, &nd) || !is_const(m, in_val(x, nd, 1), e->coef[i]) ||
                !node_of(m, in_val(x, nd, 0), "Mul", 2, &n2) || !match(m, e->a, in_val(x, n2, 1)))
                return false;
            v = in_val(x, n2, 0);
        }
        return e->n >= 1 && is_const(m, v, e->coef[0]);
    case OTC_EX_SELECT:
        return node_of(m, v, "Where", 3, &nd) && match(m, e->a, in_val(x, nd, 0)) &&
               match(m, e->b, in_val(x, nd, 1)) && match(m, e->c, in_val(x, nd, 2));
    default:
        return false;
    }
}

/* ---- a Neuron's body: bias + scale * agg(W * columns) ---- */

/* Column i of the sources: Slice(src, [c], [c + 1], [1]), or a [B,1] source itself. */
static bool column(matcher *m, int v, ox_match *out, int i) {
    if (v < 0) return false; /* an absent input (an empty name, or one no node defines) */
    const Onnx__NodeProto *nd = producer(m->x, v, "Slice", 4);
    int64_t s, e, a;
    if (nd && in_val(m->x, nd, 0) >= 0 && int_scalar(m->x, in_val(m->x, nd, 1), &s) &&
        int_scalar(m->x, in_val(m->x, nd, 2), &e) && int_scalar(m->x, in_val(m->x, nd, 3), &a) &&
        a == 1 && e == s + 1 && s >= 0 && s < (1 << 24) && !m->x->vals[in_val(m->x, nd, 0)].c) {
        node_of(m, v, "Slice", 4, &nd);
        out->src[i] = in_val(m->x, nd, 0);
        out->col[i] = (int)s;
        return true;
    }
    if (m->x->vals[v].c) return false;
    out->src[i] = v;
    out->col[i] = -1; /* the whole (one-column) value */
    return true;
}

/* ReduceX(t) along axis 1, keeping it: ReduceSum takes the axes as an input from opset 13. */
static int reduced(matcher *m, int v, const char *op) {
    const Onnx__NodeProto *nd;
    int64_t axis;
    bool sum = !strcmp(op, "ReduceSum");
    if (sum && producer(m->x, v, op, 2)) {
        node_of(m, v, op, 2, &nd);
        if (!int_scalar(m->x, in_val(m->x, nd, 1), &axis) || axis != 1) return -1;
    } else if (producer(m->x, v, op, 1)) {
        node_of(m, v, op, 1, &nd);
        const Onnx__AttributeProto *a = node_attr(nd, "axes");
        if (!a || a->n_ints != 1 || a->ints[0] != 1) return -1;
    } else {
        return -1;
    }
    return attr_is(nd, "keepdims", 1, 1) ? in_val(m->x, nd, 0) : -1;
}

/* The sorted terms' Slice [start, start + len) of TopK(t, k, axis 1, smallest first): t. */
static int sorted_slice(matcher *m, int v, int64_t start, int64_t len, int64_t *k) {
    const Onnx__NodeProto *nd, *top;
    int64_t s, e, a;
    if (!node_of(m, v, "Slice", 4, &nd) || !int_scalar(m->x, in_val(m->x, nd, 1), &s) ||
        !int_scalar(m->x, in_val(m->x, nd, 2), &e) || !int_scalar(m->x, in_val(m->x, nd, 3), &a) ||
        a != 1 || s != start || e != start + len)
        return -1;
    int tv = in_val(m->x, nd, 0);
    if (tv < 0 || m->x->vals[tv].producer < 0) return -1;
    top = m->x->gp->node[m->x->vals[tv].producer];
    if (!top->op_type || strcmp(top->op_type, "TopK") || top->n_input != 2 ||
        strcmp(top->output[0], m->x->vals[tv].name) || !attr_is(top, "axis", -1, 1) ||
        !attr_is(top, "largest", 1, 0) || !attr_is(top, "sorted", 1, 1) ||
        !int_scalar(m->x, in_val(m->x, top, 1), k))
        return -1;
    node_of(m, tv, "TopK", 2, &top);
    return in_val(m->x, top, 0);
}

/* The aggregation of the weighted terms t: sets out->agg and returns t, or -1. */
static int aggregation(matcher *m, int v, ox_match *out) {
    static const struct {
        const char *op;
        int agg;
    } reduce[] = {{"ReduceSum", OTC_AGG_SUM},
                  {"ReduceProd", OTC_AGG_PRODUCT},
                  {"ReduceMin", OTC_AGG_MIN},
                  {"ReduceMax", OTC_AGG_MAX}};
    const Onnx__NodeProto *nd, *arg, *abs;
    int t;
    int64_t k;
    for (size_t i = 0; i < sizeof reduce / sizeof reduce[0]; i++)
        if ((t = reduced(m, v, reduce[i].op)) >= 0) {
            out->agg = reduce[i].agg;
            return t;
        }
    if ((t = reduced(m, v, "ReduceMean")) >= 0) {
        /* the mean of the two middle terms (an even count's median), or the mean */
        const Onnx__NodeProto *sl = producer(m->x, t, "Slice", 4);
        int64_t mid = -1;
        if (!sl || !int_scalar(m->x, in_val(m->x, sl, 1), &mid)) {
            out->agg = OTC_AGG_MEAN;
            return t;
        }
        int u = sorted_slice(m, t, mid, 2, &k);
        if (u < 0 || k % 2 || mid != k / 2 - 1) return -1;
        out->agg = OTC_AGG_MEDIAN;
        out->k = (int)k;
        return u;
    }
    if (node_of(m, v, "GatherElements", 2, &nd) && attr_is(nd, "axis", 0, 1) &&
        node_of(m, in_val(m->x, nd, 1), "ArgMax", 1, &arg) && attr_is(arg, "axis", 0, 1) &&
        attr_is(arg, "keepdims", 1, 1) && attr_is(arg, "select_last_index", 0, 0) &&
        node_of(m, in_val(m->x, arg, 0), "Abs", 1, &abs) &&
        in_val(m->x, abs, 0) == in_val(m->x, nd, 0)) {
        out->agg = OTC_AGG_MAXABS;
        return in_val(m->x, nd, 0);
    }
    if (producer(m->x, v, "Slice", 4)) { /* an odd count's median: the middle term */
        int64_t mid = -1;
        int_scalar(m->x, in_val(m->x, producer(m->x, v, "Slice", 4), 1), &mid);
        int u = sorted_slice(m, v, mid, 1, &k);
        if (u < 0 || k % 2 == 0 || mid != k / 2) return -1;
        out->agg = OTC_AGG_MEDIAN;
        out->k = (int)k;
        return u;
    }
    out->agg = OTC_AGG_SUM; /* one term: every aggregation of it is the term */
    out->k = 1;
    return v;
}

/* pre = Add(b, Mul(agg, scale)), agg of Mul(columns, W) or, with no sources, an Expand of 0
 * (or product's 1) over the batch. */
static bool neuron_body(matcher *m, int pre, ox_match *out) {
    const ox_ctx *x = m->x;
    const Onnx__NodeProto *add, *mul, *nd;
    if (!node_of(m, pre, "Add", 2, &add) || !scalar(x, in_val(x, add, 0), &out->bias) ||
        !node_of(m, in_val(x, add, 1), "Mul", 2, &mul) ||
        !scalar(x, in_val(x, mul, 1), &out->scale))
        return false;
    int v = in_val(x, mul, 0);
    float c;
    if (producer(x, v, "Expand", 2)) {
        node_of(m, v, "Expand", 2, &nd);
        if (!scalar(x, in_val(x, nd, 0), &c) || (c != 0 && c != 1)) return false;
        out->k = 0;
        out->agg = c == 1 ? OTC_AGG_PRODUCT : OTC_AGG_SUM;
        return true;
    }
    out->k = -1;
    int t = aggregation(m, v, out);
    if (t < 0 || !node_of(m, t, "Mul", 2, &mul)) return false;
    int w = in_val(x, mul, 1);
    const ox_const *wc = w >= 0 ? x->vals[w].c : NULL;
    if (!wc || !wc->f || wc->rank != 1 || wc->n < 1 || wc->n > OTC_MAX_NODES ||
        (out->k >= 0 && (size_t)out->k != wc->n) || (out->k == 1) != (wc->n == 1))
        return false;
    out->k = (int)wc->n;
    out->w = w;
    if (!(out->src = malloc(wc->n * sizeof *out->src)) ||
        !(out->col = malloc(wc->n * sizeof *out->col)))
        return false;
    int cat = in_val(x, mul, 0);
    if (out->k == 1) return column(m, cat, out, 0);
    if (!node_of(m, cat, "Concat", wc->n, &nd) || !attr_is(nd, "axis", -1, 1)) return false;
    for (int i = 0; i < out->k; i++)
        if (!column(m, in_val(x, nd, (size_t)i), out, i)) return false;
    return true;
}

bool ox_match_only(const char *op_type) {
    static const char *const only[] = {
        "Max",        "Less",      "Greater", "Equal",          "Where",
        "ReduceProd", "ReduceMin", "ArgMax",  "GatherElements", "TopK"};
    for (size_t i = 0; op_type && i < sizeof only / sizeof only[0]; i++)
        if (!strcmp(op_type, only[i])) return true;
    return false;
}

/* ---- the whole graph ---- */

/* Every value the covered nodes other than root compute is read only by covered nodes (its
 * reads counted in x->count, indexed by value, left zeroed). */
static bool self_contained(const matcher *m, int root) {
    const Onnx__GraphProto *gp = m->x->gp;
    int *count = m->x->count;
    for (int j = 0; j < m->n; j++) {
        const Onnx__NodeProto *user = gp->node[m->cover[j]];
        for (size_t k = 0; k < user->n_input; k++) {
            int v = in_val(m->x, user, k);
            if (v >= 0) count[v]++;
        }
    }
    bool ok = true;
    for (int i = 0; ok && i < m->n; i++) {
        const Onnx__NodeProto *nd = gp->node[m->cover[i]];
        for (size_t o = 0; ok && m->cover[i] != root && o < nd->n_output; o++) {
            if (!nd->output[o][0]) continue;
            int v = ox_find_value(m->x, nd->output[o]);
            ok = v >= 0 && !m->x->vals[v].graph_output && count[v] == m->x->vals[v].uses;
        }
    }
    for (int j = 0; j < m->n; j++) {
        const Onnx__NodeProto *user = gp->node[m->cover[j]];
        for (size_t k = 0; k < user->n_input; k++) {
            int v = in_val(m->x, user, k);
            if (v >= 0) count[v] = 0;
        }
    }
    return ok;
}

static void match_free(ox_match *m) {
    free(m->src);
    free(m->col);
    memset(m, 0, sizeof *m);
}

/* The largest match rooted at node r: an activation alone, or a Neuron with its activation. */
static otc_status best_at(ox_ctx *x, int r, matcher *m, ox_match *best, int *best_n) {
    const Onnx__NodeProto *root = x->gp->node[r];
    if (root->n_output < 1 || !root->output[0][0]) return OTC_OK;
    int out = ox_find_value(x, root->output[0]);
    for (int neuron = 0; neuron < 2; neuron++)
        for (int a = 0; a < OTC_ACT_COUNT; a++) {
            const otc_expr *f = otc_act_get((otc_act)a)->f;
            ox_match cand = {.kind = neuron ? OX_MATCH_NEURON : OX_MATCH_ACT, .act = a};
            *m = (matcher){.x = x, .xv = -1};
            bool ok;
            if (f->op == OTC_EX_X) { /* the identity: a Neuron's Identity(pre) */
                const Onnx__NodeProto *id;
                ok = neuron && node_of(m, out, "Identity", 1, &id);
                m->xv = ok ? in_val(x, id, 0) : -1;
            } else {
                ok = match(m, f, out) && m->xv >= 0;
            }
            if (!ok) continue;
            cand.xv = m->xv;
            cand.alpha = m->has_a ? m->a : otc_act_get((otc_act)a)->default_a;
            if (neuron && !neuron_body(m, m->xv, &cand)) {
                match_free(&cand);
                continue;
            }
            /* A plain activation of one node the importer reads anyway stays that node. */
            bool worth = neuron || m->n >= 2 || !ox_find_op(root->op_type);
            if (!worth || m->n <= *best_n || !self_contained(m, r)) {
                match_free(&cand);
                continue;
            }
            match_free(best);
            *best = cand;
            *best_n = m->n;
            memcpy(x->scratch, m->cover, (size_t)m->n * sizeof *m->cover);
        }
    return OTC_OK;
}

otc_status ox_match_graph(ox_ctx *x, const int *order) {
    int n = (int)x->gp->n_node;
    matcher *m = malloc(sizeof *m);
    x->match = calloc((size_t)n + 1, sizeof *x->match);
    x->scratch = malloc(MAX_COVER * sizeof *x->scratch);
    x->count = calloc((size_t)x->n_vals + 1, sizeof *x->count);
    if (!m || !x->match || !x->scratch || !x->count) {
        free(m);
        return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    }
    for (size_t k = 0; k < x->gp->n_output; k++) {
        int v = x->gp->output[k]->name ? ox_find_value(x, x->gp->output[k]->name) : -1;
        if (v >= 0) x->vals[v].graph_output = true;
    }
    /* from the outputs back, so the largest pattern takes its nodes first */
    for (int i = n - 1; i >= 0; i--) {
        int r = order[i];
        if (x->match[r].kind != OX_MATCH_NONE) continue;
        ox_match best = {.kind = OX_MATCH_NONE};
        int best_n = 0;
        best_at(x, r, m, &best, &best_n);
        if (best.kind == OX_MATCH_NONE) continue;
        for (int k = 0; k < best_n; k++)
            if (x->scratch[k] != r) x->match[x->scratch[k]].kind = OX_MATCH_INNER;
        x->match[r] = best;
    }
    free(m);
    return OTC_OK;
}

void ox_match_free(ox_ctx *x) {
    if (x->match)
        for (size_t i = 0; i < x->gp->n_node; i++) match_free(&x->match[i]);
    free(x->match);
    free(x->scratch);
    free(x->count);
    x->match = NULL;
    x->scratch = NULL;
    x->count = NULL;
}

/* A graph value the rebuilt node reads (a source, the activation's argument). */
static otc_status source(ox_ctx *x, int v, otc_id *id) {
    if (v < 0 || !x->vals[v].defined || x->vals[v].c || x->vals[v].id < 0 || x->vals[v].time >= 0 ||
        x->vals[v].dir >= 0)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "the activation or neuron it computes reads '%.80s', which is not a "
                       "computed per-step value",
                       v >= 0 ? x->vals[v].name : "?");
    *id = x->vals[v].id;
    return OTC_OK;
}

otc_status ox_match_build(ox_ctx *x, const ox_match *m) {
    otc_graph *g = x->g;
    otc_id id, in = -1;
    otc_status st;
    const otc_act_info *ai = otc_act_get((otc_act)m->act);
    if (m->kind == OX_MATCH_ACT) {
        if ((st = source(x, m->xv, &in))) return st;
        for (int op = 0; op < OTC_OP_COUNT; op++)
            if (otc_op_get((otc_op)op)->act == m->act)
                return ox_set_node(x, 0, otc_activation(g, (otc_op)op, in, m->alpha));
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "activation '%s' has no op", ai->name);
    }
    otc_id *srcs = calloc((size_t)m->k + 1, sizeof *srcs);
    int *cols = calloc((size_t)m->k + 1, sizeof *cols);
    if (!srcs || !cols) {
        free(srcs);
        free(cols);
        return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    }
    st = OTC_OK;
    for (int i = 0; i < m->k && !st; i++) {
        st = source(x, m->src[i], &srcs[i]);
        if (st) break;
        otc_shape s = otc_graph_node(g, srcs[i])->shape;
        cols[i] = m->col[i] < 0 ? 0 : m->col[i];
        if (s.ndim != 2 || s.dim[0] != OTC_BATCH || cols[i] >= s.dim[1] ||
            (m->col[i] < 0 && s.dim[1] != 1))
            st = ox_fail(x, OTC_ERR_UNSUPPORTED,
                         "a neuron's source '%.80s' is not a [batch, n] value with column %d",
                         x->vals[m->src[i]].name, cols[i]);
    }
    if (st) {
        free(srcs);
        free(cols);
        return st;
    }
    const ox_value *out = ox_out(x, 0);
    const char *name = out && otc_graph_find(g, out->name) < 0 ? out->name : NULL;
    id = otc_neuron(g, name, (otc_act)m->act, m->bias, m->scale, m->k, srcs, cols,
                    m->k ? x->vals[m->w].c->f : NULL);
    free(srcs);
    free(cols);
    if (id >= 0 && otc_graph_set_agg(g, id, m->agg)) id = -1;
    if (id >= 0 && otc_expr_reads(ai->f, OTC_EX_A) && otc_graph_set_alpha(g, id, m->alpha)) id = -1;
    return ox_set_node(x, 0, id);
}
