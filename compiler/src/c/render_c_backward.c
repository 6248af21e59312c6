/* The C renderer's training half: gradient rules in reverse order (accumulating into the
 * flat gradient buffer) and the optimiser update (SGD with momentum, Adam, AdamW) over the
 * weights in place. The rules mirror the interpreter's backward kernels. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/loops.h"
#include "render_c_internal.h"

#define V(id)     (otc_plan_owner(c->plan, (id)))
#define NEEDS(id) (c->plan->values[V(id)].needs_grad)

/* A value a gradient rule reads: it must have been kept in memory by the plan. */
static void need_value(otc_cr *c, otc_id id) {
    const otc_plan_value *v = &c->plan->values[V(id)];
    if (v->storage == OTC_STORE_REGISTER && !c->st) {
        char lab[64];
        c->st = otc_fail(OTC_ERR_STATE,
                         "emit-c: internal: value %s is read by backward but "
                         "was not kept",
                         otc_graph_node_label(c->g, id, lab, 64));
    }
    otc_cr_pointer(c, id, false);
}

/* "vN" or "vN + col * S" (plane 'v': values, 'g': gradients): a pointer to column col of
 * value N's batch row, as the out-of-line batch loops take it. */
static const char *column(char *buf, size_t len, char plane, otc_id n, int col) {
    if (col == 0)
        snprintf(buf, len, "%c%d", plane, (int)n);
    else
        snprintf(buf, len, "%c%d + %d * S", plane, (int)n, col);
    return buf;
}

static void ga(otc_cr *c, char *buf, otc_id id, const char *elem) {
    otc_cr_grad_at(c, buf, 96, V(id), elem);
}
static void va(otc_cr *c, char *buf, otc_id id, const char *elem) {
    otc_cr_at(c, buf, 96, V(id), elem);
}

/* A block leaving `float acc` = the sum over the batch of x[b] (y NULL) or x[b] * y[b]: a
 * call to the file's one out-of-line copy (otc_cr_backward_helpers), not a loop per weight. A
 * 100-neuron genome's training step has some 300 such sums; spelled inline, each a loop gcc
 * vectorises with its prologue and epilogues, they took gcc -O3 most of a minute. */
static void batch_sum(otc_cr *c, const char *x, const char *y) {
    if (y) {
        c->batch_dot_used = true;
        otc_cr_line(c, "const float acc = %s_batch_dot(%s, %s, B);", c->name, x, y);
    } else {
        c->batch_sum_used = true;
        otc_cr_line(c, "const float acc = %s_batch_sum(%s, B);", c->name, x);
    }
}

/* The loops the backward calls instead of spelling them once per weight: y[b] += x[b] * f
 * (a source's gradient from a Neuron's), and the sums over the batch in eight interleaved
 * partial sums: an exact left-to-right sum cannot be vectorised, this one can (the compiler
 * packs the eight into one vector). The interpreter and the JIT sum in the same order. */
void otc_cr_backward_helpers(otc_cr *c, otc_text *out) {
    if (c->batch_axpy_used)
        otc_text_printf(out,
                        "%s void %s_batch_axpy(float *restrict y, const float *restrict x, "
                        "float f, size_t B) {\n"
                        "    for (size_t b = 0; b < B; b++) y[b] += x[b] * f;\n}\n\n",
                        otc_cr_outline(c), c->name);
    for (int dot = 0; dot < 2; dot++) {
        if (!(dot ? c->batch_dot_used : c->batch_sum_used)) continue;
        otc_text_printf(out, "%s float %s_batch_%s(const float *restrict x, %ssize_t B) {\n",
                        otc_cr_outline(c), c->name, dot ? "dot" : "sum",
                        dot ? "const float *restrict y, " : "");
        otc_text_puts(out, "    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f, s4 = 0.0f, "
                           "s5 = 0.0f, s6 = 0.0f, s7 = 0.0f;\n"
                           "    size_t b = 0;\n    for (; b + 8 <= B; b += 8) {\n");
        for (int j = 0; j < 8; j++) {
            char i[16];
            snprintf(i, sizeof i, j ? "b + %d" : "b", j);
            if (dot)
                otc_text_printf(out, "        s%d += x[%s] * y[%s];\n", j, i, i);
            else
                otc_text_printf(out, "        s%d += x[%s];\n", j, i);
        }
        otc_text_printf(out, "    }\n    for (; b < B; b++) s0 += %s;\n",
                        dot ? "x[b] * y[b]" : "x[b]");
        otc_text_puts(out, "    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));\n}\n\n");
    }
}

