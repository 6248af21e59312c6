/* Mini-batches over a dataset: a seeded reshuffle at the start of every epoch, and the last
 * short batch either kept or dropped. */
#include <stdlib.h>
#include <string.h>

#include "otc/data.h"
#include "otc/rng.h"

struct otc_dataloader {
    const otc_dataset *d; /* borrowed: must outlive the loader */
    int batch;
    bool shuffle, drop_last;
    otc_rng rng;
    int *order; /* this epoch's row order */
    int pos;    /* next position in order */
    int limit;  /* rows served per epoch (drop_last leaves out the tail) */
    bool epoch_started;
    float *x, *y; /* the current batch, gathered */
};

otc_dataloader *otc_dataloader_new(const otc_dataset *d, int batch, bool shuffle, bool drop_last,
                                   uint64_t seed) {
    if (!d || batch <= 0) {
        otc_fail(OTC_ERR_ARG, "otc_dataloader_new: %s",
                 !d ? "dataset is NULL" : "batch size must be positive");
        return NULL;
    }
    otc_dataloader *dl = calloc(1, sizeof *dl);
    if (!dl) goto nomem;
    dl->d = d;
    dl->batch = batch;
    dl->shuffle = shuffle;
    dl->drop_last = drop_last;
    otc_rng_seed(&dl->rng, seed);
    dl->limit = drop_last ? d->rows / batch * batch : d->rows;
    /* A batch never holds more than every row, however large the batch size asked for. */
    size_t b = (size_t)(batch < d->rows ? batch : d->rows);
    dl->order = malloc(((size_t)d->rows + 1) * sizeof *dl->order);
    dl->x = malloc((b * (size_t)d->n_features + 1) * sizeof(float));
    dl->y = malloc((b * (size_t)d->n_targets + 1) * sizeof(float));
    if (!dl->order || !dl->x || !dl->y) goto nomem;
    return dl;
nomem:
    otc_dataloader_free(dl);
    otc_fail(OTC_ERR_NOMEM, "out of memory for a data loader");
    return NULL;
}

void otc_dataloader_free(otc_dataloader *dl) {
    if (!dl) return;
    free(dl->order);
    free(dl->x);
    free(dl->y);
    free(dl);
}

int otc_dataloader_next(otc_dataloader *dl, const float **x, const float **y) {
    if (!dl) return 0;
    if (!dl->epoch_started) {
        /* Each epoch permutes the identity, so epoch k's order depends only on the seed and
         * k, never on how far a previous epoch was consumed. */
        for (int i = 0; i < dl->d->rows; i++) dl->order[i] = i;
        if (dl->shuffle) otc_rng_shuffle(&dl->rng, dl->order, dl->d->rows);
        dl->pos = 0;
        dl->epoch_started = true;
    }
    int n = dl->limit - dl->pos;
    if (n > dl->batch) n = dl->batch;
    if (n <= 0) {
        dl->epoch_started = false;
        return 0;
    }
    size_t nf = (size_t)dl->d->n_features, nt = (size_t)dl->d->n_targets;
    for (int i = 0; i < n; i++) {
        size_t row = (size_t)dl->order[dl->pos + i];
        memcpy(dl->x + (size_t)i * nf, dl->d->x + row * nf, nf * sizeof(float));
        memcpy(dl->y + (size_t)i * nt, dl->d->y + row * nt, nt * sizeof(float));
    }
    dl->pos += n;
    if (x) *x = dl->x;
    if (y) *y = dl->y;
    return n;
}

int otc_dataloader_batches(const otc_dataloader *dl) {
    if (!dl) return 0;
    return (dl->limit + dl->batch - 1) / dl->batch;
}
