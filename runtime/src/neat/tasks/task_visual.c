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

/* Nodes per cell side of s, when its input and output grids are the 11 x 11 field's (else 0,
 * and the error set). */
static int field_scale(otc_substrate *s) {
    int last = otc_substrate_layers(s) - 1, n = otc_substrate_size(s, 0);
    int k = (int)lround(sqrt((double)n)) / FIELD;
    if (k < 1 || n != FIELD * k * FIELD * k || otc_substrate_size(s, last) != n) {
        otc_fail(OTC_ERR_CONFIG,
                 "task visual: [Substrate] input_grid and output_grid must be 11x11 (the "
                 "substrate has %d inputs and %d outputs)",
                 n, otc_substrate_size(s, last));
        return 0;
    }
    return k;
}

/* The 75 trials' fields at k x k nodes per cell, [trial, node] (NULL: out of memory). */
static float *trial_fields(int k) {
    size_t n = (size_t)FIELD * k * FIELD * k;
    float *x = calloc((size_t)OTC_VISUAL_TRIALS * n, sizeof(float));
    for (int t = 0; x && t < OTC_VISUAL_TRIALS; t++) {
        int sx, sy, lx, ly;
        trial_boxes(t, &sx, &sy, &lx, &ly);
        float *px = x + (size_t)t * n;
        light(px, k, sx, sx, sy, sy);
        light(px, k, lx - 1, lx + 1, ly - 1, ly + 1);
    }
    return x;
}

/* otc_visual_score with the trials' fields x (trial_fields at s's scale). */
static otc_status score(otc_substrate *s, const float *x, double *fitness, int *hits,
                        double *mean_d) {
    int last = otc_substrate_layers(s) - 1, n = otc_substrate_size(s, 0);
    const float *y;
    otc_status st = otc_substrate_run(s, x, OTC_VISUAL_TRIALS, &y);
    if (st != OTC_OK) return st;
    double sum = 0, sum_d = 0;
    int hit = 0;
    for (int t = 0; t < OTC_VISUAL_TRIALS; t++) {
        int sx, sy, lx, ly;
        trial_boxes(t, &sx, &sy, &lx, &ly);
        const float *yt = y + (size_t)t * (size_t)n;
        int best = 0; /* the first of equals; NaN never wins */
        for (int j = 1; j < n; j++)
            if (yt[j] > yt[best] || (isnan(yt[best]) && !isnan(yt[j]))) best = j;
        float bx, by;
        otc_substrate_coord(s, last, best, &bx, &by);
        /* In cells: a cell is 2 / FIELD wide; its centre is ((2 c + 1) / FIELD - 1). */
        double ex = (bx + 1.0) * FIELD / 2 - (lx + 0.5), ey = (by + 1.0) * FIELD / 2 - (ly + 0.5);
        double d2 = ex * ex + ey * ey;
        sum += d2 < CREDIT ? CREDIT - d2 : 0.0;
        bool on = d2 < 1e-6; /* float coordinates: a hit is d = 0 */
        sum_d += on ? 0.0 : sqrt(d2);
        hit += on;
    }
    *fitness = sum / OTC_VISUAL_TRIALS;
    *hits = hit;
    if (mean_d) *mean_d = sum_d / OTC_VISUAL_TRIALS;
    return OTC_OK;
}

otc_status otc_visual_score(otc_substrate *s, double *fitness, int *hits, double *mean_d) {
    if (!s || !fitness || !hits) return otc_fail(OTC_ERR_ARG, "otc_visual_score: NULL argument");
    int k = field_scale(s);
    if (!k) return OTC_ERR_CONFIG;
    float *x = trial_fields(k);
    if (!x) return otc_fail(OTC_ERR_NOMEM, "out of memory for the visual task's trials");
    otc_status st = score(s, x, fitness, hits, mean_d);
    free(x);
    return st;
}

/* The trials' targets for training at k x k nodes per cell, [trial, node] (NULL: out of
 * memory): 1 at the node at (or, k even, just right of and below) the large box's centre, 0
 * elsewhere. */
static float *trial_targets(int k) {
    size_t side = (size_t)FIELD * k, n = side * side;
    float *t = calloc((size_t)OTC_VISUAL_TRIALS * n, sizeof(float));
    for (int i = 0; t && i < OTC_VISUAL_TRIALS; i++) {
        int sx, sy, lx, ly;
        trial_boxes(i, &sx, &sy, &lx, &ly);
        t[(size_t)i * n + (size_t)(ly * k + k / 2) * side + (size_t)(lx * k + k / 2)] = 1.0f;
    }
    return t;
}

/* The task's context: its scale, the trials' fields at that scale (the same for every
 * evaluation), with [Hybrid] train_steps their targets and the training's options, and the
 * substrates its evaluations paint. */
typedef struct {
    int scale;
    float *fields, *targets;
    otc_substrate_lessons lessons; /* fields and targets, with [Hybrid]'s options */
    otc_substrate_pool *pool;
} visual_ctx;

static otc_status visual_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                  otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    (void)seed;
    const visual_ctx *v = task->ctx;
    otc_substrate *s = NULL;
    otc_status st = otc_substrate_pool_paint(v->pool, g, c, v->scale, otc_neat_eval_scratch(), &s);
    double fitness = 0, mean_d = 0;
    int hits = 0;
    if (st == OTC_OK && !field_scale(s)) st = OTC_ERR_CONFIG;
    if (st == OTC_OK) st = otc_substrate_learn(s, &v->lessons);
    if (st == OTC_OK) st = score(s, v->fields, &fitness, &hits, &mean_d);
    otc_substrate_pool_give(v->pool, c, v->scale, s);
    if (st != OTC_OK) return st;
    out->fitness = fitness;
    out->measure = mean_d;
    out->solved = hits == OTC_VISUAL_TRIALS;
    return OTC_OK;
}

static otc_status visual_substrate(const otc_neat_task *task, const otc_neat_config *c,
                                   const otc_neat_genome *g, otc_substrate **out) {
    const visual_ctx *v = task->ctx;
    return otc_substrate_from_genome_trained(g, c, v->scale, &v->lessons, out);
}

static void visual_ctx_free(visual_ctx *v) {
    if (v) {
        otc_substrate_pool_free(v->pool);
        free(v->fields);
        free(v->targets);
    }
    free(v);
}

static void visual_destroy(otc_neat_task *t) {
    visual_ctx_free(t->ctx);
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
    visual_ctx *v = calloc(1, sizeof *v);
    if (v) {
        int k = side / FIELD;
        *v = (visual_ctx){.scale = k,
                          .fields = trial_fields(k),
                          .targets = c->train_steps > 0 ? trial_targets(k) : NULL,
                          .pool = otc_substrate_pool_new()};
        v->lessons = (otc_substrate_lessons){v->fields, v->targets, OTC_VISUAL_TRIALS,
                                             otc_substrate_train_options_of(c)};
    }
    otc_neat_task *t = v && v->fields && v->pool && (v->targets || c->train_steps <= 0)
                           ? calloc(1, sizeof *t)
                           : NULL;
    if (!t) {
        visual_ctx_free(v);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a task");
    }
    t->ctx = v;
    snprintf(t->name, sizeof t->name, "%s", spec);
    t->evaluate = visual_evaluate;
    t->destroy = visual_destroy;
    t->substrate = visual_substrate;
    t->measure_name = "mean distance d (cells)";
    t->needs_feed_forward = true;
    t->n_inputs = c->num_inputs;
    t->n_outputs = c->num_outputs;
    *out = t;
    return OTC_OK;
}
