/* The LLVM renderer's frame: one module per plan with PREFIXforward (and for training
 * PREFIXbackward, PREFIXtrain_step), the plan's steps in order (input and output copies,
 * kernels, gradient seeding, backward groups, the fused optimiser update) and the helpers
 * the kernel files share. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "llvm_render.h"

#define B (r->ir.b)

void otc_lv_fail(otc_llvm_r *r, otc_status st, const char *fmt, ...) {
    if (r->st) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->st = otc_fail(st, "LLVM renderer: %s", msg);
}

LLVMValueRef otc_lv_i64(otc_llvm_r *r, int64_t v) {
    return LLVMConstInt(r->ir.i64, (unsigned long long)v, 1);
}

LLVMValueRef otc_lv_slot(otc_llvm_r *r, LLVMTypeRef t) {
    LLVMBasicBlockRef here = LLVMGetInsertBlock(B);
    LLVMValueRef first = LLVMGetFirstInstruction(r->entry);
    if (first)
        LLVMPositionBuilderBefore(B, first);
    else
        LLVMPositionBuilderAtEnd(B, r->entry);
    LLVMValueRef slot = LLVMBuildAlloca(B, t, "");
    LLVMPositionBuilderAtEnd(B, here);
    return slot;
}

LLVMValueRef otc_lv_splat(otc_llvm_r *r, LLVMValueRef scalar) {
    /* The canonical splat (poison, not undef, so the optimiser has nothing to rewrite). */
    LLVMValueRef v =
        LLVMBuildInsertElement(B, LLVMGetPoison(r->vec), scalar, LLVMConstInt(r->ir.i32, 0, 0), "");
    LLVMValueRef zero = LLVMConstNull(LLVMVectorType(r->ir.i32, (unsigned)r->o.lanes));
    return LLVMBuildShuffleVector(B, v, LLVMGetPoison(r->vec), zero, "");
}

LLVMValueRef otc_lv_extent(otc_llvm_r *r, otc_extent e) {
    LLVMValueRef v = otc_lv_i64(r, e.base);
    if (e.per_batch)
        v = LLVMBuildAdd(B, v, LLVMBuildMul(B, otc_lv_i64(r, e.per_batch), r->a[OTC_LA_STRIDE], ""),
                         "");
    return v;
}

LLVMValueRef otc_lv_gep(otc_llvm_r *r, LLVMValueRef base, LLVMValueRef index) {
    return LLVMBuildInBoundsGEP2(B, r->ir.f32, base, &index, 1, "");
}

/* The builder r->eb adds instructions at the end of the function's entry block (before its
 * branch): addresses computed there once serve every loop of the function. */
static LLVMBuilderRef entry_builder(otc_llvm_r *r) {
    LLVMValueRef term = LLVMGetBasicBlockTerminator(r->entry);
    if (term)
        LLVMPositionBuilderBefore(r->eb, term);
    else
        LLVMPositionBuilderAtEnd(r->eb, r->entry);
    return r->eb;
}

static bool in_entry(otc_llvm_r *r, LLVMValueRef v) {
    return !LLVMIsAInstruction(v) || LLVMGetInstructionParent(v) == r->entry;
}

/* base + off (float elements) computed in the entry block. */
static LLVMValueRef entry_offset(otc_llvm_r *r, LLVMValueRef base, otc_extent off) {
    LLVMBuilderRef eb = entry_builder(r);
    LLVMValueRef idx = otc_lv_i64(r, off.base);
    if (off.per_batch)
        idx = LLVMBuildAdd(
            eb, idx, LLVMBuildMul(eb, otc_lv_i64(r, off.per_batch), r->a[OTC_LA_STRIDE], ""), "");
    return LLVMBuildInBoundsGEP2(eb, r->ir.f32, base, &idx, 1, "");
}

LLVMValueRef otc_lv_value_base(otc_llvm_r *r, otc_id id) {
    otc_id o = otc_plan_owner(r->plan, id);
    if (r->vb_cache[o]) return r->vb_cache[o];
    const otc_plan_value *v = &r->plan->values[o];
    if (v->storage == OTC_STORE_PARAM) {
        otc_extent e = {v->param_offset, 0};
        return r->vb_cache[o] = entry_offset(r, r->a[OTC_LA_WEIGHTS], e);
    }
    if (v->storage != OTC_STORE_WORK) {
        char lab[64];
        otc_lv_fail(r, OTC_ERR_STATE, "value %s is not stored by the plan",
                    otc_graph_node_label(r->g, o, lab, sizeof lab));
        return r->a[OTC_LA_WORK];
    }
    return r->vb_cache[o] = entry_offset(r, r->a[OTC_LA_WORK], v->offset);
}

LLVMValueRef otc_lv_grad_base(otc_llvm_r *r, otc_id id) {
    otc_id o = otc_plan_owner(r->plan, id);
    if (r->gb_cache[o]) return r->gb_cache[o];
    return r->gb_cache[o] = entry_offset(r, r->a[OTC_LA_GRADS], r->plan->values[o].grad);
}

LLVMValueRef otc_lv_work_at(otc_llvm_r *r, otc_extent off) {
    return entry_offset(r, r->a[OTC_LA_WORK], off);
}

