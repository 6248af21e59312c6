/* Training through time, compiled: a recurrent step graph (Delay nodes) unrolled over T steps
 * into one feed-forward graph, which the plan, the C renderer and the JIT train like any other. */
#ifndef OTC_UNROLL_H
#define OTC_UNROLL_H

#include "otc/graph.h"

/*
 * Step t's copy of every node; Parameters are shared by all steps (one node each, so their
 * gradient is the sum over the steps). A Delay is not copied: at step 0 it is an Input
 * holding the state before the window (state_in), at step t > 0 its source's copy at step
 * t - 1, so gradients cross steps exactly along the Delay edges and stop at step 0, as
 * otc_exec_seq_backward's do. What the Delays hold after the last step (state_out) is marked
 * as the unrolled graph's outputs, in Delay order (a node two Delays share is marked once;
 * unnamed ones named "<delay>.next"): truncated BPTT feeds a window's state_out into the
 * next window's state_in. Step t's copy of an Input is named "<input>.step<t>".
 *
 * With a loss (a scalar node of the step graph), `total` = sum_t weight_t * loss_t, each
 * weight a frozen Parameter "loss_weight.step<t>" (initialised to 1/T, the mean over the
 * steps) the caller may rewrite, so one unrolled
 * graph serves every weighting of its steps.
 */
typedef struct {
    otc_graph *graph; /* owned */
    int steps;
    int n_step_nodes; /* size of the step graph */
    otc_id *map;      /* [steps * n_step_nodes]: step t's node for step-graph node id (the
                         shared node for Parameters), -1 where a node has no copy */
    int n_inputs;     /* the step graph's Inputs (otc_graph_input order) */
    otc_id *inputs;   /* [steps * n_inputs]: step t's Input for input k at t * n_inputs + k */
    int n_delays;
    otc_id *delays;    /* [n_delays] the step graph's Delay ids, in id order */
    otc_id *state_in;  /* [n_delays] Inputs "<delay>.init": each Delay's value before step 0 */
    otc_id *state_out; /* [n_delays] what each Delay holds after the last step */
    otc_id *weights;   /* [steps] the loss weights (frozen Parameters [1]), or NULL */
    otc_id total;      /* the weighted loss, or -1 */
} otc_unrolled;

/* Unroll g over `steps` (>= 1) steps; loss -1 for none. Errors: a bad argument, a Delay
 * whose source is unset, a loss that is not a scalar, a graph too large (the node limit). */
otc_status otc_unroll(const otc_graph *g, int steps, otc_id loss, otc_unrolled **out);
void otc_unrolled_free(otc_unrolled *u);

/* The step graph a tape trains (otc_emit_c_options.bptt): g unrolled over one step, its loss
 * weight 1/window, so that a window of `window` steps run over it trains on the mean of the
 * steps' losses, as the unrolled window does. */
otc_status otc_unroll_step(const otc_graph *g, int window, otc_id loss, otc_unrolled **out);

#endif
