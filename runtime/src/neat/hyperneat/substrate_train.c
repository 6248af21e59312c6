/* Gradient training of a painted substrate (Baldwinian hybrid HyperNEAT): dense
 * backpropagation over a layered substrate's own weights (an evolvable one's network in
 * es_train.c), the loss and activation derivatives from the op table, Adam (the one optimiser
 * [Hybrid] offers) from the runtime's optimiser, the mini-batch order shared; the buffers live
 * with the substrate, so a pool's substrates train again without allocating. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "otc/optim.h"
#include "otc/rng.h"
#include "substrate_internal.h"

/* The mini-batch order's seed: fixed, so a trained substrate is a function of its painted
 * weights and the task's rows alone (as the csv task's split seed is part of its data). */
#define ORDER_SEED 0x5eedba1d

struct otc_substrate_trainer {
    int rows;                  /* rows the row buffers hold */
    float *z[MAX_LAYERS - 1];  /* layer l + 1 before its activation, [rows, size(l + 1)] */
    float *a[MAX_LAYERS - 1];  /* and after it */
    float *ga[2], *gz;         /* d loss / d values, [rows, widest layer after the input] */
    float *bx, *bt;            /* a mini-batch's rows gathered */
    int *order, n_order;       /* the rows' order this pass */
    float *gw[MAX_LAYERS - 1]; /* gradients, shaped as the weights */
    float *gb[MAX_LAYERS - 1]; /* and the biases */
    unsigned char *keep[MAX_LAYERS - 1]; /* 1 where a weight trains (painted not 0) */
    otc_optimizer *opt;
    float lr;
};

void otc_substrate_trainer_free(otc_substrate_trainer *t) {
    if (!t) return;
    for (int l = 0; l < MAX_LAYERS - 1; l++) {
        free(t->z[l]);
        free(t->a[l]);
        free(t->gw[l]);
        free(t->gb[l]);
        free(t->keep[l]);
    }
    free(t->ga[0]);
    free(t->ga[1]);
    free(t->gz);
    free(t->bx);
    free(t->bt);
    free(t->order);
    otc_optimizer_free(t->opt);
    free(t);
}

static int widest(const otc_substrate *s) {
    int w = 0;
    for (int l = 1; l < s->n_layers; l++)
        if (s->size[l] > w) w = s->size[l];
    return w;
}

/* s's trainer with row buffers for `rows` rows and order for n_order rows (made or grown). */
static otc_status trainer_for(otc_substrate *s, int rows, int n_order,
                              otc_substrate_trainer **out) {
    otc_substrate_trainer *t = s->train;
    bool ok = true;
    bool layered = !s->cfg.evolvable; /* an evolvable one's network has its own buffers */
    if (!t) {
        t = s->train = calloc(1, sizeof *t);
        ok = t != NULL;
        for (int l = 0; ok && layered && l + 1 < s->n_layers; l++) {
            size_t n = (size_t)s->size[l] * (size_t)s->size[l + 1];
            t->gw[l] = malloc(sizeof(float) * n);
            t->keep[l] = malloc(n);
            t->gb[l] = calloc((size_t)s->size[l + 1], sizeof(float));
            ok = t->gw[l] && t->keep[l] && t->gb[l];
        }
    }
    if (ok && rows > t->rows) {
        size_t r = (size_t)rows, w = (size_t)widest(s);
        for (int l = 0; layered && l + 1 < s->n_layers; l++) {
            free(t->z[l]);
            free(t->a[l]);
            t->z[l] = malloc(sizeof(float) * r * (size_t)s->size[l + 1]);
            t->a[l] = malloc(sizeof(float) * r * (size_t)s->size[l + 1]);
            ok = ok && t->z[l] && t->a[l];
        }
        float **bufs[5] = {&t->ga[0], &t->ga[1], &t->gz, &t->bx, &t->bt};
        size_t width[5] = {w, w, w, (size_t)s->size[0], (size_t)s->size[s->n_layers - 1]};
        for (int k = 0; k < 5; k++) {
            free(*bufs[k]);
            *bufs[k] = malloc(sizeof(float) * r * width[k]);
            ok = ok && *bufs[k];
        }
        t->rows = ok ? rows : 0;
    }
    if (ok && n_order > t->n_order) {
        free(t->order);
        t->order = malloc(sizeof(int) * (size_t)n_order);
        ok = t->order != NULL;
        t->n_order = ok ? n_order : 0;
    }
    if (!ok) return otc_fail(OTC_ERR_NOMEM, "out of memory for substrate training (%d rows)", rows);
    *out = t;
    return OTC_OK;
}

/* The loss on rows x, t (B of them) and its gradient into t->gw, t->gb, weights whose keep is 0
 * getting 0. */
