/* test_model_bundle.c — safetensors files, position sets and model bundles:
 * what loads, and the exact error for each defect a bundle can have. */
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model_fixture.h"
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
    /* Headers after the 8-byte length (an empty data section); words:
     * what the message must contain (NULL: not checked). */
    const struct {
        const char *header;
        int rc;
        const char *words;
    } cases[] = {
        {"{\"a\":", SF_EFORMAT, "header JSON, line 1"},
        {"[]", SF_EFORMAT, NULL},
        {"{\"w\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}", SF_EFORMAT,
         "tensor 'w': dtype \"F16\" unsupported"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", SF_EFORMAT,
         "outside the 8-byte data section"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", SF_EFORMAT,
         "shape[0]"},
        {"{\"__metadata__\":{\"k\":1}}", SF_EFORMAT, "metadata \"k\" is not a string"},
        {"{\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,1]}}", SF_EFORMAT,
         "1 data bytes but shape and dtype need 2"},
        {"{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", SF_OK, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(parse_str(cases[i].header, &e) == cases[i].rc, "case %zu: %s", i, e.msg);
        if (cases[i].words)
            ck_assert_msg(strstr(e.msg, cases[i].words), "case %zu: %s", i, e.msg);
    }
}
END_TEST

/* A random tiny bundle loads with the preset's sizes, and its identity is
 * the SHA-256 of the file's bytes. */
START_TEST(bundle_loads_with_arch_and_sha) {
    fx_tiny t;
    sf_bundle *b = fx_tiny_open(&t, "tiny.safetensors", 1, 8);
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
    uint8_t *bytes = slurp(t.path, &n);
    uint8_t sha[32];
    char hex[65];
    crypto_hash_sha256(sha, bytes, n);
    sf_hex(sha, 32, hex);
    free(bytes);
    ck_assert_str_eq(sf_bundle_sha256(b), hex);
    ck_assert_int_eq(sf_positions_count(sf_bundle_canary(b)), 8);
    ck_assert_int_eq(sf_bundle_format_version(b), 2);
    /* Measured tolerances: the cpu backend made the expected outputs, so
     * fp32 measures 0 and gets the floor; tf32 and bf16 carry the rule's
     * rel and an abs at least the floor. */
    for (int o = 0; o < SF_CANARY_OUTPUTS; o++) {
        const sf_tol *tol = &sf_bundle_canary_tolerance(b, SF_PREC_FP32)->out[o];
        ck_assert(tol->abs == 1e-4 && tol->rel == 1e-5);
        for (int p = SF_PREC_TF32; p <= SF_PREC_BF16; p++) {
            tol = &sf_bundle_canary_tolerance(b, (sf_precision)p)->out[o];
            ck_assert(tol->rel == sf_canary_tol_rel[p]);
            ck_assert(tol->abs >= sf_canary_tol_abs_floor[p] && tol->abs < 0.1);
        }
    }
    ck_assert(sf_canary_tol_rel[SF_PREC_TF32] == 2e-3 && sf_canary_tol_rel[SF_PREC_BF16] == 8e-3);
    ck_assert_str_eq(sf_canary_tol_key(SF_PREC_BF16), "canary_tolerance_bf16");
    ck_assert_str_eq(sf_canary_output_name(SF_CANARY_FORECAST), "forecast");
    sf_bundle_free(b);

    /* The same pin, in upper case, is accepted. */
    char upper[65];
    for (int i = 0; i < 65; i++)
        upper[i] = (char)(hex[i] >= 'a' && hex[i] <= 'f' ? hex[i] - 32 : hex[i]);
    sf_err e = {0};
    ck_assert_int_eq(sf_bundle_load(t.path, upper, &t.b, &e), SF_OK);
    fx_tiny_close(&t);
}
END_TEST

