/* Math for the LLVM renderer as plain scalar IR (polynomials after Cephes' single-precision
 * routines, selects instead of branches) so whole batch loops vectorise; and the
 * activation table's expressions as IR, inline or as out-of-line functions. */
#include <stdio.h>
#include <string.h>

#include "llvm_internal.h"
#include "math_poly.h"
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

/* An integer constant shaped like t (i32 or <W x i32>). */
static LLVMValueRef const_i32(otc_llvm_ir *ir, LLVMTypeRef t, long long v) {
    if (LLVMGetTypeKind(t) != LLVMVectorTypeKind)
        return LLVMConstInt(ir->i32, (unsigned long long)v, 1);
    LLVMValueRef lanes[64];
    unsigned n = LLVMGetVectorSize(t);
    LLVMValueRef c = LLVMConstInt(ir->i32, (unsigned long long)v, 1);
    for (unsigned i = 0; i < n && i < 64; i++) lanes[i] = c;
    return LLVMConstVector(lanes, n);
}

/* i32 or <W x i32>, the integer twin of a float (vector) type. */
static LLVMTypeRef int_like(otc_llvm_ir *ir, LLVMTypeRef t) {
    if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return ir->i32;
    return LLVMVectorType(ir->i32, LLVMGetVectorSize(t));
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
    return otc_llvm_intrinsic(ir, "llvm.fmuladd", args, 3);
}

/* Short spellings for the formulas below. */
#define B            ir->b
#define K(v)         otc_llvm_const(T, (v))
#define KI(v)        const_i32(ir, T, (v))
#define ADD(a, c)    LLVMBuildFAdd(B, (a), (c), "")
#define SUB(a, c)    LLVMBuildFSub(B, (a), (c), "")
#define MUL(a, c)    LLVMBuildFMul(B, (a), (c), "")
#define DIV(a, c)    LLVMBuildFDiv(B, (a), (c), "")
#define FMA(a, c, d) otc_llvm_fma(ir, (a), (c), (d))
#define SEL(c, a, d) LLVMBuildSelect(B, (c), (a), (d), "")
#define LT(a, c)     LLVMBuildFCmp(B, LLVMRealOLT, (a), (c), "")
#define GT(a, c)     LLVMBuildFCmp(B, LLVMRealOGT, (a), (c), "")

static LLVMValueRef fabs_ir(otc_llvm_ir *ir, LLVMValueRef x) {
    return otc_llvm_intrinsic(ir, "llvm.fabs", &x, 1);
}

/* Horner's rule: c[0] * x^(n-1) + ... + c[n-1]. */
static LLVMValueRef poly(otc_llvm_ir *ir, LLVMValueRef x, const double *c, int n) {
    LLVMTypeRef T = LLVMTypeOf(x);
    LLVMValueRef y = K(c[0]);
    for (int i = 1; i < n; i++) y = FMA(y, x, K(c[i]));
    return y;
}

LLVMValueRef otc_llvm_exp(otc_llvm_ir *ir, LLVMValueRef x) {
    LLVMTypeRef T = LLVMTypeOf(x);
    static const double p[] = OTC_MP_EXP_P;
    /* Clamp so 2^n stays a normal float; a NaN fails both compares and stays NaN. */
    const double hi = OTC_MP_EXP_HI, lo = OTC_MP_EXP_LO;
    x = SEL(GT(x, K(hi)), K(hi), x);
    x = SEL(LT(x, K(lo)), K(lo), x);
    /* x = n ln2 + r with |r| <= ln2/2, ln2 split in two so n*C1 is exact. */
    LLVMValueRef fx = FMA(x, K(OTC_MP_LOG2E), K(0.5));
    fx = otc_llvm_intrinsic(ir, "llvm.floor", &fx, 1);
    LLVMValueRef r = SUB(x, MUL(fx, K(OTC_MP_LN2_C1)));
    r = SUB(r, MUL(fx, K(OTC_MP_LN2_C2)));
    LLVMValueRef z = MUL(r, r);
    LLVMValueRef y = FMA(poly(ir, r, p, OTC_MP_EXP_N), z, ADD(r, K(1.0)));
    /* 2^n assembled in the exponent bits. */
    LLVMValueRef n = LLVMBuildFPToSI(B, fx, int_like(ir, T), "");
    n = LLVMBuildShl(B, LLVMBuildAdd(B, n, KI(127), ""), KI(23), "");
    return MUL(y, LLVMBuildBitCast(B, n, T, ""));
}

