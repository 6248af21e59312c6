/* The LLVM renderer's spelling of loop programs (otc/loops.h): a batched body runs once per
 * chunk of W samples on <W x float> vectors; loops, locals and the program's trees as IR.
 * Gradients and batch sums leave the padding samples out. */
#include <stdlib.h>

#include "llvm_render.h"
#include "otc/loops.h"

#define B (r->ir.b)

enum { SHORT_LOOP = 8 }; /* iterations */

typedef struct {
    otc_llvm_r *r;
    const otc_loop_program *p;
    bool vec; /* in the body of a batched program: values are vectors of samples */
    LLVMValueRef local[OTC_LOOP_MAX_LOCALS], sum[OTC_LOOP_MAX_SUMS];
    LLVMValueRef sum_value[OTC_LOOP_MAX_SUMS]; /* AFTER: the sums over the batch */
    otc_llvm_loop loop[OTC_LOOP_MAX_DEPTH];
    int depth;
    int n_open; /* open loops and WHEN blocks; a WHEN block's exit, NULL for a loop */
    LLVMBasicBlockRef when_exit[2 * OTC_LOOP_MAX_DEPTH];
} speller;

static LLVMTypeRef type(const speller *s) {
    return s->vec ? s->r->vec : s->r->ir.f32;
}

/* A scalar as the current context wants it (a vector of it in a batched body). */
static LLVMValueRef widen(speller *s, LLVMValueRef v) {
    return s->vec ? otc_lv_splat(s->r, v) : v;
}

/* base + sum of stride[d] * i_d as an i64. */
static LLVMValueRef index_value(speller *s, const otc_loop_index *ix) {
    otc_llvm_r *r = s->r;
    LLVMValueRef e = otc_lv_i64(r, ix->base);
    for (int d = 0; d < OTC_LOOP_MAX_DEPTH; d++)
        if (ix->stride[d])
            e = LLVMBuildAdd(B, e, LLVMBuildMul(B, s->loop[d].i, otc_lv_i64(r, ix->stride[d]), ""),
                             "");
    return e;
}

static LLVMValueRef element_ptr(speller *s, int bf, const otc_loop_index *ix, bool *batched) {
    otc_llvm_r *r = s->r;
    const otc_loop_buf *b = &s->p->buf[bf];
    LLVMValueRef e = index_value(s, ix);
    *batched = r->plan->values[otc_plan_owner(r->plan, b->node)].batched;
    LLVMValueRef base = b->grad ? otc_lv_grad_base(r, b->node) : otc_lv_value_base(r, b->node);
    if (*batched && !s->vec) {
        char lab[64];
        otc_lv_fail(r, OTC_ERR_STATE, "loop program of %s reads a batched value outside its body",
                    otc_graph_node_label(r->g, s->p->node, lab, sizeof lab));
        *batched = false;
    }
    return otc_lv_at(r, base, e, *batched);
}

static LLVMValueRef operand(speller *s, const otc_loop_operand *o) {
    otc_llvm_r *r = s->r;
    switch (o->kind) {
    case OTC_LOOP_LOAD: {
        bool kb;
        LLVMValueRef ptr = element_ptr(s, o->n, &o->at, &kb);
        if (kb) return otc_lv_load(r, r->vec, ptr);
        return widen(s, otc_lv_load(r, r->ir.f32, ptr));
    }
    case OTC_LOOP_LOCAL:
        if (s->p->local_uniform[o->n]) return widen(s, otc_lv_load(r, r->ir.f32, s->local[o->n]));
        return otc_lv_load(r, type(s), s->local[o->n]);
    case OTC_LOOP_VAR:
        return widen(s, LLVMBuildSIToFP(B, s->loop[o->n].i, r->ir.f32, ""));
    case OTC_LOOP_CONST:
        return otc_llvm_const(type(s), (double)o->k);
    case OTC_LOOP_SAMPLES:
        return widen(s, s->p->batched ? LLVMBuildSIToFP(B, r->a[OTC_LA_BATCH], r->ir.f32, "")
                                      : LLVMConstReal(r->ir.f32, 1.0));
    case OTC_LOOP_SUM:
        return widen(s, s->sum_value[o->n]);
    case OTC_LOOP_NONE:
        break;
    }
    return otc_llvm_const(type(s), 0.0);
}

