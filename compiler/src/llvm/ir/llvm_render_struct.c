/* The LLVM renderer's structural kernels: concat, slice and select as copies of element rows
 * (forward) and their accumulation (backward), MatMul of unbatched values, and the gradient
 * products of the batched MatMul (OpenBLAS for large ones). */
#include "llvm_render.h"

#define B      (r->ir.b)
#define PV(id) (&r->plan->values[otc_plan_owner(r->plan, (id))])

static LLVMValueRef konst(otc_llvm_r *r, bool vec, double v) {
    return otc_llvm_const(vec ? r->vec : r->ir.f32, v);
}

/* ---- concat, slice, select: copies of element runs (each a row of S floats) ---- */

static void split(const otc_node *nd, otc_shape s, int *axis, int64_t *outer, int64_t *mid,
                  int64_t *inner) {
    int a = nd->axis < 0 ? nd->axis + s.ndim : nd->axis;
    bool batched = otc_shape_is_batched(s);
    *outer = *mid = *inner = 1;
    for (int d = batched ? 1 : 0; d < s.ndim; d++) {
        if (d < a)
            *outer *= s.dim[d];
        else if (d == a)
            *mid = s.dim[d];
        else
            *inner *= s.dim[d];
    }
    *axis = a;
}

/* n elements from src element `from` to dst element `to` (copy, or += for gradients). */
static void move(otc_llvm_r *r, LLVMValueRef dst, LLVMValueRef to, LLVMValueRef src,
                 LLVMValueRef from, int64_t n, bool batched, bool add) {
    LLVMValueRef S = batched ? r->a[OTC_LA_STRIDE] : otc_lv_i64(r, 1);
    LLVMValueRef d = otc_lv_gep(r, dst, LLVMBuildMul(B, to, S, ""));
    LLVMValueRef s = otc_lv_gep(r, src, LLVMBuildMul(B, from, S, ""));
    LLVMValueRef count = LLVMBuildMul(B, otc_lv_i64(r, n), S, "");
    if (!add) {
        LLVMBuildMemCpy(B, d, 4, s, 4, LLVMBuildMul(B, count, otc_lv_i64(r, 4), ""));
        return;
    }
    otc_llvm_loop l = {0};
    otc_lv_loop_begin(r, &l, count);
    otc_lv_accumulate(r, otc_lv_gep(r, d, l.i), otc_lv_load(r, r->ir.f32, otc_lv_gep(r, s, l.i)));
    otc_lv_loop_end(r, &l);
}

void otc_lv_concat(otc_llvm_r *r, otc_id id, bool backward) {
    const otc_node *nd = otc_graph_node(r->g, id);
    int axis;
    int64_t outer, mid, inner;
    split(nd, nd->shape, &axis, &outer, &mid, &inner);
    bool kb = PV(id)->batched;
    int64_t out_row = mid * inner, off = 0;
    LLVMValueRef out = backward ? otc_lv_grad_base(r, id) : otc_lv_value_base(r, id);
    for (int i = 0; i < nd->n_inputs; i++) {
        const otc_node *xn = otc_graph_node(r->g, nd->inputs[i]);
        int ax;
        int64_t o2, m2, i2;
        split(nd, xn->shape, &ax, &o2, &m2, &i2);
        int64_t chunk = m2 * i2;
        if (!backward || PV(nd->inputs[i])->needs_grad) {
            LLVMValueRef x =
                backward ? otc_lv_grad_base(r, nd->inputs[i]) : otc_lv_value_base(r, nd->inputs[i]);
            otc_llvm_loop l = {0};
            otc_lv_loop_begin(r, &l, otc_lv_i64(r, outer));
            LLVMValueRef oe = LLVMBuildAdd(B, LLVMBuildMul(B, l.i, otc_lv_i64(r, out_row), ""),
                                           otc_lv_i64(r, off), "");
            LLVMValueRef xe = LLVMBuildMul(B, l.i, otc_lv_i64(r, chunk), "");
            if (backward)
                move(r, x, xe, out, oe, chunk, kb, true);
            else
                move(r, out, oe, x, xe, chunk, kb, false);
            otc_lv_loop_end(r, &l);
        }
        off += chunk;
    }
}

