/* The .otm model file: round trips (structure, parameter bits, forward outputs), the byte
 * layout against an independent reader, and damaged or hostile files, each of which must be
 * rejected with a message naming the file. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "otm_ref.h"
#include "otc/executor.h"
#include "otc/model.h"

/* ---- the container is written by tests/otm_ref.c, independently of the code under test ---- */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static unsigned char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

static void write_bytes(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(data, 1, len, f);
    fclose(f);
}

/* A fresh directory per test, removed (with its files) by rm_tmpdir. */
static void make_tmpdir(char *dir) {
    strcpy(dir, "/tmp/otc_test_model_XXXXXX");
    if (!mkdtemp(dir)) dir[0] = '\0';
}

static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* Removes dir and everything under it (tests make at most one level of subdirectories). */
static void rm_tmpdir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char path[512];
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            rm_tmpdir(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* ---- graphs ---- */

/* Touches every op family and every stored field: names, batch dims, parameters (one frozen),
 * activation parameters, scale, concat/slice/select/reshape, neurons with columns, a
 * recurrent delay, several outputs and metadata. */
static otc_graph *sample_graph(void) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    float wv[12];
    for (int i = 0; i < 12; i++) wv[i] = 0.1f * (float)i - 0.55f;
    otc_id w = otc_param(g, "W", otc_shape_2d(3, 4), wv);
    otc_id b = otc_param(g, "b", otc_shape_1d(4), (float[]){0.25f, -0.5f, 0.0f, 1.0f / 3.0f});
    otc_graph_set_trainable(g, b, false);
    otc_id h = otc_matmul(g, x, w);
    otc_id hb = otc_add(g, h, otc_row_broadcast(g, b, h));
    otc_id t = otc_activation(g, OTC_OP_TANH, hb, 0.0f);
    otc_id lr = otc_activation(g, OTC_OP_LEAKY_RELU, t, 0.2f);
    otc_id e = otc_activation(g, OTC_OP_ELU, lr, 0.7f);
    otc_id s = otc_scale(g, e, 1.5f);
    otc_id sl = otc_slice(g, s, 1, 1, 2);
    otc_id sel = otc_select(g, s, 1, 0);
    otc_id c = otc_concat(g, 2, (otc_id[]){sl, x}, -1);
    otc_id n1 = otc_neuron(g, "n1", OTC_ACT_STEEP_SIGMOID, 0.3f, 0.9f, 2, (otc_id[]){c, x},
                           (int[]){4, 0}, (float[]){0.75f, -1.25f});
    otc_id d = otc_delay(g, "d", otc_shape_2d(OTC_BATCH, 1));
    otc_id n2 = otc_neuron(g, "n2", OTC_ACT_TANH, -0.1f, 1.0f, 2, (otc_id[]){n1, d}, (int[]){0, 0},
                           (float[]){1.5f, 0.5f});
    otc_id sm = otc_softmax(g, c);
    otc_id r = otc_reshape(g, sm, (otc_shape){3, {OTC_BATCH, 5, 1}});
    otc_id f = otc_flatten(g, r);
    otc_id dif = otc_sub(g, otc_neg(g, f), otc_mul(g, f, f));
    if (x < 0 || sel < 0 || n2 < 0 || dif < 0 || d < 0 ||
        otc_graph_set_input(g, d, 0, n2) != OTC_OK || otc_graph_mark_output(g, n2) ||
        otc_graph_set_agg(g, n1, OTC_AGG_MEDIAN) != OTC_OK || otc_graph_mark_output(g, dif) ||
        otc_graph_mark_output(g, sel) ||
        otc_graph_meta_set(g, "genome", "{\"nodes\":[1,2,3],\"fitness\":0.5}") ||
        otc_graph_meta_set(g, "training", "{\"epochs\":10,\"optimizer\":\"adam\"}")) {
        fprintf(stderr, "sample_graph: %s\n", otc_last_error());
        otc_graph_free(g);
        return NULL;
    }
    return g;
}

static bool same_bits(const float *a, const float *b, size_t n) {
    return n == 0 || memcmp(a, b, n * sizeof(float)) == 0;
}

