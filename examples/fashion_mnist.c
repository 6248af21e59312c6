/* Fashion-MNIST: a LeNet-style CNN (conv 5x5 - relu - maxpool 2, twice; dense 120 - 84 - 10)
 * trained with Adam on softmax cross-entropy, its learning rate decayed along a cosine to 1/50
 * of --lr, scored on the 10,000 test images after every epoch. The full run reaches 90% test
 * accuracy; options shorten it (the ctest runs a few hundred steps on a subset) and save the
 * trained model for `otc compile`.
 *
 *   example_fashion_mnist [--data DIR] [--epochs N] [--train N] [--test N] [--steps N]
 *                         [--batch B] [--lr X] [--seed N] [--threshold F] [--save FILE.otm]
 *
 * DIR holds train-images-idx3-ubyte.gz etc. (default: Debian's dataset-fashion-mnist). The
 * exit status is 0 when the final test accuracy reaches --threshold (default 0.90). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "otc/otc.h"

#ifndef FASHION_MNIST_DIR
#define FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#endif

typedef struct {
    const char *data, *save;
    int epochs, train, test, steps, batch;
    float lr, threshold;
    unsigned long seed;
} options;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int usage(const char *what) {
    fprintf(stderr,
            "fashion_mnist: %s\nusage: example_fashion_mnist [--data DIR] [--epochs N] "
            "[--train N] [--test N] [--steps N] [--batch B] [--lr X] [--seed N] "
            "[--threshold F] [--save FILE.otm]\n",
            what);
    return 2;
}

static int parse(int argc, char **argv, options *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage("an option without its value");
        char *end;
        double num = strtod(v, &end);
        bool is_num = *v && !*end;
        i++;
        if (!strcmp(a, "--data"))
            o->data = v;
        else if (!strcmp(a, "--save"))
            o->save = v;
        else if (!is_num)
            return usage("a number was expected");
        else if (!strcmp(a, "--epochs") && num >= 1)
            o->epochs = (int)num;
        else if (!strcmp(a, "--train") && num >= 1)
            o->train = (int)num;
        else if (!strcmp(a, "--test") && num >= 1)
            o->test = (int)num;
        else if (!strcmp(a, "--steps") && num >= 1)
            o->steps = (int)num;
        else if (!strcmp(a, "--batch") && num >= 1)
            o->batch = (int)num;
        else if (!strcmp(a, "--lr") && num > 0)
            o->lr = (float)num;
        else if (!strcmp(a, "--seed") && num >= 0)
            o->seed = (unsigned long)num;
        else if (!strcmp(a, "--threshold") && num >= 0 && num <= 1)
            o->threshold = (float)num;
        else
            return usage("unknown option or value out of range");
    }
    return 0;
}

/* The progress line the otc command draws (on stderr, only on a terminal): label, bar,
 * count, status; redrawn at most ten times a second. */
static void progress(const char *label, int done, int total, float loss) {
    static double last;
    double t = now();
    if (done < total && t - last < 0.1) return;
    last = t;
    enum { WIDTH = 24 };
    char bar[WIDTH + 1];
    int fill = (int)((long long)done * WIDTH / total);
    for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = '\0';
    fprintf(stderr, "\r%s [%s] %d/%d loss %.4f\033[K", label, bar, done, total, loss);
    fflush(stderr);
}

/* Builds the CNN on x [B,1,28,28]; returns the logits [B,10]. */
static otc_id lenet(otc_graph *g, otc_id x, otc_rng *rng) {
    otc_pool2d_params pool = {.kernel_h = 2, .kernel_w = 2};
    otc_conv2d_params same = {.pad_h = 2, .pad_w = 2};
    otc_id h = otc_conv2d_layer(g, x, 6, 5, &same, rng, "conv1");               /* [B,6,28,28] */
    h = otc_maxpool2d(g, "pool1", otc_activation(g, OTC_OP_RELU, h, 0), &pool); /* 14x14 */
    h = otc_conv2d_layer(g, h, 16, 5, NULL, rng, "conv2");                      /* [B,16,10,10] */
    h = otc_maxpool2d(g, "pool2", otc_activation(g, OTC_OP_RELU, h, 0), &pool); /* 5x5 */
    h = otc_flatten(g, h);                                                      /* [B,400] */
    h = otc_activation(g, OTC_OP_RELU, otc_linear(g, h, 120, rng, "fc1"), 0);
    h = otc_activation(g, OTC_OP_RELU, otc_linear(g, h, 84, rng, "fc2"), 0);
    return otc_linear(g, h, 10, rng, "fc3");
}

/* Test accuracy over the first n rows of d, a chunk at a time. */
static float accuracy(otc_executor *ex, otc_id in, otc_id labels, otc_id logits,
                      const otc_dataset *d, int n) {
    int correct = 0;
    for (int r0 = 0; r0 < n; r0 += 500) {
        int rows = n - r0 < 500 ? n - r0 : 500;
        const float *p;
        if (otc_exec_set_input(ex, in, d->x + (size_t)r0 * 784, rows) ||
            otc_exec_set_input(ex, labels, d->y + r0, rows) || otc_exec_forward(ex) ||
            otc_exec_value(ex, logits, &p, NULL))
            return -1;
        for (int r = 0; r < rows; r++) {
            int best = 0;
            for (int c = 1; c < 10; c++)
                if (p[r * 10 + c] > p[r * 10 + best]) best = c;
            correct += best == (int)d->y[r0 + r];
        }
    }
    return (float)correct / (float)n;
}