/* The derivatives of elementwise node nd by the inputs that need them (need[i]), each
 * times the gradient gN, into g[i]: activations through the file's derivative helper, other
 * ops spelled from the op's trees. v0, v1, vN spell the inputs' and the node's values. */
static void elementwise_rule(otc_cr *c, const otc_node *nd, const char *gN, const char *g[2],
                             const char *v0, const char *v1, const char *vN, const bool need[2]) {
    char lit[48];
    if (otc_cr_act(nd)) {
        const otc_expr *df = otc_cr_act(nd)->df;
        char call[512];
        otc_cr_dact_call(c, call, sizeof call, nd, otc_expr_reads(df, OTC_EX_X) ? v0 : "0.0f",
                         otc_expr_reads(df, OTC_EX_Y) ? vN : "0.0f");
        if (need[0]) otc_cr_line(c, "%s += %s * %s;", g[0], gN, call);
        return;
    }
    const otc_cr_leaves leaves = {.x = v0,
                                  .x1 = nd->n_inputs > 1 ? v1 : NULL,
                                  .y = vN,
                                  .a = otc_cr_float(c, lit, otc_node_param(nd))};
    for (int i = 0; i < 2; i++) {
        const otc_expr *d = need[i] ? otc_op_grad_expr(nd->op, i) : NULL;
        if (!d) continue;
        if (otc_expr_is_const(d, 1.0) || otc_expr_is_const(d, -1.0)) {
            otc_cr_line(c, "%s %s= %s;", g[i], d->k > 0 ? "+" : "-", gN);
            continue;
        }
        otc_text t;
        otc_text_init(&t);
        otc_cr_expr(c, &t, d, &leaves);
        char *text = otc_text_take(&t);
        if (!text) {
            c->sb->failed = true;
            return;
        }
        otc_cr_line(c, "%s += %s * %s;", g[i], gN, text);
        free(text);
    }
}

/* What the derivatives of elementwise node nd by the inputs needing a gradient read: its
 * inputs' values and its own, kept and declared. */
static void elementwise_reads(otc_cr *c, otc_id id, const bool need[2]) {
    const otc_node *nd = otc_graph_node(c->g, id);
    for (int i = 0; i < 2 && i < nd->n_inputs; i++) {
        const otc_expr *d = need[i] ? otc_op_grad_expr(nd->op, i) : NULL;
        if (otc_expr_reads(d, OTC_EX_X)) need_value(c, nd->inputs[0]);
        if (otc_expr_reads(d, OTC_EX_X1)) need_value(c, nd->inputs[1]);
        if (otc_expr_reads(d, OTC_EX_Y)) need_value(c, id);
    }
}

/* Elementwise rules: a loop over the node's value with dN = its gradient. */
static void bw_elementwise(otc_cr *c, otc_id id) {
    const otc_plan *p = c->plan;
    const otc_node *nd = otc_graph_node(c->g, id);
    const otc_plan_value *v = &p->values[id];
    const char *elem = v->size > 1 ? "e" : "0";
    char gN[96], g0[96] = "", g1[96] = "", v0[96] = "", v1[96] = "", vN[96];
    bool n0 = nd->n_inputs > 0 && NEEDS(nd->inputs[0]);
    bool n1 = nd->n_inputs > 1 && nd->op != OTC_OP_ROW_BROADCAST && NEEDS(nd->inputs[1]);
    otc_cr_grad_pointer(c, id);
    if (n0) otc_cr_grad_pointer(c, nd->inputs[0]);
    if (n1) otc_cr_grad_pointer(c, nd->inputs[1]);
    ga(c, gN, id, elem);
    if (n0) ga(c, g0, nd->inputs[0], elem);
    if (n1) ga(c, g1, nd->inputs[1], elem);
    va(c, vN, id, elem);

    if (nd->op == OTC_OP_ROW_BROADCAST) {
        /* Sum over the rows, sample by sample as the interpreter adds them. */
        int64_t vn = p->values[V(nd->inputs[0])].size;
        char e2[48];
        if (v->size > vn)
            snprintf(e2, sizeof e2, "e %% %" PRId64, vn);
        else
            snprintf(e2, sizeof e2, "%s", elem);
        char gv[96];
        otc_cr_grad_at(c, gv, sizeof gv, V(nd->inputs[0]), e2);
        if (!v->batched) {
            int open = otc_cr_loops(c, v->size, false, false);
            otc_cr_line(c, "%s += %s;", gv, gN);
            otc_cr_close(c, open);
            return;
        }
        /* Batched: each element's sum over the batch, then one add. */
        char gvs[96], x[96];
        snprintf(gvs, sizeof gvs, "g%d[%s]", (int)V(nd->inputs[0]), e2);
        snprintf(x, sizeof x, v->size > 1 ? "g%d + e * S" : "g%d", (int)id);
        int open = otc_cr_loops(c, v->size, false, false);
        otc_cr_line(c, "{");
        c->indent++;
        batch_sum(c, x, NULL);
        otc_cr_line(c, "%s += acc;", gvs);
        c->indent--;
        otc_cr_line(c, "}");
        otc_cr_close(c, open);
        return;
    }
    elementwise_reads(c, id, (bool[2]){n0, n1});
    if (nd->n_inputs > 0) va(c, v0, nd->inputs[0], elem);
    if (nd->n_inputs > 1) va(c, v1, nd->inputs[1], elem);
    int open = otc_cr_loops(c, v->size, v->batched, false);
    const char *g[2] = {g0, g1};
    elementwise_rule(c, nd, gN, g, v0, v1, vN, (bool[2]){n0, n1});
    otc_cr_close(c, open);
}