/* Every field of every node, the parameter bits, outputs and metadata. */
static void check_same_graph(const otc_graph *a, const otc_graph *b) {
    REQUIRE(otc_graph_size(a) == otc_graph_size(b));
    for (int i = 0; i < otc_graph_size(a); i++) {
        const otc_node *x = otc_graph_node(a, i), *y = otc_graph_node(b, i);
        CHECK_MSG(x->op == y->op, "node %d op", i);
        CHECK_MSG((!x->name && !y->name) || (x->name && y->name && !strcmp(x->name, y->name)),
                  "node %d name", i);
        CHECK_MSG(otc_shape_equal(x->shape, y->shape), "node %d shape", i);
        REQUIRE(x->n_inputs == y->n_inputs);
        for (int k = 0; k < x->n_inputs; k++)
            CHECK_MSG(x->inputs[k] == y->inputs[k], "node %d input %d", i, k);
        if (x->op == OTC_OP_NEURON)
            for (int k = 0; k < x->n_inputs - 2; k++)
                CHECK_MSG(x->cols[k] == y->cols[k], "node %d col %d", i, k);
        CHECK_MSG(f32_bits(x->alpha) == f32_bits(y->alpha), "node %d alpha", i);
        CHECK_MSG(f32_bits(x->scale) == f32_bits(y->scale), "node %d scale", i);
        CHECK_MSG(x->act == y->act && x->agg == y->agg && x->axis == y->axis &&
                      x->start == y->start && x->len == y->len,
                  "node %d act/agg/axis/start/len", i);
        if (x->op == OTC_OP_PARAMETER) {
            REQUIRE(x->value && y->value && x->value->size == y->value->size);
            CHECK_MSG(same_bits(x->value->data, y->value->data, x->value->size),
                      "node %d parameter bits", i);
            CHECK_MSG(x->trainable == y->trainable, "node %d trainable", i);
        }
    }
    REQUIRE(otc_graph_output_count(a) == otc_graph_output_count(b));
    for (int i = 0; i < otc_graph_output_count(a); i++)
        CHECK(otc_graph_output(a, i) == otc_graph_output(b, i));
    REQUIRE(otc_graph_meta_count(a) == otc_graph_meta_count(b));
    for (int i = 0; i < otc_graph_meta_count(a); i++) {
        const char *key = otc_graph_meta_key(a, i);
        const char *vb = otc_graph_meta_get(b, key);
        CHECK_MSG(vb && !strcmp(otc_graph_meta_get(a, key), vb), "meta %s", key);
    }
}

static otc_graph *save_and_load(const otc_graph *g, const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/m.otm", dir);
    otc_graph *back = NULL;
    otc_status st = otc_model_save(g, path);
    CHECK_MSG(st == OTC_OK, "save: %s", otc_last_error());
    st = otc_model_load(path, &back);
    CHECK_MSG(st == OTC_OK, "load: %s", otc_last_error());
    return back;
}

/* ---- round trips ---- */

TEST(model_roundtrip_structure_and_bits) {
    char dir[64];
    make_tmpdir(dir);
    otc_graph *g = sample_graph();
    REQUIRE(g && dir[0]);
    otc_graph *back = save_and_load(g, dir);
    if (back) check_same_graph(g, back);
    CHECK(count_files(dir) == 1); /* no temporary left behind */
    otc_graph_free(back);
    otc_graph_free(g);
    rm_tmpdir(dir);
}

TEST(model_roundtrip_special_floats) {
    /* NaN payloads, signed zero, infinities and denormals survive bit for bit. */
    uint32_t bits[] = {0x7FC00001u, 0xFFA00000u, 0x80000000u, 0x00000000u, 0x7F800000u,
                       0xFF800000u, 0x00000001u, 0x807FFFFFu, 0x3F800000u, 0x7F7FFFFFu};
    float v[10];
    memcpy(v, bits, sizeof v);
    char dir[64];
    make_tmpdir(dir);
    otc_graph *g = otc_graph_new();
    REQUIRE(otc_param(g, "p", otc_shape_1d(10), v) == 0);
    REQUIRE(otc_param(g, NULL, otc_shape_scalar(), (float[]){-0.0f}) == 1);
    otc_graph *back = save_and_load(g, dir);
    REQUIRE(back);
    check_same_graph(g, back);
    CHECK(otc_graph_node(back, 1)->name == NULL);
    CHECK(otc_graph_node(back, 1)->shape.ndim == 0);
    otc_graph_free(back);
    otc_graph_free(g);
    rm_tmpdir(dir);
}

TEST(model_resave_is_byte_identical) {
    char dir[64], p1[128], p2[128];
    make_tmpdir(dir);
    snprintf(p1, sizeof p1, "%s/a.otm", dir);
    snprintf(p2, sizeof p2, "%s/b.otm", dir);
    otc_graph *g = sample_graph(), *back = NULL;
    REQUIRE(g);
    CHECK(otc_model_save(g, p1) == OTC_OK);
    CHECK(otc_model_load(p1, &back) == OTC_OK);
    REQUIRE(back);
    CHECK(otc_model_save(back, p2) == OTC_OK);
    size_t n1 = 0, n2 = 0;
    unsigned char *b1 = read_all(p1, &n1), *b2 = read_all(p2, &n2);
    REQUIRE(b1 && b2);
    CHECK(n1 == n2 && memcmp(b1, b2, n1) == 0);
    free(b1);
    free(b2);
    otc_graph_free(back);
    otc_graph_free(g);
    rm_tmpdir(dir);
}

TEST(model_empty_graph_roundtrips) {
    char dir[64];
    make_tmpdir(dir);
    otc_graph *g = otc_graph_new();
    otc_graph *back = save_and_load(g, dir);
    REQUIRE(back);
    CHECK(otc_graph_size(back) == 0 && otc_graph_output_count(back) == 0);
    otc_graph_free(back);
    otc_graph_free(g);
    rm_tmpdir(dir);
}