int main(int argc, char **argv) {
    options o = {FASHION_MNIST_DIR, NULL, 12, 0, 0, 0, 64, 0.001f, 0.90f, 1};
    if (parse(argc, argv, &o)) return 2;
    otc_dataset *train = NULL, *test = NULL;
    otc_idx_info info;
    if (otc_idx_load_dir(o.data, "train", &(otc_idx_options){.max_items = o.train}, &train,
                         &info) ||
        otc_idx_load_dir(o.data, "t10k", &(otc_idx_options){.max_items = o.test}, &test, NULL)) {
        fprintf(stderr, "fashion_mnist: %s\n", otc_last_error());
        otc_dataset_free(train);
        return 2;
    }
    if (info.height != 28 || info.width != 28) {
        fprintf(stderr, "fashion_mnist: %s holds %dx%d images, not 28x28\n", o.data, info.height,
                info.width);
        return 2;
    }

    otc_rng rng;
    otc_rng_seed(&rng, o.seed);
    otc_graph *g = otc_graph_new();
    otc_id in = otc_input(g, "image", (otc_shape){4, {OTC_BATCH, 1, 28, 28}});
    otc_id logits = lenet(g, in, &rng);
    if (logits < 0 || otc_graph_set_name(g, logits, "logits") || otc_graph_mark_output(g, logits)) {
        fprintf(stderr, "fashion_mnist: %s\n", otc_last_error());
        return 2;
    }
    otc_id labels = otc_input(g, "label", otc_shape_2d(OTC_BATCH, 1));
    otc_id loss = otc_softmax_ce(g, logits, labels);
    otc_executor *ex = otc_interpreter_new(g, NULL);
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_ADAM);
    cfg.lr = o.lr;
    otc_optimizer *opt = otc_optimizer_new(&cfg);
    otc_dataloader *dl = otc_dataloader_new(train, o.batch, true, false, o.seed);
    if (loss < 0 || !ex || !opt || !dl) {
        fprintf(stderr, "fashion_mnist: %s\n", otc_last_error());
        return 2;
    }
    printf("fashion_mnist: %d training and %d test images, batch %d, Adam lr %g\n", train->rows,
           test->rows, o.batch, (double)o.lr);

    int batches = otc_dataloader_batches(dl), total = o.epochs * batches;
    if (o.steps && o.steps < total) total = o.steps;
    otc_lr_schedule sched = {
        .kind = OTC_SCHED_COSINE, .base_lr = o.lr, .min_lr = o.lr / 50, .total_steps = total};
    bool tty = isatty(STDERR_FILENO);
    double t0 = now(), reached = -1;
    float acc = 0;
    int step = 0;
    for (int epoch = 1; epoch <= o.epochs && !(o.steps && step >= o.steps); epoch++) {
        char label[32];
        snprintf(label, sizeof label, "epoch %d/%d", epoch, o.epochs);
        const float *bx, *by;
        double sum = 0;
        int n, b = 0;
        while ((n = otc_dataloader_next(dl, &bx, &by)) > 0) {
            if (o.steps && step >= o.steps) continue; /* finish the epoch's pass unused */
            float l;
            otc_optimizer_set_lr(opt, otc_lr_at(&sched, step));
            if (otc_exec_set_input(ex, in, bx, n) || otc_exec_set_input(ex, labels, by, n) ||
                otc_exec_train_step(ex, loss, opt, &l)) {
                fprintf(stderr, "\nfashion_mnist: %s\n", otc_last_error());
                return 2;
            }
            sum += l;
            step++;
            b++;
            if (tty) progress(label, b, batches, (float)(sum / b));
        }
        if (tty) fprintf(stderr, "\r\033[K");
        acc = accuracy(ex, in, labels, logits, test, test->rows);
        if (acc < 0) {
            fprintf(stderr, "fashion_mnist: %s\n", otc_last_error());
            return 2;
        }
        double t = now() - t0;
        if (reached < 0 && acc >= 0.90f) reached = t;
        printf("epoch %2d  step %6d  train loss %.4f  test accuracy %.2f%%  (%.1f s)\n", epoch,
               step, b ? sum / b : 0.0, 100 * acc, t);
        fflush(stdout);
    }
    if (reached >= 0) printf("fashion_mnist: 90%% test accuracy after %.1f s\n", reached);
    printf("fashion_mnist: test accuracy %.2f%% (threshold %.0f%%)\n", 100 * acc,
           100 * o.threshold);
    int rc = acc >= o.threshold ? 0 : 1;
    otc_dataloader_free(dl);
    otc_optimizer_free(opt);
    otc_exec_sync_params(ex);
    otc_exec_free(ex);
    if (o.save) {
        /* the model alone: image -> logits, with the trained weights (labels and loss are
         * for training) */
        otc_graph *model = otc_graph_inference(g);
        if (!model || otc_model_save(model, o.save)) {
            fprintf(stderr, "fashion_mnist: %s\n", otc_last_error());
            rc = 2;
        } else {
            printf("fashion_mnist: wrote %s\n", o.save);
        }
        otc_graph_free(model);
    }
    otc_graph_free(g);
    otc_dataset_free(train);
    otc_dataset_free(test);
    return rc;
}
