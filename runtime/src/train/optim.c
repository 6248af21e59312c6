/* The optimiser objects: SGD (momentum, Nesterov, L2 weight decay), Adam and AdamW, their
 * checks and state; each step evaluates the update rule of optim_rules.c (torch.optim's
 * formulas, so results can be compared step for step with PyTorch). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "otc/optim.h"

struct otc_optimizer {
    otc_optim_config cfg;
    long t;        /* steps taken */
    int n_groups;  /* -1 until the first step fixes the groups */
    size_t *sizes; /* per group, from the first step */
    float **m;     /* SGD momentum buffer, or Adam's first moment; per group (a small group's
                      lies in pack[2]) */
    float **v;     /* Adam's second moment; per group (a small group's lies in pack[3]) */
    /* The rule's trees m, v, p compiled once (the rule follows the kind, which never changes;
     * a group of one weight would otherwise pay three compiles a step). */
    otc_expr_program prog[3];
    bool compiled[3];
    bool programs_ready;
    bool resized; /* reset since the last step: the groups may change their sizes */
    /* Groups smaller than PACK (a neuron's weights, a bias) are updated as one block, so the
     * rule's programs run once over all of them instead of once per group: their weights
     * and gradients gathered into pack[0] and pack[1] each step, their moments kept side by
     * side in pack[2] and pack[3] for good (n_packed floats each). */
    float *pack[4];
    size_t n_packed;
};

/* Below this many weights a group is packed with the others. */
enum { PACK = 64 };

otc_optim_config otc_optim_defaults(otc_optim_kind kind) {
    otc_optim_config c = {0};
    c.kind = kind;
    c.lr = kind == OTC_OPTIM_SGD ? 0.01f : 0.001f;
    c.beta1 = 0.9f;
    c.beta2 = 0.999f;
    c.eps = 1e-8f;
    c.weight_decay = kind == OTC_OPTIM_ADAMW ? 0.01f : 0.0f;
    return c;
}

static bool name_is(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != *b) return false;
    return *a == *b;
}

static const char *const kind_names[] = {
    [OTC_OPTIM_SGD] = "sgd", [OTC_OPTIM_ADAM] = "adam", [OTC_OPTIM_ADAMW] = "adamw"};

int otc_optim_kind_from_name(const char *name) {
    if (!name) return -1;
    for (int k = 0; k < (int)(sizeof kind_names / sizeof kind_names[0]); k++)
        if (name_is(name, kind_names[k])) return k;
    return -1;
}

const char *otc_optim_kind_name(otc_optim_kind kind) {
    int k = (int)kind;
    return k >= 0 && k < (int)(sizeof kind_names / sizeof kind_names[0]) ? kind_names[k] : "?";
}

static otc_status check_config(const otc_optim_config *c) {
    if (c->kind != OTC_OPTIM_SGD && c->kind != OTC_OPTIM_ADAM && c->kind != OTC_OPTIM_ADAMW)
        return otc_fail(OTC_ERR_ARG, "unknown optimiser kind %d", (int)c->kind);
    if (!(c->lr >= 0.0f) || !isfinite(c->lr))
        return otc_fail(OTC_ERR_ARG, "optimiser lr %g must be finite and >= 0", (double)c->lr);
    if (!(c->weight_decay >= 0.0f) || !isfinite(c->weight_decay))
        return otc_fail(OTC_ERR_ARG, "optimiser weight_decay %g must be finite and >= 0",
                        (double)c->weight_decay);
    if (c->kind == OTC_OPTIM_SGD) {
        if (!(c->momentum >= 0.0f) || !isfinite(c->momentum))
            return otc_fail(OTC_ERR_ARG, "SGD momentum %g must be finite and >= 0",
                            (double)c->momentum);
        if (c->nesterov && c->momentum == 0.0f)
            return otc_fail(OTC_ERR_ARG, "SGD with Nesterov needs a momentum > 0");
    } else {
        if (!(c->beta1 >= 0.0f && c->beta1 < 1.0f))
            return otc_fail(OTC_ERR_ARG, "Adam beta1 %g must be in [0, 1)", (double)c->beta1);
        if (!(c->beta2 >= 0.0f && c->beta2 < 1.0f))
            return otc_fail(OTC_ERR_ARG, "Adam beta2 %g must be in [0, 1)", (double)c->beta2);
        if (!(c->eps >= 0.0f) || !isfinite(c->eps))
            return otc_fail(OTC_ERR_ARG, "Adam eps %g must be finite and >= 0", (double)c->eps);
    }
    return OTC_OK;
}

