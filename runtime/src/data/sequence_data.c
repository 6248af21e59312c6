/* Sequence datasets: sequences as runs of consecutive rows of one dataset, built in a program
 * or grouped from a CSV's sequence-id column, split by sequence, and a seeded loader that
 * serves batches of equal-length sequences step-major (bucketed by length). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/data.h"
#include "otc/file.h"
#include "otc/rng.h"

void otc_seq_dataset_free(otc_seq_dataset *s) {
    if (!s) return;
    if (s->ids)
        for (int i = 0; i < s->n; i++) free(s->ids[i]);
    free(s->ids);
    free(s->start);
    free(s->len);
    otc_dataset_free(s->data);
    free(s);
}

/* The shell of n sequences (start, len, ids) around data; ids "s<i>" unless given. */
static otc_seq_dataset *seq_shell(int n, otc_dataset *data) {
    otc_seq_dataset *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = n;
    s->data = data;
    s->start = calloc((size_t)n + 1, sizeof *s->start);
    s->len = calloc((size_t)n + 1, sizeof *s->len);
    s->ids = calloc((size_t)n + 1, sizeof *s->ids);
    if (!s->start || !s->len || !s->ids) {
        s->data = NULL;
        otc_seq_dataset_free(s);
        return NULL;
    }
    return s;
}

static char *dup_text(const char *t) {
    size_t n = strlen(t) + 1;
    char *c = malloc(n);
    if (c) memcpy(c, t, n);
    return c;
}

static bool default_ids(otc_seq_dataset *s) {
    for (int i = 0; i < s->n; i++) {
        char id[24];
        snprintf(id, sizeof id, "s%d", i);
        if (!s->ids[i] && !(s->ids[i] = dup_text(id))) return false;
    }
    return true;
}

otc_seq_dataset *otc_seq_dataset_new(int n, const int *len, int n_features, int n_targets) {
    if (n < 0 || (n > 0 && !len)) {
        otc_fail(OTC_ERR_ARG, "otc_seq_dataset_new: %s", n < 0 ? "negative count" : "no lengths");
        return NULL;
    }
    long long rows = 0;
    for (int i = 0; i < n; i++) {
        if (len[i] < 1) {
            otc_fail(OTC_ERR_ARG,
                     "otc_seq_dataset_new: sequence %d has length %d (at least 1 step)", i, len[i]);
            return NULL;
        }
        rows += len[i];
    }
    if (rows > 0x7fffffff) {
        otc_fail(OTC_ERR_ARG, "otc_seq_dataset_new: %lld steps in all is too many", rows);
        return NULL;
    }
    otc_dataset *d = otc_dataset_new((int)rows, n_features, n_targets);
    if (!d) return NULL;
    otc_seq_dataset *s = seq_shell(n, d);
    if (!s || !default_ids(s)) {
        if (!s) otc_dataset_free(d);
        otc_seq_dataset_free(s);
        otc_fail(OTC_ERR_NOMEM, "out of memory for %d sequences", n);
        return NULL;
    }
    int at = 0;
    for (int i = 0; i < n; i++) {
        s->start[i] = at;
        s->len[i] = len[i];
        at += len[i];
    }
    return s;
}

int otc_seq_max_len(const otc_seq_dataset *s) {
    int m = 0;
    for (int i = 0; s && i < s->n; i++)
        if (s->len[i] > m) m = s->len[i];
    return m;
}

otc_status otc_seq_dataset_check(const otc_seq_dataset *s, const char *name) {
    if (!s) return otc_fail(OTC_ERR_ARG, "otc_seq_dataset_check: no dataset");
    if (!name) name = "sequences";
    const otc_dataset *d = s->data;
    for (int i = 0; i < s->n; i++) {
        if (s->len[i] < 1)
            return otc_fail(OTC_ERR_FORMAT, "%s: sequence %s has no steps", name, s->ids[i]);
        for (int t = 0; t < s->len[i]; t++) {
            size_t r = (size_t)s->start[i] + (size_t)t;
            bool ok = true;
            for (int k = 0; k < d->n_features; k++)
                ok = ok && isfinite(d->x[r * d->n_features + k]);
            for (int k = 0; k < d->n_targets; k++) ok = ok && isfinite(d->y[r * d->n_targets + k]);
            if (!ok) {
                if (d->lines)
                    return otc_fail(OTC_ERR_FORMAT,
                                    "%s:%d: sequence %s step %d: not a finite number", name,
                                    d->lines[r], s->ids[i], t + 1);
                return otc_fail(OTC_ERR_FORMAT, "%s: sequence %s step %d: not a finite number",
                                name, s->ids[i], t + 1);
            }
        }
    }
    return OTC_OK;
}

