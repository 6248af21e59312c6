/* Tests for the optimisers and learning-rate schedules: hand-computed steps, an independent
 * double-precision reference of the torch.optim update rules, and convergence on a quadratic. */
#include "harness.h"

#include "otc/optim.h"

/* ---- an independent reference, in double, written from the torch.optim documentation ---- */

typedef struct {
    int kind; /* 0 SGD, 1 Adam, 2 AdamW */
    double lr, momentum, beta1, beta2, eps, wd;
    int nesterov;
    double b[8], m[8], v[8];
    int t;
} ref_optim;

static void ref_step(ref_optim *r, double *p, const double *grad, int n) {
    r->t++;
    for (int i = 0; i < n; i++) {
        double g = grad[i];
        if (r->kind == 0) {
            if (r->wd != 0) g = g + r->wd * p[i];
            if (r->momentum != 0) {
                r->b[i] = r->t == 1 ? g : r->momentum * r->b[i] + g;
                g = r->nesterov ? g + r->momentum * r->b[i] : r->b[i];
            }
            p[i] = p[i] - r->lr * g;
        } else {
            if (r->kind == 2)
                p[i] = p[i] - r->lr * r->wd * p[i];
            else if (r->wd != 0)
                g = g + r->wd * p[i];
            r->m[i] = r->beta1 * r->m[i] + (1 - r->beta1) * g;
            r->v[i] = r->beta2 * r->v[i] + (1 - r->beta2) * g * g;
            double mhat = r->m[i] / (1 - pow(r->beta1, r->t));
            double vhat = r->v[i] / (1 - pow(r->beta2, r->t));
            p[i] = p[i] - r->lr * mhat / (sqrt(vhat) + r->eps);
        }
    }
}

static ref_optim ref_from(const otc_optim_config *c) {
    ref_optim r = {0};
    r.kind = c->kind == OTC_OPTIM_SGD ? 0 : c->kind == OTC_OPTIM_ADAM ? 1 : 2;
    r.lr = c->lr;
    r.momentum = c->momentum;
    r.nesterov = c->nesterov;
    r.beta1 = c->beta1;
    r.beta2 = c->beta2;
    r.eps = c->eps;
    r.wd = c->weight_decay;
    return r;
}

/* A gradient that depends on the parameters, so a wrong state update shows: the gradient of
 * sum_i a_i/2 p_i^2 + c_i p_i + sin(p_i). */
static const double grad_a[5] = {1.0, 0.5, 3.0, 0.2, 1.5};
static const double grad_c[5] = {0.3, -1.0, 0.0, 2.0, -0.4};
static double grad_of(int i, double p) {
    return grad_a[i] * p + grad_c[i] + cos(p);
}

/* Runs `steps` steps of the optimiser and of the reference from the same start, over two
 * groups (3 + 2 values), and compares every parameter after every step. */
static void compare_with_reference(const otc_optim_config *c, int steps, double tol) {
    otc_optimizer *opt = otc_optimizer_new(c);
    REQUIRE(opt);
    ref_optim ref = ref_from(c);
    float p[5] = {1.0f, -2.0f, 0.5f, 3.0f, -0.25f};
    double pd[5];
    for (int i = 0; i < 5; i++) pd[i] = p[i];
    for (int s = 0; s < steps; s++) {
        float g[5];
        double gd[5];
        for (int i = 0; i < 5; i++) {
            /* Each side's gradient from its own parameters: they differ by rounding only. */
            g[i] = (float)grad_of(i, p[i]);
            gd[i] = grad_of(i, pd[i]);
        }
        float *params[2] = {p, p + 3};
        const float *grads[2] = {g, g + 3};
        size_t sizes[2] = {3, 2};
        REQUIRE(otc_optimizer_step(opt, 2, params, grads, sizes) == OTC_OK);
        ref_step(&ref, pd, gd, 5);
        for (int i = 0; i < 5; i++)
            CHECK_MSG(fabs(p[i] - pd[i]) <= tol * (1 + fabs(pd[i])),
                      "step %d p[%d] = %.9g, want %.9g", s + 1, i, p[i], pd[i]);
    }
    CHECK(otc_optimizer_steps(opt) == steps);
    otc_optimizer_free(opt);
}

