/* Loop programs: how an op with a loop structure of its own (sums, means, softmaxes, losses,
 * concat/slice/select, a product of two unbatched values) lowers, forward and backward,
 * written once by the plan (plan/plan_lower.c) and spelled by the C and LLVM renderers. */
#ifndef OTC_LOOPS_H
#define OTC_LOOPS_H

#include <stdbool.h>
#include <stdint.h>

#include "otc/expr.h"
#include "otc/graph.h"
#include "otc/plan.h"

/*
 * A program is what one node computes (or its gradient rule) for ONE sample, over the
 * sample's elements (the plan's layout: element e of a batched value; the renderer adds the
 * sample). A batched program's body runs for every sample of the batch — the JIT runs it on
 * a vector of samples at once, emitted C in a loop over samples — and an unbatched one's
 * once. Its statements come in three sections, in order:
 *
 *   BEFORE  once, before the samples: uniform locals (reads unbatched values only)
 *   BODY    per sample: loops, locals, stores, accumulations, checks, batch sums
 *   AFTER   once, after the samples: reads the batch sums, stores unbatched results
 *
 * Every statement's value is an expression tree (otc/expr.h) whose leaves x, x1 and
 * numbered arguments are bound to operands: an element of a buffer, a local, a loop index,
 * a constant, the number of samples or a batch sum. The renderers know nothing of ops:
 * they spell loops, loads, stores and the trees.
 */
enum {
    OTC_LOOP_MAX_DEPTH = 8,    /* nested loops (a grouped convolution's nest is 7 deep) */
    OTC_LOOP_MAX_OPERANDS = 8, /* arguments of one statement's tree */
    OTC_LOOP_MAX_BUFS = 64,    /* buffers one program touches */
    OTC_LOOP_MAX_LOCALS = 16,  /* a convolution's weight gradient sums 12 at once */
    OTC_LOOP_MAX_SUMS = 2,
    OTC_LOOP_MAX_TREES = 8 /* trees a program composes itself (see otc_loop_program) */
};

/* An element of a buffer, per sample: base + sum of stride[d] * (index of loop d). */
typedef struct {
    int64_t base;
    int64_t stride[OTC_LOOP_MAX_DEPTH];
} otc_loop_index;

/* A buffer: the value of a node, or its gradient. */
typedef struct {
    otc_id node;
    bool grad;
} otc_loop_buf;

typedef enum {
    OTC_LOOP_NONE,
    OTC_LOOP_LOAD,    /* buffer .n at .at (an unbatched value: the same for every sample) */
    OTC_LOOP_LOCAL,   /* local .n */
    OTC_LOOP_VAR,     /* the index of loop .n (depth), as a float */
    OTC_LOOP_CONST,   /* .k */
    OTC_LOOP_SAMPLES, /* the number of samples as a float (1 in an unbatched program) */
    OTC_LOOP_SUM      /* batch sum .n (AFTER only) */
} otc_loop_operand_kind;

typedef struct {
    otc_loop_operand_kind kind;
    int n;
    otc_loop_index at;
    float k;
} otc_loop_operand;

typedef enum {
    OTC_LOOP_FOR,   /* opens loop number depth (0, 1, ...) of .count iterations */
    OTC_LOOP_END,   /* closes the innermost loop or WHEN block */
    OTC_LOOP_LET,   /* local .n = tree */
    OTC_LOOP_STORE, /* buffer .n at .at = tree */
    OTC_LOOP_ADD,   /* buffer .n at .at += tree (a gradient; padding samples add nothing) */
    OTC_LOOP_SUMUP, /* batch sum .n += tree, over the real samples only */
    OTC_LOOP_CHECK, /* tree, a truth, must hold; else the call fails naming the node */
    /* Opens a block (closed by END) that runs only when 0 <= .at < .count, .at read as a
     * plain number (no buffer, no sample): the same for every sample, so a branch and never
     * a mask. A convolution's padding: the taps that fall outside the input are skipped. */
    OTC_LOOP_WHEN
} otc_loop_stmt_kind;

typedef enum { OTC_LOOP_BEFORE, OTC_LOOP_BODY, OTC_LOOP_AFTER } otc_loop_section;

typedef struct {
    otc_loop_stmt_kind kind;
    otc_loop_section section;
    int n;         /* LET: local; STORE/ADD: buffer; SUMUP: sum */
    int64_t count; /* FOR; WHEN: the bound */
    otc_loop_index at;
    const otc_expr *tree;
    otc_loop_operand x, x1; /* the leaves OTC_EX_X and OTC_EX_X1, when the tree reads them */
    int n_operands;         /* OTC_EX_ARG 0 .. n_operands - 1 */
    otc_loop_operand operand[OTC_LOOP_MAX_OPERANDS];
} otc_loop_stmt;

typedef struct {
    otc_id node;
    bool backward;
    bool batched; /* the body runs per sample */
    /* Exactly the buffers the statements touch: the values a backward program reads are
     * what the plan keeps for it. */
    int n_bufs;
    otc_loop_buf buf[OTC_LOOP_MAX_BUFS];
    int n_locals, n_sums;
    bool local_uniform[OTC_LOOP_MAX_LOCALS]; /* set in BEFORE: one value for all samples */
    int n_stmts;
    otc_loop_stmt *stmt;
    /* Trees made by composing the op spec's trees (a loss derivative times the incoming
     * gradient); statements point into this. */
    int n_trees;
    otc_expr tree[OTC_LOOP_MAX_TREES];
} otc_loop_program;

/* Does op lower to a loop program (forward and backward) when planned as an OP kernel? */
bool otc_loop_lowers(otc_op op);

/* The forward program of node id, or with `backward` its gradient rule, which accumulates
 * into the gradient of every input i with needs_grad[i] (NULL: every input). Errors name the
 * op and the node. Free with otc_loop_program_free. */
otc_status otc_loop_lower(const otc_graph *g, otc_id id, bool backward, const bool *needs_grad,
                          otc_loop_program **out);
void otc_loop_program_free(otc_loop_program *p);
/* The same for a node of a plan: the inputs' gradients it accumulates are those the plan
 * gives one (needs_grad). */
otc_status otc_plan_lower(const otc_plan *plan, otc_id id, bool backward, otc_loop_program **out);

/* A conv2d node's forward for ONE sample with its innermost loops over a row's output pixels
 * (contiguous elements), for a renderer to vectorise across pixels when there is a single
 * sample; the same sums in the same order as otc_plan_lower's. *out = NULL (and OTC_OK) when
 * the node has no such variant. */
otc_status otc_plan_lower_pixels(const otc_plan *plan, otc_id id, otc_loop_program **out);

/* A stride-1 conv2d's geometry, for the renderers' one-sample direct sums (the JIT's
 * llvm_render_conv1.c, the C's render_c_conv1.c): input C x H x W, output OC x OH x OW, the
 * kernel, padding and groups, and U, the output channels summed at once (the largest divisor
 * of a group's channels up to OTC_CONV1_CHANNELS). False when node id is no conv2d on
 * batched 4-D values with stride and dilation 1. */
enum { OTC_CONV1_CHANNELS = 8 };
typedef struct {
    int64_t C, H, W, OC, OH, OW, KH, KW, ph, pw, G, U;
} otc_conv1_geometry;
bool otc_conv1_geometry_of(const otc_graph *g, otc_id id, otc_conv1_geometry *out);

/* The program as text, one statement a line (for tests and `--print-plan` style dumps). */
char *otc_loop_program_text(const otc_loop_program *p);

#endif
