/* Differential tests of the C renderer: random evolved-style graphs and MLPs rendered to C,
 * built with the system compiler, and compared with the interpreter (forward outputs within
 * 1e-5 relative, i.e. |c - i| <= 1e-5 * max(1, |i|); gradients within 1e-4 the same way). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emitc_support.h"
#include "harness.h"
#include "otc/random_graph.h"

#define FWD_TOL  1e-5
#define GRAD_TOL 1e-4

/* Sizes from 1 to 500 neurons, mostly small as evolved networks are. */
static int neat_size(int i, otc_rng *rng, int max) {
    if (i == 0) return 1;
    if (i == 1) return max;
    float u = otc_rng_uniform(rng);
    if (u < 0.6f || max <= 30) return 1 + (int)otc_rng_below(rng, max < 30 ? (uint32_t)max : 30);
    if (u < 0.96f || max <= 120)
        return 30 + (int)otc_rng_below(rng, (uint32_t)(max < 120 ? max - 29 : 90));
    return 120 + (int)otc_rng_below(rng, (uint32_t)(max - 119));
}

static otc_graph *random_neat(uint64_t seed, int i, otc_rng *rng, int max) {
    otc_testgen_neat_options o = otc_testgen_neat_defaults(neat_size(i, rng, max));
    o.n_inputs = 1 + (int)otc_rng_below(rng, 8);
    o.n_outputs = 1 + (int)otc_rng_below(rng, o.n_neurons < 4 ? (uint32_t)o.n_neurons : 4);
    o.max_fanin = 1 + (int)otc_rng_below(rng, 8);
    o.mixed_ops = i % 2 == 1;
    o.two_inputs = i % 3 == 2;
    return otc_testgen_neat(seed, &o);
}

/* Forward differential over n graphs, built `per_build` at a time. */
static void neat_forward(int n, int per_build, uint64_t seed, const char *cflags, int max) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    int failures = 0;
    for (int start = 0; start < n; start += per_build) {
        int m = n - start < per_build ? n - start : per_build;
        emitc_case *cs = calloc((size_t)m, sizeof *cs);
        REQUIRE(cs);
        for (int i = 0; i < m; i++) {
            otc_graph *g = random_neat(seed * 1000 + (uint64_t)(start + i), start + i, &rng, max);
            REQUIRE(g);
            REQUIRE(emitc_case_init(&cs[i], g, start + i, NULL));
        }
        emitc_build b;
        bool built = emitc_build_cases(cs, m, cflags, &b);
        CHECK(built);
        for (int i = 0; built && i < m; i++) {
            int batch = 2 + (int)otc_rng_below(&rng, 39);
            bool ok = emitc_check_forward(&cs[i], &b, 1, seed + (uint64_t)i, FWD_TOL) &&
                      emitc_check_forward(&cs[i], &b, batch, seed + 7 * (uint64_t)i, FWD_TOL);
            if (!ok) failures++;
        }
        emitc_unload(&b);
        for (int i = 0; i < m; i++) emitc_case_free(&cs[i]);
        free(cs);
    }
    CHECK_MSG(failures == 0, "%d of %d graphs disagree with the interpreter", failures, n);
}

/* 160 evolved-style graphs of 1..500 neurons (half with elementwise, concat, slice, reshape
 * and row-broadcast ops between neurons), each at batch 1 and a random batch of 2..40 (both
 * code paths), 40 per test so ctest can run them side by side; one compiler run each, at -O0
 * to keep it short (optimised builds follow). */
TEST(emitc_diff_neat_forward_a) {
    neat_forward(40, 40, 11, "-std=c99 -O0", 500);
}
TEST(emitc_diff_neat_forward_b) {
    neat_forward(40, 40, 12, "-std=c99 -O0", 500);
}
TEST(emitc_diff_neat_forward_c) {
    neat_forward(40, 40, 13, "-std=c99 -O0", 500);
}
TEST(emitc_diff_neat_forward_d) {
    neat_forward(40, 40, 14, "-std=c99 -O0", 500);
}

/* The benchmark's flags: loops vectorised across the batch, where rounding must not change.
 * 8 graphs (1 neuron, 80, and six between; every mix of plain/mixed ops and one/two
 * inputs): the compile at -O3 is the cost, and the 160 above cover the graph kinds. */
TEST(emitc_diff_neat_forward_o3_native) {
    neat_forward(8, 8, 15, "-std=c99 -O3 -march=native", 80);
}

