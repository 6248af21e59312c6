/* Whole files in and out: bounded reads, atomic replacement of outputs (one file or several as a
 * unit), and the check that an output is not one of the inputs. Every reader and writer in otc
 * goes through these. */
#ifndef OTC_FILE_H
#define OTC_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* The most otc reads from one file of each kind. A larger file (or an endless stream such as
 * /dev/zero) is refused with a message stating the limit, after reading at most limit+1 bytes. */
#define OTC_MAX_MODEL_BYTES      ((size_t)1 << 30) /* .otm models: 1 GiB */
#define OTC_MAX_CSV_BYTES        ((size_t)1 << 30) /* CSV data (run, train, the csv task): 1 GiB */
#define OTC_MAX_CONFIG_BYTES     ((size_t)1 << 20) /* NEAT .ini configs: 1 MiB */
#define OTC_MAX_CHECKPOINT_BYTES ((size_t)1 << 28) /* NEAT .json checkpoints: 256 MiB */
#define OTC_MAX_NETWORK_BYTES    ((size_t)1 << 28) /* neat-python network JSON: 256 MiB */
#define OTC_MAX_ONNX_BYTES       ((size_t)1 << 30) /* ONNX models (otc import): 1 GiB */

/* Reads the whole of path (a regular file, pipe or device) into a new buffer of *len bytes plus
 * a NUL after them, for the caller to free. Refuses, naming path and the limit, anything longer
 * than max_bytes; refuses a directory. On failure *data is NULL and *len 0. */
otc_status otc_read_file(const char *path, size_t max_bytes, char **data, size_t *len);

/* The same for text formats (CSV, INI, JSON): a NUL byte is refused as soon as it is read, so
 * binary input, /dev/zero included, fails after the first block. */
otc_status otc_read_text_file(const char *path, size_t max_bytes, char **text, size_t *len);

/* Writes len bytes to path. Where path leads (through symbolic links, which are kept: their
 * target is written) to a regular file or to nothing yet, the data goes to
 * "<target>.tmp-<pid>-<n>", is flushed to disk and renamed onto the target, so a reader never
 * sees a half-written file and a failure leaves the old file intact. Anything else (a device,
 * a FIFO, /dev/stdout) is written in place, appending, as a shell redirection would; a
 * directory is refused. Temporaries left by a process that no longer runs (killed mid-write)
 * are removed. Every message names path and carries the system's reason. */
otc_status otc_write_file_atomic(const char *path, const void *data, size_t len);

typedef struct {
    const char *path;
    const void *data;
    size_t len;
} otc_file_part;

/* Writes n files as a unit: either every one is replaced or, on any failure, none changes
 * (crashing part-way through the final renames excepted). Same rules per file as above. */
otc_status otc_write_files_atomic(const otc_file_part *parts, int n);

/* True when a and b name one regular file: both exist and share device and inode (so links
 * and different spellings count), or neither exists yet and both lead to the same place. */
bool otc_same_file(const char *a, const char *b);

#endif
