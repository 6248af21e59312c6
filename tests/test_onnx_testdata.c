/* ONNX import against ONNX's own test data (Debian's libonnx-testdata): every model of the
 * node, pytorch-converted, pytorch-operator and simple suites that otc imports is run on the
 * interpreter with its test_data_set_0 inputs and compared with the expected outputs (rtol
 * 1e-3, atol 1e-7, as onnx's backend tests). Prints per suite how many passed, were refused
 * (with the reasons) and failed; fails if any imported model does not match. The expected
 * tensors are read with protobuf-c directly, not through the importer. The training ops'
 * tests (Momentum, Adam) are held to otc's optimiser update rules. Skips (77) without the
 * data. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "onnx.pb-c.h"
#include "otc/executor.h"
#include "otc/file.h"
#include "otc/onnx.h"
#include "otc/optim.h"

#define DATA "/usr/share/libonnx-testdata/data"

enum { MAX_REASONS = 512, MAX_IO = 16 };

typedef struct {
    char *text;
    int count;
    char example[96];
} reason;

static reason reasons[MAX_REASONS];
static int n_reasons;

/* Counts a refusal under its message with the file name and the node's name cut out. */
static void add_reason(const char *msg, const char *model) {
    const char *p = strstr(msg, "): ");
    const char *op = strstr(msg, "(#");
    char key[200];
    if (p && op) {
        const char *comma = strchr(op, ',');
        int oplen = comma && comma < p ? (int)(p - comma - 2) : 0;
        const char *opname = comma ? comma + 2 : "";
        const char *opend = strchr(opname, ',');
        snprintf(key, sizeof key, "%.*s: %.150s", opend ? (int)(opend - opname) : oplen, opname,
                 p + 3);
    } else {
        const char *c = strstr(msg, ".onnx: ");
        snprintf(key, sizeof key, "%.150s", c ? c + 7 : msg);
    }
    for (int i = 0; i < n_reasons; i++)
        if (!strcmp(reasons[i].text, key)) {
            reasons[i].count++;
            return;
        }
    if (n_reasons == MAX_REASONS) return;
    reasons[n_reasons].text = strdup(key);
    reasons[n_reasons].count = 1;
    snprintf(reasons[n_reasons].example, sizeof reasons[0].example, "%s", model);
    n_reasons++;
}

/* A float TensorProto file as floats (raw or float_data); NULL for other types. */
static float *read_tensor(const char *path, size_t *n, int64_t *dim0, char **name) {
    char *data = NULL;
    size_t len = 0;
    if (otc_read_file(path, 1 << 28, &data, &len) != OTC_OK) return NULL;
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, (const uint8_t *)data);
    free(data);
    if (!t) return NULL;
    float *v = NULL;
    size_t count = 1;
    for (size_t d = 0; d < t->n_dims; d++) count *= (size_t)t->dims[d];
    *dim0 = t->n_dims ? t->dims[0] : 1;
    *n = count;
    if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && (v = malloc(count * 4 + 4))) {
        if (t->has_raw_data && t->raw_data.len == count * 4)
            memcpy(v, t->raw_data.data, count * 4); /* little-endian host */
        else if (t->n_float_data == count)
            memcpy(v, t->float_data, count * 4);
        else {
            free(v);
            v = NULL;
        }
    }
    if (name) *name = t->name && *t->name ? strdup(t->name) : NULL;
    onnx__tensor_proto__free_unpacked(t, NULL);
    return v;
}

typedef enum { R_PASS, R_REFUSED, R_FAIL } result;

