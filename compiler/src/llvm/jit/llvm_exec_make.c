/* Making JIT executors: the plans (forward, training), their compiled modules from the
 * structure cache or a batched compile, the weights each plan reads; the public constructors
 * and statistics. */
#include <stdlib.h>
#include <string.h>

#include "llvm_exec.h"

static bool same_layout(const otc_plan *a, const otc_plan *b) {
    if (a->n_params != b->n_params) return false;
    for (int i = 0; i < a->n_params; i++)
        if (a->params[i] != b->params[i]) return false;
    return true;
}

static otc_llvm_render_options render_options(const jit_exec *j, bool train) {
    otc_llvm_render_options ro = {0};
    ro.lanes = j->lanes;
    ro.train = train;
    ro.blas = !j->o.no_blas;
    /* The fast tier: no passes before its code generator, which llvm_cache.c's has_product_loops
     * picks. */
    ro.fast = j->o.tier == OTC_JIT_TIER_FAST;
    ro.exact = j->o.exact;
    /* Twice the code for up to ~1.5x the throughput on long batches: worth it when the code
     * runs long, not for the fast tier. */
    ro.chunk_group = ro.fast ? 1 : 2; /* 4 measured no faster than 2, and compiles slower */
    return ro;
}

/* The batch forms forward plan pl is compiled by, 0 for one module (training plans). LeNet's
 * forward holds column-mode dense layers and one-sample convolutions beside the batched code:
 * the batched form alone compiled in ~100 ms of CPU in the fast tier, all forms together in
 * ~300, and a caller that runs one kind of batch never pays for the others. */
static int batch_forms(const jit_exec *j, const otc_plan *pl, bool train) {
    if (train) return 0;
    otc_llvm_render_options ro = render_options(j, false);
    return otc_llvm_plan_batch_forms(pl, &ro);
}

/* A compile (or cache hit) in the executor's statistics. */
static void count_module(jit_exec *j, const otc_jit_module *mod, bool hit) {
    if (hit) {
        j->stats.cache_hits++;
    } else {
        j->stats.compiles++;
        j->stats.compile_ms += mod->compile_ms;
        j->stats.compile_cpu_ms += mod->compile_cpu_ms;
    }
}

otc_status otc_lvx_plan_module(jit_exec *j, jit_plan *p, otc_jit_module **out) {
    if (!p->forms) {
        *out = p->mod;
        return OTC_OK;
    }
    otc_llvm_batch_forms form = otc_llvm_form_of(p->forms, j->lanes, j->batch, j->stride);
    if (form == OTC_LV_FORMS_SCALAR) j->stats.scalar_forwards++;
    otc_jit_module **slot = &p->form_mod[form];
    if (!*slot) {
        otc_llvm_render_options ro = render_options(j, false);
        ro.forms = form;
        /* One sample of map kernels alone: one lane, each value a float (no padding rows), the
         * C library's exp and tanh as the interpreter calls them. Their latency is what a
         * chain of neurons waits on, and the vector polynomial's is longer: a 2-neuron sigmoid
         * genome ran in ~62 ns per sample with the polynomial at one lane, ~50 with expf
         * (interpreter ~55; Zen 5, a shared machine). The neurons then round as the
         * interpreter's do (otc_jit_options.exact). */
        if (form == OTC_LV_FORMS_SCALAR) {
            ro.lanes = 1;
            ro.exact = true;
            ro.chunk_group = 1;
        }
        bool hit = false;
        const otc_plan *pl = p->plan;
        otc_status st = otc_llvm_modules_get(&pl, &ro, 1, !j->o.no_cache, slot, &hit);
        if (st) return st;
        count_module(j, *slot, hit);
    }
    *out = *slot;
    return OTC_OK;
}

