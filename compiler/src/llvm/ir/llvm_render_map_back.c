/* The backward of fused map and matmul-epilogue members: a run of backward steps of one
 * kernel becomes one loop nest (each step touches only its own element and sample), with the
 * parameter-gradient sums over the batch in vector accumulators finished after the loop. */
#include <stdlib.h>

#include "llvm_render.h"
#include "plan_internal.h"

#define B      (r->ir.b)
#define PV(id) (&r->plan->values[otc_plan_owner(r->plan, (id))])

static LLVMValueRef konst(otc_llvm_r *r, bool vec, double v) {
    return otc_llvm_const(vec ? r->vec : r->ir.f32, v);
}

static bool needs_grad(otc_llvm_r *r, otc_id id) {
    return PV(id)->needs_grad;
}

/* grad(x)[e] += v (x's own element e at the current chunk); = v when the plan says this rule
 * is that gradient's first writer (otc_plan_step.stores). */
static void add_grad(otc_llvm_r *r, otc_id x, LLVMValueRef e, LLVMValueRef v, bool kb, bool store) {
    if (!needs_grad(r, x)) return;
    LLVMValueRef ptr = otc_lv_at(r, otc_lv_grad_base(r, x), e, kb && PV(x)->batched);
    if (store)
        otc_lv_store(r, v, ptr);
    else
        otc_lv_accumulate(r, ptr, v);
}

/* Accumulators of one fused group: sums over the batch, finished after the chunk loop. */
typedef struct {
    LLVMValueRef slot; /* <W x float> */
    otc_id param;      /* whose gradient receives it */
    int64_t index;     /* element of that parameter, or -1: element e */
    float scale;       /* multiplied after the sum (a Neuron's response) */
} reduction;

static LLVMValueRef sel(otc_llvm_r *r, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b,
                        LLVMValueRef yes, LLVMValueRef no) {
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, p, a, b, ""), yes, no, "");
}

/* g[i] = d agg / d t[i] in every lane, as the interpreter's otc_agg_grad: product, the product
 * of the others (prefix times suffix); min, max, maxabs, 1 at the first input picked; median,
 * the middle of the sort with equal values ordered by position (a rank per input: those below
 * it, and those equal to it before it), a half each when k is even; mean 1/k. */
static void agg_grads(otc_llvm_r *r, int agg, const LLVMValueRef *t, int k, LLVMValueRef *g) {
    LLVMValueRef one = konst(r, true, 1.0), zero = konst(r, true, 0.0);
    switch (agg) {
    case OTC_AGG_PRODUCT: {
        LLVMValueRef s = one, p = one;
        for (int i = k - 1; i >= 0; i--) {
            g[i] = s;
            s = LLVMBuildFMul(B, s, t[i], "");
        }
        for (int i = 0; i < k; i++) {
            g[i] = LLVMBuildFMul(B, g[i], p, "");
            p = LLVMBuildFMul(B, p, t[i], "");
        }
        return;
    }
    case OTC_AGG_MIN:
    case OTC_AGG_MAX:
    case OTC_AGG_MAXABS: {
        /* the picked input's index (as a float) in each lane: strict comparisons keep the
         * first of equals */
        LLVMValueRef best = t[0], idx = zero;
        if (agg == OTC_AGG_MAXABS) best = otc_llvm_intrinsic(&r->ir, "llvm.fabs", &best, 1);
        for (int i = 1; i < k; i++) {
            LLVMValueRef v = t[i];
            if (agg == OTC_AGG_MAXABS) v = otc_llvm_intrinsic(&r->ir, "llvm.fabs", &v, 1);
            LLVMRealPredicate p = agg == OTC_AGG_MIN ? LLVMRealOLT : LLVMRealOGT;
            idx = sel(r, p, v, best, konst(r, true, i), idx);
            best = sel(r, p, v, best, v, best);
        }
        for (int i = 0; i < k; i++) g[i] = sel(r, LLVMRealOEQ, idx, konst(r, true, i), one, zero);
        return;
    }
    case OTC_AGG_MEDIAN:
        if (k <= 2) break; /* the median of one or two inputs is their mean */
        for (int i = 0; i < k; i++) {
            LLVMValueRef rank = zero;
            for (int j = 0; j < k; j++) {
                if (j == i) continue;
                LLVMValueRef below =
                    sel(r, j < i ? LLVMRealOLE : LLVMRealOLT, t[j], t[i], one, zero);
                rank = LLVMBuildFAdd(B, rank, below, "");
            }
            if (k % 2) {
                g[i] = sel(r, LLVMRealOEQ, rank, konst(r, true, k / 2), one, zero);
            } else {
                LLVMValueRef half = konst(r, true, 0.5);
                g[i] = sel(r, LLVMRealOEQ, rank, konst(r, true, k / 2 - 1), half,
                           sel(r, LLVMRealOEQ, rank, konst(r, true, k / 2), half, zero));
            }
        }
        return;
    default:
        break;
    }
    for (int i = 0; i < k; i++) g[i] = konst(r, true, 1.0 / k); /* the mean */
}

