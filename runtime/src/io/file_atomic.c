/* otc_write_file_atomic and otc_write_files_atomic: the one place otc's outputs reach the disk;
 * otc_same_file, which the CLI uses to keep an output off its inputs. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "otc/file.h"

#define PATH_CAP      4096
#define MAX_LINK_HOPS 40              /* as the kernel's ELOOP limit */
#define TMP_CAP       (PATH_CAP + 64) /* room for ".tmp-<pid>-<n>" */

typedef enum {
    LAND_REPLACE, /* a regular file or nothing yet: written beside it, renamed over it */
    LAND_IN_PLACE /* a device, FIFO or /proc file descriptor: opened and written */
} landing;

/* Where a write to path lands: follows the symbolic links of the last component (the
 * directories on the way are the kernel's business) so a link is kept and its target written.
 * Stops at /proc (/dev/stdout -> /proc/self/fd/1): those links are handles, not paths. */
static otc_status resolve(const char *path, char *out, landing *how) {
    if (!path || !*path) return otc_fail(OTC_ERR_ARG, "no output path given");
    if (strlen(path) >= PATH_CAP) return otc_fail(OTC_ERR_ARG, "%s: path too long", path);
    strcpy(out, path);
    for (int hop = 0; hop <= MAX_LINK_HOPS; hop++) {
        /* Is the file's directory under /proc (e.g. /dev/fd/1 = /proc/self/fd/1)? */
        char dir[PATH_CAP], real[PATH_MAX];
        const char *slash = strrchr(out, '/');
        if (!slash) {
            strcpy(dir, ".");
        } else {
            size_t n = slash == out ? 1 : (size_t)(slash - out);
            memcpy(dir, out, n);
            dir[n] = '\0';
        }
        if (realpath(dir, real) && !strncmp(real, "/proc/", 6)) {
            *how = LAND_IN_PLACE;
            return OTC_OK;
        }
        struct stat st;
        if (lstat(out, &st) != 0) { /* nothing there yet (or unreachable: creating will say) */
            *how = LAND_REPLACE;
            return OTC_OK;
        }
        if (S_ISDIR(st.st_mode)) return otc_fail(OTC_ERR_IO, "%s: is a directory", path);
        if (S_ISREG(st.st_mode)) {
            *how = LAND_REPLACE;
            return OTC_OK;
        }
        if (!S_ISLNK(st.st_mode)) {
            *how = LAND_IN_PLACE;
            return OTC_OK;
        }
        char link[PATH_CAP];
        ssize_t n = readlink(out, link, sizeof link - 1);
        if (n < 0) return otc_fail(OTC_ERR_IO, "%s: cannot read link: %s", path, strerror(errno));
        link[n] = '\0';
        if (link[0] == '/' || !slash) {
            strcpy(dir, "");
        } else {
            size_t d = (size_t)(slash - out) + 1;
            memcpy(dir, out, d);
            dir[d] = '\0';
        }
        if (strlen(dir) + (size_t)n >= PATH_CAP)
            return otc_fail(OTC_ERR_ARG, "%s: link target path too long", path);
        strcat(dir, link);
        strcpy(out, dir);
    }
    return otc_fail(OTC_ERR_IO, "%s: %s", path, strerror(ELOOP));
}

/* dir of a resolved path, for opendir and fsync ("." when it has no slash). */
static void dir_of(const char *path, char *dir) {
    const char *slash = strrchr(path, '/');
    if (!slash) {
        strcpy(dir, ".");
        return;
    }
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    memcpy(dir, path, n);
    dir[n] = '\0';
}

/* Stale temporaries. A process killed between creating "<target>.tmp-<pid>-<n>" and renaming
 * it leaves the file behind; nothing else would ever remove it. Before writing target we
 * delete the ones whose pid no longer runs (kill(pid, 0) says ESRCH). A live pid, ours
 * included, is left alone: it may be writing right now. (O_TMPFILE + linkat would avoid the
 * name during the write, but linkat cannot replace an existing file, so a named temporary is
 * still needed for the final rename; cleaning up covers every filesystem.) Limit: a writer in
 * another pid namespace or on another host sharing the directory is not seen as alive. */
static void remove_stale_temporaries(const char *target) {
    char dir[PATH_CAP];
    dir_of(target, dir);
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    size_t blen = strlen(base);
    DIR *d = opendir(dir);
    if (!d) return;
    pid_t self = getpid();
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *name = e->d_name;
        if (strncmp(name, base, blen) || strncmp(name + blen, ".tmp-", 5)) continue;
        const char *p = name + blen + 5;
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p || *end != '-' || pid <= 0) continue;
        const char *q = end + 1;
        strtoul(q, &end, 10);
        if (end == q || *end != '\0' || !(*q >= '0' && *q <= '9')) continue;
        if ((pid_t)pid == self || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char full[PATH_CAP + 256];
        snprintf(full, sizeof full, "%s/%s", dir, name);
        struct stat st;
        if (lstat(full, &st) == 0 && S_ISREG(st.st_mode)) unlink(full);
    }
    closedir(d);
}

