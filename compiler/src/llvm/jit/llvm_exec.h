/* Private to the JIT executor (llvm_exec.c: the executor's operations; llvm_exec_make.c: making
 * executors and their compiled plans). */
#ifndef OTC_LLVM_EXEC_H
#define OTC_LLVM_EXEC_H

#include "llvm_cache.h"

typedef struct {
    otc_plan *plan;
    otc_jit_module *mod;
    /* A forward plan with small-batch kernel forms (otc_llvm_plan_batch_forms: `forms`, 0
     * when none) is compiled per form on first use, into form_mod[form] (`mod` unused): a
     * caller that only runs batches of 64, or single samples, compiles that form alone. */
    int forms;
    otc_jit_module *form_mod[OTC_LV_FORMS_SCALAR + 1];
    float *work;
    size_t work_cap;
    float *weights; /* this plan's layout; may be the other plan's array (same layout) */
    bool own_weights;
    long wver; /* version of the weights it holds */
    float *in_rows, *target_rows, *out_rows;
    size_t in_cap, target_cap, out_cap;
    /* Worked out once per plan for the per-call path: */
    int *io_input;       /* per io entry: its index in jit_exec.inputs (-1 for outputs) */
    int single[2];       /* IN / TARGET: the io entry that fills the whole row, -1 if none */
    int n_stream[2];     /* io entries per stream */
    int last_kernel;     /* forward step of the last kernel: values alive after it are intact */
    otc_id out_owner;    /* the single output filling the output row, or -1 */
    otc_id out_row_node; /* that output's own node when value() hands its row over as is (a
                            batched value kept to the end, not a Delay), else -1: value()'s
                            per-call shortcut */
    bool loss_rerun;     /* a loss value() may ask for is not computed here: each step keeps
                            the state it read, for loss_step to rerun it from */
    int64_t state_batch; /* recurrent plans: the batch the state in `work` is laid out for;
                            0 after a reset (the next forward zeros the state) */
} jit_plan;

typedef struct {
    otc_id id;
    float *data;
    size_t cap;
    int batch;         /* -1 until set */
    size_t per_sample; /* floats per sample; 0 when the input is not batched (refused) */
} jit_input;

struct jit_seq; /* training through time (llvm_seq.c) */

typedef struct {
    otc_executor base;
    otc_jit_options o;
    int lanes;
    int n; /* graph size at creation */
    jit_plan fwd, train;
    bool has_fwd, has_train;
    /* Recurrent graphs: the step plan that also computes a loss (fwd + keep_loss), made when
     * the loss is first read after a step; forward runs it while its inputs (the targets)
     * are set. `live` is the plan whose slots hold the current state (NULL: zeros), `pre`
     * the state the last step read (in the layout of the plan that ran it). */
    jit_plan fwdl;
    bool has_fwdl;
    jit_plan *live;
    float *pre;
    size_t pre_cap;
    long wver; /* latest weights version, held by `wsrc` */
    jit_plan *wsrc;
    float *grads; /* training plan layout */
    size_t grads_cap;
    /* Gradients of parameters the current training plan leaves out (another loss reached
     * them, or none did), per parameter at side_off[id]: backward accumulates across losses
     * and grad() answers zeros for a parameter no loss reached, as the interpreter does. */
    float *side;
    int64_t *side_off;
    size_t side_n;
    float *state; /* optimiser moments, 2 x param_floats */
    const otc_optimizer *opt;
    long t;
    /* Trainable parameters no plan reads (dead neurons): the interpreter still steps them
     * (weight decay moves them with a zero gradient), so they get the same update here,
     * from the same optimiser code, on the graph's own values. */
    otc_optimizer *orphan_opt;
    int n_orphans;
    float **orphan_p;
    const float **orphan_g;
    size_t *orphan_n;
    float *zeros;
    int n_inputs;
    jit_input *inputs;
    jit_plan *last; /* the plan whose forward ran last, NULL when values are stale */
    int64_t batch, stride;
    float **scratch; /* per node: a sample-major copy for value() */
    size_t *scratch_cap;
    otc_jit_stats stats;
    struct jit_seq *seq; /* recurrent graphs: BPTT state, NULL until seq_begin */
    /* Inputs whose gradients the training plan computes too and keeps (otc_plan_options
     * grad_inputs): a tape's step executor (llvm_seq.c) reads the gradient of the state its
     * step read. Set before the training plan is made. */
    const otc_id *grad_inputs;
    int n_grad_inputs;
    /* Inputs the caller writes into the training plan's activation buffer itself
     * (otc_plan_options direct_inputs): the tape's state and carried gradients. Set before
     * the training plan is made. */
    const otc_id *direct_inputs;
    int n_direct_inputs;
} jit_exec;

extern const otc_executor_vtable otc_lvx_vtable;

