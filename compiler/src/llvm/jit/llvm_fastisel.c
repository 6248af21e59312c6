/* The fast tier's IR rewritten into forms LLVM's fast instruction selector takes whole. The
 * same operations on the same values (no contraction, no reassociation): the code computes
 * the same bits. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llvm_internal.h"

/* Why: the fast selector (x86's, LLVM 19) cannot materialise a vector constant, select a
 * shufflevector (a broadcast), a vector compare or a vector select; the first instruction it
 * cannot take, counting from a block's end, hands that instruction and everything above it
 * in the block to SelectionDAG, several times slower per instruction. A kernel's batch loop
 * is one block with a weight's broadcast and a constant (a neuron's response 1.0, a sum's
 * starting 0) per neuron, so nearly all of a 100-neuron genome's forward went through
 * SelectionDAG (code generation ~20-25 ms of CPU; ~10 after this, on a loaded machine).
 * What is rewritten:
 *  - vector constants: loads of constant globals (what SelectionDAG emits: a constant-pool
 *    operand, which the fast selector folds into the instruction too);
 *  - broadcasts of weights (loads the renderer marks !invariant.load): one loop per call
 *    (a small function) broadcasts each weight the function uses into a stack table, and
 *    the kernels load the ready vectors; other broadcasts of entry values move to the entry
 *    block;
 *  - a vector select on a compare (a ReLU, a max): a call of a small function doing it;
 *  - llvm.fabs (vectors and scalars): an and of the bit patterns;
 *  - instructions without users or effects: removed (a dead compare in a loop would keep its
 *    operands' block in SelectionDAG). */

/* Is the constant c one the selector cannot materialise (a vector of numbers, zeros
 * included; undef/poison it takes, and vectors of i1 are left to SelectionDAG, as their
 * memory layout is packed bits)? */
static bool vector_constant(LLVMValueRef c) {
    if (!LLVMIsAConstant(c) || LLVMIsAUndefValue(c) || LLVMIsAGlobalValue(c)) return false;
    LLVMTypeRef t = LLVMTypeOf(c);
    if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return false;
    LLVMTypeRef e = LLVMGetElementType(t);
    LLVMTypeKind k = LLVMGetTypeKind(e);
    if (k == LLVMIntegerTypeKind) return LLVMGetIntTypeWidth(e) >= 8;
    return k == LLVMFloatTypeKind || k == LLVMDoubleTypeKind;
}

typedef struct {
    LLVMValueRef constant, global; /* LLVM uniques constants: one global per value */
} pooled;

typedef struct {
    LLVMModuleRef m;
    LLVMContextRef ctx;
    LLVMBuilderRef b;
    pooled *pool;
    size_t n, cap;
    bool nomem;
} rewriter;

/* A private constant global holding init, aligned for whole-vector loads. */
static LLVMValueRef private_constant(LLVMModuleRef m, LLVMValueRef init, const char *name) {
    LLVMValueRef g = LLVMAddGlobal(m, LLVMTypeOf(init), name);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
    LLVMSetAlignment(g, 64);
    return g;
}

static LLVMValueRef global_of(rewriter *w, LLVMValueRef c) {
    for (size_t i = 0; i < w->n; i++)
        if (w->pool[i].constant == c) return w->pool[i].global;
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        pooled *p = realloc(w->pool, cap * sizeof *p);
        if (!p) {
            w->nomem = true;
            return NULL;
        }
        w->pool = p;
        w->cap = cap;
    }
    char name[32];
    snprintf(name, sizeof name, "otc.k%zu", w->n);
    LLVMValueRef g = private_constant(w->m, c, name);
    w->pool[w->n++] = (pooled){c, g};
    return g;
}

/* Loads c from its global before `at`. */
static LLVMValueRef load_constant(rewriter *w, LLVMValueRef c, LLVMValueRef at) {
    LLVMValueRef g = global_of(w, c);
    if (!g) return NULL;
    LLVMPositionBuilderBefore(w->b, at);
    LLVMValueRef v = LLVMBuildLoad2(w->b, LLVMTypeOf(c), g, "");
    LLVMSetAlignment(v, 64);
    return v;
}

static bool is_intrinsic_call(LLVMValueRef inst) {
    if (!LLVMIsACallInst(inst)) return false;
    LLVMValueRef callee = LLVMGetCalledValue(inst);
    return LLVMIsAFunction(callee) && LLVMGetIntrinsicID(callee) != 0;
}

/* The vector-constant operands of inst as loads (a phi's in its incoming block). Intrinsic
 * calls keep theirs: the selector hands them to SelectionDAG one by one, which folds them. */
