/* The csv task on sequences ([Task] sequence = COL): rows are the time steps of sequences
 * grouped by an id column, each sequence runs from a reset state, the fitness comes from every
 * step's error (or the last step's, [Task] sequence_steps = last), and the hybrid loop trains
 * recurrent phenotypes through time (BPTT) on mini-batches of equal-length sequences before the
 * fitness is taken. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"
#include "otc/data.h"
#include "otc/optim.h"

/* Sequences of one length, step-major: x [T][B][n_features], y [T][B][n_out]. Built once
 * when the task is made and only read afterwards, so every evaluating thread shares them. */
typedef struct {
    int T, B;
    float *x, *y;
} seq_block;

typedef struct {
    int n;
    seq_block *b;
} seq_blocks;

typedef struct {
    otc_neat_score_fn score;      /* first: otc_neat_scored_evaluate reads it */
    otc_seq_dataset *train, *val; /* standardised x; y in output form (one-hot / 0-1) */
    seq_blocks train_blocks, val_blocks;
    bool regression;
    bool last; /* only each sequence's last step counts */
    int n_out, n_features;
    otc_standardizer st; /* fitted on train; the task's input_mean / input_std */
} seq_ctx;

static void blocks_free(seq_blocks *bs) {
    for (int i = 0; i < bs->n; i++) {
        free(bs->b[i].x);
        free(bs->b[i].y);
    }
    free(bs->b);
    bs->b = NULL;
    bs->n = 0;
}

static void seq_destroy(otc_neat_task *t) {
    seq_ctx *x = t->ctx;
    if (!x) return;
    otc_seq_dataset_free(x->train);
    otc_seq_dataset_free(x->val);
    blocks_free(&x->train_blocks);
    blocks_free(&x->val_blocks);
    otc_standardizer_free(&x->st);
    free(x);
    t->ctx = NULL;
}

/* Every sequence of s, bucketed by length (the loader's buckets, unshuffled, one batch each). */
static otc_status make_blocks(const otc_seq_dataset *s, seq_blocks *out) {
    otc_seq_loader *l = otc_seq_loader_new(s, s->n, false, false, 0);
    if (!l) return otc_fail_context(OTC_ERR_NOMEM, "sequence task");
    int n = otc_seq_loader_batches(l);
    out->b = calloc((size_t)n + 1, sizeof *out->b);
    otc_status st = out->b ? OTC_OK : otc_fail(OTC_ERR_NOMEM, "out of memory for sequences");
    int T, B;
    const float *bx, *by;
    while (st == OTC_OK && out->n < n && (B = otc_seq_loader_next(l, &T, &bx, &by, NULL)) > 0) {
        seq_block *b = &out->b[out->n++];
        size_t nx = (size_t)T * (size_t)B * (size_t)s->data->n_features;
        size_t ny = (size_t)T * (size_t)B * (size_t)s->data->n_targets;
        b->T = T;
        b->B = B;
        b->x = malloc(sizeof *b->x * nx + 1);
        b->y = malloc(sizeof *b->y * ny + 1);
        if (!b->x || !b->y) {
            st = otc_fail(OTC_ERR_NOMEM, "out of memory for sequences");
            break;
        }
        memcpy(b->x, bx, sizeof *b->x * nx);
        memcpy(b->y, by, sizeof *b->y * ny);
    }
    otc_seq_loader_free(l);
    return st;
}

static int predict(int n_out, const float *y) {
    if (n_out == 1) return y[0] > 0.5f;
    int best = 0;
    for (int k = 1; k < n_out; k++)
        if (y[k] > y[best]) best = k;
    return best;
}

/* Every sequence from a reset state, step by step; MSE over the counted steps' outputs (every
 * step, or the last) against the output-form targets, and (classification) the fraction of
 * counted steps classified right. */
