/* NEAT's csv task on sequences ([Task] sequence): a fixed recurrent genome's fitness by hand,
 * the saved champion standardising its own input, hybrid training through time lowering its loss
 * with the trained weights reaching the genome (and only a copy when Baldwinian; never when it
 * diverged), only the last step counting when asked, the shipped delayed-XOR example solved by the
 * hybrid loop, the same run on any thread count, and bad configs and files refused by name. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "otc/executor.h"
#include "otc/neat.h"

static const char *ex_ini = OTC_SOURCE_DIR "/examples/neat/delayed_xor_hybrid.ini";
static const char *ex_task = "csv:" OTC_SOURCE_DIR "/examples/data/delayed_xor.csv";

static otc_neat_config example_config(void) {
    otc_neat_config c;
    if (otc_neat_config_load(ex_ini, &c) != OTC_OK) fprintf(stderr, "%s\n", otc_last_error());
    return c;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Eight sequences x = 1,0,1,0 with target 0.5 then x[t-1]: after standardisation (mean 0.5,
 * population std 0.5) x' = +1,-1,+1,-1, and out_t = 0.5 + 0.5 x'[t-1] (0.5 from the zero
 * state at t = 0) fits every step exactly. */
#define ALT_CSV OTC_BINARY_DIR "/neat_seq_alternating.csv"

static void write_alternating(void) {
    char text[1024] = "id,x,y\n";
    for (int s = 0; s < 8; s++) {
        char rows[128];
        snprintf(rows, sizeof rows, "q%d,1,0.5\nq%d,0,1\nq%d,1,0\nq%d,0,1\n", s, s, s, s);
        strcat(text, rows);
    }
    write_text(ALT_CSV, text);
}

/* input 0 -> hidden 2 (weight 1) -> output 1 (weight 0.1), identity activations, biases 0:
 * recurrent, so the output reads the hidden node's previous step. */
static otc_neat_genome *chain_genome(void) {
    otc_neat_genome *g = otc_neat_genome_new();
    const otc_neat_node nodes[3] = {{0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                                    {1, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                                    {2, OTC_NEAT_HIDDEN, OTC_ACT_IDENTITY, 0, 1, 0, 1}};
    const otc_neat_conn conns[2] = {{0, 0, 2, 1.0f, true}, {1, 2, 1, 0.1f, true}};
    for (int i = 0; i < 3; i++) otc_neat_genome_add_node(g, &nodes[i]);
    for (int i = 0; i < 2; i++) otc_neat_genome_add_conn(g, &conns[i]);
    return g;
}

static otc_neat_config chain_config(void) {
    otc_neat_config c = example_config();
    c.num_inputs = 1;
    c.num_outputs = 1;
    snprintf(c.sequence, sizeof c.sequence, "id");
    c.regression = true;
    c.validation_fraction = 0.25;
    c.train_steps = 0;
    c.batch_size = 6;
    c.learning_rate = 0.05;
    c.lamarckian = true;
    return c;
}

TEST(neat_seq_fixed_genome_fitness_by_hand) {
    write_alternating();
    otc_neat_config c = chain_config();
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("csv:" ALT_CSV, &c, &task) == OTC_OK);
    otc_neat_genome *g = chain_genome();
    otc_neat_eval e;
    REQUIRE(task->evaluate(task, &c, g, 1, &e) == OTC_OK);
    /* out = 0, 0.1, -0.1, 0.1 against 0.5, 1, 0, 1: squared errors .25 .81 .01 .81 = 1.88 per
     * sequence of 4 steps, MSE 0.47 */
    CHECK_NEAR(e.fitness, 1.0 / 1.47, 1e-6);
    CHECK(!e.solved);
    otc_neat_genome_free(g);
    otc_neat_task_free(task);
    remove(ALT_CSV);
}

TEST(neat_seq_last_step_only_by_hand) {
    write_alternating();
    otc_neat_config c = chain_config();
    c.sequence_last = true;
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("csv:" ALT_CSV, &c, &task) == OTC_OK);
    otc_neat_genome *g = chain_genome();
    otc_neat_eval e, t;
    REQUIRE(task->evaluate(task, &c, g, 1, &e) == OTC_OK);
    /* only step 4 counts: out 0.1 against 1, MSE 0.81 */
    CHECK_NEAR(e.fitness, 1.0 / 1.81, 1e-6);
    /* trained on the last step's loss alone, the genome fits that step */
    c.train_steps = 200;
    REQUIRE(task->evaluate(task, &c, g, 1, &t) == OTC_OK);
    CHECK(t.fitness > 1.0 / 1.01);
    otc_neat_genome_free(g);
    otc_neat_task_free(task);
    remove(ALT_CSV);
}