START_TEST(bundle_sha_mismatch_names_both_digests) {
    char dir[256], path[512];
    fx_tiny_bundle(dir, "tiny.safetensors", 2, 4, path);
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

/* The defect tests' files, in a fresh scratch dir: dir/good.safetensors,
 * a random tiny bundle (seed 3, 4 canary positions), and the path dir/NAME
 * that its rewritten copies take. */
static void good_and_copy(char dir[256], char good[512], const char *name, char copy[512]) {
    fx_tiny_bundle(dir, "good.safetensors", 3, 4, good);
    snprintf(copy, 512, "%s/%s", dir, name);
}

/* One defect per case, with the status and the words the message must
 * contain. */
START_TEST(bundle_defects_are_named) {
    char dir[256], good[512], bad[512];
    good_and_copy(dir, good, "bad.safetensors", bad);

    fx_rewrite(good, bad, "blocks.1.mlp.fc2.weight", NULL, NULL, NULL);
    fx_load_fails(bad, SF_ENOTFOUND,
                  "missing tensor 'blocks.1.mlp.fc2.weight' (expected F32 [64, 256])");
    fx_load_fails(bad, SF_ENOTFOUND, "bad.safetensors");

    float w63[63] = {0};
    sf_tensor wrong = {"ln_f.weight", SF_DT_F32, 1, {63}, w63, sizeof w63};
    fx_rewrite(good, bad, NULL, &wrong, NULL, NULL);
    fx_load_fails(bad, SF_EFORMAT, "tensor 'ln_f.weight' is F32 [63], expected F32 [64]");

    fx_rewrite(good, bad, NULL, NULL, "tokenizer_version", "99");
    char want[96];
    snprintf(want, sizeof want, "unsupported tokenizer version \"99\" (this build reads %d)",
             SF_FEAT_VERSION);
    fx_load_fails(bad, SF_EVERSION, want);

    fx_rewrite(good, bad, NULL, NULL, "feat_vocab", "512,32,32,32");
    fx_load_fails(bad, SF_EVERSION, "feat_vocab");

    fx_rewrite(good, bad, NULL, NULL, "format", "something-else");
    fx_load_fails(bad, SF_EFORMAT, "not a spirefleet model bundle");

    fx_rewrite(good, bad, NULL, NULL, "n_heads", "5");
    fx_load_fails(bad, SF_ECONFIG, "not divisible by n_heads 5");

    fx_rewrite(good, bad, NULL, NULL, "n_layers", "two");
    fx_load_fails(bad, SF_ECONFIG, "metadata \"n_layers\" = \"two\" is not an integer");

    float extra[64] = {0};
    sf_tensor x = {"blocks.2.ln1.weight", SF_DT_F32, 1, {64}, extra, sizeof extra};
    fx_rewrite(good, bad, NULL, &x, NULL, NULL);
    fx_load_fails(bad, SF_EFORMAT, "unexpected tensor 'blocks.2.ln1.weight'");

    float nan64[64];
    for (int i = 0; i < 64; i++)
        nan64[i] = i == 9 ? NAN : 1.0f;
    sf_tensor nanw = {"ln_f.bias", SF_DT_F32, 1, {64}, nan64, sizeof nan64};
    fx_rewrite(good, bad, NULL, &nanw, NULL, NULL);
    fx_load_fails(bad, SF_EFORMAT, "tensor 'ln_f.bias' element 9 is not finite");

    fx_rewrite(good, bad, "canary.policy", NULL, NULL, NULL);
    fx_load_fails(bad, SF_EFORMAT, "incomplete canary: missing tensor 'canary.policy'");

    fx_rewrite(good, bad, NULL, NULL, "format_version", "3");
    fx_load_fails(bad, SF_EVERSION,
                  "bundle format version 3 unsupported (this build reads 1 and 2)");

    /* A golden position whose query points past its tokens. */
    sf_tensor qt;
    uint16_t *qd = fx_tensor_copy(good, "canary.query", &qt);
    qd[0] = 200; /* position 0, query 0, card token */
    fx_rewrite(good, bad, NULL, &qt, NULL, NULL);
    fx_load_fails(bad, SF_EINVAL, "position 0");
    fx_load_fails(bad, SF_EINVAL, "query 0: card token 200 >= n_tokens 1");
    free(qd);

    fx_load_fails("/nonexistent/x.safetensors", SF_EIO, "/nonexistent/x.safetensors: cannot open");
    /* a directory is no bundle: a format error, not an OS failure */
    fx_load_fails(dir, SF_EFORMAT, "not a regular file");
    fx_rmdir(dir);
}
END_TEST

/* A bundle's canary tolerances: one JSON object per precision, read
 * strictly; every defect names the key and the output. */
START_TEST(canary_tolerance_defects_are_named) {
    char dir[256], good[512], bad[512];
    good_and_copy(dir, good, "bad.safetensors", bad);
    const char *ok4 = "\"p_win\":{\"abs\":0.01,\"rel\":0},\"forecast\":{\"abs\":0.01,"
                      "\"rel\":0},\"policy\":{\"abs\":0.01,\"rel\":0}";
    char v[512];
    const struct {
        const char *value; /* of canary_tolerance_bf16; NULL: removed */
        const char *words;
    } cases[] = {
        {NULL, "metadata \"canary_tolerance_bf16\" is missing (the canary's bf16 tolerances)"},
        {"0.02", "metadata \"canary_tolerance_bf16\" is not a JSON object"},
        {"{\"value\":", "metadata \"canary_tolerance_bf16\" is not JSON"},
        {"{\"value\":{\"abs\":0.01,\"rel\":0}}",
         "metadata \"canary_tolerance_bf16\": output \"p_win\" is missing"},
        {"{\"value\":{\"abs\":-1,\"rel\":0},%s}",
         "metadata \"canary_tolerance_bf16\": output \"value\": \"abs\" must be a number in (0, "
         "1e6] (is abs -1, rel 0)"},
        {"{\"value\":{\"abs\":0.01,\"rel\":2},%s}",
         "output \"value\": \"rel\" must be a number in [0, 1]"},
        {"{\"value\":{\"abs\":0.01},%s}",
         "output \"value\" must be {\"abs\": number, \"rel\": number} and nothing else"},
        {"{\"value\":{\"abs\":0.01,\"rel\":0,\"max\":1},%s}",
         "output \"value\" must be {\"abs\": number, \"rel\": number} and nothing else"},
        {"{\"value\":{\"abs\":\"0.01\",\"rel\":0},%s}",
         "output \"value\" must be {\"abs\": number, \"rel\": number}"},
        {"{\"value\":{\"abs\":0.01,\"rel\":0},\"logits\":{\"abs\":1,\"rel\":0},%s}",
         "metadata \"canary_tolerance_bf16\": unknown output \"logits\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].value)
            snprintf(v, sizeof v, cases[i].value, ok4);
        const char *kv[2] = {"canary_tolerance_bf16", cases[i].value ? v : NULL};
        fx_rewrite_meta(good, bad, kv, 1);
        fx_load_fails(bad, SF_EFORMAT, cases[i].words);
        fx_load_fails(bad, SF_EFORMAT, "bad.safetensors");
    }
    /* A well-formed object is read as written. */
    snprintf(v, sizeof v, "{\"value\":{\"abs\":0.25,\"rel\":0.5},%s}", ok4);
    const char *kv[2] = {"canary_tolerance_bf16", v};
    fx_rewrite_meta(good, bad, kv, 1);
    sf_bundle *b = fx_load(bad);
    const sf_canary_tol *t = sf_bundle_canary_tolerance(b, SF_PREC_BF16);
    ck_assert(t->out[SF_CANARY_VALUE].abs == 0.25 && t->out[SF_CANARY_VALUE].rel == 0.5);
    ck_assert(t->out[SF_CANARY_POLICY].abs == 0.01 && t->out[SF_CANARY_POLICY].rel == 0.0);
    sf_bundle_free(b);

    /* Format 2 does not also carry the format-1 key. */
    const char *both[2] = {"canary_tolerance", "0.0001"};
    fx_rewrite_meta(good, bad, both, 1);
    fx_load_fails(bad, SF_EFORMAT,
                  "metadata \"canary_tolerance\" is a bundle format 1 key; "
                  "format 2 records \"canary_tolerance_fp32\"");
    fx_rmdir(dir);
}
END_TEST

/* A format-1 bundle (one absolute "canary_tolerance") still loads: fp32
 * takes that tolerance, tf32 and bf16 at least 0.02, rel 0 everywhere,
 * which is what format 1 meant; a bad format-1 value is named. */
START_TEST(format_1_bundles_map_their_one_tolerance) {
    char dir[256], good[512], old[512];
    good_and_copy(dir, good, "v1.safetensors", old);
    const char *kv[10] = {"format_version",        "1",  "canary_tolerance",      "0.0001",
                          "canary_tolerance_fp32", NULL, "canary_tolerance_tf32", NULL,
                          "canary_tolerance_bf16", NULL};
    fx_rewrite_meta(good, old, kv, 5);
    sf_bundle *b = fx_load(old);
    ck_assert_int_eq(sf_bundle_format_version(b), 1);
    for (int o = 0; o < SF_CANARY_OUTPUTS; o++) {
        ck_assert(sf_bundle_canary_tolerance(b, SF_PREC_FP32)->out[o].abs == 1e-4);
        ck_assert(sf_bundle_canary_tolerance(b, SF_PREC_TF32)->out[o].abs == 2e-2);
        ck_assert(sf_bundle_canary_tolerance(b, SF_PREC_BF16)->out[o].abs == 2e-2);
        for (int p = 0; p < SF_PRECISIONS; p++)
            ck_assert(sf_bundle_canary_tolerance(b, (sf_precision)p)->out[o].rel == 0.0);
    }
    /* It passes its canary on the cpu backend as before. */
    sf_net *net = fx_cpu_net(b);
    sf_err e = {0};
    ck_assert_int_eq(sf_net_canary(net, b, NULL, &e), SF_OK);
    sf_net_free(net);
    sf_bundle_free(b);

    kv[3] = "-1";
    fx_rewrite_meta(good, old, kv, 5);
    fx_load_fails(
        old, SF_EFORMAT,
        "metadata \"canary_tolerance\" is \"-1\"; need a number in (0, 1] (bundle format 1)");
    fx_rmdir(dir);
}
END_TEST

/* The writer records the tolerances it is given, exactly; it refuses a
 * canary without tolerances and a tolerance out of range, naming it, and
 * the reader sees what was written. */
START_TEST(writer_records_given_tolerances) {
    fx_tiny t;
    char path[512];
    sf_bundle *b = fx_tiny_open(&t, "src.safetensors", 5, 3);
    const sf_arch *a = sf_bundle_arch(b);
    const sf_tensorfile *tf = sf_bundle_file(b);
    /* The weights: every tensor that is not a canary tensor. */
    sf_tensor *w = calloc((size_t)sf_tensorfile_count(tf), sizeof *w);
    int nw = 0;
    for (int i = 0; i < sf_tensorfile_count(tf); i++)
        if (strncmp(sf_tensorfile_at(tf, i)->name, "canary.", 7) != 0)
            w[nw++] = *sf_tensorfile_at(tf, i);
    int g = sf_positions_count(sf_bundle_canary(b));
    sf_net_out *exp = calloc((size_t)g, sizeof *exp);
    for (int i = 0; i < g; i++)
        sf_bundle_canary_expected(b, i, &exp[i]);
    const double abs_[SF_PRECISIONS][SF_CANARY_OUTPUTS] = {
        {0.11, 0.12, 0.13, 0.14}, {0.2, 0.21, 0.22, 0.23}, {0.31, 0.32, 0.33, 0.34}};
    const double rel_[SF_CANARY_OUTPUTS] = {0, 0.001, 0.002, 0.003};
    sf_canary_tol tol[SF_PRECISIONS];
    for (int p = 0; p < SF_PRECISIONS; p++)
        for (int o = 0; o < SF_CANARY_OUTPUTS; o++)
            tol[p].out[o] = (sf_tol){abs_[p][o], rel_[o]};
    snprintf(path, sizeof path, "%s/given.safetensors", t.dir);
    sf_err e = {0};
    sf_meta_kv src_kv = {"canary_tolerance_source", "given by the test"};
    ck_assert_int_eq(sf_bundle_write(path, a, w, nw, sf_bundle_canary(b), exp, tol, &src_kv, 1, &e),
                     SF_OK);
    sf_bundle *c = fx_load(path);
    for (int p = 0; p < SF_PRECISIONS; p++)
        for (int o = 0; o < SF_CANARY_OUTPUTS; o++) {
            const sf_tol *got = &sf_bundle_canary_tolerance(c, (sf_precision)p)->out[o];
            ck_assert(got->abs == tol[p].out[o].abs && got->rel == tol[p].out[o].rel);
        }
    ck_assert_str_eq(sf_tensorfile_meta(sf_bundle_file(c), "canary_tolerance_tf32"),
                     "{\"value\":{\"abs\":0.2,\"rel\":0},\"p_win\":{\"abs\":0.21,\"rel\":0.001},"
                     "\"forecast\":{\"abs\":0.22,\"rel\":0.002},\"policy\":{\"abs\":0.23,"
                     "\"rel\":0.003}}");
    ck_assert_str_eq(sf_tensorfile_meta(sf_bundle_file(c), "canary_tolerance_source"),
                     "given by the test");
    sf_bundle_free(c);

    ck_assert_int_eq(sf_bundle_write(path, a, w, nw, sf_bundle_canary(b), exp, NULL, NULL, 0, &e),
                     SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "a canary needs its tolerances"));
    tol[SF_PREC_BF16].out[SF_CANARY_POLICY].abs = 0.0;
    ck_assert_int_eq(sf_bundle_write(path, a, w, nw, sf_bundle_canary(b), exp, tol, NULL, 0, &e),
                     SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "bf16 tolerance of policy: \"abs\" must be a number"));
    tol[SF_PREC_BF16].out[SF_CANARY_POLICY].abs = 0.5;
    sf_meta_kv old_kv = {"canary_tolerance", "0.02"};
    ck_assert_int_eq(sf_bundle_write(path, a, w, nw, sf_bundle_canary(b), exp, tol, &old_kv, 1, &e),
                     SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "extra metadata \"canary_tolerance\""));
    free(w);
    free(exp);
    fx_tiny_close(&t);
}
END_TEST

