/* The LLVM renderer's fused kernels, forward: map kernels (elementwise ops, row broadcasts,
 * Neurons) and matmul kernels with their elementwise epilogue (register-blocked products,
 * column mode for small batches, OpenBLAS for large ones). */
#include <stdlib.h>

#include "llvm_render.h"

#define B      (r->ir.b)
#define PV(id) (&r->plan->values[otc_plan_owner(r->plan, (id))])

static LLVMValueRef konst(otc_llvm_r *r, bool vec, double v) {
    return otc_llvm_const(vec ? r->vec : r->ir.f32, v);
}

/* Column mode: lanes j < valid of the columns e + j. */
static LLVMValueRef lane_index(otc_llvm_r *r, int j) {
    return LLVMConstInt(r->ir.i32, (unsigned)j, 0);
}

/* base[e .. e + valid) as a vector (the rest zero): a masked load past the last column. */
static LLVMValueRef load_lanes(otc_llvm_r *r, LLVMValueRef ptr, int valid) {
    if (valid == r->o.lanes) return otc_lv_load(r, r->vec, ptr);
    LLVMValueRef bits[64];
    for (int j = 0; j < r->o.lanes; j++) bits[j] = LLVMConstInt(r->ir.i1, j < valid, 0);
    LLVMTypeRef types[2] = {r->vec, r->ir.ptr};
    unsigned iid = LLVMLookupIntrinsicID("llvm.masked.load", 16);
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(r->ir.mod, iid, types, 2);
    LLVMValueRef args[4] = {ptr, LLVMConstInt(r->ir.i32, 4, 0),
                            LLVMConstVector(bits, (unsigned)r->o.lanes), LLVMConstNull(r->vec)};
    return LLVMBuildCall2(B, LLVMIntrinsicGetType(r->ir.ctx, iid, types, 2), f, args, 4, "");
}

/* The batch stride: in column mode a constant, one vector (column mode runs for fewer samples
 * than half a vector, and the stride is the batch rounded up to whole vectors), so the
 * gathers' and scatters' addresses are constant offsets. */
static LLVMValueRef stride(otc_llvm_r *r) {
    return r->colmode ? otc_lv_i64(r, r->o.forms == OTC_LV_FORMS_UNIT ? 1 : r->o.lanes)
                      : r->a[OTC_LA_STRIDE];
}

/* A batched value's columns e + j of sample col_b (one vector apart: column mode's stride),
 * gathered by one masked gather at constant offsets from the first (the lane-by-lane loads
 * became gathers on 64-bit index vectors rebuilt, and spilled, per block). */
static LLVMValueRef gather_cols(otc_llvm_r *r, LLVMValueRef base, LLVMValueRef e) {
    int W = r->o.lanes;
    LLVMValueRef first =
        otc_lv_gep(r, base, LLVMBuildAdd(B, LLVMBuildMul(B, e, stride(r), ""), r->col_b, ""));
    /* One contiguous sample: the columns are side by side. */
    if (r->o.forms == OTC_LV_FORMS_UNIT) return load_lanes(r, first, r->col_valid);
    LLVMValueRef offs[64], bits[64];
    for (int j = 0; j < W; j++) {
        offs[j] = LLVMConstInt(r->ir.i32, (unsigned long long)j * (unsigned long long)W, 0);
        bits[j] = LLVMConstInt(r->ir.i1, j < r->col_valid, 0);
    }
    LLVMValueRef idx = LLVMConstVector(offs, (unsigned)W);
    LLVMValueRef ptrs = LLVMBuildInBoundsGEP2(B, r->ir.f32, first, &idx, 1, "");
    LLVMTypeRef types[2] = {r->vec, LLVMVectorType(r->ir.ptr, (unsigned)W)};
    unsigned iid = LLVMLookupIntrinsicID("llvm.masked.gather", 18);
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(r->ir.mod, iid, types, 2);
    LLVMValueRef args[4] = {ptrs, LLVMConstInt(r->ir.i32, 4, 0), LLVMConstVector(bits, (unsigned)W),
                            LLVMConstNull(r->vec)};
    return LLVMBuildCall2(B, LLVMIntrinsicGetType(r->ir.ctx, iid, types, 2), f, args, 4, "");
}

static void scatter_cols(otc_llvm_r *r, LLVMValueRef base, LLVMValueRef e, LLVMValueRef v) {
    LLVMValueRef S = stride(r);
    if (r->o.forms == OTC_LV_FORMS_UNIT && r->col_valid == r->o.lanes) {
        otc_lv_store(r, v, otc_lv_gep(r, base, LLVMBuildAdd(B, e, r->col_b, "")));
        return;
    }
    for (int j = 0; j < r->col_valid; j++) {
        LLVMValueRef col = LLVMBuildAdd(B, e, otc_lv_i64(r, j), "");
        LLVMValueRef idx = LLVMBuildAdd(B, LLVMBuildMul(B, col, S, ""), r->col_b, "");
        otc_lv_store(r, LLVMBuildExtractElement(B, v, lane_index(r, j), ""),
                     otc_lv_gep(r, base, idx));
    }
}

/* A stored value at element e (memory only, never a local). */
LLVMValueRef otc_lv_stored(otc_llvm_r *r, otc_id id, LLVMValueRef e, bool kb) {
    const otc_plan_value *v = PV(id);
    LLVMValueRef base = otc_lv_value_base(r, id);
    if (r->colmode)
        return v->batched ? gather_cols(r, base, e)
                          : load_lanes(r, otc_lv_gep(r, base, e), r->col_valid);
    if (v->batched) return otc_lv_load(r, r->vec, otc_lv_at(r, base, e, true));
    LLVMValueRef p = otc_lv_gep(r, base, e);
    LLVMValueRef s = v->storage == OTC_STORE_PARAM ? otc_lv_load_weight(r, r->ir.f32, p)
                                                   : otc_lv_load(r, r->ir.f32, p);
    return kb ? otc_lv_splat(r, s) : s;
}

