/* Reading an .otm model file: every length, count, id, shape and offset is checked against
 * the file before use, and the graph is rebuilt only through otc_graph_add, so the loader
 * applies exactly the shape and arity rules every other builder does. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "json_read.h"
#include "model_format.h"
#include "otc/file.h"
#include "otc/model.h"

typedef struct {
    uint64_t off, size;
    int node;
} param_range;

typedef struct {
    int node, src;
} delay_edge;

typedef struct {
    otc_graph *g;
    int n; /* nodes the file declares */
    const unsigned char *data;
    uint64_t n_floats;
    param_range *ranges;
    int n_ranges;
    delay_edge *delays;
    int n_delays;
} loader;

static const char *json_type(const cJSON *v) {
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "an invalid value";
}

/* An integral JSON number in [lo, hi]; `what` names it in the message. */
static otc_status json_int(const cJSON *v, const char *what, long long lo, long long hi,
                           long long *out) {
    if (!cJSON_IsNumber(v))
        return otc_fail(OTC_ERR_FORMAT, "%s: expected an integer, got %s", what, json_type(v));
    double d = v->valuedouble;
    /* Written so NaN fails too; the range check comes first so the cast is defined. */
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
        return otc_fail(OTC_ERR_FORMAT, "%s: %.17g is not an integer in [%lld, %lld]", what, d, lo,
                        hi);
    *out = (long long)d;
    return OTC_OK;
}

/* Field `key` of obj: NULL when absent and optional; an error when absent and required. */
static otc_status field(const cJSON *obj, const char *key, bool required, const cJSON **out) {
    *out = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!*out && required) return otc_fail(OTC_ERR_FORMAT, "missing required field \"%s\"", key);
    return OTC_OK;
}

static otc_status int_field(const cJSON *obj, const char *key, long long lo, long long hi,
                            long long *out) {
    const cJSON *v;
    otc_status st = field(obj, key, true, &v);
    if (st != OTC_OK) return st;
    char what[64];
    snprintf(what, sizeof what, "field \"%s\"", key);
    return json_int(v, what, lo, hi, out);
}

static otc_status float_field(const cJSON *obj, const char *key, float *out) {
    const cJSON *v;
    otc_status st = field(obj, key, true, &v);
    if (st != OTC_OK) return st;
    if (!cJSON_IsNumber(v))
        return otc_fail(OTC_ERR_FORMAT, "field \"%s\": expected a number, got %s", key,
                        json_type(v));
    double d = v->valuedouble;
    /* Checked before the conversion, which is undefined for values out of float range. */
    if (!(fabs(d) <= FLT_MAX))
        return otc_fail(OTC_ERR_FORMAT, "field \"%s\": %g is out of the float range", key, d);
    *out = (float)d;
    return OTC_OK;
}

static otc_status string_field(const cJSON *obj, const char *key, bool required, const char **out) {
    const cJSON *v;
    *out = NULL;
    otc_status st = field(obj, key, required, &v);
    if (st != OTC_OK || !v) return st;
    if (!cJSON_IsString(v) || !v->valuestring)
        return otc_fail(OTC_ERR_FORMAT, "field \"%s\": expected a string, got %s", key,
                        json_type(v));
    *out = v->valuestring;
    return OTC_OK;
}

