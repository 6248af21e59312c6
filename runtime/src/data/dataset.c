/* In-memory datasets: allocation, row subsets, a seeded train/test split and a standardiser
 * fitted on training rows only. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/data.h"
#include "otc/rng.h"

static void free_names(char **names, int n) {
    if (!names) return;
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* n names "<prefix><i>", or NULL when out of memory. */
static char **default_names(int n, char prefix) {
    char **names = calloc((size_t)n + 1, sizeof *names);
    if (!names) return NULL;
    for (int i = 0; i < n; i++) {
        names[i] = malloc(16);
        if (!names[i]) {
            free_names(names, i);
            return NULL;
        }
        snprintf(names[i], 16, "%c%d", prefix, i);
    }
    return names;
}

otc_dataset *otc_dataset_new(int rows, int n_features, int n_targets) {
    if (rows < 0 || n_features < 0 || n_targets < 0) {
        otc_fail(OTC_ERR_ARG, "dataset of %d rows, %d features, %d targets: negative size", rows,
                 n_features, n_targets);
        return NULL;
    }
    size_t r = (size_t)rows, nf = (size_t)n_features, nt = (size_t)n_targets;
    if ((nf && r > SIZE_MAX / sizeof(float) / nf) || (nt && r > SIZE_MAX / sizeof(float) / nt)) {
        otc_fail(OTC_ERR_NOMEM, "dataset of %d rows is too large", rows);
        return NULL;
    }
    otc_dataset *d = calloc(1, sizeof *d);
    if (!d) goto nomem;
    d->rows = rows;
    d->n_features = n_features;
    d->n_targets = n_targets;
    /* Never NULL, even when empty, so callers can index without special cases. */
    d->x = calloc(r * nf + 1, sizeof(float));
    d->y = calloc(r * nt + 1, sizeof(float));
    d->feature_names = default_names(n_features, 'x');
    d->target_names = default_names(n_targets, 'y');
    if (!d->x || !d->y || !d->feature_names || !d->target_names) goto nomem;
    return d;
nomem:
    otc_dataset_free(d);
    otc_fail(OTC_ERR_NOMEM, "out of memory for a dataset of %d rows", rows);
    return NULL;
}

void otc_dataset_free(otc_dataset *d) {
    if (!d) return;
    free(d->x);
    free(d->y);
    free_names(d->feature_names, d->n_features);
    free_names(d->target_names, d->n_targets);
    free(d->lines);
    free(d->seq);
    free_names(d->seq_ids, d->n_seq_ids);
    free(d->seq_name);
    free(d);
}

static bool copy_names(char **dst, char *const *src, int n) {
    for (int i = 0; i < n; i++) {
        size_t len = strlen(src[i]) + 1;
        char *copy = malloc(len);
        if (!copy) return false;
        memcpy(copy, src[i], len);
        free(dst[i]);
        dst[i] = copy;
    }
    return true;
}

otc_dataset *otc_dataset_subset(const otc_dataset *d, const int *rows, int n) {
    if (!d || n < 0 || (n > 0 && !rows)) {
        otc_fail(OTC_ERR_ARG, "otc_dataset_subset: %s", !d ? "dataset is NULL" : "bad row list");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (rows[i] < 0 || rows[i] >= d->rows) {
            otc_fail(OTC_ERR_ARG, "otc_dataset_subset: row %d (entry %d) is out of range 0..%d",
                     rows[i], i, d->rows - 1);
            return NULL;
        }
    }
    otc_dataset *s = otc_dataset_new(n, d->n_features, d->n_targets);
    if (!s) return NULL;
    if (!copy_names(s->feature_names, d->feature_names, d->n_features) ||
        !copy_names(s->target_names, d->target_names, d->n_targets)) {
        otc_dataset_free(s);
        otc_fail(OTC_ERR_NOMEM, "out of memory for dataset names");
        return NULL;
    }
    size_t nf = (size_t)d->n_features, nt = (size_t)d->n_targets;
    for (int i = 0; i < n; i++) {
        size_t src = (size_t)rows[i];
        memcpy(s->x + (size_t)i * nf, d->x + src * nf, nf * sizeof(float));
        memcpy(s->y + (size_t)i * nt, d->y + src * nt, nt * sizeof(float));
    }
    /* Source lines go along, for messages about the subset's rows. */
    if (d->lines) {
        s->lines = malloc(((size_t)n + 1) * sizeof *s->lines);
        if (!s->lines) {
            otc_dataset_free(s);
            otc_fail(OTC_ERR_NOMEM, "out of memory for a dataset of %d rows", n);
            return NULL;
        }
        for (int i = 0; i < n; i++) s->lines[i] = d->lines[rows[i]];
    }
    return s;
}