static bool act_reads(const otc_node *nd, otc_ex_op leaf) {
    const otc_act_info *a = otc_act_get((otc_act)otc_lv_act_of(nd));
    return a && otc_expr_reads(a->df, leaf);
}

static void member_backward(otc_llvm_r *r, otc_id id, unsigned stores, LLVMValueRef e, bool kb,
                            reduction *red, int *n_red) {
    const otc_node *nd = otc_graph_node(r->g, id);
    LLVMTypeRef T = kb ? r->vec : r->ir.f32;
    LLVMValueRef g = otc_lv_load(r, T, otc_lv_at(r, otc_lv_grad_base(r, id), e, kb));
    const otc_id *in = nd->inputs;
    switch (nd->op) {
    case OTC_OP_ROW_BROADCAST: {
        if (!needs_grad(r, in[0])) return;
        if (kb) {
            reduction *rd = &red[(*n_red)++];
            otc_lv_accumulate(r, rd->slot, otc_lv_masked(r, g));
            rd->param = in[0];
            rd->index = -1;
            rd->scale = 1.0f;
        } else {
            int64_t vn = PV(in[0])->size, n = r->plan->kernels[r->kernel].n;
            LLVMValueRef idx = n <= vn ? e : LLVMBuildURem(B, e, otc_lv_i64(r, vn), "");
            otc_lv_accumulate(r, otc_lv_gep(r, otc_lv_grad_base(r, in[0]), idx), g);
        }
        return;
    }
    case OTC_OP_NEURON: {
        LLVMValueRef zero = konst(r, true, 0.0);
        LLVMValueRef x =
            r->plan->values[id].has_pre ? otc_lv_load(r, r->vec, otc_lv_pre_ptr(r, id)) : zero;
        LLVMValueRef y = act_reads(nd, OTC_EX_Y) ? otc_lv_stored(r, id, e, true) : zero;
        LLVMValueRef d =
            LLVMBuildFMul(B, g, otc_llvm_act_grad_call(&r->ir, nd->act, nd->alpha, x, y), "");
        LLVMValueRef dm = otc_lv_masked(r, d);
        if (otc_expr_reads(otc_act_get((otc_act)nd->act)->df, OTC_EX_DIV))
            d = dm; /* as below: no NaN from the lanes past the batch into the sources */
        if (needs_grad(r, in[1])) {
            reduction *rd = &red[(*n_red)++];
            otc_lv_accumulate(r, rd->slot, dm);
            rd->param = in[1];
            rd->index = 0;
            rd->scale = 1.0f;
        }
        bool gw = needs_grad(r, in[0]);
        int k = nd->n_inputs - 2;
        /* Another aggregation than the sum: each input's share d agg / d t_i of the gradient. */
        LLVMValueRef *share = NULL;
        if (nd->agg != OTC_AGG_SUM && k > 0) {
            LLVMValueRef *t = malloc(sizeof *t * (size_t)k);
            share = malloc(sizeof *share * (size_t)k);
            if (!t || !share) {
                free(t);
                free(share);
                otc_lv_fail(r, OTC_ERR_NOMEM, "out of memory rendering a neuron's backward");
                return;
            }
            for (int i = 0; i < k; i++)
                t[i] = LLVMBuildFMul(B, otc_lv_weight(r, in[0], i, true),
                                     otc_lv_stored(r, in[2 + i], otc_lv_i64(r, nd->cols[i]), true),
                                     "");
            agg_grads(r, nd->agg, t, k, share);
            free(t);
        }
        for (int i = 2; i < nd->n_inputs; i++) {
            LLVMValueRef col = otc_lv_i64(r, nd->cols[i - 2]);
            LLVMValueRef di = share ? LLVMBuildFMul(B, d, share[i - 2], "") : d;
            LLVMValueRef dmi = share ? LLVMBuildFMul(B, dm, share[i - 2], "") : dm;
            if (gw) {
                reduction *rd = &red[(*n_red)++];
                otc_lv_accumulate(r, rd->slot,
                                  LLVMBuildFMul(B, dmi, otc_lv_stored(r, in[i], col, true), ""));
                rd->param = in[0];
                rd->index = i - 2;
                rd->scale = nd->scale;
            }
            if (needs_grad(r, in[i])) {
                LLVMValueRef f = LLVMBuildFMul(B, konst(r, true, nd->scale),
                                               otc_lv_weight(r, in[0], i - 2, true), "");
                add_grad(r, in[i], col, LLVMBuildFMul(B, di, f, ""), true, false);
            }
        }
        free(share);
        return;
    }
    default: {
        int act = otc_lv_act_of(nd);
        LLVMValueRef zero = konst(r, kb, 0.0);
        if (act >= 0) { /* through the activation's derivative function */
            LLVMValueRef x = act_reads(nd, OTC_EX_X) ? otc_lv_stored(r, in[0], e, kb) : zero;
            LLVMValueRef y = act_reads(nd, OTC_EX_Y) ? otc_lv_stored(r, id, e, kb) : zero;
            LLVMValueRef d = otc_llvm_act_grad_call(&r->ir, act, nd->alpha, x, y);
            LLVMValueRef gd = LLVMBuildFMul(B, g, d, "");
            /* A derivative that divides (sqrt's 0.5 / y) is inf in the lanes past the batch,
             * where y is 0, and 0 * inf is NaN there: those lanes carry no gradient. */
            if (kb && otc_expr_reads(otc_act_get((otc_act)act)->df, OTC_EX_DIV))
                gd = otc_lv_masked(r, gd);
            add_grad(r, in[0], e, gd, kb, stores & 1u);
            return;
        }
        if (!otc_op_map_expr(nd->op)) break;
        /* An elementwise op: the incoming gradient times its derivative by each input. */
        for (int i = 0; i < nd->n_inputs && i < 2; i++) {
            const otc_expr *d = otc_op_grad_expr(nd->op, i);
            if (!d || !needs_grad(r, in[i])) continue;
            otc_llvm_leaves leaves = {
                .x = otc_expr_reads(d, OTC_EX_X) ? otc_lv_stored(r, in[0], e, kb) : NULL,
                .x1 = otc_expr_reads(d, OTC_EX_X1) ? otc_lv_stored(r, in[1], e, kb) : NULL,
                .y = otc_expr_reads(d, OTC_EX_Y) ? otc_lv_stored(r, id, e, kb) : NULL,
                .a = konst(r, kb, otc_node_param(nd)),
                .mask = kb ? r->mask : NULL};
            LLVMValueRef gi;
            if (otc_expr_is_const(d, 1.0))
                gi = g;
            else if (otc_expr_is_const(d, -1.0))
                gi = LLVMBuildFNeg(B, g, "");
            else
                gi = LLVMBuildFMul(B, g, otc_llvm_expr(&r->ir, d, kb ? r->vec : r->ir.f32, &leaves),
                                   "");
            add_grad(r, in[i], e, gi, kb, (stores >> i) & 1u);
        }
        return;
    }
    }
    char lab[64];
    otc_lv_fail(r, OTC_ERR_UNSUPPORTED, "no backward for op '%s' (node %s)",
                otc_op_get(nd->op) ? otc_op_get(nd->op)->name : "?",
                otc_graph_node_label(r->g, id, lab, sizeof lab));
}