/* The plan's io mapped onto the executor's inputs, for the per-call path. */
static otc_status plan_index(jit_exec *j, jit_plan *p) {
    const otc_plan *pl = p->plan;
    p->io_input = calloc((size_t)pl->n_io + 1, sizeof *p->io_input);
    if (!p->io_input) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    p->single[0] = p->single[1] = -1;
    p->n_stream[0] = p->n_stream[1] = 0;
    p->out_owner = -1;
    for (int i = 0; i < pl->n_io; i++) {
        const otc_plan_io *io = &pl->io[i];
        if (io->stream == OTC_IO_OUT) {
            p->io_input[i] = -1;
            if (io->width == pl->out_width) p->out_owner = otc_plan_owner(pl, io->node);
            continue;
        }
        int s = io->stream == OTC_IO_IN ? 0 : 1;
        p->io_input[i] = otc_lvx_input_index(j, io->node);
        p->n_stream[s]++;
        int64_t width = s == 0 ? pl->in_width : pl->target_width;
        if (io->width == width) p->single[s] = i;
    }
    p->last_kernel = -1;
    for (int i = 0; i < pl->n_forward_steps; i++)
        if (pl->steps[i].kind == OTC_STEP_KERNEL) p->last_kernel = i;
    p->out_row_node = -1;
    for (int i = 0; i < pl->n_io && p->out_owner >= 0; i++) {
        const otc_plan_io *io = &pl->io[i];
        const otc_plan_value *v = &pl->values[p->out_owner];
        otc_op op = otc_graph_node(j->base.graph, io->node)->op;
        if (io->stream == OTC_IO_OUT && otc_plan_owner(pl, io->node) == p->out_owner &&
            op != OTC_OP_INPUT && op != OTC_OP_PARAMETER &&
            otc_graph_node(j->base.graph, p->out_owner)->op != OTC_OP_DELAY &&
            pl->values[io->node].storage != OTC_STORE_NONE && v->storage == OTC_STORE_WORK &&
            v->last_step >= p->last_kernel && v->batched)
            p->out_row_node = io->node;
    }
    p->loss_rerun = false;
    for (otc_id id = 0; id < j->n && pl->state_per_sample > 0; id++) {
        const otc_node *nd = otc_graph_node(j->base.graph, id);
        if (otc_op_get(nd->op)->kind == OTC_OPKIND_LOSS && !otc_shape_is_batched(nd->shape) &&
            pl->values[id].storage == OTC_STORE_NONE)
            p->loss_rerun = true;
    }
    return OTC_OK;
}

/* p's module (NULL: p is compiled by batch form on first use, `forms` set), its io and
 * weights. */
static otc_status plan_attach(jit_exec *j, jit_plan *p, otc_jit_module *mod, bool hit) {
    p->mod = mod;
    otc_status st = plan_index(j, p);
    if (st) return st;
    if (mod) count_module(j, mod, hit);
    jit_plan *other = p == &j->fwd ? &j->train : &j->fwd;
    bool other_ok = (p == &j->fwd ? j->has_train : j->has_fwd);
    if (other_ok && same_layout(other->plan, p->plan)) {
        p->weights = other->weights;
        p->own_weights = false;
        p->wver = other->wver;
        return OTC_OK;
    }
    p->weights = calloc((size_t)p->plan->param_floats + 1, sizeof(float));
    if (!p->weights) return otc_fail(OTC_ERR_NOMEM, "out of memory for JIT weights");
    p->own_weights = true;
    for (int i = 0; i < p->plan->n_params; i++) {
        otc_id id = p->plan->params[i];
        const otc_node *nd = otc_graph_node(j->base.graph, id);
        memcpy(p->weights + p->plan->values[id].param_offset, nd->value->data,
               nd->value->size * sizeof(float));
    }
    /* Trained weights, where another plan holds newer ones than the graph. */
    p->wver = j->wver - 1;
    if (j->wsrc)
        otc_lvx_refresh_weights(j, p);
    else
        p->wver = j->wver;
    return OTC_OK;
}

/* Plan and compile one plan now. */
otc_status otc_lvx_plan_make(jit_exec *j, jit_plan *p, const otc_plan_options *po, bool train) {
    otc_status st = otc_plan_build(j->base.graph, po, &p->plan);
    if (st) return st;
    otc_llvm_render_options ro = render_options(j, train);
    bool hit = false;
    otc_jit_module *mod = NULL;
    const otc_plan *pl = p->plan;
    p->forms = batch_forms(j, pl, train);
    if (!p->forms) st = otc_llvm_modules_get(&pl, &ro, 1, !j->o.no_cache, &mod, &hit);
    if (st) return st;
    return plan_attach(j, p, mod, hit);
}

otc_plan_options otc_lvx_fwd_options(const jit_exec *j) {
    otc_plan_options po = {0};
    po.loss = -1;
    po.fuse = j->o.fuse;
    return po;
}

