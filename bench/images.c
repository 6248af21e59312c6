/* The image ops in the interpreter against PyTorch eager and raw OpenBLAS:
 *   - the example's CNN (examples/fashion_mnist.c, LeNet-5 on 1x28x28): a training step at
 *     batch 64 (forward, softmax cross-entropy, backward, Adam) and inference at batch 1 and
 *     64, at 1 and 2 threads (OpenBLAS's, the interpreter's only ones; PyTorch's set the same
 *     way by bench/images_torch.py, run from here);
 *   - a large convolution (8x64x56x56, 3x3 pad 1 -> 64 channels, ResNet's first stage) in
 *     GFLOP/s, forward and forward + backward, against one sgemm of the same product
 *     (64 x 576 x 25088) at the same thread count.
 * Every figure is the median of 7 timed blocks of about 0.3 s in all. The compiled backends'
 * columns join as the compiler lowers the image ops.
 * Usage: images [--quick]   (--quick: shorter blocks, for a smoke run) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "bench_timing.h"
#include "otc/otc.h"

static double block_seconds = 0.3;

typedef struct {
    otc_executor *ex;
    otc_optimizer *opt;
    otc_id in, labels, loss, out;
    int batch;
    float *x, *y;
    bool train;
} job;

static int run(job *j) {
    if (otc_exec_set_input(j->ex, j->in, j->x, j->batch)) return -1;
    if (j->train) {
        float l;
        return otc_exec_set_input(j->ex, j->labels, j->y, j->batch) ||
                       otc_exec_train_step(j->ex, j->loss, j->opt, &l)
                   ? -1
                   : 0;
    }
    const float *v;
    return otc_exec_forward(j->ex) || otc_exec_value(j->ex, j->out, &v, NULL) ? -1 : 0;
}

static int run_job(void *j) {
    return run(j);
}

/* The example's CNN on x [B,1,28,28]; the logits. */
static otc_id lenet(otc_graph *g, otc_id x, otc_rng *rng) {
    otc_pool2d_params pool = {.kernel_h = 2, .kernel_w = 2};
    otc_id h =
        otc_conv2d_layer(g, x, 6, 5, &(otc_conv2d_params){.pad_h = 2, .pad_w = 2}, rng, "conv1");
    h = otc_maxpool2d(g, "pool1", otc_activation(g, OTC_OP_RELU, h, 0), &pool);
    h = otc_conv2d_layer(g, h, 16, 5, NULL, rng, "conv2");
    h = otc_maxpool2d(g, "pool2", otc_activation(g, OTC_OP_RELU, h, 0), &pool);
    h = otc_flatten(g, h);
    h = otc_activation(g, OTC_OP_RELU, otc_linear(g, h, 120, rng, "fc1"), 0);
    h = otc_activation(g, OTC_OP_RELU, otc_linear(g, h, 84, rng, "fc2"), 0);
    return otc_linear(g, h, 10, rng, "fc3");
}

/* Seconds per training step (batch 64) or forward (batch 1, 64) of the CNN. */
static double time_cnn(bool train, int batch) {
    otc_rng rng;
    otc_rng_seed(&rng, 1);
    otc_graph *g = otc_graph_new();
    job j = {.batch = batch, .train = train};
    j.in = otc_input(g, "image", (otc_shape){4, {OTC_BATCH, 1, 28, 28}});
    j.out = lenet(g, j.in, &rng);
    if (train) { /* the loss only where it is computed */
        j.labels = otc_input(g, "label", otc_shape_2d(OTC_BATCH, 1));
        j.loss = otc_softmax_ce(g, j.out, j.labels);
    }
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_ADAM);
    j.opt = otc_optimizer_new(&cfg);
    otc_exec_options eo = {.inference = !train};
    j.ex = otc_interpreter_new(g, &eo);
    j.x = malloc((size_t)batch * 784 * sizeof *j.x);
    j.y = malloc((size_t)batch * sizeof *j.y);
    double t = -1;
    if (j.out >= 0 && j.loss >= 0 && j.opt && j.ex && j.x && j.y) {
        for (int i = 0; i < batch * 784; i++) j.x[i] = otc_rng_uniform(&rng);
        for (int i = 0; i < batch; i++) j.y[i] = (float)otc_rng_below(&rng, 10);
        t = bench_median_time(run_job, &j, block_seconds);
    }
    free(j.x);
    free(j.y);
    otc_exec_free(j.ex);
    otc_optimizer_free(j.opt);
    otc_graph_free(g);
    return t;
}

/* ---- the large convolution ---- */

enum { LB = 8, LC = 64, LH = 56, LO = 64, LK = 3 };
#define LARGE_FLOPS (2.0 * LB * LO * LH * LH * LC * LK * LK)

typedef struct {
    otc_executor *ex;
    otc_id x, loss;
    float *data;
    bool backward;
} conv_job;

static int run_conv(void *arg) {
    conv_job *c = arg;
    if (otc_exec_set_input(c->ex, c->x, c->data, LB) || otc_exec_forward(c->ex)) return -1;
    return c->backward && otc_exec_backward(c->ex, c->loss) ? -1 : 0;
}

/* GFLOP/s of the interpreter's conv forward (backward: forward + both gradients, 3x). The
 * backward's loss is a sum, whose own cost is small beside the convolution's. */
