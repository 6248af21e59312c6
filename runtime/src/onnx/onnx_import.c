/* ONNX import: the model checked (size, IR version, opset, names, cycles), its nodes put in
 * dependency order and each mapped by its op's handler onto otc graph nodes or folded into
 * constants; initializers become named parameters, graph inputs Input nodes with the batch
 * leading. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"
#include "otc/file.h"
#include "otc/limits.h"
#include "otc/onnx.h"

/* A name from the file for a message: at most 80 bytes, control bytes as '?'. */
static const char *clean(const char *s, char *buf, size_t len) {
    size_t k = 0;
    for (; s && s[k] && k + 1 < len && k < 80; k++)
        buf[k] = (unsigned char)s[k] < 0x20 || s[k] == 0x7f ? '?' : s[k];
    buf[k] = 0;
    return buf;
}

otc_status ox_fail(const ox_ctx *x, otc_status status, const char *fmt, ...) {
    char msg[768], a[96], b[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!x->node) return otc_fail(status, "%s: %s", x->label, msg);
    const Onnx__NodeProto *nd = x->node;
    return otc_fail(status, "%s: node '%s' (#%d, %s, opset %d): %s", x->label,
                    clean(nd->name, a, sizeof a), x->node_index, clean(nd->op_type, b, sizeof b),
                    x->opset, msg);
}

/* ---- the value table ---- */

static const char *value_name(const void *owner, int i) {
    return ((const ox_ctx *)owner)->vals[i].name;
}

static int find_value(const ox_ctx *x, const char *name) {
    return otc_name_index_find(&x->index, name, value_name, x);
}

/* Adds a value named name; fails when the name is already taken. */
static otc_status add_value(ox_ctx *x, const char *name, const char *what, int *out) {
    char a[96];
    if (!name || !*name) return ox_fail(x, OTC_ERR_FORMAT, "%s has no name", what);
    if (strnlen(name, OTC_MAX_NAME_LEN + 1) > OTC_MAX_NAME_LEN)
        return ox_fail(x, OTC_ERR_FORMAT, "%s: name longer than %d bytes", what, OTC_MAX_NAME_LEN);
    if (find_value(x, name) >= 0)
        return ox_fail(x, OTC_ERR_FORMAT, "%s: name '%s' is defined twice", what,
                       clean(name, a, sizeof a));
    if (x->n_vals == x->cap_vals) {
        int cap = x->cap_vals ? 2 * x->cap_vals : 64;
        ox_value *v = realloc(x->vals, (size_t)cap * sizeof *v);
        if (!v) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        x->vals = v;
        x->cap_vals = cap;
    }
    ox_value *v = &x->vals[x->n_vals];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->id = v->fw = v->fb = -1;
    v->producer = v->time = v->dir = -1;
    if (otc_name_index_add(&x->index, x->n_vals, value_name, x) != OTC_OK)
        return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    *out = x->n_vals++;
    return OTC_OK;
}

int ox_find_value(const ox_ctx *x, const char *name) {
    return find_value(x, name);
}

ox_value *ox_in(ox_ctx *x, int i) {
    if (i < 0 || (size_t)i >= x->node->n_input || !x->node->input[i][0]) return NULL;
    int k = find_value(x, x->node->input[i]);
    return k >= 0 ? &x->vals[k] : NULL;
}

otc_status ox_need(ox_ctx *x, int i, ox_value **v) {
    *v = ox_in(x, i);
    if (!*v) return ox_fail(x, OTC_ERR_FORMAT, "input %d is missing", i);
    return OTC_OK;
}

ox_value *ox_out(ox_ctx *x, int i) {
    if (i < 0 || (size_t)i >= x->node->n_output || !x->node->output[i][0]) return NULL;
    int k = find_value(x, x->node->output[i]);
    return k >= 0 ? &x->vals[k] : NULL;
}

otc_status ox_built(ox_ctx *x, otc_id id) {
    if (id >= 0) return OTC_OK;
    char msg[600];
    snprintf(msg, sizeof msg, "%s", otc_last_error());
    return ox_fail(x, OTC_ERR_UNSUPPORTED, "%s", msg);
}

