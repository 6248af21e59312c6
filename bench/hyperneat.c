/* HyperNEAT substrate throughput: painting an 11x11 -> 11x11 (14,641 connections) and a
 * 33x33 -> 33x33 (1,185,921) substrate from a CPPN's flat program, then running it (rows per
 * second at batch 1 and at the visual task's 75 trials), and a whole visual-task evaluation.
 * bench/hyperneat_numpy.py times the same dense layer in numpy. Usage: hyperneat [SECONDS] */
#include <stdio.h>
#include <stdlib.h>

#include "bench_timing.h"
#include "otc/hyperneat.h"
#include "otc/neat.h"

typedef struct {
    otc_substrate *s;
    otc_neat_flat *f;
    float *x, *y;
    int batch;
} job;

static int paint(void *arg) {
    job *j = arg;
    return otc_substrate_paint(j->s, j->f) != OTC_OK;
}

static int forward(void *arg) {
    job *j = arg;
    return otc_substrate_forward(j->s, j->x, j->batch, j->y) != OTC_OK;
}

static int visual(void *arg) {
    job *j = arg;
    double fitness;
    int hits;
    return otc_substrate_paint(j->s, j->f) != OTC_OK ||
           otc_visual_score(j->s, &fitness, &hits, NULL);
}

/* A CPPN with two Gaussian hidden nodes, of x1 - x2 and y1 - y2 (inputs 0-3, bias 4, output 5,
 * hidden 6 and 7): the kind of local receptive field evolution finds for the boxes. */
static otc_neat_genome *cppn(void) {
    otc_neat_genome *g = otc_neat_genome_new();
    const otc_neat_node nodes[8] = {{0, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                                    {1, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                                    {2, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                                    {3, OTC_NEAT_INPUT, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                                    {4, OTC_NEAT_BIAS, OTC_ACT_IDENTITY, 0, 1, 0, 1},
                                    {5, OTC_NEAT_OUTPUT, OTC_ACT_TANH, -0.5f, 1, 0, 1},
                                    {6, OTC_NEAT_HIDDEN, OTC_ACT_GAUSSIAN, 0, 1, 0, 1},
                                    {7, OTC_NEAT_HIDDEN, OTC_ACT_GAUSSIAN, 0, 1, 0, 1}};
    const otc_neat_conn conns[6] = {{0, 0, 6, 4.0f, true}, {1, 2, 6, -4.0f, true},
                                    {2, 1, 7, 4.0f, true}, {3, 3, 7, -4.0f, true},
                                    {4, 6, 5, 1.0f, true}, {5, 7, 5, 1.0f, true}};
    for (int i = 0; i < 8; i++) otc_neat_genome_add_node(g, &nodes[i]);
    for (int i = 0; i < 6; i++) otc_neat_genome_add_conn(g, &conns[i]);
    return g;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    otc_neat_config c;
    if (otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/visual.ini", &c) != OTC_OK) {
        fprintf(stderr, "%s\n", otc_last_error());
        return 1;
    }
    otc_neat_genome *g = cppn();
    otc_neat_flat *f = otc_neat_flat_new();
    if (!f || otc_neat_flat_build(f, g, &c) != OTC_OK) {
        fprintf(stderr, "%s\n", otc_last_error());
        return 1;
    }
    printf("%-8s %12s %10s %14s %14s %12s %10s\n", "field", "connections", "paint ms",
           "rows/s (b=1)", "rows/s (b=75)", "visual ev/s", "fitness");
    for (int scale = 1; scale <= 3; scale += 2) {
        job j = {.f = f};
        if (otc_substrate_new(&c, scale, &j.s) != OTC_OK) return 1;
        int n = otc_substrate_size(j.s, 0);
        j.x = calloc((size_t)75 * n, sizeof(float));
        j.y = calloc((size_t)75 * n, sizeof(float));
        if (!j.x || !j.y) return 1;
        for (size_t i = 0; i < (size_t)75 * n; i++) j.x[i] = (float)((i * 7919) % 5 == 0);
        double tp = bench_median_time(paint, &j, seconds);
        j.batch = 1;
        double t1 = bench_median_time(forward, &j, seconds);
        j.batch = 75;
        double t75 = bench_median_time(forward, &j, seconds);
        double tv = bench_median_time(visual, &j, seconds);
        double fitness = 0;
        int hits = 0;
        otc_substrate_paint(j.s, f);
        otc_visual_score(j.s, &fitness, &hits, NULL);
        printf("%2dx%-5d %12lld %10.3f %14.0f %14.0f %12.1f %10.3f\n", 11 * scale, 11 * scale,
               (long long)n * n, tp * 1e3, 1 / t1, 75 / t75, 1 / tv, fitness);
        free(j.x);
        free(j.y);
        otc_substrate_free(j.s);
    }
    otc_neat_flat_free(f);
    otc_neat_genome_free(g);
    return 0;
}