/* Row e of a batched value that starts at base (an entry-block pointer): cached. */
static LLVMValueRef row_of(otc_llvm_r *r, LLVMValueRef base, int64_t e) {
    size_t cap = r->row_cap, h = ((size_t)(uintptr_t)base * 31u + (size_t)e * 7919u) % cap;
    for (size_t k = 0; k < cap; k++, h = (h + 1) % cap) {
        if (!r->rows[h].base) {
            LLVMBuilderRef eb = entry_builder(r);
            LLVMValueRef idx = LLVMBuildMul(eb, otc_lv_i64(r, e), r->a[OTC_LA_STRIDE], "");
            r->rows[h].base = base;
            r->rows[h].e = e;
            r->rows[h].row = LLVMBuildInBoundsGEP2(eb, r->ir.f32, base, &idx, 1, "");
            return r->rows[h].row;
        }
        if (r->rows[h].base == base && r->rows[h].e == e) return r->rows[h].row;
    }
    /* Full (not expected): compute it where we are. */
    LLVMValueRef idx = LLVMBuildMul(B, otc_lv_i64(r, e), r->a[OTC_LA_STRIDE], "");
    return otc_lv_gep(r, base, idx);
}

LLVMValueRef otc_lv_at(otc_llvm_r *r, LLVMValueRef base, LLVMValueRef e, bool batched) {
    if (!batched) return otc_lv_gep(r, base, e);
    LLVMValueRef row;
    if (LLVMIsAConstantInt(e) && in_entry(r, base) && r->rows)
        row = row_of(r, base, LLVMConstIntGetSExtValue(e));
    else
        row = otc_lv_gep(r, base, LLVMBuildMul(B, e, r->a[OTC_LA_STRIDE], ""));
    return otc_lv_gep(r, row, r->chunk_off);
}

LLVMValueRef otc_lv_load(otc_llvm_r *r, LLVMTypeRef t, LLVMValueRef ptr) {
    LLVMValueRef v = LLVMBuildLoad2(B, t, ptr, "");
    LLVMSetAlignment(v, 4);
    return v;
}

LLVMValueRef otc_lv_load_weight(otc_llvm_r *r, LLVMTypeRef t, LLVMValueRef ptr) {
    /* Marking these !invariant.load was measured to cost compile time (the optimiser then
     * hoists every weight out of the batch loop and the register allocator spills them all);
     * a broadcast from memory per use is as cheap at run time. */
    return otc_lv_load(r, t, ptr);
}

void otc_lv_store(otc_llvm_r *r, LLVMValueRef v, LLVMValueRef ptr) {
    LLVMValueRef s = LLVMBuildStore(B, v, ptr);
    LLVMSetAlignment(s, 4);
}

void otc_lv_accumulate(otc_llvm_r *r, LLVMValueRef ptr, LLVMValueRef v) {
    LLVMValueRef old = otc_lv_load(r, LLVMTypeOf(v), ptr);
    otc_lv_store(r, LLVMBuildFAdd(B, old, v, ""), ptr);
}

LLVMValueRef otc_lv_hsum(otc_llvm_r *r, LLVMValueRef v) {
    /* A fixed pairwise tree (halves added), the same on every target. */
    unsigned n = (unsigned)r->o.lanes;
    while (n > 1) {
        unsigned h = n / 2;
        LLVMValueRef lo[32], hi[32];
        for (unsigned i = 0; i < h; i++) {
            lo[i] = LLVMConstInt(r->ir.i32, i, 0);
            hi[i] = LLVMConstInt(r->ir.i32, i + h, 0);
        }
        LLVMValueRef a = LLVMBuildShuffleVector(B, v, v, LLVMConstVector(lo, h), "");
        LLVMValueRef b = LLVMBuildShuffleVector(B, v, v, LLVMConstVector(hi, h), "");
        v = LLVMBuildFAdd(B, a, b, "");
        n = h;
    }
    return LLVMBuildExtractElement(B, v, LLVMConstInt(r->ir.i32, 0, 0), "");
}

LLVMValueRef otc_lv_lane_mask(otc_llvm_r *r) {
    return r->mask;
}

LLVMValueRef otc_lv_masked(otc_llvm_r *r, LLVMValueRef v) {
    if (LLVMGetTypeKind(LLVMTypeOf(v)) != LLVMVectorTypeKind || !r->mask) return v;
    return LLVMBuildSelect(B, r->mask, v, LLVMConstNull(r->vec), "");
}

void otc_lv_loop_begin(otc_llvm_r *r, otc_llvm_loop *l, LLVMValueRef count) {
    l->count = count;
    l->pre = LLVMGetInsertBlock(B);
    l->body = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "loop");
    l->exit = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "done");
    if (LLVMIsAConstantInt(count) && LLVMConstIntGetSExtValue(count) > 0)
        LLVMBuildBr(B, l->body);
    else
        LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSGT, count, otc_lv_i64(r, 0), ""), l->body,
                        l->exit);
    LLVMPositionBuilderAtEnd(B, l->body);
    l->i = LLVMBuildPhi(B, r->ir.i64, "i");
}

