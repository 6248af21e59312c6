/* The plan: a frozen graph lowered once (evaluation order, fused kernels, one flat buffer,
 * backward schedule, optimiser steps) for the C and LLVM renderers to spell. */
#ifndef OTC_PLAN_H
#define OTC_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "otc/graph.h"
#include "otc/optim.h"

/* Inputs of a Neuron whose median the compilers take: the JIT spells it as a sorting network
 * of about k^2 / 2 compare-exchanges (the emitted C as an insertion sort), so the limit keeps
 * the code size bounded. The interpreter takes any count. */
#define OTC_PLAN_MEDIAN_MAX 64

/*
 * Layout every renderer follows (node-major, batch contiguous):
 *
 * - A batched value of per-sample size n (shape [B, d1, ...], n = d1 * ...) stores element
 *   e of sample b at  base[e * S + b],  where S is the batch stride (the batch itself, or
 *   the fixed maximum batch). Loops run over e outside and b inside, so the inner loop reads
 *   and writes contiguous floats and vectorises across samples.
 * - A non-batched value of n elements stores element e at base[e] (row-major).
 * - Reshape and Flatten keep the per-sample element order, so they are aliases: no code, the
 *   storage of the value they reshape.
 * - The caller's rows are sample-major: sample b's inputs are in[b * in_width + ...], each
 *   Input's per-sample elements (row-major) at its io offset; outputs likewise.
 *
 * Sizes and offsets are counted in floats as an otc_extent, base + per_batch * S, so one
 * plan serves any batch.
 */
typedef struct {
    int64_t base;
    int64_t per_batch;
} otc_extent;

static inline int64_t otc_extent_at(otc_extent e, int64_t stride) {
    return e.base + e.per_batch * stride;
}

typedef enum {
    OTC_STORE_NONE,     /* not computed by this plan */
    OTC_STORE_REGISTER, /* lives only inside its kernel's loop body (a local per element) */
    OTC_STORE_WORK,     /* in the activation buffer at .offset */
    OTC_STORE_PARAM,    /* a Parameter, in the weight array at .param_offset */
    OTC_STORE_ALIAS     /* Reshape/Flatten: the storage of .alias_of */
} otc_storage;

/* What the plan decided for one graph node (plan->values is indexed by node id). */
typedef struct {
    otc_storage storage;
    otc_extent offset;    /* WORK: floats into the activation buffer */
    int64_t param_offset; /* PARAM: floats into the weight array */
    otc_id alias_of;      /* ALIAS: the node that owns the storage (never an alias itself) */
    int64_t size;         /* elements per sample (batched) or in total */
    bool batched;
    int kernel;     /* the kernel computing it; -1 for sources and aliases */
    int first_step; /* WORK owners: lifetime in forward steps, inclusive */
    int last_step;
    /* Training plans. */
    bool kept;       /* read by a backward step: stored and never shared */
    bool needs_grad; /* has a slot in the gradient buffer */
    otc_extent grad; /* floats into the gradient buffer (an alias: its owner's) */
    bool has_pre;    /* a Neuron whose activation derivative reads the pre-activation */
    otc_extent pre;  /* where that pre-activation is kept (activation buffer) */
    bool direct;     /* an Input of options.direct_inputs: the caller writes it at .offset */
} otc_plan_value;

typedef enum {
    /* One loop nest over (e, b) of the loop space; members are elementwise ops, row
     * broadcasts, Neurons (loop space n = 1) and, in inference plans, slices read at an
     * offset (otc_plan_slice_member), evaluated per element in member order.
     * A member reads another member of the same kernel from its local (same e, b). */
    OTC_KERNEL_MAP,
    /* First member a MatMul [B,K] x [K,N] (the right side not batched), the rest an
     * elementwise epilogue over (e = output column, b), run after each column's sum. */
    OTC_KERNEL_MATMUL,
    /* A single op with a loop structure of its own: reductions, softmaxes, losses, concat,
     * slice (but those a map kernel reads), select, and MatMul of two unbatched values. */
    OTC_KERNEL_OP
} otc_kernel_kind;

