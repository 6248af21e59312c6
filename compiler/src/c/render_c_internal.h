/* Private: what the C renderer's files share while spelling one plan. */
#ifndef OTC_RENDER_C_INTERNAL_H
#define OTC_RENDER_C_INTERNAL_H

#include "otc/render_c.h"
#include "plan_internal.h"
#include "otc/text.h"

/* The emitted file's own float math (render_c_math.c), NAME_<suffix>. */
typedef enum {
    OTC_CRM_BASICS, /* NAME_fma, NAME_from_bits, NAME_to_bits, NAME_sel */
    OTC_CRM_EXP,
    OTC_CRM_EXPM1,
    OTC_CRM_LOG,
    OTC_CRM_LOG1P,
    OTC_CRM_TANH,
    OTC_CRM_SIN,
    OTC_CRM_COS,
    OTC_CRM_FMAX,
    OTC_CRM_COUNT
} otc_cr_mathfn;

typedef struct {
    otc_text *sb;
    const otc_plan *plan;
    const otc_graph *g;
    const char *name;
    int *mark;    /* per node: the kernel that last declared its pointer (+1) */
    int mark_gen; /* bumped per kernel/step */
    int indent;
    bool f_used[OTC_ACT_COUNT]; /* activation helpers the bodies call */
    bool df_used[OTC_ACT_COUNT];
    bool agg_used[OTC_AGG_COUNT];      /* aggregation helpers (NAME_agg_max) the bodies call */
    bool agg_grad_used[OTC_AGG_COUNT]; /* and their gradients' (NAME_agg_grad_max) */
    bool fo_used[OTC_ACT_COUNT];       /* out-of-line forward helpers (NAME_fo_tanh) */
    /* Spelling the small-batch path: activations that call math as calls, and the scalar
     * variant of the math (NAME_exp_s). */
    bool outline;
    bool math_used[2][OTC_CRM_COUNT]; /* math the code calls: [0] vector loops, [1] scalar */
    char inline_macro[80];            /* "NAME_INLINE" (otc_cr_inline) */
    char outline_macro[80];           /* "NAME_OUTLINE" */
    char sqrt_macro[80];              /* "NAME_SQRT" (otc_cr_sqrt) */
    bool sqrt_used;
    /* The backward's out-of-line loops: NAME_batch_sum, NAME_batch_dot, NAME_batch_axpy. */
    bool batch_sum_used, batch_dot_used, batch_axpy_used;
    bool one_sample;   /* spelling a body for the batch of one: element e of a value is [e] */
    bool many;         /* spelling a body only run from OTC_C_BIG_BATCH samples: no B == 1 code */
    otc_text *helpers; /* dense-product helper functions (render_c_matmul.c), before the bodies */
    /* Spelling a tape's loops (render_c_tape.c): the step graph's states, the window's steps.
     * The bodies then run inside "for t", with ws the slot of step t and wp step t - 1's. */
    const otc_unrolled *tape;
    int tape_steps;
    int n_helpers;
    bool tall_blocks; /* a helper reads NAME_TALL_BLOCKS (otc_cr_mm_panels) */
    /* Parts (render_c_parts.c): the functions of a long schedule, before the bodies; the
     * locals of the function being written (OTC_CR_* bits) a part's call passes on; a
     * training file (its parts take NAME_params); the fixed batch stride, or 0. */
    otc_text *parts;
    int n_parts;
    unsigned locals;
    bool train;
    int fixed_batch;
    /* A training file (share): its loop programs are functions NAME_lpN, and identical
     * helpers (products, loop programs) one function each (render_c_shared.c). */
    bool share;
    struct otc_cr_shared *shared;
    int n_shared, cap_shared;
    int n_loop_fns;
    otc_status st;
} otc_cr;

/* The locals the bodies read besides B and S. */
enum {
    OTC_CR_P = 1u << 0,     /* NAME_params *p (the update) */
    OTC_CR_W = 1u << 1,     /* the weights */
    OTC_CR_WS = 1u << 2,    /* the activation buffer (a tape: step t's slot) */
    OTC_CR_WP = 1u << 3,    /* a tape: step t - 1's slot */
    OTC_CR_G = 1u << 4,     /* the gradient buffer */
    OTC_CR_CARRY = 1u << 5, /* a tape: the state's gradient from step t + 1 */
    OTC_CR_IN = 1u << 6,    /* the caller's rows */
    OTC_CR_OUT = 1u << 7,
    OTC_CR_TARGET = 1u << 8,
    OTC_CR_LR = 1u << 9,
    OTC_CR_T = 1u << 10 /* a tape: the time step */
};

