/* The left-and-right retina problem (Kashtan and Alon 2005; Verbancsics and Stanley 2011's
 * HyperNEAT-LEO task): is there an object on the left AND on the right of an 8-pixel retina,
 * answered by the substrate a CPPN genome paints. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"
#include "otc/hyperneat.h"

/* Nibble bits: top-left 8, top-right 4, bottom-left 2, bottom-right 1. The left objects: the
 * empty block, each single pixel, the right column, and the two L shapes that hold the right
 * column; the right objects are their mirror images. */
#define LEFT_OBJECTS                                                                               \
    ((1u << 0) | (1u << 1) | (1u << 2) | (1u << 4) | (1u << 5) | (1u << 7) | (1u << 8) | (1u << 13))
#define RIGHT_OBJECTS                                                                              \
    ((1u << 0) | (1u << 1) | (1u << 2) | (1u << 4) | (1u << 8) | (1u << 10) | (1u << 11) |         \
     (1u << 14))
#define GRID_X 4
#define GRID_Y 2

bool otc_retina_left_object(int nibble) {
    return nibble >= 0 && nibble < 16 && (LEFT_OBJECTS >> nibble & 1u);
}

bool otc_retina_right_object(int nibble) {
    return nibble >= 0 && nibble < 16 && (RIGHT_OBJECTS >> nibble & 1u);
}

void otc_retina_pixels(int p, float *px) {
    for (int side = 0; side < 2; side++) {
        int nib = side ? p & 15 : p >> 4 & 15;
        for (int k = 0; k < 4; k++) /* k: top-left, top-right, bottom-left, bottom-right */
            px[(k / 2) * GRID_X + 2 * side + k % 2] = (float)(nib >> (3 - k) & 1);
    }
}

bool otc_retina_target(int p, bool any) {
    bool l = otc_retina_left_object(p >> 4 & 15), r = otc_retina_right_object(p & 15);
    return any ? l || r : l && r;
}

otc_status otc_retina_score(otc_substrate *s, otc_retina_goal goal, double *fitness, int *correct,
                            float *answers) {
    if (!s || !fitness || !correct) return otc_fail(OTC_ERR_ARG, "otc_retina_score: NULL");
    int last = otc_substrate_layers(s) - 1, n_out = goal == OTC_RETINA_SIDES ? 2 : 1;
    if (otc_substrate_size(s, 0) != GRID_X * GRID_Y || otc_substrate_size(s, last) != n_out)
        return otc_fail(OTC_ERR_CONFIG,
                        "task retina: the substrate needs 8 inputs and %d output(s) (it has %d "
                        "and %d)",
                        n_out, otc_substrate_size(s, 0), otc_substrate_size(s, last));
    float x[OTC_RETINA_PATTERNS * GRID_X * GRID_Y], y[OTC_RETINA_PATTERNS * 2];
    for (int p = 0; p < OTC_RETINA_PATTERNS; p++) otc_retina_pixels(p, x + p * GRID_X * GRID_Y);
    otc_status st = otc_substrate_forward(s, x, OTC_RETINA_PATTERNS, y);
    if (st != OTC_OK) return st;
    double e = 0;
    int ok = 0;
    for (int p = 0; p < OTC_RETINA_PATTERNS; p++) {
        bool t[2] = {otc_retina_target(p, goal == OTC_RETINA_OR), otc_retina_right_object(p & 15)};
        if (goal == OTC_RETINA_SIDES) t[0] = otc_retina_left_object(p >> 4 & 15);
        bool right = true;
        for (int o = 0; o < n_out; o++) {
            float v = y[p * n_out + o];
            /* A NaN output is as wrong as can be: a full error, on neither side. */
            e += isnan(v) ? 1.0 : fabs((double)v - t[o]);
            right &= t[o] ? v > 0.5f : v < 0.5f;
            if (answers) answers[p * n_out + o] = v > 0.5f; /* NaN: 0 */
        }
        ok += right;
    }
    *fitness = isfinite(e) ? 1000.0 / (1.0 + e * e) : 0.0;
    *correct = ok;
    return OTC_OK;
}

/* The task's context: the question asked, the substrates its evaluations paint, and with
 * [Hybrid] train_steps the 256 patterns and their targets the substrates train on. */
typedef struct {
    otc_retina_goal goal;
    otc_substrate_pool *pool;
    float x[OTC_RETINA_PATTERNS * GRID_X * GRID_Y], t[OTC_RETINA_PATTERNS * 2];
    otc_substrate_lessons lessons; /* x and t, with [Hybrid]'s options */
} retina_ctx;

