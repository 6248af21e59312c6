/* Recurrent layers in the interpreter and the LLVM JIT (when built) against PyTorch eager: a
 * training step (forward over the sequence, backpropagation through time, Adam; the JIT's is the
 * unrolled window's compiled forward and backward) and batch-1 inference of one time step, for the
 * parity-sized LSTM/GRU (1→16, 10 steps, batch 32) and a larger one (32→128, 50 steps, batch
 * 64). PyTorch's figures come from bench/recurrent_torch.py run in the same process's run, at
 * 1 and 2 threads; its columns are left out when torch is not installed. The interpreter's
 * only threads are OpenBLAS's (its products), set to 1 and 2 the same way.
 * With the JIT it also times compiling a 100-neuron recurrent genome at the fast tier.
 * Usage: recurrent [--quick | --large] [--cpu]
 *   --quick, --large: the small or the large configurations only
 *   --cpu: the timing thread's CPU time instead of wall time, both sides, one thread only
 *          (on a machine shared with other work, wall time measures the waiting for a core;
 *          process time would count idle BLAS threads spinning) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "bench_timing.h"
#include "otc/otc.h"
#include "otc/random_graph.h"
#ifdef OTC_BENCH_JIT
#include "otc/jit.h"
#endif

#ifndef OTC_SOURCE_DIR
#define OTC_SOURCE_DIR "."
#endif

typedef struct {
    otc_cell cell;
    int in, hidden, steps, batch;
} config;

static const char *cell_name(otc_cell c) {
    return c == OTC_CELL_LSTM ? "lstm" : c == OTC_CELL_GRU ? "gru" : "rnn";
}

typedef struct {
    otc_graph *g;
    otc_executor *ex;
    otc_optimizer *opt;
    otc_id x, target, loss;
    const config *c;
    float *xs, *ts; /* [steps][batch][in], [steps][batch][hidden] */
    int t;          /* inference: the next step */
} bench_net;

/* x -> the layer -> h; with a target, the MSE of h against it at every step. */
static int build(bench_net *n, const config *c, bool train, int batch, bool jit) {
    otc_rng rng;
    otc_rng_seed(&rng, 1);
    n->c = c;
    n->g = otc_graph_new();
    n->x = otc_input(n->g, "x", otc_shape_2d(OTC_BATCH, c->in));
    otc_id h = otc_recurrent(n->g, c->cell, n->x, c->hidden, 1, &rng, "rnn");
    if (h < 0 || otc_graph_mark_output(n->g, h)) return -1;
    size_t nx = (size_t)c->steps * (size_t)batch * (size_t)c->in;
    size_t nt = (size_t)c->steps * (size_t)batch * (size_t)c->hidden;
    n->xs = malloc(nx * sizeof *n->xs);
    n->ts = malloc(nt * sizeof *n->ts);
    if (!n->xs || !n->ts) return -1;
    for (size_t i = 0; i < nx; i++) n->xs[i] = 2 * otc_rng_uniform(&rng) - 1;
    for (size_t i = 0; i < nt; i++) n->ts[i] = 2 * otc_rng_uniform(&rng) - 1;
    if (train) {
        n->target = otc_input(n->g, "target", otc_shape_2d(OTC_BATCH, c->hidden));
        n->loss = otc_mse(n->g, h, n->target);
        otc_optim_config oc = otc_optim_defaults(OTC_OPTIM_ADAM);
        n->opt = otc_optimizer_new(&oc);
        if (n->loss < 0 || !n->opt) return -1;
    }
    otc_exec_options eo = {.inference = !train};
#ifdef OTC_BENCH_JIT
    if (jit) {
        otc_jit_options jo = otc_jit_defaults();
        jo.inference = !train;
        n->ex = otc_jit_executor_new(n->g, &jo);
        return n->ex ? 0 : -1;
    }
#else
    (void)jit;
#endif
    n->ex = otc_interpreter_new(n->g, &eo);
    return n->ex ? 0 : -1;
}

static void release(bench_net *n) {
    otc_exec_free(n->ex);
    otc_optimizer_free(n->opt);
    otc_graph_free(n->g);
    free(n->xs);
    free(n->ts);
}

/* One training step over the whole sequence. */
static int train_step(bench_net *n) {
    const config *c = n->c;
    otc_exec_reset_state(n->ex);
    if (otc_exec_seq_begin(n->ex, c->steps)) return -1;
    for (int t = 0; t < c->steps; t++)
        if (otc_exec_set_input(n->ex, n->x, n->xs + (size_t)t * c->batch * c->in, c->batch) ||
            otc_exec_set_input(n->ex, n->target, n->ts + (size_t)t * c->batch * c->hidden,
                               c->batch) ||
            otc_exec_forward(n->ex))
            return -1;
    otc_exec_zero_grad(n->ex);
    if (otc_exec_seq_backward(n->ex, n->loss, NULL) || otc_exec_optimizer_step(n->ex, n->opt))
        return -1;
    return 0;
}

