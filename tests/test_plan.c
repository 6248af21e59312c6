/* Tests of the compiler's plan: its invariants on random graphs (every value written before
 * it is read, no two live values overlapping, registers never leaving their kernel), fusion,
 * byte sizes against hand-computed figures, errors, the DOT drawing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emitc_support.h"
#include "harness.h"
#include "otc/loops.h"
#include "otc/random_graph.h"

/* ---- an independent check of the plan's invariants ---- */

typedef struct {
    int64_t lo, hi; /* floats, at one stride */
    int first, last;
    otc_id id;
} span;

/* Where each gradient is live in the backward schedule, by step index: from the first step
 * that zeroes or touches it (a rule touches its node's gradient and its inputs') to the last,
 * a fused run counted whole. Parameters' and unbatched gradients, and any gradient of a plan
 * without share_grads, live throughout; an Input's is read after the step. */
static void grad_lifetimes(const otc_plan *p, int *first, int *last) {
    const otc_graph *g = p->graph;
    for (int i = 0; i < p->n_values; i++) {
        const otc_plan_value *v = &p->values[i];
        bool shared = p->options.share_grads && v->batched && v->storage != OTC_STORE_PARAM;
        first[i] = shared ? INT32_MAX : 0;
        last[i] = shared && otc_graph_node(g, i)->op != OTC_OP_INPUT ? -1 : INT32_MAX;
    }
    for (int i = p->n_forward_steps; i < p->n_steps; i++) {
        const otc_plan_step *s = &p->steps[i];
        if (s->kind != OTC_STEP_BACKWARD && s->kind != OTC_STEP_ZERO_GRAD) continue;
        int lo = i, hi = i;
        while (lo > 0 && p->steps[lo].kind == OTC_STEP_BACKWARD && p->steps[lo].fused < 0) lo--;
        if (p->steps[lo].kind == OTC_STEP_BACKWARD && p->steps[lo].fused > 0)
            hi = lo + p->steps[lo].fused - 1;
        const otc_node *nd = otc_graph_node(g, s->node);
        int touched = s->kind == OTC_STEP_BACKWARD ? nd->n_inputs : 0;
        for (int k = -1; k < touched; k++) {
            otc_id o = otc_plan_owner(p, k < 0 ? s->node : nd->inputs[k]);
            if (first[o] > lo) first[o] = lo;
            if (last[o] < hi) last[o] = hi;
        }
    }
}

/* Reads a plan the way a renderer does and checks, with its own bookkeeping:
 * - every value a step reads was written by an earlier step (or inside the same kernel by an
 *   earlier member), parameters excepted;
 * - a register is read only inside its own kernel;
 * - two stored values whose lifetimes (first write .. last read, or the end of the forward
 *   pass for values the backward pass keeps) overlap never share a float, at several batch
 *   strides, and all lie inside the buffer;
 * - gradient slots live together in the backward (all of them, without share_grads) are
 *   disjoint, and all inside the gradient buffer. */
