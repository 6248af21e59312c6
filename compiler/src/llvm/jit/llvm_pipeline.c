/* Which pass pipeline a rendered module gets: none for the fast code generator; in the
 * optimised tier O3 for modules of ordinary size and for dense-product loops (a shorter loop
 * pipeline when they are JIT inference code), the quick pipeline for large straight-line ones. */
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

otc_llvm_pipeline otc_llvm_optimised_pipeline(LLVMModuleRef m, bool product_loops,
                                              bool jit_inference) {
    /* LeNet's inference module (conv, pool and dense loops; CPU time of the compile, medians of
     * 3 interleaved runs on a loaded machine): O3 ~690 ms, the loop pipeline ~235 ms; forward
     * ran within the runs' spread of O3's code (batch 1: 28.1 against 28.9 us; batch 64: 539
     * against 504 us, mostly OpenBLAS). Dropping GVN and LICM (the quick pipeline) ran ~10-20%
     * slower; adding induction-variable simplification and full unrolling cost ~200 ms more
     * for nothing measurable. A training module keeps O3: LeNet's training step at batch 64
     * ran ~7% slower after the loop pipeline (2.82 against 2.64 ms; compile 0.48 against
     * 1.63 s) and ~1.5x slower after the quick one, and training runs long. */
    if (product_loops) return jit_inference ? OTC_LLVM_PIPE_LOOPS : OTC_LLVM_PIPE_O3;
    if (!more_instructions_than(m, LARGE_STRAIGHT_LINE)) return OTC_LLVM_PIPE_O3;
    return OTC_LLVM_PIPE_QUICK;
}

otc_llvm_pipeline otc_llvm_fast_pipeline(bool fast_codegen) {
    /* The fast code generator (fast instruction selection) folds as it selects: instcombine
     * and early CSE before it cost more than they save. A 100-neuron genome's forward module
     * compiled in ~16 ms of CPU instead of ~22 and ran as fast (forward at batch 64); its
     * training module in ~100 ms instead of ~115. Nor do promoting slots and merging blocks
     * (sroa, simplifycfg) pay: with no pass pipeline at all the forward compiled ~1.6 ms
     * faster cold (the pass builder's set-up and its first run over the module: 21.3 -> 19.7
     * ms, medians of 9 processes), ~0.2 ms warm, and its code ran as fast (batch 1, 64, one
     * lane; training at batch 64 too), the same bits. The aggressive code generator, which a
     * fast module with product loops gets, does better on folded IR (LeNet: ~200 ms with the
     * quick pipeline, ~250 without the folding). The module is only rewritten into forms the
     * fast selector takes whole (llvm_support.c calls llvm_fastisel.c). */
    return fast_codegen ? OTC_LLVM_PIPE_FAST : OTC_LLVM_PIPE_QUICK;
}
