/*
 * shard.h — label shards: zstd-compressed LMDB files with a sealed manifest.
 *
 * What it is
 *   Every searched decision becomes one LabelRecord (proto/label.proto). A
 *   job's records go into one shard: a single LMDB file (MDB_NOSUBDIR) that is
 *   written under a temporary name, sealed, and renamed into place. Once
 *   sealed it never changes. docs/format.md is the byte-level reference; the
 *   short version:
 *
 *   - `records` database: key = index of the block's first record, u64
 *     big-endian; value = a block of consecutive records in zstd frames of
 *     up to 16 consecutive records each (format 2; format 1, still read:
 *     one frame per record), with zstd's content checksum, behind frame and
 *     record offset tables guarded by a CRC-32. Blocks are about SF_SHARD_DEFAULT_BLOCK_BYTES of
 * compressed data, so LMDB's overflow pages are nearly full and the file stays within 1.15x the
 * compressed payload (a value of 2-4 KB would take a whole 4 KB overflow run of its own and double
 * the file). Random access to record i reads one LMDB value and decompresses the frame holding it
 * (16 records in format 2).
 *   - `meta` database: key "manifest" = a ShardManifest: run, job, seed
 *     range, record count, versions, model and config digests, worker,
 *     creation time, job statistics, and the content digest: SHA-256 over
 *     the uncompressed records in index order (each preceded by its length
 *     as u64 little-endian). The digest does not depend on the compression
 *     level, the block layout, the worker or the time.
 *   - seal trailer, appended after LMDB's last page: a CRC-32 of every page,
 *     the list of LMDB structure pages (B-tree, meta, free list) and a
 *     64-byte footer. Readers check the footer and every structure page
 *     before LMDB touches the file, so a damaged or truncated file is refused
 *     with an error instead of a crash; sf_shard_verify() checks every page.
 *
 * Invariants
 *   - A file without a valid seal trailer is never read: an unsealed
 *     temporary file, a truncated file, a file without a manifest and a file
 *     of an unknown schema version each get their own error, naming the file.
 *   - A writer that dies leaves only its temporary file (`<path>.*.tmp`),
 *     never a file at the final path. Sealing never replaces an existing
 *     shard. No reader opens a *.tmp file, even a sealed one (its writer
 *     may have died between sealing and renaming): SF_ESTATE.
 *   - Determinism: the same records appended in the same order give the same
 *     content digest, whatever the compression level or block size.
 *
 * Allocation and threading
 *   Writers and readers are opaque objects owned by the caller; each is used
 *   by one thread at a time (several readers of one file, in one or several
 *   processes, are fine: sealed files are read-only and opened without a lock
 *   file). A reader allocates nothing per record once its buffers have grown
 *   to the largest frame and record it has read. Nothing here keeps global
 *   state.
 *
 * Errors
 *   Functions that can fail return SF_OK or a negative SF_E* code
 *   (common/common.h) and fill the optional `sf_err *` with a message that
 *   starts with the file and names the record, block, page or field at fault:
 *     SF_ENOTFOUND  the file (or a record index) does not exist
 *     SF_ESTATE     the file is not sealed (a writer's temporary file)
 *     SF_EFORMAT    truncated, not a shard, or bytes that do not decode
 *     SF_ECORRUPT   a checksum or digest mismatch, a missing manifest, or
 *                   contents that disagree with the manifest
 *     SF_EVERSION   an unknown shard format or label schema version
 *     SF_EINVAL     a bad argument, or a record that breaks the format rules
 *     SF_EIO        an operating-system or LMDB call failed
 */
#ifndef SF_SHARD_H
#define SF_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "label/label.h"
#include "proto/label.pb-c.h"

/* ---------------------------------------------------------------------------
 * Format constants
 * ------------------------------------------------------------------------- */

/* LabelRecord.schema_version and ShardManifest.schema_version:
 * SF_LABEL_SCHEMA_VERSION of the label contract (label/label.h), the only
 * one this code writes and reads. */
/* ShardManifest.format_version: the block layout and seal trailer. 2 (the
 * writer's): up to SF_SHARD_DEFAULT_FRAME_RECORDS consecutive records per
 * zstd frame; 1: every record its own frame. Readers read both. */
