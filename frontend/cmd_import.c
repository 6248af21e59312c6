/* `otc import NET.json -o NET.otm`: a network exported by neat-python (export_network_json,
 * format 1.0) as an otc model with neat-python's semantics (otc/neat_python.h), which
 * `otc run`, `otc compile` and `otc viz` then take like any model. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "otc/file.h"
#include "otc/neat_python.h"
#include "otc/otc.h"

const char otc_cmd_import_summary[] = "read a neat-python network (JSON export) as a model";

int otc_cmd_import(int argc, char **argv) {
    const char *out = NULL;
    double advance = 0, step = 0;
    bool state_io = false;
    const otc_opt opts[] = {
        {"--out,--output,-o", OTC_OPT_STRING, &out, "FILE.otm: the model to write"},
        {"--advance-time", OTC_OPT_FLOAT, &advance,
         "T: ctrnn: the time each row advances the network (CTRNN.advance's advance_time; "
         "default: the file's \"advance_time\")"},
        {"--time-step", OTC_OPT_FLOAT, &step,
         "DT: ctrnn: the integration step (CTRNN.advance's time_step; default: the file's "
         "\"time_step\")"},
        {"--state-io", OTC_OPT_FLAG, &state_io,
         "recurrent, ctrnn: the state as a second input 'state' and a last output 'state_next' "
         "instead of Delay nodes (the caller carries it; the compilers take such a model)"},
    };
    const char *pos[1];
    int rc = otc_cli_parse("import", "NET.json -o NET.otm [options]", opts,
                           (int)(sizeof opts / sizeof opts[0]), argc, argv, pos, 1, 1);
    if (rc) return rc < 0 ? OTC_EXIT_OK : rc;
    if (!out) return otc_cli_error("import", "missing -o FILE.otm (try 'otc import --help')");
    if (advance < 0 || step < 0)
        return otc_cli_error("import", "--advance-time and --time-step must be positive");
    const otc_cli_file ins[] = {{"NET.json", pos[0]}};
    const otc_cli_file outs[] = {{"--output", out}};
    if ((rc = otc_cli_check_files("import", ins, 1, outs, 1))) return rc;

    char *text = NULL;
    size_t len = 0;
    if (otc_read_text_file(pos[0], OTC_MAX_NETWORK_BYTES, &text, &len) != OTC_OK)
        return otc_cli_error_file("import", pos[0]);
    char label[512];
    otc_cli_printable(pos[0], label, sizeof label);
    otc_graph *g = NULL;
    otc_neat_python_options o = {.advance_time = advance, .time_step = step, .state_io = state_io};
    otc_status st = otc_neat_python_import(text, len, label, &o, &g);
    free(text);
    if (st != OTC_OK) return otc_cli_error("import", "%s", otc_last_error());
    if (otc_model_save(g, out) != OTC_OK) {
        rc = otc_cli_error_file("import", out);
        otc_graph_free(g);
        return rc;
    }
    char so[512];
    printf("wrote %s (%d inputs, %d outputs)\n", otc_cli_printable(out, so, sizeof so),
           (int)otc_graph_node(g, otc_graph_input(g, 0))->shape.dim[1], otc_graph_output_count(g));
    otc_graph_free(g);
    return OTC_EXIT_OK;
}
