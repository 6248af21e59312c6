/* NEAT mutations: add node (split a connection), add connection (acyclic when feed-forward),
 * delete node/connection, and the per-gene attribute mutations, as neat-python's mutate(). */
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"

static bool is_source(const otc_neat_node *n) {
    return n->type == OTC_NEAT_INPUT || n->type == OTC_NEAT_BIAS;
}

static bool from_bias(const otc_neat_genome *g, int i) {
    const otc_neat_node *src = otc_neat_genome_find_node(g, g->conns[i].in);
    return !src || src->type == OTC_NEAT_BIAS;
}

static bool splittable(const otc_neat_genome *g, int i) {
    return g->conns[i].enabled && !from_bias(g, i);
}

otc_status otc_neat_mutate_add_node(otc_neat_genome *g, const otc_neat_config *c,
                                    otc_neat_innovations *t, otc_rng *rng) {
    /* Split an enabled connection, never one from the bias node (as Stanley's code): a node
     * fed only by a constant is a constant. */
    int n_cand = 0;
    for (int i = 0; i < g->n_conns; i++) n_cand += splittable(g, i);
    if (c->np_evolution) n_cand = g->n_conns; /* neat-python splits any, even disabled ones */
    if (!n_cand) {
        if (c->np_evolution && c->structural_mutation_surer)
            return otc_neat_mutate_add_conn(g, c, t, rng);
        return OTC_OK;
    }
    int ci = -1;
    if (c->np_evolution) {
        ci = (int)otc_rng_below(rng, (uint32_t)n_cand);
    } else if (c->node_add_prefer_old && g->n_conns < 15) {
        /* Stanley's walk (NEAT's mutate_add_node for genomes of < 15 genes): start at the
         * oldest splittable gene and move on with probability 0.3 (always past bias genes),
         * so the oldest connections are split most and splits do not chain onto the newest
         * genes. Stopping on a disabled gene or running off the end splits nothing. */
        int i = 0;
        while (i < g->n_conns && !splittable(g, i)) i++;
        while (i < g->n_conns && (from_bias(g, i) || otc_rng_uniform(rng) < 0.3)) i++;
        if (i >= g->n_conns || !g->conns[i].enabled) return OTC_OK;
        ci = i;
    } else {
        int pick = (int)otc_rng_below(rng, (uint32_t)n_cand);
        for (int i = 0; i < g->n_conns && ci < 0; i++)
            if (splittable(g, i) && pick-- == 0) ci = i;
    }
    otc_neat_conn old = g->conns[ci];
    int id = otc_neat_innovation_split(t, old.innov, false);
    /* neat-python: a genome that already has this split's node (from crossover) is left as is */
    if (id >= 0 && c->np_evolution && otc_neat_genome_find_node(g, id)) return OTC_OK;
    if (id >= 0 && otc_neat_genome_find_node(g, id))
        id = otc_neat_innovation_split(t, old.innov, true);
    if (id < 0) return otc_fail(OTC_ERR_NOMEM, "out of memory for innovations");
    otc_act act = otc_neat_new_act(c, rng);
    int agg = otc_neat_new_agg(c, rng);
    otc_neat_node node = {id,
                          OTC_NEAT_HIDDEN,
                          act,
                          otc_neat_attr_init(&c->bias, rng),
                          otc_neat_attr_init(&c->response, rng),
                          agg,
                          1};
    node.tau = otc_neat_new_tau(c, rng);
    if (c->np_evolution) node.bias = 0; /* neat-python: as neutral as it can be */
    otc_status s = otc_neat_genome_add_node(g, &node);
    if (s != OTC_OK) return s;
    g->conns[ci].enabled = false;
    int i1 = otc_neat_innovation_conn(t, old.in, id), i2 = otc_neat_innovation_conn(t, id, old.out);
    if (i1 < 0 || i2 < 0) return otc_fail(OTC_ERR_NOMEM, "out of memory for innovations");
    /* in-weight 1 and out-weight the old weight: the network computes nearly what it did. */
    otc_neat_conn a = {i1, old.in, id, 1.0f, true}, b = {i2, id, old.out, old.weight, true};
    s = otc_neat_genome_add_conn(g, &a);
    if (s == OTC_OK) s = otc_neat_genome_add_conn(g, &b);
    return s;
}

/* neat-python's mutate_add_connection: one try, a destination among the output and hidden
 * nodes, a source among the input and hidden nodes; an existing pair is re-enabled under
 * structural_mutation_surer. */
