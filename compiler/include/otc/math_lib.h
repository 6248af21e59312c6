/* The compiler's float math library (exp, expm1, log, log1p, tanh, sin, cos; after Cephes'
 * single-precision routines) as expression trees: the one source the C and LLVM renderers
 * both spell, and that a test can evaluate point by point (otc_expr_eval). */
#ifndef OTC_MATH_LIB_H
#define OTC_MATH_LIB_H

#include "otc/expr.h"

/* The tree computing math function f (OTC_EX_EXP .. OTC_EX_COS) of the leaf OTC_EX_X, or
 * NULL for any other op. A tree may call another function through its node (tanh's calls
 * OTC_EX_EXP): each renderer spells that as a call to its own copy. Selects, no branches;
 * every float -> integer conversion is guarded, so it is defined for every input. */
const otc_expr *otc_math_tree(otc_ex_op f);

#endif
