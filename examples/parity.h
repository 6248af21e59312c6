/* The parity examples' shared program: classify the parity of a bit string read one bit per
 * step by a recurrent layer (RNN, LSTM or GRU) and a linear layer on its last state, trained
 * with backpropagation through time on bucketed batches, scored on held-out strings. */
#ifndef OTC_EXAMPLE_PARITY_H
#define OTC_EXAMPLE_PARITY_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "otc/otc.h"

typedef struct {
    const char *name;
    otc_cell cell;
    int hidden;
    int n_lengths;
    const int *lengths; /* every bit string of each length is in the data set */
    int epochs;         /* default; --epochs N overrides */
    float lr;
    float threshold; /* held-out accuracy the run must reach */
} parity_config;

/* Every bit string of the configured lengths; each step's target is the parity of the bits so
 * far, so the last step's is the string's. */
static otc_seq_dataset *parity_data(const parity_config *c) {
    int n = 0;
    for (int i = 0; i < c->n_lengths; i++) n += 1 << c->lengths[i];
    int *len = malloc((size_t)n * sizeof *len);
    if (!len) return NULL;
    for (int i = 0, k = 0; i < c->n_lengths; i++)
        for (int s = 0; s < 1 << c->lengths[i]; s++) len[k++] = c->lengths[i];
    otc_seq_dataset *d = otc_seq_dataset_new(n, len, 1, 1);
    free(len);
    if (!d) return NULL;
    for (int i = 0, k = 0; i < c->n_lengths; i++)
        for (int s = 0; s < 1 << c->lengths[i]; s++, k++) {
            int parity = 0;
            for (int t = 0; t < c->lengths[i]; t++) {
                int bit = (s >> t) & 1;
                parity ^= bit;
                d->data->x[d->start[k] + t] = (float)bit;
                d->data->y[d->start[k] + t] = (float)parity;
            }
        }
    return d;
}

typedef struct {
    otc_graph *g;
    otc_id in, logits, labels, loss;
    otc_executor *ex;
} parity_net;

/* Run one batch of B sequences of T steps from a reset state; with opt, train on it through
 * time on the loss summed over every step (the parity so far: learning from the last step's
 * answer alone works too, but stalls for hundreds of epochs on parity's plateau first).
 * Returns the batch's correct answers at the last step (or -1) and adds its loss there to
 * *loss. */
static int parity_batch(parity_net *n, otc_optimizer *opt, int T, int B, const float *x,
                        const float *y, float *loss) {
    otc_exec_reset_state(n->ex);
    if (opt && otc_exec_seq_begin(n->ex, T)) return -1;
    for (int t = 0; t < T; t++)
        if (otc_exec_set_input(n->ex, n->in, x + (size_t)t * B, B) ||
            otc_exec_set_input(n->ex, n->labels, y + (size_t)t * B, B) || otc_exec_forward(n->ex))
            return -1;
    const float *l, *p;
    if (otc_exec_value(n->ex, n->loss, &l, NULL) || otc_exec_value(n->ex, n->logits, &p, NULL))
        return -1;
    *loss += l[0];
    int correct = 0;
    const float *last = y + (size_t)(T - 1) * B;
    for (int b = 0; b < B; b++) correct += (p[2 * b + 1] > p[2 * b]) == (last[b] > 0.5f);
    if (opt) {
        otc_exec_zero_grad(n->ex);
        if (otc_exec_seq_backward(n->ex, n->loss, NULL) || otc_exec_optimizer_step(n->ex, opt))
            return -1;
    }
    return correct;
}

/* One pass over d (training when opt is given): accuracy of the last-step answers. */
static float parity_epoch(parity_net *n, otc_seq_loader *l, otc_optimizer *opt, float *loss) {
    int T, B, correct = 0, total = 0, batches = 0;
    const float *x, *y;
    *loss = 0;
    while ((B = otc_seq_loader_next(l, &T, &x, &y, NULL)) > 0) {
        int c = parity_batch(n, opt, T, B, x, y, loss);
        if (c < 0) return -1;
        correct += c;
        total += B;
        batches++;
    }
    *loss /= (float)(batches ? batches : 1);
    return total ? (float)correct / (float)total : 0;
}

static int parity_main(int argc, char **argv, const parity_config *c) {
    int epochs = c->epochs;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--epochs") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            epochs = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--epochs N]   (default %d)\n", c->name, c->epochs);
            return 2;
        }
    }
    otc_seq_dataset *all = parity_data(c), *train = NULL, *test = NULL;
    if (!all || otc_seq_dataset_split(all, 0.25f, 11, &train, &test)) {
        fprintf(stderr, "%s: %s\n", c->name, otc_last_error());
        return 2;
    }
    otc_rng rng;
    otc_rng_seed(&rng, 5);
    parity_net n = {.g = otc_graph_new()};
    n.in = otc_input(n.g, "bit", otc_shape_2d(OTC_BATCH, 1));
    otc_id h = otc_recurrent(n.g, c->cell, n.in, c->hidden, 1, &rng, "rnn");
    n.logits = otc_linear(n.g, h, 2, &rng, "fc");
    n.labels = otc_input(n.g, "parity", otc_shape_2d(OTC_BATCH, 1));
    n.loss = otc_softmax_ce(n.g, n.logits, n.labels);
    if (n.loss < 0 || !(n.ex = otc_interpreter_new(n.g, NULL))) {
        fprintf(stderr, "%s: %s\n", c->name, otc_last_error());
        return 2;
    }
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_ADAM);
    cfg.lr = c->lr;
    otc_optimizer *opt = otc_optimizer_new(&cfg);
    otc_seq_loader *tl = otc_seq_loader_new(train, 32, true, false, 5);
    otc_seq_loader *vl = otc_seq_loader_new(test, 256, false, false, 5);

    bool tty = isatty(STDOUT_FILENO);
    float acc = 0, loss;
    for (int epoch = 1; epoch <= epochs; epoch++) {
        float train_acc = parity_epoch(&n, tl, opt, &loss);
        if (train_acc < 0) {
            fprintf(stderr, "%s: %s\n", c->name, otc_last_error());
            return 2;
        }
        if (tty) /* one line, rewritten each epoch */
            printf("\repoch %3d/%d  loss %.4f  train accuracy %.3f", epoch, epochs, loss,
                   train_acc);
        fflush(stdout);
    }
    if (tty) putchar('\n');
    acc = parity_epoch(&n, vl, NULL, &loss);
    printf("%s: held-out accuracy %.3f on %d bit strings (threshold %.2f)\n", c->name, acc, test->n,
           c->threshold);
    otc_seq_loader_free(tl);
    otc_seq_loader_free(vl);
    otc_seq_dataset_free(all);
    otc_seq_dataset_free(train);
    otc_seq_dataset_free(test);
    otc_optimizer_free(opt);
    otc_exec_free(n.ex);
    otc_graph_free(n.g);
    return acc >= c->threshold ? 0 : 1;
}

#endif
