/* `otc train MODEL.otm --data FILE.csv --target COLS --out TRAINED.otm`: trains a model's
 * parameters by gradient descent. The loss is chosen from the model's output and the
 * targets, added to the graph for training and cut off again before the model is saved. A
 * recurrent model trains on sequences of rows (time steps) by backpropagation through time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "otc/limits.h"
#include "otc/neat.h"
#include "otc/otc.h"
#include "otc/plot.h"
#include "otc/text.h"
#ifdef OTC_HAVE_JIT
#include "otc/jit.h"
#endif

const char otc_cmd_train_summary[] = "train a model's weights on a CSV file";

typedef enum { LOSS_AUTO, LOSS_MSE, LOSS_BCE, LOSS_CE } loss_kind;
static const char *const loss_names[] = {"auto", "mse", "bce", "ce"};

typedef struct {
    otc_graph *g;
    otc_executor *ex;
    otc_id input, target, pred, loss;
    loss_kind kind;
    int width;       /* output columns */
    int n_outputs;   /* > 1: pred is a Concat of them, read output by output (a compiled
                        backend serves outputs, not intermediate values) */
    float *gathered; /* scratch for those rows */
    size_t gathered_cap;
} trainer;

/* The prediction rows of the last forward, [rows, width]. */
static otc_status pred_values(trainer *t, int rows, const float **out) {
    if (t->n_outputs <= 1) return otc_exec_value(t->ex, t->pred, out, NULL);
    size_t need = (size_t)rows * (size_t)t->width;
    if (need > t->gathered_cap) {
        float *g = realloc(t->gathered, need * sizeof *g);
        if (!g) return otc_fail(OTC_ERR_NOMEM, "out of memory");
        t->gathered = g;
        t->gathered_cap = need;
    }
    int col = 0;
    for (int k = 0; k < t->n_outputs; k++) {
        otc_id o = otc_graph_output(t->g, k);
        int w = otc_cli_row_width(t->g, o);
        const float *v;
        otc_status st = otc_exec_value(t->ex, o, &v, NULL);
        if (st != OTC_OK) return st;
        for (int r = 0; r < rows; r++)
            memcpy(t->gathered + (size_t)r * (size_t)t->width + (size_t)col,
                   v + (size_t)r * (size_t)w, (size_t)w * sizeof *v);
        col += w;
    }
    *out = t->gathered;
    return OTC_OK;
}

/* Does this node already produce probabilities (so BCE applies to it directly)? */
static bool is_probability(const otc_graph *g, otc_id id) {
    const otc_node *n = otc_graph_node(g, id);
    if (n->op == OTC_OP_SIGMOID) return true;
    if (n->op == OTC_OP_CONCAT) {
        for (int j = 0; j < n->n_inputs; j++)
            if (!is_probability(g, n->inputs[j])) return false;
        return n->n_inputs > 0;
    }
    return n->op == OTC_OP_NEURON && (n->act == OTC_ACT_SIGMOID || n->act == OTC_ACT_STEEP_SIGMOID);
}

/* First data row (1-based) whose class label is not an integer in [0, classes), or 0. */
static int bad_label_row(const otc_dataset *d, int classes) {
    for (int r = 0; r < d->rows; r++) {
        float y = d->y[(size_t)r * (size_t)d->n_targets];
        if (!(y >= 0) || y >= (float)classes || y != floorf(y)) return r + 1;
    }
    return 0;
}

static int bad_probability_row(const otc_dataset *d) {
    for (size_t i = 0; i < (size_t)d->rows * (size_t)d->n_targets; i++)
        if (!(d->y[i] >= 0 && d->y[i] <= 1)) return (int)(i / (size_t)d->n_targets) + 1;
    return 0;
}

/* What the loss compares with the targets: the output, or for a model with several outputs
 * (NEAT marks each output neuron) their columns side by side, through a Concat that is cut
 * off with the loss before saving. */
static int pick_prediction(trainer *t, const char *model, char *name, size_t len) {
    int n_out = otc_graph_output_count(t->g);
    t->n_outputs = n_out;
    size_t o = 0;
    name[0] = '\0';
    for (int k = 0; k < n_out && o + 4 < len; k++) {
        otc_id id = otc_graph_output(t->g, k);
        char one[64];
        const char *nm = otc_graph_node(t->g, id)->name;
        if (nm)
            otc_cli_printable(nm, one, sizeof one);
        else
            snprintf(one, sizeof one, "#%d", (int)id);
        int n = snprintf(name + o, len - o, "%s%s", k ? "+" : "", one);
        if (n < 0 || (size_t)n >= len - o) break;
        o += (size_t)n;
        if (otc_cli_row_width(t->g, id) < 1)
            return otc_cli_error("train", "%s: output '%s' has no batch dimension", model, one);
    }
    if (n_out == 1) {
        t->pred = otc_graph_output(t->g, 0);
    } else {
        otc_id *outs = malloc((size_t)n_out * sizeof *outs);
        if (!outs) return otc_cli_error("train", "out of memory");
        for (int k = 0; k < n_out; k++) outs[k] = otc_graph_output(t->g, k);
        t->pred = otc_concat(t->g, n_out, outs, 1);
        free(outs);
        if (t->pred < 0)
            return otc_cli_error("train", "%s: cannot put the %d outputs side by side: %s", model,
                                 n_out, otc_last_error());
    }
    t->width = otc_cli_row_width(t->g, t->pred);
    return 0;
}

