/* The HyperNEAT substrate: [Substrate] grid syntax and checks, painting the dense layer weights
 * from a CPPN's flat program in batches of queries, and running the painted layers. */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "otc/hyperneat.h"
#include "substrate_internal.h"

/* CPPN queries per batch, at most: large enough to amortise the program's per-call work, small
 * enough that the query and answer buffers stay in cache-sized blocks. A substrate with fewer
 * pairs per layer (the retina's 64) gets buffers of its size. */
#define QUERY_ROWS 4096
/* One row through a layer below this many multiply-adds runs faster as a plain loop than
 * through sgemv's fixed cost (bench/hyperneat: 11x11 -> 11x11 at batch 1). */
#define SMALL_LAYER_MACS 65536

bool otc_substrate_parse_grid(const char *text, otc_neat_grid *out) {
    int nx = 0, ny = 0, used = 0;
    if (sscanf(text, "%4d%*[xX]%4d%n", &nx, &ny, &used) != 2 || text[used]) return false;
    if (nx < 1 || ny < 1 || nx > OTC_SUBSTRATE_MAX_SIDE || ny > OTC_SUBSTRATE_MAX_SIDE)
        return false;
    *out = (otc_neat_grid){nx, ny};
    return true;
}

int otc_substrate_cppn_inputs(const otc_neat_substrate *s) {
    return 4 + s->distance_input + 2 * s->layer_input;
}

int otc_substrate_cppn_outputs(const otc_neat_substrate *s) {
    return 1 + s->bias_output + s->leo;
}

void otc_substrate_cppn_row(const otc_neat_substrate *s, float *q, float x1, float y1, float x2,
                            float y2) {
    q[0] = x1;
    q[1] = y1;
    q[2] = x2;
    q[3] = y2;
    if (s->distance_input) q[4] = sqrtf((x2 - x1) * (x2 - x1) + (y2 - y1) * (y2 - y1));
}

/* The grids of s in layer order. */
static int grids(const otc_neat_substrate *s, otc_neat_grid *g) {
    int n = 0;
    g[n++] = s->input;
    for (int i = 0; i < s->n_hidden; i++) g[n++] = s->hidden[i];
    g[n++] = s->output;
    return n;
}

/* ES-HyperNEAT's keys beyond each one's range (which the parser checks) and the connection
 * limit (which the caller checks). */
static otc_status check_evolvable(const otc_neat_substrate *s, const char *file) {
    if (s->n_hidden)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [Substrate] hidden_grids: an evolvable substrate places its hidden "
                        "nodes itself (leave hidden_grids out or set it to none)",
                        file);
    if (s->layer_input)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [Substrate] layer_input: an evolvable substrate has no layers (set "
                        "it to false)",
                        file);
    if (s->initial_depth > s->maximum_depth)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [Substrate] initial_depth: %d is deeper than maximum_depth %d", file,
                        s->initial_depth, s->maximum_depth);
    return OTC_OK;
}

otc_status otc_substrate_check(const otc_neat_config *c, const char *file) {
    const otc_neat_substrate *s = &c->substrate;
    if (!s->input.nx || !s->output.nx)
        return otc_fail(OTC_ERR_CONFIG, "%s: [Substrate] %s: missing required key", file,
                        s->input.nx ? "output_grid" : "input_grid");
    if (c->num_inputs != otc_substrate_cppn_inputs(s))
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [DefaultGenome] num_inputs: a [Substrate] CPPN has %d inputs (x1 y1 "
                        "x2 y2%s%s), the config says %d",
                        file, otc_substrate_cppn_inputs(s), s->distance_input ? " distance" : "",
                        s->layer_input ? " z1 z2" : "", c->num_inputs);
    if (c->num_outputs != otc_substrate_cppn_outputs(s))
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [DefaultGenome] num_outputs: a [Substrate] CPPN has %d outputs "
                        "(weight%s%s), the config says %d",
                        file, otc_substrate_cppn_outputs(s), s->bias_output ? " bias" : "",
                        s->leo ? " leo" : "", c->num_outputs);
    if (s->leo_seed != OTC_LEO_SEED_NONE && !s->leo)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [Substrate] leo_seed: seeds the LEO output, which needs leo = true",
                        file);
    if (!c->feed_forward || c->ctrnn)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [DefaultGenome] feed_forward: a [Substrate] CPPN must be a "
                        "feed-forward network (a function of its inputs)",
                        file);
    if (c->train_steps > 0 && c->lamarckian)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [Hybrid] inheritance: lamarckian (the default) writes trained weights "
                        "back into the genome, and a [Substrate] genome is a CPPN, which cannot "
                        "take them: set inheritance = baldwinian",
                        file);
    double conns = 0;
    const char *why = "input_grid, hidden_grids, output_grid:";
    if (s->evolvable) {
        otc_status st = check_evolvable(s, file);
        if (st != OTC_OK) return st;
        conns = otc_es_max_connections(s, s->input.nx * s->input.ny, s->output.nx * s->output.ny);
        why = "maximum_depth: with these grids a search may make";
    } else {
        otc_neat_grid g[MAX_LAYERS];
        int n = grids(s, g);
        for (int l = 0; l + 1 < n; l++)
            conns += (double)g[l].nx * g[l].ny * g[l + 1].nx * g[l + 1].ny;
    }
    if (conns > OTC_SUBSTRATE_MAX_CONNECTIONS)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: [Substrate] %s %.0f connections, more than the limit of %d", file, why,
                        conns, OTC_SUBSTRATE_MAX_CONNECTIONS);
    return OTC_OK;
}

