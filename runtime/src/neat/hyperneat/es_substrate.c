/* ES-HyperNEAT (Risi and Stanley 2012): hidden nodes placed where a quadtree search finds
 * information in the CPPN's weight pattern, band pruning, the search iterated from discovered
 * nodes, and nodes on no input-to-output path pruned; the result is a feed-forward network. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otc/hyperneat.h"

/* One square of the quadtree: centre, half side, the (clamped) CPPN weight at the centre, its
 * LEO verdict, its first child (-1: a leaf), and the leaves' weight sums for the variance. */
typedef struct {
    float x, y, half, w;
    bool leo_ok;
    int child;
    int leaves;
    double sum, sumsq;
} square;

/* A point the search expresses a connection to or from, and the connection's weight. */
typedef struct {
    float x, y, w;
} found;

typedef struct {
    int src, dst; /* network node indices: inputs, outputs, hidden */
    float w;
} link;

typedef struct {
    const otc_neat_substrate *cfg;
    otc_neat_flat *cppn;
    int cin, cout;
    float *q, *a; /* query and answer rows */
    size_t q_cap, a_cap;
    square *t;
    int nt;
    size_t t_cap;
    int *frontier, *next, *cand;
    size_t front_cap, next_cap, cand_cap;
    found *hits;
    int n_hits;
    size_t hits_cap;
    /* Hidden nodes: coordinates in discovery order, and an open-addressing table from
     * coordinates to index. */
    float *hx, *hy;
    int nh;
    size_t hx_cap, hy_cap;
    int *table;
    size_t table_size;
    link *links;
    size_t n_links, links_cap;
} search;

/* Grows *p (of *cap items of `size` bytes) to hold `need`. */
static bool grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * size);
    if (!q) return false;
    *p = q;
    *cap = n;
    return true;
}

static otc_status oom(void) {
    return otc_fail(OTC_ERR_NOMEM, "out of memory in the ES-HyperNEAT search");
}

/* Rows [0, n) of the query buffer through the CPPN. */
static otc_status ask(search *s, int n) {
    return n ? otc_neat_flat_forward(s->cppn, s->q, n, s->a) : OTC_OK;
}

static bool reserve_rows(search *s, int n) {
    return grow((void **)&s->q, &s->q_cap, (size_t)n * (size_t)s->cin, sizeof(float)) &&
           grow((void **)&s->a, &s->a_cap, (size_t)n * (size_t)s->cout, sizeof(float));
}

/* Row r asks for the connection between the searched-from point (a, b) and (x, y): outgoing
 * (a, b) -> (x, y), else (x, y) -> (a, b). */
static void put(search *s, int r, bool outgoing, float a, float b, float x, float y) {
    float *q = s->q + (size_t)r * (size_t)s->cin;
    if (outgoing)
        otc_substrate_cppn_row(s->cfg, q, a, b, x, y);
    else
        otc_substrate_cppn_row(s->cfg, q, x, y, a, b);
}

/* Answer row r's weight, clamped to [-1, 1] (a non-finite answer is 0: no information). */
static float weight_of(const search *s, int r) {
    float w = s->a[(size_t)r * (size_t)s->cout];
    return isfinite(w) ? fminf(fmaxf(w, -1.0f), 1.0f) : 0.0f;
}

static bool leo_of(const search *s, int r) {
    return !s->cfg->leo || s->a[(size_t)r * (size_t)s->cout + s->cout - 1] > 0.0f;
}

static double variance4(const square *c) {
    double m = (c[0].w + c[1].w + c[2].w + c[3].w) / 4.0, v = 0;
    for (int k = 0; k < 4; k++) v += (c[k].w - m) * (c[k].w - m);
    return v / 4.0;
}

/* The paper's division and initialisation: [-1, 1]^2 divided into quarters breadth first;
 * a square at depth d (the root is depth 0) is divided when d < initial_depth, or when
 * d < maximum_depth and the weights at its parent's four quarters (it and its siblings) have
 * a variance above division_threshold. */
