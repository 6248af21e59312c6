/* Compiled training through time: on random recurrent NEAT graphs (self-loops, cycles through
 * hidden nodes, chains of delays, one or two inputs, several outputs) and on the RNN/LSTM/GRU
 * layers, the JIT (seq_begin/seq_backward/optimizer_step) and the emitted C of the unrolled
 * training graph (otc/unroll.h) give the interpreter's gradients over 20 steps and its
 * weights after 100 truncated-BPTT training steps. Plus the unrolled graph's shape on a
 * hand-checked running sum. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bptt_support.h"
#include "emitc_executor.h"
#include "harness.h"
#include "otc/compiler.h"
#include "otc/layers.h"
#include "otc/random_graph.h"
#ifdef OTC_TEST_JIT
#include "otc/jit.h"
#endif

enum { B = 3, T_GRAD = 20, T_SEQ = 20, K = 5, TRAIN_STEPS = 100, MAX_IN = 4 };

typedef struct {
    otc_graph *g;
    otc_id loss;
    int n_in;
    otc_id in[MAX_IN];
    int64_t width[MAX_IN], off[MAX_IN], row; /* floats per sample */
    float *x;                                /* [T_SEQ][row * B], input k at off[k] * B */
    float w[T_GRAD];
    bool quiet; /* window() reads no loss (the JIT then defers the step forwards) */
} scase;

static bool scase_init(scase *c, otc_graph *g, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->g = g;
    if (!g || otc_compile_add_loss(g, OTC_OP_MSE, &c->loss, NULL)) return false;
    c->n_in = otc_graph_input_count(g);
    if (c->n_in > MAX_IN) return false;
    for (int k = 0; k < c->n_in; k++) {
        c->in[k] = otc_graph_input(g, k);
        c->width[k] = (int64_t)otc_shape_size(otc_graph_node(g, c->in[k])->shape);
        c->off[k] = c->row;
        c->row += c->width[k];
    }
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    size_t n = (size_t)T_SEQ * (size_t)(c->row * B);
    c->x = malloc(n * sizeof *c->x);
    if (!c->x) return false;
    otc_testgen_fill(&rng, c->x, n, -1.0f, 1.0f);
    for (int t = 0; t < T_GRAD; t++) c->w[t] = t % 4 == 1 ? 0.0f : 0.05f + 0.01f * (float)t;
    return true;
}

static void scase_free(scase *c) {
    otc_graph_free(c->g);
    free(c->x);
}

static const float *step_in(const scase *c, int t, int k) {
    return c->x + (size_t)t * (size_t)(c->row * B) + (size_t)(c->off[k] * B);
}

/* Record steps [t0, t0 + n) from the executor's state and take their gradient. */
static bool window(otc_executor *ex, const scase *c, int t0, int n, const float *w) {
    if (otc_exec_seq_begin(ex, n)) return false;
    for (int t = t0; t < t0 + n; t++) {
        const float *l;
        for (int k = 0; k < c->n_in; k++)
            if (otc_exec_set_input(ex, c->in[k], step_in(c, t, k), B)) return false;
        if (otc_exec_forward(ex) || (!c->quiet && otc_exec_value(ex, c->loss, &l, NULL)))
            return false;
    }
    otc_exec_zero_grad(ex);
    return otc_exec_seq_backward(ex, c->loss, w) == OTC_OK;
}

/* The emitted C of the unrolled graph over n steps (loss weights w, NULL: 1/n), and an
 * executor over it; *u the unrolled graph. */
static otc_executor *emitc_unrolled(const scase *c, int n, const float *w,
                                    const otc_optim_config *oc, otc_unrolled **u,
                                    emitc_program **prog) {
    *prog = NULL;
    if (otc_unroll(c->g, n, c->loss, u)) return NULL;
    for (int t = 0; w && t < n; t++) otc_graph_param((*u)->graph, (*u)->weights[t])->data[0] = w[t];
    /* -O0: the unrolled graphs are long straight-line code, three times quicker to compile
     * than at -O1 (the optimiser is not what is checked here). */
    *prog = emitc_program_build_flags((*u)->graph, (*u)->total, oc, "-std=c99 -O0");
    return *prog ? emitc_executor_new(*prog, NULL) : NULL;
}

