/* test_evald_bundle.c — safetensors files, position sets and model bundles:
 * what loads, and the exact error for each defect a bundle can have. */
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evald_fixture.h"
#include "gpu-evald/evald.h"
#include "sf_check.h"

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len);
    ck_assert_uint_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* Four dtypes and metadata survive a write and a read bit for bit; the
 * header is padded to 8 bytes and holds the tensors in write order
 * (descending element size, then name). */
START_TEST(tensorfile_round_trip) {
    char dir[256], path[512];
    fx_tmpdir(dir);
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    float f[3] = {1.5f, -2.25f, 1e-30f};
    int32_t i[2] = {-7, 2147483647};
    uint16_t u[2][2] = {{1, 65535}, {300, 0}};
    uint8_t b[3] = {0, 128, 255};
    sf_tensor ts[4] = {
        {"u8s", SF_DT_U8, 1, {3}, b, 3},
        {"floats", SF_DT_F32, 1, {3}, f, 12},
        {"u16s", SF_DT_U16, 2, {2, 2}, u, 8},
        {"ints", SF_DT_I32, 1, {2}, i, 8},
    };
    sf_meta_kv meta[2] = {{"format", "test"}, {"answer", "42"}};
    sf_err e = {0};
    ck_assert_int_eq(sf_tensorfile_write(path, meta, 2, ts, 4, &e), SF_OK);

    size_t n;
    uint8_t *bytes = slurp(path, &n);
    uint64_t hlen = 0;
    for (int k = 7; k >= 0; k--)
        hlen = hlen << 8 | bytes[k];
    ck_assert_uint_eq(hlen % 8, 0);
    /* 12 + 8 (F32, I32 by name) + 8 (U16) + 3 (U8) data bytes. */
    ck_assert_uint_eq(n, 8 + hlen + 31);
    /* The float data starts right after the header. */
    ck_assert_mem_eq(bytes + 8 + hlen, f, 12);
    free(bytes);

    sf_tensorfile *tf;
    ck_assert_int_eq(sf_tensorfile_read(path, &tf, NULL, &e), SF_OK);
    ck_assert_int_eq(sf_tensorfile_count(tf), 4);
    ck_assert_str_eq(sf_tensorfile_meta(tf, "answer"), "42");
    ck_assert_ptr_null(sf_tensorfile_meta(tf, "missing"));
    const sf_tensor *t = sf_tensorfile_find(tf, "u16s");
    ck_assert_int_eq(t->dtype, SF_DT_U16);
    ck_assert_int_eq(t->ndim, 2);
    ck_assert_mem_eq(t->data, u, 8);
    ck_assert_mem_eq(sf_tensorfile_find(tf, "floats")->data, f, 12);
    ck_assert_mem_eq(sf_tensorfile_find(tf, "ints")->data, i, 8);
    ck_assert_mem_eq(sf_tensorfile_find(tf, "u8s")->data, b, 3);
    ck_assert_uint_eq((uintptr_t)sf_tensorfile_find(tf, "floats")->data % 64, 0);
    sf_tensorfile_free(tf);
    fx_rmdir(dir);
}
END_TEST

static int parse_str(const char *s, sf_err *e) {
    /* The header, then 8 bytes of data. */
    size_t len = strlen(s);
    uint8_t *buf = calloc(1, 8 + len + 8);
    for (int k = 0; k < 8; k++)
        buf[k] = (uint8_t)((uint64_t)len >> (8 * k));
    memcpy(buf + 8, s, len);
    sf_tensorfile *tf = NULL;
    int rc = sf_tensorfile_parse(buf, 8 + len + 8, "mem", &tf, e);
    sf_tensorfile_free(tf);
    free(buf);
    return rc;
}