static otc_status divide(search *s, float a, float b, bool outgoing) {
    s->nt = 1;
    s->t[0] = (square){0.0f, 0.0f, 1.0f, 0.0f, true, -1, 0, 0, 0};
    int n_front = 1, depth = 0;
    s->frontier[0] = 0;
    while (n_front) {
        size_t need = (size_t)s->nt + 4 * (size_t)n_front;
        if (!grow((void **)&s->t, &s->t_cap, need, sizeof *s->t) || !reserve_rows(s, 4 * n_front) ||
            !grow((void **)&s->next, &s->next_cap, 4 * (size_t)n_front, sizeof(int)))
            return oom();
        for (int i = 0; i < n_front; i++) {
            square *p = &s->t[s->frontier[i]];
            float h = p->half / 2;
            p->child = s->nt;
            for (int k = 0; k < 4; k++) {
                square c = {
                    p->x + (k & 1 ? h : -h), p->y + (k & 2 ? h : -h), h, 0, true, -1, 0, 0, 0};
                put(s, 4 * i + k, outgoing, a, b, c.x, c.y);
                s->t[s->nt++] = c;
            }
        }
        otc_status st = ask(s, 4 * n_front);
        if (st != OTC_OK) return st;
        int n_next = 0;
        depth++;
        for (int i = 0; i < n_front; i++) {
            square *c = &s->t[s->t[s->frontier[i]].child];
            for (int k = 0; k < 4; k++) {
                c[k].w = weight_of(s, 4 * i + k);
                c[k].leo_ok = leo_of(s, 4 * i + k);
            }
            bool more =
                depth < s->cfg->initial_depth ||
                (depth < s->cfg->maximum_depth && variance4(c) > s->cfg->division_threshold);
            if (more)
                for (int k = 0; k < 4; k++) s->next[n_next++] = (int)(c - s->t) + k;
        }
        int *tmp = s->frontier;
        size_t tmp_cap = s->front_cap;
        s->frontier = s->next;
        s->front_cap = s->next_cap;
        s->next = tmp;
        s->next_cap = tmp_cap;
        n_front = n_next;
    }
    /* Leaf sums, children before parents (children always have the higher index). */
    for (int i = s->nt - 1; i >= 0; i--) {
        square *p = &s->t[i];
        if (p->child < 0) {
            p->leaves = 1;
            p->sum = p->w;
            p->sumsq = (double)p->w * p->w;
            continue;
        }
        p->leaves = 0;
        p->sum = p->sumsq = 0;
        for (int k = 0; k < 4; k++) {
            const square *c = &s->t[p->child + k];
            p->leaves += c->leaves;
            p->sum += c->sum;
            p->sumsq += c->sumsq;
        }
    }
    return OTC_OK;
}

/* The variance of the weights at the leaves under square i (0 for a leaf). */
static double variance(const search *s, int i) {
    const square *p = &s->t[i];
    if (p->child < 0) return 0.0;
    double m = p->sum / p->leaves;
    return fmax(p->sumsq / p->leaves - m * m, 0.0);
}

/* Squares the pruning keeps as candidates, depth first: a square whose leaves vary at least
 * variance_threshold is looked into, any other is a candidate. */
static otc_status collect(search *s, int i, int *n) {
    const square *p = &s->t[i];
    for (int k = 0; k < 4; k++) {
        int c = p->child + k;
        if (s->t[c].child >= 0 && variance(s, c) >= s->cfg->variance_threshold) {
            otc_status st = collect(s, c, n);
            if (st != OTC_OK) return st;
        } else {
            if (!grow((void **)&s->cand, &s->cand_cap, (size_t)*n + 1, sizeof(int))) return oom();
            s->cand[(*n)++] = c;
        }
    }
    return OTC_OK;
}

/* The paper's pruning and extraction from point (a, b): each candidate square is expressed
 * when it lies in a band, i.e. when max(min(dl, dr), min(dt, db)) > band_threshold, where dl..db
 * are the differences between its weight and the weights one square's side to its left, right,
 * top and bottom (and, with LEO, when the LEO output at its centre is > 0). The hits go to
 * s->hits in depth-first order. */
