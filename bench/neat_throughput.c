/* NEAT whole-loop throughput: evaluations per second of otc_neat_step (evaluation, statistics,
 * speciation, reproduction) for every shipped task on 1 and 2 threads, heap allocations per
 * generation in steady state, and the 2-thread speedup the evaluation schedule allows (from
 * per-genome CPU times, so a busy machine does not blur it). Usage: neat_throughput [SCALE
 * [TASK]] (SCALE multiplies the generations measured; TASK runs only the task of that name). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "otc/neat.h"

/* Allocation counting (nothing under AddressSanitizer: the columns then read 0). */
#include "count_allocs.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    double rate;           /* evaluations per second */
    double cpu_rate;       /* evaluations per CPU second of the calling thread */
    double allocs_per_gen; /* after the first generation */
    double allocs_per_eval;
} measurement;

#define REPEATS 3

static void fail(const char *what) {
    fprintf(stderr, "neat_throughput: %s: %s\n", what, otc_last_error());
    exit(2);
}

/* ---- the schedule a generation allows -------------------------------------------------------- */

/* Every evaluation of a 1-thread run, in the order made (genome index order): its CPU time. */
typedef struct {
    double cpu;
} eval_cost;

static eval_cost *costs;
static int n_costs, cap_costs;
static otc_status (*real_evaluate)(const otc_neat_task *, const otc_neat_config *,
                                   otc_neat_genome *, uint64_t, otc_neat_eval *);
static otc_status (*real_confirm)(const otc_neat_task *, const otc_neat_config *,
                                  const otc_neat_genome *, bool *, double *);
static double confirm_cpu; /* this step's confirm test */
static double mark;        /* thread CPU time when the last evaluation or confirm ended */

static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static otc_status timed_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                 otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    double t0 = thread_cpu();
    otc_status s = real_evaluate(task, c, g, seed, out);
    if (n_costs == cap_costs) {
        cap_costs = cap_costs ? 2 * cap_costs : 4096;
        costs = realloc(costs, sizeof *costs * (size_t)cap_costs);
        if (!costs) exit(2);
    }
    mark = thread_cpu();
    costs[n_costs++] = (eval_cost){mark - t0};
    return s;
}

static otc_status timed_confirm(const otc_neat_task *task, const otc_neat_config *c,
                                const otc_neat_genome *g, bool *solved, double *score) {
    double t0 = thread_cpu();
    otc_status s = real_confirm(task, c, g, solved, score);
    mark = thread_cpu();
    confirm_cpu += mark - t0;
    return s;
}

/* Makespan of greedy list scheduling (each job to the first free worker) on 2 workers: the
 * schedule without reproduction overlapping evaluation. */
static double makespan2(const eval_cost *e, int n) {
    double w[2] = {0, 0};
    for (int i = 0; i < n; i++) w[w[1] < w[0]] += e[i].cpu;
    return w[0] > w[1] ? w[0] : w[1];
}

/* The CPU time of one thread_cpu call (a system call, not the vDSO): timing an evaluation
 * adds about one outside the timed windows, which is no part of the step. */
static double clock_cost(void) {
    double t0 = thread_cpu();
    for (int i = 0; i < 1000; i++) thread_cpu();
    return (thread_cpu() - t0) / 1001;
}

/* Makespan of evaluate.c's 2-thread schedule of a generation's evaluations overlapping the
 * reproduction that made them (repro: its CPU time, 0 for a first generation): the calling
 * thread reproduces, then joins; the helper takes the genomes one at a time in index order,
 * each once made (taken as made evenly over the reproduction). */
static double overlapped2(double repro, const eval_cost *e, int n) {
    double w[2] = {repro, 0}; /* when the caller and the helper are next free */
    for (int i = 0; i < n; i++) {
        int k = w[1] < w[0];
        double ready = repro * (i + 1) / n;
        w[k] = (w[k] > ready ? w[k] : ready) + e[i].cpu;
    }
    return w[0] > w[1] ? w[0] : w[1];
}

typedef struct {
    double sched;  /* 2-thread speedup of evaluate.c's schedule (one genome at a time, in
                      index order, to whichever thread is free, overlapping reproduction) */
    double bound;  /* no schedule of whole genomes does better: per generation the larger of
                      half the evaluations and reproduction before them, the reproduction,
                      and the longest evaluation */
    double plain;  /* sched without the overlap (reproduction, then evaluation) */
    double serial; /* share of a 1-thread step outside evaluation */
    double repro;  /* share of a 1-thread step in reproduction (what overlaps evaluation) */
} schedule;

