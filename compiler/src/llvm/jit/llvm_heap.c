/* The compile heap: before a process's first JIT compile, room at the top of glibc's main heap
 * is set aside in transparent huge pages, so LLVM's allocations fault in 2 MB at a time. */
#define _GNU_SOURCE /* sbrk, madvise's MADV_HUGEPAGE */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llvm_internal.h"

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

/* Why: a cold compile of a 100-neuron genome in the fast tier touches ~2-3 MB of fresh heap,
 * one page fault per 4 KB page (~500-800 faults: a sixth of the compile on this VM, where a
 * fault costs several microseconds). glibc can put its heap in huge pages
 * (GLIBC_TUNABLES=glibc.malloc.hugetlb=1) but reads that only from the environment at process
 * start; this does the same for the part of the heap the compiles use. */
enum {
    RESERVE = 16 << 20,          /* heap set aside in huge pages */
    HUGE_PAGE = 2 << 20,         /* x86-64's and most kernels' transparent huge page */
    MMAP_THRESHOLD = 4 << 20,    /* LLVM's tables and vectors up to this come from the heap */
    TRIM_THRESHOLD = 2 * RESERVE /* the reserve is not given back when freed */
};

/* The reserve's head below its first huge-page boundary, held for the process's life. */
static void *head;

void otc_llvm_heap_prepare(void) {
    /* A user's own malloc tuning is left alone. */
    const char *t = getenv("GLIBC_TUNABLES");
    if (t && strstr(t, "glibc.malloc")) return;
    /* The reserve from the main heap (brk), not a mapping of its own, so it is reused after
     * it is freed: requests below the threshold are served from the heap. */
    if (!mallopt(M_MMAP_THRESHOLD, RESERVE + HUGE_PAGE)) return;
    mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    char *p = malloc(RESERVE);
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    if (!p) return;
    void *brk_end = sbrk(0);
    uintptr_t b = (uintptr_t)p, top = (uintptr_t)brk_end;
    /* Only when the block is in the brk heap (glibc falls back to mappings when brk cannot
     * grow; a sanitizer's allocator has its own): madvise marks the heap's pages from the
     * first huge-page boundary in it. */
    bool in_brk = brk_end != (void *)-1 && b < top && b + RESERVE <= top;
    uintptr_t a = (b + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    uintptr_t e = top & ~(uintptr_t)(HUGE_PAGE - 1);
    /* Where huge pages are off (or the kernel has none) this fails: 4 KB pages, as before. */
    if (in_brk && e > a) (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
    free(p);
    /* The heap's next allocations would fill the block's head below the first boundary
     * first, in 4 KB pages (up to 2 MB: most of a small compile's faults). It is kept
     * allocated, never touched past its header, so they start at the boundary. */
    if (in_brk && e > a && a - b > 64) {
        head = malloc(a - b - 32);
        if (head && (uintptr_t)head != b) {
            free(head);
            head = NULL;
        }
    }
}
#else
void otc_llvm_heap_prepare(void) {}
#endif