otc_optimizer *otc_optimizer_new(const otc_optim_config *config) {
    if (!config) {
        otc_fail(OTC_ERR_ARG, "otc_optimizer_new: config is NULL");
        return NULL;
    }
    if (check_config(config)) return NULL;
    otc_optimizer *opt = calloc(1, sizeof *opt);
    if (!opt) {
        otc_fail(OTC_ERR_NOMEM, "out of memory for an optimiser");
        return NULL;
    }
    opt->cfg = *config;
    opt->n_groups = -1;
    return opt;
}

static void free_state(otc_optimizer *opt) {
    for (int i = 0; opt->sizes && i < opt->n_groups; i++) {
        if (opt->sizes[i] < PACK) continue; /* in pack[2], pack[3] */
        if (opt->m) free(opt->m[i]);
        if (opt->v) free(opt->v[i]);
    }
    free(opt->m);
    free(opt->v);
    free(opt->sizes);
    for (int k = 0; k < 4; k++) free(opt->pack[k]), opt->pack[k] = NULL;
    opt->n_packed = 0;
    opt->m = opt->v = NULL;
    opt->sizes = NULL;
    opt->n_groups = -1;
}

void otc_optimizer_free(otc_optimizer *opt) {
    if (!opt) return;
    free_state(opt);
    free(opt);
}

const otc_optim_config *otc_optimizer_config(const otc_optimizer *opt) {
    return opt ? &opt->cfg : NULL;
}

void otc_optimizer_set_lr(otc_optimizer *opt, float lr) {
    if (opt) opt->cfg.lr = lr;
}

void otc_optimizer_reset(otc_optimizer *opt) {
    if (!opt) return;
    opt->t = 0;
    if (opt->n_groups < 0) return;
    /* The moments zeroed where they are, kept for a next step on groups of the same sizes (a
     * step on others sizes them anew): training one model after another allocates nothing. */
    for (int i = 0; i < opt->n_groups; i++) {
        if (opt->sizes[i] < PACK) continue; /* in pack[2], pack[3] */
        if (opt->m[i]) memset(opt->m[i], 0, (opt->sizes[i] + 1) * sizeof(float));
        if (opt->v[i]) memset(opt->v[i], 0, (opt->sizes[i] + 1) * sizeof(float));
    }
    for (int k = 2; k < 4; k++)
        if (opt->pack[k]) memset(opt->pack[k], 0, opt->n_packed * sizeof(float));
    opt->resized = true;
}

long otc_optimizer_steps(const otc_optimizer *opt) {
    return opt ? opt->t : 0;
}

/* Zeroed state for each group, sized by the first step. */
static otc_status alloc_state(otc_optimizer *opt, int n, const size_t *sizes) {
    const otc_optim_rule *rule = otc_optim_rule_get(otc_optim_rule_of(&opt->cfg));
    size_t groups = (size_t)n + 1;
    opt->sizes = calloc(groups, sizeof *opt->sizes);
    opt->m = calloc(groups, sizeof *opt->m);
    opt->v = calloc(groups, sizeof *opt->v);
    opt->n_groups = n;
    bool ok = opt->sizes && opt->m && opt->v;
    for (int i = 0; ok && i < n; i++) {
        opt->sizes[i] = sizes[i];
        if (sizes[i] < PACK) opt->n_packed += sizes[i];
    }
    /* Zeroed moments where the rule has them: the small groups' in the packed blocks. */
    float **state[2] = {rule->m ? opt->m : NULL, rule->v ? opt->v : NULL};
    for (int k = 0; ok && k < 4 && opt->n_packed > 0; k++)
        if (k < 2 || state[k - 2])
            ok = (opt->pack[k] = calloc(opt->n_packed, sizeof(float))) != NULL;
    size_t at = 0;
    for (int i = 0; ok && i < n; i++) {
        bool small = sizes[i] < PACK;
        for (int k = 0; ok && k < 2; k++) {
            if (!state[k]) continue;
            if (small)
                state[k][i] = opt->n_packed > 0 ? opt->pack[2 + k] + at : NULL;
            else
                ok = (state[k][i] = calloc(sizes[i] + 1, sizeof(float))) != NULL;
        }
        if (small) at += sizes[i];
    }
    if (!ok) {
        free_state(opt);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for optimiser state");
    }
    return OTC_OK;
}

/* The rule's trees over one group, a block of elements at a time (the block's m, v and p
 * stay in cache from one tree to the next). */