/* Picks the loss for --loss auto and checks that the targets fit the chosen one. */
static int choose_loss(trainer *t, const otc_dataset *d, const char *data_path,
                       const char *out_name) {
    int C = t->width, T = d->n_targets;
    char sd[512];
    otc_cli_printable(data_path, sd, sizeof sd);
    if (t->kind == LOSS_AUTO) {
        if (C > 1 && T == 1 && !bad_label_row(d, C))
            t->kind = LOSS_CE;
        else if (T == C && is_probability(t->g, t->pred) && !bad_probability_row(d))
            t->kind = LOSS_BCE;
        else if (T == C)
            t->kind = LOSS_MSE;
        else if (C > 1 && T == 1)
            t->kind = LOSS_CE; /* reported below with the row at fault */
        else
            return otc_cli_error("train",
                                 "output '%s' has %d column%s but --target names %d: give one "
                                 "column of class indices 0..%d for classification, or %d "
                                 "target columns for regression",
                                 out_name, C, C == 1 ? "" : "s", T, C - 1, C);
    }
    if (t->kind == LOSS_CE) {
        if (C < 2)
            return otc_cli_error("train",
                                 "--loss ce needs an output with at least 2 columns; "
                                 "'%s' has %d",
                                 out_name, C);
        if (T != 1)
            return otc_cli_error("train",
                                 "--loss ce needs one target column of class indices, "
                                 "not %d",
                                 T);
        int r = bad_label_row(d, C);
        if (r)
            return otc_cli_error("train",
                                 "%s: data row %d: class %g is not an integer in 0..%d "
                                 "(output '%s' has %d columns)",
                                 sd, r, (double)d->y[(size_t)(r - 1)], C - 1, out_name, C);
        return 0;
    }
    if (T != C)
        return otc_cli_error("train",
                             "--loss %s needs as many target columns as output "
                             "columns: --target names %d, output '%s' has %d",
                             loss_names[t->kind], T, out_name, C);
    if (t->kind == LOSS_BCE) {
        if (!is_probability(t->g, t->pred))
            return otc_cli_error("train", "--loss bce needs a sigmoid output; '%s' is %s", out_name,
                                 otc_op_get(otc_graph_node(t->g, t->pred)->op)->name);
        int r = bad_probability_row(d);
        if (r)
            return otc_cli_error("train", "%s: data row %d: a BCE target is outside [0, 1]", sd, r);
    }
    return 0;
}

/* Adds the Input "target" (or target_1, ...) and the loss node. */
static int add_loss(trainer *t) {
    char name[32] = "target";
    for (int i = 1; otc_graph_find(t->g, name) >= 0 && i < 1000; i++)
        snprintf(name, sizeof name, "target_%d", i);
    otc_id logits = t->pred;
    otc_shape ts = otc_graph_node(t->g, t->pred)->shape;
    if (t->kind == LOSS_CE) {
        ts = otc_shape_2d(OTC_BATCH, 1);
        /* CE takes logits: a model that ends in softmax gives them one node earlier */
        const otc_node *p = otc_graph_node(t->g, t->pred);
        if (p->op == OTC_OP_SOFTMAX) logits = p->inputs[0];
    }
    t->target = otc_input(t->g, name, ts);
    if (t->target < 0) return otc_cli_error("train", "%s", otc_last_error());
    switch (t->kind) {
    case LOSS_CE:
        t->loss = otc_softmax_ce(t->g, logits, t->target);
        break;
    case LOSS_BCE:
        t->loss = otc_bce(t->g, t->pred, t->target);
        break;
    default:
        t->loss = otc_mse(t->g, t->pred, t->target);
        break;
    }
    if (t->loss < 0) return otc_cli_error("train", "cannot add the loss: %s", otc_last_error());
    return 0;
}

/* Correct predictions in a batch: argmax for CE, a 0.5 threshold per element for BCE. */
static long correct_in(const trainer *t, const float *out, const float *y, int rows) {
    long ok = 0;
    for (int r = 0; r < rows; r++) {
        const float *o = out + (size_t)r * (size_t)t->width;
        if (t->kind == LOSS_CE) {
            int best = 0;
            for (int j = 1; j < t->width; j++)
                if (o[j] > o[best]) best = j;
            ok += best == (int)y[r];
        } else {
            for (int j = 0; j < t->width; j++)
                ok += (o[j] >= 0.5f) == (y[(size_t)r * (size_t)t->width + (size_t)j] >= 0.5f);
        }
    }
    return ok;
}

static long accuracy_units(const trainer *t, int rows) {
    return t->kind == LOSS_CE ? rows : (long)rows * t->width;
}

