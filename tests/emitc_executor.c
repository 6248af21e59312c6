/* The executor interface over emitted C, for tests: inputs staged per node and packed into
 * the generated code's sample-major rows, values read back from its output rows, gradients
 * from a training step with lr 0 on a scratch copy of the weights. */
#include "emitc_executor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emitc_support.h"

typedef int (*fwd_fn)(const float *, float *, int, void *);
typedef int (*fwd_train_fn)(const void *, const float *, float *, int, void *);
typedef void (*init_fn)(void *);
typedef int (*step_fn)(void *, const float *, const float *, int, float, float *, void *);
typedef const float *(*grads_fn)(const void *, int);
typedef int (*reset_fn)(void *, int);

struct emitc_program {
    emitc_case c; /* c.g is borrowed: never emitc_case_free */
    emitc_build b;
    fwd_fn fwd;
    fwd_train_fn fwd_train;
    init_fn init;
    step_fn step;
    grads_fn grads;
    reset_fn reset; /* recurrent models */
    int size;       /* graph nodes when built */
};

emitc_program *emitc_program_build(otc_graph *g, otc_id loss, const otc_optim_config *optim) {
    /* -O1: the code is small and runs briefly; the compile is what a test waits for. */
    return emitc_program_build_flags(g, loss, optim, "-std=c99 -O1");
}

emitc_program *emitc_program_build_flags(otc_graph *g, otc_id loss, const otc_optim_config *optim,
                                         const char *cflags) {
    emitc_program *p = calloc(1, sizeof *p);
    if (!p || !g) {
        free(p);
        return NULL;
    }
    p->size = otc_graph_size(g);
    otc_emit_c_options eo = otc_emit_c_defaults();
    eo.train = loss >= 0;
    eo.loss = loss;
    if (optim) {
        eo.optim = *optim;
    } else {
        eo.optim = otc_optim_defaults(OTC_OPTIM_SGD);
        eo.optim.momentum = 0.0f;
        eo.optim.weight_decay = 0.0f;
    }
    bool ok = emitc_case_init(&p->c, g, 0, &eo) && emitc_build_cases(&p->c, 1, cflags, &p->b);
    if (ok && eo.train) {
        p->fwd_train = (fwd_train_fn)emitc_sym(&p->b, p->c.name, "forward");
        p->init = (init_fn)emitc_sym(&p->b, p->c.name, "params_init");
        p->step = (step_fn)emitc_sym(&p->b, p->c.name, "train_step");
        p->grads = (grads_fn)emitc_sym(&p->b, p->c.name, "grads");
        ok = p->fwd_train && p->init && p->step && p->grads;
    } else if (ok) {
        p->fwd = (fwd_fn)emitc_sym(&p->b, p->c.name, "forward");
        if (p->c.fwd->state_per_sample > 0)
            p->reset = (reset_fn)emitc_sym(&p->b, p->c.name, "reset");
        ok = p->fwd != NULL && (p->reset || p->c.fwd->state_per_sample == 0);
    }
    if (!ok) {
        emitc_program_free(p);
        return NULL;
    }
    return p;
}

void emitc_program_free(emitc_program *p) {
    if (!p) return;
    emitc_unload(&p->b);
    otc_plan_free(p->c.fwd);
    otc_plan_free(p->c.train);
    free(p);
}

otc_id emitc_program_loss(const emitc_program *p) {
    return p && p->c.eo.train ? p->c.eo.loss : -1;
}

const otc_graph *emitc_program_graph(const emitc_program *p) {
    return p->c.g;
}

int emitc_program_size(const emitc_program *p) {
    return p->size;
}

typedef struct {
    float *data;
    size_t cap;
    int batch; /* -1: not set */
} staged;

typedef struct {
    otc_executor base;
    emitc_program *p;
    bool inference;
    int n; /* graph size at creation */
    staged *in;
    float **vals; /* outputs de-interleaved, by node */
    void *params, *scratch;
    size_t params_bytes;
    float *ws;
    size_t ws_bytes;
    float *rows[2]; /* in, target */
    float *out, *acc;
    float *zeros; /* grad() of a parameter outside the training plan */
    size_t zeros_n;
    int batch;
    int state_batch; /* recurrent: the batch the workspace's state is for; 0 after a reset */
    bool forwarded, have_grads, have_loss;
    bool step_grads; /* the workspace holds the gradients of the last forward's step */
    float loss;
    const otc_optimizer *opt;
} emitc_exec;

