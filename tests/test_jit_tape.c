/* The JIT's training through time over a tape: one compiled step serves every window length
 * (the compile count stays put over windows of 3, 7 and a last shorter one), the weights
 * after truncated-BPTT Adam training with windows of 1, 3 and 7 steps, at batch 1 and 17 (over
 * a vector width), are the interpreter's, and so is the gradient reaching a window's starting
 * state (seq_state_grad). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bptt_support.h"
#include "harness.h"
#include "otc/compiler.h"
#include "otc/jit.h"

enum { SEQ = 12, MAX_B = 17, MAX_ROW = 8 };

typedef struct {
    otc_graph *g;
    otc_id loss;
    int n_in;
    otc_id in[4];
    int64_t width[4];
    int batch;
    float x[SEQ][4][MAX_B * MAX_ROW]; /* step t's rows of input k */
} tcase;

/* An LSTM layer (3 inputs, 5 units, 2 outputs) with an MSE loss, and a sequence of inputs
 * and targets (smooth in t, different per sample). */
static bool tcase_init(tcase *c, int batch) {
    memset(c, 0, sizeof *c);
    c->g = bptt_layer_graph(OTC_CELL_LSTM, 41, 5);
    if (!c->g || otc_compile_add_loss(c->g, OTC_OP_MSE, &c->loss, NULL)) return false;
    c->batch = batch;
    c->n_in = otc_graph_input_count(c->g);
    if (c->n_in > 4) return false;
    for (int k = 0; k < c->n_in; k++) {
        c->in[k] = otc_graph_input(c->g, k);
        c->width[k] = (int64_t)otc_shape_size(otc_graph_node(c->g, c->in[k])->shape);
        if (c->width[k] > MAX_ROW) return false;
        for (int t = 0; t < SEQ; t++)
            for (int64_t i = 0; i < batch * c->width[k]; i++)
                c->x[t][k][i] = 0.8f * sinf(0.37f * (float)t + 0.91f * (float)i + (float)k);
    }
    return true;
}

/* Windows of the given lengths in order (zeros: a reset first), each with its Adam step. */
static bool train(otc_executor *ex, tcase *c, otc_optimizer *opt, const int *lens, int n) {
    int t = 0;
    for (int w = 0; w < n; w++) {
        if (lens[w] == 0) {
            otc_exec_reset_state(ex);
            t = 0;
            continue;
        }
        if (otc_exec_seq_begin(ex, lens[w])) return false;
        for (int s = 0; s < lens[w]; s++, t++) {
            for (int k = 0; k < c->n_in; k++)
                if (otc_exec_set_input(ex, c->in[k], c->x[t % SEQ][k], c->batch)) return false;
            if (otc_exec_forward(ex)) return false;
        }
        otc_exec_zero_grad(ex);
        if (otc_exec_seq_backward(ex, c->loss, NULL) || otc_exec_optimizer_step(ex, opt))
            return false;
    }
    return otc_exec_sync_params(ex) == OTC_OK;
}

static int compiles(const otc_executor *ex) {
    otc_jit_stats st;
    return otc_jit_executor_stats(ex, &st) == OTC_OK ? st.compiles : -1;
}

/* A JIT executor on c's graph and an interpreter on a copy of it (ci: c over that copy), each
 * with its own Adam optimiser at learning rate lr. */
typedef struct {
    tcase ci;
    otc_executor *jit, *ip;
    otc_optimizer *oj, *oi;
} pair;

static bool pair_new(pair *p, const tcase *c, float lr) {
    p->ci = *c;
    p->ci.g = otc_graph_clone(c->g);
    otc_jit_options jo = otc_jit_defaults();
    jo.tier = OTC_JIT_TIER_FAST;
    jo.no_cache = true; /* count compiles, not the cache's hits */
    p->jit = otc_jit_executor_new(c->g, &jo);
    p->ip = p->ci.g ? otc_interpreter_new(p->ci.g, NULL) : NULL;
    otc_optim_config oc = otc_optim_defaults(OTC_OPTIM_ADAM);
    oc.lr = lr;
    p->oj = otc_optimizer_new(&oc);
    p->oi = otc_optimizer_new(&oc);
    return p->jit && p->ip && p->oj && p->oi;
}

static void pair_free(pair *p, tcase *c) {
    otc_optimizer_free(p->oj);
    otc_optimizer_free(p->oi);
    otc_exec_free(p->jit);
    otc_exec_free(p->ip);
    otc_graph_free(p->ci.g);
    otc_graph_free(c->g);
}

TEST(jit_tape_compiles_one_step) {
    tcase c;
    pair p;
    REQUIRE(tcase_init(&c, 3));
    REQUIRE(pair_new(&p, &c, 0.01f));
    const int first[] = {3}, rest[] = {7, 2, 0, 3, 7, 2};
    CHECK(train(p.jit, &c, p.oj, first, 1));
    int once = compiles(p.jit);
    CHECK(once > 0);
    CHECK(train(p.jit, &c, p.oj, rest, 6));
    CHECK_MSG(compiles(p.jit) == once, "%d modules compiled after windows of 7 and 2, %d after 3",
              compiles(p.jit), once);
    CHECK(train(p.ip, &p.ci, p.oi, first, 1) && train(p.ip, &p.ci, p.oi, rest, 6));
    double worst = 0;
    CHECK(bptt_same_params(c.g, p.ci.g, 1e-3, &worst, "jit weights"));
    fprintf(stderr, "compiles %d, worst weight difference %.3g\n", once, worst);
    pair_free(&p, &c);
}

