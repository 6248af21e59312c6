/* NEAT configuration from an INI file with neat-python's section and key names: a table of
 * known keys, each with its parser and destination, so unknown, repeated and missing keys
 * and bad values are all reported with the file, line, section and key. */
#include <errno.h>
#include <float.h>
#include <ini.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "otc/file.h"
#include "otc/hyperneat.h"
#include "otc/limits.h"
#include "otc/neat_config.h"
#include "otc/text.h"

typedef enum {
    K_INT,
    K_DOUBLE,
    K_POSITIVE, /* a double greater than lo */
    K_BOOL,
    K_AGG,
    K_CONNECT,
    K_ACT,
    K_ACTS,
    K_AGGR,
    K_AGGRS,
    K_SURER,
    K_INIT_TYPE,
    K_STRING,
    K_TASK_KIND,
    K_INHERIT,
    K_SEQ_STEPS,
    K_OPTIM,
    K_SEED,
    K_SECONDS,    /* a positive double that does not change a run's result (not listed) */
    K_AGG_RATE,   /* a double in [lo, hi] listed only when not 0 (aggregation_mutate_rate) */
    K_FUNCS,      /* activation_functions: neat-python or otc */
    K_RULES,      /* evolution: neat-python or otc */
    K_SELECT,     /* selection: fitness, nsga2 or novelty (listed when not fitness) */
    K_OBJECTIVES, /* objectives: a list of otc_neat_objective names */
    K_NOVELTY,    /* a novelty_* number, listed only under selection = novelty */
    K_OBJ_PROB,   /* objective_probability: in [lo, hi], listed under nsga2 when not 1 */
    K_NSGA2_VAL,  /* nsga2_value: fitness or rank (listed under nsga2 when rank) */
    K_GRID,       /* [Substrate] a node grid, NXxNY */
    K_GRIDS,      /* [Substrate] hidden_grids: grids or none */
    K_COLUMNS,    /* [Task] targets: CSV columns by name or index, comma-separated */
    K_SUB_ACT,    /* [Substrate] activation: an otc activation name */
    K_LEO_SEED    /* [Substrate] leo_seed: none or locality_x (listed when not none) */
} key_kind;

typedef struct {
    const char *section;
    const char *name;
    key_kind kind;
    size_t offset;
    bool required;
    double lo, hi; /* numeric range, inclusive (K_POSITIVE: above lo) */
} key_def;

#define OFF(field) offsetof(otc_neat_config, field)
#define INF        1e300
#define BIG        OTC_NEAT_MAX_MAGNITUDE

/* Expands to the neat-python keys of one float attribute (bias, response, weight). */
#define FLOAT_ATTR(prefix, field)                                                                    \
    {"DefaultGenome", prefix "_init_mean", K_DOUBLE, OFF(field.init_mean), false, -BIG, BIG},        \
        {"DefaultGenome", prefix "_init_stdev", K_DOUBLE, OFF(field.init_stdev), false, 0, BIG},     \
        {"DefaultGenome", prefix "_init_type", K_INIT_TYPE, OFF(field.init_uniform), false, 0, 0},   \
        {"DefaultGenome", prefix "_replace_rate", K_DOUBLE, OFF(field.replace_rate), false, 0, 1},   \
        {"DefaultGenome", prefix "_mutate_rate", K_DOUBLE, OFF(field.mutate_rate), false, 0, 1},     \
        {"DefaultGenome", prefix "_mutate_power", K_DOUBLE, OFF(field.mutate_power), false, 0, BIG}, \
        {"DefaultGenome", prefix "_min_value", K_DOUBLE, OFF(field.min_value), false, -BIG, BIG},    \
    {                                                                                                \
        "DefaultGenome", prefix "_max_value", K_DOUBLE, OFF(field.max_value), false, -BIG, BIG       \
    }

