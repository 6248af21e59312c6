/* Writing a graph to an .otm model file: JSON header, f32 parameter data, CRC, written
 * atomically. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "graph_params.h"
#include "json_read.h"
#include "model_format.h"
#include "otc/file.h"
#include "otc/model.h"

uint32_t otc_model_crc32(uint32_t crc, const unsigned char *p, size_t n) {
    /* Half-byte table: constant data (no lazy init to race on), two lookups per byte. */
    static const uint32_t table[16] = {0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu,
                                       0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
                                       0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
                                       0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu};
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        crc = table[crc & 0xF] ^ (crc >> 4);
        crc = table[crc & 0xF] ^ (crc >> 4);
    }
    return ~crc;
}

/* cJSON's builders return NULL only when out of memory; one check per node keeps it short. */
static cJSON *int_array(const int *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *x = cJSON_CreateNumber(v[i]);
        if (!x || !cJSON_AddItemToArray(a, x)) {
            cJSON_Delete(x);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

static bool add_item(cJSON *obj, const char *key, cJSON *item) {
    if (!item) return false;
    if (!cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

static otc_status node_json(const otc_graph *g, otc_id id, uint64_t *offset, cJSON **out) {
    const otc_node *n = otc_graph_node(g, id);
    if (!n) return otc_fail(OTC_ERR_ARG, "node %d: missing from the graph", id);
    const otc_op_info *info = otc_op_get(n->op);
    if (!info) return otc_fail(OTC_ERR_ARG, "node %d: unknown op %d", id, (int)n->op);
    if (n->n_inputs < 0 || n->n_inputs > OTC_MAX_INPUTS || (n->n_inputs > 0 && !n->inputs))
        return otc_fail(OTC_ERR_ARG, "node %d: %d inputs", id, n->n_inputs);
    if (n->shape.ndim < 0 || n->shape.ndim > OTC_MAX_DIMS)
        return otc_fail(OTC_ERR_ARG, "node %d: shape has %d dimensions", id, n->shape.ndim);
    unsigned fields = otm_op_fields(n->op);
    /* JSON has no NaN or infinity: cJSON would write null, and the file would not load. */
    if (((fields & OTM_F_ALPHA) && !isfinite(n->alpha)) ||
        ((fields & OTM_F_SCALE) && !isfinite(n->scale)))
        return otc_fail(OTC_ERR_ARG, "node %d: alpha %g / scale %g is not finite", id,
                        (double)n->alpha, (double)n->scale);
    if ((fields & OTM_F_ACT) && !otc_act_get((otc_act)n->act))
        return otc_fail(OTC_ERR_ARG, "node %d: unknown activation %d", id, n->act);
    if ((fields & OTM_F_COLS) && (n->n_inputs < 2 || (n->n_inputs > 2 && !n->cols)))
        return otc_fail(OTC_ERR_ARG, "node %d: a neuron needs its W and b inputs", id);

    cJSON *o = cJSON_CreateObject();
    bool ok = o && add_item(o, "id", cJSON_CreateNumber(id)) &&
              add_item(o, "op", cJSON_CreateString(info->name));
    if (ok && n->name) ok = add_item(o, "name", cJSON_CreateString(n->name));
    ok = ok && add_item(o, "shape", int_array(n->shape.dim, n->shape.ndim)) &&
         add_item(o, "inputs", int_array(n->inputs, n->n_inputs));
    if (ok && (fields & OTM_F_COLS)) ok = add_item(o, "cols", int_array(n->cols, n->n_inputs - 2));
    if (ok && (fields & OTM_F_ACT))
        ok = add_item(o, "act", cJSON_CreateString(otc_act_get((otc_act)n->act)->name));
    if (ok && (fields & OTM_F_ACT) && n->agg != OTC_AGG_SUM) {
        if (!otc_agg_name(n->agg)) {
            cJSON_Delete(o);
            return otc_fail(OTC_ERR_ARG, "node %d: unknown aggregation %d", id, n->agg);
        }
        ok = add_item(o, "agg", cJSON_CreateString(otc_agg_name(n->agg)));
    }
    if (ok && (fields & OTM_F_ALPHA)) ok = add_item(o, "alpha", cJSON_CreateNumber(n->alpha));
    if (ok && (fields & OTM_F_SCALE)) ok = add_item(o, "scale", cJSON_CreateNumber(n->scale));
    if (ok && (fields & OTM_F_AXIS)) ok = add_item(o, "axis", cJSON_CreateNumber(n->axis));
    if (ok && (fields & OTM_F_START)) ok = add_item(o, "start", cJSON_CreateNumber(n->start));
    if (ok && (fields & OTM_F_LEN)) ok = add_item(o, "len", cJSON_CreateNumber(n->len));
    if (ok && (fields & OTM_F_WINDOW)) {
        const otc_window *w = &n->win;
        ok = add_item(o, "kernel", int_array((int[]){w->kernel_h, w->kernel_w}, 2)) &&
             add_item(o, "stride", int_array((int[]){w->stride_h, w->stride_w}, 2)) &&
             add_item(o, "padding", int_array((int[]){w->pad_h, w->pad_w}, 2)) &&
             add_item(o, "dilation", int_array((int[]){w->dilation_h, w->dilation_w}, 2)) &&
             add_item(o, "groups", cJSON_CreateNumber(w->groups));
    }
    if (ok && n->op == OTC_OP_PARAMETER) {
        if (!n->value || n->value->size != otc_shape_size(n->shape) ||
            (n->value->size && !n->value->data)) {
            cJSON_Delete(o);
            return otc_fail(OTC_ERR_ARG, "node %d: parameter has no values of its shape", id);
        }
        ok = add_item(o, "trainable", cJSON_CreateBool(n->trainable)) &&
             add_item(o, "offset", cJSON_CreateNumber((double)*offset));
        *offset += n->value->size;
    }
    if (!ok) {
        cJSON_Delete(o);
        return otc_fail(OTC_ERR_NOMEM, "node %d: out of memory building the JSON header", id);
    }
    *out = o;
    return OTC_OK;
}

static otc_status meta_json(const otc_graph *g, cJSON **out) {
    cJSON *meta = cJSON_CreateObject();
    if (!meta) return otc_fail(OTC_ERR_NOMEM, "out of memory building the JSON header");
    int n = otc_graph_meta_count(g);
    for (int i = 0; i < n; i++) {
        const char *key = otc_graph_meta_key(g, i);
        const char *text = key ? otc_graph_meta_get(g, key) : NULL;
        if (!text) {
            cJSON_Delete(meta);
            return otc_fail(OTC_ERR_ARG, "meta entry %d has no key or value", i);
        }
        cJSON *v = NULL;
        if (otc_json_parse(text, strlen(text), OTC_JSON_VALUES_LARGE, &v) != OTC_OK) {
            cJSON_Delete(meta);
            return otc_fail_context(OTC_ERR_ARG, "meta \"%s\": value is not valid JSON text", key);
        }
        if (!add_item(meta, key, v)) {
            cJSON_Delete(meta);
            return otc_fail(OTC_ERR_NOMEM, "out of memory building the JSON header");
        }
    }
    *out = meta;
    return OTC_OK;
}

/* The JSON header text (caller frees with cJSON_free) and the total parameter float count. */
static otc_status header_json(const otc_graph *g, char **text, uint64_t *n_floats) {
    int n = otc_graph_size(g);
    if (n < 0 || n > OTC_MAX_NODES)
        return otc_fail(OTC_ERR_ARG, "graph has %d nodes (the format allows %d)", n, OTC_MAX_NODES);
    cJSON *root = cJSON_CreateObject();
    cJSON *nodes = cJSON_CreateArray();
    cJSON *outputs = cJSON_CreateArray();
    bool ok = root && add_item(root, "format", cJSON_CreateString("otm")) &&
              add_item(root, "version", cJSON_CreateNumber(OTM_VERSION)) &&
              add_item(root, "nodes", nodes);
    nodes = NULL; /* owned by root now, or already freed by add_item */
    ok = ok && add_item(root, "outputs", outputs);
    outputs = NULL;
    if (!ok) {
        cJSON_Delete(root);
        return otc_fail(OTC_ERR_NOMEM, "out of memory building the JSON header");
    }
    nodes = cJSON_GetObjectItemCaseSensitive(root, "nodes");
    outputs = cJSON_GetObjectItemCaseSensitive(root, "outputs");

    uint64_t offset = 0;
    otc_status st = OTC_OK;
    for (int i = 0; i < n && st == OTC_OK; i++) {
        cJSON *o = NULL;
        st = node_json(g, i, &offset, &o);
        if (st == OTC_OK && !cJSON_AddItemToArray(nodes, o)) {
            cJSON_Delete(o);
            st = otc_fail(OTC_ERR_NOMEM, "out of memory building the JSON header");
        }
    }
    int n_out = otc_graph_output_count(g);
    for (int i = 0; i < n_out && st == OTC_OK; i++) {
        cJSON *x = cJSON_CreateNumber(otc_graph_output(g, i));
        if (!x || !cJSON_AddItemToArray(outputs, x)) {
            cJSON_Delete(x);
            st = otc_fail(OTC_ERR_NOMEM, "out of memory building the JSON header");
        }
    }
    cJSON *meta = NULL;
    if (st == OTC_OK) st = meta_json(g, &meta);
    if (st == OTC_OK && !add_item(root, "meta", meta))
        st = otc_fail(OTC_ERR_NOMEM, "out of memory building the JSON header");
    if (st == OTC_OK) {
        *text = cJSON_PrintUnformatted(root);
        if (!*text) st = otc_fail(OTC_ERR_NOMEM, "out of memory printing the JSON header");
    }
    cJSON_Delete(root);
    *n_floats = offset;
    return st;
}

/* The whole file in memory: small models are the norm, and one buffer makes the CRC and a
 * single write simple. */
static otc_status encode(const otc_graph *g, unsigned char **out, size_t *out_len) {
    char *json = NULL;
    uint64_t n_floats = 0;
    otc_status st = header_json(g, &json, &n_floats);
    if (st != OTC_OK) return st;
    size_t jlen = strlen(json);
    if (n_floats > (SIZE_MAX - jlen - OTM_PREFIX_LEN - 12) / 4) {
        cJSON_free(json);
        return otc_fail(OTC_ERR_NOMEM, "model too large to encode (%llu floats)",
                        (unsigned long long)n_floats);
    }
    size_t total = OTM_PREFIX_LEN + jlen + 8 + (size_t)n_floats * 4 + 4;
    unsigned char *buf = malloc(total);
    if (!buf) {
        cJSON_free(json);
        return otc_fail(OTC_ERR_NOMEM, "out of memory (%zu bytes for the model file)", total);
    }
    memcpy(buf, OTM_MAGIC, OTM_MAGIC_LEN);
    otm_put_u32(buf + 8, OTM_VERSION);
    otm_put_u32(buf + 12, 0);
    otm_put_u64(buf + 16, jlen);
    memcpy(buf + OTM_PREFIX_LEN, json, jlen);
    cJSON_free(json);
    unsigned char *p = buf + OTM_PREFIX_LEN + jlen;
    otm_put_u64(p, n_floats);
    p += 8;
    int n = otc_graph_size(g);
    for (int i = 0; i < n; i++) {
        const otc_node *node = otc_graph_node(g, i);
        if (node->op != OTC_OP_PARAMETER) continue;
        for (size_t k = 0; k < node->value->size; k++) {
            uint32_t bits;
            memcpy(&bits, &node->value->data[k], 4);
            otm_put_u32(p, bits);
            p += 4;
        }
    }
    otm_put_u32(p, otc_model_crc32(0, buf, total - 4));
    *out = buf;
    *out_len = total;
    return OTC_OK;
}

otc_status otc_model_save(const otc_graph *g, const char *path) {
    if (!g || !path || !*path) return otc_fail(OTC_ERR_ARG, "otc_model_save: NULL graph or path");
    unsigned char *buf = NULL;
    size_t len = 0;
    /* an executor still training it holds the newest weights */
    otc_status st = otc_graph_sync_from_holder(g);
    if (st == OTC_OK) st = encode(g, &buf, &len);
    if (st != OTC_OK) return otc_fail_context(st, "%s", path);
    /* The shared writer: temporary name beside the target, fsync, rename; on failure the
     * temporary is removed and an existing file is left untouched. */
    st = otc_write_file_atomic(path, buf, len);
    free(buf);
    return st;
}
