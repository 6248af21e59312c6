/* When compiling pays: the executor NEAT gets with `otc evolve --jit`. Fitness evaluations
 * interpret first and switch to compiled code once the interpreted work has cost as much as
 * compiling would (ski rental); training executors decide up front from the expected number
 * of training samples. Work is counted, not timed, so runs stay reproducible. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "otc/jit.h"

static otc_jit_policy policy;
static bool policy_set;
static pthread_mutex_t stats_mutex = PTHREAD_MUTEX_INITIALIZER;
static otc_jit_policy_stats stats;

void otc_jit_policy_set(const otc_jit_policy *p) {
    policy = p ? *p : otc_jit_policy_defaults();
    policy_set = true;
}

static const otc_jit_policy *current(void) {
    if (!policy_set) otc_jit_policy_set(NULL);
    return &policy;
}

otc_jit_policy_stats otc_jit_policy_info(void) {
    pthread_mutex_lock(&stats_mutex);
    otc_jit_policy_stats s = stats;
    pthread_mutex_unlock(&stats_mutex);
    return s;
}

static void count(long *field) {
    pthread_mutex_lock(&stats_mutex);
    (*field)++;
    pthread_mutex_unlock(&stats_mutex);
}

static double compile_ns(const otc_jit_policy *p, int nodes) {
    return (p->compile_ms + p->compile_ms_per_node * nodes) * 1e6;
}

typedef struct {
    otc_executor base;
    otc_executor *inner;
    otc_exec_options o;
    bool compiled, given_up, recurrent;
    /* Recurrent graphs: each Delay's next value, kept after the interpreted step before the
     * switch (the next step's inputs make the interpreter's values stale). */
    bool stepped; /* kept since the last reset */
    int last_batch;
    float *state;
    size_t state_cap;
    int nodes;
    double work, threshold; /* node-samples interpreted so far / worth a compile */
    /* Inputs as last set, replayed into the compiled executor at the switch. */
    int n_inputs;
    otc_id *ids;
    float **data;
    size_t *cap;
    int *batch;
} pol_exec;

static pol_exec *as_pol(otc_executor *ex) {
    return (pol_exec *)ex;
}

static void destroy(otc_executor *ex) {
    pol_exec *p = as_pol(ex);
    otc_exec_free(p->inner);
    for (int i = 0; p->data && i < p->n_inputs; i++) free(p->data[i]);
    free(p->ids);
    free(p->data);
    free(p->cap);
    free(p->batch);
    free(p->state);
    free(p);
}

/* Keep every Delay's next value (its source's value now), Delay after Delay. */
static otc_status keep_state(pol_exec *p, int batch) {
    const otc_graph *g = p->base.graph;
    size_t need = 0;
    for (otc_id d = 0; d < otc_graph_size(g); d++)
        if (otc_graph_node(g, d)->op == OTC_OP_DELAY)
            need += otc_shape_size(otc_graph_node(g, d)->shape) * (size_t)batch;
    if (need > p->state_cap) {
        float *s = realloc(p->state, need * sizeof(float));
        if (!s) return otc_fail(OTC_ERR_NOMEM, "out of memory");
        p->state = s;
        p->state_cap = need;
    }
    size_t at = 0;
    for (otc_id d = 0; d < otc_graph_size(g); d++) {
        const otc_node *nd = otc_graph_node(g, d);
        if (nd->op != OTC_OP_DELAY) continue;
        const float *v;
        size_t n = otc_shape_size(nd->shape) * (size_t)batch;
        otc_status st = otc_exec_value(p->inner, nd->inputs[0], &v, NULL);
        if (st) return st;
        memcpy(p->state + at, v, n * sizeof(float));
        at += n;
    }
    p->stepped = true;
    p->last_batch = batch;
    return OTC_OK;
}

