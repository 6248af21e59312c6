/* Hybrid evolve <-> train against pure NEAT on the circle classification CSV: generations,
 * evaluations and wall time to 95% validation accuracy, over seeded runs.
 * Usage: neat_hybrid [RUNS [THREADS]] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "otc/neat.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench(const char *label, const char *ini, int runs, int threads) {
    const char *data = "csv:" OTC_SOURCE_DIR "/examples/data/circle.csv";
    otc_neat_config c;
    otc_neat_task *task = NULL;
    if (otc_neat_config_load(ini, &c) != OTC_OK ||
        otc_neat_task_create(data, &c, &task) != OTC_OK) {
        fprintf(stderr, "neat_hybrid: %s\n", otc_last_error());
        exit(2);
    }
    int solved_runs = 0;
    double gens = 0, evals = 0, secs = 0, hidden = 0;
    for (int r = 0; r < runs; r++) {
        otc_neat_population *p = NULL;
        bool solved = false;
        otc_neat_run_options o = {.generations = 150, .threads = threads};
        double t0 = now();
        if (otc_neat_population_new(&c, (uint64_t)r + 1, &p) != OTC_OK ||
            otc_neat_run(p, task, &o, &solved) != OTC_OK) {
            fprintf(stderr, "neat_hybrid: %s\n", otc_last_error());
            exit(2);
        }
        double dt = now() - t0;
        if (solved) {
            solved_runs++;
            gens += otc_neat_stats_count(p);
            evals += (double)otc_neat_evaluations(p);
            secs += dt;
            hidden += otc_neat_genome_hidden_count(otc_neat_champion(p));
        }
        otc_neat_population_free(p);
    }
    int n = solved_runs ? solved_runs : 1;
    printf("%-28s %6d/%-4d %10.1f %12.0f %12.0f %10.2f %8.2f\n", label, solved_runs, runs, gens / n,
           evals / n, evals / n * c.train_steps, secs / n, hidden / n);
    otc_neat_task_free(task);
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 10, threads = argc > 2 ? atoi(argv[2]) : 2;
    printf("circle.csv (400 points, 2 features), target: validation accuracy >= 0.95, at most 150 "
           "generations of 150\n\n");
    printf("%-28s %11s %10s %12s %12s %10s %8s\n", "", "solved", "gens", "evaluations",
           "Adam steps", "seconds", "hidden");
    bench("pure NEAT", OTC_SOURCE_DIR "/examples/neat/circle.ini", runs, threads);
    bench("hybrid (100 Adam steps)", OTC_SOURCE_DIR "/examples/neat/circle_hybrid.ini", runs,
          threads);
    return 0;
}