static otc_status retina_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                  otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    (void)seed;
    const retina_ctx *x = task->ctx;
    otc_substrate *s = NULL;
    otc_status st = otc_substrate_pool_paint(x->pool, g, c, 1, otc_neat_eval_scratch(), &s);
    double fitness = 0;
    int correct = 0;
    if (st == OTC_OK) st = otc_substrate_learn(s, &x->lessons);
    /* The behaviour (the diversity objective, novelty search): the answer to each pattern, as
     * Huizinga, Mouret and Clune (2014) compare networks (the distance is then the share of
     * answers that differ). */
    if (st == OTC_OK) st = otc_retina_score(s, x->goal, &fitness, &correct, out->bc);
    otc_substrate_pool_give(x->pool, c, 1, s);
    if (st != OTC_OK) return st;
    out->n_bc = task->n_bc;
    out->fitness = fitness;
    out->solved = correct == OTC_RETINA_PATTERNS;
    out->measure = correct;
    return OTC_OK;
}

static otc_status retina_substrate(const otc_neat_task *task, const otc_neat_config *c,
                                   const otc_neat_genome *g, otc_substrate **out) {
    const retina_ctx *x = task->ctx;
    return otc_substrate_from_genome_trained(g, c, 1, &x->lessons, out);
}

static void retina_ctx_free(retina_ctx *x) {
    if (x) otc_substrate_pool_free(x->pool);
    free(x);
}

static void retina_destroy(otc_neat_task *t) {
    retina_ctx_free(t->ctx);
}

otc_status otc_neat_retina_task_create(const char *spec, const otc_neat_config *c,
                                       otc_neat_task **out) {
    otc_retina_goal goal = !strcmp(spec, "retina:or")      ? OTC_RETINA_OR
                           : !strcmp(spec, "retina:sides") ? OTC_RETINA_SIDES
                                                           : OTC_RETINA_AND;
    if (goal == OTC_RETINA_AND && strcmp(spec, "retina") && strcmp(spec, "retina:and"))
        return otc_fail(OTC_ERR_ARG, "task %s: retina, retina:and, retina:or or retina:sides",
                        spec);
    const otc_neat_substrate *sub = &c->substrate;
    int out_x = goal == OTC_RETINA_SIDES ? 2 : 1;
    if (!sub->enabled)
        return otc_fail(OTC_ERR_CONFIG,
                        "task %s: the config has no [Substrate] section (the genome is a CPPN "
                        "painting a substrate from a 4x2 input grid to a %dx1 output)",
                        spec, out_x);
    const char *bad = sub->input.nx != GRID_X || sub->input.ny != GRID_Y ? "input_grid"
                      : sub->output.nx != out_x || sub->output.ny != 1   ? "output_grid"
                                                                         : NULL;
    if (bad)
        return otc_fail(OTC_ERR_CONFIG, "[Substrate] %s: task %s needs %s", bad, spec,
                        *bad == 'i'  ? "4x2 (the two 2x2 halves of the retina)"
                        : out_x == 2 ? "2x1 (left object, right object)"
                                     : "1x1");
    retina_ctx *x = calloc(1, sizeof *x);
    if (x) {
        x->goal = goal;
        x->pool = otc_substrate_pool_new();
        x->lessons = (otc_substrate_lessons){x->x, x->t, OTC_RETINA_PATTERNS,
                                             otc_substrate_train_options_of(c)};
        for (int p = 0; p < OTC_RETINA_PATTERNS; p++) {
            otc_retina_pixels(p, x->x + p * GRID_X * GRID_Y);
            float *t = x->t + p * out_x;
            if (goal == OTC_RETINA_SIDES) {
                t[0] = otc_retina_left_object(p >> 4 & 15);
                t[1] = otc_retina_right_object(p & 15);
            } else {
                t[0] = otc_retina_target(p, goal == OTC_RETINA_OR);
            }
        }
    }
    otc_neat_task *t = x && x->pool ? calloc(1, sizeof *t) : NULL;
    if (!t) {
        retina_ctx_free(x);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a task");
    }
    snprintf(t->name, sizeof t->name, "%s", spec);
    t->evaluate = retina_evaluate;
    t->destroy = retina_destroy;
    t->substrate = retina_substrate;
    t->needs_feed_forward = true;
    t->ctx = x;
    t->measure_name = "patterns right (of 256)";
    t->n_bc = OTC_RETINA_PATTERNS * out_x;
    t->novelty_threshold = 0.1; /* a tenth of the answers differ */
    t->n_inputs = c->num_inputs;
    t->n_outputs = c->num_outputs;
    *out = t;
    return OTC_OK;
}
