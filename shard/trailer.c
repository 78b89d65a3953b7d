/* trailer.c — the seal trailer: per-page CRCs, structure-page list, footer.
 *
 * Why a trailer: LMDB trusts its file. A flipped byte in a B-tree page can
 * send it to a page past the end of the file (SIGBUS) and a truncated file
 * does the same; a flipped byte in unused space is invisible to any
 * record-level check. The trailer, appended after LMDB's last page when the
 * shard is sealed, lets a reader prove the pages LMDB will walk are the pages
 * that were written before LMDB sees them, and lets verify find a change in
 * any byte of the file. LMDB itself ignores bytes past its last page. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"
#include "shard/internal.h"

int sf_trailer_write(int fd, uint64_t data_bytes, uint32_t page_size, const uint32_t *struct_page,
                     size_t nstruct, sf_err *err) {
    if (page_size == 0 || data_bytes % page_size != 0)
        return sf_err_set(err, SF_EFORMAT, "LMDB data is %llu bytes, not whole %u-byte pages",
                          (unsigned long long)data_bytes, page_size);
    uint64_t npages = data_bytes / page_size;
    size_t table_len = 4 * ((size_t)npages + nstruct);
    uint8_t *table = malloc(table_len ? table_len : 1);
    size_t chunk_pages = (1u << 20) / page_size ? (1u << 20) / page_size : 1;
    uint8_t *chunk = malloc(chunk_pages * page_size);
    int rc = SF_OK;
    if (!table || !chunk) {
        rc = sf_err_set(err, SF_ENOMEM, "out of memory for the seal trailer");
        goto out;
    }
    for (uint64_t pg = 0; pg < npages; pg += chunk_pages) {
        uint64_t n = npages - pg < chunk_pages ? npages - pg : chunk_pages;
        int e = sf_pread_full(fd, chunk, (size_t)n * page_size, pg * page_size);
        if (e < 0) {
            rc = sf_err_set(err, SF_EIO, "reading page %llu for the seal trailer: %s",
                            (unsigned long long)pg, sf_io_reason(e));
            goto out;
        }
        for (uint64_t k = 0; k < n; k++)
            sf_put_le32(table + 4 * (pg + k), sf_crc32(chunk + k * page_size, page_size));
    }
    for (size_t k = 0; k < nstruct; k++)
        sf_put_le32(table + 4 * (npages + k), struct_page[k]);
    uint8_t footer[SF_TRAILER_FOOTER] = {0};
    memcpy(footer, SF_TRAILER_MAGIC, 8);
    sf_put_le32(footer + 8, SF_TRAILER_VERSION);
    sf_put_le32(footer + 12, page_size);
    sf_put_le64(footer + 16, data_bytes);
    sf_put_le64(footer + 24, npages);
    sf_put_le64(footer + 32, nstruct);
    sf_put_le32(footer + 40, sf_crc32(table, table_len));
    sf_put_le32(footer + 60, sf_crc32(footer, 60));
    int e = sf_pwrite_full(fd, table, table_len, data_bytes);
    if (e == SF_OK)
        e = sf_pwrite_full(fd, footer, sizeof footer, data_bytes + table_len);
    if (e < 0)
        rc = sf_err_set(err, SF_EIO, "writing the seal trailer: %s", sf_io_reason(e));
    else if (fsync(fd) != 0)
        rc = sf_err_set(err, SF_EIO, "syncing the seal trailer: %s", strerror(errno));
out:
    free(table);
    free(chunk);
    return rc;
}

/* Whether a complete, intact footer that describes itself as ending at its
 * own offset lies between `from` and the end: the shard was sealed and then
 * appended to. Scans at most 16 MiB (a page table of 4 M pages). Returns the
 * footer's offset, or -1. */
static int64_t find_sealed_footer(int fd, uint64_t from, uint64_t size) {
    if (size < from + SF_TRAILER_FOOTER)
        return -1;
    uint64_t len = size - from;
    if (len > (16u << 20))
        len = 16u << 20;
    uint8_t *buf = malloc(len);
    if (!buf || sf_pread_full(fd, buf, len, from) < 0) {
        free(buf);
        return -1;
    }
    int64_t found = -1;
    for (uint64_t k = 0; k + SF_TRAILER_FOOTER <= len && found < 0; k++) {
        const uint8_t *f = buf + k;
        if (f[0] != SF_TRAILER_MAGIC[0] || memcmp(f, SF_TRAILER_MAGIC, 8) != 0 ||
            sf_crc32(f, 60) != sf_le32(f + 60))
            continue;
        uint64_t data = sf_le64(f + 16), npages = sf_le64(f + 24), nstruct = sf_le64(f + 32);
        if (npages < size && nstruct < size && data + 4 * (npages + nstruct) == from + k)
            found = (int64_t)(from + k);
    }
    free(buf);
    return found;
}