static otc_graph *random_mlp(uint64_t seed, otc_rng *rng, int i) {
    static const otc_op acts[] = {OTC_OP_RELU, OTC_OP_TANH,     OTC_OP_SIGMOID,  OTC_OP_LEAKY_RELU,
                                  OTC_OP_ELU,  OTC_OP_SOFTPLUS, OTC_OP_GAUSSIAN, OTC_OP_SIN,
                                  OTC_OP_ABS,  OTC_OP_IDENTITY};
    int sizes[6];
    int n = 2 + (int)otc_rng_below(rng, 4);
    for (int k = 0; k < n; k++) sizes[k] = 1 + (int)otc_rng_below(rng, 40);
    otc_op hidden = acts[i % 10];
    int out = otc_rng_uniform(rng) < 0.5f ? -1 : (int)acts[otc_rng_below(rng, 10)];
    return otc_testgen_mlp(seed, n, sizes, hidden, out);
}

TEST(emitc_diff_mlp_forward) {
    /* 40 MLPs of 1-4 layers, 1-40 wide, every activation, plus the benchmark's
     * 8-128-64-32-1; batches 1, 3 and 37. At -O0, half the compile of -O1: the optimisation
     * levels are the NEAT tests' point (-O0, -O3 -march=native), with -O1 and -O2 below. */
    enum { N = 41 };
    otc_rng rng;
    otc_rng_seed(&rng, 21);
    emitc_case cs[N];
    for (int i = 0; i < N; i++) {
        static const int big[5] = {8, 128, 64, 32, 1};
        otc_graph *g = i == N - 1 ? otc_testgen_mlp(5, 5, big, OTC_OP_RELU, -1)
                                  : random_mlp((uint64_t)i, &rng, i);
        REQUIRE(emitc_case_init(&cs[i], g, i, NULL));
    }
    emitc_build b;
    CHECK(emitc_build_cases(cs, N, "-std=c99 -O0", &b));
    int failures = 0;
    for (int i = 0; b.so && i < N; i++) {
        bool ok = true;
        int batches[3] = {1, 3, 37};
        for (int k = 0; k < 3; k++)
            ok =
                emitc_check_forward(&cs[i], &b, batches[k], (uint64_t)(100 * i + k), FWD_TOL) && ok;
        failures += !ok;
    }
    CHECK_MSG(failures == 0, "%d MLPs disagree", failures);
    emitc_unload(&b);
    for (int i = 0; i < N; i++) emitc_case_free(&cs[i]);
}

TEST(emitc_diff_fixed_batch) {
    /* --batch 16: a constant workspace, any batch up to 16 (the layout keeps stride 16). */
    enum { N = 12 };
    otc_rng rng;
    otc_rng_seed(&rng, 31);
    emitc_case cs[N];
    for (int i = 0; i < N; i++) {
        otc_emit_c_options eo = otc_emit_c_defaults();
        eo.batch = 16;
        otc_graph *g = i % 3 == 0 ? random_mlp((uint64_t)i, &rng, i)
                                  : random_neat(500 + (uint64_t)i, 2 + i, &rng, 100);
        REQUIRE(emitc_case_init(&cs[i], g, i, &eo));
    }
    emitc_build b;
    CHECK(emitc_build_cases(cs, N, "-std=c99 -O2", &b));
    for (int i = 0; b.so && i < N; i++) {
        CHECK(emitc_check_forward(&cs[i], &b, 16, (uint64_t)i, FWD_TOL));
        CHECK(emitc_check_forward(&cs[i], &b, 5, (uint64_t)i + 50, FWD_TOL));
        CHECK(emitc_check_forward(&cs[i], &b, 1, (uint64_t)i + 90, FWD_TOL));
    }
    /* Beyond the fixed batch: refused. */
    if (b.so) {
        int (*f)(const float *, float *, int, void *) =
            (int (*)(const float *, float *, int, void *))emitc_sym(&b, cs[0].name, "forward");
        float in[1024] = {0}, out[1024];
        static float ws[1 << 16];
        CHECK(f && f(in, out, 17, ws) == 1);
        CHECK(f && f(in, out, 0, ws) == 1);
        CHECK(f && f(NULL, out, 1, ws) == (cs[0].fwd->in_width > 0 ? 1 : 0));
    }
    emitc_unload(&b);
    for (int i = 0; i < N; i++) emitc_case_free(&cs[i]);
}

