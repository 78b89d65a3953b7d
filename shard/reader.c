/* reader.c — opening a sealed shard and reading its records.
 *
 * Open checks the seal trailer and the CRC of every structure page with
 * plain reads before LMDB maps the file; from then on every LMDB value is
 * bounds-checked against the checked data region before it is read, and
 * every record frame carries zstd's content checksum. One read-only
 * transaction stays open for the reader's life (the file never changes), so
 * values are read in place from the map. */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shard/internal.h"

struct sf_shard_reader {
    char *path;
    uint64_t file_bytes;
    sf_trailer trailer;
    MDB_env *env;
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_dbi records, meta;
    const uint8_t *map;
    Spirefleet__ShardManifest *manifest;
    uint64_t count;

    uint32_t format; /* the manifest's format_version */

    /* the block used last */
    int have_block;
    sf_block_view block;
    const uint8_t *block_val;
    size_t block_len;

    /* the zstd frame decoded last (its content in `raw`), and the record of
     * it that get_raw returned last */
    int have_frame;
    sf_frame_ref frame;
    const uint8_t *last;
    size_t last_len;

    ZSTD_DCtx *dctx;
    sf_buf raw;
    sf_arena arena;
    Spirefleet__LabelRecord *rec;
    uint64_t allocs, decoded;
};

uint64_t sf_shard_reader_count(const sf_shard_reader *r) {
    return r->count;
}

const Spirefleet__ShardManifest *sf_shard_reader_manifest(const sf_shard_reader *r) {
    return r->manifest;
}

uint64_t sf_shard_reader_file_bytes(const sf_shard_reader *r) {
    return r->file_bytes;
}

uint64_t sf_shard_reader_allocs(const sf_shard_reader *r) {
    return r->allocs;
}

uint64_t sf_shard_reader_frames_decoded(const sf_shard_reader *r) {
    return r->decoded;
}

uint32_t sf_shard_reader_format(const sf_shard_reader *r) {
    return r->format;
}

void sf_shard_reader_close(sf_shard_reader *r) {
    if (!r)
        return;
    if (r->cur)
        mdb_cursor_close(r->cur);
    if (r->txn)
        mdb_txn_abort(r->txn);
    if (r->env)
        mdb_env_close(r->env);
    if (r->manifest)
        spirefleet__shard_manifest__free_unpacked(r->manifest, NULL);
    sf_trailer_free(&r->trailer);
    ZSTD_freeDCtx(r->dctx);
    sf_buf_free(&r->raw);
    sf_arena_free(&r->arena);
    free(r->path);
    free(r);
}

/* A value LMDB returned must lie inside the data region the trailer's CRCs
 * cover. The leaf pages that locate values were CRC-checked at open, so
 * this holds by construction; the check stays as a second line. Without a
 * known map base (page size above the OS page) only the size is checked. */
static int value_in_map(const sf_shard_reader *r, const MDB_val *v) {
    const uint8_t *p = v->mv_data;
    uint64_t data = r->trailer.data_bytes;
    if (!r->map)
        return v->mv_size <= data;
    return p >= r->map && (uint64_t)(p - r->map) <= data &&
           v->mv_size <= data - (uint64_t)(p - r->map);
}

static int lmdb_err(const sf_shard_reader *r, int mrc, const char *what, sf_err *err) {
    int code = (mrc == MDB_CORRUPTED || mrc == MDB_PAGE_NOTFOUND || mrc == MDB_INVALID)
                   ? SF_ECORRUPT
                   : SF_EIO;
    return sf_err_set(err, code, "%s: LMDB %s: %s", r->path, what, mdb_strerror(mrc));
}