otc_status otc_dataset_split(const otc_dataset *d, float test_fraction, uint64_t seed,
                             otc_dataset **train, otc_dataset **test) {
    if (!train || !test) return otc_fail(OTC_ERR_ARG, "otc_dataset_split: NULL output");
    *train = *test = NULL;
    if (!d) return otc_fail(OTC_ERR_ARG, "otc_dataset_split: dataset is NULL");
    if (!(test_fraction >= 0.0f && test_fraction <= 1.0f))
        return otc_fail(OTC_ERR_ARG, "test fraction %g is not in [0, 1]", (double)test_fraction);
    int n_test = (int)lround((double)d->rows * (double)test_fraction);
    int *order = malloc(((size_t)d->rows + 1) * sizeof *order);
    if (!order) return otc_fail(OTC_ERR_NOMEM, "out of memory splitting %d rows", d->rows);
    for (int i = 0; i < d->rows; i++) order[i] = i;
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    otc_rng_shuffle(&rng, order, d->rows);
    /* Both halves keep the shuffled order; a DataLoader reshuffles anyway. */
    *test = otc_dataset_subset(d, order, n_test);
    *train = *test ? otc_dataset_subset(d, order + n_test, d->rows - n_test) : NULL;
    free(order);
    if (!*train) {
        otc_dataset_free(*test);
        *test = NULL;
        return OTC_ERR_NOMEM; /* the subset recorded the message */
    }
    return OTC_OK;
}

otc_status otc_standardizer_fit(const otc_dataset *train, otc_standardizer *s) {
    if (!train || !s) return otc_fail(OTC_ERR_ARG, "otc_standardizer_fit: NULL argument");
    if (train->rows == 0) return otc_fail(OTC_ERR_ARG, "cannot fit a standardiser on 0 rows");
    int n = train->n_features;
    float *mean = malloc(((size_t)n + 1) * sizeof *mean);
    float *std = malloc(((size_t)n + 1) * sizeof *std);
    if (!mean || !std) {
        free(mean);
        free(std);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a standardiser");
    }
    for (int j = 0; j < n; j++) {
        /* Two passes in double: the mean, then the spread around it (population std, as
         * scikit-learn's StandardScaler). */
        double sum = 0.0, max_abs = 0.0;
        for (int r = 0; r < train->rows; r++) {
            double v = train->x[(size_t)r * (size_t)n + (size_t)j];
            sum += v;
            max_abs = fmax(max_abs, fabs(v));
        }
        double m = sum / train->rows, sq = 0.0;
        for (int r = 0; r < train->rows; r++) {
            double dev = train->x[(size_t)r * (size_t)n + (size_t)j] - m;
            sq += dev * dev;
        }
        double sd = sqrt(sq / train->rows);
        mean[j] = (float)m;
        /* A spread below the float resolution of the values themselves is rounding noise,
         * not signal: dividing by it would blow the noise up, so the feature is constant. */
        std[j] = sd <= 1e-6 * max_abs ? 1.0f : (float)sd;
    }
    s->n = n;
    s->mean = mean;
    s->std = std;
    return OTC_OK;
}

otc_status otc_standardizer_apply(const otc_standardizer *s, otc_dataset *d) {
    if (!s || !d) return otc_fail(OTC_ERR_ARG, "otc_standardizer_apply: NULL argument");
    if (s->n != d->n_features)
        return otc_fail(OTC_ERR_SHAPE, "standardiser fitted on %d features applied to %d", s->n,
                        d->n_features);
    size_t n = (size_t)s->n;
    for (int r = 0; r < d->rows; r++) {
        float *row = d->x + (size_t)r * n;
        for (size_t j = 0; j < n; j++) row[j] = (row[j] - s->mean[j]) / s->std[j];
    }
    return OTC_OK;
}

void otc_standardizer_free(otc_standardizer *s) {
    if (!s) return;
    free(s->mean);
    free(s->std);
    s->mean = s->std = NULL;
    s->n = 0;
}