TEST(emitc_one_sample_product_exact) {
    /* One sample through x W + b into 67 columns: a block of 64 with its sums in registers,
     * then a block of 3; from 5 inputs (W in cache: one pass), and from 130 (W of 8,710
     * floats: chunks of 61, 61 and 8 rows, the sums carried between them). Small integers
     * make every float sum exact, so the outputs must equal the sums worked out here, in the
     * default layout and in a fixed one whose batch stride (4) is not the batch (1). */
    enum { N = 67, KMAX = 130, CASES = 4 };
    static float w[KMAX * N];
    float bias[N], x[KMAX];
    for (int q = 0; q < KMAX; q++) {
        x[q] = (float)(q % 9 - 4);
        for (int e = 0; e < N; e++) w[q * N + e] = (float)((q * 7 + e * 3) % 11 - 5);
    }
    for (int e = 0; e < N; e++) bias[e] = (float)(e % 5 - 2);
    emitc_case cs[CASES];
    for (int i = 0; i < CASES; i++) {
        int k = i < 2 ? 5 : KMAX;
        otc_graph *g = otc_graph_new();
        REQUIRE(g);
        otc_id in = otc_input(g, "x", otc_shape_2d(OTC_BATCH, k));
        otc_id mm = otc_matmul(g, in, otc_param(g, "W", otc_shape_2d(k, N), w));
        otc_id y =
            otc_add(g, mm, otc_row_broadcast(g, otc_param(g, "b", otc_shape_1d(N), bias), mm));
        REQUIRE(y >= 0 && otc_graph_mark_output(g, y) == OTC_OK);
        otc_emit_c_options eo = otc_emit_c_defaults();
        eo.batch = i % 2 ? 4 : 0;
        REQUIRE(emitc_case_init(&cs[i], g, i, &eo));
    }
    emitc_build b;
    CHECK(emitc_build_cases(cs, CASES, "-std=c99 -O2", &b));
    for (int i = 0; b.so && i < CASES; i++) {
        int k = i < 2 ? 5 : KMAX;
        int (*f)(const float *, float *, int, void *) =
            (int (*)(const float *, float *, int, void *))emitc_sym(&b, cs[i].name, "forward");
        void *ws = calloc(1, emitc_workspace_bytes(&cs[i], &b, 1));
        float out[N];
        CHECK(f && ws && f(x, out, 1, ws) == 0);
        for (int e = 0; f && ws && e < N; e++) {
            int sum = (int)bias[e];
            for (int q = 0; q < k; q++) sum += (int)x[q] * (int)w[q * N + e];
            CHECK_MSG(out[e] == (float)sum, "case %d column %d: %g, want %d", i, e, (double)out[e],
                      sum);
        }
        free(ws);
    }
    emitc_unload(&b);
    for (int i = 0; i < CASES; i++) emitc_case_free(&cs[i]);
}

/* x W + b (x [B, k], W [k, n] integer-valued floats, row-major) through case i's forward at
 * batch B: every output must equal the integer sum worked out here, and nothing may be
 * written past the workspace the built code asks for (it gets a guard band after it, and
 * all of it starts NaN: a lane read from outside the batch or the workspace would show in
 * the outputs, a write past it in the band). `stride`: the layout's floats per row of a
 * value (the batch, or the fixed layout's). */
static bool product_exact(emitc_case *cs, emitc_build *b, int i, const float *x, const float *w,
                          const float *bias, int k, int n, int B, size_t stride) {
    int (*f)(const float *, float *, int, void *) =
        (int (*)(const float *, float *, int, void *))emitc_sym(b, cs->name, "forward");
    if (!f) return false;
    size_t bytes = emitc_workspace_bytes(cs, b, B);
    /* At least the input and the product, k + n floats per sample of the stride. */
    CHECK_MSG(bytes >= (size_t)(k + n) * stride * sizeof(float), "case %d batch %d: %zu bytes", i,
              B, bytes);
    enum { GUARD = 256 };
    unsigned char *ws = malloc(bytes + GUARD);
    float *out = malloc((size_t)B * (size_t)n * sizeof(float));
    if (!ws || !out) {
        free(ws);
        free(out);
        return false;
    }
    memset(ws, 0xff, bytes + GUARD); /* NaN */
    bool ran = f(x, out, B, ws) == 0;
    CHECK_MSG(ran, "case %d batch %d: forward failed", i, B);
    int bad = 0;
    for (int s = 0; ran && s < B; s++)
        for (int e = 0; e < n; e++) {
            int sum = (int)bias[e];
            for (int q = 0; q < k; q++) sum += (int)x[s * k + q] * (int)w[q * n + e];
            if (out[s * n + e] != (float)sum && bad++ < 3)
                fprintf(stderr, "case %d batch %d sample %d column %d: %g, want %d\n", i, B, s, e,
                        (double)out[s * n + e], sum);
        }
    CHECK_MSG(bad == 0, "case %d batch %d: %d outputs wrong", i, B, bad);
    size_t past = bytes + GUARD;
    for (size_t j = bytes; j < bytes + GUARD && past == bytes + GUARD; j++)
        if (ws[j] != 0xff) past = j;
    CHECK_MSG(past == bytes + GUARD, "case %d batch %d: wrote past its %zu bytes at %zu", i, B,
              bytes, past);
    free(ws);
    free(out);
    return ran && bad == 0 && past == bytes + GUARD;
}

