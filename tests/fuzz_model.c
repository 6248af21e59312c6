/* libFuzzer target for the .otm reader: any bytes must give a graph or an error, never a
 * crash, leak or out-of-bounds read. Each input is tried as given and with its trailing CRC
 * rewritten to match, so mutations get past the checksum into the JSON and graph checks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otc/graph.h"
#include "otc/model.h"

static uint32_t crc32_ieee(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

static void try_load(const uint8_t *data, size_t size) {
    otc_graph *g = NULL;
    otc_status st = otc_model_load_buffer(data, size, "fuzz.otm", &g);
    if (st != OTC_OK) {
        if (g || !otc_last_error()[0]) abort(); /* errors must leave no graph and a message */
        return;
    }
    /* A loaded graph must be acyclic and fully walkable. */
    int n = otc_graph_size(g);
    otc_id *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order || otc_graph_topo_order(g, order) != OTC_OK) abort();
    free(order);
    for (int i = 0; i < otc_graph_output_count(g); i++)
        if (!otc_graph_node(g, otc_graph_output(g, i))) abort();
    otc_graph_free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    try_load(data, size);
    if (size >= 4) {
        /* An exact-size copy, so a read past the end is caught in this pass too. */
        uint8_t *copy = malloc(size);
        if (!copy) return 0;
        memcpy(copy, data, size);
        uint32_t crc = crc32_ieee(copy, size - 4);
        for (int i = 0; i < 4; i++) copy[size - 4 + i] = (uint8_t)(crc >> (8 * i));
        try_load(copy, size);
        free(copy);
    }
    return 0;
}
