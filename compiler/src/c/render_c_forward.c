/* The C renderer's forward pass: input copies, fused map and matmul kernels, the other ops
 * each with a loop of its own, and output copies. Elementwise math is spelled from the op
 * spec's expression trees, the same trees the interpreter runs. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_c_internal.h"

#define V(id) ((int)otc_plan_owner(c->plan, (id)))

/* The value of `id` at the current (e, b) of kernel k: its local when it is computed in the
 * same kernel, else from memory. `elem` is the element expression ("e" or "0"). */
static void operand(otc_cr *c, int k, otc_id id, const char *elem, char *buf, size_t len) {
    otc_id o = otc_plan_owner(c->plan, id);
    if (c->plan->values[o].kernel == k)
        snprintf(buf, len, "r%d", (int)o);
    else
        otc_cr_at(c, buf, len, o, elem);
}

/* Declare the pointers kernel k reads and writes. */
static void kernel_pointers(otc_cr *c, int k) {
    const otc_plan *p = c->plan;
    const otc_plan_kernel *K = &p->kernels[k];
    for (int m = 0; m < K->count; m++) {
        otc_id id = p->members[K->first + m];
        const otc_node *nd = otc_graph_node(c->g, id);
        /* A Neuron reads its weights and bias as w[offset + i] directly. */
        for (int s = nd->op == OTC_OP_NEURON ? 2 : 0; s < nd->n_inputs; s++) {
            if (!otc_plan_reads_input(c->g, id, s)) continue;
            otc_id o = otc_plan_owner(p, nd->inputs[s]);
            if (p->values[o].kernel != k) otc_cr_pointer(c, o, false);
        }
    }
    for (int m = 0; m < K->count; m++) {
        otc_id id = p->members[K->first + m];
        if (p->values[id].storage == OTC_STORE_WORK) otc_cr_pointer(c, id, true);
        if (p->values[id].has_pre) {
            char off[64];
            otc_cr_line(c, "float *restrict q%d = ws + %s;", (int)id,
                        otc_cr_offset(off, p->values[id].pre));
        }
    }
}

/* r<id> = act(x): through the file's activation helper; a kept pre-activation is stored. */
static void act_value(otc_cr *c, otc_id id, const char *x_expr, const char *elem_idx) {
    const otc_node *nd = otc_graph_node(c->g, id);
    char call[512];
    if (c->plan->values[id].has_pre) {
        otc_cr_line(c, "const float p%d = %s;", (int)id, x_expr);
        otc_cr_line(c, "q%d[%s] = p%d;", (int)id, elem_idx, (int)id);
        char p[32];
        snprintf(p, sizeof p, "p%d", (int)id);
        otc_cr_act_call(c, call, sizeof call, nd, p);
    } else {
        otc_cr_act_call(c, call, sizeof call, nd, x_expr);
    }
    otc_cr_line(c, "const float r%d = %s;", (int)id, call);
}

/* act(bias + scale * sum): the sum from 0.0f, source by source, then the bias, as the
 * interpreter adds them. Written as one expression, wrapped every few terms. */
static void neuron_member(otc_cr *c, int k, otc_id id, const char *idx) {
    const otc_plan *p = c->plan;
    const otc_node *nd = otc_graph_node(c->g, id);
    char lit[48], src[96];
    int64_t w0 = p->values[nd->inputs[0]].param_offset;
    int64_t b0 = p->values[nd->inputs[1]].param_offset;
    otc_text x;
    otc_text_init(&x);
    bool sum = nd->agg == OTC_AGG_SUM, none = nd->n_inputs == 2;
    otc_text_printf(&x, "w[%" PRId64 "] + %s * ", b0, otc_cr_float(c, lit, nd->scale));
    if (sum || none) {
        /* Over no inputs every aggregation is 0 but the product, 1. */
        otc_text_puts(&x, nd->agg == OTC_AGG_PRODUCT ? "(1.0f" : "(0.0f");
    } else {
        /* Another aggregation: the file's helper over the weighted inputs as an array. */
        c->agg_used[nd->agg] = true;
        otc_text_printf(&x, "%s_agg_%s((float[]){", c->name, otc_agg_name(nd->agg));
    }
    for (int i = 2; i < nd->n_inputs; i++) {
        char col[32];
        snprintf(col, sizeof col, "%d", nd->cols[i - 2]);
        operand(c, k, nd->inputs[i], col, src, sizeof src);
        const char *sep = sum ? " + " : i > 2 ? ", " : "";
        otc_text_printf(&x, "%sw[%" PRId64 "] * %s", sep, w0 + (i - 2), src);
    }
    if (sum || none)
        otc_text_puts(&x, ")");
    else
        otc_text_printf(&x, "}, %d)", nd->n_inputs - 2);
    char *text = otc_text_take(&x);
    if (!text) {
        c->sb->failed = true;
        return;
    }
    act_value(c, id, text, idx);
    free(text);
}

