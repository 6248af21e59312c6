/* The LLVM JIT's API beyond the differential tests: memory staying flat over 10,000 compiles,
 * the structure cache, the executor's errors and gradient accumulation, LLVM errors as otc
 * errors, object files (host, and aarch64 under qemu), and the evolve policy. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jit_support.h"
#include "otc/neat.h"

/* Resident set size in KiB, from /proc/self/statm (pages). */
static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* 10,000 graphs compiled (in groups of 100: one LLVM module, one ResourceTracker each; the
 * cache off so every one is compiled), run once and freed: resident memory after the first
 * 2,000 stays where it was. The graph is the smallest there is (x -> one neuron), so the
 * test measures the JIT's bookkeeping, not the optimiser. */
TEST(jit_memory_flat_over_10000_graphs) {
    enum { BATCH = 100 };
    int total = jit_scaled(10000);
    otc_jit_options o = otc_jit_defaults();
    o.no_cache = true;
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    int col = 0;
    float w = 0.5f;
    otc_id y = otc_neuron(g, "y", OTC_ACT_IDENTITY, 0.25f, 1.0f, 1, &x, &col, &w);
    NEED(y >= 0 && otc_graph_mark_output(g, y) == OTC_OK);
    otc_graph *gs[BATCH];
    for (int i = 0; i < BATCH; i++) gs[i] = g;
    long warm = 0, peak = 0;
    const float in[1] = {2.0f};
    for (int done = 0; done < total; done += BATCH) {
        otc_executor *ex[BATCH];
        int k = total - done < BATCH ? total - done : BATCH;
        NEED(otc_jit_executors_new(gs, NULL, k, &o, ex) == OTC_OK);
        for (int i = 0; i < k; i++) {
            const float *out;
            CHECK(otc_exec_set_input(ex[i], x, in, 1) == OTC_OK);
            CHECK(otc_exec_forward(ex[i]) == OTC_OK);
            CHECK(otc_exec_value(ex[i], y, &out, NULL) == OTC_OK && out[0] == 1.25f);
            otc_exec_free(ex[i]);
        }
        long now = rss_kib();
        if (getenv("OTC_JIT_DEBUG_RSS")) fprintf(stderr, "%d %ld\n", done + k, now);
        if (done + k <= total / 5) warm = now;
        if (now > peak) peak = now;
    }
    otc_graph_free(g);
    /* Flat: allocator slack at most, where keeping each module would add ~100 MiB. */
    fprintf(stderr, "jit memory: rss %ld KiB after %d compiles, peak %ld KiB over %d\n", warm,
            total / 5, peak, total);
    /* AddressSanitizer keeps freed memory in quarantine: resident size says nothing there
     * (leaks are its own report). */
    if (!OTC_JIT_ASAN) CHECK_MSG(peak - warm < 8 * 1024, "grew from %ld to %ld KiB", warm, peak);
}

/* A neuron with response 1 is rendered without the multiply by 1 (1 * acc is acc but for a
 * signalling NaN, which the bias's add quiets alike): the sum's bits must stay the
 * interpreter's, IEEE specials included, in both tiers, exact or not. Each row's two inputs
 * (weights 1) meet NaN, infinities, signed zeros, a subnormal and an overflowing sum; the
 * biases are 0.25 and -0. */
TEST(jit_neuron_response_one_same_bits) {
    enum { ROWS = 10 };
    const float big = 3e38f, tiny = 1e-45f;
    const float in[ROWS * 2] = {NAN,   1.0f, INFINITY, -INFINITY, -INFINITY, 2.0f, -0.0f,
                                -0.0f, 0.0f, -0.0f,    tiny,      tiny,      big,  big,
                                -big,  -big, 1.0f,     NAN,       -2.0f,     0.5f};
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    const otc_id srcs[2] = {x, x};
    const int cols[2] = {0, 1};
    const float w[2] = {1.0f, 1.0f};
    otc_id a = otc_neuron(g, "a", OTC_ACT_IDENTITY, 0.25f, 1.0f, 2, srcs, cols, w);
    otc_id b = otc_neuron(g, "b", OTC_ACT_IDENTITY, -0.0f, 1.0f, 2, srcs, cols, w);
    NEED(a >= 0 && b >= 0 && otc_graph_mark_output(g, a) == OTC_OK &&
         otc_graph_mark_output(g, b) == OTC_OK);
    otc_executor *ref = otc_interpreter_new(g, NULL);
    NEED(ref && otc_exec_set_input(ref, x, in, ROWS) == OTC_OK && otc_exec_forward(ref) == OTC_OK);
    for (int k = 0; k < 4; k++) {
        otc_jit_options o = otc_jit_defaults();
        o.no_cache = true;
        o.tier = k & 1 ? OTC_JIT_TIER_FAST : OTC_JIT_TIER_OPTIMIZED;
        o.exact = k >= 2;
        otc_executor *jit = otc_jit_executor_new(g, &o);
        NEED(jit && otc_exec_set_input(jit, x, in, ROWS) == OTC_OK &&
             otc_exec_forward(jit) == OTC_OK);
        for (int n = 0; n < 2; n++) {
            const float *want, *got;
            otc_id id = n ? b : a;
            NEED(otc_exec_value(ref, id, &want, NULL) == OTC_OK &&
                 otc_exec_value(jit, id, &got, NULL) == OTC_OK);
            for (int r = 0; r < ROWS; r++)
                CHECK_MSG((isnan(want[r]) && isnan(got[r])) ||
                              memcmp(&want[r], &got[r], sizeof want[r]) == 0,
                          "%s tier%s, neuron %c, row %d: interpreter %g, jit %g",
                          k & 1 ? "fast" : "optimised", k >= 2 ? " exact" : "", n ? 'b' : 'a', r,
                          (double)want[r], (double)got[r]);
        }
        otc_exec_free(jit);
    }
    otc_exec_free(ref);
    otc_graph_free(g);
}

/* ---- ahead of time: object files linked by a C compiler ---- */

/* Writes the C program that runs NAME_forward on `batch` rows of `in` and prints the outputs
 * one per line. */