otc_status ox_set_node(ox_ctx *x, int i, otc_id id) {
    otc_status st = ox_built(x, id);
    if (st) return st;
    ox_value *v = ox_out(x, i);
    if (!v) return OTC_OK; /* an output nobody named */
    v->id = id;
    v->defined = true;
    /* Name the node after its ONNX value when it has no name yet, so `otc viz` and messages
     * speak the file's names; a clash (a name taken by a parameter) only leaves it unnamed. */
    if (!otc_graph_node(x->g, id)->name && otc_graph_find(x->g, v->name) < 0)
        otc_graph_set_name(x->g, id, v->name);
    return OTC_OK;
}

otc_status ox_set_const(ox_ctx *x, int i, ox_const *c) {
    ox_value *v = ox_out(x, i);
    if (!v) {
        ox_const_free(c);
        return OTC_OK;
    }
    ox_const_free(v->c);
    v->c = c;
    v->defined = true;
    return OTC_OK;
}

/* base, or base#k for the first free k. */
static const char *unique_name(const otc_graph *g, const char *base, char *buf, size_t len) {
    if (otc_graph_find(g, base) < 0) return base;
    for (int k = 1;; k++) {
        snprintf(buf, len, "%.4000s#%d", base, k);
        if (otc_graph_find(g, buf) < 0) return buf;
    }
}

otc_id ox_param_new(ox_ctx *x, const char *base, otc_shape shape, const float *data,
                    bool trainable) {
    char buf[OTC_MAX_NAME_LEN + 16];
    otc_id id =
        otc_param(x->g, base ? unique_name(x->g, base, buf, sizeof buf) : NULL, shape, data);
    if (id >= 0) otc_graph_set_trainable(x->g, id, trainable);
    return id;
}

otc_id ox_param_of(ox_ctx *x, ox_value *v) {
    if (v->id >= 0) return v->id;
    if (!v->c || v->c->rank > OTC_MAX_DIMS) {
        ox_fail(x, OTC_ERR_UNSUPPORTED, "'%.80s' is not a constant of rank <= %d", v->name,
                OTC_MAX_DIMS);
        return -1;
    }
    otc_shape sh = {.ndim = v->c->rank};
    for (int d = 0; d < sh.ndim; d++) sh.dim[d] = (int)v->c->dim[d];
    if (v->c->n == 0) {
        ox_fail(x, OTC_ERR_UNSUPPORTED, "'%.80s' is an empty tensor", v->name);
        return -1;
    }
    float *data = v->c->f;
    if (!data) { /* an integer constant used as data */
        data = malloc(v->c->n * sizeof *data);
        if (!data) {
            ox_fail(x, OTC_ERR_NOMEM, "out of memory");
            return -1;
        }
        for (size_t k = 0; k < v->c->n; k++) data[k] = (float)ox_const_get(v->c, k);
    }
    v->id = ox_param_new(x, v->name, sh, data, v->init);
    if (data != v->c->f) free(data);
    if (v->id < 0) ox_built(x, -1);
    return v->id;
}

int ox_dims(const ox_ctx *x, const ox_value *v, int64_t *dim) {
    if (v->c) {
        memcpy(dim, v->c->dim, sizeof v->c->dim);
        return v->c->rank;
    }
    otc_shape s = otc_graph_node(x->g, v->id)->shape;
    for (int d = 0; d < s.ndim; d++) dim[d] = s.dim[d] == OTC_BATCH ? OX_BATCH : s.dim[d];
    return s.ndim;
}

/* ---- attributes ---- */

const Onnx__AttributeProto *ox_attr(const ox_ctx *x, const char *name) {
    for (size_t k = 0; k < x->node->n_attribute; k++)
        if (x->node->attribute[k]->name && !strcmp(x->node->attribute[k]->name, name))
            return x->node->attribute[k];
    return NULL;
}

otc_status ox_attr_int(const ox_ctx *x, const char *name, int64_t def, int64_t *out) {
    const Onnx__AttributeProto *a = ox_attr(x, name);
    *out = def;
    if (!a) return OTC_OK;
    if (!a->has_i) return ox_fail(x, OTC_ERR_FORMAT, "attribute %s is not an integer", name);
    *out = a->i;
    return OTC_OK;
}

otc_status ox_attr_float(const ox_ctx *x, const char *name, float def, float *out) {
    const Onnx__AttributeProto *a = ox_attr(x, name);
    *out = def;
    if (!a) return OTC_OK;
    if (!a->has_f) return ox_fail(x, OTC_ERR_FORMAT, "attribute %s is not a float", name);
    *out = a->f;
    return OTC_OK;
}

