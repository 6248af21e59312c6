/* Writing whole files atomically: a temporary name beside the target, then a rename, so a
 * reader never sees a half-written file and a failed write leaves the old file intact. */
#ifndef OTC_FILE_H
#define OTC_FILE_H

#include <stddef.h>

#include "error.h"

/* Writes len bytes to "<path>.tmp-<pid>-<n>", flushes it to disk and renames it onto path.
 * On any failure the temporary is removed, path is untouched, and the message names path. */
otc_status otc_write_file_atomic(const char *path, const void *data, size_t len);

#endif
