/* Reproduction: stagnation, explicit fitness sharing, offspring shares proportional to each
 * species' adjusted fitness, elitism, survival threshold, crossover (sometimes between
 * species) and mutation. All randomness comes from (seed, generation). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"

double otc_neat_aggregate(otc_neat_agg agg, const double *v, int n) {
    if (n <= 0) return 0;
    double r = v[0];
    switch (agg) {
    case OTC_NEAT_AGG_MAX:
        for (int i = 1; i < n; i++) r = v[i] > r ? v[i] : r;
        return r;
    case OTC_NEAT_AGG_MIN:
        for (int i = 1; i < n; i++) r = v[i] < r ? v[i] : r;
        return r;
    case OTC_NEAT_AGG_MEAN:
        r = 0;
        for (int i = 0; i < n; i++) r += v[i];
        return r / n;
    case OTC_NEAT_AGG_MEDIAN: {
        enum { ON_STACK = 64 }; /* species are small: the heap only for large ones */
        double here[ON_STACK];
        double *t = n <= ON_STACK ? here : malloc(sizeof *t * (size_t)n);
        if (!t) return v[0];
        memcpy(t, v, sizeof *t * (size_t)n);
        for (int i = 1; i < n; i++) /* insertion sort: species are small */
            for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
                double x = t[j];
                t[j] = t[j - 1];
                t[j - 1] = x;
            }
        r = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
        if (t != here) free(t);
        return r;
    }
    }
    return r;
}

/* The comparator's genomes; thread-local so populations can evolve in parallel. */
static _Thread_local const otc_neat_genome *const *sort_genomes;

/* Fitness descending, then population index ascending: a total order, so every platform
 * sorts alike. */
static int by_fitness(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    double fi = sort_genomes[i]->fitness, fj = sort_genomes[j]->fitness;
    if (fi != fj) return fi > fj ? -1 : 1;
    return (i > j) - (i < j);
}

/* Members into by_fitness's order: insertion sort for the usual small species, heapsort for
 * large ones (in place: glibc's qsort allocates for large arrays; a total order gives the same
 * result either way). */
static void sift_down(int *m, int root, int n) {
    for (int child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && by_fitness(&m[child], &m[child + 1]) < 0) child++;
        if (by_fitness(&m[root], &m[child]) >= 0) return;
        int t = m[root];
        m[root] = m[child];
        m[child] = t;
    }
}

static void sort_by_fitness(int *m, int n) {
    if (n > 32) {
        for (int i = n / 2 - 1; i >= 0; i--) sift_down(m, i, n);
        for (int end = n - 1; end > 0; end--) {
            int t = m[0];
            m[0] = m[end];
            m[end] = t;
            sift_down(m, 0, end);
        }
        return;
    }
    for (int i = 1; i < n; i++) {
        int x = m[i], j = i;
        for (; j > 0 && by_fitness(&m[j - 1], &x) > 0; j--) m[j] = m[j - 1];
        m[j] = x;
    }
}

/* Offspring counts: min_species_size each (best species first while they last), the rest
 * proportional to adjusted fitness, by largest remainder (rem: n scratch values, NULL when out
 * of memory: then the best species takes the rest). */
static void compute_spawn(const otc_neat_config *c, int n, const double *af, const int *rank,
                          double *rem, int *spawn) {
    int pop = c->pop_size, base = c->min_species_size;
    for (int s = 0; s < n; s++) spawn[s] = 0;
    if ((long)base * n > pop) {
        for (int k = 0; k < n && pop > 0; k++) {
            int take = base < pop ? base : pop;
            spawn[rank[k]] = take;
            pop -= take;
        }
        return;
    }
    int left = pop - base * n;
    double total = 0;
    for (int s = 0; s < n; s++) total += af[s];
    int given = 0;
    for (int s = 0; s < n; s++) {
        double share = total > 0 ? af[s] / total * left : (double)left / n;
        int whole = (int)floor(share);
        spawn[s] = base + whole;
        given += whole;
        if (rem) rem[s] = share - whole;
    }
    while (given < left) {
        int best = rank[0];
        if (rem) {
            best = -1;
            for (int s = 0; s < n; s++)
                if (best < 0 || rem[s] > rem[best]) best = s;
            rem[best] = -1;
        }
        spawn[best]++;
        given++;
    }
}

