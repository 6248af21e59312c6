/* Math for the LLVM renderer as plain scalar IR, so whole batch loops vectorise: the math
 * library's trees (otc/math_lib.h), and the activation table's expressions, inline or as
 * out-of-line functions. */
#include <stdio.h>
#include <string.h>

#include "llvm_internal.h"
#include "otc/math_lib.h"
#include "otc/ops.h"

void otc_llvm_ir_types(otc_llvm_ir *ir) {
    ir->f32 = LLVMFloatTypeInContext(ir->ctx);
    ir->i1 = LLVMInt1TypeInContext(ir->ctx);
    ir->i32 = LLVMInt32TypeInContext(ir->ctx);
    ir->i64 = LLVMInt64TypeInContext(ir->ctx);
    ir->ptr = LLVMPointerTypeInContext(ir->ctx, 0);
    ir->void_t = LLVMVoidTypeInContext(ir->ctx);
}

LLVMValueRef otc_llvm_f32(otc_llvm_ir *ir, double v) {
    return LLVMConstReal(ir->f32, v);
}

LLVMValueRef otc_llvm_const(LLVMTypeRef t, double v) {
    if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return LLVMConstReal(t, v);
    LLVMValueRef lanes[64];
    unsigned n = LLVMGetVectorSize(t);
    LLVMValueRef c = LLVMConstReal(LLVMGetElementType(t), v);
    for (unsigned i = 0; i < n && i < 64; i++) lanes[i] = c;
    return LLVMConstVector(lanes, n);
}

LLVMValueRef otc_llvm_intrinsic(otc_llvm_ir *ir, const char *name, LLVMValueRef *args, int n) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef t = LLVMTypeOf(args[0]);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(ir->mod, id, &t, 1);
    LLVMTypeRef fty = LLVMIntrinsicGetType(ir->ctx, id, &t, 1);
    return LLVMBuildCall2(ir->b, fty, fn, args, (unsigned)n, "");
}

LLVMValueRef otc_llvm_fma(otc_llvm_ir *ir, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
    LLVMValueRef args[3] = {a, b, c};
    return otc_llvm_intrinsic(ir, ir->exact ? "llvm.fma" : "llvm.fmuladd", args, 3);
}

LLVMValueRef otc_llvm_mul_add(otc_llvm_ir *ir, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
    return LLVMBuildFAdd(ir->b, LLVMBuildFMul(ir->b, a, b, ""), c, "");
}

/* Exact code calls the C library the interpreter calls (expf for OTC_EX_EXP, ...), lane by
 * lane: the same function of the same process gives the same bits. */
static LLVMValueRef libm(otc_llvm_ir *ir, otc_ex_op f, LLVMValueRef x) {
    static const char *const names[] = {
        [OTC_EX_EXP] = "expf",     [OTC_EX_EXPM1] = "expm1f", [OTC_EX_LOG] = "logf",
        [OTC_EX_LOG1P] = "log1pf", [OTC_EX_TANH] = "tanhf",   [OTC_EX_SIN] = "sinf",
        [OTC_EX_COS] = "cosf"};
    LLVMValueRef fn = LLVMGetNamedFunction(ir->mod, names[f]);
    LLVMTypeRef ft = LLVMFunctionType(ir->f32, &ir->f32, 1, 0);
    if (!fn) fn = LLVMAddFunction(ir->mod, names[f], ft);
    LLVMTypeRef t = LLVMTypeOf(x);
    if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return LLVMBuildCall2(ir->b, ft, fn, &x, 1, "");
    LLVMValueRef y = LLVMGetUndef(t);
    for (unsigned i = 0; i < LLVMGetVectorSize(t); i++) {
        LLVMValueRef at = LLVMConstInt(ir->i32, i, 0);
        LLVMValueRef xi = LLVMBuildExtractElement(ir->b, x, at, "");
        y = LLVMBuildInsertElement(ir->b, y, LLVMBuildCall2(ir->b, ft, fn, &xi, 1, ""), at, "");
    }
    return y;
}