static otc_status np_add_conn(otc_neat_genome *g, const otc_neat_config *c, otc_neat_innovations *t,
                              otc_rng *rng) {
    int n = g->n_nodes, n_dst = 0;
    for (int i = 0; i < n; i++) n_dst += !is_source(&g->nodes[i]);
    int n_src = n - n_dst + otc_neat_genome_hidden_count(g);
    if (!n_dst || !n_src) return OTC_OK;
    int k = (int)otc_rng_below(rng, (uint32_t)n_dst), j = (int)otc_rng_below(rng, (uint32_t)n_src);
    const otc_neat_node *a = NULL, *b = NULL;
    for (int i = 0; i < n; i++) {
        const otc_neat_node *x = &g->nodes[i];
        if (!is_source(x) && k-- == 0) b = x;
        if (x->type != OTC_NEAT_OUTPUT && j-- == 0) a = x;
    }
    otc_neat_conn *old = otc_neat_genome_find_pair(g, a->id, b->id);
    if (old) {
        if (c->structural_mutation_surer) old->enabled = true;
        return OTC_OK;
    }
    if (c->feed_forward && otc_neat_creates_cycle(g, a->id, b->id)) return OTC_OK;
    int innov = otc_neat_innovation_conn(t, a->id, b->id);
    if (innov < 0) return otc_fail(OTC_ERR_NOMEM, "out of memory for innovations");
    otc_neat_conn conn = {innov, a->id, b->id, otc_neat_attr_init(&c->weight, rng),
                          c->enabled_default};
    return otc_neat_genome_add_conn(g, &conn);
}

otc_status otc_neat_mutate_add_conn(otc_neat_genome *g, const otc_neat_config *c,
                                    otc_neat_innovations *t, otc_rng *rng) {
    if (c->np_evolution) return np_add_conn(g, c, t, rng);
    int n = g->n_nodes, n_dst = 0;
    for (int i = 0; i < n; i++) n_dst += !is_source(&g->nodes[i]);
    if (!n_dst) return OTC_OK;
    /* Stanley's recur_only_prob: decide up front whether this new link is a loop or not. */
    int want_loop = -1;
    if (!c->feed_forward && c->conn_add_recurrent_prob >= 0)
        want_loop = otc_rng_uniform(rng) < c->conn_add_recurrent_prob;
    for (int attempt = 0; attempt < c->conn_add_attempts; attempt++) {
        const otc_neat_node *a = &g->nodes[otc_rng_below(rng, (uint32_t)n)];
        int k = (int)otc_rng_below(rng, (uint32_t)n_dst);
        const otc_neat_node *b = NULL;
        for (int i = 0; i < n && !b; i++)
            if (!is_source(&g->nodes[i]) && k-- == 0) b = &g->nodes[i];
        if (want_loop == 1 && otc_rng_uniform(rng) < 0.5) a = b; /* the reference's self-loops */
        if (c->feed_forward) {
            /* Outputs feed nothing in a feed-forward net; anything else must stay acyclic. */
            if (a->type == OTC_NEAT_OUTPUT) continue;
            if (otc_neat_creates_cycle(g, a->id, b->id)) continue;
        } else if (want_loop >= 0 && otc_neat_creates_cycle(g, a->id, b->id) != (want_loop == 1)) {
            continue;
        }
        if (otc_neat_genome_find_pair(g, a->id, b->id)) continue;
        int innov = otc_neat_innovation_conn(t, a->id, b->id);
        if (innov < 0) return otc_fail(OTC_ERR_NOMEM, "out of memory for innovations");
        otc_neat_conn conn = {innov, a->id, b->id, otc_neat_attr_init(&c->weight, rng), true};
        return otc_neat_genome_add_conn(g, &conn);
    }
    return OTC_OK;
}

static void remove_conn_at(otc_neat_genome *g, int i) {
    memmove(g->conns + i, g->conns + i + 1, sizeof *g->conns * (size_t)(g->n_conns - i - 1));
    g->n_conns--;
}

/* neat-python's _prune_dangling_nodes: hidden nodes with no enabled path to an output go,
 * with their connections. */
