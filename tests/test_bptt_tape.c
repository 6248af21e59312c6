/* Compiled truncated BPTT over a tape (otc_emit_c_options.bptt): the emitted NAME_train_step
 * over windows of K = 1, 3, 7 steps leaves the interpreter's weights (seq_begin,
 * seq_backward and Adam steps on windows of the same sequences, the state carried between
 * windows) on the RNN, LSTM and GRU layers, random recurrent NEAT graphs and a Delay reading
 * a Delay; and the emitted code's size does not grow with K. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bptt_support.h"
#include "emitc_support.h"
#include "harness.h"
#include "otc/layers.h"
#include "otc/random_graph.h"

enum { B = 3, T_SEQ = 21, WINDOWS = 12, MAX_IN = 4, N_MODELS = 6, N_K = 3 };
static const int KS[N_K] = {1, 3, 7};

typedef struct {
    otc_graph *g; /* the recurrent model with its loss */
    otc_id loss;
    int n_in;
    otc_id in[MAX_IN];
    int64_t width[MAX_IN];
    float *x[MAX_IN]; /* input k: [T_SEQ][B][width] */
} model;

/* A Delay reading a Delay: h = x w + d u, d = delay(h), e = delay(d), y = h + e v; what e
 * holds after a step is the state d held before it, so the state gradient carried into e's
 * next value lands on d's state input. */
static otc_graph *two_delays(void) {
    otc_graph *g = otc_graph_new();
    otc_shape s = otc_shape_2d(OTC_BATCH, 1), one = otc_shape_2d(1, 1);
    float w = 0.7f, u = 0.5f, v = -0.4f;
    otc_id x = otc_input(g, "x", s);
    otc_id d = otc_delay(g, "d", s), e = otc_delay(g, "e", s);
    otc_id h = otc_add(g, otc_matmul(g, x, otc_param(g, "w", one, &w)),
                       otc_matmul(g, d, otc_param(g, "u", one, &u)));
    otc_graph_set_input(g, d, 0, h);
    otc_graph_set_input(g, e, 0, d);
    otc_graph_mark_output(g, otc_add(g, h, otc_matmul(g, e, otc_param(g, "v", one, &v))));
    return g;
}

static bool model_init(model *m, otc_graph *g, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->g = g;
    if (!g || otc_compile_add_loss(g, OTC_OP_MSE, &m->loss, NULL)) return false;
    m->n_in = otc_graph_input_count(g);
    if (m->n_in > MAX_IN) return false;
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    for (int k = 0; k < m->n_in; k++) {
        m->in[k] = otc_graph_input(g, k);
        m->width[k] = (int64_t)otc_shape_size(otc_graph_node(g, m->in[k])->shape);
        size_t n = (size_t)T_SEQ * B * (size_t)m->width[k];
        if (!(m->x[k] = malloc(n * sizeof(float)))) return false;
        otc_testgen_fill(&rng, m->x[k], n, -1.0f, 1.0f);
    }
    return true;
}

static void model_free(model *m) {
    otc_graph_free(m->g);
    for (int k = 0; k < MAX_IN; k++) free(m->x[k]);
}

static const float *step_in(const model *m, int t, int k) {
    return m->x[k] + (size_t)t * B * (size_t)m->width[k];
}

static otc_optim_config adam(void) {
    otc_optim_config oc = otc_optim_defaults(OTC_OPTIM_ADAM);
    oc.lr = 0.01f;
    return oc;
}

/* The interpreter: windows of K steps over the sequence (each from a reset state at the
 * sequence's start, the state carried between its windows), the loss the mean over the
 * window's steps; into: its weights after WINDOWS Adam steps. */
