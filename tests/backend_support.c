/* Executors on every backend for the tests written once (see backend_support.h). */
#include "backend_support.h"

#ifdef OTC_TEST_JIT
#include "otc/jit.h"
#endif

static const char *const names[] = {"interpreter", "jit", "emitc"};

bool bk_compiled(const bk *k) {
    return k->kind != BK_INTERPRETER;
}

void bk_not_applicable(const bk *k, const char *why) {
    printf("%s: does not apply on %s: %s\n", k->test, k->name, why);
}

/* The emitted code for g and loss: reused while the graph keeps its shape, because its
 * weights are read from the graph by each executor, not compiled in. */
static emitc_program *program_for(bk *k, otc_graph *g, const bk_options *o) {
    if (o->loss >= 0 && !o->optim)
        for (int i = 0; i < k->n_progs; i++)
            if (emitc_program_graph(k->progs[i]) == g &&
                emitc_program_loss(k->progs[i]) == o->loss &&
                emitc_program_size(k->progs[i]) == otc_graph_size(g))
                return k->progs[i];
    emitc_program *p = emitc_program_build(g, o->loss, o->optim);
    if (!p) return NULL;
    emitc_program **ps = realloc(k->progs, (size_t)(k->n_progs + 1) * sizeof *ps);
    if (!ps) {
        emitc_program_free(p);
        return NULL;
    }
    k->progs = ps;
    k->progs[k->n_progs++] = p;
    return p;
}

otc_executor *bk_new(bk *k, otc_graph *g, const bk_options *o) {
    bk_options none = {.inference = false, .loss = -1, .optim = NULL};
    if (!o) o = &none;
    otc_exec_options xo = {.inference = o->inference};
    switch (k->kind) {
    case BK_INTERPRETER:
        return otc_interpreter_new(g, &xo);
    case BK_JIT: {
#ifdef OTC_TEST_JIT
        otc_jit_options jo = otc_jit_defaults();
        jo.inference = o->inference;
        if (k->fast_tier) jo.tier = OTC_JIT_TIER_FAST;
        otc_executor *ex = NULL;
        otc_id loss = o->loss;
        if (otc_jit_executors_new(&g, o->loss >= 0 ? &loss : NULL, 1, &jo, &ex)) return NULL;
        return ex;
#else
        otc_fail(OTC_ERR_UNSUPPORTED, "this build has no LLVM backend");
        return NULL;
#endif
    }
    case BK_EMITC: {
        if (!g) {
            otc_fail(OTC_ERR_ARG, "no graph");
            return NULL;
        }
        emitc_program *p = program_for(k, g, o);
        return p ? emitc_executor_new(p, &xo) : NULL;
    }
    }
    return NULL;
}

void bk_run(bk_kind kind, const char *test, void (*body)(bk *)) {
    bk k = {.kind = kind, .name = names[kind], .test = test, .progs = NULL, .n_progs = 0};
    body(&k);
    for (int i = 0; i < k.n_progs; i++) emitc_program_free(k.progs[i]);
    free(k.progs);
}
