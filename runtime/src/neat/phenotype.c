/* Genome -> runtime graph of Neuron nodes (and Delay nodes for recurrent genomes), and the
 * way back: trained weights and biases written into the genome (Lamarckian inheritance). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"

void otc_neat_phenotype_free(otc_neat_phenotype *p) {
    if (!p) return;
    for (int i = 0; i < p->n_neurons; i++) free(p->neurons[i].conn_innov);
    free(p->neurons);
    otc_graph_free(p->graph);
    free(p);
}

static bool is_source(const otc_neat_node *n) {
    return n->type == OTC_NEAT_INPUT || n->type == OTC_NEAT_BIAS;
}

typedef struct {
    const otc_neat_genome *g;
    bool *required; /* per node index: can reach an output */
    int *order;     /* node indices of the neurons to build, in build order */
    int n_order;
    otc_id *built; /* per node index: its neuron (or -1) */
    otc_id *delay; /* per node index: its Delay (recurrent) or -1 */
} build_state;

static int node_index(const otc_neat_genome *g, int id) {
    const otc_neat_node *n = otc_neat_genome_find_node(g, id);
    return n ? (int)(n - g->nodes) : -1;
}

/* Backwards from the outputs over enabled connections: what cannot reach an output is not
 * built (it would not change any output). */
static void mark_required(build_state *b) {
    const otc_neat_genome *g = b->g;
    bool changed = true;
    for (int i = 0; i < g->n_nodes; i++) b->required[i] = g->nodes[i].type == OTC_NEAT_OUTPUT;
    while (changed) {
        changed = false;
        for (int i = 0; i < g->n_conns; i++) {
            const otc_neat_conn *c = &g->conns[i];
            if (!c->enabled) continue;
            int a = node_index(g, c->in), o = node_index(g, c->out);
            if (a >= 0 && o >= 0 && b->required[o] && !b->required[a]) {
                b->required[a] = changed = true;
            }
        }
    }
}

/* Feed-forward build order: Kahn's algorithm over the required non-source nodes. */
static otc_status ff_order(build_state *b) {
    const otc_neat_genome *g = b->g;
    int n = g->n_nodes;
    int *indeg = calloc((size_t)n, sizeof *indeg);
    if (!indeg) return otc_fail(OTC_ERR_NOMEM, "out of memory building a phenotype");
    for (int i = 0; i < g->n_conns; i++) {
        const otc_neat_conn *c = &g->conns[i];
        int a = node_index(g, c->in), o = node_index(g, c->out);
        if (c->enabled && b->required[o] && !is_source(&g->nodes[a])) indeg[o]++;
    }
    int head = 0;
    b->n_order = 0;
    for (int i = 0; i < n; i++)
        if (b->required[i] && !is_source(&g->nodes[i]) && !indeg[i]) b->order[b->n_order++] = i;
    while (head < b->n_order) {
        int v = g->nodes[b->order[head++]].id;
        for (int i = 0; i < g->n_conns; i++) {
            const otc_neat_conn *c = &g->conns[i];
            if (!c->enabled || c->in != v) continue;
            int o = node_index(g, c->out);
            if (b->required[o] && --indeg[o] == 0) b->order[b->n_order++] = o;
        }
    }
    int want = 0;
    for (int i = 0; i < n; i++) want += b->required[i] && !is_source(&g->nodes[i]);
    free(indeg);
    if (b->n_order != want)
        return otc_fail(OTC_ERR_CYCLE, "phenotype: the feed-forward genome has a cycle");
    return OTC_OK;
}

