/* The graph: an arena of nodes with ids, names, outputs and metadata; every node is built
 * through otc_graph_add, which checks arity and inputs and asks the op's shape rule. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "name_index.h"
#include "otc/limits.h"
#include "graph_params.h"
#include "op_table.h"

struct otc_graph {
    otc_node *nodes;
    int n, cap;
    otc_id *outputs;
    int n_outputs, cap_outputs;
    char **meta_keys, **meta_values;
    int n_meta, cap_meta;
    otc_name_index names, meta;  /* node names -> ids, metadata keys -> entries */
    otc_executor *params_holder; /* graph_params.h; not cloned */
};

void otc_graph_set_params_holder(otc_graph *g, otc_executor *ex) {
    if (g) g->params_holder = ex;
}

otc_executor *otc_graph_params_holder(const otc_graph *g) {
    return g ? g->params_holder : NULL;
}

otc_status otc_graph_sync_from_holder(const otc_graph *g) {
    return g && g->params_holder ? otc_exec_sync_params(g->params_holder) : OTC_OK;
}

static const char *node_name(const void *g, int i) {
    return ((const otc_graph *)g)->nodes[i].name;
}
static const char *meta_key(const void *g, int i) {
    return ((const otc_graph *)g)->meta_keys[i];
}

static char *dup_str(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

otc_graph *otc_graph_new(void) {
    otc_graph *g = calloc(1, sizeof *g);
    if (!g) otc_fail(OTC_ERR_NOMEM, "out of memory for a graph");
    return g;
}

static void free_node(otc_node *n) {
    free(n->name);
    free(n->inputs);
    free(n->cols);
    otc_tensor_free(n->value);
}

void otc_graph_free(otc_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n; i++) free_node(&g->nodes[i]);
    free(g->nodes);
    free(g->outputs);
    for (int i = 0; i < g->n_meta; i++) {
        free(g->meta_keys[i]);
        free(g->meta_values[i]);
    }
    free(g->meta_keys);
    free(g->meta_values);
    otc_name_index_free(&g->names);
    otc_name_index_free(&g->meta);
    free(g);
}

int otc_graph_size(const otc_graph *g) {
    return g ? g->n : 0;
}

bool otc_graph_is_recurrent(const otc_graph *g) {
    for (int i = 0; g && i < g->n; i++)
        if (g->nodes[i].op == OTC_OP_DELAY) return true;
    return false;
}

static bool valid_id(const otc_graph *g, otc_id id) {
    return g && id >= 0 && id < g->n;
}

const otc_node *otc_graph_node(const otc_graph *g, otc_id id) {
    return valid_id(g, id) ? &g->nodes[id] : NULL;
}

float otc_node_param(const otc_node *nd) {
    return nd->op == OTC_OP_SCALE ? nd->scale : nd->alpha;
}

const char *otc_graph_node_label(const otc_graph *g, otc_id id, char *buf, size_t len) {
    if (valid_id(g, id) && g->nodes[id].name)
        snprintf(buf, len, "'%s'", g->nodes[id].name);
    else
        snprintf(buf, len, "#%d", (int)id);
    return buf;
}

/* A name is at most OTC_MAX_NAME_LEN bytes (it is quoted in messages, DOT and C
 * comments, so an unbounded one would make every consumer unbounded too). */
static otc_status check_name(const char *name) {
    if (!name) return OTC_OK;
    size_t len = strnlen(name, OTC_MAX_NAME_LEN + 1);
    if (len > OTC_MAX_NAME_LEN)
        return otc_fail(OTC_ERR_ARG,
                        "node name \"%.40s...\" is longer than %d bytes "
                        "(OTC_MAX_NAME_LEN)",
                        name, OTC_MAX_NAME_LEN);
    return OTC_OK;
}

otc_id otc_graph_find(const otc_graph *g, const char *name) {
    if (!g || !name) return -1;
    return otc_name_index_find(&g->names, name, node_name, g);
}

