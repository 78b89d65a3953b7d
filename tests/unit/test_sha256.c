/* test_sha256.c — the one SHA-256 (common/sha256.h) against the FIPS 180-4
 * example vectors (NIST CSRC "Examples with Intermediate Values") and
 * against libsodium's SHA-256, the implementation the shard digests used
 * before, over messages of every length class and split points. */
#include <sodium.h>
#include <string.h>

#include "common/sha256.h"
#include "sf_check.h"

static void hex_of(const uint8_t d[32], char hex[65]) {
    sf_hex(d, 32, hex);
}

/* FIPS 180-4 / NIST examples: "abc", the 448-bit two-block message, the
 * empty message, and a million 'a' (FIPS 180-2 appendix B.3). */
static const struct {
    const char *msg;
    const char *want;
} kat[] = {
    {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
};

START_TEST(one_shot_matches_nist_vectors) {
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint8_t d[32];
        char hex[65];
        sf_err e = {0};
        ck_assert_int_eq(sf_sha256(kat[i].msg, strlen(kat[i].msg), d, &e), SF_OK);
        hex_of(d, hex);
        ck_assert_str_eq(hex, kat[i].want);
    }
}
END_TEST

START_TEST(incremental_matches_nist_million_a) {
    sf_sha256_ctx *h;
    sf_err e = {0};
    ck_assert_int_eq(sf_sha256_new(&h, &e), SF_OK);
    uint8_t block[1000];
    memset(block, 'a', sizeof block);
    for (int i = 0; i < 1000; i++)
        sf_sha256_update(h, block, sizeof block);
    uint8_t d[32];
    char hex[65];
    ck_assert_int_eq(sf_sha256_final(h, d, &e), SF_OK);
    hex_of(d, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* final starts again at the empty message */
    sf_sha256_update(h, "abc", 3);
    ck_assert_int_eq(sf_sha256_final(h, d, &e), SF_OK);
    hex_of(d, hex);
    ck_assert_str_eq(hex, kat[0].want);
    ck_assert_int_eq(sf_sha256_final(h, d, &e), SF_OK);
    hex_of(d, hex);
    ck_assert_str_eq(hex, kat[2].want);
    sf_sha256_free(h);
    sf_sha256_free(NULL);
}
END_TEST

/* Every length 0..300 (the padding boundaries at 55/56/64 bytes and their
 * multiples) hashed in one call, in two pieces split at every third point,
 * and by libsodium: all three agree. */
START_TEST(agrees_with_libsodium_at_every_length_and_split) {
    ck_assert_int_ge(sodium_init(), 0);
    uint8_t msg[300];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 131 + 7);
    sf_sha256_ctx *h;
    sf_err e = {0};
    ck_assert_int_eq(sf_sha256_new(&h, &e), SF_OK);
    for (size_t n = 0; n <= sizeof msg; n++) {
        uint8_t want[32], got[32];
        crypto_hash_sha256(want, msg, n);
        ck_assert_int_eq(sf_sha256(msg, n, got, &e), SF_OK);
        ck_assert_mem_eq(got, want, 32);
        for (size_t cut = 0; cut <= n; cut += 3) {
            sf_sha256_update(h, msg, cut);
            sf_sha256_update(h, msg + cut, n - cut);
            ck_assert_int_eq(sf_sha256_final(h, got, &e), SF_OK);
            ck_assert_mem_eq(got, want, 32);
        }
    }
    sf_sha256_free(h);
}
END_TEST

#include "test-sha256.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("sha256", "vectors", 0, NULL, NULL)
