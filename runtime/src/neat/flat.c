/* The flat evaluation program (otc/neat_flat.h): a genome lowered straight to node-major
 * arrays in evaluation order, run without a graph, in memory reused from genome to genome. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "neat_internal.h"
#include "otc/neat_flat.h"
#include "otc/neat_python.h"

struct otc_neat_flat {
    /* The program. Value slots: input i at i, the bias constant at n_inputs, neuron k (in
     * evaluation order) at n_inputs + 1 + k. */
    int n_inputs, n_outputs, n_neurons;
    bool recurrent;
    /* CTRNN (config ctrnn): each forward is `steps` integration steps; neuron k's value
     * becomes keep[k] v + take[k] z (the last step: keep_last, take_last), exp(-dt/tau) and
     * its complement as the importer's graph has them. */
    bool ctrnn;
    int steps;
    float *keep, *take, *keep_last, *take_last;
    int *first;                     /* [n_neurons + 1]: neuron k's sources first[k]..first[k+1] */
    int *src;                       /* per source: the slot it reads */
    float *w;                       /* per source: its weight */
    float *bias, *response, *alpha; /* per neuron */
    int *act;                       /* per neuron */
    int *ids;                       /* per neuron: its gene id */
    int *agg;                       /* per neuron: otc_agg (0 sum) */
    int n_nonsum;                   /* neurons whose aggregation is not the sum */
    float *terms;                   /* one row's weighted inputs of such a neuron */
    otc_agg_item *items;            /* and the median's sort */
    int cap_terms;
    int *out_slot; /* per output, outputs in node order */
    int cap_neurons, cap_edges, cap_outputs;

    /* Values, slot-major ([slot][row]). Neurons write cur and read `read`: cur itself when
     * feed-forward, prev (the previous step's values, with this step's inputs) when recurrent;
     * the two swap after a recurrent step. */
    int batch; /* rows the value arrays are laid out for, 0: not yet */
    float *cur, *prev;
    size_t cap_vals;

    /* Lowering scratch: per node index and per connection gene. */
    int *slot;           /* node's value slot, -1 not evaluated */
    int *cursor;         /* node's incoming count, then its fill cursor */
    int *start;          /* [n_nodes + 1]: node's first incoming edge */
    int *order;          /* needed neurons, evaluation order */
    int *stack, *iter;   /* depth-first walks */
    unsigned char *mark; /* node: 0 not needed, 1 needed, 2 on the walk's path, 3 placed */
    int *edge;           /* incoming edges grouped by node, innovation order: gene index */
    int *src_node;       /* per gene: node index of its source, -1 not evaluated */
    int *dst_node;       /* per gene: node index of its target */
    int cap_nodes, cap_conns;
    int *index_of; /* node id -> node index (a hint, checked against the genome), -1 none */
    int cap_ids;
};

/* Ids above this (and above 16 per node) are looked up by binary search instead of through
 * index_of, whose size follows the largest id. */
#define FLAT_DIRECT_IDS 65536

otc_neat_flat *otc_neat_flat_new(void) {
    otc_neat_flat *f = calloc(1, sizeof *f);
    if (!f) otc_fail(OTC_ERR_NOMEM, "out of memory for a flat program");
    return f;
}

void otc_neat_flat_free(otc_neat_flat *f) {
    if (!f) return;
    void *arrays[] = {f->first, f->src,  f->w,         f->bias,      f->response, f->alpha,
                      f->act,   f->agg,  f->terms,     f->items,     f->out_slot, f->cur,
                      f->prev,  f->slot, f->cursor,    f->start,     f->order,    f->stack,
                      f->iter,  f->mark, f->edge,      f->src_node,  f->dst_node, f->index_of,
                      f->keep,  f->take, f->keep_last, f->take_last, f->ids};
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) free(arrays[i]);
    free(f);
}

int otc_neat_flat_rows(const otc_neat_flat *f) {
    return f ? f->batch : 0;
}

int otc_neat_flat_neurons(const otc_neat_flat *f) {
    return f ? f->n_neurons : 0;
}