void otc_lv_loop_end(otc_llvm_r *r, otc_llvm_loop *l) {
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    LLVMValueRef next = LLVMBuildNSWAdd(B, l->i, otc_lv_i64(r, 1), "");
    LLVMValueRef more = LLVMBuildICmp(B, LLVMIntSLT, next, l->count, "");
    LLVMValueRef br = LLVMBuildCondBr(B, more, l->body, l->exit);
    if (!l->auto_vectorize) {
        /* The body is vector code already (or a cold copy): vectorising or unrolling it again
         * would only multiply the code and the compile time. */
        LLVMContextRef ctx = r->ir.ctx;
        LLVMMetadataRef t = LLVMTemporaryMDNode(ctx, NULL, 0);
        LLVMMetadataRef vec[2] = {LLVMMDStringInContext2(ctx, "llvm.loop.vectorize.enable", 26),
                                  LLVMValueAsMetadata(LLVMConstInt(r->ir.i1, 0, 0))};
        LLVMMetadataRef unroll = LLVMMDStringInContext2(ctx, "llvm.loop.unroll.disable", 24);
        LLVMMetadataRef ops[3] = {t, LLVMMDNodeInContext2(ctx, vec, 2),
                                  LLVMMDNodeInContext2(ctx, &unroll, 1)};
        LLVMMetadataRef id = LLVMMDNodeInContext2(ctx, ops, 3);
        LLVMMetadataReplaceAllUsesWith(t, id);
        LLVMSetMetadata(br, LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9),
                        LLVMMetadataAsValue(ctx, id));
    }
    LLVMValueRef inc[2] = {otc_lv_i64(r, 0), next};
    LLVMBasicBlockRef bbs[2] = {l->pre, latch};
    LLVMAddIncoming(l->i, inc, bbs, 2);
    /* Keep the blocks in program order, which makes dumped IR readable. */
    LLVMMoveBasicBlockAfter(l->exit, latch);
    LLVMPositionBuilderAtEnd(B, l->exit);
}

void otc_lv_set_chunk(otc_llvm_r *r, LLVMValueRef chunk) {
    r->chunk = chunk;
    r->chunk_off = LLVMBuildMul(B, chunk, otc_lv_i64(r, r->o.lanes), "");
    /* Lane j of chunk c is sample c*W + j; it is real when below the batch. */
    LLVMValueRef lanes[64];
    for (int j = 0; j < r->o.lanes; j++) lanes[j] = otc_lv_i64(r, j);
    LLVMTypeRef vi = LLVMVectorType(r->ir.i64, (unsigned)r->o.lanes);
    LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(r->ir.i32, (unsigned)r->o.lanes));
    LLVMValueRef v = LLVMBuildInsertElement(B, LLVMGetPoison(vi), r->chunk_off,
                                            LLVMConstInt(r->ir.i32, 0, 0), "");
    v = LLVMBuildShuffleVector(B, v, LLVMGetPoison(vi), zeros, "");
    v = LLVMBuildAdd(B, v, LLVMConstVector(lanes, (unsigned)r->o.lanes), "");
    LLVMValueRef bv = LLVMBuildInsertElement(B, LLVMGetPoison(vi), r->a[OTC_LA_BATCH],
                                             LLVMConstInt(r->ir.i32, 0, 0), "");
    bv = LLVMBuildShuffleVector(B, bv, LLVMGetPoison(vi), zeros, "");
    r->mask = LLVMBuildICmp(B, LLVMIntSLT, v, bv, "real");
}

void otc_lv_chunks_begin(otc_llvm_r *r, otc_llvm_loop *l) {
    otc_lv_loop_begin(r, l, r->nchunks);
    otc_lv_set_chunk(r, l->i);
}

void otc_lv_chunks_end(otc_llvm_r *r, otc_llvm_loop *l) {
    otc_lv_loop_end(r, l);
    r->chunk = NULL;
    r->chunk_off = NULL;
    r->mask = NULL;
}

LLVMValueRef otc_lv_call(otc_llvm_r *r, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
                         int n, LLVMValueRef *args) {
    LLVMTypeRef ft = LLVMFunctionType(ret, params, (unsigned)n, 0);
    LLVMValueRef f = LLVMGetNamedFunction(r->ir.mod, name);
    if (!f) f = LLVMAddFunction(r->ir.mod, name, ft);
    return LLVMBuildCall2(B, ft, f, args, (unsigned)n, "");
}

/* Products of at least this many multiply-adds go to OpenBLAS (when the module may call
 * it): below, its per-call cost outweighs what it gains over the generated loops. */
#define OTC_LV_BLAS_MIN_MACS (1 << 17)

int64_t otc_lv_blas_min_stride(const otc_llvm_r *r, int64_t k, int64_t n) {
    if (!r->o.blas || k < 16 || n < 8) return -1;
    int64_t s = (OTC_LV_BLAS_MIN_MACS + k * n - 1) / (k * n);
    s = (s + r->o.lanes - 1) / r->o.lanes * r->o.lanes;
    return s < 16 ? 16 : s;
}

void otc_lv_sgemm(otc_llvm_r *r, bool ta, bool tb, LLVMValueRef m, LLVMValueRef n, LLVMValueRef k,
                  LLVMValueRef a, LLVMValueRef lda, LLVMValueRef b, LLVMValueRef ldb, float beta,
                  LLVMValueRef c, LLVMValueRef ldc) {
    /* cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) with
     * CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 (cblas.h). */
    LLVMTypeRef i32 = r->ir.i32, f32 = r->ir.f32, ptr = r->ir.ptr;
    LLVMTypeRef params[14] = {i32, i32, i32, i32, i32, i32, f32, ptr, i32, ptr, i32, f32, ptr, i32};
#define I32(v) LLVMBuildTrunc(B, (v), i32, "")
    LLVMValueRef args[14] = {LLVMConstInt(i32, 101, 0),
                             LLVMConstInt(i32, ta ? 112 : 111, 0),
                             LLVMConstInt(i32, tb ? 112 : 111, 0),
                             I32(m),
                             I32(n),
                             I32(k),
                             LLVMConstReal(f32, 1.0),
                             a,
                             I32(lda),
                             b,
                             I32(ldb),
                             LLVMConstReal(f32, beta),
                             c,
                             I32(ldc)};
#undef I32
    otc_lv_call(r, "cblas_sgemm", r->ir.void_t, params, 14, args);
}

