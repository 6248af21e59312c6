/* NEAT evolution: tasks (fitness functions), the population with its species, one
 * generation at a time or a whole run, checkpoints, statistics and the champion graph. */
#ifndef OTC_NEAT_H
#define OTC_NEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor.h"
#include "neat_config.h"
#include "neat_flat.h"
#include "neat_genome.h"
#include "neat_select.h"

/* ---- tasks ----------------------------------------------------------------------------- */

typedef struct {
    double fitness;
    bool solved; /* this genome met the task's success criterion on its own */
    /* Optional: its behaviour characterisation for novelty search (n_bc numbers, at most
     * OTC_NEAT_MAX_BC; 0: none), e.g. the maze robot's final position. */
    int n_bc;
    float bc[OTC_NEAT_MAX_BC];
    double measure; /* optional: the task's own measure of the genome (task->measure_name) */
} otc_neat_eval;

/* e emptied for an evaluation: everything 0 but the behaviour's numbers, of which only the
 * first n_bc are ever read (clearing all OTC_NEAT_MAX_BC would cost a cheap task's evaluation
 * several percent). */
static inline void otc_neat_eval_reset(otc_neat_eval *e) {
    e->fitness = 0;
    e->solved = false;
    e->n_bc = 0;
    e->measure = 0;
}

typedef otc_executor *(*otc_neat_executor_fn)(otc_graph *g, const otc_exec_options *o);

typedef struct otc_neat_task otc_neat_task;
struct otc_substrate;                       /* otc/hyperneat.h */
typedef struct otc_neat_feed otc_neat_feed; /* a worker's genomes for evaluate_lanes */
struct otc_neat_task {
    char name[64];
    int n_inputs, n_outputs;
    bool needs_feed_forward; /* e.g. the csv task trains on independent rows */
    /* How phenotypes are run: NULL (the built-in tasks' default) lowers each genome to a flat
     * program (neat_flat.h); an executor factory (otc_interpreter_new, the JIT) runs each
     * genome's phenotype graph instead. Hybrid training always builds the graph (under
     * otc_interpreter_new when NULL). */
    otc_neat_executor_fn make_executor;
    /* Optional, with make_executor NULL (otc evolve --jit): compiled code for a genome that
     * runs long. Genomes run on the flat program; once one runner has stepped compile_after
     * rows (a compile's break-even), the genome's phenotype graph runs under make_compiled from
     * the next step on, each neuron's recurrent state handed over to its Delay (set_state).
     * make_compiled must compute what the flat program computes bit for bit (the JIT's exact
     * option), so results do not depend on it; when it returns NULL the flat program carries
     * on. CTRNNs and neurons that do not sum stay on the flat program. */
    otc_neat_executor_fn make_compiled;
    long compile_after;
    /* The fitness of one genome. Called from several threads at once: it may change only g
     * (hybrid training writes weights back) and must draw randomness only from seed. */
    otc_status (*evaluate)(const otc_neat_task *task, const otc_neat_config *c, otc_neat_genome *g,
                           uint64_t seed, otc_neat_eval *out);
    /* Optional, for tasks whose evaluation never writes into the genome: a worker's genomes
     * evaluated `lanes` at a time (the pole tasks step that many trials side by side so their
     * independent arithmetic overlaps), each genome's result exactly evaluate's. The task
     * takes genomes from the feed (otc_neat_feed_take) as its lanes come free and hands each
     * result back (otc_neat_feed_done); flats[0 .. lanes) are the worker's programs for it. */
    int lanes;
    otc_status (*evaluate_lanes)(const otc_neat_task *task, const otc_neat_config *c,
                                 otc_neat_flat **flats, otc_neat_feed *feed);
    /* Optional: the stricter success test run on each generation's champion (dpnv's
     * generalisation test, the csv task's validation accuracy). score is task-specific. */
    otc_status (*confirm)(const otc_neat_task *task, const otc_neat_config *c,
                          const otc_neat_genome *g, bool *solved, double *score);
    const char *score_name; /* what confirm's score is ("generalisation", "val_accuracy") */
    /* What evaluate's out->measure is, when the task reports a measure of its own beside the
     * fitness (otc evolve prints it for the champion); NULL: none. */
    const char *measure_name;
    /* When true, confirm is not run on the generation's best genome but, as in Stanley's
     * pole2_epoch, on the champion of the fittest species not yet tested since its best last
     * improved (the fittest species when all have been): a champion that failed is not
     * retested every generation while other species' champions wait (dpnv). */
    bool confirm_rotates_species;
    /* Simulated seconds per action (pole1:neat-python: 0.01), what a CTRNN phenotype advances
     * per forward when the config gives no times (otc_neat_ctrnn_times); 0: none. */
    double action_time;
    /* What novelty search needs of the task: the numbers in each evaluation's behaviour
     * characterisation (0: none; -1: given by the task as it runs, exec:'s bc lines) and the
     * archive's initial threshold on the distance between two of them. */
    int n_bc;
    double novelty_threshold;
    /* The standardisation the task applies to its inputs before a network sees them:
     * (x - input_mean) / input_std per input (NULL: none; the csv task's, fitted on its
     * training rows). otc_neat_champion_graph builds it into the model ahead of the network,
     * so a saved champion runs on raw rows on every backend. Owned by the task. */
    const float *input_mean, *input_std;
    /* HyperNEAT tasks (optional): the substrate g is scored on, as evaluate makes it (painted
     * by the CPPN g; trained with [Hybrid] train_steps), in *out (the caller frees it with
     * otc_substrate_free). What otc_neat_champion_graph saves and --substrate-svg draws; NULL:
     * the substrate g paints. */
    otc_status (*substrate)(const otc_neat_task *task, const otc_neat_config *c,
                            const otc_neat_genome *g, struct otc_substrate **out);
    void (*destroy)(otc_neat_task *task);
    void *ctx;
};