static bool write_main(const char *path, const char *name, const float *in, int batch, int in_w,
                       int out_w) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fprintf(f, "#include <stdio.h>\n#include <stdlib.h>\n#include \"%s.h\"\n", name);
    fprintf(f, "static const float in[] = {");
    for (int i = 0; i < batch * in_w; i++)
        fprintf(f, "%.9g%s", (double)in[i], i + 1 < batch * in_w ? "," : "");
    fprintf(f, "};\nint main(void) {\n    float out[%d];\n", batch * out_w);
    fprintf(f, "    void *ws = malloc(%s_workspace_bytes(%d));\n", name, batch);
    fprintf(f, "    if (%s_forward(in, out, %d, ws) != 0) return 1;\n", name, batch);
    fprintf(f, "    for (int i = 0; i < %d; i++) printf(\"%%.9g\\n\", out[i]);\n", batch * out_w);
    fprintf(f, "    free(ws);\n    return %s_INPUTS == %d && %s_OUTPUTS == %d ? 0 : 2;\n}\n", name,
            in_w, name, out_w);
    return fclose(f) == 0;
}

/* Emit the graph's object for triple (NULL: host), link it with cc, run it (through runner,
 * e.g. qemu), compare with the interpreter. */
static bool object_runs(otc_graph *g, const char *triple, const char *cc, const char *runner,
                        const char *tag) {
    char dir[] = "/tmp/otc_jit_objXXXXXX";
    if (!mkdtemp(dir)) return false;
    int batch = 11, in_w = otc_testgen_input_width(g), out_w = otc_testgen_output_width(g);
    otc_rng rng;
    otc_rng_seed(&rng, 99);
    float *in = malloc((size_t)(batch * in_w) * sizeof(float));
    otc_testgen_fill(&rng, in, (size_t)(batch * in_w), -2.0f, 2.0f);
    char obj[128], mainc[128], exe[128], cmd[1024], out_path[128];
    snprintf(obj, sizeof obj, "%s/net.o", dir);
    snprintf(mainc, sizeof mainc, "%s/main.c", dir);
    snprintf(exe, sizeof exe, "%s/run", dir);
    snprintf(out_path, sizeof out_path, "%s/out.txt", dir);
    otc_emit_llvm_options eo = otc_emit_llvm_defaults();
    eo.name = "net";
    eo.triple = triple;
    bool ok = otc_emit_llvm_file(g, &eo, OTC_EMIT_OBJ, obj, NULL) == OTC_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", tag, otc_last_error());
    ok = ok && write_main(mainc, "net", in, batch, in_w, out_w);
    snprintf(cmd, sizeof cmd, "%s -O1 -I%s %s %s -o %s", cc, dir, mainc, obj, exe);
    if (ok && system(cmd) != 0) {
        fprintf(stderr, "%s: link failed: %s\n", tag, cmd);
        ok = false;
    }
    snprintf(cmd, sizeof cmd, "%s %s > %s", runner, exe, out_path);
    if (ok && system(cmd) != 0) {
        fprintf(stderr, "%s: run failed: %s\n", tag, cmd);
        ok = false;
    }
    /* The interpreter's outputs, sample-major like the object's rows. */
    otc_executor *ref = otc_interpreter_new(g, NULL);
    ok = ok && ref && otc_exec_set_input(ref, otc_graph_input(g, 0), in, batch) == OTC_OK &&
         otc_exec_forward(ref) == OTC_OK;
    FILE *f = ok ? fopen(out_path, "r") : NULL;
    for (int b = 0; f && ok && b < batch; b++) {
        int col = 0;
        for (int o = 0; ok && o < otc_graph_output_count(g); o++) {
            otc_id id = otc_graph_output(g, o);
            const float *v;
            int w = (int)otc_shape_size(otc_graph_node(g, id)->shape);
            ok = otc_exec_value(ref, id, &v, NULL) == OTC_OK;
            for (int e = 0; ok && e < w; e++, col++) {
                double got;
                if (fscanf(f, "%lf", &got) != 1) ok = false;
                if (ok && !jit_close_to(got, v[b * w + e], 2e-5)) {
                    fprintf(stderr, "%s: sample %d output %d: object %.9g interpreter %.9g\n", tag,
                            b, col, got, (double)v[b * w + e]);
                    ok = false;
                }
            }
        }
    }
    if (f) fclose(f);
    otc_exec_free(ref);
    free(in);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) ok = false;
    return ok;
}

TEST(jit_object_host_links_and_runs) {
    otc_graph *g = jit_neat_graph(4242, 30, true, false);
    NEED(g);
    CHECK(object_runs(g, NULL, "cc", "", "host object"));
    otc_graph_free(g);
}

TEST(jit_object_aarch64_under_qemu) {
    otc_graph *g = jit_neat_graph(4343, 30, true, false);
    NEED(g);
    CHECK(object_runs(g, "aarch64-linux-gnu", "aarch64-linux-gnu-gcc",
                      "qemu-aarch64 -L /usr/aarch64-linux-gnu", "aarch64 object"));
    otc_graph_free(g);
    /* And a dense model: matmul kernels on NEON. */
    int sizes[4] = {5, 16, 8, 3};
    g = otc_testgen_mlp(4344, 4, sizes, OTC_OP_TANH, -1);
    NEED(g);
    NEED(otc_graph_mark_output(g, otc_softmax(g, otc_graph_output(g, 0))) == OTC_OK);
    CHECK(object_runs(g, "aarch64-linux-gnu", "aarch64-linux-gnu-gcc",
                      "qemu-aarch64 -L /usr/aarch64-linux-gnu", "aarch64 mlp object"));
    otc_graph_free(g);
}

/* ---- errors from LLVM and from the executor API ---- */

TEST(jit_llvm_errors_are_otc_errors) {
    /* Not IR at all: LLVM's parser error, as an otc error. */
    CHECK(otc_jit_check_ir("this is not IR") == OTC_ERR_FORMAT);
    CHECK(strstr(otc_last_error(), "does not parse") != NULL);
    /* Parses, but %x does not dominate its use: the verifier's message, never an abort. */
    const char *bad = "define i32 @f(i1 %c) {\n"
                      "entry:\n  br i1 %c, label %a, label %b\n"
                      "a:\n  %x = add i32 1, 2\n  br label %b\n"
                      "b:\n  ret i32 %x\n}\n";
    CHECK(otc_jit_check_ir(bad) == OTC_ERR_STATE);
    CHECK_MSG(strstr(otc_last_error(), "verification") != NULL, "%s", otc_last_error());
    CHECK_MSG(strstr(otc_last_error(), "dominate") != NULL, "%s", otc_last_error());
    /* A call to a function nobody defines: the JIT's linker error. */
    const char *unresolved = "declare i32 @otc_no_such_function(i32)\n"
                             "define i32 @g(i32 %x) {\n"
                             "  %y = call i32 @otc_no_such_function(i32 %x)\n  ret i32 %y\n}\n";
    CHECK(otc_jit_check_ir(unresolved) == OTC_ERR_STATE);
    CHECK_MSG(strstr(otc_last_error(), "otc_no_such_function") != NULL, "%s", otc_last_error());
    /* And good IR compiles. */
    CHECK(otc_jit_check_ir("define i32 @h(i32 %x) {\n  %y = mul i32 %x, 3\n  ret i32 %y\n}\n") ==
          OTC_OK);
}