/* The math library: each function its tree (otc/math_lib.h) built on x; the calls inside
 * a tree (tanh's exp) come back here through otc_llvm_expr. */
static LLVMValueRef math(otc_llvm_ir *ir, otc_ex_op f, LLVMValueRef x) {
    if (ir->exact) return libm(ir, f, x);
    return otc_llvm_expr(ir, otc_math_tree(f), LLVMTypeOf(x), &(otc_llvm_leaves){.x = x});
}

LLVMValueRef otc_llvm_exp(otc_llvm_ir *ir, LLVMValueRef x) {
    return math(ir, OTC_EX_EXP, x);
}

LLVMValueRef otc_llvm_expm1(otc_llvm_ir *ir, LLVMValueRef x) {
    return math(ir, OTC_EX_EXPM1, x);
}

LLVMValueRef otc_llvm_log(otc_llvm_ir *ir, LLVMValueRef x) {
    return math(ir, OTC_EX_LOG, x);
}

LLVMValueRef otc_llvm_log1p(otc_llvm_ir *ir, LLVMValueRef x) {
    return math(ir, OTC_EX_LOG1P, x);
}

LLVMValueRef otc_llvm_tanh(otc_llvm_ir *ir, LLVMValueRef x) {
    return math(ir, OTC_EX_TANH, x);
}

LLVMValueRef otc_llvm_sin(otc_llvm_ir *ir, LLVMValueRef x) {
    return math(ir, OTC_EX_SIN, x);
}

LLVMValueRef otc_llvm_cos(otc_llvm_ir *ir, LLVMValueRef x) {
    return math(ir, OTC_EX_COS, x);
}

LLVMValueRef otc_llvm_act(otc_llvm_ir *ir, int act, float alpha, LLVMValueRef x) {
    const otc_act_info *info = otc_act_get((otc_act)act);
    if (!info) return NULL;
    LLVMTypeRef T = LLVMTypeOf(x);
    return otc_llvm_expr(ir, info->f, T, &(otc_llvm_leaves){.x = x, .a = otc_llvm_const(T, alpha)});
}

LLVMValueRef otc_llvm_act_grad(otc_llvm_ir *ir, int act, float alpha, LLVMValueRef x,
                               LLVMValueRef y) {
    const otc_act_info *info = otc_act_get((otc_act)act);
    if (!info) return NULL;
    LLVMTypeRef T = LLVMTypeOf(x);
    return otc_llvm_expr(ir, info->df, T,
                         &(otc_llvm_leaves){.x = x, .y = y, .a = otc_llvm_const(T, alpha)});
}

/* ---- out-of-line activations: one copy per module, so a graph of many neurons compiles
 * a call per neuron instead of a polynomial per neuron ---- */

/* Inline when the expression calls no math (a few selects and multiplies). */
static bool cheap(const otc_expr *e) {
    return !otc_expr_calls_math(e);
}

static void add_attr(otc_llvm_ir *ir, LLVMValueRef fn, const char *attr) {
    unsigned kind = LLVMGetEnumAttributeKindForName(attr, strlen(attr));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(ir->ctx, kind, 0));
}

bool otc_llvm_act_parse_name(const char *name, int *act, float *alpha, unsigned *lanes,
                             bool *grad) {
    if (strncmp(name, "otc.", 4)) return false;
    name += 4;
    for (int a = 0; a < OTC_ACT_COUNT; a++) {
        const otc_act_info *info = otc_act_get((otc_act)a);
        size_t n = info ? strlen(info->name) : 0;
        if (!n || strncmp(name, info->name, n) || name[n] != '.') continue;
        const char *rest = name + n;
        *grad = !strncmp(rest, ".grad.", 6);
        if (*grad) rest += 5;
        union {
            unsigned u;
            float f;
        } bits;
        char tail;
        if (sscanf(rest, ".%8x.x%u%c", &bits.u, lanes, &tail) != 2 || *lanes > 64) return false;
        *act = a;
        *alpha = bits.f;
        return true;
    }
    return false;
}