/* The value of id for a member of the current kernel: its local when the kernel computed it,
 * else from memory. */
static LLVMValueRef operand(otc_llvm_r *r, otc_id id, LLVMValueRef e, bool kb) {
    otc_id o = otc_plan_owner(r->plan, id);
    if (r->plan->values[o].kernel == r->kernel && r->local[o]) return r->local[o];
    if (r->plan->values[o].storage == OTC_STORE_REGISTER) {
        char lab[64];
        otc_lv_fail(r, OTC_ERR_STATE, "register %s read outside its kernel",
                    otc_graph_node_label(r->g, o, lab, sizeof lab));
        return konst(r, kb, 0.0);
    }
    return otc_lv_stored(r, id, e, kb);
}

LLVMValueRef otc_lv_weight(otc_llvm_r *r, otc_id param, int64_t i, bool kb) {
    LLVMValueRef s = otc_lv_load_weight(
        r, r->ir.f32, otc_lv_gep(r, otc_lv_value_base(r, param), otc_lv_i64(r, i)));
    return kb ? otc_lv_splat(r, s) : s;
}

/* Denominators in the padding rows become 1, so padding never holds inf or NaN (whose
 * products with the padding's zero gradients would poison the sums over the batch). */
LLVMValueRef otc_lv_safe_divisor(otc_llvm_r *r, LLVMValueRef y, bool kb) {
    if (!kb || !r->mask) return y;
    return LLVMBuildSelect(B, r->mask, y, konst(r, true, 1.0), "");
}

LLVMValueRef otc_lv_pre_ptr(otc_llvm_r *r, otc_id id) {
    LLVMValueRef base = otc_lv_work_at(r, r->plan->values[id].pre);
    return otc_lv_at(r, base, otc_lv_i64(r, 0), true);
}

int otc_lv_act_of(const otc_node *nd) {
    if (nd->op == OTC_OP_NEURON) return nd->act;
    const otc_op_info *info = otc_op_get(nd->op);
    return info ? info->act : -1;
}

/* Lanes where a < b (a > b with gt) take a, the others b. */
static LLVMValueRef pick(otc_llvm_r *r, bool gt, LLVMValueRef ka, LLVMValueRef kb, LLVMValueRef a,
                         LLVMValueRef b) {
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, gt ? LLVMRealOGT : LLVMRealOLT, ka, kb, ""), a, b,
                           "");
}

/* A non-sum aggregation of the weighted inputs t[0..k), k >= 1, in every lane, with the
 * semantics of otc/ops.h otc_agg (the interpreter's are runtime/src/core/aggregations.c). The
 * median sorts t in place by odd-even transposition: k rounds of compare-exchanges, which
 * need no branches across lanes (the plan bounds k by OTC_PLAN_MEDIAN_MAX). */
static LLVMValueRef aggregate(otc_llvm_r *r, int agg, LLVMValueRef *t, int k) {
    LLVMValueRef acc = t[0];
    switch (agg) {
    case OTC_AGG_PRODUCT:
        for (int i = 1; i < k; i++) acc = LLVMBuildFMul(B, acc, t[i], "");
        return acc;
    case OTC_AGG_MIN:
    case OTC_AGG_MAX:
        /* Strict comparisons keep the first of equal inputs, as Python's min and max. */
        for (int i = 1; i < k; i++) acc = pick(r, agg == OTC_AGG_MAX, t[i], acc, t[i], acc);
        return acc;
    case OTC_AGG_MAXABS: {
        LLVMValueRef best = otc_llvm_intrinsic(&r->ir, "llvm.fabs", &t[0], 1);
        for (int i = 1; i < k; i++) {
            LLVMValueRef a = otc_llvm_intrinsic(&r->ir, "llvm.fabs", &t[i], 1);
            acc = pick(r, true, a, best, t[i], acc);
            best = pick(r, true, a, best, a, best);
        }
        return acc;
    }
    case OTC_AGG_MEDIAN:
        /* The median of one or two inputs is their mean. */
        if (k <= 2) return aggregate(r, OTC_AGG_MEAN, t, k);
        for (int round = 0; round < k; round++)
            for (int j = round % 2; j + 1 < k; j += 2) {
                LLVMValueRef lo = pick(r, false, t[j + 1], t[j], t[j + 1], t[j]);
                LLVMValueRef hi = pick(r, false, t[j + 1], t[j], t[j], t[j + 1]);
                t[j] = lo;
                t[j + 1] = hi;
            }
        if (k % 2) return t[k / 2];
        return LLVMBuildFDiv(B, LLVMBuildFAdd(B, t[k / 2 - 1], t[k / 2], ""), konst(r, true, 2.0),
                             "");
    default: /* mean */
        for (int i = 1; i < k; i++) acc = LLVMBuildFAdd(B, acc, t[i], "");
        return LLVMBuildFDiv(B, acc, konst(r, true, (double)k), "");
    }
}