static bool check_invariants(const otc_plan *p, const char *what) {
    const otc_graph *g = p->graph;
    int n = p->n_values;
    int *written = malloc(sizeof(int) * (size_t)n), *last = malloc(sizeof(int) * (size_t)n);
    bool ok = written && last;
    for (int i = 0; ok && i < n; i++) written[i] = last[i] = -1;
    for (int i = 0; ok && i < n; i++) /* written by the caller before the forward */
        if (p->values[i].direct) written[i] = 0;
    for (int s = 0; ok && s < p->n_forward_steps; s++) {
        const otc_plan_step *st = &p->steps[s];
        if (st->kind == OTC_STEP_LOAD) {
            written[st->node] = s;
            continue;
        }
        if (st->kind == OTC_STEP_STORE) {
            otc_id o = otc_plan_owner(p, st->node);
            if (written[o] < 0 || p->values[o].storage != OTC_STORE_WORK) {
                fprintf(stderr, "%s: output %d stored before it is written\n", what, (int)o);
                ok = false;
            }
            last[o] = s;
            continue;
        }
        const otc_plan_kernel *K = &p->kernels[st->kernel];
        for (int m = 0; m < K->count; m++) {
            otc_id id = p->members[K->first + m];
            const otc_node *nd = otc_graph_node(g, id);
            for (int k = 0; k < nd->n_inputs; k++) {
                if (!otc_plan_reads_input(g, id, k)) continue;
                otc_id o = otc_plan_owner(p, nd->inputs[k]);
                const otc_plan_value *v = &p->values[o];
                if (v->storage == OTC_STORE_PARAM) continue;
                bool same = v->kernel == st->kernel;
                bool earlier_member = false;
                for (int j = 0; j < m; j++) earlier_member |= p->members[K->first + j] == o;
                if (same ? !earlier_member : written[o] < 0) {
                    fprintf(stderr, "%s: kernel %d reads %d before it is written\n", what,
                            st->kernel, (int)o);
                    ok = false;
                }
                if (v->storage == OTC_STORE_REGISTER && !same) {
                    fprintf(stderr, "%s: register %d read outside its kernel\n", what, (int)o);
                    ok = false;
                }
                if (!same && last[o] < s) last[o] = s;
            }
        }
        for (int m = 0; m < K->count; m++) written[p->members[K->first + m]] = s;
    }
    /* Lifetimes and overlap. */
    int end = p->n_forward_steps;
    span *sp = calloc(2 * (size_t)n + 1, sizeof *sp);
    int *gfirst = malloc(sizeof(int) * ((size_t)n + 1)),
        *glast = malloc(sizeof(int) * ((size_t)n + 1));
    ok = ok && gfirst && glast;
    if (ok) grad_lifetimes(p, gfirst, glast);
    int64_t strides[3] = {1, 2, 7};
    for (int si = 0; ok && sp && si < 3; si++) {
        int64_t S = strides[si];
        int ns = 0;
        for (otc_id id = 0; id < n; id++) {
            const otc_plan_value *v = &p->values[id];
            if (v->has_pre) { /* even for a neuron whose output stays in a register */
                int64_t plo = otc_extent_at(v->pre, S);
                sp[ns++] = (span){plo, plo + S, written[id], end, id};
            }
            if (v->storage != OTC_STORE_WORK) continue;
            int64_t size = v->batched ? v->size * S : v->size;
            int64_t lo = otc_extent_at(v->offset, S);
            int lst = last[id] < written[id] ? written[id] : last[id];
            if (v->kept || v->direct ||
                (p->options.train && id == otc_plan_owner(p, p->options.loss)))
                lst = end;
            sp[ns++] = (span){lo, lo + size, written[id], lst, id};
        }
        int64_t total = otc_extent_at(p->work, S);
        for (int i = 0; i < ns; i++) {
            if (sp[i].lo < 0 || sp[i].hi > total) {
                fprintf(stderr, "%s: value %d outside the buffer\n", what, (int)sp[i].id);
                ok = false;
            }
            for (int j = i + 1; j < ns; j++) {
                bool live = sp[i].first <= sp[j].last && sp[j].first <= sp[i].last;
                bool mem = sp[i].lo < sp[j].hi && sp[j].lo < sp[i].hi;
                if (live && mem) {
                    fprintf(stderr, "%s: values %d and %d are live together and overlap\n", what,
                            (int)sp[i].id, (int)sp[j].id);
                    ok = false;
                }
            }
        }
        /* Gradient slots: owners live together disjoint, inside the buffer. */
        if (!p->options.train) continue;
        int ng = 0;
        for (otc_id id = 0; id < n; id++) {
            const otc_plan_value *v = &p->values[id];
            if (!v->needs_grad || v->storage == OTC_STORE_ALIAS) continue;
            int64_t lo = otc_extent_at(v->grad, S);
            sp[ng++] =
                (span){lo, lo + (v->batched ? v->size * S : v->size), gfirst[id], glast[id], id};
        }
        for (int i = 0; i < ng; i++) {
            if (sp[i].hi > otc_extent_at(p->grads, S)) ok = false;
            for (int j = i + 1; j < ng; j++)
                if (sp[i].lo < sp[j].hi && sp[j].lo < sp[i].hi && sp[i].first <= sp[j].last &&
                    sp[j].first <= sp[i].last) {
                    fprintf(stderr, "%s: gradients of %d and %d overlap\n", what, (int)sp[i].id,
                            (int)sp[j].id);
                    ok = false;
                }
        }
    }
    free(sp);
    free(gfirst);
    free(glast);
    free(written);
    free(last);
    return ok;
}

/* A gradient the backward keeps in the batched part of the buffer. */
static bool batched_grad(const otc_plan *p, otc_id o) {
    const otc_plan_value *v = &p->values[o];
    return v->needs_grad && v->batched && v->storage != OTC_STORE_PARAM &&
           v->storage != OTC_STORE_ALIAS;
}

/* options.zero_lazily: each batched gradient zeroed (or, with first_grad_stores, stored by a
 * fused elementwise rule over its whole loop space) exactly once, before any other backward
 * step reads or accumulates into it, never inside a fused run, and all of them before the
 * first update (so every gradient is as one sweep would leave it). */