static LLVMValueRef value(speller *s, const otc_loop_stmt *st) {
    LLVMValueRef args[OTC_LOOP_MAX_OPERANDS];
    for (int k = 0; k < st->n_operands; k++) args[k] = operand(s, &st->operand[k]);
    otc_llvm_leaves leaves = {
        .arg = args, .n_arg = st->n_operands, .mask = s->vec ? s->r->mask : NULL};
    if (st->x.kind) leaves.x = operand(s, &st->x);
    if (st->x1.kind) leaves.x1 = operand(s, &st->x1);
    return otc_llvm_expr(&s->r->ir, st->tree, type(s), &leaves);
}

/* The call returns 1 + the node's id unless the truth holds (in every real sample). */
static void check(speller *s, LLVMValueRef ok) {
    otc_llvm_r *r = s->r;
    if (s->vec) ok = LLVMBuildOr(B, ok, LLVMBuildNot(B, r->mask, ""), "");
    if (s->vec && otc_lv_vector(r)) {
        LLVMTypeRef vt = LLVMTypeOf(ok);
        unsigned iid = LLVMLookupIntrinsicID("llvm.vector.reduce.and", 22);
        LLVMValueRef f = LLVMGetIntrinsicDeclaration(r->ir.mod, iid, &vt, 1);
        LLVMTypeRef ft = LLVMIntrinsicGetType(r->ir.ctx, iid, &vt, 1);
        ok = LLVMBuildCall2(B, ft, f, &ok, 1, "");
    }
    LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "check_failed");
    LLVMBasicBlockRef good = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "check_ok");
    LLVMBuildCondBr(B, ok, good, bad);
    LLVMPositionBuilderAtEnd(B, bad);
    LLVMBuildRet(B, LLVMConstInt(r->ir.i32, (unsigned long long)s->p->node + 1, 0));
    LLVMPositionBuilderAtEnd(B, good);
}

static void statement(speller *s, const otc_loop_stmt *st) {
    otc_llvm_r *r = s->r;
    switch (st->kind) {
    case OTC_LOOP_FOR:
        if (s->n_open == 2 * OTC_LOOP_MAX_DEPTH) return; /* the plan nests no deeper */
        s->when_exit[s->n_open++] = NULL;
        /* A short loop (a convolution's taps) is left to LLVM's unroller: its body is a few
         * vector operations, and the loop's own counting would cost as much. */
        s->loop[s->depth] = (otc_llvm_loop){.auto_vectorize = st->count <= SHORT_LOOP};
        otc_lv_loop_begin(r, &s->loop[s->depth], otc_lv_i64(r, st->count));
        s->depth++;
        return;
    case OTC_LOOP_WHEN: { /* unsigned: a negative index is a huge one, out of range */
        if (s->n_open == 2 * OTC_LOOP_MAX_DEPTH) return;
        LLVMValueRef in =
            LLVMBuildICmp(B, LLVMIntULT, index_value(s, &st->at), otc_lv_i64(r, st->count), "");
        LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "when");
        LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "when_done");
        LLVMBuildCondBr(B, in, then, exit);
        LLVMPositionBuilderAtEnd(B, then);
        s->when_exit[s->n_open++] = exit;
        return;
    }
    case OTC_LOOP_END: {
        LLVMBasicBlockRef exit = s->n_open > 0 ? s->when_exit[--s->n_open] : NULL;
        if (exit) {
            LLVMBuildBr(B, exit);
            LLVMPositionBuilderAtEnd(B, exit);
        } else if (s->depth > 0) {
            otc_lv_loop_end(r, &s->loop[--s->depth]);
        }
        return;
    }
    case OTC_LOOP_LET:
        otc_lv_store(r, value(s, st), s->local[st->n]);
        return;
    case OTC_LOOP_STORE: {
        bool kb;
        LLVMValueRef v = value(s, st);
        otc_lv_store(r, v, element_ptr(s, st->n, &st->at, &kb));
        return;
    }
    case OTC_LOOP_ADD: {
        bool kb;
        LLVMValueRef v = otc_lv_masked(r, value(s, st));
        LLVMValueRef ptr = element_ptr(s, st->n, &st->at, &kb);
        /* An unbatched gradient (a convolution's weights) gets the chunk's samples' sum. */
        if (s->vec && !kb) v = otc_lv_hsum(r, v);
        otc_lv_accumulate(r, ptr, v);
        return;
    }
    case OTC_LOOP_SUMUP:
        otc_lv_accumulate(r, s->sum[st->n], otc_lv_masked(r, value(s, st)));
        return;
    case OTC_LOOP_CHECK:
        check(s, value(s, st));
        return;
    }
}

