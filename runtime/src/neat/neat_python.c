/* neat-python's network JSON (format 1.0) -> an otc graph with neat-python's semantics
 * (otc/neat_python.h). The file is read as hostile: every field is checked and named. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "otc/limits.h"
#include "otc/neat_python.h"

typedef enum { NP_FEEDFORWARD, NP_RECURRENT, NP_CTRNN } np_type;

/* neat-python's built-in activations (neat/activations.py) as otc's (otc/ops.h). */
static const struct {
    const char *name;
    otc_act act;
    float alpha;
} np_acts[] = {
    {"sigmoid", OTC_ACT_NP_SIGMOID, 0},
    {"tanh", OTC_ACT_NP_TANH, 0},
    {"sin", OTC_ACT_NP_SIN, 0},
    {"gauss", OTC_ACT_NP_GAUSS, 0},
    {"relu", OTC_ACT_RELU, 0},
    {"elu", OTC_ACT_ELU, 1.0f},
    {"lelu", OTC_ACT_LEAKY_RELU, 0.005f},
    {"selu", OTC_ACT_SELU, 0},
    {"softplus", OTC_ACT_NP_SOFTPLUS, 0},
    {"identity", OTC_ACT_IDENTITY, 0},
    {"clamped", OTC_ACT_CLAMPED, 0},
    {"inv", OTC_ACT_INV, 0},
    {"log", OTC_ACT_LOG, 0},
    {"exp", OTC_ACT_EXP, 0},
    {"abs", OTC_ACT_ABS, 0},
    {"hat", OTC_ACT_HAT, 0},
    {"square", OTC_ACT_SQUARE, 0},
    {"cube", OTC_ACT_CUBE, 0},
};

typedef struct {
    int id;
    bool output;
    otc_act act;
    float alpha;
    int agg;
    double bias, response, tau;
    int n_links, *from, *col; /* per link: node index (-1: an input column, -2: zero) */
    float *w;
    otc_id value, delay; /* the node's value now and its Delay (recurrent, ctrnn) */
} np_node;

/* A topology key and its position in the file's list. */
typedef struct {
    int key, at;
} np_key;

typedef struct {
    const char *label;
    np_type type;
    int n_in, n_out, *in_keys, *out_keys;
    np_key *in_by_key, *out_by_key; /* the keys sorted, for lookups */
    int n_nodes;
    np_node *nodes;
    int *sorted; /* node indices by id, for lookups */
    double advance, step;
    bool state_io, otc_names;
} np_net;

