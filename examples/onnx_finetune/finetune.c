/* On-device fine-tuning of an imported PyTorch model (docs/onnx.md): drives the C that
 * `otc compile --emit-c --name lenet --train --train-only fc --loss softmax_ce` writes for
 * an image classifier. It measures the accuracy on IDX test images, runs training steps on
 * IDX training images with the emitted lenet_train_step (forward, backward and the optimiser
 * update in place, no allocation) and measures again. Built for the device
 * (aarch64-linux-gnu-gcc -static ... and run under qemu-aarch64 in scripts/demo.sh) or the
 * host (the test onnx_finetune_matches_train).
 * Usage: finetune DIR [--steps N] [--batch B] [--from I] [--images N] [--test N]
 *                     [--losses] [--logits K]
 *   DIR holds the uncompressed IDX files train-images-idx3-ubyte, train-labels-idx1-ubyte,
 *   t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte. Training takes batches of B (default
 *   32) in order from training image I (default 0) through N images (default all), wrapping
 *   around; --test evaluates the first N test images (default all); --losses prints each
 *   step's loss; --logits prints the outputs for the first K test images after training. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lenet.h"

typedef struct {
    float *x;     /* n images of LENET_IN_FLOATS pixels in [0, 1] */
    float *label; /* n class indices, as the softmax_ce target takes them */
    int n;
} images;

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The whole file; NULL with a message on failure. */
static unsigned char *slurp(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) >= 8 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)*len)) && fread(buf, 1, (size_t)*len, f) != (size_t)*len) {
        free(buf);
        buf = NULL;
    }
    if (f) fclose(f);
    if (!buf) fprintf(stderr, "finetune: cannot read %s\n", path);
    return buf;
}

/* DIR/PREFIX-images-idx3-ubyte and DIR/PREFIX-labels-idx1-ubyte. */
static int load(const char *dir, const char *prefix, images *out) {
    char path[1024];
    long il = 0, ll = 0;
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, prefix);
    unsigned char *im = slurp(path, &il);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", dir, prefix);
    unsigned char *lb = im ? slurp(path, &ll) : NULL;
    int ok = lb && il >= 16 && be32(im) == 0x803 && be32(lb) == 0x801 &&
             be32(im + 4) == be32(lb + 4) && be32(im + 8) * be32(im + 12) == LENET_IN_FLOATS &&
             (long)be32(im + 4) * LENET_IN_FLOATS + 16 <= il && (long)be32(lb + 4) + 8 <= ll;
    if (ok) {
        out->n = (int)be32(im + 4);
        out->x = malloc((size_t)out->n * LENET_IN_FLOATS * sizeof *out->x);
        out->label = malloc((size_t)out->n * sizeof *out->label);
        ok = out->x && out->label;
        for (long k = 0; ok && k < (long)out->n * LENET_IN_FLOATS; k++)
            out->x[k] = (float)im[16 + k] / 255.0f;
        for (int k = 0; ok && k < out->n; k++) out->label[k] = (float)lb[8 + k];
    } else if (lb) {
        fprintf(stderr, "finetune: %s/%s-*: not IDX images of %d pixels with their labels\n", dir,
                prefix, LENET_IN_FLOATS);
    }
    free(im);
    free(lb);
    return ok ? 0 : 1;
}

/* The share of the first n test images whose largest output is their label. */
static double accuracy(const lenet_params *p, const images *t, int n, void *ws, int chunk) {
    static float out[100 * LENET_OUT_FLOATS];
    int right = 0;
    for (int i = 0; i < n; i += chunk) {
        int b = n - i < chunk ? n - i : chunk;
        lenet_forward(p, t->x + (size_t)i * LENET_IN_FLOATS, out, b, ws);
        for (int r = 0; r < b; r++) {
            int best = 0;
            for (int c = 1; c < LENET_OUT_FLOATS; c++)
                if (out[r * LENET_OUT_FLOATS + c] > out[r * LENET_OUT_FLOATS + best]) best = c;
            right += best == (int)t->label[i + r];
        }
    }
    return (double)right / n;
}

