/* Crossover of two genomes aligned by innovation number, and the compatibility distance that
 * speciation is built on. */
#include <math.h>

#include "neat_internal.h"

/* The fitter parent; on equal fitness the smaller genome, as Stanley's reference code. Its
 * gene set bounds the child's, so a child of acyclic parents is acyclic. */
static bool a_is_fitter(const otc_neat_genome *a, const otc_neat_genome *b) {
    if (a->fitness != b->fitness) return a->fitness > b->fitness;
    return a->n_conns <= b->n_conns;
}

otc_status otc_neat_crossover(const otc_neat_genome *a, const otc_neat_genome *b,
                              const otc_neat_config *c, otc_rng *rng, otc_neat_genome **child) {
    if (!a_is_fitter(a, b)) {
        const otc_neat_genome *tmp = a;
        a = b;
        b = tmp;
    }
    otc_neat_genome *k = otc_neat_genome_new();
    if (!k) return OTC_ERR_NOMEM;
    otc_status s = OTC_OK;
    /* Stanley's mate_multipoint_avg: the whole child averages its matching weights. */
    bool average =
        c->crossover_average_rate > 0 && otc_rng_uniform(rng) < c->crossover_average_rate;
    for (int i = 0; i < a->n_conns && s == OTC_OK; i++) {
        otc_neat_conn gene = a->conns[i];
        const otc_neat_conn *other = otc_neat_genome_find_conn(b, gene.innov);
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
        s = otc_neat_genome_add_conn(k, &gene);
    }
    for (int i = 0; i < a->n_nodes && s == OTC_OK; i++) {
        otc_neat_node node = a->nodes[i];
        const otc_neat_node *other = otc_neat_genome_find_node(b, node.id);
        if (other && node.type != OTC_NEAT_INPUT && node.type != OTC_NEAT_BIAS) {
            if (otc_rng_uniform(rng) < 0.5f) node.bias = other->bias;
            if (otc_rng_uniform(rng) < 0.5f) node.response = other->response;
            if (otc_rng_uniform(rng) < 0.5f) node.act = other->act;
            /* drawn only where the parents differ: equal ones keep every run's stream */
            if (node.agg != other->agg && otc_rng_uniform(rng) < 0.5f) node.agg = other->agg;
        }
        s = otc_neat_genome_add_node(k, &node);
    }
    if (s != OTC_OK) {
        otc_neat_genome_free(k);
        return s;
    }
    k->fitness = 0;
    k->evaluated = false;
    k->species = 0;
    *child = k;
    return OTC_OK;
}

double otc_neat_distance(const otc_neat_genome *a, const otc_neat_genome *b,
                         const otc_neat_config *c) {
    /* Walk both innovation-sorted lists: genes beyond the other genome's last innovation are
     * excess, the other unmatched ones disjoint. */
    int i = 0, j = 0, matching = 0, disjoint = 0, excess = 0;
    double wdiff = 0;
    int a_max = a->n_conns ? a->conns[a->n_conns - 1].innov : -1;
    int b_max = b->n_conns ? b->conns[b->n_conns - 1].innov : -1;
    while (i < a->n_conns || j < b->n_conns) {
        if (i < a->n_conns && j < b->n_conns && a->conns[i].innov == b->conns[j].innov) {
            wdiff += fabs((double)a->conns[i].weight - (double)b->conns[j].weight);
            matching++;
            i++;
            j++;
        } else if (j >= b->n_conns || (i < a->n_conns && a->conns[i].innov < b->conns[j].innov)) {
            if (a->conns[i].innov > b_max)
                excess++;
            else
                disjoint++;
            i++;
        } else {
            if (b->conns[j].innov > a_max)
                excess++;
            else
                disjoint++;
            j++;
        }
    }
    int larger = a->n_conns > b->n_conns ? a->n_conns : b->n_conns;
    double n = larger < c->compatibility_normalize_min_genes || larger == 0 ? 1.0 : larger;
    return c->compatibility_excess_coefficient * excess / n +
           c->compatibility_disjoint_coefficient * disjoint / n +
           c->compatibility_weight_coefficient * (matching ? wdiff / matching : 0.0);
}
