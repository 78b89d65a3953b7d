/*
 * positions.c — validation of tokenized positions, and position sets stored
 * padded in tensor files (golden positions, fixtures, benchmark inputs).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "model/model.h"

const int sf_feat_vocab[SF_FEAT_NCAT] = {SF_FEAT_VOCAB0, SF_FEAT_VOCAB1, SF_FEAT_VOCAB2,
                                         SF_FEAT_VOCAB3};

int sf_pos_validate(const sf_pos *p, sf_err *err) {
    if (p->n_tokens < 1 || p->n_tokens > SF_FEAT_MAX_TOKENS)
        return sf_err_set(err, SF_EINVAL, "n_tokens %d out of range 1..%d", p->n_tokens,
                          SF_FEAT_MAX_TOKENS);
    if (p->n_queries < 0 || p->n_queries > SF_FEAT_MAX_QUERIES)
        return sf_err_set(err, SF_EINVAL, "n_queries %d out of range 0..%d", p->n_queries,
                          SF_FEAT_MAX_QUERIES);
    if (!p->type || !p->cat || !p->cont || (p->n_queries > 0 && (!p->query || !p->qcont)))
        return sf_err_set(err, SF_EINVAL, "missing array");
    for (int t = 0; t < p->n_tokens; t++) {
        if (p->type[t] == SF_TOK_PAD || p->type[t] >= SF_FEAT_NTYPES)
            return sf_err_set(err, SF_EINVAL, "token %d: type %u out of range 1..%d", t, p->type[t],
                              SF_FEAT_NTYPES - 1);
        for (int j = 0; j < SF_FEAT_NCAT; j++)
            if (p->cat[t][j] >= sf_feat_vocab[j])
                return sf_err_set(err, SF_EINVAL, "token %d: cat[%d] id %u >= vocabulary %d", t, j,
                                  p->cat[t][j], sf_feat_vocab[j]);
        for (int k = 0; k < SF_FEAT_NCONT; k++)
            if (!isfinite(p->cont[t][k]))
                return sf_err_set(err, SF_EINVAL, "token %d: cont[%d] is not finite", t, k);
    }
    for (int q = 0; q < p->n_queries; q++) {
        for (int s = 0; s < 2; s++)
            if (p->query[q][s] >= p->n_tokens)
                return sf_err_set(err, SF_EINVAL, "query %d: %s token %u >= n_tokens %d", q,
                                  s == 0 ? "card" : "target", p->query[q][s], p->n_tokens);
        for (int k = 0; k < SF_FEAT_NQCONT; k++)
            if (!isfinite(p->qcont[q][k]))
                return sf_err_set(err, SF_EINVAL, "query %d: qcont[%d] is not finite", q, k);
    }
    return SF_OK;
}

/* ---------------------------------------------------------------------------
 * Position sets
 * ------------------------------------------------------------------------- */
struct sf_positions {
    int n, cap;
    void *block;                                         /* the arrays below */
    int32_t *n_tokens;                                   /* [cap] */
    int32_t *n_queries;                                  /* [cap] */
    uint8_t (*type)[SF_FEAT_MAX_TOKENS];                 /* [cap] */
    uint16_t (*cat)[SF_FEAT_MAX_TOKENS][SF_FEAT_NCAT];   /* [cap] */
    float (*cont)[SF_FEAT_MAX_TOKENS][SF_FEAT_NCONT];    /* [cap] */
    uint16_t (*query)[SF_FEAT_MAX_QUERIES][2];           /* [cap] */
    float (*qcont)[SF_FEAT_MAX_QUERIES][SF_FEAT_NQCONT]; /* [cap] */
};

void sf_positions_free(sf_positions *ps) {
    if (ps)
        free(ps->block);
    free(ps);
}

int sf_positions_create(int cap, sf_positions **out, sf_err *err) {
    *out = NULL;
    if (cap < 0)
        return sf_err_set(err, SF_EINVAL, "positions: capacity %d < 0", cap);
    size_t c = cap > 0 ? (size_t)cap : 1;
    sf_positions *ps = calloc(1, sizeof *ps);
    /* the seven arrays in one zeroed block, each at a 64-byte offset */
    const size_t size[7] = {c * sizeof *ps->n_tokens, c * sizeof *ps->n_queries,
                            c * sizeof *ps->type,     c * sizeof *ps->cat,
                            c * sizeof *ps->cont,     c * sizeof *ps->query,
                            c * sizeof *ps->qcont};
    size_t at[7], total = 0;
    for (int i = 0; i < 7; i++) {
        at[i] = total;
        total += (size[i] + 63) & ~(size_t)63;
    }
    unsigned char *b = ps ? calloc(1, total) : NULL;
    if (!b) {
        free(ps);
        return sf_err_set(err, SF_ENOMEM, "positions: out of memory for %d positions", cap);
    }
    ps->cap = cap;
    ps->block = b;
    ps->n_tokens = (void *)(b + at[0]);
    ps->n_queries = (void *)(b + at[1]);
    ps->type = (void *)(b + at[2]);
    ps->cat = (void *)(b + at[3]);
    ps->cont = (void *)(b + at[4]);
    ps->query = (void *)(b + at[5]);
    ps->qcont = (void *)(b + at[6]);
    *out = ps;
    return SF_OK;
}