static LLVMValueRef neuron_value(otc_llvm_r *r, otc_id id) {
    const otc_node *nd = otc_graph_node(r->g, id);
    int k = nd->n_inputs - 2;
    /* The interpreter's order: sum from 0 source by source, then bias + scale * sum. */
    LLVMValueRef acc = konst(r, true, nd->agg == OTC_AGG_PRODUCT ? 1.0 : 0.0);
    if (nd->agg != OTC_AGG_SUM && k > 0) {
        LLVMValueRef *t = malloc(sizeof *t * (size_t)k);
        if (!t) {
            otc_lv_fail(r, OTC_ERR_NOMEM, "out of memory rendering a neuron");
            return acc;
        }
        for (int i = 0; i < k; i++)
            t[i] =
                LLVMBuildFMul(B, otc_lv_weight(r, nd->inputs[0], i, true),
                              operand(r, nd->inputs[2 + i], otc_lv_i64(r, nd->cols[i]), true), "");
        acc = aggregate(r, nd->agg, t, k);
        free(t);
    }
    for (int i = 2; i < nd->n_inputs && nd->agg == OTC_AGG_SUM; i++) {
        LLVMValueRef w = otc_lv_weight(r, nd->inputs[0], i - 2, true);
        LLVMValueRef x = operand(r, nd->inputs[i], otc_lv_i64(r, nd->cols[i - 2]), true);
        /* Rounded twice, as the interpreter's acc += w * x. */
        acc = otc_llvm_mul_add(&r->ir, w, x, acc);
    }
    LLVMValueRef bias = otc_lv_weight(r, nd->inputs[1], 0, true);
    /* A response of 1 (NEAT's usual) multiplies nothing: 1 * acc is acc for every value but a
     * signalling NaN, which the add quiets the same way, so the sum's bits are the same; ~5%
     * fewer instructions for the fast tier's code generator to select. */
    LLVMValueRef pre = nd->scale == 1.0f
                           ? LLVMBuildFAdd(B, acc, bias, "")
                           : otc_llvm_mul_add(&r->ir, konst(r, true, nd->scale), acc, bias);
    if (r->plan->values[id].has_pre) otc_lv_store(r, pre, otc_lv_pre_ptr(r, id));
    return otc_llvm_act_call(&r->ir, nd->act, nd->alpha, pre);
}

static LLVMValueRef member_value(otc_llvm_r *r, otc_id id, LLVMValueRef e, bool kb) {
    const otc_node *nd = otc_graph_node(r->g, id);
    LLVMValueRef a = NULL, b = NULL;
    if (nd->op == OTC_OP_NEURON) return neuron_value(r, id);
    if (nd->op == OTC_OP_ROW_BROADCAST) {
        /* Element e of the result is v[e mod |v|]. */
        int64_t vn = PV(nd->inputs[0])->size, n = r->plan->kernels[r->kernel].n;
        LLVMValueRef idx = n <= vn ? e : LLVMBuildURem(B, e, otc_lv_i64(r, vn), "");
        otc_id o = otc_plan_owner(r->plan, nd->inputs[0]);
        if (r->plan->values[o].kernel == r->kernel && r->local[o] && n <= vn) return r->local[o];
        return otc_lv_stored(r, nd->inputs[0], idx, kb);
    }
    int64_t from = 0;
    if (otc_plan_slice_member(r->plan, id, &from)) {
        /* Its input's element e + from; a slice from 0 may read a local of this kernel. */
        if (from == 0) return operand(r, nd->inputs[0], e, kb);
        return otc_lv_stored(r, nd->inputs[0], LLVMBuildAdd(B, e, otc_lv_i64(r, from), ""), kb);
    }
    if (nd->n_inputs > 0) a = operand(r, nd->inputs[0], e, kb);
    if (nd->n_inputs > 1) b = operand(r, nd->inputs[1], e, kb);
    int act = otc_lv_act_of(nd);
    if (act >= 0) return otc_llvm_act_call(&r->ir, act, nd->alpha, a);
    const otc_expr *value = otc_op_map_expr(nd->op);
    if (!value) {
        char lab[64];
        otc_lv_fail(r, OTC_ERR_UNSUPPORTED, "op '%s' (node %s) in a map kernel",
                    otc_op_get(nd->op) ? otc_op_get(nd->op)->name : "?",
                    otc_graph_node_label(r->g, id, lab, sizeof lab));
        return konst(r, kb, 0.0);
    }
    otc_llvm_leaves leaves = {
        .x = a, .x1 = b, .a = konst(r, kb, otc_node_param(nd)), .mask = kb ? r->mask : NULL};
    return otc_llvm_expr(&r->ir, value, kb ? r->vec : r->ir.f32, &leaves);
}

/* Members [from, count) of kernel k at element e of the current chunk: locals, stores. */
static void members(otc_llvm_r *r, const otc_plan_kernel *K, int from, LLVMValueRef e) {
    for (int m = from; m < K->count && !r->st; m++) {
        otc_id id = r->plan->members[K->first + m];
        LLVMValueRef v = member_value(r, id, e, K->batched);
        r->local[id] = v;
        if (r->plan->values[id].storage != OTC_STORE_WORK) continue;
        if (r->colmode)
            scatter_cols(r, otc_lv_value_base(r, id), e, v);
        else
            otc_lv_store(r, v, otc_lv_at(r, otc_lv_value_base(r, id), e, K->batched));
    }
}

static void clear_locals(otc_llvm_r *r, const otc_plan_kernel *K) {
    for (int m = 0; m < K->count; m++) r->local[r->plan->members[K->first + m]] = NULL;
}

/* The batched members over every chunk, G chunks per iteration as one <G*W x float> value
 * (each instruction becomes G independent vector instructions side by side: G times the
 * parallelism for a kernel whose chain of neurons is longer than the out-of-order window),
 * then the last nchunks mod G chunks at W lanes. */
