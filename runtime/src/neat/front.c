/* A run's Pareto front: copies of the evaluated genomes no other evaluated genome dominates
 * over the config's objectives, kept across generations, and the knee among them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"

typedef struct {
    otc_neat_genome *g;
    int generation;
    double v[OTC_NEAT_MAX_OBJECTIVES]; /* in their own sense */
} front_member;

struct otc_neat_front {
    int n;
    front_member m[OTC_NEAT_MAX_FRONT];
};

void otc_neat_front_free(otc_neat_front *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) otc_neat_genome_free(f->m[i].g);
    free(f);
}

static int fitness_objective(const otc_neat_config *c) {
    for (int j = 0; j < c->n_objectives; j++)
        if (c->objectives[j] == OTC_NEAT_OBJ_FITNESS) return j;
    return -1;
}

otc_status otc_neat_track_front(otc_neat_population *p) {
    if (!p) return otc_fail(OTC_ERR_ARG, "otc_neat_track_front: NULL population");
    if (fitness_objective(&p->config) < 0)
        return otc_fail(OTC_ERR_CONFIG, "[NEAT] objectives: a front needs fitness among them");
    if (!p->front && !(p->front = calloc(1, sizeof *p->front)))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for the Pareto front");
    return OTC_OK;
}

/* The first objective that is a cost (the front's cost axis); fitness when none is. */
static int other_objective(const otc_neat_config *c) {
    int j = otc_neat_first_cost(c);
    return j >= 0 ? j : fitness_objective(c);
}

/* -1: a dominates b, 1: b dominates a, 2: equal, 0: neither (objectives in their own sense). */
static int compare(const otc_neat_config *c, const double *a, const double *b) {
    bool a_better = false, b_better = false;
    for (int j = 0; j < c->n_objectives; j++) {
        double x = a[j], y = b[j];
        if (otc_neat_objective_maximised(c->objectives[j])) x = -x, y = -y;
        if (x < y) a_better = true;
        if (y < x) b_better = true;
    }
    if (a_better && !b_better) return -1;
    if (b_better && !a_better) return 1;
    return a_better ? 0 : 2;
}

/* g (owned) into f at its place: in order of the first objective other than fitness, then
 * fitness down, the order the files list them in. f has room. */
static void insert(const otc_neat_config *c, otc_neat_front *f, otc_neat_genome *g, int generation,
                   const double *v) {
    int x = other_objective(c), fi = fitness_objective(c), at = f->n;
    for (int k = 0; k < f->n; k++)
        if (v[x] < f->m[k].v[x] || (v[x] == f->m[k].v[x] && v[fi] > f->m[k].v[fi])) {
            at = k;
            break;
        }
    memmove(&f->m[at + 1], &f->m[at], sizeof *f->m * (size_t)(f->n - at));
    f->n++;
    front_member *m = &f->m[at];
    m->g = g;
    m->generation = generation;
    memcpy(m->v, v, sizeof m->v);
}

otc_status otc_neat_front_offer(otc_neat_population *p, const otc_neat_genome *g) {
    otc_neat_front *f = p->front;
    if (!f) return OTC_OK;
    const otc_neat_config *c = &p->config;
    double v[OTC_NEAT_MAX_OBJECTIVES];
    for (int j = 0; j < c->n_objectives; j++) v[j] = otc_neat_objective_of(c, c->objectives[j], g);
    if (!isfinite(v[fitness_objective(c)])) return OTC_OK;
    for (int k = 0; k < f->n; k++) {
        int r = compare(c, f->m[k].v, v);
        if (r == -1 || r == 2) return OTC_OK; /* beaten */
    }
    int kept = 0; /* members g dominates leave (in order, so the front stays sorted) */
    for (int k = 0; k < f->n; k++) {
        if (compare(c, v, f->m[k].v) == -1)
            otc_neat_genome_free(f->m[k].g);
        else
            f->m[kept++] = f->m[k];
    }
    f->n = kept;
    if (f->n == OTC_NEAT_MAX_FRONT) return OTC_OK;
    otc_neat_genome *copy = otc_neat_genome_copy(g);
    if (!copy) return otc_fail(OTC_ERR_NOMEM, "out of memory for the Pareto front");
    insert(c, f, copy, p->generation, v);
    return OTC_OK;
}