static emitc_exec *as_x(otc_executor *ex) {
    return (emitc_exec *)ex;
}

static const char *label(const emitc_exec *x, otc_id id, char *buf) {
    return otc_graph_node_label(x->base.graph, id, buf, 64);
}

static void destroy(otc_executor *ex) {
    emitc_exec *x = as_x(ex);
    for (int i = 0; i < x->n; i++) {
        free(x->in[i].data);
        free(x->vals[i]);
    }
    free(x->in);
    free(x->vals);
    free(x->params);
    free(x->scratch);
    free(x->ws);
    free(x->rows[0]);
    free(x->rows[1]);
    free(x->out);
    free(x->acc);
    free(x->zeros);
    free(x);
}

static bool grow(float **buf, size_t n) {
    float *q = realloc(*buf, (n + 1) * sizeof(float));
    if (q) *buf = q;
    return q != NULL;
}

static otc_status set_input(otc_executor *ex, otc_id id, const float *data, int batch) {
    emitc_exec *x = as_x(ex);
    char lab[64];
    if (id < 0 || id >= x->n || otc_graph_node(ex->graph, id)->op != OTC_OP_INPUT)
        return otc_fail(OTC_ERR_ARG, "set_input: node #%d is not an input", (int)id);
    if (!data) return otc_fail(OTC_ERR_ARG, "set_input: no data for %s", label(x, id, lab));
    const otc_node *nd = otc_graph_node(ex->graph, id);
    if (!otc_shape_is_batched(nd->shape))
        return otc_fail(OTC_ERR_UNSUPPORTED,
                        "set_input: input %s is not batched (emitted C inputs are per-sample)",
                        label(x, id, lab));
    if (batch < 1)
        return otc_fail(OTC_ERR_ARG, "set_input: batch %d for %s (must be >= 1)", batch,
                        label(x, id, lab));
    size_t n = otc_shape_size(nd->shape) * (size_t)batch;
    if (!grow(&x->in[id].data, n)) return otc_fail(OTC_ERR_NOMEM, "set_input: out of memory");
    memcpy(x->in[id].data, data, n * sizeof(float));
    x->in[id].batch = batch;
    x->forwarded = x->have_loss = x->step_grads = false;
    return OTC_OK;
}

/* The plan's in (and target) rows from the staged inputs, and a workspace for the batch. */
static otc_status pack(emitc_exec *x, const otc_plan *pl, int *batch_out) {
    char lab[64], lab2[64];
    int batch = -1;
    otc_id from = -1;
    for (int i = 0; i < pl->n_io; i++) {
        otc_id id = pl->io[i].node;
        if (pl->io[i].stream == OTC_IO_OUT) continue;
        if (x->in[id].batch < 0)
            return otc_fail(OTC_ERR_STATE, "forward: input %s was not set", label(x, id, lab));
        if (batch >= 0 && x->in[id].batch != batch)
            return otc_fail(OTC_ERR_SHAPE, "forward: input %s has batch %d but input %s has %d",
                            label(x, id, lab), x->in[id].batch, label(x, from, lab2), batch);
        batch = x->in[id].batch;
        from = id;
    }
    if (batch < 0) batch = 1;
    int64_t widths[2] = {pl->in_width, pl->target_width};
    for (int s = 0; s < 2; s++)
        if (!grow(&x->rows[s], (size_t)(widths[s] * batch)))
            return otc_fail(OTC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < pl->n_io; i++) {
        const otc_plan_io *io = &pl->io[i];
        if (io->stream == OTC_IO_OUT) continue;
        int s = io->stream == OTC_IO_TARGET;
        for (int b = 0; b < batch; b++)
            memcpy(x->rows[s] + b * widths[s] + io->offset, x->in[io->node].data + b * io->width,
                   (size_t)io->width * sizeof(float));
    }
    size_t bytes = emitc_workspace_bytes(&x->p->c, &x->p->b, batch);
    if (bytes > x->ws_bytes) {
        free(x->ws);
        x->ws = aligned_alloc(64, (bytes + 63) / 64 * 64);
        x->ws_bytes = x->ws ? bytes : 0;
        x->state_batch = 0; /* a new workspace holds no state */
        if (!x->ws) return otc_fail(OTC_ERR_NOMEM, "out of memory for the workspace");
    }
    *batch_out = batch;
    return OTC_OK;
}

