/* The process-wide ORC LLJIT: created on first use, one ResourceTracker per compiled module
 * so freeing a graph's code returns its memory (evolution compiles thousands of graphs).
 * Modules are compiled to objects here, by one of two host target machines (the tiers),
 * and the JIT links the objects. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <llvm-c/LLJIT.h>

#include "llvm_internal.h"

struct otc_llvm_code {
    LLVMOrcResourceTrackerRef rt;
};

static pthread_mutex_t jit_mutex;
static pthread_once_t mutex_once = PTHREAD_ONCE_INIT;
static LLVMOrcLLJITRef jit;
/* The host machine of each tier: [0] optimised (LLVMCodeGenLevelAggressive), [1] fast
 * (LLVMCodeGenLevelNone: fast instruction selection and register allocation). Each is made
 * when a module first needs it: a process that only compiles fast-tier genomes (otc evolve
 * --jit, with the math library loaded from the object cache) never makes the optimised one,
 * and the JIT itself needs neither (it only links). */
static LLVMTargetMachineRef tier_tm[2];
static unsigned long long module_serial;
static long objects_compiled, objects_loaded;
static double setup_ms, setup_cpu_ms; /* creating the JIT (once per process) */
/* ORC reports some failures (e.g. an unresolved symbol) through the session's reporter
 * rather than the caller; keep the last one to put into the caller's message. */
static char session_error[512];

static void init_mutex(void) {
    /* Recursive: freeing code from inside a cache eviction already holds the lock. */
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&jit_mutex, &attr);
    pthread_mutexattr_destroy(&attr);
}

void otc_llvm_jit_lock(void) {
    pthread_once(&mutex_once, init_mutex);
    pthread_mutex_lock(&jit_mutex);
}

void otc_llvm_jit_unlock(void) {
    pthread_mutex_unlock(&jit_mutex);
}

static void report_session_error(void *ctx, LLVMErrorRef err) {
    (void)ctx;
    char *msg = LLVMGetErrorMessage(err);
    snprintf(session_error, sizeof session_error, "%s", msg ? msg : "unknown");
    LLVMDisposeErrorMessage(msg);
}

/* Functions generated code may call. Defined as absolute addresses so they resolve even in a
 * statically linked program; anything else falls back to the process's exported symbols
 * (e.g. a libm function LLVM introduced while optimising). */
static otc_status define_helpers(LLVMOrcJITDylibRef jd) {
    static const struct {
        const char *name;
        void (*addr)(void);
    } helpers[] = {
        {"expf", (void (*)(void))expf},       {"expm1f", (void (*)(void))expm1f},
        {"logf", (void (*)(void))logf},       {"log1pf", (void (*)(void))log1pf},
        {"tanhf", (void (*)(void))tanhf},     {"sinf", (void (*)(void))sinf},
        {"cosf", (void (*)(void))cosf},       {"sqrtf", (void (*)(void))sqrtf},
        {"powf", (void (*)(void))powf},       {"exp2f", (void (*)(void))exp2f},
        {"ldexpf", (void (*)(void))ldexpf},   {"fmaxf", (void (*)(void))fmaxf},
        {"memset", (void (*)(void))memset},   {"memcpy", (void (*)(void))memcpy},
        {"memmove", (void (*)(void))memmove}, {"cblas_sgemm", (void (*)(void))cblas_sgemm},
    };
    enum { N = sizeof helpers / sizeof helpers[0] };
    LLVMOrcCSymbolMapPair pairs[N];
    for (int i = 0; i < N; i++) {
        pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit, helpers[i].name);
        pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)helpers[i].addr;
        pairs[i].Sym.Flags.GenericFlags =
            LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
        pairs[i].Sym.Flags.TargetFlags = 0;
    }
    LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, N);
    LLVMErrorRef err = LLVMOrcJITDylibDefine(jd, mu);
    if (err) LLVMOrcDisposeMaterializationUnit(mu);
    otc_status st = otc_llvm_check(err, OTC_ERR_STATE, "defining JIT helper symbols");
    if (st) return st;

    LLVMOrcDefinitionGeneratorRef gen = NULL;
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL);
    st = otc_llvm_check(err, OTC_ERR_STATE, "searching the process for JIT symbols");
    if (st) return st;
    LLVMOrcJITDylibAddGenerator(jd, gen);
    return OTC_OK;
}