otc_plan_options otc_lvx_train_options(const jit_exec *j, otc_id loss, const otc_optim_config *c) {
    otc_plan_options po = {0};
    po.train = true;
    po.agg_gradients = true; /* llvm_render_map_back.c's agg_grads */
    po.loss = loss;
    po.fuse = j->o.fuse;
    po.optim = c ? *c : otc_optim_defaults(OTC_OPTIM_ADAM);
    po.zero_lazily = true;
    po.first_grad_stores = true; /* llvm_render_map_back.c's add_grad */
    po.share_grads = true;       /* grad() reads parameters' gradients only */
    /* A tape's step (llvm_seq.c) reads its state's gradient (an Input's, kept to the end),
     * and writes its state and carried gradients into the buffer itself. */
    if (j->n_grad_inputs > 0) {
        po.grad_inputs = j->grad_inputs;
        po.n_grad_inputs = j->n_grad_inputs;
    }
    po.direct_inputs = j->direct_inputs;
    po.n_direct_inputs = j->n_direct_inputs;
    return po;
}

/* The gradient buffer's fixed part (parameter gradients first) for a new training plan. */
otc_status otc_lvx_train_ready(jit_exec *j) {
    size_t fixed = (size_t)j->train.plan->grads.base;
    free(j->grads);
    j->grads = calloc(fixed + 1, sizeof(float));
    j->grads_cap = fixed;
    if (!j->grads) return otc_fail(OTC_ERR_NOMEM, "out of memory for gradients");
    return OTC_OK;
}

otc_jit_options otc_jit_defaults(void) {
    otc_jit_options o = {0};
    o.fuse = OTC_FUSE_DEFAULT;
    return o;
}

bool otc_is_jit_executor(const otc_executor *ex) {
    return ex && ex->vt == &otc_lvx_vtable;
}

otc_status otc_jit_executor_stats(const otc_executor *ex, otc_jit_stats *out) {
    if (!otc_is_jit_executor(ex) || !out)
        return otc_fail(OTC_ERR_ARG, "otc_jit_executor_stats: not a JIT executor");
    const jit_exec *j = (const jit_exec *)ex;
    *out = j->stats;
    otc_lvx_seq_stats(j, out); /* training through time compiles in step executors */
    out->lanes = j->lanes;
    return OTC_OK;
}

const char *otc_jit_host_cpu(void) {
    return otc_llvm_host_cpu();
}

/* Lanes of the host's widest float vector LLVM will use. */
static int host_lanes(void) {
    const char *cpu = otc_llvm_host_cpu();
    if (strstr(cpu, "512-bit")) return 16;
    if (strstr(cpu, "256-bit")) return 8;
    if (strstr(cpu, "128-bit")) return 4;
    return 4;
}

/* An executor without compiled code yet. NULL on error. */
static jit_exec *shell_new(otc_graph *g, const otc_jit_options *options) {
    if (!g) {
        otc_fail(OTC_ERR_ARG, "jit: no graph");
        return NULL;
    }
    jit_exec *j = calloc(1, sizeof *j);
    if (!j) {
        otc_fail(OTC_ERR_NOMEM, "out of memory for a JIT executor");
        return NULL;
    }
    j->base.vt = &otc_lvx_vtable;
    j->base.graph = g;
    j->o = options ? *options : otc_jit_defaults();
    j->lanes = j->o.lanes > 0 ? j->o.lanes : host_lanes();
    j->n = otc_graph_size(g);
    j->stats.lanes = j->lanes;
    j->n_inputs = otc_graph_input_count(g);
    j->inputs = calloc((size_t)j->n_inputs + 1, sizeof *j->inputs);
    j->scratch = calloc((size_t)j->n + 1, sizeof *j->scratch);
    j->scratch_cap = calloc((size_t)j->n + 1, sizeof *j->scratch_cap);
    if (!j->inputs || !j->scratch || !j->scratch_cap) {
        otc_fail(OTC_ERR_NOMEM, "out of memory for a JIT executor");
        otc_lvx_destroy(&j->base);
        return NULL;
    }
    for (int i = 0; i < j->n_inputs; i++) {
        j->inputs[i].id = otc_graph_input(g, i);
        j->inputs[i].batch = -1;
        otc_shape sh = otc_graph_node(g, j->inputs[i].id)->shape;
        j->inputs[i].per_sample = otc_shape_is_batched(sh) ? otc_shape_size(sh) : 0;
    }
    for (int id = 0; id < j->n; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op == OTC_OP_PARAMETER && !nd->value) {
            char lab[64];
            otc_fail(OTC_ERR_STATE, "jit: parameter %s has no value", otc_lvx_label(j, id, lab));
            otc_lvx_destroy(&j->base);
            return NULL;
        }
    }
    return j;
}