/* Group the rows of a parsed CSV into sequences (d is taken over, freed on error). */
static otc_status group_rows(otc_dataset *d, const char *name, otc_seq_dataset **out) {
    if (!d->seq) { /* no sequence column: the whole file is one sequence */
        otc_seq_dataset *s = seq_shell(1, d);
        if (!s || !default_ids(s)) {
            if (!s) otc_dataset_free(d);
            otc_seq_dataset_free(s);
            return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", name);
        }
        s->len[0] = d->rows;
        *out = s;
        return OTC_OK;
    }
    int n = d->n_seq_ids;
    otc_seq_dataset *s = seq_shell(n, d);
    if (!s) {
        otc_dataset_free(d);
        return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", name);
    }
    /* Ids are numbered in order of first appearance, so sequence k begins where id k first
     * appears; a row whose id is not the current one nor the next is an id coming back. */
    int cur = -1;
    for (int r = 0; r < d->rows; r++) {
        int id = d->seq[r];
        if (id == cur) {
            s->len[cur]++;
            continue;
        }
        if (id != cur + 1) {
            otc_status st = otc_fail(
                OTC_ERR_FORMAT,
                "%s:%d: sequence \"%s\" continues after sequence \"%s\" began (its rows "
                "start at line %d); the rows of a sequence must be consecutive",
                name, d->lines[r], d->seq_ids[id], d->seq_ids[cur], d->lines[s->start[id]]);
            otc_seq_dataset_free(s);
            return st;
        }
        cur = id;
        s->start[cur] = r;
        s->len[cur] = 1;
    }
    for (int i = 0; i < n; i++) {
        s->ids[i] = d->seq_ids[i]; /* moved */
        d->seq_ids[i] = NULL;
    }
    *out = s;
    return OTC_OK;
}

otc_status otc_seq_csv_parse(const char *text, size_t len, const char *name,
                             const otc_csv_options *opt, otc_seq_dataset **out) {
    if (!out) return otc_fail(OTC_ERR_ARG, "otc_seq_csv_parse: out is NULL");
    *out = NULL;
    if (!name) name = "<csv>";
    otc_dataset *d = NULL;
    otc_status st = otc_csv_parse(text, len, name, opt, &d);
    if (st) return st;
    return group_rows(d, name, out);
}

otc_status otc_seq_csv_load(const char *path, const otc_csv_options *opt, otc_seq_dataset **out) {
    if (!out) return otc_fail(OTC_ERR_ARG, "otc_seq_csv_load: out is NULL");
    *out = NULL;
    if (!path) return otc_fail(OTC_ERR_ARG, "otc_seq_csv_load: path is NULL");
    otc_dataset *d = NULL;
    otc_status st = otc_csv_load(path, opt, &d);
    if (st) return st;
    return group_rows(d, path, out);
}

otc_seq_dataset *otc_seq_dataset_subset(const otc_seq_dataset *s, const int *seqs, int n) {
    if (!s || n < 0 || (n > 0 && !seqs)) {
        otc_fail(OTC_ERR_ARG, "otc_seq_dataset_subset: %s", !s ? "no dataset" : "bad list");
        return NULL;
    }
    long long rows = 0;
    for (int i = 0; i < n; i++) {
        if (seqs[i] < 0 || seqs[i] >= s->n) {
            otc_fail(OTC_ERR_ARG, "otc_seq_dataset_subset: sequence %d is out of range 0..%d",
                     seqs[i], s->n - 1);
            return NULL;
        }
        rows += s->len[seqs[i]];
    }
    /* zeroed: with the sanitizers gcc takes an empty list for one read uninitialised */
    int *row = calloc((size_t)rows + 1, sizeof *row);
    if (!row) {
        otc_fail(OTC_ERR_NOMEM, "out of memory for %d sequences", n);
        return NULL;
    }
    int at = 0;
    for (int i = 0; i < n; i++)
        for (int t = 0; t < s->len[seqs[i]]; t++) row[at++] = s->start[seqs[i]] + t;
    otc_dataset *d = otc_dataset_subset(s->data, row, at);
    free(row);
    if (!d) return NULL;
    otc_seq_dataset *r = seq_shell(n, d);
    bool ok = r != NULL;
    for (int i = 0, pos = 0; ok && i < n; i++) {
        r->start[i] = pos;
        r->len[i] = s->len[seqs[i]];
        pos += r->len[i];
        ok = (r->ids[i] = dup_text(s->ids[seqs[i]])) != NULL;
    }
    if (!ok) {
        if (!r) otc_dataset_free(d);
        otc_seq_dataset_free(r);
        otc_fail(OTC_ERR_NOMEM, "out of memory for %d sequences", n);
        return NULL;
    }
    return r;
}