/* realloc of one array to n elements; false (the array untouched) when out of memory. */
static bool resize(void **a, size_t n, size_t elem) {
    void *p = realloc(*a, n * elem);
    if (!p) return false;
    *a = p;
    return true;
}

/* Capacity for `need` (doubling), or the current one when it suffices. */
static int grown(int cap, int need) {
    if (need <= cap) return cap;
    int n = cap ? cap : 16;
    while (n < need) n *= 2;
    return n;
}

#define RESIZE(a, n) resize((void **)&(a), (size_t)(n), sizeof *(a))

static bool reserve(otc_neat_flat *f, int nodes, int conns, int outputs) {
    int cn = grown(f->cap_nodes, nodes + 1);
    if (cn > f->cap_nodes) {
        if (!RESIZE(f->slot, cn) || !RESIZE(f->cursor, cn) || !RESIZE(f->start, cn) ||
            !RESIZE(f->order, cn) || !RESIZE(f->stack, cn) || !RESIZE(f->iter, cn) ||
            !RESIZE(f->mark, cn) || !RESIZE(f->first, cn) || !RESIZE(f->bias, cn) ||
            !RESIZE(f->response, cn) || !RESIZE(f->alpha, cn) || !RESIZE(f->act, cn) ||
            !RESIZE(f->agg, cn) || !RESIZE(f->keep, cn) || !RESIZE(f->take, cn) ||
            !RESIZE(f->keep_last, cn) || !RESIZE(f->take_last, cn) || !RESIZE(f->ids, cn))
            return false;
        f->cap_nodes = f->cap_neurons = cn;
    }
    int ce = grown(f->cap_conns, conns + 1);
    if (ce > f->cap_conns) {
        if (!RESIZE(f->edge, ce) || !RESIZE(f->src_node, ce) || !RESIZE(f->dst_node, ce) ||
            !RESIZE(f->src, ce) || !RESIZE(f->w, ce))
            return false;
        f->cap_conns = f->cap_edges = ce;
    }
    int co = grown(f->cap_outputs, outputs + 1);
    if (co > f->cap_outputs) {
        if (!RESIZE(f->out_slot, co)) return false;
        f->cap_outputs = co;
    }
    return true;
}

static bool is_source(const otc_neat_node *n) {
    return n->type == OTC_NEAT_INPUT || n->type == OTC_NEAT_BIAS;
}

/* index_of covering ids 0..max_id, filled for g's nodes; false: too large to map directly. */
static bool map_ids(otc_neat_flat *f, const otc_neat_genome *g) {
    int nn = g->n_nodes, max_id = nn ? g->nodes[nn - 1].id : 0; /* nodes are sorted by id */
    if (max_id < 0 || max_id >= FLAT_DIRECT_IDS + 16 * nn) return false;
    if (max_id >= f->cap_ids) {
        int cap = grown(f->cap_ids, max_id + 1);
        if (!RESIZE(f->index_of, cap)) return false;
        for (int i = f->cap_ids; i < cap; i++) f->index_of[i] = -1;
        f->cap_ids = cap;
    }
    for (int i = 0; i < nn; i++)
        if (g->nodes[i].id >= 0) f->index_of[g->nodes[i].id] = i;
    return true;
}

/* Index of node id in g, or -1. A stale index_of entry from an earlier genome names a node
 * with another id, so the check below rejects it. */
static int node_index(const otc_neat_flat *f, const otc_neat_genome *g, bool direct, int id) {
    if (!direct) {
        const otc_neat_node *n = otc_neat_genome_find_node(g, id);
        return n ? (int)(n - g->nodes) : -1;
    }
    if (id < 0 || id >= f->cap_ids) return -1;
    int i = f->index_of[id];
    return i >= 0 && i < g->n_nodes && g->nodes[i].id == id ? i : -1;
}