/* How long an LMDB file's own data is, from its two meta pages, without
 * LMDB: its open trusts the meta pages (a page size of 0 in a damaged
 * file divides by zero), and this runs on files that failed the trailer.
 * The layout is LMDB 0.9's on a 64-bit little-endian host (mdb.c: a 16-byte
 * page header, then MDB_meta: magic 0xBEEFC0DE, version 1, address, map
 * size, two 48-byte MDB_db of which the first's md_pad is the page size,
 * last page number, transaction id); the meta with the larger transaction
 * id is current. 1 and *extent in bytes, or 0 when this is not LMDB. */
static int lmdb_extent(int fd, uint64_t size, uint64_t *extent) {
    enum { MAGIC = 16, VERSION = 20, PSIZE = 40, LAST_PG = 136, TXNID = 144, META = 152 };
    uint8_t m[2][META];
    uint32_t psize = 0;
    int valid[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        uint64_t off = k == 0 ? 0 : psize;
        if (off + META > size || sf_pread_full(fd, m[k], META, off) < 0)
            break;
        if (sf_le32(m[k] + MAGIC) != 0xBEEFC0DEu || sf_le32(m[k] + VERSION) != 1)
            break;
        uint32_t ps = sf_le32(m[k] + PSIZE);
        if (ps < 512 || ps > 65536 || (ps & (ps - 1)) != 0 || (k == 1 && ps != psize))
            break;
        psize = ps;
        valid[k] = 1;
    }
    if (!valid[0])
        return 0;
    int cur = valid[1] && sf_le64(m[1] + TXNID) > sf_le64(m[0] + TXNID) ? 1 : 0;
    uint64_t last = sf_le64(m[cur] + LAST_PG);
    if (last > size / psize + 1)
        last = size / psize + 1; /* beyond the file either way */
    *extent = (last + 1) * psize;
    return 1;
}

/* 1 when the last 64 bytes, their magic aside, are a footer that describes
 * this file exactly (LMDB data of `extent` bytes, then the page table, then
 * the footer, ending at `size`): the footer is there but damaged, not cut
 * off. */
static int footer_damaged(int fd, uint64_t extent, uint64_t size) {
    uint8_t f[SF_TRAILER_FOOTER];
    if (size - extent < SF_TRAILER_FOOTER || sf_pread_full(fd, f, sizeof f, size - sizeof f) < 0)
        return 0;
    uint32_t psize = sf_le32(f + 12);
    uint64_t data = sf_le64(f + 16), npages = sf_le64(f + 24), nstruct = sf_le64(f + 32);
    return psize >= 512 && npages <= size / psize && data == extent && data == npages * psize &&
           nstruct >= 2 && nstruct <= npages &&
           data + 4 * (npages + nstruct) + SF_TRAILER_FOOTER == size;
}

/* No valid footer: tell "never sealed" from "cut short" by how long the
 * LMDB data is (its meta pages say), and "sealed, then appended to" by
 * finding the footer before the end. */
static int classify_unsealed(int fd, const char *path, uint64_t size, sf_err *err) {
    uint64_t extent = 0;
    int ok = lmdb_extent(fd, size, &extent);
    if (!ok)
        return sf_err_set(err, SF_EFORMAT,
                          "%s: not a shard (no seal trailer, and not an LMDB file; %llu bytes)",
                          path, (unsigned long long)size);
    if (extent > size)
        return sf_err_set(err, SF_EFORMAT,
                          "%s: truncated: LMDB data needs %llu bytes, the file has %llu", path,
                          (unsigned long long)extent, (unsigned long long)size);
    /* A writer's file may be mid-commit (pages written, meta not yet): for
     * a .tmp name, anything without a trailer is simply not sealed. */
    if (sf_has_suffix(path, SF_SHARD_TEMP_SUFFIX))
        return sf_shard_refuse_temp(path, err);
    int64_t footer = extent < size ? find_sealed_footer(fd, extent, size) : -1;
    if (footer >= 0) {
        uint64_t after = size - (uint64_t)footer - SF_TRAILER_FOOTER;
        return sf_err_set(err, SF_EFORMAT,
                          "%s: %llu byte%s follow%s its seal trailer (the file was appended "
                          "to after sealing; the shard before them may be intact)",
                          path, (unsigned long long)after, after == 1 ? "" : "s",
                          after == 1 ? "s" : "");
    }
    if (extent < size && footer_damaged(fd, extent, size))
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: seal trailer footer damaged: its magic is not %.8s (footer CRC "
                          "mismatch), though the rest of it describes this file",
                          path, SF_TRAILER_MAGIC);
    if (extent < size)
        return sf_err_set(err, SF_EFORMAT,
                          "%s: truncated: the seal trailer is cut short (%llu bytes after the "
                          "LMDB data, no footer)",
                          path, (unsigned long long)(size - extent));
    return sf_err_set(err, SF_ESTATE, "%s: not sealed: no seal trailer after the LMDB data", path);
}

