/* Compiled modules keyed by graph structure (never weights): an evolution run that meets
 * the same topology again reuses its code. Entries are reference counted by executors; the
 * unused ones stay in a least-recently-used list of bounded length, and leaving it returns
 * their JIT memory (the ResourceTracker is removed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llvm_cache.h"

static otc_jit_module *lru_head, *lru_tail; /* all cached entries, most recent first */
static int n_cached, n_in_use, capacity = 64;
static long hits, misses;

/* ---- the key: everything the code depends on, in a byte string ---- */

typedef struct {
    unsigned char *p;
    size_t len, cap;
    bool oom;
} keybuf;

static void put(keybuf *k, const void *data, size_t n) {
    if (k->oom) return;
    if (k->len + n > k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 1024;
        while (cap < k->len + n) cap *= 2;
        unsigned char *q = realloc(k->p, cap);
        if (!q) {
            k->oom = true;
            return;
        }
        k->p = q;
        k->cap = cap;
    }
    memcpy(k->p + k->len, data, n);
    k->len += n;
}

static void put_i(keybuf *k, int64_t v) { put(k, &v, sizeof v); }
static void put_f(keybuf *k, float v) { put(k, &v, sizeof v); }

static otc_status make_key(const otc_plan *plan, const otc_llvm_render_options *o, keybuf *k) {
    const otc_graph *g = plan->graph;
    int n = otc_graph_size(g);
    put_i(k, o->lanes);
    put_i(k, o->train);
    put_i(k, o->blas);
    put_i(k, plan->options.train);
    put_i(k, plan->options.loss);
    put_i(k, plan->options.fuse);
    put_i(k, plan->options.no_sharing);
    put_i(k, n);
    for (int id = 0; id < n; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        put_i(k, nd->op);
        put_i(k, nd->n_inputs);
        for (int i = 0; i < nd->n_inputs; i++) put_i(k, nd->inputs[i]);
        if (nd->op == OTC_OP_NEURON)
            for (int i = 0; i < nd->n_inputs - 2; i++) put_i(k, nd->cols[i]);
        put_i(k, nd->shape.ndim);
        for (int d = 0; d < nd->shape.ndim; d++) put_i(k, nd->shape.dim[d]);
        put_f(k, nd->alpha);
        put_f(k, nd->scale);
        put_i(k, nd->act);
        put_i(k, nd->axis);
        put_i(k, nd->start);
        put_i(k, nd->len);
        put_i(k, nd->trainable);
    }
    int outs = otc_graph_output_count(g);
    put_i(k, outs);
    for (int i = 0; i < outs; i++) put_i(k, otc_graph_output(g, i));
    if (k->oom) return otc_fail(OTC_ERR_NOMEM, "out of memory for a JIT cache key");
    return OTC_OK;
}