/* A JSON array of at most `max` integers in [lo, hi] into a new array (NULL when empty). */
static otc_status int_array_field(const cJSON *obj, const char *key, int max, long long lo,
                                  long long hi, int **out, int *count) {
    const cJSON *arr;
    *out = NULL;
    *count = 0;
    otc_status st = field(obj, key, true, &arr);
    if (st != OTC_OK) return st;
    if (!cJSON_IsArray(arr))
        return otc_fail(OTC_ERR_FORMAT, "field \"%s\": expected an array, got %s", key,
                        json_type(arr));
    int n = cJSON_GetArraySize(arr);
    if (n > max)
        return otc_fail(OTC_ERR_FORMAT, "field \"%s\": %d entries (at most %d)", key, n, max);
    if (n == 0) return OTC_OK;
    int *v = malloc((size_t)n * sizeof *v);
    if (!v) return otc_fail(OTC_ERR_NOMEM, "field \"%s\": out of memory", key);
    int i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        char what[96];
        snprintf(what, sizeof what, "field \"%s\" entry %d", key, i);
        long long val = 0;
        st = json_int(x, what, lo, hi, &val);
        if (st != OTC_OK) {
            free(v);
            return st;
        }
        v[i++] = (int)val;
    }
    *out = v;
    *count = n;
    return OTC_OK;
}

static otc_status parse_shape(const cJSON *obj, otc_shape *shape) {
    const cJSON *arr;
    otc_status st = field(obj, "shape", true, &arr);
    if (st != OTC_OK) return st;
    /* Checked before the entries are read, so a huge array costs nothing. */
    if (cJSON_IsArray(arr) && cJSON_GetArraySize(arr) > OTC_MAX_DIMS)
        return otc_fail(OTC_ERR_FORMAT, "field \"shape\": more than %d dimensions", OTC_MAX_DIMS);
    int *dims = NULL, n = 0;
    st = int_array_field(obj, "shape", OTC_MAX_DIMS, INT_MIN, INT_MAX, &dims, &n);
    if (st != OTC_OK) return st;
    uint64_t elems = 1;
    for (int i = 0; i < n && st == OTC_OK; i++) {
        if (dims[i] == OTC_BATCH && i == 0) continue;
        if (dims[i] == OTC_BATCH)
            st = otc_fail(OTC_ERR_FORMAT,
                          "field \"shape\": dimension %d is -1, but only the leading "
                          "dimension may be the batch",
                          i);
        else if (dims[i] < 1 || dims[i] > OTC_MAX_DIM)
            st = otc_fail(OTC_ERR_FORMAT,
                          "field \"shape\": dimension %d is %d (must be 1..%d, or -1 for a "
                          "leading batch)",
                          i, dims[i], OTC_MAX_DIM);
        else if ((elems *= (uint64_t)dims[i]) > OTC_MAX_ELEMS)
            st = otc_fail(OTC_ERR_FORMAT, "field \"shape\": more than %llu elements",
                          (unsigned long long)OTC_MAX_ELEMS);
    }
    if (st == OTC_OK) *shape = otc_shape_make(n, dims);
    free(dims);
    return st;
}

