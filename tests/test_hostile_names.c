/* Hostile names (a comment closer, backslash-newline, a ??/ trigraph, quotes, printf
 * conversions, a control byte, invalid UTF-8, markup, 4,000 characters (near the 4,096-byte name
 * limit)) on inputs, neurons, parameters and outputs reach emitted C, LLVM IR and its header, DOT
 * and SVG only through the one escaping function of each language: the code or markup around them
 * is byte for byte what plain names give, and the emitted C builds under strict flags and computes
 * the same numbers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emitc_support.h"
#include "harness.h"
#include "otm_ref.h"
#include "otc/dot.h"
#include "otc/model.h"
#include "otc/plot.h"
#include "otc/text.h"
#if defined(OTC_TEST_LLVM)
#include "otc/jit.h"
#endif

enum { N_NAMES = 10, LONG_LEN = 4000 };

static char long_name[LONG_LEN + 1];
static const char *hostile[N_NAMES];
static const char *plain[N_NAMES] = {"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"};

static void init_names(void) {
    memset(long_name, 'L', LONG_LEN);
    memcpy(long_name, "*/", 2);
    long_name[LONG_LEN] = '\0';
    const char *h[N_NAMES] = {"*/",      "x*\\\n/ __builtin_puts(\"INJECTED\"); /*",
                              "?\?/",    "\"",
                              "'",       "%s%n",
                              "a\001b",  "\xff\xfe",
                              long_name, "</TD></TR></TABLE>>]; n0 -> n0 [label=\""};
    memcpy(hostile, h, sizeof h);
}

/* Two inputs, three neurons, a dense layer, a scale; outputs n2, the scale and n3. Every
 * named node takes its name from nm (the neurons' parameters get "<name>.w", "<name>.b"). */
static otc_graph *build(const char *const *nm) {
    otc_graph *g = otc_graph_new();
    otc_id a = otc_input(g, nm[0], otc_shape_2d(OTC_BATCH, 3));
    otc_id b = otc_input(g, nm[1], otc_shape_2d(OTC_BATCH, 2));
    otc_id s1[3] = {a, a, b};
    int c1[3] = {0, 2, 1};
    float w1[3] = {0.5f, -1.25f, 2.0f};
    otc_id n1 = otc_neuron(g, nm[2], OTC_ACT_TANH, 0.25f, 1.0f, 3, s1, c1, w1);
    otc_id s2[2] = {n1, b};
    int c2[2] = {0, 0};
    float w2[2] = {1.5f, -0.75f};
    otc_id n2 = otc_neuron(g, nm[3], OTC_ACT_SIGMOID, -0.5f, 1.0f, 2, s2, c2, w2);
    float wv[12] = {0.1f, -0.2f, 0.3f, -0.4f, 0.5f, -0.6f, 0.7f, -0.8f, 0.9f, -1.0f, 1.1f, -1.2f};
    float bv[4] = {0.05f, -0.05f, 0.15f, -0.15f};
    otc_id W = otc_param(g, nm[4], otc_shape_2d(3, 4), wv);
    otc_id bias = otc_param(g, nm[5], otc_shape_1d(4), bv);
    otc_id mm = otc_matmul(g, a, W);
    otc_id lin = otc_add(g, mm, otc_row_broadcast(g, bias, mm));
    otc_id t = otc_activation(g, OTC_OP_TANH, lin, 0.0f);
    otc_id sc = otc_scale(g, t, 2.0f);
    otc_id s3[2] = {sc, n2};
    int c3[2] = {3, 0};
    float w3[2] = {0.8f, 1.2f};
    otc_id n3 = otc_neuron(g, nm[9], OTC_ACT_RELU, 0.1f, 1.0f, 2, s3, c3, w3);
    if (n3 < 0 || otc_graph_set_name(g, lin, nm[6]) || otc_graph_set_name(g, t, nm[7]) ||
        otc_graph_set_name(g, sc, nm[8]) || otc_graph_mark_output(g, n2) ||
        otc_graph_mark_output(g, sc) || otc_graph_mark_output(g, n3)) {
        fprintf(stderr, "build: %s\n", otc_last_error());
        otc_graph_free(g);
        return NULL;
    }
    return g;
}

/* What a C compiler sees as code: trigraphs replaced, backslash-newlines spliced, comments
 * made one space (translation phases 1-3), string and character literals kept. */
