/* writer.c — building a shard under a temporary name and sealing it.
 *
 * Records are packed one by one; in format 2 they gather in the open frame,
 * compressed as one zstd frame once it holds frame_records records (or
 * SF_SHARD_FRAME_RAW_BYTES) and handed to the content digest (hasher.c),
 * which hashes it on a helper thread while the next frame fills the other
 * of two frame buffers; in format 1 each record is hashed inline and
 * compressed as its own frame. Frames go into the current block; a block
 * is closed once its frames reach block_bytes and queued; queued blocks go to LMDB in one write
 * transaction per txn_bytes. The environment runs with MDB_NOSYNC (the file is synced once, at
 * seal: until then it is only a temporary file) and MDB_NOLOCK (one writer owns the file). When the
 * map fills, the transaction is retried with a map twice the size, so a large shard never fails
 * with MDB_MAP_FULL. */
#define _GNU_SOURCE /* renameat2 */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <math.h>
#include <sodium.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/io.h"
#include "shard/internal.h"

typedef struct pending_block {
    size_t off, len; /* in w->pending */
    uint64_t first;
} pending_block;

/* The strings of sf_shard_info (the run and the provenance, shard.h): the
 * writer's info points at its own copies of them. */
static const size_t info_strings[] = {
    offsetof(sf_shard_info, run_id),        offsetof(sf_shard_info, model_sha256),
    offsetof(sf_shard_info, config_digest), offsetof(sf_shard_info, worker_id),
    offsetof(sf_shard_info, worker_key_id), offsetof(sf_shard_info, worker_host),
    offsetof(sf_shard_info, build_id)};
enum { INFO_STRINGS = sizeof info_strings / sizeof info_strings[0] };

static const char **info_string(sf_shard_info *info, size_t i) {
    return (const char **)((char *)info + info_strings[i]);
}

struct sf_shard_writer {
    char *path, *temp;
    char *own[INFO_STRINGS]; /* info's strings */
    sf_shard_info info;
    int level;
    uint32_t format, frame_records;
    size_t block_bytes, txn_bytes, map_size;

    MDB_env *env;
    MDB_dbi records, meta;
    ZSTD_CCtx *cctx;
    sf_sha256_ctx *sha;      /* the content digest */
    sf_frame_hasher *hasher; /* format 2: feeds sha frame by frame */

    sf_buf packed;                   /* format 1: the record being appended; gate pairs */
    sf_buf fraw;                     /* format 2: the open frame's records, uncompressed */
    sf_buf fraw_next;                /* the other frame buffer, read by the hasher */
    uint32_t f_open;                 /* records in the open frame                      */
    sf_buf frames;                   /* frame area of the open block                   */
    uint32_t *ends;                  /* frame ends of the open block                   */
    uint32_t *frame_recs, *rec_ends; /* format 2 tables of the open block */
    uint32_t m_open;                 /* closed frames in the open block               */
    uint32_t n_open;
    uint64_t open_first;
    sf_buf pending; /* closed blocks waiting for the next transaction */
    pending_block *queue;
    size_t nqueue, queue_cap;

    uint64_t count, blocks, raw_bytes, payload_bytes, seed_min, seed_max;
    int failed;

    /* a gate job's pairs (sf_shard_writer_add_gate_pair), hashed at seal */
    Spirefleet__GatePair *pairs;
    Spirefleet__GatePair **pair_ptr;
    char (*pair_enc)[SF_SHARD_GATE_ENCOUNTER_MAX];
    size_t n_pairs, pairs_cap;
};

static char *dup_or_empty(const char *s) {
    return strdup(s ? s : "");
}

static void writer_free(sf_shard_writer *w) {
    if (!w)
        return;
    if (w->env)
        mdb_env_close(w->env);
    ZSTD_freeCCtx(w->cctx);
    sf_frame_hasher_free(w->hasher); /* first: its thread may still read a frame */
    sf_sha256_free(w->sha);
    sf_buf_free(&w->packed);
    sf_buf_free(&w->frames);
    sf_buf_free(&w->fraw);
    sf_buf_free(&w->fraw_next);
    sf_buf_free(&w->pending);
    free(w->ends);
    free(w->frame_recs);
    free(w->rec_ends);
    free(w->queue);
    free(w->pairs);
    free(w->pair_ptr);
    free(w->pair_enc);
    free(w->path);
    free(w->temp);
    for (size_t i = 0; i < INFO_STRINGS; i++)
        free(w->own[i]);
    free(w);
}

