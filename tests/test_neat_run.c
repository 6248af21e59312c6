/* NEAT runs end to end: XOR gets solved, results do not depend on the thread count, a
 * resumed checkpoint continues exactly, the champion graph carries its genome (and a csv
 * task's standardisation), the hybrid trainer writes weights back only when Lamarckian,
 * stagnant species are removed or, with stagnation_penalty, kept, and evaluation overlapping
 * reproduction changes nothing. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "otc/data.h"
#include "otc/executor.h"
#include "otc/model.h"
#include "otc/neat.h"

static otc_neat_config xor_config(void) {
    otc_neat_config c;
    otc_status s = otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/xor.ini", &c);
    if (s != OTC_OK) fprintf(stderr, "%s\n", otc_last_error());
    return c;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (buf) buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The population's full state as canonical text, without wall-clock times. */
static char *state_text(const otc_neat_population *p, const char *path) {
    if (otc_neat_checkpoint_save(p, path) != OTC_OK) return NULL;
    char *text = read_text(path);
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

static otc_neat_population *run_generations(const otc_neat_config *c, otc_neat_task *task,
                                            uint64_t seed, int gens, int threads) {
    otc_neat_population *p = NULL;
    if (otc_neat_population_new(c, seed, &p) != OTC_OK) return NULL;
    otc_neat_step_options o = {.threads = threads};
    for (int g = 0; g < gens; g++)
        if (otc_neat_step(p, task, &o, NULL) != OTC_OK) {
            fprintf(stderr, "%s\n", otc_last_error());
            break;
        }
    return p;
}

TEST(neat_evolve_xor_solves) {
    otc_neat_config c = xor_config();
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("xor", &c, &task) == OTC_OK);
    otc_neat_population *p = NULL;
    REQUIRE(otc_neat_population_new(&c, 3, &p) == OTC_OK); /* solves in 21 generations */
    bool solved = false;
    otc_neat_run_options o = {.generations = 300, .threads = 2};
    REQUIRE(otc_neat_run(p, task, &o, &solved) == OTC_OK);
    CHECK(solved);
    const otc_neat_genome *champ = otc_neat_champion(p);
    REQUIRE(champ);
    CHECK(otc_neat_genome_hidden_count(champ) >= 1); /* XOR is not linearly separable */
    /* re-check the solution independently of the task code */
    otc_neat_phenotype *ph = NULL;
    REQUIRE(otc_neat_phenotype_build(champ, &c, &ph) == OTC_OK);
    otc_executor *ex = otc_interpreter_new(ph->graph, &(otc_exec_options){.inference = true});
    const float x[8] = {0, 0, 0, 1, 1, 0, 1, 1};
    const float *y;
    REQUIRE(otc_exec_set_input(ex, ph->input, x, 4) == OTC_OK && otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_value(ex, otc_graph_output(ph->graph, 0), &y, NULL) == OTC_OK);
    CHECK(y[0] < 0.5f && y[1] > 0.5f && y[2] > 0.5f && y[3] < 0.5f);
    otc_exec_free(ex);
    otc_neat_phenotype_free(ph);
    otc_neat_population_free(p);
    otc_neat_task_free(task);
}

TEST(neat_results_independent_of_thread_count) {
    otc_neat_config c = xor_config();
    c.pop_size = 60;
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("xor", &c, &task) == OTC_OK);
    otc_neat_population *a = run_generations(&c, task, 9, 6, 1);
    otc_neat_population *b = run_generations(&c, task, 9, 6, 2);
    otc_neat_population *d = run_generations(&c, task, 10, 6, 2);
    REQUIRE(a && b && d);
    char *ta = state_text(a, OTC_BINARY_DIR "/neat_threads_a.json");
    char *tb = state_text(b, OTC_BINARY_DIR "/neat_threads_b.json");
    char *td = state_text(d, OTC_BINARY_DIR "/neat_threads_d.json");
    REQUIRE(ta && tb && td);
    CHECK(strcmp(ta, tb) == 0);
    CHECK(strcmp(ta, td) != 0); /* and the seed does matter */
    free(ta);
    free(tb);
    free(td);
    otc_neat_population_free(a);
    otc_neat_population_free(b);
    otc_neat_population_free(d);
    otc_neat_task_free(task);
}