static const key_def keys[] = {
    {"NEAT", "fitness_criterion", K_AGG, OFF(fitness_criterion), false, 0, 0},
    {"NEAT", "fitness_threshold", K_DOUBLE, OFF(fitness_threshold), true, -INF, INF},
    {"NEAT", "no_fitness_termination", K_BOOL, OFF(no_fitness_termination), false, 0, 0},
    {"NEAT", "pop_size", K_INT, OFF(pop_size), true, 2, OTC_NEAT_MAX_POP_SIZE},
    {"NEAT", "reset_on_extinction", K_BOOL, OFF(reset_on_extinction), false, 0, 0},
    {"NEAT", "seed", K_SEED, OFF(seed), false, 0, 0},

    {"DefaultGenome", "num_inputs", K_INT, OFF(num_inputs), true, 1, OTC_NEAT_MAX_INPUTS},
    {"DefaultGenome", "num_outputs", K_INT, OFF(num_outputs), true, 1, OTC_NEAT_MAX_OUTPUTS},
    {"DefaultGenome", "num_hidden", K_INT, OFF(num_hidden), false, 0, OTC_NEAT_MAX_HIDDEN},
    {"DefaultGenome", "feed_forward", K_BOOL, OFF(feed_forward), false, 0, 0},
    {"DefaultGenome", "bias_node", K_BOOL, OFF(bias_node), false, 0, 0},
    {"DefaultGenome", "initial_connection", K_CONNECT, OFF(initial_connection), false, 0, 0},
    {"DefaultGenome", "compatibility_disjoint_coefficient", K_DOUBLE,
     OFF(compatibility_disjoint_coefficient), false, 0, BIG},
    {"DefaultGenome", "compatibility_excess_coefficient", K_DOUBLE,
     OFF(compatibility_excess_coefficient), false, 0, BIG},
    {"DefaultGenome", "compatibility_weight_coefficient", K_DOUBLE,
     OFF(compatibility_weight_coefficient), false, 0, BIG},
    {"DefaultGenome", "compatibility_normalize_min_genes", K_INT,
     OFF(compatibility_normalize_min_genes), false, 0, 1000000},
    {"DefaultGenome", "conn_add_prob", K_DOUBLE, OFF(conn_add_prob), false, 0, 1},
    {"DefaultGenome", "conn_delete_prob", K_DOUBLE, OFF(conn_delete_prob), false, 0, 1},
    {"DefaultGenome", "node_add_prob", K_DOUBLE, OFF(node_add_prob), false, 0, 1},
    {"DefaultGenome", "node_delete_prob", K_DOUBLE, OFF(node_delete_prob), false, 0, 1},
    {"DefaultGenome", "single_structural_mutation", K_BOOL, OFF(single_structural_mutation), false,
     0, 0},
    {"DefaultGenome", "structural_mutation_surer", K_SURER, OFF(structural_mutation_surer), false,
     0, 0},
    {"DefaultGenome", "structural_mutation_exclusive", K_BOOL, OFF(structural_mutation_exclusive),
     false, 0, 0},
    {"DefaultGenome", "conn_add_attempts", K_INT, OFF(conn_add_attempts), false, 1, 1000},
    FLOAT_ATTR("bias", bias),
    FLOAT_ATTR("response", response),
    FLOAT_ATTR("weight", weight),
    FLOAT_ATTR("time_constant", time_constant),
    {"DefaultGenome", "ctrnn", K_BOOL, OFF(ctrnn), false, 0, 0},
    {"DefaultGenome", "ctrnn_advance_time", K_DOUBLE, OFF(ctrnn_advance_time), false, 0, BIG},
    {"DefaultGenome", "ctrnn_time_step", K_DOUBLE, OFF(ctrnn_time_step), false, 0, BIG},
    {"DefaultGenome", "activation_functions", K_FUNCS, OFF(np_functions), false, 0, 0},
    {"NEAT", "evolution", K_RULES, OFF(np_evolution), false, 0, 0},
    {"NEAT", "selection", K_SELECT, OFF(selection), false, 0, 0},
    {"NEAT", "objectives", K_OBJECTIVES, OFF(objectives), false, 0, 0},
    {"NEAT", "objective_probability", K_OBJ_PROB, OFF(objective_probability), false, 0, 1},
    {"NEAT", "nsga2_value", K_NSGA2_VAL, OFF(nsga2_rank), false, 0, 0},
    {"NEAT", "novelty_weight", K_NOVELTY, OFF(novelty_weight), false, 0, 1},
    {"NEAT", "novelty_k", K_NOVELTY, OFF(novelty_k), false, 1, 1000},
    {"NEAT", "novelty_threshold", K_NOVELTY, OFF(novelty_threshold), false, 0, BIG},
    {"DefaultGenome", "weight_mutate_genome_rate", K_DOUBLE, OFF(weight_mutate_genome_rate), false,
     0, 1},
    {"DefaultGenome", "weight_mutate_stanley", K_BOOL, OFF(weight_mutate_stanley), false, 0, 0},
    {"DefaultGenome", "conn_add_recurrent_prob", K_DOUBLE, OFF(conn_add_recurrent_prob), false, -1,
     1},
    {"DefaultGenome", "conn_toggle_prob", K_DOUBLE, OFF(conn_toggle_prob), false, 0, 1},
    {"DefaultGenome", "conn_reenable_prob", K_DOUBLE, OFF(conn_reenable_prob), false, 0, 1},
    {"DefaultGenome", "node_add_prefer_old", K_BOOL, OFF(node_add_prefer_old), false, 0, 0},
    {"DefaultGenome", "activation_default", K_ACT, OFF(activation_default), false, 0, 0},
    {"DefaultGenome", "activation_mutate_rate", K_DOUBLE, OFF(activation_mutate_rate), false, 0, 1},
    {"DefaultGenome", "activation_options", K_ACTS, OFF(n_activation_options), false, 0, 0},
    {"DefaultGenome", "aggregation_default", K_AGGR, OFF(aggregation_default), false, 0, 0},
    {"DefaultGenome", "aggregation_mutate_rate", K_AGG_RATE, OFF(aggregation_mutate_rate), false, 0,
     1},
    {"DefaultGenome", "aggregation_options", K_AGGRS, OFF(n_aggregation_options), false, 0, 0},
    {"DefaultGenome", "enabled_default", K_BOOL, OFF(enabled_default), false, 0, 0},
    {"DefaultGenome", "enabled_mutate_rate", K_DOUBLE, OFF(enabled_mutate_rate), false, 0, 1},
    {"DefaultGenome", "enabled_rate_to_true_add", K_DOUBLE, OFF(enabled_rate_to_true_add), false,
     -1, 1},
    {"DefaultGenome", "enabled_rate_to_false_add", K_DOUBLE, OFF(enabled_rate_to_false_add), false,
     -1, 1},

    {"DefaultSpeciesSet", "compatibility_threshold", K_POSITIVE, OFF(compatibility_threshold), true,
     0, BIG},
    {"DefaultSpeciesSet", "target_species", K_INT, OFF(target_species), false, 0,
     OTC_NEAT_MAX_POP_SIZE},
    {"DefaultSpeciesSet", "threshold_step", K_DOUBLE, OFF(threshold_step), false, 0, BIG},
    {"DefaultSpeciesSet", "threshold_min", K_POSITIVE, OFF(threshold_min), false, 0, BIG},

    {"DefaultStagnation", "species_fitness_func", K_AGG, OFF(species_fitness_func), false, 0, 0},
    {"DefaultStagnation", "max_stagnation", K_INT, OFF(max_stagnation), false, 1, 1000000},
    {"DefaultStagnation", "species_elitism", K_INT, OFF(species_elitism), false, 0, 1000000},
    {"DefaultStagnation", "stagnation_penalty", K_DOUBLE, OFF(stagnation_penalty), false, 0, 1},

    {"DefaultReproduction", "elitism", K_INT, OFF(elitism), false, 0, 1000000},
    {"DefaultReproduction", "survival_threshold", K_DOUBLE, OFF(survival_threshold), false, 0, 1},
    {"DefaultReproduction", "min_species_size", K_INT, OFF(min_species_size), false, 0, 1000000},
    {"DefaultReproduction", "elitism_min_species_size", K_INT, OFF(elitism_min_species_size), false,
     0, 1000000},
    {"DefaultReproduction", "elitism_min_offspring", K_INT, OFF(elitism_min_offspring), false, 0,
     1000000},
    {"DefaultReproduction", "crossover_rate", K_DOUBLE, OFF(crossover_rate), false, 0, 1},
    {"DefaultReproduction", "interspecies_crossover_rate", K_DOUBLE,
     OFF(interspecies_crossover_rate), false, 0, 1},
    {"DefaultReproduction", "mutate_after_crossover_rate", K_DOUBLE,
     OFF(mutate_after_crossover_rate), false, 0, 1},
    {"DefaultReproduction", "crossover_average_rate", K_DOUBLE, OFF(crossover_average_rate), false,
     0, 1},
    {"DefaultReproduction", "crossover_disable_stanley", K_BOOL, OFF(crossover_disable_stanley),
     false, 0, 0},
    {"DefaultReproduction", "offspring_stanley", K_BOOL, OFF(offspring_stanley), false, 0, 0},
    {"DefaultReproduction", "population_stagnation", K_INT, OFF(population_stagnation), false, 0,
     1000000},

    {"Hybrid", "train_steps", K_INT, OFF(train_steps), false, 0, 1000000},
    {"Hybrid", "batch_size", K_INT, OFF(batch_size), false, 1, 100000},
    {"Hybrid", "learning_rate", K_DOUBLE, OFF(learning_rate), false, 0, 1000},
    {"Hybrid", "optimizer", K_OPTIM, 0, false, 0, 0},
    {"Hybrid", "inheritance", K_INHERIT, OFF(lamarckian), false, 0, 0},
    {"Hybrid", "complexity_penalty", K_DOUBLE, OFF(complexity_penalty), false, 0, BIG},

    {"Task", "targets", K_COLUMNS, OFF(targets), false, 0, 0},
    {"Task", "header", K_BOOL, OFF(csv_header), false, 0, 0},
    {"Task", "kind", K_TASK_KIND, OFF(regression), false, 0, 0},
    {"Task", "target_accuracy", K_DOUBLE, OFF(target_accuracy), false, 0, 1},
    {"Task", "target_mse", K_DOUBLE, OFF(target_mse), false, 0, INF},
    {"Task", "validation_fraction", K_DOUBLE, OFF(validation_fraction), false, 0, 0.9},
    {"Task", "sequence", K_STRING, OFF(sequence), false, 0, 0},
    {"Task", "sequence_steps", K_SEQ_STEPS, OFF(sequence_last), false, 0, 0},
    {"Task", "exec_timeout", K_SECONDS, OFF(exec_timeout), false, 0, 86400},
    {"Task", "exec_startup_timeout", K_SECONDS, OFF(exec_startup_timeout), false, 0, 86400},
    {"Task", "max_steps", K_INT, OFF(exec_max_steps), false, 1, 100000000},
    {"Task", "episodes", K_INT, OFF(episodes), false, 1, 10000},
    /* [Substrate] (HyperNEAT): listed only in configs that have the section */
    {"Substrate", "input_grid", K_GRID, OFF(substrate.input), false, 0, 0},
    {"Substrate", "hidden_grids", K_GRIDS, OFF(substrate.hidden), false, 0, 0},
    {"Substrate", "output_grid", K_GRID, OFF(substrate.output), false, 0, 0},
    {"Substrate", "weight_threshold", K_DOUBLE, OFF(substrate.weight_threshold), false, 0, 0.99},
    {"Substrate", "max_weight", K_POSITIVE, OFF(substrate.max_weight), false, 0, BIG},
    {"Substrate", "leo", K_BOOL, OFF(substrate.leo), false, 0, 0},
    {"Substrate", "leo_seed", K_LEO_SEED, OFF(substrate.leo_seed), false, 0, 0},
    {"Substrate", "bias_output", K_BOOL, OFF(substrate.bias_output), false, 0, 0},
    {"Substrate", "distance_input", K_BOOL, OFF(substrate.distance_input), false, 0, 0},
    {"Substrate", "layer_input", K_BOOL, OFF(substrate.layer_input), false, 0, 0},
    {"Substrate", "activation", K_SUB_ACT, OFF(substrate.activation), false, 0, 0},
    {"Substrate", "evolvable_substrate", K_BOOL, OFF(substrate.evolvable), false, 0, 0},
    {"Substrate", "initial_depth", K_INT, OFF(substrate.initial_depth), false, 0, OTC_ES_MAX_DEPTH},
    {"Substrate", "maximum_depth", K_INT, OFF(substrate.maximum_depth), false, 1, OTC_ES_MAX_DEPTH},
    {"Substrate", "iteration_level", K_INT, OFF(substrate.iteration_level), false, 0,
     OTC_ES_MAX_ITERATION},
    {"Substrate", "division_threshold", K_DOUBLE, OFF(substrate.division_threshold), false, 0, 1},
    {"Substrate", "variance_threshold", K_DOUBLE, OFF(substrate.variance_threshold), false, 0, 1},
    {"Substrate", "band_threshold", K_DOUBLE, OFF(substrate.band_threshold), false, 0, 2},
};
#define N_KEYS (int)(sizeof keys / sizeof keys[0])
/* K_STRING values are bounded by the targets field's size: every string key has that size. */
_Static_assert(sizeof((otc_neat_config *)0)->sequence == sizeof((otc_neat_config *)0)->targets,
               "[Task] string keys share one size");

