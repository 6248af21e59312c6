/* Graph -> Graphviz DOT text (otc/dot.h): node styles by op kind, inputs and outputs on
 * opposite sides, parameters folded into their users, weight-styled edges, depth groups. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/dot.h"
#include "otc/file.h"
#include "otc/text.h"

/* More labelled edges than this and the numbers drown the picture; tooltips still carry
 * every weight. */
#define MAX_LABELLED_EDGES 24
/* An Input wider than this is drawn as one node, not one port per column. */
#define MAX_PORTS 64

static bool is_param(const otc_graph *g, otc_id id) {
    const otc_node *n = otc_graph_node(g, id);
    return n && n->op == OTC_OP_PARAMETER;
}

/* Does slot j of node n carry data (as opposed to a parameter or the recurrent edge)? */
static bool data_edge(const otc_graph *g, const otc_node *n, int j) {
    if (n->op == OTC_OP_DELAY) return false;
    return !is_param(g, n->inputs[j]);
}

otc_status otc_graph_depths(const otc_graph *g, int *depth) {
    if (!g || !depth) return otc_fail(OTC_ERR_ARG, "graph depths: NULL argument");
    int n = otc_graph_size(g);
    if (n == 0) return OTC_OK;
    otc_id *order = malloc((size_t)n * sizeof *order);
    if (!order) return otc_fail(OTC_ERR_NOMEM, "graph depths: out of memory");
    otc_status st = otc_graph_topo_order(g, order);
    if (st != OTC_OK) {
        free(order);
        return st;
    }
    for (int i = 0; i < n; i++) depth[i] = 0;
    for (int k = 0; k < n; k++) {
        otc_id id = order[k];
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op == OTC_OP_PARAMETER) {
            depth[id] = -1;
            continue;
        }
        int d = 0;
        for (int j = 0; j < nd->n_inputs; j++) {
            if (!data_edge(g, nd, j)) continue;
            otc_id src = nd->inputs[j];
            if (src >= 0 && src < n && depth[src] + 1 > d) d = depth[src] + 1;
        }
        depth[id] = d;
    }
    free(order);
    return OTC_OK;
}

const char *otc_dot_weight_style(float w, float max_abs, char *buf, size_t len) {
    if (!isfinite(w) || w == 0) {
        snprintf(buf, len, "color=\"#bbbbbb\" style=dashed penwidth=0.6");
        return buf;
    }
    double m = isfinite(max_abs) && max_abs > 0 ? fabs(w) / max_abs : 1;
    if (m > 1) m = 1;
    /* Blend from a light grey towards full colour, so weak weights recede. */
    static const int pos[3] = {0x21, 0x66, 0xac}, neg[3] = {0xb2, 0x18, 0x2b};
    const int *c = w > 0 ? pos : neg;
    double t = 0.3 + 0.7 * m;
    int rgb[3];
    for (int i = 0; i < 3; i++) rgb[i] = (int)lround(0xd0 + (c[i] - 0xd0) * t);
    snprintf(buf, len, "color=\"#%02x%02x%02x\" penwidth=%.2f", rgb[0], rgb[1], rgb[2],
             0.5 + 3.5 * m);
    return buf;
}

typedef struct {
    const otc_graph *g;
    const otc_dot_options *opt;
    otc_text b;
    int n;
    bool *is_output;
    bool *ports;      /* Input drawn with one port per column */
    int n_weighted;   /* edges that get a weight style */
    float neuron_max; /* largest |w| over Neuron weights */
    float matmul_max; /* largest RMS over MatMul parameter operands */
} dot_ctx;

static const char *fill_for(const otc_node *nd, bool output) {
    if (output) return "#ffe0b3";
    switch (otc_op_get(nd->op)->kind) {
    case OTC_OPKIND_SOURCE:
        return nd->op == OTC_OP_INPUT ? "#d9f2d9" : "#eeeeee";
    case OTC_OPKIND_NEURON:
        return "#dde8f7";
    case OTC_OPKIND_LOSS:
        return "#f7d4d4";
    case OTC_OPKIND_STATE:
        return "#fff5cc";
    case OTC_OPKIND_ELEMENTWISE:
        return "#ffffff";
    case OTC_OPKIND_STRUCTURAL:
        return "#f4f0fa";
    }
    return "#ffffff";
}