static otc_status metrics(const seq_ctx *x, otc_neat_runner *r, const seq_blocks *bs, double *mse,
                          double *acc) {
    double se = 0;
    long right = 0, steps = 0;
    int cap = 0;
    for (int i = 0; i < bs->n; i++) cap = bs->b[i].B > cap ? bs->b[i].B : cap;
    float *y = malloc(sizeof *y * (size_t)cap * (size_t)x->n_out + 1);
    if (!y) return otc_fail(OTC_ERR_NOMEM, "out of memory evaluating a genome");
    otc_status s = OTC_OK;
    for (int i = 0; i < bs->n && s == OTC_OK; i++) {
        const seq_block *b = &bs->b[i];
        otc_neat_runner_reset(r);
        for (int t = 0; t < b->T && s == OTC_OK; t++) {
            const float *want = b->y + (size_t)t * (size_t)b->B * (size_t)x->n_out;
            s = otc_neat_runner_forward(r, b->x + (size_t)t * (size_t)b->B * (size_t)x->n_features,
                                        b->B, y);
            if (x->last && t < b->T - 1) continue;
            for (int row = 0; row < b->B && s == OTC_OK; row++) {
                const float *o = y + row * x->n_out, *w = want + row * x->n_out;
                for (int k = 0; k < x->n_out; k++) {
                    double e = (double)o[k] - w[k];
                    se += isfinite(e) ? e * e : 1e6;
                }
                if (!x->regression) right += predict(x->n_out, o) == predict(x->n_out, w);
            }
            steps += b->B;
        }
    }
    free(y);
    *mse = se / ((double)(steps > 0 ? steps : 1) * x->n_out);
    *acc = x->regression ? 0 : (double)right / (double)(steps > 0 ? steps : 1);
    return s;
}

/* Adam for train_steps mini-batches of equal-length training sequences, each run from a reset
 * state and trained through time over the whole sequence on the mean of its steps' MSE (or
 * the last step's). The
 * phenotype's parameters hold the trained values afterwards. */
static otc_status train(const otc_neat_config *c, const seq_ctx *x, otc_neat_phenotype *ph,
                        uint64_t seed, bool *diverged_out) {
    otc_id t, loss;
    otc_status s = otc_neat_hybrid_loss(ph, x->n_out, &t, &loss);
    if (s != OTC_OK) return s;
    /* BPTT in the interpreter: the evolve policy's executors (the task's make_executor) do not
     * record steps; the JIT executor does (otc/jit.h), but hybrid training is short. */
    otc_executor *ex = otc_interpreter_new(ph->graph, &(otc_exec_options){.inference = false});
    if (!ex) return otc_fail_context(OTC_ERR_STATE, "hybrid training executor");
    otc_optim_config oc = otc_optim_defaults(OTC_OPTIM_ADAM);
    oc.lr = (float)c->learning_rate;
    otc_optimizer *opt = otc_optimizer_new(&oc);
    otc_seq_loader *l = otc_seq_loader_new(x->train, c->batch_size, true, false, seed);
    int longest = otc_seq_max_len(x->train);
    float *w = malloc(sizeof *w * (size_t)longest + 1);
    s = opt && l && w ? OTC_OK : otc_fail(OTC_ERR_NOMEM, "out of memory for hybrid training");
    bool diverged = false; /* a non-finite loss: training stops there */
    for (int step = 0; step < c->train_steps && s == OTC_OK && !diverged; step++) {
        int T, B;
        const float *bx, *by;
        if ((B = otc_seq_loader_next(l, &T, &bx, &by, NULL)) == 0)
            B = otc_seq_loader_next(l, &T, &bx, &by, NULL); /* a new epoch */
        otc_exec_reset_state(ex);
        s = otc_exec_seq_begin(ex, T);
        for (int k = 0; k < T && s == OTC_OK && !diverged; k++) {
            const float *lv;
            s = otc_exec_set_input(ex, ph->input,
                                   bx + (size_t)k * (size_t)B * (size_t)x->n_features, B);
            if (s == OTC_OK)
                s = otc_exec_set_input(ex, t, by + (size_t)k * (size_t)B * (size_t)x->n_out, B);
            if (s == OTC_OK) s = otc_exec_forward(ex);
            if (s == OTC_OK) s = otc_exec_value(ex, loss, &lv, NULL);
            if (s == OTC_OK && !isfinite(lv[0])) diverged = true;
            w[k] = x->last ? (float)(k == T - 1) : 1.0f / (float)T;
        }
        if (s != OTC_OK || diverged) break;
        otc_exec_zero_grad(ex);
        s = otc_exec_seq_backward(ex, loss, w);
        if (s == OTC_OK) s = otc_exec_optimizer_step(ex, opt);
    }
    if (s == OTC_OK) s = otc_exec_sync_params(ex);
    *diverged_out = diverged;
    free(w);
    otc_seq_loader_free(l);
    otc_optimizer_free(opt);
    otc_exec_free(ex);
    return s;
}

static bool genome_finite(const otc_neat_genome *g) {
    for (int i = 0; i < g->n_nodes; i++)
        if (!isfinite(g->nodes[i].bias)) return false;
    for (int i = 0; i < g->n_conns; i++)
        if (!isfinite(g->conns[i].weight)) return false;
    return true;
}