static bool check_lazy_zeroing(const otc_plan *p, const char *what) {
    const otc_graph *g = p->graph;
    bool *zeroed = calloc((size_t)p->n_values + 1, sizeof *zeroed);
    bool ok = zeroed != NULL, updating = false;
    for (int i = p->n_forward_steps; ok && i < p->n_steps; i++) {
        const otc_plan_step *s = &p->steps[i];
        if (s->kind == OTC_STEP_ZERO_GRAD) {
            bool inside_run = i + 1 < p->n_steps && p->steps[i + 1].kind == OTC_STEP_BACKWARD &&
                              p->steps[i + 1].fused < 0;
            if (!batched_grad(p, s->node) || zeroed[s->node] || updating || inside_run) {
                fprintf(stderr, "%s: step %d zeroes d%d wrongly\n", what, i, (int)s->node);
                ok = false;
            }
            zeroed[s->node] = true;
        } else if (s->kind == OTC_STEP_BACKWARD) {
            const otc_node *nd = otc_graph_node(g, s->node);
            for (int k = -1; k < nd->n_inputs; k++) {
                otc_id o = otc_plan_owner(p, k < 0 ? s->node : nd->inputs[k]);
                if (k >= 0 && k < 32 && (s->stores >> k & 1u)) {
                    /* The first writer stores the whole of an input's gradient, alone. */
                    bool twice = false;
                    for (int j = 0; j < nd->n_inputs; j++)
                        twice |= j != k && otc_plan_owner(p, nd->inputs[j]) == o;
                    if (!batched_grad(p, o) || zeroed[o] || twice || s->fused == 0 ||
                        p->values[o].size != p->kernels[s->kernel].n) {
                        fprintf(stderr, "%s: step %d stores d%d wrongly\n", what, i, (int)o);
                        ok = false;
                    }
                    zeroed[o] = true;
                }
                if (batched_grad(p, o) && !zeroed[o]) {
                    fprintf(stderr, "%s: step %d touches d%d before it is zeroed\n", what, i,
                            (int)o);
                    ok = false;
                }
            }
        } else if (s->kind == OTC_STEP_UPDATE && !updating) {
            updating = true;
            for (otc_id o = 0; o < p->n_values; o++)
                if (batched_grad(p, o) && !zeroed[o]) {
                    fprintf(stderr, "%s: d%d never zeroed\n", what, (int)o);
                    ok = false;
                }
        }
    }
    free(zeroed);
    return ok;
}

static void invariants_on(otc_graph *g, bool train, const char *what) {
    otc_plan_options po = {0};
    po.loss = -1;
    for (int fuse = OTC_FUSE_NONE; fuse <= OTC_FUSE_LOOPS; fuse++) {
        po.fuse = (otc_fuse_level)fuse;
        otc_plan *p = NULL;
        CHECK(otc_plan_build(g, &po, &p) == OTC_OK);
        if (p) CHECK(check_invariants(p, what));
        otc_plan_free(p);
        if (!train) continue;
        otc_plan_options pt = po;
        pt.train = true;
        pt.optim = otc_optim_defaults(OTC_OPTIM_ADAM);
        REQUIRE(otc_compile_add_loss(g, OTC_OP_MSE, &pt.loss, NULL) == OTC_OK);
        CHECK(otc_plan_build(g, &pt, &p) == OTC_OK);
        if (p) CHECK(check_invariants(p, what));
        otc_plan_free(p);
        pt.zero_lazily = true;
        for (int stores = 0; stores < 4; stores++) {
            pt.first_grad_stores = stores & 1;
            pt.share_grads = stores & 2;
            CHECK(otc_plan_build(g, &pt, &p) == OTC_OK);
            if (p) CHECK(check_invariants(p, what) && check_lazy_zeroing(p, what));
            otc_plan_free(p);
        }
        /* The loss nodes stay; later fusion levels reuse the same graph with the same loss. */
        train = false;
    }
}

TEST(plan_invariants_random_graphs) {
    otc_rng rng;
    otc_rng_seed(&rng, 99);
    for (int i = 0; i < 150; i++) {
        otc_testgen_neat_options o = otc_testgen_neat_defaults(1 + (int)otc_rng_below(&rng, 120));
        o.mixed_ops = i % 2 == 0;
        o.two_inputs = i % 5 == 0;
        o.n_outputs = 1 + (int)otc_rng_below(&rng, o.n_neurons < 3 ? (uint32_t)o.n_neurons : 3);
        otc_graph *g = otc_testgen_neat((uint64_t)i, &o);
        REQUIRE(g);
        invariants_on(g, i % 3 == 0, "neat");
        otc_graph_free(g);
    }
    int sizes[5] = {8, 32, 16, 8, 2};
    otc_graph *g = otc_testgen_mlp(1, 5, sizes, OTC_OP_TANH, OTC_OP_SIGMOID);
    invariants_on(g, true, "mlp");
    otc_graph_free(g);
    g = emitc_all_ops_graph(2);
    invariants_on(g, true, "all-ops");
    otc_graph_free(g);
}

/* An LSTM layer 3 -> 16 (weights from seed) with an MSE loss against an Input "target",
 * unrolled over `steps` (*g: the one-step graph, the caller frees both), or NULL. */
static otc_unrolled *unrolled_lstm(uint64_t seed, int steps, otc_graph **g) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    *g = otc_graph_new();
    otc_id x = otc_input(*g, "x", otc_shape_2d(OTC_BATCH, 3));
    otc_id h = otc_lstm(*g, x, 16, 1, &rng, "rnn");
    otc_unrolled *u = NULL;
    if (h < 0 || otc_graph_mark_output(*g, h) != OTC_OK) return NULL;
    otc_id loss = otc_mse(*g, h, otc_input(*g, "target", otc_shape_2d(OTC_BATCH, 16)));
    return otc_unroll(*g, steps, loss, &u) == OTC_OK ? u : NULL;
}