/* A Neuron's weights and sources when it aggregates otherwise than by the sum, row by row as
 * the interpreter: t_i = w_i src_i, dL/dt_i = scale dz agg'(t)_i (the file's helper), then
 * dL/dw_i += dL/dt_i src_i and dL/dsrc_i += dL/dt_i w_i. */
static void bw_neuron_agg(otc_cr *c, otc_id id, const char *sc) {
    const otc_node *nd = otc_graph_node(c->g, id);
    otc_id W = nd->inputs[0];
    int k = nd->n_inputs - 2;
    c->agg_grad_used[nd->agg] = true;
    otc_cr_pointer(c, W, false);
    for (int i = 2; i < nd->n_inputs; i++) {
        need_value(c, nd->inputs[i]);
        if (NEEDS(nd->inputs[i])) otc_cr_grad_pointer(c, nd->inputs[i]);
    }
    otc_cr_line(c, "for (size_t b = 0; b < B; b++) {");
    c->indent++;
    otc_cr_line(c, "float t[%d], d[%d];", k, k);
    for (int i = 0; i < k; i++) {
        otc_id s = nd->inputs[i + 2];
        int col = nd->cols[i];
        char at[96];
        if (col == 0)
            snprintf(at, sizeof at, "v%d[b]", (int)V(s));
        else
            snprintf(at, sizeof at, "v%d[%d * S + b]", (int)V(s), col);
        otc_cr_line(c, "t[%d] = v%d[%d] * %s;", i, (int)V(W), i, at);
    }
    otc_cr_line(c, "%s_agg_grad_%s(t, %d, d);", c->name, otc_agg_name(nd->agg), k);
    otc_cr_line(c, "const float dz = %s * g%d[b];", sc, (int)id);
    for (int i = 0; i < k; i++) {
        otc_id s = nd->inputs[i + 2];
        int col = nd->cols[i];
        char at[96], cs[24], gs[96];
        if (col == 0)
            snprintf(at, sizeof at, "v%d[b]", (int)V(s));
        else
            snprintf(at, sizeof at, "v%d[%d * S + b]", (int)V(s), col);
        if (NEEDS(W)) otc_cr_line(c, "g%d[%d] += dz * d[%d] * %s;", (int)V(W), i, i, at);
        if (NEEDS(s)) {
            snprintf(cs, sizeof cs, "%d", col);
            otc_cr_grad_at(c, gs, sizeof gs, V(s), cs);
            otc_cr_line(c, "%s += dz * d[%d] * v%d[%d];", gs, i, (int)V(W), i);
        }
    }
    c->indent--;
    otc_cr_line(c, "}");
}

/* Neuron: dz = dy * act'(pre, y) (in place over its own gradient, which nothing reads
 * afterwards), then the bias, the weights and the sources. */
