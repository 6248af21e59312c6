/* Random graphs for differential tests and benchmarks: evolved-style sparse DAGs of Neuron
 * nodes with mixed activations (optionally with elementwise and structural ops between
 * them), and layered MLPs. Seeded: the same seed gives the same graph on every machine. */
#ifndef OTC_RANDOM_GRAPH_H
#define OTC_RANDOM_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "otc/graph.h"
#include "otc/rng.h"

typedef struct {
    int n_inputs;       /* input columns (split over one or two Input nodes) */
    int n_neurons;      /* Neuron nodes in all, outputs included (1 ..) */
    int n_outputs;      /* the last neurons are marked as outputs (1 .. n_neurons) */
    int max_fanin;      /* sources per neuron, drawn from 1 .. max_fanin */
    float weight_scale; /* weights and biases uniform in [-s, s] */
    unsigned act_mask;  /* bit (1 << otc_act) for each activation to draw from; 0: all
                         * before neat-python's (OTC_ACT_CLASSIC_COUNT) */
    bool mixed_ops;     /* also elementwise ops, concat/slice/reshape between neurons */
    bool two_inputs;    /* split the columns over two Input nodes */
    /* Recurrent graphs: each connection is, with this probability, from any neuron (itself,
     * a later one: cycles through hidden nodes) through a Delay "d<i>" of that neuron's value,
     * as NEAT's recurrent connections are. 0 (the default): a DAG, drawn as before. */
    float recurrent;
} otc_testgen_neat_options;

/* Defaults for n neurons: 4 inputs, 2 outputs, fan-in up to 5 (about 3 connections per
 * neuron on average, like an evolved network), weights in [-1.5, 1.5], all activations. */
otc_testgen_neat_options otc_testgen_neat_defaults(int n_neurons);

/* An evolved-style graph; NULL (with otc_last_error) on failure. Free with otc_graph_free. */
otc_graph *otc_testgen_neat(uint64_t seed, const otc_testgen_neat_options *o);

/* A random recurrent graph for the compiled-recurrence tests: self-loops and cycles through
 * hidden nodes (recurrent 0.3), one or two inputs and 1-3 outputs chosen by the seed,
 * weights in [-1, 1], bounded activations (sigmoid, tanh, gaussian, sin, steepened sigmoid)
 * so 100 steps stay finite. */
otc_graph *otc_testgen_recurrent(uint64_t seed, int n_neurons);

/* Input "x" [B, sizes[0]], then Linear layers to sizes[1..n-1] with hidden_act between them
 * and out_act (an activation op, or -1) after the last; the output is marked. */
otc_graph *otc_testgen_mlp(uint64_t seed, int n, const int *sizes, otc_op hidden_act, int out_act);

/* Uniform values in [lo, hi). */
void otc_testgen_fill(otc_rng *rng, float *x, size_t n, float lo, float hi);

/* Floats per sample over all batched Input nodes / all outputs. */
int otc_testgen_input_width(const otc_graph *g);
int otc_testgen_output_width(const otc_graph *g);

#endif