static void constants_to_loads(rewriter *w, LLVMValueRef inst) {
    if (is_intrinsic_call(inst) || LLVMIsAShuffleVectorInst(inst)) return;
    int n = LLVMGetNumOperands(inst);
    bool phi = LLVMIsAPHINode(inst) != NULL;
    for (int i = 0; i < n && !w->nomem; i++) {
        LLVMValueRef c = LLVMGetOperand(inst, (unsigned)i);
        if (!vector_constant(c)) continue;
        LLVMValueRef at =
            phi ? LLVMGetBasicBlockTerminator(LLVMGetIncomingBlock(inst, (unsigned)i)) : inst;
        LLVMValueRef v = load_constant(w, c, at);
        if (v) LLVMSetOperand(inst, (unsigned)i, v);
    }
}

static void copy_string_attribute(LLVMValueRef to, LLVMValueRef from, const char *kind) {
    LLVMAttributeRef a = LLVMGetStringAttributeAtIndex(from, LLVMAttributeFunctionIndex, kind,
                                                       (unsigned)strlen(kind));
    if (a) LLVMAddAttributeAtIndex(to, LLVMAttributeFunctionIndex, a);
}

/* The function (made once per module, predicate and types) returning select(cmp(a, b), x, y),
 * for cmp's and sel's types; it is compiled for the caller's CPU, as the vectors it takes are
 * passed in the registers of that CPU's widest vectors. */
static LLVMValueRef select_function(rewriter *w, LLVMValueRef cmp, LLVMValueRef sel,
                                    LLVMValueRef caller) {
    bool fp = LLVMIsAFCmpInst(cmp) != NULL;
    int pred = fp ? (int)LLVMGetFCmpPredicate(cmp) : (int)LLVMGetICmpPredicate(cmp);
    LLVMTypeRef ct = LLVMTypeOf(LLVMGetOperand(cmp, 0)), vt = LLVMTypeOf(sel);
    char *cs = LLVMPrintTypeToString(ct), *vs = LLVMPrintTypeToString(vt);
    char name[160];
    snprintf(name, sizeof name, "otc.select.%s%d.%s.%s", fp ? "f" : "i", pred, cs, vs);
    LLVMDisposeMessage(cs);
    LLVMDisposeMessage(vs);
    LLVMValueRef f = LLVMGetNamedFunction(w->m, name);
    if (f) return f;
    LLVMTypeRef params[4] = {ct, ct, vt, vt};
    f = LLVMAddFunction(w->m, name, LLVMFunctionType(vt, params, 4, 0));
    LLVMSetLinkage(f, LLVMInternalLinkage);
    copy_string_attribute(f, caller, "target-cpu");
    copy_string_attribute(f, caller, "target-features");
    LLVMPositionBuilderAtEnd(w->b, LLVMAppendBasicBlockInContext(w->ctx, f, "entry"));
    LLVMValueRef a = LLVMGetParam(f, 0), b = LLVMGetParam(f, 1);
    LLVMValueRef c = fp ? LLVMBuildFCmp(w->b, (LLVMRealPredicate)pred, a, b, "")
                        : LLVMBuildICmp(w->b, (LLVMIntPredicate)pred, a, b, "");
    LLVMBuildRet(w->b, LLVMBuildSelect(w->b, c, LLVMGetParam(f, 2), LLVMGetParam(f, 3), ""));
    return f;
}

static bool has_feature(LLVMValueRef fn, const char *feature) {
    LLVMAttributeRef a =
        LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, "target-features", 15);
    unsigned len = 0;
    const char *v = a ? LLVMGetStringAttributeValue(a, &len) : NULL;
    size_t n = strlen(feature);
    for (unsigned i = 0; v && i + n <= len; i++)
        if (!strncmp(v + i, feature, n) && (i + n == len || v[i + n] == ',')) return true;
    return false;
}

/* select(a > b, a, b) or select(a < b, a, b) on floats (a ReLU: max(x, 0)) as x86's
 * max/min instruction, which computes exactly that (the second operand when either is NaN or
 * both are zeros); NULL when the host or the vector's width has none. An intrinsic the fast
 * selector does not take is handed to SelectionDAG alone, and runs as one instruction. */
