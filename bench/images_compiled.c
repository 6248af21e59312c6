/* The example's CNN (examples/fashion_mnist.c: LeNet-5 on 1x28x28) compiled: a training step
 * at batch 64 (forward, softmax cross-entropy, backward, Adam) and inference at batch 1 and
 * 64 on the interpreter, the LLVM JIT and the emitted C (cc -O3 -march=native, the JIT's
 * target), one thread, against PyTorch eager and TorchScript (traced, frozen, optimised for
 * inference) at 1 and 2 threads (bench/images_torch.py, when it and torch are there); every
 * row's GFLOP/s and its fraction of the one-thread sgemm peak (bench/gflops.h), the peers'
 * time over otc's; the emitted C's code and weight size. Median of 7 timed blocks.
 * Usage: images_compiled [--quick] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cblas.h>

#include "otc/compiler.h"
#include "otc/jit.h"
#include "bench_timing.h"
#include "gflops.h"
#include "otc/otc.h"

static double block_seconds = 0.3;

/* The example's network (examples/fashion_mnist.c). */
static otc_graph *lenet(otc_id *x, otc_id *labels, otc_id *out, otc_id *loss) {
    otc_rng rng;
    otc_rng_seed(&rng, 1);
    otc_graph *g = otc_graph_new();
    *x = otc_input(g, "image", (otc_shape){4, {OTC_BATCH, 1, 28, 28}});
    otc_pool2d_params pool = {.kernel_h = 2, .kernel_w = 2};
    otc_conv2d_params same = {.pad_h = 2, .pad_w = 2};
    otc_id h = otc_conv2d_layer(g, *x, 6, 5, &same, &rng, "conv1");
    h = otc_maxpool2d(g, "pool1", otc_activation(g, OTC_OP_RELU, h, 0), &pool);
    h = otc_conv2d_layer(g, h, 16, 5, NULL, &rng, "conv2");
    h = otc_maxpool2d(g, "pool2", otc_activation(g, OTC_OP_RELU, h, 0), &pool);
    h = otc_flatten(g, h);
    h = otc_activation(g, OTC_OP_RELU, otc_linear(g, h, 120, &rng, "fc1"), 0);
    h = otc_activation(g, OTC_OP_RELU, otc_linear(g, h, 84, &rng, "fc2"), 0);
    *out = otc_linear(g, h, 10, &rng, "fc3");
    otc_graph_mark_output(g, *out);
    *labels = otc_input(g, "label", otc_shape_2d(OTC_BATCH, 1));
    *loss = otc_softmax_ce(g, *out, *labels);
    return g;
}

typedef struct {
    otc_executor *ex;
    otc_optimizer *opt;
    otc_id in, labels, loss, out;
    int batch;
    const float *x, *y;
    bool train;
} job;

static int run_exec(void *arg) {
    job *j = arg;
    if (otc_exec_set_input(j->ex, j->in, j->x, j->batch) ||
        otc_exec_set_input(j->ex, j->labels, j->y, j->batch))
        return -1;
    if (j->train) {
        float l;
        return otc_exec_train_step(j->ex, j->loss, j->opt, &l) ? -1 : 0;
    }
    const float *v;
    return otc_exec_forward(j->ex) || otc_exec_value(j->ex, j->out, &v, NULL) ? -1 : 0;
}

/* The emitted C, loaded. */
typedef int (*fwd_fn)(const void *, const float *, float *, int, void *);
typedef int (*step_fn)(void *, const float *, const float *, int, float, float *, void *);
typedef struct {
    fwd_fn fwd;
    step_fn step;
    void *params, *ws;
    int batch;
    const float *x, *y;
    float *out;
    bool train;
} cjob;

static int run_c(void *arg) {
    cjob *j = arg;
    float l;
    return j->train ? j->step(j->params, j->x, j->y, j->batch, 1e-3f, &l, j->ws)
                    : j->fwd(j->params, j->x, j->out, j->batch, j->ws);
}

static long file_size(const char *path) {
    struct stat s;
    return stat(path, &s) ? -1 : (long)s.st_size;
}

typedef struct {
    bool have;
    double t[3]; /* train64 (ms), infer1 (us), infer64 (us) */
} torch_row;

