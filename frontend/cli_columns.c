/* A model's columns: the CSV columns it was trained on, recorded in its metadata ("columns")
 * by train and evolve, and matched by name against the header of the data it later runs on,
 * so columns in another order are reordered and missing or unknown ones are refused. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

#define COLUMNS_KEY "columns"

static cJSON *name_array(char *const *names, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *s = cJSON_CreateString(names[i] ? names[i] : "");
        if (!s || !cJSON_AddItemToArray(a, s)) {
            cJSON_Delete(s);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

otc_status otc_cli_record_columns(otc_graph *g, char *const *features, int n_features,
                                  char *const *targets, int n_targets, const char *sequence) {
    cJSON *o = cJSON_CreateObject();
    cJSON *f = name_array(features, n_features), *t = name_array(targets, n_targets);
    char *json = NULL;
    if (o && f && t && cJSON_AddItemToObject(o, "features", f) &&
        (f = NULL, cJSON_AddItemToObject(o, "targets", t)) && (t = NULL, true) &&
        (!sequence || cJSON_AddStringToObject(o, "sequence", sequence)))
        json = cJSON_PrintUnformatted(o);
    cJSON_Delete(f);
    cJSON_Delete(t);
    cJSON_Delete(o);
    if (!json) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    otc_status st = otc_graph_meta_set(g, COLUMNS_KEY, json);
    cJSON_free(json);
    return st;
}

typedef struct {
    char **names;
    int n;
} name_list;

static void list_free(name_list *l) {
    for (int i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
    l->names = NULL;
    l->n = 0;
}

static bool list_push(name_list *l, const char *s, size_t len) {
    char **grown = realloc(l->names, (size_t)(l->n + 1) * sizeof *grown);
    if (!grown) return false;
    l->names = grown;
    if (!(l->names[l->n] = malloc(len + 1))) return false;
    memcpy(l->names[l->n], s, len);
    l->names[l->n++][len] = '\0';
    return true;
}

static bool list_has(const name_list *l, const char *s) {
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->names[i], s)) return true;
    return false;
}

/* The header line's names, spaces and quotes around each taken off. */
static bool header_names(const char *text, size_t len, name_list *out) {
    const char *end = memchr(text, '\n', len);
    if (!end) end = text + len;
    for (const char *p = text; p <= end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        const char *a = p, *b = stop;
        while (a < b && isspace((unsigned char)*a)) a++;
        while (b > a && isspace((unsigned char)b[-1])) b--;
        if (b - a >= 2 && *a == '"' && b[-1] == '"') a++, b--;
        if (!list_push(out, a, (size_t)(b - a))) return false;
        p = stop + 1;
    }
    return true;
}

/* The recorded list under key ("features" or "targets"). */
static bool recorded(const cJSON *o, const char *key, name_list *out) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key), *s;
    if (!cJSON_IsArray(a)) return false;
    cJSON_ArrayForEach(s, a) {
        if (!cJSON_IsString(s) || !list_push(out, s->valuestring, strlen(s->valuestring)))
            return false;
    }
    return true;
}

/* "'a', 'b'" into buf. */
static const char *quoted(char *const *names, int n, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && o + 8 < len; i++) {
        char one[64];
        int k = snprintf(buf + o, len - o, "%s'%s'", i ? ", " : "",
                         otc_cli_printable(names[i], one, sizeof one));
        if (k < 0 || (size_t)k >= len - o) {
            snprintf(buf + o, len - o, ", ...");
            break;
        }
        o += (size_t)k;
    }
    return buf;
}

char *otc_cli_recorded_sequence(const otc_graph *g, const char *text, size_t len) {
    const char *json = otc_graph_meta_get(g, COLUMNS_KEY);
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "sequence");
    name_list have = {0};
    char *name = NULL;
    if (cJSON_IsString(s) && header_names(text, len, &have) && list_has(&have, s->valuestring))
        name = strdup(s->valuestring);
    list_free(&have);
    cJSON_Delete(o);
    return name;
}

int otc_cli_match_columns(const char *cmd, const char *path, const char *text, size_t len,
                          const otc_graph *g, const char *model_path, const char *sequence,
                          char **features) {
    *features = NULL;
    const char *json = otc_graph_meta_get(g, COLUMNS_KEY);
    if (!json) return 0; /* a model from before, or not from a CSV: columns by position */
    cJSON *o = cJSON_Parse(json);
    name_list want = {0}, targets = {0}, have = {0}, missing = {0}, extra = {0};
    char sm[256], sd[256], a[512], b[512];
    otc_cli_printable(model_path, sm, sizeof sm);
    otc_cli_printable(path, sd, sizeof sd);
    int rc = 0;
    if (!o || !recorded(o, "features", &want) || !recorded(o, "targets", &targets)) {
        rc = otc_cli_error(cmd,
                           "%s: its \"columns\" metadata is not {\"features\": [names], "
                           "\"targets\": [names]}",
                           sm);
        goto done;
    }
    if (!header_names(text, len, &have)) {
        rc = otc_cli_error(cmd, "out of memory");
        goto done;
    }
    /* the sequence-id column (a name, or an index into the header) is neither */
    const char *seq_name = sequence;
    int idx;
    if (sequence && otc_cli_parse_int(sequence, &idx) && idx >= 0 && idx < have.n)
        seq_name = have.names[idx];
    for (int i = 0; i < want.n; i++)
        if (!list_has(&have, want.names[i]) &&
            !list_push(&missing, want.names[i], strlen(want.names[i])))
            goto nomem;
    for (int i = 0; i < have.n; i++)
        if (!list_has(&want, have.names[i]) && !list_has(&targets, have.names[i]) &&
            !(seq_name && !strcmp(seq_name, have.names[i])) &&
            !list_push(&extra, have.names[i], strlen(have.names[i])))
            goto nomem;
    if (missing.n) {
        char hint[160] = "";
        const char *near =
            otc_cli_closest(missing.names[0], (const char *const *)extra.names, extra.n);
        char one[64];
        if (near)
            snprintf(hint, sizeof hint, " (did you mean '%s'?)",
                     otc_cli_printable(near, one, sizeof one));
        rc = otc_cli_error(cmd,
                           "%s lacks column%s %s%s that %s was trained on (its features: %s); "
                           "map columns by hand with --features",
                           sd, missing.n == 1 ? "" : "s", quoted(missing.names, missing.n, a, 512),
                           hint, sm, quoted(want.names, want.n, b, sizeof b));
        goto done;
    }
    if (extra.n) {
        rc = otc_cli_error(cmd,
                           "%s has column%s %s that %s was not trained on (its features: %s); "
                           "leave them out, or choose the columns with --features",
                           sd, extra.n == 1 ? "" : "s", quoted(extra.names, extra.n, a, 512), sm,
                           quoted(want.names, want.n, b, sizeof b));
        goto done;
    }
    /* the features by name, in the model's order */
    size_t total = 1;
    for (int i = 0; i < want.n; i++) total += strlen(want.names[i]) + 1;
    if (!(*features = malloc(total))) goto nomem;
    (*features)[0] = '\0';
    for (int i = 0; i < want.n; i++) {
        if (i) strcat(*features, ",");
        strcat(*features, want.names[i]);
    }
    goto done;
nomem:
    rc = otc_cli_error(cmd, "out of memory");
done:
    cJSON_Delete(o);
    list_free(&want);
    list_free(&targets);
    list_free(&have);
    list_free(&missing);
    list_free(&extra);
    return rc;
}