otc_status ox_attr_ints(const ox_ctx *x, const char *name, int *n, const int64_t **v) {
    const Onnx__AttributeProto *a = ox_attr(x, name);
    *n = 0;
    *v = NULL;
    if (!a) return OTC_OK;
    if (a->n_ints > OX_MAX_ATTR_INTS)
        return ox_fail(x, OTC_ERR_FORMAT, "attribute %s has %zu values (at most %d)", name,
                       a->n_ints, OX_MAX_ATTR_INTS);
    *n = (int)a->n_ints;
    *v = a->ints;
    return OTC_OK;
}

otc_status ox_attr_str(const ox_ctx *x, const char *name, const char *def, char *buf, size_t len) {
    const Onnx__AttributeProto *a = ox_attr(x, name);
    snprintf(buf, len, "%s", def);
    if (!a) return OTC_OK;
    if (!a->has_s) return ox_fail(x, OTC_ERR_FORMAT, "attribute %s is not a string", name);
    size_t n = a->s.len < len - 1 ? a->s.len : len - 1;
    memcpy(buf, a->s.data, n);
    buf[n] = 0;
    return OTC_OK;
}

/* ---- the model ---- */

static otc_status check_opset(ox_ctx *x, const Onnx__ModelProto *m) {
    if (!m->has_ir_version || m->ir_version < OX_MIN_IR || m->ir_version > OX_MAX_IR)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "IR version %lld (otc reads %d to %d)",
                       (long long)m->ir_version, OX_MIN_IR, OX_MAX_IR);
    x->opset = -1;
    for (size_t k = 0; k < m->n_opset_import; k++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[k];
        const char *dom = o->domain ? o->domain : "";
        if (*dom && strcmp(dom, "ai.onnx")) continue; /* other domains: their nodes are refused */
        x->opset = o->has_version && o->version >= 0 && o->version < 1000 ? (int)o->version : 0;
    }
    if (x->opset < OX_MIN_OPSET || x->opset > OX_MAX_OPSET)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "opset %d of the default domain (otc reads %d to %d)", x->opset,
                       OX_MIN_OPSET, OX_MAX_OPSET);
    if (!m->graph) return ox_fail(x, OTC_ERR_FORMAT, "the model has no graph");
    return OTC_OK;
}

/* otc's export writes each Delay D as an input "state_in:D" and an output "state_out:D" (the
 * caller carries the state): such a pair is read back as the Delay. K of "state_in:K" when the
 * graph also outputs "state_out:K" and K names no other value; else NULL. */
static const char *state_key(const ox_ctx *x, const char *name) {
    static const char in[] = "state_in:", out[] = "state_out:";
    if (!name || strncmp(name, in, sizeof in - 1)) return NULL;
    const char *key = name + sizeof in - 1;
    if (!*key || find_value(x, key) >= 0) return NULL;
    for (size_t k = 0; k < x->gp->n_output; k++) {
        const char *o = x->gp->output[k]->name;
        if (o && !strncmp(o, out, sizeof out - 1) && !strcmp(o + sizeof out - 1, key)) return key;
    }
    return NULL;
}

/* A graph input that is not an initializer: an Input node [B, dims 1..]; a sequence (time
 * axis `time`, 0 or 1) is one step of it: [B, dims] without the time axis. */