static otc_status add_neuron(otc_neat_phenotype *p, build_state *b, int ni, otc_id bias_const,
                             const otc_neat_config *cfg) {
    const otc_neat_genome *g = b->g;
    const otc_neat_node *node = &g->nodes[ni];
    int k = 0;
    for (int i = 0; i < g->n_conns; i++) k += g->conns[i].enabled && g->conns[i].out == node->id;
    otc_id *srcs = malloc(sizeof *srcs * (size_t)(k + 1));
    int *cols = malloc(sizeof *cols * (size_t)(k + 1));
    float *w = malloc(sizeof *w * (size_t)(k + 1));
    int *innov = malloc(sizeof *innov * (size_t)(k + 1));
    if (!srcs || !cols || !w || !innov) {
        free(srcs);
        free(cols);
        free(w);
        free(innov);
        return otc_fail(OTC_ERR_NOMEM, "out of memory building a phenotype");
    }
    k = 0;
    for (int i = 0; i < g->n_conns; i++) {
        const otc_neat_conn *c = &g->conns[i];
        if (!c->enabled || c->out != node->id) continue;
        int si = node_index(g, c->in);
        const otc_neat_node *src = &g->nodes[si];
        cols[k] = 0;
        if (src->type == OTC_NEAT_INPUT) {
            srcs[k] = p->input;
            cols[k] = src->id;
        } else if (src->type == OTC_NEAT_BIAS) {
            srcs[k] = bias_const;
        } else {
            srcs[k] = p->recurrent ? b->delay[si] : b->built[si];
        }
        w[k] = c->weight;
        innov[k] = c->innov;
        k++;
    }
    char name[32];
    if (node->type == OTC_NEAT_OUTPUT) {
        int index = 0;
        for (int i = 0; i < ni; i++) index += g->nodes[i].type == OTC_NEAT_OUTPUT;
        snprintf(name, sizeof name, "out%d", index);
    } else {
        snprintf(name, sizeof name, "h%d", node->id);
    }
    otc_id id = otc_neuron(p->graph, name, node->act, node->bias, node->response, k, srcs, cols, w);
    free(srcs);
    free(cols);
    free(w);
    if (id >= 0 && node->agg != OTC_AGG_SUM && otc_graph_set_agg(p->graph, id, node->agg)) id = -1;
    float alpha = otc_neat_act_alpha(cfg, node->act); /* neat-python's lelu slope, say */
    if (id >= 0 && alpha != otc_act_get(node->act)->default_a &&
        otc_graph_set_alpha(p->graph, id, alpha))
        id = -1;
    if (id < 0) {
        free(innov);
        return otc_fail_context(OTC_ERR_SHAPE, "phenotype: node %d", node->id);
    }
    b->built[ni] = id;
    otc_neat_pheno_neuron *pn = &p->neurons[p->n_neurons++];
    pn->node_id = node->id;
    pn->neuron = id;
    pn->n_weights = k;
    pn->conn_innov = innov;
    return OTC_OK;
}

static otc_status build(otc_neat_phenotype *p, build_state *b, const otc_neat_config *c) {
    const otc_neat_genome *g = b->g;
    int n = g->n_nodes;
    mark_required(b);
    otc_status s;
    if (p->recurrent) {
        b->n_order = 0;
        for (int i = 0; i < n; i++)
            if (b->required[i] && !is_source(&g->nodes[i])) b->order[b->n_order++] = i;
    } else if ((s = ff_order(b)) != OTC_OK) {
        return s;
    }
    p->input = otc_input(p->graph, "x", otc_shape_2d(OTC_BATCH, c->num_inputs));
    if (p->input < 0) return OTC_ERR_SHAPE;
    otc_id bias_const = -1;
    for (int i = 0; i < g->n_conns && bias_const < 0; i++) {
        int a = node_index(g, g->conns[i].in), o = node_index(g, g->conns[i].out);
        if (g->conns[i].enabled && g->nodes[a].type == OTC_NEAT_BIAS && b->required[o]) {
            /* The bias node is a constant 1: a source-less neuron, frozen. */
            bias_const =
                otc_neuron(p->graph, "bias", OTC_ACT_IDENTITY, 1.0f, 1.0f, 0, NULL, NULL, NULL);
            if (bias_const < 0) return OTC_ERR_SHAPE;
            const otc_node *bn = otc_graph_node(p->graph, bias_const);
            otc_graph_set_trainable(p->graph, bn->inputs[0], false);
            otc_graph_set_trainable(p->graph, bn->inputs[1], false);
        }
    }
    if (p->recurrent) {
        for (int k = 0; k < b->n_order; k++) {
            char name[32];
            snprintf(name, sizeof name, "d%d", g->nodes[b->order[k]].id);
            b->delay[b->order[k]] = otc_delay(p->graph, name, otc_shape_2d(OTC_BATCH, 1));
            if (b->delay[b->order[k]] < 0) return OTC_ERR_SHAPE;
        }
    }
    for (int k = 0; k < b->n_order; k++)
        if ((s = add_neuron(p, b, b->order[k], bias_const, c)) != OTC_OK) return s;
    for (int i = 0; i < n; i++)
        if (g->nodes[i].type == OTC_NEAT_OUTPUT &&
            (s = otc_graph_mark_output(p->graph, b->built[i])) != OTC_OK)
            return s;
    if (p->recurrent)
        for (int k = 0; k < b->n_order; k++) {
            int ni = b->order[k];
            if ((s = otc_graph_set_input(p->graph, b->delay[ni], 0, b->built[ni])) != OTC_OK)
                return s;
        }
    return OTC_OK;
}

