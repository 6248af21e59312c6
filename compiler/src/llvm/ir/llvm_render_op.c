/* The LLVM renderer's single-op kernels and their backward: sums and means, the losses (MSE,
 * BCE, softmax cross-entropy) and softmaxes along the last axis; the structural ops are in
 * llvm_render_struct.c. Every sum over the batch leaves the padding samples out. */
#include <stdlib.h>
#include <string.h>

#include "llvm_render.h"

#define B      (r->ir.b)
#define PV(id) (&r->plan->values[otc_plan_owner(r->plan, (id))])

static LLVMValueRef konst(otc_llvm_r *r, bool vec, double v) {
    return otc_llvm_const(vec ? r->vec : r->ir.f32, v);
}

static LLVMValueRef ld(otc_llvm_r *r, otc_id id, LLVMValueRef e) {
    bool kb = PV(id)->batched;
    return otc_lv_load(r, kb ? r->vec : r->ir.f32, otc_lv_at(r, otc_lv_value_base(r, id), e, kb));
}

static LLVMValueRef gptr(otc_llvm_r *r, otc_id id, LLVMValueRef e) {
    return otc_lv_at(r, otc_lv_grad_base(r, id), e, PV(id)->batched);
}

/* Elements of a value over all samples, as a float (size, or size * B when batched). */
static LLVMValueRef count_of(otc_llvm_r *r, otc_id id) {
    const otc_plan_value *v = PV(id);
    LLVMValueRef n = LLVMConstReal(r->ir.f32, (double)v->size);
    if (!v->batched) return n;
    return LLVMBuildFMul(B, n, LLVMBuildSIToFP(B, r->a[OTC_LA_BATCH], r->ir.f32, ""), "");
}

/* The loop over every element of a value of `size` per sample: e outside, chunks inside
 * when batched. */
typedef struct {
    otc_llvm_loop le, lc;
    bool batched;
} walk;

static LLVMValueRef walk_begin(otc_llvm_r *r, walk *w, int64_t size, bool batched) {
    memset(w, 0, sizeof *w);
    w->batched = batched;
    otc_lv_loop_begin(r, &w->le, otc_lv_i64(r, size));
    if (batched) otc_lv_chunks_begin(r, &w->lc);
    return w->le.i;
}

static void walk_end(otc_llvm_r *r, walk *w) {
    if (w->batched) otc_lv_chunks_end(r, &w->lc);
    otc_lv_loop_end(r, &w->le);
}

/* The leaves of a mean loss's trees at element e: the prediction x and the target t. */
static otc_llvm_leaves loss_leaves(otc_llvm_r *r, otc_id x, otc_id t, LLVMValueRef e,
                                   const otc_expr *tree, const otc_expr *tree2) {
    bool kb = PV(x)->batched;
    bool rx = otc_expr_reads(tree, OTC_EX_X) || otc_expr_reads(tree2, OTC_EX_X);
    bool rt = otc_expr_reads(tree, OTC_EX_X1) || otc_expr_reads(tree2, OTC_EX_X1);
    return (otc_llvm_leaves){.x = rx ? ld(r, x, e) : NULL,
                             .x1 = t >= 0 && rt ? ld(r, t, e) : NULL,
                             .mask = kb ? r->mask : NULL};
}

/* Sum over all elements (padding excluded) of x, or of the per-element loss tree of x and
 * t. */
static LLVMValueRef total(otc_llvm_r *r, const otc_expr *term, otc_id x, otc_id t) {
    const otc_plan_value *v = PV(x);
    bool kb = v->batched;
    LLVMTypeRef T = kb ? r->vec : r->ir.f32;
    LLVMValueRef acc = otc_lv_slot(r, T);
    otc_lv_store(r, konst(r, kb, 0.0), acc);
    walk w;
    LLVMValueRef e = walk_begin(r, &w, v->size, kb);
    LLVMValueRef val;
    if (term) {
        otc_llvm_leaves leaves = loss_leaves(r, x, t, e, term, NULL);
        val = otc_llvm_expr(&r->ir, term, T, &leaves);
    } else {
        val = ld(r, x, e);
    }
    otc_lv_accumulate(r, acc, otc_lv_masked(r, val));
    walk_end(r, &w);
    LLVMValueRef s = otc_lv_load(r, T, acc);
    return kb ? otc_lv_hsum(r, s) : s;
}

