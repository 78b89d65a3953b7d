/*
 * rng.c — the game's random generators, bit for bit.
 *
 * Streams are libGDX's RandomXS128 (xorshift128+, seeded through MurmurHash3's
 * 64-bit finaliser) wrapped by the game's random/Random.java, which counts
 * calls. Shuffles go through java.util.Random (a 48-bit LCG) seeded with a
 * randomLong() of the shuffle stream, as Collections.shuffle(list, new
 * java.util.Random(shuffleRng.randomLong())) does in the game.
 * docs/game-rules.md §0 lists which event draws from which stream.
 */
#include "engine/internal.h"

static uint64_t murmur3_fmix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

void sf_rng_seed(sf_rng *r, uint64_t seed) {
    /* RandomXS128.setSeed: seed 0 is replaced by Long.MIN_VALUE. */
    uint64_t s0 = murmur3_fmix64(seed == 0 ? 0x8000000000000000ull : seed);
    r->s0 = s0;
    r->s1 = murmur3_fmix64(s0);
    r->counter = 0;
    r->pad = 0;
}

uint64_t sf_rng_next_long(sf_rng *r) {
    uint64_t s1 = r->s0;
    const uint64_t s0 = r->s1;
    r->s0 = s0;
    s1 ^= s1 << 23;
    r->s1 = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    return r->s1 + s0;
}

/* RandomXS128.nextLong(n): rejection sampling on the top 63 bits. The Java
 * test `bits - value + (n - 1) >= 0` is a signed-overflow check. */
static int64_t next_long_bounded(sf_rng *r, int64_t n) {
    for (;;) {
        const int64_t bits = (int64_t)(sf_rng_next_long(r) >> 1);
        const int64_t value = bits % n;
        if ((int64_t)((uint64_t)bits - (uint64_t)value + (uint64_t)(n - 1)) >= 0)
            return value;
    }
}

static float next_float(sf_rng *r) {
    return (float)((double)(sf_rng_next_long(r) >> 40) * (1.0 / (double)(1ull << 24)));
}

int sf_rng_random(sf_rng *r, int range) {
    r->counter++;
    return (int)next_long_bounded(r, (int64_t)range + 1);
}

int sf_rng_random_range(sf_rng *r, int lo, int hi) {
    r->counter++;
    return lo + (int)next_long_bounded(r, (int64_t)hi - lo + 1);
}

int sf_rng_random_bool(sf_rng *r) {
    r->counter++;
    return (sf_rng_next_long(r) & 1) != 0;
}

int sf_rng_random_bool_p(sf_rng *r, float p) {
    r->counter++;
    return next_float(r) < p;
}

float sf_rng_random_float(sf_rng *r) {
    r->counter++;
    return next_float(r);
}

int64_t sf_rng_random_long(sf_rng *r) {
    r->counter++;
    return (int64_t)sf_rng_next_long(r);
}

/* java.util.Random */
#define JR_MULT 0x5DEECE66Dull
#define JR_MASK ((1ull << 48) - 1)

void sf_jrand_seed(sf_jrand *j, int64_t seed) {
    j->seed = ((uint64_t)seed ^ JR_MULT) & JR_MASK;
}

static int32_t jrand_next(sf_jrand *j, int bits) {
    j->seed = (j->seed * JR_MULT + 0xBull) & JR_MASK;
    return (int32_t)(j->seed >> (48 - bits));
}

int sf_jrand_next_int(sf_jrand *j, int bound) {
    int32_t r = jrand_next(j, 31);
    int32_t m = bound - 1;
    if ((bound & m) == 0)
        return (int)(((int64_t)bound * (int64_t)r) >> 31);
    /* u - (r = u % bound) + m < 0 in Java's wrapping int arithmetic. */
    for (int32_t u = r; (int32_t)((uint32_t)u - (uint32_t)(r = u % bound) + (uint32_t)m) < 0;
         u = jrand_next(j, 31))
        ;
    return (int)r;
}
