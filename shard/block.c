/* block.c — parsing a record block and decompressing one record's frame.
 *
 * Everything here reads bytes that came from disk: every offset is checked
 * against the value's length before it is followed. */
#include <string.h>

#include "shard/internal.h"

int sf_block_parse(const uint8_t *v, size_t len, uint64_t key_first, sf_block_view *out,
                   sf_err *err) {
    unsigned long long kf = (unsigned long long)key_first;
    if (len < SF_BLOCK_HEADER_MIN)
        return sf_err_set(err, SF_ECORRUPT, "block at record %llu: %zu bytes, too short", kf, len);
    if (sf_le32(v) != SF_BLOCK_MAGIC)
        return sf_err_set(err, SF_ECORRUPT, "block at record %llu: bad magic 0x%08x", kf,
                          sf_le32(v));
    uint32_t n = sf_le32(v + 4);
    if (n == 0 || n > SF_SHARD_MAX_BLOCK_RECORDS)
        return sf_err_set(err, SF_ECORRUPT, "block at record %llu: record count %u", kf, n);
    size_t hdr = 16 + 4 * (size_t)n;
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
    const uint8_t *ends = v + 16;
    size_t frames_len = len - hdr - 4;
    uint32_t prev = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t e = sf_le32(ends + 4 * k);
        if (e <= prev)
            return sf_err_set(err, SF_ECORRUPT, "record %llu: frame end %u not after %u",
                              (unsigned long long)(first + k), e, prev);
        if (e > frames_len)
            return sf_err_set(err, SF_ECORRUPT,
                              "record %llu: frame ends at %u, past the block's %zu bytes",
                              (unsigned long long)(first + k), e, frames_len);
        prev = e;
    }
    if (prev != frames_len)
        return sf_err_set(err, SF_ECORRUPT,
                          "block at record %llu: frames end at %u, value has %zu frame bytes", kf,
                          prev, frames_len);
    out->n = n;
    out->first = first;
    out->ends = ends;
    out->frames = v + hdr + 4;
    out->frames_len = frames_len;
    return SF_OK;
}

int sf_frame_decompress(ZSTD_DCtx *dctx, const uint8_t *frame, size_t len, uint64_t index,
                        sf_buf *out, uint64_t *allocs, sf_err *err) {
    unsigned long long ix = (unsigned long long)index;
    size_t csize = ZSTD_findFrameCompressedSize(frame, len);
    if (ZSTD_isError(csize))
        return sf_err_set(err, SF_ECORRUPT, "record %llu: zstd frame: %s", ix,
                          ZSTD_getErrorName(csize));
    if (csize != len)
        return sf_err_set(err, SF_ECORRUPT, "record %llu: zstd frame is %zu bytes, slot is %zu", ix,
                          csize, len);
    unsigned long long size = ZSTD_getFrameContentSize(frame, len);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
        return sf_err_set(err, SF_ECORRUPT, "record %llu: zstd frame without a content size", ix);
    if (size == 0 || size > SF_SHARD_MAX_RECORD_BYTES)
        return sf_err_set(err, SF_ECORRUPT, "record %llu: content size %llu out of range", ix,
                          size);
    /* Record frames always carry zstd's content checksum (XXH64 of the
     * content), so corruption of the compressed bytes cannot decode into a
     * wrong record unnoticed. Bit 2 of the frame header descriptor is the
     * checksum flag (RFC 8878 §3.1.1.1.1); the magic takes bytes 0..3. */
    if (len < 5 || !(frame[4] & 0x04))
        return sf_err_set(err, SF_ECORRUPT, "record %llu: zstd frame without checksum", ix);
    out->len = 0;
    int rc = sf_buf_reserve(out, (size_t)size, allocs);
    if (rc < 0)
        return sf_err_set(err, rc, "record %llu: out of memory", ix);
    size_t got = ZSTD_decompressDCtx(dctx, out->p, (size_t)size, frame, len);
    if (ZSTD_isError(got))
        return sf_err_set(err, SF_ECORRUPT, "record %llu: zstd: %s", ix, ZSTD_getErrorName(got));
    if (got != size)
        return sf_err_set(err, SF_ECORRUPT, "record %llu: decompressed %zu bytes, frame says %llu",
                          ix, got, size);
    out->len = got;
    return SF_OK;
}
