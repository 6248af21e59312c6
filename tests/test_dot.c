/* Tests for the graph -> DOT writer: depths, ranks, ports, weight styling, folding of
 * parameters, grouping, escaping; when libgvc is linked, Graphviz itself parses the text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "otc/dot.h"
#include "otc/otc.h"

#ifdef OTC_HAVE_GVC
#include <graphviz/gvc.h>
#endif

static int count_of(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* x [B,3] -> h (reads x[0], x[1]) -> o (reads h, x[2]); weights h: {1, -0.5}, o: {0.25, 0}. */
static otc_graph *small_neat(otc_id *x, otc_id *h, otc_id *o) {
    otc_graph *g = otc_graph_new();
    *x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    otc_id hs[2] = {*x, *x};
    int hc[2] = {0, 1};
    float hw[2] = {1.0f, -0.5f};
    *h = otc_neuron(g, "h", OTC_ACT_TANH, 0.5f, 1.0f, 2, hs, hc, hw);
    otc_id os[2] = {*h, *x};
    int oc[2] = {0, 2};
    float ow[2] = {0.25f, 0.0f};
    *o = otc_neuron(g, "o", OTC_ACT_SIGMOID, -1.0f, 1.0f, 2, os, oc, ow);
    otc_graph_mark_output(g, *o);
    return g;
}

#ifdef OTC_HAVE_GVC
/* Graphviz parses the text and lays it out; returns the node count it saw (-1 on error).
 * One context for the whole process, as in `otc viz`: Graphviz 2.43's text layout caches a
 * font name that a freed context leaves dangling. */
static int graphviz_nodes(const char *dot) {
    static GVC_t *gvc;
    if (!gvc) gvc = gvContext();
    Agraph_t *ag = agmemread(dot);
    int n = -1;
    if (ag) {
        if (gvLayout(gvc, ag, "dot") == 0) {
            char *svg = NULL;
            unsigned int len = 0;
            if (gvRenderData(gvc, ag, "svg", &svg, &len) == 0 && len > 0) n = agnnodes(ag);
            gvFreeRenderData(svg);
            gvFreeLayout(gvc, ag);
        }
        agclose(ag);
    }
    return n;
}
#endif

TEST(dot_depths) {
    otc_id x, h, o;
    otc_graph *g = small_neat(&x, &h, &o);
    REQUIRE(o >= 0);
    int n = otc_graph_size(g);
    int *d = malloc((size_t)n * sizeof *d);
    REQUIRE(otc_graph_depths(g, d) == OTC_OK);
    CHECK(d[x] == 0);
    CHECK(d[h] == 1);
    CHECK(d[o] == 2); /* via h, not the direct edge from x */
    const otc_node *hn = otc_graph_node(g, h);
    CHECK(d[hn->inputs[0]] == -1 && d[hn->inputs[1]] == -1); /* W and b */
    free(d);
    otc_graph_free(g);
}

TEST(dot_recurrent_depths) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id dl = otc_delay(g, "prev", otc_shape_2d(OTC_BATCH, 1));
    otc_id srcs[2] = {x, dl};
    int cols[2] = {0, 0};
    otc_id n = otc_neuron(g, "n", OTC_ACT_TANH, 0, 1, 2, srcs, cols, NULL);
    REQUIRE(n >= 0);
    REQUIRE(otc_graph_set_input(g, dl, 0, n) == OTC_OK);
    otc_graph_mark_output(g, n);
    int d[16];
    REQUIRE(otc_graph_size(g) <= 16);
    REQUIRE(otc_graph_depths(g, d) == OTC_OK);
    CHECK(d[x] == 0 && d[dl] == 0 && d[n] == 1);
    char *dot = NULL;
    REQUIRE(otc_dot_render(g, NULL, &dot, NULL) == OTC_OK);
    char want[64];
    snprintf(want, sizeof want, "n%d -> n%d [style=dashed", n, dl);
    CHECK_MSG(strstr(dot, want) && strstr(dot, "constraint=false"), "%s", dot);
    CHECK(strstr(dot, "shape=diamond"));
#ifdef OTC_HAVE_GVC
    CHECK(graphviz_nodes(dot) == 3);
#endif
    free(dot);
    otc_graph_free(g);
}

