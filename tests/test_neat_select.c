/* Selection beyond fitness: NSGA-II's sort and crowding on hand-computed fronts, objective
 * counts, NSGA-II and novelty runs, the maze robot's sensors and motion worked out by hand,
 * and the config's refusals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "otc/neat.h"
#include "otc/neat_maze.h"

/* An example config with `extra` lines added to its [NEAT] section. */
static otc_status example_with(const char *file, const char *extra, otc_neat_config *c) {
    char path[512];
    snprintf(path, sizeof path, "%s/examples/neat/%s", OTC_SOURCE_DIR, file);
    FILE *f = fopen(path, "rb");
    if (!f) return OTC_ERR_IO;
    static char text[65536], out[70000];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *at = strstr(text, "[NEAT]\n");
    if (!at) return OTC_ERR_FORMAT;
    at += strlen("[NEAT]\n");
    snprintf(out, sizeof out, "%.*s%s\n%s", (int)(at - text), text, extra, at);
    return otc_neat_config_parse(out, file, c);
}

TEST(neat_nondominated_sort_hand_computed) {
    /* Minimised pairs: A(1,5) B(2,3) C(4,1) D(3,4) E(5,5) F(2,3). B dominates D (2<=3,
     * 3<=4); D dominates E; F equals B (neither dominates). Fronts: {A,B,C,F}, {D}, {E}. */
    const double v[] = {1, 5, 2, 3, 4, 1, 3, 4, 5, 5, 2, 3};
    int rank[6];
    CHECK(otc_neat_nondominated_sort(6, 2, v, rank) == 3);
    const int want[6] = {0, 0, 0, 1, 2, 0};
    for (int i = 0; i < 6; i++) CHECK_MSG(rank[i] == want[i], "point %d rank %d", i, rank[i]);
    /* Three objectives: (1,1,1) dominates everything else here. */
    const double w[] = {1, 1, 1, 2, 1, 1, 1, 2, 3, 0, 9, 9};
    int r3[4];
    CHECK(otc_neat_nondominated_sort(4, 3, w, r3) == 2);
    CHECK(r3[0] == 0 && r3[1] == 1 && r3[2] == 1 && r3[3] == 0);
}

/* Stochastic Pareto dominance: point 0 is the fittest and the costliest, points 1..N tie with
 * each other. On both objectives no pair dominates (one front); on fitness alone 0 dominates
 * every other point. With keep = 0.25 each pair (0, i) counts the cost a quarter of the time,
 * so about 3/4 of the points fall to the second front (binomial: 750 of 1000, sd 13.7). */
TEST(neat_stochastic_dominance_counts_the_cost_as_often_as_asked) {
    enum { N = 1000 };
    static double v[(N + 1) * 2];
    static int rank[N + 1];
    v[0] = -10, v[1] = 100;
    for (int i = 1; i <= N; i++) v[2 * i] = -1, v[2 * i + 1] = 1;
    CHECK(otc_neat_nondominated_sort_stochastic(N + 1, 2, v, rank, 1.0, 1, 7) == 1);
    CHECK(otc_neat_nondominated_sort_stochastic(N + 1, 2, v, rank, 0.0, 1, 7) == 2);
    CHECK(rank[0] == 0 && rank[1] == 1 && rank[N] == 1);
    CHECK(otc_neat_nondominated_sort_stochastic(N + 1, 2, v, rank, 0.25, 1, 7) == 2);
    int behind = 0;
    for (int i = 1; i <= N; i++) behind += rank[i];
    CHECK_MSG(behind > 700 && behind < 800, "%d of %d behind", behind, N);
    int again[N + 1];
    otc_neat_nondominated_sort_stochastic(N + 1, 2, v, again, 0.25, 1, 7);
    CHECK(!memcmp(rank, again, sizeof again)); /* the same seed, the same draws */
}

