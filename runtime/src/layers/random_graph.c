/* The random-graph generator shared by the differential tests (interpreter vs emitted C vs
 * JIT), the benchmarks and `otc bench --random`; part of libotc. */
#include "otc/random_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/layers.h"

otc_testgen_neat_options otc_testgen_neat_defaults(int n_neurons) {
    otc_testgen_neat_options o;
    memset(&o, 0, sizeof o);
    o.n_inputs = 4;
    o.n_neurons = n_neurons > 0 ? n_neurons : 1;
    o.n_outputs = o.n_neurons >= 2 ? 2 : 1;
    o.max_fanin = 5;
    o.weight_scale = 1.5f;
    return o;
}

otc_graph *otc_testgen_recurrent(uint64_t seed, int n_neurons) {
    otc_testgen_neat_options o = otc_testgen_neat_defaults(n_neurons);
    o.recurrent = 0.3f;
    o.two_inputs = seed % 2 == 0;
    o.n_outputs = 1 + (int)(seed % 3);
    if (o.n_outputs > o.n_neurons) o.n_outputs = o.n_neurons;
    o.weight_scale = 1.0f;
    o.act_mask = (1u << OTC_ACT_SIGMOID) | (1u << OTC_ACT_TANH) | (1u << OTC_ACT_GAUSSIAN) |
                 (1u << OTC_ACT_SIN) | (1u << OTC_ACT_STEEP_SIGMOID);
    return otc_testgen_neat(seed, &o);
}

void otc_testgen_fill(otc_rng *rng, float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * otc_rng_uniform(rng);
}

static float uniform(otc_rng *rng, float s) {
    return (2.0f * otc_rng_uniform(rng) - 1.0f) * s;
}

/* A value neurons may read: node and its per-sample width. */
typedef struct {
    otc_id id;
    int width;
} pool_entry;

typedef struct {
    otc_graph *g;
    otc_rng rng;
    const otc_testgen_neat_options *o;
    pool_entry *pool;
    int n_pool, n_input_entries;
    otc_id *delay_of; /* recurrent: per neuron, its Delay once a connection reads it, or -1 */
    bool failed;
} gen;

static void push(gen *s, otc_id id, int width) {
    if (id < 0) {
        s->failed = true;
        return;
    }
    s->pool[s->n_pool++] = (pool_entry){id, width};
}

static otc_act random_act(gen *s) {
    /* By default the activations before neat-python's (whose inv, exp and cube would make
     * random graphs overflow), drawn from that range so the seeded graphs stay the same. */
    unsigned mask = s->o->act_mask ? s->o->act_mask : (1u << OTC_ACT_CLASSIC_COUNT) - 1;
    uint32_t range = mask >> OTC_ACT_CLASSIC_COUNT ? OTC_ACT_COUNT : OTC_ACT_CLASSIC_COUNT;
    for (;;) {
        int a = (int)otc_rng_below(&s->rng, range);
        if (mask & (1u << a)) return (otc_act)a;
    }
}

/* A pool entry: half the time an input column (as NEAT wires inputs to everything), else
 * any earlier value, favouring recent ones so chains form. */
static pool_entry pick(gen *s) {
    if (s->n_pool == s->n_input_entries || otc_rng_uniform(&s->rng) < 0.35f)
        return s->pool[otc_rng_below(&s->rng, (uint32_t)s->n_input_entries)];
    int later = s->n_pool - s->n_input_entries;
    int back = (int)otc_rng_below(&s->rng, (uint32_t)(later < 8 ? later : 8));
    if (otc_rng_uniform(&s->rng) < 0.5f) back = (int)otc_rng_below(&s->rng, (uint32_t)later);
    return s->pool[s->n_pool - 1 - back];
}

static pool_entry pick_width1(gen *s) {
    for (int tries = 0; tries < 16; tries++) {
        pool_entry e = pick(s);
        if (e.width == 1) return e;
    }
    return s->pool[s->n_pool - 1].width == 1 ? s->pool[s->n_pool - 1] : (pool_entry){-1, 0};
}

/* Recurrent: the Delay of a random neuron (made on first use, connected once all exist). */
static pool_entry pick_delayed(gen *s) {
    int j = (int)otc_rng_below(&s->rng, (uint32_t)s->o->n_neurons);
    if (s->delay_of[j] < 0) {
        char name[32];
        snprintf(name, sizeof name, "d%d", j);
        s->delay_of[j] = otc_delay(s->g, name, otc_shape_2d(OTC_BATCH, 1));
    }
    return (pool_entry){s->delay_of[j], 1};
}

