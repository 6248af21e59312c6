/* The string-to-id hash index behind graph name and metadata lookups (FNV-1a, linear probing,
 * removal marks so renaming and truncating need no rebuild). */
#include "name_index.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

int otc_name_index_find(const otc_name_index *x, const char *key, otc_name_of name_of,
                        const void *owner) {
    if (!x->n_slots || !key) return -1;
    uint32_t mask = (uint32_t)x->n_slots - 1;
    for (uint32_t h = hash(key) & mask;; h = (h + 1) & mask) {
        int id = x->slots[h];
        if (id == -1) return -1;
        if (id >= 0 && !strcmp(name_of(owner, id), key)) return id;
    }
}

/* Rebuilds into n_slots slots, dropping removal marks. */
static otc_status rehash(otc_name_index *x, int n_slots, otc_name_of name_of, const void *owner) {
    int *slots = malloc((size_t)n_slots * sizeof *slots);
    if (!slots) return otc_fail(OTC_ERR_NOMEM, "out of memory for a name index");
    for (int i = 0; i < n_slots; i++) slots[i] = -1;
    int used = 0;
    uint32_t mask = (uint32_t)n_slots - 1;
    for (int i = 0; i < x->n_slots; i++) {
        int id = x->slots[i];
        if (id < 0) continue;
        uint32_t h = hash(name_of(owner, id)) & mask;
        while (slots[h] != -1) h = (h + 1) & mask;
        slots[h] = id;
        used++;
    }
    free(x->slots);
    x->slots = slots;
    x->n_slots = n_slots;
    x->used = used;
    return OTC_OK;
}

otc_status otc_name_index_add(otc_name_index *x, int id, otc_name_of name_of, const void *owner) {
    if (2 * (x->used + 1) > x->n_slots) {
        int live = 0;
        for (int i = 0; i < x->n_slots; i++) live += x->slots[i] >= 0;
        int n = 16;
        while (n < 4 * (live + 1) && n < (1 << 29)) n *= 2;
        otc_status st = rehash(x, n, name_of, owner);
        if (st) return st;
    }
    uint32_t mask = (uint32_t)x->n_slots - 1;
    uint32_t h = hash(name_of(owner, id)) & mask;
    while (x->slots[h] >= 0) h = (h + 1) & mask;
    if (x->slots[h] == -1) x->used++;
    x->slots[h] = id;
    return OTC_OK;
}

void otc_name_index_remove(otc_name_index *x, const char *key, int id) {
    if (!x->n_slots || !key) return;
    uint32_t mask = (uint32_t)x->n_slots - 1;
    for (uint32_t h = hash(key) & mask; x->slots[h] != -1; h = (h + 1) & mask) {
        if (x->slots[h] == id) {
            x->slots[h] = -2;
            return;
        }
    }
}

void otc_name_index_free(otc_name_index *x) {
    free(x->slots);
    x->slots = NULL;
    x->n_slots = x->used = 0;
}
