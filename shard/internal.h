/*
 * internal.h — shard internals shared by the module's files, its white-box
 * tests and its fuzz targets. Not part of the public API (see shard.h).
 *
 * Byte layouts (docs/format.md is the reference; all integers little-endian
 * unless said otherwise):
 *
 * Block (one LMDB value in `records`, key = u64 big-endian `first`),
 * format 1 (every record its own zstd frame):
 *     0      u32  magic SF_BLOCK_MAGIC ("SFB1")
 *     4      u32  n, records in the block (1..SF_SHARD_MAX_BLOCK_RECORDS)
 *     8      u64  first, index of the block's first record (= the key)
 *     16     u32  end[n]: end offset of record k's zstd frame, relative to
 *                 the frame area; frame k spans [end[k-1], end[k]), end[-1]=0
 *     16+4n  u32  CRC-32 (zlib) of bytes [0, 16+4n)
 *     20+4n       frame area: n zstd frames, each with content size and
 *                 content checksum; the value ends exactly at end[n-1]
 *
 * format 2 (up to G consecutive records per zstd frame):
 *     0      u32  magic SF_BLOCK_MAGIC_V2 ("SFB2")
 *     4      u32  n, records in the block (1..SF_SHARD_MAX_BLOCK_RECORDS)
 *     8      u64  first, index of the block's first record (= the key)
 *     16     u32  m, zstd frames in the block (1..n)
 *     20     u32  frame_recs[m]: records in frames 0..j together; ascending,
 *                 frame_recs[m-1] = n
 *     20+4m  u32  frame_end[m]: end offset of frame j in the frame area;
 *                 ascending, frame_end[m-1] = the frame area's length
 *     20+8m  u32  rec_end[n]: end offset of record k within the content of
 *                 its frame; ascending within a frame, the frame's last one
 *                 equal to the frame's content size
 *     20+8m+4n u32 CRC-32 (zlib) of bytes [0, 20+8m+4n)
 *     24+8m+4n    frame area: m zstd frames, each with content size and
 *                 content checksum (the records' packed bytes, concatenated)
 *
 * Seal trailer (after the LMDB data, which is `npages` pages of `page_size`):
 *     u32 page_crc[npages]     CRC-32 of each page
 *     u32 struct_page[nstruct] page numbers holding no record-block bytes
 *                              (meta pages, B-tree pages, free pages, the
 *                              manifest), ascending
 *     footer, 64 bytes:
 *       0   8  magic "SFSEAL01"
 *       8   u32 trailer version (1)
 *       12  u32 page_size
 *       16  u64 data_bytes (= npages * page_size)
 *       24  u64 npages
 *       32  u64 nstruct
 *       40  u32 CRC-32 of page_crc[] followed by struct_page[]
 *       44  16 zero bytes
 *       60  u32 CRC-32 of footer bytes [0, 60)
 */
#ifndef SF_SHARD_INTERNAL_H
#define SF_SHARD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <protobuf-c/protobuf-c.h>
#include <sodium.h>
#include <zstd.h>

#include "common/sha256.h"
#include "proto/pbuf.h"
#include "shard/shard.h"

/* The block magics, trailer magic and version, footer size and database
 * names are format facts readers outside C need: shard.h "Format
 * constants". */
#define SF_BLOCK_HEADER_MIN 20u /* n = 0 would be 20 bytes; n >= 1 */

#define SF_MANIFEST_MAX_BYTES (1u << 20)
/* LMDB 0.9's page header (PAGEHDRSZ on 64-bit): an overflow value's data
 * starts this far into its first page. Used only to tell record-block pages
 * from structure pages at seal; a wrong guess would only move a page from
 * the open-time check to the verify-time check. */
#define SF_LMDB_PAGEHDR 16u

/* ---- little helpers ---------------------------------------------------- */

static inline uint32_t sf_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t sf_le64(const uint8_t *p) {
    return (uint64_t)sf_le32(p) | (uint64_t)sf_le32(p + 4) << 32;
}
static inline void sf_put_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void sf_put_le64(uint8_t *p, uint64_t v) {
    sf_put_le32(p, (uint32_t)v);
    sf_put_le32(p + 4, (uint32_t)(v >> 32));
}

/* Add one entry to a content digest: its length as u64 little-endian, then
 * its n bytes (docs/format.md "content digest": every record, then every
 * gate pair, so framed). The one place that rule is written. */
