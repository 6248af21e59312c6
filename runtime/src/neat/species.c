/* Speciation: genomes join the first species whose representative is within the
 * compatibility threshold, else found a new one; the threshold may adapt towards a target
 * species count. */
#include <math.h>
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
    for (int i = 0; i < p->n_genomes; i++) {
        otc_neat_genome *g = p->genomes[i];
        int found = -1;
        for (int s = 0; s < p->n_species && found < 0; s++)
            if (otc_neat_distance(g, p->species[s].representative, c) < p->threshold) found = s;
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