void otc_llvm_act_define(otc_llvm_ir *ir, LLVMValueRef fn, int act, float alpha, bool grad) {
    LLVMBasicBlockRef saved = LLVMGetInsertBlock(ir->b);
    LLVMPositionBuilderAtEnd(ir->b, LLVMAppendBasicBlockInContext(ir->ctx, fn, "entry"));
    LLVMValueRef x = LLVMGetParam(fn, 0);
    LLVMValueRef y = grad ? otc_llvm_act_grad(ir, act, alpha, x, LLVMGetParam(fn, 1))
                          : otc_llvm_act(ir, act, alpha, x);
    LLVMBuildRet(ir->b, y ? y : x);
    if (saved) LLVMPositionBuilderAtEnd(ir->b, saved);
}

LLVMValueRef otc_llvm_act_declare(otc_llvm_ir *ir, int act, float alpha, LLVMTypeRef t, bool grad) {
    const otc_act_info *info = otc_act_get((otc_act)act);
    /* xN: <N x float>; x0: a plain float. */
    unsigned lanes = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetVectorSize(t) : 0;
    union {
        float f;
        unsigned u;
    } bits = {alpha};
    char name[96];
    snprintf(name, sizeof name, "otc.%s%s.%08x.x%u", info ? info->name : "act", grad ? ".grad" : "",
             bits.u, lanes);
    LLVMValueRef fn = LLVMGetNamedFunction(ir->mod, name);
    if (fn) return fn;
    LLVMTypeRef params[2] = {t, t};
    LLVMTypeRef ft = LLVMFunctionType(t, params, grad ? 2 : 1, 0);
    fn = LLVMAddFunction(ir->mod, name, ft);
    const char *attrs[] = {"nounwind", "willreturn", "nofree", "nosync"};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) add_attr(ir, fn, attrs[i]);
    /* No memory access: calls can move and vanish like arithmetic. */
    unsigned mem = LLVMGetEnumAttributeKindForName("memory", 6);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(ir->ctx, mem, 0));
    return fn;
}

/* The function computing the activation (grad: its derivative from x and y) on values of x's
 * type: with shared_math an external declaration (llvm_library.c defines it once per
 * process), else the module's own copy, created on first use. */
static LLVMValueRef act_function(otc_llvm_ir *ir, int act, float alpha, LLVMTypeRef t, bool grad) {
    LLVMValueRef fn = otc_llvm_act_declare(ir, act, alpha, t, grad);
    if (ir->shared_math || LLVMCountBasicBlocks(fn) > 0) return fn;
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    add_attr(ir, fn, "noinline");
    otc_llvm_act_define(ir, fn, act, alpha, grad);
    return fn;
}

LLVMValueRef otc_llvm_act_call(otc_llvm_ir *ir, int act, float alpha, LLVMValueRef x) {
    const otc_act_info *info = otc_act_get((otc_act)act);
    if (!info || cheap(info->f)) return otc_llvm_act(ir, act, alpha, x);
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef fn = act_function(ir, act, alpha, t, false);
    LLVMValueRef call = LLVMBuildCall2(ir->b, LLVMGlobalGetValueType(fn), fn, &x, 1, "");
    return call;
}

LLVMValueRef otc_llvm_act_grad_call(otc_llvm_ir *ir, int act, float alpha, LLVMValueRef x,
                                    LLVMValueRef y) {
    const otc_act_info *info = otc_act_get((otc_act)act);
    if (!info || cheap(info->df)) return otc_llvm_act_grad(ir, act, alpha, x, y); /* from y */
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef fn = act_function(ir, act, alpha, t, true);
    LLVMValueRef args[2] = {x, y};
    LLVMValueRef call = LLVMBuildCall2(ir->b, LLVMGlobalGetValueType(fn), fn, args, 2, "");
    return call;
}
