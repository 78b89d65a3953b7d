/* batch.c — padded training batches from many shards (batch.h).
 *
 * Loading decodes each record once (the shard reader's arena, reused) and
 * copies its variable-length tensors into one staging buffer, packed, with
 * the fixed-size fields in a per-record slot; emitting scatters the staged
 * bytes into the caller's buffers at the batch's padded strides. Tensor
 * bytes are little-endian in the records (docs/format.md) and are copied
 * as they are. */
#include "shard/batch.h"

#include <stdlib.h>
#include <string.h>

#include "shard/internal.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "batch.c copies little-endian tensor bytes as they are: a little-endian host only"
#endif

#define FC_N (SF_FORECAST_H * SF_FORECAST_COLS)

static const struct {
    const char *name, *dtype, *dims;
} fields[SF_BATCH_NFIELDS] = {
    [SF_BATCH_TOKEN_TYPE] = {"token_type", "u1", "T"},
    [SF_BATCH_TOKEN_CAT] = {"token_cat", "<u2", "T,C"},
    [SF_BATCH_TOKEN_CONT] = {"token_cont", "<f4", "T,F"},
    [SF_BATCH_TOKEN_MASK] = {"token_mask", "?", "T"},
    [SF_BATCH_QUERY] = {"query", "<u2", "Q,2"},
    [SF_BATCH_QUERY_CONT] = {"query_cont", "<f4", "Q,G"},
    [SF_BATCH_QUERY_MASK] = {"query_mask", "?", "Q"},
    [SF_BATCH_POLICY] = {"policy", "<f4", "Q"},
    [SF_BATCH_VALUE_BINS] = {"value_bins", "<f4", "21"},
    [SF_BATCH_FORECAST] = {"forecast", "<f4", "4,5"},
    [SF_BATCH_FORECAST_MASK] = {"forecast_mask", "u1", "4"},
    [SF_BATCH_WON] = {"won", "<f4", ""},
    [SF_BATCH_VALUE] = {"value", "<f4", ""},
    [SF_BATCH_N_TOKENS] = {"n_tokens", "<i8", ""},
    [SF_BATCH_N_QUERIES] = {"n_queries", "<i8", ""},
    [SF_BATCH_GAME_SEED] = {"game_seed", "<u8", ""},
    [SF_BATCH_JOB_ID] = {"job_id", "<u8", ""},
    [SF_BATCH_FIGHT_INDEX] = {"fight_index", "<u4", ""},
    [SF_BATCH_DECISION_INDEX] = {"decision_index", "<u4", ""},
    [SF_BATCH_TURN] = {"turn", "<u4", ""},
    [SF_BATCH_ENCOUNTER_ID] = {"encounter_id", "<i8", ""},
    [SF_BATCH_ASCENSION] = {"ascension", "<u4", ""},
    [SF_BATCH_ENGINE_LIMIT] = {"engine_limit", "u1", ""},
};
/* the dims strings above spell the label contract's sizes */
_Static_assert(SF_VALUE_BINS == 21 && SF_FORECAST_H == 4 && SF_FORECAST_COLS == 5,
               "batch.c: the field table's fixed dimensions follow label/label.h");

int sf_batch_field_count(void) {
    return SF_BATCH_NFIELDS;
}
const char *sf_batch_field_name(int i) {
    return i >= 0 && i < SF_BATCH_NFIELDS ? fields[i].name : NULL;
}
const char *sf_batch_field_dtype(int i) {
    return i >= 0 && i < SF_BATCH_NFIELDS ? fields[i].dtype : NULL;
}
const char *sf_batch_field_dims(int i) {
    return i >= 0 && i < SF_BATCH_NFIELDS ? fields[i].dims : NULL;
}

/* One staged record: where its tensors lie in the staging buffer, and its
 * fixed-size fields. */
typedef struct staged {
    size_t off; /* token_type, token_cat, token_cont, query, query_cont, policy */
    uint32_t t, q;
    float value_bins[SF_VALUE_BINS];
    float forecast[FC_N];
    uint8_t fmask[SF_FORECAST_H];
    float won, value;
    uint64_t game_seed, job_id;
    uint32_t fight_index, decision_index, turn, ascension;
    int64_t encounter_id;
    uint8_t engine_limit;
} staged;

struct sf_batch_reader {
    sf_shard_reader **shards;
    char **paths;
    size_t n_shards;
    staged *rows;
    size_t rows_cap;
    sf_buf stage;
    sf_batch_dims dims;
    int loaded;
};

void sf_batch_reader_close(sf_batch_reader *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->n_shards; i++) {
        sf_shard_reader_close(r->shards[i]);
        free(r->paths[i]);
    }
    free(r->shards);
    free(r->paths);
    free(r->rows);
    sf_buf_free(&r->stage);
    free(r);
}