static otc_status code_status(int rc, const char *what) {
    if (rc == 0) return OTC_OK;
    return otc_fail(OTC_ERR_ARG, "emitted %s returned %d (%s)", what, rc,
                    rc == 2 ? "a softmax_ce label is not a class index" : "a bad argument");
}

static otc_status graph_unchanged(const emitc_exec *x, const char *what) {
    if (otc_graph_size(x->base.graph) == x->n) return OTC_OK;
    return otc_fail(OTC_ERR_STATE,
                    "%s: the graph changed (%d nodes, the executor was built for %d)", what,
                    otc_graph_size(x->base.graph), x->n);
}

/* One training step of the code on weights p: the loss, and the gradients in the workspace. */
static otc_status run_step(emitc_exec *x, void *p, float lr) {
    int batch;
    otc_status st = pack(x, x->p->c.train, &batch);
    if (st) return st;
    x->have_loss = x->step_grads = false;
    st = code_status(x->p->step(p, x->rows[0], x->rows[1], batch, lr, &x->loss, x->ws),
                     "train_step");
    if (st) return st;
    x->batch = batch;
    x->have_loss = x->step_grads = true;
    return OTC_OK;
}

/* Every input the training plan reads is set, all at one batch. */
static bool step_ready(const emitc_exec *x) {
    const otc_plan *t = x->p->c.train;
    int batch = -1;
    for (int i = 0; t && i < t->n_io; i++) {
        int b = t->io[i].stream == OTC_IO_OUT ? batch : x->in[t->io[i].node].batch;
        if (b < 0 || (batch >= 0 && b != batch)) return false;
        batch = b;
    }
    return t != NULL;
}

static otc_status forward(otc_executor *ex) {
    emitc_exec *x = as_x(ex);
    const otc_plan *pl = x->p->c.fwd;
    otc_status st = graph_unchanged(x, "forward");
    int batch;
    if (!st) st = pack(x, pl, &batch);
    if (!st && !grow(&x->out, (size_t)(pl->out_width * batch)))
        st = otc_fail(OTC_ERR_NOMEM, "out of memory");
    if (st) return st;
    x->forwarded = x->have_loss = x->step_grads = false;
    /* As the interpreter: a reset or a new batch starts the state from zeros. */
    if (x->p->reset && x->state_batch != batch) {
        st = code_status(x->p->reset(x->ws, batch), "reset");
        if (st) return st;
        x->state_batch = batch;
    }
    int rc = x->p->fwd_train ? x->p->fwd_train(x->params, x->rows[0], x->out, batch, x->ws)
                             : x->p->fwd(x->rows[0], x->out, batch, x->ws);
    st = code_status(rc, "forward");
    if (st) return st;
    x->batch = batch;
    x->forwarded = true;
    /* The forward code computes outputs only; the loss comes from the training step, run
     * with lr 0 on a copy of the weights (its gradients then serve backward). */
    if (!x->inference && step_ready(x)) {
        memcpy(x->scratch, x->params, x->params_bytes);
        st = run_step(x, x->scratch, 0.0f);
    }
    return st;
}

static otc_status value(otc_executor *ex, otc_id id, const float **data, otc_shape *shape) {
    emitc_exec *x = as_x(ex);
    char lab[64];
    if (id < 0 || id >= x->n) return otc_fail(OTC_ERR_ARG, "value: no node #%d", (int)id);
    if (!data) return otc_fail(OTC_ERR_ARG, "value: data is NULL");
    if (!x->forwarded && !x->have_loss)
        return otc_fail(OTC_ERR_STATE, "value: run forward first (after setting the inputs)");
    const otc_node *nd = otc_graph_node(ex->graph, id);
    const otc_plan *pl = x->p->c.fwd;
    if (shape) *shape = otc_shape_resolve(nd->shape, x->batch);
    if (nd->op == OTC_OP_PARAMETER) {
        const otc_plan_value *v = &pl->values[id];
        *data = x->params && v->storage == OTC_STORE_PARAM
                    ? (const float *)x->params + v->param_offset
                    : nd->value->data;
        return OTC_OK;
    }
    if (nd->op == OTC_OP_INPUT) {
        if (x->in[id].batch < 0)
            return otc_fail(OTC_ERR_STATE, "value: input %s was not set", label(x, id, lab));
        *data = x->in[id].data;
        return OTC_OK;
    }
    if (x->have_loss && id == emitc_program_loss(x->p)) {
        *data = &x->loss;
        return OTC_OK;
    }
    for (int i = 0; x->forwarded && i < pl->n_io; i++) {
        const otc_plan_io *io = &pl->io[i];
        if (io->stream != OTC_IO_OUT || io->node != id) continue;
        if (!otc_shape_is_batched(nd->shape)) { /* every row holds a copy */
            *data = x->out + io->offset;
            return OTC_OK;
        }
        if (!grow(&x->vals[id], (size_t)(io->width * x->batch)))
            return otc_fail(OTC_ERR_NOMEM, "out of memory");
        for (int b = 0; b < x->batch; b++)
            memcpy(x->vals[id] + b * io->width, x->out + b * pl->out_width + io->offset,
                   (size_t)io->width * sizeof(float));
        *data = x->vals[id];
        return OTC_OK;
    }
    return otc_fail(OTC_ERR_UNSUPPORTED,
                    "value: node %s is not handed back by the emitted C (it returns outputs, "
                    "inputs, parameters and the loss); mark it as an output to read it",
                    label(x, id, lab));
}