/* share_grads on an LSTM unrolled over 20 steps: the invariants above (gradients live
 * together never share a float), and the gradient buffer under a tenth of the unshared one:
 * each step's loss is computed right after the step, so the backward meets it just before
 * the step, and a step's gradients are dead once the backward has passed that step. */
TEST(plan_share_grads_unrolled_lstm) {
    otc_graph *g = NULL;
    otc_unrolled *u = unrolled_lstm(5, 20, &g);
    REQUIRE(u);
    otc_plan_options po = {0};
    po.train = true;
    po.loss = u->total;
    po.optim = otc_optim_defaults(OTC_OPTIM_ADAM);
    po.zero_lazily = po.first_grad_stores = true;
    int64_t per_batch[2] = {0, 0};
    for (int share = 0; share < 2; share++) {
        po.share_grads = share;
        otc_plan *p = NULL;
        CHECK(otc_plan_build(u->graph, &po, &p) == OTC_OK);
        if (p) {
            CHECK(check_invariants(p, "lstm") && check_lazy_zeroing(p, "lstm"));
            per_batch[share] = p->grads.per_batch;
        }
        otc_plan_free(p);
    }
    CHECK(per_batch[1] > 0 && per_batch[1] * 10 < per_batch[0]);
    otc_unrolled_free(u);
    otc_graph_free(g);
}

/* Direct inputs (a tape's state): no load step and no place in the rows, the rest of the
 * inputs laid out as before; their storage is theirs alone for the whole step (the
 * invariants' overlap check with each live from the first step to the end). */
TEST(plan_direct_inputs) {
    otc_graph *g = NULL;
    otc_unrolled *u = unrolled_lstm(7, 1, &g);
    REQUIRE(u && u->n_delays == 2);
    otc_plan_options po = {0};
    po.train = true;
    po.loss = u->total;
    po.optim = otc_optim_defaults(OTC_OPTIM_ADAM);
    po.zero_lazily = po.first_grad_stores = po.share_grads = true;
    po.grad_inputs = u->state_in;
    po.n_grad_inputs = u->n_delays;
    otc_plan *plain = NULL, *p = NULL;
    REQUIRE(otc_plan_build(u->graph, &po, &plain) == OTC_OK);
    po.direct_inputs = u->state_in;
    po.n_direct_inputs = u->n_delays;
    CHECK(otc_plan_build(u->graph, &po, &p) == OTC_OK);
    if (p) {
        CHECK(check_invariants(p, "direct") && check_lazy_zeroing(p, "direct"));
        /* The rows lose the state's 2 x 16 floats and keep x (3) and the target (16). */
        CHECK(plain->in_width == 3 + 32 && p->in_width == 3 && p->target_width == 16);
        CHECK(p->options.direct_inputs == NULL && p->options.n_direct_inputs == 0);
        int loads = 0;
        for (int i = 0; i < p->n_forward_steps; i++) loads += p->steps[i].kind == OTC_STEP_LOAD;
        CHECK(loads == 2); /* x and the target */
        for (int i = 0; i < p->n_io; i++)
            CHECK(p->io[i].node != u->state_in[0] && p->io[i].node != u->state_in[1]);
        for (int k = 0; k < 2; k++) {
            const otc_plan_value *v = &p->values[u->state_in[k]];
            CHECK(v->direct && v->storage == OTC_STORE_WORK && v->needs_grad);
            CHECK(v->first_step == 0 && v->last_step == p->n_forward_steps);
        }
        CHECK(!p->values[u->inputs[0]].direct);
    }
    otc_plan_free(p);
    otc_plan_free(plain);
    /* Only Inputs can be written directly. */
    otc_id not_input[1] = {u->state_out[0]};
    po.direct_inputs = not_input;
    po.n_direct_inputs = 1;
    p = NULL;
    CHECK(otc_plan_build(u->graph, &po, &p) == OTC_ERR_ARG && p == NULL);
    CHECK(strstr(otc_last_error(), "is not an Input") != NULL);
    otc_unrolled_free(u);
    otc_graph_free(g);
}

/* ---- fusion ---- */

/* A model may chain any number of slices: those a map kernel reads are placed before their
 * reader without recursion (200k deep overflowed the stack when each placed its input). */
TEST(plan_deep_slice_chain_places_without_recursion) {
    otc_graph *g = otc_graph_new();
    otc_id first = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 4)), v = first;
    for (int i = 0; i < 200000; i++) v = otc_slice(g, v, 1, 0, 4);
    otc_id y = otc_neg(g, otc_slice(g, v, 1, 1, 2));
    REQUIRE(y >= 0 && otc_graph_mark_output(g, y) == OTC_OK);
    otc_plan_options po = {0};
    otc_plan *p = NULL;
    CHECK(otc_plan_build(g, &po, &p) == OTC_OK);
    if (p) {
        CHECK(check_invariants(p, "slice chain"));
        int64_t from = -1;
        CHECK(otc_plan_slice_member(p, first + 1, &from) && from == 0);
        CHECK(otc_plan_slice_member(p, y - 1, &from) && from == 1);
    }
    otc_plan_free(p);
    otc_graph_free(g);
}