static void bw_neuron(otc_cr *c, otc_id id) {
    const otc_plan *p = c->plan;
    const otc_node *nd = otc_graph_node(c->g, id);
    const otc_plan_value *v = &p->values[id];
    const otc_act_info *act = otc_cr_act(nd);
    otc_id W = nd->inputs[0], Bi = nd->inputs[1];
    bool use_y = otc_expr_reads(act->df, OTC_EX_Y);
    char lit[48], off[64];
    otc_cr_grad_pointer(c, id);
    if (use_y) need_value(c, id);
    if (v->has_pre)
        otc_cr_line(c, "const float *restrict q%d = ws + %s;", (int)id, otc_cr_offset(off, v->pre));
    char q[32], y[32], call[512];
    snprintf(q, sizeof q, "q%d[b]", (int)id);
    snprintf(y, sizeof y, "v%d[b]", (int)id);
    otc_cr_dact_call(c, call, sizeof call, nd, v->has_pre ? q : "0.0f", use_y ? y : "0.0f");
    otc_cr_line(c, "for (size_t b = 0; b < B; b++) g%d[b] *= %s;", (int)id, call);
    const char *scale = otc_cr_float(c, lit, nd->scale);
    char sc[48];
    snprintf(sc, sizeof sc, "%s", scale);
    if (NEEDS(Bi)) {
        otc_cr_grad_pointer(c, Bi);
        char x[32];
        snprintf(x, sizeof x, "g%d", (int)id);
        otc_cr_line(c, "{");
        c->indent++;
        batch_sum(c, x, NULL);
        otc_cr_line(c, "g%d[0] += acc;", (int)V(Bi));
        c->indent--;
        otc_cr_line(c, "}");
    }
    if (NEEDS(W)) otc_cr_grad_pointer(c, W);
    if (nd->agg != OTC_AGG_SUM && nd->n_inputs > 2) {
        bw_neuron_agg(c, id, sc);
        return;
    }
    for (int i = 2; i < nd->n_inputs; i++) {
        otc_id src = nd->inputs[i];
        int col = nd->cols[i - 2];
        char gs[96], cs[24];
        snprintf(cs, sizeof cs, "%d", col);
        if (NEEDS(W)) {
            need_value(c, src);
            char gx[32], vs[64];
            snprintf(gx, sizeof gx, "g%d", (int)id);
            otc_cr_line(c, "{");
            c->indent++;
            batch_sum(c, gx, column(vs, sizeof vs, 'v', V(src), col));
            otc_cr_line(c, "g%d[%d] += %s * acc;", (int)V(W), i - 2, sc);
            c->indent--;
            otc_cr_line(c, "}");
        }
        if (NEEDS(src)) {
            otc_cr_grad_pointer(c, src);
            otc_cr_pointer(c, W, false);
            otc_cr_grad_at(c, gs, sizeof gs, V(src), cs);
            otc_cr_line(c, "{");
            otc_cr_line(c, "    const float f = %s * v%d[%d];", sc, (int)V(W), i - 2);
            if (p->values[V(src)].batched) {
                /* Sample by sample: the file's one out-of-line copy of the loop. */
                c->batch_axpy_used = true;
                char gp[64];
                otc_cr_line(c, "    %s_batch_axpy(%s, g%d, f, B);", c->name,
                            column(gp, sizeof gp, 'g', V(src), col), (int)id);
            } else {
                otc_cr_line(c, "    for (size_t b = 0; b < B; b++) %s += g%d[b] * f;", gs, (int)id);
            }
            otc_cr_line(c, "}");
        }
    }
}

static void bw_matmul(otc_cr *c, otc_id id) {
    const otc_node *nd = otc_graph_node(c->g, id);
    const otc_node *an = otc_graph_node(c->g, nd->inputs[0]);
    otc_id A = V(nd->inputs[0]), W = V(nd->inputs[1]);
    bool batched = c->plan->values[A].batched;
    int64_t Kd = an->shape.dim[1], N = nd->shape.dim[1];
    otc_cr_grad_pointer(c, id);
    if (batched) {
        /* The plan's blocking (otc_plan_tiling) of the two products. */
        const otc_plan_tiling *t = &c->plan->kernels[c->plan->values[id].kernel].tiling;
        char gn[16], an_[16], wn[16], gan[16], gwn[16];
        snprintf(gn, sizeof gn, "g%d", (int)id);
        snprintf(an_, sizeof an_, "v%d", (int)A);
        snprintf(wn, sizeof wn, "v%d", (int)W);
        snprintf(gan, sizeof gan, "g%d", (int)A);
        snprintf(gwn, sizeof gwn, "g%d", (int)W);
        if (NEEDS(A)) {
            /* dA[k] += sum_n dY[n] W[k,n]: blocks of K rows x vectors of samples, n inside. */
            need_value(c, W);
            otc_cr_grad_pointer(c, A);
            otc_cr_mm d = {gn, wn, gan, N, N, true, true, t->vectors};
            otc_cr_mm_all_rows(c, &d, Kd, t->grad_rows);
        }
        if (NEEDS(W)) {
            /* dW[k,n] += sum_b A[k,b] dY[n,b]: blocks of rows x columns over the samples. */
            need_value(c, A);
            otc_cr_grad_pointer(c, W);
            otc_cr_gw d = {an_, gn, gwn, Kd, N, t->grad_rows, t->grad_cols};
            otc_cr_mm_weight_grad(c, &d);
        }
        return;
    }
    otc_cr_loop_program(c, id, true);
}