otc_status otc_graph_set_name(otc_graph *g, otc_id id, const char *name) {
    if (!valid_id(g, id)) return otc_fail(OTC_ERR_ARG, "no node #%d", (int)id);
    if (name && !*name) return otc_fail(OTC_ERR_ARG, "node #%d: empty name", (int)id);
    if (check_name(name) != OTC_OK) return otc_fail_context(OTC_ERR_ARG, "node #%d", (int)id);
    otc_id other = otc_graph_find(g, name);
    if (other >= 0 && other != id)
        return otc_fail(OTC_ERR_ARG, "name '%s' is already used by node #%d", name, (int)other);
    if (other == id) return OTC_OK;
    char *copy = dup_str(name);
    if (name && !copy) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    char *old = g->nodes[id].name;
    if (old) otc_name_index_remove(&g->names, old, id);
    g->nodes[id].name = copy;
    if (copy && otc_name_index_add(&g->names, id, node_name, g) != OTC_OK) {
        g->nodes[id].name = old;
        free(copy);
        if (old) otc_name_index_add(&g->names, id, node_name, g); /* its slot is still free */
        return OTC_ERR_NOMEM;
    }
    free(old);
    return OTC_OK;
}

otc_tensor *otc_graph_param(otc_graph *g, otc_id id) {
    if (!valid_id(g, id) || g->nodes[id].op != OTC_OP_PARAMETER) {
        otc_fail(OTC_ERR_ARG, "node #%d is not a parameter", (int)id);
        return NULL;
    }
    return g->nodes[id].value;
}

otc_status otc_graph_set_trainable(otc_graph *g, otc_id id, bool trainable) {
    if (!otc_graph_param(g, id)) return OTC_ERR_ARG;
    g->nodes[id].trainable = trainable;
    return OTC_OK;
}

otc_status otc_graph_set_agg(otc_graph *g, otc_id neuron, int agg) {
    if (!valid_id(g, neuron) || g->nodes[neuron].op != OTC_OP_NEURON)
        return otc_fail(OTC_ERR_ARG, "set_agg: node #%d is not a neuron", (int)neuron);
    if (!otc_agg_name(agg)) return otc_fail(OTC_ERR_ARG, "set_agg: unknown aggregation %d", agg);
    g->nodes[neuron].agg = agg;
    return OTC_OK;
}

otc_status otc_graph_set_alpha(otc_graph *g, otc_id neuron, float alpha) {
    if (!valid_id(g, neuron) || g->nodes[neuron].op != OTC_OP_NEURON)
        return otc_fail(OTC_ERR_ARG, "set_alpha: node #%d is not a neuron", (int)neuron);
    if (!isfinite(alpha)) return otc_fail(OTC_ERR_ARG, "set_alpha: %g is not finite", alpha);
    g->nodes[neuron].alpha = alpha;
    return OTC_OK;
}

otc_status otc_graph_mark_output(otc_graph *g, otc_id id) {
    if (!valid_id(g, id)) return otc_fail(OTC_ERR_ARG, "output: no node #%d", (int)id);
    if (g->n_outputs == g->cap_outputs) {
        int cap = g->cap_outputs ? 2 * g->cap_outputs : 4;
        otc_id *o = realloc(g->outputs, (size_t)cap * sizeof *o);
        if (!o) return otc_fail(OTC_ERR_NOMEM, "out of memory");
        g->outputs = o;
        g->cap_outputs = cap;
    }
    g->outputs[g->n_outputs++] = id;
    return OTC_OK;
}

int otc_graph_output_count(const otc_graph *g) {
    return g ? g->n_outputs : 0;
}
otc_id otc_graph_output(const otc_graph *g, int i) {
    return g && i >= 0 && i < g->n_outputs ? g->outputs[i] : -1;
}

int otc_graph_input_count(const otc_graph *g) {
    int k = 0;
    for (int i = 0; g && i < g->n; i++) k += g->nodes[i].op == OTC_OP_INPUT;
    return k;
}

otc_id otc_graph_input(const otc_graph *g, int which) {
    for (int i = 0, k = 0; g && i < g->n; i++)
        if (g->nodes[i].op == OTC_OP_INPUT && k++ == which) return i;
    return -1;
}

otc_status otc_graph_truncate(otc_graph *g, int n) {
    if (!g || n < 0 || n > g->n) return otc_fail(OTC_ERR_ARG, "truncate: bad size %d", n);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= n)
                return otc_fail(OTC_ERR_ARG, "truncate: node #%d reads node #%d, which would go", i,
                                (int)g->nodes[i].inputs[k]);
    for (int i = n; i < g->n; i++) {
        if (g->nodes[i].name) otc_name_index_remove(&g->names, g->nodes[i].name, i);
        free_node(&g->nodes[i]);
    }
    g->n = n;
    int k = 0;
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] < n) g->outputs[k++] = g->outputs[i];
    g->n_outputs = k;
    return OTC_OK;
}