static void update_group(const otc_optimizer *opt, const otc_optim_rule *rule, const float *args,
                         float *p, const float *grad, float *m, float *v, size_t size) {
    enum { BLOCK = 256 };
    otc_expr_arg arg[OTC_OPTIM_ARG_COUNT];
    for (int i = 0; i < OTC_OPTIM_ARG_COUNT; i++) arg[i] = (otc_expr_arg){NULL, args[i]};
    /* m, then v, then p: each tree reads what the one before it wrote. */
    const otc_expr *tree[3] = {rule->m, rule->v, rule->p};
    float *dst[3] = {m, v, p};
    for (size_t off = 0; off < size; off += BLOCK) {
        const size_t n = size - off < BLOCK ? size - off : BLOCK;
        arg[OTC_OPTIM_ARG_P].v = p + off;
        arg[OTC_OPTIM_ARG_G].v = grad + off;
        arg[OTC_OPTIM_ARG_M].v = m ? m + off : NULL;
        arg[OTC_OPTIM_ARG_V].v = v ? v + off : NULL;
        const otc_expr_arrays in = {.arg = arg, .n_arg = OTC_OPTIM_ARG_COUNT};
        for (int t = 0; t < 3; t++) {
            if (!tree[t]) continue;
            if (opt->compiled[t])
                otc_expr_run_n(&opt->prog[t], &in, dst[t] + off, n);
            else
                otc_expr_eval_n(tree[t], &in, dst[t] + off, n);
        }
    }
}

otc_status otc_optimizer_step(otc_optimizer *opt, int n, float *const *params,
                              const float *const *grads, const size_t *sizes) {
    if (!opt) return otc_fail(OTC_ERR_ARG, "otc_optimizer_step: optimiser is NULL");
    if (n < 0 || (n > 0 && (!params || !grads || !sizes)))
        return otc_fail(OTC_ERR_ARG, "otc_optimizer_step: bad parameter groups");
    for (int i = 0; i < n; i++) {
        if (sizes[i] > 0 && (!params[i] || !grads[i]))
            return otc_fail(OTC_ERR_ARG, "otc_optimizer_step: group %d has a NULL pointer", i);
    }
    if (opt->resized && opt->n_groups >= 0) {
        bool same = n == opt->n_groups;
        for (int i = 0; same && i < n; i++) same = sizes[i] == opt->sizes[i];
        if (!same) free_state(opt); /* sized anew below, moments zeroed */
    }
    opt->resized = false;
    if (opt->n_groups < 0) {
        otc_status st = alloc_state(opt, n, sizes);
        if (st) return st;
    } else {
        if (n != opt->n_groups)
            return otc_fail(OTC_ERR_ARG, "optimiser step with %d parameter groups, %d before", n,
                            opt->n_groups);
        for (int i = 0; i < n; i++) {
            if (sizes[i] != opt->sizes[i])
                return otc_fail(OTC_ERR_ARG,
                                "optimiser group %d has %zu values, %zu on the first step", i,
                                sizes[i], opt->sizes[i]);
        }
    }
    opt->t++;
    const otc_optim_rule *rule = otc_optim_rule_get(otc_optim_rule_of(&opt->cfg));
    if (!opt->programs_ready) {
        const otc_expr *tree[3] = {rule->m, rule->v, rule->p};
        for (int t = 0; t < 3; t++)
            opt->compiled[t] = tree[t] && otc_expr_compile(tree[t], &opt->prog[t]);
        opt->programs_ready = true;
    }
    float args[OTC_OPTIM_ARG_COUNT];
    otc_optim_step_args(&opt->cfg, opt->t, args);
    for (int i = 0; i < n; i++)
        if (sizes[i] >= PACK)
            update_group(opt, rule, args, params[i], grads[i], opt->m[i], opt->v[i], sizes[i]);
    if (opt->n_packed == 0) return OTC_OK;
    /* The small groups' weights and gradients gathered, updated as one block with their
     * packed moments, the weights scattered back. */
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] >= PACK) continue;
        memcpy(opt->pack[0] + at, params[i], sizes[i] * sizeof(float));
        memcpy(opt->pack[1] + at, grads[i], sizes[i] * sizeof(float));
        at += sizes[i];
    }
    update_group(opt, rule, args, opt->pack[0], opt->pack[1], opt->pack[2], opt->pack[3],
                 opt->n_packed);
    at = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] >= PACK) continue;
        memcpy(params[i], opt->pack[0] + at, sizes[i] * sizeof(float));
        at += sizes[i];
    }
    return OTC_OK;
}