/* Enabled genes into evaluated (non-source) nodes, grouped by target in innovation order. */
static otc_status collect_edges(otc_neat_flat *f, const otc_neat_genome *g) {
    int nn = g->n_nodes;
    bool direct = map_ids(f, g);
    for (int i = 0; i < nn; i++) f->cursor[i] = 0;
    for (int i = 0; i < g->n_conns; i++) {
        const otc_neat_conn *cn = &g->conns[i];
        f->src_node[i] = -1;
        if (!cn->enabled) continue;
        int a = node_index(f, g, direct, cn->in), o = node_index(f, g, direct, cn->out);
        if (a < 0 || o < 0)
            return otc_fail(OTC_ERR_FORMAT, "genome: connection %d (%d -> %d) names a missing node",
                            cn->innov, cn->in, cn->out);
        /* Nothing reads into an input (validation refuses such genes). */
        if (is_source(&g->nodes[o])) continue;
        f->src_node[i] = a;
        f->dst_node[i] = o;
        f->cursor[o]++;
    }
    f->start[0] = 0;
    for (int i = 0; i < nn; i++) {
        f->start[i + 1] = f->start[i] + f->cursor[i];
        f->cursor[i] = f->start[i];
    }
    for (int i = 0; i < g->n_conns; i++)
        if (f->src_node[i] >= 0) f->edge[f->cursor[f->dst_node[i]]++] = i;
    return OTC_OK;
}

/* Backwards from the outputs: a node that cannot reach an output changes no output. */
static void mark_needed(otc_neat_flat *f, const otc_neat_genome *g) {
    int top = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        f->mark[i] = g->nodes[i].type == OTC_NEAT_OUTPUT;
        if (f->mark[i]) f->stack[top++] = i;
    }
    while (top) {
        int v = f->stack[--top];
        for (int e = f->start[v]; e < f->start[v + 1]; e++) {
            int a = f->src_node[f->edge[e]];
            if (!f->mark[a]) {
                f->mark[a] = 1;
                f->stack[top++] = a;
            }
        }
    }
}

/* Feed-forward evaluation order: depth-first post-order from each output, so every neuron
 * comes after its sources; reaching a node still on the path is a cycle. */
static otc_status ff_order(otc_neat_flat *f, const otc_neat_genome *g) {
    int n = 0;
    /* The walks reach exactly the nodes mark_needed would mark: no separate pass for it. */
    for (int i = 0; i < g->n_nodes; i++) f->mark[i] = g->nodes[i].type == OTC_NEAT_OUTPUT;
    for (int r = 0; r < g->n_nodes; r++) {
        if (g->nodes[r].type != OTC_NEAT_OUTPUT || f->mark[r] != 1) continue;
        int top = 0;
        f->stack[top++] = r;
        f->mark[r] = 2;
        f->iter[r] = f->start[r];
        while (top) {
            int v = f->stack[top - 1];
            if (f->iter[v] < f->start[v + 1]) {
                int a = f->src_node[f->edge[f->iter[v]++]];
                if (is_source(&g->nodes[a]) || f->mark[a] == 3) continue;
                if (f->mark[a] == 2)
                    return otc_fail(OTC_ERR_CYCLE,
                                    "phenotype: the feed-forward genome has a cycle");
                f->mark[a] = 2;
                f->iter[a] = f->start[a];
                f->stack[top++] = a;
            } else {
                top--;
                f->mark[v] = 3;
                f->order[n++] = v;
            }
        }
    }
    f->n_neurons = n;
    return OTC_OK;
}

