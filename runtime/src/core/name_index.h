/* Private to the runtime: an open-addressed hash index from strings that live elsewhere (node
 * names, metadata keys) to their small-integer ids, so lookups by name stay O(1) and building
 * a graph of n named nodes stays linear. */
#ifndef OTC_NAME_INDEX_H
#define OTC_NAME_INDEX_H

#include "otc/error.h"

/* The string of id i in the owner's storage (never NULL for an indexed id). */
typedef const char *(*otc_name_of)(const void *owner, int i);

typedef struct {
    int *slots;  /* id, -1 empty, -2 removed */
    int n_slots; /* a power of two, at most half full (ids and removed together) */
    int used;    /* slots holding an id or a removal mark */
} otc_name_index;

/* The id stored under key, or -1. */
int otc_name_index_find(const otc_name_index *x, const char *key, otc_name_of name_of,
                        const void *owner);
/* Adds id under its name (which the caller has checked is absent). */
otc_status otc_name_index_add(otc_name_index *x, int id, otc_name_of name_of, const void *owner);
/* Removes id, stored under key. */
void otc_name_index_remove(otc_name_index *x, const char *key, int id);
void otc_name_index_free(otc_name_index *x);

#endif