static int write_all(int fd, const void *data, size_t len) {
    const unsigned char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno;
        if (w == 0) return EIO;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* One file of a write: where it lands and the names used on the way. */
typedef struct {
    const char *path; /* as the caller gave it, for messages */
    char target[PATH_CAP];
    landing how;
    bool existed;      /* target was a regular file before */
    char tmp[TMP_CAP]; /* the new content, until renamed ("" when none) */
    char bak[TMP_CAP]; /* a hard link to the old content, for rolling back ("" when none) */
} part_state;

static atomic_uint counter; /* distinct names within one process; the pid covers others */

/* Creates a fresh "<target>.tmp-<pid>-<n>" and returns its descriptor (-1 after otc_fail). */
static int create_temp(const part_state *s, char *name) {
    for (int attempt = 0; attempt < 100; attempt++) {
        int n = snprintf(name, TMP_CAP, "%s.tmp-%ld-%u", s->target, (long)getpid(),
                         atomic_fetch_add(&counter, 1));
        if (n < 0 || n >= TMP_CAP) {
            otc_fail(OTC_ERR_ARG, "%s: path too long", s->path);
            return -1;
        }
        /* 0666 so the umask decides, as for any file a program creates. */
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) return fd;
        if (errno != EEXIST) {
            otc_fail(OTC_ERR_IO, "%s: cannot create %s: %s", s->path, name, strerror(errno));
            name[0] = '\0';
            return -1;
        }
    }
    name[0] = '\0';
    otc_fail(OTC_ERR_IO, "%s: no free temporary name", s->path);
    return -1;
}

/* Writes data to a new temporary beside s->target, on disk before it returns. */
static otc_status write_temp(const part_state *s, char *name, const void *data, size_t len,
                             mode_t mode) {
    int fd = create_temp(s, name);
    if (fd < 0) return OTC_ERR_IO;
    if (mode) fchmod(fd, mode); /* keep the replaced file's permissions; best effort */
    int err = write_all(fd, data, len);
    /* fsync before rename: otherwise a crash can leave the new name pointing at no data. */
    if (!err && fsync(fd) != 0 && errno != EINVAL && errno != EROFS) err = errno;
    if (close(fd) != 0 && !err) err = errno;
    if (err) {
        unlink(name);
        name[0] = '\0';
        return otc_fail(OTC_ERR_IO, "%s: write failed: %s", s->path, strerror(err));
    }
    return OTC_OK;
}

/* A second name for the old content, so a later failure can put it back. A hard link costs
 * nothing; where links are not allowed the content is copied instead. */
static otc_status keep_backup(part_state *s) {
    char name[TMP_CAP];
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(name, sizeof name, "%s.tmp-%ld-%u", s->target, (long)getpid(),
                 atomic_fetch_add(&counter, 1));
        if (link(s->target, name) == 0) {
            strcpy(s->bak, name);
            return OTC_OK;
        }
        if (errno != EEXIST) break;
    }
    char *old = NULL;
    size_t len = 0;
    struct stat st;
    if (stat(s->target, &st) != 0)
        return otc_fail(OTC_ERR_IO, "%s: cannot stat: %s", s->path, strerror(errno));
    otc_status r = otc_read_file(s->target, (size_t)st.st_size, &old, &len);
    if (!r) r = write_temp(s, s->bak, old, len, st.st_mode & 0777);
    free(old);
    return r;
}

