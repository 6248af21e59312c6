/* A small seedable random generator whose streams are identical on every machine. */
#ifndef OTC_RNG_H
#define OTC_RNG_H

#include <stdint.h>

/* xoshiro128** state seeded through splitmix64; copy the struct to fork a stream. */
typedef struct {
    uint32_t s[4];
} otc_rng;

void otc_rng_seed(otc_rng *rng, uint64_t seed);
uint32_t otc_rng_u32(otc_rng *rng);
/* Uniform in [0, 1). */
float otc_rng_uniform(otc_rng *rng);
/* Uniform integer in [0, n); n > 0. */
uint32_t otc_rng_below(otc_rng *rng, uint32_t n);
/* Standard normal; uses only IEEE-exact arithmetic so the stream is bit-identical across
 * machines and libm versions. */
float otc_rng_normal(otc_rng *rng);
/* Fisher-Yates shuffle of n ints. */
void otc_rng_shuffle(otc_rng *rng, int *items, int n);

#endif
