/* libFuzzer target for neat-python network import (export_network_json): any bytes must be
 * refused with a message or give a model that runs one forward pass, without a crash, leak,
 * hang or out-of-bounds access. The first byte picks the options (state_io, otc names, a
 * CTRNN's times), the rest is the file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otc/neat_python.h"
#include "otc/otc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    otc_neat_python_options o = {
        .state_io = data[0] & 1,
        .otc_act_names = (data[0] >> 1) & 1,
        /* 0: the file's own times; else a few steps, the copies of the network bounded */
        .advance_time = (data[0] >> 2) & 1 ? 0.05 : 0,
        .time_step = (data[0] >> 2) & 1 ? 0.01 : 0,
    };
    size--;
    char *text = malloc(size ? size : 1); /* exact size, so reading past the end is caught */
    if (!text) return 0;
    if (size) memcpy(text, data + 1, size);
    otc_graph *g = NULL;
    otc_status s = otc_neat_python_import(text, size, "fuzz.json", &o, &g);
    free(text);
    if (s != OTC_OK) {
        if (g || !otc_last_error()[0]) abort();
        return 0;
    }
    if (!g) abort();
    /* the model runs: zeros in, one step, for every input */
    otc_executor *ex = otc_interpreter_new(g, &(otc_exec_options){.inference = true});
    if (ex) {
        bool ok = true;
        for (int i = 0; ok && i < otc_graph_input_count(g); i++) {
            otc_id in = otc_graph_input(g, i);
            size_t n = otc_shape_size(otc_graph_node(g, in)->shape);
            float *x = calloc(n ? n : 1, sizeof *x);
            ok = x && otc_exec_set_input(ex, in, x, 1) == OTC_OK;
            free(x);
        }
        if (ok) (void)otc_exec_forward(ex);
        otc_exec_free(ex);
    }
    otc_graph_free(g);
    return 0;
}
