/* libFuzzer target for the CSV reader (and the CLI's header guess): any bytes must give a
 * dataset or an error message, never a crash, leak or out-of-bounds read. The first byte
 * picks the reader's options, the rest is the file. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "otc/data.h"

static const char delimiters[4] = {',', ';', '\t', '|'};
static const char *const target_lists[8] = {NULL, "0", "1,2", "species", "c0", "0,0", "2", "-1"};
static const char *const feature_lists[4] = {NULL, "0,1", "sepal_length", "1,x"};

/* Everything a successful load promises, checked so a silent corruption also shows. */
static void check_dataset(const otc_dataset *d) {
    if (d->rows < 1 || d->n_features < 0 || d->n_targets < 0) abort();
    for (int i = 0; i < d->n_features; i++)
        if (!d->feature_names || !d->feature_names[i]) abort();
    for (int i = 0; i < d->n_targets; i++)
        if (!d->target_names || !d->target_names[i]) abort();
    size_t nx = (size_t)d->rows * (size_t)d->n_features;
    size_t ny = (size_t)d->rows * (size_t)d->n_targets;
    for (size_t i = 0; i < nx; i++)
        if (!isfinite(d->x[i])) abort();
    for (size_t i = 0; i < ny; i++)
        if (!isfinite(d->y[i])) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t sel = data[0];
    /* An exact-size copy of the text, so reading one byte past it is caught. */
    size_t len = size - 1;
    char *text = malloc(len ? len : 1);
    if (!text) return 0;
    if (len) memcpy(text, data + 1, len);

    (void)otc_cli_csv_has_header(text, len);

    otc_csv_options opt = {.header = (sel & 1) != 0,
                           .delimiter = delimiters[(sel >> 1) & 3],
                           .targets = target_lists[(sel >> 3) & 7],
                           .features = feature_lists[(sel >> 6) & 3]};
    otc_dataset *d = NULL;
    otc_status st = otc_csv_parse(text, len, "fuzz.csv", &opt, &d);
    if (st != OTC_OK) {
        if (d || !otc_last_error()[0]) abort(); /* an error leaves no dataset and a message */
    } else {
        if (!d) abort();
        check_dataset(d);
        /* what `otc train` does next: a split and one pass of the loader */
        otc_dataset *tr = NULL, *va = NULL;
        if (otc_dataset_split(d, 0.25f, sel, &tr, &va) == OTC_OK) {
            if ((tr ? tr->rows : 0) + (va ? va->rows : 0) != d->rows) abort();
            otc_dataloader *dl = tr ? otc_dataloader_new(tr, 3, true, false, 1) : NULL;
            if (dl) {
                const float *x, *y;
                int seen = 0, n;
                while ((n = otc_dataloader_next(dl, &x, &y)) > 0) seen += n;
                if (seen != tr->rows) abort();
                otc_dataloader_free(dl);
            }
        }
        otc_dataset_free(tr);
        otc_dataset_free(va);
        otc_dataset_free(d);
    }
    free(text);
    return 0;
}
