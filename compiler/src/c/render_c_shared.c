/* Helper functions kept once per distinct text: a training file spells the forward pass in
 * NAME_forward and again in NAME_train_step, and identical products and loop programs then
 * call one copy (cc compiles each once). */
#include <stdlib.h>
#include <string.h>

#include "render_c_internal.h"

struct otc_cr_shared {
    char *key; /* kind, parameters and body */
    int id;
};

void otc_cr_fn_begin(otc_cr *c, otc_cr_fn *f) {
    f->sb = c->sb;
    f->indent = c->indent;
    otc_text_init(&f->body);
    c->sb = &f->body;
    c->indent = 1;
}

/* The number of a helper with this kind, parameters and body, or -1 (key set to the
 * candidate's, malloc'd; NULL when out of memory). */
static int find(otc_cr *c, const char *kind, const char *params, const char *body, char **key) {
    size_t n = strlen(kind) + strlen(params) + strlen(body) + 3;
    *key = malloc(n);
    if (!*key) return -1;
    char *k = *key;
    strcpy(k, kind);
    strcat(k, "(");
    strcat(k, params);
    strcat(k, ")");
    strcat(k, body);
    for (int i = 0; i < c->n_shared; i++)
        if (!strcmp(c->shared[i].key, k)) return c->shared[i].id;
    return -1;
}

int otc_cr_fn_end(otc_cr *c, otc_cr_fn *f, const char *decl, const char *kind, int *counter,
                  const char *params, const char *guard) {
    c->sb = f->sb;
    c->indent = f->indent;
    if (f->body.failed) {
        c->helpers->failed = true;
        otc_text_free(&f->body);
        return 0;
    }
    const char *body = f->body.text ? f->body.text : "";
    char *key = NULL;
    int id = c->share ? find(c, kind, params, body, &key) : -1;
    if (id >= 0) {
        free(key);
        otc_text_free(&f->body);
        return id;
    }
    id = (*counter)++;
    if (guard) otc_text_printf(c->helpers, "%s\n", guard);
    otc_text_printf(c->helpers, "%s %s_%s%d(%s) {\n", decl, c->name, kind, id, params);
    otc_text_puts(c->helpers, body);
    otc_text_puts(c->helpers, "}\n\n");
    if (guard) otc_text_puts(c->helpers, "#endif\n");
    otc_text_free(&f->body);
    if (!c->share) return id;
    if (!key) {
        c->helpers->failed = true;
        return id;
    }
    if (c->n_shared == c->cap_shared) {
        int cap = c->cap_shared ? 2 * c->cap_shared : 32;
        struct otc_cr_shared *s = realloc(c->shared, (size_t)cap * sizeof *s);
        if (!s) {
            free(key);
            c->helpers->failed = true;
            return id;
        }
        c->shared = s;
        c->cap_shared = cap;
    }
    c->shared[c->n_shared++] = (struct otc_cr_shared){key, id};
    return id;
}

void otc_cr_shared_free(otc_cr *c) {
    for (int i = 0; i < c->n_shared; i++) free(c->shared[i].key);
    free(c->shared);
    c->shared = NULL;
    c->n_shared = c->cap_shared = 0;
}