otc_status otc_neat_front_update(otc_neat_population *p) {
    otc_status s = OTC_OK;
    for (int i = 0; i < p->n_genomes && s == OTC_OK; i++)
        s = otc_neat_front_offer(p, p->genomes[i]);
    return s;
}

otc_status otc_neat_front_restore(otc_neat_population *p, otc_neat_genome *g, int generation,
                                  const double *v) {
    otc_status s = otc_neat_track_front(p);
    if (s == OTC_OK && p->front->n == OTC_NEAT_MAX_FRONT)
        s = otc_fail(OTC_ERR_FORMAT, "front: more than %d members", OTC_NEAT_MAX_FRONT);
    if (s != OTC_OK) {
        otc_neat_genome_free(g);
        return s;
    }
    double w[OTC_NEAT_MAX_OBJECTIVES] = {0};
    memcpy(w, v, sizeof *w * (size_t)p->config.n_objectives);
    insert(&p->config, p->front, g, generation, w);
    return OTC_OK;
}

int otc_neat_front_size(const otc_neat_population *p) {
    return p && p->front ? p->front->n : 0;
}

const otc_neat_genome *otc_neat_front_genome(const otc_neat_population *p, int i) {
    return i >= 0 && i < otc_neat_front_size(p) ? p->front->m[i].g : NULL;
}

const double *otc_neat_front_values(const otc_neat_population *p, int i) {
    return i >= 0 && i < otc_neat_front_size(p) ? p->front->m[i].v : NULL;
}

int otc_neat_front_generation(const otc_neat_population *p, int i) {
    return i >= 0 && i < otc_neat_front_size(p) ? p->front->m[i].generation : -1;
}

int otc_neat_knee(int n, const double *fitness, const double *cost) {
    if (n <= 0) return -1;
    int best = 0; /* the fittest, then the earliest */
    for (int i = 1; i < n; i++)
        if (fitness[i] > fitness[best]) best = i;
    double flo = INFINITY, fhi = -INFINITY, clo = INFINITY, chi = -INFINITY;
    for (int i = 0; i < n; i++) {
        flo = fmin(flo, fitness[i]), fhi = fmax(fhi, fitness[i]);
        clo = fmin(clo, cost[i]), chi = fmax(chi, cost[i]);
    }
    if (!(fhi > flo) || !(chi > clo)) return best;
    /* In scaled terms, fitness up and cost down are both towards 1: the ends are (1, 0) (the
     * fittest) and (0, 1) (the cheapest), and the knee bulges most beyond the line x + y = 1.
     * Only a member beyond the line displaces the fittest: the cheapest end lies on it, and a
     * front that sags below it (fitness bought dearly all along) has no knee but its top;
     * with any bulge, its member is at least as fit, scaled, as it is cheap short of 1. */
    int knee = best;
    double most = 1e-12;
    for (int i = 0; i < n; i++) {
        double x = (fitness[i] - flo) / (fhi - flo), y = (chi - cost[i]) / (chi - clo);
        double bulge = x + y - 1;
        if (bulge > most) most = bulge, knee = i;
    }
    return knee;
}

int otc_neat_front_knee(const otc_neat_population *p) {
    int n = otc_neat_front_size(p);
    if (n == 0) return -1;
    const otc_neat_config *c = &p->config;
    int fi = fitness_objective(c), ci = other_objective(c);
    double *fit = malloc(sizeof *fit * (size_t)n), *cost = malloc(sizeof *cost * (size_t)n);
    int knee = 0;
    if (fit && cost) {
        for (int i = 0; i < n; i++) fit[i] = p->front->m[i].v[fi], cost[i] = p->front->m[i].v[ci];
        knee = otc_neat_knee(n, fit, cost);
    } else { /* out of memory: the fittest */
        for (int i = 1; i < n; i++)
            if (p->front->m[i].v[fi] > p->front->m[knee].v[fi]) knee = i;
    }
    free(fit);
    free(cost);
    return knee;
}