/* ---- the frame: argument block, steps, update, exported functions ---- */

static LLVMTypeRef args_type(otc_llvm_r *r) {
    /* Mirrors otc_llvm_args: eight pointers, two int64_t, one pointer. */
    LLVMTypeRef f[OTC_LA_COUNT];
    for (int i = 0; i < OTC_LA_COUNT; i++)
        f[i] = (i == OTC_LA_BATCH || i == OTC_LA_STRIDE) ? r->ir.i64 : r->ir.ptr;
    return LLVMStructTypeInContext(r->ir.ctx, f, OTC_LA_COUNT, 0);
}

static void add_fn_attr(otc_llvm_r *r, LLVMValueRef fn, const char *name) {
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(r->ir.ctx, kind, 0));
}

/* A new function taking the argument block (and `extra` i1 flags); its slots loaded. */
static LLVMValueRef begin_function(otc_llvm_r *r, const char *name, bool exported, int extra) {
    LLVMTypeRef params[2] = {r->ir.ptr, r->ir.i1};
    LLVMTypeRef ft = LLVMFunctionType(r->ir.i32, params, (unsigned)(1 + extra), 0);
    LLVMValueRef fn = LLVMAddFunction(r->ir.mod, name, ft);
    LLVMSetLinkage(fn, exported ? LLVMExternalLinkage : LLVMInternalLinkage);
    add_fn_attr(r, fn, "nounwind");
    /* Bodies are called from two exported functions: one copy of the code, not two. */
    if (!exported) add_fn_attr(r, fn, "noinline");
    r->fn = fn;
    r->entry = LLVMAppendBasicBlockInContext(r->ir.ctx, fn, "entry");
    LLVMPositionBuilderAtEnd(B, r->entry);
    /* Cached addresses belong to one function. */
    memset(r->vb_cache, 0, (size_t)r->plan->n_values * sizeof *r->vb_cache);
    memset(r->gb_cache, 0, (size_t)r->plan->n_values * sizeof *r->gb_cache);
    memset(r->rows, 0, r->row_cap * sizeof *r->rows);
    LLVMTypeRef at = args_type(r);
    LLVMValueRef args = LLVMGetParam(fn, 0);
    static const char *names[OTC_LA_COUNT] = {"in",    "target", "out",   "weights",
                                              "work",  "grads",  "state", "hyper",
                                              "batch", "stride", "loss"};
    for (int i = 0; i < OTC_LA_COUNT; i++) {
        LLVMValueRef p = LLVMBuildStructGEP2(B, at, args, (unsigned)i, "");
        bool is_int = i == OTC_LA_BATCH || i == OTC_LA_STRIDE;
        r->a[i] = LLVMBuildLoad2(B, is_int ? r->ir.i64 : r->ir.ptr, p, names[i]);
    }
    r->nchunks = LLVMBuildExactSDiv(B, r->a[OTC_LA_STRIDE], otc_lv_i64(r, r->o.lanes), "chunks");
    return fn;
}

/* The row copies between the caller's sample-major rows and node-major storage are one
 * function per module (their loops compiled once, however many graphs and inputs):
 *   otc.load_rows(dst, src, S, B, row, off, width): dst[e*S + b] = src[b*row + off + e],
 *     zeros in the padding samples B..S;
 *   otc.store_rows(dst, src, S, B, row, off, width): dst[b*row + off + e] = src[e*S + b]. */
