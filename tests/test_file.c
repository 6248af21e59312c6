/* The file API (otc/file.h): bounded reads, where atomic writes land (devices, FIFOs, symlinks,
 * directories), several files as a unit, stale temporaries, same-file checks; and the error
 * buffer's clean cut. */
#define _DEFAULT_SOURCE /* mknod, makedev */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "otc/error.h"
#include "otc/file.h"

static void make_tmpdir(char *dir) {
    strcpy(dir, "/tmp/otc_test_file_XXXXXX");
    if (!mkdtemp(dir)) dir[0] = '\0';
}

static void rm_tmpdir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            rm_tmpdir(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* The file's content ("" when unreadable), in buf. */
static const char *get(const char *path, char *buf, size_t cap) {
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return buf;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Names in dir containing ".tmp-" (temporaries left behind). */
static int count_temporaries(const char *dir) {
    int n = 0;
    DIR *d = opendir(dir);
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) n += strstr(e->d_name, ".tmp-") != NULL;
    closedir(d);
    return n;
}

static bool has(const char *text) {
    return strstr(otc_last_error(), text) != NULL;
}

TEST(file_read_limit) {
    char dir[64], p[128];
    make_tmpdir(dir);
    REQUIRE(dir[0]);
    snprintf(p, sizeof p, "%s/a.txt", dir);
    char text[1001];
    memset(text, 'x', 1000);
    text[1000] = '\0';
    put(p, text);
    char *data = NULL;
    size_t len = 0;
    CHECK(otc_read_file(p, 1000, &data, &len) == OTC_OK); /* exactly at the limit */
    CHECK(len == 1000 && data && data[999] == 'x' && data[1000] == '\0');
    free(data);
    CHECK(otc_read_text_file(p, 999, &data, &len) == OTC_ERR_FORMAT);
    CHECK(!data && len == 0);
    CHECK_MSG(has(p) && has("more than 999 bytes"), "%s", otc_last_error());
    /* The limits read as docs/commands.md states them. */
    CHECK(otc_read_file(p, 0, &data, &len) == OTC_ERR_FORMAT);
    CHECK(OTC_MAX_CONFIG_BYTES == 1048576 && OTC_MAX_CSV_BYTES == 1073741824);
    put(p, "");
    CHECK(otc_read_text_file(p, 0, &data, &len) == OTC_OK && len == 0 && data[0] == '\0');
    free(data);
    CHECK(otc_read_file(dir, 100, &data, &len) == OTC_ERR_IO);
    CHECK_MSG(has("is a directory"), "%s", otc_last_error());
    snprintf(p, sizeof p, "%s/missing", dir);
    CHECK(otc_read_file(p, 100, &data, &len) == OTC_ERR_IO);
    CHECK_MSG(has(p) && has("No such file or directory"), "%s", otc_last_error());
    rm_tmpdir(dir);
}

TEST(file_read_endless_stream) {
    /* /dev/zero never ends: the binary reader stops at limit+1 bytes, the text reader at the
     * first NUL, offset 0. */
    char *data = NULL;
    size_t len = 0;
    CHECK(otc_read_file("/dev/zero", 4096, &data, &len) == OTC_ERR_FORMAT);
    CHECK_MSG(has("/dev/zero") && has("more than 4096 bytes"), "%s", otc_last_error());
    CHECK(otc_read_text_file("/dev/zero", OTC_MAX_CSV_BYTES, &data, &len) == OTC_ERR_FORMAT);
    CHECK_MSG(has("NUL byte at offset 0"), "%s", otc_last_error());
    CHECK(!data);
}

/* Runs a child that writes n bytes of 'y' to path (a FIFO) and exits. */
static pid_t fifo_writer(const char *path, size_t n) {
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGPIPE, SIG_IGN); /* the reader may stop early */
        int fd = open(path, O_WRONLY);
        char block[512];
        memset(block, 'y', sizeof block);
        while (fd >= 0 && n > 0) {
            size_t k = n < sizeof block ? n : sizeof block;
            if (write(fd, block, k) <= 0) break;
            n -= k;
        }
        _exit(0);
    }
    return pid;
}