/* The coordinates of grid nx x ny's nodes, (x, y) per node. */
static float *grid_xy(int nx, int ny) {
    float *xy = malloc(sizeof(float) * 2 * (size_t)nx * (size_t)ny);
    for (int r = 0; xy && r < ny; r++)
        for (int col = 0; col < nx; col++) {
            xy[2 * (r * nx + col)] = (float)(2 * col + 1) / (float)nx - 1.0f;
            xy[2 * (r * nx + col) + 1] = (float)(2 * r + 1) / (float)ny - 1.0f;
        }
    return xy;
}

/* An evolvable substrate: the input and output grids (sides times scale) as two layers; the
 * hidden nodes come with each paint. */
static otc_status new_evolvable(const otc_neat_config *c, int scale, const otc_neat_grid *g, int n,
                                otc_substrate **out) {
    int nx[2] = {g[0].nx * scale, g[n - 1].nx * scale},
        ny[2] = {g[0].ny * scale, g[n - 1].ny * scale};
    for (int k = 0; k < 2; k++)
        if (nx[k] > OTC_SUBSTRATE_MAX_SIDE || ny[k] > OTC_SUBSTRATE_MAX_SIDE)
            return otc_fail(OTC_ERR_ARG, "substrate scale %d: a grid side over %d", scale,
                            OTC_SUBSTRATE_MAX_SIDE);
    double conns = otc_es_max_connections(&c->substrate, nx[0] * ny[0], nx[1] * ny[1]);
    if (conns > OTC_SUBSTRATE_MAX_CONNECTIONS)
        return otc_fail(OTC_ERR_ARG,
                        "substrate scale %d: a search may make %.0f connections, "
                        "more than %d",
                        scale, conns, OTC_SUBSTRATE_MAX_CONNECTIONS);
    otc_substrate *s = calloc(1, sizeof *s);
    if (!s) return otc_fail(OTC_ERR_NOMEM, "out of memory for a substrate");
    s->n_layers = 2;
    s->cfg = c->substrate;
    s->alpha = otc_neat_act_alpha(c, c->substrate.activation);
    s->cppn_in = otc_substrate_cppn_inputs(&c->substrate);
    s->cppn_out = otc_substrate_cppn_outputs(&c->substrate);
    for (int k = 0; k < 2; k++) {
        s->nx[k] = nx[k];
        s->ny[k] = ny[k];
        s->size[k] = nx[k] * ny[k];
    }
    /* The found network is a NEAT genome of the grids' inputs and outputs. */
    s->es_cfg = *c;
    s->es_cfg.num_inputs = s->size[0];
    s->es_cfg.num_outputs = s->size[1];
    s->es_cfg.num_hidden = 0;
    s->es_cfg.bias_node = false;
    s->es_cfg.feed_forward = true;
    s->es_cfg.ctrnn = false;
    s->es_cfg.substrate.enabled = false;
    s->in_xy = grid_xy(nx[0], ny[0]);
    s->out_xy = grid_xy(nx[1], ny[1]);
    s->es_flat = otc_neat_flat_new();
    if (!s->in_xy || !s->out_xy || !s->es_flat) {
        otc_substrate_free(s);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a substrate");
    }
    *out = s;
    return OTC_OK;
}