static LLVMValueRef x86_max_min(rewriter *w, LLVMValueRef cmp, LLVMValueRef sel,
                                LLVMValueRef caller) {
    if (!LLVMIsAFCmpInst(cmp)) return NULL;
    LLVMRealPredicate p = LLVMGetFCmpPredicate(cmp);
    LLVMValueRef a = LLVMGetOperand(cmp, 0), b = LLVMGetOperand(cmp, 1);
    if ((p != LLVMRealOGT && p != LLVMRealOLT) || LLVMGetOperand(sel, 1) != a ||
        LLVMGetOperand(sel, 2) != b || strncmp(LLVMGetTarget(w->m), "x86_64", 6))
        return NULL;
    LLVMTypeRef t = LLVMTypeOf(a);
    if (LLVMGetTypeKind(LLVMGetElementType(t)) != LLVMFloatTypeKind) return NULL;
    bool max = p == LLVMRealOGT;
    const char *name = NULL;
    unsigned lanes = LLVMGetVectorSize(t);
    if (lanes == 16 && has_feature(caller, "+avx512f"))
        name = max ? "llvm.x86.avx512.max.ps.512" : "llvm.x86.avx512.min.ps.512";
    else if (lanes == 8 && has_feature(caller, "+avx"))
        name = max ? "llvm.x86.avx.max.ps.256" : "llvm.x86.avx.min.ps.256";
    else if (lanes == 4)
        name = max ? "llvm.x86.sse.max.ps" : "llvm.x86.sse.min.ps";
    if (!name) return NULL;
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    if (!id) return NULL;
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(w->m, id, NULL, 0);
    LLVMTypeRef ft = LLVMIntrinsicGetType(w->ctx, id, NULL, 0);
    /* The 512-bit form takes a rounding argument: 4, the current direction. */
    LLVMValueRef args[3] = {a, b, LLVMConstInt(LLVMInt32TypeInContext(w->ctx), 4, 0)};
    LLVMPositionBuilderBefore(w->b, sel);
    return LLVMBuildCall2(w->b, ft, fn, args, lanes == 16 ? 3 : 2, "");
}

/* A vector select on a comparison (a ReLU, a max, the padding mask), which the selector cannot
 * take: x86's max/min where it is one, else a call of select_function, which the selector
 * takes. A comparison left without users goes. */
static void outline_select(rewriter *w, LLVMValueRef sel, LLVMValueRef caller) {
    if (!LLVMIsASelectInst(sel) || LLVMGetTypeKind(LLVMTypeOf(sel)) != LLVMVectorTypeKind) return;
    LLVMValueRef cmp = LLVMGetOperand(sel, 0);
    if (!LLVMIsAFCmpInst(cmp) && !LLVMIsAICmpInst(cmp)) return;
    LLVMValueRef call = x86_max_min(w, cmp, sel, caller);
    if (!call) {
        LLVMValueRef f = select_function(w, cmp, sel, caller);
        LLVMValueRef args[4] = {LLVMGetOperand(cmp, 0), LLVMGetOperand(cmp, 1),
                                LLVMGetOperand(sel, 1), LLVMGetOperand(sel, 2)};
        LLVMPositionBuilderBefore(w->b, sel);
        call = LLVMBuildCall2(w->b, LLVMGlobalGetValueType(f), f, args, 4, "");
    }
    LLVMReplaceAllUsesWith(sel, call);
    LLVMInstructionEraseFromParent(sel);
    if (!LLVMGetFirstUse(cmp)) LLVMInstructionEraseFromParent(cmp);
}

/* llvm.fabs on a float or a float vector, which the selector hands to SelectionDAG (each call
 * a DAG of its own: nine per 100-neuron genome at one lane, as otc evolve --jit compiles it),
 * as what it is: the sign bits cleared (an and of the bit patterns). */
static void fabs_as_and(rewriter *w, LLVMValueRef inst) {
    if (!is_intrinsic_call(inst)) return;
    LLVMValueRef callee = LLVMGetCalledValue(inst);
    size_t len = 0;
    const char *name = LLVMGetValueName2(callee, &len);
    LLVMTypeRef t = LLVMTypeOf(inst);
    bool vector = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
    LLVMTypeRef e = vector ? LLVMGetElementType(t) : t;
    if (len < 9 || strncmp(name, "llvm.fabs", 9) || LLVMGetTypeKind(e) != LLVMFloatTypeKind) return;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(w->ctx);
    LLVMValueRef sign_off = LLVMConstInt(i32, 0x7fffffffu, 0), mask = sign_off;
    LLVMTypeRef it = i32;
    if (vector) {
        unsigned n = LLVMGetVectorSize(t);
        LLVMValueRef lanes[64];
        if (n > 64) return;
        for (unsigned i = 0; i < n; i++) lanes[i] = sign_off;
        it = LLVMVectorType(i32, n);
        mask = load_constant(w, LLVMConstVector(lanes, n), inst);
        if (!mask) return;
    }
    LLVMPositionBuilderBefore(w->b, inst);
    LLVMValueRef bits = LLVMBuildBitCast(w->b, LLVMGetOperand(inst, 0), it, "");
    LLVMValueRef v = LLVMBuildBitCast(w->b, LLVMBuildAnd(w->b, bits, mask, ""), t, "");
    LLVMReplaceAllUsesWith(inst, v);
    LLVMInstructionEraseFromParent(inst);
}

