/* A Neuron's aggregations (otc/ops.h otc_agg): their names, and the interpreter's value and
 * gradient of one row's weighted inputs, with neat-python's semantics (neat/aggregations.py). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

static const char *const agg_names[OTC_AGG_COUNT] = {
    [OTC_AGG_SUM] = "sum",   [OTC_AGG_PRODUCT] = "product", [OTC_AGG_MIN] = "min",
    [OTC_AGG_MAX] = "max",   [OTC_AGG_MAXABS] = "maxabs",   [OTC_AGG_MEDIAN] = "median",
    [OTC_AGG_MEAN] = "mean",
};

const char *otc_agg_name(int agg) {
    return agg >= 0 && agg < OTC_AGG_COUNT ? agg_names[agg] : NULL;
}

int otc_agg_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < OTC_AGG_COUNT; i++)
        if (!strcmp(agg_names[i], name)) return i;
    return -1;
}

/* The index of the input min, max or maxabs picks: the first that attains the extreme, as
 * Python's min()/max() keep the first of equal candidates. */
static int pick(int agg, const float *t, int k) {
    int best = 0;
    for (int i = 1; i < k; i++) {
        bool better = agg == OTC_AGG_MIN   ? t[i] < t[best]
                      : agg == OTC_AGG_MAX ? t[i] > t[best]
                                           : fabsf(t[i]) > fabsf(t[best]);
        if (better) best = i;
    }
    return best;
}

/* Sorted by value, equal values by position: a total order, so the middle is one input. */
static int by_value(const void *pa, const void *pb) {
    const otc_agg_item *a = pa, *b = pb;
    if (a->v < b->v) return -1;
    if (a->v > b->v) return 1;
    return (a->i > b->i) - (a->i < b->i);
}

static void sort_items(const float *t, int k, otc_agg_item *s) {
    for (int i = 0; i < k; i++) s[i] = (otc_agg_item){t[i], i};
    qsort(s, (size_t)k, sizeof *s, by_value);
}

float otc_agg_value(int agg, const float *t, int k, otc_agg_item *scratch) {
    float acc = 0.0f;
    if (agg == OTC_AGG_PRODUCT) {
        acc = 1.0f;
        for (int i = 0; i < k; i++) acc *= t[i];
        return acc;
    }
    if (k == 0) return 0.0f;
    switch (agg) {
    case OTC_AGG_MIN:
    case OTC_AGG_MAX:
    case OTC_AGG_MAXABS:
        return t[pick(agg, t, k)];
    case OTC_AGG_MEDIAN:
        /* neat-python's median of one or two inputs is their mean */
        if (k <= 2) return otc_agg_value(OTC_AGG_MEAN, t, k, scratch);
        sort_items(t, k, scratch);
        if (k % 2) return scratch[k / 2].v;
        return (scratch[k / 2 - 1].v + scratch[k / 2].v) / 2.0f;
    case OTC_AGG_MEAN:
        for (int i = 0; i < k; i++) acc += t[i];
        return acc / (float)k;
    default:
        for (int i = 0; i < k; i++) acc += t[i];
        return acc;
    }
}

void otc_agg_grad(int agg, const float *t, int k, float *g, otc_agg_item *scratch) {
    for (int i = 0; i < k; i++) g[i] = 0.0f;
    if (k == 0) return;
    switch (agg) {
    case OTC_AGG_PRODUCT: {
        /* The product of the others, as prefix times suffix products: exact with zeros. */
        float suffix = 1.0f;
        for (int i = k - 1; i >= 0; i--) {
            g[i] = suffix;
            suffix *= t[i];
        }
        float prefix = 1.0f;
        for (int i = 0; i < k; i++) {
            g[i] *= prefix;
            prefix *= t[i];
        }
        return;
    }
    case OTC_AGG_MIN:
    case OTC_AGG_MAX:
    case OTC_AGG_MAXABS:
        /* At a tie the picked (first) input takes the whole gradient: a subgradient. */
        g[pick(agg, t, k)] = 1.0f;
        return;
    case OTC_AGG_MEDIAN:
        if (k <= 2) {
            otc_agg_grad(OTC_AGG_MEAN, t, k, g, scratch);
        } else {
            /* The middle input(s) of the value's sort, equal values ordered by position. */
            sort_items(t, k, scratch);
            if (k % 2) {
                g[scratch[k / 2].i] = 1.0f;
            } else {
                g[scratch[k / 2 - 1].i] = 0.5f;
                g[scratch[k / 2].i] = 0.5f;
            }
        }
        return;
    case OTC_AGG_MEAN:
        for (int i = 0; i < k; i++) g[i] = 1.0f / (float)k;
        return;
    default:
        for (int i = 0; i < k; i++) g[i] = 1.0f;
        return;
    }
}