TEST(neat_crowding_distance_hand_computed) {
    /* Front A(1,5) B(2,3) C(4,1): along objective 0 B's neighbours span (4-1)/3 = 1, along
     * objective 1 (5-1)/4 = 1: B = 2; the ends are infinite. */
    const double v[] = {1, 5, 2, 3, 4, 1};
    const int idx[] = {0, 1, 2};
    double d[3];
    CHECK(otc_neat_crowding_distance(3, idx, 2, v, d) == OTC_OK);
    CHECK(isinf(d[0]) && isinf(d[2]));
    CHECK_NEAR(d[1], 2.0, 1e-12);
    /* P1(0,4) P2(1,2) P3(3,1) P4(4,0): objective 0 spans 4: P2 (3-0)/4, P3 (4-1)/4;
     * objective 1 spans 4: P2 (4-1)/4, P3 (2-0)/4. P2 = 1.5, P3 = 1.25. */
    const double u[] = {0, 4, 1, 2, 3, 1, 4, 0};
    const int all[] = {3, 1, 0, 2}; /* any order */
    double e[4];
    CHECK(otc_neat_crowding_distance(4, all, 2, u, e) == OTC_OK);
    CHECK(isinf(e[0]) && isinf(e[3]));
    CHECK_NEAR(e[1], 1.5, 1e-12);
    CHECK_NEAR(e[2], 1.25, 1e-12);
}

TEST(neat_objective_counts) {
    otc_neat_config c;
    REQUIRE(example_with("xor.ini", "", &c) == OTC_OK);
    otc_neat_innovations *inn = otc_neat_innovations_new(4, 0);
    otc_neat_genome *g = otc_neat_genome_new();
    otc_rng rng;
    otc_rng_seed(&rng, 1);
    REQUIRE(inn && g && otc_neat_genome_init(g, &c, inn, &rng) == OTC_OK);
    g->fitness = 9.5;
    /* full_direct from two inputs and the bias node to one output: 3 connections, no hidden
     * node, 3 weights + 1 bias, cost 3 multiply-adds + 4 x 4 bytes. */
    CHECK(otc_neat_objective_value(OTC_NEAT_OBJ_FITNESS, g) == 9.5);
    CHECK(otc_neat_objective_value(OTC_NEAT_OBJ_CONNECTIONS, g) == 3);
    CHECK(otc_neat_objective_value(OTC_NEAT_OBJ_NODES, g) == 0);
    CHECK(otc_neat_objective_value(OTC_NEAT_OBJ_PARAMETERS, g) == 4);
    CHECK(otc_neat_objective_value(OTC_NEAT_OBJ_COST, g) == 19);
    g->conns[0].enabled = false;
    CHECK(otc_neat_objective_value(OTC_NEAT_OBJ_COST, g) == 2 + 4 * 3);
    otc_neat_genome_free(g);
    otc_neat_innovations_free(inn);
}

TEST(neat_knee_hand_computed) {
    /* (fitness, cost) scaled over the members to x = fitness up, y = cost down, both in
     * [0, 1]; the knee bulges most beyond x + y = 1. A convex front: (0, 0) (0.8, 2) (1, 10)
     * scale to (0, 1) (0.8, 0.8) (1, 0): the middle bulges 0.6. */
    const double f1[] = {0, 0.8, 1}, c1[] = {0, 2, 10};
    CHECK(otc_neat_knee(3, f1, c1) == 1);
    /* A sagging front, as dpnv's with a 0-connection member of fitness 0.004: (0.004, 0)
     * (0.3, 5) (1, 10) scale to (0, 1) (0.297, 0.5) (1, 0): the middle lies 0.203 below the
     * line and the ends on it; the fittest, never the useless cheap end. */
    const double f2[] = {0.004, 0.3, 1}, c2[] = {0, 5, 10};
    CHECK(otc_neat_knee(3, f2, c2) == 2);
    /* Two members, equal costs, and nothing: the fittest, or -1. */
    const double f3[] = {2, 5}, c3[] = {1, 4}, c4[] = {3, 3};
    CHECK(otc_neat_knee(2, f3, c3) == 1);
    CHECK(otc_neat_knee(2, f3, c4) == 1);
    CHECK(otc_neat_knee(0, f3, c3) == -1);
}

/* A run of `gens` generations at most; the population (caller frees) and whether it solved. */
static otc_neat_population *run(const otc_neat_config *c, const char *task_name, uint64_t seed,
                                int gens, int threads, bool front, bool *solved) {
    otc_neat_task *task = NULL;
    otc_neat_population *p = NULL;
    if (otc_neat_task_create(task_name, c, &task) != OTC_OK ||
        otc_neat_population_new(c, seed, &p) != OTC_OK) {
        otc_neat_task_free(task);
        return NULL;
    }
    if (front) otc_neat_track_front(p);
    otc_neat_run_options o = {.generations = gens, .threads = threads};
    otc_status s = otc_neat_run(p, task, &o, solved);
    otc_neat_task_free(task);
    if (s != OTC_OK) {
        otc_neat_population_free(p);
        return NULL;
    }
    return p;
}

