/* The scalar expression IR: the elementwise math of every op (and the compiler's float math
 * library) written once, as data — trees of constants, the op's inputs and primitive
 * operations — which the interpreter evaluates and the C and LLVM renderers spell. */
#ifndef OTC_EXPR_H
#define OTC_EXPR_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    /* leaves */
    OTC_EX_CONST,  /* k, a float */
    OTC_EX_ICONST, /* k, a 32-bit integer */
    OTC_EX_X,      /* the op's first input (a math function's argument) */
    OTC_EX_X1,     /* the op's second input */
    OTC_EX_Y,      /* the op's output (in derivatives) */
    OTC_EX_A,      /* the op's parameter (otc_node_param: alpha, or scale) */
    /* float -> float */
    OTC_EX_NEG,
    OTC_EX_ABS,
    OTC_EX_EXP, /* the math library: libm in the interpreter, math/'s trees in compiled code */
    OTC_EX_EXPM1,
    OTC_EX_LOG,
    OTC_EX_LOG1P,
    OTC_EX_TANH,
    OTC_EX_SIN,
    OTC_EX_COS,
    /* float, float -> float */
    OTC_EX_ADD,
    OTC_EX_SUB,
    OTC_EX_MUL,
    OTC_EX_DIV,
    OTC_EX_MAX, /* a > b ? a : b */
    OTC_EX_COPYSIGN,
    OTC_EX_FMA,  /* a * b + c, fused where the machine can */
    OTC_EX_POLY, /* Horner's rule in a: coef[0] a^(n-1) + ... + coef[n-1] */
    /* comparisons -> truth (ordered: false when either side is NaN) */
    OTC_EX_LT,
    OTC_EX_GT,
    OTC_EX_EQ,
    OTC_EX_SELECT, /* a ? b : c, both arms evaluated (no branch, so loops vectorise) */
    /* integers (32-bit, two's complement) and bit patterns, for the math library's trees */
    OTC_EX_F2I, /* float -> integer, truncating toward zero */
    OTC_EX_I2F,
    OTC_EX_BITS,      /* a float's bit pattern */
    OTC_EX_FROM_BITS, /* the float with that bit pattern */
    OTC_EX_IADD,
    OTC_EX_ISUB,
    OTC_EX_IAND,
    OTC_EX_IOR,
    OTC_EX_SHL,
    OTC_EX_LSHR,
    OTC_EX_INE, /* integer a != b -> truth */
    /* appended: the optimiser updates' leaves and their square root */
    OTC_EX_ARG,  /* numbered argument n (a leaf): what it is, the tree's owner says */
    OTC_EX_SQRT, /* correctly rounded everywhere (IEEE), so no library tree */
    OTC_EX_COUNT
} otc_ex_op;

/* Arguments a tree may number (OTC_EX_ARG 0 .. this - 1). */
enum { OTC_EX_MAX_ARGS = 16 };

/* One node; operands a, b, c as the op needs them. Trees are static data: a subtree used
 * twice is one object referenced twice (renderers compute it once). */
typedef struct otc_expr {
    otc_ex_op op;
    const struct otc_expr *a, *b, *c;
    double k;           /* CONST, ICONST */
    const double *coef; /* POLY: n coefficients, highest power first */
    int n;              /* POLY: the coefficients; ARG: the argument's number */
} otc_expr;

typedef enum { OTC_EX_FLOAT, OTC_EX_INT, OTC_EX_TRUTH } otc_ex_type;

/* What a node of op computes, and how many operands it takes. */
otc_ex_type otc_expr_type(const otc_expr *e);
int otc_expr_arity(otc_ex_op op);
/* "exp", "add", ...: for messages and the math library's function names. */
const char *otc_expr_op_name(otc_ex_op op);
/* Does e read the leaf (OTC_EX_X, _X1, _Y, _A)? */
bool otc_expr_reads(const otc_expr *e, otc_ex_op leaf);
/* Does e read argument n (OTC_EX_ARG)? */
bool otc_expr_reads_arg(const otc_expr *e, int n);
/* Does e call the math library (exp .. cos)? Compiled code then costs a polynomial. */
bool otc_expr_calls_math(const otc_expr *e);
/* Is e the float constant k? */
bool otc_expr_is_const(const otc_expr *e, double k);

/* The leaves' values for evaluation: x, x1, y, a and the n_arg arguments (an argument past
 * n_arg reads as 0). */
typedef struct {
    float x, x1, y, a;
    const float *arg;
    int n_arg;
} otc_expr_env;

/* e at one point, transcendental functions from libm (the interpreter's reference). */
float otc_expr_eval(const otc_expr *e, const otc_expr_env *env);

/* An argument over arrays: an array (v), or where v is NULL the same k for every element. */
typedef struct {
    const float *v;
    float k;
} otc_expr_arg;

/* Arrays for the leaves (NULL where e does not read them), the parameter and the n_arg
 * arguments. */
typedef struct {
    const float *x, *x1, *y;
    float a;
    const otc_expr_arg *arg;
    int n_arg;
} otc_expr_arrays;

/* out[i] = e at element i, for n elements (out may alias an input). */
void otc_expr_eval_n(const otc_expr *e, const otc_expr_arrays *in, float *out, size_t n);

/* A tree flattened once into steps, each a tight loop over a chunk of elements: the form the
 * interpreter runs (the op tables compile their trees on first use). */
enum { OTC_EXPR_MAX_STEPS = 40 };
typedef struct {
    unsigned char op;             /* an otc_ex_op, or a step of expr.c's own */
    unsigned char a, b, c;        /* operand registers */
    unsigned char kind_a, kind_b; /* a register, a constant (k_a, k_b) or the parameter */
    float k_a, k_b;
    const otc_expr *point; /* the node (POLY's coefficients; integer subtrees) */
} otc_expr_step;
typedef struct {
    const otc_expr *root; /* the tree (a single element is evaluated on it directly) */
    int n;
    otc_expr_step step[OTC_EXPR_MAX_STEPS];
} otc_expr_program;

/* False when e needs more than OTC_EXPR_MAX_STEPS steps. */
bool otc_expr_compile(const otc_expr *e, otc_expr_program *p);
/* out[i] = the program at element i (out may alias an input). */
void otc_expr_run_n(const otc_expr_program *p, const otc_expr_arrays *in, float *out, size_t n);
/* acc[i] += g[i] * the program at element i (a gradient contribution). */
void otc_expr_run_accumulate_n(const otc_expr_program *p, const otc_expr_arrays *in, const float *g,
                               float *acc, size_t n);

#endif