/* Steps [t0, t0 + n) into an unrolled executor, the state before them from `state` (per
 * delay, B rows; NULL: zeros). */
static bool unrolled_inputs(otc_executor *ex, const scase *c, const otc_unrolled *u, int t0,
                            float *const *state) {
    static const float zeros[B * 64];
    for (int t = 0; t < u->steps; t++)
        for (int k = 0; k < c->n_in; k++)
            if (otc_exec_set_input(ex, u->inputs[t * u->n_inputs + k], step_in(c, t0 + t, k), B))
                return false;
    for (int d = 0; d < u->n_delays; d++) {
        if (!state && otc_shape_size(otc_graph_node(c->g, u->delays[d])->shape) > 64) return false;
        if (otc_exec_set_input(ex, u->state_in[d], state ? state[d] : zeros, B)) return false;
    }
    return true;
}

/* Gradients over `steps` steps: interpreter, JIT, emitted C. */
static bool check_gradients(const scase *c, int steps, bool with_emitc, double *worst) {
    otc_executor *ip = otc_interpreter_new(c->g, NULL);
    bool ok = ip && window(ip, c, 0, steps, c->w);
#ifdef OTC_TEST_JIT
    otc_jit_options jo = otc_jit_defaults();
    jo.tier = OTC_JIT_TIER_FAST;
    otc_executor *jit = otc_jit_executor_new(c->g, &jo);
    ok = ok && jit && window(jit, c, 0, steps, c->w);
#endif
    otc_unrolled *u = NULL;
    emitc_program *prog = NULL;
    otc_executor *ec = NULL;
    if (ok && with_emitc) {
        ec = emitc_unrolled(c, steps, c->w, NULL, &u, &prog);
        ok = ec && unrolled_inputs(ec, c, u, 0, NULL) && otc_exec_forward(ec) == OTC_OK &&
             otc_exec_backward(ec, u->total) == OTC_OK;
    }
    if (!ok) fprintf(stderr, "gradient run: %s\n", otc_last_error());
    for (otc_id p = 0; ok && p < otc_graph_size(c->g); p++) {
        const otc_node *nd = otc_graph_node(c->g, p);
        if (nd->op != OTC_OP_PARAMETER || !nd->trainable) continue;
        const float *want, *got;
        if (otc_exec_grad(ip, p, &want)) continue; /* the loss does not reach it */
#ifdef OTC_TEST_JIT
        ok = otc_exec_grad(jit, p, &got) == OTC_OK &&
             bptt_close_all(got, want, nd->value->size, 2e-4, worst, "jit", p);
#endif
        if (ok && ec && otc_exec_grad(ec, u->map[p], &got) == OTC_OK)
            ok = bptt_close_all(got, want, nd->value->size, 2e-4, worst, "emitted C", p);
    }
    otc_exec_free(ip);
#ifdef OTC_TEST_JIT
    otc_exec_free(jit);
#endif
    otc_exec_free(ec);
    emitc_program_free(prog);
    otc_unrolled_free(u);
    return ok;
}

/* TRAIN_STEPS Adam steps of truncated BPTT: windows of K steps over sequences of T_SEQ steps
 * (each from a reset state, the state carried between its windows), loss weights 1/K. With
 * peek, every other step reads a gradient before the update (the JIT then runs backward and
 * the update apart instead of its fused step, on the same moments). */