/* Truncated BPTT over a sequence of 10 steps: windows of 1, then 3 (the last one 1 step), then
 * 7 (and 3), the weights compared after each. */
TEST(jit_tape_matches_interpreter) {
    static const int k1[] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, k3[] = {0, 3, 3, 3, 1},
                     k7[] = {0, 7, 3, 0, 7, 3};
    const int *plan[3] = {k1, k3, k7}, n[3] = {11, 5, 6};
    const int batches[2] = {1, 17};
    static tcase c;
    static pair p;
    for (int b = 0; b < 2; b++) {
        REQUIRE(tcase_init(&c, batches[b]));
        REQUIRE(pair_new(&p, &c, 0.02f));
        for (int k = 0; k < 3; k++) {
            double worst = 0;
            CHECK(train(p.jit, &c, p.oj, plan[k], n[k]) && train(p.ip, &p.ci, p.oi, plan[k], n[k]));
            CHECK_MSG(bptt_same_params(c.g, p.ci.g, 1e-3, &worst, "jit weights"),
                      "batch %d, windows of %d", batches[b], plan[k][1]);
            fprintf(stderr, "batch %d, windows of %d: worst weight difference %.3g\n", batches[b],
                    plan[k][1], worst);
        }
        pair_free(&p, &c);
    }
}

/* One window of `len` steps from the current state, its backward weighted (step t by 0.5 +
 * 0.1 t, so a mix-up of steps shows), no update. */
static bool window(otc_executor *ex, tcase *c, int from, int len) {
    float w[SEQ];
    for (int t = 0; t < len; t++) w[t] = 0.5f + 0.1f * (float)t;
    if (otc_exec_seq_begin(ex, len)) return false;
    for (int s = 0; s < len; s++) {
        for (int k = 0; k < c->n_in; k++)
            if (otc_exec_set_input(ex, c->in[k], c->x[(from + s) % SEQ][k], c->batch)) return false;
        if (otc_exec_forward(ex)) return false;
    }
    otc_exec_zero_grad(ex);
    return otc_exec_seq_backward(ex, c->loss, w) == OTC_OK;
}

/* Each Delay's gradient at the window's starting state against the interpreter's (itself
 * checked against finite differences in test_bptt.c): from zeros, from the state an earlier
 * window left, after a zero_grad dropped the window's parameter gradients, and for a window
 * of one step; before any seq_backward and for a node that is no Delay, the errors. */
TEST(jit_tape_state_grad_matches_interpreter) {
    static tcase c;
    pair p;
    REQUIRE(tcase_init(&c, 3));
    REQUIRE(pair_new(&p, &c, 0.01f));
    otc_id delays[4];
    int nd = 0;
    for (otc_id id = 0; id < (otc_id)otc_graph_size(c.g) && nd < 4; id++)
        if (otc_graph_node(c.g, id)->op == OTC_OP_DELAY) delays[nd++] = id;
    REQUIRE(nd > 0);
    const float *g;
    CHECK(otc_exec_seq_state_grad(p.jit, delays[0], &g) == OTC_ERR_STATE);
    CHECK(otc_exec_seq_state_grad(p.jit, c.in[0], &g) == OTC_ERR_ARG);
    const int from[4] = {0, 4, 9, 2}, len[4] = {4, 5, 3, 1};
    for (int r = 0; r < 4; r++) {
        REQUIRE(window(p.jit, &c, from[r], len[r]) && window(p.ip, &p.ci, from[r], len[r]));
        if (r == 2) { /* the parameter gradients dropped; the state's still asked for */
            otc_exec_zero_grad(p.jit);
            otc_exec_zero_grad(p.ip);
        }
        for (int k = 0; k < nd; k++) {
            const float *gj, *gi;
            REQUIRE(otc_exec_seq_state_grad(p.jit, delays[k], &gj) == OTC_OK);
            REQUIRE(otc_exec_seq_state_grad(p.ip, delays[k], &gi) == OTC_OK);
            size_t n = otc_shape_size(otc_graph_node(c.g, delays[k])->shape) * (size_t)c.batch;
            double big = 0, worst = 0;
            for (size_t i = 0; i < n; i++) {
                big = fmax(big, fabs(gi[i]));
                worst = fmax(worst, fabs(gj[i] - gi[i]));
            }
            CHECK_MSG(big > 1e-4, "window %d, delay %d: the gradient vanished (%g)", r, k, big);
            CHECK_MSG(worst <= 1e-4 * fmax(1, big), "window %d, delay %d: off by %g (largest %g)",
                      r, k, worst, big);
        }
        /* The update after the window: the next window starts from a state the weights moved. */
        if (r != 2) {
            CHECK(otc_exec_optimizer_step(p.jit, p.oj) == OTC_OK);
            CHECK(otc_exec_optimizer_step(p.ip, p.oi) == OTC_OK);
        }
    }
    CHECK(otc_exec_sync_params(p.jit) == OTC_OK);
    double worst = 0;
    CHECK(bptt_same_params(c.g, p.ci.g, 1e-3, &worst, "jit weights"));
    pair_free(&p, &c);
}