/* x W + b as a graph, case i of an emitted file (batch: a fixed layout's, or 0). */
static bool product_case(emitc_case *cs, int i, int k, int n, const float *w, const float *bias,
                         int batch) {
    otc_graph *g = otc_graph_new();
    if (!g) return false;
    otc_id in = otc_input(g, "x", otc_shape_2d(OTC_BATCH, k));
    otc_id mm = otc_matmul(g, in, otc_param(g, "W", otc_shape_2d(k, n), w));
    otc_id y = otc_add(g, mm, otc_row_broadcast(g, otc_param(g, "b", otc_shape_1d(n), bias), mm));
    if (y < 0 || otc_graph_mark_output(g, y) != OTC_OK) return false;
    otc_emit_c_options eo = otc_emit_c_defaults();
    eo.batch = batch;
    return emitc_case_init(cs, g, i, &eo);
}

/* Small integers for W (k x n), the bias and x (rows x k): every sum exact in float. */
static void product_data(int k, int n, int rows, float *w, float *bias, float *x) {
    for (int q = 0; q < k; q++)
        for (int e = 0; e < n; e++) w[q * n + e] = (float)((q * 7 + e * 3) % 11 - 5);
    for (int e = 0; e < n; e++) bias[e] = (float)(e % 5 - 2);
    for (int i = 0; i < rows * k; i++) x[i] = (float)((i * 5 + i / k) % 9 - 4);
}

TEST(emitc_batched_product_tails_exact) {
    /* x W + b into 9 columns (blocks of 4, 4 and 1 rows) at batches around the product's
     * blocks of 16 samples: whole blocks, the samples short of one (a block overlapping the
     * one before), batches under 16 (blocks of 8 and 4, overlapped) and 2-3 (one at a time).
     * Small integers make every float sum exact, so each output must equal the sum worked
     * out here, whatever block computed it, written once or twice. In the default layout
     * and in a fixed one of stride 80. */
    enum { K = 37, N = 9, BMAX = 75, CASES = 2 };
    float w[K * N], bias[N];
    static float x[BMAX * K];
    product_data(K, N, BMAX, w, bias, x);
    emitc_case cs[CASES];
    for (int i = 0; i < CASES; i++) REQUIRE(product_case(&cs[i], i, K, N, w, bias, i ? 80 : 0));
    emitc_build b;
    CHECK(emitc_build_cases(cs, CASES, "-std=c99 -O1", &b));
    static const int batches[] = {2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 75};
    for (int i = 0; b.so && i < CASES; i++)
        for (size_t j = 0; j < sizeof batches / sizeof batches[0]; j++)
            product_exact(&cs[i], &b, i, x, w, bias, K, N, batches[j],
                          (size_t)(i ? 80 : batches[j]));
    emitc_unload(&b);
    for (int i = 0; i < CASES; i++) emitc_case_free(&cs[i]);
}

TEST(emitc_tall_product_blocks_exact) {
    /* x W + b into 31 columns: with G0_TALL_BLOCKS, blocks of 12 rows at 8 samples and more
     * (two: rows 0-23), the plan's 4 rows for the rest of the multiple of 4 (24-27), then
     * 3 rows (28-30); without it (G1), blocks of 4 and the 3. Batches around the widths 16
     * and 8 (last blocks overlapping the one before: 11, 15, 17, 75), under 8 (the plan's
     * blocks only), 1 (its own path). Small integers make every sum exact. */
    enum { K = 37, N = 31, BMAX = 75, CASES = 2 };
    float w[K * N], bias[N];
    static float x[BMAX * K];
    for (int q = 0; q < K; q++)
        for (int e = 0; e < N; e++) w[q * N + e] = (float)((q * 5 + e * 3) % 13 - 6);
    for (int e = 0; e < N; e++) bias[e] = (float)(e % 7 - 3);
    for (int i = 0; i < BMAX * K; i++) x[i] = (float)((i * 7 + i / K) % 9 - 4);
    emitc_case cs[CASES];
    for (int i = 0; i < CASES; i++) REQUIRE(product_case(&cs[i], i, K, N, w, bias, 0));
    emitc_build b;
    CHECK(emitc_build_cases(cs, CASES, "-std=c99 -O1 -DG0_TALL_BLOCKS=1 -DG1_TALL_BLOCKS=0", &b));
    static const int batches[] = {1, 2, 3, 4, 7, 8, 9, 11, 15, 16, 17, 31, 32, 33, 75};
    for (int i = 0; b.so && i < CASES; i++)
        for (size_t j = 0; j < sizeof batches / sizeof batches[0]; j++)
            product_exact(&cs[i], &b, i, x, w, bias, K, N, batches[j], (size_t)batches[j]);
    emitc_unload(&b);
    for (int i = 0; i < CASES; i++) emitc_case_free(&cs[i]);
}

