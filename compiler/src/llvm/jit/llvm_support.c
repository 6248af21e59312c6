/* LLVM set-up shared by the JIT and the object-file writer: target initialisation, target
 * machines for the host or a triple, verification, the pass pipelines and code emission, with
 * every LLVM failure turned into an otc error (LLVM is never allowed to abort for us). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "llvm_internal.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT, all_once = PTHREAD_ONCE_INIT;
static int init_failed;
static char host_cpu[128];
/* The host's triple, CPU name and features, asked of LLVM once per process (every target
 * machine for the host reads them; the features query walks CPUID leaves) and kept for its
 * life, like the targets. */
static char *host_triple, *host_name, *host_features;

static void init_host(void) {
    /* The host's target only: registering all of them (AMDGPU's, AArch64's, ...) cost ~2 ms
     * of every JIT process's start, for the cross-compiles of `otc compile --target` alone
     * (init_all, on their first target machine). */
    init_failed = LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter() ||
                  LLVMInitializeNativeAsmParser();
    host_triple = LLVMGetDefaultTargetTriple();
    host_name = LLVMGetHostCPUName();
    host_features = LLVMGetHostCPUFeatures();
    const char *cpu = host_name, *features = host_features;
    const char *width = strstr(features, "+avx512f") ? "512-bit vectors"
                        : strstr(features, "+avx2")  ? "256-bit vectors"
                        : strstr(features, "+avx")   ? "256-bit vectors (no AVX2)"
                        : strstr(features, "+neon")  ? "128-bit vectors"
                        : strstr(features, "+sse2")  ? "128-bit vectors"
                                                     : "scalar";
    const char *fma = strstr(features, "+fma") ? ", FMA" : "";
    snprintf(host_cpu, sizeof host_cpu, "%s (%s%s)", cpu, width, fma);
}

static void init_all(void) {
    LLVMInitializeAllTargetInfos();
    LLVMInitializeAllTargets();
    LLVMInitializeAllTargetMCs();
    LLVMInitializeAllAsmPrinters();
    LLVMInitializeAllAsmParsers();
}

otc_status otc_llvm_init(void) {
    pthread_once(&init_once, init_host);
    if (init_failed)
        return otc_fail(OTC_ERR_UNSUPPORTED, "LLVM has no target for this host (%s)", host_cpu);
    return OTC_OK;
}

double otc_llvm_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

double otc_llvm_cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

const char *otc_llvm_host_cpu(void) {
    if (otc_llvm_init()) return "unknown";
    return host_cpu;
}

otc_status otc_llvm_check(LLVMErrorRef err, otc_status status, const char *what) {
    if (!err) return OTC_OK;
    char *msg = LLVMGetErrorMessage(err); /* consumes err */
    otc_status st = otc_fail(status, "%s: %s", what, msg ? msg : "unknown LLVM error");
    LLVMDisposeErrorMessage(msg);
    return st;
}

otc_status otc_llvm_target_machine(const char *triple, const char *cpu, const char *features,
                                   LLVMCodeGenOptLevel level, LLVMTargetMachineRef *out) {
    *out = NULL;
    otc_status st = otc_llvm_init();
    if (st) return st;
    char *normal = NULL;
    bool host = !triple;
    if (!host) {
        normal = LLVMNormalizeTargetTriple(triple);
        host = !strcmp(normal, host_triple);
        if (!host) pthread_once(&all_once, init_all);
    }
    const char *use_triple = host ? host_triple : normal;
    if (!cpu) cpu = host ? host_name : "generic";
    if (!features) features = host ? host_features : "";

    LLVMTargetRef target = NULL;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(use_triple, &target, &err)) {
        st = otc_fail(OTC_ERR_UNSUPPORTED, "no LLVM target for triple '%s': %s",
                      triple ? triple : use_triple, err ? err : "unknown");
    } else {
        *out = LLVMCreateTargetMachine(target, use_triple, cpu, features, level, LLVMRelocPIC,
                                       LLVMCodeModelDefault);
        if (!*out)
            st = otc_fail(OTC_ERR_UNSUPPORTED, "LLVM could not create a target machine for '%s'",
                          use_triple);
    }
    LLVMDisposeMessage(err);
    LLVMDisposeMessage(normal);
    return st;
}