/* [Substrate] leo_seed's values, by otc_leo_seed. */
static const char *const leo_seed_names[] = {"none", "locality_x"};

/* neat-python activation names first, then otc's own spellings. */
static const struct {
    const char *name;
    otc_act act;
} act_names[] = {
    {"sigmoid", OTC_ACT_STEEP_SIGMOID},
    {"steep_sigmoid", OTC_ACT_STEEP_SIGMOID},
    {"logistic", OTC_ACT_SIGMOID},
    {"tanh", OTC_ACT_TANH},
    {"relu", OTC_ACT_RELU},
    {"lelu", OTC_ACT_LEAKY_RELU},
    {"leaky_relu", OTC_ACT_LEAKY_RELU},
    {"elu", OTC_ACT_ELU},
    {"softplus", OTC_ACT_SOFTPLUS},
    {"gauss", OTC_ACT_GAUSSIAN},
    {"gaussian", OTC_ACT_GAUSSIAN},
    {"sin", OTC_ACT_SIN},
    {"abs", OTC_ACT_ABS},
    {"identity", OTC_ACT_IDENTITY},
    /* neat-python's with no otc counterpart of the same name (otc/ops.h OTC_ACT_NP_*) */
    {"selu", OTC_ACT_SELU},
    {"clamped", OTC_ACT_CLAMPED},
    {"inv", OTC_ACT_INV},
    {"log", OTC_ACT_LOG},
    {"exp", OTC_ACT_EXP},
    {"hat", OTC_ACT_HAT},
    {"square", OTC_ACT_SQUARE},
    {"cube", OTC_ACT_CUBE},
    /* otc's names for neat-python's scaled functions, meant the same in every config */
    {"np_sigmoid", OTC_ACT_NP_SIGMOID},
    {"np_tanh", OTC_ACT_NP_TANH},
    {"np_sin", OTC_ACT_NP_SIN},
    {"np_gauss", OTC_ACT_NP_GAUSS},
    {"np_softplus", OTC_ACT_NP_SOFTPLUS},
};

/* The names whose function depends on the config's dialect: neat-python's where it means
 * neat-python's functions (np_functions), otc's (the table above) otherwise. */
static const struct {
    const char *name;
    otc_act act;
} np_scaled[] = {
    {"sigmoid", OTC_ACT_NP_SIGMOID}, {"tanh", OTC_ACT_NP_TANH},         {"sin", OTC_ACT_NP_SIN},
    {"gauss", OTC_ACT_NP_GAUSS},     {"softplus", OTC_ACT_NP_SOFTPLUS},
};

static int act_in_dialect(const char *name, bool np) {
    for (size_t i = 0; np && i < sizeof np_scaled / sizeof np_scaled[0]; i++)
        if (!strcmp(np_scaled[i].name, name)) return (int)np_scaled[i].act;
    return otc_neat_act_from_name(name);
}

/* neat-python's lelu slope (neat/activations.py lelu_activation). */
#define NP_LELU_SLOPE 0.005f

float otc_neat_act_alpha(const otc_neat_config *c, otc_act act) {
    if (act == OTC_ACT_LEAKY_RELU && c && c->np_functions) return NP_LELU_SLOPE;
    const otc_act_info *info = otc_act_get(act);
    return info ? info->default_a : 0.0f;
}

/* Keys of neat-python's own sections that neat-python does not have: a config that uses one
 * is in otc's dialect (activation names mean otc's functions) unless activation_functions
 * says otherwise. [Task] and [Hybrid] are not counted: they configure what a neat-python
 * config is run on and how, so adding them does not change what its names mean. */
static const char *const otc_only_keys[] = {
    "bias_node",
    "compatibility_normalize_min_genes",
    "structural_mutation_exclusive",
    "conn_add_attempts",
    "weight_mutate_genome_rate",
    "weight_mutate_stanley",
    "conn_add_recurrent_prob",
    "conn_toggle_prob",
    "conn_reenable_prob",
    "node_add_prefer_old",
    "target_species",
    "threshold_step",
    "stagnation_penalty",
    "elitism_min_species_size",
    "elitism_min_offspring",
    "crossover_rate",
    "interspecies_crossover_rate",
    "mutate_after_crossover_rate",
    "crossover_average_rate",
    "crossover_disable_stanley",
    "offspring_stanley",
    "population_stagnation",
    "ctrnn",
    "ctrnn_advance_time",
    "ctrnn_time_step",
    "selection",
    "objectives",
    "objective_probability",
    "nsga2_value",
    "novelty_weight",
    "novelty_k",
    "novelty_threshold",
};

static bool otc_only(const char *section, const char *name) {
    if (!strcmp(section, "Hybrid") || !strcmp(section, "Task")) return false;
    for (size_t i = 0; i < sizeof otc_only_keys / sizeof otc_only_keys[0]; i++)
        if (!strcmp(otc_only_keys[i], name)) return true;
    return false;
}

int otc_neat_act_from_name(const char *name) {
    for (size_t i = 0; i < sizeof act_names / sizeof act_names[0]; i++)
        if (!strcmp(act_names[i].name, name)) return (int)act_names[i].act;
    return -1;
}

const char *otc_neat_act_name(otc_act act) {
    for (size_t i = 0; i < sizeof act_names / sizeof act_names[0]; i++)
        if (act_names[i].act == act) return act_names[i].name;
    return "?";
}