TEST(neat_nsga2_xor_solves_with_a_front_of_smaller_nets) {
    otc_neat_config c;
    REQUIRE(example_with("xor.ini", "selection = nsga2\nobjectives = fitness, connections", &c) ==
            OTC_OK);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        bool solved = false;
        otc_neat_population *p = run(&c, "xor", seed, 200, 1, true, &solved);
        REQUIRE(p);
        CHECK_MSG(solved, "seed %llu", (unsigned long long)seed);
        int n = otc_neat_front_size(p);
        CHECK(n >= 2);
        int champ = otc_neat_genome_enabled_count(otc_neat_champion(p));
        int smallest = 1 << 30;
        for (int i = 0; i < n; i++) {
            const double *a = otc_neat_front_values(p, i);
            smallest = (int)fmin(smallest, a[1]);
            for (int j = 0; j < n; j++) { /* no member dominates another */
                const double *b = otc_neat_front_values(p, j);
                CHECK(!(i != j && a[0] >= b[0] && a[1] <= b[1] && (a[0] > b[0] || a[1] < b[1])));
            }
        }
        CHECK(smallest < champ);
        /* Along the front, fewer connections never come with more fitness. */
        for (int i = 1; i < n; i++)
            CHECK(otc_neat_front_values(p, i)[1] > otc_neat_front_values(p, i - 1)[1] &&
                  otc_neat_front_values(p, i)[0] > otc_neat_front_values(p, i - 1)[0]);
        CHECK(otc_neat_front_knee(p) >= 0 && otc_neat_front_knee(p) < n);
        otc_neat_population_free(p);
    }
}

/* Whether g solves `task`, evaluated afresh through the public batch evaluator. */
static bool solves(const otc_neat_task *task, const otc_neat_config *c, otc_neat_evaluator *e,
                   otc_neat_genome *g) {
    uint64_t seed = 1;
    bool solved = false;
    g->evaluated = false;
    otc_neat_batch b = {.genomes = &g, .seeds = &seed, .n = 1, .solved = &solved};
    return otc_neat_evaluate_batch(e, task, c, &b, 1) == OTC_OK && solved;
}

TEST(neat_nsga2_champion_needs_every_connection) {
    /* Under a size objective the solver is simplified before it becomes the champion: it
     * still solves XOR, with any one of its enabled connections off it no longer does, and
     * each hidden node it keeps feeds another node. */
    otc_neat_config c;
    REQUIRE(example_with("xor.ini", "selection = nsga2\nobjectives = fitness, connections", &c) ==
            OTC_OK);
    otc_neat_task *task = NULL;
    otc_neat_evaluator *e = otc_neat_evaluator_new();
    REQUIRE(e && otc_neat_task_create("xor", &c, &task) == OTC_OK);
    for (uint64_t seed = 1; seed <= 6; seed++) {
        bool solved = false;
        otc_neat_population *p = run(&c, "xor", seed, 200, 1, false, &solved);
        REQUIRE(p);
        CHECK_MSG(solved, "seed %llu", (unsigned long long)seed);
        otc_neat_genome *g = otc_neat_genome_copy(otc_neat_champion(p));
        REQUIRE(g);
        CHECK_MSG(solves(task, &c, e, g), "seed %llu: the champion does not solve",
                  (unsigned long long)seed);
        for (int i = 0; i < g->n_nodes; i++) { /* no hidden node is left without a way out */
            bool out = g->nodes[i].type != OTC_NEAT_HIDDEN;
            for (int k = 0; k < g->n_conns && !out; k++)
                out = g->conns[k].enabled && g->conns[k].in == g->nodes[i].id;
            CHECK_MSG(out, "seed %llu: hidden node %d leads nowhere", (unsigned long long)seed,
                      g->nodes[i].id);
        }
        for (int i = 0; i < g->n_conns; i++) {
            if (!g->conns[i].enabled) continue;
            g->conns[i].enabled = false;
            CHECK_MSG(!solves(task, &c, e, g), "seed %llu: solves without connection %d",
                      (unsigned long long)seed, i);
            g->conns[i].enabled = true;
        }
        otc_neat_genome_free(g);
        otc_neat_population_free(p);
    }
    otc_neat_evaluator_free(e);
    otc_neat_task_free(task);
}

