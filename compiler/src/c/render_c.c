/* The C renderer's entry points: plans for forward (and training), the documented header,
 * the source skeleton (weights, argument checks, locals) and writing the two files. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/otc.h"
#include "otc/file.h"
#include "render_c_internal.h"

/* The plans one model's C is spelled from. With the default fusion the forward pass has
 * two: below OTC_C_BIG_BATCH samples everything runs in one loop over the batch (one sample
 * wants its values in registers), from there on chains are fused but libm calls kept apart
 * from code the compiler can vectorise across the batch (bench/emit_c measures both). */
#define OTC_C_BIG_BATCH 16

typedef struct {
    otc_plan *fwd;   /* small batches (or the only one) */
    otc_plan *big;   /* batches of OTC_C_BIG_BATCH and more, or NULL */
    otc_plan *train; /* NULL without --train */
    otc_extent work; /* the forward workspace: enough for either forward plan */
    int64_t decoded; /* floats of decoded weights before it (weight-only storage), or 0 */
    /* What the header promises: floats per row of in and target, the training workspace and
     * where its gradients start (a tape's differ from the plans'). */
    int64_t in_floats, target_floats;
    otc_extent train_work, grads_at;
} plan_set;

static void free_plans(plan_set *ps) {
    otc_plan_free(ps->fwd);
    otc_plan_free(ps->big);
    otc_plan_free(ps->train);
}

/* Do two plans group the same nodes into the same kernels? */
static bool same_kernels(const otc_plan *a, const otc_plan *b) {
    if (a->n_kernels != b->n_kernels || a->n_members != b->n_members) return false;
    for (int i = 0; i < a->n_members; i++)
        if (a->members[i] != b->members[i]) return false;
    for (int k = 0; k < a->n_kernels; k++)
        if (a->kernels[k].first != b->kernels[k].first ||
            a->kernels[k].count != b->kernels[k].count)
            return false;
    return true;
}

/* A tape (options bptt) needs its step graph: g and the loss are the step's. */
static otc_status check_tape(const otc_graph *g, const otc_emit_c_options *o) {
    if (o->bptt < 0) return otc_fail(OTC_ERR_ARG, "emit-c: bptt %d (must be at least 1)", o->bptt);
    if (o->bptt == 0) return OTC_OK;
    if (!o->train || !o->step || o->step->graph != g || o->loss != o->step->total ||
        o->step->steps != 1)
        return otc_fail(OTC_ERR_ARG, "emit-c: bptt needs --train and the model's step graph "
                                     "(otc_unroll_step) with its loss");
    return OTC_OK;
}

static otc_status build_plans(const otc_graph *g, const otc_emit_c_options *o, plan_set *ps) {
    bool chosen = o->fuse != OTC_FUSE_DEFAULT;
    otc_plan_options po;
    memset(&po, 0, sizeof po);
    po.loss = o->train ? o->loss : -1;
    po.fuse = chosen ? o->fuse : OTC_FUSE_LOOPS;
    po.split_libm = chosen && o->split_libm;
    po.optim = o->optim;
    otc_status st = check_tape(g, o);
    if (!st) st = otc_plan_build(g, &po, &ps->fwd);
    /* A tape's forward runs the step's code K times: one code path keeps it small. */
    if (!st && !chosen && o->bptt == 0 && (o->batch == 0 || o->batch >= OTC_C_BIG_BATCH)) {
        po.fuse = OTC_FUSE_CHAINS;
        po.split_libm = true;
        st = otc_plan_build(g, &po, &ps->big);
    }
    if (st) return st;
    /* A recurrent model keeps its state in the workspace across calls: one plan, so one
     * state layout whatever the batch. */
    if (ps->big && (same_kernels(ps->fwd, ps->big) || ps->fwd->state_per_sample > 0)) {
        /* Nothing for the second plan to do differently (an MLP, say): one code path. */
        otc_plan_free(ps->big);
        ps->big = NULL;
    }
    ps->work = o->bptt > 0 ? otc_cr_tape_fwd_work(ps->fwd) : ps->fwd->work;
    if (ps->big) {
        if (ps->big->work.base > ps->work.base) ps->work.base = ps->big->work.base;
        if (ps->big->work.per_batch > ps->work.per_batch)
            ps->work.per_batch = ps->big->work.per_batch;
    }
    ps->work.base += otc_cr_loop_slack(ps->fwd);
    /* (At least one float, so the workspace's weights are never an empty array.) */
    if (o->weights != OTC_WEIGHTS_F32)
        ps->decoded = ps->fwd->param_floats > 0 ? ps->fwd->param_floats : 1;
    ps->in_floats = ps->fwd->in_width;
    if (!o->train) return OTC_OK;
    po.train = true;
    po.agg_gradients = true; /* render_c_backward.c's bw_neuron_agg */
    po.fuse = chosen ? o->fuse : OTC_FUSE_CHAINS;
    po.split_libm = chosen ? o->split_libm : true;
    /* The tape adds the next step's state gradient after ZERO_GRADS (render_c_tape.c). */
    po.zero_lazily = o->bptt <= 0;
    if (o->bptt > 0) { /* the state's gradient goes back a step */
        po.grad_inputs = o->step->state_in;
        po.n_grad_inputs = o->step->n_delays;
    }
    st = otc_plan_build(g, &po, &ps->train);
    if (st) return st;
    otc_plan *t = ps->train;
    ps->target_floats = t->target_width;
    ps->train_work =
        (otc_extent){t->work.base + t->grads.base, t->work.per_batch + t->grads.per_batch};
    ps->grads_at = t->work;
    if (o->bptt > 0) {
        ps->in_floats = otc_cr_tape_row(ps->fwd, o->step, o->bptt, OTC_IO_IN);
        ps->target_floats = otc_cr_tape_row(t, o->step, o->bptt, OTC_IO_TARGET);
        ps->train_work = otc_cr_tape_train_work(t, o->step, o->bptt);
        ps->grads_at = otc_cr_tape_grads_at(t, o->bptt);
    }
    ps->train_work.base += otc_cr_loop_slack(t);
    return OTC_OK;
}