static float decode_f32(const unsigned char *p) {
    uint32_t bits = otm_get_u32(p);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Arity, and every input id in range; only a delay may refer to itself or forward (it reads
 * the previous step), so any cycle the file describes goes through a delay. */
static otc_status check_inputs(const loader *L, otc_op op, int i, const int *inputs, int n_in) {
    const otc_op_info *info = otc_op_get(op);
    int lo = info->min_inputs, hi = info->max_inputs;
    if (n_in < lo || (hi >= 0 && n_in > hi)) {
        if (hi < 0)
            return otc_fail(OTC_ERR_FORMAT, "op \"%s\" takes at least %d inputs, got %d",
                            info->name, lo, n_in);
        if (lo == hi)
            return otc_fail(OTC_ERR_FORMAT, "op \"%s\" takes %d input(s), got %d", info->name, lo,
                            n_in);
        return otc_fail(OTC_ERR_FORMAT, "op \"%s\" takes %d..%d inputs, got %d", info->name, lo, hi,
                        n_in);
    }
    /* Guards inputs[0] and the cols count below whatever the op table says. */
    if ((op == OTC_OP_DELAY && n_in != 1) || (op == OTC_OP_NEURON && n_in < 2))
        return otc_fail(OTC_ERR_FORMAT, "op \"%s\" cannot have %d inputs", info->name, n_in);
    for (int k = 0; k < n_in; k++) {
        int src = inputs[k];
        if (src < 0 || src >= L->n)
            return otc_fail(OTC_ERR_FORMAT, "input %d refers to node %d, but there are %d nodes", k,
                            src, L->n);
        if (op == OTC_OP_DELAY) continue;
        if (src == i) return otc_fail(OTC_ERR_FORMAT, "input %d refers to the node itself", k);
        if (src > i)
            return otc_fail(OTC_ERR_FORMAT,
                            "input %d refers to node %d, which comes later (only a delay may "
                            "refer forward)",
                            k, src);
    }
    return OTC_OK;
}

/* An [h, w] pair of window attributes in 0..OTC_MAX_DIM (the shape rule checks the rest). */
static otc_status pair_field(const cJSON *jn, const char *key, int *h, int *w) {
    int *v = NULL, n = 0;
    otc_status st = int_array_field(jn, key, 2, 0, OTC_MAX_DIM, &v, &n);
    if (st == OTC_OK && n != 2)
        st = otc_fail(OTC_ERR_FORMAT, "field \"%s\": expected [h, w], got %d entries", key, n);
    if (st == OTC_OK) {
        *h = v[0];
        *w = v[1];
    }
    free(v);
    return st;
}

static otc_status read_window(const cJSON *jn, otc_window *w) {
    otc_status st;
    long long v;
    if ((st = pair_field(jn, "kernel", &w->kernel_h, &w->kernel_w)) ||
        (st = pair_field(jn, "stride", &w->stride_h, &w->stride_w)) ||
        (st = pair_field(jn, "padding", &w->pad_h, &w->pad_w)) ||
        (st = pair_field(jn, "dilation", &w->dilation_h, &w->dilation_w)) ||
        (st = int_field(jn, "groups", 0, OTC_MAX_DIM, &v)))
        return st;
    w->groups = (int)v;
    return OTC_OK;
}

/* The fields this op stores (otm_op_fields), all required; *cols is owned by the caller. */
static otc_status read_op_fields(const cJSON *jn, otc_node_spec *spec, int **cols) {
    unsigned fields = otm_op_fields(spec->op);
    otc_status st;
    long long v;
    if ((fields & OTM_F_ALPHA) && (st = float_field(jn, "alpha", &spec->alpha)) != OTC_OK)
        return st;
    if ((fields & OTM_F_SCALE) && (st = float_field(jn, "scale", &spec->scale)) != OTC_OK)
        return st;
    if (fields & OTM_F_ACT) {
        const char *act_name;
        if ((st = string_field(jn, "act", true, &act_name)) != OTC_OK) return st;
        spec->act = otc_act_from_name(act_name);
        if (spec->act < 0 || !otc_act_get((otc_act)spec->act))
            return otc_fail(OTC_ERR_FORMAT, "unknown activation \"%s\"", act_name);
        /* The aggregation is stored only when it is not the sum, so older files load. */
        const char *agg_name = NULL;
        if ((st = string_field(jn, "agg", false, &agg_name)) != OTC_OK) return st;
        if (agg_name && (spec->agg = otc_agg_from_name(agg_name)) < 0)
            return otc_fail(OTC_ERR_FORMAT, "unknown aggregation \"%s\"", agg_name);
    }
    if (fields & OTM_F_COLS) {
        int n_cols = 0;
        st = int_array_field(jn, "cols", OTC_MAX_INPUTS, 0, OTC_MAX_DIM - 1, cols, &n_cols);
        if (st != OTC_OK) return st;
        if (n_cols != spec->n_inputs - 2)
            return otc_fail(OTC_ERR_FORMAT,
                            "field \"cols\" has %d entries, but the neuron has %d sources", n_cols,
                            spec->n_inputs - 2);
        spec->cols = *cols;
    }
    if (fields & OTM_F_AXIS) {
        if ((st = int_field(jn, "axis", -OTC_MAX_DIMS, OTC_MAX_DIMS, &v)) != OTC_OK) return st;
        spec->axis = (int)v;
    }
    if (fields & OTM_F_START) {
        if ((st = int_field(jn, "start", 0, OTC_MAX_DIM, &v)) != OTC_OK) return st;
        spec->start = (int)v;
    }
    if (fields & OTM_F_LEN) {
        if ((st = int_field(jn, "len", 0, OTC_MAX_DIM, &v)) != OTC_OK) return st;
        spec->len = (int)v;
    }
    if ((fields & OTM_F_WINDOW) && (st = read_window(jn, &spec->win)) != OTC_OK) return st;
    return OTC_OK;
}

/* A parameter's place in the data section (checked against it) and its trainable flag. */
static otc_status read_param(loader *L, const cJSON *jn, int i, otc_shape shape, uint64_t *off,
                             uint64_t *size, bool *trainable) {
    if (otc_shape_is_batched(shape))
        return otc_fail(OTC_ERR_FORMAT, "a parameter cannot have a batch dimension");
    *size = otc_shape_size(shape);
    long long v;
    otc_status st = int_field(jn, "offset", 0, (1LL << 53), &v);
    if (st != OTC_OK) return st;
    *off = (uint64_t)v;
    if (*off > L->n_floats || *size > L->n_floats - *off)
        return otc_fail(OTC_ERR_FORMAT,
                        "field \"offset\": floats [%llu, %llu) lie outside the %llu in the "
                        "data section",
                        (unsigned long long)*off, (unsigned long long)(*off + *size),
                        (unsigned long long)L->n_floats);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(jn, "trainable");
    if (t && !cJSON_IsBool(t))
        return otc_fail(OTC_ERR_FORMAT, "field \"trainable\": expected a boolean, got %s",
                        json_type(t));
    *trainable = !t || cJSON_IsTrue(t);
    L->ranges[L->n_ranges++] = (param_range){*off, *size, i};
    return OTC_OK;
}

/* Checks one node's JSON and adds it; inputs/cols are owned by the caller (freed there). */
static otc_status add_node(loader *L, const cJSON *jn, int i, int **inputs, int **cols) {
    if (!cJSON_IsObject(jn))
        return otc_fail(OTC_ERR_FORMAT, "expected a JSON object, got %s", json_type(jn));
    long long id;
    otc_status st = int_field(jn, "id", INT_MIN, INT_MAX, &id);
    if (st != OTC_OK) return st;
    if (id != i)
        return otc_fail(OTC_ERR_FORMAT, "field \"id\" is %lld, but ids must run 0..n-1 in order",
                        id);
    const char *op_name, *name;
    if ((st = string_field(jn, "op", true, &op_name)) != OTC_OK) return st;
    int op = otc_op_from_name(op_name);
    const otc_op_info *info = op >= 0 ? otc_op_get((otc_op)op) : NULL;
    if (!info) return otc_fail(OTC_ERR_FORMAT, "unknown op \"%s\"", op_name);
    if ((st = string_field(jn, "name", false, &name)) != OTC_OK) return st;
    if (name && !*name) return otc_fail(OTC_ERR_FORMAT, "field \"name\" is empty");
    if (name) {
        otc_id prev = otc_graph_find(L->g, name);
        if (prev >= 0)
            return otc_fail(OTC_ERR_FORMAT, "name \"%s\" is already used by node %d", name, prev);
    }
    otc_shape shape;
    if ((st = parse_shape(jn, &shape)) != OTC_OK) return st;

    int n_in = 0;
    st = int_array_field(jn, "inputs", OTC_MAX_INPUTS, INT_MIN, INT_MAX, inputs, &n_in);
    if (st != OTC_OK || (st = check_inputs(L, (otc_op)op, i, *inputs, n_in)) != OTC_OK) return st;
    otc_node_spec spec = {.op = (otc_op)op, .name = name, .n_inputs = n_in, .shape = shape};
    if ((st = read_op_fields(jn, &spec, cols)) != OTC_OK) return st;

    bool trainable = true;
    uint64_t size = 0, off = 0;
    if (op == OTC_OP_PARAMETER &&
        (st = read_param(L, jn, i, shape, &off, &size, &trainable)) != OTC_OK)
        return st;
    if (op == OTC_OP_DELAY) {
        /* Its source may not exist yet: start self-connected, rewire once all nodes exist. */
        if ((*inputs)[0] != i) L->delays[L->n_delays++] = (delay_edge){i, (*inputs)[0]};
        (*inputs)[0] = i;
    }
    spec.inputs = *inputs;

    otc_id got = otc_graph_add(L->g, &spec);
    if (got < 0) return OTC_ERR_FORMAT; /* the graph's message says what it rejected */
    if (got != i) return otc_fail(OTC_ERR_FORMAT, "the graph gave it id %d", got);
    const otc_node *node = otc_graph_node(L->g, got);
    if (!node || !otc_shape_equal(node->shape, shape)) {
        char a[64], b[64];
        return otc_fail(OTC_ERR_FORMAT, "field \"shape\" is %s, but its inputs give %s",
                        otc_shape_str(shape, a, sizeof a),
                        node ? otc_shape_str(node->shape, b, sizeof b) : "nothing");
    }
    if (op == OTC_OP_PARAMETER) {
        otc_tensor *t = otc_graph_param(L->g, got);
        if (!t || t->size != size || (size && !t->data))
            return otc_fail(OTC_ERR_FORMAT, "the graph made no parameter of %llu floats",
                            (unsigned long long)size);
        const unsigned char *p = L->data + off * 4;
        for (uint64_t k = 0; k < size; k++) t->data[k] = decode_f32(p + k * 4);
        if ((st = otc_graph_set_trainable(L->g, got, trainable)) != OTC_OK) return st;
    }
    return OTC_OK;
}

static int range_cmp(const void *a, const void *b) {
    const param_range *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off ? 1 : (x->node > y->node) - (x->node < y->node);
}

/* Parameter data must tile the data section exactly: nothing shared, nothing unaccounted. */
static otc_status check_ranges(loader *L) {
    qsort(L->ranges, (size_t)L->n_ranges, sizeof *L->ranges, range_cmp);
    uint64_t used = 0;
    for (int k = 0; k < L->n_ranges; k++) {
        const param_range *r = &L->ranges[k];
        if (k > 0 && r->off < L->ranges[k - 1].off + L->ranges[k - 1].size)
            return otc_fail(OTC_ERR_FORMAT,
                            "node %d: parameter data at offset %llu overlaps node %d's", r->node,
                            (unsigned long long)r->off, L->ranges[k - 1].node);
        used += r->size;
    }
    if (used != L->n_floats)
        return otc_fail(OTC_ERR_FORMAT,
                        "the data section holds %llu floats, but the parameters use %llu",
                        (unsigned long long)L->n_floats, (unsigned long long)used);
    return OTC_OK;
}

static otc_status load_outputs(loader *L, const cJSON *root) {
    int *ids = NULL, n = 0;
    otc_status st = int_array_field(root, "outputs", OTC_MAX_NODES, INT_MIN, INT_MAX, &ids, &n);
    for (int k = 0; st == OTC_OK && k < n; k++) {
        if (ids[k] < 0 || ids[k] >= L->n)
            st = otc_fail(OTC_ERR_FORMAT, "output %d refers to node %d, but there are %d nodes", k,
                          ids[k], L->n);
        else if ((st = otc_graph_mark_output(L->g, ids[k])) != OTC_OK)
            st = otc_fail_context(OTC_ERR_FORMAT, "output %d", k);
    }
    free(ids);
    return st;
}

static otc_status load_meta(loader *L, const cJSON *root) {
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "meta");
    if (!meta) return OTC_OK;
    if (!cJSON_IsObject(meta))
        return otc_fail(OTC_ERR_FORMAT, "field \"meta\": expected an object, got %s",
                        json_type(meta));
    if (cJSON_GetArraySize(meta) > OTC_MAX_META_KEYS)
        return otc_fail(OTC_ERR_FORMAT, "field \"meta\": more than %d keys (OTC_MAX_META_KEYS)",
                        OTC_MAX_META_KEYS);
    const cJSON *item;
    cJSON_ArrayForEach(item, meta) {
        const char *key = item->string;
        if (!key) return otc_fail(OTC_ERR_FORMAT, "field \"meta\": an entry has no key");
        if (otc_graph_meta_get(L->g, key))
            return otc_fail(OTC_ERR_FORMAT, "field \"meta\": duplicate key \"%s\"", key);
        char *text = cJSON_PrintUnformatted(item);
        if (!text) return otc_fail(OTC_ERR_NOMEM, "meta \"%s\": out of memory", key);
        otc_status st = otc_graph_meta_set(L->g, key, text);
        cJSON_free(text);
        if (st != OTC_OK) return otc_fail_context(OTC_ERR_FORMAT, "meta \"%s\"", key);
    }
    return OTC_OK;
}

