/* Compiled recurrence, forward: plans with Delay state, emitted C (NAME_reset, the workspace
 * carrying the state) and the JIT agree with the interpreter step after step; reset and
 * independent instances. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emitc_support.h"
#include "harness.h"
#include "otc/jit.h"
#include "otc/random_graph.h"

typedef int (*fwd_fn)(const float *, float *, int, void *);
typedef int (*reset_fn)(void *, int);

enum { STEPS = 100, BATCH = 3 };

/* x [B,1]; d = delay of h; h = x + d (a running sum: d is read before its source exists in
 * the step); e = delay of d (a chain: the sum two steps back). Outputs h and e. */
static otc_graph *running_sum(void) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id d = otc_delay(g, "d", otc_shape_2d(OTC_BATCH, 1));
    otc_id e = otc_delay(g, "e", otc_shape_2d(OTC_BATCH, 1));
    otc_id h = otc_add(g, x, d);
    otc_graph_set_input(g, d, 0, h);
    otc_graph_set_input(g, e, 0, d);
    otc_graph_mark_output(g, h);
    otc_graph_mark_output(g, e);
    return g;
}

TEST(recurrent_plan_state) {
    otc_graph *g = running_sum();
    otc_plan *p = NULL;
    REQUIRE(otc_plan_build(g, NULL, &p) == OTC_OK);
    CHECK(p->state_per_sample == 2);
    /* The last two forward steps copy the state, e (which reads d's old value) first. */
    int n = p->n_forward_steps;
    REQUIRE(n >= 2);
    CHECK(p->steps[n - 2].kind == OTC_STEP_STATE && p->steps[n - 1].kind == OTC_STEP_STATE);
    CHECK(p->steps[n - 2].node == otc_graph_find(g, "e"));
    CHECK(p->steps[n - 1].node == otc_graph_find(g, "d"));
    /* Both slots inside the state range, which nothing else shares. */
    for (otc_id id = 0; id < p->n_values; id++) {
        const otc_plan_value *v = &p->values[id];
        if (v->storage != OTC_STORE_WORK || !v->batched) continue;
        bool is_delay = otc_graph_node(g, id)->op == OTC_OP_DELAY;
        bool inside =
            v->offset.base == p->state_offset && v->offset.per_batch < p->state_per_sample;
        CHECK_MSG(is_delay == inside, "node #%d", (int)id);
    }
    /* A training plan of a recurrent graph is refused with a message. */
    otc_plan_options po = {.train = true, .loss = -1};
    otc_id t = otc_input(g, "t", otc_shape_2d(OTC_BATCH, 1));
    po.loss = otc_mse(g, otc_graph_find(g, "d"), t);
    po.optim = otc_optim_defaults(OTC_OPTIM_SGD);
    otc_plan *tp = NULL;
    CHECK(otc_plan_build(g, &po, &tp) == OTC_ERR_UNSUPPORTED);
    CHECK(strstr(otc_last_error(), "through time") != NULL);
    otc_plan_free(p);
    otc_graph_free(g);

    /* Delays that only read each other cannot be ordered: a clear error. */
    g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id a = otc_delay(g, "a", otc_shape_2d(OTC_BATCH, 1));
    otc_id b = otc_delay(g, "b", otc_shape_2d(OTC_BATCH, 1));
    otc_graph_set_input(g, a, 0, b);
    otc_graph_set_input(g, b, 0, a);
    otc_graph_mark_output(g, otc_add(g, x, a));
    CHECK(otc_plan_build(g, NULL, &p) == OTC_ERR_UNSUPPORTED);
    CHECK(strstr(otc_last_error(), "ring of delays") != NULL);
    otc_graph_free(g);
}

/* The running sum through emitted C and the JIT against hand values: inputs 1, 2, 3, 4 per
 * step (row b adds 10 b) give h = 1, 3, 6, 10 (+ 10 b t) and e = 0, 0, 1, 3 (+ ...). */