/* The saved champion of a sequence task standardises its own input (frozen "input_mean" 0.5
 * and "input_std" 0.5, by hand above) ahead of its recurrent network: stepped through the raw
 * x = 1,0,1,0 it gives what its phenotype gives stepped through x' = +1,-1,+1,-1. */
TEST(neat_seq_champion_standardises_raw_steps) {
    write_alternating();
    otc_neat_config c = chain_config();
    c.pop_size = 20;
    otc_neat_task *task = NULL;
    otc_neat_population *p = NULL;
    otc_neat_step_options so = {.threads = 1};
    REQUIRE(otc_neat_task_create("csv:" ALT_CSV, &c, &task) == OTC_OK &&
            otc_neat_population_new(&c, 2, &p) == OTC_OK &&
            otc_neat_step(p, task, &so, NULL) == OTC_OK);
    otc_graph *g = NULL;
    REQUIRE(otc_neat_champion_graph(p, task, &g) == OTC_OK);
    otc_id mean = otc_graph_find(g, "input_mean"), sd = otc_graph_find(g, "input_std");
    REQUIRE(mean >= 0 && sd >= 0);
    CHECK(otc_graph_param(g, mean)->data[0] == 0.5f && otc_graph_param(g, sd)->data[0] == 0.5f);
    CHECK(!otc_graph_node(g, mean)->trainable && !otc_graph_node(g, sd)->trainable);
    otc_neat_phenotype *ph = NULL;
    REQUIRE(otc_neat_phenotype_build(otc_neat_champion(p), &c, &ph) == OTC_OK && ph->recurrent);
    otc_exec_options io = {.inference = true};
    otc_executor *raw = otc_interpreter_new(g, &io), *net = otc_interpreter_new(ph->graph, &io);
    REQUIRE(raw && net);
    const float x[4] = {1, 0, 1, 0}, x_std[4] = {1, -1, 1, -1};
    for (int t = 0; t < 4; t++) {
        const float *a, *b;
        REQUIRE(otc_exec_set_input(raw, otc_graph_input(g, 0), &x[t], 1) == OTC_OK);
        REQUIRE(otc_exec_forward(raw) == OTC_OK);
        REQUIRE(otc_exec_value(raw, otc_graph_output(g, 0), &a, NULL) == OTC_OK);
        REQUIRE(otc_exec_set_input(net, ph->input, &x_std[t], 1) == OTC_OK);
        REQUIRE(otc_exec_forward(net) == OTC_OK);
        REQUIRE(otc_exec_value(net, otc_graph_output(ph->graph, 0), &b, NULL) == OTC_OK);
        CHECK_NEAR(a[0], b[0], 1e-6);
    }
    otc_exec_free(raw);
    otc_exec_free(net);
    otc_neat_phenotype_free(ph);
    otc_graph_free(g);
    otc_neat_population_free(p);
    otc_neat_task_free(task);
    remove(ALT_CSV);
}