TEST(dot_cycle_is_an_error) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id a = otc_activation(g, OTC_OP_TANH, x, 0);
    otc_id b = otc_activation(g, OTC_OP_RELU, a, 0);
    otc_id c = otc_add(g, b, x);
    REQUIRE(c >= 0);
    REQUIRE(otc_graph_set_input(g, a, 0, c) == OTC_OK); /* a -> b -> c -> a */
    char *dot = (char *)1;
    CHECK(otc_dot_render(g, NULL, &dot, NULL) == OTC_ERR_CYCLE);
    CHECK(dot == NULL);
    CHECK(*otc_last_error() != '\0');
    otc_graph_free(g);
}

TEST(dot_neat_sides_ports_and_weights) {
    otc_id x, h, o;
    otc_graph *g = small_neat(&x, &h, &o);
    REQUIRE(o >= 0);
    otc_dot_options opt = {.weights = true};
    char *dot = NULL;
    size_t len = 0;
    REQUIRE(otc_dot_render(g, &opt, &dot, &len) == OTC_OK);
    CHECK(len == strlen(dot));
    char want[96];
    snprintf(want, sizeof want, "{ rank=source; n%d; }", x);
    CHECK_MSG(strstr(dot, want), "%s", dot);
    snprintf(want, sizeof want, "{ rank=sink; n%d; }", o);
    CHECK(strstr(dot, want));
    /* x is drawn with one port per column and edges leave from the column they read */
    CHECK(strstr(dot, "PORT=\"c2\""));
    snprintf(want, sizeof want, "n%d:c1:e -> n%d [", x, h);
    CHECK(strstr(dot, want));
    /* the largest |w| (1.0) is full blue and 4 wide; -0.5 is a lighter red, 2.25 wide */
    snprintf(want, sizeof want, "n%d:c0:e -> n%d [color=\"#2166ac\" penwidth=4.00", x, h);
    CHECK_MSG(strstr(dot, want), "%s", dot);
    snprintf(want, sizeof want, "n%d:c1:e -> n%d [color=\"#bd5865\" penwidth=2.25", x, h);
    CHECK(strstr(dot, want));
    /* a zero weight is a thin dashed grey edge */
    snprintf(want, sizeof want, "n%d:c2:e -> n%d [color=\"#bbbbbb\" style=dashed", x, o);
    CHECK(strstr(dot, want));
    CHECK(strstr(dot, "label=\"+1.00\"") && strstr(dot, "label=\"-0.50\""));
    CHECK(strstr(dot, "tanh b=+0.5"));
    CHECK(strstr(dot, "peripheries=2")); /* the output */
    CHECK(!strstr(dot, "shape=note"));   /* W and b folded */
#ifdef OTC_HAVE_GVC
    CHECK(graphviz_nodes(dot) == 3);
#endif
    free(dot);
    /* without --weights: no colours, but tooltips still carry the weights */
    REQUIRE(otc_dot_render(g, NULL, &dot, NULL) == OTC_OK);
    CHECK(!strstr(dot, "#2166ac"));
    CHECK(strstr(dot, "tooltip=\"w = -0.5\""));
    free(dot);
    otc_graph_free(g);
}

TEST(dot_weight_style) {
    char buf[96];
    CHECK(!strcmp(otc_dot_weight_style(1.0f, 1.0f, buf, sizeof buf),
                  "color=\"#2166ac\" penwidth=4.00"));
    /* m = 0.5, t = 0.65: red channel 0xd0 + (0xb2 - 0xd0) * 0.65 = 188.5 -> 189 = 0xbd */
    CHECK(!strcmp(otc_dot_weight_style(-0.5f, 1.0f, buf, sizeof buf),
                  "color=\"#bd5865\" penwidth=2.25"));
    CHECK(strstr(otc_dot_weight_style(0.0f, 1.0f, buf, sizeof buf), "dashed"));
    CHECK(strstr(otc_dot_weight_style(NAN, 1.0f, buf, sizeof buf), "dashed"));
    /* clamped above the maximum */
    CHECK(strstr(otc_dot_weight_style(3.0f, 1.0f, buf, sizeof buf), "penwidth=4.00"));
}

TEST(dot_mlp_folds_parameters) {
    otc_graph *g = otc_graph_new();
    otc_rng rng;
    otc_rng_seed(&rng, 1);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 4));
    int sizes[2] = {8, 3};
    otc_id y = otc_mlp(g, x, 2, sizes, OTC_OP_RELU, -1, &rng);
    REQUIRE(y >= 0);
    otc_graph_mark_output(g, y);
    int params = 0;
    for (int i = 0; i < otc_graph_size(g); i++)
        params += otc_graph_node(g, i)->op == OTC_OP_PARAMETER;
    REQUIRE(params == 4);
    char *dot = NULL;
    otc_dot_options opt = {.weights = true};
    REQUIRE(otc_dot_render(g, &opt, &dot, NULL) == OTC_OK);
    CHECK_MSG(strstr(dot, "fc1.weight [4,8]"), "%s", dot);
    CHECK(strstr(dot, "fc2.bias [3]"));
    CHECK(!strstr(dot, "shape=note"));
    CHECK(count_of(dot, "rms ") >= 2); /* both matmuls' input edges carry their RMS */
    /* the input is not read column-wise: a plain node, no ports */
    CHECK(!strstr(dot, "PORT="));