void sf_shard_digest_add(sf_sha256_ctx *sha, const uint8_t *p, size_t n);

/* Add one gate pair to a content digest (sf_shard_digest_add of its
 * packed bytes). `scratch` grows to fit. SF_ENOMEM when it cannot. */
int sf_shard_hash_gate_pair(sf_sha256_ctx *sha, const Spirefleet__GatePair *pair, sf_buf *scratch,
                            sf_err *err);
/* ---- the content digest, frame by frame (hasher.c) ----------------------
 * A writer's records reach its digest one closed frame at a time, each
 * record as its u64 little-endian length and bytes, so the digest is the
 * same whether a helper thread hashes them or the writer does. */
typedef struct sf_frame_hasher sf_frame_hasher;

/* A hasher feeding `sha` (borrowed: it must outlive the hasher, and nothing
 * else may touch it between a submit and the next wait). With `threaded`
 * the frames are hashed on a helper thread; when the thread cannot be
 * started they are hashed inline, which gives the same digest. SF_ENOMEM,
 * *out NULL. */
int sf_frame_hasher_new(sf_sha256_ctx *sha, int threaded, sf_frame_hasher **out, sf_err *err);

/* Whether h hashes on a helper thread. */
int sf_frame_hasher_threaded(const sf_frame_hasher *h);

/* Hash a frame: `n` (1..SF_SHARD_MAX_BLOCK_RECORDS) records lying back to
 * back from `raw`, record k ending at offset ends[k]. Waits for the frame
 * before it first; `ends` is copied, `raw` is read until the next submit,
 * wait or free, so the caller must leave it unchanged until then.
 * Allocates nothing. */
void sf_frame_hasher_submit(sf_frame_hasher *h, const uint8_t *raw, const uint32_t *ends,
                            uint32_t n);

/* Return once every submitted frame is in the digest. */
void sf_frame_hasher_wait(sf_frame_hasher *h);

/* Finish the frame in flight, stop the thread, free h (NULL is fine). */
void sf_frame_hasher_free(sf_frame_hasher *h);

static inline void sf_put_be64(uint8_t *p, uint64_t v) {
    for (int k = 7; k >= 0; k--) {
        p[k] = (uint8_t)v;
        v >>= 8;
    }
}
static inline uint64_t sf_be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
        v = v << 8 | p[k];
    return v;
}

/* CRC-32 (zlib's polynomial, as Python's zlib.crc32). */
uint32_t sf_crc32(const uint8_t *p, size_t n);

/* ---- blocks -------------------------------------------------------------- */

typedef struct sf_block_view {
    uint32_t version; /* shard format: 1 or 2 */
    uint32_t n;       /* records */
    uint32_t m;       /* zstd frames (format 1: n) */
    uint64_t first;
    const uint8_t *frame_recs; /* format 2: m LE u32, cumulative records; NULL in 1 */
    const uint8_t *ends;       /* m LE u32: frame ends in the frame area */
    const uint8_t *rec_ends;   /* format 2: n LE u32, ends within a frame's content */
    const uint8_t *frames;     /* frame area */
    size_t frames_len;
    size_t header_len; /* bytes of the value before the frame area */
} sf_block_view;

/* Parse and check a block value of shard format `version` (1 or 2):
 * magic, n, first == key_first, CRC, frame ends ascending and ending at the
 * value's end; in format 2 also the frame table (every frame holds at least
 * one record, the last ends at n) and the record ends (ascending within each
 * frame). Never reads outside [v, v+len). Errors: SF_ECORRUPT naming the
 * block's first index (or the record at fault). */
int sf_block_parse(const uint8_t *v, size_t len, uint64_t key_first, uint32_t version,
                   sf_block_view *out, sf_err *err);

/* One zstd frame of a block, as located by its header: its compressed
 * bytes, the records it holds and (format 2) their ends within its content.
 * The pointers point into the block value (LMDB's map for a reader): valid
 * as long as the value is. */
typedef struct sf_frame_ref {
    const uint8_t *z; /* the compressed frame */
    size_t zlen;
    const uint8_t *rec_ends; /* format 2: n LE u32; NULL: one record, the whole content */
    uint64_t first;          /* index of its first record in the shard */
    uint32_t n;              /* records, >= 1 */
} sf_frame_ref;

/* Frame j (< b->m) of a parsed block. */
void sf_block_frame(const sf_block_view *b, uint32_t j, sf_frame_ref *out);