TEST(neat_nsga2_same_on_any_thread_count) {
    otc_neat_config c;
    REQUIRE(example_with("xor.ini", "selection = nsga2\nobjectives = fitness, connections, nodes",
                         &c) == OTC_OK);
    bool s1 = false, s2 = false;
    otc_neat_population *a = run(&c, "xor", 7, 40, 1, false, &s1);
    otc_neat_population *b = run(&c, "xor", 7, 40, 3, false, &s2);
    REQUIRE(a && b);
    CHECK(s1 == s2);
    CHECK(otc_neat_evaluations(a) == otc_neat_evaluations(b));
    CHECK(otc_neat_champion(a)->fitness == otc_neat_champion(b)->fitness);
    CHECK(otc_neat_genome_enabled_count(otc_neat_champion(a)) ==
          otc_neat_genome_enabled_count(otc_neat_champion(b)));
    otc_neat_population_free(a);
    otc_neat_population_free(b);
}

/* The stochastic comparisons are drawn per pair from the run's seed, so they too repeat on any
 * thread count; under the rank value as under the default. */
TEST(neat_nsga2_stochastic_rank_same_on_any_thread_count) {
    otc_neat_config c;
    REQUIRE(example_with("xor.ini",
                         "selection = nsga2\nobjectives = fitness, connections\n"
                         "objective_probability = 0.5\nnsga2_value = rank",
                         &c) == OTC_OK);
    CHECK(c.objective_probability == 0.5 && c.nsga2_rank);
    bool s1 = false, s2 = false;
    otc_neat_population *a = run(&c, "xor", 5, 30, 1, false, &s1);
    otc_neat_population *b = run(&c, "xor", 5, 30, 3, false, &s2);
    REQUIRE(a && b);
    CHECK(s1 == s2);
    CHECK(otc_neat_evaluations(a) == otc_neat_evaluations(b));
    CHECK(otc_neat_champion(a)->fitness == otc_neat_champion(b)->fitness);
    otc_neat_population_free(a);
    otc_neat_population_free(b);
}

/* The diversity objective (Mouret and Doncieux 2012): each behaviour's mean distance to the
 * others, the distance the mean absolute difference. Worked by hand: a = 0000, b = 1100,
 * c = 1111: d(a, b) = 0.5, d(a, c) = 1, d(b, c) = 0.5, so a (0.5 + 1) / 2, b 0.5, c 0.75. */
TEST(neat_diversity_hand_computed) {
    const float bc[] = {0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1};
    double div[3] = {-1, -1, -1};
    otc_neat_behaviour_diversity(3, 4, bc, div);
    CHECK(div[0] == 0.75 && div[1] == 0.5 && div[2] == 0.75);
    const float mixed[] = {0.25f, -1, 2, 0.5f}; /* two of dim 2: (1.75 + 1.5) / 2 */
    otc_neat_behaviour_diversity(2, 2, mixed, div);
    CHECK(div[0] == 1.625 && div[1] == 1.625);
    otc_neat_behaviour_diversity(1, 4, bc, div);
    CHECK(div[0] == 0); /* alone: no other to differ from */
}

/* In a run (XOR's 4 answers as behaviours, pop 30): the front keeps each member's diversity,
 * the same on 1 and 2 threads, and the last generation's members' match the pure function
 * over that generation's behaviours. */