/* A slice in a map kernel: its input's element elem + from (from 0 reads as a copy would,
 * a local of this kernel too). */
static void slice_member(otc_cr *c, int k, otc_id id, int64_t from, const char *elem,
                         const char *idx) {
    otc_id x = otc_graph_node(c->g, id)->inputs[0];
    char a[96], e2[64];
    if (from == 0) {
        operand(c, k, x, elem, a, sizeof a);
    } else {
        if (!strcmp(elem, "0"))
            snprintf(e2, sizeof e2, "%" PRId64, from);
        else
            snprintf(e2, sizeof e2, "%s + %" PRId64, elem, from);
        otc_cr_at(c, a, sizeof a, x, e2);
    }
    otc_cr_line(c, "const float r%d = %s;", (int)id, a);
    if (c->plan->values[id].storage == OTC_STORE_WORK)
        otc_cr_line(c, "v%d[%s] = r%d;", (int)id, idx, (int)id);
}

static void map_member(otc_cr *c, int k, otc_id id, const char *elem, const char *idx) {
    const otc_plan *p = c->plan;
    const otc_node *nd = otc_graph_node(c->g, id);
    const otc_plan_kernel *K = &p->kernels[k];
    char a[96], b[96], lit[48];
    int64_t from = 0;
    if (otc_plan_slice_member(p, id, &from)) {
        slice_member(c, k, id, from, elem, idx);
        return;
    }
    if (nd->n_inputs > 0 && nd->op != OTC_OP_NEURON)
        operand(c, k, nd->inputs[0], elem, a, sizeof a);
    if (nd->n_inputs > 1 && nd->op != OTC_OP_NEURON)
        operand(c, k, nd->inputs[1], elem, b, sizeof b);
    if (nd->op == OTC_OP_ROW_BROADCAST) {
        /* v repeats along the rows: element e of the result is v[e mod |v|]. */
        int64_t vn = p->values[V(nd->inputs[0])].size;
        char e2[64];
        if (K->n <= vn || !strcmp(elem, "0"))
            snprintf(e2, sizeof e2, "%s", elem);
        else
            snprintf(e2, sizeof e2, "e %% %" PRId64, vn);
        otc_cr_at(c, a, sizeof a, nd->inputs[0], e2);
        otc_cr_line(c, "const float r%d = %s;", (int)id, a);
    } else if (nd->op == OTC_OP_NEURON) {
        neuron_member(c, k, id, idx);
    } else if (otc_cr_act(nd)) {
        act_value(c, id, a, idx); /* through the file's activation helper */
    } else {
        const otc_expr *value = otc_op_map_expr(nd->op);
        if (!value) {
            c->st = otc_fail(OTC_ERR_UNSUPPORTED, "emit-c: op %s is no map op",
                             otc_op_get(nd->op)->name);
            return;
        }
        const otc_cr_leaves leaves = {.x = a,
                                      .x1 = nd->n_inputs > 1 ? b : NULL,
                                      .a = otc_cr_float(c, lit, otc_node_param(nd))};
        otc_text t;
        otc_text_init(&t);
        otc_cr_expr(c, &t, value, &leaves);
        char *text = otc_text_take(&t);
        if (!text) {
            c->sb->failed = true;
            return;
        }
        otc_cr_line(c, "const float r%d = %s;", (int)id, text);
        free(text);
    }
    if (p->values[id].storage == OTC_STORE_WORK)
        otc_cr_line(c, "v%d[%s] = r%d;", (int)id, idx, (int)id);
}

static void describe_kernel(otc_cr *c, int k) {
    const otc_plan *p = c->plan;
    const otc_plan_kernel *K = &p->kernels[k];
    char line[160], lab[OTC_CR_LABEL_LEN];
    size_t used = (size_t)snprintf(line, sizeof line, "/* kernel %d:", k);
    for (int m = 0; m < K->count && used < sizeof line - sizeof lab - 8; m++) {
        otc_id id = p->members[K->first + m];
        used += (size_t)snprintf(line + used, sizeof line - used, " %s%s", m ? "-> " : "",
                                 otc_cr_label(c->g, id, lab, sizeof lab));
    }
    if (K->count > 8) used += (size_t)snprintf(line + used, sizeof line - used, " ...");
    snprintf(line + used, sizeof line - used, " */");
    otc_cr_line(c, "%s", line);
}

