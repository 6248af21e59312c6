/* The LLVM renderer's frame: one module per plan with PREFIXforward (and for training
 * PREFIXbackward, PREFIXtrain_step), the plan's steps in order (input and output copies,
 * kernels, gradient seeding, the plan's fused backward runs, the fused optimiser update; a long
 * run of steps cut into functions of bounded size) and, for object files, the C entry point
 * with the weights as constant data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llvm_render.h"

#define B (r->ir.b)

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
LLVMValueRef otc_lv_begin_function(otc_llvm_r *r, const char *name, bool exported, int extra) {
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
    otc_lv_forget_addresses(r);
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
    /* One sample at stride 1: every offset a constant. */
    if (r->o.forms == OTC_LV_FORMS_UNIT || r->o.forms == OTC_LV_FORMS_SCALAR)
        r->a[OTC_LA_BATCH] = r->a[OTC_LA_STRIDE] = otc_lv_i64(r, 1);
    r->nchunks = LLVMBuildExactSDiv(B, r->a[OTC_LA_STRIDE], otc_lv_i64(r, r->o.lanes), "chunks");
    return fn;
}

/* The row copies between the caller's sample-major rows and node-major storage are functions
 * of the module (their loops compiled once, however many graphs and inputs; a narrow and a
 * blocked form, chosen by the copy's and the rows' widths), the rows' pointer already at the
 * input's or output's column: otc.load_rows[_blocked](dst, src, S, B, row, width): dst[e*S + b] =
 * src[b*row + e], zeros in the padding samples B..S; otc.store_rows[_blocked](dst, src, S, B, row,
 * width): dst[b*row + e] = src[e*S + b]. Six arguments: x86's fast instruction selector passes no
 * more in registers, and a function it cannot take whole goes to SelectionDAG (the fast tier's code
 * generator). */
#define ROWS_BLOCK       16
#define ROWS_BLOCKED_ROW 1024 /* floats: 4 KB */

static LLVMValueRef rows_helper(otc_llvm_r *r, bool load, bool blocked) {
    const char *name = load ? (blocked ? "otc.load_rows_blocked" : "otc.load_rows")
                            : (blocked ? "otc.store_rows_blocked" : "otc.store_rows");
    LLVMValueRef fn = LLVMGetNamedFunction(r->ir.mod, name);
    if (fn) return fn;
    LLVMTypeRef params[6] = {r->ir.ptr, r->ir.ptr, r->ir.i64, r->ir.i64, r->ir.i64, r->ir.i64};
    fn = LLVMAddFunction(r->ir.mod, name, LLVMFunctionType(r->ir.void_t, params, 6, 0));
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
                 Bn = LLVMGetParam(fn, 3), row = LLVMGetParam(fn, 4), width = LLVMGetParam(fn, 5);
    /* Narrow: element by element over the samples. Blocked (blocks of ROWS_BLOCK elements):
     * per sample one cache line of its row, written to (or read from) ROWS_BLOCK node slots a
     * stride apart. Element by element, a row of 4 KB or more put every sample on a page of its
     * own (the 33x33 substrate at batch 75: 75 pages per element, a TLB miss per float; its two
     * copies took 6% of the forward); for a few elements the blocks' loops cost more than they
     * save (a genome's two inputs: the fast tier's forward at batch 11 ran 1.8x slower). */
    LLVMValueRef blk = otc_lv_i64(r, blocked ? ROWS_BLOCK : 1);
    LLVMValueRef nblocks =
        blocked
            ? LLVMBuildSDiv(B, LLVMBuildAdd(B, width, otc_lv_i64(r, ROWS_BLOCK - 1), ""), blk, "")
            : width;
    otc_llvm_loop lk = {0}, lz = {0}, lb = {0}, le = {0};
    otc_lv_loop_begin(r, &lk, nblocks);
    LLVMValueRef e0 = blocked ? LLVMBuildMul(B, lk.i, blk, "") : lk.i;
    LLVMValueRef n = blk;
    if (blocked) {
        LLVMValueRef left = LLVMBuildSub(B, width, e0, "");
        n = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, left, blk, ""), left, blk, "");
    }
    LLVMValueRef node0 = otc_lv_gep(r, load ? dst : src, LLVMBuildMul(B, e0, S, ""));
    LLVMValueRef rows0 = otc_lv_gep(r, load ? src : dst, e0);
    /* The padding samples B..S lie in the last chunk: one vector of zeros there first, then
     * the samples over it (a memset call per row cost more than the copy at batch 1). */
    if (load) {
        LLVMValueRef last = LLVMBuildSub(B, S, otc_lv_i64(r, r->o.lanes), "");
        if (blocked) {
            otc_lv_loop_begin(r, &lz, n);
            LLVMValueRef node = otc_lv_gep(r, node0, LLVMBuildMul(B, lz.i, S, ""));
            otc_lv_store(r, LLVMConstNull(r->vec), otc_lv_gep(r, node, last));
            otc_lv_loop_end(r, &lz);
        } else {
            otc_lv_store(r, LLVMConstNull(r->vec), otc_lv_gep(r, node0, last));
        }
    }
    otc_lv_loop_begin(r, &lb, Bn);
    LLVMValueRef rows = otc_lv_gep(r, rows0, LLVMBuildMul(B, lb.i, row, ""));
    LLVMValueRef nodeb = otc_lv_gep(r, node0, lb.i);
    if (blocked) otc_lv_loop_begin(r, &le, n);
    LLVMValueRef rp = blocked ? otc_lv_gep(r, rows, le.i) : rows;
    LLVMValueRef np = blocked ? otc_lv_gep(r, nodeb, LLVMBuildMul(B, le.i, S, "")) : nodeb;
    otc_lv_store(r, otc_lv_load(r, r->ir.f32, load ? rp : np), load ? np : rp);
    if (blocked) otc_lv_loop_end(r, &le);
    otc_lv_loop_end(r, &lb);
    otc_lv_loop_end(r, &lk);
    LLVMBuildRetVoid(B);
    r->fn = saved_fn;
    r->entry = saved_entry;
    LLVMPositionBuilderAtEnd(B, saved_block);
    return fn;
}

