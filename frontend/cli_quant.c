/* `--quantize int8 --calibrate DATA` for compile and run: the model calibrated on CSV rows
 * or IDX images and lowered to integer steps (otc/quant.h). */
#include <string.h>

#include "cli.h"
#include "otc/quant.h"

int otc_cli_quantize(const char *cmd, const char *model, otc_graph *g, const char *calibrate,
                     const char *drop, otc_qmodel **out) {
    *out = NULL;
    if (!calibrate)
        return otc_cli_error(cmd,
                             "--quantize int8 needs --calibrate DATA (a CSV file, or idx:DIR): "
                             "a few hundred rows that set each value's range");
    otc_dataset *d = NULL;
    otc_seq_dataset *sd = NULL;
    int rc;
    otc_cli_csv co = {.skip_targets = true, .targets = drop, .header = -1};
    if (otc_cli_idx_dir(calibrate)) {
        if (drop) return otc_cli_error(cmd, "--calibrate idx:DIR takes no --drop");
        rc = otc_cli_load_idx(cmd, calibrate, "train", g, model, &d);
    } else if (otc_graph_is_recurrent(g)) {
        /* The rows are one sequence's steps, in order. */
        rc = otc_cli_load_seq_csv(cmd, calibrate, &co, &sd);
        if (!rc) d = sd->data;
    } else {
        rc = otc_cli_load_csv(cmd, calibrate, &co, &d);
    }
    otc_id in;
    int want = otc_graph_input_count(g) == 1 ? otc_cli_row_width(g, otc_graph_input(g, 0)) : -1;
    if (!rc && want > 0 && d->n_features != want && !otc_cli_idx_dir(calibrate)) {
        char sd_[512];
        rc = otc_cli_error(cmd,
                           "--calibrate %s has %d feature columns but the model's input takes %d "
                           "(leave out the others, e.g. the labels, with --drop COLS)",
                           otc_cli_printable(calibrate, sd_, sizeof sd_), d->n_features, want);
    }
    if (!rc) rc = otc_cli_data_input(cmd, g, model, calibrate, d, &in);
    if (!rc && d->rows > 4096 && !sd) {
        /* A few thousand rows set the ranges as well as sixty thousand, in a fraction of the
         * time: the first 4096 calibrate. */
        d->rows = 4096;
    }
    if (!rc && otc_quantize_int8(g, d, out)) {
        char sm[512], sd_[512];
        rc =
            otc_cli_error(cmd, "%s (calibrated on %s): %s", otc_cli_printable(model, sm, sizeof sm),
                          otc_cli_printable(calibrate, sd_, sizeof sd_), otc_last_error());
    }
    if (sd)
        otc_seq_dataset_free(sd);
    else
        otc_dataset_free(d);
    return rc;
}
