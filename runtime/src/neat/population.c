/* The population: creation, one generation (evaluate, record, test for success, reproduce),
 * a whole run with checkpoints, and the champion as a graph with its genome in metadata. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "neat_internal.h"
#include "otc/hyperneat.h"

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

otc_status otc_neat_population_new(const otc_neat_config *c, uint64_t seed,
                                   otc_neat_population **out) {
    if (!c || !out) return otc_fail(OTC_ERR_ARG, "otc_neat_population_new: NULL argument");
    if (c->pop_size < 2 || c->num_inputs < 1 || c->num_outputs < 1 ||
        !(c->compatibility_threshold >= 0))
        return otc_fail(OTC_ERR_CONFIG, "NEAT config incomplete (pop_size, num_inputs, "
                                        "num_outputs, compatibility_threshold)");
    otc_neat_population *p = calloc(1, sizeof *p);
    if (!p) return otc_fail(OTC_ERR_NOMEM, "out of memory for a population");
    p->config = *c;
    p->seed = seed;
    p->threshold = c->compatibility_threshold;
    p->next_species_id = 1;
    p->pop_best = -INFINITY;
    int first_free = c->num_inputs + (c->bias_node ? 1 : 0) + c->num_outputs + c->num_hidden +
                     otc_substrate_seed_nodes(c);
    p->innov = otc_neat_innovations_new(first_free, 0);
    p->genomes = calloc((size_t)c->pop_size, sizeof *p->genomes);
    otc_status s = p->innov && p->genomes ? OTC_OK : otc_fail(OTC_ERR_NOMEM, "out of memory");
    otc_rng rng;
    otc_rng_seed(&rng, otc_neat_mix_seed(seed, 0xFFFFFFFFull, 0));
    for (int i = 0; i < c->pop_size && s == OTC_OK; i++) {
        p->genomes[i] = otc_neat_genome_new();
        if (!p->genomes[i])
            s = OTC_ERR_NOMEM;
        else
            s = otc_neat_genome_init(p->genomes[i], c, p->innov, &rng);
        p->n_genomes = i + 1;
    }
    if (s == OTC_OK) s = otc_neat_speciate(p);
    if (s != OTC_OK) {
        otc_neat_population_free(p);
        return s;
    }
    *out = p;
    return OTC_OK;
}

void otc_neat_population_free(otc_neat_population *p) {
    if (!p) return;
    otc_neat_evaluator_free(p->evaluator);
    for (int i = 0; i < p->n_genomes; i++) otc_neat_genome_free(p->genomes[i]);
    free(p->genomes);
    for (int s = 0; s < p->n_species; s++) otc_neat_species_clear(&p->species[s]);
    free(p->species);
    otc_neat_genome_free(p->champion);
    otc_neat_innovations_free(p->innov);
    free(p->stats);
    for (int i = 0; i < p->n_spare; i++) otc_neat_genome_free(p->spare[i]);
    free(p->spare);
    for (int i = 0; i < p->n_spare_members; i++) free(p->spare_members[i]);
    free(p->spare_members);
    for (int i = 0; i < OTC_NEAT_SCRATCH_SLOTS; i++) free(p->scratch[i].items);
    otc_neat_novelty_free(p->novelty);
    otc_neat_front_free(p->front);
    free(p->behaviours);
    free(p);
}

void *otc_neat_scratch(otc_neat_population *p, int slot, int n, size_t size) {
    return otc_neat_grow(&p->scratch[slot].items, &p->scratch[slot].cap, n, size)
               ? p->scratch[slot].items
               : NULL;
}

otc_neat_genome *otc_neat_spare_genome(otc_neat_population *p) {
    otc_neat_genome *g = p->n_spare ? p->spare[--p->n_spare] : otc_neat_genome_new();
    /* Room for the largest genome of the generation at once: genes then grow in place. */
    if (g && !otc_neat_genome_reserve(g, p->spare_nodes, p->spare_conns)) {
        otc_neat_genome_free(g);
        otc_fail(OTC_ERR_NOMEM, "out of memory for a genome");
        return NULL;
    }
    return g;
}