static void rows_call(otc_llvm_r *r, bool load, LLVMValueRef dst, LLVMValueRef src, int64_t row,
                      const otc_plan_io *io) {
    /* one sample, contiguous both sides: no padding */
    if (r->o.forms == OTC_LV_FORMS_UNIT || r->o.forms == OTC_LV_FORMS_SCALAR) {
        LLVMValueRef at = otc_lv_gep(r, load ? src : dst, otc_lv_i64(r, io->offset));
        LLVMBuildMemCpy(B, load ? dst : at, 4, load ? at : src, 4, otc_lv_i64(r, 4 * io->width));
        return;
    }
    /* Blocked where the caller's rows are a page or wider (a sample per page): with narrower
     * rows the samples share pages, and the blocks' loops cost more than they save (the
     * 121-wide substrate's fast tier at batch 256 ran ~20% slower blocked). */
    LLVMValueRef fn = rows_helper(r, load, io->width >= ROWS_BLOCK && row >= ROWS_BLOCKED_ROW);
    LLVMValueRef column = otc_lv_i64(r, io->offset);
    if (load)
        src = otc_lv_gep(r, src, column);
    else
        dst = otc_lv_gep(r, dst, column);
    LLVMValueRef args[6] = {dst,
                            src,
                            r->a[OTC_LA_STRIDE],
                            r->a[OTC_LA_BATCH],
                            otc_lv_i64(r, row),
                            otc_lv_i64(r, io->width)};
    LLVMBuildCall2(B, LLVMGlobalGetValueType(fn), fn, args, 6, "");
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

/* A Delay's new state, for few samples: only the samples' slots (at batch 1 a 128-wide
 * state is 128 floats a vector apart, where the whole copy moves 8 KB). The padding slots keep
 * what they held; nothing reads them. */
static void state_copy_few(otc_llvm_r *r, int node) {
    otc_id src = otc_graph_node(r->g, node)->inputs[0];
    LLVMValueRef dst = otc_lv_value_base(r, node), from = otc_lv_value_base(r, src);
    otc_llvm_loop le = {0}, lb = {0};
    otc_lv_loop_begin(r, &le, otc_lv_i64(r, r->plan->values[node].size));
    otc_lv_loop_begin(r, &lb, r->a[OTC_LA_BATCH]);
    LLVMValueRef i =
        LLVMBuildAdd(B, LLVMBuildMul(B, le.i, otc_lv_i64(r, r->o.lanes), ""), lb.i, "");
    otc_lv_store(r, otc_lv_load(r, r->ir.f32, otc_lv_gep(r, from, i)), otc_lv_gep(r, dst, i));
    otc_lv_loop_end(r, &lb);
    otc_lv_loop_end(r, &le);
}

/* A Delay's new state: its source's value, all of it (value and slot share the layout). */
static void state_copy_all(otc_llvm_r *r, int node) {
    otc_id src = otc_graph_node(r->g, node)->inputs[0];
    LLVMValueRef all = otc_lv_extent(r, (otc_extent){0, r->plan->values[node].size * 4});
    LLVMBuildMemCpy(B, otc_lv_value_base(r, node), 4, otc_lv_value_base(r, src), 4, all);
}

/* Without a backward, fewer samples than half a vector (the map kernels' column mode) copy
 * only the samples' slots; one contiguous sample is the whole value. */
static void state_step(otc_llvm_r *r, const otc_plan_step *s) {
    if (r->plan->options.train || !r->plan->values[s->node].batched || r->o.lanes < 4 ||
        r->o.forms == OTC_LV_FORMS_UNIT)
        state_copy_all(r, s->node);
    else
        otc_lv_by_batch(r, s->node, state_copy_few, state_copy_all);
}

/* Forward step i; returns the next step's index. */
static int forward_step(otc_llvm_r *r, int i, LLVMValueRef flag) {
    (void)flag;
    const otc_plan *p = r->plan;
    const otc_plan_step *s = &p->steps[i];
    if (s->kind == OTC_STEP_LOAD) {
        load_step(r, s);
    } else if (s->kind == OTC_STEP_STORE) {
        store_step(r, s);
    } else if (s->kind == OTC_STEP_STATE) {
        state_step(r, s);
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
            otc_lv_loop_program(r, p->members[p->kernels[s->kernel].first], false);
            break;
        }
        r->kernel = -1;
    }
    return i + 1;
}