static int lmdb_fail(sf_shard_writer *w, int mrc, const char *what, sf_err *err) {
    w->failed = 1;
    return sf_err_set(err, SF_EIO, "%s: LMDB %s: %s", w->temp, what, mdb_strerror(mrc));
}

int sf_shard_writer_open(const char *path, const sf_shard_info *info,
                         const sf_shard_writer_opts *opts, sf_shard_writer **out, sf_err *err) {
    *out = NULL;
    if (!path || !*path || !info)
        return sf_err_set(err, SF_EINVAL, "shard writer: path and info are required");
    if (!info->run_id || !info->run_id[0])
        return sf_err_set(err, SF_EINVAL, "%s: info.run_id is empty", path);
    /* Recorded in every label and the manifest: the canonical spelling only
     * (common.h), so one model or config has one spelling in the data. */
    if (!info->model_sha256 || (strcmp(info->model_sha256, "rollout") != 0 &&
                                !sf_sha256_hex_canonical(info->model_sha256)))
        return sf_err_set(err, SF_EINVAL,
                          "%s: info.model_sha256 must be 64 lower-case hex digits or \"rollout\"",
                          path);
    if (!sf_sha256_hex_canonical(info->config_digest))
        return sf_err_set(err, SF_EINVAL, "%s: info.config_digest must be 64 lower-case hex digits",
                          path);
    sf_shard_writer_opts o = opts ? *opts : (sf_shard_writer_opts){0};
    if (o.zstd_level == 0)
        o.zstd_level = SF_SHARD_DEFAULT_LEVEL;
    if (o.zstd_level < 1 || o.zstd_level > ZSTD_maxCLevel())
        return sf_err_set(err, SF_EINVAL, "%s: zstd level %d outside 1..%d", path, o.zstd_level,
                          ZSTD_maxCLevel());
    if (o.block_bytes == 0)
        o.block_bytes = SF_SHARD_DEFAULT_BLOCK_BYTES;
    if (o.txn_bytes == 0)
        o.txn_bytes = SF_SHARD_DEFAULT_TXN_BYTES;
    if (o.initial_map_bytes == 0)
        o.initial_map_bytes = 64u << 20;
    if (o.block_bytes > (256u << 20))
        return sf_err_set(err, SF_EINVAL, "%s: block_bytes %zu above 256 MiB", path, o.block_bytes);
    if (o.format_version == 0)
        o.format_version = SF_SHARD_FORMAT_VERSION;
    if (o.frame_records == 0)
        o.frame_records = SF_SHARD_DEFAULT_FRAME_RECORDS;
    if (o.format_version != 1 && o.format_version != 2)
        return sf_err_set(err, SF_EINVAL, "%s: format_version %u (1 or 2)", path, o.format_version);
    if (o.frame_records > SF_SHARD_MAX_BLOCK_RECORDS)
        return sf_err_set(err, SF_EINVAL, "%s: frame_records %u outside 1..%u", path,
                          o.frame_records, SF_SHARD_MAX_BLOCK_RECORDS);

    struct stat st;
    if (stat(path, &st) == 0)
        return sf_err_set(err, SF_ESTATE, "%s: already exists; a shard is never replaced", path);
    if (sodium_init() < 0)
        return sf_err_set(err, SF_EIO, "%s: libsodium failed to initialise", path);

    sf_shard_writer *w = calloc(1, sizeof *w);
    if (!w)
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
    size_t tlen = strlen(path) + 32;
    w->path = strdup(path);
    w->temp = malloc(tlen);
    w->info = *info;
    int copied = 1;
    for (size_t i = 0; i < INFO_STRINGS; i++) {
        const char **s = info_string(&w->info, i);
        copied &= (w->own[i] = dup_or_empty(*s)) != NULL;
        *s = w->own[i];
    }
    w->ends = malloc(sizeof *w->ends * SF_SHARD_MAX_BLOCK_RECORDS);
    w->frame_recs = malloc(sizeof *w->frame_recs * SF_SHARD_MAX_BLOCK_RECORDS);
    w->rec_ends = malloc(sizeof *w->rec_ends * SF_SHARD_MAX_BLOCK_RECORDS);
    w->cctx = ZSTD_createCCtx();
    if (!w->path || !w->temp || !copied || !w->ends || !w->frame_recs || !w->rec_ends || !w->cctx) {
        writer_free(w);
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
    }
    /* pid and 32 random bits: unique across processes and across writers of
     * one process; O_EXCL below makes sure no file is ever taken over. */
    snprintf(w->temp, tlen, "%s.%ld.%08x%s", path, (long)getpid(), randombytes_random(),
             SF_SHARD_TEMP_SUFFIX);
    w->level = o.zstd_level;
    w->format = o.format_version;
    w->frame_records = o.format_version == 1 ? 1 : o.frame_records;
    w->block_bytes = o.block_bytes;
    w->txn_bytes = o.txn_bytes;
    w->map_size = o.initial_map_bytes;
    int hrc = sf_sha256_new(&w->sha, err);
    if (hrc == SF_OK && w->format == 2)
        hrc = sf_frame_hasher_new(w->sha, !o.hash_inline, &w->hasher, err);
    if (hrc < 0) {
        writer_free(w);
        return sf_err_prefix(err, "%s", path);
    }

    /* Every frame carries its content size and zstd's content checksum. */
    size_t zr = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, w->level);
    if (!ZSTD_isError(zr))
        zr = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(zr))
        zr = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
    if (ZSTD_isError(zr)) {
        int rc = sf_err_set(err, SF_EINVAL, "%s: zstd: %s", path, ZSTD_getErrorName(zr));
        writer_free(w);
        return rc;
    }

    int fd = open(w->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        int rc = sf_err_set(err, SF_EIO, "%s: cannot create: %s", w->temp, strerror(errno));
        writer_free(w);
        return rc;
    }
    close(fd);
    int mrc = mdb_env_create(&w->env); /* LMDB takes the empty file as a new env */
    if (mrc == 0)
        mrc = mdb_env_set_maxdbs(w->env, 2);
    if (mrc == 0)
        mrc = mdb_env_set_mapsize(w->env, w->map_size);
    if (mrc == 0)
        mrc = mdb_env_open(w->env, w->temp, MDB_NOSUBDIR | MDB_NOLOCK | MDB_NOSYNC | MDB_NOMETASYNC,
                           0644);
    MDB_txn *txn = NULL;
    if (mrc == 0)
        mrc = mdb_txn_begin(w->env, NULL, 0, &txn);
    if (mrc == 0)
        mrc = mdb_dbi_open(txn, SF_DB_RECORDS, MDB_CREATE, &w->records);
    if (mrc == 0)
        mrc = mdb_dbi_open(txn, SF_DB_META, MDB_CREATE, &w->meta);
    if (mrc == 0) {
        mrc = mdb_txn_commit(txn);
        txn = NULL;
    }
    if (mrc != 0) {
        if (txn)
            mdb_txn_abort(txn);
        int rc =
            sf_err_set(err, SF_EIO, "%s: cannot create the shard: %s", w->temp, mdb_strerror(mrc));
        sf_shard_writer_abort(w);
        return rc;
    }
    *out = w;
    return SF_OK;
}

