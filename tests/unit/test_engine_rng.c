/*
 * test_engine_rng.c — the game's random generators, bit for bit.
 *
 * Reference values were produced once on OpenJDK 17 by a throwaway Java
 * program (not part of the build):
 *   - RandomXS128: libGDX's com.badlogic.gdx.math.RandomXS128 source
 *     (gdx/src/com/badlogic/gdx/math/RandomXS128.java, xorshift128+ seeded
 *     through MurmurHash3's fmix64 with constants 0xff51afd7ed558ccd and
 *     0xc4ceb9fe1a85ec53), compiled with javac and called directly:
 *     new RandomXS128(seed).nextLong() / nextInt(n) / nextBoolean() /
 *     nextFloat();
 *   - java.util.Random(seed).nextInt(bound) and
 *     Collections.shuffle(list, new java.util.Random(seed)) from the JDK;
 *   - the game's shuffle: Collections.shuffle(list, new
 *     java.util.Random(shuffleRng.randomLong())) with shuffleRng a
 *     RandomXS128(seed).
 * The game's random/Random.java wrapper maps random(n) to nextInt(n + 1),
 * random(a, b) to a + nextInt(b - a + 1), randomBoolean(p) to
 * nextFloat() < p, and counts one call per method (game-rules §0).
 */
#include "engine_fixture.h"
#include "sf_check.h"

/* The first four nextLong() of new RandomXS128(xs128_seeds[k]): row k of
 * xs128_first. */
static const uint64_t xs128_seeds[] = {0x0000000000000000ull, 0x0000000000000001ull,
                                       0x000000000000002aull, 0xffffffffffffffffull,
                                       0x0123456789abcdefull, 0x0000011f71fb04cbull};
static const uint64_t xs128_first[][4] = {
    {0x28d01376a138a279ull, 0xe92a367b780e0221ull, 0xf3a5ab26746072b1ull, 0xc637e2c94bb7fba0ull},
    {0x34913d26a7e2cd2full, 0x62ac15b85e3ec0caull, 0xd8aeece78eacc5f8ull, 0x5931f371585f5891ull},
    {0x31505af788d81771ull, 0xe65257ce4726c10bull, 0x28de31d791d25d76ull, 0x2930465b9f590bc1ull},
    {0x95d13c1b62c7ec73ull, 0x5eb8daf3336fa42dull, 0xf6b546ca06255983ull, 0x3182be3b9b64f7cbull},
    {0x8690673345a389d7ull, 0x0e8621f7b80e072eull, 0xe146f9defb070c89ull, 0xd664d3a17e34b58dull},
    {0x35b5f6edbccb5850ull, 0xc24a9c78c3aac969ull, 0x19345c42db7f8cf7ull, 0xab0f6e682cb39b39ull},
};
_Static_assert(sizeof xs128_seeds / sizeof xs128_seeds[0] ==
                   sizeof xs128_first / sizeof xs128_first[0],
               "one row of values per seed");

START_TEST(xs128_next_long_matches_libgdx) {
    /* Seed 0 is replaced by Long.MIN_VALUE inside setSeed; it is covered by
     * the first row. */
    for (size_t k = 0; k < sizeof xs128_seeds / sizeof xs128_seeds[0]; k++) {
        sf_rng r;
        sf_rng_seed(&r, xs128_seeds[k]);
        for (int i = 0; i < 4; i++)
            ck_assert_msg(sf_rng_next_long(&r) == xs128_first[k][i], "seed %llx, value %d",
                          (unsigned long long)xs128_seeds[k], i);
    }
}
END_TEST

START_TEST(random_n_is_next_int_n_plus_one) {
    /* RandomXS128(42).nextInt(100) x12 */
    static const int want[12] = {24, 41, 71, 88, 61, 27, 25, 23, 77, 87, 34, 77};
    sf_rng r;
    sf_rng_seed(&r, 42);
    for (int i = 0; i < 12; i++)
        ck_assert_int_eq(sf_rng_random(&r, 99), want[i]);
    ck_assert_uint_eq(r.counter, 12);
}
END_TEST

START_TEST(random_range_is_inclusive) {
    /* RandomXS128(7): 5 + nextInt(3) x10 (a louse's bite damage roll) */
    static const int want[10] = {5, 7, 7, 5, 5, 5, 5, 7, 5, 6};
    sf_rng r;
    sf_rng_seed(&r, 7);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(sf_rng_random_range(&r, 5, 7), want[i]);
    ck_assert_uint_eq(r.counter, 10);
}
END_TEST

