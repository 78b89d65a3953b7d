/* batch.c — padded training batches from many shards (batch.h).
 *
 * Opening lists every zstd frame of every shard (the block headers, read in
 * place from LMDB's map). Loading finds each record's frame, decodes the
 * frame into one of the cache's slots unless a slot holds it already (the
 * least recently used slot makes room), decodes the record from the slot
 * (one arena, reused) and copies its variable-length tensors into one
 * staging buffer, packed, with
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
    [SF_BATCH_TURN_LIMIT] = {"turn_limit", "u1", ""},
    [SF_BATCH_Q_CHOSEN] = {"q_chosen", "<f4", ""},
    [SF_BATCH_Q_SEARCHED] = {"q_searched", "?", ""},
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
    uint8_t engine_limit, turn_limit;
    float q_chosen; /* the completed-Q of the chosen move; 0 when not searched */
    uint8_t q_searched;
} staged;

/* One decoded frame. */
typedef struct slot {
    size_t frame;  /* global frame id, or SIZE_MAX when empty */
    uint64_t used; /* the load counter when last used */
    sf_buf content;
} slot;

struct sf_batch_reader {
    sf_shard_reader **shards;
    char **paths;
    size_t n_shards;
    sf_frame_ref *frames; /* every shard's frames, shard by shard, in record order */
    size_t *frame_base;   /* shard s's frames: [frame_base[s], frame_base[s+1]) */
    int32_t *slot_of;     /* per frame: its slot, or -1 */
    slot *slots;
    size_t n_slots;
    uint64_t clock, decoded;
    ZSTD_DCtx *dctx;
    sf_arena arena;
    uint64_t allocs;
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
    free(r->frames);
    free(r->frame_base);
    free(r->slot_of);
    for (size_t k = 0; r->slots && k < r->n_slots; k++)
        sf_buf_free(&r->slots[k].content);
    free(r->slots);
    ZSTD_freeDCtx(r->dctx);
    sf_arena_free(&r->arena);
    sf_buf_free(&r->stage);
    free(r);
}

/* Append shard s's frames to r->frames. */
static int list_frames(sf_batch_reader *r, size_t s, size_t *cap, sf_err *err) {
    sf_frame_ref *f;
    size_t n;
    int rc = sf_shard_reader_frames(r->shards[s], &f, &n, err);
    if (rc < 0)
        return rc;
    size_t have = r->frame_base[s];
    if (have + n > *cap) {
        size_t c = *cap ? *cap : 1024;
        while (c < have + n)
            c *= 2;
        sf_frame_ref *g = realloc(r->frames, c * sizeof *g);
        if (!g) {
            free(f);
            return sf_err_set(err, SF_ENOMEM, "batch reader: out of memory");
        }
        r->frames = g;
        *cap = c;
    }
    if (n)
        memcpy(r->frames + have, f, n * sizeof *f);
    free(f);
    r->frame_base[s + 1] = have + n;
    return SF_OK;
}

int sf_batch_reader_open(const char *const *paths, size_t n_paths, size_t cache_frames,
                         sf_batch_reader **out, sf_err *err) {
    *out = NULL;
    sf_batch_reader *r = calloc(1, sizeof *r);
    size_t np = n_paths ? n_paths : 1;
    if (cache_frames == 0)
        cache_frames = SF_BATCH_DEFAULT_CACHE_FRAMES;
    if (!r || !(r->shards = calloc(np, sizeof *r->shards)) ||
        !(r->paths = calloc(np, sizeof *r->paths)) ||
        !(r->frame_base = calloc(np + 1, sizeof *r->frame_base)) ||
        !(r->slots = calloc(cache_frames, sizeof *r->slots)) || !(r->dctx = ZSTD_createDCtx())) {
        sf_batch_reader_close(r);
        return sf_err_set(err, SF_ENOMEM, "batch reader: out of memory");
    }
    sf_arena_init(&r->arena, &r->allocs);
    r->n_slots = cache_frames;
    for (size_t k = 0; k < cache_frames; k++)
        r->slots[k].frame = SIZE_MAX;
    size_t cap = 0;
    for (; r->n_shards < n_paths; r->n_shards++) {
        size_t i = r->n_shards;
        int rc = sf_shard_reader_open(paths[i], &r->shards[i], err);
        if (rc == SF_OK && !(r->paths[i] = strdup(paths[i]))) {
            sf_shard_reader_close(r->shards[i]);
            r->shards[i] = NULL;
            rc = sf_err_set(err, SF_ENOMEM, "batch reader: out of memory");
        }
        if (rc == SF_OK && (rc = list_frames(r, i, &cap, err)) < 0) {
            sf_shard_reader_close(r->shards[i]);
            free(r->paths[i]);
            r->shards[i] = NULL;
            r->paths[i] = NULL;
        }
        if (rc < 0) {
            sf_batch_reader_close(r);
            return rc;
        }
    }
    size_t nf = r->frame_base[r->n_shards];
    if (!(r->slot_of = malloc((nf ? nf : 1) * sizeof *r->slot_of))) {
        sf_batch_reader_close(r);
        return sf_err_set(err, SF_ENOMEM, "batch reader: out of memory");
    }
    for (size_t k = 0; k < nf; k++)
        r->slot_of[k] = -1;
    *out = r;
    return SF_OK;
}

