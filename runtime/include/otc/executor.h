/* The executor: runs a graph forward, backward and through a training step, whether it is
 * interpreted or compiled. Training loops, tests and benchmarks are written against it. */
#ifndef OTC_EXECUTOR_H
#define OTC_EXECUTOR_H

#include "graph.h"
#include "optim.h"

typedef struct {
    bool inference; /* build no gradient state; backward and train_step then fail */
} otc_exec_options;

typedef struct otc_executor otc_executor;

/* The interpreter. The graph must outlive the executor and must not change shape while it
 * is in use; it trains the graph's parameter tensors in place. NULL on error. */
otc_executor *otc_interpreter_new(otc_graph *g, const otc_exec_options *options);

void otc_exec_free(otc_executor *ex);
const char *otc_exec_backend(const otc_executor *ex); /* "interpreter", "jit", ... */
otc_graph *otc_exec_graph(const otc_executor *ex);

/* Copy one Input's data: batch rows of its per-sample size (or its full size when the input
 * is not batched, batch then being ignored). All batched inputs must agree on the batch. */
otc_status otc_exec_set_input(otc_executor *ex, otc_id input, const float *data, int batch);
otc_status otc_exec_forward(otc_executor *ex);
/* A node's value after forward; shape (optional) gets the resolved shape. */
otc_status otc_exec_value(otc_executor *ex, otc_id node, const float **data, otc_shape *shape);
/* Reverse pass from a scalar node; parameter gradients accumulate until zeroed, whichever
 * loss each backward runs from. */
otc_status otc_exec_backward(otc_executor *ex, otc_id loss);
/* A parameter's accumulated gradient (its value's shape). */
otc_status otc_exec_grad(otc_executor *ex, otc_id param, const float **data);
void otc_exec_zero_grad(otc_executor *ex);
/* zero_grad, forward, backward from loss, one optimiser step over the trainable parameters. */
otc_status otc_exec_train_step(otc_executor *ex, otc_id loss, otc_optimizer *opt,
                               float *loss_value);
/* Delay nodes back to zeros (start of an episode or sequence). */
void otc_exec_reset_state(otc_executor *ex);
/* Write parameters held by the backend back into the graph (compiled backends keep their
 * own copy; a no-op for the interpreter). */
otc_status otc_exec_sync_params(otc_executor *ex);

/* ---- sequences: backpropagation through time ----
 *
 * A graph with Delay nodes is a step function: each forward reads the inputs and every
 * Delay's value (its source's value at the previous forward; zeros after reset_state, or
 * what set_state wrote) and stores the new state. State is per sample (per batch row), so a
 * batch holds sequences of one length (bucket them). Training through time:
 *
 *   otc_exec_reset_state(ex);             new sequence (leave out to carry state: TBPTT)
 *   otc_exec_seq_begin(ex, max_steps);    each forward from now on records its step
 *   for each step: set_input(s), forward
 *   otc_exec_seq_backward(ex, loss, w);   reverse over the steps, through Delay edges
 *   otc_exec_optimizer_step(ex, opt);
 *
 * Truncated BPTT over k steps is that loop per chunk of k steps without the reset: the
 * state is carried forward, the gradient stops at the chunk's first step. The interpreter
 * and the LLVM JIT (otc/jit.h, looping one compiled step over the recorded window) implement
 * every call. A backend without one returns OTC_ERR_UNSUPPORTED. */

/* Start recording: the next forwards (at most max_steps, at one batch size) keep their
 * step's values for seq_backward. Memory: max_steps times one step's values, checked
 * against otc_memory_limit() at the first step. A forward past max_steps fails. */
otc_status otc_exec_seq_begin(otc_executor *ex, int max_steps);
/* Reverse pass over the recorded steps of the scalar node `loss`, evaluated at every step:
 * the gradient of sum_t weight[t] * loss_t (weight NULL: every step 1; 0 skips a step).
 * Gradients cross steps through Delay nodes and stop at the first recorded step and at a
 * reset_state/set_state made during the recording. Parameter gradients accumulate; zero
 * them first. Ends the recording; values read afterwards are the last step's. */
otc_status otc_exec_seq_backward(otc_executor *ex, otc_id loss, const float *weight);
/* After seq_backward: the gradient reaching a Delay's value at the first recorded step
 * (the initial state), batch rows of the Delay's per-sample size. Train an initial state
 * with it and set_state. */
otc_status otc_exec_seq_state_grad(otc_executor *ex, otc_id delay, const float **data);
/* Write a Delay's state (what its next forward outputs): batch rows of its per-sample size.
 * A batch other than the last forward's sets every other Delay to zeros. */
otc_status otc_exec_set_state(otc_executor *ex, otc_id delay, const float *data, int batch);
/* One optimiser step over the trainable parameters with the gradients accumulated so far
 * (train_step is zero_grad + forward + backward + this). */
otc_status otc_exec_optimizer_step(otc_executor *ex, otc_optimizer *opt);

/* ---- for backends (compiler/): an executor is this vtable plus its own state ---- */
typedef struct {
    const char *name;
    void (*destroy)(otc_executor *ex);
    otc_status (*set_input)(otc_executor *ex, otc_id input, const float *data, int batch);
    otc_status (*forward)(otc_executor *ex);
    otc_status (*value)(otc_executor *ex, otc_id node, const float **data, otc_shape *shape);
    otc_status (*backward)(otc_executor *ex, otc_id loss);
    otc_status (*grad)(otc_executor *ex, otc_id param, const float **data);
    void (*zero_grad)(otc_executor *ex);
    otc_status (*train_step)(otc_executor *ex, otc_id loss, otc_optimizer *opt, float *loss_value);
    void (*reset_state)(otc_executor *ex);
    otc_status (*sync_params)(otc_executor *ex);
    /* Sequences (BPTT); NULL when the backend does not support them. */
    otc_status (*seq_begin)(otc_executor *ex, int max_steps);
    otc_status (*seq_backward)(otc_executor *ex, otc_id loss, const float *weight);
    otc_status (*seq_state_grad)(otc_executor *ex, otc_id delay, const float **data);
    otc_status (*set_state)(otc_executor *ex, otc_id delay, const float *data, int batch);
    otc_status (*optimizer_step)(otc_executor *ex, otc_optimizer *opt);
} otc_executor_vtable;

struct otc_executor {
    const otc_executor_vtable *vt;
    otc_graph *graph;
};

#endif