#define SF_SHARD_FORMAT_VERSION 2

/* The oldest format_version readers still read. */
#define SF_SHARD_FORMAT_VERSION_MIN 1

/* The bytes of the file (docs/format.md; shard/internal.h draws them): the
 * magic of a records block of format 1 and 2 (u32 little-endian), the seal
 * trailer's magic, version and footer size, the two LMDB databases and the
 * manifest's key in `meta`. Python's reader takes them from the generated
 * spirefleet/facts.py. */
#define SF_BLOCK_MAGIC     0x31424653u /* "SFB1" little-endian: format 1 */
#define SF_BLOCK_MAGIC_V2  0x32424653u /* "SFB2" little-endian: format 2 */
#define SF_TRAILER_MAGIC   "SFSEAL01"
#define SF_TRAILER_VERSION 1u
#define SF_TRAILER_FOOTER  64u
#define SF_MANIFEST_KEY    "manifest"
#define SF_DB_RECORDS      "records"
#define SF_DB_META         "meta"

#define SF_SHARD_SUFFIX      ".shard" /* sealed shards in a directory         */
#define SF_SHARD_KEY_ID_MAX  16       /* a worker key id (common/zsec.h), hex      */
#define SF_SHARD_TEMP_SUFFIX ".tmp"   /* a writer's temporary file            */
#define SF_SHARD_NAME_MAX    255      /* a shard's file name, bytes           */

/* The name of job `job_id`'s shard in run `run_id`: "<run>-job<job, 6+
 * digits>.shard" (the coordinator stores it so). Returns the length
 * snprintf would write. */
int sf_shard_name(const char *run_id, uint64_t job_id, char *out, size_t cap);

/* A shard's file name binds it to its run and job: when the base name of
 * `path` has the form "<run>-job<digits>[-a<digits>].shard" (the stored
 * name, or a worker's attempt), <run> and the job must be the manifest's
 * run_id and job_id. SF_OK for a name of that form that matches, and for
 * names of any other form (a file a person named); SF_ECORRUPT naming
 * both for a swapped or renamed shard. sf_shard_verify() applies this
 * rule; a reader of a directory applies the stricter one below. */
int sf_shard_check_name(const char *path, const char *run_id, uint64_t job_id, sf_err *err);

/* The rule of everything that reads a directory of shards (`sf-shard verify
 * DIR`, sf_shard_source_open_dir and so `sf-shard pull`, the Python
 * ShardDataset and training window): the base name of `path` must be
 * exactly sf_shard_name(run_id, job_id), so a directory holds a job's
 * shard once, under its own name; a copy under any other name (a person's,
 * a worker's attempt "-a<n>", another job's) is refused. SF_OK, or
 * SF_ECORRUPT "PATH: not the canonical name of its shard: expected 'NAME'
 * (run 'RUN', job J); a directory holds each shard only under that name". */
int sf_shard_check_canonical_name(const char *path, const char *run_id, uint64_t job_id,
                                  sf_err *err);

#define SF_SHARD_DEFAULT_LEVEL       3            /* zstd level               */
#define SF_SHARD_DEFAULT_BLOCK_BYTES (128u << 10) /* compressed bytes a block */
#define SF_SHARD_DEFAULT_TXN_BYTES   (4u << 20)   /* bytes per write txn      */
#define SF_SHARD_MAX_RECORD_BYTES    (16u << 20)  /* one packed record, max   */
#define SF_SHARD_MAX_BLOCK_RECORDS   4096
/* Format 2: records per zstd frame (G). 16 measured: one frame per record
 * costs 8.8 us of zstd per typical 4.5 KB record, 16 per frame 3.8 us, 64
 * per frame 3.4 us (docs/benchmarks.md "Records per zstd frame"), while a
 * random single-record read decodes the whole frame. */
#define SF_SHARD_DEFAULT_FRAME_RECORDS 16
/* A frame also closes once its records hold this many uncompressed bytes,
 * so a frame's content never exceeds SF_SHARD_MAX_RECORD_BYTES. */