otc_status otc_graph_meta_set(otc_graph *g, const char *key, const char *json) {
    if (!g || !key || !json) return otc_fail(OTC_ERR_ARG, "meta: key and value are required");
    char *v = dup_str(json);
    if (!v) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    int i = otc_name_index_find(&g->meta, key, meta_key, g);
    if (i >= 0) {
        free(g->meta_values[i]);
        g->meta_values[i] = v;
        return OTC_OK;
    }
    if (g->n_meta >= OTC_MAX_META_KEYS) {
        free(v);
        return otc_fail(OTC_ERR_ARG, "meta \"%s\": more than %d keys (OTC_MAX_META_KEYS)", key,
                        OTC_MAX_META_KEYS);
    }
    if (g->n_meta == g->cap_meta) { /* doubling: n keys cost O(n) copies, not O(n^2) */
        int cap = g->cap_meta ? 2 * g->cap_meta : 4;
        char **keys = realloc(g->meta_keys, (size_t)cap * sizeof *keys);
        if (keys) g->meta_keys = keys;
        char **vals = keys ? realloc(g->meta_values, (size_t)cap * sizeof *vals) : NULL;
        if (vals) g->meta_values = vals;
        if (!keys || !vals) {
            free(v);
            return otc_fail(OTC_ERR_NOMEM, "out of memory");
        }
        g->cap_meta = cap;
    }
    char *k = dup_str(key);
    if (!k) {
        free(v);
        return otc_fail(OTC_ERR_NOMEM, "out of memory");
    }
    g->meta_keys[g->n_meta] = k;
    g->meta_values[g->n_meta] = v;
    if (otc_name_index_add(&g->meta, g->n_meta, meta_key, g) != OTC_OK) {
        free(k);
        free(v);
        return OTC_ERR_NOMEM;
    }
    g->n_meta++;
    return OTC_OK;
}

const char *otc_graph_meta_get(const otc_graph *g, const char *key) {
    int i = g && key ? otc_name_index_find(&g->meta, key, meta_key, g) : -1;
    return i >= 0 ? g->meta_values[i] : NULL;
}

int otc_graph_meta_count(const otc_graph *g) {
    return g ? g->n_meta : 0;
}
const char *otc_graph_meta_key(const otc_graph *g, int i) {
    return g && i >= 0 && i < g->n_meta ? g->meta_keys[i] : NULL;
}

/* ---- building ---- */

/* The spec a node was built from (for rechecking its shape or rebuilding it elsewhere). */
static otc_node_spec spec_of(const otc_node *n) {
    return (otc_node_spec){n->op,    n->name, n->n_inputs, n->inputs, n->cols, n->shape, n->alpha,
                           n->scale, n->act,  n->axis,     n->start,  n->len,  n->agg,   n->win};
}

/* A delay holds the previous value of its source, so the two shapes must be the same. */
static otc_status check_delay_source(const otc_graph *g, otc_id delay, otc_shape shape,
                                     otc_id src) {
    char a[64], b[64];
    if (otc_shape_equal(g->nodes[src].shape, shape)) return OTC_OK;
    return otc_fail(OTC_ERR_SHAPE, "delay #%d %s: source #%d is %s", (int)delay,
                    otc_shape_str(shape, a, 64), (int)src,
                    otc_shape_str(g->nodes[src].shape, b, 64));
}

static otc_status grow(otc_graph *g) {
    if (g->n < g->cap) return OTC_OK;
    if (g->n >= OTC_MAX_GRAPH_NODES)
        return otc_fail(OTC_ERR_ARG, "graph: more than %d nodes (OTC_MAX_GRAPH_NODES)",
                        OTC_MAX_GRAPH_NODES);
    int cap = g->cap ? 2 * g->cap : 16;
    otc_node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
    if (!nodes) return otc_fail(OTC_ERR_NOMEM, "out of memory for %d nodes", cap);
    g->nodes = nodes;
    g->cap = cap;
    return OTC_OK;
}

