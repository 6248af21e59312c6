/* NEAT: configuration errors, mutation invariants, innovation tracking, crossover, distance,
 * speciation, Stanley's offspring counting and the phenotype, against hand-worked values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "otc/executor.h"
#include "otc/neat.h"
/* otc_neat_stanley_offspring is private to the NEAT sources: tested directly here. */

static const char *base_ini = "[NEAT]\n"
                              "fitness_threshold = 15.9\n"
                              "pop_size = 50\n"
                              "[DefaultGenome]\n"
                              "num_inputs = 2\n"
                              "num_outputs = 1\n"
                              "[DefaultSpeciesSet]\n"
                              "compatibility_threshold = 3.0\n";

static otc_neat_config base_config(void) {
    otc_neat_config c;
    otc_status s = otc_neat_config_parse(base_ini, "base.ini", &c);
    if (s != OTC_OK) fprintf(stderr, "%s\n", otc_last_error());
    c.np_evolution = false; /* these tests are of otc's rules; neat-python's have their own */
    return c;
}

/* Parse text expected to fail; the message must contain every needle. */
static void expect_config_error(const char *text, const char *n1, const char *n2, const char *n3) {
    otc_neat_config c;
    otc_status s = otc_neat_config_parse(text, "t.ini", &c);
    CHECK(s == OTC_ERR_CONFIG);
    const char *m = otc_last_error();
    CHECK_MSG(strstr(m, n1) != NULL, "'%s' not in '%s'", n1, m);
    if (n2) CHECK_MSG(strstr(m, n2) != NULL, "'%s' not in '%s'", n2, m);
    if (n3) CHECK_MSG(strstr(m, n3) != NULL, "'%s' not in '%s'", n3, m);
}

TEST(neat_config_example_loads) {
    otc_neat_config c;
    otc_status s = otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/xor.ini", &c);
    REQUIRE(s == OTC_OK);
    CHECK(c.pop_size == 150);
    CHECK(c.num_inputs == 2 && c.num_outputs == 1);
    CHECK(c.bias_node);
    CHECK_NEAR(c.compatibility_threshold, 3.0, 0);
    CHECK_NEAR(c.compatibility_weight_coefficient, 0.4, 0);
    CHECK_NEAR(c.node_add_prob, 0.03, 0);
    CHECK_NEAR(c.conn_add_prob, 0.05, 0);
    CHECK(c.activation_default == OTC_ACT_STEEP_SIGMOID);
    /* excess coefficient defaults to the disjoint one */
    CHECK_NEAR(c.compatibility_excess_coefficient, c.compatibility_disjoint_coefficient, 0);
}

TEST(neat_config_errors_name_key_section_line) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s[DefaultGenome]\nweight_mutat_rate = 0.8\n", base_ini);
    expect_config_error(buf, "t.ini:10", "[DefaultGenome]", "weight_mutat_rate: unknown key");
    snprintf(buf, sizeof buf, "[NEAT]\npop_size = lots\n");
    expect_config_error(buf, "t.ini:2", "[NEAT] pop_size", "lots");
    snprintf(buf, sizeof buf, "[NEAT]\npop_size = 10\npop_size = 20\n");
    expect_config_error(buf, "t.ini:3", "pop_size", "repeated");
    snprintf(buf, sizeof buf, "%s[Genome]\nx = 1\n", base_ini);
    expect_config_error(buf, "t.ini:10", "unknown section", "[Genome]");
    snprintf(buf, sizeof buf, "%s[DefaultGenome]\nweight_mutate_rate = 1.5\n", base_ini);
    expect_config_error(buf, "t.ini:10", "weight_mutate_rate", "out of range");
    snprintf(buf, sizeof buf, "%s[DefaultGenome]\nconn_toggle_prob = 1.5\n", base_ini);
    expect_config_error(buf, "t.ini:10", "conn_toggle_prob", "out of range");
    snprintf(buf, sizeof buf, "%s[DefaultGenome]\naggregation_default = my_l2norm\n", base_ini);
    expect_config_error(buf, "t.ini:10", "aggregation_default",
                        "unsupported aggregation 'my_l2norm'");
    snprintf(buf, sizeof buf, "%s[DefaultGenome]\nactivation_default = my_sinc_function\n",
             base_ini);
    expect_config_error(buf, "t.ini:10", "activation_default",
                        "unsupported activation 'my_sinc_function'");
    /* Missing required keys name the section and key (no line: they are absent). */
    expect_config_error("[NEAT]\nfitness_threshold = 1\n[DefaultGenome]\nnum_inputs = 2\n"
                        "num_outputs = 1\n[DefaultSpeciesSet]\ncompatibility_threshold = 3\n",
                        "[NEAT] pop_size", "missing required key", NULL);
    expect_config_error("[NEAT]\nfitness_threshold = 1\npop_size = 5\n[DefaultGenome]\n"
                        "num_outputs = 1\n[DefaultSpeciesSet]\ncompatibility_threshold = 3\n",
                        "[DefaultGenome] num_inputs", "missing required key", NULL);
    /* A line that is not key = value. */
    snprintf(buf, sizeof buf, "%sjust words\n", base_ini);
    expect_config_error(buf, "t.ini:9", "syntax", NULL);
    /* A neat-python config's usual keys are accepted. */
    snprintf(
        buf, sizeof buf,
        "%s[DefaultGenome]\nbias_init_type = gaussian\naggregation_options = sum\n"
        "initial_connection = partial_direct 0.5\nstructural_mutation_surer = default\n"
        "[DefaultStagnation]\nspecies_fitness_func = max\n[DefaultReproduction]\nelitism = 2\n",
        base_ini);
    otc_neat_config c;
    CHECK(otc_neat_config_parse(buf, "t.ini", &c) == OTC_OK);
    CHECK(c.initial_connection == OTC_NEAT_CONNECT_PARTIAL_DIRECT);
    CHECK_NEAR(c.connection_fraction, 0.5, 0);
    CHECK(c.elitism == 2);
}

/* Every list-valued key reads its list one way (otc_list_split): an empty item is an error
 * naming the file, line, key and the item's position, and a list of commas and blanks mixed
 * gives its items. */
