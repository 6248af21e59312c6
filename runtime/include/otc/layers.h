/* Layers built from graph nodes: Linear and an MLP helper. */
#ifndef OTC_LAYERS_H
#define OTC_LAYERS_H

#include "graph.h"
#include "rng.h"

/* y = x W + b with W [in, out] (Xavier-uniform from rng), b [out] zeros. Names the
 * parameters "<prefix>.weight"/"<prefix>.bias" when prefix is given. Returns y or -1. */
otc_id otc_linear(otc_graph *g, otc_id x, int out_features, otc_rng *rng, const char *prefix);

/* Linear layers to sizes[0..n-1] with the activation op `hidden_act` between them and
 * `out_act` (or -1 for none) after the last. Layers are named "fc1", "fc2", ... */
otc_id otc_mlp(otc_graph *g, otc_id x, int n, const int *sizes, otc_op hidden_act, int out_act,
               otc_rng *rng);

#endif
