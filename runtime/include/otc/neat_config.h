/* NEAT configuration: neat-python's INI sections and key names, plus a few otc extensions
 * ([Hybrid] gradient training, [Task] options); every key is checked when it is read. */
#ifndef OTC_NEAT_CONFIG_H
#define OTC_NEAT_CONFIG_H

#include <stdbool.h>

#include "error.h"
#include "ops.h"

/* What a config may ask for (larger values are refused, naming the key and line): a run of
 * this size takes seconds to minutes per generation. */
#define OTC_NEAT_MAX_POP_SIZE 100000
#define OTC_NEAT_MAX_INPUTS   100000
#define OTC_NEAT_MAX_OUTPUTS  10000
#define OTC_NEAT_MAX_HIDDEN   10000
/* [Task] max_steps' default: an exec: episode that never says done ends after this many
 * steps (about 10 s of a Python environment), scored so far. */
#define OTC_NEAT_EXEC_MAX_STEPS 100000
/* pop_size x the genes (nodes + connections) of an initial genome: a gene takes about 20
 * bytes and reproduction holds two generations, so this is about 0.4 GB at the start. */
#define OTC_NEAT_MAX_INITIAL_GENES 10000000
/* Largest magnitude of gene attribute settings (init mean/stdev, mutate power, min/max
 * value), compatibility coefficients and thresholds: genes are floats. */
#define OTC_NEAT_MAX_MAGNITUDE 1e6

/* How parents are chosen and offspring shared (the [NEAT] selection key). */
typedef enum {
    OTC_NEAT_SELECT_FITNESS, /* the task's fitness (NEAT as published) */
    OTC_NEAT_SELECT_NSGA2,   /* Pareto rank and crowding over the objectives */
    OTC_NEAT_SELECT_NOVELTY  /* novelty of the behaviour, blended with fitness */
} otc_neat_selection;

/* The objectives NSGA-II selection sorts on (the [NEAT] objectives key). */
typedef enum {
    OTC_NEAT_OBJ_FITNESS,     /* the task's fitness, maximised */
    OTC_NEAT_OBJ_CONNECTIONS, /* enabled connections, minimised */
    OTC_NEAT_OBJ_NODES,       /* hidden nodes, minimised */
    OTC_NEAT_OBJ_PARAMETERS,  /* enabled weights + biases of the non-input nodes, minimised */
    OTC_NEAT_OBJ_COST,        /* multiply-adds + weight bytes per sample, minimised */
    /* HyperNEAT ([Substrate]): the painted substrate's expressed links, and their summed
     * squared length (otc_substrate_cost), minimised */
    OTC_NEAT_OBJ_SUBSTRATE_LINKS,
    OTC_NEAT_OBJ_SUBSTRATE_LENGTH,
    /* the mean behaviour distance to the rest of the generation (Mouret and Doncieux 2012's
     * behavioural diversity), maximised; tasks that give behaviours */
    OTC_NEAT_OBJ_DIVERSITY,
    OTC_NEAT_OBJ_COUNT
} otc_neat_objective;
#define OTC_NEAT_MAX_OBJECTIVES 4

typedef enum {
    OTC_NEAT_AGG_MAX,
    OTC_NEAT_AGG_MIN,
    OTC_NEAT_AGG_MEAN,
    OTC_NEAT_AGG_MEDIAN
} otc_neat_agg;

typedef enum {
    OTC_NEAT_CONNECT_UNCONNECTED,
    OTC_NEAT_CONNECT_FULL_NODIRECT, /* inputs -> hidden -> outputs (direct when no hidden) */
    OTC_NEAT_CONNECT_FULL_DIRECT,   /* and inputs -> outputs as well */
    OTC_NEAT_CONNECT_PARTIAL_NODIRECT,
    OTC_NEAT_CONNECT_PARTIAL_DIRECT,
    OTC_NEAT_CONNECT_FS_NEAT_NOHIDDEN, /* one random input to every output */
    OTC_NEAT_CONNECT_FS_NEAT_HIDDEN
} otc_neat_connect;

/* One float gene attribute (bias, response, weight), as neat-python's FloatAttribute. */
typedef struct {
    double init_mean, init_stdev;
    bool init_uniform; /* init_type = uniform: mean ± 2 stdev, clamped */
    double replace_rate, mutate_rate, mutate_power;
    double min_value, max_value;
} otc_neat_float_attr;

/* [Substrate] (otc, HyperNEAT): the genome is a CPPN that paints the weights of a layered
 * substrate of 2-D node grids (runtime/include/otc/hyperneat.h). */