otc_status otc_neat_flat_build(otc_neat_flat *f, const otc_neat_genome *g,
                               const otc_neat_config *c) {
    if (!f || !g || !c) return otc_fail(OTC_ERR_ARG, "otc_neat_flat_build: NULL argument");
    int nn = g->n_nodes, n_in = c->num_inputs;
    if (!reserve(f, nn, g->n_conns, c->num_outputs))
        return otc_fail(OTC_ERR_NOMEM, "out of memory lowering a genome");
    f->n_neurons = f->n_outputs = 0;
    f->n_inputs = n_in;
    f->ctrnn = c->ctrnn;
    f->recurrent = !c->feed_forward || c->ctrnn;
    f->batch = 0; /* a fresh program starts from zero state */
    double last_dt = 0;
    if (f->ctrnn) {
        if (!(c->ctrnn_time_step > 0 && c->ctrnn_advance_time > 0))
            return otc_fail(OTC_ERR_CONFIG, "ctrnn: ctrnn_advance_time and ctrnn_time_step are "
                                            "not set (otc_neat_ctrnn_times)");
        f->steps = otc_neat_python_ctrnn_steps(c->ctrnn_advance_time, c->ctrnn_time_step, &last_dt);
    }
    otc_status s = collect_edges(f, g);
    if (s != OTC_OK) return s;
    if (f->recurrent) {
        mark_needed(f, g);
        /* Every non-input source is read a step late: any order will do. */
        for (int i = 0; i < nn; i++)
            if (f->mark[i] && !is_source(&g->nodes[i])) f->order[f->n_neurons++] = i;
    } else if ((s = ff_order(f, g)) != OTC_OK) { /* which only visits needed nodes */
        f->n_neurons = 0;
        return s;
    }
    for (int i = 0; i < nn; i++)
        f->slot[i] = g->nodes[i].type == OTC_NEAT_INPUT  ? g->nodes[i].id
                     : g->nodes[i].type == OTC_NEAT_BIAS ? n_in
                                                         : -1;
    for (int k = 0; k < f->n_neurons; k++) f->slot[f->order[k]] = n_in + 1 + k;
    int e = 0;
    for (int k = 0; k < f->n_neurons; k++) {
        const otc_neat_node *node = &g->nodes[f->order[k]];
        const otc_act_info *info = otc_act_get(node->act);
        if (!info) {
            f->n_neurons = 0;
            return otc_fail(OTC_ERR_FORMAT, "genome: node %d has unknown activation %d", node->id,
                            (int)node->act);
        }
        f->first[k] = e;
        for (int j = f->start[f->order[k]]; j < f->start[f->order[k] + 1]; j++) {
            const otc_neat_conn *cn = &g->conns[f->edge[j]];
            int a = f->src_node[f->edge[j]];
            if (g->nodes[a].type == OTC_NEAT_INPUT && (cn->in < 0 || cn->in >= n_in)) {
                f->n_neurons = 0;
                return otc_fail(OTC_ERR_FORMAT, "genome: input node %d outside num_inputs %d",
                                cn->in, n_in);
            }
            f->src[e] = f->slot[a];
            f->w[e] = cn->weight;
            e++;
        }
        f->bias[k] = node->bias;
        f->response[k] = node->response;
        f->act[k] = (int)node->act;
        f->ids[k] = node->id;
        f->alpha[k] = otc_neat_act_alpha(c, node->act); /* as the phenotype's Neuron */
        f->agg[k] = node->agg;
        if (f->ctrnn) {
            if (!(node->tau > 0)) {
                f->n_neurons = 0;
                return otc_fail(OTC_ERR_FORMAT, "genome: node %d: time constant %g is not positive",
                                node->id, (double)node->tau);
            }
            /* in double, then to float, as the importer computes its graph's constants */
            double d = exp(-c->ctrnn_time_step / (double)node->tau),
                   dl = exp(-last_dt / (double)node->tau);
            f->keep[k] = (float)d;
            f->take[k] = (float)(1.0 - d);
            f->keep_last[k] = (float)dl;
            f->take_last[k] = (float)(1.0 - dl);
        }
        if (!otc_agg_name(node->agg)) {
            f->n_neurons = 0;
            return otc_fail(OTC_ERR_FORMAT, "genome: node %d has unknown aggregation %d", node->id,
                            node->agg);
        }
    }
    f->first[f->n_neurons] = e;
    /* A row's weighted inputs for the neurons that do not sum (the widest of them). */
    f->n_nonsum = 0;
    int widest = 0;
    for (int k = 0; k < f->n_neurons; k++)
        if (f->agg[k] != OTC_AGG_SUM) {
            f->n_nonsum++;
            if (f->first[k + 1] - f->first[k] > widest) widest = f->first[k + 1] - f->first[k];
        }
    if (widest > f->cap_terms) {
        if (!RESIZE(f->terms, widest) || !RESIZE(f->items, widest)) {
            f->n_neurons = 0;
            return otc_fail(OTC_ERR_NOMEM, "out of memory for a flat program");
        }
        f->cap_terms = widest;
    }
    int n_out = 0;
    for (int i = 0; i < nn; i++)
        if (g->nodes[i].type == OTC_NEAT_OUTPUT) {
            if (n_out == c->num_outputs) break;
            f->out_slot[n_out++] = f->slot[i];
        }
    if (n_out != c->num_outputs) {
        f->n_neurons = 0;
        return otc_fail(OTC_ERR_FORMAT, "genome: %d output node(s), the config says %d", n_out,
                        c->num_outputs);
    }
    f->n_outputs = n_out;
    return OTC_OK;
}