static LLVMValueRef rows_helper(otc_llvm_r *r, bool load) {
    const char *name = load ? "otc.load_rows" : "otc.store_rows";
    LLVMValueRef fn = LLVMGetNamedFunction(r->ir.mod, name);
    if (fn) return fn;
    LLVMTypeRef params[7] = {r->ir.ptr, r->ir.ptr, r->ir.i64, r->ir.i64,
                             r->ir.i64, r->ir.i64, r->ir.i64};
    fn = LLVMAddFunction(r->ir.mod, name, LLVMFunctionType(r->ir.void_t, params, 7, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    add_fn_attr(r, fn, "nounwind");
    add_fn_attr(r, fn, "noinline");
    /* Build it aside, then come back to the function being rendered. */
    LLVMValueRef saved_fn = r->fn;
    LLVMBasicBlockRef saved_entry = r->entry, saved_block = LLVMGetInsertBlock(B);
    r->fn = fn;
    r->entry = LLVMAppendBasicBlockInContext(r->ir.ctx, fn, "entry");
    LLVMPositionBuilderAtEnd(B, r->entry);
    LLVMValueRef dst = LLVMGetParam(fn, 0), src = LLVMGetParam(fn, 1), S = LLVMGetParam(fn, 2),
                 Bn = LLVMGetParam(fn, 3), row = LLVMGetParam(fn, 4), off = LLVMGetParam(fn, 5),
                 width = LLVMGetParam(fn, 6);
    otc_llvm_loop le = {0}, lb = {0}, lz = {0};
    otc_lv_loop_begin(r, &le, width);
    LLVMValueRef nm = LLVMBuildMul(B, le.i, S, ""), rm = LLVMBuildAdd(B, le.i, off, "");
    LLVMValueRef node = otc_lv_gep(r, load ? dst : src, nm);
    LLVMValueRef rows = otc_lv_gep(r, load ? src : dst, rm);
    otc_lv_loop_begin(r, &lb, Bn);
    LLVMValueRef rp = otc_lv_gep(r, rows, LLVMBuildMul(B, lb.i, row, ""));
    LLVMValueRef np = otc_lv_gep(r, node, lb.i);
    otc_lv_store(r, otc_lv_load(r, r->ir.f32, load ? rp : np), load ? np : rp);
    otc_lv_loop_end(r, &lb);
    if (load) {
        otc_lv_loop_begin(r, &lz, LLVMBuildSub(B, S, Bn, ""));
        otc_lv_store(r, LLVMConstReal(r->ir.f32, 0.0),
                     otc_lv_gep(r, node, LLVMBuildAdd(B, Bn, lz.i, "")));
        otc_lv_loop_end(r, &lz);
    }
    otc_lv_loop_end(r, &le);
    LLVMBuildRetVoid(B);
    r->fn = saved_fn;
    r->entry = saved_entry;
    LLVMPositionBuilderAtEnd(B, saved_block);
    return fn;
}

static void rows_call(otc_llvm_r *r, bool load, LLVMValueRef dst, LLVMValueRef src, int64_t row,
                      const otc_plan_io *io) {
    LLVMValueRef fn = rows_helper(r, load);
    LLVMValueRef args[7] = {dst,
                            src,
                            r->a[OTC_LA_STRIDE],
                            r->a[OTC_LA_BATCH],
                            otc_lv_i64(r, row),
                            otc_lv_i64(r, io->offset),
                            otc_lv_i64(r, io->width)};
    LLVMBuildCall2(B, LLVMGlobalGetValueType(fn), fn, args, 7, "");
}

/* Input copy: the caller's rows into node-major storage (padding samples zero). */
static void load_step(otc_llvm_r *r, const otc_plan_step *s) {
    const otc_plan *p = r->plan;
    const otc_plan_io *io = &p->io[s->io];
    bool target = io->stream == OTC_IO_TARGET;
    rows_call(r, true, otc_lv_value_base(r, io->node), r->a[target ? OTC_LA_TARGET : OTC_LA_IN],
              target ? p->target_width : p->in_width, io);
}

/* Output copy: node-major storage into the caller's rows. */
static void store_step(otc_llvm_r *r, const otc_plan_step *s) {
    const otc_plan *p = r->plan;
    const otc_plan_io *io = &p->io[s->io];
    rows_call(r, false, r->a[OTC_LA_OUT], otc_lv_value_base(r, io->node), p->out_width, io);
}

static void forward_steps(otc_llvm_r *r) {
    const otc_plan *p = r->plan;
    for (int i = 0; i < p->n_forward_steps && !r->st; i++) {
        const otc_plan_step *s = &p->steps[i];
        if (s->kind == OTC_STEP_LOAD) {
            load_step(r, s);
        } else if (s->kind == OTC_STEP_STORE) {
            store_step(r, s);
        } else if (s->kind == OTC_STEP_KERNEL) {
            r->kernel = s->kernel;
            switch (p->kernels[s->kernel].kind) {
            case OTC_KERNEL_MAP:
                otc_lv_map_kernel(r, s->kernel);
                break;
            case OTC_KERNEL_MATMUL:
                otc_lv_matmul_kernel(r, s->kernel);
                break;
            case OTC_KERNEL_OP:
                otc_lv_op_kernel(r, s->kernel);
                break;
            }
            r->kernel = -1;
        }
    }
}

/* The backward steps; zero_params (an i1) also zeroes the parameter gradients, which the
 * executor's backward lets accumulate. */
static void backward_steps(otc_llvm_r *r, LLVMValueRef zero_params) {
    const otc_plan *p = r->plan;
    for (int i = p->n_forward_steps; i < p->n_steps && !r->st; i++) {
        const otc_plan_step *s = &p->steps[i];
        switch (s->kind) {
        case OTC_STEP_ZERO_GRADS: {
            LLVMValueRef from = LLVMBuildSelect(B, zero_params, otc_lv_i64(r, 0),
                                                otc_lv_i64(r, p->param_floats), "");
            LLVMValueRef total = otc_lv_extent(r, p->grads);
            LLVMValueRef bytes =
                LLVMBuildMul(B, LLVMBuildSub(B, total, from, ""), otc_lv_i64(r, 4), "");
            LLVMBuildMemSet(B, otc_lv_gep(r, r->a[OTC_LA_GRADS], from),
                            LLVMConstInt(LLVMInt8TypeInContext(r->ir.ctx), 0, 0), bytes, 4);
            break;
        }
        case OTC_STEP_SEED:
            otc_lv_store(r, LLVMConstReal(r->ir.f32, 1.0), otc_lv_grad_base(r, s->node));
            break;
        case OTC_STEP_BACKWARD: {
            const otc_node *nd = otc_graph_node(r->g, s->node);
            int kind = p->kernels[s->kernel].kind;
            if (otc_lv_map_backward_fusable(r, s->node)) {
                int j = i + 1;
                while (j < p->n_steps && p->steps[j].kind == OTC_STEP_BACKWARD &&
                       p->steps[j].kernel == s->kernel &&
                       otc_lv_map_backward_fusable(r, p->steps[j].node))
                    j++;
                r->kernel = s->kernel;
                otc_lv_map_backward(r, i, j);
                r->kernel = -1;
                i = j - 1;
            } else if (nd->op == OTC_OP_MATMUL && kind == OTC_KERNEL_MATMUL) {
                otc_lv_matmul_backward(r, s->node);
            } else {
                otc_lv_op_backward(r, s->node);
            }
            break;
        }
        default:
            break;
        }
    }
}

static LLVMValueRef hyper(otc_llvm_r *r, int i) {
    return otc_lv_load(r, r->ir.f32, otc_lv_gep(r, r->a[OTC_LA_HYPER], otc_lv_i64(r, i)));
}

/* One optimiser loop over weights [from, from + n), spelled as runtime/src/optim.c (no fused
 * multiply-adds, the same association) so it matches the interpreter bit for bit. */
static void update_range(otc_llvm_r *r, int64_t from, int64_t n, int kind) {
    const otc_plan *p = r->plan;
    LLVMValueRef lr = hyper(r, OTC_LH_LR), l2 = hyper(r, OTC_LH_L2);
    otc_llvm_loop l = {0};
    l.auto_vectorize = true; /* a plain scalar loop: LLVM's loop vectoriser widens it */
    otc_lv_loop_begin(r, &l, otc_lv_i64(r, n));
    LLVMValueRef i = LLVMBuildAdd(B, l.i, otc_lv_i64(r, from), "");
    LLVMValueRef pp = otc_lv_gep(r, r->a[OTC_LA_WEIGHTS], i);
    LLVMValueRef gp = otc_lv_gep(r, r->a[OTC_LA_GRADS], i);
    LLVMValueRef mp = otc_lv_gep(r, r->a[OTC_LA_STATE], i);
    LLVMValueRef vp =
        otc_lv_gep(r, r->a[OTC_LA_STATE], LLVMBuildAdd(B, i, otc_lv_i64(r, p->param_floats), ""));
    LLVMValueRef w = otc_lv_load(r, r->ir.f32, pp);
    LLVMValueRef g = otc_lv_load(r, r->ir.f32, gp);
    g = LLVMBuildFAdd(B, g, LLVMBuildFMul(B, l2, w, ""), "");
    LLVMValueRef one = LLVMConstReal(r->ir.f32, 1.0);
    if (kind == 0) {
        w = LLVMBuildFSub(B, w, LLVMBuildFMul(B, lr, g, ""), "");
    } else if (kind == 1) {
        LLVMValueRef mu = hyper(r, OTC_LH_MOMENTUM);
        LLVMValueRef nest = LLVMBuildFCmp(B, LLVMRealONE, hyper(r, OTC_LH_NESTEROV),
                                          LLVMConstReal(r->ir.f32, 0.0), "");
        LLVMValueRef m = otc_lv_load(r, r->ir.f32, mp);
        m = LLVMBuildFAdd(B, LLVMBuildFMul(B, mu, m, ""), g, "");
        otc_lv_store(r, m, mp);
        LLVMValueRef gn = LLVMBuildFAdd(B, g, LLVMBuildFMul(B, mu, m, ""), "");
        g = LLVMBuildSelect(B, nest, gn, m, "");
        w = LLVMBuildFSub(B, w, LLVMBuildFMul(B, lr, g, ""), "");
    } else {
        LLVMValueRef b1 = hyper(r, OTC_LH_BETA1), b2 = hyper(r, OTC_LH_BETA2);
        w = LLVMBuildFMul(B, w, hyper(r, OTC_LH_DECAY), "");
        LLVMValueRef m = otc_lv_load(r, r->ir.f32, mp);
        LLVMValueRef v = otc_lv_load(r, r->ir.f32, vp);
        m = LLVMBuildFAdd(B, LLVMBuildFMul(B, b1, m, ""),
                          LLVMBuildFMul(B, LLVMBuildFSub(B, one, b1, ""), g, ""), "");
        LLVMValueRef g2 =
            LLVMBuildFMul(B, LLVMBuildFMul(B, LLVMBuildFSub(B, one, b2, ""), g, ""), g, "");
        v = LLVMBuildFAdd(B, LLVMBuildFMul(B, b2, v, ""), g2, "");
        otc_lv_store(r, m, mp);
        otc_lv_store(r, v, vp);
        LLVMValueRef sq = otc_llvm_intrinsic(&r->ir, "llvm.sqrt", &v, 1);
        LLVMValueRef denom = LLVMBuildFAdd(B, LLVMBuildFDiv(B, sq, hyper(r, OTC_LH_BC2_SQRT), ""),
                                           hyper(r, OTC_LH_EPS), "");
        LLVMValueRef stepv =
            LLVMBuildFDiv(B, LLVMBuildFMul(B, hyper(r, OTC_LH_STEP_SIZE), m, ""), denom, "");
        w = LLVMBuildFSub(B, w, stepv, "");
    }
    otc_lv_store(r, w, pp);
    otc_lv_loop_end(r, &l);
}

static void update_steps(otc_llvm_r *r) {
    const otc_plan *p = r->plan;
    LLVMValueRef kind = LLVMBuildFPToSI(B, hyper(r, OTC_LH_KIND), r->ir.i32, "kind");
    LLVMBasicBlockRef blocks[3], done = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "updated");
    for (int k = 0; k < 3; k++)
        blocks[k] = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "update");
    LLVMValueRef sw = LLVMBuildSwitch(B, kind, blocks[0], 2);
    LLVMAddCase(sw, LLVMConstInt(r->ir.i32, 1, 0), blocks[1]);
    LLVMAddCase(sw, LLVMConstInt(r->ir.i32, 2, 0), blocks[2]);
    for (int k = 0; k < 3; k++) {
        LLVMPositionBuilderAtEnd(B, blocks[k]);
        for (int i = p->n_forward_steps; i < p->n_steps; i++)
            if (p->steps[i].kind == OTC_STEP_UPDATE)
                update_range(r, p->steps[i].offset, p->steps[i].count, k);
        LLVMBuildBr(B, done);
    }
    LLVMMoveBasicBlockAfter(done, LLVMGetInsertBlock(B));
    LLVMPositionBuilderAtEnd(B, done);
}