#define SF_SHARD_FRAME_RAW_BYTES (1u << 20)

#define SF_SHARD_DIGEST_BYTES 32 /* SHA-256 */

/* Manifest counters (JobStats.counters) that readers filter by and that
 * sf_shard_verify checks (docs/format.md "Job counters"): fights that ended
 * at an engine limit (a full pile) and at the turn cap. */
#define SF_SHARD_COUNTER_ENGINE_LIMIT "engine_limit_fights"
#define SF_SHARD_COUNTER_TURN_LIMIT   "turn_limit_fights"

/* ---------------------------------------------------------------------------
 * Label helpers
 * ------------------------------------------------------------------------- */

/* Check a record against the format rules of docs/format.md: the schema
 * version; every Tensor's dtype, rank and byte length; T and Q agreeing
 * across the inputs and the search arrays; query token indices < T;
 * chosen < Q; 21 finite value bins summing to 1; forecast [4,5] with a 0/1
 * mask [4]; the optional teacher block's shapes. Errors: SF_EVERSION for
 * another schema version, SF_EINVAL naming the first offending field. */
int sf_shard_record_check(const Spirefleet__LabelRecord *rec, sf_err *err);

/* ---------------------------------------------------------------------------
 * Writer
 * ------------------------------------------------------------------------- */

/* What the manifest records about the job. Strings are copied at open. Every
 * appended record must carry the same run_id, job_id, engine and tokenizer
 * versions, model_sha256 and config_digest in its ids. */
typedef struct sf_shard_info {
    const char *run_id; /* non-empty                                  */
    uint64_t job_id;
    uint32_t engine_version;
    uint32_t tokenizer_version;
    const char *model_sha256;  /* 64 lower-case hex digits, or "rollout"     */
    const char *config_digest; /* 64 lower-case hex digits                   */
    const char *worker_id;     /* who wrote it (not part of the digest)      */
    /* provenance, not part of the digest either (label.proto); NULL: "" */
    const char *worker_key_id; /* its CURVE key id (common/zsec.h)           */
    const char *worker_host;   /* the host it ran on                         */
    const char *build_id;      /* the build that played it                   */
    int64_t created_unix;      /* 0: the wall clock at seal                  */
} sf_shard_info;

/* Tuning; a zeroed struct (or NULL) means the defaults. */
typedef struct sf_shard_writer_opts {
    int zstd_level;           /* 0: SF_SHARD_DEFAULT_LEVEL; 1..19 (zstd)    */
    size_t block_bytes;       /* 0: SF_SHARD_DEFAULT_BLOCK_BYTES            */
    size_t txn_bytes;         /* 0: SF_SHARD_DEFAULT_TXN_BYTES              */
    size_t initial_map_bytes; /* 0: 64 MiB; the map doubles when it fills   */
    uint32_t frame_records;   /* 0: SF_SHARD_DEFAULT_FRAME_RECORDS; 1..4096 */
    uint32_t format_version;  /* 0: SF_SHARD_FORMAT_VERSION; 1 writes the
                               * old layout (one frame per record), for tests
                               * of the readers' format-1 path               */
    int hash_inline;          /* 0: format 2 hashes each closed frame on a
                               * helper thread, overlapping its compression
                               * and the next frame's packing (one thread
                               * per open writer; inline if it cannot
                               * start); 1: on the appending thread. The
                               * digest is the same                          */
} sf_shard_writer_opts;

typedef struct sf_shard_writer sf_shard_writer;

/* Start a shard that will be sealed at `path`. Writes go to a new temporary
 * file `<path>.<pid>.<random>.tmp` in the same directory. Errors: SF_EINVAL for a bad
 * info or option, SF_ESTATE when `path` already exists (a sealed shard is
 * never replaced), SF_EIO when the directory is not writable or LMDB fails.
 * On success `*out` owns the temp file until seal or abort. */
int sf_shard_writer_open(const char *path, const sf_shard_info *info,
                         const sf_shard_writer_opts *opts, sf_shard_writer **out, sf_err *err);

