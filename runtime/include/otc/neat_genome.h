/* NEAT genomes: node and connection genes, innovation tracking, mutation, crossover,
 * compatibility distance, JSON form, and the phenotype (a graph of Neuron nodes). */
#ifndef OTC_NEAT_GENOME_H
#define OTC_NEAT_GENOME_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "neat_config.h"
#include "rng.h"

/* Most numbers in a behaviour characterisation (otc_neat_eval.bc: novelty search, the
 * diversity objective): retina:sides's two answers to each of its 256 patterns. */
#define OTC_NEAT_MAX_BC 512
/* Most numbers a task's own summary of an episode gives (csv rows, pole observations, exec's
 * bc line): novelty's k-nearest distances were measured at this size. */
#define OTC_NEAT_SHORT_BC 16

typedef enum { OTC_NEAT_INPUT, OTC_NEAT_BIAS, OTC_NEAT_OUTPUT, OTC_NEAT_HIDDEN } otc_neat_node_type;

/* Node ids: inputs 0..n_in-1, the bias node (if any) n_in, outputs next, hidden after. */
typedef struct {
    int id;
    otc_neat_node_type type;
    otc_act act;
    float bias, response; /* unused for input and bias nodes */
    int agg;              /* otc_agg of the node's inputs (0: sum) */
    float tau;            /* CTRNN time constant (> 0; used when the config says ctrnn) */
} otc_neat_node;

/* A new node's time constant: drawn from time_constant_* under ctrnn (only then, so other
 * runs' random streams are unchanged), else its init_mean. */
float otc_neat_new_tau(const otc_neat_config *c, otc_rng *rng);

/* A new node's activation and aggregation: the config's defaults, or a random option where
 * the default is "random" (drawing from rng only then, so other runs' streams are unchanged). */
otc_act otc_neat_new_act(const otc_neat_config *c, otc_rng *rng);
int otc_neat_new_agg(const otc_neat_config *c, otc_rng *rng);

typedef struct {
    int innov; /* one (in, out) pair has one innovation number for the whole run */
    int in, out;
    float weight;
    bool enabled;
} otc_neat_conn;

typedef struct {
    int n_nodes, cap_nodes;
    otc_neat_node *nodes; /* sorted by id */
    int n_conns, cap_conns;
    otc_neat_conn *conns; /* sorted by innov */
    double fitness;
    bool evaluated;
    /* Its behaviour, as the task characterised it in the last evaluation (novelty search;
     * n_bc 0: none given). */
    int n_bc;
    float bc[OTC_NEAT_MAX_BC];
    /* Its mean behaviour distance to the rest of its generation (the diversity objective;
     * set after each evaluation of a generation whose objectives name it). */
    double diversity;
    int species; /* species id, 0 when not assigned */
} otc_neat_genome;

/* ---- innovation tracking --------------------------------------------------------------- */

/* Hands out node ids and innovation numbers. A connection (in, out) gets the same number
 * every time it appears in the run; splitting the same connection twice in one generation
 * gives the same new node and the same two connection numbers. */
typedef struct otc_neat_innovations otc_neat_innovations;

otc_neat_innovations *otc_neat_innovations_new(int next_node, int next_innov);
void otc_neat_innovations_free(otc_neat_innovations *t);
/* Start of a generation: forget this generation's node splits. */
void otc_neat_innovations_new_generation(otc_neat_innovations *t);
/* The innovation of (in, out), created if new; -1 when out of memory. */
int otc_neat_innovation_conn(otc_neat_innovations *t, int in, int out);
/* Node id for splitting connection innov this generation (a fresh id when `taken`, i.e. the
 * genome already holds the shared one); -1 when out of memory. */
int otc_neat_innovation_split(otc_neat_innovations *t, int innov, bool taken);
int otc_neat_innovations_next_node(const otc_neat_innovations *t);
int otc_neat_innovations_next_innov(const otc_neat_innovations *t);
/* Every (in, out) -> innov pair, for checkpoints: the count, the i-th pair, and restoring one. */
int otc_neat_innovations_count(const otc_neat_innovations *t);
void otc_neat_innovations_get(const otc_neat_innovations *t, int i, int *in, int *out, int *innov);
otc_status otc_neat_innovations_put(otc_neat_innovations *t, int in, int out, int innov);

/* ---- genomes ----------------------------------------------------------------------------- */

otc_neat_genome *otc_neat_genome_new(void);
void otc_neat_genome_free(otc_neat_genome *g);
otc_neat_genome *otc_neat_genome_copy(const otc_neat_genome *g);
/* A fresh genome of the config's inputs/outputs/hidden, connected by initial_connection,
 * attributes drawn from rng. */
otc_status otc_neat_genome_init(otc_neat_genome *g, const otc_neat_config *c,
                                otc_neat_innovations *t, otc_rng *rng);