otc_status otc_jit_executors_new(otc_graph *const *graphs, const otc_id *losses, int n,
                                 const otc_jit_options *options, otc_executor **out) {
    if (n < 0 || (n > 0 && (!graphs || !out)))
        return otc_fail(OTC_ERR_ARG, "otc_jit_executors_new: bad arguments");
    otc_status st = otc_llvm_init();
    if (st) return st;
    for (int i = 0; i < n; i++) out[i] = NULL;
    /* Per graph: its forward plan (outputs) unless a loss was given, then the training plan
     * stands for it until a forward without targets needs the plain one. */
    const otc_plan **plans = calloc(2 * (size_t)n + 1, sizeof *plans);
    otc_llvm_render_options *ro = calloc(2 * (size_t)n + 1, sizeof *ro);
    jit_plan **dest = calloc(2 * (size_t)n + 1, sizeof *dest);
    int *owner = calloc(2 * (size_t)n + 1, sizeof *owner);
    otc_jit_module **mods = calloc(2 * (size_t)n + 1, sizeof *mods);
    bool *hits = calloc(2 * (size_t)n + 1, sizeof *hits);
    if (!plans || !ro || !dest || !owner || !mods || !hits)
        st = otc_fail(OTC_ERR_NOMEM, "out of memory for JIT executors");
    int k = 0;
    for (int i = 0; i < n && !st; i++) {
        jit_exec *j = shell_new(graphs[i], options);
        if (!j) {
            /* Which graph is only worth saying when there are several. */
            st = n > 1 ? otc_fail_context(OTC_ERR_ARG, "graph %d", i) : OTC_ERR_ARG;
            break;
        }
        out[i] = &j->base;
        otc_id loss = losses ? losses[i] : -1;
        if (loss >= 0 && j->o.inference)
            st = otc_fail(OTC_ERR_ARG, "jit: a loss for an inference executor");
        if (!st && loss >= 0) {
            otc_plan_options po = otc_lvx_train_options(j, loss, NULL);
            st = otc_plan_build(graphs[i], &po, &j->train.plan);
            if (!st) {
                plans[k] = j->train.plan;
                ro[k] = render_options(j, true);
                dest[k] = &j->train;
                owner[k++] = i;
            }
        } else if (!st && otc_graph_output_count(graphs[i]) > 0 && !j->o.defer_forward) {
            otc_plan_options po = otc_lvx_fwd_options(j);
            st = otc_plan_build(graphs[i], &po, &j->fwd.plan);
            if (!st) j->fwd.forms = batch_forms(j, j->fwd.plan, false);
            if (!st && j->fwd.forms) {
                st = plan_attach(j, &j->fwd, NULL, false);
                j->has_fwd = true;
            } else if (!st) {
                plans[k] = j->fwd.plan;
                ro[k] = render_options(j, false);
                dest[k] = &j->fwd;
                owner[k++] = i;
            }
        }
        if (st && n > 1) st = otc_fail_context(st, "graph %d", i);
    }
    bool use_cache = !(options && options->no_cache);
    if (!st) st = otc_llvm_modules_get(plans, ro, k, use_cache, mods, hits);
    for (int m = 0; m < k && !st; m++) {
        jit_exec *j = (jit_exec *)out[owner[m]];
        st = plan_attach(j, dest[m], mods[m], hits[m]);
        if (dest[m] == &j->train) {
            j->has_train = true;
            if (!st) st = otc_lvx_train_ready(j);
        } else {
            j->has_fwd = true;
        }
        mods[m] = NULL;
    }
    if (st) {
        for (int m = 0; m < k; m++) otc_llvm_module_release(mods[m]);
        for (int i = 0; i < n; i++) {
            otc_exec_free(out[i]);
            out[i] = NULL;
        }
    }
    free(plans);
    free(ro);
    free(dest);
    free(owner);
    free(mods);
    free(hits);
    return st;
}

otc_executor *otc_jit_executor_new(otc_graph *g, const otc_jit_options *options) {
    otc_executor *ex = NULL;
    if (otc_jit_executors_new(&g, NULL, 1, options, &ex)) return NULL;
    return ex;
}