otc_status otc_seq_dataset_split(const otc_seq_dataset *s, float test_fraction, uint64_t seed,
                                 otc_seq_dataset **train, otc_seq_dataset **test) {
    if (!train || !test) return otc_fail(OTC_ERR_ARG, "otc_seq_dataset_split: NULL output");
    *train = *test = NULL;
    if (!s) return otc_fail(OTC_ERR_ARG, "otc_seq_dataset_split: dataset is NULL");
    if (!(test_fraction >= 0.0f && test_fraction <= 1.0f))
        return otc_fail(OTC_ERR_ARG, "test fraction %g is not in [0, 1]", (double)test_fraction);
    int n_test = (int)lround((double)s->n * (double)test_fraction);
    int *order = malloc(((size_t)s->n + 1) * sizeof *order);
    if (!order) return otc_fail(OTC_ERR_NOMEM, "out of memory splitting %d sequences", s->n);
    for (int i = 0; i < s->n; i++) order[i] = i;
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    otc_rng_shuffle(&rng, order, s->n);
    *test = otc_seq_dataset_subset(s, order, n_test);
    *train = *test ? otc_seq_dataset_subset(s, order + n_test, s->n - n_test) : NULL;
    free(order);
    if (!*train) {
        otc_seq_dataset_free(*test);
        *test = NULL;
        return otc_fail_context(OTC_ERR_NOMEM, "splitting %d sequences", s->n);
    }
    return OTC_OK;
}

/* ---- the bucketed loader ---- */

typedef struct {
    int first, count; /* a run of `order` */
} seq_batch;

struct otc_seq_loader {
    const otc_seq_dataset *s; /* borrowed */
    int batch;
    bool shuffle, drop_last;
    otc_rng rng;
    int *order;        /* sequences sorted by length (buckets), shuffled within each */
    int *bucket_start; /* per bucket, into order; n_buckets + 1 entries */
    int n_buckets;
    seq_batch *batches; /* this epoch's batches, in serving order */
    int n_batches, pos;
    bool epoch_started;
    float *x, *y;
};

/* Sequence a goes before b in the buckets: shorter first, then by index. */
static bool before(int a, int b, const int *len) {
    return len[a] != len[b] ? len[a] < len[b] : a < b;
}