/* Backward step i (with the rest of its fused run); returns the next step's index.
 * zero_params (an i1) also zeroes the parameter gradients, which the executor's backward lets
 * accumulate. */
static int backward_step(otc_llvm_r *r, int i, LLVMValueRef zero_params) {
    const otc_plan *p = r->plan;
    const otc_plan_step *s = &p->steps[i];
    switch (s->kind) {
    case OTC_STEP_ZERO_GRADS: {
        LLVMValueRef from =
            LLVMBuildSelect(B, zero_params, otc_lv_i64(r, 0), otc_lv_i64(r, p->param_floats), "");
        LLVMValueRef total =
            p->options.zero_lazily ? otc_lv_i64(r, p->grads.base) : otc_lv_extent(r, p->grads);
        LLVMValueRef bytes =
            LLVMBuildMul(B, LLVMBuildSub(B, total, from, ""), otc_lv_i64(r, 4), "");
        LLVMBuildMemSet(B, otc_lv_gep(r, r->a[OTC_LA_GRADS], from),
                        LLVMConstInt(LLVMInt8TypeInContext(r->ir.ctx), 0, 0), bytes, 4);
        break;
    }
    case OTC_STEP_ZERO_GRAD: {
        LLVMValueRef bytes =
            LLVMBuildMul(B, r->a[OTC_LA_STRIDE], otc_lv_i64(r, 4 * p->values[s->node].size), "");
        LLVMBuildMemSet(B, otc_lv_grad_base(r, s->node),
                        LLVMConstInt(LLVMInt8TypeInContext(r->ir.ctx), 0, 0), bytes, 4);
        break;
    }
    case OTC_STEP_SEED:
        otc_lv_store(r, LLVMConstReal(r->ir.f32, 1.0), otc_lv_grad_base(r, s->node));
        break;
    case OTC_STEP_BACKWARD: {
        const otc_node *nd = otc_graph_node(r->g, s->node);
        int kind = p->kernels[s->kernel].kind;
        if (s->fused > 0) { /* the plan's backward fusion: one loop nest for the run */
            r->kernel = s->kernel;
            otc_lv_map_backward(r, i, i + s->fused);
            r->kernel = -1;
            i += s->fused - 1;
        } else if (nd->op == OTC_OP_MATMUL && kind == OTC_KERNEL_MATMUL) {
            otc_lv_matmul_backward(r, s->node);
        } else {
            otc_lv_loop_program(r, s->node, true);
        }
        break;
    }
    default:
        break;
    }
    return i + 1;
}