otc_id otc_graph_add(otc_graph *g, const otc_node_spec *spec) {
    if (!g || !spec) {
        otc_fail(OTC_ERR_ARG, "graph_add: NULL argument");
        return -1;
    }
    const otc_op_def *def = otc_op_def_get(spec->op);
    if (!def) {
        otc_fail(OTC_ERR_ARG, "unknown op %d", (int)spec->op);
        return -1;
    }
    const char *opname = def->info.name;
    int lo = def->info.min_inputs, hi = def->info.max_inputs;
    if (spec->n_inputs < lo || (hi >= 0 && spec->n_inputs > hi) ||
        spec->n_inputs > OTC_MAX_INPUTS) {
        otc_fail(OTC_ERR_ARG, "%s takes %d%s input(s), got %d", opname, lo,
                 hi < 0 ? " or more" : "", spec->n_inputs);
        return -1;
    }
    if (spec->n_inputs > 0 && !spec->inputs) {
        otc_fail(OTC_ERR_ARG, "%s: no inputs given", opname);
        return -1;
    }
    otc_id self = g->n;
    otc_node_spec s = *spec;
    otc_id delay_self = self;
    if (spec->op == OTC_OP_DELAY) {
        /* A delay may start unconnected (its input is itself); a given source is checked. */
        if (spec->inputs[0] != -1 && spec->inputs[0] != self) {
            if (!valid_id(g, spec->inputs[0])) {
                otc_fail(OTC_ERR_ARG, "delay: input refers to node #%d, but there are %d nodes",
                         (int)spec->inputs[0], g->n);
                return -1;
            }
            delay_self = spec->inputs[0];
        }
    } else {
        for (int i = 0; i < spec->n_inputs; i++)
            if (!valid_id(g, spec->inputs[i])) {
                otc_fail(OTC_ERR_ARG, "%s: input %d refers to node #%d, but there are %d nodes",
                         opname, i, (int)spec->inputs[i], g->n);
                return -1;
            }
    }
    if (spec->name && check_name(spec->name) != OTC_OK) {
        otc_fail_context(OTC_ERR_ARG, "%s", opname);
        return -1;
    }
    if (spec->name && otc_graph_find(g, spec->name) >= 0) {
        otc_fail(OTC_ERR_ARG, "%s: name '%s' is already used", opname, spec->name);
        return -1;
    }
    otc_shape shape;
    if (def->shape(g, &s, &shape) != OTC_OK) return -1;
    if (spec->op == OTC_OP_DELAY && delay_self != self &&
        check_delay_source(g, self, shape, delay_self) != OTC_OK)
        return -1;
    if (grow(g) != OTC_OK) return -1;

    otc_node n = {0};
    n.op = spec->op;
    n.shape = shape;
    n.n_inputs = spec->n_inputs;
    n.alpha = spec->alpha;
    n.scale = spec->scale;
    n.act = spec->act;
    n.agg = spec->agg;
    n.axis = spec->axis;
    n.start = spec->start;
    n.len = spec->len;
    if (spec->op == OTC_OP_CONV2D || spec->op == OTC_OP_MAXPOOL2D || spec->op == OTC_OP_AVGPOOL2D)
        n.win = spec->win;
    n.name = dup_str(spec->name);
    bool ok = !spec->name || n.name;
    if (n.n_inputs > 0) {
        n.inputs = malloc((size_t)n.n_inputs * sizeof *n.inputs);
        ok = ok && n.inputs;
        if (n.inputs) memcpy(n.inputs, spec->inputs, (size_t)n.n_inputs * sizeof *n.inputs);
        if (n.inputs && spec->op == OTC_OP_DELAY) n.inputs[0] = delay_self;
    }
    if (spec->op == OTC_OP_NEURON && n.n_inputs > 2) {
        n.cols = malloc((size_t)(n.n_inputs - 2) * sizeof *n.cols);
        ok = ok && n.cols;
        if (n.cols) memcpy(n.cols, spec->cols, (size_t)(n.n_inputs - 2) * sizeof *n.cols);
    }
    if (spec->op == OTC_OP_PARAMETER) {
        n.value = otc_tensor_new(shape);
        ok = ok && n.value;
        n.trainable = true;
    }
    if (!ok) {
        free_node(&n);
        otc_fail(OTC_ERR_NOMEM, "out of memory for node %s", opname);
        return -1;
    }
    g->nodes[g->n++] = n;
    if (n.name && otc_name_index_add(&g->names, self, node_name, g) != OTC_OK) {
        free_node(&g->nodes[--g->n]);
        return -1;
    }
    return self;
}