/* Each malformed header is refused with a message naming the problem. */
START_TEST(tensorfile_rejects_malformed_headers) {
    sf_err e = {0};
    uint8_t shortbuf[4] = {0};
    sf_tensorfile *tf;
    ck_assert_int_eq(sf_tensorfile_parse(shortbuf, 4, "mem", &tf, &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "too short"));
    uint8_t big[9] = {0xff, 0xff, 0, 0, 0, 0, 0, 0, '{'};
    ck_assert_int_eq(sf_tensorfile_parse(big, 9, "mem", &tf, &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "header length 65535"));
    ck_assert_int_eq(parse_str("{\"a\":", &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "header JSON, line 1"));
    ck_assert_int_eq(parse_str("[]", &e), SF_EFORMAT);
    ck_assert_int_eq(
        parse_str("{\"w\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}", &e),
        SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "tensor 'w': dtype \"F16\" unsupported"));
    ck_assert_int_eq(
        parse_str("{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", &e),
        SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "outside the 8-byte data section"));
    ck_assert_int_eq(
        parse_str("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", &e),
        SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "shape[0]"));
    ck_assert_int_eq(parse_str("{\"__metadata__\":{\"k\":1}}", &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "metadata \"k\" is not a string"));
    ck_assert_int_eq(
        parse_str("{\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,1]}}", &e),
        SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "1 data bytes but shape and dtype need 2"));
    ck_assert_int_eq(
        parse_str("{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", &e), SF_OK);
}
END_TEST

/* A random tiny bundle loads with the preset's sizes, and its identity is
 * the SHA-256 of the file's bytes. */
START_TEST(bundle_loads_with_arch_and_sha) {
    char dir[256], path[512];
    fx_tmpdir(dir);
    fx_random_bundle(dir, "tiny.safetensors", "tiny", 1, 8, path);
    sf_bundle *b = fx_load(path);
    const sf_arch *a = sf_bundle_arch(b);
    ck_assert_str_eq(a->name, "tiny");
    ck_assert_int_eq(a->d_model, 64);
    ck_assert_int_eq(a->n_layers, 2);
    ck_assert_int_eq(a->n_heads, 4);
    ck_assert_int_eq(a->d_ff, 256);
    /* 12*64 + (512+32+32+16)*64 + 16*64+64 + 2*(4*64 + 3*64*64+3*64 + 64*64+64 +
     * 256*64+256 + 64*256+64) + 2*64 + (64*64+64 + 21*64+21 + 64+1) +
     * (64*64+64 + 20*64+20) + (64*136+64 + 64+1) = 159723 */
    ck_assert_int_eq(sf_arch_params(a), 159723);
    size_t n;
    uint8_t *bytes = slurp(path, &n);
    uint8_t sha[32];
    char hex[65];
    crypto_hash_sha256(sha, bytes, n);
    sf_hex(sha, 32, hex);
    free(bytes);
    ck_assert_str_eq(sf_bundle_sha256(b), hex);
    ck_assert_int_eq(sf_positions_count(sf_bundle_canary(b)), 8);
    ck_assert(sf_bundle_canary_tolerance(b) == 1e-4);
    sf_bundle_free(b);

    /* The same pin, in upper case, is accepted. */
    char upper[65];
    for (int i = 0; i < 65; i++)
        upper[i] = (char)(hex[i] >= 'a' && hex[i] <= 'f' ? hex[i] - 32 : hex[i]);
    sf_err e = {0};
    ck_assert_int_eq(sf_bundle_load(path, upper, &b, &e), SF_OK);
    sf_bundle_free(b);
    fx_rmdir(dir);
}
END_TEST

