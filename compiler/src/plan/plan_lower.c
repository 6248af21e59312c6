/* How each op with a loop structure of its own lowers to a loop program (otc/loops.h),
 * forward and backward: the one description the C and LLVM renderers both spell. */
#include <float.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/expr_spell.h"
#include "otc/loops.h"
#include "otc/ops.h"
#include "otc/text.h"

/* ---- the trees: arguments are the statement's operands, in order ---- */

#define A0 EX_ARG(0)
#define A1 EX_ARG(1)
#define A2 EX_ARG(2)
#define A3 EX_ARG(3)
#define A4 EX_ARG(4)
#define A5 EX_ARG(5)

static const otc_expr *const COPY = A0; /* file scope: programs keep pointers to trees */
static const otc_expr *const ZERO = EX_K(0);
static const otc_expr *const SUM2 = EX_ADD(A0, A1);
static const otc_expr *const MUL_ADD = EX_ADD(A0, EX_MUL(A1, A2)); /* acc + a * b */
static const otc_expr *const PRODUCT = EX_MUL(A0, A1);
static const otc_expr *const OVER_COUNT = EX_DIV(A0, EX_MUL(A1, A2)); /* sum / (n * samples) */
static const otc_expr *const RUNNING_MAX = EX_MAX(A1, A0);            /* x > m ? x : m */
static const otc_expr *const SHIFTED_EXP = EX_EXP(EX_SUB(A0, A1));    /* exp(x - m) */
static const otc_expr *const ADD_SHIFTED_EXP = EX_ADD(A0, EX_EXP(EX_SUB(A1, A2)));
static const otc_expr *const RECIPROCAL = EX_DIV(EX_K(1), A0);
/* (x - m) - log(s): the shifted value is exact, so large logits keep their precision. */
static const otc_expr *const LOG_SOFTMAX = EX_SUB(EX_SUB(A0, A1), EX_LOG(A2));
static const otc_expr *const SOFTMAX_BACK = EX_MUL(A0, EX_SUB(A1, A2)); /* y (g - sum g y) */
static const otc_expr *const LOG_SOFTMAX_BACK = EX_SUB(A0, EX_MUL(EX_EXP(A1), A2)); /* g - e^y s */
/* The class index l (A0) is valid when clamping it to [0, C-1] (A1 = -(C-1)) and dropping
 * its fraction gives it back: false for NaN, negatives, fractions and l >= C alike, and the
 * float -> integer conversion only ever sees a value in range. */
static const otc_expr *const LABEL_OK =
    EX_2(OTC_EX_EQ, A0,
         EX_1(OTC_EX_I2F, EX_1(OTC_EX_F2I, EX_NEG(EX_MAX(EX_NEG(EX_MAX(A0, EX_K(0))), A1)))));
/* x[l] of a row without a gather: keep x where the class index (A0) is the label (A1). */
static const otc_expr *const PICK = EX_3(OTC_EX_SELECT, EX_2(OTC_EX_EQ, A0, A1), A2, A3);
static const otc_expr *const CE_TERM = EX_ADD(EX_SUB(A0, A2), EX_LOG(A1)); /* (m - x_l) + log s */
/* u (softmax_c - [c == l]) with softmax_c = exp(x - m) / s: A0 u, A1 x, A2 m, A3 1/s,
 * A4 c, A5 l. */
static const otc_expr *const CE_BACK =
    EX_SUB(EX_MUL(EX_MUL(A0, EX_EXP(EX_SUB(A1, A2))), A3),
           EX_3(OTC_EX_SELECT, EX_2(OTC_EX_EQ, A4, A5), A0, EX_K(0)));

/* ---- the builder ---- */

typedef struct {
    otc_loop_program *p;
    const otc_graph *g;
    otc_loop_section section;
    int depth;
    int cap;
    int64_t count[OTC_LOOP_MAX_DEPTH];      /* the open loops' iterations */
    int n_open;                             /* open loops and WHEN blocks */
    bool open_when[2 * OTC_LOOP_MAX_DEPTH]; /* which of them are WHEN blocks */
    otc_status st;
} builder;

static otc_status fail(builder *b, const char *what) {
    if (!b->st) {
        char lab[64];
        b->st = otc_fail(OTC_ERR_UNSUPPORTED, "plan: op '%s' (node %s): %s",
                         otc_op_get(otc_graph_node(b->g, b->p->node)->op)->name,
                         otc_graph_node_label(b->g, b->p->node, lab, sizeof lab), what);
    }
    return b->st;
}