START_TEST(random_boolean_is_low_bit) {
    /* RandomXS128(9).nextBoolean() x16 */
    static const int want[16] = {1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1};
    sf_rng r;
    sf_rng_seed(&r, 9);
    for (int i = 0; i < 16; i++)
        ck_assert_int_eq(sf_rng_random_bool(&r), want[i]);
    ck_assert_uint_eq(r.counter, 16);
}
END_TEST

START_TEST(random_float_and_boolean_p) {
    /* RandomXS128(11).nextFloat() x6 as IEEE bits, and < 0.5625f */
    static const uint32_t bits[6] = {0x3ea03286u, 0x3f6e26cfu, 0x3ef468f4u,
                                     0x3f3b3ba3u, 0x3f5e9b77u, 0x3f109d42u};
    static const int below[6] = {1, 0, 1, 0, 0, 0};
    sf_rng r, q;
    sf_rng_seed(&r, 11);
    sf_rng_seed(&q, 11);
    for (int i = 0; i < 6; i++) {
        float f = sf_rng_random_float(&r);
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        ck_assert_uint_eq(u, bits[i]);
        ck_assert_int_eq(sf_rng_random_bool_p(&q, 0.5625f), below[i]);
    }
    ck_assert_uint_eq(r.counter, 6);
    ck_assert_uint_eq(q.counter, 6);
}
END_TEST

START_TEST(random_bounds_take_rejection_sampling_path) {
    /* RandomXS128(5).nextInt(n) for n = 1, 2, 3, 7, 10, 16, 64, 100, 1000,
     * 2^31 - 1 in sequence (random(n - 1)). */
    static const int n[10] = {1, 2, 3, 7, 10, 16, 64, 100, 1000, 2147483647};
    static const int want[10] = {0, 1, 1, 4, 5, 7, 41, 72, 584, 267633052};
    sf_rng r;
    sf_rng_seed(&r, 5);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(sf_rng_random(&r, n[i] - 1), want[i]);
}
END_TEST

START_TEST(random_long_counts_one_call) {
    sf_rng r, q;
    sf_rng_seed(&r, 1);
    sf_rng_seed(&q, 1);
    ck_assert_uint_eq((uint64_t)sf_rng_random_long(&r), 0x34913d26a7e2cd2full);
    ck_assert_uint_eq(r.counter, 1);
    /* next_long is the raw generator: no count */
    (void)sf_rng_next_long(&q);
    ck_assert_uint_eq(q.counter, 0);
}
END_TEST

static const struct {
    int64_t seed;
    int want[9];
} jrand_ints[] = {
    {0LL, {0, 1, 4, 7, 10, 53, 491, 125634880, 1283218719}},
    {1LL, {0, 0, 2, 3, 3, 4, 434, 707453303, 2078239978}},
    {42LL, {0, 0, 3, 4, 4, 25, 505, 759898459, 1429255519}},
    {-7LL, {0, 1, 0, 7, 8, 87, 591, 338837718, 184135245}},
    {25214903917LL, {0, 0, 0, 6, 5, 96, 689, 523145510, 1131187612}},
    {123456789012345LL, {0, 1, 4, 2, 14, 68, 260, 996266494, 1748432479}},
};

SF_TCASE(java, 0);

START_TEST(java_random_next_int_matches_jdk) {
    /* bounds 1, 2, 5, 10, 16, 100, 1000, 2^30, 2^31 - 1 (powers of two take
     * the multiply path, the rest the rejection loop) */
    static const int bounds[9] = {1, 2, 5, 10, 16, 100, 1000, 1 << 30, 2147483647};
    for (size_t k = 0; k < sizeof jrand_ints / sizeof jrand_ints[0]; k++) {
        sf_jrand j;
        sf_jrand_seed(&j, jrand_ints[k].seed);
        for (int i = 0; i < 9; i++)
            ck_assert_msg(sf_jrand_next_int(&j, bounds[i]) == jrand_ints[k].want[i],
                          "seed %lld bound %d", (long long)jrand_ints[k].seed, bounds[i]);
    }
}
END_TEST

/* Collections.shuffle: for i = size..2: swap(i-1, nextInt(i)). */
static void shuffle10(int64_t seed, int *out) {
    for (int i = 0; i < 10; i++)
        out[i] = i;
    sf_jrand j;
    sf_jrand_seed(&j, seed);
    for (int i = 10; i > 1; i--) {
        int k = sf_jrand_next_int(&j, i);
        int t = out[i - 1];
        out[i - 1] = out[k];
        out[k] = t;
    }
}

