/* Private to the LLVM backend (compiler/src/llvm/): LLVM set-up, target machines, the
 * pass pipeline, LLVM error conversion and the process-wide ORC LLJIT with its cache. */
#ifndef OTC_LLVM_INTERNAL_H
#define OTC_LLVM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>

#include "otc/error.h"
#include "otc/expr.h"

/* ---- llvm_support.c ---- */

/* Initialises the host's LLVM target once (what the JIT and a host object need).
 * Thread-safe; fails only when the host has no LLVM target. */
otc_status otc_llvm_init(void);

/* Turns an LLVMErrorRef into otc_fail(status, "<what>: <LLVM's message>") and consumes it.
 * Returns OTC_OK for a NULL (success) error. */
otc_status otc_llvm_check(LLVMErrorRef err, otc_status status, const char *what);

/* A target machine for `triple` (NULL: the host, with the host CPU name and features).
 * cpu/features NULL mean the host's for the host triple, "generic"/"" otherwise.
 * PIC relocations so objects link into shared libraries and PIE executables. `level` is
 * the code generator's: LLVMCodeGenLevelAggressive normally, LLVMCodeGenLevelNone for the
 * fast tier (fast instruction selection and register allocation). */
otc_status otc_llvm_target_machine(const char *triple, const char *cpu, const char *features,
                                   LLVMCodeGenOptLevel level, LLVMTargetMachineRef *out);

/* The IR optimisation a module gets before code generation. */
typedef enum {
    OTC_LLVM_PIPE_NONE,  /* verification only */
    OTC_LLVM_PIPE_QUICK, /* promote slots, fold, merge blocks (the renderer's IR is vector code
                            already, so this is most of what O3 gains): large straight-line
                            modules, and fast-tier modules the aggressive code generator takes */
    OTC_LLVM_PIPE_FAST,  /* no optimisation, only the rewrite into forms the fast instruction
                            selector takes whole (llvm_fastisel.c): for the fast code
                            generator, which folds as it selects (llvm_pipeline.c) */
    OTC_LLVM_PIPE_LOOPS, /* QUICK, then what pays on product loops (rotation, LICM, GVN): JIT
                            inference modules with product loops, near O3's run time at about a
                            third of its compile time */
    OTC_LLVM_PIPE_O3     /* default<O3> with loop and SLP vectorisation */
} otc_llvm_pipeline;

/* Sets the module's triple and data layout from tm, verifies it (returning an otc error
 * with LLVM's message, never aborting) and runs the pipeline. */
otc_status otc_llvm_finish_module(LLVMModuleRef m, LLVMTargetMachineRef tm, otc_llvm_pipeline pipe);

/* ---- llvm_fastisel.c ---- */

/* Rewrites module m (the fast tier's, after its passes) into forms the fast instruction
 * selector takes whole: vector constants as loads of constant globals; broadcasts of weights
 * (loads marked !invariant.load) from a table filled once per call, other broadcasts of entry
 * values moved into the entry block; vector selects on compares as x86 max/min, a helper call,
 * or (padding masks) and/or of bit patterns; vector fabs as an and. The same operations on
 * the same values: the code's results are unchanged. */
otc_status otc_llvm_fastisel_forms(LLVMModuleRef m);

/* Verification alone: OTC_ERR_STATE with LLVM's description of what is malformed. */
otc_status otc_llvm_verify(LLVMModuleRef m);

/* Assembly or object code for the module (after otc_llvm_finish_module) in LLVM's buffer
 * (the caller disposes of it or hands it on), or in a malloc'd copy owned by the caller. */
otc_status otc_llvm_emit_buffer(LLVMModuleRef m, LLVMTargetMachineRef tm, bool assembly,
                                LLVMMemoryBufferRef *out);
otc_status otc_llvm_emit(LLVMModuleRef m, LLVMTargetMachineRef tm, bool assembly, char **data,
                         size_t *len);

/* Host CPU name and a short description of the vector width LLVM will use ("avx2 (256-bit)").
 * Static strings valid for the process lifetime. */
const char *otc_llvm_host_cpu(void);

/* A monotonic clock in milliseconds, for compile-time statistics. */
double otc_llvm_now_ms(void);
/* The calling thread's CPU time in milliseconds: compiles run on the calling thread, and its
 * CPU time stays put on a loaded machine where the wall clock does not. */
double otc_llvm_cpu_ms(void);

/* ---- llvm_jit.c ---- */

/* One module compiled into the process-wide LLJIT, in its own ResourceTracker. */
typedef struct otc_llvm_code otc_llvm_code;