TEST(emitc_large_product_panels_exact) {
    /* A W of more than 128K floats (600 x 220) takes the large-product path: panels of the
     * shared dimension (8192 floats of x: 109 rows of it at batch 75, 248 at 33, the floor of
     * 32 at 300; one panel at 3-5 samples), each block's sums carried in the output between
     * panels; blocks of 4 rows (55 of them) or, with G0_TALL_BLOCKS, of 12 (18 and one of 4)
     * at 8 samples and more (blocks of 16 samples, or 8 below 16). Batches whose samples end
     * mid-block have a last block overlapping the one before, which must store only its new samples
     * (it resumes from sums the block before has already carried on). Small integers: every sum
     * exact. Tall blocks in the default layout, the plain ones in a fixed layout of stride 320.
     * Batches under 16 and not a multiple of 8 (2-13) run blocks of W's columns instead
     * (emitc_narrow_batch_product_exact). */
    enum { K = 600, N = 220, BMAX = 300, CASES = 2 };
    static float w[K * N], x[BMAX * K];
    float bias[N];
    product_data(K, N, BMAX, w, bias, x);
    emitc_case cs[CASES];
    for (int i = 0; i < CASES; i++) REQUIRE(product_case(&cs[i], i, K, N, w, bias, i ? 320 : 0));
    emitc_build b;
    CHECK(emitc_build_cases(cs, CASES, "-std=c99 -O1 -DG0_TALL_BLOCKS=1 -DG1_TALL_BLOCKS=0", &b));
    static const int batches[] = {2, 3, 5, 7, 11, 13, 17, 33, 75, 300};
    for (int i = 0; b.so && i < CASES; i++)
        for (size_t j = 0; j < sizeof batches / sizeof batches[0]; j++)
            product_exact(&cs[i], &b, i, x, w, bias, K, N, batches[j],
                          (size_t)(i ? 320 : batches[j]));
    emitc_unload(&b);
    for (int i = 0; i < CASES; i++) emitc_case_free(&cs[i]);
}

/* A small convolutional network: conv (3x3, padding 1) -> relu -> 2x2 max pool -> dense. */
static otc_graph *small_cnn(otc_id *loss) {
    otc_rng rng;
    otc_rng_seed(&rng, 12);
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", (otc_shape){4, {OTC_BATCH, 2, 6, 7}});
    otc_id h =
        otc_conv2d_layer(g, x, 3, 3, &(otc_conv2d_params){.pad_h = 1, .pad_w = 1}, &rng, "conv");
    otc_pool2d_params pool = {.kernel_h = 2, .kernel_w = 2};
    h = otc_maxpool2d(g, "pool", otc_activation(g, OTC_OP_RELU, h, 0), &pool);
    otc_id y = otc_linear(g, otc_flatten(g, h), 4, &rng, "fc");
    otc_graph_mark_output(g, y);
    if (loss && otc_compile_add_loss(g, OTC_OP_MSE, loss, NULL) != OTC_OK) *loss = -1;
    return g;
}

/* The forward with its workspace ending where an unreadable page begins: a read past the
 * workspace faults. */
static bool forward_at_page_end(const emitc_case *c, const emitc_build *b, int batch) {
    size_t bytes = emitc_workspace_bytes(c, b, batch), span = (bytes + 15) / 16 * 16;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), total = (span + page - 1) / page * page + page;
    char *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m + total - page, page, PROT_NONE)) return false;
    otc_rng rng;
    otc_rng_seed(&rng, (uint64_t)batch);
    float *in = emitc_rows(c->fwd, OTC_IO_IN, batch, &rng, 0);
    float *out = malloc((size_t)batch * (size_t)c->fwd->out_width * sizeof(float));
    int (*f)(const float *, float *, int, void *) =
        (int (*)(const float *, float *, int, void *))emitc_sym(b, c->name, "forward");
    bool ok = in && out && f && f(in, out, batch, m + total - page - span) == 0;
    free(in);
    free(out);
    munmap(m, total);
    return ok;
}