/* One time step at batch 1, the state carried (restarted every sequence length). */
static int infer_step(bench_net *n) {
    if (n->t == n->c->steps) {
        otc_exec_reset_state(n->ex);
        n->t = 0;
    }
    int rc = otc_exec_set_input(n->ex, n->x, n->xs + (size_t)n->t * n->c->in, 1) ||
             otc_exec_forward(n->ex);
    n->t++;
    return rc ? -1 : 0;
}

/* Seconds on the clock the run measures: wall (monotonic) or this thread's CPU time (OpenBLAS
 * at one thread computes on the calling thread). */
static bool cpu_clock;

static double now(void) {
    if (!cpu_clock) return bench_now();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Median seconds per call over 7 blocks, each of enough calls to make about 0.3 s in all
 * (as bench/recurrent_torch.py times its side). */
static double median_time(int (*fn)(bench_net *), bench_net *n) {
    enum { BLOCKS = 7 };
    for (int i = 0; i < 3; i++)
        if (fn(n)) return -1;
    long calls = 1;
    for (;;) {
        double t0 = now();
        for (long i = 0; i < calls; i++) fn(n);
        if ((now() - t0) * BLOCKS >= 0.3 || calls >= (1L << 20)) break;
        calls *= 2;
    }
    double times[BLOCKS];
    for (int b = 0; b < BLOCKS; b++) {
        double t0 = now();
        for (long i = 0; i < calls; i++)
            if (fn(n)) return -1;
        times[b] = (now() - t0) / (double)calls;
    }
    qsort(times, BLOCKS, sizeof times[0], bench_cmp_double);
    return times[BLOCKS / 2];
}

/* PyTorch's figures for a configuration at 1 and 2 threads, from the script's output lines:
 * [0] eager, [1] TorchScript (its "ts" lines). */
typedef struct {
    bool have[2][3];
    double train_ms[2][3], infer_us[2][3];
} torch_row;

static void read_torch(const config *cs, int n, torch_row *rows) {
    char cmd[4096];
    int at = snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/bench/recurrent_torch.py%s",
                      OTC_SOURCE_DIR, cpu_clock ? " --cpu" : "");
    /* Timing one thread's CPU time: PyTorch's BLAS computes on that thread too. */
    if (cpu_clock) setenv("OPENBLAS_NUM_THREADS", "1", 1);
    for (int i = 0; i < n && at > 0 && (size_t)at < sizeof cmd; i++)
        at += snprintf(cmd + at, sizeof cmd - (size_t)at, " %s %d %d %d %d", cell_name(cs[i].cell),
                       cs[i].in, cs[i].hidden, cs[i].steps, cs[i].batch);
    if (at <= 0 || (size_t)at + 16 >= sizeof cmd) return;
    strcat(cmd, " 2>/dev/null");
    FILE *p = popen(cmd, "r");
    if (!p) return;
    char line[256], cell[16];
    int in, h, s, b, th;
    double tr, inf;
    while (fgets(line, sizeof line, p)) {
        int ts = !strncmp(line, "ts ", 3);
        if (sscanf(line + 3 * ts, "%15s %d %d %d %d %d %lf %lf", cell, &in, &h, &s, &b, &th, &tr,
                   &inf) == 8 &&
            th >= 1 && th <= 2)
            for (int i = 0; i < n; i++)
                if (!strcmp(cell, cell_name(cs[i].cell)) && in == cs[i].in && h == cs[i].hidden &&
                    s == cs[i].steps && b == cs[i].batch) {
                    rows[i].have[ts][th] = true;
                    rows[i].train_ms[ts][th] = tr;
                    rows[i].infer_us[ts][th] = inf;
                }
    }
    pclose(p);
}

/* A column's figure, or "-" when it was not measured. */
static void print_figure(bool have, double v) {
    if (have)
        printf(" %9.3f", v);
    else
        printf(" %9s", "-");
}

int main(int argc, char **argv) {
    bool quick = false, large = false;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--quick"))
            quick = true;
        else if (!strcmp(argv[a], "--large"))
            large = true;
        else if (!strcmp(argv[a], "--cpu"))
            cpu_clock = true;
        else {
            fprintf(stderr, "usage: recurrent [--quick | --large] [--cpu]\n");
            return 2;
        }
    }
    const config every[] = {
        {OTC_CELL_LSTM, 1, 16, 10, 32},
        {OTC_CELL_GRU, 1, 16, 10, 32},
        {OTC_CELL_LSTM, 32, 128, 50, 64},
        {OTC_CELL_GRU, 32, 128, 50, 64},
    };
    const config *all = every + (large ? 2 : 0);
    int n = quick || large ? 2 : 4, max_threads = cpu_clock ? 1 : 2;
#ifdef OTC_BENCH_JIT
    const int backends = 2; /* interpreter, JIT */
#else
    const int backends = 1;
