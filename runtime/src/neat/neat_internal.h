/* Private to runtime/src/neat: helpers shared by the NEAT files (seed derivation, gene
 * attribute sampling, the population's layout). */
#ifndef OTC_NEAT_INTERNAL_H
#define OTC_NEAT_INTERNAL_H

#include "otc/neat.h"

/* A stream seed from (seed, a, b): evaluation seeds are (seed, generation, index), so results
 * do not depend on which thread evaluates which genome. */
uint64_t otc_neat_mix_seed(uint64_t seed, uint64_t a, uint64_t b);

/* neat-python's FloatAttribute: init_value, and mutate (perturb with probability
 * mutate_rate, else replace with probability replace_rate), clamped to [min, max]. */
float otc_neat_attr_init(const otc_neat_float_attr *a, otc_rng *rng);
float otc_neat_attr_mutate(const otc_neat_float_attr *a, float v, otc_rng *rng);
float otc_neat_attr_clamp(const otc_neat_float_attr *a, double v);

enum { OTC_NEAT_RUNNING, OTC_NEAT_STOP_SOLVED, OTC_NEAT_STOP_THRESHOLD, OTC_NEAT_STOP_EXTINCT };

struct otc_neat_population {
    otc_neat_config config;
    char task[64]; /* the task's name, from the first step (checkpoints record it) */
    uint64_t seed;
    int generation;
    long evaluations;
    double threshold;
    int next_species_id;
    double pop_best;         /* best fitness so far, for population_stagnation */
    int pop_best_generation; /* when it last improved (or delta coding last ran) */
    otc_neat_innovations *innov;
    int n_genomes;
    otc_neat_genome **genomes;
    int n_species, cap_species;
    otc_neat_species *species;
    otc_neat_genome *champion; /* best ever, or the solver (a copy) */
    int champion_generation;
    int stop; /* why the run stopped: OTC_NEAT_STOP_* */
    int n_stats, cap_stats;
    otc_neat_gen_stats *stats;
};

/* Append a species with a copy of rep as representative; returns its index or -1. */
int otc_neat_species_add(otc_neat_population *p, int id, const otc_neat_genome *rep, int created);
void otc_neat_species_clear(otc_neat_species *s);
/* Reproduction: the next generation's genomes replace the current ones (species are then
 * re-formed by otc_neat_speciate). */
otc_status otc_neat_reproduce(otc_neat_population *p);
/* Parallel evaluation of every genome not yet evaluated; solved[i] tells which met the task's
 * criterion (n_genomes flags). */
otc_status otc_neat_evaluate_all(otc_neat_population *p, otc_neat_task *task, int threads,
                                 bool *solved);

/* Genome <-> cJSON tree, for files that hold genomes among other things. */
struct cJSON;
struct cJSON *otc_neat_genome_to_cjson(const otc_neat_genome *g);
otc_status otc_neat_genome_from_cjson(const struct cJSON *j, otc_neat_genome **out);
/* Statistic aggregation used for fitness criteria and species fitness. */
double otc_neat_aggregate(otc_neat_agg agg, const double *v, int n);
otc_status otc_neat_stats_push(otc_neat_population *p, const otc_neat_gen_stats *s);

/* A genome made runnable: its phenotype and an executor over it (the task's backend). */
typedef struct {
    otc_neat_phenotype *ph;
    otc_executor *ex;
} otc_neat_runner;

otc_status otc_neat_runner_open(const otc_neat_task *task, const otc_neat_config *c,
                                const otc_neat_genome *g, otc_neat_runner *r);
void otc_neat_runner_close(otc_neat_runner *r);
/* Forward `batch` rows of x [batch, n_inputs]; y gets [batch, n_outputs]. */
otc_status otc_neat_runner_forward(otc_neat_runner *r, const float *x, int batch, float *y);

/* The csv task (task_csv.c). */
/* exec:PROGRAM (task_exec.c): an environment process speaking the line protocol. */
otc_status otc_neat_exec_task_create(const char *program, const otc_neat_config *c,
                                     otc_neat_task **out);
otc_status otc_neat_csv_task_create(const char *path, const otc_neat_config *c,
                                    otc_neat_task **out);

#endif