uint64_t sf_shard_writer_count(const sf_shard_writer *w) {
    return w->count;
}

const char *sf_shard_writer_temp_path(const sf_shard_writer *w) {
    return w->temp;
}

/* Compress `len` bytes at `src` as one zstd frame at the end of the open
 * block's frame area; returns its compressed size or a negative error. */
static int compress_frame(sf_shard_writer *w, const uint8_t *src, size_t len, size_t *csize,
                          sf_err *err) {
    size_t bound = ZSTD_compressBound(len);
    if (sf_buf_reserve(&w->frames, bound, NULL) < 0)
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", w->temp);
    size_t c = ZSTD_compress2(w->cctx, w->frames.p + w->frames.len, bound, src, len);
    if (ZSTD_isError(c)) {
        w->failed = 1;
        return sf_err_set(err, SF_EIO, "%s: record %llu: zstd: %s", w->temp,
                          (unsigned long long)w->count, ZSTD_getErrorName(c));
    }
    w->frames.len += c;
    w->payload_bytes += c;
    *csize = c;
    return SF_OK;
}

/* Format 2: hand the open frame to the content digest, compress it into the
 * open block, and open the next frame in the other buffer (the hasher
 * finished with that one before this submit returned). */
static int close_frame(sf_shard_writer *w, sf_err *err) {
    if (w->f_open == 0)
        return SF_OK;
    sf_frame_hasher_submit(w->hasher, w->fraw.p, w->rec_ends + (w->n_open - w->f_open), w->f_open);
    size_t csize;
    int rc = compress_frame(w, w->fraw.p, w->fraw.len, &csize, err);
    if (rc < 0) {
        w->failed = 1;
        return rc;
    }
    w->ends[w->m_open] = (uint32_t)w->frames.len;
    w->frame_recs[w->m_open] = w->n_open;
    w->m_open++;
    sf_buf t = w->fraw;
    w->fraw = w->fraw_next;
    w->fraw_next = t;
    w->fraw.len = 0;
    w->f_open = 0;
    return SF_OK;
}

