/* libFuzzer target for the NEAT config reader: any bytes must give a config within the
 * documented limits or an error message, never a crash, leak or out-of-bounds read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otc/neat_config.h"

static void visit(void *ctx, const char *section, const char *key, const char *value) {
    (void)ctx;
    if (!section[0] || !key[0] || !value) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1); /* exact size, so reading past the end is caught */
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    otc_neat_config c;
    otc_status s = otc_neat_config_parse(text, "fuzz.ini", &c);
    if (s != OTC_OK) {
        if (!otc_last_error()[0]) abort();
    } else {
        if (c.pop_size < 2 || c.pop_size > OTC_NEAT_MAX_POP_SIZE || c.num_inputs < 1 ||
            c.num_inputs > OTC_NEAT_MAX_INPUTS || c.num_outputs < 1 ||
            c.num_outputs > OTC_NEAT_MAX_OUTPUTS || c.num_hidden < 0 ||
            c.num_hidden > OTC_NEAT_MAX_HIDDEN || !(c.compatibility_threshold > 0) ||
            c.n_activation_options < 1)
            abort();
        otc_neat_config_list(&c, visit, NULL);
    }
    free(text);
    return 0;
}