START_TEST(bundle_sha_mismatch_names_both_digests) {
    char dir[256], path[512];
    fx_tmpdir(dir);
    fx_random_bundle(dir, "tiny.safetensors", "tiny", 2, 4, path);
    sf_bundle *b = fx_load(path);
    char have[65];
    memcpy(have, sf_bundle_sha256(b), 65);
    sf_bundle_free(b);
    const char *pin = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    sf_err e = {0};
    ck_assert_int_eq(sf_bundle_load(path, pin, &b, &e), SF_ECORRUPT);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(strstr(e.msg, "SHA-256 mismatch"));
    ck_assert_ptr_nonnull(strstr(e.msg, have));
    ck_assert_ptr_nonnull(strstr(e.msg, pin));
    ck_assert_int_eq(sf_bundle_load(path, "abc", &b, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "not 64 hex digits"));
    ck_assert_ptr_nonnull(strstr(e.msg, path)); /* the file is named */
    /* a pin one digit too long, or with a non-hex digit, is no pin */
    char longer[66];
    snprintf(longer, sizeof longer, "%s0", pin);
    ck_assert_int_eq(sf_bundle_load(path, longer, &b, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "pinned SHA-256: '"));
    ck_assert_ptr_nonnull(strstr(e.msg, "(it has 65 characters)"));
    char bad[65];
    memcpy(bad, pin, sizeof bad);
    bad[0] = 'z';
    ck_assert_int_eq(sf_bundle_load(path, bad, &b, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "(character 1, 'z', is not a hex digit)"));
    /* the mismatch message gives the pin in lower case, whatever was typed */
    const char *upper = "00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff";
    ck_assert_int_eq(sf_bundle_load(path, upper, &b, &e), SF_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(e.msg, pin));
    fx_rmdir(dir);
}
END_TEST

/* One defect per case, with the status and the words the message must
 * contain. */
START_TEST(bundle_defects_are_named) {
    char dir[256], good[512], bad[512];
    fx_tmpdir(dir);
    fx_random_bundle(dir, "good.safetensors", "tiny", 3, 4, good);
    snprintf(bad, sizeof bad, "%s/bad.safetensors", dir);
    sf_err e = {0};
    sf_bundle *b;

    fx_rewrite(good, bad, "blocks.1.mlp.fc2.weight", NULL, NULL, NULL);
    ck_assert_int_eq(sf_bundle_load(bad, NULL, &b, &e), SF_ENOTFOUND);
    ck_assert_ptr_nonnull(
        strstr(e.msg, "missing tensor 'blocks.1.mlp.fc2.weight' (expected F32 [64, 256])"));
    ck_assert_ptr_nonnull(strstr(e.msg, "bad.safetensors"));

    float w63[63] = {0};
    sf_tensor wrong = {"ln_f.weight", SF_DT_F32, 1, {63}, w63, sizeof w63};
    fx_rewrite(good, bad, NULL, &wrong, NULL, NULL);
    ck_assert_int_eq(sf_bundle_load(bad, NULL, &b, &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "tensor 'ln_f.weight' is F32 [63], expected F32 [64]"));

    fx_rewrite(good, bad, NULL, NULL, "tokenizer_version", "2");
    ck_assert_int_eq(sf_bundle_load(bad, NULL, &b, &e), SF_EVERSION);
    ck_assert_ptr_nonnull(
        strstr(e.msg, "unsupported tokenizer version \"2\" (this build reads 1)"));

    fx_rewrite(good, bad, NULL, NULL, "feat_vocab", "512,32,32,32");
    ck_assert_int_eq(sf_bundle_load(bad, NULL, &b, &e), SF_EVERSION);
    ck_assert_ptr_nonnull(strstr(e.msg, "feat_vocab"));

    fx_rewrite(good, bad, NULL, NULL, "format", "something-else");
    ck_assert_int_eq(sf_bundle_load(bad, NULL, &b, &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "not a spirefleet model bundle"));

    fx_rewrite(good, bad, NULL, NULL, "n_heads", "5");
    ck_assert_int_eq(sf_bundle_load(bad, NULL, &b, &e), SF_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "not divisible by n_heads 5"));

    fx_rewrite(good, bad, NULL, NULL, "n_layers", "two");
    ck_assert_int_eq(sf_bundle_load(bad, NULL, &b, &e), SF_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "metadata \"n_layers\" = \"two\" is not an integer"));

    float extra[64] = {0};
    sf_tensor x = {"blocks.2.ln1.weight", SF_DT_F32, 1, {64}, extra, sizeof extra};
    fx_rewrite(good, bad, NULL, &x, NULL, NULL);
    ck_assert_int_eq(sf_bundle_load(bad, NULL, &b, &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "unexpected tensor 'blocks.2.ln1.weight'"));

    float nan64[64];
    for (int i = 0; i < 64; i++)
        nan64[i] = i == 9 ? NAN : 1.0f;
    sf_tensor nanw = {"ln_f.bias", SF_DT_F32, 1, {64}, nan64, sizeof nan64};
    fx_rewrite(good, bad, NULL, &nanw, NULL, NULL);
    ck_assert_int_eq(sf_bundle_load(bad, NULL, &b, &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "tensor 'ln_f.bias' element 9 is not finite"));

    fx_rewrite(good, bad, "canary.policy", NULL, NULL, NULL);
    ck_assert_int_eq(sf_bundle_load(bad, NULL, &b, &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "incomplete canary: missing tensor 'canary.policy'"));

    fx_rewrite(good, bad, NULL, NULL, "canary_tolerance", "-1");
    ck_assert_int_eq(sf_bundle_load(bad, NULL, &b, &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "canary_tolerance"));

    /* A golden position whose query points past its tokens. */
    sf_tensorfile *tf;
    ck_assert_int_eq(sf_tensorfile_read(good, &tf, NULL, &e), SF_OK);
    const sf_tensor *q = sf_tensorfile_find(tf, "canary.query");
    uint16_t *qd = malloc(q->nbytes);
    memcpy(qd, q->data, q->nbytes);
    qd[0] = 200; /* position 0, query 0, card token */
    sf_tensor qt = *q;
    qt.data = qd;
    fx_rewrite(good, bad, NULL, &qt, NULL, NULL);
    ck_assert_int_eq(sf_bundle_load(bad, NULL, &b, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "position 0"));
    ck_assert_ptr_nonnull(strstr(e.msg, "query 0: card token 200 >= n_tokens 1"));
    free(qd);
    sf_tensorfile_free(tf);

    ck_assert_int_eq(sf_bundle_load("/nonexistent/x.safetensors", NULL, &b, &e), SF_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent/x.safetensors: cannot open"));
    fx_rmdir(dir);
}
END_TEST