static otc_status write_in_place(const part_state *s, const void *data, size_t len) {
    /* Appending: a device or FIFO ignores it, and /dev/stdout redirected with >> to a file
     * keeps what is there. */
    int fd = open(s->target, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return otc_fail(OTC_ERR_IO, "%s: cannot open: %s", s->path, strerror(errno));
    int err = write_all(fd, data, len);
    if (close(fd) != 0 && !err) err = errno;
    if (err) return otc_fail(OTC_ERR_IO, "%s: write failed: %s", s->path, strerror(err));
    return OTC_OK;
}

static void sync_dir(const char *target) {
    char dir[PATH_CAP];
    dir_of(target, dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    fsync(fd); /* the renames themselves reach the disk; best effort */
    close(fd);
}

/* The scheme for several files (emit-c's .h and .c):
 *   1. every new content goes to a temporary beside its target and is fsynced; devices and
 *      FIFOs are written now too (they cannot be rolled back, so they go before any rename);
 *   2. each existing target gets a second name (a hard link, else a copy): its backup;
 *   3. the temporaries are renamed over their targets, in order;
 *   4. if rename k fails, targets 0..k-1 get their backups renamed back (or are removed when
 *      they did not exist), so on error no file has changed; then the backups go.
 * A failure in 1-2 leaves every target untouched. Only a crash inside 3 can leave a mix; the
 * leftover names are then stale temporaries, removed by the next write to those targets. */
otc_status otc_write_files_atomic(const otc_file_part *parts, int n) {
    if (!parts || n < 1) return otc_fail(OTC_ERR_ARG, "otc_write_files_atomic: no files");
    part_state *s = calloc((size_t)n, sizeof *s);
    if (!s) return otc_fail(OTC_ERR_NOMEM, "out of memory");
    otc_status st = OTC_OK;
    for (int i = 0; i < n && !st; i++) {
        s[i].path = parts[i].path;
        if (!parts[i].data && parts[i].len)
            st = otc_fail(OTC_ERR_ARG, "%s: no data to write", parts[i].path);
        else
            st = resolve(parts[i].path, s[i].target, &s[i].how);
    }
    for (int i = 0; i < n && !st; i++) {
        if (s[i].how != LAND_REPLACE) continue;
        remove_stale_temporaries(s[i].target);
        struct stat old;
        s[i].existed = stat(s[i].target, &old) == 0 && S_ISREG(old.st_mode);
        st = write_temp(&s[i], s[i].tmp, parts[i].data, parts[i].len,
                        s[i].existed ? old.st_mode & 0777 : 0);
    }
    for (int i = 0; i < n && !st; i++)
        if (s[i].how == LAND_IN_PLACE) st = write_in_place(&s[i], parts[i].data, parts[i].len);
    int replaced = 0;
    for (int i = 0; i < n; i++) replaced += s[i].how == LAND_REPLACE;
    for (int i = 0; i < n && !st && replaced > 1; i++)
        if (s[i].how == LAND_REPLACE && s[i].existed) st = keep_backup(&s[i]);
    int done = 0; /* temporaries renamed so far */
    for (; done < n && !st; done++) {
        if (s[done].how != LAND_REPLACE) continue;
        if (rename(s[done].tmp, s[done].target) != 0) {
            st = otc_fail(OTC_ERR_IO, "%s: cannot replace: %s", s[done].path, strerror(errno));
            break;
        }
        s[done].tmp[0] = '\0';
    }
    if (st) { /* roll back the renames made */
        for (int i = 0; i < done; i++) {
            if (s[i].how != LAND_REPLACE) continue;
            bool back = s[i].bak[0] ? rename(s[i].bak, s[i].target) == 0
                                    : unlink(s[i].target) == 0 || errno == ENOENT;
            int err = errno;
            if (back) {
                s[i].bak[0] = '\0';
            } else {
                char msg[1024];
                snprintf(msg, sizeof msg, "%s", otc_last_error());
                st = otc_fail(st, "%s; and %s could not be restored (%s)%s%s", msg, s[i].path,
                              strerror(err), s[i].bak[0] ? ": its old content is in " : "",
                              s[i].bak);
                s[i].bak[0] = '\0'; /* kept for the user */
            }
        }
    } else {
        for (int i = 0; i < n; i++)
            if (s[i].how == LAND_REPLACE) sync_dir(s[i].target);
    }
    for (int i = 0; i < n; i++) {
        if (s[i].tmp[0]) unlink(s[i].tmp);
        if (s[i].bak[0]) unlink(s[i].bak);
    }
    free(s);
    return st;
}

otc_status otc_write_file_atomic(const char *path, const void *data, size_t len) {
    otc_file_part part = {path, data, len};
    return otc_write_files_atomic(&part, 1);
}

/* Where a path that does not exist yet would be created: its deepest existing directory made
 * canonical, the components below it (directories a writer would create, as --emit-c does)
 * appended with "." and ".." applied by spelling, since they name nothing on disk yet. */
static bool landing_place(const char *path, char *out, size_t cap) {
    char target[PATH_CAP], dir[PATH_CAP], real[PATH_MAX];
    landing how;
    if (resolve(path, target, &how) != OTC_OK) return false;
    strcpy(dir, target);
    size_t rest = strlen(target); /* target[rest..] is below dir: the part that does not exist */
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash) {
            rest = 0;
            if (!realpath(".", real)) return false;
            break;
        }
        rest = (size_t)(slash - dir) + 1;
        if (slash == dir) {
            strcpy(real, "/");
            break;
        }
        *slash = '\0';
        if (realpath(dir, real)) break;
    }
    size_t o = strlen(real);
    if (o >= cap) return false;
    memcpy(out, real, o + 1);
    if (o == 1) o = 0; /* "/": components start right after it */
    for (const char *c = target + rest; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 1 && c[0] == '.') {
            /* the directory itself */
        } else if (n == 2 && c[0] == '.' && c[1] == '.') {
            while (o > 0 && out[o - 1] != '/') o--;
            if (o > 0) o--;
        } else if (n > 0) {
            if (o + 1 + n + 1 > cap) return false;
            out[o++] = '/';
            memcpy(out + o, c, n);
            o += n;
        }
        c += n;
        if (*c == '/') c++;
    }
    out[o] = '\0';
    return true;
}

bool otc_same_file(const char *a, const char *b) {
    if (!a || !b) return false;
    struct stat sa, sb;
    bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb) return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea || eb) return false;
    char pa[PATH_CAP + PATH_MAX], pb[PATH_CAP + PATH_MAX];
    return landing_place(a, pa, sizeof pa) && landing_place(b, pb, sizeof pb) && !strcmp(pa, pb);
}