#ifdef OTC_HAVE_GVC
    CHECK(graphviz_nodes(dot) == otc_graph_size(g) - params);
#endif
    free(dot);
    opt.show_params = true;
    REQUIRE(otc_dot_render(g, &opt, &dot, NULL) == OTC_OK);
    CHECK(count_of(dot, "shape=note") == params);
#ifdef OTC_HAVE_GVC
    CHECK(graphviz_nodes(dot) == otc_graph_size(g));
#endif
    free(dot);
    otc_graph_free(g);
}

TEST(dot_group_by_depth) {
    otc_id x, h, o;
    otc_graph *g = small_neat(&x, &h, &o);
    REQUIRE(o >= 0);
    otc_dot_options opt = {.group_depth = true, .top_down = true, .title = "gen 3"};
    char *dot = NULL;
    REQUIRE(otc_dot_render(g, &opt, &dot, NULL) == OTC_OK);
    CHECK(strstr(dot, "newrank=true"));
    CHECK(strstr(dot, "rankdir=TB"));
    CHECK(strstr(dot, "label=\"inputs\""));
    CHECK(strstr(dot, "label=\"depth 1\""));
    CHECK(strstr(dot, "label=\"outputs\""));
    CHECK(!strstr(dot, "label=\"depth 2\"")); /* o is the output: in the outputs group */
    CHECK(strstr(dot, "<B>gen 3</B>"));
    char want[64];
    snprintf(want, sizeof want, "n%d:c0:s -> n%d", x, h);
    CHECK(strstr(dot, want));
#ifdef OTC_HAVE_GVC
    CHECK(graphviz_nodes(dot) == 3);
#endif
    free(dot);
    otc_graph_free(g);
}

TEST(dot_escapes_hostile_names) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "in<\"&>\xff", otc_shape_2d(OTC_BATCH, 2));
    otc_id t = otc_activation(g, OTC_OP_TANH, x, 0);
    REQUIRE(t >= 0);
    REQUIRE(otc_graph_set_name(g, t, "a}b]\\c\n") == OTC_OK);
    otc_graph_mark_output(g, t);
    otc_dot_options opt = {.title = "<script>"};
    char *dot = NULL;
    REQUIRE(otc_dot_render(g, &opt, &dot, NULL) == OTC_OK);
    CHECK_MSG(strstr(dot, "in&lt;&quot;&amp;&gt;?"), "%s", dot);
    CHECK(strstr(dot, "a}b]\\c?"));
    CHECK(strstr(dot, "&lt;script&gt;"));
    CHECK(!strstr(dot, "<script>"));
#ifdef OTC_HAVE_GVC
    CHECK(graphviz_nodes(dot) == 2);
#endif
    free(dot);
    otc_graph_free(g);
}

TEST(dot_save_and_empty_graph) {
    otc_graph *g = otc_graph_new();
    char *dot = NULL;
    REQUIRE(otc_dot_render(g, NULL, &dot, NULL) == OTC_OK);
    CHECK(strstr(dot, "digraph otc {") == dot);
#ifdef OTC_HAVE_GVC
    CHECK(graphviz_nodes(dot) == 0);
#endif
    free(dot);
    otc_id x, h, o;
    otc_graph_free(g);
    g = small_neat(&x, &h, &o);
    char path[512];
    snprintf(path, sizeof path, "%s/dot_save_test_%ld.dot", OTC_BINARY_DIR, (long)getpid());
    REQUIRE(otc_dot_save(g, NULL, path) == OTC_OK);
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    char head[32] = {0};
    CHECK(fread(head, 1, 13, f) == 13);
    fclose(f);
    CHECK(!strcmp(head, "digraph otc {"));
    unlink(path);
    char bad[700];
    snprintf(bad, sizeof bad, "%s/no/such/dir/g.dot", OTC_BINARY_DIR);
    CHECK(otc_dot_save(g, NULL, bad) == OTC_ERR_IO);
    CHECK(strstr(otc_last_error(), bad) != NULL);
    otc_graph_free(g);
}