static LLVMValueRef hyper(otc_llvm_r *r, int i) {
    return otc_lv_load(r, r->ir.f32, otc_lv_gep(r, r->a[OTC_LA_HYPER], otc_lv_i64(r, i)));
}

/* The rule's trees (optim_rules.c) on the weights at i, of type t (a vector of the plan's
 * lanes or one float), stored in the rule's order m, v, p; scalar[] holds the hyper-parameters
 * already splat to t. */
static void update_at(otc_llvm_r *r, LLVMValueRef i, LLVMTypeRef t, const LLVMValueRef *scalar,
                      const otc_optim_rule *rule) {
    const otc_plan *p = r->plan;
    LLVMValueRef arg[OTC_OPTIM_ARG_COUNT] = {0};
    for (int k = OTC_OPTIM_ARG_FIRST_SCALAR; k < OTC_OPTIM_ARG_COUNT; k++) arg[k] = scalar[k];
    LLVMValueRef pp = otc_lv_gep(r, r->a[OTC_LA_WEIGHTS], i);
    LLVMValueRef mp = otc_lv_gep(r, r->a[OTC_LA_STATE], i);
    LLVMValueRef vp =
        otc_lv_gep(r, r->a[OTC_LA_STATE], LLVMBuildAdd(B, i, otc_lv_i64(r, p->param_floats), ""));
    arg[OTC_OPTIM_ARG_P] = otc_lv_load(r, t, pp);
    arg[OTC_OPTIM_ARG_G] = otc_lv_load(r, t, otc_lv_gep(r, r->a[OTC_LA_GRADS], i));
    if (rule->m) arg[OTC_OPTIM_ARG_M] = otc_lv_load(r, t, mp);
    if (rule->v) arg[OTC_OPTIM_ARG_V] = otc_lv_load(r, t, vp);
    const otc_llvm_leaves leaves = {.arg = arg, .n_arg = OTC_OPTIM_ARG_COUNT};
    if (rule->m) {
        arg[OTC_OPTIM_ARG_M] = otc_llvm_expr(&r->ir, rule->m, t, &leaves);
        otc_lv_store(r, arg[OTC_OPTIM_ARG_M], mp);
    }
    if (rule->v) {
        arg[OTC_OPTIM_ARG_V] = otc_llvm_expr(&r->ir, rule->v, t, &leaves);
        otc_lv_store(r, arg[OTC_OPTIM_ARG_V], vp);
    }
    otc_lv_store(r, otc_llvm_expr(&r->ir, rule->p, t, &leaves), pp);
}

/* One optimiser update of weights [from, from + n): whole vectors, then the last n % lanes
 * one at a time. Spelled in vectors rather than left to LLVM's loop vectoriser, which the fast
 * tier does not run: a scalar Adam step made that tier's batch-1 training slower than the
 * interpreter. Each weight sees the same operations either way, so the bits agree. */
static void update_range(otc_llvm_r *r, int64_t from, int64_t n, const otc_optim_rule *rule) {
    const int64_t w = otc_lv_vector(r) ? r->o.lanes : 1;
    LLVMValueRef scalar[OTC_OPTIM_ARG_COUNT] = {0}, splat[OTC_OPTIM_ARG_COUNT] = {0};
    for (int k = OTC_OPTIM_ARG_FIRST_SCALAR; k < OTC_OPTIM_ARG_COUNT; k++) {
        scalar[k] = hyper(r, OTC_LH_ARGS + k);
        if (n >= w) splat[k] = otc_lv_splat(r, scalar[k]);
    }
    const int64_t whole = n / w * w;
    if (whole > 0) {
        otc_llvm_loop l = {0};
        otc_lv_loop_begin(r, &l, otc_lv_i64(r, whole / w));
        LLVMValueRef i =
            LLVMBuildAdd(B, LLVMBuildMul(B, l.i, otc_lv_i64(r, w), ""), otc_lv_i64(r, from), "");
        update_at(r, i, w > 1 ? r->vec : r->ir.f32, splat, rule);
        otc_lv_loop_end(r, &l);
    }
    if (whole < n) {
        otc_llvm_loop l = {0};
        otc_lv_loop_begin(r, &l, otc_lv_i64(r, n - whole));
        update_at(r, LLVMBuildAdd(B, l.i, otc_lv_i64(r, from + whole), ""), r->ir.f32, scalar,
                  rule);
        otc_lv_loop_end(r, &l);
    }
}