/* The task's fitness of g averaged over `episodes` episodes (< 1 means 1); episode 0 is
 * evaluated with `seed` itself (so one episode is task->evaluate), episode k with
 * otc_neat_episode_seed(seed, k). Solved when every episode is. each (NULL, or `episodes`
 * doubles) receives the episodes' fitnesses. Evolution evaluates every genome this way with
 * the config's [Task] episodes. */
otc_status otc_neat_evaluate_episodes(const otc_neat_task *task, const otc_neat_config *c,
                                      otc_neat_genome *g, uint64_t seed, int episodes, double *each,
                                      otc_neat_eval *out);
uint64_t otc_neat_episode_seed(uint64_t seed, int episode);

/* task->confirm on g with up to `threads` threads (<= 0 means 1; dpnv splits its
 * generalisation starts among them, with the same result on any count), as otc_neat_step runs
 * it on each generation's candidate. OTC_ERR_ARG when the task has no confirm test. */
otc_status otc_neat_confirm(const otc_neat_task *task, const otc_neat_config *c,
                            const otc_neat_genome *g, int threads, bool *solved, double *score);

/* A worker's genomes handed to evaluate_lanes: otc_neat_feed_take gives the next one (its
 * index, >= 0, with the genome and its seed), -1 when none is left, -2 when none is ready yet
 * (only when wait is false; with wait it waits for one); otc_neat_feed_done records genome
 * `index`'s evaluation (status s, and *ev when s is OTC_OK) as evaluate's would be. */
int otc_neat_feed_take(otc_neat_feed *f, bool wait, otc_neat_genome **g, uint64_t *seed);
void otc_neat_feed_done(otc_neat_feed *f, int index, otc_status s, const otc_neat_eval *ev);

