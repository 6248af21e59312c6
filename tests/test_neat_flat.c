/* The flat evaluation program: hand-worked networks, and bit-for-bit agreement with the
 * phenotype graph run by the interpreter (the independent reference) on random feed-forward
 * and recurrent genomes; whole runs through either give the same population. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "otc/executor.h"
#include "otc/neat.h"
#include "dpnv_champion.h"

static otc_neat_config base_config(int n_in, int n_out, bool feed_forward) {
    otc_neat_config c;
    otc_neat_config_defaults(&c);
    c.pop_size = 10;
    c.fitness_threshold = 1;
    c.compatibility_threshold = 3;
    c.num_inputs = n_in;
    c.num_outputs = n_out;
    c.feed_forward = feed_forward;
    return c;
}

static float steep(float x) {
    return 1.0f / (1.0f + expf(-4.9f * x));
}

static otc_neat_genome *genome_of(const otc_neat_node *nodes, int nn, const otc_neat_conn *conns,
                                  int nc) {
    otc_neat_genome *g = otc_neat_genome_new();
    for (int i = 0; i < nn; i++) otc_neat_genome_add_node(g, &nodes[i]);
    for (int i = 0; i < nc; i++) otc_neat_genome_add_conn(g, &conns[i]);
    return g;
}

TEST(neat_flat_matches_hand_computation) {
    /* inputs 0,1; bias 2; output 3; hidden 4: h = s(1*x0 - 2*x1 + 0.5*1), o = s(0.7 h + x1 +
     * 0.3); gene 0 is disabled, hidden 5 reaches no output and is not evaluated. */
    otc_neat_node nodes[6] = {{0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {1, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {2, OTC_NEAT_BIAS, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {3, OTC_NEAT_OUTPUT, OTC_ACT_STEEP_SIGMOID, 0.3f, 1, 0, 1},
                              {4, OTC_NEAT_HIDDEN, OTC_ACT_STEEP_SIGMOID, 0, 1, 0, 1},
                              {5, OTC_NEAT_HIDDEN, OTC_ACT_STEEP_SIGMOID, 0, 1, 0, 1}};
    otc_neat_conn conns[7] = {{0, 0, 3, 9.0f, false}, {1, 0, 4, 1.0f, true}, {2, 1, 4, -2.0f, true},
                              {3, 2, 4, 0.5f, true},  {4, 4, 3, 0.7f, true}, {5, 1, 3, 1.0f, true},
                              {6, 4, 5, 3.0f, true}};
    otc_neat_genome *g = genome_of(nodes, 6, conns, 7);
    otc_neat_config c = base_config(2, 1, true);
    c.bias_node = true;
    otc_neat_flat *f = otc_neat_flat_new();
    REQUIRE(f);
    REQUIRE(otc_neat_flat_build(f, g, &c) == OTC_OK);
    CHECK(otc_neat_flat_neurons(f) == 2);
    const float x[8] = {0, 0, 0, 1, 1, 0, 1, 1};
    float y[4];
    REQUIRE(otc_neat_flat_forward(f, x, 4, y) == OTC_OK);
    for (int r = 0; r < 4; r++) {
        float x0 = x[2 * r], x1 = x[2 * r + 1];
        float h = steep(x0 - 2 * x1 + 0.5f), o = steep(0.7f * h + x1 + 0.3f);
        CHECK_NEAR(y[r], o, 1e-5);
        float y1;
        REQUIRE(otc_neat_flat_forward(f, x + 2 * r, 1, &y1) == OTC_OK); /* one row at a time */
        CHECK_NEAR(y1, o, 1e-5);
    }
    otc_neat_flat_free(f);
    otc_neat_genome_free(g);
}

TEST(neat_flat_recurrent_steps_synchronously) {
    /* input 0, output 1 (identity, response 2), hidden 2 (identity): h_t = x_t + 0.5 h_{t-1}
     * (a self loop), o_t = 2 h_{t-1}: every non-input source is read one step late. */
    otc_neat_node nodes[3] = {{0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {1, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, 0, 2, 0, 1},
                              {2, OTC_NEAT_HIDDEN, OTC_ACT_IDENTITY, 0, 1, 0, 1}};
    otc_neat_conn conns[3] = {{0, 0, 2, 1.0f, true}, {1, 2, 2, 0.5f, true}, {2, 2, 1, 1.0f, true}};
    otc_neat_genome *g = genome_of(nodes, 3, conns, 3);
    otc_neat_config c = base_config(1, 1, false);
    otc_neat_flat *f = otc_neat_flat_new();
    REQUIRE(otc_neat_flat_build(f, g, &c) == OTC_OK);
    const float xs[4] = {1, 2, 0, 4};
    const float want[4] = {0, 2, 5, 2.5f}; /* h: 1, 2.5, 1.25, 4.625 */
    for (int pass = 0; pass < 2; pass++) {
        for (int t = 0; t < 4; t++) {
            float y;
            REQUIRE(otc_neat_flat_forward(f, &xs[t], 1, &y) == OTC_OK);
            CHECK_NEAR(y, want[t], 0);
        }
        otc_neat_flat_reset(f); /* the second pass starts from zero state again */
    }
    /* Two rows at once keep separate state. */
    const float x2[2] = {1, 3};
    float y2[2];
    REQUIRE(otc_neat_flat_forward(f, x2, 2, y2) == OTC_OK);
    CHECK(y2[0] == 0 && y2[1] == 0);
    REQUIRE(otc_neat_flat_forward(f, x2, 2, y2) == OTC_OK);
    CHECK(y2[0] == 2 && y2[1] == 6);
    otc_neat_flat_free(f);
    otc_neat_genome_free(g);
}

TEST(neat_flat_refuses_cycles_and_bad_genes) {
    otc_neat_node nodes[4] = {{0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {1, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {2, OTC_NEAT_HIDDEN, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {3, OTC_NEAT_HIDDEN, OTC_ACT_IDENTITY, 0, 1, 0, 1}};
    otc_neat_conn cyc[4] = {
        {0, 0, 2, 1, true}, {1, 2, 3, 1, true}, {2, 3, 2, 1, true}, {3, 3, 1, 1, true}};
    otc_neat_genome *g = genome_of(nodes, 4, cyc, 4);
    otc_neat_config c = base_config(1, 1, true);
    otc_neat_flat *f = otc_neat_flat_new();
    CHECK(otc_neat_flat_build(f, g, &c) == OTC_ERR_CYCLE);
    c.feed_forward = false; /* the same genes are a fine recurrent network */
    CHECK(otc_neat_flat_build(f, g, &c) == OTC_OK);
    CHECK(otc_neat_flat_neurons(f) == 3);
    otc_neat_genome_free(g);
    otc_neat_conn missing[1] = {{0, 0, 7, 1, true}};
    g = genome_of(nodes, 4, missing, 1);
    CHECK(otc_neat_flat_build(f, g, &c) == OTC_ERR_FORMAT);
    CHECK(strstr(otc_last_error(), "connection 0 (0 -> 7)") != NULL);
    otc_neat_genome_free(g);
    /* The program is still usable after a failed build. */
    g = genome_of(nodes, 4, cyc, 4);
    c.feed_forward = false;
    REQUIRE(otc_neat_flat_build(f, g, &c) == OTC_OK);
    float x = 1, y = -1;
    REQUIRE(otc_neat_flat_forward(f, &x, 1, &y) == OTC_OK);
    CHECK(y == 0); /* the output reads hidden 3 a step late */
    otc_neat_flat_free(f);
    otc_neat_genome_free(g);
}

TEST(neat_flat_node_ids_far_apart_and_reused_program) {
    /* input 0, output 1, hidden H: o = 2 * (3 * x) = 6x (identity throughout). H small (the
     * direct id map), then huge (looked up by search), then a genome whose gene names the
     * earlier small H it does not have: the program's stale map must not find it. */
    const int hidden_ids[3] = {40, 5000000, 40};
    otc_neat_config c = base_config(1, 1, true);
    otc_neat_flat *f = otc_neat_flat_new();
    REQUIRE(f);
    for (int k = 0; k < 3; k++) {
        int h = hidden_ids[k], named = k == 2 ? 41 : h;
        otc_neat_node nodes[3] = {{0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                                  {1, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                                  {h + (k == 2), OTC_NEAT_HIDDEN, OTC_ACT_IDENTITY, 0, 1, 0, 1}};
        otc_neat_conn conns[2] = {{0, 0, named, 3.0f, true}, {1, k == 2 ? 40 : h, 1, 2.0f, true}};
        otc_neat_genome *g = genome_of(nodes, 3, conns, 2);
        otc_status st = otc_neat_flat_build(f, g, &c);
        if (k < 2) {
            REQUIRE(st == OTC_OK);
            float x = 1.5f, y = 0;
            REQUIRE(otc_neat_flat_forward(f, &x, 1, &y) == OTC_OK);
            CHECK_NEAR(y, 9.0f, 0);
        } else {
            CHECK(st == OTC_ERR_FORMAT);
            CHECK(strstr(otc_last_error(), "connection 1 (40 -> 1)") != NULL);
        }
        otc_neat_genome_free(g);
    }
    otc_neat_flat_free(f);
}

/* A random genome: a fresh one put through many mutations with high structural rates, every
 * activation allowed, so hidden chains, disabled genes, unreachable nodes and (recurrent)
 * loops all occur. */
static otc_neat_genome *random_genome(const otc_neat_config *c, otc_neat_innovations *t,
                                      otc_rng *rng, int rounds) {
    otc_neat_genome *g = otc_neat_genome_new();
    if (!g || otc_neat_genome_init(g, c, t, rng) != OTC_OK) return g;
    for (int r = 0; r < rounds; r++) otc_neat_mutate(g, c, t, rng);
    return g;
}

static otc_neat_config random_config(bool feed_forward) {
    otc_neat_config c = base_config(3, 2, feed_forward);
    c.bias_node = true;
    c.node_add_prob = 0.4;
    c.conn_add_prob = 0.7;
    c.node_delete_prob = 0.05;
    c.conn_delete_prob = 0.05;
    c.enabled_mutate_rate = 0.05;
    c.activation_mutate_rate = 0.3;
    c.n_activation_options = OTC_ACT_COUNT;
    for (int a = 0; a < OTC_ACT_COUNT; a++) c.activation_options[a] = (otc_act)a;
    c.bias.init_stdev = c.response.init_stdev = 1.0;
    c.response.mutate_rate = 0.5;
    c.response.mutate_power = 0.5;
    c.conn_add_recurrent_prob = -1;
    return c;
}

/* Same bits, NaN included. */
static bool same_bits(const float *a, const float *b, int n) {
    return memcmp(a, b, sizeof *a * (size_t)n) == 0;
}

/* The graph's outputs for x [batch, n_in] into y [batch, n_out]. */
static bool graph_forward(otc_executor *ex, const otc_neat_phenotype *ph, const float *x, int batch,
                          float *y) {
    if (otc_exec_set_input(ex, ph->input, x, batch) != OTC_OK || otc_exec_forward(ex) != OTC_OK)
        return false;
    for (int k = 0; k < ph->n_outputs; k++) {
        const float *v;
        if (otc_exec_value(ex, otc_graph_output(ph->graph, k), &v, NULL) != OTC_OK) return false;
        for (int b = 0; b < batch; b++) y[b * ph->n_outputs + k] = v[b];
    }
    return true;
}

static void compare_random_genomes(bool feed_forward, uint64_t seed0) {
    otc_neat_config c = random_config(feed_forward);
    otc_neat_flat *f = otc_neat_flat_new(); /* one program reused for every genome */
    REQUIRE(f);
    int compared = 0, with_hidden = 0;
    for (uint64_t seed = seed0; seed < seed0 + 150; seed++) {
        otc_rng rng;
        otc_rng_seed(&rng, seed);
        otc_neat_innovations *t = otc_neat_innovations_new(c.num_inputs + 1 + c.num_outputs, 0);
        otc_neat_genome *g = random_genome(&c, t, &rng, 2 + (int)(seed % 25));
        REQUIRE(g);
        otc_neat_phenotype *ph = NULL;
        otc_status st = otc_neat_phenotype_build(g, &c, &ph);
        if (st != OTC_OK)
            fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, otc_last_error());
        REQUIRE(st == OTC_OK);
        otc_executor *ex = otc_interpreter_new(ph->graph, &(otc_exec_options){.inference = true});
        REQUIRE(ex);
        REQUIRE(otc_neat_flat_build(f, g, &c) == OTC_OK);
        with_hidden += otc_neat_genome_hidden_count(g) > 0;
        /* Several steps of 1 and of 5 rows (recurrent state carries over). */
        for (int batch = 1; batch <= 5; batch += 4) {
            otc_exec_reset_state(ex);
            otc_neat_flat_reset(f);
            for (int step = 0; step < 6; step++) {
                float x[15], ya[10], yb[10];
                for (int i = 0; i < 3 * batch; i++) x[i] = (float)(4 * otc_rng_uniform(&rng) - 2);
                REQUIRE(graph_forward(ex, ph, x, batch, ya));
                REQUIRE(otc_neat_flat_forward(f, x, batch, yb) == OTC_OK);
                CHECK_MSG(same_bits(ya, yb, 2 * batch),
                          "seed %llu batch %d step %d: graph %.9g %.9g, flat %.9g %.9g",
                          (unsigned long long)seed, batch, step, (double)ya[0], (double)ya[1],
                          (double)yb[0], (double)yb[1]);
                compared++;
            }
        }
        otc_exec_free(ex);
        otc_neat_phenotype_free(ph);
        otc_neat_genome_free(g);
        otc_neat_innovations_free(t);
    }
    CHECK(compared == 150 * 12);
    CHECK(with_hidden > 100); /* the genomes are not trivial */
    otc_neat_flat_free(f);
}

TEST(neat_flat_equals_graph_feed_forward) {
    compare_random_genomes(true, 1);
}

TEST(neat_flat_equals_graph_recurrent) {
    compare_random_genomes(false, 1000);
}

/* ---- whole runs ------------------------------------------------------------------------ */

/* The population as canonical text (checkpoint JSON without wall-clock times). */
static char *state_text(const otc_neat_population *p, const char *path) {
    if (otc_neat_checkpoint_save(p, path) != OTC_OK) return NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (text && fread(text, 1, (size_t)n, fp) != (size_t)n) n = 0;
    if (text) text[n] = '\0';
    fclose(fp);
    remove(path);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!j) return NULL;
    cJSON *st, *stats = cJSON_GetObjectItem(j, "stats");
    cJSON_ArrayForEach(st, stats) cJSON_DeleteItemFromObject(st, "seconds");
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return out;
}

/* `gens` generations of task_name from seed: the state text, or NULL. The graph variant runs
 * every genome's phenotype graph under the interpreter instead of the flat program. */
static char *run_state(const char *ini, const char *task_name, int pop, int gens, int threads,
                       bool graph, const char *tmp) {
    otc_neat_config c;
    otc_neat_task *task = NULL;
    if (otc_neat_config_load(ini, &c) != OTC_OK) return NULL;
    c.pop_size = pop;
    if (otc_neat_task_create(task_name, &c, &task) != OTC_OK) return NULL;
    if (graph) task->make_executor = otc_interpreter_new;
    otc_neat_population *p = NULL;
    char *text = NULL;
    if (otc_neat_population_new(&c, 5, &p) == OTC_OK) {
        otc_neat_step_options o = {.threads = threads};
        bool ok = true;
        for (int g = 0; g < gens && ok && !otc_neat_solved(p); g++)
            ok = otc_neat_step(p, task, &o, NULL) == OTC_OK;
        if (ok) text = state_text(p, tmp);
    }
    otc_neat_population_free(p);
    otc_neat_task_free(task);
    return text;
}

static void same_runs(const char *ini, const char *task_name, const char *tag, int pop, int gens) {
    /* Files named per test: ctest runs these tests in parallel. */
    char path[3][512];
    for (int k = 0; k < 3; k++)
        snprintf(path[k], sizeof path[k], "%s/flat_%s_%c.json", OTC_BINARY_DIR, tag, 'a' + k);
    char *flat1 = run_state(ini, task_name, pop, gens, 1, false, path[0]);
    char *flat2 = run_state(ini, task_name, pop, gens, 2, false, path[1]);
    char *graph = run_state(ini, task_name, pop, gens, 2, true, path[2]);
    REQUIRE(flat1 && flat2 && graph);
    CHECK_MSG(strcmp(flat1, graph) == 0, "%s: flat and graph runs differ", task_name);
    CHECK_MSG(strcmp(flat1, flat2) == 0, "%s: 1 and 2 threads differ", task_name);
    free(flat1);
    free(flat2);
    free(graph);
}

TEST(neat_flat_runs_equal_graph_runs_xor) {
    same_runs(OTC_SOURCE_DIR "/examples/neat/xor.ini", "xor", "xor", 60, 8);
}

TEST(neat_flat_runs_equal_graph_runs_dpnv) {
    /* recurrent genomes, the pole simulator and the champion test */
    same_runs(OTC_SOURCE_DIR "/examples/neat/dpnv.ini", "dpnv", "dpnv", 60, 4);
}

TEST(neat_flat_runs_equal_graph_runs_csv) {
    same_runs(OTC_SOURCE_DIR "/examples/neat/circle.ini",
              "csv:" OTC_SOURCE_DIR "/examples/data/circle.csv", "csv", 40, 3);
}

/* ---- dpnv's champion test on threads ------------------------------------------------------ */

TEST(neat_dpnv_confirm_same_on_any_thread_count) {
    otc_neat_config c;
    otc_neat_task *task = NULL;
    otc_neat_genome *g = NULL;
    REQUIRE(otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/dpnv.ini", &c) == OTC_OK);
    REQUIRE(otc_neat_task_create("dpnv", &c, &task) == OTC_OK);
    REQUIRE(otc_neat_genome_from_json(dpnv_champion, &g) == OTC_OK);
    const int threads[3] = {1, 2, 5};
    for (int k = 0; k < 4; k++) {
        if (k == 3) task->make_executor = otc_interpreter_new; /* the graph path, 2 threads */
        bool solved = false;
        double score = -1;
        REQUIRE(otc_neat_confirm(task, &c, g, k < 3 ? threads[k] : 2, &solved, &score) == OTC_OK);
        CHECK(solved);
        /* 313 with libm's sin/cos and the reference's divisions: the physics' rounding
         * (pole_trig.h) moves 1 of the 625 chaotic 1,000-step trials (the divisions alone: 314). */
        CHECK_MSG(score == 312, "threads %d: generalisation %g", k < 3 ? threads[k] : 2, score);
    }
    otc_neat_genome_free(g);
    otc_neat_task_free(task);
    /* A task without a confirm test says so. */
    otc_neat_config cx;
    REQUIRE(otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/xor.ini", &cx) == OTC_OK);
    REQUIRE(otc_neat_task_create("xor", &cx, &task) == OTC_OK);
    otc_neat_genome *gx = otc_neat_genome_new();
    bool solved;
    double score;
    CHECK(otc_neat_confirm(task, &cx, gx, 2, &solved, &score) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "no confirm test") != NULL);
    otc_neat_genome_free(gx);
    otc_neat_task_free(task);
}