/* The bytes on disk, read with the independent reader above and cJSON. */
TEST(model_file_layout) {
    char dir[64], path[128];
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/m.otm", dir);
    otc_graph *g = sample_graph();
    REQUIRE(g);
    REQUIRE(otc_model_save(g, path) == OTC_OK);
    size_t len = 0;
    unsigned char *b = read_all(path, &len);
    REQUIRE(b && len > 40);
    CHECK(memcmp(b, "OTCMODEL", 8) == 0);
    CHECK(otm_ref_get_le(b + 8, 4) == 1 && otm_ref_get_le(b + 12, 4) == 0);
    uint64_t jlen = otm_ref_get_le(b + 16, 8);
    REQUIRE(jlen < len);
    uint64_t nf = otm_ref_get_le(b + 24 + jlen, 8);
    CHECK(len == 24 + jlen + 8 + 4 * nf + 4);
    CHECK(otm_ref_get_le(b + len - 4, 4) == otm_ref_crc32(b, len - 4));

    cJSON *root = cJSON_ParseWithLength((const char *)b + 24, (size_t)jlen);
    REQUIRE(root);
    CHECK(!strcmp(cJSON_GetObjectItem(root, "format")->valuestring, "otm"));
    CHECK(cJSON_GetObjectItem(root, "version")->valuedouble == 1);
    const cJSON *nodes = cJSON_GetObjectItem(root, "nodes");
    CHECK(cJSON_GetArraySize(nodes) == otc_graph_size(g));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(root, "outputs")) == 3);
    const cJSON *genome = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "meta"), "genome");
    CHECK(cJSON_IsObject(genome) && cJSON_GetObjectItem(genome, "fitness")->valuedouble == 0.5);
    /* Each parameter's floats sit at its offset, little-endian. */
    size_t total = 0;
    const cJSON *jn;
    cJSON_ArrayForEach(jn, nodes) {
        int id = (int)cJSON_GetObjectItem(jn, "id")->valuedouble;
        const otc_node *n = otc_graph_node(g, id);
        CHECK(!strcmp(cJSON_GetObjectItem(jn, "op")->valuestring, otc_op_get(n->op)->name));
        if (n->op != OTC_OP_PARAMETER) continue;
        uint64_t off = (uint64_t)cJSON_GetObjectItem(jn, "offset")->valuedouble;
        REQUIRE(off + n->value->size <= nf);
        for (size_t k = 0; k < n->value->size; k++)
            CHECK(otm_ref_get_le(b + 32 + jlen + 4 * (off + k), 4) == f32_bits(n->value->data[k]));
        CHECK(cJSON_IsBool(cJSON_GetObjectItem(jn, "trainable")));
        total += n->value->size;
    }
    CHECK(total == nf);
    const cJSON *x0 = cJSON_GetArrayItem(nodes, 0);
    CHECK(!strcmp(cJSON_GetObjectItem(x0, "name")->valuestring, "x"));
    CHECK(cJSON_GetArrayItem(cJSON_GetObjectItem(x0, "shape"), 0)->valuedouble == -1);
    cJSON_Delete(root);
    free(b);
    otc_graph_free(g);
    rm_tmpdir(dir);
}

/* ---- a hand-written file: the format as documented, loaded and run ---- */

/* h = tanh(b + w0 * x[:,1] + w1 * d), y = 2h, d = y of the previous step. */
static const char base_json[] =
    "{\"format\":\"otm\",\"version\":1,\"nodes\":["
    "{\"id\":0,\"op\":\"input\",\"name\":\"x\",\"shape\":[-1,2],\"inputs\":[]},"
    "{\"id\":1,\"op\":\"parameter\",\"name\":\"w\",\"shape\":[2],\"inputs\":[],"
    "\"trainable\":true,\"offset\":0},"
    "{\"id\":2,\"op\":\"parameter\",\"name\":\"b\",\"shape\":[1],\"inputs\":[],"
    "\"trainable\":false,\"offset\":2},"
    "{\"id\":3,\"op\":\"delay\",\"name\":\"d\",\"shape\":[-1,1],\"inputs\":[5]},"
    "{\"id\":4,\"op\":\"neuron\",\"name\":\"h\",\"shape\":[-1,1],\"inputs\":[1,2,0,3],"
    "\"cols\":[1,0],\"act\":\"tanh\",\"alpha\":0,\"scale\":1},"
    "{\"id\":5,\"op\":\"scale\",\"name\":\"y\",\"shape\":[-1,1],\"inputs\":[4],\"scale\":2}"
    "],\"outputs\":[5],\"meta\":{\"genome\":{\"nodes\":3}}}";
static const float base_floats[3] = {0.5f, -0.25f, 0.125f};

static unsigned char *base_file(size_t *len) {
    return otm_ref_pack(base_json, strlen(base_json), base_floats, 3, len);
}