static void map_kernel(otc_cr *c, int k) {
    const otc_plan *p = c->plan;
    const otc_plan_kernel *K = &p->kernels[k];
    const char *elem = K->n > 1 ? "e" : "0";
    char idx[32];
    snprintf(idx, sizeof idx, "%s", K->batched ? (K->n > 1 ? "e * S + b" : "b") : elem);
    int open = 0;
    bool one = K->batched && K->n >= 4 * OTC_CR_LANES;
    if (one) {
        /* One sample: its elements are contiguous, so the loop over them vectorises (over
         * the samples it would run once per element: LeNet's ReLUs ran scalar at batch 1). */
        otc_cr_line(c, "if (S == 1) {");
        c->indent++;
        otc_cr_line(c, "const size_t b = 0;");
        otc_cr_assume_independent(c, false);
        open = otc_cr_loops(c, K->n, false, false);
        for (int m = 0; m < K->count; m++) map_member(c, k, p->members[K->first + m], elem, idx);
        otc_cr_close(c, open);
        c->indent--;
        otc_cr_line(c, "} else {");
        c->indent++;
        open = 0;
    }
    if (K->batched) {
        /* Every member reads and writes sample b only (the weights are read-only here): the
         * samples are independent. Without saying so gcc gave up vectorising a Neuron
         * kernel of the XOR champion's training step (more overlap checks than it allows
         * between the weights and the values): 3.2x slower at batch 256. */
        if (K->n > 1) open = otc_cr_loops(c, K->n, false, false);
        otc_cr_assume_independent(c, false);
        open += otc_cr_loops(c, 1, true, false);
    } else {
        open = otc_cr_loops(c, K->n, false, false);
    }
    for (int m = 0; m < K->count; m++) map_member(c, k, p->members[K->first + m], elem, idx);
    otc_cr_close(c, open + one);
}

/* The epilogue of a MatMul kernel for output columns [from, to): its members per (e, b). */
static void matmul_epilogue(otc_cr *c, int k, otc_id mm, const char *from, const char *to) {
    const otc_plan *p = c->plan;
    const otc_plan_kernel *K = &p->kernels[k];
    if (K->count == 1) return;
    bool many = K->n > 1;
    if (many) {
        otc_cr_line(c, "for (size_t e = %s; e < %s; e++) {", from, to);
        c->indent++;
    }
    otc_cr_line(c, "for (size_t b = 0; b < B; b++) {");
    c->indent++;
    otc_cr_line(c, "const float r%d = v%d[%s];", (int)mm, (int)mm, many ? "e * S + b" : "b");
    for (int m = 1; m < K->count; m++)
        map_member(c, k, p->members[K->first + m], many ? "e" : "0", many ? "e * S + b" : "b");
    c->indent--;
    otc_cr_line(c, "}");
    if (many) {
        c->indent--;
        otc_cr_line(c, "}");
    }
}

/* MatMul [B,K] x [K,N] and its elementwise epilogue, each sum k by k from 0 as the
 * interpreter adds them.
 * - One sample: blocks of output columns with their sums in registers (render_c_matmul.c).
 * - More: the plan's register blocks (render_c_matmul.c), then the epilogue on the block's
 *   columns while they are in cache; or, where the plan says panels, the blocks over panels
 *   of the shared dimension over all columns, then the epilogue. */