/* Compiles module m (created in tsctx's context; ownership of both is taken, even on
 * failure) with the tier's target machine, adds the object to the JIT and resolves n
 * function names into addrs. The caller has already finished the module with the same
 * tier's machine (otc_llvm_jit_target_machine). */
otc_status otc_llvm_jit_add(LLVMOrcThreadSafeContextRef tsctx, LLVMModuleRef m, bool fast, int n,
                            const char *const *names, void **addrs, otc_llvm_code **out);
/* The same through the on-disk object cache (llvm_objcache.c): with a key (NULL: none), an
 * entry found is linked instead of compiling; otherwise m is finished with the tier's machine
 * and `pipe`, compiled, and the object stored under the key. With `library`, the math library
 * functions m declares are provided first (otc_llvm_library_provide). */
otc_status otc_llvm_jit_compile(LLVMOrcThreadSafeContextRef tsctx, LLVMModuleRef m, bool fast,
                                otc_llvm_pipeline pipe, bool library, const uint64_t *key, int n,
                                const char *const *names, void **addrs, otc_llvm_code **out);
/* Modules otc_llvm_jit_compile compiled, and loaded from the on-disk cache, so far. */
void otc_llvm_jit_object_counts(long *compiled, long *loaded);
/* Milliseconds spent creating the JIT itself (the LLJIT, its helper symbols; once per
 * process, inside the first compile's figure): wall clock, and with cpu_ms (optional) the
 * thread CPU time. */
double otc_llvm_jit_setup_ms(double *cpu_ms);
/* Sets aside room at the top of the process's heap in transparent huge pages for the
 * compiles (llvm_heap.c); once per process, when the JIT is created. */
void otc_llvm_heap_prepare(void);
/* Removes the code from the JIT (its memory is returned) and frees the handle. */
void otc_llvm_code_free(otc_llvm_code *code);

/* The JIT's host target machine of a tier (fast: code generation at LLVMCodeGenLevelNone),
 * made on the tier's first use, for finishing modules before otc_llvm_jit_add. Callers hold
 * otc_llvm_jit_lock() while using it. */
otc_status otc_llvm_jit_target_machine(bool fast, LLVMTargetMachineRef *tm);

/* One lock serialises compilation (target machine, JIT, cache); code runs without it. */
void otc_llvm_jit_lock(void);
void otc_llvm_jit_unlock(void);

/* Unique symbol prefix for the next module ("otc3_"), so modules never clash in the
 * JITDylib. buf >= 32 bytes. */
const char *otc_llvm_jit_unique_prefix(char *buf, size_t len);

/* ---- llvm_math.c: scalar IR for the math the renderer needs, written without calls so
 * the loop and SLP vectorisers can widen it (libm's expf/tanhf would stay scalar) ---- */

/* What every IR-building function needs: the module, a builder and the common types. */
typedef struct {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef f32, i1, i32, i64, ptr, void_t;
    /* Costly activations are calls to functions compiled once per process (llvm_library.c)
     * instead of a copy in every module: for JIT modules, never for object files. */
    bool shared_math;
    /* otc_jit_options.exact: otc_llvm_fma always fuses (llvm.fma), as the interpreter's fmaf,
     * and exp, tanh, ... call the C library as the interpreter does. */
    bool exact;
} otc_llvm_ir;

/* Fills the types of ir from ir->ctx (mod and b are the caller's). */
void otc_llvm_ir_types(otc_llvm_ir *ir);
LLVMValueRef otc_llvm_f32(otc_llvm_ir *ir, double v);
/* A float constant of type t, splat across the lanes when t is a vector. */
LLVMValueRef otc_llvm_const(LLVMTypeRef t, double v);
/* A call to an overloaded llvm.* intrinsic on float operands ("llvm.floor", "llvm.fmuladd"). */
LLVMValueRef otc_llvm_intrinsic(otc_llvm_ir *ir, const char *name, LLVMValueRef *args, int n);
/* a * b + c, fused where the target has FMA (llvm.fmuladd); always fused when ir->exact. */
LLVMValueRef otc_llvm_fma(otc_llvm_ir *ir, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c);
/* a * b + c rounded twice, as the interpreter's and the emitted C's sums: every sum of
 * products (neuron, matmul and their gradients) uses it, because a fused product hides an
 * overflow (fma(10, -1e38, inf) is inf where 10 * -1e38 + inf is NaN). */
LLVMValueRef otc_llvm_mul_add(otc_llvm_ir *ir, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c);

/* The math library's trees (otc/math_lib.h) built on x: within a few ulp of libm on the range
 * a network sees, and libm's results on inf, NaN, +-0 and subnormals. */