TEST(neat_seq_hybrid_bptt_trains_into_genome) {
    write_alternating();
    otc_neat_config c = chain_config();
    c.train_steps = 200;
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("csv:" ALT_CSV, &c, &task) == OTC_OK);
    otc_neat_genome *g = chain_genome(), *bal = chain_genome();
    otc_neat_eval lam, bl, again;
    REQUIRE(task->evaluate(task, &c, g, 7, &lam) == OTC_OK);
    CHECK(lam.fitness > 1.0 / 1.01); /* MSE below 0.01, from 0.47 */
    CHECK(lam.solved);               /* validation MSE <= target_mse (0.01) */
    /* Lamarckian: the fit the hand solution predicts is in the genome: w1 * w2 = 0.5 and the
     * output's bias 0.5 (the hidden bias times w2 then 0) */
    const otc_neat_conn *w1 = otc_neat_genome_find_conn(g, 0),
                        *w2 = otc_neat_genome_find_conn(g, 1);
    const otc_neat_node *out = otc_neat_genome_find_node(g, 1),
                        *hid = otc_neat_genome_find_node(g, 2);
    REQUIRE(w1 && w2 && out && hid);
    CHECK_NEAR(w1->weight * w2->weight, 0.5, 0.05);
    CHECK_NEAR(out->bias, 0.5, 0.05);
    CHECK_NEAR(hid->bias * w2->weight, 0.0, 0.05);
    /* the gradient crossed the Delay: w1 acts on the loss only one step later */
    CHECK(w1->weight != 1.0f);
    /* the genome alone reproduces the trained fitness */
    otc_neat_config pure = c;
    pure.train_steps = 0;
    REQUIRE(task->evaluate(task, &pure, g, 8, &again) == OTC_OK);
    CHECK(again.fitness == lam.fitness);
    /* Baldwinian: the same training and fitness, the genome untouched */
    c.lamarckian = false;
    REQUIRE(task->evaluate(task, &c, bal, 7, &bl) == OTC_OK);
    CHECK(bl.fitness == lam.fitness);
    CHECK(otc_neat_genome_find_conn(bal, 1)->weight == 0.1f);
    CHECK(otc_neat_genome_find_conn(bal, 0)->weight == 1.0f);
    otc_neat_genome_free(g);
    otc_neat_genome_free(bal);
    otc_neat_task_free(task);
    remove(ALT_CSV);
}

TEST(neat_seq_hybrid_divergence_leaves_genome) {
    write_alternating();
    otc_neat_config c = chain_config();
    c.train_steps = 5;
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create("csv:" ALT_CSV, &c, &task) == OTC_OK);
    otc_neat_genome *g = chain_genome();
    otc_neat_genome_find_conn(g, 0)->weight = 1e30f; /* out 1e29: its square overflows a float */
    otc_neat_eval e;
    REQUIRE(task->evaluate(task, &c, g, 1, &e) == OTC_OK);
    CHECK(e.fitness == 0.0);
    CHECK(!e.solved);
    CHECK(otc_neat_genome_find_conn(g, 0)->weight == 1e30f);
    CHECK(otc_neat_genome_find_conn(g, 1)->weight == 0.1f);
    otc_neat_genome_free(g);
    otc_neat_task_free(task);
    remove(ALT_CSV);
}

TEST(neat_seq_hybrid_solves_delayed_xor) {
    otc_neat_config c = example_config();
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create(ex_task, &c, &task) == OTC_OK);
    otc_neat_population *p = NULL;
    REQUIRE(otc_neat_population_new(&c, 1, &p) == OTC_OK); /* solves in 17 generations */
    bool solved = false;
    otc_neat_run_options o = {.generations = 40, .threads = 2};
    REQUIRE(otc_neat_run(p, task, &o, &solved) == OTC_OK);
    CHECK(solved);
    CHECK(otc_neat_generation(p) <= 40);
    otc_neat_population_free(p);
    otc_neat_task_free(task);
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

/* The population after `gens` generations as canonical text, without wall-clock times. */
static char *run_state(const otc_neat_config *c, otc_neat_task *task, int gens, int threads,
                       const char *path) {
    otc_neat_population *p = NULL;
    if (otc_neat_population_new(c, 3, &p) != OTC_OK) return NULL;
    otc_neat_step_options o = {.threads = threads};
    for (int g = 0; g < gens; g++)
        if (otc_neat_step(p, task, &o, NULL) != OTC_OK) break;
    otc_status s = otc_neat_checkpoint_save(p, path);
    otc_neat_population_free(p);
    char *text = s == OTC_OK ? read_text(path) : NULL;
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

TEST(neat_seq_hybrid_independent_of_thread_count) {
    otc_neat_config c = example_config();
    c.pop_size = 40;
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_task_create(ex_task, &c, &task) == OTC_OK);
    char *a = run_state(&c, task, 3, 1, OTC_BINARY_DIR "/neat_seq_threads_a.json");
    char *b = run_state(&c, task, 3, 2, OTC_BINARY_DIR "/neat_seq_threads_b.json");
    REQUIRE(a && b);
    CHECK(strcmp(a, b) == 0);
    free(a);
    free(b);
    otc_neat_task_free(task);
}

