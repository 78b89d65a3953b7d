/* test_evald_wire.c — the wire codec of proto/evald.proto: round trips bit
 * for bit, and every malformed or out-of-range message is refused with the
 * field named. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-evald/wire.h"
#include "model/model.h"
#include "proto/evald.pb-c.h"
#include "sf_check.h"

static const char *SHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* Encode, decode: every position comes back with the same bytes. */
START_TEST(request_round_trip_is_exact) {
    sf_positions *ps;
    sf_err e = {0};
    ck_assert_int_eq(sf_positions_synthetic(31, 12, &ps, &e), SF_OK);
    sf_pos pos[12];
    for (int i = 0; i < 12; i++)
        pos[i] = sf_positions_get(ps, i);
    sf_buf scratch = {0}, msg = {0};
    ck_assert_int_eq(sf_wire_request_encode(77, SHA, pos, 12, &scratch, &msg, &e), SF_OK);
    sf_arena arena;
    sf_arena_init(&arena, NULL);
    sf_wire_request *w;
    uint64_t id;
    char model[65];
    ck_assert_int_eq(sf_wire_request_decode(msg.p, msg.len, &arena, &w, &id, model, &e), SF_OK);
    ck_assert_uint_eq(id, 77);
    ck_assert_uint_eq(w->id, 77);
    ck_assert_str_eq(w->model, SHA);
    ck_assert_int_eq(w->n, 12);
    for (int i = 0; i < 12; i++) {
        const sf_pos *a = &pos[i], *b = &w->pos[i];
        ck_assert_int_eq(a->n_tokens, b->n_tokens);
        ck_assert_int_eq(a->n_queries, b->n_queries);
        ck_assert_mem_eq(a->type, b->type, (size_t)a->n_tokens);
        ck_assert_mem_eq(a->cat, b->cat, (size_t)a->n_tokens * 8);
        ck_assert_mem_eq(a->cont, b->cont, (size_t)a->n_tokens * 64);
        if (a->n_queries) {
            ck_assert_mem_eq(a->query, b->query, (size_t)a->n_queries * 4);
            ck_assert_mem_eq(a->qcont, b->qcont, (size_t)a->n_queries * 32);
        }
        ck_assert_uint_eq((uintptr_t)b->cont % 4, 0);
    }
    free(w);
    sf_buf_free(&scratch);
    sf_buf_free(&msg);
    sf_arena_free(&arena);
    sf_positions_free(ps);
}
END_TEST

/* Build a request by hand from raw fields. */
static size_t pack_req(Spirefleet__EvalRequest *r, uint8_t *buf) {
    return spirefleet__eval_request__pack(r, buf);
}

static int decode(const uint8_t *buf, size_t n, sf_err *e, uint64_t *id) {
    sf_arena arena;
    sf_arena_init(&arena, NULL);
    sf_wire_request *w = NULL;
    char model[65];
    int rc = sf_wire_request_decode(buf, n, &arena, &w, id, model, e);
    free(w);
    sf_arena_free(&arena);
    return rc;
}

START_TEST(request_defects_are_named) {
    static uint8_t buf[1 << 16];
    uint8_t ntok[1] = {2}, nq[1] = {1}, type[2] = {1, 2};
    uint16_t cat[2][4] = {{0}};
    float cont[2][16] = {{0}};
    uint16_t query[1][2] = {{0, 1}};
    float qcont[1][8] = {{0}};
    Spirefleet__EvalRequest r = SPIREFLEET__EVAL_REQUEST__INIT;
    r.protocol = 1;
    r.request_id = 9;
    r.model_sha256 = (char *)SHA;
    r.tokenizer_version = SF_FEAT_VERSION;
    r.n_positions = 1;
    r.n_tokens = (ProtobufCBinaryData){1, ntok};
    r.n_queries = (ProtobufCBinaryData){1, nq};
    r.token_type = (ProtobufCBinaryData){2, type};
    r.token_cat = (ProtobufCBinaryData){16, (uint8_t *)cat};
    r.token_cont = (ProtobufCBinaryData){128, (uint8_t *)cont};
    r.query = (ProtobufCBinaryData){4, (uint8_t *)query};
    r.query_cont = (ProtobufCBinaryData){32, (uint8_t *)qcont};
    sf_err e = {0};
    uint64_t id;
    ck_assert_int_eq(decode(buf, pack_req(&r, buf), &e, &id), SF_OK);

    /* Garbage does not decode; the id is unknown (0). */
    uint8_t junk[5] = {0xff, 0xff, 0xff, 0xff, 0xff};
    ck_assert_int_eq(decode(junk, 5, &e, &id), SF_EFORMAT);
    ck_assert_uint_eq(id, 0);
    ck_assert_ptr_nonnull(strstr(e.msg, "does not decode as EvalRequest"));

    r.protocol = 2;
    ck_assert_int_eq(decode(buf, pack_req(&r, buf), &e, &id), SF_EVERSION);
    ck_assert_uint_eq(id, 9); /* known, so the error reply can name it */
    ck_assert_str_eq(e.msg, "protocol 2 unsupported (this server speaks 1)");
    r.protocol = 1;
    r.tokenizer_version = 7;
    ck_assert_int_eq(decode(buf, pack_req(&r, buf), &e, &id), SF_EVERSION);
    char want[96];
    snprintf(want, sizeof want, "tokenizer version 7 unsupported (this server reads %d)",
             SF_FEAT_VERSION);
    ck_assert_str_eq(e.msg, want);
    r.tokenizer_version = SF_FEAT_VERSION;
    r.model_sha256 = "abc";
    ck_assert_int_eq(decode(buf, pack_req(&r, buf), &e, &id), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "model_sha256"));
    /* on the wire only the canonical (lower-case) spelling names a model */
    r.model_sha256 = "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef";
    ck_assert_int_eq(decode(buf, pack_req(&r, buf), &e, &id), SF_EFORMAT);
    ck_assert_str_eq(e.msg, "field model_sha256 is not 64 lowercase hex digits");
    r.model_sha256 = (char *)SHA;
    r.token_cont.len = 64;
    ck_assert_int_eq(decode(buf, pack_req(&r, buf), &e, &id), SF_EFORMAT);
    ck_assert_str_eq(e.msg,
                     "field token_cont has 64 bytes, expected 128 (from the sum of n_tokens)");
    r.token_cont.len = 128;
    r.n_positions = 2;
    ck_assert_int_eq(decode(buf, pack_req(&r, buf), &e, &id), SF_EFORMAT);
    ck_assert_str_eq(e.msg, "field n_tokens has 1 bytes, expected 2");
    r.n_positions = 0;
    ck_assert_int_eq(decode(buf, pack_req(&r, buf), &e, &id), SF_EFORMAT);
    r.n_positions = 1;
    query[0][1] = 2; /* target token 2 of a 2-token position */
    ck_assert_int_eq(decode(buf, pack_req(&r, buf), &e, &id), SF_EINVAL);
    ck_assert_str_eq(e.msg, "position 0: query 0: target token 2 >= n_tokens 2");
    query[0][1] = 1;
    cont[1][3] = NAN;
    ck_assert_int_eq(decode(buf, pack_req(&r, buf), &e, &id), SF_EINVAL);
    ck_assert_str_eq(e.msg, "position 0: token 1: cont[3] is not finite");
    cont[1][3] = 0;
    ntok[0] = 0; /* a position with no tokens; the arrays then disagree too */
    r.token_type.len = 0, r.token_cat.len = 0, r.token_cont.len = 0;
    ck_assert_int_eq(decode(buf, pack_req(&r, buf), &e, &id), SF_EINVAL);
    ck_assert_str_eq(e.msg, "position 0: n_tokens 0 out of range 1..128");
}
END_TEST