otc_status otc_neat_phenotype_build(const otc_neat_genome *g, const otc_neat_config *c,
                                    otc_neat_phenotype **out) {
    if (!g || !c || !out) return otc_fail(OTC_ERR_ARG, "otc_neat_phenotype_build: NULL argument");
    int n = g->n_nodes;
    otc_neat_phenotype *p = calloc(1, sizeof *p);
    build_state b = {.g = g};
    if (p) {
        p->graph = otc_graph_new();
        p->neurons = calloc((size_t)n + 1, sizeof *p->neurons);
    }
    b.required = calloc((size_t)n + 1, sizeof *b.required);
    b.order = malloc(sizeof *b.order * ((size_t)n + 1));
    b.built = malloc(sizeof *b.built * ((size_t)n + 1));
    b.delay = malloc(sizeof *b.delay * ((size_t)n + 1));
    otc_status s = OTC_OK;
    if (!p || !p->graph || !p->neurons || !b.required || !b.order || !b.built || !b.delay) {
        s = otc_fail(OTC_ERR_NOMEM, "out of memory building a phenotype");
    } else {
        for (int i = 0; i < n; i++) b.built[i] = b.delay[i] = -1;
        p->n_inputs = c->num_inputs;
        p->n_outputs = c->num_outputs;
        p->recurrent = !c->feed_forward || c->ctrnn;
        s = c->ctrnn ? otc_neat_ctrnn_phenotype(g, c, p) : build(p, &b, c);
    }
    free(b.required);
    free(b.order);
    free(b.built);
    free(b.delay);
    if (s != OTC_OK) {
        otc_neat_phenotype_free(p);
        return s;
    }
    *out = p;
    return OTC_OK;
}

otc_status otc_neat_phenotype_write_back(const otc_neat_phenotype *p, otc_neat_genome *g,
                                         const otc_neat_config *c) {
    for (int i = 0; i < p->n_neurons; i++) {
        const otc_neat_pheno_neuron *pn = &p->neurons[i];
        const otc_node *nd = otc_graph_node(p->graph, pn->neuron);
        const otc_tensor *w = otc_graph_param(p->graph, nd->inputs[0]);
        const otc_tensor *b = otc_graph_param(p->graph, nd->inputs[1]);
        otc_neat_node *node = otc_neat_genome_find_node(g, pn->node_id);
        if (!w || !b || !node)
            return otc_fail(OTC_ERR_ARG, "write back: phenotype does not match the genome");
        node->bias = otc_neat_attr_clamp(&c->bias, b->data[0]);
        for (int k = 0; k < pn->n_weights; k++) {
            otc_neat_conn *cn = otc_neat_genome_find_conn(g, pn->conn_innov[k]);
            if (!cn)
                return otc_fail(OTC_ERR_ARG, "write back: connection %d missing",
                                pn->conn_innov[k]);
            cn->weight = otc_neat_attr_clamp(&c->weight, w->data[k]);
        }
    }
    return OTC_OK;
}
