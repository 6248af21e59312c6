/* Compiled modules keyed by graph structure (never weights): an evolution run that meets
 * the same topology again reuses its code. Entries are reference counted by executors; the
 * unused ones stay in a least-recently-used list of bounded length, and leaving it returns
 * their JIT memory (the ResourceTracker is removed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llvm_cache.h"
#include "llvm_pipeline.h"

static otc_jit_module *lru_head, *lru_tail; /* all cached entries, most recent first */
static int n_cached, n_in_use, capacity = 64;
static long n_hits, n_misses;

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

static void put_i(keybuf *k, int64_t v) {
    put(k, &v, sizeof v);
}
static void put_f(keybuf *k, float v) {
    put(k, &v, sizeof v);
}

static otc_status make_key(const otc_plan *plan, const otc_llvm_render_options *o, keybuf *k) {
    const otc_graph *g = plan->graph;
    int n = otc_graph_size(g);
    put_i(k, o->lanes);
    put_i(k, o->train);
    put_i(k, o->blas);
    put_i(k, o->fast);
    put_i(k, o->exact);
    put_i(k, o->chunk_group);
    put_i(k, o->forms);
    put_i(k, plan->options.train);
    put_i(k, plan->options.loss);
    put_i(k, plan->options.fuse);
    put_i(k, plan->options.no_sharing);
    put_i(k, plan->options.keep_loss);
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
        put_i(k, nd->agg);
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
    if (m->prev)
        m->prev->next = m->next;
    else
        lru_head = m->next;
    if (m->next)
        m->next->prev = m->prev;
    else
        lru_tail = m->prev;
    m->prev = m->next = NULL;
}

static void push_front(otc_jit_module *m) {
    m->prev = NULL;
    m->next = lru_head;
    if (lru_head) lru_head->prev = m;
    lru_head = m;
    if (!lru_tail) lru_tail = m;
}

static void live_key_remove(const uint64_t key[2]);

static void shared_release(otc_jit_shared *c) {
    if (c && --c->refs == 0) {
        if (c->keyed) live_key_remove(c->key);
        otc_llvm_code_free(c->code);
        free(c);
    }
}

static void destroy(otc_jit_module *m) {
    shared_release(m->code);
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

static void release_locked(otc_jit_module *m);

static const char *const fn_names[OTC_JIT_FN_COUNT] = {"forward", "backward", "train_step",
                                                       "update"};

/* Modules in the JIT named after their on-disk key (see name_by_key): a second live module
 * with the same content cannot take the same names, and is compiled under serial names. */
static uint64_t (*live_keys)[2];
static int n_live_keys, cap_live_keys;

static int live_key_index(const uint64_t key[2]) {
    for (int i = 0; i < n_live_keys; i++)
        if (live_keys[i][0] == key[0] && live_keys[i][1] == key[1]) return i;
    return -1;
}

static bool live_key_add(const uint64_t key[2]) {
    if (n_live_keys == cap_live_keys) {
        int cap = cap_live_keys ? 2 * cap_live_keys : 16;
        uint64_t(*p)[2] = realloc(live_keys, (size_t)cap * sizeof *p);
        if (!p) return false;
        live_keys = p;
        cap_live_keys = cap;
    }
    live_keys[n_live_keys][0] = key[0];
    live_keys[n_live_keys][1] = key[1];
    n_live_keys++;
    return true;
}

static void live_key_remove(const uint64_t key[2]) {
    int i = live_key_index(key);
    if (i >= 0) {
        live_keys[i][0] = live_keys[n_live_keys - 1][0];
        live_keys[i][1] = live_keys[n_live_keys - 1][1];
        n_live_keys--;
    }
}

/* Plan i of a batch is rendered under the placeholder prefix "otc_<i>_" (the same in every
 * process, so the bitcode and its key are too); when the on-disk cache is on and no live
 * module has this key, every symbol is then renamed "otc<key>_<i>_", names a cached object
 * from another process also has. Otherwise the serial prefix "otc<N>_<i>_". */
static void placeholder(char *buf, size_t len, int i) {
    snprintf(buf, len, "otc_%d_", i);
}

/* v's name with prefix `from` (fl bytes) replaced by `to`, when it has that prefix. */
static void rename_value(LLVMValueRef v, const char *from, size_t fl, const char *to) {
    size_t len;
    const char *name = LLVMGetValueName2(v, &len);
    if (len < fl || memcmp(name, from, fl)) return;
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%s%.*s", to, (int)(len - fl), name + fl);
    if (n > 0 && (size_t)n < sizeof buf) LLVMSetValueName2(v, buf, (size_t)n);
}

static void rename_symbols(LLVMModuleRef mod, int k, const char *stem) {
    char from[32], to[96];
    for (int i = 0; i < k; i++) {
        placeholder(from, sizeof from, i);
        size_t fl = strlen(from);
        snprintf(to, sizeof to, "%s_%d_", stem, i);
        for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
            rename_value(f, from, fl, to);
        for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g))
            rename_value(g, from, fl, to);
    }
}

