/* The thread-local last-error message behind otc_last_error(). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "otc/error.h"

static _Thread_local char last_error[1024];

const char *otc_last_error(void) {
    return last_error;
}

otc_status otc_fail(otc_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

otc_status otc_fail_context(otc_status status, const char *fmt, ...) {
    char old[sizeof last_error];
    memcpy(old, last_error, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    /* Append ": <old>" by hand; a long message is cut, never overflowed. */
    size_t at = n < 0 ? 0 : (size_t)n;
    if (at >= sizeof last_error) at = sizeof last_error - 1;
    const char *sep = ": ";
    for (const char *p = sep; *p && at + 1 < sizeof last_error; p++) last_error[at++] = *p;
    for (const char *p = old; *p && at + 1 < sizeof last_error; p++) last_error[at++] = *p;
    if (at < sizeof last_error) last_error[at] = '\0';
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