otc_status otc_substrate_new(const otc_neat_config *c, int scale, otc_substrate **out) {
    if (!c || !out || scale < 1) return otc_fail(OTC_ERR_ARG, "otc_substrate_new: bad argument");
    *out = NULL;
    if (!c->substrate.enabled) return otc_fail(OTC_ERR_CONFIG, "the config has no [Substrate]");
    otc_neat_grid g[MAX_LAYERS];
    int n = grids(&c->substrate, g);
    if (c->substrate.evolvable) return new_evolvable(c, scale, g, n, out);
    double conns = 0;
    for (int l = 0; l < n; l++)
        if ((double)g[l].nx * scale > OTC_SUBSTRATE_MAX_SIDE ||
            (double)g[l].ny * scale > OTC_SUBSTRATE_MAX_SIDE)
            return otc_fail(OTC_ERR_ARG, "substrate scale %d: a grid side over %d", scale,
                            OTC_SUBSTRATE_MAX_SIDE);
    for (int l = 0; l + 1 < n; l++)
        conns +=
            (double)g[l].nx * g[l].ny * g[l + 1].nx * g[l + 1].ny * scale * scale * scale * scale;
    if (conns > OTC_SUBSTRATE_MAX_CONNECTIONS)
        return otc_fail(OTC_ERR_ARG, "substrate scale %d: %.0f connections, more than %d", scale,
                        conns, OTC_SUBSTRATE_MAX_CONNECTIONS);
    otc_substrate *s = calloc(1, sizeof *s);
    if (!s) return otc_fail(OTC_ERR_NOMEM, "out of memory for a substrate");
    s->n_layers = n;
    s->wt_stale = true;
    s->cfg = c->substrate;
    s->alpha = otc_neat_act_alpha(c, c->substrate.activation);
    s->cppn_in = otc_substrate_cppn_inputs(&c->substrate);
    s->cppn_out = otc_substrate_cppn_outputs(&c->substrate);
    bool ok = true;
    for (int l = 0; l < n; l++) {
        s->nx[l] = g[l].nx * scale;
        s->ny[l] = g[l].ny * scale;
        s->size[l] = s->nx[l] * s->ny[l];
    }
    size_t rows = 1;
    for (int l = 0; l + 1 < n && ok; l++) {
        size_t pairs = (size_t)s->size[l] * (size_t)s->size[l + 1];
        s->w[l] = calloc(pairs, sizeof(float));
        s->b[l] = calloc((size_t)s->size[l + 1], sizeof(float));
        ok = s->w[l] && s->b[l];
        if (pairs > rows) rows = pairs;
    }
    s->query_rows = rows < QUERY_ROWS ? (int)rows : QUERY_ROWS;
    s->query = malloc(sizeof(float) * (size_t)s->query_rows * (size_t)s->cppn_in);
    s->answer = malloc(sizeof(float) * (size_t)s->query_rows * (size_t)s->cppn_out);
    if (!ok || !s->query || !s->answer) {
        otc_substrate_free(s);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a substrate of %.0f connections", conns);
    }
    *out = s;
    return OTC_OK;
}

void otc_substrate_free(otc_substrate *s) {
    if (!s) return;
    for (int l = 0; l + 1 < s->n_layers; l++) {
        free(s->w[l]);
        free(s->b[l]);
        free(s->wt[l]);
    }
    free(s->query);
    free(s->answer);
    free(s->act[0]);
    free(s->act[1]);
    free(s->in_xy);
    free(s->out_xy);
    otc_es_network_clear(&s->es);
    otc_neat_flat_free(s->es_flat);
    otc_substrate_trainer_free(s->train);
    otc_es_trainer_free(s->es_train);
    free(s);
}

int otc_substrate_layers(const otc_substrate *s) {
    return s->n_layers;
}
otc_act otc_substrate_activation(const otc_substrate *s) {
    return s->cfg.activation;
}
const otc_es_network *otc_substrate_es(const otc_substrate *s) {
    return s->es_found ? &s->es : NULL;
}
const otc_neat_config *otc_substrate_es_config(const otc_substrate *s) {
    return s->cfg.evolvable ? &s->es_cfg : NULL;
}
int otc_substrate_size(const otc_substrate *s, int layer) {
    return s->size[layer];
}
float *otc_substrate_weights(otc_substrate *s, int layer) {
    s->wt_stale = true; /* the caller may write through it */
    return s->w[layer];
}
float *otc_substrate_biases(otc_substrate *s, int layer) {
    return s->b[layer];
}