static otc_status extract(search *s, float a, float b, bool outgoing) {
    otc_status st = divide(s, a, b, outgoing);
    int n = 0;
    if (st == OTC_OK) st = collect(s, 0, &n);
    if (st == OTC_OK && !reserve_rows(s, 4 * n)) st = oom();
    if (st != OTC_OK) return st;
    static const int dx[4] = {-1, 1, 0, 0}, dy[4] = {0, 0, -1, 1};
    for (int i = 0; i < n; i++) {
        const square *c = &s->t[s->cand[i]];
        float side = 2 * c->half;
        for (int k = 0; k < 4; k++)
            put(s, 4 * i + k, outgoing, a, b, c->x + dx[k] * side, c->y + dy[k] * side);
    }
    if ((st = ask(s, 4 * n)) != OTC_OK) return st;
    s->n_hits = 0;
    if (!grow((void **)&s->hits, &s->hits_cap, (size_t)n, sizeof *s->hits)) return oom();
    for (int i = 0; i < n; i++) {
        const square *c = &s->t[s->cand[i]];
        float d[4];
        for (int k = 0; k < 4; k++) d[k] = fabsf(c->w - weight_of(s, 4 * i + k));
        float band = fmaxf(fminf(d[0], d[1]), fminf(d[2], d[3]));
        if (band > s->cfg->band_threshold && c->leo_ok)
            s->hits[s->n_hits++] = (found){c->x, c->y, c->w * (float)s->cfg->max_weight};
    }
    return OTC_OK;
}

static size_t slot_of(const search *s, float x, float y) {
    uint32_t ux, uy;
    memcpy(&ux, &x, 4);
    memcpy(&uy, &y, 4);
    uint64_t h = ((uint64_t)ux * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)uy * 0xC2B2AE3D27D4EB4Full);
    return (size_t)(h ^ (h >> 29)) & (s->table_size - 1);
}

/* The hidden node at (x, y): its index, created when `add` (-1 when absent and not added,
 * -2 when out of memory). Quadtree centres are exact dyadic fractions, so equality is exact. */
static int hidden_at(search *s, float x, float y, bool add) {
    size_t i = slot_of(s, x, y);
    for (; s->table[i] >= 0; i = (i + 1) & (s->table_size - 1))
        if (s->hx[s->table[i]] == x && s->hy[s->table[i]] == y) return s->table[i];
    if (!add) return -1;
    if (!grow((void **)&s->hx, &s->hx_cap, (size_t)s->nh + 1, sizeof(float)) ||
        !grow((void **)&s->hy, &s->hy_cap, (size_t)s->nh + 1, sizeof(float)))
        return -2;
    s->hx[s->nh] = x;
    s->hy[s->nh] = y;
    s->table[i] = s->nh;
    return s->nh++;
}

static bool add_link(search *s, int src, int dst, float w) {
    if (!grow((void **)&s->links, &s->links_cap, s->n_links + 1, sizeof *s->links)) return false;
    s->links[s->n_links++] = (link){src, dst, w};
    return true;
}

/* The most hidden nodes a search can place: every square centre below the root. */
static size_t max_hidden(int depth) {
    size_t n = 0, level = 1;
    for (int d = 1; d <= depth; d++) n += level *= 4;
    return n;
}

double otc_es_max_connections(const otc_neat_substrate *sub, int n_in, int n_out) {
    return ((double)n_in + n_out + (double)max_hidden(sub->maximum_depth)) *
           pow(4.0, sub->maximum_depth);
}

static void search_free(search *s) {
    free(s->q);
    free(s->a);
    free(s->t);
    free(s->frontier);
    free(s->next);
    free(s->cand);
    free(s->hits);
    free(s->hx);
    free(s->hy);
    free(s->table);
    free(s->links);
}

void otc_es_network_clear(otc_es_network *n) {
    if (!n) return;
    free(n->x);
    free(n->y);
    otc_neat_genome_free(n->net);
    memset(n, 0, sizeof *n);
}

/* The search's links as n: hidden nodes on a path from an input to an output kept (in
 * discovery order), the rest and their links dropped. */
