/* `otc compile --emit-llvm/--emit-asm/--emit-obj`: the LLVM backend's ahead-of-time outputs,
 * kept apart from cmd_compile.c's C renderer options. */
#ifndef OTC_CLI_LLVM_H
#define OTC_CLI_LLVM_H

#include <stddef.h>

/* Loads the model and writes whichever of ll/s/obj is given (NULL: not wanted), the object
 * with a header beside it. target: a triple or NULL for this machine. Prints what it wrote;
 * returns an exit code. */
int otc_cli_emit_llvm(const char *model, const char *name, const char *ll, const char *s,
                      const char *obj, const char *target);

/* The header written beside the object obj: obj with its extension replaced by .h ("net" ->
 * "net.h", "y.o" -> "y.h"), so the command's file checks see it before anything is written. */
void otc_cli_obj_header(const char *obj, char *buf, size_t len);

#endif
