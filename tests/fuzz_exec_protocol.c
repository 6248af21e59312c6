/* libFuzzer target for the exec: task's protocol reader (otc/neat_exec.h): any bytes, split
 * into lines as the task splits an environment's output, must parse into finite numbers of
 * the promised count or be refused, never a crash, leak or out-of-bounds access. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otc/neat_exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const int n_in = 1 + data[0] % 8; /* the first byte: num_inputs */
    data++;
    size--;
    double v[8 + 3];
    bool step = false; /* the first line answers 'reset', the others 'act' */
    while (size > 0) {
        const uint8_t *nl = memchr(data, '\n', size);
        size_t len = nl ? (size_t)(nl - data) : size;
        char *line = malloc(len + 1); /* exact size, so reading past the end is caught */
        if (!line) return 0;
        memcpy(line, data, len);
        line[len] = '\0';
        otc_neat_exec_reply r;
        if (otc_neat_exec_parse(line, step, n_in, v, &r)) {
            bool ok = isfinite(r.reward) && (r.n_obs == n_in || (r.done && r.n_obs == 0)) &&
                      (step || (!r.done && r.reward == 0));
            for (int i = 0; i < r.n_obs; i++) ok = ok && isfinite(v[i]);
            if (!ok) abort();
        }
        free(line);
        step = true;
        data += nl ? len + 1 : len;
        size -= nl ? len + 1 : len;
    }
    return 0;
}
