/* The limits in otc/limits.h and the inputs near them: files and graphs far larger than
 * usual (100,000 metadata keys, 20,000-node chains, one node past OTC_MAX_NODES, a
 * neat-python network of 65,536 input keys and 500,000 connections) load,
 * compile or are refused with a message naming the limit. The ctest TIMEOUT (60 s, set in
 * test_limits_cli.cmake) catches a return to quadratic work; nothing here times itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "otm_ref.h"
#include "otc/compiler.h"
#include "otc/data.h"
#include "otc/neat_python.h"
#include "otc/otc.h"
#include "otc/render_c.h"

static bool contains(const char *s, const char *needle) {
    return s && strstr(s, needle) != NULL;
}

/* x [B,4] -> relu -> relu ... : n nodes, each named when `named`. */
static otc_graph *chain(int n, bool named) {
    otc_graph *g = otc_graph_new();
    otc_id prev = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 4));
    for (int i = 1; i < n && prev >= 0; i++) {
        prev = otc_activation(g, i % 2 ? OTC_OP_RELU : OTC_OP_TANH, prev, 0);
        char name[32];
        snprintf(name, sizeof name, "n%d", i);
        if (named && prev >= 0 && otc_graph_set_name(g, prev, name) != OTC_OK) prev = -1;
    }
    if (prev < 0 || otc_graph_mark_output(g, prev) != OTC_OK) {
        otc_graph_free(g);
        return NULL;
    }
    return g;
}

TEST(limits_100000_metadata_keys_save_and_load) {
    otc_graph *g = chain(2, true);
    REQUIRE(g);
    char key[32], val[32];
    for (int i = 0; i < 100000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        snprintf(val, sizeof val, "%d", 3 * i);
        REQUIRE(otc_graph_meta_set(g, key, val) == OTC_OK);
    }
    CHECK(otc_graph_meta_set(g, "k77", "\"again\"") == OTC_OK); /* replaces, adds no key */
    CHECK(otc_graph_meta_count(g) == 100000);
    char path[] = "/tmp/otc_limits_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    fclose(fdopen(fd, "w"));
    REQUIRE(otc_model_save(g, path) == OTC_OK);
    otc_graph_free(g);
    otc_graph *h = NULL;
    otc_status st = otc_model_load(path, &h);
    remove(path);
    if (st != OTC_OK) fprintf(stderr, "%s\n", otc_last_error());
    REQUIRE(st == OTC_OK && h);
    CHECK(otc_graph_meta_count(h) == 100000);
    CHECK(!strcmp(otc_graph_meta_get(h, "k99999"), "299997"));
    CHECK(!strcmp(otc_graph_meta_get(h, "k77"), "\"again\""));
    CHECK(!strcmp(otc_graph_meta_key(h, 12345), "k12345")); /* file order kept */
    CHECK(otc_graph_meta_get(h, "k100000") == NULL);
    otc_graph_free(h);
}

/* Duplicate metadata keys in a file are still refused, by the key. */
TEST(limits_duplicate_metadata_key_refused) {
    const char json[] = "{\"format\":\"otm\",\"version\":1,\"nodes\":[{\"id\":0,\"op\":\"input\","
                        "\"name\":\"x\",\"shape\":[-1,1],\"inputs\":[]}],\"outputs\":[0],"
                        "\"meta\":{\"a\":1,\"b\":2,\"a\":3}}";
    size_t len;
    unsigned char *b = otm_ref_pack(json, sizeof json - 1, NULL, 0, &len);
    otc_graph *g = NULL;
    CHECK(otc_model_load_buffer(b, len, "dup.otm", &g) == OTC_ERR_FORMAT && !g);
    CHECK_MSG(contains(otc_last_error(), "duplicate key \"a\""), "%s", otc_last_error());
    free(b);
}

