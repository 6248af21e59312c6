/* ONNX import against ONNX's own test data (Debian's libonnx-testdata): every model of the
 * node, pytorch-converted, pytorch-operator and simple suites that otc imports is run on the
 * interpreter with its test_data_set_0 inputs and compared with the expected outputs (rtol
 * 1e-3, atol 1e-7, as onnx's backend tests). Prints per suite how many passed, were refused
 * (with the reasons) and failed; fails if any imported model does not match. The expected
 * tensors are read with protobuf-c directly, not through the importer. Skips (77) without
 * the data. */
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
