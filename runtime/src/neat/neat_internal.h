/* Private to runtime/src/neat: helpers shared by the NEAT files (seed derivation, gene
 * attribute sampling, the population's layout). */
#ifndef OTC_NEAT_INTERNAL_H
#define OTC_NEAT_INTERNAL_H

#include <stdatomic.h>

#include "otc/neat.h"
#include "otc/neat_flat.h"

/* A stream seed from (seed, a, b): evaluation seeds are (seed, generation, index), so results
 * do not depend on which thread evaluates which genome. */
uint64_t otc_neat_mix_seed(uint64_t seed, uint64_t a, uint64_t b);

/* neat-python's FloatAttribute: init_value, and mutate (perturb with probability
 * mutate_rate, else replace with probability replace_rate), clamped to [min, max]. */
float otc_neat_attr_init(const otc_neat_float_attr *a, otc_rng *rng);
float otc_neat_attr_mutate(const otc_neat_float_attr *a, float v, otc_rng *rng);
float otc_neat_attr_clamp(const otc_neat_float_attr *a, double v);

typedef struct otc_neat_pool otc_neat_pool; /* evaluate.c's helper threads */

enum { OTC_NEAT_RUNNING, OTC_NEAT_STOP_SOLVED, OTC_NEAT_STOP_THRESHOLD, OTC_NEAT_STOP_EXTINCT };

/* The population's grow-only per-generation arrays (otc_neat_scratch), one slot per array that
 * is live at the same time as others: a generation in steady state allocates none. */
enum {
    OTC_NEAT_SCRATCH_STEP_FLAGS, /* otc_neat_step */
    OTC_NEAT_SCRATCH_STEP_FIT,
    OTC_NEAT_SCRATCH_EVAL_GENOMES, /* otc_neat_evaluate_all */
    OTC_NEAT_SCRATCH_EVAL_SEEDS,
    OTC_NEAT_SCRATCH_EVAL_INDEX,
    OTC_NEAT_SCRATCH_EVAL_FLAGS,
    OTC_NEAT_SCRATCH_REPRO_VALS, /* otc_neat_reproduce */
    OTC_NEAT_SCRATCH_REPRO_AF,
    OTC_NEAT_SCRATCH_REPRO_RANK,
    OTC_NEAT_SCRATCH_REPRO_ALIVE,
    OTC_NEAT_SCRATCH_REPRO_SPAWN,
    OTC_NEAT_SCRATCH_REPRO_PENAL,
    OTC_NEAT_SCRATCH_REPRO_RANKED,
    OTC_NEAT_SCRATCH_REPRO_ORDER,
    OTC_NEAT_SCRATCH_REPRO_NEXT,
    OTC_NEAT_SCRATCH_SPAWN_ORDER, /* the offspring counts (reproduce.c) */
    OTC_NEAT_SCRATCH_SPAWN_SIZE,
    OTC_NEAT_SCRATCH_SPAWN_COUNTS,
    OTC_NEAT_SCRATCH_SPAWN_SHARED,
    OTC_NEAT_SCRATCH_SPECIATE_FIRST, /* otc_neat_speciate */
    OTC_NEAT_SCRATCH_SLOTS
};

typedef struct otc_neat_novelty otc_neat_novelty; /* select_novelty.c */
typedef struct otc_neat_front otc_neat_front;     /* front.c */

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
    otc_neat_evaluator *evaluator; /* flat programs and threads, kept across generations */
    int n_spare, cap_spare;        /* genomes of the last generation, to be overwritten */
    otc_neat_genome **spare;
    int spare_nodes, spare_conns; /* genes a spare is given room for (this generation's most) */
    /* Retired species' member arrays (each of members_cap entries, as every species' array
     * made here), reused by otc_neat_species_add. */
    int members_cap, n_spare_members, cap_spare_members;
    int **spare_members;
    struct {
        void *items;
        int cap;
    } scratch[OTC_NEAT_SCRATCH_SLOTS];
    otc_neat_novelty *novelty; /* selection = novelty: the archive (NULL before) */
    otc_neat_front *front;     /* the Pareto front when tracked (NULL: not) */
    /* The last evaluated generation's behaviours (n_behaviours of behaviour_dim numbers;
     * 0: the task gave none), for pictures such as the maze's. */
    float *behaviours;
    int n_behaviours, behaviour_dim, cap_behaviours;
};

/* Selection beyond fitness: the value reproduction ranks and shares in place of fitness,
 * val[i] for genome i (higher better, non-negative). NSGA-II: the fitness discounted by the
 * genome's Pareto rank over the config's objectives, crowding breaking near ties
 * (select_nsga2.c). Novelty: the blend of scaled novelty and scaled
 * fitness, after the generation's behaviours updated the archive (`evaluated` genomes were
 * new this generation; default_threshold: the task's, when the config gives none). */