int sf_trailer_read(int fd, const char *path, uint64_t size, sf_trailer *out, sf_err *err) {
    memset(out, 0, sizeof *out);
    uint8_t f[SF_TRAILER_FOOTER];
    if (size < SF_TRAILER_FOOTER || sf_pread_full(fd, f, sizeof f, size - sizeof f) < 0 ||
        memcmp(f, SF_TRAILER_MAGIC, 8) != 0)
        return classify_unsealed(fd, path, size, err);
    if (sf_crc32(f, 60) != sf_le32(f + 60))
        return sf_err_set(err, SF_ECORRUPT, "%s: seal trailer footer CRC mismatch", path);
    if (sf_le32(f + 8) != SF_TRAILER_VERSION)
        return sf_err_set(err, SF_EVERSION, "%s: seal trailer version %u, this reader knows %u",
                          path, sf_le32(f + 8), SF_TRAILER_VERSION);
    uint32_t psize = sf_le32(f + 12);
    uint64_t data = sf_le64(f + 16), npages = sf_le64(f + 24), nstruct = sf_le64(f + 32);
    if (psize < 512 || psize > 65536 || (psize & (psize - 1)) != 0)
        return sf_err_set(err, SF_ECORRUPT, "%s: seal trailer: page size %u", path, psize);
    /* Every quantity is bounded by the file size before it is multiplied. */
    if (npages > size / psize || data != npages * psize || nstruct < 2 || nstruct > npages ||
        data + 4 * (npages + nstruct) + SF_TRAILER_FOOTER != size)
        return sf_err_set(err, SF_EFORMAT,
                          "%s: truncated or damaged: the seal trailer describes %llu pages of "
                          "%u bytes and %llu structure pages, which do not add up to the file's "
                          "%llu bytes",
                          path, (unsigned long long)npages, psize, (unsigned long long)nstruct,
                          (unsigned long long)size);
    size_t table_len = 4 * (size_t)(npages + nstruct);
    uint8_t *table = malloc(table_len);
    if (!table)
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory for the page table", path);
    int e = sf_pread_full(fd, table, table_len, data);
    if (e < 0) {
        int rc = sf_err_set(err, SF_EIO, "%s: reading the page table: %s", path, sf_io_reason(e));
        free(table);
        return rc;
    }
    if (sf_crc32(table, table_len) != sf_le32(f + 40)) {
        free(table);
        return sf_err_set(err, SF_ECORRUPT, "%s: seal trailer page table CRC mismatch", path);
    }
    out->page_size = psize;
    out->data_bytes = data;
    out->npages = npages;
    out->nstruct = nstruct;
    out->page_crc = malloc(4 * (size_t)npages + 4);
    out->struct_page = malloc(4 * (size_t)nstruct + 4);
    if (!out->page_crc || !out->struct_page) {
        free(table);
        sf_trailer_free(out);
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory for the page table", path);
    }
    for (uint64_t k = 0; k < npages; k++)
        out->page_crc[k] = sf_le32(table + 4 * k);
    int rc = SF_OK;
    for (uint64_t k = 0; k < nstruct; k++) {
        uint32_t pg = sf_le32(table + 4 * (npages + k));
        if (pg >= npages || (k > 0 && pg <= out->struct_page[k - 1]) || (k < 2 && pg != k)) {
            rc = sf_err_set(err, SF_ECORRUPT,
                            "%s: seal trailer: structure page list is invalid "
                            "at entry %llu (page %u)",
                            path, (unsigned long long)k, pg);
            break;
        }
        out->struct_page[k] = pg;
    }
    free(table);
    if (rc < 0)
        sf_trailer_free(out);
    return rc;
}

void sf_trailer_free(sf_trailer *t) {
    free(t->page_crc);
    free(t->struct_page);
    t->page_crc = NULL;
    t->struct_page = NULL;
}

int sf_trailer_check_page(int fd, const char *path, const sf_trailer *t, uint64_t pg,
                          uint8_t *scratch, sf_err *err) {
    int e = sf_pread_full(fd, scratch, t->page_size, pg * t->page_size);
    if (e < 0)
        return sf_err_set(err, SF_EIO, "%s: reading page %llu: %s", path, (unsigned long long)pg,
                          sf_io_reason(e));
    if (sf_crc32(scratch, t->page_size) != t->page_crc[pg])
        return sf_err_set(err, SF_ECORRUPT, "%s: page %llu (byte %llu..%llu): CRC mismatch", path,
                          (unsigned long long)pg, (unsigned long long)(pg * t->page_size),
                          (unsigned long long)((pg + 1) * t->page_size - 1));
    return SF_OK;
}
