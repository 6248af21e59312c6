/* Interpreter vs emitted C (built with cc -O3 -march=native): time per sample at batch 1 and
 * 256 on an evolved-style graph of ~100 neurons and an 8-128-64-32-1 MLP, the training step,
 * the loops the C compiler vectorised, and the code size of an XOR champion.
 * Usage: emit_c [XOR.otm]  (without a file, a hand-made 2-1-1 XOR network is measured). */
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "otc/compiler.h"
#include "otc/otc.h"
#include "otc/random_graph.h"

/* Thread CPU time: the machine may be shared, and time spent descheduled is not ours. Both
 * backends run on this one thread (OpenBLAS is held to one thread in main). */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median over 7 repeats of the seconds per call, each repeat at least ~30 ms long. */
typedef void (*bench_fn)(void *ctx);
static double median_seconds(bench_fn f, void *ctx) {
    int iters = 1;
    for (;;) {
        double t0 = now();
        for (int i = 0; i < iters; i++) f(ctx);
        double dt = now() - t0;
        if (dt > 0.03 || iters > (1 << 26)) break;
        iters *= dt < 0.003 ? 8 : 2;
    }
    double t[7];
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        for (int i = 0; i < iters; i++) f(ctx);
        t[r] = (now() - t0) / iters;
    }
    qsort(t, 7, sizeof t[0], cmp_double);
    return t[3];
}

typedef struct {
    otc_executor *ex;
    int (*fwd)(const float *, float *, int, void *);
    int (*step)(void *, const float *, const float *, int, float, float *, void *);
    otc_optimizer *opt;
    otc_id loss;
    const float *in, *target;
    float *out;
    void *ws, *params;
    int batch;
} job;

static void run_interp(void *p) {
    job *j = p;
    otc_exec_forward(j->ex);
}
static void run_c(void *p) {
    job *j = p;
    j->fwd(j->in, j->out, j->batch, j->ws);
}
static void run_interp_train(void *p) {
    job *j = p;
    float l;
    otc_exec_train_step(j->ex, j->loss, j->opt, &l);
}
static void run_c_train(void *p) {
    job *j = p;
    float l;
    j->step(j->params, j->in, j->target, j->batch, 1e-4f, &l, j->ws);
}

/* Write NAME.{h,c} into dir and build dir/NAME.so with flags; count the loops gcc reports as
 * vectorised (-fopt-info-vec-optimized). */
static void *build(const char *dir, const otc_graph *g, const otc_emit_c_options *o,
                   const char *flags, int *vectorised) {
    if (otc_emit_c_files(g, o, dir)) {
        fprintf(stderr, "emit: %s\n", otc_last_error());
        return NULL;
    }
    char cmd[1024], so[256];
    snprintf(so, sizeof so, "%s/%s.so", dir, o->name);
    snprintf(cmd, sizeof cmd,
             "cc -std=c99 %s -fopt-info-vec-optimized -shared -fPIC -o %s %s/%s.c -lm 2>%s/%s.vec",
             flags, so, dir, o->name, dir, o->name);
    if (system(cmd) != 0) {
        fprintf(stderr, "failed: %s\n", cmd);
        return NULL;
    }
    snprintf(cmd, sizeof cmd, "grep -c 'loop vectorized' %s/%s.vec", dir, o->name);
    FILE *p = popen(cmd, "r");
    *vectorised = 0;
    if (p) {
        if (fscanf(p, "%d", vectorised) != 1) *vectorised = 0;
        pclose(p);
    }
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) fprintf(stderr, "dlopen: %s\n", dlerror());
    return h;
}

static void *sym(void *h, const char *name, const char *suffix) {
    char s[128];
    snprintf(s, sizeof s, "%s_%s", name, suffix);
    return dlsym(h, s);
}

/* Inputs of every Input node, batch rows each, and the plan's matching `in` rows. */
static float *inputs_for(otc_executor *ex, const otc_plan *p, int batch, otc_rng *rng) {
    size_t n = (size_t)(batch * p->in_width);
    float *in = malloc((n ? n : 1) * sizeof *in);
    otc_testgen_fill(rng, in, n, -1.0f, 1.0f);
    const otc_graph *g = p->graph;
    for (int i = 0; i < otc_graph_input_count(g); i++) {
        otc_id id = otc_graph_input(g, i);
        size_t w = otc_shape_size(otc_graph_node(g, id)->shape);
        float *buf = calloc((size_t)batch * w + 1, sizeof *buf);
        for (int k = 0; k < p->n_io; k++)
            if (p->io[k].node == id && p->io[k].stream == OTC_IO_IN)
                for (int b = 0; b < batch; b++)
                    for (size_t e = 0; e < w; e++)
                        buf[(size_t)b * w + e] = in[b * p->in_width + p->io[k].offset + (int64_t)e];
        otc_exec_set_input(ex, id, buf, batch);
        free(buf);
    }
    return in;
}

