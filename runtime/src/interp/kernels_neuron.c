/* Interpreter kernels of the NEAT Neuron: y = act(bias + scale * agg_i(w_i * src_i[:, col_i]))
 * over the batch, inputs (W [k], b [1], src_0 .. src_{k-1}); agg is the sum unless the node
 * names another aggregation (aggregations.c). */
#include <stdlib.h>

#include "kernels.h"

/* Rows processed per chunk in backward, where the pre-activation is recomputed into a
 * stack buffer (no allocation, no state kept between forward and backward). */
#define NEURON_CHUNK 64

/* pre[r] = b + scale * sum_i w_i * src_i[r0 + r, col_i] for r in [0, cnt); the same
 * summation order as the forward so both see the same pre-activation bit for bit. */
/* One row's weighted inputs t_i = w_i * src_i[r, col_i]. */
static void row_terms(const otc_kernel_args *a, size_t r, float *t) {
    const otc_node *n = a->node;
    for (int i = 0; i < a->n_in - 2; i++) {
        size_t stride = (size_t)a->in_shape[2 + i].dim[1];
        t[i] = a->in[0][i] * a->in[2 + i][r * stride + (size_t)n->cols[i]];
    }
}

/* Buffers for a non-sum aggregation: k terms, k gradients and the median's k sort items. */
typedef struct {
    float *t, *g;
    otc_agg_item *items;
} agg_buffers;

static bool agg_buffers_new(agg_buffers *b, int k) {
    size_t n = k > 0 ? (size_t)k : 1;
    b->t = malloc(n * sizeof *b->t);
    b->g = malloc(n * sizeof *b->g);
    b->items = malloc(n * sizeof *b->items);
    return b->t && b->g && b->items;
}

static void agg_buffers_free(agg_buffers *b) {
    free(b->t);
    free(b->g);
    free(b->items);
}

static void pre_activation(const otc_kernel_args *a, size_t r0, size_t cnt, float *pre,
                           agg_buffers *ab) {
    const otc_node *n = a->node;
    if (n->agg != OTC_AGG_SUM) {
        for (size_t r = 0; r < cnt; r++) {
            row_terms(a, r0 + r, ab->t);
            pre[r] = a->in[1][0] + n->scale * otc_agg_value(n->agg, ab->t, a->n_in - 2, ab->items);
        }
        return;
    }
    int k = a->n_in - 2;
    const float *w = a->in[0];
    if (cnt == 1) {
        /* The NEAT case (batch 1): one dot product, no per-row loop bookkeeping. */
        float acc = 0.0f;
        for (int i = 0; i < k; i++) {
            size_t stride = (size_t)a->in_shape[2 + i].dim[1];
            acc += w[i] * a->in[2 + i][r0 * stride + (size_t)n->cols[i]];
        }
        pre[0] = a->in[1][0] + n->scale * acc;
        return;
    }
    for (size_t r = 0; r < cnt; r++) pre[r] = 0.0f;
    for (int i = 0; i < k; i++) {
        size_t stride = (size_t)a->in_shape[2 + i].dim[1];
        const float *src = a->in[2 + i] + r0 * stride + (size_t)n->cols[i];
        float wi = w[i];
        for (size_t r = 0; r < cnt; r++) pre[r] += wi * src[r * stride];
    }
    float b = a->in[1][0], s = n->scale;
    for (size_t r = 0; r < cnt; r++) pre[r] = b + s * pre[r];
}

otc_status otc_fwd_neuron(const otc_kernel_args *a) {
    size_t rows = otc_kshape_size(a->out_shape);
    agg_buffers ab = {0};
    if (a->node->agg != OTC_AGG_SUM && !agg_buffers_new(&ab, a->n_in - 2)) {
        agg_buffers_free(&ab);
        return otc_fail(OTC_ERR_NOMEM, "neuron: out of memory for %d inputs", a->n_in - 2);
    }
    pre_activation(a, 0, rows, a->out, &ab);
    agg_buffers_free(&ab);
    if (!otc_act_forward_n(a->node->act, a->node->alpha, a->out, a->out, rows))
        return otc_fail(OTC_ERR_ARG, "neuron: unknown activation %d", a->node->act);
    return OTC_OK;
}

/* A non-sum aggregation, row by row: dLoss/dt_i = scale * dLoss/dpre * dagg/dt_i, then
 * the weight w_i gets it times src_i and the source times w_i. */
static void bwd_agg(const otc_kernel_args *a, agg_buffers *ab) {
    const otc_node *n = a->node;
    int k = a->n_in - 2;
    size_t rows = otc_kshape_size(a->out_shape);
    const float *w = a->in[0];
    float *gw = a->in_grad[0], *gb = a->in_grad[1];
    for (size_t r = 0; r < rows; r++) {
        float pre, d = 0.0f;
        row_terms(a, r, ab->t);
        pre = a->in[1][0] + n->scale * otc_agg_value(n->agg, ab->t, k, ab->items);
        otc_act_backward_n(n->act, n->alpha, &pre, a->out + r, a->out_grad + r, &d, 1);
        if (gb) gb[0] += d;
        otc_agg_grad(n->agg, ab->t, k, ab->g, ab->items);
        for (int i = 0; i < k; i++) {
            float dt = d * n->scale * ab->g[i];
            size_t at = r * (size_t)a->in_shape[2 + i].dim[1] + (size_t)n->cols[i];
            if (gw) gw[i] += dt * a->in[2 + i][at];
            if (a->in_grad[2 + i]) a->in_grad[2 + i][at] += dt * w[i];
        }
    }
}

void otc_bwd_neuron(const otc_kernel_args *a) {
    const otc_node *n = a->node;
    int k = a->n_in - 2;
    size_t rows = otc_kshape_size(a->out_shape);
    const float *w = a->in[0];
    float *gw = a->in_grad[0], *gb = a->in_grad[1], s = n->scale;
    float pre[NEURON_CHUNK], d[NEURON_CHUNK];
    agg_buffers ab = {0};
    if (n->agg != OTC_AGG_SUM) {
        /* Backward cannot report a failure: without the buffers no gradient flows. */
        if (agg_buffers_new(&ab, k)) bwd_agg(a, &ab);
        agg_buffers_free(&ab);
        return;
    }
    for (size_t r0 = 0; r0 < rows; r0 += NEURON_CHUNK) {
        size_t cnt = rows - r0 < NEURON_CHUNK ? rows - r0 : NEURON_CHUNK;
        pre_activation(a, r0, cnt, pre, &ab);
        /* d = dLoss/dpre */
        for (size_t r = 0; r < cnt; r++) d[r] = 0.0f;
        otc_act_backward_n(n->act, n->alpha, pre, a->out + r0, a->out_grad + r0, d, cnt);
        if (gb) {
            float acc = 0.0f;
            for (size_t r = 0; r < cnt; r++) acc += d[r];
            gb[0] += acc;
        }
        for (int i = 0; i < k; i++) {
            size_t stride = (size_t)a->in_shape[2 + i].dim[1], col = (size_t)n->cols[i];
            if (gw) {
                const float *src = a->in[2 + i] + r0 * stride + col;
                float acc = 0.0f;
                for (size_t r = 0; r < cnt; r++) acc += d[r] * src[r * stride];
                gw[i] += s * acc;
            }
            float *gs = a->in_grad[2 + i];
            if (gs) {
                float f = s * w[i];
                gs += r0 * stride + col;
                for (size_t r = 0; r < cnt; r++) gs[r * stride] += d[r] * f;
            }
        }
    }
}
