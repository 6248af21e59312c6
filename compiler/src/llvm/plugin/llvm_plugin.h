/* The LLVM backend as a plugin: the table of jit.h entry points libotc_llvm.so exports (one
 * symbol, otc_llvm_plugin) and libotc_compiler.so's loader forwards to. */
#ifndef OTC_LLVM_PLUGIN_H
#define OTC_LLVM_PLUGIN_H

#include "otc/jit.h"

/* File name of the plugin, looked for beside libotc_compiler.so and beside the program. */
#define OTC_LLVM_PLUGIN_FILE "libotc_llvm.so"
/* Bumped when the table changes; the loader refuses a plugin with another value. */
#define OTC_LLVM_PLUGIN_ABI 4

typedef struct {
    int abi;
    const char *version; /* OTC_VERSION of the plugin's build: must equal the loader's */
    otc_jit_options (*jit_defaults)(void);
    otc_executor *(*jit_executor_new)(otc_graph *, const otc_jit_options *);
    otc_status (*jit_executors_new)(otc_graph *const *, const otc_id *, int,
                                    const otc_jit_options *, otc_executor **);
    bool (*is_jit_executor)(const otc_executor *);
    otc_status (*jit_executor_stats)(const otc_executor *, otc_jit_stats *);
    otc_jit_cache_stats (*jit_cache_info)(void);
    void (*jit_cache_clear)(void);
    void (*jit_cache_set_capacity)(int);
    otc_jit_policy (*jit_policy_defaults)(void);
    void (*jit_policy_set)(const otc_jit_policy *);
    otc_executor *(*jit_policy_executor)(otc_graph *, const otc_exec_options *);
    otc_jit_policy_stats (*jit_policy_info)(void);
    otc_executor *(*jit_policy_compiled)(otc_graph *, const otc_exec_options *);
    const char *(*jit_host_cpu)(void);
    otc_emit_llvm_options (*emit_llvm_defaults)(void);
    otc_status (*emit_llvm)(const otc_graph *, const otc_emit_llvm_options *, otc_emit_kind,
                            char **, size_t *);
    otc_status (*emit_llvm_header)(const otc_graph *, const otc_emit_llvm_options *, char **);
    otc_status (*emit_llvm_file)(const otc_graph *, const otc_emit_llvm_options *, otc_emit_kind,
                                 const char *, const char *);
    otc_status (*jit_check_ir)(const char *);
} otc_llvm_plugin_api;

#endif
