/* neat-python 2.1's evolutionary rules, used when the config's np_evolution is set: its genome
 * distance (genome.py distance), speciation (species.py speciate), stagnation (stagnation.py),
 * offspring counts (reproduction.py compute_spawn, _adjust_spawn_exact) and reproduction. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"

static bool is_gene_node(const otc_neat_node *n) {
    /* neat-python's genome.nodes holds outputs and hidden nodes, never inputs */
    return n->type == OTC_NEAT_OUTPUT || n->type == OTC_NEAT_HIDDEN;
}

/* DefaultNodeGene.distance before the weight coefficient. */
static double node_gene_distance(const otc_neat_node *x, const otc_neat_node *y) {
    double d = fabs((double)x->bias - y->bias) + fabs((double)x->response - y->response) +
               fabs((double)x->tau - y->tau);
    return d + (x->act != y->act) + (x->agg != y->agg);
}

double otc_neat_np_distance(const otc_neat_genome *a, const otc_neat_genome *b,
                            const otc_neat_config *c) {
    double kw = c->compatibility_weight_coefficient, kd = c->compatibility_disjoint_coefficient;
    /* Node genes: homologous distance plus disjoint count, over the larger node count. */
    int na = 0, nb = 0, disjoint = 0;
    double hom = 0;
    for (int i = 0; i < a->n_nodes; i++) na += is_gene_node(&a->nodes[i]);
    for (int j = 0; j < b->n_nodes; j++) nb += is_gene_node(&b->nodes[j]);
    for (int i = 0, j = 0; i < a->n_nodes || j < b->n_nodes;) {
        const otc_neat_node *x = i < a->n_nodes ? &a->nodes[i] : NULL;
        const otc_neat_node *y = j < b->n_nodes ? &b->nodes[j] : NULL;
        if (x && y && x->id == y->id) {
            if (is_gene_node(x)) hom += kw * node_gene_distance(x, y);
            i++;
            j++;
        } else if (x && (!y || x->id < y->id)) {
            disjoint += is_gene_node(x);
            i++;
        } else {
            disjoint += is_gene_node(y);
            j++;
        }
    }
    int max_nodes = na > nb ? na : nb;
    double d = max_nodes ? (hom + kd * disjoint) / max_nodes : 0.0;
    /* Connection genes by innovation: beyond the other's last innovation is excess. */
    int ma = a->n_conns ? a->conns[a->n_conns - 1].innov : 0;
    int mb = b->n_conns ? b->conns[b->n_conns - 1].innov : 0;
    int excess = 0;
    disjoint = 0;
    hom = 0;
    for (int i = 0, j = 0; i < a->n_conns || j < b->n_conns;) {
        const otc_neat_conn *x = i < a->n_conns ? &a->conns[i] : NULL;
        const otc_neat_conn *y = j < b->n_conns ? &b->conns[j] : NULL;
        if (x && y && x->innov == y->innov) {
            hom += kw * (fabs((double)x->weight - y->weight) + (x->enabled != y->enabled));
            i++;
            j++;
        } else if (x && (!y || x->innov < y->innov)) {
            *(x->innov > mb ? &excess : &disjoint) += 1;
            i++;
        } else {
            *(y->innov > ma ? &excess : &disjoint) += 1;
            j++;
        }
    }
    int max_conn = a->n_conns > b->n_conns ? a->n_conns : b->n_conns;
    if (max_conn)
        d += (hom + kd * disjoint + c->compatibility_excess_coefficient * excess) / max_conn;
    return d;
}

