/* Private to the LLVM renderer (llvm_render*.c): the state while one plan is spelled as LLVM
 * IR, and the helpers its files share. Batched values are processed W samples at a time as
 * <W x float> vectors (the batch stride S is a multiple of W), so every batch loop is
 * vectorised across samples by construction and costs no vectoriser analysis. */
#ifndef OTC_LLVM_RENDER_H
#define OTC_LLVM_RENDER_H

#include "llvm_internal.h"
#include "otc/jit.h"
#include "otc/plan.h"

/* Slots of the argument block every generated function takes (all 8 bytes wide); the
 * executor fills an otc_llvm_args with the same order. */
enum {
    OTC_LA_IN,      /* caller rows, in_width floats per sample */
    OTC_LA_TARGET,  /* target rows */
    OTC_LA_OUT,     /* output rows */
    OTC_LA_WEIGHTS, /* flat weight array (the plan's layout) */
    OTC_LA_WORK,    /* activation buffer */
    OTC_LA_GRADS,   /* gradient buffer */
    OTC_LA_STATE,   /* optimiser state: 2 x param_floats */
    OTC_LA_HYPER,   /* optimiser scalars (OTC_LH_*) */
    OTC_LA_BATCH,   /* i64 samples B */
    OTC_LA_STRIDE,  /* i64 stride S: a multiple of the lane count, >= B */
    OTC_LA_LOSS,    /* float *: the loss after train_step */
    OTC_LA_COUNT
};

typedef struct {
    const float *in, *target;
    float *out, *weights, *work, *grads, *state;
    const float *hyper;
    int64_t batch, stride;
    float *loss;
} otc_llvm_args;

/* The optimiser scalars the update reads: the rule (otc_optim_rule_id) and, from
 * OTC_LH_ARGS on, otc_optim_step_args's values (the executor computes them per step with the
 * interpreter's function, so the compiled update matches it). */
enum { OTC_LH_RULE, OTC_LH_ARGS, OTC_LH_COUNT = OTC_LH_ARGS + OTC_OPTIM_ARG_COUNT };

/* Generated functions return 0, or 1 + the id of the node that failed (a bad class label). */
typedef int32_t (*otc_llvm_fn)(const otc_llvm_args *args);

/* Which of a kernel's batch forms a module holds. All of them (the default) branch at run
 * time; a JIT forward plan whose kernels have small-batch forms is compiled as one module per
 * form, each on first use, so a caller that runs one kind of batch compiles only its code
 * (otc_llvm_plan_batch_forms, otc_llvm_form_of). */
typedef enum {
    OTC_LV_FORMS_ALL,
    OTC_LV_FORMS_MANY,  /* batches otc_llvm_few_samples does not take: the batched kernels */
    OTC_LV_FORMS_FEW,   /* 2 .. few samples: column mode, convolutions batched */
    OTC_LV_FORMS_ONE,   /* one sample: column mode, convolutions by pixel row */
    OTC_LV_FORMS_UNIT,  /* one sample stored contiguously (stride 1): column mode only */
    OTC_LV_FORMS_SCALAR /* one sample of a plan of map kernels alone (OTC_LV_HAS_SCALAR), stored
                           contiguously and rendered at one lane (the executor's module) */
} otc_llvm_batch_forms;

typedef struct {
    int lanes;          /* W: floats per vector */
    bool train;         /* render backward and train_step too */
    bool aot;           /* weights are a constant global (baked) */
    const char *prefix; /* of every exported symbol */
    bool blas;          /* large dense products call cblas_sgemm */
    bool fast;          /* the fast tier (OTC_JIT_TIER_FAST): quick pipeline and code generator */
    bool fast_isel;     /* the module goes to the fast code generator: weight loads are marked
                           !invariant.load for llvm_fastisel.c (elsewhere MachineLICM would hoist
                           and spill them) */
    bool exact;         /* otc_jit_options.exact: neurons and math as the interpreter rounds */
    int chunk_group;    /* > 1: map kernels run this many chunks per iteration (more code, more
                           independent work per iteration) */
    otc_llvm_batch_forms forms; /* the batch forms rendered (JIT forward plans) */
} otc_llvm_render_options;

/* Does a batch of `batch` samples at stride `stride` run the kernels' small-batch forms (column
 * mode)? The rendered code branches on the same test. */