static otc_status add_input(ox_ctx *x, const Onnx__ValueInfoProto *vi, int k, int time) {
    char a[96];
    const char *nm = clean(vi->name, a, sizeof a);
    const Onnx__TypeProto *t = vi->type;
    if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "input '%s' is not a tensor", nm);
    const Onnx__TypeProto__Tensor *tt = t->tensor_type;
    if (!tt->has_elem_type || tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "input '%s' has element type %d (float is read)", nm,
                       tt->has_elem_type ? tt->elem_type : 0);
    const Onnx__TensorShapeProto *sp = tt->shape;
    if (!sp || sp->n_dim < 1 || sp->n_dim > OTC_MAX_DIMS || (time >= 0 && sp->n_dim != 3))
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "input '%s' has rank %d (1 to %d with the batch leading; a sequence: 3)", nm,
                       sp ? (int)sp->n_dim : -1, OTC_MAX_DIMS);
    otc_shape sh = {.ndim = (int)sp->n_dim - (time >= 0)};
    sh.dim[0] = OTC_BATCH;
    for (size_t d = 0, gd = 0; d < sp->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dm = sp->dim[d];
        bool lit = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        if ((int)d == time) continue; /* a step has no time axis */
        if (gd++ == 0) {
            int64_t b = lit && dm->dim_value > 0 ? dm->dim_value : -1;
            if (k == 0 || x->batch != b) x->batch = k == 0 ? b : -1;
            continue;
        }
        if (!lit || dm->dim_value < 1 || dm->dim_value > OTC_MAX_DIM)
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "input '%s': dimension %zu is not a fixed size in 1 .. %d (only the "
                           "first, the batch, may be symbolic)",
                           nm, d, OTC_MAX_DIM);
        sh.dim[gd - 1] = (int)dm->dim_value;
    }
    uint64_t per = 1;
    for (int d = 1; d < sh.ndim && per <= OTC_MAX_ELEMS; d++) per *= (uint64_t)sh.dim[d];
    if (per > OTC_MAX_ELEMS) /* each factor < 2^25, so no overflow before the check */
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "input '%s' has more than %llu elements a sample",
                       nm, (unsigned long long)OTC_MAX_ELEMS);
    int v = 0;
    otc_status st = add_value(x, vi->name, "graph input", &v);
    if (st) return st;
    const char *key = state_key(x, vi->name);
    otc_id id = key ? otc_delay(x->g, key, sh) : otc_input(x->g, vi->name, sh);
    x->vals[v].delay = key != NULL;
    if (id < 0) return ox_built(x, id);
    x->vals[v].id = id;
    x->vals[v].defined = true;
    x->vals[v].time = time;
    return OTC_OK;
}

/* Registers initializers, inputs and every node output; checks every node input exists. */
static otc_status register_values(ox_ctx *x, const Onnx__GraphProto *gp) {
    otc_status st;
    if (gp->n_sparse_initializer)
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "sparse initializers are not read");
    for (size_t k = 0; k < gp->n_initializer; k++) {
        int v = 0;
        const Onnx__TensorProto *t = gp->initializer[k];
        if ((st = add_value(x, t->name, "initializer", &v))) return st;
        if ((st = ox_const_from_tensor(x, t, &x->vals[v].c))) return st;
        x->vals[v].init = x->vals[v].defined = true;
    }
    for (size_t k = 0, n_in = 0; k < gp->n_input; k++) {
        const Onnx__ValueInfoProto *vi = gp->input[k];
        if (vi->name && find_value(x, vi->name) >= 0) {
            int v = find_value(x, vi->name);
            if (x->vals[v].init) continue; /* an initializer listed as an input (IR < 4) */
        }
        int time = vi->name ? ox_input_time_axis(gp, vi->name) : -1;
        if ((st = add_input(x, vi, (int)n_in++, time))) return st;
    }
    if (gp->n_node > OTC_MAX_NODES)
        return ox_fail(x, OTC_ERR_FORMAT, "%zu nodes (at most %d)", gp->n_node, OTC_MAX_NODES);
    for (size_t i = 0; i < gp->n_node; i++) {
        x->node = gp->node[i];
        x->node_index = (int)i;
        for (size_t o = 0; o < x->node->n_output; o++) {
            int v = 0;
            if (!x->node->output[o][0]) continue;
            if ((st = add_value(x, x->node->output[o], "output", &v))) return st;
            x->vals[v].producer = (int)i;
        }
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        char a[96];
        x->node = gp->node[i];
        x->node_index = (int)i;
        for (size_t k = 0; k < x->node->n_input; k++) {
            if (!x->node->input[k][0]) continue;
            int v = find_value(x, x->node->input[k]);
            if (v < 0)
                return ox_fail(x, OTC_ERR_FORMAT, "input '%s' is not defined anywhere in the graph",
                               clean(x->node->input[k], a, sizeof a));
            x->vals[v].uses++;
        }
    }
    x->node = NULL;
    return OTC_OK;
}