/* sf_pos_validate names the token or query and the field. */
START_TEST(position_validation_names_the_field) {
    sf_feat f;
    memset(&f, 0, sizeof f);
    f.n_tokens = 3;
    f.n_queries = 1;
    f.type[0] = SF_TOK_CTX;
    f.type[1] = SF_TOK_PLAYER;
    f.type[2] = SF_TOK_MONSTER;
    f.query[0][0] = 2;
    f.query[0][1] = 1;
    sf_pos p = sf_pos_from_feat(&f);
    sf_err e = {0};
    ck_assert_int_eq(sf_pos_validate(&p, &e), SF_OK);
    f.type[2] = 12;
    ck_assert_int_eq(sf_pos_validate(&p, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "token 2: type 12 out of range 1..11");
    f.type[2] = SF_TOK_PAD;
    ck_assert_int_eq(sf_pos_validate(&p, &e), SF_EINVAL);
    f.type[2] = SF_TOK_MONSTER;
    f.cat[1][3] = 16;
    ck_assert_int_eq(sf_pos_validate(&p, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "token 1: cat[3] id 16 >= vocabulary 16");
    f.cat[1][3] = 15;
    f.cont[0][5] = INFINITY;
    ck_assert_int_eq(sf_pos_validate(&p, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "token 0: cont[5] is not finite");
    f.cont[0][5] = 0;
    f.query[0][1] = 3;
    ck_assert_int_eq(sf_pos_validate(&p, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "query 0: target token 3 >= n_tokens 3");
    f.query[0][1] = 0;
    f.qcont[0][7] = NAN;
    ck_assert_int_eq(sf_pos_validate(&p, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "query 0: qcont[7] is not finite");
    f.qcont[0][7] = 0;
    p.n_tokens = 0;
    ck_assert_int_eq(sf_pos_validate(&p, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "n_tokens 0 out of range 1..128");
    p.n_tokens = 3;
    p.n_queries = SF_FEAT_MAX_QUERIES + 1; /* 81: engine.h allows 80 actions */
    ck_assert_int_eq(sf_pos_validate(&p, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "n_queries 81 out of range 0..80");
}
END_TEST

/* A positions file written and read back holds the same positions; the
 * synthetic generator covers its documented edge cases. */
START_TEST(positions_file_round_trip) {
    char dir[256], path[512];
    fx_tmpdir(dir);
    snprintf(path, sizeof path, "%s/pos.safetensors", dir);
    sf_positions *ps, *back;
    sf_err e = {0};
    ck_assert_int_eq(sf_positions_synthetic(9, 24, &ps, &e), SF_OK);
    ck_assert_int_eq(sf_positions_get(ps, 0).n_tokens, 1);
    ck_assert_int_eq(sf_positions_get(ps, 1).n_tokens, SF_FEAT_MAX_TOKENS);
    ck_assert_int_eq(sf_positions_get(ps, 1).n_queries, SF_FEAT_MAX_QUERIES);
    ck_assert_int_eq(sf_positions_get(ps, 2).n_queries, 0);
    ck_assert_int_eq(sf_positions_write(ps, path, &e), SF_OK);
    ck_assert_int_eq(sf_positions_read(path, &back, &e), SF_OK);
    ck_assert_int_eq(sf_positions_count(back), 24);
    for (int i = 0; i < 24; i++) {
        sf_pos a = sf_positions_get(ps, i), b = sf_positions_get(back, i);
        ck_assert_int_eq(a.n_tokens, b.n_tokens);
        ck_assert_int_eq(a.n_queries, b.n_queries);
        ck_assert_mem_eq(a.type, b.type, (size_t)a.n_tokens);
        ck_assert_mem_eq(a.cat, b.cat, (size_t)a.n_tokens * sizeof a.cat[0]);
        ck_assert_mem_eq(a.cont, b.cont, (size_t)a.n_tokens * sizeof a.cont[0]);
        if (a.n_queries) {
            ck_assert_mem_eq(a.query, b.query, (size_t)a.n_queries * sizeof a.query[0]);
            ck_assert_mem_eq(a.qcont, b.qcont, (size_t)a.n_queries * sizeof a.qcont[0]);
        }
    }
    /* Same seed, same positions; another seed, other positions. */
    sf_positions *again, *other;
    ck_assert_int_eq(sf_positions_synthetic(9, 24, &again, &e), SF_OK);
    ck_assert_int_eq(sf_positions_synthetic(10, 24, &other, &e), SF_OK);
    ck_assert_mem_eq(sf_positions_get(again, 5).cont, sf_positions_get(ps, 5).cont, 64);
    ck_assert(memcmp(sf_positions_get(other, 5).cont, sf_positions_get(ps, 5).cont, 64) != 0);
    sf_positions_free(again);
    sf_positions_free(other);
    sf_positions_free(back);
    sf_positions_free(ps);
    fx_rmdir(dir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("evald-bundle");
    TCase *tc = tcase_create("bundle");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tensorfile_round_trip);
    tcase_add_test(tc, tensorfile_rejects_malformed_headers);
    tcase_add_test(tc, bundle_loads_with_arch_and_sha);
    tcase_add_test(tc, bundle_sha_mismatch_names_both_digests);
    tcase_add_test(tc, bundle_defects_are_named);
    tcase_add_test(tc, position_validation_names_the_field);
    tcase_add_test(tc, positions_file_round_trip);
    suite_add_tcase(s, tc);
    return sf_check_run(s, "evald-bundle");
}
