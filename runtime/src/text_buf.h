/* Private: a growable text buffer for the writers that build whole documents in memory
 * (SVG plots, DOT graphs) before writing them atomically. */
#ifndef OTC_TEXT_BUF_H
#define OTC_TEXT_BUF_H

#include <stdbool.h>
#include <stddef.h>

/* Zero-initialise. After an allocation failure it only records `failed`, so writers can
 * append freely and check once at the end. */
typedef struct {
    char *s;
    size_t len, cap;
    bool failed;
} otc_text_buf;

void otc_tb_printf(otc_text_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void otc_tb_free(otc_text_buf *b);

/* Length of a valid UTF-8 sequence at s (1..4), or 0 when it is not one (overlong forms and
 * surrogates included). s must be NUL-terminated. */
int otc_utf8_len(const unsigned char *s);

/* Append text escaped for XML (and so for Graphviz HTML labels): & < > " ' as entities,
 * control bytes and invalid UTF-8 as '?', so hostile names still yield a valid document. */
void otc_tb_xml(otc_text_buf *b, const char *text);

#endif
