/* NEAT genomes: creation, sorted gene lists, lookups, structural checks, and the gene
 * attribute helpers (initialise, perturb, clamp) every variation operator uses. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"
#include "otc/hyperneat.h"

uint64_t otc_neat_mix_seed(uint64_t seed, uint64_t a, uint64_t b) {
    /* splitmix64 finaliser over a simple combination: distinct (a, b) give unrelated seeds. */
    uint64_t z = seed ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xD1B54A32D192ED03ull);
    z += 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float otc_neat_attr_clamp(const otc_neat_float_attr *a, double v) {
    if (v < a->min_value) v = a->min_value;
    if (v > a->max_value) v = a->max_value;
    return (float)v;
}

float otc_neat_attr_init(const otc_neat_float_attr *a, otc_rng *rng) {
    if (a->init_uniform) {
        double lo = a->init_mean - 2 * a->init_stdev, hi = a->init_mean + 2 * a->init_stdev;
        return otc_neat_attr_clamp(a, lo + (hi - lo) * otc_rng_uniform(rng));
    }
    return otc_neat_attr_clamp(a, a->init_mean + a->init_stdev * otc_rng_normal(rng));
}

float otc_neat_new_tau(const otc_neat_config *c, otc_rng *rng) {
    return c->ctrnn ? otc_neat_attr_init(&c->time_constant, rng)
                    : otc_neat_attr_clamp(&c->time_constant, c->time_constant.init_mean);
}

float otc_neat_attr_mutate(const otc_neat_float_attr *a, float v, otc_rng *rng) {
    double r = otc_rng_uniform(rng);
    if (r < a->mutate_rate)
        return otc_neat_attr_clamp(a, v + a->mutate_power * otc_rng_normal(rng));
    if (r < a->mutate_rate + a->replace_rate) return otc_neat_attr_init(a, rng);
    return v;
}

otc_neat_genome *otc_neat_genome_new(void) {
    otc_neat_genome *g = calloc(1, sizeof *g);
    if (!g) otc_fail(OTC_ERR_NOMEM, "out of memory for a genome");
    return g;
}

void otc_neat_genome_free(otc_neat_genome *g) {
    if (!g) return;
    free(g->nodes);
    free(g->conns);
    free(g);
}

bool otc_neat_grow(void **items, int *cap, int need, size_t size) {
    if (need <= *cap) return true;
    int n = *cap ? *cap * 2 : 8;
    while (n < need) n *= 2;
    void *p = realloc(*items, size * (size_t)n);
    if (!p) return false;
    *items = p;
    *cap = n;
    return true;
}

/* Gene arrays start with room for this many genes: a population complexifies past the first
 * few without every recycled genome growing (1.5 kB a genome). */
enum { GENE_ROOM = 32 };

static bool grow_genes(void **items, int *cap, int need, size_t size) {
    return otc_neat_grow(items, cap, need < GENE_ROOM ? GENE_ROOM : need, size);
}

bool otc_neat_genome_reserve(otc_neat_genome *g, int nodes, int conns) {
    return grow_genes((void **)&g->nodes, &g->cap_nodes, nodes, sizeof *g->nodes) &&
           grow_genes((void **)&g->conns, &g->cap_conns, conns, sizeof *g->conns);
}

otc_status otc_neat_genome_copy_into(otc_neat_genome *dst, const otc_neat_genome *src) {
    if (dst == src) return OTC_OK;
    if (!otc_neat_genome_reserve(dst, src->n_nodes, src->n_conns))
        return otc_fail(OTC_ERR_NOMEM, "out of memory copying a genome");
    otc_neat_node *nodes = dst->nodes;
    otc_neat_conn *conns = dst->conns;
    int cap_nodes = dst->cap_nodes, cap_conns = dst->cap_conns;
    *dst = *src;
    dst->nodes = nodes;
    dst->conns = conns;
    dst->cap_nodes = cap_nodes;
    dst->cap_conns = cap_conns;
    if (src->n_nodes) memcpy(dst->nodes, src->nodes, sizeof *dst->nodes * (size_t)src->n_nodes);
    if (src->n_conns) memcpy(dst->conns, src->conns, sizeof *dst->conns * (size_t)src->n_conns);
    return OTC_OK;
}

