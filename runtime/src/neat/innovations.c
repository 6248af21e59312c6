/* Innovation tracking: a hash map from connection (in, out) to its innovation number for the
 * whole run, and a per-generation map from split connection to the new node's id. */
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"

typedef struct {
    int64_t key;
    int value;
} entry;

/* Open addressing with linear probing; entries also kept in insertion order for listing. */
typedef struct {
    entry *items; /* insertion order */
    int n, cap;
    int *slots; /* index into items, -1 empty */
    int n_slots;
} map;

struct otc_neat_innovations {
    map conns;  /* (in << 32 | out) -> innovation */
    map splits; /* innovation -> node id, this generation only */
    int next_node, next_innov;
};

static uint64_t hash_key(int64_t k) {
    uint64_t z = (uint64_t)k * 0x9E3779B97F4A7C15ull;
    return z ^ (z >> 29);
}

static void map_free(map *m) {
    free(m->items);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static int *map_find_slot(const map *m, int64_t key) {
    if (!m->n_slots) return NULL;
    size_t mask = (size_t)m->n_slots - 1;
    for (size_t i = hash_key(key) & mask;; i = (i + 1) & mask) {
        if (m->slots[i] < 0 || m->items[m->slots[i]].key == key) return &m->slots[i];
    }
}

static int map_get(const map *m, int64_t key) {
    int *slot = map_find_slot(m, key);
    return slot && *slot >= 0 ? m->items[*slot].value : -1;
}

static bool map_rehash(map *m, int n_slots) {
    int *slots = malloc(sizeof *slots * (size_t)n_slots);
    if (!slots) return false;
    for (int i = 0; i < n_slots; i++) slots[i] = -1;
    free(m->slots);
    m->slots = slots;
    m->n_slots = n_slots;
    for (int i = 0; i < m->n; i++) *map_find_slot(m, m->items[i].key) = i;
    return true;
}

static bool map_put(map *m, int64_t key, int value) {
    if ((m->n + 1) * 2 > m->n_slots && !map_rehash(m, m->n_slots ? m->n_slots * 2 : 64))
        return false;
    int *slot = map_find_slot(m, key);
    if (*slot >= 0) {
        m->items[*slot].value = value;
        return true;
    }
    if (m->n == m->cap) {
        int cap = m->cap ? m->cap * 2 : 64;
        entry *items = realloc(m->items, sizeof *items * (size_t)cap);
        if (!items) return false;
        m->items = items;
        m->cap = cap;
    }
    m->items[m->n] = (entry){key, value};
    *slot = m->n++;
    return true;
}

static void map_clear(map *m) {
    m->n = 0;
    for (int i = 0; i < m->n_slots; i++) m->slots[i] = -1;
}

static int64_t pair_key(int in, int out) {
    return (int64_t)((uint64_t)(uint32_t)in << 32 | (uint32_t)out);
}

otc_neat_innovations *otc_neat_innovations_new(int next_node, int next_innov) {
    otc_neat_innovations *t = calloc(1, sizeof *t);
    if (!t) {
        otc_fail(OTC_ERR_NOMEM, "out of memory for innovation tracking");
        return NULL;
    }
    t->next_node = next_node;
    t->next_innov = next_innov;
    return t;
}

void otc_neat_innovations_free(otc_neat_innovations *t) {
    if (!t) return;
    map_free(&t->conns);
    map_free(&t->splits);
    free(t);
}

void otc_neat_innovations_new_generation(otc_neat_innovations *t) {
    map_clear(&t->splits);
}

int otc_neat_innovation_conn(otc_neat_innovations *t, int in, int out) {
    int64_t key = pair_key(in, out);
    int v = map_get(&t->conns, key);
    if (v >= 0) return v;
    if (!map_put(&t->conns, key, t->next_innov)) return -1;
    return t->next_innov++;
}

int otc_neat_innovation_split(otc_neat_innovations *t, int innov, bool taken) {
    if (taken) return t->next_node++;
    int v = map_get(&t->splits, innov);
    if (v >= 0) return v;
    if (!map_put(&t->splits, innov, t->next_node)) return -1;
    return t->next_node++;
}

int otc_neat_innovations_next_node(const otc_neat_innovations *t) {
    return t->next_node;
}
int otc_neat_innovations_next_innov(const otc_neat_innovations *t) {
    return t->next_innov;
}
int otc_neat_innovations_count(const otc_neat_innovations *t) {
    return t->conns.n;
}

void otc_neat_innovations_get(const otc_neat_innovations *t, int i, int *in, int *out, int *innov) {
    int64_t k = t->conns.items[i].key;
    *in = (int)(uint32_t)((uint64_t)k >> 32);
    *out = (int)(uint32_t)k;
    *innov = t->conns.items[i].value;
}

otc_status otc_neat_innovations_put(otc_neat_innovations *t, int in, int out, int innov) {
    if (innov < 0 || innov >= t->next_innov)
        return otc_fail(OTC_ERR_FORMAT, "innovation %d out of range", innov);
    if (!map_put(&t->conns, pair_key(in, out), innov))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for innovations");
    return OTC_OK;
}
