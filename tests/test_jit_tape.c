/* The JIT's training through time over a tape: one compiled step serves every window length
 * (the compile count stays put over windows of 3, 7 and a last shorter one), and the weights
 * after truncated-BPTT Adam training with windows of 1, 3 and 7 steps, at batch 1 and 17 (over
 * a vector width), are the interpreter's. */
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

static otc_executor *jit_new(otc_graph *g) {
    otc_jit_options jo = otc_jit_defaults();
    jo.tier = OTC_JIT_TIER_FAST;
    jo.no_cache = true; /* count compiles, not the cache's hits */
    return otc_jit_executor_new(g, &jo);
}

TEST(jit_tape_compiles_one_step) {
    tcase c;
    REQUIRE(tcase_init(&c, 3));
    otc_graph *gi = otc_graph_clone(c.g);
    otc_executor *jit = jit_new(c.g), *ip = otc_interpreter_new(gi, NULL);
    otc_optim_config oc = otc_optim_defaults(OTC_OPTIM_ADAM);
    oc.lr = 0.01f;
    otc_optimizer *oj = otc_optimizer_new(&oc), *oi = otc_optimizer_new(&oc);
    REQUIRE(jit && ip && oj && oi);
    const int first[] = {3}, rest[] = {7, 2, 0, 3, 7, 2};
    CHECK(train(jit, &c, oj, first, 1));
    int once = compiles(jit);
    CHECK(once > 0);
    CHECK(train(jit, &c, oj, rest, 6));
    CHECK_MSG(compiles(jit) == once, "%d modules compiled after windows of 7 and 2, %d after 3",
              compiles(jit), once);
    tcase ci = c;
    ci.g = gi;
    CHECK(train(ip, &ci, oi, first, 1) && train(ip, &ci, oi, rest, 6));
    double worst = 0;
    CHECK(bptt_same_params(c.g, gi, 1e-3, &worst, "jit weights"));
    fprintf(stderr, "compiles %d, worst weight difference %.3g\n", once, worst);
    otc_optimizer_free(oj);
    otc_optimizer_free(oi);
    otc_exec_free(jit);
    otc_exec_free(ip);
    otc_graph_free(gi);
    otc_graph_free(c.g);
}

/* Truncated BPTT over a sequence of 10 steps: windows of 1, then 3 (the last one 1 step), then
 * 7 (and 3), the weights compared after each. */
TEST(jit_tape_matches_interpreter) {
    static const int k1[] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, k3[] = {0, 3, 3, 3, 1},
                     k7[] = {0, 7, 3, 0, 7, 3};
    const int *plan[3] = {k1, k3, k7}, n[3] = {11, 5, 6};
    const int batches[2] = {1, 17};
    static tcase c;
    for (int b = 0; b < 2; b++) {
        REQUIRE(tcase_init(&c, batches[b]));
        otc_graph *gi = otc_graph_clone(c.g);
        otc_executor *jit = jit_new(c.g), *ip = otc_interpreter_new(gi, NULL);
        otc_optim_config oc = otc_optim_defaults(OTC_OPTIM_ADAM);
        oc.lr = 0.02f;
        otc_optimizer *oj = otc_optimizer_new(&oc), *oi = otc_optimizer_new(&oc);
        REQUIRE(jit && ip && oj && oi);
        tcase ci = c;
        ci.g = gi;
        for (int k = 0; k < 3; k++) {
            double worst = 0;
            CHECK(train(jit, &c, oj, plan[k], n[k]) && train(ip, &ci, oi, plan[k], n[k]));
            CHECK_MSG(bptt_same_params(c.g, gi, 1e-3, &worst, "jit weights"),
                      "batch %d, windows of %d", batches[b], plan[k][1]);
            fprintf(stderr, "batch %d, windows of %d: worst weight difference %.3g\n", batches[b],
                    plan[k][1], worst);
        }
        otc_optimizer_free(oj);
        otc_optimizer_free(oi);
        otc_exec_free(jit);
        otc_exec_free(ip);
        otc_graph_free(gi);
        otc_graph_free(c.g);
    }
}