TEST(plan_fuses_matmul_bias_relu) {
    /* x [B,2] -> matmul -> + row_broadcast(b) -> relu: one MATMUL kernel whose bias and sum
     * never touch memory. */
    int sizes[2] = {2, 3};
    otc_graph *g = otc_testgen_mlp(1, 2, sizes, OTC_OP_RELU, OTC_OP_RELU);
    otc_plan *p = NULL;
    REQUIRE(otc_plan_build(g, NULL, &p) == OTC_OK);
    CHECK(p->n_kernels == 1);
    CHECK(p->kernels[0].kind == OTC_KERNEL_MATMUL && p->kernels[0].count == 4);
    CHECK(p->kernels[0].n == 3 && p->kernels[0].batched);
    CHECK(p->n_registers == 2); /* the broadcast bias and the sum */
    otc_id relu = otc_graph_output(g, 0);
    CHECK(p->values[relu].storage == OTC_STORE_WORK);
    otc_plan_free(p);
    /* The same with chain fusion alone. */
    otc_plan_options po = {.loss = -1, .fuse = OTC_FUSE_CHAINS};
    REQUIRE(otc_plan_build(g, &po, &p) == OTC_OK);
    CHECK(p->n_kernels == 1 && p->kernels[0].count == 4 && p->n_registers == 2);
    otc_plan_free(p);
    otc_graph_free(g);
}

TEST(plan_fuses_single_consumer_chains) {
    /* x -> n1 -> n2 -> n3, n3 read by n4 and n5: with chain fusion n1..n3 are one kernel and
     * n3, having two readers, ends it; n1 and n2 stay in registers. */
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    int c0 = 0, c1 = 1;
    float w = 0.5f;
    otc_id n1 = otc_neuron(g, "n1", OTC_ACT_TANH, 0.1f, 1.0f, 1, &x, &c0, &w);
    otc_id n2 = otc_neuron(g, "n2", OTC_ACT_TANH, 0.1f, 1.0f, 1, &n1, &c0, &w);
    otc_id n3 = otc_neuron(g, "n3", OTC_ACT_TANH, 0.1f, 1.0f, 1, &n2, &c0, &w);
    otc_id s4[2] = {n3, x}, s5[2] = {n3, x};
    int cols[2] = {0, 1};
    float w2[2] = {1.0f, -1.0f};
    otc_id n4 = otc_neuron(g, "n4", OTC_ACT_SIGMOID, 0.0f, 1.0f, 2, s4, cols, w2);
    otc_id n5 = otc_neuron(g, "n5", OTC_ACT_RELU, 0.0f, 1.0f, 2, s5, (int[]){0, c1}, w2);
    otc_graph_mark_output(g, n4);
    otc_graph_mark_output(g, n5);
    otc_plan_options po = {0};
    po.loss = -1;
    po.fuse = OTC_FUSE_CHAINS;
    otc_plan *p = NULL;
    REQUIRE(otc_plan_build(g, &po, &p) == OTC_OK);
    CHECK(p->n_kernels == 3);
    CHECK(p->values[n1].kernel == p->values[n3].kernel);
    CHECK(p->values[n4].kernel != p->values[n3].kernel);
    CHECK(p->values[n1].storage == OTC_STORE_REGISTER);
    CHECK(p->values[n2].storage == OTC_STORE_REGISTER);
    CHECK(p->values[n3].storage == OTC_STORE_WORK);
    otc_plan_free(p);
    /* Loop fusion: the whole graph is one loop over the batch; n3 still has no reader
     * outside it, so it is a register too. */
    po.fuse = OTC_FUSE_LOOPS;
    REQUIRE(otc_plan_build(g, &po, &p) == OTC_OK);
    CHECK(p->n_kernels == 1);
    CHECK(p->values[n3].storage == OTC_STORE_REGISTER);
    otc_plan_free(p);
    /* No fusion: a kernel per node. */
    po.fuse = OTC_FUSE_NONE;
    REQUIRE(otc_plan_build(g, &po, &p) == OTC_OK);
    CHECK(p->n_kernels == 5 && p->n_registers == 0);
    otc_plan_free(p);
    otc_graph_free(g);
}

/* ---- sizes, against figures worked out by hand ---- */