/* One group of one value with a constant gradient, for the hand-computed cases. */
static float step_const(otc_optimizer *opt, float *p, float grad) {
    float *params[1] = {p};
    const float *grads[1] = {&grad};
    size_t sizes[1] = {1};
    otc_status st = otc_optimizer_step(opt, 1, params, grads, sizes);
    CHECK(st == OTC_OK);
    return *p;
}

TEST(optim_defaults_and_names) {
    otc_optim_config s = otc_optim_defaults(OTC_OPTIM_SGD);
    CHECK(s.lr == 0.01f);
    CHECK(s.momentum == 0 && !s.nesterov && s.weight_decay == 0);
    otc_optim_config a = otc_optim_defaults(OTC_OPTIM_ADAM);
    CHECK(a.lr == 0.001f);
    CHECK(a.beta1 == 0.9f);
    CHECK(a.beta2 == 0.999f);
    CHECK(a.eps == 1e-8f);
    CHECK(a.weight_decay == 0);
    otc_optim_config w = otc_optim_defaults(OTC_OPTIM_ADAMW);
    CHECK(w.kind == OTC_OPTIM_ADAMW);
    CHECK(w.weight_decay == 0.01f && w.lr == 0.001f);
    CHECK(otc_optim_kind_from_name("sgd") == OTC_OPTIM_SGD);
    CHECK(otc_optim_kind_from_name("Adam") == OTC_OPTIM_ADAM);
    CHECK(otc_optim_kind_from_name("adamw") == OTC_OPTIM_ADAMW);
    CHECK(otc_optim_kind_from_name("adamx") == -1);
    CHECK(otc_optim_kind_from_name("") == -1);
    CHECK(otc_optim_kind_from_name(NULL) == -1);
}

TEST(optim_sgd_hand_computed) {
    /* Plain SGD, lr 0.1, gradient 1: p = 1 - 0.1 k. */
    otc_optim_config c = otc_optim_defaults(OTC_OPTIM_SGD);
    c.lr = 0.1f;
    otc_optimizer *opt = otc_optimizer_new(&c);
    REQUIRE(opt);
    float p = 1.0f;
    CHECK_NEAR(step_const(opt, &p, 1.0f), 0.9, 1e-6);
    CHECK_NEAR(step_const(opt, &p, 1.0f), 0.8, 1e-6);
    otc_optimizer_free(opt);

    /* Momentum 0.9: b = 1, 1.9, 2.71 -> p = 0.9, 0.71, 0.439. */
    c.momentum = 0.9f;
    opt = otc_optimizer_new(&c);
    REQUIRE(opt);
    p = 1.0f;
    CHECK_NEAR(step_const(opt, &p, 1.0f), 0.9, 1e-6);
    CHECK_NEAR(step_const(opt, &p, 1.0f), 0.71, 1e-6);
    CHECK_NEAR(step_const(opt, &p, 1.0f), 0.439, 1e-6);
    otc_optimizer_free(opt);

    /* Nesterov: b = 1, 1.9; the step uses g + 0.9 b = 1.9, 2.71 -> p = 0.81, 0.539. */
    c.nesterov = true;
    opt = otc_optimizer_new(&c);
    REQUIRE(opt);
    p = 1.0f;
    CHECK_NEAR(step_const(opt, &p, 1.0f), 0.81, 1e-6);
    CHECK_NEAR(step_const(opt, &p, 1.0f), 0.539, 1e-6);
    otc_optimizer_free(opt);

    /* L2 weight decay 0.5, no momentum, gradient 0: p *= 1 - 0.1 * 0.5. */
    c = otc_optim_defaults(OTC_OPTIM_SGD);
    c.lr = 0.1f;
    c.weight_decay = 0.5f;
    opt = otc_optimizer_new(&c);
    REQUIRE(opt);
    p = 2.0f;
    CHECK_NEAR(step_const(opt, &p, 0.0f), 1.9, 1e-6);
    CHECK_NEAR(step_const(opt, &p, 0.0f), 1.805, 1e-6);
    otc_optimizer_free(opt);
}