static void put_name(dot_ctx *c, otc_id id) {
    const otc_node *nd = otc_graph_node(c->g, id);
    if (nd->name && *nd->name)
        otc_text_xml(&c->b, nd->name);
    else
        otc_text_printf(&c->b, "#%d", (int)id);
}

static void put_shape(dot_ctx *c, otc_shape s) {
    char buf[64];
    otc_text_xml(&c->b, otc_shape_str(s, buf, sizeof buf));
}

static float rms_of(const otc_tensor *t) {
    if (!t || !t->data || t->size == 0) return 0;
    double s = 0;
    for (size_t i = 0; i < t->size; i++) s += (double)t->data[i] * t->data[i];
    return (float)sqrt(s / (double)t->size);
}

static float mean_of(const otc_tensor *t) {
    if (!t || !t->data || t->size == 0) return 0;
    double s = 0;
    for (size_t i = 0; i < t->size; i++) s += t->data[i];
    return (float)(s / (double)t->size);
}

/* The Neuron's weight for source slot j (j >= 2), if the graph holds one. */
static bool neuron_weight(const otc_graph *g, const otc_node *nd, int j, float *w) {
    const otc_node *wn = otc_graph_node(g, nd->inputs[0]);
    if (!wn || !wn->value || !wn->value->data || (size_t)(j - 2) >= wn->value->size) return false;
    *w = wn->value->data[j - 2];
    return true;
}

static float neuron_bias(const otc_graph *g, const otc_node *nd) {
    const otc_node *bn = otc_graph_node(g, nd->inputs[1]);
    if (!bn || !bn->value || !bn->value->data || bn->value->size < 1) return 0;
    return bn->value->data[0];
}

/* The parameter operand of a MatMul, or -1. */
static otc_id matmul_param(const otc_graph *g, const otc_node *nd) {
    if (nd->op != OTC_OP_MATMUL || nd->n_inputs != 2) return -1;
    if (is_param(g, nd->inputs[1])) return nd->inputs[1];
    if (is_param(g, nd->inputs[0])) return nd->inputs[0];
    return -1;
}

static void scan_weights(dot_ctx *c) {
    for (otc_id id = 0; id < c->n; id++) {
        const otc_node *nd = otc_graph_node(c->g, id);
        if (nd->op == OTC_OP_NEURON) {
            for (int j = 2; j < nd->n_inputs; j++) {
                float w;
                if (!neuron_weight(c->g, nd, j, &w)) continue;
                c->n_weighted++;
                if (isfinite(w) && fabsf(w) > c->neuron_max) c->neuron_max = fabsf(w);
            }
        }
        otc_id p = matmul_param(c->g, nd);
        if (p >= 0) {
            c->n_weighted++;
            float r = rms_of(otc_graph_node(c->g, p)->value);
            if (isfinite(r) && r > c->matmul_max) c->matmul_max = r;
        }
    }
}

static void emit_input_with_ports(dot_ctx *c, otc_id id, const otc_node *nd) {
    int cols = nd->shape.dim[nd->shape.ndim - 1];
    otc_text_printf(&c->b,
                    "  n%d [shape=plain label=<<TABLE BORDER=\"0\" CELLBORDER=\"1\" "
                    "CELLSPACING=\"0\" CELLPADDING=\"3\" BGCOLOR=\"#d9f2d9\">"
                    "<TR><TD><B>",
                    (int)id);
    put_name(c, id);
    otc_text_printf(&c->b, "</B><BR/><FONT POINT-SIZE=\"8\">input ");
    put_shape(c, nd->shape);
    otc_text_printf(&c->b, "</FONT></TD></TR>");
    for (int k = 0; k < cols; k++)
        otc_text_printf(&c->b, "<TR><TD PORT=\"c%d\" BGCOLOR=\"#f2fbf2\">%d</TD></TR>", k, k);
    otc_text_printf(&c->b, "</TABLE>>];\n");
}