/* Can v be computed at the end of the entry block: a constant, an argument, an entry
 * instruction, or an address or invariant load (a weight: !invariant.load, set by the
 * renderer in the fast tier) made of such? */
static bool hoistable(LLVMValueRef v, LLVMBasicBlockRef entry, unsigned invariant, int depth) {
    if (LLVMIsAConstant(v) || LLVMIsAArgument(v)) return true;
    if (!LLVMIsAInstruction(v) || depth > 8) return false;
    if (LLVMGetInstructionParent(v) == entry) return true;
    if (LLVMIsALoadInst(v)) {
        if (LLVMGetVolatile(v) || !LLVMGetMetadata(v, invariant)) return false;
        return hoistable(LLVMGetOperand(v, 0), entry, invariant, depth + 1);
    }
    if (!LLVMIsAGetElementPtrInst(v) && !LLVMIsAInsertElementInst(v)) return false;
    int n = LLVMGetNumOperands(v);
    for (int i = 0; i < n; i++)
        if (!hoistable(LLVMGetOperand(v, (unsigned)i), entry, invariant, depth + 1)) return false;
    return true;
}

/* Moves hoistable v (and what it is made of) to before the entry block's terminator. */
static void hoist(LLVMBuilderRef b, LLVMValueRef v, LLVMBasicBlockRef entry) {
    if (!LLVMIsAInstruction(v) || LLVMGetInstructionParent(v) == entry) return;
    int n = LLVMGetNumOperands(v);
    for (int i = 0; i < n; i++) hoist(b, LLVMGetOperand(v, (unsigned)i), entry);
    LLVMInstructionRemoveFromParent(v);
    LLVMPositionBuilderBefore(b, LLVMGetBasicBlockTerminator(entry));
    LLVMInsertIntoBuilder(b, v);
}

/* The scalar a broadcast (shufflevector of an insertelement at 0, zero mask) spreads; NULL
 * for anything else. */
static LLVMValueRef splat_of(LLVMValueRef v) {
    if (!LLVMIsAShuffleVectorInst(v)) return NULL;
    LLVMValueRef ins = LLVMGetOperand(v, 0);
    if (!LLVMIsAInsertElementInst(ins)) return NULL;
    unsigned n = LLVMGetNumMaskElements(v);
    for (unsigned i = 0; i < n; i++)
        if (LLVMGetMaskValue(v, i) != 0) return NULL;
    LLVMValueRef at = LLVMGetOperand(ins, 2);
    if (!LLVMIsAConstantInt(at) || LLVMConstIntGetZExtValue(at) != 0) return NULL;
    return LLVMGetOperand(ins, 1);
}

/* A broadcast of a hoistable scalar. */
static bool hoistable_splat(LLVMValueRef inst, LLVMBasicBlockRef entry, unsigned invariant) {
    return splat_of(inst) && hoistable(LLVMGetOperand(inst, 0), entry, invariant, 0);
}

/* p as base + k floats through constant-index float GEPs, base available at the end of the
 * entry block; false otherwise. */
static bool float_offset(LLVMValueRef p, LLVMBasicBlockRef entry, LLVMTypeRef f32,
                         LLVMValueRef *base, int64_t *k) {
    *k = 0;
    for (int depth = 0; depth < 8; depth++) {
        if (!LLVMIsAGetElementPtrInst(p)) {
            *base = p;
            return LLVMIsAArgument(p) ||
                   (LLVMIsAInstruction(p) && LLVMGetInstructionParent(p) == entry);
        }
        LLVMValueRef i = LLVMGetOperand(p, 1);
        if (LLVMGetNumIndices(p) != 1 || LLVMGetGEPSourceElementType(p) != f32 ||
            !LLVMIsAConstantInt(i))
            return false;
        *k += LLVMConstIntGetSExtValue(i);
        p = LLVMGetOperand(p, 0);
    }
    return false;
}

/* The broadcasts of one function's weights, base[k] for each k in the table, into a stack
 * array: one small loop (its function made once per module and vector type) instead of a
 * broadcast per use, which the selector cannot take. */
typedef struct {
    LLVMValueRef base;
    int32_t *k;
    LLVMValueRef *uses; /* the broadcasts replaced, and their slot in `slot` */
    int *slot;
    int n_k, n_uses, cap_k, cap_uses;
} weight_table;

/* Broadcasts per iteration of the table's loop. The fast register allocator reloads the loop's
 * pointers from the stack each iteration; unrolled, the loop costs ~2 cycles a weight (one
 * iteration a weight: ~5, as much as the kernels it serves at batch 1). */
