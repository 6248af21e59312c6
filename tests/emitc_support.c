/* Test support for emitted C: many graphs in one C file and one compiler run, loaded with
 * dlopen, compared with the interpreter. */
#include "emitc_support.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool add_file(emitc_build *b, const char *path) {
    char **f = realloc(b->files, (size_t)(b->n_files + 1) * sizeof *f);
    if (!f) return false;
    b->files = f;
    b->files[b->n_files] = strdup(path);
    return b->files[b->n_files++] != NULL;
}

static bool write_text(emitc_build *b, const char *path, const char *text, const char *mode) {
    FILE *f = fopen(path, mode);
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    return ok && (mode[0] == 'a' || add_file(b, path));
}

bool emitc_build_cases(emitc_case *cases, int n, const char *cflags, emitc_build *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->dir, sizeof out->dir, "/tmp/otc_emitc_XXXXXX");
    if (!mkdtemp(out->dir)) {
        fprintf(stderr, "mkdtemp failed\n");
        return false;
    }
    char path[256], all[256];
    snprintf(all, sizeof all, "%s/all.c", out->dir);
    if (!write_text(out, all, "/* many generated models in one file */\n", "w")) return false;
    for (int i = 0; i < n; i++) {
        char *h = NULL, *s = NULL;
        if (otc_emit_c(cases[i].g, &cases[i].eo, &h, &s)) {
            fprintf(stderr, "emit %s: %s\n", cases[i].name, otc_last_error());
            return false;
        }
        snprintf(path, sizeof path, "%s/%s.h", out->dir, cases[i].name);
        bool ok = write_text(out, path, h, "w") && write_text(out, all, s, "a");
        free(h);
        free(s);
        if (!ok) {
            fprintf(stderr, "cannot write %s\n", path);
            return false;
        }
    }
    char cmd[1024], log[256], so[256];
    snprintf(log, sizeof log, "%s/cc.log", out->dir);
    snprintf(so, sizeof so, "%s/all.so", out->dir);
    add_file(out, log);
    add_file(out, so);
    snprintf(cmd, sizeof cmd, "cc %s -shared -fPIC -o %s %s -lm > %s 2>&1", cflags, so, all, log);
    int rc = system(cmd);
    if (rc != 0) {
        fprintf(stderr, "FAILED: %s\n", cmd);
        FILE *f = fopen(log, "r");
        char line[512];
        for (int k = 0; f && k < 40 && fgets(line, sizeof line, f); k++) fputs(line, stderr);
        if (f) fclose(f);
        return false;
    }
    out->so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!out->so) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return false;
    }
    return true;
}

void emitc_unload(emitc_build *b) {
    if (b->so) dlclose(b->so);
    for (int i = 0; i < b->n_files; i++) {
        remove(b->files[i]);
        free(b->files[i]);
    }
    free(b->files);
    if (b->dir[0]) rmdir(b->dir);
    memset(b, 0, sizeof *b);
}

void *emitc_sym(const emitc_build *b, const char *name, const char *suffix) {
    char sym[96];
    snprintf(sym, sizeof sym, "%s_%s", name, suffix);
    void *p = b->so ? dlsym(b->so, sym) : NULL;
    if (!p) fprintf(stderr, "no symbol %s\n", sym);
    return p;
}

bool emitc_case_init(emitc_case *c, otc_graph *g, int index, const otc_emit_c_options *eo) {
    memset(c, 0, sizeof *c);
    c->g = g;
    c->eo = eo ? *eo : otc_emit_c_defaults();
    snprintf(c->name, sizeof c->name, "g%d", index);
    c->eo.name = c->name;
    if (!g) return false;
    otc_plan_options po;
    memset(&po, 0, sizeof po);
    po.loss = c->eo.train ? c->eo.loss : -1;
    po.fuse = c->eo.fuse;
    po.optim = c->eo.optim;
    if (otc_plan_build(g, &po, &c->fwd)) return false;
    if (!c->eo.train) return true;
    po.train = true;
    po.agg_gradients = true; /* as otc_emit_c's training plan */
    return otc_plan_build(g, &po, &c->train) == OTC_OK;
}

void emitc_case_free(emitc_case *c) {
    otc_plan_free(c->fwd);
    otc_plan_free(c->train);
    otc_graph_free(c->g);
    memset(c, 0, sizeof *c);
}

