/* NSGA-II selection: a genome's objectives, Deb et al.'s fast non-dominated sort and crowding
 * distance, and the (rank, crowding) value that replaces fitness in reproduction. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"
#include "otc/hyperneat.h"

double otc_neat_objective_value(otc_neat_objective o, const otc_neat_genome *g) {
    int conns = otc_neat_genome_enabled_count(g);
    int biased = 0; /* outputs and hidden nodes: each carries a bias */
    for (int i = 0; i < g->n_nodes; i++)
        biased += g->nodes[i].type == OTC_NEAT_OUTPUT || g->nodes[i].type == OTC_NEAT_HIDDEN;
    switch (o) {
    case OTC_NEAT_OBJ_FITNESS:
        return g->fitness;
    case OTC_NEAT_OBJ_CONNECTIONS:
        return conns;
    case OTC_NEAT_OBJ_NODES:
        return otc_neat_genome_hidden_count(g);
    case OTC_NEAT_OBJ_PARAMETERS:
        return conns + biased;
    case OTC_NEAT_OBJ_COST:
        return conns + 4.0 * (conns + biased);
    case OTC_NEAT_OBJ_DIVERSITY:
        return g->diversity;
    case OTC_NEAT_OBJ_SUBSTRATE_LINKS:
    case OTC_NEAT_OBJ_SUBSTRATE_LENGTH:
    case OTC_NEAT_OBJ_COUNT:
        break;
    }
    return NAN;
}

double otc_neat_objective_of(const otc_neat_config *c, otc_neat_objective o,
                             const otc_neat_genome *g) {
    if (!otc_neat_objective_paints(o)) return otc_neat_objective_value(o, g);
    if (!c || !c->substrate.enabled) return NAN;
    /* Painted again rather than kept from the evaluation: a paint is a few hundred CPPN
     * queries on the substrates evolution uses, and no evaluation path (threads, the ahead
     * stream, MPI ranks, checkpoints) has to carry the cost. A CPPN that cannot be painted
     * costs the most. */
    otc_substrate *s = NULL;
    double links = INFINITY, length2 = INFINITY;
    if (otc_substrate_from_genome(g, c, 1, NULL, &s) != OTC_OK ||
        otc_substrate_cost(s, &links, &length2) != OTC_OK)
        links = length2 = INFINITY;
    otc_substrate_free(s);
    return o == OTC_NEAT_OBJ_SUBSTRATE_LINKS ? links : length2;
}

int otc_neat_first_cost(const otc_neat_config *c) {
    for (int j = 0; j < c->n_objectives; j++)
        if (!otc_neat_objective_maximised(c->objectives[j])) return j;
    return -1;
}

bool otc_neat_wants_diversity(const otc_neat_config *c) {
    for (int j = 0; j < c->n_objectives; j++)
        if (c->objectives[j] == OTC_NEAT_OBJ_DIVERSITY) return true;
    return false;
}

/* a dominates b over the columns in mask (0: all; all minimised): no worse in each, better in
 * one. */
static bool dominates(const double *a, const double *b, int m, unsigned mask) {
    bool better = false;
    for (int j = 0; j < m; j++) {
        if (mask && (j >= 32 || !(mask >> j & 1))) continue;
        if (a[j] > b[j]) return false;
        if (a[j] < b[j]) better = true;
    }
    return better;
}

int otc_neat_nondominated_sort_stochastic(int n, int m, const double *v, int *rank, double keep,
                                          unsigned always, uint64_t seed) {
    if (n <= 0) return 0;
    /* count[i]: points dominating i; dom: the points each one dominates, n lists of n. */
    int *count = calloc((size_t)n, sizeof *count), *ndom = calloc((size_t)n, sizeof *ndom);
    int *dom = malloc(sizeof *dom * (size_t)n * (size_t)n),
        *front = malloc(sizeof *front * (size_t)n);
    int fronts = -1;
    if (!count || !ndom || !dom || !front) {
        otc_fail(OTC_ERR_NOMEM, "out of memory sorting %d genomes into fronts", n);
        goto done;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            /* Every column when the pair draws them all, else those in `always` (0: all). */
            bool all =
                keep >= 1 ||
                (double)(otc_neat_mix_seed(seed, (uint64_t)i, (uint64_t)j) >> 11) * 0x1p-53 < keep;
            unsigned mask = all ? 0 : always;
            if (dominates(v + (size_t)i * m, v + (size_t)j * m, m, mask)) {
                dom[(size_t)i * n + ndom[i]++] = j;
                count[j]++;
            } else if (dominates(v + (size_t)j * m, v + (size_t)i * m, m, mask)) {
                dom[(size_t)j * n + ndom[j]++] = i;
                count[i]++;
            }
        }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (count[i] == 0) front[k++] = i, rank[i] = 0;
    fronts = 0;
    for (int lo = 0; lo < k; fronts++) {
        int hi = k;
        for (int a = lo; a < hi; a++) {
            int i = front[a];
            for (int d = 0; d < ndom[i]; d++) {
                int j = dom[(size_t)i * n + d];
                if (--count[j] == 0) front[k++] = j, rank[j] = fronts + 1;
            }
        }
        lo = hi;
    }
done:
    free(count);
    free(ndom);
    free(dom);
    free(front);
    return fronts;
}

int otc_neat_nondominated_sort(int n, int m, const double *v, int *rank) {
    return otc_neat_nondominated_sort_stochastic(n, m, v, rank, 1.0, 0, 0);
}

static _Thread_local const double *cmp_v;
static _Thread_local int cmp_m, cmp_j;