TEST(neat_config_list_keys_refuse_empty_items) {
    static const struct {
        const char *keys, *message;
    } bad[] = {
        {"[DefaultGenome]\nactivation_options = relu,,tanh\n",
         "t.ini:10: [DefaultGenome] activation_options: bad list 'relu,,tanh': item 2 is empty"},
        {"[DefaultGenome]\naggregation_options = sum, \n",
         "t.ini:10: [DefaultGenome] aggregation_options: bad list 'sum,': item 2 is empty"},
        {"[NEAT]\nselection = nsga2\nobjectives = fitness,,connections\n",
         "t.ini:11: [NEAT] objectives: bad list 'fitness,,connections': item 2 is empty"},
        {"[Task]\ntargets = y,\n", "t.ini:10: [Task] targets: bad list 'y,': item 2 is empty"},
        {"[Substrate]\ninput_grid = 2x1\noutput_grid = 1x1\nhidden_grids = 5x5, ,\n",
         "t.ini:12: [Substrate] hidden_grids: bad list '5x5, ,': item 2 is empty"},
        {"[Substrate]\ninput_grid = 2x1\noutput_grid = 1x1\nhidden_grids = ,5x5\n",
         "t.ini:12: [Substrate] hidden_grids: bad list ',5x5': item 1 is empty"},
    };
    char buf[1024];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(buf, sizeof buf, "%s%s", base_ini, bad[i].keys);
        otc_neat_config c;
        CHECK(otc_neat_config_parse(buf, "t.ini", &c) == OTC_ERR_CONFIG);
        CHECK_MSG(!strcmp(otc_last_error(), bad[i].message), "got '%s'", otc_last_error());
    }
    snprintf(buf, sizeof buf,
             "%s[DefaultGenome]\nactivation_functions = otc\nactivation_default = relu\n"
             "activation_options = relu, tanh  abs\n"
             "aggregation_options = sum,product\n[NEAT]\nselection = nsga2\n"
             "objectives = fitness , nodes\n[Task]\ntargets = a b, c\n",
             base_ini);
    otc_neat_config c;
    otc_status st = otc_neat_config_parse(buf, "t.ini", &c);
    CHECK_MSG(st == OTC_OK, "%s", otc_last_error());
    if (st != OTC_OK) return;
    CHECK(c.n_activation_options == 3 && c.activation_options[0] == OTC_ACT_RELU &&
          c.activation_options[1] == OTC_ACT_TANH && c.activation_options[2] == OTC_ACT_ABS);
    CHECK(c.n_aggregation_options == 2 && c.aggregation_options[0] == OTC_AGG_SUM &&
          c.aggregation_options[1] == OTC_AGG_PRODUCT);
    CHECK(c.n_objectives == 2 && c.objectives[0] == OTC_NEAT_OBJ_FITNESS &&
          c.objectives[1] == OTC_NEAT_OBJ_NODES);
    CHECK(!strcmp(c.targets, "a b, c")); /* a column name may hold a space */
}

/* Every genome of a heavily mutated set stays valid: sorted unique genes, endpoints present,
 * no duplicate (in, out), acyclic when feed-forward; equal (in, out) means equal innovation
 * across genomes. */
static void mutation_invariants(bool feed_forward) {
    otc_neat_config c = base_config();
    c.feed_forward = feed_forward;
    c.node_add_prob = 0.3;
    c.conn_add_prob = 0.5;
    c.node_delete_prob = 0.05;
    c.conn_delete_prob = 0.05;
    c.enabled_mutate_rate = 0.05;
    c.num_hidden = 1;
    c.bias_node = true;
    otc_neat_innovations *t = otc_neat_innovations_new(c.num_inputs + 1 + 1 + 1, 0);
    otc_rng rng;
    otc_rng_seed(&rng, 7);
    enum { N = 12 };
    otc_neat_genome *g[N];
    for (int i = 0; i < N; i++) {
        g[i] = otc_neat_genome_new();
        REQUIRE(otc_neat_genome_init(g[i], &c, t, &rng) == OTC_OK);
    }
    for (int gen = 0; gen < 60; gen++) {
        otc_neat_innovations_new_generation(t);
        for (int i = 0; i < N; i++) {
            REQUIRE(otc_neat_mutate(g[i], &c, t, &rng) == OTC_OK);
            otc_status s = otc_neat_genome_validate(g[i], feed_forward);
            CHECK_MSG(s == OTC_OK, "gen %d genome %d: %s", gen, i, otc_last_error());
            if (s != OTC_OK) return;
        }
        /* crossover children of valid parents are valid too */
        for (int i = 0; i + 1 < N; i += 2) {
            otc_neat_genome *child = NULL;
            g[i]->fitness = otc_rng_uniform(&rng);
            g[i + 1]->fitness = otc_rng_uniform(&rng);
            REQUIRE(otc_neat_crossover(g[i], g[i + 1], &c, &rng, &child) == OTC_OK);
            CHECK(otc_neat_genome_validate(child, feed_forward) == OTC_OK);
            otc_neat_genome_free(g[i]);
            g[i] = child;
        }
    }
    int total_hidden = 0;
    for (int i = 0; i < N; i++) {
        total_hidden += otc_neat_genome_hidden_count(g[i]);
        for (int j = 0; j < N; j++)
            for (int a = 0; a < g[i]->n_conns; a++) {
                const otc_neat_conn *x = &g[i]->conns[a];
                const otc_neat_conn *y = otc_neat_genome_find_pair(g[j], x->in, x->out);
                if (y) CHECK(y->innov == x->innov);
            }
    }
    CHECK(total_hidden > N); /* the test did grow structure */
    for (int i = 0; i < N; i++) otc_neat_genome_free(g[i]);
    otc_neat_innovations_free(t);
}

TEST(neat_mutation_invariants_feed_forward) {
    mutation_invariants(true);
}
TEST(neat_mutation_invariants_recurrent) {
    mutation_invariants(false);
}

TEST(neat_add_node_splits_and_shares_innovations) {
    otc_neat_config c = base_config();
    otc_neat_innovations *t = otc_neat_innovations_new(3, 0);
    otc_rng rng;
    otc_rng_seed(&rng, 1);
    otc_neat_genome *a = otc_neat_genome_new(), *b = otc_neat_genome_new(),
                    *d = otc_neat_genome_new();
    c.initial_connection = OTC_NEAT_CONNECT_FULL_DIRECT;
    REQUIRE(otc_neat_genome_init(a, &c, t, &rng) == OTC_OK);
    REQUIRE(a->n_conns == 2 && a->n_nodes == 3);
    /* keep only connection 0 -> 2 enabled so the split is determined */
    a->conns[1].enabled = false;
    a->conns[0].weight = -1.75f;
    otc_neat_genome *a2 = otc_neat_genome_copy(a);
    otc_neat_genome_free(b);
    b = otc_neat_genome_copy(a);
    REQUIRE(otc_neat_mutate_add_node(a, &c, t, &rng) == OTC_OK);
    REQUIRE(a->n_nodes == 4 && a->n_conns == 4);
    const otc_neat_conn *old = otc_neat_genome_find_pair(a, 0, 2);
    CHECK(old && !old->enabled);
    int h = a->nodes[3].id;
    CHECK(a->nodes[3].type == OTC_NEAT_HIDDEN);
    const otc_neat_conn *in = otc_neat_genome_find_pair(a, 0, h),
                        *out = otc_neat_genome_find_pair(a, h, 2);
    REQUIRE(in && out);
    CHECK(in->weight == 1.0f && in->enabled);
    CHECK(out->weight == -1.75f && out->enabled);
    /* the same split in the same generation: same node id, same innovations */
    REQUIRE(otc_neat_mutate_add_node(b, &c, t, &rng) == OTC_OK);
    CHECK(b->nodes[3].id == h);
    CHECK(otc_neat_genome_find_pair(b, 0, h)->innov == in->innov);
    CHECK(otc_neat_genome_find_pair(b, h, 2)->innov == out->innov);
    /* a later generation gets a new node */
    otc_neat_innovations_new_generation(t);
    otc_neat_genome_free(d);
    d = a2;
    REQUIRE(otc_neat_mutate_add_node(d, &c, t, &rng) == OTC_OK);
    CHECK(d->nodes[3].id != h);
    otc_neat_genome_free(a);
    otc_neat_genome_free(b);
    otc_neat_genome_free(d);
    otc_neat_innovations_free(t);
}