TEST(model_loads_handwritten_file) {
    size_t len;
    unsigned char *b = base_file(&len);
    otc_graph *g = NULL;
    otc_status st = otc_model_load_buffer(b, len, "hand.otm", &g);
    free(b);
    CHECK_MSG(st == OTC_OK, "%s", otc_last_error());
    REQUIRE(g);
    REQUIRE(otc_graph_size(g) == 6);
    const otc_node *d = otc_graph_node(g, 3), *h = otc_graph_node(g, 4);
    CHECK(d->op == OTC_OP_DELAY && d->inputs[0] == 5);
    CHECK(h->op == OTC_OP_NEURON && h->act == OTC_ACT_TANH && h->cols[0] == 1 && h->cols[1] == 0 &&
          h->scale == 1.0f);
    CHECK(otc_graph_node(g, 5)->scale == 2.0f);
    CHECK(otc_graph_param(g, 1)->data[1] == -0.25f);
    CHECK(otc_graph_node(g, 1)->trainable && !otc_graph_node(g, 2)->trainable);
    CHECK(otc_graph_find(g, "y") == 5 && otc_graph_output(g, 0) == 5);
    const char *genome = otc_graph_meta_get(g, "genome");
    CHECK(genome && !strcmp(genome, "{\"nodes\":3}"));
    otc_graph_free(g);
}

TEST(model_handwritten_forward_matches_hand_computation) {
    size_t len;
    unsigned char *b = base_file(&len);
    otc_graph *g = NULL;
    otc_status st = otc_model_load_buffer(b, len, "hand.otm", &g);
    free(b);
    REQUIRE(st == OTC_OK);
    otc_executor *ex = otc_interpreter_new(g, &(otc_exec_options){.inference = true});
    CHECK_MSG(ex, "%s", otc_last_error());
    if (ex) {
        const float x[4] = {9.0f, 1.0f, -4.0f, -2.0f}; /* column 0 is ignored */
        double y[2] = {0, 0};
        for (int step = 0; step < 3; step++) {
            REQUIRE(otc_exec_set_input(ex, 0, x, 2) == OTC_OK);
            REQUIRE(otc_exec_forward(ex) == OTC_OK);
            const float *out = NULL;
            REQUIRE(otc_exec_value(ex, 5, &out, NULL) == OTC_OK);
            for (int r = 0; r < 2; r++) {
                y[r] = 2.0 * tanh(0.125 + 0.5 * x[2 * r + 1] - 0.25 * y[r]);
                CHECK_NEAR(out[r], y[r], 1e-6);
            }
        }
        otc_exec_free(ex);
    }
    otc_graph_free(g);
}

/* The interpreter gives the same bits before and after a save/load, over recurrent steps. */
TEST(model_roundtrip_forward_bit_identical) {
    char dir[64];
    make_tmpdir(dir);
    otc_graph *g = sample_graph();
    REQUIRE(g);
    otc_graph *back = save_and_load(g, dir);
    REQUIRE(back);
    const otc_exec_options opt = {.inference = true};
    otc_executor *ea = otc_interpreter_new(g, &opt), *eb = otc_interpreter_new(back, &opt);
    CHECK_MSG(ea && eb, "%s", otc_last_error());
    float x[15];
    for (int i = 0; i < 15; i++) x[i] = 0.37f * (float)i - 2.0f;
    for (int step = 0; ea && eb && step < 3; step++) {
        REQUIRE(otc_exec_set_input(ea, 0, x, 5) == OTC_OK);
        REQUIRE(otc_exec_set_input(eb, 0, x, 5) == OTC_OK);
        REQUIRE(otc_exec_forward(ea) == OTC_OK && otc_exec_forward(eb) == OTC_OK);
        for (int o = 0; o < otc_graph_output_count(g); o++) {
            const float *va, *vb;
            otc_shape sa, sb;
            otc_id id = otc_graph_output(g, o);
            REQUIRE(otc_exec_value(ea, id, &va, &sa) == OTC_OK);
            REQUIRE(otc_exec_value(eb, id, &vb, &sb) == OTC_OK);
            REQUIRE(otc_shape_equal(sa, sb));
            CHECK_MSG(same_bits(va, vb, otc_shape_size(sa)), "step %d output %d", step, o);
        }
    }
    otc_exec_free(ea);
    otc_exec_free(eb);
    otc_graph_free(back);
    otc_graph_free(g);
    rm_tmpdir(dir);
}

/* ---- damaged and hostile files ---- */

/* Must fail, leave *out NULL, and say which file. */
static void expect_reject(const char *label, const unsigned char *b, size_t len,
                          const char *needle) {
    otc_fail(OTC_OK, "%s", "");
    otc_graph *g = NULL;
    otc_status st = otc_model_load_buffer(b, len, "bad.otm", &g);
    const char *msg = otc_last_error();
    CHECK_MSG(st != OTC_OK, "case %s: loaded", label);
    CHECK_MSG(g == NULL, "case %s: graph returned on error", label);
    CHECK_MSG(strncmp(msg, "bad.otm: ", 9) == 0 && strlen(msg) > 9,
              "case %s: message '%s' does not name the file", label, msg);
    if (getenv("OTC_TEST_VERBOSE")) fprintf(stderr, "%-28s %s\n", label, msg);
    if (needle)
        CHECK_MSG(strstr(msg, needle) != NULL, "case %s: message '%s' lacks '%s'", label, msg,
                  needle);
    otc_graph_free(g);
}

typedef struct {
    const char *label;
    const char *from; /* replaced once in base_json; NULL: `to` is the whole JSON */
    const char *to;
    const char *needle; /* expected in the message */
} json_case;

