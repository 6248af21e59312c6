/* The csv task: supervised classification or regression from a CSV file, with the hybrid
 * evolve <-> train loop (Adam on mini-batches before the fitness is taken, trained weights
 * written back into the genome when Lamarckian). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"
#include "otc/data.h"
#include "otc/optim.h"

/* An output buffer [rows, n_out] (the larger split's rows). */
typedef struct rows_buf {
    struct rows_buf *next;
    float y[];
} rows_buf;

typedef struct {
    otc_neat_score_fn score;        /* first: otc_neat_scored_evaluate reads it */
    otc_dataset *train, *val;       /* standardised x; y already in output form (one-hot / 0-1) */
    int *train_labels, *val_labels; /* classification */
    int n_classes;
    bool regression;
    int n_out;
    otc_standardizer st; /* fitted on train; the task's input_mean / input_std */
    /* Output buffers of finished evaluations, for the next ones: evaluations allocate one
     * only when more run at once than ever before. */
    pthread_mutex_t lock;
    bool lock_made;
    rows_buf *spare;
} csv_ctx;

/* A free output buffer; NULL when out of memory. */
static rows_buf *take_rows(csv_ctx *x) {
    pthread_mutex_lock(&x->lock);
    rows_buf *b = x->spare;
    if (b) x->spare = b->next;
    pthread_mutex_unlock(&x->lock);
    if (b) return b;
    int rows = x->train->rows > x->val->rows ? x->train->rows : x->val->rows;
    return malloc(sizeof *b + sizeof *b->y * ((size_t)rows * (size_t)x->n_out + 1));
}

static void give_rows(csv_ctx *x, rows_buf *b) {
    pthread_mutex_lock(&x->lock);
    b->next = x->spare;
    x->spare = b;
    pthread_mutex_unlock(&x->lock);
}

static void csv_destroy(otc_neat_task *t) {
    csv_ctx *x = t->ctx;
    if (!x) return;
    while (x->spare) {
        rows_buf *b = x->spare;
        x->spare = b->next;
        free(b);
    }
    if (x->lock_made) pthread_mutex_destroy(&x->lock);
    otc_dataset_free(x->train);
    otc_dataset_free(x->val);
    otc_standardizer_free(&x->st);
    free(x->train_labels);
    free(x->val_labels);
    free(x);
    t->ctx = NULL;
}

/* Outputs for every row of d into y [rows, n_out]; target_in >= 0 is the training graph's
 * target Input, which must be fed too. */
static otc_status forward_rows(otc_executor *ex, const otc_neat_phenotype *ph, otc_id target_in,
                               const otc_dataset *d, float *y) {
    otc_status s = otc_exec_set_input(ex, ph->input, d->x, d->rows);
    if (s == OTC_OK && target_in >= 0) s = otc_exec_set_input(ex, target_in, d->y, d->rows);
    if (s == OTC_OK) s = otc_exec_forward(ex);
    for (int k = 0; k < ph->n_outputs && s == OTC_OK; k++) {
        const float *v;
        s = otc_exec_value(ex, otc_graph_output(ph->graph, k), &v, NULL);
        if (s == OTC_OK)
            for (int r = 0; r < d->rows; r++) y[r * ph->n_outputs + k] = v[r];
    }
    return s;
}

static int predict(const csv_ctx *x, const float *y) {
    if (x->n_out == 1) return y[0] > 0.5f;
    int best = 0;
    for (int k = 1; k < x->n_out; k++)
        if (y[k] > y[best]) best = k;
    return best;
}

/* MSE against the output-form targets, and accuracy (classification). */
static void metrics(const csv_ctx *x, const otc_dataset *d, const int *labels, const float *y,
                    double *mse, double *acc) {
    double se = 0;
    int right = 0;
    for (int r = 0; r < d->rows; r++) {
        for (int k = 0; k < x->n_out; k++) {
            double e = (double)y[r * x->n_out + k] - d->y[r * x->n_out + k];
            se += isfinite(e) ? e * e : 1e6;
        }
        if (labels) right += predict(x, y + r * x->n_out) == labels[r];
    }
    *mse = se / ((double)d->rows * x->n_out);
    *acc = labels ? (double)right / d->rows : 0;
}

otc_status otc_neat_hybrid_loss(otc_neat_phenotype *ph, int width, otc_id *target, otc_id *loss) {
    otc_graph *g = ph->graph;
    otc_id outs[256], t = otc_input(g, "target", otc_shape_2d(OTC_BATCH, width));
    int n_out = ph->n_outputs < 256 ? ph->n_outputs : 256;
    for (int k = 0; k < n_out; k++) outs[k] = otc_graph_output(g, k);
    otc_id pred = n_out == 1 ? outs[0] : otc_concat(g, n_out, outs, 1);
    *loss = t >= 0 && pred >= 0 ? otc_mse(g, pred, t) : -1;
    *target = t;
    if (*loss < 0) return otc_fail_context(OTC_ERR_SHAPE, "hybrid training graph");
    return OTC_OK;
}