static bool train_exec_peek(otc_executor *ex, const scase *c, const otc_optim_config *oc,
                            bool peek) {
    otc_optimizer *opt = otc_optimizer_new(oc);
    float w[K];
    for (int t = 0; t < K; t++) w[t] = 1.0f / K;
    bool ok = opt != NULL;
    for (int s = 0; ok && s < TRAIN_STEPS; s++) {
        int t0 = (s * K) % T_SEQ;
        if (t0 == 0) otc_exec_reset_state(ex);
        ok = window(ex, c, t0, K, w);
        const float *g;
        for (otc_id p = 0; ok && peek && s % 2 == 1 && p < otc_graph_size(c->g); p++)
            if (otc_graph_node(c->g, p)->op == OTC_OP_PARAMETER)
                ok = otc_exec_grad(ex, p, &g) == OTC_OK;
        ok = ok && otc_exec_optimizer_step(ex, opt) == OTC_OK;
    }
    otc_optimizer_free(opt);
    return ok && otc_exec_sync_params(ex) == OTC_OK;
}

static bool train_exec(otc_executor *ex, const scase *c, const otc_optim_config *oc) {
    return train_exec_peek(ex, c, oc, false);
}

/* The same with the emitted C's fused train_step over the unrolled window; the state goes
 * from each window's state_out to the next one's state_in. */
static bool train_emitc(const scase *c, const otc_optim_config *oc, otc_graph *into) {
    otc_unrolled *u = NULL;
    emitc_program *prog = NULL;
    otc_executor *ec = emitc_unrolled(c, K, NULL, oc, &u, &prog);
    otc_optimizer *opt = otc_optimizer_new(oc);
    bool ok = ec && opt;
    float *state[64] = {0};
    ok = ok && u->n_delays <= 64;
    for (int d = 0; ok && d < u->n_delays; d++) {
        size_t n = otc_shape_size(otc_graph_node(c->g, u->delays[d])->shape) * B;
        ok = (state[d] = malloc(n * sizeof(float))) != NULL;
    }
    for (int s = 0; ok && s < TRAIN_STEPS; s++) {
        int t0 = (s * K) % T_SEQ;
        float lv;
        /* The window's forward leaves its state (train_step reports only the loss). */
        ok =
            unrolled_inputs(ec, c, u, t0, t0 == 0 ? NULL : state) && otc_exec_forward(ec) == OTC_OK;
        for (int d = 0; ok && d < u->n_delays; d++) {
            const float *v;
            size_t n = otc_shape_size(otc_graph_node(c->g, u->delays[d])->shape) * B;
            ok = otc_exec_value(ec, u->state_out[d], &v, NULL) == OTC_OK;
            if (ok) memcpy(state[d], v, n * sizeof(float));
        }
        ok = ok && otc_exec_train_step(ec, u->total, opt, &lv) == OTC_OK;
    }
    ok = ok && otc_exec_sync_params(ec) == OTC_OK;
    for (otc_id p = 0; ok && p < otc_graph_size(into); p++)
        if (otc_graph_node(into, p)->op == OTC_OP_PARAMETER)
            memcpy(otc_graph_param(into, p)->data, otc_graph_param(u->graph, u->map[p])->data,
                   otc_graph_param(into, p)->size * sizeof(float));
    if (!ok) fprintf(stderr, "emitted C training: %s\n", otc_last_error());
    for (int d = 0; d < 64; d++) free(state[d]);
    otc_optimizer_free(opt);
    otc_exec_free(ec);
    emitc_program_free(prog);
    otc_unrolled_free(u);
    return ok;
}

/* Weights after training: interpreter vs JIT vs emitted C (each on its own copy). */
static bool check_training(const scase *c, bool with_emitc, double *worst) {
    otc_optim_config oc = otc_optim_defaults(OTC_OPTIM_ADAM);
    oc.lr = 0.01f;
    otc_graph *gi = otc_graph_clone(c->g);
    scase ci = *c;
    ci.g = gi;
    otc_executor *ip = otc_interpreter_new(gi, NULL);
    bool ok = ip && train_exec(ip, &ci, &oc);
    otc_exec_free(ip);
#ifdef OTC_TEST_JIT
    otc_graph *gj = otc_graph_clone(c->g);
    scase cj = *c;
    cj.g = gj;
    otc_jit_options jo = otc_jit_defaults();
    jo.tier = OTC_JIT_TIER_FAST;
    otc_executor *jit = gj ? otc_jit_executor_new(gj, &jo) : NULL;
    ok = ok && jit && train_exec(jit, &cj, &oc);
    if (!ok) fprintf(stderr, "training: %s\n", otc_last_error());
    ok = ok && bptt_same_params(gj, gi, 1e-3, worst, "jit weights");
    otc_exec_free(jit);
    otc_graph_free(gj);
#endif
    if (ok && with_emitc) {
        otc_graph *ge = otc_graph_clone(c->g);
        ok = ge && train_emitc(c, &oc, ge) &&
             bptt_same_params(ge, gi, 1e-3, worst, "emitted C weights");
        otc_graph_free(ge);
    }
    otc_graph_free(gi);
    return ok;
}

