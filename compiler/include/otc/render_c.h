/* The C renderer: a plan spelled as standalone C99 (NAME.h + NAME.c) that depends on
 * nothing but <math.h>, <stddef.h> and <stdint.h>, never allocates, keeps no written
 * globals and is re-entrant, for phones and microcontrollers. */
#ifndef OTC_RENDER_C_H
#define OTC_RENDER_C_H

#include "otc/plan.h"
#include "otc/quant.h"
#include "otc/unroll.h"

typedef struct {
    const char *name;       /* C identifier prefixing every symbol ("model" when NULL) */
    int batch;              /* 0: any batch (workspace sized per call); N > 0: the layout is fixed
                               for at most N samples and NAME_WORKSPACE_BYTES is a constant */
    bool train;             /* also NAME_params (weights + optimiser state, caller-owned),
                               NAME_params_init and NAME_train_step (forward, backward, update) */
    otc_id loss;            /* train: the scalar loss node (see otc_compile_add_loss) */
    otc_optim_config optim; /* train: the optimiser; lr is a train_step argument */
    otc_fuse_level fuse;
    bool split_libm;         /* see otc_plan_options */
    const char *source_name; /* for the generated files' comment (e.g. "model.otm"), or NULL */
    /* How the weights are stored (inference only). F16 and INT8 keep them smaller in the
     * file and decode them (otc_weights_round's values) into the first param_floats floats of
     * the workspace at every call, which NAME_WORKSPACE_BYTES counts. */
    otc_weight_storage weights;
    /* train through time over a tape: g is step->graph (otc_unroll_step(model, bptt, ...)),
     * loss step->total. NAME_forward and NAME_train_step loop over bptt time steps of the one
     * step's code, train_step keeping each step's activations in a slot of the workspace for
     * its backward loop (render_c_tape.c): code size independent of bptt. 0: no tape. */
    int bptt;
    const otc_unrolled *step;
} otc_emit_c_options;

/* Default options: name "model", dynamic batch, inference, Adam defaults, loss -1. */
otc_emit_c_options otc_emit_c_defaults(void);

/* Render g to header and source text (malloc'd, the caller frees both). The source includes
 * "NAME.h". Errors: a bad name, anything otc_plan_build rejects (cycles, unsupported ops,
 * naming the op and node), non-finite weights. */
otc_status otc_emit_c(const otc_graph *g, const otc_emit_c_options *options, char **header,
                      char **source);

/* The same written to DIR/NAME.h and DIR/NAME.c (each to a temporary name, then renamed). */
otc_status otc_emit_c_files(const otc_graph *g, const otc_emit_c_options *options, const char *dir);

/* The plans the generated code is spelled from: the forward plan (small batches, or the
 * only one), the large-batch forward plan (NULL when there is one code path) and the
 * training plan (NULL without train). The caller frees each with otc_plan_free. */
otc_status otc_emit_c_plans(const otc_graph *g, const otc_emit_c_options *options, otc_plan **fwd,
                            otc_plan **fwd_big, otc_plan **train);

/* The sizes the generated code works with at `batch` (what NAME_WORKSPACE_BYTES and
 * NAME_TRAIN_WORKSPACE_BYTES give): fwd.workspace covers both forward code paths; train
 * (with options->train) is the training plan's. Either pointer may be NULL. */
otc_status otc_emit_c_sizes(const otc_graph *g, const otc_emit_c_options *options, int64_t batch,
                            otc_plan_bytes *fwd, otc_plan_bytes *train);

/* Floats per sample in the generated code's rows (NAME_IN_FLOATS, NAME_TARGET_FLOATS, 0
 * without train, NAME_OUT_FLOATS); any pointer may be NULL. */
otc_status otc_emit_c_rows(const otc_graph *g, const otc_emit_c_options *options, int64_t *in,
                           int64_t *target, int64_t *out);

/* Is s a valid C identifier that the renderer may use as a prefix? */
bool otc_emit_c_valid_name(const char *s);

/* The generated code's float math, all of it, as the static inline C99 functions NAME_exp,
 * NAME_expm1, NAME_log, NAME_log1p, NAME_tanh, NAME_sin, NAME_cos (and the NAME_fma,
 * NAME_from_bits, NAME_to_bits, NAME_sel and NAME_fmax they use), for tests; needs <math.h>. The
 * JIT's formulas: branch-free, so loops calling them vectorise. *source is malloc'd. */
otc_status otc_emit_c_math(const char *name, char **source);

#endif
