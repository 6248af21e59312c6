/* CTRNN neurons in otc's own NEAT (time constants evolved with neat-python's time_constant_*
 * keys, phenotypes integrated as CTRNN.advance) and the activation names' dialect, against
 * values worked by hand (CTRNN.advance's loop written out in double precision). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "otc/executor.h"
#include "otc/neat.h"
#include "otc/neat_flat.h"
#include "otc/pole.h"

#define CONFIGS OTC_SOURCE_DIR "/tests/neat_python/configs/"
#define PI      3.14159265358979323846

static otc_neat_config ctrnn_config(int n_in, int n_out, double advance, double step) {
    otc_neat_config c;
    otc_neat_config_defaults(&c);
    c.pop_size = 10;
    c.fitness_threshold = 1;
    c.compatibility_threshold = 3;
    c.compatibility_excess_coefficient = 1; /* the parser's default: the disjoint one */
    c.num_inputs = n_in;
    c.num_outputs = n_out;
    c.feed_forward = false;
    c.ctrnn = true;
    c.ctrnn_advance_time = advance;
    c.ctrnn_time_step = step;
    return c;
}

static otc_neat_genome *genome_of(const otc_neat_node *nodes, int nn, const otc_neat_conn *conns,
                                  int nc) {
    otc_neat_genome *g = otc_neat_genome_new();
    for (int i = 0; i < nn; i++) otc_neat_genome_add_node(g, &nodes[i]);
    for (int i = 0; i < nc; i++) otc_neat_genome_add_conn(g, &conns[i]);
    return g;
}

/* Forward one row through the flat program and through the phenotype graph (interpreter),
 * `steps` times, checking every output against want[step * n_out + k]. */
static void check_both(const otc_neat_genome *g, const otc_neat_config *c, const float *x,
                       int steps, const double *want) {
    otc_neat_flat *f = otc_neat_flat_new();
    REQUIRE(f && otc_neat_flat_build(f, g, c) == OTC_OK);
    otc_neat_phenotype *ph = NULL;
    otc_status st = otc_neat_phenotype_build(g, c, &ph);
    if (st != OTC_OK) fprintf(stderr, "%s\n", otc_last_error());
    REQUIRE(st == OTC_OK);
    CHECK(ph->recurrent && otc_graph_is_recurrent(ph->graph));
    otc_executor *ex = otc_interpreter_new(ph->graph, &(otc_exec_options){.inference = true});
    REQUIRE(ex);
    int n_in = c->num_inputs, n_out = c->num_outputs;
    for (int s = 0; s < steps; s++) {
        float yf[4], yg[4];
        REQUIRE(otc_neat_flat_forward(f, x + s * n_in, 1, yf) == OTC_OK);
        REQUIRE(otc_exec_set_input(ex, ph->input, x + s * n_in, 1) == OTC_OK);
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        for (int k = 0; k < n_out; k++) {
            const float *v = NULL;
            REQUIRE(otc_exec_value(ex, otc_graph_output(ph->graph, k), &v, NULL) == OTC_OK);
            yg[k] = v[0];
            CHECK_NEAR(yf[k], want[s * n_out + k], 1e-6);
            CHECK_NEAR(yg[k], want[s * n_out + k], 1e-6);
            CHECK_MSG(memcmp(&yf[k], &yg[k], sizeof(float)) == 0, "step %d: flat %.9g graph %.9g",
                      s, (double)yf[k], (double)yg[k]);
        }
    }
    /* A reset starts the state from zero again: the first step repeats. */
    otc_neat_flat_reset(f);
    float y0[4];
    REQUIRE(otc_neat_flat_forward(f, x, 1, y0) == OTC_OK);
    CHECK_NEAR(y0[0], want[0], 1e-6);
    otc_exec_free(ex);
    otc_neat_phenotype_free(ph);
    otc_neat_flat_free(f);
}