otc_status otc_neat_nsga2_values(otc_neat_population *p, double *val);
/* The first objective of c that is a cost (minimised), -1 when none is; whether c's
 * objectives name diversity (select_nsga2.c). */
int otc_neat_first_cost(const otc_neat_config *c);
bool otc_neat_wants_diversity(const otc_neat_config *c);
/* Each genome's diversity from the generation's behaviours (after keep_behaviours); a config
 * error naming the key when the task gave none (select_novelty.c). */
otc_status otc_neat_diversity_update(otc_neat_population *p);
otc_status otc_neat_novelty_values(otc_neat_population *p, double default_threshold, long evaluated,
                                   double *val);
/* Under NSGA-II, genome `index` of the generation (a solver) with each enabled connection
 * turned off, in gene order, while it still solves (simplify.c): *out a new genome (NULL when
 * the first non-fitness objective is not one a connection lowers), *trials the evaluations it
 * took. */
/* neat-python's _prune_dangling_nodes (mutate.c): hidden nodes with no enabled path to an
 * output go, with their connections; the outputs are unchanged. */
void otc_neat_prune_dangling(otc_neat_genome *g);
otc_status otc_neat_simplify_solver(otc_neat_population *p, const otc_neat_task *task, int index,
                                    otc_neat_genome **out, int *trials);
void otc_neat_novelty_free(otc_neat_novelty *nv);
/* The novelty archive as a checkpoint records it (checkpoint.c): the behaviours and the
 * threshold's state. get: false before the first generation made one; set: replaces p's. */
typedef struct {
    int dim, n;
    const float *archive; /* n behaviours of dim numbers */
    double threshold, floor;
    long quiet;
} otc_neat_novelty_state;
bool otc_neat_novelty_get(const otc_neat_population *p, otc_neat_novelty_state *st);
otc_status otc_neat_novelty_set(otc_neat_population *p, const otc_neat_novelty_state *st);
/* The generation's evaluated genomes into the tracked front (none tracked: nothing). */
otc_status otc_neat_front_update(otc_neat_population *p);
/* One evaluated genome offered to the tracked front (copied when no member beats it). */
otc_status otc_neat_front_offer(otc_neat_population *p, const otc_neat_genome *g);
/* A member back into p's tracked front from a checkpoint (it takes g; v in the objectives'
 * own sense, as otc_neat_front_values gives them). */
otc_status otc_neat_front_restore(otc_neat_population *p, otc_neat_genome *g, int generation,
                                  const double *v);
void otc_neat_front_free(otc_neat_front *f);
/* g's phenotype with metadata "genome" and "neat" as otc_neat_champion_graph's (generation:
 * when g was evaluated; solved: the run's outcome). */
otc_status otc_neat_genome_graph(const otc_neat_population *p, const otc_neat_genome *g,
                                 int generation, bool solved, const otc_neat_task *task,
                                 otc_graph **out);

/* Grow-only array: *items gets room for at least `need` items of `size` bytes (doubling, its
 * contents kept); false when out of memory. */
bool otc_neat_grow(void **items, int *cap, int need, size_t size);
/* The population's scratch array `slot` (OTC_NEAT_SCRATCH_*) with room for n items of `size`
 * bytes, contents unspecified, kept across generations; NULL when out of memory. */
void *otc_neat_scratch(otc_neat_population *p, int slot, int n, size_t size);

/* Genomes reused in place (reproduction recycles the previous generation's, so a generation
 * in steady state allocates almost nothing): room for at least `nodes` and `conns` genes
 * (false when out of memory); dst becomes a copy of src in dst's own arrays; the child of a
 * and b (otc_neat_crossover's) written into k. */
bool otc_neat_genome_reserve(otc_neat_genome *g, int nodes, int conns);
otc_status otc_neat_genome_copy_into(otc_neat_genome *dst, const otc_neat_genome *src);
otc_status otc_neat_crossover_into(const otc_neat_genome *a, const otc_neat_genome *b,
                                   const otc_neat_config *c, otc_rng *rng, otc_neat_genome *k);
/* A genome to overwrite: one of the previous generation's (p->spare) or a new one; NULL when
 * out of memory. otc_neat_recycle gives g back (freed when the spares are full). */
otc_neat_genome *otc_neat_spare_genome(otc_neat_population *p);
void otc_neat_recycle(otc_neat_population *p, otc_neat_genome *g);
/* Each species' fitness over its members and when it last improved (vals: scratch of at
 * least the population's size). */