static result run_model(const char *dir, const char *model, char *why, size_t wlen) {
    char path[1200];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    char *data = NULL;
    size_t len = 0;
    why[0] = 0;
    if (otc_read_file(path, OTC_MAX_ONNX_BYTES, &data, &len) != OTC_OK) {
        snprintf(why, wlen, "unreadable");
        return R_REFUSED;
    }
    otc_graph *g = NULL;
    otc_status st = otc_onnx_import(data, len, path, dir, &g);
    free(data);
    if (st) {
        add_reason(otc_last_error(), model);
        return R_REFUSED;
    }
    result r = R_PASS;
    otc_executor *ex = otc_interpreter_new(g, NULL);
    float *ins[MAX_IO] = {0};
    int n_in = otc_graph_input_count(g);
    if (!ex || n_in > MAX_IO) {
        snprintf(why, wlen, "no interpreter: %s", otc_last_error());
        r = R_FAIL;
    }
    for (int i = 0; r == R_PASS && i < n_in; i++) {
        size_t n = 0;
        int64_t b = 0;
        char *name = NULL;
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
        ins[i] = read_tensor(path, &n, &b, &name);
        /* the data file of graph input i names it; by position when it does not */
        otc_id id = name ? otc_graph_find(g, name) : -1;
        if (id < 0) id = otc_graph_input(g, i);
        free(name);
        size_t per = otc_shape_size(otc_graph_node(g, id)->shape);
        if (!ins[i] || b < 1 || n != per * (size_t)b) {
            add_reason("test data: an input that is not float or not batch-shaped", model);
            r = R_REFUSED;
        } else if (otc_exec_set_input(ex, id, ins[i], (int)b)) {
            snprintf(why, wlen, "input %d: %s", i, otc_last_error());
            r = R_FAIL;
        }
    }
    if (r == R_PASS && otc_exec_forward(ex)) {
        snprintf(why, wlen, "forward: %s", otc_last_error());
        r = R_FAIL;
    }
    for (int o = 0; r == R_PASS && o < otc_graph_output_count(g); o++) {
        size_t n = 0;
        int64_t b = 0;
        snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", dir, o);
        float *want = read_tensor(path, &n, &b, NULL);
        const float *got = NULL;
        otc_shape sh;
        if (!want) {
            add_reason("test data: a non-float output", model);
            r = R_REFUSED;
        } else if (otc_exec_value(ex, otc_graph_output(g, o), &got, &sh) ||
                   otc_shape_size(sh) != n) {
            snprintf(why, wlen, "output %d: %zu values, expected %zu", o,
                     got ? otc_shape_size(sh) : 0, n);
            r = R_FAIL;
        } else {
            for (size_t k = 0; k < n; k++) {
                double e = want[k], a = got[k];
                bool same = (isnan(e) && isnan(a)) || (isinf(e) && a == e) ||
                            fabs(a - e) <= 1e-7 + 1e-3 * fabs(e);
                if (!same) {
                    snprintf(why, wlen, "output %d element %zu: %.9g, expected %.9g", o, k, a, e);
                    r = R_FAIL;
                    break;
                }
            }
        }
        free(want);
    }
    for (int i = 0; i < MAX_IO; i++) free(ins[i]);
    otc_exec_free(ex);
    otc_graph_free(g);
    return r;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Node tests that must pass, not merely not fail: the standalone unary ops otc reads as its
 * own ops (their expected outputs are the independent oracle of the op spec's math). */
static bool must_pass(const char *suite, const char *name) {
    static const char *const names[] = {
        "test_sqrt", "test_sqrt_example", "test_cos",        "test_cos_example",
        "test_sin",  "test_sin_example",  "test_reciprocal", "test_reciprocal_example"};
    for (size_t i = 0; !strcmp(suite, "node") && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i])) return true;
    return false;
}

TEST(onnx_testdata_suites) {
    struct stat sb;
    if (stat(DATA, &sb) != 0) {
        printf("no %s (Debian's libonnx-testdata): skipped\n", DATA);
        exit(77);
    }
    const char *suites[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};
    int failed = 0;
    for (int s = 0; s < 4; s++) {
        char root[512];
        snprintf(root, sizeof root, "%s/%s", DATA, suites[s]);
        struct dirent **list = NULL;
        int n = scandir(root, &list, NULL, by_name);
        int counts[3] = {0};
        for (int i = 0; i < n; i++) {
            char dir[1024], why[400];
            snprintf(dir, sizeof dir, "%s/%s", root, list[i]->d_name);
            char model[1100];
            snprintf(model, sizeof model, "%s/model.onnx", dir);
            if (list[i]->d_name[0] != '.' && stat(model, &sb) == 0) {
                result r = run_model(dir, list[i]->d_name, why, sizeof why);
                counts[r]++;
                if (r == R_FAIL) printf("FAILED %s/%s: %s\n", suites[s], list[i]->d_name, why);
                CHECK_MSG(r == R_PASS || !must_pass(suites[s], list[i]->d_name),
                          "%s/%s must pass: %s", suites[s], list[i]->d_name, why);
            }
            free(list[i]);
        }
        free(list);
        printf("%s: %d passed, %d refused, %d failed\n", suites[s], counts[R_PASS],
               counts[R_REFUSED], counts[R_FAIL]);
        failed += counts[R_FAIL];
    }
    printf("refusals by reason (count, reason, an example):\n");
    for (int i = 0; i < n_reasons; i++) {
        printf("%4d  %s  [%s]\n", reasons[i].count, reasons[i].text, reasons[i].example);
        free(reasons[i].text);
    }
    CHECK(failed == 0);
}