static bool train_interpreter(const model *m, int K, otc_graph *into) {
    otc_optim_config oc = adam();
    otc_executor *ex = otc_interpreter_new(into, NULL);
    otc_optimizer *opt = otc_optimizer_new(&oc);
    float w[8];
    for (int t = 0; t < K; t++) w[t] = 1.0f / (float)K;
    bool ok = ex && opt;
    for (int s = 0; ok && s < WINDOWS; s++) {
        int t0 = (s * K) % T_SEQ;
        if (t0 == 0) otc_exec_reset_state(ex);
        ok = otc_exec_seq_begin(ex, K) == OTC_OK;
        for (int t = t0; ok && t < t0 + K; t++) {
            for (int k = 0; ok && k < m->n_in; k++)
                ok = otc_exec_set_input(ex, m->in[k], step_in(m, t, k), B) == OTC_OK;
            ok = ok && otc_exec_forward(ex) == OTC_OK;
        }
        otc_exec_zero_grad(ex);
        ok = ok && otc_exec_seq_backward(ex, m->loss, w) == OTC_OK &&
             otc_exec_optimizer_step(ex, opt) == OTC_OK;
    }
    ok = ok && otc_exec_sync_params(ex) == OTC_OK;
    if (!ok) fprintf(stderr, "interpreter: %s\n", otc_last_error());
    otc_optimizer_free(opt);
    otc_exec_free(ex);
    return ok;
}

/* One model at one K: its step graph and the emitted code's plans. */
typedef struct {
    const model *m;
    int K;
    otc_unrolled *u;
    otc_plan *fwd, *big, *train;
} tape_case;

static bool tape_case_init(tape_case *tc, emitc_case *ec, const model *m, int K, int index) {
    memset(tc, 0, sizeof *tc);
    tc->m = m;
    tc->K = K;
    if (otc_unroll_step(m->g, K, m->loss, &tc->u)) return false;
    otc_emit_c_options eo = otc_emit_c_defaults();
    eo.train = true;
    eo.loss = tc->u->total;
    eo.optim = adam();
    eo.bptt = K;
    eo.step = tc->u;
    memset(ec, 0, sizeof *ec);
    ec->eo = eo;
    snprintf(ec->name, sizeof ec->name, "g%d", index);
    ec->eo.name = ec->name;
    return otc_emit_c_plans(tc->u->graph, &ec->eo, &tc->fwd, &tc->big, &tc->train) == OTC_OK;
}

static void tape_case_free(tape_case *tc) {
    otc_plan_free(tc->fwd);
    otc_plan_free(tc->big);
    otc_plan_free(tc->train);
    otc_unrolled_free(tc->u); /* owns the step graph the emitc_case points at */
}

/* Which input of the model the step graph's Input id copies (-1: a state). */
static int input_of(const tape_case *tc, otc_id id) {
    for (int k = 0; k < tc->m->n_in; k++)
        if (tc->u->inputs[k] == id) return k;
    return -1;
}

/* The window's rows of one stream (the layout the header documents): the state before it
 * from `state` (per Delay, B rows of its width), then step t's inputs at + t * stride. */
static void fill_rows(const tape_case *tc, const otc_plan *p, otc_io_stream stream, int t0,
                      int64_t row, float *const *state, float *rows) {
    for (int i = 0; i < p->n_io; i++) {
        const otc_plan_io *io = &p->io[i];
        if (io->stream != stream) continue;
        int k = input_of(tc, io->node);
        int64_t stride = 0;
        for (int j = 0; j < p->n_io; j++) /* the step inputs' widths in this stream */
            if (p->io[j].stream == stream && input_of(tc, p->io[j].node) >= 0)
                stride += p->io[j].width;
        for (int t = 0; t < (k < 0 ? 1 : tc->K); t++) {
            const float *src = NULL;
            if (k >= 0) {
                src = step_in(tc->m, t0 + t, k);
            } else {
                for (int d = 0; d < tc->u->n_delays; d++)
                    if (tc->u->state_in[d] == io->node) src = state[d];
            }
            for (int b = 0; b < B; b++)
                for (int64_t e = 0; e < io->width; e++)
                    rows[b * row + io->offset + t * stride + e] = src[b * io->width + e];
        }
    }
}

typedef void (*init_fn)(void *);
typedef int (*fwd_fn)(const void *, const float *, float *, int, void *);
typedef int (*step_fn)(void *, const float *, const float *, int, float, float *, void *);

/* The emitted code over the same windows: NAME_forward gives the state after each window
 * (for the next one's row), NAME_train_step trains on it. into: the weights after. */
