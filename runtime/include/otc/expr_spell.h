/* Short spellings for writing otc_expr trees as static data (the op spec, the math library):
 * each macro is the address of a file-scope compound literal, so a tree is a constant
 * initialiser. Include only in files that define trees. */
#ifndef OTC_EXPR_SPELL_H
#define OTC_EXPR_SPELL_H

#include "otc/expr.h"

#define OTC_EX_NODE(o, ...) (&(const otc_expr){.op = (o), __VA_ARGS__})

#define EX_K(v)          (&(const otc_expr){.op = OTC_EX_CONST, .k = (v)})
#define EX_KI(v)         (&(const otc_expr){.op = OTC_EX_ICONST, .k = (v)})
#define EX_X             (&(const otc_expr){.op = OTC_EX_X})
#define EX_X1            (&(const otc_expr){.op = OTC_EX_X1})
#define EX_Y             (&(const otc_expr){.op = OTC_EX_Y})
#define EX_A             (&(const otc_expr){.op = OTC_EX_A})
#define EX_ARG(i)        (&(const otc_expr){.op = OTC_EX_ARG, .n = (i)})
#define EX_1(o, p)       OTC_EX_NODE(o, .a = (p))
#define EX_2(o, p, q)    OTC_EX_NODE(o, .a = (p), .b = (q))
#define EX_3(o, p, q, r) OTC_EX_NODE(o, .a = (p), .b = (q), .c = (r))

#define EX_NEG(p)         EX_1(OTC_EX_NEG, p)
#define EX_ABS(p)         EX_1(OTC_EX_ABS, p)
#define EX_EXP(p)         EX_1(OTC_EX_EXP, p)
#define EX_EXPM1(p)       EX_1(OTC_EX_EXPM1, p)
#define EX_LOG(p)         EX_1(OTC_EX_LOG, p)
#define EX_LOG1P(p)       EX_1(OTC_EX_LOG1P, p)
#define EX_TANH(p)        EX_1(OTC_EX_TANH, p)
#define EX_SIN(p)         EX_1(OTC_EX_SIN, p)
#define EX_COS(p)         EX_1(OTC_EX_COS, p)
#define EX_SQRT(p)        EX_1(OTC_EX_SQRT, p)
#define EX_ADD(p, q)      EX_2(OTC_EX_ADD, p, q)
#define EX_SUB(p, q)      EX_2(OTC_EX_SUB, p, q)
#define EX_MUL(p, q)      EX_2(OTC_EX_MUL, p, q)
#define EX_DIV(p, q)      EX_2(OTC_EX_DIV, p, q)
#define EX_MAX(p, q)      EX_2(OTC_EX_MAX, p, q)
#define EX_COPYSIGN(p, q) EX_2(OTC_EX_COPYSIGN, p, q)
#define EX_FMA(p, q, r)   EX_3(OTC_EX_FMA, p, q, r)
#define EX_LT(p, q)       EX_2(OTC_EX_LT, p, q)
#define EX_GT(p, q)       EX_2(OTC_EX_GT, p, q)
#define EX_EQ(p, q)       EX_2(OTC_EX_EQ, p, q)
#define EX_SEL(c, p, q)   EX_3(OTC_EX_SELECT, c, p, q)
/* Horner's rule over a static const double array (highest power first). */
#define EX_POLY(p, coefs)                                                                          \
    OTC_EX_NODE(OTC_EX_POLY, .a = (p), .coef = (coefs),                                            \
                .n = (int)(sizeof(coefs) / sizeof(coefs)[0]))
#define EX_F2I(p)       EX_1(OTC_EX_F2I, p)
#define EX_I2F(p)       EX_1(OTC_EX_I2F, p)
#define EX_BITS(p)      EX_1(OTC_EX_BITS, p)
#define EX_FROM_BITS(p) EX_1(OTC_EX_FROM_BITS, p)
#define EX_IADD(p, q)   EX_2(OTC_EX_IADD, p, q)
#define EX_ISUB(p, q)   EX_2(OTC_EX_ISUB, p, q)
#define EX_IAND(p, q)   EX_2(OTC_EX_IAND, p, q)
#define EX_IOR(p, q)    EX_2(OTC_EX_IOR, p, q)
#define EX_SHL(p, q)    EX_2(OTC_EX_SHL, p, q)
#define EX_LSHR(p, q)   EX_2(OTC_EX_LSHR, p, q)
#define EX_INE(p, q)    EX_2(OTC_EX_INE, p, q)

#endif