static char *c_code_only(const char *src) {
    size_t n = strlen(src);
    char *a = malloc(n + 1), *out = malloc(n + 1);
    if (!a || !out) {
        free(a);
        free(out);
        return NULL;
    }
    static const char tri_from[] = "=(/)'<!>-", tri_to[] = "#[\\]^{|}~";
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *t =
            src[i] == '?' && src[i + 1] == '?' && src[i + 2] ? strchr(tri_from, src[i + 2]) : NULL;
        if (t) {
            a[k++] = tri_to[t - tri_from];
            i += 2;
        } else {
            a[k++] = src[i];
        }
    }
    a[k] = '\0';
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (a[i] == '\\' && a[i + 1] == '\n') {
            i++;
            continue;
        }
        a[m++] = a[i];
    }
    a[m] = '\0';
    size_t o = 0;
    for (size_t i = 0; i < m; i++) {
        if (a[i] == '/' && a[i + 1] == '*') {
            const char *end = strstr(a + i + 2, "*/");
            i = end ? (size_t)(end - a) + 1 : m;
            out[o++] = ' ';
        } else if (a[i] == '/' && a[i + 1] == '/') {
            while (i < m && a[i] != '\n') i++;
            out[o++] = ' ';
            if (i < m) out[o++] = '\n';
        } else if (a[i] == '"' || a[i] == '\'') {
            char q = a[i];
            out[o++] = a[i++];
            for (; i < m && a[i] != q; i++) {
                if (a[i] == '\\' && i + 1 < m) out[o++] = a[i++];
                out[o++] = a[i];
            }
            if (i < m) out[o++] = a[i];
        } else {
            out[o++] = a[i];
        }
    }
    out[o] = '\0';
    free(a);
    return out;
}

/* Every byte valid UTF-8, no control byte but newline. */
static bool clean_text(const char *s, const char *what) {
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = *p < 0x20 ? (*p == '\n') : otc_utf8_len(p);
        if (n == 0) {
            fprintf(stderr, "%s: byte 0x%02x at %td\n", what, *p, (const char *)p - s);
            return false;
        }
        p += n;
    }
    return true;
}

/* No hostile name verbatim (those of one or two characters, such as a quote or the
 * comment closer, occur in any C file; same_code covers them). */
static bool no_raw_names(const char *text, const char *what) {
    bool ok = true;
    for (int i = 0; i < N_NAMES; i++)
        if (strlen(hostile[i]) > 2 && strstr(text, hostile[i])) {
            fprintf(stderr, "%s holds hostile name %d verbatim\n", what, i);
            ok = false;
        }
    return ok;
}

