/* NEAT inputs as hostile files: config lines of any length and line ending, the limits on a
 * run's size, and checkpoints that break an invariant (each refused with a message naming the
 * file and the field, genome or species) or come from another task or config. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "otc/neat.h"

/* Lines 1-8; the tests below insert or change lines by number. */
static const char *mini_ini = "[NEAT]\n"                  /* 1 */
                              "fitness_threshold = 3.9\n" /* 2 */
                              "pop_size = 10\n"           /* 3 */
                              "[DefaultGenome]\n"         /* 4 */
                              "num_inputs = 2\n"          /* 5 */
                              "num_outputs = 1\n"         /* 6 */
                              "[DefaultSpeciesSet]\n"     /* 7 */
                              "compatibility_threshold = 3\n" /* 8 */;

static const char *ck;

/* The checkpoint file of the running case (each its own: ctest may run them at once); NULL
 * for config cases. Checkpoint messages must start with it. */
static void expect_error(otc_status got, otc_status want, const char *n1, const char *n2) {
    CHECK_MSG(got == want, "status %d, wanted %d (%s)", got, want, otc_last_error());
    const char *m = otc_last_error();
    if (ck)
        CHECK_MSG(!strncmp(m, ck, strlen(ck)) && m[strlen(ck)] == ':', "'%s' first in '%s'", ck, m);
    CHECK_MSG(strstr(m, n1) != NULL, "'%s' not in '%s'", n1, m);
    if (n2) CHECK_MSG(strstr(m, n2) != NULL, "'%s' not in '%s'", n2, m);
}

/* mini_ini with every "\n" replaced by eol, after an optional prefix. */
static char *with_line_ends(const char *prefix, const char *eol) {
    char *out = malloc(strlen(prefix) + strlen(mini_ini) * 3 + 1), *o = out;
    o += sprintf(o, "%s", prefix);
    for (const char *s = mini_ini; *s; s++) o += *s == '\n' ? sprintf(o, "%s", eol) : (*o = *s, 1);
    *o = '\0';
    return out;
}

TEST(neat_config_long_comment_line_changes_nothing) {
    /* inih's 200-byte buffer used to split this and parse "conn_add_attempts = 0" */
    char text[2048], comment[320];
    memset(comment, 'x', sizeof comment);
    comment[0] = '#';
    snprintf(comment + 278, sizeof comment - 278, "conn_add_attempts = 0");
    snprintf(text, sizeof text, "%s%s\n", mini_ini, comment);
    CHECK(strlen(comment) == 299);
    otc_neat_config c;
    REQUIRE(otc_neat_config_parse(text, "t.ini", &c) == OTC_OK);
    CHECK(c.conn_add_attempts == 20); /* the default */
    CHECK(c.pop_size == 10);
}

TEST(neat_config_long_value_line_refused_naming_line) {
    char text[2048], line[320];
    memset(line, ' ', sizeof line);
    memcpy(line, "activation_options = sigmoid", 28);
    memcpy(line + 290, "tanh", 5); /* 294 bytes */
    snprintf(text, sizeof text, "%s[DefaultGenome]\n%s\n", mini_ini, line);
    otc_neat_config c;
    expect_error(otc_neat_config_parse(text, "t.ini", &c), OTC_ERR_CONFIG,
                 "t.ini:10: line longer than", NULL);
}

TEST(neat_config_line_endings_and_bom) {
    const char *cases[][2] = {
        {"", "\r"}, {"", "\r\n"}, {"\xEF\xBB\xBF", "\n"}, {"\xEF\xBB\xBF", "\r\n"}};
    for (int i = 0; i < 4; i++) {
        char *text = with_line_ends(cases[i][0], cases[i][1]);
        otc_neat_config c;
        CHECK_MSG(otc_neat_config_parse(text, "t.ini", &c) == OTC_OK, "case %d: %s", i,
                  otc_last_error());
        CHECK(c.pop_size == 10 && c.num_inputs == 2 && c.compatibility_threshold == 3.0);
        free(text);
    }
    /* line numbers count CR-only lines too: an unknown key on line 9 */
    char *text = with_line_ends("", "\r");
    char *more = malloc(strlen(text) + 32);
    sprintf(more, "%sbogus = 1\r", text);
    otc_neat_config c;
    expect_error(otc_neat_config_parse(more, "t.ini", &c), OTC_ERR_CONFIG, "t.ini:9:", "bogus");
    free(more);
    free(text);
}

