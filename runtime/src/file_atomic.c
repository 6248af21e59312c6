/* otc_write_file_atomic: the one place otc's text outputs (plots, DOT, CSV) reach the disk. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "otc/file.h"

otc_status otc_write_file_atomic(const char *path, const void *data, size_t len) {
    if (!path || !*path) return otc_fail(OTC_ERR_ARG, "no output path given");
    if (!data && len) return otc_fail(OTC_ERR_ARG, "%s: no data to write", path);
    static unsigned counter; /* distinct names within one process; the pid covers others */
    char tmp[4096];
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        int n = snprintf(tmp, sizeof tmp, "%s.tmp-%ld-%u", path, (long)getpid(), counter++);
        if (n < 0 || (size_t)n >= sizeof tmp)
            return otc_fail(OTC_ERR_ARG, "%s: path too long", path);
        /* 0666 so the umask decides, as for any file a program creates. */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            return otc_fail(OTC_ERR_IO, "%s: cannot create %s: %s", path, tmp, strerror(errno));
    }
    if (fd < 0) return otc_fail(OTC_ERR_IO, "%s: no free temporary name", path);
    const unsigned char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int err = w < 0 ? errno : EIO;
            close(fd);
            unlink(tmp);
            return otc_fail(OTC_ERR_IO, "%s: write failed: %s", path, strerror(err));
        }
        p += w;
        left -= (size_t)w;
    }
    /* fsync before rename: otherwise a crash can leave the new name pointing at no data. */
    if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
        int err = errno;
        close(fd);
        unlink(tmp);
        return otc_fail(OTC_ERR_IO, "%s: fsync failed: %s", path, strerror(err));
    }
    if (close(fd) != 0) {
        int err = errno;
        unlink(tmp);
        return otc_fail(OTC_ERR_IO, "%s: close failed: %s", path, strerror(err));
    }
    if (rename(tmp, path) != 0) {
        int err = errno;
        unlink(tmp);
        return otc_fail(OTC_ERR_IO, "%s: cannot replace: %s", path, strerror(err));
    }
    return OTC_OK;
}