LLVMValueRef otc_llvm_expm1(otc_llvm_ir *ir, LLVMValueRef x) {
    LLVMTypeRef T = LLVMTypeOf(x);
    /* exp(x) - 1 cancels near 0; there the Taylor series to x^6 is exact to float. */
    static const double t[] = OTC_MP_EXPM1_P;
    LLVMValueRef small = poly(ir, x, t, OTC_MP_EXPM1_N);
    LLVMValueRef big = SUB(otc_llvm_exp(ir, x), K(1.0));
    return SEL(LT(fabs_ir(ir, x), K(OTC_MP_EXPM1_SMALL)), small, big);
}

/* log(w) for normal w > 0 (Cephes logf): w = m 2^e with m in [sqrt(1/2), sqrt(2)). */
LLVMValueRef otc_llvm_log(otc_llvm_ir *ir, LLVMValueRef w) {
    LLVMTypeRef T = LLVMTypeOf(w);
    static const double p[] = OTC_MP_LOG_P;
    LLVMValueRef bits = LLVMBuildBitCast(B, w, int_like(ir, T), "");
    LLVMValueRef e = LLVMBuildSub(B, LLVMBuildLShr(B, bits, KI(23), ""), KI(126), "");
    LLVMValueRef mbits =
        LLVMBuildOr(B, LLVMBuildAnd(B, bits, KI(0x807fffff), ""), KI(0x3f000000), "");
    LLVMValueRef m = LLVMBuildBitCast(B, mbits, T, ""); /* [0.5, 1) */
    LLVMValueRef lowm = LT(m, K(OTC_MP_SQRTH));
    LLVMValueRef fe = LLVMBuildSIToFP(B, e, T, "");
    fe = SEL(lowm, SUB(fe, K(1.0)), fe);
    LLVMValueRef xm = SEL(lowm, SUB(ADD(m, m), K(1.0)), SUB(m, K(1.0)));
    LLVMValueRef z = MUL(xm, xm);
    LLVMValueRef y = MUL(MUL(xm, z), poly(ir, xm, p, OTC_MP_LOG_N));
    y = FMA(fe, K(OTC_MP_LN2_C2), y);
    y = FMA(z, K(-0.5), y);
    LLVMValueRef r = ADD(xm, y);
    return FMA(fe, K(OTC_MP_LN2_C1), r);
}

LLVMValueRef otc_llvm_log1p(otc_llvm_ir *ir, LLVMValueRef x) {
    LLVMTypeRef T = LLVMTypeOf(x);
    /* log1p(x) = log(w) * x / (w - 1) with w = 1 + x rounded: the quotient cancels the
     * rounding of w (Goldberg's trick); w == 1 means x is below float resolution. */
    LLVMValueRef w = ADD(x, K(1.0));
    LLVMValueRef wm1 = SUB(w, K(1.0));
    LLVMValueRef exact = LLVMBuildFCmp(B, LLVMRealOEQ, wm1, K(0.0), "");
    LLVMValueRef safe = SEL(exact, K(1.0), wm1);
    LLVMValueRef r = DIV(MUL(otc_llvm_log(ir, w), x), safe);
    return SEL(exact, x, r);
}

LLVMValueRef otc_llvm_tanh(otc_llvm_ir *ir, LLVMValueRef x) {
    LLVMTypeRef T = LLVMTypeOf(x);
    static const double p[] = OTC_MP_TANH_P;
    LLVMValueRef ax = fabs_ir(ir, x);
    /* Small |x|: odd polynomial. Large: 1 - 2 / (e^{2|x|} + 1), sign restored. */
    LLVMValueRef z = MUL(x, x);
    LLVMValueRef small = FMA(MUL(poly(ir, z, p, OTC_MP_TANH_N), z), x, x);
    LLVMValueRef e = otc_llvm_exp(ir, ADD(ax, ax));
    LLVMValueRef big = SUB(K(1.0), DIV(K(2.0), ADD(e, K(1.0))));
    LLVMValueRef args[2] = {big, x};
    big = otc_llvm_intrinsic(ir, "llvm.copysign", args, 2);
    return SEL(LT(ax, K(OTC_MP_TANH_SMALL)), small, big);
}

