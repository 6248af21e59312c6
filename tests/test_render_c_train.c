/* Emitted C training (--train): gradients of random graphs against the interpreter's backward
 * pass (within 1e-4 relative: |c - i| <= 1e-4 * max(1, |i|)), 100 training steps tracking the
 * interpreter's, and the generated code cross-compiled for 64-bit Arm (run under qemu-user)
 * and 32-bit Arm hard-float. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emitc_support.h"
#include "harness.h"
#include "random_graph.h"

#define GRAD_TOL 1e-4

static otc_emit_c_options train_options(otc_optim_kind kind) {
    otc_emit_c_options eo = otc_emit_c_defaults();
    eo.train = true;
    eo.optim = otc_optim_defaults(kind);
    return eo;
}

/* A graph of the kind `i` picks, with a loss; classes gets what the targets must be. */
static otc_graph *graph_for(int i, otc_rng *rng, otc_op *loss, int *classes) {
    *loss = OTC_OP_MSE;
    *classes = 0;
    if (i % 4 != 3) {
        otc_testgen_neat_options o = otc_testgen_neat_defaults(1 + (int)otc_rng_below(rng, 80));
        o.n_inputs = 1 + (int)otc_rng_below(rng, 6);
        o.mixed_ops = i % 2 == 0;
        o.two_inputs = i % 5 == 1;
        o.n_outputs = 1 + (int)otc_rng_below(rng, o.n_neurons < 3 ? (uint32_t)o.n_neurons : 3);
        if (i % 8 == 2) {
            /* Sigmoid outputs for BCE: only sigmoid activations. */
            o.act_mask = 1u << OTC_ACT_SIGMOID | 1u << OTC_ACT_STEEP_SIGMOID;
            *loss = OTC_OP_BCE;
            *classes = -1;
        }
        return otc_testgen_neat(1000 + (uint64_t)i, &o);
    }
    static const otc_op acts[] = {OTC_OP_RELU, OTC_OP_TANH, OTC_OP_SIGMOID, OTC_OP_ELU,
                                  OTC_OP_LEAKY_RELU, OTC_OP_SOFTPLUS, OTC_OP_SIN};
    int sizes[4] = {1 + (int)otc_rng_below(rng, 10), 1 + (int)otc_rng_below(rng, 24),
                    2 + (int)otc_rng_below(rng, 12), 2 + (int)otc_rng_below(rng, 4)};
    int n = 2 + (int)otc_rng_below(rng, 3);
    bool ce = i % 8 == 7;
    if (ce) {
        *loss = OTC_OP_SOFTMAX_CE;
        *classes = sizes[n - 1];
    }
    return otc_testgen_mlp((uint64_t)i, n, sizes, acts[i % 7], ce ? -1 : (int)OTC_OP_TANH);
}

static void gradients(int n, uint64_t seed) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    emitc_case *cs = calloc((size_t)n, sizeof *cs);
    int *classes = calloc((size_t)n, sizeof *classes);
    REQUIRE(cs && classes);
    for (int i = 0; i < n; i++) {
        otc_op loss;
        otc_graph *g = graph_for((int)seed * 100 + i, &rng, &loss, &classes[i]);
        REQUIRE(g);
        otc_emit_c_options eo = train_options(OTC_OPTIM_SGD);
        REQUIRE(otc_compile_add_loss(g, loss, &eo.loss, NULL) == OTC_OK);
        REQUIRE(emitc_case_init(&cs[i], g, i, &eo));
    }
    emitc_build b;
    CHECK(emitc_build_cases(cs, n, "-std=c99 -O1", &b));
    int failures = 0;
    for (int i = 0; b.so && i < n; i++) {
        bool ok = emitc_check_gradients(&cs[i], &b, 1, 7 * (uint64_t)i, GRAD_TOL, classes[i]) &&
                  emitc_check_gradients(&cs[i], &b, 11, 7 * (uint64_t)i + 1, GRAD_TOL, classes[i]) &&
                  emitc_check_forward(&cs[i], &b, 4, (uint64_t)i, 1e-5);
        failures += !ok;
    }
    CHECK_MSG(failures == 0, "%d of %d graphs' gradients disagree", failures, n);
    emitc_unload(&b);
    for (int i = 0; i < n; i++) emitc_case_free(&cs[i]);
    free(cs);
    free(classes);
}

/* 100 graphs with MSE, BCE or softmax cross-entropy losses: loss and every weight's gradient
 * at batch 1 and 11, and the training build's forward. */
TEST(emitc_diff_gradients_a) { gradients(50, 1); }
TEST(emitc_diff_gradients_b) { gradients(50, 2); }

/* ---- 100 training steps ---- */

typedef int (*step_fn)(void *, const float *, const float *, int, float, float *, void *);
typedef void (*init_fn)(void *);

