/* `otc viz MODEL.otm -o FILE.{svg,png,dot}`: draws a model with Graphviz. The DOT text comes
 * from otc_dot_render; layout and rendering go through libgvc in-process (no `dot` child). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "otc/dot.h"
#include "otc/otc.h"
#include "otc/plan.h" /* --plan: the compiler's plan (compiler/) */

#ifdef OTC_HAVE_GVC
#include <graphviz/gvc.h>
#endif

const char otc_cmd_viz_summary[] = "draw a model as SVG, PNG or DOT (Graphviz)";

/* Graphviz reports problems through a callback; keep the last message for our error line
 * instead of letting it print in its own format. */
static char gv_message[512];

#ifdef OTC_HAVE_GVC
static int gv_error(char *msg) {
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) n--;
    snprintf(gv_message, sizeof gv_message, "%.*s", (int)n, msg);
    return 0;
}

/* Lays out and renders dot text to `format`; the bytes go to *out (free with free()). */
static int render(const char *dot, const char *format, char **out, size_t *len) {
    gv_message[0] = '\0';
    agseterr(AGERR);
    agseterrf(gv_error);
    GVC_t *gvc = gvContext();
    if (!gvc) return otc_cli_error("viz", "Graphviz: cannot create a context");
    Agraph_t *ag = agmemread(dot);
    int rc = 0;
    if (!ag) {
        rc = otc_cli_error("viz", "Graphviz could not read the drawing: %s", gv_message);
    } else {
        if (gvLayout(gvc, ag, "dot") != 0) {
            rc = otc_cli_error("viz", "Graphviz layout failed: %s", gv_message);
        } else {
            char *data = NULL;
            unsigned int n = 0;
            if (gvRenderData(gvc, ag, format, &data, &n) != 0 || !data) {
                rc = otc_cli_error("viz", "Graphviz cannot render %s here: %s", format,
                                   *gv_message ? gv_message : "no renderer plugin");
            } else {
                /* copy out: Graphviz's buffer must go back through gvFreeRenderData */
                *out = malloc(n ? n : 1);
                if (*out) memcpy(*out, data, n);
                *len = n;
                if (!*out) rc = otc_cli_error("viz", "out of memory");
            }
            gvFreeRenderData(data);
            gvFreeLayout(gvc, ag);
        }
        agclose(ag);
    }
    gvFreeContext(gvc);
    return rc;
}
#endif

/* Graphviz's dot layout grows faster than the drawing: 1,000 nodes and 2,000 edges take
 * about 0.4 s, 3,000 and 6,000 about 6 s, 131,000 nodes minutes. Past this many nodes and
 * edges together SVG and PNG are refused and DOT offered instead. */
#define MAX_LAID_OUT 5000

/* Nodes and edges of a DOT text as otc writes it: one statement a line, an edge's with "->",
 * a node's "ID [attributes]" (the node, edge and graph defaults are no nodes). */
static void drawing_size(const char *dot, long *nodes, long *edges) {
    *nodes = *edges = 0;
    for (const char *p = dot; *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n && (*p == ' ' || *p == '\t')) p++, n--;
        size_t id = 0;
        while (id < n && (p[id] == '_' || (p[id] >= '0' && p[id] <= '9') ||
                          ((p[id] | 0x20) >= 'a' && (p[id] | 0x20) <= 'z')))
            id++;
        bool edge = false;
        for (size_t i = 0; i + 1 < n && !edge; i++) edge = p[i] == '-' && p[i + 1] == '>';
        if (edge) {
            (*edges)++;
        } else if (id > 0 && id + 1 < n && p[id] == ' ' && p[id + 1] == '[' &&
                   strncmp(p, "node ", 5) && strncmp(p, "edge ", 5) && strncmp(p, "graph ", 6)) {
            (*nodes)++;
        }
        p += n;
        if (*p == '\n') p++;
    }
}

static const char *format_of(const char *path) {
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return NULL;
    if (!strcmp(dot, ".svg")) return "svg";
    if (!strcmp(dot, ".png")) return "png";
    if (!strcmp(dot, ".dot") || !strcmp(dot, ".gv")) return "dot";
    return NULL;
}