static otc_status backprop(otc_substrate *s, otc_substrate_trainer *tr, const float *x,
                           const float *t, int B, float *loss) {
    int L = s->n_layers, act = (int)s->cfg.activation;
    /* Forward, keeping each layer's values before and after its activation. */
    const float *in = x;
    for (int l = 0; l + 1 < L; l++) {
        size_t n_in = (size_t)s->size[l], n_out = (size_t)s->size[l + 1];
        for (int r = 0; r < B; r++)
            memcpy(tr->z[l] + (size_t)r * n_out, s->b[l], sizeof(float) * n_out);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, (int)n_out, (int)n_in, 1.0f, in,
                    (int)n_in, s->w[l], (int)n_in, 1.0f, tr->z[l], (int)n_out);
        if (!otc_act_forward_n(act, s->alpha, tr->z[l], tr->a[l], (size_t)B * n_out))
            return otc_fail(OTC_ERR_ARG, "substrate: unknown activation %d", act);
        in = tr->a[l];
    }
    /* The mean of the per-element loss, and d loss / d output = d(element) / n, as the
     * interpreter's mean-loss kernels compute them. */
    size_t n = (size_t)B * (size_t)s->size[L - 1];
    const otc_expr_arrays at = {.x = tr->a[L - 2], .x1 = t};
    float *ga = tr->ga[0];
    otc_expr_eval_n(otc_op_loss_expr(OTC_OP_MSE), &at, ga, n);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += (double)ga[i];
    *loss = (float)(sum / (double)n);
    otc_expr_eval_n(otc_op_loss_grad_expr(OTC_OP_MSE, 0), &at, ga, n);
    const float k = 1.0f / (float)n;
    for (size_t i = 0; i < n; i++) ga[i] *= k;
    /* Backward, layer by layer from the output. */
    for (int l = L - 2; l >= 0; l--) {
        size_t n_in = (size_t)s->size[l], n_out = (size_t)s->size[l + 1], m = (size_t)B * n_out;
        const float *prev = l ? tr->a[l - 1] : x;
        memset(tr->gz, 0, sizeof(float) * m);
        otc_act_backward_n(act, s->alpha, tr->z[l], tr->a[l], ga, tr->gz, m);
        /* d W[j][i] = sum over rows of gz[r][j] prev[r][i] */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n_out, (int)n_in, B, 1.0f, tr->gz,
                    (int)n_out, prev, (int)n_in, 0.0f, tr->gw[l], (int)n_in);
        for (size_t i = 0; i < n_in * n_out; i++)
            if (!tr->keep[l][i]) tr->gw[l][i] = 0.0f;
        if (s->cfg.bias_output) {
            memset(tr->gb[l], 0, sizeof(float) * n_out);
            for (int r = 0; r < B; r++)
                for (size_t j = 0; j < n_out; j++) tr->gb[l][j] += tr->gz[(size_t)r * n_out + j];
        }
        if (l) { /* d loss / d layer l's values: gz W */
            float *next = ga == tr->ga[0] ? tr->ga[1] : tr->ga[0];
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, (int)n_in, (int)n_out, 1.0f,
                        tr->gz, (int)n_out, s->w[l], (int)n_in, 0.0f, next, (int)n_in);
            ga = next;
        }
    }
    return OTC_OK;
}

static otc_status check_args(const otc_substrate *s, const float *x, const float *t, int rows,
                             const char *fn) {
    if (!s || !x || !t || rows < 1) return otc_fail(OTC_ERR_ARG, "%s: bad argument", fn);
    if (s->cfg.evolvable && !s->es_found) return otc_fail(OTC_ERR_STATE, "%s: not painted", fn);
    return OTC_OK;
}

/* keep[l] from the weights as they are now. */
static void mark_painted(otc_substrate *s, otc_substrate_trainer *tr) {
    for (int l = 0; l + 1 < s->n_layers; l++) {
        size_t n = (size_t)s->size[l] * (size_t)s->size[l + 1];
        for (size_t i = 0; i < n; i++) tr->keep[l][i] = s->w[l][i] != 0.0f;
    }
}

otc_status otc_substrate_gradient(otc_substrate *s, const float *x, const float *t, int rows,
                                  float *loss, float *const *gw, float *const *gb) {
    otc_status st = check_args(s, x, t, rows, "otc_substrate_gradient");
    if (st == OTC_OK && (!loss || !gw || !gb))
        st = otc_fail(OTC_ERR_ARG, "otc_substrate_gradient: NULL output");
    if (st == OTC_OK && s->cfg.evolvable) {
        otc_es_trainer *es = NULL;
        st = otc_es_trainer_prepare(s, rows, &es);
        if (st == OTC_OK) st = otc_es_trainer_backprop(es, x, t, rows, loss);
        if (st == OTC_OK) otc_es_trainer_gradient(es, s, gw[0], gb[0]);
        return st;
    }
    otc_substrate_trainer *tr = NULL;
    if (st == OTC_OK) st = trainer_for(s, rows, 0, &tr);
    if (st != OTC_OK) return st;
    mark_painted(s, tr);
    st = backprop(s, tr, x, t, rows, loss);
    for (int l = 0; st == OTC_OK && l + 1 < s->n_layers; l++) {
        memcpy(gw[l], tr->gw[l], sizeof(float) * (size_t)s->size[l] * (size_t)s->size[l + 1]);
        if (s->cfg.bias_output)
            memcpy(gb[l], tr->gb[l], sizeof(float) * (size_t)s->size[l + 1]);
        else
            memset(gb[l], 0, sizeof(float) * (size_t)s->size[l + 1]);
    }
    return st;
}

