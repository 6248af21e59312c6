/* Which pass pipeline and code generator a rendered module gets (llvm_pipeline.c). */
#ifndef OTC_LLVM_PIPELINE_H
#define OTC_LLVM_PIPELINE_H

#include "llvm_internal.h"
#include "llvm_render.h"

/* Does the plan run dense products in generated loops (MATMUL kernels)? */
bool otc_llvm_plan_has_product_loops(const otc_plan *p);

/* The optimised tier's pipeline for module m (product_loops: one of its plans has them;
 * jit_inference: a JIT module without training code, compiled while its user waits): O3, or
 * the loop pipeline for JIT inference with product loops, and the quick pipeline for a large
 * module of straight-line kernels (which still gets the aggressive code generator). */
otc_llvm_pipeline otc_llvm_optimised_pipeline(LLVMModuleRef m, bool product_loops,
                                              bool jit_inference);

/* The fast tier's pipeline: none under the fast code generator, the quick one under
 * the aggressive generator (a fast-tier module with product loops). */
otc_llvm_pipeline otc_llvm_fast_pipeline(bool fast_codegen);

#endif