TEST(neat_config_size_limits) {
    otc_neat_config c;
    const char *pop_big = "[NEAT]\nfitness_threshold = 3.9\npop_size = 100001\n[DefaultGenome]\n"
                          "num_inputs = 2\nnum_outputs = 1\n[DefaultSpeciesSet]\n"
                          "compatibility_threshold = 3\n";
    expect_error(otc_neat_config_parse(pop_big, "t.ini", &c), OTC_ERR_CONFIG,
                 "t.ini:3: [NEAT] pop_size", "100001");
    /* 100,000 genomes of 2 inputs + 1 output + 2 connections = 500,000 genes: allowed */
    const char *pop_max = "[NEAT]\nfitness_threshold = 3.9\npop_size = 100000\n[DefaultGenome]\n"
                          "num_inputs = 2\nnum_outputs = 1\n[DefaultSpeciesSet]\n"
                          "compatibility_threshold = 3\n";
    CHECK(otc_neat_config_parse(pop_max, "t.ini", &c) == OTC_OK);
    const char *hidden = "[NEAT]\nfitness_threshold = 3.9\npop_size = 10\n[DefaultGenome]\n"
                         "num_inputs = 2\nnum_outputs = 1\nnum_hidden = 10001\n"
                         "[DefaultSpeciesSet]\ncompatibility_threshold = 3\n";
    expect_error(otc_neat_config_parse(hidden, "t.ini", &c), OTC_ERR_CONFIG,
                 "t.ini:7:", "num_hidden");
    /* 10 genomes of 100,000 inputs + 10 outputs + 1,000,000 connections = 11,000,100 genes */
    const char *genes = "[NEAT]\nfitness_threshold = 3.9\npop_size = 10\n[DefaultGenome]\n"
                        "num_inputs = 100000\nnum_outputs = 10\n[DefaultSpeciesSet]\n"
                        "compatibility_threshold = 3\n";
    expect_error(otc_neat_config_parse(genes, "t.ini", &c), OTC_ERR_CONFIG,
                 "t.ini:3: [NEAT] pop_size", "11000100 genes");
    /* the same inputs unconnected: 10 x 100,010 genes */
    const char *sparse = "[NEAT]\nfitness_threshold = 3.9\npop_size = 10\n[DefaultGenome]\n"
                         "num_inputs = 100000\nnum_outputs = 10\ninitial_connection = "
                         "unconnected\n[DefaultSpeciesSet]\ncompatibility_threshold = 3\n";
    CHECK(otc_neat_config_parse(sparse, "t.ini", &c) == OTC_OK);
    /* zero threshold and huge gene values have no meaning */
    const char *zero = "[NEAT]\nfitness_threshold = 3.9\npop_size = 10\n[DefaultGenome]\n"
                       "num_inputs = 2\nnum_outputs = 1\n[DefaultSpeciesSet]\n"
                       "compatibility_threshold = 0\n";
    expect_error(otc_neat_config_parse(zero, "t.ini", &c), OTC_ERR_CONFIG,
                 "t.ini:8: [DefaultSpeciesSet] compatibility_threshold", "(0,");
    const char *wide = "[NEAT]\nfitness_threshold = 3.9\npop_size = 10\n[DefaultGenome]\n"
                       "num_inputs = 2\nnum_outputs = 1\nweight_max_value = 1e9\n"
                       "[DefaultSpeciesSet]\ncompatibility_threshold = 3\n";
    expect_error(otc_neat_config_parse(wide, "t.ini", &c), OTC_ERR_CONFIG,
                 "t.ini:7:", "weight_max_value");
    const char *twice = "[NEAT]\nfitness_threshold = 3.9\npop_size = 10\npop_size = 10\n";
    expect_error(otc_neat_config_parse(twice, "t.ini", &c), OTC_ERR_CONFIG,
                 "t.ini:4:", "repeated key (first given on line 3)");
}

/* ---- checkpoints -------------------------------------------------------------------------- */