otc_neat_genome *otc_neat_genome_copy(const otc_neat_genome *g) {
    otc_neat_genome *c = otc_neat_genome_new();
    if (!c) return NULL;
    *c = *g;
    c->nodes = NULL;
    c->conns = NULL;
    c->cap_nodes = g->n_nodes;
    c->cap_conns = g->n_conns;
    if (g->n_nodes) c->nodes = malloc(sizeof *c->nodes * (size_t)g->n_nodes);
    if (g->n_conns) c->conns = malloc(sizeof *c->conns * (size_t)g->n_conns);
    if ((g->n_nodes && !c->nodes) || (g->n_conns && !c->conns)) {
        otc_neat_genome_free(c);
        otc_fail(OTC_ERR_NOMEM, "out of memory copying a genome");
        return NULL;
    }
    if (g->n_nodes) memcpy(c->nodes, g->nodes, sizeof *c->nodes * (size_t)g->n_nodes);
    if (g->n_conns) memcpy(c->conns, g->conns, sizeof *c->conns * (size_t)g->n_conns);
    return c;
}

/* Binary search: index of the first element with key >= id. */
static int lower_node(const otc_neat_genome *g, int id) {
    int lo = 0, hi = g->n_nodes;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (g->nodes[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int lower_conn(const otc_neat_genome *g, int innov) {
    int lo = 0, hi = g->n_conns;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (g->conns[mid].innov < innov)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

otc_status otc_neat_genome_add_node(otc_neat_genome *g, const otc_neat_node *n) {
    int at = lower_node(g, n->id);
    if (at < g->n_nodes && g->nodes[at].id == n->id)
        return otc_fail(OTC_ERR_ARG, "genome already has node %d", n->id);
    if (!grow_genes((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes))
        return otc_fail(OTC_ERR_NOMEM, "out of memory adding a node gene");
    memmove(g->nodes + at + 1, g->nodes + at, sizeof *g->nodes * (size_t)(g->n_nodes - at));
    g->nodes[at] = *n;
    g->n_nodes++;
    return OTC_OK;
}

otc_status otc_neat_genome_add_conn(otc_neat_genome *g, const otc_neat_conn *c) {
    int at = lower_conn(g, c->innov);
    if (at < g->n_conns && g->conns[at].innov == c->innov)
        return otc_fail(OTC_ERR_ARG, "genome already has connection innovation %d", c->innov);
    if (!grow_genes((void **)&g->conns, &g->cap_conns, g->n_conns + 1, sizeof *g->conns))
        return otc_fail(OTC_ERR_NOMEM, "out of memory adding a connection gene");
    memmove(g->conns + at + 1, g->conns + at, sizeof *g->conns * (size_t)(g->n_conns - at));
    g->conns[at] = *c;
    g->n_conns++;
    return OTC_OK;
}

otc_neat_node *otc_neat_genome_find_node(const otc_neat_genome *g, int id) {
    int at = lower_node(g, id);
    return at < g->n_nodes && g->nodes[at].id == id ? &g->nodes[at] : NULL;
}

otc_neat_conn *otc_neat_genome_find_conn(const otc_neat_genome *g, int innov) {
    int at = lower_conn(g, innov);
    return at < g->n_conns && g->conns[at].innov == innov ? &g->conns[at] : NULL;
}

otc_neat_conn *otc_neat_genome_find_pair(const otc_neat_genome *g, int in, int out) {
    for (int i = 0; i < g->n_conns; i++)
        if (g->conns[i].in == in && g->conns[i].out == out) return &g->conns[i];
    return NULL;
}

int otc_neat_genome_hidden_count(const otc_neat_genome *g) {
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += g->nodes[i].type == OTC_NEAT_HIDDEN;
    return n;
}

int otc_neat_genome_enabled_count(const otc_neat_genome *g) {
    int n = 0;
    for (int i = 0; i < g->n_conns; i++) n += g->conns[i].enabled;
    return n;
}

/* Every connection gene counts, enabled or not: a disabled gene may be re-enabled later by
 * mutation or crossover, so the whole gene set is kept acyclic. */
bool otc_neat_creates_cycle(const otc_neat_genome *g, int in, int out) {
    if (in == out) return true;
    /* Is `in` reachable from `out`? Depth-first over node ids, marking by gene index. */
    int n = g->n_nodes;
    /* On the stack for the genomes evolution makes (mutation asks this for every candidate
     * connection); the heap only for larger ones. */
    enum { ON_STACK = 256 };
    int stack_here[ON_STACK];
    bool seen_here[ON_STACK];
    bool small = n < ON_STACK;
    int *stack = small ? stack_here : malloc(sizeof *stack * (size_t)(n + 1));
    bool *seen = small ? seen_here : malloc(sizeof *seen * ((size_t)n + 1));
    bool found = false;
    if (!stack || !seen) {
        if (!small) {
            free(stack);
            free(seen);
        }
        return true; /* out of memory: refusing the connection is the safe answer */
    }
    memset(seen, 0, sizeof *seen * ((size_t)n + 1));
    int top = 0;
    stack[top++] = out;
    int oi = lower_node(g, out);
    if (oi < n) seen[oi] = true;
    while (top && !found) {
        int v = stack[--top];
        for (int i = 0; i < g->n_conns && !found; i++) {
            if (g->conns[i].in != v) continue;
            int w = g->conns[i].out;
            if (w == in) found = true;
            int wi = lower_node(g, w);
            if (wi < n && g->nodes[wi].id == w && !seen[wi]) {
                seen[wi] = true;
                stack[top++] = w;
            }
        }
    }
    if (!small) {
        free(stack);
        free(seen);
    }
    return found;
}

otc_status otc_neat_genome_validate(const otc_neat_genome *g, bool feed_forward) {
    for (int i = 1; i < g->n_nodes; i++)
        if (g->nodes[i].id <= g->nodes[i - 1].id)
            return otc_fail(OTC_ERR_FORMAT, "genome: node ids not sorted/unique at node %d",
                            g->nodes[i].id);
    for (int i = 0; i < g->n_conns; i++) {
        const otc_neat_conn *c = &g->conns[i];
        if (i && c->innov <= g->conns[i - 1].innov)
            return otc_fail(OTC_ERR_FORMAT,
                            "genome: innovations not sorted/unique at connection %d", c->innov);
        const otc_neat_node *a = otc_neat_genome_find_node(g, c->in);
        const otc_neat_node *b = otc_neat_genome_find_node(g, c->out);
        if (!a || !b)
            return otc_fail(OTC_ERR_FORMAT, "genome: connection %d (%d -> %d) names a missing node",
                            c->innov, c->in, c->out);
        if (b->type == OTC_NEAT_INPUT || b->type == OTC_NEAT_BIAS)
            return otc_fail(OTC_ERR_FORMAT, "genome: connection %d leads into input node %d",
                            c->innov, c->out);
        if (!isfinite(c->weight))
            return otc_fail(OTC_ERR_FORMAT, "genome: connection %d has a non-finite weight",
                            c->innov);
        for (int j = i + 1; j < g->n_conns; j++)
            if (g->conns[j].in == c->in && g->conns[j].out == c->out)
                return otc_fail(OTC_ERR_FORMAT, "genome: connections %d and %d both join %d -> %d",
                                c->innov, g->conns[j].innov, c->in, c->out);
    }
    if (feed_forward) {
        /* Kahn's algorithm over all genes: a leftover node lies on a cycle. */
        int n = g->n_nodes;
        int *indeg = calloc((size_t)n + 1, sizeof *indeg),
            *queue = malloc(sizeof *queue * (size_t)(n + 1));
        if (!indeg || !queue) {
            free(indeg);
            free(queue);
            return otc_fail(OTC_ERR_NOMEM, "out of memory validating a genome");
        }
        for (int i = 0; i < g->n_conns; i++) indeg[lower_node(g, g->conns[i].out)]++;
        int head = 0, tail = 0;
        for (int i = 0; i < n; i++)
            if (!indeg[i]) queue[tail++] = i;
        while (head < tail) {
            int v = g->nodes[queue[head++]].id;
            for (int i = 0; i < g->n_conns; i++)
                if (g->conns[i].in == v) {
                    int w = lower_node(g, g->conns[i].out);
                    if (--indeg[w] == 0) queue[tail++] = w;
                }
        }
        int bad = -1;
        for (int i = 0; i < n && bad < 0; i++)
            if (indeg[i]) bad = g->nodes[i].id;
        free(indeg);
        free(queue);
        if (bad >= 0)
            return otc_fail(OTC_ERR_FORMAT,
                            "genome: feed-forward genome has a cycle through node %d", bad);
    }
    return OTC_OK;
}

static otc_status add_init_conn(otc_neat_genome *g, const otc_neat_config *c,
                                otc_neat_innovations *t, otc_rng *rng, int in, int out) {
    int innov = otc_neat_innovation_conn(t, in, out);
    if (innov < 0) return otc_fail(OTC_ERR_NOMEM, "out of memory for innovations");
    otc_neat_conn conn = {innov, in, out, otc_neat_attr_init(&c->weight, rng), c->enabled_default};
    return otc_neat_genome_add_conn(g, &conn);
}

otc_act otc_neat_new_act(const otc_neat_config *c, otc_rng *rng) {
    if (!c->activation_random) return c->activation_default;
    return c->activation_options[otc_rng_below(rng, (uint32_t)c->n_activation_options)];
}

int otc_neat_new_agg(const otc_neat_config *c, otc_rng *rng) {
    if (!c->aggregation_random) return c->aggregation_default;
    return c->aggregation_options[otc_rng_below(rng, (uint32_t)c->n_aggregation_options)];
}

otc_status otc_neat_genome_init(otc_neat_genome *g, const otc_neat_config *c,
                                otc_neat_innovations *t, otc_rng *rng) {
    if (!g || !c || !t || !rng) return otc_fail(OTC_ERR_ARG, "otc_neat_genome_init: NULL argument");
    int n_in = c->num_inputs, n_src = n_in + (c->bias_node ? 1 : 0);
    int first_out = n_src, first_hidden = n_src + c->num_outputs;
    otc_status s = OTC_OK;
    for (int i = 0; i < n_src && s == OTC_OK; i++) {
        otc_neat_node n = {i, i < n_in ? OTC_NEAT_INPUT : OTC_NEAT_BIAS, OTC_ACT_IDENTITY, 0, 1, 0,
                           1};
        s = otc_neat_genome_add_node(g, &n);
    }
    for (int i = first_out; i < first_hidden + c->num_hidden && s == OTC_OK; i++) {
        otc_act act = otc_neat_new_act(c, rng);
        int agg = otc_neat_new_agg(c, rng);
        otc_neat_node n = {i,
                           i < first_hidden ? OTC_NEAT_OUTPUT : OTC_NEAT_HIDDEN,
                           act,
                           otc_neat_attr_init(&c->bias, rng),
                           otc_neat_attr_init(&c->response, rng),
                           agg,
                           1};
        n.tau = otc_neat_new_tau(c, rng);
        s = otc_neat_genome_add_node(g, &n);
    }
    if (s != OTC_OK) return s;
    int n_hid = c->num_hidden, n_out = c->num_outputs;
    bool partial = c->initial_connection == OTC_NEAT_CONNECT_PARTIAL_DIRECT ||
                   c->initial_connection == OTC_NEAT_CONNECT_PARTIAL_NODIRECT;
    bool direct = c->initial_connection == OTC_NEAT_CONNECT_FULL_DIRECT ||
                  c->initial_connection == OTC_NEAT_CONNECT_PARTIAL_DIRECT || n_hid == 0;
    double frac = partial ? c->connection_fraction : 1.0;
    switch (c->initial_connection) {
    case OTC_NEAT_CONNECT_UNCONNECTED:
        break;
    case OTC_NEAT_CONNECT_FS_NEAT_NOHIDDEN:
    case OTC_NEAT_CONNECT_FS_NEAT_HIDDEN: {
        int src = (int)otc_rng_below(rng, (uint32_t)n_src);
        int last = c->initial_connection == OTC_NEAT_CONNECT_FS_NEAT_HIDDEN ? first_hidden + n_hid
                                                                            : first_hidden;
        for (int o = first_out; o < last && s == OTC_OK; o++)
            s = add_init_conn(g, c, t, rng, src, o);
        break;
    }
    default:
        /* inputs -> hidden, hidden -> outputs, and inputs -> outputs when direct */
        for (int h = first_hidden; h < first_hidden + n_hid && s == OTC_OK; h++)
            for (int i = 0; i < n_src && s == OTC_OK; i++)
                if (otc_rng_uniform(rng) < frac) s = add_init_conn(g, c, t, rng, i, h);
        for (int o = first_out; o < first_out + n_out && s == OTC_OK; o++) {
            for (int h = first_hidden; h < first_hidden + n_hid && s == OTC_OK; h++)
                if (otc_rng_uniform(rng) < frac) s = add_init_conn(g, c, t, rng, h, o);
            if (direct)
                for (int i = 0; i < n_src && s == OTC_OK; i++)
                    if (otc_rng_uniform(rng) < frac) s = add_init_conn(g, c, t, rng, i, o);
        }
        break;
    }
    if (s == OTC_OK) s = otc_substrate_seed_cppn(g, c, t, rng);
    return s;
}