#define OTC_SUBSTRATE_MAX_HIDDEN 4
/* ES-HyperNEAT's quadtree divisions (4^8 squares per search) and search rounds from hidden
 * nodes, at most. */
#define OTC_ES_MAX_DEPTH     8
#define OTC_ES_MAX_ITERATION 8
/* Connections a painted substrate may have (weights are floats: 64 MB). */
#define OTC_SUBSTRATE_MAX_CONNECTIONS (1 << 24)
typedef struct {
    int nx, ny; /* 0: not given */
} otc_neat_grid;

/* [Substrate] leo_seed: what the initial CPPNs' LEO output starts as (Verbancsics and Stanley
 * 2011 seed it with a locality bias). */
typedef enum {
    OTC_LEO_SEED_NONE,      /* like any output: random, fully connected */
    OTC_LEO_SEED_LOCALITY_X /* a Gaussian of x1 - x2: expresses only links short along x */
} otc_leo_seed;

typedef struct {
    bool enabled; /* the config has a [Substrate] section */
    otc_neat_grid input, output, hidden[OTC_SUBSTRATE_MAX_HIDDEN];
    int n_hidden;
    double weight_threshold, max_weight;
    bool leo; /* a CPPN output expresses a connection when > 0 (link expression) */
    otc_leo_seed leo_seed;
    bool bias_output;    /* a CPPN output paints each substrate node's bias */
    bool distance_input; /* the CPPN's fifth input: the distance between the two points */
    /* Two more CPPN inputs, z1 and z2: the source's and target's layer, evenly from -1 (the
     * input grid) to 1 (the output grid), so each layer pair gets weights of its own. */
    bool layer_input;
    otc_act activation; /* of the substrate's hidden and output nodes */
    /* ES-HyperNEAT (evolvable_substrate): the hidden nodes are placed by a quadtree search of
     * the CPPN's weights (hyperneat.h, otc_es_search) instead of hidden_grids. */
    bool evolvable;
    int initial_depth, maximum_depth, iteration_level;
    double division_threshold, variance_threshold, band_threshold;
} otc_neat_substrate;

