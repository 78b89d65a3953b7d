/*
 * wire.c — encode and decode proto/evald.proto messages (see wire.h).
 */
#include "gpu-evald/wire.h"

#include <stdlib.h>
#include <string.h>

#include "proto/evald.pb-c.h"

int sf_wire_request_encode(uint64_t id, const char *model, const sf_pos *pos, int n,
                           sf_buf *scratch, sf_buf *msg, sf_err *err) {
    if (n < 1 || n > SF_WIRE_MAX_POSITIONS)
        return sf_err_set(err, SF_EINVAL, "request of %d positions (1..%d)", n,
                          SF_WIRE_MAX_POSITIONS);
    size_t T = 0, Q = 0;
    for (int i = 0; i < n; i++) {
        T += (size_t)pos[i].n_tokens;
        Q += (size_t)pos[i].n_queries;
    }
    const size_t ncat = SF_FEAT_NCAT * 2, ncont = SF_FEAT_NCONT * 4, nqc = SF_FEAT_NQCONT * 4;
    size_t need = 2 * (size_t)n + T * (1 + ncat + ncont) + Q * (4 + nqc);
    if (sf_buf_reserve(scratch, need, NULL) != SF_OK) /* scratch->len stays 0 */
        return sf_err_set(err, SF_ENOMEM, "out of memory for a %zu-byte request", need);
    uint8_t *ntok = scratch->p, *nq = ntok + n, *type = nq + n, *cat = type + T;
    uint8_t *cont = cat + T * ncat, *query = cont + T * ncont, *qcont = query + Q * 4;
    size_t t = 0, q = 0;
    for (int i = 0; i < n; i++) {
        const sf_pos *p = &pos[i];
        size_t nt = (size_t)p->n_tokens, nqi = (size_t)p->n_queries;
        ntok[i] = (uint8_t)nt;
        nq[i] = (uint8_t)nqi;
        memcpy(type + t, p->type, nt);
        memcpy(cat + t * ncat, p->cat, nt * ncat);
        memcpy(cont + t * ncont, p->cont, nt * ncont);
        if (nqi) {
            memcpy(query + q * 4, p->query, nqi * 4);
            memcpy(qcont + q * nqc, p->qcont, nqi * nqc);
        }
        t += nt;
        q += nqi;
    }
    Spirefleet__EvalRequest r = SPIREFLEET__EVAL_REQUEST__INIT;
    r.protocol = SF_WIRE_PROTOCOL;
    r.request_id = id;
    r.model_sha256 = (char *)model;
    r.tokenizer_version = SF_FEAT_VERSION;
    r.n_positions = (uint32_t)n;
    r.n_tokens = (ProtobufCBinaryData){(size_t)n, ntok};
    r.n_queries = (ProtobufCBinaryData){(size_t)n, nq};
    r.token_type = (ProtobufCBinaryData){T, type};
    r.token_cat = (ProtobufCBinaryData){T * ncat, cat};
    r.token_cont = (ProtobufCBinaryData){T * ncont, cont};
    r.query = (ProtobufCBinaryData){Q * 4, query};
    r.query_cont = (ProtobufCBinaryData){Q * nqc, qcont};
    size_t size = spirefleet__eval_request__get_packed_size(&r);
    msg->len = 0;
    if (sf_buf_reserve(msg, size, NULL) != SF_OK)
        return sf_err_set(err, SF_ENOMEM, "out of memory for a %zu-byte request", size);
    msg->len = spirefleet__eval_request__pack(&r, msg->p);
    return SF_OK;
}

/* `basis` (may be NULL) says where the expected length comes from, so a
 * wrong count is named rather than the array that follows from it. */
static int check_len_from(const char *field, size_t got, size_t want, const char *basis,
                          sf_err *err) {
    if (got != want)
        return sf_err_set(err, SF_EFORMAT, "field %s has %zu bytes, expected %zu%s%s%s", field, got,
                          want, basis ? " (from " : "", basis ? basis : "", basis ? ")" : "");
    return SF_OK;
}

static int check_len(const char *field, size_t got, size_t want, sf_err *err) {
    return check_len_from(field, got, want, NULL, err);
}