TEST(neat_ctrnn_matches_hand_computation) {
    /* One output (identity, bias 0.5, tau 0.5) fed by x (w 2) and itself (w -1); advance 0.03
     * in steps of 0.02: dt 0.02 then 0.01. z = 0.5 + 2x - v; v <- e^(-dt/tau) v + (1 - ..) z. */
    otc_neat_config c = ctrnn_config(1, 1, 0.03, 0.02);
    otc_neat_node nodes[2] = {{0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {1, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, 0.5f, 1, 0, 0.5f}};
    otc_neat_conn conns[2] = {{0, 0, 1, 2.0f, true}, {1, 1, 1, -1.0f, true}};
    otc_neat_genome *g = genome_of(nodes, 2, conns, 2);
    const float x[3] = {1.0f, -1.0f, 0.25f};
    const double want[3] = {0.14364761322645292, 0.04095133586205588, 0.09370433182862173};
    check_both(g, &c, x, 3, want);
    otc_neat_genome_free(g);

    /* neat-python's sigmoid (sigmoid(5z)) hidden h (tau 0.1) fed by x; output o (identity,
     * tau 1) reads 3h and 5 n3, where hidden n3 (bias 2) has no connection in: neat-python
     * never evaluates it, so it reads 0 (not act(2)). */
    c = ctrnn_config(1, 1, 0.03, 0.02);
    otc_neat_node nodes2[4] = {{0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                               {1, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1.0f},
                               {2, OTC_NEAT_HIDDEN, OTC_ACT_NP_SIGMOID, 0, 1, 0, 0.1f},
                               {3, OTC_NEAT_HIDDEN, OTC_ACT_IDENTITY, 2.0f, 1, 0, 1.0f}};
    otc_neat_conn conns2[3] = {{0, 0, 2, 1.0f, true}, {1, 2, 1, 3.0f, true}, {2, 3, 1, 5.0f, true}};
    g = genome_of(nodes2, 4, conns2, 3);
    const float x2[2] = {1.0f, -1.0f};
    const double want2[2] = {0.005374762563823823, 0.026685224972989197};
    check_both(g, &c, x2, 2, want2);
    otc_neat_genome_free(g);
}

/* The bits of the flat program and the graph agree on random CTRNN genomes (every
 * activation, lelu with neat-python's slope, time constants drawn and mutated). */
TEST(neat_ctrnn_flat_equals_graph_random) {
    otc_neat_config c = ctrnn_config(3, 2, 0.05, 0.02);
    c.np_functions = true;
    c.node_add_prob = 0.4;
    c.conn_add_prob = 0.7;
    c.enabled_mutate_rate = 0.05;
    c.activation_mutate_rate = 0.3;
    c.n_activation_options = OTC_ACT_COUNT;
    for (int a = 0; a < OTC_ACT_COUNT; a++) c.activation_options[a] = (otc_act)a;
    c.bias.init_stdev = 1.0;
    c.time_constant = (otc_neat_float_attr){0.5, 0.3, false, 0.1, 0.5, 0.2, 0.02, 2.0};
    otc_neat_flat *f = otc_neat_flat_new();
    REQUIRE(f);
    int compared = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        otc_rng rng;
        otc_rng_seed(&rng, seed);
        otc_neat_innovations *t = otc_neat_innovations_new(c.num_inputs + c.num_outputs, 0);
        otc_neat_genome *g = otc_neat_genome_new();
        REQUIRE(g && otc_neat_genome_init(g, &c, t, &rng) == OTC_OK);
        for (int r = 0; r < 2 + (int)(seed % 15); r++) otc_neat_mutate(g, &c, t, &rng);
        for (int i = 0; i < g->n_nodes; i++)
            if (g->nodes[i].type == OTC_NEAT_HIDDEN || g->nodes[i].type == OTC_NEAT_OUTPUT)
                CHECK(g->nodes[i].tau >= 0.02f && g->nodes[i].tau <= 2.0f);
        otc_neat_phenotype *ph = NULL;
        REQUIRE(otc_neat_phenotype_build(g, &c, &ph) == OTC_OK);
        otc_executor *ex = otc_interpreter_new(ph->graph, &(otc_exec_options){.inference = true});
        REQUIRE(ex && otc_neat_flat_build(f, g, &c) == OTC_OK);
        for (int step = 0; step < 5; step++) {
            float x[6], ya[4], yb[4];
            for (int i = 0; i < 6; i++) x[i] = (float)(4 * otc_rng_uniform(&rng) - 2);
            REQUIRE(otc_exec_set_input(ex, ph->input, x, 2) == OTC_OK);
            REQUIRE(otc_exec_forward(ex) == OTC_OK);
            for (int k = 0; k < 2; k++) {
                const float *v = NULL;
                REQUIRE(otc_exec_value(ex, otc_graph_output(ph->graph, k), &v, NULL) == OTC_OK);
                ya[k] = v[0];
                ya[2 + k] = v[1];
            }
            REQUIRE(otc_neat_flat_forward(f, x, 2, yb) == OTC_OK);
            /* flat rows are [row][output], the graph's values [output][row] */
            float yg[4] = {ya[0], ya[1], ya[2], ya[3]};
            CHECK_MSG(memcmp(yg, yb, sizeof yg) == 0, "seed %llu step %d: %.9g %.9g vs %.9g %.9g",
                      (unsigned long long)seed, step, (double)yg[0], (double)yg[1], (double)yb[0],
                      (double)yb[1]);
            compared++;
        }
        otc_exec_free(ex);
        otc_neat_phenotype_free(ph);
        otc_neat_genome_free(g);
        otc_neat_innovations_free(t);
    }
    CHECK(compared == 300);
    otc_neat_flat_free(f);
}

TEST(neat_ctrnn_config_keys) {
    otc_neat_config c;
    otc_status st = otc_neat_config_load(CONFIGS "single-pole-balancing_config-ctrnn", &c);
    if (st != OTC_OK) fprintf(stderr, "%s\n", otc_last_error());
    REQUIRE(st == OTC_OK);
    /* neat-python's keys as its example gives them */
    CHECK_NEAR(c.time_constant.init_mean, 0.01, 0);
    CHECK_NEAR(c.time_constant.init_stdev, 0.0, 0);
    CHECK(!c.time_constant.init_uniform);
    CHECK_NEAR(c.time_constant.max_value, 1.0, 0);
    CHECK_NEAR(c.time_constant.min_value, 0.001, 0);
    CHECK_NEAR(c.time_constant.mutate_power, 0.005, 0);
    CHECK_NEAR(c.time_constant.mutate_rate, 0.3, 0);
    CHECK_NEAR(c.time_constant.replace_rate, 0.05, 0);
    CHECK(!c.ctrnn); /* the network type is the script's choice in neat-python: --ctrnn */
    CHECK(otc_neat_config_ctrnn(&c, "cfg", 0, 0) == OTC_OK && c.ctrnn);
    CHECK(c.ctrnn_time_step == 0); /* the task's own time, later */
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("pole1:neat-python", &c, &task) == OTC_OK);
    CHECK(otc_neat_ctrnn_times(&c, task) == OTC_OK);
    CHECK_NEAR(c.ctrnn_advance_time, 0.01, 0); /* evolve-ctrnn.py: advance(s, 0.01, 0.01) */
    CHECK_NEAR(c.ctrnn_time_step, 0.01, 0);
    otc_neat_task_free(task);
    /* xor has no time per action: the times must be given */
    otc_neat_config x;
    REQUIRE(otc_neat_config_load(CONFIGS "xor_config-feedforward", &x) == OTC_OK);
    REQUIRE(otc_neat_config_ctrnn(&x, "x", 0, 0) == OTC_OK);
    REQUIRE(otc_neat_task_create("xor:neat-python", &x, &task) == OTC_OK);
    CHECK(otc_neat_ctrnn_times(&x, task) == OTC_ERR_CONFIG);
    CHECK_MSG(strstr(otc_last_error(), "ctrnn_advance_time") &&
                  strstr(otc_last_error(), "task xor:neat-python"),
              "%s", otc_last_error());
    otc_neat_task_free(task);
    CHECK(otc_neat_config_ctrnn(&x, "x", 1.0, 1e-5) == OTC_ERR_CONFIG); /* 100,000 steps */
    CHECK(otc_neat_config_ctrnn(&x, "x", 1.0, 0) == OTC_ERR_CONFIG);    /* only one */
    CHECK(otc_neat_config_ctrnn(&x, "x", 0.1, 0.05) == OTC_OK && x.ctrnn_time_step == 0.05);

    /* Settings that cannot work, named. */
    static const struct {
        const char *extra, *msg;
    } bad[] = {
        {"time_constant_min_value = 0\n", "time_constant_min_value: 0, must be positive"},
        {"ctrnn = true\nbias_node = true\n", "bias_node: not with ctrnn"},
        {"ctrnn = true\nctrnn_advance_time = 0.1\n", "give both or neither"},
        {"time_constant_min_value = 20\n", "time_constant_min_value: greater than"},
        /* nonzero but 0 in float32 (FLT_MIN is 1.17549435e-38): every float key */
        {"time_constant_min_value = 1e-300\n",
         "t.ini:7: [DefaultGenome] time_constant_min_value: value '1e-300' is too small for "
         "float32, where otc computes (it would round to 0): give 0 or a magnitude from "
         "1.17549e-38 to 1e+06"},
        {"weight_init_stdev = 1e-39\n", "weight_init_stdev: value '1e-39' is too small"},
        {"bias_min_value = -1.1e-38\n", "bias_min_value: value '-1.1e-38' is too small"},
        {"conn_add_prob = 1e-40\n", "conn_add_prob: value '1e-40' is too small"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "[NEAT]\nfitness_threshold = 1\npop_size = 5\n[DefaultGenome]\nnum_inputs = 2\n"
                 "num_outputs = 1\n%s[DefaultSpeciesSet]\ncompatibility_threshold = 3\n",
                 bad[i].extra);
        CHECK(otc_neat_config_parse(text, "t.ini", &x) == OTC_ERR_CONFIG);
        CHECK_MSG(strstr(otc_last_error(), bad[i].msg), "case %zu: %s", i, otc_last_error());
    }
    /* float32's least normal magnitude itself, and 0, are fine */
    const char *fine[] = {"weight_init_stdev = 1.2e-38\n", "bias_init_mean = 0\n"};
    for (size_t i = 0; i < 2; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "[NEAT]\nfitness_threshold = 1\npop_size = 5\n[DefaultGenome]\nnum_inputs = 2\n"
                 "num_outputs = 1\n%s[DefaultSpeciesSet]\ncompatibility_threshold = 3\n",
                 fine[i]);
        CHECK_MSG(otc_neat_config_parse(text, "t.ini", &x) == OTC_OK, "%s", otc_last_error());
    }
}