TEST(bptt_compiled_random_graphs) {
    enum { N = 16, WITH_C = 4 };
    double wg = 0, wt = 0;
    int recurrent = 0;
    for (int i = 0; i < N; i++) {
        scase c;
        otc_graph *g = otc_testgen_recurrent(3300 + (uint64_t)i, 2 + i % 12);
        REQUIRE(scase_init(&c, g, 40 + (uint64_t)i));
        recurrent += otc_graph_is_recurrent(c.g);
        CHECK_MSG(check_gradients(&c, T_GRAD, i < WITH_C, &wg), "graph %d gradients", i);
        CHECK_MSG(check_training(&c, i < WITH_C, &wt), "graph %d training", i);
        scase_free(&c);
    }
    fprintf(stderr, "%d graphs (%d recurrent): worst gradient difference %.3g, weights %.3g\n", N,
            recurrent, wg, wt);
    CHECK(recurrent >= N * 3 / 4);
}

#ifdef OTC_TEST_JIT
/* The JIT's two update paths (the fused training step, and backward then the rule's trees)
 * alternating on one optimiser: the interpreter's weights, for SGD with momentum and AdamW. */
TEST(bptt_compiled_jit_update_paths) {
    double worst = 0;
    for (int k = 0; k < 2; k++) {
        scase c;
        REQUIRE(scase_init(&c, otc_testgen_recurrent(5150 + (uint64_t)k, 6), 8));
        otc_optim_config oc = otc_optim_defaults(k ? OTC_OPTIM_ADAMW : OTC_OPTIM_SGD);
        oc.lr = 0.02f;
        if (!k)
            oc.momentum = 0.9f;
        else
            oc.weight_decay = 0.01f;
        otc_graph *gi = otc_graph_clone(c.g), *gj = otc_graph_clone(c.g);
        scase ci = c, cj = c;
        ci.g = gi;
        cj.g = gj;
        otc_executor *ip = otc_interpreter_new(gi, NULL), *jit = otc_jit_executor_new(gj, NULL);
        REQUIRE(ip && jit);
        CHECK(train_exec(ip, &ci, &oc));
        CHECK(train_exec_peek(jit, &cj, &oc, true));
        CHECK(bptt_same_params(gj, gi, 1e-3, &worst, "jit weights (both update paths)"));
        otc_exec_free(ip);
        otc_exec_free(jit);
        otc_graph_free(gi);
        otc_graph_free(gj);
        scase_free(&c);
    }
    fprintf(stderr, "worst weight difference %.3g\n", worst);
}
#endif

#ifdef OTC_TEST_JIT
/* Windows whose losses nobody reads: the JIT leaves the step forwards to the unrolled plan
 * and takes the state after each window from it (the next window carries on from there), on
 * both update paths; the weights are the interpreter's (which reads every loss). The last
 * step's output, read after the update, is the interpreter's too (the window's values, before
 * the update), and so is a forward after it (from the carried state, with the new weights). */
