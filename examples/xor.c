/* XOR with a 2→4→1 network trained by Adam: the smallest problem a hidden layer must solve. */
#include <stdio.h>
#include <unistd.h>

#include "otc/otc.h"

int main(void) {
    const float x[4][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
    const float y[4] = {0, 1, 1, 0};
    otc_rng rng;
    otc_rng_seed(&rng, 1);

    otc_graph *g = otc_graph_new();
    otc_id in = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id out = otc_mlp(g, in, 2, (int[]){4, 1}, OTC_OP_TANH, OTC_OP_SIGMOID, &rng);
    otc_id target = otc_input(g, "y", otc_shape_2d(OTC_BATCH, 1));
    otc_id loss = otc_bce(g, out, target);
    if (loss < 0) {
        fprintf(stderr, "xor: %s\n", otc_last_error());
        return 2;
    }
    otc_executor *ex = otc_interpreter_new(g, NULL);
    otc_optim_config cfg = otc_optim_defaults(OTC_OPTIM_ADAM);
    cfg.lr = 0.05f;
    otc_optimizer *opt = otc_optimizer_new(&cfg);
    otc_exec_set_input(ex, in, &x[0][0], 4);
    otc_exec_set_input(ex, target, y, 4);

    bool tty = isatty(STDERR_FILENO);
    float l = 0;
    for (int epoch = 1; epoch <= 500; epoch++) {
        if (otc_exec_train_step(ex, loss, opt, &l)) {
            fprintf(stderr, "xor: %s\n", otc_last_error());
            return 2;
        }
        if (tty) /* one line, rewritten each epoch */
            fprintf(stderr, "\repoch %3d/%d  loss %.5f", epoch, 500, l);
    }
    if (tty) fputc('\n', stderr);
    otc_exec_forward(ex);
    const float *p;
    otc_exec_value(ex, out, &p, NULL);
    int correct = 0;
    for (int i = 0; i < 4; i++) correct += (p[i] > 0.5f) == (y[i] > 0.5f);
    printf("xor: loss %.5f, accuracy %d/4 (outputs %.3f %.3f %.3f %.3f)\n", l, correct, p[0], p[1],
           p[2], p[3]);
    otc_optimizer_free(opt);
    otc_exec_free(ex);
    otc_graph_free(g);
    return correct == 4 ? 0 : 1;
}