/* Adam for train_steps mini-batches on the training rows. Adds a target Input and an MSE loss
 * to the phenotype's graph; *target_in gets the Input's id. */
static otc_status train(const otc_neat_task *task, const otc_neat_config *c, csv_ctx *x,
                        otc_neat_phenotype *ph, uint64_t seed, otc_executor **ex_out,
                        otc_id *target_in) {
    otc_id t, loss;
    otc_status hs = otc_neat_hybrid_loss(ph, x->n_out, &t, &loss);
    if (hs != OTC_OK) return hs;
    otc_exec_options o = {.inference = false};
    otc_neat_executor_fn make = task->make_executor ? task->make_executor : otc_interpreter_new;
    otc_executor *ex = make(ph->graph, &o);
    if (!ex) return otc_fail_context(OTC_ERR_STATE, "hybrid training executor");
    otc_optim_config oc = otc_optim_defaults(OTC_OPTIM_ADAM);
    oc.lr = (float)c->learning_rate;
    otc_optimizer *opt = otc_optimizer_new(&oc);
    otc_dataloader *dl = otc_dataloader_new(x->train, c->batch_size, true, false, seed);
    otc_status s = opt && dl ? OTC_OK : OTC_ERR_NOMEM;
    for (int step = 0; step < c->train_steps && s == OTC_OK; step++) {
        const float *bx, *by;
        int n = otc_dataloader_next(dl, &bx, &by);
        if (n == 0) n = otc_dataloader_next(dl, &bx, &by); /* a new epoch */
        float lv = 0;
        s = otc_exec_set_input(ex, ph->input, bx, n);
        if (s == OTC_OK) s = otc_exec_set_input(ex, t, by, n);
        if (s == OTC_OK) s = otc_exec_train_step(ex, loss, opt, &lv);
        if (s == OTC_OK && !isfinite(lv)) break; /* diverged: fitness will show it */
    }
    if (s == OTC_OK) s = otc_exec_sync_params(ex);
    otc_dataloader_free(dl);
    otc_optimizer_free(opt);
    if (s != OTC_OK) {
        otc_exec_free(ex);
        return s;
    }
    *ex_out = ex;
    *target_in = t;
    return OTC_OK;
}

/* The behaviour (novelty search): the outputs on the first training rows, task->n_bc of
 * them (non-finite outputs as 0.5). */
static void keep_behaviour(const otc_neat_task *task, const float *y, otc_neat_eval *behaviour) {
    if (!behaviour || task->n_bc <= 0) return;
    behaviour->n_bc = task->n_bc;
    for (int i = 0; i < task->n_bc; i++) behaviour->bc[i] = isfinite(y[i]) ? y[i] : 0.5f;
}

static otc_status csv_evaluate_impl(const otc_neat_task *task, const otc_neat_config *c,
                                    otc_neat_genome *g, uint64_t seed, double *fitness,
                                    double *val_mse, double *val_acc, bool write_back,
                                    otc_neat_eval *behaviour) {
    csv_ctx *x = task->ctx;
    otc_neat_phenotype *ph = NULL;
    otc_executor *ex = NULL;
    otc_id target_in = -1;
    rows_buf *buf = take_rows(x);
    if (!buf) return otc_fail(OTC_ERR_NOMEM, "out of memory evaluating a genome");
    float *y = buf->y;
    if (c->train_steps <= 0 && !task->make_executor) {
        /* No training and no executor asked for: the flat program, no graph. */
        otc_neat_runner r;
        otc_status s = otc_neat_runner_open(task, c, g, &r);
        double mse = 0, acc = 0;
        if (s == OTC_OK) s = otc_neat_runner_forward(&r, x->train->x, x->train->rows, y);
        if (s == OTC_OK) {
            metrics(x, x->train, x->train_labels, y, &mse, &acc);
            *fitness = 1.0 / (1.0 + mse);
            keep_behaviour(task, y, behaviour);
            s = otc_neat_runner_forward(&r, x->val->x, x->val->rows, y);
        }
        if (s == OTC_OK) metrics(x, x->val, x->val_labels, y, val_mse, val_acc);
        otc_neat_runner_close(&r);
        give_rows(x, buf);
        return s;
    }
    otc_status s = otc_neat_phenotype_build(g, c, &ph);
    if (s == OTC_OK && c->train_steps > 0) {
        s = train(task, c, x, ph, seed, &ex, &target_in);
        if (s == OTC_OK && write_back && c->lamarckian) s = otc_neat_phenotype_write_back(ph, g, c);
    } else if (s == OTC_OK) {
        otc_exec_options o = {.inference = true};
        otc_neat_executor_fn make = task->make_executor ? task->make_executor : otc_interpreter_new;
        ex = make(ph->graph, &o);
        if (!ex) s = otc_fail_context(OTC_ERR_STATE, "phenotype executor");
    }
    double mse = 0, acc = 0;
    if (s == OTC_OK) s = forward_rows(ex, ph, target_in, x->train, y);
    if (s == OTC_OK) {
        metrics(x, x->train, x->train_labels, y, &mse, &acc);
        *fitness = 1.0 / (1.0 + mse);
        keep_behaviour(task, y, behaviour);
        s = forward_rows(ex, ph, target_in, x->val, y);
    }
    if (s == OTC_OK) metrics(x, x->val, x->val_labels, y, val_mse, val_acc);
    otc_exec_free(ex);
    otc_neat_phenotype_free(ph);
    give_rows(x, buf);
    return s;
}