TEST(bptt_compiled_jit_deferred_steps) {
    double worst = 0;
    for (int k = 0; k < 2; k++) {
        scase c;
        otc_graph *g =
            k == 0 ? otc_testgen_recurrent(5200, 6) : bptt_layer_graph(OTC_CELL_LSTM, 11, 5);
        REQUIRE(scase_init(&c, g, 60 + (uint64_t)k));
        otc_optim_config oc = otc_optim_defaults(OTC_OPTIM_ADAM);
        oc.lr = 0.01f;
        otc_graph *gi = otc_graph_clone(c.g), *gj = otc_graph_clone(c.g);
        scase ci = c, cj = c;
        ci.g = gi;
        cj.g = gj;
        cj.quiet = true;
        otc_executor *ip = otc_interpreter_new(gi, NULL), *jit = otc_jit_executor_new(gj, NULL);
        REQUIRE(ip && jit);
        CHECK(train_exec_peek(ip, &ci, &oc, false));
        CHECK_MSG(train_exec_peek(jit, &cj, &oc, k == 1), "%s", otc_last_error());
        CHECK(bptt_same_params(gj, gi, 1e-3, &worst, "jit weights (deferred steps)"));
        otc_id out = otc_graph_output(c.g, 0);
        int64_t n = (int64_t)otc_shape_size(otc_graph_node(c.g, out)->shape) * B;
        for (int pass = 0; pass < 2; pass++) {
            const float *want, *got;
            CHECK(otc_exec_value(ip, out, &want, NULL) == OTC_OK);
            CHECK_MSG(otc_exec_value(jit, out, &got, NULL) == OTC_OK, "%s", otc_last_error());
            CHECK(bptt_close_all(got, want, (size_t)n, 1e-3, &worst, "jit last step", out));
            /* The next step from the state the window left. */
            for (int i = 0; i < c.n_in; i++) {
                CHECK(otc_exec_set_input(ip, c.in[i], step_in(&c, 0, i), B) == OTC_OK);
                CHECK(otc_exec_set_input(jit, c.in[i], step_in(&c, 0, i), B) == OTC_OK);
            }
            CHECK(otc_exec_forward(ip) == OTC_OK && otc_exec_forward(jit) == OTC_OK);
        }
        otc_exec_free(ip);
        otc_exec_free(jit);
        otc_graph_free(gi);
        otc_graph_free(gj);
        scase_free(&c);
    }
    fprintf(stderr, "worst difference %.3g\n", worst);
}
#endif

#ifdef OTC_TEST_JIT
/* A window of `steps` steps of an LSTM or GRU layer (x [batch,19], 40 units, the MSE of h
 * against a target) from `state` (every Delay's, [batch,40]) through one executor: the
 * gradient of every parameter in grads (the graph's parameter order, concatenated). */
static bool layer_window_grads(otc_graph *g, otc_executor *ex, int steps, int batch,
                               const float *xs, const float *ts, const float *state, float *grads) {
    otc_id x = otc_graph_find(g, "x"), target = otc_graph_find(g, "target"),
           loss = otc_graph_find(g, "loss");
    if (!ex) return false;
    for (otc_id d = 0; d < otc_graph_size(g); d++)
        if (otc_graph_node(g, d)->op == OTC_OP_DELAY && otc_exec_set_state(ex, d, state, batch))
            return false;
    if (otc_exec_seq_begin(ex, steps)) return false;
    for (int t = 0; t < steps; t++)
        if (otc_exec_set_input(ex, x, xs + (size_t)t * (size_t)batch * 19, batch) ||
            otc_exec_set_input(ex, target, ts + (size_t)t * (size_t)batch * 40, batch) ||
            otc_exec_forward(ex))
            return false;
    otc_exec_zero_grad(ex);
    if (otc_exec_seq_backward(ex, loss, NULL)) return false;
    for (otc_id p = 0; p < otc_graph_size(g); p++) {
        const otc_node *nd = otc_graph_node(g, p);
        const float *gp;
        if (nd->op != OTC_OP_PARAMETER || !nd->trainable) continue;
        if (otc_exec_grad(ex, p, &gp)) return false;
        memcpy(grads, gp, nd->value->size * sizeof *grads);
        grads += nd->value->size;
    }
    return true;
}

