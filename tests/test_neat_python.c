/* neat-python interop: the 92 networks neat-python 2.1 exported (tests/neat_python/, README
 * there) imported with otc_neat_python_import and run on every backend against the outputs
 * neat-python itself computed, and the importer's errors on malformed files.
 *
 * Tolerance: |otc - neat-python| <= 1e-4 max(1, |neat-python|). otc computes in float32
 * (relative rounding 6e-8 per operation, and the compilers' own exp/tanh/log within about
 * 2e-5); the fixtures were kept only where a relative 1e-6 change of the inputs moves no
 * output by more than 1e-3, i.e. errors are amplified at most about 1000 times: 6e-8 x 1000
 * is below 1e-4. Measured worst case: 5e-5 (ctrnn, 25 rows of 5 integration steps). */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "backend_support.h"
#include "otc/file.h"
#include "otc/neat.h"
#include "otc/neat_config.h"
#include "otc/neat_flat.h"
#include "otc/neat_genome.h"
#include "otc/neat_python.h"
#include "otc/text.h"

#define FIXTURES OTC_SOURCE_DIR "/tests/neat_python"
#define NP_TOL   1e-4

static char *read_text(const char *path, size_t *len) {
    char *text = NULL;
    if (otc_read_text_file(path, OTC_MAX_NETWORK_BYTES, &text, len) != OTC_OK) return NULL;
    return text;
}

/* Fixture files whose name starts with prefix, sorted; NULL-terminated, for free_names. */
static char **fixture_names(const char *prefix, int *count) {
    DIR *d = opendir(FIXTURES);
    char **names = NULL;
    int n = 0;
    if (!d) return NULL;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) || l < 5 ||
            strcmp(e->d_name + l - 5, ".json"))
            continue;
        char **grown = realloc(names, sizeof *names * (size_t)(n + 2));
        if (!grown) break;
        names = grown;
        names[n++] = strdup(e->d_name);
        names[n] = NULL;
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[j], names[i]) < 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    *count = n;
    return names;
}

static void free_names(char **names) {
    for (int i = 0; names && names[i]; i++) free(names[i]);
    free(names);
}

/* A row-major [rows][cols] copy of a JSON array of arrays of numbers. */
static float *matrix(const cJSON *a, int *rows, int *cols) {
    *rows = cJSON_GetArraySize(a);
    *cols = *rows ? cJSON_GetArraySize(cJSON_GetArrayItem(a, 0)) : 0;
    float *m = calloc((size_t)(*rows * *cols + 1), sizeof *m);
    for (int r = 0; m && r < *rows; r++)
        for (int c = 0; c < *cols; c++)
            m[r * *cols + c] = (float)cJSON_GetArrayItem(cJSON_GetArrayItem(a, r), c)->valuedouble;
    return m;
}

/* Runs one fixture on k: stateless networks as one batch of all rows; recurrent and ctrnn
 * row by row, the state in Delay nodes (interpreter) or carried through state_io (every
 * backend). Raises *worst to the worst relative error seen. */
