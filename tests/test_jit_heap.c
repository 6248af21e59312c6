/* The JIT's compile heap (llvm_heap.c): once the JIT exists, part of glibc's heap is marked for
 * transparent huge pages, as the kernel reports it in /proc/self/smaps; a user's
 * GLIBC_TUNABLES malloc setting leaves the heap alone. Each case runs in its own process. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "otc/jit.h"
#include "otc/otc.h"

/* Does a [heap] mapping carry the kernel's "hg" flag (MADV_HUGEPAGE)? *found: was there a
 * [heap] mapping at all. */
static bool heap_marked(bool *found) {
    *found = false;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return false;
    char line[512];
    bool in_heap = false, marked = false;
    while (fgets(line, sizeof line, f)) {
        /* A mapping's first line: "start-end perms offset dev inode [path]"; then its
         * fields, "Name: value", VmFlags among them. */
        unsigned long start, end;
        if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
            in_heap = strstr(line, "[heap]") != NULL;
        else if (in_heap && strncmp(line, "VmFlags:", 8) == 0) {
            *found = true;
            if (strstr(line, " hg")) marked = true;
        }
    }
    fclose(f);
    return marked;
}

/* Skips (77) where the premise does not hold: no glibc heap of ours to mark (sanitizers
 * replace malloc), no transparent huge pages in the kernel. */
static void need_thp_heap(void) {
#if !defined(__linux__) || !defined(__GLIBC__) || defined(__SANITIZE_ADDRESS__)
    exit(77);
#else
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) exit(77);
    fclose(f);
#endif
}

/* The JIT created, as by any first compile (a one-neuron graph, the cache off; its forward
 * compiles on the first run, at its batch's form). */
static void make_jit(void) {
    otc_jit_options o = otc_jit_defaults();
    o.no_cache = true;
    o.tier = OTC_JIT_TIER_FAST;
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    int col = 0;
    float w = 0.5f;
    otc_id y = otc_neuron(g, "y", OTC_ACT_IDENTITY, 0.25f, 1.0f, 1, &x, &col, &w);
    REQUIRE(y >= 0 && otc_graph_mark_output(g, y) == OTC_OK);
    otc_executor *ex = otc_jit_executor_new(g, &o);
    CHECK_MSG(ex != NULL, "%s", otc_last_error());
    const float in[1] = {1.0f};
    CHECK_MSG(ex && otc_exec_set_input(ex, x, in, 1) == OTC_OK && otc_exec_forward(ex) == OTC_OK,
              "%s", otc_last_error());
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(jit_compile_heap_huge_pages) {
    need_thp_heap();
    unsetenv("GLIBC_TUNABLES");
    make_jit();
    bool found = false;
    bool marked = heap_marked(&found);
    CHECK(found);
    CHECK(marked);
}

TEST(jit_compile_heap_user_tunables) {
    need_thp_heap();
    /* glibc read its tunables at start (none); the JIT reads the variable when it is made. */
    setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0", 1);
    make_jit();
    bool found = false;
    CHECK(!heap_marked(&found));
}