/* Plans with more kernel members than this run every map kernel one chunk per iteration: the
 * chunk groups spell each member twice (the group, then the rest), which doubles the code LLVM
 * compiles; past a few thousand members that costs seconds of compile time (a 4,000-neuron
 * chain: 3.2 s grouped, 1.4 s not), more than the grouping's speed-up buys in most runs. */
enum { GROUP_MAX_PLAN_MEMBERS = 2048 };

static void chunk_groups(otc_llvm_r *r, const otc_plan_kernel *K, LLVMValueRef e, int g) {
    int w = r->o.lanes;
    LLVMTypeRef vec = r->vec;
    r->o.lanes = g * w;
    r->vec = LLVMVectorType(r->ir.f32, (unsigned)(g * w));
    otc_llvm_loop lg = {0}, lc = {0};
    LLVMValueRef groups = LLVMBuildUDiv(B, r->nchunks, otc_lv_i64(r, g), "groups");
    otc_lv_loop_begin(r, &lg, groups);
    otc_lv_set_chunk(r, lg.i);
    members(r, K, 0, e);
    clear_locals(r, K);
    otc_lv_loop_end(r, &lg);
    r->o.lanes = w;
    r->vec = vec;
    LLVMValueRef done = LLVMBuildMul(B, groups, otc_lv_i64(r, g), "");
    otc_lv_loop_begin(r, &lc, LLVMBuildSub(B, r->nchunks, done, ""));
    otc_lv_set_chunk(r, LLVMBuildAdd(B, done, lc.i, ""));
    members(r, K, 0, e);
    clear_locals(r, K);
    otc_lv_loop_end(r, &lc);
    r->chunk = r->chunk_off = r->mask = NULL;
}

static void map_batched(otc_llvm_r *r, int k) {
    const otc_plan_kernel *K = &r->plan->kernels[k];
    otc_llvm_loop le = {0}, lc = {0};
    LLVMValueRef e = otc_lv_i64(r, 0);
    if (K->n > 1) {
        otc_lv_loop_begin(r, &le, otc_lv_i64(r, K->n));
        e = le.i;
    }
    if (K->batched && r->o.chunk_group > 1 && r->o.chunk_group * r->o.lanes <= 64 &&
        r->plan->n_members <= GROUP_MAX_PLAN_MEMBERS) {
        chunk_groups(r, K, e, r->o.chunk_group);
    } else {
        if (K->batched) otc_lv_chunks_begin(r, &lc);
        members(r, K, 0, e);
        clear_locals(r, K);
        if (K->batched) otc_lv_chunks_end(r, &lc);
    }
    if (K->n > 1) otc_lv_loop_end(r, &le);
}

/* Output columns computed together: a block of accumulators reuses each loaded input chunk
 * across columns (register blocking), so the loop is bound by multiply-adds, not loads. The
 * block is the plan's (otc_plan_tiling); these bound it. */
#define MM_COLS   12
#define MM_CHUNKS 4

/* What both register-blocked forms of the product (matmul_block, matmul_cols) read. */
typedef struct {
    otc_id mm;                    /* the MatMul: the kernel's first member */
    bool w_param;                 /* W is a parameter (its loads are marked invariant) */
    int64_t kd, n;                /* inner size, output columns */
    LLVMValueRef abase, wbase, S; /* A's and W's storage, the batch stride */
} mm_operands;

static mm_operands mm_operands_of(otc_llvm_r *r, const otc_plan_kernel *K) {
    const otc_plan *p = r->plan;
    mm_operands o;
    o.mm = p->members[K->first];
    const otc_node *nd = otc_graph_node(r->g, o.mm);
    otc_id A = otc_plan_owner(p, nd->inputs[0]), W = otc_plan_owner(p, nd->inputs[1]);
    o.w_param = p->values[W].storage == OTC_STORE_PARAM;
    o.kd = p->values[A].size;
    o.n = K->n;
    o.abase = otc_lv_value_base(r, A);
    o.wbase = otc_lv_value_base(r, W);
    o.S = stride(r);
    return o;
}

/* The q a block sums over: every q from zero, the epilogue after (whole), or a panel
 * [q0, q0 + count) resumed from the product's storage and written back to it (panel). */
typedef struct {
    LLVMValueRef q0, count;
    bool panel;
} mm_span;

/* A register block of the product: `cols` output columns from e0 times `nch` chunks of
 * samples from chunk0 over the span's q, each input vector and weight loaded once for the
 * whole block; then the epilogue per column and chunk (whole), or the sums stored (panel). */