void otc_lv_take(otc_llvm_r *r, otc_id id, bool backward) {
    const otc_node *nd = otc_graph_node(r->g, id);
    const otc_node *xn = otc_graph_node(r->g, nd->inputs[0]);
    int axis;
    int64_t outer, mid, inner;
    split(nd, xn->shape, &axis, &outer, &mid, &inner);
    int64_t len = nd->op == OTC_OP_SLICE ? nd->len : 1;
    int64_t chunk = len * inner, skip = (int64_t)nd->start * inner;
    bool kb = PV(id)->batched;
    if (backward && !PV(nd->inputs[0])->needs_grad) return;
    LLVMValueRef x =
        backward ? otc_lv_grad_base(r, nd->inputs[0]) : otc_lv_value_base(r, nd->inputs[0]);
    LLVMValueRef y = backward ? otc_lv_grad_base(r, id) : otc_lv_value_base(r, id);
    otc_llvm_loop l = {0};
    otc_lv_loop_begin(r, &l, otc_lv_i64(r, outer));
    LLVMValueRef xe = LLVMBuildAdd(B, LLVMBuildMul(B, l.i, otc_lv_i64(r, mid * inner), ""),
                                   otc_lv_i64(r, skip), "");
    LLVMValueRef ye = LLVMBuildMul(B, l.i, otc_lv_i64(r, chunk), "");
    if (backward)
        move(r, x, xe, y, ye, chunk, kb, true);
    else
        move(r, y, ye, x, xe, chunk, kb, false);
    otc_lv_loop_end(r, &l);
}

/* ---- MatMul of unbatched values [M,K] x [K,N]: small, plain loops ---- */

