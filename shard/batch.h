/*
 * batch.h — padded training batches assembled in C from many shards, for
 * trainers (docs/trainer.md "Batch reader"); Python reaches it through
 * ctypes over libsfbatch.so (spirefleet.batch).
 *
 * What it is
 *   A batch reader holds one shard reader per shard and a cache of decoded
 *   zstd frames (a frame holds up to 16 consecutive records in shard
 *   format 2). A batch is named by (shard, record) pairs, in the caller's
 *   order (ShardDataset's deterministic frame-aware shuffle, so both
 *   readers give the same batches, and each frame is decoded once an epoch
 *   when the cache holds the shuffle's window). Loading decodes and checks
 *   each record (block CRC, zstd checksum, schema, the label checks, as
 *   sf_shard_reader_get) and stages its variable-length tensors; emitting writes every field of the
 * batch into caller-provided contiguous buffers, padded to the batch's longest token list T and
 *   query list Q exactly as spirefleet.pad_batch pads: zeros past a
 *   record's length, masks marking real tokens and queries.
 *
 * Fields
 *   The layout of each field is the table below (sf_batch_field_*): its
 *   name (pad_batch's key, and the label ids a trainer filters on), its
 *   numpy dtype string and its dimensions after the leading B: "T" and "Q"
 *   the batch's padded lengths, "C", "F", "G" the records' token_cat,
 *   token_cont and query_cont columns, digits a fixed size (the label
 *   contract's 21 value bins, SF_FORECAST_H x SF_FORECAST_COLS forecasts).
 *   Python sizes its buffers from this table; nothing else lists the
 *   fields.
 *
 * Allocation and threading
 *   Opening allocates the readers and the frame list; loading grows the
 *   staging buffers and cache slots to the largest batch and frame seen
 *   and then allocates nothing (no per-record allocation once warm). One thread at a time per
 * reader.
 *
 * Errors
 *   SF_OK or a negative SF_E* code with a message that starts with the
 *   shard's path and names the record (shard.h's codes), or SF_EINVAL for a
 *   shard or record index out of range and for records of one batch whose
 *   column counts differ.
 */
#ifndef SF_SHARD_BATCH_H
#define SF_SHARD_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* The fields, in the order of the buffer array sf_batch_reader_emit takes. */
enum {
    SF_BATCH_TOKEN_TYPE = 0, /* u1   [B,T]    SF_TOK_*; 0 = padding           */
    SF_BATCH_TOKEN_CAT,      /* <u2  [B,T,C]  categorical ids                 */
    SF_BATCH_TOKEN_CONT,     /* <f4  [B,T,F]  continuous features             */
    SF_BATCH_TOKEN_MASK,     /* ?    [B,T]    1 for a real token              */
    SF_BATCH_QUERY,          /* <u2  [B,Q,2]  token indices of each query     */
    SF_BATCH_QUERY_CONT,     /* <f4  [B,Q,G]                                  */
    SF_BATCH_QUERY_MASK,     /* ?    [B,Q]    1 for a legal action            */
    SF_BATCH_POLICY,         /* <f4  [B,Q]    search policy; 0 on padding     */
    SF_BATCH_VALUE_BINS,     /* <f4  [B,21]   outcome.value_bins              */
    SF_BATCH_FORECAST,       /* <f4  [B,4,5]  forecast.target                 */
    SF_BATCH_FORECAST_MASK,  /* u1   [B,4]    forecast.mask                   */
    SF_BATCH_WON,            /* <f4  [B]      outcome.won as 0/1              */
    SF_BATCH_VALUE,          /* <f4  [B]      outcome.value                   */
    SF_BATCH_N_TOKENS,       /* <i8  [B]      T of the record                 */
    SF_BATCH_N_QUERIES,      /* <i8  [B]      Q of the record                 */
    SF_BATCH_GAME_SEED,      /* <u8  [B]      ids.game_seed                   */
    SF_BATCH_JOB_ID,         /* <u8  [B]      ids.job_id                      */
    SF_BATCH_FIGHT_INDEX,    /* <u4  [B]      ids.fight_index                 */
    SF_BATCH_DECISION_INDEX, /* <u4  [B]      ids.decision_index              */
    SF_BATCH_TURN,           /* <u4  [B]      ids.turn                        */
    SF_BATCH_ENCOUNTER_ID,   /* <i8  [B]      ids.encounter_id                */
    SF_BATCH_ASCENSION,      /* <u4  [B]      ids.ascension                   */
    SF_BATCH_ENGINE_LIMIT,   /* u1   [B]      outcome.engine_limit            */
    SF_BATCH_TURN_LIMIT,     /* u1   [B]      outcome.turn_limit              */
    SF_BATCH_Q_CHOSEN,       /* <f4  [B]      search.completed_q[chosen]; 0
                              *               when not searched             */
    SF_BATCH_Q_SEARCHED,     /* ?    [B]      search.searched                 */
    SF_BATCH_NFIELDS
};

