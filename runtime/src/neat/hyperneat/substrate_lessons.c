/* A task's substrate between painting and scoring: trained on the task's rows when [Hybrid]
 * asks (Baldwinian), the same for every task and for the substrate handed out of evolution. */
#include <stdlib.h>

#include "otc/hyperneat.h"

otc_substrate_train_options otc_substrate_train_options_of(const otc_neat_config *c) {
    return (otc_substrate_train_options){c->train_steps, c->batch_size, (float)c->learning_rate};
}

otc_status otc_substrate_learn(otc_substrate *s, const otc_substrate_lessons *e) {
    if (!e || e->train.steps <= 0) return OTC_OK;
    return otc_substrate_train(s, e->x, e->t, e->rows, &e->train, NULL);
}

otc_status otc_substrate_from_genome_trained(const otc_neat_genome *cppn, const otc_neat_config *c,
                                             int scale, const otc_substrate_lessons *e,
                                             otc_substrate **out) {
    otc_status st = otc_substrate_from_genome(cppn, c, scale, NULL, out);
    if (st == OTC_OK) st = otc_substrate_learn(*out, e);
    if (st != OTC_OK) {
        otc_substrate_free(*out);
        *out = NULL;
    }
    return st;
}
