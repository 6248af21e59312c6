/* HyperNEAT: substrate weights painted by hand-built CPPNs against hand-computed values
 * (threshold, scaling, clamping, bias and LEO outputs, the LEO locality seed), the visual
 * discrimination task's fitness for hand-painted substrates, the substrate's picture and
 * graph, and a short evolution run that improves. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "otc/hyperneat.h"
#include "otc/executor.h"
#include "otc/file.h"
#include "otc/neat.h"

#define NEAT_HEAD                                                                                  \
    "[NEAT]\nfitness_criterion = max\nfitness_threshold = 200\npop_size = 40\n"                    \
    "reset_on_extinction = false\n"                                                                \
    "[DefaultSpeciesSet]\ncompatibility_threshold = 3.0\n"                                         \
    "[DefaultStagnation]\nmax_stagnation = 20\n[DefaultReproduction]\nelitism = 2\n"               \
    "[DefaultGenome]\nnum_hidden = 0\nfeed_forward = true\ninitial_connection = full_direct\n"     \
    "activation_default = identity\nactivation_options = identity\n"                               \
    "compatibility_disjoint_coefficient = 1.0\ncompatibility_weight_coefficient = 0.5\n"           \
    "conn_add_prob = 0.1\nconn_delete_prob = 0.0\nnode_add_prob = 0.05\nnode_delete_prob = 0.0\n"

static otc_neat_config config_of(const char *genome_keys, const char *substrate) {
    char text[4096];
    snprintf(text, sizeof text, "%s%s[Substrate]\n%s", NEAT_HEAD, genome_keys, substrate);
    otc_neat_config c;
    otc_status s = otc_neat_config_parse(text, "test.ini", &c);
    if (s != OTC_OK) fprintf(stderr, "%s\n", otc_last_error());
    CHECK(s == OTC_OK);
    return c;
}

/* A CPPN without hidden nodes: inputs 0..3 (x1 y1 x2 y2), outputs from id 4 (identity, the
 * given biases), connections (in, out, weight). */
static otc_neat_genome *cppn(int n_out, const float *bias, const int (*conn)[2], const float *w,
                             int n_conn) {
    otc_neat_genome *g = otc_neat_genome_new();
    for (int i = 0; i < 4; i++) {
        otc_neat_node n = {i, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1};
        otc_neat_genome_add_node(g, &n);
    }
    for (int o = 0; o < n_out; o++) {
        otc_neat_node n = {4 + o, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, bias[o], 1, 0, 1};
        otc_neat_genome_add_node(g, &n);
    }
    for (int k = 0; k < n_conn; k++) {
        otc_neat_conn cn = {k, conn[k][0], conn[k][1], w[k], true};
        otc_neat_genome_add_conn(g, &cn);
    }
    return g;
}

/* Paints a 2x1 -> 2x1 substrate (nodes at x = -0.5 and 0.5, y = 0) from g. */
static void paint(const otc_neat_config *c, otc_neat_genome *g, otc_substrate **s) {
    otc_neat_flat *f = otc_neat_flat_new();
    REQUIRE(f);
    REQUIRE(otc_neat_flat_build(f, g, c) == OTC_OK);
    REQUIRE(otc_substrate_new(c, 1, s) == OTC_OK);
    REQUIRE(otc_substrate_paint(*s, f) == OTC_OK);
    otc_neat_flat_free(f);
}

TEST(hyperneat_paint_threshold_and_scaling) {
    otc_neat_config c =
        config_of("num_inputs = 4\nnum_outputs = 1\n", "input_grid = 2x1\noutput_grid = 2x1\n");
    /* CPPN weight = k (x1 - x2): for source i and target j, k (x_i - x_j) with x = -+0.5. */
    const int conn[2][2] = {{0, 4}, {2, 4}};
    const float zero = 0;
    /* k = 0.5: w = +-0.5 -> (0.5 - 0.2) / 0.8 * 3 = 1.125; k = 0.3: (0.3 - 0.2) / 0.8 * 3 =
     * 0.375; k = 2: w = +-2 clamped to 1 -> 3; k = 0.1: |w| = 0.1 <= 0.2 -> 0. */
    const float k[4] = {0.5f, 0.3f, 2.0f, 0.1f}, want[4] = {1.125f, 0.375f, 3.0f, 0.0f};
    for (int t = 0; t < 4; t++) {
        const float w[2] = {k[t], -k[t]};
        otc_neat_genome *g = cppn(1, &zero, conn, w, 2);
        otc_substrate *s = NULL;
        paint(&c, g, &s);
        const float *W = otc_substrate_weights(s, 0); /* [target j][source i] */
        CHECK_NEAR(W[0], 0.0, 1e-6);                  /* j = 0, i = 0: x1 = x2 */
        CHECK_NEAR(W[1], want[t], 1e-5);              /* j = 0 (x -0.5), i = 1 (x 0.5) */
        CHECK_NEAR(W[2], -want[t], 1e-5);
        CHECK_NEAR(W[3], 0.0, 1e-6);
        /* identity activation, no biases: y_j = sum_i W[j][i] x_i */
        const float x[2] = {1.0f, 2.0f};
        float y[2];
        REQUIRE(otc_substrate_forward(s, x, 1, y) == OTC_OK);
        CHECK_NEAR(y[0], 2.0 * want[t], 1e-5);
        CHECK_NEAR(y[1], -1.0 * want[t], 1e-5);
        otc_substrate_free(s);
        otc_neat_genome_free(g);
    }
}

TEST(hyperneat_paint_bias_and_leo) {
    otc_neat_config c = config_of("num_inputs = 4\nnum_outputs = 3\n",
                                  "input_grid = 2x1\noutput_grid = 2x1\nbias_output = true\n"
                                  "leo = true\nmax_weight = 2.0\n");
    /* weight = x1 (output 4), bias = 0.25 (output 5), leo = x2 (output 6: only the target at
     * x = 0.5 gets connections). With LEO, weights are w * max_weight, no threshold. */
    const float bias[3] = {0, 0.25f, 0};
    const int conn[2][2] = {{0, 4}, {2, 6}};
    const float w[2] = {1.0f, 1.0f};
    otc_neat_genome *g = cppn(3, bias, conn, w, 2);
    otc_substrate *s = NULL;
    paint(&c, g, &s);
    const float *W = otc_substrate_weights(s, 0), *b = otc_substrate_biases(s, 0);
    CHECK_NEAR(W[0], 0.0, 1e-6);
    CHECK_NEAR(W[1], 0.0, 1e-6);
    CHECK_NEAR(W[2], -1.0, 1e-6); /* j = 1, i = 0: x1 = -0.5 -> -0.5 * 2 */
    CHECK_NEAR(W[3], 1.0, 1e-6);
    CHECK_NEAR(b[0], 0.5, 1e-6); /* 0.25 * 2 */
    CHECK_NEAR(b[1], 0.5, 1e-6);
    otc_substrate_free(s);
    otc_neat_genome_free(g);
}

/* leo_seed = locality_x: whatever the random initial genes, the LEO output is
 * exp(-(2 (x1 - x2))^2) - 0.3 (hand-computed from the seed's definition) and links are painted
 * only where |x1 - x2| < 0.55. */
TEST(hyperneat_leo_locality_seed) {
    otc_neat_config c = config_of("num_inputs = 4\nnum_outputs = 2\nbias_node = true\n",
                                  "input_grid = 4x1\noutput_grid = 4x1\nleo = true\n"
                                  "leo_seed = locality_x\n");
    REQUIRE(otc_substrate_seed_nodes(&c) == 1);
    otc_neat_innovations *t = otc_neat_innovations_new(5 + 2 + 1, 0);
    otc_neat_flat *f = otc_neat_flat_new();
    REQUIRE(t && f);
    otc_rng rng;
    otc_rng_seed(&rng, 3);
    for (int rep = 0; rep < 3; rep++) {
        otc_neat_genome *g = otc_neat_genome_new();
        REQUIRE(otc_neat_genome_init(g, &c, t, &rng) == OTC_OK);
        REQUIRE(otc_neat_genome_validate(g, true) == OTC_OK);
        const otc_neat_node *gauss = otc_neat_genome_find_node(g, 7);
        REQUIRE(gauss);
        CHECK(gauss->type == OTC_NEAT_HIDDEN && gauss->act == OTC_ACT_GAUSSIAN);
        REQUIRE(otc_neat_flat_build(f, g, &c) == OTC_OK);
        const float pts[4][4] = {{0.3f, 0.9f, 0.3f, -0.4f},
                                 {-0.75f, 0, -0.25f, 0},
                                 {-0.25f, 0.5f, 0.25f, -0.5f},
                                 {-0.75f, 0, 0.75f, 0}};
        float out[4][2];
        REQUIRE(otc_neat_flat_forward(f, &pts[0][0], 4, &out[0][0]) == OTC_OK);
        for (int k = 0; k < 4; k++) {
            double dx = pts[k][0] - pts[k][2];
            CHECK_NEAR(out[k][1], exp(-4.0 * dx * dx) - 0.3, 1e-5);
        }
        otc_substrate *s = NULL;
        REQUIRE(otc_substrate_new(&c, 1, &s) == OTC_OK);
        REQUIRE(otc_substrate_paint(s, f) == OTC_OK);
        const float *W = otc_substrate_weights(s, 0);
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++)
                if (abs(i - j) > 1) CHECK_MSG(W[j * 4 + i] == 0.0f, "link %d -> %d painted", i, j);
        otc_substrate_free(s);
        otc_neat_genome_free(g);
    }
    otc_neat_flat_free(f);
    otc_neat_innovations_free(t);
    /* the seed needs a LEO */
    otc_neat_config bad;
    CHECK(otc_neat_config_parse(NEAT_HEAD "num_inputs = 4\nnum_outputs = 1\n[Substrate]\n"
                                          "input_grid = 4x1\noutput_grid = 4x1\n"
                                          "leo_seed = locality_x\n",
                                "t.ini", &bad) == OTC_ERR_CONFIG);
    CHECK(strstr(otc_last_error(), "[Substrate] leo_seed") != NULL);
}

/* A hand-painted 2x1 -> 1x1 substrate: one blue and one red link, wider the heavier; an 11x11
 * -> 11x11 one of 14,641 equal links: only the 700 strongest drawn, in under 100 KB. */