static inline bool otc_llvm_few_samples(int lanes, int64_t batch, int64_t stride) {
    return batch < (lanes / 2 > 1 ? lanes / 2 : 2) && stride == lanes;
}

/* The small-batch forms plan's kernels have, rendered with o: OTC_LV_HAS_COLMODE (map and
 * matmul kernels), OTC_LV_HAS_CONV1 (a convolution's one-sample path), OTC_LV_HAS_UNIT (an
 * inference plan whose every batched kernel runs in column mode: one sample can be stored
 * contiguously), OTC_LV_HAS_SCALAR (an inference plan of map kernels none of which has a
 * column mode, such as a NEAT genome's neurons: one sample runs as scalar code, not one value
 * per vector with the rest padding); 0: one module. */
enum { OTC_LV_HAS_COLMODE = 1, OTC_LV_HAS_CONV1 = 2, OTC_LV_HAS_UNIT = 4, OTC_LV_HAS_SCALAR = 8 };
int otc_llvm_plan_batch_forms(const otc_plan *plan, const otc_llvm_render_options *o);

/* The batch stride of a plan with forms `has` at `batch` samples: the batch rounded up to whole
 * vectors, or 1 for one sample of a plan with OTC_LV_HAS_UNIT or OTC_LV_HAS_SCALAR (its
 * elements contiguous, where a vector's width apart each sat in a cache line of its own). */
static inline int64_t otc_llvm_stride_of(int has, int lanes, int64_t batch) {
    if (batch == 1 && (has & (OTC_LV_HAS_UNIT | OTC_LV_HAS_SCALAR))) return 1;
    return (batch + lanes - 1) & ~(int64_t)(lanes - 1); /* lanes: a power of two */
}

/* The form, of those `has` (otc_llvm_plan_batch_forms) makes distinct, that runs a batch. */
otc_llvm_batch_forms otc_llvm_form_of(int has, int lanes, int64_t batch, int64_t stride);

typedef struct {
    otc_llvm_ir ir;
    const otc_plan *plan;
    const otc_graph *g;
    otc_llvm_render_options o;
    LLVMTypeRef vec;  /* <W x float> */
    LLVMTypeRef fn_t; /* i32 (ptr) */
    /* The function being built. */
    LLVMValueRef fn;
    LLVMBasicBlockRef entry; /* allocas go here */
    LLVMValueRef a[OTC_LA_COUNT];
    LLVMValueRef nchunks;   /* S / W */
    LLVMValueRef *local;    /* per node: its value inside the current loop body, or NULL */
    int kernel;             /* the kernel being rendered */
    LLVMValueRef mask;      /* lanes of the current chunk that are real samples, or NULL */
    LLVMValueRef chunk;     /* the current chunk index (i64), NULL outside chunk loops */
    LLVMValueRef chunk_off; /* chunk * W */
    /* Addresses computed once in the entry block (per function). */
    LLVMBuilderRef eb;
    LLVMValueRef *vb_cache, *gb_cache; /* per node: value / gradient base */
    struct otc_lv_row {
        LLVMValueRef base, row;
        int64_t e;
    } * rows; /* (base, e) -> base + e * S */
    size_t row_cap;
    /* The entries set since the function began, so a new function clears only those (a deep
     * graph's many functions would otherwise each clear tables sized by the whole plan). */
    otc_id *used_values; /* vb_cache / gb_cache */
    size_t n_used_values;
    size_t *used_rows;
    size_t n_used_rows;
    otc_status st; /* the first error while rendering */
    /* Column mode (small batches through a matmul kernel): lanes run along output columns
     * e .. e + col_valid - 1 of one sample col_b, instead of along samples. */
    bool colmode;
    LLVMValueRef col_b;
    int col_valid;
} otc_llvm_r;

/* A new function of the module taking the argument block (and `extra` i1 flags), internal and
 * noinline unless exported, its slots loaded into r->a; the builder at its entry. */
LLVMValueRef otc_lv_begin_function(otc_llvm_r *r, const char *name, bool exported, int extra);

/* Loops: begin positions the builder in the body with i counting 0 .. count-1 (nothing runs
 * when count <= 0); end closes it and continues after the loop. */