/* One node past OTC_MAX_NODES: refused by the count, before a node is parsed or built. */
TEST(limits_one_node_past_max_nodes_refused) {
    const int n = OTC_MAX_NODES + 1;
    size_t cap = (size_t)n * 96 + 256, o = 0; /* each node is under 80 bytes */
    char *json = malloc(cap);
    REQUIRE(json);
    o += (size_t)snprintf(json + o, cap - o,
                          "{\"format\":\"otm\",\"version\":1,\"nodes\":[{\"id\":0,\"op\":"
                          "\"input\",\"name\":\"x\",\"shape\":[-1,1],\"inputs\":[]}");
    for (int i = 1; i < n; i++)
        o += (size_t)snprintf(json + o, cap - o,
                              ",{\"id\":%d,\"op\":\"relu\",\"shape\":[-1,1],\"inputs\":[%d],"
                              "\"alpha\":0}",
                              i, i - 1);
    o += (size_t)snprintf(json + o, cap - o, "],\"outputs\":[%d]}", n - 1);
    size_t len;
    unsigned char *b = otm_ref_pack(json, o, NULL, 0, &len);
    free(json);
    REQUIRE(b);
    otc_graph *g = NULL;
    CHECK(otc_model_load_buffer(b, len, "big.otm", &g) == OTC_ERR_FORMAT && !g);
    const char *msg = otc_last_error();
    CHECK_MSG(contains(msg, "big.otm") && contains(msg, "1048576") &&
                  contains(msg, "OTC_MAX_NODES"),
              "%s", msg);
    free(b);
}

TEST(limits_node_name_longer_than_max_refused) {
    otc_graph *g = otc_graph_new();
    char *name = malloc(OTC_MAX_NAME_LEN + 2);
    REQUIRE(name);
    memset(name, 'a', OTC_MAX_NAME_LEN);
    name[OTC_MAX_NAME_LEN] = '\0';
    CHECK(otc_input(g, name, otc_shape_2d(OTC_BATCH, 1)) == 0); /* exactly the limit */
    name[OTC_MAX_NAME_LEN] = 'a';
    name[OTC_MAX_NAME_LEN + 1] = '\0';
    CHECK(otc_input(g, name, otc_shape_2d(OTC_BATCH, 1)) == -1);
    CHECK_MSG(contains(otc_last_error(), "OTC_MAX_NAME_LEN"), "%s", otc_last_error());
    CHECK(otc_graph_set_name(g, 0, name) == OTC_ERR_ARG);
    free(name);
    otc_graph_free(g);
}

/* The name index follows renames, truncation and clones. */
TEST(limits_graph_names_follow_rename_truncate_and_clone) {
    otc_graph *g = chain(6, true);
    REQUIRE(g);
    CHECK(otc_graph_find(g, "n3") == 3);
    CHECK(otc_graph_set_name(g, 3, "three") == OTC_OK);
    CHECK(otc_graph_find(g, "n3") == -1 && otc_graph_find(g, "three") == 3);
    CHECK(otc_graph_set_name(g, 2, "three") == OTC_ERR_ARG); /* taken */
    CHECK(otc_graph_set_name(g, 2, NULL) == OTC_OK && otc_graph_find(g, "n2") == -1);
    CHECK(otc_graph_set_name(g, 1, "n2") == OTC_OK && otc_graph_find(g, "n2") == 1);
    CHECK(otc_graph_truncate(g, 4) == OTC_OK);
    CHECK(otc_graph_find(g, "n5") == -1 && otc_graph_find(g, "n4") == -1);
    CHECK(otc_graph_find(g, "three") == 3);
    otc_id again = otc_activation(g, OTC_OP_RELU, 3, 0);
    CHECK(again == 4 && otc_graph_set_name(g, again, "n5") == OTC_OK);
    CHECK(otc_graph_find(g, "n5") == 4);
    otc_graph *c = otc_graph_clone(g);
    REQUIRE(c);
    CHECK(otc_graph_find(c, "three") == 3 && otc_graph_find(c, "n2") == 1 &&
          otc_graph_find(c, "x") == 0 && otc_graph_find(c, "n3") == -1);
    otc_graph_free(c);
    otc_graph_free(g);
}

/* 20,000 named nodes: built (each name checked unique), saved, loaded, every name found. */
TEST(limits_20000_named_nodes_load_and_find) {
    otc_graph *g = chain(20000, true);
    REQUIRE(g);
    char path[] = "/tmp/otc_limits_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    fclose(fdopen(fd, "w"));
    REQUIRE(otc_model_save(g, path) == OTC_OK);
    otc_graph_free(g);
    otc_graph *h = NULL;
    otc_status st = otc_model_load(path, &h);
    remove(path);
    if (st != OTC_OK) fprintf(stderr, "%s\n", otc_last_error());
    REQUIRE(st == OTC_OK && h);
    CHECK(otc_graph_size(h) == 20000);
    int found = 0;
    for (int i = 1; i < 20000; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%d", i);
        found += otc_graph_find(h, name) == i;
    }
    CHECK(found == 19999);
    otc_graph_free(h);
}