static void run_fixture(bk *k, const char *file, bool state_io, double *worst) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", FIXTURES, file);
    size_t len = 0;
    char *text = read_text(path, &len);
    cJSON *root = text ? cJSON_ParseWithLength(text, len) : NULL;
    CHECK_MSG(root, "%s: cannot read", file);
    if (!root) {
        free(text);
        return;
    }
    int rows, n_in, n_rows, n_out;
    float *x = matrix(cJSON_GetObjectItem(root, "inputs"), &rows, &n_in);
    const cJSON *want = cJSON_GetObjectItem(root, "outputs");
    n_rows = cJSON_GetArraySize(want);
    n_out = cJSON_GetArraySize(cJSON_GetArrayItem(want, 0));
    bool stateless = !strcmp(cJSON_GetObjectItem(root, "network_type")->valuestring, "feedforward");
    otc_graph *g = NULL;
    otc_neat_python_options o = {.state_io = state_io && !stateless};
    otc_status st = otc_neat_python_import(text, len, file, &o, &g);
    CHECK_MSG(st == OTC_OK, "%s: %s", file, otc_last_error());
    otc_executor *ex = st ? NULL : bk_new(k, g, &(bk_options){.inference = true, .loss = -1});
    if (!st && !ex) fprintf(stderr, "%s on %s: %s\n", file, k->name, otc_last_error());
    CHECK(st || ex);
    CHECK_MSG(rows == n_rows, "%s: %d input rows, %d output rows", file, rows, n_rows);
    if (ex && rows == n_rows) {
        otc_id in = otc_graph_input(g, 0), state = o.state_io ? otc_graph_input(g, 1) : -1;
        int n_state = state >= 0 ? (int)otc_graph_node(g, state)->shape.dim[1] : 0;
        float *s = calloc((size_t)n_state + 1, sizeof *s);
        int step = stateless ? rows : 1;
        for (int r0 = 0; r0 < rows && s; r0 += step) {
            REQUIRE(otc_exec_set_input(ex, in, x + (size_t)r0 * (size_t)n_in, step) == OTC_OK);
            if (state >= 0) REQUIRE(otc_exec_set_input(ex, state, s, 1) == OTC_OK);
            REQUIRE(otc_exec_forward(ex) == OTC_OK);
            for (int j = 0; j < n_out; j++) {
                const float *v;
                REQUIRE(otc_exec_value(ex, otc_graph_output(g, j), &v, NULL) == OTC_OK);
                for (int r = 0; r < step; r++) {
                    double w = cJSON_GetArrayItem(cJSON_GetArrayItem(want, r0 + r), j)->valuedouble;
                    double e = fabs(v[r] - w) / fmax(1.0, fabs(w));
                    if (e > *worst) *worst = e;
                    CHECK_MSG(e <= NP_TOL, "%s on %s: row %d output %d: %.9g, neat-python %.9g",
                              file, k->name, r0 + r, j, v[r], w);
                }
            }
            if (state >= 0) {
                const float *next;
                REQUIRE(otc_exec_value(ex, otc_graph_output(g, n_out), &next, NULL) == OTC_OK);
                memcpy(s, next, sizeof *s * (size_t)n_state);
            }
        }
        free(s);
    }
    otc_exec_free(ex);
    otc_graph_free(g);
    free(x);
    cJSON_Delete(root);
    free(text);
}

/* Every fixture of one kind on k; recurrent kinds on the interpreter twice (Delay nodes and
 * state_io), on the compilers through state_io. */
static void run_kind(bk *k, const char *prefix, int expect) {
    int n = 0;
    char **names = fixture_names(prefix, &n);
    CHECK_MSG(n == expect, "%d %s fixtures, expected %d", n, prefix, expect);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        bool recurrent = strncmp(names[i], "feedforward", 11) && strncmp(names[i], "xor", 3);
        for (int pass = 0; pass < (recurrent && !bk_compiled(k) ? 2 : 1); pass++) {
            run_fixture(k, names[i], bk_compiled(k) || pass == 1, &worst);
        }
    }
    printf("%s on %s: %d fixtures, worst relative error %.2g\n", prefix, k->name, n, worst);
    free_names(names);
}

BACKEND_TEST(neat_python_feedforward) {
    run_kind(k, "feedforward_", 30);
    run_kind(k, "xor_champion_", 2);
}

BACKEND_TEST(neat_python_recurrent) {
    run_kind(k, "recurrent_", 30);
}

BACKEND_TEST(neat_python_ctrnn) {
    run_kind(k, "ctrnn_", 30);
}

/* A small export by hand: out = sigmoid(0.5 + 1 * (1.5 x1 - 2 x2)) in neat-python's sigmoid,
 * 1 / (1 + exp(-5 z)). */
static const char small_net[] =
    "{\"format_version\":\"1.0\",\"network_type\":\"feedforward\",\"metadata\":{},"
    "\"topology\":{\"num_inputs\":2,\"num_outputs\":1,\"input_keys\":[-1,-2],\"output_keys\":[0]},"
    "\"nodes\":[{\"id\":0,\"type\":\"output\",\"activation\":{\"name\":\"sigmoid\",\"custom\":"
    "false},"
    "\"aggregation\":{\"name\":\"sum\",\"custom\":false},\"bias\":0.5,\"response\":1.0},"
    "{\"id\":-1,\"type\":\"input\",\"activation\":{\"name\":\"identity\",\"custom\":false},"
    "\"aggregation\":{\"name\":\"none\",\"custom\":false},\"bias\":0.0,\"response\":1.0},"
    "{\"id\":-2,\"type\":\"input\",\"activation\":{\"name\":\"identity\",\"custom\":false},"
    "\"aggregation\":{\"name\":\"none\",\"custom\":false},\"bias\":0.0,\"response\":1.0}],"
    "\"connections\":[{\"from\":-1,\"to\":0,\"weight\":1.5,\"enabled\":true},"
    "{\"from\":-2,\"to\":0,\"weight\":-2.0,\"enabled\":true}]}";

