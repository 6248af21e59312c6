/* The thread-local last-error message behind otc_last_error(). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/error.h"

/* Room for a message naming two full paths (PATH_MAX each) and the reason. */
#define ERROR_CAP 12288
static _Thread_local char last_error[ERROR_CAP];

const char *otc_last_error(void) {
    return last_error;
}

/* A message longer than the buffer ends in "..." instead, cut before a whole UTF-8 sequence
 * (never inside one) so the text stays valid for the terminal or a JSON report. */
static void mark_cut(char *buf, size_t cap) {
    size_t at = cap - 4; /* "...\0" fits after at */
    /* Back up over continuation bytes (10xxxxxx) to the start of the sequence at `at`. */
    while (at > 0 && ((unsigned char)buf[at] & 0xC0) == 0x80) at--;
    memcpy(buf + at, "...", 4);
}

/* Names from files reach messages through the arguments: the finished message is made
 * printable here, the one place every library message passes. */
static void set_message(int n, size_t cap) {
    if (n >= 0 && (size_t)n >= cap) mark_cut(last_error, cap);
    otc_text_printable(last_error);
}

otc_status otc_fail(otc_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    set_message(n, sizeof last_error);
    return status;
}

otc_status otc_fail_context(otc_status status, const char *fmt, ...) {
    char *old = strdup(last_error); /* the heap: two message buffers are too big a stack frame */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    size_t at = strlen(last_error);
    if ((size_t)n < sizeof last_error && old) {
        /* Append ": <old>"; a message that does not fit is cut cleanly. */
        int m = snprintf(last_error + at, sizeof last_error - at, ": %s", old);
        if (m >= 0) n = (int)at + m;
    }
    set_message(n, sizeof last_error);
    free(old);
    return status;
}

const char *otc_status_name(otc_status status) {
    switch (status) {
    case OTC_OK:
        return "ok";
    case OTC_ERR_ARG:
        return "bad argument";
    case OTC_ERR_SHAPE:
        return "shape error";
    case OTC_ERR_CYCLE:
        return "cycle";
    case OTC_ERR_IO:
        return "i/o error";
    case OTC_ERR_FORMAT:
        return "format error";
    case OTC_ERR_NOMEM:
        return "out of memory";
    case OTC_ERR_UNSUPPORTED:
        return "unsupported";
    case OTC_ERR_CONFIG:
        return "configuration error";
    case OTC_ERR_STATE:
        return "wrong state";
    }
    return "unknown error";
}
