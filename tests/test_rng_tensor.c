/* Tests for the random generator (against an independent xoshiro128** + splitmix64 and
 * published test vectors, plus distribution checks) and for tensors. */
#include "harness.h"

#include "otc/rng.h"
#include "otc/tensor.h"

/* ---- independent reference: splitmix64 and xoshiro128** after Vigna's public code ---- */

static uint64_t ref_splitmix64(uint64_t *x) {
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint32_t ref_rotl(uint32_t x, int k) {
    return (x << k) | (x >> (32 - k));
}

static uint32_t ref_next(uint32_t s[4]) {
    const uint32_t result = ref_rotl(s[1] * 5, 7) * 9;
    const uint32_t t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = ref_rotl(s[3], 11);
    return result;
}

/* rng.h: the 128-bit state is two splitmix64 outputs, low word first. */
static void ref_seed(uint32_t s[4], uint64_t seed) {
    uint64_t a = ref_splitmix64(&seed), b = ref_splitmix64(&seed);
    s[0] = (uint32_t)a;
    s[1] = (uint32_t)(a >> 32);
    s[2] = (uint32_t)b;
    s[3] = (uint32_t)(b >> 32);
}

TEST(rng_reference_vectors) {
    /* The reference itself against published vectors: splitmix64 from seed 0, and
     * xoshiro128** from the state {1, 2, 3, 4} (as in the rand_xoshiro crate's tests). */
    uint64_t x = 0;
    CHECK(ref_splitmix64(&x) == UINT64_C(0xE220A8397B1DCDAF));
    CHECK(ref_splitmix64(&x) == UINT64_C(0x6E789E6AA1B965F4));
    CHECK(ref_splitmix64(&x) == UINT64_C(0x06C45D188009454F));
    const uint32_t published[10] = {11520,      0,          5927040,    70819200,   2031721883,
                                    1637235492, 1287239034, 3734860849, 3729100597, 4258142804};
    uint32_t s[4] = {1, 2, 3, 4};
    otc_rng rng = {{1, 2, 3, 4}};
    for (int i = 0; i < 10; i++) {
        CHECK(ref_next(s) == published[i]);
        CHECK_MSG(otc_rng_u32(&rng) == published[i], "output %d", i);
    }
}

TEST(rng_seeded_stream_matches_reference) {
    const uint64_t seeds[] = {0, 1, 42, UINT64_C(0xDEADBEEFCAFEF00D), UINT64_MAX};
    for (int k = 0; k < 5; k++) {
        uint32_t s[4];
        ref_seed(s, seeds[k]);
        otc_rng rng;
        otc_rng_seed(&rng, seeds[k]);
        for (int i = 0; i < 4; i++) CHECK(rng.s[i] == s[i]);
        for (int i = 0; i < 1000; i++) {
            uint32_t want = ref_next(s);
            uint32_t got = otc_rng_u32(&rng);
            if (got != want) {
                CHECK_MSG(got == want, "seed %d output %d", k, i);
                break;
            }
        }
    }
    /* Pinned first outputs, so a change to seeding or the generator cannot go unnoticed
     * (values from the reference above, also checked against a Python transcription). */
    const uint32_t seed42[6] = {0x69e85a2a, 0xf843fad0, 0x0105185f,
                                0x8a1f1ea6, 0xa66be2a9, 0x9844904e};
    const uint32_t seed0[3] = {0xdec9045d, 0x9a089d75, 0xab77d362};
    otc_rng rng;
    otc_rng_seed(&rng, 42);
    for (int i = 0; i < 6; i++) CHECK(otc_rng_u32(&rng) == seed42[i]);
    otc_rng_seed(&rng, 0);
    for (int i = 0; i < 3; i++) CHECK(otc_rng_u32(&rng) == seed0[i]);
    /* uniform() is the top 24 bits of the same stream. */
    otc_rng_seed(&rng, 42);
    CHECK(otc_rng_uniform(&rng) == (float)(seed42[0] >> 8) / 16777216.0f);
}

TEST(rng_same_seed_same_stream) {
    otc_rng a, b, c;
    otc_rng_seed(&a, 1234);
    otc_rng_seed(&b, 1234);
    otc_rng_seed(&c, 1235);
    int differ = 0;
    for (int i = 0; i < 100; i++) {
        CHECK(otc_rng_normal(&a) == otc_rng_normal(&b));
        CHECK(otc_rng_below(&a, 17) == otc_rng_below(&b, 17));
        float ua = otc_rng_uniform(&a);
        CHECK(ua == otc_rng_uniform(&b));
        differ += ua != otc_rng_uniform(&c);
    }
    CHECK(differ > 90);
    /* Copying the struct forks the stream. */
    otc_rng fork = a;
    for (int i = 0; i < 10; i++) CHECK(otc_rng_u32(&fork) == otc_rng_u32(&a));
}

TEST(rng_uniform_range_and_moments) {
    otc_rng rng;
    otc_rng_seed(&rng, 7);
    const int n = 100000;
    double sum = 0, sq = 0;
    float lo = 1, hi = 0;
    int below_tenth = 0;
    for (int i = 0; i < n; i++) {
        float u = otc_rng_uniform(&rng);
        CHECK(u >= 0.0f && u < 1.0f);
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
        sum += u;
        sq += (double)u * u;
        below_tenth += u < 0.1f;
    }
    double mean = sum / n, var = sq / n - mean * mean;
    /* Standard errors: mean 0.29/sqrt(n) ~ 0.0009, variance ~0.0003; tolerances ~5 sigma. */
    CHECK_NEAR(mean, 0.5, 0.005);
    CHECK_NEAR(var, 1.0 / 12.0, 0.0015);
    CHECK_NEAR((double)below_tenth / n, 0.1, 0.005);
    CHECK(lo < 1e-3 && hi > 1 - 1e-3);
}

TEST(rng_normal_moments) {
    otc_rng rng;
    otc_rng_seed(&rng, 11);
    const int n = 100000;
    double sum = 0, sq = 0, quad = 0;
    int within1 = 0, within2 = 0;
    for (int i = 0; i < n; i++) {
        double z = otc_rng_normal(&rng);
        CHECK(isfinite(z));
        sum += z;
        sq += z * z;
        quad += z * z * z * z;
        within1 += fabs(z) < 1;
        within2 += fabs(z) < 2;
    }
    double mean = sum / n, sd = sqrt(sq / n - mean * mean);
    CHECK_NEAR(mean, 0.0, 0.015); /* standard error 0.0032 */
    CHECK_NEAR(sd, 1.0, 0.012);   /* standard error 0.0022 */
    CHECK_NEAR(quad / n, 3.0, 0.12);
    CHECK_NEAR((double)within1 / n, 0.682689, 0.008);
    CHECK_NEAR((double)within2 / n, 0.954500, 0.004);
}

TEST(rng_below_is_unbiased) {
    otc_rng rng;
    otc_rng_seed(&rng, 3);
    /* Small n: a chi-square over 7 buckets (6 degrees of freedom; 99.99th percentile 27.9). */
    int counts[7] = {0};
    const int n = 70000;
    for (int i = 0; i < n; i++) {
        uint32_t v = otc_rng_below(&rng, 7);
        REQUIRE(v < 7);
        counts[v]++;
    }
    double chi2 = 0;
    for (int k = 0; k < 7; k++) chi2 += (counts[k] - 10000.0) * (counts[k] - 10000.0) / 10000.0;
    CHECK_MSG(chi2 < 27.9, "chi2 = %g", chi2);
    /* Large n = 3 * 2^30: plain `u32 % n` would put half the draws below 2^30 instead of a
     * third, so this catches modulo bias directly. */
    const uint32_t big = 0xC0000000u;
    int low = 0;
    for (int i = 0; i < 30000; i++) {
        uint32_t v = otc_rng_below(&rng, big);
        REQUIRE(v < big);
        low += v < 0x40000000u;
    }
    CHECK_NEAR(low / 30000.0, 1.0 / 3.0, 0.015);
    for (int i = 0; i < 10; i++) CHECK(otc_rng_below(&rng, 1) == 0);
    /* Every value of a small range turns up. */
    bool seen[5] = {false};
    for (int i = 0; i < 200; i++) seen[otc_rng_below(&rng, 5)] = true;
    for (int k = 0; k < 5; k++) CHECK(seen[k]);
}

TEST(rng_shuffle_is_a_uniform_permutation) {
    otc_rng rng;
    otc_rng_seed(&rng, 5);
    int items[100];
    for (int i = 0; i < 100; i++) items[i] = i;
    otc_rng_shuffle(&rng, items, 100);
    int seen[100] = {0}, fixed = 0;
    for (int i = 0; i < 100; i++) {
        REQUIRE(items[i] >= 0 && items[i] < 100);
        seen[items[i]]++;
        fixed += items[i] == i;
    }
    for (int i = 0; i < 100; i++) CHECK(seen[i] == 1);
    CHECK(fixed < 10); /* expected 1 */

    /* Where item 0 of 6 lands, over many shuffles: uniform (chi-square, 5 dof, 99.99% 25.7). */
    int where[6] = {0};
    const int trials = 30000;
    for (int t = 0; t < trials; t++) {
        int v[6] = {0, 1, 2, 3, 4, 5};
        otc_rng_shuffle(&rng, v, 6);
        for (int i = 0; i < 6; i++)
            if (v[i] == 0) where[i]++;
    }
    double chi2 = 0, e = trials / 6.0;
    for (int i = 0; i < 6; i++) chi2 += (where[i] - e) * (where[i] - e) / e;
    CHECK_MSG(chi2 < 25.7, "chi2 = %g", chi2);

    /* Degenerate sizes are fine. */
    int one[1] = {9};
    otc_rng_shuffle(&rng, one, 1);
    otc_rng_shuffle(&rng, one, 0);
    CHECK(one[0] == 9);
}

/* ---------------------------------------- tensors ---------------------------------------- */

TEST(tensor_shapes) {
    char buf[64];
    otc_shape b3 = otc_shape_2d(OTC_BATCH, 3);
    CHECK(strcmp(otc_shape_str(b3, buf, sizeof buf), "[B,3]") == 0);
    CHECK(strcmp(otc_shape_str(otc_shape_1d(4), buf, sizeof buf), "[4]") == 0);
    CHECK(strcmp(otc_shape_str(otc_shape_scalar(), buf, sizeof buf), "[]") == 0);
    CHECK(otc_shape_is_batched(b3) && !otc_shape_is_batched(otc_shape_2d(2, 3)));
    CHECK(!otc_shape_is_batched(otc_shape_scalar()));
    CHECK(otc_shape_size(b3) == 3);
    CHECK(otc_shape_size(otc_shape_scalar()) == 1);
    int dims[4] = {2, 3, 4, 5};
    otc_shape s4 = otc_shape_make(4, dims);
    CHECK(s4.ndim == 4 && otc_shape_size(s4) == 120);
    CHECK(strcmp(otc_shape_str(s4, buf, sizeof buf), "[2,3,4,5]") == 0);
    otc_shape r = otc_shape_resolve(b3, 8);
    CHECK(otc_shape_equal(r, otc_shape_2d(8, 3)));
    CHECK(otc_shape_equal(otc_shape_resolve(otc_shape_1d(4), 8), otc_shape_1d(4)));
    CHECK(!otc_shape_equal(otc_shape_2d(2, 3), otc_shape_2d(3, 2)));
    CHECK(!otc_shape_equal(otc_shape_1d(6), otc_shape_2d(6, 1)));
}

TEST(tensor_new_rejects_bad_shapes) {
    int neg[2] = {2, -3}, zero[2] = {0, 3}, five[5] = {1, 1, 1, 1, 1};
    otc_shape bad[4] = {otc_shape_make(2, neg), otc_shape_make(2, zero), otc_shape_2d(OTC_BATCH, 2),
                        otc_shape_make(4, five)};
    bad[3].ndim = 5;
    for (int i = 0; i < 4; i++) {
        otc_fail(OTC_OK, "%s", "");
        otc_tensor *t = otc_tensor_new(bad[i]);
        CHECK_MSG(t == NULL, "case %d", i);
        CHECK_MSG(strstr(otc_last_error(), "shape") != NULL, "case %d: %s", i, otc_last_error());
        otc_tensor_free(t);
    }
    otc_tensor_free(NULL); /* allowed, like free() */
}

TEST(tensor_alloc_copy_fill) {
    otc_tensor *s = otc_tensor_new(otc_shape_scalar());
    REQUIRE(s);
    CHECK(s->size == 1 && s->data[0] == 0.0f);
    otc_tensor_free(s);

    otc_tensor *t = otc_tensor_new(otc_shape_2d(2, 3));
    REQUIRE(t);
    CHECK(t->size == 6);
    for (size_t i = 0; i < 6; i++) CHECK(t->data[i] == 0.0f);
    otc_tensor_fill(t, 2.5f);
    for (size_t i = 0; i < 6; i++) CHECK(t->data[i] == 2.5f);
    otc_tensor *c = otc_tensor_copy(t);
    REQUIRE(c);
    c->data[0] = -1.0f;
    CHECK(t->data[0] == 2.5f && otc_shape_equal(c->shape, t->shape));
    const float v[4] = {1, 2, 3, 4};
    otc_tensor *f = otc_tensor_from(otc_shape_1d(4), v);
    REQUIRE(f);
    CHECK(memcmp(f->data, v, sizeof v) == 0);
    otc_tensor_free(f);
    otc_tensor_free(c);
    otc_tensor_free(t);
}

TEST(tensor_scalar_arithmetic) {
    const float v[3] = {1.0f, -2.0f, 0.5f};
    otc_tensor *t = otc_tensor_from(otc_shape_1d(3), v);
    REQUIRE(t);
    otc_tensor_add_scalar(t, 1.5f);
    CHECK(t->data[0] == 2.5f && t->data[1] == -0.5f && t->data[2] == 2.0f);
    otc_tensor_mul_scalar(t, -2.0f);
    CHECK(t->data[0] == -5.0f && t->data[1] == 1.0f && t->data[2] == -4.0f);
    otc_tensor_free(t);
}

TEST(tensor_elementwise_and_shape_mismatch) {
    const float av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {0.5f, -1, 2, 0, 10, -3};
    otc_tensor *a = otc_tensor_from(otc_shape_2d(2, 3), av);
    otc_tensor *b = otc_tensor_from(otc_shape_2d(2, 3), bv);
    otc_tensor *out = otc_tensor_new(otc_shape_2d(2, 3));
    REQUIRE(a && b && out);
    REQUIRE(otc_tensor_add(a, b, out) == OTC_OK);
    for (int i = 0; i < 6; i++) CHECK(out->data[i] == av[i] + bv[i]);
    REQUIRE(otc_tensor_sub(a, b, out) == OTC_OK);
    for (int i = 0; i < 6; i++) CHECK(out->data[i] == av[i] - bv[i]);
    REQUIRE(otc_tensor_mul(a, b, out) == OTC_OK);
    for (int i = 0; i < 6; i++) CHECK(out->data[i] == av[i] * bv[i]);
    /* In place (out aliasing an input) works too. */
    REQUIRE(otc_tensor_add(a, a, a) == OTC_OK);
    CHECK(a->data[5] == 12.0f);

    /* Same element count, other shape: no silent reinterpretation. */
    otc_tensor *bt = otc_tensor_new(otc_shape_2d(3, 2));
    otc_tensor *b1 = otc_tensor_new(otc_shape_1d(6));
    REQUIRE(bt && b1);
    otc_tensor_fill(out, 7.0f);
    CHECK(otc_tensor_add(a, bt, out) == OTC_ERR_SHAPE);
    CHECK(strstr(otc_last_error(), "[2,3]") && strstr(otc_last_error(), "[3,2]"));
    CHECK(otc_tensor_sub(a, b1, out) == OTC_ERR_SHAPE);
    CHECK(otc_tensor_mul(a, b, bt) == OTC_ERR_SHAPE);        /* out's shape is checked too */
    for (int i = 0; i < 6; i++) CHECK(out->data[i] == 7.0f); /* untouched */
    otc_tensor_free(b1);
    otc_tensor_free(bt);
    otc_tensor_free(out);
    otc_tensor_free(b);
    otc_tensor_free(a);
}

TEST(tensor_random_init) {
    otc_rng rng;
    otc_rng_seed(&rng, 9);
    /* Xavier-uniform for [fan_in 30, fan_out 20]: U(-l, l), l = sqrt(6/50), variance l^2/3. */
    otc_tensor *w = otc_tensor_new(otc_shape_2d(300, 200));
    REQUIRE(w);
    otc_tensor_xavier(w, &rng, 30, 20);
    double limit = sqrt(6.0 / 50.0), sum = 0, sq = 0;
    for (size_t i = 0; i < w->size; i++) {
        CHECK(fabs(w->data[i]) <= limit);
        sum += w->data[i];
        sq += (double)w->data[i] * w->data[i];
    }
    CHECK_NEAR(sum / w->size, 0.0, 0.005);
    CHECK_NEAR(sq / w->size, limit * limit / 3.0, 0.002);
    /* He-normal for fan_in 50: std sqrt(2/50) = 0.2. */
    otc_tensor_he(w, &rng, 50);
    sum = sq = 0;
    for (size_t i = 0; i < w->size; i++) {
        sum += w->data[i];
        sq += (double)w->data[i] * w->data[i];
    }
    CHECK_NEAR(sum / w->size, 0.0, 0.003);
    CHECK_NEAR(sqrt(sq / w->size), 0.2, 0.003);
    otc_tensor_uniform(w, &rng, 2.0f, 3.0f);
    for (size_t i = 0; i < w->size; i++) CHECK(w->data[i] >= 2.0f && w->data[i] <= 3.0f);
    otc_tensor_normal(w, &rng, 5.0f, 0.0f);
    CHECK(w->data[0] == 5.0f && w->data[w->size - 1] == 5.0f);
    otc_tensor_free(w);
}
