/* Shared by the quant/ files: what calibration learns about each node, for the lowering. */
#ifndef OTC_QUANT_INTERNAL_H
#define OTC_QUANT_INTERNAL_H

#include "otc/quant.h"

typedef struct {
    double lo, hi;
} range;

/* What calibration learns about one node. */
typedef struct {
    range v;     /* its value */
    range pre;   /* neuron: bias + response * agg */
    double tmax; /* neuron: the largest |term| and |agg| */
    bool seen;
} node_stats;

/* The per-sample width of a batched shape ([B,C,H,W] -> C H W); -1 if not batched. */
int otc_quant_row_width(otc_shape s);
void otc_quant_widen(range *r, double x);
/* The data's own faults (width, non-finite cells, constant CSV columns); the one input. */
otc_status otc_quant_check_data(const otc_graph *g, const otc_dataset *d, otc_id *input);
/* Every node's range over d's rows (st[otc_graph_size(g)]). */
otc_status otc_quant_calibrate(otc_graph *g, const otc_dataset *d, otc_id input, node_stats *st);

#endif