/* Close the open block (its open frame first): header, CRC and frames go to
 * the pending queue. */
static int close_block(sf_shard_writer *w, sf_err *err) {
    int rc = w->format == 2 ? close_frame(w, err) : SF_OK;
    if (rc < 0)
        return rc;
    if (w->n_open == 0)
        return SF_OK;
    if (w->nqueue == w->queue_cap) {
        size_t cap = w->queue_cap ? 2 * w->queue_cap : 16;
        pending_block *q = realloc(w->queue, cap * sizeof *q);
        if (!q)
            return sf_err_set(err, SF_ENOMEM, "%s: out of memory", w->temp);
        w->queue = q;
        w->queue_cap = cap;
    }
    size_t m = w->format == 2 ? w->m_open : w->n_open;
    size_t hdr = w->format == 2 ? 20 + 8 * m + 4 * (size_t)w->n_open : 16 + 4 * m;
    size_t len = hdr + 4 + w->frames.len;
    if (sf_buf_reserve(&w->pending, len, NULL) < 0)
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", w->temp);
    uint8_t *v = w->pending.p + w->pending.len;
    sf_put_le32(v, w->format == 2 ? SF_BLOCK_MAGIC_V2 : SF_BLOCK_MAGIC);
    sf_put_le32(v + 4, w->n_open);
    sf_put_le64(v + 8, w->open_first);
    uint8_t *t = v + 16;
    if (w->format == 2) {
        sf_put_le32(t, (uint32_t)m);
        t += 4;
        for (size_t j = 0; j < m; j++, t += 4)
            sf_put_le32(t, w->frame_recs[j]);
    }
    for (size_t j = 0; j < m; j++, t += 4)
        sf_put_le32(t, w->ends[j]);
    if (w->format == 2)
        for (uint32_t k = 0; k < w->n_open; k++, t += 4)
            sf_put_le32(t, w->rec_ends[k]);
    sf_put_le32(v + hdr, sf_crc32(v, hdr));
    memcpy(v + hdr + 4, w->frames.p, w->frames.len);
    w->queue[w->nqueue++] = (pending_block){w->pending.len, len, w->open_first};
    w->pending.len += len;
    w->frames.len = 0;
    w->n_open = 0;
    w->m_open = 0;
    return SF_OK;
}

/* Write the queued blocks (and, at seal, the manifest) in one transaction.
 * On MDB_MAP_FULL the transaction is aborted, the map doubled and the whole
 * batch written again; the queue is kept until the commit succeeds. */
static int flush(sf_shard_writer *w, const MDB_val *manifest, sf_err *err) {
    if (w->nqueue == 0 && !manifest)
        return SF_OK;
    for (int attempt = 0;; attempt++) {
        MDB_txn *txn = NULL;
        int mrc = mdb_txn_begin(w->env, NULL, 0, &txn);
        if (mrc != 0)
            return lmdb_fail(w, mrc, "txn_begin", err);
        for (size_t k = 0; k < w->nqueue && mrc == 0; k++) {
            uint8_t kb[8];
            sf_put_be64(kb, w->queue[k].first);
            MDB_val key = {8, kb};
            MDB_val val = {w->queue[k].len, w->pending.p + w->queue[k].off};
            mrc = mdb_put(txn, w->records, &key, &val, MDB_APPEND);
        }
        if (mrc == 0 && manifest) {
            MDB_val key = {strlen(SF_MANIFEST_KEY), (void *)SF_MANIFEST_KEY};
            MDB_val val = *manifest;
            mrc = mdb_put(txn, w->meta, &key, &val, 0);
        }
        if (mrc == 0)
            mrc = mdb_txn_commit(txn);
        else
            mdb_txn_abort(txn);
        if (mrc == 0)
            break;
        if (mrc != MDB_MAP_FULL || attempt >= 40)
            return lmdb_fail(w, mrc, "write", err);
        size_t grown = w->map_size * 2;
        mrc = mdb_env_set_mapsize(w->env, grown);
        if (mrc != 0)
            return lmdb_fail(w, mrc, "set_mapsize", err);
        w->map_size = grown;
    }
    w->blocks += w->nqueue;
    w->nqueue = 0;
    w->pending.len = 0;
    return SF_OK;
}

