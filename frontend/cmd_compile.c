/* `otc compile MODEL.otm --emit-c DIR`: a frozen model as standalone C (DIR/NAME.h and
 * DIR/NAME.c), optionally with an on-device training step; --plan-dot draws the plan. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_llvm.h"
#include "otc/compiler.h"
#include "otc/limits.h"
#include "otc/otc.h"
#include "otc/quant.h"

const char otc_cmd_compile_summary[] = "compile a model to standalone C (--emit-c DIR)";

/* The model's file name as a C identifier: "models/xor-v2.otm" -> "xor_v2". */
static void name_from_path(const char *path, char *buf, size_t len) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = 0;
    if (!isalpha((unsigned char)*base) && len > 3) {
        memcpy(buf, "m_", 2);
        n = 2;
    }
    for (const char *s = base; *s && *s != '.' && n + 1 < len && n < 64; s++)
        buf[n++] = isalnum((unsigned char)*s) ? *s : '_';
    buf[n] = '\0';
    if (!otc_emit_c_valid_name(buf)) snprintf(buf, len, "model");
}

static const char *fuse_names[] = {"default", "none", "chains", "loops"};

static void print_summary(const char *dir, const otc_graph *g, const otc_emit_c_options *o,
                          const otc_plan *fwd, const otc_plan *big) {
    int64_t at = o->batch > 0 ? o->batch : 1;
    otc_plan_bytes b, t;
    if (otc_emit_c_sizes(g, o, at, &b, &t)) return;
    printf("wrote %s/%s.h and %s/%s.c\n", dir, o->name, dir, o->name);
    int64_t in = fwd->in_width;
    otc_emit_c_rows(g, o, &in, NULL, NULL);
    printf("  inputs %" PRId64 " floats per sample, outputs %" PRId64 "\n", in, fwd->out_width);
    if (o->bptt > 0)
        printf("  through time: %s_train_step runs %d steps of one step's code, keeping each "
               "step's activations for backward\n",
               o->name, o->bptt);
    printf("  plan: %d kernel(s), %d value(s) kept in registers", fwd->n_kernels, fwd->n_registers);
    if (big) printf("; from 16 samples on %d kernel(s) that vectorise", big->n_kernels);
    if (o->weights == OTC_WEIGHTS_F32)
        printf("\n  weights %" PRId64 " bytes (static const)\n", b.weights);
    else
        printf("\n  weights %" PRId64 " bytes stored as %s (static const), decoded into the "
               "workspace by %s_forward at each call or once by %s_decode\n",
               otc_weights_stored_bytes(g, o->weights),
               o->weights == OTC_WEIGHTS_F16 ? "f16" : "int8 per output channel", o->name, o->name);
    printf("  workspace at batch %" PRId64 ": %" PRId64 " bytes (%" PRId64
           " without lifetime sharing)%s\n",
           /* (Weight-only storage: the decoded weights are in both.) */
           at, b.workspace, b.activations_unshared + (b.workspace - b.activations),
           o->batch > 0 ? "" : "; it grows with the batch");
    if (fwd->state_per_sample > 0)
        printf("  recurrent: %" PRId64 " bytes of state per sample carried in the workspace; "
               "%s_forward is one step, %s_reset starts new sequences\n",
               fwd->state_per_sample * (int64_t)sizeof(float), o->name, o->name);
    if (o->train)
        printf("  training: workspace %" PRId64 " bytes at batch %" PRId64 " (%" PRId64
               " of gradients), optimiser state %" PRId64 " bytes\n",
               t.workspace, at, t.gradients, t.optimizer_state);
}

static int parse_fuse(const char *s, otc_fuse_level *out) {
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, fuse_names[i])) {
            *out = (otc_fuse_level)i;
            return 0;
        }
    return otc_cli_error("compile", "unknown --fuse '%s' (none, chains or loops)", s);
}

/* A floating option in [lo, hi) (hi_open) or [lo, hi]; lo_open excludes lo. */
static int check_range(const char *opt, double v, double lo, bool lo_open, double hi,
                       bool hi_open) {
    bool ok = isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
    if (ok) return 0;
    char hs[32];
    snprintf(hs, sizeof hs, "%g", hi);
    return otc_cli_error("compile", "%s must be a number in %c%g, %s%c, not %g", opt,
                         lo_open ? '(' : '[', lo, isinf(hi) ? "inf" : hs, hi_open ? ')' : ']', v);
}