TEST(optim_adam_and_adamw_hand_computed) {
    /* A constant gradient makes the bias-corrected moments exactly g and g^2, so each Adam
     * step moves lr * g / (|g| + eps), i.e. lr: 1 -> 0.9 -> 0.8 -> 0.7. */
    otc_optim_config c = otc_optim_defaults(OTC_OPTIM_ADAM);
    c.lr = 0.1f;
    otc_optimizer *opt = otc_optimizer_new(&c);
    REQUIRE(opt);
    float p = 1.0f;
    CHECK_NEAR(step_const(opt, &p, 2.0f), 0.9, 1e-6);
    CHECK_NEAR(step_const(opt, &p, 2.0f), 0.8, 1e-6);
    CHECK_NEAR(step_const(opt, &p, 2.0f), 0.7, 1e-6);
    otc_optimizer_free(opt);

    /* First Adam step with a gradient of -3 and beta1 0.5: still exactly lr in size. */
    c.beta1 = 0.5f;
    opt = otc_optimizer_new(&c);
    REQUIRE(opt);
    p = 0.0f;
    CHECK_NEAR(step_const(opt, &p, -3.0f), 0.1, 1e-6);
    /* Second step, gradient +1: m = 0.5*(-1.5) + 0.5 = -0.25, mhat = -0.25/0.75 = -1/3;
     * v = 0.999*0.009 + 0.001 = 0.009991, vhat = 0.009991/0.001999 = 4.99799..;
     * p = 0.1 + 0.1 * (1/3) / sqrt(vhat). */
    double vhat = (0.999 * 0.009 + 0.001) / (1 - 0.999 * 0.999);
    CHECK_NEAR(step_const(opt, &p, 1.0f), 0.1 + 0.1 * (1.0 / 3.0) / sqrt(vhat), 1e-6);
    otc_optimizer_free(opt);

    /* AdamW, lr 0.1, decay 0.1: p *= 0.99 before the Adam step of size lr. */
    c = otc_optim_defaults(OTC_OPTIM_ADAMW);
    c.lr = 0.1f;
    c.weight_decay = 0.1f;
    opt = otc_optimizer_new(&c);
    REQUIRE(opt);
    p = 1.0f;
    CHECK_NEAR(step_const(opt, &p, 2.0f), 0.89, 1e-6);
    CHECK_NEAR(step_const(opt, &p, 2.0f), 0.89 * 0.99 - 0.1, 1e-6);
    otc_optimizer_free(opt);
}

TEST(optim_sgd_matches_reference) {
    otc_optim_config c = otc_optim_defaults(OTC_OPTIM_SGD);
    c.lr = 0.05f;
    compare_with_reference(&c, 8, 2e-6);
    c.momentum = 0.9f;
    c.weight_decay = 0.1f;
    compare_with_reference(&c, 8, 2e-6);
    c.nesterov = true;
    compare_with_reference(&c, 8, 2e-6);
}

TEST(optim_adam_matches_reference) {
    otc_optim_config c = otc_optim_defaults(OTC_OPTIM_ADAM);
    c.lr = 0.05f;
    compare_with_reference(&c, 10, 2e-6);
    c.beta1 = 0.8f;
    c.beta2 = 0.99f;
    c.eps = 1e-3f;
    c.weight_decay = 0.2f; /* L2 through the gradient */
    compare_with_reference(&c, 10, 2e-6);
}

TEST(optim_adamw_matches_reference_and_differs_from_adam_l2) {
    otc_optim_config c = otc_optim_defaults(OTC_OPTIM_ADAMW);
    c.lr = 0.05f;
    c.weight_decay = 0.3f;
    compare_with_reference(&c, 10, 2e-6);

    /* Decoupled decay is not L2: the same settings under Adam end elsewhere. */
    otc_optim_config a = c;
    a.kind = OTC_OPTIM_ADAM;
    otc_optimizer *ow = otc_optimizer_new(&c), *oa = otc_optimizer_new(&a);
    REQUIRE(ow && oa);
    float pw = 3.0f, pa = 3.0f;
    for (int i = 0; i < 5; i++) {
        step_const(ow, &pw, 0.5f);
        step_const(oa, &pa, 0.5f);
    }
    CHECK(fabs(pw - pa) > 1e-3);
    otc_optimizer_free(ow);
    otc_optimizer_free(oa);
}