static void matmul_kernel(otc_cr *c, int k) {
    const otc_plan *p = c->plan;
    const otc_plan_kernel *K = &p->kernels[k];
    otc_id mm = p->members[K->first];
    const otc_node *nd = otc_graph_node(c->g, mm);
    int A = (int)V(nd->inputs[0]), W = (int)V(nd->inputs[1]), M = (int)mm;
    int64_t kk = p->values[A].size, n = K->n;
    char lim[32];
    snprintf(lim, sizeof lim, "%" PRId64, n);

    char an[16], wn[16], mn[16], to[48];
    snprintf(an, sizeof an, "v%d", A);
    snprintf(wn, sizeof wn, "v%d", W);
    snprintf(mn, sizeof mn, "v%d", M);
    otc_cr_mm d = {an, wn, mn, kk, n, false, false, K->tiling.vectors};
    if (!c->many) {
        otc_cr_line(c, "if (B == 1) {");
        c->indent++;
        otc_cr_mm_one_sample(c, &d, n);
        matmul_epilogue(c, k, mm, "0", lim);
        c->indent--;
        otc_cr_line(c, "} else {");
        c->indent++;
    }
    /* The plan's blocks: `cols` output columns x `vectors` vectors of samples in registers,
     * k innermost; each block's epilogue while its columns are in cache. */
    int cols = K->tiling.cols > 0 ? K->tiling.cols : 1;
    if (K->tiling.panels) {
        otc_cr_mm_panels(c, &d, n, cols);
        matmul_epilogue(c, k, mm, "0", lim);
        if (!c->many) {
            c->indent--;
            otc_cr_line(c, "}");
        }
        return;
    }
    /* A W beyond L1 at a batch the plan's blocks fit badly: otc_cr_mm_narrow. */
    bool narrow = kk * n > OTC_CR_ONE_CACHED;
    if (narrow) {
        otc_cr_narrow_if(c, &d);
        c->indent++;
        otc_cr_mm_narrow(c, &d, n);
        matmul_epilogue(c, k, mm, "0", lim);
        c->indent--;
        otc_cr_line(c, "} else {");
        c->indent++;
    }
    int64_t full = n / cols * cols;
    int tall = OTC_PLAN_TALL * cols;
    if (full >= tall) {
        /* Where the compiler has 32 vector registers (AVX-512) a block of the widest width
         * is one vector a row: OTC_PLAN_TALL times the plan's rows give the multiply-adds
         * enough independent sums (the 121 x 121 substrate at batch 256: 4 rows ran at a
         * third of the machine's peak). The plan's blocks take the rows left. */
        otc_cr_line(c, "{");
        c->indent++;
        otc_cr_line(c, "size_t e0 = 0;");
        otc_cr_tall_if(c, true);
        otc_cr_line(c, "if (B >= %d)", otc_cr_tall_min(&d));
        otc_cr_line(c, "    for (; e0 + %d <= %" PRId64 "; e0 += %d) {", tall, full, tall);
        c->indent += 2;
        otc_cr_mm_tall_rows(c, &d, "e0", tall);
        snprintf(to, sizeof to, "e0 + %d", tall);
        matmul_epilogue(c, k, mm, "e0", to);
        c->indent -= 2;
        otc_cr_line(c, "    }");
        otc_cr_tall_if(c, false);
        otc_cr_line(c, "for (; e0 < %" PRId64 "; e0 += %d) {", full, cols);
    } else if (full > 0) {
        otc_cr_line(c, "for (size_t e0 = 0; e0 < %" PRId64 "; e0 += %d) {", full, cols);
    }
    if (full > 0) {
        c->indent++;
        otc_cr_mm_rows(c, &d, "e0", cols);
        snprintf(to, sizeof to, "e0 + %d", cols);
        matmul_epilogue(c, k, mm, "e0", to);
        c->indent--;
        otc_cr_line(c, "}");
    }
    if (full >= tall) {
        c->indent--;
        otc_cr_line(c, "}");
    }
    if (full < n) {
        char from[32];
        snprintf(from, sizeof from, "%" PRId64, full);
        otc_cr_mm_rows(c, &d, from, (int)(n - full));
        matmul_epilogue(c, k, mm, from, lim);
    }
    if (narrow) {
        c->indent--;
        otc_cr_line(c, "}");
    }
    if (!c->many) {
        c->indent--;
        otc_cr_line(c, "}");
    }
}

/* An op with a loop structure of its own: its loop program (plan/plan_lower.c). */
static void op_kernel(otc_cr *c, int k) {
    otc_cr_loop_program(c, c->plan->members[c->plan->kernels[k].first], false);
}