/* The frame (index < b->m) that holds the block's record k (< b->n). */
uint32_t sf_block_frame_of(const sf_block_view *b, uint32_t k);

/* Decompress frame `f` into `out` (replacing its contents), checking that
 * it is exactly one zstd frame filling its slot, that it declares a content
 * size no larger than SF_SHARD_MAX_RECORD_BYTES, that zstd's content
 * checksum matches and (format 2) that its last record ends at the content's
 * end. Errors: SF_ECORRUPT naming record `want` (and the frame's records
 * when it holds more than one). `allocs` (may be NULL) counts buffer growth. */
int sf_frame_decompress(ZSTD_DCtx *dctx, const sf_frame_ref *f, uint64_t want, sf_buf *out,
                        uint64_t *allocs, sf_err *err);

/* Record `index` (f->first <= index < f->first + f->n) within the decoded
 * content of `f` (`content_len` bytes, as sf_frame_decompress checked). */
static inline void sf_frame_record(const sf_frame_ref *f, uint64_t index, size_t content_len,
                                   size_t *off, size_t *len) {
    if (!f->rec_ends) {
        *off = 0;
        *len = content_len;
        return;
    }
    uint32_t k = (uint32_t)(index - f->first);
    uint32_t start = k ? sf_le32(f->rec_ends + 4 * (k - 1)) : 0;
    *off = start;
    *len = sf_le32(f->rec_ends + 4 * k) - start;
}

/* Unpack record bytes with `alloc` (NULL: malloc) and check them with
 * sf_shard_record_check. On success the caller frees *out with
 * spirefleet__label_record__free_unpacked(*out, alloc). Errors: SF_EFORMAT
 * (protobuf), SF_EVERSION, SF_EINVAL, each naming `index`. */
int sf_record_decode(const uint8_t *raw, size_t len, uint64_t index, ProtobufCAllocator *alloc,
                     Spirefleet__LabelRecord **out, sf_err *err);

/* sf_record_decode from `arena` (reset by the caller), the record's tensor
 * bytes pointing into `raw` (sf_pb_unpack_borrowed, proto/pbuf.h): `raw`
 * must outlive *out, which the arena's next reset frees. Bytes outside the
 * borrowing decoder's subset are decoded by protobuf-c instead, so the
 * verdict and the values are sf_record_decode's. Same errors, plus
 * SF_ENOMEM. */
int sf_record_decode_borrowed(const uint8_t *raw, size_t len, uint64_t index, sf_arena *arena,
                              Spirefleet__LabelRecord **out, sf_err *err);

/* ---- manifest -------------------------------------------------------------- */

/* Unpack and check a manifest (format and schema versions, digest length,
 * hex fields, seed range, record/block counts consistent). On success the
 * caller frees *out with spirefleet__shard_manifest__free_unpacked(*out,
 * NULL). Errors: SF_EFORMAT, SF_EVERSION, SF_ECORRUPT. */
int sf_manifest_decode(const uint8_t *bytes, size_t len, Spirefleet__ShardManifest **out,
                       sf_err *err);

/* ---- seal trailer ------------------------------------------------------------ */

typedef struct sf_trailer {
    uint32_t page_size;
    uint64_t data_bytes, npages, nstruct;
    uint32_t *page_crc;    /* npages, malloc'd   */
    uint32_t *struct_page; /* nstruct, malloc'd  */
} sf_trailer;

/* Compute the CRC of every page of the first `data_bytes` of `fd` and append
 * the trailer at offset data_bytes (struct pages as given, ascending), then
 * fsync. Errors: SF_EFORMAT when data_bytes is not whole pages, SF_EIO (the
 * OS's reason), SF_ENOMEM. */
int sf_trailer_write(int fd, uint64_t data_bytes, uint32_t page_size, const uint32_t *struct_page,
                     size_t nstruct, sf_err *err);

/* Read and check the trailer of `fd` (file size `size`): footer magic and
 * CRC, sizes adding up to the file size, the tables' CRC, struct pages in
 * range and ascending. Does not check page contents. Without a footer it
 * asks LMDB how long its data is (LMDB reads only the meta pages for that):
 * SF_EFORMAT "truncated" when the file is shorter; SF_ESTATE "not sealed"
 * for a writer's .tmp file, or any file that is exactly LMDB's data;
 * SF_EFORMAT "truncated" when a partial trailer follows the data;
 * SF_EFORMAT "not a shard" when LMDB does not recognise it. Messages start
 * with `path`. */