/* How many sums over the batch a member's backward needs. */
static int reductions_of(otc_llvm_r *r, otc_id id) {
    const otc_node *nd = otc_graph_node(r->g, id);
    if (nd->op == OTC_OP_ROW_BROADCAST) return needs_grad(r, nd->inputs[0]) ? 1 : 0;
    if (nd->op != OTC_OP_NEURON) return 0;
    return (needs_grad(r, nd->inputs[1]) ? 1 : 0) +
           (needs_grad(r, nd->inputs[0]) ? nd->n_inputs - 2 : 0);
}

void otc_lv_map_backward(otc_llvm_r *r, int from, int to) {
    const otc_plan *p = r->plan;
    const otc_plan_kernel *K = &p->kernels[r->kernel];
    bool kb = K->batched;
    int cap = 0;
    for (int s = from; s < to; s++) cap += reductions_of(r, p->steps[s].node);
    reduction *red = calloc((size_t)cap + 1, sizeof *red);
    if (!red) {
        otc_lv_fail(r, OTC_ERR_NOMEM, "out of memory");
        return;
    }
    otc_llvm_loop le = {0}, lc = {0};
    LLVMValueRef e = otc_lv_i64(r, 0);
    if (K->n > 1) {
        otc_lv_loop_begin(r, &le, otc_lv_i64(r, K->n));
        e = le.i;
    }
    if (kb) {
        /* Vector accumulators (promoted to registers). Measured: keeping them in a scratch
         * buffer instead costs more compile time (the optimiser tries to promote them), not
         * less. */
        for (int i = 0; i < cap; i++) {
            red[i].slot = otc_lv_slot(r, r->vec);
            otc_lv_store(r, konst(r, true, 0.0), red[i].slot);
        }
        otc_lv_chunks_begin(r, &lc);
    }
    int n_red = 0;
    for (int s = from; s < to && !r->st; s++)
        member_backward(r, p->steps[s].node, p->steps[s].stores, e, kb, red, &n_red);
    if (kb) {
        otc_lv_chunks_end(r, &lc);
        for (int i = 0; i < n_red; i++) {
            LLVMValueRef sum = otc_lv_hsum(r, otc_lv_load(r, r->vec, red[i].slot));
            if (red[i].scale != 1.0f)
                sum = LLVMBuildFMul(B, LLVMConstReal(r->ir.f32, red[i].scale), sum, "");
            LLVMValueRef idx = red[i].index < 0 ? e : otc_lv_i64(r, red[i].index);
            otc_lv_accumulate(r, otc_lv_gep(r, otc_lv_grad_base(r, red[i].param), idx), sum);
        }
    }
    if (K->n > 1) otc_lv_loop_end(r, &le);
    free(red);
}
