/* A pole agent on a genome's flat program alone (no runner, no task glue): the independent
 * reference the NEAT confirm and lane tests compare otc's evaluation paths against. */
#ifndef OTC_TEST_FLAT_AGENT_H
#define OTC_TEST_FLAT_AGENT_H

#include <math.h>

#include "otc/neat_flat.h"
#include "otc/pole.h"

typedef struct {
    otc_neat_flat *f;
} flat_agent;

/* One forward of the observations; a missing or non-finite output reads 0.5. */
static void flat_policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    flat_agent *a = ctx;
    float x[8], y[1] = {0.5f};
    for (int i = 0; i < n_obs && i < 8; i++) x[i] = (float)obs[i];
    if (otc_neat_flat_forward(a->f, x, 1, y) != OTC_OK) y[0] = 0.5f;
    for (int k = 0; k < n_out; k++) out[k] = k < 1 && isfinite(y[k]) ? y[k] : 0.5;
}

static void flat_reset(void *ctx) {
    otc_neat_flat_reset(((flat_agent *)ctx)->f);
}

#endif