static void matmul_block(otc_llvm_r *r, const otc_plan_kernel *K, const mm_span *sp,
                         LLVMValueRef e0, int cols, LLVMValueRef chunk0, int nch) {
    mm_operands mo = mm_operands_of(r, K);
    LLVMValueRef off[MM_CHUNKS], slots[MM_CHUNKS][MM_COLS], sums[MM_CHUNKS][MM_COLS];
    LLVMValueRef out = otc_lv_value_base(r, mo.mm);
    for (int c = 0; c < nch; c++) {
        LLVMValueRef ch = LLVMBuildAdd(B, chunk0, otc_lv_i64(r, c), "");
        off[c] = LLVMBuildMul(B, ch, otc_lv_i64(r, r->o.lanes), "");
        for (int j = 0; j < cols; j++) {
            slots[c][j] = otc_lv_slot(r, r->vec);
            if (sp->panel) { /* where the sums are resumed from and written back to */
                LLVMValueRef e = LLVMBuildAdd(B, e0, otc_lv_i64(r, j), "");
                sums[c][j] =
                    otc_lv_gep(r, out, LLVMBuildAdd(B, LLVMBuildMul(B, e, mo.S, ""), off[c], ""));
            }
            otc_lv_store(r, sp->panel ? otc_lv_load(r, r->vec, sums[c][j]) : konst(r, true, 0.0),
                         slots[c][j]);
        }
    }
    otc_llvm_loop lk = {0};
    otc_lv_loop_begin(r, &lk, sp->count);
    LLVMValueRef q = LLVMBuildAdd(B, sp->q0, lk.i, "q");
    LLVMValueRef arow = otc_lv_gep(r, mo.abase, LLVMBuildMul(B, q, mo.S, ""));
    LLVMValueRef wrow = otc_lv_gep(r, mo.wbase, LLVMBuildMul(B, q, otc_lv_i64(r, mo.n), ""));
    LLVMValueRef x[MM_CHUNKS];
    for (int c = 0; c < nch; c++) x[c] = otc_lv_load(r, r->vec, otc_lv_gep(r, arow, off[c]));
    for (int j = 0; j < cols; j++) {
        LLVMValueRef wp = otc_lv_gep(r, wrow, LLVMBuildAdd(B, e0, otc_lv_i64(r, j), ""));
        LLVMValueRef w = otc_lv_splat(r, mo.w_param ? otc_lv_load_weight(r, r->ir.f32, wp)
                                                    : otc_lv_load(r, r->ir.f32, wp));
        for (int c = 0; c < nch; c++) {
            LLVMValueRef acc = otc_lv_load(r, r->vec, slots[c][j]);
            otc_lv_store(r, otc_llvm_mul_add(&r->ir, x[c], w, acc), slots[c][j]);
        }
    }
    otc_lv_loop_end(r, &lk);
    if (sp->panel) {
        for (int c = 0; c < nch; c++)
            for (int j = 0; j < cols; j++)
                otc_lv_store(r, otc_lv_load(r, r->vec, slots[c][j]), sums[c][j]);
        return;
    }
    for (int c = 0; c < nch && !r->st; c++) {
        otc_lv_set_chunk(r, LLVMBuildAdd(B, chunk0, otc_lv_i64(r, c), ""));
        for (int j = 0; j < cols && !r->st; j++) {
            LLVMValueRef e = LLVMBuildAdd(B, e0, otc_lv_i64(r, j), "");
            LLVMValueRef acc = otc_lv_load(r, r->vec, slots[c][j]);
            r->local[mo.mm] = acc;
            otc_lv_store(r, acc, otc_lv_at(r, otc_lv_value_base(r, mo.mm), e, true));
            members(r, K, 1, e);
            clear_locals(r, K);
        }
    }
    r->chunk = r->chunk_off = r->mask = NULL;
}

/* Every block of the product over the span: blocks of `tall` times the plan's columns, then
 * of the plan's (tc) for the columns left, then single columns; each block `tv` chunks of
 * samples (the plan's vectors), and the chunks short of a block one at a time. */
static void matmul_blocks(otc_llvm_r *r, const otc_plan_kernel *K, const mm_span *sp, int tall) {
    int tc = K->tiling.cols < 1 ? 1 : K->tiling.cols > MM_COLS ? MM_COLS : K->tiling.cols;
    int tv = K->tiling.vectors < 1           ? 1
             : K->tiling.vectors > MM_CHUNKS ? MM_CHUNKS
                                             : K->tiling.vectors;
    int widths[3] = {tc * tall > MM_COLS ? MM_COLS : tc * tall, tc, 1};
    int64_t done = 0;
    for (int pass = 0; pass < 3; pass++) {
        int cols = widths[pass];
        int64_t count = (K->n - done) / cols;
        if ((pass > 0 && cols >= widths[pass - 1]) || count <= 0) continue;
        otc_llvm_loop lb = {0}, lp = {0};
        otc_lv_loop_begin(r, &lb, otc_lv_i64(r, count));
        LLVMValueRef e0 = LLVMBuildMul(B, lb.i, otc_lv_i64(r, cols), "");
        if (done > 0) e0 = LLVMBuildAdd(B, e0, otc_lv_i64(r, done), "");
        LLVMValueRef pairs = LLVMBuildSDiv(B, r->nchunks, otc_lv_i64(r, tv), "");
        otc_lv_loop_begin(r, &lp, pairs);
        matmul_block(r, K, sp, e0, cols, LLVMBuildMul(B, lp.i, otc_lv_i64(r, tv), ""), tv);
        otc_lv_loop_end(r, &lp);
        if (tv > 1) {
            /* The chunks short of a block, one at a time. */
            otc_llvm_loop lo = {0};
            LLVMValueRef from = LLVMBuildMul(B, pairs, otc_lv_i64(r, tv), "");
            otc_lv_loop_begin(r, &lo, LLVMBuildSub(B, r->nchunks, from, ""));
            matmul_block(r, K, sp, e0, cols, LLVMBuildAdd(B, from, lo.i, ""), 1);
            otc_lv_loop_end(r, &lo);
        }
        otc_lv_loop_end(r, &lb);
        done += count * cols;
    }
}

/* The kernel's epilogue (its members after the product) as a map loop over the product in
 * memory: after a product written whole by OpenBLAS or panel by panel. */
static void epilogue_pass(otc_llvm_r *r, const otc_plan_kernel *K) {
    if (K->count == 1) return;
    otc_id mm = r->plan->members[K->first];
    otc_llvm_loop le = {0}, lc = {0};
    otc_lv_loop_begin(r, &le, otc_lv_i64(r, K->n));
    otc_lv_chunks_begin(r, &lc);
    r->local[mm] = otc_lv_load(r, r->vec, otc_lv_at(r, otc_lv_value_base(r, mm), le.i, true));
    members(r, K, 1, le.i);
    clear_locals(r, K);
    otc_lv_chunks_end(r, &lc);
    otc_lv_loop_end(r, &le);
}

