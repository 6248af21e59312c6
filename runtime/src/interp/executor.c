/* The public executor API: argument checks, then dispatch through the backend's vtable, so
 * the interpreter and the compiled backends share one front door. */
#include "graph_params.h"
#include "otc/executor.h"

#define CHECK_EX(ex, what)                                                                         \
    do {                                                                                           \
        if (!(ex) || !(ex)->vt) return otc_fail(OTC_ERR_ARG, what ": no executor");                \
    } while (0)

void otc_exec_free(otc_executor *ex) {
    if (!ex || !ex->vt) return;
    /* trained weights outlive the executor: the graph gets them back */
    if (otc_graph_params_holder(ex->graph) == ex) {
        ex->vt->sync_params(ex);
        otc_graph_set_params_holder(ex->graph, NULL);
    }
    ex->vt->destroy(ex);
}

const char *otc_exec_backend(const otc_executor *ex) {
    return ex && ex->vt ? ex->vt->name : "none";
}

otc_graph *otc_exec_graph(const otc_executor *ex) {
    return ex ? ex->graph : NULL;
}

otc_status otc_exec_set_input(otc_executor *ex, otc_id input, const float *data, int batch) {
    CHECK_EX(ex, "set_input");
    return ex->vt->set_input(ex, input, data, batch);
}

otc_status otc_exec_forward(otc_executor *ex) {
    CHECK_EX(ex, "forward");
    return ex->vt->forward(ex);
}

otc_status otc_exec_value(otc_executor *ex, otc_id node, const float **data, otc_shape *shape) {
    CHECK_EX(ex, "value");
    return ex->vt->value(ex, node, data, shape);
}

otc_status otc_exec_backward(otc_executor *ex, otc_id loss) {
    CHECK_EX(ex, "backward");
    return ex->vt->backward(ex, loss);
}

otc_status otc_exec_grad(otc_executor *ex, otc_id param, const float **data) {
    CHECK_EX(ex, "grad");
    return ex->vt->grad(ex, param, data);
}

void otc_exec_zero_grad(otc_executor *ex) {
    if (ex && ex->vt) ex->vt->zero_grad(ex);
}

otc_status otc_exec_train_step(otc_executor *ex, otc_id loss, otc_optimizer *opt,
                               float *loss_value) {
    CHECK_EX(ex, "train_step");
    otc_status st = ex->vt->train_step(ex, loss, opt, loss_value);
    if (st == OTC_OK) otc_graph_set_params_holder(ex->graph, ex);
    return st;
}

void otc_exec_reset_state(otc_executor *ex) {
    if (ex && ex->vt) ex->vt->reset_state(ex);
}

otc_status otc_exec_sync_params(otc_executor *ex) {
    CHECK_EX(ex, "sync_params");
    return ex->vt->sync_params(ex);
}

/* The sequence entry points are optional: a backend without them says so. */
#define CHECK_SEQ(ex, fn, what)                                                                    \
    do {                                                                                           \
        CHECK_EX(ex, what);                                                                        \
        if (!(ex)->vt->fn)                                                                         \
            return otc_fail(OTC_ERR_UNSUPPORTED,                                                   \
                            what ": the %s backend does not run sequences (backpropagation "       \
                                 "through time is interpreter-only)",                              \
                            (ex)->vt->name);                                                       \
    } while (0)

otc_status otc_exec_seq_begin(otc_executor *ex, int max_steps) {
    CHECK_SEQ(ex, seq_begin, "seq_begin");
    return ex->vt->seq_begin(ex, max_steps);
}

otc_status otc_exec_seq_backward(otc_executor *ex, otc_id loss, const float *weight) {
    CHECK_SEQ(ex, seq_backward, "seq_backward");
    return ex->vt->seq_backward(ex, loss, weight);
}

otc_status otc_exec_seq_state_grad(otc_executor *ex, otc_id delay, const float **data) {
    CHECK_SEQ(ex, seq_state_grad, "seq_state_grad");
    return ex->vt->seq_state_grad(ex, delay, data);
}

otc_status otc_exec_set_state(otc_executor *ex, otc_id delay, const float *data, int batch) {
    CHECK_SEQ(ex, set_state, "set_state");
    return ex->vt->set_state(ex, delay, data, batch);
}

otc_status otc_exec_optimizer_step(otc_executor *ex, otc_optimizer *opt) {
    CHECK_SEQ(ex, optimizer_step, "optimizer_step");
    otc_status st = ex->vt->optimizer_step(ex, opt);
    if (st == OTC_OK) otc_graph_set_params_holder(ex->graph, ex);
    return st;
}