TEST(neat_checkpoint_resume_equals_uninterrupted) {
    otc_neat_config c = xor_config();
    c.pop_size = 60;
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("xor", &c, &task) == OTC_OK);
    const char *ck = OTC_BINARY_DIR "/neat_resume_ck.json";
    otc_neat_population *whole = run_generations(&c, task, 4, 10, 2);
    otc_neat_population *half = run_generations(&c, task, 4, 5, 1);
    REQUIRE(whole && half);
    REQUIRE(otc_neat_checkpoint_save(half, ck) == OTC_OK);
    otc_neat_population_free(half);
    otc_neat_population *resumed = NULL;
    REQUIRE(otc_neat_checkpoint_load(ck, &c, "xor", &resumed) == OTC_OK);
    CHECK(otc_neat_generation(resumed) == 5);
    otc_neat_step_options o = {.threads = 2};
    for (int g = 0; g < 5; g++) REQUIRE(otc_neat_step(resumed, task, &o, NULL) == OTC_OK);
    char *tw = state_text(whole, OTC_BINARY_DIR "/neat_resume_w.json");
    char *tr = state_text(resumed, OTC_BINARY_DIR "/neat_resume_r.json");
    REQUIRE(tw && tr);
    CHECK(strcmp(tw, tr) == 0);
    CHECK(otc_neat_generation(resumed) == 10 && otc_neat_stats_count(resumed) == 10);
    /* A checkpoint for another population size is refused, naming the mismatch. */
    otc_neat_config other = c;
    other.pop_size = 61;
    otc_neat_population *bad = NULL;
    CHECK(otc_neat_checkpoint_load(ck, &other, "xor", &bad) == OTC_ERR_CONFIG);
    /* A truncated checkpoint is an error, not a crash. */
    char *text = read_text(ck);
    REQUIRE(text);
    FILE *f = fopen(ck, "wb");
    fwrite(text, 1, strlen(text) / 2, f);
    fclose(f);
    CHECK(otc_neat_checkpoint_load(ck, &c, "xor", &bad) == OTC_ERR_FORMAT);
    remove(ck);
    free(text);
    free(tw);
    free(tr);
    otc_neat_population_free(whole);
    otc_neat_population_free(resumed);
    otc_neat_task_free(task);
}

TEST(neat_champion_graph_carries_genome) {
    otc_neat_config c = xor_config();
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("xor", &c, &task) == OTC_OK);
    otc_neat_population *p = run_generations(&c, task, 3, 3, 2);
    REQUIRE(p);
    otc_graph *g = NULL;
    REQUIRE(otc_neat_champion_graph(p, task, &g) == OTC_OK);
    const char *path = OTC_BINARY_DIR "/neat_champion.otm";
    REQUIRE(otc_model_save(g, path) == OTC_OK);
    otc_graph *back = NULL;
    REQUIRE(otc_model_load(path, &back) == OTC_OK);
    remove(path);
    const char *gj = otc_graph_meta_get(back, "genome"), *facts = otc_graph_meta_get(back, "neat");
    REQUIRE(gj && facts);
    otc_neat_genome *genome = NULL;
    REQUIRE(otc_neat_genome_from_json(gj, &genome) == OTC_OK);
    const otc_neat_genome *champ = otc_neat_champion(p);
    CHECK(genome->n_conns == champ->n_conns);
    /* the model writer re-prints metadata JSON with cJSON's 15-digit numbers */
    CHECK_NEAR(genome->fitness, champ->fitness, 1e-12 * fabs(champ->fitness));
    cJSON *fj = cJSON_Parse(facts);
    REQUIRE(fj);
    CHECK(cJSON_GetObjectItem(fj, "hidden_nodes")->valueint == otc_neat_genome_hidden_count(champ));
    CHECK(cJSON_GetObjectItem(fj, "enabled_connections")->valueint ==
          otc_neat_genome_enabled_count(champ));
    CHECK(!strcmp(cJSON_GetObjectItem(fj, "task")->valuestring, "xor"));
    cJSON_Delete(fj);
    /* the saved graph computes the champion's fitness */
    otc_executor *ex = otc_interpreter_new(back, &(otc_exec_options){.inference = true});
    REQUIRE(ex);
    const float x[8] = {0, 0, 0, 1, 1, 0, 1, 1}, want[4] = {0, 1, 1, 0};
    const float *y;
    REQUIRE(otc_exec_set_input(ex, otc_graph_input(back, 0), x, 4) == OTC_OK);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    REQUIRE(otc_exec_value(ex, otc_graph_output(back, 0), &y, NULL) == OTC_OK);
    double err = 0;
    for (int i = 0; i < 4; i++) err += fabs(y[i] - want[i]);
    CHECK_NEAR((4 - err) * (4 - err), champ->fitness, 1e-4);
    otc_exec_free(ex);
    otc_neat_genome_free(genome);
    otc_graph_free(g);
    otc_graph_free(back);
    otc_neat_population_free(p);
    otc_neat_task_free(task);
}

