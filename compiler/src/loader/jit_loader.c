/* libotc_compiler.so's jit.h: the LLVM backend lives in the plugin libotc_llvm.so, loaded on
 * the first call that needs it, so a program that never compiles never loads libLLVM (tens
 * of thousands of relocations, most of the otc command's start-up). The plugin is looked for
 * beside this library (the install's lib dir; the build directory), then beside the program;
 * never through an environment variable. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "llvm_plugin.h"
#include "otc/otc.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const otc_llvm_plugin_api *api; /* set once, read atomically */
static char load_error[1024];
/* otc_jit_policy_set before the plugin is loaded: handed to it when it is. */
static pthread_mutex_t policy_mutex = PTHREAD_MUTEX_INITIALIZER;
static otc_jit_policy pending_policy;
static bool policy_pending;
/* What loading the plugin cost (dlopen: libLLVM's relocations and static constructors). */
static double load_ms, load_cpu_ms;

static double clock_ms(clockid_t which) {
    struct timespec t;
    clock_gettime(which, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* dir/libotc_llvm.so where dir is path's directory; false when it does not fit. */
static bool beside(const char *path, char *out, size_t len) {
    const char *slash = strrchr(path, '/');
    if (!slash) return false;
    int n = snprintf(out, len, "%.*s/%s", (int)(slash - path), path, OTC_LLVM_PLUGIN_FILE);
    return n > 0 && (size_t)n < len;
}

static const otc_llvm_plugin_api *try_open(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        if (access(path, F_OK) == 0 && !load_error[0])
            snprintf(load_error, sizeof load_error, "%s", dlerror());
        return NULL;
    }
    const otc_llvm_plugin_api *p = dlsym(h, "otc_llvm_plugin");
    if (!p || p->abi != OTC_LLVM_PLUGIN_ABI || strcmp(p->version, OTC_VERSION) != 0) {
        snprintf(load_error, sizeof load_error, "%s is not the LLVM backend of otc %s", path,
                 OTC_VERSION);
        dlclose(h);
        return NULL;
    }
    return p;
}

static void load(void) {
    double t0 = clock_ms(CLOCK_MONOTONIC), c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
    char here[PATH_MAX], exe[PATH_MAX], path[PATH_MAX + 64], tried[2 * PATH_MAX + 160] = "";
    const otc_llvm_plugin_api *p = NULL;
    Dl_info info;
    if (dladdr((void *)load, &info) && info.dli_fname && realpath(info.dli_fname, here) &&
        beside(here, path, sizeof path)) {
        snprintf(tried, sizeof tried, "%s", path);
        p = try_open(path);
    }
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (!p && n > 0) {
        exe[n] = '\0';
        if (beside(exe, path, sizeof path) && strstr(tried, path) == NULL) {
            size_t used = strlen(tried);
            snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", path);
            p = try_open(path);
        }
    }
    if (!p && !load_error[0])
        /* the list of paths is cut to what the message holds (said by the precision, so
         * compilers that check for truncation see it is meant) */
        snprintf(load_error, sizeof load_error, "not found (looked for %.*s)",
                 (int)sizeof load_error - 32, tried[0] ? tried : OTC_LLVM_PLUGIN_FILE);
    load_ms = clock_ms(CLOCK_MONOTONIC) - t0;
    load_cpu_ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
    pthread_mutex_lock(&policy_mutex);
    if (p && policy_pending) p->jit_policy_set(&pending_policy);
    __atomic_store_n(&api, p, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&policy_mutex);
}

/* The plugin, loading it on the first call; NULL with otc_last_error set when it cannot be. */
static const otc_llvm_plugin_api *plugin(void) {
    pthread_once(&once, load);
    const otc_llvm_plugin_api *p = __atomic_load_n(&api, __ATOMIC_ACQUIRE);
    if (!p)
        otc_fail(OTC_ERR_UNSUPPORTED, "the LLVM backend (%s) could not be loaded: %s",
                 OTC_LLVM_PLUGIN_FILE, load_error);
    return p;
}

/* The plugin if something has loaded it already (no JIT executor can exist otherwise). */
static const otc_llvm_plugin_api *loaded(void) {
    return __atomic_load_n(&api, __ATOMIC_ACQUIRE);
}

otc_jit_options otc_jit_defaults(void) {
    const otc_llvm_plugin_api *p = plugin();
    otc_jit_options o;
    memset(&o, 0, sizeof o);
    return p ? p->jit_defaults() : o;
}

otc_executor *otc_jit_executor_new(otc_graph *g, const otc_jit_options *options) {
    const otc_llvm_plugin_api *p = plugin();
    return p ? p->jit_executor_new(g, options) : NULL;
}

otc_status otc_jit_executors_new(otc_graph *const *graphs, const otc_id *losses, int n,
                                 const otc_jit_options *options, otc_executor **out) {
    const otc_llvm_plugin_api *p = plugin();
    return p ? p->jit_executors_new(graphs, losses, n, options, out) : OTC_ERR_UNSUPPORTED;
}

bool otc_is_jit_executor(const otc_executor *ex) {
    const otc_llvm_plugin_api *p = loaded();
    return p && p->is_jit_executor(ex);
}

otc_status otc_jit_executor_stats(const otc_executor *ex, otc_jit_stats *out) {
    const otc_llvm_plugin_api *p = plugin();
    return p ? p->jit_executor_stats(ex, out) : OTC_ERR_UNSUPPORTED;
}

otc_jit_cache_stats otc_jit_cache_info(void) {
    const otc_llvm_plugin_api *p = loaded();
    otc_jit_cache_stats s;
    memset(&s, 0, sizeof s);
    if (p) s = p->jit_cache_info();
    s.load_ms = load_ms; /* written before api, which p was read from */
    s.load_cpu_ms = load_cpu_ms;
    return s;
}

void otc_jit_cache_clear(void) {
    const otc_llvm_plugin_api *p = loaded();
    if (p) p->jit_cache_clear();
}

void otc_jit_cache_set_capacity(int entries) {
    const otc_llvm_plugin_api *p = plugin();
    if (p) p->jit_cache_set_capacity(entries);
}

/* otc_jit_policy_defaults is llvm_policy_defaults.c's, built into this library too. */

void otc_jit_policy_set(const otc_jit_policy *policy) {
    /* Kept until the plugin loads (the first executor the policy makes), so that `otc evolve
     * --jit` pays for LLVM only when a genome qualifies for compiling. */
    pthread_mutex_lock(&policy_mutex);
    const otc_llvm_plugin_api *p = loaded();
    if (p) {
        p->jit_policy_set(policy);
    } else {
        pending_policy = policy ? *policy : otc_jit_policy_defaults();
        policy_pending = true;
    }
    pthread_mutex_unlock(&policy_mutex);
}

otc_executor *otc_jit_policy_executor(otc_graph *g, const otc_exec_options *options) {
    const otc_llvm_plugin_api *p = plugin();
    return p ? p->jit_policy_executor(g, options) : NULL;
}

otc_executor *otc_jit_policy_compiled(otc_graph *g, const otc_exec_options *options) {
    const otc_llvm_plugin_api *p = plugin();
    return p ? p->jit_policy_compiled(g, options) : NULL;
}

otc_jit_policy_stats otc_jit_policy_info(void) {
    const otc_llvm_plugin_api *p = loaded();
    otc_jit_policy_stats s = {0, 0, 0, 0, 0};
    return p ? p->jit_policy_info() : s;
}

const char *otc_jit_host_cpu(void) {
    const otc_llvm_plugin_api *p = plugin();
    return p ? p->jit_host_cpu() : "unknown (the LLVM backend is not loaded)";
}

otc_emit_llvm_options otc_emit_llvm_defaults(void) {
    const otc_llvm_plugin_api *p = plugin();
    otc_emit_llvm_options o;
    memset(&o, 0, sizeof o);
    return p ? p->emit_llvm_defaults() : o;
}

otc_status otc_emit_llvm(const otc_graph *g, const otc_emit_llvm_options *options,
                         otc_emit_kind kind, char **data, size_t *len) {
    const otc_llvm_plugin_api *p = plugin();
    return p ? p->emit_llvm(g, options, kind, data, len) : OTC_ERR_UNSUPPORTED;
}

otc_status otc_emit_llvm_header(const otc_graph *g, const otc_emit_llvm_options *options,
                                char **text) {
    const otc_llvm_plugin_api *p = plugin();
    return p ? p->emit_llvm_header(g, options, text) : OTC_ERR_UNSUPPORTED;
}

otc_status otc_emit_llvm_file(const otc_graph *g, const otc_emit_llvm_options *options,
                              otc_emit_kind kind, const char *path, const char *header_path) {
    const otc_llvm_plugin_api *p = plugin();
    return p ? p->emit_llvm_file(g, options, kind, path, header_path) : OTC_ERR_UNSUPPORTED;
}

otc_status otc_jit_check_ir(const char *ir_text) {
    const otc_llvm_plugin_api *p = plugin();
    return p ? p->jit_check_ir(ir_text) : OTC_ERR_UNSUPPORTED;
}