int sf_trailer_read(int fd, const char *path, uint64_t size, sf_trailer *out, sf_err *err);
void sf_trailer_free(sf_trailer *t);

/* Check the CRC of page `pg` (read with pread). Errors: SF_ECORRUPT, SF_EIO. */
int sf_trailer_check_page(int fd, const char *path, const sf_trailer *t, uint64_t pg,
                          uint8_t *scratch, sf_err *err);

/* ---- reader internals (white-box tests) ----------------------------------- */

/* Allocations the reader has made since open (buffers, arena chunks). Flat
 * once warm: the test of "no allocation per record" reads it. */
uint64_t sf_shard_reader_allocs(const sf_shard_reader *r);

/* The block holding record i: its value's byte offset in the file and
 * length, and its parsed view (verify uses it to name damaged records). */
int sf_shard_reader_block_at(sf_shard_reader *r, uint64_t i, uint64_t *value_off, size_t *value_len,
                             sf_block_view *view, sf_err *err);

/* zstd frames the reader has decompressed since open (white-box tests:
 * one per frame for sequential reads). */
uint64_t sf_shard_reader_frames_decoded(const sf_shard_reader *r);

/* The shard's format version (the manifest's: 1 or 2). */
uint32_t sf_shard_reader_format(const sf_shard_reader *r);

/* Every zstd frame of the shard in record order (every block read and its
 * header checked): *out (malloc'd, the caller frees it) gets *n refs whose
 * pointers stay valid until the reader is closed. Errors: those of
 * reading a block, SF_ENOMEM. */
int sf_shard_reader_frames(sf_shard_reader *r, sf_frame_ref **out, size_t *n, sf_err *err);

/* Decode the record whose bytes the last get_raw(i) left in the reader
 * (so verify can hash and decode without decompressing twice). */
int sf_shard_reader_decode_last(sf_shard_reader *r, uint64_t i, const Spirefleet__LabelRecord **rec,
                                sf_err *err);

/* Writer test hook: seal without putting a manifest into `meta` (to test the
 * reader's "no manifest" error), or with another schema version. Only the
 * tests call these. */
typedef struct sf_shard_seal_hooks {
    bool omit_manifest;
    uint32_t schema_version; /* 0: SF_LABEL_SCHEMA_VERSION */
} sf_shard_seal_hooks;
int sf_shard_writer_seal_hooked(sf_shard_writer *w, const Spirefleet__JobStats *stats,
                                const sf_shard_seal_hooks *hooks,
                                uint8_t digest[SF_SHARD_DIGEST_BYTES], sf_err *err);

/* Where LMDB mapped the file, found from a pointer LMDB returned into it:
 * the map starts on an OS page boundary, so when the shard's page size
 * divides the OS page size the pointer's page starts at a multiple of
 * page_size, and LMDB's page header begins with that page's number (mp_pgno,
 * u64). Returns NULL when the page size is larger than the OS page or the
 * number read is not below npages (callers then skip what needs it).
 * mdb_env_info's me_mapaddr cannot be used: it is the MDB_FIXEDMAP address
 * stored in the meta page, NULL otherwise. */
const uint8_t *sf_lmdb_map_base(const void *p, uint32_t page_size, uint64_t npages);

/* ---- paths ----------------------------------------------------------------- */

/* 1 if `name` ends with `suffix`. */
bool sf_has_suffix(const char *name, const char *suffix);

/* sf_open_regular (common/io.h: never blocks on a FIFO or device) with a
 * shard reader's wording: SF_ENOTFOUND "no such shard", and a path that is
 * not a regular file SF_EIO (a usage problem, not a damaged shard), with
 * `err` naming the path. */
int sf_shard_open_file(const char *path, struct stat *st, sf_err *err);

/* SF_ESTATE when `path` names a writer's temporary file (*.tmp), which no
 * public reader opens even when it carries a seal (its writer may have died
 * between sealing and renaming); else SF_OK. */
int sf_shard_refuse_temp(const char *path, sf_err *err);

/* sf_shard_reader_open() and sf_shard_verify() without the name check, for
 * pull, which verifies its own temporary copy before renaming it. */
int sf_shard_reader_open_any(const char *path, sf_shard_reader **out, sf_err *err);
int sf_shard_verify_any(const char *path, sf_shard_verify_report *rep, sf_err *err);

#endif