TEST(neat_task_checks_config_shape) {
    otc_neat_config c = xor_config();
    otc_neat_task *t = NULL;
    c.num_inputs = 3;
    CHECK(otc_neat_task_create("xor", &c, &t) == OTC_ERR_CONFIG);
    CHECK(strstr(otc_last_error(), "num_inputs") != NULL);
    CHECK(otc_neat_task_create("dpv", &c, &t) == OTC_ERR_CONFIG);
    CHECK(otc_neat_task_create("tic-tac-toe", &c, &t) == OTC_ERR_ARG);
    CHECK(otc_neat_task_create("csv:/nonexistent/file.csv", &c, &t) != OTC_OK);
}

/* A small two-class circle data set: label 1 inside radius 0.6. */
static void write_circle_csv(const char *path, int rows) {
    FILE *f = fopen(path, "w");
    otc_rng rng;
    otc_rng_seed(&rng, 42);
    fprintf(f, "x,y,label\n");
    for (int r = 0; r < rows; r++) {
        float x = 2 * otc_rng_uniform(&rng) - 1, y = 2 * otc_rng_uniform(&rng) - 1;
        fprintf(f, "%.5f,%.5f,%d\n", x, y, x * x + y * y < 0.36f);
    }
    fclose(f);
}

TEST(neat_hybrid_lamarckian_vs_baldwinian) {
    const char *csv = OTC_BINARY_DIR "/neat_circle_test.csv";
    write_circle_csv(csv, 200);
    otc_neat_config c = xor_config();
    c.bias_node = false;
    c.bias.init_mean = 0;
    c.bias.init_stdev = 1;
    /* weights well inside their range (xor.ini starts some at its bounds), so the trained
     * ones written back are not clamped and the re-evaluation below reproduces the fitness */
    c.weight.init_uniform = false;
    c.weight.init_stdev = 1;
    c.train_steps = 60;
    c.batch_size = 32;
    c.learning_rate = 0.05;
    otc_neat_task *task = NULL;
    otc_status s = otc_neat_task_create("csv:" OTC_BINARY_DIR "/neat_circle_test.csv", &c, &task);
    REQUIRE(s == OTC_OK);
    otc_neat_innovations *t = otc_neat_innovations_new(10, 0);
    otc_rng rng;
    otc_rng_seed(&rng, 1);
    otc_neat_genome *g = otc_neat_genome_new();
    c.num_hidden = 3;
    c.initial_connection = OTC_NEAT_CONNECT_FULL_DIRECT;
    REQUIRE(otc_neat_genome_init(g, &c, t, &rng) == OTC_OK);
    otc_neat_genome *lam = otc_neat_genome_copy(g), *bal = otc_neat_genome_copy(g),
                    *pure = otc_neat_genome_copy(g);
    otc_neat_eval el, eb, ep;
    REQUIRE(task->evaluate(task, &c, lam, 77, &el) == OTC_OK);
    c.lamarckian = false;
    REQUIRE(task->evaluate(task, &c, bal, 77, &eb) == OTC_OK);
    c.train_steps = 0;
    REQUIRE(task->evaluate(task, &c, pure, 77, &ep) == OTC_OK);
    /* same training, same fitness; only Lamarckian changes the genome */
    CHECK(el.fitness == eb.fitness);
    CHECK(el.fitness > ep.fitness); /* 60 Adam steps reduce the training MSE */
    bool bal_same = true, lam_same = true;
    for (int i = 0; i < g->n_conns; i++) {
        bal_same &= bal->conns[i].weight == g->conns[i].weight;
        lam_same &= lam->conns[i].weight == g->conns[i].weight;
    }
    CHECK(bal_same);
    CHECK(!lam_same);
    /* evaluating the Lamarckian genome untrained reproduces its trained fitness */
    otc_neat_eval again;
    REQUIRE(task->evaluate(task, &c, lam, 5, &again) == OTC_OK);
    CHECK_NEAR(again.fitness, el.fitness, 1e-6);
    remove(csv);
    otc_neat_genome_free(g);
    otc_neat_genome_free(lam);
    otc_neat_genome_free(bal);
    otc_neat_genome_free(pure);
    otc_neat_innovations_free(t);
    otc_neat_task_free(task);
}