void otc_neat_recycle(otc_neat_population *p, otc_neat_genome *g) {
    if (!g) return;
    /* A generation's children and the representatives of its new species are all that
     * reproduction and speciation take (species never outnumber genomes). */
    int most = 2 * p->config.pop_size + 1;
    if (p->n_spare == p->cap_spare && p->n_spare < most)
        otc_neat_grow((void **)&p->spare, &p->cap_spare, p->n_spare + 1, sizeof *p->spare);
    if (p->n_spare < p->cap_spare && p->n_spare < most)
        p->spare[p->n_spare++] = g;
    else
        otc_neat_genome_free(g);
}

int otc_neat_population_size(const otc_neat_population *p) {
    return p->n_genomes;
}
otc_neat_genome *otc_neat_population_genome(otc_neat_population *p, int i) {
    return i >= 0 && i < p->n_genomes ? p->genomes[i] : NULL;
}
int otc_neat_population_species_count(const otc_neat_population *p) {
    return p->n_species;
}
const otc_neat_species *otc_neat_population_species(const otc_neat_population *p, int i) {
    return i >= 0 && i < p->n_species ? &p->species[i] : NULL;
}
otc_neat_innovations *otc_neat_population_innovations(otc_neat_population *p) {
    return p->innov;
}
int otc_neat_generation(const otc_neat_population *p) {
    return p->generation;
}
long otc_neat_evaluations(const otc_neat_population *p) {
    return p->evaluations;
}
bool otc_neat_extinct(const otc_neat_population *p) {
    return p->stop == OTC_NEAT_STOP_EXTINCT;
}
bool otc_neat_solved(const otc_neat_population *p) {
    return p->stop == OTC_NEAT_STOP_SOLVED;
}
double otc_neat_threshold(const otc_neat_population *p) {
    return p->threshold;
}
const otc_neat_genome *otc_neat_champion(const otc_neat_population *p) {
    return p->champion;
}
uint64_t otc_neat_seed(const otc_neat_population *p) {
    return p->seed;
}
int otc_neat_stats_count(const otc_neat_population *p) {
    return p->n_stats;
}
const otc_neat_gen_stats *otc_neat_stats(const otc_neat_population *p, int i) {
    return i >= 0 && i < p->n_stats ? &p->stats[i] : NULL;
}

otc_status otc_neat_stats_push(otc_neat_population *p, const otc_neat_gen_stats *s) {
    if (p->n_stats == p->cap_stats) {
        int cap = p->cap_stats ? p->cap_stats * 2 : 64;
        otc_neat_gen_stats *n = realloc(p->stats, sizeof *n * (size_t)cap);
        if (!n) return otc_fail(OTC_ERR_NOMEM, "out of memory for statistics");
        p->stats = n;
        p->cap_stats = cap;
    }
    p->stats[p->n_stats++] = *s;
    return OTC_OK;
}

static otc_status set_champion(otc_neat_population *p, const otc_neat_genome *g) {
    /* Into the champion's own arrays: a new champion allocates only when it is larger. */
    if (!p->champion && !(p->champion = otc_neat_genome_new())) return OTC_ERR_NOMEM;
    otc_status s = otc_neat_genome_copy_into(p->champion, g);
    if (s != OTC_OK) return s;
    p->champion_generation = p->generation;
    return OTC_OK;
}