/* ---- softmax family: rows of C along the last axis ---- */

/* A row of C values: node-major vectors of one chunk (batched) or C consecutive floats. */
typedef struct {
    otc_id id;
    LLVMValueRef rowe; /* element index of the row's first value (i64) */
    bool kb;
} row;

static LLVMValueRef row_at(otc_llvm_r *r, const row *w, LLVMValueRef c, bool grad) {
    LLVMValueRef e = LLVMBuildAdd(B, w->rowe, c, "");
    LLVMValueRef base = grad ? otc_lv_grad_base(r, w->id) : otc_lv_value_base(r, w->id);
    return otc_lv_at(r, base, e, w->kb);
}

static LLVMValueRef row_load(otc_llvm_r *r, const row *w, LLVMValueRef c) {
    return otc_lv_load(r, w->kb ? r->vec : r->ir.f32, row_at(r, w, c, false));
}

/* max over the row, then sum of exp(x - max). */
static void row_max_sum(otc_llvm_r *r, const row *x, int64_t C, LLVMValueRef *m, LLVMValueRef *s) {
    LLVMTypeRef T = x->kb ? r->vec : r->ir.f32;
    LLVMValueRef ms = otc_lv_slot(r, T), ss = otc_lv_slot(r, T);
    otc_lv_store(r, row_load(r, x, otc_lv_i64(r, 0)), ms);
    otc_lv_store(r, konst(r, x->kb, 0.0), ss);
    otc_llvm_loop l = {0};
    otc_lv_loop_begin(r, &l, otc_lv_i64(r, C - 1));
    LLVMValueRef v = row_load(r, x, LLVMBuildAdd(B, l.i, otc_lv_i64(r, 1), ""));
    LLVMValueRef cur = otc_lv_load(r, T, ms);
    otc_lv_store(r, LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, v, cur, ""), v, cur, ""), ms);
    otc_lv_loop_end(r, &l);
    *m = otc_lv_load(r, T, ms);
    otc_lv_loop_begin(r, &l, otc_lv_i64(r, C));
    LLVMValueRef ex = otc_llvm_exp(&r->ir, LLVMBuildFSub(B, row_load(r, x, l.i), *m, ""));
    otc_lv_accumulate(r, ss, ex);
    otc_lv_loop_end(r, &l);
    *s = otc_lv_load(r, T, ss);
}

/* Rows of a softmax-like op: per-sample rows (chunked when batched). Calls body per row. */
typedef void (*row_body)(otc_llvm_r *r, otc_id id, const row *x, const row *y, int64_t C);

static void for_rows(otc_llvm_r *r, otc_id id, otc_id xin, row_body body) {
    const otc_node *nd = otc_graph_node(r->g, id);
    const otc_plan_value *v = PV(id);
    int64_t C = nd->shape.ndim > 0 ? nd->shape.dim[nd->shape.ndim - 1] : 1;
    int64_t rows = v->size / C;
    otc_llvm_loop lr = {0}, lc = {0};
    otc_lv_loop_begin(r, &lr, otc_lv_i64(r, rows));
    if (v->batched) otc_lv_chunks_begin(r, &lc);
    row x = {xin, LLVMBuildMul(B, lr.i, otc_lv_i64(r, C), ""), v->batched};
    row y = {id, x.rowe, v->batched};
    body(r, id, &x, &y, C);
    if (v->batched) otc_lv_chunks_end(r, &lc);
    otc_lv_loop_end(r, &lr);
}

