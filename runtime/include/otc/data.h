/* Data: CSV reading, in-memory datasets, a seeded DataLoader, splits and standardisation. */
#ifndef OTC_DATA_H
#define OTC_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Rows of features x [rows, n_features] and targets y [rows, n_targets], row-major. */
typedef struct {
    int rows, n_features, n_targets;
    float *x;
    float *y;
    char **feature_names; /* n_features names (from the header, or "c<index>") */
    char **target_names;
} otc_dataset;

otc_dataset *otc_dataset_new(int rows, int n_features, int n_targets);
void otc_dataset_free(otc_dataset *d);
/* A new dataset of the given rows (indices into d). */
otc_dataset *otc_dataset_subset(const otc_dataset *d, const int *rows, int n);

typedef struct {
    bool header;    /* first line names the columns */
    char delimiter; /* ',' by default when 0 */
    /* Column lists: comma-separated names (with a header) or 0-based indices, or NULL.
     * Targets NULL: no targets. Features NULL: every column that is not a target. */
    const char *targets;
    const char *features;
    bool last_target;  /* with targets NULL: the last column is the one target */
    bool skip_targets; /* target cells are not read (y is 0): columns merely left out */
} otc_csv_options;

/* Load a CSV of numbers. A bad cell is an error naming the file, line and column. Features are
 * finite numbers. A target column is either all finite numbers or all word class labels (no
 * cell reads as a number, not even nan or inf), which become 0,1,2.. in order of first
 * appearance; a mix is an error at the first cell that breaks the rule. */
otc_status otc_csv_load(const char *path, const otc_csv_options *opt, otc_dataset **out);
/* The same from memory (name is used in messages). */
otc_status otc_csv_parse(const char *text, size_t len, const char *name, const otc_csv_options *opt,
                         otc_dataset **out);

/* Seeded shuffled split; test gets round(rows * test_fraction) rows. */
otc_status otc_dataset_split(const otc_dataset *d, float test_fraction, uint64_t seed,
                             otc_dataset **train, otc_dataset **test);

/* Per-feature standardisation, fitted on training data only, applied to any split. */
typedef struct {
    int n;
    float *mean;
    float *std; /* 1 where a feature is constant */
} otc_standardizer;

otc_status otc_standardizer_fit(const otc_dataset *train, otc_standardizer *s);
otc_status otc_standardizer_apply(const otc_standardizer *s, otc_dataset *d);
void otc_standardizer_free(otc_standardizer *s);

/* Mini-batches over a dataset, reshuffled (seeded) at each epoch. */
typedef struct otc_dataloader otc_dataloader;

otc_dataloader *otc_dataloader_new(const otc_dataset *d, int batch, bool shuffle, bool drop_last,
                                   uint64_t seed);
void otc_dataloader_free(otc_dataloader *dl);
/* Next batch of the epoch: returns its row count (0 at the end of the epoch, after which the
 * next call starts a new, reshuffled epoch). x/y point into the loader's own buffers. */
int otc_dataloader_next(otc_dataloader *dl, const float **x, const float **y);
int otc_dataloader_batches(const otc_dataloader *dl); /* per epoch */

#endif
