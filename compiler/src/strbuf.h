/* Private: a growable text buffer the renderers and the DOT writer append to; the first
 * allocation failure sticks, so callers check once at the end. */
#ifndef OTC_STRBUF_H
#define OTC_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *text;
    size_t len, cap;
    bool failed;
} otc_strbuf;

void otc_sb_init(otc_strbuf *sb);
void otc_sb_free(otc_strbuf *sb);
void otc_sb_printf(otc_strbuf *sb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void otc_sb_puts(otc_strbuf *sb, const char *s);
/* The text, handed to the caller (who frees it); NULL if any append failed. */
char *otc_sb_take(otc_strbuf *sb);
/* A float literal for C that reads back to exactly f ("0.5f", "1.0f", "-3.25e-08f");
 * buf >= 32 bytes. f must be finite. */
const char *otc_sb_float(char *buf, size_t len, float f);

#endif