/* The module serves any optimiser: one block of loops per rule, chosen by the rule scalar. */
static void update_steps(otc_llvm_r *r) {
    const otc_plan *p = r->plan;
    LLVMValueRef rule = LLVMBuildFPToSI(B, hyper(r, OTC_LH_RULE), r->ir.i32, "rule");
    LLVMBasicBlockRef blocks[OTC_OPTIM_RULE_COUNT];
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "updated");
    for (int k = 0; k < OTC_OPTIM_RULE_COUNT; k++)
        blocks[k] = LLVMAppendBasicBlockInContext(r->ir.ctx, r->fn, "update");
    LLVMValueRef sw = LLVMBuildSwitch(B, rule, blocks[0], OTC_OPTIM_RULE_COUNT - 1);
    for (int k = 1; k < OTC_OPTIM_RULE_COUNT; k++)
        LLVMAddCase(sw, LLVMConstInt(r->ir.i32, (unsigned long long)k, 0), blocks[k]);
    for (int k = 0; k < OTC_OPTIM_RULE_COUNT; k++) {
        LLVMPositionBuilderAtEnd(B, blocks[k]);
        for (int i = p->n_forward_steps; i < p->n_steps; i++)
            if (p->steps[i].kind == OTC_STEP_UPDATE)
                update_range(r, p->steps[i].offset, p->steps[i].count,
                             otc_optim_rule_get((otc_optim_rule_id)k));
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

/* ---- parts: a long schedule as several functions of bounded size ---- */

/* IR instructions (as rendered, before optimisation) after which a function is closed and the
 * schedule continues in the next one. LLVM's function passes (dominator trees, value
 * numbering, SLP's and the scheduler's windows, register allocation) grow faster than
 * linearly in a function's size: a deep graph's steps in one function took 8.6 s at 2,000
 * nodes and minutes at 8,000. In parts each pass sees bounded work, so the module compiles in
 * time linear in its steps. Steps talk through memory (the plan's buffers), so a part boundary
 * changes no arithmetic; at this size a part's call and status check are nothing next to its
 * work, and a graph of ordinary size (LeNet, an MLP, a NEAT genome) stays in one part. */
enum { PART_INSTRUCTIONS = 4000 };

static int64_t instructions_in(LLVMBasicBlockRef b) {
    int64_t n = 0;
    for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) n++;
    return n;
}

typedef int (*step_fn)(otc_llvm_r *r, int i, LLVMValueRef flag);

typedef struct {
    LLVMValueRef *fn;
    int n, cap;
} parts;

/* Steps [from, to) rendered by `step` into internal functions PREFIXwhat_0, _1, ... (taking
 * the argument block and, with `flag`, an i1 passed on to `step`), each closed once it holds
 * PART_INSTRUCTIONS; at least one function, even for no steps. */
static parts render_parts(otc_llvm_r *r, const char *what, int from, int to, bool flag,
                          step_fn step) {
    parts ps = {0};
    int i = from;
    do {
        if (ps.n == ps.cap) {
            int cap = ps.cap ? 2 * ps.cap : 4;
            LLVMValueRef *fn = realloc(ps.fn, (size_t)cap * sizeof *fn);
            if (!fn) {
                otc_lv_fail(r, OTC_ERR_NOMEM, "out of memory for the function list");
                break;
            }
            ps.fn = fn;
            ps.cap = cap;
        }
        char name[200];
        snprintf(name, sizeof name, "%s%s_%d", r->o.prefix ? r->o.prefix : "", what, ps.n);
        LLVMValueRef fn = otc_lv_begin_function(r, name, false, flag ? 1 : 0);
        ps.fn[ps.n++] = fn;
        int64_t size = 0;
        while (i < to && !r->st && size < PART_INSTRUCTIONS) {
            /* What the step adds: the blocks from where it starts (the entry block's shared
             * addresses are left out; they grow with the steps' own code). */
            LLVMBasicBlockRef b = LLVMGetInsertBlock(B);
            size -= instructions_in(b);
            i = step(r, i, flag ? LLVMGetParam(fn, 1) : NULL);
            for (; b; b = LLVMGetNextBasicBlock(b)) size += instructions_in(b);
        }
        LLVMBuildRet(B, LLVMConstInt(r->ir.i32, 0, 0));
    } while (i < to && !r->st);
    return ps;
}