/* Append one record (it becomes index sf_shard_writer_count() before the
 * call). The record is checked (sf_shard_record_check and the ids rule
 * above), packed, compressed and hashed (format 2: with its frame); full blocks are written in
 * batches of about txn_bytes per LMDB transaction, growing the map as needed. Errors: SF_EINVAL /
 * SF_EVERSION for a bad record (nothing is appended; the writer stays usable), SF_EIO when LMDB or
 * the disk fails (the writer then accepts only abort). */
int sf_shard_writer_append(sf_shard_writer *w, const Spirefleet__LabelRecord *rec, sf_err *err);

/* Records appended so far. */
uint64_t sf_shard_writer_count(const sf_shard_writer *w);

/* The temporary file being written. */
const char *sf_shard_writer_temp_path(const sf_shard_writer *w);

/* Seal: write the last block and the manifest (with `stats`, may be NULL,
 * copied), sync the file, append the seal trailer, sync again, rename to the
 * final path without replacing anything, and sync the directory. Always
 * frees `w`; on failure the temporary file is removed and nothing appears at
 * the final path. `digest` (may be NULL) receives the content digest.
 * Errors: SF_ESTATE when the writer failed earlier or the final path now
 * exists, SF_EFORMAT when the file on disk is not the size LMDB reports,
 * SF_EIO. */
int sf_shard_writer_seal(sf_shard_writer *w, const Spirefleet__JobStats *stats,
                         uint8_t digest[SF_SHARD_DIGEST_BYTES], sf_err *err);

/* A gate job's pair (proto/label.proto GatePair): kept, written into the
 * manifest's gate_pairs at seal and hashed into the content digest after the
 * records, in the order added. Pairs go in increasing game_seed order, one
 * per seed; the encounter name is copied (shorter than
 * SF_SHARD_GATE_ENCOUNTER_MAX bytes). Errors: SF_EINVAL for a pair out of
 * order or out of range (class below SF_SHARD_GATE_CLASSES, scores in
 * [0, 1]; the writer stays
 * usable), SF_ENOMEM, SF_ESTATE after an earlier failure. */
#define SF_SHARD_GATE_ENCOUNTER_MAX 64

/* GatePair.class_id: the encounter class of a fight's pair (the engine's
 * pools, in their order), or a whole gauntlet. */
enum {
    SF_SHARD_GATE_WEAK = 0,
    SF_SHARD_GATE_STRONG = 1,
    SF_SHARD_GATE_ELITE = 2,
    SF_SHARD_GATE_BOSS = 3,
    SF_SHARD_GATE_GAUNTLET = 4,
    SF_SHARD_GATE_CLASSES = 5
};

/* "weak", "strong", "elite", "boss", "gauntlet"; "?" for another value.
 * Static strings. */
const char *sf_shard_gate_class_name(uint32_t class_id);
int sf_shard_writer_add_gate_pair(sf_shard_writer *w, const Spirefleet__GatePair *pair,
                                  sf_err *err);

/* Pairs added so far. */
uint64_t sf_shard_writer_gate_pairs(const sf_shard_writer *w);

/* Discard the shard: remove the temporary file and free `w` (NULL is a
 * no-op). */
void sf_shard_writer_abort(sf_shard_writer *w);

/* ---------------------------------------------------------------------------
 * Reader
 * ------------------------------------------------------------------------- */

typedef struct sf_shard_reader sf_shard_reader;

/* Open a sealed shard. Checks, in order and before LMDB reads anything: the
 * file exists; the seal trailer is present and intact (else: not sealed, or
 * truncated); the CRC of every LMDB structure page; then the manifest is
 * present, decodes, has a known format and schema version, and agrees with
 * the records database (block count, last record index). Cost: the trailer
 * plus a few pages, not the whole file. Errors as in the header comment. */
int sf_shard_reader_open(const char *path, sf_shard_reader **out, sf_err *err);

/* Close and free (NULL is a no-op). Invalidates every pointer it returned. */
void sf_shard_reader_close(sf_shard_reader *r);

/* Records in the shard (the manifest's record_count). */
uint64_t sf_shard_reader_count(const sf_shard_reader *r);

