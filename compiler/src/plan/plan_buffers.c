/* The buffer plan: each stored value's lifetime in forward steps, then an offset in one flat
 * activation buffer where values whose lifetimes do not overlap share space. Unbatched values
 * come first; batched ones follow in units of the batch stride. */
#include <stdint.h>
#include <stdlib.h>

#include "plan_internal.h"

typedef struct {
    int64_t size; /* floats (batched: per unit of the stride) */
    int first, last;
    int64_t off;
    otc_extent *dst;
    bool batched;
    int id; /* position after sorting, while placing */
} slot;

static int by_time(const void *a, const void *b) {
    const slot *x = *(const slot *const *)a, *y = *(const slot *const *)b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->size != y->size) return x->size > y->size ? -1 : 1;
    return x < y ? -1 : (x > y);
}

/* The offsets in use by live slots: disjoint spans [lo, hi) (slots alive at the same time
 * never share space) in a treap ordered by lo, each node also knowing its subtree's first lo,
 * last hi and widest gap between neighbours, so the first gap of a given width is found in
 * O(log n) rather than by scanning every live slot. */
typedef struct {
    int64_t lo, hi;         /* this span */
    int64_t lo_min, hi_max; /* of the subtree (spans are disjoint: the last one's hi is the max) */
    int64_t gap;            /* widest gap between neighbouring spans in the subtree, or -1 */
    int left, right;        /* node indices, -1 for none */
    uint32_t prio;
} span;

static void pull(span *t, int i) {
    span *n = &t[i];
    const span *l = n->left >= 0 ? &t[n->left] : NULL, *r = n->right >= 0 ? &t[n->right] : NULL;
    n->lo_min = l ? l->lo_min : n->lo;
    n->hi_max = r ? r->hi_max : n->hi;
    n->gap = -1;
    if (l) {
        n->gap = l->gap > n->lo - l->hi_max ? l->gap : n->lo - l->hi_max;
    }
    if (r) {
        int64_t g = r->gap > r->lo_min - n->hi ? r->gap : r->lo_min - n->hi;
        if (g > n->gap) n->gap = g;
    }
}

/* Splits tree i into spans with lo < key (*a) and the rest (*b). */
static void split(span *t, int i, int64_t key, int *a, int *b) {
    if (i < 0) {
        *a = *b = -1;
    } else if (t[i].lo < key) {
        split(t, t[i].right, key, &t[i].right, b);
        pull(t, i);
        *a = i;
    } else {
        split(t, t[i].left, key, a, &t[i].left);
        pull(t, i);
        *b = i;
    }
}

static int merge(span *t, int a, int b) {
    if (a < 0) return b;
    if (b < 0) return a;
    if (t[a].prio > t[b].prio) {
        t[a].right = merge(t, t[a].right, b);
        pull(t, a);
        return a;
    }
    t[b].left = merge(t, a, t[b].left);
    pull(t, b);
    return b;
}

/* Does tree i, preceded by a span ending at prev, hold a gap of at least size? */
static bool has_gap(const span *t, int i, int64_t prev, int64_t size) {
    return i >= 0 && (t[i].lo_min - prev >= size || t[i].gap >= size);
}

/* First fit: the lowest offset free over the slot's whole lifetime, as a scan of the live
 * spans in offset order would find it. */
static int64_t first_fit(const span *t, int root, int64_t size) {
    int64_t prev = 0;
    if (!has_gap(t, root, prev, size)) return root >= 0 ? t[root].hi_max : 0;
    for (int i = root; i >= 0;) {
        if (has_gap(t, t[i].left, prev, size)) {
            i = t[i].left;
            continue;
        }
        int64_t before = t[i].left >= 0 ? t[t[i].left].hi_max : prev;
        if (t[i].lo - before >= size) return before;
        prev = t[i].hi;
        i = t[i].right;
    }
    return -1; /* not reached: has_gap said there is one */
}

/* Live slots by the last step they are read, earliest on top (a binary heap). */
static void heap_push(slot **h, int *n, slot *s) {
    int i = (*n)++;
    for (; i > 0 && h[(i - 1) / 2]->last > s->last; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
    h[i] = s;
}

static slot *heap_pop(slot **h, int *n) {
    slot *top = h[0], *x = h[--*n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1]->last < h[c]->last) c++;
        if (h[c]->last >= x->last) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = x;
    return top;
}

/* Slots in order of their first step; a slot overlaps in time every earlier one still live
 * at its first step, and is placed at the lowest offset free of those. O(n log n). Returns
 * the region's size, or -1 when out of memory. */
static int64_t place(slot **s, int n) {
    qsort(s, (size_t)n, sizeof *s, by_time);
    span *t = malloc(((size_t)n + 1) * sizeof *t);
    slot **live = malloc(((size_t)n + 1) * sizeof *live);
    int *node_of = malloc(((size_t)n + 1) * sizeof *node_of);
    if (!t || !live || !node_of) {
        free(t);
        free(live);
        free(node_of);
        return -1;
    }
    int root = -1, n_live = 0;
    uint32_t seed = 2463534242u;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        s[i]->id = i;
        while (n_live > 0 && live[0]->last < s[i]->first) {
            slot *gone = heap_pop(live, &n_live);
            int a, b, c;
            split(t, root, t[node_of[gone->id]].lo, &a, &b);
            split(t, b, t[node_of[gone->id]].lo + 1, &b, &c);
            root = merge(t, a, c);
        }
        int64_t at = first_fit(t, root, s[i]->size);
        s[i]->off = at;
        if (at + s[i]->size > total) total = at + s[i]->size;
        node_of[i] = -1;
        if (s[i]->size <= 0) continue; /* takes no space, so blocks nothing */
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        t[i] = (span){at, at + s[i]->size, 0, 0, -1, -1, -1, seed};
        pull(t, i);
        int a, b;
        split(t, root, at, &a, &b);
        root = merge(t, merge(t, a, i), b);
        node_of[i] = i;
        heap_push(live, &n_live, s[i]);
    }
    free(t);
    free(live);
    free(node_of);
    return total;
}