TEST(hyperneat_layered_substrate_svg) {
    otc_neat_config c =
        config_of("num_inputs = 4\nnum_outputs = 1\n", "input_grid = 2x1\noutput_grid = 1x1\n");
    otc_substrate *s = NULL;
    REQUIRE(otc_substrate_new(&c, 1, &s) == OTC_OK);
    otc_substrate_weights(s, 0)[0] = 2.0f;
    otc_substrate_weights(s, 0)[1] = -1.0f;
    char path[] = "/tmp/otc_substrate_svg_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    REQUIRE(otc_substrate_save_svg(s, "two <links>", path) == OTC_OK);
    size_t len = 0;
    char *text = NULL;
    REQUIRE(otc_read_file(path, 1 << 20, &text, &len) == OTC_OK);
    CHECK(strstr(text, "two &lt;links&gt;: 2 layer(s)"));
    CHECK(strstr(text, "the 2 strongest of 2 painted link(s)"));
    /* x: panel 0 spans 20..280 (nodes at -0.5, 0.5 -> 85, 215), panel 1 350..610 (node at 480);
     * y: 150. The weaker (red, width 0.4 + 1.6 / 2) first. */
    CHECK(strstr(text, "<line x1=\"215.0\" y1=\"150.0\" x2=\"480.0\" y2=\"150.0\" "
                       "stroke=\"#d02020\" stroke-width=\"1.20\""));
    CHECK(strstr(text, "<line x1=\"85.0\" y1=\"150.0\" x2=\"480.0\" y2=\"150.0\" "
                       "stroke=\"#2050d0\" stroke-width=\"2.00\""));
    free(text);
    otc_substrate_free(s);
    c = config_of("num_inputs = 4\nnum_outputs = 1\n", "input_grid = 11x11\noutput_grid = 11x11\n");
    REQUIRE(otc_substrate_new(&c, 1, &s) == OTC_OK);
    for (int k = 0; k < 121 * 121; k++) otc_substrate_weights(s, 0)[k] = 1.0f;
    REQUIRE(otc_substrate_save_svg(s, NULL, path) == OTC_OK);
    REQUIRE(otc_read_file(path, 1 << 20, &text, &len) == OTC_OK);
    int lines = 0;
    for (const char *p = text; (p = strstr(p, "<line ")); p++) lines++;
    CHECK(lines == 700);
    CHECK(len < 100 * 1024);
    free(text);
    otc_substrate_free(s);
    remove(path);
}

/* activation = sigmoid is NEAT's steep sigmoid, 1 / (1 + exp(-4.9 z)): the painted substrate
 * as a graph computes it (the steep_sigmoid op), as the substrate's own forward does. */