/* The product in generated code: register blocks (independent multiply-add chains hide the
 * latency; each loaded vector and broadcast weight serves several of them) summing every q,
 * each followed by its epilogue on its columns. The plan's blocks, not tall ones: on 16 lanes
 * tall blocks ran the 8-128-64-32-1 MLP and the 121 x 121 substrate 5-10% faster at batch 256
 * but took the MLP's fast-tier compile from 66 to 106 ms of CPU. */
static void matmul_whole(otc_llvm_r *r, int k) {
    const otc_plan_kernel *K = &r->plan->kernels[k];
    mm_span whole = {otc_lv_i64(r, 0), otc_lv_i64(r, mm_operands_of(r, K).kd), false};
    matmul_blocks(r, K, &whole, 1);
}

/* The product in panels of q (otc_plan_tiling.panels), blocks OTC_PLAN_TALL times as many
 * columns where vectors are 16 lanes (32 registers), then the epilogue over the product.
 * Without panels, the 1089 x 1089 substrate layer at batch 256 read all of A (1.1 MB) from
 * L2 again for every block of columns: 30-34 us/sample against 18-19 in panels. */
static void matmul_panels(otc_llvm_r *r, int k) {
    const otc_plan_kernel *K = &r->plan->kernels[k];
    mm_operands mo = mm_operands_of(r, K);
    /* q per panel: OTC_PLAN_PANEL_FLOATS floats of A, at least OTC_PLAN_PANEL_MIN q. */
    LLVMValueRef S = r->a[OTC_LA_STRIDE], kd = otc_lv_i64(r, mo.kd);
    LLVMValueRef qn = LLVMBuildSDiv(B, otc_lv_i64(r, OTC_PLAN_PANEL_FLOATS), S, "");
    LLVMValueRef least = otc_lv_i64(r, OTC_PLAN_PANEL_MIN);
    qn = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, qn, least, ""), least, qn, "qn");
    LLVMValueRef panels = LLVMBuildSDiv(
        B, LLVMBuildAdd(B, kd, LLVMBuildSub(B, qn, otc_lv_i64(r, 1), ""), ""), qn, "panels");
    /* The first panel resumes from zeros. */
    LLVMBuildMemSet(B, otc_lv_value_base(r, mo.mm),
                    LLVMConstInt(LLVMInt8TypeInContext(r->ir.ctx), 0, 0),
                    LLVMBuildMul(B, S, otc_lv_i64(r, mo.n * (int64_t)sizeof(float)), ""), 4);
    otc_llvm_loop lq = {0};
    otc_lv_loop_begin(r, &lq, panels);
    mm_span sp = {LLVMBuildMul(B, lq.i, qn, "q0"), NULL, true};
    LLVMValueRef left = LLVMBuildSub(B, kd, sp.q0, "");
    sp.count = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, left, qn, ""), left, qn, "");
    matmul_blocks(r, K, &sp, r->o.lanes >= 16 ? OTC_PLAN_TALL : 1);
    otc_lv_loop_end(r, &lq);
    epilogue_pass(r, K);
}

/* The product through OpenBLAS (node-major: C[N,S] = W^T[N,K] A[K,S]), then the epilogue
 * as a map loop over the product. */
static void matmul_blas(otc_llvm_r *r, int k) {
    const otc_plan *p = r->plan;
    const otc_plan_kernel *K = &p->kernels[k];
    otc_id mm = p->members[K->first];
    const otc_node *nd = otc_graph_node(r->g, mm);
    otc_id A = otc_plan_owner(p, nd->inputs[0]), W = otc_plan_owner(p, nd->inputs[1]);
    int64_t kd = p->values[A].size, n = K->n;
    LLVMValueRef S = r->a[OTC_LA_STRIDE];
    otc_lv_sgemm(r, true, false, otc_lv_i64(r, n), S, otc_lv_i64(r, kd), otc_lv_value_base(r, W),
                 otc_lv_i64(r, n), otc_lv_value_base(r, A), S, 0.0f, otc_lv_value_base(r, mm), S);
    epilogue_pass(r, K);
}

/* nb blocks of output columns from e (W lanes each, the last `last` lanes) of sample col_b:
 * the sums along the contiguous rows of W with one accumulator per block (independent
 * chains, so the loop is not bound by the multiply-add latency), then the epilogue. */
/* Eight chains: with four the loop waited on the adds (an LSTM 32->128 step at batch 1 ran
 * about 8% faster with eight; the sums are the same, column by column). Sixteen where vectors
 * are 16 lanes wide (AVX-512, 32 vector registers: the sixteen sums, the broadcast input and
 * room to spare; 16-register machines keep eight): each row of W is then read in runs of 1 KB
 * instead of 512 bytes, and the LSTM step, whose 320 KB of weights stream from L2 at every
 * step, ran about 8% faster again. */
#define COL_BLOCKS 16

static int col_blocks(const otc_llvm_r *r) {
    return r->o.lanes >= 16 ? COL_BLOCKS : COL_BLOCKS / 2;
}