static int count_connections(const otc_graph *g) {
    int c = 0;
    for (otc_id id = 0; id < otc_graph_size(g); id++)
        if (otc_graph_node(g, id)->op == OTC_OP_NEURON) c += otc_graph_node(g, id)->n_inputs - 2;
    return c;
}

/* One row per batch: interpreter and emitted C forward, in microseconds per sample. */
static void forward_rows(const char *dir, const char *label, otc_graph *g, otc_fuse_level fuse,
                         bool split, const char *flags) {
    otc_emit_c_options o = otc_emit_c_defaults();
    o.name = "fwd";
    o.fuse = fuse;
    o.split_libm = split;
    int vec = 0;
    void *h = build(dir, g, &o, flags, &vec);
    if (!h) return;
    otc_plan *p = NULL;
    otc_plan_options po = {.loss = -1, .fuse = fuse, .split_libm = split};
    otc_plan_build(g, &po, &p);
    int batches[2] = {1, 256};
    for (int k = 0; k < 2; k++) {
        int batch = batches[k];
        otc_rng rng;
        otc_rng_seed(&rng, 1);
        otc_exec_options xo = {.inference = true};
        job j = {0};
        j.ex = otc_interpreter_new(g, &xo);
        j.batch = batch;
        float *in = inputs_for(j.ex, p, batch, &rng);
        j.in = in;
        j.out = malloc(sizeof(float) * (size_t)(batch * p->out_width + 1));
        size_t bytes = ((size_t(*)(int))sym(h, o.name, "workspace_bytes"))(batch);
        j.ws = aligned_alloc(64, (bytes + 64) / 64 * 64);
        j.fwd = (int (*)(const float *, float *, int, void *))sym(h, o.name, "forward");
        double ti = median_seconds(run_interp, &j) / batch * 1e6;
        double tc = median_seconds(run_c, &j) / batch * 1e6;
        printf("| %-34s | %5d | %12.4f | %12.4f | %8.1fx | %3d | %2d |\n", label, batch, ti, tc,
               ti / tc, p->n_kernels, vec);
        otc_exec_free(j.ex);
        free(in);
        free(j.out);
        free(j.ws);
    }
    otc_plan_free(p);
    dlclose(h);
}

static void train_row(const char *dir, const char *label, otc_graph *g, int batch,
                      const char *flags) {
    otc_emit_c_options o = otc_emit_c_defaults();
    o.name = "trn";
    o.train = true;
    o.optim = otc_optim_defaults(OTC_OPTIM_ADAM);
    o.optim.lr = 1e-4f;
    if (otc_compile_add_loss(g, OTC_OP_MSE, &o.loss, NULL)) return;
    int vec = 0;
    void *h = build(dir, g, &o, flags, &vec);
    if (!h) return;
    otc_plan *p = NULL;
    otc_plan_options po = {.loss = o.loss, .train = true, .optim = o.optim};
    otc_plan_build(g, &po, &p);
    otc_rng rng;
    otc_rng_seed(&rng, 2);
    job j = {0};
    j.ex = otc_interpreter_new(g, NULL);
    j.opt = otc_optimizer_new(&o.optim);
    j.loss = o.loss;
    j.batch = batch;
    float *in = inputs_for(j.ex, p, batch, &rng);
    float *target = malloc(sizeof(float) * (size_t)(batch * p->target_width + 1));
    otc_testgen_fill(&rng, target, (size_t)(batch * p->target_width), -1.0f, 1.0f);
    for (int i = 0; i < otc_graph_input_count(g); i++) {
        otc_id id = otc_graph_input(g, i);
        for (int k = 0; k < p->n_io; k++)
            if (p->io[k].node == id && p->io[k].stream == OTC_IO_TARGET)
                otc_exec_set_input(j.ex, id, target, batch); /* one target input */
    }
    j.in = in;
    j.target = target;
    size_t bytes = ((size_t(*)(int))sym(h, o.name, "train_workspace_bytes"))(batch);
    j.ws = aligned_alloc(64, (bytes + 64) / 64 * 64);
    j.params = aligned_alloc(64, ((3 * (size_t)p->param_floats + 16) * 4 + 63) / 64 * 64);
    ((void (*)(void *))sym(h, o.name, "params_init"))(j.params);
    j.step = (int (*)(void *, const float *, const float *, int, float, float *, void *))sym(
        h, o.name, "train_step");
    double ti = median_seconds(run_interp_train, &j) / batch * 1e6;
    double tc = median_seconds(run_c_train, &j) / batch * 1e6;
    printf("| %-34s | %5d | %12.4f | %12.4f | %8.1fx | %3d | %2d |\n", label, batch, ti, tc,
           ti / tc, p->n_kernels, vec);
    otc_optimizer_free(j.opt);
    otc_exec_free(j.ex);
    otc_plan_free(p);
    free(in);
    free(target);
    free(j.ws);
    free(j.params);
    dlclose(h);
}