void otc_neat_species_score(otc_neat_population *p, double *vals);
/* next[0 .. made) replace p's genomes (recycled), unevaluated and in no species yet. */
void otc_neat_adopt_generation(otc_neat_population *p, otc_neat_genome **next, int made);

/* Append a species with a copy of rep as representative; returns its index or -1. */
int otc_neat_species_add(otc_neat_population *p, int id, const otc_neat_genome *rep, int created);
void otc_neat_species_clear(otc_neat_species *s);
/* otc_neat_species_clear keeping the memory: the representative to p's spare genomes, the
 * member array to p's spare member arrays (species.c and reproduce.c retire species; the
 * neat-python rules, which size member arrays their own way, clear them). */
void otc_neat_species_retire(otc_neat_population *p, otc_neat_species *s);
/* Reproduction: the next generation's genomes replace the current ones (species are then
 * re-formed by otc_neat_speciate). */
otc_status otc_neat_reproduce(otc_neat_population *p);
/* Parallel evaluation of every genome not yet evaluated, here or by `remote` (NULL: here);
 * solved[i] tells which met the task's criterion (n_genomes flags). */
otc_status otc_neat_evaluate_all(otc_neat_population *p, otc_neat_task *task,
                                 const otc_neat_remote *remote, int threads, bool *solved);
/* Evaluation overlapping reproduction: otc_neat_ahead_begin sets the population's helper
 * threads (threads - 1 of them; none when threads < 2) on the next generation's genomes as
 * reproduction hands them over, complete, with otc_neat_ahead_push (in population order);
 * otc_neat_ahead_end has the calling thread join until every one is evaluated (a no-op when
 * no ahead job runs). Genomes are only read meanwhile; the results are recorded by that
 * generation's otc_neat_evaluate_all exactly as its own evaluation would record them. */
otc_status otc_neat_ahead_begin(otc_neat_population *p, const otc_neat_task *task, int threads);
void otc_neat_ahead_push(otc_neat_population *p, otc_neat_genome *g);
void otc_neat_ahead_end(otc_neat_population *p);
/* The evaluator's program for the calling thread (NULL before its first batch). */
otc_neat_flat *otc_neat_evaluator_scratch(const otc_neat_evaluator *e);
/* Other work on the evaluator's helper threads (evaluate.c), when no evaluation runs:
 * otc_neat_pool_start has up to workers - 1 helpers (started when missing) call fn(ctx, w),
 * w = 1, 2, ..., and returns how many may (0: none, the caller does all); the caller works
 * too (as worker 0), then otc_neat_pool_wait waits for the helpers that joined. fn shares
 * out the work itself, so a helper scheduled late finds it done. */
typedef void (*otc_neat_pool_fn)(void *ctx, int worker);
int otc_neat_pool_start(otc_neat_evaluator *e, int workers, otc_neat_pool_fn fn, void *ctx);
void otc_neat_pool_wait(otc_neat_evaluator *e);
/* Helper threads the evaluator has started (0: none; a run on one thread starts none). */
int otc_neat_pool_helpers(const otc_neat_evaluator *e);

/* A CTRNN genome's phenotype (phenotype_ctrnn.c): p->graph, p->input and the outputs as
 * neat-python's CTRNN.advance over the config's ctrnn times, through the neat-python
 * importer's lowering (otc/neat_python.h); no neuron map (p->n_neurons 0: nothing to write
 * back). Which neurons are evaluated is otc_neat_ctrnn_evaluated's. */
otc_status otc_neat_ctrnn_phenotype(const otc_neat_genome *g, const otc_neat_config *c,
                                    otc_neat_phenotype *p);

/* Genome <-> cJSON tree, for files that hold genomes among other things. */
struct cJSON;
struct cJSON *otc_neat_genome_to_cjson(const otc_neat_genome *g);
otc_status otc_neat_genome_from_cjson(const struct cJSON *j, otc_neat_genome **out);
/* Statistic aggregation used for fitness criteria and species fitness. */
double otc_neat_aggregate(otc_neat_agg agg, const double *v, int n);

/* neat-python's rules (neat_python_rules.c), taken when config.np_evolution: its genome
 * distance (node genes and connection genes), speciation, and reproduction (its offspring
 * counts: otc_neat_np_spawn in otc/neat.h). */
double otc_neat_np_distance(const otc_neat_genome *a, const otc_neat_genome *b,
                            const otc_neat_config *c);
otc_status otc_neat_np_speciate(otc_neat_population *p);
otc_status otc_neat_np_reproduce(otc_neat_population *p);
void otc_neat_np_spawn(int n, const double *af, const int *prev, int pop, int min_size, int *spawn);
otc_status otc_neat_stats_push(otc_neat_population *p, const otc_neat_gen_stats *s);