/* Read the block holding record i (the last key <= i) into r->block. */
static int load_block(sf_shard_reader *r, uint64_t i, sf_err *err) {
    uint8_t kb[8];
    sf_put_be64(kb, i);
    MDB_val key = {8, kb}, val;
    int mrc = mdb_cursor_get(r->cur, &key, &val, MDB_SET_RANGE);
    if (mrc == 0 && (key.mv_size != 8 || sf_be64(key.mv_data) != i))
        mrc = mdb_cursor_get(r->cur, &key, &val, MDB_PREV);
    else if (mrc == MDB_NOTFOUND)
        mrc = mdb_cursor_get(r->cur, &key, &val, MDB_LAST);
    r->have_block = 0;
    if (mrc == MDB_NOTFOUND)
        return sf_err_set(err, SF_ECORRUPT, "%s: record %llu: no block holds it", r->path,
                          (unsigned long long)i);
    if (mrc != 0)
        return lmdb_err(r, mrc, "cursor", err);
    if (key.mv_size != 8 || !value_in_map(r, &val))
        return sf_err_set(err, SF_ECORRUPT, "%s: record %llu: malformed block entry", r->path,
                          (unsigned long long)i);
    uint64_t first = sf_be64(key.mv_data);
    int rc = sf_block_parse(val.mv_data, val.mv_size, first, r->format, &r->block, err);
    if (rc < 0)
        return sf_err_prefix(err, "%s", r->path);
    if (i < first || i - first >= r->block.n)
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: record %llu: missing (the block at %llu holds %u records)", r->path,
                          (unsigned long long)i, (unsigned long long)first, r->block.n);
    r->block_val = val.mv_data;
    r->block_len = val.mv_size;
    r->have_block = 1;
    return SF_OK;
}

int sf_shard_reader_get_raw(sf_shard_reader *r, uint64_t i, const uint8_t **bytes, size_t *len,
                            size_t *frame_len, sf_err *err) {
    if (i >= r->count)
        return sf_err_set(err, SF_ENOTFOUND, "%s: record %llu: out of range (%llu records)",
                          r->path, (unsigned long long)i, (unsigned long long)r->count);
    int rc;
    /* the frame decoded last still holds i: no block lookup, no zstd */
    if (!r->have_frame || i < r->frame.first || i - r->frame.first >= r->frame.n) {
        if (!r->have_block || i < r->block.first || i - r->block.first >= r->block.n) {
            if ((rc = load_block(r, i, err)) < 0)
                return rc;
        }
        uint32_t j = sf_block_frame_of(&r->block, (uint32_t)(i - r->block.first));
        r->have_frame = 0;
        sf_block_frame(&r->block, j, &r->frame);
        if ((rc = sf_frame_decompress(r->dctx, &r->frame, i, &r->raw, &r->allocs, err)) < 0)
            return sf_err_prefix(err, "%s", r->path);
        r->have_frame = 1;
        r->decoded++;
    }
    size_t off, n;
    sf_frame_record(&r->frame, i, r->raw.len, &off, &n);
    r->last = r->raw.p + off;
    r->last_len = n;
    *bytes = r->last;
    *len = n;
    if (frame_len) /* the whole frame, counted once: at its first record */
        *frame_len = i == r->frame.first ? r->frame.zlen : 0;
    return SF_OK;
}

int sf_shard_reader_decode_last(sf_shard_reader *r, uint64_t i, const Spirefleet__LabelRecord **rec,
                                sf_err *err) {
    r->rec = NULL;
    int rc = sf_arena_reset(&r->arena);
    if (rc < 0)
        return sf_err_set(err, rc, "%s: out of memory", r->path);
    /* the record borrows its tensor bytes from the frame buffer, which the
     * next get_raw may overwrite: hence "valid until the next call" */
    if ((rc = sf_record_decode_borrowed(r->last, r->last_len, i, &r->arena, &r->rec, err)) < 0)
        return sf_err_prefix(err, "%s", r->path);
    *rec = r->rec;
    return SF_OK;
}

int sf_shard_reader_get(sf_shard_reader *r, uint64_t i, const Spirefleet__LabelRecord **rec,
                        sf_err *err) {
    const uint8_t *raw;
    size_t len;
    int rc = sf_shard_reader_get_raw(r, i, &raw, &len, NULL, err);
    if (rc < 0)
        return rc;
    return sf_shard_reader_decode_last(r, i, rec, err);
}

int sf_shard_reader_foreach(sf_shard_reader *r, sf_shard_visit_fn fn, void *ctx, sf_err *err) {
    for (uint64_t i = 0; i < r->count; i++) {
        const Spirefleet__LabelRecord *rec;
        int rc = sf_shard_reader_get(r, i, &rec, err);
        if (rc < 0)
            return rc;
        if ((rc = fn(ctx, i, rec, err)) != 0)
            return rc;
    }
    return SF_OK;
}

int sf_shard_reader_block_at(sf_shard_reader *r, uint64_t i, uint64_t *value_off, size_t *value_len,
                             sf_block_view *view, sf_err *err) {
    if (i >= r->count)
        return sf_err_set(err, SF_ENOTFOUND, "%s: record %llu: out of range", r->path,
                          (unsigned long long)i);
    if (!r->map)
        return sf_err_set(err, SF_EUNSUPPORTED,
                          "%s: file offsets unknown (page size %u above "
                          "the OS page size)",
                          r->path, r->trailer.page_size);
    if (!r->have_block || i < r->block.first || i - r->block.first >= r->block.n) {
        int rc = load_block(r, i, err);
        if (rc < 0)
            return rc;
    }
    *value_off = (uint64_t)(r->block_val - r->map);
    *value_len = r->block_len;
    *view = r->block;
    return SF_OK;
}