/* The decoded manifest, owned by the reader, valid until close. */
const Spirefleet__ShardManifest *sf_shard_reader_manifest(const sf_shard_reader *r);

/* Size of the whole file in bytes (LMDB pages plus seal trailer). */
uint64_t sf_shard_reader_file_bytes(const sf_shard_reader *r);

/* Record `i` (0 <= i < count), decoded and checked. `*rec` is owned by the
 * reader and valid until the next get/get_raw/foreach/close on this reader
 * (its tensors' bytes lie in the reader's decoded frame, at whatever
 * alignment the record gives them: read them with memcpy or sf_le32, not
 * through a cast to float* or uint16_t*).
 * Reads one LMDB value (zero copy) and decompresses the zstd frame holding
 * record i; the block and the frame last used are cached, so ascending
 * reads cost one lookup per block and one decompression per frame, and a
 * read of another record of the frame last decoded costs no zstd at all.
 * Errors: SF_ENOTFOUND for i >= count; SF_ECORRUPT (block header CRC, zstd
 * checksum, frame bounds) or SF_EFORMAT / SF_EVERSION / SF_EINVAL (the
 * record does not decode or breaks the format rules), naming record i. */
int sf_shard_reader_get(sf_shard_reader *r, uint64_t i, const Spirefleet__LabelRecord **rec,
                        sf_err *err);

/* Like get, but returns the uncompressed protobuf bytes of record i without
 * decoding them (the bytes the content digest covers). `*bytes` is owned by
 * the reader and valid until the next call on it. `*frame_len` (may be
 * NULL) receives the compressed bytes record i accounts for: the size of
 * its zstd frame when i is the frame's first record, else 0 (so the sum
 * over all records is the manifest's payload_bytes). */
int sf_shard_reader_get_raw(sf_shard_reader *r, uint64_t i, const uint8_t **bytes, size_t *len,
                            size_t *frame_len, sf_err *err);

/* Call fn(ctx, i, rec) for every record in index order. Stops at the first
 * error (returned) or at the first non-zero return of fn (returned as is;
 * fn should fill `err` when it returns a negative code). */
typedef int (*sf_shard_visit_fn)(void *ctx, uint64_t index, const Spirefleet__LabelRecord *rec,
                                 sf_err *err);
int sf_shard_reader_foreach(sf_shard_reader *r, sf_shard_visit_fn fn, void *ctx, sf_err *err);

/* ---------------------------------------------------------------------------
 * Verify
 * ------------------------------------------------------------------------- */

typedef struct sf_shard_verify_report {
    uint64_t file_bytes;
    uint64_t pages;                        /* LMDB pages covered by the trailer's CRCs  */
    uint64_t records;                      /* records decoded and hashed                */
    int64_t bad_record;                    /* first corrupt record, or -1; when a damaged
                                            * page's records still decode, the first
                                            * record whose bytes that page holds       */
    int64_t bad_page;                      /* first page whose CRC mismatched, or -1    */
    uint8_t digest[SF_SHARD_DIGEST_BYTES]; /* recomputed content digest  */
    /* The manifest's turn_limit_fights counter (0 when absent), checked
     * against the records: a manifest that counts fewer turn-limit fights
     * than its records show is refused. */
    uint64_t turn_limit_fights;
    /* Fights among the records: distinct (game_seed, fight_index) keys, and
     * of those the won ones (outcome.won, which every record of a fight
     * carries alike). Counted from the verified records, not taken from
     * the manifest's JobStats (what the worker says about itself): a fight
     * that left no record (every decision unsearched and dropped) is not
     * counted. A gate shard's pairs are not fights here (0, 0). */
    uint64_t fights;
    uint64_t fights_won;
    /* sf_shard_name() of the manifest's run and job: the only name a
     * directory holds this shard under (sf_shard_check_canonical_name);
     * "" when verification stopped before the manifest was read. */
    char name[SF_SHARD_NAME_MAX + 1];
} sf_shard_verify_report;