/* The function `name` running the parts in order (passing its i1 flag on, with `flag`),
 * returning the first failed status. One part is renamed instead (exported: made external
 * and inlinable), so a graph of ordinary size keeps the code it always had. */
static LLVMValueRef chain_parts(otc_llvm_r *r, const char *name, bool exported, bool flag,
                                parts ps) {
    if (r->st) return NULL;
    if (ps.n == 1) {
        LLVMValueRef fn = ps.fn[0];
        LLVMSetValueName2(fn, name, strlen(name));
        if (exported) {
            LLVMSetLinkage(fn, LLVMExternalLinkage);
            LLVMRemoveEnumAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                           LLVMGetEnumAttributeKindForName("noinline", 8));
        }
        return fn;
    }
    LLVMValueRef fn = otc_lv_begin_function(r, name, exported, flag ? 1 : 0);
    for (int k = 0; k < ps.n; k++)
        return_if_failed(r,
                         call_body(r, ps.fn[k], flag ? 1 : 0, flag ? LLVMGetParam(fn, 1) : NULL));
    LLVMBuildRet(B, LLVMConstInt(r->ir.i32, 0, 0));
    return fn;
}

/* The forward steps, or the backward ones, as one function `name` (in parts when long). */
static LLVMValueRef render_steps(otc_llvm_r *r, const char *name, bool exported, bool backward) {
    const otc_plan *p = r->plan;
    parts ps = backward
                   ? render_parts(r, "bwd", p->n_forward_steps, p->n_steps, true, backward_step)
                   : render_parts(r, "fwd", 0, p->n_forward_steps, false, forward_step);
    LLVMValueRef fn = chain_parts(r, name, exported, backward, ps);
    free(ps.fn);
    return fn;
}

/* The exported PREFIXforward, PREFIXbackward, PREFIXtrain_step and PREFIXupdate (the optimiser
 * update alone, over gradients summed elsewhere: a tape's window) of a training module, over
 * the bodies. */