/* Mean loss (and accuracy for classification) over a dataset, in chunks. */
static otc_status evaluate(trainer *t, const otc_dataset *d, double *loss, double *acc) {
    double sum = 0;
    long ok = 0;
    const int chunk = 512;
    for (int r0 = 0; r0 < d->rows; r0 += chunk) {
        int rows = d->rows - r0 < chunk ? d->rows - r0 : chunk;
        const float *x = d->x + (size_t)r0 * (size_t)d->n_features;
        const float *y = d->y + (size_t)r0 * (size_t)d->n_targets;
        const float *lv, *out;
        otc_exec_reset_state(t->ex);
        otc_status st;
        if ((st = otc_exec_set_input(t->ex, t->input, x, rows)) ||
            (st = otc_exec_set_input(t->ex, t->target, y, rows)) ||
            (st = otc_exec_forward(t->ex)) || (st = otc_exec_value(t->ex, t->loss, &lv, NULL)) ||
            (st = pred_values(t, rows, &out)))
            return st;
        sum += (double)lv[0] * rows; /* every loss is a mean over rows */
        if (t->kind != LOSS_MSE) ok += correct_in(t, out, y, rows);
    }
    *loss = sum / d->rows;
    *acc = t->kind == LOSS_MSE ? NAN : (double)ok / (double)accuracy_units(t, d->rows);
    return OTC_OK;
}

/* ---- recurrent models: rows are time steps, batches are sequences of one length ---- */

/* A batch of B sequences of T steps (x, y step-major) from a reset state: forward every step,
 * and with opt train in chunks of bptt steps (state carried across chunks, the gradient cut at
 * their start), the loss being the mean over a chunk's steps. Adds the loss summed over steps
 * and rows to *sum, the steps times rows to *seen, correct answers to *ok; sets *bad to a
 * non-finite loss's step (1-based) and stops there. */
static otc_status seq_batch(trainer *t, otc_optimizer *opt, int bptt, float *weight, int T, int B,
                            const float *x, const float *y, int n_features, int n_targets,
                            double *sum, long *seen, long *ok, int *bad) {
    otc_status st;
    otc_exec_reset_state(t->ex);
    int chunk = opt ? bptt : T;
    for (int t0 = 0; t0 < T; t0 += chunk) {
        int k = T - t0 < chunk ? T - t0 : chunk;
        if (opt && (st = otc_exec_seq_begin(t->ex, k))) return st;
        for (int s = t0; s < t0 + k; s++) {
            const float *xs = x + (size_t)s * (size_t)B * (size_t)n_features;
            const float *ys = y + (size_t)s * (size_t)B * (size_t)n_targets;
            const float *lv, *pv;
            if ((st = otc_exec_set_input(t->ex, t->input, xs, B)) ||
                (st = otc_exec_set_input(t->ex, t->target, ys, B)) ||
                (st = otc_exec_forward(t->ex)) ||
                (st = otc_exec_value(t->ex, t->loss, &lv, NULL)) || (st = pred_values(t, B, &pv)))
                return st;
            if (!isfinite(lv[0])) {
                *bad = s + 1;
                *sum = lv[0];
                return OTC_OK;
            }
            *sum += (double)lv[0] * B; /* every loss is a mean over rows */
            *seen += B;
            if (t->kind != LOSS_MSE) *ok += correct_in(t, pv, ys, B);
        }
        if (opt) {
            for (int s = 0; s < k; s++) weight[s] = 1.0f / (float)k;
            otc_exec_zero_grad(t->ex);
            if ((st = otc_exec_seq_backward(t->ex, t->loss, weight)) ||
                (st = otc_exec_optimizer_step(t->ex, opt)))
                return st;
        }
    }
    return OTC_OK;
}

/* Mean loss per step (and accuracy) over the sequences of a loader. */
static otc_status seq_evaluate(trainer *t, otc_seq_loader *l, const otc_dataset *d, double *loss,
                               double *acc) {
    double sum = 0;
    long seen = 0, ok = 0;
    int T, B, bad = 0;
    const float *x, *y;
    while ((B = otc_seq_loader_next(l, &T, &x, &y, NULL)) > 0) {
        otc_status st = seq_batch(t, NULL, 0, NULL, T, B, x, y, d->n_features, d->n_targets, &sum,
                                  &seen, &ok, &bad);
        if (st) return st;
        if (bad) {
            while (otc_seq_loader_next(l, NULL, NULL, NULL, NULL) > 0) {
            } /* end the pass */
            *loss = sum;
            *acc = NAN;
            return OTC_OK;
        }
    }
    *loss = sum / (double)seen;
    *acc = t->kind == LOSS_MSE ? NAN : (double)ok / (double)accuracy_units(t, (int)seen);
    return OTC_OK;
}

static void put_number(cJSON *o, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
}

typedef struct {
    const char *data, *target, *optimizer, *sequence;
    int epochs, batch, rows, bptt; /* bptt 0: not recurrent; else steps per chunk */
    double lr, val_split, train_loss, val_loss, val_acc;
    uint64_t seed;
    loss_kind kind;
    bool standardize;
} run_facts;

/* names[0..n) joined by commas (the caller frees it), or NULL. */
static char *joined(char *const *names, int n) {
    otc_text t;
    otc_text_init(&t);
    for (int i = 0; i < n; i++) otc_text_printf(&t, "%s%s", i ? "," : "", names[i]);
    return otc_text_take(&t);
}