/* The listing a checkpoint records: the CTRNN keys only when ctrnn (earlier checkpoints
 * resume unchanged). */
static void count_tc(void *ctx, const char *section, const char *key, const char *value) {
    (void)section;
    (void)value;
    *(int *)ctx += !strncmp(key, "time_constant_", 14) || !strncmp(key, "ctrnn", 5);
}

TEST(neat_ctrnn_listed_only_when_on) {
    otc_neat_config c;
    REQUIRE(otc_neat_config_load(CONFIGS "single-pole-balancing_config-ctrnn", &c) == OTC_OK);
    int n = 0;
    otc_neat_config_list(&c, count_tc, &n);
    CHECK(n == 0);
    REQUIRE(otc_neat_config_ctrnn(&c, "c", 0.01, 0.01) == OTC_OK);
    otc_neat_config_list(&c, count_tc, &n);
    CHECK(n == 11); /* 8 time_constant_* keys, ctrnn and its two times */
}

/* A config that reads as neat-python's (none of otc's extension keys) means neat-python's
 * functions by its activation names; otc's own format keeps otc's; activation_functions
 * decides either way. Checked at hand-picked points through the flat program and the graph. */
static double output_of(const otc_neat_config *c, otc_act act, float z) {
    otc_neat_node nodes[2] = {{0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {1, OTC_NEAT_OUTPUT, act, 0, 1, 0, 1}};
    otc_neat_conn conn = {0, 0, 1, 1.0f, true};
    otc_neat_genome *g = genome_of(nodes, 2, &conn, 1);
    otc_neat_flat *f = otc_neat_flat_new();
    float y = NAN, yg = NAN;
    if (f && otc_neat_flat_build(f, g, c) == OTC_OK) otc_neat_flat_forward(f, &z, 1, &y);
    otc_neat_phenotype *ph = NULL;
    if (otc_neat_phenotype_build(g, c, &ph) == OTC_OK) {
        otc_executor *ex = otc_interpreter_new(ph->graph, &(otc_exec_options){.inference = true});
        const float *v = NULL;
        if (ex && otc_exec_set_input(ex, ph->input, &z, 1) == OTC_OK &&
            otc_exec_forward(ex) == OTC_OK &&
            otc_exec_value(ex, otc_graph_output(ph->graph, 0), &v, NULL) == OTC_OK)
            yg = v[0];
        otc_exec_free(ex);
    }
    CHECK_MSG(memcmp(&y, &yg, sizeof y) == 0, "flat %.9g, graph %.9g", (double)y, (double)yg);
    otc_neat_phenotype_free(ph);
    otc_neat_flat_free(f);
    otc_neat_genome_free(g);
    return y;
}

static otc_neat_config dialect(const char *extra, otc_act *def) {
    char text[1024];
    snprintf(text, sizeof text,
             "[NEAT]\nfitness_threshold = 1\npop_size = 5\n[DefaultGenome]\nnum_inputs = 1\n"
             "num_outputs = 1\nactivation_default = sigmoid\nactivation_options = sigmoid tanh "
             "sin gauss softplus lelu\n%s[DefaultSpeciesSet]\ncompatibility_threshold = 3\n",
             extra);
    otc_neat_config c;
    otc_status st = otc_neat_config_parse(text, "d.ini", &c);
    if (st != OTC_OK) fprintf(stderr, "%s\n", otc_last_error());
    CHECK(st == OTC_OK);
    *def = c.activation_default;
    return c;
}

TEST(neat_activation_names_dialect) {
    otc_act def;
    otc_neat_config np = dialect("", &def);
    CHECK(np.np_functions && def == OTC_ACT_NP_SIGMOID);
    CHECK(np.n_activation_options == 6 && np.activation_options[1] == OTC_ACT_NP_TANH &&
          np.activation_options[2] == OTC_ACT_NP_SIN &&
          np.activation_options[3] == OTC_ACT_NP_GAUSS &&
          np.activation_options[4] == OTC_ACT_NP_SOFTPLUS &&
          np.activation_options[5] == OTC_ACT_LEAKY_RELU);
    otc_neat_config own = dialect("bias_node = false\n", &def); /* an otc key */
    CHECK(!own.np_functions && def == OTC_ACT_STEEP_SIGMOID);
    CHECK(own.activation_options[1] == OTC_ACT_TANH &&
          own.activation_options[3] == OTC_ACT_GAUSSIAN);
    otc_neat_config forced =
        dialect("bias_node = false\nactivation_functions = neat-python\n", &def);
    CHECK(forced.np_functions && def == OTC_ACT_NP_SIGMOID);
    /* [Task] and [Hybrid] settle how a config is run, not what its names mean */
    otc_neat_config task_np = dialect("[Task]\nexec_timeout = 2\n[DefaultGenome]\n", &def);
    CHECK(task_np.np_functions && def == OTC_ACT_NP_SIGMOID);
    otc_neat_config forced_otc = dialect("activation_functions = otc\n", &def);
    CHECK(!forced_otc.np_functions && def == OTC_ACT_STEEP_SIGMOID);
    /* neat-python: sigmoid(5z) = 1/(1+e^-1.5) at z = 0.3; otc's steep one 1/(1+e^-1.47) */
    CHECK_NEAR(output_of(&np, OTC_ACT_NP_SIGMOID, 0.3f), 0.8175744761936437, 1e-6);
    CHECK_NEAR(output_of(&own, OTC_ACT_STEEP_SIGMOID, 0.3f), 0.8130573860319537, 1e-6);
    /* tanh(2.5 * 0.3), sin(5 * 0.3), exp(-5 * 0.09), 0.2 log(1 + e^1.5) */
    CHECK_NEAR(output_of(&np, OTC_ACT_NP_TANH, 0.3f), 0.6351489523872873, 1e-6);
    CHECK_NEAR(output_of(&np, OTC_ACT_NP_SIN, 0.3f), 0.9974949866040544, 1e-6);
    CHECK_NEAR(output_of(&np, OTC_ACT_NP_GAUSS, 0.3f), 0.6376281516217733, 1e-6);
    CHECK_NEAR(output_of(&np, OTC_ACT_NP_SOFTPLUS, 0.3f), 0.3402826555965505, 1e-6);
    /* neat-python clamps: sigmoid's argument at 60 (5z), gauss's z at 3.4 */
    CHECK_NEAR(output_of(&np, OTC_ACT_NP_GAUSS, 10.0f), exp(-5 * 3.4 * 3.4), 1e-12);
    /* lelu's slope: neat-python's 0.005 in its dialect, otc's leaky_relu 0.01 in otc's */
    CHECK_NEAR(output_of(&np, OTC_ACT_LEAKY_RELU, -2.0f), -0.01, 1e-7);
    CHECK_NEAR(output_of(&own, OTC_ACT_LEAKY_RELU, -2.0f), -0.02, 1e-7);
    /* otc's example configs keep otc's functions */
    otc_neat_config ex;
    REQUIRE(otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/xor.ini", &ex) == OTC_OK);
    CHECK(!ex.np_functions && ex.activation_default == OTC_ACT_STEEP_SIGMOID);
    REQUIRE(otc_neat_config_load(CONFIGS "xor_config-feedforward", &ex) == OTC_OK);
    CHECK(ex.np_functions && ex.activation_default == OTC_ACT_NP_SIGMOID);
}

TEST(neat_ctrnn_genome_json_and_variation) {
    otc_neat_config c = ctrnn_config(2, 1, 0.01, 0.01);
    c.time_constant = (otc_neat_float_attr){0.5, 0.2, false, 0.0, 1.0, 0.1, 0.05, 3.0};
    otc_rng rng;
    otc_rng_seed(&rng, 7);
    otc_neat_innovations *t = otc_neat_innovations_new(3, 0);
    otc_neat_genome *a = otc_neat_genome_new(), *b = otc_neat_genome_new();
    REQUIRE(otc_neat_genome_init(a, &c, t, &rng) == OTC_OK);
    REQUIRE(otc_neat_genome_init(b, &c, t, &rng) == OTC_OK);
    float ta = a->nodes[2].tau, tb = b->nodes[2].tau;
    CHECK(ta != 0.5f && tb != 0.5f && ta != tb); /* drawn with stdev 0.2 */
    /* distance: c3 (0.4) times the mean |dtau| over shared neurons is added */
    otc_neat_config off = c;
    off.ctrnn = false;
    double d_on = otc_neat_distance(a, b, &c), d_off = otc_neat_distance(a, b, &off);
    CHECK_NEAR(d_on - d_off, 0.4 * fabs((double)ta - (double)tb), 1e-9);
    /* crossover takes each neuron's tau from one parent */
    otc_neat_genome *k = NULL;
    REQUIRE(otc_neat_crossover(a, b, &c, &rng, &k) == OTC_OK);
    CHECK(k->nodes[2].tau == ta || k->nodes[2].tau == tb);
    /* mutation at rate 1 moves it, within [0.05, 3] */
    otc_neat_mutate_attributes(a, &c, &rng);
    CHECK(a->nodes[2].tau != ta && a->nodes[2].tau >= 0.05f && a->nodes[2].tau <= 3.0f);
    /* without ctrnn, nothing draws or changes it */
    float before = b->nodes[2].tau;
    otc_neat_mutate_attributes(b, &off, &rng);
    CHECK(b->nodes[2].tau == before);

    /* JSON (checkpoints, models): the time constant round-trips exactly */
    char *json = otc_neat_genome_to_json(a);
    REQUIRE(json && strstr(json, "\"time_constant\""));
    otc_neat_genome *back = NULL;
    REQUIRE(otc_neat_genome_from_json(json, &back) == OTC_OK);
    CHECK(back->nodes[2].tau == a->nodes[2].tau);
    otc_neat_genome_free(back);
    free(json);
    /* hostile values are refused naming the node and field */
    static const char *hostile[] = {"0", "-1", "\"x\"", "1e39", "null"};
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"nodes\":[{\"id\":0,\"type\":\"input\"},{\"id\":1,\"type\":\"output\","
                 "\"activation\":\"sigmoid\",\"bias\":0,\"response\":1,\"time_constant\":%s}],"
                 "\"connections\":[],\"fitness\":0}",
                 hostile[i]);
        otc_neat_genome *h = NULL;
        CHECK(otc_neat_genome_from_json(text, &h) == OTC_ERR_FORMAT);
        CHECK_MSG(strstr(otc_last_error(), "node 1: time_constant"), "%s: %s", hostile[i],
                  otc_last_error());
        otc_neat_genome_free(h);
    }
    otc_neat_genome_free(a);
    otc_neat_genome_free(b);
    otc_neat_genome_free(k);
    otc_neat_innovations_free(t);
}

