/* Drawing a graph as Graphviz DOT text: inputs on one side, outputs on the other, optional
 * weight styling and grouping by depth. Rendering DOT to SVG/PNG is the caller's business
 * (the `otc viz` command uses libgvc), so libotc itself does not depend on Graphviz. */
#ifndef OTC_DOT_H
#define OTC_DOT_H

#include <stdbool.h>
#include <stddef.h>

#include "graph.h"

typedef struct {
    /* Edge colour by weight sign (blue positive, red negative) and width by magnitude,
     * relative to the largest in the graph: a Neuron's incoming weights, and for a MatMul
     * with a Parameter operand the RMS of that matrix (colour: sign of its mean). */
    bool weights;
    /* Box the nodes of each depth (longest path from an input) together, one column per
     * depth: "inputs", "depth 1", ..., "outputs". */
    bool group_depth;
    /* Draw Parameter nodes and their edges; by default a parameter is folded into the label
     * of the node that uses it. */
    bool show_params;
    /* Top to bottom instead of left to right. */
    bool top_down;
    /* A caption for the drawing (NULL: none). */
    const char *title;
} otc_dot_options;

/* The DOT text, NUL-terminated, for the caller to free(); *len (optional) gets its length.
 * options may be NULL (all off). Fails with OTC_ERR_CYCLE (naming it) on a cycle that does
 * not go through a Delay node. Names from a model file are escaped, so any graph yields
 * valid DOT. */
otc_status otc_dot_render(const otc_graph *g, const otc_dot_options *options, char **dot,
                          size_t *len);
/* Render and write atomically. */
otc_status otc_dot_save(const otc_graph *g, const otc_dot_options *options, const char *path);

/* Depth of every node (depth[otc_graph_size(g)]): 0 for Inputs and other nodes without a
 * data input, else 1 + the deepest data input. Parameters are not data (-1), and a Delay's
 * input edge does not count, so recurrent graphs have depths too. */
otc_status otc_graph_depths(const otc_graph *g, int *depth);

/* The edge attributes used for a weight w when the largest magnitude is max_abs, e.g.
 * `color="#2166ac" penwidth=2.30`; for other drawings (plans) to match. buf >= 64 bytes. */
const char *otc_dot_weight_style(float w, float max_abs, char *buf, size_t len);

#endif
