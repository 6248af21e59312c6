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
    /* From a CSV: each row's 1-based line in the file (NULL otherwise), and with a sequence
     * column each row's sequence (0, 1, ... in order of first appearance), the column's text
     * for each of the n_seq_ids sequences and the column's name (from the header, or
     * "c<index>", however it was chosen: by name or index) (NULL otherwise). */
    int *lines;
    int *seq;
    char **seq_ids;
    int n_seq_ids;
    char *seq_name;
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
    /* A column (name or index) naming the sequence each row belongs to, or NULL: neither a
     * feature nor a target; any text, compared exactly. */
    const char *sequence;
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

/* ---- images: the IDX format of MNIST-style data sets ----
 * An images file (magic 0x00000803: unsigned bytes, 3 dimensions [n, rows, cols], each a
 * big-endian u32) and a labels file (0x00000801: [n]), gzip-compressed or plain (zlib reads
 * both). Loaded into an otc_dataset whose row i is image i as [1, rows, cols] in NCHW order
 * (n_features = rows*cols, each pixel scaled to [0, 1] by /255) and whose one target is the
 * label, a class index; otc_dataloader then gives seeded shuffled batches of it. Every field
 * is checked against the file: the magic, dimensions (at most OTC_MAX_DIM each, the images'
 * total at most OTC_MAX_ELEMS), the data's length against the dimensions (truncated or
 * trailing bytes), labels below `classes`, and equal image and label counts; an error names
 * the file and the field. Memory grows with the data actually read, not with what a header
 * claims. */
typedef struct {
    int max_items; /* read the first this many images and labels; 0: all */
    int classes;   /* labels must be below this; 0: 10 */
} otc_idx_options;

typedef struct {
    int items, height, width; /* what was loaded: images of height x width (one channel) */
} otc_idx_info;

otc_status otc_idx_load(const char *images_path, const char *labels_path,
                        const otc_idx_options *opt, otc_dataset **out, otc_idx_info *info);
/* The split "train" or "t10k" of a directory laid out as the MNIST distributions are:
 * DIR/<split>-images-idx3-ubyte.gz and DIR/<split>-labels-idx1-ubyte.gz (or the same names
 * without .gz). */
otc_status otc_idx_load_dir(const char *dir, const char *split, const otc_idx_options *opt,
                            otc_dataset **out, otc_idx_info *info);
/* The images header of DIR's split alone (items, height, width), read without the data: what
 * a caller checks against its model before inflating what may be a gigabyte. */
otc_status otc_idx_peek_dir(const char *dir, const char *split, otc_idx_info *info);

/* ---- sequences ----
 * Sequence i is rows start[i] .. start[i] + len[i] - 1 of data, in time order; each row is
 * one step's features and targets. */
typedef struct {
    int n;
    int *start, *len;
    otc_dataset *data; /* owned */
    char **ids;        /* n names (the CSV's sequence column, or "s<i>") */
} otc_seq_dataset;

/* n sequences of the given lengths (each >= 1), zeros, to fill in a program. */
otc_seq_dataset *otc_seq_dataset_new(int n, const int *len, int n_features, int n_targets);
void otc_seq_dataset_free(otc_seq_dataset *s);
int otc_seq_max_len(const otc_seq_dataset *s);
/* Every value finite; else an error naming `name`, the sequence and the step. */
otc_status otc_seq_dataset_check(const otc_seq_dataset *s, const char *name);
/* A CSV of steps, rows in time order. With opt->sequence, consecutive rows with the same id
 * are one sequence (an id that comes back after another began is an error naming both
 * lines); without, the whole file is one sequence. Errors name the file and line. */
otc_status otc_seq_csv_load(const char *path, const otc_csv_options *opt, otc_seq_dataset **out);
/* The same from memory. */
otc_status otc_seq_csv_parse(const char *text, size_t len, const char *name,
                             const otc_csv_options *opt, otc_seq_dataset **out);
/* A new sequence dataset of the given sequences (indices into s). */
otc_seq_dataset *otc_seq_dataset_subset(const otc_seq_dataset *s, const int *seqs, int n);
/* Seeded shuffled split by sequence; test gets round(n * test_fraction) sequences. */
otc_status otc_seq_dataset_split(const otc_seq_dataset *s, float test_fraction, uint64_t seed,
                                 otc_seq_dataset **train, otc_seq_dataset **test);

/* Batches of sequences of one length (bucketed by length): every epoch shuffles the
 * sequences within each bucket and the order of the batches (seeded; epoch k depends only on
 * the seed and k). drop_last leaves out each bucket's short last batch. */
typedef struct otc_seq_loader otc_seq_loader;

otc_seq_loader *otc_seq_loader_new(const otc_seq_dataset *s, int batch, bool shuffle,
                                   bool drop_last, uint64_t seed);
void otc_seq_loader_free(otc_seq_loader *l);
/* Next batch of the epoch: returns its sequence count B (0 at the end of the epoch, the next
 * call starting a new one), *steps its length T, x step-major [T][B][n_features] and y
 * [T][B][n_targets] in the loader's buffers, seqs (optional) the B sequence indices. */
int otc_seq_loader_next(otc_seq_loader *l, int *steps, const float **x, const float **y,
                        const int **seqs);
int otc_seq_loader_batches(const otc_seq_loader *l); /* per epoch */

#endif