/* Objective cmp_j ascending, then index: a total order. */
static int by_objective(const void *a, const void *b) {
    int i = *(const int *)a, k = *(const int *)b;
    double x = cmp_v[(size_t)i * cmp_m + cmp_j], y = cmp_v[(size_t)k * cmp_m + cmp_j];
    if (x != y) return x < y ? -1 : 1;
    return (i > k) - (i < k);
}

otc_status otc_neat_crowding_distance(int k, const int *idx, int m, const double *v, double *dist) {
    for (int a = 0; a < k; a++) dist[idx[a]] = k <= 2 ? INFINITY : 0.0;
    if (k <= 2) return OTC_OK;
    int *order = malloc(sizeof *order * (size_t)k);
    if (!order) return otc_fail(OTC_ERR_NOMEM, "out of memory for crowding distances");
    cmp_v = v;
    cmp_m = m;
    for (int j = 0; j < m; j++) {
        memcpy(order, idx, sizeof *order * (size_t)k);
        cmp_j = j;
        qsort(order, (size_t)k, sizeof *order, by_objective);
        double lo = v[(size_t)order[0] * m + j], hi = v[(size_t)order[k - 1] * m + j];
        dist[order[0]] = dist[order[k - 1]] = INFINITY;
        if (!(hi > lo)) continue; /* every point alike along j: it separates none */
        for (int a = 1; a < k - 1; a++)
            dist[order[a]] +=
                (v[(size_t)order[a + 1] * m + j] - v[(size_t)order[a - 1] * m + j]) / (hi - lo);
    }
    free(order);
    return OTC_OK;
}

/* Measured on XOR over 100 seeds (bench/neat_selection.sh): a discount of 0.97 left nets as
 * large as fitness selection's, 0.9 and below slowed the search by half; 0.95 gave the
 * smallest nets. XOR's fitness ties often (saturated outputs), and crowding, breaking those
 * ties towards each front's ends (its fittest, largest member among them), costs about half a
 * connection there: 7.78 mean enabled connections against 7.29 with ties left to index order;
 * it is NSGA-II's diversity pressure, kept for objectives that do not tie. */
#define RANK_DISCOUNT   0.95
#define CROWDING_WEIGHT 0.01

otc_status otc_neat_nsga2_values(otc_neat_population *p, double *val) {
    const otc_neat_config *c = &p->config;
    int n = p->n_genomes, m = c->n_objectives;
    double *v = malloc(sizeof *v * (size_t)n * (size_t)m), *dist = malloc(sizeof *dist * (size_t)n);
    int *rank = malloc(sizeof *rank * (size_t)n), *idx = malloc(sizeof *idx * (size_t)n);
    otc_status s = OTC_OK;
    if (!v || !dist || !rank || !idx) {
        s = otc_fail(OTC_ERR_NOMEM, "out of memory for NSGA-II selection");
        goto done;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            double x = otc_neat_objective_of(c, c->objectives[j], p->genomes[i]);
            v[(size_t)i * m + j] = otc_neat_objective_maximised(c->objectives[j]) ? -x : x;
        }
    /* Counted in every comparison: the fitness and the diversity (Huizinga et al. 2014 draw
     * only the connection cost's presence, Clune et al. 2013's p). */
    unsigned always = 0;
    for (int j = 0; j < m; j++)
        if (otc_neat_objective_maximised(c->objectives[j])) always |= 1u << j;
    /* The pairs' draws: the run's seed and this generation (the seeds genomes get use the
     * generation and index 1 and up, these generation + 2^32). */
    uint64_t seed = otc_neat_mix_seed(p->seed, (uint64_t)p->generation + (1ull << 32), 0);
    int fronts = otc_neat_nondominated_sort_stochastic(n, m, v, rank, c->objective_probability,
                                                       always, seed);
    if (fronts < 0) {
        s = OTC_ERR_NOMEM;
        goto done;
    }
    for (int f = 0; f < fronts && s == OTC_OK; f++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (rank[i] == f) idx[k++] = i;
        s = otc_neat_crowding_distance(k, idx, m, v, dist);
    }
    /* The value: the fitness above the generation's lowest, discounted by RANK_DISCOUNT per
     * front behind the first, with the crowding distance (scaled to [0, 0.99]) breaking near
     * ties towards lonely points. A pure (rank, crowding) value lets the dominated-but-small
     * nets at the far end of the front take as many offspring as the fittest, and XOR runs
     * then took longer and grew larger nets than selection on fitness alone (docs/selection.md).
     * Above the lowest, not above zero: DPNV's fitness sits on a floor of about 0.1 with gains
     * of a few hundredths, so a discount of the whole value outweighed any gain and two of 27
     * runs did not solve in 200 generations (seeds 2 and 36); XOR is unchanged (200 seeds). */
    double lo = INFINITY;
    for (int i = 0; i < n; i++) lo = fmin(lo, p->genomes[i]->fitness);
    double shift = -lo;
    for (int i = 0; i < n && s == OTC_OK; i++) {
        double crowd = isinf(dist[i]) ? 0.99 : 0.98 * dist[i] / m;
        /* nsga2_value = rank: one per front ahead of the last, crowding within a front (the
         * connection cost technique's selection, where a cheap but unfit network is kept as
         * surely as the fittest) */
        if (c->nsga2_rank) {
            val[i] = (fronts - rank[i]) + crowd;
            continue;
        }
        val[i] = (p->genomes[i]->fitness + shift) * pow(RANK_DISCOUNT, rank[i]) *
                 (1 + CROWDING_WEIGHT * crowd);
    }
done:
    free(v);
    free(dist);
    free(rank);
    free(idx);
    return s;
}
