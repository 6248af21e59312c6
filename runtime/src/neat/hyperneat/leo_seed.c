/* The LEO locality seed (Verbancsics and Stanley 2011): every initial CPPN's link-expression
 * output starts as a Gaussian of x1 - x2, so the first substrates connect only nodes close
 * along x and evolution starts from local, modular wiring instead of all-to-all. */
#include "otc/hyperneat.h"

/* The seed's Gaussian: exp(-(SLOPE (x1 - x2))^2) - THRESHOLD > 0 expresses a link, i.e.
 * |x1 - x2| < sqrt(-ln THRESHOLD) / SLOPE = 0.55: a quarter of the plane's width and a bit,
 * so a node reaches its own column and the next one of a 4-wide grid (the retina's) but not
 * the far side of the plane. */
#define SEED_SLOPE     2.0f
#define SEED_THRESHOLD 0.3f

int otc_substrate_seed_nodes(const otc_neat_config *c) {
    return c->substrate.enabled && c->substrate.leo_seed == OTC_LEO_SEED_LOCALITY_X ? 1 : 0;
}

otc_status otc_substrate_seed_cppn(otc_neat_genome *g, const otc_neat_config *c,
                                   otc_neat_innovations *t, otc_rng *rng) {
    if (!otc_substrate_seed_nodes(c)) return OTC_OK;
    const otc_neat_substrate *s = &c->substrate;
    int first_out = c->num_inputs + (c->bias_node ? 1 : 0);
    int leo = first_out + 1 + s->bias_output; /* outputs: weight, [bias], leo */
    int gauss = first_out + c->num_outputs + c->num_hidden;
    otc_neat_node *out = otc_neat_genome_find_node(g, leo);
    if (!out || !s->leo) return otc_fail(OTC_ERR_CONFIG, "[Substrate] leo_seed: needs leo = true");
    /* The LEO reads only the Gaussian: its random direct links start disabled (evolution may
     * enable them again), and its threshold is its bias. */
    for (int i = 0; i < g->n_conns; i++)
        if (g->conns[i].out == leo) g->conns[i].enabled = false;
    out->act = OTC_ACT_IDENTITY;
    out->bias = -SEED_THRESHOLD;
    out->response = 1.0f;
    out->agg = OTC_AGG_SUM;
    otc_neat_node n = {gauss, OTC_NEAT_HIDDEN, OTC_ACT_GAUSSIAN,        0.0f,
                       1.0f,  OTC_AGG_SUM,     otc_neat_new_tau(c, rng)};
    otc_status st = otc_neat_genome_add_node(g, &n);
    /* x1 is input 0, x2 input 2 (otc_substrate_cppn_row). */
    const struct {
        int in, out;
        float w;
    } links[] = {{0, gauss, SEED_SLOPE}, {2, gauss, -SEED_SLOPE}, {gauss, leo, 1.0f}};
    for (int k = 0; k < 3 && st == OTC_OK; k++) {
        int innov = otc_neat_innovation_conn(t, links[k].in, links[k].out);
        if (innov < 0) return otc_fail(OTC_ERR_NOMEM, "out of memory for innovations");
        otc_neat_conn conn = {innov, links[k].in, links[k].out, links[k].w, true};
        st = otc_neat_genome_add_conn(g, &conn);
    }
    return st;
}