float *emitc_rows(const otc_plan *p, otc_io_stream stream, int batch, otc_rng *rng, int classes) {
    int64_t width = stream == OTC_IO_IN ? p->in_width : p->target_width;
    size_t n = (size_t)(batch * width);
    float *x = malloc((n ? n : 1) * sizeof *x);
    if (!x) return NULL;
    for (size_t i = 0; i < n; i++)
        x[i] = classes > 0   ? (float)otc_rng_below(rng, (uint32_t)classes)
               : classes < 0 ? otc_rng_uniform(rng)
                             : -2.0f + 4.0f * otc_rng_uniform(rng);
    return x;
}

bool emitc_set_inputs(otc_executor *ex, const otc_plan *p, const float *in, const float *target,
                      int batch) {
    const otc_graph *g = p->graph;
    for (int i = 0; i < otc_graph_input_count(g); i++) {
        otc_id id = otc_graph_input(g, i);
        size_t w = otc_shape_size(otc_graph_node(g, id)->shape);
        float *buf = calloc((size_t)batch * w + 1, sizeof *buf);
        if (!buf) return false;
        for (int k = 0; k < p->n_io; k++) {
            const otc_plan_io *io = &p->io[k];
            if (io->node != id || io->stream == OTC_IO_OUT) continue;
            const float *rows = io->stream == OTC_IO_IN ? in : target;
            int64_t rw = io->stream == OTC_IO_IN ? p->in_width : p->target_width;
            for (int b = 0; b < batch; b++)
                for (size_t e = 0; e < w; e++)
                    buf[(size_t)b * w + e] = rows[b * rw + io->offset + (int64_t)e];
        }
        otc_status st = otc_exec_set_input(ex, id, buf, batch);
        free(buf);
        if (st) {
            fprintf(stderr, "set_input: %s\n", otc_last_error());
            return false;
        }
    }
    return true;
}

static int reported;

bool emitc_close(float got, float want, double tol, const char *what, const char *name, int i) {
    double scale = fabs((double)want) > 1.0 ? fabs((double)want) : 1.0;
    if (fabs((double)got - (double)want) <= tol * scale) return true;
    if (isnan(got) && isnan(want)) return true;
    if (reported++ < 20)
        fprintf(stderr, "%s %s[%d]: emitted %.9g, interpreter %.9g (tol %g)\n", name, what, i,
                (double)got, (double)want, tol);
    return false;
}

size_t emitc_workspace_bytes(const emitc_case *c, const emitc_build *b, int batch) {
    /* What the generated code says it needs (its own functions, not the test's guess). */
    size_t (*fwd)(int) = (size_t(*)(int))emitc_sym(b, c->name, "workspace_bytes");
    size_t n = fwd ? fwd(batch) : 0;
    if (c->eo.train) {
        size_t (*tr)(int) = (size_t(*)(int))emitc_sym(b, c->name, "train_workspace_bytes");
        size_t t = tr ? tr(batch) : 0;
        if (t > n) n = t;
    }
    return n;
}

/* A workspace full of NaNs (so reading before writing shows) with a guard band after it (the
 * generated code is not instrumented by the sanitizers). */
#define GUARD 256
static float *workspace_new(size_t bytes) {
    size_t total = (bytes + GUARD + 63) / 64 * 64;
    unsigned char *w = aligned_alloc(64, total);
    if (w) memset(w, 0xff, total);
    return (float *)w;
}

static bool workspace_intact(const float *ws, size_t bytes, const char *name) {
    const unsigned char *p = (const unsigned char *)ws;
    for (size_t i = bytes; i < bytes + GUARD; i++)
        if (p[i] != 0xff) {
            fprintf(stderr, "%s: wrote past its workspace (%zu bytes) at byte %zu\n", name, bytes,
                    i);
            return false;
        }
    return true;
}

typedef int (*fwd_fn)(const float *, float *, int, void *);
typedef int (*fwd_train_fn)(const void *, const float *, float *, int, void *);
typedef void (*init_fn)(void *);
typedef int (*step_fn)(void *, const float *, const float *, int, float, float *, void *);
typedef const float *(*grads_fn)(const void *, int);

static void *params_new(const emitc_case *c, const emitc_build *b) {
    size_t bytes = (3 * (size_t)c->fwd->param_floats + 16) * sizeof(float);
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    init_fn init = (init_fn)emitc_sym(b, c->name, "params_init");
    if (p && init) init(p);
    return p;
}