/* Append the C spelling of e with the given leaves to a line "prefix<e>;". */
static void expr_line(otc_cr *c, const char *prefix, const otc_expr *e,
                      const otc_cr_leaves *leaves) {
    otc_text t;
    otc_text_init(&t);
    otc_cr_expr(c, &t, e, leaves);
    char *text = otc_text_take(&t);
    if (!text) {
        c->sb->failed = true;
        return;
    }
    otc_cr_line(c, "%s%s;", prefix, text);
    free(text);
}

static void backward_step(otc_cr *c, otc_id id) {
    const otc_node *nd = otc_graph_node(c->g, id);
    switch (nd->op) {
    case OTC_OP_NEURON:
        bw_neuron(c, id);
        break;
    case OTC_OP_MATMUL:
        bw_matmul(c, id);
        break;
    default:
        if (otc_loop_lowers(nd->op)) {
            otc_cr_loop_program(c, id, true);
        } else if (nd->op == OTC_OP_ROW_BROADCAST || otc_op_map_expr(nd->op)) {
            bw_elementwise(c, id);
        } else if (!c->st) { /* an op without a rule here is an error, never a silent zero */
            char lab[64];
            c->st = otc_fail(OTC_ERR_UNSUPPORTED, "emit-c: op '%s' (node %s) has no C backward",
                             otc_op_get(nd->op)->name, otc_graph_node_label(c->g, id, lab, 64));
        }
        break;
    }
}

/* ---- backward fusion: a run of elementwise rules (the plan's otc_plan_step.fused) ---- */

static bool fusable_op(const otc_node *nd) {
    return nd->op == OTC_OP_ROW_BROADCAST || nd->op == OTC_OP_NEURON ||
           (otc_op_map_expr(nd->op) != NULL && nd->n_inputs <= 2);
}

/* Pointers and kept values a member's rule reads, declared before the loop nest. */
static void fused_pointers(otc_cr *c, otc_id id) {
    const otc_node *nd = otc_graph_node(c->g, id);
    otc_cr_grad_pointer(c, id);
    if (nd->op == OTC_OP_NEURON) {
        const otc_plan_value *v = &c->plan->values[id];
        if (otc_expr_reads(otc_cr_act(nd)->df, OTC_EX_Y)) need_value(c, id);
        char off[64];
        if (v->has_pre)
            otc_cr_line(c, "const float *restrict q%d = ws + %s;", (int)id,
                        otc_cr_offset(off, v->pre));
        if (NEEDS(nd->inputs[0])) otc_cr_grad_pointer(c, nd->inputs[0]);
        if (NEEDS(nd->inputs[1])) otc_cr_grad_pointer(c, nd->inputs[1]);
        for (int i = 2; i < nd->n_inputs; i++) {
            if (NEEDS(nd->inputs[0])) need_value(c, nd->inputs[i]);
            if (NEEDS(nd->inputs[i])) {
                otc_cr_grad_pointer(c, nd->inputs[i]);
                otc_cr_pointer(c, nd->inputs[0], false);
            }
        }
        return;
    }
    for (int i = 0; i < nd->n_inputs; i++)
        if (NEEDS(nd->inputs[i]) && !(nd->op == OTC_OP_ROW_BROADCAST && i == 1))
            otc_cr_grad_pointer(c, nd->inputs[i]);
    if (nd->op != OTC_OP_ROW_BROADCAST)
        elementwise_reads(c, id,
                          (bool[2]){nd->n_inputs > 0 && NEEDS(nd->inputs[0]),
                                    nd->n_inputs > 1 && NEEDS(nd->inputs[1])});
}