/* x = (1, 0.5): z = 0.5 + 1.5 - 1 = 1, out = 1 / (1 + e^-5) = 0.99330715; x = (0, 0.5):
 * z = -0.5, out = 1 / (1 + e^2.5) = 0.07585818. Also with a UTF-8 BOM and CRLF line ends. */
TEST(neat_python_import_by_hand) {
    const char *variants[3] = {small_net, NULL, NULL};
    char bom[sizeof small_net + 3], crlf[2 * sizeof small_net];
    snprintf(bom, sizeof bom, "\xEF\xBB\xBF%s", small_net);
    size_t o = 0;
    for (const char *c = small_net; *c; c++) {
        if (*c == ',') {
            crlf[o++] = '\r';
            crlf[o++] = '\n';
        }
        crlf[o++] = *c;
    }
    crlf[o] = '\0';
    variants[1] = bom;
    variants[2] = crlf;
    for (int v = 0; v < 3; v++) {
        otc_graph *g = NULL;
        REQUIRE(otc_neat_python_import(variants[v], strlen(variants[v]), "small.json", NULL, &g) ==
                OTC_OK);
        otc_executor *ex = otc_interpreter_new(g, &(otc_exec_options){.inference = true});
        REQUIRE(ex);
        const float x[4] = {1, 0.5f, 0, 0.5f};
        const float *y;
        REQUIRE(otc_exec_set_input(ex, otc_graph_input(g, 0), x, 2) == OTC_OK);
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        REQUIRE(otc_exec_value(ex, otc_graph_output(g, 0), &y, NULL) == OTC_OK);
        CHECK_NEAR(y[0], 0.99330715, 1e-6);
        CHECK_NEAR(y[1], 0.07585818, 1e-6);
        CHECK(!strcmp(otc_graph_node(g, otc_graph_output(g, 0))->name, "out0"));
        const char *meta = otc_graph_meta_get(g, "neat_python");
        CHECK(meta && strstr(meta, "\"network_type\":\"feedforward\""));
        otc_exec_free(ex);
        otc_graph_free(g);
    }
}

/* One JSON document and nothing after it; no string cut short by an escaped NUL (cJSON
 * would read "sig\u0000moid" as "sig"): each refused naming the line and byte. */
