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
#include "otc/neat_python.h"

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
