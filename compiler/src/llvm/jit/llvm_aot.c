/* Ahead of time: a graph's forward code as LLVM IR text, assembly or an object file for a
 * target triple (the host, or e.g. aarch64-linux-gnu for phones), with a C header for
 * linking the object; and a checker that compiles LLVM IR text through the JIT, so errors
 * from LLVM can be seen surfacing as otc errors. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/IRReader.h>

#include "llvm_pipeline.h"
#include "llvm_render.h"
#include "otc/file.h"
#include "render_c_internal.h"

otc_emit_llvm_options otc_emit_llvm_defaults(void) {
    otc_emit_llvm_options o = {0};
    o.name = "model";
    o.loss = -1;
    o.optimize = true;
    return o;
}

static int lanes_for(const otc_emit_llvm_options *o) {
    if (o->lanes > 0) return o->lanes;
    if (o->triple) return 4; /* NEON / SSE: 128-bit vectors on every common target */
    const char *cpu = otc_llvm_host_cpu();
    return strstr(cpu, "512-bit") ? 16 : strstr(cpu, "256-bit") ? 8 : 4;
}

static otc_status check_options(const otc_graph *g, const otc_emit_llvm_options *o) {
    if (!g || !o) return otc_fail(OTC_ERR_ARG, "emit llvm: no graph or options");
    /* The same names as the C renderer's: every symbol is NAME_something. */
    if (!otc_emit_c_valid_name(o->name))
        return otc_fail(OTC_ERR_ARG,
                        "emit llvm: name '%.80s' is not a C identifier (letters, digits and _, "
                        "starting with a letter, at most 64)",
                        o->name ? o->name : "(null)");
    if (o->train)
        return otc_fail(OTC_ERR_UNSUPPORTED,
                        "emit llvm: object files hold the forward pass only (use --emit-c "
                        "--train for on-device training)");
    int l = lanes_for(o);
    if (l < 1 || l > 64 || (l & (l - 1)))
        return otc_fail(OTC_ERR_ARG, "emit llvm: %d lanes (a power of two up to 64)", l);
    return OTC_OK;
}

otc_status otc_emit_llvm(const otc_graph *g, const otc_emit_llvm_options *options,
                         otc_emit_kind kind, char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    otc_status st = check_options(g, options);
    if (st) return st;
    otc_plan *plan = NULL;
    st = otc_plan_build(g, NULL, &plan);
    if (st) return st;
    LLVMTargetMachineRef tm = NULL;
    st = otc_llvm_target_machine(options->triple, options->cpu, NULL, LLVMCodeGenLevelAggressive,
                                 &tm);
    if (st) {
        otc_plan_free(plan);
        return st;
    }
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s_", options->name);
    otc_llvm_render_options ro = {0};
    ro.lanes = lanes_for(options);
    ro.aot = true;
    ro.prefix = prefix;
    ro.blas = false;    /* objects depend on nothing */
    ro.chunk_group = 2; /* the optimised tier's code */
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = NULL;
    st = otc_llvm_render(plan, &ro, ctx, &mod);
    if (!st)
        st = otc_llvm_finish_module(
            mod, tm,
            options->optimize
                ? otc_llvm_optimised_pipeline(mod, otc_llvm_plan_has_product_loops(plan), false)
                : OTC_LLVM_PIPE_NONE);
    if (!st) {
        if (kind == OTC_EMIT_LLVM_IR) {
            char *text = LLVMPrintModuleToString(mod);
            *len = strlen(text);
            *data = malloc(*len + 1);
            if (*data)
                memcpy(*data, text, *len + 1);
            else
                st = otc_fail(OTC_ERR_NOMEM, "out of memory for LLVM IR text");
            LLVMDisposeMessage(text);
        } else {
            st = otc_llvm_emit(mod, tm, kind == OTC_EMIT_ASM, data, len);
        }
    }
    if (mod) LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    LLVMDisposeTargetMachine(tm);
    otc_plan_free(plan);
    return st;
}

