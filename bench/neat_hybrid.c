/* Hybrid evolve <-> train against pure NEAT on the circle classification CSV (generations,
 * evaluations and wall time to 95% validation accuracy) and on the delayed-XOR sequences
 * (recurrent genomes, training through time; 98% per step), over seeded runs.
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

/* train_steps >= 0 overrides the config's. */
static void bench(const char *label, const char *ini, const char *data, int train_steps,
                  int generations, int runs, int threads) {
    otc_neat_config c;
    otc_neat_task *task = NULL;
    otc_status s = otc_neat_config_load(ini, &c);
    if (s == OTC_OK && train_steps >= 0) c.train_steps = train_steps;
    if (s != OTC_OK || otc_neat_task_create(data, &c, &task) != OTC_OK) {
        fprintf(stderr, "neat_hybrid: %s\n", otc_last_error());
        exit(2);
    }
    int solved_runs = 0;
    double gens = 0, evals = 0, secs = 0, hidden = 0;
    for (int r = 0; r < runs; r++) {
        otc_neat_population *p = NULL;
        bool solved = false;
        otc_neat_run_options o = {.generations = generations, .threads = threads};
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
    const char *circle = "csv:" OTC_SOURCE_DIR "/examples/data/circle.csv";
    bench("pure NEAT", OTC_SOURCE_DIR "/examples/neat/circle.ini", circle, -1, 150, runs, threads);
    bench("hybrid (100 Adam steps)", OTC_SOURCE_DIR "/examples/neat/circle_hybrid.ini", circle, -1,
          150, runs, threads);
    const char *dx_ini = OTC_SOURCE_DIR "/examples/neat/delayed_xor_hybrid.ini";
    const char *dx = "csv:" OTC_SOURCE_DIR "/examples/data/delayed_xor.csv";
    printf("\ndelayed_xor.csv (80 sequences of 6-10 steps, target x[t-1] xor x[t-2]), recurrent "
           "genomes, target: validation accuracy per step >= 0.98, at most 300 generations of "
           "100\n\n");
    bench("pure NEAT", dx_ini, dx, 0, 300, runs, threads);
    bench("hybrid (20 BPTT Adam steps)", dx_ini, dx, -1, 300, runs, threads);
    return 0;
}
