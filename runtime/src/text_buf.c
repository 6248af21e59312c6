/* The growable text buffer and the escaping shared by the SVG and DOT writers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "text_buf.h"

void otc_tb_printf(otc_text_buf *b, const char *fmt, ...) {
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = true;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len <= (size_t)n) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

void otc_tb_free(otc_text_buf *b) {
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
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

void otc_tb_xml(otc_text_buf *b, const char *text) {
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
            otc_tb_printf(b, "%s", ent);
            s++;
            continue;
        }
        int n = *s < 0x20 ? 0 : otc_utf8_len(s);
        if (n == 0) {
            otc_tb_printf(b, "?");
            s++;
        } else {
            otc_tb_printf(b, "%.*s", n, (const char *)s);
            s += n;
        }
    }
}