/* The "train" metadata saved with the model, for `otc summary` and for the record. */
static otc_status store_facts(otc_graph *g, const run_facts *f) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    const char *slash = strrchr(f->data, '/');
    cJSON_AddStringToObject(o, "data", slash ? slash + 1 : f->data);
    cJSON_AddStringToObject(o, "target", f->target);
    cJSON_AddNumberToObject(o, "rows", f->rows);
    cJSON_AddNumberToObject(o, "epochs", f->epochs);
    cJSON_AddNumberToObject(o, "batch", f->batch);
    cJSON_AddStringToObject(o, "optimizer", f->optimizer);
    cJSON_AddNumberToObject(o, "lr", f->lr);
    cJSON_AddStringToObject(o, "loss", loss_names[f->kind]);
    cJSON_AddNumberToObject(o, "seed", (double)f->seed);
    cJSON_AddNumberToObject(o, "val_split", f->val_split);
    if (f->sequence) cJSON_AddStringToObject(o, "sequence", f->sequence);
    if (f->bptt) cJSON_AddNumberToObject(o, "bptt", f->bptt);
    if (f->standardize) cJSON_AddBoolToObject(o, "standardize", true);
    put_number(o, "train_loss", f->train_loss);
    put_number(o, "val_loss", f->val_loss);
    put_number(o, "val_accuracy", f->val_acc);
    char *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!json) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    otc_status st = otc_graph_meta_set(g, "train", json);
    cJSON_free(json);
    return st;
}

static void print_epoch(int e, int epochs, double tl, double ta, double vl, double va, bool has_val,
                        double secs) {
    printf("epoch %*d/%d  train loss %.4f",
           epochs >= 100  ? 4
           : epochs >= 10 ? 2
                          : 1,
           e, epochs, tl);
    if (!isnan(ta)) printf("  acc %.3f", ta);
    if (has_val) {
        printf("  val loss %.4f", vl);
        if (!isnan(va)) printf("  acc %.3f", va);
    }
    if (secs < 1)
        printf("  (%.1f ms)\n", secs * 1e3);
    else
        printf("  (%.2f s)\n", secs);
    fflush(stdout);
}

/* Without --bptt a sequence is trained through in one piece, recording each of its steps: one
 * longer than that record holds (OTC_MAX_SEQ_STEPS) is refused here, naming it, with --bptt
 * as the way to train it in chunks. */
static int check_whole_sequences(const char *data, const otc_seq_dataset *sd) {
    for (int i = 0; i < sd->n; i++) {
        if (sd->len[i] <= OTC_MAX_SEQ_STEPS) continue;
        char sd_name[512], id[128];
        return otc_cli_error("train",
                             "%s: sequence '%s' has %d steps, more than the %d one pass "
                             "through time can record: give --bptt K (at most %d) to train it "
                             "K steps at a time",
                             otc_cli_printable(data, sd_name, sizeof sd_name),
                             otc_cli_printable(sd->ids[i], id, sizeof id), sd->len[i],
                             OTC_MAX_SEQ_STEPS, OTC_MAX_SEQ_STEPS);
    }
    return 0;
}

/* Milliseconds the JIT executor has spent compiling so far (0 for the interpreter). */
static double jit_compile_ms(const otc_executor *ex) {
#ifdef OTC_HAVE_JIT
    otc_jit_stats js;
    if (strcmp(otc_exec_backend(ex), "interpreter") && otc_jit_executor_stats(ex, &js) == OTC_OK)
        return js.compile_ms;
#else
    (void)ex;
#endif
    return 0;
}