/* The generation's behaviours, when its genomes all have some of one size. */
static otc_status keep_behaviours(otc_neat_population *p) {
    int dim = p->n_genomes ? p->genomes[0]->n_bc : 0;
    for (int i = 0; i < p->n_genomes; i++)
        if (p->genomes[i]->n_bc != dim) dim = 0;
    p->n_behaviours = p->behaviour_dim = 0;
    if (dim == 0) return OTC_OK;
    if (!otc_neat_grow((void **)&p->behaviours, &p->cap_behaviours, p->n_genomes * dim,
                       sizeof *p->behaviours))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for behaviours");
    for (int i = 0; i < p->n_genomes; i++)
        memcpy(p->behaviours + (size_t)i * dim, p->genomes[i]->bc, sizeof(float) * dim);
    p->n_behaviours = p->n_genomes;
    p->behaviour_dim = dim;
    return OTC_OK;
}

const float *otc_neat_behaviours(const otc_neat_population *p, int *n, int *dim) {
    if (n) *n = p ? p->n_behaviours : 0;
    if (dim) *dim = p ? p->behaviour_dim : 0;
    return p && p->n_behaviours ? p->behaviours : NULL;
}

/* Under NSGA-II, of two genomes that solved the task the one better in the first cost
 * objective (the smaller net) is the champion; otherwise the first that solved. */
static bool smaller_solver(const otc_neat_config *c, const otc_neat_genome *g,
                           const otc_neat_genome *than) {
    int j = otc_neat_first_cost(c);
    if (c->selection != OTC_NEAT_SELECT_NSGA2 || j < 0) return false;
    return otc_neat_objective_of(c, c->objectives[j], g) <
           otc_neat_objective_of(c, c->objectives[j], than);
}

/* Reproduction ranks and shares the selection value in place of fitness (the fitness was
 * recorded, and the run's success decided, before): the genomes are recycled by then. */
static otc_status selection_values(otc_neat_population *p, const otc_neat_task *task, int fresh) {
    const otc_neat_config *c = &p->config;
    if (c->selection == OTC_NEAT_SELECT_FITNESS) return OTC_OK;
    double *val = malloc(sizeof *val * (size_t)p->n_genomes);
    if (!val) return otc_fail(OTC_ERR_NOMEM, "out of memory for selection");
    otc_status s = c->selection == OTC_NEAT_SELECT_NSGA2
                       ? otc_neat_nsga2_values(p, val)
                       : otc_neat_novelty_values(p, task->novelty_threshold, fresh, val);
    for (int i = 0; i < p->n_genomes && s == OTC_OK; i++) p->genomes[i]->fitness = val[i];
    free(val);
    return s;
}

/* Stanley's pole2_epoch choice of the genome to confirm: species whose best member beats every
 * earlier generation's become untested; the champion of the fittest untested species is tested
 * (of the fittest species when all were), and that species is marked tested. A champion that
 * failed is thus not retested each generation while other species' champions never are. */
static int confirm_candidate(otc_neat_population *p, int best) {
    int pick = -1, pick_member = best, first = -1, first_member = best;
    double pick_fit = -INFINITY, first_fit = -INFINITY;
    for (int k = 0; k < p->n_species; k++) {
        otc_neat_species *sp = &p->species[k];
        if (sp->n_members <= 0) continue;
        int champ = sp->members[0];
        for (int m = 1; m < sp->n_members; m++)
            if (p->genomes[sp->members[m]]->fitness > p->genomes[champ]->fitness)
                champ = sp->members[m];
        double f = p->genomes[champ]->fitness;
        if (f > sp->confirm_best) {
            sp->confirm_best = f;
            sp->confirm_checked = false;
        }
        /* Strictly greater: ties go to the earlier species, a total order on every platform. */
        if (first < 0 || f > first_fit) first = k, first_fit = f, first_member = champ;
        if (!sp->confirm_checked && (pick < 0 || f > pick_fit))
            pick = k, pick_fit = f, pick_member = champ;
    }
    if (pick < 0) pick = first, pick_member = first_member;
    if (pick < 0) return best;
    p->species[pick].confirm_checked = true;
    return pick_member;
}