TEST(emitc_conv_partial_chunks) {
    /* A convolution's and a pool's loop programs run whole chunks of 16 samples; the 2 to 15
     * left run as one more chunk whose lanes past the batch compute on what follows each row
     * but keep nothing, and a single one left runs alone. Batches around 16 and 32, forward
     * and gradients, against the interpreter; the forward also with its workspace ending at
     * an unreadable page (the lanes past the batch read only the workspace's slack). */
    emitc_case cs[2];
    otc_id loss = -1;
    REQUIRE(emitc_case_init(&cs[0], small_cnn(NULL), 0, NULL));
    otc_graph *gt = small_cnn(&loss);
    REQUIRE(loss >= 0);
    otc_emit_c_options eo = otc_emit_c_defaults();
    eo.train = true;
    eo.loss = loss;
    eo.optim = otc_optim_defaults(OTC_OPTIM_SGD);
    REQUIRE(emitc_case_init(&cs[1], gt, 1, &eo));
    emitc_build b;
    CHECK(emitc_build_cases(cs, 2, "-std=c99 -O1", &b));
    static const int batches[] = {1, 2, 3, 5, 11, 15, 16, 17, 18, 31, 33};
    for (size_t j = 0; b.so && j < sizeof batches / sizeof batches[0]; j++) {
        int B = batches[j];
        CHECK(emitc_check_forward(&cs[0], &b, B, (uint64_t)(10 + j), FWD_TOL));
        CHECK_MSG(forward_at_page_end(&cs[0], &b, B), "batch %d at the page's end", B);
        CHECK(emitc_check_gradients(&cs[1], &b, B, (uint64_t)(40 + j), GRAD_TOL, 0));
    }
    emitc_unload(&b);
    for (int i = 0; i < 2; i++) emitc_case_free(&cs[i]);
}

TEST(emitc_narrow_batch_product_exact) {
    /* Batches narrower than the widest block (16) and not a multiple of 8 run blocks of 64
     * of W's columns x 4 samples, every q in order: 131 columns (two blocks of 64 and one of
     * 3), W of 70 x 131 (beyond L1, no panels; the large-product path's are in
     * emitc_large_product_panels_exact). Batches around the cut-offs: 2-3 (blocks of 2,
     * overlapping at 3), 4-7 and 9-15 (of 4; the last 3 samples a block of 4 overlapping the
     * one before, the last 1-2 a block of 2, overlapping for 1), 8 and 16 (the plan's
     * blocks), 17. In the default layout and a fixed one of stride 24. Small
     * integers: every sum exact; the workspace starts NaN with a guard band after it. */
    enum { K = 70, N = 131, BMAX = 17, CASES = 2 };
    static float w[K * N], x[BMAX * K];
    float bias[N];
    product_data(K, N, BMAX, w, bias, x);
    emitc_case cs[CASES];
    for (int i = 0; i < CASES; i++) REQUIRE(product_case(&cs[i], i, K, N, w, bias, i ? 24 : 0));
    emitc_build b;
    CHECK(emitc_build_cases(cs, CASES, "-std=c99 -O1", &b));
    static const int batches[] = {2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17};
    for (int i = 0; b.so && i < CASES; i++)
        for (size_t j = 0; j < sizeof batches / sizeof batches[0]; j++)
            product_exact(&cs[i], &b, i, x, w, bias, K, N, batches[j],
                          (size_t)(i ? 24 : batches[j]));
    emitc_unload(&b);
    for (int i = 0; i < CASES; i++) emitc_case_free(&cs[i]);
}

TEST(emitc_diff_all_ops) {
    /* Every op the compiler lowers, forward and gradients, with each fusion level. */
    emitc_case cs[4];
    for (int i = 0; i < 4; i++) {
        otc_emit_c_options eo = otc_emit_c_defaults();
        eo.fuse = (otc_fuse_level)i;
        eo.train = true;
        eo.optim = otc_optim_defaults(OTC_OPTIM_SGD);
        otc_graph *g = emitc_all_ops_graph(7);
        REQUIRE(g);
        REQUIRE(otc_compile_add_loss(g, OTC_OP_MSE, &eo.loss, NULL) == OTC_OK);
        REQUIRE(emitc_case_init(&cs[i], g, i, &eo));
    }
    emitc_build b;
    CHECK(emitc_build_cases(cs, 4, "-std=c99 -O1", &b));
    for (int i = 0; b.so && i < 4; i++) {
        CHECK(emitc_check_forward(&cs[i], &b, 1, 1, FWD_TOL));
        CHECK(emitc_check_forward(&cs[i], &b, 13, 2, FWD_TOL));
        CHECK(emitc_check_gradients(&cs[i], &b, 1, 3, GRAD_TOL, 0));
        CHECK(emitc_check_gradients(&cs[i], &b, 9, 4, GRAD_TOL, 0));
    }
    emitc_unload(&b);
    for (int i = 0; i < 4; i++) emitc_case_free(&cs[i]);
}

/* ---- the generated files themselves ---- */

static bool run(const char *cmd) {
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "FAILED (%d): %s\n", rc, cmd);
    return rc == 0;
}