static otc_neat_config xor_config(void) {
    otc_neat_config c;
    if (otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/xor.ini", &c) != OTC_OK)
        fprintf(stderr, "%s\n", otc_last_error());
    c.pop_size = 30;
    return c;
}

/* A real checkpoint after a few xor generations, as a cJSON tree (front: with a tracked
 * Pareto front). */
static cJSON *xor_checkpoint_with(const otc_neat_config *c, bool front) {
    otc_neat_task *task = NULL;
    otc_neat_population *p = NULL;
    if (otc_neat_task_create("xor", c, &task) != OTC_OK ||
        otc_neat_population_new(c, 7, &p) != OTC_OK || (front && otc_neat_track_front(p) != OTC_OK))
        return NULL;
    otc_neat_step_options o = {.threads = 1};
    for (int g = 0; g < 4; g++)
        if (otc_neat_step(p, task, &o, NULL) != OTC_OK) return NULL;
    otc_status s = otc_neat_checkpoint_save(p, ck);
    otc_neat_population_free(p);
    otc_neat_task_free(task);
    if (s != OTC_OK) return NULL;
    FILE *f = fopen(ck, "rb");
    char buf[1 << 18];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    return cJSON_Parse(buf);
}

static cJSON *xor_checkpoint(const otc_neat_config *c) {
    return xor_checkpoint_with(c, false);
}

/* Load tree j (written to ck) with config c and task; the population is freed. */
static otc_status load(const cJSON *j, const otc_neat_config *c, const char *task) {
    char *text = cJSON_PrintUnformatted(j);
    FILE *f = fopen(ck, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    free(text);
    otc_neat_population *p = NULL;
    otc_status s = otc_neat_checkpoint_load(ck, c, task, &p);
    otc_neat_population_free(p);
    return s;
}

static cJSON *at(cJSON *o, const char *key, int i) {
    cJSON *a = cJSON_GetObjectItem(o, key);
    return i < 0 ? a : cJSON_GetArrayItem(a, i);
}

static void set(cJSON *o, const char *key, cJSON *v) {
    cJSON_ReplaceItemInObject(o, key, v);
}

TEST(neat_checkpoint_hostile_structure) {
    ck = OTC_BINARY_DIR "/neat_inputs_ck_structure.json";
    otc_neat_config c = xor_config();
    cJSON *good = xor_checkpoint(&c);
    REQUIRE(good);
    REQUIRE(cJSON_GetArraySize(at(good, "species", -1)) >= 2); /* seed 7: several species */
    CHECK(load(good, &c, "xor") == OTC_OK);

    /* a species with no members (was a segfault in reproduction) */
    cJSON *j = cJSON_Duplicate(good, 1);
    set(at(j, "species", 0), "members", cJSON_CreateArray());
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": species 0: members", NULL);
    cJSON_Delete(j);

    /* a genome in two species */
    j = cJSON_Duplicate(good, 1);
    int first = at(at(j, "species", 0), "members", 0)->valueint;
    cJSON_AddItemToArray(at(at(j, "species", 1), "members", -1), cJSON_CreateNumber(first));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": species 1 (id ", "is also a member");
    cJSON_Delete(j);

    /* a member that is no genome */
    j = cJSON_Duplicate(good, 1);
    cJSON_AddItemToArray(at(at(j, "species", 0), "members", -1), cJSON_CreateNumber(30));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, "species 0 (id ",
                 "not a genome index in [0, 30)");
    cJSON_Delete(j);

    /* a genome in no species */
    j = cJSON_Duplicate(good, 1);
    cJSON_DeleteItemFromArray(at(at(j, "species", 0), "members", -1), 0);
    char want[64];
    snprintf(want, sizeof want, ": genome %d: is a member of no species", first);
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, want, NULL);
    cJSON_Delete(j);

    /* two species with one id */
    j = cJSON_Duplicate(good, 1);
    set(at(j, "species", 1), "id",
        cJSON_CreateNumber(cJSON_GetObjectItem(at(j, "species", 0), "id")->valueint));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, "species 1: id:", "another species");
    cJSON_Delete(j);

    /* a duplicate node id and a duplicate innovation within a genome */
    j = cJSON_Duplicate(good, 1);
    cJSON_AddItemToArray(at(at(j, "genomes", 3), "nodes", -1),
                         cJSON_Duplicate(at(at(j, "genomes", 3), "nodes", 3), 1));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": genome 3: node 3: id: given twice", NULL);
    cJSON_Delete(j);
    j = cJSON_Duplicate(good, 1);
    cJSON_AddItemToArray(at(at(j, "genomes", 2), "connections", -1),
                         cJSON_Duplicate(at(at(j, "genomes", 2), "connections", 0), 1));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": genome 2: connection ",
                 "innov: given twice");
    cJSON_Delete(j);

    /* a connection to a node the genome lacks */
    j = cJSON_Duplicate(good, 1);
    set(at(at(j, "genomes", 1), "connections", 0), "in", cJSON_CreateNumber(77));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": genome 1: connection ", "missing node");
    cJSON_Delete(j);

    /* an output node missing (xor.ini: inputs 0, 1, bias 2, output 3) */
    j = cJSON_Duplicate(good, 1);
    cJSON_DeleteItemFromArray(at(at(j, "genomes", 0), "nodes", -1), 3);
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": genome 0: ", "missing node");
    cJSON_Delete(j);
    cJSON_Delete(good);
    remove(ck);
    ck = NULL;
}