TEST(file_read_fifo) {
    char dir[64], p[128];
    make_tmpdir(dir);
    REQUIRE(dir[0]);
    snprintf(p, sizeof p, "%s/pipe", dir);
    REQUIRE(mkfifo(p, 0600) == 0);
    char *data = NULL;
    size_t len = 0;
    pid_t w = fifo_writer(p, 3000);
    REQUIRE(w > 0);
    CHECK(otc_read_text_file(p, 3000, &data, &len) == OTC_OK);
    CHECK(len == 3000 && data && data[0] == 'y' && data[2999] == 'y' && data[3000] == '\0');
    free(data);
    waitpid(w, NULL, 0);
    w = fifo_writer(p, 3000);
    REQUIRE(w > 0);
    CHECK(otc_read_text_file(p, 2999, &data, &len) == OTC_ERR_FORMAT);
    CHECK_MSG(has("more than 2999 bytes"), "%s", otc_last_error());
    waitpid(w, NULL, 0);
    rm_tmpdir(dir);
}

TEST(file_write_symlink) {
    /* A link to a regular file is kept and its target replaced; a dangling link's target is
     * created. */
    char dir[64], link[128], target[128], buf[64];
    make_tmpdir(dir);
    REQUIRE(dir[0]);
    snprintf(link, sizeof link, "%s/link", dir);
    snprintf(target, sizeof target, "%s/target", dir);
    put(target, "old");
    REQUIRE(symlink("target", link) == 0);
    CHECK(otc_write_file_atomic(link, "new", 3) == OTC_OK);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(!strcmp(get(target, buf, sizeof buf), "new"));
    unlink(target);
    CHECK(otc_write_file_atomic(link, "fresh", 5) == OTC_OK);
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(!strcmp(get(target, buf, sizeof buf), "fresh"));
    CHECK(count_temporaries(dir) == 0);
    rm_tmpdir(dir);
}

