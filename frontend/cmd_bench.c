/* `otc bench MODEL.otm | --random N`: one table, measured in one run: per-sample time and
 * throughput of the interpreter, the LLVM JIT and the emitted C (cc -O3 -march=native
 * -fno-math-errno), for forward or a full training step (a recurrent model's through --bptt K
 * time steps), with ratios and the JIT's compile time. A training step's loss is checked to
 * agree across the backends. --json prints the figures, --export writes the graph for
 * bench/torch_compare.py. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "otc/compiler.h"
#include "otc/otc.h"

const char otc_cmd_bench_summary[] =
    "time interpreter vs JIT vs emitted C on a model or random graph";

#if defined(OTC_HAVE_JIT)
#include "cli_bench.h"
#include "otc/jit.h"
#include "otc/random_graph.h"

/* The clock the blocks are timed by: the wall clock, or with --cpu-time this thread's CPU
 * time, which waiting for a core on a shared machine does not stretch. */
static clockid_t timed_clock = CLOCK_MONOTONIC;

static double now_us(void) {
    struct timespec t;
    clock_gettime(timed_clock, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* What one timed call does. */
typedef struct {
    otc_graph *g;
    otc_executor *ex;
    otc_optimizer *opt;
    otc_id loss_id, out;
    int batch;
    int n_in;
    const otc_id *in_ids;  /* the Input nodes (looked up once: a lookup scans the graph) */
    float **data;          /* per Input node, sample-major (with steps: step-major, then so) */
    const size_t *in_size; /* per Input node, floats per sample */
    int steps;             /* > 0: a recurrent training step through this many time steps */
    const float *weight;   /* [steps] each step's loss weight, 1/steps */
    bool read_loss;        /* keep the call's loss in `loss` (read every step, as otc train) */
    double loss;
    otc_bench_c *c;
    const float *in_rows, *target_rows;
    float *out_rows, *loss_out;
    void *ws, *params;
    float lr;
    bool train;
    int failed;
} job;

/* One chunk of `otc train --bptt K` (its seq_batch): from a reset state, forward through the
 * steps while recording, backward through time, one update. */
static void run_seq(job *j) {
    otc_executor *ex = j->ex;
    otc_exec_reset_state(ex);
    if (otc_exec_seq_begin(ex, j->steps)) {
        j->failed++;
        return;
    }
    double sum = 0;
    for (int t = 0; t < j->steps; t++) {
        for (int i = 0; i < j->n_in; i++)
            if (otc_exec_set_input(ex, j->in_ids[i],
                                   j->data[i] + (size_t)t * (size_t)j->batch * j->in_size[i],
                                   j->batch)) {
                j->failed++;
                return;
            }
        const float *lv;
        if (otc_exec_forward(ex) || (j->read_loss && otc_exec_value(ex, j->loss_id, &lv, NULL))) {
            j->failed++;
            return;
        }
        if (j->read_loss) sum += lv[0];
    }
    otc_exec_zero_grad(ex);
    if (otc_exec_seq_backward(ex, j->loss_id, j->weight) || otc_exec_optimizer_step(ex, j->opt))
        j->failed++;
    j->loss = sum / j->steps;
}

static void run(job *j) {
    if (j->c) {
        int rc = j->train ? j->c->train_step(j->params, j->in_rows, j->target_rows, j->batch, j->lr,
                                             j->loss_out, j->ws)
                          : j->c->forward(j->in_rows, j->out_rows, j->batch, j->ws);
        if (rc) j->failed++;
        if (j->train) j->loss = *j->loss_out;
        return;
    }
    if (j->steps > 0) {
        run_seq(j);
        return;
    }
    for (int i = 0; i < j->n_in; i++)
        if (otc_exec_set_input(j->ex, j->in_ids[i], j->data[i], j->batch)) {
            j->failed++;
            return; /* keep this error's message, not a later "input was not set" */
        }
    if (j->train) {
        float lv;
        if (otc_exec_train_step(j->ex, j->loss_id, j->opt, &lv)) j->failed++;
        j->loss = lv;
    } else {
        const float *v;
        if (otc_exec_forward(j->ex) || otc_exec_value(j->ex, j->out, &v, NULL)) j->failed++;
    }
}

/* The first two training steps of a fresh backend, their losses kept for the check that the
 * backends agree. */
static void check_calls(job *j, double loss[2]) {
    j->read_loss = true;
    for (int k = 0; k < 2; k++) {
        run(j);
        loss[k] = j->loss;
    }
    j->read_loss = false;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median over `repeat` blocks of the time per call, in microseconds, and their spread (half
 * the range between the fastest and slowest block, in % of the median); each block runs long
 * enough (block_ms) that the clock's resolution does not matter. */
static double median_us(job *j, double block_ms, int repeat, double *spread_pct) {
    run(j); /* warm: buffers, first-touch, compile of a lazily built plan */
    int k = 1;
    for (;;) {
        double t0 = now_us();
        for (int i = 0; i < k; i++) run(j);
        double dt = now_us() - t0;
        if (dt >= block_ms * 1e3 || k >= (1 << 24)) break;
        k = dt > 0 ? (int)fmin((double)k * 2.0, ceil(k * block_ms * 1e3 / dt * 1.2)) : k * 2;
    }
    double *t = malloc((size_t)repeat * sizeof *t);
    if (!t) {
        j->failed++;
        return 0;
    }
    for (int b = 0; b < repeat; b++) {
        double t0 = now_us();
        for (int i = 0; i < k; i++) run(j);
        t[b] = (now_us() - t0) / k;
    }
    qsort(t, (size_t)repeat, sizeof t[0], cmp_double);
    double med = repeat % 2 ? t[repeat / 2] : (t[repeat / 2 - 1] + t[repeat / 2]) / 2;
    *spread_pct = med > 0 ? 50 * (t[repeat - 1] - t[0]) / med : 0;
    free(t);
    return med;
}

/* The plan's rows of one stream, assembled from the per-Input data (width floats each). With
 * a tape (u, steps > 0: the emitted C training through time) a row is the state before the
 * window (zeros, as a reset leaves it), then every step's inputs: step t's at the plan's offset
 * + t * one step's width, the layout the generated header documents. */
static float *rows_for(const otc_plan *p, otc_io_stream stream, otc_graph *g, float **data,
                       const size_t *in_size, int batch, const otc_unrolled *u, int steps,
                       int64_t *width) {
    int64_t state = 0, step = 0;
    for (int i = 0; u && i < p->n_io; i++) {
        if (p->io[i].stream != stream) continue;
        bool is_state = false;
        for (int d = 0; d < u->n_delays; d++) is_state |= u->state_in[d] == p->io[i].node;
        *(is_state ? &state : &step) += p->io[i].width;
    }
    *width = u ? state + steps * step : stream == OTC_IO_IN ? p->in_width : p->target_width;
    float *rows = calloc((size_t)(*width * batch) + 1, sizeof(float));
    if (!rows) return NULL;
    for (int i = 0; i < p->n_io; i++) {
        const otc_plan_io *io = &p->io[i];
        if (io->stream != stream) continue;
        int k = 0, n_in = otc_graph_input_count(g);
        while (k < n_in && (u ? u->inputs[k] : otc_graph_input(g, k)) != io->node) k++;
        if (k == n_in) continue; /* a tape's state: zeros */
        for (int t = 0; t < (u ? steps : 1); t++)
            for (int b = 0; b < batch; b++)
                memcpy(rows + b * *width + io->offset + t * step,
                       data[k] + ((size_t)t * (size_t)batch + (size_t)b) * in_size[k],
                       (size_t)io->width * sizeof(float));
    }
    return rows;
}

typedef struct {
    const char *name;
    double us, spread; /* median per call; half the blocks' range in % of it */
    bool ran;
} result;

static uint64_t mul_sat(uint64_t a, uint64_t b) {
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* The memory the chosen backends take at once, from what each allocates: the interpreter
 * every node's value at the batch (training: and a gradient each; through time: per step);
 * the JIT tiers and the emitted C their plan's workspace (activations shared by lifetime,
 * gradients) and optimiser state, the JIT's at the batch rounded up to whole vectors (16
 * lanes); through time the JIT's unrolled window counted as the interpreter's steps and the
 * emitted C's tape as its sizes (tape). Without a plan (p NULL: it could not be built) they are
 * counted as the interpreter's. Saturating: the check is what matters. */
static uint64_t bench_memory(const otc_graph *g, int batch, bool train, int steps,
                             const otc_plan *p, const otc_plan_bytes *tape, bool jit, bool c) {
    uint64_t per_step = train ? 2 : 1, times = per_step * (uint64_t)(steps > 0 ? steps : 1);
    uint64_t need = mul_sat(otc_graph_value_bytes(g, batch), times);
    int64_t vec_batch = ((int64_t)batch + 15) / 16 * 16;
    for (int k = 0; k < 3; k++) { /* JIT, its fast tier, emitted C */
        if (k < 2 ? !jit : !c) continue;
        int64_t at = k < 2 ? vec_batch : batch;
        uint64_t one;
        if (k == 2 && tape) {
            one = (uint64_t)tape->workspace + (uint64_t)tape->weights +
                  (uint64_t)tape->optimizer_state;
        } else if (p && steps == 0) {
            otc_plan_bytes b = otc_plan_sizes(p, at);
            one = (uint64_t)b.workspace + (uint64_t)b.weights + (uint64_t)b.optimizer_state;
        } else {
            one = mul_sat(otc_graph_value_bytes(g, at), times);
        }
        need = need > UINT64_MAX - one ? UINT64_MAX : need + one;
    }
    return need;
}

/* A training step's loss in two backends (the first step's, from the same weights, and the
 * second's, after one update), within float rounding over a long sum: relative 1e-3. */
static bool losses_agree(const double a[2], const double b[2], double *worst) {
    bool ok = true;
    for (int i = 0; i < 2; i++) {
        if (a[i] == b[i] || (isnan(a[i]) && isnan(b[i]))) continue; /* the same, inf or NaN */
        double d = fabs(a[i] - b[i]), scale = fmax(fabs(a[i]), fabs(b[i]));
        double rel = scale > 0 ? d / scale : 0;
        if (!(rel <= 1e-3 || d <= 1e-6)) ok = false; /* NaN disagrees */
        if (!(rel <= *worst)) *worst = rel;
    }
    return ok;
}

int otc_cmd_bench(int argc, char **argv) {
    int batch = 1, random_n = 0, connections = 0, seed = 1, repeat = 7, bptt = 0;
    bool train = false, json = false, no_c = false, no_jit = false, no_blas = false,
         cpu_time = false;
    const char *export_path = NULL, *optim = "adam";
    double lr = 0.001, block_ms = 20.0;
    const otc_opt opts[] = {
        {"--batch", OTC_OPT_RANGE, OTC_RANGE(batch, 1, 1 << 20), "B: samples per call (default 1)"},
        {"--train", OTC_OPT_FLAG, &train,
         "time a training step (forward, backward, optimiser) instead of forward"},
        {"--optim", OTC_OPT_STRING, &optim, "sgd|adam|adamw: with --train (default adam)"},
        {"--lr", OTC_OPT_FLOAT, &lr, "X: with --train (default 0.001)"},
        {"--bptt", OTC_OPT_RANGE, OTC_RANGE(bptt, 1, OTC_MAX_SEQ_STEPS),
         "K: with --train on a recurrent model, the step runs through K time steps (forward "
         "through them, backward through time, one update)"},
        {"--random", OTC_OPT_RANGE, OTC_RANGE(random_n, 1, 1 << 20),
         "N: an evolved-style random graph of N neurons instead of a model file"},
        {"--connections", OTC_OPT_RANGE, OTC_RANGE(connections, 1, 1 << 26),
         "C: connections of the random graph (about; default 3 per neuron)"},
        {"--seed", OTC_OPT_INT, &seed, "S: the random graph's seed (default 1)"},
        {"--no-c", OTC_OPT_FLAG, &no_c, "skip the emitted-C backend"},
        {"--no-jit", OTC_OPT_FLAG, &no_jit, "skip the two JIT tiers"},
        {"--no-blas", OTC_OPT_FLAG, &no_blas,
         "the JIT generates every dense product itself (no OpenBLAS calls)"},
        {"--block-ms", OTC_OPT_FLOAT, &block_ms, "MS: length of one timed block (default 20)"},
        {"--repeat", OTC_OPT_RANGE, OTC_RANGE(repeat, 3, 1001),
         "N: timed blocks per backend: their median is reported, with the spread (default 7)"},
        {"--cpu-time", OTC_OPT_FLAG, &cpu_time,
         "time the blocks in this thread's CPU time, not the wall clock (steadier on a shared "
         "machine; other threads' work is not counted: set OPENBLAS_NUM_THREADS=1)"},
        {"--json", OTC_OPT_FLAG, &json, "print the figures as one JSON object"},
        {"--export", OTC_OPT_STRING, &export_path,
         "FILE.json: the graph, weights and figures for bench/torch_compare.py"},
    };
    const char *pos[1] = {NULL};
    int rc =
        otc_cli_parse("bench", "MODEL.otm | --random N [--batch B] [--train [--bptt K]] [--json]",
                      opts, (int)(sizeof opts / sizeof opts[0]), argc, argv, pos, 0, 1);
    if (rc) return rc < 0 ? OTC_EXIT_OK : rc;
    if (!(block_ms > 0 && block_ms <= 60000))
        return otc_cli_error("bench", "--block-ms must be a number in (0, 60000], not %g",
                             block_ms);
    if (!(lr > 0) || !isfinite(lr))
        return otc_cli_error("bench", "--lr must be a positive number, not %g", lr);
    if (!pos[0] && random_n <= 0)
        return otc_cli_error("bench", "give a MODEL.otm or --random N (try 'otc bench --help')");
    if (pos[0] && random_n > 0) return otc_cli_error("bench", "a model file or --random, not both");
    timed_clock = cpu_time ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
    int okind = otc_optim_kind_from_name(optim);
    if (okind < 0) return otc_cli_error("bench", "unknown --optim '%s'", optim);
    const otc_cli_file ins[] = {{"MODEL", pos[0]}};
    const otc_cli_file outs[] = {{"--export", export_path}};
    if ((rc = otc_cli_check_files("bench", ins, 1, outs, 1))) return rc;

    otc_graph *g = NULL;
    char what[600];
    if (pos[0]) {
        if ((rc = otc_cli_load_model("bench", pos[0], &g))) return rc;
        char p[512];
        snprintf(what, sizeof what, "%s", otc_cli_printable(pos[0], p, sizeof p));
    } else {
        otc_testgen_neat_options o = otc_testgen_neat_defaults(random_n);
        if (connections <= 0) connections = 3 * random_n;
        /* Fan-in is drawn from 1 .. max: its mean (1 + max) / 2 per neuron. */
        int fanin = (int)lround(2.0 * connections / random_n - 1.0);
        o.max_fanin = fanin < 1 ? 1 : (fanin > 64 ? 64 : fanin);
        g = otc_testgen_neat((uint64_t)seed, &o);
        if (!g) return otc_cli_error("bench", "random graph: %s", otc_last_error());
        snprintf(what, sizeof what, "random evolved-style graph (seed %d)", seed);
    }
    /* Through time: what one chunk of `otc train --bptt K` does, as otc compile --bptt builds
     * it (the same refusals). */
    bool recurrent = otc_graph_is_recurrent(g);
    if ((rc = otc_cli_check_bptt("bench", pos[0] ? pos[0] : what, recurrent, train, bptt))) {
        otc_graph_free(g);
        return rc;
    }
    int steps = train && recurrent ? bptt : 0;
    long long neurons = 0, links = 0;
    otc_bench_count_units(g, &neurons, &links);
    otc_id loss = -1, target = -1;
    otc_optim_config oc = otc_optim_defaults((otc_optim_kind)okind);
    oc.lr = (float)lr;
    otc_status st = OTC_OK;
    if (train) st = otc_compile_add_loss(g, OTC_OP_MSE, &loss, &target);
    if (!st && otc_graph_output_count(g) == 0)
        st = otc_fail(OTC_ERR_ARG, "the model has no outputs");
    if (st) {
        otc_graph_free(g);
        return otc_cli_error("bench", "%s: %s", what, otc_last_error());
    }
    otc_id out = otc_graph_output(g, 0);
    /* The plan the emitted C is built from, made once: the memory estimate, the C's parameter
     * size and its input rows all read it. Through time the emitted C is the model's one step
     * looped over a tape (otc compile --train --bptt K): the plan is that step's training plan
     * and its sizes the tape's. */
    otc_plan *plan = NULL;
    otc_unrolled *tape = NULL;
    otc_plan_bytes tape_bytes = {0};
    int64_t tape_in = 0, tape_target = 0; /* the tape's rows, floats per sample */
    if (steps > 0 && !no_c) {
        otc_emit_c_options eo = otc_emit_c_defaults();
        otc_plan *f = NULL, *big = NULL;
        st = otc_unroll_step(g, steps, loss, &tape);
        if (!st) {
            eo.train = true;
            eo.loss = tape->total;
            eo.optim = oc;
            eo.bptt = steps;
            eo.step = tape;
            st = otc_emit_c_plans(tape->graph, &eo, &f, &big, &plan);
        }
        if (!st) st = otc_emit_c_sizes(tape->graph, &eo, batch, NULL, &tape_bytes);
        if (!st) st = otc_emit_c_rows(tape->graph, &eo, &tape_in, &tape_target, NULL);
        otc_plan_free(f);
        otc_plan_free(big);
        if (st) { /* the C is then skipped, saying why */
            otc_plan_free(plan);
            plan = NULL;
            otc_unrolled_free(tape);
            tape = NULL;
        }
        st = OTC_OK;
    } else if (steps == 0 && (!no_jit || !no_c)) {
        otc_plan_options po = {0};
        po.train = train;
        po.loss = loss;
        po.optim = oc;
        if (otc_plan_build(g, train ? &po : NULL, &plan) != OTC_OK) plan = NULL;
    }
    uint64_t need =
        bench_memory(g, batch, train, steps, plan, tape ? &tape_bytes : NULL, !no_jit, !no_c);
    char need_what[700];
    snprintf(need_what, sizeof need_what, "%s: benchmarking at batch %d", what, batch);
    if (steps > 0)
        snprintf(need_what, sizeof need_what, "%s: benchmarking at batch %d through %d steps", what,
                 batch, steps);
    if (otc_memory_check(need, need_what)) {
        otc_plan_free(plan);
        otc_unrolled_free(tape);
        otc_graph_free(g);
        return otc_cli_error("bench", "%s", otc_last_error());
    }

    /* Inputs: uniform in [-1, 1), per Input node (and time step). */
    otc_rng rng;
    otc_rng_seed(&rng, 12345);
    int n_in = otc_graph_input_count(g);
    float **data = calloc((size_t)n_in + 1, sizeof *data);
    otc_id *in_ids = calloc((size_t)n_in + 1, sizeof *in_ids);
    size_t *in_size = calloc((size_t)n_in + 1, sizeof *in_size);
    float *weight = calloc((size_t)steps + 1, sizeof *weight);
    for (int t = 0; weight && t < steps; t++) weight[t] = 1.0f / (float)steps;
    for (int i = 0; in_ids && i < n_in; i++) in_ids[i] = otc_graph_input(g, i);
    for (int i = 0; data && in_size && i < n_in; i++) {
        in_size[i] = otc_shape_size(otc_graph_node(g, otc_graph_input(g, i))->shape);
        size_t n = in_size[i] * (size_t)batch * (size_t)(steps > 0 ? steps : 1);
        data[i] = malloc(n * sizeof(float) + 4);
        for (size_t k = 0; data[i] && k < n; k++) data[i][k] = 2.0f * otc_rng_uniform(&rng) - 1.0f;
    }

    enum { INTERP, JIT, JIT_FAST, EMITTED_C, N_BACKENDS };
    result res[N_BACKENDS] = {{"interpreter", 0, 0, false},
                              {"jit", 0, 0, false},
                              {"jit, fast tier", 0, 0, false},
                              {"emitted C", 0, 0, false}};
    otc_jit_stats js = {0}, jfs = {0};
    double library_ms = 0, library_cpu_ms = 0, setup_ms = 0, setup_cpu_ms = 0;
    otc_bench_c cb = {0};
    bool have_c = false;
    char cerr[700] = "";
    otc_optimizer *opt_i = otc_optimizer_new(&oc), *opt_j = otc_optimizer_new(&oc),
                  *opt_f = otc_optimizer_new(&oc);
    /* The interpreter trains its own copy: the graph keeps the weights every backend starts
     * from (the JIT's window code reads them when first run). */
    otc_graph *gi = train ? otc_graph_clone(g) : NULL;
    otc_executor *ie = otc_interpreter_new(train ? gi : g, NULL), *je = NULL, *jf = NULL;
    otc_id losses[1] = {loss};
    otc_jit_options jo = otc_jit_defaults();
    jo.no_blas = no_blas;
    jo.no_cache = true; /* every compile below is timed */
    /* The first compile in a process also provides the JIT's math library (each activation
     * once, loaded from the on-disk object cache when a process compiled it before); its
     * cost is shown apart from the model's. */
    otc_jit_options fo = jo;
    fo.tier = OTC_JIT_TIER_FAST;
    otc_jit_cache_stats cache0 = otc_jit_cache_info();
    /* Through time the window's training code is compiled on its first run. */
    const otc_id *jl = train && steps == 0 ? losses : NULL;
    if (!no_jit && otc_jit_executors_new(&g, jl, 1, &fo, &jf) != OTC_OK) jf = NULL;
    otc_jit_cache_stats cache1 = otc_jit_cache_info();
    if (!no_jit && otc_jit_executors_new(&g, jl, 1, &jo, &je) != OTC_OK) je = NULL;
    otc_jit_cache_stats cache2 = otc_jit_cache_info();
    bool have_data = data && in_ids && in_size && weight;
    for (int i = 0; have_data && i < n_in; i++) have_data = data[i] != NULL;
    if (!have_data) {
        rc =
            otc_cli_error("bench", "%s: out of memory for the input rows at batch %d", what, batch);
        goto done;
    }
    if (!ie || (!no_jit && (!je || !jf)) || !opt_i || !opt_j || !opt_f) {
        rc = otc_cli_error("bench", "%s: %s", what, otc_last_error());
        goto done;
    }
    if (!no_c && steps > 0 && !tape)
        snprintf(cerr, sizeof cerr, "the step through time: %s", otc_last_error());
    else if (!no_c)
        have_c = otc_bench_c_build(&cb, tape ? tape->graph : g, plan, train,
                                   tape ? tape->total : loss, &oc, tape, steps, cerr, sizeof cerr);

    job jb = {0};
    jb.g = g;
    jb.loss_id = loss;
    jb.out = out;
    jb.batch = batch;
    jb.n_in = n_in;
    jb.in_ids = in_ids;
    jb.data = data;
    jb.in_size = in_size;
    jb.steps = steps;
    jb.weight = weight;
    jb.lr = (float)lr;
    jb.train = train;
    /* A training step's loss, the first and the second (after one update), per backend. */
    double first_losses[N_BACKENDS][2] = {{0}};
    otc_executor *timed[3] = {ie, je, jf};
    otc_optimizer *timed_opt[3] = {opt_i, opt_j, opt_f};
    /* The math library's cost while each JIT tier was made and first ran (it is provided by
     * whichever compile comes first), and the JIT's own creation (in the first compile), taken
     * out of that tier's compile time: both are paid once per process, shown apart. */
    double tier_lib_ms[3] = {
        0, cache2.library_ms - cache1.library_ms + cache2.setup_ms - cache1.setup_ms,
        cache1.library_ms - cache0.library_ms + cache1.setup_ms - cache0.setup_ms};
    double tier_lib_cpu_ms[3] = {
        0,
        cache2.library_cpu_ms - cache1.library_cpu_ms + cache2.setup_cpu_ms - cache1.setup_cpu_ms,
        cache1.library_cpu_ms - cache0.library_cpu_ms + cache1.setup_cpu_ms - cache0.setup_cpu_ms};
    for (int i = INTERP; i <= (no_jit ? INTERP : JIT_FAST); i++) {
        jb.ex = timed[i];
        jb.opt = timed_opt[i];
        jb.failed = 0;
        otc_jit_cache_stats before = otc_jit_cache_info();
        if (train) check_calls(&jb, first_losses[i]);
        res[i].us = median_us(&jb, block_ms, repeat, &res[i].spread);
        res[i].ran = jb.failed == 0;
        otc_jit_cache_stats after = otc_jit_cache_info();
        tier_lib_ms[i] += after.library_ms - before.library_ms + after.setup_ms - before.setup_ms;
        tier_lib_cpu_ms[i] +=
            after.library_cpu_ms - before.library_cpu_ms + after.setup_cpu_ms - before.setup_cpu_ms;
    }
    /* After the runs: code compiled on first use (a plan's batch form) counts too. */
    otc_jit_cache_stats cache3 = otc_jit_cache_info();
    library_ms = cache3.library_ms - cache0.library_ms;
    library_cpu_ms = cache3.library_cpu_ms - cache0.library_cpu_ms;
    setup_ms = cache3.setup_ms - cache0.setup_ms;
    setup_cpu_ms = cache3.setup_cpu_ms - cache0.setup_cpu_ms;
    if (!no_jit) {
        otc_jit_executor_stats(je, &js);
        js.compile_ms -= tier_lib_ms[JIT];
        js.compile_cpu_ms -= tier_lib_cpu_ms[JIT];
        otc_jit_executor_stats(jf, &jfs);
        jfs.compile_ms -= tier_lib_ms[JIT_FAST];
        jfs.compile_cpu_ms -= tier_lib_cpu_ms[JIT_FAST];
    }
    if (!res[INTERP].ran || (!no_jit && (!res[JIT].ran || !res[JIT_FAST].ran))) {
        rc = otc_cli_error("bench", "%s: %s", what, otc_last_error());
        goto done;
    }
    if (have_c && plan) {
        int64_t in_w, t_w;
        float *in_rows = rows_for(plan, OTC_IO_IN, g, data, in_size, batch, tape, steps, &in_w);
        float *t_rows = rows_for(plan, OTC_IO_TARGET, g, data, in_size, batch, tape, steps, &t_w);
        if (tape && (in_w != tape_in || t_w != tape_target)) { /* a layout this file misreads */
            snprintf(cerr, sizeof cerr,
                     "the tape's rows are %" PRId64 " + %" PRId64 " floats, not %" PRId64
                     " + %" PRId64,
                     tape_in, tape_target, in_w, t_w);
            free(in_rows);
            in_rows = NULL;
        }
        float *o_rows = calloc((size_t)(plan->out_width * batch) + 1, sizeof(float));
        float *lv = calloc(1, sizeof(float));
        size_t wb = train ? cb.train_workspace_bytes(batch) : cb.workspace_bytes(batch);
        void *ws = aligned_alloc(64, (wb + 63) / 64 * 64 + 64), *params = NULL;
        /* Zeros: a recurrent model's state starts as NAME_reset leaves it. */
        if (ws) memset(ws, 0, wb);
        if (train) {
            params = aligned_alloc(64, (cb.params_bytes + 63) / 64 * 64);
            if (params) cb.params_init(params);
        }
        if (in_rows && t_rows && o_rows && lv && ws && (!train || params)) {
            job jc = jb;
            jc.c = &cb;
            jc.in_rows = in_rows;
            jc.target_rows = t_rows;
            jc.out_rows = o_rows;
            jc.loss_out = lv;
            jc.ws = ws;
            jc.params = params;
            jc.failed = 0;
            if (train) check_calls(&jc, first_losses[EMITTED_C]);
            res[EMITTED_C].us = median_us(&jc, block_ms, repeat, &res[EMITTED_C].spread);
            res[EMITTED_C].ran = jc.failed == 0;
        }
        free(in_rows);
        free(t_rows);
        free(o_rows);
        free(lv);
        free(ws);
        free(params);
    }
    /* Every backend that ran took the same two steps from the same weights. */
    bool agree = true;
    double worst = 0;
    char agree_s[8] = "null", worst_s[32] = "null";
    for (int i = JIT; train && i < N_BACKENDS; i++)
        if (res[i].ran && !losses_agree(first_losses[INTERP], first_losses[i], &worst))
            agree = false;
    if (train) {
        snprintf(agree_s, sizeof agree_s, "%s", agree ? "true" : "false");
        snprintf(worst_s, sizeof worst_s, "%.3g", worst);
    }

    char figures[2600], c_us[32] = "null", c_ms[32] = "null", c_ratio[32] = "null",
                        c_cpu[32] = "null";
    double per[N_BACKENDS];
    for (int i = 0; i < N_BACKENDS; i++) per[i] = res[i].us / batch;
    if (res[EMITTED_C].ran) {
        snprintf(c_us, sizeof c_us, "%.6g", per[EMITTED_C]);
        snprintf(c_ms, sizeof c_ms, "%.4g", cb.build_ms);
        snprintf(c_cpu, sizeof c_cpu, "%.4g", cb.build_cpu_ms);
        if (!no_jit) snprintf(c_ratio, sizeof c_ratio, "%.4g", per[EMITTED_C] / per[JIT]);
    }
    /* --no-jit: the JIT's figures are null, as the emitted C's are with --no-c */
    char j_us[32] = "null", j_ms[32] = "null", jf_us[32] = "null", jf_ms[32] = "null",
         lib_ms[32] = "null", j_ratio[32] = "null", j_cpu[32] = "null", jf_cpu[32] = "null",
         lib_cpu[32] = "null", set_ms[32] = "null", set_cpu[32] = "null", load_ms[32] = "null",
         load_cpu[32] = "null";
    if (!no_jit) {
        snprintf(j_us, sizeof j_us, "%.6g", per[JIT]);
        snprintf(j_ms, sizeof j_ms, "%.4g", js.compile_ms);
        snprintf(jf_us, sizeof jf_us, "%.6g", per[JIT_FAST]);
        snprintf(jf_ms, sizeof jf_ms, "%.4g", jfs.compile_ms);
        snprintf(lib_ms, sizeof lib_ms, "%.4g", library_ms);
        snprintf(j_cpu, sizeof j_cpu, "%.4g", js.compile_cpu_ms);
        snprintf(jf_cpu, sizeof jf_cpu, "%.4g", jfs.compile_cpu_ms);
        snprintf(lib_cpu, sizeof lib_cpu, "%.4g", library_cpu_ms);
        snprintf(j_ratio, sizeof j_ratio, "%.4g", per[INTERP] / per[JIT]);
        snprintf(set_ms, sizeof set_ms, "%.4g", setup_ms);
        snprintf(set_cpu, sizeof set_cpu, "%.4g", setup_cpu_ms);
        snprintf(load_ms, sizeof load_ms, "%.4g", cache3.load_ms);
        snprintf(load_cpu, sizeof load_cpu, "%.4g", cache3.load_cpu_ms);
    }
    snprintf(figures, sizeof figures,
             "{\"model\": \"%s\", \"nodes\": %d, \"neurons\": %lld, \"connections\": %lld, "
             "\"batch\": %d, \"mode\": \"%s\", \"host_cpu\": \"%s\", \"lanes\": %d, "
             "\"interpreter_us_per_sample\": %.6g, \"jit_us_per_sample\": %s, "
             "\"c_us_per_sample\": %s, \"jit_compile_ms\": %s, \"c_build_ms\": %s, "
             "\"jit_fast_us_per_sample\": %s, \"jit_fast_compile_ms\": %s, "
             "\"jit_math_library_ms\": %s, \"jit_vs_interpreter\": %s, \"jit_vs_c\": %s, "
             "\"jit_objects_compiled\": %ld, \"jit_objects_loaded\": %ld, "
             "\"jit_compile_cpu_ms\": %s, \"jit_fast_compile_cpu_ms\": %s, "
             "\"c_build_cpu_ms\": %s, \"jit_math_library_cpu_ms\": %s, "
             "\"jit_setup_ms\": %s, \"jit_setup_cpu_ms\": %s, \"jit_load_ms\": %s, "
             "\"jit_load_cpu_ms\": %s, "
             "\"repeat\": %d, \"interpreter_spread_pct\": %.3g, \"jit_spread_pct\": %.3g, "
             "\"bptt\": %d, \"losses_agree\": %s, \"loss_max_rel_diff\": %s, "
             "\"clock\": \"%s\"}",
             pos[0] ? "file" : "random", otc_graph_size(g), neurons, links, batch,
             train ? "train" : "forward", otc_jit_host_cpu(), js.lanes, per[INTERP], j_us, c_us,
             j_ms, c_ms, jf_us, jf_ms, lib_ms, j_ratio, c_ratio,
             cache3.objects_compiled - cache0.objects_compiled,
             cache3.objects_loaded - cache0.objects_loaded, j_cpu, jf_cpu, c_cpu, lib_cpu, set_ms,
             set_cpu, load_ms, load_cpu, repeat, res[INTERP].spread, res[JIT].spread, steps,
             agree_s, worst_s, cpu_time ? "thread_cpu" : "wall");
    if (json) {
        printf("%s\n", figures);
    } else {
        char mode[160];
        if (steps > 0)
            snprintf(mode, sizeof mode,
                     "training step through %d time steps (forward, backward through time, "
                     "update; a sample is a sequence of %d steps)",
                     steps, steps);
        else
            snprintf(mode, sizeof mode, "%s",
                     train ? "training step (forward, backward, update)" : "forward");
        printf("otc bench: %s\n  %d nodes, %lld neurons, %lld connections; batch %d; %s; %s, %d "
               "lanes; median of %d blocks%s\n\n",
               what, otc_graph_size(g), neurons, links, batch, mode, otc_jit_host_cpu(), js.lanes,
               repeat, cpu_time ? " (thread CPU time)" : "");
        printf("  %-15s %14s %8s %16s %16s\n", "backend", "us/sample", "spread", "samples/s",
               "vs interpreter");
        for (int i = 0; i < N_BACKENDS; i++) {
            if (!res[i].ran) continue;
            printf("  %-15s %14.4f %7.1f%% %16.0f %15.1fx", res[i].name, per[i], res[i].spread,
                   1e6 / per[i], per[INTERP] / per[i]);
            /* CPU time first: steady on a loaded machine, where the wall clock is not */
            if (i == JIT)
                printf("   compile %.1f ms CPU (%.1f wall)", js.compile_cpu_ms, js.compile_ms);
            if (i == JIT_FAST)
                printf("   compile %.1f ms CPU (%.1f wall)", jfs.compile_cpu_ms, jfs.compile_ms);
            if (i == EMITTED_C)
                printf("   cc " OTC_BENCH_CC_FLAGS " %.0f ms CPU (%.0f wall)", cb.build_cpu_ms,
                       cb.build_ms);
            printf("\n");
        }
        if (!no_jit)
            printf(
                "\n  JIT once per process, not in the compile figures: loading LLVM %.1f ms CPU "
                "(%.1f wall), creating the JIT %.1f ms CPU (%.1f wall), math library "
                "(activations) %.1f ms CPU (%.1f wall)\n"
                "  JIT object cache: %ld module(s) compiled, %ld loaded (compile figures include "
                "loads; OTC_CACHE_DIR=off compiles everything)\n",
                cache3.load_cpu_ms, cache3.load_ms, setup_cpu_ms, setup_ms, library_cpu_ms,
                library_ms, cache3.objects_compiled - cache0.objects_compiled,
                cache3.objects_loaded - cache0.objects_loaded);
        if (res[EMITTED_C].ran && !no_jit)
            printf("  JIT vs emitted C: %.2fx (above 1: the JIT is faster)\n",
                   per[EMITTED_C] / per[JIT]);
        else if (!no_c && !res[EMITTED_C].ran)
            printf("  emitted C: not measured (%s)\n", cerr[0] ? cerr : "build failed");
        if (train)
            printf("  the backends' losses over the first two steps %s (interpreter %.6g, %.6g; "
                   "largest relative difference %.2g)\n",
                   agree ? "agree" : "DISAGREE", first_losses[INTERP][0], first_losses[INTERP][1],
                   worst);
    }
    if (!agree) {
        fprintf(stderr, "otc bench: %s: the backends disagree on the training step's loss:", what);
        for (int i = 0; i < N_BACKENDS; i++)
            if (res[i].ran)
                fprintf(stderr, " %s %.6g, %.6g;", res[i].name, first_losses[i][0],
                        first_losses[i][1]);
        fprintf(stderr, " a bug: please report it\n");
        rc = OTC_EXIT_GOAL;
    }
    if (export_path) {
        char *text = otc_bench_export(g, loss, batch, train, &oc, figures);
        if (!text) {
            rc = otc_cli_error("bench", "out of memory");
        } else {
            int wrc = otc_cli_write_output("bench", export_path, text, strlen(text));
            if (wrc) rc = wrc;
            free(text);
        }
    }
done:
    if (have_c) otc_bench_c_free(&cb);
    otc_plan_free(plan);
    otc_unrolled_free(tape);
    otc_exec_free(ie);
    otc_exec_free(je);
    otc_exec_free(jf);
    otc_optimizer_free(opt_i);
    otc_optimizer_free(opt_j);
    otc_optimizer_free(opt_f);
    for (int i = 0; data && i < n_in; i++) free(data[i]);
    free(data);
    free(in_ids);
    free(in_size);
    free(weight);
    otc_graph_free(gi);
    otc_graph_free(g);
    return rc;
}

#else
int otc_cmd_bench(int argc, char **argv) {
    (void)argc, (void)argv;
    return otc_cli_error("bench", "this otc was built without LLVM, which the benchmark needs");
}
#endif