void otc_neat_config_defaults(otc_neat_config *c) {
    memset(c, 0, sizeof *c);
    c->fitness_criterion = OTC_NEAT_AGG_MAX;
    c->fitness_threshold = NAN;
    c->pop_size = 0;
    c->num_inputs = c->num_outputs = 0;
    c->feed_forward = true;
    c->initial_connection = OTC_NEAT_CONNECT_FULL_DIRECT;
    c->connection_fraction = 1.0;
    c->compatibility_disjoint_coefficient = 1.0;
    c->compatibility_excess_coefficient = NAN; /* = disjoint unless given */
    c->compatibility_weight_coefficient = 0.4;
    c->compatibility_normalize_min_genes = 20;
    c->conn_add_prob = 0.05;
    c->node_add_prob = 0.03;
    c->structural_mutation_surer = -1;
    c->conn_add_attempts = 20;
    c->bias = (otc_neat_float_attr){0, 1, false, 0.1, 0.7, 0.5, -30, 30};
    c->response = (otc_neat_float_attr){1, 0, false, 0, 0, 0, -30, 30};
    c->weight = (otc_neat_float_attr){0, 1, false, 0.1, 0.8, 0.5, -30, 30};
    c->time_constant = (otc_neat_float_attr){1, 0, false, 0, 0, 0, 0.01, 10};
    c->weight_mutate_genome_rate = 1.0;
    c->conn_add_recurrent_prob = -1;
    c->activation_default = OTC_ACT_STEEP_SIGMOID;
    c->n_activation_options = 1;
    c->activation_options[0] = OTC_ACT_STEEP_SIGMOID;
    c->aggregation_default = OTC_AGG_SUM;
    c->n_aggregation_options = 1;
    c->aggregation_options[0] = OTC_AGG_SUM;
    c->enabled_default = true;
    c->enabled_mutate_rate = 0.01;
    c->compatibility_threshold = NAN;
    c->threshold_step = 0.3;
    c->threshold_min = 0.3;
    c->species_fitness_func = OTC_NEAT_AGG_MEAN;
    c->max_stagnation = 15;
    c->species_elitism = 1;
    c->elitism = 1;
    c->survival_threshold = 0.2;
    c->min_species_size = 1;
    c->crossover_rate = 0.75;
    c->interspecies_crossover_rate = 0.001;
    c->mutate_after_crossover_rate = 0.8;
    c->batch_size = 32;
    c->learning_rate = 0.01;
    c->lamarckian = true;
    c->csv_header = true;
    c->target_accuracy = 0.95;
    c->target_mse = 0.01;
    c->validation_fraction = 0.25;
    c->exec_timeout = 10;
    c->exec_startup_timeout = 60;
    c->exec_max_steps = OTC_NEAT_EXEC_MAX_STEPS;
    c->selection = OTC_NEAT_SELECT_FITNESS;
    c->n_objectives = 2;
    c->objectives[0] = OTC_NEAT_OBJ_FITNESS;
    c->objectives[1] = OTC_NEAT_OBJ_CONNECTIONS;
    c->objective_probability = 1;
    c->novelty_weight = 1.0;
    c->novelty_k = 15;
    c->substrate.weight_threshold = 0.2; /* Stanley, D'Ambrosio and Gauci 2009 */
    c->substrate.max_weight = 3.0;
    c->substrate.activation = OTC_ACT_IDENTITY;
    c->substrate.initial_depth = 2;
    c->substrate.maximum_depth = 3;
    c->substrate.iteration_level = 1;
    c->substrate.division_threshold = 0.03;
    c->substrate.variance_threshold = 0.03;
    c->substrate.band_threshold = 0.3;
    c->episodes = 1;
}

static const char *const selection_names[] = {"fitness", "nsga2", "novelty"};
static const char *const objective_names[] = {"fitness",          "connections", "nodes",
                                              "parameters",       "cost",        "substrate_links",
                                              "substrate_length", "diversity"};

const char *otc_neat_objective_name(otc_neat_objective o) {
    return o >= 0 && o < OTC_NEAT_OBJ_COUNT ? objective_names[o] : "?";
}

bool otc_neat_objective_maximised(otc_neat_objective o) {
    return o == OTC_NEAT_OBJ_FITNESS || o == OTC_NEAT_OBJ_DIVERSITY;
}

bool otc_neat_objective_paints(otc_neat_objective o) {
    return o == OTC_NEAT_OBJ_SUBSTRATE_LINKS || o == OTC_NEAT_OBJ_SUBSTRATE_LENGTH;
}

/* A list-valued key's value: its bytes, and its items (at most one per two bytes). */
#define LIST_BYTES 512
#define LIST_ITEMS (LIST_BYTES / 2)

typedef struct {
    const char *file;
    otc_neat_config *c;
    const char *text; /* reader position */
    int line;         /* lines handed to inih so far = the line being parsed */
    int seen[N_KEYS]; /* the line each key was given on, 0: not given */
    bool otc_key;     /* an otc extension key was given */
    int functions;    /* activation_functions: -1 not given, 0 otc, 1 neat-python */
    int rules;        /* evolution: -1 not given, 0 otc, 1 neat-python */
    /* activation_default / _options as written, resolved once the dialect is known */
    char act_default[64], act_options[LIST_BYTES];
    bool failed;
    otc_status status;
} parse_state;

static bool fail_key(parse_state *st, const char *section, const char *name, const char *fmt,
                     const char *value) {
    if (!st->failed) {
        char what[384];
        snprintf(what, sizeof what, fmt, value ? value : "");
        st->status =
            otc_fail(OTC_ERR_CONFIG, "%s:%d: [%s] %s: %s", st->file, st->line, section, name, what);
        st->failed = true;
    }
    return false;
}

static bool in_range(const key_def *k, double x) {
    return (k->kind == K_POSITIVE || k->kind == K_SECONDS ? x > k->lo : x >= k->lo) && x <= k->hi;
}

static bool range_error(parse_state *st, const key_def *k, const char *section, const char *name,
                        const char *value) {
    char msg[96];
    snprintf(msg, sizeof msg, "value '%%s' out of range %c%g, %g]",
             k->kind == K_POSITIVE || k->kind == K_SECONDS ? '(' : '[', k->lo, k->hi);
    return fail_key(st, section, name, msg, value);
}

/* Genes and networks compute in float32: a value that is not 0 but smaller in magnitude than
 * float32's least normal number becomes 0 there (a time constant of 1e-300 is a division by
 * 0), or keeps only a few bits. Every float key is held to float32's normal range. */
static bool f32_error(parse_state *st, const key_def *k, const char *section, const char *name,
                      const char *value) {
    char msg[192];
    snprintf(msg, sizeof msg,
             "value '%%s' is too small for float32, where otc computes (it would round to 0): "
             "give 0 or a magnitude from %g to %g",
             (double)FLT_MIN, k->hi < FLT_MAX ? k->hi : (double)FLT_MAX);
    return fail_key(st, section, name, msg, value);
}

static bool parse_bool(const char *v, bool *out) {
    static const char *yes[] = {"true", "yes", "on", "1"}, *no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) return *out = true, true;
        if (!strcasecmp(v, no[i])) return *out = false, true;
    }
    return false;
}

static bool parse_agg(const char *v, otc_neat_agg *out) {
    static const char *names[] = {"max", "min", "mean", "median"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(v, names[i])) return *out = (otc_neat_agg)i, true;
    return false;
}

/* neat-python spellings; "fs_neat" and "full"/"partial" are its deprecated aliases (the first
 * name of a kind is its canonical one). */
static const struct {
    const char *name;
    otc_neat_connect kind;
    bool fraction;
} connect_names[] = {
    {"unconnected", OTC_NEAT_CONNECT_UNCONNECTED, false},
    {"fs_neat_nohidden", OTC_NEAT_CONNECT_FS_NEAT_NOHIDDEN, false},
    {"fs_neat", OTC_NEAT_CONNECT_FS_NEAT_NOHIDDEN, false},
    {"fs_neat_hidden", OTC_NEAT_CONNECT_FS_NEAT_HIDDEN, false},
    {"full_nodirect", OTC_NEAT_CONNECT_FULL_NODIRECT, false},
    {"full", OTC_NEAT_CONNECT_FULL_NODIRECT, false},
    {"full_direct", OTC_NEAT_CONNECT_FULL_DIRECT, false},
    {"partial_nodirect", OTC_NEAT_CONNECT_PARTIAL_NODIRECT, true},
    {"partial", OTC_NEAT_CONNECT_PARTIAL_NODIRECT, true},
    {"partial_direct", OTC_NEAT_CONNECT_PARTIAL_DIRECT, true},
};

static bool parse_connect(const char *v, otc_neat_config *c) {
    char word[32];
    double frac = 1.0;
    int n = sscanf(v, "%31s %lf", word, &frac);
    if (n < 1) return false;
    for (size_t i = 0; i < sizeof connect_names / sizeof connect_names[0]; i++) {
        if (strcmp(word, connect_names[i].name)) continue;
        if (connect_names[i].fraction != (n == 2)) return false;
        if (!(frac >= 0 && frac <= 1)) return false;
        c->initial_connection = connect_names[i].kind;
        c->connection_fraction = frac;
        return true;
    }
    return false;
}