void otc_lv_matmul_plain(otc_llvm_r *r, otc_id id, bool backward) {
    const otc_node *nd = otc_graph_node(r->g, id);
    const otc_node *an = otc_graph_node(r->g, nd->inputs[0]);
    int64_t M = an->shape.dim[0], K = an->shape.dim[1], N = nd->shape.dim[1];
    otc_id A = nd->inputs[0], W = nd->inputs[1];
    LLVMValueRef a = otc_lv_value_base(r, A), w = otc_lv_value_base(r, W);
    otc_llvm_loop li = {0}, lj = {0}, lk = {0};
    LLVMValueRef acc = otc_lv_slot(r, r->ir.f32);
    if (!backward) {
        LLVMValueRef c = otc_lv_value_base(r, id);
        otc_lv_loop_begin(r, &li, otc_lv_i64(r, M));
        otc_lv_loop_begin(r, &lj, otc_lv_i64(r, N));
        otc_lv_store(r, LLVMConstReal(r->ir.f32, 0.0), acc);
        otc_lv_loop_begin(r, &lk, otc_lv_i64(r, K));
        LLVMValueRef av = otc_lv_load(
            r, r->ir.f32,
            otc_lv_gep(r, a,
                       LLVMBuildAdd(B, LLVMBuildMul(B, li.i, otc_lv_i64(r, K), ""), lk.i, "")));
        LLVMValueRef wv = otc_lv_load(
            r, r->ir.f32,
            otc_lv_gep(r, w,
                       LLVMBuildAdd(B, LLVMBuildMul(B, lk.i, otc_lv_i64(r, N), ""), lj.i, "")));
        otc_lv_store(r, otc_llvm_fma(&r->ir, av, wv, otc_lv_load(r, r->ir.f32, acc)), acc);
        otc_lv_loop_end(r, &lk);
        otc_lv_store(
            r, otc_lv_load(r, r->ir.f32, acc),
            otc_lv_gep(r, c,
                       LLVMBuildAdd(B, LLVMBuildMul(B, li.i, otc_lv_i64(r, N), ""), lj.i, "")));
        otc_lv_loop_end(r, &lj);
        otc_lv_loop_end(r, &li);
        return;
    }
    LLVMValueRef g = otc_lv_grad_base(r, id);
    for (int side = 0; side < 2; side++) {
        otc_id target = side == 0 ? A : W;
        if (!PV(target)->needs_grad) continue;
        LLVMValueRef gt = otc_lv_grad_base(r, target);
        /* gA[i,k] += sum_j G[i,j] W[k,j];  gW[k,j] += sum_i A[i,k] G[i,j] */
        int64_t d0 = side == 0 ? M : K, d1 = side == 0 ? K : N, dn = side == 0 ? N : M;
        otc_lv_loop_begin(r, &li, otc_lv_i64(r, d0));
        otc_lv_loop_begin(r, &lj, otc_lv_i64(r, d1));
        otc_lv_store(r, LLVMConstReal(r->ir.f32, 0.0), acc);
        otc_lv_loop_begin(r, &lk, otc_lv_i64(r, dn));
        LLVMValueRef u, v;
        if (side == 0) {
            u = otc_lv_gep(r, g,
                           LLVMBuildAdd(B, LLVMBuildMul(B, li.i, otc_lv_i64(r, N), ""), lk.i, ""));
            v = otc_lv_gep(r, w,
                           LLVMBuildAdd(B, LLVMBuildMul(B, lj.i, otc_lv_i64(r, N), ""), lk.i, ""));
        } else {
            u = otc_lv_gep(r, a,
                           LLVMBuildAdd(B, LLVMBuildMul(B, lk.i, otc_lv_i64(r, K), ""), li.i, ""));
            v = otc_lv_gep(r, g,
                           LLVMBuildAdd(B, LLVMBuildMul(B, lk.i, otc_lv_i64(r, N), ""), lj.i, ""));
        }
        otc_lv_store(r,
                     otc_llvm_fma(&r->ir, otc_lv_load(r, r->ir.f32, u),
                                  otc_lv_load(r, r->ir.f32, v), otc_lv_load(r, r->ir.f32, acc)),
                     acc);
        otc_lv_loop_end(r, &lk);
        otc_lv_accumulate(
            r,
            otc_lv_gep(r, gt,
                       LLVMBuildAdd(B, LLVMBuildMul(B, li.i, otc_lv_i64(r, d1), ""), lj.i, "")),
            otc_lv_load(r, r->ir.f32, acc));
        otc_lv_loop_end(r, &lj);
        otc_lv_loop_end(r, &li);
    }
}

/* The plan's block of the input gradient (otc_plan_tiling): `rows` rows of gA from k0 times
 * `nch` chunks of samples from chunk0, gA[k] += sum_n G[n] W[k,n] with the sums in
 * registers, each loaded vector of G serving every row, each broadcast weight every chunk. */
#define BACK_ROWS   8
#define BACK_CHUNKS 4

