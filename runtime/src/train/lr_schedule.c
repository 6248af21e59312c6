/* Learning-rate schedules: constant, step decay and cosine annealing, as a pure function of
 * the step so a resumed run picks up exactly where it left off. */
#include <math.h>

#include "otc/optim.h"

float otc_lr_at(const otc_lr_schedule *s, int step) {
    if (!s) return 0.0f;
    if (step < 0) step = 0;
    switch (s->kind) {
    case OTC_SCHED_CONSTANT:
        return s->base_lr;
    case OTC_SCHED_STEP:
        /* PyTorch StepLR: base_lr * gamma^floor(step / step_size); no step_size, no decay. */
        if (s->step_size <= 0) return s->base_lr;
        return (float)((double)s->base_lr * pow((double)s->gamma, (double)(step / s->step_size)));
    case OTC_SCHED_COSINE: {
        /* PyTorch CosineAnnealingLR's closed form, held at min_lr after total_steps. */
        if (s->total_steps <= 0) return s->base_lr;
        if (step >= s->total_steps) return s->min_lr;
        const double pi = 3.14159265358979323846;
        double cosine = cos(pi * (double)step / (double)s->total_steps);
        return (float)((double)s->min_lr +
                       ((double)s->base_lr - (double)s->min_lr) * (1.0 + cosine) / 2.0);
    }
    }
    return s->base_lr;
}