static otc_status can_train(const emitc_exec *x, otc_id loss, const char *what) {
    char lab[64], lab2[64];
    if (x->inference)
        return otc_fail(OTC_ERR_STATE, "%s: this executor was built for inference", what);
    if (loss < 0 || loss >= x->n) return otc_fail(OTC_ERR_ARG, "%s: no node #%d", what, (int)loss);
    otc_id built = emitc_program_loss(x->p);
    if (built < 0)
        return otc_fail(OTC_ERR_UNSUPPORTED, "%s: the emitted C was built without training code",
                        what);
    if (loss != built)
        return otc_fail(OTC_ERR_UNSUPPORTED, "%s: the emitted C trains loss %s, not %s", what,
                        label(x, built, lab), label(x, loss, lab2));
    return graph_unchanged(x, what);
}

static otc_status backward(otc_executor *ex, otc_id loss) {
    emitc_exec *x = as_x(ex);
    otc_status st = can_train(x, loss, "backward");
    if (st) return st;
    if (!x->forwarded)
        return otc_fail(OTC_ERR_STATE, "backward: run forward first (after setting the inputs)");
    if (!x->step_grads) {
        /* lr 0 on a copy: the weights and the optimiser state stay as they were. */
        memcpy(x->scratch, x->params, x->params_bytes);
        st = run_step(x, x->scratch, 0.0f);
        if (st) return st;
    }
    const float *g = x->p->grads(x->ws, x->batch);
    for (int64_t i = 0; i < x->p->c.train->param_floats; i++) x->acc[i] += g[i];
    x->have_grads = true;
    return OTC_OK;
}

static otc_status grad(otc_executor *ex, otc_id id, const float **data) {
    emitc_exec *x = as_x(ex);
    if (x->inference) return otc_fail(OTC_ERR_STATE, "grad: this executor was built for inference");
    if (id < 0 || id >= x->n || otc_graph_node(ex->graph, id)->op != OTC_OP_PARAMETER)
        return otc_fail(OTC_ERR_ARG, "grad: node #%d is not a parameter", (int)id);
    if (!data) return otc_fail(OTC_ERR_ARG, "grad: data is NULL");
    /* The emitted code's gradients are laid out like its weights, zeros where the loss does
     * not reach or the parameter is frozen; a parameter outside the weights, or one before
     * any backward, reads zeros too: the interpreter's and the JIT's answer. */
    const otc_plan *t = x->p->c.train;
    if (x->have_grads && t && t->values[id].storage == OTC_STORE_PARAM) {
        *data = x->acc + t->values[id].param_offset;
        return OTC_OK;
    }
    size_t size = otc_shape_size(otc_graph_node(ex->graph, id)->shape);
    if (size > x->zeros_n) {
        free(x->zeros);
        x->zeros_n = 0;
        if (!(x->zeros = calloc(size, sizeof(float))))
            return otc_fail(OTC_ERR_NOMEM, "grad: out of memory");
        x->zeros_n = size;
    }
    *data = x->zeros;
    return OTC_OK;
}

static void zero_grad(otc_executor *ex) {
    emitc_exec *x = as_x(ex);
    if (x->acc) memset(x->acc, 0, (size_t)x->p->c.fwd->param_floats * sizeof(float));
}

