/* Export then import: every model given (an .otm, or a neat-python network .json) is written
 * as ONNX by otc_onnx_export, read back by otc_onnx_import, and both graphs run on the
 * interpreter on the same random rows (a recurrent one stepped row by row from zero state, its
 * state_in:/state_out: pairs read back as Delays) must agree within 1e-5; the read-back graph
 * has as many Neurons and Delays as the original (the export's nodes are read back as the
 * Neuron and activation they spell, not as loose arithmetic).
 * Usage: onnx_roundtrip MODEL... */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/model.h"
#include "otc/neat_python.h"
#include "otc/onnx.h"
#include "otc/otc.h"

enum { ROWS = 7 };

static otc_graph *load(const char *path) {
    size_t n = strlen(path);
    otc_graph *g = NULL;
    if (n > 5 && !strcmp(path + n - 5, ".json")) {
        FILE *f = fopen(path, "rb");
        char *text = malloc(1 << 20);
        size_t len = f && text ? fread(text, 1, 1 << 20, f) : 0;
        if (f) fclose(f);
        if (len && otc_neat_python_import(text, len, path, NULL, &g)) g = NULL;
        free(text);
    } else if (otc_model_load(path, &g)) {
        g = NULL;
    }
    return g;
}

/* Nodes of op among those the outputs read (through Delays too): the export writes only
 * those. */
static int count(const otc_graph *g, otc_op op) {
    int n = otc_graph_size(g), top = 0, c = 0;
    bool *seen = calloc((size_t)n + 1, sizeof *seen);
    otc_id *stack = malloc(((size_t)n + 1) * sizeof *stack);
    for (int o = 0; seen && stack && o < otc_graph_output_count(g); o++) {
        otc_id id = otc_graph_output(g, o);
        if (!seen[id]) stack[top++] = id;
        seen[id] = true;
    }
    while (stack && top > 0) {
        const otc_node *nd = otc_graph_node(g, stack[--top]);
        c += nd->op == op;
        for (int i = 0; i < nd->n_inputs; i++)
            if (!seen[nd->inputs[i]]) {
                seen[nd->inputs[i]] = true;
                stack[top++] = nd->inputs[i];
            }
    }
    free(seen);
    free(stack);
    return c;
}

/* The outputs of g on rows (ROWS of each input), concatenated per row into out. */
static int run(otc_graph *g, float *const *rows, float *out, int *width) {
    otc_executor *ex = otc_interpreter_new(g, NULL);
    if (!ex) return 1;
    bool rec = otc_graph_is_recurrent(g);
    int steps = rec ? ROWS : 1, batch = rec ? 1 : ROWS, w = 0;
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < otc_graph_input_count(g); i++) {
            otc_id in = otc_graph_input(g, i);
            size_t per = otc_shape_size(otc_graph_node(g, in)->shape);
            if (otc_exec_set_input(ex, in, rows[i] + (size_t)s * per, batch)) goto fail;
        }
        if (otc_exec_forward(ex)) goto fail;
        w = 0;
        for (int o = 0; o < otc_graph_output_count(g); o++) {
            const float *v;
            otc_shape sh;
            if (otc_exec_value(ex, otc_graph_output(g, o), &v, &sh)) goto fail;
            size_t n = otc_shape_size(otc_graph_node(g, otc_graph_output(g, o))->shape);
            for (int r = 0; r < batch; r++)
                memcpy(out + (size_t)(s + r) * 4096 + (size_t)w, v + (size_t)r * n, n * sizeof *v);
            w += (int)n;
        }
    }
    *width = w;
    otc_exec_free(ex);
    return 0;
fail:
    otc_exec_free(ex);
    return 1;
}

static int check(const char *path, otc_rng *rng) {
    otc_graph *g = load(path), *back = NULL;
    void *data = NULL;
    size_t len = 0;
    float *rows[8] = {0}, *want = calloc(ROWS * 4096, sizeof *want),
          *got = calloc(ROWS * 4096, sizeof *got);
    int bad = 1, ww = 0, wg = 0;
    if (!g || !want || !got) {
        fprintf(stderr, "%s: %s\n", path, g ? "out of memory" : otc_last_error());
        goto done;
    }
    if (otc_onnx_export(g, &data, &len) || otc_onnx_import(data, len, path, NULL, &back)) {
        fprintf(stderr, "%s: %s\n", path, otc_last_error());
        goto done;
    }
    int n_in = otc_graph_input_count(g);
    if (n_in > 8 || n_in != otc_graph_input_count(back) ||
        otc_graph_output_count(g) != otc_graph_output_count(back) ||
        count(g, OTC_OP_NEURON) != count(back, OTC_OP_NEURON) ||
        count(g, OTC_OP_DELAY) != count(back, OTC_OP_DELAY)) {
        fprintf(stderr,
                "%s: read back with %d inputs, %d outputs, %d neurons, %d delays (wrote %d, %d, "
                "%d, %d)\n",
                path, otc_graph_input_count(back), otc_graph_output_count(back),
                count(back, OTC_OP_NEURON), count(back, OTC_OP_DELAY), n_in,
                otc_graph_output_count(g), count(g, OTC_OP_NEURON), count(g, OTC_OP_DELAY));
        goto done;
    }
    for (int i = 0; i < n_in; i++) {
        size_t per = otc_shape_size(otc_graph_node(g, otc_graph_input(g, i))->shape);
        if (!(rows[i] = malloc(ROWS * per * sizeof *rows[i]))) goto done;
        for (size_t k = 0; k < ROWS * per; k++) rows[i][k] = otc_rng_uniform(rng) * 5.0f - 2.5f;
    }
    if (run(g, rows, want, &ww) || run(back, rows, got, &wg) || ww != wg) {
        fprintf(stderr, "%s: running: %s (widths %d, %d)\n", path, otc_last_error(), ww, wg);
        goto done;
    }
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < ww; c++) {
            float a = want[r * 4096 + c], b = got[r * 4096 + c];
            if (!(fabsf(a - b) <= 1e-5f + 1e-5f * fabsf(a)) && !(isnan(a) && isnan(b))) {
                fprintf(stderr, "%s: row %d column %d: %.9g before, %.9g read back\n", path, r, c,
                        a, b);
                goto done;
            }
        }
    printf("ok %s: %zu bytes, %d nodes read back as %d, %d outputs a row\n", path, len,
           otc_graph_size(g), otc_graph_size(back), ww);
    bad = 0;
done:
    for (int i = 0; i < 8; i++) free(rows[i]);
    free(want);
    free(got);
    free(data);
    otc_graph_free(g);
    otc_graph_free(back);
    return bad;
}

int main(int argc, char **argv) {
    otc_rng rng;
    otc_rng_seed(&rng, 27);
    int bad = 0;
    for (int i = 1; i < argc; i++) bad |= check(argv[i], &rng);
    return bad;
}