/* A name that is none of neat-python's built-in activations is, in a neat-python config, a
 * custom one registered by the user's Python code, whose math the config does not carry. */
#define UNSUPPORTED_ACT                                                                            \
    "unsupported activation '%s' (not a neat-python built-in: sigmoid tanh sin gauss relu elu "    \
    "lelu selu softplus identity clamped inv log exp abs hat square cube; a custom function "      \
    "registered in Python cannot be used)"

/* The items of a list-valued key, split once for every such key (otc_list_split), so an
 * empty item ("5x5, ,", "fitness,,connections") is one error naming the file, line, key and
 * the item's position, never skipped. Blanks separate items too, as in neat-python's lists,
 * except in column lists (a column name may hold a space). */
static bool list_items(parse_state *st, const key_def *k, const char *section, const char *name,
                       const char *value, char *buf, char **item, int *n) {
    if (strlen(value) >= LIST_BYTES)
        return fail_key(st, section, name, "value '%.40s...' too long", value);
    memcpy(buf, value, strlen(value) + 1);
    if (otc_list_split(buf, k->kind != K_COLUMNS, item, LIST_ITEMS, n) == OTC_OK) return true;
    char msg[320]; /* within fail_key's message */
    snprintf(msg, sizeof msg, "bad list '%.200s': %s", value, otc_last_error());
    return fail_key(st, section, name, "%s", msg);
}

static bool handle_value(parse_state *st, const key_def *k, const char *section, const char *name,
                         const char *value) {
    void *dest = (char *)st->c + k->offset;
    char *end = NULL;
    errno = 0;
    char list[LIST_BYTES], *item[LIST_ITEMS];
    int n_items = 0;
    bool is_list = k->kind == K_ACTS || k->kind == K_AGGRS || k->kind == K_OBJECTIVES ||
                   k->kind == K_COLUMNS || (k->kind == K_GRIDS && strcmp(value, "none"));
    if (is_list && !list_items(st, k, section, name, value, list, item, &n_items)) return false;
    switch (k->kind) {
    case K_INT: {
        long x = strtol(value, &end, 10);
        if (errno || end == value || *end)
            return fail_key(st, section, name, "bad value '%s' (expected an integer)", value);
        if (!in_range(k, (double)x)) return range_error(st, k, section, name, value);
        *(int *)dest = (int)x;
        return true;
    }
    case K_DOUBLE:
    case K_POSITIVE:
    case K_SECONDS:
    case K_AGG_RATE:
    case K_OBJ_PROB: {
        double x = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(x))
            return fail_key(st, section, name, "bad value '%s' (expected a number)", value);
        if (!in_range(k, x)) return range_error(st, k, section, name, value);
        if (x != 0 && fabs(x) < FLT_MIN) return f32_error(st, k, section, name, value);
        if (k->offset) *(double *)dest = x;
        return true;
    }
    case K_BOOL:
        if (!parse_bool(value, (bool *)dest))
            return fail_key(st, section, name, "bad value '%s' (expected true or false)", value);
        return true;
    case K_AGG:
        if (!parse_agg(value, (otc_neat_agg *)dest))
            return fail_key(st, section, name, "bad value '%s' (expected max, min, mean or median)",
                            value);
        return true;
    case K_CONNECT:
        if (!parse_connect(value, st->c))
            return fail_key(st, section, name,
                            "bad value '%s' (expected unconnected, fs_neat_nohidden, "
                            "fs_neat_hidden, full_nodirect, full_direct, partial_nodirect F "
                            "or partial_direct F)",
                            value);
        return true;
    case K_ACT: {
        if (!strcmp(value, "random")) { /* neat-python: a random option per new node */
            st->c->activation_random = true;
            return true;
        }
        st->c->activation_random = false;
        if (otc_neat_act_from_name(value) < 0)
            return fail_key(st, section, name, UNSUPPORTED_ACT, value);
        snprintf(st->act_default, sizeof st->act_default, "%s", value); /* names are short */
        return true;
    }
    case K_ACTS:
        for (int i = 0; i < n_items; i++)
            if (otc_neat_act_from_name(item[i]) < 0)
                return fail_key(st, section, name, UNSUPPORTED_ACT, item[i]);
        if (n_items == 0) return fail_key(st, section, name, "no activation given%s", "");
        snprintf(st->act_options, sizeof st->act_options, "%s", value);
        return true;
    case K_FUNCS:
        if (!strcmp(value, "neat-python"))
            st->functions = 1;
        else if (!strcmp(value, "otc"))
            st->functions = 0;
        else
            return fail_key(st, section, name, "bad value '%s' (expected neat-python or otc)",
                            value);
        return true;
    case K_RULES:
        if (!strcmp(value, "neat-python"))
            st->rules = 1;
        else if (!strcmp(value, "otc"))
            st->rules = 0;
        else
            return fail_key(st, section, name, "bad value '%s' (expected neat-python or otc)",
                            value);
        return true;
    case K_AGGR: {
        if (!strcmp(value, "random")) {
            st->c->aggregation_random = true;
            return true;
        }
        st->c->aggregation_random = false;
        int a = otc_agg_from_name(value);
        if (a < 0)
            return fail_key(st, section, name,
                            "unsupported aggregation '%s' (expected sum, product, min, max, "
                            "maxabs, median, mean or random)",
                            value);
        *(int *)dest = a;
        return true;
    }
    case K_AGGRS: {
        int n = 0;
        for (int j = 0; j < n_items; j++) {
            const char *w = item[j];
            int a = otc_agg_from_name(w);
            if (a < 0)
                return fail_key(st, section, name,
                                "unsupported aggregation '%s' (expected sum, product, min, max, "
                                "maxabs, median or mean)",
                                w);
            bool dup = false;
            for (int i = 0; i < n; i++) dup |= st->c->aggregation_options[i] == a;
            if (!dup && n < OTC_AGG_COUNT) st->c->aggregation_options[n++] = a;
        }
        if (n == 0) return fail_key(st, section, name, "no aggregation given%s", "");
        st->c->n_aggregation_options = n;
        return true;
    }
    case K_SURER:
        if (!strcasecmp(value, "default"))
            *(int *)dest = -1;
        else {
            bool b;
            if (!parse_bool(value, &b))
                return fail_key(st, section, name,
                                "bad value '%s' (expected default, true or false)", value);
            *(int *)dest = b;
        }
        return true;
    case K_INIT_TYPE:
        if (!strcmp(value, "gaussian") || !strcmp(value, "normal"))
            *(bool *)dest = false;
        else if (!strcmp(value, "uniform"))
            *(bool *)dest = true;
        else
            return fail_key(st, section, name, "bad value '%s' (expected gaussian or uniform)",
                            value);
        return true;
    case K_STRING:
    case K_COLUMNS:
        if (strlen(value) >= sizeof st->c->targets)
            return fail_key(st, section, name, "value '%s' too long", value);
        snprintf((char *)dest, sizeof st->c->targets, "%s", value);
        return true;
    case K_TASK_KIND:
        if (!strcmp(value, "classification"))
            *(bool *)dest = false;
        else if (!strcmp(value, "regression"))
            *(bool *)dest = true;
        else
            return fail_key(st, section, name,
                            "bad value '%s' (expected classification or regression)", value);
        return true;
    case K_INHERIT:
        if (!strcmp(value, "lamarckian"))
            *(bool *)dest = true;
        else if (!strcmp(value, "baldwinian"))
            *(bool *)dest = false;
        else
            return fail_key(st, section, name, "bad value '%s' (expected lamarckian or baldwinian)",
                            value);
        return true;
    case K_SEED: {
        /* neat-python seeds Python's random with it; otc's runs are seeded by this number. */
        unsigned long long x = strtoull(value, &end, 10);
        if (errno || end == value || *end || value[0] == '-')
            return fail_key(st, section, name,
                            "bad value '%s' (expected an integer from 0 to 2^64 - 1)", value);
        st->c->seed = x;
        st->c->has_seed = true;
        return true;
    }
    case K_SEQ_STEPS:
        if (!strcmp(value, "all"))
            *(bool *)dest = false;
        else if (!strcmp(value, "last"))
            *(bool *)dest = true;
        else
            return fail_key(st, section, name, "bad value '%s' (expected all or last)", value);
        return true;
    case K_SELECT:
        for (int i = 0; i < 3; i++)
            if (!strcmp(value, selection_names[i])) {
                *(otc_neat_selection *)dest = (otc_neat_selection)i;
                return true;
            }
        return fail_key(st, section, name, "bad value '%s' (expected fitness, nsga2 or novelty)",
                        value);
    case K_NSGA2_VAL:
        if (strcmp(value, "fitness") && strcmp(value, "rank"))
            return fail_key(st, section, name, "bad value '%s' (expected fitness or rank)", value);
        *(bool *)dest = !strcmp(value, "rank");
        return true;
    case K_OBJECTIVES: {
        int n = 0;
        for (int j = 0; j < n_items; j++) {
            const char *w = item[j];
            int o = -1;
            for (int i = 0; i < OTC_NEAT_OBJ_COUNT; i++)
                if (!strcmp(w, objective_names[i])) o = i;
            if (o < 0)
                return fail_key(st, section, name,
                                "unknown objective '%s' (expected fitness, connections, nodes, "
                                "parameters, cost, substrate_links, substrate_length or diversity)",
                                w);
            for (int i = 0; i < n; i++)
                if (st->c->objectives[i] == (otc_neat_objective)o)
                    return fail_key(st, section, name, "objective '%s' given twice", w);
            if (n == OTC_NEAT_MAX_OBJECTIVES)
                return fail_key(st, section, name, "more than %s objectives", "4");
            st->c->objectives[n++] = (otc_neat_objective)o;
        }
        if (n < 2) return fail_key(st, section, name, "at least two objectives are needed%s", "");
        st->c->n_objectives = n;
        return true;
    }
    case K_NOVELTY: {
        double x = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(x))
            return fail_key(st, section, name, "bad value '%s' (expected a number)", value);
        if (!in_range(k, x)) return range_error(st, k, section, name, value);
        if (k->offset == OFF(novelty_k)) {
            if (x != floor(x))
                return fail_key(st, section, name, "bad value '%s' (expected an integer)", value);
            *(int *)dest = (int)x;
        } else {
            *(double *)dest = x;
        }
        return true;
    }
    case K_OPTIM:
        if (strcmp(value, "adam"))
            return fail_key(st, section, name, "unsupported optimizer '%s' (only adam)", value);
        return true;
    case K_GRID:
        if (!otc_substrate_parse_grid(value, (otc_neat_grid *)dest))
            return fail_key(st, section, name, OTC_SUBSTRATE_GRID_EXPECTED, value);
        return true;
    case K_GRIDS:
        if (!strcmp(value, "none")) {
            st->c->substrate.n_hidden = 0;
            return true;
        }
        if (n_items == 0 || n_items > OTC_SUBSTRATE_MAX_HIDDEN)
            return fail_key(st, section, name, OTC_SUBSTRATE_GRIDS_EXPECTED, value);
        for (int i = 0; i < n_items; i++)
            if (!otc_substrate_parse_grid(item[i], &st->c->substrate.hidden[i]))
                return fail_key(st, section, name, OTC_SUBSTRATE_GRID_EXPECTED, item[i]);
        st->c->substrate.n_hidden = n_items;
        return true;
    case K_SUB_ACT: {
        int a = otc_neat_act_from_name(value);
        if (a < 0) return fail_key(st, section, name, "unknown activation '%s'", value);
        *(otc_act *)dest = (otc_act)a;
        return true;
    }
    case K_LEO_SEED:
        for (int v = 0; v < (int)(sizeof leo_seed_names / sizeof leo_seed_names[0]); v++)
            if (!strcmp(value, leo_seed_names[v])) {
                *(otc_leo_seed *)dest = (otc_leo_seed)v;
                return true;
            }
        return fail_key(st, section, name, "bad value '%s' (expected none or locality_x)", value);
    }
    return true;
}

