/* Test support for emitted C: render many graphs into one C file, build it with the system
 * compiler in a temporary directory, load it, and run interpreter-vs-emitted comparisons. */
#ifndef OTC_EMITC_SUPPORT_H
#define OTC_EMITC_SUPPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "otc/compiler.h"
#include "otc/otc.h"

typedef struct {
    otc_graph *g;          /* owned */
    char name[32];         /* C prefix, "g<index>" */
    otc_emit_c_options eo; /* name set by the support code */
    otc_plan *fwd, *train; /* the plans the renderer builds, for sizes and io layout */
} emitc_case;

typedef struct {
    char dir[64];
    void *so;
    int n_names;
    char **files; /* created files, removed by emitc_unload */
    int n_files;
} emitc_build;

/* Render cases into dir/all.c (+ one header each), compile it with `cc CFLAGS -shared` and
 * dlopen it. Prints the compiler's output and returns false on failure. */
bool emitc_build_cases(emitc_case *cases, int n, const char *cflags, emitc_build *out);
void emitc_unload(emitc_build *b);
void *emitc_sym(const emitc_build *b, const char *name, const char *suffix);

/* Prepare a case: take g, set options, build the plans (the same as the renderer's). */
bool emitc_case_init(emitc_case *c, otc_graph *g, int index, const otc_emit_c_options *eo);
void emitc_case_free(emitc_case *c);

/* Rows for a plan's stream (IN or TARGET) filled from rng: classes > 0 gives class indices
 * (softmax_ce targets), classes < 0 values in [0, 1) (BCE targets), 0 values in [-2, 2).
 * Returns malloc'd batch * width floats. */
float *emitc_rows(const otc_plan *p, otc_io_stream stream, int batch, otc_rng *rng, int classes);

/* Give the interpreter the plan's input rows (columns split per Input node); inputs the plan
 * does not read get zeros. */
bool emitc_set_inputs(otc_executor *ex, const otc_plan *p, const float *in, const float *target,
                      int batch);

/* |got - want| <= tol * max(1, |want|), with a message naming what and where. */
bool emitc_close(float got, float want, double tol, const char *what, const char *name, int i);

/* Workspace bytes for any of the case's functions at batch (asked of the built code). */
size_t emitc_workspace_bytes(const emitc_case *c, const emitc_build *b, int batch);

/* Forward at batch through interpreter and emitted code; false (after printing) on a
 * mismatch beyond tol. */
bool emitc_check_forward(const emitc_case *c, const emitc_build *b, int batch, uint64_t seed,
                         double tol);

/* One gradient evaluation (train_step with lr 0, plain SGD) vs interpreter backward. */
bool emitc_check_gradients(const emitc_case *c, const emitc_build *b, int batch, uint64_t seed,
                           double tol, int classes);

/* A graph using every op the compiler lowers (matmul, row broadcast, all activation ops,
 * arithmetic, detach, concat, slice, select, reshape, flatten, softmaxes, sum, mean, an
 * unbatched matmul of parameters, neurons reading wide values, a frozen parameter). Two
 * outputs, [B,1] and [B,22]. */
otc_graph *emitc_all_ops_graph(uint64_t seed);

#endif