static otc_status load_graph(loader *L, const cJSON *root) {
    if (!cJSON_IsObject(root))
        return otc_fail(OTC_ERR_FORMAT, "JSON header: expected an object, got %s", json_type(root));
    const char *format;
    long long version;
    otc_status st = string_field(root, "format", true, &format);
    if (st == OTC_OK && strcmp(format, "otm") != 0)
        st = otc_fail(OTC_ERR_FORMAT, "field \"format\" is \"%s\", expected \"otm\"", format);
    if (st == OTC_OK) st = int_field(root, "version", 0, INT_MAX, &version);
    if (st == OTC_OK && version != OTM_VERSION)
        st = otc_fail(OTC_ERR_FORMAT, "field \"version\" is %lld, but the file header says %u",
                      version, OTM_VERSION);
    const cJSON *nodes = NULL;
    if (st == OTC_OK) st = field(root, "nodes", true, &nodes);
    if (st == OTC_OK && !cJSON_IsArray(nodes))
        st = otc_fail(OTC_ERR_FORMAT, "field \"nodes\": expected an array, got %s",
                      json_type(nodes));
    if (st != OTC_OK) return st;
    int n = cJSON_GetArraySize(nodes);
    if (n > OTC_MAX_NODES)
        return otc_fail(OTC_ERR_FORMAT, "field \"nodes\": %d nodes (at most %d, OTC_MAX_NODES)", n,
                        OTC_MAX_NODES);
    L->n = n;
    size_t cap = n > 0 ? (size_t)n : 1;
    L->ranges = malloc(cap * sizeof *L->ranges);
    L->delays = malloc(cap * sizeof *L->delays);
    if (!L->ranges || !L->delays) return otc_fail(OTC_ERR_NOMEM, "out of memory for %d nodes", n);

    int i = 0;
    const cJSON *jn;
    cJSON_ArrayForEach(jn, nodes) {
        int *inputs = NULL, *cols = NULL;
        st = add_node(L, jn, i, &inputs, &cols);
        free(inputs);
        free(cols);
        if (st != OTC_OK) return otc_fail_context(st, "node %d", i);
        i++;
    }
    if ((st = check_ranges(L)) != OTC_OK) return st;
    for (int k = 0; k < L->n_delays; k++) {
        const delay_edge *d = &L->delays[k];
        if (otc_graph_set_input(L->g, d->node, 0, d->src) != OTC_OK)
            return otc_fail_context(OTC_ERR_FORMAT, "node %d: input 0 (node %d)", d->node, d->src);
    }
    if ((st = load_outputs(L, root)) != OTC_OK) return st;
    if ((st = load_meta(L, root)) != OTC_OK) return st;
    otc_id *order = malloc(cap * sizeof *order);
    if (!order) return otc_fail(OTC_ERR_NOMEM, "out of memory for %d nodes", n);
    st = otc_graph_topo_order(L->g, order);
    free(order);
    return st == OTC_OK ? OTC_OK : OTC_ERR_FORMAT;
}