/* A bundle the C writer writes carries canary_count (docs/model.md
 * "Metadata"): the golden positions it holds, 0 without a canary. */
START_TEST(written_bundle_carries_canary_count) {
    const int canaries[] = {3, 0};
    for (int k = 0; k < 2; k++) {
        fx_tiny t;
        sf_bundle *b = fx_tiny_open(&t, "count.safetensors", 9, canaries[k]);
        char want[8];
        snprintf(want, sizeof want, "%d", canaries[k]);
        const char *got = sf_tensorfile_meta(sf_bundle_file(b), "canary_count");
        ck_assert_msg(got != NULL, "a bundle with %d golden positions has no canary_count",
                      canaries[k]);
        ck_assert_str_eq(got, want);
        fx_tiny_close(&t);
    }
}
END_TEST

/* sf_pos_validate refuses p, saying exactly `msg`. */
static void refused(const sf_pos *p, const char *msg) {
    sf_err e = {0};
    ck_assert_int_eq(sf_pos_validate(p, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, msg);
}

/* refused() while `field` (of a position or of the features it reads)
 * holds `bad`; the field is restored after. */
#define REFUSED_WITH(p, field, bad, msg)   \
    do {                                   \
        __typeof__(field) keep_ = (field); \
        (field) = (bad);                   \
        refused(p, msg);                   \
        (field) = keep_;                   \
    } while (0)

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
    REFUSED_WITH(&p, f.type[2], 12, "token 2: type 12 out of range 1..11");
    f.type[2] = SF_TOK_PAD;
    ck_assert_int_eq(sf_pos_validate(&p, &e), SF_EINVAL);
    f.type[2] = SF_TOK_MONSTER;
    f.cat[1][3] = 15; /* the vocabulary's last id */
    ck_assert_int_eq(sf_pos_validate(&p, &e), SF_OK);
    REFUSED_WITH(&p, f.cat[1][3], 16, "token 1: cat[3] id 16 >= vocabulary 16");
    REFUSED_WITH(&p, f.cont[0][5], INFINITY, "token 0: cont[5] is not finite");
    REFUSED_WITH(&p, f.query[0][1], 3, "query 0: target token 3 >= n_tokens 3");
    REFUSED_WITH(&p, f.qcont[0][7], NAN, "query 0: qcont[7] is not finite");
    REFUSED_WITH(&p, p.n_tokens, 0, "n_tokens 0 out of range 1..128");
    /* 81: engine.h allows 80 actions */
    REFUSED_WITH(&p, p.n_queries, SF_FEAT_MAX_QUERIES + 1, "n_queries 81 out of range 0..80");
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

#include "test-model-bundle.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("model-bundle", "bundle", 60, NULL, NULL)
