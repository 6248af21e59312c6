/* The gradient products of the LLVM renderer's batched MatMul, blocked as the plan's tiling
 * says (OpenBLAS for large ones). */
#include <stdio.h>
#include <string.h>

#include "llvm_render.h"

#define B (r->ir.b)

static LLVMValueRef konst(otc_llvm_r *r, bool vec, double v) {
    return otc_llvm_const(vec ? r->vec : r->ir.f32, v);
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
            otc_lv_store(r, otc_llvm_mul_add(&r->ir, x[c], wv, otc_lv_load(r, r->vec, slots[c][j])),
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

/* The operands of the product `id` = A[B,K] x W[K,N]: the values that own A and W, and K, N. */
typedef struct {
    otc_id A, W;
    int64_t K, N;
} product;

static product product_of(const otc_llvm_r *r, otc_id id) {
    const otc_plan *p = r->plan;
    const otc_node *nd = otc_graph_node(r->g, id);
    otc_id A = otc_plan_owner(p, nd->inputs[0]);
    return (product){A, otc_plan_owner(p, nd->inputs[1]), p->values[A].size, p->values[id].size};
}

/* gA[K,S] += W[K,N] G[N,S] through OpenBLAS (the padding columns of G are zero). */
static void input_grad_blas(otc_llvm_r *r, int id) {
    const product m = product_of(r, id);
    LLVMValueRef S = r->a[OTC_LA_STRIDE];
    otc_lv_sgemm(r, false, false, otc_lv_i64(r, m.K), S, otc_lv_i64(r, m.N),
                 otc_lv_value_base(r, m.W), otc_lv_i64(r, m.N), otc_lv_grad_base(r, id), S, 1.0f,
                 otc_lv_grad_base(r, m.A), S);
}

/* gA in the plan's blocks (above). */
static void input_grad_gen(otc_llvm_r *r, int id) {
    const otc_plan *p = r->plan;
    const product m = product_of(r, id);
    const otc_plan_tiling *t = &p->kernels[p->values[id].kernel].tiling;
    int rows = t->grad_rows < 1 ? 1 : t->grad_rows > BACK_ROWS ? BACK_ROWS : t->grad_rows;
    int nch = t->vectors < 1 ? 1 : t->vectors > BACK_CHUNKS ? BACK_CHUNKS : t->vectors;
    LLVMValueRef G = otc_lv_grad_base(r, id), ga = otc_lv_grad_base(r, m.A);
    otc_llvm_loop lk = {0};
    int64_t full = m.K / rows * rows;
    if (full > 0) {
        otc_lv_loop_begin(r, &lk, otc_lv_i64(r, full / rows));
        input_grad_rows(r, m.W, G, ga, m.N, LLVMBuildMul(B, lk.i, otc_lv_i64(r, rows), ""), rows,
                        nch);
        otc_lv_loop_end(r, &lk);
    }
    if (full < m.K)
        input_grad_rows(r, m.W, G, ga, m.N, otc_lv_i64(r, full), (int)(m.K - full), nch);
}

/* gW[K,N] += A[K,S] G^T through OpenBLAS. */
static void weight_grad_blas(otc_llvm_r *r, int id) {
    const product m = product_of(r, id);
    LLVMValueRef S = r->a[OTC_LA_STRIDE];
    otc_lv_sgemm(r, false, true, otc_lv_i64(r, m.K), otc_lv_i64(r, m.N), S,
                 otc_lv_value_base(r, m.A), S, otc_lv_grad_base(r, id), S, 1.0f,
                 otc_lv_grad_base(r, m.W), otc_lv_i64(r, m.N));
}

/* gW[k,n] += sum over samples of A[k] G[n] (padding rows of G are zero). */
static void weight_grad_gen(otc_llvm_r *r, int id) {
    const product m = product_of(r, id);
    LLVMValueRef G = otc_lv_grad_base(r, id), a = otc_lv_value_base(r, m.A),
                 gw = otc_lv_grad_base(r, m.W);
    otc_llvm_loop lk = {0}, ln = {0}, lc = {0};
    LLVMValueRef acc = otc_lv_slot(r, r->vec);
    otc_lv_loop_begin(r, &lk, otc_lv_i64(r, m.K));
    otc_lv_loop_begin(r, &ln, otc_lv_i64(r, m.N));
    otc_lv_store(r, konst(r, true, 0.0), acc);
    otc_lv_chunks_begin(r, &lc);
    LLVMValueRef av = otc_lv_load(r, r->vec, otc_lv_at(r, a, lk.i, true));
    LLVMValueRef gv = otc_lv_load(r, r->vec, otc_lv_at(r, G, ln.i, true));
    otc_lv_store(r, otc_llvm_mul_add(&r->ir, av, gv, otc_lv_load(r, r->vec, acc)), acc);
    otc_lv_chunks_end(r, &lc);
    LLVMValueRef idx = LLVMBuildAdd(B, LLVMBuildMul(B, lk.i, otc_lv_i64(r, m.N), ""), ln.i, "");
    otc_lv_accumulate(r, otc_lv_gep(r, gw, idx), otc_lv_hsum(r, otc_lv_load(r, r->vec, acc)));
    otc_lv_loop_end(r, &ln);
    otc_lv_loop_end(r, &lk);
}

/* Few samples (otc_llvm_few_samples: fewer than half a vector, at a stride of one vector):
 * both products one sample at a time with the lanes along W's rows, as the forward's column
 * mode. Vectorised along the samples, one lane in W did work: the weight gradient was a sum
 * of one product per weight, each reduced across a vector, and from the stride of one vector
 * on a 128x64 layer went to OpenBLAS with sixteen samples' work. Per sample, G's column is
 * copied to a contiguous stack row first, then
 *   gA[k] += sum_n W[k,n] g[n]   (a vector of W's row times g, one reduction per row),
 *   gW[k,n] += A[k] g[n]         (rows of gW, W lanes at a time, an outer product). */
enum { FEW_MAX_N = 4096 }; /* the stack row: 16 KB at most */

static bool few_fits(const otc_llvm_r *r, const product *m) {
    return r->o.lanes >= 4 && m->N <= FEW_MAX_N;
}

static void few_input_grad(otc_llvm_r *r, const product *m, LLVMValueRef g, LLVMValueRef b) {
    const int64_t W = r->o.lanes, full = m->N / W;
    LLVMValueRef w = otc_lv_value_base(r, m->W), ga = otc_lv_grad_base(r, m->A);
    bool w_param = r->plan->values[m->W].storage == OTC_STORE_PARAM;
    otc_llvm_loop lk = {0}, lj = {0}, lt = {0};
    LLVMValueRef acc = otc_lv_slot(r, r->vec), sum = otc_lv_slot(r, r->ir.f32);
    otc_lv_loop_begin(r, &lk, otc_lv_i64(r, m->K));
    LLVMValueRef row = otc_lv_gep(r, w, LLVMBuildMul(B, lk.i, otc_lv_i64(r, m->N), ""));
    otc_lv_store(r, konst(r, true, 0.0), acc);
    if (full > 0) {
        otc_lv_loop_begin(r, &lj, otc_lv_i64(r, full));
        LLVMValueRef n = LLVMBuildMul(B, lj.i, otc_lv_i64(r, W), "");
        LLVMValueRef wp = otc_lv_gep(r, row, n);
        LLVMValueRef wv = w_param ? otc_lv_load_weight(r, r->vec, wp) : otc_lv_load(r, r->vec, wp);
        LLVMValueRef gv = otc_lv_load(r, r->vec, otc_lv_gep(r, g, n));
        otc_lv_store(r, otc_llvm_mul_add(&r->ir, wv, gv, otc_lv_load(r, r->vec, acc)), acc);
        otc_lv_loop_end(r, &lj);
    }
    otc_lv_store(r, otc_lv_hsum(r, otc_lv_load(r, r->vec, acc)), sum);
    if (m->N % W) {
        otc_lv_loop_begin(r, &lt, otc_lv_i64(r, m->N % W));
        LLVMValueRef n = LLVMBuildAdd(B, lt.i, otc_lv_i64(r, full * W), "");
        LLVMValueRef wp = otc_lv_gep(r, row, n);
        LLVMValueRef ws =
            w_param ? otc_lv_load_weight(r, r->ir.f32, wp) : otc_lv_load(r, r->ir.f32, wp);
        LLVMValueRef gs = otc_lv_load(r, r->ir.f32, otc_lv_gep(r, g, n));
        otc_lv_store(r, otc_llvm_mul_add(&r->ir, ws, gs, otc_lv_load(r, r->ir.f32, sum)), sum);
        otc_lv_loop_end(r, &lt);
    }
    LLVMValueRef at = LLVMBuildAdd(B, LLVMBuildMul(B, lk.i, otc_lv_i64(r, W), ""), b, "");
    otc_lv_accumulate(r, otc_lv_gep(r, ga, at), otc_lv_load(r, r->ir.f32, sum));
    otc_lv_loop_end(r, &lk);
}

static void few_weight_grad(otc_llvm_r *r, const product *m, LLVMValueRef g, LLVMValueRef b) {
    const int64_t W = r->o.lanes, full = m->N / W;
    LLVMValueRef a = otc_lv_value_base(r, m->A), gw = otc_lv_grad_base(r, m->W);
    otc_llvm_loop lk = {0}, lj = {0}, lt = {0};
    otc_lv_loop_begin(r, &lk, otc_lv_i64(r, m->K));
    LLVMValueRef as = otc_lv_load(
        r, r->ir.f32,
        otc_lv_gep(r, a, LLVMBuildAdd(B, LLVMBuildMul(B, lk.i, otc_lv_i64(r, W), ""), b, "")));
    LLVMValueRef row = otc_lv_gep(r, gw, LLVMBuildMul(B, lk.i, otc_lv_i64(r, m->N), ""));
    if (full > 0) {
        LLVMValueRef av = otc_lv_splat(r, as);
        otc_lv_loop_begin(r, &lj, otc_lv_i64(r, full));
        LLVMValueRef n = LLVMBuildMul(B, lj.i, otc_lv_i64(r, W), "");
        LLVMValueRef p = otc_lv_gep(r, row, n);
        LLVMValueRef gv = otc_lv_load(r, r->vec, otc_lv_gep(r, g, n));
        otc_lv_store(r, otc_llvm_mul_add(&r->ir, av, gv, otc_lv_load(r, r->vec, p)), p);
        otc_lv_loop_end(r, &lj);
    }
    if (m->N % W) {
        otc_lv_loop_begin(r, &lt, otc_lv_i64(r, m->N % W));
        LLVMValueRef n = LLVMBuildAdd(B, lt.i, otc_lv_i64(r, full * W), "");
        LLVMValueRef p = otc_lv_gep(r, row, n);
        LLVMValueRef gs = otc_lv_load(r, r->ir.f32, otc_lv_gep(r, g, n));
        otc_lv_store(r, otc_llvm_mul_add(&r->ir, as, gs, otc_lv_load(r, r->ir.f32, p)), p);
        otc_lv_loop_end(r, &lt);
    }
    otc_lv_loop_end(r, &lk);
}

static void few_samples(otc_llvm_r *r, int id) {
    const otc_plan *p = r->plan;
    const product m = product_of(r, id);
    const int64_t W = r->o.lanes;
    LLVMValueRef G = otc_lv_grad_base(r, id);
    LLVMValueRef g = otc_lv_slot(r, LLVMArrayType2(r->ir.f32, (uint64_t)m.N));
    otc_llvm_loop lb = {0}, ln = {0};
    otc_lv_loop_begin(r, &lb, r->a[OTC_LA_BATCH]);
    /* the sample's column, one vector apart in G */
    otc_lv_loop_begin(r, &ln, otc_lv_i64(r, m.N));
    LLVMValueRef src =
        otc_lv_gep(r, G, LLVMBuildAdd(B, LLVMBuildMul(B, ln.i, otc_lv_i64(r, W), ""), lb.i, ""));
    otc_lv_store(r, otc_lv_load(r, r->ir.f32, src), otc_lv_gep(r, g, ln.i));
    otc_lv_loop_end(r, &ln);
    if (p->values[m.A].needs_grad) few_input_grad(r, &m, g, lb.i);
    if (p->values[m.W].needs_grad) few_weight_grad(r, &m, g, lb.i);
    otc_lv_loop_end(r, &lb);
}

/* The few-sample form as a function of its own, called from the backward: in the same
 * function its code changed how the optimised tier compiled the rest (LeNet's training step at
 * batch 64, which never runs it, took ~20% longer). */
static void few_samples_call(otc_llvm_r *r, int id) {
    char name[200];
    snprintf(name, sizeof name, "%smatmul_grads_few_%d", r->o.prefix ? r->o.prefix : "", id);
    LLVMValueRef fn = r->fn, a[OTC_LA_COUNT], nchunks = r->nchunks;
    LLVMBasicBlockRef entry = r->entry, here = LLVMGetInsertBlock(B);
    memcpy(a, r->a, sizeof a);
    LLVMValueRef helper = otc_lv_begin_function(r, name, false, 0);
    few_samples(r, id);
    LLVMBuildRet(B, LLVMConstInt(r->ir.i32, 0, 0));
    /* back in the caller: the addresses cached were the helper's */
    otc_lv_forget_addresses(r);
    r->fn = fn;
    r->entry = entry;
    r->nchunks = nchunks;
    memcpy(r->a, a, sizeof a);
    LLVMPositionBuilderAtEnd(B, here);
    LLVMValueRef arg = LLVMGetParam(fn, 0);
    LLVMBuildCall2(B, LLVMGlobalGetValueType(helper), helper, &arg, 1, "");
}

/* Many samples: each operand's gradient product through OpenBLAS above its own size
 * (otc_lv_blas_min_stride), else generated. */
static void many_samples(otc_llvm_r *r, int id) {
    const otc_plan *p = r->plan;
    const product m = product_of(r, id);
    if (p->values[m.A].needs_grad)
        otc_lv_by_stride(r, otc_lv_blas_min_stride(r, m.K, m.N, OTC_LV_PRODUCT_INPUT_GRAD),
                         input_grad_blas, input_grad_gen, id);
    if (p->values[m.W].needs_grad)
        otc_lv_by_stride(r, otc_lv_blas_min_stride(r, m.K, m.N, OTC_LV_PRODUCT_WEIGHT_GRAD),
                         weight_grad_blas, weight_grad_gen, id);
}

/* Batched MatMul [B,K] x [K,N]: by the batch, above. */
void otc_lv_matmul_backward(otc_llvm_r *r, otc_id id) {
    const product m = product_of(r, id);
    if (few_fits(r, &m))
        otc_lv_by_batch(r, id, few_samples_call, many_samples);
    else
        many_samples(r, id);
}