/* Fitness 1 / (1 + MSE) over the training sequences and the validation metrics. With
 * train_steps, the phenotype is trained first and its weights written back (clamped to the
 * genome's ranges) into a copy of g, which replaces g when Lamarckian and write_back: the
 * fitness is always that of a genome, run by the flat program (or the task's executor).
 * Training that diverged (a non-finite loss or weight) leaves g as it was and scores 0, the
 * limit of 1 / (1 + MSE): no genome with non-finite genes enters the population. */
static otc_status seq_evaluate_impl(const otc_neat_task *task, const otc_neat_config *c,
                                    otc_neat_genome *g, uint64_t seed, double *fitness,
                                    double *val_mse, double *val_acc, bool write_back,
                                    otc_neat_eval *behaviour) {
    (void)behaviour; /* sequences give none */
    seq_ctx *x = task->ctx;
    otc_neat_genome *own = NULL;
    const otc_neat_genome *run = g;
    otc_status s = OTC_OK;
    if (c->train_steps > 0) {
        otc_neat_phenotype *ph = NULL;
        bool diverged = false;
        s = otc_neat_phenotype_build(g, c, &ph);
        if (s == OTC_OK) s = train(c, x, ph, seed, &diverged);
        if (s == OTC_OK && !(own = otc_neat_genome_copy(g)))
            s = otc_fail(OTC_ERR_NOMEM, "out of memory evaluating a genome");
        if (s == OTC_OK) s = otc_neat_phenotype_write_back(ph, own, c);
        otc_neat_phenotype_free(ph);
        if (s == OTC_OK && (diverged || !genome_finite(own))) {
            otc_neat_genome_free(own);
            *fitness = 0;
            *val_mse = INFINITY;
            *val_acc = 0;
            return OTC_OK;
        }
        if (s == OTC_OK && write_back && c->lamarckian) {
            s = otc_neat_genome_copy_into(g, own);
        } else {
            run = own;
        }
    }
    otc_neat_runner r;
    if (s == OTC_OK && (s = otc_neat_runner_open(task, c, run, &r)) == OTC_OK) {
        double mse = 0, acc = 0;
        s = metrics(x, &r, &x->train_blocks, &mse, &acc);
        *fitness = 1.0 / (1.0 + mse);
        if (s == OTC_OK) s = metrics(x, &r, &x->val_blocks, val_mse, val_acc);
        otc_neat_runner_close(&r);
    }
    otc_neat_genome_free(own);
    return s;
}

/* Row r counts towards fitness and training. */
static bool counted(const seq_ctx *x, const bool *is_last, int r) {
    return !x->last || is_last[r];
}

/* Targets in the network's output form (classification: the counted rows' class indices
 * checked, then one-hot, or 0/1 for two classes; rows that do not count get zeros); n_out
 * set. Errors name the file and line. */
static otc_status to_output_form(seq_ctx *x, otc_seq_dataset *s, const char *path) {
    otc_dataset *src = s->data;
    if (x->regression) {
        x->n_out = src->n_targets;
        return OTC_OK;
    }
    if (src->n_targets != 1)
        return otc_fail(OTC_ERR_CONFIG, "[Task] targets: classification takes one target column");
    bool *is_last = calloc((size_t)src->rows + 1, sizeof *is_last);
    if (!is_last) return otc_fail(OTC_ERR_NOMEM, "out of memory for the sequence task");
    for (int i = 0; i < s->n; i++) is_last[s->start[i] + s->len[i] - 1] = true;
    int max = 0;
    for (int r = 0; r < src->rows; r++) {
        if (!counted(x, is_last, r)) continue;
        float v = src->y[r];
        if (!(v >= 0 && v < 1000 && v == floorf(v))) {
            free(is_last);
            return otc_fail(OTC_ERR_FORMAT, "%s:%d: class label %g is not an integer in [0, 1000)",
                            path, src->lines ? src->lines[r] : r + 1, (double)v);
        }
        if ((int)v > max) max = (int)v;
    }
    int classes = max + 1 < 2 ? 2 : max + 1;
    x->n_out = classes == 2 ? 1 : classes;
    otc_dataset *dst = otc_dataset_new(src->rows, src->n_features, x->n_out);
    if (!dst) {
        free(is_last);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for the sequence task");
    }
    memcpy(dst->x, src->x, sizeof *dst->x * (size_t)src->rows * (size_t)src->n_features);
    memset(dst->y, 0, sizeof *dst->y * (size_t)src->rows * (size_t)x->n_out);
    for (int r = 0; r < src->rows; r++) {
        if (!counted(x, is_last, r)) continue;
        int lab = (int)src->y[r];
        if (x->n_out == 1)
            dst->y[r] = (float)lab;
        else
            dst->y[r * x->n_out + lab] = 1;
    }
    free(is_last);
    otc_dataset_free(src);
    s->data = dst;
    return OTC_OK;
}

