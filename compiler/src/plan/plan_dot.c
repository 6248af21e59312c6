/* The plan drawn (Graphviz DOT: kernels as clusters, storage and offsets on each value) and
 * described one step per line, for `otc viz --plan` and `otc compile --verbose`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "plan_internal.h"
#include "otc/text.h"

static const char *kernel_kind_name(otc_kernel_kind k) {
    switch (k) {
    case OTC_KERNEL_MAP:
        return "map";
    case OTC_KERNEL_MATMUL:
        return "matmul";
    default:
        return "op";
    }
}

/* "12 + 3·B" style text for an extent, in floats. */
static const char *extent_str(otc_extent e, char *buf, size_t len) {
    if (e.per_batch == 0)
        snprintf(buf, len, "%" PRId64, e.base);
    else if (e.base == 0)
        snprintf(buf, len, "%" PRId64 "·B", e.per_batch);
    else
        snprintf(buf, len, "%" PRId64 " + %" PRId64 "·B", e.base, e.per_batch);
    return buf;
}

static void value_label(otc_text *sb, const otc_plan *p, otc_id id) {
    const otc_graph *g = p->graph;
    const otc_node *nd = otc_graph_node(g, id);
    const otc_plan_value *v = &p->values[id];
    char lab[64], shp[64], ex[64];
    otc_text_dot_string(sb, otc_plan_label(g, id, lab));
    otc_text_printf(sb, "\\n%s", otc_op_get(nd->op)->name);
    if (nd->op == OTC_OP_NEURON) otc_text_printf(sb, " %s", otc_act_get((otc_act)nd->act)->name);
    otc_text_printf(sb, " %s\\n", otc_shape_str(nd->shape, shp, sizeof shp));
    switch (v->storage) {
    case OTC_STORE_REGISTER:
        otc_text_puts(sb, "register");
        break;
    case OTC_STORE_PARAM:
        otc_text_printf(sb, "weights @%" PRId64 ", %" PRId64 " floats", v->param_offset, v->size);
        break;
    case OTC_STORE_ALIAS:
        otc_text_puts(sb, "alias of ");
        otc_text_dot_string(sb, otc_plan_label(g, v->alias_of, lab));
        break;
    case OTC_STORE_WORK:
        otc_text_printf(sb, "work @%s, ", extent_str(v->offset, ex, sizeof ex));
        otc_text_printf(sb, "%s floats",
                        extent_str((otc_extent){v->batched ? 0 : v->size, v->batched ? v->size : 0},
                                   ex, sizeof ex));
        otc_text_printf(sb, "\\nlive steps %d..%d%s", v->first_step, v->last_step,
                        v->kept ? " (kept)" : "");
        break;
    default:
        break;
    }
    if (v->needs_grad && p->options.train)
        otc_text_printf(sb, "\\ngrad @%s", extent_str(v->grad, ex, sizeof ex));
}

char *otc_plan_to_dot(const otc_plan *p) {
    if (!p) {
        otc_fail(OTC_ERR_ARG, "plan_to_dot: no plan");
        return NULL;
    }
    const otc_graph *g = p->graph;
    otc_text sb;
    otc_text_init(&sb);
    otc_plan_bytes b1 = otc_plan_sizes(p, 1);
    char ex[64];
    otc_text_puts(&sb, "digraph plan {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\", "
                       "fontsize=10];\n  edge [color=\"#555555\"];\n");
    otc_text_printf(&sb,
                    "  labelloc=t;\n  label=\"%s plan: %d kernels, %d registers; weights %" PRId64
                    " B; activations %s floats",
                    p->options.train ? "training" : "inference", p->n_kernels, p->n_registers,
                    b1.weights, extent_str(p->work, ex, sizeof ex));
    otc_text_printf(&sb, " (unshared %s)", extent_str(p->work_unshared, ex, sizeof ex));
    if (p->options.train)
        otc_text_printf(&sb, "; gradients %s floats", extent_str(p->grads, ex, 64));
    otc_text_puts(&sb, "\";\n");
    for (int k = 0; k < p->n_kernels; k++) {
        const otc_plan_kernel *K = &p->kernels[k];
        otc_text_printf(&sb,
                        "  subgraph cluster_k%d {\n    label=\"kernel %d: %s over %" PRId64
                        "%s (step %d)\";\n    style=rounded; color=\"#3465a4\";\n",
                        k, k, kernel_kind_name(K->kind), K->n, K->batched ? "×B" : "", K->step);
        for (int m = 0; m < K->count; m++) {
            otc_id id = p->members[K->first + m];
            otc_text_printf(&sb, "    n%d [label=\"", (int)id);
            value_label(&sb, p, id);
            otc_text_printf(&sb, "\"%s];\n",
                            p->values[id].storage == OTC_STORE_REGISTER ? ", style=dashed" : "");
        }
        otc_text_puts(&sb, "  }\n");
    }
    for (otc_id id = 0; id < p->n_values; id++) {
        const otc_plan_value *v = &p->values[id];
        if (v->storage == OTC_STORE_NONE || v->kernel >= 0) continue;
        const otc_node *nd = otc_graph_node(g, id);
        otc_text_printf(&sb, "  n%d [label=\"", (int)id);
        value_label(&sb, p, id);
        const char *shape = nd->op == OTC_OP_INPUT       ? "ellipse"
                            : nd->op == OTC_OP_PARAMETER ? "note"
                                                         : "box, style=dotted";
        otc_text_printf(&sb, "\", shape=%s];\n", shape);
    }
    for (otc_id id = 0; id < p->n_values; id++) {
        if (p->values[id].storage == OTC_STORE_NONE) continue;
        const otc_node *nd = otc_graph_node(g, id);
        for (int s = 0; s < nd->n_inputs; s++) {
            if (!otc_plan_reads_input(g, id, s)) continue;
            if (p->values[nd->inputs[s]].storage == OTC_STORE_NONE) continue;
            otc_text_printf(&sb, "  n%d -> n%d;\n", (int)nd->inputs[s], (int)id);
        }
    }
    for (int i = 0; i < p->n_io; i++) {
        const otc_plan_io *io = &p->io[i];
        const char *stream = io->stream == OTC_IO_IN       ? "in"
                             : io->stream == OTC_IO_TARGET ? "target"
                                                           : "out";
        otc_text_printf(&sb, "  io%d [label=\"%s[%" PRId64 "..%" PRId64 ")\", shape=plaintext];\n",
                        i, stream, io->offset, io->offset + io->width);
        if (io->stream == OTC_IO_OUT)
            otc_text_printf(&sb, "  n%d -> io%d [style=dashed];\n", (int)io->node, i);
        else
            otc_text_printf(&sb, "  io%d -> n%d [style=dashed];\n", i, (int)io->node);
    }
    otc_text_puts(&sb, "}\n");
    char *text = otc_text_take(&sb);
    if (!text) otc_fail(OTC_ERR_NOMEM, "out of memory for the plan's DOT text");
    return text;
}