/* The graph interpreter's output for one row of x through s painted as a graph, into y. */
static void interpreter_row(otc_substrate *s, const float *x, float *y, int n_out) {
    otc_graph *g = NULL;
    REQUIRE(otc_substrate_graph(s, 0.0f, &g) == OTC_OK);
    otc_executor *ex = otc_interpreter_new(g, &(otc_exec_options){.inference = true});
    REQUIRE(ex);
    REQUIRE(otc_exec_set_input(ex, otc_graph_find(g, "input"), x, 1) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    const float *gy = NULL;
    REQUIRE(otc_exec_value(ex, otc_graph_output(g, 0), &gy, NULL) == OTC_OK);
    memcpy(y, gy, sizeof(float) * (size_t)n_out);
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(hyperneat_steep_sigmoid_substrate_graph) {
    otc_neat_config c = config_of("num_inputs = 4\nnum_outputs = 1\n",
                                  "input_grid = 2x1\noutput_grid = 2x1\nactivation = sigmoid\n");
    otc_substrate *s = NULL;
    REQUIRE(otc_substrate_new(&c, 1, &s) == OTC_OK);
    const float w[4] = {0.5f, -0.25f, 0.1f, 0.2f}; /* [target][source] */
    for (int k = 0; k < 4; k++) otc_substrate_weights(s, 0)[k] = w[k];
    otc_substrate_biases(s, 0)[1] = 0.3f;
    const float x[2] = {0.4f, -0.6f};
    double z[2] = {0.5 * 0.4 + 0.25 * 0.6, 0.1 * 0.4 - 0.2 * 0.6 + 0.3};
    float y[2];
    REQUIRE(otc_substrate_forward(s, x, 1, y) == OTC_OK);
    float gy[2];
    interpreter_row(s, x, gy, 2);
    for (int j = 0; j < 2; j++) {
        double want = 1.0 / (1.0 + exp(-4.9 * z[j]));
        CHECK_NEAR(y[j], want, 1e-6);
        CHECK_NEAR(gy[j], want, 1e-6);
    }
    otc_substrate_free(s);
}

/* One row through a substrate's small layers (11x11 -> 5x5 -> 11x11, tanh) runs on a
 * transposed copy of the weights: it must give the interpreter's outputs to the bit (both sum
 * each output's products in input order), and follow the weights when they are painted again or
 * written by hand between runs. */
TEST(substrate_batch1_row_is_the_interpreters_to_the_bit) {
    otc_neat_config c = config_of("num_inputs = 4\nnum_outputs = 1\n",
                                  "input_grid = 11x11\nhidden_grids = 5x5\noutput_grid = 11x11\n"
                                  "weight_threshold = 0.1\nactivation = tanh\n");
    float x[121], y[121], want[121];
    for (int i = 0; i < 121; i++) x[i] = (float)((i * 37) % 11) / 10.0f - 0.45f;
    otc_substrate *s = NULL;
    REQUIRE(otc_substrate_new(&c, 1, &s) == OTC_OK);
    REQUIRE(otc_substrate_forward(s, x, 1, y) == OTC_OK); /* not painted: all weights 0 */
    for (int j = 0; j < 121; j++) CHECK(y[j] == 0.0f);
    const float bias[] = {0.3f}, w1[] = {0.9f, -0.7f, 0.45f}, w2[] = {-0.6f, 0.8f, 0.35f};
    const int conn[][2] = {{0, 4}, {3, 4}, {2, 4}};
    otc_neat_genome *a = cppn(1, bias, conn, w1, 3), *b = cppn(1, bias, conn, w2, 3);
    otc_neat_flat *f = otc_neat_flat_new();
    REQUIRE(f);
    for (int round = 0; round < 3; round++) {
        if (round < 2) {
            REQUIRE(otc_neat_flat_build(f, round ? b : a, &c) == OTC_OK);
            REQUIRE(otc_substrate_paint(s, f) == OTC_OK);
        } else {
            float *w = otc_substrate_weights(s, 1); /* by hand, after a run */
            for (int k = 0; k < 25 * 121; k += 7) w[k] = -2.0f * w[k] + 0.01f;
        }
        REQUIRE(otc_substrate_forward(s, x, 1, y) == OTC_OK);
        interpreter_row(s, x, want, 121);
        CHECK(!memcmp(y, want, sizeof y));
        double norm = 0;
        for (int j = 0; j < 121; j++) norm += fabs(y[j]);
        CHECK(norm > 1.0); /* not a trivially zero substrate */
    }
    otc_neat_flat_free(f);
    otc_neat_genome_free(a);
    otc_neat_genome_free(b);
    otc_substrate_free(s);
}

/* An 11k x 11k -> 11k x 11k substrate whose output node sums the inputs within `reach` nodes
 * of the node `shift` columns to its right (a (2 reach + 1)^2 window): reach = 1.5 k - 0.5
 * matches the large box exactly, so the single most active output is `shift` nodes left of
 * its centre. */
static void paint_window(otc_substrate *s, int side, int reach, int shift) {
    float *W = otc_substrate_weights(s, 0);
    int n = side * side;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            W[(size_t)j * n + i] =
                abs(j % side + shift - i % side) <= reach && abs(j / side - i / side) <= reach;
}

TEST(hyperneat_visual_fitness_of_hand_painted_substrates) {
    otc_neat_config c =
        config_of("num_inputs = 4\nnum_outputs = 1\n", "input_grid = 11x11\noutput_grid = 11x11\n");
    for (int k = 1; k <= 3; k += 2) {
        otc_substrate *s = NULL;
        REQUIRE(otc_substrate_new(&c, k, &s) == OTC_OK);
        CHECK(otc_substrate_size(s, 0) == 121 * k * k);
        double fitness = 0, mean_d = -1;
        int hits = 0;
        /* All weights 0: every output ties and the first (cell (0, 0)) wins, so d^2 = lx^2 +
         * ly^2; over the 75 trials that sums to 5470, and max(0, 30 - d^2) to 248 (only the
         * large boxes at (1, 1) .. (4, 3) score; worked out from the layout by hand). */
        REQUIRE(otc_visual_score(s, &fitness, &hits, &mean_d) == OTC_OK);
        if (k == 1) {
            CHECK_NEAR(fitness, 248.0 / 75.0, 1e-4); /* float coordinates */
            CHECK(hits == 0);
            /* mean d <= sqrt(mean d^2), and the nearest large box is at cell (1, 1) */
            CHECK(mean_d <= sqrt(5470.0 / 75.0) && mean_d >= sqrt(2.0));
        }
        paint_window(s, 11 * k, (3 * k - 1) / 2, 0);
        REQUIRE(otc_visual_score(s, &fitness, &hits, &mean_d) == OTC_OK);
        CHECK_NEAR(fitness, 30.0, 1e-4);
        CHECK(hits == OTC_VISUAL_TRIALS);
        CHECK_NEAR(mean_d, 0.0, 1e-4);
        /* Every answer one cell (k nodes) left of the centre: d = 1 in every trial. */
        paint_window(s, 11 * k, (3 * k - 1) / 2, k);
        REQUIRE(otc_visual_score(s, &fitness, &hits, &mean_d) == OTC_OK);
        CHECK_NEAR(fitness, 29.0, 1e-4);
        CHECK(hits == 0);
        CHECK_NEAR(mean_d, 1.0, 1e-4);
        otc_substrate_free(s);
    }
}

/* The example config INI (pop_size genomes) run `gens` generations of task_name on
 * `threads` threads from seed into *out (NULL on failure), which the caller frees; *c gets
 * the config. */
static void run_example(const char *ini, const char *task_name, int pop_size, int gens, int threads,
                        uint64_t seed, otc_neat_config *c, otc_neat_population **out) {
    *out = NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/examples/neat/%s", OTC_SOURCE_DIR, ini);
    REQUIRE(otc_neat_config_load(path, c) == OTC_OK);
    c->pop_size = pop_size;
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create(task_name, c, &task) == OTC_OK);
    otc_neat_population *p = NULL;
    REQUIRE(otc_neat_population_new(c, seed, &p) == OTC_OK);
    otc_neat_run_options o = {.generations = gens, .threads = threads};
    REQUIRE(otc_neat_run(p, task, &o, NULL) == OTC_OK);
    otc_neat_task_free(task);
    *out = p;
    REQUIRE(otc_neat_stats_count(p) == gens);
}

TEST(hyperneat_visual_evolution_improves) {
    otc_neat_config c;
    otc_neat_population *p = NULL;
    run_example("visual.ini", "visual", 30, 8, 1, 1, &c, &p);
    REQUIRE(p);
    int n = otc_neat_stats_count(p);
    double first = otc_neat_stats(p, 0)->best_fitness,
           last = otc_neat_stats(p, n - 1)->best_fitness;
    printf("best fitness: generation 0 %.3f, generation %d %.3f\n", first, n - 1, last);
    CHECK(last > first);
    /* The champion's CPPN painted at 33 x 33 (1.2 M connections) without further evolution. */
    otc_neat_task *fine = NULL;
    REQUIRE(otc_neat_task_create("visual:33", &c, &fine) == OTC_OK);
    otc_neat_eval ev = {.fitness = 0};
    otc_neat_genome *champ = otc_neat_genome_copy(otc_neat_champion(p));
    REQUIRE(fine->evaluate(fine, &c, champ, 0, &ev) == OTC_OK);
    printf("champion at 33x33: %.3f\n", ev.fitness);
    CHECK(ev.fitness >= 0 && ev.fitness <= 30);
    otc_neat_genome_free(champ);
    otc_neat_task_free(fine);
    otc_neat_population_free(p);
}

TEST(hyperneat_layer_input_gives_each_layer_pair_its_weights) {
    /* 1x1 -> 1x1 -> 1x1: the layers' z are -1, 0, 1. The CPPN's inputs x1 y1 x2 y2 z1 z2
     * (ids 0-5), weight output (6) = z1 / 2 + z2 / 4, bias output (7) = -z1; threshold 0 and
     * max_weight 1 paint both as they are. */
    otc_neat_config c = config_of("num_inputs = 6\nnum_outputs = 2\n",
                                  "input_grid = 1x1\nhidden_grids = 1x1\noutput_grid = 1x1\n"
                                  "layer_input = true\nbias_output = true\n"
                                  "weight_threshold = 0\nmax_weight = 1\n");
    otc_neat_genome *g = otc_neat_genome_new();
    for (int i = 0; i < 8; i++) {
        otc_neat_node n = {i, i < 6 ? OTC_NEAT_INPUT : OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, 0, 1, 0,
                           1};
        otc_neat_genome_add_node(g, &n);
    }
    const otc_neat_conn links[3] = {
        {0, 4, 6, 0.5f, true}, {1, 5, 6, 0.25f, true}, {2, 4, 7, -1.0f, true}};
    for (int k = 0; k < 3; k++) otc_neat_genome_add_conn(g, &links[k]);
    otc_substrate *s = NULL;
    paint(&c, g, &s);
    REQUIRE(otc_substrate_layers(s) == 3);
    CHECK_NEAR(otc_substrate_weights(s, 0)[0], -0.5, 1e-6); /* z1 = -1, z2 = 0 */
    CHECK_NEAR(otc_substrate_weights(s, 1)[0], 0.25, 1e-6); /* z1 = 0, z2 = 1 */
    CHECK_NEAR(otc_substrate_biases(s, 0)[0], 1.0, 1e-6);   /* the hidden node: z1 = -1 */
    CHECK_NEAR(otc_substrate_biases(s, 1)[0], 0.0, 1e-6);   /* the output: z1 = 0 */
    /* x = 4: hidden -0.5 * 4 + 1 = -1, output 0.25 * -1 + 0 */
    const float x = 4.0f;
    float y = 0;
    REQUIRE(otc_substrate_forward(s, &x, 1, &y) == OTC_OK);
    CHECK_NEAR(y, -0.25, 1e-6);
    otc_substrate_free(s);
    otc_neat_genome_free(g);
    /* An evolvable substrate has no layers to give. */
    char text[4096];
    snprintf(text, sizeof text,
             "%snum_inputs = 6\nnum_outputs = 1\n[Substrate]\ninput_grid = 3x3\noutput_grid = "
             "3x3\nevolvable_substrate = true\nlayer_input = true\n",
             NEAT_HEAD);
    otc_neat_config e;
    CHECK(otc_neat_config_parse(text, "bad.ini", &e) == OTC_ERR_CONFIG);
    CHECK(strstr(otc_last_error(), "[Substrate] layer_input: an evolvable substrate"));
}

TEST(hyperneat_config_refuses_bad_substrates) {
    const char *bad[][2] = {
        {"input_grid = 11\noutput_grid = 11x11\n", "input_grid: bad value '11'"},
        {"input_grid = 0x3\noutput_grid = 11x11\n", "input_grid: bad value '0x3'"},
        {"input_grid = 11x11\n", "output_grid: missing required key"},
        {"input_grid = 11x11\noutput_grid = 11x11\nhidden_grids = 3x3 axb\n", "hidden_grids"},
        {"input_grid = 11x11\noutput_grid = 11x11\nweight_threshold = 1\n", "weight_threshold"},
        {"input_grid = 11x11\noutput_grid = 11x11\nactivation = nope\n", "activation"},
        {"input_grid = 11x11\noutput_grid = 11x11\nleo = true\n", "num_outputs"},
        {"input_grid = 99x99\noutput_grid = 99x99\nhidden_grids = 99x99\n", "connections"},
        {"input_grid = 11x11\noutput_grid = 11x11\nbogus = 1\n", "[Substrate] bogus: unknown key"},
        {"input_grid = 11x11\noutput_grid = 11x11\nevolvable_substrate = true\nhidden_grids = "
         "3x3\n",
         "hidden_grids: an evolvable substrate"},
        {"input_grid = 11x11\noutput_grid = 11x11\nevolvable_substrate = true\ninitial_depth = 4\n",
         "initial_depth: 4 is deeper than maximum_depth 3"},
        {"input_grid = 11x11\noutput_grid = 11x11\nmaximum_depth = 9\n",
         "[Substrate] maximum_depth"},
        {"input_grid = 11x11\noutput_grid = 11x11\nband_threshold = -1\n",
         "[Substrate] band_threshold"},
        {"input_grid = 11x11\noutput_grid = 11x11\niteration_level = x\n",
         "[Substrate] iteration_level"},
        {"input_grid = 99x99\noutput_grid = 99x99\nevolvable_substrate = true\nmaximum_depth = 8\n",
         "maximum_depth: with these grids"},
        {"input_grid = 11x11\noutput_grid = 11x11\nlayer_input = true\n",
         "num_inputs: a [Substrate] CPPN has 6 inputs (x1 y1 x2 y2 z1 z2)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[4096];
        snprintf(text, sizeof text, "%snum_inputs = 4\nnum_outputs = 1\n[Substrate]\n%s", NEAT_HEAD,
                 bad[i][0]);
        otc_neat_config c;
        CHECK(otc_neat_config_parse(text, "bad.ini", &c) == OTC_ERR_CONFIG);
        CHECK_MSG(strstr(otc_last_error(), bad[i][1]), "case %zu: %s", i, otc_last_error());
    }
}

/* ---- ES-HyperNEAT ------------------------------------------------------------------------ */

/* f(x, y) = relu(min(x, y)) = relu((x + y - |x - y|) / 2): 0 outside the quadrant x, y > 0.
 * Appends, for coordinates xi, yi (CPPN inputs), a hidden abs node `at` and a relu node at + 1
 * feeding output 4; sx flips x (sx = -1: relu(min(-x, y)), the mirror image). */
static void add_min_term(otc_neat_genome *g, int xi, int yi, float sx, int at, int *innov) {
    otc_neat_node h = {at, OTC_NEAT_HIDDEN, OTC_ACT_ABS, 0, 1, 0, 1};
    otc_neat_genome_add_node(g, &h);
    h.id = at + 1;
    h.act = OTC_ACT_RELU;
    otc_neat_genome_add_node(g, &h);
    const int in[6] = {xi, yi, xi, yi, at, at + 1}, out[6] = {at, at, at + 1, at + 1, at + 1, 4};
    const float w[6] = {sx, -1.0f, 0.5f * sx, 0.5f, -0.5f, 1.0f};
    for (int k = 0; k < 6; k++) {
        otc_neat_conn c = {(*innov)++, in[k], out[k], w[k], true};
        otc_neat_genome_add_conn(g, &c);
    }
}

/* A CPPN of weight f(x2, y2), plus f(x1, y1) (source = 1), its mirror (source = -1) or
 * nothing (source = 0). */
static otc_neat_genome *quadrant_cppn(int source) {
    const float zero = 0;
    otc_neat_genome *g = cppn(1, &zero, NULL, NULL, 0);
    int innov = 0;
    add_min_term(g, 2, 3, 1.0f, 5, &innov);
    if (source) add_min_term(g, 0, 1, (float)source, 7, &innov);
    return g;
}

#define ES_KEYS "evolvable_substrate = true\nmax_weight = 1.0\n"

TEST(es_hyperneat_quadtree_places_nodes_where_the_cppn_varies) {
    /* From (0, 0), the weight is f(x, y): non-zero only in the quadrant x, y > 0. By hand:
     * the quadrants' centres weigh 0.5, 0, 0, 0 (variance 0.046875), so with
     * division_threshold 0.01 all four are divided; of the depth-2 groups only the top-right
     * one (0.25, 0.25, 0.25, 0.75: variance 0.046875) is divided again, to maximum_depth 3.
     * Pruning: the top-right quadrant's 16 leaves vary by 0.0537 >= 0.03, the others by 0, so
     * the three flat quadrants are candidates at depth 1 (band 0: no neighbour on both
     * sides differs) and the top-right quarters are looked into; each of those has leaves
     * varying by at most 0.0156 < 0.03, so the quarters are candidates at depth 2 (side 0.5).
     * Bands: (0.25, 0.25) 0 (left and top neighbours outside the quadrant weigh 0, right and
     * bottom 0.25 = its own); (0.75, 0.75) 0; (0.75, 0.25) max(min(0, 0), min(0.25, 0.5)) =
     * 0.25 and (0.25, 0.75) 0.25 by symmetry, each of weight 0.25. */
    const char *keys = ES_KEYS "input_grid = 1x1\noutput_grid = 1x1\ninitial_depth = 1\n"
                               "maximum_depth = 3\ndivision_threshold = 0.01\n"
                               "variance_threshold = 0.03\nband_threshold = 0.2\n";
    otc_neat_config c = config_of("num_inputs = 4\nnum_outputs = 1\n", keys);
    otc_neat_genome *g = quadrant_cppn(0);
    otc_neat_flat *f = otc_neat_flat_new();
    REQUIRE(otc_neat_flat_build(f, g, &c) == OTC_OK);
    float *p = NULL;
    int n = -1;
    REQUIRE(otc_es_points(&c.substrate, f, 0, 0, true, &p, &n) == OTC_OK);
    REQUIRE(n == 2);
    const float want[2][3] = {{0.75f, 0.25f, 0.25f}, {0.25f, 0.75f, 0.25f}};
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 3; j++) CHECK_NEAR(p[3 * k + j], want[k][j], 1e-6);
    free(p);
    /* A band of exactly 0.25 is not above band_threshold 0.25. */
    c.substrate.band_threshold = 0.25;
    REQUIRE(otc_es_points(&c.substrate, f, 0, 0, true, &p, &n) == OTC_OK);
    CHECK(n == 0);
    free(p);
    /* division_threshold 0.05 > 0.046875 with initial_depth 1: only the four quadrants,
     * each a leaf (variance 0) with band 0, so nothing. */
    c.substrate.band_threshold = 0.2;
    c.substrate.division_threshold = 0.05;
    REQUIRE(otc_es_points(&c.substrate, f, 0, 0, true, &p, &n) == OTC_OK);
    CHECK(n == 0);
    free(p);
    /* initial_depth 2 divides every quadrant anyway; the top-right group's variance is
     * below 0.05, so depth 2 is the finest: the same two quarters. */
    c.substrate.initial_depth = 2;
    REQUIRE(otc_es_points(&c.substrate, f, 0, 0, true, &p, &n) == OTC_OK);
    CHECK(n == 2 && p[0] == 0.75f && p[1] == 0.25f && p[3] == 0.25f && p[4] == 0.75f);
    free(p);
    otc_neat_flat_free(f);
    otc_neat_genome_free(g);
}

/* The 2x1 -> 1x1 substrate (inputs (-0.5, 0) and (0.5, 0), output (0, 0)) an ES search with
 * the thresholds above builds from quadrant_cppn(source). */
static void es_substrate(int source, otc_substrate **s) {
    const char *keys = ES_KEYS "input_grid = 2x1\noutput_grid = 1x1\ninitial_depth = 1\n"
                               "maximum_depth = 3\ndivision_threshold = 0.01\n"
                               "variance_threshold = 0.03\nband_threshold = 0.2\n";
    otc_neat_config c = config_of("num_inputs = 4\nnum_outputs = 1\n", keys);
    otc_neat_genome *g = quadrant_cppn(source);
    paint(&c, g, s);
    otc_neat_genome_free(g);
}

TEST(es_hyperneat_network_links_and_runs) {
    /* Weight f(x1, y1) + f(x2, y2). Every input and the output weigh f = 0, so from each
     * input, and into the output, the search finds the two quarters of the test above:
     * h0 = (0.75, 0.25) and h1 = (0.25, 0.75), links of weight 0.25. From h0 the pattern is
     * f + 0.25 (clamped at 1): the same two points, h0 -> h0 dropped (a loop), h0 -> h1 of
     * weight 0.5; from h1, h1 -> h0 would be recurrent (h0 was found first) and is dropped. */
    otc_substrate *s = NULL;
    es_substrate(1, &s);
    const otc_es_network *es = otc_substrate_es(s);
    REQUIRE(es);
    CHECK(es->n_inputs == 2 && es->n_outputs == 1 && es->n_hidden == 2);
    CHECK(es->x[3] == 0.75f && es->y[3] == 0.25f && es->x[4] == 0.25f && es->y[4] == 0.75f);
    CHECK(es->net->n_conns == 7);
    const int want[7][2] = {{0, 3}, {0, 4}, {1, 3}, {1, 4}, {3, 4}, {3, 2}, {4, 2}};
    const float ww[7] = {0.25f, 0.25f, 0.25f, 0.25f, 0.5f, 0.25f, 0.25f};
    for (int k = 0; k < 7 && k < es->net->n_conns; k++) {
        const otc_neat_conn *cn = otc_neat_genome_find_pair(es->net, want[k][0], want[k][1]);
        CHECK_MSG(cn, "link %d -> %d", want[k][0], want[k][1]);
        if (cn) CHECK_NEAR(cn->weight, ww[k], 1e-6);
    }
    /* Identity nodes, x = (1, 2): h0 = 0.25 * 3 = 0.75, h1 = 0.75 + 0.5 * 0.75 = 1.125,
     * out = 0.25 * (0.75 + 1.125) = 0.46875. */
    const float x[2] = {1.0f, 2.0f};
    float y = 0;
    REQUIRE(otc_substrate_forward(s, x, 1, &y) == OTC_OK);
    CHECK_NEAR(y, 0.46875, 1e-6);
    otc_graph *graph = NULL;
    REQUIRE(otc_substrate_graph(s, 0, &graph) == OTC_OK);
    CHECK(otc_graph_output_count(graph) == 1);
    otc_graph_free(graph);
    otc_substrate_free(s);
}

TEST(es_hyperneat_prunes_nodes_on_no_path) {
    /* Weight f(x2, y2) + relu(min(-x1, y1)): from the inputs the search finds h0 and h1 as
     * above, but into the output it finds the mirror points (-0.75, 0.25) and (-0.25, 0.75),
     * which are no hidden nodes. No hidden node reaches the output: all are pruned. */
    otc_substrate *s = NULL;
    es_substrate(-1, &s);
    const otc_es_network *es = otc_substrate_es(s);
    REQUIRE(es);
    CHECK(es->n_hidden == 0);
    CHECK(es->net->n_conns == 0);
    CHECK(es->net->n_nodes == 3);
    const float x[2] = {1.0f, 2.0f};
    float y = 1;
    REQUIRE(otc_substrate_forward(s, x, 1, &y) == OTC_OK);
    CHECK(y == 0.0f);
    otc_substrate_free(s);
}

TEST(es_hyperneat_visual_same_on_1_and_2_threads) {
    double best[2][4];
    for (int t = 0; t < 2; t++) {
        otc_neat_config c;
        otc_neat_population *p = NULL;
        run_example("visual_es.ini", "visual", 20, 4, t + 1, 5, &c, &p);
        REQUIRE(p);
        for (int gen = 0; gen < 4; gen++) best[t][gen] = otc_neat_stats(p, gen)->best_fitness;
        otc_neat_population_free(p);
    }
    for (int gen = 0; gen < 4; gen++) CHECK(best[0][gen] == best[1][gen]);
    printf("best fitness by generation: %.4f %.4f %.4f %.4f\n", best[0][0], best[0][1], best[0][2],
           best[0][3]);
}

/* ---- the retina task ----------------------------------------------------------------------- */

TEST(retina_objects_match_the_papers_sets) {
    /* Kashtan and Alon 2005's objects, drawn 2x2 (top row, bottom row; o lit). */
    const char *left[8] = {"....", "...o", ".o.o", ".o..", ".ooo", "..o.", "oo.o", "o..."};
    const char *right[8] = {"....", "o...", "o.o.", "..o.", "ooo.", ".o..", "o.oo", "...o"};
    int n_left = 0, n_right = 0;
    for (int nib = 0; nib < 16; nib++) {
        char pic[5] = {0};
        for (int k = 0; k < 4; k++) pic[k] = nib >> (3 - k) & 1 ? 'o' : '.';
        bool in_left = false, in_right = false;
        for (int i = 0; i < 8; i++) {
            in_left |= !strcmp(pic, left[i]);
            in_right |= !strcmp(pic, right[i]);
        }
        CHECK_MSG(otc_retina_left_object(nib) == in_left, "left %s", pic);
        CHECK_MSG(otc_retina_right_object(nib) == in_right, "right %s", pic);
        n_left += otc_retina_left_object(nib);
        n_right += otc_retina_right_object(nib);
    }
    CHECK(n_left == 8 && n_right == 8);
    int and_ = 0, or_ = 0;
    for (int p = 0; p < OTC_RETINA_PATTERNS; p++) {
        and_ += otc_retina_target(p, false);
        or_ += otc_retina_target(p, true);
    }
    CHECK(and_ == 64); /* 8 x 8 */
    CHECK(or_ == 192); /* 256 - 8 x 8 with neither */
    /* Pattern 0x5A: left .o.o (right column), right o.o. (left column); the 4x2 grid row by
     * row: top . o o . , bottom . o o . */
    float px[8];
    otc_retina_pixels(0x5A, px);
    const float want[8] = {0, 1, 1, 0, 0, 1, 1, 0};
    for (int k = 0; k < 8; k++) CHECK(px[k] == want[k]);
    CHECK(otc_retina_target(0x5A, false));
    CHECK(!otc_retina_target(0x5F, false) && otc_retina_target(0x5F, true));
}

TEST(retina_score_of_a_constant_substrate) {
    /* All weights 0 and no biases: a logistic output of 0.5 on every pattern, on neither side
     * of 0.5, so nothing is correct; E = 256 * 0.5 = 128, fitness = 1000 / (1 + 128^2). */
    otc_neat_config c = config_of("num_inputs = 4\nnum_outputs = 1\n",
                                  "input_grid = 4x2\noutput_grid = 1x1\nactivation = logistic\n");
    otc_substrate *s = NULL;
    REQUIRE(otc_substrate_new(&c, 1, &s) == OTC_OK);
    double fitness = 0;
    int correct = -1;
    REQUIRE(otc_retina_score(s, OTC_RETINA_AND, &fitness, &correct, NULL) == OTC_OK);
    CHECK(correct == 0);
    CHECK_NEAR(fitness, 1000.0 / (1.0 + 128.0 * 128.0), 1e-9);
    /* Bias -10: ~0 everywhere, right for the 192 non-targets; E = 64 (1 - s(-10)) + 192 s(-10). */
    otc_substrate_biases(s, 0)[0] = -10.0f;
    REQUIRE(otc_retina_score(s, OTC_RETINA_AND, &fitness, &correct, NULL) == OTC_OK);
    CHECK(correct == 192);
    double sg = 1.0 / (1.0 + exp(10.0)), e = 64 * (1 - sg) + 192 * sg;
    CHECK_NEAR(fitness, 1000.0 / (1.0 + e * e), 1e-4);
    otc_substrate_free(s);
}

/* The retina's pixels for side s (0 left, 1 right) in the 4x2 input grid (row * 4 + col). */
enum { TL, TR, BL, BR };
static int retina_pixel(int side, int k) {
    return (k / 2) * 4 + 2 * side + k % 2;
}

/* Threshold units worked out by hand from the object sets, K scaling them into logistic steps.
 * A left block holds an object iff it has at most one lit pixel, or its right column is lit
 * and its left column is not: count >= 2 is step(TL + TR + BL + BR - 1.5), "right column, not
 * all of the left" step(TR + BR - TL / 2 - BL / 2 - 1.25) (2 for the column, 1.5 for either
 * L, at most 1 for the rest); the right block mirrors it. Layer 1 (4x2): node 2 s counts side
 * s, node 2 s + 1 finds its column; layer 2 (2x1): node s is side s's object,
 * step(column - count + 0.5). */
static void paint_retina_sides(otc_substrate *s, float K) {
    float *w0 = otc_substrate_weights(s, 0), *b0 = otc_substrate_biases(s, 0);
    float *w1 = otc_substrate_weights(s, 1), *b1 = otc_substrate_biases(s, 1);
    for (int side = 0; side < 2; side++) {
        /* the column the object needs lit: right for the left block, left for the right */
        int near_top = side ? TL : TR, near_bottom = side ? BL : BR;
        int far_top = side ? TR : TL, far_bottom = side ? BR : BL;
        float *count = w0 + (2 * side) * 8, *column = w0 + (2 * side + 1) * 8;
        for (int k = 0; k < 4; k++) count[retina_pixel(side, k)] = K;
        b0[2 * side] = -1.5f * K;
        column[retina_pixel(side, near_top)] = K;
        column[retina_pixel(side, near_bottom)] = K;
        column[retina_pixel(side, far_top)] = -0.5f * K;
        column[retina_pixel(side, far_bottom)] = -0.5f * K;
        b0[2 * side + 1] = -1.25f * K;
        w1[side * 8 + 2 * side] = -K;
        w1[side * 8 + 2 * side + 1] = K;
        b1[side] = 0.5f * K;
    }
}

TEST(retina_hand_built_substrates_solve_it) {
    /* The example's layout, 4x2 -> 4x2 -> 2x1 -> 1x1: the output is step(left + right - 1.5)
     * for AND, step(left + right - 0.5) for OR. E is a sum of logistic tails (< 1e-3). */
    otc_neat_config c = config_of("num_inputs = 4\nnum_outputs = 1\n",
                                  "input_grid = 4x2\nhidden_grids = 4x2 2x1\noutput_grid = 1x1\n"
                                  "activation = logistic\n");
    otc_substrate *s = NULL;
    REQUIRE(otc_substrate_new(&c, 1, &s) == OTC_OK);
    REQUIRE(otc_substrate_layers(s) == 4);
    const float K = 40.0f;
    paint_retina_sides(s, K);
    otc_substrate_weights(s, 2)[0] = otc_substrate_weights(s, 2)[1] = K;
    otc_substrate_biases(s, 2)[0] = -1.5f * K;
    double fitness = 0;
    int correct = 0;
    REQUIRE(otc_retina_score(s, OTC_RETINA_AND, &fitness, &correct, NULL) == OTC_OK);
    CHECK(correct == OTC_RETINA_PATTERNS);
    CHECK(fitness > 999.0);
    otc_substrate_biases(s, 2)[0] = -0.5f * K;
    REQUIRE(otc_retina_score(s, OTC_RETINA_OR, &fitness, &correct, NULL) == OTC_OK);
    CHECK(correct == OTC_RETINA_PATTERNS);
    CHECK(fitness > 999.0);
    /* OR's substrate scored for AND: wrong on the 2 x 8 x 8 patterns with one object only;
     * its answers (the behaviour) are OR's targets all the same. */
    float answers[OTC_RETINA_PATTERNS];
    REQUIRE(otc_retina_score(s, OTC_RETINA_AND, &fitness, &correct, answers) == OTC_OK);
    CHECK(correct == OTC_RETINA_PATTERNS - 128);
    int as_or = 0;
    for (int p = 0; p < OTC_RETINA_PATTERNS; p++) as_or += answers[p] == otc_retina_target(p, true);
    CHECK(as_or == OTC_RETINA_PATTERNS);
    /* A single output is not the two the sides goal reads. */
    CHECK(otc_retina_score(s, OTC_RETINA_SIDES, &fitness, &correct, NULL) == OTC_ERR_CONFIG);
    otc_substrate_free(s);
    /* 4x2 -> 4x2 -> 2x1, the two modules' answers as the outputs (retina:sides). */
    c = config_of(
        "num_inputs = 4\nnum_outputs = 1\n",
        "input_grid = 4x2\nhidden_grids = 4x2\noutput_grid = 2x1\nactivation = logistic\n");
    REQUIRE(otc_substrate_new(&c, 1, &s) == OTC_OK);
    paint_retina_sides(s, K);
    REQUIRE(otc_retina_score(s, OTC_RETINA_SIDES, &fitness, &correct, NULL) == OTC_OK);
    CHECK(correct == OTC_RETINA_PATTERNS);
    CHECK(fitness > 999.0);
    /* The left output's bias 1 lower, step(column - count - 0.5), is 0 for every left block
     * (column lit means count >= 2): wrong on the 8 x 16 patterns with a left object, each
     * adding ~1 to E. */
    otc_substrate_biases(s, 1)[0] -= K;
    REQUIRE(otc_retina_score(s, OTC_RETINA_SIDES, &fitness, &correct, NULL) == OTC_OK);
    CHECK(correct == OTC_RETINA_PATTERNS - 128);
    CHECK_NEAR(fitness, 1000.0 / (1.0 + 128.0 * 128.0), 1e-4);
    otc_substrate_free(s);
}

/* The evolved search's question: can a CPPN (not a hand-set substrate) paint a retina
 * solution within the example's limits (max_weight 8, LEO, painted biases, z1 z2)? A
 * 4-hidden-node CPPN worked out by hand says yes for retina:sides. Each column of a block feeds
 * its own two hidden nodes: row 0 "column empty" (weights -4, bias +2), row 1 "column not full"
 * (weights -4, bias +6). A block holds an object iff its outer column is empty, or is not full
 * while its inner column is empty or full: step(2 a + 2 b + d - e - 1.5) over outer empty a,
 * outer not full b, inner empty d, inner not full e (hand-checked against all 16 blocks), so
 * outer hidden nodes feed the output +8, inner ones +4 / -4, bias -6. The CPPN: weight =
 * tanh(6 |x1| - y1 + 10 z1 - 1.5) + tanh(-10 z1) / 2 (-1/2 on the first layer pair, whose z1
 * is -1; on the second: about 1 for outer sources, tanh(-y1) for inner ones), bias =
 * 1/2 + y2 / 2 - 5 z2 / 4, LEO = gaussian(3 (x1 - x2)) - 0.3 (only a node's own column, then
 * its own side, as with the locality seed). */
TEST(retina_sides_hand_built_cppn_solves_it) {
    otc_neat_config c = config_of("num_inputs = 6\nnum_outputs = 3\n",
                                  "input_grid = 4x2\nhidden_grids = 4x2\noutput_grid = 2x1\n"
                                  "max_weight = 8.0\nleo = true\nbias_output = true\n"
                                  "layer_input = true\nactivation = logistic\n");
    /* ids: inputs 0-5 x1 y1 x2 y2 z1 z2; outputs 6 weight, 7 bias, 8 LEO; hidden 9 |x1|,
     * 10 the second layer pair's weight, 11 the first pair's offset, 12 the locality */
    const struct {
        int id;
        otc_neat_node_type type;
        otc_act act;
        float bias;
    } nodes[] = {
        {6, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, 0.0f},  {7, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, 0.5f},
        {8, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, -0.3f}, {9, OTC_NEAT_HIDDEN, OTC_ACT_ABS, 0.0f},
        {10, OTC_NEAT_HIDDEN, OTC_ACT_TANH, -1.5f},    {11, OTC_NEAT_HIDDEN, OTC_ACT_TANH, 0.0f},
        {12, OTC_NEAT_HIDDEN, OTC_ACT_GAUSSIAN, 0.0f}};
    const struct {
        int in, out;
        float w;
    } links[] = {{0, 9, 1.0f},    {9, 10, 6.0f}, {1, 10, -1.0f}, {4, 10, 10.0f},
                 {4, 11, -10.0f}, {10, 6, 1.0f}, {11, 6, 0.5f},  {3, 7, 0.5f},
                 {5, 7, -1.25f},  {0, 12, 3.0f}, {2, 12, -3.0f}, {12, 8, 1.0f}};
    otc_neat_genome *g = otc_neat_genome_new();
    REQUIRE(g);
    for (int i = 0; i < 6; i++) {
        otc_neat_node n = {i, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, OTC_AGG_SUM, 1};
        REQUIRE(otc_neat_genome_add_node(g, &n) == OTC_OK);
    }
    for (size_t k = 0; k < sizeof nodes / sizeof nodes[0]; k++) {
        otc_neat_node n = {
            nodes[k].id, nodes[k].type, nodes[k].act, nodes[k].bias, 1, OTC_AGG_SUM, 1};
        REQUIRE(otc_neat_genome_add_node(g, &n) == OTC_OK);
    }
    for (size_t k = 0; k < sizeof links / sizeof links[0]; k++) {
        otc_neat_conn cn = {(int)k, links[k].in, links[k].out, links[k].w, true};
        REQUIRE(otc_neat_genome_add_conn(g, &cn) == OTC_OK);
    }
    otc_substrate *s = NULL;
    REQUIRE(otc_substrate_from_genome(g, &c, 1, NULL, &s) == OTC_OK);
    /* spot checks of the painting: left block's outer top pixel (node 0) into its column's
     * "empty" node (0) and not into the next column's (1); that node's bias; outer and inner
     * "not full" nodes (4, 5) into the left output */
    const float *w0 = otc_substrate_weights(s, 0), *w1 = otc_substrate_weights(s, 1);
    CHECK_NEAR(w0[0 * 8 + 0], -4.0, 1e-3);
    CHECK(w0[1 * 8 + 0] == 0.0f);
    CHECK_NEAR(otc_substrate_biases(s, 0)[0], 2.0, 1e-5);
    CHECK_NEAR(otc_substrate_biases(s, 0)[4], 6.0, 1e-5);
    CHECK_NEAR(w1[0 * 8 + 4], 8.0 * tanh(2.5), 1e-3);
    CHECK_NEAR(w1[0 * 8 + 5], 8.0 * tanh(-0.5), 1e-3);
    CHECK(w1[0 * 8 + 2] == 0.0f && w1[1 * 8 + 1] == 0.0f);
    CHECK_NEAR(otc_substrate_biases(s, 1)[0], -6.0, 1e-5);
    double fitness = 0;
    int correct = 0;
    REQUIRE(otc_retina_score(s, OTC_RETINA_SIDES, &fitness, &correct, NULL) == OTC_OK);
    CHECK_MSG(correct == OTC_RETINA_PATTERNS, "%d patterns right", correct);
    otc_substrate_free(s);
    otc_neat_genome_free(g);
}

/* The connection cost of a painted substrate, counted by hand. Layers 2x1 -> 2x1 -> 1x1 (nodes
 * at x = -0.5, 0.5, then 0; y = 0; z = -1, 0, 1) painted by weight = x1 - x2 (threshold 0.2):
 * into the hidden layer only the two crossing links (|x1 - x2| = 1), each of squared length
 * 1 + 1 (dx, dz); into the output both hidden nodes (|x1| = 0.5), each 0.25 + 1. So 4 links,
 * 2 + 2 + 1.25 + 1.25 = 6.5. */
TEST(substrate_cost_hand_counted) {
    otc_neat_config c = config_of(
        "num_inputs = 4\nnum_outputs = 1\n",
        "input_grid = 2x1\nhidden_grids = 2x1\noutput_grid = 1x1\nweight_threshold = 0.2\n");
    const float bias[] = {0};
    const int conn[][2] = {{0, 4}, {2, 4}};
    const float w[] = {1, -1};
    otc_neat_genome *g = cppn(1, bias, conn, w, 2);
    otc_substrate *s = NULL;
    REQUIRE(otc_substrate_from_genome(g, &c, 1, NULL, &s) == OTC_OK);
    double links = 0, length2 = 0;
    REQUIRE(otc_substrate_cost(s, &links, &length2) == OTC_OK);
    CHECK(links == 4);
    CHECK_NEAR(length2, 6.5, 1e-6);
    otc_substrate_free(s);
    /* The NSGA-II objectives paint the same. */
    CHECK(otc_neat_objective_of(&c, OTC_NEAT_OBJ_SUBSTRATE_LINKS, g) == 4);
    CHECK_NEAR(otc_neat_objective_of(&c, OTC_NEAT_OBJ_SUBSTRATE_LENGTH, g), 6.5, 1e-6);
    /* weight = (x1 - x2) / 8 (at most 1 / 8) never passes the threshold: no link, no cost. */
    g->conns[0].weight = 0.125f, g->conns[1].weight = -0.125f;
    CHECK(otc_neat_objective_of(&c, OTC_NEAT_OBJ_SUBSTRATE_LINKS, g) == 0);
    CHECK(otc_neat_objective_of(&c, OTC_NEAT_OBJ_SUBSTRATE_LENGTH, g) == 0);
    otc_neat_genome_free(g);
}

/* A pool's kept substrate is painted again whole: the cost test's CPPN (weight = x1 - x2: 4
 * links) then one whose weights never pass the threshold (no link) then the first again, in
 * the same substrate; another config gets its own. The layers by hand: the hidden nodes read
 * the other column at -3 / +3 ((1 - 0.2) / 0.8 x 3), the output reads them at -1.125 / +1.125
 * ((0.5 - 0.2) / 0.8 x 3), so y = -3.375 (x0 + x1), the same through otc_substrate_run. */
TEST(substrate_pool_repaints_kept_substrates) {
    otc_neat_config c = config_of(
        "num_inputs = 4\nnum_outputs = 1\n",
        "input_grid = 2x1\nhidden_grids = 2x1\noutput_grid = 1x1\nweight_threshold = 0.2\n");
    otc_neat_config flat =
        config_of("num_inputs = 4\nnum_outputs = 1\n", "input_grid = 2x1\noutput_grid = 1x1\n");
    const float bias[] = {0};
    const int conn[][2] = {{0, 4}, {2, 4}};
    const float w[] = {1, -1}, small[] = {0.125f, -0.125f};
    otc_neat_genome *a = cppn(1, bias, conn, w, 2), *b = cppn(1, bias, conn, small, 2);
    otc_substrate_pool *pool = otc_substrate_pool_new();
    REQUIRE(pool);
    otc_substrate *s = NULL, *t = NULL;
    double links = 0, length2 = 0;
    REQUIRE(otc_substrate_pool_paint(pool, a, &c, 1, NULL, &s) == OTC_OK);
    const float x[] = {1, 2, -1, 0.5f};
    float y[2];
    const float *yr = NULL;
    REQUIRE(otc_substrate_forward(s, x, 2, y) == OTC_OK);
    CHECK_NEAR(y[0], -10.125, 1e-4);
    CHECK_NEAR(y[1], 1.6875, 1e-4);
    REQUIRE(otc_substrate_run(s, x, 2, &yr) == OTC_OK);
    CHECK(yr && yr[0] == y[0] && yr[1] == y[1]);
    otc_substrate_pool_give(pool, &c, 1, s);
    REQUIRE(otc_substrate_pool_paint(pool, b, &c, 1, NULL, &t) == OTC_OK);
    CHECK(t == s); /* kept */
    REQUIRE(otc_substrate_cost(t, &links, &length2) == OTC_OK);
    CHECK(links == 0 && length2 == 0);
    otc_substrate_pool_give(pool, &c, 1, t);
    REQUIRE(otc_substrate_pool_paint(pool, a, &c, 1, NULL, &s) == OTC_OK);
    REQUIRE(otc_substrate_cost(s, &links, &length2) == OTC_OK);
    CHECK(links == 4);
    CHECK_NEAR(length2, 6.5, 1e-6);
    REQUIRE(otc_substrate_pool_paint(pool, a, &flat, 1, NULL, &t) == OTC_OK);
    CHECK(otc_substrate_layers(t) == 2 && otc_substrate_layers(s) == 3);
    otc_substrate_pool_give(pool, &flat, 1, t);
    otc_substrate_pool_give(pool, &c, 1, s); /* the pool keeps flat's now: freed */
    otc_substrate_pool_free(pool);
    otc_neat_genome_free(a);
    otc_neat_genome_free(b);
}

TEST(retina_evolution_improves) {
    otc_neat_config c;
    otc_neat_population *p = NULL;
    run_example("retina.ini", "retina", 50, 30, 1, 1, &c, &p);
    REQUIRE(p);
    int n = otc_neat_stats_count(p);
    double first = otc_neat_stats(p, 0)->best_fitness,
           last = otc_neat_stats(p, n - 1)->best_fitness;
    printf("best fitness: generation 0 %.4f, generation %d %.4f\n", first, n - 1, last);
    CHECK(last > first);
    otc_neat_population_free(p);
}

/* ---- Baldwinian training of painted substrates ---------------------------------------------- */

/* The retina's 256 patterns and AND targets, for training by hand. */
static void retina_rows(float *x, float *t) {
    for (int p = 0; p < OTC_RETINA_PATTERNS; p++) {
        otc_retina_pixels(p, x + 8 * p);
        t[p] = otc_retina_target(p, false);
    }
}

/* The MSE of s's outputs against t over `rows` rows, in double from the forward pass alone (not
 * the training code's loss). */
static double mse_of(otc_substrate *s, const float *x, const float *t, int rows) {
    int n_out = otc_substrate_size(s, otc_substrate_layers(s) - 1);
    float *y = malloc(sizeof(float) * (size_t)rows * (size_t)n_out);
    bool ok = y && otc_substrate_forward(s, x, rows, y) == OTC_OK;
    CHECK(ok);
    if (!ok) {
        free(y);
        return NAN;
    }
    double e = 0;
    for (int i = 0; i < rows * n_out; i++) e += ((double)y[i] - t[i]) * ((double)y[i] - t[i]);
    free(y);
    return e / (rows * n_out);
}

/* Every weight of s painted from a fixed formula, one in three (and the whole first column of
 * layer 0) left 0: links the CPPN did not express. Biases too when bias is set. */
static void paint_sparse(otc_substrate *s, bool bias) {
    for (int l = 0; l + 1 < otc_substrate_layers(s); l++) {
        int n_in = otc_substrate_size(s, l), n_out = otc_substrate_size(s, l + 1);
        float *w = otc_substrate_weights(s, l);
        for (int k = 0; k < n_in * n_out; k++)
            w[k] = k % 3 == 2 || (l == 0 && k % n_in == 0) ? 0.0f
                                                           : 0.9f * sinf(1.7f * (float)(k + 7 * l));
        for (int j = 0; bias && j < n_out; j++)
            otc_substrate_biases(s, l)[j] = 0.3f * cosf((float)(j + l));
    }
}

/* Training on the retina (AND, full batch) lowers the MSE (measured from the forward pass) and
 * the task's error, and leaves every weight painted 0 exactly 0; without bias_output the
 * biases stay 0 too. Mini-batches lower it as well, and the same training twice gives the same
 * weights bit for bit. */
TEST(substrate_training_tunes_only_painted_links) {
    static float x[OTC_RETINA_PATTERNS * 8], t[OTC_RETINA_PATTERNS];
    retina_rows(x, t);
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        otc_neat_config c = config_of(with_bias ? "num_inputs = 4\nnum_outputs = 2\n"
                                                : "num_inputs = 4\nnum_outputs = 1\n",
                                      with_bias ? "input_grid = 4x2\nhidden_grids = 4x2 2x1\n"
                                                  "output_grid = 1x1\nactivation = logistic\n"
                                                  "bias_output = true\n"
                                                : "input_grid = 4x2\nhidden_grids = 4x2 2x1\n"
                                                  "output_grid = 1x1\nactivation = logistic\n");
        otc_substrate *s = NULL, *again = NULL;
        REQUIRE(otc_substrate_new(&c, 1, &s) == OTC_OK);
        REQUIRE(otc_substrate_new(&c, 1, &again) == OTC_OK);
        paint_sparse(s, with_bias);
        double before = mse_of(s, x, t, OTC_RETINA_PATTERNS), f0 = 0, f1 = 0;
        int right0 = 0, right1 = 0;
        REQUIRE(otc_retina_score(s, OTC_RETINA_AND, &f0, &right0, NULL) == OTC_OK);
        bool zero[3][64];
        for (int l = 0; l < 3; l++)
            for (int k = 0; k < otc_substrate_size(s, l) * otc_substrate_size(s, l + 1); k++)
                zero[l][k] = otc_substrate_weights(s, l)[k] == 0.0f;
        otc_substrate_train_options o = {300, 256, 0.05f};
        float loss = -1;
        REQUIRE(otc_substrate_train(s, x, t, OTC_RETINA_PATTERNS, &o, &loss) == OTC_OK);
        double after = mse_of(s, x, t, OTC_RETINA_PATTERNS);
        REQUIRE(otc_retina_score(s, OTC_RETINA_AND, &f1, &right1, NULL) == OTC_OK);
        printf("bias %d: MSE %.4f -> %.4f, patterns right %d -> %d, fitness %.4f -> %.4f\n",
               with_bias, before, after, right0, right1, f0, f1);
        CHECK(after < 0.5 * before);
        CHECK(f1 > f0);
        CHECK(right1 >= right0);
        /* the last step's loss is the MSE before its update: near the final one */
        CHECK(loss > 0 && fabs(loss - after) < 0.1 * before);
        int zeros = 0, moved = 0;
        for (int l = 0; l < 3; l++) {
            const float *w = otc_substrate_weights(s, l);
            for (int k = 0; k < otc_substrate_size(s, l) * otc_substrate_size(s, l + 1); k++) {
                if (zero[l][k]) {
                    zeros++;
                    CHECK(w[k] == 0.0f);
                } else {
                    moved += w[k] != 0.9f * sinf(1.7f * (float)(k + 7 * l));
                }
            }
            for (int j = 0; !with_bias && j < otc_substrate_size(s, l + 1); j++)
                CHECK(otc_substrate_biases(s, l)[j] == 0.0f);
        }
        CHECK(zeros ==
              21 + 8 - 3 + 5); /* k % 3 == 2: 21 of 64, 5 of 16; first column 8, 3 shared */
        CHECK(moved > 0);
        /* Mini-batches of 32: the same weights from the same start, and lower too. */
        paint_sparse(s, with_bias);
        paint_sparse(again, with_bias);
        o.batch_size = 32;
        REQUIRE(otc_substrate_train(s, x, t, OTC_RETINA_PATTERNS, &o, NULL) == OTC_OK);
        REQUIRE(otc_substrate_train(again, x, t, OTC_RETINA_PATTERNS, &o, NULL) == OTC_OK);
        double mini = mse_of(s, x, t, OTC_RETINA_PATTERNS);
        printf("bias %d: mini-batches of 32: MSE %.4f\n", with_bias, mini);
        CHECK(mini < 0.8 * before);
        for (int l = 0; l < 3; l++)
            CHECK(!memcmp(otc_substrate_weights(s, l), otc_substrate_weights(again, l),
                          sizeof(float) * (size_t)otc_substrate_size(s, l) *
                              (size_t)otc_substrate_size(s, l + 1)));
        otc_substrate_free(s);
        otc_substrate_free(again);
    }
}