static int ids_match(const sf_shard_writer *w, const Spirefleet__LabelIds *ids, sf_err *err) {
    const sf_shard_info *in = &w->info;
    if (strcmp(ids->run_id, in->run_id) != 0)
        return sf_err_set(err, SF_EINVAL, "ids.run_id '%.64s' is not the shard's '%.64s'",
                          ids->run_id, in->run_id);
    if (ids->job_id != in->job_id)
        return sf_err_set(err, SF_EINVAL, "ids.job_id %llu is not the shard's %llu",
                          (unsigned long long)ids->job_id, (unsigned long long)in->job_id);
    if (ids->engine_version != in->engine_version ||
        ids->tokenizer_version != in->tokenizer_version)
        return sf_err_set(
            err, SF_EINVAL, "ids: engine/tokenizer version %u/%u, the shard's are %u/%u",
            ids->engine_version, ids->tokenizer_version, in->engine_version, in->tokenizer_version);
    if (strcmp(ids->model_sha256, in->model_sha256) != 0)
        return sf_err_set(err, SF_EINVAL, "ids.model_sha256 '%.64s' is not the shard's '%.64s'",
                          ids->model_sha256, in->model_sha256);
    if (strcmp(ids->config_digest, in->config_digest) != 0)
        return sf_err_set(err, SF_EINVAL, "ids.config_digest '%.64s' is not the shard's '%.64s'",
                          ids->config_digest, in->config_digest);
    return SF_OK;
}

int sf_shard_writer_append(sf_shard_writer *w, const Spirefleet__LabelRecord *rec, sf_err *err) {
    if (!w)
        return sf_err_set(err, SF_EINVAL, "shard writer: NULL");
    if (w->failed)
        return sf_err_set(err, SF_ESTATE, "%s: the writer failed earlier; abort it", w->temp);
    unsigned long long ix = (unsigned long long)w->count;
    int rc = sf_shard_record_check(rec, err);
    if (rc == SF_OK)
        rc = ids_match(w, rec->ids, err);
    if (rc < 0) {
        sf_err_prefix(err, "%s: record %llu", w->temp, ix);
        return rc;
    }
    size_t size = spirefleet__label_record__get_packed_size(rec);
    if (size > SF_SHARD_MAX_RECORD_BYTES)
        return sf_err_set(err, SF_EINVAL, "%s: record %llu: %zu bytes packed, limit %u", w->temp,
                          ix, size, SF_SHARD_MAX_RECORD_BYTES);
    size_t len;
    if (w->format == 1) {
        w->packed.len = 0;
        if (sf_buf_reserve(&w->packed, size, NULL) < 0)
            return sf_err_set(err, SF_ENOMEM, "%s: out of memory", w->temp);
        len = w->packed.len = spirefleet__label_record__pack(rec, w->packed.p);
        size_t csize;
        if ((rc = compress_frame(w, w->packed.p, len, &csize, err)) < 0)
            return rc;
        w->ends[w->n_open] = (uint32_t)w->frames.len;
    } else {
        /* a frame's content stays within SF_SHARD_FRAME_RAW_BYTES, or is one
         * record (at most SF_SHARD_MAX_RECORD_BYTES); the record is packed
         * in place at the frame's end */
        if (w->f_open > 0 && w->fraw.len + size > SF_SHARD_FRAME_RAW_BYTES &&
            (rc = close_frame(w, err)) < 0)
            return rc;
        if (sf_buf_reserve(&w->fraw, size, NULL) < 0)
            return sf_err_set(err, SF_ENOMEM, "%s: out of memory", w->temp);
        len = spirefleet__label_record__pack(rec, w->fraw.p + w->fraw.len);
        w->fraw.len += len;
        w->rec_ends[w->n_open] = (uint32_t)w->fraw.len;
        w->f_open++;
    }
    /* Only now is the record accepted: account for it (format 2 hashes it
     * with its frame). */
    if (w->format == 1)
        sf_shard_digest_add(w->sha, w->packed.p, len);
    if (w->n_open == 0)
        w->open_first = w->count;
    w->n_open++;
    uint64_t seed = rec->ids->game_seed;
    if (w->count == 0 || seed < w->seed_min)
        w->seed_min = seed;
    if (w->count == 0 || seed > w->seed_max)
        w->seed_max = seed;
    w->count++;
    w->raw_bytes += len;

    if (w->format == 2 &&
        (w->f_open == w->frame_records || w->fraw.len >= SF_SHARD_FRAME_RAW_BYTES) &&
        (rc = close_frame(w, err)) < 0)
        return rc;
    if (w->frames.len >= w->block_bytes || w->n_open == SF_SHARD_MAX_BLOCK_RECORDS) {
        if ((rc = close_block(w, err)) < 0) {
            w->failed = 1;
            return rc;
        }
        if (w->pending.len >= w->txn_bytes && (rc = flush(w, NULL, err)) < 0)
            return rc;
    }
    return SF_OK;
}