typedef struct {
    /* [NEAT] */
    otc_neat_agg fitness_criterion;
    double fitness_threshold;
    bool no_fitness_termination;
    int pop_size;
    bool reset_on_extinction;
    bool has_seed;           /* seed was given (neat-python 2's [NEAT] seed) */
    unsigned long long seed; /* the run's seed when no --seed is given */
    /* otc: selection beyond fitness (docs/selection.md). Under nsga2 and novelty the value
     * species share and parents are ranked by replaces the raw fitness in reproduction; the
     * fitness is still recorded, and still stops the run. */
    otc_neat_selection selection;
    int n_objectives; /* objectives (default fitness, connections), also the --front's */
    otc_neat_objective objectives[OTC_NEAT_MAX_OBJECTIVES];
    /* The chance that a comparison of two genomes counts the objectives other than fitness
     * (else it compares their fitness alone): Clune et al. 2013's stochastic Pareto
     * dominance (1: always, plain NSGA-II) */
    double objective_probability;
    /* nsga2_value = rank: reproduction ranks by Pareto front and crowding alone, as Deb et
     * al.'s NSGA-II (every member of the first front alike, however unfit); false (fitness):
     * the fitness discounted per front behind the first (docs/selection.md) */
    bool nsga2_rank;
    double novelty_weight;    /* novelty's share of the value, 0..1 (the rest: fitness rank) */
    int novelty_k;            /* nearest neighbours whose mean distance is the novelty */
    double novelty_threshold; /* initial archive threshold (0: the task's own) */

    /* [DefaultGenome] */
    int num_inputs, num_outputs, num_hidden;
    bool feed_forward;
    bool bias_node; /* otc: a constant-1 input node connections can come from (NEAT paper) */
    otc_neat_connect initial_connection;
    double connection_fraction; /* partial_* */
    double compatibility_disjoint_coefficient, compatibility_excess_coefficient;
    double compatibility_weight_coefficient;
    int compatibility_normalize_min_genes; /* otc: N = 1 below this many genes (paper: 20) */
    double conn_add_prob, conn_delete_prob, node_add_prob, node_delete_prob;
    bool single_structural_mutation;
    bool structural_mutation_exclusive; /* otc: no attribute mutation after a structural one */
    int structural_mutation_surer;      /* -1 default (= single_structural_mutation), 0, 1 */
    int conn_add_attempts;              /* otc: tries to find a new connection (paper code: 20) */
    otc_neat_float_attr bias, response, weight;
    /* neat-python's node gene time_constant (its defaults: mean 1, stdev 0, no mutation,
     * [0.01, 10]); drawn, mutated and inherited only when ctrnn, so other runs are unchanged. */
    otc_neat_float_attr time_constant;
    /* otc: the phenotype is neat-python's CTRNN (CTRNN.advance: each forward integrates
     * ctrnn_advance_time in steps of ctrnn_time_step, inputs held; 0: the task's own time per
     * action, e.g. the neat-python cart-pole's 0.01 s). Set by --ctrnn as well. */
    bool ctrnn;
    double ctrnn_advance_time, ctrnn_time_step;
    /* The file sets time_constant_* keys: neat-python's CTRNN configs do (their scripts,
     * not their configs, say ctrnn), so without ctrnn they would be ignored. */
    bool time_constants_given;
    /* Activation names mean neat-python's functions (sigmoid(5x), tanh(2.5x), sin(5x),
     * exp(-5x^2), 0.2 softplus(5x), lelu's slope 0.005) rather than otc's: the key
     * activation_functions, else true for a config that uses no otc extension key. */
    bool np_functions;
    /* Evolution follows neat-python's rules (its speciation, distance with node genes,
     * compute_spawn, per-species elitism, crossover-then-mutate children, one-try structural
     * mutations, dangling-node pruning) rather than otc's: the key [NEAT] evolution, else
     * true for a config that uses no otc extension key (as np_functions). */
    bool np_evolution;
    double weight_mutate_genome_rate; /* otc: chance a child's weights are considered at all */
    /* otc: false = neat-python's per-weight Gaussian perturb/replace; true = Stanley's
     * mutate_link_weights: half the time "severe" (each weight perturbed 70%, replaced 20%),
     * else every weight perturbed (the newest 20% of a genome of 10+ genes: 50% / 20%);
     * perturbations and new values uniform in ±weight_mutate_power. */
    bool weight_mutate_stanley;
    /* otc (Stanley's recur_only_prob): with recurrence on, the chance that a new connection
     * must close a loop; otherwise it must not. < 0: any pair (neat-python). */
    double conn_add_recurrent_prob;
    /* otc (Stanley's mutate_toggle_enable_prob / mutate_gene_reenable_prob; p2nv.ne: 0.1 and
     * 0.05): the chance that a child whose attributes are mutated also toggles one random
     * connection (an enabled one only while another enabled connection leaves its source) /
     * re-enables its oldest disabled connection. 0: never (neat-python has neither). */
    double conn_toggle_prob, conn_reenable_prob;
    /* otc: split older connections more often in small genomes, as Stanley's add-node (walks
     * the genes oldest first, taking each with probability 0.3, for genomes of < 15 genes) */
    bool node_add_prefer_old;
    otc_act activation_default;
    bool activation_random; /* activation_default = random: a random option per new node */
    double activation_mutate_rate;
    int n_activation_options;
    otc_act activation_options[OTC_ACT_COUNT];
    int aggregation_default; /* otc_agg (neat-python's aggregations) */
    bool aggregation_random;
    double aggregation_mutate_rate;
    int n_aggregation_options;
    int aggregation_options[OTC_AGG_COUNT];
    bool enabled_default;
    double enabled_mutate_rate, enabled_rate_to_true_add, enabled_rate_to_false_add;

    /* [DefaultSpeciesSet] */
    double compatibility_threshold;
    int target_species;    /* otc: adapt the threshold towards this many species (0: off) */
    double threshold_step; /* otc: threshold change per generation when adapting */
    double threshold_min;  /* otc */

    /* [DefaultStagnation] */
    otc_neat_agg species_fitness_func;
    int max_stagnation;
    int species_elitism;
    /* otc (Stanley's dropoff): > 0 keeps stagnant species but multiplies their members'
     * fitness by this for the offspring shares (the reference: 0.01); 0 removes them. */
    double stagnation_penalty;

    /* [DefaultReproduction] */
    int elitism;
    double survival_threshold;
    int min_species_size;
    int elitism_min_species_size; /* otc: elitism only in species at least this big */
    int elitism_min_offspring;    /* otc: ...and with at least this many offspring (Stanley: 6) */
    double crossover_rate;        /* otc: share of children made by crossover */
    double interspecies_crossover_rate; /* otc: of those, with a parent from another species */
    double mutate_after_crossover_rate; /* otc: crossover children that are also mutated */
    double crossover_average_rate; /* otc (mate_multipoint_avg_prob): average matching weights */
    /* otc: Stanley's rule for a matching gene disabled in either parent: disabled with
     * probability 0.75, else the state of the parent gene inherited (enabled when averaged);
     * false: enabled with probability 0.25 whatever the parents. */
    bool crossover_disable_stanley;
    /* otc: Stanley's offspring counting: each member expects (shared fitness / mean shared
     * fitness) children; whole parts go to its species, fractional parts carry over from species
     * to species (in creation order) and a child lost to rounding goes to the species expecting
     * most. Species may get none (min_species_size is ignored). false: largest remainder. */
    bool offspring_stanley;
    /* otc (Stanley's delta coding, dropoff_age + 5): when the best fitness has not improved
     * for this many generations, only the two best species reproduce, half the population
     * each (0: off). */
    int population_stagnation;

    /* [Hybrid] (otc): gradient training of each genome before its fitness is taken */
    int train_steps; /* 0: pure NEAT */
    int batch_size;
    double learning_rate;
    bool lamarckian;           /* write trained weights back into the genome (else Baldwinian) */
    double complexity_penalty; /* fitness -= penalty * (hidden nodes + enabled connections) */

    /* [Task] (otc): options of the csv task */
    char targets[128];  /* target column names/indices; "" = the last column */
    char sequence[128]; /* sequence-id column (name or index): rows are time steps; "" = none */
    bool sequence_last; /* only each sequence's last step counts (else every step) */
    bool csv_header;    /* the CSV's first line names the columns */
    bool regression;
    double target_accuracy; /* classification success: validation accuracy */
    double target_mse;      /* regression success: validation MSE */
    double validation_fraction;
    double exec_timeout;         /* exec:PROGRAM: seconds the environment may take per answer */
    double exec_startup_timeout; /* exec:PROGRAM: seconds a new process may take to answer */
    int exec_max_steps; /* exec:PROGRAM: steps after which an episode ends ([Task] max_steps) */

    /* Episodes each evaluation averages (1: the task's own evaluation; more for a task whose
     * episodes differ by seed, such as exec:PROGRAM's resets or pole1:neat-python's starts) */
    int episodes;

    otc_neat_substrate substrate;
} otc_neat_config;