/* The training plan's sizes as the generated code has them: a tape keeps a slot of
 * activations per step and the carried state's gradient beside the gradients. */
static otc_plan_bytes train_bytes(const plan_set *ps, int64_t batch) {
    otc_plan_bytes b = otc_plan_sizes(ps->train, batch);
    const int64_t f = (int64_t)sizeof(float);
    b.activations = otc_extent_at(ps->grads_at, batch) * f;
    b.workspace = otc_extent_at(ps->train_work, batch) * f;
    b.gradients = b.workspace - b.activations;
    return b;
}

otc_emit_c_options otc_emit_c_defaults(void) {
    otc_emit_c_options o;
    memset(&o, 0, sizeof o);
    o.name = "model";
    o.loss = -1;
    o.optim = otc_optim_defaults(OTC_OPTIM_ADAM);
    return o;
}

bool otc_emit_c_valid_name(const char *s) {
    if (!s || !*s || strlen(s) > 64) return false;
    /* No leading underscore: those names are the C implementation's. */
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return false;
    return true;
}

/* Where the model came from, for the files' first comment. */
static const char *source_comment(char *buf, const otc_emit_c_options *o) {
    return o->source_name ? otc_cr_comment(buf, OTC_CR_LABEL_LEN, o->source_name) : "a graph";
}

static void io_doc(otc_text *sb, const otc_plan *p, otc_io_stream stream,
                   const otc_emit_c_options *o) {
    char lab[OTC_CR_LABEL_LEN], shp[64];
    int shown = 0;
    for (int i = 0; i < p->n_io; i++) {
        const otc_plan_io *io = &p->io[i];
        if (io->stream != stream) continue;
        if (shown++ == 48) {
            otc_text_puts(sb, " *          ...\n");
            continue;
        }
        if (shown > 48) continue;
        const otc_node *nd = otc_graph_node(p->graph, io->node);
        otc_text_printf(sb, " *          [%" PRId64 ", %" PRId64 ")  %s (%s %s)", io->offset,
                        io->offset + io->width, otc_cr_label(p->graph, io->node, lab, sizeof lab),
                        otc_op_get(nd->op)->name, otc_shape_str(nd->shape, shp, sizeof shp));
        int64_t stride = o->bptt > 0 ? otc_cr_tape_stride(p, o->step, io->node) : 0;
        if (stride > 0) otc_text_printf(sb, ", step t's + t * %" PRId64, stride);
        otc_text_puts(sb, "\n");
    }
}

/* Bytes of a buffer extent: a constant with a fixed batch, else a function of batch. */
static void bytes_macro(otc_text *sb, const char *macro, otc_extent e, int fixed) {
    if (fixed > 0 || e.per_batch == 0)
        otc_text_printf(sb, "#define %s(batch) ((size_t)%" PRId64 " * sizeof(float))\n", macro,
                        otc_extent_at(e, fixed));
    else
        otc_text_printf(sb,
                        "#define %s(batch) (((size_t)%" PRId64 " + (size_t)%" PRId64
                        " * (size_t)(batch)) * sizeof(float))\n",
                        macro, e.base, e.per_batch);
}