/* ---- the training ops' test data against otc's update rules (otc/optim.h) ---- */

/* An int64 scalar TensorProto file (T, the step count), or -1. */
static int64_t read_int(const char *path) {
    char *data = NULL;
    size_t len = 0;
    int64_t v = -1;
    if (otc_read_file(path, 1 << 20, &data, &len) != OTC_OK) return -1;
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, (const uint8_t *)data);
    free(data);
    if (t && t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        if (t->n_int64_data == 1)
            v = t->int64_data[0];
        else if (t->has_raw_data && t->raw_data.len == 8)
            memcpy(&v, t->raw_data.data, 8); /* little-endian host */
    }
    if (t) onnx__tensor_proto__free_unpacked(t, NULL);
    return v;
}

/* The model's one node's float attribute (def when absent) or, for mode, its string. */
static float node_float(const Onnx__NodeProto *n, const char *name, float def) {
    for (size_t k = 0; k < n->n_attribute; k++)
        if (!strcmp(n->attribute[k]->name, name) && n->attribute[k]->has_f)
            return n->attribute[k]->f;
    return def;
}

static bool node_mode_nesterov(const Onnx__NodeProto *n) {
    for (size_t k = 0; k < n->n_attribute; k++)
        if (!strcmp(n->attribute[k]->name, "mode") && n->attribute[k]->has_s)
            return n->attribute[k]->s.len == 8 && !memcmp(n->attribute[k]->s.data, "nesterov", 8);
    return false;
}

/* One test of ONNX's Momentum or Adam (ai.onnx.preview.training): inputs R, T, then per
 * tensor X, G, V (and H for Adam), groups of k; outputs X_new, V_new (H_new). otc's rule for
 * the same configuration, evaluated element by element, must give the expected outputs. ONNX's
 * T counts the steps before this one and applies no bias correction at T = 0 (all these tests),
 * so otc's Adam is evaluated at a step count whose corrections are 1 (1 - beta^t rounds to 1):
 * the moments, the epsilon outside the square root and the L2 term are then compared. */
