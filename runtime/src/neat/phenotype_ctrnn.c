/* A CTRNN genome's phenotype: the genome written as neat-python's network JSON (otc's
 * activation names, its own time constants) and lowered by the neat-python importer, so the
 * CTRNN.advance math is written once (neat_python.c). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"
#include "otc/neat_python.h"

/* Per node index: can reach an output over enabled connections (what the flat program and
 * neat-python's required_for_output evaluate). */
static bool *required_nodes(const otc_neat_genome *g) {
    bool *req = calloc((size_t)g->n_nodes + 1, sizeof *req);
    if (!req) return NULL;
    for (int i = 0; i < g->n_nodes; i++) req[i] = g->nodes[i].type == OTC_NEAT_OUTPUT;
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < g->n_conns; i++) {
            const otc_neat_conn *cn = &g->conns[i];
            const otc_neat_node *a = otc_neat_genome_find_node(g, cn->in),
                                *o = otc_neat_genome_find_node(g, cn->out);
            if (!cn->enabled || !a || !o) continue;
            if (req[o - g->nodes] && !req[a - g->nodes]) req[a - g->nodes] = changed = true;
        }
    }
    return req;
}

static cJSON *named(const char *name) {
    cJSON *f = cJSON_CreateObject();
    if (f && (!cJSON_AddStringToObject(f, "name", name) || !cJSON_AddFalseToObject(f, "custom"))) {
        cJSON_Delete(f);
        return NULL;
    }
    return f;
}

/* One hidden or output node, as neat-python's export writes it. */
static bool add_node(cJSON *nodes, const otc_neat_node *n, const otc_neat_config *c) {
    cJSON *o = cJSON_CreateObject(), *act = named(otc_act_get(n->act)->name),
          *agg = named(otc_agg_name(n->agg));
    bool ok = o && act && agg && cJSON_AddItemToArray(nodes, o);
    if (!ok) {
        cJSON_Delete(o);
        cJSON_Delete(act);
        cJSON_Delete(agg);
        return false;
    }
    ok = cJSON_AddNumberToObject(o, "id", n->id) &&
         cJSON_AddStringToObject(o, "type", n->type == OTC_NEAT_OUTPUT ? "output" : "hidden") &&
         cJSON_AddNumberToObject(act, "alpha", otc_neat_act_alpha(c, n->act)) &&
         cJSON_AddItemToObject(o, "activation", act);
    if (!ok) cJSON_Delete(act);
    ok = ok && cJSON_AddItemToObject(o, "aggregation", agg);
    if (!ok) cJSON_Delete(agg);
    return ok && cJSON_AddNumberToObject(o, "bias", n->bias) &&
           cJSON_AddNumberToObject(o, "response", n->response) &&
           cJSON_AddNumberToObject(o, "time_constant", n->tau);
}

/* The export: required nodes that have an enabled connection in (neat-python evaluates no
 * other: the rest read 0), the enabled connections into them in innovation order. */
static cJSON *export_genome(const otc_neat_genome *g, const otc_neat_config *c, const bool *req) {
    cJSON *root = cJSON_CreateObject(), *topo = cJSON_CreateObject(), *nodes = cJSON_CreateArray(),
          *conns = cJSON_CreateArray();
    bool ok = root && topo && nodes && conns;
    if (ok) {
        cJSON_AddItemToObject(root, "topology", topo);
        cJSON_AddItemToObject(root, "nodes", nodes);
        cJSON_AddItemToObject(root, "connections", conns);
    } else {
        cJSON_Delete(topo);
        cJSON_Delete(nodes);
        cJSON_Delete(conns);
    }
    cJSON *in = ok ? cJSON_AddArrayToObject(topo, "input_keys") : NULL,
          *out = ok ? cJSON_AddArrayToObject(topo, "output_keys") : NULL;
    ok = ok && in && out && cJSON_AddStringToObject(root, "format_version", "1.0") &&
         cJSON_AddStringToObject(root, "network_type", "ctrnn");
    for (int i = 0; ok && i < c->num_inputs; i++)
        ok = cJSON_AddItemToArray(in, cJSON_CreateNumber(i));
    for (int i = 0; ok && i < g->n_nodes; i++) {
        const otc_neat_node *n = &g->nodes[i];
        if (n->type == OTC_NEAT_OUTPUT) ok = cJSON_AddItemToArray(out, cJSON_CreateNumber(n->id));
        if (!ok || !req[i] || (n->type != OTC_NEAT_OUTPUT && n->type != OTC_NEAT_HIDDEN)) continue;
        bool fed = false;
        for (int k = 0; k < g->n_conns && !fed; k++)
            fed = g->conns[k].enabled && g->conns[k].out == n->id;
        if (fed) ok = add_node(nodes, n, c);
    }
    for (int k = 0; ok && k < g->n_conns; k++) {
        const otc_neat_conn *cn = &g->conns[k];
        const otc_neat_node *o = otc_neat_genome_find_node(g, cn->out);
        if (!cn->enabled || !o || !req[o - g->nodes]) continue;
        cJSON *e = cJSON_CreateObject();
        ok = e && cJSON_AddItemToArray(conns, e) && cJSON_AddNumberToObject(e, "from", cn->in) &&
             cJSON_AddNumberToObject(e, "to", cn->out) &&
             cJSON_AddNumberToObject(e, "weight", cn->weight) &&
             cJSON_AddTrueToObject(e, "enabled");
    }
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

otc_status otc_neat_ctrnn_phenotype(const otc_neat_genome *g, const otc_neat_config *c,
                                    otc_neat_phenotype *p) {
    if (!(c->ctrnn_time_step > 0 && c->ctrnn_advance_time > 0))
        return otc_fail(OTC_ERR_CONFIG, "ctrnn: ctrnn_advance_time and ctrnn_time_step are not set "
                                        "(otc_neat_ctrnn_times)");
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].type == OTC_NEAT_BIAS)
            return otc_fail(OTC_ERR_FORMAT, "ctrnn: genome has a bias node (node %d)",
                            g->nodes[i].id);
    bool *req = required_nodes(g);
    cJSON *root = req ? export_genome(g, c, req) : NULL;
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    free(req);
    cJSON_Delete(root);
    if (!text) return otc_fail(OTC_ERR_NOMEM, "out of memory building a CTRNN phenotype");
    otc_neat_python_options o = {.advance_time = c->ctrnn_advance_time,
                                 .time_step = c->ctrnn_time_step,
                                 .otc_act_names = true};
    otc_graph *graph = NULL;
    otc_status s = otc_neat_python_import(text, strlen(text), "ctrnn genome", &o, &graph);
    cJSON_free(text);
    if (s != OTC_OK) return s;
    otc_graph_free(p->graph);
    p->graph = graph;
    p->input = otc_graph_find(graph, "x");
    return p->input < 0 ? otc_fail(OTC_ERR_STATE, "ctrnn phenotype: no input x") : OTC_OK;
}