static void emit_node(dot_ctx *c, otc_id id) {
    const otc_node *nd = otc_graph_node(c->g, id);
    const otc_op_info *info = otc_op_get(nd->op);
    if (c->ports[id]) {
        emit_input_with_ports(c, id, nd);
        return;
    }
    bool out = c->is_output[id];
    const char *shape = nd->op == OTC_OP_NEURON                       ? "ellipse"
                        : nd->op == OTC_OP_PARAMETER                  ? "note"
                        : nd->op == OTC_OP_DELAY                      ? "diamond"
                        : otc_op_get(nd->op)->kind == OTC_OPKIND_LOSS ? "octagon"
                                                                      : "box";
    otc_text_printf(&c->b, "  n%d [shape=%s style=\"%s\" fillcolor=\"%s\"%s label=<<B>", (int)id,
                    shape, nd->op == OTC_OP_DELAY ? "filled,dashed" : "rounded,filled",
                    fill_for(nd, out), out ? " peripheries=2" : "");
    put_name(c, id);
    otc_text_printf(&c->b, "</B><BR/><FONT POINT-SIZE=\"8\">");
    if (nd->op == OTC_OP_NEURON) {
        const otc_act_info *act = otc_act_get((otc_act)nd->act);
        otc_text_printf(&c->b, "%s b=%+.3g", act ? act->name : "?", (double)neuron_bias(c->g, nd));
        if (nd->scale != 1.0f) otc_text_printf(&c->b, " r=%.3g", (double)nd->scale);
        if (nd->agg != OTC_AGG_SUM && otc_agg_name(nd->agg))
            otc_text_printf(&c->b, " %s", otc_agg_name(nd->agg));
    } else {
        otc_text_printf(&c->b, "%s ", info ? info->name : "?");
        put_shape(c, nd->shape);
        if (nd->op == OTC_OP_SCALE) otc_text_printf(&c->b, " &#215;%.4g", (double)nd->scale);
        if (nd->op == OTC_OP_LEAKY_RELU || nd->op == OTC_OP_ELU)
            otc_text_printf(&c->b, " a=%.3g", (double)nd->alpha);
        char win[96];
        if (*otc_window_str(nd, win, sizeof win)) {
            otc_text_printf(&c->b, "<BR/>");
            otc_text_xml(&c->b, win);
        }
    }
    otc_text_printf(&c->b, "</FONT>");
    /* Folded parameters: one small line each, so an MLP reads as its layers. */
    if (!c->opt->show_params && nd->op != OTC_OP_NEURON)
        for (int j = 0; j < nd->n_inputs; j++) {
            otc_id p = nd->inputs[j];
            if (!is_param(c->g, p)) continue;
            otc_text_printf(&c->b, "<BR/><FONT POINT-SIZE=\"8\" COLOR=\"#555555\">");
            put_name(c, p);
            otc_text_printf(&c->b, " ");
            put_shape(c, otc_graph_node(c->g, p)->shape);
            otc_text_printf(&c->b, "</FONT>");
        }
    otc_text_printf(&c->b, ">];\n");
}

static void emit_edge_head(dot_ctx *c, otc_id src, otc_id dst, int col) {
    otc_text_printf(&c->b, "  n%d", (int)src);
    if (col >= 0 && c->ports[src])
        otc_text_printf(&c->b, ":c%d:%s", col, c->opt->top_down ? "s" : "e");
    otc_text_printf(&c->b, " -> n%d [", (int)dst);
}