/* Kahn's order of the nodes; a cycle is reported naming a node on it. */
static otc_status node_order(ox_ctx *x, const Onnx__GraphProto *gp, int *order) {
    int n = (int)gp->n_node;
    int *deg = calloc((size_t)n + 1, sizeof *deg);
    int *start = calloc((size_t)x->n_vals + 1, sizeof *start);
    int *cons = NULL;
    otc_status st = OTC_OK;
    if (!deg || !start) {
        st = ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        goto done;
    }
    size_t edges = 0;
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < gp->node[i]->n_input; k++) {
            if (!gp->node[i]->input[k][0]) continue;
            int v = find_value(x, gp->node[i]->input[k]);
            if (x->vals[v].producer < 0) continue;
            deg[i]++;
            start[v + 1]++;
            edges++;
        }
    for (int v = 0; v < x->n_vals; v++) start[v + 1] += start[v];
    cons = malloc((edges ? edges : 1) * sizeof *cons);
    int *fill = calloc((size_t)x->n_vals + 1, sizeof *fill);
    if (!cons || !fill) {
        free(fill);
        st = ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < gp->node[i]->n_input; k++) {
            if (!gp->node[i]->input[k][0]) continue;
            int v = find_value(x, gp->node[i]->input[k]);
            if (x->vals[v].producer < 0) continue;
            cons[start[v] + fill[v]++] = i;
        }
    free(fill);
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++)
        if (!deg[i]) order[tail++] = i;
    while (head < tail) {
        const Onnx__NodeProto *nd = gp->node[order[head++]];
        for (size_t o = 0; o < nd->n_output; o++) {
            if (!nd->output[o][0]) continue;
            int v = find_value(x, nd->output[o]);
            for (int e = start[v]; e < start[v + 1]; e++)
                if (--deg[cons[e]] == 0) order[tail++] = cons[e];
        }
    }
    if (tail < n) {
        for (int i = 0; i < n; i++)
            if (deg[i]) {
                x->node = gp->node[i];
                x->node_index = i;
                break;
            }
        st = ox_fail(x, OTC_ERR_CYCLE, "the graph has a cycle through this node");
        x->node = NULL;
    }
done:
    free(deg);
    free(start);
    free(cons);
    return st;
}

static otc_status import_node(ox_ctx *x) {
    const Onnx__NodeProto *nd = x->node;
    char a[96];
    if (nd->domain && *nd->domain && strcmp(nd->domain, "ai.onnx"))
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "domain '%s' (only the default domain is read)",
                       clean(nd->domain, a, sizeof a));
    for (size_t k = 0; k < nd->n_attribute; k++)
        if (nd->attribute[k]->g || nd->attribute[k]->n_graphs)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "nested graphs (If, Loop, Scan) are not read");
    const ox_match *m = x->match ? &x->match[x->node_index] : NULL;
    if (m && m->kind == OX_MATCH_INNER) return OTC_OK; /* computed by a later node's match */
    if (m && m->kind != OX_MATCH_NONE) return ox_match_build(x, m);
    bool sequence = ox_is_recurrent(nd->op_type);
    for (size_t k = 0; k < nd->n_input; k++) {
        if (!nd->input[k][0]) continue;
        const ox_value *in = &x->vals[find_value(x, nd->input[k])];
        sequence = sequence || in->time >= 0 || in->dir >= 0;
        if (!in->defined)
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "input '%s' is an output otc does not compute (an optional output of "
                           "an earlier node)",
                           clean(nd->input[k], a, sizeof a));
    }
    ox_handler h = nd->op_type ? ox_find_op(nd->op_type) : NULL;
    if (!h && ox_match_only(nd->op_type))
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "read only as part of an activation or NEAT neuron, as otc's export writes "
                       "them (otc's graph has no %s op of its own)",
                       nd->op_type);
    if (!h && !ox_is_recurrent(nd->op_type))
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "op not supported (otc reads: %s)",
                       ox_supported_ops);
    otc_status st = sequence ? ox_op_on_sequence(x, h) : h(x);
    if (st) return st;
    if (nd->n_output < 1 || !ox_out(x, 0) || !ox_out(x, 0)->defined)
        return ox_fail(x, OTC_ERR_FORMAT, "the node has no first output");
    return OTC_OK;
}

/* The value of the Delay read from "state_in:key", or -1. */
static int state_input(const ox_ctx *x, const char *key) {
    char name[OTC_MAX_NAME_LEN + 16];
    snprintf(name, sizeof name, "state_in:%s", key);
    int v = find_value(x, name);
    return v >= 0 && x->vals[v].delay ? v : -1;
}

