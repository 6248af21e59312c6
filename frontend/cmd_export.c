/* `otc export MODEL.otm -o MODEL.onnx`: a model as an ONNX file (opset 13) that ONNX runtimes
 * load, written atomically; what ONNX cannot express is refused naming the node
 * (docs/onnx-export.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "otc/onnx.h"
#include "otc/otc.h"

const char otc_cmd_export_summary[] = "write a model as an ONNX file";

int otc_cmd_export(int argc, char **argv) {
    const char *out = NULL;
    const otc_opt opts[] = {
        {"--out,--output,-o", OTC_OPT_STRING, &out,
         "FILE.onnx: the ONNX model to write ('-': standard output)"},
    };
    const char *pos[1];
    int rc = otc_cli_parse("export", "MODEL.otm -o MODEL.onnx", opts,
                           (int)(sizeof opts / sizeof opts[0]), argc, argv, pos, 1, 1);
    if (rc) return rc < 0 ? OTC_EXIT_OK : rc;
    if (!out) return otc_cli_error("export", "missing -o FILE.onnx (try 'otc export --help')");
    const otc_cli_file ins[] = {{"MODEL", pos[0]}};
    const otc_cli_file outs[] = {{"--output", out}};
    if ((rc = otc_cli_check_files("export", ins, 1, outs, 1))) return rc;

    otc_graph *g = NULL;
    if ((rc = otc_cli_load_model("export", pos[0], &g))) return rc;
    void *data = NULL;
    size_t len = 0;
    char label[512];
    otc_cli_printable(pos[0], label, sizeof label);
    if (otc_onnx_export(g, &data, &len) != OTC_OK) {
        rc = otc_cli_error("export", "%s: %s", label, otc_last_error());
    } else if (!(rc = otc_cli_write_output("export", out, data, len)) && strcmp(out, "-") != 0) {
        char so[512];
        printf("wrote %s (%zu bytes, %d inputs, %d outputs%s)\n",
               otc_cli_printable(out, so, sizeof so), len, otc_graph_input_count(g),
               otc_graph_output_count(g),
               otc_graph_is_recurrent(g) ? ", state as state_in:/state_out: pairs" : "");
    }
    free(data);
    otc_graph_free(g);
    return rc;
}
