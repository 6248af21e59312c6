/* `otc run MODEL.otm --input FILE.csv [--output FILE.csv]`: batch inference, one CSV row of
 * outputs per input row, written atomically (or to standard output). `--data idx:DIR` runs
 * DIR's IDX test images (t10k-*) instead and reports the accuracy against their labels. A recurrent
 * model reads the rows as the time steps of sequences (the file, or each --sequence id's run of
 * rows), each from a reset state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "otc/otc.h"
#include "otc/quant.h"
#ifdef OTC_HAVE_JIT
#include "otc/jit.h"
#endif

const char otc_cmd_run_summary[] = "run a model on the rows of a CSV file";

/* Rows whose largest output column is their label. */
static long correct_rows(const float *out, int width, const float *labels, int rows) {
    long ok = 0;
    for (int r = 0; r < rows; r++) {
        const float *row = out + (size_t)r * (size_t)width;
        int best = 0;
        for (int j = 1; j < width; j++)
            if (row[j] > row[best]) best = j;
        ok += best == (int)labels[r];
    }
    return ok;
}

/* Header cells for every output: its name, with _0, _1, ... when it has several columns. */
static void write_header(FILE *f, const otc_graph *g, const int *width, bool argmax) {
    int n_out = otc_graph_output_count(g);
    bool first = true;
    for (int k = 0; k < n_out; k++) {
        const otc_node *nd = otc_graph_node(g, otc_graph_output(g, k));
        char base[128];
        if (nd->name && *nd->name) {
            /* a name with a comma or quote would break the CSV: keep it plain */
            otc_cli_printable(nd->name, base, sizeof base);
            for (char *c = base; *c; c++)
                if (*c == ',' || *c == '"') *c = '_';
        } else {
            snprintf(base, sizeof base, "output%d", k);
        }
        for (int j = 0; j < width[k]; j++) {
            if (width[k] == 1)
                fprintf(f, "%s%s", first ? "" : ",", base);
            else
                fprintf(f, "%s%s_%d", first ? "" : ",", base, j);
            first = false;
        }
    }
    if (argmax) fprintf(f, ",class");
    fputc('\n', f);
}

/* One CSV line per row of the last forward's outputs (out[k] rows of width[k]). */
static void write_rows(FILE *f, int n_out, const float *const *out, const int *width, int rows,
                       bool argmax) {
    for (int r = 0; r < rows; r++) {
        bool first = true;
        for (int k = 0; k < n_out; k++)
            for (int j = 0; j < width[k]; j++) {
                fprintf(f, "%s%.7g", first ? "" : ",",
                        (double)out[k][(size_t)r * (size_t)width[k] + (size_t)j]);
                first = false;
            }
        if (argmax) {
            const float *row = out[0] + (size_t)r * (size_t)width[0];
            int best = 0;
            for (int j = 1; j < width[0]; j++)
                if (row[j] > row[best]) best = j;
            fprintf(f, ",%d", best);
        }
        fputc('\n', f);
    }
}

/* --quantized int8: rows through the integer reference (otc/quant.h) one at a time, each
 * input quantised and each output dequantised (a softmax output comes out as its logits). */
typedef struct {
    otc_qmodel *q;
    int8_t *work, *state, *in, *out;
    float *buf; /* batch rows of each output, one output after another */
} quant_run;

static void quant_rows(quant_run *qr, const float *x, int rows, int batch, const float **out,
                       const int *width) {
    const otc_qmodel *q = qr->q;
    size_t off = 0;
    for (int k = 0; k < q->n_outputs; k++) {
        out[k] = qr->buf + off;
        off += (size_t)batch * (size_t)width[k];
    }
    for (int r = 0; r < rows; r++) {
        otc_qmodel_quantize_input(q, x + (size_t)r * (size_t)q->in_width, qr->in);
        otc_qmodel_forward(q, qr->in, qr->out, qr->work, qr->state);
        int at = 0;
        for (int k = 0; k < q->n_outputs; k++) {
            otc_qparam p = q->tensors[q->outputs[k]].q;
            for (int j = 0; j < width[k]; j++)
                ((float *)out[k])[(size_t)r * (size_t)width[k] + (size_t)j] =
                    otc_dequantize_value(qr->out[at + j], p);
            at += width[k];
        }
    }
}