/* Sort by (length, index): a merge sort, since qsort has no context argument in C11. */
static void sort_by_len(int *v, int n, const int *len, int *tmp) {
    if (n < 2) return;
    int h = n / 2;
    sort_by_len(v, h, len, tmp);
    sort_by_len(v + h, n - h, len, tmp);
    int i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = before(v[j], v[i], len) ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

void otc_seq_loader_free(otc_seq_loader *l) {
    if (!l) return;
    free(l->order);
    free(l->bucket_start);
    free(l->batches);
    free(l->x);
    free(l->y);
    free(l);
}

otc_seq_loader *otc_seq_loader_new(const otc_seq_dataset *s, int batch, bool shuffle,
                                   bool drop_last, uint64_t seed) {
    if (!s || batch <= 0) {
        otc_fail(OTC_ERR_ARG, "otc_seq_loader_new: %s",
                 !s ? "dataset is NULL" : "batch size must be positive");
        return NULL;
    }
    otc_seq_loader *l = calloc(1, sizeof *l);
    if (!l) goto nomem;
    l->s = s;
    l->batch = batch;
    l->shuffle = shuffle;
    l->drop_last = drop_last;
    otc_rng_seed(&l->rng, seed);
    int n = s->n, maxlen = otc_seq_max_len(s);
    int *tmp = malloc(((size_t)n + 1) * sizeof *tmp);
    l->order = malloc(((size_t)n + 1) * sizeof *l->order);
    l->bucket_start = malloc(((size_t)n + 2) * sizeof *l->bucket_start);
    l->batches = malloc(((size_t)n + 1) * sizeof *l->batches);
    size_t b = (size_t)(batch < n ? batch : n);
    size_t cells = b * (size_t)maxlen;
    l->x = malloc((cells * (size_t)s->data->n_features + 1) * sizeof(float));
    l->y = malloc((cells * (size_t)s->data->n_targets + 1) * sizeof(float));
    if (!tmp || !l->order || !l->bucket_start || !l->batches || !l->x || !l->y) {
        free(tmp);
        goto nomem;
    }
    for (int i = 0; i < n; i++) l->order[i] = i;
    sort_by_len(l->order, n, s->len, tmp);
    free(tmp);
    for (int i = 0; i < n; i++)
        if (i == 0 || s->len[l->order[i]] != s->len[l->order[i - 1]])
            l->bucket_start[l->n_buckets++] = i;
    l->bucket_start[l->n_buckets] = n;
    return l;
nomem:
    otc_seq_loader_free(l);
    otc_fail(OTC_ERR_NOMEM, "out of memory for a sequence loader");
    return NULL;
}

/* This epoch's batches: each bucket shuffled and cut into batches, then the batches
 * shuffled (through an index permutation, so it is one rng stream per epoch). */
static void start_epoch(otc_seq_loader *l) {
    l->n_batches = 0;
    for (int k = 0; k < l->n_buckets; k++) {
        int first = l->bucket_start[k], count = l->bucket_start[k + 1] - first;
        if (l->shuffle) otc_rng_shuffle(&l->rng, l->order + first, count);
        for (int at = 0; at < count; at += l->batch) {
            int c = count - at < l->batch ? count - at : l->batch;
            if (c < l->batch && l->drop_last) break;
            l->batches[l->n_batches++] = (seq_batch){first + at, c};
        }
    }
    if (l->shuffle && l->n_batches > 1) {
        int *perm = malloc((size_t)l->n_batches * sizeof *perm);
        seq_batch *copy = malloc((size_t)l->n_batches * sizeof *copy);
        if (perm && copy) {
            for (int i = 0; i < l->n_batches; i++) perm[i] = i;
            otc_rng_shuffle(&l->rng, perm, l->n_batches);
            memcpy(copy, l->batches, (size_t)l->n_batches * sizeof *copy);
            for (int i = 0; i < l->n_batches; i++) l->batches[i] = copy[perm[i]];
        }
        free(perm);
        free(copy);
    }
    l->pos = 0;
    l->epoch_started = true;
}

int otc_seq_loader_next(otc_seq_loader *l, int *steps, const float **x, const float **y,
                        const int **seqs) {
    if (!l) return 0;
    if (!l->epoch_started) start_epoch(l);
    if (l->pos >= l->n_batches) {
        l->epoch_started = false;
        return 0;
    }
    seq_batch b = l->batches[l->pos++];
    const otc_dataset *d = l->s->data;
    size_t nf = (size_t)d->n_features, nt = (size_t)d->n_targets;
    int T = l->s->len[l->order[b.first]];
    for (int t = 0; t < T; t++)
        for (int i = 0; i < b.count; i++) {
            size_t row = (size_t)l->s->start[l->order[b.first + i]] + (size_t)t;
            size_t cell = (size_t)t * (size_t)b.count + (size_t)i;
            memcpy(l->x + cell * nf, d->x + row * nf, nf * sizeof(float));
            memcpy(l->y + cell * nt, d->y + row * nt, nt * sizeof(float));
        }
    if (steps) *steps = T;
    if (x) *x = l->x;
    if (y) *y = l->y;
    if (seqs) *seqs = l->order + b.first;
    return b.count;
}

int otc_seq_loader_batches(const otc_seq_loader *l) {
    if (!l) return 0;
    if (l->epoch_started) return l->n_batches;
    int n = 0;
    for (int k = 0; k < l->n_buckets; k++) {
        int count = l->bucket_start[k + 1] - l->bucket_start[k];
        n += l->drop_last ? count / l->batch : (count + l->batch - 1) / l->batch;
    }
    return n;
}