enum { BROADCAST_UNROLL = 8 };

static LLVMValueRef broadcast_function(rewriter *w, LLVMTypeRef vt, LLVMValueRef caller) {
    char *vs = LLVMPrintTypeToString(vt);
    char name[96];
    snprintf(name, sizeof name, "otc.broadcast.%s", vs);
    LLVMDisposeMessage(vs);
    LLVMValueRef f = LLVMGetNamedFunction(w->m, name);
    if (f) return f;
    LLVMTypeRef ptr = LLVMPointerTypeInContext(w->ctx, 0), i64 = LLVMInt64TypeInContext(w->ctx);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(w->ctx), f32 = LLVMFloatTypeInContext(w->ctx);
    LLVMTypeRef params[4] = {ptr, ptr, ptr, i64}; /* table, base, k, n (> 0, a multiple of
                                                     BROADCAST_UNROLL) */
    f = LLVMAddFunction(w->m, name, LLVMFunctionType(LLVMVoidTypeInContext(w->ctx), params, 4, 0));
    LLVMSetLinkage(f, LLVMInternalLinkage);
    copy_string_attribute(f, caller, "target-cpu");
    copy_string_attribute(f, caller, "target-features");
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(w->ctx, f, "entry");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(w->ctx, f, "loop");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(w->ctx, f, "done");
    LLVMBuilderRef b = w->b;
    LLVMPositionBuilderAtEnd(b, entry);
    LLVMBuildBr(b, loop);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef j = LLVMBuildPhi(b, i64, "j");
    LLVMValueRef k0 = LLVMBuildInBoundsGEP2(b, i32, LLVMGetParam(f, 2), &j, 1, "");
    LLVMValueRef t0 = LLVMBuildInBoundsGEP2(b, vt, LLVMGetParam(f, 0), &j, 1, "");
    for (int u = 0; u < BROADCAST_UNROLL; u++) {
        LLVMValueRef cu = LLVMConstInt(i64, (unsigned long long)u, 0);
        LLVMValueRef kp = LLVMBuildInBoundsGEP2(b, i32, k0, &cu, 1, "");
        LLVMValueRef k = LLVMBuildSExt(b, LLVMBuildLoad2(b, i32, kp, ""), i64, "");
        LLVMValueRef x = LLVMBuildLoad2(
            b, f32, LLVMBuildInBoundsGEP2(b, f32, LLVMGetParam(f, 1), &k, 1, ""), "");
        LLVMValueRef v =
            LLVMBuildInsertElement(b, LLVMGetPoison(vt), x, LLVMConstInt(i32, 0, 0), "");
        v = LLVMBuildShuffleVector(b, v, LLVMGetPoison(vt),
                                   LLVMConstNull(LLVMVectorType(i32, LLVMGetVectorSize(vt))), "");
        LLVMValueRef st = LLVMBuildStore(b, v, LLVMBuildInBoundsGEP2(b, vt, t0, &cu, 1, ""));
        LLVMSetAlignment(st, 4);
    }
    LLVMValueRef j1 =
        LLVMBuildAdd(b, j, LLVMConstInt(i64, (unsigned long long)BROADCAST_UNROLL, 0), "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, j1, LLVMGetParam(f, 3), ""), loop, done);
    LLVMValueRef in[2] = {LLVMConstInt(i64, 0, 0), j1};
    LLVMBasicBlockRef from[2] = {entry, loop};
    LLVMAddIncoming(j, in, from, 2);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRetVoid(b);
    return f;
}

/* Records broadcast `splat` of base[k] in the table (false: another base, or no memory). */
static bool table_add(rewriter *w, weight_table *t, LLVMValueRef splat, LLVMValueRef base,
                      int64_t k) {
    if (t->base && t->base != base) return false;
    if (k < INT32_MIN || k > INT32_MAX) return false;
    t->base = base;
    int slot = 0;
    while (slot < t->n_k && t->k[slot] != (int32_t)k) slot++;
    if (slot == t->n_k) {
        if (t->n_k == t->cap_k) {
            int cap = t->cap_k ? 2 * t->cap_k : 64;
            int32_t *nk = realloc(t->k, (size_t)cap * sizeof *nk);
            if (!nk) return !(w->nomem = true);
            t->k = nk;
            t->cap_k = cap;
        }
        t->k[t->n_k++] = (int32_t)k;
    }
    if (t->n_uses == t->cap_uses) {
        int cap = t->cap_uses ? 2 * t->cap_uses : 64;
        LLVMValueRef *nu = realloc(t->uses, (size_t)cap * sizeof *nu);
        if (nu) t->uses = nu;
        int *ns = nu ? realloc(t->slot, (size_t)cap * sizeof *ns) : NULL;
        if (!ns) return !(w->nomem = true);
        t->slot = ns;
        t->cap_uses = cap;
    }
    t->uses[t->n_uses] = splat;
    t->slot[t->n_uses++] = slot;
    return true;
}

/* The table's broadcasts, filled by one call at the end of the entry block, loaded where the
 * broadcasts were. */
static void table_apply(rewriter *w, weight_table *t, LLVMValueRef fn, LLVMBasicBlockRef entry) {
    if (!t->n_uses || w->nomem) return;
    LLVMTypeRef vt = LLVMTypeOf(t->uses[0]);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(w->ctx), i64 = LLVMInt64TypeInContext(w->ctx);
    /* Padded to whole iterations with the last weight again. */
    int n = (t->n_k + BROADCAST_UNROLL - 1) / BROADCAST_UNROLL * BROADCAST_UNROLL;
    LLVMValueRef *kv = malloc((size_t)n * sizeof *kv);
    if (!kv) {
        w->nomem = true;
        return;
    }
    for (int i = 0; i < n; i++)
        kv[i] =
            LLVMConstInt(i32, (unsigned long long)(int64_t)t->k[i < t->n_k ? i : t->n_k - 1], 1);
    LLVMValueRef init = LLVMConstArray2(i32, kv, (uint64_t)n);
    free(kv);
    LLVMValueRef g = private_constant(w->m, init, "otc.weight_index");

    LLVMPositionBuilderBefore(w->b, LLVMGetFirstInstruction(entry));
    LLVMValueRef tab = LLVMBuildAlloca(w->b, LLVMArrayType2(vt, (uint64_t)n), "broadcasts");
    LLVMSetAlignment(tab, 64);
    LLVMValueRef f = broadcast_function(w, vt, fn);
    LLVMPositionBuilderBefore(w->b, LLVMGetBasicBlockTerminator(entry));
    LLVMValueRef args[4] = {tab, t->base, g, LLVMConstInt(i64, (unsigned long long)n, 0)};
    LLVMBuildCall2(w->b, LLVMGlobalGetValueType(f), f, args, 4, "");
    for (int u = 0; u < t->n_uses; u++) {
        LLVMValueRef splat = t->uses[u];
        LLVMPositionBuilderBefore(w->b, splat);
        LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)t->slot[u], 0);
        LLVMValueRef v =
            LLVMBuildLoad2(w->b, vt, LLVMBuildInBoundsGEP2(w->b, vt, tab, &idx, 1, ""), "");
        LLVMSetAlignment(v, 64);
        LLVMValueRef ins = LLVMGetOperand(splat, 0);
        LLVMReplaceAllUsesWith(splat, v);
        LLVMInstructionEraseFromParent(splat);
        if (!LLVMGetFirstUse(ins)) {
            LLVMValueRef x = LLVMGetOperand(ins, 1);
            LLVMInstructionEraseFromParent(ins);
            if (LLVMIsALoadInst(x) && !LLVMGetFirstUse(x)) {
                /* and the weight's address, which nothing else reads either (a dead
                 * instruction per weight in the loop, for every pass after this to walk) */
                LLVMValueRef at = LLVMGetOperand(x, 0);
                LLVMInstructionEraseFromParent(x);
                if (LLVMIsAGetElementPtrInst(at) && !LLVMGetFirstUse(at))
                    LLVMInstructionEraseFromParent(at);
            }
        }
    }
}