/* From the CPU times of a 1-thread run: per generation the part that overlaps nothing (the
 * step minus its evaluations and its reproduction: statistics, the confirm test) plus the
 * 2-thread makespan of its evaluations overlapping the previous step's reproduction (the step
 * after the last evaluation or confirm), against the steps' CPU time. */
static schedule schedule_of(const char *ini, const char *task_name, int gens) {
    otc_neat_config c;
    otc_neat_task *task = NULL;
    if (otc_neat_config_load(ini, &c) != OTC_OK) fail(ini);
    if (otc_neat_task_create(task_name, &c, &task) != OTC_OK) fail(task_name);
    real_evaluate = task->evaluate;
    task->evaluate = timed_evaluate;
    task->evaluate_lanes = NULL; /* per-genome times: one genome at a time */
    real_confirm = task->confirm;
    if (task->confirm) task->confirm = timed_confirm;
    uint64_t seed = 100;
    otc_neat_population *p = NULL;
    if (otc_neat_population_new(&c, seed, &p) != OTC_OK) fail("population");
    otc_neat_step_options o = {.threads = 1};
    double total = 0, span = 0, span_bound = 0, plain = 0, serial = 0, repro_total = 0, repro = 0,
           oh = clock_cost();
    for (int g = 0; g < gens; g++) {
        bool solved = false;
        n_costs = 0;
        confirm_cpu = 0;
        double t0 = thread_cpu();
        mark = t0;
        if (otc_neat_step(p, task, &o, &solved) != OTC_OK) fail("step");
        double t1 = thread_cpu(), step = t1 - t0 - n_costs * oh, evals = 0;
        for (int i = 0; i < n_costs; i++) evals += costs[i].cpu;
        double tail = t1 - mark; /* reproduction (and speciation) after the last evaluation */
        total += step;
        span += step - evals - tail + overlapped2(repro, costs, n_costs);
        plain += step - evals + makespan2(costs, n_costs);
        double longest = 0;
        for (int i = 0; i < n_costs; i++)
            if (costs[i].cpu > longest) longest = costs[i].cpu;
        double half = (repro + evals) / 2, most = longest > repro ? longest : repro;
        span_bound += step - evals - tail + (most > half ? most : half);
        serial += step - evals;
        repro_total += tail;
        repro = tail;
        if (solved || otc_neat_extinct(p)) {
            span += repro; /* a stopped run reproduces nothing: its tail overlaps nothing */
            span_bound += repro;
            repro = 0;
            otc_neat_population_free(p);
            if (otc_neat_population_new(&c, ++seed * 7919, &p) != OTC_OK) fail("population");
        }
    }
    span += repro; /* the last reproduction: no evaluation measured after it */
    span_bound += repro;
    otc_neat_population_free(p);
    otc_neat_task_free(task);
    return (schedule){total / span, total / span_bound, total / plain, serial / total,
                      repro_total / total};
}

/* Median over REPEATS runs of `gens` generations from fixed seeds; a run that solves or dies
 * out is replaced by a fresh population (another seed) so the work stays comparable. */
