/* A growable text buffer for generated code and DOT text. */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void otc_sb_init(otc_strbuf *sb) {
    memset(sb, 0, sizeof *sb);
}

void otc_sb_free(otc_strbuf *sb) {
    free(sb->text);
    otc_sb_init(sb);
}

static bool reserve(otc_strbuf *sb, size_t extra) {
    if (sb->failed) return false;
    if (sb->len + extra + 1 <= sb->cap) return true;
    size_t cap = sb->cap ? sb->cap : 4096;
    while (cap < sb->len + extra + 1) cap *= 2;
    char *t = realloc(sb->text, cap);
    if (!t) {
        sb->failed = true;
        return false;
    }
    sb->text = t;
    sb->cap = cap;
    return true;
}

void otc_sb_printf(otc_strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->failed = true;
        return;
    }
    if (!reserve(sb, (size_t)n)) return;
    if ((size_t)n < sizeof small) {
        memcpy(sb->text + sb->len, small, (size_t)n + 1);
    } else {
        va_start(ap, fmt);
        vsnprintf(sb->text + sb->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    sb->len += (size_t)n;
}

void otc_sb_puts(otc_strbuf *sb, const char *s) {
    size_t n = strlen(s);
    if (!reserve(sb, n)) return;
    memcpy(sb->text + sb->len, s, n + 1);
    sb->len += n;
}

char *otc_sb_take(otc_strbuf *sb) {
    if (sb->failed || !reserve(sb, 0)) {
        otc_sb_free(sb);
        return NULL;
    }
    sb->text[sb->len] = '\0';
    char *t = sb->text;
    otc_sb_init(sb);
    return t;
}

const char *otc_sb_float(char *buf, size_t len, float f) {
    /* Nine significant digits read back to the same float; a literal needs a '.' or an
     * exponent before the 'f' suffix to be a floating constant. */
    char tmp[40];
    snprintf(tmp, sizeof tmp, "%.9g", (double)f);
    bool has_point = strpbrk(tmp, ".e") != NULL;
    snprintf(buf, len, "%s%sf", tmp, has_point ? "" : ".0");
    return buf;
}