static bool write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* Only <math.h>, <stddef.h> and its own header; no allocation, I/O or written globals. */
static void check_self_contained(const char *h, const char *s, const char *name) {
    char own[64];
    snprintf(own, sizeof own, "#include \"%s.h\"", name);
    for (const char *t = s; (t = strstr(t, "#include")) != NULL; t++)
        CHECK(!strncmp(t, "#include <math.h>", 17) || !strncmp(t, "#include <stddef.h>", 19) ||
              !strncmp(t, own, strlen(own)));
    for (const char *t = h; (t = strstr(t, "#include")) != NULL; t++)
        CHECK(!strncmp(t, "#include <stddef.h>", 19));
    const char *banned[] = {"malloc", "free(", "printf", "FILE", "stdio", "stdlib", "errno"};
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++) {
        CHECK_MSG(!strstr(s, banned[i]), "source uses %s", banned[i]);
        /* (the header may name gcc's -fno-math-errno flag for the Adam update) */
        for (const char *t = h; (t = strstr(t, banned[i])) != NULL; t++)
            CHECK_MSG(t - h >= 5 && !strncmp(t - 5, "math-", 5), "header uses %s", banned[i]);
    }
    /* Every object at file scope is static const; functions are the only other statics. */
    for (const char *t = s; (t = strstr(t, "\nstatic ")) != NULL; t++)
        CHECK(!strncmp(t, "\nstatic const ", 14) || !strncmp(t, "\nstatic float ", 14));
}

TEST(emitc_clean_strict_flags) {
    /* Training (AdamW; SGD+Nesterov), fixed batch with BCE: C99 clean under -Wall -Wextra
     * -Werror -pedantic (and -Wshadow) with gcc and clang, self-contained, and the object
     * file has no writable data (nm: no b/B/d/D/C symbols). */
    char dir[] = "/tmp/otc_emitc_clean_XXXXXX";
    REQUIRE(mkdtemp(dir));
    /* gcc at -O2 (some of its warnings need the optimiser), clang at -O1 (enough for its
     * warnings, and quicker). */
    const char *compilers[] = {"gcc -O2", "clang-19 -O1"};
    for (int v = 1; v < 5; v++) {
        /* v == 4: an MLP, whose file calls none of the math but its selects (clang flagged
         * the unused NAME_fma) */
        otc_graph *g = v < 4 ? emitc_all_ops_graph(3) : otc_graph_new();
        REQUIRE(g);
        if (v == 4) {
            otc_rng rng;
            otc_rng_seed(&rng, 1);
            otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 8));
            otc_id h = otc_activation(g, OTC_OP_RELU, otc_linear(g, x, 16, &rng, "fc1"), 0);
            otc_graph_mark_output(g, otc_linear(g, h, 1, &rng, "fc2"));
        }
        otc_emit_c_options eo = otc_emit_c_defaults();
        char name[16];
        snprintf(name, sizeof name, "clean%d", v);
        eo.name = name;
        eo.train = v >= 1;
        eo.batch = v == 3 ? 8 : 0;
        eo.optim = otc_optim_defaults(v == 2 ? OTC_OPTIM_SGD : OTC_OPTIM_ADAMW);
        if (v == 2) {
            eo.optim.momentum = 0.9f;
            eo.optim.nesterov = true;
            eo.optim.weight_decay = 1e-4f;
        }
        if (eo.train)
            REQUIRE(otc_compile_add_loss(g, v == 3 ? OTC_OP_BCE : OTC_OP_MSE, &eo.loss, NULL) ==
                    OTC_OK);
        char *h = NULL, *s = NULL;
        REQUIRE(otc_emit_c(g, &eo, &h, &s) == OTC_OK);
        check_self_contained(h, s, name);
        char path[256], cmd[1024];
        snprintf(path, sizeof path, "%s/%s.h", dir, name);
        CHECK(write_file(path, h));
        snprintf(path, sizeof path, "%s/%s.c", dir, name);
        CHECK(write_file(path, s));
        for (int k = 0; k < 2; k++) {
            snprintf(cmd, sizeof cmd,
                     "%s -std=c99 -Wall -Wextra -Werror -pedantic -Wshadow -c %s -o %s/%s.o",
                     compilers[k], path, dir, name);
            CHECK(run(cmd));
        }
        snprintf(cmd, sizeof cmd, "nm %s/%s.o | grep -E ' [bBdDC] ' >&2; test $? -eq 1", dir, name);
        CHECK(run(cmd));
        snprintf(cmd, sizeof cmd, "rm -f %s/%s.h %s/%s.c %s/%s.o", dir, name, dir, name, dir, name);
        run(cmd);
        free(h);
        free(s);
        otc_graph_free(g);
    }
    rmdir(dir);
}

typedef struct {
    int (*fn)(const float *, float *, int, void *);
    const float *in;
    float *out;
    int batch, reps;
    size_t ws_bytes;
    int failures;
} thread_job;

