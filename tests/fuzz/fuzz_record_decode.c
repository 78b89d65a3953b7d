/* fuzz_record_decode.c — libFuzzer target: bytes of a record block or of a
 * bare record, through the reader's decode path.
 *
 * Input: one mode byte, then the bytes. Mode bit 0 clear: a packed
 * LabelRecord (protobuf decode + format rules). Set: an LMDB value of the
 * `records` database (block header, CRC, frame and record offsets, then
 * each frame's zstd decompression and each record's protobuf decode and
 * format rules), with the key taken from the header so the fuzzer gets
 * past the key check; mode bit 1 picks the shard format (clear: 1, set: 2). Nothing may crash,
 * leak or read out of bounds; every failure must be an error value; the
 * borrowing decoder (sf_record_decode_borrowed) must agree with
 * protobuf-c's on every input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shard/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode(const uint8_t *raw, size_t len, uint64_t index, sf_arena *arena) {
    Spirefleet__LabelRecord *rec = NULL, *borrowed = NULL;
    sf_err err = {0}, err2 = {0};
    if (sf_arena_reset(arena) < 0)
        return;
    int rc = sf_record_decode(raw, len, index, NULL, &rec, &err);
    if (rc == SF_OK && (!rec->inputs || !rec->search))
        abort(); /* a record that passed the checks has its parts */
    /* the borrowing decoder gives the same verdict and, packed again, the
     * same record */
    int rc2 = sf_record_decode_borrowed(raw, len, index, arena, &borrowed, &err2);
    if (rc2 != rc && rc2 != SF_ENOMEM)
        abort();
    if (rc == SF_OK && rc2 == SF_OK) {
        size_t n = spirefleet__label_record__get_packed_size(rec);
        uint8_t *a = malloc(n ? n : 1), *b = malloc(n ? n : 1);
        if (a && b) {
            if (spirefleet__label_record__get_packed_size(borrowed) != n ||
                spirefleet__label_record__pack(rec, a) != n ||
                spirefleet__label_record__pack(borrowed, b) != n || memcmp(a, b, n) != 0)
                abort();
        }
        free(a);
        free(b);
    }
    if (rec)
        spirefleet__label_record__free_unpacked(rec, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    uint64_t allocs = 0;
    sf_arena arena;
    sf_arena_init(&arena, &allocs);
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    if (!(data[0] & 1)) {
        decode(p, n, 0, &arena);
    } else {
        uint64_t first = n >= 16 ? sf_le64(p + 8) : 0;
        sf_block_view b;
        sf_err err = {0};
        uint32_t version = data[0] & 2 ? 2 : 1;
        if (sf_block_parse(p, n, first, version, &b, &err) == SF_OK) {
            ZSTD_DCtx *dctx = ZSTD_createDCtx();
            sf_buf raw = {0};
            for (uint32_t j = 0; dctx && j < b.m; j++) {
                sf_frame_ref f;
                sf_block_frame(&b, j, &f);
                if (sf_frame_decompress(dctx, &f, f.first, &raw, NULL, &err) != SF_OK)
                    continue;
                for (uint64_t i = f.first; i < f.first + f.n; i++) {
                    size_t off, len;
                    sf_frame_record(&f, i, raw.len, &off, &len);
                    if (off + len > raw.len)
                        abort(); /* a checked frame's records lie inside it */
                    decode(raw.p + off, len, i, &arena);
                }
            }
            sf_buf_free(&raw);
            ZSTD_freeDCtx(dctx);
        }
    }
    sf_arena_free(&arena);
    return 0;
}
