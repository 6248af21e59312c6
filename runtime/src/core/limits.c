/* Memory estimates: the bytes a graph's values need at a batch, and the check against what
 * the machine (or OTC_MEMORY_LIMIT) allows, made before a command allocates. */
#include "otc/limits.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static uint64_t add_sat(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t mul_sat(uint64_t a, uint64_t b) {
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

uint64_t otc_graph_value_bytes(const otc_graph *g, int64_t batch) {
    uint64_t total = 0, b = batch > 0 ? (uint64_t)batch : 1;
    for (otc_id id = 0; id < otc_graph_size(g); id++) {
        otc_shape s = otc_graph_node(g, id)->shape;
        uint64_t n = otc_shape_size(s);
        if (otc_shape_is_batched(s)) n = mul_sat(n, b);
        total = add_sat(total, mul_sat(n, sizeof(float)));
    }
    return total;
}

uint64_t otc_memory_limit(void) {
    const char *env = getenv("OTC_MEMORY_LIMIT");
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        uint64_t unit = *end == 'K' || *end == 'k'   ? 1ull << 10
                        : *end == 'M' || *end == 'm' ? 1ull << 20
                        : *end == 'G' || *end == 'g' ? 1ull << 30
                                                     : 1;
        if (end != env && (unit == 1 ? *end == '\0' : end[1] == '\0')) return mul_sat(v, unit);
    }
    /* The machine's memory, asked once: sysconf(_SC_PHYS_PAGES) is a sysinfo system call, and
     * training through time checks every window it records. */
    static _Atomic uint64_t physical;
    uint64_t bytes = atomic_load_explicit(&physical, memory_order_relaxed);
    if (!bytes) {
        long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
        bytes = pages <= 0 || size <= 0 ? UINT64_MAX /* unknown: no limit */
                                        : mul_sat((uint64_t)pages, (uint64_t)size);
        atomic_store_explicit(&physical, bytes, memory_order_relaxed);
    }
    return bytes;
}

/* "123 bytes", "4.5 MB" or "68 GB" (binary units), for messages. */
static const char *human(uint64_t b, char *buf, size_t len) {
    if (b < (1u << 20))
        snprintf(buf, len, "%llu bytes", (unsigned long long)b);
    else if (b < (1u << 30))
        snprintf(buf, len, "%.3g MB", (double)b / (1u << 20));
    else
        snprintf(buf, len, "%.3g GB", (double)b / (1u << 30));
    return buf;
}

otc_status otc_memory_check(uint64_t bytes, const char *what) {
    uint64_t limit = otc_memory_limit();
    if (bytes <= limit) return OTC_OK;
    char need[32], have[32];
    return otc_fail(OTC_ERR_NOMEM, "%s needs about %s of memory, more than the %s %s", what,
                    human(bytes, need, sizeof need), human(limit, have, sizeof have),
                    getenv("OTC_MEMORY_LIMIT") ? "OTC_MEMORY_LIMIT allows" : "this machine has");
}