static void emit_edges(dot_ctx *c, otc_id id) {
    const otc_node *nd = otc_graph_node(c->g, id);
    bool label_weights = c->opt->weights && c->n_weighted <= MAX_LABELLED_EDGES;
    otc_id mparam = matmul_param(c->g, nd);
    for (int j = 0; j < nd->n_inputs; j++) {
        otc_id src = nd->inputs[j];
        if (src < 0 || src >= c->n) continue;
        if (is_param(c->g, src)) {
            if (!c->opt->show_params) continue;
            emit_edge_head(c, src, id, -1);
            otc_text_printf(&c->b, "style=dashed color=\"#999999\" arrowsize=0.5];\n");
            continue;
        }
        if (nd->op == OTC_OP_DELAY) {
            if (src == id) continue; /* not yet connected */
            /* The recurrent edge must not pull the layout: it points backwards in time. */
            emit_edge_head(c, src, id, -1);
            otc_text_printf(&c->b, "style=dashed color=\"#b08800\" constraint=false "
                                   "tooltip=\"previous step\"];\n");
            continue;
        }
        char style[96] = "";
        char label[64] = "";
        char tip[96] = "";
        int col = -1;
        if (nd->op == OTC_OP_NEURON && j >= 2) {
            const otc_node *s = otc_graph_node(c->g, src);
            col = nd->cols ? nd->cols[j - 2] : 0;
            int width = s->shape.ndim > 0 ? s->shape.dim[s->shape.ndim - 1] : 1;
            float w;
            if (neuron_weight(c->g, nd, j, &w)) {
                snprintf(tip, sizeof tip, "w = %.6g", (double)w);
                if (c->opt->weights) {
                    otc_dot_weight_style(w, c->neuron_max, style, sizeof style);
                    if (label_weights) snprintf(label, sizeof label, "%+.2f", (double)w);
                }
            }
            if (!c->ports[src] && width > 1) {
                size_t l = strlen(label);
                snprintf(label + l, sizeof label - l, "%s[%d]", l ? " " : "", col);
            }
        } else if (nd->op == OTC_OP_ROW_BROADCAST && j == 1) {
            /* only lends its shape */
            snprintf(style, sizeof style, "style=dotted color=\"#aaaaaa\" arrowhead=none");
        } else if (mparam >= 0) {
            const otc_tensor *t = otc_graph_node(c->g, mparam)->value;
            float r = rms_of(t), m = mean_of(t);
            snprintf(tip, sizeof tip, "weights rms %.4g mean %+.4g", (double)r, (double)m);
            if (c->opt->weights) {
                /* A matrix has no single sign: colour by its mean, width by its RMS. */
                char tmp[96];
                otc_dot_weight_style(m >= 0 ? r : -r, c->matmul_max, tmp, sizeof tmp);
                snprintf(style, sizeof style, "%s", tmp);
                if (label_weights) snprintf(label, sizeof label, "rms %.2f", (double)r);
            }
        }
        emit_edge_head(c, src, id, col);
        otc_text_printf(&c->b, "%s", style);
        if (*label) otc_text_printf(&c->b, " label=\"%s\"", label);
        if (*tip) otc_text_printf(&c->b, " tooltip=\"%s\"", tip);
        otc_text_printf(&c->b, "];\n");
    }
}

static bool drawn(const dot_ctx *c, otc_id id) {
    return c->opt->show_params || !is_param(c->g, id);
}

static void emit_rank_groups(dot_ctx *c, const int *depth) {
    if (!c->opt->group_depth) {
        /* Inputs, and constant sources such as NEAT's bias neuron (a neuron without
         * sources), start the drawing. */
        otc_text_printf(&c->b, "  { rank=source;");
        for (otc_id id = 0; id < c->n; id++) {
            const otc_node *nd = otc_graph_node(c->g, id);
            bool source = nd->op == OTC_OP_INPUT || (nd->op == OTC_OP_NEURON && nd->n_inputs == 2);
            if (source && !c->is_output[id]) otc_text_printf(&c->b, " n%d;", (int)id);
        }
        otc_text_printf(&c->b, " }\n  { rank=sink;");
        for (otc_id id = 0; id < c->n; id++)
            if (c->is_output[id] && otc_graph_node(c->g, id)->op != OTC_OP_INPUT)
                otc_text_printf(&c->b, " n%d;", (int)id);
        otc_text_printf(&c->b, " }\n");
        return;
    }
    /* Groups: inputs (depth 0 Inputs), each depth, then every output in the last column. */
    int max_d = 0;
    for (otc_id id = 0; id < c->n; id++)
        if (depth[id] > max_d) max_d = depth[id];
    for (int d = 0; d <= max_d + 1; d++) {
        bool any = false;
        for (otc_id id = 0; id < c->n; id++) {
            if (!drawn(c, id) || depth[id] < 0) continue;
            bool in_group = d == max_d + 1 ? c->is_output[id] : !c->is_output[id] && depth[id] == d;
            if (!in_group) continue;
            if (!any) {
                const char *what = d == max_d + 1 ? "outputs" : d == 0 ? "inputs" : NULL;
                otc_text_printf(&c->b,
                                "  subgraph cluster_%d {\n    rank=same; style=\"rounded,dashed\"; "
                                "color=\"#bbbbbb\"; fontcolor=\"#777777\"; ",
                                d);
                if (what)
                    otc_text_printf(&c->b, "label=\"%s\";\n   ", what);
                else
                    otc_text_printf(&c->b, "label=\"depth %d\";\n   ", d);
                any = true;
            }
            otc_text_printf(&c->b, " n%d;", (int)id);
        }
        if (any) otc_text_printf(&c->b, "\n  }\n");
    }
}