/* A csv task's saved champion standardises its own input, as the task did for it: run on the
 * raw validation rows (features far from zero mean and unit spread) it gives what its network
 * gives on rows standardised here by hand with the training rows' mean and population std, and
 * scores the validation accuracy the task reports. */
TEST(neat_csv_champion_standardises_raw_rows) {
    const char *csv = OTC_BINARY_DIR "/neat_circle_shifted.csv";
    FILE *f = fopen(csv, "w");
    REQUIRE(f);
    otc_rng rng;
    otc_rng_seed(&rng, 7);
    fprintf(f, "x,y,label\n");
    for (int r = 0; r < 120; r++) {
        float x = 2 * otc_rng_uniform(&rng) - 1, y = 2 * otc_rng_uniform(&rng) - 1;
        fprintf(f, "%.5f,%.5f,%d\n", 3 * x + 5, 0.5f * y - 2, x * x + y * y < 0.5f);
    }
    fclose(f);
    otc_neat_config c;
    REQUIRE(otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/circle.ini", &c) == OTC_OK);
    c.pop_size = 40;
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("csv:" OTC_BINARY_DIR "/neat_circle_shifted.csv", &c, &task) ==
            OTC_OK);
    otc_neat_population *p = run_generations(&c, task, 1, 3, 1);
    REQUIRE(p);
    otc_graph *saved = NULL, *g = NULL;
    REQUIRE(otc_neat_champion_graph(p, task, &saved) == OTC_OK);
    const char *path = OTC_BINARY_DIR "/neat_circle_shifted.otm";
    REQUIRE(otc_model_save(saved, path) == OTC_OK);
    REQUIRE(otc_model_load(path, &g) == OTC_OK);
    remove(path);
    /* The rows as the task splits them (its fixed split seed, task_csv.c). */
    otc_csv_options o = {.header = true, .last_target = true};
    otc_dataset *d = NULL, *train = NULL, *val = NULL;
    REQUIRE(otc_csv_load(csv, &o, &d) == OTC_OK);
    REQUIRE(otc_dataset_split(d, (float)c.validation_fraction, 12345, &train, &val) == OTC_OK);
    float *by_hand = malloc(sizeof(float) * 2 * (size_t)val->rows);
    REQUIRE(by_hand);
    for (int j = 0; j < 2; j++) {
        double sum = 0, sq = 0;
        for (int r = 0; r < train->rows; r++) sum += train->x[2 * r + j];
        double mean = sum / train->rows;
        for (int r = 0; r < train->rows; r++)
            sq += (train->x[2 * r + j] - mean) * (train->x[2 * r + j] - mean);
        double sd = sqrt(sq / train->rows);
        for (int r = 0; r < val->rows; r++)
            by_hand[2 * r + j] = (float)((val->x[2 * r + j] - mean) / sd);
    }
    const otc_neat_genome *champ = otc_neat_champion(p);
    otc_neat_phenotype *ph = NULL;
    REQUIRE(otc_neat_phenotype_build(champ, &c, &ph) == OTC_OK);
    otc_exec_options io = {.inference = true};
    otc_executor *raw = otc_interpreter_new(g, &io), *net = otc_interpreter_new(ph->graph, &io);
    REQUIRE(raw && net);
    const float *y_raw, *y_net;
    REQUIRE(otc_exec_set_input(raw, otc_graph_input(g, 0), val->x, val->rows) == OTC_OK);
    REQUIRE(otc_exec_forward(raw) == OTC_OK);
    REQUIRE(otc_exec_value(raw, otc_graph_output(g, 0), &y_raw, NULL) == OTC_OK);
    REQUIRE(otc_exec_set_input(net, ph->input, by_hand, val->rows) == OTC_OK);
    REQUIRE(otc_exec_forward(net) == OTC_OK);
    REQUIRE(otc_exec_value(net, otc_graph_output(ph->graph, 0), &y_net, NULL) == OTC_OK);
    int correct = 0;
    double worst = 0;
    for (int r = 0; r < val->rows; r++) {
        worst = fmax(worst, fabs(y_raw[r] - y_net[r]));
        correct += (y_raw[r] >= 0.5f) == (val->y[r] == 1.0f);
    }
    CHECK(worst < 1e-5);
    bool solved = false;
    double val_accuracy = -1;
    REQUIRE(task->confirm(task, &c, champ, &solved, &val_accuracy) == OTC_OK);
    CHECK_NEAR((double)correct / val->rows, val_accuracy, 1e-9);
    otc_exec_free(raw);
    otc_exec_free(net);
    otc_neat_phenotype_free(ph);
    free(by_hand);
    otc_dataset_free(d);
    otc_dataset_free(train);
    otc_dataset_free(val);
    otc_graph_free(saved);
    otc_graph_free(g);
    otc_neat_population_free(p);
    otc_neat_task_free(task);
    remove(csv);
}