int sf_positions_count(const sf_positions *ps) {
    return ps->n;
}

sf_pos sf_positions_get(const sf_positions *ps, int i) {
    sf_pos p = {ps->n_tokens[i],
                ps->n_queries[i],
                ps->type[i],
                (const uint16_t(*)[SF_FEAT_NCAT])ps->cat[i],
                (const float(*)[SF_FEAT_NCONT])ps->cont[i],
                (const uint16_t(*)[2])ps->query[i],
                (const float(*)[SF_FEAT_NQCONT])ps->qcont[i]};
    return p;
}

int sf_positions_add(sf_positions *ps, const sf_pos *p, sf_err *err) {
    if (ps->n >= ps->cap)
        return sf_err_set(err, SF_EFULL, "positions: set is full (%d)", ps->cap);
    int rc = sf_pos_validate(p, err);
    if (rc != SF_OK)
        return rc;
    int i = ps->n;
    ps->n_tokens[i] = p->n_tokens;
    ps->n_queries[i] = p->n_queries;
    memset(ps->type[i], 0, sizeof ps->type[i]);
    memset(ps->cat[i], 0, sizeof ps->cat[i]);
    memset(ps->cont[i], 0, sizeof ps->cont[i]);
    memset(ps->query[i], 0, sizeof ps->query[i]);
    memset(ps->qcont[i], 0, sizeof ps->qcont[i]);
    memcpy(ps->type[i], p->type, (size_t)p->n_tokens);
    memcpy(ps->cat[i], p->cat, (size_t)p->n_tokens * sizeof ps->cat[i][0]);
    memcpy(ps->cont[i], p->cont, (size_t)p->n_tokens * sizeof ps->cont[i][0]);
    if (p->n_queries > 0) {
        memcpy(ps->query[i], p->query, (size_t)p->n_queries * sizeof ps->query[i][0]);
        memcpy(ps->qcont[i], p->qcont, (size_t)p->n_queries * sizeof ps->qcont[i][0]);
    }
    ps->n++;
    return SF_OK;
}

static const char *const pos_names[7] = {"n_tokens", "n_queries", "type", "cat",
                                         "cont",     "query",     "qcont"};

int sf_positions_tensors(const sf_positions *ps, const char *prefix, char names[7][32],
                         sf_tensor out[7]) {
    int64_t g = ps->n, T = SF_FEAT_MAX_TOKENS, Q = SF_FEAT_MAX_QUERIES;
    const sf_tensor spec[7] = {
        {NULL, SF_DT_I32, 1, {g}, ps->n_tokens, (size_t)g * 4},
        {NULL, SF_DT_I32, 1, {g}, ps->n_queries, (size_t)g * 4},
        {NULL, SF_DT_U8, 2, {g, T}, ps->type, (size_t)(g * T)},
        {NULL, SF_DT_U16, 3, {g, T, SF_FEAT_NCAT}, ps->cat, (size_t)(g * T * SF_FEAT_NCAT * 2)},
        {NULL, SF_DT_F32, 3, {g, T, SF_FEAT_NCONT}, ps->cont, (size_t)(g * T * SF_FEAT_NCONT * 4)},
        {NULL, SF_DT_U16, 3, {g, Q, 2}, ps->query, (size_t)(g * Q * 2 * 2)},
        {NULL,
         SF_DT_F32,
         3,
         {g, Q, SF_FEAT_NQCONT},
         ps->qcont,
         (size_t)(g * Q * SF_FEAT_NQCONT * 4)},
    };
    for (int i = 0; i < 7; i++) {
        snprintf(names[i], 32, "%s%s", prefix, pos_names[i]);
        out[i] = spec[i];
        out[i].name = names[i];
    }
    return 7;
}

static const char *const out_names[4] = {"value", "p_win", "forecast", "policy"};

