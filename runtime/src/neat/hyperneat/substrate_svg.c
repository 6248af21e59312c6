/* A picture of a painted layered substrate: each grid a panel, left to right from the input,
 * nodes at their coordinates, and the strongest painted links coloured by sign. */
#include <math.h>
#include <stdlib.h>

#include "otc/file.h"
#include "otc/hyperneat.h"
#include "otc/text.h"

#define PANEL 260.0 /* pixels for a grid's [-1, 1]^2 */
#define GAP   70.0  /* between panels */
#define PAD   20.0
/* The most links drawn: the strongest, so a 14,641-link 11x11 substrate stays a picture (and
 * a file of well under 100 KB) instead of a grey square. */
#define MAX_LINKS 700

typedef struct {
    float a; /* |weight| */
    int layer;
    size_t k; /* index into the layer's [target][source] weights */
} link;

static int stronger_first(const void *p, const void *q) {
    const link *a = p, *b = q;
    if (a->a != b->a) return (a->a < b->a) - (a->a > b->a);
    /* ties in painting order, so every libc draws the same links */
    if (a->layer != b->layer) return a->layer - b->layer;
    return (a->k > b->k) - (a->k < b->k);
}

static double node_x(int layer, float x) {
    return PAD + layer * (PANEL + GAP) + (x + 1.0) / 2.0 * PANEL;
}
static double node_y(float y) {
    return PAD + (y + 1.0) / 2.0 * PANEL;
}

/* The painted links (weight not 0) of s, strongest first, in *out (free() it). */
static otc_status sorted_links(otc_substrate *s, link **out, size_t *n) {
    size_t total = 0;
    int n_layers = otc_substrate_layers(s);
    for (int l = 0; l + 1 < n_layers; l++)
        total += (size_t)otc_substrate_size(s, l) * (size_t)otc_substrate_size(s, l + 1);
    link *all = malloc(sizeof *all * (total ? total : 1));
    if (!all) return otc_fail(OTC_ERR_NOMEM, "out of memory for %zu substrate links", total);
    size_t k = 0;
    for (int l = 0; l + 1 < n_layers; l++) {
        const float *w = otc_substrate_weights(s, l);
        size_t m = (size_t)otc_substrate_size(s, l) * (size_t)otc_substrate_size(s, l + 1);
        for (size_t i = 0; i < m; i++)
            if (w[i] != 0.0f && isfinite(w[i])) all[k++] = (link){fabsf(w[i]), l, i};
    }
    qsort(all, k, sizeof *all, stronger_first);
    *out = all;
    *n = k;
    return OTC_OK;
}

otc_status otc_substrate_save_svg(otc_substrate *s, const char *title, const char *path) {
    if (!s || !path) return otc_fail(OTC_ERR_ARG, "otc_substrate_save_svg: NULL argument");
    if (otc_substrate_es_config(s)) return otc_es_save_svg(otc_substrate_es(s), title, path);
    link *links = NULL;
    size_t n = 0;
    otc_status st = sorted_links(s, &links, &n);
    if (st != OTC_OK) return st;
    size_t drawn = n < MAX_LINKS ? n : MAX_LINKS;
    int n_layers = otc_substrate_layers(s);
    otc_text t = {0};
    otc_text_printf(&t,
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\">\n"
                    "<title>",
                    2 * PAD + n_layers * PANEL + (n_layers - 1) * GAP, PANEL + 2 * PAD);
    otc_text_xml(&t, title ? title : "HyperNEAT substrate");
    otc_text_printf(&t,
                    ": %d layer(s), input on the left; the %zu strongest of %zu painted "
                    "link(s), blue positive, red negative, wider and darker heavier</title>\n"
                    "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                    n_layers, drawn, n);
    for (int l = 0; l < n_layers; l++)
        otc_text_printf(&t,
                        "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
                        "stroke=\"#ccc\"/>\n",
                        node_x(l, -1), node_y(-1), PANEL, PANEL);
    /* Weakest first, so the strongest are drawn on top. */
    float top = drawn ? links[0].a : 1;
    for (size_t i = drawn; i-- > 0;) {
        const link *k = &links[i];
        int n_src = otc_substrate_size(s, k->layer);
        float x1, y1, x2, y2, w = otc_substrate_weights(s, k->layer)[k->k];
        otc_substrate_coord(s, k->layer, (int)(k->k % (size_t)n_src), &x1, &y1);
        otc_substrate_coord(s, k->layer + 1, (int)(k->k / (size_t)n_src), &x2, &y2);
        double f = k->a / top;
        otc_text_printf(&t,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                        "stroke-width=\"%.2f\" stroke-opacity=\"%.2f\"/>\n",
                        node_x(k->layer, x1), node_y(y1), node_x(k->layer + 1, x2), node_y(y2),
                        w < 0 ? "#d02020" : "#2050d0", 0.4 + 1.6 * f, 0.15 + 0.85 * f);
    }
    free(links);
    for (int l = 0; l < n_layers; l++)
        for (int v = 0; v < otc_substrate_size(s, l); v++) {
            float x, y;
            otc_substrate_coord(s, l, v, &x, &y);
            otc_text_printf(&t, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
                            node_x(l, x), node_y(y),
                            l == 0              ? "#208020"
                            : l + 1 == n_layers ? "#e08000"
                                                : "black");
        }
    otc_text_puts(&t, "</svg>\n");
    size_t len = t.len;
    char *text = otc_text_take(&t);
    if (!text) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", path);
    st = otc_write_file_atomic(path, text, len);
    free(text);
    return st;
}