/* Creates the LLJIT on first use; called with the lock held. */
static otc_status ensure_jit(void) {
    if (jit) return OTC_OK;
    double t0 = otc_llvm_now_ms(), c0 = otc_llvm_cpu_ms();
    otc_status st = otc_llvm_init();
    if (st) return st;
    otc_llvm_heap_prepare();
    /* The JIT only links: the objects come from tier_tm. Its own machine is a generic one for
     * the host's triple (the data layout and the linker read the triple only): by default
     * LLJIT asks the host's CPU and features again and makes two machines for them, ~0.5 ms
     * more of the first compile in a process. */
    LLVMTargetMachineRef generic = NULL;
    st = otc_llvm_target_machine(NULL, "generic", "", LLVMCodeGenLevelNone, &generic);
    if (st) return st;
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
        builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(generic));
    LLVMOrcLLJITRef j = NULL;
    st = otc_llvm_check(LLVMOrcCreateLLJIT(&j, builder), OTC_ERR_STATE, "creating the LLVM JIT");
    if (st) return st;
    jit = j;
    LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(jit),
                                            report_session_error, NULL);
    st = define_helpers(LLVMOrcLLJITGetMainJITDylib(jit));
    if (st) {
        LLVMConsumeError(LLVMOrcDisposeLLJIT(jit));
        jit = NULL;
    }
    setup_ms += otc_llvm_now_ms() - t0;
    setup_cpu_ms += otc_llvm_cpu_ms() - c0;
    return st;
}

double otc_llvm_jit_setup_ms(double *cpu_ms) {
    otc_llvm_jit_lock();
    double ms = setup_ms;
    if (cpu_ms) *cpu_ms = setup_cpu_ms;
    otc_llvm_jit_unlock();
    return ms;
}

/* The JIT and the tier's machine, each made on first use; called with the lock held. */
static otc_status ensure_tier(bool fast, LLVMTargetMachineRef *tm) {
    *tm = NULL;
    otc_status st = ensure_jit();
    int t = fast ? 1 : 0;
    if (!st && !tier_tm[t])
        st = otc_llvm_target_machine(NULL, NULL, NULL,
                                     fast ? LLVMCodeGenLevelNone : LLVMCodeGenLevelAggressive,
                                     &tier_tm[t]);
    if (!st) *tm = tier_tm[t];
    return st;
}

otc_status otc_llvm_jit_target_machine(bool fast, LLVMTargetMachineRef *tm) {
    otc_llvm_jit_lock();
    otc_status st = ensure_tier(fast, tm);
    otc_llvm_jit_unlock();
    return st;
}

const char *otc_llvm_jit_unique_prefix(char *buf, size_t len) {
    otc_llvm_jit_lock();
    unsigned long long n = ++module_serial;
    otc_llvm_jit_unlock();
    snprintf(buf, len, "otc%llu_", n);
    return buf;
}

/* Links obj (taken, also on failure) into the JIT in its own ResourceTracker and resolves
 * the n names. Called with the lock held, the JIT created. */