static void track(emitc_case *c, const emitc_build *b, int classes, uint64_t seed) {
    enum { ROWS = 64, BATCH = 16, STEPS = 100 };
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    const otc_plan *t = c->train;
    float *in = emitc_rows(t, OTC_IO_IN, ROWS, &rng, 0);
    float *target = emitc_rows(t, OTC_IO_TARGET, ROWS, &rng, classes);
    size_t bytes = emitc_workspace_bytes(c, BATCH);
    float *ws = aligned_alloc(64, (bytes + 63) / 64 * 64);
    void *params = aligned_alloc(64, ((3 * (size_t)c->fwd->param_floats + 16) * 4 + 63) / 64 * 64);
    step_fn step = (step_fn)emitc_sym(b, c->name, "train_step");
    init_fn init = (init_fn)emitc_sym(b, c->name, "params_init");
    otc_executor *ex = otc_interpreter_new(c->g, NULL);
    otc_optimizer *opt = otc_optimizer_new(&c->eo.optim);
    REQUIRE(in && target && ws && params && step && init && ex && opt);
    init(params);
    double worst = 0.0;
    for (int s = 0; s < STEPS; s++) {
        int r0 = (s * BATCH) % ROWS;
        const float *xi = in + r0 * t->in_width, *ti = target + r0 * t->target_width;
        float li = NAN, lc = NAN;
        REQUIRE(emitc_set_inputs(ex, t, xi, ti, BATCH));
        REQUIRE(otc_exec_train_step(ex, c->eo.loss, opt, &li) == OTC_OK);
        REQUIRE(step(params, xi, ti, BATCH, c->eo.optim.lr, &lc, ws) == 0);
        double rel = fabs((double)lc - li) / fmax(1.0, fabs((double)li));
        if (rel > worst) worst = rel;
    }
    CHECK_MSG(worst <= 1e-4, "%s: losses drift apart by %g over %d steps", c->name, worst, STEPS);
    /* The weights after 100 steps: the interpreter trained the graph's tensors in place. */
    const float *w = params; /* params->w is the struct's first member */
    for (int i = 0; i < c->fwd->n_params; i++) {
        otc_id id = c->fwd->params[i];
        const otc_tensor *pt = otc_graph_node(c->g, id)->value;
        int64_t off = c->fwd->values[id].param_offset;
        for (size_t j = 0; j < pt->size; j++)
            CHECK(emitc_close(w[off + (int64_t)j], pt->data[j], 1e-3, "weight", c->name,
                              (int)(off + (int64_t)j)));
    }
    otc_optimizer_free(opt);
    otc_exec_free(ex);
    free(in);
    free(target);
    free(ws);
    free(params);
}

TEST(emitc_train_tracks_interpreter_100_steps) {
    /* SGD with momentum (and Nesterov, weight decay), Adam, AdamW on evolved-style graphs and
     * MLPs with MSE, BCE and softmax cross-entropy: losses within 1e-4 relative at every
     * step, weights within 1e-3 relative after 100 steps. */
    enum { N = 6 };
    emitc_case cs[N];
    int classes[N] = {0, 0, 0, -1, 3, 0};
    for (int i = 0; i < N; i++) {
        otc_graph *g;
        otc_op loss = i == 3 ? OTC_OP_BCE : i == 4 ? OTC_OP_SOFTMAX_CE : OTC_OP_MSE;
        if (i <= 1 || i == 3) {
            otc_testgen_neat_options o = otc_testgen_neat_defaults(24);
            o.mixed_ops = i == 1;
            if (i == 3) o.act_mask = 1u << OTC_ACT_SIGMOID;
            o.n_outputs = 1;
            g = otc_testgen_neat(40 + (uint64_t)i, &o);
        } else {
            int sizes[4] = {4, 16, 8, i == 4 ? 3 : 1};
            g = otc_testgen_mlp(50 + (uint64_t)i, 4, sizes, OTC_OP_TANH, i == 4 ? -1 : (int)OTC_OP_IDENTITY);
        }
        REQUIRE(g);
        otc_optim_kind kind = i == 0 || i == 4 ? OTC_OPTIM_SGD : i == 5 ? OTC_OPTIM_ADAMW : OTC_OPTIM_ADAM;
        otc_emit_c_options eo = train_options(kind);
        if (kind == OTC_OPTIM_SGD) {
            eo.optim.lr = 0.05f;
            eo.optim.momentum = 0.9f;
            eo.optim.nesterov = i == 4;
            eo.optim.weight_decay = i == 0 ? 1e-3f : 0.0f;
        } else {
            eo.optim.lr = 0.01f;
        }
        REQUIRE(otc_compile_add_loss(g, loss, &eo.loss, NULL) == OTC_OK);
        REQUIRE(emitc_case_init(&cs[i], g, i, &eo));
    }
    emitc_build b;
    CHECK(emitc_build_cases(cs, N, "-std=c99 -O2", &b));
    for (int i = 0; b.so && i < N; i++) track(&cs[i], &b, classes[i], 100 + (uint64_t)i);
    emitc_unload(&b);
    for (int i = 0; i < N; i++) emitc_case_free(&cs[i]);
}