int sf_batch_reader_open(const char *const *paths, size_t n_paths, sf_batch_reader **out,
                         sf_err *err) {
    *out = NULL;
    sf_batch_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->shards = calloc(n_paths ? n_paths : 1, sizeof *r->shards)) ||
        !(r->paths = calloc(n_paths ? n_paths : 1, sizeof *r->paths))) {
        if (r)
            free(r->shards);
        free(r);
        return sf_err_set(err, SF_ENOMEM, "batch reader: out of memory");
    }
    for (; r->n_shards < n_paths; r->n_shards++) {
        size_t i = r->n_shards;
        int rc = sf_shard_reader_open(paths[i], &r->shards[i], err);
        if (rc == SF_OK && !(r->paths[i] = strdup(paths[i]))) {
            sf_shard_reader_close(r->shards[i]);
            rc = sf_err_set(err, SF_ENOMEM, "batch reader: out of memory");
        }
        if (rc < 0) {
            sf_batch_reader_close(r);
            return rc;
        }
    }
    *out = r;
    return SF_OK;
}

uint64_t sf_batch_reader_shard_count(const sf_batch_reader *r, size_t s) {
    return s < r->n_shards ? sf_shard_reader_count(r->shards[s]) : 0;
}

/* A record's staged tensors, in staging order: the field each fills, and
 * whether it has a row per token (else per query). */
enum { NSEG = 6 };
static const int seg_field[NSEG] = {SF_BATCH_TOKEN_TYPE, SF_BATCH_TOKEN_CAT,  SF_BATCH_TOKEN_CONT,
                                    SF_BATCH_QUERY,      SF_BATCH_QUERY_CONT, SF_BATCH_POLICY};
static const int seg_per_token[NSEG] = {1, 1, 1, 0, 0, 0};

/* Bytes per row of each segment, for the batch's column counts. */
static void seg_widths(const sf_batch_dims *d, size_t w[NSEG]) {
    w[0] = 1;
    w[1] = 2 * (size_t)d->c;
    w[2] = 4 * (size_t)d->f;
    w[3] = 4; /* two u16 token indices */
    w[4] = 4 * (size_t)d->g;
    w[5] = 4;
}

static int stage_one(sf_batch_reader *r, size_t k, const Spirefleet__LabelRecord *rec,
                     const char *path, uint64_t index, sf_err *err) {
    const Spirefleet__Inputs *in = rec->inputs;
    uint32_t t = in->token_type->shape[0], q = in->query->shape[0];
    uint32_t c = in->token_cat->shape[1], f = in->token_cont->shape[1];
    uint32_t g = in->query_cont->shape[1];
    sf_batch_dims *d = &r->dims;
    if (k == 0) {
        d->c = c;
        d->f = f;
        d->g = g;
    } else if (c != d->c || f != d->f || g != d->g) {
        return sf_err_set(err, SF_EINVAL,
                          "%s: record %llu: %u/%u/%u token_cat/token_cont/query_cont columns, "
                          "the batch's first record has %u/%u/%u",
                          path, (unsigned long long)index, c, f, g, d->c, d->f, d->g);
    }
    size_t w[NSEG], need = 0;
    seg_widths(d, w);
    for (int i = 0; i < NSEG; i++)
        need += w[i] * (seg_per_token[i] ? t : q);
    if (sf_buf_reserve(&r->stage, need, NULL) < 0)
        return sf_err_set(err, SF_ENOMEM, "batch reader: out of memory");
    staged *s = &r->rows[k];
    s->off = r->stage.len;
    s->t = t;
    s->q = q;
    /* sizes were checked against the shapes by sf_shard_record_check */
    const void *src[NSEG] = {in->token_type->data.data, in->token_cat->data.data,
                             in->token_cont->data.data, in->query->data.data,
                             in->query_cont->data.data, rec->search->policy};
    for (int i = 0; i < NSEG; i++) {
        size_t n = w[i] * (seg_per_token[i] ? t : q);
        memcpy(r->stage.p + r->stage.len, src[i], n);
        r->stage.len += n;
    }
    if (t > d->t)
        d->t = t;
    if (q > d->q)
        d->q = q;

    const Spirefleet__Outcome *o = rec->outcome;
    memcpy(s->value_bins, o->value_bins, sizeof s->value_bins);
    memcpy(s->forecast, rec->forecast->target->data.data, sizeof s->forecast);
    memcpy(s->fmask, rec->forecast->mask->data.data, sizeof s->fmask);
    s->won = o->won ? 1.0f : 0.0f;
    s->value = o->value;
    s->engine_limit = o->engine_limit ? 1 : 0;
    const Spirefleet__LabelIds *ids = rec->ids;
    s->game_seed = ids->game_seed;
    s->job_id = ids->job_id;
    s->fight_index = ids->fight_index;
    s->decision_index = ids->decision_index;
    s->turn = ids->turn;
    s->ascension = ids->ascension;
    s->encounter_id = ids->encounter_id;
    return SF_OK;
}