static otc_loop_stmt *emit(builder *b, otc_loop_stmt_kind kind) {
    if (b->st) return NULL;
    otc_loop_program *p = b->p;
    if (p->n_stmts == b->cap) {
        int cap = b->cap ? 2 * b->cap : 32;
        otc_loop_stmt *s = realloc(p->stmt, (size_t)cap * sizeof *s);
        if (!s) {
            b->st = otc_fail(OTC_ERR_NOMEM, "plan: out of memory lowering a node");
            return NULL;
        }
        p->stmt = s;
        b->cap = cap;
    }
    otc_loop_stmt *s = &p->stmt[p->n_stmts++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->section = b->section;
    return s;
}

/* The buffer index of a node's value or gradient (each listed once). */
static int buf(builder *b, otc_id node, bool grad) {
    otc_loop_program *p = b->p;
    for (int i = 0; i < p->n_bufs; i++)
        if (p->buf[i].node == node && p->buf[i].grad == grad) return i;
    if (p->n_bufs == OTC_LOOP_MAX_BUFS) {
        fail(b, "too many inputs for one loop program");
        return 0;
    }
    p->buf[p->n_bufs] = (otc_loop_buf){node, grad};
    return p->n_bufs++;
}

static int local(builder *b) {
    if (b->p->n_locals == OTC_LOOP_MAX_LOCALS) {
        fail(b, "too many locals");
        return 0;
    }
    b->p->local_uniform[b->p->n_locals] = b->section == OTC_LOOP_BEFORE;
    return b->p->n_locals++;
}

static int sum(builder *b) {
    if (b->p->n_sums == OTC_LOOP_MAX_SUMS) {
        fail(b, "too many batch sums");
        return 0;
    }
    return b->p->n_sums++;
}

/* Opens a loop of n iterations and returns its depth (the index of its variable). */
static int loop(builder *b, int64_t n) {
    if (b->depth == OTC_LOOP_MAX_DEPTH) {
        fail(b, "loops nested too deep");
        return 0;
    }
    if (b->n_open == 2 * OTC_LOOP_MAX_DEPTH) {
        fail(b, "loops and conditions nested too deep");
        return 0;
    }
    otc_loop_stmt *s = emit(b, OTC_LOOP_FOR);
    if (s) s->count = n;
    b->open_when[b->n_open++] = false;
    b->count[b->depth] = n;
    return b->depth++;
}

/* Opens a block that runs only when 0 <= ix < bound, unless the open loops keep ix in range
 * anyway (then no block: the caller closes one only when this returns true). */
static bool when(builder *b, otc_loop_index ix, int64_t bound) {
    int64_t lo = ix.base, hi = ix.base;
    for (int d = 0; d < b->depth; d++) {
        int64_t span = ix.stride[d] * (b->count[d] - 1);
        if (span < 0)
            lo += span;
        else
            hi += span;
    }
    if (lo >= 0 && hi < bound) return false;
    if (b->n_open == 2 * OTC_LOOP_MAX_DEPTH) {
        fail(b, "loops and conditions nested too deep");
        return false;
    }
    otc_loop_stmt *s = emit(b, OTC_LOOP_WHEN);
    if (!s) return false;
    s->at = ix;
    s->count = bound;
    b->open_when[b->n_open++] = true;
    return true;
}

/* Closes the innermost loop or WHEN block. */
static void end(builder *b) {
    emit(b, OTC_LOOP_END);
    if (b->n_open > 0 && !b->open_when[--b->n_open]) b->depth--;
}

/* Element base + s1 * i_d1 + s2 * i_d2 (a depth of -1: no term). */
static otc_loop_index at(int64_t base, int d1, int64_t s1, int d2, int64_t s2) {
    otc_loop_index ix = {.base = base};
    if (d1 >= 0) ix.stride[d1] += s1;
    if (d2 >= 0) ix.stride[d2] += s2;
    return ix;
}

#define AT0(base) at((base), -1, 0, -1, 0)

static otc_loop_operand LD(int bf, otc_loop_index ix) {
    return (otc_loop_operand){.kind = OTC_LOOP_LOAD, .n = bf, .at = ix};
}
static otc_loop_operand LOC(int n) {
    return (otc_loop_operand){.kind = OTC_LOOP_LOCAL, .n = n};
}
static otc_loop_operand VAR(int d) {
    return (otc_loop_operand){.kind = OTC_LOOP_VAR, .n = d};
}
static otc_loop_operand K(double k) {
    return (otc_loop_operand){.kind = OTC_LOOP_CONST, .k = (float)k};
}
static otc_loop_operand SAMPLES(void) {
    return (otc_loop_operand){.kind = OTC_LOOP_SAMPLES};
}
static otc_loop_operand SUM(int n) {
    return (otc_loop_operand){.kind = OTC_LOOP_SUM, .n = n};
}

#define OPS(...)                                                                                   \
    (const otc_loop_operand[]){__VA_ARGS__},                                                       \
        (int)(sizeof((const otc_loop_operand[]){__VA_ARGS__}) / sizeof(otc_loop_operand))

static otc_loop_stmt *statement(builder *b, otc_loop_stmt_kind kind, int n, otc_loop_index ix,
                                const otc_expr *tree, const otc_loop_operand *ops, int n_ops) {
    otc_loop_stmt *s = emit(b, kind);
    if (!s) return NULL;
    s->n = n;
    s->at = ix;
    s->tree = tree;
    s->n_operands = n_ops;
    for (int i = 0; i < n_ops; i++) s->operand[i] = ops[i];
    return s;
}

static void let(builder *b, int loc, const otc_expr *tree, const otc_loop_operand *ops, int n) {
    statement(b, OTC_LOOP_LET, loc, AT0(0), tree, ops, n);
}
static void store(builder *b, int bf, otc_loop_index ix, const otc_expr *tree,
                  const otc_loop_operand *ops, int n) {
    statement(b, OTC_LOOP_STORE, bf, ix, tree, ops, n);
}
static void add(builder *b, int bf, otc_loop_index ix, const otc_expr *tree,
                const otc_loop_operand *ops, int n) {
    statement(b, OTC_LOOP_ADD, bf, ix, tree, ops, n);
}
static void sumup(builder *b, int sm, const otc_expr *tree, const otc_loop_operand *ops, int n) {
    statement(b, OTC_LOOP_SUMUP, sm, AT0(0), tree, ops, n);
}

/* A tree the program owns: a * b, where b is the op spec's tree (with its leaves x, x1). */
static const otc_expr *times(builder *b, const otc_expr *a, const otc_expr *rhs) {
    otc_loop_program *p = b->p;
    if (p->n_trees == OTC_LOOP_MAX_TREES) {
        fail(b, "too many composed trees");
        return a;
    }
    otc_expr *t = &p->tree[p->n_trees++];
    *t = (otc_expr){.op = OTC_EX_MUL, .a = a, .b = rhs};
    return t;
}

/* ---- shapes ---- */

static const otc_node *node(const builder *b, otc_id id) {
    return otc_graph_node(b->g, id);
}

static bool batched(const builder *b, otc_id id) {
    return otc_shape_is_batched(node(b, id)->shape);
}

/* Elements per sample (batched) or in all (unbatched). */
static int64_t size_of(const builder *b, otc_id id) {
    otc_shape s = node(b, id)->shape;
    int64_t n = 1;
    for (int d = 0; d < s.ndim; d++)
        if (s.dim[d] != OTC_BATCH) n *= s.dim[d];
    return n;
}

/* Per-sample dims around axis: outer blocks, the axis, inner elements. */
static void split(otc_shape s, int axis, int64_t *outer, int64_t *mid, int64_t *inner) {
    if (axis < 0) axis += s.ndim;
    *outer = *mid = *inner = 1;
    for (int d = 0; d < s.ndim; d++) {
        if (s.dim[d] == OTC_BATCH) continue; /* only ever dim 0 */
        if (d < axis)
            *outer *= s.dim[d];
        else if (d == axis)
            *mid = s.dim[d];
        else
            *inner *= s.dim[d];
    }
}

static int64_t last_dim(const builder *b, otc_id id) {
    otc_shape s = node(b, id)->shape;
    return s.ndim > 0 ? s.dim[s.ndim - 1] : 1;
}

/* ---- the lowerings ---- */

/* sum, mean: forward a batch sum of every element; backward each element += the incoming
 * gradient (over the element count, for the mean). */
static void lower_reduce(builder *b, const otc_node *nd, bool backward, bool mean) {
    otc_id x = nd->inputs[0];
    int64_t n = size_of(b, x);
    if (!backward) {
        int s = sum(b);
        int e = loop(b, n);
        sumup(b, s, COPY, OPS(LD(buf(b, x, false), at(0, e, 1, -1, 0))));
        end(b);
        b->section = OTC_LOOP_AFTER;
        int y = buf(b, b->p->node, false);
        if (mean)
            store(b, y, AT0(0), OVER_COUNT, OPS(SUM(s), K((double)n), SAMPLES()));
        else
            store(b, y, AT0(0), COPY, OPS(SUM(s)));
        return;
    }
    b->section = OTC_LOOP_BEFORE;
    int u = local(b);
    int gy = buf(b, b->p->node, true);
    if (mean)
        let(b, u, OVER_COUNT, OPS(LD(gy, AT0(0)), K((double)n), SAMPLES()));
    else
        let(b, u, COPY, OPS(LD(gy, AT0(0))));
    b->section = OTC_LOOP_BODY;
    int e = loop(b, n);
    add(b, buf(b, x, true), at(0, e, 1, -1, 0), COPY, OPS(LOC(u)));
    end(b);
}

/* The loss tree's leaves x and x1: element e of the prediction and of the target, each bound
 * only when the tree reads it. */
static void bind_leaves(builder *b, otc_loop_stmt *st, otc_id x, otc_id t, int e) {
    if (!st) return;
    if (otc_expr_reads(st->tree, OTC_EX_X)) st->x = LD(buf(b, x, false), at(0, e, 1, -1, 0));
    if (otc_expr_reads(st->tree, OTC_EX_X1)) st->x1 = LD(buf(b, t, false), at(0, e, 1, -1, 0));
}

/* mse, bce: the mean over every element of the op spec's loss term of (x, t); backward each
 * input's gradient += (g / count) * the term's derivative by it. */
static void lower_mean_loss(builder *b, const otc_node *nd, bool backward, const bool *needs) {
    otc_id x = nd->inputs[0], t = nd->inputs[1];
    int64_t n = size_of(b, x);
    const otc_expr *term = otc_op_loss_expr(nd->op);
    if (!term) {
        fail(b, "no loss term in the op spec");
        return;
    }
    if (!backward) {
        int s = sum(b);
        int e = loop(b, n);
        otc_loop_stmt *st = statement(b, OTC_LOOP_SUMUP, s, AT0(0), term, NULL, 0);
        bind_leaves(b, st, x, t, e);
        end(b);
        b->section = OTC_LOOP_AFTER;
        store(b, buf(b, b->p->node, false), AT0(0), OVER_COUNT,
              OPS(SUM(s), K((double)n), SAMPLES()));
        return;
    }
    b->section = OTC_LOOP_BEFORE;
    int u = local(b);
    let(b, u, OVER_COUNT, OPS(LD(buf(b, b->p->node, true), AT0(0)), K((double)n), SAMPLES()));
    b->section = OTC_LOOP_BODY;
    int e = loop(b, n);
    for (int i = 0; i < 2; i++) {
        const otc_expr *d = otc_op_loss_grad_expr(nd->op, i);
        if (!needs[i] || !d) continue;
        otc_loop_stmt *st = statement(b, OTC_LOOP_ADD, buf(b, nd->inputs[i], true),
                                      at(0, e, 1, -1, 0), times(b, COPY, d), OPS(LOC(u)));
        bind_leaves(b, st, x, t, e);
    }
    end(b);
}

/* m = the maximum of row r (the loop at depth dr) of C values of x. */
static void row_max(builder *b, int xb, int dr, int64_t C, int m) {
    let(b, m, COPY, OPS(LD(xb, at(0, dr, C, -1, 0))));
    int c = loop(b, C - 1);
    let(b, m, RUNNING_MAX, OPS(LOC(m), LD(xb, at(1, dr, C, c, 1))));
    end(b);
}

/* m = the row's maximum, s = the sum of exp(x - m) over the row. */
static void row_max_sum(builder *b, int xb, int dr, int64_t C, int m, int s) {
    row_max(b, xb, dr, C, m);
    let(b, s, ZERO, NULL, 0);
    int c = loop(b, C);
    let(b, s, ADD_SHIFTED_EXP, OPS(LOC(s), LD(xb, at(0, dr, C, c, 1)), LOC(m)));
    end(b);
}

/* softmax, log_softmax along the last axis, a row at a time. */
static void lower_softmax(builder *b, const otc_node *nd, bool backward, bool log) {
    otc_id id = b->p->node, x = nd->inputs[0];
    int64_t C = last_dim(b, id), R = size_of(b, id) / C;
    int r = loop(b, R);
    if (!backward) {
        int xb = buf(b, x, false), yb = buf(b, id, false);
        int m = local(b), s = local(b);
        if (log) {
            row_max_sum(b, xb, r, C, m, s);
            int c = loop(b, C);
            store(b, yb, at(0, r, C, c, 1), LOG_SOFTMAX,
                  OPS(LD(xb, at(0, r, C, c, 1)), LOC(m), LOC(s)));
            end(b);
        } else { /* y = exp(x - m) stored while summing, then scaled by 1 / s */
            row_max(b, xb, r, C, m);
            let(b, s, ZERO, NULL, 0);
            int c = loop(b, C);
            store(b, yb, at(0, r, C, c, 1), SHIFTED_EXP, OPS(LD(xb, at(0, r, C, c, 1)), LOC(m)));
            let(b, s, SUM2, OPS(LOC(s), LD(yb, at(0, r, C, c, 1))));
            end(b);
            let(b, s, RECIPROCAL, OPS(LOC(s)));
            c = loop(b, C);
            store(b, yb, at(0, r, C, c, 1), PRODUCT, OPS(LD(yb, at(0, r, C, c, 1)), LOC(s)));
            end(b);
        }
    } else {
        int yb = buf(b, id, false), gy = buf(b, id, true), gx = buf(b, x, true);
        int s = local(b);
        let(b, s, ZERO, NULL, 0);
        int c = loop(b, C);
        if (log)
            let(b, s, SUM2, OPS(LOC(s), LD(gy, at(0, r, C, c, 1))));
        else
            let(b, s, MUL_ADD, OPS(LOC(s), LD(gy, at(0, r, C, c, 1)), LD(yb, at(0, r, C, c, 1))));
        end(b);
        c = loop(b, C);
        if (log)
            add(b, gx, at(0, r, C, c, 1), LOG_SOFTMAX_BACK,
                OPS(LD(gy, at(0, r, C, c, 1)), LD(yb, at(0, r, C, c, 1)), LOC(s)));
        else
            add(b, gx, at(0, r, C, c, 1), SOFTMAX_BACK,
                OPS(LD(yb, at(0, r, C, c, 1)), LD(gy, at(0, r, C, c, 1)), LOC(s)));
        end(b);
    }
    end(b);
}

/* softmax_ce: logits [M, C] (a batched row per sample, or M unbatched rows), labels one per
 * row as floats; the mean over rows of logsumexp(x) - x[label]. A label that is not a class
 * index fails the call. */
static void lower_softmax_ce(builder *b, const otc_node *nd, bool backward, const bool *needs) {
    otc_id x = nd->inputs[0], lab = nd->inputs[1];
    int64_t C = last_dim(b, x), M = size_of(b, x) / C;
    int xb = buf(b, x, false), lb = buf(b, lab, false);
    int u = -1, s_total = -1;
    if (backward) {
        if (!needs[0]) return;
        b->section = OTC_LOOP_BEFORE;
        u = local(b);
        let(b, u, OVER_COUNT, OPS(LD(buf(b, b->p->node, true), AT0(0)), K((double)M), SAMPLES()));
        b->section = OTC_LOOP_BODY;
    } else {
        s_total = sum(b);
    }
    int r = loop(b, M);
    int l = local(b), m = local(b), s = local(b), t = local(b);
    let(b, l, COPY, OPS(LD(lb, at(0, r, 1, -1, 0))));
    if (!backward)
        statement(b, OTC_LOOP_CHECK, 0, AT0(0), LABEL_OK, OPS(LOC(l), K(-(double)(C - 1))));
    row_max_sum(b, xb, r, C, m, s);
    int c;
    if (!backward) {
        let(b, t, ZERO, NULL, 0);
        c = loop(b, C);
        let(b, t, PICK, OPS(VAR(c), LOC(l), LD(xb, at(0, r, C, c, 1)), LOC(t)));
        end(b);
        sumup(b, s_total, CE_TERM, OPS(LOC(m), LOC(s), LOC(t)));
    } else {
        let(b, t, RECIPROCAL, OPS(LOC(s)));
        c = loop(b, C);
        add(b, buf(b, x, true), at(0, r, C, c, 1), CE_BACK,
            OPS(LOC(u), LD(xb, at(0, r, C, c, 1)), LOC(m), LOC(t), VAR(c), LOC(l)));
        end(b);
    }
    end(b);
    if (!backward) {
        b->section = OTC_LOOP_AFTER;
        store(b, buf(b, b->p->node, false), AT0(0), OVER_COUNT,
              OPS(SUM(s_total), K((double)M), SAMPLES()));
    }
}

/* A copy of `outer` runs of `chunk` elements: dst[o * dst_row + dst_off + j] (=, or += of
 * gradients) src[o * src_row + src_off + j]. */
static void copy_runs(builder *b, int dst, int src, bool accumulate, int64_t outer, int64_t chunk,
                      int64_t dst_row, int64_t dst_off, int64_t src_row, int64_t src_off) {
    int o = loop(b, outer);
    int j = loop(b, chunk);
    statement(b, accumulate ? OTC_LOOP_ADD : OTC_LOOP_STORE, dst, at(dst_off, o, dst_row, j, 1),
              COPY, OPS(LD(src, at(src_off, o, src_row, j, 1))));
    end(b);
    end(b);
}

/* concat along an axis: each input's runs into its place in the output (backward: the
 * output gradient's runs back into each input's gradient). */
static void lower_concat(builder *b, const otc_node *nd, bool backward, const bool *needs) {
    otc_id id = b->p->node;
    int64_t outer, mid, inner, off = 0;
    split(nd->shape, nd->axis, &outer, &mid, &inner);
    int64_t out_row = mid * inner;
    for (int i = 0; i < nd->n_inputs; i++) {
        int64_t o2, m2, i2;
        split(node(b, nd->inputs[i])->shape, nd->axis, &o2, &m2, &i2);
        int64_t chunk = m2 * i2;
        if (!backward)
            copy_runs(b, buf(b, id, false), buf(b, nd->inputs[i], false), false, outer, chunk,
                      out_row, off, chunk, 0);
        else if (needs[i])
            copy_runs(b, buf(b, nd->inputs[i], true), buf(b, id, true), true, outer, chunk, chunk,
                      0, out_row, off);
        off += chunk;
    }
}

/* slice (len elements from start along the axis) and select (one). */
static void lower_take(builder *b, const otc_node *nd, bool backward, int64_t len) {
    otc_id id = b->p->node, x = nd->inputs[0];
    int64_t outer, mid, inner;
    split(node(b, x)->shape, nd->axis, &outer, &mid, &inner);
    int64_t chunk = len * inner, from = (int64_t)nd->start * inner;
    if (!backward)
        copy_runs(b, buf(b, id, false), buf(b, x, false), false, outer, chunk, chunk, 0,
                  mid * inner, from);
    else
        copy_runs(b, buf(b, x, true), buf(b, id, true), true, outer, chunk, mid * inner, from,
                  chunk, 0);
}

/* A product of two unbatched values A [M, K] and W [K, N]. */
static void lower_matmul(builder *b, const otc_node *nd, bool backward, const bool *needs) {
    otc_id id = b->p->node, A = nd->inputs[0], W = nd->inputs[1];
    if (batched(b, A) || batched(b, W)) {
        fail(b, "a batched product is planned as a MATMUL kernel, not a loop program");
        return;
    }
    const otc_shape as = node(b, A)->shape;
    int64_t M = as.dim[0], Kd = as.dim[1], N = nd->shape.dim[1];
    int ab = buf(b, A, false), wb = buf(b, W, false);
    int acc = local(b);
    if (!backward) {
        int i = loop(b, M), j = loop(b, N);
        let(b, acc, ZERO, NULL, 0);
        int k = loop(b, Kd);
        let(b, acc, MUL_ADD, OPS(LOC(acc), LD(ab, at(0, i, Kd, k, 1)), LD(wb, at(0, k, N, j, 1))));
        end(b);
        store(b, buf(b, id, false), at(0, i, N, j, 1), COPY, OPS(LOC(acc)));
        end(b);
        end(b);
        return;
    }
    int gy = buf(b, id, true);
    if (needs[0]) { /* dA[i,k] += sum_j dY[i,j] W[k,j] */
        int i = loop(b, M), k = loop(b, Kd);
        let(b, acc, ZERO, NULL, 0);
        int j = loop(b, N);
        let(b, acc, MUL_ADD, OPS(LOC(acc), LD(gy, at(0, i, N, j, 1)), LD(wb, at(0, k, N, j, 1))));
        end(b);
        add(b, buf(b, A, true), at(0, i, Kd, k, 1), COPY, OPS(LOC(acc)));
        end(b);
        end(b);
    }
    if (needs[1]) { /* dW[k,j] += A[i,k] dY[i,j] */
        int i = loop(b, M), k = loop(b, Kd);
        let(b, acc, COPY, OPS(LD(ab, at(0, i, Kd, k, 1))));
        int j = loop(b, N);
        add(b, buf(b, W, true), at(0, k, N, j, 1), PRODUCT,
            OPS(LOC(acc), LD(gy, at(0, i, N, j, 1))));
        end(b);
        end(b);
        end(b);
    }
}

/* ---- images: convolution and pooling, NCHW per sample ---- */

/* The window geometry of a convolution or a pooling: input [C, H, W], output [OC, OH, OW],
 * a KH x KW window moved by stride s, its taps d apart, the input padded by p on each side,
 * G groups of channels (a pooling is C groups of one channel each). */
typedef struct {
    int64_t C, H, W, OC, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, G;
} window;

/* The row (ih = oh * sh + kh * dh - ph) and column of a tap, as indices of the loops at
 * depths oh, kh (ow, kw); a block each that runs only when the tap is inside the input
 * (padding reads nothing: zero for a sum, nothing for a maximum). Returns the blocks opened. */
static int inside(builder *b, const window *w, int oh, int kh, int ow, int kw, bool *row_open) {
    *row_open = when(b, at(-w->ph, oh, w->sh, kh, w->dh), w->H);
    return *row_open + when(b, at(-w->pw, ow, w->sw, kw, w->dw), w->W);
}

/* Element [ch, ih, iw] of the input; ch = base_ch + the loops' terms added by the caller. */
static otc_loop_index tap(const window *w, int oh, int kh, int ow, int kw) {
    otc_loop_index ix = at(-w->ph * w->W - w->pw, oh, w->sh * w->W, kh, w->dh * w->W);
    ix.stride[ow] += w->sw;
    ix.stride[kw] += w->dw;
    return ix;
}

/* Moves an index's loop d to start at `start` (the loop then counts from 0 over a part of
 * its range). */
static void shift(otc_loop_index *ix, int d, int64_t start) {
    ix->base += ix->stride[d] * start;
}

/* The parts of 0 .. n-1 (o) where the taps o s + lo .. o s + hi may leave 0 .. bound-1 and the
 * interior where none can: a convolution's loop nest is written once per part, so WHEN keeps
 * out of the interior (where nearly all the work is). Returns the parts (up to 3). */
static int parts(int64_t n, int64_t s, int64_t lo, int64_t hi, int64_t bound, int64_t *start,
                 int64_t *count) {
    int64_t a = lo >= 0 ? 0 : (-lo + s - 1) / s;                   /* first o with o s + lo >= 0 */
    int64_t z = bound - 1 - hi < 0 ? 0 : (bound - 1 - hi) / s + 1; /* past the last inside */
    if (a > n) a = n;
    if (z > n) z = n;
    if (z < a) z = a;
    int k = 0;
    const int64_t cut[4] = {0, a, z, n};
    for (int i = 0; i < 3; i++)
        if (cut[i + 1] > cut[i]) {
            start[k] = cut[i];
            count[k++] = cut[i + 1] - cut[i];
        }
    return k;
}

static void channel(otc_loop_index *ix, int d, int64_t per) {
    ix->stride[d] += per;
}

/* Output channels a convolution's loops compute together: U independent sums (a chain of
 * dependent additions per sum would wait on the adder's latency) sharing each input load.
 * The largest divisor of the group's output channels up to this. */
enum { CONV_BLOCK = 4 };

static int64_t conv_block(int64_t ocg) {
    for (int64_t u = CONV_BLOCK; u > 1; u--)
        if (ocg % u == 0) return u;
    return 1;
}

/* The forward's block, larger: a sum per channel waits ~4 cycles per multiply-add, so 6-8
 * independent sums keep both FMA units busy where 3-4 left half of them idle. */
enum { CONV_FORWARD_BLOCK = 8 }; /* at most DW_SUMS (the sums the lowering keeps) */

static int64_t conv_forward_block(int64_t ocg) {
    for (int64_t u = CONV_FORWARD_BLOCK; u > 1; u--)
        if (ocg % u == 0) return u;
    return 1;
}

/* Element of a tensor indexed by output channel g * OCg + ob * U + u (loops g, ob) times
 * `per`, plus the rest. */
static void out_channel(otc_loop_index *ix, int g, int ob, int64_t u, int64_t ocg, int64_t U,
                        int64_t per) {
    ix->stride[g] += ocg * per;
    ix->stride[ob] += U * per;
    ix->base += u * per;
}

/* A convolution's multiply-add acc + a b (A0 acc, A1 a, A2 b), fused where the machine can:
 * one instruction and one rounding (the interpreter's sgemm fuses too). */
static const otc_expr *const MAC = EX_FMA(A1, A2, A0);

/* ADD's tree for dX: the sum of U products A0 A1 + A2 A3 + ... */
static const otc_expr *const DOT[CONV_BLOCK + 1] = {
    NULL, EX_MUL(A0, A1), EX_FMA(A2, A3, EX_MUL(A0, A1)),
    EX_FMA(A4, A5, EX_FMA(A2, A3, EX_MUL(A0, A1))),
    EX_FMA(EX_ARG(6), EX_ARG(7), EX_FMA(A4, A5, EX_FMA(A2, A3, EX_MUL(A0, A1))))};

/* dX by scattering: each weight (U output channels' at once, in locals) times the outputs
 * it produced, added into the taps' inputs. Any stride. */
static void conv_dx_scatter(builder *b, const window *w, otc_id x, int wb, int gy, const int *acc,
                            int64_t U) {
    int64_t Cg = w->C / w->G, OCg = w->OC / w->G, HW = w->H * w->W, OHW = w->OH * w->OW;
    int64_t KK = w->KH * w->KW;
    bool row;
    int g = loop(b, w->G), ob = loop(b, OCg / U), c = loop(b, Cg);
    int kh = loop(b, w->KH), kw = loop(b, w->KW);
    for (int64_t u = 0; u < U; u++) {
        otc_loop_index wi = at(0, c, KK, kh, w->KW);
        wi.stride[kw] += 1;
        out_channel(&wi, g, ob, u, OCg, U, Cg * KK);
        let(b, acc[u], COPY, OPS(LD(wb, wi)));
    }
    int oh = loop(b, w->OH), ow = loop(b, w->OW);
    int open = inside(b, w, oh, kh, ow, kw, &row);
    otc_loop_index xi = tap(w, oh, kh, ow, kw);
    channel(&xi, g, Cg * HW);
    channel(&xi, c, HW);
    otc_loop_operand ops[2 * CONV_BLOCK];
    for (int64_t u = 0; u < U; u++) {
        otc_loop_index yi = at(0, oh, w->OW, ow, 1);
        out_channel(&yi, g, ob, u, OCg, U, OHW);
        ops[2 * u] = LD(gy, yi);
        ops[2 * u + 1] = LOC(acc[u]);
    }
    add(b, buf(b, x, true), xi, DOT[U], ops, (int)(2 * U));
    for (int i = 0; i < open; i++) end(b);
    end(b), end(b), end(b), end(b), end(b), end(b), end(b);
}

/* dX at stride 1 by gathering (a convolution of the output's gradient with the flipped
 * weights): gx[c, ih, iw] += sum over the group's output channels o and the taps of
 * gy[o, ih + ph - kh dh, iw + pw - kw dw] w[o, c, kh, kw], U input channels at once sharing
 * each gradient load, one pass and one addition per input element. */
static void conv_dx_gather(builder *b, const window *w, otc_id x, const int *acc) {
    otc_id id = b->p->node, wt = otc_graph_node(b->g, id)->inputs[1];
    int64_t Cg = w->C / w->G, OCg = w->OC / w->G, HW = w->H * w->W, OHW = w->OH * w->OW;
    int64_t KK = w->KH * w->KW, U = conv_block(Cg);
    int gy = buf(b, id, true), wb = buf(b, wt, false);
    int64_t hs[3], hn[3], ws[3], wn[3];
    int nh = parts(w->H, 1, w->ph - (w->KH - 1) * w->dh, w->ph, w->OH, hs, hn);
    int nw = parts(w->W, 1, w->pw - (w->KW - 1) * w->dw, w->pw, w->OW, ws, wn);
    int g = loop(b, w->G), cb = loop(b, Cg / U);
    for (int ph = 0; ph < nh; ph++)
        for (int pw = 0; pw < nw; pw++) {
            int ih = loop(b, hn[ph]), iw = loop(b, wn[pw]);
            for (int64_t u = 0; u < U; u++) let(b, acc[u], ZERO, NULL, 0);
            int o = loop(b, OCg), kh = loop(b, w->KH);
            otc_loop_index rix = at(w->ph, ih, 1, kh, -w->dh);
            shift(&rix, ih, hs[ph]);
            bool row = when(b, rix, w->OH);
            int kw = loop(b, w->KW);
            otc_loop_index cix = at(w->pw, iw, 1, kw, -w->dw);
            shift(&cix, iw, ws[pw]);
            bool col = when(b, cix, w->OW);
            otc_loop_index yi = at(w->ph * w->OW + w->pw, ih, w->OW, iw, 1);
            yi.stride[kh] -= w->dh * w->OW;
            yi.stride[kw] -= w->dw;
            yi.stride[g] += OCg * OHW;
            yi.stride[o] += OHW;
            shift(&yi, ih, hs[ph]);
            shift(&yi, iw, ws[pw]);
            for (int64_t u = 0; u < U; u++) {
                otc_loop_index wi = at(u * KK, g, OCg * Cg * KK, o, Cg * KK);
                wi.stride[cb] += U * KK;
                wi.stride[kh] += w->KW;
                wi.stride[kw] += 1;
                let(b, acc[u], MAC, OPS(LOC(acc[u]), LD(gy, yi), LD(wb, wi)));
            }
            if (col) end(b);
            end(b); /* kw */
            if (row) end(b);
            end(b), end(b); /* kh, o */
            for (int64_t u = 0; u < U; u++) {
                otc_loop_index xi = at(u * HW, ih, w->W, iw, 1);
                xi.stride[g] += Cg * HW;
                xi.stride[cb] += U * HW;
                shift(&xi, ih, hs[ph]);
                shift(&xi, iw, ws[pw]);
                add(b, buf(b, x, true), xi, COPY, OPS(LOC(acc[u])));
            }
            end(b), end(b);
        }
    end(b), end(b);
}

/* Accumulators of the weights' gradient: U output channels times KWB taps of a row. */
enum { DW_SUMS = 12 };

/* The weight gradient's blocking: U output channels (returned) times *kwb taps of a row. */
static int64_t dw_block(const window *w, int64_t *kwb) {
    int64_t OCg = w->OC / w->G;
    *kwb = w->KW <= DW_SUMS / 2 ? w->KW : 1;
    for (int64_t u = CONV_BLOCK; u > 1; u--)
        if (OCg % u == 0 && u * *kwb <= DW_SUMS) return u;
    return 1;
}

/* dW: w[o, c, kh, kw] gets the sum over the output positions of gy[o, oh, ow] x[tap]; U
 * output channels and a whole row of KW taps (when it is short) summed at once, so one pass
 * over the positions serves U * KW weights, each load feeding several sums. */
static void conv_dw(builder *b, const window *w, otc_id x, otc_id wt, int gy, const int *acc) {
    int64_t Cg = w->C / w->G, OCg = w->OC / w->G, HW = w->H * w->W, OHW = w->OH * w->OW;
    int64_t KK = w->KH * w->KW;
    int64_t KWB, U = dw_block(w, &KWB);
    int xb = buf(b, x, false), gw = buf(b, wt, true);
    int g = loop(b, w->G), ob = loop(b, OCg / U), c = loop(b, Cg), kh = loop(b, w->KH);
    int kw = KWB == 1 ? loop(b, w->KW) : -1;
    for (int64_t k = 0; k < U * KWB; k++) let(b, acc[k], ZERO, NULL, 0);
    int64_t hs[3], hn[3], ws[3], wn[3];
    int nh = parts(w->OH, w->sh, -w->ph, (w->KH - 1) * w->dh - w->ph, w->H, hs, hn);
    int nw = parts(w->OW, w->sw, -w->pw, (w->KW - 1) * w->dw - w->pw, w->W, ws, wn);
    for (int ph = 0; ph < nh; ph++)
        for (int pw = 0; pw < nw; pw++) {
            int oh = loop(b, hn[ph]);
            otc_loop_index rix = at(-w->ph, oh, w->sh, kh, w->dh);
            shift(&rix, oh, hs[ph]);
            bool row = when(b, rix, w->H);
            int ow = loop(b, wn[pw]);
            for (int64_t t = 0; t < KWB; t++) {
                otc_loop_index col = at(-w->pw + t * w->dw, ow, w->sw, kw, kw >= 0 ? w->dw : 0);
                shift(&col, ow, ws[pw]);
                bool in = when(b, col, w->W);
                otc_loop_index xi =
                    at(-w->ph * w->W - w->pw + t * w->dw, oh, w->sh * w->W, kh, w->dh * w->W);
                xi.stride[ow] += w->sw;
                if (kw >= 0) xi.stride[kw] += w->dw;
                shift(&xi, oh, hs[ph]);
                shift(&xi, ow, ws[pw]);
                channel(&xi, g, Cg * HW);
                channel(&xi, c, HW);
                for (int64_t u = 0; u < U; u++) {
                    otc_loop_index yi = at(0, oh, w->OW, ow, 1);
                    shift(&yi, oh, hs[ph]);
                    shift(&yi, ow, ws[pw]);
                    out_channel(&yi, g, ob, u, OCg, U, OHW);
                    let(b, acc[u * KWB + t], MAC,
                        OPS(LOC(acc[u * KWB + t]), LD(gy, yi), LD(xb, xi)));
                }
                if (in) end(b);
            }
            end(b); /* ow */
            if (row) end(b);
            end(b); /* oh */
        }
    for (int64_t u = 0; u < U; u++)
        for (int64_t t = 0; t < KWB; t++) {
            otc_loop_index wi = at(t, c, KK, kh, w->KW);
            if (kw >= 0) wi.stride[kw] += 1;
            out_channel(&wi, g, ob, u, OCg, U, Cg * KK);
            add(b, gw, wi, COPY, OPS(LOC(acc[u * KWB + t])));
        }
    if (kw >= 0) end(b);
    end(b), end(b), end(b), end(b);
}

/* conv2d: y[oc, oh, ow] = bias[oc] + sum over the group's input channels c and the taps of
 * x[c, ih, iw] w[oc, c, kh, kw], U output channels at a time. Backward: the input's gradient
 * scattered tap by tap (U channels' weights read once into locals, then the output positions
 * they touched), the weights' gradient a sum over the output positions per weight (U
 * channels' sums at once), the bias's over each channel's outputs. */
static void lower_conv(builder *b, const otc_node *nd, const window *w, bool backward,
                       const bool *needs) {
    otc_id id = b->p->node, x = nd->inputs[0], wt = nd->inputs[1];
    otc_id bias = nd->n_inputs > 2 ? nd->inputs[2] : -1;
    int64_t Cg = w->C / w->G, OCg = w->OC / w->G, HW = w->H * w->W, OHW = w->OH * w->OW;
    int64_t KK = w->KH * w->KW, U = backward ? conv_block(OCg) : conv_forward_block(OCg);
    int xb = buf(b, x, false), wb = buf(b, wt, false);
    /* The sums: U outputs forward; backward as many as the largest part needs. */
    int64_t sums = U, kwb, dw_u = dw_block(w, &kwb);
    if (backward) {
        sums = 1;
        if (needs[0]) sums = w->sh == 1 && w->sw == 1 ? conv_block(Cg) : U;
        if (needs[1] && dw_u * kwb > sums) sums = dw_u * kwb;
    }
    int acc[DW_SUMS];
    for (int64_t u = 0; u < sums; u++) acc[u] = local(b);
    if (!backward) {
        int64_t hs[3], hn[3], ws[3], wn[3];
        int nh = parts(w->OH, w->sh, -w->ph, (w->KH - 1) * w->dh - w->ph, w->H, hs, hn);
        int nw = parts(w->OW, w->sw, -w->pw, (w->KW - 1) * w->dw - w->pw, w->W, ws, wn);
        int g = loop(b, w->G), ob = loop(b, OCg / U);
        for (int ph = 0; ph < nh; ph++)
            for (int pw = 0; pw < nw; pw++) {
                int oh = loop(b, hn[ph]), ow = loop(b, wn[pw]);
                for (int64_t u = 0; u < U; u++) {
                    otc_loop_index bi = AT0(0);
                    out_channel(&bi, g, ob, u, OCg, U, 1);
                    if (bias >= 0)
                        let(b, acc[u], COPY, OPS(LD(buf(b, bias, false), bi)));
                    else
                        let(b, acc[u], ZERO, NULL, 0);
                }
                int c = loop(b, Cg), kh = loop(b, w->KH), kw = loop(b, w->KW);
                otc_loop_index rix = at(-w->ph, oh, w->sh, kh, w->dh);
                otc_loop_index cix = at(-w->pw, ow, w->sw, kw, w->dw);
                shift(&rix, oh, hs[ph]);
                shift(&cix, ow, ws[pw]);
                int open = when(b, rix, w->H);
                open += when(b, cix, w->W);
                otc_loop_index xi = tap(w, oh, kh, ow, kw);
                shift(&xi, oh, hs[ph]);
                shift(&xi, ow, ws[pw]);
                channel(&xi, g, Cg * HW);
                channel(&xi, c, HW);
                for (int64_t u = 0; u < U; u++) {
                    otc_loop_index wi = at(0, c, KK, kh, w->KW);
                    wi.stride[kw] += 1;
                    out_channel(&wi, g, ob, u, OCg, U, Cg * KK);
                    let(b, acc[u], MAC, OPS(LOC(acc[u]), LD(xb, xi), LD(wb, wi)));
                }
                for (int i = 0; i < open; i++) end(b);
                end(b), end(b), end(b);
                for (int64_t u = 0; u < U; u++) {
                    otc_loop_index yi = at(0, oh, w->OW, ow, 1);
                    shift(&yi, oh, hs[ph]);
                    shift(&yi, ow, ws[pw]);
                    out_channel(&yi, g, ob, u, OCg, U, OHW);
                    store(b, buf(b, id, false), yi, COPY, OPS(LOC(acc[u])));
                }
                end(b), end(b);
            }
        end(b), end(b);
        return;
    }
    int gy = buf(b, id, true);
    if (needs[0] && w->sh == 1 && w->sw == 1)
        conv_dx_gather(b, w, x, acc);
    else if (needs[0])
        conv_dx_scatter(b, w, x, wb, gy, acc, U);
    if (needs[1]) conv_dw(b, w, x, wt, gy, acc);
    if (bias >= 0 && needs[2]) {
        int oc = loop(b, w->OC);
        let(b, acc[0], ZERO, NULL, 0);
        int e = loop(b, OHW);
        let(b, acc[0], SUM2, OPS(LOC(acc[0]), LD(gy, at(0, oc, OHW, e, 1))));
        end(b);
        add(b, buf(b, bias, true), at(0, oc, 1, -1, 0), COPY, OPS(LOC(acc[0])));
        end(b);
    }
}

/* Taps of a KH x KW window beyond which the one-sample convolution (below) is not unrolled. */
enum { PIXELS_MAX_TAPS = 64 };

/* The outputs o (0 .. n-1) whose tap o s + lo lies inside 0 .. bound-1: from *first, *count of
 * them (a run: the taps move by s > 0 per output). */
static void tap_run(int64_t n, int64_t s, int64_t lo, int64_t bound, int64_t *first,
                    int64_t *count) {
    int64_t a = lo >= 0 ? 0 : (-lo + s - 1) / s;
    int64_t z = bound - 1 - lo < 0 ? 0 : (bound - 1 - lo) / s + 1;
    if (a > n) a = n;
    if (z > n) z = n;
    *first = a;
    *count = z > a ? z - a : 0;
}

/* conv2d forward for ONE sample, its innermost loop over a row's output pixels (contiguous
 * elements when the stride is 1, which a compiler vectorises when there are no samples to
 * vectorise over): y = bias, then per input channel and tap (the taps unrolled, each over the
 * outputs it reaches, so padding costs no branch) y = fma(x, w, y) for U output channels at
 * once sharing the input's load. The same multiply-adds in the same order as lower_conv's. */
static void lower_conv_pixels(builder *b, const otc_node *nd, const window *w) {
    otc_id id = b->p->node, x = nd->inputs[0], wt = nd->inputs[1];
    otc_id bias = nd->n_inputs > 2 ? nd->inputs[2] : -1;
    int64_t Cg = w->C / w->G, OCg = w->OC / w->G, HW = w->H * w->W, OHW = w->OH * w->OW;
    int64_t KK = w->KH * w->KW, U = conv_block(OCg);
    int xb = buf(b, x, false), wb = buf(b, wt, false), yb = buf(b, id, false);
    int g = loop(b, w->G), ob = loop(b, OCg / U);
    int oh = loop(b, w->OH), ow = loop(b, w->OW);
    for (int64_t u = 0; u < U; u++) {
        otc_loop_index yi = at(0, oh, w->OW, ow, 1);
        out_channel(&yi, g, ob, u, OCg, U, OHW);
        if (bias >= 0) {
            otc_loop_index bi = AT0(0);
            out_channel(&bi, g, ob, u, OCg, U, 1);
            store(b, yb, yi, COPY, OPS(LD(buf(b, bias, false), bi)));
        } else {
            store(b, yb, yi, ZERO, NULL, 0);
        }
    }
    end(b), end(b);
    int c = loop(b, Cg);
    for (int64_t kh = 0; kh < w->KH; kh++)
        for (int64_t kw = 0; kw < w->KW; kw++) {
            int64_t h0, hn, w0, wn;
            tap_run(w->OH, w->sh, kh * w->dh - w->ph, w->H, &h0, &hn);
            tap_run(w->OW, w->sw, kw * w->dw - w->pw, w->W, &w0, &wn);
            if (!hn || !wn) continue; /* the tap only ever reads padding */
            oh = loop(b, hn), ow = loop(b, wn);
            otc_loop_index xi =
                at((h0 * w->sh + kh * w->dh - w->ph) * w->W + w0 * w->sw + kw * w->dw - w->pw, oh,
                   w->sh * w->W, ow, w->sw);
            channel(&xi, g, Cg * HW);
            channel(&xi, c, HW);
            for (int64_t u = 0; u < U; u++) {
                otc_loop_index yi = at(h0 * w->OW + w0, oh, w->OW, ow, 1);
                out_channel(&yi, g, ob, u, OCg, U, OHW);
                otc_loop_index wi = at(kh * w->KW + kw, c, KK, -1, 0);
                out_channel(&wi, g, ob, u, OCg, U, Cg * KK);
                store(b, yb, yi, MAC, OPS(LD(yb, yi), LD(xb, xi), LD(wb, wi)));
            }
            end(b), end(b);
        }
    end(b); /* c */
    end(b), end(b);
}

/* The first tap equal to the maximum takes the gradient (h = 1 - found when x == m, else
 * 0; found += h): A0 x, A1 m, A2 found. */
static const otc_expr *const FIRST_HIT =
    EX_3(OTC_EX_SELECT, EX_2(OTC_EX_EQ, A0, A1), EX_SUB(EX_K(1), A2), EX_K(0));

/* max_pool2d: the maximum over the taps inside the input (padding is never the maximum).
 * Backward: the output's gradient goes to the first tap (row by row) equal to the output,
 * the interpreter's and PyTorch's choice among ties. */
static void lower_max_pool(builder *b, const window *w, bool backward) {
    otc_id id = b->p->node, x = otc_graph_node(b->g, id)->inputs[0];
    int64_t HW = w->H * w->W, OHW = w->OH * w->OW;
    int xb = buf(b, x, false), yb = buf(b, id, false);
    int m = local(b);
    bool row;
    int c = loop(b, w->C), oh = loop(b, w->OH), ow = loop(b, w->OW);
    otc_loop_index yi = at(0, c, OHW, oh, w->OW);
    yi.stride[ow] += 1;
    int u = -1, found = -1, h = -1;
    if (!backward) {
        let(b, m, COPY, OPS(K(-FLT_MAX)));
    } else {
        u = local(b), found = local(b), h = local(b);
        let(b, m, COPY, OPS(LD(yb, yi)));
        let(b, u, COPY, OPS(LD(buf(b, id, true), yi)));
        let(b, found, ZERO, NULL, 0);
    }
    int kh = loop(b, w->KH), kw = loop(b, w->KW);
    int open = inside(b, w, oh, kh, ow, kw, &row);
    otc_loop_index xi = tap(w, oh, kh, ow, kw);
    channel(&xi, c, HW);
    if (!backward) {
        let(b, m, RUNNING_MAX, OPS(LOC(m), LD(xb, xi)));
    } else {
        let(b, h, FIRST_HIT, OPS(LD(xb, xi), LOC(m), LOC(found)));
        add(b, buf(b, x, true), xi, PRODUCT, OPS(LOC(h), LOC(u)));
        let(b, found, SUM2, OPS(LOC(found), LOC(h)));
    }
    for (int i = 0; i < open; i++) end(b);
    end(b), end(b);
    if (!backward) store(b, yb, yi, COPY, OPS(LOC(m)));
    end(b), end(b), end(b);
}

/* avgpool2d: the sum over the taps inside the input over KH*KW (the op spec: padding counts
 * as zeros in the mean). Backward: each tap inside the input gets the output's gradient over
 * KH*KW. */
static void lower_avg_pool(builder *b, const window *w, bool backward) {
    otc_id id = b->p->node, x = otc_graph_node(b->g, id)->inputs[0];
    int64_t HW = w->H * w->W, OHW = w->OH * w->OW;
    double inv = 1.0 / (double)(w->KH * w->KW);
    int xb = buf(b, x, false);
    int s = local(b);
    bool row;
    int c = loop(b, w->C), oh = loop(b, w->OH), ow = loop(b, w->OW);
    otc_loop_index yi = at(0, c, OHW, oh, w->OW);
    yi.stride[ow] += 1;
    if (!backward)
        let(b, s, ZERO, NULL, 0);
    else
        let(b, s, PRODUCT, OPS(LD(buf(b, id, true), yi), K(inv)));
    int kh = loop(b, w->KH), kw = loop(b, w->KW);
    int open = inside(b, w, oh, kh, ow, kw, &row);
    otc_loop_index xi = tap(w, oh, kh, ow, kw);
    channel(&xi, c, HW);
    if (!backward)
        let(b, s, SUM2, OPS(LOC(s), LD(xb, xi)));
    else
        add(b, buf(b, x, true), xi, COPY, OPS(LOC(s)));
    for (int i = 0; i < open; i++) end(b);
    end(b), end(b);
    if (!backward) store(b, buf(b, id, false), yi, PRODUCT, OPS(LOC(s), K(inv)));
    end(b), end(b), end(b);
}

/* The window of a conv2d or pooling node from its input's and its own shape (NCHW, the batch
 * leading when batched). */
static window window_of(const builder *b, const otc_node *nd) {
    otc_shape xs = node(b, nd->inputs[0])->shape, ys = nd->shape;
    const otc_window *v = &nd->win;
    int xd = xs.ndim - 3, yd = ys.ndim - 3;
    window w = {.C = xs.dim[xd],
                .H = xs.dim[xd + 1],
                .W = xs.dim[xd + 2],
                .OC = ys.dim[yd],
                .OH = ys.dim[yd + 1],
                .OW = ys.dim[yd + 2],
                .KH = v->kernel_h,
                .KW = v->kernel_w,
                .sh = v->stride_h > 0 ? v->stride_h : 1,
                .sw = v->stride_w > 0 ? v->stride_w : 1,
                .ph = v->pad_h,
                .pw = v->pad_w,
                .dh = v->dilation_h > 0 ? v->dilation_h : 1,
                .dw = v->dilation_w > 0 ? v->dilation_w : 1,
                .G = nd->op == OTC_OP_CONV2D && v->groups > 0 ? v->groups : 1};
    return w;
}

bool otc_loop_lowers(otc_op op) {
    switch (op) {
    case OTC_OP_SUM:
    case OTC_OP_MEAN:
    case OTC_OP_MSE:
    case OTC_OP_BCE:
    case OTC_OP_SOFTMAX:
    case OTC_OP_LOG_SOFTMAX:
    case OTC_OP_SOFTMAX_CE:
    case OTC_OP_CONCAT:
    case OTC_OP_SLICE:
    case OTC_OP_SELECT:
    case OTC_OP_MATMUL:
    case OTC_OP_CONV2D:
    case OTC_OP_MAXPOOL2D:
    case OTC_OP_AVGPOOL2D:
        return true;
    default:
        return false;
    }
}

static void renumber(otc_loop_operand *o, const int *to) {
    if (o->kind == OTC_LOOP_LOAD) o->n = to[o->n];
}

/* A program lists exactly the buffers its statements touch (a lowering may name one that a
 * rule then skips, e.g. an input that needs no gradient), so a renderer declares no unused
 * pointer and the plan keeps nothing for it. */
static void drop_unused_bufs(otc_loop_program *p) {
    bool used[OTC_LOOP_MAX_BUFS] = {false};
    for (int i = 0; i < p->n_stmts; i++) {
        const otc_loop_stmt *s = &p->stmt[i];
        if (s->kind == OTC_LOOP_STORE || s->kind == OTC_LOOP_ADD) used[s->n] = true;
        if (s->x.kind == OTC_LOOP_LOAD) used[s->x.n] = true;
        if (s->x1.kind == OTC_LOOP_LOAD) used[s->x1.n] = true;
        for (int k = 0; k < s->n_operands; k++)
            if (s->operand[k].kind == OTC_LOOP_LOAD) used[s->operand[k].n] = true;
    }
    int to[OTC_LOOP_MAX_BUFS], n = 0;
    for (int i = 0; i < p->n_bufs; i++) {
        to[i] = n;
        if (used[i]) p->buf[n++] = p->buf[i];
    }
    p->n_bufs = n;
    for (int i = 0; i < p->n_stmts; i++) {
        otc_loop_stmt *s = &p->stmt[i];
        if (s->kind == OTC_LOOP_STORE || s->kind == OTC_LOOP_ADD) s->n = to[s->n];
        renumber(&s->x, to);
        renumber(&s->x1, to);
        for (int k = 0; k < s->n_operands; k++) renumber(&s->operand[k], to);
    }
}

/* otc_loop_lower; `pixels`: the one-sample variant (otc_plan_lower_pixels). */
static otc_status lower(const otc_graph *g, otc_id id, bool backward, const bool *needs_grad,
                        bool pixels, otc_loop_program **out) {
    *out = NULL;
    const otc_node *nd = otc_graph_node(g, id);
    if (!nd) return otc_fail(OTC_ERR_ARG, "plan: no node #%d to lower", (int)id);
    otc_loop_program *p = calloc(1, sizeof *p);
    if (!p) return otc_fail(OTC_ERR_NOMEM, "plan: out of memory lowering a node");
    p->node = id;
    p->backward = backward;
    builder b = {.p = p, .g = g, .section = OTC_LOOP_BODY};
    bool needs[OTC_LOOP_MAX_BUFS];
    for (int i = 0; i < nd->n_inputs && i < OTC_LOOP_MAX_BUFS; i++)
        needs[i] = needs_grad ? needs_grad[i] : true;
    /* The body runs per sample when the op's main operand is batched. */
    otc_id main =
        nd->op == OTC_OP_CONCAT || nd->op == OTC_OP_SOFTMAX || nd->op == OTC_OP_LOG_SOFTMAX
            ? id
            : nd->inputs[0];
    p->batched = otc_shape_is_batched(otc_graph_node(g, main)->shape);
    if (nd->n_inputs > OTC_LOOP_MAX_BUFS - 2) fail(&b, "too many inputs for one loop program");
    switch (b.st ? OTC_OP_COUNT : nd->op) {
    case OTC_OP_SUM:
    case OTC_OP_MEAN:
        lower_reduce(&b, nd, backward, nd->op == OTC_OP_MEAN);
        break;
    case OTC_OP_MSE:
    case OTC_OP_BCE:
        lower_mean_loss(&b, nd, backward, needs);
        break;
    case OTC_OP_SOFTMAX:
    case OTC_OP_LOG_SOFTMAX:
        lower_softmax(&b, nd, backward, nd->op == OTC_OP_LOG_SOFTMAX);
        break;
    case OTC_OP_SOFTMAX_CE:
        lower_softmax_ce(&b, nd, backward, needs);
        break;
    case OTC_OP_CONCAT:
        lower_concat(&b, nd, backward, needs);
        break;
    case OTC_OP_SLICE:
        lower_take(&b, nd, backward, nd->len);
        break;
    case OTC_OP_SELECT:
        lower_take(&b, nd, backward, 1);
        break;
    case OTC_OP_MATMUL:
        lower_matmul(&b, nd, backward, needs);
        break;
    case OTC_OP_CONV2D:
    case OTC_OP_MAXPOOL2D:
    case OTC_OP_AVGPOOL2D: {
        window w = window_of(&b, nd);
        if (pixels)
            lower_conv_pixels(&b, nd, &w);
        else if (nd->op == OTC_OP_CONV2D)
            lower_conv(&b, nd, &w, backward, needs);
        else if (nd->op == OTC_OP_MAXPOOL2D)
            lower_max_pool(&b, &w, backward);
        else
            lower_avg_pool(&b, &w, backward);
        break;
    }
    default:
        fail(&b, "has no loop program");
        break;
    }
    if (b.st) {
        otc_loop_program_free(p);
        return b.st;
    }
    drop_unused_bufs(p);
    *out = p;
    return OTC_OK;
}

otc_status otc_loop_lower(const otc_graph *g, otc_id id, bool backward, const bool *needs_grad,
                          otc_loop_program **out) {
    return lower(g, id, backward, needs_grad, false, out);
}

otc_status otc_plan_lower_pixels(const otc_plan *plan, otc_id id, otc_loop_program **out) {
    *out = NULL;
    const otc_node *nd = otc_graph_node(plan->graph, id);
    if (!nd || nd->op != OTC_OP_CONV2D || nd->n_inputs < 2) return OTC_OK;
    const otc_node *x = otc_graph_node(plan->graph, nd->inputs[0]);
    const otc_node *wt = otc_graph_node(plan->graph, nd->inputs[1]);
    if (!otc_shape_is_batched(x->shape) || wt->shape.ndim != 4 ||
        wt->shape.dim[2] * wt->shape.dim[3] > PIXELS_MAX_TAPS)
        return OTC_OK;
    return lower(plan->graph, id, false, NULL, true, out);
}

bool otc_conv1_geometry_of(const otc_graph *g, otc_id id, otc_conv1_geometry *out) {
    const otc_node *nd = otc_graph_node(g, id);
    if (!nd || nd->op != OTC_OP_CONV2D || nd->n_inputs < 2) return false;
    const otc_window *v = &nd->win;
    otc_shape xs = otc_graph_node(g, nd->inputs[0])->shape, ys = nd->shape;
    if (!otc_shape_is_batched(xs) || xs.ndim != 4 || ys.ndim != 4) return false;
    if (v->stride_h > 1 || v->stride_w > 1 || v->dilation_h > 1 || v->dilation_w > 1) return false;
    otc_conv1_geometry o = {.C = xs.dim[1],
                            .H = xs.dim[2],
                            .W = xs.dim[3],
                            .OC = ys.dim[1],
                            .OH = ys.dim[2],
                            .OW = ys.dim[3],
                            .KH = v->kernel_h,
                            .KW = v->kernel_w,
                            .ph = v->pad_h,
                            .pw = v->pad_w,
                            .G = v->groups > 0 ? v->groups : 1,
                            .U = 1};
    for (int64_t u = OTC_CONV1_CHANNELS; u > 1; u--)
        if ((o.OC / o.G) % u == 0) {
            o.U = u;
            break;
        }
    *out = o;
    return true;
}

otc_status otc_plan_lower(const otc_plan *plan, otc_id id, bool backward, otc_loop_program **out) {
    const otc_node *nd = otc_graph_node(plan->graph, id);
    bool needs[OTC_LOOP_MAX_BUFS] = {false};
    for (int i = 0; nd && i < nd->n_inputs && i < OTC_LOOP_MAX_BUFS; i++)
        needs[i] = plan->values[nd->inputs[i]].needs_grad;
    return otc_loop_lower(plan->graph, id, backward, needs, out);
}

void otc_loop_program_free(otc_loop_program *p) {
    if (!p) return;
    free(p->stmt);
    free(p);
}

/* ---- text ---- */

static void index_text(otc_text *t, const otc_loop_index *ix) {
    otc_text_printf(t, "%" PRId64, ix->base);
    for (int d = 0; d < OTC_LOOP_MAX_DEPTH; d++)
        if (ix->stride[d]) otc_text_printf(t, " + %" PRId64 "*i%d", ix->stride[d], d);
}

static void buf_text(otc_text *t, const otc_loop_program *p, int n) {
    otc_text_printf(t, "%s%d", p->buf[n].grad ? "g" : "v", (int)p->buf[n].node);
}

static void operand_text(otc_text *t, const otc_loop_program *p, const otc_loop_operand *o) {
    switch (o->kind) {
    case OTC_LOOP_LOAD:
        buf_text(t, p, o->n);
        otc_text_puts(t, "[");
        index_text(t, &o->at);
        otc_text_puts(t, "]");
        break;
    case OTC_LOOP_LOCAL:
        otc_text_printf(t, "l%d", o->n);
        break;
    case OTC_LOOP_VAR:
        otc_text_printf(t, "i%d", o->n);
        break;
    case OTC_LOOP_CONST:
        otc_text_printf(t, "%.9g", (double)o->k);
        break;
    case OTC_LOOP_SAMPLES:
        otc_text_puts(t, "samples");
        break;
    case OTC_LOOP_SUM:
        otc_text_printf(t, "sum%d", o->n);
        break;
    case OTC_LOOP_NONE:
        otc_text_puts(t, "-");
        break;
    }
}

char *otc_loop_program_text(const otc_loop_program *p) {
    static const char *const section[] = {"before", "body", "after"};
    static const char *const kind[] = {"for", "end",   "let",   "store",
                                       "add", "sumup", "check", "when"};
    otc_text t;
    otc_text_init(&t);
    otc_text_printf(&t, "%s #%d (%s)\n", p->backward ? "backward" : "forward", (int)p->node,
                    p->batched ? "per sample" : "once");
    int depth = 0, loops = 0; /* open blocks, open loops (a loop's variable is its number) */
    bool is_when[2 * OTC_LOOP_MAX_DEPTH] = {false};
    for (int i = 0; i < p->n_stmts; i++) {
        const otc_loop_stmt *s = &p->stmt[i];
        if (s->kind == OTC_LOOP_END && depth > 0 && !is_when[--depth]) loops--;
        otc_text_printf(&t, "%-6s %*s%s", section[s->section], 2 * depth, "", kind[s->kind]);
        switch (s->kind) {
        case OTC_LOOP_FOR:
            otc_text_printf(&t, " i%d < %" PRId64, loops++, s->count);
            if (depth < 2 * OTC_LOOP_MAX_DEPTH) is_when[depth++] = false;
            break;
        case OTC_LOOP_END:
            break;
        case OTC_LOOP_LET:
            otc_text_printf(&t, " l%d", s->n);
            break;
        case OTC_LOOP_STORE:
        case OTC_LOOP_ADD:
            otc_text_puts(&t, " ");
            buf_text(&t, p, s->n);
            otc_text_puts(&t, "[");
            index_text(&t, &s->at);
            otc_text_puts(&t, "]");
            break;
        case OTC_LOOP_SUMUP:
            otc_text_printf(&t, " sum%d", s->n);
            break;
        case OTC_LOOP_CHECK:
            break;
        case OTC_LOOP_WHEN:
            otc_text_puts(&t, " 0 <= ");
            index_text(&t, &s->at);
            otc_text_printf(&t, " < %" PRId64, s->count);
            if (depth < 2 * OTC_LOOP_MAX_DEPTH) is_when[depth++] = true;
            break;
        }
        if (s->tree) {
            otc_text_puts(&t, " (");
            if (s->x.kind) {
                otc_text_puts(&t, "x=");
                operand_text(&t, p, &s->x);
                otc_text_puts(&t, s->x1.kind || s->n_operands ? ", " : "");
            }
            if (s->x1.kind) {
                otc_text_puts(&t, "x1=");
                operand_text(&t, p, &s->x1);
                otc_text_puts(&t, s->n_operands ? ", " : "");
            }
            for (int k = 0; k < s->n_operands; k++) {
                if (k) otc_text_puts(&t, ", ");
                operand_text(&t, p, &s->operand[k]);
            }
            otc_text_puts(&t, ")");
        }
        otc_text_puts(&t, "\n");
    }
    return otc_text_take(&t);
}
