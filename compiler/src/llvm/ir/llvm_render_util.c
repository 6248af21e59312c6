/* Helpers the LLVM renderer's files share: loops (with the metadata that keeps LLVM from
 * re-vectorising vector code), addresses computed once per function, vector loads, stores and
 * sums, lane masks of the batch padding, and the OpenBLAS call for large products. */
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
    if (!otc_lv_vector(r)) return scalar;
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

void otc_lv_forget_addresses(otc_llvm_r *r) {
    for (size_t i = 0; i < r->n_used_values; i++)
        r->vb_cache[r->used_values[i]] = r->gb_cache[r->used_values[i]] = NULL;
    for (size_t i = 0; i < r->n_used_rows; i++) r->rows[r->used_rows[i]].base = NULL;
    r->n_used_values = r->n_used_rows = 0;
}

/* cache[o] = v, logged for otc_lv_forget_addresses (each of the two caches sets an entry at
 * most once per function, so the log holds at most two per value). */
static LLVMValueRef remember(otc_llvm_r *r, LLVMValueRef *cache, otc_id o, LLVMValueRef v) {
    r->used_values[r->n_used_values++] = o;
    return cache[o] = v;
}

LLVMValueRef otc_lv_value_base(otc_llvm_r *r, otc_id id) {
    otc_id o = otc_plan_owner(r->plan, id);
    if (r->vb_cache[o]) return r->vb_cache[o];
    const otc_plan_value *v = &r->plan->values[o];
    if (v->storage == OTC_STORE_PARAM) {
        otc_extent e = {v->param_offset, 0};
        return remember(r, r->vb_cache, o, entry_offset(r, r->a[OTC_LA_WEIGHTS], e));
    }
    if (v->storage != OTC_STORE_WORK) {
        char lab[64];
        otc_lv_fail(r, OTC_ERR_STATE, "value %s is not stored by the plan",
                    otc_graph_node_label(r->g, o, lab, sizeof lab));
        return r->a[OTC_LA_WORK];
    }
    return remember(r, r->vb_cache, o, entry_offset(r, r->a[OTC_LA_WORK], v->offset));
}