typedef struct {
    LLVMValueRef i;
    LLVMBasicBlockRef pre, body, exit;
    LLVMValueRef count;
    bool auto_vectorize; /* set before begin: leave this loop to LLVM's loop vectoriser and
                            unroller (otherwise both are switched off for it) */
} otc_llvm_loop;
void otc_lv_loop_begin(otc_llvm_r *r, otc_llvm_loop *l, LLVMValueRef count);
void otc_lv_loop_end(otc_llvm_r *r, otc_llvm_loop *l);

LLVMValueRef otc_lv_i64(otc_llvm_r *r, int64_t v);
/* few_fn(r, k) where a batch takes the small-batch forms (otc_llvm_few_samples), else
 * many_fn(r, k): branched on at run time, or the one form a single-form module holds. */
void otc_lv_by_batch(otc_llvm_r *r, int k, void (*few_fn)(otc_llvm_r *, int),
                     void (*many_fn)(otc_llvm_r *, int));
/* A float stack slot in the entry block (promoted to a register by the optimiser). */
LLVMValueRef otc_lv_slot(otc_llvm_r *r, LLVMTypeRef t);
LLVMValueRef otc_lv_splat(otc_llvm_r *r, LLVMValueRef scalar);
/* Floats into a buffer: base + per_batch * S. */
LLVMValueRef otc_lv_extent(otc_llvm_r *r, otc_extent e);
LLVMValueRef otc_lv_gep(otc_llvm_r *r, LLVMValueRef base, LLVMValueRef index);
/* Start of id's storage (its owner's): activation buffer or weights. */
LLVMValueRef otc_lv_value_base(otc_llvm_r *r, otc_id id);
LLVMValueRef otc_lv_grad_base(otc_llvm_r *r, otc_id id);
/* Forgets the addresses cached for the previous function (begin a new one after). */
void otc_lv_forget_addresses(otc_llvm_r *r);
/* work + extent, computed once in the entry block. */
LLVMValueRef otc_lv_work_at(otc_llvm_r *r, otc_extent off);
/* Element `e` (i64) of a stored batched value at the current chunk, or of an unbatched one. */
LLVMValueRef otc_lv_at(otc_llvm_r *r, LLVMValueRef base, LLVMValueRef e, bool batched);
LLVMValueRef otc_lv_load(otc_llvm_r *r, LLVMTypeRef t, LLVMValueRef ptr);
void otc_lv_store(otc_llvm_r *r, LLVMValueRef v, LLVMValueRef ptr);
/* A load from the weights (marked invariant: never for the optimiser update). */
LLVMValueRef otc_lv_load_weight(otc_llvm_r *r, LLVMTypeRef t, LLVMValueRef ptr);
/* *ptr += v (vector or scalar). */
void otc_lv_accumulate(otc_llvm_r *r, LLVMValueRef ptr, LLVMValueRef v);
/* The sum of a vector's lanes. */
LLVMValueRef otc_lv_hsum(otc_llvm_r *r, LLVMValueRef v);
/* Is r->vec a vector type (more than one lane; one lane is spelled as plain floats)? */
bool otc_lv_vector(const otc_llvm_r *r);
/* The lane mask of the current chunk (computed once per chunk body; an i1 with one lane). */
LLVMValueRef otc_lv_lane_mask(otc_llvm_r *r);
/* v where the lane is a real sample, 0 in the padding. */
LLVMValueRef otc_lv_masked(otc_llvm_r *r, LLVMValueRef v);
/* Makes chunk (an i64 index) the current one: its offset and lane mask. */
void otc_lv_set_chunk(otc_llvm_r *r, LLVMValueRef chunk);
/* Opens the chunk loop of a batched kernel body (c = chunk index). */
void otc_lv_chunks_begin(otc_llvm_r *r, otc_llvm_loop *l);
void otc_lv_chunks_end(otc_llvm_r *r, otc_llvm_loop *l);
void otc_lv_fail(otc_llvm_r *r, otc_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Calls a plain C function by name (declared on first use). */
LLVMValueRef otc_lv_call(otc_llvm_r *r, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
                         int n, LLVMValueRef *args);

/* The products of a batched MatMul [S,k] x [k,n]: the forward's, the input gradient's (both
 * in the plan's register blocks when generated) and the weight gradient's (a plain sum over
 * the samples per weight). */
typedef enum {
    OTC_LV_PRODUCT_FORWARD,
    OTC_LV_PRODUCT_INPUT_GRAD,
    OTC_LV_PRODUCT_WEIGHT_GRAD
} otc_lv_product;
/* OpenBLAS for large products: the smallest stride S from which that product is worth a
 * cblas_sgemm call, or -1 when it never is (or the module may not call BLAS). */
int64_t otc_lv_blas_min_stride(const otc_llvm_r *r, int64_t k, int64_t n, otc_lv_product what);
/* A run-time branch on the batch stride: blas(r, arg) at or above s_min (>= 0), gen(r, arg)
 * below it, or gen alone when s_min < 0. */
void otc_lv_by_stride(otc_llvm_r *r, int64_t s_min, void (*blas)(otc_llvm_r *, int),
                      void (*gen)(otc_llvm_r *, int), int arg);
/* C = A' B' + beta C, row-major (A' = A or A^T per ta; B' likewise). */
void otc_lv_sgemm(otc_llvm_r *r, bool ta, bool tb, LLVMValueRef m, LLVMValueRef n, LLVMValueRef k,
                  LLVMValueRef a, LLVMValueRef lda, LLVMValueRef b, LLVMValueRef ldb, float beta,
                  LLVMValueRef c, LLVMValueRef ldc);

/* llvm_render_map.c: fused map and matmul kernels; what their backward (llvm_render_map_back.c)
 * shares with them. */
/* A stored value of id at element e (memory, never a local; column mode aware); kb: splat
 * unbatched values to vectors. */
LLVMValueRef otc_lv_stored(otc_llvm_r *r, otc_id id, LLVMValueRef e, bool kb);
/* Element i of parameter param (a broadcast vector when kb). */
LLVMValueRef otc_lv_weight(otc_llvm_r *r, otc_id param, int64_t i, bool kb);
/* y with the padding samples' lanes replaced by 1 (divisors). */
LLVMValueRef otc_lv_safe_divisor(otc_llvm_r *r, LLVMValueRef y, bool kb);
/* Where a Neuron's kept pre-activation is, at the current chunk. */
LLVMValueRef otc_lv_pre_ptr(otc_llvm_r *r, otc_id id);
/* The activation (otc_act) of an activation op or Neuron, or -1. */
int otc_lv_act_of(const otc_node *nd);
void otc_lv_map_kernel(otc_llvm_r *r, int k);
void otc_lv_matmul_kernel(otc_llvm_r *r, int k);
/* Has map or matmul kernel k a small-batch form (column mode)? (r needs plan, g and o.) */
bool otc_lv_kernel_has_few_form(const otc_llvm_r *r, int k);
/* Backward steps [from, to) of one map/matmul-epilogue kernel's members, a run the plan fused
 * (otc_plan_step.fused) into one loop nest (each only touches its own element and sample). */
void otc_lv_map_backward(otc_llvm_r *r, int from, int to);

/* llvm_render_loops.c: node id's loop program (otc/loops.h), forward or its gradient rule. */
void otc_lv_loop_program(otc_llvm_r *r, otc_id id, bool backward);
/* llvm_render_conv1.c: conv2d node id's forward for a batch of one sample (the caller
 * branches on it), when it fits (stride and dilation 1, a small input; r needs g and o). */
bool otc_lv_conv_one_sample_fits(const otc_llvm_r *r, otc_id id);
void otc_lv_conv_one_sample(otc_llvm_r *r, otc_id id);
/* llvm_render_matmul_back.c: the gradient products of a batched MatMul (a MATMUL kernel). */
void otc_lv_matmul_backward(otc_llvm_r *r, otc_id id);

/* llvm_render.c: the whole plan as a module. Functions PREFIXforward, and with o->train
 * PREFIXbackward and PREFIXtrain_step. */
otc_status otc_llvm_render(const otc_plan *plan, const otc_llvm_render_options *o,
                           LLVMContextRef ctx, LLVMModuleRef *out);
/* The same added to an existing module (several plans share one compile; the prefixes keep
 * their symbols apart, the activation helpers are shared). */
otc_status otc_llvm_render_into(const otc_plan *plan, const otc_llvm_render_options *o,
                                LLVMModuleRef mod);

#endif