/* |got - want| <= tol * the largest |want| (the gradients are far below 1, so the bound
 * bptt_close_all takes, relative to at least 1, would let a wrong sum through). */
static bool grads_close(const float *got, const float *want, size_t n, double tol, double *worst) {
    double scale = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs((double)want[i]));
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]) / scale;
        if (d > *worst) *worst = d;
        if (!(d <= tol)) {
            fprintf(stderr, "gradient [%zu]: %.9g, interpreter %.9g\n", i, (double)got[i],
                    (double)want[i]);
            return false;
        }
    }
    return true;
}

/* The JIT's dense products of a recurrent layer at sizes where it chooses between OpenBLAS
 * and its own blocks (llvm_render_util.c's cut-offs): 37 samples (a partial vector), 2 steps
 * from a random state,
 * products of 19 and 40 rows (partial row blocks) by 160 (LSTM) or 120 (GRU) gate columns
 * (a partial column block). With 16 lanes the forward and input-gradient products are
 * generated and the weight gradients (but the GRU's input one) go to OpenBLAS; with 8 lanes
 * the input gradients go to OpenBLAS too (generated products alone: bptt_compiled_layers). Each
 * window's weight gradients (sums over the steps and the samples, in other orders than the
 * interpreter's) are the interpreter's within float rounding. */
TEST(bptt_compiled_jit_layer_products) {
    enum { STEPS = 2, BATCH = 37, IN = 19, HIDDEN = 40 };
    otc_cell cells[2] = {OTC_CELL_LSTM, OTC_CELL_GRU};
    otc_rng rng;
    otc_rng_seed(&rng, 3030);
    float *xs = malloc((size_t)STEPS * BATCH * IN * sizeof *xs);
    float *ts = malloc((size_t)STEPS * BATCH * HIDDEN * sizeof *ts);
    float *state = malloc((size_t)BATCH * HIDDEN * sizeof *state);
    REQUIRE(xs && ts && state);
    otc_testgen_fill(&rng, state, (size_t)BATCH * HIDDEN, -0.5f, 0.5f);
    otc_testgen_fill(&rng, xs, (size_t)STEPS * BATCH * IN, -1.0f, 1.0f);
    otc_testgen_fill(&rng, ts, (size_t)STEPS * BATCH * HIDDEN, -1.0f, 1.0f);
    double worst = 0;
    for (int i = 0; i < 2; i++) {
        otc_graph *g = otc_graph_new();
        otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, IN));
        otc_id h = otc_recurrent(g, cells[i], x, HIDDEN, 1, &rng, "rnn");
        otc_id target = otc_input(g, "target", otc_shape_2d(OTC_BATCH, HIDDEN));
        otc_id loss = otc_mse(g, h, target);
        REQUIRE(h >= 0 && loss >= 0 && otc_graph_mark_output(g, h) == OTC_OK &&
                otc_graph_set_name(g, loss, "loss") == OTC_OK);
        size_t n = 0;
        for (otc_id p = 0; p < otc_graph_size(g); p++)
            if (otc_graph_node(g, p)->op == OTC_OP_PARAMETER)
                n += otc_graph_node(g, p)->value->size;
        float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
        REQUIRE(want && got);
        otc_executor *ip = otc_interpreter_new(g, NULL);
        REQUIRE(layer_window_grads(g, ip, STEPS, BATCH, xs, ts, state, want));
        otc_exec_free(ip);
        /* 8 lanes on the LSTM only (the GRU's products go the same ways as at 16 lanes but
         * for its input gradients, which the LSTM covers): each compile costs ~0.3 s. */
        for (int v = 0; v < (i == 0 ? 2 : 1); v++) {
            otc_jit_options jo = otc_jit_defaults();
            jo.tier = OTC_JIT_TIER_FAST;
            jo.lanes = v == 1 ? 8 : 16;
            otc_executor *jit = otc_jit_executor_new(g, &jo);
            CHECK_MSG(layer_window_grads(g, jit, STEPS, BATCH, xs, ts, state, got), "cell %d, %s",
                      i, otc_last_error());
            size_t at = 0;
            for (otc_id p = 0; p < otc_graph_size(g); p++) {
                const otc_node *nd = otc_graph_node(g, p);
                if (nd->op != OTC_OP_PARAMETER || !nd->trainable) continue;
                CHECK_MSG(grads_close(got + at, want + at, nd->value->size, 1e-4, &worst),
                          "cell %d variant %d parameter %s", i, v, nd->name);
                at += nd->value->size;
            }
            otc_exec_free(jit);
        }
        free(want);
        free(got);
        otc_graph_free(g);
    }
    free(xs);
    free(ts);
    free(state);
    fprintf(stderr, "lstm, gru: worst gradient difference %.3g of the largest\n", worst);
}
#endif