/* A 20,000-node chain renders to C, forward and with a training step (the buffer plan keeps
 * every forward value alive for the backward pass: the case that was quadratic). */
TEST(limits_20000_node_chain_emits_c) {
    otc_graph *g = chain(20000, false);
    REQUIRE(g);
    otc_emit_c_options o = otc_emit_c_defaults();
    char *h = NULL, *c = NULL;
    otc_status st = otc_emit_c(g, &o, &h, &c);
    CHECK_MSG(st == OTC_OK && h && c, "%s", otc_last_error());
    free(h);
    free(c);
    /* Training: a parameter per step so every value is kept for the backward pass. */
    otc_graph *t = otc_graph_new();
    otc_id prev = otc_input(t, "x", otc_shape_2d(OTC_BATCH, 4));
    for (int i = 0; i < 10000 && prev >= 0; i++) {
        otc_id w = otc_param(t, NULL, otc_shape_2d(4, 4), NULL);
        prev = otc_matmul(t, prev, w);
    }
    REQUIRE(prev >= 0 && otc_graph_mark_output(t, prev) == OTC_OK);
    otc_id loss = -1, target = -1;
    REQUIRE(otc_compile_add_loss(t, OTC_OP_MSE, &loss, &target) == OTC_OK);
    o.train = true;
    o.loss = loss;
    h = c = NULL;
    st = otc_emit_c(t, &o, &h, &c);
    CHECK_MSG(st == OTC_OK && h && c, "%s", otc_last_error());
    free(h);
    free(c);
    otc_graph_free(t);
    otc_graph_free(g);
}

/* Bytes of every value: x [B,4], w [4,3], x.w [B,3] at batch 10 is (40 + 12 + 30) floats. */
TEST(limits_value_bytes_and_memory_check) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 4));
    otc_id w = otc_param(g, "w", otc_shape_2d(4, 3), NULL);
    REQUIRE(otc_matmul(g, x, w) == 2);
    CHECK(otc_graph_value_bytes(g, 10) == 82 * 4);
    CHECK(otc_graph_value_bytes(g, 1) == 19 * 4);
    setenv("OTC_MEMORY_LIMIT", "300", 1);
    CHECK(otc_memory_limit() == 300);
    CHECK(otc_memory_check(328, "the test") == OTC_ERR_NOMEM);
    CHECK_MSG(contains(otc_last_error(), "the test needs about") &&
                  contains(otc_last_error(), "OTC_MEMORY_LIMIT"),
              "%s", otc_last_error());
    CHECK(otc_memory_check(300, "the test") == OTC_OK);
    setenv("OTC_MEMORY_LIMIT", "2K", 1);
    CHECK(otc_memory_limit() == 2048);
    unsetenv("OTC_MEMORY_LIMIT");
    CHECK(otc_memory_limit() > 2048); /* the machine's */
    /* Saturates instead of wrapping. */
    otc_graph *big = otc_graph_new();
    otc_shape s = otc_shape_make(3, (int[]){OTC_BATCH, 1 << 14, 1 << 14});
    REQUIRE(otc_input(big, "x", s) == 0);
    CHECK(otc_graph_value_bytes(big, 1) == ((uint64_t)1 << 30));
    CHECK(otc_memory_check(otc_graph_value_bytes(big, INT64_MAX), "x") == OTC_ERR_NOMEM);
    otc_graph_free(big);
    otc_graph_free(g);
}

/* 50,000 columns chosen by name: each name resolved through a map, not a scan of the header. */
TEST(limits_csv_50000_columns_chosen_by_name) {
    const int n = 50000;
    size_t cap = (size_t)n * 24 + 64, o = 0, lo = 0;
    char *text = malloc(cap), *list = malloc(cap);
    REQUIRE(text && list);
    for (int c = 0; c < n; c++) o += (size_t)snprintf(text + o, cap - o, "%sc%d", c ? "," : "", c);
    for (int r = 0; r < 2; r++) {
        text[o++] = '\n';
        for (int c = 0; c < n; c++)
            o += (size_t)snprintf(text + o, cap - o, "%s%d", c ? "," : "", (c + r) % 10);
    }
    for (int c = n - 2; c >= 0; c--) /* every feature but the last column, backwards */
        lo += (size_t)snprintf(list + lo, cap - lo, "%sc%d", c < n - 2 ? "," : "", c);
    otc_csv_options opt = {.header = true, .targets = "c49999", .features = list};
    otc_dataset *d = NULL;
    otc_status st = otc_csv_parse(text, o, "wide.csv", &opt, &d);
    REQUIRE(st == OTC_OK && d);
    CHECK(d->rows == 2 && d->n_features == n - 1 && d->n_targets == 1);
    CHECK(d->x[0] == (float)((n - 2) % 10) && d->y[1] == (float)((n - 1 + 1) % 10));
    CHECK(!strcmp(d->feature_names[0], "c49998"));
    otc_dataset_free(d);
    free(text);
    free(list);
}