int otc_cmd_train(int argc, char **argv) {
    const char *data = NULL, *target = NULL, *features = NULL, *out = NULL, *plot = NULL;
    const char *optimizer = "adam", *loss = "auto", *sequence = NULL, *train_only = NULL;
    int epochs = 20, batch = 32, bptt = 0; /* not given: whole sequences */
    double lr = 0.01, val_split = 0.2;
    uint64_t seed = 1;
    bool header = false, no_header = false, jit = false, standardize = false;
    const otc_opt opts[] = {
        {"--data", OTC_OPT_STRING, &data,
         "FILE.csv: training rows; or idx:DIR, IDX images and labels (DIR's train-* files, "
         "pixels scaled to [0, 1], --val-split held out from them)"},
        {"--target", OTC_OPT_STRING, &target, "COLS: target column(s), by name or 0-based index"},
        {"--features", OTC_OPT_STRING, &features, "COLS: input columns (default: the others)"},
        {"--out,--output,-o", OTC_OPT_STRING, &out, "FILE.otm: where to save the trained model"},
        {"--epochs", OTC_OPT_RANGE, OTC_RANGE(epochs, 1, 1000000),
         "N: passes over the training rows (default 20)"},
        {"--batch", OTC_OPT_RANGE, OTC_RANGE(batch, 1, 1 << 24),
         "B: rows per step (default 32); sequences per step for a recurrent model"},
        {"--sequence", OTC_OPT_STRING, &sequence,
         "COL: for a recurrent model, the column naming each row's sequence: consecutive rows "
         "with one id are one sequence's time steps (default: the column the model recorded "
         "when trained, if the file has it; else the file is one sequence)"},
        {"--bptt", OTC_OPT_RANGE, OTC_RANGE(bptt, 1, OTC_MAX_SEQ_STEPS),
         "K: for a recurrent model, truncated backpropagation through time: an update every K "
         "steps, the state carried on, the gradient cut (default: whole sequences)"},
        {"--lr", OTC_OPT_FLOAT, &lr, "X: learning rate (default 0.01)"},
        {"--optimizer", OTC_OPT_STRING, &optimizer, "sgd|adam|adamw: the optimiser (default adam)"},
        {"--loss", OTC_OPT_STRING, &loss,
         "auto|mse|bce|ce: the loss (default auto: ce for class indices, bce for a sigmoid "
         "output, else mse)"},
        {"--train-only", OTC_OPT_STRING, &train_only,
         "PREFIXES: train only the parameters whose names start with one of these "
         "(comma-separated, e.g. fc.); the others stay as they are"},
        {"--seed", OTC_OPT_U64, &seed, "N: seeds the split and the shuffling (default 1)"},
        {"--val-split", OTC_OPT_FLOAT, &val_split,
         "F: fraction of rows held out for validation (default 0.2; 0 for none)"},
        {"--standardize", OTC_OPT_FLAG, &standardize,
         "scale each feature to mean 0 and standard deviation 1 with the training split's "
         "statistics, saved in the model as frozen ops so it runs on raw rows (default: off)"},
        {"--plot", OTC_OPT_STRING, &plot, "FILE.svg: plot of the loss per epoch"},
        {"--header", OTC_OPT_FLAG, &header, "the first line names the columns"},
        {"--no-header", OTC_OPT_FLAG, &no_header, "the first line is data (default: guessed)"},
#ifdef OTC_HAVE_JIT
        {"--jit", OTC_OPT_FLAG, &jit,
         "compile forward, backward and the optimiser step with LLVM (default: interpreter)"},
#endif
    };
    const char *pos[1];
    int rc = otc_cli_parse("train",
                           "MODEL.otm --data FILE.csv --target COLS --out TRAINED.otm [options]",
                           opts, (int)(sizeof opts / sizeof opts[0]), argc, argv, pos, 1, 1);
    if (rc) return rc < 0 ? OTC_EXIT_OK : rc;
    if (!data) return otc_cli_error("train", "missing --data FILE.csv (try 'otc train --help')");
    bool idx = otc_cli_idx_dir(data) != NULL;
    if (idx && (target || features || sequence || header || no_header || standardize))
        return otc_cli_error("train", "--data idx:DIR brings its own labels and images: leave out "
                                      "--target, --features, --sequence, --standardize and "
                                      "--header/--no-header");
    if (idx) target = "label";
    if (!target) return otc_cli_error("train", "missing --target COLS (try 'otc train --help')");
    if (!out) return otc_cli_error("train", "missing --out FILE.otm (try 'otc train --help')");
    if (epochs < 1 || epochs > 1000000)
        return otc_cli_error("train", "--epochs must be in 1..1000000, not %d", epochs);
    if (batch < 1) return otc_cli_error("train", "--batch must be at least 1, not %d", batch);
    bool bptt_given = otc_cli_given(argc, argv, "--bptt");
    if (!(lr > 0) || !isfinite(lr))
        return otc_cli_error("train", "--lr must be a positive number, not %g", lr);
    if (!(val_split >= 0 && val_split < 1))
        return otc_cli_error("train", "--val-split must be in [0, 1), not %g", val_split);
    if (header && no_header) return otc_cli_error("train", "--header and --no-header conflict");
    const otc_cli_file ins[] = {{"MODEL", pos[0]}, {"--data", data}};
    const otc_cli_file outs[] = {{"--out", out}, {"--plot", plot}};
    if ((rc = otc_cli_check_files("train", ins, 2, outs, 2)) ||
        (rc = otc_cli_check_writable("train", outs, 2)))
        return rc;
    int okind = otc_optim_kind_from_name(optimizer);
    if (okind < 0)
        return otc_cli_error("train", "unknown optimizer '%s' (sgd, adam or adamw)", optimizer);
    trainer t = {0};
    t.kind = (loss_kind)-1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(loss, loss_names[i])) t.kind = (loss_kind)i;
    if ((int)t.kind < 0)
        return otc_cli_error("train", "unknown loss '%s' (auto, mse, bce or ce)", loss);

    otc_dataset *d = NULL, *tr = NULL, *va = NULL;
    otc_seq_dataset *sd = NULL, *str = NULL, *sva = NULL;
    otc_standardizer stz = {0};
    otc_graph *saved_g = NULL; /* --standardize: the model saved, standardising its input */
    otc_seq_loader *sl = NULL, *svl = NULL;
    float *weight = NULL;
    otc_optimizer *opt = NULL;
    otc_dataloader *dl = NULL;
    otc_plot *pl = NULL;
    bool *frozen = NULL;
    char sm[512];
    otc_cli_printable(pos[0], sm, sizeof sm);
    if ((rc = otc_cli_load_model("train", pos[0], &t.g))) goto done;
    /* a model saved by --standardize (or evolve's csv task) runs on raw rows: standardising
     * the rows again would scale its input twice, once here and once in the model */
    if (standardize && otc_graph_find(t.g, OTC_NEAT_INPUT_MEAN) >= 0) {
        rc = otc_cli_error(
            "train",
            "--standardize: %s standardises its input already (its " OTC_NEAT_INPUT_MEAN
            " and " OTC_NEAT_INPUT_STD "); it trains on raw rows without "
            "--standardize",
            sm);
        goto done;
    }
    otc_cli_csv co = {.targets = target,
                      .features = features,
                      .header = header      ? 1
                                : no_header ? 0
                                            : -1};
    /* A model with state trains on sequences through time; any other, on independent rows. */
    bool had_header = false; /* the columns have names to record */
    co.model = t.g;
    co.model_path = pos[0];
    co.had_header = &had_header;
    bool recurrent = otc_graph_is_recurrent(t.g);
    if (!recurrent && (sequence || bptt_given)) {
        rc = otc_cli_needs_recurrent("train", pos[0], sequence ? "--sequence" : "--bptt");
        goto done;
    }
    if (recurrent && idx) {
        rc = otc_cli_error("train", "%s is recurrent; IDX images are independent samples", sm);
        goto done;
    }
    int longest = 0;
    if (recurrent) {
        co.sequence = sequence;
        if ((rc = otc_cli_load_seq_csv("train", data, &co, &sd))) goto done;
        d = sd->data; /* owned by sd */
        longest = otc_seq_max_len(sd);
        if (bptt > longest) {
            char sd_name[512];
            rc = otc_cli_error("train",
                               "--bptt %d is longer than the longest sequence in %s (%d "
                               "step%s)",
                               bptt, otc_cli_printable(data, sd_name, sizeof sd_name), longest,
                               longest == 1 ? "" : "s");
            goto done;
        }
        if (!bptt_given) {
            bptt = longest;
            if ((rc = check_whole_sequences(data, sd))) goto done;
        }
        weight = malloc((size_t)bptt * sizeof *weight);
        if (!weight) {
            rc = otc_cli_error("train", "out of memory");
            goto done;
        }
    } else if (idx) {
        if ((rc = otc_cli_load_idx("train", data, "train", t.g, pos[0], &d))) goto done;
    } else if ((rc = otc_cli_load_csv("train", data, &co, &d))) {
        goto done;
    }
    if ((rc = otc_cli_data_input("train", t.g, pos[0], data, d, &t.input))) goto done;
    if (otc_graph_output_count(t.g) < 1) {
        rc = otc_cli_error("train", "%s: the model marks no outputs", sm);
        goto done;
    }
    int n_orig = otc_graph_size(t.g);
    if (train_only && !(frozen = calloc((size_t)n_orig, sizeof *frozen))) {
        rc = otc_cli_error("train", "out of memory");
        goto done;
    }
    if ((rc = otc_cli_train_only("train", pos[0], t.g, train_only, frozen))) goto done;
    char out_name[128];
    if ((rc = pick_prediction(&t, sm, out_name, sizeof out_name))) goto done;
    size_t trainable = 0;
    for (otc_id id = 0; id < n_orig; id++) {
        const otc_node *nd = otc_graph_node(t.g, id);
        if (nd->op == OTC_OP_PARAMETER && nd->trainable) trainable += otc_shape_size(nd->shape);
    }
    if (trainable == 0) {
        rc = otc_cli_error("train", "%s: the model has no trainable parameters", sm);
        goto done;
    }
    if (standardize && otc_graph_input_count(t.g) != 1) { /* what the saved form can take */
        rc = otc_cli_error("train", "--standardize: %s has %d inputs; it takes a model with one",
                           sm, otc_graph_input_count(t.g));
        goto done;
    }
    if ((rc = choose_loss(&t, d, data, out_name)) || (rc = add_loss(&t))) goto done;

    if (val_split > 0 && recurrent) {
        if (otc_seq_dataset_split(sd, (float)val_split, seed, &str, &sva) != OTC_OK) {
            rc = otc_cli_error_file("train", data);
            goto done;
        }
        tr = str->data; /* owned by str, sva */
        va = sva->data;
    } else if (val_split > 0) {
        if (otc_dataset_split(d, (float)val_split, seed, &tr, &va) != OTC_OK) {
            rc = otc_cli_error_file("train", data);
            goto done;
        }
    }
    /* --standardize: fitted on the training rows only, applied to every split; the same
     * (x - mean) / std goes into the saved model ahead of the network (as evolve's csv task
     * does), so the model runs on raw rows. */
    if (standardize) {
        otc_dataset *fit = tr ? tr : d;
        otc_status st = otc_standardizer_fit(fit, &stz);
        const otc_node *in = otc_graph_node(t.g, t.input);
        if (st == OTC_OK && (in->shape.ndim != 2 || in->shape.dim[1] != stz.n))
            st = otc_fail(OTC_ERR_SHAPE, "its input %s is not [batch, %d features]",
                          in->name ? in->name : "", stz.n);
        if (st == OTC_OK) st = otc_standardizer_apply(&stz, fit);
        if (st == OTC_OK && va) st = otc_standardizer_apply(&stz, va);
        if (st != OTC_OK) {
            rc = otc_cli_error("train", "--standardize: %s: %s", sm, otc_last_error());
            goto done;
        }
    }
    const otc_dataset *train_set = tr ? tr : d;
    const otc_seq_dataset *train_seqs = str ? str : sd;
    bool has_val = va && va->rows > 0;
    if (train_set->rows < 1) {
        rc = otc_cli_error("train", "%s: no %s left for training after the validation split", data,
                           recurrent ? "sequences" : "rows");
        goto done;
    }
    /* Steps run at --batch rows, evaluation in chunks of up to 512; values and gradients. */
    int most = batch > 512 ? batch : 512;
    if ((rc = otc_cli_check_memory("train", pos[0], t.g, d->rows < most ? d->rows : most, 2, jit,
                                   "training")))
        goto done;
    otc_optim_config oc = otc_optim_defaults((otc_optim_kind)okind);
    oc.lr = (float)lr;
    opt = otc_optimizer_new(&oc);