TEST(neat_python_import_rejects_trailing_data_and_nul) {
    static const struct {
        const char *from, *to, *tail, *msg;
    } cases[] = {
        {NULL, NULL, " x", "line 1: data after the end of the JSON document (byte"},
        {NULL, NULL, "{}", "data after the end of the JSON document"},
        {"\"sigmoid\"", "\"sig\\u0000moid\"", "", "a string holds \\u0000 (byte"},
        /* an escaped backslash, then "u0000": no NUL, just an unknown name */
        {"\"sigmoid\"", "\"sig\\\\u0000moid\"", "", "unknown activation 'sig\\u0000moid'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[4096];
        const char *at = cases[i].from ? strstr(small_net, cases[i].from) : NULL;
        if (at)
            snprintf(text, sizeof text, "%.*s%s%s%s", (int)(at - small_net), small_net, cases[i].to,
                     at + strlen(cases[i].from), cases[i].tail);
        else
            snprintf(text, sizeof text, "%s%s", small_net, cases[i].tail);
        otc_graph *g = NULL;
        otc_status st = otc_neat_python_import(text, strlen(text), "small.json", NULL, &g);
        CHECK_MSG(st == OTC_ERR_FORMAT && !g, "case %zu: status %d", i, (int)st);
        CHECK_MSG(strstr(otc_last_error(), cases[i].msg), "case %zu: '%s' lacks '%s'", i,
                  otc_last_error(), cases[i].msg);
        otc_graph_free(g);
    }
    /* white space after the document is fine */
    char text[4096];
    snprintf(text, sizeof text, "%s \r\n\t", small_net);
    otc_graph *g = NULL;
    CHECK_MSG(otc_neat_python_import(text, strlen(text), "small.json", NULL, &g) == OTC_OK, "%s",
              otc_last_error());
    otc_graph_free(g);
}

/* Malformed files: each edit of small_net fails with OTC_ERR_FORMAT (custom functions and
 * iznn: OTC_ERR_UNSUPPORTED; ctrnn without times: OTC_ERR_ARG) and a message naming the file
 * and the field or node. */
TEST(neat_python_import_rejects) {
    static const struct {
        const char *from, *to, *msg;
        otc_status st;
    } cases[] = {
        {"{\"format_version\"", "{{\"format_version\"", "small.json: line 1: not valid JSON",
         OTC_ERR_FORMAT},
        {"\"feedforward\"", "\"iznn\"", "network_type \"iznn\"", OTC_ERR_UNSUPPORTED},
        {"\"feedforward\"", "\"lstm\"", "'lstm' is not feedforward, recurrent or ctrnn",
         OTC_ERR_FORMAT},
        {"\"feedforward\"", "\"ctrnn\"", "give --advance-time and --time-step", OTC_ERR_ARG},
        {"\"1.0\"", "\"2.0\"", "format_version '2.0'", OTC_ERR_FORMAT},
        {"\"name\":\"sigmoid\",\"custom\":false", "\"name\":\"my_act\",\"custom\":true",
         "nodes[0] (node 0): custom activation 'my_act' is not supported", OTC_ERR_UNSUPPORTED},
        {"\"name\":\"sum\",\"custom\":false", "\"name\":\"my_agg\",\"custom\":true",
         "custom aggregation 'my_agg'", OTC_ERR_UNSUPPORTED},
        {"\"sigmoid\"", "\"sigmoidd\"", "nodes[0] (node 0): unknown activation 'sigmoidd'",
         OTC_ERR_FORMAT},
        {"\"sum\"", "\"avg\"", "nodes[0] (node 0): unknown aggregation 'avg'", OTC_ERR_FORMAT},
        {"\"bias\":0.5", "\"bias\":\"x\"", "nodes[0] (node 0): field \"bias\": expected a number",
         OTC_ERR_FORMAT},
        {",\"response\":1.0}", "}", "nodes[0] (node 0): field \"response\" is missing",
         OTC_ERR_FORMAT},
        {"\"weight\":1.5", "\"weight\":1e300", "connections[0]: field \"weight\": 1e+300 is not",
         OTC_ERR_FORMAT},
        {"\"to\":0", "\"to\":7", "connections[0]: to node 7, which is not", OTC_ERR_FORMAT},
        {",\"enabled\":true}", "}", "connections[0]: field \"enabled\" is missing", OTC_ERR_FORMAT},
        {"\"output_keys\":[0]", "\"output_keys\":[0,0]", "output_keys[1]: key 0 appears twice",
         OTC_ERR_FORMAT},
        {"\"output_keys\":[0]", "\"output_keys\":[]", "\"output_keys\" has 0 keys", OTC_ERR_FORMAT},
        {"\"num_inputs\":2", "\"num_inputs\":3", "num_inputs is 3, but there are 2",
         OTC_ERR_FORMAT},
        {"\"connections\":[",
         "\"connections\":[{\"from\":0,\"to\":0,\"weight\":1,\"enabled\":true},",
         "cycle through node 0", OTC_ERR_FORMAT},
        {"\"id\":-2,\"type\":\"input\"", "\"id\":-3,\"type\":\"input\"",
         "nodes[2] (node -3): type \"input\", but -3 is not in input_keys", OTC_ERR_FORMAT},
        {"\"type\":\"output\"", "\"type\":\"hidden\"", "type \"hidden\", but 0 is in output_keys",
         OTC_ERR_FORMAT},
        {"\"id\":0,", "\"id\":0.5,", "nodes[0]: field \"id\": 0.5 is not an integer",
         OTC_ERR_FORMAT},
        {"\"nodes\":[", "\"nodes\":7,\"x\":[", "field \"nodes\": expected an array",
         OTC_ERR_FORMAT},
        {"{\"format_version\"", "[{\"format_version\"", "", OTC_ERR_FORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *at = strstr(small_net, cases[i].from);
        REQUIRE(at);
        char text[4096];
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - small_net), small_net, cases[i].to,
                 at + strlen(cases[i].from));
        if (i + 1 == sizeof cases / sizeof cases[0]) strcat(text, "]");
        otc_graph *g = NULL;
        otc_status st = otc_neat_python_import(text, strlen(text), "small.json", NULL, &g);
        CHECK_MSG(st == cases[i].st, "case %zu: status %d, want %d (%s)", i, (int)st,
                  (int)cases[i].st, otc_last_error());
        CHECK_MSG(!g, "case %zu: a graph despite the error", i);
        CHECK_MSG(strstr(otc_last_error(), cases[i].msg) &&
                      !strncmp(otc_last_error(), "small.json: ", 12),
                  "case %zu: message '%s' lacks '%s'", i, otc_last_error(), cases[i].msg);
        otc_graph_free(g);
    }
}

