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
/* Reverse pass from a scalar node; parameter gradients accumulate until zeroed. */
otc_status otc_exec_backward(otc_executor *ex, otc_id loss);
/* A parameter's accumulated gradient (its value's shape). */
otc_status otc_exec_grad(otc_executor *ex, otc_id param, const float **data);
void otc_exec_zero_grad(otc_executor *ex);
/* zero_grad, forward, backward from loss, one optimiser step over the trainable parameters. */
otc_status otc_exec_train_step(otc_executor *ex, otc_id loss, otc_optimizer *opt,
                               float *loss_value);
/* Delay nodes back to zeros (start of an episode). */
void otc_exec_reset_state(otc_executor *ex);
/* Write parameters held by the backend back into the graph (compiled backends keep their
 * own copy; a no-op for the interpreter). */
otc_status otc_exec_sync_params(otc_executor *ex);

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
} otc_executor_vtable;

struct otc_executor {
    const otc_executor_vtable *vt;
    otc_graph *graph;
};

#endif
