/* Crossover of two genomes aligned by innovation number, and the compatibility distance that
 * speciation is built on. */
#include <math.h>

#include "neat_internal.h"

/* The fitter parent; on equal fitness the smaller genome, as Stanley's reference code. Its
 * gene set bounds the child's, so a child of acyclic parents is acyclic. */
static bool a_is_fitter(const otc_neat_genome *a, const otc_neat_genome *b,
                        const otc_neat_config *c) {
    if (a->fitness != b->fitness || c->np_evolution) return a->fitness > b->fitness;
    return a->n_conns <= b->n_conns;
}

otc_status otc_neat_crossover_into(const otc_neat_genome *a, const otc_neat_genome *b,
                                   const otc_neat_config *c, otc_rng *rng, otc_neat_genome *k) {
    if (!a_is_fitter(a, b, c)) {
        const otc_neat_genome *tmp = a;
        a = b;
        b = tmp;
    }
    /* The child has exactly the fitter parent's genes, in its (sorted) order: its arrays are
     * sized once and filled by walking both parents' sorted lists side by side. */
    k->n_conns = k->n_nodes = 0;
    if (!otc_neat_genome_reserve(k, a->n_nodes, a->n_conns))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a child genome");
    /* Stanley's mate_multipoint_avg: the whole child averages its matching weights. */
    bool average =
        c->crossover_average_rate > 0 && otc_rng_uniform(rng) < c->crossover_average_rate;
    for (int i = 0, j = 0; i < a->n_conns; i++) {
        otc_neat_conn gene = a->conns[i];
        while (j < b->n_conns && b->conns[j].innov < gene.innov) j++;
        const otc_neat_conn *other =
            j < b->n_conns && b->conns[j].innov == gene.innov ? &b->conns[j] : NULL;
        if (other) {
            bool from_other = false;
            if (average)
                gene.weight = 0.5f * (gene.weight + other->weight);
            else if ((from_other = otc_rng_uniform(rng) < 0.5f))
                gene.weight = other->weight;
            if (!gene.enabled || !other->enabled) {
                bool keep = otc_rng_uniform(rng) >= 0.75f;
                if (!c->crossover_disable_stanley)
                    gene.enabled = keep;
                else if (!keep)
                    gene.enabled = false;
                else /* Stanley's: the inherited gene's own state; an averaged gene is enabled */
                    gene.enabled = average || (from_other ? other->enabled : gene.enabled);
            }
        }
        /* A disabled gene from the fitter parent alone keeps its state, as in NEAT. */
        k->conns[k->n_conns++] = gene;
    }
    for (int i = 0, j = 0; i < a->n_nodes; i++) {
        otc_neat_node node = a->nodes[i];
        while (j < b->n_nodes && b->nodes[j].id < node.id) j++;
        const otc_neat_node *other =
            j < b->n_nodes && b->nodes[j].id == node.id ? &b->nodes[j] : NULL;
        if (other && node.type != OTC_NEAT_INPUT && node.type != OTC_NEAT_BIAS) {
            if (otc_rng_uniform(rng) < 0.5f) node.bias = other->bias;
            if (otc_rng_uniform(rng) < 0.5f) node.response = other->response;
            if (otc_rng_uniform(rng) < 0.5f) node.act = other->act;
            /* drawn only where the parents differ: equal ones keep every run's stream */
            if (node.agg != other->agg && otc_rng_uniform(rng) < 0.5f) node.agg = other->agg;
            if (c->ctrnn && otc_rng_uniform(rng) < 0.5f) node.tau = other->tau;
        }
        k->nodes[k->n_nodes++] = node;
    }
    k->fitness = 0;
    k->evaluated = false;
    k->species = 0;
    return OTC_OK;
}

otc_status otc_neat_crossover(const otc_neat_genome *a, const otc_neat_genome *b,
                              const otc_neat_config *c, otc_rng *rng, otc_neat_genome **child) {
    otc_neat_genome *k = otc_neat_genome_new();
    if (!k) return OTC_ERR_NOMEM;
    otc_status s = otc_neat_crossover_into(a, b, c, rng, k);
    if (s != OTC_OK) {
        otc_neat_genome_free(k);
        return s;
    }
    *child = k;
    return OTC_OK;
}

double otc_neat_distance(const otc_neat_genome *a, const otc_neat_genome *b,
                         const otc_neat_config *c) {
    if (c->np_evolution) return otc_neat_np_distance(a, b, c);
    /* Walk both innovation-sorted lists. While both have genes left, an unmatched gene lies
     * below the other genome's current (so its last) innovation: disjoint. Whatever remains of
     * one list once the other is done lies beyond the other's last innovation: excess. */
    const otc_neat_conn *ga = a->conns, *gb = b->conns;
    int na = a->n_conns, nb = b->n_conns, i = 0, j = 0, matching = 0, disjoint = 0;
    double wdiff = 0;
    while (i < na && j < nb) {
        int ia = ga[i].innov, ib = gb[j].innov;
        if (ia == ib) {
            wdiff += fabs((double)ga[i].weight - (double)gb[j].weight);
            matching++;
            i++;
            j++;
        } else {
            disjoint++;
            if (ia < ib)
                i++;
            else
                j++;
        }
    }
    int excess = (na - i) + (nb - j);
    int larger = na > nb ? na : nb;
    double n = larger < c->compatibility_normalize_min_genes || larger == 0 ? 1.0 : larger;
    double d = c->compatibility_excess_coefficient * excess / n +
               c->compatibility_disjoint_coefficient * disjoint / n +
               c->compatibility_weight_coefficient * (matching ? wdiff / matching : 0.0);
    if (!c->ctrnn) return d;
    double tdiff = 0;
    int shared = 0;
    for (int p = 0, q = 0; p < a->n_nodes && q < b->n_nodes;) {
        const otc_neat_node *x = &a->nodes[p], *y = &b->nodes[q];
        if (x->id < y->id) {
            p++;
        } else if (y->id < x->id) {
            q++;
        } else {
            if (x->type == OTC_NEAT_OUTPUT || x->type == OTC_NEAT_HIDDEN) {
                tdiff += fabs((double)x->tau - (double)y->tau);
                shared++;
            }
            p++;
            q++;
        }
    }
    return d + c->compatibility_weight_coefficient * (shared ? tdiff / shared : 0.0);
}
