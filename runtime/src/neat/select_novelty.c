/* Novelty search (Lehman & Stanley 2011): each genome's novelty is the mean distance from its
 * behaviour to its k nearest neighbours among the generation and the archive; a behaviour
 * farther than a threshold from every archived one joins the archive, and the threshold adapts
 * to how often that happens. With the same distance, the diversity objective (Mouret and
 * Doncieux 2012): the mean distance to the whole generation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"

/* Lehman & Stanley's archive rule (their code's noveltyset.h): the threshold falls by 5% once
 * ten generations of 250 have added nothing, and rises by 20% after a generation that added
 * more than ADD_MANY; it never falls below FLOOR_SHARE of where it started (their 0.25 of
 * 6.0). */
#define QUIET_EVALUATIONS 2500
#define ADD_MANY          4
#define FLOOR_SHARE       (0.25 / 6.0)

struct otc_neat_novelty {
    int dim, n, cap;
    float *archive; /* n behaviours of dim numbers */
    double threshold, floor;
    long quiet; /* evaluations since the last addition */
};

void otc_neat_novelty_free(otc_neat_novelty *nv) {
    if (!nv) return;
    free(nv->archive);
    free(nv);
}

const float *otc_neat_novelty_archive(const otc_neat_population *p, int *n, int *dim) {
    const otc_neat_novelty *nv = p ? p->novelty : NULL;
    if (n) *n = nv ? nv->n : 0;
    if (dim) *dim = nv ? nv->dim : 0;
    return nv ? nv->archive : NULL;
}

double otc_neat_novelty_threshold(const otc_neat_population *p) {
    return p && p->novelty ? p->novelty->threshold : NAN;
}

bool otc_neat_novelty_get(const otc_neat_population *p, otc_neat_novelty_state *st) {
    const otc_neat_novelty *nv = p->novelty;
    if (!nv) return false;
    *st =
        (otc_neat_novelty_state){nv->dim, nv->n, nv->archive, nv->threshold, nv->floor, nv->quiet};
    return true;
}

otc_status otc_neat_novelty_set(otc_neat_population *p, const otc_neat_novelty_state *st) {
    otc_neat_novelty *nv = calloc(1, sizeof *nv);
    if (!nv || (st->n > 0 && !otc_neat_grow((void **)&nv->archive, &nv->cap, st->n,
                                            sizeof(float) * (size_t)st->dim))) {
        otc_neat_novelty_free(nv);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for the novelty archive");
    }
    if (st->n > 0) memcpy(nv->archive, st->archive, sizeof(float) * (size_t)st->dim * st->n);
    nv->dim = st->dim, nv->n = st->n;
    nv->threshold = st->threshold, nv->floor = st->floor, nv->quiet = st->quiet;
    otc_neat_novelty_free(p->novelty);
    p->novelty = nv;
    return OTC_OK;
}

/* Lehman & Stanley's behaviour distance: the mean absolute difference of the numbers (their
 * hist_diff), the scale their maze threshold of 6.0 is given in. */
static double bc_distance(const float *a, const float *b, int dim) {
    double d = 0;
    for (int j = 0; j < dim; j++) d += fabs((double)a[j] - b[j]);
    return d / dim;
}

void otc_neat_behaviour_diversity(int n, int dim, const float *bc, double *div) {
    for (int i = 0; i < n; i++) div[i] = 0;
    /* Each pair once, added to both: each sum still runs over its partners in index order, so
     * the values are the same however the generation was evaluated. */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double d = bc_distance(bc + (size_t)i * dim, bc + (size_t)j * dim, dim);
            div[i] += d;
            div[j] += d;
        }
    for (int i = 0; i < n && n > 1; i++) div[i] /= n - 1;
}

otc_status otc_neat_diversity_update(otc_neat_population *p) {
    int n = p->n_genomes;
    if (p->n_behaviours != n || p->behaviour_dim <= 0)
        return otc_fail(OTC_ERR_CONFIG,
                        "[NEAT] objectives: diversity needs a behaviour from every genome, and "
                        "task %s gave none of one size in generation %d",
                        p->task, p->generation);
    double *div = malloc(sizeof *div * (size_t)n);
    if (!div) return otc_fail(OTC_ERR_NOMEM, "out of memory for the diversity objective");
    otc_neat_behaviour_diversity(n, p->behaviour_dim, p->behaviours, div);
    for (int i = 0; i < n; i++) p->genomes[i]->diversity = div[i];
    free(div);
    return OTC_OK;
}

/* The k smallest of d[0 .. n) moved to the front (partial selection sort: k is small). */
static double mean_of_smallest(double *d, int n, int k) {
    if (k > n) k = n;
    double sum = 0;
    for (int a = 0; a < k; a++) {
        int best = a;
        for (int b = a + 1; b < n; b++)
            if (d[b] < d[best]) best = b;
        double t = d[a];
        d[a] = d[best];
        d[best] = t;
        sum += d[a];
    }
    return k > 0 ? sum / k : 0.0;
}