static otc_status bad(const np_net *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static otc_status bad(const np_net *n, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return otc_fail(OTC_ERR_FORMAT, "%s: %s", n->label, msg);
}

static const char *json_type(const cJSON *v) {
    if (!v) return "nothing";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "null";
}

/* A member `key` of obj of the given kind ("where" names obj in messages). */
static otc_status member(const np_net *n, const cJSON *obj, const char *where, const char *key,
                         cJSON_bool (*is)(const cJSON *), const char *want, const cJSON **out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return bad(n, "%s: field \"%s\" is missing", where, key);
    if (!is(v))
        return bad(n, "%s: field \"%s\": expected %s, got %s", where, key, want, json_type(v));
    *out = v;
    return OTC_OK;
}

static otc_status int_member(const np_net *n, const cJSON *obj, const char *where, const char *key,
                             int *out) {
    const cJSON *v = NULL;
    otc_status st = member(n, obj, where, key, cJSON_IsNumber, "an integer", &v);
    if (st) return st;
    double d = v->valuedouble;
    if (!(d == floor(d) && fabs(d) <= 1e9))
        return bad(n, "%s: field \"%s\": %g is not an integer in [-1e9, 1e9]", where, key, d);
    *out = (int)d;
    return OTC_OK;
}

/* A finite number that fits a float (weights, biases and responses become f32). */
static otc_status num_member(const np_net *n, const cJSON *obj, const char *where, const char *key,
                             double *out) {
    const cJSON *v = NULL;
    otc_status st = member(n, obj, where, key, cJSON_IsNumber, "a number", &v);
    if (st) return st;
    if (!isfinite(v->valuedouble) || fabs(v->valuedouble) > 3.4e38)
        return bad(n, "%s: field \"%s\": %g is not a finite float", where, key, v->valuedouble);
    *out = v->valuedouble;
    return OTC_OK;
}

static int by_key(const void *a, const void *b) {
    const np_key *x = a, *y = b;
    if (x->key != y->key) return (x->key > y->key) - (x->key < y->key);
    return (x->at > y->at) - (x->at < y->at);
}

/* Thousands of input keys are looked up once per connection: a sorted copy keeps the import
 * n log n (a linear scan made 65536 keys x 1M connections take minutes). */
static otc_status keys_member(const np_net *n, const cJSON *topo, const char *key, int **out,
                              np_key **by, int *count) {
    const cJSON *arr = NULL;
    otc_status st = member(n, topo, "topology", key, cJSON_IsArray, "an array", &arr);
    if (st) return st;
    int k = cJSON_GetArraySize(arr);
    if (k < 1 || k > OTC_MAX_INPUTS)
        return bad(n, "topology: field \"%s\" has %d keys (1 to %d)", key, k, OTC_MAX_INPUTS);
    *out = malloc(sizeof **out * (size_t)k);
    if (!*out) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", n->label);
    *count = k;
    int i = 0;
    const cJSON *v = NULL;
    cJSON_ArrayForEach(v, arr) {
        double d = cJSON_IsNumber(v) ? v->valuedouble : 0.5;
        if (d != floor(d) || fabs(d) > 1e9)
            return bad(n, "topology: %s[%d]: expected an integer key, got %s", key, i,
                       json_type(v));
        (*out)[i] = (int)d;
        i++;
    }
    *by = malloc(sizeof **by * (size_t)k);
    if (!*by) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", n->label);
    for (int j = 0; j < k; j++) (*by)[j] = (np_key){(*out)[j], j};
    qsort(*by, (size_t)k, sizeof **by, by_key);
    int dup = -1; /* the first position whose key came before */
    for (int j = 1; j < k; j++)
        if ((*by)[j].key == (*by)[j - 1].key && (dup < 0 || (*by)[j].at < dup)) dup = (*by)[j].at;
    if (dup >= 0) return bad(n, "topology: %s[%d]: key %d appears twice", key, dup, (*out)[dup]);
    return OTC_OK;
}

/* The position of key id in the file's list, or -1. */
static int key_index(const np_key *keys, int n, int id) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (keys[mid].key == id) return keys[mid].at;
        if (keys[mid].key < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* qsort has no context argument: the network being sorted, per thread. */
static _Thread_local const np_net *tl_net;
static int by_id(const void *a, const void *b) {
    int x = tl_net->nodes[*(const int *)a].id, y = tl_net->nodes[*(const int *)b].id;
    return (x > y) - (x < y);
}

static int node_index(const np_net *n, int id) {
    int lo = 0, hi = n->n_nodes - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, v = n->nodes[n->sorted[mid]].id;
        if (v == id) return n->sorted[mid];
        if (v < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* {"name": ..., "custom": false} of a node's activation or aggregation. */
static otc_status function_member(const np_net *n, const cJSON *jn, const char *where,
                                  const char *key, const char **name) {
    const cJSON *f = NULL, *nm = NULL, *custom;
    otc_status st = member(n, jn, where, key, cJSON_IsObject, "an object", &f);
    if (st) return st;
    char fw[160];
    snprintf(fw, sizeof fw, "%s: %s", where, key);
    if ((st = member(n, f, fw, "name", cJSON_IsString, "a string", &nm))) return st;
    custom = cJSON_GetObjectItemCaseSensitive(f, "custom");
    if (custom && !cJSON_IsBool(custom))
        return bad(n, "%s: field \"custom\": expected a boolean, got %s", fw, json_type(custom));
    if (cJSON_IsTrue(custom)) {
        char safe[64];
        snprintf(safe, sizeof safe, "%s", nm->valuestring);
        for (char *c = safe; *c; c++)
            if ((unsigned char)*c < 32 || (unsigned char)*c > 126) *c = '?';
        return otc_fail(OTC_ERR_UNSUPPORTED,
                        "%s: %s: custom %s '%s' is not supported: the file names a function "
                        "of the user's Python code, whose math it does not carry (otc knows "
                        "neat-python's built-in ones)",
                        n->label, where, key, safe);
    }
    *name = nm->valuestring;
    return OTC_OK;
}

/* An activation by otc's name (options->otc_act_names), its slope from an optional "alpha". */
static otc_status otc_named_act(const np_net *n, const cJSON *jn, const char *where,
                                const char *act, np_node *nd) {
    int a = -1;
    for (int k = 0; k < OTC_ACT_COUNT && a < 0; k++)
        if (!strcmp(otc_act_get((otc_act)k)->name, act)) a = k;
    if (a < 0) return bad(n, "%s: unknown otc activation '%.40s'", where, act);
    nd->act = (otc_act)a;
    nd->alpha = otc_act_get(nd->act)->default_a;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(jn, "activation");
    if (!cJSON_GetObjectItemCaseSensitive(f, "alpha")) return OTC_OK;
    double alpha = 0;
    otc_status st = num_member(n, f, where, "alpha", &alpha);
    nd->alpha = (float)alpha;
    return st;
}

static otc_status read_node(np_net *n, const cJSON *jn, int i, np_node *nd) {
    char where[96];
    snprintf(where, sizeof where, "nodes[%d]", i);
    otc_status st;
    if (!cJSON_IsObject(jn)) return bad(n, "%s: expected an object, got %s", where, json_type(jn));
    if ((st = int_member(n, jn, where, "id", &nd->id))) return st;
    snprintf(where, sizeof where, "nodes[%d] (node %d)", i, nd->id);
    const char *act = NULL, *agg = NULL;
    if ((st = function_member(n, jn, where, "activation", &act))) return st;
    if ((st = function_member(n, jn, where, "aggregation", &agg))) return st;
    if (n->otc_names && (st = otc_named_act(n, jn, where, act, nd))) return st;
    if (!n->otc_names) {
        int a = -1;
        for (size_t k = 0; k < sizeof np_acts / sizeof np_acts[0]; k++)
            if (!strcmp(np_acts[k].name, act)) a = (int)k;
        if (a < 0)
            return bad(n,
                       "%s: unknown activation '%.40s' (neat-python's built-in ones are sigmoid "
                       "tanh sin gauss relu elu lelu selu softplus identity clamped inv log exp "
                       "abs hat square cube)",
                       where, act);
        nd->act = np_acts[a].act;
        nd->alpha = np_acts[a].alpha;
    }
    if ((nd->agg = otc_agg_from_name(agg)) < 0)
        return bad(n,
                   "%s: unknown aggregation '%.40s' (neat-python's are sum product min max "
                   "maxabs median mean)",
                   where, agg);
    if ((st = num_member(n, jn, where, "bias", &nd->bias))) return st;
    if ((st = num_member(n, jn, where, "response", &nd->response))) return st;
    nd->tau = 1.0;
    if (n->type == NP_CTRNN) {
        if ((st = num_member(n, jn, where, "time_constant", &nd->tau))) return st;
        if (!(nd->tau > 0))
            return bad(n, "%s: field \"time_constant\": %g is not positive", where, nd->tau);
    }
    return OTC_OK;
}

static otc_status read_nodes(np_net *n, const cJSON *net) {
    const cJSON *arr = NULL;
    otc_status st = member(n, net, "network", "nodes", cJSON_IsArray, "an array", &arr);
    if (st) return st;
    int total = cJSON_GetArraySize(arr);
    if (total > OTC_MAX_NODES / 8)
        return bad(n, "field \"nodes\" has %d nodes, more than otc imports (%d)", total,
                   OTC_MAX_NODES / 8);
    n->nodes = calloc((size_t)(total > 0 ? total : 1), sizeof *n->nodes);
    n->sorted = malloc(sizeof *n->sorted * (size_t)(total > 0 ? total : 1));
    if (!n->nodes || !n->sorted) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", n->label);
    bool *seen_input = calloc((size_t)n->n_in, sizeof *seen_input);
    if (!seen_input) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", n->label);
    int i = 0;
    const cJSON *jn = NULL;
    cJSON_ArrayForEach(jn, arr) {
        char where[64];
        snprintf(where, sizeof where, "nodes[%d]", i);
        const cJSON *type = NULL;
        int id = 0;
        if (!cJSON_IsObject(jn)) {
            st = bad(n, "%s: expected an object, got %s", where, json_type(jn));
            break;
        }
        if ((st = member(n, jn, where, "type", cJSON_IsString, "a string", &type)) ||
            (st = int_member(n, jn, where, "id", &id)))
            break;
        const char *t = type->valuestring;
        int in = key_index(n->in_by_key, n->n_in, id), out = key_index(n->out_by_key, n->n_out, id);
        if (!strcmp(t, "input")) {
            /* Inputs carry no computation: their key's column of x. */
            if (in < 0) {
                st = bad(n, "%s (node %d): type \"input\", but %d is not in input_keys", where, id,
                         id);
                break;
            }
            if (seen_input[in]) {
                st = bad(n, "%s: input node %d appears twice", where, id);
                break;
            }
            seen_input[in] = true;
            i++;
            continue;
        }
        if (strcmp(t, "hidden") && strcmp(t, "output")) {
            st = bad(n, "%s (node %d): field \"type\": '%.20s' is not input, hidden or output",
                     where, id, t);
            break;
        }
        if (in >= 0) {
            st = bad(n, "%s (node %d): an input key cannot be a %s node", where, id, t);
            break;
        }
        if ((out >= 0) != !strcmp(t, "output")) {
            st = bad(n, "%s (node %d): type \"%s\", but %d is %sin output_keys", where, id, t, id,
                     out >= 0 ? "" : "not ");
            break;
        }
        np_node *nd = &n->nodes[n->n_nodes];
        if ((st = read_node(n, jn, i, nd))) break;
        nd->output = out >= 0;
        nd->value = nd->delay = -1;
        n->sorted[n->n_nodes] = n->n_nodes;
        n->n_nodes++;
        i++;
    }
    free(seen_input);
    if (st) return st;
    tl_net = n;
    qsort(n->sorted, (size_t)n->n_nodes, sizeof *n->sorted, by_id);
    for (int k = 1; k < n->n_nodes; k++)
        if (n->nodes[n->sorted[k]].id == n->nodes[n->sorted[k - 1]].id)
            return bad(n, "node %d appears twice in \"nodes\"", n->nodes[n->sorted[k]].id);
    return OTC_OK;
}

static otc_status read_connections(np_net *n, const cJSON *net) {
    const cJSON *arr = NULL;
    otc_status st = member(n, net, "network", "connections", cJSON_IsArray, "an array", &arr);
    if (st) return st;
    int total = cJSON_GetArraySize(arr);
    if (total > OTC_MAX_NODES)
        return bad(n, "field \"connections\" has %d connections, more than otc imports (%d)", total,
                   OTC_MAX_NODES);
    int *to = malloc(sizeof *to * (size_t)(total > 0 ? total : 1));
    int *from = malloc(sizeof *from * (size_t)(total > 0 ? total : 1));
    double *w = malloc(sizeof *w * (size_t)(total > 0 ? total : 1));
    if (!to || !from || !w) {
        st = otc_fail(OTC_ERR_NOMEM, "%s: out of memory", n->label);
        goto done;
    }
    int i = 0;
    const cJSON *jc = NULL;
    cJSON_ArrayForEach(jc, arr) {
        char where[64];
        snprintf(where, sizeof where, "connections[%d]", i);
        const cJSON *en = NULL;
        int a = 0, b = 0;
        if (!cJSON_IsObject(jc)) {
            st = bad(n, "%s: expected an object, got %s", where, json_type(jc));
            goto done;
        }
        if ((st = int_member(n, jc, where, "from", &a)) ||
            (st = int_member(n, jc, where, "to", &b)) ||
            (st = num_member(n, jc, where, "weight", &w[i])) ||
            (st = member(n, jc, where, "enabled", cJSON_IsBool, "a boolean", &en)))
            goto done;
        to[i] = -1;
        if (!cJSON_IsTrue(en)) { /* neat-python builds networks from enabled ones only */
            i++;
            continue;
        }
        int ti = node_index(n, b);
        if (ti < 0) {
            st = bad(n, "%s: to node %d, which is not a hidden or output node of \"nodes\"", where,
                     b);
            goto done;
        }
        int col = key_index(n->in_by_key, n->n_in, a), fi = node_index(n, a);
        if (col >= 0)
            from[i] = -1 - col; /* an input column */
        else if (fi >= 0)
            from[i] = fi;
        else
            from[i] = INT32_MIN; /* a node neat-python never computes: it stays 0 */
        if (n->nodes[ti].n_links >= OTC_MAX_INPUTS - 2) {
            st = bad(n, "node %d has more than %d incoming connections", b, OTC_MAX_INPUTS - 2);
            goto done;
        }
        n->nodes[ti].n_links++;
        to[i] = ti;
        i++;
    }
    for (int k = 0; k < n->n_nodes; k++) {
        np_node *nd = &n->nodes[k];
        int m = nd->n_links > 0 ? nd->n_links : 1;
        nd->from = malloc(sizeof *nd->from * (size_t)m);
        nd->col = malloc(sizeof *nd->col * (size_t)m);
        nd->w = malloc(sizeof *nd->w * (size_t)m);
        if (!nd->from || !nd->col || !nd->w) {
            st = otc_fail(OTC_ERR_NOMEM, "%s: out of memory", n->label);
            goto done;
        }
        nd->n_links = 0;
    }
    /* Links in the file's order: neat-python aggregates them in that order. */
    for (int k = 0; k < i; k++) {
        if (to[k] < 0) continue;
        np_node *nd = &n->nodes[to[k]];
        int l = nd->n_links++;
        nd->w[l] = (float)w[k];
        if (from[k] == INT32_MIN) {
            nd->from[l] = -2;
            nd->col[l] = 0;
        } else if (from[k] < 0) {
            nd->from[l] = -1;
            nd->col[l] = -1 - from[k];
        } else {
            nd->from[l] = from[k];
            nd->col[l] = 0;
        }
    }
done:
    free(to);
    free(from);
    free(w);
    return st;
}

/* Feed-forward evaluation order (Kahn's algorithm over the node -> node links, in linear
 * time); a cycle is an error naming a node on it. */
static otc_status ff_order(const np_net *n, int *order) {
    int m = n->n_nodes, links = 0;
    for (int k = 0; k < m; k++) links += n->nodes[k].n_links;
    int *indeg = calloc((size_t)m + 1, sizeof *indeg),
        *start = calloc((size_t)m + 2, sizeof *start);
    int *users = malloc(sizeof *users * (size_t)(links + 1));
    otc_status st = OTC_OK;
    if (!indeg || !start || !users) {
        st = otc_fail(OTC_ERR_NOMEM, "%s: out of memory", n->label);
        goto done;
    }
    /* users[start[f] .. start[f + 1]) are the nodes that read node f */
    for (int k = 0; k < m; k++)
        for (int l = 0; l < n->nodes[k].n_links; l++)
            if (n->nodes[k].from[l] >= 0) {
                start[n->nodes[k].from[l] + 1]++;
                indeg[k]++;
            }
    for (int f = 0; f < m; f++) start[f + 1] += start[f];
    int *fill = calloc((size_t)m + 1, sizeof *fill);
    if (!fill) {
        st = otc_fail(OTC_ERR_NOMEM, "%s: out of memory", n->label);
        goto done;
    }
    for (int k = 0; k < m; k++)
        for (int l = 0; l < n->nodes[k].n_links; l++) {
            int f = n->nodes[k].from[l];
            if (f >= 0) users[start[f] + fill[f]++] = k;
        }
    free(fill);
    int head = 0, tail = 0;
    for (int k = 0; k < m; k++)
        if (!indeg[k]) order[tail++] = k;
    while (head < tail) {
        int v = order[head++];
        for (int u = start[v]; u < start[v + 1]; u++)
            if (--indeg[users[u]] == 0) order[tail++] = users[u];
    }
    if (tail < m) {
        int on = -1;
        for (int k = 0; k < m && on < 0; k++)
            if (indeg[k]) on = n->nodes[k].id;
        st = bad(n,
                 "network_type is \"feedforward\", but the connections form a cycle through "
                 "node %d (export it as recurrent)",
                 on);
    }
done:
    free(indeg);
    free(start);
    free(users);
    return st;
}

/* A Neuron of neat-python's node nd over the given sources. */
static otc_id add_neuron(otc_graph *g, const char *name, const np_node *nd, const otc_id *srcs) {
    int k = nd->n_links;
    char pname[96];
    snprintf(pname, sizeof pname, "%s.w", name);
    otc_id w = otc_param(g, pname, otc_shape_1d(k > 0 ? k : 1), NULL);
    snprintf(pname, sizeof pname, "%s.b", name);
    float bias = (float)nd->bias;
    otc_id b = otc_param(g, pname, otc_shape_1d(1), &bias);
    if (w < 0 || b < 0) return -1;
    otc_tensor *wt = otc_graph_param(g, w);
    for (int l = 0; l < k; l++) wt->data[l] = nd->w[l];
    otc_id *in = malloc(sizeof *in * (size_t)(k + 2));
    if (!in) {
        otc_fail(OTC_ERR_NOMEM, "out of memory");
        return -1;
    }
    in[0] = w;
    in[1] = b;
    for (int l = 0; l < k; l++) in[2 + l] = srcs[l];
    otc_node_spec s = {.op = OTC_OP_NEURON,
                       .name = name,
                       .n_inputs = k + 2,
                       .inputs = in,
                       .cols = nd->col,
                       .scale = (float)nd->response,
                       .alpha = nd->alpha,
                       .act = (int)nd->act,
                       .agg = nd->agg};
    otc_id id = otc_graph_add(g, &s);
    free(in);
    return id;
}

/* A constant 0 per sample: a source-less identity neuron with a frozen zero bias. */
static otc_id zero_node(otc_graph *g, const char *name) {
    np_node z = {.act = OTC_ACT_IDENTITY, .agg = OTC_AGG_SUM, .response = 1.0};
    otc_id id = add_neuron(g, name, &z, NULL);
    if (id < 0) return -1;
    const otc_node *nd = otc_graph_node(g, id);
    otc_graph_set_trainable(g, nd->inputs[0], false);
    otc_graph_set_trainable(g, nd->inputs[1], false);
    return id;
}

/* One evaluation of every node: node k reads node f's value as column src_col[f] of
 * src[f] (the feed-forward build reads the neurons it built, z, in order). */
static otc_status neurons(const np_net *n, otc_graph *g, otc_id x, otc_id zero, const otc_id *src,
                          const int *src_col, const int *order, otc_id *z, const char *fmt,
                          int step) {
    for (int o = 0; o < n->n_nodes; o++) {
        int k = order ? order[o] : o;
        np_node *nd = &n->nodes[k];
        otc_id *srcs = malloc(sizeof *srcs * (size_t)(nd->n_links > 0 ? nd->n_links : 1));
        if (!srcs) return otc_fail(OTC_ERR_NOMEM, "out of memory");
        for (int l = 0; l < nd->n_links; l++) {
            int f = nd->from[l];
            srcs[l] = f == -1 ? x : f == -2 ? zero : order ? z[f] : src[f];
            if (f >= 0) nd->col[l] = order ? 0 : src_col[f];
        }
        char name[64];
        snprintf(name, sizeof name, fmt, nd->id, step);
        z[k] = add_neuron(g, name, nd, srcs);
        free(srcs);
        if (z[k] < 0) return otc_fail_context(OTC_ERR_SHAPE, "%s: node %d", n->label, nd->id);
    }
    return OTC_OK;
}

/* The state before a forward: Delay nodes, or columns of the "state" input (state_io). */
static otc_status state_in(const np_net *n, otc_graph *g, otc_id *v, int *col) {
    otc_id state = -1;
    if (n->state_io && (state = otc_input(g, "state", otc_shape_2d(OTC_BATCH, n->n_nodes))) < 0)
        return OTC_ERR_SHAPE;
    for (int k = 0; k < n->n_nodes; k++) {
        char name[48];
        snprintf(name, sizeof name, "d%d", n->nodes[k].id);
        v[k] = n->state_io ? state : otc_delay(g, name, otc_shape_2d(OTC_BATCH, 1));
        col[k] = n->state_io ? k : 0;
        n->nodes[k].delay = n->state_io ? -1 : v[k];
        if (v[k] < 0) return OTC_ERR_SHAPE;
    }
    return OTC_OK;
}

/* The state after: into the Delays, or one output "state_next" after the network's own. */
static otc_status state_out(const np_net *n, otc_graph *g) {
    otc_status st;
    if (!n->state_io) {
        for (int k = 0; k < n->n_nodes; k++)
            if ((st = otc_graph_set_input(g, n->nodes[k].delay, 0, n->nodes[k].value))) return st;
        return OTC_OK;
    }
    otc_id *vals = malloc(sizeof *vals * (size_t)n->n_nodes);
    if (!vals) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n->n_nodes; k++) vals[k] = n->nodes[k].value;
    otc_id next = otc_concat(g, n->n_nodes, vals, 1);
    free(vals);
    if (next < 0 || (st = otc_graph_set_name(g, next, "state_next"))) return OTC_ERR_SHAPE;
    return otc_graph_mark_output(g, next);
}

int otc_neat_python_ctrnn_steps(double advance_time, double time_step, double *last_dt) {
    double steps_f = ceil(advance_time / time_step - 1e-9);
    int steps = steps_f < 1 ? 1 : (int)steps_f;
    if (last_dt) *last_dt = advance_time - time_step * (steps - 1);
    return steps;
}

/* CTRNN.advance: whole steps of time_step, the last one what remains; each step
 * v <- decay v + (1 - decay) z with decay = exp(-dt / tau). */
static otc_status ctrnn_steps(np_net *n, otc_graph *g, otc_id x, otc_id zero, otc_id *v, int *col,
                              otc_id *z) {
    double last_dt;
    int steps = otc_neat_python_ctrnn_steps(n->advance, n->step, &last_dt);
    otc_status st;
    for (int s = 0; s < steps; s++) {
        double dt = s + 1 < steps ? n->step : last_dt;
        if ((st = neurons(n, g, x, zero, v, col, NULL, z, "n%d.%d", s))) return st;
        for (int k = 0; k < n->n_nodes; k++) {
            double decay = exp(-dt / n->nodes[k].tau);
            char name[64];
            snprintf(name, sizeof name, "v%d.%d", n->nodes[k].id, s);
            otc_id prev = s == 0 && n->state_io ? otc_slice(g, v[k], 1, col[k], 1) : v[k];
            otc_id kept = otc_scale(g, prev, (float)decay);
            otc_id fresh = otc_scale(g, z[k], (float)(1.0 - decay));
            otc_id sum = otc_add(g, kept, fresh);
            if (sum < 0 || otc_graph_set_name(g, sum, name)) return OTC_ERR_SHAPE;
            n->nodes[k].value = sum;
        }
        for (int k = 0; k < n->n_nodes; k++) {
            v[k] = n->nodes[k].value;
            col[k] = 0;
        }
    }
    return OTC_OK;
}

static otc_status build(np_net *n, otc_graph *g) {
    otc_status st = OTC_OK;
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, n->n_in));
    otc_id zero = -1;
    bool need_zero = false;
    for (int k = 0; k < n->n_nodes; k++)
        for (int l = 0; l < n->nodes[k].n_links; l++) need_zero |= n->nodes[k].from[l] == -2;
    if (x < 0 || (need_zero && (zero = zero_node(g, "zero")) < 0)) return OTC_ERR_SHAPE;
    size_t m = (size_t)(n->n_nodes > 0 ? n->n_nodes : 1);
    int *order = malloc(sizeof *order * m), *col = malloc(sizeof *col * m);
    otc_id *z = malloc(sizeof *z * m), *v = malloc(sizeof *v * m);
    if (!order || !col || !z || !v) {
        st = otc_fail(OTC_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (n->type == NP_FEEDFORWARD) {
        if ((st = ff_order(n, order)) ||
            (st = neurons(n, g, x, zero, NULL, NULL, order, z, "n%d", 0)))
            goto done;
        for (int k = 0; k < n->n_nodes; k++) n->nodes[k].value = z[k];
    } else if (n->n_nodes > 0) {
        if ((st = state_in(n, g, v, col))) goto done;
        if (n->type == NP_RECURRENT) {
            if ((st = neurons(n, g, x, zero, v, col, NULL, z, "n%d", 0))) goto done;
            for (int k = 0; k < n->n_nodes; k++) n->nodes[k].value = z[k];
        } else if ((st = ctrnn_steps(n, g, x, zero, v, col, z))) {
            goto done;
        }
    }
    for (int o = 0; o < n->n_out; o++) {
        int k = node_index(n, n->out_keys[o]);
        char name[32];
        snprintf(name, sizeof name, "out%d", o);
        otc_id id = k >= 0 ? n->nodes[k].value : zero_node(g, name);
        if (id < 0 || (k >= 0 && otc_graph_set_name(g, id, name)) || otc_graph_mark_output(g, id)) {
            st = id < 0 ? OTC_ERR_SHAPE : otc_fail_context(OTC_ERR_STATE, "%s", n->label);
            goto done;
        }
    }
    if (n->type != NP_FEEDFORWARD && n->n_nodes > 0) st = state_out(n, g);
done:
    free(order);
    free(col);
    free(z);
    free(v);
    return st;
}

static otc_status write_meta(const np_net *n, const char *version, otc_graph *g) {
    static const char *types[] = {"feedforward", "recurrent", "ctrnn"};
    cJSON *m = cJSON_CreateObject(), *in = cJSON_CreateIntArray(n->in_keys, n->n_in),
          *out = cJSON_CreateIntArray(n->out_keys, n->n_out);
    bool ok = m && in && out && cJSON_AddStringToObject(m, "network_type", types[n->type]) &&
              cJSON_AddStringToObject(m, "format_version", version);
    if (ok) {
        cJSON_AddItemToObject(m, "input_keys", in);
        cJSON_AddItemToObject(m, "output_keys", out);
        in = out = NULL;
    }
    if (ok && n->type == NP_CTRNN)
        ok = cJSON_AddNumberToObject(m, "advance_time", n->advance) &&
             cJSON_AddNumberToObject(m, "time_step", n->step);
    char *text = ok ? cJSON_PrintUnformatted(m) : NULL;
    cJSON_Delete(m);
    cJSON_Delete(in);
    cJSON_Delete(out);
    if (!text) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    otc_status st = otc_graph_meta_set(g, "neat_python", text);
    cJSON_free(text);
    return st;
}

/* advance_time / time_step: the options, else the file's top level. */
static otc_status ctrnn_times(np_net *n, const cJSON *root, const otc_neat_python_options *o) {
    const char *keys[2] = {"advance_time", "time_step"};
    double *dst[2] = {&n->advance, &n->step},
           given[2] = {o ? o->advance_time : 0, o ? o->time_step : 0};
    for (int i = 0; i < 2; i++) {
        *dst[i] = given[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, keys[i]);
        if (*dst[i] == 0 && v) {
            otc_status st = num_member(n, root, "the file", keys[i], dst[i]);
            if (st) return st;
        }
        if (*dst[i] == 0)
            return otc_fail(OTC_ERR_ARG,
                            "%s: a ctrnn network advances by a time: give --advance-time and "
                            "--time-step (CTRNN.advance's advance_time and time_step)",
                            n->label);
        if (!(*dst[i] > 0) || !isfinite(*dst[i]))
            return bad(n, "%s %g is not a positive time", keys[i], *dst[i]);
    }
    if (n->advance / n->step > OTC_MAX_CTRNN_STEPS)
        return bad(n,
                   "advance_time %g / time_step %g is more than %d integration steps per row "
                   "(each one a copy of the network)",
                   n->advance, n->step, OTC_MAX_CTRNN_STEPS);
    return OTC_OK;
}

static otc_status import(np_net *n, const cJSON *root, const otc_neat_python_options *o,
                         otc_graph **out) {
    if (!cJSON_IsObject(root))
        return bad(n, "expected a JSON object (neat-python's network export), got %s",
                   json_type(root));
    const cJSON *net = cJSON_GetObjectItemCaseSensitive(root, "network");
    if (!cJSON_IsObject(net)) net = root;
    const cJSON *ver = NULL, *type = NULL, *topo = NULL;
    otc_status st;
    if ((st = member(n, net, "network", "format_version", cJSON_IsString, "a string", &ver)))
        return st;
    if (strncmp(ver->valuestring, "1.", 2))
        return bad(n, "format_version '%.20s': otc reads neat-python's format 1.x",
                   ver->valuestring);
    if ((st = member(n, net, "network", "network_type", cJSON_IsString, "a string", &type)))
        return st;
    const char *t = type->valuestring;
    if (!strcmp(t, "feedforward"))
        n->type = NP_FEEDFORWARD;
    else if (!strcmp(t, "recurrent"))
        n->type = NP_RECURRENT;
    else if (!strcmp(t, "ctrnn"))
        n->type = NP_CTRNN;
    else if (!strcmp(t, "iznn"))
        return otc_fail(OTC_ERR_UNSUPPORTED,
                        "%s: network_type \"iznn\" (Izhikevich spiking neurons) is not "
                        "supported: otc imports feedforward, recurrent and ctrnn networks",
                        n->label);
    else
        return bad(n, "field \"network_type\": '%.20s' is not feedforward, recurrent or ctrnn", t);
    if ((st = member(n, net, "network", "topology", cJSON_IsObject, "an object", &topo)) ||
        (st = keys_member(n, topo, "input_keys", &n->in_keys, &n->in_by_key, &n->n_in)) ||
        (st = keys_member(n, topo, "output_keys", &n->out_keys, &n->out_by_key, &n->n_out)))
        return st;
    const char *counts[2] = {"num_inputs", "num_outputs"};
    for (int i = 0; i < 2; i++) {
        int c = 0, want = i ? n->n_out : n->n_in;
        if (!cJSON_GetObjectItemCaseSensitive(topo, counts[i])) continue;
        if ((st = int_member(n, topo, "topology", counts[i], &c))) return st;
        if (c != want)
            return bad(n, "topology: %s is %d, but there are %d %s keys", counts[i], c, want,
                       i ? "output" : "input");
    }
    for (int i = 0; i < n->n_out; i++)
        if (key_index(n->in_by_key, n->n_in, n->out_keys[i]) >= 0)
            return bad(n, "topology: key %d is both an input and an output key", n->out_keys[i]);
    if (n->type == NP_CTRNN && (st = ctrnn_times(n, root, o))) return st;
    if ((st = read_nodes(n, net)) || (st = read_connections(n, net))) return st;
    /* The graph's size before it is built: a CTRNN is one copy of the network per step, and
     * the model file holds at most OTC_MAX_NODES nodes. */
    double links = 0,
           steps = n->type == NP_CTRNN ? otc_neat_python_ctrnn_steps(n->advance, n->step, NULL) : 1;
    for (int k = 0; k < n->n_nodes; k++) links += n->nodes[k].n_links;
    double nodes = 8 + n->n_out + steps * 6.0 * n->n_nodes;
    if (nodes > OTC_MAX_NODES || steps * (links + n->n_nodes) > (double)OTC_MAX_NODES * 16)
        return bad(n,
                   "%d nodes and %.0f connections over %.0f integration step(s) make a graph "
                   "larger than a model holds (%d nodes)",
                   n->n_nodes, links, steps, OTC_MAX_NODES);
    otc_graph *g = otc_graph_new();
    if (!g) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    if ((st = build(n, g)) || (st = write_meta(n, ver->valuestring, g))) {
        otc_graph_free(g);
        return st;
    }
    *out = g;
    return OTC_OK;
}

otc_status otc_neat_python_import(const char *text, size_t len, const char *label,
                                  const otc_neat_python_options *options, otc_graph **out) {
    if (!text || !out) return otc_fail(OTC_ERR_ARG, "otc_neat_python_import: NULL argument");
    *out = NULL;
    np_net n = {.label = label ? label : "network",
                .state_io = options && options->state_io,
                .otc_names = options && options->otc_act_names};
    /* A UTF-8 byte order mark is not JSON, but editors write one. */
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) {
        text += 3;
        len -= 3;
    }
    cJSON *root = NULL;
    otc_status st = otc_json_parse(text, len, OTC_JSON_VALUES_SMALL, &root);
    if (st != OTC_OK) {
        st = otc_fail_context(st, "%s", n.label);
    } else {
        st = import(&n, root, options, out);
    }
    cJSON_Delete(root);
    for (int k = 0; k < n.n_nodes; k++) {
        free(n.nodes[k].from);
        free(n.nodes[k].col);
        free(n.nodes[k].w);
    }
    free(n.nodes);
    free(n.sorted);
    free(n.in_keys);
    free(n.in_by_key);
    free(n.out_by_key);
    free(n.out_keys);
    return st;
}
