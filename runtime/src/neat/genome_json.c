/* Genomes as JSON (model metadata and checkpoints). Numbers round-trip exactly: cJSON prints
 * doubles with enough digits, and every float is widened to double first. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "neat_internal.h"

static const char *type_names[] = {"input", "bias", "output", "hidden"};

cJSON *otc_neat_genome_to_cjson(const otc_neat_genome *g) {
    cJSON *j = cJSON_CreateObject(), *nodes = cJSON_CreateArray(), *conns = cJSON_CreateArray();
    if (!j || !nodes || !conns) goto fail;
    cJSON_AddItemToObject(j, "nodes", nodes);
    cJSON_AddItemToObject(j, "connections", conns);
    nodes = conns = NULL;
    cJSON *jn = cJSON_GetObjectItem(j, "nodes"), *jc = cJSON_GetObjectItem(j, "connections");
    for (int i = 0; i < g->n_nodes; i++) {
        const otc_neat_node *n = &g->nodes[i];
        cJSON *o = cJSON_CreateObject();
        if (!o) goto fail;
        cJSON_AddItemToArray(jn, o);
        if (!cJSON_AddNumberToObject(o, "id", n->id) ||
            !cJSON_AddStringToObject(o, "type", type_names[n->type]))
            goto fail;
        if (n->type == OTC_NEAT_OUTPUT || n->type == OTC_NEAT_HIDDEN) {
            if (!cJSON_AddStringToObject(o, "activation", otc_neat_act_name(n->act)) ||
                !cJSON_AddNumberToObject(o, "bias", n->bias) ||
                !cJSON_AddNumberToObject(o, "response", n->response))
                goto fail;
            /* the aggregation only when not the sum, so earlier genomes read the same */
            if (n->agg != OTC_AGG_SUM &&
                !cJSON_AddStringToObject(o, "aggregation", otc_agg_name(n->agg)))
                goto fail;
            /* the time constant only when not neat-python's default 1, likewise */
            if (n->tau != 1.0f && !cJSON_AddNumberToObject(o, "time_constant", n->tau)) goto fail;
        }
    }
    for (int i = 0; i < g->n_conns; i++) {
        const otc_neat_conn *c = &g->conns[i];
        cJSON *o = cJSON_CreateObject();
        if (!o) goto fail;
        cJSON_AddItemToArray(jc, o);
        if (!cJSON_AddNumberToObject(o, "innov", c->innov) ||
            !cJSON_AddNumberToObject(o, "in", c->in) ||
            !cJSON_AddNumberToObject(o, "out", c->out) ||
            !cJSON_AddNumberToObject(o, "weight", c->weight) ||
            !cJSON_AddBoolToObject(o, "enabled", c->enabled))
            goto fail;
    }
    /* cJSON prints 15 significant digits when they compare equal within an epsilon, which
     * changes the last bits; 17 digits make the fitness (and a resumed run) exact. */
    char fit[40];
    snprintf(fit, sizeof fit, "%.17g", isfinite(g->fitness) ? g->fitness : 0.0);
    if (!cJSON_AddRawToObject(j, "fitness", fit) ||
        !cJSON_AddBoolToObject(j, "evaluated", g->evaluated) ||
        !cJSON_AddNumberToObject(j, "species", g->species))
        goto fail;
    return j;
fail:
    cJSON_Delete(nodes);
    cJSON_Delete(conns);
    cJSON_Delete(j);
    otc_fail(OTC_ERR_NOMEM, "out of memory writing a genome as JSON");
    return NULL;
}

char *otc_neat_genome_to_json(const otc_neat_genome *g) {
    cJSON *j = otc_neat_genome_to_cjson(g);
    if (!j) return NULL;
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s) otc_fail(OTC_ERR_NOMEM, "out of memory writing a genome as JSON");
    return s;
}

static bool get_int(const cJSON *o, const char *key, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 1e9)
        return false;
    *out = (int)v->valuedouble;
    return true;
}

static bool get_float(const cJSON *o, const char *key, float *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || fabs(v->valuedouble) > 3e38)
        return false;
    *out = (float)v->valuedouble;
    return true;
}

