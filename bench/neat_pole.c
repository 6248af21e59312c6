/* Double pole balancing as in the NEAT paper: DPV (population 150) and DPNV (population
 * 1,000) over seeded runs within a time budget; evaluations to solution, failures and the
 * champions' generalisation scores (of 625 starts), beside the paper's figures.
 * Usage: neat_pole [SECONDS_PER_TASK [THREADS [TASK [CONFIG [FIRST_SEED]]]]] where TASK is dpv,
 * dpnv or both (default) and CONFIG replaces the shipped config of a single TASK. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "otc/executor.h"
#include "otc/neat.h"
#include "otc/pole.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    otc_executor *ex;
    otc_id input;
    otc_id output;
} agent_ctx;

static void policy(void *ctx, const double *obs, int n_obs, double *out, int n_out) {
    agent_ctx *a = ctx;
    float x[8];
    for (int i = 0; i < n_obs && i < 8; i++) x[i] = (float)obs[i];
    const float *y = NULL;
    otc_exec_set_input(a->ex, a->input, x, 1);
    otc_exec_forward(a->ex);
    otc_exec_value(a->ex, a->output, &y, NULL);
    for (int k = 0; k < n_out; k++) out[k] = y ? y[0] : 0.5;
}

static void reset(void *ctx) {
    otc_exec_reset_state(((agent_ctx *)ctx)->ex);
}

/* Generalisation of a champion: balanced starts out of 625 (1,000 steps each). */
static int generalisation(const otc_neat_genome *g, const otc_neat_config *c, int velocities) {
    otc_neat_phenotype *ph = NULL;
    if (otc_neat_phenotype_build(g, c, &ph) != OTC_OK) return -1;
    agent_ctx a = {otc_interpreter_new(ph->graph, &(otc_exec_options){.inference = true}),
                   ph->input, otc_graph_output(ph->graph, 0)};
    otc_pole_agent agent = {policy, reset, &a};
    int count = -1;
    if (a.ex) otc_dpole_generalisation(velocities, &agent, &count);
    otc_exec_free(a.ex);
    otc_neat_phenotype_free(ph);
    return count;
}

static void bench(const char *name, const char *ini, double budget, int threads, const char *paper,
                  int first_seed) {
    otc_neat_config c;
    otc_neat_task *task = NULL;
    if (otc_neat_config_load(ini, &c) != OTC_OK ||
        otc_neat_task_create(name, &c, &task) != OTC_OK) {
        fprintf(stderr, "neat_pole: %s\n", otc_last_error());
        exit(2);
    }
    int runs = 0, failures = 0, solved_runs = 0;
    double evals = 0, gen_sum = 0, t0 = now();
    long worst = 0;
    while (runs < 100 && (runs == 0 || now() - t0 < budget)) {
        otc_neat_population *p = NULL;
        bool solved = false;
        otc_neat_run_options o = {.generations = 200, .threads = threads};
        if (otc_neat_population_new(&c, (uint64_t)(runs + first_seed), &p) != OTC_OK ||
            otc_neat_run(p, task, &o, &solved) != OTC_OK) {
            fprintf(stderr, "neat_pole: %s\n", otc_last_error());
            exit(2);
        }
        runs++;
        if (solved) {
            solved_runs++;
            evals += (double)otc_neat_evaluations(p);
            if (otc_neat_evaluations(p) > worst) worst = otc_neat_evaluations(p);
            int gsc = generalisation(otc_neat_champion(p), &c, name[2] == 'v');
            gen_sum += gsc;
            printf("  %s seed %d: solved, %ld evaluations, generalisation %d/625\n", name,
                   runs - 1 + first_seed, otc_neat_evaluations(p), gsc);
        } else {
            failures++;
            printf("  %s seed %d: not solved in 200 generations\n", name, runs - 1 + first_seed);
        }
        otc_neat_population_free(p);
    }
    printf("%-5s pop %4d: %d runs, mean evaluations %.0f (paper %s), worst %ld, failures %d, "
           "mean generalisation %.1f/625, %.1f s\n\n",
           name, c.pop_size, runs, solved_runs ? evals / solved_runs : 0.0, paper, worst, failures,
           solved_runs ? gen_sum / solved_runs : 0.0, now() - t0);
    otc_neat_task_free(task);
}

int main(int argc, char **argv) {
    double budget = argc > 1 ? atof(argv[1]) : 60;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    const char *which = argc > 3 ? argv[3] : "both";
    const char *config = argc > 4 ? argv[4] : NULL;
    int first_seed = argc > 5 ? atoi(argv[5]) : 1;
    bool dpv = !strcmp(which, "dpv"), dpnv = !strcmp(which, "dpnv"), both = !strcmp(which, "both");
    if (!(dpv || dpnv || both) || (both && config) || first_seed < 1) {
        fprintf(stderr, "usage: neat_pole [SECONDS_PER_TASK [THREADS [dpv|dpnv|both [CONFIG "
                        "[FIRST_SEED]]]]]\n");
        return 2;
    }
    if (dpv || both)
        bench("dpv", config ? config : OTC_SOURCE_DIR "/examples/neat/dpv.ini", budget, threads,
              "3,600", first_seed);
    if (dpnv || both)
        bench("dpnv", config ? config : OTC_SOURCE_DIR "/examples/neat/dpnv.ini", budget, threads,
              "33,184", first_seed);
    return 0;
}