/* Two hand-made genomes over inputs 0,1, output 2, hidden 3 and 4. */
static otc_neat_genome *make_genome(const int (*conns)[3], int n, const float *w, bool hidden4) {
    otc_neat_genome *g = otc_neat_genome_new();
    for (int i = 0; i < (hidden4 ? 5 : 4); i++) {
        otc_neat_node node = {i,
                              i < 2    ? OTC_NEAT_INPUT
                              : i == 2 ? OTC_NEAT_OUTPUT
                                       : OTC_NEAT_HIDDEN,
                              OTC_ACT_STEEP_SIGMOID,
                              0,
                              1,
                              0,
                              1};
        otc_neat_genome_add_node(g, &node);
    }
    for (int i = 0; i < n; i++) {
        otc_neat_conn c = {conns[i][0], conns[i][1], conns[i][2], w[i], true};
        otc_neat_genome_add_conn(g, &c);
    }
    return g;
}

TEST(neat_distance_hand_computed) {
    /* A: innovations 1 2 3 4 5, B: 1 2 3 6 7 8 9. Matching 1, 2, 3; A's 4 and 5 lie within
     * B's range (max 9): disjoint; B's 6..9 lie beyond A's max 5: excess. D = 2, E = 4. */
    const int ca[5][3] = {{1, 0, 2}, {2, 1, 2}, {3, 0, 3}, {4, 3, 2}, {5, 1, 3}};
    const int cb[7][3] = {{1, 0, 2}, {2, 1, 2}, {3, 0, 3}, {6, 0, 4},
                          {7, 4, 2}, {8, 1, 4}, {9, 4, 3}};
    const float wa[5] = {0.5f, -1, 2, 1, 1}, wb[7] = {1.5f, -1, 1, 1, 1, 1, 1};
    otc_neat_genome *a = make_genome(ca, 5, wa, true), *b = make_genome(cb, 7, wb, true);
    otc_neat_config c = base_config();
    c.compatibility_excess_coefficient = 1.0;
    c.compatibility_disjoint_coefficient = 2.0;
    c.compatibility_weight_coefficient = 0.4;
    c.compatibility_normalize_min_genes = 20; /* both small: N = 1 */
    /* W-bar = (|0.5-1.5| + 0 + |2-1|) / 3 = 2/3 */
    double want = 1.0 * 4 + 2.0 * 2 + 0.4 * (2.0 / 3.0);
    CHECK_NEAR(otc_neat_distance(a, b, &c), want, 1e-9);
    CHECK_NEAR(otc_neat_distance(b, a, &c), want, 1e-9);
    /* N = 7 (the larger genome) once normalising applies */
    c.compatibility_normalize_min_genes = 0;
    CHECK_NEAR(otc_neat_distance(a, b, &c), (4.0 + 4.0) / 7 + 0.4 * (2.0 / 3.0), 1e-9);
    CHECK_NEAR(otc_neat_distance(a, a, &c), 0.0, 0);
    otc_neat_genome_free(a);
    otc_neat_genome_free(b);
}

TEST(neat_crossover_inherits_from_fitter_parent) {
    const int ca[5][3] = {{1, 0, 2}, {2, 1, 2}, {3, 0, 3}, {4, 3, 2}, {5, 1, 3}};
    const int cb[4][3] = {{1, 0, 2}, {2, 1, 2}, {6, 0, 4}, {7, 4, 2}};
    const float wa[5] = {1, 1, 1, 1, 1}, wb[4] = {2, 2, 2, 2};
    otc_neat_genome *a = make_genome(ca, 5, wa, false), *b = make_genome(cb, 4, wb, true);
    a->fitness = 10;
    b->fitness = 5;
    b->conns[1].enabled = false; /* innovation 2 disabled in the weaker parent */
    otc_neat_config c = base_config();
    otc_rng rng;
    otc_rng_seed(&rng, 3);
    int from_b = 0, disabled = 0, trials = 4000;
    for (int t = 0; t < trials; t++) {
        otc_neat_genome *k = NULL;
        REQUIRE(otc_neat_crossover(b, a, &c, &rng, &k) == OTC_OK);
        /* exactly the fitter parent's genes, in its structure */
        REQUIRE(k->n_conns == 5 && k->n_nodes == 4);
        for (int i = 0; i < 5; i++) CHECK(k->conns[i].innov == ca[i][0]);
        CHECK(!otc_neat_genome_find_conn(k, 6) && !otc_neat_genome_find_node(k, 4));
        /* disjoint/excess genes keep the fitter parent's weight */
        for (int i = 2; i < 5; i++) CHECK(k->conns[i].weight == 1.0f && k->conns[i].enabled);
        from_b += k->conns[0].weight == 2.0f;
        disabled += !k->conns[1].enabled;
        otc_neat_genome_free(k);
    }
    /* matching genes from either parent at random; disabled in either -> disabled 75% */
    CHECK_NEAR((double)from_b / trials, 0.5, 0.03);
    CHECK_NEAR((double)disabled / trials, 0.75, 0.03);
    otc_neat_genome_free(a);
    otc_neat_genome_free(b);
}

/* Stanley's mate_multipoint_avg: with crossover_average_rate r, a share r of the children
 * carry the mean (1 + 2) / 2 = 1.5 on every matching gene, the rest one parent's weight. */
TEST(neat_crossover_average_rate) {
    const int ca[3][3] = {{1, 0, 2}, {2, 1, 2}, {3, 0, 3}}, cb[2][3] = {{1, 0, 2}, {2, 1, 2}};
    const float wa[3] = {1, 1, 1}, wb[2] = {2, 2};
    otc_neat_genome *a = make_genome(ca, 3, wa, false), *b = make_genome(cb, 2, wb, false);
    a->fitness = 2;
    b->fitness = 1;
    otc_neat_config c = base_config();
    c.crossover_average_rate = 0.4;
    otc_rng rng;
    otc_rng_seed(&rng, 11);
    int averaged = 0, trials = 4000;
    for (int t = 0; t < trials; t++) {
        otc_neat_genome *k = NULL;
        REQUIRE(otc_neat_crossover(a, b, &c, &rng, &k) == OTC_OK);
        bool avg0 = k->conns[0].weight == 1.5f, avg1 = k->conns[1].weight == 1.5f;
        CHECK(avg0 == avg1);               /* the whole child averages, or none of it */
        CHECK(k->conns[2].weight == 1.0f); /* a disjoint gene keeps the fitter parent's */
        averaged += avg0;
        otc_neat_genome_free(k);
    }
    CHECK_NEAR((double)averaged / trials, 0.4, 0.03);
    otc_neat_genome_free(a);
    otc_neat_genome_free(b);
}

/* conn_add_recurrent_prob 1: every new connection closes a loop; 0: none does, so a
 * recurrent-enabled genome stays acyclic. */