LLVMValueRef otc_llvm_exp(otc_llvm_ir *ir, LLVMValueRef x);
LLVMValueRef otc_llvm_expm1(otc_llvm_ir *ir, LLVMValueRef x);
LLVMValueRef otc_llvm_log(otc_llvm_ir *ir, LLVMValueRef x);
LLVMValueRef otc_llvm_log1p(otc_llvm_ir *ir, LLVMValueRef x);
LLVMValueRef otc_llvm_tanh(otc_llvm_ir *ir, LLVMValueRef x);
LLVMValueRef otc_llvm_sin(otc_llvm_ir *ir, LLVMValueRef x);
LLVMValueRef otc_llvm_cos(otc_llvm_ir *ir, LLVMValueRef x);

/* llvm_expr.c: an expression tree (otc/expr.h) as IR on values of float type t (a float or a
 * <W x float>), its leaves given (constants of type t for the parameter); with a mask (an i1
 * per lane) divisions divide by one in the lanes it excludes. */
typedef struct {
    LLVMValueRef x, x1, y, a, mask;
    const LLVMValueRef *arg; /* the values of OTC_EX_ARG 0 .. n_arg - 1 */
    int n_arg;
} otc_llvm_leaves;
LLVMValueRef otc_llvm_expr(otc_llvm_ir *ir, const otc_expr *e, LLVMTypeRef t,
                           const otc_llvm_leaves *leaves);

/* An activation (otc_act) and its derivative dy/dx given input x and output y: the
 * activation table's expressions. NULL for an unknown activation. */
LLVMValueRef otc_llvm_act(otc_llvm_ir *ir, int act, float alpha, LLVMValueRef x);
LLVMValueRef otc_llvm_act_grad(otc_llvm_ir *ir, int act, float alpha, LLVMValueRef x,
                               LLVMValueRef y);
/* The same through one out-of-line copy per module for the costly activations (inline for
 * the cheap ones), which keeps the IR of a many-neuron graph small. */
LLVMValueRef otc_llvm_act_call(otc_llvm_ir *ir, int act, float alpha, LLVMValueRef x);
LLVMValueRef otc_llvm_act_grad_call(otc_llvm_ir *ir, int act, float alpha, LLVMValueRef x,
                                    LLVMValueRef y);
/* The out-of-line function's declaration in ir->mod, named "otc.ACT[.grad].ALPHABITS.xLANES"
 * (ALPHABITS: the float's bits in hex; LANES: of a <LANES x float>, 0 for a plain float), and
 * its body; the name parsed back. */
LLVMValueRef otc_llvm_act_declare(otc_llvm_ir *ir, int act, float alpha, LLVMTypeRef t, bool grad);
void otc_llvm_act_define(otc_llvm_ir *ir, LLVMValueRef fn, int act, float alpha, bool grad);
bool otc_llvm_act_parse_name(const char *name, int *act, float *alpha, unsigned *lanes, bool *grad);

/* ---- llvm_library.c ---- */

/* Defines in the JIT, once per process, every shared activation function module m declares
 * (see otc_llvm_ir.shared_math), compiled at O3. Called with the JIT lock held, before m is
 * added. */
otc_status otc_llvm_library_provide(LLVMModuleRef m);
/* Milliseconds spent defining library functions so far (compiling or loading them): wall
 * clock, and with cpu_ms (optional) the thread CPU time. */
double otc_llvm_library_ms(double *cpu_ms);

/* ---- llvm_objcache.c: compiled objects on disk, shared by the processes of a machine ----
 * Called with the JIT lock held. Any failure (cache off, unwritable, damaged entry) means
 * only that nothing is cached: never an error. */

/* The key of module m (not yet finished) compiled by tm (the fast tier's code generator, or
 * the aggressive one) with `pipe`: a hash of its bitcode, the LLVM and otc versions, the
 * triple, CPU and features. False when the cache is off (OTC_CACHE_DIR=off, or no cache
 * directory can be named). */
bool otc_llvm_objcache_key(LLVMModuleRef m, LLVMTargetMachineRef tm, bool fast_codegen,
                           otc_llvm_pipeline pipe, uint64_t key[2]);
/* The object stored under key, checked whole (header, key, checksum); NULL when absent or
 * damaged (a damaged entry is removed). */
LLVMMemoryBufferRef otc_llvm_objcache_load(const uint64_t key[2]);
/* Stores an object under key (a temporary file renamed into place), then keeps the cache
 * within its size (OTC_CACHE_MAX_MB, default 256) by removing the least recently used. */
void otc_llvm_objcache_store(const uint64_t key[2], const void *obj, size_t len);

#endif