/* Reply: outputs come back bit for bit; a reply whose sizes disagree with
 * the request is refused. */
START_TEST(reply_round_trip_and_checks) {
    sf_net_out out[3];
    memset(out, 0, sizeof out);
    uint8_t nq[3] = {2, 0, 5};
    for (int i = 0; i < 3; i++) {
        out[i].n_queries = nq[i];
        for (int k = 0; k < SF_NET_VALUE_BINS; k++)
            out[i].value[k] = (float)(i * 100 + k) / 7.0f;
        out[i].p_win = 0.125f * (float)i;
        for (int h = 0; h < 4; h++)
            for (int k = 0; k < 5; k++)
                out[i].forecast[h][k] = (float)(h - k) / 3.0f;
        for (int q = 0; q < nq[i]; q++)
            out[i].policy[q] = -1.0f / (float)(q + 1 + i);
    }
    sf_buf scratch = {0}, msg = {0};
    sf_err e = {0};
    ck_assert_int_eq(sf_wire_reply_encode(5, SHA, SF_OK, NULL, out, 3, 1024, &scratch, &msg, &e),
                     SF_OK);
    sf_arena arena;
    sf_arena_init(&arena, NULL);
    sf_wire_reply r;
    ck_assert_int_eq(sf_wire_reply_decode(msg.p, msg.len, &arena, &r, &e), SF_OK);
    ck_assert_uint_eq(r.id, 5);
    ck_assert_int_eq(r.status, SF_OK);
    ck_assert_uint_eq(r.credit, 1024);
    sf_net_out back[3];
    ck_assert_int_eq(sf_wire_reply_outputs(&r, 3, nq, back, &e), SF_OK);
    ck_assert_mem_eq(back, out, sizeof out);
    ck_assert_int_eq(sf_wire_reply_outputs(&r, 2, nq, back, &e), SF_EFORMAT);
    ck_assert_str_eq(e.msg, "reply carries 3 positions, the request had 2");
    uint8_t nq2[3] = {2, 1, 5};
    ck_assert_int_eq(sf_wire_reply_outputs(&r, 3, nq2, back, &e), SF_EFORMAT);
    ck_assert_str_eq(e.msg, "field policy has 28 bytes, expected 32");

    ck_assert_int_eq(sf_wire_reply_encode(6, SHA, SF_ENOTFOUND, "unknown model x", NULL, 0, 7,
                                          &scratch, &msg, &e),
                     SF_OK);
    ck_assert_int_eq(sf_wire_reply_decode(msg.p, msg.len, &arena, &r, &e), SF_OK);
    ck_assert_int_eq(r.status, SF_ENOTFOUND);
    ck_assert_str_eq(r.error, "unknown model x");
    uint8_t junk[3] = {0x0a, 0xff, 0x01};
    ck_assert_int_eq(sf_wire_reply_decode(junk, 3, &arena, &r, &e), SF_EFORMAT);
    sf_buf_free(&scratch);
    sf_buf_free(&msg);
    sf_arena_free(&arena);
}
END_TEST

#include "test-evald-wire.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("evald-wire", "wire", 0, NULL, NULL)