int sf_wire_request_decode(const uint8_t *msg, size_t len, sf_arena *arena, sf_wire_request **out,
                           uint64_t *id, char model[65], sf_err *err) {
    *out = NULL;
    *id = 0;
    model[0] = '\0';
    if (sf_arena_reset(arena) != SF_OK)
        return sf_err_set(err, SF_ENOMEM, "out of memory for a %zu-byte request", len);
    Spirefleet__EvalRequest *r = spirefleet__eval_request__unpack(&arena->pb, len, msg);
    if (!r)
        return sf_err_set(err, SF_EFORMAT, "request of %zu bytes does not decode as EvalRequest",
                          len);
    *id = r->request_id;
    /* The model's name on the wire is its canonical spelling only (common.h). */
    if (sf_sha256_hex_canonical(r->model_sha256))
        memcpy(model, r->model_sha256, 65);
    if (r->protocol != SF_WIRE_PROTOCOL)
        return sf_err_set(err, SF_EVERSION, "protocol %u unsupported (this server speaks %d)",
                          r->protocol, SF_WIRE_PROTOCOL);
    if (r->tokenizer_version != SF_FEAT_VERSION)
        return sf_err_set(err, SF_EVERSION,
                          "tokenizer version %u unsupported (this server reads %d)",
                          r->tokenizer_version, SF_FEAT_VERSION);
    if (!sf_sha256_hex_canonical(r->model_sha256))
        return sf_err_set(err, SF_EFORMAT, "field model_sha256 is not 64 lowercase hex digits");
    uint32_t n = r->n_positions;
    if (n < 1 || n > SF_WIRE_MAX_POSITIONS)
        return sf_err_set(err, SF_EFORMAT, "field n_positions is %u (1..%d)", n,
                          SF_WIRE_MAX_POSITIONS);
    int rc;
    if ((rc = check_len("n_tokens", r->n_tokens.len, n, err)) != SF_OK ||
        (rc = check_len("n_queries", r->n_queries.len, n, err)) != SF_OK)
        return rc;
    size_t T = 0, Q = 0;
    for (uint32_t i = 0; i < n; i++) {
        T += r->n_tokens.data[i];
        Q += r->n_queries.data[i];
    }
    const size_t ncat = SF_FEAT_NCAT * 2, ncont = SF_FEAT_NCONT * 4, nqc = SF_FEAT_NQCONT * 4;
    const char *tb = "the sum of n_tokens", *qb = "the sum of n_queries";
    if ((rc = check_len_from("token_type", r->token_type.len, T, tb, err)) != SF_OK ||
        (rc = check_len_from("token_cat", r->token_cat.len, T * ncat, tb, err)) != SF_OK ||
        (rc = check_len_from("token_cont", r->token_cont.len, T * ncont, tb, err)) != SF_OK ||
        (rc = check_len_from("query", r->query.len, Q * 4, qb, err)) != SF_OK ||
        (rc = check_len_from("query_cont", r->query_cont.len, Q * nqc, qb, err)) != SF_OK)
        return rc;
    /* One block: header, views, then the arrays, floats first (aligned). */
    size_t head = (sizeof(sf_wire_request) + n * sizeof(sf_pos) + 63) & ~(size_t)63;
    size_t size = head + T * ncont + Q * nqc + T * ncat + Q * 4 + T;
    uint8_t *blk = malloc(size);
    if (!blk)
        return sf_err_set(err, SF_ENOMEM, "out of memory for a %u-position request", n);
    sf_wire_request *w = (sf_wire_request *)(void *)blk;
    w->id = r->request_id;
    memcpy(w->model, r->model_sha256, 65);
    w->n = (int)n;
    w->pos = (sf_pos *)(void *)(blk + sizeof *w);
    uint8_t *cont = blk + head, *qcont = cont + T * ncont, *cat = qcont + Q * nqc;
    uint8_t *query = cat + T * ncat, *type = query + Q * 4;
    if (T) {
        memcpy(cont, r->token_cont.data, T * ncont);
        memcpy(cat, r->token_cat.data, T * ncat);
        memcpy(type, r->token_type.data, T);
    }
    if (Q) {
        memcpy(qcont, r->query_cont.data, Q * nqc);
        memcpy(query, r->query.data, Q * 4);
    }
    size_t t = 0, q = 0;
    for (uint32_t i = 0; i < n; i++) {
        sf_pos *p = &w->pos[i];
        p->n_tokens = r->n_tokens.data[i];
        p->n_queries = r->n_queries.data[i];
        p->type = type + t;
        p->cat = (const uint16_t(*)[SF_FEAT_NCAT])(const void *)(cat + t * ncat);
        p->cont = (const float(*)[SF_FEAT_NCONT])(const void *)(cont + t * ncont);
        p->query = (const uint16_t(*)[2])(const void *)(query + q * 4);
        p->qcont = (const float(*)[SF_FEAT_NQCONT])(const void *)(qcont + q * nqc);
        t += (size_t)p->n_tokens;
        q += (size_t)p->n_queries;
        if ((rc = sf_pos_validate(p, err)) != SF_OK) {
            free(blk);
            return sf_err_prefix(err, "position %u", i);
        }
    }
    *out = w;
    return SF_OK;
}