TEST(neat_add_conn_recurrent_prob) {
    for (int want = 0; want <= 1; want++) {
        otc_neat_config c = base_config();
        c.feed_forward = false;
        c.num_hidden = 2;
        c.conn_add_recurrent_prob = want;
        otc_neat_innovations *t = otc_neat_innovations_new(5, 0);
        otc_rng rng;
        otc_rng_seed(&rng, 5 + (uint64_t)want);
        otc_neat_genome *g = otc_neat_genome_new();
        c.initial_connection = OTC_NEAT_CONNECT_FULL_NODIRECT;
        REQUIRE(otc_neat_genome_init(g, &c, t, &rng) == OTC_OK);
        REQUIRE(otc_neat_genome_validate(g, true) == OTC_OK);
        int added = 0;
        for (int i = 0; i < 20; i++) {
            otc_neat_genome *before = otc_neat_genome_copy(g);
            REQUIRE(otc_neat_mutate_add_conn(g, &c, t, &rng) == OTC_OK);
            if (g->n_conns > before->n_conns) {
                added++;
                const otc_neat_conn *n = NULL;
                for (int k = 0; k < g->n_conns && !n; k++)
                    if (!otc_neat_genome_find_conn(before, g->conns[k].innov)) n = &g->conns[k];
                REQUIRE(n != NULL);
                CHECK(otc_neat_creates_cycle(before, n->in, n->out) == (want == 1));
            }
            otc_neat_genome_free(before);
        }
        CHECK(added > 0);
        if (!want) CHECK(otc_neat_genome_validate(g, true) == OTC_OK);
        CHECK(otc_neat_genome_validate(g, false) == OTC_OK);
        otc_neat_genome_free(g);
        otc_neat_innovations_free(t);
    }
}

/* Stanley's weight mutation on a genome of fewer than 10 genes: half the children are
 * "severe" (each weight perturbed 70%, replaced 20%, kept 10%), the others have every weight
 * perturbed, so P(kept) = 0.5 * 0.1 = 0.05; steps and new values lie within +-power, and the
 * result is clamped to the weight range. */
TEST(neat_stanley_weight_mutation) {
    const int cs[4][3] = {{1, 0, 2}, {2, 1, 2}, {3, 0, 3}, {4, 3, 2}};
    const float w0[4] = {0.25f, 0.25f, 0.25f, 0.25f};
    otc_neat_config c = base_config();
    c.weight_mutate_stanley = true;
    c.weight_mutate_genome_rate = 1.0;
    c.weight.mutate_power = 1.0;
    c.weight.min_value = -1.0;
    c.weight.max_value = 1.0;
    c.enabled_mutate_rate = 0;
    otc_rng rng;
    otc_rng_seed(&rng, 17);
    int kept = 0, total = 0;
    for (int t = 0; t < 5000; t++) {
        otc_neat_genome *g = make_genome(cs, 4, w0, false);
        otc_neat_mutate_attributes(g, &c, &rng);
        for (int i = 0; i < 4; i++) {
            float w = g->conns[i].weight;
            CHECK(w >= -1.0f && w <= 1.0f);
            kept += w == 0.25f;
            total++;
        }
        otc_neat_genome_free(g);
    }
    CHECK_NEAR((double)kept / total, 0.05, 0.01);
}

TEST(neat_speciation_first_fit_within_threshold) {
    otc_neat_config c = base_config();
    c.pop_size = 60;
    c.compatibility_threshold = 1.0;
    otc_neat_population *p = NULL;
    REQUIRE(otc_neat_population_new(&c, 5, &p) == OTC_OK);
    /* spread the genomes out, then re-speciate */
    otc_rng rng;
    otc_rng_seed(&rng, 9);
    for (int i = 0; i < otc_neat_population_size(p); i++) {
        otc_neat_genome *g = otc_neat_population_genome(p, i);
        for (int k = 0; k < g->n_conns; k++) g->conns[k].weight = (float)(i % 6) * 1.5f;
    }
    REQUIRE(otc_neat_speciate(p) == OTC_OK);
    int n_species = otc_neat_population_species_count(p);
    CHECK(n_species >= 2);
    int counted = 0;
    for (int s = 0; s < n_species; s++) {
        const otc_neat_species *sp = otc_neat_population_species(p, s);
        CHECK(sp->n_members > 0);
        counted += sp->n_members;
        for (int m = 0; m < sp->n_members; m++) {
            otc_neat_genome *g = otc_neat_population_genome(p, sp->members[m]);
            CHECK(g->species == sp->id);
            CHECK(otc_neat_distance(g, sp->representative, &c) < 1.0);
            /* not compatible with any earlier species */
            for (int e = 0; e < s; e++)
                CHECK(otc_neat_distance(g, otc_neat_population_species(p, e)->representative, &c) >=
                      1.0);
        }
    }
    CHECK(counted == otc_neat_population_size(p));
    otc_neat_population_free(p);
}

TEST(neat_speciation_first_fit_with_structural_differences) {
    /* Genomes that differ in genes, not only weights: structure alone often decides whether a
     * genome fits a species (speciation may stop comparing early), and every genome must still
     * join the first species whose representative is within the threshold by the full
     * distance, whatever the threshold. */
    const double thresholds[4] = {0.5, 1.5, 3.0, 6.0};
    for (int t = 0; t < 4; t++) {
        otc_neat_config c = base_config();
        c.pop_size = 80;
        c.compatibility_threshold = thresholds[t];
        c.node_add_prob = 0.5;
        c.conn_add_prob = 0.8;
        c.conn_delete_prob = 0.1;
        otc_neat_population *p = NULL;
        REQUIRE(otc_neat_population_new(&c, 11, &p) == OTC_OK);
        otc_rng rng;
        otc_rng_seed(&rng, 21 + (uint64_t)t);
        for (int i = 0; i < otc_neat_population_size(p); i++)
            for (int r = 0; r < i % 7; r++)
                otc_neat_mutate(otc_neat_population_genome(p, i), &c,
                                otc_neat_population_innovations(p), &rng);
        REQUIRE(otc_neat_speciate(p) == OTC_OK);
        int n_species = otc_neat_population_species_count(p), counted = 0;
        CHECK(n_species >= 2);
        for (int s = 0; s < n_species; s++) {
            const otc_neat_species *sp = otc_neat_population_species(p, s);
            counted += sp->n_members;
            for (int m = 0; m < sp->n_members; m++) {
                otc_neat_genome *g = otc_neat_population_genome(p, sp->members[m]);
                CHECK(g->species == sp->id);
                CHECK(otc_neat_distance(g, sp->representative, &c) < thresholds[t]);
                for (int e = 0; e < s; e++)
                    CHECK(otc_neat_distance(g, otc_neat_population_species(p, e)->representative,
                                            &c) >= thresholds[t]);
            }
        }
        CHECK(counted == otc_neat_population_size(p));
        otc_neat_population_free(p);
    }
}

static float steep(float x) {
    return 1.0f / (1.0f + expf(-4.9f * x));
}