static bool train_emitted(const tape_case *tc, const emitc_build *b, const char *name,
                          otc_graph *into) {
    const otc_unrolled *u = tc->u;
    init_fn init = (init_fn)emitc_sym(b, name, "params_init");
    fwd_fn fwd = (fwd_fn)emitc_sym(b, name, "forward");
    step_fn step = (step_fn)emitc_sym(b, name, "train_step");
    size_t (*fws)(int) = (size_t(*)(int))emitc_sym(b, name, "workspace_bytes");
    size_t (*tws)(int) = (size_t(*)(int))emitc_sym(b, name, "train_workspace_bytes");
    if (!init || !fwd || !step || !fws || !tws) return false;
    otc_emit_c_options eo = otc_emit_c_defaults();
    eo.train = true;
    eo.loss = u->total;
    eo.bptt = tc->K;
    eo.step = u;
    int64_t in_w = 0, tg_w = 0, out_w = 0;
    if (otc_emit_c_rows(u->graph, &eo, &in_w, &tg_w, &out_w)) return false;
    int64_t P = tc->fwd->param_floats;
    float *params = calloc((size_t)(3 * P + 16), sizeof(float));
    float *in = calloc((size_t)(in_w * B + 1), sizeof(float));
    float *tg = calloc((size_t)(tg_w * B + 1), sizeof(float));
    float *out = calloc((size_t)(out_w * B + 1), sizeof(float));
    void *fw = malloc(fws(B)), *tw = malloc(tws(B));
    float *state[MAX_IN * 4] = {0};
    bool ok = params && in && tg && out && fw && tw && u->n_delays <= MAX_IN * 4;
    for (int d = 0; ok && d < u->n_delays; d++) {
        int64_t n = (int64_t)otc_shape_size(otc_graph_node(u->graph, u->state_in[d])->shape);
        ok = (state[d] = calloc((size_t)(n * B), sizeof(float))) != NULL;
    }
    if (ok) init(params);
    for (int s = 0; ok && s < WINDOWS; s++) {
        int t0 = (s * tc->K) % T_SEQ;
        for (int d = 0; t0 == 0 && d < u->n_delays; d++) /* a new sequence: zero state */
            memset(state[d], 0,
                   (size_t)otc_shape_size(otc_graph_node(u->graph, u->state_in[d])->shape) * B *
                       sizeof(float));
        fill_rows(tc, tc->fwd, OTC_IO_IN, t0, in_w, state, in);
        fill_rows(tc, tc->train, OTC_IO_TARGET, t0, tg_w, state, tg);
        float loss = -1;
        ok = fwd(params, in, out, B, fw) == 0 && step(params, in, tg, B, 0.01f, &loss, tw) == 0 &&
             isfinite(loss);
        /* The state after the window: the outputs, in Delay order (a shared one once). */
        for (int d = 0; ok && d < u->n_delays; d++) {
            const otc_plan_io *io = NULL;
            for (int i = 0; i < tc->fwd->n_io; i++)
                if (tc->fwd->io[i].stream == OTC_IO_OUT && tc->fwd->io[i].node == u->state_out[d])
                    io = &tc->fwd->io[i];
            ok = io != NULL;
            for (int r = 0; ok && r < B; r++)
                memcpy(state[d] + r * io->width, out + r * out_w + io->offset,
                       (size_t)io->width * sizeof(float));
        }
    }
    for (otc_id p = 0; ok && p < otc_graph_size(into); p++) {
        if (otc_graph_node(into, p)->op != OTC_OP_PARAMETER) continue;
        otc_id q = u->map[p];
        /* Neither the state nor the loss reaches it: the code does not hold it. */
        bool held = false;
        for (int i = 0; i < tc->fwd->n_params; i++) held |= tc->fwd->params[i] == q;
        if (!held) continue;
        memcpy(otc_graph_param(into, p)->data, params + tc->fwd->values[q].param_offset,
               otc_graph_param(into, p)->size * sizeof(float));
    }
    for (int d = 0; d < MAX_IN * 4; d++) free(state[d]);
    free(params);
    free(in);
    free(tg);
    free(out);
    free(fw);
    free(tw);
    return ok;
}

