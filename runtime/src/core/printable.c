/* otc_text_printable: text from a file made safe for a terminal or a log before it is shown. */
#include <stddef.h>

#include "otc/error.h"

/* Length of the valid UTF-8 sequence of two or more bytes at s, or 0 (overlong forms,
 * surrogates, code points past U+10FFFF and C1 controls U+0080..U+009F do not count: the
 * last include CSI, 0x9B, which some terminals act on like ESC [). */
static size_t utf8_sequence(const unsigned char *s) {
    unsigned char c = s[0];
    unsigned char lo = 0x80, hi = 0xBF;
    size_t n;
    if (c == 0xC2) {
        n = 2;
        lo = 0xA0;
    } else if (c > 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return n;
}

char *otc_text_printable(char *text) {
    unsigned char *s = (unsigned char *)text;
    while (s && *s) {
        if (*s < 0x80) {
            if (*s < 0x20 || *s == 0x7F) *s = '?';
            s++;
            continue;
        }
        size_t n = utf8_sequence(s); /* stops at the terminating NUL: it is no continuation */
        if (n) {
            s += n;
        } else {
            *s++ = '?';
        }
    }
    return text;
}