/* Check a shard completely: the seal trailer, the CRC of every page (so a
 * changed byte anywhere is found), then every block and record (decode,
 * format rules, ids agree with the manifest) and the recomputed content
 * digest, record count, seed range, byte totals and turn-limit fights
 * against the manifest,
 * and the file name against the manifest's run and job
 * (sf_shard_check_name). Stops at the first problem; the message names the page and, when the
 * damage lies in a record's bytes, the record index. `rep` (may be NULL) is
 * filled as far as verification got. Returns SF_OK or the error of
 * sf_shard_reader_open / SF_ECORRUPT.
 *
 * The records must also be what one job's play writes (docs/format.md
 * "What verify checks"), each an SF_ECORRUPT naming the file and record:
 *   - keys (game_seed, fight_index, decision_index) strictly increasing:
 *     "PATH: record I: key (seed S, fight F, decision D) repeats record
 *     I-1's: a decision is recorded once" or "... comes before record
 *     I-1's key (seed S', fight F', decision D'): records go in (seed,
 *     fight, decision) order", so no decision is stored twice (checked
 *     against the previous record only: no memory per record);
 *   - ids.turn at least 1 ("PATH: record I (seed S, fight F, decision D):
 *     turn 0; turns count from 1") and, within a fight, never lower than
 *     the previous record's ("... turn T after turn T' of record I-1");
 *   - one outcome and encounter per fight: every record of a fight carries
 *     the first one's outcome (won, final_hp, max_hp, turns, value and the
 *     limit flags) and encounter_id ("PATH: record I (seed S, fight F):
 *     its outcome or encounter differs from record K's, the fight's first
 *     record: a fight has one end"). */
int sf_shard_verify(const char *path, sf_shard_verify_report *rep, sf_err *err);

/* The SHA-256 of a shard file's bytes, as 64 lower-case hex digits in `hex`
 * (65 bytes), and its size: the file digest a worker offers with its
 * upload, a coordinator lists and a pull checks (the content digest is the
 * records'). Errors: SF_EIO, "PATH: cannot open: <reason>" or "PATH:
 * cannot read: <reason>". */
int sf_shard_file_sha256(const char *path, char hex[65], uint64_t *size, sf_err *err);

/* ---------------------------------------------------------------------------
 * Sources and pull
 *
 * A source offers sealed shards by name; sf_shard_pull() copies the ones a
 * destination directory lacks. A directory is the built-in source; others
 * (the coordinator's tcp:// endpoint) implement sf_shard_source_ops and are
 * plugged into the sf-shard tool's source table (shard/cli/sources.c).
 * ------------------------------------------------------------------------- */

/* One shard a source offers. `error` is non-empty when the source holds a
 * file of that name that is not a readable sealed shard (then it is
 * reported, never copied). */
typedef struct sf_shard_entry {
    char name[SF_SHARD_NAME_MAX + 1]; /* file name, no directory part     */
    uint8_t digest[SF_SHARD_DIGEST_BYTES];
    uint64_t records;
    uint64_t bytes;
    int error_code; /* SF_OK, or why the file is not a readable shard   */
    char error[SF_ERR_MSG_MAX];
    /* in the source's quarantine list: not to be copied; key id and time
     * from the list */
    int quarantined;
    char key_id[SF_SHARD_KEY_ID_MAX + 1];
    int64_t quarantined_unix;
} sf_shard_entry;

typedef struct sf_shard_source sf_shard_source;

typedef struct sf_shard_source_ops {
    /* List what the source offers into a malloc'd array (caller frees).
     * Names must be plain file names ending in SF_SHARD_SUFFIX. */
    int (*list)(sf_shard_source *src, sf_shard_entry **entries, size_t *n, sf_err *err);
    /* Copy entry `e` into the new local file `dst_path` and fsync it. */
    int (*fetch)(sf_shard_source *src, const sf_shard_entry *e, const char *dst_path, sf_err *err);
    /* Free the source. */
    void (*close)(sf_shard_source *src);
} sf_shard_source_ops;

/* Implementations embed this as their first member. */
struct sf_shard_source {
    const sf_shard_source_ops *ops;
    char uri[1024]; /* for messages */
};

