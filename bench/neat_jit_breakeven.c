/* When compiling a genome pays inside evolution (otc evolve --jit): for recurrent DPNV-style
 * genomes of several sizes, a network step on the flat program against the JIT's exact code
 * (fast tier, the arithmetic of the flat program bit for bit), the compile time, and the
 * break-even (compile time / ns saved per step); also whether the outputs agree bit for bit
 * over 10,000 steps, exact and not. The step is what a pole task does per action: set the
 * input, one forward, read the output. Times are this thread's CPU time, the best of several
 * blocks (the build machine is shared).
 * Usage: neat_jit_breakeven [CONFIG]   (default: examples/neat/dpnv.ini) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timing.h"
#include "otc/neat.h"
#include "otc/rng.h"
#ifdef OTC_BENCH_JIT
#include "otc/jit.h"
#endif

#ifndef OTC_SOURCE_DIR
#define OTC_SOURCE_DIR "."
#endif

enum { STEPS = 1000, CHECK_STEPS = 10000 };

/* This thread's CPU seconds: the build machine is shared, and CPU time (the fastest of several
 * blocks) is what other processes disturb least. */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The fastest of 9 blocks of fn(arg), CPU seconds per call; -1 when a call fails. */
static double cpu_time(int (*fn)(void *), void *arg) {
    long calls = 1; /* doubled until a block takes 5 ms */
    for (;; calls *= 2) {
        double t0 = cpu_now();
        for (long i = 0; i < calls; i++)
            if (fn(arg)) return -1;
        if (cpu_now() - t0 >= 0.005 || calls >= (1L << 20)) break;
    }
    double best = 1e30;
    for (int b = 0; b < 9; b++) {
        double t0 = cpu_now();
        for (long i = 0; i < calls; i++)
            if (fn(arg)) return -1;
        double t = (cpu_now() - t0) / (double)calls;
        if (t < best) best = t;
    }
    return best;
}

typedef struct {
    otc_neat_flat *flat;
    otc_executor *ex;
    otc_id input, output;
    int n_in;
    float x[STEPS][8];
} bench_ctx;

static int flat_steps(void *arg) {
    bench_ctx *b = arg;
    float y[4];
    otc_neat_flat_reset(b->flat);
    for (int t = 0; t < STEPS; t++)
        if (otc_neat_flat_forward(b->flat, b->x[t], 1, y) != OTC_OK) return 1;
    return 0;
}

#ifdef OTC_BENCH_JIT
static int exec_steps(void *arg) {
    bench_ctx *b = arg;
    otc_exec_reset_state(b->ex);
    for (int t = 0; t < STEPS; t++) {
        const float *v;
        if (otc_exec_set_input(b->ex, b->input, b->x[t], 1) || otc_exec_forward(b->ex) ||
            otc_exec_value(b->ex, b->output, &v, NULL))
            return 1;
    }
    return 0;
}

/* Steps (from a reset) whose output differs from the flat program's in any bit. */
static int differing_steps(bench_ctx *b, otc_rng *rng) {
    int differ = 0;
    float y[4];
    otc_neat_flat_reset(b->flat);
    otc_exec_reset_state(b->ex);
    for (int t = 0; t < CHECK_STEPS; t++) {
        float x[8];
        for (int i = 0; i < b->n_in; i++) x[i] = 2.0f * otc_rng_uniform(rng) - 1.0f;
        const float *v;
        if (otc_neat_flat_forward(b->flat, x, 1, y) || otc_exec_set_input(b->ex, b->input, x, 1) ||
            otc_exec_forward(b->ex) || otc_exec_value(b->ex, b->output, &v, NULL))
            return -1;
        differ += memcmp(&y[0], v, sizeof *v) != 0;
    }
    return differ;
}

/* The fastest of 5 compiles (the structure cache off), CPU ms; the executor of the last. */
static double compile_ms(otc_graph *g, bool exact, otc_executor **out) {
    double t[5];
    *out = NULL;
    for (int i = 0; i < 5; i++) {
        otc_jit_options jo = otc_jit_defaults();
        jo.inference = true;
        jo.tier = OTC_JIT_TIER_FAST;
        jo.no_cache = true;
        jo.exact = exact;
        jo.lanes = exact ? 1 : 0; /* one sample a step: no padding lanes through libm */
        double t0 = cpu_now();
        otc_executor *ex = otc_jit_executor_new(g, &jo);
        t[i] = (cpu_now() - t0) * 1e3;
        if (!ex) return -1;
        otc_exec_free(*out);
        *out = ex;
    }
    qsort(t, 5, sizeof *t, bench_cmp_double);
    return t[0];
}
#endif