/* Elements of the root object's "nodes" array, counted in the JSON text without parsing it:
 * a file over OTC_MAX_NODES is refused before cJSON builds a tree for every node (about 1 KB
 * of memory each). Stops counting once past the limit. */
static long long count_nodes(const char *j, size_t len) {
    int depth = 0;
    bool in_string = false, escaped = false;
    size_t key_start = 0, key_len = 0, str_start = 0;
    bool colon_after_nodes = false;
    int nodes_depth = -1; /* depth inside the "nodes" array while in it */
    long long count = 0, best = 0;
    for (size_t i = 0; i < len; i++) {
        char c = j[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"') {
                in_string = false;
                if (depth == 1) {
                    key_start = str_start;
                    key_len = i - str_start;
                }
            }
            continue;
        }
        switch (c) {
        case '"':
            in_string = true;
            str_start = i + 1;
            break;
        case ':':
            colon_after_nodes = depth == 1 && key_len == 5 && !memcmp(j + key_start, "nodes", 5);
            break;
        case '[':
        case '{':
            depth++;
            if (c == '[' && colon_after_nodes && depth == 2) {
                nodes_depth = 2;
                count = 0;
            } else if (depth == nodes_depth + 1 && nodes_depth > 0 && count == 0) {
                count = 1; /* the first element */
            }
            colon_after_nodes = false;
            break;
        case ']':
        case '}':
            if (depth == nodes_depth) {
                nodes_depth = -1;
                if (count > best) best = count;
            }
            depth--;
            break;
        case ',':
            if (depth == nodes_depth && ++count > OTC_MAX_NODES) return count;
            colon_after_nodes = false;
            break;
        case ' ':
        case '\t':
        case '\n':
        case '\r':
            break;
        default:
            /* a scalar element of the array counts as one too (and is refused later) */
            if (depth == nodes_depth && count == 0) count = 1;
            colon_after_nodes = false;
            break;
        }
    }
    return count > best ? count : best;
}