TEST(text_c_comment_hostile) {
    init_names();
    /* Hand-worked: kept are letters, digits, space and _ . - : [ ] ( ) , =, and '/' inside;
     * every run of other bytes is one '?'. */
    static const char *const cases[][2] = {
        {"*/", "?"},
        {"x*\\\n/ __builtin_puts(\"INJECTED\"); /*", "x?/ __builtin_puts(?INJECTED?)? /?"},
        {"?\?/", "?"},
        {"\"", "?"},
        {"'", "?"},
        {"%s%n", "?s?n"},
        {"a\001b", "a?b"},
        {"\xff\xfe", "?"},
        {"caf\xc3\xa9", "caf?"},
        {"models/xor.otm", "models/xor.otm"},
        {"/abs/dir/", "?abs/dir?"},
        {"a*/", "a?"},
        {"dense_1.w[0:3] (x, y) = -2", "dense_1.w[0:3] (x, y) = -2"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        otc_text t;
        otc_text_init(&t);
        otc_text_c_comment(&t, cases[i][0]);
        char *got = otc_text_take(&t);
        REQUIRE(got);
        CHECK_MSG(!strcmp(got, cases[i][1]), "case %zu: got '%s', want '%s'", i, got, cases[i][1]);
        free(got);
    }
    /* 4,000 bytes: the first 61 kept bytes and "..." (64 in all). */
    otc_text t;
    otc_text_init(&t);
    otc_text_c_comment(&t, long_name);
    otc_text_c_comment(&t, NULL);
    char *got = otc_text_take(&t);
    REQUIRE(got);
    CHECK(strlen(got) == OTC_TEXT_COMMENT_MAX);
    CHECK(!strncmp(got, "?/LLL", 5)); /* "*" refused, the '/' after it no longer first */
    CHECK(!strcmp(got + OTC_TEXT_COMMENT_MAX - 4, "L..."));
    free(got);
}

TEST(text_xml_dot_hostile) {
    static const char *const xml[][2] = {
        {"a<b&\"c'd>", "a&lt;b&amp;&quot;c&#39;d&gt;"},
        /* control byte, invalid UTF-8, U+FFFE (three bytes, each refused), then a valid
         * two-byte character. */
        {"\001\xff\xef\xbf\xbe\xc3\xa9", "?????\xc3\xa9"},
        {"x\n\x7f", "x??"},
    };
    static const char *const dot[][2] = {
        {"a\"b\\c", "a\\\"b\\\\c"},
        {"n0 -> n1\n\xff", "n0 -> n1??"},
        {"<B>&", "<B>&"},
    };
    for (int pass = 0; pass < 2; pass++) {
        const char *const(*cases)[2] = pass ? dot : xml;
        for (int i = 0; i < 3; i++) {
            otc_text t;
            otc_text_init(&t);
            (pass ? otc_text_dot_string : otc_text_xml)(&t, cases[i][0]);
            char *got = otc_text_take(&t);
            REQUIRE(got);
            CHECK_MSG(!strcmp(got, cases[i][1]), "%s case %d: got '%s'", pass ? "dot" : "xml", i,
                      got);
            free(got);
        }
    }
}

/* Emitted C (forward, and training) with hostile and plain names: the same code once
 * comments are gone; nothing a compiler could splice or warn about. */
static bool same_code(const char *hostile_text, const char *plain_text, const char *what) {
    char *a = c_code_only(hostile_text), *b = c_code_only(plain_text);
    bool same = a && b && !strcmp(a, b);
    if (!same) fprintf(stderr, "%s: hostile names changed the code\n", what);
    bool ok = same && no_raw_names(hostile_text, what) && clean_text(hostile_text, what) &&
              !strchr(hostile_text, '\\') && !strstr(hostile_text, "??");
    free(a);
    free(b);
    return ok;
}

TEST(hostile_names_emit_c_text) {
    init_names();
    for (int train = 0; train < 2; train++) {
        char *h[2] = {0}, *s[2] = {0};
        for (int v = 0; v < 2; v++) {
            otc_graph *g = build(v ? plain : hostile);
            REQUIRE(g);
            otc_emit_c_options eo = otc_emit_c_defaults();
            eo.name = "m";
            eo.source_name = v ? "plain.otm" : hostile[1];
            if (train) REQUIRE(otc_compile_add_loss(g, OTC_OP_MSE, &eo.loss, NULL) == OTC_OK);
            eo.train = train;
            CHECK_MSG(otc_emit_c(g, &eo, &h[v], &s[v]) == OTC_OK, "%s", otc_last_error());
            otc_graph_free(g);
        }
        if (h[0] && s[0] && h[1] && s[1]) {
            /* The source name differs in the first comment only. */
            CHECK(same_code(h[0], h[1], train ? "train header" : "header"));
            CHECK(same_code(s[0], s[1], train ? "train source" : "source"));
            /* The names are still recognisable where they are harmless. */
            CHECK(strstr(s[0], "x?/ __builtin_puts(?INJECTED?)? /?"));
        }
        for (int v = 0; v < 2; v++) {
            free(h[v]);
            free(s[v]);
        }
    }
}

TEST(hostile_names_emit_c_builds_and_agrees) {
    init_names();
    emitc_case cs[2];
    REQUIRE(emitc_case_init(&cs[0], build(hostile), 0, NULL));
    REQUIRE(emitc_case_init(&cs[1], build(plain), 1, NULL));
    emitc_build b;
    bool built = emitc_build_cases(cs, 2, "-std=c99 -Wall -Wextra -Werror -pedantic -O1", &b);
    CHECK(built);
    if (built) {
        enum { BATCH = 5 };
        /* Inputs: row b is (b, -b/2, 1 | 0.5, b/4). */
        float in[BATCH * 5], out[2][BATCH * 6];
        for (int r = 0; r < BATCH; r++) {
            float row[5] = {(float)r, -0.5f * (float)r, 1.0f, 0.5f, 0.25f * (float)r};
            memcpy(in + r * 5, row, sizeof row);
        }
        REQUIRE(cs[0].fwd->in_width == 5 && cs[0].fwd->out_width == 6);
        for (int v = 0; v < 2; v++) {
            int (*fwd)(const float *, float *, int, void *) =
                (int (*)(const float *, float *, int, void *))emitc_sym(&b, cs[v].name, "forward");
            void *ws = calloc(1, emitc_workspace_bytes(&cs[v], &b, BATCH) + 64);
            REQUIRE(fwd && ws);
            CHECK(fwd(in, out[v], BATCH, ws) == 0);
            free(ws);
        }
        CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0);
        /* And both are the interpreter's numbers. */
        CHECK(emitc_check_forward(&cs[0], &b, BATCH, 3, 1e-5));
        emitc_unload(&b);
    }
    emitc_case_free(&cs[0]);
    emitc_case_free(&cs[1]);
}

