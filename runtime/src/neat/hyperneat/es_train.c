/* Gradient of an evolvable (ES-HyperNEAT) substrate's found network: backpropagation by hand
 * over its links in topological order, each neuron as the flat program forms it (bias +
 * response * the weighted sum of its sources in gene order, then its activation), the
 * activation derivatives and the loss from the op table; only the links the search placed
 * exist, so only they train. */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "substrate_internal.h"

struct otc_es_trainer {
    int n_in, n_out, n_neur, n_edges; /* of the network laid out last */
    int cap_ids, cap_neur, cap_edges;
    size_t cap[6];      /* floats held by z, v, g, yo, go, gz */
    int *slot;          /* per node id: its value slot (inputs 0.., neurons n_in + k), -1 none */
    int *node;          /* per neuron k (evaluation order): its node id */
    int *first;         /* [n_neur + 1]: neuron k's links are first[k] .. first[k + 1] - 1 */
    int *src, *conn;    /* per link: the source's slot, the index in the network's conns */
    int *act, *pending; /* per neuron: activation; scratch (links not yet placed, queue) */
    float *w, *gw;      /* per link: weight and its gradient */
    float *b, *gb;      /* per neuron: bias and its gradient */
    float *resp, *alpha;
    float *z, *v, *g;    /* [neurons, rows] before the activation; [slots, rows] values, d loss */
    float *yo, *go, *gz; /* [rows, outputs] outputs and d loss / d them; [rows] scratch */
};

void otc_es_trainer_free(otc_es_trainer *t) {
    if (!t) return;
    void *p[] = {t->slot, t->node, t->first, t->src, t->conn, t->act,   t->pending,
                 t->w,    t->gw,   t->b,     t->gb,  t->resp, t->alpha, t->z,
                 t->v,    t->g,    t->yo,    t->go,  t->gz};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
    free(t);
}

/* *p replaced by room for n elements of `size` bytes (contents not kept). */
static bool grow(void **p, size_t n, size_t size) {
    free(*p);
    *p = malloc(n ? n * size : 1);
    return *p != NULL;
}

static otc_status oom(void) {
    return otc_fail(OTC_ERR_NOMEM, "out of memory for training an evolvable substrate");
}

/* Buffers for ids node ids, neurons neurons and links links. */
static bool reserve_net(otc_es_trainer *t, int ids, int neurons, int links) {
    bool ok = true;
    if (ids > t->cap_ids) {
        ok = ok && grow((void **)&t->slot, (size_t)ids, sizeof(int));
        t->cap_ids = ok ? ids : 0;
    }
    if (ok && neurons > t->cap_neur) {
        size_t n = (size_t)neurons;
        ok = grow((void **)&t->node, n, sizeof(int)) &&
             grow((void **)&t->first, n + 1, sizeof(int)) &&
             grow((void **)&t->act, n, sizeof(int)) && grow((void **)&t->pending, n, sizeof(int)) &&
             grow((void **)&t->b, n, sizeof(float)) && grow((void **)&t->gb, n, sizeof(float)) &&
             grow((void **)&t->resp, n, sizeof(float)) &&
             grow((void **)&t->alpha, n, sizeof(float));
        t->cap_neur = ok ? neurons : 0;
    }
    if (ok && links > t->cap_edges) {
        size_t n = (size_t)links;
        ok = grow((void **)&t->src, n, sizeof(int)) && grow((void **)&t->conn, n, sizeof(int)) &&
             grow((void **)&t->w, n, sizeof(float)) && grow((void **)&t->gw, n, sizeof(float));
        t->cap_edges = ok ? links : 0;
    }
    return ok;
}

/* *p holding at least n floats (contents not kept), *cap its size. */
static bool hold(float **p, size_t *cap, size_t n) {
    if (n <= *cap) return true;
    *cap = 0;
    if (!grow((void **)p, n, sizeof(float))) return false;
    *cap = n;
    return true;
}