TEST(plan_sizes_by_hand) {
    /* x [B,2] -> W1 [2,3] + b1 -> relu -> W2 [3,1] + b2. Stored per sample: x 2, the first
     * sum 3 (the matmul's accumulator), relu 3, the second sum 1, the output 1: 10 floats
     * without sharing. x, the first sum and relu are live together in the first kernel (8);
     * the second kernel reuses x's and the sum's space: 8 floats per sample. Weights
     * 6 + 3 + 3 + 1 = 13 floats. */
    int sizes[3] = {2, 3, 1};
    otc_graph *g = otc_testgen_mlp(1, 3, sizes, OTC_OP_RELU, -1);
    otc_plan *p = NULL;
    REQUIRE(otc_plan_build(g, NULL, &p) == OTC_OK);
    otc_plan_bytes b = otc_plan_sizes(p, 4);
    CHECK(b.weights == 13 * 4);
    CHECK(b.activations_unshared == 10 * 4 * 4);
    CHECK(b.activations == 8 * 4 * 4);
    CHECK(p->work.base == 0 && p->work.per_batch == 8);
    otc_plan_free(p);

    /* Training with MSE: gradients for the 13 weights and the scalar loss (fixed), and per
     * sample for sum 1, bias 1, add 1, relu (3 each) and sum 2, bias 2, add 2 (1 each):
     * 12 + 3 = 15, from float 16 (a multiple of 16). Adam keeps 2 floats per weight. */
    otc_plan_options po = {0};
    po.train = true;
    po.optim = otc_optim_defaults(OTC_OPTIM_ADAM);
    REQUIRE(otc_compile_add_loss(g, OTC_OP_MSE, &po.loss, NULL) == OTC_OK);
    REQUIRE(otc_plan_build(g, &po, &p) == OTC_OK);
    CHECK(p->grads.base == 16 && p->grads.per_batch == 15); /* 14 to a multiple of 16 */
    b = otc_plan_sizes(p, 4);
    CHECK(b.optimizer_state == 2 * 13 * 4);
    CHECK(b.gradients == (16 + 15 * 4) * 4);
    CHECK(b.workspace == b.activations + b.gradients);
    otc_plan_free(p);
    otc_graph_free(g);
}

TEST(plan_keeps_what_backward_reads) {
    /* tanh's derivative reads only its output, relu's only its input: a tanh neuron keeps no
     * pre-activation, a relu neuron does. */
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    int c0 = 0;
    float w = 0.5f;
    otc_id a = otc_neuron(g, "a", OTC_ACT_TANH, 0.1f, 1.0f, 1, &x, &c0, &w);
    otc_id r = otc_neuron(g, "r", OTC_ACT_RELU, 0.1f, 1.0f, 1, &a, &c0, &w);
    otc_graph_mark_output(g, r);
    otc_plan_options po = {0};
    po.train = true;
    po.optim = otc_optim_defaults(OTC_OPTIM_SGD);
    REQUIRE(otc_compile_add_loss(g, OTC_OP_MSE, &po.loss, NULL) == OTC_OK);
    otc_plan *p = NULL;
    REQUIRE(otc_plan_build(g, &po, &p) == OTC_OK);
    CHECK(!p->values[a].has_pre && p->values[a].kept);
    CHECK(p->values[r].has_pre && p->values[r].kept);
    CHECK(p->values[x].kept); /* a's weight gradient reads x */
    CHECK(check_invariants(p, "keeps"));
    /* Backward visits r before a, then one update over all weights. */
    int ir = -1, ia = -1, updates = 0;
    for (int i = p->n_forward_steps; i < p->n_steps; i++) {
        if (p->steps[i].kind == OTC_STEP_BACKWARD && p->steps[i].node == r) ir = i;
        if (p->steps[i].kind == OTC_STEP_BACKWARD && p->steps[i].node == a) ia = i;
        if (p->steps[i].kind == OTC_STEP_UPDATE) {
            updates++;
            CHECK(p->steps[i].offset == 0 && p->steps[i].count == 4);
        }
    }
    CHECK(ir >= 0 && ia > ir && updates == 1);
    otc_plan_free(p);
    otc_graph_free(g);
}

static bool has_buf(const otc_loop_program *p, otc_id node, bool grad) {
    for (int i = 0; i < p->n_bufs; i++)
        if (p->buf[i].node == node && p->buf[i].grad == grad) return true;
    return false;
}