void otc_cr_io_copy(otc_cr *c, const otc_plan_io *io, bool load, int64_t row, const char *offset) {
    const char *name = io->stream == OTC_IO_IN       ? "in"
                       : io->stream == OTC_IO_TARGET ? "target"
                                                     : "out";
    char lab[OTC_CR_LABEL_LEN], v[96];
    otc_cr_line(c, "{ /* %s %s */", load ? "load" : "store",
                otc_cr_label(c->g, io->node, lab, sizeof lab));
    c->indent++;
    otc_cr_pointer(c, io->node, load);
    otc_cr_at(c, v, sizeof v, io->node, io->width > 1 ? "e" : "0");
    char r[160];
    snprintf(r, sizeof r, "%s[b * %" PRId64 " + %s%s]", name, row, offset,
             io->width > 1 ? " + e" : "");
    /* Wide rows are transposed OTC_CR_IO_SAMPLES samples at a time, e outside b: sample by
     * sample, each b wrote one float into every one of the `width` rows of the workspace,
     * S floats apart; at a power-of-two S (batch 256: 1 KiB) those rows share a few cache
     * sets, and the 121 of a 121-wide input evicted each other before the next sample wrote
     * beside them (the copies took over half of the 11x11 substrate's time, perf). */
    bool blocked = io->width >= OTC_CR_IO_SAMPLES;
    if (blocked) {
        /* Fewer samples sample by sample: the rows fit the cache, and the e loop stays a
         * plain copy the compiler vectorises (blocked, one sample took the 11x11 substrate
         * 0.1 us more). */
        otc_cr_line(c, "if (B < %d) {", OTC_CR_IO_SAMPLES);
        c->indent++;
        int few = otc_cr_loops(c, io->width, true, true);
        otc_cr_line(c, "%s = %s;", load ? v : r, load ? r : v);
        otc_cr_close(c, few);
        c->indent--;
        otc_cr_line(c, "} else {");
        c->indent++;
        otc_cr_line(c, "for (size_t b0 = 0; b0 < B; b0 += %d) {", OTC_CR_IO_SAMPLES);
        c->indent++;
        otc_cr_line(c, "const size_t b1 = B - b0 < %d ? B : b0 + %d;", OTC_CR_IO_SAMPLES,
                    OTC_CR_IO_SAMPLES);
        otc_cr_line(c, "for (size_t e = 0; e < %" PRId64 "; e++) {", io->width);
        otc_cr_line(c, "    for (size_t b = b0; b < b1; b++) {");
        c->indent += 2;
    }
    int open = blocked ? 0 : otc_cr_loops(c, io->width, true, true);
    otc_cr_line(c, "%s = %s;", load ? v : r, load ? r : v);
    otc_cr_close(c, open);
    if (blocked) {
        c->indent -= 2;
        otc_cr_line(c, "    }");
        otc_cr_line(c, "}");
        c->indent--;
        otc_cr_line(c, "}");
        c->indent--;
        otc_cr_line(c, "}");
    }
    c->indent--;
    otc_cr_line(c, "}");
}

static void io_step(otc_cr *c, const otc_plan_step *s) {
    if (c->tape) {
        otc_cr_tape_io(c, s);
        return;
    }
    const otc_plan_io *io = &c->plan->io[s->io];
    int64_t width = io->stream == OTC_IO_IN       ? c->plan->in_width
                    : io->stream == OTC_IO_TARGET ? c->plan->target_width
                                                  : c->plan->out_width;
    char off[32];
    snprintf(off, sizeof off, "%" PRId64, io->offset);
    otc_cr_io_copy(c, io, s->kind == OTC_STEP_LOAD, width, off);
}

/* A Delay's new state: its source's value, all of it (value and slot share the layout). */
static void state_step(otc_cr *c, const otc_plan_step *s) {
    otc_id src = otc_graph_node(c->g, s->node)->inputs[0];
    char lab[OTC_CR_LABEL_LEN];
    otc_cr_line(c, "{ /* state of %s */", otc_cr_label(c->g, s->node, lab, sizeof lab));
    c->indent++;
    otc_cr_pointer(c, s->node, true);
    otc_cr_pointer(c, src, false);
    otc_cr_line(c, "for (size_t i = 0; i < (size_t)%" PRId64 " * S; i++) v%d[i] = v%d[i];",
                c->plan->values[s->node].size, (int)s->node, (int)otc_plan_owner(c->plan, src));
    c->indent--;
    otc_cr_line(c, "}");
}

void otc_cr_forward_range(otc_cr *c, int from, int to) {
    const otc_plan *p = c->plan;
    for (int i = from; i < to && !c->st; i++) {
        const otc_plan_step *s = &p->steps[i];
        c->mark_gen++;
        if (s->kind == OTC_STEP_STATE) {
            state_step(c, s);
            continue;
        }
        if (s->kind != OTC_STEP_KERNEL) {
            io_step(c, s);
            continue;
        }
        int k = s->kernel;
        describe_kernel(c, k);
        otc_cr_line(c, "{");
        c->indent++;
        kernel_pointers(c, k);
        switch (p->kernels[k].kind) {
        case OTC_KERNEL_MAP:
            map_kernel(c, k);
            break;
        case OTC_KERNEL_MATMUL:
            matmul_kernel(c, k);
            break;
        case OTC_KERNEL_OP:
            op_kernel(c, k);
            break;
        }
        c->indent--;
        otc_cr_line(c, "}");
    }
}
