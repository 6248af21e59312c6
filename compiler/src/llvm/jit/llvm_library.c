/* The JIT's math library: each costly activation (per alpha and vector width) compiled once
 * per machine (then loaded from the on-disk object cache once per process) at O3 and linked by
 * every module that calls it, so a graph's compile pays for its own code only (a module of ten
 * activations' polynomials cost more to compile than a hundred neurons). */
#include <stdlib.h>
#include <string.h>

#include "llvm_internal.h"

/* Functions already defined in the JIT (a few dozen at most: activations x alphas x widths)
 * and their code, kept for the life of the process like the JIT itself. */
typedef struct {
    char *name;
    otc_llvm_code *code;
} entry;
static entry *provided;
static int n_provided, cap_provided;
static double spent_ms, spent_cpu_ms;

double otc_llvm_library_ms(double *cpu_ms) {
    otc_llvm_jit_lock();
    double ms = spent_ms;
    if (cpu_ms) *cpu_ms = spent_cpu_ms;
    otc_llvm_jit_unlock();
    return ms;
}

static bool is_provided(const char *name) {
    for (int i = 0; i < n_provided; i++)
        if (!strcmp(provided[i].name, name)) return true;
    return false;
}

/* Room for one more entry, before compiling (so a compiled function is never lost). */
static otc_status reserve(void) {
    if (n_provided < cap_provided) return OTC_OK;
    int cap = cap_provided ? 2 * cap_provided : 32;
    entry *p = realloc(provided, (size_t)cap * sizeof *p);
    if (!p) return otc_fail(OTC_ERR_NOMEM, "out of memory for the JIT math library");
    provided = p;
    cap_provided = cap;
    return OTC_OK;
}

/* One module defining `name`, compiled into the JIT for good. */
static otc_status define(const char *name, int act, float alpha, unsigned lanes, bool grad) {
    char *copy = strdup(name);
    if (!copy) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    LLVMTargetMachineRef tm = NULL;
    otc_status st = reserve();
    if (!st) st = otc_llvm_jit_target_machine(false, &tm);
    if (st) {
        free(copy);
        return st;
    }
    LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContext();
    otc_llvm_ir ir = {0};
    ir.ctx = LLVMOrcThreadSafeContextGetContext(tsctx);
    otc_llvm_ir_types(&ir);
    ir.mod = LLVMModuleCreateWithNameInContext("otc.library", ir.ctx);
    ir.b = LLVMCreateBuilderInContext(ir.ctx);
    LLVMTypeRef t = lanes > 0 ? LLVMVectorType(ir.f32, lanes) : ir.f32;
    LLVMValueRef fn = otc_llvm_act_declare(&ir, act, alpha, t, grad);
    otc_llvm_act_define(&ir, fn, act, alpha, grad);
    LLVMDisposeBuilder(ir.b);
    /* Resolving the name links the object now, so a failure surfaces here. The code stays
     * for the life of the process, like the JIT itself; the object, in the on-disk cache, for
     * the machine's next processes. */
    uint64_t key[2];
    bool keyed = otc_llvm_objcache_key(ir.mod, tm, false, OTC_LLVM_PIPE_O3, key);
    void *addr = NULL;
    otc_llvm_code *code = NULL;
    st = otc_llvm_jit_compile(tsctx, ir.mod, false, OTC_LLVM_PIPE_O3, false, keyed ? key : NULL, 1,
                              &name, &addr, &code);
    if (st) {
        free(copy);
        return st;
    }
    provided[n_provided++] = (entry){copy, code};
    return OTC_OK;
}

otc_status otc_llvm_library_provide(LLVMModuleRef m) {
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        if (!LLVMIsDeclaration(f)) continue;
        size_t len;
        const char *name = LLVMGetValueName2(f, &len);
        int act;
        float alpha;
        unsigned lanes;
        bool grad;
        if (!otc_llvm_act_parse_name(name, &act, &alpha, &lanes, &grad) || is_provided(name))
            continue;
        double t0 = otc_llvm_now_ms(), c0 = otc_llvm_cpu_ms();
        otc_status st = define(name, act, alpha, lanes, grad);
        spent_ms += otc_llvm_now_ms() - t0;
        spent_cpu_ms += otc_llvm_cpu_ms() - c0;
        if (st) return otc_fail_context(st, "compiling the JIT math library's '%s'", name);
    }
    return OTC_OK;
}