int sf_net_out_tensors(int g, const char *prefix, const float *val, const float *pw,
                       const float *fc, const float *pol, char names[4][32], sf_tensor out[4]) {
    const int64_t n = g;
    const sf_tensor spec[4] = {
        {NULL, SF_DT_F32, 2, {n, SF_NET_VALUE_BINS}, val, (size_t)n * SF_NET_VALUE_BINS * 4},
        {NULL, SF_DT_F32, 1, {n}, pw, (size_t)n * 4},
        {NULL,
         SF_DT_F32,
         3,
         {n, SF_NET_HORIZONS, SF_NET_FORECAST_TARGETS},
         fc,
         (size_t)n * SF_NET_FORECASTS * 4},
        {NULL, SF_DT_F32, 2, {n, SF_FEAT_MAX_QUERIES}, pol, (size_t)n * SF_FEAT_MAX_QUERIES * 4},
    };
    for (int i = 0; i < 4; i++) {
        snprintf(names[i], 32, "%s%s", prefix, out_names[i]);
        out[i] = spec[i];
        out[i].name = names[i];
    }
    return 4;
}

int sf_positions_from_file(const sf_tensorfile *tf, const char *prefix, sf_positions **out,
                           sf_err *err) {
    *out = NULL;
    char names[7][32];
    const sf_tensor *t[7];
    for (int i = 0; i < 7; i++) {
        snprintf(names[i], sizeof names[i], "%s%s", prefix, pos_names[i]);
        t[i] = sf_tensorfile_find(tf, names[i]);
        if (!t[i])
            return sf_err_set(err, SF_ENOTFOUND, "missing tensor '%s'", names[i]);
    }
    if (t[0]->dtype != SF_DT_I32 || t[0]->ndim != 1)
        return sf_err_set(err, SF_EFORMAT, "tensor '%s' must be I32 [G]", names[0]);
    int64_t g = t[0]->shape[0];
    if (g > 1000000)
        return sf_err_set(err, SF_EFORMAT, "tensor '%s': %lld positions (at most 1000000)",
                          names[0], (long long)g);
    const struct {
        sf_dtype dt;
        int ndim;
        int64_t s1, s2;
    } want[7] = {
        {SF_DT_I32, 1, 0, 0},
        {SF_DT_I32, 1, 0, 0},
        {SF_DT_U8, 2, SF_FEAT_MAX_TOKENS, 0},
        {SF_DT_U16, 3, SF_FEAT_MAX_TOKENS, SF_FEAT_NCAT},
        {SF_DT_F32, 3, SF_FEAT_MAX_TOKENS, SF_FEAT_NCONT},
        {SF_DT_U16, 3, SF_FEAT_MAX_QUERIES, 2},
        {SF_DT_F32, 3, SF_FEAT_MAX_QUERIES, SF_FEAT_NQCONT},
    };
    for (int i = 0; i < 7; i++) {
        int ok = t[i]->dtype == want[i].dt && t[i]->ndim == want[i].ndim && t[i]->shape[0] == g;
        if (ok && want[i].ndim >= 2)
            ok = t[i]->shape[1] == want[i].s1;
        if (ok && want[i].ndim >= 3)
            ok = t[i]->shape[2] == want[i].s2;
        if (!ok) {
            if (want[i].ndim == 1)
                return sf_err_set(err, SF_EFORMAT, "tensor '%s' must be %s [%lld]", names[i],
                                  sf_dtype_name(want[i].dt), (long long)g);
            if (want[i].ndim == 2)
                return sf_err_set(err, SF_EFORMAT, "tensor '%s' must be %s [%lld, %lld]", names[i],
                                  sf_dtype_name(want[i].dt), (long long)g, (long long)want[i].s1);
            return sf_err_set(err, SF_EFORMAT, "tensor '%s' must be %s [%lld, %lld, %lld]",
                              names[i], sf_dtype_name(want[i].dt), (long long)g,
                              (long long)want[i].s1, (long long)want[i].s2);
        }
    }
    sf_positions *ps;
    int rc = sf_positions_create((int)g, &ps, err);
    if (rc != SF_OK)
        return rc;
    memcpy(ps->n_tokens, t[0]->data, t[0]->nbytes);
    memcpy(ps->n_queries, t[1]->data, t[1]->nbytes);
    memcpy(ps->type, t[2]->data, t[2]->nbytes);
    memcpy(ps->cat, t[3]->data, t[3]->nbytes);
    memcpy(ps->cont, t[4]->data, t[4]->nbytes);
    memcpy(ps->query, t[5]->data, t[5]->nbytes);
    memcpy(ps->qcont, t[6]->data, t[6]->nbytes);
    ps->n = (int)g;
    for (int i = 0; i < ps->n; i++) {
        sf_pos p = sf_positions_get(ps, i);
        rc = sf_pos_validate(&p, err);
        if (rc != SF_OK) {
            sf_err_prefix(err, "%s position %d", prefix[0] ? prefix : "positions:", i);
            sf_positions_free(ps);
            return rc;
        }
    }
    *out = ps;
    return SF_OK;
}

