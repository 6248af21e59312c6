/* Which pass pipeline and code generator a rendered module gets (llvm_pipeline.c). */
#ifndef OTC_LLVM_PIPELINE_H
#define OTC_LLVM_PIPELINE_H

#include "llvm_internal.h"
#include "llvm_render.h"

/* Does the plan run dense products in generated loops (MATMUL kernels)? */
bool otc_llvm_plan_has_product_loops(const otc_plan *p);

/* The optimised tier's pipeline for module m (product_loops: one of its plans has them): O3,
 * except for a large module of straight-line kernels, which gets the quick pipeline (and still
 * the aggressive code generator). */
otc_llvm_pipeline otc_llvm_optimised_pipeline(LLVMModuleRef m, bool product_loops);

#endif