/* How a batched dense product [B,K] x [K,N] (a MATMUL kernel) is looped, in every renderer:
 * blocks of `cols` output columns by `vectors` vectors of samples whose sums stay in
 * registers while the shared dimension K runs innermost (the forward; the input gradient
 * likewise, in blocks of `grad_rows` of its K rows, N innermost); the weight gradient in
 * blocks of `grad_rows` rows by `grad_cols` columns of W, the sum over the samples innermost. A
 * vector is the renderer's: the JIT's SIMD width, OTC_CR_LANES floats in emitted C. Tails (fewer
 * columns, rows or samples than a block) run as narrower blocks. Whether a product calls a
 * BLAS instead is the renderer's choice (the JIT's above a size; never in emitted C). */
typedef struct {
    int cols, vectors;
    int grad_rows, grad_cols;
    /* W larger than OTC_PLAN_PANEL_W floats is read from memory, not cache: the forward's
     * blocks run over panels of K, every block of columns in turn, resuming their sums
     * between panels (each sum still adds k in order), and the epilogue follows the last
     * panel. A panel holds OTC_PLAN_PANEL_FLOATS floats of A (at least OTC_PLAN_PANEL_MIN of
     * K), which stay in L1 while every block reads them. */
    bool panels;
} otc_plan_tiling;

#define OTC_PLAN_PANEL_W      (128 * 1024)
#define OTC_PLAN_PANEL_FLOATS 8192
#define OTC_PLAN_PANEL_MIN    32
/* Where the target has 32 vector registers (AVX-512), a renderer's large blocks are
 * OTC_PLAN_TALL times the plan's columns: a block of 16 samples is one vector, and 4 columns
 * are too few chains to hide the multiply-add's latency (with 16 registers 12 spill). */
#define OTC_PLAN_TALL 3

typedef struct {
    otc_kernel_kind kind;
    int first, count; /* members: plan->members[first .. first + count) in evaluation order */
    int64_t n;        /* loop space: elements per sample (or in total when not batched) */
    bool batched;
    int step;               /* its forward step */
    otc_plan_tiling tiling; /* MATMUL kernels */
} otc_plan_kernel;

typedef enum {
    OTC_STEP_LOAD,       /* copy an Input from the caller's rows (plan->io[io]) */
    OTC_STEP_KERNEL,     /* run forward kernel .kernel */
    OTC_STEP_STORE,      /* copy an output into the caller's rows (plan->io[io]) */
    OTC_STEP_STATE,      /* copy Delay .node's source value into its state slot (the last
                            forward steps, after the stores: every read of the old state is
                            done; a Delay reading a Delay is copied before that one changes) */
    OTC_STEP_ZERO_GRADS, /* the whole gradient buffer to zero; with options.zero_lazily its
                            fixed part only, [0, grads.base) */
    OTC_STEP_SEED,       /* gradient of the loss (.node) = 1 */
    OTC_STEP_BACKWARD,   /* .node's gradient rule: reads its gradient, accumulates (+=) into
                            the gradient of each input whose value needs_grad */
    OTC_STEP_UPDATE,     /* optimiser update of weights [.offset, .offset + .count) */
    OTC_STEP_ZERO_GRAD   /* options.zero_lazily: batched value .node's gradient (its whole
                            extent, padding samples too) to zero, right before the first
                            backward step (or fused run) that touches it */
} otc_step_kind;

typedef struct {
    otc_step_kind kind;
    otc_id node;
    int kernel;
    int io;
    int64_t offset, count;
    /* BACKWARD: backward fusion. n > 0 on the first of n consecutive steps whose rules are
     * elementwise over one kernel's loop space (its map members, a matmul's epilogue): the
     * renderers run them as one loop nest, each member's rule per (e, b) in step order, the
     * sums over the batch (bias and weight gradients) finished per element after it; -1 on
     * the other steps of such a run; 0 on a step with a loop structure of its own. */
    int fused;
    /* BACKWARD in a fused run, options.first_grad_stores: bit i set when this rule is the
     * first to write input i's gradient and writes all of it (an elementwise rule over the
     * same loop space), so it stores (=) where it would add, and nothing zeroes it first. */
    unsigned stores;
} otc_plan_step;

typedef enum { OTC_IO_IN, OTC_IO_TARGET, OTC_IO_OUT } otc_io_stream;