/* Shared by sin and cos: reduce |x| by multiples of pi/4 (Cephes' three-part pi/4) and
 * evaluate the sine and cosine polynomials on the remainder. */
static void sincos_reduce(otc_llvm_ir *ir, LLVMValueRef ax, LLVMValueRef *j, LLVMValueRef *s,
                          LLVMValueRef *c) {
    LLVMTypeRef T = LLVMTypeOf(ax);
    static const double sp[] = OTC_MP_SIN_P;
    static const double cp[] = OTC_MP_COS_P;
    LLVMValueRef ji = LLVMBuildFPToSI(B, MUL(ax, K(OTC_MP_FOPI)), int_like(ir, T), "");
    ji = LLVMBuildAnd(B, LLVMBuildAdd(B, ji, KI(1), ""), KI(-2), "");
    LLVMValueRef y = LLVMBuildSIToFP(B, ji, T, "");
    LLVMValueRef r = SUB(ax, MUL(y, K(OTC_MP_DP1)));
    r = SUB(r, MUL(y, K(OTC_MP_DP2)));
    r = SUB(r, MUL(y, K(OTC_MP_DP3)));
    LLVMValueRef z = MUL(r, r);
    *s = FMA(MUL(poly(ir, z, sp, OTC_MP_SIN_N), z), r, r);
    *c = ADD(FMA(MUL(poly(ir, z, cp, OTC_MP_COS_N), z), z, MUL(z, K(-0.5))), K(1.0));
    *j = LLVMBuildAnd(B, ji, KI(7), "");
}

static LLVMValueRef bit_set(otc_llvm_ir *ir, LLVMValueRef j, unsigned bit) {
    LLVMTypeRef T = LLVMTypeOf(j);
    LLVMValueRef v = LLVMBuildAnd(B, j, KI(bit), "");
    return LLVMBuildICmp(B, LLVMIntNE, v, KI(0), "");
}

LLVMValueRef otc_llvm_sin(otc_llvm_ir *ir, LLVMValueRef x) {
    LLVMTypeRef T = LLVMTypeOf(x);
    LLVMValueRef j, s, c;
    sincos_reduce(ir, fabs_ir(ir, x), &j, &s, &c);
    /* j in {0,2,4,6}: 4 and 6 flip the sign; 2 and 6 take the cosine polynomial. */
    LLVMValueRef y = SEL(bit_set(ir, j, 2), c, s);
    y = SEL(bit_set(ir, j, 4), LLVMBuildFNeg(B, y, ""), y);
    return SEL(LT(x, K(0.0)), LLVMBuildFNeg(B, y, ""), y);
}

LLVMValueRef otc_llvm_cos(otc_llvm_ir *ir, LLVMValueRef x) {
    LLVMValueRef j, s, c;
    sincos_reduce(ir, fabs_ir(ir, x), &j, &s, &c);
    /* cos is even; j 2 and 6 take the sine polynomial, j 2 and 4 are negative. */
    LLVMValueRef y = SEL(bit_set(ir, j, 2), s, c);
    LLVMValueRef neg = LLVMBuildXor(B, bit_set(ir, j, 2), bit_set(ir, j, 4), "");
    return SEL(neg, LLVMBuildFNeg(B, y, ""), y);
}

LLVMValueRef otc_llvm_act(otc_llvm_ir *ir, int act, float alpha, LLVMValueRef x) {
    const otc_act_info *info = otc_act_get((otc_act)act);
    if (!info) return NULL;
    LLVMTypeRef T = LLVMTypeOf(x);
    return otc_llvm_expr(ir, info->f, T, &(otc_llvm_leaves){.x = x, .a = K(alpha)});
}

LLVMValueRef otc_llvm_act_grad(otc_llvm_ir *ir, int act, float alpha, LLVMValueRef x,
                               LLVMValueRef y) {
    const otc_act_info *info = otc_act_get((otc_act)act);
    if (!info) return NULL;
    LLVMTypeRef T = LLVMTypeOf(x);
    return otc_llvm_expr(ir, info->df, T, &(otc_llvm_leaves){.x = x, .y = y, .a = K(alpha)});
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