/* DOT and SVG: the same document once quoted strings, HTML labels, text and attribute
 * values are taken out, so a name can never add or end an element, attribute or edge. */
static char *markup_only(const char *s, bool svg) {
    char *out = malloc(strlen(s) + 1);
    if (!out) return NULL;
    size_t o = 0;
    int depth = 0; /* inside a DOT HTML label <...> */
    bool in_text = false;
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        if (c == '"' && depth == 0 && !in_text) {
            for (i++; s[i] && s[i] != '"'; i++)
                if (s[i] == '\\' && s[i + 1]) i++;
            out[o++] = '"';
            out[o++] = '"';
            if (!s[i]) break;
        } else if (svg) {
            if (c == '>') in_text = true;
            if (c == '<') in_text = false;
            if (!in_text || c == '>') out[o++] = c;
        } else if (c == '<') {
            if (depth++ == 0) out[o++] = '<';
        } else if (c == '>' && depth > 0) {
            if (--depth == 0) out[o++] = '>';
        } else if (depth == 0) {
            out[o++] = c;
        }
    }
    out[o] = '\0';
    return out;
}

static void check_markup(const char *hostile_text, const char *plain_text, bool svg,
                         const char *what) {
    char *a = markup_only(hostile_text, svg), *b = markup_only(plain_text, svg);
    CHECK_MSG(a && b && !strcmp(a, b), "%s: hostile names changed the markup", what);
    CHECK(clean_text(hostile_text, what));
    free(a);
    free(b);
}

TEST(hostile_names_dot) {
    init_names();
    char *text[2][2] = {{0}};
    for (int v = 0; v < 2; v++) {
        otc_graph *g = build(v ? plain : hostile);
        REQUIRE(g);
        otc_dot_options o;
        memset(&o, 0, sizeof o);
        o.weights = true;
        o.show_params = true;
        o.title = v ? "p" : hostile[9];
        CHECK(otc_dot_render(g, &o, &text[v][0], NULL) == OTC_OK);
        otc_plan *p = NULL;
        CHECK(otc_plan_build(g, NULL, &p) == OTC_OK);
        text[v][1] = p ? otc_plan_to_dot(p) : NULL;
        otc_plan_free(p);
        otc_graph_free(g);
    }
    for (int k = 0; k < 2; k++) {
        if (!text[0][k] || !text[1][k]) {
            CHECK(!"DOT rendered");
            continue;
        }
        check_markup(text[0][k], text[1][k], false, k ? "plan DOT" : "graph DOT");
    }
    /* The markup injection arrives as text: entities in HTML labels, its quote escaped in
     * quoted strings. */
    CHECK(text[0][0] && !strstr(text[0][0], "</TD></TR></TABLE>>]; n0 -> n0"));
    CHECK(text[0][1] && strstr(text[0][1], "n0 -> n0 [label=\\\"'"));
    CHECK(text[0][0] && strstr(text[0][0], "&lt;/TD&gt;&lt;/TR&gt;&lt;/TABLE&gt;&gt;]; n0 -&gt; "
                                           "n0 [label=&quot;"));
    CHECK(text[0][1] && strstr(text[0][1], "x*\\\\?/ __builtin_puts(\\\"INJECTED\\\"); /*"));
    for (int v = 0; v < 2; v++) {
        free(text[v][0]);
        free(text[v][1]);
    }
}