otc_status otc_emit_llvm_header(const otc_graph *g, const otc_emit_llvm_options *options,
                                char **text) {
    *text = NULL;
    otc_status st = check_options(g, options);
    if (st) return st;
    otc_plan *p = NULL;
    st = otc_plan_build(g, NULL, &p);
    if (st) return st;
    const char *n = options->name;
    int lanes = lanes_for(options);
    size_t cap = 4096 + (size_t)p->n_io * 160;
    char *s = malloc(cap);
    if (!s) {
        otc_plan_free(p);
        return otc_fail(OTC_ERR_NOMEM, "out of memory");
    }
    size_t u = 0;
    char triple[OTC_CR_LABEL_LEN];
#define OUT(...) u += (size_t)snprintf(s + u, cap > u ? cap - u : 0, __VA_ARGS__)
    OUT("/* %s: a network compiled by otc (LLVM, %s) for ahead-of-time linking.\n", n,
        options->triple ? otc_cr_comment(triple, sizeof triple, options->triple) : "host");
    OUT(" *\n * Link %s.o into your program (no other dependency: the weights are inside).\n", n);
    OUT(" * Rows are sample-major: sample b's %" PRId64 " inputs at in[b * %" PRId64
        "], its %" PRId64 " outputs\n * at out[b * %" PRId64
        "]. The workspace is caller memory of %s_workspace_bytes(batch)\n"
        " * bytes (any alignment); calls are re-entrant when each thread has its own. */\n",
        p->in_width, p->in_width, p->out_width, p->out_width, n);
    OUT("#ifndef %s_OTC_H\n#define %s_OTC_H\n\n#include <stddef.h>\n\n", n, n);
    OUT("#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    OUT("#define %s_INPUTS %" PRId64 "\n#define %s_OUTPUTS %" PRId64 "\n", n, p->in_width, n,
        p->out_width);
    OUT("#define %s_LANES %d /* samples per vector; the batch is padded to a multiple */\n\n", n,
        lanes);
    OUT("/* Inputs and outputs within a row: */\n");
    for (int i = 0; i < p->n_io; i++) {
        char lab[OTC_CR_LABEL_LEN];
        OUT("/*   %-6s %-24s floats %" PRId64 "..%" PRId64 " */\n",
            p->io[i].stream == OTC_IO_OUT ? "output" : "input",
            otc_cr_label(g, p->io[i].node, lab, sizeof lab), p->io[i].offset,
            p->io[i].offset + p->io[i].width - 1);
    }
    OUT("\nstatic inline size_t %s_workspace_bytes(int batch) {\n", n);
    OUT("    size_t s = ((size_t)(batch > 0 ? batch : 1) + %d) / %d * %d;\n", lanes - 1, lanes,
        lanes);
    OUT("    return (%" PRId64 " + %" PRId64 " * s) * sizeof(float);\n}\n\n", p->work.base,
        p->work.per_batch);
    if (p->state_per_sample > 0) { /* recurrent: the state's range of the workspace (plan.h) */
        OUT("/* Recurrent model: %s_forward is ONE time step and the workspace carries the state\n"
            " * (every Delay's value) to the next call: one workspace per instance; call\n"
            " * %s_reset before the first step, to start new sequences and when batch changes. "
            "*/\n",
            n, n);
        OUT("static inline void %s_reset(void *workspace, int batch) {\n", n);
        OUT("    size_t s = ((size_t)(batch > 0 ? batch : 1) + %d) / %d * %d, i;\n", lanes - 1,
            lanes, lanes);
        OUT("    float *w = (float *)workspace + %" PRId64 ";\n", p->state_offset);
        OUT("    for (i = 0; i < %" PRId64 " * s; i++) w[i] = 0.0f;\n}\n\n", p->state_per_sample);
    }
    OUT("/* Returns 0, or -1 when batch < 1. */\n");
    OUT("int %s_forward(const float *in, float *out, int batch, void *workspace);\n\n", n);
    OUT("#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
#undef OUT
    otc_plan_free(p);
    if (u >= cap) {
        free(s);
        return otc_fail(OTC_ERR_STATE, "emit llvm: header longer than planned");
    }
    *text = s;
    return OTC_OK;
}

otc_status otc_emit_llvm_file(const otc_graph *g, const otc_emit_llvm_options *options,
                              otc_emit_kind kind, const char *path, const char *header_path) {
    if (!path) return otc_fail(OTC_ERR_ARG, "emit llvm: no output path");
    char *data = NULL, *header = NULL;
    size_t len = 0;
    otc_status st = otc_emit_llvm(g, options, kind, &data, &len);
    if (!st && kind == OTC_EMIT_OBJ) st = otc_emit_llvm_header(g, options, &header);
    if (!st) st = otc_write_file_atomic(path, data, len);
    if (!st && header) {
        char *hp = NULL;
        if (!header_path) {
            size_t n = strlen(path);
            hp = malloc(n + 3);
            if (!hp) {
                st = otc_fail(OTC_ERR_NOMEM, "out of memory");
            } else {
                memcpy(hp, path, n + 1);
                char *dot = strrchr(hp, '.'), *slash = strrchr(hp, '/');
                if (dot && (!slash || dot > slash)) *dot = '\0';
                strcat(hp, ".h");
            }
        }
        if (!st) st = otc_write_file_atomic(header_path ? header_path : hp, header, strlen(header));
        free(hp);
    }
    free(data);
    free(header);
    return st;
}

otc_status otc_jit_check_ir(const char *ir_text) {
    if (!ir_text) return otc_fail(OTC_ERR_ARG, "jit: no IR text");
    otc_status st = otc_llvm_init();
    if (st) return st;
    LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContext();
    LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsctx);
    LLVMMemoryBufferRef buf =
        LLVMCreateMemoryBufferWithMemoryRangeCopy(ir_text, strlen(ir_text), "ir");
    LLVMModuleRef mod = NULL;
    char *msg = NULL;
    /* Takes the buffer. */
    if (LLVMParseIRInContext(ctx, buf, &mod, &msg)) {
        st = otc_fail(OTC_ERR_FORMAT, "LLVM IR does not parse: %s", msg ? msg : "unknown");
        LLVMDisposeMessage(msg);
        LLVMOrcDisposeThreadSafeContext(tsctx);
        return st;
    }
    LLVMTargetMachineRef tm = NULL;
    otc_llvm_jit_lock();
    st = otc_llvm_jit_target_machine(false, &tm);
    if (!st) st = otc_llvm_finish_module(mod, tm, OTC_LLVM_PIPE_O3);
    otc_llvm_jit_unlock();
    if (st) {
        LLVMDisposeModule(mod);
        LLVMOrcDisposeThreadSafeContext(tsctx);
        return st;
    }
    /* Compile every defined function to prove code generation succeeds, then drop it. */
    const char *names[64];
    int n = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f && n < 64; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f) || LLVMGetLinkage(f) == LLVMInternalLinkage ||
            LLVMGetLinkage(f) == LLVMPrivateLinkage)
            continue;
        size_t len;
        names[n++] = LLVMGetValueName2(f, &len);
    }
    /* Unique names: the JIT's symbol table is shared with every compiled graph. */
    char copies[64][160], prefix[32];
    otc_llvm_jit_unique_prefix(prefix, sizeof prefix);
    for (int i = 0; i < n; i++) {
        snprintf(copies[i], sizeof copies[i], "%s%.120s", prefix, names[i]);
        names[i] = copies[i];
    }
    int k = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f && k < n; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f) || LLVMGetLinkage(f) == LLVMInternalLinkage ||
            LLVMGetLinkage(f) == LLVMPrivateLinkage)
            continue;
        LLVMSetValueName2(f, copies[k], strlen(copies[k]));
        k++;
    }
    void *addrs[64];
    otc_llvm_code *code = NULL;
    st = otc_llvm_jit_add(tsctx, mod, false, n, names, addrs, &code);
    otc_llvm_code_free(code);
    return st;
}