/* Does splat broadcast a weight (an invariant load at a constant offset from an entry base)?
 * Then it goes into the table. */
static bool tabled(rewriter *w, weight_table *t, LLVMValueRef splat, LLVMBasicBlockRef entry,
                   unsigned invariant) {
    LLVMValueRef x = LLVMGetOperand(LLVMGetOperand(splat, 0), 1);
    LLVMTypeRef vt = LLVMTypeOf(splat);
    if (!LLVMIsALoadInst(x) || LLVMGetVolatile(x) || !LLVMGetMetadata(x, invariant) ||
        LLVMTypeOf(x) != LLVMFloatTypeInContext(w->ctx) ||
        (t->n_uses && LLVMTypeOf(t->uses[0]) != vt))
        return false;
    LLVMValueRef base;
    int64_t k;
    return float_offset(LLVMGetOperand(x, 0), entry, LLVMTypeOf(x), &base, &k) &&
           table_add(w, t, splat, base, k);
}

/* Is inst without users and without effects (what the renderer computes for kernels that turn
 * out not to need it, e.g. a padding mask)? The selector skips such an instruction only when
 * nothing outside its block reads it either, so a dead compare in a loop keeps the broadcast
 * it reads in the entry block alive, and that block in SelectionDAG. */
static bool dead(LLVMValueRef inst) {
    if (LLVMGetFirstUse(inst)) return false;
    if (LLVMIsALoadInst(inst)) return !LLVMGetVolatile(inst);
    return LLVMIsABinaryOperator(inst) || LLVMIsACmpInst(inst) || LLVMIsACastInst(inst) ||
           LLVMIsAGetElementPtrInst(inst) || LLVMIsAShuffleVectorInst(inst) ||
           LLVMIsAInsertElementInst(inst) || LLVMIsAExtractElementInst(inst) ||
           LLVMIsASelectInst(inst);
}