TEST(file_write_fifo) {
    /* A FIFO is written in place, not replaced by a regular file. */
    char dir[64], p[128];
    make_tmpdir(dir);
    REQUIRE(dir[0]);
    snprintf(p, sizeof p, "%s/pipe", dir);
    REQUIRE(mkfifo(p, 0600) == 0);
    int rd = open(p, O_RDONLY | O_NONBLOCK); /* a reader, so the writer's open does not wait */
    REQUIRE(rd >= 0);
    CHECK(otc_write_file_atomic(p, "hello", 5) == OTC_OK);
    char buf[16] = "";
    CHECK(read(rd, buf, sizeof buf - 1) == 5 && !strcmp(buf, "hello"));
    close(rd);
    struct stat st;
    CHECK(lstat(p, &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK(count_temporaries(dir) == 0);
    rm_tmpdir(dir);
}

TEST(file_write_device) {
    /* Private copies of /dev/full (1,7) and /dev/null (1,3), which only root may make. */
    if (geteuid() != 0) {
        printf("file_write_device: skipped (needs root for mknod)\n");
        return;
    }
    char dir[64], full[128], null[128];
    make_tmpdir(dir);
    REQUIRE(dir[0]);
    snprintf(full, sizeof full, "%s/full", dir);
    snprintf(null, sizeof null, "%s/null", dir);
    REQUIRE(mknod(full, S_IFCHR | 0600, makedev(1, 7)) == 0);
    REQUIRE(mknod(null, S_IFCHR | 0600, makedev(1, 3)) == 0);
    CHECK(otc_write_file_atomic(full, "data", 4) == OTC_ERR_IO);
    CHECK_MSG(has(full) && has("No space left on device"), "%s", otc_last_error());
    CHECK(otc_write_file_atomic(null, "data", 4) == OTC_OK);
    struct stat st;
    CHECK(lstat(full, &st) == 0 && S_ISCHR(st.st_mode));
    CHECK(lstat(null, &st) == 0 && S_ISCHR(st.st_mode));
    CHECK(count_temporaries(dir) == 0);
    rm_tmpdir(dir);
}

TEST(file_write_directory_refused) {
    char dir[64];
    make_tmpdir(dir);
    REQUIRE(dir[0]);
    CHECK(otc_write_file_atomic(dir, "x", 1) == OTC_ERR_IO);
    CHECK_MSG(has(dir) && has("is a directory"), "%s", otc_last_error());
    struct stat st;
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    rm_tmpdir(dir);
}

TEST(file_write_keeps_mode) {
    char dir[64], p[128];
    make_tmpdir(dir);
    REQUIRE(dir[0]);
    snprintf(p, sizeof p, "%s/f", dir);
    put(p, "old");
    chmod(p, 0640);
    CHECK(otc_write_file_atomic(p, "new", 3) == OTC_OK);
    struct stat st;
    CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0640);
    rm_tmpdir(dir);
}

TEST(file_write_stale_temporaries) {
    /* A temporary whose process is gone (a child that has exited) is removed when its target
     * is written; one of a live process (ours), and names that only look alike, are kept. */
    char dir[64], p[128], stale[192], live[192], other[192], odd[192];
    make_tmpdir(dir);
    REQUIRE(dir[0]);
    pid_t child = fork();
    if (child == 0) _exit(0);
    REQUIRE(child > 0);
    waitpid(child, NULL, 0);
    snprintf(p, sizeof p, "%s/out.json", dir);
    snprintf(stale, sizeof stale, "%s/out.json.tmp-%ld-3", dir, (long)child);
    snprintf(live, sizeof live, "%s/out.json.tmp-%ld-12345", dir, (long)getpid());
    snprintf(other, sizeof other, "%s/other.json.tmp-%ld-3", dir, (long)child);
    snprintf(odd, sizeof odd, "%s/out.json.tmp-%ld-3x", dir, (long)child);
    put(stale, "partial");
    put(live, "partial");
    put(other, "partial");
    put(odd, "partial");
    CHECK(otc_write_file_atomic(p, "{}", 2) == OTC_OK);
    CHECK(access(stale, F_OK) != 0);
    CHECK(access(live, F_OK) == 0 && access(other, F_OK) == 0 && access(odd, F_OK) == 0);
    rm_tmpdir(dir);
}

TEST(file_write_pair) {
    /* Both files land, or neither changes. */
    char dir[64], h[128], c[128], buf[64];
    make_tmpdir(dir);
    REQUIRE(dir[0]);
    snprintf(h, sizeof h, "%s/m.h", dir);
    snprintf(c, sizeof c, "%s/m.c", dir);
    put(h, "old h");
    put(c, "old c");
    otc_file_part parts[2] = {{h, "new h", 5}, {c, "new c", 5}};
    CHECK(otc_write_files_atomic(parts, 2) == OTC_OK);
    CHECK(!strcmp(get(h, buf, sizeof buf), "new h") && !strcmp(get(c, buf, sizeof buf), "new c"));
    CHECK(count_temporaries(dir) == 0);
    /* The second cannot be written (a directory in its place): the first stays as it was. */
    put(h, "old h");
    unlink(c);
    REQUIRE(mkdir(c, 0700) == 0);
    CHECK(otc_write_files_atomic(parts, 2) == OTC_ERR_IO);
    CHECK_MSG(has(c) && has("is a directory"), "%s", otc_last_error());
    CHECK(!strcmp(get(h, buf, sizeof buf), "old h"));
    CHECK(count_temporaries(dir) == 0);
    rmdir(c);
    if (geteuid() == 0) { /* the second is a full disk */
        REQUIRE(mknod(c, S_IFCHR | 0600, makedev(1, 7)) == 0);
        CHECK(otc_write_files_atomic(parts, 2) == OTC_ERR_IO);
        CHECK_MSG(has(c) && has("No space left on device"), "%s", otc_last_error());
        CHECK(!strcmp(get(h, buf, sizeof buf), "old h"));
        CHECK(count_temporaries(dir) == 0);
    }
    rm_tmpdir(dir);
}

/* Sets or clears the immutable flag (root, and a filesystem that has it); false if not. */
static bool set_immutable(const char *path, bool on) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return false;
    int flags = 0;
    bool ok = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
    ok = ok && ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    close(fd);
    return ok;
}