/* A Neuron with the activation's own default parameter (otc_neuron leaves alpha 0). */
static otc_id add_neuron(gen *s, const char *name, int fanin) {
    otc_id srcs[64];
    int cols[64];
    float w[64];
    int n = 0;
    for (int t = 0; t < 4 * fanin && n < fanin; t++) {
        pool_entry e =
            s->delay_of && otc_rng_uniform(&s->rng) < s->o->recurrent ? pick_delayed(s) : pick(s);
        if (e.id < 0) return -1;
        int col = (int)otc_rng_below(&s->rng, (uint32_t)e.width);
        bool dup = false;
        for (int j = 0; j < n; j++) dup = dup || (srcs[j] == e.id && cols[j] == col);
        if (dup) continue;
        srcs[n] = e.id;
        cols[n] = col;
        w[n] = uniform(&s->rng, s->o->weight_scale);
        n++;
    }
    otc_act act = random_act(s);
    float bias = uniform(&s->rng, s->o->weight_scale);
    float response =
        otc_rng_uniform(&s->rng) < 0.8f ? 1.0f : 0.5f + 1.5f * otc_rng_uniform(&s->rng);
    char wn[64], bn[64];
    snprintf(wn, sizeof wn, "%s.w", name);
    snprintf(bn, sizeof bn, "%s.b", name);
    otc_id W = otc_param(s->g, wn, otc_shape_1d(n), w);
    otc_id B = otc_param(s->g, bn, otc_shape_1d(1), &bias);
    if (W < 0 || B < 0) return -1;
    otc_id in[66];
    in[0] = W;
    in[1] = B;
    memcpy(in + 2, srcs, (size_t)n * sizeof *srcs);
    otc_node_spec spec = {.op = OTC_OP_NEURON,
                          .name = name,
                          .n_inputs = n + 2,
                          .inputs = in,
                          .cols = cols,
                          .scale = response,
                          .act = (int)act,
                          .alpha = otc_act_get(act)->default_a};
    return otc_graph_add(s->g, &spec);
}

/* One elementwise or structural op over earlier values, added to the pool. */
static void add_mixed_op(gen *s) {
    otc_graph *g = s->g;
    int kind = (int)otc_rng_below(&s->rng, 9);
    pool_entry a = pick_width1(s), b = pick_width1(s);
    if (a.id < 0 || b.id < 0) return;
    switch (kind) {
    case 0:
        push(s, otc_add(g, a.id, b.id), 1);
        break;
    case 1:
        push(s, otc_sub(g, a.id, b.id), 1);
        break;
    case 2:
        push(s, otc_mul(g, a.id, b.id), 1);
        break;
    case 3:
        push(s, otc_scale(g, a.id, uniform(&s->rng, 2.0f)), 1);
        break;
    case 4:
        push(s, otc_neg(g, a.id), 1);
        break;
    case 5: {
        static const otc_op acts[] = {OTC_OP_TANH, OTC_OP_SIGMOID,  OTC_OP_RELU, OTC_OP_LEAKY_RELU,
                                      OTC_OP_ELU,  OTC_OP_SOFTPLUS, OTC_OP_SIN,  OTC_OP_GAUSSIAN,
                                      OTC_OP_ABS,  OTC_OP_IDENTITY};
        otc_op op = acts[otc_rng_below(&s->rng, sizeof acts / sizeof acts[0])];
        float alpha = otc_act_get((otc_act)otc_op_get(op)->act)->default_a;
        push(s, otc_activation(g, op, a.id, alpha), 1);
        break;
    }
    case 6: { /* a wide value neurons then read columns of */
        otc_id xs[3] = {a.id, b.id, pick_width1(s).id};
        int n = xs[2] >= 0 ? 3 : 2;
        push(s, otc_concat(g, n, xs, 1), n);
        break;
    }
    case 7: { /* a bias broadcast over the batch, added */
        float v = uniform(&s->rng, 1.0f);
        otc_id p = otc_param(g, NULL, otc_shape_1d(1), &v);
        otc_id rb = p >= 0 ? otc_row_broadcast(g, p, a.id) : -1;
        push(s, rb >= 0 ? otc_add(g, a.id, rb) : -1, 1);
        break;
    }
    default: { /* reshape (an alias) or a slice of an input */
        pool_entry in = s->pool[otc_rng_below(&s->rng, (uint32_t)s->n_input_entries)];
        if (in.width >= 2) {
            int len = 1 + (int)otc_rng_below(&s->rng, (uint32_t)(in.width - 1));
            int start = (int)otc_rng_below(&s->rng, (uint32_t)(in.width - len + 1));
            push(s, otc_slice(g, in.id, 1, start, len), len);
        } else {
            push(s, otc_reshape(g, a.id, otc_shape_2d(OTC_BATCH, 1)), 1);
        }
        break;
    }
    }
}