TEST(recurrent_running_sum) {
    emitc_case c;
    REQUIRE(emitc_case_init(&c, running_sum(), 0, NULL));
    emitc_build b;
    REQUIRE(emitc_build_cases(&c, 1, "-std=c99 -O1", &b));
    fwd_fn f = (fwd_fn)emitc_sym(&b, c.name, "forward");
    reset_fn r = (reset_fn)emitc_sym(&b, c.name, "reset");
    REQUIRE(f && r);
    size_t bytes = emitc_workspace_bytes(&c, &b, 2);
    float *ws = malloc(bytes);
    REQUIRE(ws);
    memset(ws, 0x7f, bytes); /* garbage: reset must clear the state */
    CHECK(r(ws, 2) == 0);
    CHECK(r(NULL, 2) == 1);
    otc_executor *jit = NULL;
#ifdef OTC_TEST_JIT
    jit = otc_jit_executor_new(c.g, NULL);
    REQUIRE(jit);
#endif
    const float h_want[4] = {1, 3, 6, 10}, e_want[4] = {0, 0, 1, 3};
    for (int t = 0; t < 4; t++) {
        float in[2] = {(float)(t + 1), (float)(t + 1) + 10.0f}, out[4];
        CHECK(f(in, out, 2, ws) == 0);
        for (int row = 0; row < 2; row++) {
            float hs = h_want[t] + 10.0f * (float)(row * (t + 1));
            float es = e_want[t] + 10.0f * (float)(row * (t > 1 ? t - 1 : 0));
            CHECK_NEAR(out[row * 2 + 0], hs, 0);
            CHECK_NEAR(out[row * 2 + 1], es, 0);
        }
        if (jit) {
            const float *h, *e;
            otc_id x = otc_graph_find(c.g, "x");
            CHECK(otc_exec_set_input(jit, x, in, 2) == OTC_OK);
            CHECK(otc_exec_forward(jit) == OTC_OK);
            CHECK(otc_exec_value(jit, otc_graph_output(c.g, 0), &h, NULL) == OTC_OK);
            CHECK(otc_exec_value(jit, otc_graph_output(c.g, 1), &e, NULL) == OTC_OK);
            for (int row = 0; row < 2; row++) {
                CHECK_NEAR(h[row], out[row * 2 + 0], 0);
                CHECK_NEAR(e[row], out[row * 2 + 1], 0);
            }
        }
    }
    otc_exec_free(jit);
    free(ws);
    emitc_unload(&b);
    emitc_case_free(&c);
}

typedef struct {
    emitc_case *cases;
    int n;
    emitc_build b;
    otc_executor **jit; /* NULL without the LLVM backend */
} suite;

static bool suite_new(suite *s, int n, uint64_t seed0) {
    memset(s, 0, sizeof *s);
    s->cases = calloc((size_t)n, sizeof *s->cases);
    if (!s->cases) return false;
    s->n = n;
    int delays = 0;
    for (int i = 0; i < n; i++) {
        otc_graph *g = otc_testgen_recurrent(seed0 + (uint64_t)i, 2 + i % 19);
        if (!emitc_case_init(&s->cases[i], g, i, NULL)) {
            fprintf(stderr, "case %d: %s\n", i, otc_last_error());
            return false;
        }
        delays += s->cases[i].fwd->state_per_sample > 0;
    }
    if (delays < n * 3 / 4) {
        fprintf(stderr, "only %d of %d graphs are recurrent\n", delays, n);
        return false;
    }
    /* -O0: the compile is most of the test (a quarter less than -O1); what is checked is the
     * state carried between steps, not the optimiser (test_render_c.c builds at -O0 to -O3). */
    if (!emitc_build_cases(s->cases, n, "-std=c99 -O0", &s->b)) return false;
#ifdef OTC_TEST_JIT
    s->jit = calloc((size_t)n, sizeof *s->jit);
    otc_graph **gs = malloc((size_t)n * sizeof *gs);
    if (!s->jit || !gs) return false;
    for (int i = 0; i < n; i++) gs[i] = s->cases[i].g;
    otc_jit_options jo = otc_jit_defaults();
    jo.inference = true;
    jo.tier = OTC_JIT_TIER_FAST;
    otc_status st = otc_jit_executors_new(gs, NULL, n, &jo, s->jit);
    free(gs);
    if (st) {
        fprintf(stderr, "jit: %s\n", otc_last_error());
        return false;
    }
#endif
    return true;
}