otc_status otc_neat_seq_task_create(const char *path, const otc_neat_config *c,
                                    otc_neat_task **out) {
    if (c->feed_forward)
        return otc_fail(OTC_ERR_CONFIG,
                        "[DefaultGenome] feed_forward: the sequence task ([Task] sequence = %s) "
                        "needs recurrent genomes: set feed_forward = false",
                        c->sequence);
    otc_csv_options o = {.header = c->csv_header,
                         .targets = c->targets[0] ? c->targets : NULL,
                         .last_target = !c->targets[0],
                         .sequence = c->sequence};
    otc_seq_dataset *d = NULL;
    otc_status s = otc_seq_csv_load(path, &o, &d);
    if (s == OTC_OK) s = otc_seq_dataset_check(d, path);
    if (s != OTC_OK) {
        otc_seq_dataset_free(d);
        return s;
    }
    seq_ctx *x = calloc(1, sizeof *x);
    otc_neat_task *t = calloc(1, sizeof *t);
    if (!x || !t) {
        s = otc_fail(OTC_ERR_NOMEM, "out of memory for the sequence task");
        goto fail;
    }
    x->score = seq_evaluate_impl;
    x->regression = c->regression;
    x->last = c->sequence_last;
    x->n_features = d->data->n_features;
    if (x->n_features < 1) {
        s = otc_fail(OTC_ERR_FORMAT, "%s: needs a feature column besides the target and sequence",
                     path);
        goto fail;
    }
    if (d->n < 2) {
        s = otc_fail(OTC_ERR_FORMAT,
                     "%s: [Task] sequence = %s gives %d sequence(s); the task needs at least two "
                     "(training and validation)",
                     path, c->sequence, d->n);
        goto fail;
    }
    if ((s = to_output_form(x, d, path)) != OTC_OK) goto fail;
    if (c->num_inputs != x->n_features) {
        s = otc_fail(OTC_ERR_CONFIG,
                     "[DefaultGenome] num_inputs: %s has %d feature columns, the config says %d",
                     path, x->n_features, c->num_inputs);
        goto fail;
    }
    if (c->num_outputs != x->n_out) {
        s = otc_fail(OTC_ERR_CONFIG,
                     "[DefaultGenome] num_outputs: %s needs %d output(s), the config says %d", path,
                     x->n_out, c->num_outputs);
        goto fail;
    }
    /* A fixed split seed, by sequence: the data are part of the task, not of the run. */
    if ((s = otc_seq_dataset_split(d, (float)c->validation_fraction, 12345, &x->train, &x->val)) !=
        OTC_OK)
        goto fail;
    if (x->val->n < 1 || x->train->n < 1) {
        s = otc_fail(OTC_ERR_CONFIG,
                     "[Task] validation_fraction: leaves an empty split of the %d "
                     "sequences",
                     d->n);
        goto fail;
    }
    if ((s = otc_standardizer_fit(x->train->data, &x->st)) == OTC_OK) {
        s = otc_standardizer_apply(&x->st, x->train->data);
        if (s == OTC_OK) s = otc_standardizer_apply(&x->st, x->val->data);
    }
    if (s == OTC_OK) s = make_blocks(x->train, &x->train_blocks);
    if (s == OTC_OK) s = make_blocks(x->val, &x->val_blocks);
    if (s != OTC_OK) goto fail;
    otc_seq_dataset_free(d);
    snprintf(t->name, sizeof t->name, "csv");
    t->n_inputs = c->num_inputs;
    t->n_outputs = c->num_outputs;
    t->needs_feed_forward = false;
    t->input_mean = x->st.mean;
    t->input_std = x->st.std;
    t->evaluate = otc_neat_scored_evaluate;
    t->confirm = otc_neat_scored_confirm;
    t->score_name = x->regression ? "val_mse" : "val_accuracy";
    t->destroy = seq_destroy;
    t->ctx = x;
    *out = t;
    return OTC_OK;
fail:
    otc_seq_dataset_free(d);
    if (t) {
        t->ctx = x;
        seq_destroy(t);
        free(t);
    } else {
        free(x);
    }
    return s;
}