/* The gradient against central finite differences of the MSE computed from the forward pass,
 * for every painted weight and bias of a tanh substrate with painted biases; a weight painted 0
 * gets exactly 0. */
TEST(substrate_gradient_matches_finite_differences) {
    otc_neat_config c = config_of("num_inputs = 4\nnum_outputs = 2\n",
                                  "input_grid = 4x2\nhidden_grids = 2x2\noutput_grid = 2x1\n"
                                  "activation = tanh\nbias_output = true\n");
    otc_substrate *s = NULL;
    REQUIRE(otc_substrate_new(&c, 1, &s) == OTC_OK);
    paint_sparse(s, true);
    enum { ROWS = 16 };
    float x[ROWS * 8], t[ROWS * 2];
    for (int r = 0; r < ROWS; r++) {
        otc_retina_pixels(r * 13 + 5, x + 8 * r);
        t[2 * r] = (float)(r % 2);
        t[2 * r + 1] = 0.25f * (float)(r % 4) - 0.3f;
    }
    float gw0[32], gw1[8], gb0[4], gb1[2], loss = 0;
    float *gw[] = {gw0, gw1}, *gb[] = {gb0, gb1};
    REQUIRE(otc_substrate_gradient(s, x, t, ROWS, &loss, gw, gb) == OTC_OK);
    CHECK_NEAR(loss, mse_of(s, x, t, ROWS), 1e-5);
    const float h = 1e-2f;
    int checked = 0;
    for (int l = 0; l < 2; l++) {
        int n = otc_substrate_size(s, l) * otc_substrate_size(s, l + 1);
        for (int k = 0; k < n + otc_substrate_size(s, l + 1); k++) {
            bool is_w = k < n;
            float *p = is_w ? otc_substrate_weights(s, l) + k : otc_substrate_biases(s, l) + k - n;
            float g = is_w ? gw[l][k] : gb[l][k - n];
            if (is_w && *p == 0.0f) {
                CHECK(g == 0.0f);
                continue;
            }
            float keep = *p;
            *p = keep + h;
            double up = mse_of(s, x, t, ROWS);
            *p = keep - h;
            double down = mse_of(s, x, t, ROWS);
            *p = keep;
            double fd = (up - down) / (2 * h);
            CHECK_NEAR(g, fd, 2e-3 + 0.02 * fabs(fd));
            checked++;
        }
    }
    CHECK(checked == 19 + 6 + 4 + 2); /* 32 - 13 zeros, 8 - 2 zeros, the biases */
    otc_substrate_free(s);
}