TEST(neat_diversity_same_on_any_thread_count) {
    otc_neat_config c;
    REQUIRE(example_with("xor.ini",
                         "selection = nsga2\nobjectives = fitness, connections, diversity",
                         &c) == OTC_OK);
    c.pop_size = 30;
    bool s1 = false, s2 = false;
    otc_neat_population *a = run(&c, "xor", 3, 6, 1, true, &s1);
    otc_neat_population *b = run(&c, "xor", 3, 6, 2, true, &s2);
    REQUIRE(a && b);
    CHECK(s1 == s2 && otc_neat_evaluations(a) == otc_neat_evaluations(b));
    int n = otc_neat_front_size(a);
    REQUIRE(n > 0 && n == otc_neat_front_size(b));
    for (int i = 0; i < n; i++)
        CHECK(
            !memcmp(otc_neat_front_values(a, i), otc_neat_front_values(b, i), sizeof(double) * 3));
    /* The last evaluated generation (a run that solved stops before reproducing). */
    int last = otc_neat_generation(a) - (s1 ? 0 : 1), nb = 0, dim = 0, checked = 0;
    const float *bc = otc_neat_behaviours(a, &nb, &dim);
    REQUIRE(bc && dim == 4 && nb == 30);
    double div[30];
    otc_neat_behaviour_diversity(nb, dim, bc, div);
    for (int i = 0; i < n; i++) {
        const otc_neat_genome *g = otc_neat_front_genome(a, i);
        for (int k = 0; k < nb && otc_neat_front_generation(a, i) == last; k++)
            if (g->n_bc == dim && !memcmp(g->bc, bc + k * dim, sizeof(float) * dim)) {
                CHECK(otc_neat_front_values(a, i)[2] == div[k]);
                checked++;
                break;
            }
    }
    CHECK_MSG(checked > 0, "no front member from the last generation");
    otc_neat_population_free(a);
    otc_neat_population_free(b);
}

TEST(neat_novelty_tiny_maze) {
    otc_neat_config c;
    REQUIRE(example_with("maze.ini", "", &c) == OTC_OK);
    c.pop_size = 30; /* the tiny maze takes a few generations of 30 */
    bool solved = false;
    otc_neat_population *p = run(&c, "maze:tiny", 1, 60, 2, false, &solved);
    REQUIRE(p);
    CHECK(solved);
    otc_neat_population_free(p);
    /* The archive over 8 generations of the medium maze (the tiny one is solved before it
     * grows much). */
    p = run(&c, "maze:medium", 1, 8, 2, false, &solved);
    REQUIRE(p);
    int n = 0, dim = 0;
    const float *a = otc_neat_novelty_archive(p, &n, &dim);
    CHECK(a && n > 1 && dim == 2);
    for (int i = 0; a && i < n; i++) /* final positions stay inside the maze's walls */
        CHECK(a[2 * i] > 6 && a[2 * i] < 293 && a[2 * i + 1] > 5 && a[2 * i + 1] < 134);
    /* A behaviour joins only when farther than the threshold from every archived one, and
     * the threshold never falls below 0.25 (the maze's 6.0 / 24): no two archived behaviours
     * are as close as that in Lehman & Stanley's distance, the mean absolute difference. */
    for (int i = 0; a && i < n; i++)
        for (int j = 0; j < i; j++)
            CHECK_MSG((fabs(a[2 * i] - a[2 * j]) + fabs(a[2 * i + 1] - a[2 * j + 1])) / 2 > 0.25,
                      "archived %d and %d", j, i);
    CHECK(otc_neat_novelty_threshold(p) >= 0.25);
    otc_neat_population_free(p);
}

TEST(neat_novelty_pole_behaviours) {
    /* The single pole under novelty: each trial's behaviour is its last and mean observation
     * (5 inputs: 10 numbers), from trials run one at a time. */
    otc_neat_config c;
    REQUIRE(example_with("pole1.ini", "selection = novelty\nnovelty_weight = 0.5", &c) == OTC_OK);
    c.pop_size = 50;
    bool solved = false;
    otc_neat_population *p = run(&c, "pole1", 1, 3, 2, false, &solved);
    REQUIRE(p);
    int n = 0, dim = 0;
    const float *b = otc_neat_behaviours(p, &n, &dim);
    CHECK(b && dim == 10 && n == 50);
    for (int i = 0; b && i < n * dim; i++) CHECK(isfinite(b[i]));
    otc_neat_population_free(p);
}

TEST(neat_novelty_csv_behaviours) {
    /* circle.csv: one output, so the behaviour is the outputs on the first 16 training rows. */
    otc_neat_config c;
    REQUIRE(example_with("circle.ini", "selection = novelty", &c) == OTC_OK);
    c.pop_size = 30;
    bool solved = false;
    otc_neat_population *p =
        run(&c, "csv:" OTC_SOURCE_DIR "/examples/data/circle.csv", 1, 2, 1, false, &solved);
    REQUIRE(p);
    int n = 0, dim = 0;
    const float *b = otc_neat_behaviours(p, &n, &dim);
    CHECK(b && dim == 16 && n == 30);
    for (int i = 0; b && i < n * dim; i++) CHECK(b[i] >= 0 && b[i] <= 1); /* sigmoid outputs */
    otc_neat_population_free(p);
}