/* ---- confirm rotation (dpnv's champion test, after Stanley's pole2_epoch) ------------------ */

static int rotation_tested_species;

static otc_status constant_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                    otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    (void)task, (void)c, (void)g, (void)seed;
    out->fitness = 1.0; /* no species ever improves after its first generation */
    out->solved = false;
    return OTC_OK;
}

static otc_status recording_confirm(const otc_neat_task *task, const otc_neat_config *c,
                                    const otc_neat_genome *g, bool *solved, double *score) {
    (void)task, (void)c;
    rotation_tested_species = g->species;
    *solved = false;
    *score = 0;
    return OTC_OK;
}

TEST(neat_confirm_rotates_through_untested_species) {
    /* With every fitness equal, a species is untested only until its champion is tested, so
     * each generation must test the first species (in species order, as ties go to the
     * earlier one) not tested before, and the first species once all have been. */
    otc_neat_config c = xor_config();
    otc_neat_task task = {.name = "rotation",
                          .n_inputs = 2,
                          .n_outputs = 1,
                          .evaluate = constant_evaluate,
                          .confirm = recording_confirm,
                          .confirm_rotates_species = true};
    otc_neat_population *p = NULL;
    REQUIRE(otc_neat_population_new(&c, 7, &p) == OTC_OK);
    int tested[64], n_tested = 0, rotations = 0;
    otc_neat_step_options o = {.threads = 1};
    for (int gen = 0; gen < 10; gen++) {
        int expected = -1, ns = otc_neat_population_species_count(p);
        for (int k = 0; k < ns && expected < 0; k++) {
            int id = otc_neat_population_species(p, k)->id;
            bool seen = false;
            for (int t = 0; t < n_tested; t++) seen |= tested[t] == id;
            if (!seen) expected = id;
        }
        int first = otc_neat_population_species(p, 0)->id;
        if (expected < 0) expected = first;
        rotation_tested_species = -1;
        REQUIRE(otc_neat_step(p, &task, &o, NULL) == OTC_OK);
        CHECK(rotation_tested_species == expected);
        if (expected != first) rotations++;
        bool seen = false;
        for (int t = 0; t < n_tested; t++) seen |= tested[t] == expected;
        if (!seen && n_tested < 64) tested[n_tested++] = expected;
    }
    CHECK(rotations > 0); /* the run did leave the first species at least once */
    otc_neat_population_free(p);
}

/* One species (threshold 1,000) that never improves is stagnant after max_stagnation
 * generations: without a penalty it is removed and the run is extinct; with
 * stagnation_penalty it stays (penalised, but nothing is better) and the run goes on. */