TEST(neat_checkpoint_hostile_numbers) {
    ck = OTC_BINARY_DIR "/neat_inputs_ck_numbers.json";
    otc_neat_config c = xor_config();
    cJSON *good = xor_checkpoint(&c);
    REQUIRE(good);
    /* NaN or infinite weights, biases and fitness (JSON has no NaN: as text, or overflowing) */
    cJSON *j = cJSON_Duplicate(good, 1);
    set(at(at(j, "genomes", 4), "connections", 0), "weight", cJSON_CreateString("nan"));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": genome 4: connection ", "weight");
    cJSON_Delete(j);
    j = cJSON_Duplicate(good, 1);
    set(at(at(j, "genomes", 4), "connections", 0), "weight", cJSON_CreateRaw("1e999"));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": genome 4: connection ", "weight");
    cJSON_Delete(j);
    j = cJSON_Duplicate(good, 1);
    set(at(at(j, "genomes", 5), "nodes", 3), "bias", cJSON_CreateRaw("-1e999"));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": genome 5: node 3: bias", NULL);
    cJSON_Delete(j);
    j = cJSON_Duplicate(good, 1);
    set(at(j, "genomes", 6), "fitness", cJSON_CreateRaw("1e999"));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": genome 6: fitness", NULL);
    cJSON_Delete(j);
    j = cJSON_Duplicate(good, 1);
    set(at(j, "species", 0), "fitness", cJSON_CreateString("nan"));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": species 0: fitness", NULL);
    cJSON_Delete(j);
    j = cJSON_Duplicate(good, 1);
    set(j, "threshold", cJSON_CreateNumber(-1));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": threshold", NULL);
    cJSON_Delete(j);

    /* counters at or below ids in use: next_node 0 used to fail later with "genome already
     * has node 1" and no file name */
    j = cJSON_Duplicate(good, 1);
    set(j, "next_node", cJSON_CreateNumber(0));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": next_node: 0", NULL);
    cJSON_Delete(j);
    j = cJSON_Duplicate(good, 1);
    set(j, "next_innov", cJSON_CreateNumber(1));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": innovations: entry ", "next_innov");
    cJSON_Delete(j);
    j = cJSON_Duplicate(good, 1);
    set(j, "generation", cJSON_CreateNumber(-1));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": generation", NULL);
    cJSON_Delete(j);
    /* a population of the wrong size */
    j = cJSON_Duplicate(good, 1);
    cJSON_DeleteItemFromArray(at(j, "genomes", -1), 0);
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": genomes", "30");
    cJSON_Delete(j);
    cJSON_Delete(good);
    remove(ck);
    ck = NULL;
}

/* The novelty archive and the tracked front in a checkpoint: each field checked, the
 * message naming it. */