static lenet_params params; /* the weights and Adam's state: 740 KB, static */

int main(int argc, char **argv) {
    int steps = 100, batch = 32, from = 0, n_train = -1, n_test = -1, logits = 0, losses = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: finetune DIR [--steps N] [--batch B] [--from I] [--images N] "
                        "[--test N] [--losses] [--logits K]\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        int *opt = !strcmp(argv[i], "--steps")    ? &steps
                   : !strcmp(argv[i], "--batch")  ? &batch
                   : !strcmp(argv[i], "--from")   ? &from
                   : !strcmp(argv[i], "--images") ? &n_train
                   : !strcmp(argv[i], "--test")   ? &n_test
                   : !strcmp(argv[i], "--logits") ? &logits
                                                  : NULL;
        if (!strcmp(argv[i], "--losses")) {
            losses = 1;
        } else if (!opt || i + 1 == argc || (*opt = atoi(argv[++i])) < 0) {
            fprintf(stderr, "finetune: bad option %s\n", argv[i]);
            return 2;
        }
    }
    images train, test;
    if (load(argv[1], "train", &train) || load(argv[1], "t10k", &test)) return 2;
    if (n_train < 0 || from + n_train > train.n) n_train = train.n - from;
    if (n_test < 0 || n_test > test.n) n_test = test.n;
    if (batch < 1 || batch > n_train || n_test < 1 || logits > n_test || logits > 100) {
        fprintf(stderr, "finetune: --batch 1..%d, --test 1..%d, --logits 0..100\n", n_train,
                test.n);
        return 2;
    }
    size_t wsb = LENET_TRAIN_WORKSPACE_BYTES(batch);
    if (wsb < LENET_WORKSPACE_BYTES(100)) wsb = LENET_WORKSPACE_BYTES(100);
    void *ws = malloc(wsb);
    float *x = malloc((size_t)batch * LENET_IN_FLOATS * sizeof *x);
    float *y = malloc((size_t)batch * sizeof *y);
    if (!ws || !x || !y) return 2;

    lenet_params_init(&params);
    printf("accuracy before: %.4f on %d test images\n", accuracy(&params, &test, n_test, ws, 100),
           n_test);
    double sum = 0;
    int next = 0, report = steps >= 10 ? steps / 5 : steps;
    for (int s = 1; s <= steps; s++) {
        for (int r = 0; r < batch; r++, next = (next + 1) % n_train) {
            memcpy(x + (size_t)r * LENET_IN_FLOATS,
                   train.x + (size_t)(from + next) * LENET_IN_FLOATS, LENET_IN_FLOATS * sizeof *x);
            y[r] = train.label[from + next];
        }
        float loss = 0;
        if (lenet_train_step(&params, x, y, batch, LENET_LR, &loss, ws)) {
            fprintf(stderr, "finetune: a label outside 0..%d\n", LENET_OUT_FLOATS - 1);
            return 1;
        }
        if (losses) printf("step %d loss %.6f\n", s, loss);
        sum += loss;
        if (!losses && s % report == 0) {
            printf("steps %d-%d: mean loss %.4f\n", s - report + 1, s, sum / report);
            sum = 0;
        }
    }
    printf("accuracy after %d steps of %d images: %.4f on %d test images\n", steps, batch,
           accuracy(&params, &test, n_test, ws, 100), n_test);
    if (logits) {
        static float out[100 * LENET_OUT_FLOATS];
        lenet_forward(&params, test.x, out, logits, ws);
        for (int r = 0; r < logits; r++)
            for (int c = 0; c < LENET_OUT_FLOATS; c++)
                printf("%.9g%c", out[r * LENET_OUT_FLOATS + c],
                       c == LENET_OUT_FLOATS - 1 ? '\n' : ',');
    }
    free(ws);
    free(x);
    free(y);
    free(train.x);
    free(train.label);
    free(test.x);
    free(test.label);
    return 0;
}