bool emitc_check_forward(const emitc_case *c, const emitc_build *b, int batch, uint64_t seed,
                         double tol) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    const otc_plan *p = c->fwd;
    float *in = emitc_rows(p, OTC_IO_IN, batch, &rng, 0);
    float *out = calloc((size_t)(batch * p->out_width) + 1, sizeof *out);
    size_t bytes = emitc_workspace_bytes(c, b, batch);
    float *ws = workspace_new(bytes);
    void *params = c->eo.train ? params_new(c, b) : NULL;
    otc_exec_options xo = {.inference = true};
    otc_executor *ex = otc_interpreter_new(c->g, &xo);
    bool ok = in && out && ws && ex && (!c->eo.train || params);
    ok = ok && emitc_set_inputs(ex, p, in, NULL, batch);
    if (ok && otc_exec_forward(ex)) {
        fprintf(stderr, "%s: interpreter forward: %s\n", c->name, otc_last_error());
        ok = false;
    }
    int rc = -1;
    if (ok && c->eo.train) {
        fwd_train_fn f = (fwd_train_fn)emitc_sym(b, c->name, "forward");
        if (f) rc = f(params, in, out, batch, ws);
    } else if (ok) {
        fwd_fn f = (fwd_fn)emitc_sym(b, c->name, "forward");
        if (f) rc = f(in, out, batch, ws);
    }
    if (ok && rc != 0) {
        fprintf(stderr, "%s: emitted forward returned %d\n", c->name, rc);
        ok = false;
    }
    ok = ok && workspace_intact(ws, bytes, c->name);
    for (int k = 0; ok && k < p->n_io; k++) {
        const otc_plan_io *io = &p->io[k];
        if (io->stream != OTC_IO_OUT) continue;
        const float *want;
        if (otc_exec_value(ex, io->node, &want, NULL)) {
            ok = false;
            break;
        }
        for (int bi = 0; bi < batch; bi++)
            for (int64_t e = 0; e < io->width; e++)
                ok = emitc_close(out[bi * p->out_width + io->offset + e], want[bi * io->width + e],
                                 tol, "out", c->name, (int)(bi * p->out_width + io->offset + e)) &&
                     ok;
    }
    otc_exec_free(ex);
    free(in);
    free(out);
    free(ws);
    free(params);
    return ok;
}

bool emitc_check_gradients(const emitc_case *c, const emitc_build *b, int batch, uint64_t seed,
                           double tol, int classes) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    const otc_plan *t = c->train;
    if (!t) return false;
    float *in = emitc_rows(t, OTC_IO_IN, batch, &rng, 0);
    float *target = emitc_rows(t, OTC_IO_TARGET, batch, &rng, classes);
    size_t bytes = emitc_workspace_bytes(c, b, batch);
    float *ws = workspace_new(bytes);
    void *params = params_new(c, b);
    otc_executor *ex = otc_interpreter_new(c->g, NULL);
    step_fn step = (step_fn)emitc_sym(b, c->name, "train_step");
    grads_fn grads = (grads_fn)emitc_sym(b, c->name, "grads");
    bool ok = in && target && ws && params && ex && step && grads;
    ok = ok && emitc_set_inputs(ex, t, in, target, batch);
    if (ok) {
        otc_exec_zero_grad(ex);
        if (otc_exec_forward(ex) || otc_exec_backward(ex, c->eo.loss)) {
            fprintf(stderr, "%s: interpreter: %s\n", c->name, otc_last_error());
            ok = false;
        }
    }
    float loss = NAN;
    int rc = ok ? step(params, in, target, batch, 0.0f, &loss, ws) : -1;
    if (ok && rc != 0) {
        fprintf(stderr, "%s: emitted train_step returned %d\n", c->name, rc);
        ok = false;
    }
    ok = ok && workspace_intact(ws, bytes, c->name);
    if (ok) {
        const float *want;
        otc_exec_value(ex, c->eo.loss, &want, NULL);
        ok = emitc_close(loss, want[0], tol, "loss", c->name, 0);
        const float *got = grads(ws, batch);
        for (int i = 0; i < c->fwd->n_params; i++) {
            otc_id id = c->fwd->params[i];
            if (!otc_graph_node(c->g, id)->trainable) continue;
            const float *gi;
            if (otc_exec_grad(ex, id, &gi)) {
                ok = false;
                break;
            }
            int64_t off = c->fwd->values[id].param_offset;
            for (int64_t j = 0; j < c->fwd->values[id].size; j++)
                ok = emitc_close(got[off + j], gi[j], tol, "grad", c->name, (int)(off + j)) && ok;
        }
    }
    otc_exec_free(ex);
    free(in);
    free(target);
    free(ws);
    free(params);
    return ok;
}

static otc_id rand_param(otc_graph *g, otc_rng *rng, const char *name, otc_shape shape) {
    float v[64];
    size_t n = otc_shape_size(shape);
    for (size_t i = 0; i < n && i < 64; i++) v[i] = -1.0f + 2.0f * otc_rng_uniform(rng);
    return otc_param(g, name, shape, v);
}

