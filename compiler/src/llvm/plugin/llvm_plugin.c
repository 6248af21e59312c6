/* The plugin's one exported symbol: the table of the LLVM backend's jit.h functions. */
#include "llvm_plugin.h"

#include "otc/otc.h"

__attribute__((visibility("default"))) const otc_llvm_plugin_api otc_llvm_plugin = {
    .abi = OTC_LLVM_PLUGIN_ABI,
    .version = OTC_VERSION,
    .jit_defaults = otc_jit_defaults,
    .jit_executor_new = otc_jit_executor_new,
    .jit_executors_new = otc_jit_executors_new,
    .is_jit_executor = otc_is_jit_executor,
    .jit_executor_stats = otc_jit_executor_stats,
    .jit_cache_info = otc_jit_cache_info,
    .jit_cache_clear = otc_jit_cache_clear,
    .jit_cache_set_capacity = otc_jit_cache_set_capacity,
    .jit_policy_defaults = otc_jit_policy_defaults,
    .jit_policy_set = otc_jit_policy_set,
    .jit_policy_executor = otc_jit_policy_executor,
    .jit_policy_info = otc_jit_policy_info,
    .jit_policy_compiled = otc_jit_policy_compiled,
    .jit_host_cpu = otc_jit_host_cpu,
    .emit_llvm_defaults = otc_emit_llvm_defaults,
    .emit_llvm = otc_emit_llvm,
    .emit_llvm_header = otc_emit_llvm_header,
    .emit_llvm_file = otc_emit_llvm_file,
    .jit_check_ir = otc_jit_check_ir,
};
