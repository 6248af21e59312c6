/* Speciation: genomes join the first species whose representative is within the
 * compatibility threshold, else found a new one; the threshold may adapt towards a target
 * species count. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"

void otc_neat_species_clear(otc_neat_species *s) {
    otc_neat_genome_free(s->representative);
    free(s->members);
    memset(s, 0, sizeof *s);
}

int otc_neat_species_add(otc_neat_population *p, int id, const otc_neat_genome *rep, int created) {
    if (p->n_species == p->cap_species) {
        int cap = p->cap_species ? p->cap_species * 2 : 16;
        otc_neat_species *sp = realloc(p->species, sizeof *sp * (size_t)cap);
        if (!sp) {
            otc_fail(OTC_ERR_NOMEM, "out of memory for species");
            return -1;
        }
        p->species = sp;
        p->cap_species = cap;
    }
    otc_neat_species *s = &p->species[p->n_species];
    memset(s, 0, sizeof *s);
    s->id = id;
    s->created = s->last_improved = created;
    s->fitness = 0;
    s->best_fitness = -INFINITY;
    s->confirm_best = -INFINITY;
    s->confirm_checked = false;
    /* A retired species' memory when there is some (steady state allocates nothing). */
    s->representative = otc_neat_spare_genome(p);
    if (s->representative && otc_neat_genome_copy_into(s->representative, rep) != OTC_OK) {
        otc_neat_genome_free(s->representative);
        s->representative = NULL;
    }
    int need = p->n_genomes + 1;
    if (p->n_spare_members && p->members_cap >= need)
        s->members = p->spare_members[--p->n_spare_members];
    else
        s->members =
            malloc(sizeof *s->members * (size_t)(need > p->members_cap ? need : p->members_cap));
    if (!s->representative || !s->members) {
        otc_neat_species_clear(s);
        otc_fail(OTC_ERR_NOMEM, "out of memory for species");
        return -1;
    }
    return p->n_species++;
}

void otc_neat_species_retire(otc_neat_population *p, otc_neat_species *s) {
    otc_neat_recycle(p, s->representative);
    if (s->members && p->n_spare_members == p->cap_spare_members)
        otc_neat_grow((void **)&p->spare_members, &p->cap_spare_members, p->n_spare_members + 1,
                      sizeof *p->spare_members);
    if (s->members && p->n_spare_members < p->cap_spare_members)
        p->spare_members[p->n_spare_members++] = s->members;
    else
        free(s->members);
    memset(s, 0, sizeof *s);
}

/* Every species' member array (and every spare one) holds need entries: the population's
 * size may have changed (a checkpoint, or a first generation). */
static otc_status size_members(otc_neat_population *p, int need) {
    if (need <= p->members_cap) return OTC_OK;
    for (int s = 0; s < p->n_species; s++) {
        int *m = realloc(p->species[s].members, sizeof *m * (size_t)need);
        if (!m) return otc_fail(OTC_ERR_NOMEM, "out of memory for species");
        p->species[s].members = m;
    }
    for (int i = 0; i < p->n_spare_members; i++) free(p->spare_members[i]);
    p->n_spare_members = 0;
    p->members_cap = need;
    return OTC_OK;
}

/* The species each genome finds among those there were before speciation (the serial loop's
 * first n_old tries: new species only come after them), shared among the evaluator's threads
 * in blocks from a counter; a pure function of the genomes, so the same on any thread count. */
#define SPECIATE_BLOCK 32
/* Below this many distances to test, waking the helpers costs more than it saves. */
#define SPECIATE_PARALLEL_MIN 4096

/* The first of species lo .. hi - 1 within the threshold of g, or -1. */
static int first_species_within(const otc_neat_population *p, const otc_neat_genome *g, int lo,
                                int hi) {
    for (int s = lo; s < hi; s++)
        if (otc_neat_distance(g, p->species[s].representative, &p->config) < p->threshold) return s;
    return -1;
}

typedef struct {
    const otc_neat_population *p;
    int n_old;
    int *first; /* per genome: the old species' index, or -1 */
    atomic_int next;
} speciate_job;

static void speciate_blocks(void *ctx, int worker) {
    (void)worker;
    speciate_job *j = ctx;
    const otc_neat_population *p = j->p;
    for (;;) {
        int b = atomic_fetch_add(&j->next, SPECIATE_BLOCK);
        if (b >= p->n_genomes) break;
        int e = b + SPECIATE_BLOCK < p->n_genomes ? b + SPECIATE_BLOCK : p->n_genomes;
        for (int i = b; i < e; i++)
            j->first[i] = first_species_within(p, p->genomes[i], 0, j->n_old);
    }
}

/* first[i] for every genome, on the evaluator's helpers too; NULL when there are none (or
 * too little work, or no memory): the serial loop then tests every species itself. */
static int *old_species_found(otc_neat_population *p) {
    int helpers = otc_neat_pool_helpers(p->evaluator);
    if (helpers < 1 || (long)p->n_genomes * p->n_species < SPECIATE_PARALLEL_MIN) return NULL;
    speciate_job j = {.p = p, .n_old = p->n_species};
    if (!(j.first =
              otc_neat_scratch(p, OTC_NEAT_SCRATCH_SPECIATE_FIRST, p->n_genomes, sizeof *j.first)))
        return NULL;
    atomic_init(&j.next, 0);
    otc_neat_pool_start(p->evaluator, helpers + 1, speciate_blocks, &j);
    speciate_blocks(&j, 0); /* the calling thread works too */
    otc_neat_pool_wait(p->evaluator);
    return j.first;
}

otc_status otc_neat_speciate(otc_neat_population *p) {
    if (!p) return otc_fail(OTC_ERR_ARG, "otc_neat_speciate: NULL population");
    if (p->config.np_evolution) return otc_neat_np_speciate(p);
    const otc_neat_config *c = &p->config;
    otc_status st = size_members(p, p->n_genomes + 1);
    if (st != OTC_OK) return st;
    for (int s = 0; s < p->n_species; s++) p->species[s].n_members = 0;
    int n_old = p->n_species, *first = old_species_found(p);
    for (int i = 0; i < p->n_genomes; i++) {
        otc_neat_genome *g = p->genomes[i];
        int found = first ? first[i] : -1;
        if (found < 0) found = first_species_within(p, g, first ? n_old : 0, p->n_species);
        if (found < 0) {
            found = otc_neat_species_add(p, p->next_species_id, g, p->generation);
            if (found < 0) return OTC_ERR_NOMEM;
            p->next_species_id++;
        }
        otc_neat_species *sp = &p->species[found];
        sp->members[sp->n_members++] = i;
        g->species = sp->id;
    }
    int kept = 0;
    for (int s = 0; s < p->n_species; s++) {
        if (p->species[s].n_members == 0)
            otc_neat_species_retire(p, &p->species[s]);
        else
            p->species[kept++] = p->species[s];
    }
    p->n_species = kept;
    if (c->target_species > 0) {
        if (p->n_species < c->target_species)
            p->threshold -= c->threshold_step;
        else if (p->n_species > c->target_species)
            p->threshold += c->threshold_step;
        if (p->threshold < c->threshold_min) p->threshold = c->threshold_min;
    }
    return OTC_OK;
}