TEST(optim_adam_minimises_a_quadratic) {
    /* f(p) = sum_i c_i (p_i - t_i)^2, badly scaled on purpose: Adam's per-coordinate step
     * size still brings every coordinate to its target. */
    const float cw[4] = {0.01f, 1.0f, 100.0f, 5.0f}, target[4] = {3.0f, -1.0f, 0.5f, 2.0f};
    float p[4] = {0, 0, 0, 0}, g[4];
    otc_optim_config c = otc_optim_defaults(OTC_OPTIM_ADAM);
    c.lr = 0.05f;
    otc_optimizer *opt = otc_optimizer_new(&c);
    REQUIRE(opt);
    float *params[1] = {p};
    const float *grads[1] = {g};
    size_t sizes[1] = {4};
    double f0 = 0;
    for (int i = 0; i < 4; i++) f0 += cw[i] * target[i] * target[i];
    for (int s = 0; s < 3000; s++) {
        for (int i = 0; i < 4; i++) g[i] = 2.0f * cw[i] * (p[i] - target[i]);
        REQUIRE(otc_optimizer_step(opt, 1, params, grads, sizes) == OTC_OK);
    }
    double f = 0;
    for (int i = 0; i < 4; i++) {
        CHECK_NEAR(p[i], target[i], 1e-2);
        f += cw[i] * (p[i] - target[i]) * (p[i] - target[i]);
    }
    CHECK(f < 1e-4 * f0);
    otc_optimizer_free(opt);
}

TEST(optim_state_shape_is_fixed_by_first_step) {
    otc_optimizer *opt = otc_optimizer_new(&(otc_optim_config){
        .kind = OTC_OPTIM_ADAM, .lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f});
    REQUIRE(opt);
    float a[3] = {0}, b[2] = {0};
    const float ga[3] = {1, 1, 1}, gb[2] = {1, 1};
    float *params[2] = {a, b};
    const float *grads[2] = {ga, gb};
    size_t sizes[2] = {3, 2};
    CHECK(otc_optimizer_step(opt, 2, params, grads, sizes) == OTC_OK);
    const float a1 = a[0], b1 = b[1];
    size_t other[2] = {3, 1};
    CHECK(otc_optimizer_step(opt, 2, params, grads, other) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "group 1") != NULL);
    CHECK(otc_optimizer_step(opt, 1, params, grads, sizes) == OTC_ERR_ARG);
    CHECK(otc_optimizer_steps(opt) == 1); /* refused steps do not count */
    CHECK(a[0] == a1 && b[1] == b1);      /* and change nothing */
    CHECK(otc_optimizer_step(opt, 2, NULL, grads, sizes) == OTC_ERR_ARG);
    otc_optimizer_set_lr(opt, 0.5f);
    CHECK(otc_optimizer_config(opt)->lr == 0.5f);
    otc_optimizer_free(opt);
}

/* n steps of opt on groups of sizes sz[0..k) from parameters p0 (the gradient a fixed function
 * of the parameters and the step), into out (the groups end to end). */
static void steps_from(otc_optimizer *opt, int k, const size_t *sz, int n, float *out) {
    float p[2][100], g[2][100];
    float *params[2] = {p[0], p[1]};
    const float *grads[2] = {g[0], g[1]};
    for (int j = 0; j < k; j++)
        for (size_t i = 0; i < sz[j]; i++) p[j][i] = 0.1f * (float)(i % 7) - 0.2f * (float)j;
    for (int s = 0; s < n; s++) {
        for (int j = 0; j < k; j++)
            for (size_t i = 0; i < sz[j]; i++)
                g[j][i] = sinf(3.0f * p[j][i] + (float)(s + i)) + 0.5f * (float)j;
        CHECK(otc_optimizer_step(opt, k, params, grads, sz) == OTC_OK);
    }
    size_t at = 0;
    for (int j = 0; j < k; j++, at += sz[j - 1]) memcpy(out + at, p[j], sizeof(float) * sz[j]);
}

/* After a reset (the moments kept, zeroed) an optimiser steps exactly as a new one, on groups
 * of the sizes it had (a large one and a packed small one) or of others. */