void otc_substrate_coord(const otc_substrate *s, int layer, int node, float *x, float *y) {
    int col = node % s->nx[layer], row = node / s->nx[layer];
    *x = (float)(2 * col + 1) / (float)s->nx[layer] - 1.0f;
    *y = (float)(2 * row + 1) / (float)s->ny[layer] - 1.0f;
}

/* A CPPN output as a substrate weight: the paper's threshold and scaling, or (with LEO, which
 * decides expression itself) the output scaled. A non-finite output paints nothing. */
static float scale_weight(const otc_neat_substrate *c, float w) {
    if (!isfinite(w)) return 0.0f;
    w = fminf(fmaxf(w, -1.0f), 1.0f);
    if (c->leo) return w * (float)c->max_weight;
    float a = fabsf(w), t = (float)c->weight_threshold;
    if (a <= t) return 0.0f;
    return copysignf((a - t) / (1.0f - t) * (float)c->max_weight, w);
}

/* Answers for rows [0, n) of the query buffer, stored through dst (row r's weight or bias). */
static otc_status ask(otc_substrate *s, otc_neat_flat *cppn, int n) {
    return otc_neat_flat_forward(cppn, s->query, n, s->answer);
}

/* Layer l's z, the CPPN's layer input: -1 for the input grid to 1 for the output grid. */
static float layer_z(const otc_substrate *s, int l) {
    return 2.0f * (float)l / (float)(s->n_layers - 1) - 1.0f;
}

/* Row r asks for the connection (x1, y1) of layer l -> (x2, y2) of layer l + 1. */
static void put_row(otc_substrate *s, int r, int l, float x1, float y1, float x2, float y2) {
    float *q = s->query + (size_t)r * (size_t)s->cppn_in;
    otc_substrate_cppn_row(&s->cfg, q, x1, y1, x2, y2);
    if (s->cfg.layer_input) {
        q[s->cppn_in - 2] = layer_z(s, l);
        q[s->cppn_in - 1] = layer_z(s, l + 1);
    }
}

/* Layer l + 1's weights: pairs in the weight matrix's order (target-major), query_rows at a
 * time. */
static otc_status paint_weights(otc_substrate *s, otc_neat_flat *cppn, int l) {
    size_t n_src = (size_t)s->size[l], total = n_src * (size_t)s->size[l + 1];
    int leo = 1 + s->cfg.bias_output;
    size_t rows = (size_t)s->query_rows;
    for (size_t at = 0; at < total; at += rows) {
        int n = total - at < rows ? (int)(total - at) : (int)rows;
        for (int r = 0; r < n; r++) {
            size_t k = at + (size_t)r;
            float x1, y1, x2, y2;
            otc_substrate_coord(s, l, (int)(k % n_src), &x1, &y1);
            otc_substrate_coord(s, l + 1, (int)(k / n_src), &x2, &y2);
            put_row(s, r, l, x1, y1, x2, y2);
        }
        otc_status st = ask(s, cppn, n);
        if (st != OTC_OK) return st;
        for (int r = 0; r < n; r++) {
            const float *a = s->answer + (size_t)r * (size_t)s->cppn_out;
            bool expressed = !s->cfg.leo || a[leo] > 0.0f;
            s->w[l][at + (size_t)r] = expressed ? scale_weight(&s->cfg, a[0]) : 0.0f;
        }
    }
    return OTC_OK;
}

/* Layer l + 1's biases: the bias output queried from the origin to each node. */
static otc_status paint_biases(otc_substrate *s, otc_neat_flat *cppn, int l) {
    int total = s->size[l + 1];
    for (int at = 0; at < total; at += s->query_rows) {
        int n = total - at < s->query_rows ? total - at : s->query_rows;
        for (int r = 0; r < n; r++) {
            float x2, y2;
            otc_substrate_coord(s, l + 1, at + r, &x2, &y2);
            put_row(s, r, l, 0.0f, 0.0f, x2, y2);
        }
        otc_status st = ask(s, cppn, n);
        if (st != OTC_OK) return st;
        for (int r = 0; r < n; r++)
            s->b[l][at + r] = scale_weight(&s->cfg, s->answer[(size_t)r * (size_t)s->cppn_out + 1]);
    }
    return OTC_OK;
}

