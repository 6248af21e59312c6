/* Substrates kept across a run's evaluations (otc_substrate_pool): painted again in place, so
 * an evaluation does not allocate and free a substrate's buffers at the top of the heap, which
 * glibc grows and trims (two brk calls) each time. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "otc/hyperneat.h"

struct otc_substrate_pool {
    pthread_mutex_t lock;
    bool keyed;        /* c and scale say what the kept substrates were made for */
    otc_neat_config c; /* by value: a config at the same address may be another */
    int scale;
    otc_substrate **kept;
    int n, cap;
};

otc_substrate_pool *otc_substrate_pool_new(void) {
    otc_substrate_pool *p = calloc(1, sizeof *p);
    if (p && pthread_mutex_init(&p->lock, NULL)) {
        free(p);
        return NULL;
    }
    return p;
}

static void drop_kept(otc_substrate_pool *p) {
    for (int i = 0; i < p->n; i++) otc_substrate_free(p->kept[i]);
    p->n = 0;
}

void otc_substrate_pool_free(otc_substrate_pool *p) {
    if (!p) return;
    drop_kept(p);
    free(p->kept);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Whether p keeps substrates for (c, scale). Under p's lock. */
static bool keeps(const otc_substrate_pool *p, const otc_neat_config *c, int scale) {
    return p->keyed && p->scale == scale && !memcmp(&p->c, c, sizeof *c);
}

/* A kept substrate for (c, scale), or NULL; p now keeps (c, scale)'s. */
static otc_substrate *take(otc_substrate_pool *p, const otc_neat_config *c, int scale) {
    if (!p) return NULL;
    pthread_mutex_lock(&p->lock);
    if (!keeps(p, c, scale)) {
        drop_kept(p);
        p->c = *c;
        p->scale = scale;
        p->keyed = true;
    }
    otc_substrate *s = p->n ? p->kept[--p->n] : NULL;
    pthread_mutex_unlock(&p->lock);
    return s;
}

otc_status otc_substrate_pool_paint(otc_substrate_pool *p, const otc_neat_genome *cppn,
                                    const otc_neat_config *c, int scale, otc_neat_flat *scratch,
                                    otc_substrate **out) {
    if (!cppn || !c || !out) return otc_fail(OTC_ERR_ARG, "otc_substrate_pool_paint: NULL");
    *out = NULL;
    otc_neat_flat *f = scratch, *own = NULL;
    if (!f && !(f = own = otc_neat_flat_new()))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a CPPN program");
    otc_status st = otc_neat_flat_build(f, cppn, c);
    otc_substrate *s = st == OTC_OK ? take(p, c, scale) : NULL;
    if (st == OTC_OK && !s) st = otc_substrate_new(c, scale, &s);
    if (st == OTC_OK) st = otc_substrate_paint(s, f);
    otc_neat_flat_free(own);
    if (st != OTC_OK) {
        otc_substrate_pool_give(p, c, scale, s);
        return st;
    }
    *out = s;
    return OTC_OK;
}

void otc_substrate_pool_give(otc_substrate_pool *p, const otc_neat_config *c, int scale,
                             otc_substrate *s) {
    if (!s) return;
    if (!p) {
        otc_substrate_free(s);
        return;
    }
    pthread_mutex_lock(&p->lock);
    bool keep = keeps(p, c, scale);
    if (keep && p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 4;
        otc_substrate **k = realloc(p->kept, sizeof *k * (size_t)cap);
        if (k) {
            p->kept = k;
            p->cap = cap;
        } else {
            keep = false;
        }
    }
    if (keep) p->kept[p->n++] = s;
    pthread_mutex_unlock(&p->lock);
    if (!keep) otc_substrate_free(s);
}