LLVMValueRef otc_lv_grad_base(otc_llvm_r *r, otc_id id) {
    otc_id o = otc_plan_owner(r->plan, id);
    if (r->gb_cache[o]) return r->gb_cache[o];
    return remember(r, r->gb_cache, o,
                    entry_offset(r, r->a[OTC_LA_GRADS], r->plan->values[o].grad));
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
            r->used_rows[r->n_used_rows++] = h;
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
     * a broadcast from memory per use is as cheap at run time. For the fast code generator
     * they are marked, so their broadcasts come from a table filled once (llvm_fastisel.c). */
    LLVMValueRef v = otc_lv_load(r, t, ptr);
    if (r->o.fast_isel)
        LLVMSetMetadata(v, LLVMGetMDKindIDInContext(r->ir.ctx, "invariant.load", 14),
                        LLVMMetadataAsValue(r->ir.ctx, LLVMMDNodeInContext2(r->ir.ctx, NULL, 0)));
    return v;
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
    if (LLVMGetTypeKind(LLVMTypeOf(v)) != LLVMVectorTypeKind) return v;
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

bool otc_lv_vector(const otc_llvm_r *r) {
    return LLVMGetTypeKind(r->vec) == LLVMVectorTypeKind;
}

LLVMValueRef otc_lv_lane_mask(otc_llvm_r *r) {
    return r->mask;
}

LLVMValueRef otc_lv_masked(otc_llvm_r *r, LLVMValueRef v) {
    /* (An unbatched scalar in a vector body is left alone.) */
    if (!r->mask || LLVMGetTypeKind(LLVMTypeOf(v)) != LLVMGetTypeKind(r->vec)) return v;
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
    if (!otc_lv_vector(r)) {
        r->mask = LLVMBuildICmp(B, LLVMIntSLT, r->chunk_off, r->a[OTC_LA_BATCH], "real");
        return;
    }
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
 * it). Measured on the build machine (znver3, one thread, 8 lanes): the generated 4x2 register
 * blocks reach ~22 GFLOP/s, OpenBLAS ~45 on large products but pays a packing pass and a
 * beta pass per call; the 8-128-64-32-1 MLP at batch 256 runs 0.70 us/sample all generated
 * and 1.05 with its middle layers (2M multiply-adds) through OpenBLAS, while a 256x256 layer
 * at batch 256 (16M) is faster through OpenBLAS (4.6 vs 5.9 us/sample). */
#define OTC_LV_BLAS_MIN_MACS (1 << 22)

/* With 16 lanes (AVX-512) the generated blocks are twice as wide as the AVX2 kernels
 * Debian's OpenBLAS 0.3.21 runs on such a CPU (docs/performance.md), and the forward and
 * input-gradient products stay generated up to 16M multiply-adds. Measured on a shared 2-core
 * AVX-512 VM (AMD EPYC), thread CPU time, medians of 5 interleaved runs, a two-layer k-n-k
 * JIT training step at batch S with OpenBLAS from 4M / from 16M: k128 n512 S64 575 / 496 us,
 * k256 n512 S64 1114 / 1051 us, k256 n256 S256 2135 / 1975 us, k512 n512 S64 1962 / 1908 us
 * (level); a 1024x1024 product at S64 (64M) ran 1.5x faster through OpenBLAS. The LSTM
 * 32->128, T50, B64 training step (its recurrent products 4M each): 22.7 -> 19.4 ms, GRU
 * 17.7 -> 16.8 ms (medians of 10 interleaved runs at load 6-7); LeNet's training step at
 * batch 64 and the 8-128-64-32-1 MLP's at 256 no slower. */
#define OTC_LV_BLAS_MIN_MACS_WIDE (1 << 24)

/* The weight gradient's generated product is a plain sum over the samples per weight (no
 * register blocking): OpenBLAS wins from much smaller sizes there (the MLP's training step:
 * 3.3 us/sample with its gradient products through OpenBLAS, 5.5 generated). The input
 * gradient's had no blocks either when that was measured, and keeps the cut-off on 8 lanes. */
#define OTC_LV_BLAS_MIN_MACS_BACKWARD (1 << 17)

int64_t otc_lv_blas_min_stride(const otc_llvm_r *r, int64_t k, int64_t n, otc_lv_product what) {
    if (!r->o.blas || k < 16 || n < 8) return -1;
    bool wide = r->o.lanes >= 16;
    int64_t macs = what == OTC_LV_PRODUCT_WEIGHT_GRAD  ? OTC_LV_BLAS_MIN_MACS_BACKWARD
                   : wide                              ? OTC_LV_BLAS_MIN_MACS_WIDE
                   : what == OTC_LV_PRODUCT_INPUT_GRAD ? OTC_LV_BLAS_MIN_MACS_BACKWARD
                                                       : OTC_LV_BLAS_MIN_MACS;
    int64_t s = (macs + k * n - 1) / (k * n);
    s = (s + r->o.lanes - 1) / r->o.lanes * r->o.lanes;
    return s < 16 ? 16 : s;
}

void otc_lv_by_stride(otc_llvm_r *r, int64_t s_min, void (*blas)(otc_llvm_r *, int),
                      void (*gen)(otc_llvm_r *, int), int arg) {
    if (s_min < 0) {
        gen(r, arg);
        return;
    }
    LLVMBasicBlockRef big = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "blas");
    LLVMBasicBlockRef small = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "generated");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "by_stride_done");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSGE, r->a[OTC_LA_STRIDE], otc_lv_i64(r, s_min), ""),
                    big, small);
    LLVMPositionBuilderAtEnd(B, big);
    blas(r, arg);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, small);
    gen(r, arg);
    LLVMBuildBr(B, done);
    LLVMMoveBasicBlockAfter(done, LLVMGetInsertBlock(B));
    LLVMPositionBuilderAtEnd(B, done);
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

/* few_fn(r, k) for fewer than half a vector of samples at a stride of one vector
 * (otc_llvm_few_samples), else many_fn(r, k): a run-time branch, or the one form a module of
 * one form holds (measured: batch 1 of an MLP layer in column mode runs ~5x faster than with
 * 1 of 8 lanes busy). */
void otc_lv_by_batch(otc_llvm_r *r, int k, void (*few_fn)(otc_llvm_r *, int),
                     void (*many_fn)(otc_llvm_r *, int)) {
    /* A module of one form holds that form alone (the executor picked it for the batch). */
    if (r->o.forms != OTC_LV_FORMS_ALL) {
        (r->o.forms == OTC_LV_FORMS_MANY ? many_fn : few_fn)(r, k);
        return;
    }
    LLVMBasicBlockRef few = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "few_samples");
    LLVMBasicBlockRef many = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "many_samples");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "kernel_end");
    /* otc_llvm_few_samples */
    LLVMValueRef small = LLVMBuildAnd(
        B,
        LLVMBuildICmp(B, LLVMIntSLT, r->a[OTC_LA_BATCH],
                      otc_lv_i64(r, r->o.lanes / 2 > 1 ? r->o.lanes / 2 : 2), ""),
        LLVMBuildICmp(B, LLVMIntEQ, r->a[OTC_LA_STRIDE], otc_lv_i64(r, r->o.lanes), ""), "");
    LLVMBuildCondBr(B, small, few, many);
    LLVMPositionBuilderAtEnd(B, few);
    few_fn(r, k);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, many);
    many_fn(r, k);
    LLVMBuildBr(B, done);
    LLVMMoveBasicBlockAfter(done, LLVMGetInsertBlock(B));
    LLVMPositionBuilderAtEnd(B, done);
}