/* The classic minimal XOR network (one hidden neuron plus direct input connections). */
static otc_graph *hand_xor(void) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id s2[2] = {x, x};
    int c2[2] = {0, 1};
    float wh[2] = {6.0f, 6.0f};
    otc_id h = otc_neuron(g, "h", OTC_ACT_STEEP_SIGMOID, -9.0f, 1.0f, 2, s2, c2, wh);
    otc_id s3[3] = {x, x, h};
    int c3[3] = {0, 1, 0};
    float wo[3] = {6.0f, 6.0f, -13.0f};
    otc_id o = otc_neuron(g, "out", OTC_ACT_STEEP_SIGMOID, -3.0f, 1.0f, 3, s3, c3, wo);
    otc_graph_mark_output(g, o);
    return g;
}

static long text_size(const char *cc, const char *flags, const char *dir, const char *name) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s -std=c99 %s -c %s/%s.c -o %s/%s.o 2>/dev/null && size -A %s/%s.o | awk "
             "'$1 ~ /^\\.text/ {t += $2} END {print t}'",
             cc, flags, dir, name, dir, name, dir, name);
    FILE *p = popen(cmd, "r");
    long t = -1;
    if (p) {
        if (fscanf(p, "%ld", &t) != 1) t = -1;
        pclose(p);
    }
    return t;
}

int main(int argc, char **argv) {
    char dir[] = "/tmp/otc_bench_emitc_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    openblas_set_num_threads(1);
    const char *flags = "-O3 -march=native";
    printf("interpreter vs emitted C (cc %s), microseconds per sample\n(one thread, thread CPU "
           "time, median of 7)\n\n",
           flags);
    printf("| %-34s | %5s | %12s | %12s | %9s | %3s | %2s |\n", "graph", "batch", "interp us",
           "C us", "speedup", "krn", "vec");
    printf("|%s|-------|--------------|--------------|-----------|-----|----|\n",
           "------------------------------------");

    otc_testgen_neat_options no = otc_testgen_neat_defaults(100);
    no.n_inputs = 8;
    no.max_fanin = 5;
    otc_graph *neat = otc_testgen_neat(2024, &no);
    char label[64];
    snprintf(label, sizeof label, "evolved 100 neurons, %d conn", count_connections(neat));
    forward_rows(dir, label, neat, OTC_FUSE_DEFAULT, false, flags);
    forward_rows(dir, "  same, fusion=loops (one loop)", neat, OTC_FUSE_LOOPS, false, flags);
    forward_rows(dir, "  same, fusion=loops+split", neat, OTC_FUSE_LOOPS, true, flags);
    forward_rows(dir, "  same, fusion=chains", neat, OTC_FUSE_CHAINS, false, flags);
    forward_rows(dir, "  same, fusion=chains+split", neat, OTC_FUSE_CHAINS, true, flags);
    forward_rows(dir, "  same, fusion=none", neat, OTC_FUSE_NONE, false, flags);
    int sizes[5] = {8, 128, 64, 32, 1};
    otc_graph *mlp = otc_testgen_mlp(7, 5, sizes, OTC_OP_RELU, -1);
    forward_rows(dir, "MLP 8-128-64-32-1 relu", mlp, OTC_FUSE_DEFAULT, false, flags);
    train_row(dir, "train step (Adam), evolved 100", neat, 256, flags);
    train_row(dir, "train step (Adam), MLP", mlp, 256, flags);
    printf("\nDefault fusion: below 16 samples one loop (loops), from 16 on chains with libm "
           "calls kept apart\n(chains+split); krn: kernels in the (first) plan; vec: loops gcc "
           "reports vectorised\n(-fopt-info-vec-optimized) in the whole file\n");

    otc_graph * xor = NULL;
    if (argc > 1 && otc_model_load(argv[1], &xor)) {
        fprintf(stderr, "%s: %s\n", argv[1], otc_last_error());
        return 1;
    }
    if (!xor) xor = hand_xor();
    otc_emit_c_options o = otc_emit_c_defaults();
    o.name = "xor";
    o.batch = 1;
    otc_emit_c_files(xor, &o, dir);
    int neurons = 0;
    for (otc_id id = 0; id < otc_graph_size(xor); id++)
        neurons += otc_graph_node(xor, id)->op == OTC_OP_NEURON;
    printf("\nXOR %s (%d neurons, %d connections, fixed batch 1): .text bytes\n",
           argc > 1 ? argv[1] : "hand-made 2-1-1", neurons, count_connections(xor));
    const char *sets[4][2] = {{"cc", "-O2"},
                              {"cc", "-Os"},
                              {"aarch64-linux-gnu-gcc", "-O2"},
                              {"aarch64-linux-gnu-gcc", "-Os"}};
    for (int i = 0; i < 4; i++) {
        long t = text_size(sets[i][0], sets[i][1], dir, "xor");
        if (t >= 0) printf("  %-24s %-4s %6ld\n", sets[i][0], sets[i][1], t);
    }
    otc_graph_free(xor);
    otc_graph_free(neat);
    otc_graph_free(mlp);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