/* neat-python's example configs (tests' own copies) meet a task that fits, or a clear error. */
TEST(neat_python_configs_tasks) {
    static const struct {
        const char *config, *task;
    } fits[] = {
        {"xor_config-feedforward", "xor:neat-python"},
        {"xor_config-feedforward-partial", "xor:neat-python"},
        {"single-pole-balancing_config-feedforward", "pole1:neat-python"},
        {"single-pole-balancing_config-ctrnn", "pole1:neat-python"},
    };
    for (size_t i = 0; i < sizeof fits / sizeof fits[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, CONFIGS "%s", fits[i].config);
        otc_neat_config c;
        REQUIRE(otc_neat_config_load(path, &c) == OTC_OK);
        otc_neat_task *task = NULL;
        CHECK_MSG(otc_neat_task_create(fits[i].task, &c, &task) == OTC_OK, "%s: %s", fits[i].config,
                  otc_last_error());
        otc_neat_task_free(task);
    }
    otc_neat_config c;
    REQUIRE(otc_neat_config_load(CONFIGS "single-pole-balancing_config-feedforward", &c) == OTC_OK);
    otc_neat_task *task = NULL;
    CHECK(otc_neat_task_create("pole1", &c, &task) == OTC_ERR_CONFIG);
    CHECK_MSG(strstr(otc_last_error(), "--task pole1:neat-python"), "%s", otc_last_error());
    REQUIRE(otc_neat_config_load(CONFIGS "lunar-lander_config-feedforward", &c) == OTC_OK);
    CHECK(otc_neat_task_create("lunar-lander", &c, &task) == OTC_ERR_ARG);
    CHECK_MSG(strstr(otc_last_error(), "unknown task 'lunar-lander'") &&
                  strstr(otc_last_error(), "exec:PROGRAM"),
              "%s", otc_last_error());
    CHECK(otc_neat_config_load(CONFIGS "memory-fixed_config", &c) == OTC_ERR_CONFIG);
    CHECK_MSG(strstr(otc_last_error(), "'my_sinc_function'") && strstr(otc_last_error(), "custom"),
              "%s", otc_last_error());
}

