/* A small seedable random generator whose streams are identical on every machine. */
#ifndef OTC_RNG_H
#define OTC_RNG_H

#include <stdint.h>

/* xoshiro128** state seeded through splitmix64; copy the struct to fork a stream. */
typedef struct {
    uint32_t s[4];
} otc_rng;

void otc_rng_seed(otc_rng *rng, uint64_t seed);

/* The draws evolution makes millions of are inline definitions (C99 inline: rng.c holds the
 * one external definition of each, so the library still exports them). */
inline uint32_t otc_rng_u32(otc_rng *rng) {
    uint32_t *s = rng->s;
    uint32_t x = s[1] * 5, result = ((x << 7) | (x >> 25)) * 9;
    uint32_t t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 11) | (s[3] >> 21);
    return result;
}

/* Uniform in [0, 1). */
inline float otc_rng_uniform(otc_rng *rng) {
    return (float)(otc_rng_u32(rng) >> 8) * 0x1.0p-24f;
}

/* Uniform integer in [0, n); n > 0. Lemire's multiply-shift with rejection: unbiased. */
inline uint32_t otc_rng_below(otc_rng *rng, uint32_t n) {
    uint64_t m = (uint64_t)otc_rng_u32(rng) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (uint32_t)(-n) % n;
        while (low < threshold) {
            m = (uint64_t)otc_rng_u32(rng) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}
/* Standard normal; uses only IEEE-exact arithmetic so the stream is bit-identical across
 * machines and libm versions. */
float otc_rng_normal(otc_rng *rng);
/* Fisher-Yates shuffle of n ints. */
void otc_rng_shuffle(otc_rng *rng, int *items, int n);

#endif