/* Render plans[idx[0..k)] into one module, optimise it once (or load its object from the
 * on-disk cache), add it to the JIT and fill the modules' function pointers. */
static otc_status compile_batch(const otc_plan *const *plans, const otc_llvm_render_options *o,
                                const int *idx, int k, otc_jit_module **mods) {
    /* The plans of one batch share their options' tier (the caller groups them). The fast
     * code generator's register allocator spills whatever lives across blocks, so dense-product
     * loops' accumulators would go through memory (3-4x slower, measured on a 256x256 layer):
     * a fast-tier module holding such a plan gets the quick pipeline and the aggressive code
     * generator (LeNet's inference: ~200 ms of CPU, the optimised tier's loop pipeline ~235, O3
     * ~700, on a loaded machine). Neuron graphs (straight-line kernels) do not. */
    bool fast = o[idx[0]].fast, loops = false, train = false;
    for (int i = 0; i < k; i++) {
        loops = loops || otc_llvm_plan_has_product_loops(plans[idx[i]]);
        train = train || o[idx[i]].train;
    }
    bool fast_codegen = fast && !loops;
    LLVMTargetMachineRef tm = NULL;
    otc_status st = otc_llvm_jit_target_machine(fast_codegen, &tm);
    if (st) return st;
    const char **names = calloc((size_t)k * OTC_JIT_FN_COUNT + 1, sizeof *names);
    char(*name_buf)[96] = calloc((size_t)k * OTC_JIT_FN_COUNT + 1, sizeof *name_buf);
    void **addrs = calloc((size_t)k * OTC_JIT_FN_COUNT + 1, sizeof *addrs);
    otc_jit_shared *shared = calloc(1, sizeof *shared);
    if (!names || !name_buf || !addrs || !shared) {
        free(names);
        free(name_buf);
        free(addrs);
        free(shared);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a JIT compile");
    }
    LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContext();
    LLVMModuleRef mod =
        LLVMModuleCreateWithNameInContext("otc", LLVMOrcThreadSafeContextGetContext(tsctx));
    for (int i = 0; i < k && !st; i++) {
        otc_llvm_render_options ro = o[idx[i]];
        ro.fast_isel = fast_codegen;
        char prefix[32];
        placeholder(prefix, sizeof prefix, i);
        ro.prefix = prefix;
        st = otc_llvm_render_into(plans[idx[i]], &ro, mod);
    }
    otc_llvm_pipeline pipe = st     ? OTC_LLVM_PIPE_QUICK
                             : fast ? otc_llvm_fast_pipeline(fast_codegen)
                                    : otc_llvm_optimised_pipeline(mod, loops, !train);
    uint64_t key[2];
    bool keyed = !st && otc_llvm_objcache_key(mod, tm, fast_codegen, pipe, key) &&
                 live_key_index(key) < 0 && live_key_add(key);
    char stem[64];
    if (keyed) {
        snprintf(stem, sizeof stem, "otc%016llx%016llx", (unsigned long long)key[0],
                 (unsigned long long)key[1]);
    } else {
        otc_llvm_jit_unique_prefix(stem, sizeof stem);
        stem[strlen(stem) - 1] = '\0'; /* "otcN", the separator is added below */
    }
    int n_names = 0;
    for (int i = 0; i < k && !st; i++) {
        int nf = o[idx[i]].train ? OTC_JIT_FN_COUNT : 1;
        for (int f = 0; f < nf; f++) {
            snprintf(name_buf[n_names], sizeof name_buf[n_names], "%s_%d_%s", stem, i, fn_names[f]);
            names[n_names] = name_buf[n_names];
            n_names++;
        }
    }
    if (!st) rename_symbols(mod, k, stem);
    if (st) {
        LLVMDisposeModule(mod);
        LLVMOrcDisposeThreadSafeContext(tsctx);
    } else {
        st = otc_llvm_jit_compile(tsctx, mod, fast_codegen, pipe, true, keyed ? key : NULL, n_names,
                                  names, addrs, &shared->code);
    }
    if (!st) {
        int a = 0;
        for (int i = 0; i < k; i++) {
            int nf = o[idx[i]].train ? OTC_JIT_FN_COUNT : 1;
            for (int f = 0; f < nf; f++) mods[i]->fn[f] = (otc_llvm_fn)addrs[a++];
            mods[i]->code = shared;
            shared->refs++;
        }
        shared->keyed = keyed;
        if (keyed) memcpy(shared->key, key, sizeof key);
    } else {
        if (keyed) live_key_remove(key);
        free(shared);
    }
    free(names);
    free(name_buf);
    free(addrs);
    return st;
}