/* c's run of task_name from seed for gens (at most 8) generations on 1 and on 2 threads: the
 * best fitness of every generation the same on both. The 1-thread population is returned
 * (NULL on failure) and *task the task that ran, both for the caller to free. */
static otc_neat_population *same_on_1_and_2_threads(const otc_neat_config *c, const char *task_name,
                                                    uint64_t seed, int gens, otc_neat_task **task) {
    double best[2][8];
    otc_neat_population *keep = NULL;
    *task = NULL;
    if (otc_neat_task_create(task_name, c, task) != OTC_OK) {
        CHECK_MSG(false, "%s", otc_last_error());
        return NULL;
    }
    for (int th = 0; th < 2 && gens <= 8; th++) {
        otc_neat_population *p = NULL;
        CHECK(otc_neat_population_new(c, seed, &p) == OTC_OK);
        otc_neat_run_options o = {.generations = gens, .threads = th + 1};
        CHECK(p && otc_neat_run(p, *task, &o, NULL) == OTC_OK);
        if (!p || otc_neat_stats_count(p) != gens) {
            otc_neat_population_free(p);
            otc_neat_population_free(keep);
            return NULL;
        }
        for (int gen = 0; gen < gens; gen++) best[th][gen] = otc_neat_stats(p, gen)->best_fitness;
        if (th)
            otc_neat_population_free(p);
        else
            keep = p;
    }
    printf("%s: best fitness by generation:", task_name);
    for (int gen = 0; keep && gen < gens; gen++) {
        CHECK(best[0][gen] == best[1][gen]);
        printf(" %.4f", best[0][gen]);
    }
    printf("\n");
    return keep;
}