/* Messages name the gene and field ("node 3: bias: ..."); callers add what holds the genome. */
otc_status otc_neat_genome_from_cjson(const cJSON *j, otc_neat_genome **out) {
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(j, "nodes");
    const cJSON *conns = cJSON_GetObjectItemCaseSensitive(j, "connections");
    if (!cJSON_IsArray(nodes) || !cJSON_IsArray(conns))
        return otc_fail(OTC_ERR_FORMAT, "expected arrays \"nodes\" and \"connections\"");
    otc_neat_genome *g = otc_neat_genome_new();
    if (!g) return OTC_ERR_NOMEM;
    otc_status s = OTC_OK;
    int idx = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, nodes) {
        otc_neat_node n = {0, OTC_NEAT_HIDDEN, OTC_ACT_IDENTITY, 0, 1, 0, 1};
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
        int t = -1;
        for (int k = 0; k < 4 && cJSON_IsString(type); k++)
            if (!strcmp(type->valuestring, type_names[k])) t = k;
        if (!get_int(o, "id", &n.id) || n.id < 0) {
            s = otc_fail(OTC_ERR_FORMAT, "node %d (in order): id: missing or not an integer >= 0",
                         idx);
            break;
        }
        if (t < 0) {
            s = otc_fail(OTC_ERR_FORMAT,
                         "node %d: type: missing or not one of input, bias, output, hidden", n.id);
            break;
        }
        if (otc_neat_genome_find_node(g, n.id)) {
            s = otc_fail(OTC_ERR_FORMAT, "node %d: id: given twice", n.id);
            break;
        }
        n.type = (otc_neat_node_type)t;
        if (n.type == OTC_NEAT_OUTPUT || n.type == OTC_NEAT_HIDDEN) {
            const cJSON *act = cJSON_GetObjectItemCaseSensitive(o, "activation");
            int a = cJSON_IsString(act) ? otc_neat_act_from_name(act->valuestring) : -1;
            const char *bad = a < 0                                    ? "activation"
                              : !get_float(o, "bias", &n.bias)         ? "bias"
                              : !get_float(o, "response", &n.response) ? "response"
                                                                       : NULL;
            if (bad) {
                s = otc_fail(OTC_ERR_FORMAT, "node %d: %s: missing or invalid%s", n.id, bad,
                             a < 0 ? "" : " (a finite number is expected)");
                break;
            }
            n.act = (otc_act)a;
            const cJSON *agg = cJSON_GetObjectItemCaseSensitive(o, "aggregation");
            n.agg = agg ? (cJSON_IsString(agg) ? otc_agg_from_name(agg->valuestring) : -1) : 0;
            if (n.agg < 0) {
                s = otc_fail(OTC_ERR_FORMAT,
                             "node %d: aggregation: not one of sum product min max maxabs median "
                             "mean",
                             n.id);
                break;
            }
            /* a CTRNN divides by it: positive and finite, or the genome is refused */
            if (cJSON_GetObjectItemCaseSensitive(o, "time_constant") &&
                (!get_float(o, "time_constant", &n.tau) || !(n.tau > 0))) {
                s = otc_fail(OTC_ERR_FORMAT, "node %d: time_constant: not a positive finite number",
                             n.id);
                break;
            }
        }
        if ((s = otc_neat_genome_add_node(g, &n)) != OTC_OK) break;
        idx++;
    }
    idx = 0;
    if (s == OTC_OK) cJSON_ArrayForEach(o, conns) {
            otc_neat_conn c = {0, 0, 0, 0, true};
            const cJSON *en = cJSON_GetObjectItemCaseSensitive(o, "enabled");
            if (!get_int(o, "innov", &c.innov) || c.innov < 0) {
                s = otc_fail(OTC_ERR_FORMAT,
                             "connection %d (in order): innov: missing or not an integer >= 0",
                             idx);
                break;
            }
            const char *bad = !get_int(o, "in", &c.in)             ? "in"
                              : !get_int(o, "out", &c.out)         ? "out"
                              : !get_float(o, "weight", &c.weight) ? "weight (a finite number)"
                              : !cJSON_IsBool(en)                  ? "enabled"
                                                                   : NULL;
            if (bad) {
                s = otc_fail(OTC_ERR_FORMAT, "connection %d: %s: missing or invalid", c.innov, bad);
                break;
            }
            if (otc_neat_genome_find_conn(g, c.innov)) {
                s = otc_fail(OTC_ERR_FORMAT, "connection %d: innov: given twice", c.innov);
                break;
            }
            c.enabled = cJSON_IsTrue(en);
            if ((s = otc_neat_genome_add_conn(g, &c)) != OTC_OK) break;
            idx++;
        }
    if (s == OTC_OK) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, "fitness");
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(j, "evaluated");
        int species = 0;
        g->fitness = cJSON_IsNumber(f) ? f->valuedouble : 0;
        if (f && (!cJSON_IsNumber(f) || !isfinite(f->valuedouble)))
            s = otc_fail(OTC_ERR_FORMAT, "fitness: not a finite number");
        g->evaluated = cJSON_IsTrue(ev);
        if (get_int(j, "species", &species)) g->species = species;
    }
    if (s == OTC_OK && (s = otc_neat_genome_validate(g, false)) != OTC_OK) {
        /* validate's messages start "genome: ": the caller names the genome */
        char msg[256];
        const char *m = otc_last_error();
        snprintf(msg, sizeof msg, "%s", strncmp(m, "genome: ", 8) ? m : m + 8);
        s = otc_fail(OTC_ERR_FORMAT, "%s", msg);
    }
    if (s != OTC_OK) {
        if (s == OTC_ERR_ARG) s = OTC_ERR_FORMAT; /* a bad gene in the file, not a bad call */
        otc_neat_genome_free(g);
        return s;
    }
    *out = g;
    return OTC_OK;
}

otc_status otc_neat_genome_from_json(const char *json, otc_neat_genome **out) {
    if (!json || !out) return otc_fail(OTC_ERR_ARG, "otc_neat_genome_from_json: NULL argument");
    cJSON *j = NULL;
    otc_status ps = otc_json_parse(json, strlen(json), OTC_JSON_VALUES_SMALL, &j);
    if (ps != OTC_OK) return otc_fail_context(ps, "genome");
    otc_status s = otc_neat_genome_from_cjson(j, out);
    cJSON_Delete(j);
    return s == OTC_OK ? s : otc_fail_context(s, "genome");
}