int sf_batch_reader_load(sf_batch_reader *r, const uint32_t *shard, const uint64_t *record,
                         size_t n, sf_batch_dims *dims, sf_err *err) {
    r->loaded = 0;
    if (n == 0)
        return sf_err_set(err, SF_EINVAL, "batch reader: an empty batch");
    if (n > r->rows_cap) {
        staged *rows = realloc(r->rows, n * sizeof *rows);
        if (!rows)
            return sf_err_set(err, SF_ENOMEM, "batch reader: out of memory");
        r->rows = rows;
        r->rows_cap = n;
    }
    r->stage.len = 0;
    r->dims = (sf_batch_dims){.b = (uint32_t)n};
    for (size_t k = 0; k < n; k++) {
        if (shard[k] >= r->n_shards)
            return sf_err_set(err, SF_EINVAL, "batch reader: item %zu: shard %u of %zu", k,
                              shard[k], r->n_shards);
        const Spirefleet__LabelRecord *rec;
        int rc = sf_shard_reader_get(r->shards[shard[k]], record[k], &rec, err);
        if (rc == SF_OK)
            rc = stage_one(r, k, rec, r->paths[shard[k]], record[k], err);
        if (rc < 0)
            return rc;
    }
    r->loaded = 1;
    *dims = r->dims;
    return SF_OK;
}

/* Rows of `width` bytes per position, `len` of `cap` positions real: copy
 * the real ones, zero the rest. */
static uint8_t *row(uint8_t *dst, const uint8_t *src, size_t len, size_t cap, size_t width) {
    memcpy(dst, src, len * width);
    memset(dst + len * width, 0, (cap - len) * width);
    return dst + cap * width;
}

static uint8_t *mask(uint8_t *dst, size_t len, size_t cap) {
    memset(dst, 1, len);
    memset(dst + len, 0, cap - len);
    return dst + cap;
}

#define SCALAR(field, type, member)         \
    if (b[field]) {                         \
        type *v = b[field];                 \
        for (size_t k = 0; k < d->b; k++)   \
            v[k] = (type)r->rows[k].member; \
    }

int sf_batch_reader_emit(const sf_batch_reader *r, void *const *bufs, size_t n_bufs, sf_err *err) {
    if (!r->loaded)
        return sf_err_set(err, SF_ESTATE, "batch reader: no batch loaded");
    if (n_bufs > SF_BATCH_NFIELDS)
        return sf_err_set(err, SF_EINVAL, "batch reader: %zu buffers for %d fields", n_bufs,
                          SF_BATCH_NFIELDS);
    void *b[SF_BATCH_NFIELDS] = {0};
    memcpy(b, bufs, n_bufs * sizeof *b);
    const sf_batch_dims *d = &r->dims;
    size_t w[NSEG];
    seg_widths(d, w);
    uint8_t *dst[NSEG];
    for (int i = 0; i < NSEG; i++)
        dst[i] = b[seg_field[i]];
    uint8_t *tm = b[SF_BATCH_TOKEN_MASK], *qm = b[SF_BATCH_QUERY_MASK];
    for (size_t k = 0; k < d->b; k++) {
        const staged *s = &r->rows[k];
        const uint8_t *p = r->stage.p + s->off;
        for (int i = 0; i < NSEG; i++) {
            size_t len = seg_per_token[i] ? s->t : s->q, cap = seg_per_token[i] ? d->t : d->q;
            if (dst[i])
                dst[i] = row(dst[i], p, len, cap, w[i]);
            p += len * w[i];
        }
        if (tm)
            tm = mask(tm, s->t, d->t);
        if (qm)
            qm = mask(qm, s->q, d->q);
        if (b[SF_BATCH_VALUE_BINS])
            memcpy((float *)b[SF_BATCH_VALUE_BINS] + k * SF_VALUE_BINS, s->value_bins,
                   sizeof s->value_bins);
        if (b[SF_BATCH_FORECAST])
            memcpy((float *)b[SF_BATCH_FORECAST] + k * FC_N, s->forecast, sizeof s->forecast);
        if (b[SF_BATCH_FORECAST_MASK])
            memcpy((uint8_t *)b[SF_BATCH_FORECAST_MASK] + k * SF_FORECAST_H, s->fmask,
                   sizeof s->fmask);
    }
    SCALAR(SF_BATCH_WON, float, won)
    SCALAR(SF_BATCH_VALUE, float, value)
    SCALAR(SF_BATCH_N_TOKENS, int64_t, t)
    SCALAR(SF_BATCH_N_QUERIES, int64_t, q)
    SCALAR(SF_BATCH_GAME_SEED, uint64_t, game_seed)
    SCALAR(SF_BATCH_JOB_ID, uint64_t, job_id)
    SCALAR(SF_BATCH_FIGHT_INDEX, uint32_t, fight_index)
    SCALAR(SF_BATCH_DECISION_INDEX, uint32_t, decision_index)
    SCALAR(SF_BATCH_TURN, uint32_t, turn)
    SCALAR(SF_BATCH_ENCOUNTER_ID, int64_t, encounter_id)
    SCALAR(SF_BATCH_ASCENSION, uint32_t, ascension)
    SCALAR(SF_BATCH_ENGINE_LIMIT, uint8_t, engine_limit)
    return SF_OK;
}