/* Value buffers for `rows` rows of the network laid out. */
static bool reserve_rows(otc_es_trainer *t, int rows) {
    size_t r = (size_t)rows, slots = (size_t)t->n_in + (size_t)t->n_neur;
    return hold(&t->z, &t->cap[0], r * (size_t)t->n_neur) && hold(&t->v, &t->cap[1], r * slots) &&
           hold(&t->g, &t->cap[2], r * slots) && hold(&t->yo, &t->cap[3], r * (size_t)t->n_out) &&
           hold(&t->go, &t->cap[4], r * (size_t)t->n_out) && hold(&t->gz, &t->cap[5], r);
}

/* The network's neurons in topological order (Kahn's, in id order among the ready) and its
 * enabled links grouped by target in that order, each target's in gene order. */
static otc_status lay_out(otc_es_trainer *t, const otc_substrate *s) {
    const otc_neat_genome *net = s->es.net;
    int ids = 0, n_neur = 0, n_links = 0;
    for (int i = 0; i < net->n_nodes; i++) {
        if (net->nodes[i].id < 0)
            return otc_fail(OTC_ERR_FORMAT, "es network: node id %d", net->nodes[i].id);
        if (net->nodes[i].id + 1 > ids) ids = net->nodes[i].id + 1;
        n_neur += net->nodes[i].type != OTC_NEAT_INPUT;
    }
    for (int k = 0; k < net->n_conns; k++) n_links += net->conns[k].enabled;
    t->n_in = s->size[0];
    t->n_out = s->size[1];
    if (!reserve_net(t, ids, n_neur, n_links)) return oom();
    /* Slots: inputs by id; neurons get theirs as they are ordered. pending[k]: links into
     * neuron k from neurons not yet ordered; a neuron's index while unordered is -2 - k. */
    for (int i = 0; i < ids; i++) t->slot[i] = -1;
    int k = 0;
    for (int i = 0; i < net->n_nodes; i++) {
        const otc_neat_node *nd = &net->nodes[i];
        if (nd->type == OTC_NEAT_INPUT) {
            if (nd->id >= t->n_in)
                return otc_fail(OTC_ERR_FORMAT, "es network: input id %d", nd->id);
            t->slot[nd->id] = nd->id;
            continue;
        }
        t->node[k] = nd->id;
        t->pending[k] = 0;
        t->slot[nd->id] = -2 - k++;
    }
    for (int c = 0; c < net->n_conns; c++) {
        const otc_neat_conn *cn = &net->conns[c];
        if (!cn->enabled) continue;
        if (cn->in < 0 || cn->out < 0 || cn->in >= ids || cn->out >= ids || t->slot[cn->in] == -1 ||
            t->slot[cn->out] >= -1)
            return otc_fail(OTC_ERR_FORMAT, "es network: link %d -> %d", cn->in, cn->out);
        if (t->slot[cn->in] < -1) t->pending[-2 - t->slot[cn->out]]++;
    }
    /* The outputs are nodes n_in .. n_in + n_out - 1 (otc_es_network's ids). */
    for (int o = 0; o < t->n_out; o++)
        if (t->n_in + o >= ids || t->slot[t->n_in + o] >= -1)
            return otc_fail(OTC_ERR_FORMAT, "es network: no output node %d", t->n_in + o);
    /* Kahn's: node[] becomes the order, the unordered ids read from a copy. */
    int *todo = malloc(sizeof(int) * (size_t)(n_neur ? n_neur : 1));
    if (!todo) return oom();
    memcpy(todo, t->node, sizeof(int) * (size_t)n_neur);
    int done = 0;
    for (bool moved = true; moved && done < n_neur;) {
        moved = false;
        for (int j = 0; j < n_neur; j++) {
            int id = todo[j];
            if (id < 0 || t->pending[-2 - t->slot[id]]) continue;
            /* id is ready: it takes the next slot, and the links out of it are placed. */
            t->slot[id] = t->n_in + done;
            t->node[done++] = id;
            todo[j] = -1;
            moved = true;
            for (int c = 0; c < net->n_conns; c++) {
                const otc_neat_conn *cn = &net->conns[c];
                if (cn->enabled && cn->in == id && t->slot[cn->out] < -1)
                    t->pending[-2 - t->slot[cn->out]]--;
            }
        }
    }
    free(todo);
    if (done < n_neur)
        return otc_fail(OTC_ERR_CYCLE,
                        "es network: recurrent links (an evolvable substrate trains only a "
                        "feed-forward network)");
    /* Links grouped by target, in evaluation order; within a target, gene order. */
    for (int j = 0; j <= n_neur; j++) t->first[j] = 0;
    for (int c = 0; c < net->n_conns; c++)
        if (net->conns[c].enabled) t->first[t->slot[net->conns[c].out] - t->n_in + 1]++;
    for (int j = 0; j < n_neur; j++) t->first[j + 1] += t->first[j];
    for (int j = 0; j < n_neur; j++) t->pending[j] = t->first[j];
    for (int c = 0; c < net->n_conns; c++) {
        const otc_neat_conn *cn = &net->conns[c];
        if (!cn->enabled) continue;
        int e = t->pending[t->slot[cn->out] - t->n_in]++;
        t->src[e] = t->slot[cn->in];
        t->conn[e] = c;
        t->w[e] = cn->weight;
    }
    for (int j = 0; j < n_neur; j++) {
        const otc_neat_node *nd = otc_neat_genome_find_node(net, t->node[j]);
        t->b[j] = nd->bias;
        t->resp[j] = nd->response;
        t->act[j] = (int)nd->act;
        t->alpha[j] = otc_neat_act_alpha(&s->es_cfg, nd->act);
        if (nd->agg != 0)
            return otc_fail(OTC_ERR_ARG, "es network: node %d does not sum its inputs", nd->id);
    }
    t->n_neur = n_neur;
    t->n_edges = n_links;
    return OTC_OK;
}