TEST(jit_bad_label_is_an_error_naming_the_node) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    otc_id lab = otc_input(g, "label", otc_shape_1d(OTC_BATCH));
    otc_id loss = otc_softmax_ce(g, x, lab);
    NEED(loss >= 0 && otc_graph_set_name(g, loss, "ce") == OTC_OK);
    otc_id losses[1] = {loss};
    otc_executor *ex;
    NEED(otc_jit_executors_new(&g, losses, 1, NULL, &ex) == OTC_OK);
    const float xv[6] = {1, 2, 3, 4, 5, 6}, good[2] = {0, 2}, bad[2] = {1, 3};
    CHECK(otc_exec_set_input(ex, x, xv, 2) == OTC_OK);
    CHECK(otc_exec_set_input(ex, lab, good, 2) == OTC_OK);
    CHECK(otc_exec_forward(ex) == OTC_OK);
    const float *v;
    CHECK(otc_exec_value(ex, loss, &v, NULL) == OTC_OK);
    /* By hand: mean over the rows of logsumexp(row) - row[label]. */
    double l0 = log(exp(1.0) + exp(2.0) + exp(3.0)) - 1.0;
    double l1 = log(exp(4.0) + exp(5.0) + exp(6.0)) - 6.0;
    CHECK_NEAR(v[0], (l0 + l1) / 2, 1e-5);
    CHECK(otc_exec_set_input(ex, lab, bad, 2) == OTC_OK);
    CHECK(otc_exec_forward(ex) == OTC_ERR_ARG);
    CHECK_MSG(strstr(otc_last_error(), "'ce'") != NULL, "%s", otc_last_error());
    otc_exec_free(ex);
    otc_graph_free(g);
}

TEST(jit_executor_errors) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id h = otc_activation(g, OTC_OP_TANH, x, 0.0f);
    otc_id y = otc_activation(g, OTC_OP_SIGMOID, h, 0.0f);
    NEED(y >= 0 && otc_graph_mark_output(g, y) == OTC_OK);
    otc_jit_options o = otc_jit_defaults();
    o.inference = true;
    otc_executor *ex = otc_jit_executor_new(g, &o);
    NEED(ex);
    CHECK(otc_is_jit_executor(ex));
    const float d[4] = {1, 2, 3, 4};
    CHECK(otc_exec_forward(ex) == OTC_ERR_STATE); /* x not set */
    CHECK(strstr(otc_last_error(), "'x'") != NULL);
    CHECK(otc_exec_set_input(ex, y, d, 1) == OTC_ERR_ARG);
    CHECK(otc_exec_set_input(ex, x, d, 0) == OTC_ERR_ARG);
    CHECK(otc_exec_set_input(ex, x, d, 2) == OTC_OK);
    CHECK(otc_exec_forward(ex) == OTC_OK);
    const float *v;
    CHECK(otc_exec_value(ex, y, &v, NULL) == OTC_OK);
    CHECK_NEAR(v[3], 1.0 / (1.0 + exp(-tanh(4.0))), 1e-6);
    /* h lives in a register inside the fused kernel: asking for it is a clear error. */
    CHECK(otc_exec_value(ex, h, &v, NULL) == OTC_ERR_UNSUPPORTED);
    CHECK(strstr(otc_last_error(), "output") != NULL);
    CHECK(otc_exec_backward(ex, y) == OTC_ERR_STATE);
    otc_exec_free(ex);
    /* Recurrent state runs forward, but training through time is not compiled: the error
     * names the op and the node. */
    otc_id dl = otc_delay(g, "state", otc_shape_2d(OTC_BATCH, 2));
    otc_id z = otc_add(g, dl, x);
    NEED(z >= 0 && otc_graph_mark_output(g, z) == OTC_OK);
    otc_id zl = otc_sum(g, z);
    otc_executor *rj = NULL;
    CHECK(otc_jit_executors_new(&g, &zl, 1, NULL, &rj) == OTC_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(otc_last_error(), "delay") && strstr(otc_last_error(), "'state'") &&
                  strstr(otc_last_error(), "through time"),
              "%s", otc_last_error());
    otc_graph_free(g);
}

/* Gradients accumulate over backward calls until zero_grad; train_step writes back with
 * sync_params; batches may change between calls. */