TEST(optim_reset_steps_as_a_new_optimiser) {
    const otc_optim_kind kinds[3] = {OTC_OPTIM_SGD, OTC_OPTIM_ADAM, OTC_OPTIM_ADAMW};
    const size_t same[2] = {100, 3}, other[1] = {5};
    for (int k = 0; k < 3; k++) {
        otc_optim_config c = otc_optim_defaults(kinds[k]);
        c.lr = 0.05f;
        c.momentum = kinds[k] == OTC_OPTIM_SGD ? 0.9f : 0.0f;
        otc_optimizer *used = otc_optimizer_new(&c), *fresh = otc_optimizer_new(&c),
                      *fresh2 = otc_optimizer_new(&c);
        REQUIRE(used && fresh && fresh2);
        float a[103], b[103];
        steps_from(used, 2, same, 4, a);
        otc_optimizer_reset(used);
        CHECK(otc_optimizer_steps(used) == 0);
        steps_from(used, 2, same, 3, a);
        steps_from(fresh, 2, same, 3, b);
        CHECK(!memcmp(a, b, sizeof(float) * 103));
        otc_optimizer_reset(used);
        steps_from(used, 1, other, 3, a);
        steps_from(fresh2, 1, other, 3, b);
        CHECK(!memcmp(a, b, sizeof(float) * 5));
        /* Without a reset the sizes stay fixed. */
        float p[5] = {0}, g[5] = {0};
        float *params[1] = {p};
        const float *grads[1] = {g};
        CHECK(otc_optimizer_step(used, 1, params, grads, &same[1]) == OTC_ERR_ARG);
        otc_optimizer_free(used);
        otc_optimizer_free(fresh);
        otc_optimizer_free(fresh2);
    }
}

TEST(optim_rejects_bad_configs) {
    otc_optim_config c = otc_optim_defaults(OTC_OPTIM_SGD);
    c.lr = -1.0f;
    CHECK(otc_optimizer_new(&c) == NULL);
    CHECK(strstr(otc_last_error(), "lr") != NULL);
    c = otc_optim_defaults(OTC_OPTIM_SGD);
    c.nesterov = true; /* without momentum, as PyTorch refuses */
    CHECK(otc_optimizer_new(&c) == NULL);
    c = otc_optim_defaults(OTC_OPTIM_ADAM);
    c.beta1 = 1.0f;
    CHECK(otc_optimizer_new(&c) == NULL);
    c = otc_optim_defaults(OTC_OPTIM_ADAMW);
    c.eps = NAN;
    CHECK(otc_optimizer_new(&c) == NULL);
    c.kind = (otc_optim_kind)7;
    CHECK(otc_optimizer_new(&c) == NULL);
    CHECK(otc_optimizer_new(NULL) == NULL);
}

TEST(optim_schedules) {
    otc_lr_schedule s = {.kind = OTC_SCHED_CONSTANT, .base_lr = 0.3f};
    CHECK_NEAR(otc_lr_at(&s, 0), 0.3, 1e-7);
    CHECK_NEAR(otc_lr_at(&s, 100000), 0.3, 1e-7);

    s = (otc_lr_schedule){.kind = OTC_SCHED_STEP, .base_lr = 0.1f, .step_size = 10, .gamma = 0.5f};
    CHECK_NEAR(otc_lr_at(&s, 0), 0.1, 1e-8);
    CHECK_NEAR(otc_lr_at(&s, 9), 0.1, 1e-8);
    CHECK_NEAR(otc_lr_at(&s, 10), 0.05, 1e-8);
    CHECK_NEAR(otc_lr_at(&s, 25), 0.025, 1e-8);
    CHECK_NEAR(otc_lr_at(&s, 30), 0.0125, 1e-8);

    s = (otc_lr_schedule){.kind = OTC_SCHED_COSINE, .base_lr = 1.0f, .total_steps = 100};
    CHECK_NEAR(otc_lr_at(&s, 0), 1.0, 1e-7);
    CHECK_NEAR(otc_lr_at(&s, 25), (1 + sqrt(0.5)) / 2, 1e-6); /* cos(pi/4) = sqrt(1/2) */
    CHECK_NEAR(otc_lr_at(&s, 50), 0.5, 1e-6);
    CHECK_NEAR(otc_lr_at(&s, 75), (1 - sqrt(0.5)) / 2, 1e-6);
    CHECK_NEAR(otc_lr_at(&s, 100), 0.0, 1e-7);
    CHECK_NEAR(otc_lr_at(&s, 250), 0.0, 1e-7); /* held at the floor afterwards */
    s.min_lr = 0.1f;
    CHECK_NEAR(otc_lr_at(&s, 50), 0.55, 1e-6);
    CHECK_NEAR(otc_lr_at(&s, 1000), 0.1, 1e-7);
    /* Monotone non-increasing over the run. */
    for (int i = 1; i <= 100; i++) CHECK(otc_lr_at(&s, i) <= otc_lr_at(&s, i - 1));
}