/* Value arrays for `batch` rows, state zero (recurrent), the bias slot 1 in both arrays. */
static otc_status layout(otc_neat_flat *f, int batch) {
    size_t slots = (size_t)f->n_inputs + 1 + (size_t)f->n_neurons, need = slots * (size_t)batch;
    if (need > f->cap_vals) {
        size_t cap = f->cap_vals ? f->cap_vals : 64;
        while (cap < need) cap *= 2;
        if (!resize((void **)&f->cur, cap, sizeof *f->cur) ||
            !resize((void **)&f->prev, cap, sizeof *f->prev))
            return otc_fail(OTC_ERR_NOMEM, "out of memory for a flat program's values");
        f->cap_vals = cap;
    }
    /* Recurrent state starts at zero. A feed-forward forward writes every slot it reads
     * (inputs, then neurons in evaluation order) before reading it: only the bias is set. */
    if (f->recurrent) {
        memset(f->cur, 0, need * sizeof *f->cur);
        memset(f->prev, 0, need * sizeof *f->prev);
    }
    for (int r = 0; r < batch; r++)
        f->cur[(size_t)f->n_inputs * (size_t)batch + (size_t)r] =
            f->prev[(size_t)f->n_inputs * (size_t)batch + (size_t)r] = 1.0f;
    f->batch = batch;
    return OTC_OK;
}

void otc_neat_flat_reset(otc_neat_flat *f) {
    if (f && f->batch > 0) layout(f, f->batch); /* the arrays are there: cannot fail */
}

/* Neuron k's input to its activation, as the Neuron kernel forms it: bias + response * the
 * aggregation (the sum unless the node names another) of its weighted sources in gene
 * order. */
static void neuron_input(const otc_neat_flat *f, int k, const float *read, size_t batch,
                         float *out) {
    const int *src = f->src;
    const float *w = f->w;
    int e0 = f->first[k], e1 = f->first[k + 1];
    float b = f->bias[k], s = f->response[k];
    if (f->agg[k] != OTC_AGG_SUM) {
        for (size_t r = 0; r < batch; r++) {
            for (int e = e0; e < e1; e++)
                f->terms[e - e0] = w[e] * read[(size_t)src[e] * batch + r];
            out[r] = b + s * otc_agg_value(f->agg[k], f->terms, e1 - e0, f->items);
        }
        return;
    }
    if (batch == 1) {
        float acc = 0.0f;
        for (int e = e0; e < e1; e++) acc += w[e] * read[src[e]];
        out[0] = b + s * acc;
        return;
    }
    for (size_t r = 0; r < batch; r++) out[r] = 0.0f;
    for (int e = e0; e < e1; e++) {
        const float *v = read + (size_t)src[e] * batch;
        float we = w[e];
        for (size_t r = 0; r < batch; r++) out[r] += we * v[r];
    }
    for (size_t r = 0; r < batch; r++) out[r] = b + s * out[r];
}

/* CTRNN.advance: `steps` synchronous steps, each reading the previous step's values (inputs
 * held in both arrays); a neuron with no connection in is never evaluated and stays 0, as in
 * neat-python. The newest values end in prev. */