const char *sf_shard_gate_class_name(uint32_t class_id) {
    static const char *const names[SF_SHARD_GATE_CLASSES] = {"weak", "strong", "elite", "boss",
                                                             "gauntlet"};
    return class_id < SF_SHARD_GATE_CLASSES ? names[class_id] : "?";
}

int sf_shard_writer_add_gate_pair(sf_shard_writer *w, const Spirefleet__GatePair *pair,
                                  sf_err *err) {
    if (!w || !pair)
        return sf_err_set(err, SF_EINVAL, "gate pair: NULL");
    if (w->failed)
        return sf_err_set(err, SF_ESTATE, "%s: the writer failed earlier", w->temp);
    const char *enc = pair->encounter ? pair->encounter : "";
    if (strlen(enc) >= SF_SHARD_GATE_ENCOUNTER_MAX || pair->class_id >= SF_SHARD_GATE_CLASSES ||
        !isfinite(pair->y_champion) || !isfinite(pair->y_candidate) || pair->y_champion < 0 ||
        pair->y_champion > 1 || pair->y_candidate < 0 || pair->y_candidate > 1)
        return sf_err_set(err, SF_EINVAL,
                          "%s: gate pair of seed %llu: class %u, encounter of %zu bytes, scores "
                          "%g / %g (class 0..4, scores in [0, 1])",
                          w->temp, (unsigned long long)pair->game_seed, pair->class_id, strlen(enc),
                          (double)pair->y_champion, (double)pair->y_candidate);
    if (w->n_pairs > 0 && pair->game_seed <= w->pairs[w->n_pairs - 1].game_seed)
        return sf_err_set(err, SF_EINVAL,
                          "%s: gate pair of seed %llu after seed %llu: pairs go "
                          "in seed order, one per seed",
                          w->temp, (unsigned long long)pair->game_seed,
                          (unsigned long long)w->pairs[w->n_pairs - 1].game_seed);
    if (w->n_pairs == w->pairs_cap) {
        size_t cap = w->pairs_cap ? 2 * w->pairs_cap : 64;
        Spirefleet__GatePair *p = realloc(w->pairs, cap * sizeof *p);
        if (p)
            w->pairs = p;
        char(*e)[SF_SHARD_GATE_ENCOUNTER_MAX] = p ? realloc(w->pair_enc, cap * sizeof *e) : NULL;
        if (e)
            w->pair_enc = e;
        if (!p || !e)
            return sf_err_set(err, SF_ENOMEM, "%s: out of memory", w->temp);
        w->pairs_cap = cap;
    }
    Spirefleet__GatePair *q = &w->pairs[w->n_pairs];
    *q = *pair;
    snprintf(w->pair_enc[w->n_pairs], SF_SHARD_GATE_ENCOUNTER_MAX, "%s", enc);
    q->encounter = NULL; /* pointed at pair_enc when the manifest is built */
    uint64_t seed = pair->game_seed;
    if ((w->count == 0 && w->n_pairs == 0) || seed < w->seed_min)
        w->seed_min = seed;
    if ((w->count == 0 && w->n_pairs == 0) || seed > w->seed_max)
        w->seed_max = seed;
    w->n_pairs++;
    return SF_OK;
}

uint64_t sf_shard_writer_gate_pairs(const sf_shard_writer *w) {
    return w->n_pairs;
}

void sf_shard_writer_abort(sf_shard_writer *w) {
    if (!w)
        return;
    if (w->env) {
        mdb_env_close(w->env);
        w->env = NULL;
    }
    unlink(w->temp);
    writer_free(w);
}

/* Pages holding no record-block bytes: everything but the overflow runs of
 * the `records` values. Those are the pages LMDB walks to find a value, and
 * the ones a reader checks before it lets LMDB near the file. */