static otc_status set_input(otc_executor *ex, otc_id id, const float *data, int batch) {
    pol_exec *p = as_pol(ex);
    otc_status st = otc_exec_set_input(p->inner, id, data, batch);
    if (st || p->compiled || p->given_up) return st;
    for (int i = 0; i < p->n_inputs; i++) {
        if (p->ids[i] != id) continue;
        size_t n = otc_shape_size(otc_graph_node(ex->graph, id)->shape) * (size_t)batch;
        if (n > p->cap[i]) {
            float *d = realloc(p->data[i], n * sizeof(float));
            if (!d) return otc_fail(OTC_ERR_NOMEM, "out of memory");
            p->data[i] = d;
            p->cap[i] = n;
        }
        memcpy(p->data[i], data, n * sizeof(float));
        p->batch[i] = batch;
    }
    return OTC_OK;
}

/* Compile now; on success the compiled executor replaces the interpreter. */
static void switch_to_jit(pol_exec *p) {
    otc_jit_options jo = otc_jit_defaults();
    jo.inference = p->o.inference;
    jo.tier = OTC_JIT_TIER_FAST;
    otc_executor *jit = otc_jit_executor_new(p->base.graph, &jo);
    bool ok = jit != NULL;
    for (int i = 0; ok && i < p->n_inputs; i++)
        if (p->batch[i] > 0)
            ok = otc_exec_set_input(jit, p->ids[i], p->data[i], p->batch[i]) == OTC_OK;
    /* Mid-sequence: each Delay's next value is its source's value at the interpreter's last
     * step, handed over with set_state, so the compiled steps carry on where it stopped. */
    const otc_graph *g = p->base.graph;
    size_t at = 0;
    for (otc_id d = 0; ok && p->stepped && d < otc_graph_size(g); d++) {
        const otc_node *nd = otc_graph_node(g, d);
        if (nd->op != OTC_OP_DELAY) continue;
        ok = otc_exec_set_state(jit, d, p->state + at, p->last_batch) == OTC_OK;
        at += otc_shape_size(nd->shape) * (size_t)p->last_batch;
    }
    if (!ok) {
        otc_exec_free(jit);
        p->given_up = true; /* interpret it to the end */
        count(&stats.failed);
        return;
    }
    otc_exec_free(p->inner);
    p->inner = jit;
    p->compiled = true;
    count(&stats.compiled);
}

static otc_status forward(otc_executor *ex) {
    pol_exec *p = as_pol(ex);
    if (!p->compiled && !p->given_up) {
        int batch = 1;
        for (int i = 0; i < p->n_inputs; i++)
            if (p->batch[i] > batch) batch = p->batch[i];
        if (p->work >= p->threshold) switch_to_jit(p);
        if (!p->compiled) {
            p->work += (double)p->nodes * batch;
            otc_status st = otc_exec_forward(p->inner);
            /* The switch comes at the next step: keep the state it starts from. */
            if (!st && p->recurrent && p->work >= p->threshold && keep_state(p, batch))
                p->given_up = true; /* its values cannot be read: interpret to the end */
            return st;
        }
    }
    return otc_exec_forward(p->inner);
}

static otc_status value(otc_executor *ex, otc_id node, const float **data, otc_shape *shape) {
    return otc_exec_value(as_pol(ex)->inner, node, data, shape);
}
static otc_status backward(otc_executor *ex, otc_id loss) {
    return otc_exec_backward(as_pol(ex)->inner, loss);
}
static otc_status grad(otc_executor *ex, otc_id param, const float **data) {
    return otc_exec_grad(as_pol(ex)->inner, param, data);
}
static void zero_grad(otc_executor *ex) {
    otc_exec_zero_grad(as_pol(ex)->inner);
}
static otc_status train_step(otc_executor *ex, otc_id loss, otc_optimizer *opt, float *lv) {
    return otc_exec_train_step(as_pol(ex)->inner, loss, opt, lv);
}
static void reset_state(otc_executor *ex) {
    as_pol(ex)->stepped = false;
    otc_exec_reset_state(as_pol(ex)->inner);
}
static otc_status sync_params(otc_executor *ex) {
    return otc_exec_sync_params(as_pol(ex)->inner);
}