char *otc_plan_describe(const otc_plan *p) {
    if (!p) {
        otc_fail(OTC_ERR_ARG, "plan_describe: no plan");
        return NULL;
    }
    const otc_graph *g = p->graph;
    otc_text sb;
    otc_text_init(&sb);
    char lab[64], ex[64];
    for (int i = 0; i < p->n_steps; i++) {
        const otc_plan_step *s = &p->steps[i];
        otc_text_printf(&sb, "%4d  ", i);
        switch (s->kind) {
        case OTC_STEP_LOAD:
        case OTC_STEP_STORE:
            otc_text_printf(&sb, "%s %s\n", s->kind == OTC_STEP_LOAD ? "load " : "store",
                            otc_plan_label(g, s->node, lab));
            break;
        case OTC_STEP_KERNEL: {
            const otc_plan_kernel *K = &p->kernels[s->kernel];
            otc_text_printf(&sb, "kernel %d (%s over %" PRId64 "%s):", s->kernel,
                            kernel_kind_name(K->kind), K->n, K->batched ? "×B" : "");
            for (int m = 0; m < K->count; m++) {
                otc_id id = p->members[K->first + m];
                const otc_plan_value *v = &p->values[id];
                otc_text_printf(&sb, " %s", otc_plan_label(g, id, lab));
                if (v->storage == OTC_STORE_WORK)
                    otc_text_printf(&sb, "@%s", extent_str(v->offset, ex, sizeof ex));
                else
                    otc_text_puts(&sb, "(reg)");
            }
            if (K->kind == OTC_KERNEL_MATMUL)
                otc_text_printf(&sb, " [blocks %d cols x %d vectors; weight gradient %d x %d]",
                                K->tiling.cols, K->tiling.vectors, K->tiling.grad_rows,
                                K->tiling.grad_cols);
            otc_text_puts(&sb, "\n");
            break;
        }
        case OTC_STEP_STATE: {
            char src[64];
            otc_text_printf(&sb, "state %s <- %s\n", otc_plan_label(g, s->node, lab),
                            otc_plan_label(g, otc_graph_node(g, s->node)->inputs[0], src));
            break;
        }
        case OTC_STEP_ZERO_GRADS:
            otc_text_puts(&sb, "zero gradients\n");
            break;
        case OTC_STEP_ZERO_GRAD:
            otc_text_printf(&sb, "zero d%s\n", otc_plan_label(g, s->node, lab));
            break;
        case OTC_STEP_SEED:
            otc_text_printf(&sb, "seed d%s = 1\n", otc_plan_label(g, s->node, lab));
            break;
        case OTC_STEP_BACKWARD:
            otc_text_printf(&sb, "backward %s", otc_plan_label(g, s->node, lab));
            if (s->fused > 1) otc_text_printf(&sb, " (one loop with the next %d)", s->fused - 1);
            otc_text_puts(&sb, "\n");
            break;
        case OTC_STEP_UPDATE:
            otc_text_printf(&sb, "update weights [%" PRId64 ", %" PRId64 ")\n", s->offset,
                            s->offset + s->count);
            break;
        }
    }
    char *text = otc_text_take(&sb);
    if (!text) otc_fail(OTC_ERR_NOMEM, "out of memory for the plan description");
    return text;
}