static void softmax_row(otc_llvm_r *r, otc_id id, const row *x, const row *y, int64_t C) {
    LLVMValueRef m, s;
    row_max_sum(r, x, C, &m, &s);
    LLVMValueRef inv = LLVMBuildFDiv(B, konst(r, x->kb, 1.0), s, "");
    otc_llvm_loop l = {0};
    otc_lv_loop_begin(r, &l, otc_lv_i64(r, C));
    LLVMValueRef ex = otc_llvm_exp(&r->ir, LLVMBuildFSub(B, row_load(r, x, l.i), m, ""));
    otc_lv_store(r, LLVMBuildFMul(B, ex, inv, ""), row_at(r, y, l.i, false));
    otc_lv_loop_end(r, &l);
}

static void log_softmax_row(otc_llvm_r *r, otc_id id, const row *x, const row *y, int64_t C) {
    LLVMValueRef m, s;
    row_max_sum(r, x, C, &m, &s);
    LLVMValueRef ls = otc_llvm_log(&r->ir, s);
    otc_llvm_loop l = {0};
    otc_lv_loop_begin(r, &l, otc_lv_i64(r, C));
    LLVMValueRef sh = LLVMBuildFSub(B, row_load(r, x, l.i), m, "");
    otc_lv_store(r, LLVMBuildFSub(B, sh, ls, ""), row_at(r, y, l.i, false));
    otc_lv_loop_end(r, &l);
}

/* dx += y * (g - sum(g * y)) */
static void softmax_row_back(otc_llvm_r *r, otc_id id, const row *x, const row *y, int64_t C) {
    LLVMTypeRef T = y->kb ? r->vec : r->ir.f32;
    row gy = *y;
    LLVMValueRef dot = otc_lv_slot(r, T);
    otc_lv_store(r, konst(r, y->kb, 0.0), dot);
    otc_llvm_loop l = {0};
    otc_lv_loop_begin(r, &l, otc_lv_i64(r, C));
    LLVMValueRef g = otc_lv_load(r, T, row_at(r, &gy, l.i, true));
    otc_lv_accumulate(r, dot, LLVMBuildFMul(B, g, row_load(r, y, l.i), ""));
    otc_lv_loop_end(r, &l);
    LLVMValueRef dv = otc_lv_load(r, T, dot);
    otc_lv_loop_begin(r, &l, otc_lv_i64(r, C));
    g = otc_lv_load(r, T, row_at(r, &gy, l.i, true));
    LLVMValueRef d = LLVMBuildFMul(B, row_load(r, y, l.i), LLVMBuildFSub(B, g, dv, ""), "");
    otc_lv_accumulate(r, row_at(r, x, l.i, true), d);
    otc_lv_loop_end(r, &l);
}

/* dx += g - exp(y) * sum(g) */
static void log_softmax_row_back(otc_llvm_r *r, otc_id id, const row *x, const row *y, int64_t C) {
    LLVMTypeRef T = y->kb ? r->vec : r->ir.f32;
    LLVMValueRef sum = otc_lv_slot(r, T);
    otc_lv_store(r, konst(r, y->kb, 0.0), sum);
    otc_llvm_loop l = {0};
    otc_lv_loop_begin(r, &l, otc_lv_i64(r, C));
    otc_lv_accumulate(r, sum, otc_lv_load(r, T, row_at(r, y, l.i, true)));
    otc_lv_loop_end(r, &l);
    LLVMValueRef sv = otc_lv_load(r, T, sum);
    otc_lv_loop_begin(r, &l, otc_lv_i64(r, C));
    LLVMValueRef g = otc_lv_load(r, T, row_at(r, y, l.i, true));
    LLVMValueRef ey = otc_llvm_exp(&r->ir, row_load(r, y, l.i));
    otc_lv_accumulate(r, row_at(r, x, l.i, true),
                      LLVMBuildFSub(B, g, LLVMBuildFMul(B, ey, sv, ""), ""));
    otc_lv_loop_end(r, &l);
}

/* ---- softmax cross-entropy: logits [M,C], labels [M] or [M,1] as floats ---- */

/* Per row (a chunk of samples, or one unbatched row): max, sum of exps, the label, and
 * whether the label is a class index (checked on real samples only). */