static otc_status mark_outputs(ox_ctx *x, const Onnx__GraphProto *gp) {
    char a[96];
    if (gp->n_output < 1) return ox_fail(x, OTC_ERR_FORMAT, "the graph has no outputs");
    for (size_t k = 0; k < gp->n_output; k++) {
        const char *name = gp->output[k]->name;
        int v = name ? find_value(x, name) : -1;
        int d = v >= 0 && !strncmp(name, "state_out:", 10) ? state_input(x, name + 10) : -1;
        if (d >= 0 && x->vals[v].defined && !x->vals[v].c) {
            /* the Delay's next value, not an output */
            if (otc_graph_set_input(x->g, x->vals[d].id, 0, x->vals[v].id)) return ox_built(x, -1);
            continue;
        }
        if (v < 0 || !x->vals[v].defined)
            return ox_fail(x, OTC_ERR_FORMAT, "graph output '%s' is not computed by any node",
                           clean(name, a, sizeof a));
        ox_value *val = &x->vals[v];
        if (val->c)
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "graph output '%s' is a constant (it does not depend on an input)",
                           clean(name, a, sizeof a));
        if (val->n_stack > 1)
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "graph output '%s' is several layers' states (output one of them)",
                           clean(name, a, sizeof a));
        otc_id id = val->id;
        const otc_node *n = otc_graph_node(x->g, id);
        if (n->name && strcmp(n->name, name)) {
            /* Another value's node (an Identity of it): a named copy, so the output keeps
             * the file's name. */
            id = otc_activation(x->g, OTC_OP_IDENTITY, id, 0);
            if (id < 0) return ox_built(x, id);
        }
        if (otc_graph_set_name(x->g, id, name) || otc_graph_mark_output(x->g, id))
            return ox_built(x, -1);
    }
    return OTC_OK;
}

otc_status otc_onnx_import(const void *data, size_t len, const char *label, const char *dir,
                           otc_graph **out) {
    ox_ctx x = {.label = label ? label : "onnx", .dir = dir, .batch = -1};
    if (out) *out = NULL;
    if (!data || !out) return otc_fail(OTC_ERR_ARG, "otc_onnx_import: no data or no output");
    if (len > OTC_MAX_ONNX_BYTES)
        return ox_fail(&x, OTC_ERR_FORMAT, "%zu bytes is more than the %zu an ONNX model may have",
                       len, (size_t)OTC_MAX_ONNX_BYTES);
    /* protobuf-c's unpacked copy is about the size of the file again. */
    otc_status st = otc_memory_check((uint64_t)len * 3, "parsing the ONNX model");
    if (st) return otc_fail_context(st, "%s", x.label);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, data);
    if (!m) return ox_fail(&x, OTC_ERR_FORMAT, "not an ONNX model (the protobuf does not parse)");
    int *order = NULL;
    if ((st = check_opset(&x, m))) goto done;
    const Onnx__GraphProto *gp = m->graph;
    if (!(x.g = otc_graph_new())) {
        st = ox_fail(&x, OTC_ERR_NOMEM, "out of memory");
        goto done;
    }
    x.gp = gp;
    if ((st = register_values(&x, gp)) || (st = ox_recurrent_directions(&x))) goto done;
    if (!(order = malloc((gp->n_node + 1) * sizeof *order))) {
        st = ox_fail(&x, OTC_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((st = node_order(&x, gp, order))) goto done;
    if ((st = ox_match_graph(&x, order))) goto done;
    for (size_t i = 0; i < gp->n_node && !st; i++) {
        x.node = gp->node[order[i]];
        x.node_index = order[i];
        st = import_node(&x);
    }
    x.node = NULL;
    if (!st && otc_graph_input_count(x.g) < 1)
        st = ox_fail(&x, OTC_ERR_UNSUPPORTED, "the graph has no float input");
    if (!st) st = mark_outputs(&x, gp);
done:
    free(order);
    ox_match_free(&x);
    for (int v = 0; v < x.n_vals; v++) {
        ox_const_free(x.vals[v].c);
        free(x.vals[v].stack);
    }
    free(x.vals);
    otc_name_index_free(&x.index);
    onnx__model_proto__free_unpacked(m, NULL);
    if (st) {
        otc_graph_free(x.g);
        return st;
    }
    *out = x.g;
    return OTC_OK;
}