otc_status otc_neat_np_speciate(otc_neat_population *p) {
    const otc_neat_config *c = &p->config;
    int n = p->n_genomes;
    bool *taken = calloc((size_t)n + 1, sizeof *taken);
    int *rep = malloc(sizeof *rep * ((size_t)n + (size_t)p->n_species + 1));
    if (!taken || !rep) {
        free(taken);
        free(rep);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for species");
    }
    for (int s = 0; s < p->n_species; s++) {
        int *m = realloc(p->species[s].members, sizeof *m * (size_t)(n + 1));
        if (!m) {
            free(taken);
            free(rep);
            return otc_fail(OTC_ERR_NOMEM, "out of memory for species");
        }
        p->species[s].members = m;
        p->species[s].n_members = 0;
    }
    /* Each existing species (in id order) takes the genome closest to its representative as
     * its new representative; a species left without a genome ends. */
    for (int s = 0; s < p->n_species; s++) {
        int best = -1;
        double bd = INFINITY;
        for (int i = 0; i < n; i++) {
            if (taken[i]) continue;
            double d = otc_neat_np_distance(p->species[s].representative, p->genomes[i], c);
            if (best < 0 || d < bd) best = i, bd = d;
        }
        rep[s] = best;
        if (best >= 0) {
            taken[best] = true;
            p->species[s].members[p->species[s].n_members++] = best;
        }
    }
    /* The rest join the species with the nearest representative within the threshold, else
     * found one. */
    for (int i = 0; i < n; i++) {
        if (taken[i]) continue;
        int found = -1;
        double bd = INFINITY;
        for (int s = 0; s < p->n_species; s++) {
            if (rep[s] < 0) continue;
            double d = otc_neat_np_distance(p->genomes[rep[s]], p->genomes[i], c);
            if (d < p->threshold && d < bd) found = s, bd = d;
        }
        if (found < 0) {
            found = otc_neat_species_add(p, p->next_species_id, p->genomes[i], p->generation);
            if (found < 0) {
                free(taken);
                free(rep);
                return OTC_ERR_NOMEM;
            }
            p->next_species_id++;
            rep[found] = i;
        }
        otc_neat_species *sp = &p->species[found];
        sp->members[sp->n_members++] = i;
    }
    int kept = 0;
    otc_status st = OTC_OK;
    for (int s = 0; s < p->n_species; s++) {
        otc_neat_species *sp = &p->species[s];
        if (rep[s] < 0) {
            otc_neat_species_clear(sp);
            continue;
        }
        if (st == OTC_OK &&
            otc_neat_genome_copy_into(sp->representative, p->genomes[rep[s]]) != OTC_OK)
            st = otc_fail(OTC_ERR_NOMEM, "out of memory for species");
        for (int m = 0; m < sp->n_members; m++) p->genomes[sp->members[m]]->species = sp->id;
        p->species[kept++] = *sp;
    }
    p->n_species = kept;
    free(taken);
    free(rep);
    if (st == OTC_OK && c->target_species > 0) {
        if (p->n_species < c->target_species)
            p->threshold -= c->threshold_step;
        else if (p->n_species > c->target_species)
            p->threshold += c->threshold_step;
        if (p->threshold < c->threshold_min) p->threshold = c->threshold_min;
    }
    return st;
}

/* Python's round(): halves to even, as rint in the default rounding mode. */
static int py_round(double x) {
    return (int)nearbyint(x);
}

void otc_neat_np_spawn(int n, const double *af, const int *prev, int pop, int min_size,
                       int *spawn) {
    double af_sum = 0;
    for (int k = 0; k < n; k++) af_sum += af[k];
    int total = 0;
    for (int k = 0; k < n; k++) {
        double s = af_sum > 0 ? fmax(min_size, af[k] / af_sum * pop) : min_size;
        double d = (s - prev[k]) * 0.5;
        int r = py_round(d);
        spawn[k] = prev[k] + (r != 0 ? r : d > 0 ? 1 : d < 0 ? -1 : 0);
        total += spawn[k];
    }
    double norm = total > 0 ? (double)pop / total : 1.0;
    total = 0;
    for (int k = 0; k < n; k++) {
        int v = py_round(spawn[k] * norm);
        spawn[k] = v > min_size ? v : min_size;
        total += spawn[k];
    }
    /* _adjust_spawn_exact: the smallest species gain first, the largest lose first. */
    if (total == pop || n == 0 || (long)n * min_size > pop) return;
    int *idx = malloc(sizeof *idx * (size_t)n);
    if (!idx) return;
    for (int k = 0; k < n; k++) idx[k] = k;
    bool grow = total < pop;
    for (int i = 1; i < n; i++) /* stable insertion sort, as Python's sort */
        for (int j = i; j > 0; j--) {
            int x = spawn[idx[j - 1]], y = spawn[idx[j]];
            if (grow ? y < x : y > x) {
                int t = idx[j];
                idx[j] = idx[j - 1];
                idx[j - 1] = t;
            } else {
                break;
            }
        }
    for (int i = 0; total != pop; i = (i + 1) % n) {
        if (grow) {
            spawn[idx[i]]++;
            total++;
        } else {
            if (spawn[idx[i]] > min_size) {
                spawn[idx[i]]--;
                total--;
            }
            if (i == n - 1 && total != pop) {
                bool any = false;
                for (int k = 0; k < n; k++) any |= spawn[k] > min_size;
                if (!any) break;
            }
        }
    }
    free(idx);
}