static void input_grad_block(otc_llvm_r *r, otc_id W, LLVMValueRef G, LLVMValueRef ga, int64_t N,
                             LLVMValueRef k0, int rows, LLVMValueRef chunk0, int nch) {
    const otc_plan *p = r->plan;
    LLVMValueRef w = otc_lv_value_base(r, W), S = r->a[OTC_LA_STRIDE];
    bool w_param = p->values[W].storage == OTC_STORE_PARAM;
    LLVMValueRef off[BACK_CHUNKS], slots[BACK_CHUNKS][BACK_ROWS];
    for (int c = 0; c < nch; c++) {
        off[c] = LLVMBuildMul(B, LLVMBuildAdd(B, chunk0, otc_lv_i64(r, c), ""),
                              otc_lv_i64(r, r->o.lanes), "");
        for (int j = 0; j < rows; j++) {
            slots[c][j] = otc_lv_slot(r, r->vec);
            otc_lv_store(r, konst(r, true, 0.0), slots[c][j]);
        }
    }
    otc_llvm_loop ln = {0};
    otc_lv_loop_begin(r, &ln, otc_lv_i64(r, N));
    LLVMValueRef grow = otc_lv_gep(r, G, LLVMBuildMul(B, ln.i, S, ""));
    LLVMValueRef x[BACK_CHUNKS];
    for (int c = 0; c < nch; c++) x[c] = otc_lv_load(r, r->vec, otc_lv_gep(r, grow, off[c]));
    for (int j = 0; j < rows; j++) {
        LLVMValueRef k = LLVMBuildAdd(B, k0, otc_lv_i64(r, j), "");
        LLVMValueRef wp =
            otc_lv_gep(r, w, LLVMBuildAdd(B, LLVMBuildMul(B, k, otc_lv_i64(r, N), ""), ln.i, ""));
        LLVMValueRef wv = otc_lv_splat(r, w_param ? otc_lv_load_weight(r, r->ir.f32, wp)
                                                  : otc_lv_load(r, r->ir.f32, wp));
        for (int c = 0; c < nch; c++)
            otc_lv_store(r, otc_llvm_fma(&r->ir, x[c], wv, otc_lv_load(r, r->vec, slots[c][j])),
                         slots[c][j]);
    }
    otc_lv_loop_end(r, &ln);
    for (int j = 0; j < rows; j++) {
        LLVMValueRef k = LLVMBuildAdd(B, k0, otc_lv_i64(r, j), "");
        LLVMValueRef row = otc_lv_gep(r, ga, LLVMBuildMul(B, k, S, ""));
        for (int c = 0; c < nch; c++)
            otc_lv_accumulate(r, otc_lv_gep(r, row, off[c]), otc_lv_load(r, r->vec, slots[c][j]));
    }
}

/* Rows [k0, k0 + rows) of gA over every chunk: blocks of nch chunks, then the rest singly. */
static void input_grad_rows(otc_llvm_r *r, otc_id W, LLVMValueRef G, LLVMValueRef ga, int64_t N,
                            LLVMValueRef k0, int rows, int nch) {
    otc_llvm_loop lp = {0}, lo = {0};
    LLVMValueRef blocks = LLVMBuildSDiv(B, r->nchunks, otc_lv_i64(r, nch), "");
    otc_lv_loop_begin(r, &lp, blocks);
    input_grad_block(r, W, G, ga, N, k0, rows, LLVMBuildMul(B, lp.i, otc_lv_i64(r, nch), ""), nch);
    otc_lv_loop_end(r, &lp);
    if (nch == 1) return;
    LLVMValueRef from = LLVMBuildMul(B, blocks, otc_lv_i64(r, nch), "");
    otc_lv_loop_begin(r, &lo, LLVMBuildSub(B, r->nchunks, from, ""));
    input_grad_block(r, W, G, ga, N, k0, rows, LLVMBuildAdd(B, from, lo.i, ""), 1);
    otc_lv_loop_end(r, &lo);
}

/* Batched MatMul [B,K] x [K,N]: gA in the plan's blocks (above), and gW[k,n] += sum over
 * samples of A[k] G[n] (padding rows of G are zero). */