int otc_cmd_viz(int argc, char **argv) {
    const char *out = NULL, *format = NULL, *title = NULL;
    bool weights = false, group = false, params = false, top_down = false, plan = false;
    const otc_opt opts[] = {
        {"--out,--output,-o", OTC_OPT_STRING, &out,
         "FILE: where to write (.svg, .png or .dot; '-' is standard output)"},
        {"--format", OTC_OPT_STRING, &format, "svg|png|dot: output format (default: from FILE)"},
        {"--weights", OTC_OPT_FLAG, &weights,
         "edge colour by weight sign (blue +, red -), width by size"},
        {"--group-depth", OTC_OPT_FLAG, &group, "box nodes by depth from the inputs"},
        {"--params", OTC_OPT_FLAG, &params, "draw Parameter nodes (default: folded into users)"},
        {"--top-down", OTC_OPT_FLAG, &top_down, "lay out top to bottom (default: left to right)"},
        {"--title", OTC_OPT_TEXT, &title, "TEXT: caption (default: the model's file name)"},
        {"--plan", OTC_OPT_FLAG, &plan,
         "draw the compiler's plan instead: fused kernels, buffer offsets and sizes"},
    };
    const char *pos[1];
    int rc = otc_cli_parse("viz", "MODEL.otm -o FILE.{svg,png,dot} [options]", opts,
                           (int)(sizeof opts / sizeof opts[0]), argc, argv, pos, 1, 1);
    if (rc) return rc < 0 ? OTC_EXIT_OK : rc;
    if (!out) return otc_cli_error("viz", "missing -o FILE (try 'otc viz --help')");
    if (!format) format = format_of(out);
    if (!format)
        return otc_cli_error("viz",
                             "cannot tell the format of '%s': use .svg, .png or .dot, "
                             "or --format",
                             out);
    if (strcmp(format, "svg") && strcmp(format, "png") && strcmp(format, "dot"))
        return otc_cli_error("viz", "unknown format '%s' (svg, png or dot)", format);
#ifndef OTC_HAVE_GVC
    if (strcmp(format, "dot"))
        return otc_cli_error("viz", "this otc was built without Graphviz (libgvc): only .dot "
                                    "output is available");
#endif
    const otc_cli_file ins[] = {{"MODEL", pos[0]}};
    const otc_cli_file outs[] = {{"--output", out}};
    if ((rc = otc_cli_check_files("viz", ins, 1, outs, 1))) return rc;

    otc_graph *g;
    if ((rc = otc_cli_load_model("viz", pos[0], &g))) return rc;
    if (!title) {
        const char *slash = strrchr(pos[0], '/');
        title = slash ? slash + 1 : pos[0];
    }
    otc_dot_options o = {.weights = weights,
                         .group_depth = group,
                         .show_params = params,
                         .top_down = top_down,
                         .title = title};
    char *dot = NULL;
    size_t dot_len = 0;
    /* --plan (compiler): the plan's drawing replaces the graph's. */
    if (plan) {
        otc_plan *p = NULL;
        if (otc_plan_build(g, NULL, &p) == OTC_OK) dot = otc_plan_to_dot(p);
        otc_plan_free(p);
        if (dot) dot_len = strlen(dot);
    }
    if (plan ? !dot : otc_dot_render(g, &o, &dot, &dot_len) != OTC_OK) {
        rc = otc_cli_error_file("viz", pos[0]);
        otc_graph_free(g);
        return rc;
    }
    otc_graph_free(g);
    if (!strcmp(format, "dot")) {
        rc = otc_cli_write_output("viz", out, dot, dot_len);
        free(dot);
        return rc;
    }
    long nodes, edges;
    drawing_size(dot, &nodes, &edges);
    if (nodes + edges > MAX_LAID_OUT) {
        free(dot);
        char sm[512];
        return otc_cli_error("viz",
                             "%s: the drawing has %ld nodes and %ld edges, more than Graphviz "
                             "lays out in seconds (%d together): write DOT instead (-o "
                             "FILE.dot) and lay it out with a tool for large graphs (e.g. "
                             "sfdp -Tsvg)",
                             otc_cli_printable(pos[0], sm, sizeof sm), nodes, edges, MAX_LAID_OUT);
    }
#ifdef OTC_HAVE_GVC
    char *data = NULL;
    size_t len = 0;
    rc = render(dot, format, &data, &len);
    free(dot);
    if (rc) return rc;
    rc = otc_cli_write_output("viz", out, data, len);
    free(data);
    return rc;
#else
    free(dot);
    return OTC_EXIT_USAGE;
#endif
}
