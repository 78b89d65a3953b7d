/* block.c — parsing a record block (shard formats 1 and 2) and
 * decompressing one of its zstd frames.
 *
 * Everything here reads bytes that came from disk: every offset is checked
 * against the value's length before it is followed. */
#include <stdio.h>
#include <string.h>

#include "shard/internal.h"

/* Strictly ascending u32 table `t` of `count` entries, each above `prev`
 * and the last one equal to `last`; returns the first index at fault, or
 * `count` when it is sound. */
static uint32_t ascending_to(const uint8_t *t, uint32_t count, uint32_t prev, uint64_t last) {
    for (uint32_t k = 0; k < count; k++) {
        uint32_t e = sf_le32(t + 4 * k);
        if (e <= prev || e > last)
            return k;
        prev = e;
    }
    return prev == last ? count : count - 1;
}

/* Format 2: the frame table and each frame's record ends (past the CRC). */
static int parse_v2_tables(sf_block_view *b, sf_err *err) {
    unsigned long long kf = (unsigned long long)b->first;
    uint32_t bad = ascending_to(b->frame_recs, b->m, 0, b->n);
    if (bad < b->m)
        return sf_err_set(err, SF_ECORRUPT,
                          "block at record %llu: frame %u's record count is out of order "
                          "(the frames must hold 1..%u records, ending at the block's last)",
                          kf, bad, b->n);
    bad = ascending_to(b->ends, b->m, 0, b->frames_len);
    if (bad < b->m)
        return sf_err_set(err, SF_ECORRUPT,
                          "block at record %llu: frame %u ends out of order or past the "
                          "block's %zu frame bytes",
                          kf, bad, b->frames_len);
    uint32_t lo = 0;
    for (uint32_t j = 0; j < b->m; j++) {
        uint32_t hi = sf_le32(b->frame_recs + 4 * j);
        /* each record at least one byte; the frame's content size is
         * checked against the last end when the frame is decoded */
        uint32_t prev = 0;
        for (uint32_t k = lo; k < hi; k++) {
            uint32_t e = sf_le32(b->rec_ends + 4 * k);
            if (e <= prev || e > SF_SHARD_MAX_RECORD_BYTES)
                return sf_err_set(err, SF_ECORRUPT,
                                  "record %llu: end %u within its frame is not after %u "
                                  "(or past %u bytes)",
                                  (unsigned long long)(b->first + k), e, prev,
                                  SF_SHARD_MAX_RECORD_BYTES);
            prev = e;
        }
        lo = hi;
    }
    return SF_OK;
}

int sf_block_parse(const uint8_t *v, size_t len, uint64_t key_first, uint32_t version,
                   sf_block_view *out, sf_err *err) {
    unsigned long long kf = (unsigned long long)key_first;
    uint32_t magic = version == 2 ? SF_BLOCK_MAGIC_V2 : SF_BLOCK_MAGIC;
    if (version != 1 && version != 2)
        return sf_err_set(err, SF_EVERSION, "block at record %llu: shard format %u", kf, version);
    if (len < SF_BLOCK_HEADER_MIN)
        return sf_err_set(err, SF_ECORRUPT, "block at record %llu: %zu bytes, too short", kf, len);
    if (sf_le32(v) != magic)
        return sf_err_set(err, SF_ECORRUPT, "block at record %llu: bad magic 0x%08x (format %u)",
                          kf, sf_le32(v), version);
    uint32_t n = sf_le32(v + 4);
    if (n == 0 || n > SF_SHARD_MAX_BLOCK_RECORDS)
        return sf_err_set(err, SF_ECORRUPT, "block at record %llu: record count %u", kf, n);
    uint32_t m = n;
    size_t hdr = 16 + 4 * (size_t)n;
    if (version == 2) {
        m = sf_le32(v + 16);
        if (m == 0 || m > n)
            return sf_err_set(err, SF_ECORRUPT, "block at record %llu: %u frames for %u records",
                              kf, m, n);
        hdr = 20 + 8 * (size_t)m + 4 * (size_t)n;
    }
    if (len < hdr + 4)
        return sf_err_set(err, SF_ECORRUPT,
                          "block at record %llu: %zu bytes, header of %u records needs %zu", kf,
                          len, n, hdr + 4);
    uint32_t crc = sf_le32(v + hdr);
    if (sf_crc32(v, hdr) != crc)
        return sf_err_set(err, SF_ECORRUPT, "block at record %llu: header CRC mismatch", kf);
    uint64_t first = sf_le64(v + 8);
    if (first != key_first)
        return sf_err_set(err, SF_ECORRUPT, "block at record %llu: header says first record %llu",
                          kf, (unsigned long long)first);
    sf_block_view b = {.version = version,
                       .n = n,
                       .m = m,
                       .first = first,
                       .frames = v + hdr + 4,
                       .frames_len = len - hdr - 4,
                       .header_len = hdr + 4};
    if (version == 2) {
        b.frame_recs = v + 20;
        b.ends = v + 20 + 4 * (size_t)m;
        b.rec_ends = v + 20 + 8 * (size_t)m;
        int rc = parse_v2_tables(&b, err);
        if (rc < 0)
            return rc;
    } else {
        b.ends = v + 16;
        uint32_t prev = 0;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t e = sf_le32(b.ends + 4 * k);
            if (e <= prev)
                return sf_err_set(err, SF_ECORRUPT, "record %llu: frame end %u not after %u",
                                  (unsigned long long)(first + k), e, prev);
            if (e > b.frames_len)
                return sf_err_set(err, SF_ECORRUPT,
                                  "record %llu: frame ends at %u, past the block's %zu bytes",
                                  (unsigned long long)(first + k), e, b.frames_len);
            prev = e;
        }
        if (prev != b.frames_len)
            return sf_err_set(err, SF_ECORRUPT,
                              "block at record %llu: frames end at %u, value has %zu frame bytes",
                              kf, prev, b.frames_len);
    }
    *out = b;
    return SF_OK;
}