otc_graph *emitc_all_ops_graph(uint64_t seed) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 6));
    int d3[3] = {OTC_BATCH, 3, 2};
    otc_id x2 = otc_input(g, "x2", otc_shape_make(3, d3));
    otc_id W1 = rand_param(g, &rng, "W1", otc_shape_2d(6, 5));
    otc_id b1 = rand_param(g, &rng, "b1", otc_shape_1d(5));
    otc_id h = otc_matmul(g, x, W1);
    h = otc_add(g, h, otc_row_broadcast(g, b1, h));
    static const otc_op acts[10] = {
        OTC_OP_TANH, OTC_OP_SIGMOID,  OTC_OP_RELU, OTC_OP_LEAKY_RELU, OTC_OP_SOFTPLUS,
        OTC_OP_ELU,  OTC_OP_GAUSSIAN, OTC_OP_SIN,  OTC_OP_ABS,        OTC_OP_IDENTITY};
    otc_id a[10];
    for (int i = 0; i < 10; i++)
        a[i] = otc_activation(g, acts[i], h,
                              acts[i] == OTC_OP_LEAKY_RELU ? 0.1f
                              : acts[i] == OTC_OP_ELU      ? 0.8f
                                                           : 0.0f);
    otc_id parts[8] = {otc_mul(g, a[0], a[1]),
                       otc_div(g, a[0], a[1]),
                       otc_sub(g, a[3], a[4]),
                       otc_neg(g, a[5]),
                       otc_scale(g, a[6], 0.7f),
                       otc_detach(g, a[7]),
                       a[8],
                       a[9]};
    otc_id cat = otc_concat(g, 8, parts, 1); /* [B,40] */
    otc_id sl = otc_slice(g, cat, 1, 3, 10); /* [B,10] */
    otc_id sel = otc_select(g, x2, 1, 1);    /* [B,2] */
    int d35[3] = {OTC_BATCH, 2, 5};
    otc_id rs = otc_reshape(g, sl, otc_shape_make(3, d35)); /* [B,2,5] */
    otc_id sm = otc_softmax(g, otc_flatten(g, rs));         /* [B,10] */
    otc_id lsm = otc_flatten(g, otc_log_softmax(g, rs));    /* [B,10] */
    otc_id ct_in[3] = {sm, lsm, sel};
    otc_id ct = otc_concat(g, 3, ct_in, 1); /* [B,22] */
    otc_id srcs[4] = {ct, x, sel, ct};
    int cols[4] = {3, 0, 1, 17};
    float w[4] = {0.5f, -1.2f, 0.8f, 1.1f};
    otc_id n1 = otc_neuron(g, "n1", OTC_ACT_TANH, 0.2f, 1.3f, 4, srcs, cols, w);
    otc_id P = rand_param(g, &rng, "P", otc_shape_2d(2, 3));
    otc_id Q = rand_param(g, &rng, "Q", otc_shape_2d(3, 4));
    otc_graph_set_trainable(g, Q, false);
    otc_id pq = otc_flatten(g, otc_matmul(g, P, Q)); /* [8] */
    otc_id pq1 = otc_slice(g, pq, 0, 2, 1);          /* [1] */
    otc_id s = otc_reshape(g, otc_sum(g, otc_scale(g, pq, 0.25f)), otc_shape_1d(1));
    otc_id m = otc_reshape(g, otc_mean(g, ct), otc_shape_1d(1));
    otc_id out = otc_add(g, n1, otc_row_broadcast(g, pq1, n1));
    out = otc_add(g, out, otc_row_broadcast(g, s, n1));
    out = otc_sub(g, out, otc_row_broadcast(g, m, n1));
    /* The IEEE ops inside their domains: sqrt of softplus (> 0), cos, 1 / exp. */
    otc_id ieee[3] = {otc_activation(g, OTC_OP_SQRT, a[4], 0), otc_activation(g, OTC_OP_COS, h, 0),
                      otc_activation(g, OTC_OP_RECIPROCAL, otc_activation(g, OTC_OP_EXP, h, 0), 0)};
    otc_id ie = otc_concat(g, 3, ieee, 1); /* [B,15] */
    if (out < 0 || otc_graph_mark_output(g, out) || otc_graph_mark_output(g, ct) ||
        otc_graph_mark_output(g, ie)) {
        fprintf(stderr, "all-ops graph: %s\n", otc_last_error());
        otc_graph_free(g);
        return NULL;
    }
    return g;
}