static void suite_free(suite *s) {
    for (int i = 0; i < s->n; i++) {
        if (s->jit) otc_exec_free(s->jit[i]);
        emitc_case_free(&s->cases[i]);
    }
    free(s->jit);
    free(s->cases);
    emitc_unload(&s->b);
}

/* One step of a case through an executor; its outputs as the plan's output rows. */
static bool exec_step(otc_executor *ex, const emitc_case *c, const float *in, float *out,
                      int batch) {
    const otc_plan *p = c->fwd;
    if (!emitc_set_inputs(ex, p, in, NULL, batch) || otc_exec_forward(ex)) return false;
    for (int k = 0; k < p->n_io; k++) {
        const otc_plan_io *io = &p->io[k];
        if (io->stream != OTC_IO_OUT) continue;
        const float *v;
        if (otc_exec_value(ex, io->node, &v, NULL)) return false;
        for (int b = 0; b < batch; b++)
            for (int64_t e = 0; e < io->width; e++)
                out[b * p->out_width + io->offset + e] = v[b * io->width + e];
    }
    return true;
}

/* Per case: `steps` random input rows. */
static float *sequence(const emitc_case *c, int steps, int batch, uint64_t seed) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    size_t n = (size_t)steps * (size_t)batch * (size_t)c->fwd->in_width;
    float *x = malloc((n ? n : 1) * sizeof *x);
    if (x) otc_testgen_fill(&rng, x, n, -2.0f, 2.0f);
    return x;
}

TEST(recurrent_compiled_differential) {
    enum { N = 120 };
    suite s;
    REQUIRE(suite_new(&s, N, 1400));
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < N && bad < 5; i++) {
        const emitc_case *c = &s.cases[i];
        const otc_plan *p = c->fwd;
        fwd_fn f = (fwd_fn)emitc_sym(&s.b, c->name, "forward");
        bool recurrent = p->state_per_sample > 0;
        reset_fn r = recurrent ? (reset_fn)emitc_sym(&s.b, c->name, "reset") : NULL;
        size_t bytes = emitc_workspace_bytes(c, &s.b, BATCH);
        float *ws = malloc(bytes);
        float *x = sequence(c, STEPS, BATCH, 77 + (uint64_t)i);
        size_t ow = (size_t)BATCH * (size_t)p->out_width;
        float *want = malloc(ow * sizeof *want), *got = malloc(ow * sizeof *got);
        float *jgot = malloc(ow * sizeof *jgot);
        otc_exec_options xo = {.inference = true};
        otc_executor *ip = otc_interpreter_new(c->g, &xo);
        REQUIRE(f && (r || !recurrent) && ws && x && want && got && jgot && ip);
        memset(ws, 0x55, bytes);
        if (recurrent) CHECK(r(ws, BATCH) == 0);
        for (int t = 0; t < STEPS && bad < 5; t++) {
            const float *in = x + (size_t)t * BATCH * (size_t)p->in_width;
            REQUIRE(exec_step(ip, c, in, want, BATCH));
            CHECK(f(in, got, BATCH, ws) == 0);
            if (s.jit) REQUIRE(exec_step(s.jit[i], c, in, jgot, BATCH));
            for (size_t k = 0; k < ow; k++) {
                double d = fabs((double)got[k] - want[k]) / fmax(1.0, fabs((double)want[k]));
                double dj = s.jit ? fabs((double)jgot[k] - want[k]) / fmax(1.0, fabs(want[k])) : 0;
                if (d > worst) worst = d;
                if (dj > worst) worst = dj;
                if (!(d <= 1e-4) || !(dj <= 1e-4)) {
                    fprintf(stderr, "%s step %d out[%zu]: interpreter %.9g, C %.9g, jit %.9g\n",
                            c->name, t, k, (double)want[k], (double)got[k],
                            s.jit ? (double)jgot[k] : 0.0);
                    bad++;
                    break;
                }
            }
        }
        otc_exec_free(ip);
        free(ws);
        free(x);
        free(want);
        free(got);
        free(jgot);
    }
    fprintf(stderr, "%d graphs x %d steps, worst relative difference %.3g\n", N, STEPS, worst);
    CHECK(bad == 0);
    suite_free(&s);
}

