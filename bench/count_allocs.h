/* Counting heap allocations: the including program's malloc, calloc and realloc count calls and
 * hand them to glibc's own allocator, so every allocation of the process (libotc's included)
 * is seen. Include once, in the program's main file. Not under AddressSanitizer, whose
 * allocator must see every block: there OTC_COUNTS_ALLOCS is 0 and nothing is counted. */
#ifndef OTC_COUNT_ALLOCS_H
#define OTC_COUNT_ALLOCS_H

#include <stdatomic.h>
#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define OTC_COUNTS_ALLOCS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OTC_COUNTS_ALLOCS 0
#endif
#endif
#ifndef OTC_COUNTS_ALLOCS
#define OTC_COUNTS_ALLOCS 1
#endif

static atomic_long allocations;

#if OTC_COUNTS_ALLOCS
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

void *malloc(size_t n) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_realloc(p, n);
}
void free(void *p) {
    __libc_free(p);
}
#endif

#endif
