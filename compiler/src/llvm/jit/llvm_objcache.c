/* The on-disk object cache: the JIT's compiled object code, one file per module, keyed by a
 * hash of the module's bitcode (before optimisation), the tier, the LLVM and otc versions and
 * the CPU, so what one process compiled (the math library, a model) the next one loads. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/BitWriter.h>

#include "llvm_internal.h"
#include "otc/otc.h"

/* Every entry: this header, then the object. The header's own checksum and the object's
 * detect a truncated or damaged file, which is then ignored and removed (never loaded). */
#define MAGIC "OTCJIT01"
typedef struct {
    char magic[8];
    uint64_t key[2];
    uint64_t len;      /* bytes of object code after the header */
    uint64_t sum;      /* hash of those bytes */
    uint64_t head_sum; /* hash of the fields above */
} entry_header;

#define SUFFIX        ".otcobj"
#define MAX_OBJECT    (256u << 20)                    /* larger is damage, never a module */
#define DEFAULT_LIMIT ((unsigned long long)256 << 20) /* bytes of entries kept */

/* Calls come with the JIT lock held (llvm_jit.c), which serialises this state. */
static unsigned long long estimated_total; /* bytes of entries: the last scan plus stores */
static bool scanned;
static unsigned store_serial;

/* ---- the hash: two 64-bit lanes over 8-byte words (a content key, not a defence against
 * an attacker: whoever can write the cache directory can write the user's files anyway) ---- */

static uint64_t rotl(uint64_t x, int r) {
    return (x << r) | (x >> (64 - r));
}

static uint64_t fmix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

typedef struct {
    uint64_t a, b, n;
} hasher;

static void hash_init(hasher *h, uint64_t seed) {
    h->a = 0x9e3779b97f4a7c15ull ^ seed;
    h->b = 0x6a09e667f3bcc909ull + seed;
    h->n = 0;
}

static void hash_word(hasher *h, uint64_t w) {
    h->a = rotl(h->a ^ (w * 0x87c37b91114253d5ull), 31) * 0x4cf5ad432745937full;
    h->b = rotl(h->b + (w * 0x4cf5ad432745937full), 27) * 0x87c37b91114253d5ull + h->a;
}

static void hash_bytes(hasher *h, const void *data, size_t n) {
    const unsigned char *p = data;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        hash_word(h, w);
    }
    uint64_t tail = 0;
    memcpy(&tail, p + i, n - i);
    hash_word(h, tail ^ ((uint64_t)(n - i) << 56));
    h->n += n;
}

static void hash_final(hasher *h, uint64_t out[2]) {
    uint64_t a = fmix(h->a ^ h->n), b = fmix(h->b ^ rotl(h->n, 32));
    out[0] = a + b;
    out[1] = fmix(a ^ rotl(b, 17));
}

static uint64_t checksum(const void *data, size_t n) {
    hasher h;
    uint64_t out[2];
    hash_init(&h, 0x636865636bull);
    hash_bytes(&h, data, n);
    hash_final(&h, out);
    return out[0];
}

/* ---- where ---- */

/* The entries' directory, or false when caching is off: $OTC_CACHE_DIR ("off" turns the
 * cache off), else $XDG_CACHE_HOME/otc, else ~/.cache/otc; entries go in its jit/. Read at
 * every call, so a program (or a test) may change it between compiles. */
static bool cache_dir(char *buf, size_t len) {
    const char *dir = getenv("OTC_CACHE_DIR");
    int n;
    if (dir && *dir) {
        if (!strcmp(dir, "off")) return false;
        n = snprintf(buf, len, "%s/jit", dir);
    } else if ((dir = getenv("XDG_CACHE_HOME")) && dir[0] == '/') {
        n = snprintf(buf, len, "%s/otc/jit", dir);
    } else if ((dir = getenv("HOME")) && dir[0] == '/') {
        n = snprintf(buf, len, "%s/.cache/otc/jit", dir);
    } else {
        return false;
    }
    return n > 0 && (size_t)n < len;
}

static bool entry_path(const uint64_t key[2], char *buf, size_t len) {
    char dir[4096];
    if (!cache_dir(dir, sizeof dir)) return false;
    int n = snprintf(buf, len, "%s/%016llx%016llx" SUFFIX, dir, (unsigned long long)key[0],
                     (unsigned long long)key[1]);
    return n > 0 && (size_t)n < len;
}

/* mkdir -p, private to the user. */
static bool make_dirs(const char *path) {
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0700) && errno != EEXIST) return false;
        *s = '/';
    }
    return !mkdir(p, 0700) || errno == EEXIST;
}

/* ---- the key ---- */

bool otc_llvm_objcache_key(LLVMModuleRef m, LLVMTargetMachineRef tm, bool fast_codegen,
                           otc_llvm_pipeline pipe, uint64_t key[2]) {
    char dir[4096];
    if (!cache_dir(dir, sizeof dir)) return false;
    LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(m);
    if (!bc) return false;
    unsigned major = 0, minor = 0, patch = 0;
    LLVMGetVersion(&major, &minor, &patch);
    char *triple = LLVMGetTargetMachineTriple(tm), *cpu = LLVMGetTargetMachineCPU(tm),
         *features = LLVMGetTargetMachineFeatureString(tm);
    /* tm's code generator level (not readable through the C API) is named by the caller. */
    char meta[256];
    snprintf(meta, sizeof meta, "otc %s llvm %u.%u.%u pipeline %d codegen %s", OTC_VERSION, major,
             minor, patch, (int)pipe, fast_codegen ? "none" : "aggressive");
    hasher h;
    hash_init(&h, 0x6f7463);
    hash_bytes(&h, meta, strlen(meta) + 1);
    hash_bytes(&h, triple, strlen(triple) + 1);
    hash_bytes(&h, cpu, strlen(cpu) + 1);
    hash_bytes(&h, features, strlen(features) + 1);
    hash_bytes(&h, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc));
    hash_final(&h, key);
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    LLVMDisposeMemoryBuffer(bc);
    return true;
}