int sf_shard_reader_frames(sf_shard_reader *r, sf_frame_ref **out, size_t *n_out, sf_err *err) {
    *out = NULL;
    *n_out = 0;
    size_t n = 0, cap = 0;
    sf_frame_ref *v = NULL;
    for (uint64_t i = 0; i < r->count; i = r->block.first + r->block.n) {
        int rc = load_block(r, i, err);
        if (rc < 0) {
            free(v);
            return rc;
        }
        if (n + r->block.m > cap) {
            size_t c = cap ? 2 * cap : 256;
            while (c < n + r->block.m)
                c *= 2;
            sf_frame_ref *g = realloc(v, c * sizeof *g);
            if (!g) {
                free(v);
                return sf_err_set(err, SF_ENOMEM, "%s: out of memory", r->path);
            }
            v = g;
            cap = c;
        }
        for (uint32_t j = 0; j < r->block.m; j++)
            sf_block_frame(&r->block, j, &v[n++]);
    }
    *out = v;
    *n_out = n;
    return SF_OK;
}

int sf_shard_refuse_temp(const char *path, sf_err *err) {
    if (path && sf_has_suffix(path, SF_SHARD_TEMP_SUFFIX))
        return sf_err_set(err, SF_ESTATE,
                          "%s: not sealed: a writer's temporary file (still being written, or "
                          "its writer died before renaming it to .shard)",
                          path);
    return SF_OK;
}

int sf_shard_reader_open(const char *path, sf_shard_reader **out, sf_err *err) {
    *out = NULL;
    int rc = sf_shard_refuse_temp(path, err);
    return rc < 0 ? rc : sf_shard_reader_open_any(path, out, err);
}

/* Open: the checks of shard.h, in order. `fd` stays open only for them. */
/* The steps of sf_shard_reader_open_any(), in order, each returning SF_OK
 * or an error that names the shard and the step; the caller closes the
 * reader on any error (sf_shard_reader_close undoes what was done). */

/* 1: the file itself: a regular file whose seal trailer reads, and whose
 * LMDB structure pages match their CRCs (before LMDB reads any of them). */
static int open_check_file(sf_shard_reader *r, sf_err *err) {
    const char *path = r->path;
    struct stat st;
    int fd = sf_shard_open_file(path, &st, err);
    if (fd < 0)
        return fd;
    uint8_t *scratch = NULL;
    r->file_bytes = (uint64_t)st.st_size;
    int rc = sf_trailer_read(fd, path, r->file_bytes, &r->trailer, err);
    if (rc == SF_OK && !(scratch = malloc(r->trailer.page_size)))
        rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
    for (uint64_t k = 0; rc == SF_OK && k < r->trailer.nstruct; k++) {
        rc = sf_trailer_check_page(fd, path, &r->trailer, r->trailer.struct_page[k], scratch, err);
        if (rc < 0)
            sf_err_prefix(err, "LMDB structure page damaged");
    }
    free(scratch);
    close(fd);
    return rc;
}

/* 2: LMDB read-only on the file, agreeing with the trailer on the page
 * size and count; a read transaction. */
static int open_lmdb(sf_shard_reader *r, sf_err *err) {
    int mrc;
    if ((mrc = mdb_env_create(&r->env)) != 0 || (mrc = mdb_env_set_maxdbs(r->env, 2)) != 0 ||
        (mrc = mdb_env_set_mapsize(r->env, (size_t)r->trailer.data_bytes)) != 0 ||
        (mrc = mdb_env_open(r->env, r->path, MDB_RDONLY | MDB_NOLOCK | MDB_NOSUBDIR, 0444)) != 0)
        return lmdb_err(r, mrc, "open", err);
    MDB_envinfo info;
    MDB_stat est;
    if ((mrc = mdb_env_info(r->env, &info)) != 0 || (mrc = mdb_env_stat(r->env, &est)) != 0)
        return lmdb_err(r, mrc, "env_info", err);
    if (est.ms_psize != r->trailer.page_size ||
        (uint64_t)info.me_last_pgno + 1 != r->trailer.npages)
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: LMDB reports %llu pages of %u bytes, the seal trailer %llu of %u",
                          r->path, (unsigned long long)info.me_last_pgno + 1, est.ms_psize,
                          (unsigned long long)r->trailer.npages, r->trailer.page_size);
    if ((mrc = mdb_txn_begin(r->env, NULL, MDB_RDONLY, &r->txn)) != 0)
        return lmdb_err(r, mrc, "txn_begin", err);
    return SF_OK;
}