static void ce_row(otc_llvm_r *r, otc_id id, const row *x, int64_t C, LLVMValueRef *m,
                   LLVMValueRef *s, LLVMValueRef *lbl, LLVMValueRef rowi) {
    const otc_node *nd = otc_graph_node(r->g, id);
    row_max_sum(r, x, C, m, s);
    /* Labels: one per sample (batched, element 0) or per row (unbatched, element rowi). */
    *lbl = ld(r, nd->inputs[1], x->kb ? otc_lv_i64(r, 0) : rowi);
}

static void check_labels(otc_llvm_r *r, otc_id id, LLVMValueRef lbl, int64_t C, bool kb) {
    LLVMValueRef fl = otc_llvm_intrinsic(&r->ir, "llvm.floor", &lbl, 1);
    LLVMValueRef ok = LLVMBuildAnd(
        B, LLVMBuildFCmp(B, LLVMRealOGE, lbl, konst(r, kb, 0.0), ""),
        LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealOLT, lbl, konst(r, kb, (double)C), ""),
                     LLVMBuildFCmp(B, LLVMRealOEQ, lbl, fl, ""), ""),
        "");
    if (kb) {
        ok = LLVMBuildOr(B, ok, LLVMBuildNot(B, r->mask, ""), "");
        LLVMTypeRef vt = LLVMTypeOf(ok);
        unsigned iid = LLVMLookupIntrinsicID("llvm.vector.reduce.and", 22);
        LLVMValueRef f = LLVMGetIntrinsicDeclaration(r->ir.mod, iid, &vt, 1);
        LLVMTypeRef ft = LLVMIntrinsicGetType(r->ir.ctx, iid, &vt, 1);
        ok = LLVMBuildCall2(B, ft, f, &ok, 1, "");
    }
    LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "bad_label");
    LLVMBasicBlockRef good = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "labels_ok");
    LLVMBuildCondBr(B, ok, good, bad);
    LLVMPositionBuilderAtEnd(B, bad);
    LLVMBuildRet(B, LLVMConstInt(r->ir.i32, (unsigned long long)id + 1, 0));
    LLVMPositionBuilderAtEnd(B, good);
}

/* x[label] of the row, by comparing the label with every class (no gather). */
static LLVMValueRef pick(otc_llvm_r *r, const row *x, LLVMValueRef lbl, int64_t C) {
    LLVMTypeRef T = x->kb ? r->vec : r->ir.f32;
    LLVMValueRef acc = otc_lv_slot(r, T);
    otc_lv_store(r, konst(r, x->kb, 0.0), acc);
    otc_llvm_loop l = {0};
    otc_lv_loop_begin(r, &l, otc_lv_i64(r, C));
    LLVMValueRef c = LLVMBuildSIToFP(B, l.i, r->ir.f32, "");
    if (x->kb) c = otc_lv_splat(r, c);
    LLVMValueRef hit = LLVMBuildFCmp(B, LLVMRealOEQ, lbl, c, "");
    LLVMValueRef cur = otc_lv_load(r, T, acc);
    otc_lv_store(r, LLVMBuildSelect(B, hit, row_load(r, x, l.i), cur, ""), acc);
    otc_lv_loop_end(r, &l);
    return otc_lv_load(r, T, acc);
}

static void ce_dims(otc_llvm_r *r, otc_id id, int64_t *M, int64_t *C, bool *kb) {
    const otc_node *xn = otc_graph_node(r->g, otc_graph_node(r->g, id)->inputs[0]);
    *C = xn->shape.dim[1];
    *kb = otc_shape_is_batched(xn->shape);
    *M = *kb ? 1 : xn->shape.dim[0];
}