/* qsort has no context argument; thread-local so populations can evolve in parallel. */
static _Thread_local const otc_neat_genome *const *np_sort_genomes;

static int np_by_fitness(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    double fi = np_sort_genomes[i]->fitness, fj = np_sort_genomes[j]->fitness;
    if (fi != fj) return fi > fj ? -1 : 1;
    return (i > j) - (i < j);
}

/* neat-python's stagnation: species by ascending fitness; one is stagnant after
 * max_stagnation generations without improvement unless that would leave fewer than
 * species_elitism, and the species_elitism fittest never are. Marks survivors in alive. */
static int np_stagnation(otc_neat_population *p, int *alive) {
    const otc_neat_config *c = &p->config;
    int ns = p->n_species;
    double *vals = malloc(sizeof *vals * (size_t)(p->n_genomes + 1));
    int *order = malloc(sizeof *order * (size_t)(ns + 1));
    if (!vals || !order) {
        free(vals);
        free(order);
        return -1;
    }
    otc_neat_species_score(p, vals);
    for (int s = 0; s < ns; s++) order[s] = s;
    for (int i = 1; i < ns; i++) /* stable, ascending fitness */
        for (int j = i; j > 0 && p->species[order[j]].fitness < p->species[order[j - 1]].fitness;
             j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int non_stagnant = ns, n_alive = 0;
    bool *stagnant = calloc((size_t)ns + 1, sizeof *stagnant);
    if (!stagnant) {
        free(vals);
        free(order);
        return -1;
    }
    for (int k = 0; k < ns; k++) {
        const otc_neat_species *sp = &p->species[order[k]];
        bool is = false;
        if (non_stagnant > c->species_elitism)
            is = p->generation - sp->last_improved >= c->max_stagnation;
        if (ns - k <= c->species_elitism) is = false;
        if (is) non_stagnant--;
        stagnant[order[k]] = is;
    }
    for (int s = 0; s < ns; s++) /* survivors in species id order, as neat-python's */
        if (!stagnant[s] && p->species[s].n_members > 0) alive[n_alive++] = s;
    free(stagnant);
    free(vals);
    free(order);
    return n_alive;
}

otc_status otc_neat_np_reproduce(otc_neat_population *p) {
    const otc_neat_config *c = &p->config;
    otc_rng rng;
    otc_rng_seed(&rng, otc_neat_mix_seed(p->seed, (uint64_t)p->generation, 0x5EEDull << 32));
    otc_neat_innovations_new_generation(p->innov);
    int ns = p->n_species;
    otc_status st = OTC_OK;
    int *alive = malloc(sizeof *alive * (size_t)(ns + 1));
    int *prev = malloc(sizeof *prev * (size_t)(ns + 1));
    int *spawn = malloc(sizeof *spawn * (size_t)(ns + 1));
    double *af = malloc(sizeof *af * (size_t)(ns + 1));
    int **order = calloc((size_t)ns + 1, sizeof *order);
    otc_neat_genome **next = calloc((size_t)c->pop_size + 1, sizeof *next);
    int n_alive = 0, made = 0;
    if (!alive || !prev || !spawn || !af || !order || !next) {
        st = otc_fail(OTC_ERR_NOMEM, "out of memory in reproduction");
        goto done;
    }
    if ((n_alive = np_stagnation(p, alive)) < 0) {
        st = otc_fail(OTC_ERR_NOMEM, "out of memory in reproduction");
        goto done;
    }
    if (n_alive == 0) {
        for (int s = 0; s < ns; s++) otc_neat_species_clear(&p->species[s]);
        p->n_species = 0;
        if (c->reset_on_extinction) {
            for (int i = 0; i < p->n_genomes && st == OTC_OK; i++) {
                otc_neat_genome *g = otc_neat_genome_new();
                if (!g) st = OTC_ERR_NOMEM;
                if (g && (st = otc_neat_genome_init(g, c, p->innov, &rng)) != OTC_OK)
                    otc_neat_genome_free(g);
                if (st == OTC_OK) {
                    otc_neat_genome_free(p->genomes[i]);
                    p->genomes[i] = g;
                }
            }
            if (st == OTC_OK) st = otc_neat_np_speciate(p);
        } else {
            p->stop = OTC_NEAT_STOP_EXTINCT;
        }
        goto done;
    }
    /* Adjusted fitness: the species' mean fitness, normalised by the fitness range. */
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < n_alive; k++) {
        const otc_neat_species *sp = &p->species[alive[k]];
        for (int m = 0; m < sp->n_members; m++) {
            double f = p->genomes[sp->members[m]]->fitness;
            lo = f < lo ? f : lo;
            hi = f > hi ? f : hi;
        }
    }
    double range = hi - lo > 1.0 ? hi - lo : 1.0;
    for (int k = 0; k < n_alive; k++) {
        const otc_neat_species *sp = &p->species[alive[k]];
        double sum = 0;
        for (int m = 0; m < sp->n_members; m++) sum += p->genomes[sp->members[m]]->fitness;
        af[k] = (sum / sp->n_members - lo) / range;
        if (c->fitness_criterion == OTC_NEAT_AGG_MIN) af[k] = 1.0 - af[k];
        prev[k] = sp->n_members;
    }
    int min_size = c->min_species_size > c->elitism ? c->min_species_size : c->elitism;
    otc_neat_np_spawn(n_alive, af, prev, c->pop_size, min_size, spawn);
    int total = 0;
    for (int k = 0; k < n_alive; k++) {
        if (spawn[k] < c->elitism) spawn[k] = c->elitism;
        total += spawn[k];
    }
    if (total > c->pop_size) { /* only when pop_size cannot hold every species' minimum */
        otc_neat_genome **more = realloc(next, sizeof *next * (size_t)(total + 1));
        if (!more) {
            st = otc_fail(OTC_ERR_NOMEM, "out of memory in reproduction");
            goto done;
        }
        next = more;
        memset(next + c->pop_size, 0, sizeof *next * (size_t)(total + 1 - c->pop_size));
    }
    np_sort_genomes = (const otc_neat_genome *const *)p->genomes;
    for (int k = 0; k < n_alive && st == OTC_OK; k++) {
        otc_neat_species *sp = &p->species[alive[k]];
        int *o = order[k] = malloc(sizeof *o * (size_t)sp->n_members);
        if (!o) {
            st = otc_fail(OTC_ERR_NOMEM, "out of memory in reproduction");
            break;
        }
        memcpy(o, sp->members, sizeof *o * (size_t)sp->n_members);
        qsort(o, (size_t)sp->n_members, sizeof *o, np_by_fitness);
        int left = spawn[k];
        for (int e = 0; e < c->elitism && e < sp->n_members && st == OTC_OK; e++, left--) {
            otc_neat_genome *g = otc_neat_spare_genome(p);
            if (!g || otc_neat_genome_copy_into(g, p->genomes[o[e]]) != OTC_OK) {
                otc_neat_genome_free(g);
                st = otc_fail(OTC_ERR_NOMEM, "out of memory in reproduction");
            } else {
                next[made++] = g;
            }
        }
        /* Parents: the top ceil(survival_threshold * size), at least 2 (so at most size). */
        int cut = (int)ceil(c->survival_threshold * sp->n_members);
        if (cut < 2) cut = 2;
        if (cut > sp->n_members) cut = sp->n_members;
        for (; left > 0 && st == OTC_OK; left--) {
            const otc_neat_genome *pa = p->genomes[o[otc_rng_below(&rng, (uint32_t)cut)]];
            const otc_neat_genome *pb = p->genomes[o[otc_rng_below(&rng, (uint32_t)cut)]];
            otc_neat_genome *child = otc_neat_spare_genome(p);
            if (!child) {
                st = OTC_ERR_NOMEM;
                break;
            }
            st = otc_neat_crossover_into(pa, pb, c, &rng, child);
            if (st == OTC_OK) st = otc_neat_mutate(child, c, p->innov, &rng);
            if (st != OTC_OK) {
                otc_neat_genome_free(child);
                break;
            }
            next[made++] = child;
        }
    }
    if (st != OTC_OK) goto done;
    /* Stagnant species end; survivors keep their representative for speciation. */
    int kept = 0;
    for (int s = 0, k = 0; s < ns; s++) {
        if (k < n_alive && alive[k] == s) {
            p->species[kept++] = p->species[s];
            k++;
        } else {
            otc_neat_species_clear(&p->species[s]);
        }
    }
    p->n_species = kept;
    otc_neat_adopt_generation(p, next, made);
    next = NULL;
    st = otc_neat_np_speciate(p);
done:
    if (next)
        for (int i = 0; i < made; i++) otc_neat_genome_free(next[i]);
    free(next);
    if (order)
        for (int k = 0; k < ns; k++) free(order[k]);
    free(order);
    free(alive);
    free(prev);
    free(spawn);
    free(af);
    return st;
}