static void section(speller *s, otc_loop_section which) {
    for (int i = 0; i < s->p->n_stmts && !s->r->st; i++)
        if (s->p->stmt[i].section == which) statement(s, &s->p->stmt[i]);
}

void otc_lv_loop_program(otc_llvm_r *r, otc_id id, bool backward) {
    otc_loop_program *p = NULL;
    otc_status st = otc_plan_lower(r->plan, id, backward, &p);
    if (st) {
        if (!r->st) r->st = st;
        return;
    }
    speller s = {.r = r, .p = p};
    LLVMTypeRef body_t = p->batched ? r->vec : r->ir.f32;
    for (int i = 0; i < p->n_locals; i++)
        s.local[i] = otc_lv_slot(r, p->local_uniform[i] ? r->ir.f32 : body_t);
    for (int i = 0; i < p->n_sums; i++) {
        s.sum[i] = otc_lv_slot(r, body_t);
        otc_lv_store(r, otc_llvm_const(body_t, 0.0), s.sum[i]);
    }
    section(&s, OTC_LOOP_BEFORE);
    /* A convolution with a single sample: the samples' layout pads it to W lanes, which the
     * batched body would all compute to keep one. A module of one batch form holds one path. */
    bool one = !backward && p->batched && r->o.forms != OTC_LV_FORMS_MANY &&
               r->o.forms != OTC_LV_FORMS_FEW && otc_lv_conv_one_sample_fits(r, id);
    if (one && r->o.forms == OTC_LV_FORMS_ONE) {
        otc_lv_conv_one_sample(r, id);
        otc_loop_program_free(p);
        return;
    }
    LLVMBasicBlockRef join = NULL;
    if (one) {
        LLVMBasicBlockRef one_bb = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "one_sample");
        LLVMBasicBlockRef many = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "samples");
        join = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "samples_done");
        LLVMValueRef single = LLVMBuildICmp(B, LLVMIntEQ, r->a[OTC_LA_BATCH], otc_lv_i64(r, 1), "");
        LLVMBuildCondBr(B, single, one_bb, many);
        LLVMPositionBuilderAtEnd(B, one_bb);
        otc_lv_conv_one_sample(r, id);
        LLVMBuildBr(B, join);
        LLVMPositionBuilderAtEnd(B, many);
    }
    otc_llvm_loop chunks = {0};
    if (p->batched) {
        otc_lv_chunks_begin(r, &chunks);
        s.vec = true;
    }
    section(&s, OTC_LOOP_BODY);
    if (p->batched) {
        otc_lv_chunks_end(r, &chunks);
        s.vec = false;
    }
    if (join) {
        LLVMBuildBr(B, join);
        LLVMMoveBasicBlockAfter(join, LLVMGetInsertBlock(B));
        LLVMPositionBuilderAtEnd(B, join);
    }
    for (int i = 0; i < p->n_sums; i++) {
        LLVMValueRef v = otc_lv_load(r, body_t, s.sum[i]);
        s.sum_value[i] = p->batched ? otc_lv_hsum(r, v) : v;
    }
    section(&s, OTC_LOOP_AFTER);
    otc_loop_program_free(p);
}
