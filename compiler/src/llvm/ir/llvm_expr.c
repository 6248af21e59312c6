/* Expression trees (otc/expr.h) built as LLVM IR on floats or <W x float> vectors: selects
 * instead of branches, the math library as this backend's functions, a subtree used twice
 * built once. */
#include <stdint.h>

#include "llvm_internal.h"

enum { MAX_MEMO = 128 };

typedef struct {
    otc_llvm_ir *ir;
    LLVMTypeRef T, I; /* the float type and its integer twin */
    const otc_llvm_leaves *leaves;
    const otc_expr *done[MAX_MEMO];
    LLVMValueRef value[MAX_MEMO];
    int n_done;
} builder;

static LLVMValueRef splat_int(builder *bd, long long v) {
    LLVMValueRef c = LLVMConstInt(bd->ir->i32, (unsigned long long)v, 1);
    if (LLVMGetTypeKind(bd->T) != LLVMVectorTypeKind) return c;
    LLVMValueRef lanes[64];
    unsigned n = LLVMGetVectorSize(bd->T);
    for (unsigned i = 0; i < n && i < 64; i++) lanes[i] = c;
    return LLVMConstVector(lanes, n);
}

static LLVMValueRef leaf(builder *bd, LLVMValueRef v) {
    /* A renderer that passes no value for a leaf its expression reads has a bug; zero keeps
     * the IR valid and the tests comparing against the interpreter catch it. */
    return v ? v : otc_llvm_const(bd->T, 0.0);
}

static LLVMValueRef build(builder *bd, const otc_expr *e);

static LLVMValueRef build_op(builder *bd, const otc_expr *e) {
    otc_llvm_ir *ir = bd->ir;
    LLVMBuilderRef B = ir->b;
    LLVMTypeRef T = bd->T;
    const otc_llvm_leaves *l = bd->leaves;
    switch (e->op) {
    case OTC_EX_CONST:
        return otc_llvm_const(T, e->k);
    case OTC_EX_ICONST:
        return splat_int(bd, (long long)e->k);
    case OTC_EX_X:
        return leaf(bd, l->x);
    case OTC_EX_X1:
        return leaf(bd, l->x1);
    case OTC_EX_Y:
        return leaf(bd, l->y);
    case OTC_EX_A:
        return leaf(bd, l->a);
    case OTC_EX_ARG:
        return leaf(bd, e->n >= 0 && e->n < l->n_arg ? l->arg[e->n] : NULL);
    default:
        break;
    }
    LLVMValueRef a = e->a ? build(bd, e->a) : NULL;
    LLVMValueRef b = e->b ? build(bd, e->b) : NULL;
    LLVMValueRef c = e->c ? build(bd, e->c) : NULL;
    switch (e->op) {
    case OTC_EX_NEG:
        return LLVMBuildFNeg(B, a, "");
    case OTC_EX_ABS:
        return otc_llvm_intrinsic(ir, "llvm.fabs", &a, 1);
    case OTC_EX_EXP:
        return otc_llvm_exp(ir, a);
    case OTC_EX_EXPM1:
        return otc_llvm_expm1(ir, a);
    case OTC_EX_LOG:
        return otc_llvm_log(ir, a);
    case OTC_EX_LOG1P:
        return otc_llvm_log1p(ir, a);
    case OTC_EX_TANH:
        return otc_llvm_tanh(ir, a);
    case OTC_EX_SIN:
        return otc_llvm_sin(ir, a);
    case OTC_EX_COS:
        return otc_llvm_cos(ir, a);
    case OTC_EX_SQRT:
        return otc_llvm_intrinsic(ir, "llvm.sqrt", &a, 1);
    case OTC_EX_ADD:
        return LLVMBuildFAdd(B, a, b, "");
    case OTC_EX_SUB:
        return LLVMBuildFSub(B, a, b, "");
    case OTC_EX_MUL:
        return LLVMBuildFMul(B, a, b, "");
    case OTC_EX_DIV:
        /* Lanes past the batch divide by one: no spurious inf/NaN there. */
        if (l->mask) b = LLVMBuildSelect(B, l->mask, b, otc_llvm_const(T, 1.0), "");
        return LLVMBuildFDiv(B, a, b, "");
    case OTC_EX_MAX:
        return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, a, b, ""), a, b, "");
    case OTC_EX_COPYSIGN: {
        LLVMValueRef args[2] = {a, b};
        return otc_llvm_intrinsic(ir, "llvm.copysign", args, 2);
    }
    case OTC_EX_FMA:
        return otc_llvm_fma(ir, a, b, c);
    case OTC_EX_POLY: {
        LLVMValueRef y = otc_llvm_const(T, e->coef[0]);
        for (int i = 1; i < e->n; i++) y = otc_llvm_fma(ir, y, a, otc_llvm_const(T, e->coef[i]));
        return y;
    }
    case OTC_EX_LT:
        return LLVMBuildFCmp(B, LLVMRealOLT, a, b, "");
    case OTC_EX_GT:
        return LLVMBuildFCmp(B, LLVMRealOGT, a, b, "");
    case OTC_EX_EQ:
        return LLVMBuildFCmp(B, LLVMRealOEQ, a, b, "");
    case OTC_EX_SELECT:
        return LLVMBuildSelect(B, a, b, c, "");
    case OTC_EX_F2I:
        return LLVMBuildFPToSI(B, a, bd->I, "");
    case OTC_EX_I2F:
        return LLVMBuildSIToFP(B, a, T, "");
    case OTC_EX_BITS:
        return LLVMBuildBitCast(B, a, bd->I, "");
    case OTC_EX_FROM_BITS:
        return LLVMBuildBitCast(B, a, T, "");
    case OTC_EX_IADD:
        return LLVMBuildAdd(B, a, b, "");
    case OTC_EX_ISUB:
        return LLVMBuildSub(B, a, b, "");
    case OTC_EX_IAND:
        return LLVMBuildAnd(B, a, b, "");
    case OTC_EX_IOR:
        return LLVMBuildOr(B, a, b, "");
    case OTC_EX_SHL:
        return LLVMBuildShl(B, a, b, "");
    case OTC_EX_LSHR:
        return LLVMBuildLShr(B, a, b, "");
    case OTC_EX_INE:
        return LLVMBuildICmp(B, LLVMIntNE, a, b, "");
    default:
        break; /* the leaves, above */
    }
    return otc_llvm_const(T, 0.0);
}

static LLVMValueRef build(builder *bd, const otc_expr *e) {
    for (int i = 0; i < bd->n_done; i++)
        if (bd->done[i] == e) return bd->value[i];
    LLVMValueRef v = build_op(bd, e);
    if (bd->n_done < MAX_MEMO && otc_expr_arity(e->op) > 0) {
        bd->done[bd->n_done] = e;
        bd->value[bd->n_done++] = v;
    }
    return v;
}

LLVMValueRef otc_llvm_expr(otc_llvm_ir *ir, const otc_expr *e, LLVMTypeRef t,
                           const otc_llvm_leaves *leaves) {
    builder bd = {.ir = ir, .T = t, .leaves = leaves};
    bd.I = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMVectorType(ir->i32, LLVMGetVectorSize(t))
                                                    : ir->i32;
    return build(&bd, e);
}