static LLVMValueRef call_body(otc_llvm_r *r, LLVMValueRef body, int extra, LLVMValueRef flag) {
    LLVMTypeRef params[2] = {r->ir.ptr, r->ir.i1};
    LLVMTypeRef ft = LLVMFunctionType(r->ir.i32, params, (unsigned)(1 + extra), 0);
    LLVMValueRef args[2] = {LLVMGetParam(r->fn, 0), flag};
    return LLVMBuildCall2(B, ft, body, args, (unsigned)(1 + extra), "");
}

/* return status if it is not 0 */
static void return_if_failed(otc_llvm_r *r, LLVMValueRef status) {
    LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "failed");
    LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "ok");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntNE, status, LLVMConstInt(r->ir.i32, 0, 0), ""), bad,
                    ok);
    LLVMPositionBuilderAtEnd(B, bad);
    LLVMBuildRet(B, status);
    LLVMPositionBuilderAtEnd(B, ok);
}

static void name_of(char *buf, size_t len, const otc_llvm_render_options *o, const char *what) {
    snprintf(buf, len, "%s%s", o->prefix ? o->prefix : "", what);
}

/* For object files: the weights as constant data and the C entry point
 * int NAME_forward(const float *in, float *out, int batch, void *workspace), which sizes the
 * stride for the batch and calls the rendered forward (made internal). */