/* The code's optimiser is compiled in; only the learning rate is an argument. */
static bool same_optimiser(const otc_optim_config *a, const otc_optim_config *b) {
    return a->kind == b->kind && a->momentum == b->momentum && a->nesterov == b->nesterov &&
           a->weight_decay == b->weight_decay &&
           (a->kind == OTC_OPTIM_SGD ||
            (a->beta1 == b->beta1 && a->beta2 == b->beta2 && a->eps == b->eps));
}

static otc_status train_step(otc_executor *ex, otc_id loss, otc_optimizer *opt, float *loss_value) {
    emitc_exec *x = as_x(ex);
    otc_status st = can_train(x, loss, "train_step");
    if (st) return st;
    if (!opt) return otc_fail(OTC_ERR_ARG, "train_step: no optimiser");
    const otc_optim_config *c = otc_optimizer_config(opt);
    if (!same_optimiser(c, &x->p->c.eo.optim))
        return otc_fail(OTC_ERR_UNSUPPORTED,
                        "train_step: the emitted C was built for another optimiser (%s, "
                        "momentum %g, weight decay %g); this one is %s",
                        otc_optim_kind_name(x->p->c.eo.optim.kind),
                        (double)x->p->c.eo.optim.momentum, (double)x->p->c.eo.optim.weight_decay,
                        otc_optim_kind_name(c->kind));
    if (opt != x->opt) {
        /* A new optimiser: fresh moments and step count, the weights kept. */
        memcpy(x->scratch, x->params, x->params_bytes);
        x->p->init(x->params);
        memcpy(x->params, x->scratch, (size_t)x->p->c.fwd->param_floats * sizeof(float));
        x->opt = opt;
    }
    x->forwarded = false;
    st = run_step(x, x->params, c->lr);
    if (st) return st;
    const float *g = x->p->grads(x->ws, x->batch);
    memcpy(x->acc, g, (size_t)x->p->c.train->param_floats * sizeof(float));
    x->have_grads = true;
    x->step_grads = false; /* the weights moved: a backward must recompute */
    if (loss_value) *loss_value = x->loss;
    return OTC_OK;
}

static void reset_state(otc_executor *ex) {
    as_x(ex)->state_batch = 0; /* the next forward calls NAME_reset */
}

static otc_status sync_params(otc_executor *ex) {
    emitc_exec *x = as_x(ex);
    const otc_plan *pl = x->p->c.fwd;
    for (int i = 0; x->params && i < pl->n_params; i++) {
        otc_id id = pl->params[i];
        otc_tensor *t = otc_graph_param(ex->graph, id);
        memcpy(t->data, (const float *)x->params + pl->values[id].param_offset,
               t->size * sizeof(float));
    }
    return OTC_OK;
}

static const otc_executor_vtable emitc_vtable = {
    "emitc",    destroy,     set_input,   forward, value, backward, grad, zero_grad,
    train_step, reset_state, sync_params, NULL,    NULL,  NULL,     NULL, NULL,
};

otc_executor *emitc_executor_new(emitc_program *p, const otc_exec_options *options) {
    if (!p) return NULL;
    emitc_exec *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->base.vt = &emitc_vtable;
    x->base.graph = p->c.g;
    x->p = p;
    x->inference = options && options->inference;
    x->n = otc_graph_size(p->c.g);
    x->in = calloc((size_t)x->n + 1, sizeof *x->in);
    x->vals = calloc((size_t)x->n + 1, sizeof *x->vals);
    bool ok = x->in && x->vals;
    for (int i = 0; ok && i < x->n; i++) x->in[i].batch = -1;
    const otc_plan *pl = p->c.fwd;
    if (ok && p->init) {
        /* The weights struct: w, up to two moment arrays, a step count. */
        x->params_bytes = (3 * (size_t)pl->param_floats + 16) * sizeof(float);
        x->params = aligned_alloc(64, (x->params_bytes + 63) / 64 * 64);
        x->scratch = aligned_alloc(64, (x->params_bytes + 63) / 64 * 64);
        x->acc = calloc((size_t)pl->param_floats + 1, sizeof(float));
        ok = x->params && x->scratch && x->acc;
        if (ok) {
            p->init(x->params);
            for (int i = 0; i < pl->n_params; i++) {
                otc_id id = pl->params[i];
                const otc_tensor *t = otc_graph_param(p->c.g, id);
                memcpy((float *)x->params + pl->values[id].param_offset, t->data,
                       t->size * sizeof(float));
            }
        }
    }
    if (!ok) {
        otc_fail(OTC_ERR_NOMEM, "out of memory");
        destroy(&x->base);
        return NULL;
    }
    return &x->base;
}
