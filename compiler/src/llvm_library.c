/* The JIT's math library: each costly activation (per alpha and vector width) compiled once
 * per process at O3 and linked by every module that calls it, so a graph's compile pays
 * for its own code only (a module of ten activations' polynomials cost more to compile than
 * a hundred neurons). */
#include <stdlib.h>
#include <string.h>

#include "llvm_internal.h"

/* Names already defined in the JIT (a few dozen at most: activations x alphas x widths). */
static char **provided;
static int n_provided, cap_provided;

static bool is_provided(const char *name) {
    for (int i = 0; i < n_provided; i++)
        if (!strcmp(provided[i], name)) return true;
    return false;
}

static otc_status remember(const char *name) {
    if (n_provided == cap_provided) {
        int cap = cap_provided ? 2 * cap_provided : 32;
        char **p = realloc(provided, (size_t)cap * sizeof *p);
        if (!p) return otc_fail(OTC_ERR_NOMEM, "out of memory for the JIT math library");
        provided = p;
        cap_provided = cap;
    }
    provided[n_provided] = strdup(name);
    if (!provided[n_provided]) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    n_provided++;
    return OTC_OK;
}

/* One module defining `name`, compiled into the JIT for good. */
static otc_status define(const char *name, int act, float alpha, unsigned lanes, bool grad) {
    LLVMTargetMachineRef tm = NULL;
    otc_status st = otc_llvm_jit_target_machine(false, &tm);
    if (st) return st;
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
    st = otc_llvm_finish_module(ir.mod, tm, OTC_LLVM_PIPE_O3);
    if (st) {
        LLVMDisposeModule(ir.mod);
        LLVMOrcDisposeThreadSafeContext(tsctx);
        return st;
    }
    /* Resolving the name links the object now, so a failure surfaces here. The code stays
     * for the life of the process, like the JIT itself. */
    void *addr = NULL;
    otc_llvm_code *code = NULL;
    st = otc_llvm_jit_add(tsctx, ir.mod, false, 1, &name, &addr, &code);
    return st ? st : remember(name);
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
        otc_status st = define(name, act, alpha, lanes, grad);
        if (st) return otc_fail_context(st, "compiling the JIT math library's '%s'", name);
    }
    return OTC_OK;
}