static int structure_pages(sf_shard_writer *w, uint64_t npages, uint32_t psize, uint32_t **out,
                           size_t *nout, sf_err *err) {
    uint8_t *is_data = calloc(npages ? npages : 1, 1);
    if (!is_data)
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", w->temp);
    MDB_txn *txn = NULL;
    MDB_cursor *cur = NULL;
    int mrc = mdb_txn_begin(w->env, NULL, MDB_RDONLY, &txn);
    if (mrc == 0)
        mrc = mdb_cursor_open(txn, w->records, &cur);
    MDB_val k, v;
    for (int op = MDB_FIRST; mrc == 0; op = MDB_NEXT) {
        mrc = mdb_cursor_get(cur, &k, &v, op);
        if (mrc != 0)
            break;
        const uint8_t *map = sf_lmdb_map_base(v.mv_data, psize, npages);
        if (!map)
            continue; /* unknown layout: leave its pages to the open-time check */
        uint64_t off = (uint64_t)((const uint8_t *)v.mv_data - map);
        /* An overflow value starts right after its first page's header; an
         * inline value (a tiny last block) lives inside a leaf page. */
        if (off % psize != SF_LMDB_PAGEHDR)
            continue;
        uint64_t first = off / psize, last = (off + v.mv_size - 1) / psize;
        for (uint64_t p = first; p <= last && p < npages; p++)
            is_data[p] = 1;
    }
    if (cur)
        mdb_cursor_close(cur);
    if (txn)
        mdb_txn_abort(txn);
    if (mrc != MDB_NOTFOUND) {
        free(is_data);
        return lmdb_fail(w, mrc, "reading back the records", err);
    }
    size_t n = 0;
    for (uint64_t p = 0; p < npages; p++)
        n += !is_data[p];
    uint32_t *list = malloc(sizeof *list * (n ? n : 1));
    if (!list) {
        free(is_data);
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", w->temp);
    }
    n = 0;
    for (uint64_t p = 0; p < npages; p++)
        if (!is_data[p])
            list[n++] = (uint32_t)p;
    free(is_data);
    *out = list;
    *nout = n;
    return SF_OK;
}

static int build_manifest(sf_shard_writer *w, const Spirefleet__JobStats *stats,
                          const sf_shard_seal_hooks *hooks, uint8_t digest[32], sf_buf *out,
                          sf_err *err) {
    Spirefleet__ShardManifest m = SPIREFLEET__SHARD_MANIFEST__INIT;
    m.format_version = w->format;
    m.schema_version =
        hooks && hooks->schema_version ? hooks->schema_version : SF_LABEL_SCHEMA_VERSION;
    m.run_id = (char *)w->info.run_id;
    m.job_id = w->info.job_id;
    m.seed_first = w->seed_min;
    m.seed_last = w->seed_max;
    m.record_count = w->count;
    m.block_count = w->blocks + w->nqueue;
    m.engine_version = w->info.engine_version;
    m.tokenizer_version = w->info.tokenizer_version;
    m.model_sha256 = (char *)w->info.model_sha256;
    m.config_digest = (char *)w->info.config_digest;
    m.worker_id = (char *)w->info.worker_id;
    m.worker_key_id = (char *)w->info.worker_key_id;
    m.worker_host = (char *)w->info.worker_host;
    m.build_id = (char *)w->info.build_id;
    m.created_unix = w->info.created_unix ? w->info.created_unix : sf_wall_s();
    m.content_digest.data = digest;
    m.content_digest.len = SF_SHARD_DIGEST_BYTES;
    m.compression = "zstd";
    m.compression_level = w->level;
    m.raw_bytes = w->raw_bytes;
    m.payload_bytes = w->payload_bytes;
    m.stats = (Spirefleet__JobStats *)stats;
    if (w->n_pairs) {
        w->pair_ptr = calloc(w->n_pairs, sizeof *w->pair_ptr);
        if (!w->pair_ptr)
            return sf_err_set(err, SF_ENOMEM, "%s: out of memory", w->temp);
        for (size_t i = 0; i < w->n_pairs; i++) {
            w->pairs[i].encounter = w->pair_enc[i];
            w->pair_ptr[i] = &w->pairs[i];
        }
        m.n_gate_pairs = w->n_pairs;
        m.gate_pairs = w->pair_ptr;
    }
    size_t n = spirefleet__shard_manifest__get_packed_size(&m);
    if (n > SF_MANIFEST_MAX_BYTES)
        return sf_err_set(err, SF_EINVAL, "%s: manifest of %zu bytes (job stats too large)",
                          w->temp, n);
    out->len = 0;
    if (sf_buf_reserve(out, n, NULL) < 0)
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", w->temp);
    out->len = spirefleet__shard_manifest__pack(&m, out->p);
    return SF_OK;
}

