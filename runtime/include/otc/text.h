/* A growable text buffer for whatever otc builds as a whole document before writing it
 * (emitted C, DOT graphs, SVG plots), with the escaping each of those languages needs; and
 * the one reader of the comma-separated lists users write. */
#ifndef OTC_TEXT_H
#define OTC_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Zero-initialise (or otc_text_init). After an allocation failure it only records `failed`,
 * so writers append freely and check once at the end. */
typedef struct {
    char *text; /* NUL-terminated once anything was appended */
    size_t len, cap;
    bool failed;
} otc_text;

void otc_text_init(otc_text *t);
void otc_text_free(otc_text *t);
void otc_text_printf(otc_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void otc_text_puts(otc_text *t, const char *s);
/* The text, handed to the caller (who frees it); NULL if any append failed. The buffer is
 * left empty either way. */
char *otc_text_take(otc_text *t);

/* Length of a valid UTF-8 sequence at s (1..4), or 0 when it is not one (overlong forms and
 * surrogates included). s must be NUL-terminated. */
int otc_utf8_len(const unsigned char *s);

/* The one way text from outside (node names, file names, titles) enters each language otc
 * writes, so a hostile name can neither break the document nor become code:
 *
 * XML (SVG, and Graphviz HTML labels): & < > " ' as entities; control bytes, invalid UTF-8
 * and the non-characters U+FFFE/U+FFFF (not allowed in XML) as '?'. */
void otc_text_xml(otc_text *t, const char *text);
/* Inside a Graphviz "quoted string" (the caller writes the quotes): " and \ escaped with a
 * backslash; control bytes and invalid UTF-8 as '?' (Graphviz wants UTF-8). */
void otc_text_dot_string(otc_text *t, const char *text);
/* Inside a C block comment: only letters, digits, space and _ . - : [ ] ( ) , = are kept,
 * and / when neither first nor last; each run of other bytes becomes one '?'. So no '*' to
 * close the comment, no backslash or ??/ trigraph to splice a line into it, no byte a
 * compiler could warn about. Text longer than OTC_TEXT_COMMENT_MAX is cut and ends in "...". */
#define OTC_TEXT_COMMENT_MAX 64
void otc_text_c_comment(otc_text *t, const char *text);

/* Splits a list in place: buf holds items separated by commas, and by blanks (spaces, tabs)
 * too when blanks_separate; items[0..*n) then point at the items, NUL-terminated, blanks
 * around each trimmed. A list of blanks alone has no items. An empty item (nothing but blanks
 * before a comma or after the last one: "a,,b", "a, ,", ",a") is an error whose message
 * names its 1-based position, as is an item beyond max; the caller adds where the list came
 * from. Every list a user writes (config keys, column lists) is read through this, so an
 * empty item is never silently skipped. */
otc_status otc_list_split(char *buf, bool blanks_separate, char **items, int max, int *n);

#endif
