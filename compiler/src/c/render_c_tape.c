/* Compiled truncated BPTT over a tape: the one step's code inside loops over a window's time
 * steps, each step's activations in a slot of the workspace, the state's gradient carried
 * backwards from step to step. */
#include <inttypes.h>
#include <stdio.h>

#include "render_c_internal.h"

/* Which Delay's state before the step (u->state_in) node id is, or -1. */
static int state_of(const otc_unrolled *u, otc_id id) {
    for (int k = 0; k < u->n_delays; k++)
        if (u->state_in[k] == id) return k;
    return -1;
}

/* A stream's floats per sample in one step's row: the state's and the step inputs'. The
 * step graph's state Inputs come before its step inputs (otc_unroll makes them first), so
 * in the plan's rows the state is [0, state) and the inputs follow it. */
static void widths(const otc_plan *p, const otc_unrolled *u, otc_io_stream s, int64_t *state,
                   int64_t *step) {
    *state = *step = 0;
    for (int i = 0; i < p->n_io; i++)
        if (p->io[i].stream == s)
            *(state_of(u, p->io[i].node) >= 0 ? state : step) += p->io[i].width;
}

int64_t otc_cr_tape_row(const otc_plan *p, const otc_unrolled *u, int steps, otc_io_stream s) {
    if (s == OTC_IO_OUT) return p->out_width; /* the state after the window */
    int64_t state, step;
    widths(p, u, s, &state, &step);
    return state + (int64_t)steps * step;
}

int64_t otc_cr_tape_stride(const otc_plan *p, const otc_unrolled *u, otc_id input) {
    for (int i = 0; i < p->n_io; i++) {
        if (p->io[i].node != input || p->io[i].stream == OTC_IO_OUT) continue;
        int64_t state, step;
        widths(p, u, p->io[i].stream, &state, &step);
        return state_of(u, input) >= 0 ? 0 : step;
    }
    return 0;
}

/* Floats per sample of every Delay's state. */
static int64_t state_floats(const otc_unrolled *u) {
    int64_t n = 0;
    for (int k = 0; k < u->n_delays; k++)
        n += (int64_t)otc_shape_size(otc_graph_node(u->graph, u->state_in[k])->shape);
    return n;
}

otc_extent otc_cr_tape_grads_at(const otc_plan *t, int steps) {
    return (otc_extent){(int64_t)steps * t->work.base, (int64_t)steps * t->work.per_batch};
}

otc_extent otc_cr_tape_train_work(const otc_plan *t, const otc_unrolled *u, int steps) {
    otc_extent at = otc_cr_tape_grads_at(t, steps);
    return (otc_extent){at.base + t->grads.base,
                        at.per_batch + t->grads.per_batch + state_floats(u)};
}

otc_extent otc_cr_tape_fwd_work(const otc_plan *f) {
    return (otc_extent){2 * f->work.base, 2 * f->work.per_batch};
}

/* The stored value (its owner) a tape copies to or from: in the activation buffer. */
static otc_id stored(otc_cr *c, otc_id id) {
    otc_id o = otc_plan_owner(c->plan, id);
    if (c->plan->values[o].storage != OTC_STORE_WORK && !c->st) {
        char lab[64];
        c->st = otc_fail(OTC_ERR_UNSUPPORTED, "emit-c: the state %s is not stored (tape)",
                         otc_graph_node_label(c->g, id, lab, sizeof lab));
    }
    return o;
}

void otc_cr_tape_io(otc_cr *c, const otc_plan_step *s) {
    const otc_plan *p = c->plan;
    const otc_plan_io *io = &p->io[s->io];
    int K = c->tape_steps;
    char off[96], a[64], b[64];
    snprintf(off, sizeof off, "%" PRId64, io->offset);
    if (s->kind == OTC_STEP_STORE) { /* the state the window leaves */
        otc_cr_line(c, "if (t + 1 == %d) {", K);
        c->indent++;
        otc_cr_io_copy(c, io, false, p->out_width, off);
        c->indent--;
        otc_cr_line(c, "}");
        return;
    }
    int64_t row = otc_cr_tape_row(p, c->tape, K, io->stream);
    int k = state_of(c->tape, io->node);
    if (k < 0) { /* step t's inputs follow step t - 1's */
        snprintf(off, sizeof off, "%" PRId64 " + t * %" PRId64, io->offset,
                 otc_cr_tape_stride(p, c->tape, io->node));
        otc_cr_io_copy(c, io, true, row, off);
        return;
    }
    otc_cr_line(c, "if (t == 0) { /* the state before the window: the caller's */");
    c->indent++;
    otc_cr_io_copy(c, io, true, row, off);
    c->indent--;
    otc_cr_line(c, "} else { /* what step t - 1 left in its slot */");
    c->indent++;
    otc_id to = stored(c, io->node), from = stored(c, c->tape->state_out[k]);
    otc_cr_line(c, "for (size_t i = 0; i < (size_t)%" PRId64 " * S; i++) ws[%s + i] = wp[%s + i];",
                io->width, otc_cr_offset(a, p->values[to].offset),
                otc_cr_offset(b, p->values[from].offset));
    c->indent--;
    otc_cr_line(c, "}");
}