/* A neat-python network with 65,536 input keys (OTC_MAX_INPUTS) and 500,000 connections from
 * them: each connection's key is looked up, so a linear search was 16G comparisons. The
 * output (identity of the sum) is checked against the sum computed here from the file's
 * connections, which shows every key found its column. */
TEST(limits_65536_input_keys_import) {
    const int keys = 65536, conns = 500000, hidden = 15;
    size_t cap = (size_t)keys * 10 + (size_t)conns * 64 + 4096, o = 0;
    char *text = malloc(cap);
    REQUIRE(text);
    o += (size_t)snprintf(text + o, cap - o,
                          "{\"format_version\":\"1.0\",\"network_type\":\"feedforward\","
                          "\"topology\":{\"input_keys\":[");
    for (int k = 0; k < keys; k++)
        o += (size_t)snprintf(text + o, cap - o, "%s%d", k ? "," : "", -1 - k);
    o += (size_t)snprintf(text + o, cap - o, "],\"output_keys\":[0]},\"nodes\":[");
    for (int i = 0; i <= hidden; i++)
        o += (size_t)snprintf(text + o, cap - o,
                              "%s{\"id\":%d,\"type\":\"%s\",\"activation\":{\"name\":"
                              "\"identity\",\"custom\":false},\"aggregation\":{\"name\":\"sum\","
                              "\"custom\":false},\"bias\":0,\"response\":1}",
                              i ? "," : "", i, i ? "hidden" : "output");
    o += (size_t)snprintf(text + o, cap - o, "],\"connections\":[");
    double want = 0; /* node 0 gets connection c when c % 16 == 0, from column (c * 7919) % keys */
    for (int c = 0; c < conns; c++) {
        int col = (int)(((long)c * 7919) % keys);
        o += (size_t)snprintf(text + o, cap - o,
                              "%s{\"from\":%d,\"to\":%d,\"weight\":0.5,\"enabled\":true}",
                              c ? "," : "", -1 - col, c % (hidden + 1));
        if (c % (hidden + 1) == 0) want += 0.5 * (double)(col % 7) / 7.0;
    }
    o += (size_t)snprintf(text + o, cap - o, "]}");
    REQUIRE(o + 1 < cap);
    otc_graph *g = NULL;
    otc_status st = otc_neat_python_import(text, o, "wide.json", NULL, &g);
    CHECK_MSG(st == OTC_OK, "%s", otc_last_error());
    if (st == OTC_OK) {
        otc_id in = otc_graph_input(g, 0);
        CHECK(otc_graph_node(g, in)->shape.dim[1] == keys);
        float *x = malloc(sizeof *x * (size_t)keys);
        REQUIRE(x);
        for (int k = 0; k < keys; k++) x[k] = (float)(k % 7) / 7.0f;
        otc_executor *ex = otc_interpreter_new(g, &(otc_exec_options){.inference = true});
        REQUIRE(ex);
        const float *y = NULL;
        REQUIRE(otc_exec_set_input(ex, in, x, 1) == OTC_OK);
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        REQUIRE(otc_exec_value(ex, otc_graph_output(g, 0), &y, NULL) == OTC_OK);
        CHECK_NEAR(y[0], want, 1e-4 * want); /* float sums of 31,250 terms */
        otc_exec_free(ex);
        free(x);
    }
    otc_graph_free(g);
    /* a key twice, at the end of the list: refused naming its position */
    char *dup = strstr(text, ",-65536]");
    REQUIRE(dup);
    memcpy(dup, ",-65535", 7);
    g = NULL;
    CHECK(otc_neat_python_import(text, o, "wide.json", NULL, &g) == OTC_ERR_FORMAT && !g);
    CHECK(contains(otc_last_error(), "input_keys[65535]: key -65535 appears twice"));
    free(text);
}