otc_status otc_dot_render(const otc_graph *g, const otc_dot_options *options, char **dot,
                          size_t *len) {
    if (!g || !dot) return otc_fail(OTC_ERR_ARG, "dot: NULL argument");
    *dot = NULL;
    static const otc_dot_options none = {0};
    dot_ctx c = {.g = g, .opt = options ? options : &none, .n = otc_graph_size(g)};
    size_t n = c.n > 0 ? (size_t)c.n : 1;
    int *depth = calloc(n, sizeof *depth);
    c.is_output = calloc(n, sizeof *c.is_output);
    c.ports = calloc(n, sizeof *c.ports);
    otc_status st = OTC_OK;
    if (!depth || !c.is_output || !c.ports) {
        st = otc_fail(OTC_ERR_NOMEM, "dot: out of memory");
        goto done;
    }
    if ((st = otc_graph_depths(g, depth)) != OTC_OK) goto done;
    for (int i = 0; i < otc_graph_output_count(g); i++) {
        otc_id o = otc_graph_output(g, i);
        if (o >= 0 && o < c.n) c.is_output[o] = true;
    }
    /* Ports for a batched [B,k] Input that Neurons read column by column. */
    for (otc_id id = 0; id < c.n; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op != OTC_OP_NEURON) continue;
        for (int j = 2; j < nd->n_inputs; j++) {
            const otc_node *s = otc_graph_node(g, nd->inputs[j]);
            if (s && s->op == OTC_OP_INPUT && s->shape.ndim == 2 && s->shape.dim[0] == OTC_BATCH &&
                s->shape.dim[1] > 1 && s->shape.dim[1] <= MAX_PORTS && !c.is_output[nd->inputs[j]])
                c.ports[nd->inputs[j]] = true;
        }
    }
    scan_weights(&c);

    otc_text_printf(&c.b, "digraph otc {\n  rankdir=%s;\n", c.opt->top_down ? "TB" : "LR");
    if (c.opt->group_depth) otc_text_printf(&c.b, "  newrank=true;\n");
    otc_text_printf(&c.b, "  bgcolor=\"white\"; nodesep=0.25; ranksep=0.6;\n"
                          "  node [fontname=\"Helvetica\" fontsize=10 margin=\"0.08,0.04\"];\n"
                          "  edge [fontname=\"Helvetica\" fontsize=8 color=\"#555555\" "
                          "arrowsize=0.6];\n");
    if (c.opt->title) {
        otc_text_printf(&c.b, "  labelloc=t; fontname=\"Helvetica\"; fontsize=14; label=<<B>");
        otc_text_xml(&c.b, c.opt->title);
        otc_text_printf(&c.b, "</B>>;\n");
    }
    for (otc_id id = 0; id < c.n; id++)
        if (drawn(&c, id)) emit_node(&c, id);
    emit_rank_groups(&c, depth);
    for (otc_id id = 0; id < c.n; id++)
        if (drawn(&c, id)) emit_edges(&c, id);
    otc_text_printf(&c.b, "}\n");
    if (c.b.failed) {
        st = otc_fail(OTC_ERR_NOMEM, "dot: out of memory");
        otc_text_free(&c.b);
        goto done;
    }
    *dot = c.b.text;
    if (len) *len = c.b.len;
done:
    free(depth);
    free(c.is_output);
    free(c.ports);
    if (st != OTC_OK) otc_text_free(&c.b);
    return st;
}

otc_status otc_dot_save(const otc_graph *g, const otc_dot_options *options, const char *path) {
    char *text;
    size_t len;
    otc_status st = otc_dot_render(g, options, &text, &len);
    if (st != OTC_OK) return otc_fail_context(st, "%s", path ? path : "(null)");
    st = otc_write_file_atomic(path, text, len);
    free(text);
    return st;
}