/* One Input or output in the caller's rows: `width` floats at `offset` of each sample's row
 * of the stream (in: forward inputs; target: inputs only the loss reads; out: outputs). */
typedef struct {
    otc_id node;
    otc_io_stream stream;
    int64_t offset, width;
} otc_plan_io;

typedef enum {
    OTC_FUSE_DEFAULT, /* OTC_FUSE_LOOPS */
    OTC_FUSE_NONE,    /* one kernel per node */
    OTC_FUSE_CHAINS,  /* a run of nodes each feeding the next, which is its only reader */
    OTC_FUSE_LOOPS    /* chains, plus neighbouring nodes over the same loop space (a whole
                         evolved graph of [B,1] neurons becomes one loop over the batch) */
} otc_fuse_level;

typedef struct {
    bool train;  /* plan a training step: forward to the loss, backward, update */
    otc_id loss; /* the scalar loss node, or -1. A training plan computes it; an inference
                    plan given one lays out the loss's parameters too, so the forward and
                    the training plan of one model share a weight layout */
    otc_fuse_level fuse;
    /* Keep nodes whose scalar code calls libm (expf, tanhf, ...) in kernels apart from the
     * rest: a call keeps a whole loop scalar, the rest vectorises across the batch. What
     * large batches want; a single sample wants everything in one loop. */
    bool split_libm;
    bool no_sharing;        /* every value its own space (to measure what sharing saves) */
    bool keep_loss;         /* inference: also compute `loss` and keep its value (a recurrent
                               step that reports its loss while it is trained through time) */
    otc_optim_config optim; /* train */
    /* train: the renderer has the gradients of Neurons that aggregate otherwise than by the
     * sum (the C renderer does; a plan for a renderer without them refuses such neurons). */
    bool agg_gradients;
    /* train: Inputs whose gradient the backward computes too (a slot each in the gradient
     * buffer): the state a recurrent step reads, whose gradient truncated BPTT carries to the
     * step before (render_c_tape.c). Read while building (the plan keeps NULL). */
    const otc_id *grad_inputs;
    int n_grad_inputs;
    /* train: zero each batched value's gradient just before the backward first touches it
       (OTC_STEP_ZERO_GRAD) instead of the whole buffer up front: the zeroing then finds the
       slot its first writer is about to accumulate into, in cache, rather than sweeping a
       buffer of tens of MB (a recurrent window unrolled over 50 steps) out to memory. A
       renderer seeding gradients between ZERO_GRADS and the backward (the C tape) leaves
       it off. */
    bool zero_lazily;
    /* train, with zero_lazily: a gradient's first writer stores it whole where it can
       (otc_plan_step.stores) instead of zeroing it and adding: half the memory traffic of
       those slots. For a renderer that honours .stores (the JIT's fused backward). */
    bool first_grad_stores;
    /* train, with zero_lazily: batched gradients share space where their lifetimes in the
       backward schedule (first touched .. last read) do not overlap, as activations do, so
       the backward of a window unrolled over many steps reuses a few cached slots instead
       of streaming a buffer of tens of MB through memory; the order then starts its walk
       at the loss, so a sum of per-step losses is computed step by step and each step's
       gradients live about a step. Only parameter gradients stay readable after the step
       (the JIT's grad() reads no others). */
    bool share_grads;
    /* Inputs the caller writes straight into the activation buffer (node-major at the
       stride, at the value's offset, padding samples included) before the forward, instead
       of into the rows: no load step, no place in the rows, storage of their own for the
       whole step (a tape's step executor, llvm_seq.c: the state it reads is copied from the
       step before's buffer as it lies, the carried gradients are written between the
       forward and the backward). Read while building (the plan keeps NULL; values[].direct
       marks them). */
    const otc_id *direct_inputs;
    int n_direct_inputs;
} otc_plan_options;