TEST(jit_executor_accumulates_and_syncs) {
    otc_graph *g = jit_neat_graph(808, 12, false, false);
    NEED(g);
    otc_id loss = jit_add_mse_loss(g);
    otc_id t = otc_graph_find(g, "t");
    NEED(loss >= 0 && t >= 0);
    otc_executor *ex = otc_jit_executor_new(g, NULL);
    NEED(ex);
    otc_rng rng;
    otc_rng_seed(&rng, 5);
    float **rows = jit_random_inputs(g, 20, &rng);
    NEED(jit_set_all(ex, g, rows, 20) && otc_exec_forward(ex) == OTC_OK);
    NEED(otc_exec_backward(ex, loss) == OTC_OK);
    otc_id w = otc_graph_find(g, "o0.w");
    NEED(w >= 0);
    const float *gr;
    NEED(otc_exec_grad(ex, w, &gr) == OTC_OK);
    float once = gr[0];
    NEED(otc_exec_backward(ex, loss) == OTC_OK);
    NEED(otc_exec_grad(ex, w, &gr) == OTC_OK);
    CHECK_NEAR(gr[0], 2.0 * once, 1e-6 * (1 + fabs(once)));
    otc_exec_zero_grad(ex);
    NEED(otc_exec_grad(ex, w, &gr) == OTC_OK);
    CHECK(gr[0] == 0.0f);
    /* Three batch sizes in turn. */
    int batches[3] = {20, 3, 9};
    otc_optim_config c = otc_optim_defaults(OTC_OPTIM_SGD);
    c.lr = 0.1f;
    otc_optimizer *opt = otc_optimizer_new(&c);
    float before = otc_graph_node(g, w)->value->data[0];
    for (int i = 0; i < 3; i++) {
        NEED(jit_set_all(ex, g, rows, batches[i]));
        float lv;
        CHECK(otc_exec_train_step(ex, loss, opt, &lv) == OTC_OK && isfinite(lv));
    }
    /* The graph keeps its values until the executor writes its own back. */
    CHECK(otc_graph_node(g, w)->value->data[0] == before);
    CHECK(otc_exec_sync_params(ex) == OTC_OK);
    CHECK(otc_graph_node(g, w)->value->data[0] != before);
    otc_optimizer_free(opt);
    jit_free_rows(g, rows);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* Gradients accumulate across backward calls from different losses too, as the interpreter
 * accumulates them: the JIT's plan for the second loss starts from the first one's. */
TEST(jit_backward_accumulates_across_losses) {
    otc_graph *g = jit_neat_graph(818, 12, false, false);
    NEED(g);
    otc_id loss = jit_add_mse_loss(g);
    otc_id other = otc_mean(g, otc_graph_output(g, 0));
    otc_id w = otc_graph_find(g, "o0.w");
    NEED(loss >= 0 && other >= 0 && w >= 0);
    otc_rng rng;
    otc_rng_seed(&rng, 6);
    float **rows = jit_random_inputs(g, 16, &rng);
    otc_executor *ex[2] = {otc_interpreter_new(g, NULL), otc_jit_executor_new(g, NULL)};
    NEED(ex[0] && ex[1]);
    const float *gr[2];
    size_t n = otc_graph_node(g, w)->value->size;
    for (int k = 0; k < 2; k++) {
        NEED(jit_set_all(ex[k], g, rows, 16) && otc_exec_forward(ex[k]) == OTC_OK);
        NEED(otc_exec_backward(ex[k], loss) == OTC_OK);
        NEED(otc_exec_backward(ex[k], other) == OTC_OK);
        NEED(otc_exec_grad(ex[k], w, &gr[k]) == OTC_OK);
    }
    /* Each loss alone on a fresh interpreter: the sum is what both executors must hold. */
    otc_executor *one = otc_interpreter_new(g, NULL);
    NEED(one && jit_set_all(one, g, rows, 16) && otc_exec_forward(one) == OTC_OK);
    float *sum = calloc(n, sizeof *sum);
    NEED(sum);
    otc_id losses[2] = {loss, other};
    for (int l = 0; l < 2; l++) {
        const float *gl;
        otc_exec_zero_grad(one);
        NEED(otc_exec_backward(one, losses[l]) == OTC_OK && otc_exec_grad(one, w, &gl) == OTC_OK);
        for (size_t i = 0; i < n; i++) sum[i] += gl[i];
    }
    for (size_t i = 0; i < n; i++) {
        CHECK_NEAR(gr[0][i], sum[i], 1e-6 * (1 + fabs(sum[i])));
        CHECK_NEAR(gr[1][i], sum[i], 1e-4 * (1 + fabs(sum[i])));
    }
    free(sum);
    otc_exec_free(one);
    otc_exec_free(ex[0]);
    otc_exec_free(ex[1]);
    jit_free_rows(g, rows);
    otc_graph_free(g);
}

/* Identical structures compile once; each executor still computes with its own weights (a
 * neuron graph's forward is compiled on its first run, at that batch's form). */
TEST(jit_cache_keys_on_structure_not_weights) {
    otc_jit_cache_clear();
    otc_graph *a = jit_neat_graph(9090, 20, false, false);
    otc_graph *b = otc_graph_clone(a);
    NEED(a && b);
    for (otc_id id = 0; id < otc_graph_size(b); id++) {
        if (otc_graph_node(b, id)->op != OTC_OP_PARAMETER) continue;
        otc_tensor *p = otc_graph_param(b, id);
        for (size_t i = 0; i < p->size; i++) p->data[i] = -0.5f * p->data[i] + 0.1f;
    }
    otc_executor *ea = otc_jit_executor_new(a, NULL), *eb = otc_jit_executor_new(b, NULL);
    NEED(ea && eb);
    CHECK(jit_forward_agrees(a, ea, 5, 1, "cached a"));
    CHECK(jit_forward_agrees(b, eb, 5, 1, "cached b"));
    otc_jit_stats sa, sb;
    CHECK(otc_jit_executor_stats(ea, &sa) == OTC_OK && sa.compiles == 1 && sa.cache_hits == 0);
    CHECK(otc_jit_executor_stats(eb, &sb) == OTC_OK && sb.compiles == 0 && sb.cache_hits == 1);
    CHECK(sa.compile_ms > 0.0 && sb.compile_ms == 0.0);
    otc_jit_cache_stats cs = otc_jit_cache_info();
    CHECK(cs.entries >= 1 && cs.in_use >= 1);
    otc_exec_free(ea);
    otc_exec_free(eb);
    /* Unused entries stay for the next genome of that shape, until the cache is cleared. */
    CHECK(otc_jit_cache_info().in_use == 0);
    otc_jit_cache_clear();
    CHECK(otc_jit_cache_info().entries == 0);
    otc_graph_free(a);
    otc_graph_free(b);
}

/* The evolve policy: interprets while the work is small, switches to compiled code when it
 * has done as much work as a compile costs (inputs replayed), and stays correct across. */
TEST(jit_policy_switches_when_work_pays) {
    otc_graph *g = jit_neat_graph(6060, 15, false, false);
    NEED(g);
    otc_jit_policy pol = otc_jit_policy_defaults();
    /* A compile "costs" 50 forwards of this graph. */
    pol.compile_ms = 0.0;
    pol.compile_ms_per_node = 50.0 * pol.interp_ns * 1e-6;
    otc_jit_policy_set(&pol);
    otc_jit_policy_stats before = otc_jit_policy_info();
    otc_exec_options o = {.inference = true};
    otc_executor *ex = otc_jit_policy_executor(g, &o);
    NEED(ex);
    for (int i = 0; i < 80; i++) {
        if (!jit_forward_agrees(g, ex, 1, (uint64_t)i, "policy")) {
            CHECK(false);
            break;
        }
        otc_jit_policy_stats now = otc_jit_policy_info();
        /* Interpreted for the first 50 forwards, compiled from the 51st. */
        CHECK(now.compiled - before.compiled == (i >= 50 ? 1 : 0));
    }
    otc_exec_free(ex);
    /* Training: decided at creation from the expected training samples. */
    o.inference = false;
    pol = otc_jit_policy_defaults();
    pol.train_samples = 10; /* nothing worth compiling */
    otc_jit_policy_set(&pol);
    ex = otc_jit_policy_executor(g, &o);
    NEED(ex);
    CHECK(strcmp(otc_exec_backend(ex), "interpreter") == 0);
    otc_exec_free(ex);
    pol.train_samples = 1e9; /* a long training job */
    otc_jit_policy_set(&pol);
    ex = otc_jit_policy_executor(g, &o);
    NEED(ex);
    CHECK(strcmp(otc_exec_backend(ex), "jit") == 0);
    otc_exec_free(ex);
    otc_jit_policy_set(NULL);
    otc_graph_free(g);
}

/* A recurrent genome under the policy: interpreted, then compiled mid-sequence with the
 * interpreter's Delay state handed over (set_state), so every step's outputs stay those of
 * an interpreter run alone; after a reset both start from zeros again. */
TEST(jit_policy_recurrent_switch_carries_state) {
    otc_testgen_neat_options go = otc_testgen_neat_defaults(12);
    go.recurrent = 0.4f;
    go.n_outputs = 2;
    go.act_mask = (1u << OTC_ACT_TANH) | (1u << OTC_ACT_SIGMOID) | (1u << OTC_ACT_SIN);
    otc_graph *g = otc_testgen_neat(4242, &go);
    NEED(g && otc_graph_is_recurrent(g));
    otc_jit_policy pol = otc_jit_policy_defaults();
    pol.compile_ms = 0.0;
    pol.compile_ms_per_node = 60.0 * pol.interp_ns * 1e-6; /* 30 steps of 2 samples */
    otc_jit_policy_set(&pol);
    otc_jit_policy_stats before = otc_jit_policy_info();
    otc_exec_options o = {.inference = true};
    otc_executor *ex = otc_jit_policy_executor(g, &o), *ref = otc_interpreter_new(g, &o);
    NEED(ex && ref);
    otc_rng rng;
    otc_rng_seed(&rng, 5);
    for (int t = 0; t < 80; t++) {
        if (t == 60) { /* a new sequence */
            otc_exec_reset_state(ex);
            otc_exec_reset_state(ref);
        }
        float **rows = jit_random_inputs(g, 2, &rng);
        NEED(rows && jit_set_all(ex, g, rows, 2) && jit_set_all(ref, g, rows, 2));
        jit_free_rows(g, rows);
        NEED(otc_exec_forward(ex) == OTC_OK && otc_exec_forward(ref) == OTC_OK);
        for (int k = 0; k < otc_graph_output_count(g); k++) {
            const float *a, *b;
            otc_id out = otc_graph_output(g, k);
            NEED(otc_exec_value(ex, out, &a, NULL) == OTC_OK);
            NEED(otc_exec_value(ref, out, &b, NULL) == OTC_OK);
            for (int i = 0; i < 2; i++)
                CHECK_MSG(jit_close_to(a[i], b[i], 1e-4), "step %d output %d: %g vs %g", t, k,
                          (double)a[i], (double)b[i]);
        }
        otc_jit_policy_stats now = otc_jit_policy_info();
        CHECK_MSG(now.compiled - before.compiled == (t >= 30 ? 1 : 0), "step %d: %ld compiled", t,
                  now.compiled - before.compiled);
    }
    CHECK(strcmp(otc_exec_backend(ex), "adaptive") == 0);
    otc_exec_free(ex);
    otc_exec_free(ref);
    otc_jit_policy_set(NULL);
    otc_graph_free(g);
}

/* The optimiser update is one set of trees (runtime/src/train/optim_rules.c) that the interpreter
 * evaluates and the JIT builds with the same operations in the same order, so the weights
 * agree bit for bit. The loss sum(w * w) has the gradient 2w exactly in both (only exact
 * operations), which leaves the update as the only arithmetic that could differ. */
TEST(jit_optimiser_updates_match_interpreter_bit_for_bit) {
    otc_optim_config cfg[6];
    cfg[0] = otc_optim_defaults(OTC_OPTIM_SGD);
    cfg[0].weight_decay = 0.1f;
    cfg[1] = otc_optim_defaults(OTC_OPTIM_SGD);
    cfg[1].momentum = 0.9f;
    cfg[2] = otc_optim_defaults(OTC_OPTIM_SGD);
    cfg[2].momentum = 0.5f;
    cfg[2].nesterov = true;
    cfg[2].weight_decay = 0.01f;
    cfg[3] = otc_optim_defaults(OTC_OPTIM_ADAM);
    cfg[3].lr = 0.01f;
    cfg[4] = otc_optim_defaults(OTC_OPTIM_ADAM);
    cfg[4].lr = 0.01f;
    cfg[4].weight_decay = 0.05f;
    cfg[5] = otc_optim_defaults(OTC_OPTIM_ADAMW);
    cfg[5].lr = 0.01f;
    const float init[7] = {0.75f, -1.5f, 0.0f, 2.25f, -0.125f, 3.0f, 1e-3f};
    for (int k = 0; k < 6; k++) {
        otc_graph *gi = otc_graph_new(), *gj = otc_graph_new();
        otc_id wi = otc_param(gi, "w", otc_shape_1d(7), init);
        otc_id wj = otc_param(gj, "w", otc_shape_1d(7), init);
        otc_id li = otc_sum(gi, otc_mul(gi, wi, wi)), lj = otc_sum(gj, otc_mul(gj, wj, wj));
        NEED(li >= 0 && lj >= 0);
        otc_executor *in = otc_interpreter_new(gi, NULL), *jit = otc_jit_executor_new(gj, NULL);
        otc_optimizer *oi = otc_optimizer_new(&cfg[k]), *oj = otc_optimizer_new(&cfg[k]);
        NEED(in && jit && oi && oj);
        for (int step = 0; step < 25; step++) {
            NEED(otc_exec_train_step(in, li, oi, NULL) == OTC_OK);
            NEED(otc_exec_train_step(jit, lj, oj, NULL) == OTC_OK);
        }
        NEED(otc_exec_sync_params(jit) == OTC_OK);
        const float *a = otc_graph_node(gi, wi)->value->data;
        const float *b = otc_graph_node(gj, wj)->value->data;
        for (int i = 0; i < 7; i++)
            CHECK_MSG(memcmp(&a[i], &b[i], sizeof a[i]) == 0,
                      "%s config %d: w[%d] interpreter %.9g jit %.9g",
                      otc_optim_kind_name(cfg[k].kind), k, i, (double)a[i], (double)b[i]);
        /* and the update did move the weights */
        CHECK(a[0] != init[0] && a[5] != init[5]);
        otc_optimizer_free(oi);
        otc_optimizer_free(oj);
        otc_exec_free(in);
        otc_exec_free(jit);
        otc_graph_free(gi);
        otc_graph_free(gj);
    }
}

/* A model saved after JIT training holds the trained weights without a call to
 * otc_exec_sync_params, and so does the graph once the executor is freed: the reference is the
 * interpreter's training of the same graph (bit for bit, as the test above shows). */
TEST(jit_save_after_training_holds_trained_weights) {
    const float init[3] = {0.75f, -1.5f, 2.25f};
    otc_graph *gi = otc_graph_new(), *gj = otc_graph_new();
    otc_id wi = otc_param(gi, "w", otc_shape_1d(3), init);
    otc_id wj = otc_param(gj, "w", otc_shape_1d(3), init);
    otc_id li = otc_sum(gi, otc_mul(gi, wi, wi)), lj = otc_sum(gj, otc_mul(gj, wj, wj));
    NEED(li >= 0 && lj >= 0);
    otc_executor *in = otc_interpreter_new(gi, NULL), *jit = otc_jit_executor_new(gj, NULL);
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_SGD);
    otc_optimizer *oi = otc_optimizer_new(&cfg), *oj = otc_optimizer_new(&cfg);
    NEED(in && jit && oi && oj);
    for (int step = 0; step < 10; step++) {
        NEED(otc_exec_train_step(in, li, oi, NULL) == OTC_OK);
        NEED(otc_exec_train_step(jit, lj, oj, NULL) == OTC_OK);
    }
    const float *want = otc_graph_node(gi, wi)->value->data;
    CHECK(want[0] != init[0]);
    char path[] = "/tmp/otc_jit_save_XXXXXX";
    int fd = mkstemp(path);
    NEED(fd >= 0);
    close(fd);
    NEED(otc_model_save(gj, path) == OTC_OK);
    otc_graph *loaded = NULL;
    NEED(otc_model_load(path, &loaded) == OTC_OK);
    unlink(path);
    const float *got = otc_graph_node(loaded, otc_graph_find(loaded, "w"))->value->data;
    for (int i = 0; i < 3; i++) CHECK_NEAR(got[i], want[i], 0);
    /* trained once more, then freed: the graph gets the last step's weights */
    NEED(otc_exec_train_step(in, li, oi, NULL) == OTC_OK);
    NEED(otc_exec_train_step(jit, lj, oj, NULL) == OTC_OK);
    otc_exec_free(jit);
    for (int i = 0; i < 3; i++) CHECK_NEAR(otc_graph_node(gj, wj)->value->data[i], want[i], 0);
    otc_graph_free(loaded);
    otc_optimizer_free(oi);
    otc_optimizer_free(oj);
    otc_exec_free(in);
    otc_graph_free(gi);
    otc_graph_free(gj);
}