/* A member's rule at the current (e, b): its gradient's share into each input's. */
static void fused_member(otc_cr *c, otc_id id, const char *elem, bool kb) {
    const otc_node *nd = otc_graph_node(c->g, id);
    const otc_plan_value *v = &c->plan->values[id];
    char gN[96], g0[96] = "", g1[96] = "", v0[96] = "", v1[96] = "", vN[96], lit[48];
    bool n0 = nd->n_inputs > 0 && NEEDS(nd->inputs[0]);
    bool n1 = nd->n_inputs > 1 && nd->op != OTC_OP_ROW_BROADCAST && NEEDS(nd->inputs[1]);
    if (nd->op == OTC_OP_NEURON) {
        const otc_act_info *act = otc_cr_act(nd);
        bool use_y = otc_expr_reads(act->df, OTC_EX_Y);
        char q[32], y[32], call[512];
        snprintf(q, sizeof q, "q%d[b]", (int)id);
        snprintf(y, sizeof y, "v%d[b]", (int)id);
        otc_cr_dact_call(c, call, sizeof call, nd, v->has_pre ? q : "0.0f", use_y ? y : "0.0f");
        otc_cr_line(c, "g%d[b] *= %s;", (int)id, call);
        for (int i = 2; i < nd->n_inputs; i++) {
            if (!NEEDS(nd->inputs[i])) continue;
            char gs[96], cs[24];
            snprintf(cs, sizeof cs, "%d", nd->cols[i - 2]);
            otc_cr_grad_at(c, gs, sizeof gs, V(nd->inputs[i]), cs);
            otc_cr_line(c, "%s += g%d[b] * (%s * v%d[%d]);", gs, (int)id,
                        otc_cr_float(c, lit, nd->scale), (int)V(nd->inputs[0]), i - 2);
        }
        return;
    }
    ga(c, gN, id, elem);
    if (n0) ga(c, g0, nd->inputs[0], elem);
    if (n1) ga(c, g1, nd->inputs[1], elem);
    va(c, vN, id, elem);
    if (nd->n_inputs > 0 && nd->op != OTC_OP_ROW_BROADCAST) va(c, v0, nd->inputs[0], elem);
    if (nd->n_inputs > 1 && nd->op != OTC_OP_ROW_BROADCAST) va(c, v1, nd->inputs[1], elem);
    if (nd->op == OTC_OP_ROW_BROADCAST) {
        /* Not batched: each element into its bias now; batched: summed after the b loop. */
        if (n0 && !kb) {
            int64_t vn = c->plan->values[V(nd->inputs[0])].size;
            char e2[48], gv[96];
            if (v->size > vn)
                snprintf(e2, sizeof e2, "e %% %" PRId64, vn);
            else
                snprintf(e2, sizeof e2, "%s", elem);
            otc_cr_grad_at(c, gv, sizeof gv, V(nd->inputs[0]), e2);
            otc_cr_line(c, "%s += %s;", gv, gN);
        }
        return;
    }
    const char *g[2] = {g0, g1};
    elementwise_rule(c, nd, gN, g, v0, v1, vN, (bool[2]){n0, n1});
}

/* A member's sums over the batch (bias and weight gradients), after the b loop. */
static void fused_sums(otc_cr *c, otc_id id, bool many) {
    const otc_node *nd = otc_graph_node(c->g, id);
    char x[32], y[64], lit[48];
    if (nd->op == OTC_OP_ROW_BROADCAST && NEEDS(nd->inputs[0])) {
        int64_t vn = c->plan->values[V(nd->inputs[0])].size, n = c->plan->values[id].size;
        snprintf(x, sizeof x, many ? "g%d + e * S" : "g%d", (int)id);
        otc_cr_line(c, "{");
        c->indent++;
        batch_sum(c, x, NULL);
        if (n > vn)
            otc_cr_line(c, "g%d[e %% %" PRId64 "] += acc;", (int)V(nd->inputs[0]), vn);
        else
            otc_cr_line(c, "g%d[%s] += acc;", (int)V(nd->inputs[0]), many ? "e" : "0");
        c->indent--;
        otc_cr_line(c, "}");
    }
    if (nd->op != OTC_OP_NEURON) return;
    if (NEEDS(nd->inputs[1])) {
        snprintf(x, sizeof x, "g%d", (int)id);
        otc_cr_line(c, "{");
        c->indent++;
        batch_sum(c, x, NULL);
        otc_cr_line(c, "g%d[0] += acc;", (int)V(nd->inputs[1]));
        c->indent--;
        otc_cr_line(c, "}");
    }
    if (!NEEDS(nd->inputs[0])) return;
    for (int i = 2; i < nd->n_inputs; i++) {
        int col = nd->cols[i - 2];
        otc_id src = V(nd->inputs[i]);
        snprintf(x, sizeof x, "g%d", (int)id);
        otc_cr_line(c, "{");
        c->indent++;
        batch_sum(c, x, column(y, sizeof y, 'v', src, col));
        otc_cr_line(c, "g%d[%d] += %s * acc;", (int)V(nd->inputs[0]), i - 2,
                    otc_cr_float(c, lit, nd->scale));
        c->indent--;
        otc_cr_line(c, "}");
    }
}

/* Whether the fused loop over b of steps [from, to) touches sample b only: every gradient a
 * member adds to in the loop is batched (a Neuron's W and b, a RowBroadcast's row, are summed
 * after it). */