/* One line of code at the current indentation. */
void otc_cr_line(otc_cr *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* render_c_shared.c: a helper function's body spelled apart (into f->body at indentation 1,
 * c->sb and c->indent restored by otc_cr_fn_end), then appended to c->helpers as
 * "decl NAME_<kind><n>(params) {" (inside "guard" ... "#endif" unless guard is NULL) unless,
 * with c->share, one of the same kind, parameters and body is there already. Returns n
 * (*counter: the kind's next number). */
typedef struct {
    otc_text *sb;
    int indent;
    otc_text body;
} otc_cr_fn;
void otc_cr_fn_begin(otc_cr *c, otc_cr_fn *f);
int otc_cr_fn_end(otc_cr *c, otc_cr_fn *f, const char *decl, const char *kind, int *counter,
                  const char *params, const char *guard);
void otc_cr_shared_free(otc_cr *c);

/* render_c_matmul.c: the plan's register-blocked dense products. A "vector" of the plan's
 * tiling is OTC_CR_LANES floats here: a compiler packs them into one AVX2 register or two of
 * SSE or NEON (the emitted C names no instruction set). */
#define OTC_CR_LANES 8
/* out[row0 + j][b] (=|+=) sum_q x[q][b] * w(j, q) for j < rows and every sample, in blocks
 * of vectors * OTC_CR_LANES samples; x and out are batched rows (x + q * S). */
typedef struct {
    const char *x, *w, *out; /* C names */
    int64_t inner;           /* q < inner */
    int64_t w_stride;        /* floats per row of w */
    bool w_by_out; /* w(j, q) = w[(row0 + j) * w_stride + q], else w[q * w_stride + row0 + j] */
    bool accumulate;
    int vectors;
} otc_cr_mm;
void otc_cr_mm_rows(otc_cr *c, const otc_cr_mm *d, const char *row0, int rows);
/* The blocks of otc_cr_mm_rows at their widest and half of it only (the caller checks
 * B >= otc_cr_tall_min). */
void otc_cr_mm_tall_rows(otc_cr *c, const otc_cr_mm *d, const char *row0, int rows);
int otc_cr_tall_min(const otc_cr_mm *d);
/* "#if NAME_TALL_BLOCKS" (open) or its "#endif", the macro defined in the file's prelude. */
void otc_cr_tall_if(otc_cr *c, bool open);
/* All n_rows output rows, `block` at a time, then the rest as one narrower block. */
void otc_cr_mm_all_rows(otc_cr *c, const otc_cr_mm *d, int64_t n_rows, int block);
/* A batch narrower than the widest block and not a multiple of OTC_CR_LANES runs blocks
 * of OTC_CR_ONE_COLS of W's contiguous columns x OTC_CR_NARROW_SAMPLES samples instead, over
 * every q (no panels): the row blocks ran two overlapping blocks of 8 samples at 11 (or
 * blocks of 4 and scalar sums below 8), 3-8x slower than these at batches 2-15 on the 33x33
 * substrate (medians of 7, gcc -O3 -march=native and x86-64-v3; docs/performance.md). */
#define OTC_CR_NARROW_SAMPLES 4
/* Opens the block of the batches those blocks take: "if (B > 1 && B < 16 && B % 8 != 0) {". */
void otc_cr_narrow_if(otc_cr *c, const otc_cr_mm *d);
/* out[e][b] = sum_q x[q][b] * w[q * w_stride + e] (d->w_by_out and d->accumulate false) in
 * those blocks, for the batches otc_cr_narrow_if takes; also a W beyond L1 that needs no
 * panels (the 11x11 substrate's 121 x 121 at batch 5: 2.1x slower in the plan's blocks of 4
 * samples than the interpreter). */
void otc_cr_mm_narrow(otc_cr *c, const otc_cr_mm *d, int64_t n_cols);
/* out[e][b] = sum_q x[q][b] * w(e, q) for all n_rows rows (d->accumulate false), for a
 * product the plan runs in panels (otc_plan_tiling.panels): the blocks run over panels of q,
 * every block of rows in turn, resuming its sums from out between panels. Blocks of `rows`
 * rows, or OTC_PLAN_TALL times as many where the compiler has 32 vector registers (AVX-512:
 * there a block of 16 samples is one vector a row). The 33x33 HyperNEAT layer (1089 x 1089)
 * at batch 75: docs/performance.md. */
void otc_cr_mm_panels(otc_cr *c, const otc_cr_mm *d, int64_t n_rows, int rows);
/* One sample (B == 1): out[e * S] = sum_q x[q * S] * w[q * w_stride + e] for e < n_cols
 * (d->w_by_out and d->accumulate false), the sums of OTC_CR_ONE_COLS columns in registers at a
 * time, then the rest as one narrower block. 64 columns: enough independent sums to hide the
 * add's latency (eight 256-bit vectors, four 512-bit ones) while SSE's and NEON's registers
 * still hold them; 32 left gcc -march=native's LSTM 32->128 step 20% slower than the row by
 * row loop it replaced, 128 slowed clang -O2 and SSE (measured). */
#define OTC_CR_ONE_COLS 64
/* A W of more than OTC_CR_ONE_CACHED floats (32 KiB, an L1 cache) runs OTC_CR_ONE_CHUNK
 * floats of its rows at a time (16 KiB): walking 64-column strips down all of an LSTM's
 * 128 x 512 W (256 KiB, from L2) ran 1.5x slower than the row-by-row loop it replaced; in
 * chunks, level with it under gcc -O3 -march=native and 1.2-1.4x faster under gcc -O2 and
 * clang. Chunking the MLP's 128 x 64 (in L1) cost clang 1.6x (measured). */
#define OTC_CR_ONE_CACHED 8192
#define OTC_CR_ONE_CHUNK  4096
/* But at least 8 rows a chunk: a wider W (the 33x33 substrate's 1089 columns: 3 rows) passed
 * over all of out between so few rows that the loads and stores of the carried sums cost
 * more than the chunk saved (1089 x 1089 at batch 1: 97 -> 86 us, gcc -O3 -march=native,
 * medians of 5 interleaved; 16 rows no better). An LSTM's 512 columns keep their 8. */
#define OTC_CR_ONE_MIN_ROWS 8
void otc_cr_mm_one_sample(otc_cr *c, const otc_cr_mm *d, int64_t n_cols);
/* gw[k][n] += sum_b a[k][b] * g[n][b] (k < k, n < n; a and g batched rows, gw row-major) in
 * blocks of rows x cols accumulators over transposed chunks of g. */
typedef struct {
    const char *a, *g, *gw;
    int64_t k, n;
    int rows, cols;
} otc_cr_gw;
void otc_cr_mm_weight_grad(otc_cr *c, const otc_cr_gw *d);
/* src in capitals into dst (len bytes, terminated): a file's macro prefix ("NAME_...", from
 * a name otc_emit_c_valid_name took). */
void otc_cr_upper(char *dst, const char *src, size_t len);
/* The NAME_BLOCKED macro the product helpers use and NAME_KERNEL the loop programs' (when
 * there are any), for the file head. */
void otc_cr_mm_prelude(otc_cr *c, otc_text *out);

/* Function bodies, written into c->sb at one indentation level (the caller writes the
 * signature, the locals ws/w/g/B/S/in/out/target, sets c->locals, and the argument checks).
 * render_c_parts.c: the forward steps, a long schedule as calls to its parts. */
void otc_cr_forward_steps(otc_cr *c);
/* render_c_forward.c: forward steps [from, to) in place. */
void otc_cr_forward_range(otc_cr *c, int from, int to);
/* render_c_loops.c: node id's loop program (otc/loops.h), forward or its gradient rule. */
void otc_cr_loop_program(otc_cr *c, otc_id id, bool backward);
/* Floats a plan's workspace needs past its last value: a loop program's last, partial chunk of
 * samples reads up to a chunk past a row (render_c_loops.c); 0 without loop programs. */
int64_t otc_cr_loop_slack(const otc_plan *plan);
/* render_c_conv1.c: a conv2d's forward for one sample (S == 1) with its sums in locals, when
 * its geometry allows (stride and dilation 1); the buffers' pointers already declared. */
bool otc_cr_conv_one_sample_fits(const otc_cr *c, otc_id id);
void otc_cr_conv_one_sample(otc_cr *c, otc_id id);
/* The backward steps: with grads the zeroing, seed and gradient rules, with update the
 * optimiser's (render_c_parts.c: in parts when long; render_c_backward.c: [from, to) in
 * place). */
void otc_cr_backward_steps(otc_cr *c, bool grads, bool update);
void otc_cr_backward_range(otc_cr *c, int from, int to, bool grads, bool update);
/* The out-of-line loops the backward calls (sums over the batch, a source's gradient), those
 * marked used. */
void otc_cr_backward_helpers(otc_cr *c, otc_text *out);
/* Samples per block of an input's or output's transposing copy (a 64-byte cache line of
 * the workspace's row), for rows at least this wide. */
#define OTC_CR_IO_SAMPLES 16
/* render_c_forward.c: one Input or output between the caller's rows and its value: `row`
 * floats per sample, the value at `offset` (a C expression) of each. */
void otc_cr_io_copy(otc_cr *c, const otc_plan_io *io, bool load, int64_t row, const char *offset);

/* render_c_tape.c: training through time over a tape (otc_emit_c_options.bptt). The rows of
 * a window of `steps` steps hold the state before it, then each step's inputs in turn. */
int64_t otc_cr_tape_row(const otc_plan *p, const otc_unrolled *u, int steps, otc_io_stream s);
/* A step input's stride between steps in the row (0 for the state). */
int64_t otc_cr_tape_stride(const otc_plan *p, const otc_unrolled *u, otc_id input);
/* The training workspace: a slot per step, the gradients, the carried state gradient. */
otc_extent otc_cr_tape_train_work(const otc_plan *t, const otc_unrolled *u, int steps);
/* Where the gradient buffer starts in it (after the slots). */
otc_extent otc_cr_tape_grads_at(const otc_plan *t, int steps);
/* The forward workspace: two slots, step t's and step t - 1's. */
otc_extent otc_cr_tape_fwd_work(const otc_plan *f);
/* A load or store step of c->plan inside the time loop. */
void otc_cr_tape_io(otc_cr *c, const otc_plan_step *s);
/* The zeroing step inside the backward loop: the step's own gradients, then the state's
 * gradient carried from step t + 1 added to what the step left in the state. */
void otc_cr_tape_seed(otc_cr *c);
/* NAME_forward's body: the window's steps over two slots (locals base, w, in, out, B, S). */
void otc_cr_tape_forward(otc_cr *c);
/* NAME_train_step's body: forward into the tape, backward through it, the update (locals
 * base, w, g, in, target, lr, loss, p, B, S). */
void otc_cr_tape_train(otc_cr *c);

/* A C float literal that reads back to exactly f ("0.5f", "1.0f", "-3.25e-08f"); f finite,
 * buf >= 32 bytes. */
const char *otc_cr_float_literal(char *buf, size_t len, float f);

/* Text from the model file as it may stand in a comment of the generated C (and of the LLVM
 * header): through otc_text_c_comment, the only way a node's or file's name gets there. */
#define OTC_CR_LABEL_LEN (OTC_TEXT_COMMENT_MAX + 16)
const char *otc_cr_comment(char *buf, size_t len, const char *text);
/* A node as such comments name it: 'name' (through otc_cr_comment) or #id. */
const char *otc_cr_label(const otc_graph *g, otc_id id, char *buf, size_t len);

/* Helpers shared by the two. */
const char *otc_cr_float(otc_cr *c, char *buf, float f); /* literal, fails on non-finite */
const char *otc_cr_offset(char *buf, otc_extent e);      /* "12 + 3 * S" */
/* "float *restrict v7 = ws + 12;" (once per kernel/step) for the storage owner of id. */
void otc_cr_pointer(otc_cr *c, otc_id id, bool writable);
void otc_cr_grad_pointer(otc_cr *c, otc_id id);
/* Element `elem` (an expression) of sample b of stored value id: "v7[(elem) * S + b]". */
void otc_cr_at(otc_cr *c, char *buf, size_t len, otc_id id, const char *elem);
void otc_cr_grad_at(otc_cr *c, char *buf, size_t len, otc_id id, const char *elem);
/* Loops over a value's elements and samples: opens "for e / for b" braces, returns how many
 * to close with otc_cr_close. */
int otc_cr_loops(otc_cr *c, int64_t n, bool batched, bool sample_outer);
void otc_cr_close(otc_cr *c, int n);
/* Before a loop whose iterations read and write disjoint elements: tells gcc (and with `clang`
 * clang) what they cannot prove (the buffers are block-scope restrict pointers, which gcc does
 * not trust), so the loop vectorises without a runtime overlap check or its limit on how many
 * pairs. clang's pragma warns (-Wpass-failed) when the loop then does not vectorise (a call
 * in it): only for loops that always do. */
void otc_cr_assume_independent(otc_cr *c, bool clang);
/* Per-sample dims of a node's shape around axis: outer blocks, the axis, inner elements. */
void otc_cr_split(const otc_node *nd, const otc_shape *s, int axis, int64_t *outer, int64_t *mid,
                  int64_t *inner);
/* The activation of an activation op or Neuron. */
const otc_act_info *otc_cr_act(const otc_node *nd);
/* "NAME_f_tanh(x, a)" / "NAME_df_tanh(x, y, a)": calls to the file's activation helpers
 * (static functions pasting the activation table's C expressions), marked as used. */
void otc_cr_act_call(otc_cr *c, char *buf, size_t len, const otc_node *nd, const char *x);
void otc_cr_dact_call(otc_cr *c, char *buf, size_t len, const otc_node *nd, const char *x,
                      const char *y);
/* With c->outline, an activation that calls math (otc_expr_calls_math) is spelled
 * "NAME_fo_tanh(x, a)": one out-of-line copy (as the JIT's), where a scalar loop of a hundred
 * neurons would otherwise inline a hundred copies of the polynomials and outgrow the
 * instruction cache. The helpers marked used, as static functions (marking the math they
 * call). */
void otc_cr_act_helpers(otc_cr *c, otc_text *out);

/* render_c_math.c: "NAME_INLINE", the helpers' storage class (static inline, forced where
 * the compiler allows); otc_cr_math_helpers defines it. */
const char *otc_cr_inline(otc_cr *c);
/* "NAME_OUTLINE": static, never inlined where the compiler allows. */
const char *otc_cr_outline(otc_cr *c);
/* "NAME_SQRT", the square root the expressions call, marked used; otc_cr_sqrt_macro defines
 * it. */
const char *otc_cr_sqrt(otc_cr *c);
void otc_cr_sqrt_macro(otc_cr *c, otc_text *out);
/* "NAME_exp" (in buf; "NAME_exp_s" with c->outline), marked used; the kernels call it
 * instead of libm. */
const char *otc_cr_math(otc_cr *c, otc_cr_mathfn f, char *buf, size_t len);
/* render_c_expr.c: expression trees (otc/expr.h) as C. The leaves' spellings (NULL where the
 * expression may not read them). */
typedef struct {
    const char *x, *x1, *y, *a;
    const char *const *arg; /* the spellings of OTC_EX_ARG 0 .. n_arg - 1 */
    int n_arg;
} otc_cr_leaves;
/* Append e as one C expression (the math it calls marked used). */
void otc_cr_expr(otc_cr *c, otc_text *out, const otc_expr *e, const otc_cr_leaves *leaves);
/* Append a function body returning e: a local per subtree used twice, then the return. */
void otc_cr_expr_body(otc_cr *c, otc_text *out, const otc_expr *e, const otc_cr_leaves *leaves,
                      const char *indent);
/* Lines "prefix[i]<trees[i]>;" (NULL trees skipped) after a local t0, t1 ... for each subtree
 * the trees share (within one or between them), so each is computed once. The trees must not
 * read what an earlier line writes. */
void otc_cr_expr_lines(otc_cr *c, const otc_expr *const *trees, const char *const *prefix, int n,
                       const otc_cr_leaves *leaves);
/* render_c_weights.c: weight-only storage (otc_emit_c_options.weights, F16 or INT8). The
 * arrays holding p's parameters (at file scope, c->sb), then NAME_decode_weights(float *w),
 * which decodes them in the plan's parameter order (with the bodies: it may call the math
 * basics). */
void otc_cr_stored_weights(otc_cr *c, const otc_plan *p, otc_weight_storage mode);
/* Are p's parameters all finite? If not, c->st names the first element that is not. */
bool otc_cr_finite_weights(otc_cr *c, const otc_plan *p);
void otc_cr_decode_weights(otc_cr *c, const otc_plan *p, otc_weight_storage mode);
/* The math helpers marked used (and those they call), as static inline functions. */
void otc_cr_math_helpers(otc_cr *c, otc_text *out);

/* DIR/NAME.h and DIR/NAME.c from h and s (freed here), both or neither (render_c.c): the
 * f32 and the int8 renderers' files. */
otc_status otc_cr_write_files(const char *dir, const char *name, char *h, char *s);

#endif
