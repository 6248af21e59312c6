/* HyperNEAT's visual discrimination task (Stanley, D'Ambrosio and Gauci 2009): find the
 * centre of the larger of two boxes on an 11 x 11 field, painted by the genome (a CPPN). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"
#include "otc/hyperneat.h"

#define FIELD 11 /* cells per side; a substrate at scale k has k x k nodes per cell */
/* A trial's score is max(0, CREDIT - d^2): the authors' code (Gauci's HyperNEAT, its
 * FindCluster experiment) scores each trial so, which rewards answers near the large box and
 * gives no gradient, nor any penalty, beyond d = sqrt(CREDIT) (5.5 cells). */
#define CREDIT 30.0

/* Trial t's boxes in cells: the small box at one of 25 positions (a 5 x 5 lattice, every
 * other cell from 1), the large box's centre 5 cells right, down or both, wrapped around the
 * field and then moved the least distance that brings all of it into view. */
static void trial_boxes(int t, int *sx, int *sy, int *lx, int *ly) {
    static const int dx[3] = {5, 0, 5}, dy[3] = {0, 5, 5};
    int pos = t / 3, off = t % 3;
    *sx = 1 + 2 * (pos % 5);
    *sy = 1 + 2 * (pos / 5);
    int x = (*sx + dx[off]) % FIELD, y = (*sy + dy[off]) % FIELD;
    *lx = x < 1 ? 1 : x > FIELD - 2 ? FIELD - 2 : x;
    *ly = y < 1 ? 1 : y > FIELD - 2 ? FIELD - 2 : y;
}

/* Cells [cx0, cx1] x [cy0, cy1] lit on a field of k x k nodes per cell. */
static void light(float *px, int k, int cx0, int cx1, int cy0, int cy1) {
    int side = FIELD * k;
    for (int y = cy0 * k; y < (cy1 + 1) * k; y++)
        for (int x = cx0 * k; x < (cx1 + 1) * k; x++) px[y * side + x] = 1.0f;
}

otc_status otc_visual_score(otc_substrate *s, double *fitness, int *hits, double *mean_d) {
    if (!s || !fitness || !hits) return otc_fail(OTC_ERR_ARG, "otc_visual_score: NULL argument");
    int last = otc_substrate_layers(s) - 1, n = otc_substrate_size(s, 0);
    int k = (int)lround(sqrt((double)n)) / FIELD;
    if (k < 1 || n != FIELD * k * FIELD * k || otc_substrate_size(s, last) != n)
        return otc_fail(OTC_ERR_CONFIG,
                        "task visual: [Substrate] input_grid and output_grid must be 11x11 (the "
                        "substrate has %d inputs and %d outputs)",
                        n, otc_substrate_size(s, last));
    float *x = calloc((size_t)OTC_VISUAL_TRIALS * (size_t)n, sizeof(float));
    float *y = malloc(sizeof(float) * (size_t)OTC_VISUAL_TRIALS * (size_t)n);
    if (!x || !y) {
        free(x);
        free(y);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for the visual task's trials");
    }
    int lx[OTC_VISUAL_TRIALS], ly[OTC_VISUAL_TRIALS];
    for (int t = 0; t < OTC_VISUAL_TRIALS; t++) {
        int sx, sy;
        trial_boxes(t, &sx, &sy, &lx[t], &ly[t]);
        float *px = x + (size_t)t * (size_t)n;
        light(px, k, sx, sx, sy, sy);
        light(px, k, lx[t] - 1, lx[t] + 1, ly[t] - 1, ly[t] + 1);
    }
    otc_status st = otc_substrate_forward(s, x, OTC_VISUAL_TRIALS, y);
    double sum = 0, sum_d = 0;
    int hit = 0;
    for (int t = 0; t < OTC_VISUAL_TRIALS && st == OTC_OK; t++) {
        const float *yt = y + (size_t)t * (size_t)n;
        int best = 0; /* the first of equals; NaN never wins */
        for (int j = 1; j < n; j++)
            if (yt[j] > yt[best] || (isnan(yt[best]) && !isnan(yt[j]))) best = j;
        float bx, by;
        otc_substrate_coord(s, last, best, &bx, &by);
        /* In cells: a cell is 2 / FIELD wide; its centre is ((2 c + 1) / FIELD - 1). */
        double ex = (bx + 1.0) * FIELD / 2 - (lx[t] + 0.5),
               ey = (by + 1.0) * FIELD / 2 - (ly[t] + 0.5);
        double d2 = ex * ex + ey * ey;
        sum += d2 < CREDIT ? CREDIT - d2 : 0.0;
        bool on = d2 < 1e-6; /* float coordinates: a hit is d = 0 */
        sum_d += on ? 0.0 : sqrt(d2);
        hit += on;
    }
    free(x);
    free(y);
    if (st != OTC_OK) return st;
    *fitness = sum / OTC_VISUAL_TRIALS;
    *hits = hit;
    if (mean_d) *mean_d = sum_d / OTC_VISUAL_TRIALS;
    return OTC_OK;
}

static otc_status visual_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                  otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    (void)seed;
    int scale = (int)(intptr_t)task->ctx;
    otc_substrate *s = NULL;
    otc_status st = otc_substrate_from_genome(g, c, scale, otc_neat_eval_scratch(), &s);
    double fitness = 0, mean_d = 0;
    int hits = 0;
    if (st == OTC_OK) st = otc_visual_score(s, &fitness, &hits, &mean_d);
    otc_substrate_free(s);
    if (st != OTC_OK) return st;
    out->fitness = fitness;
    out->measure = mean_d;
    out->solved = hits == OTC_VISUAL_TRIALS;
    return OTC_OK;
}

otc_status otc_neat_visual_task_create(const char *spec, const otc_neat_config *c,
                                       otc_neat_task **out) {
    int side = FIELD;
    if (spec[6] == ':') {
        char *end;
        long v = strtol(spec + 7, &end, 10);
        if (*end || end == spec + 7 || v < FIELD || v > 5 * FIELD || v % FIELD)
            return otc_fail(OTC_ERR_ARG,
                            "task %s: the field's side must be 11, 22, 33, 44 or 55 (the 11 x 11 "
                            "field at a finer resolution)",
                            spec);
        side = (int)v;
    }
    const otc_neat_substrate *sub = &c->substrate;
    if (!sub->enabled)
        return otc_fail(OTC_ERR_CONFIG,
                        "task %s: the config has no [Substrate] section (the genome is a CPPN "
                        "painting an 11x11 -> 11x11 substrate)",
                        spec);
    const char *bad = sub->input.nx != FIELD || sub->input.ny != FIELD     ? "input_grid"
                      : sub->output.nx != FIELD || sub->output.ny != FIELD ? "output_grid"
                                                                           : NULL;
    if (bad) return otc_fail(OTC_ERR_CONFIG, "[Substrate] %s: task %s needs 11x11", bad, spec);
    otc_neat_task *t = calloc(1, sizeof *t);
    if (!t) return otc_fail(OTC_ERR_NOMEM, "out of memory for a task");
    snprintf(t->name, sizeof t->name, "%s", spec);
    t->evaluate = visual_evaluate;
    t->measure_name = "mean distance d (cells)";
    t->needs_feed_forward = true;
    t->ctx = (void *)(intptr_t)(side / FIELD);
    t->n_inputs = c->num_inputs;
    t->n_outputs = c->num_outputs;
    *out = t;
    return OTC_OK;
}