/* The container: magic, version, lengths and CRC, then the JSON and the graph. */
static otc_status decode(const unsigned char *p, size_t len, otc_graph **out) {
    if (len == 0) return otc_fail(OTC_ERR_FORMAT, "file is empty");
    if (len < OTM_MAGIC_LEN || memcmp(p, OTM_MAGIC, OTM_MAGIC_LEN) != 0)
        return otc_fail(OTC_ERR_FORMAT, "not an otc model (bad magic, expected \"%s\")", OTM_MAGIC);
    if (len < OTM_PREFIX_LEN)
        return otc_fail(OTC_ERR_FORMAT, "truncated in the header (%zu of %d bytes)", len,
                        OTM_PREFIX_LEN);
    uint32_t version = otm_get_u32(p + 8), reserved = otm_get_u32(p + 12);
    if (version != OTM_VERSION)
        return otc_fail(OTC_ERR_FORMAT, "format version %u is not supported (this build reads %u)",
                        version, OTM_VERSION);
    if (reserved != 0)
        return otc_fail(OTC_ERR_FORMAT, "reserved header field is %u, expected 0", reserved);
    uint64_t jlen = otm_get_u64(p + 16);
    size_t rest = len - OTM_PREFIX_LEN;
    if (jlen > (uint64_t)rest)
        return otc_fail(OTC_ERR_FORMAT, "JSON length %llu exceeds the %zu bytes after the header",
                        (unsigned long long)jlen, rest);
    rest -= (size_t)jlen;
    const unsigned char *q = p + OTM_PREFIX_LEN + jlen;
    if (rest < 8)
        return otc_fail(OTC_ERR_FORMAT, "truncated after the JSON header (no parameter count)");
    uint64_t n_floats = otm_get_u64(q);
    rest -= 8;
    if (rest < 4) return otc_fail(OTC_ERR_FORMAT, "truncated before the CRC");
    size_t data_bytes = rest - 4;
    if (n_floats > data_bytes / 4)
        return otc_fail(OTC_ERR_FORMAT,
                        "parameter count %llu does not fit in the %zu bytes left (truncated?)",
                        (unsigned long long)n_floats, data_bytes);
    if (n_floats * 4 != data_bytes)
        return otc_fail(OTC_ERR_FORMAT,
                        "%zu bytes beyond the %llu parameter floats and the CRC (trailing data)",
                        data_bytes - (size_t)n_floats * 4, (unsigned long long)n_floats);
    uint32_t stored = otm_get_u32(p + len - 4), crc = otc_model_crc32(0, p, len - 4);
    if (stored != crc)
        return otc_fail(OTC_ERR_FORMAT,
                        "CRC mismatch (stored %08x, computed %08x): the file is corrupt", stored,
                        crc);

    const char *jtext = (const char *)p + OTM_PREFIX_LEN;
    const char *nul = memchr(jtext, 0, (size_t)jlen);
    if (nul) return otc_fail(OTC_ERR_FORMAT, "JSON header: NUL byte at offset %td", nul - jtext);
    if (count_nodes(jtext, (size_t)jlen) > OTC_MAX_NODES)
        return otc_fail(OTC_ERR_FORMAT, "field \"nodes\": more than %d nodes (OTC_MAX_NODES)",
                        OTC_MAX_NODES);
    cJSON *root = NULL;
    otc_status ps = otc_json_parse(jtext, (size_t)jlen, OTC_JSON_VALUES_LARGE, &root);
    if (ps != OTC_OK) return otc_fail_context(ps, "JSON header");

    loader L = {.data = q + 8, .n_floats = n_floats};
    L.g = otc_graph_new();
    otc_status st =
        L.g ? load_graph(&L, root) : otc_fail(OTC_ERR_NOMEM, "out of memory for the graph");
    cJSON_Delete(root);
    free(L.ranges);
    free(L.delays);
    if (st != OTC_OK) {
        otc_graph_free(L.g);
        return st;
    }
    *out = L.g;
    return OTC_OK;
}