TEST(neat_novelty_xor_behaviours) {
    otc_neat_config c;
    REQUIRE(example_with("xor.ini", "selection = novelty\nnovelty_weight = 0.5", &c) == OTC_OK);
    bool solved = false;
    otc_neat_population *p = run(&c, "xor", 2, 300, 1, false, &solved);
    REQUIRE(p);
    CHECK(solved); /* the fitness is still recorded and still stops the run */
    int n = 0, dim = 0;
    CHECK(otc_neat_novelty_archive(p, &n, &dim) && dim == 4);
    otc_neat_population_free(p);
}

/* The tiny maze: a 100 x 100 box with a wall along y = 50 from x = 0 to 80. */
TEST(neat_maze_sensors_hand_computed) {
    const otc_maze *m = otc_maze_get("tiny");
    REQUIRE(m);
    float in[OTC_MAZE_N_INPUTS];
    /* At (20, 25) heading 0 (+x): the rays at -90 (to y = 0: 25), -45 (to y = 0 at x = 45:
     * 25 sqrt 2), 0 (to x = 100: 80), 45 (to the inner wall at x = 45: 25 sqrt 2), 90 (to the
     * inner wall: 25), 180 (to x = 0: 20), over the range 100. The goal (20, 80) bears 90
     * degrees: the second radar. */
    otc_maze_sense(m, 20, 25, 0, in);
    const float want[] = {1, 0.25f, 0.35355339f, 0.8f, 0.35355339f, 0.25f, 0.2f, 0, 1, 0, 0};
    for (int i = 0; i < OTC_MAZE_N_INPUTS; i++) CHECK_NEAR(in[i], want[i], 1e-6);
    /* At (90, 25) heading 90: -90 looks along +x (10), -45 at 45 degrees (x = 100 after
     * 10 sqrt 2), 0 along +y past the inner wall's end (y = 100: 75), 45 at 135 degrees (the
     * inner wall at x = 65: 25 sqrt 2), 90 along -x (90, to x = 0), 180 along -y (25). The goal
     * bears atan2(55, -70) - 90 = 51.8 degrees: the second radar. */
    otc_maze_sense(m, 90, 25, 90, in);
    const float want2[] = {1, 0.1f, 0.14142136f, 0.75f, 0.35355339f, 0.9f, 0.25f, 0, 1, 0, 0};
    for (int i = 0; i < OTC_MAZE_N_INPUTS; i++) CHECK_NEAR(in[i], want2[i], 1e-6);
    /* The hard maze at (100, 120) heading -y: the -90 ray looks along -x and meets the wall
     * from (57, 106) to (158, 162) a quarter along it, at x = 57 + 101 / 4 = 82.25 (17.75),
     * before the one at x = 56. */
    const otc_maze *h = otc_maze_get("hard");
    REQUIRE(h);
    otc_maze_sense(h, 100, 120, 270, in); /* heading -y: the -90 ray looks along -x */
    CHECK_NEAR(in[1], 0.1775, 1e-6);
    CHECK(otc_maze_get("nowhere") == NULL);
}

static otc_status full_ahead(void *ctx, const float *in, float *out) {
    (void)ctx, (void)in;
    out[0] = 0.5f; /* no turn */
    out[1] = 1.0f; /* speed += 0.5 a step, up to 3 */
    return OTC_OK;
}

/* full_ahead, counting its calls and keeping the inputs of the first. */
typedef struct {
    int calls;
    float first[OTC_MAZE_N_INPUTS], last_warmup[OTC_MAZE_N_INPUTS];
} counted;

static otc_status counted_ahead(void *ctx, const float *in, float *out) {
    counted *k = ctx;
    if (k->calls == 0) memcpy(k->first, in, sizeof k->first);
    if (k->calls == OTC_MAZE_WARMUP - 1) memcpy(k->last_warmup, in, sizeof k->last_warmup);
    k->calls++;
    return full_ahead(NULL, in, out);
}