START_TEST(collections_shuffle_matches_jdk) {
    static const struct {
        int64_t seed;
        int want[10];
    } rows[] = {
        {0LL, {4, 8, 9, 6, 3, 5, 2, 1, 7, 0}},
        {1LL, {6, 9, 7, 8, 4, 2, 0, 3, 1, 5}},
        {42LL, {4, 6, 2, 1, 7, 9, 8, 5, 3, 0}},
        {-7LL, {1, 4, 7, 8, 9, 0, 3, 5, 6, 2}},
        {25214903917LL, {3, 5, 8, 7, 1, 6, 4, 9, 2, 0}},
        {123456789012345LL, {2, 7, 9, 0, 3, 5, 1, 6, 8, 4}},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        int got[10];
        shuffle10(rows[k].seed, got);
        for (int i = 0; i < 10; i++)
            ck_assert_int_eq(got[i], rows[k].want[i]);
    }
}
END_TEST

START_TEST(game_shuffle_chains_xs128_into_java_random) {
    /* shuffleRng = RandomXS128(seed); two shuffles of [0..9], each with a
     * fresh java.util.Random(shuffleRng.randomLong()). */
    static const struct {
        uint64_t seed;
        int first[10], second[10];
    } rows[] = {
        {1ULL, {6, 1, 3, 5, 8, 9, 0, 7, 2, 4}, {5, 8, 4, 2, 1, 9, 3, 7, 6, 0}},
        {77ULL, {9, 7, 4, 8, 3, 2, 1, 0, 5, 6}, {6, 4, 5, 1, 2, 9, 8, 0, 3, 7}},
        {20260101ULL, {7, 6, 3, 4, 9, 5, 1, 2, 8, 0}, {2, 7, 1, 4, 9, 0, 5, 8, 3, 6}},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        sf_rng r;
        sf_rng_seed(&r, rows[k].seed);
        int got[10];
        shuffle10(sf_rng_random_long(&r), got);
        for (int i = 0; i < 10; i++)
            ck_assert_int_eq(got[i], rows[k].first[i]);
        shuffle10(sf_rng_random_long(&r), got);
        for (int i = 0; i < 10; i++)
            ck_assert_int_eq(got[i], rows[k].second[i]);
        ck_assert_uint_eq(r.counter, 2);
    }
}
END_TEST

START_TEST(opening_shuffle_of_a_fight_uses_the_game_shuffle) {
    /* A fight's draw pile is the master deck shuffled with
     * java.util.Random(shuffleRng.randomLong()), shuffleRng = new
     * Random(seed + floor); the top of the pile is the last element. With a
     * deck of ten distinct cards in spec order i = 0..9 and seed 1, floor 0,
     * the shuffled order is row 1 above: {6, 1, 3, 5, 8, 9, 0, 7, 2, 4}, so
     * the five cards drawn first are deck[4], deck[2], deck[7], deck[0],
     * deck[9] (from the top down). The Jaw Worm fight's monster HP roll uses
     * another stream (monsterHpRng), so it does not disturb this. */
    static const int ids[10] = {CARD_STRIKE,   CARD_DEFEND,      CARD_BASH, CARD_ANGER,
                                CARD_CLEAVE,   CARD_CLOTHESLINE, CARD_FLEX, CARD_HAVOC,
                                CARD_HEADBUTT, CARD_IRON_WAVE};
    sf_fight_spec spec = fx_spec();
    spec.deck_n = 10;
    for (int i = 0; i < 10; i++)
        spec.deck[i] = (sf_card_spec){(uint8_t)ids[i], 0};
    spec.seed = 1;
    spec.floor = 0;
    spec.encounter = ENC_JAW_WORM;
    sf_state s;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    const sf_combat *c = ccombat_of(&s);
    static const int drawn[5] = {4, 2, 7, 0, 9};
    ck_assert_int_eq(c->hand_n, 5);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(c->hand[i].id, ids[drawn[i]]);
    static const int rest[5] = {6, 1, 3, 5, 8}; /* bottom .. top */
    ck_assert_int_eq(c->draw_n, 5);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(c->draw[i].id, ids[rest[i]]);
    ck_assert_uint_eq(c->rng[SF_STREAM_SHUFFLE].counter, 1);
}
END_TEST

