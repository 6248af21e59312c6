/* Which pass pipeline a rendered module gets in the optimised tier: O3 for modules of
 * ordinary size and for dense-product loops, the quick pipeline for large straight-line ones. */
#include "llvm_pipeline.h"

/* Rendered IR instructions from which a module without product loops skips O3. Its kernels are
 * straight-line vector code already (the renderer spells every batch loop as <W x float>), so
 * O3 has little to add and costs ~20 us per instruction (IPSCCP, GVN, loop-load elimination
 * and vector-combine over loop bodies of thousands of instructions), the quick pipeline ~1.5:
 * on a 10,000-neuron chain (150k instructions) O3 took 2.0-2.5 s of CPU and the quick
 * pipeline 0.15 s, and the two objects differed by 0.3% in size (code generation, ~1.2 s, the
 * same). A 100-neuron genome renders ~4k instructions for inference and ~17k with training
 * (forward, backward, update), kept at O3 with room to spare; ~1,000 neurons of three inputs
 * reach the limit. */
enum { LARGE_STRAIGHT_LINE = 32000 };

bool otc_llvm_plan_has_product_loops(const otc_plan *p) {
    for (int k = 0; k < p->n_kernels; k++)
        if (p->kernels[k].kind == OTC_KERNEL_MATMUL) return true;
    return false;
}

/* Are there more than `limit` instructions in m? (Stops counting there.) */
static bool more_instructions_than(LLVMModuleRef m, int64_t limit) {
    int64_t n = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
            for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
                if (++n > limit) return true;
    return false;
}

otc_llvm_pipeline otc_llvm_optimised_pipeline(LLVMModuleRef m, bool product_loops) {
    if (product_loops || !more_instructions_than(m, LARGE_STRAIGHT_LINE)) return OTC_LLVM_PIPE_O3;
    return OTC_LLVM_PIPE_QUICK;
}
