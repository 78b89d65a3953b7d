/*
 * pbuf.h — the byte buffer and the protobuf-c unpack arena every module that
 * packs or unpacks messages on a hot path shares (shard reader, evaluator
 * wire, ...), and a decoder that borrows `bytes` fields from its input.
 *
 * sf_buf grows by doubling and never shrinks, so a buffer reused for
 * messages of similar size stops allocating after warm-up. sf_arena is a
 * bump allocator handed to protobuf-c's unpack functions: a message's
 * submessages, repeated arrays and byte fields come out of one reused chunk;
 * a round that does not fit spills into malloc and the next reset grows the
 * chunk to hold such a round whole. Both can count their allocations (the
 * `allocs` counter may be NULL), which is how tests prove "no allocation once
 * warm". Not thread-safe: one buffer or arena per thread.
 */
#ifndef SF_PBUF_H
#define SF_PBUF_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

typedef struct sf_buf {
    uint8_t *p;
    size_t len, cap;
} sf_buf;

/* Make room for `need` more bytes after b->len (the contents are kept).
 * Counts a (re)allocation in *allocs. Returns SF_OK or SF_ENOMEM. */
int sf_buf_reserve(sf_buf *b, size_t need, uint64_t *allocs);

/* Append n bytes. Returns SF_OK or SF_ENOMEM. */
int sf_buf_append(sf_buf *b, const void *p, size_t n, uint64_t *allocs);

/* Free the storage and zero the buffer. */
void sf_buf_free(sf_buf *b);

typedef struct sf_arena {
    uint8_t *chunk;
    size_t cap, used;
    uint8_t **spill; /* overflow allocations since the last reset */
    size_t nspill, spill_cap, spill_bytes;
    uint64_t *allocs;
    ProtobufCAllocator pb; /* pass &arena->pb to *_unpack() */
} sf_arena;

void sf_arena_init(sf_arena *a, uint64_t *allocs);

/* Forget every allocation (call before each unpack); when the last round
 * spilled, grow the chunk to hold that round whole next time. Returns SF_OK
 * or SF_ENOMEM. */
int sf_arena_reset(sf_arena *a);

void sf_arena_free(sf_arena *a);

/* 1 if the n bytes at p are valid UTF-8 (RFC 3629: shortest forms only, no
 * surrogates, nothing above U+10FFFF), the rule protobuf applies to proto3
 * `string` fields when it parses them (Python's protobuf refuses a message
 * that breaks it, protobuf-c does not check); else 0. */
int sf_utf8_valid(const uint8_t *p, size_t n);

/* Walk every set `string` field of `m` and of its submessages (repeated
 * ones and oneof members included), as protobuf-c's descriptors describe
 * them. Returns 1 when all are valid UTF-8 (sf_utf8_valid); else 0 with the
 * first bad field's path written to `field` (cap bytes, NUL-terminated;
 * e.g. "worker_id", "stats.counters[2].name"). Allocates nothing. */
int sf_pb_strings_utf8(const ProtobufCMessage *m, char *field, size_t cap);

/* Decode `len` bytes of a message of type `d` (a protobuf-c generated
 * descriptor) the way protobuf_c_message_unpack(d, &arena->pb, len, data)
 * does, except that every `bytes` field points into `data` instead of being
 * copied: `data` must outlive the message. Everything else (submessages,
 * strings, repeated arrays) comes from `arena`, and the message is freed only
 * by the arena's next reset (never by *_free_unpacked).
 *
 * It decodes the encoding protobuf-c's packer writes and nothing more:
 * fields of types (u)int32, (u)int64, bool, float, double, string, bytes
 * and message, repeated scalars packed, each field at most once, no unknown
 * field, no oneof or required field, at most 64 fields a message, nesting
 * up to 16 deep. Anything else, including bytes that do not decode at all,
 * returns SF_EFORMAT with no verdict on the bytes: the caller then decodes
 * them with protobuf_c_message_unpack, whose verdict stands. Within the
 * subset the message equals protobuf-c's (proto/borrow.c; the borrowed_*
 * tests of tests/unit/test_shard.c and the record-decode fuzz target).
 *
 * Returns SF_OK with *out set, SF_EFORMAT, or SF_ENOMEM; on either error
 * *out is NULL and what was allocated is left to the arena's reset. Never
 * reads outside [data, data + len). */
int sf_pb_unpack_borrowed(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len,
                          sf_arena *arena, ProtobufCMessage **out);

#endif