void sf_block_frame(const sf_block_view *b, uint32_t j, sf_frame_ref *out) {
    uint32_t start = j ? sf_le32(b->ends + 4 * (j - 1)) : 0;
    out->z = b->frames + start;
    out->zlen = sf_le32(b->ends + 4 * j) - start;
    if (b->version == 2) {
        uint32_t lo = j ? sf_le32(b->frame_recs + 4 * (j - 1)) : 0;
        out->first = b->first + lo;
        out->n = sf_le32(b->frame_recs + 4 * j) - lo;
        out->rec_ends = b->rec_ends + 4 * (size_t)lo;
    } else {
        out->first = b->first + j;
        out->n = 1;
        out->rec_ends = NULL;
    }
}

uint32_t sf_block_frame_of(const sf_block_view *b, uint32_t k) {
    if (b->version != 2)
        return k;
    /* the first frame whose cumulative record count is above k */
    uint32_t lo = 0, hi = b->m - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sf_le32(b->frame_recs + 4 * mid) > k)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

int sf_frame_decompress(ZSTD_DCtx *dctx, const sf_frame_ref *f, uint64_t want, sf_buf *out,
                        uint64_t *allocs, sf_err *err) {
    char who[96];
    if (f->n > 1)
        snprintf(who, sizeof who, "record %llu (in the frame of records %llu..%llu)",
                 (unsigned long long)want, (unsigned long long)f->first,
                 (unsigned long long)(f->first + f->n - 1));
    else
        snprintf(who, sizeof who, "record %llu", (unsigned long long)want);
    const uint8_t *frame = f->z;
    size_t len = f->zlen;
    out->len = 0;
    size_t csize = ZSTD_findFrameCompressedSize(frame, len);
    if (ZSTD_isError(csize))
        return sf_err_set(err, SF_ECORRUPT, "%s: zstd frame: %s", who, ZSTD_getErrorName(csize));
    if (csize != len)
        return sf_err_set(err, SF_ECORRUPT, "%s: zstd frame is %zu bytes, slot is %zu", who, csize,
                          len);
    unsigned long long size = ZSTD_getFrameContentSize(frame, len);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
        return sf_err_set(err, SF_ECORRUPT, "%s: zstd frame without a content size", who);
    if (size == 0 || size > SF_SHARD_MAX_RECORD_BYTES)
        return sf_err_set(err, SF_ECORRUPT, "%s: content size %llu out of range", who, size);
    /* Frames always carry zstd's content checksum (XXH64 of the content),
     * so corruption of the compressed bytes cannot decode into a wrong
     * record unnoticed. Bit 2 of the frame header descriptor is the
     * checksum flag (RFC 8878 §3.1.1.1.1); the magic takes bytes 0..3. */
    if (len < 5 || !(frame[4] & 0x04))
        return sf_err_set(err, SF_ECORRUPT, "%s: zstd frame without checksum", who);
    if (f->rec_ends && sf_le32(f->rec_ends + 4 * (f->n - 1)) != size)
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: the frame's records end at %u, its content is %llu bytes", who,
                          sf_le32(f->rec_ends + 4 * (f->n - 1)), size);
    int rc = sf_buf_reserve(out, (size_t)size, allocs);
    if (rc < 0)
        return sf_err_set(err, rc, "%s: out of memory", who);
    size_t got = ZSTD_decompressDCtx(dctx, out->p, (size_t)size, frame, len);
    if (ZSTD_isError(got))
        return sf_err_set(err, SF_ECORRUPT, "%s: zstd: %s", who, ZSTD_getErrorName(got));
    if (got != size)
        return sf_err_set(err, SF_ECORRUPT, "%s: decompressed %zu bytes, frame says %llu", who, got,
                          size);
    out->len = got;
    return SF_OK;
}