otc_graph *otc_testgen_neat(uint64_t seed, const otc_testgen_neat_options *o) {
    if (!o || o->n_inputs < 1 || o->n_neurons < 1 || o->n_outputs < 1 ||
        o->n_outputs > o->n_neurons || o->max_fanin < 1 || o->max_fanin > 64) {
        otc_fail(OTC_ERR_ARG, "testgen: bad options");
        return NULL;
    }
    gen s;
    memset(&s, 0, sizeof s);
    s.o = o;
    otc_rng_seed(&s.rng, seed);
    s.g = otc_graph_new();
    /* Every op adds at most one pool entry; a mixed op may come before each neuron. */
    s.pool = malloc((size_t)(2 * o->n_neurons + 4) * sizeof *s.pool);
    if (!s.g || !s.pool) {
        otc_graph_free(s.g);
        free(s.pool);
        otc_fail(OTC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (o->two_inputs && o->n_inputs >= 2) {
        int first = 1 + (int)otc_rng_below(&s.rng, (uint32_t)(o->n_inputs - 1));
        push(&s, otc_input(s.g, "x", otc_shape_2d(OTC_BATCH, first)), first);
        push(&s, otc_input(s.g, "x2", otc_shape_2d(OTC_BATCH, o->n_inputs - first)),
             o->n_inputs - first);
    } else {
        push(&s, otc_input(s.g, "x", otc_shape_2d(OTC_BATCH, o->n_inputs)), o->n_inputs);
    }
    s.n_input_entries = s.n_pool;
    if (o->recurrent > 0) {
        s.delay_of = malloc((size_t)o->n_neurons * sizeof *s.delay_of);
        if (!s.delay_of) s.failed = true;
        for (int i = 0; s.delay_of && i < o->n_neurons; i++) s.delay_of[i] = -1;
    }
    otc_id *neurons = malloc((size_t)o->n_neurons * sizeof *neurons);
    for (int i = 0; i < o->n_neurons && neurons && !s.failed; i++) {
        if (o->mixed_ops && s.n_pool > s.n_input_entries && otc_rng_uniform(&s.rng) < 0.3f)
            add_mixed_op(&s);
        bool out = i >= o->n_neurons - o->n_outputs;
        char name[32];
        snprintf(name, sizeof name, "%s%d", out ? "o" : "h",
                 out ? i - (o->n_neurons - o->n_outputs) : i);
        int fanin = 1 + (int)otc_rng_below(&s.rng, (uint32_t)o->max_fanin);
        neurons[i] = add_neuron(&s, name, fanin);
        push(&s, neurons[i], 1);
    }
    for (int i = o->n_neurons - o->n_outputs; i < o->n_neurons && neurons && !s.failed; i++)
        if (otc_graph_mark_output(s.g, neurons[i])) s.failed = true;
    for (int i = 0; s.delay_of && neurons && !s.failed && i < o->n_neurons; i++)
        if (s.delay_of[i] >= 0 && otc_graph_set_input(s.g, s.delay_of[i], 0, neurons[i]))
            s.failed = true;
    free(s.delay_of);
    free(s.pool);
    if (!neurons || s.failed) {
        if (!neurons) otc_fail(OTC_ERR_NOMEM, "out of memory");
        free(neurons);
        otc_graph_free(s.g);
        return NULL;
    }
    free(neurons);
    return s.g;
}

otc_graph *otc_testgen_mlp(uint64_t seed, int n, const int *sizes, otc_op hidden_act, int out_act) {
    if (n < 2 || !sizes) {
        otc_fail(OTC_ERR_ARG, "testgen: an MLP needs an input size and at least one layer");
        return NULL;
    }
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    otc_graph *g = otc_graph_new();
    otc_id x = g ? otc_input(g, "x", otc_shape_2d(OTC_BATCH, sizes[0])) : -1;
    otc_id y = x >= 0 ? otc_mlp(g, x, n - 1, sizes + 1, hidden_act, out_act, &rng) : -1;
    if (y < 0 || otc_graph_mark_output(g, y)) {
        otc_graph_free(g);
        return NULL;
    }
    /* Non-zero biases, so a wrong bias path cannot hide. */
    for (otc_id id = 0; id < otc_graph_size(g); id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op == OTC_OP_PARAMETER && nd->shape.ndim == 1) {
            otc_tensor *t = otc_graph_param(g, id);
            otc_testgen_fill(&rng, t->data, t->size, -0.5f, 0.5f);
        }
    }
    return g;
}

static int width_of(const otc_graph *g, otc_id id) {
    const otc_node *nd = otc_graph_node(g, id);
    return otc_shape_is_batched(nd->shape) ? (int)otc_shape_size(nd->shape) : 0;
}

int otc_testgen_input_width(const otc_graph *g) {
    int w = 0;
    for (int i = 0; i < otc_graph_input_count(g); i++) w += width_of(g, otc_graph_input(g, i));
    return w;
}

int otc_testgen_output_width(const otc_graph *g) {
    int w = 0;
    for (int i = 0; i < otc_graph_output_count(g); i++) w += width_of(g, otc_graph_output(g, i));
    return w;
}