/* Insert keeping the order; a node id or innovation already present is OTC_ERR_ARG. */
otc_status otc_neat_genome_add_node(otc_neat_genome *g, const otc_neat_node *n);
otc_status otc_neat_genome_add_conn(otc_neat_genome *g, const otc_neat_conn *c);
otc_neat_node *otc_neat_genome_find_node(const otc_neat_genome *g, int id);
otc_neat_conn *otc_neat_genome_find_conn(const otc_neat_genome *g, int innov);
/* The connection in -> out, or NULL. */
otc_neat_conn *otc_neat_genome_find_pair(const otc_neat_genome *g, int in, int out);
int otc_neat_genome_hidden_count(const otc_neat_genome *g);
int otc_neat_genome_enabled_count(const otc_neat_genome *g);
/* Would adding in -> out close a cycle among the enabled connections? */
bool otc_neat_creates_cycle(const otc_neat_genome *g, int in, int out);
/* Structural checks (sorted unique ids and innovations, endpoints exist, no connection into
 * an input, no duplicate (in, out), acyclic when feed_forward). OTC_ERR_FORMAT naming the
 * gene at fault. */
otc_status otc_neat_genome_validate(const otc_neat_genome *g, bool feed_forward);

/* ---- variation --------------------------------------------------------------------------- */

/* neat-python's mutate(): structural mutations (add/delete node/connection) with their
 * probabilities, then every gene's attributes (weights gated by weight_mutate_genome_rate). */
otc_status otc_neat_mutate(otc_neat_genome *g, const otc_neat_config *c, otc_neat_innovations *t,
                           otc_rng *rng);
/* Single mutations, exposed for tests. add_node/add_conn return OTC_OK without change when
 * there is nothing to do (no enabled connection / no free pair found). */
otc_status otc_neat_mutate_add_node(otc_neat_genome *g, const otc_neat_config *c,
                                    otc_neat_innovations *t, otc_rng *rng);
otc_status otc_neat_mutate_add_conn(otc_neat_genome *g, const otc_neat_config *c,
                                    otc_neat_innovations *t, otc_rng *rng);
void otc_neat_mutate_delete_node(otc_neat_genome *g, otc_rng *rng);
void otc_neat_mutate_delete_conn(otc_neat_genome *g, otc_rng *rng);
void otc_neat_mutate_attributes(otc_neat_genome *g, const otc_neat_config *c, otc_rng *rng);
/* Stanley's mutate_toggle_enable(1): one connection drawn at random is enabled if disabled, or
 * disabled if another enabled connection leaves the same source (so no part of the network is
 * cut off). */
void otc_neat_mutate_toggle_enable(otc_neat_genome *g, otc_rng *rng);
/* Stanley's mutate_gene_reenable: the oldest disabled connection is enabled. */
void otc_neat_mutate_reenable(otc_neat_genome *g);

/* A child of a and b. Matching genes come from either parent at random, disjoint and excess
 * genes from the fitter one (on equal fitness the one with fewer genes, as Stanley's code), so
 * the child's genes are a subset of one parent's; a gene disabled in either parent is disabled
 * with probability 0.75. Nodes come from the fitter parent. */
otc_status otc_neat_crossover(const otc_neat_genome *a, const otc_neat_genome *b,
                              const otc_neat_config *c, otc_rng *rng, otc_neat_genome **child);

/* c1·E/N + c2·D/N + c3·W̄ over the connection genes; N is the larger genome's gene count, or
 * 1 when both are smaller than compatibility_normalize_min_genes. Under ctrnn, plus c3 times
 * the mean |Δτ| over the neurons both have (neat-python counts time constants in its node
 * distance; otc's distance has no other node terms). */
double otc_neat_distance(const otc_neat_genome *a, const otc_neat_genome *b,
                         const otc_neat_config *c);

/* ---- JSON ---------------------------------------------------------------------------------- */

/* {"nodes":[{"id","type","activation","bias","response"}],"connections":[{"innov","in","out",
 * "weight","enabled"}],"fitness"}; the caller frees the string with free(). */
char *otc_neat_genome_to_json(const otc_neat_genome *g);
otc_status otc_neat_genome_from_json(const char *json, otc_neat_genome **out);

/* ---- phenotype ----------------------------------------------------------------------------- */

/* A genome as a runtime graph: one Input "x" [B, n_inputs], one Neuron per node that can
 * reach an output, outputs marked in order. With recurrence every connection from a
 * non-input node reads that node's Delay, so one forward is one synchronous network step as
 * in NEAT's recurrent networks. The map from neuron parameters back to genes is kept for
 * writing trained weights back. */
typedef struct {
    int node_id;   /* gene id */
    otc_id neuron; /* graph node */
    int n_weights;
    int *conn_innov; /* per weight slot, the connection gene (-1: a placeholder source) */
} otc_neat_pheno_neuron;

typedef struct {
    otc_graph *graph;
    otc_id input;
    int n_inputs, n_outputs;
    int n_neurons;
    otc_neat_pheno_neuron *neurons;
    bool recurrent;
} otc_neat_phenotype;

otc_status otc_neat_phenotype_build(const otc_neat_genome *g, const otc_neat_config *c,
                                    otc_neat_phenotype **out);
void otc_neat_phenotype_free(otc_neat_phenotype *p);
/* Copy the graph's (trained) weights and biases back into the genome, clamped to the
 * config's ranges (Lamarckian inheritance). */
otc_status otc_neat_phenotype_write_back(const otc_neat_phenotype *p, otc_neat_genome *g,
                                         const otc_neat_config *c);

#endif