TEST(neat_seq_bad_input_named) {
    otc_neat_config c = example_config();
    otc_neat_task *t = NULL;
    /* a bad [Task] sequence_steps value, named with its file, line and key */
    char *ini = read_text(ex_ini);
    REQUIRE(ini);
    char *text = malloc(strlen(ini) + 64);
    REQUIRE(text);
    sprintf(text, "%s\n[Task]\nsequence_steps = first\n", ini);
    otc_neat_config bad;
    CHECK(otc_neat_config_parse(text, "dx.ini", &bad) == OTC_ERR_CONFIG);
    CHECK(strstr(otc_last_error(), "[Task] sequence_steps: bad value 'first'") != NULL);
    free(text);
    free(ini);
    /* a sequence task needs recurrent genomes */
    c.feed_forward = true;
    CHECK(otc_neat_task_create(ex_task, &c, &t) == OTC_ERR_CONFIG);
    CHECK(strstr(otc_last_error(), "[DefaultGenome] feed_forward") != NULL);
    CHECK(strstr(otc_last_error(), "[Task] sequence = seq") != NULL);
    /* recurrent genomes train only through time, on sequences */
    c.feed_forward = false;
    c.sequence[0] = '\0';
    CHECK(otc_neat_task_create(ex_task, &c, &t) == OTC_ERR_CONFIG);
    CHECK(strstr(otc_last_error(), "[Hybrid] train_steps") != NULL);
    CHECK(strstr(otc_last_error(), "[Task] sequence") != NULL);
    /* a sequence column the file lacks */
    snprintf(c.sequence, sizeof c.sequence, "episode");
    CHECK(otc_neat_task_create(ex_task, &c, &t) != OTC_OK);
    CHECK(strstr(otc_last_error(), "delayed_xor.csv") != NULL);
    CHECK(strstr(otc_last_error(), "episode") != NULL);
    /* a file of one sequence cannot be split; a header alone has no sequences */
    snprintf(c.sequence, sizeof c.sequence, "seq");
    const char *one = OTC_BINARY_DIR "/neat_seq_one.csv";
    write_text(one, "seq,x,y\na,1,0\na,0,1\na,1,1\n");
    CHECK(otc_neat_task_create("csv:" OTC_BINARY_DIR "/neat_seq_one.csv", &c, &t) ==
          OTC_ERR_FORMAT);
    CHECK(strstr(otc_last_error(), "neat_seq_one.csv") != NULL);
    CHECK(strstr(otc_last_error(), "1 sequence(s)") != NULL);
    write_text(one, "seq,x,y\n");
    CHECK(otc_neat_task_create("csv:" OTC_BINARY_DIR "/neat_seq_one.csv", &c, &t) != OTC_OK);
    CHECK(strstr(otc_last_error(), "neat_seq_one.csv") != NULL);
    /* a class label that is not a class, named by line */
    write_text(one, "seq,x,y\na,1,0\nb,0,0.5\n");
    CHECK(otc_neat_task_create("csv:" OTC_BINARY_DIR "/neat_seq_one.csv", &c, &t) ==
          OTC_ERR_FORMAT);
    CHECK(strstr(otc_last_error(), "neat_seq_one.csv:3:") != NULL);
    /* ... unless only the last step counts: then the other rows' labels are not read */
    write_text(one, "seq,x,y\na,1,0.5\na,1,0\nb,0,0.5\nb,0,1\n");
    c.sequence_last = true;
    REQUIRE(otc_neat_task_create("csv:" OTC_BINARY_DIR "/neat_seq_one.csv", &c, &t) == OTC_OK);
    otc_neat_task_free(t);
    remove(one);
}