/* --quantize int8: calibrate, lower to integer steps, write the integer-only C. */
static int compile_int8(const char *model, const char *name, const char *dir, const char *calibrate,
                        const char *drop, bool other_outputs) {
    if (!dir) return otc_cli_error("compile", "--quantize int8 writes C: give --emit-c DIR");
    if (other_outputs)
        return otc_cli_error("compile", "--quantize int8 makes one-sample inference C only (no "
                                        "--train, --bptt, --batch, --fuse, --plan-dot or LLVM "
                                        "outputs)");
    otc_graph *g = NULL;
    otc_qmodel *q = NULL;
    int rc = otc_cli_load_model("compile", model, &g);
    if (!rc) rc = otc_cli_quantize("compile", model, g, calibrate, drop, &q);
    otc_status st = OTC_OK;
    if (!rc && mkdir(dir, 0777) != 0 && errno != EEXIST)
        st = otc_fail(OTC_ERR_IO, "%s: cannot create the directory: %s", dir, strerror(errno));
    if (!rc && !st) st = otc_emit_c_int8_files(q, name, model, dir);
    if (!rc && st) rc = otc_cli_error_file("compile", dir);
    if (!rc) {
        printf("wrote %s/%s.h and %s/%s.c (int8, integer arithmetic only)\n", dir, name, dir, name);
        printf("  inputs %d int8 per sample, outputs %d; %d step(s)\n", q->in_width, q->out_width,
               q->n_steps);
        printf("  RAM: workspace %d bytes, state %d bytes (static)\n", q->workspace_bytes,
               q->state_bytes);
        for (int i = 0; i < q->n_outputs; i++)
            if (q->logits[i])
                printf("  output %d: the logits; apply its softmax to the dequantised values\n", i);
    }
    otc_qmodel_free(q);
    otc_graph_free(g);
    return rc;
}