TEST(hostile_names_svg) {
    init_names();
    char *svg[2] = {0};
    for (int v = 0; v < 2; v++) {
        const char *const *nm = v ? plain : hostile;
        otc_plot *p = otc_plot_new(nm[9], nm[1], nm[7]);
        REQUIRE(p);
        float x[3] = {1, 2, 3}, y[3] = {0.5f, 0.25f, 0.125f};
        CHECK(otc_plot_add_series(p, nm[0], 3, x, y) == 0);
        CHECK(otc_plot_add_series(p, nm[6], 3, x, x) == 1);
        CHECK(otc_plot_svg(p, &svg[v], NULL) == OTC_OK);
        otc_plot_free(p);
    }
    REQUIRE(svg[0] && svg[1]);
    check_markup(svg[0], svg[1], true, "SVG");
    CHECK(strstr(svg[0], "&lt;/TD&gt;"));
    /* A validating parser agrees (libxml2-utils is installed by scripts/install-deps.sh). */
    REQUIRE(system("xmllint --version > /dev/null 2>&1") == 0);
    {
        char path[128], cmd[256];
        snprintf(path, sizeof path, "%s/hostile_%ld.svg", OTC_BINARY_DIR, (long)getpid());
        FILE *f = fopen(path, "w");
        REQUIRE(f);
        fputs(svg[0], f);
        fclose(f);
        snprintf(cmd, sizeof cmd, "xmllint --noout '%s'", path);
        CHECK(system(cmd) == 0);
        remove(path);
    }
    free(svg[0]);
    free(svg[1]);
}

/* A JSON name holding \u0000 in a saved model: refused, or cut at the NUL (cJSON's reading);
 * never a name with hidden bytes after it. */

TEST(hostile_names_model_nul) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "nul_XXXXXX_end", otc_shape_2d(OTC_BATCH, 1));
    REQUIRE(x >= 0 && otc_graph_mark_output(g, otc_scale(g, x, 2.0f)) == OTC_OK);
    char path[128];
    snprintf(path, sizeof path, "%s/hostile_nul_%ld.otm", OTC_BINARY_DIR, (long)getpid());
    REQUIRE(otc_model_save(g, path) == OTC_OK);
    otc_graph_free(g);
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    REQUIRE(n > 28 && n < sizeof buf);
    unsigned char *at = NULL;
    for (size_t i = 0; i + 6 <= n && !at; i++)
        if (!memcmp(buf + i, "XXXXXX", 6)) at = buf + i;
    REQUIRE(at);
    memcpy(at, "\\u0000", 6); /* same length: the JSON length field stays right */
    otm_ref_refresh_crc(buf, n);
    otc_graph *h = NULL;
    otc_status st = otc_model_load_buffer(buf, n, "nul.otm", &h);
    remove(path);
    if (st == OTC_OK) {
        const otc_node *nd = otc_graph_node(h, otc_graph_input(h, 0));
        REQUIRE(nd && nd->name);
        CHECK_MSG(!strcmp(nd->name, "nul_"), "name read as '%s'", nd->name);
        char *hs = NULL, *cs = NULL;
        otc_emit_c_options eo = otc_emit_c_defaults();
        CHECK(otc_emit_c(h, &eo, &hs, &cs) == OTC_OK);
        CHECK(cs && strstr(cs, "'nul_'"));
        free(hs);
        free(cs);
        otc_graph_free(h);
    } else {
        CHECK(strstr(otc_last_error(), "nul.otm"));
    }
}

#if defined(OTC_TEST_LLVM)
/* LLVM IR never carries a node name: hostile and plain names give the same module. The
 * object's C header names nodes in comments only. */
