/* The buffer plan: each stored value's lifetime in forward steps, then an offset in one flat
 * activation buffer where values whose lifetimes do not overlap share space. Unbatched values
 * come first; batched ones follow in units of the batch stride. */
#include <stdlib.h>

#include "plan_internal.h"

typedef struct {
    int64_t size; /* floats (batched: per unit of the stride) */
    int first, last;
    int64_t off;
    otc_extent *dst;
    bool batched;
} slot;

static int by_time(const void *a, const void *b) {
    const slot *x = *(const slot *const *)a, *y = *(const slot *const *)b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->size != y->size) return x->size > y->size ? -1 : 1;
    return x < y ? -1 : (x > y);
}

typedef struct {
    int64_t lo, hi;
} span;

static int by_lo(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->lo < y->lo ? -1 : (x->lo > y->lo);
}

/* First fit: the lowest offset free over the slot's whole lifetime. Returns the region's
 * size, or -1 when out of memory. */
static int64_t place(slot **s, int n) {
    qsort(s, (size_t)n, sizeof *s, by_time);
    span *busy = malloc(((size_t)n + 1) * sizeof *busy);
    if (!busy) return -1;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        int nb = 0;
        for (int j = 0; j < i; j++)
            if (s[j]->first <= s[i]->last && s[i]->first <= s[j]->last)
                busy[nb++] = (span){s[j]->off, s[j]->off + s[j]->size};
        qsort(busy, (size_t)nb, sizeof *busy, by_lo);
        int64_t at = 0;
        for (int j = 0; j < nb; j++) {
            if (at + s[i]->size <= busy[j].lo) break;
            if (busy[j].hi > at) at = busy[j].hi;
        }
        s[i]->off = at;
        if (at + s[i]->size > total) total = at + s[i]->size;
    }
    free(busy);
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
        if (st->kind == OTC_STEP_STORE) {
            otc_plan_value *v = &p->values[otc_plan_owner(p, st->node)];
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
    for (otc_id id = 0; id < p->n_values; id++) {
        otc_plan_value *v = &p->values[id];
        /* A kept pre-activation needs space even when its neuron's output stays a local. */
        if (v->has_pre) slots[n_slots++] = (slot){1, v->first_step, end, 0, &v->pre, true};
        if (v->storage != OTC_STORE_WORK) continue;
        if (v->kept || (p->options.train && c->external[id])) v->last_step = end;
        slots[n_slots++] = (slot){v->size, v->first_step, v->last_step, 0, &v->offset, v->batched};
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
    int64_t b_total = f_total < 0 ? -1 : place(batched, nb);
    if (f_total >= 0 && b_total >= 0) {
        for (int i = 0; i < nf; i++) *fixed[i]->dst = (otc_extent){fixed[i]->off, 0};
        for (int i = 0; i < nb; i++) *batched[i]->dst = (otc_extent){f_total, batched[i]->off};
        p->work = (otc_extent){f_total, b_total};
    }
    free(slots);
    free(fixed);
    free(batched);
    if (f_total < 0 || b_total < 0)
        return otc_fail(OTC_ERR_NOMEM, "out of memory for the buffer plan");
    return OTC_OK;
}
