/* A NEAT task written by the user through the public API: the fitness is this file's own
 * function (here, telling whether two numbers are far apart, which no single neuron can),
 * evolved without changing otc. The config is neat-python's format (argv[1], default the
 * shipped examples/neat/xor.ini); the task is a struct with an evaluate function. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "otc/neat.h"
#include "otc/otc.h"

/* The 4 x 4 grid of [0,1]^2; the answer is 1 when |x0 - x1| > 0.5. */
enum { N_POINTS = 16 };
static float points[N_POINTS][2], answers[N_POINTS];

static void make_points(void) {
    for (int i = 0; i < N_POINTS; i++) {
        float a = (float)(i % 4) / 3.0f, b = (float)(i / 4) / 3.0f;
        points[i][0] = a;
        points[i][1] = b;
        answers[i] = fabsf(a - b) > 0.5f ? 1.0f : 0.0f;
    }
}

/* The user's fitness: N_POINTS - sum of squared errors, solved when every point is on the
 * right side of 0.5. Called from several threads at once: it only reads shared data. */
static otc_status evaluate(const otc_neat_task *task, const otc_neat_config *c, otc_neat_genome *g,
                           uint64_t seed, otc_neat_eval *out) {
    (void)task;
    (void)seed; /* a deterministic task needs no randomness */
    otc_neat_phenotype *ph = NULL;
    otc_status s = otc_neat_phenotype_build(g, c, &ph);
    if (s != OTC_OK) return s;
    otc_executor *ex = otc_interpreter_new(ph->graph, &(otc_exec_options){.inference = true});
    const float *y = NULL;
    if (!ex) s = OTC_ERR_STATE;
    if (s == OTC_OK) s = otc_exec_set_input(ex, ph->input, &points[0][0], N_POINTS);
    if (s == OTC_OK) s = otc_exec_forward(ex);
    if (s == OTC_OK) s = otc_exec_value(ex, otc_graph_output(ph->graph, 0), &y, NULL);
    if (s == OTC_OK) {
        double err = 0;
        bool right = true;
        for (int i = 0; i < N_POINTS; i++) {
            double yi = isfinite(y[i]) ? y[i] : 0.5;
            err += (yi - answers[i]) * (yi - answers[i]);
            right &= (yi > 0.5) == (answers[i] > 0.5f);
        }
        out->fitness = N_POINTS - err;
        out->solved = right;
    }
    otc_exec_free(ex);
    otc_neat_phenotype_free(ph);
    return s;
}

/* Any NEAT config with 2 inputs and 1 output: the shipped XOR one by default. */
#ifndef NEAT_CONFIG
#define NEAT_CONFIG "examples/neat/xor.ini"
#endif

int main(int argc, char **argv) {
    make_points();
    otc_neat_config c;
    if (otc_neat_config_load(argc > 1 ? argv[1] : NEAT_CONFIG, &c) != OTC_OK) {
        fprintf(stderr, "neat_custom: %s\n", otc_last_error());
        return 2;
    }
    otc_neat_task task = {.name = "larger", .n_inputs = 2, .n_outputs = 1, .evaluate = evaluate};
    otc_neat_population *pop = NULL;
    if (otc_neat_population_new(&c, 1, &pop) != OTC_OK) {
        fprintf(stderr, "neat_custom: %s\n", otc_last_error());
        return 2;
    }
    otc_neat_run_options o = {.generations = 1000, .threads = 2};
    bool solved = false;
    otc_status s = otc_neat_run(pop, &task, &o, &solved);
    if (s != OTC_OK) {
        fprintf(stderr, "neat_custom: %s\n", otc_last_error());
        otc_neat_population_free(pop);
        return 2;
    }
    const otc_neat_genome *best = otc_neat_champion(pop);
    printf("neat_custom: %s after %d generation(s), champion fitness %.4f\n",
           solved ? "solved" : "not solved", otc_neat_generation(pop), best->fitness);
    otc_neat_population_free(pop);
    return solved ? 0 : 1;
}