otc_status otc_neat_step(otc_neat_population *p, otc_neat_task *task,
                         const otc_neat_step_options *o, bool *solved) {
    if (!p || !task) return otc_fail(OTC_ERR_ARG, "otc_neat_step: NULL argument");
    if (p->stop != OTC_NEAT_RUNNING)
        return otc_fail(OTC_ERR_STATE, "otc_neat_step: the run has already stopped");
    double t0 = now_seconds();
    snprintf(p->task, sizeof p->task, "%s", task->name);
    const otc_neat_config *c = &p->config;
    int n = p->n_genomes;
    bool *flags = otc_neat_scratch(p, OTC_NEAT_SCRATCH_STEP_FLAGS, n + 1, sizeof *flags);
    double *fit = otc_neat_scratch(p, OTC_NEAT_SCRATCH_STEP_FIT, n + 1, sizeof *fit);
    if (!flags || !fit) return otc_fail(OTC_ERR_NOMEM, "out of memory for a generation");
    memset(flags, 0, sizeof *flags * ((size_t)n + 1));
    int fresh = 0;
    for (int i = 0; i < n; i++) fresh += !p->genomes[i]->evaluated;
    otc_status s = otc_neat_evaluate_all(p, task, o ? o->remote : NULL, o ? o->threads : 1, flags);
    if (s != OTC_OK) goto done;
    p->evaluations += fresh;
    /* The diversity is an objective like the others: there before the champion and the front
     * are chosen by the objectives. */
    if ((s = keep_behaviours(p)) != OTC_OK) goto done;
    if (otc_neat_wants_diversity(c) && (s = otc_neat_diversity_update(p)) != OTC_OK) goto done;

    otc_neat_gen_stats st = {.generation = p->generation, .confirm_score = NAN};
    int best = 0, solver = -1;
    double sum = 0, sq = 0, hid = 0, con = 0;
    for (int i = 0; i < n; i++) {
        const otc_neat_genome *g = p->genomes[i];
        fit[i] = g->fitness;
        if (g->fitness > p->genomes[best]->fitness) best = i;
        if (flags[i] && (solver < 0 || smaller_solver(c, g, p->genomes[solver]))) solver = i;
        sum += g->fitness;
        hid += otc_neat_genome_hidden_count(g);
        con += otc_neat_genome_enabled_count(g);
    }
    st.mean_fitness = sum / n;
    for (int i = 0; i < n; i++) sq += (fit[i] - st.mean_fitness) * (fit[i] - st.mean_fitness);
    st.stdev_fitness = sqrt(sq / n);
    st.best_fitness = p->genomes[best]->fitness;
    st.mean_hidden = hid / n;
    st.mean_connections = con / n;
    if (!p->champion || p->genomes[best]->fitness > p->champion->fitness)
        if ((s = set_champion(p, p->genomes[best])) != OTC_OK) goto done;
    if (solver >= 0) {
        /* The genome that met the criterion is the champion, even if another scored higher;
         * under NSGA-II, simplified along the size objective first. */
        otc_neat_genome *simple = NULL;
        int trials = 0;
        if (c->selection == OTC_NEAT_SELECT_NSGA2 &&
            (s = otc_neat_simplify_solver(p, task, solver, &simple, &trials)) != OTC_OK)
            goto done;
        p->evaluations += trials;
        s = set_champion(p, simple ? simple : p->genomes[solver]);
        if (s == OTC_OK && simple) s = otc_neat_front_offer(p, simple); /* evaluated too */
        otc_neat_genome_free(simple);
        if (s != OTC_OK) goto done;
        p->stop = OTC_NEAT_STOP_SOLVED;
    } else if (task->confirm) {
        bool ok = false;
        double score = NAN;
        int tested = task->confirm_rotates_species ? confirm_candidate(p, best) : best;
        otc_neat_flat *outer = otc_neat_eval_scratch();
        otc_neat_flat *own = otc_neat_evaluator_scratch(p->evaluator);
        otc_neat_evaluator *outer_e = otc_neat_eval_evaluator();
        otc_neat_bind_eval_scratch(own ? own : outer);
        otc_neat_bind_eval_evaluator(p->evaluator); /* its helpers share the test */
        s = otc_neat_confirm(task, c, p->genomes[tested], o ? o->threads : 1, &ok, &score);
        otc_neat_bind_eval_evaluator(outer_e);
        otc_neat_bind_eval_scratch(outer);
        if (s != OTC_OK) goto done;
        st.confirm_score = score;
        if (ok) {
            if ((s = set_champion(p, p->genomes[tested])) != OTC_OK) goto done;
            p->stop = OTC_NEAT_STOP_SOLVED;
        }
    }
    const otc_neat_genome *shown = p->stop == OTC_NEAT_STOP_SOLVED ? p->champion : p->genomes[best];
    st.champion_hidden = otc_neat_genome_hidden_count(shown);
    st.champion_connections = otc_neat_genome_enabled_count(shown);
    if (p->stop == OTC_NEAT_RUNNING && !c->no_fitness_termination &&
        otc_neat_aggregate(c->fitness_criterion, fit, n) >= c->fitness_threshold)
        p->stop = OTC_NEAT_STOP_THRESHOLD;
    st.evaluations = p->evaluations;
    st.n_species = p->n_species;
    st.threshold = p->threshold;
    if ((s = otc_neat_front_update(p)) != OTC_OK) goto done;
    if (p->stop == OTC_NEAT_RUNNING && (s = selection_values(p, task, fresh)) != OTC_OK) goto done;
    if (p->stop == OTC_NEAT_RUNNING) {
        /* The helper threads evaluate the next generation's children while reproduction
         * makes them (evaluation is a pure function of genome and seed, so the run is the
         * same); an MPI evaluator keeps its own schedule. */
        int threads = o ? o->threads : 1;
        if (threads > 1 && !(o && (o->remote || o->last)) && !c->np_evolution &&
            c->selection != OTC_NEAT_SELECT_NOVELTY && /* both need behaviours it drops */
            !otc_neat_wants_diversity(c))
            s = otc_neat_ahead_begin(p, task, threads);
        if (s == OTC_OK) s = otc_neat_reproduce(p);
        otc_neat_ahead_end(p); /* reproduction ends it; not when it stopped early */
        if (s != OTC_OK) goto done;
        p->generation++;
    }
    st.seconds = now_seconds() - t0;
    s = otc_neat_stats_push(p, &st);
done:
    if (solved) *solved = p->stop == OTC_NEAT_STOP_SOLVED;
    return s;
}