#ifdef OTC_HAVE_JIT
    if (jit) {
        otc_jit_options jo = otc_jit_defaults();
        t.ex = otc_jit_executor_new(t.g, &jo);
    } else
#endif
        t.ex = otc_interpreter_new(t.g, NULL);
    if (recurrent) {
        sl = otc_seq_loader_new(train_seqs, batch, true, false, seed ^ 0x9e3779b97f4a7c15ull);
        svl = has_val ? otc_seq_loader_new(sva, 512, false, false, seed) : NULL;
    } else {
        dl = otc_dataloader_new(train_set, batch, true, false, seed ^ 0x9e3779b97f4a7c15ull);
    }
    if (!opt || !t.ex || (recurrent ? !sl || (has_val && !svl) : !dl)) {
        rc = otc_cli_error_file("train", pos[0]);
        goto done;
    }
    if (plot) {
        char title[600];
        const char *slash = strrchr(pos[0], '/');
        snprintf(title, sizeof title, "training %s", slash ? slash + 1 : pos[0]);
        char ylabel[32];
        snprintf(ylabel, sizeof ylabel, "loss (%s)", loss_names[t.kind]);
        pl = otc_plot_new(title, "epoch", ylabel);
        if (!pl || otc_plot_series(pl, "train") != 0 ||
            (has_val && otc_plot_series(pl, "validation") != 1)) {
            rc = otc_cli_error("train", "out of memory");
            goto done;
        }
    }

    if (recurrent)
        printf("training %s: %d sequence%s of %d rows (%d train, %d validation), through time "
               "(%s%d steps), loss %s, %s lr %g, %zu parameters, %s\n",
               sm, sd->n, sd->n == 1 ? "" : "s", d->rows, train_seqs->n, has_val ? sva->n : 0,
               bptt < longest ? "truncated to " : "up to ", bptt, loss_names[t.kind], optimizer, lr,
               trainable, otc_exec_backend(t.ex));
    else
        printf("training %s: %d rows (%d train, %d validation), loss %s, %s lr %g, %zu "
               "parameters, %s\n",
               sm, d->rows, train_set->rows, has_val ? va->rows : 0, loss_names[t.kind], optimizer,
               lr, trainable, otc_exec_backend(t.ex));
    double train_loss = NAN, val_loss = NAN, val_acc = NAN;
    bool diverged = false;
    int batches = recurrent ? otc_seq_loader_batches(sl) : otc_dataloader_batches(dl);
    double compiled_ms = jit_compile_ms(t.ex); /* at creation; the rest on first use */
    for (int e = 1; e <= epochs && !diverged; e++) {
        double t0 = otc_cli_seconds(), sum = 0;
        long seen = 0, ok = 0;
        char label[48];
        snprintf(label, sizeof label, "epoch %d/%d", e, epochs);
        otc_cli_progress bar;
        otc_cli_progress_start(&bar, label, batches);
        const float *x, *y;
        int rows, b = 0, steps;
        while (recurrent && (rows = otc_seq_loader_next(sl, &steps, &x, &y, NULL)) > 0) {
            int bad = 0;
            double bsum = 0;
            if (seq_batch(&t, opt, bptt, weight, steps, rows, x, y, d->n_features, d->n_targets,
                          &bsum, &seen, &ok, &bad)) {
                otc_cli_progress_end(&bar);
                rc = otc_cli_error_file("train", pos[0]);
                goto done;
            }
            if (bad) {
                diverged = true;
                otc_cli_progress_end(&bar);
                fprintf(stderr,
                        "otc train: the loss became %g in epoch %d, batch %d, step %d; try a "
                        "smaller --lr%s\n",
                        bsum, e, b + 1, bad, bptt > 1 ? " or a smaller --bptt" : "");
                while (otc_seq_loader_next(sl, NULL, NULL, NULL, NULL) > 0) {
                } /* finish the epoch */
                break;
            }
            sum += bsum;
            char status[64];
            snprintf(status, sizeof status, "loss %.4f", sum / (double)seen);
            otc_cli_progress_update(&bar, ++b, status);
        }
        while (!recurrent && (rows = otc_dataloader_next(dl, &x, &y)) > 0) {
            float lv;
            const float *pv;
            otc_exec_reset_state(t.ex);
            if (otc_exec_set_input(t.ex, t.input, x, rows) ||
                otc_exec_set_input(t.ex, t.target, y, rows) ||
                otc_exec_train_step(t.ex, t.loss, opt, &lv) || pred_values(&t, rows, &pv)) {
                otc_cli_progress_end(&bar);
                rc = otc_cli_error_file("train", pos[0]);
                goto done;
            }
            if (!isfinite(lv)) {
                diverged = true;
                otc_cli_progress_end(&bar);
                fprintf(stderr,
                        "otc train: the loss became %g in epoch %d, batch %d; try a "
                        "smaller --lr\n",
                        (double)lv, e, b + 1);
                while (otc_dataloader_next(dl, &x, &y) > 0) {
                } /* finish the epoch */
                break;
            }
            sum += (double)lv * rows;
            seen += rows;
            /* accuracy from the forward of this step, before its update (as is usual) */
            if (t.kind != LOSS_MSE) ok += correct_in(&t, pv, y, rows);
            char status[64];
            snprintf(status, sizeof status, "loss %.4f", sum / (double)seen);
            otc_cli_progress_update(&bar, ++b, status);
        }
        otc_cli_progress_end(&bar);
        if (diverged) break;
        train_loss = sum / (double)seen;
        double train_acc =
            t.kind == LOSS_MSE ? NAN : (double)ok / (double)accuracy_units(&t, (int)seen);
        if (has_val && (recurrent ? seq_evaluate(&t, svl, d, &val_loss, &val_acc)
                                  : evaluate(&t, va, &val_loss, &val_acc)) != OTC_OK) {
            rc = otc_cli_error_file("train", pos[0]);
            goto done;
        }
        /* Compiling (the JIT's, on first use) is not training: reported apart, once. */
        double compile_now = jit_compile_ms(t.ex), secs = otc_cli_seconds() - t0;
        if (compile_now > compiled_ms) secs -= (compile_now - compiled_ms) / 1e3;
        if (e == 1 && compile_now > 0) printf("compiled in %.1f ms\n", compile_now);
        compiled_ms = compile_now;
        print_epoch(e, epochs, train_loss, train_acc, val_loss, val_acc, has_val,
                    secs > 0 ? secs : 0);
        if (pl) {
            otc_plot_point(pl, 0, e, train_loss);
            if (has_val) otc_plot_point(pl, 1, e, val_loss);
        }
    }
    if (pl) {
        if (otc_plot_save_svg(pl, plot) != OTC_OK) {
            rc = otc_cli_error_file("train", plot);
            goto done;
        }
        char sp[512];
        printf("wrote %s\n", otc_cli_printable(plot, sp, sizeof sp));
    }
    if (diverged) {
        rc = OTC_EXIT_GOAL; /* the run happened; the model is not worth saving */
        goto done;
    }
    if (otc_exec_sync_params(t.ex) != OTC_OK) {
        rc = otc_cli_error("train", "%s", otc_last_error());
        goto done;
    }
    otc_exec_free(t.ex);
    t.ex = NULL;
    /* The target input and the loss are for training only: the saved model is the original
     * graph with new weights. */
    /* the columns read (--target, --sequence or the one recorded) by their names in the
     * header, however given (by name or 0-based index); a file without a header has only the
     * indices given */
    char *target_names = had_header ? joined(d->target_names, d->n_targets) : NULL;
    run_facts f = {.data = data,
                   .target = target_names ? target_names : target,
                   .optimizer = optimizer,
                   .sequence = had_header ? d->seq_name : sequence,
                   .bptt = recurrent ? bptt : 0,
                   .epochs = epochs,
                   .batch = batch,
                   .rows = d->rows,
                   .lr = lr,
                   .val_split = val_split,
                   .train_loss = train_loss,
                   .val_loss = has_val ? val_loss : NAN,
                   .val_acc = has_val ? val_acc : NAN,
                   .seed = seed,
                   .kind = t.kind,
                   .standardize = standardize};
    /* --train-only froze parameters for this run only: the saved model trains as before */
    for (otc_id id = 0; frozen && id < n_orig; id++)
        if (frozen[id]) otc_graph_set_trainable(t.g, id, true);
    bool saved = otc_graph_truncate(t.g, n_orig) == OTC_OK && store_facts(t.g, &f) == OTC_OK &&
                 (!had_header ||
                  otc_cli_record_columns(t.g, d->feature_names, d->n_features, d->target_names,
                                         d->n_targets, d->seq_name) == OTC_OK);
    free(target_names);
    if (!saved) {
        rc = otc_cli_error("train", "%s", otc_last_error());
        goto done;
    }
    if (standardize && otc_neat_graph_standardize_input(t.g, stz.mean, stz.std, &saved_g)) {
        rc = otc_cli_error("train", "%s", otc_last_error());
        goto done;
    }
    if (otc_model_save(saved_g ? saved_g : t.g, out) != OTC_OK) {
        rc = otc_cli_error_file("train", out);
        goto done;
    }
    char so[512];
    printf("wrote %s", otc_cli_printable(out, so, sizeof so));
    if (has_val && !isnan(val_acc))
        printf(" (validation accuracy %.3f)", val_acc);
    else if (has_val)
        printf(" (validation loss %.4f)", val_loss);
    putchar('\n');
    rc = OTC_EXIT_OK;
done:
    (void)jit;
    free(frozen);
    free(t.gathered);
    otc_plot_free(pl);
    otc_dataloader_free(dl);
    otc_seq_loader_free(sl);
    otc_seq_loader_free(svl);
    free(weight);
    otc_exec_free(t.ex);
    otc_optimizer_free(opt);
    if (sd) { /* the datasets are the sequences' */
        otc_seq_dataset_free(sva);
        otc_seq_dataset_free(str);
        otc_seq_dataset_free(sd);
    } else {
        otc_dataset_free(va);
        otc_dataset_free(tr);
        otc_dataset_free(d);
    }
    otc_graph_free(t.g);
    otc_graph_free(saved_g);
    otc_standardizer_free(&stz);
    return rc;
}