/* ---- neat-python's configs (tests/neat_python/configs: its examples, unchanged) ---- */

#define CONFIGS FIXTURES "/configs/"

/* REQUIRE(st == OTC_OK), printing the error first. */
#define REQUIRE_OK(expr)                                                                           \
    do {                                                                                           \
        otc_status st_ = (expr);                                                                   \
        if (st_ != OTC_OK) fprintf(stderr, "%s\n", otc_last_error());                              \
        REQUIRE(st_ == OTC_OK);                                                                    \
    } while (0)

TEST(neat_python_configs_load) {
    otc_neat_config c;
    otc_status st = otc_neat_config_load(CONFIGS "xor_config-feedforward", &c);
    REQUIRE_OK(st);
    CHECK_NEAR(c.fitness_threshold, 3.9, 0);
    CHECK(c.pop_size == 150 && c.num_inputs == 2 && c.num_outputs == 1 && !c.has_seed);
    CHECK(c.initial_connection == OTC_NEAT_CONNECT_FULL_DIRECT);
    /* a config in neat-python's own keys means neat-python's sigmoid (test_neat_ctrnn.c) */
    CHECK(c.np_functions && c.activation_default == OTC_ACT_NP_SIGMOID);
    /* neat-python's "partial 0.5" is partial_nodirect */
    st = otc_neat_config_load(CONFIGS "xor_config-feedforward-partial", &c);
    REQUIRE_OK(st);
    CHECK(c.initial_connection == OTC_NEAT_CONNECT_PARTIAL_NODIRECT);
    CHECK_NEAR(c.connection_fraction, 0.5, 0);
    st = otc_neat_config_load(CONFIGS "single-pole-balancing_config-feedforward", &c);
    REQUIRE_OK(st);
    CHECK(c.initial_connection == OTC_NEAT_CONNECT_PARTIAL_DIRECT);
    st = otc_neat_config_load(CONFIGS "lunar-lander_config-feedforward", &c);
    REQUIRE_OK(st);
    CHECK(c.activation_default == OTC_ACT_CLAMPED && c.n_activation_options == 1);
    CHECK(c.num_inputs == 8 && c.num_outputs == 4);
    /* a custom activation (defined in the example's Python code) */
    CHECK(otc_neat_config_load(CONFIGS "memory-fixed_config", &c) == OTC_ERR_CONFIG);
    CHECK_MSG(strstr(otc_last_error(), "memory-fixed_config:21: [DefaultGenome] "
                                       "activation_default: unsupported activation "
                                       "'my_sinc_function'"),
              "%s", otc_last_error());
    /* CTRNN genes: neat-python's time_constant_* keys (test_neat_ctrnn.c) */
    REQUIRE_OK(otc_neat_config_load(CONFIGS "single-pole-balancing_config-ctrnn", &c));
}

/* The xor config with lines changed: `edit` replaces the line starting with `key` (or, key
 * NULL, follows "[NEAT]"), with CRLF line ends and a UTF-8 BOM when asked. */
