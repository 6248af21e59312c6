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
    s->representative = otc_neat_genome_copy(rep);
    s->members = malloc(sizeof *s->members * (size_t)(p->n_genomes > 0 ? p->n_genomes : 1));
    if (!s->representative || !s->members) {
        otc_neat_species_clear(s);
        otc_fail(OTC_ERR_NOMEM, "out of memory for species");
        return -1;
    }
    return p->n_species++;
}

/* The species each genome finds among those there were before speciation (the serial loop's
 * first n_old tries: new species only come after them), shared among the evaluator's threads
 * in blocks from a counter; a pure function of the genomes, so the same on any thread count. */
#define SPECIATE_BLOCK 32
/* Below this many distances to test, waking the helpers costs more than it saves. */
#define SPECIATE_PARALLEL_MIN 4096

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
        for (int i = b; i < e; i++) {
            int found = -1;
            for (int s = 0; s < j->n_old && found < 0; s++)
                if (otc_neat_distance(p->genomes[i], p->species[s].representative, &p->config) <
                    p->threshold)
                    found = s;
            j->first[i] = found;
        }
    }
}

/* first[i] for every genome, on the evaluator's helpers too; NULL when there are none (or
 * too little work, or no memory): the serial loop then tests every species itself. */
static int *old_species_found(otc_neat_population *p) {
    int helpers = otc_neat_pool_helpers(p->evaluator);
    if (helpers < 1 || (long)p->n_genomes * p->n_species < SPECIATE_PARALLEL_MIN) return NULL;
    speciate_job j = {.p = p, .n_old = p->n_species};
    if (!(j.first = malloc(sizeof *j.first * (size_t)p->n_genomes))) return NULL;
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
    for (int s = 0; s < p->n_species; s++) {
        /* Member lists are sized for the whole population, which may have changed size. */
        int *m = realloc(p->species[s].members, sizeof *m * (size_t)(p->n_genomes + 1));
        if (!m) return otc_fail(OTC_ERR_NOMEM, "out of memory for species");
        p->species[s].members = m;
        p->species[s].n_members = 0;
    }
    int n_old = p->n_species, *first = old_species_found(p);
    for (int i = 0; i < p->n_genomes; i++) {
        otc_neat_genome *g = p->genomes[i];
        int found = first ? first[i] : -1;
        for (int s = first ? n_old : 0; s < p->n_species && found < 0; s++)
            if (otc_neat_distance(g, p->species[s].representative, c) < p->threshold) found = s;
        if (found < 0) {
            found = otc_neat_species_add(p, p->next_species_id, g, p->generation);
            if (found < 0) {
                free(first);
                return OTC_ERR_NOMEM;
            }
            p->next_species_id++;
        }
        otc_neat_species *sp = &p->species[found];
        sp->members[sp->n_members++] = i;
        g->species = sp->id;
    }
    free(first);
    int kept = 0;
    for (int s = 0; s < p->n_species; s++) {
        if (p->species[s].n_members == 0)
            otc_neat_species_clear(&p->species[s]);
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