static otc_status keep_paths(search *s, const float *in_xy, int n_in, const float *out_xy,
                             int n_out, otc_act act, otc_es_network *n) {
    int total = n_in + n_out + s->nh;
    char *fwd = calloc((size_t)total, 1), *back = calloc((size_t)total, 1);
    int *id = malloc(sizeof(int) * (size_t)total);
    otc_status st = OTC_OK;
    if (!fwd || !back || !id) st = oom();
    /* Links run input -> hidden, hidden -> later hidden, hidden -> output: one pass in
     * discovery order reaches forward, one in reverse reaches back. Links are stored with
     * inputs' first, then hidden ones' in source order, then outputs'. */
    for (int i = 0; st == OTC_OK && i < n_in; i++) fwd[i] = 1;
    for (int i = 0; st == OTC_OK && i < n_out; i++) back[n_in + i] = 1;
    for (size_t k = 0; st == OTC_OK && k < s->n_links; k++)
        if (fwd[s->links[k].src]) fwd[s->links[k].dst] = 1;
    for (size_t k = s->n_links; st == OTC_OK && k-- > 0;)
        if (back[s->links[k].dst]) back[s->links[k].src] = 1;
    int nh = 0;
    if (st == OTC_OK) {
        for (int i = 0; i < n_in + n_out; i++) id[i] = i;
        for (int h = 0; h < s->nh; h++) {
            int v = n_in + n_out + h;
            id[v] = fwd[v] && back[v] ? n_in + n_out + nh++ : -1;
        }
        n->n_inputs = n_in;
        n->n_outputs = n_out;
        n->n_hidden = nh;
        n->x = malloc(sizeof(float) * (size_t)(n_in + n_out + nh));
        n->y = malloc(sizeof(float) * (size_t)(n_in + n_out + nh));
        n->net = otc_neat_genome_new();
        if (!n->x || !n->y || !n->net) st = oom();
    }
    for (int v = 0; st == OTC_OK && v < total; v++) {
        if (id[v] < 0) continue;
        const float *xy = v < n_in           ? in_xy + 2 * v
                          : v < n_in + n_out ? out_xy + 2 * (v - n_in)
                                             : NULL;
        n->x[id[v]] = xy ? xy[0] : s->hx[v - n_in - n_out];
        n->y[id[v]] = xy ? xy[1] : s->hy[v - n_in - n_out];
        otc_neat_node node = {
            id[v], v < n_in ? OTC_NEAT_INPUT : v < n_in + n_out ? OTC_NEAT_OUTPUT : OTC_NEAT_HIDDEN,
            act,   0.0f,
            1.0f,  0,
            1.0f};
        st = otc_neat_genome_add_node(n->net, &node);
    }
    int innov = 0;
    for (size_t k = 0; st == OTC_OK && k < s->n_links; k++) {
        const link *l = &s->links[k];
        if (id[l->src] < 0 || id[l->dst] < 0) continue;
        otc_neat_conn c = {innov++, id[l->src], id[l->dst], l->w, true};
        st = otc_neat_genome_add_conn(n->net, &c);
    }
    free(fwd);
    free(back);
    free(id);
    return st;
}

/* With bias_output, each hidden and output node's bias: the bias output at (0, 0, x, y),
 * clamped to [-1, 1] and scaled by max_weight as the search's weights. */
static otc_status paint_biases(search *s, otc_es_network *n) {
    int first = n->n_inputs, total = n->n_inputs + n->n_outputs + n->n_hidden;
    if (!s->cfg->bias_output || total == first) return OTC_OK;
    if (!reserve_rows(s, total - first)) return oom();
    for (int v = first; v < total; v++) put(s, v - first, true, 0.0f, 0.0f, n->x[v], n->y[v]);
    otc_status st = ask(s, total - first);
    for (int v = first; st == OTC_OK && v < total; v++) {
        float b = s->a[(size_t)(v - first) * (size_t)s->cout + 1];
        b = isfinite(b) ? fminf(fmaxf(b, -1.0f), 1.0f) : 0.0f;
        otc_neat_genome_find_node(n->net, v)->bias = b * (float)s->cfg->max_weight;
    }
    return st;
}