otc_status otc_llvm_verify(LLVMModuleRef m) {
    char *msg = NULL;
    LLVMBool broken = LLVMVerifyModule(m, LLVMReturnStatusAction, &msg);
    otc_status st = OTC_OK;
    if (broken) {
        /* The first line names the problem; the rest is the offending IR, which can be long. */
        size_t n = msg ? strcspn(msg, "\n") : 0;
        st = otc_fail(OTC_ERR_STATE, "LLVM module failed verification: %.*s", (int)n,
                      msg ? msg : "");
    }
    LLVMDisposeMessage(msg);
    return st;
}

otc_status otc_llvm_finish_module(LLVMModuleRef m, LLVMTargetMachineRef tm,
                                  otc_llvm_pipeline pipe) {
    char *triple = LLVMGetTargetMachineTriple(tm);
    LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
    LLVMSetTarget(m, triple);
    LLVMSetModuleDataLayout(m, layout);
    LLVMDisposeTargetData(layout);
    LLVMDisposeMessage(triple);

    /* The vectoriser's cost model reads the CPU from each function, so name it there too. */
    char *cpu = LLVMGetTargetMachineCPU(tm);
    char *features = LLVMGetTargetMachineFeatureString(tm);
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f)) continue;
        LLVMAttributeRef a =
            LLVMCreateStringAttribute(ctx, "target-cpu", 10, cpu, (unsigned)strlen(cpu));
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, a);
        if (*features) {
            a = LLVMCreateStringAttribute(ctx, "target-features", 15, features,
                                          (unsigned)strlen(features));
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, a);
        }
    }
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);

    otc_status st = otc_llvm_verify(m);
    if (st || pipe == OTC_LLVM_PIPE_NONE) return st;
    if (pipe == OTC_LLVM_PIPE_FAST) return otc_llvm_fastisel_forms(m);
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    const char *passes = "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg)";
    if (pipe == OTC_LLVM_PIPE_LOOPS)
        passes = "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,"
                 "loop-mssa(loop-rotate,licm),gvn,instcombine<no-verify-fixpoint>,simplifycfg)";
    if (pipe == OTC_LLVM_PIPE_O3) {
        passes = "default<O3>";
        LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
        LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
        LLVMPassBuilderOptionsSetLoopInterleaving(opts, 1);
        LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
    }
    if (pipe == OTC_LLVM_PIPE_O3 || pipe == OTC_LLVM_PIPE_LOOPS) {
        /* LICM asks MemorySSA whether each invariant load (a weight) is clobbered by any of
         * the loop's stores: quadratic in a fused kernel of a hundred neurons, and hoisting
         * the weights only trades a broadcast from memory for a spill. Bound the search. */
        LLVMPassBuilderOptionsSetLicmMssaOptCap(opts, 8);
        LLVMPassBuilderOptionsSetLicmMssaNoAccForPromotionCap(opts, 8);
    }
    st = otc_llvm_check(LLVMRunPasses(m, passes, tm, opts), OTC_ERR_STATE,
                        "LLVM optimisation pipeline");
    LLVMDisposePassBuilderOptions(opts);
    return st;
}

otc_status otc_llvm_emit_buffer(LLVMModuleRef m, LLVMTargetMachineRef tm, bool assembly,
                                LLVMMemoryBufferRef *out) {
    *out = NULL;
    char *err = NULL;
    otc_status st = OTC_OK;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, assembly ? LLVMAssemblyFile : LLVMObjectFile,
                                            &err, out))
        st =
            otc_fail(OTC_ERR_STATE, "LLVM code generation failed: %s", err ? err : "unknown error");
    LLVMDisposeMessage(err);
    return st;
}

otc_status otc_llvm_emit(LLVMModuleRef m, LLVMTargetMachineRef tm, bool assembly, char **data,
                         size_t *len) {
    *data = NULL;
    *len = 0;
    LLVMMemoryBufferRef buf = NULL;
    otc_status st = otc_llvm_emit_buffer(m, tm, assembly, &buf);
    if (st) return st;
    size_t n = LLVMGetBufferSize(buf);
    char *copy = malloc(n + 1);
    if (!copy) {
        LLVMDisposeMemoryBuffer(buf);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for %zu bytes of generated code", n);
    }
    memcpy(copy, LLVMGetBufferStart(buf), n);
    copy[n] = '\0';
    LLVMDisposeMemoryBuffer(buf);
    *data = copy;
    *len = n;
    return OTC_OK;
}