otc_status otc_substrate_paint(otc_substrate *s, otc_neat_flat *cppn) {
    if (!s || !cppn) return otc_fail(OTC_ERR_ARG, "otc_substrate_paint: NULL argument");
    if (s->cfg.evolvable) {
        otc_es_network_clear(&s->es);
        s->es_found = false;
        otc_status st =
            otc_es_search(&s->cfg, cppn, s->in_xy, s->size[0], s->out_xy, s->size[1], &s->es);
        if (st == OTC_OK) st = otc_neat_flat_build(s->es_flat, s->es.net, &s->es_cfg);
        s->es_found = st == OTC_OK;
        return st;
    }
    s->wt_stale = true;
    for (int l = 0; l + 1 < s->n_layers; l++) {
        otc_status st = paint_weights(s, cppn, l);
        if (st == OTC_OK && s->cfg.bias_output) st = paint_biases(s, cppn, l);
        if (st != OTC_OK) return st;
    }
    return OTC_OK;
}

otc_status otc_substrate_from_genome(const otc_neat_genome *cppn, const otc_neat_config *c,
                                     int scale, otc_neat_flat *scratch, otc_substrate **out) {
    return otc_substrate_pool_paint(NULL, cppn, c, scale, scratch, out);
}

otc_status otc_substrate_cost(otc_substrate *s, double *links, double *length2) {
    if (!s || !links || !length2) return otc_fail(OTC_ERR_ARG, "otc_substrate_cost: NULL");
    double n = 0, d2 = 0;
    if (s->cfg.evolvable) {
        if (!s->es_found) return otc_fail(OTC_ERR_STATE, "otc_substrate_cost: not painted");
        const otc_es_network *es = &s->es;
        for (int k = 0; k < es->net->n_conns; k++) {
            const otc_neat_conn *c = &es->net->conns[k];
            if (!c->enabled || c->weight == 0.0f) continue;
            double dx = es->x[c->out] - es->x[c->in], dy = es->y[c->out] - es->y[c->in];
            n += 1;
            d2 += dx * dx + dy * dy;
        }
    } else {
        for (int l = 0; l + 1 < s->n_layers; l++) {
            double dz = layer_z(s, l + 1) - layer_z(s, l);
            const float *w = s->w[l]; /* [size(l + 1), size(l)] */
            for (int j = 0; j < s->size[l + 1]; j++) {
                float xj, yj;
                otc_substrate_coord(s, l + 1, j, &xj, &yj);
                for (int i = 0; i < s->size[l]; i++) {
                    if (w[(size_t)j * (size_t)s->size[l] + (size_t)i] == 0.0f) continue;
                    float xi, yi;
                    otc_substrate_coord(s, l, i, &xi, &yi);
                    double dx = (double)xj - xi, dy = (double)yj - yi;
                    n += 1;
                    d2 += dx * dx + dy * dy + dz * dz;
                }
            }
        }
    }
    *links = n;
    *length2 = d2;
    return OTC_OK;
}

/* The two row buffers, [batch, widest layer after the input] each, grown to batch rows. */
static otc_status reserve_act(otc_substrate *s, int batch) {
    if (batch <= s->act_rows) return OTC_OK;
    int widest = 0;
    for (int l = 1; l < s->n_layers; l++)
        if (s->size[l] > widest) widest = s->size[l];
    for (int k = 0; k < 2; k++) {
        free(s->act[k]);
        s->act[k] = malloc(sizeof(float) * (size_t)batch * (size_t)widest);
    }
    if (!s->act[0] || !s->act[1]) {
        s->act_rows = 0;
        return otc_fail(OTC_ERR_NOMEM, "out of memory for %d substrate rows", batch);
    }
    s->act_rows = batch;
    return OTC_OK;
}

/* Layer l's weights transposed into wt[l] for every small layer, when w may have changed
 * since the last time (false: out of memory, the error set). */