int sf_shard_writer_seal_hooked(sf_shard_writer *w, const Spirefleet__JobStats *stats,
                                const sf_shard_seal_hooks *hooks,
                                uint8_t digest_out[SF_SHARD_DIGEST_BYTES], sf_err *err) {
    if (!w)
        return sf_err_set(err, SF_EINVAL, "shard writer: NULL");
    int rc = SF_OK;
    sf_buf mbuf = {0};
    uint32_t *spages = NULL;
    size_t nspages = 0;
    int fd = -1;
    uint8_t digest[SF_SHARD_DIGEST_BYTES];
    if (w->failed) {
        rc = sf_err_set(err, SF_ESTATE, "%s: the writer failed earlier; not sealing", w->temp);
        goto fail;
    }
    /* every record in the digest before the pairs */
    if (w->format == 2) {
        if ((rc = close_frame(w, err)) < 0)
            goto fail;
        sf_frame_hasher_wait(w->hasher);
    }
    for (size_t i = 0; i < w->n_pairs && rc == SF_OK; i++) {
        w->pairs[i].encounter = w->pair_enc[i];
        rc = sf_shard_hash_gate_pair(w->sha, &w->pairs[i], &w->packed, err);
    }
    if (rc < 0)
        goto fail;
    if ((rc = sf_sha256_final(w->sha, digest, err)) < 0)
        goto fail;
    if ((rc = close_block(w, err)) < 0)
        goto fail;
    if ((rc = build_manifest(w, stats, hooks, digest, &mbuf, err)) < 0)
        goto fail;
    MDB_val mval = {mbuf.len, mbuf.p};
    if ((rc = flush(w, hooks && hooks->omit_manifest ? NULL : &mval, err)) < 0)
        goto fail;
    /* The one sync that makes the data durable before anything names it. */
    int mrc = mdb_env_sync(w->env, 1);
    if (mrc != 0) {
        rc = lmdb_fail(w, mrc, "sync", err);
        goto fail;
    }
    MDB_envinfo info;
    MDB_stat st;
    if ((mrc = mdb_env_info(w->env, &info)) != 0 || (mrc = mdb_env_stat(w->env, &st)) != 0) {
        rc = lmdb_fail(w, mrc, "env_info", err);
        goto fail;
    }
    uint32_t psize = st.ms_psize;
    uint64_t npages = (uint64_t)info.me_last_pgno + 1;
    if ((rc = structure_pages(w, npages, psize, &spages, &nspages, err)) < 0)
        goto fail;
    mdb_env_close(w->env);
    w->env = NULL;

    fd = open(w->temp, O_RDWR | O_CLOEXEC);
    struct stat fst;
    if (fd < 0 || fstat(fd, &fst) != 0) {
        rc = sf_err_set(err, SF_EIO, "%s: reopening to seal: %s", w->temp, strerror(errno));
        goto fail;
    }
    /* LMDB writes whole pages and never past its last page. */
    if ((uint64_t)fst.st_size != npages * psize) {
        rc = sf_err_set(err, SF_EFORMAT, "%s: %lld bytes on disk, LMDB reports %llu pages of %u",
                        w->temp, (long long)fst.st_size, (unsigned long long)npages, psize);
        goto fail;
    }
    if ((rc = sf_trailer_write(fd, npages * psize, psize, spages, nspages, err)) < 0) {
        sf_err_prefix(err, "%s", w->temp);
        goto fail;
    }
    close(fd);
    fd = -1;
    if (renameat2(AT_FDCWD, w->temp, AT_FDCWD, w->path, RENAME_NOREPLACE) != 0) {
        int e = errno;
        rc = sf_err_set(err, e == EEXIST ? SF_ESTATE : SF_EIO,
                        "%s: cannot rename the sealed shard into place: %s", w->path,
                        e == EEXIST ? "a shard of that name already exists" : strerror(e));
        goto fail;
    }
    rc = sf_fsync_parent(w->path, err);
    if (rc == SF_OK && digest_out)
        memcpy(digest_out, digest, sizeof digest);
    sf_buf_free(&mbuf);
    free(spages);
    writer_free(w);
    return rc;

fail:
    if (fd >= 0)
        close(fd);
    sf_buf_free(&mbuf);
    free(spages);
    sf_shard_writer_abort(w);
    return rc;
}

int sf_shard_writer_seal(sf_shard_writer *w, const Spirefleet__JobStats *stats,
                         uint8_t digest[SF_SHARD_DIGEST_BYTES], sf_err *err) {
    return sf_shard_writer_seal_hooked(w, stats, NULL, digest, err);
}