static void matmul_cols(otc_llvm_r *r, const otc_plan_kernel *K, LLVMValueRef e, int nb, int last,
                        bool store_sum) {
    mm_operands mo = mm_operands_of(r, K);
    LLVMValueRef acc[COL_BLOCKS];
    for (int j = 0; j < nb; j++) {
        acc[j] = otc_lv_slot(r, r->vec);
        otc_lv_store(r, konst(r, true, 0.0), acc[j]);
    }
    otc_llvm_loop lk = {0};
    otc_lv_loop_begin(r, &lk, otc_lv_i64(r, mo.kd));
    LLVMValueRef ai = LLVMBuildAdd(B, LLVMBuildMul(B, lk.i, mo.S, ""), r->col_b, "");
    LLVMValueRef a = otc_lv_splat(r, otc_lv_load(r, r->ir.f32, otc_lv_gep(r, mo.abase, ai)));
    LLVMValueRef wrow = otc_lv_gep(
        r, mo.wbase, LLVMBuildAdd(B, LLVMBuildMul(B, lk.i, otc_lv_i64(r, mo.n), ""), e, ""));
    for (int j = 0; j < nb; j++) {
        LLVMValueRef wp = otc_lv_gep(r, wrow, otc_lv_i64(r, (int64_t)j * r->o.lanes));
        LLVMValueRef w = load_lanes(r, wp, j == nb - 1 ? last : r->o.lanes);
        otc_lv_store(r, otc_llvm_mul_add(&r->ir, a, w, otc_lv_load(r, r->vec, acc[j])), acc[j]);
    }
    otc_lv_loop_end(r, &lk);
    for (int j = 0; j < nb && !r->st; j++) {
        LLVMValueRef ej = LLVMBuildAdd(B, e, otc_lv_i64(r, (int64_t)j * r->o.lanes), "");
        r->col_valid = j == nb - 1 ? last : r->o.lanes;
        r->local[mo.mm] = otc_lv_load(r, r->vec, acc[j]);
        if (store_sum) scatter_cols(r, otc_lv_value_base(r, mo.mm), ej, r->local[mo.mm]);
        members(r, K, 1, ej);
        clear_locals(r, K);
    }
}

/* The padding samples of the kernel's stored members get zeros (the batched path computes
 * them from zero inputs): a training plan's backward sums over the stride rely on them being
 * finite. Column mode runs at a stride of one vector (fewer samples than lanes), so one store
 * per element clears a row. A plan without a backward sums over no padding (its buffers start
 * zeroed, and column mode leaves the padding as it was): clearing there cost an LSTM 32->128
 * step at batch 1 four 32 KB passes of stores, an eighth of its time. */
static void clear_padding(otc_llvm_r *r, const otc_plan_kernel *K) {
    if (!r->plan->options.train) return;
    otc_llvm_loop lz = {0};
    for (int m = 0; m < K->count; m++) {
        otc_id id = r->plan->members[K->first + m];
        if (r->plan->values[id].storage != OTC_STORE_WORK) continue;
        otc_lv_loop_begin(r, &lz, otc_lv_i64(r, K->n));
        LLVMValueRef row = otc_lv_gep(r, otc_lv_value_base(r, id),
                                      LLVMBuildMul(B, lz.i, otc_lv_i64(r, r->o.lanes), ""));
        otc_lv_store(r, LLVMConstNull(r->vec), row);
        otc_lv_loop_end(r, &lz);
    }
}

/* Whether anything reads kernel k's product (its first member) from memory: a member of
 * another kernel, an output or a state step, a backward, or value() (which refuses a value
 * whose kernel is not the last and whose readers all ran before the last kernel, since its
 * space may be shared). The epilogue reads it from its register. */
static bool sum_read_from_memory(const otc_llvm_r *r, int k) {
    const otc_plan *p = r->plan;
    otc_id mm = p->members[p->kernels[k].first];
    const otc_plan_value *v = &p->values[mm];
    if (p->options.train || v->kept || p->options.loss == mm) return true;
    for (int i = 0; i < otc_graph_output_count(r->g); i++)
        if (otc_plan_owner(p, otc_graph_output(r->g, i)) == mm) return true;
    int last_kernel = -1;
    for (int i = 0; i < p->n_forward_steps; i++) {
        const otc_plan_step *s = &p->steps[i];
        if (s->kind == OTC_STEP_KERNEL) last_kernel = i;
        if (s->kind == OTC_STEP_STATE &&
            otc_plan_owner(p, otc_graph_node(r->g, s->node)->inputs[0]) == mm)
            return true;
    }
    if (v->last_step >= last_kernel) return true;
    for (int i = 0; i < p->n_members; i++) {
        otc_id id = p->members[i];
        const otc_node *nd = otc_graph_node(r->g, id);
        if (p->values[id].kernel == k) continue;
        for (int s = 0; s < nd->n_inputs; s++)
            if (otc_plan_owner(p, nd->inputs[s]) == mm) return true;
    }
    return false;
}

/* Batches smaller than a vector waste lanes when vectorised along samples: run them one
 * sample at a time with the lanes along W's rows instead. The product is scattered to its
 * stride-apart slots only when read from there: an LSTM 32->128 step at batch 1 spent about
 * an eighth of its time storing its two products' 1,024 sums, one cache line each, that
 * nothing read. */
static void matmul_colmode(otc_llvm_r *r, int k) {
    const otc_plan_kernel *K = &r->plan->kernels[k];
    int64_t n = K->n, W = r->o.lanes, full = n / W, tail = n % W;
    int cb = col_blocks(r);
    int64_t groups = full / cb, rest = full % cb;
    otc_llvm_loop lb = {0}, lg = {0};
    bool store_sum = sum_read_from_memory(r, k);
    clear_padding(r, K);
    r->colmode = true;
    otc_lv_loop_begin(r, &lb, r->a[OTC_LA_BATCH]);
    r->col_b = lb.i;
    if (groups > 0) {
        otc_lv_loop_begin(r, &lg, otc_lv_i64(r, groups));
        matmul_cols(r, K, LLVMBuildMul(B, lg.i, otc_lv_i64(r, W * cb), ""), cb, (int)W, store_sum);
        otc_lv_loop_end(r, &lg);
    }
    /* The remaining full blocks and the partial one, together. */
    int nb = (int)rest + (tail > 0 ? 1 : 0);
    if (nb > 0)
        matmul_cols(r, K, otc_lv_i64(r, groups * W * cb), nb, tail > 0 ? (int)tail : (int)W,
                    store_sum);
    otc_lv_loop_end(r, &lb);
    r->colmode = false;
    r->col_b = NULL;
}

