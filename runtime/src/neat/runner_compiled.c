/* A runner's switch from the flat program to compiled code (otc_neat_task.make_compiled): the
 * genome's phenotype graph under the task's compiled executor, taking over mid-episode with
 * the flat program's recurrent state, for genomes that run long enough to pay for a compile. */
#include <stdlib.h>

#include "neat_internal.h"

/* Can the compiled code compute what the flat program computes? Not for a CTRNN (its graph is
 * another construction) or a neuron that does not sum (the aggregations' code differs). */
static bool switchable(const otc_neat_config *c, const otc_neat_genome *g) {
    if (c->ctrnn) return false;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].agg != OTC_AGG_SUM) return false;
    return true;
}

otc_status otc_neat_flat_hand_over(const otc_neat_flat *f, const otc_neat_phenotype *ph,
                                   otc_executor *ex) {
    if (!f || !ph || !ex) return otc_fail(OTC_ERR_ARG, "otc_neat_flat_hand_over: NULL argument");
    const otc_graph *gr = ph->graph;
    int rows = otc_neat_flat_rows(f), got = 0;
    float one[1], *buf = rows <= 1 ? one : malloc(sizeof *buf * (size_t)rows);
    if (!buf) return otc_fail(OTC_ERR_NOMEM, "out of memory handing state over");
    otc_status s = OTC_OK;
    for (otc_id d = 0; d < otc_graph_size(gr) && s == OTC_OK; d++) {
        const otc_node *nd = otc_graph_node(gr, d);
        if (nd->op != OTC_OP_DELAY) continue;
        int id = -1;
        for (int k = 0; k < ph->n_neurons; k++)
            if (ph->neurons[k].neuron == nd->inputs[0]) id = ph->neurons[k].node_id;
        if (id < 0) {
            s = otc_fail(OTC_ERR_ARG, "otc_neat_flat_hand_over: a Delay without its neuron");
            break;
        }
        s = otc_neat_flat_state(f, id, buf, rows, &got);
        if (s == OTC_OK && rows > 0) s = otc_exec_set_state(ex, d, buf, rows);
    }
    if (buf != one) free(buf);
    return s;
}

void otc_neat_runner_switch(otc_neat_runner *r) {
    r->fixed = true; /* one attempt: on failure the flat program carries on */
    if (!switchable(r->c, r->g)) return;
    if (otc_neat_phenotype_build(r->g, r->c, &r->ph) != OTC_OK) {
        r->ph = NULL; /* the flat program ran it: it carries on */
        return;
    }
    otc_exec_options o = {.inference = true};
    r->ex = r->task->make_compiled(r->ph->graph, &o);
    if (r->ex && r->ph->recurrent && otc_neat_flat_hand_over(r->flat, r->ph, r->ex) != OTC_OK) {
        otc_exec_free(r->ex);
        r->ex = NULL;
    }
    if (!r->ex) { /* the flat program computes the same: carry on with it */
        otc_neat_phenotype_free(r->ph);
        r->ph = NULL;
        return;
    }
    r->flat = NULL; /* the compiled code runs from here on (own is still freed at close) */
}