/* 3: the manifest, from a page checked against its CRC once mapped. */
static int open_manifest(sf_shard_reader *r, sf_err *err) {
    const char *path = r->path;
    int mrc = mdb_dbi_open(r->txn, SF_DB_META, 0, &r->meta);
    MDB_val key = {strlen(SF_MANIFEST_KEY), (void *)SF_MANIFEST_KEY}, val;
    if (mrc == 0)
        mrc = mdb_get(r->txn, r->meta, &key, &val);
    if (mrc == MDB_NOTFOUND)
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: no manifest: the `meta` database has no \"manifest\" entry", path);
    if (mrc != 0)
        return lmdb_err(r, mrc, "reading the manifest", err);
    /* Find the map from the manifest's page (a structure page, checked
     * above) and confirm it: the mapped page must have that page's CRC. */
    r->map = sf_lmdb_map_base(val.mv_data, r->trailer.page_size, r->trailer.npages);
    if (r->map) {
        uint64_t pg = (uint64_t)((const uint8_t *)val.mv_data - r->map) / r->trailer.page_size;
        if (sf_crc32(r->map + pg * r->trailer.page_size, r->trailer.page_size) !=
            r->trailer.page_crc[pg])
            return sf_err_set(err, SF_ECORRUPT,
                              "%s: the manifest's page %llu does not match its "
                              "CRC once mapped",
                              path, (unsigned long long)pg);
    }
    if (!value_in_map(r, &val))
        return sf_err_set(err, SF_ECORRUPT, "%s: manifest entry points outside the file", path);
    int rc = sf_manifest_decode(val.mv_data, val.mv_size, &r->manifest, err);
    if (rc < 0)
        return sf_err_prefix(err, "%s", path);
    r->count = r->manifest->record_count;
    r->format = r->manifest->format_version;
    return SF_OK;
}

/* 4: the records database: as many blocks as the manifest says, the last
 * one ending at its record count; a zstd context to read them. */
static int open_records(sf_shard_reader *r, sf_err *err) {
    const char *path = r->path;
    int mrc;
    if ((mrc = mdb_dbi_open(r->txn, SF_DB_RECORDS, 0, &r->records)) != 0 ||
        (mrc = mdb_cursor_open(r->txn, r->records, &r->cur)) != 0)
        return lmdb_err(r, mrc, "opening the records database", err);
    MDB_stat rst;
    if ((mrc = mdb_stat(r->txn, r->records, &rst)) != 0)
        return lmdb_err(r, mrc, "stat", err);
    if (rst.ms_entries != r->manifest->block_count)
        return sf_err_set(err, SF_ECORRUPT, "%s: %llu blocks in `records`, the manifest says %llu",
                          path, (unsigned long long)rst.ms_entries,
                          (unsigned long long)r->manifest->block_count);
    r->dctx = ZSTD_createDCtx();
    if (!r->dctx)
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
    if (r->count == 0)
        return SF_OK;
    int rc = load_block(r, r->count - 1, err);
    if (rc < 0)
        return rc;
    if (r->block.first + r->block.n != r->count)
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: the last block holds records %llu..%llu, the manifest counts "
                          "%llu",
                          path, (unsigned long long)r->block.first,
                          (unsigned long long)(r->block.first + r->block.n - 1),
                          (unsigned long long)r->count);
    return SF_OK;
}

int sf_shard_reader_open_any(const char *path, sf_shard_reader **out, sf_err *err) {
    *out = NULL;
    if (!path)
        return sf_err_set(err, SF_EINVAL, "shard reader: NULL path");
    sf_shard_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
    }
    sf_arena_init(&r->arena, &r->allocs);
    int rc = open_check_file(r, err);
    if (rc == SF_OK)
        rc = open_lmdb(r, err);
    if (rc == SF_OK)
        rc = open_manifest(r, err);
    if (rc == SF_OK)
        rc = open_records(r, err);
    if (rc < 0) {
        sf_shard_reader_close(r);
        return rc;
    }
    *out = r;
    return SF_OK;
}