/* neat-python's defaults where it has them, the NEAT paper's otherwise; num_inputs,
 * num_outputs, pop_size, fitness_threshold and compatibility_threshold are left invalid
 * (they are required in a file). */
void otc_neat_config_defaults(otc_neat_config *c);

/* Parse an INI file / text (name is used in messages). An unknown section or key, a repeated
 * key, a missing required key or a bad value is OTC_ERR_CONFIG with a message naming the
 * file, line, section and key. */
otc_status otc_neat_config_load(const char *path, otc_neat_config *out);
otc_status otc_neat_config_parse(const char *text, const char *name, otc_neat_config *out);

/* Make c's phenotypes CTRNNs (ctrnn = true) advancing advance_time in steps of time_step
 * (both 0: keep the config's), checked as the config's own keys are (OTC_ERR_CONFIG naming
 * `name` and the key): what --ctrnn, --advance-time and --time-step do. */
otc_status otc_neat_config_ctrnn(otc_neat_config *c, const char *name, double advance_time,
                                 double time_step);

/* Every key that shapes a run with its effective value (defaults filled in) as canonical
 * text, in a fixed order: checkpoints record this listing, so a resumed run can be refused
 * when its config differs. Keys that change nothing (optimizer, seed, exec_timeout) are left
 * out, and the aggregation keys while they keep their defaults (as before they existed). */
typedef void (*otc_neat_config_visitor)(void *ctx, const char *section, const char *key,
                                        const char *value);
void otc_neat_config_list(const otc_neat_config *c, otc_neat_config_visitor fn, void *ctx);

/* The NEAT name of an activation ("sigmoid" is the NEAT paper's steep sigmoid); -1 if not
 * supported. */
int otc_neat_act_from_name(const char *name);
const char *otc_neat_act_name(otc_act act);
/* An objective's key name ("fitness", "connections", ...). */
const char *otc_neat_objective_name(otc_neat_objective o);
/* Whether more of o is better (fitness, diversity); the others are costs. */
bool otc_neat_objective_maximised(otc_neat_objective o);
/* Whether o is read from the substrate the genome paints (substrate_links, substrate_length:
 * HyperNEAT, a [Substrate] section). */
bool otc_neat_objective_paints(otc_neat_objective o);
/* The slope parameter a NEAT neuron with activation act gets under c (leaky_relu: 0.005 when
 * c->np_functions, as neat-python's lelu; otherwise the activation's default). */
float otc_neat_act_alpha(const otc_neat_config *c, otc_act act);

#endif