TEST(neat_phenotype_matches_hand_computation) {
    /* inputs 0,1; bias 2; output 3; hidden 4: h = s(1*x0 - 2*x1 + 0.5*1), o = s(0.7 h + x1 + 0.3)
     */
    otc_neat_genome *g = otc_neat_genome_new();
    otc_neat_node nodes[5] = {{0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {1, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {2, OTC_NEAT_BIAS, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {3, OTC_NEAT_OUTPUT, OTC_ACT_STEEP_SIGMOID, 0.3f, 1, 0, 1},
                              {4, OTC_NEAT_HIDDEN, OTC_ACT_STEEP_SIGMOID, 0, 1, 0, 1}};
    for (int i = 0; i < 5; i++) otc_neat_genome_add_node(g, &nodes[i]);
    otc_neat_conn conns[6] = {{0, 0, 3, 9.0f, false}, {1, 0, 4, 1.0f, true}, {2, 1, 4, -2.0f, true},
                              {3, 2, 4, 0.5f, true},  {4, 4, 3, 0.7f, true}, {5, 1, 3, 1.0f, true}};
    for (int i = 0; i < 6; i++) otc_neat_genome_add_conn(g, &conns[i]);
    otc_neat_config c = base_config();
    c.bias_node = true;
    otc_neat_phenotype *ph = NULL;
    REQUIRE(otc_neat_phenotype_build(g, &c, &ph) == OTC_OK);
    otc_executor *ex = otc_interpreter_new(ph->graph, &(otc_exec_options){.inference = true});
    REQUIRE(ex);
    const float x[8] = {0, 0, 0, 1, 1, 0, 1, 1};
    REQUIRE(otc_exec_set_input(ex, ph->input, x, 4) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    const float *y;
    REQUIRE(otc_exec_value(ex, otc_graph_output(ph->graph, 0), &y, NULL) == OTC_OK);
    for (int r = 0; r < 4; r++) {
        float x0 = x[2 * r], x1 = x[2 * r + 1];
        float h = steep(x0 - 2 * x1 + 0.5f), o = steep(0.7f * h + x1 + 0.3f);
        CHECK_NEAR(y[r], o, 1e-5);
    }
    otc_exec_free(ex);
    otc_neat_phenotype_free(ph);
    otc_neat_genome_free(g);
}

TEST(neat_recurrent_phenotype_steps_synchronously) {
    /* input 0, output 1 (identity), hidden 2 (identity): h_t = x_t + 0.5 h_{t-1}
     * (self loop), o_t = h_{t-1}: every non-input source is read one step late. */
    otc_neat_genome *g = otc_neat_genome_new();
    otc_neat_node nodes[3] = {{0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {1, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {2, OTC_NEAT_HIDDEN, OTC_ACT_IDENTITY, 0, 1, 0, 1}};
    for (int i = 0; i < 3; i++) otc_neat_genome_add_node(g, &nodes[i]);
    otc_neat_conn conns[3] = {{0, 0, 2, 1.0f, true}, {1, 2, 2, 0.5f, true}, {2, 2, 1, 1.0f, true}};
    for (int i = 0; i < 3; i++) otc_neat_genome_add_conn(g, &conns[i]);
    otc_neat_config c = base_config();
    c.num_inputs = 1;
    c.feed_forward = false;
    otc_neat_phenotype *ph = NULL;
    REQUIRE(otc_neat_phenotype_build(g, &c, &ph) == OTC_OK);
    CHECK(ph->recurrent);
    otc_executor *ex = otc_interpreter_new(ph->graph, &(otc_exec_options){.inference = true});
    REQUIRE(ex);
    const float xs[4] = {1, 2, 0, 4};
    float h = 0;
    for (int t = 0; t < 4; t++) {
        REQUIRE(otc_exec_set_input(ex, ph->input, &xs[t], 1) == OTC_OK);
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        const float *y;
        REQUIRE(otc_exec_value(ex, otc_graph_output(ph->graph, 0), &y, NULL) == OTC_OK);
        CHECK_NEAR(y[0], h, 1e-6); /* the previous step's hidden value */
        h = xs[t] + 0.5f * h;
    }
    otc_exec_free(ex);
    otc_neat_phenotype_free(ph);
    otc_neat_genome_free(g);
}

TEST(neat_genome_json_round_trip) {
    otc_neat_config c = base_config();
    c.node_add_prob = 1;
    c.conn_add_prob = 1;
    otc_neat_innovations *t = otc_neat_innovations_new(3, 0);
    otc_rng rng;
    otc_rng_seed(&rng, 2);
    otc_neat_genome *g = otc_neat_genome_new();
    REQUIRE(otc_neat_genome_init(g, &c, t, &rng) == OTC_OK);
    for (int i = 0; i < 5; i++) REQUIRE(otc_neat_mutate(g, &c, t, &rng) == OTC_OK);
    g->fitness = 1.0 / 3.0;
    char *json = otc_neat_genome_to_json(g);
    REQUIRE(json);
    otc_neat_genome *back = NULL;
    REQUIRE(otc_neat_genome_from_json(json, &back) == OTC_OK);
    CHECK(back->n_nodes == g->n_nodes && back->n_conns == g->n_conns);
    CHECK(back->fitness == g->fitness);
    CHECK(memcmp(back->nodes, g->nodes, sizeof *g->nodes * (size_t)g->n_nodes) == 0);
    for (int i = 0; i < g->n_conns; i++) {
        CHECK(back->conns[i].innov == g->conns[i].innov);
        CHECK(back->conns[i].weight == g->conns[i].weight);
        CHECK(back->conns[i].enabled == g->conns[i].enabled);
    }
    /* corrupt text is an error, not a crash */
    otc_neat_genome *bad = NULL;
    CHECK(otc_neat_genome_from_json("{\"nodes\":[{\"id\":0}],\"connections\":[]}", &bad) ==
          OTC_ERR_FORMAT);
    CHECK(otc_neat_genome_from_json("{\"nodes\":[],\"connections\":[{\"innov\":0,\"in\":0,"
                                    "\"out\":1,\"weight\":1,\"enabled\":true}]}",
                                    &bad) == OTC_ERR_FORMAT);
    CHECK(otc_neat_genome_from_json("[1,2", &bad) == OTC_ERR_FORMAT);
    /* one document and nothing after it (white space aside) */
    size_t jl = strlen(json);
    char *more = malloc(jl + 8);
    REQUIRE(more);
    memcpy(more, json, jl);
    strcpy(more + jl, " \n");
    CHECK(otc_neat_genome_from_json(more, &bad) == OTC_OK);
    otc_neat_genome_free(bad);
    bad = NULL;
    strcpy(more + jl, " {}");
    CHECK(otc_neat_genome_from_json(more, &bad) == OTC_ERR_FORMAT);
    CHECK(strstr(otc_last_error(), "data after the end of the JSON document") != NULL);
    free(more);
    free(json);
    otc_neat_genome_free(g);
    otc_neat_genome_free(back);
    otc_neat_innovations_free(t);
}

/* Inputs 0 and 1, bias node 2, output 3; connections in the order given (innovations 1..n). */
static otc_neat_genome *make_bias_genome(const int (*io)[2], const bool *enabled, int n) {
    otc_neat_genome *g = otc_neat_genome_new();
    const otc_neat_node_type types[4] = {OTC_NEAT_INPUT, OTC_NEAT_INPUT, OTC_NEAT_BIAS,
                                         OTC_NEAT_OUTPUT};
    for (int i = 0; i < 4; i++) {
        otc_neat_node node = {i, types[i], i < 3 ? OTC_ACT_IDENTITY : OTC_ACT_STEEP_SIGMOID, 0, 1,
                              0, 1};
        otc_neat_genome_add_node(g, &node);
    }
    for (int i = 0; i < n; i++) {
        otc_neat_conn c = {i + 1, io[i][0], io[i][1], 0.5f, enabled[i]};
        otc_neat_genome_add_conn(g, &c);
    }
    return g;
}

/* Stanley's mutate_gene_reenable: only the oldest disabled connection comes back. */
TEST(neat_reenable_oldest_disabled) {
    const int io[4][2] = {{0, 3}, {1, 3}, {2, 3}, {3, 3}};
    const bool en[4] = {true, false, true, false};
    otc_neat_genome *g = make_bias_genome(io, en, 4);
    otc_neat_mutate_reenable(g);
    CHECK(g->conns[0].enabled && g->conns[1].enabled && g->conns[2].enabled);
    CHECK(!g->conns[3].enabled); /* innovation 4 waits for the next re-enable */
    otc_neat_mutate_reenable(g);
    CHECK(g->conns[3].enabled);
    otc_neat_mutate_reenable(g); /* nothing disabled: no change */
    for (int i = 0; i < 4; i++) CHECK(g->conns[i].enabled);
    otc_neat_genome_free(g);
}

/* Stanley's mutate_toggle_enable on hand-made genomes, whichever connection the draw picks:
 * (a) 0->3 and 1->3 each the only connection out of its source: nothing is ever disabled;
 * (b) 0->3 and 0->0 share source 0: exactly one of them is disabled;
 * (c) 0->3 disabled, 1->3 enabled: 0->3 is enabled when drawn, 1->3 is kept (the only one out
 * of 1), so afterwards either both are enabled or nothing changed. Over 200 seeds each
 * connection is drawn about half the time. */
TEST(neat_toggle_enable_keeps_sources_connected) {
    const int io_a[2][2] = {{0, 3}, {1, 3}}, io_b[2][2] = {{0, 3}, {0, 0}};
    const bool on[2] = {true, true}, half[2] = {false, true};
    int drawn_disabled = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        otc_rng rng;
        otc_rng_seed(&rng, seed);
        otc_neat_genome *a = make_bias_genome(io_a, on, 2);
        otc_neat_mutate_toggle_enable(a, &rng);
        CHECK(a->conns[0].enabled && a->conns[1].enabled);
        otc_neat_genome *b = make_bias_genome(io_b, on, 2);
        otc_neat_mutate_toggle_enable(b, &rng);
        CHECK(b->conns[0].enabled + b->conns[1].enabled == 1);
        otc_neat_genome *c = make_bias_genome(io_a, half, 2);
        otc_neat_mutate_toggle_enable(c, &rng);
        CHECK(c->conns[1].enabled);
        drawn_disabled += c->conns[0].enabled;
        otc_neat_genome_free(a);
        otc_neat_genome_free(b);
        otc_neat_genome_free(c);
    }
    CHECK(drawn_disabled > 70 && drawn_disabled < 130);
}

/* The keys gate the operators: a child mutated without a structural change under
 * conn_reenable_prob = 1 always gets its oldest disabled connection back; with both keys 0 the
 * mutation leaves enabled flags alone (enabled_mutate_rate 0). */
TEST(neat_reenable_prob_in_mutate) {
    const int io[3][2] = {{0, 3}, {1, 3}, {2, 3}};
    const bool en[3] = {true, false, false};
    char buf[1024];
    otc_neat_config parsed;
    snprintf(buf, sizeof buf,
             "%s[DefaultGenome]\nconn_toggle_prob = 0.1\nconn_reenable_prob = 0.05\n", base_ini);
    REQUIRE(otc_neat_config_parse(buf, "t.ini", &parsed) == OTC_OK);
    CHECK(parsed.conn_toggle_prob == 0.1 && parsed.conn_reenable_prob == 0.05);
    CHECK(base_config().conn_toggle_prob == 0 && base_config().conn_reenable_prob == 0);
    for (int on = 0; on <= 1; on++) {
        otc_neat_config c = base_config();
        c.num_inputs = 2;
        c.conn_add_prob = c.node_add_prob = c.conn_delete_prob = c.node_delete_prob = 0;
        c.enabled_mutate_rate = 0;
        c.conn_reenable_prob = on;
        otc_neat_innovations *t = otc_neat_innovations_new(4, 10);
        otc_rng rng;
        otc_rng_seed(&rng, 9);
        otc_neat_genome *g = make_bias_genome(io, en, 3);
        REQUIRE(otc_neat_mutate(g, &c, t, &rng) == OTC_OK);
        CHECK(g->conns[1].enabled == (on == 1));
        CHECK(!g->conns[2].enabled);
        otc_neat_genome_free(g);
        otc_neat_innovations_free(t);
    }
}

/* Which connection (by innovation) an add-node split, 0 when none was. */
static int split_innovation(const otc_neat_genome *before, const otc_neat_genome *after) {
    for (int i = 0; i < before->n_conns; i++)
        if (before->conns[i].enabled &&
            !otc_neat_genome_find_conn(after, before->conns[i].innov)->enabled)
            return before->conns[i].innov;
    return 0;
}

/* Stanley's add-node in small genomes: from the oldest splittable connection, move on with
 * probability 0.3, always past bias connections; stopping on a disabled one or running off
 * the end splits nothing. Genes bias->3, 0->3, 1->3: 0->3 with 0.7, 1->3 with 0.3 * 0.7 =
 * 0.21, nothing 0.09, bias->3 never. */
TEST(neat_add_node_prefer_old_walk) {
    const int io[3][2] = {{2, 3}, {0, 3}, {1, 3}};
    const bool on[3] = {true, true, true};
    otc_neat_config c = base_config();
    c.bias_node = true;
    c.node_add_prefer_old = true;
    otc_neat_innovations *t = otc_neat_innovations_new(4, 4);
    otc_rng rng;
    otc_rng_seed(&rng, 23);
    int count[4] = {0}, trials = 6000;
    for (int k = 0; k < trials; k++) {
        otc_neat_genome *g = make_bias_genome(io, on, 3), *before = otc_neat_genome_copy(g);
        REQUIRE(otc_neat_mutate_add_node(g, &c, t, &rng) == OTC_OK);
        int s = split_innovation(before, g);
        count[s]++;
        CHECK(g->n_nodes == (s ? 5 : 4));
        otc_neat_genome_free(g);
        otc_neat_genome_free(before);
    }
    CHECK(count[1] == 0); /* the bias connection */
    CHECK_NEAR((double)count[2] / trials, 0.7, 0.02);
    CHECK_NEAR((double)count[3] / trials, 0.21, 0.02);
    CHECK_NEAR((double)count[0] / trials, 0.09, 0.015);
    /* 0->3, disabled 1->3, bias->3: the walk leaves 0->3 with 0.3 and then either stops on
     * the disabled 1->3 or walks past the bias gene off the end, splitting nothing: 0->3 is
     * split with probability 0.7, nothing else ever. */
    const int io2[3][2] = {{0, 3}, {1, 3}, {2, 3}};
    const bool on2[3] = {true, false, true};
    int split = 0;
    for (int k = 0; k < trials; k++) {
        otc_neat_genome *g = make_bias_genome(io2, on2, 3), *before = otc_neat_genome_copy(g);
        REQUIRE(otc_neat_mutate_add_node(g, &c, t, &rng) == OTC_OK);
        int s = split_innovation(before, g);
        CHECK(s == 0 || s == 1);
        split += s == 1;
        otc_neat_genome_free(g);
        otc_neat_genome_free(before);
    }
    CHECK_NEAR((double)split / trials, 0.7, 0.02);
    otc_neat_innovations_free(t);
}

/* Uniform choice (node_add_prefer_old off) never splits a bias connection either: with only
 * bias->3 enabled nothing is split, with 0->3 beside it 0->3 always is. */
TEST(neat_add_node_never_splits_bias) {
    const int io[2][2] = {{2, 3}, {0, 3}};
    otc_neat_config c = base_config();
    c.bias_node = true;
    c.node_add_prefer_old = false;
    otc_neat_innovations *t = otc_neat_innovations_new(4, 4);
    otc_rng rng;
    otc_rng_seed(&rng, 29);
    for (int k = 0; k < 200; k++) {
        const bool only_bias[2] = {true, false}, both[2] = {true, true};
        otc_neat_genome *g = make_bias_genome(io, only_bias, 2);
        REQUIRE(otc_neat_mutate_add_node(g, &c, t, &rng) == OTC_OK);
        CHECK(g->n_nodes == 4 && g->n_conns == 2 && g->conns[0].enabled);
        otc_neat_genome_free(g);
        g = make_bias_genome(io, both, 2);
        otc_neat_genome *before = otc_neat_genome_copy(g);
        REQUIRE(otc_neat_mutate_add_node(g, &c, t, &rng) == OTC_OK);
        CHECK(split_innovation(before, g) == 2);
        otc_neat_genome_free(g);
        otc_neat_genome_free(before);
    }
    otc_neat_innovations_free(t);
}

/* crossover_disable_stanley: a matching gene disabled in the weaker parent only is disabled
 * with 0.75 and otherwise takes the state of the parent it came from (half the time the
 * disabled one): enabled with 0.25 * 0.5 = 0.125, and then always with the fitter parent's
 * weight. Disabled in both parents: never enabled, unless averaged (then 0.25). */
TEST(neat_crossover_disable_stanley) {
    const int ca[2][3] = {{1, 0, 2}, {2, 1, 2}};
    const float wa[2] = {1, 1}, wb[2] = {2, 2};
    otc_neat_genome *a = make_genome(ca, 2, wa, false), *b = make_genome(ca, 2, wb, false);
    a->fitness = 2;
    b->fitness = 1;
    b->conns[1].enabled = false;
    otc_neat_config c = base_config();
    c.crossover_disable_stanley = true;
    otc_rng rng;
    otc_rng_seed(&rng, 31);
    int enabled = 0, trials = 8000;
    for (int t = 0; t < trials; t++) {
        otc_neat_genome *k = NULL;
        REQUIRE(otc_neat_crossover(a, b, &c, &rng, &k) == OTC_OK);
        if (k->conns[1].enabled) {
            enabled++;
            CHECK(k->conns[1].weight == 1.0f);
        }
        CHECK(k->conns[0].enabled);
        otc_neat_genome_free(k);
    }
    CHECK_NEAR((double)enabled / trials, 0.125, 0.015);
    a->conns[1].enabled = false;
    int multipoint = 0, averaged = 0;
    for (int t = 0; t < trials; t++) {
        otc_neat_genome *k = NULL;
        c.crossover_average_rate = 0;
        REQUIRE(otc_neat_crossover(a, b, &c, &rng, &k) == OTC_OK);
        multipoint += k->conns[1].enabled;
        otc_neat_genome_free(k);
        c.crossover_average_rate = 1;
        REQUIRE(otc_neat_crossover(a, b, &c, &rng, &k) == OTC_OK);
        averaged += k->conns[1].enabled;
        otc_neat_genome_free(k);
    }
    CHECK(multipoint == 0);
    CHECK_NEAR((double)averaged / trials, 0.25, 0.015);
    otc_neat_genome_free(a);
    otc_neat_genome_free(b);
}

/* Stanley's count_offspring by hand. Sizes 2, 2, 1 with shared fitness 1.5, 0.5 | 1, 1 | 1
 * and 5 children: species 0 gets floor 1.5 + floor 0.5 = 1 (its fractions sum to exactly 1,
 * which is not paid: the reference pays above 1), species 1 gets 2, species 2 gets 1, and
 * the child left over goes to the species expecting most (1): 1, 3, 1. Largest remainder
 * would give 2, 2, 1. */
TEST(neat_stanley_offspring_counts) {
    const int size[3] = {2, 2, 1};
    const double shared[5] = {1.5, 0.5, 1.0, 1.0, 1.0};
    int spawn[3];
    otc_neat_stanley_offspring(3, size, shared, 5, spawn);
    CHECK(spawn[0] == 1 && spawn[1] == 3 && spawn[2] == 1);
    /* 0.6, 0.6, 1.8 over 3 children: species 1 is paid the fractions 0.6 + 0.6 > 1, species
     * 2 its whole 1 and the remaining child as the last of the two species expecting most. */
    const int size1[3] = {1, 1, 1};
    const double shared1[3] = {0.6, 0.6, 1.8};
    otc_neat_stanley_offspring(3, size1, shared1, 3, spawn);
    CHECK(spawn[0] == 0 && spawn[1] == 1 && spawn[2] == 2);
    /* scaled to the population: shares 1:3 of 8 children are 2 and 6 */
    const int size2[2] = {1, 1};
    const double shared2[2] = {0.25, 0.75};
    otc_neat_stanley_offspring(2, size2, shared2, 8, spawn);
    CHECK(spawn[0] == 2 && spawn[1] == 6);
}

/* neat-python's compute_spawn then _adjust_spawn_exact, by hand. af 0.5, 0.25, 0 (sum 0.75)
 * of 150 from sizes 50 each, min 2: targets 100, 50, 2; halfway moves 50 -> 75, 50 -> 50
 * (d = 0), 50 -> 26; total 151, norm 150/151: 74.50 -> 75, 49.67 -> 50, 25.83 -> 26 (151);
 * the largest gives one back: 74, 50, 26. */
TEST(neat_np_spawn_hand_computed) {
    int spawn[3];
    const double af[3] = {0.5, 0.25, 0.0};
    const int prev[3] = {50, 50, 50};
    otc_neat_np_spawn(3, af, prev, 150, 2, spawn);
    CHECK(spawn[0] == 74 && spawn[1] == 50 && spawn[2] == 26);
    /* Python's round halves to even: target 10 from 5 is d = 2.5 -> 2 (7), the other target
     * 1 from 5 is d = -2 (3); total 10, nothing to adjust. Half away from zero would say 8. */
    const double af2[2] = {1.0, 0.0};
    const int prev2[2] = {5, 5};
    otc_neat_np_spawn(2, af2, prev2, 10, 1, spawn);
    CHECK(spawn[0] == 7 && spawn[1] == 3);
    /* d = 0.5 rounds to 0 and moves by one: 3 -> 4; 1 stays; norm 4/5: 3.2 -> 3, 0.8 -> 1. */
    const int prev3[2] = {3, 1};
    otc_neat_np_spawn(2, af2, prev3, 4, 1, spawn);
    CHECK(spawn[0] == 3 && spawn[1] == 1);
    /* equal shares 10/3 from 1 each: d = 1.17 -> 2 each, norm 10/6 -> 3 each (9); the
     * smallest gain first, the first of equals: 4, 3, 3. */
    const double af4[3] = {1, 1, 1};
    const int prev4[3] = {1, 1, 1};
    otc_neat_np_spawn(3, af4, prev4, 10, 1, spawn);
    CHECK(spawn[0] == 4 && spawn[1] == 3 && spawn[2] == 3);
}

/* neat-python's genome distance, by hand. Node genes (outputs and hidden, not inputs): A has
 * 2, 3; B has 2, 3, 4. Node 2: |0 - 0.5| bias + |1 - 1.5| response = 1; node 3: aggregation
 * differs = 1; times 0.5 = 1; node 4 disjoint (1 x 1): (1 + 1) / 3 = 2/3. Connections: A 1 2 3,
 * B 1 2 4 6 (A's max 3): innovation 1 |0.5 - 1.5| = 1, 2 enabled differs = 1, times 0.5 = 1;
 * A's 3 disjoint (below 6), B's 4 and 6 excess: (1 + 1 + 2) / 4 = 1. Total 5/3. */
TEST(neat_np_distance_hand_computed) {
    const int ca[3][3] = {{1, 0, 2}, {2, 1, 2}, {3, 0, 3}};
    const int cb[4][3] = {{1, 0, 2}, {2, 1, 2}, {4, 0, 4}, {6, 4, 2}};
    const float wa[3] = {0.5f, -1, 2}, wb[4] = {1.5f, -1, 1, 1};
    otc_neat_genome *a = make_genome(ca, 3, wa, false), *b = make_genome(cb, 4, wb, true);
    REQUIRE(a && b);
    otc_neat_genome_find_node(b, 2)->bias = 0.5f;
    otc_neat_genome_find_node(b, 2)->response = 1.5f;
    otc_neat_genome_find_node(b, 3)->agg = 1;
    b->conns[1].enabled = false;
    otc_neat_config c = base_config();
    c.np_evolution = true;
    c.compatibility_disjoint_coefficient = 1.0;
    c.compatibility_excess_coefficient = 1.0;
    c.compatibility_weight_coefficient = 0.5;
    CHECK_NEAR(otc_neat_distance(a, b, &c), 5.0 / 3.0, 1e-6);
    CHECK_NEAR(otc_neat_distance(b, a, &c), 5.0 / 3.0, 1e-6);
    CHECK_NEAR(otc_neat_distance(a, a, &c), 0.0, 0);
    otc_neat_genome_free(a);
    otc_neat_genome_free(b);
}

/* neat-python's structural mutations: add node splits a disabled connection too, with a
 * zero-bias node (whatever bias_init says), in-weight 1 and the old weight out; deleting a
 * connection prunes a hidden node left without an enabled path to an output (a node with no
 * input that still feeds the output stays, as in neat-python's required_for_output). */
TEST(neat_np_structural_mutations) {
    otc_neat_config c = base_config();
    c.np_evolution = true;
    otc_neat_innovations *t = otc_neat_innovations_new(4, 4);
    otc_rng rng;
    otc_rng_seed(&rng, 31);
    const int one[1][3] = {{1, 0, 2}};
    const float w1[1] = {0.7f};
    for (int k = 0; k < 20; k++) {
        otc_neat_genome *g = make_genome(one, 1, w1, false);
        g->conns[0].enabled = false;
        REQUIRE(otc_neat_mutate_add_node(g, &c, t, &rng) == OTC_OK);
        REQUIRE(g->n_nodes == 5 && g->n_conns == 3);
        const otc_neat_node *n = &g->nodes[4];
        CHECK(n->type == OTC_NEAT_HIDDEN && n->bias == 0.0f);
        const otc_neat_conn *in = otc_neat_genome_find_pair(g, 0, n->id);
        const otc_neat_conn *out = otc_neat_genome_find_pair(g, n->id, 2);
        REQUIRE(in && out);
        CHECK(in->enabled && out->enabled && in->weight == 1.0f && out->weight == 0.7f);
        otc_neat_genome_free(g);
    }
    c.node_add_prob = c.conn_add_prob = c.node_delete_prob = 0;
    c.conn_delete_prob = 1;
    c.single_structural_mutation = false;
    const int via3[2][3] = {{1, 0, 3}, {2, 3, 2}};
    const float w2[2] = {1, 1};
    int pruned = 0, kept = 0;
    for (int k = 0; k < 40; k++) {
        otc_neat_genome *g = make_genome(via3, 2, w2, false);
        REQUIRE(otc_neat_mutate(g, &c, t, &rng) == OTC_OK);
        if (g->n_conns == 0) { /* 3 -> 2 went: node 3 reaches no output */
            CHECK(g->n_nodes == 3 && !otc_neat_genome_find_node(g, 3));
            pruned++;
        } else { /* 0 -> 3 went: node 3 still feeds the output */
            CHECK(g->n_conns == 1 && g->conns[0].in == 3 && otc_neat_genome_find_node(g, 3));
            kept++;
        }
        otc_neat_genome_free(g);
    }
    CHECK(pruned > 0 && kept > 0);
    otc_neat_innovations_free(t);
}

/* A config in neat-python's dialect takes neat-python's rules; one otc key, or the key
 * evolution, says otherwise. */
TEST(neat_np_evolution_follows_dialect) {
    otc_neat_config c;
    const char *np = base_ini; /* no otc key */
    char buf[512];
    REQUIRE(otc_neat_config_parse(np, "np.ini", &c) == OTC_OK);
    CHECK(c.np_evolution);
    snprintf(buf, sizeof buf, "%s[DefaultReproduction]\ncrossover_rate = 0.5\n", np);
    REQUIRE(otc_neat_config_parse(buf, "otc.ini", &c) == OTC_OK);
    CHECK(!c.np_evolution);
    snprintf(buf, sizeof buf,
             "%s[NEAT]\nevolution = neat-python\n[DefaultReproduction]\n"
             "crossover_rate = 0.5\n",
             np);
    REQUIRE(otc_neat_config_parse(buf, "both.ini", &c) == OTC_OK);
    CHECK(c.np_evolution);
    snprintf(buf, sizeof buf, "%s[NEAT]\nevolution = otc\n", np);
    REQUIRE(otc_neat_config_parse(buf, "o.ini", &c) == OTC_OK);
    CHECK(!c.np_evolution && c.np_functions);
}

TEST(neat_config_reference_keys) {
    char buf[2048];
    snprintf(buf, sizeof buf,
             "%s[DefaultStagnation]\nstagnation_penalty = 0.01\n[DefaultReproduction]\n"
             "offspring_stanley = true\ncrossover_disable_stanley = true\n",
             base_ini);
    otc_neat_config c;
    REQUIRE(otc_neat_config_parse(buf, "ref.ini", &c) == OTC_OK);
    CHECK_NEAR(c.stagnation_penalty, 0.01, 0);
    CHECK(c.offspring_stanley && c.crossover_disable_stanley);
    otc_neat_config d = base_config();
    CHECK(d.stagnation_penalty == 0 && !d.offspring_stanley && !d.crossover_disable_stanley);
    snprintf(buf, sizeof buf, "%s[DefaultStagnation]\nstagnation_penalty = 2\n", base_ini);
    expect_config_error(buf, "stagnation_penalty", "DefaultStagnation", NULL);
}
