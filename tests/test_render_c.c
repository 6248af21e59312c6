/* Differential tests of the C renderer: random evolved-style graphs and MLPs rendered to C,
 * built with the system compiler, and compared with the interpreter (forward outputs within
 * 1e-5 relative, i.e. |c - i| <= 1e-5 * max(1, |i|); gradients within 1e-4 the same way). */
#include "emitc_support.h"
#include "harness.h"
#include "random_graph.h"

#define FWD_TOL  1e-5
#define GRAD_TOL 1e-4

/* Sizes from 1 to 500 neurons, mostly small as evolved networks are. */
static int neat_size(int i, otc_rng *rng) {
    if (i == 0) return 1;
    if (i == 1) return 500;
    float u = otc_rng_uniform(rng);
    if (u < 0.6f) return 1 + (int)otc_rng_below(rng, 30);
    if (u < 0.96f) return 30 + (int)otc_rng_below(rng, 90);
    return 120 + (int)otc_rng_below(rng, 381);
}

static otc_graph *random_neat(uint64_t seed, int i, otc_rng *rng) {
    otc_testgen_neat_options o = otc_testgen_neat_defaults(neat_size(i, rng));
    o.n_inputs = 1 + (int)otc_rng_below(rng, 8);
    o.n_outputs = 1 + (int)otc_rng_below(rng, o.n_neurons < 4 ? (uint32_t)o.n_neurons : 4);
    o.max_fanin = 1 + (int)otc_rng_below(rng, 8);
    o.mixed_ops = i % 2 == 1;
    o.two_inputs = i % 3 == 2;
    return otc_testgen_neat(seed, &o);
}

/* Forward differential over n graphs, built `per_build` at a time. */
static void neat_forward(int n, int per_build, uint64_t seed, const char *cflags) {
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    int failures = 0;
    for (int start = 0; start < n; start += per_build) {
        int m = n - start < per_build ? n - start : per_build;
        emitc_case *cs = calloc((size_t)m, sizeof *cs);
        REQUIRE(cs);
        for (int i = 0; i < m; i++) {
            otc_graph *g = random_neat(seed * 1000 + (uint64_t)(start + i), start + i, &rng);
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

/* 200 evolved-style graphs of 1..500 neurons (half with elementwise, concat, slice, reshape
 * and row-broadcast ops between neurons), each at batch 1 and a random batch, 50 per test so
 * ctest can run them side by side; one compiler run each. */
TEST(emitc_diff_neat_forward_a) { neat_forward(50, 50, 11, "-std=c99 -O1"); }
TEST(emitc_diff_neat_forward_b) { neat_forward(50, 50, 12, "-std=c99 -O1"); }
TEST(emitc_diff_neat_forward_c) { neat_forward(50, 50, 13, "-std=c99 -O1"); }
TEST(emitc_diff_neat_forward_d) { neat_forward(50, 50, 14, "-std=c99 -O1"); }

/* The benchmark's flags: loops vectorised across the batch, where rounding must not change. */
TEST(emitc_diff_neat_forward_o3_native) { neat_forward(20, 20, 15, "-std=c99 -O3 -march=native"); }

static otc_graph *random_mlp(uint64_t seed, otc_rng *rng, int i) {
    static const otc_op acts[] = {OTC_OP_RELU,    OTC_OP_TANH,    OTC_OP_SIGMOID,
                                  OTC_OP_LEAKY_RELU, OTC_OP_ELU,  OTC_OP_SOFTPLUS,
                                  OTC_OP_GAUSSIAN, OTC_OP_SIN,    OTC_OP_ABS,
                                  OTC_OP_IDENTITY};
    int sizes[6];
    int n = 2 + (int)otc_rng_below(rng, 4);
    for (int k = 0; k < n; k++) sizes[k] = 1 + (int)otc_rng_below(rng, 40);
    otc_op hidden = acts[i % 10];
    int out = otc_rng_uniform(rng) < 0.5f ? -1 : (int)acts[otc_rng_below(rng, 10)];
    return otc_testgen_mlp(seed, n, sizes, hidden, out);
}

TEST(emitc_diff_mlp_forward) {
    /* 40 MLPs of 1-4 layers, 1-40 wide, every activation, plus the benchmark's
     * 8-128-64-32-1; batches 1, 3 and 37. */
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
    CHECK(emitc_build_cases(cs, N, "-std=c99 -O2", &b));
    int failures = 0;
    for (int i = 0; b.so && i < N; i++) {
        bool ok = true;
        int batches[3] = {1, 3, 37};
        for (int k = 0; k < 3; k++)
            ok = emitc_check_forward(&cs[i], &b, batches[k], (uint64_t)(100 * i + k), FWD_TOL) && ok;
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
                                  : random_neat(500 + (uint64_t)i, 2 + i, &rng);
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
    CHECK(emitc_build_cases(cs, 4, "-std=c99 -O2", &b));
    for (int i = 0; b.so && i < 4; i++) {
        CHECK(emitc_check_forward(&cs[i], &b, 1, 1, FWD_TOL));
        CHECK(emitc_check_forward(&cs[i], &b, 13, 2, FWD_TOL));
        CHECK(emitc_check_gradients(&cs[i], &b, 1, 3, GRAD_TOL, 0));
        CHECK(emitc_check_gradients(&cs[i], &b, 9, 4, GRAD_TOL, 0));
    }
    emitc_unload(&b);
    for (int i = 0; i < 4; i++) emitc_case_free(&cs[i]);
}