TEST(plan_lowers_loop_programs) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    otc_id t = otc_input(g, "t", otc_shape_2d(OTC_BATCH, 3));
    otc_id s = otc_sum(g, x);
    otc_id sm = otc_softmax(g, x);
    otc_id l = otc_mse(g, x, t);
    otc_id a = otc_param(g, "a", otc_shape_2d(2, 3), NULL);
    otc_id w = otc_param(g, "w", otc_shape_2d(3, 4), NULL);
    otc_id m = otc_matmul(g, a, w);
    REQUIRE(x >= 0 && t >= 0 && s >= 0 && sm >= 0 && l >= 0 && m >= 0);

    /* The sum, by hand: every element of a sample into one batch sum, stored after the batch. */
    otc_loop_program *p = NULL;
    REQUIRE(otc_loop_lower(g, s, false, NULL, &p) == OTC_OK);
    char *text = otc_loop_program_text(p);
    char want[256];
    snprintf(want, sizeof want,
             "forward #%d (per sample)\n"
             "body   for i0 < 3\n"
             "body     sumup sum0 (v%d[0 + 1*i0])\n"
             "body   end\n"
             "after  store v%d[0] (sum0)\n",
             (int)s, (int)x, (int)s);
    CHECK_MSG(text && strcmp(text, want) == 0, "got:\n%s", text ? text : "(null)");
    free(text);
    otc_loop_program_free(p);

    /* softmax's gradient reads its own value and nothing of its input's. */
    REQUIRE(otc_loop_lower(g, sm, true, NULL, &p) == OTC_OK);
    CHECK(has_buf(p, sm, false) && has_buf(p, sm, true) && has_buf(p, x, true));
    CHECK(!has_buf(p, x, false));
    otc_loop_program_free(p);

    /* mse with a target that needs no gradient: reads both values, writes x's gradient only. */
    bool needs[2] = {true, false};
    REQUIRE(otc_loop_lower(g, l, true, needs, &p) == OTC_OK);
    CHECK(has_buf(p, x, false) && has_buf(p, t, false) && has_buf(p, x, true));
    CHECK(!has_buf(p, t, true) && p->n_bufs == 4);
    otc_loop_program_free(p);

    /* A product of unbatched values where only a trains: dA = dM W^T reads W, never A. */
    REQUIRE(otc_loop_lower(g, m, true, needs, &p) == OTC_OK);
    CHECK(has_buf(p, w, false) && has_buf(p, a, true) && has_buf(p, m, true));
    CHECK(!has_buf(p, a, false) && !has_buf(p, w, true) && !p->batched);
    otc_loop_program_free(p);

    /* An op without a loop structure of its own has no program: a clear error. */
    otc_id r = otc_add(g, x, t);
    CHECK(!otc_loop_lowers(OTC_OP_ADD));
    CHECK(otc_loop_lower(g, r, false, NULL, &p) == OTC_ERR_UNSUPPORTED && p == NULL);
    CHECK(strstr(otc_last_error(), "add") != NULL);
    otc_graph_free(g);
}

TEST(plan_schedules_tiling_and_backward_fusion) {
    /* x [B,2] -> 5 relu -> 1, MSE: two MATMUL kernels (matmul, bias, add[, relu]). Tiling:
     * min(4, N) columns x 2 vectors; weight gradient min(4, K) x min(16, N). Backward: each
     * kernel's epilogue rules are one fused run in reverse member order; the products and the
     * loss have loops of their own. */
    int sizes[3] = {2, 5, 1};
    otc_graph *g = otc_testgen_mlp(3, 3, sizes, OTC_OP_RELU, -1);
    REQUIRE(g);
    otc_plan_options po = {0};
    po.train = true;
    po.optim = otc_optim_defaults(OTC_OPTIM_SGD);
    REQUIRE(otc_compile_add_loss(g, OTC_OP_MSE, &po.loss, NULL) == OTC_OK);
    otc_plan *p = NULL;
    REQUIRE(otc_plan_build(g, &po, &p) == OTC_OK);
    REQUIRE(p->n_kernels == 3);
    const otc_plan_kernel *k0 = &p->kernels[0], *k1 = &p->kernels[1];
    CHECK(k0->kind == OTC_KERNEL_MATMUL && k0->count == 4);
    CHECK(k0->tiling.cols == 4 && k0->tiling.vectors == 2);
    CHECK(k0->tiling.grad_rows == 2 && k0->tiling.grad_cols == 5);
    CHECK(k1->kind == OTC_KERNEL_MATMUL && k1->count == 3);
    CHECK(k1->tiling.cols == 1 && k1->tiling.grad_rows == 4 && k1->tiling.grad_cols == 1);
    CHECK(p->kernels[2].tiling.cols == 0); /* not a product */
    int seen = 0;
    for (int i = p->n_forward_steps; i < p->n_steps; i++) {
        const otc_plan_step *s = &p->steps[i];
        if (s->kind != OTC_STEP_BACKWARD) {
            CHECK(s->fused == 0);
            continue;
        }
        const otc_plan_kernel *K = &p->kernels[s->kernel];
        bool product_or_op = K->kind == OTC_KERNEL_OP || p->members[K->first] == s->node;
        if (product_or_op) {
            CHECK(s->fused == 0);
        } else if (s->node == p->members[k0->first + 3]) { /* relu, add, bias */
            CHECK(s->fused == 3);
            CHECK(p->steps[i + 1].fused == -1 && p->steps[i + 2].fused == -1);
            CHECK(p->steps[i + 2].node == p->members[k0->first + 1]);
            seen++;
        } else if (s->node == p->members[k1->first + 2]) { /* add, bias */
            CHECK(s->fused == 2 && p->steps[i + 1].fused == -1);
            seen++;
        } else {
            CHECK(s->fused == -1);
        }
    }
    CHECK(seen == 2);
    char *text = otc_plan_describe(p);
    CHECK(text && strstr(text, "(one loop with the next 2)"));
    free(text);
    otc_plan_free(p);
    otc_graph_free(g);
}