void otc_cr_tape_seed(otc_cr *c) {
    const otc_plan *p = c->plan;
    const otc_unrolled *u = c->tape;
    char off[64], lab[OTC_CR_LABEL_LEN];
    /* The weights' gradients [0, P) sum over the steps; the rest is this step's. */
    otc_cr_line(c, "for (size_t i = %" PRId64 "; i < (size_t)(%s); i++) g[i] = 0.0f;",
                p->param_floats, otc_cr_offset(off, p->grads));
    int64_t at = 0;
    for (int k = 0; k < u->n_delays; k++) {
        otc_id o = otc_plan_owner(p, u->state_out[k]);
        int64_t n = (int64_t)otc_shape_size(otc_graph_node(u->graph, u->state_in[k])->shape);
        /* A state no weight and no earlier state depends on passes no gradient on. */
        if (p->values[o].needs_grad)
            otc_cr_line(c,
                        "for (size_t i = 0; i < (size_t)%" PRId64
                        " * S; i++) g[%s + i] += carry[%" PRId64 " * S + i]; /* %s at t + 1 */",
                        n, otc_cr_offset(off, p->values[o].grad), at,
                        otc_cr_label(u->graph, u->state_in[k], lab, sizeof lab));
        at += n;
    }
}

/* After step t's backward: the gradient of the state it read, for step t - 1. */
static void carry_out(otc_cr *c) {
    const otc_plan *p = c->plan;
    const otc_unrolled *u = c->tape;
    char off[64];
    int64_t at = 0;
    for (int k = 0; k < u->n_delays; k++) {
        otc_id id = u->state_in[k];
        int64_t n = (int64_t)otc_shape_size(otc_graph_node(u->graph, id)->shape);
        if (p->values[id].needs_grad)
            otc_cr_line(c,
                        "for (size_t i = 0; i < (size_t)%" PRId64 " * S; i++) carry[%" PRId64
                        " * S + i] = g[%s + i];",
                        n, at, otc_cr_offset(off, p->values[id].grad));
        else /* the step does not read it, or nothing it reads needs a gradient */
            otc_cr_line(c,
                        "for (size_t i = 0; i < (size_t)%" PRId64 " * S; i++) carry[%" PRId64
                        " * S + i] = 0.0f;",
                        n, at);
        at += n;
    }
}

/* "float *const ws = base + SLOT; const float *const wp = ...;": step t's slot and t - 1's. */
static void slots(otc_cr *c, const char *slot, const char *prev) {
    otc_cr_line(c, "float *const ws = base + %s;", slot);
    otc_cr_line(c, "const float *const wp = base + %s;", prev);
    otc_cr_line(c, "(void)wp;");
}

void otc_cr_tape_forward(otc_cr *c) {
    char w[64], slot[128], prev[128];
    otc_cr_offset(w, c->plan->work);
    snprintf(slot, sizeof slot, "(t & 1) * (%s)", w);
    snprintf(prev, sizeof prev, "((t + 1) & 1) * (%s)", w);
    otc_cr_line(c, "for (size_t t = 0; t < %d; t++) { /* step t in slot t %% 2 */", c->tape_steps);
    c->indent++;
    slots(c, slot, prev);
    unsigned outside = c->locals;
    c->locals |= OTC_CR_WS | OTC_CR_WP | OTC_CR_T;
    otc_cr_forward_steps(c);
    c->locals = outside;
    c->indent--;
    otc_cr_line(c, "}");
}

void otc_cr_tape_train(otc_cr *c) {
    const otc_plan *p = c->plan;
    int K = c->tape_steps;
    char w[64], slot[128], prev[128], off[64];
    otc_cr_offset(w, p->work);
    otc_cr_line(c, "float *const carry = g + %s; /* the state's gradient, step t + 1 to t */",
                otc_cr_offset(off, p->grads));
    otc_cr_line(c, "float sum = 0.0f;");
    otc_cr_line(c, "for (size_t t = 0; t < %d; t++) { /* forward: step t into slot t */", K);
    c->indent++;
    snprintf(slot, sizeof slot, "t * (%s)", w);
    snprintf(prev, sizeof prev, "(t > 0 ? t - 1 : 0) * (%s)", w);
    slots(c, slot, prev);
    unsigned outside = c->locals |= OTC_CR_CARRY;
    c->locals |= OTC_CR_WS | OTC_CR_WP | OTC_CR_T;
    otc_cr_forward_steps(c);
    otc_id lo = otc_plan_owner(p, p->options.loss);
    otc_cr_line(c, "sum += ws[%s];", otc_cr_offset(off, p->values[lo].offset));
    c->indent--;
    otc_cr_line(c, "}");
    otc_cr_line(c,
                "for (size_t i = 0; i < (size_t)(%s) + (size_t)%" PRId64 " * S; i++) g[i] = 0.0f;",
                otc_cr_offset(off, p->grads), state_floats(c->tape));
    otc_cr_line(c, "for (size_t t = %d; t-- > 0;) { /* backward: step t from slot t */", K);
    c->indent++;
    otc_cr_line(c, "float *const ws = base + %s;", slot);
    otc_cr_line(c, "(void)ws;");
    c->locals = outside | OTC_CR_WS | OTC_CR_T;
    otc_cr_backward_steps(c, true, false);
    c->locals = outside;
    carry_out(c);
    c->indent--;
    otc_cr_line(c, "}");
    otc_cr_backward_steps(c, false, true);
    otc_cr_line(c, "if (loss) *loss = sum;");
}