static void aot_wrapper(otc_llvm_r *r) {
    const otc_plan *p = r->plan;
    char name[160];
    name_of(name, sizeof name, &r->o, "forward");
    LLVMValueRef impl = LLVMGetNamedFunction(r->ir.mod, name);
    LLVMSetLinkage(impl, LLVMInternalLinkage);
    LLVMSetValueName2(impl, "forward_impl", 12);

    size_t n = (size_t)p->param_floats;
    LLVMValueRef *vals = malloc((n + 1) * sizeof *vals);
    if (!vals) {
        otc_lv_fail(r, OTC_ERR_NOMEM, "out of memory for the weights");
        return;
    }
    for (size_t i = 0; i < n; i++) vals[i] = LLVMConstReal(r->ir.f32, 0.0);
    for (int i = 0; i < p->n_params; i++) {
        const otc_node *nd = otc_graph_node(r->g, p->params[i]);
        int64_t off = p->values[p->params[i]].param_offset;
        for (size_t k = 0; k < nd->value->size; k++)
            vals[off + (int64_t)k] = LLVMConstReal(r->ir.f32, nd->value->data[k]);
    }
    LLVMTypeRef at = LLVMArrayType2(r->ir.f32, n ? n : 1);
    LLVMValueRef weights = LLVMAddGlobal(r->ir.mod, at, "weights");
    LLVMSetInitializer(weights, n ? LLVMConstArray2(r->ir.f32, vals, n) : LLVMConstNull(at));
    LLVMSetGlobalConstant(weights, 1);
    LLVMSetLinkage(weights, LLVMPrivateLinkage);
    LLVMSetAlignment(weights, 64);
    free(vals);

    LLVMTypeRef params[4] = {r->ir.ptr, r->ir.ptr, r->ir.i32, r->ir.ptr};
    LLVMTypeRef ft = LLVMFunctionType(r->ir.i32, params, 4, 0);
    name_of(name, sizeof name, &r->o, "forward");
    LLVMValueRef fn = LLVMAddFunction(r->ir.mod, name, ft);
    add_fn_attr(r, fn, "nounwind");
    r->fn = fn;
    r->entry = LLVMAppendBasicBlockInContext(r->ir.ctx, fn, "entry");
    LLVMPositionBuilderAtEnd(B, r->entry);
    LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(r->ir.ctx, fn, "bad_batch");
    LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(r->ir.ctx, fn, "run");
    LLVMValueRef batch32 = LLVMGetParam(fn, 2);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSGT, batch32, LLVMConstInt(r->ir.i32, 0, 0), ""), ok,
                    bad);
    LLVMPositionBuilderAtEnd(B, bad);
    LLVMBuildRet(B, LLVMConstInt(r->ir.i32, (unsigned long long)-1, 1));
    LLVMPositionBuilderAtEnd(B, ok);
    LLVMTypeRef st = args_type(r);
    LLVMValueRef args = LLVMBuildAlloca(B, st, "args");
    LLVMValueRef batch = LLVMBuildSExt(B, batch32, r->ir.i64, "");
    int64_t w = r->o.lanes;
    LLVMValueRef stride = LLVMBuildMul(
        B, LLVMBuildSDiv(B, LLVMBuildAdd(B, batch, otc_lv_i64(r, w - 1), ""), otc_lv_i64(r, w), ""),
        otc_lv_i64(r, w), "");
    LLVMValueRef field[OTC_LA_COUNT];
    for (int i = 0; i < OTC_LA_COUNT; i++) field[i] = LLVMConstNull(r->ir.ptr);
    field[OTC_LA_IN] = LLVMGetParam(fn, 0);
    field[OTC_LA_OUT] = LLVMGetParam(fn, 1);
    field[OTC_LA_WORK] = LLVMGetParam(fn, 3);
    field[OTC_LA_WEIGHTS] = weights;
    field[OTC_LA_BATCH] = batch;
    field[OTC_LA_STRIDE] = stride;
    for (int i = 0; i < OTC_LA_COUNT; i++)
        LLVMBuildStore(B, field[i], LLVMBuildStructGEP2(B, st, args, (unsigned)i, ""));
    LLVMTypeRef it = r->ir.ptr;
    LLVMTypeRef ift = LLVMFunctionType(r->ir.i32, &it, 1, 0);
    LLVMBuildRet(B, LLVMBuildCall2(B, ift, impl, &args, 1, ""));
}

