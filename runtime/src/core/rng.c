/* xoshiro128** seeded by splitmix64, with a normal sampler built from exact IEEE operations
 * only (no libm), so every machine draws the same stream for the same seed. */
#include "otc/rng.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void otc_rng_seed(otc_rng *rng, uint64_t seed) {
    uint64_t x = seed;
    uint64_t a = splitmix64(&x), b = splitmix64(&x);
    rng->s[0] = (uint32_t)a;
    rng->s[1] = (uint32_t)(a >> 32);
    rng->s[2] = (uint32_t)b;
    rng->s[3] = (uint32_t)(b >> 32);
    if (!(rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3])) rng->s[0] = 1;
}

/* The external definitions of rng.h's inline draws. */
extern inline uint32_t otc_rng_u32(otc_rng *rng);
extern inline float otc_rng_uniform(otc_rng *rng);
extern inline uint32_t otc_rng_below(otc_rng *rng, uint32_t n);

/* Natural log for x in (0, 1], by range reduction to [sqrt(.5), sqrt(2)) and the atanh
 * series; only + - * / so it rounds identically everywhere. */
static double exact_log(double x) {
    int e = 0;
    while (x < 0.70710678118654752) {
        x *= 2.0;
        e--;
    }
    while (x >= 1.4142135623730951) {
        x *= 0.5;
        e++;
    }
    double s = (x - 1.0) / (x + 1.0), s2 = s * s, term = s, sum = 0.0;
    for (int k = 1; k < 40; k += 2) {
        sum += term / k;
        term *= s2;
    }
    return 2.0 * sum + e * 0.69314718055994531;
}

static double exact_sqrt(double x) {
    /* IEEE sqrt is correctly rounded by the standard, but spell it out to stay off libm. */
    if (x <= 0.0) return 0.0;
    double r = x > 1.0 ? x : 1.0;
    for (int i = 0; i < 60; i++) {
        double next = 0.5 * (r + x / r);
        if (next == r) break;
        r = next;
    }
    return r;
}

float otc_rng_normal(otc_rng *rng) {
    /* Marsaglia's polar method (needs log and sqrt, no trigonometry). */
    for (;;) {
        double u = 2.0 * ((otc_rng_u32(rng) >> 8) * 0x1.0p-24) - 1.0;
        double v = 2.0 * ((otc_rng_u32(rng) >> 8) * 0x1.0p-24) - 1.0;
        double s = u * u + v * v;
        if (s >= 1.0 || s == 0.0) continue;
        return (float)(u * exact_sqrt(-2.0 * exact_log(s) / s));
    }
}

void otc_rng_shuffle(otc_rng *rng, int *items, int n) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)otc_rng_below(rng, (uint32_t)i + 1);
        int t = items[i];
        items[i] = items[j];
        items[j] = t;
    }
}
