/* ONNX import against PyTorch: the models tests/onnx/make_torch_fixtures.py exported (an MLP,
 * LeNet with BatchNorm, a skip connection, a 1-D convolution, asymmetric padding (a model written
 * with onnx.helper), spatial reductions, LayerNormalization, the unary Sqrt, Cos, Sin and
 * Reciprocal, RNN, LSTM (one and two layers) and GRU) imported and run on every backend, their
 * outputs within 1e-5 of PyTorch's for the same input (NAME.json). The recurrent ones import as
 * step graphs, run here a time step at a time. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_support.h"
#include "otc/file.h"
#include "otc/onnx.h"

#define FIXTURES OTC_SOURCE_DIR "/tests/onnx"

/* REQUIRE for the helpers that return a value: the test stops here. */
#define MUST(cond)                                                                                 \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: MUST failed: %s\n", __FILE__, __LINE__, #cond);                \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static otc_graph *import_fixture(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.onnx", FIXTURES, name);
    char *data = NULL;
    size_t len = 0;
    MUST(otc_read_file(path, OTC_MAX_ONNX_BYTES, &data, &len) == OTC_OK);
    otc_graph *g = NULL;
    otc_status st = otc_onnx_import(data, len, path, FIXTURES, &g);
    if (st) fprintf(stderr, "%s\n", otc_last_error());
    free(data);
    MUST(st == OTC_OK && g);
    return g;
}

static float *floats(const cJSON *arr, int *n) {
    *n = cJSON_GetArraySize(arr);
    float *v = malloc((size_t)(*n ? *n : 1) * sizeof *v);
    MUST(v);
    for (int i = 0; i < *n; i++) v[i] = (float)cJSON_GetArrayItem(arr, i)->valuedouble;
    return v;
}

/* Runs fixture `name` on backend k and compares every output with PyTorch's. */
static void check_fixture(bk *k, const char *name) {
    otc_graph *g = import_fixture(name);
    char path[512];
    snprintf(path, sizeof path, "%s/%s.json", FIXTURES, name);
    char *text = NULL;
    size_t len = 0;
    REQUIRE(otc_read_text_file(path, 1 << 20, &text, &len) == OTC_OK);
    cJSON *ref = cJSON_Parse(text);
    free(text);
    REQUIRE(ref);
    int n = 0;
    float *x = floats(cJSON_GetObjectItem(ref, "x"), &n);
    int batch = cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "shape"), 0)->valueint;
    otc_executor *ex = bk_new(k, g, &(bk_options){.inference = true, .loss = -1});
    REQUIRE_EX(ex);
    otc_id in = otc_graph_find(g, cJSON_GetObjectItem(ref, "input")->valuestring);
    REQUIRE(in >= 0);
    /* A sequence [B, T, F] runs as T steps of [B, F]; its outputs are [B, T, O] (every step)
     * or [B, O] (the last). */
    const cJSON *seq = cJSON_GetObjectItem(ref, "seq");
    bool steps = cJSON_IsString(seq), every = steps && !strcmp(seq->valuestring, "all");
    int T = steps ? cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "shape"), 1)->valueint : 1;
    int F = n / batch / T;
    const cJSON *outs = cJSON_GetObjectItem(ref, "outputs");
    CHECK(otc_graph_output_count(g) == cJSON_GetArraySize(outs));
    float *step = malloc((size_t)n * sizeof *step);
    REQUIRE(step);
    otc_exec_reset_state(ex);
    double worst = 0;
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < batch; b++)
            memcpy(step + (size_t)b * F, x + ((size_t)b * T + t) * F, (size_t)F * sizeof *x);
        REQUIRE(otc_exec_set_input(ex, in, steps ? step : x, batch) == OTC_OK);
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        if (steps && !every && t < T - 1) continue;
        for (int o = 0; o < cJSON_GetArraySize(outs); o++) {
            const cJSON *jo = cJSON_GetArrayItem(outs, o);
            otc_id id = otc_graph_output(g, o);
            CHECK(
                !strcmp(otc_graph_node(g, id)->name, cJSON_GetObjectItem(jo, "name")->valuestring));
            int m = 0;
            float *want = floats(cJSON_GetObjectItem(jo, "y"), &m);
            const float *got = NULL;
            otc_shape sh;
            REQUIRE(otc_exec_value(ex, id, &got, &sh) == OTC_OK);
            int per = (int)otc_shape_size(sh) / batch; /* a sample's outputs, this step */
            CHECK(per * batch * (every ? T : 1) == m);
            for (int b = 0; b < batch && per * batch * (every ? T : 1) == m; b++)
                for (int i = 0; i < per; i++) {
                    float w = want[every ? ((size_t)b * T + t) * per + i : (size_t)b * per + i];
                    double err = fabs(got[b * per + i] - w) / fmax(1.0, fabs(w));
                    if (err > worst) worst = err;
                }
            free(want);
        }
    }
    CHECK_MSG(worst <= 1e-5, "%s on %s: worst error %g", name, k->name, worst);
    free(step);
    free(x);
    cJSON_Delete(ref);
    otc_exec_free(ex);
    otc_graph_free(g);
}