uint64_t sf_batch_reader_frames_decoded(const sf_batch_reader *r) {
    return r->decoded;
}

/* The global id of the frame of shard s holding record i (i < count). */
static size_t frame_of(const sf_batch_reader *r, size_t s, uint64_t i) {
    size_t lo = r->frame_base[s], hi = r->frame_base[s + 1] - 1;
    while (lo < hi) { /* the last frame whose first record is <= i */
        size_t mid = lo + (hi - lo + 1) / 2;
        if (r->frames[mid].first <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Record i of shard s: its bytes in a cache slot, its frame decoded into
 * the least recently used slot when no slot holds it. */
static int record_bytes(sf_batch_reader *r, size_t s, uint64_t i, const uint8_t **p, size_t *len,
                        sf_err *err) {
    uint64_t count = sf_shard_reader_count(r->shards[s]);
    if (i >= count)
        return sf_err_set(err, SF_ENOTFOUND, "%s: record %llu: out of range (%llu records)",
                          r->paths[s], (unsigned long long)i, (unsigned long long)count);
    size_t g = frame_of(r, s, i);
    const sf_frame_ref *f = &r->frames[g];
    if (i - f->first >= f->n) /* the reader's frames cover every record */
        return sf_err_set(err, SF_ECORRUPT, "%s: record %llu: in no frame", r->paths[s],
                          (unsigned long long)i);
    slot *sl;
    if (r->slot_of[g] >= 0) {
        sl = &r->slots[r->slot_of[g]];
    } else {
        size_t v = 0;
        for (size_t k = 1; k < r->n_slots && r->slots[v].frame != SIZE_MAX; k++)
            if (r->slots[k].frame == SIZE_MAX || r->slots[k].used < r->slots[v].used)
                v = k;
        sl = &r->slots[v];
        if (sl->frame != SIZE_MAX)
            r->slot_of[sl->frame] = -1;
        sl->frame = SIZE_MAX;
        int rc = sf_frame_decompress(r->dctx, f, i, &sl->content, &r->allocs, err);
        if (rc < 0)
            return sf_err_prefix(err, "%s", r->paths[s]);
        sl->frame = g;
        r->slot_of[g] = (int32_t)v;
        r->decoded++;
    }
    sl->used = ++r->clock;
    size_t off;
    sf_frame_record(f, i, sl->content.len, &off, len);
    *p = sl->content.p + off;
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
    s->turn_limit = o->turn_limit ? 1 : 0;
    /* chosen < Q = n_completed_q was checked by sf_shard_record_check */
    const Spirefleet__SearchResult *sr = rec->search;
    s->q_searched = sr->searched ? 1 : 0;
    s->q_chosen = sr->searched ? sr->completed_q[sr->chosen] : 0.0f;
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
        const uint8_t *raw = NULL;
        size_t len = 0;
        Spirefleet__LabelRecord *rec = NULL;
        int rc = record_bytes(r, shard[k], record[k], &raw, &len, err);
        if (rc == SF_OK && (rc = sf_arena_reset(&r->arena)) < 0)
            rc = sf_err_set(err, rc, "batch reader: out of memory");
        if (rc == SF_OK &&
            (rc = sf_record_decode_borrowed(raw, len, record[k], &r->arena, &rec, err)) < 0)
            sf_err_prefix(err, "%s", r->paths[shard[k]]);
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
    SCALAR(SF_BATCH_TURN_LIMIT, uint8_t, turn_limit)
    SCALAR(SF_BATCH_Q_CHOSEN, float, q_chosen)
    SCALAR(SF_BATCH_Q_SEARCHED, uint8_t, q_searched)
    return SF_OK;
}