otc_status otc_llvm_render_into(const otc_plan *plan, const otc_llvm_render_options *o,
                                LLVMModuleRef mod) {
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    if (o->lanes < 1 || o->lanes > 64 || (o->lanes & (o->lanes - 1)))
        return otc_fail(OTC_ERR_ARG, "LLVM renderer: %d lanes (a power of two up to 64)", o->lanes);
    if (o->train && !plan->options.train)
        return otc_fail(OTC_ERR_ARG, "LLVM renderer: training code needs a training plan");
    otc_llvm_r rr = {0}, *r = &rr;
    r->plan = plan;
    r->g = plan->graph;
    r->o = *o;
    r->kernel = -1;
    r->ir.ctx = ctx;
    otc_llvm_ir_types(&r->ir);
    r->ir.mod = mod;
    r->ir.b = LLVMCreateBuilderInContext(ctx);
    r->vec = LLVMVectorType(r->ir.f32, (unsigned)o->lanes);
    r->eb = LLVMCreateBuilderInContext(ctx);
    size_t nv = (size_t)plan->n_values + 1;
    r->local = calloc(nv, sizeof *r->local);
    r->vb_cache = calloc(nv, sizeof *r->vb_cache);
    r->gb_cache = calloc(nv, sizeof *r->gb_cache);
    r->row_cap = 8 * nv + 64;
    r->rows = calloc(r->row_cap, sizeof *r->rows);
    if (!r->local || !r->vb_cache || !r->gb_cache || !r->rows)
        r->st = otc_fail(OTC_ERR_NOMEM, "out of memory for the LLVM renderer");
    char name[160];
    if (!r->st && !plan->options.train) {
        name_of(name, sizeof name, o, "forward");
        begin_function(r, name, true, 0);
        forward_steps(r);
        LLVMBuildRet(B, LLVMConstInt(r->ir.i32, 0, 0));
    } else if (!r->st) {
        name_of(name, sizeof name, o, "fwd_body");
        LLVMValueRef fwd = begin_function(r, name, false, 0);
        forward_steps(r);
        LLVMBuildRet(B, LLVMConstInt(r->ir.i32, 0, 0));
        name_of(name, sizeof name, o, "bwd_body");
        LLVMValueRef bwd = begin_function(r, name, false, 1);
        backward_steps(r, LLVMGetParam(r->fn, 1));
        LLVMBuildRet(B, LLVMConstInt(r->ir.i32, 0, 0));
        name_of(name, sizeof name, o, "update_body");
        LLVMValueRef upd = begin_function(r, name, false, 0);
        update_steps(r);
        LLVMBuildRet(B, LLVMConstInt(r->ir.i32, 0, 0));

        name_of(name, sizeof name, o, "forward");
        begin_function(r, name, true, 0);
        LLVMBuildRet(B, call_body(r, fwd, 0, NULL));
        name_of(name, sizeof name, o, "backward");
        begin_function(r, name, true, 0);
        LLVMBuildRet(B, call_body(r, bwd, 1, LLVMConstInt(r->ir.i1, 0, 0)));
        name_of(name, sizeof name, o, "train_step");
        begin_function(r, name, true, 0);
        return_if_failed(r, call_body(r, fwd, 0, NULL));
        return_if_failed(r, call_body(r, bwd, 1, LLVMConstInt(r->ir.i1, 1, 0)));
        call_body(r, upd, 0, NULL);
        LLVMValueRef loss = otc_lv_load(r, r->ir.f32, otc_lv_value_base(r, plan->options.loss));
        otc_lv_store(r, loss, r->a[OTC_LA_LOSS]);
        LLVMBuildRet(B, LLVMConstInt(r->ir.i32, 0, 0));
    }
    if (!r->st && o->aot) aot_wrapper(r);
    LLVMDisposeBuilder(r->ir.b);
    LLVMDisposeBuilder(r->eb);
    free(r->local);
    free(r->vb_cache);
    free(r->gb_cache);
    free(r->rows);
    return r->st;
}

otc_status otc_llvm_render(const otc_plan *plan, const otc_llvm_render_options *o,
                           LLVMContextRef ctx, LLVMModuleRef *out) {
    *out = LLVMModuleCreateWithNameInContext("otc", ctx);
    otc_status st = otc_llvm_render_into(plan, o, *out);
    if (st) {
        LLVMDisposeModule(*out);
        *out = NULL;
    }
    return st;
}