BACKEND_TEST(onnx_torch_mlp) {
    check_fixture(k, "mlp");
}
BACKEND_TEST(onnx_torch_lenet_bn) {
    check_fixture(k, "lenet_bn");
}
BACKEND_TEST(onnx_torch_skip) {
    check_fixture(k, "skip");
}
BACKEND_TEST(onnx_torch_conv1d) {
    check_fixture(k, "conv1d");
}
BACKEND_TEST(onnx_torch_conv_asym) { /* asymmetric pads: a symmetric pad and a slice */
    check_fixture(k, "conv_asym");
}
BACKEND_TEST(onnx_torch_unary) { /* Sqrt, Cos, Sin, Reciprocal standalone between layers */
    check_fixture(k, "unary");
}
BACKEND_TEST(onnx_torch_layernorm) { /* LayerNormalization (opset 17) in graph ops */
    check_fixture(k, "layernorm");
}
BACKEND_TEST(onnx_torch_reduce) {
    check_fixture(k, "reduce");
}
BACKEND_TEST(onnx_torch_rnn) {
    check_fixture(k, "rnn");
}
BACKEND_TEST(onnx_torch_lstm_last) {
    check_fixture(k, "lstm_last");
}
BACKEND_TEST(onnx_torch_gru) {
    check_fixture(k, "gru");
}
BACKEND_TEST(onnx_torch_lstm2) { /* two stacked layers */
    check_fixture(k, "lstm2");
}
BACKEND_TEST(onnx_torch_gru2_h) { /* two layers, the last one's final state h_n[-1] */
    check_fixture(k, "gru2_h");
}

/* The file's initializers are named, trainable parameters (a transposed one keeps its name);
 * the graph input keeps its name with the batch leading. */
TEST(onnx_torch_params_named) {
    otc_graph *g = import_fixture("mlp");
    otc_id w = otc_graph_find(g, "a.weight"), b = otc_graph_find(g, "a.bias");
    REQUIRE(w >= 0 && b >= 0);
    CHECK(otc_graph_node(g, w)->op == OTC_OP_PARAMETER && otc_graph_node(g, w)->trainable);
    /* torch's Linear(6, 16) weight is [16, 6], used transposed: otc holds it as [6, 16] */
    CHECK(otc_graph_node(g, w)->shape.dim[0] == 6 && otc_graph_node(g, w)->shape.dim[1] == 16);
    otc_id x = otc_graph_find(g, "x");
    REQUIRE(x >= 0);
    CHECK(otc_graph_node(g, x)->shape.dim[0] == OTC_BATCH);
    CHECK(otc_graph_node(g, x)->shape.dim[1] == 6);
    otc_graph_free(g);
}