static otc_status run_search(search *s, const float *in_xy, int n_in, const float *out_xy,
                             int n_out) {
    int base = n_in + n_out; /* network index of hidden node 0 */
    otc_status st = OTC_OK;
    /* From every input, outgoing. */
    for (int i = 0; st == OTC_OK && i < n_in; i++) {
        st = extract(s, in_xy[2 * i], in_xy[2 * i + 1], true);
        for (int k = 0; st == OTC_OK && k < s->n_hits; k++) {
            int h = hidden_at(s, s->hits[k].x, s->hits[k].y, true);
            if (h < 0 || !add_link(s, i, base + h, s->hits[k].w)) st = oom();
        }
    }
    /* From the hidden nodes found in the previous round, iteration_level times. A link into a
     * node found no later than its source would be recurrent: otc's substrates are
     * feed-forward, so it is dropped. */
    int from = 0;
    for (int it = 0; st == OTC_OK && it < s->cfg->iteration_level; it++) {
        int to = s->nh;
        for (int h = from; st == OTC_OK && h < to; h++) {
            st = extract(s, s->hx[h], s->hy[h], true);
            for (int k = 0; st == OTC_OK && k < s->n_hits; k++) {
                int t = hidden_at(s, s->hits[k].x, s->hits[k].y, true);
                if (t == -2 || (t > h && !add_link(s, base + h, base + t, s->hits[k].w)))
                    st = oom();
            }
        }
        from = to;
    }
    /* Into every output, incoming from the hidden nodes found. */
    for (int o = 0; st == OTC_OK && o < n_out; o++) {
        st = extract(s, out_xy[2 * o], out_xy[2 * o + 1], false);
        for (int k = 0; st == OTC_OK && k < s->n_hits; k++) {
            int h = hidden_at(s, s->hits[k].x, s->hits[k].y, false);
            if (h >= 0 && !add_link(s, base + h, n_in + o, s->hits[k].w)) st = oom();
        }
    }
    return st;
}

/* A search's buffers for sub and cppn, sized for the first division. */
static otc_status search_init(search *s, const otc_neat_substrate *sub, otc_neat_flat *cppn) {
    *s = (search){.cfg = sub, .cppn = cppn};
    s->cin = otc_substrate_cppn_inputs(sub);
    s->cout = otc_substrate_cppn_outputs(sub);
    s->table_size = 64;
    while (s->table_size < 2 * max_hidden(sub->maximum_depth)) s->table_size *= 2;
    s->table = malloc(sizeof(int) * s->table_size);
    if (!s->table || !grow((void **)&s->t, &s->t_cap, 64, sizeof *s->t) ||
        !grow((void **)&s->frontier, &s->front_cap, 1, sizeof(int)))
        return oom();
    memset(s->table, 0xff, sizeof(int) * s->table_size);
    return OTC_OK;
}

otc_status otc_es_points(const otc_neat_substrate *sub, otc_neat_flat *cppn, float a, float b,
                         bool outgoing, float **xyw, int *n) {
    if (!sub || !cppn || !xyw || !n) return otc_fail(OTC_ERR_ARG, "otc_es_points: NULL argument");
    *xyw = NULL;
    *n = 0;
    search s;
    otc_status st = search_init(&s, sub, cppn);
    if (st == OTC_OK) st = extract(&s, a, b, outgoing);
    if (st == OTC_OK && !(*xyw = malloc(sizeof(float) * 3 * (size_t)(s.n_hits + 1)))) st = oom();
    for (int k = 0; st == OTC_OK && k < s.n_hits; k++) {
        (*xyw)[3 * k] = s.hits[k].x;
        (*xyw)[3 * k + 1] = s.hits[k].y;
        (*xyw)[3 * k + 2] = s.hits[k].w;
    }
    if (st == OTC_OK) *n = s.n_hits;
    search_free(&s);
    return st;
}

otc_status otc_es_search(const otc_neat_substrate *sub, otc_neat_flat *cppn, const float *in_xy,
                         int n_in, const float *out_xy, int n_out, otc_es_network *out) {
    if (!sub || !cppn || !in_xy || !out_xy || !out || n_in < 1 || n_out < 1)
        return otc_fail(OTC_ERR_ARG, "otc_es_search: bad argument");
    memset(out, 0, sizeof *out);
    search s;
    otc_status st = search_init(&s, sub, cppn);
    if (st == OTC_OK) st = run_search(&s, in_xy, n_in, out_xy, n_out);
    if (st == OTC_OK) st = keep_paths(&s, in_xy, n_in, out_xy, n_out, sub->activation, out);
    if (st == OTC_OK) st = paint_biases(&s, out);
    search_free(&s);
    if (st != OTC_OK) otc_es_network_clear(out);
    return st;
}
