/* Regression of sin(x) on [-pi, pi] with a 1→32→1 tanh network and mini-batches. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "otc/otc.h"

#define N  256
#define PI 3.14159265358979f

int main(void) {
    otc_dataset *d = otc_dataset_new(N, 1, 1);
    for (int i = 0; i < N; i++) {
        d->x[i] = -PI + 2.0f * PI * (float)i / (N - 1);
        d->y[i] = sinf(d->x[i]);
    }
    otc_rng rng;
    otc_rng_seed(&rng, 7);
    otc_graph *g = otc_graph_new();
    otc_id in = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id out = otc_mlp(g, in, 2, (int[]){32, 1}, OTC_OP_TANH, -1, &rng);
    otc_id target = otc_input(g, "y", otc_shape_2d(OTC_BATCH, 1));
    otc_id loss = otc_mse(g, out, target);
    if (loss < 0) {
        fprintf(stderr, "sine: %s\n", otc_last_error());
        return 2;
    }
    otc_executor *ex = otc_interpreter_new(g, NULL);
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_ADAM);
    otc_optimizer *opt = otc_optimizer_new(&cfg);
    otc_lr_schedule sched = {.kind = OTC_SCHED_COSINE, .base_lr = 0.02f, .min_lr = 0.0005f};
    otc_dataloader *dl = otc_dataloader_new(d, 32, true, false, 7);
    int epochs = 600;
    sched.total_steps = epochs * otc_dataloader_batches(dl);

    bool tty = isatty(STDERR_FILENO);
    int step = 0;
    for (int epoch = 1; epoch <= epochs; epoch++) {
        const float *bx, *by;
        float sum = 0;
        int n, batches = 0;
        while ((n = otc_dataloader_next(dl, &bx, &by)) > 0) {
            float l;
            otc_optimizer_set_lr(opt, otc_lr_at(&sched, step++));
            otc_exec_set_input(ex, in, bx, n);
            otc_exec_set_input(ex, target, by, n);
            if (otc_exec_train_step(ex, loss, opt, &l)) {
                fprintf(stderr, "sine: %s\n", otc_last_error());
                return 2;
            }
            sum += l;
            batches++;
        }
        if (tty) /* one line, rewritten each epoch */
            fprintf(stderr, "\repoch %3d/%d  loss %.6f", epoch, epochs, sum / batches);
    }
    if (tty) fputc('\n', stderr);
    /* Max error on a finer grid than the training points. */
    float grid[1001], truth[1001];
    for (int i = 0; i <= 1000; i++) {
        grid[i] = -PI + 2.0f * PI * (float)i / 1000;
        truth[i] = sinf(grid[i]);
    }
    otc_exec_set_input(ex, in, grid, 1001);
    otc_exec_set_input(ex, target, truth, 1001);
    otc_exec_forward(ex);
    const float *p;
    otc_exec_value(ex, out, &p, NULL);
    float worst = 0;
    for (int i = 0; i <= 1000; i++) worst = fmaxf(worst, fabsf(p[i] - truth[i]));
    printf("sine: max abs error %.4f on 1001 points in [-pi, pi] (threshold 0.1)\n", worst);
    otc_dataloader_free(dl);
    otc_dataset_free(d);
    otc_optimizer_free(opt);
    otc_exec_free(ex);
    otc_graph_free(g);
    return worst < 0.1f ? 0 : 1;
}
