/* otc_read_file: the one bounded way otc reads an input file into memory. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "otc/file.h"

/* "1 GiB" for the limits file.h states; exact bytes otherwise. */
static const char *size_text(size_t n, char *buf, size_t cap) {
    if (n >= ((size_t)1 << 30) && n % ((size_t)1 << 30) == 0)
        snprintf(buf, cap, "%zu GiB", n >> 30);
    else if (n >= ((size_t)1 << 20) && n % ((size_t)1 << 20) == 0)
        snprintf(buf, cap, "%zu MiB", n >> 20);
    else
        snprintf(buf, cap, "%zu bytes", n);
    return buf;
}

static otc_status too_large(const char *path, size_t max_bytes) {
    char lim[48];
    return otc_fail(OTC_ERR_FORMAT, "%s: too large: more than %s, the limit for this kind of file",
                    path, size_text(max_bytes, lim, sizeof lim));
}

static otc_status read_bounded(const char *path, size_t max_bytes, bool text, char **data,
                               size_t *len) {
    if (!data || !len) return otc_fail(OTC_ERR_ARG, "otc_read_file: NULL argument");
    *data = NULL;
    *len = 0;
    if (!path || !*path) return otc_fail(OTC_ERR_ARG, "no input path given");
    if (max_bytes >= SIZE_MAX - 2) max_bytes = SIZE_MAX - 2; /* room for the extra byte and NUL */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return otc_fail(OTC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        close(fd);
        return otc_fail(OTC_ERR_IO, "%s: cannot stat: %s", path, strerror(err));
    }
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        return otc_fail(OTC_ERR_IO, "%s: is a directory, not a file", path);
    }
    /* A regular file says its size: refuse before reading, and allocate once. Anything else
     * (pipe, device) is read in growing blocks up to limit+1 bytes, so an endless stream is
     * refused after a bounded read. */
    size_t cap = 1 << 16;
    if (S_ISREG(sb.st_mode)) {
        if ((uintmax_t)sb.st_size > max_bytes) {
            close(fd);
            return too_large(path, max_bytes);
        }
        cap = (size_t)sb.st_size + 1; /* +1: the read that sees end of file, or growth */
    }
    if (cap > max_bytes + 1) cap = max_bytes + 1;
    char *buf = malloc(cap + 1);
    size_t n = 0;
    otc_status st = buf ? OTC_OK : otc_fail(OTC_ERR_NOMEM, "%s: out of memory", path);
    while (!st) {
        if (n == cap) {
            if (cap > max_bytes) { /* limit+1 bytes read */
                st = too_large(path, max_bytes);
                break;
            }
            size_t bigger = cap > max_bytes / 2 ? max_bytes + 1 : cap * 2;
            char *b = realloc(buf, bigger + 1);
            if (!b) {
                st = otc_fail(OTC_ERR_NOMEM, "%s: out of memory reading the file", path);
                break;
            }
            buf = b;
            cap = bigger;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            st = otc_fail(OTC_ERR_IO, "%s: read failed: %s", path, strerror(errno));
            break;
        }
        if (r == 0) break;
        if (text) {
            const char *nul = memchr(buf + n, '\0', (size_t)r);
            if (nul) {
                st = otc_fail(OTC_ERR_FORMAT, "%s: not a text file (a NUL byte at offset %zu)",
                              path, (size_t)(nul - buf));
                break;
            }
        }
        n += (size_t)r;
    }
    close(fd);
    if (st) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return OTC_OK;
}

otc_status otc_read_file(const char *path, size_t max_bytes, char **data, size_t *len) {
    return read_bounded(path, max_bytes, false, data, len);
}

otc_status otc_read_text_file(const char *path, size_t max_bytes, char **text, size_t *len) {
    return read_bounded(path, max_bytes, true, text, len);
}