void otc_neat_stanley_offspring(int n, const int *size, const double *shared, int pop, int *spawn) {
    double total = 0;
    int members = 0;
    for (int k = 0; k < n; k++) members += size[k];
    for (int i = 0; i < members; i++) total += shared[i];
    double skim = 0;
    int given = 0;
    for (int k = 0, i = 0; k < n; k++) {
        spawn[k] = 0;
        for (int m = 0; m < size[k]; m++, i++) {
            double each = total > 0 ? shared[i] / total * pop : (double)pop / members;
            double whole = floor(each);
            spawn[k] += (int)whole;
            skim += each - whole;
            if (skim > 1.0) {
                double w = floor(skim);
                spawn[k] += (int)w;
                skim -= w;
            }
        }
        given += spawn[k];
    }
    if (n <= 0) return;
    int best = 0; /* the species expecting most; the last of equals, as the reference's >= */
    for (int k = 1; k < n; k++)
        if (spawn[k] >= spawn[best]) best = k;
    if (given < pop) {
        spawn[best]++;
        given++;
    }
    if (given < pop) { /* the reference's "population died": the best species takes all */
        for (int k = 0; k < n; k++) spawn[k] = 0;
        spawn[best] = pop;
        given = pop;
    }
    while (given > pop) { /* floating-point excess: taken back from the largest */
        int big = 0;
        for (int k = 1; k < n; k++)
            if (spawn[k] > spawn[big]) big = k;
        spawn[big]--;
        given--;
    }
}

/* Stanley's offspring counting over the surviving species: their members' shared fitness
 * (shifted and penalised as in the caller), species in creation order as the reference's list. */
