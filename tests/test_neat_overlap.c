/* NEAT evaluation overlapping reproduction: on more than one thread the helpers evaluate the
 * next generation's children while the calling thread makes them; the run must be the one a
 * single thread makes (Lamarckian hybrid training included, thread counts changing between
 * generations), and a failed evaluation must stop the run at the generation it belongs to. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "otc/neat.h"

static const char *hybrid_ini = OTC_SOURCE_DIR "/examples/neat/circle_hybrid.ini";
static const char *hybrid_task = "csv:" OTC_SOURCE_DIR "/examples/data/circle.csv";

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

/* The population after one step per entry of `threads` (that step's thread count), as
 * canonical text without wall-clock times. */
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