static void train_entries(otc_llvm_r *r, LLVMValueRef fwd, LLVMValueRef bwd, LLVMValueRef upd) {
    char name[160];
    name_of(name, sizeof name, &r->o, "forward");
    otc_lv_begin_function(r, name, true, 0);
    LLVMBuildRet(B, call_body(r, fwd, 0, NULL));
    name_of(name, sizeof name, &r->o, "backward");
    otc_lv_begin_function(r, name, true, 0);
    LLVMBuildRet(B, call_body(r, bwd, 1, LLVMConstInt(r->ir.i1, 0, 0)));
    name_of(name, sizeof name, &r->o, "train_step");
    otc_lv_begin_function(r, name, true, 0);
    return_if_failed(r, call_body(r, fwd, 0, NULL));
    return_if_failed(r, call_body(r, bwd, 1, LLVMConstInt(r->ir.i1, 1, 0)));
    call_body(r, upd, 0, NULL);
    LLVMValueRef loss = otc_lv_load(r, r->ir.f32, otc_lv_value_base(r, r->plan->options.loss));
    otc_lv_store(r, loss, r->a[OTC_LA_LOSS]);
    LLVMBuildRet(B, LLVMConstInt(r->ir.i32, 0, 0));
    name_of(name, sizeof name, &r->o, "update");
    otc_lv_begin_function(r, name, true, 0);
    LLVMBuildRet(B, call_body(r, upd, 0, NULL));
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

int otc_llvm_plan_batch_forms(const otc_plan *plan, const otc_llvm_render_options *o) {
    otc_llvm_r r = {.plan = plan, .g = plan->graph, .o = *o};
    int has = 0;
    /* One sample stored contiguously: every kernel that touches a sample's elements must be
     * in column mode (the batched forms read whole vectors of samples), and no backward may
     * sum over a stride (the form is for forward plans). */
    bool unit = !plan->options.train && o->lanes >= 4;
    /* One sample of map kernels without a column mode (neurons: a value or two per sample)
     * ran one value per W-lane vector: a tiny genome's chain of sigmoids waited on the vector
     * polynomial's latency and the rows' padding, ~0.7x the interpreter at batch 1. */
    bool scalar = !plan->options.train && o->lanes > 1 && plan->n_kernels > 0;
    for (int k = 0; k < plan->n_kernels; k++) {
        const otc_plan_kernel *K = &plan->kernels[k];
        bool few = K->kind != OTC_KERNEL_OP && otc_lv_kernel_has_few_form(&r, k);
        if (few) has |= OTC_LV_HAS_COLMODE;
        if (K->kind == OTC_KERNEL_OP && otc_lv_conv_one_sample_fits(&r, plan->members[K->first]))
            has |= OTC_LV_HAS_CONV1;
        if (!(K->kind == OTC_KERNEL_MAP && !K->batched) && !(few && K->batched)) unit = false;
        if (K->kind != OTC_KERNEL_MAP || few) scalar = false;
    }
    if (scalar && !has) return OTC_LV_HAS_SCALAR;
    return has | (unit && (has & OTC_LV_HAS_COLMODE) ? OTC_LV_HAS_UNIT : 0);
}

otc_llvm_batch_forms otc_llvm_form_of(int has, int lanes, int64_t batch, int64_t stride) {
    if (!has) return OTC_LV_FORMS_ALL;
    if (batch == 1 && stride == 1 && (has & OTC_LV_HAS_SCALAR)) return OTC_LV_FORMS_SCALAR;
    if (batch == 1 && stride == 1 && (has & OTC_LV_HAS_UNIT)) return OTC_LV_FORMS_UNIT;
    if (!otc_llvm_few_samples(lanes, batch, stride)) return OTC_LV_FORMS_MANY;
    /* a form whose code would be another's is that one (one module, not two alike) */
    if (batch == 1 && (has & OTC_LV_HAS_CONV1)) return OTC_LV_FORMS_ONE;
    return has & OTC_LV_HAS_COLMODE ? OTC_LV_FORMS_FEW : OTC_LV_FORMS_MANY;
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
    /* The shared functions are built with llvm.fmuladd: exact code keeps its own. */
    r->ir.shared_math = !o->aot && !o->exact;
    r->ir.exact = o->exact;
    r->ir.b = LLVMCreateBuilderInContext(ctx);
    /* One lane is spelled as plain floats: <1 x float> is no legal type for the fast
     * instruction selector, which handed every block of such a module to SelectionDAG (LLVM
     * 19, x86), and the optimiser scalarises it anyway. A 100-neuron genome's exact forward
     * at one lane (the evolve policy's pole-task code) compiled in ~9 ms of CPU instead of
     * ~18 in the fast tier, its training in ~47 instead of ~90; the fast selector's code ran
     * its forward ~5% slower (830 against 795 ns at batch 1). */
    r->vec = o->lanes == 1 ? r->ir.f32 : LLVMVectorType(r->ir.f32, (unsigned)o->lanes);
    r->eb = LLVMCreateBuilderInContext(ctx);
    size_t nv = (size_t)plan->n_values + 1;
    r->local = calloc(nv, sizeof *r->local);
    r->vb_cache = calloc(nv, sizeof *r->vb_cache);
    r->gb_cache = calloc(nv, sizeof *r->gb_cache);
    r->row_cap = 8 * nv + 64;
    r->rows = calloc(r->row_cap, sizeof *r->rows);
    r->used_values = malloc(2 * nv * sizeof *r->used_values);
    r->used_rows = malloc(r->row_cap * sizeof *r->used_rows);
    if (!r->local || !r->vb_cache || !r->gb_cache || !r->rows || !r->used_values || !r->used_rows)
        r->st = otc_fail(OTC_ERR_NOMEM, "out of memory for the LLVM renderer");
    char name[160];
    if (!r->st && !plan->options.train) {
        name_of(name, sizeof name, o, "forward");
        render_steps(r, name, true, false);
    } else if (!r->st) {
        name_of(name, sizeof name, o, "fwd_body");
        LLVMValueRef fwd = render_steps(r, name, false, false);
        name_of(name, sizeof name, o, "bwd_body");
        LLVMValueRef bwd = render_steps(r, name, false, true);
        name_of(name, sizeof name, o, "update_body");
        LLVMValueRef upd = otc_lv_begin_function(r, name, false, 0);
        update_steps(r);
        LLVMBuildRet(B, LLVMConstInt(r->ir.i32, 0, 0));
        if (!r->st) train_entries(r, fwd, bwd, upd);
    }
    if (!r->st && o->aot) aot_wrapper(r);
    LLVMDisposeBuilder(r->ir.b);
    LLVMDisposeBuilder(r->eb);
    free(r->local);
    free(r->vb_cache);
    free(r->gb_cache);
    free(r->rows);
    free(r->used_values);
    free(r->used_rows);
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
