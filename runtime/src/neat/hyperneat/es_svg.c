/* A picture of an ES-HyperNEAT network at its nodes' coordinates: where the search placed the
 * hidden nodes between the input and output grids, and the links it expressed. */
#include <math.h>
#include <stdlib.h>

#include "otc/file.h"
#include "otc/hyperneat.h"
#include "otc/text.h"

#define SIDE 600.0 /* pixels for [-1, 1] */
#define PAD  20.0

static double px(float v) {
    return PAD + (v + 1.0) / 2.0 * SIDE;
}

otc_status otc_es_save_svg(const otc_es_network *n, const char *title, const char *path) {
    if (!n || !n->net || !path) return otc_fail(OTC_ERR_ARG, "otc_es_save_svg: NULL argument");
    otc_text t = {0};
    otc_text_printf(&t,
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\">\n"
                    "<title>",
                    SIDE + 2 * PAD, SIDE + 2 * PAD);
    otc_text_xml(&t, title ? title : "ES-HyperNEAT network");
    otc_text_printf(&t,
                    ": %d hidden node(s) placed (black), inputs (green squares), outputs "
                    "(orange); links blue positive, red negative, darker heavier</title>\n"
                    "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                    "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
                    "stroke=\"#ccc\"/>\n",
                    n->n_hidden, PAD, PAD, SIDE, SIDE);
    float top = 0;
    for (int k = 0; k < n->net->n_conns; k++) top = fmaxf(top, fabsf(n->net->conns[k].weight));
    for (int k = 0; k < n->net->n_conns; k++) {
        const otc_neat_conn *c = &n->net->conns[k];
        double o = top > 0 ? 0.15 + 0.85 * fabsf(c->weight) / top : 1;
        otc_text_printf(&t,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                        "stroke-opacity=\"%.2f\"/>\n",
                        px(n->x[c->in]), px(n->y[c->in]), px(n->x[c->out]), px(n->y[c->out]),
                        c->weight < 0 ? "#d02020" : "#2050d0", o);
    }
    int total = n->n_inputs + n->n_outputs + n->n_hidden;
    for (int v = 0; v < total; v++) {
        double x = px(n->x[v]), y = px(n->y[v]);
        if (v < n->n_inputs)
            otc_text_printf(&t,
                            "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"none\" "
                            "stroke=\"#208020\"/>\n",
                            x - 4, y - 4);
        else
            otc_text_printf(&t, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"/>\n", x, y,
                            v < n->n_inputs + n->n_outputs ? "2.5" : "4",
                            v < n->n_inputs + n->n_outputs ? "#e08000" : "black");
    }
    otc_text_puts(&t, "</svg>\n");
    size_t len = t.len;
    char *text = otc_text_take(&t);
    if (!text) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", path);
    otc_status s = otc_write_file_atomic(path, text, len);
    free(text);
    return s;
}