TEST(neat_maze_motion_hand_computed) {
    /* From (20, 25) along +x: 0.5 + 1 + 1.5 + 2 + 2.5 in five steps (27.5), then 3 a step
     * while the robot (radius 8) stays clear of x = 100: 27.5 + 3 x 21 = 90.5; 93.5 would be
     * 6.5 from the wall, so it stays there. */
    double x, y;
    int steps = 0;
    bool solved = true;
    float *path = malloc(sizeof *path * 2 * (OTC_MAZE_STEPS + 1));
    REQUIRE(path);
    CHECK(otc_maze_run(otc_maze_get("tiny"), full_ahead, NULL, &x, &y, path, &steps, &solved) ==
          OTC_OK);
    CHECK_NEAR(x, 90.5, 1e-9);
    CHECK_NEAR(y, 25, 1e-9);
    CHECK(steps == OTC_MAZE_STEPS && !solved);
    CHECK_NEAR(path[2 * 5], 27.5, 1e-4);
    /* Before the first step the net is activated 10 times on the start's inputs, outputs
     * unused (Lehman & Stanley's code lets a recurrent net settle so): the motion above is
     * the same, and the policy runs 10 + 400 times. */
    counted k = {0};
    float start[OTC_MAZE_N_INPUTS];
    otc_maze_sense(otc_maze_get("tiny"), 20, 25, 0, start);
    CHECK(otc_maze_run(otc_maze_get("tiny"), counted_ahead, &k, &x, &y, NULL, &steps, NULL) ==
          OTC_OK);
    CHECK_NEAR(x, 90.5, 1e-9);
    CHECK(k.calls == 10 + OTC_MAZE_STEPS);
    CHECK(memcmp(k.first, start, sizeof start) == 0 &&
          memcmp(k.last_warmup, start, sizeof start) == 0);
    free(path);
}

TEST(neat_selection_config_errors) {
    otc_neat_config c;
    struct {
        const char *extra, *says;
    } bad[] = {
        {"selection = best", "[NEAT] selection: bad value 'best'"},
        {"selection = nsga2\nobjectives = fitness, size", "unknown objective 'size'"},
        {"objectives = fitness", "at least two objectives"},
        {"objectives = fitness, nodes, fitness", "objective 'fitness' given twice"},
        {"selection = nsga2\nobjectives = connections, nodes", "[NEAT] objectives: nsga2 needs"},
        {"selection = novelty\nnovelty_weight = 1.5", "novelty_weight"},
        {"selection = novelty\nnovelty_k = 0", "novelty_k"},
        {"selection = nsga2\nevolution = neat-python", "[NEAT] selection: nsga2 needs otc's"},
        {"selection = nsga2\nobjectives = fitness, substrate_links",
         "[NEAT] objectives: substrate_links needs a [Substrate] section"},
        {"selection = nsga2\nobjective_probability = 1.5", "[NEAT] objective_probability"},
        {"selection = nsga2\nnsga2_value = best", "[NEAT] nsga2_value: bad value 'best'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(example_with("xor.ini", bad[i].extra, &c) == OTC_ERR_CONFIG, "%s", bad[i].extra);
        CHECK_MSG(strstr(otc_last_error(), bad[i].says), "%s: %s", bad[i].extra, otc_last_error());
    }
    /* A task without behaviours cannot do novelty search: the key is named. */
    REQUIRE(example_with("delayed_xor_hybrid.ini", "selection = novelty", &c) == OTC_OK);
    otc_neat_task *t = NULL;
    CHECK(otc_neat_task_create("csv:" OTC_SOURCE_DIR "/examples/data/delayed_xor.csv", &c, &t) ==
              OTC_ERR_CONFIG &&
          !t);
    CHECK(strstr(otc_last_error(), "[NEAT] selection: novelty needs a behaviour"));
    REQUIRE(example_with("delayed_xor_hybrid.ini",
                         "selection = nsga2\nobjectives = fitness, diversity", &c) == OTC_OK);
    CHECK(otc_neat_task_create("csv:" OTC_SOURCE_DIR "/examples/data/delayed_xor.csv", &c, &t) ==
              OTC_ERR_CONFIG &&
          !t);
    CHECK(strstr(otc_last_error(), "[NEAT] objectives: diversity needs a behaviour"));
    /* The maze's inputs and outputs are checked against the config. */
    REQUIRE(example_with("xor.ini", "", &c) == OTC_OK);
    CHECK(otc_neat_task_create("maze:hard", &c, &t) == OTC_ERR_CONFIG);
    CHECK(strstr(otc_last_error(), "num_inputs"));
    CHECK(otc_neat_task_create("maze:easy", &c, &t) == OTC_ERR_ARG);
}
