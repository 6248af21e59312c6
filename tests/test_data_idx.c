/* The IDX reader on small files the tests write themselves (plain and gzip-compressed):
 * pixels scaled by /255, labels as class indices, the directory layout, and every lie a
 * file can tell (magic, dimensions, truncation, trailing bytes, a cut gzip stream, labels
 * out of range, counts that differ) refused with the file and field named. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#include "harness.h"
#include "otc/otc.h"

static char dir[512];

static const char *tmp_path(const char *name) {
    static char buf[16][768];
    static int k;
    k = (k + 1) % 16;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void make_dir(const char *name) {
    snprintf(dir, sizeof dir, "%s/idx_%s", OTC_BINARY_DIR, name);
    mkdir(dir, 0755);
}

static void put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* An IDX file: magic, the dims, then the data bytes; gzip-compressed when gz. */
static void write_idx(const char *path, uint32_t magic, int ndims, const uint32_t *dims,
                      const unsigned char *data, size_t n, bool gz) {
    unsigned char head[16];
    put_be32(head, magic);
    for (int i = 0; i < ndims; i++) put_be32(head + 4 + 4 * i, dims[i]);
    size_t hl = 4 + 4 * (size_t)ndims;
    if (gz) {
        gzFile f = gzopen(path, "wb");
        REQUIRE(f);
        CHECK(gzwrite(f, head, (unsigned)hl) == (int)hl);
        if (n) CHECK(gzwrite(f, data, (unsigned)n) == (int)n);
        CHECK(gzclose(f) == Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        REQUIRE(f);
        CHECK(fwrite(head, 1, hl, f) == hl);
        if (n) CHECK(fwrite(data, 1, n, f) == n);
        CHECK(fclose(f) == 0);
    }
}

/* Three 2x3 images and their labels. */
static const unsigned char pix[18] = {0, 255, 51, 102, 153, 204, 1, 2,  3,
                                      4, 5,   6,  255, 255, 0,   0, 17, 34};
static const unsigned char lab[3] = {0, 9, 3};

static void write_good(const char *images, const char *labels, bool gz) {
    write_idx(images, 0x803, 3, (const uint32_t[]){3, 2, 3}, pix, 18, gz);
    write_idx(labels, 0x801, 1, (const uint32_t[]){3}, lab, 3, gz);
}

static void check_good(const otc_dataset *d, const otc_idx_info *info, int n) {
    REQUIRE(d);
    CHECK(d->rows == n && d->n_features == 6 && d->n_targets == 1);
    CHECK(info->items == n && info->height == 2 && info->width == 3);
    for (int i = 0; i < n * 6; i++) CHECK_NEAR(d->x[i], pix[i] / 255.0, 1e-7);
    CHECK(d->x[1] == 1.0f && d->x[0] == 0.0f);
    CHECK_NEAR(d->x[2], 0.2, 1e-7); /* 51 / 255 */
    for (int i = 0; i < n; i++) CHECK(d->y[i] == lab[i]);
}

TEST(idx_loads_gzip) {
    make_dir("gzip");
    write_good(tmp_path("im.gz"), tmp_path("lb.gz"), true);
    otc_dataset *d = NULL;
    otc_idx_info info = {0};
    CHECK_MSG(otc_idx_load(tmp_path("im.gz"), tmp_path("lb.gz"), NULL, &d, &info) == OTC_OK, "%s",
              otc_last_error());
    check_good(d, &info, 3);
    otc_dataset_free(d);
}

TEST(idx_loads_plain_and_max_items) {
    make_dir("plain");
    write_good(tmp_path("im"), tmp_path("lb"), false);
    otc_dataset *d = NULL;
    otc_idx_info info = {0};
    otc_idx_options o = {.max_items = 2};
    CHECK_MSG(otc_idx_load(tmp_path("im"), tmp_path("lb"), &o, &d, &info) == OTC_OK, "%s",
              otc_last_error());
    check_good(d, &info, 2);
    otc_dataset_free(d);
}

/* The MNIST layout: train-images-idx3-ubyte.gz, ... (or the plain names). */
TEST(idx_loads_directory) {
    make_dir("layout");
    write_good(tmp_path("train-images-idx3-ubyte.gz"), tmp_path("train-labels-idx1-ubyte.gz"),
               true);
    write_good(tmp_path("t10k-images-idx3-ubyte"), tmp_path("t10k-labels-idx1-ubyte"), false);
    otc_dataset *d = NULL;
    otc_idx_info info = {0};
    CHECK_MSG(otc_idx_load_dir(dir, "train", NULL, &d, &info) == OTC_OK, "%s", otc_last_error());
    check_good(d, &info, 3);
    otc_dataset_free(d);
    d = NULL;
    CHECK_MSG(otc_idx_load_dir(dir, "t10k", NULL, &d, &info) == OTC_OK, "%s", otc_last_error());
    check_good(d, &info, 3);
    otc_dataset_free(d);
    d = NULL;
    CHECK(otc_idx_load_dir(tmp_path("nothing"), "train", NULL, &d, &info) == OTC_ERR_IO);
    CHECK(strstr(otc_last_error(), "not a directory"));
}

/* Loads images/labels and expects status `want` and the message to hold both a and b. */
static void expect_fail(const char *images, const char *labels, otc_status want, const char *a,
                        const char *b) {
    otc_dataset *d = NULL;
    otc_status st = otc_idx_load(images, labels, NULL, &d, NULL);
    CHECK_MSG(st == want, "status %d, wanted %d (%s)", st, want, otc_last_error());
    CHECK(d == NULL);
    const char *e = otc_last_error();
    CHECK_MSG(strstr(e, a) && (!b || strstr(e, b)), "wanted '%s' and '%s' in: %s", a, b ? b : "",
              e);
    otc_dataset_free(d);
}

TEST(idx_hostile_headers) {
    make_dir("hostile_headers");
    const char *lb = tmp_path("lb.gz");
    write_idx(lb, 0x801, 1, (const uint32_t[]){3}, lab, 3, true);
    /* wrong magic: a labels file given as images, a float type byte, nonzero leading bytes */
    expect_fail(lb, lb, OTC_ERR_FORMAT, "lb.gz: magic: 0x00000801", "expected 0x00000803");
    const char *im = tmp_path("float.gz");
    write_idx(im, 0x0d03, 3, (const uint32_t[]){3, 2, 3}, pix, 18, true);
    expect_fail(im, lb, OTC_ERR_FORMAT, "float.gz: magic", NULL);
    /* a zero and an absurd dimension */
    im = tmp_path("zero.gz");
    write_idx(im, 0x803, 3, (const uint32_t[]){3, 0, 3}, pix, 18, true);
    expect_fail(im, lb, OTC_ERR_FORMAT, "zero.gz: dimension 1 (rows): 0", NULL);
    im = tmp_path("huge.gz");
    write_idx(im, 0x803, 3, (const uint32_t[]){3, 4000000000u, 3}, pix, 18, true);
    expect_fail(im, lb, OTC_ERR_FORMAT, "huge.gz: dimension 1 (rows): 4000000000", NULL);
    /* each dimension allowed, their product not: refused before anything is allocated */
    im = tmp_path("product.gz");
    write_idx(im, 0x803, 3, (const uint32_t[]){3, 1u << 15, 1u << 15}, pix, 18, true);
    expect_fail(im, lb, OTC_ERR_FORMAT, "product.gz: dimensions", "limit");
    /* a header cut short, and an empty file */
    im = tmp_path("short");
    FILE *f = fopen(im, "wb");
    REQUIRE(f);
    fwrite("\0\0\x08\x03\0\0", 1, 6, f);
    fclose(f);
    expect_fail(im, lb, OTC_ERR_FORMAT, "short: header: truncated", NULL);
    im = tmp_path("empty");
    f = fopen(im, "wb");
    REQUIRE(f);
    fclose(f);
    expect_fail(im, lb, OTC_ERR_FORMAT, "empty: magic", NULL);
    expect_fail(tmp_path("missing.gz"), lb, OTC_ERR_IO, "missing.gz: cannot open", NULL);
}

TEST(idx_hostile_data) {
    make_dir("hostile_data");
    const char *im = tmp_path("im.gz"), *lb = tmp_path("lb.gz");
    write_good(im, lb, true);
    /* the header promises 2^20 images of 16x16 (the element limit exactly); 18 bytes follow:
     * refused once the data runs out, memory grown only as far as the data went */
    const char *big = tmp_path("big.gz"), *big_lb = tmp_path("big_lb.gz");
    write_idx(big, 0x803, 3, (const uint32_t[]){1u << 20, 16, 16}, pix, 18, true);
    write_idx(big_lb, 0x801, 1, (const uint32_t[]){1u << 20}, lab, 3, true);
    expect_fail(big, big_lb, OTC_ERR_FORMAT, "big.gz: pixels", "holds only 18");
    /* dimensions that do not match the file: one byte short, one byte over (plain) */
    const char *shortf = tmp_path("short_data");
    write_idx(shortf, 0x803, 3, (const uint32_t[]){3, 2, 3}, pix, 17, false);
    expect_fail(shortf, lb, OTC_ERR_FORMAT, "short_data: pixels", "holds only 17");
    const char *longf = tmp_path("long_data");
    unsigned char more[19];
    memcpy(more, pix, 18);
    more[18] = 7;
    write_idx(longf, 0x803, 3, (const uint32_t[]){3, 2, 3}, more, 19, false);
    expect_fail(longf, lb, OTC_ERR_FORMAT, "long_data: pixels", "more than the 18 bytes");
    /* labels: a count that differs, one out of range */
    const char *lb2 = tmp_path("lb2.gz");
    write_idx(lb2, 0x801, 1, (const uint32_t[]){2}, lab, 2, true);
    expect_fail(im, lb2, OTC_ERR_FORMAT, "lb2.gz: item count: 2 labels", "holds 3 images");
    const char *lb10 = tmp_path("lb10.gz");
    write_idx(lb10, 0x801, 1, (const uint32_t[]){3}, (const unsigned char[]){0, 10, 1}, 3, true);
    expect_fail(im, lb10, OTC_ERR_FORMAT, "lb10.gz: label of item 1: 10", "10 classes");
    otc_dataset *d = NULL;
    CHECK(otc_idx_load(im, lb10, &(otc_idx_options){.classes = 11}, &d, NULL) == OTC_OK);
    otc_dataset_free(d);
}

/* A gzip stream cut in the middle of its data: an error naming the file and its stream (zlib
 * reads ahead, so the fault shows before the field it lies in), not a short read. */
TEST(idx_hostile_truncated_gzip) {
    make_dir("cut");
    /* incompressible-ish data so the cut falls inside the deflate stream's data */
    unsigned char data[3 * 64 * 64];
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof data; i++) {
        s = s * 1103515245u + 12345u;
        data[i] = (unsigned char)(s >> 16);
    }
    const char *full = tmp_path("full.gz"), *cut = tmp_path("cut.gz"), *lb = tmp_path("lb.gz");
    write_idx(full, 0x803, 3, (const uint32_t[]){3, 64, 64}, data, sizeof data, true);
    write_idx(lb, 0x801, 1, (const uint32_t[]){3}, lab, 3, true);
    FILE *f = fopen(full, "rb");
    REQUIRE(f);
    static unsigned char gz[65536];
    size_t n = fread(gz, 1, sizeof gz, f);
    fclose(f);
    REQUIRE(n > 200);
    f = fopen(cut, "wb");
    REQUIRE(f);
    fwrite(gz, 1, n / 2, f);
    fclose(f);
    otc_dataset *d = NULL;
    CHECK(otc_idx_load(full, lb, NULL, &d, NULL) == OTC_OK);
    otc_dataset_free(d);
    d = NULL;
    expect_fail(cut, lb, OTC_ERR_FORMAT, "cut.gz: gzip stream", "unexpected end of file");
    /* and cut just before the gzip trailer (CRC and length): the data is all there, the
     * stream is not */
    f = fopen(cut, "wb");
    REQUIRE(f);
    fwrite(gz, 1, n - 4, f);
    fclose(f);
    expect_fail(cut, lb, OTC_ERR_FORMAT, "cut.gz: gzip stream", "unexpected end of file");
}

