/* Iris: a 4→8→3 classifier with softmax cross-entropy, standardised on the training split,
 * scored on a held-out 30%. */
#include <stdio.h>
#include <unistd.h>

#include "otc/otc.h"

#ifndef IRIS_CSV
#define IRIS_CSV "examples/data/iris.csv"
#endif

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : IRIS_CSV;
    otc_csv_options csv = {.header = true, .targets = "species"};
    otc_dataset *all, *train, *test;
    otc_standardizer std;
    if (otc_csv_load(path, &csv, &all) || otc_dataset_split(all, 0.3f, 42, &train, &test) ||
        otc_standardizer_fit(train, &std) || otc_standardizer_apply(&std, train) ||
        otc_standardizer_apply(&std, test)) {
        fprintf(stderr, "iris: %s\n", otc_last_error());
        return 2;
    }
    otc_rng rng;
    otc_rng_seed(&rng, 3);
    otc_graph *g = otc_graph_new();
    otc_id in = otc_input(g, "features", otc_shape_2d(OTC_BATCH, 4));
    otc_id logits = otc_mlp(g, in, 2, (int[]){8, 3}, OTC_OP_TANH, -1, &rng);
    otc_id labels = otc_input(g, "species", otc_shape_2d(OTC_BATCH, 1));
    otc_id loss = otc_softmax_ce(g, logits, labels);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_ADAM);
    cfg.lr = 0.01f;
    otc_optimizer *opt = otc_optimizer_new(&cfg);
    otc_dataloader *dl = otc_dataloader_new(train, 16, true, false, 3);

    bool tty = isatty(STDERR_FILENO);
    for (int epoch = 1; epoch <= 150; epoch++) {
        const float *bx, *by;
        float sum = 0, l;
        int n, batches = 0;
        while ((n = otc_dataloader_next(dl, &bx, &by)) > 0) {
            otc_exec_set_input(ex, in, bx, n);
            otc_exec_set_input(ex, labels, by, n);
            if (otc_exec_train_step(ex, loss, opt, &l)) {
                fprintf(stderr, "iris: %s\n", otc_last_error());
                return 2;
            }
            sum += l;
            batches++;
        }
        if (tty) /* one line, rewritten each epoch */
            fprintf(stderr, "\repoch %3d/%d  loss %.4f", epoch, 150, sum / batches);
    }
    if (tty) fputc('\n', stderr);
    otc_exec_set_input(ex, in, test->x, test->rows);
    otc_exec_set_input(ex, labels, test->y, test->rows);
    otc_exec_forward(ex);
    const float *p;
    otc_exec_value(ex, logits, &p, NULL);
    int correct = 0;
    for (int r = 0; r < test->rows; r++) {
        int best = 0;
        for (int c = 1; c < 3; c++)
            if (p[r * 3 + c] > p[r * 3 + best]) best = c;
        correct += best == (int)test->y[r];
    }
    float acc = (float)correct / (float)test->rows;
    printf("iris: held-out accuracy %.1f%% (%d/%d, threshold 95%%)\n", 100 * acc, correct,
           test->rows);
    otc_dataloader_free(dl);
    otc_standardizer_free(&std);
    otc_dataset_free(all);
    otc_dataset_free(train);
    otc_dataset_free(test);
    otc_optimizer_free(opt);
    otc_exec_free(ex);
    otc_graph_free(g);
    return acc >= 0.95f ? 0 : 1;
}