/* "xor", "xor:neat-python" (neat-python's example fitness 4 - sum err^2, solved at the
 * config's fitness_threshold), "pole1", "pole1:neat-python" (neat-python's single-pole example:
 * otc/pole.h, 4 inputs, fitness in seconds, solved at fitness_threshold), "dpv", "dpnv", "csv:FILE"
 * or "exec:PROGRAM" (an environment process, runtime/src/neat/tasks/task_exec.c; options from the
 * config's [Task]). Checks the config's num_inputs/num_outputs against the task. */
otc_status otc_neat_task_create(const char *spec, const otc_neat_config *c, otc_neat_task **out);
/* The built-in tasks' names (xor, ..., dpnv; csv:FILE and exec:PROGRAM besides); returns their
 * count. */
int otc_neat_task_names(const char *const **names);
void otc_neat_task_free(otc_neat_task *t);
/* Kills the process group of every live exec: environment (async-signal-safe). For paths that
 * end the process without exit() or the default action of SIGINT/SIGTERM/SIGHUP (which do it
 * themselves): a signal handler of the program's own that calls _exit, MPI_Abort. */
void otc_neat_exec_end_all(void);
/* Under ctrnn, the config's ctrnn_advance_time and ctrnn_time_step where it leaves them 0:
 * both the task's action_time (OTC_ERR_CONFIG naming the keys when it has none). Call after
 * creating the task and before creating or resuming a population. */
otc_status otc_neat_ctrnn_times(otc_neat_config *c, const otc_neat_task *task);

/* ---- the population ------------------------------------------------------------------------ */

typedef struct {
    int id;
    int created, last_improved;
    double fitness;       /* species_fitness_func of the members, last generation */
    double best_fitness;  /* best species fitness so far (for stagnation) */
    double confirm_best;  /* best member fitness in earlier generations (for confirm rotation) */
    bool confirm_checked; /* its champion was confirm-tested since confirm_best last rose */
    otc_neat_genome *representative;
    int n_members;
    int *members; /* indices into the population */
} otc_neat_species;

typedef struct {
    int generation;
    long evaluations; /* total so far, including this generation */
    double best_fitness, mean_fitness, stdev_fitness;
    int n_species;
    double threshold;
    double mean_hidden, mean_connections;
    int champion_hidden, champion_connections; /* this generation's best genome */
    double confirm_score; /* the champion's confirm score, NaN when not tested */
    double seconds;       /* wall time (the only field that differs run to run) */
} otc_neat_gen_stats;

typedef struct otc_neat_population otc_neat_population;

/* A fresh, speciated population of config.pop_size genomes drawn from seed. */
otc_status otc_neat_population_new(const otc_neat_config *c, uint64_t seed,
                                   otc_neat_population **out);
void otc_neat_population_free(otc_neat_population *p);

int otc_neat_population_size(const otc_neat_population *p);
otc_neat_genome *otc_neat_population_genome(otc_neat_population *p, int i);
int otc_neat_population_species_count(const otc_neat_population *p);
const otc_neat_species *otc_neat_population_species(const otc_neat_population *p, int i);
otc_neat_innovations *otc_neat_population_innovations(otc_neat_population *p);
/* Reassign every genome to a species (first species whose representative is within the
 * threshold, else a new one); the threshold adapts when target_species is set. */
otc_status otc_neat_speciate(otc_neat_population *p);

/* ---- evaluating genomes, here or elsewhere ---- */

/* Genomes to evaluate, each with its own randomness: a generation's genome i draws from
 * otc_neat_genome_seed(p, i), so its fitness is the same wherever it is evaluated. */
typedef struct {
    otc_neat_genome *const *genomes; /* those already evaluated are skipped */
    const uint64_t *seeds;
    const int *index; /* each genome's index in its generation, for messages (NULL: 0, 1, ...) */
    int n, generation;
    bool *solved; /* out: n flags, the genomes that met the task's criterion */
} otc_neat_batch;

/* Flat programs and helper threads, reused across batches. */
typedef struct otc_neat_evaluator otc_neat_evaluator;
otc_neat_evaluator *otc_neat_evaluator_new(void);
void otc_neat_evaluator_free(otc_neat_evaluator *e);