int otc_cmd_compile(int argc, char **argv) {
    const char *emit_c = NULL, *name = NULL, *loss = "mse", *optim = "adam", *fuse = NULL,
               *plan_dot = NULL, *quantize = NULL, *calibrate = NULL, *drop = NULL,
               *train_only = NULL;
    const char *emit_ll = NULL, *emit_s = NULL, *emit_obj = NULL, *target = NULL; /* LLVM */
    int batch = 0, bptt = 0;
    bool dynamic = false, train = false, nesterov = false, verbose = false;
    double lr = -1.0, momentum = 0.0, weight_decay = -1.0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    const otc_opt opts[] = {
        {"--emit-c,--out,--output,-o", OTC_OPT_STRING, &emit_c,
         "DIR: write DIR/NAME.h and DIR/NAME.c"},
        {"--name", OTC_OPT_STRING, &name,
         "NAME: C prefix of every symbol (default: the model's file name)"},
        {"--batch", OTC_OPT_RANGE, OTC_RANGE(batch, 1, 1 << 24),
         "N: fix the layout for at most N samples (a constant workspace size)"},
        {"--dynamic-batch", OTC_OPT_FLAG, &dynamic,
         "any batch; the workspace size is a function of it (the default)"},
        {"--train", OTC_OPT_FLAG, &train,
         "also emit NAME_train_step: forward, backward and the optimiser update in place"},
        {"--bptt", OTC_OPT_INT, &bptt,
         "K: a recurrent model trains through K time steps per call: the emitted code loops "
         "over them, keeping each step's activations for backward (inputs: the state before "
         "them and each step's inputs; outputs: the state after them)"},
        {"--loss", OTC_OPT_STRING, &loss,
         "mse|bce|softmax_ce: the training loss over the outputs (default mse)"},
        {"--train-only", OTC_OPT_STRING, &train_only,
         "PREFIXES: train only the parameters whose names start with one of these "
         "(comma-separated, e.g. fc.); the others are frozen in the emitted step"},
        {"--optim", OTC_OPT_STRING, &optim, "sgd|adam|adamw: the optimiser (default adam)"},
        {"--lr", OTC_OPT_FLOAT, &lr, "X: default learning rate (NAME_LR; train_step takes lr)"},
        {"--momentum", OTC_OPT_FLOAT, &momentum, "X: SGD momentum (default 0)"},
        {"--nesterov", OTC_OPT_FLAG, &nesterov, "SGD with Nesterov momentum"},
        {"--weight-decay", OTC_OPT_FLOAT, &weight_decay, "X: L2 (SGD, Adam) or decoupled (AdamW)"},
        {"--beta1", OTC_OPT_FLOAT, &beta1, "X: Adam beta1 (default 0.9)"},
        {"--beta2", OTC_OPT_FLOAT, &beta2, "X: Adam beta2 (default 0.999)"},
        {"--eps", OTC_OPT_FLOAT, &eps, "X: Adam epsilon (default 1e-8)"},
        {"--fuse", OTC_OPT_STRING, &fuse,
         "none|chains|loops: kernel fusion (default loops: chains, and neighbours over the "
         "same loop)"},
        {"--plan-dot", OTC_OPT_STRING, &plan_dot,
         "FILE: also write the plan as Graphviz DOT (kernels, buffer offsets)"},
        {"--quantize", OTC_OPT_STRING, &quantize,
         "MODE: with --emit-c, int8 (integer-only C for CPUs without an FPU), f16 or "
         "weights-int8 (f32 compute, the weights stored 2x / 4x smaller); docs/quantize.md"},
        {"--calibrate", OTC_OPT_STRING, &calibrate,
         "DATA: --quantize's calibration rows, a CSV file or idx:DIR (its train images)"},
        {"--drop", OTC_OPT_STRING, &drop,
         "COLS: --calibrate CSV columns to leave out (e.g. the labels)"},
        {"--verbose,-v", OTC_OPT_FLAG, &verbose, "print the plan, one step per line"},
        /* LLVM outputs (frontend/cli_llvm.c) */
        {"--emit-llvm", OTC_OPT_STRING, &emit_ll, "FILE: the forward pass as LLVM IR (optimised)"},
        {"--emit-asm", OTC_OPT_STRING, &emit_s, "FILE: the forward pass as assembly"},
        {"--emit-obj", OTC_OPT_STRING, &emit_obj,
         "FILE: an object file with the weights inside, and FILE's .h to link it"},
        {"--target", OTC_OPT_STRING, &target,
         "TRIPLE: for --emit-asm/--emit-obj, e.g. aarch64-linux-gnu (default: this machine)"},
    };
    const char *pos[1];
    int rc = otc_cli_parse("compile",
                           "MODEL.otm --emit-c DIR [--name NAME] [--batch N | "
                           "--dynamic-batch] [--train] [options]",
                           opts, (int)(sizeof opts / sizeof opts[0]), argc, argv, pos, 1, 1);
    if (rc) return rc < 0 ? OTC_EXIT_OK : rc;
    bool llvm = emit_ll || emit_s || emit_obj;
    if (!emit_c && !llvm)
        return otc_cli_error("compile", "missing --emit-c DIR or --emit-llvm/--emit-asm/--emit-obj "
                                        "FILE (try 'otc compile --help')");
    if (batch && dynamic) return otc_cli_error("compile", "--batch and --dynamic-batch conflict");
    if ((otc_cli_given(argc, argv, "--batch") && batch < 1) || batch < 0 || batch > (1 << 24))
        return otc_cli_error("compile", "--batch must be 1 .. 16777216, not %d", batch);
    /* The optimiser's numbers: each in its range (NaN and infinities never are). */
    if (otc_cli_given(argc, argv, "--lr") &&
        (rc = check_range("--lr", lr, 0, true, INFINITY, true)))
        return rc;
    if ((rc = check_range("--momentum", momentum, 0, false, 1, true)) ||
        (otc_cli_given(argc, argv, "--weight-decay") &&
         (rc = check_range("--weight-decay", weight_decay, 0, false, INFINITY, true))) ||
        (rc = check_range("--beta1", beta1, 0, false, 1, true)) ||
        (rc = check_range("--beta2", beta2, 0, false, 1, true)) ||
        (rc = check_range("--eps", eps, 0, true, INFINITY, true)))
        return rc;
    char auto_name[80];
    if (!name) {
        name_from_path(pos[0], auto_name, sizeof auto_name);
        name = auto_name;
    }
    if (!otc_emit_c_valid_name(name))
        return otc_cli_error("compile",
                             "--name '%s' is not a C identifier (a letter, then letters, digits "
                             "and _)",
                             name);
    char c_h[4096] = "", c_c[4096] = "", obj_h[4096] = "";
    if (emit_c) {
        snprintf(c_h, sizeof c_h, "%s/%s.h", emit_c, name);
        snprintf(c_c, sizeof c_c, "%s/%s.c", emit_c, name);
    }
    if (emit_obj) otc_cli_obj_header(emit_obj, obj_h, sizeof obj_h);
    const otc_cli_file ins[] = {{"MODEL", pos[0]}};
    const otc_cli_file outs[] = {{"--emit-c", emit_c ? c_h : NULL},
                                 {"--emit-c", emit_c ? c_c : NULL},
                                 {"--plan-dot", plan_dot},
                                 {"--emit-llvm", emit_ll},
                                 {"--emit-asm", emit_s},
                                 {"--emit-obj", emit_obj},
                                 {"--emit-obj's header", emit_obj ? obj_h : NULL}};
    if ((rc = otc_cli_check_files("compile", ins, 1, outs, 7))) return rc;
    otc_weight_storage weights = OTC_WEIGHTS_F32;
    if (quantize && strcmp(quantize, "int8")) {
        if (!strcmp(quantize, "f16"))
            weights = OTC_WEIGHTS_F16;
        else if (!strcmp(quantize, "weights-int8"))
            weights = OTC_WEIGHTS_INT8;
        else
            return otc_cli_error("compile", "unknown --quantize '%s' (int8, f16 or weights-int8)",
                                 quantize);
        if (!emit_c || train || llvm)
            return otc_cli_error("compile",
                                 "--quantize %s stores the weights of --emit-c's "
                                 "inference C (no --train or LLVM outputs)",
                                 quantize);
        if (calibrate || drop)
            return otc_cli_error("compile",
                                 "--quantize %s needs no --calibrate (or --drop): the "
                                 "weights alone set the scales",
                                 quantize);
    } else if (quantize) {
        return compile_int8(pos[0], name, emit_c, calibrate, drop,
                            train || llvm || plan_dot || bptt || batch || dynamic || fuse);
    }
    if (calibrate || drop)
        return otc_cli_error("compile", "--calibrate and --drop go with --quantize int8");
    if (llvm) {
        /* The LLVM backend's outputs (cli_llvm.c); --emit-c, if given too, follows. */
        if ((rc = otc_cli_emit_llvm(pos[0], name, emit_ll, emit_s, emit_obj, target)) || !emit_c)
            return rc;
    }
    otc_emit_c_options o = otc_emit_c_defaults();
    o.name = name;
    o.batch = batch;
    o.train = train;
    o.source_name = pos[0];
    o.weights = weights;
    if (fuse && (rc = parse_fuse(fuse, &o.fuse))) return rc;
    otc_op loss_op = OTC_OP_MSE;
    if (train) {
        int k = otc_optim_kind_from_name(optim);
        if (k < 0)
            return otc_cli_error("compile", "unknown --optim '%s' (sgd, adam or adamw)", optim);
        o.optim = otc_optim_defaults((otc_optim_kind)k);
        if (lr >= 0.0) o.optim.lr = (float)lr;
        if (weight_decay >= 0.0) o.optim.weight_decay = (float)weight_decay;
        o.optim.momentum = (float)momentum;
        o.optim.nesterov = nesterov;
        o.optim.beta1 = (float)beta1;
        o.optim.beta2 = (float)beta2;
        o.optim.eps = (float)eps;
        /* The runtime's own checks of the hyper-parameters, with its messages. */
        otc_optimizer *check = otc_optimizer_new(&o.optim);
        if (!check) return otc_cli_error("compile", "%s", otc_last_error());
        otc_optimizer_free(check);
        if (!strcmp(loss, "mse"))
            loss_op = OTC_OP_MSE;
        else if (!strcmp(loss, "bce"))
            loss_op = OTC_OP_BCE;
        else if (!strcmp(loss, "softmax_ce"))
            loss_op = OTC_OP_SOFTMAX_CE;
        else
            return otc_cli_error("compile", "unknown --loss '%s' (mse, bce or softmax_ce)", loss);
    }

    otc_graph *g = NULL;
    if ((rc = otc_cli_load_model("compile", pos[0], &g))) return rc;
    otc_plan *fwd = NULL, *big = NULL, *tr = NULL;
    otc_status st = OTC_OK;
    otc_unrolled *u = NULL;
    bool recurrent = otc_graph_is_recurrent(g);
    if ((rc = otc_cli_check_bptt("compile", pos[0], recurrent, train, bptt))) {
        otc_graph_free(g);
        return rc;
    }
    if (train_only &&
        (!train || (rc = otc_cli_train_only("compile", pos[0], g, train_only, NULL)))) {
        otc_graph_free(g);
        return rc ? rc : otc_cli_error("compile", "--train-only goes with --train");
    }
    if (train) st = otc_compile_add_loss(g, loss_op, &o.loss, NULL);
    if (!st && train && recurrent) {
        /* One step of the model, which the emitted code runs K times over a tape. */
        st = otc_unroll_step(g, bptt, o.loss, &u);
        if (!st) {
            otc_graph_free(g);
            g = u->graph;
            o.loss = u->total;
            o.bptt = bptt;
            o.step = u;
        }
    }
    if (!st) st = otc_emit_c_plans(g, &o, &fwd, &big, &tr);
    if (!st && batch > 0) {
        /* A fixed batch makes the workspace a constant the caller allocates: one larger than
         * this machine's memory is refused here rather than failing in the caller's malloc. */
        otc_plan_bytes fb = {0}, tb = {0};
        st = otc_emit_c_sizes(g, &o, batch, &fb, train ? &tb : NULL);
        int64_t ws = fb.workspace > tb.workspace ? fb.workspace : tb.workspace;
        char what[700], sm[512];
        snprintf(what, sizeof what, "%s: the emitted code's workspace at batch %d",
                 otc_cli_printable(pos[0], sm, sizeof sm), batch);
        if (!st) st = otc_memory_check(ws > 0 ? (uint64_t)ws : 0, what);
    }
    if (!st && mkdir(emit_c, 0777) != 0 && errno != EEXIST)
        st = otc_fail(OTC_ERR_IO, "%s: cannot create the directory: %s", emit_c, strerror(errno));
    if (!st) st = otc_emit_c_files(g, &o, emit_c);
    /* An i/o failure is the output directory's (its message names the file); others are the
     * model's. */
    const char *blame = st == OTC_ERR_IO ? emit_c : pos[0];
    if (!st && plan_dot) {
        char *dot = otc_plan_to_dot(train ? tr : fwd);
        if (!dot) {
            st = OTC_ERR_NOMEM;
        } else {
            rc = otc_cli_write_output("compile", plan_dot, dot, strlen(dot));
            free(dot);
        }
    }
    if (st) {
        rc = otc_cli_error_file("compile", blame);
    } else if (!rc) {
        print_summary(emit_c, g, &o, fwd, big);
        if (verbose) {
            char *text = otc_plan_describe(train ? tr : fwd);
            if (text) {
                /* Node names from the model: print each line through the terminal filter. */
                printf("%s plan:\n", train ? "training" : "inference");
                char *line = malloc(strlen(text) + 1);
                for (char *p = text, *end; line && *p; p = *end ? end + 1 : end) {
                    end = strchr(p, '\n');
                    if (!end) end = p + strlen(p);
                    char saved = *end;
                    *end = '\0';
                    printf("%s\n", otc_cli_printable(p, line, (size_t)(end - p) + 1));
                    *end = saved;
                }
                free(line);
            }
            free(text);
        }
    }
    otc_plan_free(fwd);
    otc_plan_free(big);
    otc_plan_free(tr);
    if (!u) otc_graph_free(g); /* else u's */
    otc_unrolled_free(u);
    return rc;
}
