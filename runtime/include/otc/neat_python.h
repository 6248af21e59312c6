/* neat-python's network JSON (format 1.0, neat-python 2.1's export_network_json) as an otc
 * graph with neat-python's own semantics, so an evolved neat-python network runs, compiles and
 * deploys like any otc model. */
#ifndef OTC_NEAT_PYTHON_H
#define OTC_NEAT_PYTHON_H

#include <stdbool.h>
#include <stddef.h>

#include "graph.h"

typedef struct {
    /* ctrnn: each forward is CTRNN.advance(inputs, advance_time, time_step); 0 takes the
     * file's top-level "advance_time" / "time_step" (neat-python's fixtures carry them). */
    double advance_time, time_step;
    /* recurrent, ctrnn: the state as a second Input "state" [B, nodes] and a last output
     * "state_next" (the caller carries it from step to step) instead of Delay nodes, so the
     * compilers, which have no recurrent state yet, take the network. */
    bool state_io;
    /* Activation names are otc's (otc_act_get(a)->name: steep_sigmoid, np_sigmoid,
     * leaky_relu, ...) with an optional "alpha" beside "name" (the activation's slope
     * parameter; its default otherwise): how otc's own NEAT lowers a CTRNN genome. */
    bool otc_act_names;
} otc_neat_python_options;

/* CTRNN.advance's steps over advance_time: ceil(advance_time / time_step) (at least 1), all
 * of time_step but the last, which is what remains (*last_dt). */
int otc_neat_python_ctrnn_steps(double advance_time, double time_step, double *last_dt);

/* The graph of a network: one Input "x" [B, num_inputs] (columns in input_keys order), one
 * output per output key in order (out0, out1, ...), a Neuron per node with its activation,
 * aggregation, bias and response (otc/ops.h: neat-python's functions and clamps), and metadata
 * "neat_python" (type, keys, ctrnn times).
 *   feedforward: FeedForwardNetwork.activate, each row on its own.
 *   recurrent:   RecurrentNetwork.activate, one forward per step: every node reads the
 *                previous step's values of the nodes it reads (Delay nodes), the current inputs.
 *   ctrnn:       CTRNN.advance: ceil(advance_time / time_step) exponential-Euler steps per
 *                forward (the last one the remainder), inputs held, the state in Delays:
 *                v <- exp(-dt/tau) v + (1 - exp(-dt/tau)) act(bias + response agg(w v')).
 * A source that neat-python never computes (a node with no connections in, which its export
 * leaves out) reads 0, as neat-python's initial values. The text may be the export itself or an
 * object whose "network" member is the export (as neat-python's fixtures). `label` (the file name)
 * starts every error message, which names the field and node: OTC_ERR_FORMAT for malformed input,
 * OTC_ERR_UNSUPPORTED for iznn networks and custom functions. */
otc_status otc_neat_python_import(const char *text, size_t len, const char *label,
                                  const otc_neat_python_options *options, otc_graph **out);

#endif