/* Evaluates a batch on up to `threads` threads as a generation does: each genome's fitness
 * (less the complexity penalty), evaluated flag and solved flag, and the weights a hybrid
 * task trained written back into it. */
otc_status otc_neat_evaluate_batch(otc_neat_evaluator *e, const otc_neat_task *task,
                                   const otc_neat_config *c, const otc_neat_batch *b, int threads);
uint64_t otc_neat_genome_seed(const otc_neat_population *p, int i);

/* A generation's evaluation done elsewhere (otc/neat_mpi.h: other processes), with the
 * effects otc_neat_evaluate_batch has. */
typedef struct {
    otc_status (*evaluate)(void *ctx, const otc_neat_task *task, const otc_neat_config *c,
                           const otc_neat_batch *b, int threads);
    void *ctx;
} otc_neat_remote;

/* The most evaluation threads a caller asks for (otc evolve --threads, otc.neat's run): more
 * only cost memory and start-up time, genomes being the unit of work. */
#define OTC_NEAT_MAX_THREADS      1024
#define OTC_NEAT_MAX_THREADS_TEXT "1024"

typedef struct {
    int threads; /* evaluation threads (results do not depend on it); <= 0 means 1 */
    const otc_neat_remote *remote; /* NULL: evaluate in this process */
    /* No step follows this one in this run: the children it makes are not evaluated ahead
     * (on >= 2 threads the helpers otherwise evaluate them while reproduction runs). */
    bool last;
} otc_neat_step_options;

/* One generation: evaluate every genome in parallel, record statistics, and unless a
 * genome solved the task, reproduce and speciate. *solved (optional) tells which. */
otc_status otc_neat_step(otc_neat_population *p, otc_neat_task *task,
                         const otc_neat_step_options *o, bool *solved);

/* Generation about to be evaluated (0 at the start). */
int otc_neat_generation(const otc_neat_population *p);
long otc_neat_evaluations(const otc_neat_population *p);
/* Every species stagnated and reset_on_extinction is off: the run cannot go on. */
bool otc_neat_extinct(const otc_neat_population *p);
double otc_neat_threshold(const otc_neat_population *p);
/* The best genome seen so far (NULL before the first evaluation), and whether it solved the
 * task (the solving genome, when one did, is the champion). */
const otc_neat_genome *otc_neat_champion(const otc_neat_population *p);
bool otc_neat_solved(const otc_neat_population *p);
/* Per-generation statistics, oldest first. */
int otc_neat_stats_count(const otc_neat_population *p);
const otc_neat_gen_stats *otc_neat_stats(const otc_neat_population *p, int i);

/* ---- a whole run ----------------------------------------------------------------------------- */

typedef struct {
    int generations; /* stop after this generation count (total, counting resumed ones) */
    int threads;
    const otc_neat_remote *remote; /* NULL: evaluate in this process */
    int checkpoint_every;          /* 0: none */
    const char *checkpoint_prefix; /* checkpoints go to "<prefix><generation>.json" */
    /* Called after every generation (the frontend prints progress from it). */
    void (*on_generation)(void *ctx, const otc_neat_population *p, const otc_neat_gen_stats *s);
    void *ctx;
} otc_neat_run_options;

/* Steps until solved, extinct, or o->generations generations have run. */
otc_status otc_neat_run(otc_neat_population *p, otc_neat_task *task, const otc_neat_run_options *o,
                        bool *solved);

/* The offspring allocation `offspring_stanley` selects (public for tools and tests). */
/* Stanley's count_offspring: n species (in the order the reference walks them, i.e. creation
 * order) with size[k] members whose shared fitness values follow one another in shared[]; a
 * member expects shared / sum(shared) * pop children, whole parts go to its species, fractions
 * accumulate across members and species and are paid out as they pass 1, and a child lost to
 * rounding goes to the species expecting most (the last of equals). spawn[k] gets the counts. */