static const json_case json_cases[] = {
    {"unknown_op", "\"op\":\"scale\"", "\"op\":\"scal\"", "unknown op \"scal\""},
    {"unknown_act", "\"act\":\"tanh\"", "\"act\":\"tanhh\"", "unknown activation"},
    {"unknown_agg", "\"act\":\"tanh\"", "\"act\":\"tanh\",\"agg\":\"avg\"",
     "unknown aggregation \"avg\""},
    {"agg_not_a_string", "\"act\":\"tanh\"", "\"act\":\"tanh\",\"agg\":3",
     "field \"agg\": expected a string"},
    {"wrong_arity", "\"inputs\":[4],", "\"inputs\":[4,4],", "node 5: op \"scale\" takes"},
    {"delay_arity", "\"inputs\":[5]}", "\"inputs\":[5,5]}", "node 3: op \"delay\" takes"},
    {"input_out_of_range", "\"inputs\":[4],", "\"inputs\":[9],",
     "node 5: input 0 refers to node 9, but there are 6 nodes"},
    {"input_negative", "\"inputs\":[4],", "\"inputs\":[-1],", "refers to node -1"},
    {"input_huge", "\"inputs\":[4],", "\"inputs\":[1e30],", "not an integer"},
    {"delay_input_out_of_range", "\"inputs\":[5]}", "\"inputs\":[6]}",
     "node 3: input 0 refers to node 6"},
    {"self_reference", "\"inputs\":[4],", "\"inputs\":[5],", "node 5: input 0 refers to the node"},
    {"cycle_without_delay", "\"inputs\":[1,2,0,3]", "\"inputs\":[1,2,0,5]", "comes later"},
    {"delay_shape_mismatch", "\"shape\":[-1,1],\"inputs\":[5]", "\"shape\":[-1,2],\"inputs\":[5]",
     "node 3"},
    {"duplicate_names", "\"name\":\"b\"", "\"name\":\"w\"", "node 2: name \"w\" is already used"},
    {"empty_name", "\"name\":\"b\"", "\"name\":\"\"", "empty"},
    {"offset_out_of_range", "\"offset\":2", "\"offset\":3", "outside"},
    {"offset_negative", "\"offset\":2", "\"offset\":-1", "\"offset\""},
    {"offset_huge", "\"offset\":2", "\"offset\":1e300", "\"offset\""},
    {"overlapping_offsets", "\"offset\":2", "\"offset\":1", "overlaps"},
    {"missing_id", "{\"id\":5,", "{", "node 5: missing required field \"id\""},
    {"missing_op", "\"op\":\"scale\",", "", "missing required field \"op\""},
    {"missing_shape", "\"shape\":[-1,1],\"inputs\":[4]", "\"inputs\":[4]",
     "missing required field \"shape\""},
    {"missing_inputs", ",\"inputs\":[4]", "", "missing required field \"inputs\""},
    {"missing_offset", ",\"offset\":2", "", "missing required field \"offset\""},
    {"missing_act", ",\"act\":\"tanh\"", "", "missing required field \"act\""},
    {"missing_cols", "\"cols\":[1,0],", "", "missing required field \"cols\""},
    {"missing_scale", ",\"scale\":2", "", "missing required field \"scale\""},
    {"missing_outputs", "\"outputs\":[5],", "", "missing required field \"outputs\""},
    {"missing_nodes", "\"nodes\":[", "\"nodez\":[", "missing required field \"nodes\""},
    {"missing_format", "\"format\":\"otm\",", "", "\"format\""},
    {"type_id_string", "\"id\":5", "\"id\":\"5\"", "expected an integer, got a string"},
    {"type_id_fraction", "\"id\":5", "\"id\":5.5", "not an integer"},
    {"type_op_number", "\"op\":\"scale\"", "\"op\":7", "expected a string"},
    {"type_name_number", "\"name\":\"x\"", "\"name\":7", "expected a string"},
    {"type_shape_string", "\"shape\":[2]", "\"shape\":\"2\"", "expected an array"},
    {"type_shape_entry", "\"shape\":[2]", "\"shape\":[true]", "expected an integer"},
    {"type_inputs_object", "\"inputs\":[4],", "\"inputs\":{},", "expected an array"},
    {"type_trainable_number", "\"trainable\":true", "\"trainable\":1", "expected a boolean"},
    {"type_alpha_string", "\"alpha\":0", "\"alpha\":\"0\"", "expected a number"},
    {"type_scale_null", "\"scale\":2", "\"scale\":null", "expected a number, got null"},
    {"scale_overflows_float", "\"scale\":2", "\"scale\":1e300", "float range"},
    {"type_cols_entry", "\"cols\":[1,0]", "\"cols\":[1,\"0\"]", "expected an integer"},
    {"type_meta_array", "\"meta\":{\"genome\":{\"nodes\":3}}", "\"meta\":[1]",
     "expected an object"},
    {"type_node_number",
     "{\"id\":5,\"op\":\"scale\",\"name\":\"y\",\"shape\":[-1,1],"
     "\"inputs\":[4],\"scale\":2}",
     "5", "node 5: expected a JSON object"},
    {"root_array", NULL, "[1,2,3]", "expected an object"},
    {"root_string", NULL, "\"otm\"", "expected an object"},
    {"nodes_object", NULL, "{\"format\":\"otm\",\"version\":1,\"nodes\":{},\"outputs\":[]}",
     "expected an array"},
    {"id_out_of_order", "\"id\":5", "\"id\":7", "ids must run"},
    {"negative_dim", "\"shape\":[2]", "\"shape\":[-2]", "dimension 0 is -2"},
    {"zero_dim", "\"shape\":[2]", "\"shape\":[0]", "dimension 0 is 0"},
    {"huge_dim", "\"shape\":[2]", "\"shape\":[16777217]", "dimension 0 is 16777217"},
    {"dim_beyond_int", "\"shape\":[2]", "\"shape\":[1e12]", "not an integer"},
    {"too_many_elements", "\"shape\":[-1,2],", "\"shape\":[-1,2,16777216,16777216],", "elements"},
    {"batch_not_leading", "\"shape\":[-1,2]", "\"shape\":[2,-1]", "only the leading"},
    {"too_many_dims", "\"shape\":[-1,2]", "\"shape\":[-1,2,1,1,1]", "more than 4 dimensions"},
    {"batched_parameter", "\"shape\":[2],", "\"shape\":[-1,2],", "batch dimension"},
    {"shape_mismatch", "\"shape\":[-1,1],\"inputs\":[4]", "\"shape\":[-1,3],\"inputs\":[4]",
     "but its inputs give [B,1]"},
    {"cols_count", "\"cols\":[1,0]", "\"cols\":[1]", "\"cols\" has 1 entries"},
    {"col_out_of_range", "\"cols\":[1,0]", "\"cols\":[2,0]", "node 4"},
    {"col_negative", "\"cols\":[1,0]", "\"cols\":[-1,0]", "\"cols\""},
    {"output_out_of_range", "\"outputs\":[5]", "\"outputs\":[6]",
     "output 0 refers to node 6, but there are 6 nodes"},
    {"output_negative", "\"outputs\":[5]", "\"outputs\":[-3]", "output 0 refers to node -3"},
    {"bad_format", "\"format\":\"otm\"", "\"format\":\"onnx\"", "\"format\""},
    {"version_mismatch", "\"version\":1", "\"version\":2", "\"version\" is 2"},
    {"meta_duplicate_key", "\"meta\":{\"genome\":{\"nodes\":3}}", "\"meta\":{\"a\":1,\"a\":2}",
     "duplicate key"},
    {"invalid_json", "\"outputs\":[5]", "\"outputs\":[5,]", "not valid JSON"},
    {"json_trailing_text", "{\"nodes\":3}}}", "{\"nodes\":3}}} x",
     "data after the end of the JSON document (byte"},
    {"json_two_values", "{\"nodes\":3}}}", "{\"nodes\":3}}}{}",
     "data after the end of the JSON document (byte"},
    /* cJSON would keep "x" of "x\u0000y": a name that is not the file's */
    {"json_nul_escape", "\"name\":\"x\"", "\"name\":\"x\\u0000y\"", "a string holds \\u0000"},
};