static double conv_gflops(bool backward) {
    otc_rng rng;
    otc_rng_seed(&rng, 2);
    otc_graph *g = otc_graph_new();
    conv_job c = {.backward = backward};
    c.x = otc_input(g, "x", (otc_shape){4, {OTC_BATCH, LC, LH, LH}});
    otc_id y = otc_conv2d_layer(g, c.x, LO, LK, &(otc_conv2d_params){.pad_h = 1, .pad_w = 1}, &rng,
                                "conv");
    c.loss = otc_sum(g, y);
    otc_exec_options eo = {.inference = !backward};
    c.ex = otc_interpreter_new(g, &eo);
    c.data = malloc((size_t)LB * LC * LH * LH * sizeof *c.data);
    double t = -1;
    if (c.loss >= 0 && c.ex && c.data) {
        for (size_t i = 0; i < (size_t)LB * LC * LH * LH; i++)
            c.data[i] = otc_rng_uniform(&rng) - 0.5f;
        t = bench_median_time(run_conv, &c, block_seconds);
    }
    free(c.data);
    otc_exec_free(c.ex);
    otc_graph_free(g);
    return t > 0 ? LARGE_FLOPS * (backward ? 3 : 1) / t * 1e-9 : -1;
}

typedef struct {
    float *a, *b, *c;
} gemm_job;

static int run_gemm(void *arg) {
    gemm_job *m = arg;
    int M = LO, K = LC * LK * LK, N = LB * LH * LH;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, m->a, K, m->b, N, 0.0f,
                m->c, N);
    return 0;
}

static double sgemm_gflops(void) {
    size_t M = LO, K = LC * LK * LK, N = (size_t)LB * LH * LH;
    gemm_job m = {calloc(M * K, sizeof(float)), calloc(K * N, sizeof(float)),
                  calloc(M * N, sizeof(float))};
    double t = m.a && m.b && m.c ? bench_median_time(run_gemm, &m, block_seconds) : -1;
    free(m.a);
    free(m.b);
    free(m.c);
    return t > 0 ? LARGE_FLOPS / t * 1e-9 : -1;
}

/* ---- PyTorch ---- */

typedef struct {
    bool have;
    double train_ms, infer1_us, infer64_us;
} torch_row;

static void read_torch(torch_row *rows) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/bench/images_torch.py 2>/dev/null",
             OTC_SOURCE_DIR);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    char line[256];
    int th;
    double tr, i1, i64;
    while (fgets(line, sizeof line, p))
        if (sscanf(line, "%d %lf %lf %lf", &th, &tr, &i1, &i64) == 4 && th >= 1 && th <= 2)
            rows[th] = (torch_row){true, tr, i1, i64};
    pclose(p);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--quick")) block_seconds = 0.05;
    double train[3], inf1[3], inf64[3], conv_f[3], conv_b[3], gemm[3];
    for (int th = 1; th <= 2; th++) {
        openblas_set_num_threads(th);
        train[th] = time_cnn(true, 64);
        inf1[th] = time_cnn(false, 1);
        inf64[th] = time_cnn(false, 64);
        conv_f[th] = conv_gflops(false);
        conv_b[th] = conv_gflops(true);
        gemm[th] = sgemm_gflops();
        if (train[th] < 0 || inf1[th] < 0 || inf64[th] < 0 || conv_f[th] < 0 || conv_b[th] < 0) {
            fprintf(stderr, "images: %s\n", otc_last_error());
            return 2;
        }
    }
    torch_row torch[3] = {0};
    read_torch(torch);
    bool have_torch = torch[1].have || torch[2].have;

    printf("LeNet-5 (the Fashion-MNIST example), median of 7 blocks; 1t/2t: OpenBLAS or "
           "PyTorch threads\n");
    printf("  %-34s %10s %10s", "", "otc 1t", "otc 2t");
    if (have_torch) printf(" %10s %10s", "torch 1t", "torch 2t");
    putchar('\n');
    const char *names[3] = {"training step, batch 64 (ms)", "inference, batch 1 (us)",
                            "inference, batch 64 (us)"};
    for (int r = 0; r < 3; r++) {
        double *v = r == 0 ? train : r == 1 ? inf1 : inf64, scale = r == 0 ? 1e3 : 1e6;
        printf("  %-34s %10.3f %10.3f", names[r], v[1] * scale, v[2] * scale);
        for (int th = 1; have_torch && th <= 2; th++) {
            double t = r == 0   ? torch[th].train_ms
                       : r == 1 ? torch[th].infer1_us
                                : torch[th].infer64_us;
            if (torch[th].have)
                printf(" %10.3f", t);
            else
                printf(" %10s", "-");
        }
        putchar('\n');
    }
    if (!have_torch) printf("  (PyTorch columns left out: /usr/bin/python3 cannot import torch)\n");
    printf("\nconv 8x64x56x56, 3x3 pad 1 -> 64 (%.2f GFLOP per forward), GFLOP/s\n",
           LARGE_FLOPS * 1e-9);
    printf("  %-34s %10s %10s\n", "", "1t", "2t");
    printf("  %-34s %10.1f %10.1f\n", "interpreter forward", conv_f[1], conv_f[2]);
    printf("  %-34s %10.1f %10.1f\n", "interpreter forward + backward", conv_b[1], conv_b[2]);
    printf("  %-34s %10.1f %10.1f\n", "sgemm 64 x 576 x 25088 (OpenBLAS)", gemm[1], gemm[2]);
    printf("  %-34s %9.0f%% %9.0f%%\n", "forward / sgemm", 100 * conv_f[1] / gemm[1],
           100 * conv_f[2] / gemm[2]);
    return 0;
}
