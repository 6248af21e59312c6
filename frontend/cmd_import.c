/* `otc import FILE -o NET.otm`: a network exported by neat-python (export_network_json,
 * format 1.0; otc/neat_python.h) or an ONNX model (otc/onnx.h) as an otc model, which
 * `otc run`, `otc compile` and `otc viz` then take like any model. The format is told by the
 * content: JSON text starts with '{', anything else is read as ONNX protobuf. */
#include <ctype.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "otc/file.h"
#include "otc/neat_python.h"
#include "otc/onnx.h"
#include "otc/otc.h"

const char otc_cmd_import_summary[] =
    "read an ONNX model or a neat-python network (JSON export) as a model";

int otc_cmd_import(int argc, char **argv) {
    const char *out = NULL;
    double advance = 0, step = 0;
    bool state_io = false;
    const otc_opt opts[] = {
        {"--out,--output,-o", OTC_OPT_STRING, &out, "FILE.otm: the model to write"},
        {"--advance-time", OTC_OPT_FLOAT, &advance,
         "T: neat-python ctrnn: the time each row advances the network (CTRNN.advance's "
         "advance_time; "
         "default: the file's \"advance_time\")"},
        {"--time-step", OTC_OPT_FLOAT, &step,
         "DT: neat-python ctrnn: the integration step (CTRNN.advance's time_step; default: the "
         "file's "
         "\"time_step\")"},
        {"--state-io", OTC_OPT_FLAG, &state_io,
         "neat-python recurrent, ctrnn: the state as a second input 'state' and a last output "
         "'state_next' "
         "instead of Delay nodes (the caller carries it; the compilers take such a model)"},
    };
    const char *pos[1];
    int rc = otc_cli_parse("import", "MODEL.onnx|NET.json -o NET.otm [options]", opts,
                           (int)(sizeof opts / sizeof opts[0]), argc, argv, pos, 1, 1);
    if (rc) return rc < 0 ? OTC_EXIT_OK : rc;
    if (!out) return otc_cli_error("import", "missing -o FILE.otm (try 'otc import --help')");
    if (advance < 0 || step < 0)
        return otc_cli_error("import", "--advance-time and --time-step must be positive");
    const otc_cli_file ins[] = {{"input", pos[0]}};
    const otc_cli_file outs[] = {{"--output", out}};
    if ((rc = otc_cli_check_files("import", ins, 1, outs, 1))) return rc;

    char *data = NULL;
    size_t len = 0;
    size_t limit =
        OTC_MAX_ONNX_BYTES > OTC_MAX_NETWORK_BYTES ? OTC_MAX_ONNX_BYTES : OTC_MAX_NETWORK_BYTES;
    if (otc_read_file(pos[0], limit, &data, &len) != OTC_OK)
        return otc_cli_error_file("import", pos[0]);
    char label[512];
    otc_cli_printable(pos[0], label, sizeof label);
    size_t first = 0;
    while (first < len && isspace((unsigned char)data[first])) first++;
    bool json = first < len && data[first] == '{';
    otc_graph *g = NULL;
    otc_status st;
    if (json) {
        if (len > OTC_MAX_NETWORK_BYTES || memchr(data, 0, len)) {
            free(data);
            return otc_cli_error("import",
                                 "%s: not a neat-python JSON text (a NUL byte, or "
                                 "more than %zu bytes)",
                                 label, (size_t)OTC_MAX_NETWORK_BYTES);
        }
        otc_neat_python_options o = {
            .advance_time = advance, .time_step = step, .state_io = state_io};
        st = otc_neat_python_import(data, len, label, &o, &g);
    } else {
        if (advance > 0 || step > 0 || state_io) {
            free(data);
            return otc_cli_error("import",
                                 "%s: --advance-time, --time-step and --state-io are "
                                 "for neat-python networks, not ONNX",
                                 label);
        }
        /* External tensor data is read from the model's own folder only. */
        char *copy = strdup(pos[0]);
        st = copy ? otc_onnx_import(data, len, label, dirname(copy), &g)
                  : otc_fail(OTC_ERR_NOMEM, "out of memory");
        free(copy);
    }
    free(data);
    if (st != OTC_OK) return otc_cli_error("import", "%s", otc_last_error());
    if (otc_model_save(g, out) != OTC_OK) {
        rc = otc_cli_error_file("import", out);
        otc_graph_free(g);
        return rc;
    }
    char so[512];
    if (json)
        printf("wrote %s (%d inputs, %d outputs)\n", otc_cli_printable(out, so, sizeof so),
               (int)otc_graph_node(g, otc_graph_input(g, 0))->shape.dim[1],
               otc_graph_output_count(g));
    else
        printf("wrote %s (ONNX: %d inputs, %d outputs, %d nodes)\n",
               otc_cli_printable(out, so, sizeof so), otc_graph_input_count(g),
               otc_graph_output_count(g), otc_graph_size(g));
    otc_graph_free(g);
    return OTC_EXIT_OK;
}