void otc_lv_matmul_backward(otc_llvm_r *r, otc_id id) {
    const otc_plan *p = r->plan;
    const otc_node *nd = otc_graph_node(r->g, id);
    otc_id A = otc_plan_owner(p, nd->inputs[0]), W = otc_plan_owner(p, nd->inputs[1]);
    int64_t K = p->values[A].size, N = p->values[id].size;
    LLVMValueRef G = otc_lv_grad_base(r, id), a = otc_lv_value_base(r, A),
                 w = otc_lv_value_base(r, W);
    otc_llvm_loop lk = {0}, ln = {0}, lc = {0};
    /* Large products through OpenBLAS: gA[K,S] += W[K,N] G[N,S]; gW[K,N] += A[K,S] G^T. The
     * padding columns of G are zero, so they add nothing. */
    int64_t s_min = otc_lv_blas_min_stride(r, K, N, true);
    LLVMBasicBlockRef done = NULL;
    if (s_min >= 0) {
        LLVMValueRef S = r->a[OTC_LA_STRIDE];
        LLVMBasicBlockRef big = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "blas_back");
        LLVMBasicBlockRef small = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "inline_back");
        done = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "matmul_back_done");
        LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSGE, S, otc_lv_i64(r, s_min), ""), big, small);
        LLVMPositionBuilderAtEnd(B, big);
        if (p->values[A].needs_grad)
            otc_lv_sgemm(r, false, false, otc_lv_i64(r, K), S, otc_lv_i64(r, N), w,
                         otc_lv_i64(r, N), G, S, 1.0f, otc_lv_grad_base(r, A), S);
        if (p->values[W].needs_grad)
            otc_lv_sgemm(r, false, true, otc_lv_i64(r, K), otc_lv_i64(r, N), S, a, S, G, S, 1.0f,
                         otc_lv_grad_base(r, W), otc_lv_i64(r, N));
        LLVMBuildBr(B, done);
        LLVMPositionBuilderAtEnd(B, small);
    }
    if (p->values[A].needs_grad) {
        const otc_plan_tiling *t = &p->kernels[p->values[id].kernel].tiling;
        int rows = t->grad_rows < 1 ? 1 : t->grad_rows > BACK_ROWS ? BACK_ROWS : t->grad_rows;
        int nch = t->vectors < 1 ? 1 : t->vectors > BACK_CHUNKS ? BACK_CHUNKS : t->vectors;
        LLVMValueRef ga = otc_lv_grad_base(r, A);
        int64_t full = K / rows * rows;
        if (full > 0) {
            otc_lv_loop_begin(r, &lk, otc_lv_i64(r, full / rows));
            input_grad_rows(r, W, G, ga, N, LLVMBuildMul(B, lk.i, otc_lv_i64(r, rows), ""), rows,
                            nch);
            otc_lv_loop_end(r, &lk);
        }
        if (full < K) input_grad_rows(r, W, G, ga, N, otc_lv_i64(r, full), (int)(K - full), nch);
    }
    if (p->values[W].needs_grad) {
        LLVMValueRef gw = otc_lv_grad_base(r, W);
        LLVMValueRef acc = otc_lv_slot(r, r->vec);
        otc_lv_loop_begin(r, &lk, otc_lv_i64(r, K));
        otc_lv_loop_begin(r, &ln, otc_lv_i64(r, N));
        otc_lv_store(r, konst(r, true, 0.0), acc);
        otc_lv_chunks_begin(r, &lc);
        LLVMValueRef av = otc_lv_load(r, r->vec, otc_lv_at(r, a, lk.i, true));
        LLVMValueRef gv = otc_lv_load(r, r->vec, otc_lv_at(r, G, ln.i, true));
        otc_lv_store(r, otc_llvm_fma(&r->ir, av, gv, otc_lv_load(r, r->vec, acc)), acc);
        otc_lv_chunks_end(r, &lc);
        LLVMValueRef idx = LLVMBuildAdd(B, LLVMBuildMul(B, lk.i, otc_lv_i64(r, N), ""), ln.i, "");
        otc_lv_accumulate(r, otc_lv_gep(r, gw, idx), otc_lv_hsum(r, otc_lv_load(r, r->vec, acc)));
        otc_lv_loop_end(r, &ln);
        otc_lv_loop_end(r, &lk);
    }
    if (done) {
        LLVMBuildBr(B, done);
        LLVMMoveBasicBlockAfter(done, LLVMGetInsertBlock(B));
        LLVMPositionBuilderAtEnd(B, done);
    }
}