TEST(file_write_pair_rollback) {
    /* The second rename fails (its target is immutable: even root cannot replace it), after
     * the first has replaced m.h: m.h gets its old content back from the backup. */
    char dir[64], h[128], c[128], buf[64];
    make_tmpdir(dir);
    REQUIRE(dir[0]);
    snprintf(h, sizeof h, "%s/m.h", dir);
    snprintf(c, sizeof c, "%s/m.c", dir);
    put(h, "old h");
    put(c, "old c");
    if (!set_immutable(c, true)) {
        printf("file_write_pair_rollback: skipped (no immutable flag here)\n");
        rm_tmpdir(dir);
        return;
    }
    otc_file_part parts[2] = {{h, "new h", 5}, {c, "new c", 5}};
    CHECK(otc_write_files_atomic(parts, 2) == OTC_ERR_IO);
    CHECK_MSG(has(c) && has("Operation not permitted"), "%s", otc_last_error());
    CHECK(!strcmp(get(h, buf, sizeof buf), "old h"));
    CHECK(!strcmp(get(c, buf, sizeof buf), "old c"));
    CHECK(count_temporaries(dir) == 0);
    /* A file that did not exist before is removed again. */
    unlink(h);
    CHECK(otc_write_files_atomic(parts, 2) == OTC_ERR_IO);
    CHECK(access(h, F_OK) != 0);
    CHECK(count_temporaries(dir) == 0);
    set_immutable(c, false);
    rm_tmpdir(dir);
}

TEST(file_same) {
    char dir[64], a[128], b[128], hard[128], sym[128], dotted[160], n1[128], n2[160];
    make_tmpdir(dir);
    REQUIRE(dir[0]);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(hard, sizeof hard, "%s/hard", dir);
    snprintf(sym, sizeof sym, "%s/sym", dir);
    snprintf(dotted, sizeof dotted, "%s/./a", dir);
    snprintf(n1, sizeof n1, "%s/new", dir);
    snprintf(n2, sizeof n2, "%s/../%s/new", dir, strrchr(dir, '/') + 1);
    put(a, "a");
    put(b, "b");
    REQUIRE(link(a, hard) == 0);
    REQUIRE(symlink("a", sym) == 0);
    CHECK(otc_same_file(a, a));
    CHECK(otc_same_file(a, dotted));
    CHECK(otc_same_file(a, hard));
    CHECK(otc_same_file(sym, a));
    CHECK(!otc_same_file(a, b));
    CHECK(!otc_same_file(a, n1)); /* one exists, the other not */
    CHECK(otc_same_file(n1, n2)); /* neither exists: where they would land */
    CHECK(!otc_same_file(n1, b));
    CHECK(!otc_same_file("/dev/null", "/dev/null")); /* not a regular file: no clobbering */
    rm_tmpdir(dir);
}

/* Is s valid UTF-8 (no sequence cut short)? */
static bool valid_utf8(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2 : 3;
        p++;
        for (int i = 0; i < n; i++, p++)
            if ((*p & 0xC0) != 0x80) return false;
    }
    return true;
}

TEST(error_long_message_cut) {
    /* A 30000-byte message of 3-byte characters: kept far beyond 1 KiB (two full paths fit),
     * cut before a whole character, ending in "...". */
    size_t n = 10000;
    char *big = malloc(3 * n + 1);
    REQUIRE(big);
    for (size_t i = 0; i < n; i++) memcpy(big + 3 * i, "\xe2\x82\xac", 3); /* the euro sign */
    big[3 * n] = '\0';
    for (int shift = 0; shift < 3; shift++) { /* every cut position within a character */
        otc_fail(OTC_ERR_IO, "%.*s%s", shift, "ab", big);
        const char *m = otc_last_error();
        size_t len = strlen(m);
        CHECK_MSG(len > 8200 && len < 3 * n, "%zu", len);
        CHECK(!strcmp(m + len - 3, "..."));
        CHECK(valid_utf8(m));
        CHECK(!strncmp(m + shift, big, len - 3 - (size_t)shift)); /* a prefix of the message */
    }
    /* Context in front of a long message: the same clean cut. */
    otc_fail(OTC_ERR_IO, "%s", big);
    otc_fail_context(OTC_ERR_IO, "model.otm");
    const char *m = otc_last_error();
    CHECK(!strncmp(m, "model.otm: \xe2\x82\xac", 14));
    CHECK(!strcmp(m + strlen(m) - 3, "...") && valid_utf8(m));
    /* A short one is untouched. */
    otc_fail(OTC_ERR_IO, "x");
    otc_fail_context(OTC_ERR_IO, "f");
    CHECK(!strcmp(otc_last_error(), "f: x"));
    free(big);
}
