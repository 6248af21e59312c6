/* `otc bench` helpers: the emitted-C backend built with the system compiler and loaded, and
 * the graph description bench/torch_compare.py reads. */
#ifndef OTC_CLI_BENCH_H
#define OTC_CLI_BENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "otc/compiler.h"
#include "otc/otc.h"

/* The flags the emitted C is built with: -fno-math-errno lets gcc vectorise Adam's square
 * root (the generated header says so to its users); results are the same without it. */
#define OTC_BENCH_CC_FLAGS "-O3 -march=native -fno-math-errno"

/* Emitted C, compiled with `cc OTC_BENCH_CC_FLAGS` into a shared object and loaded. */
typedef struct {
    char dir[64];
    char name[32];
    void *so;
    double build_ms;     /* rendering + the C compiler, wall clock */
    double build_cpu_ms; /* the same in CPU time: this thread's and the compiler processes' */
    int (*forward)(const float *in, float *out, int batch, void *ws);
    size_t (*workspace_bytes)(int batch);
    /* with train */
    void (*params_init)(void *params);
    int (*train_step)(void *params, const float *in, const float *target, int batch, float lr,
                      float *loss, void *ws);
    size_t (*train_workspace_bytes)(int batch);
    size_t params_bytes;
} otc_bench_c;

/* Neurons and connections of any graph: a Neuron node is one neuron with one connection per
 * source; a layer's product x W (W a Parameter [K, N]) is N neurons and K*N connections; a
 * Conv2d is one neuron per output value, each with its window's weights. */
void otc_bench_count_units(const otc_graph *g, long long *neurons, long long *connections);

/* Render g (a training step for loss when train) and build it; plan (g's plan with the same
 * options, or NULL) sizes the training parameters. With a tape (g is tape->graph, loss its
 * total: otc_unroll_step) the training step runs through bptt time steps, as `otc compile
 * --train --bptt` emits it. The C compiler's messages go to stderr; false with a message on
 * failure. */
bool otc_bench_c_build(otc_bench_c *c, const otc_graph *g, const otc_plan *plan, bool train,
                       otc_id loss, const otc_optim_config *optim, const otc_unrolled *tape,
                       int bptt, char *err, size_t err_len);
void otc_bench_c_free(otc_bench_c *c);

/* The graph as JSON for bench/torch_compare.py: nodes in id order (op, inputs, shape,
 * parameters' values, neuron columns and activation...), inputs, outputs, the loss, and the
 * benchmark's batch/mode/optimiser and otc's own figures (cJSON text in figures, may be
 * NULL). malloc'd text, NULL on failure. */
char *otc_bench_export(const otc_graph *g, otc_id loss, int batch, bool train,
                       const otc_optim_config *optim, const char *figures_json);

#endif