void otc_neat_prune_dangling(otc_neat_genome *g) {
    bool *need = calloc((size_t)g->n_nodes + 1, sizeof *need);
    if (!need) return; /* pruning is tidying: without memory the genome stays as it is */
    for (int i = 0; i < g->n_nodes; i++) need[i] = g->nodes[i].type != OTC_NEAT_HIDDEN;
    for (bool grew = true; grew;) { /* backwards from the outputs, one layer per pass */
        grew = false;
        for (int k = 0; k < g->n_conns; k++) {
            const otc_neat_conn *cn = &g->conns[k];
            if (!cn->enabled) continue;
            int src = -1, dst = -1;
            for (int i = 0; i < g->n_nodes; i++) {
                if (g->nodes[i].id == cn->in) src = i;
                if (g->nodes[i].id == cn->out) dst = i;
            }
            bool dst_live =
                dst >= 0 && need[dst] &&
                (g->nodes[dst].type == OTC_NEAT_OUTPUT || g->nodes[dst].type == OTC_NEAT_HIDDEN);
            if (src >= 0 && dst_live && !need[src]) need[src] = grew = true;
        }
    }
    int kept = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (need[i]) {
            g->nodes[kept++] = g->nodes[i];
            continue;
        }
        int id = g->nodes[i].id;
        for (int k = g->n_conns - 1; k >= 0; k--)
            if (g->conns[k].in == id || g->conns[k].out == id) remove_conn_at(g, k);
    }
    g->n_nodes = kept;
    free(need);
}

void otc_neat_mutate_delete_node(otc_neat_genome *g, otc_rng *rng) {
    int n_hidden = otc_neat_genome_hidden_count(g);
    if (!n_hidden) return;
    int k = (int)otc_rng_below(rng, (uint32_t)n_hidden), at = -1;
    for (int i = 0; i < g->n_nodes && at < 0; i++)
        if (g->nodes[i].type == OTC_NEAT_HIDDEN && k-- == 0) at = i;
    int id = g->nodes[at].id;
    for (int i = g->n_conns - 1; i >= 0; i--)
        if (g->conns[i].in == id || g->conns[i].out == id) remove_conn_at(g, i);
    memmove(g->nodes + at, g->nodes + at + 1, sizeof *g->nodes * (size_t)(g->n_nodes - at - 1));
    g->n_nodes--;
}

void otc_neat_mutate_delete_conn(otc_neat_genome *g, otc_rng *rng) {
    if (g->n_conns) remove_conn_at(g, (int)otc_rng_below(rng, (uint32_t)g->n_conns));
}

/* One weight under Stanley's mutate_link_weights (rate 1.0, GAUSSIAN mode, which despite its
 * name draws uniformly): a severe pass perturbs 70% and replaces 20% of the weights; otherwise
 * the newest 20% of a genome of 10+ genes are perturbed 50% / replaced 20%, the rest always
 * perturbed. */
static float stanley_weight(const otc_neat_config *c, float w, bool severe, int index, int n_genes,
                            otc_rng *rng) {
    double perturb_above = 0, replace_above = 0; /* r > perturb_above: perturb, etc. */
    if (severe) {
        perturb_above = 0.3;
        replace_above = 0.1;
    } else if (n_genes >= 10 && index > 0.8 * n_genes) {
        perturb_above = 0.5;
        replace_above = 0.3;
    }
    double step = (2.0 * otc_rng_uniform(rng) - 1.0) * c->weight.mutate_power;
    double r = otc_rng_uniform(rng);
    if (r > perturb_above) return otc_neat_attr_clamp(&c->weight, w + step);
    if (r > replace_above) return otc_neat_attr_clamp(&c->weight, step);
    return w;
}

void otc_neat_mutate_attributes(otc_neat_genome *g, const otc_neat_config *c, otc_rng *rng) {
    for (int i = 0; i < g->n_nodes; i++) {
        otc_neat_node *n = &g->nodes[i];
        if (is_source(n)) continue;
        n->bias = otc_neat_attr_mutate(&c->bias, n->bias, rng);
        n->response = otc_neat_attr_mutate(&c->response, n->response, rng);
        if (c->ctrnn) n->tau = otc_neat_attr_mutate(&c->time_constant, n->tau, rng);
        if (c->activation_mutate_rate > 0 && otc_rng_uniform(rng) < c->activation_mutate_rate)
            n->act = c->activation_options[otc_rng_below(rng, (uint32_t)c->n_activation_options)];
        if (c->aggregation_mutate_rate > 0 && otc_rng_uniform(rng) < c->aggregation_mutate_rate)
            n->agg = c->aggregation_options[otc_rng_below(rng, (uint32_t)c->n_aggregation_options)];
    }
    /* The NEAT paper's gate: a child's weights are mutated at all with this probability. */
    bool weights =
        c->weight_mutate_genome_rate >= 1.0 || otc_rng_uniform(rng) < c->weight_mutate_genome_rate;
    bool severe = weights && c->weight_mutate_stanley && otc_rng_uniform(rng) < 0.5;
    for (int i = 0; i < g->n_conns; i++) {
        otc_neat_conn *cn = &g->conns[i];
        if (weights && c->weight_mutate_stanley)
            cn->weight = stanley_weight(c, cn->weight, severe, i, g->n_conns, rng);
        else if (weights)
            cn->weight = otc_neat_attr_mutate(&c->weight, cn->weight, rng);
        double rate = c->enabled_mutate_rate +
                      (cn->enabled ? c->enabled_rate_to_false_add : c->enabled_rate_to_true_add);
        /* neat-python's BoolAttribute: with probability rate, a fresh coin flip. */
        if (rate > 0 && otc_rng_uniform(rng) < rate) cn->enabled = otc_rng_uniform(rng) < 0.5f;
    }
}