static void write_header(otc_text *sb, const otc_emit_c_options *o, const plan_set *ps) {
    const otc_plan *fwd = ps->fwd, *train = ps->train;
    const char *N = o->name;
    char U[80], lab[OTC_CR_LABEL_LEN], shp[64], src[OTC_CR_LABEL_LEN];
    otc_cr_upper(U, N, sizeof U);
    otc_plan_bytes bf = otc_plan_sizes(fwd, o->batch > 0 ? o->batch : 1);
    bf.activations = otc_extent_at(ps->work, o->batch > 0 ? o->batch : 1) * 4;
    if (o->bptt > 0) bf.activations_unshared *= 2; /* a tape's forward: two slots */
    otc_text_printf(sb, "/* %s.h: generated by otc %s from %s; do not edit.\n *\n", N, OTC_VERSION,
                    source_comment(src, o));
    otc_text_puts(sb,
                  " * Standalone C99 that needs only <math.h> (link with -lm): no allocation, no "
                  "I/O, no\n * written globals. Every call works only in the memory passed to "
                  "it, so two models\n * or two threads never interfere.\n *\n");
    otc_text_printf(sb,
                    " * Layout: `in` and `out` hold `batch` rows, sample after sample (row b of "
                    "in starts\n * at in[b * %s_IN_FLOATS]). In each row:\n *   in:\n",
                    U);
    io_doc(sb, fwd, OTC_IO_IN, o);
    otc_text_puts(sb, " *   out:\n");
    io_doc(sb, fwd, OTC_IO_OUT, o);
    if (train && train->target_width > 0) {
        otc_text_puts(sb, " *   target (train_step):\n");
        io_doc(sb, train, OTC_IO_TARGET, o);
    }
    if (o->bptt > 0)
        otc_text_printf(sb,
                        " *\n * Training through time: each call runs a window of "
                        "%s_BPTT_STEPS = %d time steps of\n * the recurrent model from the "
                        "state in the row (`.init`), steps t = 0 .. %d; out is the\n * state "
                        "after the window (`.next`), for the next window's row. train_step's "
                        "loss is the\n * mean over the steps; it keeps every step's "
                        "activations (a slot each of its workspace)\n * and runs backward "
                        "through them, the state's gradient cut at the window's start.\n",
                        U, o->bptt, o->bptt - 1);
    otc_text_printf(
        sb,
        " *\n * workspace: %s_WORKSPACE_BYTES(batch) bytes, aligned for float (16 or 64 "
        "bytes is\n * best for SIMD), owned by the caller%s.\n * Its contents need no "
        "initialisation%s.\n",
        U, o->batch > 0 ? " (a constant: the layout is fixed)" : "",
        fwd->state_per_sample > 0 ? " but the state's (below)" : "");
    if (ps->decoded > 0)
        otc_text_printf(sb,
                        " * The weights are stored as %s; every call first decodes them into "
                        "the\n * workspace's first %" PRId64 " floats (compute is f32).\n",
                        o->weights == OTC_WEIGHTS_F16 ? "IEEE half (f16)"
                                                      : "int8 with a float scale per output "
                                                        "channel",
                        ps->decoded);
    if (fwd->state_per_sample > 0)
        otc_text_printf(
            sb,
            " *\n * Recurrent model (%d floats of state per sample): %s_forward is ONE time step. "
            "The\n * workspace carries the state (every Delay's value) from one call to the "
            "next, in\n * %s_STATE_BYTES(batch) of its bytes: keep one workspace per "
            "instance (per set of\n * sequences; instances never interfere), call "
            "%s_reset(workspace, batch) before the\n * first step, to start new sequences, "
            "and whenever batch changes (the state's layout\n * depends on it). Row b of "
            "every step continues sequence b.\n",
            (int)fwd->state_per_sample, N, U, N);
    if (o->batch > 0) otc_text_printf(sb, " * batch may be 1 .. %s_MAX_BATCH.\n", U);
    otc_text_printf(sb,
                    " * Returns 0, 1 for a bad argument (a NULL pointer, batch out of range) or 2 "
                    "for a class\n * label that is not a class index.\n *\n"
                    " * Sizes at batch %d: weights %" PRId64 " bytes, activations %" PRId64
                    " bytes (%" PRId64 " without\n * lifetime sharing).\n",
                    o->batch > 0 ? o->batch : 1, bf.weights, bf.activations,
                    bf.activations_unshared);
    if (train) {
        otc_plan_bytes bt = train_bytes(ps, o->batch > 0 ? o->batch : 1);
        const otc_optim_config *oc = &train->options.optim;
        otc_text_printf(sb,
                        " *\n * Training (on-device fine-tuning): %s_params holds the weights "
                        "and the optimiser's\n * state; initialise it once with "
                        "%s_params_init. %s_train_step runs forward, backward\n * and the "
                        "update in place; lr is an argument so a schedule can change it.\n"
                        " * Optimiser: %s",
                        N, N, N,
                        oc->kind == OTC_OPTIM_SGD    ? "SGD"
                        : oc->kind == OTC_OPTIM_ADAM ? "Adam"
                                                     : "AdamW");
        if (oc->kind == OTC_OPTIM_SGD)
            otc_text_printf(sb, " (momentum %g%s, weight decay %g)", (double)oc->momentum,
                            oc->nesterov ? ", Nesterov" : "", (double)oc->weight_decay);
        else
            otc_text_printf(
                sb,
                " (betas %g, %g, eps %g, weight decay %g); with gcc build\n * with "
                "-fno-math-errno (clang needs nothing): otherwise its square root "
                "stays\n * a libm call (a domain error must be reported) and the update runs one "
                "weight at a time\n * (~15x slower; the results are the same)",
                (double)oc->beta1, (double)oc->beta2, (double)oc->eps, (double)oc->weight_decay);
        otc_text_printf(sb,
                        ". Training workspace:\n * %s_TRAIN_WORKSPACE_BYTES(batch) (at batch %d: "
                        "%" PRId64 " bytes of activations\n * kept for backward, %" PRId64
                        " of gradients). After a step, %s_grads(workspace, batch)\n * points at "
                        "the weights' gradients, laid out like the weights:\n",
                        U, o->batch > 0 ? o->batch : 1, bt.activations, bt.gradients, N);
        for (int i = 0; i < fwd->n_params; i++) {
            if (i == 64) {
                otc_text_puts(sb, " *     ...\n");
                break;
            }
            otc_id id = fwd->params[i];
            const otc_node *nd = otc_graph_node(fwd->graph, id);
            otc_text_printf(
                sb, " *     w[%" PRId64 ", %" PRId64 ")  %s %s%s\n", fwd->values[id].param_offset,
                fwd->values[id].param_offset + fwd->values[id].size,
                otc_cr_label(fwd->graph, id, lab, sizeof lab),
                otc_shape_str(nd->shape, shp, sizeof shp), nd->trainable ? "" : " (frozen)");
        }
    }
    otc_text_puts(sb, " */\n");
    otc_text_printf(sb, "#ifndef %s_H_INCLUDED\n#define %s_H_INCLUDED\n\n#include <stddef.h>\n\n",
                    U, U);
    otc_text_puts(sb, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    otc_text_printf(sb, "#define %s_IN_FLOATS %" PRId64 "\n#define %s_OUT_FLOATS %" PRId64 "\n", U,
                    ps->in_floats, U, fwd->out_width);
    if (o->bptt > 0) otc_text_printf(sb, "#define %s_BPTT_STEPS %d\n", U, o->bptt);
    if (o->batch > 0) otc_text_printf(sb, "#define %s_MAX_BATCH %d\n", U, o->batch);
    char macro[128];
    snprintf(macro, sizeof macro, "%s_WORKSPACE_BYTES", U);
    bytes_macro(sb, macro, (otc_extent){ps->work.base + ps->decoded, ps->work.per_batch}, o->batch);
    otc_text_printf(sb,
                    "\n/* %s_WORKSPACE_BYTES as a function (for callers that cannot use the "
                    "macro). */\nsize_t %s_workspace_bytes(int batch);\n",
                    U, N);
    if (!train) {
        otc_text_printf(sb,
                        "int %s_forward(const float *in, float *out, int batch, void "
                        "*workspace);\n",
                        N);
        if (ps->decoded > 0)
            otc_text_printf(sb,
                            "/* %s_forward decodes the stored weights at every call. To decode "
                            "them once,\n * call %s_decode(workspace), then "
                            "%s_forward_decoded as often as the\n * workspace's first %" PRId64
                            " floats stay untouched. */\n"
                            "void %s_decode(void *workspace);\n"
                            "int %s_forward_decoded(const float *in, float *out, int batch, "
                            "void *workspace);\n",
                            N, N, N, ps->decoded, N, N);
        if (fwd->state_per_sample > 0) {
            snprintf(macro, sizeof macro, "%s_STATE_BYTES", U);
            bytes_macro(sb, macro, (otc_extent){0, fwd->state_per_sample}, o->batch);
            otc_text_printf(sb,
                            "/* Zero the state (every Delay's value) for `batch` sequences; "
                            "returns 1 for a bad\n * argument, else 0. */\n"
                            "int %s_reset(void *workspace, int batch);\n",
                            N);
        }
    } else {
        int slots = otc_plan_optim_slots(&train->options.optim);
        int64_t P = fwd->param_floats > 0 ? fwd->param_floats : 1;
        char lr[48];
        otc_text_printf(sb, "#define %s_TARGET_FLOATS %" PRId64 "\n", U, ps->target_floats);
        otc_text_printf(sb, "#define %s_N_WEIGHTS %" PRId64 "\n", U, fwd->param_floats);
        otc_text_printf(sb, "#define %s_LR %s\n", U,
                        otc_cr_float_literal(lr, sizeof lr, train->options.optim.lr));
        snprintf(macro, sizeof macro, "%s_TRAIN_WORKSPACE_BYTES", U);
        bytes_macro(sb, macro, ps->train_work, o->batch);
        otc_text_printf(sb, "\ntypedef struct {\n    float w[%" PRId64 "]; /* the weights */\n", P);
        if (slots >= 1)
            otc_text_printf(sb, "    float m[%" PRId64 "]; /* momentum / first moment */\n", P);
        if (slots >= 2) otc_text_printf(sb, "    float v[%" PRId64 "]; /* second moment */\n", P);
        otc_text_printf(sb, "    long t; /* steps taken */\n} %s_params;\n\n", N);
        otc_text_printf(sb,
                        "/* The trained weights and a zero optimiser state. */\n"
                        "void %s_params_init(%s_params *p);\n",
                        N, N);
        otc_text_printf(sb,
                        "int %s_forward(const %s_params *p, const float *in, float *out, int "
                        "batch,\n    void *workspace);\n",
                        N, N);
        otc_text_printf(sb,
                        "/* target may be NULL when %s_TARGET_FLOATS is 0; loss may be NULL. */\n"
                        "int %s_train_step(%s_params *p, const float *in, const float *target, "
                        "int batch,\n    float lr, float *loss, void *workspace);\n",
                        U, N, N);
        otc_text_printf(sb, "const float *%s_grads(const void *workspace, int batch);\n", N);
        otc_text_printf(sb, "size_t %s_train_workspace_bytes(int batch);\n", N);
    }
    otc_text_puts(sb, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

static void write_weights(otc_cr *c, const char *array, const otc_plan *p) {
    otc_text *sb = c->sb;
    int64_t P = p->param_floats;
    otc_cr_finite_weights(c, p); /* the error names the parameter */
    otc_text_printf(sb, "static const float %s[%" PRId64 "] = {", array, P > 0 ? P : 1);
    if (P == 0) otc_text_puts(sb, "0.0f");
    int64_t k = 0;
    char lit[48];
    for (int i = 0; i < p->n_params; i++) {
        const otc_node *nd = otc_graph_node(p->graph, p->params[i]);
        for (size_t j = 0; j < nd->value->size; j++, k++) {
            otc_text_puts(sb, k % 6 == 0 ? "\n    " : " ");
            otc_text_printf(sb, "%s,", otc_cr_float(c, lit, nd->value->data[j]));
        }
    }
    otc_text_puts(sb, "\n};\n\n");
}

/* Locals every function body uses: ws (base for a tape, whose loops point ws at a slot;
 * after the decoded weights under weight-only storage), the batch B and the stride S. */
static void prologue(otc_cr *c, const otc_emit_c_options *o, int64_t decoded) {
    const char *ws = c->tape ? "base" : "ws";
    if (decoded > 0)
        otc_cr_line(c,
                    "float *const %s = (float *)workspace + %" PRId64 "; /* after the weights */",
                    ws, decoded);
    else
        otc_cr_line(c, "float *const %s = (float *)workspace;", ws);
    otc_cr_line(c, "const size_t B = (size_t)batch;");
    if (o->batch > 0)
        otc_cr_line(c, "const size_t S = %d; /* the fixed layout's batch stride */", o->batch);
    else
        otc_cr_line(c, "const size_t S = B;");
    otc_cr_line(c, "(void)%s;", ws);
    otc_cr_line(c, "(void)B;");
    otc_cr_line(c, "(void)S;");
}

/* NAME_reset: zeros the plan's state range (plan.h), which every forward plan of a
 * recurrent model shares (build_plans keeps one). */
static void write_reset(otc_cr *c, const otc_emit_c_options *o, const otc_plan *p,
                        int64_t decoded) {
    char U[80];
    otc_cr_upper(U, o->name, sizeof U);
    otc_text_printf(c->sb, "int %s_reset(void *workspace, int batch) {\n", o->name);
    c->indent = 1;
    if (o->batch > 0)
        otc_cr_line(c, "if (!workspace || batch < 1 || batch > %s_MAX_BATCH) return 1;", U);
    else
        otc_cr_line(c, "if (!workspace || batch < 1) return 1;");
    prologue(c, o, decoded);
    otc_cr_line(c,
                "for (size_t i = 0; i < (size_t)%" PRId64 " * S; i++) ws[%" PRId64 " + i] = 0.0f;",
                p->state_per_sample, p->state_offset);
    otc_cr_line(c, "return 0;");
    otc_text_puts(c->sb, "}\n\n");
}

static void write_forward(otc_cr *c, const otc_emit_c_options *o, const plan_set *ps, bool train) {
    const char *N = o->name;
    char U[80];
    otc_cr_upper(U, N, sizeof U);
    if (train)
        otc_text_printf(c->sb,
                        "int %s_forward(const %s_params *p, const float *in, float *out, "
                        "int batch, void *workspace) {\n",
                        N, N);
    else
        otc_text_printf(c->sb,
                        "int %s_forward%s(const float *in, float *out, int batch, void "
                        "*workspace) {\n",
                        N, ps->decoded > 0 ? "_decoded" : "");
    c->indent = 1;
    char cond[256];
    int used = snprintf(cond, sizeof cond,
                        "%s(!in && %s_IN_FLOATS > 0) || !out || !workspace || batch < 1",
                        train ? "!p || " : "", U);
    if (o->batch > 0)
        snprintf(cond + used, sizeof cond - (size_t)used, " || batch > %s_MAX_BATCH", U);
    otc_cr_line(c, "if (%s) return 1;", cond);
    prologue(c, o, ps->decoded);
    otc_cr_line(c, "{");
    c->indent++;
    if (train) {
        otc_cr_line(c, "const float *const w = p->w;");
    } else if (ps->decoded > 0) {
        otc_cr_line(c, "const float *const w = (const float *)workspace; /* decoded */");
    } else {
        otc_cr_line(c, "const float *const w = %s_weights;", N);
    }
    otc_cr_line(c, "(void)w;");
    otc_cr_line(c, "(void)in;");
    c->locals = OTC_CR_W | OTC_CR_WS | OTC_CR_IN | OTC_CR_OUT;
    if (ps->big) {
        otc_cr_line(c, "if (B < %d) { /* all in one loop: values stay in registers */",
                    OTC_C_BIG_BATCH);
        c->indent++;
    }
    c->plan = ps->fwd;
    c->outline = ps->big != NULL; /* a scalar loop: one copy of each activation's math */
    if (c->tape)
        otc_cr_tape_forward(c);
    else
        otc_cr_forward_steps(c);
    c->outline = false;
    if (ps->big) {
        c->indent--;
        otc_cr_line(c, "} else { /* kernels the compiler vectorises across the batch */");
        c->indent++;
        c->plan = ps->big;
        c->many = true;
        otc_cr_forward_steps(c);
        c->many = false;
        c->indent--;
        otc_cr_line(c, "}");
    }
    c->indent--;
    otc_cr_line(c, "}");
    otc_cr_line(c, "return 0;");
    otc_text_puts(c->sb, "}\n\n");
    if (ps->decoded > 0) {
        /* The forward pass that decodes first, and the decoding alone. */
        otc_text_printf(c->sb,
                        "int %s_forward(const float *in, float *out, int batch, void "
                        "*workspace) {\n    if (%s) return 1;\n"
                        "    %s_decode_weights((float *)workspace);\n"
                        "    return %s_forward_decoded(in, out, batch, workspace);\n}\n\n"
                        "void %s_decode(void *workspace) {\n"
                        "    if (workspace) %s_decode_weights((float *)workspace);\n}\n\n",
                        N, cond, N, N, N, N);
    }
    otc_text_printf(c->sb,
                    "size_t %s_workspace_bytes(int batch) {\n    (void)batch;\n    return "
                    "%s_WORKSPACE_BYTES(batch);\n}\n\n",
                    o->name, U);
    if (ps->fwd->state_per_sample > 0) write_reset(c, o, ps->fwd, ps->decoded);
}

static void write_training(otc_cr *c, const otc_emit_c_options *o, const plan_set *ps) {
    const otc_plan *t = ps->train;
    const char *N = o->name;
    char U[80], off[64];
    otc_cr_upper(U, N, sizeof U);
    int slots = otc_plan_optim_slots(&t->options.optim);
    otc_text *sb = c->sb;
    otc_text_printf(sb, "void %s_params_init(%s_params *p) {\n", N, N);
    otc_text_printf(sb, "    size_t i;\n    if (!p) return;\n");
    otc_text_printf(sb, "    for (i = 0; i < sizeof p->w / sizeof p->w[0]; i++) {\n");
    otc_text_printf(sb, "        p->w[i] = %s_initial_weights[i];\n", N);
    if (slots >= 1) otc_text_puts(sb, "        p->m[i] = 0.0f;\n");
    if (slots >= 2) otc_text_puts(sb, "        p->v[i] = 0.0f;\n");
    otc_text_puts(sb, "    }\n    p->t = 0;\n}\n\n");

    otc_text_printf(sb, "const float *%s_grads(const void *workspace, int batch) {\n", N);
    if (o->batch > 0)
        otc_text_printf(sb, "    const size_t S = %d;\n    (void)batch;\n", o->batch);
    else
        otc_text_puts(sb, "    const size_t S = (size_t)batch;\n");
    otc_text_printf(sb, "    return workspace ? (const float *)workspace + %s : NULL;\n}\n\n",
                    otc_cr_offset(off, ps->grads_at));

    otc_text_printf(sb,
                    "size_t %s_train_workspace_bytes(int batch) {\n    (void)batch;\n    "
                    "return %s_TRAIN_WORKSPACE_BYTES(batch);\n}\n\n",
                    N, U);
    otc_text_printf(sb,
                    "int %s_train_step(%s_params *p, const float *in, const float *target, "
                    "int batch, float lr,\n    float *loss, void *workspace) {\n",
                    N, N);
    c->indent = 1;
    otc_cr_line(c,
                "if (!p || (!in && %s_IN_FLOATS > 0) || (!target && %s_TARGET_FLOATS > 0) || "
                "!workspace || batch < 1) return 1;",
                U, U);
    if (o->batch > 0) otc_cr_line(c, "if (batch > %s_MAX_BATCH) return 1;", U);
    prologue(c, o, 0);
    otc_cr_line(c, "{");
    c->indent++;
    otc_cr_line(c, "const float *const w = p->w;");
    otc_cr_line(c, "float *const g = %s + %s; /* the gradient buffer */", c->tape ? "base" : "ws",
                otc_cr_offset(off, ps->grads_at));
    otc_cr_line(c, "(void)w;");
    otc_cr_line(c, "(void)g;");
    otc_cr_line(c, "(void)in;");
    otc_cr_line(c, "(void)target;");
    otc_cr_line(c, "(void)lr;");
    if (t->options.optim.kind != OTC_OPTIM_SGD) otc_cr_line(c, "p->t += 1;");
    c->plan = t;
    c->locals = OTC_CR_P | OTC_CR_W | OTC_CR_G | OTC_CR_IN | OTC_CR_TARGET | OTC_CR_LR |
                (c->tape ? 0 : OTC_CR_WS);
    if (c->tape) {
        otc_cr_tape_train(c);
    } else {
        otc_cr_forward_steps(c);
        otc_cr_backward_steps(c, true, true);
        otc_id lo = otc_plan_owner(t, t->options.loss);
        otc_cr_line(c, "if (loss) *loss = ws[%s];", otc_cr_offset(off, t->values[lo].offset));
    }
    c->indent--;
    otc_cr_line(c, "}");
    otc_cr_line(c, "return 0;");
    otc_text_puts(sb, "}\n");
}

otc_status otc_emit_c(const otc_graph *g, const otc_emit_c_options *options, char **header,
                      char **source) {
    if (!header || !source) return otc_fail(OTC_ERR_ARG, "emit-c: header/source is NULL");
    *header = *source = NULL;
    otc_emit_c_options o = options ? *options : otc_emit_c_defaults();
    if (!o.name) o.name = "model";
    if (!otc_emit_c_valid_name(o.name))
        return otc_fail(OTC_ERR_ARG,
                        "emit-c: name '%s' is not a C identifier (letters, digits and _, "
                        "starting with a letter, at most 64)",
                        o.name);
    if (o.batch < 0 || o.batch > (1 << 24))
        return otc_fail(OTC_ERR_ARG, "emit-c: batch %d out of range", o.batch);
    if (o.train && (o.loss < 0 || o.loss >= otc_graph_size(g)))
        return otc_fail(OTC_ERR_ARG, "emit-c: --train needs a loss node");
    if (o.weights < OTC_WEIGHTS_F32 || o.weights > OTC_WEIGHTS_INT8)
        return otc_fail(OTC_ERR_ARG, "emit-c: unknown weight storage %d", (int)o.weights);
    if (o.weights != OTC_WEIGHTS_F32 && o.train)
        return otc_fail(OTC_ERR_ARG, "emit-c: weight-only storage (f16, int8) is for inference "
                                     "only; --train keeps f32 weights");
    plan_set ps;
    memset(&ps, 0, sizeof ps);
    otc_status st = build_plans(g, &o, &ps);
    otc_plan *fwd = ps.fwd, *train = ps.train;
    otc_text hs, cs;
    otc_text_init(&hs);
    otc_text_init(&cs);
    otc_cr c;
    memset(&c, 0, sizeof c);
    if (!st) {
        c.sb = &cs;
        c.g = g;
        c.name = o.name;
        c.mark = calloc(4 * (size_t)otc_graph_size(g) + 4, sizeof *c.mark);
        if (o.bptt > 0) {
            c.tape = o.step;
            c.tape_steps = o.bptt;
        }
        if (!c.mark) st = otc_fail(OTC_ERR_NOMEM, "out of memory");
    }
    if (!st) {
        write_header(&hs, &o, &ps);
        char src[OTC_CR_LABEL_LEN];
        otc_text_printf(&cs, "/* %s.c: generated by otc %s from %s; do not edit. See %s.h. */\n",
                        o.name, OTC_VERSION, source_comment(src, &o), o.name);
        otc_text_printf(&cs, "#include <math.h>\n#include <stddef.h>\n%s\n#include \"%s.h\"\n\n",
                        ps.decoded > 0 ? "#include <stdint.h>\n" : "", o.name);
        /* Products and sums round separately, as on the other backends (clang's default
         * fuses a * b + c within an expression; gcc in an ISO mode does not, and warns
         * about the pragma). */
        otc_text_puts(&cs, "#if defined(__clang__) || !defined(__GNUC__)\n"
                           "#pragma STDC FP_CONTRACT OFF\n#endif\n\n");
        char array[96];
        snprintf(array, sizeof array, "%s_%s", o.name, train ? "initial_weights" : "weights");
        if (ps.decoded > 0)
            otc_cr_stored_weights(&c, fwd, o.weights);
        else
            write_weights(&c, array, fwd);
        /* The bodies first (they mark the activation helpers they call), then the helpers
         * before them in the file. */
        otc_text body, helpers, parts;
        otc_text_init(&body);
        otc_text_init(&helpers);
        otc_text_init(&parts);
        c.sb = &body;
        c.helpers = &helpers;
        c.parts = &parts;
        c.train = train != NULL;
        c.share = c.train; /* the forward twice: its helpers once */
        c.fixed_batch = o.batch;
        if (ps.decoded > 0) otc_cr_decode_weights(&c, fwd, o.weights);
        write_forward(&c, &o, &ps, train != NULL);
        if (train) write_training(&c, &o, &ps);
        /* The activation helpers mark the math they call: render them apart, then the
         * math, the helpers and the bodies in that order. */
        otc_text acts;
        otc_text_init(&acts);
        otc_cr_act_helpers(&c, &acts);
        otc_cr_backward_helpers(&c, &acts);
        otc_cr_sqrt_macro(&c, &cs);
        otc_cr_math_helpers(&c, &cs);
        if (acts.failed)
            cs.failed = true;
        else if (acts.text)
            otc_text_puts(&cs, acts.text);
        otc_text_free(&acts);
        otc_cr_mm_prelude(&c, &cs);
        if (helpers.failed)
            cs.failed = true;
        else if (helpers.text)
            otc_text_puts(&cs, helpers.text);
        otc_text_free(&helpers);
        if (parts.failed)
            cs.failed = true;
        else if (parts.text)
            otc_text_puts(&cs, parts.text);
        otc_text_free(&parts);
        if (body.failed)
            cs.failed = true;
        else if (body.text)
            otc_text_puts(&cs, body.text);
        otc_text_free(&body);
        st = c.st;
    }
    free(c.mark);
    otc_cr_shared_free(&c);
    free_plans(&ps);
    if (!st) {
        *header = otc_text_take(&hs);
        *source = otc_text_take(&cs);
        if (!*header || !*source) {
            free(*header);
            free(*source);
            *header = *source = NULL;
            st = otc_fail(OTC_ERR_NOMEM, "out of memory for the generated C");
        }
    }
    otc_text_free(&hs);
    otc_text_free(&cs);
    return st;
}

/* The plans of the queries below (options NULL: the defaults); *ps empty on failure. */
static otc_status query_plans(const otc_graph *g, const otc_emit_c_options *options,
                              otc_emit_c_options *o, plan_set *ps) {
    memset(ps, 0, sizeof *ps);
    if (!g) return otc_fail(OTC_ERR_ARG, "emit-c: NULL argument");
    *o = options ? *options : otc_emit_c_defaults();
    if (o->train && (o->loss < 0 || o->loss >= otc_graph_size(g)))
        return otc_fail(OTC_ERR_ARG, "emit-c: --train needs a loss node");
    otc_status st = build_plans(g, o, ps);
    if (st) {
        free_plans(ps);
        memset(ps, 0, sizeof *ps);
    }
    return st;
}

otc_status otc_emit_c_plans(const otc_graph *g, const otc_emit_c_options *options, otc_plan **fwd,
                            otc_plan **fwd_big, otc_plan **train) {
    if (!fwd || !fwd_big || !train) return otc_fail(OTC_ERR_ARG, "emit-c: NULL argument");
    *fwd = *fwd_big = *train = NULL;
    otc_emit_c_options o;
    plan_set ps;
    otc_status st = query_plans(g, options, &o, &ps);
    if (st) return st;
    *fwd = ps.fwd;
    *fwd_big = ps.big;
    *train = ps.train;
    return OTC_OK;
}

otc_status otc_emit_c_sizes(const otc_graph *g, const otc_emit_c_options *options, int64_t batch,
                            otc_plan_bytes *fwd, otc_plan_bytes *train) {
    otc_emit_c_options o;
    plan_set ps;
    otc_status st = query_plans(g, options, &o, &ps);
    if (st) return st;
    int64_t at = o.batch > 0 ? o.batch : batch;
    if (fwd) {
        *fwd = otc_plan_sizes(ps.fwd, at);
        fwd->activations = otc_extent_at(ps.work, at) * (int64_t)sizeof(float);
        if (o.bptt > 0) fwd->activations_unshared *= 2; /* two slots */
        if (ps.big) { /* the generated macro (ps.work) already takes each part's larger share */
            otc_plan_bytes b = otc_plan_sizes(ps.big, at);
            if (b.activations_unshared > fwd->activations_unshared)
                fwd->activations_unshared = b.activations_unshared;
        }
        /* Weight-only storage: the decoded weights go before the activations. */
        int64_t P = ps.fwd->param_floats > 0 ? ps.fwd->param_floats : 1;
        fwd->workspace = fwd->activations;
        if (options && options->weights != OTC_WEIGHTS_F32)
            fwd->workspace += P * (int64_t)sizeof(float);
    }
    if (train) {
        memset(train, 0, sizeof *train);
        if (ps.train) *train = train_bytes(&ps, at);
    }
    free_plans(&ps);
    return OTC_OK;
}

otc_status otc_emit_c_rows(const otc_graph *g, const otc_emit_c_options *options, int64_t *in,
                           int64_t *target, int64_t *out) {
    otc_emit_c_options o;
    plan_set ps;
    otc_status st = query_plans(g, options, &o, &ps);
    if (!st) {
        if (in) *in = ps.in_floats;
        if (target) *target = ps.target_floats;
        if (out) *out = ps.fwd->out_width;
    }
    free_plans(&ps);
    return st;
}

otc_status otc_cr_write_files(const char *dir, const char *name, char *h, char *s) {
    size_t n = strlen(dir) + strlen(name) + 8;
    char *hp = malloc(n), *cp = malloc(n);
    otc_status st = OTC_OK;
    if (!hp || !cp) {
        st = otc_fail(OTC_ERR_NOMEM, "out of memory");
    } else {
        snprintf(hp, n, "%s/%s.h", dir, name);
        snprintf(cp, n, "%s/%s.c", dir, name);
        /* Both files or neither: a new header beside an old source would not compile (or
         * worse, would, against another model's weights). */
        otc_file_part parts[2] = {{hp, h, strlen(h)}, {cp, s, strlen(s)}};
        st = otc_write_files_atomic(parts, 2);
    }
    free(hp);
    free(cp);
    free(h);
    free(s);
    return st;
}

otc_status otc_emit_c_files(const otc_graph *g, const otc_emit_c_options *options,
                            const char *dir) {
    if (!dir) return otc_fail(OTC_ERR_ARG, "emit-c: no directory");
    char *h = NULL, *s = NULL;
    otc_status st = otc_emit_c(g, options, &h, &s);
    if (st) return st;
    return otc_cr_write_files(dir, options && options->name ? options->name : "model", h, s);
}