static int handler(void *user, const char *section, const char *name, const char *value) {
    parse_state *st = user;
    if (st->failed) return 1;
    bool known_section = false;
    for (int i = 0; i < N_KEYS; i++) {
        if (strcmp(keys[i].section, section)) continue;
        known_section = true;
        if (strcmp(keys[i].name, name)) continue;
        if (st->seen[i]) {
            char msg[64];
            snprintf(msg, sizeof msg, "repeated key (first given on line %d)%%s", st->seen[i]);
            return fail_key(st, section, name, msg, "");
        }
        st->seen[i] = st->line;
        st->otc_key |= otc_only(section, name);
        st->c->substrate.enabled |= !strcmp(section, "Substrate");
        return handle_value(st, &keys[i], section, name, value) ? 1 : 0;
    }
    if (!known_section) return fail_key(st, section, name, "unknown section [%s]", section);
    return fail_key(st, section, name, "unknown key%s", "");
}

/* inih reads lines through this, which is how the handler knows the line it is on. Lines end
 * with LF, CRLF or a lone CR and reach inih whole, ending in LF: a comment line of any length
 * is handed over empty, and any other line longer than inih's buffer is refused (inih would
 * split it and parse its tail as a line of its own). */
static char *reader(char *str, int num, void *stream) {
    parse_state *st = stream;
    if (!*st->text || st->failed || num < 2) return NULL;
    size_t n = strcspn(st->text, "\r\n");
    const char *next = st->text + n;
    if (*next == '\r' && next[1] == '\n')
        next += 2;
    else if (*next)
        next++;
    st->line++;
    size_t lead = strspn(st->text, " \t\f\v");
    if (lead < n && (st->text[lead] == '#' || st->text[lead] == ';')) n = 0; /* a comment */
    if (n > (size_t)num - 2) {
        st->status = otc_fail(OTC_ERR_CONFIG, "%s:%d: line longer than %d bytes", st->file,
                              st->line, num - 2);
        st->failed = true;
        return NULL;
    }
    memcpy(str, st->text, n);
    str[n] = '\n';
    str[n + 1] = '\0';
    st->text = next;
    return str;
}

/* The activation names in the config's dialect (they were checked as they were read). */
static void resolve_activations(parse_state *st) {
    otc_neat_config *c = st->c;
    bool np = c->np_functions = st->functions >= 0 ? st->functions == 1 : !st->otc_key;
    c->np_evolution = st->rules >= 0 ? st->rules == 1 : !st->otc_key;
    if (st->act_default[0]) c->activation_default = (otc_act)act_in_dialect(st->act_default, np);
    if (!st->act_options[0]) return;
    char buf[sizeof st->act_options], *item[LIST_ITEMS];
    memcpy(buf, st->act_options, sizeof buf);
    int n = 0, n_items = 0;
    otc_list_split(buf, true, item, LIST_ITEMS, &n_items); /* read once already: no error */
    for (int j = 0; j < n_items; j++) {
        otc_act a = (otc_act)act_in_dialect(item[j], np);
        bool dup = false;
        for (int i = 0; i < n; i++) dup |= c->activation_options[i] == a;
        if (!dup && n < OTC_ACT_COUNT) c->activation_options[n++] = a;
    }
    c->n_activation_options = n;
}

/* CTRNN settings that cannot work together (the time constant's range always: neat-python
 * divides by it). */