int sf_wire_reply_encode(uint64_t id, const char *model, int status, const char *error,
                         const sf_net_out *out, int n, uint32_t credit, sf_buf *scratch,
                         sf_buf *msg, sf_err *err) {
    Spirefleet__EvalReply r = SPIREFLEET__EVAL_REPLY__INIT;
    r.protocol = SF_WIRE_PROTOCOL;
    r.request_id = id;
    r.status = status;
    r.error = (char *)(error ? error : "");
    r.model_sha256 = (char *)(model ? model : "");
    r.credit = credit;
    if (status == SF_OK && n > 0) {
        size_t Q = 0;
        for (int i = 0; i < n; i++)
            Q += (size_t)out[i].n_queries;
        const size_t nv = SF_NET_VALUE_BINS * 4, nf = SF_NET_FORECASTS * 4;
        size_t need = (size_t)n * (nv + 4 + nf) + Q * 4;
        if (sf_buf_reserve(scratch, need, NULL) != SF_OK) /* scratch->len stays 0 */
            return sf_err_set(err, SF_ENOMEM, "out of memory for a reply");
        uint8_t *val = scratch->p, *pw = val + n * nv, *fc = pw + n * 4, *pol = fc + n * nf;
        size_t q = 0;
        for (int i = 0; i < n; i++) {
            memcpy(val + i * nv, out[i].value, nv);
            memcpy(pw + i * 4, &out[i].p_win, 4);
            memcpy(fc + i * nf, out[i].forecast, nf);
            memcpy(pol + q * 4, out[i].policy, (size_t)out[i].n_queries * 4);
            q += (size_t)out[i].n_queries;
        }
        r.n_positions = (uint32_t)n;
        r.value = (ProtobufCBinaryData){n * nv, val};
        r.p_win = (ProtobufCBinaryData){n * 4, pw};
        r.forecast = (ProtobufCBinaryData){n * nf, fc};
        r.policy = (ProtobufCBinaryData){Q * 4, pol};
    }
    size_t size = spirefleet__eval_reply__get_packed_size(&r);
    msg->len = 0;
    if (sf_buf_reserve(msg, size, NULL) != SF_OK)
        return sf_err_set(err, SF_ENOMEM, "out of memory for a reply");
    msg->len = spirefleet__eval_reply__pack(&r, msg->p);
    return SF_OK;
}

int sf_wire_reply_decode(const uint8_t *msg, size_t len, sf_arena *arena, sf_wire_reply *out,
                         sf_err *err) {
    memset(out, 0, sizeof *out);
    if (sf_arena_reset(arena) != SF_OK)
        return sf_err_set(err, SF_ENOMEM, "out of memory for a %zu-byte reply", len);
    Spirefleet__EvalReply *r = spirefleet__eval_reply__unpack(&arena->pb, len, msg);
    if (!r)
        return sf_err_set(err, SF_EFORMAT, "reply of %zu bytes does not decode as EvalReply", len);
    if (r->protocol != SF_WIRE_PROTOCOL)
        return sf_err_set(err, SF_EVERSION, "reply protocol %u unsupported (this client speaks %d)",
                          r->protocol, SF_WIRE_PROTOCOL);
    out->id = r->request_id;
    out->status = r->status;
    out->error = r->error ? r->error : "";
    out->credit = r->credit;
    out->pb = r;
    return SF_OK;
}

int sf_wire_reply_outputs(const sf_wire_reply *w, int n, const uint8_t *nq, sf_net_out *out,
                          sf_err *err) {
    const Spirefleet__EvalReply *r = w->pb;
    if (r->n_positions != (uint32_t)n)
        return sf_err_set(err, SF_EFORMAT, "reply carries %u positions, the request had %d",
                          r->n_positions, n);
    size_t Q = 0;
    for (int i = 0; i < n; i++)
        Q += nq[i];
    const size_t nv = SF_NET_VALUE_BINS * 4, nf = SF_NET_FORECASTS * 4;
    int rc;
    if ((rc = check_len("value", r->value.len, (size_t)n * nv, err)) != SF_OK ||
        (rc = check_len("p_win", r->p_win.len, (size_t)n * 4, err)) != SF_OK ||
        (rc = check_len("forecast", r->forecast.len, (size_t)n * nf, err)) != SF_OK ||
        (rc = check_len("policy", r->policy.len, Q * 4, err)) != SF_OK)
        return rc;
    size_t q = 0;
    for (int i = 0; i < n; i++) {
        sf_net_out *o = &out[i];
        memcpy(o->value, r->value.data + i * nv, nv);
        memcpy(&o->p_win, r->p_win.data + i * 4, 4);
        memcpy(o->forecast, r->forecast.data + i * nf, nf);
        o->n_queries = nq[i];
        if (nq[i])
            memcpy(o->policy, r->policy.data + q * 4, (size_t)nq[i] * 4);
        memset(o->policy + nq[i], 0, (size_t)(SF_FEAT_MAX_QUERIES - nq[i]) * 4);
        q += nq[i];
    }
    return SF_OK;
}