TEST(neat_checkpoint_hostile_novelty_and_front) {
    ck = OTC_BINARY_DIR "/neat_inputs_ck_novelty.json";
    otc_neat_config c = xor_config();
    c.selection = OTC_NEAT_SELECT_NOVELTY;
    c.novelty_weight = 0.5;
    cJSON *good = xor_checkpoint_with(&c, true);
    REQUIRE(good);
    cJSON *nv = cJSON_GetObjectItem(good, "novelty"), *front = at(good, "front", -1);
    REQUIRE(nv && cJSON_GetObjectItem(nv, "dim")->valueint == 4); /* xor: its 4 outputs */
    REQUIRE(cJSON_GetArraySize(cJSON_GetObjectItem(nv, "archive")) % 4 == 0);
    REQUIRE(cJSON_GetArraySize(front) >= 1);
    CHECK(load(good, &c, "xor") == OTC_OK);

    static const struct {
        const char *field, *raw, *says;
    } novelty_cases[] = {
        {"dim", "100000", ": novelty: dim"}, /* above OTC_NEAT_MAX_BC */
        {"floor", "0", ": novelty: threshold and floor"},
        {"threshold", "\"nan\"", ": novelty: threshold and floor"},
        {"quiet", "-1", ": novelty: quiet"},
        {"archive", "[1,2,3]", ": novelty: archive: missing, not whole behaviours of 4"},
        {"archive", "[1,2,3,1e39]", ": novelty: archive: a number that is not a finite f32"},
        {"archive", "{}", ": novelty: archive"},
    };
    for (size_t i = 0; i < sizeof novelty_cases / sizeof *novelty_cases; i++) {
        cJSON *j = cJSON_Duplicate(good, 1);
        set(cJSON_GetObjectItem(j, "novelty"), novelty_cases[i].field,
            cJSON_CreateRaw(novelty_cases[i].raw));
        expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, novelty_cases[i].says, NULL);
        cJSON_Delete(j);
    }
    cJSON *j = cJSON_Duplicate(good, 1);
    cJSON_DeleteItemFromObject(j, "novelty");
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": novelty: missing", NULL);
    cJSON_Delete(j);
    /* an archive in the checkpoint of a run that selects on fitness */
    otc_neat_config fitness = xor_config();
    j = xor_checkpoint(&fitness);
    REQUIRE(j);
    cJSON_AddItemToObject(j, "novelty", cJSON_Duplicate(nv, 1));
    expect_error(load(j, &fitness, "xor"), OTC_ERR_FORMAT, ": novelty: an archive, but", NULL);
    cJSON_Delete(j);

    /* front members: generation, values and genome checked like the population's */
    static const struct {
        const char *field, *raw, *says;
    } front_cases[] = {
        {"generation", "1000", ": front: member 0: generation"},
        {"values", "[1]", ": front: member 0: values"},
        {"values", "[1,\"inf\"]", ": front: member 0: values"},
    };
    for (size_t i = 0; i < sizeof front_cases / sizeof *front_cases; i++) {
        j = cJSON_Duplicate(good, 1);
        set(at(j, "front", 0), front_cases[i].field, cJSON_CreateRaw(front_cases[i].raw));
        expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, front_cases[i].says, NULL);
        cJSON_Delete(j);
    }
    j = cJSON_Duplicate(good, 1);
    set(at(at(at(j, "front", 0), "genome", -1), "connections", 0), "innov",
        cJSON_CreateNumber(999999));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": front: member 0: connection", "innov");
    cJSON_Delete(j);
    cJSON_Delete(good);
    remove(ck);
    ck = NULL;
}

TEST(neat_checkpoint_other_task_or_config_refused) {
    ck = OTC_BINARY_DIR "/neat_inputs_ck_origin.json";
    otc_neat_config c = xor_config();
    cJSON *good = xor_checkpoint(&c);
    REQUIRE(good);
    expect_error(load(good, &c, "pole1"), OTC_ERR_CONFIG,
                 ": task:", "from task 'xor', not 'pole1'");
    otc_neat_config other = c;
    other.conn_add_prob = 0.5;
    expect_error(load(good, &other, "xor"), OTC_ERR_CONFIG,
                 ": config: [DefaultGenome] conn_add_prob:", "'0.05', this config has '0.5'");
    other = c;
    other.activation_options[other.n_activation_options++] = OTC_ACT_TANH;
    expect_error(load(good, &other, "xor"), OTC_ERR_CONFIG, "activation_options",
                 "this config has 'sigmoid tanh'");
    other = c;
    other.pop_size = 31;
    expect_error(load(good, &other, "xor"), OTC_ERR_CONFIG, "[NEAT] pop_size", NULL);
    /* a checkpoint from before task and config were recorded */
    cJSON *j = cJSON_Duplicate(good, 1);
    set(j, "version", cJSON_CreateNumber(1));
    expect_error(load(j, &c, "xor"), OTC_ERR_FORMAT, ": version: 1", "start a new run");
    cJSON_Delete(j);
    /* a recorded key this otc does not know */
    j = cJSON_Duplicate(good, 1);
    cJSON_AddStringToObject(at(j, "config", -1)->child, "future_key", "1");
    expect_error(load(j, &c, "xor"), OTC_ERR_CONFIG, ": config: [NEAT] future_key = '1'",
                 "this config leaves it out");
    cJSON_Delete(j);
    /* the same config and task: resumes */
    CHECK(load(good, &c, "xor") == OTC_OK);
    CHECK(load(good, &c, NULL) == OTC_OK);
    cJSON_Delete(good);
    remove(ck);
    ck = NULL;
}