otc_status otc_model_load_buffer(const void *data, size_t len, const char *name, otc_graph **out) {
    if (!out) return otc_fail(OTC_ERR_ARG, "otc_model_load_buffer: out is NULL");
    *out = NULL;
    if (!name) name = "<buffer>";
    if (!data && len) return otc_fail(OTC_ERR_ARG, "%s: data is NULL", name);
    otc_status st = decode(data ? data : "", len, out);
    if (st != OTC_OK) return otc_fail_context(st, "%s", name);
    return OTC_OK;
}

otc_status otc_model_load(const char *path, otc_graph **out) {
    if (!out) return otc_fail(OTC_ERR_ARG, "otc_model_load: out is NULL");
    *out = NULL;
    if (!path) return otc_fail(OTC_ERR_ARG, "otc_model_load: path is NULL");
    /* A model is a file, never a stream: refuse a device or pipe before reading it. */
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
        return otc_fail(OTC_ERR_IO, "%s: not a regular file", path);
    char *buf = NULL;
    size_t got = 0;
    otc_status rs = otc_read_file(path, OTC_MAX_MODEL_BYTES, &buf, &got);
    if (rs != OTC_OK) return rs;
    otc_status st = otc_model_load_buffer(buf, got, path, out);
    free(buf);
    return st;
}
