/* libFuzzer target for the ONNX importer: any bytes must give a graph or an error with a
 * message, never a crash, leak, hang or out-of-bounds read. No folder is given, so external
 * data is refused rather than read from wherever the fuzzer points. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otc/graph.h"
#include "otc/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* An exact-size copy, so a read past the end is caught. */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    otc_graph *g = NULL;
    otc_status st = otc_onnx_import(copy, size, "fuzz.onnx", NULL, &g);
    free(copy);
    if (st != OTC_OK) {
        if (g || !otc_last_error()[0]) abort(); /* errors must leave no graph and a message */
        return 0;
    }
    /* An imported graph is acyclic, with outputs. */
    int n = otc_graph_size(g);
    otc_id *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order || otc_graph_topo_order(g, order) != OTC_OK || otc_graph_output_count(g) < 1)
        abort();
    free(order);
    otc_graph_free(g);
    return 0;
}