/* PyTorch's figures: rows[0..2] eager at 0/1/2 threads, rows[3..5] TorchScript ("ts" lines). */
static void read_torch(torch_row *rows) {
    char cmd[1024], path[900], line[256];
    snprintf(path, sizeof path, "%s/bench/images_torch.py", OTC_SOURCE_DIR);
    if (file_size(path) < 0) return;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s 2>/dev/null", path);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    int th;
    double tr, i1, i64;
    while (fgets(line, sizeof line, p)) {
        bool ts = !strncmp(line, "ts ", 3);
        if (sscanf(line + (ts ? 3 : 0), "%d %lf %lf %lf", &th, &tr, &i1, &i64) == 4 && th >= 1 &&
            th <= 2)
            rows[th + (ts ? 3 : 0)] = (torch_row){true, {tr, i1, i64}};
    }
    pclose(p);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--quick")) block_seconds = 0.05;
    openblas_set_num_threads(1);
    otc_id x, labels, out, loss;
    otc_graph *g = lenet(&x, &labels, &out, &loss);
    enum { B = 64 };
    float *xs = malloc(B * 784 * sizeof *xs), ys[B], *outs = malloc(B * 10 * sizeof *outs);
    otc_rng rng;
    otc_rng_seed(&rng, 2);
    for (int i = 0; i < B * 784; i++) xs[i] = otc_rng_uniform(&rng);
    for (int i = 0; i < B; i++) ys[i] = (float)otc_rng_below(&rng, 10);
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_ADAM);
    cfg.lr = 1e-3f;
    double t[3][3] = {{0}}; /* [interpreter, jit, emitted C][train64, infer1, infer64] */

    /* interpreter and JIT */
    for (int backend = 0; backend < 2; backend++) {
        otc_executor *tr = NULL, *inf = NULL;
        if (backend == 0) {
            tr = otc_interpreter_new(g, NULL);
            inf = otc_interpreter_new(g, &(otc_exec_options){.inference = true});
        } else {
            otc_jit_options jo = otc_jit_defaults();
            otc_id l = loss;
            if (otc_jit_executors_new(&g, &l, 1, &jo, &tr)) tr = NULL;
            jo.inference = true;
            if (otc_jit_executors_new(&g, NULL, 1, &jo, &inf)) inf = NULL;
        }
        if (!tr || !inf) {
            fprintf(stderr, "images_compiled: %s\n", otc_last_error());
            return 1;
        }
        otc_optimizer *opt = otc_optimizer_new(&cfg);
        job j = {tr, opt, x, labels, loss, out, B, xs, ys, true};
        t[backend][0] = bench_median_time(run_exec, &j, block_seconds);
        job i1 = {inf, NULL, x, labels, loss, out, 1, xs, ys, false}, i64 = i1;
        i64.batch = B;
        t[backend][1] = bench_median_time(run_exec, &i1, block_seconds);
        t[backend][2] = bench_median_time(run_exec, &i64, block_seconds);
        otc_optimizer_free(opt);
        otc_exec_free(tr);
        otc_exec_free(inf);
    }

    /* emitted C: the training code (its forward serves inference) and, for the sizes, the
     * inference-only code with the weights compiled in */
    char dir[] = "/tmp/otc_images_compiled_XXXXXX", cmd[1024], so[128], obj[128];
    if (!mkdtemp(dir)) return 1;
    otc_emit_c_options eo = otc_emit_c_defaults();
    eo.name = "lenet";
    eo.train = true;
    eo.loss = loss;
    eo.optim = cfg;
    otc_emit_c_options ei = otc_emit_c_defaults();
    ei.name = "lenet_inf";
    if (otc_emit_c_files(g, &eo, dir) || otc_emit_c_files(g, &ei, dir)) {
        fprintf(stderr, "images_compiled: %s\n", otc_last_error());
        return 1;
    }
    snprintf(so, sizeof so, "%s/lenet.so", dir);
    snprintf(obj, sizeof obj, "%s/lenet_inf.o", dir);
    snprintf(cmd, sizeof cmd,
             "cc -std=c99 -O3 -march=native -shared -fPIC -o %s %s/lenet.c -lm && "
             "cc -std=c99 -O2 -c -o %s %s/lenet_inf.c",
             so, dir, obj, dir);
    if (system(cmd) != 0) return 1;
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) return 1;
    cjob c = {(fwd_fn)dlsym(h, "lenet_forward"),
              (step_fn)dlsym(h, "lenet_train_step"),
              NULL,
              NULL,
              B,
              xs,
              ys,
              outs,
              true};
    size_t (*ws_bytes)(int) = (size_t(*)(int))dlsym(h, "lenet_train_workspace_bytes");
    size_t (*fws_bytes)(int) = (size_t(*)(int))dlsym(h, "lenet_workspace_bytes");
    void (*init)(void *) = (void (*)(void *))dlsym(h, "lenet_params_init");
    if (!c.fwd || !c.step || !ws_bytes || !fws_bytes || !init) return 1;
    int64_t n_w = 0;
    for (otc_id id = 0; id < otc_graph_size(g); id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op == OTC_OP_PARAMETER) n_w += (int64_t)nd->value->size;
    }
    size_t wsb = ws_bytes(B) > fws_bytes(B) ? ws_bytes(B) : fws_bytes(B);
    c.params = aligned_alloc(64, ((size_t)(3 * n_w + 16) * 4 + 63) / 64 * 64);
    c.ws = aligned_alloc(64, (wsb + 63) / 64 * 64);
    init(c.params);
    t[2][0] = bench_median_time(run_c, &c, block_seconds);
    c.train = false;
    c.batch = 1;
    t[2][1] = bench_median_time(run_c, &c, block_seconds);
    c.batch = B;
    t[2][2] = bench_median_time(run_c, &c, block_seconds);

    /* sizes: the inference code's object, its code (.text) and its constant data (.rodata
     * and .data: the weights are compiled in) */
    snprintf(cmd, sizeof cmd, "size -A %s > %s/size.txt", obj, dir);
    long text = 0, data = 0;
    if (system(cmd) == 0) {
        char p[160], sec[64];
        long n, addr;
        snprintf(p, sizeof p, "%s/size.txt", dir);
        FILE *f = fopen(p, "r");
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "%63s %ld %ld", sec, &n, &addr) == 3) {
                if (!strcmp(sec, ".text")) text += n;
                if (!strncmp(sec, ".rodata", 7) || !strcmp(sec, ".data")) data += n;
            }
        if (f) fclose(f);
    }

    torch_row torch[6] = {{0}};
    read_torch(torch);
    double peak = bench_sgemm_peak(block_seconds);
    double fwd_flops = bench_graph_flops(g); /* per sample */
    printf("LeNet-5 on 1x28x28 (examples/fashion_mnist.c), one thread unless said; torch: "
           "eager, ts: TorchScript\n");
    static const char *cols[] = {"interpreter", "jit",   "emitted C", "torch 1t",
                                 "torch 2t",    "ts 1t", "ts 2t"};
    printf("%-22s", "");
    for (int k = 0; k < 7; k++) printf(" %11s", cols[k]);
    printf("\n");
    const char *rows[3] = {"train step b64 (ms)", "inference b1 (us)", "inference b64 (us)"};
    double sec[3][7]; /* seconds per call, -1 where missing */
    for (int r = 0; r < 3; r++) {
        double scale = r == 0 ? 1e3 : 1e6;
        for (int k = 0; k < 7; k++) {
            const torch_row *tr = k < 3 ? NULL : &torch[k < 5 ? k - 2 : k - 1];
            sec[r][k] = k < 3 ? t[k][r] : tr->have ? tr->t[r] / scale : -1;
        }
        printf("%-22s", rows[r]);
        for (int k = 0; k < 7; k++)
            if (sec[r][k] < 0)
                printf(" %11s", "-");
            else
                printf(" %11.3f", sec[r][k] * scale);
        printf("\n");
    }
    printf("GFLOP/s (%% of the one-thread sgemm peak, %.1f GFLOP/s; training counted as 3x the "
           "forward's %.0f flops per sample)\n",
           peak, fwd_flops);
    for (int r = 0; r < 3; r++) {
        double flops = fwd_flops * (r == 0 ? 3 : 1) * (r == 1 ? 1 : B);
        printf("%-22s", rows[r]);
        for (int k = 0; k < 7; k++) {
            char cell[32] = "-";
            if (sec[r][k] > 0)
                snprintf(cell, sizeof cell, "%.1f (%.0f%%)", flops / sec[r][k] * 1e-9,
                         100 * flops / sec[r][k] * 1e-9 / peak);
            printf(" %11s", cell);
        }
        printf("\n");
    }
    printf("speed against TorchScript 1t / eager 1t (their time over otc's; above 1: otc is "
           "faster)\n");
    for (int r = 0; r < 3; r++) {
        printf("%-22s", rows[r]);
        for (int k = 0; k < 3; k++)
            if (sec[r][5] > 0 && sec[r][3] > 0)
                printf(" %5.2fx/%4.2fx", sec[r][5] / sec[r][k], sec[r][3] / sec[r][k]);
        printf("\n");
    }
    if (!torch[1].have) printf("(no PyTorch columns: bench/images_torch.py or torch missing)\n");
    printf("emitted C for inference (cc -O2): code %ld bytes, constant data %ld bytes (the "
           "weights: %lld floats)\n",
           text, data, (long long)n_w);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    free(c.params);
    free(c.ws);
    free(xs);
    free(outs);
    otc_graph_free(g);
    return 0;
}
