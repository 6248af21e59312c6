/* The growable text buffer behind emitted code, DOT and SVG, and its XML escaping. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/text.h"

void otc_text_init(otc_text *t) {
    memset(t, 0, sizeof *t);
}

void otc_text_free(otc_text *t) {
    free(t->text);
    otc_text_init(t);
}

/* Room for `extra` more bytes and the NUL. */
static bool reserve(otc_text *t, size_t extra) {
    if (t->failed) return false;
    if (t->len + extra + 1 <= t->cap) return true;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + extra + 1) cap *= 2;
    char *s = realloc(t->text, cap);
    if (!s) {
        t->failed = true;
        return false;
    }
    t->text = s;
    t->cap = cap;
    return true;
}

void otc_text_printf(otc_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = true;
        return;
    }
    if (!reserve(t, (size_t)n)) return;
    if ((size_t)n < sizeof small) {
        memcpy(t->text + t->len, small, (size_t)n + 1);
    } else {
        va_start(ap, fmt);
        vsnprintf(t->text + t->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    t->len += (size_t)n;
}

void otc_text_puts(otc_text *t, const char *s) {
    size_t n = strlen(s);
    if (!reserve(t, n)) return;
    memcpy(t->text + t->len, s, n + 1);
    t->len += n;
}

char *otc_text_take(otc_text *t) {
    if (t->failed || !reserve(t, 0)) {
        otc_text_free(t);
        return NULL;
    }
    t->text[t->len] = '\0';
    char *s = t->text;
    otc_text_init(t);
    return s;
}

int otc_utf8_len(const unsigned char *s) {
    if (s[0] < 0x80) return 1;
    int n = (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || (n == 2 && s[0] < 0xC2) || s[0] > 0xF4) return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;              /* also stops at the NUL */
    if (n == 3 && s[0] == 0xE0 && s[1] < 0xA0) return 0;  /* overlong */
    if (n == 3 && s[0] == 0xED && s[1] >= 0xA0) return 0; /* surrogate */
    if (n == 4 && s[0] == 0xF0 && s[1] < 0x90) return 0;  /* overlong */
    if (n == 4 && s[0] == 0xF4 && s[1] >= 0x90) return 0; /* above U+10FFFF */
    return n;
}

void otc_text_xml(otc_text *t, const char *text) {
    const unsigned char *s = (const unsigned char *)text;
    while (*s) {
        const char *ent = NULL;
        switch (*s) {
        case '&':
            ent = "&amp;";
            break;
        case '<':
            ent = "&lt;";
            break;
        case '>':
            ent = "&gt;";
            break;
        case '"':
            ent = "&quot;";
            break;
        case '\'':
            ent = "&#39;";
            break;
        default:
            break;
        }
        if (ent) {
            otc_text_puts(t, ent);
            s++;
            continue;
        }
        int n = *s < 0x20 ? 0 : otc_utf8_len(s);
        if (n == 0) {
            otc_text_puts(t, "?");
            s++;
        } else {
            otc_text_printf(t, "%.*s", n, (const char *)s);
            s += n;
        }
    }
}