static measurement measure(const char *ini, const char *task_name, int gens, int threads) {
    otc_neat_config c;
    otc_neat_task *task = NULL;
    if (otc_neat_config_load(ini, &c) != OTC_OK) fail(ini);
    if (otc_neat_task_create(task_name, &c, &task) != OTC_OK) fail(task_name);
    measurement m[REPEATS];
    double cpu[REPEATS];
    for (int rep = 0; rep < REPEATS; rep++) {
        long evals = 0, steady_evals = 0, allocs = 0;
        uint64_t seed = 100 + (uint64_t)rep;
        otc_neat_population *p = NULL;
        if (otc_neat_population_new(&c, seed, &p) != OTC_OK) fail("population");
        otc_neat_step_options o = {.threads = threads};
        double t0 = now(), c0 = thread_cpu();
        for (int g = 0; g < gens; g++) {
            bool solved = false;
            long before = otc_neat_evaluations(p);
            long a0 = atomic_load(&allocations);
            if (otc_neat_step(p, task, &o, &solved) != OTC_OK) fail("step");
            long done = otc_neat_evaluations(p) - before;
            evals += done;
            if (g > 0) {
                allocs += atomic_load(&allocations) - a0;
                steady_evals += done;
            }
            if (solved || otc_neat_extinct(p)) {
                otc_neat_population_free(p);
                if (otc_neat_population_new(&c, ++seed * 7919, &p) != OTC_OK) fail("population");
            }
        }
        double secs = now() - t0;
        cpu[rep] = evals / (thread_cpu() - c0);
        m[rep] = (measurement){evals / secs, 0, gens > 1 ? (double)allocs / (gens - 1) : 0,
                               steady_evals ? (double)allocs / (double)steady_evals : 0};
        otc_neat_population_free(p);
    }
    for (int i = 1; i < REPEATS; i++)
        for (int j = i; j > 0 && m[j - 1].rate > m[j].rate; j--) {
            measurement t = m[j];
            m[j] = m[j - 1];
            m[j - 1] = t;
        }
    for (int i = 1; i < REPEATS; i++)
        for (int j = i; j > 0 && cpu[j - 1] > cpu[j]; j--) {
            double t = cpu[j];
            cpu[j] = cpu[j - 1];
            cpu[j - 1] = t;
        }
    otc_neat_task_free(task);
    m[REPEATS / 2].cpu_rate = cpu[REPEATS / 2]; /* meaningful on 1 thread only */
    return m[REPEATS / 2];
}

int main(int argc, char **argv) {
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    const char *only = argc > 2 ? argv[2] : NULL;
    if (!(scale > 0)) scale = 1.0;
    const struct {
        const char *name, *task, *ini;
        int gens;
    } tasks[] = {
        {"xor", "xor", OTC_SOURCE_DIR "/examples/neat/xor.ini", 300},
        {"pole1", "pole1", OTC_SOURCE_DIR "/examples/neat/pole1.ini", 20},
        {"dpv", "dpv", OTC_SOURCE_DIR "/examples/neat/dpv.ini", 20},
        {"dpnv", "dpnv", OTC_SOURCE_DIR "/examples/neat/dpnv.ini", 4},
        {"csv", "csv:" OTC_SOURCE_DIR "/examples/data/circle.csv",
         OTC_SOURCE_DIR "/examples/neat/circle.ini", 10},
        {"csv-hybrid", "csv:" OTC_SOURCE_DIR "/examples/data/circle.csv",
         OTC_SOURCE_DIR "/examples/neat/circle_hybrid.ini", 2},
    };
    printf(
        "NEAT whole-loop evaluations per second (median of %d runs, fixed seeds, "
        "interpreter);\nallocations: heap allocations per generation after the first, "
        "1 thread;\nschedule: from per-genome CPU times, the 2-thread speedup of the "
        "schedule / the best any\nschedule of whole genomes allows (evaluation overlapping "
        "reproduction),\nthe schedule's speedup without the overlap, the share of a step outside "
        "evaluation (serial)\nand in reproduction (repro);\ncpu: 1-thread evaluations per CPU "
        "second of the thread (what a busy machine blurs least); 1/2 threads: per wall second\n\n",
        REPEATS);
    printf("%-11s %5s %10s %10s %10s %8s %10s %9s %14s %10s %7s %6s\n", "task", "gens", "cpu",
           "1 thread", "2 threads", "speedup", "allocs/gen", "allocs/ev", "schedule/bound",
           "no overlap", "serial", "repro");
    for (size_t t = 0; t < sizeof tasks / sizeof *tasks; t++) {
        if (only && strcmp(only, tasks[t].name) != 0) continue;
        int gens = (int)(tasks[t].gens * scale + 0.5);
        if (gens < 2) gens = 2;
        measurement m1 = measure(tasks[t].ini, tasks[t].task, gens, 1);
        measurement m2 = measure(tasks[t].ini, tasks[t].task, gens, 2);
        schedule sc = schedule_of(tasks[t].ini, tasks[t].task, gens);
        printf("%-11s %5d %10.0f %10.0f %10.0f %7.2fx %10.0f %9.2f %7.2fx/%.2fx %9.2fx %6.1f%% "
               "%5.1f%%\n",
               tasks[t].name, gens, m1.cpu_rate, m1.rate, m2.rate, m2.rate / m1.rate,
               m1.allocs_per_gen, m1.allocs_per_eval, sc.sched, sc.bound, sc.plain, 100 * sc.serial,
               100 * sc.repro);
        fflush(stdout);
    }
    return 0;
}