TEST(neat_stagnation_penalty_keeps_species) {
    for (int penalised = 0; penalised < 2; penalised++) {
        otc_neat_config c = xor_config();
        c.pop_size = 20;
        c.compatibility_threshold = 1000;
        c.target_species = 0;
        c.species_elitism = 0;
        c.max_stagnation = 3;
        c.stagnation_penalty = penalised ? 0.01 : 0;
        otc_neat_task task = {
            .name = "constant", .n_inputs = 2, .n_outputs = 1, .evaluate = constant_evaluate};
        otc_neat_population *p = NULL;
        REQUIRE(otc_neat_population_new(&c, 5, &p) == OTC_OK);
        otc_neat_step_options o = {.threads = 1};
        for (int gen = 0; gen < 8 && !otc_neat_extinct(p); gen++)
            REQUIRE(otc_neat_step(p, &task, &o, NULL) == OTC_OK);
        if (penalised) {
            CHECK(!otc_neat_extinct(p));
            CHECK(otc_neat_generation(p) == 8);
            CHECK(otc_neat_population_species_count(p) == 1);
            CHECK(otc_neat_population_size(p) == 20);
        } else {
            CHECK(otc_neat_extinct(p));
            /* generations 0-3 ran; the reproduction after generation 3 found it stagnant */
            CHECK(otc_neat_generation(p) == 4);
        }
        otc_neat_population_free(p);
    }
}

/* ---- evaluation overlapping reproduction ---------------------------------------------------
 * On more than one thread the helpers evaluate the next generation's children while the
 * calling thread makes them; the run must be the one a single thread makes (Lamarckian hybrid
 * training included, thread counts changing between generations), and a failed evaluation
 * must stop the run at the generation it belongs to. */

static const char *hybrid_ini = OTC_SOURCE_DIR "/examples/neat/circle_hybrid.ini";
static const char *hybrid_task = "csv:" OTC_SOURCE_DIR "/examples/data/circle.csv";

/* The population's state after one step per entry of `threads` (that step's thread count). */
static char *run_state(const otc_neat_config *c, otc_neat_task *task, const int *threads, int gens,
                       const char *path) {
    otc_neat_population *p = NULL;
    if (otc_neat_population_new(c, 5, &p) != OTC_OK) return NULL;
    for (int g = 0; g < gens; g++) {
        otc_neat_step_options o = {.threads = threads[g]};
        if (otc_neat_step(p, task, &o, NULL) != OTC_OK) {
            fprintf(stderr, "%s\n", otc_last_error());
            break;
        }
    }
    char *text = state_text(p, path);
    otc_neat_population_free(p);
    return text;
}

TEST(neat_overlap_lamarckian_hybrid_same_on_any_thread_count) {
    otc_neat_config c;
    REQUIRE(otc_neat_config_load(hybrid_ini, &c) == OTC_OK);
    /* trained weights go back into the genome: the case where evaluation writes what the
     * next speciation and reproduction read */
    REQUIRE(c.lamarckian && c.train_steps > 0);
    c.pop_size = 24;
    c.train_steps = 10;
    c.no_fitness_termination = true;
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create(hybrid_task, &c, &task) == OTC_OK);
    const int one[4] = {1, 1, 1, 1}, two[4] = {2, 2, 2, 2}, mixed[4] = {3, 1, 2, 1};
    char *a = run_state(&c, task, one, 4, OTC_BINARY_DIR "/neat_overlap_a.json");
    char *b = run_state(&c, task, two, 4, OTC_BINARY_DIR "/neat_overlap_b.json");
    char *m = run_state(&c, task, mixed, 4, OTC_BINARY_DIR "/neat_overlap_m.json");
    REQUIRE(a && b && m);
    CHECK(strcmp(a, b) == 0);
    CHECK(strcmp(a, m) == 0);
    /* and training did change the genomes: Baldwinian inheritance makes another run */
    c.lamarckian = false;
    char *d = run_state(&c, task, two, 4, OTC_BINARY_DIR "/neat_overlap_d.json");
    REQUIRE(d);
    CHECK(strcmp(a, d) != 0);
    free(a);
    free(b);
    free(m);
    free(d);
    otc_neat_task_free(task);
}

/* ---- a failing evaluation -------------------------------------------------------------------- */