/* "name" or "#id" for messages; buf >= 64 bytes. */
const char *otc_lvx_label(const jit_exec *j, otc_id id, char *buf);
void otc_lvx_destroy(otc_executor *ex);
void otc_lvx_plan_free(jit_plan *p);
/* Grows *buf to need floats (*cap: what it holds), cache-line aligned, its contents kept and
 * the new part zeroed; false when out of memory (the buffer as it was). */
bool otc_lvx_grow(float **buf, size_t *cap, size_t need);
/* Copy the newest weights into p (layouts may differ; by parameter id). */
void otc_lvx_refresh_weights(jit_exec *j, jit_plan *p);
/* Index of an Input in j->inputs, or -1. */
int otc_lvx_input_index(const jit_exec *j, otc_id id);
/* Plan po for j's graph, compile it (or take it from the cache, or leave a plan compiled by
 * batch form to its first run) and give it weights. */
otc_status otc_lvx_plan_make(jit_exec *j, jit_plan *p, const otc_plan_options *po, bool train);
/* The module that runs plan p at the current batch (j->batch, j->stride): its batch form's,
 * compiled now on the form's first use. */
otc_status otc_lvx_plan_module(jit_exec *j, jit_plan *p, otc_jit_module **out);
otc_plan_options otc_lvx_fwd_options(const jit_exec *j);
otc_plan_options otc_lvx_train_options(const jit_exec *j, otc_id loss, const otc_optim_config *c);
/* The gradient buffer's parameter part for a new training plan. */
otc_status otc_lvx_train_ready(jit_exec *j);

/* Ensure the forward plan exists (compiled on first use). */
otc_status otc_lvx_fwd_ready(jit_exec *j);
/* Overwrite parameters (by id) in every compiled plan's weights (or, where no plan holds
 * one, the graph's tensor); they become the newest weights. */
void otc_lvx_params_set(jit_exec *j, int n, const otc_id *ids, const float *const *src);
/* The training plan for loss, compiled on first use (a new loss replaces the old one). */
otc_status otc_lvx_train_ensure(jit_exec *j, otc_id loss);
/* The training plan's arguments at `batch` (weights refreshed, work and gradients sized,
 * stride; no rows: the inputs set are not read); forward_at and backward_at run its forward and
 * backward with them (a tape points .work at a step's slot, .in and .target at its rows). */
otc_status otc_lvx_train_args(jit_exec *j, int64_t batch, otc_llvm_args *a);
otc_status otc_lvx_forward_at(jit_exec *j, const otc_llvm_args *a);
otc_status otc_lvx_backward_at(jit_exec *j, const otc_llvm_args *a);
/* The training plan's optimiser update alone over the gradients in j->grads (their parameter
 * part), moments in `state` (2 x param_floats), scalars `hyper` (OTC_LH_*). */
otc_status otc_lvx_update(jit_exec *j, const float *hyper, float *state);
/* Write a Delay's state: rows of `batch` samples (a new batch zeros the other Delays). */
otc_status otc_lvx_set_state(otc_executor *ex, otc_id delay, const float *data, int batch);

/* llvm_seq.c: backpropagation through time over a tape of one compiled step. */
otc_status otc_lvx_seq_begin(otc_executor *ex, int max_steps);
otc_status otc_lvx_seq_backward(otc_executor *ex, otc_id loss, const float *weight);
otc_status otc_lvx_seq_state_grad(otc_executor *ex, otc_id delay, const float **data);
otc_status otc_lvx_optimizer_step(otc_executor *ex, otc_optimizer *opt);
/* Hooks from the executor's operations: a forward's inputs and pre-step state (p the plan
 * about to run, its work laid out at j->stride); a reset or set_state; zero_grad; grad
 * (*answered with *data set when the sequence gradients answer); destroy. */
otc_status otc_lvx_seq_record(jit_exec *j, jit_plan *p);
/* The step executors' compiles (those kept and those dropped) added to *out. */
void otc_lvx_seq_stats(const jit_exec *j, otc_jit_stats *out);
void otc_lvx_seq_cut(jit_exec *j);
void otc_lvx_seq_zero(jit_exec *j);
otc_status otc_lvx_seq_grad(jit_exec *j, otc_id id, const float **data, bool *answered);
void otc_lvx_seq_free(jit_exec *j);
/* Deferred step forwards (the tape computes them again): defer says whether the forward of
 * p just recorded is left unrun (while recording); catch_up runs the deferred steps, unless
 * the recording goes on on `keep`, before anything reads their values or state or changes
 * the weights; tail_value answers a value of the window's last step from the step executor
 * once the tape has run (*answered); stale forgets that (a new input). */
bool otc_lvx_seq_defer(jit_exec *j, jit_plan *p);
otc_status otc_lvx_seq_catch_up(jit_exec *j, const jit_plan *keep);
otc_status otc_lvx_seq_tail_value(jit_exec *j, otc_id id, const float **data, otc_shape *shape,
                                  bool *answered);
void otc_lvx_seq_stale(jit_exec *j);
/* One step forward of plan p from its state, not recorded (llvm_exec.c). */
otc_status otc_lvx_run_step(jit_exec *j, jit_plan *p);

#endif