TEST(bptt_tape_matches_interpreter) {
    model models[N_MODELS];
    REQUIRE(model_init(&models[0], bptt_layer_graph(OTC_CELL_RNN, 3, 4), 11));
    REQUIRE(model_init(&models[1], bptt_layer_graph(OTC_CELL_LSTM, 4, 4), 12));
    REQUIRE(model_init(&models[2], bptt_layer_graph(OTC_CELL_GRU, 5, 4), 13));
    REQUIRE(model_init(&models[3], otc_testgen_recurrent(3301, 5), 14));
    REQUIRE(model_init(&models[4], otc_testgen_recurrent(3306, 9), 15));
    REQUIRE(model_init(&models[5], two_delays(), 16));
    for (int i = 3; i < N_MODELS; i++) CHECK(otc_graph_is_recurrent(models[i].g));
    tape_case tc[N_MODELS * N_K];
    emitc_case ec[N_MODELS * N_K];
    int n = 0;
    for (int i = 0; i < N_MODELS; i++)
        for (int j = 0; j < N_K; j++, n++) {
            bool made = tape_case_init(&tc[n], &ec[n], &models[i], KS[j], n);
            if (!made) fprintf(stderr, "%s\n", otc_last_error());
            REQUIRE(made);
            ec[n].g = tc[n].u->graph;
        }
    emitc_build b;
    REQUIRE(emitc_build_cases(ec, n, "-std=c99 -Wall -Wextra -Werror -O0", &b));
    double worst = 0;
    for (int c = 0; c < n; c++) {
        otc_graph *gi = otc_graph_clone(tc[c].m->g), *ge = otc_graph_clone(tc[c].m->g);
        REQUIRE(gi && ge);
        CHECK_MSG(train_interpreter(tc[c].m, tc[c].K, gi), "model %d K %d", c / N_K, tc[c].K);
        CHECK_MSG(train_emitted(&tc[c], &b, ec[c].name, ge), "model %d K %d", c / N_K, tc[c].K);
        CHECK_MSG(bptt_same_params(ge, gi, 1e-5, &worst, "emitted C (tape)"), "model %d K %d",
                  c / N_K, tc[c].K);
        otc_graph_free(gi);
        otc_graph_free(ge);
    }
    fprintf(stderr, "%d cases: worst weight difference %.3g\n", n, worst);
    emitc_unload(&b);
    for (int c = 0; c < n; c++) tape_case_free(&tc[c]);
    for (int i = 0; i < N_MODELS; i++) model_free(&models[i]);
}

/* The emitted source for K = 10 and K = 10,000: the same code, only numbers differ (K and
 * the workspace sizes); each loops over the steps rather than unrolling them. */
TEST(bptt_tape_code_size) {
    model m;
    REQUIRE(model_init(&m, bptt_layer_graph(OTC_CELL_LSTM, 6, 4), 1));
    size_t len[2];
    int Ks[2] = {10, 10000};
    for (int i = 0; i < 2; i++) {
        otc_unrolled *u = NULL;
        REQUIRE(otc_unroll_step(m.g, Ks[i], m.loss, &u) == OTC_OK);
        otc_emit_c_options eo = otc_emit_c_defaults();
        eo.train = true;
        eo.loss = u->total;
        eo.bptt = Ks[i];
        eo.step = u;
        char *h = NULL, *s = NULL;
        REQUIRE(otc_emit_c(u->graph, &eo, &h, &s) == OTC_OK);
        len[i] = strlen(h) + strlen(s);
        char loop[64];
        snprintf(loop, sizeof loop, "for (size_t t = 0; t < %d; t++)", Ks[i]);
        CHECK(strstr(s, loop) != NULL);
        free(h);
        free(s);
        otc_unrolled_free(u);
    }
    fprintf(stderr, "emitted bytes: K = 10: %zu, K = 10000: %zu\n", len[0], len[1]);
    CHECK(len[1] >= len[0] && len[1] - len[0] < 100);
    model_free(&m);
}