/* Reset restores the initial state exactly, and two instances stepped in turn (emitted C:
 * two workspaces; JIT: two executors of one graph) each give what it gives alone. */
TEST(recurrent_compiled_reset_instances) {
    enum { N = 12, T = 30 };
    suite s;
    REQUIRE(suite_new(&s, N, 9100));
    for (int i = 0; i < N; i++) {
        const emitc_case *c = &s.cases[i];
        const otc_plan *p = c->fwd;
        if (p->state_per_sample == 0) continue;
        fwd_fn f = (fwd_fn)emitc_sym(&s.b, c->name, "forward");
        reset_fn r = (reset_fn)emitc_sym(&s.b, c->name, "reset");
        size_t bytes = emitc_workspace_bytes(c, &s.b, BATCH);
        size_t ow = (size_t)BATCH * (size_t)p->out_width;
        float *wa = malloc(bytes), *wb = malloc(bytes);
        float *xa = sequence(c, T, BATCH, 5), *xb = sequence(c, T, BATCH, 6);
        float *ref = malloc((size_t)T * ow * sizeof *ref), *out = malloc(ow * sizeof *out);
        REQUIRE(f && r && wa && wb && xa && xb && ref && out);
        size_t row = (size_t)BATCH * (size_t)p->in_width;
        /* A alone, then again after more steps and a reset: bit for bit the same. */
        r(wa, BATCH);
        for (int t = 0; t < T; t++) f(xa + t * row, ref + t * ow, BATCH, wa);
        for (int t = 0; t < 7; t++) f(xb + t * row, out, BATCH, wa);
        r(wa, BATCH);
        for (int t = 0; t < T; t++) {
            f(xa + t * row, out, BATCH, wa);
            CHECK_MSG(memcmp(out, ref + t * ow, ow * sizeof *out) == 0, "%s reset step %d", c->name,
                      t);
        }
        /* A and B interleaved: A unchanged. */
        r(wa, BATCH);
        r(wb, BATCH);
        for (int t = 0; t < T; t++) {
            f(xb + t * row, out, BATCH, wb);
            f(xa + t * row, out, BATCH, wa);
            CHECK_MSG(memcmp(out, ref + t * ow, ow * sizeof *out) == 0, "%s instances step %d",
                      c->name, t);
        }
        if (s.jit) {
            /* The JIT: reset_state, and a second executor beside the first. */
            otc_executor *ja = s.jit[i], *jb = otc_jit_executor_new(c->g, NULL);
            REQUIRE(jb);
            for (int round = 0; round < 2; round++) {
                otc_exec_reset_state(ja);
                otc_exec_reset_state(jb);
                for (int t = 0; t < T; t++) {
                    if (round == 1) REQUIRE(exec_step(jb, c, xb + t * row, out, BATCH));
                    REQUIRE(exec_step(ja, c, xa + t * row, out, BATCH));
                    for (size_t k = 0; k < ow; k++)
                        CHECK_MSG(fabsf(out[k] - ref[t * ow + k]) <=
                                      1e-4f * fmaxf(1.0f, fabsf(ref[t * ow + k])),
                                  "%s jit round %d step %d", c->name, round, t);
                }
                for (int t = 0; t < 5 && round == 0; t++)
                    REQUIRE(exec_step(ja, c, xb + t * row, out, BATCH));
            }
            otc_exec_free(jb);
        }
        free(wa);
        free(wb);
        free(xa);
        free(xb);
        free(ref);
        free(out);
    }
    suite_free(&s);
}

/* x [B, in] -> one recurrent layer of `hidden` units -> the output; NULL on failure. */
static otc_graph *layer_graph(otc_cell cell, int in, int hidden, uint64_t seed) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, in));
    otc_id h = otc_recurrent(g, cell, x, hidden, 1, &rng, "rnn");
    if (h < 0 || otc_graph_mark_output(g, h) != OTC_OK) {
        otc_graph_free(g);
        return NULL;
    }
    return g;
}