/* A source that serves the sealed shards (`*.shard`) of a local directory.
 * A file not under its shard's canonical name is listed with the error of
 * sf_shard_check_canonical_name (SF_ECORRUPT), so it is never copied.
 * Errors: SF_ENOTFOUND / SF_EIO when the directory cannot be opened. */
int sf_shard_source_open_dir(const char *dir, sf_shard_source **out, sf_err *err);

/* ---------------------------------------------------------------------------
 * Quarantine (docs/operator.md "Security"): a shard directory's file
 * QUARANTINE lists shards removed from the data set, one a line:
 *   CONTENT_DIGEST NAME WORKER_KEY_ID UNIX_TIME
 * ('#' lines are comments). A shard whose content digest is listed with
 * the key id its manifest names (worker_key_id; an entry's key id "-"
 * matches any key, and a shard naming no key matches any entry) is
 * skipped by default by everything that reads a directory: sf_shard_pull
 * (which carries the list to its destination), `sf-shard ls`, `verify`
 * and `export`, and the Python reader; each says how many it skipped. By
 * digest and key, not name: the job's re-issued shard has the same name,
 * and when another key plays it again to the same content digest (the
 * quarantined key's copy was honest after all) that copy is not skipped.
 * ------------------------------------------------------------------------- */
#define SF_SHARD_QUARANTINE_FILE "QUARANTINE"

typedef struct sf_shard_quarantine_entry {
    uint8_t digest[SF_SHARD_DIGEST_BYTES];
    char name[SF_SHARD_NAME_MAX + 1];
    char key_id[SF_SHARD_KEY_ID_MAX + 1]; /* the worker's, "-" when unknown */
    int64_t when_unix;                    /* when it was quarantined        */
} sf_shard_quarantine_entry;

typedef struct sf_shard_quarantine sf_shard_quarantine;

/* Read DIR/QUARANTINE (none: an empty list). SF_EFORMAT names file:line. */
int sf_shard_quarantine_load(const char *dir, sf_shard_quarantine **out, sf_err *err);
/* The entry that quarantines a shard of that content digest made by
 * `key_id` (its manifest's worker_key_id; NULL or "": any entry with the
 * digest), or NULL (q may be NULL). */
const sf_shard_quarantine_entry *sf_shard_quarantine_find(const sf_shard_quarantine *q,
                                                          const uint8_t digest[32],
                                                          const char *key_id);
size_t sf_shard_quarantine_count(const sf_shard_quarantine *q);
const sf_shard_quarantine_entry *sf_shard_quarantine_at(const sf_shard_quarantine *q, size_t i);
/* Add an entry to DIR/QUARANTINE (rewritten durably; a digest already
 * listed with that key id is kept as it is). */
int sf_shard_quarantine_add(const char *dir, const sf_shard_quarantine_entry *e, sf_err *err);
void sf_shard_quarantine_free(sf_shard_quarantine *q);

/* What sf_shard_pull did, and an optional per-shard callback (`action` is
 * "copied", "present", "conflict" or "failed"; `why` is NULL unless it
 * failed or conflicted). */
typedef struct sf_shard_pull_report {
    size_t copied, present, failed;
    size_t quarantined; /* listed in the source's quarantine: not copied, and
                           added to the destination's QUARANTINE           */
    uint64_t bytes_copied;
    void (*on_shard)(void *ctx, const sf_shard_entry *e, const char *action, const char *why);
    void *ctx;
} sf_shard_pull_report;

/* Copy every sealed shard of `src` into `dst_dir` (created if missing):
 * skip a shard already present with the same content digest; fetch the
 * others into a temporary file, verify the copy completely and check its
 * digest against the listing, check that the name offered is the copy's
 * canonical name (sf_shard_check_canonical_name: whatever the source says,
 * `dst_dir` holds a shard only under it), then rename it into place without
 * replacing anything. A destination file with the same name and another
 * digest is a conflict and is left untouched. Goes on past a failed shard; returns
 * SF_OK when none failed, else the first failure's code (its message in
 * `err`). */
int sf_shard_pull(sf_shard_source *src, const char *dst_dir, sf_shard_pull_report *rep,
                  sf_err *err);

#endif