/* Forward `rows` rows from x and write their outputs; 0 or the exit code. */
static int run_rows(otc_executor *ex, const otc_graph *g, otc_id in, const float *x, int rows,
                    const float **out, const int *width, bool argmax, FILE *mem,
                    const char *model) {
    int n_out = otc_graph_output_count(g);
    if (otc_exec_set_input(ex, in, x, rows) || otc_exec_forward(ex))
        return otc_cli_error_file("run", model);
    for (int k = 0; k < n_out; k++)
        if (otc_exec_value(ex, otc_graph_output(g, k), &out[k], NULL))
            return otc_cli_error_file("run", model);
    write_rows(mem, n_out, out, width, rows, argmax);
    return 0;
}

int otc_cmd_run(int argc, char **argv) {
    const char *input = NULL, *output = NULL, *features = NULL, *drop = NULL, *sequence = NULL;
    const char *quantized = NULL, *calibrate = NULL;
    const char *data = NULL;
    bool header = false, no_header = false, argmax = false, jit = false;
    int batch = 256;
    const otc_opt opts[] = {
        {"--input,-i", OTC_OPT_STRING, &input, "FILE.csv: rows to run the model on"},
        {"--data", OTC_OPT_STRING, &data,
         "idx:DIR: instead of --input, DIR's IDX test images (t10k-*, pixels scaled to [0, 1]); "
         "the accuracy against their labels goes to standard error"},
        {"--out,--output,-o", OTC_OPT_STRING, &output,
         "FILE.csv: where to write the outputs (default: standard output)"},
        {"--features", OTC_OPT_STRING, &features,
         "COLS: the input columns, by name or 0-based index (default: all)"},
        {"--drop", OTC_OPT_STRING, &drop, "COLS: columns to leave out (e.g. the labels)"},
        {"--argmax", OTC_OPT_FLAG, &argmax,
         "add a 'class' column: the index of the largest first output"},
        {"--batch", OTC_OPT_RANGE, OTC_RANGE(batch, 1, 1 << 24),
         "N: rows per forward pass (default 256; a recurrent model runs its steps one by one)"},
        {"--sequence", OTC_OPT_STRING, &sequence,
         "COL: for a recurrent model, the column naming each row's sequence: consecutive rows "
         "with one id are one sequence, run from a reset state (default: the column the model "
         "recorded when trained, if the file has it; else the file is one)"},
        {"--quantized", OTC_OPT_STRING, &quantized,
         "MODE: the arithmetic of `otc compile --quantize MODE`'s C: int8 bit for bit (outputs "
         "dequantised, a softmax output as its logits); f16, weights-int8: f32 on the stored "
         "weights' values"},
        {"--calibrate", OTC_OPT_STRING, &calibrate,
         "DATA: --quantized's calibration rows, a CSV file (--drop applies) or idx:DIR"},
        {"--header", OTC_OPT_FLAG, &header, "the first line names the columns"},
        {"--no-header", OTC_OPT_FLAG, &no_header, "the first line is data (default: guessed)"},
#ifdef OTC_HAVE_JIT
        {"--jit", OTC_OPT_FLAG, &jit, "compile the model with LLVM first (default: interpreter)"},
#endif
    };
    const char *pos[1];
    int rc = otc_cli_parse("run", "MODEL.otm --input FILE.csv [--output FILE.csv] [options]", opts,
                           (int)(sizeof opts / sizeof opts[0]), argc, argv, pos, 1, 1);
    if (rc) return rc < 0 ? OTC_EXIT_OK : rc;
    if (data && input) return otc_cli_error("run", "use --input or --data, not both");
    if (data && !otc_cli_idx_dir(data))
        return otc_cli_error("run", "--data takes idx:DIR (for a CSV file use --input)");
    if (data && (features || drop || sequence || header || no_header))
        return otc_cli_error("run", "--data idx:DIR takes no --features, --drop, --sequence or "
                                    "--header/--no-header");
    if (data) input = data;
    if (!input) return otc_cli_error("run", "missing --input FILE.csv (try 'otc run --help')");
    if (batch < 1) return otc_cli_error("run", "--batch must be at least 1, not %d", batch);
    if (header && no_header) return otc_cli_error("run", "--header and --no-header conflict");
    if (features && drop) return otc_cli_error("run", "use --features or --drop, not both");
    /* f16 and weights-int8 change only the weights' values: the float model runs on. */
    otc_weight_storage weights = OTC_WEIGHTS_F32;
    if (quantized && !strcmp(quantized, "f16"))
        weights = OTC_WEIGHTS_F16;
    else if (quantized && !strcmp(quantized, "weights-int8"))
        weights = OTC_WEIGHTS_INT8;
    else if (quantized && strcmp(quantized, "int8"))
        return otc_cli_error("run", "unknown --quantized '%s' (int8, f16 or weights-int8)",
                             quantized);
    if (weights != OTC_WEIGHTS_F32) quantized = NULL;
    if (calibrate && !quantized)
        return otc_cli_error("run", "--calibrate goes with --quantized int8");
#ifdef OTC_HAVE_JIT
    if (quantized && jit) return otc_cli_error("run", "--quantized int8 and --jit conflict");
#endif
    const otc_cli_file ins[] = {{"MODEL", pos[0]}, {"--input", input}};
    const otc_cli_file outs[] = {{"--output", output}};
    if ((rc = otc_cli_check_files("run", ins, 2, outs, 1))) return rc;

    otc_graph *g = NULL;
    otc_dataset *d = NULL;
    otc_seq_dataset *sd = NULL;
    otc_executor *ex = NULL;
    int *width = NULL;
    const float **out = NULL;
    char *text = NULL;
    size_t text_len = 0;
    FILE *mem = NULL;
    quant_run qr = {0};
    if ((rc = otc_cli_load_model("run", pos[0], &g))) goto done;
    if (otc_weights_round(g, weights)) {
        rc = otc_cli_error_file("run", pos[0]);
        goto done;
    }
    if (quantized && (rc = otc_cli_quantize("run", pos[0], g, calibrate, drop, &qr.q))) goto done;
    otc_cli_csv co = {.skip_targets = true,
                      .targets = drop,
                      .features = features,
                      .header = header      ? 1
                                : no_header ? 0
                                            : -1};
    /* A model with state runs the rows as time steps; any other, as independent samples. */
    bool recurrent = otc_graph_is_recurrent(g);
    if (!drop) { /* columns by the names the model was trained on (--drop: by hand) */
        co.model = g;
        co.model_path = pos[0];
    }
    if (sequence && !recurrent) {
        rc = otc_cli_needs_recurrent("run", pos[0], "--sequence");
        goto done;
    }
    if (recurrent && data) {
        rc = otc_cli_error("run", "%s is recurrent; IDX images are independent samples", pos[0]);
        goto done;
    }
    if (data) {
        if ((rc = otc_cli_load_idx("run", data, "t10k", g, pos[0], &d))) goto done;
    } else if (recurrent) {
        co.sequence = sequence;
        if ((rc = otc_cli_load_seq_csv("run", input, &co, &sd))) goto done;
        d = sd->data; /* owned by sd */
        batch = 1;
    } else if ((rc = otc_cli_load_csv("run", input, &co, &d))) {
        goto done;
    }
    otc_id in;
    if ((rc = otc_cli_data_input("run", g, pos[0], input, d, &in))) goto done;

    int n_out = otc_graph_output_count(g);
    char sm[512];
    otc_cli_printable(pos[0], sm, sizeof sm);
    if (n_out == 0) {
        rc = otc_cli_error("run", "%s: the model marks no outputs", sm);
        goto done;
    }
    width = calloc((size_t)n_out, sizeof *width);
    out = calloc((size_t)n_out, sizeof *out);
    if (!width || !out) {
        rc = otc_cli_error("run", "out of memory");
        goto done;
    }
    for (int k = 0; k < n_out; k++) {
        width[k] = otc_cli_row_width(g, otc_graph_output(g, k));
        if (width[k] < 0) {
            char name[128];
            rc = otc_cli_error(
                "run", "%s: output '%s' has no batch dimension, so it has no row per input", sm,
                otc_cli_printable(otc_graph_node(g, otc_graph_output(g, k))->name, name,
                                  sizeof name));
            goto done;
        }
    }
    if (argmax && width[0] < 2) {
        rc = otc_cli_error("run", "--argmax needs a first output with several columns (it has %d)",
                           width[0]);
        goto done;
    }

    if ((rc = otc_cli_check_memory("run", pos[0], g, d->rows < batch ? d->rows : batch, 1, jit,
                                   "running")))
        goto done;
    otc_exec_options eo = {.inference = true};
    if (qr.q) {
        size_t per = 0;
        for (int k = 0; k < n_out; k++) per += (size_t)width[k];
        qr.work = malloc((size_t)qr.q->workspace_bytes + 1);
        qr.state = malloc((size_t)qr.q->state_bytes + 1);
        qr.in = malloc((size_t)qr.q->in_width + 1);
        qr.out = malloc((size_t)qr.q->out_width + 1);
        qr.buf = malloc(sizeof *qr.buf * per * (size_t)batch);
        if (!qr.work || !qr.state || !qr.in || !qr.out || !qr.buf) {
            rc = otc_cli_error("run", "out of memory");
            goto done;
        }
        otc_qmodel_reset(qr.q, qr.state);
    } else
#ifdef OTC_HAVE_JIT
        if (jit) {
        otc_jit_options jo = otc_jit_defaults();
        jo.inference = true;
        ex = otc_jit_executor_new(g, &jo);
    } else
#endif
        ex = otc_interpreter_new(g, &eo);
    (void)jit;
    if (!ex && !qr.q) {
        rc = otc_cli_error_file("run", pos[0]);
        goto done;
    }
    mem = open_memstream(&text, &text_len);
    if (!mem) {
        rc = otc_cli_error("run", "out of memory");
        goto done;
    }
    write_header(mem, g, width, argmax);
    if (recurrent) {
        /* sequences are consecutive runs of rows, so outputs come in file order */
        for (int i = 0; i < sd->n && !rc; i++) {
            if (qr.q) otc_qmodel_reset(qr.q, qr.state);
            if (ex) otc_exec_reset_state(ex);
            for (int t = 0; t < sd->len[i] && !rc; t++) {
                const float *x = d->x + (size_t)(sd->start[i] + t) * (size_t)d->n_features;
                if (qr.q) {
                    quant_rows(&qr, x, 1, 1, out, width);
                    write_rows(mem, n_out, out, width, 1, argmax);
                } else {
                    rc = run_rows(ex, g, in, x, 1, out, width, argmax, mem, pos[0]);
                }
            }
        }
    }
    long correct = 0;
    for (int r0 = 0; !recurrent && r0 < d->rows && !rc; r0 += batch) {
        int rows = d->rows - r0 < batch ? d->rows - r0 : batch;
        const float *x = d->x + (size_t)r0 * (size_t)d->n_features;
        if (qr.q) {
            quant_rows(&qr, x, rows, batch, out, width);
            write_rows(mem, n_out, out, width, rows, argmax);
        } else {
            otc_exec_reset_state(ex); /* rows are independent samples */
            rc = run_rows(ex, g, in, x, rows, out, width, argmax, mem, pos[0]);
        }
        if (!rc && data && width[0] >= 2)
            correct += correct_rows(out[0], width[0], d->y + r0, rows);
    }
    if (rc) goto done;
    if (data && width[0] >= 2) {
        char sdata[512];
        fprintf(stderr, "otc run: accuracy %.4f (%ld of %d) on the test images of %s\n",
                (double)correct / d->rows, correct, d->rows,
                otc_cli_printable(data, sdata, sizeof sdata));
    }
    if (fclose(mem) != 0) {
        mem = NULL;
        rc = otc_cli_error("run", "out of memory");
        goto done;
    }
    mem = NULL;
    rc = otc_cli_write_output("run", output, text, text_len);
done:
    if (mem) fclose(mem);
    free(text);
    free(width);
    free(out);
    otc_exec_free(ex);
    otc_qmodel_free(qr.q);
    free(qr.work);
    free(qr.state);
    free(qr.in);
    free(qr.out);
    free(qr.buf);
    if (sd)
        otc_seq_dataset_free(sd);
    else
        otc_dataset_free(d);
    otc_graph_free(g);
    return rc;
}