/* neat-python's cart-pole physics at a hand-worked point: from rest at theta = 0.1 rad with
 * force +10 N, one leapfrog step of 0.01 s (cart_pole.py's CartPole.step). */
TEST(neat_python_pole_step) {
    otc_np_pole_state st = {0};
    st.theta = 0.1;
    otc_np_pole_step(&st, 10.0);
    /* positions move with the old (zero) velocities and accelerations */
    CHECK_NEAR(st.x, 0.0, 0);
    CHECK_NEAR(st.theta, 0.1, 0);
    double s = sin(0.1), c = cos(0.1);
    double tacc = (9.8 * s + c * (-10.0) / 1.1) / (0.5 * (4.0 / 3 - 0.1 * c * c / 1.1));
    double xacc = (10.0 + 0.1 * 0.5 * (0 - tacc * c)) / 1.1;
    CHECK_NEAR(st.tacc, tacc, 1e-12);
    CHECK_NEAR(st.xacc, xacc, 1e-12);
    CHECK_NEAR(st.dx, 0.5 * xacc * 0.01, 1e-12);
    CHECK_NEAR(st.dtheta, 0.5 * tacc * 0.01, 1e-12);
    CHECK_NEAR(st.t, 0.01, 1e-15);
    double obs[4];
    otc_np_pole_observe(&st, obs);
    CHECK_NEAR(obs[0], 0.5, 1e-12);
    CHECK_NEAR(obs[2], 0.5 * (0.1 + PI / 4) / (PI / 4), 1e-12);
    st.theta = PI / 4; /* 45 degrees: out */
    CHECK(otc_np_pole_failed(&st));
    st.theta = 0.78;
    CHECK(!otc_np_pole_failed(&st));
}