otc_status otc_neat_run(otc_neat_population *p, otc_neat_task *task, const otc_neat_run_options *o,
                        bool *solved) {
    if (!p || !task || !o) return otc_fail(OTC_ERR_ARG, "otc_neat_run: NULL argument");
    otc_neat_step_options so = {o->threads, o->remote, false};
    otc_status s = OTC_OK;
    while (s == OTC_OK && p->stop == OTC_NEAT_RUNNING && p->generation < o->generations) {
        so.last = p->generation + 1 >= o->generations; /* its children would go unused */
        s = otc_neat_step(p, task, &so, NULL);
        if (s != OTC_OK) break;
        if (o->on_generation) o->on_generation(o->ctx, p, &p->stats[p->n_stats - 1]);
        if (p->stop == OTC_NEAT_RUNNING && o->checkpoint_every > 0 && o->checkpoint_prefix &&
            p->generation % o->checkpoint_every == 0) {
            char path[4096];
            if (snprintf(path, sizeof path, "%s%d.json", o->checkpoint_prefix, p->generation) >=
                (int)sizeof path) /* a cut path could name another file */
                s = otc_fail(OTC_ERR_ARG, "checkpoint prefix longer than %d bytes",
                             (int)sizeof path - 16);
            else
                s = otc_neat_checkpoint_save(p, path);
        }
    }
    if (solved) *solved = p->stop == OTC_NEAT_STOP_SOLVED;
    return s;
}