static void softmax_ce(otc_llvm_r *r, otc_id id, bool backward) {
    const otc_node *nd = otc_graph_node(r->g, id);
    int64_t M, C;
    bool kb;
    ce_dims(r, id, &M, &C, &kb);
    LLVMTypeRef T = kb ? r->vec : r->ir.f32;
    LLVMValueRef rows = kb ? LLVMBuildSIToFP(B, r->a[OTC_LA_BATCH], r->ir.f32, "")
                           : LLVMConstReal(r->ir.f32, (double)M);
    LLVMValueRef k = NULL, acc = NULL;
    if (backward) {
        LLVMValueRef g = otc_lv_load(r, r->ir.f32, otc_lv_grad_base(r, id));
        k = LLVMBuildFDiv(B, g, rows, "");
        if (kb) k = otc_lv_splat(r, k);
    } else {
        acc = otc_lv_slot(r, T);
        otc_lv_store(r, konst(r, kb, 0.0), acc);
    }
    otc_llvm_loop lr = {0}, lc = {0};
    otc_lv_loop_begin(r, &lr, otc_lv_i64(r, M));
    if (kb) otc_lv_chunks_begin(r, &lc);
    row x = {nd->inputs[0], LLVMBuildMul(B, lr.i, otc_lv_i64(r, C), ""), kb};
    LLVMValueRef m, s, lbl;
    ce_row(r, id, &x, C, &m, &s, &lbl, lr.i);
    if (!backward) {
        check_labels(r, id, lbl, C, kb);
        LLVMValueRef xl = pick(r, &x, lbl, C);
        LLVMValueRef l = LLVMBuildFAdd(B, LLVMBuildFSub(B, m, xl, ""), otc_llvm_log(&r->ir, s), "");
        otc_lv_accumulate(r, acc, otc_lv_masked(r, l));
    } else if (PV(nd->inputs[0])->needs_grad) {
        LLVMValueRef inv = LLVMBuildFDiv(B, konst(r, kb, 1.0), s, "");
        otc_llvm_loop l = {0};
        otc_lv_loop_begin(r, &l, otc_lv_i64(r, C));
        LLVMValueRef ex = otc_llvm_exp(&r->ir, LLVMBuildFSub(B, row_load(r, &x, l.i), m, ""));
        LLVMValueRef d = LLVMBuildFMul(B, LLVMBuildFMul(B, k, ex, ""), inv, "");
        LLVMValueRef c = LLVMBuildSIToFP(B, l.i, r->ir.f32, "");
        if (kb) c = otc_lv_splat(r, c);
        d = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, lbl, c, ""),
                            LLVMBuildFSub(B, d, k, ""), d, "");
        otc_lv_accumulate(r, row_at(r, &x, l.i, true), otc_lv_masked(r, d));
        otc_lv_loop_end(r, &l);
    }
    if (kb) otc_lv_chunks_end(r, &lc);
    otc_lv_loop_end(r, &lr);
    if (!backward) {
        LLVMValueRef sum = otc_lv_load(r, T, acc);
        if (kb) sum = otc_lv_hsum(r, sum);
        otc_lv_store(r, LLVMBuildFDiv(B, sum, rows, ""), otc_lv_value_base(r, id));
    }
}

void otc_lv_op_kernel(otc_llvm_r *r, int k) {
    otc_id id = r->plan->members[r->plan->kernels[k].first];
    const otc_node *nd = otc_graph_node(r->g, id);
    LLVMValueRef out = NULL;
    switch (nd->op) {
    case OTC_OP_SUM:
        out = total(r, NULL, nd->inputs[0], -1);
        break;
    case OTC_OP_MEAN:
        out = LLVMBuildFDiv(B, total(r, NULL, nd->inputs[0], -1), count_of(r, nd->inputs[0]), "");
        break;
    case OTC_OP_MSE:
    case OTC_OP_BCE:
        out = LLVMBuildFDiv(B, total(r, otc_op_loss_expr(nd->op), nd->inputs[0], nd->inputs[1]),
                            count_of(r, nd->inputs[0]), "");
        break;
    case OTC_OP_SOFTMAX_CE:
        softmax_ce(r, id, false);
        return;
    case OTC_OP_SOFTMAX:
        for_rows(r, id, nd->inputs[0], softmax_row);
        return;
    case OTC_OP_LOG_SOFTMAX:
        for_rows(r, id, nd->inputs[0], log_softmax_row);
        return;
    case OTC_OP_CONCAT:
        otc_lv_concat(r, id, false);
        return;
    case OTC_OP_SLICE:
    case OTC_OP_SELECT:
        otc_lv_take(r, id, false);
        return;
    case OTC_OP_MATMUL:
        otc_lv_matmul_plain(r, id, false);
        return;
    default: {
        char lab[64];
        otc_lv_fail(r, OTC_ERR_UNSUPPORTED, "op '%s' (node %s) has no LLVM kernel",
                    otc_op_get(nd->op) ? otc_op_get(nd->op)->name : "?",
                    otc_graph_node_label(r->g, id, lab, sizeof lab));
        return;
    }
    }
    otc_lv_store(r, out, otc_lv_value_base(r, id));
}