/* The score function is the first member of the task's context (csv_ctx, seq_ctx). */
static otc_neat_score_fn score_of(const otc_neat_task *task) {
    return *(const otc_neat_score_fn *)task->ctx;
}

otc_status otc_neat_scored_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                    otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    double fitness = 0, mse = 0, acc = 0;
    otc_status s = score_of(task)(task, c, g, seed, &fitness, &mse, &acc, true, out);
    if (s != OTC_OK) return s;
    out->fitness = fitness;
    out->solved = c->regression ? mse <= c->target_mse : acc >= c->target_accuracy;
    return OTC_OK;
}

/* Reports the champion's validation score; success is decided per genome in evaluate. */
otc_status otc_neat_scored_confirm(const otc_neat_task *task, const otc_neat_config *c,
                                   const otc_neat_genome *g, bool *solved, double *score) {
    double fitness = 0, mse = 0, acc = 0;
    /* Lamarckian genomes already hold their trained weights: measure them as they are. */
    otc_neat_config pure = *c;
    if (c->lamarckian) pure.train_steps = 0;
    /* Without write_back the score functions only read the genome (no copy to allocate). */
    otc_status s =
        score_of(task)(task, &pure, (otc_neat_genome *)g, 0, &fitness, &mse, &acc, false, NULL);
    if (s != OTC_OK) return s;
    *solved = false;
    *score = c->regression ? mse : acc;
    return OTC_OK;
}

/* Replace the dataset's targets by the network's output form; labels get the classes. */
static otc_status to_output_form(csv_ctx *x, otc_dataset **d, int **labels) {
    otc_dataset *src = *d;
    if (x->regression) return OTC_OK;
    otc_dataset *dst = otc_dataset_new(src->rows, src->n_features, x->n_out);
    int *lab = malloc(sizeof *lab * (size_t)src->rows + 1);
    if (!dst || !lab) {
        otc_dataset_free(dst);
        free(lab);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for the csv task");
    }
    memcpy(dst->x, src->x, sizeof *dst->x * (size_t)src->rows * (size_t)src->n_features);
    memset(dst->y, 0, sizeof *dst->y * (size_t)src->rows * (size_t)x->n_out);
    for (int r = 0; r < src->rows; r++) {
        lab[r] = (int)src->y[r];
        if (x->n_out == 1)
            dst->y[r] = (float)lab[r];
        else
            dst->y[r * x->n_out + lab[r]] = 1;
    }
    otc_dataset_free(src);
    *d = dst;
    *labels = lab;
    return OTC_OK;
}