static void remove_dead(LLVMValueRef fn) {
    for (bool again = true; again;) {
        again = false;
        for (LLVMBasicBlockRef bb = LLVMGetLastBasicBlock(fn); bb;
             bb = LLVMGetPreviousBasicBlock(bb))
            for (LLVMValueRef i = LLVMGetLastInstruction(bb); i;) {
                LLVMValueRef prev = LLVMGetPreviousInstruction(i);
                if (dead(i)) {
                    LLVMInstructionEraseFromParent(i);
                    again = true;
                }
                i = prev;
            }
    }
}

/* Is c the renderer's padding mask of a chunk (otc_lv_set_chunk): lane j real when
 * s + j < b, as icmp slt (splat(s) + <0, 1, ..., W-1>), splat(b)? */
static bool lane_mask(LLVMValueRef c, LLVMValueRef *s, LLVMValueRef *b) {
    if (!LLVMIsAICmpInst(c) || LLVMGetICmpPredicate(c) != LLVMIntSLT) return false;
    LLVMValueRef add = LLVMGetOperand(c, 0);
    if (!LLVMIsAInstruction(add) || LLVMGetInstructionOpcode(add) != LLVMAdd) return false;
    LLVMValueRef k = LLVMGetOperand(add, 1);
    *s = splat_of(LLVMGetOperand(add, 0));
    *b = splat_of(LLVMGetOperand(c, 1));
    if (!*s || !*b || !LLVMIsAConstantDataVector(k) || LLVMTypeOf(*s) != LLVMTypeOf(*b) ||
        LLVMGetTypeKind(LLVMTypeOf(*s)) != LLVMIntegerTypeKind)
        return false;
    unsigned n = LLVMGetVectorSize(LLVMTypeOf(k));
    if (n > 64) return false;
    for (unsigned j = 0; j < n; j++) {
        LLVMValueRef e = LLVMGetAggregateElement(k, j);
        if (!e || !LLVMIsAConstantInt(e) || LLVMConstIntGetSExtValue(e) != (long long)j)
            return false;
    }
    return true;
}

/* The selects on a padding mask c (a gradient kept out of the padding, a divisor made 1
 * there) as and/or of bit patterns with the mask as lanes of all ones: row min(max(b - s, 0),
 * W) of a constant table, loaded once after c. The selector takes all of it; the compare,
 * left without users, goes. */