/* The example config INI with pop_size genomes into *c. */
static void load_example(const char *ini, int pop_size, otc_neat_config *c) {
    char path[512];
    snprintf(path, sizeof path, "%s/examples/neat/%s", OTC_SOURCE_DIR, ini);
    REQUIRE(otc_neat_config_load(path, c) == OTC_OK);
    c->pop_size = pop_size;
}

/* A short Baldwinian run of the example: the same generations on 1 and 2 threads, and the
 * saved champion is the trained substrate (its weights the task's trained ones, not the
 * CPPN's painted ones, and its answers the trained substrate's). */
TEST(retina_baldwinian_same_on_1_and_2_threads) {
    otc_neat_config c;
    load_example("retina_baldwin.ini", 20, &c);
    otc_neat_task *task = NULL;
    otc_neat_population *keep = same_on_1_and_2_threads(&c, "retina", 3, 3, &task);
    REQUIRE(keep);
    CHECK(c.train_steps > 0 && !c.lamarckian);
    REQUIRE(task->substrate);
    otc_graph *g = NULL;
    otc_substrate *trained = NULL, *painted = NULL;
    REQUIRE(otc_neat_champion_graph(keep, task, &g) == OTC_OK);
    REQUIRE(task->substrate(task, &c, otc_neat_champion(keep), &trained) == OTC_OK);
    REQUIRE(otc_substrate_from_genome(otc_neat_champion(keep), &c, 1, NULL, &painted) == OTC_OK);
    const otc_tensor *w = otc_graph_param(g, otc_graph_find(g, "layer1.weight"));
    REQUIRE(w && w->size == 64);
    int same_trained = 0, same_painted = 0;
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 8; i++) {
            float v = w->data[i * 8 + j]; /* the graph's [in, out] */
            same_trained += v == otc_substrate_weights(trained, 0)[j * 8 + i];
            same_painted += v == otc_substrate_weights(painted, 0)[j * 8 + i];
        }
    CHECK(same_trained == 64);
    CHECK(same_painted < 64);
    double fitness = 0;
    int right = 0;
    REQUIRE(otc_retina_score(trained, OTC_RETINA_AND, &fitness, &right, NULL) == OTC_OK);
    CHECK_NEAR(fitness, otc_neat_champion(keep)->fitness, 1e-9);
    otc_substrate_free(trained);
    otc_substrate_free(painted);
    otc_graph_free(g);
    otc_neat_task_free(task);
    otc_neat_population_free(keep);
}