static otc_status stanley_spawn(otc_neat_population *p, int n, const int *alive, const bool *penal,
                                double shift, int *spawn) {
    const otc_neat_config *c = &p->config;
    int members = 0;
    for (int k = 0; k < n; k++) members += p->species[alive[k]].n_members;
    /* Sized for as many species and members as genomes: no growth as species come and go. */
    int room = (n > members ? n : members) + 1;
    if (room < p->n_genomes + 1) room = p->n_genomes + 1;
    int *order = otc_neat_scratch(p, OTC_NEAT_SCRATCH_SPAWN_ORDER, room, sizeof *order),
        *size = otc_neat_scratch(p, OTC_NEAT_SCRATCH_SPAWN_SIZE, room, sizeof *size),
        *counts = otc_neat_scratch(p, OTC_NEAT_SCRATCH_SPAWN_COUNTS, room, sizeof *counts);
    double *shared = otc_neat_scratch(p, OTC_NEAT_SCRATCH_SPAWN_SHARED, room, sizeof *shared);
    if (!order || !size || !counts || !shared)
        return otc_fail(OTC_ERR_NOMEM, "out of memory in reproduction");
    /* Zeroed: with no members nothing is written, and the callee still gets defined values. */
    memset(shared, 0, sizeof *shared * ((size_t)members + 1));
    /* alive is best first; the species array is in creation order */
    for (int k = 0; k < n; k++) order[k] = k;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && alive[order[j - 1]] > alive[order[j]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int at = 0;
    for (int j = 0; j < n; j++) {
        int k = order[j];
        const otc_neat_species *sp = &p->species[alive[k]];
        size[j] = sp->n_members;
        for (int m = 0; m < sp->n_members; m++)
            shared[at++] = (p->genomes[sp->members[m]]->fitness + shift) *
                           (penal[k] ? c->stagnation_penalty : 1.0) / sp->n_members;
    }
    otc_neat_stanley_offspring(n, size, shared, c->pop_size, counts);
    for (int j = 0; j < n; j++) spawn[order[j]] = counts[j];
    return OTC_OK;
}

static otc_status reset_population(otc_neat_population *p, otc_rng *rng) {
    for (int s = 0; s < p->n_species; s++) otc_neat_species_clear(&p->species[s]);
    p->n_species = 0;
    for (int i = 0; i < p->n_genomes; i++) {
        otc_neat_genome *g = otc_neat_genome_new();
        if (!g) return OTC_ERR_NOMEM;
        otc_status s = otc_neat_genome_init(g, &p->config, p->innov, rng);
        if (s != OTC_OK) {
            otc_neat_genome_free(g);
            return s;
        }
        otc_neat_genome_free(p->genomes[i]);
        p->genomes[i] = g;
    }
    return otc_neat_speciate(p);
}

/* A copy of src in a recycled genome; NULL when out of memory. */
static otc_neat_genome *copy_of(otc_neat_population *p, const otc_neat_genome *src) {
    otc_neat_genome *g = otc_neat_spare_genome(p);
    if (g && otc_neat_genome_copy_into(g, src) != OTC_OK) {
        otc_neat_genome_free(g);
        g = NULL;
    }
    return g;
}

typedef struct {
    int *order; /* members by fitness (in the population's OTC_NEAT_SCRATCH_REPRO_ORDER) */
    int n_parents;
} ranked_species;

/* Each species' fitness (the config's species_fitness_func over its members' fitnesses) and
 * the generation it last improved; vals holds at least the population's size. */
void otc_neat_species_score(otc_neat_population *p, double *vals) {
    const otc_neat_config *c = &p->config;
    for (int s = 0; s < p->n_species; s++) {
        otc_neat_species *sp = &p->species[s];
        for (int k = 0; k < sp->n_members; k++) vals[k] = p->genomes[sp->members[k]]->fitness;
        sp->fitness = otc_neat_aggregate(c->species_fitness_func, vals, sp->n_members);
        if (sp->fitness > sp->best_fitness) {
            sp->best_fitness = sp->fitness;
            sp->last_improved = p->generation;
        }
    }
}

/* The old genomes' memory is kept for the next ones; the children are unevaluated and not
 * yet in a species. */
static void recycle_generation(otc_neat_population *p, otc_neat_genome **next, int made) {
    for (int i = 0; i < p->n_genomes; i++) otc_neat_recycle(p, p->genomes[i]);
    for (int i = 0; i < made; i++) {
        next[i]->evaluated = false;
        next[i]->species = 0;
    }
}

/* The children replace the population. */
void otc_neat_adopt_generation(otc_neat_population *p, otc_neat_genome **next, int made) {
    recycle_generation(p, next, made);
    free(p->genomes);
    p->genomes = next;
    p->n_genomes = made;
}

/* The children in the population's OTC_NEAT_SCRATCH_REPRO_NEXT replace the population, whose
 * array becomes that scratch (the arrays swap: no allocation). */
static void adopt_scratch(otc_neat_population *p, int made) {
    otc_neat_genome **next = p->scratch[OTC_NEAT_SCRATCH_REPRO_NEXT].items;
    recycle_generation(p, next, made);
    p->scratch[OTC_NEAT_SCRATCH_REPRO_NEXT].items = p->genomes;
    p->scratch[OTC_NEAT_SCRATCH_REPRO_NEXT].cap = p->n_genomes; /* at least that */
    p->genomes = next;
    p->n_genomes = made;
}

otc_status otc_neat_reproduce(otc_neat_population *p) {
    if (p->config.np_evolution) return otc_neat_np_reproduce(p);
    const otc_neat_config *c = &p->config;
    otc_rng rng;
    otc_rng_seed(&rng, otc_neat_mix_seed(p->seed, (uint64_t)p->generation, 0x5EEDull << 32));
    otc_neat_innovations_new_generation(p->innov);
    int ns = p->n_species;
    otc_status st = OTC_OK;
    /* Children and new representatives get room for this generation's largest genome and
     * a structural mutation more. */
    for (int i = 0; i < p->n_genomes; i++) {
        const otc_neat_genome *g = p->genomes[i];
        if (g->n_nodes + 1 > p->spare_nodes) p->spare_nodes = g->n_nodes + 1;
        if (g->n_conns + 2 > p->spare_conns) p->spare_conns = g->n_conns + 2;
    }
    /* The population's grow-only arrays: a generation in steady state allocates nothing
     * (those per species sized for as many species as genomes). */
    int slots = (ns > c->pop_size ? ns : c->pop_size) + 1;
    double *vals = otc_neat_scratch(p, OTC_NEAT_SCRATCH_REPRO_VALS, p->n_genomes + 1, sizeof *vals);
    double *af = otc_neat_scratch(p, OTC_NEAT_SCRATCH_REPRO_AF, slots, sizeof *af);
    int *rank = otc_neat_scratch(p, OTC_NEAT_SCRATCH_REPRO_RANK, slots, sizeof *rank);
    int *alive = otc_neat_scratch(p, OTC_NEAT_SCRATCH_REPRO_ALIVE, slots, sizeof *alive);
    int *spawn = otc_neat_scratch(p, OTC_NEAT_SCRATCH_REPRO_SPAWN, slots, sizeof *spawn);
    bool *penal = otc_neat_scratch(p, OTC_NEAT_SCRATCH_REPRO_PENAL, slots, sizeof *penal);
    ranked_species *rs = otc_neat_scratch(p, OTC_NEAT_SCRATCH_REPRO_RANKED, slots, sizeof *rs);
    int *orders =
        otc_neat_scratch(p, OTC_NEAT_SCRATCH_REPRO_ORDER, p->n_genomes + 1, sizeof *orders);
    otc_neat_genome **next =
        otc_neat_scratch(p, OTC_NEAT_SCRATCH_REPRO_NEXT, c->pop_size, sizeof *next);
    if (!vals || !af || !rank || !alive || !spawn || !penal || !rs || !orders || !next) {
        next = NULL; /* holds no children */
        st = otc_fail(OTC_ERR_NOMEM, "out of memory in reproduction");
        goto done;
    }
    memset(next, 0, sizeof *next * (size_t)c->pop_size);
    /* Species fitness and stagnation. */
    otc_neat_species_score(p, vals);
    for (int s = 0; s < ns; s++) rank[s] = s;
    /* Rank species by fitness (best first, then older first) for species elitism. */
    for (int i = 1; i < ns; i++)
        for (int j = i; j > 0; j--) {
            const otc_neat_species *a = &p->species[rank[j - 1]], *b = &p->species[rank[j]];
            if (b->fitness > a->fitness || (b->fitness == a->fitness && rank[j] < rank[j - 1])) {
                int t = rank[j];
                rank[j] = rank[j - 1];
                rank[j - 1] = t;
            } else {
                break;
            }
        }
    /* Stanley's delta coding: a population whose best has not improved for
     * population_stagnation generations restarts from its two best species' champions. */
    bool delta = false;
    if (c->population_stagnation > 0) {
        double best = -INFINITY;
        for (int i = 0; i < p->n_genomes; i++)
            if (p->genomes[i]->fitness > best) best = p->genomes[i]->fitness;
        if (best > p->pop_best) {
            p->pop_best = best;
            p->pop_best_generation = p->generation;
        } else if (p->generation - p->pop_best_generation >= c->population_stagnation) {
            p->pop_best_generation = p->generation;
            delta = true;
        }
    }
    int n_alive = 0;
    for (int k = 0; k < ns; k++) {
        otc_neat_species *sp = &p->species[rank[k]];
        if (sp->n_members <= 0) continue; /* nothing to breed from (speciation drops these) */
        if (delta) {
            if (k < 2) {
                sp->last_improved = p->generation; /* a fresh start, not stagnant */
                penal[n_alive] = false;
                alive[n_alive++] = rank[k];
            }
            continue;
        }
        bool stagnant = p->generation - sp->last_improved >= c->max_stagnation;
        if (k < c->species_elitism || !stagnant) {
            penal[n_alive] = false;
            alive[n_alive++] = rank[k];
        } else if (c->stagnation_penalty > 0) {
            /* Stanley's dropoff: the species stays but its fitness counts for little */
            penal[n_alive] = true;
            alive[n_alive++] = rank[k];
        }
    }
    if (n_alive == 0) {
        if (c->reset_on_extinction)
            st = reset_population(p, &rng);
        else
            p->stop = OTC_NEAT_STOP_EXTINCT;
        goto done;
    }
    /* Explicit fitness sharing: a member's adjusted fitness is its fitness over the species
     * size, so a species' share is its mean fitness (shifted to be non-negative). */
    double min_f = INFINITY;
    for (int k = 0; k < n_alive; k++) {
        const otc_neat_species *sp = &p->species[alive[k]];
        for (int m = 0; m < sp->n_members; m++)
            if (p->genomes[sp->members[m]]->fitness < min_f)
                min_f = p->genomes[sp->members[m]]->fitness;
    }
    double shift = min_f < 0 ? -min_f : 0;
    for (int k = 0; k < n_alive; k++) {
        const otc_neat_species *sp = &p->species[alive[k]];
        double sum = 0;
        for (int m = 0; m < sp->n_members; m++) sum += p->genomes[sp->members[m]]->fitness + shift;
        af[k] = sum / sp->n_members * (penal[k] ? c->stagnation_penalty : 1.0);
        rank[k] = k; /* alive is already best first */
    }
    if (delta) {
        spawn[0] = n_alive > 1 ? c->pop_size / 2 : c->pop_size;
        if (n_alive > 1) spawn[1] = c->pop_size - spawn[0];
    } else if (c->offspring_stanley) {
        if ((st = stanley_spawn(p, n_alive, alive, penal, shift, spawn)) != OTC_OK) goto done;
    } else {
        compute_spawn(c, n_alive, af, rank,
                      otc_neat_scratch(p, OTC_NEAT_SCRATCH_SPAWN_SHARED, slots, sizeof(double)),
                      spawn);
    }

    sort_genomes = (const otc_neat_genome *const *)p->genomes;
    for (int k = 0, at = 0; k < n_alive; k++) {
        otc_neat_species *sp = &p->species[alive[k]];
        rs[k].order = orders + at; /* the members of distinct species: n_genomes in all */
        at += sp->n_members;
        memcpy(rs[k].order, sp->members, sizeof *rs[k].order * (size_t)sp->n_members);
        sort_by_fitness(rs[k].order, sp->n_members);
        /* Stanley's pool size: the top floor(threshold * size) + 1 members. */
        int cut = (int)floor(c->survival_threshold * sp->n_members) + 1;
        if (cut > sp->n_members) cut = sp->n_members;
        rs[k].n_parents = cut;
    }

    int made = 0;
    for (int k = 0; k < n_alive && st == OTC_OK; k++) {
        otc_neat_species *sp = &p->species[alive[k]];
        const int *order = rs[k].order;
        int n_elite = 0;
        if (sp->n_members >= c->elitism_min_species_size && spawn[k] >= c->elitism_min_offspring) {
            n_elite = c->elitism < spawn[k] ? c->elitism : spawn[k];
            if (n_elite > sp->n_members) n_elite = sp->n_members;
        }
        for (int e = 0; e < n_elite && st == OTC_OK; e++) {
            otc_neat_genome *g = copy_of(p, p->genomes[order[e]]);
            if (!g)
                st = OTC_ERR_NOMEM;
            else
                otc_neat_ahead_push(p, next[made++] = g);
        }
        for (int j = n_elite; j < spawn[k] && st == OTC_OK; j++) {
            const otc_neat_genome *pa =
                p->genomes[order[otc_rng_below(&rng, (uint32_t)rs[k].n_parents)]];
            otc_neat_genome *child = NULL;
            if (delta) {
                /* Stanley's super-champion offspring: the champion with its weights mutated
                 * (80%) or a new connection. */
                child = copy_of(p, p->genomes[order[0]]);
                if (!child)
                    st = OTC_ERR_NOMEM;
                else if (otc_rng_uniform(&rng) < 0.8 || c->conn_add_prob <= 0)
                    otc_neat_mutate_attributes(child, c, &rng);
                else
                    st = otc_neat_mutate_add_conn(child, c, p->innov, &rng);
                if (child) child->evaluated = false;
            } else if (otc_rng_uniform(&rng) < c->crossover_rate) {
                const otc_neat_genome *pb;
                if (n_alive > 1 && otc_rng_uniform(&rng) < c->interspecies_crossover_rate) {
                    /* the champion of another species */
                    int o = (int)otc_rng_below(&rng, (uint32_t)(n_alive - 1));
                    if (o >= k) o++;
                    pb = p->genomes[rs[o].order[0]];
                } else {
                    pb = p->genomes[order[otc_rng_below(&rng, (uint32_t)rs[k].n_parents)]];
                }
                if (!(child = otc_neat_spare_genome(p)))
                    st = OTC_ERR_NOMEM;
                else if ((st = otc_neat_crossover_into(pa, pb, c, &rng, child)) != OTC_OK) {
                    otc_neat_genome_free(child);
                    child = NULL;
                }
                /* A child of one parent with itself, or of two identical parents, is a clone:
                 * it is always mutated, as in the reference code. */
                if (st == OTC_OK &&
                    (pa == pb || otc_rng_uniform(&rng) < c->mutate_after_crossover_rate ||
                     otc_neat_distance(pa, pb, c) == 0.0))
                    st = otc_neat_mutate(child, c, p->innov, &rng);
            } else {
                child = copy_of(p, pa);
                st = child ? otc_neat_mutate(child, c, p->innov, &rng) : OTC_ERR_NOMEM;
            }
            if (child) next[made++] = child;
            if (child && st == OTC_OK) otc_neat_ahead_push(p, child);
        }
    }
    /* The children are all made: evaluation finishes before speciation and adoption write
     * into them. */
    otc_neat_ahead_end(p);
    if (st != OTC_OK) goto done;
    /* Each surviving species is represented by its best member of this generation, as in
     * Stanley's reference code (it compares newcomers with the species' first organism, the
     * fittest after sorting). */
    for (int k = 0; k < n_alive; k++) {
        otc_neat_species *sp = &p->species[alive[k]];
        const otc_neat_genome *rep = p->genomes[rs[k].order[0]];
        if (!sp->representative) sp->representative = otc_neat_genome_new();
        if (!sp->representative || otc_neat_genome_copy_into(sp->representative, rep) != OTC_OK) {
            st = OTC_ERR_NOMEM;
            goto done;
        }
        sp->n_members = -1; /* marks survivors */
    }
    int kept = 0;
    for (int s = 0; s < ns; s++) {
        if (p->species[s].n_members != -1) {
            otc_neat_species_retire(p, &p->species[s]);
        } else {
            p->species[s].n_members = 0;
            p->species[kept++] = p->species[s];
        }
    }
    p->n_species = kept;
    adopt_scratch(p, made);
    next = NULL;
    st = otc_neat_speciate(p);
done:
    if (next)
        for (int i = 0; i < c->pop_size; i++) {
            otc_neat_genome_free(next[i]);
            next[i] = NULL; /* the array is kept for the next generation */
        }
    return st;
}
