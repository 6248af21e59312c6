/* Private to hyperneat/: the substrate's fields, shared by painting and running (substrate.c)
 * and gradient training (substrate_train.c). */
#ifndef OTC_SUBSTRATE_INTERNAL_H
#define OTC_SUBSTRATE_INTERNAL_H

#include "otc/hyperneat.h"

#define MAX_LAYERS (OTC_SUBSTRATE_MAX_HIDDEN + 2)

typedef struct otc_substrate_trainer otc_substrate_trainer;
void otc_substrate_trainer_free(otc_substrate_trainer *t);

/* Training an evolvable substrate's found network (es_train.c): its links' weights and its
 * neurons' biases copied out of the network as parameters, their gradient, and the trained
 * values written back (the flat program rebuilt). */
typedef struct otc_es_trainer otc_es_trainer;
void otc_es_trainer_free(otc_es_trainer *t);
struct otc_substrate;
/* s->es_train (made or grown) laid out for s's network, buffers for `rows` rows. */
otc_status otc_es_trainer_prepare(struct otc_substrate *s, int rows, otc_es_trainer **t);
/* The parameter groups for the optimiser: the weights, then (bias) the biases; their count. */
int otc_es_trainer_params(otc_es_trainer *t, bool bias, float **p, const float **g, size_t *sz);
/* The loss on B rows x, tgt and the gradient of every parameter. */
otc_status otc_es_trainer_backprop(otc_es_trainer *t, const float *x, const float *tgt, int B,
                                   float *loss);
/* The last gradient by the network's conns (gw, in their order) and nodes (gb, in theirs; 0
 * without bias_output). */
void otc_es_trainer_gradient(const otc_es_trainer *t, const struct otc_substrate *s, float *gw,
                             float *gb);
otc_status otc_es_trainer_store(const otc_es_trainer *t, struct otc_substrate *s);

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
    otc_es_trainer *es_train; /* and an evolvable substrate's (es_train.c) */
};

#endif
