/* The C library end to end: load a CSV, build a network, train it, save a model `otc run` takes. */
#include <stdio.h>

#include "otc/otc.h"

#ifndef CIRCLE_CSV
#define CIRCLE_CSV "examples/data/circle.csv"
#endif

/* Every call returns a status and leaves the reason in otc_last_error(): report and stop. */
static int failed(void) {
    fprintf(stderr, "library_train: %s\n", otc_last_error());
    return 2;
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: library_train OUT.otm [DATA.csv]\n");
        return 2;
    }
    const char *out_path = argv[1], *csv_path = argc == 3 ? argv[2] : CIRCLE_CSV;

    /* Data: columns x,y are the features, 'inside' (0 or 1) the target; 20% held out. */
    otc_csv_options csv = {.header = true, .targets = "inside"};
    otc_dataset *all, *train, *test;
    if (otc_csv_load(csv_path, &csv, &all) || otc_dataset_split(all, 0.2f, 7, &train, &test))
        return failed();

    /* The model: x [batch, 2] -> 16 tanh -> 1 sigmoid, named and marked as the output. */
    otc_rng rng;
    otc_rng_seed(&rng, 1);
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id prob = otc_mlp(g, x, 2, (int[]){16, 1}, OTC_OP_TANH, OTC_OP_SIGMOID, &rng);
    if (prob < 0 || otc_graph_set_name(g, prob, "inside") || otc_graph_mark_output(g, prob))
        return failed();
    /* What follows (the target and the loss) exists only for training: the model saved is the
     * graph up to here, so `otc run` asks for x alone. */
    int model_nodes = otc_graph_size(g);
    otc_id target = otc_input(g, "target", otc_shape_2d(OTC_BATCH, 1));
    otc_id loss = otc_bce(g, prob, target);
    if (loss < 0) return failed();

    /* Training: Adam on shuffled mini-batches of 32 (the interpreter; the LLVM JIT executor
     * from otc/jit.h would take the same calls). */
    otc_executor *ex = otc_interpreter_new(g, NULL);
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_ADAM);
    cfg.lr = 0.02f;
    otc_optimizer *opt = otc_optimizer_new(&cfg);
    otc_dataloader *dl = otc_dataloader_new(train, 32, true, false, 1);
    if (!ex || !opt || !dl) return failed();
    float epoch_loss = 0;
    for (int epoch = 1; epoch <= 200; epoch++) {
        const float *bx, *by;
        float sum = 0, l;
        int n, batches = 0;
        while ((n = otc_dataloader_next(dl, &bx, &by)) > 0) {
            if (otc_exec_set_input(ex, x, bx, n) || otc_exec_set_input(ex, target, by, n) ||
                otc_exec_train_step(ex, loss, opt, &l))
                return failed();
            sum += l;
            batches++;
        }
        epoch_loss = sum / (float)batches;
    }

    /* Held-out accuracy: the forward pass on the test rows. */
    const float *p;
    if (otc_exec_set_input(ex, x, test->x, test->rows) ||
        otc_exec_set_input(ex, target, test->y, test->rows) || otc_exec_forward(ex) ||
        otc_exec_value(ex, prob, &p, NULL))
        return failed();
    int correct = 0;
    for (int r = 0; r < test->rows; r++) correct += (p[r] > 0.5f) == (test->y[r] > 0.5f);
    printf("library_train: training loss %.4f, held-out accuracy %d/%d\n", epoch_loss, correct,
           test->rows);

    /* Save: weights back into the graph (a no-op for the interpreter, needed for the JIT),
     * the training nodes cut off, then one atomic write. */
    if (otc_exec_sync_params(ex) || otc_graph_truncate(g, model_nodes) ||
        otc_model_save(g, out_path))
        return failed();
    printf("library_train: wrote %s\n", out_path);

    otc_dataloader_free(dl);
    otc_optimizer_free(opt);
    otc_exec_free(ex);
    otc_graph_free(g);
    otc_dataset_free(all);
    otc_dataset_free(train);
    otc_dataset_free(test);
    return 0;
}