static otc_jit_module *lookup(uint64_t h, const keybuf *k) {
    for (otc_jit_module *m = lru_head; m; m = m->next)
        if (m->hash == h && m->key_len == k->len && !memcmp(m->key, k->p, k->len)) return m;
    return NULL;
}

static void take(otc_jit_module *m) {
    if (m->refs++ == 0 && m->cached) n_in_use++;
    if (m->cached) {
        unlink_entry(m);
        push_front(m);
    }
}

otc_status otc_llvm_modules_get(const otc_plan *const *plans, const otc_llvm_render_options *o,
                                int n, bool use_cache, otc_jit_module **out, bool *hits) {
    keybuf *keys = calloc((size_t)n + 1, sizeof *keys);
    uint64_t *hash = calloc((size_t)n + 1, sizeof *hash);
    int *miss = calloc((size_t)n + 1, sizeof *miss);
    int *same = calloc((size_t)n + 1, sizeof *same); /* a duplicate of an earlier miss */
    otc_jit_module **fresh = calloc((size_t)n + 1, sizeof *fresh);
    otc_status st = OTC_OK;
    if (!keys || !hash || !miss || !same || !fresh)
        st = otc_fail(OTC_ERR_NOMEM, "out of memory for a JIT compile");
    for (int i = 0; i < n && !st; i++) {
        out[i] = NULL;
        hits[i] = false;
        st = make_key(plans[i], &o[i], &keys[i]);
        if (!st) hash[i] = fnv1a(keys[i].p, keys[i].len);
    }
    int n_miss = 0;
    if (!st) {
        otc_llvm_jit_lock();
        for (int i = 0; i < n; i++) {
            same[i] = -1;
            otc_jit_module *m = use_cache ? lookup(hash[i], &keys[i]) : NULL;
            if (m) {
                take(m);
                out[i] = m;
                hits[i] = true;
                n_hits++;
                continue;
            }
            for (int j = 0; j < n_miss && use_cache; j++) {
                int mi = miss[j];
                if (hash[mi] == hash[i] && keys[mi].len == keys[i].len &&
                    !memcmp(keys[mi].p, keys[i].p, keys[i].len)) {
                    same[i] = mi;
                    break;
                }
            }
            if (same[i] >= 0) continue;
            fresh[n_miss] = calloc(1, sizeof **fresh);
            if (!fresh[n_miss]) {
                st = otc_fail(OTC_ERR_NOMEM, "out of memory for a JIT module");
                break;
            }
            miss[n_miss++] = i;
        }
        double t0 = otc_llvm_now_ms(), c0 = otc_llvm_cpu_ms();
        /* One module per tier: the optimised plans first, then the fast ones. */
        int *order = calloc((size_t)n_miss + 1, sizeof *order);
        otc_jit_module **fresh_in_order = calloc((size_t)n_miss + 1, sizeof *fresh_in_order);
        int n_opt = 0;
        if (!order || !fresh_in_order) st = otc_fail(OTC_ERR_NOMEM, "out of memory");
        for (int pass = 0, k = 0; !st && pass < 2; pass++)
            for (int j = 0; j < n_miss; j++)
                if (o[miss[j]].fast == (pass == 1)) {
                    order[k] = miss[j];
                    fresh_in_order[k++] = fresh[j];
                    if (pass == 0) n_opt++;
                }
        if (!st && n_opt > 0) st = compile_batch(plans, o, order, n_opt, fresh_in_order);
        if (!st && n_miss > n_opt)
            st = compile_batch(plans, o, order + n_opt, n_miss - n_opt, fresh_in_order + n_opt);
        free(order);
        free(fresh_in_order);
        double ms = (otc_llvm_now_ms() - t0) / (n_miss > 0 ? n_miss : 1);
        double cpu_ms = (otc_llvm_cpu_ms() - c0) / (n_miss > 0 ? n_miss : 1);
        if (st) {
            for (int i = 0; i < n; i++)
                if (hits[i]) release_locked(out[i]);
            for (int j = 0; j < n_miss; j++) free(fresh[j]);
        } else {
            for (int j = 0; j < n_miss; j++) {
                otc_jit_module *m = fresh[j];
                int i = miss[j];
                n_misses++;
                m->compile_ms = ms;
                m->compile_cpu_ms = cpu_ms;
                m->refs = 1;
                m->hash = hash[i];
                m->key = keys[i].p;
                m->key_len = keys[i].len;
                keys[i].p = NULL;
                m->cached = use_cache;
                if (use_cache) {
                    push_front(m);
                    n_cached++;
                    n_in_use++;
                }
                out[i] = m;
            }
            for (int i = 0; i < n; i++) {
                if (same[i] < 0) continue;
                out[i] = out[same[i]];
                take(out[i]);
                hits[i] = true;
                n_hits++;
            }
            trim(capacity);
        }
        otc_llvm_jit_unlock();
    }
    for (int i = 0; i < n && keys; i++) free(keys[i].p);
    free(keys);
    free(hash);
    free(miss);
    free(same);
    free(fresh);
    return st;
}

otc_status otc_llvm_module_get(const otc_plan *plan, const otc_llvm_render_options *o,
                               bool use_cache, otc_jit_module **out, bool *hit) {
    return otc_llvm_modules_get(&plan, o, 1, use_cache, out, hit);
}

static void release_locked(otc_jit_module *m) {
    if (--m->refs == 0) {
        if (m->cached) {
            n_in_use--;
            trim(capacity);
        } else {
            destroy(m);
        }
    }
}

void otc_llvm_module_release(otc_jit_module *m) {
    if (!m) return;
    otc_llvm_jit_lock();
    release_locked(m);
    otc_llvm_jit_unlock();
}

otc_jit_cache_stats otc_jit_cache_info(void) {
    otc_llvm_jit_lock();
    otc_jit_cache_stats s = {0};
    s.entries = n_cached;
    s.in_use = n_in_use;
    s.hits = n_hits;
    s.misses = n_misses;
    s.library_ms = otc_llvm_library_ms(&s.library_cpu_ms);
    s.setup_ms = otc_llvm_jit_setup_ms(&s.setup_cpu_ms);
    otc_llvm_jit_object_counts(&s.objects_compiled, &s.objects_loaded);
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
