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

static void put_bytes(otc_text *t, const char *s, size_t n) {
    if (!reserve(t, n)) return;
    memcpy(t->text + t->len, s, n);
    t->len += n;
    t->text[t->len] = '\0';
}

/* Length of the character at s when it may stand as text in XML or DOT: valid UTF-8, not a
 * control byte, not the non-characters U+FFFE/U+FFFF; 0 otherwise. */
static int text_char_len(const unsigned char *s) {
    if (*s < 0x20 || *s == 0x7f) return 0;
    int n = otc_utf8_len(s);
    if (n == 3 && s[0] == 0xEF && s[1] == 0xBF && s[2] >= 0xBE) return 0;
    return n;
}

/* text with each character passed through escape (NULL: copied as is), and everything
 * text_char_len refuses written as '?'. */
static void put_clean(otc_text *t, const char *text, const char *(*escape)(unsigned char)) {
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    while (*s) {
        const char *esc = escape(*s);
        int n = esc ? 1 : text_char_len(s);
        if (esc)
            otc_text_puts(t, esc);
        else if (n == 0)
            put_bytes(t, "?", 1);
        else
            put_bytes(t, (const char *)s, (size_t)n);
        s += n ? n : 1;
    }
}

static const char *xml_entity(unsigned char c) {
    switch (c) {
    case '&':
        return "&amp;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '"':
        return "&quot;";
    case '\'':
        return "&#39;";
    default:
        return NULL;
    }
}

void otc_text_xml(otc_text *t, const char *text) {
    put_clean(t, text, xml_entity);
}

static const char *dot_escape(unsigned char c) {
    return c == '"' ? "\\\"" : c == '\\' ? "\\\\" : NULL;
}

void otc_text_dot_string(otc_text *t, const char *text) {
    put_clean(t, text, dot_escape);
}

/* The bytes otc_text_c_comment keeps ('/' apart: it is kept only inside the text). */
static bool comment_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr(" _.-:[](),=", c));
}

void otc_text_c_comment(otc_text *t, const char *text) {
    char out[OTC_TEXT_COMMENT_MAX + 1];
    size_t n = 0;
    bool cut = false;
    for (const unsigned char *s = (const unsigned char *)(text ? text : ""); *s; s++) {
        /* A '/' first could meet a '*' the caller wrote before: "*" "/" closes a comment. */
        char ch = comment_char(*s) || (*s == '/' && n > 0) ? (char)*s : '?';
        /* One '?' per run, so no "??" starts a trigraph. */
        if (ch == '?' && n > 0 && out[n - 1] == '?') continue;
        if (n == OTC_TEXT_COMMENT_MAX) {
            cut = true;
            break;
        }
        out[n++] = ch;
    }
    if (cut) {
        n = OTC_TEXT_COMMENT_MAX - 3;
        memcpy(out + n, "...", 3);
        n += 3;
    } else if (n > 0 && out[n - 1] == '/') {
        /* Last: it could meet a '*' the caller writes next. */
        if (n > 1 && out[n - 2] == '?')
            n--;
        else
            out[n - 1] = '?';
    }
    put_bytes(t, out, n);
}