/* Appends the bytes of file `from` (or, with from NULL, `n` bytes of `text`) to `to`. */
static void append(const char *to, const char *from, const char *text, size_t n) {
    static unsigned char b[65536];
    if (from) {
        FILE *f = fopen(from, "rb");
        REQUIRE(f);
        n = fread(b, 1, sizeof b, f);
        fclose(f);
        text = (const char *)b;
    }
    FILE *f = fopen(to, "ab");
    REQUIRE(f);
    CHECK(fwrite(text, 1, n, f) == n);
    fclose(f);
}

/* After the last gzip member, only another member may follow: zlib's gzread skips anything
 * else, so a file with data after its stream loaded as if it ended there. */
TEST(idx_gzip_trailing_data_refused) {
    make_dir("trail");
    const char *im = tmp_path("im.gz"), *lb = tmp_path("lb.gz");
    write_good(im, lb, true);
    struct stat st;
    REQUIRE(stat(im, &st) == 0);
    append(im, NULL, "garbage}", 8);
    char at[64];
    snprintf(at, sizeof at, "(from byte %lld)", (long long)st.st_size);
    expect_fail(im, lb, OTC_ERR_FORMAT, "im.gz: data after the end of the gzip stream", at);
    /* one byte of it, and zeros as tar pads with, are refused the same */
    write_good(im, lb, true);
    append(im, NULL, "\0\0\0\0", 4);
    expect_fail(im, lb, OTC_ERR_FORMAT, "im.gz: data after the end of the gzip stream", at);
    /* two members (gzip a b > c): one stream of their bytes, loaded whole */
    const char *head = tmp_path("head.gz"), *rest = tmp_path("rest.gz");
    unsigned char h[16];
    put_be32(h, 0x803);
    put_be32(h + 4, 3);
    put_be32(h + 8, 2);
    put_be32(h + 12, 3);
    gzFile f = gzopen(head, "wb");
    REQUIRE(f);
    CHECK(gzwrite(f, h, 16) == 16 && gzwrite(f, pix, 7) == 7 && gzclose(f) == Z_OK);
    f = gzopen(rest, "wb");
    REQUIRE(f);
    CHECK(gzwrite(f, pix + 7, 11) == 11 && gzclose(f) == Z_OK);
    append(head, rest, NULL, 0);
    otc_dataset *d = NULL;
    otc_idx_info info = {0};
    CHECK_MSG(otc_idx_load(head, lb, NULL, &d, &info) == OTC_OK, "%s", otc_last_error());
    check_good(d, &info, 3);
    otc_dataset_free(d);
}

/* The header alone: what a caller checks against its model before the data is inflated. */
TEST(idx_peek_reads_the_header) {
    make_dir("peek");
    /* a header claiming 2^20 images of 16x16 over 18 bytes: peeking does not mind */
    write_idx(tmp_path("train-images-idx3-ubyte.gz"), 0x803, 3,
              (const uint32_t[]){1u << 20, 16, 16}, pix, 18, true);
    write_idx(tmp_path("train-labels-idx1-ubyte.gz"), 0x801, 1, (const uint32_t[]){3}, lab, 3,
              true);
    otc_idx_info info = {0};
    CHECK_MSG(otc_idx_peek_dir(dir, "train", &info) == OTC_OK, "%s", otc_last_error());
    CHECK(info.items == 1 << 20 && info.height == 16 && info.width == 16);
    CHECK(otc_idx_peek_dir(dir, "t10k", &info) == OTC_ERR_IO);
}