otc_status otc_graph_set_input(otc_graph *g, otc_id node, int slot, otc_id src) {
    if (!valid_id(g, node) || !valid_id(g, src))
        return otc_fail(OTC_ERR_ARG, "set_input: no node #%d or #%d", (int)node, (int)src);
    otc_node *n = &g->nodes[node];
    if (slot < 0 || slot >= n->n_inputs)
        return otc_fail(OTC_ERR_ARG, "set_input: node #%d has no input %d", (int)node, slot);
    otc_id old = n->inputs[slot];
    n->inputs[slot] = src;
    otc_shape shape = n->shape;
    otc_status st = OTC_OK;
    if (n->op == OTC_OP_DELAY) {
        st = check_delay_source(g, node, n->shape, src);
    } else {
        otc_node_spec s = spec_of(n);
        st = otc_op_def_get(n->op)->shape(g, &s, &shape);
        if (!st && !otc_shape_equal(shape, n->shape)) {
            char a[64], b[64];
            st = otc_fail(OTC_ERR_SHAPE, "set_input: node #%d would change shape %s -> %s",
                          (int)node, otc_shape_str(n->shape, a, 64), otc_shape_str(shape, b, 64));
        }
    }
    if (st) n->inputs[slot] = old;
    return st;
}

/* otc_graph_copy_into of the nodes keep marks (every node when keep is NULL): a node left
 * out keeps map[i] = -1, and an output left out is not marked. */
static otc_status copy_kept(otc_graph *dst, const otc_graph *g, otc_id *map, const bool *keep) {
    int max_inputs = 1;
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i].n_inputs > max_inputs) max_inputs = g->nodes[i].n_inputs;
    otc_id *ins = malloc((size_t)max_inputs * sizeof *ins);
    if (!ins) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    otc_id first = dst->n; /* ids from here on are the copies */
    otc_status st = OTC_OK;
    for (int i = 0; i < g->n && st == OTC_OK; i++) {
        if (map[i] >= 0 || (keep && !keep[i])) continue;
        const otc_node *n = &g->nodes[i];
        otc_node_spec s = spec_of(n);
        /* Ids keep their order, so every input but a Delay's source is mapped already. */
        for (int k = 0; k < n->n_inputs; k++) ins[k] = map[n->inputs[k]];
        if (n->op == OTC_OP_DELAY) ins[0] = dst->n; /* connected once its source exists */
        s.inputs = ins;
        if ((map[i] = otc_graph_add(dst, &s)) < 0) {
            st = otc_fail_context(OTC_ERR_SHAPE, "copying node #%d", i);
        } else if (n->op == OTC_OP_PARAMETER) {
            otc_node *to = &dst->nodes[map[i]];
            memcpy(to->value->data, n->value->data, n->value->size * sizeof(float));
            to->trainable = n->trainable;
        }
    }
    free(ins);
    for (int i = 0; i < g->n && st == OTC_OK; i++)
        if (g->nodes[i].op == OTC_OP_DELAY && map[i] >= first)
            st = otc_graph_set_input(dst, map[i], 0, map[g->nodes[i].inputs[0]]);
    for (int i = 0; i < g->n_outputs && st == OTC_OK; i++)
        if (map[g->outputs[i]] >= 0) st = otc_graph_mark_output(dst, map[g->outputs[i]]);
    for (int i = 0; i < g->n_meta && st == OTC_OK; i++)
        st = otc_graph_meta_set(dst, g->meta_keys[i], g->meta_values[i]);
    return st;
}

otc_status otc_graph_copy_into(otc_graph *dst, const otc_graph *g, otc_id *map) {
    return copy_kept(dst, g, map, NULL);
}

otc_graph *otc_graph_clone(const otc_graph *g) {
    otc_graph *c = otc_graph_new();
    otc_id *map = malloc(((size_t)g->n + 1) * sizeof *map);
    if (!c || !map) {
        otc_fail(OTC_ERR_NOMEM, "out of memory");
    } else {
        for (int i = 0; i < g->n; i++) map[i] = -1;
        if (otc_graph_copy_into(c, g, map) == OTC_OK) {
            free(map);
            return c;
        }
    }
    free(map);
    otc_graph_free(c);
    return NULL;
}

