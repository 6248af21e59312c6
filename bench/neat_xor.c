/* XOR with the NEAT paper's parameters, many seeded runs: evaluations to solution (mean,
 * median, worst), failures, and the solutions' hidden nodes and enabled connections, beside
 * the paper's figures. Usage: neat_xor [RUNS [THREADS [CONFIG]]] */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "otc/neat.h"

#define MAX_GENERATIONS 1000

typedef struct {
    long evals;
    int solved, hidden, conns, generations;
    double ms; /* wall time of the run (population creation to the end) */
} run_result;

typedef struct {
    const otc_neat_config *config;
    otc_neat_task *task;
    int runs;
    atomic_int next;
    run_result *results;
    atomic_int errors;
} job;

static void *worker(void *arg) {
    job *j = arg;
    for (;;) {
        int r = atomic_fetch_add(&j->next, 1);
        if (r >= j->runs) break;
        otc_neat_population *p = NULL;
        run_result *res = &j->results[r];
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        bool solved = false;
        otc_neat_run_options o = {.generations = MAX_GENERATIONS, .threads = 1};
        if (otc_neat_population_new(j->config, (uint64_t)r + 1, &p) != OTC_OK ||
            otc_neat_run(p, j->task, &o, &solved) != OTC_OK) {
            fprintf(stderr, "run %d: %s\n", r + 1, otc_last_error());
            atomic_fetch_add(&j->errors, 1);
        } else {
            const otc_neat_genome *c = otc_neat_champion(p);
            res->solved = solved;
            res->evals = otc_neat_evaluations(p);
            res->generations = otc_neat_stats_count(p);
            res->hidden = otc_neat_genome_hidden_count(c);
            res->conns = otc_neat_genome_enabled_count(c);
        }
        otc_neat_population_free(p);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        res->ms = 1e3 * (double)(t1.tv_sec - t0.tv_sec) + 1e-6 * (double)(t1.tv_nsec - t0.tv_nsec);
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 100, threads = argc > 2 ? atoi(argv[2]) : 2;
    const char *path = argc > 3 ? argv[3] : OTC_SOURCE_DIR "/examples/neat/xor.ini";
    if (runs < 1 || threads < 1) {
        fprintf(stderr, "usage: neat_xor [RUNS [THREADS [CONFIG]]]\n");
        return 2;
    }
    otc_neat_config config;
    otc_neat_task *task = NULL;
    if (otc_neat_config_load(path, &config) != OTC_OK ||
        otc_neat_task_create("xor", &config, &task) != OTC_OK) {
        fprintf(stderr, "neat_xor: %s\n", otc_last_error());
        return 2;
    }
    job j = {.config = &config, .task = task, .runs = runs};
    atomic_init(&j.next, 0);
    atomic_init(&j.errors, 0);
    j.results = calloc((size_t)runs, sizeof *j.results);
    pthread_t tid[64];
    if (threads > 64) threads = 64;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int t = 0; t < threads; t++) pthread_create(&tid[t], NULL, worker, &j);
    for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);

    long *evals = malloc(sizeof *evals * (size_t)runs);
    int n = 0, failures = 0;
    double sum = 0, hidden = 0, conns = 0;
    long total_evals = 0;
    for (int r = 0; r < runs; r++) {
        total_evals += j.results[r].evals;
        if (!j.results[r].solved) {
            failures++;
            continue;
        }
        evals[n++] = j.results[r].evals;
        sum += (double)j.results[r].evals;
        hidden += j.results[r].hidden;
        conns += j.results[r].conns;
    }
    qsort(evals, (size_t)n, sizeof *evals, cmp_long);
    double var = 0;
    for (int r = 0; r < n; r++) var += ((double)evals[r] - sum / n) * ((double)evals[r] - sum / n);
    printf("XOR, %d runs (seeds 1..%d), config %s, at most %d generations\n\n", runs, runs, path,
           MAX_GENERATIONS);
    printf("%-34s %12s %12s\n", "", "otc", "NEAT paper");
    printf("%-34s %12.0f %12s\n", "mean evaluations to solution", n ? sum / n : 0.0, "4,755");
    printf("%-34s %12.0f %12s\n", "standard deviation", n > 1 ? sqrt(var / (n - 1)) : 0.0, "2,553");
    printf("%-34s %12ld %12s\n", "median evaluations", n ? evals[n / 2] : 0L, "-");
    printf("%-34s %12ld %12s\n", "worst evaluations (solved runs)", n ? evals[n - 1] : 0L,
           "13,459");
    printf("%-34s %12d %12s\n", "failures", failures, "0");
    printf("%-34s %12.2f %12s\n", "mean hidden nodes of solutions", n ? hidden / n : 0.0, "2.35");
    printf("%-34s %12.2f %12s\n", "mean enabled connections", n ? conns / n : 0.0, "7.48");
    double *ms = malloc(sizeof *ms * (size_t)runs);
    for (int r = 0; r < runs; r++) ms[r] = j.results[r].ms;
    qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
    printf("\n%ld evaluations in %.2f s on %d thread(s): %.0f evaluations/s\n", total_evals, secs,
           threads, total_evals / secs);
    printf("run wall time (in-process, every run): median %.2f ms, fastest %.2f, slowest %.2f\n",
           ms[runs / 2], ms[0], ms[runs - 1]);
    free(ms);
    free(evals);
    free(j.results);
    otc_neat_task_free(task);
    return atomic_load(&j.errors) ? 1 : 0;
}