static uint64_t fnv1a(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* ---- the list ---- */

static void unlink_entry(otc_jit_module *m) {
    if (m->prev) m->prev->next = m->next;
    else lru_head = m->next;
    if (m->next) m->next->prev = m->prev;
    else lru_tail = m->prev;
    m->prev = m->next = NULL;
}

static void push_front(otc_jit_module *m) {
    m->prev = NULL;
    m->next = lru_head;
    if (lru_head) lru_head->prev = m;
    lru_head = m;
    if (!lru_tail) lru_tail = m;
}

static void destroy(otc_jit_module *m) {
    otc_llvm_code_free(m->code);
    free(m->key);
    free(m);
}

/* Drop unused entries, oldest first, until at most `keep` unused ones remain. */
static void trim(int keep) {
    int unused = n_cached - n_in_use;
    for (otc_jit_module *m = lru_tail; m && unused > keep;) {
        otc_jit_module *prev = m->prev;
        if (m->refs == 0) {
            unlink_entry(m);
            n_cached--;
            unused--;
            destroy(m);
        }
        m = prev;
    }
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static otc_status compile(const otc_plan *plan, const otc_llvm_render_options *o,
                          otc_jit_module *m) {
    LLVMTargetMachineRef tm = NULL;
    otc_status st = otc_llvm_jit_target_machine(&tm);
    if (st) return st;
    char prefix[32];
    otc_llvm_render_options ro = *o;
    ro.prefix = otc_llvm_jit_unique_prefix(prefix, sizeof prefix);
    LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContext();
    LLVMModuleRef mod = NULL;
    st = otc_llvm_render(plan, &ro, LLVMOrcThreadSafeContextGetContext(tsctx), &mod);
    if (!st) st = otc_llvm_finish_module(mod, tm, true);
    if (st) {
        if (mod) LLVMDisposeModule(mod);
        LLVMOrcDisposeThreadSafeContext(tsctx);
        return st;
    }
    static const char *const what[OTC_JIT_FN_COUNT] = {"forward", "backward", "train_step"};
    char names[OTC_JIT_FN_COUNT][64];
    const char *np[OTC_JIT_FN_COUNT];
    int n = o->train ? OTC_JIT_FN_COUNT : 1;
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "%s%s", prefix, what[i]);
        np[i] = names[i];
    }
    void *addrs[OTC_JIT_FN_COUNT] = {0};
    st = otc_llvm_jit_add(tsctx, mod, n, np, addrs, &m->code);
    if (st) return st;
    for (int i = 0; i < n; i++) m->fn[i] = (otc_llvm_fn)addrs[i];
    return OTC_OK;
}

otc_status otc_llvm_module_get(const otc_plan *plan, const otc_llvm_render_options *o,
                               bool use_cache, otc_jit_module **out, bool *hit) {
    *out = NULL;
    *hit = false;
    keybuf k = {0};
    otc_status st = make_key(plan, o, &k);
    if (st) {
        free(k.p);
        return st;
    }
    uint64_t h = fnv1a(k.p, k.len);
    otc_llvm_jit_lock();
    if (use_cache) {
        for (otc_jit_module *m = lru_head; m; m = m->next) {
            if (m->hash != h || m->key_len != k.len || memcmp(m->key, k.p, k.len)) continue;
            if (m->refs++ == 0) n_in_use++;
            unlink_entry(m);
            push_front(m);
            hits++;
            otc_llvm_jit_unlock();
            free(k.p);
            *out = m;
            *hit = true;
            return OTC_OK;
        }
    }
    otc_jit_module *m = calloc(1, sizeof *m);
    if (!m) {
        otc_llvm_jit_unlock();
        free(k.p);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a JIT module");
    }
    double t0 = now_ms();
    st = compile(plan, o, m);
    m->compile_ms = now_ms() - t0;
    if (st) {
        otc_llvm_jit_unlock();
        free(k.p);
        free(m);
        return st;
    }
    misses++;
    m->refs = 1;
    m->hash = h;
    m->key = k.p;
    m->key_len = k.len;
    m->cached = use_cache;
    if (use_cache) {
        push_front(m);
        n_cached++;
        n_in_use++;
        trim(capacity);
    }
    otc_llvm_jit_unlock();
    *out = m;
    return OTC_OK;
}

void otc_llvm_module_release(otc_jit_module *m) {
    if (!m) return;
    otc_llvm_jit_lock();
    if (--m->refs == 0) {
        if (m->cached) {
            n_in_use--;
            trim(capacity);
        } else {
            destroy(m);
        }
    }
    otc_llvm_jit_unlock();
}

otc_jit_cache_stats otc_jit_cache_info(void) {
    otc_llvm_jit_lock();
    otc_jit_cache_stats s = {n_cached, n_in_use, hits, misses};
    otc_llvm_jit_unlock();
    return s;
}

void otc_jit_cache_clear(void) {
    otc_llvm_jit_lock();
    trim(0);
    otc_llvm_jit_unlock();
}

void otc_jit_cache_set_capacity(int entries) {
    otc_llvm_jit_lock();
    capacity = entries < 0 ? 0 : entries;
    trim(capacity);
    otc_llvm_jit_unlock();
}