/* Sums, means and mean losses: grad(input i)[e] += k * d_i(e) over real samples only, k the
 * incoming gradient (sum) or it over the element count (mean, losses); d_i 1 or the loss's
 * derivative tree. */
static void loss_backward(otc_llvm_r *r, otc_id id) {
    const otc_node *nd = otc_graph_node(r->g, id);
    otc_id x = nd->inputs[0], t = nd->n_inputs > 1 ? nd->inputs[1] : -1;
    const otc_expr *d[2] = {otc_op_loss_grad_expr(nd->op, 0), otc_op_loss_grad_expr(nd->op, 1)};
    const bool loss = otc_op_loss_expr(nd->op) != NULL;
    bool gx = PV(x)->needs_grad, gt = t >= 0 && d[1] && PV(t)->needs_grad;
    if (!gx && !gt) return;
    bool kb = PV(x)->batched;
    LLVMTypeRef T = kb ? r->vec : r->ir.f32;
    LLVMValueRef g = otc_lv_load(r, r->ir.f32, otc_lv_grad_base(r, id));
    LLVMValueRef k = nd->op == OTC_OP_SUM ? g : LLVMBuildFDiv(B, g, count_of(r, x), "");
    LLVMValueRef kv = kb ? otc_lv_splat(r, k) : k;
    walk w;
    LLVMValueRef e = walk_begin(r, &w, PV(x)->size, kb);
    otc_llvm_leaves leaves = loss_leaves(r, x, t, e, gx ? d[0] : NULL, gt ? d[1] : NULL);
    for (int i = 0; i < 2; i++) {
        if (!(i == 0 ? gx : gt)) continue;
        LLVMValueRef di = kv;
        if (loss) di = LLVMBuildFMul(B, kv, otc_llvm_expr(&r->ir, d[i], T, &leaves), "");
        otc_lv_accumulate(r, gptr(r, i == 0 ? x : t, e), otc_lv_masked(r, di));
    }
    walk_end(r, &w);
}

void otc_lv_op_backward(otc_llvm_r *r, otc_id id) {
    const otc_node *nd = otc_graph_node(r->g, id);
    switch (nd->op) {
    case OTC_OP_SUM:
    case OTC_OP_MEAN:
    case OTC_OP_MSE:
    case OTC_OP_BCE:
        loss_backward(r, id);
        return;
    case OTC_OP_SOFTMAX_CE:
        softmax_ce(r, id, true);
        return;
    case OTC_OP_SOFTMAX:
        if (PV(nd->inputs[0])->needs_grad) for_rows(r, id, nd->inputs[0], softmax_row_back);
        return;
    case OTC_OP_LOG_SOFTMAX:
        if (PV(nd->inputs[0])->needs_grad) for_rows(r, id, nd->inputs[0], log_softmax_row_back);
        return;
    case OTC_OP_CONCAT:
        otc_lv_concat(r, id, true);
        return;
    case OTC_OP_SLICE:
    case OTC_OP_SELECT:
        otc_lv_take(r, id, true);
        return;
    case OTC_OP_MATMUL:
        otc_lv_matmul_plain(r, id, true);
        return;
    default: {
        char lab[64];
        otc_lv_fail(r, OTC_ERR_UNSUPPORTED, "op '%s' (node %s) has no LLVM backward",
                    otc_op_get(nd->op) ? otc_op_get(nd->op)->name : "?",
                    otc_graph_node_label(r->g, id, lab, sizeof lab));
    }
    }
}