TEST(hostile_names_llvm) {
    init_names();
    char *ir[2] = {0}, *hdr[2] = {0};
    for (int v = 0; v < 2; v++) {
        otc_graph *g = build(v ? plain : hostile);
        REQUIRE(g);
        otc_emit_llvm_options o = otc_emit_llvm_defaults();
        o.name = "m";
        o.lanes = 4;
        o.optimize = false;
        size_t len = 0;
        CHECK_MSG(otc_emit_llvm(g, &o, OTC_EMIT_LLVM_IR, &ir[v], &len) == OTC_OK, "%s",
                  otc_last_error());
        CHECK(otc_emit_llvm_header(g, &o, &hdr[v]) == OTC_OK);
        otc_graph_free(g);
    }
    REQUIRE(ir[0] && ir[1] && hdr[0] && hdr[1]);
    CHECK(!strcmp(ir[0], ir[1]));
    CHECK(no_raw_names(ir[0], "LLVM IR") && !strstr(ir[0], "INJECTED"));
    CHECK(same_code(hdr[0], hdr[1], "LLVM header"));
    /* The header compiles under strict flags. */
    char dir[64] = "/tmp/otc_hostile_XXXXXX", path[128], cmd[512];
    REQUIRE(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.h", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs(hdr[0], f);
    fclose(f);
    snprintf(path, sizeof path, "%s/use.c", dir);
    f = fopen(path, "w");
    REQUIRE(f);
    fputs("#include \"m.h\"\nint use(void) { return (int)m_workspace_bytes(1); }\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "cc -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only -I%s %s/use.c", dir, dir);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    /* Names for symbols are the C renderer's identifiers: nothing else gets in. */
    otc_graph *g = build(plain);
    otc_emit_llvm_options o = otc_emit_llvm_defaults();
    const char *bad[] = {"a*/b", "_x", "9lives", "",
                         "a1234567890123456789012345678901234567890123456789012345678901234"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *text = NULL;
        o.name = bad[i];
        CHECK_MSG(otc_emit_llvm_header(g, &o, &text) == OTC_ERR_ARG, "name '%s'", bad[i]);
        free(text);
    }
    otc_graph_free(g);
    for (int v = 0; v < 2; v++) {
        free(ir[v]);
        free(hdr[v]);
    }
}
#endif

#if defined(OTC_CLI)
/* The reproduction end to end: `otc compile --emit-c` of a model whose node name
 * holds backslash-newline, linked into a program: it compiles under strict flags and does
 * not run the injected call. */
TEST(hostile_names_cli_compile) {
    init_names();
    char dir[64] = "/tmp/otc_hostile_cli_XXXXXX", path[256], cmd[1024];
    REQUIRE(mkdtemp(dir));
    /* The name on one output neuron (as the reproduction script edits one node),
     * plain names elsewhere. */
    const char *nm[N_NAMES];
    memcpy(nm, plain, sizeof nm);
    nm[3] = hostile[1];
    for (int v = 0; v < 2; v++) {
        otc_graph *g = build(v ? plain : nm);
        REQUIRE(g);
        snprintf(path, sizeof path, "%s/%s.otm", dir, v ? "plain" : "inject");
        REQUIRE(otc_model_save(g, path) == OTC_OK);
        otc_graph_free(g);
    }
    snprintf(path, sizeof path, "%s/main.c", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs("#include <stdio.h>\n#include <stdlib.h>\n#include \"mdl.h\"\n"
          "int main(void) {\n    float in[5] = {1, 2, 3, 4, 5}, out[6];\n"
          "    void *ws = malloc(MDL_WORKSPACE_BYTES(1));\n"
          "    int rc = mdl_forward(in, out, 1, ws);\n    free(ws);\n"
          "    printf(\"rc %d\\n\", rc);\n    return rc;\n}\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' compile inject.otm --emit-c c --name mdl > log 2>&1; echo $? > rc",
             dir, OTC_CLI);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/rc", dir);
    f = fopen(path, "r");
    int rc = -1;
    if (f) {
        if (fscanf(f, "%d", &rc) != 1) rc = -1;
        fclose(f);
    }
    /* The model loader may refuse control bytes in names (exit 2); if it takes them, the
     * code must be safe. */
    CHECK_MSG(rc == 0 || rc == 2, "otc compile exit %d", rc);
    if (rc == 0) {
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && cc -std=c99 -Wall -Wextra -Werror -pedantic -Ic c/mdl.c main.c -lm "
                 "-o prog && ./prog > out 2>&1",
                 dir);
        CHECK(system(cmd) == 0);
        snprintf(path, sizeof path, "%s/out", dir);
        f = fopen(path, "r");
        char out[256] = "";
        size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
        out[n] = '\0';
        if (f) fclose(f);
        CHECK_MSG(!strcmp(out, "rc 0\n"), "program printed '%s'", out);
    }
    /* Names that are not C identifiers are refused with exit 2. */
    const char *bad[] = {"'a*/b'", "_x", "int-x",
                         "a1234567890123456789012345678901234567890123456789012345678901234"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && '%s' compile plain.otm --emit-c c2 --name %s > /dev/null 2> err; "
                 "test $? -eq 2 && grep -q 'not a C identifier' err && test ! -e c2/mdl.c",
                 dir, OTC_CLI, bad[i]);
        CHECK_MSG(system(cmd) == 0, "--name %s", bad[i]);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}
#endif