otc_status otc_neat_csv_task_create(const char *path, const otc_neat_config *c,
                                    otc_neat_task **out) {
    if (c->sequence[0]) return otc_neat_seq_task_create(path, c, out);
    if (c->ctrnn) /* its rows are scored in batches, each row on its own */
        return otc_fail(OTC_ERR_CONFIG, "[DefaultGenome] ctrnn: the csv task scores rows on their "
                                        "own; a CTRNN runs through time: set [Task] sequence to "
                                        "the sequence-id column");
    if (c->train_steps > 0 && !c->feed_forward)
        return otc_fail(OTC_ERR_CONFIG, "[Hybrid] train_steps: hybrid training of recurrent "
                                        "genomes (feed_forward = false) is through time, on "
                                        "sequences: set [Task] sequence to the sequence-id column");
    /* No targets named: the last column is the target. */
    otc_csv_options o = {.header = c->csv_header,
                         .targets = c->targets[0] ? c->targets : NULL,
                         .last_target = !c->targets[0]};
    otc_dataset *d = NULL;
    otc_status s = otc_csv_load(path, &o, &d);
    if (s != OTC_OK) return s;
    if (d->n_features < 1) {
        otc_dataset_free(d);
        return otc_fail(OTC_ERR_FORMAT, "%s: needs at least two columns", path);
    }
    csv_ctx *x = calloc(1, sizeof *x);
    otc_neat_task *t = calloc(1, sizeof *t);
    if (!x || !t) {
        s = otc_fail(OTC_ERR_NOMEM, "out of memory for the csv task");
        goto fail;
    }
    x->score = csv_evaluate_impl;
    x->regression = c->regression;
    if (pthread_mutex_init(&x->lock, NULL) != 0) {
        s = otc_fail(OTC_ERR_NOMEM, "no mutex for the csv task");
        goto fail;
    }
    x->lock_made = true;
    if (d->rows < 4) {
        s = otc_fail(OTC_ERR_FORMAT, "%s: too few rows (%d)", path, d->rows);
        goto fail;
    }
    if (x->regression) {
        x->n_out = d->n_targets;
    } else {
        if (d->n_targets != 1) {
            s = otc_fail(OTC_ERR_CONFIG, "[Task] targets: classification takes one target column");
            goto fail;
        }
        int max = 0;
        for (int r = 0; r < d->rows; r++) {
            float v = d->y[r];
            if (!(v >= 0 && v < 1000 && v == floorf(v))) {
                s = otc_fail(OTC_ERR_FORMAT,
                             "%s: row %d: class label %g is not an integer in [0, 1000)", path,
                             r + 1, (double)v);
                goto fail;
            }
            if ((int)v > max) max = (int)v;
        }
        x->n_classes = max + 1 < 2 ? 2 : max + 1;
        x->n_out = x->n_classes == 2 ? 1 : x->n_classes;
    }
    if (c->num_inputs != d->n_features) {
        s = otc_fail(OTC_ERR_CONFIG,
                     "[DefaultGenome] num_inputs: %s has %d feature columns, the "
                     "config says %d",
                     path, d->n_features, c->num_inputs);
        goto fail;
    }
    if (c->num_outputs != x->n_out) {
        s = otc_fail(OTC_ERR_CONFIG,
                     "[DefaultGenome] num_outputs: %s needs %d output(s), the "
                     "config says %d",
                     path, x->n_out, c->num_outputs);
        goto fail;
    }
    /* A fixed split seed: the data are part of the task, not of the evolutionary run. */
    if ((s = otc_dataset_split(d, (float)c->validation_fraction, 12345, &x->train, &x->val)) !=
        OTC_OK)
        goto fail;
    if ((s = otc_standardizer_fit(x->train, &x->st)) == OTC_OK) {
        s = otc_standardizer_apply(&x->st, x->train);
        if (s == OTC_OK) s = otc_standardizer_apply(&x->st, x->val);
    }
    if (s == OTC_OK) s = to_output_form(x, &x->train, &x->train_labels);
    if (s == OTC_OK) s = to_output_form(x, &x->val, &x->val_labels);
    if (s != OTC_OK) goto fail;
    if (x->val->rows < 1 || x->train->rows < 1) {
        s = otc_fail(OTC_ERR_CONFIG, "[Task] validation_fraction: leaves an empty split");
        goto fail;
    }
    otc_dataset_free(d);
    snprintf(t->name, sizeof t->name, "csv");
    t->n_inputs = c->num_inputs;
    t->n_outputs = c->num_outputs;
    t->needs_feed_forward = true;
    t->input_mean = x->st.mean;
    t->input_std = x->st.std;
    t->evaluate = otc_neat_scored_evaluate;
    t->confirm = otc_neat_scored_confirm;
    /* The behaviour: the outputs on as many of the first training rows as fit (whole rows). */
    int per = OTC_NEAT_SHORT_BC / (t->n_outputs > 0 ? t->n_outputs : 1);
    if (per > x->train->rows) per = (int)x->train->rows;
    t->n_bc = per * t->n_outputs;
    t->novelty_threshold = 0.1;
    t->score_name = x->regression ? "val_mse" : "val_accuracy";
    t->destroy = csv_destroy;
    t->ctx = x;
    *out = t;
    return OTC_OK;
fail:
    otc_dataset_free(d);
    if (t) {
        t->ctx = x;
        csv_destroy(t);
        free(t);
    } else {
        free(x);
    }
    return s;
}