SF_TCASE(streams, 0);

START_TEST(per_floor_streams_are_seeded_with_seed_plus_floor) {
    /* monsterHpRng, aiRng, shuffleRng, cardRandomRng, miscRng are each
     * new Random(seed + floorNum); potionRng is not per floor. The Jaw Worm
     * HP is monsterHpRng.random(40, 44), the first call of that stream:
     * 40 + nextInt(5) of RandomXS128(seed + floor). */
    sf_fight_spec spec = fx_spec();
    spec.seed = 40;
    spec.floor = 2;
    spec.encounter = ENC_JAW_WORM;
    sf_state s;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    sf_rng r;
    sf_rng_seed(&r, 42);
    int hp = sf_rng_random_range(&r, 40, 44);
    ck_assert_int_eq(ccombat_of(&s)->mon[0].hp, hp);
    /* the other per-floor streams start from the same seed: aiRng has made
     * exactly the Jaw Worm's first rollMove */
    sf_rng q;
    sf_rng_seed(&q, 42);
    (void)sf_rng_random(&q, 99); /* the Jaw Worm's first rollMove */
    ck_assert_uint_eq(ccombat_of(&s)->rng[SF_STREAM_AI].s0, q.s0);
    ck_assert_uint_eq(ccombat_of(&s)->rng[SF_STREAM_AI].s1, q.s1);
    ck_assert_uint_eq(ccombat_of(&s)->rng[SF_STREAM_AI].counter, 1);
    sf_rng_seed(&q, 40);
    ck_assert_uint_eq(ccombat_of(&s)->rng[SF_STREAM_POTION].s0, q.s0);
}
END_TEST

START_TEST(reseed_touches_one_stream_only) {
    sf_state s = fx_fight(ENC_JAW_WORM, 3);
    sf_state before = s;
    sf_engine_reseed(&s, SF_STREAM_AI, 12345);
    const sf_combat *a = ccombat_of(&before), *b = ccombat_of(&s);
    for (int i = 0; i < SF_NUM_STREAMS; i++) {
        if (i == SF_STREAM_AI)
            continue;
        ck_assert(!memcmp(&a->rng[i], &b->rng[i], sizeof(sf_rng)));
    }
    sf_rng q;
    sf_rng_seed(&q, 12345);
    ck_assert(!memcmp(&b->rng[SF_STREAM_AI], &q, sizeof q));
    ck_assert_uint_eq(b->rng[SF_STREAM_AI].counter, 0);
    /* out-of-range streams are ignored */
    sf_state t = s;
    sf_engine_reseed(&t, SF_NUM_STREAMS, 1);
    sf_engine_reseed(&t, -1, 1);
    ck_assert(!memcmp(&t, &s, sizeof s));
    /* identity ignores stream state */
    ck_assert(sf_identity_eq(sf_engine_identity(&before), sf_engine_identity(&s)));
}
END_TEST

START_TEST(apply_reports_the_streams_it_advanced) {
    /* Playing Defend touches no stream; ending the turn rolls the Jaw
     * Worm's next move (aiRng) and, with 5 cards left in the 10-card deck,
     * draws without a reshuffle: only SF_STREAM_AI. */
    sf_state s = fx_fight(ENC_JAW_WORM, 8);
    sf_combat *c = combat_of(&s);
    int d = -1;
    for (int i = 0; i < c->hand_n; i++)
        if (c->hand[i].id == CARD_DEFEND)
            d = i;
    uint32_t mask = 99;
    if (d >= 0) {
        sf_action a = {SF_ACT_PLAY, (uint8_t)d, SF_NO_TARGET, 0};
        ck_assert_int_eq(sf_engine_apply(&s, a, &mask), SF_OK);
        ck_assert_uint_eq(mask, 0);
    }
    sf_action e = {SF_ACT_END_TURN, 0, SF_NO_TARGET, 0};
    ck_assert_int_eq(sf_engine_apply(&s, e, &mask), SF_OK);
    ck_assert_uint_eq(mask, 1u << SF_STREAM_AI);
    /* the next end of turn reshuffles (the draw pile is empty): shuffle too */
    ck_assert_int_eq(sf_engine_apply(&s, e, &mask), SF_OK);
    ck_assert_uint_eq(mask, (1u << SF_STREAM_AI) | (1u << SF_STREAM_SHUFFLE));
}
END_TEST

#include "test-engine-rng.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("engine-rng", "xs128", 0, NULL, NULL)