/* An LSTM's and a GRU's step (20 units) as the inference plan runs them: after the two
 * products the gate slices are read at their offsets by one map kernel over the units (the
 * GRU: one over r and z, one over the units), no slice copied; a training plan keeps slices as
 * copies. The emitted C of both, at batch 1 and 3, follows the interpreter step after step. */
TEST(recurrent_layers_gate_cell_kernel) {
    enum { IN = 3, H = 20, T = 12 };
    const otc_cell cells[2] = {OTC_CELL_LSTM, OTC_CELL_GRU};
    const int map_kernels[2] = {1, 2};
    emitc_case cases[2];
    memset(cases, 0, sizeof cases);
    for (int k = 0; k < 2; k++) {
        otc_graph *g = layer_graph(cells[k], IN, H, 21 + (uint64_t)k);
        REQUIRE(g);
        otc_plan *p = NULL;
        REQUIRE(otc_plan_build(g, NULL, &p) == OTC_OK);
        int maps = 0, slices = 0;
        for (int i = 0; i < p->n_kernels; i++) {
            const otc_plan_kernel *K = &p->kernels[i];
            CHECK(K->kind != OTC_KERNEL_OP);
            maps += K->kind == OTC_KERNEL_MAP;
        }
        CHECK_MSG(p->n_kernels == 2 + map_kernels[k] && maps == map_kernels[k], "%d kernels",
                  p->n_kernels);
        for (otc_id id = 0; id < otc_graph_size(g); id++) {
            const otc_node *nd = otc_graph_node(g, id);
            int64_t from = -1;
            if (nd->op != OTC_OP_SLICE) continue;
            CHECK(otc_plan_slice_member(p, id, &from));
            CHECK(from == (int64_t)nd->start && p->values[id].storage == OTC_STORE_REGISTER);
            slices++;
        }
        CHECK(slices == (k == 0 ? 4 : 6));
        otc_plan_free(p);
        REQUIRE(emitc_case_init(&cases[k], g, k, NULL));
    }
    /* Training: x -> x W -> slice at an offset -> tanh -> MSE; the slice is a copy kernel. */
    otc_graph *tg = otc_graph_new();
    otc_id x = otc_input(tg, "x", otc_shape_2d(OTC_BATCH, 4));
    otc_id w = otc_param(tg, "w", otc_shape_2d(4, 6), NULL);
    otc_id y = otc_activation(tg, OTC_OP_TANH, otc_slice(tg, otc_matmul(tg, x, w), 1, 2, 3), 0.0f);
    otc_id t = otc_input(tg, "t", otc_shape_2d(OTC_BATCH, 3));
    otc_plan_options po = {.train = true, .loss = otc_mse(tg, y, t)};
    po.optim = otc_optim_defaults(OTC_OPTIM_SGD);
    otc_plan *tp = NULL;
    REQUIRE(otc_graph_mark_output(tg, y) == OTC_OK && otc_plan_build(tg, &po, &tp) == OTC_OK);
    otc_id sl = otc_graph_node(tg, y)->inputs[0];
    CHECK(!otc_plan_slice_member(tp, sl, NULL) &&
          tp->kernels[tp->values[sl].kernel].kind == OTC_KERNEL_OP);
    otc_plan_free(tp);
    otc_graph_free(tg);

    emitc_build b;
    REQUIRE(emitc_build_cases(cases, 2, "-std=c99 -O1", &b));
    for (int k = 0; k < 2; k++) {
        const emitc_case *c = &cases[k];
        fwd_fn f = (fwd_fn)emitc_sym(&b, c->name, "forward");
        reset_fn r = (reset_fn)emitc_sym(&b, c->name, "reset");
        REQUIRE(f && r);
        for (int batch = 1; batch <= 3; batch += 2) {
            float *ws = malloc(emitc_workspace_bytes(c, &b, batch));
            float *xs = sequence(c, T, batch, 31 + (uint64_t)batch);
            float want[3 * H], got[3 * H];
            otc_exec_options xo = {.inference = true};
            otc_executor *ip = otc_interpreter_new(c->g, &xo);
            REQUIRE(ws && xs && ip && r(ws, batch) == 0);
            for (int s = 0; s < T; s++) {
                const float *in = xs + (size_t)s * batch * IN;
                REQUIRE(exec_step(ip, c, in, want, batch));
                CHECK(f(in, got, batch, ws) == 0);
                for (int i = 0; i < batch * H; i++)
                    CHECK_MSG(fabsf(got[i] - want[i]) <= 1e-5f * fmaxf(1.0f, fabsf(want[i])),
                              "%s batch %d step %d out[%d]: %.9g, interpreter %.9g", c->name, batch,
                              s, i, (double)got[i], (double)want[i]);
            }
            otc_exec_free(ip);
            free(ws);
            free(xs);
        }
    }
    emitc_unload(&b);
    for (int k = 0; k < 2; k++) emitc_case_free(&cases[k]);
}