static otc_status add_object(LLVMMemoryBufferRef obj, int n, const char *const *names, void **addrs,
                             otc_llvm_code **out) {
    otc_llvm_code *code = calloc(1, sizeof *code);
    if (!code) {
        LLVMDisposeMemoryBuffer(obj);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for JIT code");
    }
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(jit);
    code->rt = LLVMOrcJITDylibCreateResourceTracker(jd);
    /* Takes the buffer, also on failure. */
    otc_status st = otc_llvm_check(LLVMOrcLLJITAddObjectFileWithRT(jit, code->rt, obj),
                                   OTC_ERR_STATE, "adding an object to the LLVM JIT");
    /* Linking happens here, on the first lookup. */
    for (int i = 0; !st && i < n; i++) {
        LLVMOrcExecutorAddress addr = 0;
        session_error[0] = '\0';
        LLVMErrorRef err = LLVMOrcLLJITLookup(jit, &addr, names[i]);
        if (err) {
            char what[1024];
            snprintf(what, sizeof what, "JIT linking '%.200s'%s%s%s", names[i],
                     session_error[0] ? " (" : "", session_error, session_error[0] ? ")" : "");
            st = otc_llvm_check(err, OTC_ERR_STATE, what);
        } else {
            addrs[i] = (void *)(uintptr_t)addr;
        }
    }
    if (st) {
        otc_llvm_code_free(code);
        return st;
    }
    *out = code;
    return OTC_OK;
}

otc_status otc_llvm_jit_add(LLVMOrcThreadSafeContextRef tsctx, LLVMModuleRef m, bool fast, int n,
                            const char *const *names, void **addrs, otc_llvm_code **out) {
    *out = NULL;
    otc_llvm_jit_lock();
    LLVMTargetMachineRef tm = NULL;
    otc_status st = ensure_tier(fast, &tm);
    LLVMMemoryBufferRef obj = NULL;
    if (!st) st = otc_llvm_emit_buffer(m, tm, false, &obj);
    LLVMDisposeModule(m);
    LLVMOrcDisposeThreadSafeContext(tsctx);
    if (!st) st = add_object(obj, n, names, addrs, out);
    otc_llvm_jit_unlock();
    return st;
}

otc_status otc_llvm_jit_compile(LLVMOrcThreadSafeContextRef tsctx, LLVMModuleRef m, bool fast,
                                otc_llvm_pipeline pipe, bool library, const uint64_t *key, int n,
                                const char *const *names, void **addrs, otc_llvm_code **out) {
    *out = NULL;
    otc_llvm_jit_lock();
    LLVMTargetMachineRef tm = NULL;
    otc_status st = ensure_tier(fast, &tm);
    /* The library's declarations are read from the module as rendered, cached or not. */
    if (!st && library) st = otc_llvm_library_provide(m);
    LLVMMemoryBufferRef obj = !st && key ? otc_llvm_objcache_load(key) : NULL;
    if (obj) {
        /* A stored object that does not link (whatever the reason) is compiled again. */
        st = add_object(obj, n, names, addrs, out);
        if (!st) objects_loaded++;
        st = OTC_OK;
        obj = NULL;
    }
    if (!st && !*out) {
        objects_compiled++;
        st = otc_llvm_finish_module(m, tm, pipe);
        if (!st) st = otc_llvm_emit_buffer(m, tm, false, &obj);
        if (!st && key)
            otc_llvm_objcache_store(key, LLVMGetBufferStart(obj), LLVMGetBufferSize(obj));
        if (!st) st = add_object(obj, n, names, addrs, out);
    }
    LLVMDisposeModule(m);
    LLVMOrcDisposeThreadSafeContext(tsctx);
    otc_llvm_jit_unlock();
    return st;
}

void otc_llvm_jit_object_counts(long *compiled, long *loaded) {
    otc_llvm_jit_lock();
    *compiled = objects_compiled;
    *loaded = objects_loaded;
    otc_llvm_jit_unlock();
}

void otc_llvm_code_free(otc_llvm_code *code) {
    if (!code) return;
    otc_llvm_jit_lock();
    /* A failure here can only leak the code's memory; nothing to report it to. */
    LLVMErrorRef err = LLVMOrcResourceTrackerRemove(code->rt);
    if (err) LLVMConsumeError(err);
    LLVMOrcReleaseResourceTracker(code->rt);
    /* The module's symbol names are now unreferenced; drop them so the pool stays small. */
    LLVMOrcSymbolStringPoolClearDeadEntries(
        LLVMOrcExecutionSessionGetSymbolStringPool(LLVMOrcLLJITGetExecutionSession(jit)));
    otc_llvm_jit_unlock();
    free(code);
}