static void mask_selects_as_bits(rewriter *w, LLVMValueRef c, LLVMValueRef s, LLVMValueRef b) {
    unsigned n = LLVMGetVectorSize(LLVMTypeOf(c));
    LLVMTypeRef i32 = LLVMInt32TypeInContext(w->ctx), it = LLVMVectorType(i32, n);
    LLVMValueRef users[64];
    int nu = 0;
    for (LLVMUseRef u = LLVMGetFirstUse(c); u && nu < 64; u = LLVMGetNextUse(u)) {
        LLVMValueRef sel = LLVMGetUser(u);
        LLVMTypeRef t = LLVMTypeOf(sel);
        if (LLVMIsASelectInst(sel) && LLVMGetOperand(sel, 0) == c &&
            LLVMGetTypeKind(t) == LLVMVectorTypeKind &&
            LLVMGetTypeKind(LLVMGetElementType(t)) == LLVMFloatTypeKind)
            users[nu++] = sel;
    }
    if (!nu) return;
    char name[48];
    snprintf(name, sizeof name, "otc.lane_masks.%u", n);
    LLVMValueRef g = LLVMGetNamedGlobal(w->m, name);
    LLVMTypeRef rows_t = LLVMArrayType2(it, n + 1);
    if (!g) {
        LLVMValueRef rows[65], lanes[64];
        for (unsigned r = 0; r <= n; r++) {
            for (unsigned j = 0; j < n; j++)
                lanes[j] = LLVMConstInt(i32, j < r ? 0xffffffffu : 0, 0);
            rows[r] = LLVMConstVector(lanes, n);
        }
        g = private_constant(w->m, LLVMConstArray2(it, rows, n + 1), name);
    }
    LLVMBuilderRef bd = w->b;
    LLVMPositionBuilderBefore(bd, LLVMGetNextInstruction(c));
    LLVMTypeRef st = LLVMTypeOf(s);
    LLVMValueRef d = LLVMBuildSub(bd, b, s, "");
    LLVMValueRef zero = LLVMConstInt(st, 0, 0), wv = LLVMConstInt(st, n, 0);
    d = LLVMBuildSelect(bd, LLVMBuildICmp(bd, LLVMIntSLT, d, zero, ""), zero, d, "");
    d = LLVMBuildSelect(bd, LLVMBuildICmp(bd, LLVMIntSGT, d, wv, ""), wv, d, "");
    LLVMValueRef idx[2] = {LLVMConstInt(st, 0, 0), d};
    LLVMValueRef m = LLVMBuildLoad2(bd, it, LLVMBuildInBoundsGEP2(bd, rows_t, g, idx, 2, ""), "");
    LLVMSetAlignment(m, 64);
    LLVMValueRef ones[64];
    for (unsigned j = 0; j < n; j++) ones[j] = LLVMConstInt(i32, 0xffffffffu, 0);
    LLVMValueRef not_m = LLVMBuildXor(bd, m, LLVMConstVector(ones, n), "");
    for (int k = 0; k < nu; k++) {
        LLVMValueRef sel = users[k];
        LLVMPositionBuilderBefore(bd, sel);
        LLVMValueRef x = LLVMBuildBitCast(bd, LLVMGetOperand(sel, 1), it, "");
        LLVMValueRef y = LLVMBuildBitCast(bd, LLVMGetOperand(sel, 2), it, "");
        LLVMValueRef v =
            LLVMBuildOr(bd, LLVMBuildAnd(bd, x, m, ""), LLVMBuildAnd(bd, y, not_m, ""), "");
        v = LLVMBuildBitCast(bd, v, LLVMTypeOf(sel), "");
        LLVMReplaceAllUsesWith(sel, v);
        LLVMInstructionEraseFromParent(sel);
    }
}

static void rewrite_function(rewriter *w, LLVMValueRef fn, unsigned invariant) {
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
    if (!LLVMGetBasicBlockTerminator(entry)) return;
    for (LLVMBasicBlockRef bb = entry; bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
            LLVMValueRef s, b;
            if (lane_mask(i, &s, &b)) mask_selects_as_bits(w, i, s, b);
        }
    remove_dead(fn);
    weight_table t = {0};
    for (LLVMBasicBlockRef bb = entry; bb && !w->nomem; bb = LLVMGetNextBasicBlock(bb)) {
        LLVMValueRef inst = LLVMGetFirstInstruction(bb);
        while (inst && !w->nomem) {
            LLVMValueRef next = LLVMGetNextInstruction(inst);
            /* The entry block's own broadcasts stay: the table is filled at its end. */
            if (bb != entry && hoistable_splat(inst, entry, invariant)) {
                if (!tabled(w, &t, inst, entry, invariant)) hoist(w->b, inst, entry);
            } else {
                outline_select(w, inst, fn);
            }
            inst = next;
        }
    }
    table_apply(w, &t, fn, entry);
    free(t.k);
    free(t.uses);
    free(t.slot);
    for (LLVMBasicBlockRef bb = entry; bb && !w->nomem; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i && !w->nomem;
             i = LLVMGetNextInstruction(i))
            constants_to_loads(w, i);
    for (LLVMBasicBlockRef bb = entry; bb && !w->nomem; bb = LLVMGetNextBasicBlock(bb)) {
        LLVMValueRef inst = LLVMGetFirstInstruction(bb);
        while (inst && !w->nomem) {
            LLVMValueRef next = LLVMGetNextInstruction(inst);
            fabs_as_and(w, inst);
            inst = next;
        }
    }
}

otc_status otc_llvm_fastisel_forms(LLVMModuleRef m) {
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    rewriter w = {.m = m, .ctx = ctx, .b = LLVMCreateBuilderInContext(ctx)};
    unsigned invariant = LLVMGetMDKindIDInContext(ctx, "invariant.load", 14);
    /* The functions made here (appended after the last) are already in their final form. */
    LLVMValueRef last = LLVMGetLastFunction(m);
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f && !w.nomem; f = LLVMGetNextFunction(f)) {
        if (!LLVMIsDeclaration(f)) rewrite_function(&w, f, invariant);
        if (f == last) break;
    }
    LLVMDisposeBuilder(w.b);
    free(w.pool);
    return w.nomem ? otc_fail(OTC_ERR_NOMEM, "out of memory rewriting IR for the fast tier")
                   : OTC_OK;
}