typedef struct {
    const otc_graph *graph; /* not owned; must outlive the plan and not change */
    otc_plan_options options;

    int n_values;           /* = graph size */
    otc_plan_value *values; /* by node id */

    int n_members; /* computed nodes in evaluation order, each kernel's members contiguous */
    otc_id *members;
    int n_kernels;
    otc_plan_kernel *kernels;

    int n_steps; /* forward steps first (n_forward_steps of them), then backward/update */
    int n_forward_steps;
    otc_plan_step *steps;

    int n_io;
    otc_plan_io *io;
    int64_t in_width, target_width, out_width; /* floats per sample row of each stream */

    int n_params; /* Parameters in weight-array order (every parameter the outputs or the
                     loss reach, in id order, whatever the mode, so two plans of one graph
                     share one weight layout) */
    otc_id *params;
    int64_t param_floats;
    int64_t trainable_floats;

    otc_extent work;          /* activation buffer, floats */
    otc_extent work_unshared; /* what it would take with no sharing */
    otc_extent grads;         /* gradient buffer, floats (training); param grads first, laid
                                 out like the weight array */
    int n_registers;          /* values that never touch memory */
    /* Recurrent plans (Delay nodes; forward only). A Delay's value is its state slot: a
     * batched value in the activation buffer inside floats [state_offset, state_offset +
     * state_per_sample * S), a range no other value shares. Kernels read the slots, the
     * OTC_STEP_STATE steps write them, so the buffer carries the state from one forward to
     * the next; zeroing the range is a reset. state_per_sample 0: a feed-forward plan. */
    int64_t state_offset;
    int64_t state_per_sample;
} otc_plan;

/* Lower g (outputs, or with options->train the loss) into a plan; nodes a Delay reads are
 * included too. Errors: no outputs (OTC_ERR_ARG), a cycle without a delay (OTC_ERR_CYCLE,
 * naming it), a training plan of a graph with delays, an op or shape the
 * compiler cannot lower (OTC_ERR_UNSUPPORTED, naming the op and the node). options NULL:
 * inference with default fusion. */
otc_status otc_plan_build(const otc_graph *g, const otc_plan_options *options, otc_plan **out);
void otc_plan_free(otc_plan *plan);

/* Byte sizes at a batch (the batch stride S), for reports. */
typedef struct {
    int64_t weights;
    int64_t activations;          /* the activation buffer with lifetime sharing */
    int64_t activations_unshared; /* without */
    int64_t gradients;            /* training: the gradient buffer */
    int64_t optimizer_state;      /* training: momentum / Adam moments */
    int64_t workspace;            /* what the caller provides: activations (+ gradients) */
} otc_plan_bytes;
otc_plan_bytes otc_plan_sizes(const otc_plan *plan, int64_t batch);

/* The node whose storage a read of `id` goes to (itself unless it is an alias). */
otc_id otc_plan_owner(const otc_plan *plan, otc_id id);
/* Is node id a Slice that runs as a member of a map kernel? An inference plan fuses a slice
 * along the first axis after the batch into its readers' kernel: element e of a sample is
 * its input's element e + *from, read where a member needs it, instead of copied by a kernel
 * of its own (an LSTM step's four gates then run as one kernel). */
bool otc_plan_slice_member(const otc_plan *plan, otc_id id, int64_t *from);
/* Is this input edge a data edge? (RowBroadcast's second input only lends its shape.) */
bool otc_plan_reads_input(const otc_graph *g, otc_id node, int slot);
/* Long schedules in parts of bounded size: the end of the part of steps that starts at
 * `from` (< to), at least one step and never inside a fused backward run. A compiler's
 * passes grow faster than linearly in a function's size, so a renderer that spells each part
 * as a function of its own compiles a deep graph in time linear in its steps; the forward
 * pass of a graph of ordinary size is one part (the end is `to`). Parts talk through the
 * plan's buffers, so a boundary changes no arithmetic. */
int otc_plan_part_end(const otc_plan *plan, int from, int to);
/* Optimiser floats per weight: 0 (plain SGD), 1 (momentum) or 2 (Adam). */
int otc_plan_optim_slots(const otc_optim_config *c);

/* The plan as Graphviz DOT: kernels as clusters, each value with its storage, offset and
 * size. Returns malloc'd text (the caller frees it), NULL with otc_last_error on failure. */
char *otc_plan_to_dot(const otc_plan *plan);

/* One line per step, for --verbose and debugging; malloc'd text. */
char *otc_plan_describe(const otc_plan *plan);

#endif