static char *replace_once(const char *s, const char *from, const char *to, int *hits) {
    *hits = 0;
    for (const char *p = strstr(s, from); p; p = strstr(p + 1, from)) (*hits)++;
    const char *at = strstr(s, from);
    if (!at) return NULL;
    size_t n = strlen(s) - strlen(from) + strlen(to);
    char *out = malloc(n + 1);
    size_t pre = (size_t)(at - s);
    memcpy(out, s, pre);
    strcpy(out + pre, to);
    strcat(out, at + strlen(from));
    return out;
}

TEST(model_rejects_bad_json) {
    for (size_t i = 0; i < sizeof json_cases / sizeof *json_cases; i++) {
        const json_case *c = &json_cases[i];
        int hits = 1;
        char *json = c->from ? replace_once(base_json, c->from, c->to, &hits) : strdup(c->to);
        CHECK_MSG(json && hits == 1, "case %s: pattern found %d times", c->label, hits);
        if (!json) continue;
        size_t len;
        unsigned char *b = otm_ref_pack(json, strlen(json), base_floats, 3, &len);
        expect_reject(c->label, b, len, c->needle);
        free(b);
        free(json);
    }
}

TEST(model_rejects_unused_parameter_data) {
    /* A fourth float no parameter claims. */
    size_t len;
    const float four[4] = {0.5f, -0.25f, 0.125f, 7.0f};
    unsigned char *b = otm_ref_pack(base_json, strlen(base_json), four, 4, &len);
    expect_reject("unused_floats", b, len, "parameters use 3");
    free(b);
}

TEST(model_rejects_deep_nesting) {
    /* Far past cJSON's nesting limit: an error, not a stack overflow. */
    size_t depth = 100000, n = 2 * depth + 64;
    char *json = malloc(n);
    strcpy(json, "{\"format\":\"otm\",\"meta\":");
    size_t at = strlen(json);
    memset(json + at, '[', depth);
    memset(json + at + depth, ']', depth);
    strcpy(json + at + 2 * depth, "}");
    size_t len;
    unsigned char *b = otm_ref_pack(json, strlen(json), NULL, 0, &len);
    expect_reject("deep_nesting", b, len, "not valid JSON");
    free(b);
    free(json);
}