int sf_positions_read(const char *path, sf_positions **out, sf_err *err) {
    *out = NULL;
    sf_tensorfile *tf;
    int rc = sf_tensorfile_read(path, &tf, NULL, err);
    if (rc != SF_OK)
        return rc;
    const char *fmt = sf_tensorfile_meta(tf, "format");
    const char *tv = sf_tensorfile_meta(tf, "tokenizer_version");
    if (!fmt || strcmp(fmt, SF_POSITIONS_FORMAT) != 0) {
        rc = sf_err_set(err, SF_EFORMAT, "%s: metadata format is \"%s\", expected \"%s\"", path,
                        fmt ? fmt : "(missing)", SF_POSITIONS_FORMAT);
    } else if (!tv || atoi(tv) != SF_FEAT_VERSION) {
        rc = sf_err_set(err, SF_EVERSION,
                        "%s: tokenizer version %s unsupported (this build reads %d)", path,
                        tv ? tv : "(missing)", SF_FEAT_VERSION);
    } else {
        rc = sf_positions_from_file(tf, "", out, err);
        if (rc != SF_OK)
            sf_err_prefix(err, "%s", path);
    }
    sf_tensorfile_free(tf);
    return rc;
}

int sf_positions_write(const sf_positions *ps, const char *path, sf_err *err) {
    char names[7][32];
    sf_tensor t[7];
    sf_positions_tensors(ps, "", names, t);
    char tv[16];
    snprintf(tv, sizeof tv, "%d", SF_FEAT_VERSION);
    sf_meta_kv meta[2] = {{"format", SF_POSITIONS_FORMAT}, {"tokenizer_version", tv}};
    return sf_tensorfile_write(path, meta, 2, t, 7, err);
}

/* ---------------------------------------------------------------------------
 * Synthetic positions
 * ------------------------------------------------------------------------- */

/* A counter-based stream: value i of stream `seed` is sf_mix64(seed ^ i). */
typedef struct {
    uint64_t seed, i;
} sf_rng;

static uint64_t rng_next(sf_rng *r) {
    return sf_mix64(r->seed ^ sf_mix64(r->i++));
}

static uint32_t rng_below(sf_rng *r, uint32_t n) {
    return (uint32_t)((rng_next(r) >> 32) * n >> 32);
}

/* Uniform in [lo, hi), on a 2^-24 grid. */
static float rng_uniform(sf_rng *r, float lo, float hi) {
    return lo + (hi - lo) * (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

int sf_positions_synthetic(uint64_t seed, int count, sf_positions **out, sf_err *err) {
    int rc = sf_positions_create(count, out, err);
    if (rc != SF_OK)
        return rc;
    sf_positions *ps = *out;
    sf_rng r = {sf_mix64(seed ^ 0x5f706f736974696full), 0};
    for (int i = 0; i < count; i++) {
        /* Edge cases first in every run of eight: one token with one query,
         * a full position (128 tokens, 80 queries), no queries. */
        int T, Q;
        switch (i % 8) {
        case 0: T = 1, Q = 1; break;
        case 1: T = SF_FEAT_MAX_TOKENS, Q = SF_FEAT_MAX_QUERIES; break;
        case 2: T = 2 + (int)rng_below(&r, 40), Q = 0; break;
        default: T = 2 + (int)rng_below(&r, 62), Q = 1 + (int)rng_below(&r, 24); break;
        }
        ps->n_tokens[i] = T;
        ps->n_queries[i] = Q;
        for (int t = 0; t < T; t++) {
            uint8_t type = t == 0   ? SF_TOK_CTX
                           : t == 1 ? SF_TOK_PLAYER
                                    : (uint8_t)(SF_TOK_MONSTER + rng_below(&r, SF_FEAT_NTYPES - 3));
            ps->type[i][t] = type;
            for (int j = 0; j < SF_FEAT_NCAT; j++)
                ps->cat[i][t][j] = (uint16_t)rng_below(&r, (uint32_t)sf_feat_vocab[j]);
            for (int k = 0; k < SF_FEAT_NCONT; k++)
                ps->cont[i][t][k] = rng_uniform(&r, -2.0f, 2.0f);
        }
        for (int q = 0; q < Q; q++) {
            ps->query[i][q][0] = (uint16_t)rng_below(&r, (uint32_t)T);
            ps->query[i][q][1] = (uint16_t)rng_below(&r, (uint32_t)T);
            for (int k = 0; k < SF_FEAT_NQCONT; k++)
                ps->qcont[i][q][k] = rng_uniform(&r, -1.0f, 1.0f);
        }
        ps->n++;
    }
    return SF_OK;
}