int main(int argc, char **argv) {
    char path[1024];
    snprintf(path, sizeof path, "%s",
             argc > 1 ? argv[1] : OTC_SOURCE_DIR "/examples/neat/dpnv.ini");
    otc_neat_config c;
    if (otc_neat_config_load(path, &c) != OTC_OK || c.num_inputs > 8 || c.num_outputs != 1) {
        fprintf(stderr, "neat_jit_breakeven: %s: %s\n", path, otc_last_error());
        return 1;
    }
    c.feed_forward = false;
    c.conn_add_prob = 1.0;
    printf("neat_jit_breakeven: recurrent genomes of %s, batch 1, %d steps per timing\n", path,
           STEPS);
    printf("%7s %7s %7s %10s %12s %10s %11s %12s %9s %9s\n", "hidden", "conns", "nodes", "flat ns",
           "exact ns", "jit ns", "exact ms", "break-even", "exact", "fmuladd");
    static const int sizes[] = {3, 6, 10, 20, 30, 100};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        otc_rng rng;
        otc_rng_seed(&rng, 7 + si);
        int first_free = c.num_inputs + (c.bias_node ? 1 : 0) + c.num_outputs + c.num_hidden;
        otc_neat_innovations *inn = otc_neat_innovations_new(first_free, 0);
        otc_neat_genome *g = otc_neat_genome_new();
        if (!inn || !g || otc_neat_genome_init(g, &c, inn, &rng) != OTC_OK) {
            fprintf(stderr, "neat_jit_breakeven: %s\n", otc_last_error());
            return 1;
        }
        while (otc_neat_genome_hidden_count(g) < sizes[si])
            if (otc_neat_mutate_add_node(g, &c, inn, &rng) != OTC_OK) break;
        for (int k = 0; k < 2 * sizes[si]; k++)
            if (otc_neat_mutate_add_conn(g, &c, inn, &rng) != OTC_OK) break;
        bench_ctx *b = calloc(1, sizeof *b);
        otc_neat_phenotype *ph = NULL;
        if (!b || !(b->flat = otc_neat_flat_new()) || otc_neat_flat_build(b->flat, g, &c) ||
            otc_neat_phenotype_build(g, &c, &ph)) {
            fprintf(stderr, "neat_jit_breakeven: %s\n", otc_last_error());
            return 1;
        }
        b->n_in = c.num_inputs;
        for (int t = 0; t < STEPS; t++)
            for (int i = 0; i < b->n_in; i++) b->x[t][i] = 2.0f * otc_rng_uniform(&rng) - 1.0f;
        double flat_ns = cpu_time(flat_steps, b) * 1e9 / STEPS;
        printf("%7d %7d %7d %10.1f", otc_neat_genome_hidden_count(g),
               otc_neat_genome_enabled_count(g), otc_graph_size(ph->graph), flat_ns);
#ifdef OTC_BENCH_JIT
        b->input = ph->input;
        b->output = otc_graph_output(ph->graph, 0);
        double ns[2], ms[2];
        int differ[2];
        for (int exact = 1; exact >= 0; exact--) {
            ms[exact] = compile_ms(ph->graph, exact, &b->ex);
            ns[exact] = b->ex ? cpu_time(exec_steps, b) * 1e9 / STEPS : -1;
            differ[exact] = b->ex ? differing_steps(b, &rng) : -1;
            otc_exec_free(b->ex);
            b->ex = NULL;
        }
        double saved = flat_ns - ns[1];
        printf(" %12.1f %10.1f %11.2f", ns[1], ns[0], ms[1]);
        if (saved > 0)
            printf(" %12.0f", ms[1] * 1e6 / saved);
        else
            printf(" %12s", "never");
        printf(" %9d %9d\n", differ[1], differ[0]);
#else
        printf("  (built without LLVM: no JIT columns)\n");
#endif
        otc_neat_phenotype_free(ph);
        otc_neat_flat_free(b->flat);
        free(b);
        otc_neat_genome_free(g);
        otc_neat_innovations_free(inn);
    }
    printf("exact/fmuladd: of %d steps, how many outputs differ from the flat program's in any "
           "bit\n",
           CHECK_STEPS);
    return 0;
}