/* The visual task trains too (its 75 trials against a 1 at the large box's centre): a short
 * run of visual.ini with 10 steps per genome is the same on 1 and 2 threads, and its champion's
 * recorded fitness is its trained substrate's score. */
TEST(visual_baldwinian_same_on_1_and_2_threads) {
    otc_neat_config c;
    load_example("visual.ini", 20, &c);
    c.train_steps = 10;
    c.batch_size = 75;
    c.learning_rate = 0.1;
    c.lamarckian = false;
    otc_neat_task *task = NULL;
    otc_neat_population *keep = same_on_1_and_2_threads(&c, "visual", 4, 3, &task);
    REQUIRE(keep);
    otc_substrate *trained = NULL;
    REQUIRE(task->substrate(task, &c, otc_neat_champion(keep), &trained) == OTC_OK);
    double fitness = 0;
    int hits = 0;
    REQUIRE(otc_visual_score(trained, &fitness, &hits, NULL) == OTC_OK);
    CHECK_NEAR(fitness, otc_neat_champion(keep)->fitness, 1e-9);
    otc_substrate_free(trained);
    otc_neat_task_free(task);
    otc_neat_population_free(keep);
}

/* ---- Baldwinian training of ES-HyperNEAT substrates ---------------------------------------- */

/* The network of es_hyperneat_network_links_and_runs (2 inputs, h0 and h1, 1 output; 7 links)
 * as a tanh substrate with painted biases 0.3 + 0.2 x (bias_output), or without biases. */
