/* Private to hyperneat/: the substrate's fields, shared by painting and running (substrate.c)
 * and gradient training (substrate_train.c). */
#ifndef OTC_SUBSTRATE_INTERNAL_H
#define OTC_SUBSTRATE_INTERNAL_H

#include "otc/hyperneat.h"

#define MAX_LAYERS (OTC_SUBSTRATE_MAX_HIDDEN + 2)

typedef struct otc_substrate_trainer otc_substrate_trainer;
void otc_substrate_trainer_free(otc_substrate_trainer *t);

struct otc_substrate {
    int n_layers, size[MAX_LAYERS], nx[MAX_LAYERS], ny[MAX_LAYERS];
    float *w[MAX_LAYERS - 1], *b[MAX_LAYERS - 1];
    /* The small layers' weights transposed, [size(l), size(l + 1)], for one row at a time
     * (substrate.c): made from w by the first such run after w may have changed (painted,
     * trained, or handed out writable), so a batch-1 product runs along contiguous rows. */
    float *wt[MAX_LAYERS - 1];
    bool wt_stale;
    otc_neat_substrate cfg;
    float alpha;
    int cppn_in, cppn_out, query_rows;
    float *query, *answer; /* [query_rows, cppn_in], [query_rows, cppn_out] */
    float *act[2];         /* layer values while running, [batch, largest layer] */
    int act_rows;
    /* Evolvable (ES-HyperNEAT): the node coordinates of the input and output grids, the
     * network the last paint found, its config and its flat program. */
    float *in_xy, *out_xy;
    otc_es_network es;
    bool es_found;
    otc_neat_config es_cfg;
    otc_neat_flat *es_flat;
    /* Training (substrate_train.c): its buffers, made by the first training (NULL before). */
    otc_substrate_trainer *train;
};

#endif