TEST(plan_io_layout) {
    /* Two inputs: in rows hold x then x2 (input order); an input no output reads is left out. */
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_input(g, "unused", otc_shape_2d(OTC_BATCH, 4));
    otc_id x2 = otc_input(g, "x2", otc_shape_2d(OTC_BATCH, 3));
    otc_id srcs[2] = {x2, x};
    int cols[2] = {2, 1};
    float w[2] = {1.0f, 2.0f};
    otc_id n = otc_neuron(g, "n", OTC_ACT_IDENTITY, 0.0f, 1.0f, 2, srcs, cols, w);
    otc_graph_mark_output(g, n);
    otc_graph_mark_output(g, x2);
    otc_plan *p = NULL;
    REQUIRE(otc_plan_build(g, NULL, &p) == OTC_OK);
    CHECK(p->in_width == 5 && p->out_width == 4);
    int seen = 0;
    for (int i = 0; i < p->n_io; i++) {
        const otc_plan_io *io = &p->io[i];
        if (io->node == x) CHECK(io->stream == OTC_IO_IN && io->offset == 0 && io->width == 2);
        if (io->node == x2 && io->stream == OTC_IO_IN) CHECK(io->offset == 2 && io->width == 3);
        if (io->node == n) CHECK(io->stream == OTC_IO_OUT && io->offset == 0 && io->width == 1);
        if (io->node == x2 && io->stream == OTC_IO_OUT) CHECK(io->offset == 1 && io->width == 3);
        seen++;
    }
    CHECK(seen == 4);
    otc_plan_free(p);
    otc_graph_free(g);
}

/* ---- errors ---- */

TEST(plan_errors) {
    otc_plan *p = NULL;
    otc_graph *g = otc_graph_new();
    CHECK(otc_plan_build(g, NULL, &p) == OTC_ERR_ARG && p == NULL);
    CHECK(strstr(otc_last_error(), "empty") != NULL);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    CHECK(otc_plan_build(g, NULL, &p) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "no outputs") != NULL);

    /* A cycle n1 -> n2 -> n1 (built, then rewired) is named. */
    int c0 = 0;
    float w = 1.0f;
    otc_id n1 = otc_neuron(g, "n1", OTC_ACT_TANH, 0.0f, 1.0f, 1, &x, &c0, &w);
    otc_id n2 = otc_neuron(g, "n2", OTC_ACT_TANH, 0.0f, 1.0f, 1, &n1, &c0, &w);
    otc_graph_mark_output(g, n2);
    REQUIRE(otc_plan_build(g, NULL, &p) == OTC_OK);
    otc_plan_free(p);
    REQUIRE(otc_graph_set_input(g, n1, 2, n2) == OTC_OK);
    CHECK(otc_plan_build(g, NULL, &p) == OTC_ERR_CYCLE);
    CHECK(strstr(otc_last_error(), "'n1' -> 'n2' -> 'n1'") != NULL ||
          strstr(otc_last_error(), "'n2' -> 'n1' -> 'n2'") != NULL);
    otc_graph_free(g);

    /* A non-scalar loss; an unbatched output. */
    g = otc_graph_new();
    x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_graph_mark_output(g, x);
    otc_plan_options po = {0};
    po.train = true;
    po.loss = x;
    CHECK(otc_plan_build(g, &po, &p) == OTC_ERR_SHAPE);
    otc_id param = otc_param(g, "k", otc_shape_1d(3), NULL);
    otc_graph_mark_output(g, param);
    CHECK(otc_plan_build(g, NULL, &p) == OTC_ERR_UNSUPPORTED);
    CHECK(strstr(otc_last_error(), "'k'") != NULL);
    otc_graph_free(g);
}

/* ---- drawing ---- */

TEST(plan_dot_draws_kernels_and_offsets) {
    int sizes[3] = {2, 3, 1};
    otc_graph *g = otc_testgen_mlp(1, 3, sizes, OTC_OP_RELU, -1);
    otc_plan *p = NULL;
    REQUIRE(otc_plan_build(g, NULL, &p) == OTC_OK);
    char *dot = otc_plan_to_dot(p);
    REQUIRE(dot);
    CHECK(strstr(dot, "subgraph cluster_k0") && strstr(dot, "subgraph cluster_k1"));
    CHECK(strstr(dot, "work @") && strstr(dot, "register") && strstr(dot, "weights @0"));
    /* Graphviz accepts it. */
    FILE *f = popen("dot -Tsvg -o /dev/null 2>&1", "w");
    if (f) {
        fputs(dot, f);
        CHECK(pclose(f) == 0);
    }
    char *text = otc_plan_describe(p);
    CHECK(text && strstr(text, "kernel 0 (matmul"));
    free(text);
    free(dot);
    otc_plan_free(p);
    otc_graph_free(g);
}
