/* otc_json_parse: one JSON document, no trailing data, no NUL in strings, bounded memory. */
#include "json_read.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "otc/limits.h"

#define JSON_CHECKED_FROM ((uint64_t)16 << 20) /* bytes of parsed tree */

/* cJSON reports a failed allocation as a parse failure; its allocator is wrapped (once, for
 * the process) so the reader can tell the user which it was. */
static _Thread_local bool alloc_failed;

static void *counting_malloc(size_t n) {
    void *p = malloc(n);
    if (!p) alloc_failed = true;
    return p;
}

static void install_hooks(void) {
    cJSON_Hooks h = {counting_malloc, free};
    cJSON_InitHooks(&h);
}

static int line_of(const char *text, size_t at) {
    int line = 1;
    for (size_t i = 0; i < at; i++) line += text[i] == '\n';
    return line;
}

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One pass over the raw text: values counted from an upper bound (every value but a
 * container's first follows a ',' and every container adds one more), strings' bytes summed,
 * NUL bytes and \u0000 escapes found. */
typedef struct {
    size_t values, strings, string_bytes, nul_at;
    bool nul_escape;
} scan;

static bool prescan(const char *text, size_t len, scan *s) {
    *s = (scan){.values = 1};
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\0') {
            s->nul_at = i;
            return false;
        }
        if (in_string) {
            if (c == '"') {
                in_string = false;
            } else if (c == '\\' && i + 1 < len) {
                if (text[i + 1] == 'u' && i + 5 < len && text[i + 2] == '0' && text[i + 3] == '0' &&
                    text[i + 4] == '0' && text[i + 5] == '0') {
                    s->nul_at = i;
                    s->nul_escape = true;
                    return false;
                }
                i++; /* the escaped character, which may be '"' or '\\' */
            }
            s->string_bytes++;
        } else if (c == '"') {
            in_string = true;
            s->strings++;
        } else if (c == ',' || c == '[' || c == '{') {
            s->values++;
        }
    }
    return true;
}

otc_status otc_json_parse(const char *text, size_t len, size_t max_values, cJSON **out) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_hooks);
    *out = NULL;
    scan s;
    if (!prescan(text, len, &s))
        return s.nul_escape ? otc_fail(OTC_ERR_FORMAT,
                                       "line %d: a string holds \\u0000 (byte %zu): names and "
                                       "values may not contain NUL",
                                       line_of(text, s.nul_at), s.nul_at)
                            : otc_fail(OTC_ERR_FORMAT, "line %d: a NUL byte (byte %zu) in JSON",
                                       line_of(text, s.nul_at), s.nul_at);
    if (s.values > max_values)
        return otc_fail(OTC_ERR_FORMAT,
                        "about %zu JSON values, more than the %zu this file may hold (each "
                        "takes ~%zu bytes once parsed)",
                        s.values, max_values, sizeof(cJSON) + 16);
    /* Each value a cJSON item and a malloc header; each string a copy and its header. */
    uint64_t need = (uint64_t)s.values * (sizeof(cJSON) + 16) + s.string_bytes + s.strings * 24;
    /* Checked from a size that matters: a model header of a few KB is no memory question,
     * even under a tiny OTC_MEMORY_LIMIT meant for the model's values. */
    char what[96];
    snprintf(what, sizeof what, "parsing %zu bytes of JSON (%zu values)", len, s.values);
    if (need > JSON_CHECKED_FROM && otc_memory_check(need, what) != OTC_OK) return OTC_ERR_NOMEM;
    alloc_failed = false;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!root) {
        if (alloc_failed)
            return otc_fail(OTC_ERR_NOMEM, "out of memory parsing %zu bytes of JSON", len);
        const char *at = cJSON_GetErrorPtr();
        size_t off = at && at >= text && at <= text + len ? (size_t)(at - text) : 0;
        return otc_fail(OTC_ERR_FORMAT, "line %d: not valid JSON (near byte %zu)",
                        line_of(text, off), off);
    }
    size_t off = end && end >= text && end <= text + len ? (size_t)(end - text) : len;
    while (off < len && is_space(text[off])) off++;
    if (off < len) {
        cJSON_Delete(root);
        return otc_fail(OTC_ERR_FORMAT,
                        "line %d: data after the end of the JSON document (byte %zu)",
                        line_of(text, off), off);
    }
    *out = root;
    return OTC_OK;
}