otc_status otc_neat_champion_graph(const otc_neat_population *p, const otc_neat_task *task,
                                   otc_graph **out) {
    if (!p || !out) return otc_fail(OTC_ERR_ARG, "otc_neat_champion_graph: NULL argument");
    if (!p->champion) return otc_fail(OTC_ERR_STATE, "no champion yet (nothing evaluated)");
    return otc_neat_genome_graph(p, p->champion, p->champion_generation,
                                 p->stop == OTC_NEAT_STOP_SOLVED, task, out);
}

/* The substrate the task scores g on (trained, for a Baldwinian hybrid) as a graph. */
static otc_status task_substrate_graph(const otc_neat_task *task, const otc_neat_config *c,
                                       const otc_neat_genome *g, otc_graph **out) {
    otc_substrate *s = NULL;
    otc_status st = task->substrate(task, c, g, &s);
    if (st == OTC_OK)
        st = otc_substrate_graph(s, otc_neat_act_alpha(c, c->substrate.activation), out);
    otc_substrate_free(s);
    return st;
}

otc_status otc_neat_genome_graph(const otc_neat_population *p, const otc_neat_genome *g,
                                 int generation, bool solved, const otc_neat_task *task,
                                 otc_graph **out) {
    /* HyperNEAT: the genome is a CPPN and the model is the substrate it paints. */
    bool cppn = p->config.substrate.enabled;
    otc_neat_phenotype *ph = NULL;
    otc_graph *graph = NULL;
    otc_status s = cppn && task && task->substrate
                       ? task_substrate_graph(task, &p->config, g, &graph)
                   : cppn ? otc_substrate_genome_graph(g, &p->config, &graph)
                          : otc_neat_phenotype_build(g, &p->config, &ph);
    if (s != OTC_OK) return s;
    if (!cppn) graph = ph->graph;
    bool recurrent = ph && ph->recurrent;
    if (task && task->input_mean && task->input_std) {
        otc_graph *std_graph = NULL;
        s = otc_neat_graph_standardize_input(graph, task->input_mean, task->input_std, &std_graph);
        if (ph)
            otc_neat_phenotype_free(ph); /* its graph with it */
        else
            otc_graph_free(graph);
        ph = NULL;
        if (s != OTC_OK) return s;
        graph = std_graph;
    }
    char *json = otc_neat_genome_to_json(g);
    cJSON *f = cJSON_CreateObject();
    char *facts = NULL;
    if (f && cJSON_AddStringToObject(f, "task", task ? task->name : "") &&
        cJSON_AddNumberToObject(f, "generation", generation) &&
        cJSON_AddNumberToObject(f, "fitness", g->fitness) &&
        cJSON_AddNumberToObject(f, "hidden_nodes", otc_neat_genome_hidden_count(g)) &&
        cJSON_AddNumberToObject(f, "enabled_connections", otc_neat_genome_enabled_count(g)) &&
        cJSON_AddNumberToObject(f, "evaluations", (double)p->evaluations) &&
        cJSON_AddBoolToObject(f, "solved", solved) &&
        cJSON_AddBoolToObject(f, "recurrent", recurrent))
        facts = cJSON_PrintUnformatted(f);
    cJSON_Delete(f);
    if (!facts) s = OTC_ERR_NOMEM;
    if (!json) s = OTC_ERR_NOMEM;
    /* A CPPN is not the model's network: it goes under its own key. */
    if (s == OTC_OK) s = otc_graph_meta_set(graph, cppn ? "cppn" : "genome", json);
    if (s == OTC_OK) s = otc_graph_meta_set(graph, "neat", facts);
    free(json);
    free(facts);
    if (s != OTC_OK) {
        if (ph)
            otc_neat_phenotype_free(ph);
        else
            otc_graph_free(graph);
        return s;
    }
    *out = graph;
    if (!ph) return OTC_OK;
    ph->graph = NULL;
    otc_neat_phenotype_free(ph);
    return OTC_OK;
}