void otc_neat_stanley_offspring(int n, const int *size, const double *shared, int pop, int *spawn);
/* neat-python's offspring counts (reproduction.py compute_spawn, then _adjust_spawn_exact):
 * species with adjusted fitnesses af and previous sizes prev move halfway to their share of
 * pop (at least min_size), rounded as Python rounds (halves to even), then made to total pop. */
void otc_neat_np_spawn(int n, const double *af, const int *prev, int pop, int min_size, int *spawn);

/* ---- files ------------------------------------------------------------------------------------
 */

/* Everything the run needs to continue exactly as if never stopped (JSON, written atomically).
 * Call between generations. */
otc_status otc_neat_checkpoint_save(const otc_neat_population *p, const char *path);
/* Continue a run: c must be the config the run started with and task its task's name (NULL:
 * not checked); checkpoints record both and a difference is OTC_ERR_CONFIG naming the key.
 * Everything in the file is checked (genomes laid out as the config says, ids below the
 * counters, every genome in exactly one non-empty species, finite numbers...): a bad file is
 * OTC_ERR_FORMAT with a message "FILE: field, genome or species: what is wrong". Checkpoints
 * of format version 1 (before the task and config were recorded) are refused. */
otc_status otc_neat_checkpoint_load(const char *path, const otc_neat_config *c, const char *task,
                                    otc_neat_population **out);
/* The same from text in memory (name is used in messages). */
otc_status otc_neat_checkpoint_parse(const char *text, size_t len, const char *name,
                                     const otc_neat_config *c, const char *task,
                                     otc_neat_population **out);
uint64_t otc_neat_seed(const otc_neat_population *p);

/* Statistics as CSV (one row per generation) and best/mean fitness per generation as SVG. */
otc_status otc_neat_stats_save_csv(const otc_neat_population *p, const char *path);
otc_status otc_neat_stats_save_svg(const otc_neat_population *p, const char *title,
                                   const char *path);

/* The champion as a graph ready to save: its phenotype with metadata "genome" (the genome
 * JSON) and "neat" ({"task","generation","fitness","hidden_nodes","enabled_connections",
 * "evaluations","solved"}). The caller frees it. */
otc_status otc_neat_champion_graph(const otc_neat_population *p, const otc_neat_task *task,
                                   otc_graph **out);

/* A copy of g (one Input [batch, features]) that computes (x - mean) / std per feature, with
 * frozen parameters "input_mean" and "input_std", before any node of g reads x: the csv
 * task's standardisation carried by the saved model, and `otc train --standardize`'s
 * (phenotype_standardize.c). Metadata is copied. The caller frees *out. A model holding a
 * node named OTC_NEAT_INPUT_MEAN standardises its input already. */
#define OTC_NEAT_INPUT_MEAN "input_mean"
#define OTC_NEAT_INPUT_STD  "input_std"
otc_status otc_neat_graph_standardize_input(const otc_graph *g, const float *mean, const float *std,
                                            otc_graph **out);

/* The tracked Pareto front (otc/neat_select.h) as files in the existing directory dir:
 * member-K.otm for each member K (as otc_neat_champion_graph's), front.csv (member, file,
 * generation, fitness, connections, nodes, parameters, cost) and front.svg (fitness against
 * the first objective other than fitness, the knee marked). */
otc_status otc_neat_front_save(const otc_neat_population *p, const otc_neat_task *task,
                               const char *dir);
/* The member a budget chooses: the fittest with at most max_connections enabled connections
 * (< 0: any) and at most max_cost cost (< 0: any); the knee when neither is given. -1: none
 * fits. */
/* Front member i as a graph ready to save (as otc_neat_champion_graph's). */
otc_status otc_neat_genome_graph_of(const otc_neat_population *p, int i, const otc_neat_task *task,
                                    otc_graph **out);
int otc_neat_front_choose(const otc_neat_population *p, int max_connections, double max_cost);

#endif