/* Column mode needs every member from `from` on (a matmul's epilogue: from 1) to be an elementwise
 * op of this kernel (a kept pre-activation would want per-sample stores it does not make). */
static bool colmode_ok(const otc_llvm_r *r, const otc_plan_kernel *K, int from) {
    if (r->o.lanes < 4) return false;
    for (int m = from; m < K->count; m++) {
        otc_id id = r->plan->members[K->first + m];
        if (r->plan->values[id].has_pre) return false;
        if (otc_graph_node(r->g, id)->op == OTC_OP_NEURON) return false;
    }
    return true;
}

/* A map kernel in column mode: per sample, blocks of lanes along the elements (gathered
 * from and scattered to the sample's stride-apart slots). At batch 1 the batched form runs one
 * element per vector: an LSTM 32->128 step spent a third of its time in sigmoid and tanh on
 * 16-lane vectors holding one value each. */
static void map_colmode(otc_llvm_r *r, int k) {
    const otc_plan_kernel *K = &r->plan->kernels[k];
    int64_t n = K->n, W = r->o.lanes, full = n / W, tail = n % W;
    clear_padding(r, K);
    r->colmode = true;
    otc_llvm_loop lb = {0}, lf = {0};
    otc_lv_loop_begin(r, &lb, r->a[OTC_LA_BATCH]);
    r->col_b = lb.i;
    if (full > 0) {
        r->col_valid = (int)W;
        otc_lv_loop_begin(r, &lf, otc_lv_i64(r, full));
        members(r, K, 0, LLVMBuildMul(B, lf.i, otc_lv_i64(r, W), ""));
        clear_locals(r, K);
        otc_lv_loop_end(r, &lf);
    }
    if (tail > 0) {
        r->col_valid = (int)tail;
        members(r, K, 0, otc_lv_i64(r, full * W));
        clear_locals(r, K);
    }
    otc_lv_loop_end(r, &lb);
    r->colmode = false;
    r->col_b = NULL;
}

/* Column mode for a map kernel: batched, its members elementwise (colmode_ok), every row
 * broadcast reading the vector's elements in order (no wrap inside a block of lanes), and a
 * plan small enough that rendering its map kernels twice costs little compile time. */
static bool map_colmode_ok(const otc_llvm_r *r, const otc_plan_kernel *K) {
    if (!K->batched || r->plan->n_members > GROUP_MAX_PLAN_MEMBERS || !colmode_ok(r, K, 0))
        return false;
    for (int m = 0; m < K->count; m++) {
        const otc_node *nd = otc_graph_node(r->g, r->plan->members[K->first + m]);
        if (nd->op == OTC_OP_ROW_BROADCAST && PV(nd->inputs[0])->size < K->n) return false;
    }
    return true;
}

void otc_lv_map_kernel(otc_llvm_r *r, int k) {
    if (map_colmode_ok(r, &r->plan->kernels[k]))
        otc_lv_by_batch(r, k, map_colmode, map_batched);
    else
        map_batched(r, k);
}

/* Large products (otc_lv_blas_min_stride; the stride decides at run time) go to OpenBLAS
 * where vectors are 8 lanes wide, and run in panels where they are 16: Debian's OpenBLAS runs
 * its AVX2 kernels there, and the panels were faster on every shape measured (thread CPU
 * time, forward, one thread: the 1089 x 1089 substrate at batch 256 18-19 vs 26-28
 * us/sample; 784-512-512-10 at 64 13-14 vs 17; 1024-1024-1024 at 256 40-42 vs 48-52;
 * 256-512-256 at 256 4.2-4.4 vs 6.6-6.9, at 1024 5.8-7.6 vs 6.8-7.1). */
static void matmul_batched(otc_llvm_r *r, int k) {
    const otc_plan *p = r->plan;
    const otc_plan_kernel *K = &p->kernels[k];
    otc_id mm = p->members[K->first];
    const otc_node *nd = otc_graph_node(r->g, mm);
    int64_t kd = p->values[otc_plan_owner(p, nd->inputs[0])].size, n = K->n;
    bool wide = r->o.lanes >= 16;
    if (wide && K->tiling.panels) { /* panels at every stride: no branch */
        matmul_panels(r, k);
        return;
    }
    otc_lv_by_stride(r, otc_lv_blas_min_stride(r, kd, n, OTC_LV_PRODUCT_FORWARD),
                     wide ? matmul_panels : matmul_blas,
                     K->tiling.panels ? matmul_panels : matmul_whole, k);
}

bool otc_lv_kernel_has_few_form(const otc_llvm_r *r, int k) {
    const otc_plan_kernel *K = &r->plan->kernels[k];
    if (K->kind == OTC_KERNEL_MAP) return map_colmode_ok(r, K);
    return K->kind == OTC_KERNEL_MATMUL && colmode_ok(r, K, 1);
}

void otc_lv_matmul_kernel(otc_llvm_r *r, int k) {
    if (colmode_ok(r, &r->plan->kernels[k], 1))
        otc_lv_by_batch(r, k, matmul_colmode, matmul_batched);
    else
        matmul_batched(r, k);
}
