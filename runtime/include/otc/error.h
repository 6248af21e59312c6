/* Status codes and the thread-local "last error" message every otc library reports through. */
#ifndef OTC_ERROR_H
#define OTC_ERROR_H

typedef enum {
    OTC_OK = 0,
    OTC_ERR_ARG,         /* a bad argument from the caller (NULL, out of range, wrong id) */
    OTC_ERR_SHAPE,       /* shapes that do not fit together */
    OTC_ERR_CYCLE,       /* a cycle in a graph that must be acyclic */
    OTC_ERR_IO,          /* a file could not be opened, read or written */
    OTC_ERR_FORMAT,      /* a file's content is malformed, truncated or hostile */
    OTC_ERR_NOMEM,       /* an allocation failed */
    OTC_ERR_UNSUPPORTED, /* a valid request this backend cannot do (e.g. an op it cannot lower) */
    OTC_ERR_CONFIG,      /* a bad configuration key or value */
    OTC_ERR_STATE        /* a call made in the wrong order (e.g. backward before forward) */
} otc_status;

/* The message describing the most recent failure on this thread ("" if none). */
const char *otc_last_error(void);

/* Record a failure message (printf-style) and return `status`, so callers can write
 * `return otc_fail(OTC_ERR_SHAPE, "...", ...);`. Never prints. */
otc_status otc_fail(otc_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prefix the current message with context, e.g. the file name: "model.otm: <old message>". */
otc_status otc_fail_context(otc_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Makes text (NUL-terminated, changed in place, returned) safe to show: control bytes, C1
 * controls and bytes that are not valid UTF-8 each become '?', so a name from a hostile file
 * cannot move the cursor, recolour or clear a terminal, or make a log invalid UTF-8. Every
 * message otc_fail and otc_fail_context record has been through it. */
char *otc_text_printable(char *text);

/* Short name of a status ("shape error"). */
const char *otc_status_name(otc_status status);

#endif