static const otc_executor_vtable pol_vtable = {
    "adaptive", destroy,     set_input,   forward, value, backward, grad, zero_grad,
    train_step, reset_state, sync_params, NULL,    NULL,  NULL,     NULL, NULL,
};

otc_executor *otc_jit_policy_executor(otc_graph *g, const otc_exec_options *options) {
    const otc_jit_policy *pol = current();
    otc_exec_options o = options ? *options : (otc_exec_options){0};
    int nodes = g ? otc_graph_size(g) : 0;
    count(&stats.executors);
    if (!o.inference) {
        /* Training: the whole job is known now. */
        double samples = pol->train_samples;
        double interp = pol->interp_ns * pol->train_factor * nodes * samples;
        double jit = compile_ns(pol, nodes) * pol->train_factor +
                     pol->jit_ns * pol->train_factor * nodes * samples;
        /* Recurrent genomes train through time in the sequence task, which runs its own
         * executor; here only feed-forward ones are trained compiled. */
        if (samples > 0 && jit < interp && !otc_graph_is_recurrent(g)) {
            otc_jit_options jo = otc_jit_defaults();
            jo.defer_forward = true;
            jo.tier = OTC_JIT_TIER_FAST;
            otc_executor *ex = otc_jit_executor_new(g, &jo);
            if (ex) {
                count(&stats.compiled);
                return ex;
            }
            count(&stats.failed);
        }
        return otc_interpreter_new(g, &o);
    }
    pol_exec *p = calloc(1, sizeof *p);
    if (!p) {
        otc_fail(OTC_ERR_NOMEM, "out of memory for an executor");
        return NULL;
    }
    p->base.vt = &pol_vtable;
    p->base.graph = g;
    p->o = o;
    p->nodes = nodes;
    /* Ski rental: interpret until what was spent equals what compiling would cost. */
    p->threshold = compile_ns(pol, nodes) / (pol->interp_ns > 0 ? pol->interp_ns : 1.0);
    p->inner = otc_interpreter_new(g, &o);
    p->n_inputs = g ? otc_graph_input_count(g) : 0;
    p->ids = calloc((size_t)p->n_inputs + 1, sizeof *p->ids);
    p->data = calloc((size_t)p->n_inputs + 1, sizeof *p->data);
    p->cap = calloc((size_t)p->n_inputs + 1, sizeof *p->cap);
    p->batch = calloc((size_t)p->n_inputs + 1, sizeof *p->batch);
    if (!p->inner || !p->ids || !p->data || !p->cap || !p->batch) {
        if (p->inner) otc_fail(OTC_ERR_NOMEM, "out of memory for an executor");
        destroy(&p->base);
        return NULL;
    }
    for (int i = 0; i < p->n_inputs; i++) p->ids[i] = otc_graph_input(g, i);
    p->recurrent = otc_graph_is_recurrent(g);
    return &p->base;
}

otc_executor *otc_jit_policy_compiled(otc_graph *g, const otc_exec_options *options) {
    (void)options; /* inference: the flat program it takes over from only runs forward */
    count(&stats.executors);
    if (!g || otc_graph_size(g) < current()->flat_min_nodes) {
        count(&stats.too_small); /* the flat program is as fast: it carries on */
        return NULL;
    }
    otc_jit_options jo = otc_jit_defaults();
    jo.inference = true;
    jo.tier = OTC_JIT_TIER_FAST;
    jo.exact = true;
    jo.lanes = 1;
    otc_executor *ex = g ? otc_jit_executor_new(g, &jo) : NULL;
    otc_jit_stats js = {0};
    if (ex) otc_jit_executor_stats(ex, &js);
    pthread_mutex_lock(&stats_mutex);
    if (ex) {
        stats.compiled++;
        stats.compile_ms += js.compile_ms;
    } else {
        stats.failed++;
    }
    pthread_mutex_unlock(&stats_mutex);
    return ex;
}