static int check_optimiser(const char *name, int k, float eps_absent) {
    char path[1200];
    snprintf(path, sizeof path, "%s/node/%s/model.onnx", DATA, name);
    char *data = NULL;
    size_t len = 0;
    if (otc_read_file(path, 1 << 20, &data, &len) != OTC_OK) return 1;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, (const uint8_t *)data);
    free(data);
    if (!m || !m->graph || m->graph->n_node != 1) return 1;
    const Onnx__NodeProto *n = m->graph->node[0];
    bool adam = !strcmp(n->op_type, "Adam");
    int per = adam ? 4 : 3; /* X, G, V (, H) */
    otc_optim_config c = otc_optim_defaults(adam ? OTC_OPTIM_ADAM : OTC_OPTIM_SGD);
    c.weight_decay = node_float(n, "norm_coefficient", 0);
    if (adam) {
        c.beta1 = node_float(n, "alpha", 0.9f);
        c.beta2 = node_float(n, "beta", 0.999f);
        c.eps = node_float(n, "epsilon", eps_absent);
    } else {
        c.momentum = node_float(n, "alpha", 0);
        c.nesterov = node_mode_nesterov(n);
    }
    bool ok = node_float(n, "norm_coefficient_post", 0) == 0;
    onnx__model_proto__free_unpacked(m, NULL);
    size_t cnt = 0;
    int64_t d0;
    snprintf(path, sizeof path, "%s/node/%s/test_data_set_0/input_0.pb", DATA, name);
    float *r = read_tensor(path, &cnt, &d0, NULL);
    snprintf(path, sizeof path, "%s/node/%s/test_data_set_0/input_1.pb", DATA, name);
    ok = ok && r && cnt == 1 && read_int(path) == 0; /* T = 0: beta_adjusted 1, no correction */
    c.lr = r ? r[0] : 0;
    free(r);
    const otc_optim_rule *rule = otc_optim_rule_get(otc_optim_rule_of(&c));
    float args[OTC_OPTIM_ARG_COUNT];
    otc_optim_step_args(&c, adam ? 1L << 40 : 1, args);
    int checked = 0;
    for (int j = 0; ok && j < k; j++) {
        float *in[4] = {0}, *want[3] = {0};
        size_t n_in[4] = {0}, n_out[3] = {0};
        for (int q = 0; q < per; q++) {
            snprintf(path, sizeof path, "%s/node/%s/test_data_set_0/input_%d.pb", DATA, name,
                     2 + q * k + j);
            in[q] = read_tensor(path, &n_in[q], &d0, NULL);
        }
        for (int q = 0; q < per - 1; q++) {
            snprintf(path, sizeof path, "%s/node/%s/test_data_set_0/output_%d.pb", DATA, name,
                     q * k + j);
            want[q] = read_tensor(path, &n_out[q], &d0, NULL);
        }
        for (int q = 0; q < per; q++) ok = ok && in[q] && n_in[q] == n_in[0];
        for (int q = 0; q < per - 1; q++) ok = ok && want[q] && n_out[q] == n_in[0];
        for (size_t e = 0; ok && e < n_in[0]; e++) {
            /* m, then v, then p, each reading what is stored before it (otc/optim.h) */
            args[OTC_OPTIM_ARG_P] = in[0][e];
            args[OTC_OPTIM_ARG_G] = in[1][e];
            args[OTC_OPTIM_ARG_M] = in[2][e];
            args[OTC_OPTIM_ARG_V] = adam ? in[3][e] : 0;
            otc_expr_env env = {.arg = args, .n_arg = OTC_OPTIM_ARG_COUNT};
            if (rule->m) args[OTC_OPTIM_ARG_M] = otc_expr_eval(rule->m, &env);
            if (rule->v) args[OTC_OPTIM_ARG_V] = otc_expr_eval(rule->v, &env);
            float p = otc_expr_eval(rule->p, &env);
            float got[3] = {p, args[OTC_OPTIM_ARG_M], args[OTC_OPTIM_ARG_V]};
            for (int q = 0; q < per - 1; q++) {
                float w = want[q][e];
                if (fabsf(got[q] - w) > 1e-6f + 1e-5f * fabsf(w)) {
                    printf("%s: tensor %d element %zu output %d: otc %.9g, expected %.9g\n", name,
                           j, e, q, got[q], w);
                    ok = false;
                }
                checked++;
            }
        }
        for (int q = 0; q < 4; q++) free(in[q]);
        for (int q = 0; q < 3; q++) free(want[q]);
    }
    printf("%s (%s): %s, %d values\n", name, rule->name, ok ? "matches" : "DIFFERS", checked);
    return ok ? 0 : 1;
}

TEST(onnx_testdata_optimisers) {
    struct stat sb;
    if (stat(DATA "/node/test_adam", &sb) != 0) {
        printf("no %s (Debian's libonnx-testdata): skipped\n", DATA);
        exit(77);
    }
    CHECK(check_optimiser("test_momentum", 1, 0) == 0);
    CHECK(check_optimiser("test_momentum_multiple", 2, 0) == 0);
    CHECK(check_optimiser("test_nesterov_momentum", 1, 0) == 0);
    CHECK(check_optimiser("test_adam", 1, 0) == 0);
    /* Its expected values were computed with epsilon 1e-2, which its node does not carry
     * (onnx's test generator set it on the reference, not on the node). */
    CHECK(check_optimiser("test_adam_multiple", 2, 1e-2f) == 0);
}