static void es_tanh_substrate(bool bias, otc_substrate **s) {
    const char *keys = ES_KEYS "input_grid = 2x1\noutput_grid = 1x1\ninitial_depth = 1\n"
                               "maximum_depth = 3\ndivision_threshold = 0.01\n"
                               "variance_threshold = 0.03\nband_threshold = 0.2\n"
                               "activation = tanh\n";
    char sub[1024];
    snprintf(sub, sizeof sub, "%s%s", keys, bias ? "bias_output = true\n" : "");
    otc_neat_config c = config_of(
        bias ? "num_inputs = 4\nnum_outputs = 2\n" : "num_inputs = 4\nnum_outputs = 1\n", sub);
    const float b[2] = {0.0f, 0.3f}, w = 0.2f;
    const int conn[1][2] = {{2, 5}};
    otc_neat_genome *g = cppn(bias ? 2 : 1, b, conn, &w, bias ? 1 : 0);
    int innov = 1;
    add_min_term(g, 2, 3, 1.0f, 6, &innov);
    add_min_term(g, 0, 1, 1.0f, 8, &innov);
    paint(&c, g, s);
    otc_neat_genome_free(g);
}

/* The MSE of the evolvable substrate s's network on (x, t), in double, from a flat program of
 * its own built from the network as it is now (not the training code's forward pass). */
static double es_mse_of(otc_substrate *s, const float *x, const float *t, int rows) {
    otc_neat_flat *f = otc_neat_flat_new();
    float y[64];
    bool ok =
        f && rows <= 64 &&
        otc_neat_flat_build(f, otc_substrate_es(s)->net, otc_substrate_es_config(s)) == OTC_OK &&
        otc_neat_flat_forward(f, x, rows, y) == OTC_OK;
    CHECK(ok);
    otc_neat_flat_free(f);
    double e = 0;
    for (int i = 0; i < rows; i++) e += ((double)y[i] - t[i]) * ((double)y[i] - t[i]);
    return ok ? e / rows : NAN;
}

/* 16 rows of the 2-input network's inputs and targets. */
static void es_rows(float *x, float *t) {
    for (int r = 0; r < 16; r++) {
        x[2 * r] = 0.3f * (float)(r % 4) - 0.4f;
        x[2 * r + 1] = 0.25f * (float)(r / 4) - 0.2f;
        t[r] = 0.6f * sinf(2.0f * x[2 * r] - x[2 * r + 1]);
    }
}

/* The evolvable substrate's gradient against central finite differences of the MSE from a
 * flat program of its network, for every link the search placed and every neuron's bias; the
 * inputs' biases get 0. */
TEST(es_substrate_gradient_matches_finite_differences) {
    otc_substrate *s = NULL;
    es_tanh_substrate(true, &s);
    const otc_es_network *es = otc_substrate_es(s);
    REQUIRE(es && es->n_hidden == 2 && es->net->n_conns == 7 && es->net->n_nodes == 5);
    otc_neat_genome *net = es->net;
    CHECK_NEAR(otc_neat_genome_find_node(net, 3)->bias, 0.3 + 0.2 * 0.75, 1e-6);
    float x[32], t[16], gw[7], gb[5], loss = 0;
    es_rows(x, t);
    float *gwp[1] = {gw}, *gbp[1] = {gb};
    REQUIRE(otc_substrate_gradient(s, x, t, 16, &loss, gwp, gbp) == OTC_OK);
    CHECK_NEAR(loss, es_mse_of(s, x, t, 16), 1e-6);
    const float h = 1e-2f;
    int checked = 0;
    for (int k = 0; k < 7 + 5; k++) {
        bool is_w = k < 7;
        if (!is_w && net->nodes[k - 7].type == OTC_NEAT_INPUT) {
            CHECK(gb[k - 7] == 0.0f);
            continue;
        }
        float *p = is_w ? &net->conns[k].weight : &net->nodes[k - 7].bias;
        float g = is_w ? gw[k] : gb[k - 7], keep = *p;
        *p = keep + h;
        double up = es_mse_of(s, x, t, 16);
        *p = keep - h;
        double down = es_mse_of(s, x, t, 16);
        *p = keep;
        double fd = (up - down) / (2 * h);
        CHECK_MSG(fabs(g - fd) < 1e-4 + 0.02 * fabs(fd), "parameter %d: %g, differences %g", k,
                  (double)g, fd);
        checked++;
    }
    CHECK(checked == 7 + 3);
    otc_substrate_free(s);
}

/* Training the evolvable substrate lowers its MSE (from a flat program of the trained network),
 * keeps the links the search placed and adds none, runs the trained network, and trains the
 * biases only with bias_output; the same training twice gives the same network. */
TEST(es_substrate_training_tunes_its_network) {
    float x[32], t[16];
    es_rows(x, t);
    for (int bias = 0; bias < 2; bias++) {
        otc_substrate *s = NULL, *again = NULL;
        es_tanh_substrate(bias, &s);
        es_tanh_substrate(bias, &again);
        const otc_neat_genome *net = otc_substrate_es(s)->net;
        REQUIRE(net->n_conns == 7);
        int in[7], out[7];
        float w0[7];
        for (int k = 0; k < 7; k++) {
            in[k] = net->conns[k].in;
            out[k] = net->conns[k].out;
            w0[k] = net->conns[k].weight;
        }
        double before = es_mse_of(s, x, t, 16);
        otc_substrate_train_options o = {200, 8, 0.05f};
        REQUIRE(otc_substrate_train(s, x, t, 16, &o, NULL) == OTC_OK);
        REQUIRE(otc_substrate_train(again, x, t, 16, &o, NULL) == OTC_OK);
        net = otc_substrate_es(s)->net;
        double after = es_mse_of(s, x, t, 16);
        printf("bias %d: MSE %.5f -> %.5f\n", bias, before, after);
        CHECK(after < 0.3 * before);
        REQUIRE(net->n_conns == 7);
        int moved = 0;
        for (int k = 0; k < 7; k++) {
            CHECK(net->conns[k].in == in[k] && net->conns[k].out == out[k]);
            moved += net->conns[k].weight != w0[k];
            CHECK(net->conns[k].weight == otc_substrate_es(again)->net->conns[k].weight);
        }
        CHECK(moved == 7);
        for (int i = 0; i < net->n_nodes; i++) {
            float b = net->nodes[i].bias;
            if (!bias || net->nodes[i].type == OTC_NEAT_INPUT) CHECK(b == 0.0f);
            CHECK(b == otc_substrate_es(again)->net->nodes[i].bias);
        }
        /* The substrate runs the trained network. */
        float y[16];
        REQUIRE(otc_substrate_forward(s, x, 16, y) == OTC_OK);
        double e = 0;
        for (int r = 0; r < 16; r++) e += ((double)y[r] - t[r]) * ((double)y[r] - t[r]);
        CHECK_NEAR(e / 16, after, 1e-9);
        otc_substrate_free(s);
        otc_substrate_free(again);
    }
}

/* A short Baldwinian run of visual_es.ini (5 steps per genome) is the same on 1 and 2 threads,
 * and its champion's recorded fitness is its trained substrate's score. */
TEST(es_baldwinian_same_on_1_and_2_threads) {
    otc_neat_config c;
    load_example("visual_es.ini", 20, &c);
    c.train_steps = 5;
    c.batch_size = 75;
    c.learning_rate = 0.1;
    c.lamarckian = false;
    otc_neat_task *task = NULL;
    otc_neat_population *keep = same_on_1_and_2_threads(&c, "visual", 5, 3, &task);
    REQUIRE(keep);
    otc_substrate *trained = NULL, *painted = NULL;
    REQUIRE(task->substrate(task, &c, otc_neat_champion(keep), &trained) == OTC_OK);
    REQUIRE(otc_substrate_from_genome(otc_neat_champion(keep), &c, 1, NULL, &painted) == OTC_OK);
    double fitness = 0, untrained = 0;
    int hits = 0;
    REQUIRE(otc_visual_score(trained, &fitness, &hits, NULL) == OTC_OK);
    CHECK_NEAR(fitness, otc_neat_champion(keep)->fitness, 1e-9);
    REQUIRE(otc_visual_score(painted, &untrained, &hits, NULL) == OTC_OK);
    printf("champion: fitness %.4f trained, %.4f as painted\n", fitness, untrained);
    otc_substrate_free(trained);
    otc_substrate_free(painted);
    otc_neat_task_free(task);
    otc_neat_population_free(keep);
}
