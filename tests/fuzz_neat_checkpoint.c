/* libFuzzer target for NEAT checkpoints: any bytes must be refused with a message or give a
 * population that can run a generation (evaluation, reproduction, speciation) without a
 * crash, leak or out-of-bounds access. Resumes with tests/fuzz/neat_fuzz.ini and task xor. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/neat.h"

static otc_neat_config config;
static otc_neat_task *task;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    if (otc_neat_config_load(OTC_ROOT "/tests/fuzz/neat_fuzz.ini", &config) != OTC_OK ||
        otc_neat_task_create("xor", &config, &task) != OTC_OK) {
        fprintf(stderr, "fuzz_neat_checkpoint: %s\n", otc_last_error());
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size ? size : 1); /* exact size, so reading past the end is caught */
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    otc_neat_population *p = NULL;
    otc_status s = otc_neat_checkpoint_parse(text, size, "fuzz.json", &config, "xor", &p);
    free(text);
    if (s != OTC_OK) {
        if (p || !otc_last_error()[0]) abort();
        return 0;
    }
    if (!p || otc_neat_population_size(p) != config.pop_size) abort();
    otc_neat_step_options o = {.threads = 1};
    if (otc_neat_generation(p) < 1000) (void)otc_neat_step(p, task, &o, NULL);
    otc_neat_population_free(p);
    return 0;
}