/* The table: name, numpy dtype string ("u1", "<u2", "<f4", "?", ...) and
 * dimensions after B ("T,C", "21", "" for a scalar per record). NULL out
 * of range. Static storage. */
int sf_batch_field_count(void);
const char *sf_batch_field_name(int field);
const char *sf_batch_field_dtype(int field);
const char *sf_batch_field_dims(int field);

/* The shape of the batch last loaded. */
typedef struct sf_batch_dims {
    uint32_t b;       /* records                                     */
    uint32_t t, q;    /* longest token list and query list            */
    uint32_t c, f, g; /* token_cat, token_cont, query_cont columns    */
} sf_batch_dims;

typedef struct sf_batch_reader sf_batch_reader;

/* Decoded zstd frames the reader keeps when the caller names none. */
#define SF_BATCH_DEFAULT_CACHE_FRAMES 256

/* Open the n_paths shards (sealed, each checked as sf_shard_reader_open
 * does) and list their zstd frames (every block header is read and
 * checked). `cache_frames` (0: SF_BATCH_DEFAULT_CACHE_FRAMES) decoded
 * frames are kept, least recently used replaced first: give at least the
 * shuffle window's frames (spirefleet.ShardDataset's `window`) and every
 * frame is decoded once per epoch. Memory: cache_frames x the largest
 * frame's content (16 records, ~35-70 KB). Errors: those of
 * sf_shard_reader_open or of reading a block for the first shard that
 * fails, SF_ENOMEM; *out is then NULL. */
int sf_batch_reader_open(const char *const *paths, size_t n_paths, size_t cache_frames,
                         sf_batch_reader **out, sf_err *err);

/* zstd frames decompressed since open (a frame decoded once and then read
 * from the cache counts once). */
uint64_t sf_batch_reader_frames_decoded(const sf_batch_reader *r);

void sf_batch_reader_close(sf_batch_reader *r);

/* Records in shard s (0 when s is out of range). */
uint64_t sf_batch_reader_shard_count(const sf_batch_reader *r, size_t s);

/* Load the n records (shard[k], record[k]), k = 0..n-1, in that order:
 * decode (each frame from the cache, or decompressed into it), check and
 * stage them, and write the batch's shape to *dims. n >= 1. Errors:
 * SF_EINVAL for a shard out of range or a record whose column counts differ
 * from the first's; SF_ENOTFOUND for a record out of range; SF_ECORRUPT
 * (frame checks, as the shard reader's) and the record decoder's errors,
 * naming the shard and the record. */
int sf_batch_reader_load(sf_batch_reader *r, const uint32_t *shard, const uint64_t *record,
                         size_t n, sf_batch_dims *dims, sf_err *err);

/* Write the loaded batch: bufs[i] (i < n_bufs, field i of the table) must
 * hold B x its dimensions of its dtype, C-contiguous; NULL skips the field.
 * Every byte of a given buffer is written (padding included). SF_ESTATE
 * before a successful load; SF_EINVAL for n_bufs > SF_BATCH_NFIELDS. */
int sf_batch_reader_emit(const sf_batch_reader *r, void *const *bufs, size_t n_bufs, sf_err *err);

#endif
