/* Tests written once against the executor interface and run on every backend: the
 * interpreter, the LLVM JIT (when it is built) and the emitted C (tests/emitc_executor.c).
 * BACKEND_TEST(name) registers name_interpreter, name_jit and name_emitc; tests/CMakeLists.txt
 * registers the same names with ctest. */
#ifndef OTC_BACKEND_SUPPORT_H
#define OTC_BACKEND_SUPPORT_H

#include <stdbool.h>

#include "emitc_executor.h"
#include "harness.h"
#include "otc/otc.h"

typedef enum { BK_INTERPRETER, BK_JIT, BK_EMITC } bk_kind;

typedef struct {
    bk_kind kind;
    const char *name;      /* what otc_exec_backend says: "interpreter", "jit", "emitc" */
    const char *test;      /* the registered test name, for messages */
    emitc_program **progs; /* emitc: programs built so far, freed when the test ends */
    bool fast_tier;        /* jit: compile with OTC_JIT_TIER_FAST */
    int n_progs;
} bk;

typedef struct {
    bool inference;
    otc_id loss; /* the loss backward/train_step will use, or -1: the emitted C compiles
                    training code for it and the JIT compiles its training step now */
    const otc_optim_config *optim; /* emitc: the optimiser compiled in (NULL: plain SGD) */
} bk_options;

/* An executor for g on k (NULL with otc_last_error, or the compiler's output on stderr).
 * o NULL: training allowed, no loss. Compiled backends read the parameters from the graph
 * here; the emitted C with a loss reuses the code built for the same graph and loss. */
otc_executor *bk_new(bk *k, otc_graph *g, const bk_options *o);

/* The interpreter runs what it is given; the others compile a plan. */
bool bk_compiled(const bk *k);

/* Says on stdout that (part of) the current test does not apply on this backend and why. */
void bk_not_applicable(const bk *k, const char *why);

/* REQUIRE(ex) for an executor from bk_new, printing why it could not be made. */
#define REQUIRE_EX(ex)                                                                             \
    do {                                                                                           \
        if (!(ex)) fprintf(stderr, "%s executor: %s\n", k->name, otc_last_error());                \
        REQUIRE(ex);                                                                               \
    } while (0)

void bk_run(bk_kind kind, const char *test, void (*body)(bk *));

#ifdef OTC_TEST_JIT
#define BK_JIT_VARIANT(name)                                                                       \
    TEST(name##_jit) {                                                                             \
        bk_run(BK_JIT, #name "_jit", name##_on);                                                   \
    }
#else
#define BK_JIT_VARIANT(name)
#endif

#define BACKEND_TEST(name)                                                                         \
    static void name##_on(bk *k);                                                                  \
    TEST(name##_interpreter) {                                                                     \
        bk_run(BK_INTERPRETER, #name "_interpreter", name##_on);                                   \
    }                                                                                              \
    BK_JIT_VARIANT(name)                                                                           \
    TEST(name##_emitc) {                                                                           \
        bk_run(BK_EMITC, #name "_emitc", name##_on);                                               \
    }                                                                                              \
    static void name##_on(bk *k)

#endif