static otc_status xor_config_with(const char *key, const char *line, bool crlf,
                                  otc_neat_config *c) {
    size_t len = 0;
    char *text = read_text(CONFIGS "xor_config-feedforward", &len);
    if (!text) return OTC_ERR_IO;
    otc_text t;
    otc_text_init(&t);
    if (crlf) otc_text_puts(&t, "\xEF\xBB\xBF");
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        bool hit = key && !strncmp(l, key, strlen(key));
        otc_text_printf(&t, "%s%s", hit ? line : l, crlf ? "\r\n" : "\n");
        if (!key && !strcmp(l, "[NEAT]")) otc_text_printf(&t, "%s%s", line, crlf ? "\r\n" : "\n");
    }
    free(text);
    char *all = otc_text_take(&t);
    otc_status st = all ? otc_neat_config_parse(all, "xor.ini", c) : OTC_ERR_NOMEM;
    free(all);
    return st;
}

TEST(neat_python_config_keys) {
    otc_neat_config c;
    /* [NEAT] seed (neat-python 2): the run's seed unless --seed is given */
    REQUIRE(xor_config_with(NULL, "seed = 42", false, &c) == OTC_OK);
    CHECK(c.has_seed && c.seed == 42);
    CHECK(xor_config_with(NULL, "seed = -3", false, &c) == OTC_ERR_CONFIG);
    CHECK(strstr(otc_last_error(), "xor.ini:2: [NEAT] seed: bad value '-3'"));
    /* CRLF and a byte order mark change nothing */
    REQUIRE(xor_config_with(NULL, "seed = 7", true, &c) == OTC_OK);
    CHECK(c.has_seed && c.seed == 7 && c.pop_size == 150);
    /* no_fitness_termination: the threshold is then not needed */
    REQUIRE(xor_config_with("no_fitness_termination", "no_fitness_termination = True", false, &c) ==
            OTC_OK);
    CHECK(c.no_fitness_termination);
    REQUIRE(xor_config_with("fitness_threshold", "", false, &c) == OTC_ERR_CONFIG);
    /* single_structural_mutation and structural_mutation_surer (default: follows single) */
    REQUIRE(xor_config_with("single_structural_mutation", "single_structural_mutation = true",
                            false, &c) == OTC_OK);
    CHECK(c.single_structural_mutation && c.structural_mutation_surer == 1);
    REQUIRE(xor_config_with("structural_mutation_surer", "structural_mutation_surer = false", false,
                            &c) == OTC_OK);
    CHECK(c.structural_mutation_surer == 0);
    CHECK(xor_config_with("structural_mutation_surer", "structural_mutation_surer = maybe", false,
                          &c) == OTC_ERR_CONFIG);
    /* every initial_connection form */
    static const struct {
        const char *line;
        otc_neat_connect kind;
        double fraction;
    } forms[] = {
        {"initial_connection = unconnected", OTC_NEAT_CONNECT_UNCONNECTED, 1},
        {"initial_connection = fs_neat_nohidden", OTC_NEAT_CONNECT_FS_NEAT_NOHIDDEN, 1},
        {"initial_connection = fs_neat", OTC_NEAT_CONNECT_FS_NEAT_NOHIDDEN, 1},
        {"initial_connection = fs_neat_hidden", OTC_NEAT_CONNECT_FS_NEAT_HIDDEN, 1},
        {"initial_connection = full_nodirect", OTC_NEAT_CONNECT_FULL_NODIRECT, 1},
        {"initial_connection = full", OTC_NEAT_CONNECT_FULL_NODIRECT, 1},
        {"initial_connection = full_direct", OTC_NEAT_CONNECT_FULL_DIRECT, 1},
        {"initial_connection = partial_nodirect 0.25", OTC_NEAT_CONNECT_PARTIAL_NODIRECT, 0.25},
        {"initial_connection = partial 0.5", OTC_NEAT_CONNECT_PARTIAL_NODIRECT, 0.5},
        {"initial_connection = partial_direct 0.75", OTC_NEAT_CONNECT_PARTIAL_DIRECT, 0.75},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        REQUIRE_OK(xor_config_with("initial_connection", forms[i].line, i % 2, &c));
        CHECK_MSG(c.initial_connection == forms[i].kind &&
                      c.connection_fraction == forms[i].fraction,
                  "%s", forms[i].line);
    }
    CHECK(xor_config_with("initial_connection", "initial_connection = partial_direct", false, &c) ==
          OTC_ERR_CONFIG);
    /* neat-python's activations otc has under the same name */
    REQUIRE(xor_config_with("activation_options", "activation_options = sigmoid clamped hat cube",
                            false, &c) == OTC_OK);
    CHECK(c.n_activation_options == 4 && c.activation_options[1] == OTC_ACT_CLAMPED);
}