TEST(bptt_compiled_layers) {
    otc_cell cells[3] = {OTC_CELL_RNN, OTC_CELL_LSTM, OTC_CELL_GRU};
    double wg = 0, wt = 0;
    for (int i = 0; i < 3; i++) {
        scase c;
        REQUIRE(scase_init(&c, bptt_layer_graph(cells[i], 7 + (uint64_t)i, 5), 90 + (uint64_t)i));
        /* The emitted C over one window (gcc takes long over 20 unrolled LSTM steps). */
        CHECK_MSG(check_gradients(&c, T_GRAD, false, &wg), "cell %d gradients", i);
        CHECK_MSG(check_gradients(&c, K, true, &wg), "cell %d gradients (emitted C)", i);
        CHECK_MSG(check_training(&c, true, &wt), "cell %d training", i);
        scase_free(&c);
    }
    fprintf(stderr, "rnn, lstm, gru: worst gradient difference %.3g, weights %.3g\n", wg, wt);
}

/* x [B,1]; h = x + d, d = delay(h), e = delay(d): over 3 steps from state (d0, e0) the
 * unrolled graph has 3 copies of x, two state inputs, and leaves d = x0 + x1 + x2 + d0 and
 * e = x0 + x1 + d0 (the values one step before), checked by running it. */
TEST(bptt_compiled_unroll_running_sum) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id d = otc_delay(g, "d", otc_shape_2d(OTC_BATCH, 1));
    otc_id e = otc_delay(g, "e", otc_shape_2d(OTC_BATCH, 1));
    otc_id h = otc_add(g, x, d);
    otc_graph_set_input(g, d, 0, h);
    otc_graph_set_input(g, e, 0, d);
    otc_graph_mark_output(g, h);
    otc_unrolled *u = NULL;
    REQUIRE(otc_unroll(g, 3, -1, &u) == OTC_OK);
    CHECK(u->n_inputs == 1 && u->n_delays == 2 && u->total == -1);
    CHECK(otc_graph_input_count(u->graph) == 5);
    CHECK(otc_graph_output_count(u->graph) == 2);
    otc_executor *ex = otc_interpreter_new(u->graph, NULL);
    REQUIRE(ex);
    float xs[3] = {1, 2, 4}, d0 = 10, e0 = 100;
    for (int t = 0; t < 3; t++) otc_exec_set_input(ex, u->inputs[t], &xs[t], 1);
    otc_exec_set_input(ex, u->state_in[0], &d0, 1);
    otc_exec_set_input(ex, u->state_in[1], &e0, 1);
    REQUIRE(otc_exec_forward(ex) == OTC_OK);
    const float *v;
    REQUIRE(otc_exec_value(ex, u->state_out[0], &v, NULL) == OTC_OK);
    CHECK_NEAR(v[0], 17.0, 0);
    REQUIRE(otc_exec_value(ex, u->state_out[1], &v, NULL) == OTC_OK);
    CHECK_NEAR(v[0], 13.0, 0);
    otc_exec_free(ex);
    otc_unrolled_free(u);
    CHECK(otc_unroll(g, 0, -1, &u) == OTC_ERR_ARG);
    otc_graph_free(g);
}