static otc_status check_ctrnn(const char *file, const otc_neat_config *c) {
    if (!(c->time_constant.min_value > 0))
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [DefaultGenome] time_constant_min_value: %g, must be positive "
                        "(a CTRNN divides by the time constant)",
                        file, c->time_constant.min_value);
    if (!c->ctrnn) return OTC_OK;
    if (c->bias_node)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [DefaultGenome] bias_node: not with ctrnn (a CTRNN's neurons have "
                        "their own biases, as neat-python's)",
                        file);
    if (c->train_steps > 0)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [Hybrid] train_steps: gradient training of CTRNN genomes is not "
                        "supported",
                        file);
    if ((c->ctrnn_advance_time > 0) != (c->ctrnn_time_step > 0))
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [DefaultGenome] ctrnn_advance_time and ctrnn_time_step: give both "
                        "or neither (neither: the task's own time per action)",
                        file);
    if (c->ctrnn_time_step > 0 && c->ctrnn_advance_time / c->ctrnn_time_step > OTC_MAX_CTRNN_STEPS)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [DefaultGenome] ctrnn_advance_time %g / ctrnn_time_step %g is more "
                        "than %d integration steps per forward",
                        file, c->ctrnn_advance_time, c->ctrnn_time_step, OTC_MAX_CTRNN_STEPS);
    return OTC_OK;
}

static otc_status check_config(parse_state *st) {
    otc_neat_config *c = st->c;
    resolve_activations(st);
    otc_status cs = check_ctrnn(st->file, c);
    if (cs == OTC_OK && c->substrate.enabled) cs = otc_substrate_check(c, st->file);
    if (cs != OTC_OK) return cs;
    for (int i = 0; i < N_KEYS; i++)
        if (st->seen[i] && !strncmp(keys[i].name, "time_constant_", 14))
            c->time_constants_given = true;
    for (int i = 0; i < N_KEYS; i++) {
        if (!keys[i].required || st->seen[i]) continue;
        if (!strcmp(keys[i].name, "fitness_threshold") && c->no_fitness_termination) continue;
        return otc_fail(OTC_ERR_CONFIG, "%s: [%s] %s: missing required key", st->file,
                        keys[i].section, keys[i].name);
    }
    if (isnan(c->compatibility_excess_coefficient))
        c->compatibility_excess_coefficient = c->compatibility_disjoint_coefficient;
    if (c->structural_mutation_surer < 0)
        c->structural_mutation_surer = c->single_structural_mutation;
    const struct {
        const char *name;
        const otc_neat_float_attr *a;
    } attrs[] = {{"bias", &c->bias},
                 {"response", &c->response},
                 {"weight", &c->weight},
                 {"time_constant", &c->time_constant}};
    for (int i = 0; i < 4; i++)
        if (attrs[i].a->min_value > attrs[i].a->max_value)
            return otc_fail(OTC_ERR_CONFIG,
                            "%s: [DefaultGenome] %s_min_value: greater than %s_max_value", st->file,
                            attrs[i].name, attrs[i].name);
    /* The first generation's size, before any work is done (connection counts may exceed an
     * int, so this is in double). */
    double src = c->num_inputs + (c->bias_node ? 1 : 0), out = c->num_outputs, hid = c->num_hidden;
    double conns = 0;
    switch (c->initial_connection) {
    case OTC_NEAT_CONNECT_UNCONNECTED:
        break;
    case OTC_NEAT_CONNECT_FS_NEAT_NOHIDDEN:
        conns = out;
        break;
    case OTC_NEAT_CONNECT_FS_NEAT_HIDDEN:
        conns = out + hid;
        break;
    default: {
        bool direct = c->initial_connection == OTC_NEAT_CONNECT_FULL_DIRECT ||
                      c->initial_connection == OTC_NEAT_CONNECT_PARTIAL_DIRECT || hid == 0;
        conns = (src * hid + hid * out + (direct ? src * out : 0)) * c->connection_fraction;
    }
    }
    double per_genome = src + out + hid + conns, genes = c->pop_size * per_genome;
    if (genes > OTC_NEAT_MAX_INITIAL_GENES) {
        int line = 0;
        for (int i = 0; i < N_KEYS; i++)
            if (!strcmp(keys[i].name, "pop_size")) line = st->seen[i];
        return otc_fail(OTC_ERR_CONFIG,
                        "%s:%d: [NEAT] pop_size: %d genomes of %.0f genes each (nodes and "
                        "initial connections) make %.0f genes, more than the limit of %d (about "
                        "0.4 GB): lower pop_size, num_inputs, num_outputs or num_hidden, or use "
                        "a sparser initial_connection",
                        st->file, line, c->pop_size, per_genome, genes, OTC_NEAT_MAX_INITIAL_GENES);
    }
    if (c->selection != OTC_NEAT_SELECT_FITNESS && c->np_evolution)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [NEAT] selection: %s needs otc's evolution rules (not evolution = "
                        "neat-python)",
                        st->file, selection_names[c->selection]);
    bool has_fitness = false;
    for (int i = 0; i < c->n_objectives; i++)
        has_fitness |= c->objectives[i] == OTC_NEAT_OBJ_FITNESS;
    /* The non-dominated sort keeps a list of whom each genome dominates: pop_size^2 ints. */
    if (c->selection == OTC_NEAT_SELECT_NSGA2 && c->pop_size > 5000)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [NEAT] pop_size: %d is more than nsga2 sorts (at most 5000)", st->file,
                        c->pop_size);
    for (int i = 0; i < c->n_objectives; i++)
        if (otc_neat_objective_paints(c->objectives[i]) && !c->substrate.enabled)
            return otc_fail(OTC_ERR_CONFIG,
                            "%s: [NEAT] objectives: %s needs a [Substrate] section (the genome "
                            "must be a CPPN painting a substrate)",
                            st->file, objective_names[c->objectives[i]]);
    if (c->selection == OTC_NEAT_SELECT_NSGA2 && !has_fitness)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [NEAT] objectives: nsga2 needs fitness among the objectives (the "
                        "task's success is measured by it)",
                        st->file);
    bool default_in_options = c->activation_random;
    for (int i = 0; i < c->n_activation_options; i++)
        default_in_options |= c->activation_options[i] == c->activation_default;
    bool agg_in_options = c->aggregation_random;
    for (int i = 0; i < c->n_aggregation_options; i++)
        agg_in_options |= c->aggregation_options[i] == c->aggregation_default;
    if (!agg_in_options)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [DefaultGenome] aggregation_default: '%s' is not in "
                        "aggregation_options",
                        st->file, otc_agg_name(c->aggregation_default));
    if (!default_in_options)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [DefaultGenome] activation_default: '%s' is not in activation_options",
                        st->file, otc_neat_act_name(c->activation_default));
    return OTC_OK;
}

otc_status otc_neat_config_ctrnn(otc_neat_config *c, const char *name, double advance_time,
                                 double time_step) {
    if (!c) return otc_fail(OTC_ERR_ARG, "otc_neat_config_ctrnn: NULL config");
    if (!(advance_time >= 0 && advance_time <= BIG && time_step >= 0 && time_step <= BIG))
        return otc_fail(OTC_ERR_CONFIG, "%s: advance time %g and time step %g: not times",
                        name ? name : "config", advance_time, time_step);
    otc_neat_config t = *c;
    t.ctrnn = true;
    if (advance_time > 0 || time_step > 0) {
        t.ctrnn_advance_time = advance_time;
        t.ctrnn_time_step = time_step;
    }
    otc_status s = check_ctrnn(name ? name : "config", &t);
    if (s == OTC_OK) *c = t;
    return s;
}

otc_status otc_neat_config_parse(const char *text, const char *name, otc_neat_config *out) {
    if (!text || !out) return otc_fail(OTC_ERR_ARG, "otc_neat_config_parse: NULL argument");
    otc_neat_config c;
    otc_neat_config_defaults(&c);
    /* The reader counts a line when it hands it over; the handler sees that count. A UTF-8
     * byte order mark at the start is skipped. */
    if (!strncmp(text, "\xEF\xBB\xBF", 3)) text += 3;
    parse_state st = {.file = name ? name : "config",
                      .c = &c,
                      .text = text,
                      .line = 0,
                      .functions = -1,
                      .rules = -1};
    int rc = ini_parse_stream(reader, &st, handler, &st);
    if (st.failed) return st.status;
    if (rc > 0)
        return otc_fail(OTC_ERR_CONFIG, "%s:%d: syntax error (expected [section] or key = value)",
                        st.file, rc);
    if (rc < 0) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory while parsing", st.file);
    otc_status s = check_config(&st);
    if (s != OTC_OK) return s;
    *out = c;
    return OTC_OK;
}