static void *thread_run(void *arg) {
    thread_job *j = arg;
    float *ws = aligned_alloc(64, (j->ws_bytes + 63) / 64 * 64);
    float *first = malloc(sizeof(float) * 4096);
    for (int r = 0; ws && first && r < j->reps; r++) {
        if (j->fn(j->in, j->out, j->batch, ws) != 0) j->failures++;
        if (r == 0)
            memcpy(first, j->out, sizeof(float) * 4096);
        else if (memcmp(first, j->out, sizeof(float) * 4096) != 0)
            j->failures++;
    }
    free(ws);
    free(first);
    return NULL;
}

TEST(emitc_reentrant_threads) {
    /* Two threads, two workspaces, different inputs, the same model at once: each gets the
     * answer it gets alone (no hidden shared state). */
    otc_testgen_neat_options o = otc_testgen_neat_defaults(60);
    emitc_case c;
    REQUIRE(emitc_case_init(&c, otc_testgen_neat(77, &o), 0, NULL));
    emitc_build b;
    REQUIRE(emitc_build_cases(&c, 1, "-std=c99 -O2", &b));
    thread_job jobs[2];
    float *in[2], *out[2], *alone[2];
    otc_rng rng;
    otc_rng_seed(&rng, 5);
    for (int t = 0; t < 2; t++) {
        in[t] = emitc_rows(c.fwd, OTC_IO_IN, 64, &rng, 0);
        out[t] = calloc(4096, sizeof(float));
        alone[t] = calloc(4096, sizeof(float));
        jobs[t] = (thread_job){
            (int (*)(const float *, float *, int, void *))emitc_sym(&b, c.name, "forward"),
            in[t],
            out[t],
            64,
            1,
            emitc_workspace_bytes(&c, &b, 64),
            0};
        REQUIRE(jobs[t].fn);
        thread_run(&jobs[t]);
        memcpy(alone[t], out[t], 4096 * sizeof(float));
        jobs[t].reps = 2000;
    }
    pthread_t th[2];
    for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, thread_run, &jobs[t]);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < 2; t++) {
        CHECK(jobs[t].failures == 0);
        CHECK(memcmp(alone[t], out[t], 4096 * sizeof(float)) == 0);
        free(in[t]);
        free(out[t]);
        free(alone[t]);
    }
    emitc_unload(&b);
    emitc_case_free(&c);
}

/* ---- errors ---- */

TEST(emitc_errors_name_the_problem) {
    char *h = NULL, *s = NULL;
    otc_emit_c_options eo = otc_emit_c_defaults();
    /* What the compiler cannot lower (training through a Delay): named with its node. */
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id d = otc_delay(g, "memory", otc_shape_2d(OTC_BATCH, 1));
    otc_graph_set_input(g, d, 0, x);
    otc_id y = otc_add(g, x, d);
    otc_graph_set_name(g, y, "sum");
    otc_graph_mark_output(g, y);
    eo.train = true;
    eo.loss = otc_sum(g, y);
    CHECK(otc_emit_c(g, &eo, &h, &s) == OTC_ERR_UNSUPPORTED);
    eo = otc_emit_c_defaults();
    CHECK(strstr(otc_last_error(), "delay") && strstr(otc_last_error(), "memory"));
    CHECK(h == NULL && s == NULL);
    otc_graph_free(g);

    /* A cycle without a delay: named along the cycle. */
    g = otc_graph_new();
    x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id a = otc_add(g, x, x);
    otc_graph_set_name(g, a, "a");
    otc_id b = otc_activation(g, OTC_OP_TANH, a, 0.0f);
    otc_graph_set_name(g, b, "b");
    CHECK(otc_graph_set_input(g, a, 1, b) == OTC_OK);
    otc_graph_mark_output(g, b);
    CHECK(otc_emit_c(g, &eo, &h, &s) == OTC_ERR_CYCLE);
    CHECK(strstr(otc_last_error(), "'a' -> 'b' -> 'a'") ||
          strstr(otc_last_error(), "'b' -> 'a' -> 'b'"));
    otc_graph_free(g);

    /* Empty graph, no outputs, bad names, non-finite weights. */
    g = otc_graph_new();
    CHECK(otc_emit_c(g, &eo, &h, &s) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "empty") != NULL);
    x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    CHECK(otc_emit_c(g, &eo, &h, &s) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "no outputs") != NULL);
    float w[2] = {1.0f, INFINITY};
    otc_id srcs[2] = {x, x};
    int cols[2] = {0, 1};
    otc_id n = otc_neuron(g, "n", OTC_ACT_TANH, 0.0f, 1.0f, 2, srcs, cols, w);
    otc_graph_mark_output(g, n);
    eo.name = "2fast";
    CHECK(otc_emit_c(g, &eo, &h, &s) == OTC_ERR_ARG);
    eo.name = "model";
    CHECK(otc_emit_c(g, &eo, &h, &s) == OTC_ERR_UNSUPPORTED);
    CHECK(strstr(otc_last_error(), "n.w") != NULL);
    otc_graph_free(g);
}