/* otc evolve --jit's switch: a recurrent genome steps on NEAT's flat program, then its
 * phenotype compiled exact (otc_jit_policy_compiled) takes over mid-episode with the flat
 * program's state (otc_neat_flat_hand_over). The reference is the flat program alone (its
 * first two steps checked by hand), and every compiled output must equal it bit for bit:
 * evolution's results may not depend on where a genome ran. tanh, sin, a Gaussian and a
 * sigmoid exercise the C library calls; self-loops and a cycle through hidden nodes carry
 * state. */
TEST(jit_exact_code_takes_over_from_the_flat_program) {
    otc_neat_config c;
    otc_neat_config_defaults(&c);
    c.num_inputs = 2;
    c.num_outputs = 1;
    c.feed_forward = false;
    c.bias_node = false;
    otc_neat_genome *g = otc_neat_genome_new();
    NEED(g);
    /* id, type, activation, bias, response */
    const otc_neat_node nodes[] = {
        {0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
        {1, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
        {2, OTC_NEAT_OUTPUT, OTC_ACT_SIGMOID, 0.1f, 1.0f, 0, 1},
        {3, OTC_NEAT_HIDDEN, OTC_ACT_TANH, -0.2f, 0.8f, 0, 1},
        {4, OTC_NEAT_HIDDEN, OTC_ACT_SIN, 0.3f, 1.0f, 0, 1},
        {5, OTC_NEAT_HIDDEN, OTC_ACT_GAUSSIAN, 0.0f, 1.5f, 0, 1},
    };
    const otc_neat_conn conns[] = {
        {1, 0, 3, 0.7f, true},   {2, 1, 3, -1.3f, true}, {3, 3, 3, 0.9f, true},
        {4, 3, 4, 1.1f, true},   {5, 4, 3, -0.6f, true}, {6, 4, 2, 1.5f, true},
        {7, 2, 2, 0.4f, true},   {8, 1, 2, 0.25f, true}, {9, 0, 5, 2.0f, true},
        {10, 5, 2, -0.8f, true},
    };
    for (size_t i = 0; i < sizeof nodes / sizeof *nodes; i++)
        NEED(otc_neat_genome_add_node(g, &nodes[i]) == OTC_OK);
    for (size_t i = 0; i < sizeof conns / sizeof *conns; i++)
        NEED(otc_neat_genome_add_conn(g, &conns[i]) == OTC_OK);
    enum { STEPS = 80, SWITCH = 30, AGAIN = 20 };
    float x[STEPS][2], ref[STEPS];
    otc_rng rng;
    otc_rng_seed(&rng, 11);
    for (int t = 0; t < STEPS; t++)
        for (int i = 0; i < 2; i++) x[t][i] = 4.0f * otc_rng_uniform(&rng) - 2.0f;
    x[0][0] = x[1][0] = 0.5f;
    x[0][1] = x[1][1] = -1.0f;
    otc_neat_flat *alone = otc_neat_flat_new(), *f = otc_neat_flat_new();
    NEED(alone && f && otc_neat_flat_build(alone, g, &c) == OTC_OK &&
         otc_neat_flat_build(f, g, &c) == OTC_OK);
    for (int t = 0; t < STEPS; t++) NEED(otc_neat_flat_forward(alone, x[t], 1, &ref[t]) == OTC_OK);
    /* By hand: every non-input source reads its previous value, zeros at the first step. */
    double sig0 = 1.0 / (1.0 + exp(0.15)); /* sigmoid(0.1 + 0.25 * -1) */
    double h4 = sin(0.3), h5 = exp(-2.25); /* sin(0.3 + 0), exp(-(1.5 * 2 * 0.5)^2) */
    double sig1 = 1.0 / (1.0 + exp(-(0.1 + 1.5 * h4 + 0.4 * sig0 - 0.25 - 0.8 * h5)));
    CHECK_MSG(jit_close_to(ref[0], sig0, 1e-6), "step 0: %.9g, by hand %.9g", (double)ref[0], sig0);
    CHECK_MSG(jit_close_to(ref[1], sig1, 1e-6), "step 1: %.9g, by hand %.9g", (double)ref[1], sig1);

    float y;
    for (int t = 0; t < SWITCH; t++) NEED(otc_neat_flat_forward(f, x[t], 1, &y) == OTC_OK);
    otc_neat_phenotype *ph = NULL;
    NEED(otc_neat_phenotype_build(g, &c, &ph) == OTC_OK && ph->recurrent);
    otc_exec_options o = {.inference = true};
    /* So small a genome runs no faster compiled: the policy leaves it to the flat program. */
    otc_jit_policy pol = otc_jit_policy_defaults();
    CHECK(otc_graph_size(ph->graph) < pol.flat_min_nodes);
    otc_jit_policy_stats before = otc_jit_policy_info();
    CHECK(otc_jit_policy_compiled(ph->graph, &o) == NULL);
    CHECK(otc_jit_policy_info().too_small == before.too_small + 1);
    pol.flat_min_nodes = 0;
    otc_jit_policy_set(&pol);
    otc_executor *ex = otc_jit_policy_compiled(ph->graph, &o);
    otc_jit_policy_set(NULL);
    NEED(ex);
    NEED(otc_neat_flat_hand_over(f, ph, ex) == OTC_OK);
    otc_id out = otc_graph_output(ph->graph, 0);
    for (int t = SWITCH; t < STEPS + AGAIN; t++) {
        int at = t < STEPS ? t : t - STEPS;
        if (t == STEPS) otc_exec_reset_state(ex); /* a new episode: zeros, as the flat program */
        const float *v;
        NEED(otc_exec_set_input(ex, ph->input, x[at], 1) == OTC_OK &&
             otc_exec_forward(ex) == OTC_OK && otc_exec_value(ex, out, &v, NULL) == OTC_OK);
        CHECK_MSG(memcmp(v, &ref[at], sizeof *v) == 0, "step %d: compiled %.9g, flat %.9g", t,
                  (double)*v, (double)ref[at]);
    }
    /* A feed-forward program has no state to hand over. */
    otc_neat_flat *ff = otc_neat_flat_new();
    c.feed_forward = true;
    otc_neat_genome_free(g);
    g = otc_neat_genome_new();
    NEED(g && ff);
    NEED(otc_neat_genome_add_node(g, &nodes[0]) == OTC_OK &&
         otc_neat_genome_add_node(g, &nodes[1]) == OTC_OK &&
         otc_neat_genome_add_node(g, &nodes[2]) == OTC_OK &&
         otc_neat_genome_add_conn(g, &conns[7]) == OTC_OK);
    NEED(otc_neat_flat_build(ff, g, &c) == OTC_OK);
    int rows = -1;
    CHECK(otc_neat_flat_state(ff, 2, &y, 1, &rows) == OTC_ERR_ARG);
    otc_neat_flat_free(ff);
    otc_exec_free(ex);
    otc_neat_phenotype_free(ph);
    otc_neat_flat_free(alone);
    otc_neat_flat_free(f);
    otc_neat_genome_free(g);
}

/* Same bits, or both NaN. */
static bool same_float(float a, float b) {
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* One sample of a neuron graph runs its scalar form (one lane, the C library's exp and tanh,
 * compiled on first use at batch 1 only): the stats count it, and the outputs are the
 * interpreter's bit for bit, at large |x|, infinities and NaN too; a batch of 3 runs the
 * vector form (close to the interpreter's, NaN where it has NaN); a dense layer's plan never
 * takes the scalar form (its one sample runs in column mode). */
TEST(jit_one_sample_scalar_form_neurons) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    int c01[2] = {0, 1}, c0[1] = {0}, c00[2] = {0, 0};
    float ws[2] = {1.5f, -0.5f}, wt[2] = {2.0f, 1.0f}, we[1] = {1.0f};
    otc_id xs[2] = {x, x};
    otc_id s = otc_neuron(g, "s", OTC_ACT_SIGMOID, 0.1f, 1.0f, 2, xs, c01, ws);
    otc_id st[2] = {x, s};
    otc_id t = otc_neuron(g, "t", OTC_ACT_TANH, -0.2f, 1.5f, 2, st, c00, wt);
    otc_id e = otc_neuron(g, "e", OTC_ACT_EXP, 0.0f, 1.0f, 1, &x, c0, we);
    otc_id te[2] = {t, e};
    float wo[2] = {-3.0f, 0.25f};
    int z[2] = {0, 0};
    otc_id o = otc_neuron(g, "o", OTC_ACT_STEEP_SIGMOID, 0.5f, 1.0f, 2, te, z, wo);
    NEED(s >= 0 && t >= 0 && e >= 0 && o >= 0);
    const otc_id outs[4] = {s, t, e, o};
    for (int i = 0; i < 4; i++) NEED(otc_graph_mark_output(g, outs[i]) == OTC_OK);
    otc_jit_options opt = otc_jit_defaults();
    opt.lanes = 16;
    opt.no_cache = true;
    otc_executor *ex = otc_jit_executor_new(g, &opt), *in = otc_interpreter_new(g, NULL);
    NEED(ex && in);
    otc_jit_stats st0;
    NEED(otc_jit_executor_stats(ex, &st0) == OTC_OK);
    CHECK_MSG(st0.compiles == 0, "%d compiles before any forward", st0.compiles);
    const float inf = INFINITY, nan = NAN;
    static const int ROWS = 8;
    const float rows[8][2] = {{0.3f, -0.7f}, {100.0f, -100.0f}, {-1e30f, 1e30f}, {88.0f, -88.0f},
                              {inf, -inf},   {-inf, inf},       {nan, 0.5f},     {0.5f, nan}};
    for (int r = 0; r < ROWS; r++) {
        NEED(otc_exec_set_input(ex, x, rows[r], 1) == OTC_OK &&
             otc_exec_set_input(in, x, rows[r], 1) == OTC_OK);
        NEED(otc_exec_forward(ex) == OTC_OK && otc_exec_forward(in) == OTC_OK);
        for (int i = 0; i < 4; i++) {
            const float *a, *b;
            NEED(otc_exec_value(in, outs[i], &a, NULL) == OTC_OK &&
                 otc_exec_value(ex, outs[i], &b, NULL) == OTC_OK);
            CHECK_MSG(same_float(b[0], a[0]), "row %d output %d: jit %.9g, interpreter %.9g", r, i,
                      (double)b[0], (double)a[0]);
        }
    }
    NEED(otc_jit_executor_stats(ex, &st0) == OTC_OK);
    CHECK_MSG(st0.scalar_forwards == ROWS && st0.compiles == 1,
              "%ld scalar forwards, %d compiles after %d single samples", st0.scalar_forwards,
              st0.compiles, ROWS);
    /* Three samples: the vector form, the first three rows (NaN-free) and then rows with NaN. */
    for (int part = 0; part < 2; part++) {
        const float *batch = part == 0 ? &rows[0][0] : &rows[5][0];
        NEED(otc_exec_set_input(ex, x, batch, 3) == OTC_OK &&
             otc_exec_set_input(in, x, batch, 3) == OTC_OK);
        NEED(otc_exec_forward(ex) == OTC_OK && otc_exec_forward(in) == OTC_OK);
        for (int i = 0; i < 4; i++) {
            const float *a, *b;
            NEED(otc_exec_value(in, outs[i], &a, NULL) == OTC_OK &&
                 otc_exec_value(ex, outs[i], &b, NULL) == OTC_OK);
            for (int k = 0; k < 3; k++)
                CHECK_MSG(isnan(a[k]) == isnan(b[k]) &&
                              (isnan(a[k]) || isinf(a[k]) ? same_float(a[k], b[k])
                                                          : jit_close_to(b[k], a[k], 2e-5)),
                          "batch 3 part %d sample %d output %d: jit %.9g, interpreter %.9g", part,
                          k, i, (double)b[k], (double)a[k]);
        }
    }
    NEED(otc_jit_executor_stats(ex, &st0) == OTC_OK);
    CHECK_MSG(st0.scalar_forwards == ROWS && st0.compiles == 2,
              "%ld scalar forwards, %d compiles after two batches of 3", st0.scalar_forwards,
              st0.compiles);
    otc_exec_free(ex);
    otc_exec_free(in);
    otc_graph_free(g);
    /* A dense layer: batch 1 runs in column mode, not the scalar form. */
    otc_rng rng;
    otc_rng_seed(&rng, 5);
    g = otc_graph_new();
    x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 8));
    const int sizes[2] = {16, 1};
    otc_id y = otc_mlp(g, x, 2, sizes, OTC_OP_TANH, -1, &rng);
    NEED(y >= 0 && otc_graph_mark_output(g, y) == OTC_OK);
    ex = otc_jit_executor_new(g, &opt);
    NEED(ex);
    CHECK(jit_forward_agrees(g, ex, 1, 3, "mlp batch 1"));
    NEED(otc_jit_executor_stats(ex, &st0) == OTC_OK);
    CHECK_MSG(st0.scalar_forwards == 0, "an MLP ran %ld scalar forwards", st0.scalar_forwards);
    otc_exec_free(ex);
    otc_graph_free(g);
}

/* A forward plan with small-batch kernel forms (column-mode dense layers, a one-sample
 * convolution) compiles each batch form on its first use only: none at creation, one per
 * kind of batch run, none again; every batch agrees with the interpreter. */
TEST(jit_forward_compiles_only_the_batch_forms_it_runs) {
    otc_rng rng;
    otc_rng_seed(&rng, 11);
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "image", (otc_shape){4, {OTC_BATCH, 1, 10, 10}});
    otc_id h =
        otc_conv2d_layer(g, x, 4, 3, &(otc_conv2d_params){.pad_h = 1, .pad_w = 1}, &rng, "conv");
    h = otc_maxpool2d(g, "pool", otc_activation(g, OTC_OP_RELU, h, 0),
                      &(otc_pool2d_params){.kernel_h = 2, .kernel_w = 2});
    h = otc_activation(g, OTC_OP_TANH, otc_linear(g, otc_flatten(g, h), 24, &rng, "fc1"), 0);
    otc_id y = otc_linear(g, h, 3, &rng, "fc2");
    NEED(y >= 0);
    otc_graph_mark_output(g, y);
    otc_jit_options o = otc_jit_defaults();
    o.lanes = 16;
    o.no_cache = true;
    otc_executor *ex = otc_jit_executor_new(g, &o);
    NEED(ex);
    otc_jit_stats s;
    NEED(otc_jit_executor_stats(ex, &s) == OTC_OK);
    CHECK_MSG(s.compiles == 0, "%d compiles before any forward", s.compiles);
    /* batch -> compiles after it: 64 (batched), 1 (one sample), 3 (column mode, the
     * convolution batched), then each again */
    static const int batches[6] = {64, 1, 3, 64, 1, 3}, compiles[6] = {1, 2, 3, 3, 3, 3};
    for (int t = 0; t < 6; t++) {
        CHECK(jit_forward_agrees(g, ex, batches[t], 100 + (uint64_t)t, "forms"));
        NEED(otc_jit_executor_stats(ex, &s) == OTC_OK);
        CHECK_MSG(s.compiles == compiles[t], "batch %d: %d compiles, want %d", batches[t],
                  s.compiles, compiles[t]);
    }
    otc_exec_free(ex);
    otc_graph_free(g);
}