static bool fused_samples_independent(otc_cr *c, int from, int to) {
    for (int i = from; i < to; i++) {
        const otc_node *nd = otc_graph_node(c->g, c->plan->steps[i].node);
        int first = nd->op == OTC_OP_NEURON ? 2 : nd->op == OTC_OP_ROW_BROADCAST ? 1 : 0;
        for (int k = first; k < nd->n_inputs; k++)
            if (NEEDS(nd->inputs[k]) && !c->plan->values[V(nd->inputs[k])].batched) return false;
    }
    return true;
}

/* Steps [from, to): one loop nest over the kernel's (e, b), each member's rule per element in
 * step order, then per element the sums over the batch. False (nothing written) when a
 * member has no fused spelling; the caller then spells the steps one by one. */
static bool backward_fused(otc_cr *c, int from, int to) {
    const otc_plan *p = c->plan;
    const otc_plan_kernel *K = &p->kernels[p->steps[from].kernel];
    for (int i = from; i < to; i++) {
        const otc_node *nd = otc_graph_node(c->g, p->steps[i].node);
        if (!fusable_op(nd)) return false;
        if (nd->op == OTC_OP_NEURON && (!K->batched || K->n != 1)) return false;
    }
    char lab[OTC_CR_LABEL_LEN];
    otc_cr_line(c, "{ /* backward, fused: %d rules in one loop from %s */", to - from,
                otc_cr_label(c->g, p->steps[from].node, lab, sizeof lab));
    c->indent++;
    for (int i = from; i < to; i++) fused_pointers(c, p->steps[i].node);
    bool many = K->n > 1;
    const char *elem = many ? "e" : "0";
    if (many) {
        otc_cr_line(c, "for (size_t e = 0; e < %" PRId64 "; e++) {", K->n);
        c->indent++;
    }
    if (K->batched) {
        /* gcc left this loop scalar on the XOR champion, unable to rule out overlaps */
        if (fused_samples_independent(c, from, to)) otc_cr_assume_independent(c, false);
        otc_cr_line(c, "for (size_t b = 0; b < B; b++) {");
        c->indent++;
    }
    for (int i = from; i < to; i++) fused_member(c, p->steps[i].node, elem, K->batched);
    if (K->batched) {
        c->indent--;
        otc_cr_line(c, "}");
        for (int i = from; i < to; i++) fused_sums(c, p->steps[i].node, many);
    }
    if (many) {
        c->indent--;
        otc_cr_line(c, "}");
    }
    c->indent--;
    otc_cr_line(c, "}");
    return true;
}

/* The C spellings of the optimiser's arguments: the arrays at element i, the configuration's
 * scalars as literals, the per-step ones as the locals step_prelude defines (lr is an
 * argument of the train step). */
typedef struct {
    const char *arg[OTC_OPTIM_ARG_COUNT];
    char lit[OTC_OPTIM_ARG_COUNT][48];
} update_spelling;

static void update_spell(otc_cr *c, update_spelling *u) {
    static const char *const name[OTC_OPTIM_ARG_COUNT] = {[OTC_OPTIM_ARG_P] = "p->w[i]",
                                                          [OTC_OPTIM_ARG_G] = "g[i]",
                                                          [OTC_OPTIM_ARG_M] = "p->m[i]",
                                                          [OTC_OPTIM_ARG_V] = "p->v[i]",
                                                          [OTC_OPTIM_ARG_LR] = "lr",
                                                          [OTC_OPTIM_ARG_DECAY] = "decay",
                                                          [OTC_OPTIM_ARG_STEP_SIZE] = "step_size",
                                                          [OTC_OPTIM_ARG_BC2_SQRT] = "bc2_sqrt"};
    float k[OTC_OPTIM_ARG_COUNT];
    otc_optim_step_args(&c->plan->options.optim, 1, k);
    for (int i = 0; i < OTC_OPTIM_ARG_COUNT; i++) {
        bool fixed = i >= OTC_OPTIM_ARG_FIRST_SCALAR && i < OTC_OPTIM_ARG_FIRST_PER_STEP;
        u->arg[i] = fixed ? otc_cr_float(c, u->lit[i], k[i]) : name[i];
    }
}

/* Does the rule read argument i? */
static bool rule_reads(const otc_optim_rule *rule, int i) {
    return otc_expr_reads_arg(rule->m, i) || otc_expr_reads_arg(rule->v, i) ||
           otc_expr_reads_arg(rule->p, i);
}