TEST(model_rejects_nul_in_json) {
    size_t jlen = strlen(base_json);
    char *json = malloc(jlen);
    memcpy(json, base_json, jlen);
    json[10] = '\0';
    size_t len;
    unsigned char *b = otm_ref_pack(json, jlen, base_floats, 3, &len);
    expect_reject("nul_in_json", b, len, "NUL byte");
    free(b);
    free(json);
}

/* Byte-level damage to a valid file: each case edits a copy, `crc` says whether to re-seal
 * the CRC (so a later check, not the CRC, must catch it). */
TEST(model_rejects_damaged_bytes) {
    size_t len;
    unsigned char *base = base_file(&len);
    const size_t jlen = strlen(base_json), count_at = 24 + jlen, data_at = 32 + jlen;
    struct {
        const char *label;
        int kind;
        size_t at;
        uint64_t value;
        int bytes;
        const char *needle;
    } cases[] = {
        /* kind 0: set a little-endian field and re-seal; 1: xor a byte (no re-seal);
           2: truncate to `at` bytes; 3: append `value` garbage bytes */
        {"magic_flip", 1, 0, 0x01, 1, "bad magic"},
        {"magic_last_byte", 1, 7, 0x20, 1, "bad magic"},
        {"version_2", 0, 8, 2, 4, "version 2"},
        {"version_0", 0, 8, 0, 4, "version 0"},
        {"version_high_bit", 1, 11, 0x80, 1, "version"},
        {"reserved_nonzero", 0, 12, 1, 4, "reserved"},
        {"json_length_huge", 0, 16, UINT64_MAX, 8, "exceeds"},
        {"json_length_2^63", 0, 16, (uint64_t)1 << 63, 8, "exceeds"},
        {"json_length_plus_1", 0, 16, jlen + 1, 8, NULL},
        {"json_length_minus_1", 0, 16, jlen - 1, 8, NULL},
        {"json_length_zero", 0, 16, 0, 8, NULL},
        {"float_count_huge", 0, count_at, UINT64_MAX, 8, "does not fit"},
        {"float_count_wraps", 0, count_at, ((uint64_t)1 << 62) + 3, 8, "does not fit"},
        {"float_count_plus_1", 0, count_at, 4, 8, "does not fit"},
        {"float_count_minus_1", 0, count_at, 2, 8, "trailing"},
        {"float_count_zero", 0, count_at, 0, 8, "trailing"},
        {"json_byte_flip", 1, 40, 0x20, 1, "CRC mismatch"},
        {"json_brace_flip", 1, 24, 0x01, 1, "CRC mismatch"},
        {"count_byte_flip", 1, count_at + 7, 0x01, 1, "does not fit"},
        {"data_byte_flip", 1, data_at + 5, 0x01, 1, "CRC mismatch"},
        {"data_sign_flip", 1, data_at + 11, 0x80, 1, "CRC mismatch"},
        {"crc_byte_flip", 1, len - 1, 0x40, 1, "CRC mismatch"},
        {"crc_low_byte_inverted", 1, len - 4, 0xFF, 1, "CRC mismatch"},
        {"empty", 2, 0, 0, 0, "file is empty"},
        {"magic_only_part", 2, 5, 0, 0, "bad magic"},
        {"header_truncated", 2, 20, 0, 0, "truncated in the header"},
        {"json_truncated", 2, 24 + jlen / 2, 0, 0, "exceeds"},
        {"count_missing", 2, 24 + jlen, 0, 0, "no parameter count"},
        {"count_truncated", 2, 24 + jlen + 4, 0, 0, "no parameter count"},
        {"data_truncated", 2, data_at + 6, 0, 0, NULL},
        {"crc_missing", 2, len - 4, 0, 0, NULL},
        {"crc_half", 2, len - 2, 0, 0, NULL},
        {"trailing_byte", 3, 0, 1, 0, "trailing"},
        {"trailing_float", 3, 0, 4, 0, "trailing"},
        {"trailing_kilobyte", 3, 0, 1024, 0, "trailing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        unsigned char *b = malloc(len + 1024);
        memcpy(b, base, len);
        size_t n = len;
        switch (cases[i].kind) {
        case 0:
            otm_ref_put_le(b + cases[i].at, cases[i].value, cases[i].bytes);
            otm_ref_refresh_crc(b, n);
            break;
        case 1:
            b[cases[i].at] ^= (unsigned char)cases[i].value;
            break;
        case 2:
            n = cases[i].at;
            break;
        case 3:
            memset(b + n, 0xAB, cases[i].value);
            n += cases[i].value;
            break;
        }
        expect_reject(cases[i].label, b, n, cases[i].needle);
        free(b);
    }
    free(base);
}

TEST(model_rejects_every_truncation) {
    size_t len;
    unsigned char *b = base_file(&len);
    for (size_t n = 0; n < len; n++) {
        char label[48];
        snprintf(label, sizeof label, "truncated_to_%zu", n);
        /* A copy of exactly n bytes, so ASan sees any read past the end. */
        unsigned char *t = malloc(n ? n : 1);
        memcpy(t, b, n);
        expect_reject(label, t, n, NULL);
        free(t);
    }
    free(b);
}

TEST(model_rejects_every_bit_flip) {
    /* CRC-32 catches every single-bit error; header fields fail even earlier. */
    size_t len;
    unsigned char *b = base_file(&len);
    for (size_t i = 0; i < len; i++)
        for (int bit = 0; bit < 8; bit++) {
            char label[48];
            snprintf(label, sizeof label, "byte_%zu_bit_%d", i, bit);
            b[i] ^= (unsigned char)(1u << bit);
            expect_reject(label, b, len, NULL);
            b[i] ^= (unsigned char)(1u << bit);
        }
    free(b);
}

TEST(model_load_bad_paths) {
    char dir[64], path[128];
    make_tmpdir(dir);
    REQUIRE(dir[0]);
    otc_graph *g = NULL;
    snprintf(path, sizeof path, "%s/missing.otm", dir);
    CHECK(otc_model_load(path, &g) == OTC_ERR_IO && g == NULL);
    CHECK(strstr(otc_last_error(), "missing.otm") != NULL);
    CHECK(otc_model_load(dir, &g) != OTC_OK && g == NULL);
    CHECK(strstr(otc_last_error(), dir) != NULL);
    snprintf(path, sizeof path, "%s/empty.otm", dir);
    write_bytes(path, "", 0);
    CHECK(otc_model_load(path, &g) == OTC_ERR_FORMAT && g == NULL);
    CHECK(strstr(otc_last_error(), "empty.otm: file is empty") != NULL);
    size_t len;
    unsigned char *b = base_file(&len);
    snprintf(path, sizeof path, "%s/short.otm", dir);
    write_bytes(path, b, len - 1);
    CHECK(otc_model_load(path, &g) == OTC_ERR_FORMAT && g == NULL);
    CHECK(strstr(otc_last_error(), "short.otm: ") != NULL);
    snprintf(path, sizeof path, "%s/good.otm", dir);
    write_bytes(path, b, len);
    CHECK(otc_model_load(path, &g) == OTC_OK && g != NULL);
    otc_graph_free(g);
    free(b);
    CHECK(otc_model_load(NULL, &g) == OTC_ERR_ARG);
    CHECK(otc_model_load_buffer(NULL, 0, NULL, &g) == OTC_ERR_FORMAT && g == NULL);
    CHECK(otc_model_load_buffer("x", 1, "buf", NULL) == OTC_ERR_ARG);
    rm_tmpdir(dir);
}

/* ---- saving ---- */

TEST(model_save_replaces_atomically) {
    char dir[64], path[128];
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/m.otm", dir);
    otc_graph *a = otc_graph_new(), *b = sample_graph(), *back = NULL;
    REQUIRE(b);
    otc_param(a, "only", otc_shape_1d(2), (float[]){1, 2});
    CHECK(otc_model_save(a, path) == OTC_OK);
    CHECK(otc_model_save(b, path) == OTC_OK);
    CHECK(count_files(dir) == 1);
    CHECK(otc_model_load(path, &back) == OTC_OK);
    if (back) check_same_graph(b, back);
    otc_graph_free(back);
    otc_graph_free(a);
    otc_graph_free(b);
    rm_tmpdir(dir);
}

TEST(model_save_failure_keeps_existing_file) {
    char dir[64], path[128], sub[128];
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/m.otm", dir);
    otc_graph *g = sample_graph();
    REQUIRE(g);
    REQUIRE(otc_model_save(g, path) == OTC_OK);
    size_t n0 = 0, n1 = 0;
    unsigned char *before = read_all(path, &n0);

    /* Metadata that is not JSON cannot be saved: nothing is written. */
    otc_graph_meta_set(g, "broken", "{not json");
    CHECK(otc_model_save(g, path) != OTC_OK);
    CHECK(strstr(otc_last_error(), "m.otm") && strstr(otc_last_error(), "broken"));
    /* A directory in the way: the rename fails, the temporary is removed. */
    snprintf(sub, sizeof sub, "%s/sub", dir);
    mkdir(sub, 0700);
    char inner[160];
    snprintf(inner, sizeof inner, "%s/x", sub);
    write_bytes(inner, "x", 1); /* a non-empty directory cannot be replaced */
    otc_graph *small = otc_graph_new();
    CHECK(otc_model_save(small, sub) != OTC_OK);
    CHECK(strlen(otc_last_error()) > 0);
    /* No such directory. */
    snprintf(sub, sizeof sub, "%s/nodir/m.otm", dir);
    CHECK(otc_model_save(small, sub) == OTC_ERR_IO);
    CHECK(otc_model_save(NULL, path) == OTC_ERR_ARG);

    unsigned char *after = read_all(path, &n1);
    CHECK(before && after && n0 == n1 && memcmp(before, after, n0) == 0);
    CHECK(count_files(dir) == 2); /* m.otm and sub: no temporaries */
    free(before);
    free(after);
    otc_graph_free(small);
    otc_graph_free(g);
    rm_tmpdir(dir);
}