/* A loss compares a prediction with a target: training only. */
static bool is_loss(otc_op op) {
    return op == OTC_OP_MSE || op == OTC_OP_BCE || op == OTC_OP_SOFTMAX_CE;
}

otc_graph *otc_graph_inference(const otc_graph *g) {
    if (!g) {
        otc_fail(OTC_ERR_ARG, "otc_graph_inference: NULL graph");
        return NULL;
    }
    int n_out = 0;
    for (int i = 0; i < g->n_outputs; i++) n_out += !is_loss(g->nodes[g->outputs[i]].op);
    if (n_out == 0) {
        otc_fail(OTC_ERR_ARG, "otc_graph_inference: the graph marks no output other than a loss");
        return NULL;
    }
    /* What the outputs read, through Delays' sources too: the rest (losses, their targets) is
     * left out. */
    bool *needed = calloc((size_t)g->n, sizeof *needed);
    otc_id *stack = malloc((size_t)g->n * sizeof *stack), *map = malloc((size_t)g->n * sizeof *map);
    otc_graph *c = otc_graph_new();
    if (!needed || !stack || !map || !c) {
        otc_fail(OTC_ERR_NOMEM, "out of memory");
    } else {
        int top = 0;
        for (int i = 0; i < g->n_outputs; i++) {
            otc_id o = g->outputs[i];
            if (!is_loss(g->nodes[o].op) && !needed[o]) needed[stack[top++] = o] = true;
        }
        while (top > 0) {
            const otc_node *n = &g->nodes[stack[--top]];
            for (int k = 0; k < n->n_inputs; k++)
                if (!needed[n->inputs[k]]) needed[stack[top++] = n->inputs[k]] = true;
        }
        for (int i = 0; i < g->n; i++) map[i] = -1;
        if (copy_kept(c, g, map, needed) == OTC_OK) {
            free(needed);
            free(stack);
            free(map);
            return c;
        }
    }
    otc_graph_free(c);
    free(needed);
    free(stack);
    free(map);
    return NULL;
}

/* ---- order ---- */

/* Iterative DFS (graphs can be deep chains). Colour 0 new, 1 on the stack, 2 done. On a back
 * edge the stack from the target up is the cycle, which the message spells out. */
otc_status otc_graph_topo_order(const otc_graph *g, otc_id *order) {
    int n = g->n, k = 0;
    if (n == 0) return OTC_OK;
    unsigned char *colour = calloc((size_t)n, 1);
    otc_id *stack = malloc((size_t)n * sizeof *stack);
    int *next_in = malloc((size_t)n * sizeof *next_in);
    if (!colour || !stack || !next_in) {
        free(colour);
        free(stack);
        free(next_in);
        return otc_fail(OTC_ERR_NOMEM, "out of memory");
    }
    otc_status st = OTC_OK;
    for (int root = 0; root < n && !st; root++) {
        if (colour[root]) continue;
        int top = 0;
        stack[top++] = root;
        colour[root] = 1;
        next_in[root] = 0;
        while (top > 0 && !st) {
            otc_id v = stack[top - 1];
            const otc_node *node = &g->nodes[v];
            /* A delay reads the previous step's value: its input edge imposes no order. */
            int n_in = node->op == OTC_OP_DELAY ? 0 : node->n_inputs;
            if (next_in[v] < n_in) {
                otc_id u = node->inputs[next_in[v]++];
                if (colour[u] == 0) {
                    colour[u] = 1;
                    next_in[u] = 0;
                    stack[top++] = u;
                } else if (colour[u] == 1) {
                    /* Data flows u -> ... -> v -> u along the stack from u upwards. */
                    char msg[512], lab[64];
                    size_t used = 0;
                    int from = top - 1;
                    while (stack[from] != u) from--;
                    for (int i = from; i < top && used < sizeof msg - 80; i++)
                        used += (size_t)snprintf(msg + used, sizeof msg - used, "%s -> ",
                                                 otc_graph_node_label(g, stack[i], lab, 64));
                    snprintf(msg + used, sizeof msg - used, "%s",
                             otc_graph_node_label(g, u, lab, 64));
                    st = otc_fail(OTC_ERR_CYCLE,
                                  "cycle without a delay node: %s (each reads the next)", msg);
                }
            } else {
                colour[v] = 2;
                order[k++] = v;
                top--;
            }
        }
    }
    free(colour);
    free(stack);
    free(next_in);
    return st;
}