#ifdef OTC_TEST_JIT
/* LSTM and GRU layers (70 units: products over 280 and 210 columns; at 16 lanes a block of
 * sixteen vectors, the rest and a partial one, at 8 lanes blocks of eight) through the JIT one
 * sample at a time (column mode: the products' sums kept in registers, the state copied sample by
 * sample), then a batch of 12 (the batched kernels and whole-row state copies, from a zero state),
 * then one sample again: every step's output against the interpreter's. The sums nothing reads are
 * not readable either. */
TEST(recurrent_layers_one_sample_jit) {
    const otc_cell cells[2] = {OTC_CELL_LSTM, OTC_CELL_GRU};
    enum { IN = 8, H = 70, BMAX = 12 };
    static const int batch_of[3] = {1, BMAX, 1}, steps_of[3] = {30, 5, 10};
    for (int k = 0; k < 2; k++) {
        otc_graph *g = layer_graph(cells[k], IN, H, 11 + (uint64_t)k);
        REQUIRE(g);
        otc_rng rng;
        otc_rng_seed(&rng, 11 + (uint64_t)k);
        otc_id x = otc_graph_find(g, "x"), h = otc_graph_output(g, 0);
        otc_exec_options eo = {.inference = true};
        otc_jit_options jo = otc_jit_defaults();
        jo.inference = true;
        otc_executor *ip = otc_interpreter_new(g, &eo), *jit = otc_jit_executor_new(g, &jo);
        REQUIRE(ip && jit);
        float in[BMAX * IN];
        for (int phase = 0; phase < 3; phase++)
            for (int t = 0; t < steps_of[phase]; t++) {
                int n = batch_of[phase];
                for (int i = 0; i < n * IN; i++) in[i] = 2 * otc_rng_uniform(&rng) - 1;
                const float *want, *got;
                REQUIRE(otc_exec_set_input(ip, x, in, n) == OTC_OK &&
                        otc_exec_forward(ip) == OTC_OK);
                REQUIRE(otc_exec_set_input(jit, x, in, n) == OTC_OK &&
                        otc_exec_forward(jit) == OTC_OK);
                REQUIRE(otc_exec_value(ip, h, &want, NULL) == OTC_OK);
                REQUIRE(otc_exec_value(jit, h, &got, NULL) == OTC_OK);
                for (int i = 0; i < n * H; i++) CHECK_NEAR(got[i], want[i], 1e-6);
            }
        for (otc_id id = 0; id < otc_graph_size(g); id++) {
            const float *v;
            if (otc_graph_node(g, id)->op == OTC_OP_MATMUL)
                CHECK(otc_exec_value(jit, id, &v, NULL) != OTC_OK);
        }
        otc_exec_free(jit);
        otc_exec_free(ip);
        otc_graph_free(g);
    }
}
#endif

#ifdef OTC_TEST_JIT
/* got against want, |d| <= tol * max(1, |want|), n values; false after the first mismatch. */
static bool rows_close(const float *got, const float *want, int n, double tol, const char *what,
                       int step) {
    for (int i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= tol * fmax(1.0, fabs((double)want[i])))) {
            CHECK_MSG(false, "%s step %d [%d]: %.9g, interpreter %.9g", what, step, i,
                      (double)got[i], (double)want[i]);
            return false;
        }
    return true;
}