/* The next B rows of the shuffled order into tr->bx, tr->bt (a new pass reshuffles). */
static void next_batch(const otc_substrate *s, otc_substrate_trainer *tr, otc_rng *rng, int *pos,
                       const float *x, const float *t, int rows, int B) {
    size_t nx = (size_t)s->size[0], nt = (size_t)s->size[s->n_layers - 1];
    for (int i = 0; i < B; i++) {
        if (*pos == rows) {
            otc_rng_shuffle(rng, tr->order, rows);
            *pos = 0;
        }
        int r = tr->order[(*pos)++];
        memcpy(tr->bx + (size_t)i * nx, x + (size_t)r * nx, sizeof(float) * nx);
        memcpy(tr->bt + (size_t)i * nt, t + (size_t)r * nt, sizeof(float) * nt);
    }
}

otc_status otc_substrate_train(otc_substrate *s, const float *x, const float *t, int rows,
                               const otc_substrate_train_options *o, float *loss) {
    otc_status st = check_args(s, x, t, rows, "otc_substrate_train");
    if (st == OTC_OK && (!o || o->steps < 0 || o->batch_size < 1 || !(o->learning_rate >= 0)))
        st = otc_fail(OTC_ERR_ARG, "otc_substrate_train: bad options");
    if (st != OTC_OK) return st;
    int B = o->batch_size < rows ? o->batch_size : rows;
    bool full = B == rows;
    otc_substrate_trainer *tr = NULL;
    st = trainer_for(s, B, full ? 0 : rows, &tr);
    if (st != OTC_OK) return st;
    if (!tr->opt || tr->lr != o->learning_rate) {
        otc_optimizer_free(tr->opt);
        otc_optim_config oc = otc_optim_defaults(OTC_OPTIM_ADAM);
        oc.lr = o->learning_rate;
        tr->lr = o->learning_rate;
        if (!(tr->opt = otc_optimizer_new(&oc)))
            return otc_fail_context(OTC_ERR_ARG, "substrate training");
    } else {
        otc_optimizer_reset(tr->opt);
    }
    otc_rng rng;
    otc_rng_seed(&rng, ORDER_SEED);
    for (int i = 0; !full && i < rows; i++) tr->order[i] = i;
    int pos = rows; /* the first batch shuffles */
    /* Parameter groups: every layer's weights, then (bias_output) its biases; for an evolvable
     * substrate its network's link weights, then (bias_output) its neurons' biases. */
    float *p[2 * (MAX_LAYERS - 1)];
    const float *g[2 * (MAX_LAYERS - 1)];
    size_t sz[2 * (MAX_LAYERS - 1)];
    int n = 0;
    otc_es_trainer *es = NULL;
    if (s->cfg.evolvable) {
        st = otc_es_trainer_prepare(s, B, &es);
        if (st != OTC_OK) return st;
        n = otc_es_trainer_params(es, s->cfg.bias_output, p, g, sz);
    } else {
        mark_painted(s, tr);
    }
    for (int l = 0; !es && l + 1 < s->n_layers; l++) {
        p[n] = s->w[l];
        g[n] = tr->gw[l];
        sz[n++] = (size_t)s->size[l] * (size_t)s->size[l + 1];
        if (!s->cfg.bias_output) continue;
        p[n] = s->b[l];
        g[n] = tr->gb[l];
        sz[n++] = (size_t)s->size[l + 1];
    }
    float lv = 0;
    for (int step = 0; step < o->steps && st == OTC_OK; step++) {
        if (!full) next_batch(s, tr, &rng, &pos, x, t, rows, B);
        const float *bx = full ? x : tr->bx, *bt = full ? t : tr->bt;
        st = es ? otc_es_trainer_backprop(es, bx, bt, B, &lv) : backprop(s, tr, bx, bt, B, &lv);
        if (st == OTC_OK && !isfinite(lv)) break; /* diverged: the score will show it */
        if (st == OTC_OK) st = otc_optimizer_step(tr->opt, n, p, g, sz);
    }
    if (es && st == OTC_OK) st = otc_es_trainer_store(es, s);
    s->wt_stale = true; /* the weights moved */
    if (loss) *loss = lv;
    return st;
}