int64_t otc_plan_place_lifetimes(otc_plan_lifetime *l, int n) {
    slot *slots = calloc((size_t)n + 1, sizeof *slots);
    slot **order = malloc(((size_t)n + 1) * sizeof *order);
    int64_t total = -1;
    if (slots && order) {
        for (int i = 0; i < n; i++) {
            slots[i] = (slot){l[i].size, l[i].first, l[i].last, 0, NULL, true, 0};
            order[i] = &slots[i];
        }
        total = place(order, n);
        for (int i = 0; i < n && total >= 0; i++) l[i].off = slots[i].off;
    }
    free(slots);
    free(order);
    return total;
}

otc_status otc_plan_assign_buffers(otc_plan_ctx *c) {
    otc_plan *p = c->p;
    const otc_graph *g = p->graph;
    int end = p->n_forward_steps; /* "still needed after the forward pass" */

    /* Last reads: kernels reading a value from outside, and the output copies. */
    for (int i = 0; i < p->n_members; i++) {
        otc_id r = p->members[i];
        const otc_node *nd = otc_graph_node(g, r);
        int step = p->kernels[p->values[r].kernel].step;
        otc_plan_value *self = &p->values[r];
        if (self->first_step < 0) self->first_step = step;
        if (self->last_step < step) self->last_step = step;
        for (int s = 0; s < nd->n_inputs; s++) {
            if (!otc_plan_reads_input(g, r, s)) continue;
            otc_plan_value *v = &p->values[otc_plan_owner(p, nd->inputs[s])];
            if (v->last_step < step) v->last_step = step;
        }
    }
    for (int i = 0; i < p->n_forward_steps; i++) {
        const otc_plan_step *st = &p->steps[i];
        if (st->kind == OTC_STEP_LOAD && p->values[st->node].last_step < i)
            p->values[st->node].last_step = i;
        if (st->kind == OTC_STEP_STORE || st->kind == OTC_STEP_STATE) {
            otc_id read =
                st->kind == OTC_STEP_STORE ? st->node : otc_graph_node(g, st->node)->inputs[0];
            otc_plan_value *v = &p->values[otc_plan_owner(p, read)];
            if (v->last_step < i) v->last_step = i;
        }
    }

    int n_slots = 0;
    slot *slots = calloc(2 * (size_t)p->n_values + 1, sizeof *slots);
    slot **fixed = malloc((2 * (size_t)p->n_values + 1) * sizeof *fixed);
    slot **batched = malloc((2 * (size_t)p->n_values + 1) * sizeof *batched);
    if (!slots || !fixed || !batched) {
        free(slots);
        free(fixed);
        free(batched);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for the buffer plan");
    }
    /* State slots first in the batched region, one range at every step (see plan.h). */
    int64_t state = 0;
    for (otc_id id = 0; id < p->n_values; id++) {
        otc_plan_value *v = &p->values[id];
        if (v->storage != OTC_STORE_WORK || otc_graph_node(g, id)->op != OTC_OP_DELAY) continue;
        v->offset.per_batch = state; /* the region's start is added once it is known */
        v->first_step = 0;
        v->last_step = end;
        state += v->size;
    }
    for (otc_id id = 0; id < p->n_values; id++) {
        otc_plan_value *v = &p->values[id];
        if (otc_graph_node(g, id)->op == OTC_OP_DELAY) continue;
        /* A kept pre-activation needs space even when its neuron's output stays a local. */
        if (v->has_pre) slots[n_slots++] = (slot){1, v->first_step, end, 0, &v->pre, true, 0};
        if (v->storage != OTC_STORE_WORK) continue;
        if (v->kept || v->direct || ((p->options.train || p->options.keep_loss) && c->external[id]))
            v->last_step = end;
        slots[n_slots++] =
            (slot){v->size, v->first_step, v->last_step, 0, &v->offset, v->batched, 0};
    }
    int nf = 0, nb = 0;
    for (int i = 0; i < n_slots; i++) {
        slot *s = &slots[i];
        if (p->options.no_sharing) {
            s->first = 0;
            s->last = end;
        }
        if (s->batched) {
            batched[nb++] = s;
            p->work_unshared.per_batch += s->size;
        } else {
            fixed[nf++] = s;
            p->work_unshared.base += s->size;
        }
    }
    int64_t f_total = place(fixed, nf);
    if (f_total > 0 && nb > 0) f_total = otc_plan_align(f_total);
    int64_t b_total = f_total < 0 ? -1 : place(batched, nb);
    if (f_total >= 0 && b_total >= 0) {
        for (int i = 0; i < nf; i++) *fixed[i]->dst = (otc_extent){fixed[i]->off, 0};
        for (int i = 0; i < nb; i++)
            *batched[i]->dst = (otc_extent){f_total, state + batched[i]->off};
        for (otc_id id = 0; id < p->n_values; id++)
            if (p->values[id].storage == OTC_STORE_WORK &&
                otc_graph_node(g, id)->op == OTC_OP_DELAY)
                p->values[id].offset.base = f_total;
        p->work = (otc_extent){f_total, state + b_total};
        p->work_unshared.per_batch += state;
        p->state_offset = f_total;
        p->state_per_sample = state;
    }
    free(slots);
    free(fixed);
    free(batched);
    if (f_total < 0 || b_total < 0)
        return otc_fail(OTC_ERR_NOMEM, "out of memory for the buffer plan");
    return OTC_OK;
}