/* One sample through a JIT executor stored contiguously (every kernel in column mode: the
 * elements side by side instead of a vector apart), against the interpreter: an LSTM and a
 * GRU (37 units: blocks of lanes with a partial last one) whose state is set in mid-sequence,
 * whose loss is read (a second plan, its state laid out a vector apart, takes the state over)
 * and which is reset; an LSTM trained through time on a window between single steps (the
 * state handed to the unrolled window and back); random MLPs (a product's input contiguous,
 * its epilogue's stores). */
TEST(recurrent_one_sample_contiguous_jit) {
    enum { IN = 5, H = 37, T = 16 };
    const otc_cell cells[2] = {OTC_CELL_LSTM, OTC_CELL_GRU};
    for (int k = 0; k < 2; k++) {
        otc_graph *g = layer_graph(cells[k], IN, H, 41 + (uint64_t)k);
        REQUIRE(g);
        otc_id x = otc_graph_find(g, "x"), h = otc_graph_output(g, 0);
        otc_id hd = otc_graph_find(g, "rnn.h_l0");
        otc_id t = otc_input(g, "t", otc_shape_2d(OTC_BATCH, H));
        otc_id loss = otc_mse(g, h, t);
        REQUIRE(hd >= 0 && loss >= 0);
        otc_exec_options eo = {.inference = true};
        otc_jit_options jo = otc_jit_defaults();
        jo.inference = true;
        jo.tier = OTC_JIT_TIER_FAST; /* the optimised tier's: recurrent_layers_one_sample_jit */
        otc_executor *ex[2] = {otc_interpreter_new(g, &eo), otc_jit_executor_new(g, &jo)};
        REQUIRE(ex[0] && ex[1]);
        otc_rng rng;
        otc_rng_seed(&rng, 5 + (uint64_t)k);
        float in[IN], tg[H], state[H];
        bool ok = true;
        for (int s = 0; s < T && ok; s++) {
            otc_testgen_fill(&rng, in, IN, -1.0f, 1.0f);
            otc_testgen_fill(&rng, tg, H, -1.0f, 1.0f);
            otc_testgen_fill(&rng, state, H, -1.0f, 1.0f);
            const float *v[2], *l[2];
            for (int e = 0; e < 2; e++) {
                if (s == 5) REQUIRE(otc_exec_set_state(ex[e], hd, state, 1) == OTC_OK);
                if (s == 12) otc_exec_reset_state(ex[e]);
                REQUIRE(otc_exec_set_input(ex[e], x, in, 1) == OTC_OK);
                REQUIRE(otc_exec_set_input(ex[e], t, tg, 1) == OTC_OK);
                otc_status st = otc_exec_forward(ex[e]);
                if (st) fprintf(stderr, "step %d exec %d: %s\n", s, e, otc_last_error());
                REQUIRE(st == OTC_OK);
                REQUIRE(otc_exec_value(ex[e], h, &v[e], NULL) == OTC_OK);
                if (s >= 8) REQUIRE(otc_exec_value(ex[e], loss, &l[e], NULL) == OTC_OK);
            }
            ok = rows_close(v[1], v[0], H, 1e-6, k ? "gru" : "lstm", s);
            if (ok && s >= 8) ok = rows_close(l[1], l[0], 1, 1e-6, "loss", s);
        }
        otc_exec_free(ex[1]);
        otc_exec_free(ex[0]);
        otc_graph_free(g);
    }
    /* A training executor: steps at batch 1 (contiguous), a window recorded and trained
     * through time (its state handed to the unrolled window and back), then steps again. */
    {
        otc_graph *g = layer_graph(OTC_CELL_LSTM, IN, H, 47);
        REQUIRE(g);
        otc_id x = otc_graph_find(g, "x"), h = otc_graph_output(g, 0);
        otc_id t = otc_input(g, "t", otc_shape_2d(OTC_BATCH, H));
        otc_id loss = otc_mse(g, h, t);
        otc_optim_config oc = otc_optim_defaults(OTC_OPTIM_SGD);
        oc.lr = 0.5f;
        otc_jit_options jo = otc_jit_defaults();
        jo.tier = OTC_JIT_TIER_FAST; /* the unrolled window compiles in a fraction of the time */
        otc_executor *ex[2] = {otc_interpreter_new(g, NULL), otc_jit_executor_new(g, &jo)};
        otc_optimizer *opt[2] = {otc_optimizer_new(&oc), otc_optimizer_new(&oc)};
        REQUIRE(ex[0] && ex[1] && opt[0] && opt[1]);
        otc_rng rng;
        otc_rng_seed(&rng, 9);
        float in[IN], tg[H];
        bool ok = true;
        for (int s = 0; s < 14 && ok; s++) {
            otc_testgen_fill(&rng, in, IN, -1.0f, 1.0f);
            otc_testgen_fill(&rng, tg, H, -1.0f, 1.0f);
            const float *v[2];
            for (int e = 0; e < 2; e++) {
                if (s == 4) REQUIRE(otc_exec_seq_begin(ex[e], 5) == OTC_OK);
                REQUIRE(otc_exec_set_input(ex[e], x, in, 1) == OTC_OK &&
                        otc_exec_set_input(ex[e], t, tg, 1) == OTC_OK &&
                        otc_exec_forward(ex[e]) == OTC_OK);
                if (s == 8) {
                    otc_exec_zero_grad(ex[e]);
                    REQUIRE(otc_exec_seq_backward(ex[e], loss, NULL) == OTC_OK &&
                            otc_exec_optimizer_step(ex[e], opt[e]) == OTC_OK);
                }
                REQUIRE(otc_exec_value(ex[e], h, &v[e], NULL) == OTC_OK);
            }
            ok = rows_close(v[1], v[0], H, 1e-5, "lstm training executor", s);
        }
        for (int e = 0; e < 2; e++) {
            otc_optimizer_free(opt[e]);
            otc_exec_free(ex[e]);
        }
        otc_graph_free(g);
    }
    const otc_op acts[3] = {OTC_OP_TANH, OTC_OP_RELU, OTC_OP_SIGMOID};
    for (int m = 0; m < 6; m++) {
        otc_rng rng;
        otc_rng_seed(&rng, 60 + (uint64_t)m);
        int sizes[4] = {1 + (int)otc_rng_below(&rng, 40), 1 + (int)otc_rng_below(&rng, 70),
                        1 + (int)otc_rng_below(&rng, 35), 1 + (int)otc_rng_below(&rng, 20)};
        otc_graph *g = otc_testgen_mlp(60 + (uint64_t)m, 4, sizes, acts[m % 3],
                                       m % 2 ? (int)OTC_OP_SIGMOID : -1);
        REQUIRE(g);
        otc_id x = otc_graph_find(g, "x"), y = otc_graph_output(g, 0);
        otc_exec_options eo = {.inference = true};
        otc_jit_options jo = otc_jit_defaults();
        jo.inference = true;
        jo.tier = OTC_JIT_TIER_FAST;
        otc_executor *ex[2] = {otc_interpreter_new(g, &eo), otc_jit_executor_new(g, &jo)};
        REQUIRE(ex[0] && ex[1]);
        float in[40];
        const float *v[2];
        bool ok = true;
        for (int s = 0; s < 3 && ok; s++) {
            otc_testgen_fill(&rng, in, (size_t)sizes[0], -2.0f, 2.0f);
            for (int e = 0; e < 2; e++)
                REQUIRE(otc_exec_set_input(ex[e], x, in, 1) == OTC_OK &&
                        otc_exec_forward(ex[e]) == OTC_OK &&
                        otc_exec_value(ex[e], y, &v[e], NULL) == OTC_OK);
            ok = rows_close(v[1], v[0], sizes[3], 1e-5, "mlp", s);
        }
        otc_exec_free(ex[1]);
        otc_exec_free(ex[0]);
        otc_graph_free(g);
    }
}
#endif