void otc_neat_mutate_toggle_enable(otc_neat_genome *g, otc_rng *rng) {
    if (g->n_conns <= 0) return;
    otc_neat_conn *cn = &g->conns[otc_rng_below(rng, (uint32_t)g->n_conns)];
    if (!cn->enabled) {
        cn->enabled = true;
        return;
    }
    for (int i = 0; i < g->n_conns; i++) {
        const otc_neat_conn *o = &g->conns[i];
        if (o != cn && o->enabled && o->in == cn->in) {
            cn->enabled = false;
            return;
        }
    }
}

void otc_neat_mutate_reenable(otc_neat_genome *g) {
    for (int i = 0; i < g->n_conns; i++) /* innovation order: the oldest first */
        if (!g->conns[i].enabled) {
            g->conns[i].enabled = true;
            return;
        }
}

otc_status otc_neat_mutate(otc_neat_genome *g, const otc_neat_config *c, otc_neat_innovations *t,
                           otc_rng *rng) {
    otc_status s = OTC_OK;
    int n_nodes0 = g->n_nodes, n_conns0 = g->n_conns;
    bool deleted = false;
    if (c->single_structural_mutation) {
        double sum =
            c->node_add_prob + c->node_delete_prob + c->conn_add_prob + c->conn_delete_prob;
        double div = sum > 1.0 ? sum : 1.0, r = otc_rng_uniform(rng);
        if (r < c->node_add_prob / div) {
            int before = g->n_nodes;
            s = otc_neat_mutate_add_node(g, c, t, rng);
            if (s == OTC_OK && g->n_nodes == before && c->structural_mutation_surer)
                s = otc_neat_mutate_add_conn(g, c, t, rng);
        } else if (r < (c->node_add_prob + c->node_delete_prob) / div) {
            otc_neat_mutate_delete_node(g, rng), deleted = true;
        } else if (r < (c->node_add_prob + c->node_delete_prob + c->conn_add_prob) / div) {
            s = otc_neat_mutate_add_conn(g, c, t, rng);
        } else if (r < sum / div) {
            otc_neat_mutate_delete_conn(g, rng), deleted = true;
        }
    } else {
        if (otc_rng_uniform(rng) < c->node_add_prob) {
            int before = g->n_nodes;
            s = otc_neat_mutate_add_node(g, c, t, rng);
            if (s == OTC_OK && g->n_nodes == before && c->structural_mutation_surer)
                s = otc_neat_mutate_add_conn(g, c, t, rng);
        }
        if (s == OTC_OK && otc_rng_uniform(rng) < c->node_delete_prob)
            otc_neat_mutate_delete_node(g, rng), deleted = true;
        if (s == OTC_OK && otc_rng_uniform(rng) < c->conn_add_prob)
            s = otc_neat_mutate_add_conn(g, c, t, rng);
        if (s == OTC_OK && otc_rng_uniform(rng) < c->conn_delete_prob)
            otc_neat_mutate_delete_conn(g, rng), deleted = true;
    }
    if (s != OTC_OK) return s;
    if (deleted && c->np_evolution) otc_neat_prune_dangling(g);
    /* The NEAT paper's code mutates either the structure or the weights of a child, which
     * keeps a new node from arriving together with a weight change that hides its value. */
    bool structural = g->n_nodes != n_nodes0 || g->n_conns != n_conns0;
    if (!(c->structural_mutation_exclusive && structural)) {
        otc_neat_mutate_attributes(g, c, rng);
        /* No draw when off, so configs without these keys keep their random streams. */
        if (c->conn_toggle_prob > 0 && otc_rng_uniform(rng) < c->conn_toggle_prob)
            otc_neat_mutate_toggle_enable(g, rng);
        if (c->conn_reenable_prob > 0 && otc_rng_uniform(rng) < c->conn_reenable_prob)
            otc_neat_mutate_reenable(g);
    }
    g->evaluated = false;
    g->fitness = 0;
    return OTC_OK;
}
