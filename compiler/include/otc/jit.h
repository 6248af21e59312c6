/* The LLVM backend: a graph's plan compiled in-process (ORC JIT) into native forward,
 * backward and fused training-step code behind the executor interface, plus LLVM IR,
 * assembly and object files for ahead-of-time use. */
#ifndef OTC_JIT_H
#define OTC_JIT_H

#include <stdbool.h>
#include <stddef.h>

#include "otc/executor.h"
#include "otc/plan.h"

/* How hard the code generator works. Optimised: LLVM's O3 pipeline with loop and SLP
 * vectorisation and its most aggressive code generator, for code that runs long (training,
 * inference, benchmarks). Fast: a short IR pipeline and the fast instruction selector and
 * register allocator, several times quicker to compile for code a little slower, for code
 * that runs briefly (the genomes of an evolution run). */
typedef enum { OTC_JIT_TIER_OPTIMIZED, OTC_JIT_TIER_FAST } otc_jit_tier;

typedef struct {
    bool inference;      /* forward only: backward and train_step fail */
    bool no_cache;       /* compile even when an identical topology is cached */
    int lanes;           /* floats per vector; 0: the host's (8 with AVX2, 16 with AVX-512) */
    otc_fuse_level fuse; /* plan fusion (default: loops) */
    bool no_blas;        /* never call OpenBLAS for dense products */
    bool defer_forward;  /* compile the forward plan on its first use, not at creation (for
                            executors that mostly train: train_step compiles its own plan) */
    otc_jit_tier tier;   /* default: optimised */
    bool exact;          /* the interpreter's arithmetic bit for bit for neuron graphs (NEAT
                            phenotypes): each weighted sum and its bias rounded as separate
                            multiplies and adds, exp/tanh/sin... the C library's functions
                            the interpreter calls (not the vectorisable trees), multiply-adds
                            in expressions always fused (llvm.fma, as its fmaf). Slower per
                            element; for batch-1 steps lanes = 1 suits it */
} otc_jit_options;

/* Defaults: training allowed, cache on, host vector width, default fusion, BLAS on. */
otc_jit_options otc_jit_defaults(void);

/* The JIT executor. A recurrent graph (Delay nodes) runs as a step function (reset_state,
 * set_state) and trains through time with seq_begin / seq_backward / optimizer_step: one step
 * (otc/unroll.h, the model over one step) is compiled once per loss and the recorded window
 * runs as loops over a tape of its activations, forwards then backwards with the state's
 * gradient carried, then one compiled update; the moments are the executor's, shared by
 * every window length; seq_state_grad answers the gradient step 0's backward carried to the
 * window's starting state. The forward code is compiled here, except for a graph whose
 * kernels have small-batch forms (dense layers, convolutions): its code for single samples, for
 * a few samples and for larger batches is compiled on the first forward of each kind of batch;
 * the training code on the first backward or train_step for a given loss (a compile error
 * surfaces there). Compiled backends keep their own copy of the weights: read from the graph here,
 * written back by otc_exec_sync_params; the optimiser state (moments, step count) lives in the
 * executor and restarts when a different otc_optimizer is passed. value() serves outputs, inputs,
 * parameters and the loss; intermediate values the plan keeps in registers are an
 * OTC_ERR_UNSUPPORTED error (mark them as outputs). NULL with otc_last_error on failure. */
otc_executor *otc_jit_executor_new(otc_graph *g, const otc_jit_options *options);

/* Executors for n graphs compiled together: the plans of all of them in one LLVM module, so
 * the optimiser and code generator run once (a generation of genomes, a batch of test
 * graphs). losses (NULL, or one per graph, -1 for none) asks for the training step to be
 * compiled now; that executor's forward then runs the training plan's forward, and a plain
 * forward plan is compiled only if a forward without the loss's targets needs it. Identical
 * structures are compiled once. On failure no executor is returned. */
otc_status otc_jit_executors_new(otc_graph *const *graphs, const otc_id *losses, int n,
                                 const otc_jit_options *options, otc_executor **out);

/* Is ex a JIT executor? */
bool otc_is_jit_executor(const otc_executor *ex);

typedef struct {
    double compile_ms;     /* total time spent compiling for this executor (0 on cache hits) */
    int compiles;          /* modules compiled for it */
    int cache_hits;        /* modules reused from the structure cache */
    int lanes;             /* vector width used */
    double compile_cpu_ms; /* compile_ms in the compiling thread's CPU time (steadier) */
    long scalar_forwards;  /* forwards run by the one-sample scalar form: batch 1 of an inference
                              plan of elementwise kernels alone (a NEAT genome's neurons), one
                              lane, the C library's exp/tanh, rounded as the interpreter does */
} otc_jit_stats;

otc_status otc_jit_executor_stats(const otc_executor *ex, otc_jit_stats *out);

/* The process-wide structure cache: entries (compiled modules kept) and hits so far; and
 * below it the on-disk object cache (OTC_CACHE_DIR, docs/performance.md): modules (graphs and
 * math library functions) compiled to object code in this process, and loaded instead. */
typedef struct {
    int entries;
    int in_use;
    long hits, misses;
    long objects_compiled, objects_loaded;
    double library_ms;     /* spent providing the math library (compiled or loaded) so far */
    double library_cpu_ms; /* the same in thread CPU time */
    double setup_ms;       /* spent creating the JIT itself (once per process, inside the
                              first compile) */
    double setup_cpu_ms;   /* the same in thread CPU time */
    double load_ms;        /* spent loading the LLVM backend (libLLVM's relocations and
                              constructors; once per process, before any compile) */
    double load_cpu_ms;    /* the same in thread CPU time */
} otc_jit_cache_stats;
otc_jit_cache_stats otc_jit_cache_info(void);
/* Drop every cached module no executor uses (their JIT memory is returned). */
void otc_jit_cache_clear(void);
/* Cached modules kept while unused (least recently used dropped first); default 64. */
void otc_jit_cache_set_capacity(int entries);