/* The per-step scalars the rule reads, computed as otc_optim_step_args does (the emitted C
 * cannot call the library): bias corrections in double. */
static void step_prelude(otc_cr *c, const otc_optim_rule *rule) {
    const otc_optim_config *o = &c->plan->options.optim;
    char lit[48];
    if (rule_reads(rule, OTC_OPTIM_ARG_STEP_SIZE)) {
        otc_cr_line(c, "const double bc1 = 1.0 - pow((double)%s, (double)p->t);",
                    otc_cr_float(c, lit, o->beta1));
        otc_cr_line(c, "const float step_size = (float)((double)lr / bc1);");
    }
    if (rule_reads(rule, OTC_OPTIM_ARG_BC2_SQRT)) {
        otc_cr_line(c, "const double bc2 = 1.0 - pow((double)%s, (double)p->t);",
                    otc_cr_float(c, lit, o->beta2));
        otc_cr_line(c, "const float bc2_sqrt = (float)sqrt(bc2);");
    }
    if (rule_reads(rule, OTC_OPTIM_ARG_DECAY))
        otc_cr_line(c, "const float decay = 1.0f - lr * %s;",
                    otc_cr_float(c, lit, o->weight_decay));
}

/* The optimiser over weights [from, from + count): the rule's trees (optim_rules.c), stored
 * in the rule's order m, v, p. */
static void update_step(otc_cr *c, const otc_plan_step *s, const otc_optim_rule *rule) {
    update_spelling u;
    update_spell(c, &u);
    const otc_cr_leaves leaves = {.arg = u.arg, .n_arg = OTC_OPTIM_ARG_COUNT};
    /* Weight i's update reads and writes element i of the weights, moments and gradients
     * only; without saying so gcc -O2 versions (or at -O2 leaves scalar) the loop over
     * p->w, p->m, p->v and g. */
    otc_cr_assume_independent(c, false);
    otc_cr_line(c, "for (size_t i = %" PRId64 "; i < %" PRId64 "; i++) {", s->offset,
                s->offset + s->count);
    c->indent++;
    if (rule->m) expr_line(c, "p->m[i] = ", rule->m, &leaves);
    if (rule->v) expr_line(c, "p->v[i] = ", rule->v, &leaves);
    expr_line(c, "p->w[i] = ", rule->p, &leaves);
    c->indent--;
    otc_cr_line(c, "}");
}

void otc_cr_backward_range(otc_cr *c, int from, int to, bool grads, bool update) {
    const otc_plan *p = c->plan;
    const otc_optim_rule *rule = otc_optim_rule_get(otc_optim_rule_of(&p->options.optim));
    char off[64];
    bool prelude = false;
    for (int i = from; i < to && !c->st; i++) {
        const otc_plan_step *s = &p->steps[i];
        c->mark_gen++;
        char lab[OTC_CR_LABEL_LEN];
        if (s->kind == OTC_STEP_UPDATE ? !update : !grads) continue;
        switch (s->kind) {
        case OTC_STEP_ZERO_GRADS:
            if (c->tape) {
                otc_cr_tape_seed(c);
                break;
            }
            otc_cr_line(c, "for (size_t i = 0; i < (size_t)(%s); i++) g[i] = 0.0f;",
                        p->options.zero_lazily ? otc_cr_offset(off, (otc_extent){p->grads.base, 0})
                                               : otc_cr_offset(off, p->grads));
            break;
        case OTC_STEP_ZERO_GRAD:
            otc_cr_line(c, "for (size_t i = 0; i < (size_t)%" PRId64 " * S; i++) g[%s + i] = 0.0f;",
                        p->values[V(s->node)].size, otc_cr_offset(off, p->values[V(s->node)].grad));
            break;
        case OTC_STEP_SEED:
            otc_cr_line(c, "g[%s] = 1.0f; /* d loss / d loss */",
                        otc_cr_offset(off, p->values[V(s->node)].grad));
            break;
        case OTC_STEP_BACKWARD:
            if (s->fused > 1 && backward_fused(c, i, i + s->fused)) {
                i += s->fused - 1;
                break;
            }
            otc_cr_line(c, "{ /* backward %s %s */",
                        otc_op_get(otc_graph_node(c->g, s->node)->op)->name,
                        otc_cr_label(c->g, s->node, lab, sizeof lab));
            c->indent++;
            backward_step(c, s->node);
            c->indent--;
            otc_cr_line(c, "}");
            break;
        case OTC_STEP_UPDATE:
            if (!prelude) {
                prelude = true;
                step_prelude(c, rule);
            }
            update_step(c, s, rule);
            break;
        default:
            break;
        }
    }
}