static otc_status (*xor_evaluate)(const otc_neat_task *, const otc_neat_config *, otc_neat_genome *,
                                  uint64_t, otc_neat_eval *);

/* XOR's evaluation, failing for a genome with a hidden node (none in the first generation,
 * whose genomes have no hidden nodes; some once add-node mutations have run). */
static otc_status failing_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                   otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    if (otc_neat_genome_hidden_count(g) > 0)
        return otc_fail(OTC_ERR_ARG, "hidden nodes refused by this test");
    return xor_evaluate(task, c, g, seed, out);
}

/* Steps until one fails; the generation it failed in and its message. */
static int failing_generation(const otc_neat_config *c, otc_neat_task *task, int threads, char *why,
                              size_t size) {
    otc_neat_population *p = NULL;
    if (otc_neat_population_new(c, 2, &p) != OTC_OK) return -1;
    otc_neat_step_options o = {.threads = threads};
    int failed = -1;
    for (int g = 0; g < 40 && failed < 0; g++)
        if (otc_neat_step(p, task, &o, NULL) != OTC_OK) {
            failed = otc_neat_generation(p);
            snprintf(why, size, "%s", otc_last_error());
            /* the failed generation recorded nothing */
            if (otc_neat_stats_count(p) != failed) failed = -2;
        }
    otc_neat_population_free(p);
    return failed;
}

TEST(neat_overlap_failure_stops_at_its_generation) {
    otc_neat_config c;
    REQUIRE(otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/xor.ini", &c) == OTC_OK);
    REQUIRE(c.num_hidden == 0);
    c.pop_size = 40;
    c.node_add_prob = 0.5; /* hidden nodes within a few generations */
    c.no_fitness_termination = true;
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("xor", &c, &task) == OTC_OK);
    xor_evaluate = task->evaluate;
    task->evaluate = failing_evaluate;
    char why1[512], why2[512], why3[512];
    int g1 = failing_generation(&c, task, 1, why1, sizeof why1);
    int g2 = failing_generation(&c, task, 2, why2, sizeof why2);
    int g3 = failing_generation(&c, task, 3, why3, sizeof why3);
    CHECK(g1 >= 1); /* the first generation has no hidden node */
    CHECK(g2 == g1);
    CHECK(g3 == g1);
    char gen[64];
    snprintf(gen, sizeof gen, "of generation %d: hidden nodes refused by this test", g1);
    CHECK(strstr(why1, gen) != NULL);
    CHECK(strstr(why2, gen) != NULL);
    CHECK(strstr(why3, gen) != NULL);
    otc_neat_task_free(task);
}

/* Every evaluation a run makes, counted (the task's evaluate, wrapped). */
static atomic_int evaluations_made;
static otc_status (*counted_evaluate_real)(const otc_neat_task *, const otc_neat_config *,
                                           otc_neat_genome *, uint64_t, otc_neat_eval *);
static otc_status counted_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                   otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    atomic_fetch_add(&evaluations_made, 1);
    return counted_evaluate_real(task, c, g, seed, out);
}

/* A run stopped by its generation limit evaluates exactly generations x population genomes on
 * any thread count: the last step's children are not evaluated ahead for nothing. */
TEST(neat_run_evaluates_nothing_after_its_last_generation) {
    otc_neat_config c = xor_config();
    c.pop_size = 50;
    c.no_fitness_termination = true;
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("xor", &c, &task) == OTC_OK);
    counted_evaluate_real = task->evaluate;
    task->evaluate = counted_evaluate;
    for (int threads = 1; threads <= 3; threads++) {
        otc_neat_population *p = NULL;
        REQUIRE(otc_neat_population_new(&c, 11, &p) == OTC_OK);
        atomic_store(&evaluations_made, 0);
        otc_neat_run_options o = {.generations = 4, .threads = threads};
        bool solved = false;
        REQUIRE(otc_neat_run(p, task, &o, &solved) == OTC_OK);
        CHECK(otc_neat_generation(p) == 4);
        CHECK(otc_neat_evaluations(p) == 4 * 50);
        CHECK(atomic_load(&evaluations_made) == 4 * 50);
        otc_neat_population_free(p);
    }
    otc_neat_task_free(task);
}
