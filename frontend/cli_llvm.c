/* `otc compile --emit-llvm FILE.ll | --emit-asm FILE.s | --emit-obj FILE.o [--target TRIPLE]`:
 * the graph's forward pass through the LLVM backend, for reading (IR, assembly) or for
 * linking ahead of time (an object and its header, e.g. for aarch64-linux-gnu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_llvm.h"
#include "otc/otc.h"

void otc_cli_obj_header(const char *obj, char *buf, size_t len) {
    if (!len) return;
    size_t n = strlen(obj);
    const char *dot = strrchr(obj, '.'), *slash = strrchr(obj, '/');
    if (dot && (!slash || dot > slash)) n = (size_t)(dot - obj);
    snprintf(buf, len, "%.*s.h", (int)n, obj);
}

#ifdef OTC_HAVE_JIT
#include "otc/jit.h"

static int emit_one(otc_graph *g, const otc_emit_llvm_options *o, otc_emit_kind kind,
                    const char *path) {
    if (!path) return 0;
    char header[4096];
    otc_cli_obj_header(path, header, sizeof header);
    if (otc_emit_llvm_file(g, o, kind, path, kind == OTC_EMIT_OBJ ? header : NULL) != OTC_OK)
        return otc_cli_error_file("compile", path);
    if (kind == OTC_EMIT_OBJ) {
        printf("wrote %s and %s (%s, entry %s_forward)\n", path, header,
               o->triple ? o->triple : "this machine", o->name);
    } else {
        printf("wrote %s (%s)\n", path, kind == OTC_EMIT_ASM ? "assembly" : "optimised LLVM IR");
    }
    return 0;
}

int otc_cli_emit_llvm(const char *model, const char *name, const char *ll, const char *s,
                      const char *obj, const char *target) {
    otc_graph *g = NULL;
    int rc = otc_cli_load_model("compile", model, &g);
    if (rc) return rc;
    otc_emit_llvm_options o = otc_emit_llvm_defaults();
    o.name = name;
    o.triple = target;
    rc = emit_one(g, &o, OTC_EMIT_LLVM_IR, ll);
    if (!rc) rc = emit_one(g, &o, OTC_EMIT_ASM, s);
    if (!rc) rc = emit_one(g, &o, OTC_EMIT_OBJ, obj);
    otc_graph_free(g);
    return rc;
}
#else
int otc_cli_emit_llvm(const char *model, const char *name, const char *ll, const char *s,
                      const char *obj, const char *target) {
    (void)model, (void)name, (void)ll, (void)s, (void)obj, (void)target;
    return otc_cli_error("compile", "this otc was built without LLVM (--emit-llvm/-asm/-obj)");
}
#endif