otc_status otc_es_trainer_prepare(otc_substrate *s, int rows, otc_es_trainer **out) {
    if (!s->es_found) return otc_fail(OTC_ERR_STATE, "substrate training: not painted");
    otc_es_trainer *t = s->es_train;
    if (!t && !(t = s->es_train = calloc(1, sizeof *t))) return oom();
    otc_status st = lay_out(t, s);
    if (st == OTC_OK && !reserve_rows(t, rows)) st = oom();
    if (st == OTC_OK) *out = t;
    return st;
}

int otc_es_trainer_params(otc_es_trainer *t, bool bias, float **p, const float **g, size_t *sz) {
    p[0] = t->w;
    g[0] = t->gw;
    sz[0] = (size_t)t->n_edges;
    if (!bias) return 1;
    p[1] = t->b;
    g[1] = t->gb;
    sz[1] = (size_t)t->n_neur;
    return 2;
}

otc_status otc_es_trainer_backprop(otc_es_trainer *t, const float *x, const float *tgt, int B,
                                   float *loss) {
    size_t R = (size_t)B, n_in = (size_t)t->n_in, n_out = (size_t)t->n_out;
    /* Forward: the inputs as slots, each neuron as the flat program forms it. */
    for (size_t i = 0; i < n_in; i++)
        for (size_t r = 0; r < R; r++) t->v[i * R + r] = x[r * n_in + i];
    for (int k = 0; k < t->n_neur; k++) {
        float *z = t->z + (size_t)k * R, *v = t->v + (n_in + (size_t)k) * R;
        for (size_t r = 0; r < R; r++) z[r] = 0.0f;
        for (int e = t->first[k]; e < t->first[k + 1]; e++) {
            const float *a = t->v + (size_t)t->src[e] * R;
            float we = t->w[e];
            for (size_t r = 0; r < R; r++) z[r] += we * a[r];
        }
        for (size_t r = 0; r < R; r++) z[r] = t->b[k] + t->resp[k] * z[r];
        if (!otc_act_forward_n(t->act[k], t->alpha[k], z, v, R))
            return otc_fail(OTC_ERR_ARG, "substrate: unknown activation %d", t->act[k]);
    }
    /* The loss as the layered substrate's: the mean of the op table's per-element MSE. */
    for (size_t o = 0; o < n_out; o++) {
        const float *v = t->v + (size_t)t->slot[t->n_in + (int)o] * R;
        for (size_t r = 0; r < R; r++) t->yo[r * n_out + o] = v[r];
    }
    size_t n = R * n_out;
    const otc_expr_arrays at = {.x = t->yo, .x1 = tgt};
    otc_expr_eval_n(otc_op_loss_expr(OTC_OP_MSE), &at, t->go, n);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += (double)t->go[i];
    *loss = (float)(sum / (double)n);
    otc_expr_eval_n(otc_op_loss_grad_expr(OTC_OP_MSE, 0), &at, t->go, n);
    const float scale = 1.0f / (float)n;
    /* Backward: d loss / d values, outputs seeded, neurons in reverse order. */
    memset(t->g + n_in * R, 0, sizeof(float) * (size_t)t->n_neur * R);
    for (size_t o = 0; o < n_out; o++) {
        float *g = t->g + (size_t)t->slot[t->n_in + (int)o] * R;
        for (size_t r = 0; r < R; r++) g[r] += t->go[r * n_out + o] * scale;
    }
    for (int k = t->n_neur - 1; k >= 0; k--) {
        const float *z = t->z + (size_t)k * R, *v = t->v + (n_in + (size_t)k) * R;
        const float *g = t->g + (n_in + (size_t)k) * R;
        memset(t->gz, 0, sizeof(float) * R);
        otc_act_backward_n(t->act[k], t->alpha[k], z, v, g, t->gz, R);
        double gb = 0;
        for (size_t r = 0; r < R; r++) gb += (double)t->gz[r];
        t->gb[k] = (float)gb;
        float resp = t->resp[k];
        for (int e = t->first[k]; e < t->first[k + 1]; e++) {
            const float *a = t->v + (size_t)t->src[e] * R;
            double gw = 0;
            for (size_t r = 0; r < R; r++) gw += (double)t->gz[r] * a[r];
            t->gw[e] = resp * (float)gw;
            if (t->src[e] < t->n_in) continue; /* an input: nothing further back */
            float *gs = t->g + (size_t)t->src[e] * R, f = resp * t->w[e];
            for (size_t r = 0; r < R; r++) gs[r] += f * t->gz[r];
        }
    }
    return OTC_OK;
}

void otc_es_trainer_gradient(const otc_es_trainer *t, const otc_substrate *s, float *gw,
                             float *gb) {
    const otc_neat_genome *net = s->es.net;
    memset(gw, 0, sizeof(float) * (size_t)net->n_conns);
    memset(gb, 0, sizeof(float) * (size_t)net->n_nodes);
    for (int e = 0; e < t->n_edges; e++) gw[t->conn[e]] = t->gw[e];
    for (int k = 0; s->cfg.bias_output && k < t->n_neur; k++)
        for (int i = 0; i < net->n_nodes; i++)
            if (net->nodes[i].id == t->node[k]) gb[i] = t->gb[k];
}

otc_status otc_es_trainer_store(const otc_es_trainer *t, otc_substrate *s) {
    otc_neat_genome *net = s->es.net;
    for (int e = 0; e < t->n_edges; e++) net->conns[t->conn[e]].weight = t->w[e];
    for (int k = 0; k < t->n_neur; k++) otc_neat_genome_find_node(net, t->node[k])->bias = t->b[k];
    otc_status st = otc_neat_flat_build(s->es_flat, net, &s->es_cfg);
    s->es_found = st == OTC_OK;
    return st;
}