/* The flat program bound to the calling thread while it evaluates genomes (evaluate.c binds a
 * worker's own; NULL when none is bound). */
otc_neat_flat *otc_neat_eval_scratch(void);
void otc_neat_bind_eval_scratch(otc_neat_flat *f);
/* Threads a task's confirm may use, bound by otc_neat_confirm for the calling thread (1 when
 * none is bound). */
int otc_neat_eval_threads(void);
void otc_neat_bind_eval_threads(int n);
/* The evaluator whose helpers a task's confirm may use, bound like the threads (NULL when
 * none is: the confirm then starts threads of its own). */
otc_neat_evaluator *otc_neat_eval_evaluator(void);
void otc_neat_bind_eval_evaluator(otc_neat_evaluator *e);

/* A genome made runnable: the flat program when the task asks for no executor (the bound
 * scratch program, or one of its own), else its phenotype graph and the task's executor. With
 * the task's make_compiled, the flat program hands over to compiled code after compile_after
 * rows (task.c). */
typedef struct {
    otc_neat_flat *flat, *own;
    otc_neat_phenotype *ph;
    otc_executor *ex;
    const otc_neat_task *task; /* for the switch: the task, config and genome opened with */
    const otc_neat_config *c;
    const otc_neat_genome *g;
    long rows;  /* stepped on the flat program so far */
    bool fixed; /* no switch (any more): stays on what it runs */
    /* When set (by another thread), forward fails at once: a run nobody wants any more (a
     * cancelled speculative generalisation, task.c) ends within a step. */
    const atomic_bool *cancel;
} otc_neat_runner;

otc_status otc_neat_runner_open(const otc_neat_task *task, const otc_neat_config *c,
                                const otc_neat_genome *g, otc_neat_runner *r);
void otc_neat_runner_close(otc_neat_runner *r);
/* From the flat program to the task's make_compiled code (runner_compiled.c); the flat
 * program stays on when the genome cannot switch or compiling fails. */
void otc_neat_runner_switch(otc_neat_runner *r);
/* Forward `batch` rows of x [batch, n_inputs]; y gets [batch, n_outputs]. */
otc_status otc_neat_runner_forward(otc_neat_runner *r, const float *x, int batch, float *y);
/* Recurrent state back to zero. */
void otc_neat_runner_reset(otc_neat_runner *r);

/* The csv and sequence tasks score a genome alike: its training fitness and validation MSE
 * and accuracy (after hybrid training when `train`), and when `behaviour` is not NULL and the
 * task has one, its behaviour characterisation. Their context starts with this function, so
 * one evaluate and one confirm (task_csv.c) serve both. */
typedef otc_status (*otc_neat_score_fn)(const otc_neat_task *task, const otc_neat_config *c,
                                        otc_neat_genome *g, uint64_t seed, double *fitness,
                                        double *mse, double *acc, bool train,
                                        otc_neat_eval *behaviour);
otc_status otc_neat_scored_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                    otc_neat_genome *g, uint64_t seed, otc_neat_eval *out);
otc_status otc_neat_scored_confirm(const otc_neat_task *task, const otc_neat_config *c,
                                   const otc_neat_genome *g, bool *solved, double *score);

/* maze:NAME (task_maze.c): Lehman & Stanley's maze navigation (otc/neat_maze.h). */
otc_status otc_neat_maze_task_create(const char *name, const otc_neat_config *c,
                                     otc_neat_task **out);
/* The csv task (task_csv.c). */
/* exec:PROGRAM (task_exec.c): an environment process speaking the line protocol. */
otc_status otc_neat_exec_task_create(const char *program, const otc_neat_config *c,
                                     otc_neat_task **out);
/* "visual" / "visual:N" (HyperNEAT's visual discrimination at N x N, N a multiple of 11). */
otc_status otc_neat_visual_task_create(const char *spec, const otc_neat_config *c,
                                       otc_neat_task **out);
/* "retina", "retina:and", "retina:or" (the left-and-right retina problem, task_retina.c). */
otc_status otc_neat_retina_task_create(const char *spec, const otc_neat_config *c,
                                       otc_neat_task **out);
otc_status otc_neat_csv_task_create(const char *path, const otc_neat_config *c,
                                    otc_neat_task **out);
/* The csv task on sequences, [Task] sequence set (task_seq.c). */
otc_status otc_neat_seq_task_create(const char *path, const otc_neat_config *c,
                                    otc_neat_task **out);
/* Hybrid training's loss: a target Input [batch, width] and the MSE of the phenotype's outputs
 * (concatenated) against it, added to ph's graph (task_csv.c). */
otc_status otc_neat_hybrid_loss(otc_neat_phenotype *ph, int width, otc_id *target, otc_id *loss);

#endif
