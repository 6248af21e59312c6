/* Private to the LLVM backend: compiled modules shared through the structure cache. */
#ifndef OTC_LLVM_CACHE_H
#define OTC_LLVM_CACHE_H

#include "llvm_render.h"

enum { OTC_JIT_FORWARD, OTC_JIT_BACKWARD, OTC_JIT_TRAIN_STEP, OTC_JIT_UPDATE, OTC_JIT_FN_COUNT };

/* Code compiled in one LLVM module (one ResourceTracker), shared by the plans compiled
 * together and freed with the last of them. */
typedef struct {
    otc_llvm_code *code;
    int refs;
    bool keyed;      /* its symbols are named after key, its on-disk cache key */
    uint64_t key[2]; /* (no other live module may then have the same key) */
} otc_jit_shared;

typedef struct otc_jit_module {
    otc_llvm_fn fn[OTC_JIT_FN_COUNT]; /* NULL where the module has no such function */
    double compile_ms;                /* its share of the compile that produced it */
    double compile_cpu_ms;            /* the same in thread CPU time */
    /* Owned by the cache. */
    otc_jit_shared *code;
    unsigned char *key;
    size_t key_len;
    uint64_t hash;
    int refs;
    bool cached;
    struct otc_jit_module *prev, *next;
} otc_jit_module;

/* The module for plan rendered with o: from the cache when use_cache and an identical
 * structure was compiled before (*hit set), else compiled now. Release it when done. */
otc_status otc_llvm_module_get(const otc_plan *plan, const otc_llvm_render_options *o,
                               bool use_cache, otc_jit_module **out, bool *hit);
/* The same for n plans: cached ones reused, the others compiled together in one LLVM
 * module (one optimiser and code generator run for all). On failure nothing is returned. */
otc_status otc_llvm_modules_get(const otc_plan *const *plans, const otc_llvm_render_options *o,
                                int n, bool use_cache, otc_jit_module **out, bool *hits);
void otc_llvm_module_release(otc_jit_module *m);

#endif