/* ---- when to compile: the executor `otc evolve --jit` hands NEAT ---- */

/* A genome is evaluated by an executor that interprets and compiles only when the work makes
 * compiling pay. Costs are counted in node-samples (graph nodes x samples), not timed, so the
 * decisions and therefore the evolution are the same run to run:
 *  - inference (fitness evaluation): interpreted until the interpreted work reaches the
 *    estimated compile cost (ski rental: at most twice the better choice's cost), then
 *    compiled; inputs set so far are replayed;
 *  - training (hybrid evolve/train): decided at creation from train_samples, the expected
 *    steps x batch of one genome's training.
 * A recurrent genome switched mid-sequence takes the interpreter's Delay state with it
 * (set_state). Graphs the compiler cannot lower stay interpreted. */
typedef struct {
    double interp_ns;           /* interpreter: ns per node-sample of forward (batch 1) */
    double jit_ns;              /* JIT: the same */
    double compile_ms;          /* compile cost: fixed part ... */
    double compile_ms_per_node; /* ... plus this per node */
    double train_factor;        /* a training step costs this many forwards, both backends;
                                   compiling training code costs this many forward compiles */
    double train_samples;       /* expected training samples per training executor (0: unknown,
                                   then training executors are interpreted) */
    double flat_steps;          /* see otc_jit_policy_compiled */
    int flat_min_nodes;         /* smaller graphs stay on the flat program (see there) */
} otc_jit_policy;

/* The break-even measured on the build machine (see the JIT note). */
otc_jit_policy otc_jit_policy_defaults(void);
/* Set before evolution starts (not while executors are being made). */
void otc_jit_policy_set(const otc_jit_policy *p);
/* An otc_neat_executor_fn: the policy's executor for g. */
otc_executor *otc_jit_policy_executor(otc_graph *g, const otc_exec_options *options);

/* Inside evolution genomes run on NEAT's flat program (otc/neat_flat.h), which a compiled
 * genome must match bit for bit: otc_jit_policy_compiled, an otc_neat_executor_fn for
 * otc_neat_task.make_compiled, compiles g now (fast tier, exact, one lane: a pole task steps
 * one sample at a time), counted in the stats; flat_steps is the rows a genome runs on the flat
 * program before compiling pays (otc_neat_task.compile_after). A graph of fewer than
 * flat_min_nodes nodes runs no faster compiled: NULL (counted as too_small), and the flat
 * program carries on. */
otc_executor *otc_jit_policy_compiled(otc_graph *g, const otc_exec_options *options);

typedef struct {
    long executors;    /* made by the policy (otc_jit_policy_compiled's included) */
    long compiled;     /* of them, switched to (or started with) compiled code */
    long failed;       /* could not be compiled: stayed interpreted (or flat) */
    double compile_ms; /* wall time otc_jit_policy_compiled spent compiling */
    long too_small;    /* otc_jit_policy_compiled's graphs left to the flat program */
} otc_jit_policy_stats;
otc_jit_policy_stats otc_jit_policy_info(void);

/* Host CPU as LLVM sees it, e.g. "znver3 (256-bit vectors, FMA)". */
const char *otc_jit_host_cpu(void);

/* ---- ahead of time ---- */

typedef enum { OTC_EMIT_LLVM_IR, OTC_EMIT_ASM, OTC_EMIT_OBJ } otc_emit_kind;

typedef struct {
    const char *name;   /* C identifier prefixing the exported symbols ("model") */
    const char *triple; /* target triple, NULL for the host (e.g. "aarch64-linux-gnu") */
    const char *cpu;    /* NULL: the host's CPU for the host triple, "generic" otherwise */
    bool train;         /* also NAME_backward/NAME_train_step (needs loss) */
    otc_id loss;
    int lanes;     /* 0: from the target (host features; 4 for other triples) */
    bool optimize; /* run the O3 pipeline (for --emit-llvm the IR is shown after it) */
} otc_emit_llvm_options;

otc_emit_llvm_options otc_emit_llvm_defaults(void);

/* The graph's code as LLVM IR text, assembly or an object file, in a malloc'd buffer (the
 * caller frees it; text is NUL-terminated). Objects and assembly embed the weights as
 * constant data and export NAME_forward (see otc_emit_llvm_header). */
otc_status otc_emit_llvm(const otc_graph *g, const otc_emit_llvm_options *options,
                         otc_emit_kind kind, char **data, size_t *len);

/* The C header declaring what an object from otc_emit_llvm exports. malloc'd text. */
otc_status otc_emit_llvm_header(const otc_graph *g, const otc_emit_llvm_options *options,
                                char **text);

/* Both written atomically: PATH (the object/asm/IR) and, for objects, the header beside it
 * (PATH with its extension replaced by .h) unless header_path names another place. */
otc_status otc_emit_llvm_file(const otc_graph *g, const otc_emit_llvm_options *options,
                              otc_emit_kind kind, const char *path, const char *header_path);

/* Parse LLVM IR text, verify it, optimise it and JIT-compile its functions (then drop them):
 * every failure (a parse error, a module that fails verification, a code generation error)
 * comes back as an otc error with LLVM's message. For tests and for checking hand-written
 * IR. */
otc_status otc_jit_check_ir(const char *ir_text);

#endif
