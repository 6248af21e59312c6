/* For tests: the executor interface over emitted C (a graph rendered by otc_emit_c, built
 * with the system compiler, loaded with dlopen), so tests written against otc_executor run
 * on the emitted code too. Not part of any shipped binary. */
#ifndef OTC_EMITC_EXECUTOR_H
#define OTC_EMITC_EXECUTOR_H

#include "otc/otc.h"

/* One graph's emitted code, built and loaded. */
typedef struct emitc_program emitc_program;

/* Render and build g (which must outlive the program and keep its shape). With loss >= 0 the
 * code has a training step for that loss and optimiser (optim NULL: plain SGD): its weights
 * live in memory each executor owns, read from the graph when the executor is made. Without
 * a loss it is forward-only and the weights are compiled in. NULL on failure, with
 * otc_last_error set (the plan's refusal names the op and node) or the compiler's output on
 * stderr. */
emitc_program *emitc_program_build(otc_graph *g, otc_id loss, const otc_optim_config *optim);
/* The same with the compiler flags given (emitc_program_build: "-std=c99 -O1"). */
emitc_program *emitc_program_build_flags(otc_graph *g, otc_id loss, const otc_optim_config *optim,
                                         const char *cflags);
void emitc_program_free(emitc_program *p);
/* The loss it trains (-1 for forward-only code), its graph and that graph's size when built. */
otc_id emitc_program_loss(const emitc_program *p);
const otc_graph *emitc_program_graph(const emitc_program *p);
int emitc_program_size(const emitc_program *p);

/* An executor running p (which must outlive it); backend name "emitc". What it cannot do:
 * value() hands back outputs, inputs, parameters and (after backward or train_step) the
 * loss, nothing else (OTC_ERR_UNSUPPORTED); backward/train_step only for the program's loss,
 * train_step only with the optimiser kind and settings the code was built for (lr may
 * differ); parameters written to the graph after creation are not seen (as the JIT). */
otc_executor *emitc_executor_new(emitc_program *p, const otc_exec_options *options);

#endif