/* ---- reading ---- */

LLVMMemoryBufferRef otc_llvm_objcache_load(const uint64_t key[2]) {
    char path[4200];
    if (!entry_path(key, path, sizeof path)) return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    entry_header h;
    char *data = NULL;
    bool good =
        !fstat(fd, &st) && S_ISREG(st.st_mode) && (unsigned long long)st.st_size >= sizeof h &&
        (unsigned long long)st.st_size <= sizeof h + MAX_OBJECT &&
        read(fd, &h, sizeof h) == (ssize_t)sizeof h && !memcmp(h.magic, MAGIC, 8) &&
        h.head_sum == checksum(&h, offsetof(entry_header, head_sum)) && h.key[0] == key[0] &&
        h.key[1] == key[1] && h.len == (unsigned long long)st.st_size - sizeof h;
    if (good) {
        data = malloc(h.len ? h.len : 1);
        size_t got = 0;
        while (data && got < h.len) {
            ssize_t r = read(fd, data + got, h.len - got);
            if (r <= 0) break;
            got += (size_t)r;
        }
        good = data && got == h.len && checksum(data, h.len) == h.sum;
    }
    LLVMMemoryBufferRef buf = NULL;
    if (good) {
        buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(data, h.len, "otc-cached-object");
        /* Recently used: eviction removes the oldest modification times first. */
        futimens(fd, NULL);
    } else {
        /* Damaged or truncated (or another format): the next compile writes a good one. */
        unlink(path);
    }
    free(data);
    close(fd);
    return buf;
}

/* ---- writing ---- */

static unsigned long long cache_limit(void) {
    const char *s = getenv("OTC_CACHE_MAX_MB");
    char *end = NULL;
    unsigned long long mb = s && *s ? strtoull(s, &end, 10) : 0;
    if (!s || !*s || *end || mb == 0 || mb > (1ull << 30)) return DEFAULT_LIMIT;
    return mb << 20;
}

typedef struct {
    char name[64];
    time_t mtime;
    unsigned long long size;
} listed;

static int by_age(const void *a, const void *b) {
    const listed *x = a, *y = b;
    return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Sums the entries' sizes; over the limit, removes the least recently used down to three
 * quarters of it. Temporary files older than an hour are a crashed writer's: removed. */
static void evict(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    listed *all = NULL;
    size_t n = 0, cap = 0;
    unsigned long long total = 0;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        bool entry = len > strlen(SUFFIX) && !strcmp(e->d_name + len - strlen(SUFFIX), SUFFIX);
        bool tmp = strstr(e->d_name, SUFFIX ".tmp.") != NULL;
        if ((!entry && !tmp) || len >= sizeof all->name) continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
            continue;
        if (tmp) {
            if (now - st.st_mtime > 3600) unlinkat(dirfd(d), e->d_name, 0);
            continue;
        }
        if (n == cap) {
            size_t c = cap ? 2 * cap : 64;
            listed *p = realloc(all, c * sizeof *p);
            if (!p) break;
            all = p;
            cap = c;
        }
        snprintf(all[n].name, sizeof all[n].name, "%s", e->d_name);
        all[n].mtime = st.st_mtime;
        all[n].size = (unsigned long long)st.st_size;
        total += all[n].size;
        n++;
    }
    unsigned long long limit = cache_limit();
    if (total > limit) {
        qsort(all, n, sizeof *all, by_age);
        for (size_t i = 0; i < n && total > limit / 4 * 3; i++)
            if (!unlinkat(dirfd(d), all[i].name, 0)) total -= all[i].size;
    }
    closedir(d);
    free(all);
    estimated_total = total;
    scanned = true;
}

static bool write_all(int fd, const void *data, size_t n) {
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

void otc_llvm_objcache_store(const uint64_t key[2], const void *obj, size_t len) {
    char dir[4096], path[4200], tmp[4300];
    if (len > MAX_OBJECT || !cache_dir(dir, sizeof dir) || !entry_path(key, path, sizeof path))
        return;
    /* An unwritable directory means no caching, silently: the compile already succeeded. */
    if (!make_dirs(dir)) return;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), store_serial++);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return;
    entry_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MAGIC, 8);
    h.key[0] = key[0];
    h.key[1] = key[1];
    h.len = len;
    h.sum = checksum(obj, len);
    h.head_sum = checksum(&h, offsetof(entry_header, head_sum));
    bool ok = write_all(fd, &h, sizeof h) && write_all(fd, obj, len);
    ok = !close(fd) && ok;
    /* The rename is atomic: a concurrent reader sees the old entry, none, or this one whole;
     * of two processes writing the same key, the last rename wins with identical content. */
    if (!ok || rename(tmp, path)) {
        unlink(tmp);
        return;
    }
    estimated_total += sizeof h + len;
    if (!scanned || estimated_total > cache_limit()) evict(dir);
}