otc_status otc_neat_config_load(const char *path, otc_neat_config *out) {
    if (!path) return otc_fail(OTC_ERR_ARG, "otc_neat_config_load: NULL path");
    char *buf = NULL;
    size_t len = 0;
    otc_status rs = otc_read_text_file(path, OTC_MAX_CONFIG_BYTES, &buf, &len);
    if (rs != OTC_OK) return rs;
    otc_status s = otc_neat_config_parse(buf, path, out);
    free(buf);
    return s;
}

/* One key's effective value as text; false for keys that store nothing. */
static bool format_value(const key_def *k, const otc_neat_config *c, char *buf, size_t size) {
    const void *src = (const char *)c + k->offset;
    static const char *agg_names[] = {"max", "min", "mean", "median"};
    switch (k->kind) {
    case K_INT:
        snprintf(buf, size, "%d", *(const int *)src);
        return true;
    case K_DOUBLE:
    case K_POSITIVE: {
        if (!k->offset) return false;
        double x = *(const double *)src; /* the shortest of 15 or 17 digits that reads back */
        snprintf(buf, size, "%.15g", x);
        if (strtod(buf, NULL) != x) snprintf(buf, size, "%.17g", x);
        return true;
    }
    case K_BOOL:
        snprintf(buf, size, "%s", *(const bool *)src ? "true" : "false");
        return true;
    case K_AGG:
        snprintf(buf, size, "%s", agg_names[*(const otc_neat_agg *)src]);
        return true;
    case K_CONNECT:
        for (size_t i = 0; i < sizeof connect_names / sizeof connect_names[0]; i++) {
            if (connect_names[i].kind != c->initial_connection) continue;
            if (connect_names[i].fraction)
                snprintf(buf, size, "%s %.17g", connect_names[i].name, c->connection_fraction);
            else
                snprintf(buf, size, "%s", connect_names[i].name);
            return true;
        }
        return false;
    case K_ACT:
        snprintf(buf, size, "%s",
                 c->activation_random ? "random" : otc_neat_act_name(*(const otc_act *)src));
        return true;
    /* The aggregation keys are listed only where they differ from the sum everywhere, so
     * checkpoints from before they existed still resume. */
    case K_AGGR:
        if (!c->aggregation_random && c->aggregation_default == OTC_AGG_SUM) return false;
        snprintf(buf, size, "%s",
                 c->aggregation_random ? "random" : otc_agg_name(c->aggregation_default));
        return true;
    case K_AGGRS: {
        if (c->n_aggregation_options == 1 && c->aggregation_options[0] == OTC_AGG_SUM) return false;
        size_t at = 0;
        buf[0] = '\0';
        for (int i = 0; i < c->n_aggregation_options && at < size; i++)
            at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? " " : "",
                                   otc_agg_name(c->aggregation_options[i]));
        return true;
    }
    case K_AGG_RATE: {
        double x = *(const double *)src;
        if (x == 0) return false;
        snprintf(buf, size, "%.17g", x);
        return true;
    }
    case K_ACTS: {
        size_t at = 0;
        buf[0] = '\0';
        for (int i = 0; i < c->n_activation_options && at < size; i++)
            at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? " " : "",
                                   otc_neat_act_name(c->activation_options[i]));
        return true;
    }
    case K_SURER:
        snprintf(buf, size, "%s", *(const int *)src ? "true" : "false");
        return true;
    case K_INIT_TYPE:
        snprintf(buf, size, "%s", *(const bool *)src ? "uniform" : "gaussian");
        return true;
    case K_STRING:
    case K_COLUMNS:
        snprintf(buf, size, "%s", (const char *)src);
        return true;
    case K_TASK_KIND:
        snprintf(buf, size, "%s", *(const bool *)src ? "regression" : "classification");
        return true;
    case K_INHERIT:
        snprintf(buf, size, "%s", *(const bool *)src ? "lamarckian" : "baldwinian");
        return true;
    case K_SEQ_STEPS:
        snprintf(buf, size, "%s", *(const bool *)src ? "last" : "all");
        return true;
    case K_RULES: /* listed only when neat-python's: checkpoints of otc's rules predate it */
        if (!*(const bool *)src) return false;
        snprintf(buf, size, "neat-python");
        return true;
    /* The selection keys are listed only where they change the run (earlier checkpoints
     * lack them): selection and objectives when not the default, novelty_* under novelty. */
    case K_SELECT:
        if (c->selection == OTC_NEAT_SELECT_FITNESS) return false;
        snprintf(buf, size, "%s", selection_names[c->selection]);
        return true;
    case K_OBJECTIVES: {
        if (c->selection != OTC_NEAT_SELECT_NSGA2) return false;
        size_t at = 0;
        buf[0] = '\0';
        for (int i = 0; i < c->n_objectives && at < size; i++)
            at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? ", " : "",
                                   objective_names[c->objectives[i]]);
        return true;
    }
    case K_NSGA2_VAL:
        if (c->selection != OTC_NEAT_SELECT_NSGA2 || !c->nsga2_rank) return false;
        snprintf(buf, size, "rank");
        return true;
    case K_OBJ_PROB:
        if (c->selection != OTC_NEAT_SELECT_NSGA2 || c->objective_probability == 1) return false;
        snprintf(buf, size, "%.17g", c->objective_probability);
        return true;
    case K_NOVELTY:
        if (c->selection != OTC_NEAT_SELECT_NOVELTY) return false;
        if (k->offset == OFF(novelty_k))
            snprintf(buf, size, "%d", c->novelty_k);
        else
            snprintf(buf, size, "%.17g", *(const double *)src);
        return true;
    case K_GRID: {
        const otc_neat_grid *gr = src;
        snprintf(buf, size, "%dx%d", gr->nx, gr->ny);
        return true;
    }
    case K_GRIDS: {
        size_t at = 0;
        snprintf(buf, size, "none");
        for (int i = 0; i < c->substrate.n_hidden && at < size; i++)
            at += (size_t)snprintf(buf + at, size - at, "%s%dx%d", i ? " " : "",
                                   c->substrate.hidden[i].nx, c->substrate.hidden[i].ny);
        return true;
    }
    case K_SUB_ACT:
        snprintf(buf, size, "%s", otc_neat_act_name(*(const otc_act *)src));
        return true;
    case K_LEO_SEED: /* listed when set: earlier checkpoints lack the key */
        if (*(const otc_leo_seed *)src == OTC_LEO_SEED_NONE) return false;
        snprintf(buf, size, "%s", leo_seed_names[*(const otc_leo_seed *)src]);
        return true;
    case K_FUNCS: /* the activations' names are listed as resolved */
    case K_OPTIM:
    case K_SEED: /* a checkpoint records the seed itself */
    case K_SECONDS:
        return false;
    }
    return false;
}

void otc_neat_config_list(const otc_neat_config *c, otc_neat_config_visitor fn, void *ctx) {
    char buf[256];
    for (int i = 0; i < N_KEYS; i++) {
        /* The CTRNN keys change nothing without ctrnn (and earlier checkpoints lack them). */
        if (!c->ctrnn &&
            (!strncmp(keys[i].name, "time_constant_", 14) || !strncmp(keys[i].name, "ctrnn", 5)))
            continue;
        /* max_steps is listed when set (earlier checkpoints lack it). */
        if (keys[i].offset == offsetof(otc_neat_config, exec_max_steps) &&
            c->exec_max_steps == OTC_NEAT_EXEC_MAX_STEPS)
            continue;
        /* Configs without the section list what they listed before it existed. */
        if (!c->substrate.enabled && !strcmp(keys[i].section, "Substrate")) continue;
        if (format_value(&keys[i], c, buf, sizeof buf)) fn(ctx, keys[i].section, keys[i].name, buf);
    }
}