static bool refresh_transposed(otc_substrate *s) {
    if (!s->wt_stale) return true;
    for (int l = 0; l + 1 < s->n_layers; l++) {
        size_t n_in = (size_t)s->size[l], n_out = (size_t)s->size[l + 1];
        if (n_in * n_out >= SMALL_LAYER_MACS) continue;
        if (!s->wt[l] && !(s->wt[l] = malloc(sizeof(float) * n_in * n_out))) {
            otc_fail(OTC_ERR_NOMEM, "out of memory for a substrate layer's transposed weights");
            return false;
        }
        for (size_t j = 0; j < n_out; j++)
            for (size_t i = 0; i < n_in; i++) s->wt[l][i * n_out + j] = s->w[l][j * n_in + i];
    }
    s->wt_stale = false;
    return true;
}

/* One row through a small layer: out = b + x W^T, from the transposed weights wt [n_in, n_out].
 * Each output sums its products in input order from 0, as a dot product along a row of W does
 * (and as the interpreter's MatMul does), so the result is the same to the bit; running along
 * wt's contiguous rows, the sum is over all outputs at once and vectorises. */
static void small_row(const float *restrict wt, const float *restrict b, const float *restrict x,
                      size_t n_in, size_t n_out, float *restrict out) {
    memset(out, 0, sizeof(float) * n_out);
    for (size_t i = 0; i < n_in; i++) {
        float xi = x[i];
        const float *restrict row = wt + i * n_out;
        for (size_t j = 0; j < n_out; j++) out[j] += xi * row[j];
    }
    for (size_t j = 0; j < n_out; j++) out[j] = b[j] + out[j];
}

/* x through the layers into y, the row buffers (reserved for batch) between them. */
static otc_status run_layers(otc_substrate *s, const float *x, int batch, float *y) {
    if (s->cfg.evolvable)
        return s->es_found ? otc_neat_flat_forward(s->es_flat, x, batch, y)
                           : otc_fail(OTC_ERR_STATE, "otc_substrate_forward: not painted");
    if (batch == 1 && !refresh_transposed(s)) return OTC_ERR_NOMEM;
    const float *in = x;
    for (int l = 0; l + 1 < s->n_layers; l++) {
        size_t n_in = (size_t)s->size[l], n_out = (size_t)s->size[l + 1];
        float *out = l + 2 == s->n_layers ? y : s->act[l % 2];
        if (batch == 1 && n_in * n_out < SMALL_LAYER_MACS) {
            small_row(s->wt[l], s->b[l], in, n_in, n_out, out);
        } else {
            /* y = x W^T + b through BLAS, as the interpreter's MatMul runs large products. */
            for (int r = 0; r < batch; r++)
                memcpy(out + (size_t)r * n_out, s->b[l], sizeof(float) * n_out);
            if (batch == 1)
                cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n_out, (int)n_in, 1.0f, s->w[l],
                            (int)n_in, in, 1, 1.0f, out, 1);
            else
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, (int)n_out, (int)n_in,
                            1.0f, in, (int)n_in, s->w[l], (int)n_in, 1.0f, out, (int)n_out);
        }
        if (!otc_act_forward_n((int)s->cfg.activation, s->alpha, out, out, (size_t)batch * n_out))
            return otc_fail(OTC_ERR_ARG, "substrate: unknown activation %d",
                            (int)s->cfg.activation);
        in = out;
    }
    return OTC_OK;
}

otc_status otc_substrate_forward(otc_substrate *s, const float *x, int batch, float *y) {
    if (!s || !x || !y || batch < 1)
        return otc_fail(OTC_ERR_ARG, "otc_substrate_forward: bad argument (batch %d)", batch);
    otc_status st = s->cfg.evolvable ? OTC_OK : reserve_act(s, batch);
    return st == OTC_OK ? run_layers(s, x, batch, y) : st;
}

otc_status otc_substrate_run(otc_substrate *s, const float *x, int batch, const float **y) {
    if (!s || !x || !y || batch < 1)
        return otc_fail(OTC_ERR_ARG, "otc_substrate_run: bad argument (batch %d)", batch);
    /* The last layer writes the buffer its input did not come from (an evolvable substrate
     * is two layers: its output goes to act[0]). */
    otc_status st = reserve_act(s, batch);
    float *out = s->act[s->n_layers % 2];
    if (st == OTC_OK) st = run_layers(s, x, batch, out);
    *y = st == OTC_OK ? out : NULL;
    return st;
}