#endif
    double train[2][4][3], infer[2][4][3];
    for (int be = 0; be < backends; be++)
        for (int i = 0; i < n; i++)
            for (int th = 1; th <= max_threads; th++) {
                openblas_set_num_threads(th);
                bench_net tn = {0}, in = {0};
                if (build(&tn, &all[i], true, all[i].batch, be == 1) ||
                    build(&in, &all[i], false, 1, be == 1)) {
                    fprintf(stderr, "recurrent: %s\n", otc_last_error());
                    return 2;
                }
                train[be][i][th] = median_time(train_step, &tn);
                infer[be][i][th] = median_time(infer_step, &in);
                release(&tn);
                release(&in);
                if (train[be][i][th] < 0 || infer[be][i][th] < 0) {
                    fprintf(stderr, "recurrent: %s\n", otc_last_error());
                    return 2;
                }
            }
    torch_row rows[4] = {0};
    read_torch(all, n, rows);
    bool torch = false;
    for (int i = 0; i < n; i++) torch |= rows[i].have[0][1] || rows[i].have[0][2];

    printf("training step (forward + BPTT + Adam), ms  |  batch-1 inference, us per time step\n"
           "(median of 7 blocks, %s; 1t/2t: OpenBLAS or PyTorch threads; torch: eager, ts: "
           "TorchScript)\n",
           cpu_clock ? "CPU time" : "wall time");
    static const char *col[2][2] = {{"otc 1t", "otc 2t"}, {"jit 1t", "jit 2t"}};
    printf("  %-22s", "layer");
    for (int be = 0; be < backends; be++) printf(" %9s %9s", col[be][0], col[be][1]);
    static const char *peer_cols = "  torch 1t  torch 2t     ts 1t     ts 2t";
    if (torch) printf("%s", peer_cols);
    for (int be = 0; be < backends; be++) printf(" %9s %9s", col[be][0], col[be][1]);
    if (torch) printf("%s", peer_cols);
    putchar('\n');
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s %d->%d T%d B%d", cell_name(all[i].cell), all[i].in,
                 all[i].hidden, all[i].steps, all[i].batch);
        printf("  %-22s", name);
        for (int be = 0; be < backends; be++)
            for (int th = 1; th <= 2; th++) print_figure(th <= max_threads, train[be][i][th] * 1e3);
        for (int k = 0; torch && k < 4; k++)
            print_figure(rows[i].have[k / 2][1 + k % 2], rows[i].train_ms[k / 2][1 + k % 2]);
        for (int be = 0; be < backends; be++)
            for (int th = 1; th <= 2; th++) print_figure(th <= max_threads, infer[be][i][th] * 1e6);
        for (int k = 0; torch && k < 4; k++)
            print_figure(rows[i].have[k / 2][1 + k % 2], rows[i].infer_us[k / 2][1 + k % 2]);
        putchar('\n');
    }
    /* The compiled side's speed as a multiple of the faster PyTorch (eager or TorchScript),
     * one thread each. */
    for (int i = 0; torch && i < n; i++) {
        int be = backends - 1;
        double tr = 0, inf = 0;
        for (int k = 0; k < 2; k++)
            if (rows[i].have[k][1]) {
                if (!tr || rows[i].train_ms[k][1] < tr) tr = rows[i].train_ms[k][1];
                if (!inf || rows[i].infer_us[k][1] < inf) inf = rows[i].infer_us[k][1];
            }
        if (tr > 0)
            printf("  %s %d->%d: %s %.2fx the faster PyTorch's training step, %.1fx its batch-1 "
                   "step (1 thread)\n",
                   cell_name(all[i].cell), all[i].in, all[i].hidden, be ? "JIT" : "interpreter",
                   tr / (train[be][i][1] * 1e3), inf / (infer[be][i][1] * 1e6));
    }
    if (!torch) printf("  (PyTorch columns left out: /usr/bin/python3 cannot import torch)\n");
#ifdef OTC_BENCH_JIT
    /* Compiling a 100-neuron recurrent genome (forward step) at the fast tier, as the
     * evolve policy does: median of 7 fresh compiles (no structure cache). */
    otc_testgen_neat_options go = otc_testgen_neat_defaults(100);
    go.recurrent = 0.2f;
    double ms[7];
    int nodes = 0;
    for (int r = 0; r < 7; r++) {
        otc_graph *g = otc_testgen_neat(100 + (uint64_t)r, &go);
        otc_jit_options jo = otc_jit_defaults();
        jo.tier = OTC_JIT_TIER_FAST;
        jo.inference = true;
        jo.no_cache = true;
        double t0 = bench_now();
        otc_executor *ex = g ? otc_jit_executor_new(g, &jo) : NULL;
        ms[r] = (bench_now() - t0) * 1e3;
        if (!ex) {
            fprintf(stderr, "recurrent: %s\n", otc_last_error());
            return 2;
        }
        nodes = otc_graph_size(g);
        otc_exec_free(ex);
        otc_graph_free(g);
    }
    qsort(ms, 7, sizeof ms[0], bench_cmp_double);
    printf("compile, 100-neuron recurrent genome (%d nodes), fast tier: %.2f ms (median of 7)\n",
           nodes, ms[3]);
#endif
    return 0;
}
