/* Writes the models the limits CLI tests run on: "huge.otm", a legal few-hundred-byte model
 * whose values are 1 GiB per sample (x [B,16384,16384] -> relu), which every command must
 * refuse before allocating. Usage: make_limit_models OUTDIR */
#include <stdio.h>

#include "otc/otc.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_limit_models OUTDIR\n");
        return 2;
    }
    otc_graph *g = otc_graph_new();
    otc_shape s = otc_shape_make(3, (int[]){OTC_BATCH, 1 << 14, 1 << 14});
    otc_id x = otc_input(g, "x", s);
    otc_id y = otc_activation(g, OTC_OP_RELU, x, 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/huge.otm", argv[1]);
    otc_status st = y < 0 ? OTC_ERR_ARG : otc_graph_mark_output(g, y);
    if (!st) st = otc_model_save(g, path);
    if (st) fprintf(stderr, "make_limit_models: %s\n", otc_last_error());
    otc_graph_free(g);
    return st ? 1 : 0;
}