/* Min-max scaled to [0, 1] over the generation (all 1 when every value is equal); with
 * keep_zero the lowest end is 0 rather than the generation's least, so the values keep their
 * proportions (novelty, a distance, is never negative). */
static void scale01(double *x, int n, bool keep_zero) {
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    if (keep_zero) lo = 0;
    for (int i = 0; i < n; i++) x[i] = hi > lo ? (x[i] - lo) / (hi - lo) : 1.0;
}

/* Lehman & Stanley's archive: a behaviour farther than the threshold from every archived one
 * (from the generation's earlier additions too, as their code adds while it evaluates) joins
 * it; the first behaviour of a run seeds it. Returns how many joined. */
static int archive_additions(otc_neat_novelty *nv, otc_neat_population *p) {
    int added = 0, dim = nv->dim;
    for (int i = 0; i < p->n_genomes && nv->n < OTC_NEAT_MAX_ARCHIVE; i++) {
        const float *bi = p->genomes[i]->bc;
        double nearest = INFINITY;
        for (int a = 0; a < nv->n && nearest > nv->threshold; a++) {
            double d = bc_distance(bi, nv->archive + (size_t)a * dim, dim);
            if (d < nearest) nearest = d;
        }
        if (!(nearest > nv->threshold)) continue;
        if (nv->n == nv->cap &&
            !otc_neat_grow((void **)&nv->archive, &nv->cap, nv->n + 1, sizeof(float) * dim))
            break; /* out of memory: the archive stops growing, the run goes on */
        memcpy(nv->archive + (size_t)nv->n * dim, bi, sizeof(float) * dim);
        nv->n++;
        added++;
    }
    return added;
}

otc_status otc_neat_novelty_values(otc_neat_population *p, double default_threshold, long evaluated,
                                   double *val) {
    const otc_neat_config *c = &p->config;
    int n = p->n_genomes, dim = p->genomes[0]->n_bc;
    for (int i = 0; i < n; i++)
        if (p->genomes[i]->n_bc != dim || dim <= 0)
            return otc_fail(OTC_ERR_CONFIG,
                            "[NEAT] selection = novelty: the task gave no behaviour for genome "
                            "%d of generation %d (%d numbers, genome 0 gave %d)",
                            i, p->generation, p->genomes[i]->n_bc, dim);
    otc_neat_novelty *nv = p->novelty;
    if (!nv) {
        if (!(nv = p->novelty = calloc(1, sizeof *nv)))
            return otc_fail(OTC_ERR_NOMEM, "out of memory for the novelty archive");
        nv->dim = dim;
        nv->threshold = c->novelty_threshold > 0 ? c->novelty_threshold : default_threshold;
        nv->floor = nv->threshold * FLOOR_SHARE;
    }
    if (nv->dim != dim)
        return otc_fail(OTC_ERR_FORMAT,
                        "novelty: generation %d's behaviours have %d numbers, earlier ones %d",
                        p->generation, dim, nv->dim);
    /* The archive first, then every novelty against it and the generation (their code: each
     * genome's novelty over the population and the archive once the generation is in). */
    int added = archive_additions(nv, p);
    if (added) {
        nv->quiet = 0;
    } else if ((nv->quiet += evaluated) >= QUIET_EVALUATIONS) {
        nv->quiet = 0;
        nv->threshold *= 0.95;
        if (nv->threshold < nv->floor) nv->threshold = nv->floor;
    }
    if (added > ADD_MANY) nv->threshold *= 1.2;
    int others = n - 1 + nv->n;
    double *d = malloc(sizeof *d * (size_t)(others + 1)), *nov = malloc(sizeof *nov * (size_t)n);
    double *fit = malloc(sizeof *fit * (size_t)n);
    if (!d || !nov || !fit) {
        free(d);
        free(nov);
        free(fit);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for novelty");
    }
    for (int i = 0; i < n; i++) {
        const float *bi = p->genomes[i]->bc;
        int m = 0;
        for (int j = 0; j < n; j++)
            if (j != i) d[m++] = bc_distance(bi, p->genomes[j]->bc, dim);
        for (int a = 0; a < nv->n; a++)
            d[m++] = bc_distance(bi, nv->archive + (size_t)a * dim, dim);
        nov[i] = mean_of_smallest(d, m, c->novelty_k);
        fit[i] = p->genomes[i]->fitness;
    }
    /* The value: novelty_weight of the novelty over the generation's most novel (novelty
     * alone then shares offspring as the raw novelty did in the paper), the rest the fitness
     * scaled to [0, 1]. */
    scale01(nov, n, true);
    scale01(fit, n, false);
    double w = c->novelty_weight;
    for (int i = 0; i < n; i++) val[i] = w * nov[i] + (1 - w) * fit[i];
    free(d);
    free(nov);
    free(fit);
    return OTC_OK;
}