static void ctrnn_forward(otc_neat_flat *f, const float *x, size_t B, float *y) {
    size_t n_in = (size_t)f->n_inputs;
    for (size_t i = 0; i < n_in; i++)
        for (size_t r = 0; r < B; r++) f->cur[i * B + r] = f->prev[i * B + r] = x[r * n_in + i];
    for (int s = 0; s < f->steps; s++) {
        bool last = s + 1 == f->steps;
        for (int k = 0; k < f->n_neurons; k++) {
            if (f->first[k] == f->first[k + 1]) continue;
            size_t at = (n_in + 1 + (size_t)k) * B;
            float *out = f->cur + at;
            const float *was = f->prev + at;
            neuron_input(f, k, f->prev, B, out);
            otc_act_forward_n(f->act[k], f->alpha[k], out, out, B);
            float keep = last ? f->keep_last[k] : f->keep[k],
                  take = last ? f->take_last[k] : f->take[k];
            for (size_t r = 0; r < B; r++) {
                float kept = was[r] * keep, fresh = out[r] * take;
                out[r] = kept + fresh;
            }
        }
        float *t = f->cur;
        f->cur = f->prev;
        f->prev = t;
    }
    for (int o = 0; o < f->n_outputs; o++)
        for (size_t r = 0; r < B; r++)
            y[r * (size_t)f->n_outputs + (size_t)o] = f->prev[(size_t)f->out_slot[o] * B + r];
}

otc_status otc_neat_flat_forward(otc_neat_flat *f, const float *x, int batch, float *y) {
    if (!f || !x || !y || batch < 1)
        return otc_fail(OTC_ERR_ARG, "otc_neat_flat_forward: bad argument (batch %d)", batch);
    if (batch != f->batch) {
        otc_status s = layout(f, batch);
        if (s != OTC_OK) return s;
    }
    size_t B = (size_t)batch, n_in = (size_t)f->n_inputs;
    if (f->ctrnn) {
        ctrnn_forward(f, x, B, y);
        return OTC_OK;
    }
    float *read = f->recurrent ? f->prev : f->cur;
    for (size_t i = 0; i < n_in; i++)
        for (size_t r = 0; r < B; r++) read[i * B + r] = x[r * n_in + i];
    float *base = f->cur + (n_in + 1) * B;
    for (int k = 0; k < f->n_neurons; k++) {
        float *out = base + (size_t)k * B;
        neuron_input(f, k, read, B, out);
        otc_act_forward_n(f->act[k], f->alpha[k], out, out, B);
    }
    for (int o = 0; o < f->n_outputs; o++)
        for (size_t r = 0; r < B; r++)
            y[r * (size_t)f->n_outputs + (size_t)o] = f->cur[(size_t)f->out_slot[o] * B + r];
    if (f->recurrent) {
        float *t = f->cur;
        f->cur = f->prev;
        f->prev = t;
    }
    return OTC_OK;
}

otc_status otc_neat_flat_state(const otc_neat_flat *f, int id, float *out, int cap, int *rows) {
    if (!f || !out || !rows) return otc_fail(OTC_ERR_ARG, "otc_neat_flat_state: NULL argument");
    if (!f->recurrent || f->ctrnn)
        return otc_fail(OTC_ERR_ARG, "otc_neat_flat_state: not a recurrent program");
    int k = 0;
    while (k < f->n_neurons && f->ids[k] != id) k++;
    if (k == f->n_neurons)
        return otc_fail(OTC_ERR_ARG, "otc_neat_flat_state: node %d is not evaluated", id);
    *rows = f->batch;
    if (f->batch > cap) return otc_fail(OTC_ERR_ARG, "otc_neat_flat_state: %d rows", f->batch);
    /* After a step the newest values are in prev (the arrays swap). */
    const float *v = f->prev + (size_t)(f->n_inputs + 1 + k) * (size_t)f->batch;
    for (int r = 0; r < f->batch; r++) out[r] = v[r];
    return OTC_OK;
}