/* neat-python's XOR fitness, 4 - sum err^2 ("xor:neat-python"), against otc's (4 - sum
 * |err|)^2, for a genome whose output is its bias 0.25 (identity, no connections): errors
 * 0.25 0.75 0.75 0.25, so 4 - 1.25 = 2.75 and (4 - 2)^2 = 4. Solved: the threshold (2.5 yes,
 * 3.0 no) for neat-python's, outputs on the right side of 0.5 (no) for otc's. */
TEST(neat_python_xor_fitness_by_hand) {
    otc_neat_config c;
    REQUIRE(otc_neat_config_load(CONFIGS "xor_config-feedforward", &c) == OTC_OK);
    otc_neat_genome *g = otc_neat_genome_new();
    otc_neat_node nodes[3] = {{-1, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {-2, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {0, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, 0.25f, 1, 0, 1}};
    for (int i = 0; i < 3; i++) REQUIRE(otc_neat_genome_add_node(g, &nodes[i]) == OTC_OK);
    static const struct {
        const char *task;
        double threshold, fitness;
        bool solved;
    } cases[] = {{"xor:neat-python", 2.5, 2.75, true},
                 {"xor:neat-python", 3.0, 2.75, false},
                 {"xor", 16.0, 4.0, false}};
    for (int i = 0; i < 3; i++) {
        c.fitness_threshold = cases[i].threshold;
        otc_neat_task *t = NULL;
        REQUIRE(otc_neat_task_create(cases[i].task, &c, &t) == OTC_OK);
        otc_neat_eval e = {0};
        REQUIRE(t->evaluate(t, &c, g, 1, &e) == OTC_OK);
        CHECK_NEAR(e.fitness, cases[i].fitness, 1e-6);
        CHECK(e.solved == cases[i].solved);
        otc_neat_task_free(t);
    }
    /* a threshold on neat-python's scale (at most 4) under the paper's fitness would stop the
     * first generation unsolved: refused, naming the key */
    c.fitness_threshold = 3.0;
    otc_neat_task *t = NULL;
    CHECK(otc_neat_task_create("xor", &c, &t) == OTC_ERR_CONFIG && !t);
    CHECK(strstr(otc_last_error(), "fitness_threshold") != NULL);
    otc_neat_genome_free(g);
}

/* A config listing visitor: counts the aggregation keys it is shown. */
static void count_agg_keys(void *ctx, const char *section, const char *key, const char *value) {
    (void)section;
    (void)value;
    if (!strncmp(key, "aggregation_", 12)) ++*(int *)ctx;
}

/* Aggregations in otc's own NEAT genomes: neat-python's aggregation_* keys, new nodes,
 * mutation, the genome JSON and the phenotype. */
TEST(neat_python_genome_aggregations) {
    otc_neat_config c;
    REQUIRE_OK(
        xor_config_with("aggregation_options", "aggregation_options = sum max median", false, &c));
    CHECK(c.n_aggregation_options == 3 && c.aggregation_options[2] == OTC_AGG_MEDIAN);
    CHECK(c.aggregation_default == OTC_AGG_SUM && !c.aggregation_random);
    int listed = 0;
    otc_neat_config_list(&c, count_agg_keys, &listed);
    CHECK(listed == 1); /* the options, which differ from the sum alone */
    REQUIRE(xor_config_with("aggregation_default", "aggregation_default = max", false, &c) ==
            OTC_ERR_CONFIG);
    CHECK(strstr(otc_last_error(), "aggregation_default: 'max' is not in aggregation_options"));
    REQUIRE(xor_config_with("aggregation_options", "aggregation_options = sum my_l2norm", false,
                            &c) == OTC_ERR_CONFIG);
    CHECK(strstr(otc_last_error(), "unsupported aggregation 'my_l2norm'"));
    /* the defaults list no aggregation key: checkpoints from before still resume */
    REQUIRE_OK(otc_neat_config_load(CONFIGS "xor_config-feedforward", &c));
    listed = 0;
    otc_neat_config_list(&c, count_agg_keys, &listed);
    CHECK(listed == 0);
    /* random defaults draw from the options; the mutation rate moves nodes among them */
    c.aggregation_random = c.activation_random = true;
    c.n_aggregation_options = 1;
    c.aggregation_options[0] = OTC_AGG_MAXABS;
    c.n_activation_options = 1;
    c.activation_options[0] = OTC_ACT_CLAMPED;
    otc_rng rng;
    otc_rng_seed(&rng, 5);
    CHECK(otc_neat_new_agg(&c, &rng) == OTC_AGG_MAXABS);
    CHECK(otc_neat_new_act(&c, &rng) == OTC_ACT_CLAMPED);
    /* out = maxabs(2 x0, -3 x1) with identity, by hand: (1, 1) -> -3, (1, -0.5) -> 2 */
    otc_neat_genome *g = otc_neat_genome_new();
    otc_neat_node nodes[3] = {{0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {1, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                              {2, OTC_NEAT_OUTPUT, OTC_ACT_IDENTITY, 0, 1, OTC_AGG_MAXABS, 1}};
    for (int i = 0; i < 3; i++) REQUIRE_OK(otc_neat_genome_add_node(g, &nodes[i]));
    otc_neat_conn conns[2] = {{0, 0, 2, 2.0f, true}, {1, 1, 2, -3.0f, true}};
    for (int i = 0; i < 2; i++) REQUIRE_OK(otc_neat_genome_add_conn(g, &conns[i]));
    c.num_inputs = 2;
    c.num_outputs = 1;
    c.bias_node = false;
    c.feed_forward = true;
    otc_neat_phenotype *ph = NULL;
    REQUIRE_OK(otc_neat_phenotype_build(g, &c, &ph));
    otc_executor *ex = otc_interpreter_new(ph->graph, &(otc_exec_options){.inference = true});
    REQUIRE(ex);
    const float x[4] = {1, 1, 1, -0.5f};
    const float *y;
    REQUIRE_OK(otc_exec_set_input(ex, ph->input, x, 2));
    REQUIRE_OK(otc_exec_forward(ex));
    REQUIRE_OK(otc_exec_value(ex, otc_graph_output(ph->graph, 0), &y, NULL));
    CHECK_NEAR(y[0], -3.0, 1e-6);
    CHECK_NEAR(y[1], 2.0, 1e-6);
    otc_exec_free(ex);
    otc_neat_phenotype_free(ph);
    /* the flat program NEAT evaluates genomes with, likewise */
    otc_neat_flat *fl = otc_neat_flat_new();
    REQUIRE(fl);
    REQUIRE_OK(otc_neat_flat_build(fl, g, &c));
    float fy[2] = {0, 0};
    REQUIRE_OK(otc_neat_flat_forward(fl, x, 2, fy));
    CHECK_NEAR(fy[0], -3.0, 1e-6);
    CHECK_NEAR(fy[1], 2.0, 1e-6);
    otc_neat_flat_free(fl);
    /* the genome JSON keeps it; a genome without the field sums */
    char *json = otc_neat_genome_to_json(g);
    REQUIRE(json && strstr(json, "\"aggregation\":\"maxabs\""));
    otc_neat_genome *back = NULL;
    REQUIRE_OK(otc_neat_genome_from_json(json, &back));
    CHECK(otc_neat_genome_find_node(back, 2)->agg == OTC_AGG_MAXABS);
    otc_neat_genome_free(back);
    char *bad = malloc(strlen(json) + 8);
    REQUIRE(bad);
    const char *at = strstr(json, "\"maxabs\"");
    snprintf(bad, strlen(json) + 8, "%.*s\"avg\"%s", (int)(at - json), json, at + 8);
    CHECK(otc_neat_genome_from_json(bad, &back) == OTC_ERR_FORMAT);
    CHECK(strstr(otc_last_error(), "node 2: aggregation"));
    free(bad);
    free(json);
    /* mutation at rate 1 with one option moves every non-input node to it */
    c.aggregation_mutate_rate = 1.0;
    c.aggregation_options[0] = OTC_AGG_MEDIAN;
    otc_neat_mutate_attributes(g, &c, &rng);
    CHECK(otc_neat_genome_find_node(g, 2)->agg == OTC_AGG_MEDIAN);
    CHECK(otc_neat_genome_find_node(g, 0)->agg == OTC_AGG_SUM);
    otc_neat_genome_free(g);
}
