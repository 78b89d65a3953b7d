/* test_shard.c — label shards: writer, reader, seal, verify, pull.
 *
 * Records come from tests/support/label_synth (realistic shapes); expected
 * values are either written out by hand (value targets), recomputed here
 * independently (the content digest with libsodium over the packed bytes),
 * or the exact bytes that went in (round trips compare packed protobuf). */
#define _GNU_SOURCE /* nftw */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/io.h"
#include "label_synth.h"
#include "sf_check.h"
#include "shard/batch.h"
#include "shard/internal.h"

/* ---- helpers ---------------------------------------------------------------- */

/* Every test's scratch directory: the suite's checked fixture makes it
 * before each test (make_tmpdir) and removes it after (remove_tmpdir). */
static char tmpdir[256];

static void make_tmpdir(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sf-shard-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static void remove_tmpdir(void) {
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char *path_in(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

/* The default synthetic records' parameters. */
static synth_params default_params(void) {
    synth_params p;
    synth_params_default(&p);
    return p;
}

/* The shard info of records made with p. */
static sf_shard_info info_of(const synth_params *p) {
    sf_shard_info info;
    synth_info(p, &info);
    return info;
}

/* A writer at path_in(name) with options o (NULL: the defaults), which must
 * open. */
static sf_shard_writer *writer_at(const char *name, const sf_shard_info *info,
                                  const sf_shard_writer_opts *o) {
    sf_shard_writer *w = NULL;
    sf_err err = {0};
    ck_assert_msg(sf_shard_writer_open(path_in(name), info, o, &w, &err) == SF_OK, "%s", err.msg);
    return w;
}

/* A writer at path_in(name) of p's records (info_of), default options. */
static sf_shard_writer *default_writer(const char *name, const synth_params *p) {
    sf_shard_info info = info_of(p);
    return writer_at(name, &info, NULL);
}

static synth_record *synth_new(void) {
    synth_record *s = malloc(sizeof *s);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* Appending rec to w fails with status rc and a message containing words. */
static void append_refused(sf_shard_writer *w, const Spirefleet__LabelRecord *rec, int rc,
                           const char *words) {
    sf_err err = {0};
    ck_assert_int_eq(sf_shard_writer_append(w, rec, &err), rc);
    ck_assert_msg(strstr(err.msg, words), "%s", err.msg);
}

/* Record i of p's stream (malloc'd). */
static synth_record *synth_at(const synth_params *p, uint64_t i) {
    synth_record *s = synth_new();
    synth_fill(s, p, i);
    return s;
}

/* Packed bytes of synthetic record i (caller frees). */
static uint8_t *packed(const synth_params *p, uint64_t i, size_t *len) {
    synth_record *s = synth_new();
    synth_fill(s, p, i);
    *len = spirefleet__label_record__get_packed_size(&s->rec);
    uint8_t *b = malloc(*len);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(spirefleet__label_record__pack(&s->rec, b), *len);
    free(s);
    return b;
}

/* The content digest computed here, independently of the writer (libsodium,
 * the framing spelled out again): SHA-256 over (u64 little-endian length,
 * packed bytes) for each record in order. One record: */
static void expected_digest_add(crypto_hash_sha256_state *st, const Spirefleet__LabelRecord *rec) {
    size_t len = spirefleet__label_record__get_packed_size(rec);
    uint8_t *b = malloc(len), le[8];
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(spirefleet__label_record__pack(rec, b), len);
    for (int k = 0; k < 8; k++)
        le[k] = (uint8_t)((uint64_t)len >> (8 * k));
    crypto_hash_sha256_update(st, le, 8);
    crypto_hash_sha256_update(st, b, len);
    free(b);
}

/* ... and synthetic records 0..n-1. */
static void expected_digest(const synth_params *p, uint64_t n, uint8_t out[32]) {
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    synth_record *s = synth_new();
    for (uint64_t i = 0; i < n; i++) {
        synth_fill(s, p, i);
        expected_digest_add(&st, &s->rec);
    }
    free(s);
    crypto_hash_sha256_final(&st, out);
}

/* n synthetic records sealed at `path` under `info`. */
static int write_shard_as(const char *path, const sf_shard_info *info, const synth_params *p,
                          uint64_t n, const sf_shard_writer_opts *opts,
                          const Spirefleet__JobStats *stats, uint8_t digest[32], sf_err *err) {
    sf_shard_writer *w = NULL;
    int rc = sf_shard_writer_open(path, info, opts, &w, err);
    if (rc < 0)
        return rc;
    synth_record *s = synth_new();
    for (uint64_t i = 0; i < n; i++) {
        synth_fill(s, p, i);
        if ((rc = sf_shard_writer_append(w, &s->rec, err)) < 0) {
            free(s);
            sf_shard_writer_abort(w);
            return rc;
        }
    }
    free(s);
    return sf_shard_writer_seal(w, stats, digest, err);
}

static int write_shard(const char *path, const synth_params *p, uint64_t n,
                       const sf_shard_writer_opts *opts, const Spirefleet__JobStats *stats,
                       uint8_t digest[32], sf_err *err) {
    sf_shard_info info;
    synth_info(p, &info);
    return write_shard_as(path, &info, p, n, opts, stats, digest, err);
}

/* path_in(name): a shard of n default records, written with the default
 * options, which must succeed. */
static const char *shard_of(const char *name, uint64_t n) {
    synth_params p = default_params();
    sf_err err = {0};
    const char *path = path_in(name);
    ck_assert_msg(write_shard(path, &p, n, NULL, NULL, NULL, &err) == SF_OK, "%s", err.msg);
    return path;
}

static uint64_t file_size(const char *path) {
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

static void flip_byte(const char *path, uint64_t off) {
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    uint8_t b;
    ck_assert_int_eq(pread(fd, &b, 1, (off_t)off), 1);
    b ^= 0x40;
    ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

static size_t count_files(const char *suffix) {
    DIR *d = opendir(tmpdir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += sf_has_suffix(de->d_name, suffix);
    closedir(d);
    return n;
}

static const sf_shard_writer_opts small_blocks = {.block_bytes = 16 << 10};

/* ---- round trip ---------------------------------------------------------------- */

START_TEST(round_trip_every_field_and_manifest) {
    synth_params p = default_params();
    const uint64_t n = 300;
    Spirefleet__JobStats stats = SPIREFLEET__JOB_STATS__INIT;
    Spirefleet__Counter c = SPIREFLEET__COUNTER__INIT, *cs[1] = {&c};
    stats.fights = 3;
    stats.fights_won = 2;
    stats.fallbacks = 5;
    c.name = "eval_timeout";
    c.value = 5;
    stats.n_fallback_by_kind = 1;
    stats.fallback_by_kind = cs;
    uint8_t digest[32], want[32];
    sf_err err = {0};
    const char *path = path_in("a.shard");
    ck_assert_msg(write_shard(path, &p, n, &small_blocks, &stats, digest, &err) == SF_OK, "%s",
                  err.msg);
    expected_digest(&p, n, want);
    ck_assert_mem_eq(digest, want, 32);
    ck_assert_uint_eq(count_files(SF_SHARD_TEMP_SUFFIX), 0);

    sf_shard_reader *r = NULL;
    ck_assert_msg(sf_shard_reader_open(path, &r, &err) == SF_OK, "%s", err.msg);
    ck_assert_uint_eq(sf_shard_reader_count(r), n);
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    ck_assert_uint_eq(m->format_version, SF_SHARD_FORMAT_VERSION);
    ck_assert_uint_eq(m->schema_version, SF_LABEL_SCHEMA_VERSION);
    ck_assert_str_eq(m->run_id, "synth-run");
    ck_assert_uint_eq(m->job_id, 7);
    ck_assert_uint_eq(m->seed_first, 1000);
    ck_assert_uint_eq(m->seed_last, 1000 + (n - 1) / 240); /* 240 decisions a game */
    ck_assert_uint_eq(m->record_count, n);
    ck_assert_uint_eq(m->engine_version, 1);
    ck_assert_uint_eq(m->tokenizer_version, 1);
    ck_assert_str_eq(m->model_sha256, "rollout");
    ck_assert_str_eq(m->config_digest, p.config_digest);
    ck_assert_str_eq(m->worker_id, "synth-worker");
    ck_assert_int_eq(m->created_unix, 1700000000);
    ck_assert_str_eq(m->compression, "zstd");
    ck_assert_int_eq(m->compression_level, SF_SHARD_DEFAULT_LEVEL);
    ck_assert_mem_eq(m->content_digest.data, want, 32);
    ck_assert_ptr_nonnull(m->stats);
    ck_assert_uint_eq(m->stats->fights, 3);
    ck_assert_uint_eq(m->stats->fights_won, 2);
    ck_assert_uint_eq(m->stats->n_fallback_by_kind, 1);
    ck_assert_str_eq(m->stats->fallback_by_kind[0]->name, "eval_timeout");
    ck_assert_uint_eq(m->stats->fallback_by_kind[0]->value, 5);
    ck_assert_uint_gt(m->block_count, 1); /* 16 KiB blocks: several */

    /* Every field: the record read back packs to exactly the bytes written. */
    uint64_t raw_total = 0, frame_total = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t len;
        uint8_t *b = packed(&p, i, &len);
        const Spirefleet__LabelRecord *rec;
        ck_assert_msg(sf_shard_reader_get(r, i, &rec, &err) == SF_OK, "%s", err.msg);
        size_t back_len = spirefleet__label_record__get_packed_size(rec);
        ck_assert_uint_eq(back_len, len);
        uint8_t *back = malloc(back_len);
        spirefleet__label_record__pack(rec, back);
        ck_assert_mem_eq(back, b, len);
        free(back);
        const uint8_t *raw;
        size_t rlen, flen;
        ck_assert_int_eq(sf_shard_reader_get_raw(r, i, &raw, &rlen, &flen, &err), SF_OK);
        ck_assert_mem_eq(raw, b, len);
        raw_total += rlen;
        frame_total += flen;
        free(b);
    }
    ck_assert_uint_eq(raw_total, m->raw_bytes);
    ck_assert_uint_eq(frame_total, m->payload_bytes);

    /* Spot-check named fields against the generator directly. */
    synth_record *s = synth_at(&p, 123);
    const Spirefleet__LabelRecord *rec;
    ck_assert_int_eq(sf_shard_reader_get(r, 123, &rec, &err), SF_OK);
    ck_assert_uint_eq(rec->ids->game_seed, 1000);
    ck_assert_uint_eq(rec->ids->decision_index, 123 % 20);
    ck_assert_uint_eq(rec->inputs->token_cont->data.len, s->t_cont.data.len);
    ck_assert_mem_eq(rec->inputs->token_cont->data.data, s->cont, s->t_cont.data.len);
    ck_assert_uint_eq(rec->search->n_policy, s->search.n_policy);
    ck_assert_float_eq(rec->search->policy[0], s->policy[0]);
    ck_assert_mem_eq(rec->outcome->value_bins, s->bins, sizeof s->bins);
    ck_assert_mem_eq(rec->forecast->mask->data.data, s->f_mask_v, SF_FORECAST_H);
    ck_assert_ptr_null(rec->teacher); /* teacher on even records only */
    ck_assert_int_eq(sf_shard_reader_get(r, 124, &rec, &err), SF_OK);
    ck_assert_ptr_nonnull(rec->teacher);
    ck_assert_uint_eq(rec->teacher->rollouts, 16);
    free(s);

    ck_assert_int_eq(sf_shard_reader_get(r, n, &rec, &err), SF_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.msg, "record 300"));
    sf_shard_reader_close(r);

    sf_shard_verify_report rep;
    ck_assert_msg(sf_shard_verify(path, &rep, &err) == SF_OK, "%s", err.msg);
    ck_assert_uint_eq(rep.records, n);
    ck_assert_mem_eq(rep.digest, want, 32);
    ck_assert_int_eq(rep.bad_record, -1);
}
END_TEST

START_TEST(digest_independent_of_level_blocks_and_worker) {
    synth_params p = default_params();
    uint8_t d1[32], d2[32];
    sf_shard_writer_opts fast = {.zstd_level = 1, .block_bytes = 8 << 10};
    sf_shard_writer_opts slow = {.zstd_level = 19, .block_bytes = 1 << 20};
    sf_err err = {0};
    ck_assert_int_eq(write_shard(path_in("l1.shard"), &p, 150, &fast, NULL, d1, &err), SF_OK);
    sf_shard_info info = info_of(&p);
    info.worker_id = "another-worker";
    info.created_unix = 1800000000;
    sf_shard_writer *w = writer_at("l19.shard", &info, &slow);
    synth_record *s = synth_new();
    for (uint64_t i = 0; i < 150; i++) {
        synth_fill(s, &p, i);
        ck_assert_int_eq(sf_shard_writer_append(w, &s->rec, &err), SF_OK);
    }
    free(s);
    ck_assert_int_eq(sf_shard_writer_seal(w, NULL, d2, &err), SF_OK);
    ck_assert_mem_eq(d1, d2, 32);
    ck_assert_uint_ne(file_size(path_in("l1.shard")), file_size(path_in("l19.shard")));
    /* And stable across runs: the same records written again. */
    uint8_t d3[32];
    ck_assert_int_eq(write_shard(path_in("again.shard"), &p, 150, NULL, NULL, d3, &err), SF_OK);
    ck_assert_mem_eq(d1, d3, 32);
    /* One record fewer is another digest. */
    ck_assert_int_eq(write_shard(path_in("fewer.shard"), &p, 149, NULL, NULL, d3, &err), SF_OK);
    ck_assert_mem_ne(d1, d3, 32);
}
END_TEST

START_TEST(random_access_matches_sequential) {
    synth_params p = default_params();
    sf_err err = {0};
    const uint64_t n = 400;
    ck_assert_int_eq(write_shard(path_in("r.shard"), &p, n, &small_blocks, NULL, NULL, &err),
                     SF_OK);
    sf_shard_reader *r;
    ck_assert_int_eq(sf_shard_reader_open(path_in("r.shard"), &r, &err), SF_OK);
    /* 97 is coprime with 400: i -> 97*i mod 400 visits every index once. */
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = (97 * k + 13) % n;
        size_t len;
        uint8_t *b = packed(&p, i, &len);
        const uint8_t *raw;
        size_t rlen;
        ck_assert_int_eq(sf_shard_reader_get_raw(r, i, &raw, &rlen, NULL, &err), SF_OK);
        ck_assert_uint_eq(rlen, len);
        ck_assert_mem_eq(raw, b, len);
        free(b);
    }
    sf_shard_reader_close(r);
}
END_TEST

/* ---- formats 1 and 2 ----------------------------------------------------------- */

/* The same records written as format 1 (a frame per record) and format 2
 * (frames of 16): one content digest (the independent one), the same
 * bytes for every record from both, both verify; format 2 holds its frames
 * as the header says (16 records each but a block's last). */
START_TEST(format_2_round_trips_with_the_format_1_digest) {
    synth_params p = default_params();
    const uint64_t n = 333;
    sf_err err = {0};
    uint8_t d1[32], d2[32], want[32];
    sf_shard_writer_opts v1 = {.block_bytes = 16 << 10, .format_version = 1};
    sf_shard_writer_opts v2 = {.block_bytes = 16 << 10};
    ck_assert_msg(write_shard(path_in("v1.shard"), &p, n, &v1, NULL, d1, &err) == SF_OK, "%s",
                  err.msg);
    ck_assert_msg(write_shard(path_in("v2.shard"), &p, n, &v2, NULL, d2, &err) == SF_OK, "%s",
                  err.msg);
    expected_digest(&p, n, want);
    ck_assert_mem_eq(d1, want, 32);
    ck_assert_mem_eq(d2, want, 32);
    sf_shard_reader *r1, *r2;
    ck_assert_int_eq(sf_shard_reader_open(path_in("v1.shard"), &r1, &err), SF_OK);
    ck_assert_int_eq(sf_shard_reader_open(path_in("v2.shard"), &r2, &err), SF_OK);
    const Spirefleet__ShardManifest *m1 = sf_shard_reader_manifest(r1);
    const Spirefleet__ShardManifest *m2 = sf_shard_reader_manifest(r2);
    ck_assert_uint_eq(m1->format_version, 1);
    ck_assert_uint_eq(m2->format_version, 2);
    ck_assert_uint_eq(m1->raw_bytes, m2->raw_bytes);
    /* sharing zstd's window across 16 records compresses better */
    ck_assert_uint_lt(m2->payload_bytes, m1->payload_bytes * 9 / 10);
    for (uint64_t i = 0; i < n; i++) {
        size_t len, l1, l2;
        const uint8_t *b1, *b2;
        uint8_t *b = packed(&p, i, &len);
        ck_assert_int_eq(sf_shard_reader_get_raw(r1, i, &b1, &l1, NULL, &err), SF_OK);
        ck_assert_uint_eq(l1, len);
        ck_assert_mem_eq(b1, b, len);
        ck_assert_msg(sf_shard_reader_get_raw(r2, i, &b2, &l2, NULL, &err) == SF_OK, "%s", err.msg);
        ck_assert_uint_eq(l2, len);
        ck_assert_mem_eq(b2, b, len);
        free(b);
    }
    /* the frame table: 16 records a frame, a block's last frame the rest */
    uint64_t frames = 0;
    for (uint64_t i = 0; i < n;) {
        uint64_t voff;
        size_t vlen;
        sf_block_view b;
        ck_assert_int_eq(sf_shard_reader_block_at(r2, i, &voff, &vlen, &b, &err), SF_OK);
        ck_assert_uint_eq(b.version, 2);
        ck_assert_uint_eq(b.m, (b.n + 15) / 16);
        for (uint32_t j = 0; j < b.m; j++) {
            sf_frame_ref f;
            sf_block_frame(&b, j, &f);
            ck_assert_uint_eq(f.first, b.first + 16 * j);
            ck_assert_uint_eq(f.n, j + 1 < b.m ? 16 : b.n - 16 * j);
            ck_assert_uint_eq(sf_block_frame_of(&b, 16 * j), j);
            ck_assert_uint_eq(sf_block_frame_of(&b, 16 * j + f.n - 1), j);
        }
        frames += b.m;
        i = b.first + b.n;
    }
    ck_assert_uint_gt(m2->block_count, 1);
    ck_assert_uint_eq(sf_shard_reader_frames_decoded(r2), frames); /* once each, in order */
    ck_assert_uint_eq(sf_shard_reader_frames_decoded(r1), n);
    sf_frame_ref *all;
    size_t nall;
    ck_assert_int_eq(sf_shard_reader_frames(r2, &all, &nall, &err), SF_OK);
    ck_assert_uint_eq(nall, frames);
    ck_assert_uint_eq(all[nall - 1].first + all[nall - 1].n, n);
    free(all);
    sf_shard_reader_close(r1);
    sf_shard_reader_close(r2);
    sf_shard_verify_report rep;
    ck_assert_msg(sf_shard_verify(path_in("v1.shard"), &rep, &err) == SF_OK, "%s", err.msg);
    ck_assert_mem_eq(rep.digest, want, 32);
    ck_assert_msg(sf_shard_verify(path_in("v2.shard"), &rep, &err) == SF_OK, "%s", err.msg);
    ck_assert_mem_eq(rep.digest, want, 32);
    ck_assert_uint_eq(rep.records, n);
    /* other frame sizes, same digest; a frame size out of range refused */
    sf_shard_writer_opts g1 = {.frame_records = 1}, g64 = {.frame_records = 64};
    ck_assert_int_eq(write_shard(path_in("g1.shard"), &p, n, &g1, NULL, d1, &err), SF_OK);
    ck_assert_int_eq(write_shard(path_in("g64.shard"), &p, n, &g64, NULL, d2, &err), SF_OK);
    ck_assert_mem_eq(d1, want, 32);
    ck_assert_mem_eq(d2, want, 32);
    ck_assert_int_eq(sf_shard_verify(path_in("g64.shard"), NULL, &err), SF_OK);
    sf_shard_writer_opts bad = {.frame_records = 4097};
    ck_assert_int_eq(write_shard(path_in("bad.shard"), &p, 1, &bad, NULL, NULL, &err), SF_EINVAL);
    ck_assert_msg(strstr(err.msg, "frame_records 4097"), "%s", err.msg);
    sf_shard_writer_opts badv = {.format_version = 3};
    ck_assert_int_eq(write_shard(path_in("bad.shard"), &p, 1, &badv, NULL, NULL, &err), SF_EINVAL);
}
END_TEST

/* The content digest hashed frame by frame on the helper thread is the one
 * hashed inline: the hasher on its own (frames alternating between two
 * buffers, as the writer fills them) against SHA-256 of the same stream in
 * one call, then whole shards with frames of 1, 16 and 4,096 records (the
 * last closed by SF_SHARD_FRAME_RAW_BYTES) against the independent digest,
 * and records larger than a frame among refused ones against the digest of
 * the accepted ones; and a writer aborted with a frame in flight frees
 * cleanly. */
START_TEST(content_digest_is_the_same_on_a_helper_thread_or_inline) {
    enum { FRAMES = 40, PER = 7 };
    uint8_t *buf[2];
    uint32_t ends[PER];
    sf_buf stream = {0};
    sf_err err = {0};
    for (int b = 0; b < 2; b++)
        ck_assert_ptr_nonnull(buf[b] = malloc(PER * 300));
    for (int threaded = 0; threaded < 2; threaded++) {
        sf_sha256_ctx *sha;
        sf_frame_hasher *h;
        ck_assert_int_eq(sf_sha256_new(&sha, &err), SF_OK);
        ck_assert_int_eq(sf_frame_hasher_new(sha, threaded, &h, &err), SF_OK);
        ck_assert_int_eq(sf_frame_hasher_threaded(h), threaded);
        stream.len = 0;
        uint32_t x = 12345;
        for (int f = 0; f < FRAMES; f++) {
            /* frame f - 2 used this buffer; the submit of f - 1 waited for it */
            uint8_t *raw = buf[f % 2];
            uint32_t end = 0;
            for (int k = 0; k < PER; k++) {
                uint32_t len = (uint32_t)(f * 7 + k * 31) % 300; /* 0..299, some empty */
                ck_assert_int_eq(sf_buf_reserve(&stream, 8 + len, NULL), 0);
                for (int j = 0; j < 8; j++)
                    stream.p[stream.len + j] = (uint8_t)((uint64_t)len >> (8 * j));
                stream.len += 8;
                for (uint32_t j = 0; j < len; j++) {
                    x = x * 1103515245u + 12345u;
                    raw[end + j] = stream.p[stream.len + j] = (uint8_t)(x >> 16);
                }
                stream.len += len;
                end += len;
                ends[k] = end;
            }
            sf_frame_hasher_submit(h, raw, ends, PER);
            memset(ends, 0xff, sizeof ends); /* submit copied them */
        }
        sf_frame_hasher_wait(h);
        uint8_t got[32], want[32];
        ck_assert_int_eq(sf_sha256_final(sha, got, &err), SF_OK);
        ck_assert_int_eq(sf_sha256(stream.p, stream.len, want, &err), SF_OK);
        ck_assert_mem_eq(got, want, 32);
        sf_frame_hasher_free(h);
        sf_sha256_free(sha);
    }
    free(buf[0]);
    free(buf[1]);
    sf_buf_free(&stream);

    synth_params p = default_params();
    const uint64_t n = 333;
    uint8_t want[32], d[32];
    expected_digest(&p, n, want);
    static const uint32_t frames[] = {1, 16, 4096};
    for (size_t g = 0; g < sizeof frames / sizeof frames[0]; g++)
        for (int inl = 0; inl < 2; inl++) {
            sf_shard_writer_opts o = {.frame_records = frames[g], .hash_inline = inl};
            char name[64];
            snprintf(name, sizeof name, "g%u-%d.shard", frames[g], inl);
            ck_assert_msg(write_shard(path_in(name), &p, n, &o, NULL, d, &err) == SF_OK, "%s",
                          err.msg);
            ck_assert_msg(!memcmp(d, want, 32), "frames of %u, hash_inline %d", frames[g], inl);
            sf_shard_verify_report rep;
            ck_assert_msg(sf_shard_verify(path_in(name), &rep, &err) == SF_OK, "%s", err.msg);
            ck_assert_mem_eq(rep.digest, want, 32);
        }
    /* Records of 1.5 MiB (each a frame of its own, past the 1 MiB frame
     * limit) among small ones, and refused records between them: both ways
     * give the digest of exactly the accepted records. */
    sf_shard_info info = info_of(&p);
    sf_shard_writer *w;
    synth_record *s = synth_new();
    size_t big_n = 3u << 19;
    char *big = malloc(big_n + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, 'e', big_n);
    big[big_n] = 0;
    for (int inl = 0; inl < 2; inl++) {
        sf_shard_writer_opts o = {.hash_inline = inl};
        char name[64];
        snprintf(name, sizeof name, "big-%d.shard", inl);
        ck_assert_int_eq(sf_shard_writer_open(path_in(name), &info, &o, &w, &err), SF_OK);
        crypto_hash_sha256_state st;
        crypto_hash_sha256_init(&st);
        for (uint64_t i = 0; i < 60; i++) {
            synth_fill(s, &p, i);
            if (i % 7 == 3)
                s->rec.ids->encounter = big;
            if (i % 11 == 5) { /* another run's record: refused, not hashed */
                s->rec.ids->run_id = "another-run";
                ck_assert_int_eq(sf_shard_writer_append(w, &s->rec, &err), SF_EINVAL);
                continue;
            }
            ck_assert_msg(sf_shard_writer_append(w, &s->rec, &err) == SF_OK, "%s", err.msg);
            expected_digest_add(&st, &s->rec);
        }
        crypto_hash_sha256_final(&st, want);
        ck_assert_int_eq(sf_shard_writer_seal(w, NULL, d, &err), SF_OK);
        ck_assert_msg(!memcmp(d, want, 32), "1.5 MiB records, hash_inline %d", inl);
        sf_shard_verify_report rep;
        ck_assert_msg(sf_shard_verify(path_in(name), &rep, &err) == SF_OK, "%s", err.msg);
        ck_assert_mem_eq(rep.digest, want, 32);
    }
    free(big);

    ck_assert_int_eq(sf_shard_writer_open(path_in("abort.shard"), &info, NULL, &w, &err), SF_OK);
    for (uint64_t i = 0; i < 33; i++) { /* two frames handed to the hasher, one open */
        synth_fill(s, &p, i);
        ck_assert_int_eq(sf_shard_writer_append(w, &s->rec, &err), SF_OK);
    }
    free(s);
    sf_shard_writer_abort(w);
    ck_assert_uint_eq(count_files(SF_SHARD_TEMP_SUFFIX), 0);
}
END_TEST

/* Reads of records of one frame decode it once: in order, backwards within
 * a frame, and again after a record of another frame only when the cache
 * moved on. */
START_TEST(reader_decodes_a_frame_once_for_its_records) {
    synth_params p = default_params();
    sf_err err = {0};
    ck_assert_int_eq(write_shard(path_in("c.shard"), &p, 64, NULL, NULL, NULL, &err), SF_OK);
    sf_shard_reader *r;
    ck_assert_int_eq(sf_shard_reader_open(path_in("c.shard"), &r, &err), SF_OK);
    const Spirefleet__LabelRecord *rec;
    for (int i = 15; i >= 0; i--)
        ck_assert_int_eq(sf_shard_reader_get(r, (uint64_t)i, &rec, &err), SF_OK);
    ck_assert_uint_eq(sf_shard_reader_frames_decoded(r), 1);
    ck_assert_int_eq(sf_shard_reader_get(r, 16, &rec, &err), SF_OK); /* frame 1 */
    ck_assert_uint_eq(rec->ids->decision_index, 16 % 20);
    ck_assert_int_eq(sf_shard_reader_get(r, 31, &rec, &err), SF_OK);
    ck_assert_uint_eq(sf_shard_reader_frames_decoded(r), 2);
    ck_assert_int_eq(sf_shard_reader_get(r, 3, &rec, &err), SF_OK); /* frame 0 again */
    ck_assert_uint_eq(sf_shard_reader_frames_decoded(r), 3);
    ck_assert_uint_eq(rec->ids->decision_index, 3);
    sf_shard_reader_close(r);
}
END_TEST

/* A format-1 shard from disk (a real self-play shard in the old layout,
 * kept in the shard-file fuzz corpus; re-sealed for label schema 4 by
 * tests/fuzz/reseal_shard.py, which changes only schema_version) reads
 * and verifies: its 43 records hash to the digest its manifest carries. */
START_TEST(a_committed_format_1_shard_still_reads) {
    char src[1024];
    snprintf(src, sizeof src, "%s/tests/fuzz/corpus/shard-file/run-job1.shard", SF_SOURCE_ROOT);
    /* copied under a name of no stored form (its run is "lfuzz", not "run") */
    const char *path = path_in("lfuzz-v1.shard");
    sf_err err = {0};
    static uint8_t bytes[1 << 17];
    FILE *f = fopen(src, "rb");
    ck_assert_msg(f != NULL, "%s: %s", src, strerror(errno));
    size_t len = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    ck_assert_uint_eq(len, 61592);
    ck_assert_int_eq(sf_write_file_durable(path, bytes, len, &err), SF_OK);
    sf_shard_reader *r;
    ck_assert_msg(sf_shard_reader_open(path, &r, &err) == SF_OK, "%s", err.msg);
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    ck_assert_uint_eq(m->format_version, 1);
    ck_assert_uint_eq(sf_shard_reader_count(r), 43);
    ck_assert_str_eq(m->run_id, "lfuzz");
    char hex[65];
    sf_hex(m->content_digest.data, 32, hex);
    ck_assert_str_eq(hex, "2dc148172bc1619a083e6ee01341f45a126f45a97a100b3accbb0fac6eab4b87");
    for (uint64_t i = 0; i < 43; i++) {
        const Spirefleet__LabelRecord *rec;
        ck_assert_msg(sf_shard_reader_get(r, i, &rec, &err) == SF_OK, "%s", err.msg);
        ck_assert_str_eq(rec->ids->run_id, "lfuzz");
    }
    ck_assert_uint_eq(sf_shard_reader_frames_decoded(r), 43); /* a frame each */
    sf_shard_reader_close(r);
    sf_shard_verify_report rep;
    ck_assert_msg(sf_shard_verify(path, &rep, &err) == SF_OK, "%s", err.msg);
    sf_hex(rep.digest, 32, hex);
    ck_assert_str_eq(hex, "2dc148172bc1619a083e6ee01341f45a126f45a97a100b3accbb0fac6eab4b87");
}
END_TEST

/* ---- compactness (docs/format.md "records database: blocks": the overflow-page trap) ---- */

static double file_over_payload(int dense, uint64_t n, uint64_t *mean_frame) {
    synth_params p;
    synth_params_default(&p);
    p.dense = dense;
    sf_err err = {0};
    ck_assert_int_eq(write_shard(path_in(dense ? "dense.shard" : "typical.shard"), &p, n, NULL,
                                 NULL, NULL, &err),
                     SF_OK);
    sf_shard_reader *r;
    ck_assert_int_eq(
        sf_shard_reader_open(path_in(dense ? "dense.shard" : "typical.shard"), &r, &err), SF_OK);
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    uint64_t file = sf_shard_reader_file_bytes(r);
    double ratio = (double)file / (double)m->payload_bytes;
    *mean_frame = m->payload_bytes / n;
    fprintf(stderr,
            "# %s, %llu records: raw %llu, compressed %llu (%llu B/record), file %llu, "
            "file/compressed %.4f\n",
            dense ? "dense" : "typical", (unsigned long long)n, (unsigned long long)m->raw_bytes,
            (unsigned long long)m->payload_bytes, (unsigned long long)*mean_frame,
            (unsigned long long)file, ratio);
    sf_shard_reader_close(r);
    return ratio;
}

START_TEST(file_within_1_15_of_compressed_payload) {
    uint64_t mean;
    /* Typical records (~1 KB compressed) and dense ones (over 2 KB: stored
     * one per LMDB value, each would take a 4 KB overflow run of its own and
     * the file would be about twice the payload). */
    ck_assert_double_le(file_over_payload(0, 3000, &mean), 1.15);
    ck_assert_double_le(file_over_payload(1, 1500, &mean), 1.15);
    ck_assert_uint_gt(mean, 2048);
}
END_TEST

START_TEST(map_grows_instead_of_failing) {
    synth_params p = default_params();
    sf_err err = {0};
    sf_shard_writer_opts tiny = {.initial_map_bytes = 64 << 10, .txn_bytes = 256 << 10};
    ck_assert_msg(write_shard(path_in("grow.shard"), &p, 3200, &tiny, NULL, NULL, &err) == SF_OK,
                  "%s", err.msg);
    ck_assert_uint_gt(file_size(path_in("grow.shard")), 2u << 20); /* 32x the first map */
    sf_shard_verify_report rep;
    ck_assert_msg(sf_shard_verify(path_in("grow.shard"), &rep, &err) == SF_OK, "%s", err.msg);
    ck_assert_uint_eq(rep.records, 3200);
}
END_TEST

START_TEST(empty_shard_seals_and_verifies) {
    synth_params p = default_params();
    sf_err err = {0};
    uint8_t d[32], sha_empty[32];
    ck_assert_int_eq(write_shard(path_in("e.shard"), &p, 0, NULL, NULL, d, &err), SF_OK);
    crypto_hash_sha256(sha_empty, (const unsigned char *)"", 0);
    ck_assert_mem_eq(d, sha_empty, 32);
    sf_shard_reader *r;
    ck_assert_int_eq(sf_shard_reader_open(path_in("e.shard"), &r, &err), SF_OK);
    ck_assert_uint_eq(sf_shard_reader_count(r), 0);
    sf_shard_reader_close(r);
    ck_assert_int_eq(sf_shard_verify(path_in("e.shard"), NULL, &err), SF_OK);
}
END_TEST

/* A shard's name binds it to its run and job: the stored name and a
 * worker's attempt name verify; the same bytes renamed to another job, or
 * put under another run's name, fail naming both; a name of another form
 * (a file a person named) is not a stored shard's and is not checked. */
START_TEST(a_renamed_or_swapped_shard_fails_verify) {
    synth_params p = default_params();
    sf_err err = {0};
    uint8_t d[32];
    sf_shard_info info = info_of(&p);
    char name[128], path[512], other[512];
    sf_shard_name(info.run_id, info.job_id, name, sizeof name);
    snprintf(path, sizeof path, "%s", path_in(name));
    ck_assert_int_eq(write_shard(path, &p, 5, NULL, NULL, d, &err), SF_OK);
    ck_assert_msg(sf_shard_verify(path, NULL, &err) == SF_OK, "%s", err.msg);
    const struct {
        const char *run; /* NULL: the shard's own */
        int job_delta;
        const char *tail;  /* after "<run>-job<digits>" */
        const char *plain; /* a whole name of another form instead */
        int ok;
    } cases[] = {
        {NULL, 0, "-a3.shard", NULL, 1}, /* a worker's attempt: same run and job */
        {NULL, 1, ".shard", NULL, 0},    /* another job */
        {"other-run", 0, ".shard", NULL, 0},   {NULL, 0, NULL, "my copy.shard", 1},
        {NULL, 0, NULL, "job000007.shard", 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char n2[128];
        if (cases[k].plain)
            snprintf(n2, sizeof n2, "%s", cases[k].plain);
        else
            snprintf(n2, sizeof n2, "%s-job%06llu%s", cases[k].run ? cases[k].run : info.run_id,
                     (unsigned long long)(info.job_id + (uint64_t)cases[k].job_delta),
                     cases[k].tail);
        snprintf(other, sizeof other, "%s", path_in(n2));
        ck_assert_int_eq(link(path, other), 0);
        int rc = sf_shard_verify(other, NULL, &err);
        if (cases[k].ok) {
            ck_assert_msg(rc == SF_OK, "%s: %s", n2, err.msg);
        } else {
            ck_assert_msg(rc == SF_ECORRUPT, "%s verified", n2);
            ck_assert_msg(strstr(err.msg, "(a renamed or swapped shard)") &&
                              strstr(err.msg, "the manifest run"),
                          "%s", err.msg);
        }
        unlink(other);
    }
}
END_TEST

/* ---- reading allocates nothing per record once warm ----------------------- */

START_TEST(reader_allocates_nothing_once_warm) {
    synth_params p = default_params();
    sf_err err = {0};
    ck_assert_int_eq(write_shard(path_in("w.shard"), &p, 500, &small_blocks, NULL, NULL, &err),
                     SF_OK);
    sf_shard_reader *r;
    ck_assert_int_eq(sf_shard_reader_open(path_in("w.shard"), &r, &err), SF_OK);
    const Spirefleet__LabelRecord *rec;
    for (uint64_t i = 0; i < 500; i++)
        ck_assert_int_eq(sf_shard_reader_get(r, i, &rec, &err), SF_OK);
    /* One more round lets the arena settle at the largest record's size. */
    for (uint64_t i = 0; i < 500; i++)
        ck_assert_int_eq(sf_shard_reader_get(r, i, &rec, &err), SF_OK);
    uint64_t warm = sf_shard_reader_allocs(r);
    ck_assert_uint_gt(warm, 0);
    for (uint64_t k = 0; k < 2000; k++)
        ck_assert_int_eq(sf_shard_reader_get(r, (k * 211) % 500, &rec, &err), SF_OK);
    ck_assert_uint_eq(sf_shard_reader_allocs(r), warm);
    sf_shard_reader_close(r);
}
END_TEST

/* ---- damage: every flipped byte is found and named -------------------------- */

typedef struct frame_span {
    uint64_t lo, hi, record;
} frame_span;

/* File byte ranges of every zstd frame, from the intact shard, each with
 * the frame's first record (the one a damaged frame's error names when it
 * is read first). */
static frame_span *frame_spans(const char *path, size_t *n) {
    sf_shard_reader *r;
    sf_err err = {0};
    ck_assert_int_eq(sf_shard_reader_open(path, &r, &err), SF_OK);
    uint64_t count = sf_shard_reader_count(r);
    frame_span *v = calloc(count, sizeof *v);
    size_t nv = 0;
    for (uint64_t i = 0; i < count;) {
        uint64_t voff;
        size_t vlen;
        sf_block_view b;
        ck_assert_int_eq(sf_shard_reader_block_at(r, i, &voff, &vlen, &b, &err), SF_OK);
        for (uint32_t j = 0; j < b.m; j++) {
            sf_frame_ref f;
            sf_block_frame(&b, j, &f);
            v[nv].lo = voff + b.header_len + (uint64_t)(f.z - b.frames);
            v[nv].hi = v[nv].lo + f.zlen;
            v[nv].record = f.first;
            nv++;
        }
        i = b.first + b.n;
    }
    sf_shard_reader_close(r);
    *n = nv;
    return v;
}

/* Both formats: format 2 (frames of 16 records) as written today, format 1
 * (a frame per record) as shards on disk hold it. */
SF_LOOP_TEST(flipped_byte_anywhere_is_found_and_named, 1, 3) {
    synth_params p = default_params();
    sf_err err = {0};
    const char *path = path_in("f.shard");
    sf_shard_writer_opts opts = small_blocks;
    opts.format_version = (uint32_t)_i;
    ck_assert_int_eq(write_shard(path, &p, 120, &opts, NULL, NULL, &err), SF_OK);
    size_t nspan;
    frame_span *spans = frame_spans(path, &nspan);
    uint64_t size = file_size(path);
    uint64_t pages = 0;
    {
        sf_shard_verify_report rep;
        ck_assert_int_eq(sf_shard_verify(path, &rep, &err), SF_OK);
        pages = rep.pages;
    }
    uint64_t psize;
    {
        uint8_t footer[64];
        int fd = open(path, O_RDONLY);
        ck_assert_int_eq(pread(fd, footer, 64, (off_t)(size - 64)), 64);
        close(fd);
        psize = sf_le32(footer + 12); /* the trailer's page size */
    }
    ck_assert_uint_le(pages * psize, size);
    size_t checked = 0, named_records = 0, undetected_by_zstd = 0;
    /* Four offsets in every page (start, just past a page header, middle,
     * end), then every byte of the last 64 (footer) and a sample of the
     * trailer's page table. */
    uint64_t offs[4] = {0, 17, psize / 2 + 5, psize - 1};
    for (uint64_t pg = 0; pg < pages; pg++) {
        for (int k = 0; k < 4; k++) {
            uint64_t at = pg * psize + offs[k];
            flip_byte(path, at);
            sf_shard_verify_report rep;
            int rc = sf_shard_verify(path, &rep, &err);
            ck_assert_msg(rc < 0, "flip at byte %llu (page %llu) went unnoticed",
                          (unsigned long long)at, (unsigned long long)pg);
            ck_assert_int_eq(rc, SF_ECORRUPT);
            char want[64];
            snprintf(want, sizeof want, "page %llu", (unsigned long long)pg);
            ck_assert_msg(strstr(err.msg, want), "flip at %llu: '%s' does not name %s",
                          (unsigned long long)at, err.msg, want);
            ck_assert_int_eq(rep.bad_page, (int64_t)pg);
            int64_t first_on_page = -1;
            for (size_t s = 0; s < nspan; s++)
                if (first_on_page < 0 && spans[s].hi > pg * psize && spans[s].lo < (pg + 1) * psize)
                    first_on_page = (int64_t)spans[s].record;
            for (size_t s = 0; s < nspan; s++) {
                if (at >= spans[s].lo && at < spans[s].hi) {
                    char rec[64];
                    snprintf(rec, sizeof rec, "record %llu", (unsigned long long)spans[s].record);
                    if (strstr(err.msg, "still decode")) {
                        /* zstd ignored the bit: the page CRC alone caught it,
                         * and verify names the page's first record. */
                        ck_assert_int_eq(rep.bad_record, first_on_page);
                        undetected_by_zstd++;
                        continue;
                    }
                    ck_assert_msg(rep.bad_record == (int64_t)spans[s].record &&
                                      strstr(err.msg, rec),
                                  "flip at %llu in record %llu: '%s'", (unsigned long long)at,
                                  (unsigned long long)spans[s].record, err.msg);
                    named_records++;
                    /* A plain reader refuses that record too, without crashing. */
                    sf_shard_reader *r;
                    sf_err e2 = {0};
                    if (sf_shard_reader_open(path, &r, &e2) == SF_OK) {
                        const Spirefleet__LabelRecord *lr;
                        ck_assert_int_eq(sf_shard_reader_get(r, spans[s].record, &lr, &e2),
                                         SF_ECORRUPT);
                        ck_assert_ptr_nonnull(strstr(e2.msg, rec));
                        sf_shard_reader_close(r);
                    }
                }
            }
            flip_byte(path, at); /* restore */
            checked++;
        }
    }
    for (uint64_t at = pages * psize; at < size; at += (at >= size - 64 ? 1 : 37)) {
        flip_byte(path, at);
        int rc = sf_shard_verify(path, NULL, &err);
        ck_assert_msg(rc < 0, "flip at trailer byte %llu went unnoticed", (unsigned long long)at);
        ck_assert_ptr_nonnull(strstr(err.msg, "trailer"));
        flip_byte(path, at);
        checked++;
    }
    ck_assert_int_eq(sf_shard_verify(path, NULL, &err), SF_OK); /* all restored */
    ck_assert_uint_gt(named_records, 20);
    fprintf(stderr,
            "# format %d: %zu flips checked, %zu named a record, %zu in bits zstd ignores\n", _i,
            checked, named_records, undetected_by_zstd);
    free(spans);
}
END_TEST

START_TEST(damaged_structure_page_is_refused_at_open) {
    const char *path = shard_of("s.shard", 50);
    sf_err err = {0};
    flip_byte(path, 4096 + 100); /* page 1: the second LMDB meta page */
    sf_shard_reader *r = NULL;
    ck_assert_int_eq(sf_shard_reader_open(path, &r, &err), SF_ECORRUPT);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(err.msg, path));
    ck_assert_ptr_nonnull(strstr(err.msg, "page 1"));
}
END_TEST

/* ---- refusals: each its own clear error ------------------------------------------ */

START_TEST(missing_file_is_not_found) {
    sf_shard_reader *r = NULL;
    sf_err err = {0};
    ck_assert_int_eq(sf_shard_reader_open("/nonexistent/x.shard", &r, &err), SF_ENOTFOUND);
    ck_assert_str_eq(err.msg, "/nonexistent/x.shard: no such shard");
}
END_TEST

START_TEST(truncated_file_is_refused) {
    const char *path = shard_of("t.shard", 200);
    sf_err err = {0};
    uint64_t size = file_size(path);
    sf_shard_reader *r = NULL;
    /* One byte short: the footer is gone, the trailer cut. */
    ck_assert_int_eq(truncate(path, (off_t)size - 1), 0);
    ck_assert_int_eq(sf_shard_reader_open(path, &r, &err), SF_EFORMAT);
    ck_assert_msg(strstr(err.msg, "truncated: the seal trailer is cut short"), "%s", err.msg);
    /* Cut into the LMDB data. */
    ck_assert_int_eq(truncate(path, (off_t)(size / 2)), 0);
    ck_assert_int_eq(sf_shard_reader_open(path, &r, &err), SF_EFORMAT);
    ck_assert_msg(strstr(err.msg, "truncated: LMDB data needs"), "%s", err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, path));
    ck_assert_int_eq(sf_shard_verify(path, NULL, &err), SF_EFORMAT);
    /* Almost nothing left. */
    ck_assert_int_eq(truncate(path, 10), 0);
    ck_assert_int_eq(sf_shard_reader_open(path, &r, &err), SF_EFORMAT);
    ck_assert_ptr_null(r);
}
END_TEST

/* A footer whose magic is damaged but whose fields still describe the file
 * is a damaged footer (corrupt), not a cut one; cutting the whole footer off
 * (64 bytes of page table are then last) is still a cut trailer. */
START_TEST(damaged_footer_magic_is_corrupt_not_truncated) {
    const char *path = shard_of("f.shard", 50);
    sf_err err = {0};
    uint64_t size = file_size(path);
    flip_byte(path, size - 64);
    sf_shard_reader *r = NULL;
    ck_assert_int_eq(sf_shard_reader_open(path, &r, &err), SF_ECORRUPT);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(err.msg, "seal trailer footer damaged") && strstr(err.msg, "CRC mismatch"),
                  "%s", err.msg);
    ck_assert_int_eq(sf_shard_verify(path, NULL, &err), SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "seal trailer footer damaged"), "%s", err.msg);
    ck_assert_int_eq(truncate(path, (off_t)size - 64), 0);
    ck_assert_int_eq(sf_shard_reader_open(path, &r, &err), SF_EFORMAT);
    ck_assert_msg(strstr(err.msg, "truncated: the seal trailer is cut short"), "%s", err.msg);
}
END_TEST

START_TEST(unsealed_temp_file_is_refused) {
    synth_params p = default_params();
    sf_shard_info info = info_of(&p);
    sf_err err = {0};
    sf_shard_writer *w = writer_at("u.shard", &info, &small_blocks);
    synth_record *s = synth_new();
    for (uint64_t i = 0; i < 100; i++) {
        synth_fill(s, &p, i);
        ck_assert_int_eq(sf_shard_writer_append(w, &s->rec, &err), SF_OK);
    }
    free(s);
    char temp[512];
    snprintf(temp, sizeof temp, "%s", sf_shard_writer_temp_path(w));
    ck_assert_ptr_nonnull(strstr(temp, "u.shard."));
    ck_assert(sf_has_suffix(temp, ".tmp"));
    sf_shard_reader *r = NULL;
    ck_assert_int_eq(sf_shard_reader_open(temp, &r, &err), SF_ESTATE);
    ck_assert_msg(strstr(err.msg, "not sealed: a writer's temporary file"), "%s", err.msg);
    ck_assert_int_eq(sf_shard_reader_open(path_in("u.shard"), &r, &err), SF_ENOTFOUND);
    /* Renamed by hand, it is still not sealed. */
    ck_assert_int_eq(link(temp, path_in("renamed.shard")), 0);
    ck_assert_int_eq(sf_shard_reader_open(path_in("renamed.shard"), &r, &err), SF_ESTATE);
    ck_assert_msg(strstr(err.msg, "not sealed"), "%s", err.msg);
    sf_shard_writer_abort(w);
    ck_assert_int_eq(access(temp, F_OK), -1); /* abort removed it */
}
END_TEST

START_TEST(missing_manifest_is_refused) {
    synth_params p = default_params();
    sf_shard_writer *w = default_writer("m.shard", &p);
    sf_err err = {0};
    synth_record *s = synth_at(&p, 0);
    ck_assert_int_eq(sf_shard_writer_append(w, &s->rec, &err), SF_OK);
    free(s);
    sf_shard_seal_hooks hooks = {.omit_manifest = true};
    ck_assert_int_eq(sf_shard_writer_seal_hooked(w, NULL, &hooks, NULL, &err), SF_OK);
    sf_shard_reader *r = NULL;
    ck_assert_int_eq(sf_shard_reader_open(path_in("m.shard"), &r, &err), SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "no manifest"), "%s", err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, "m.shard"));
}
END_TEST

START_TEST(wrong_schema_version_is_refused) {
    synth_params p = default_params();
    sf_shard_info info = info_of(&p);
    sf_err err = {0};
    sf_shard_writer *w = writer_at("v.shard", &info, NULL);
    synth_record *s = synth_at(&p, 0);
    ck_assert_int_eq(sf_shard_writer_append(w, &s->rec, &err), SF_OK);
    /* The writer refuses a record of another schema version... */
    s->rec.schema_version = SF_LABEL_SCHEMA_VERSION + 1;
    append_refused(w, &s->rec, SF_EVERSION,
                   "record 1: schema_version 5, this reader knows 4 (written by a "
                   "newer spirefleet");
    /* The schemas this one replaced are refused with what changed. */
    s->rec.schema_version = 1;
    append_refused(w, &s->rec, SF_EVERSION,
                   "schema_version 1, this reader knows 4 (schema 1 scored every "
                   "loss 0");
    s->rec.schema_version = 2;
    append_refused(w, &s->rec, SF_EVERSION,
                   "schema_version 2, this reader knows 4 (schema 2 scored a win "
                   "without the per-turn discount");
    s->rec.schema_version = 3;
    append_refused(w, &s->rec, SF_EVERSION,
                   "schema_version 3, this reader knows 4 (schema 3 labels came "
                   "from an engine in which most relics and potions did nothing");
    append_refused(w, &s->rec, SF_EVERSION, "potions_left at most 3: regenerate these labels");
    s->rec.schema_version = SF_LABEL_SCHEMA_VERSION + 1;
    /* ...and the reader a record or manifest of one. */
    size_t len = spirefleet__label_record__get_packed_size(&s->rec);
    uint8_t *b = malloc(len);
    spirefleet__label_record__pack(&s->rec, b);
    Spirefleet__LabelRecord *dec;
    ck_assert_int_eq(sf_record_decode(b, len, 42, NULL, &dec, &err), SF_EVERSION);
    ck_assert_msg(strstr(err.msg, "record 42: schema_version 5"), "%s", err.msg);
    free(b);
    free(s);
    sf_shard_seal_hooks hooks = {.schema_version = 1};
    ck_assert_int_eq(sf_shard_writer_seal_hooked(w, NULL, &hooks, NULL, &err), SF_OK);
    sf_shard_reader *r = NULL;
    ck_assert_int_eq(sf_shard_reader_open(path_in("v.shard"), &r, &err), SF_EVERSION);
    ck_assert_msg(strstr(err.msg, "manifest: schema_version 1, this reader knows 4 (schema 1"),
                  "%s", err.msg);
    /* A shard of the schema before this one (labels of an engine whose
     * relics and potions mostly did nothing) is refused, saying so. */
    ck_assert_int_eq(sf_shard_writer_open(path_in("v3.shard"), &info, NULL, &w, &err), SF_OK);
    hooks.schema_version = 3;
    ck_assert_int_eq(sf_shard_writer_seal_hooked(w, NULL, &hooks, NULL, &err), SF_OK);
    ck_assert_int_eq(sf_shard_reader_open(path_in("v3.shard"), &r, &err), SF_EVERSION);
    ck_assert_msg(strstr(err.msg, "manifest: schema_version 3, this reader knows 4 (schema 3 "
                                  "labels came from an engine in which most relics and potions "
                                  "did nothing"),
                  "%s", err.msg);
}
END_TEST

START_TEST(bad_records_are_refused_and_the_writer_goes_on) {
    synth_params p = default_params();
    sf_shard_writer *w = default_writer("b.shard", &p);
    sf_err err = {0};
    synth_record *s = synth_at(&p, 0);
    s->ids.job_id = 8;
    append_refused(w, &s->rec, SF_EINVAL, "record 0: ids.job_id 8 is not the shard's 7");
    synth_fill(s, &p, 0);
    s->t_cat.data.len -= 2;
    append_refused(w, &s->rec, SF_EINVAL, "inputs.token_cat");
    synth_fill(s, &p, 0);
    s->search.chosen = (uint32_t)s->search.n_visits;
    append_refused(w, &s->rec, SF_EINVAL, "search.chosen");
    synth_fill(s, &p, 0);
    s->outcome.n_value_bins = 20;
    append_refused(w, &s->rec, SF_EINVAL, "outcome.value_bins: 20 entries");
    /* The targets must be the label contract's function of the recorded
     * facts: a value that does not match them, bins that do not encode the
     * value, an impossible outcome. */
    synth_fill(s, &p, 0);
    s->outcome.value += 0.01f;
    append_refused(w, &s->rec, SF_EINVAL, "but the outcome's facts score");
    synth_fill(s, &p, 0);
    {
        int hi = 0; /* move mass between two bins: still sums to 1 */
        for (int k = 1; k < SF_VALUE_BINS; k++)
            if (s->bins[k] > s->bins[hi])
                hi = k;
        int other = hi == 0 ? 1 : hi - 1;
        s->bins[hi] -= 0.25f;
        s->bins[other] += 0.25f;
    }
    append_refused(w, &s->rec, SF_EINVAL, "but the projection of value");
    synth_fill(s, &p, 0);
    s->outcome.monster_hp_left = s->outcome.monster_hp_pool + 1;
    append_refused(w, &s->rec, SF_EINVAL, "above monster_hp_pool");
    synth_fill(s, &p, 0);
    s->outcome.won = 1;
    s->outcome.engine_limit = 1;
    append_refused(w, &s->rec, SF_EINVAL, "engine-limit end that is won");
    /* an escape (Smoke Bomb) is won and scores the win floor, 0.5 */
    synth_fill(s, &p, 0);
    s->outcome.won = 0;
    s->outcome.escaped = 1;
    append_refused(w, &s->rec, SF_EINVAL, "an escape that is not won");
    synth_fill(s, &p, 0);
    ck_assert(s->outcome.won && s->outcome.value > 0.5f); /* record 0 is a win */
    s->outcome.escaped = 1; /* the facts now score 0.5, not the recorded win */
    append_refused(w, &s->rec, SF_EINVAL, "but the outcome's facts score 0.5000000");
    synth_fill(s, &p, 0);
    s->f_mask_v[2] = 7;
    append_refused(w, &s->rec, SF_EINVAL, "forecast.mask[2] = 7");
    synth_fill(s, &p, 0);
    s->query[1] = 500; /* a target token beyond T */
    append_refused(w, &s->rec, SF_EINVAL, "inputs.query[0][1] = 500");
    /* Nothing was appended; a good record still goes in. */
    ck_assert_uint_eq(sf_shard_writer_count(w), 0);
    synth_fill(s, &p, 0);
    ck_assert_int_eq(sf_shard_writer_append(w, &s->rec, &err), SF_OK);
    free(s);
    uint8_t d[32], want[32];
    ck_assert_int_eq(sf_shard_writer_seal(w, NULL, d, &err), SF_OK);
    expected_digest(&p, 1, want);
    ck_assert_mem_eq(d, want, 32);
}
END_TEST

/* The SHA-256 of the empty string (FIPS 180-2), in two cases. */
static const char SHA_LOWER[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
static const char SHA_UPPER[] = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855";

/* What a shard records names a model or config one way: lower case
 * (common.h); the worker normalises, the writer refuses anything else. */
START_TEST(writer_refuses_digests_not_in_lower_case) {
    synth_params p = default_params();
    sf_shard_info info;
    sf_err err = {0};
    sf_shard_writer *w = NULL;
    synth_info(&p, &info);
    info.model_sha256 = SHA_UPPER;
    ck_assert_int_eq(sf_shard_writer_open(path_in("c.shard"), &info, NULL, &w, &err), SF_EINVAL);
    ck_assert_ptr_null(w);
    ck_assert_msg(strstr(err.msg, "c.shard: info.model_sha256 must be 64 lower-case hex digits or "
                                  "\"rollout\""),
                  "%s", err.msg);
    info.model_sha256 = "abc";
    ck_assert_int_eq(sf_shard_writer_open(path_in("c.shard"), &info, NULL, &w, &err), SF_EINVAL);
    ck_assert_msg(strstr(err.msg, "info.model_sha256 must be"), "%s", err.msg);
    info.model_sha256 = SHA_LOWER;
    info.config_digest = SHA_UPPER;
    ck_assert_int_eq(sf_shard_writer_open(path_in("c.shard"), &info, NULL, &w, &err), SF_EINVAL);
    ck_assert_msg(strstr(err.msg, "c.shard: info.config_digest must be 64 lower-case hex digits"),
                  "%s", err.msg);
    info.config_digest = SHA_LOWER;
    ck_assert_int_eq(sf_shard_writer_open(path_in("c.shard"), &info, NULL, &w, &err), SF_OK);
    sf_shard_writer_abort(w);
}
END_TEST

/* Data at rest is read in either case: a shard sealed before writers
 * demanded lower case may spell its model in upper case. */
START_TEST(manifest_digests_are_read_in_either_case) {
    Spirefleet__ShardManifest m = SPIREFLEET__SHARD_MANIFEST__INIT;
    uint8_t digest[SF_SHARD_DIGEST_BYTES] = {0};
    m.format_version = SF_SHARD_FORMAT_VERSION;
    m.schema_version = SF_LABEL_SCHEMA_VERSION;
    m.content_digest = (ProtobufCBinaryData){sizeof digest, digest};
    m.compression = "zstd";
    m.run_id = "r";
    m.model_sha256 = (char *)SHA_UPPER;
    m.config_digest = (char *)SHA_UPPER;
    uint8_t buf[512];
    ck_assert_uint_le(spirefleet__shard_manifest__get_packed_size(&m), sizeof buf);
    size_t n = spirefleet__shard_manifest__pack(&m, buf);
    Spirefleet__ShardManifest *out = NULL;
    sf_err err = {0};
    ck_assert_msg(sf_manifest_decode(buf, n, &out, &err) == SF_OK, "%s", err.msg);
    ck_assert_str_eq(out->model_sha256, SHA_UPPER);
    spirefleet__shard_manifest__free_unpacked(out, NULL);
    m.model_sha256 = "abc";
    n = spirefleet__shard_manifest__pack(&m, buf);
    ck_assert_int_eq(sf_manifest_decode(buf, n, &out, &err), SF_ECORRUPT);
    ck_assert_str_eq(err.msg,
                     "manifest: model_sha256 'abc' is neither 64 hex digits nor 'rollout'");
    m.model_sha256 = "rollout";
    m.config_digest = (char *)SHA_LOWER + 1;
    n = spirefleet__shard_manifest__pack(&m, buf);
    ck_assert_int_eq(sf_manifest_decode(buf, n, &out, &err), SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "manifest: config_digest '3b0c"), "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "' is not 64 hex digits"), "%s", err.msg);
}
END_TEST

START_TEST(a_sealed_shard_is_never_replaced) {
    synth_params p = default_params();
    sf_shard_info info = info_of(&p);
    sf_err err = {0};
    sf_shard_writer *late;
    ck_assert_int_eq(sf_shard_writer_open(path_in("x.shard"), &info, NULL, &late, &err), SF_OK);
    uint8_t first[32];
    ck_assert_int_eq(write_shard(path_in("x.shard"), &p, 30, NULL, NULL, first, &err), SF_OK);
    /* Opening at an existing path is refused... */
    sf_shard_writer *w2;
    ck_assert_int_eq(sf_shard_writer_open(path_in("x.shard"), &info, NULL, &w2, &err), SF_ESTATE);
    ck_assert_msg(strstr(err.msg, "already exists"), "%s", err.msg);
    /* ...and a writer opened earlier cannot seal over it. */
    synth_record *s = synth_at(&p, 0);
    ck_assert_int_eq(sf_shard_writer_append(late, &s->rec, &err), SF_OK);
    free(s);
    ck_assert_int_eq(sf_shard_writer_seal(late, NULL, NULL, &err), SF_ESTATE);
    ck_assert_msg(strstr(err.msg, "already exists"), "%s", err.msg);
    sf_shard_verify_report rep;
    ck_assert_int_eq(sf_shard_verify(path_in("x.shard"), &rep, &err), SF_OK);
    ck_assert_mem_eq(rep.digest, first, 32);
    ck_assert_uint_eq(rep.records, 30);
    ck_assert_uint_eq(count_files(SF_SHARD_TEMP_SUFFIX), 0);
}
END_TEST

START_TEST(writer_killed_mid_shard_leaves_no_sealed_shard) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        synth_params p;
        synth_params_default(&p);
        sf_shard_info info;
        synth_info(&p, &info);
        sf_shard_writer *w;
        if (sf_shard_writer_open(path_in("k.shard"), &info, &small_blocks, &w, NULL) < 0)
            _exit(2);
        synth_record *s = malloc(sizeof *s);
        for (uint64_t i = 0;; i++) {
            synth_fill(s, &p, i % 1000);
            s->ids.game_seed = 1000 + i;
            if (sf_shard_writer_append(w, &s->rec, NULL) < 0)
                _exit(3);
            if (i == 300 && write(fds[1], "x", 1) != 1)
                _exit(4);
        }
    }
    close(fds[1]);
    char c;
    ck_assert_int_eq(read(fds[0], &c, 1), 1); /* the child is mid-shard */
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status));
    close(fds[0]);
    ck_assert_int_eq(access(path_in("k.shard"), F_OK), -1);
    ck_assert_uint_eq(count_files(SF_SHARD_SUFFIX), 0);
    ck_assert_uint_eq(count_files(SF_SHARD_TEMP_SUFFIX), 1);
    char temp[512] = "";
    DIR *d = opendir(tmpdir);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (sf_has_suffix(de->d_name, ".tmp"))
            snprintf(temp, sizeof temp, "%s/%s", tmpdir, de->d_name);
    closedir(d);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "/k.shard.%ld.", (long)pid);
    ck_assert_msg(strstr(temp, prefix), "temp file '%s' is not named after the writer", temp);
    sf_shard_reader *r = NULL;
    sf_err err = {0};
    ck_assert_int_eq(sf_shard_reader_open(temp, &r, &err), SF_ESTATE);
    ck_assert_msg(strstr(err.msg, "not sealed"), "%s", err.msg);
    ck_assert_int_eq(sf_shard_verify(temp, NULL, &err), SF_ESTATE);
}
END_TEST

/* ---- decoders on bad bytes ---------------------------------------------------- */

START_TEST(block_and_record_decoders_refuse_garbage) {
    sf_err err = {0};
    uint8_t junk[64];
    for (size_t k = 0; k < sizeof junk; k++)
        junk[k] = (uint8_t)(k * 37 + 11);
    sf_block_view b;
    ck_assert_int_eq(sf_block_parse(junk, sizeof junk, 5, 1, &b, &err), SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "block at record 5: bad magic"), "%s", err.msg);
    Spirefleet__LabelRecord *rec;
    ck_assert_int_eq(sf_record_decode(junk, sizeof junk, 9, NULL, &rec, &err), SF_EFORMAT);
    ck_assert_str_eq(err.msg, "record 9: protobuf LabelRecord does not decode");
    Spirefleet__ShardManifest *m;
    ck_assert_int_lt(sf_manifest_decode(junk, sizeof junk, &m, &err), 0);
    /* A well-formed block with a wrong CRC. */
    uint8_t v[24 + 1] = {0};
    sf_put_le32(v, SF_BLOCK_MAGIC);
    sf_put_le32(v + 4, 1);
    sf_put_le64(v + 8, 5);
    sf_put_le32(v + 16, 1);
    sf_put_le32(v + 20, sf_crc32(v, 20) ^ 1);
    ck_assert_int_eq(sf_block_parse(v, sizeof v, 5, 1, &b, &err), SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "header CRC mismatch"), "%s", err.msg);
    sf_put_le32(v + 20, sf_crc32(v, 20));
    ck_assert_int_eq(sf_block_parse(v, sizeof v, 5, 1, &b, &err), SF_OK);
    ck_assert_uint_eq(b.n, 1);
    ck_assert_int_eq(sf_block_parse(v, sizeof v, 6, 1, &b, &err), SF_ECORRUPT); /* wrong key */
    /* a format-1 block in a format-2 shard, and an unknown format */
    ck_assert_int_eq(sf_block_parse(v, sizeof v, 5, 2, &b, &err), SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "block at record 5: bad magic 0x31424653 (format 2)"), "%s",
                  err.msg);
    ck_assert_int_eq(sf_block_parse(v, sizeof v, 5, 3, &b, &err), SF_EVERSION);
}
END_TEST

/* A format-2 block from a real shard, each table damaged in turn (the CRC
 * recomputed, so the parser's own checks must catch it): each refusal
 * names what is wrong. */
static void v2_reparse(const uint8_t *orig, size_t len, uint64_t first, void (*edit)(uint8_t *),
                       const char *want) {
    uint8_t *v = malloc(len);
    memcpy(v, orig, len);
    edit(v);
    uint32_t n = sf_le32(v + 4), m = sf_le32(orig + 16);
    size_t hdr = 20 + 8 * (size_t)m + 4 * (size_t)n;
    sf_put_le32(v + hdr, sf_crc32(v, hdr));
    sf_block_view b;
    sf_err err = {0};
    int rc = sf_block_parse(v, len, first, 2, &b, &err);
    if (rc == SF_OK) { /* the tables agree: the frame's decode must refuse it */
        ZSTD_DCtx *d = ZSTD_createDCtx();
        sf_buf out = {0};
        sf_frame_ref f;
        sf_block_frame(&b, 0, &f);
        rc = sf_frame_decompress(d, &f, f.first + 1, &out, NULL, &err);
        sf_buf_free(&out);
        ZSTD_freeDCtx(d);
    }
    ck_assert_int_eq(rc, SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, want), "'%s' does not say '%s'", err.msg, want);
    free(v);
}
static void zero_frames(uint8_t *v) {
    sf_put_le32(v + 16, 0);
}
static void too_many_frames(uint8_t *v) {
    sf_put_le32(v + 16, sf_le32(v + 4) + 1);
}
static void empty_first_frame(uint8_t *v) {
    sf_put_le32(v + 20, 0);
}
static void frames_short_of_n(uint8_t *v) {
    uint32_t m = sf_le32(v + 16);
    sf_put_le32(v + 20 + 4 * (m - 1), sf_le32(v + 4) - 1);
}
static void frame_past_the_end(uint8_t *v) {
    uint32_t m = sf_le32(v + 16);
    sf_put_le32(v + 20 + 4 * m, 0x7fffffff);
}
static void record_end_repeats(uint8_t *v) {
    uint32_t m = sf_le32(v + 16);
    uint8_t *rec = v + 20 + 8 * m;
    sf_put_le32(rec + 4, sf_le32(rec));
}
static void record_end_short_of_content(uint8_t *v) {
    uint32_t m = sf_le32(v + 16);
    uint8_t *rec = v + 20 + 8 * m;
    uint32_t last = sf_le32(v + 20) - 1; /* frame 0's last record */
    sf_put_le32(rec + 4 * last, sf_le32(rec + 4 * last) - 1);
}

START_TEST(format_2_damaged_tables_are_named) {
    synth_params p = default_params();
    sf_err err = {0};
    const char *path = path_in("t.shard");
    ck_assert_int_eq(write_shard(path, &p, 100, &small_blocks, NULL, NULL, &err), SF_OK);
    sf_shard_reader *r;
    ck_assert_int_eq(sf_shard_reader_open(path, &r, &err), SF_OK);
    uint64_t voff;
    size_t vlen;
    sf_block_view b;
    ck_assert_int_eq(sf_shard_reader_block_at(r, 40, &voff, &vlen, &b, &err), SF_OK);
    ck_assert_uint_ge(b.m, 2);
    uint8_t *v = malloc(vlen);
    int fd = open(path, O_RDONLY);
    ck_assert_int_eq(pread(fd, v, vlen, (off_t)voff), (ssize_t)vlen);
    close(fd);
    sf_shard_reader_close(r);
    uint64_t first = b.first;
    char want[96];
    snprintf(want, sizeof want, "block at record %llu: 0 frames for", (unsigned long long)first);
    v2_reparse(v, vlen, first, zero_frames, want);
    v2_reparse(v, vlen, first, too_many_frames, "frames for");
    v2_reparse(v, vlen, first, empty_first_frame, "frame 0's record count is out of order");
    v2_reparse(v, vlen, first, frames_short_of_n, "record count is out of order");
    v2_reparse(v, vlen, first, frame_past_the_end, "ends out of order or past the block's");
    snprintf(want, sizeof want, "record %llu: end", (unsigned long long)first + 1);
    v2_reparse(v, vlen, first, record_end_repeats, want);
    snprintf(want, sizeof want,
             "record %llu (in the frame of records %llu..%llu): the frame's "
             "records end at",
             (unsigned long long)first + 1, (unsigned long long)first,
             (unsigned long long)first + 15);
    v2_reparse(v, vlen, first, record_end_short_of_content, want);
    /* and an unchanged header with a wrong CRC */
    v[20] ^= 1;
    sf_block_view b2;
    ck_assert_int_eq(sf_block_parse(v, vlen, first, 2, &b2, &err), SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "header CRC mismatch"), "%s", err.msg);
    v[20] ^= 1;
    ck_assert_int_eq(sf_block_parse(v, vlen, first, 2, &b2, &err), SF_OK);
    free(v);
}
END_TEST

/* ---- pull ------------------------------------------------------------------------------ */

START_TEST(pull_copies_verifies_and_skips_present) {
    synth_params p = default_params();
    sf_err err = {0};
    char src[512], dst[512];
    snprintf(src, sizeof src, "%s/src", tmpdir);
    snprintf(dst, sizeof dst, "%s/dst", tmpdir);
    ck_assert_int_eq(mkdir(src, 0755), 0);
    char a[600], b[600], bad[600], tmp[600];
    snprintf(a, sizeof a, "%s/synth-run-job000007.shard", src); /* canonical names */
    snprintf(b, sizeof b, "%s/synth-run-job000008.shard", src);
    snprintf(bad, sizeof bad, "%s/bad.shard", src);
    snprintf(tmp, sizeof tmp, "%s/c.shard.1.tmp", src);
    uint8_t da[32];
    ck_assert_int_eq(write_shard(a, &p, 40, NULL, NULL, da, &err), SF_OK);
    p.job_id = 8;
    ck_assert_int_eq(write_shard(b, &p, 60, NULL, NULL, NULL, &err), SF_OK);
    ck_assert_int_eq(write_shard(bad, &p, 10, NULL, NULL, NULL, &err), SF_OK);
    ck_assert_int_eq(truncate(bad, (off_t)file_size(bad) - 3), 0);
    FILE *f = fopen(tmp, "w");
    fputs("a writer's temp", f);
    fclose(f);

    sf_shard_source *s;
    ck_assert_int_eq(sf_shard_source_open_dir(src, &s, &err), SF_OK);
    sf_shard_pull_report rep = {0};
    ck_assert_int_eq(sf_shard_pull(s, dst, &rep, &err), SF_EFORMAT);
    ck_assert_msg(strstr(err.msg, "bad.shard: truncated"), "%s", err.msg);
    ck_assert_uint_eq(rep.copied, 2);
    ck_assert_uint_eq(rep.failed, 1);
    ck_assert_uint_eq(rep.present, 0);
    char out[600];
    snprintf(out, sizeof out, "%s/synth-run-job000007.shard", dst);
    sf_shard_verify_report vr;
    ck_assert_int_eq(sf_shard_verify(out, &vr, &err), SF_OK);
    ck_assert_mem_eq(vr.digest, da, 32);
    snprintf(out, sizeof out, "%s/bad.shard", dst);
    ck_assert_int_eq(access(out, F_OK), -1);
    snprintf(out, sizeof out, "%s/c.shard.1.tmp", dst);
    ck_assert_int_eq(access(out, F_OK), -1);

    /* Again: both present, nothing copied. */
    ck_assert_int_eq(unlink(bad), 0);
    memset(&rep, 0, sizeof rep);
    ck_assert_int_eq(sf_shard_pull(s, dst, &rep, &err), SF_OK);
    ck_assert_uint_eq(rep.copied, 0);
    ck_assert_uint_eq(rep.present, 2);

    /* A destination file of the same name and another digest is a conflict
     * and stays as it was. */
    snprintf(out, sizeof out, "%s/synth-run-job000007.shard", dst);
    ck_assert_int_eq(unlink(out), 0);
    p.job_id = 7;
    ck_assert_int_eq(write_shard(out, &p, 41, NULL, NULL, NULL, &err), SF_OK);
    memset(&rep, 0, sizeof rep);
    ck_assert_int_eq(sf_shard_pull(s, dst, &rep, &err), SF_ESTATE);
    ck_assert_msg(strstr(err.msg, "another content digest"), "%s", err.msg);
    ck_assert_uint_eq(rep.failed, 1);
    ck_assert_uint_eq(rep.present, 1);
    ck_assert_int_eq(sf_shard_verify(out, &vr, &err), SF_OK);
    ck_assert_uint_eq(vr.records, 41);
    s->ops->close(s);
}
END_TEST

/* ---- what one job's play writes: keys, turns, one end per fight ------------------ */

/* A shard at `path` of synthetic records idx[0..n-1] in that order (an
 * index may repeat or come back), record k changed by edit(s, k) when
 * given; verified, `rep` and `err` receive verify's answer. */
static int verify_records_as(const char *path, const synth_params *p, const uint64_t *idx, size_t n,
                             void (*edit)(synth_record *s, size_t k), sf_shard_verify_report *rep,
                             sf_err *err) {
    sf_shard_info info;
    synth_info(p, &info);
    sf_shard_writer *w = NULL;
    ck_assert_msg(sf_shard_writer_open(path, &info, NULL, &w, err) == SF_OK, "%s", err->msg);
    synth_record *s = synth_new();
    for (size_t k = 0; k < n; k++) {
        synth_fill(s, p, idx[k]);
        if (edit)
            edit(s, k);
        ck_assert_msg(sf_shard_writer_append(w, &s->rec, err) == SF_OK, "%s", err->msg);
    }
    free(s);
    ck_assert_msg(sf_shard_writer_seal(w, NULL, NULL, err) == SF_OK, "%s", err->msg);
    return sf_shard_verify(path, rep, err);
}

START_TEST(verify_refuses_a_repeated_record) {
    synth_params p = default_params();
    sf_err err = {0};
    sf_shard_verify_report rep;
    /* records 0..9, then record 9 again: the same decision twice in a row */
    uint64_t idx[11];
    for (uint64_t i = 0; i < 10; i++)
        idx[i] = i;
    idx[10] = 9;
    ck_assert_int_eq(verify_records_as(path_in("rep.shard"), &p, idx, 11, NULL, &rep, &err),
                     SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "rep.shard: record 10: key (seed 1000, fight 0, decision 9) "
                                  "repeats record 9's: a decision is recorded once"),
                  "%s", err.msg);
    ck_assert_int_eq(rep.bad_record, 10);
    ck_assert_uint_eq(rep.records, 10);
    /* a whole job written twice over (the same 40 records, twice): the
     * second copy's first record comes back to the first key */
    uint64_t twice[80];
    for (uint64_t i = 0; i < 80; i++)
        twice[i] = i % 40;
    ck_assert_int_eq(verify_records_as(path_in("twice.shard"), &p, twice, 80, NULL, &rep, &err),
                     SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "twice.shard: record 40: key (seed 1000, fight 0, decision 0) "
                                  "comes before record 39's key (seed 1000, fight 1, decision "
                                  "19): records go in (seed, fight, decision) order"),
                  "%s", err.msg);
    ck_assert_int_eq(rep.bad_record, 40);
}
END_TEST

START_TEST(verify_refuses_records_out_of_order) {
    synth_params p = default_params();
    sf_err err = {0};
    sf_shard_verify_report rep;
    /* decisions 5 and 6 of fight 0 swapped */
    uint64_t idx[] = {0, 1, 2, 3, 4, 6, 5, 7};
    ck_assert_int_eq(verify_records_as(path_in("swap.shard"), &p, idx, 8, NULL, &rep, &err),
                     SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "swap.shard: record 6: key (seed 1000, fight 0, decision 5) "
                                  "comes before record 5's key (seed 1000, fight 0, decision 6)"),
                  "%s", err.msg);
    ck_assert_int_eq(rep.bad_record, 6);
    /* a fight before the one already written (fight 1, then fight 0) */
    uint64_t fights[] = {20, 21, 0};
    ck_assert_int_eq(verify_records_as(path_in("fights.shard"), &p, fights, 3, NULL, &rep, &err),
                     SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "record 2: key (seed 1000, fight 0, decision 0) comes before "
                                  "record 1's key (seed 1000, fight 1, decision 1)"),
                  "%s", err.msg);
    /* a seed before the one already written (seed 1001, then 1000) */
    uint64_t seeds[] = {240, 239};
    ck_assert_int_eq(verify_records_as(path_in("seeds.shard"), &p, seeds, 2, NULL, &rep, &err),
                     SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "record 1: key (seed 1000, fight 11, decision 19) comes before "
                                  "record 0's key (seed 1001, fight 0, decision 0)"),
                  "%s", err.msg);
}
END_TEST

static void turn_zero_at_3(synth_record *s, size_t k) {
    if (k == 3)
        s->ids.turn = 0;
}

static void turn_back_at_12(synth_record *s, size_t k) {
    if (k == 12) /* decision 12 is in turn 4 (decision / 4 + 1); record 11 in turn 3 */
        s->ids.turn = 2;
}

static void encounter_changes_at_5(synth_record *s, size_t k) {
    if (k == 5)
        s->ids.encounter_id = (s->ids.encounter_id + 1) % 20;
}

static void fight_2_as_fight_0_at_5(synth_record *s, size_t k) {
    if (k == 5) {
        s->ids.fight_index = 0;
        s->ids.encounter_id = (uint32_t)(sf_mix64(s->ids.game_seed * 13) % 20); /* fight 0's */
    }
}

START_TEST(verify_refuses_turns_and_fight_ends_that_disagree) {
    synth_params p = default_params();
    sf_err err = {0};
    sf_shard_verify_report rep;
    uint64_t idx[20];
    for (uint64_t i = 0; i < 20; i++)
        idx[i] = i;
    ck_assert_int_eq(
        verify_records_as(path_in("t0.shard"), &p, idx, 20, turn_zero_at_3, &rep, &err),
        SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "t0.shard: record 3 (seed 1000, fight 0, decision 3): turn 0; "
                                  "turns count from 1"),
                  "%s", err.msg);
    ck_assert_int_eq(rep.bad_record, 3);
    ck_assert_int_eq(
        verify_records_as(path_in("tb.shard"), &p, idx, 20, turn_back_at_12, &rep, &err),
        SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "record 12 (seed 1000, fight 0, decision 12): turn 2 after turn "
                                  "3 of record 11"),
                  "%s", err.msg);
    ck_assert_int_eq(
        verify_records_as(path_in("enc.shard"), &p, idx, 20, encounter_changes_at_5, &rep, &err),
        SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "record 5 (seed 1000, fight 0): its outcome or encounter "
                                  "differs from record 0's, the fight's first record"),
                  "%s", err.msg);
    /* another fight's end inside fight 0: record 5 is synthetic record 45
     * (seed 1000, fight 2, decision 5) under fight 0's key and encounter */
    idx[5] = 45;
    ck_assert_int_eq(
        verify_records_as(path_in("end.shard"), &p, idx, 20, fight_2_as_fight_0_at_5, &rep, &err),
        SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "end.shard: record 5 (seed 1000, fight 0): its outcome or "
                                  "encounter differs from record 0's, the fight's first record: a "
                                  "fight has one end"),
                  "%s", err.msg);
}
END_TEST

START_TEST(verify_counts_fights_and_wins_from_the_records) {
    synth_params p = default_params();
    sf_err err = {0};
    /* 300 records of 20 decisions a fight, 12 fights a seed: seed 1000's
     * fights 0..11 (records 0..239) and seed 1001's fights 0..2 (240..299):
     * 15 fights. The manifest's JobStats say otherwise (3 fights, 2 won):
     * the report counts the records, not what the worker wrote. */
    Spirefleet__JobStats stats = SPIREFLEET__JOB_STATS__INIT;
    stats.fights = 3;
    stats.fights_won = 2;
    ck_assert_int_eq(write_shard(path_in("f.shard"), &p, 300, NULL, &stats, NULL, &err), SF_OK);
    sf_shard_verify_report rep;
    ck_assert_msg(sf_shard_verify(path_in("f.shard"), &rep, &err) == SF_OK, "%s", err.msg);
    ck_assert_uint_eq(rep.fights, 15);
    /* won fights: each fight's outcome, taken from the generator */
    uint64_t won = 0;
    synth_record *s = synth_new();
    for (uint64_t i = 0; i < 300; i += 20) {
        synth_fill(s, &p, i);
        won += s->outcome.won;
    }
    free(s);
    ck_assert_uint_gt(won, 0);
    ck_assert_uint_lt(won, 15);
    ck_assert_uint_eq(rep.fights_won, won);
    ck_assert_str_eq(rep.name, "synth-run-job000007.shard");
    /* 21 records: a 21st decision opens seed 1000's fight 1 */
    ck_assert_int_eq(write_shard(path_in("g.shard"), &p, 21, NULL, NULL, NULL, &err), SF_OK);
    ck_assert_msg(sf_shard_verify(path_in("g.shard"), &rep, &err) == SF_OK, "%s", err.msg);
    ck_assert_uint_eq(rep.fights, 2);
}
END_TEST

START_TEST(canonical_names_are_the_stored_names_only) {
    sf_err err = {0};
    ck_assert_int_eq(
        sf_shard_check_canonical_name("d/synth-run-job000007.shard", "synth-run", 7, &err), SF_OK);
    ck_assert_int_eq(
        sf_shard_check_canonical_name("synth-run-job1234567.shard", "synth-run", 1234567, &err),
        SF_OK);
    const char *bad[] = {"d/a.shard",
                         "d/synth-run-job000007-a2.shard",
                         "d/synth-run-job000008.shard",
                         "d/other-job000007.shard",
                         "d/synth-run-job7.shard",
                         "d/synth-run-job000007.shard.bak"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ck_assert_int_eq(sf_shard_check_canonical_name(bad[k], "synth-run", 7, &err), SF_ECORRUPT);
        char want[300];
        snprintf(want, sizeof want,
                 "%s: not the canonical name of its shard: expected "
                 "'synth-run-job000007.shard' (run 'synth-run', job 7); a directory holds each "
                 "shard only under that name",
                 bad[k]);
        ck_assert_str_eq(err.msg, want);
    }
}
END_TEST

START_TEST(pull_refuses_a_shard_under_another_name) {
    synth_params p = default_params();
    sf_err err = {0};
    char src[512], dst[512], a[600], copy[600];
    snprintf(src, sizeof src, "%s/src", tmpdir);
    snprintf(dst, sizeof dst, "%s/dst", tmpdir);
    ck_assert_int_eq(mkdir(src, 0755), 0);
    snprintf(a, sizeof a, "%s/synth-run-job000007.shard", src);
    snprintf(copy, sizeof copy, "%s/copy.shard", src);
    ck_assert_int_eq(write_shard(a, &p, 40, NULL, NULL, NULL, &err), SF_OK);
    ck_assert_int_eq(write_shard(copy, &p, 40, NULL, NULL, NULL, &err), SF_OK);
    sf_shard_source *s;
    ck_assert_int_eq(sf_shard_source_open_dir(src, &s, &err), SF_OK);
    sf_shard_pull_report rep = {0};
    ck_assert_int_eq(sf_shard_pull(s, dst, &rep, &err), SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "/src/copy.shard: not the canonical name of its shard: "
                                  "expected 'synth-run-job000007.shard'"),
                  "%s", err.msg);
    ck_assert_uint_eq(rep.copied, 1);
    ck_assert_uint_eq(rep.failed, 1);
    char out[600];
    snprintf(out, sizeof out, "%s/copy.shard", dst);
    ck_assert_int_eq(access(out, F_OK), -1);
    s->ops->close(s);
}
END_TEST

/* ---- the borrowing record decoder (proto/pbuf.h sf_pb_unpack_borrowed) ---------- */

/* x and y pack to the same bytes (a, b: scratch). */
static void packs_equal(const ProtobufCMessage *x, const ProtobufCMessage *y, sf_buf *a,
                        sf_buf *b) {
    size_t n = protobuf_c_message_get_packed_size(x);
    ck_assert_uint_eq(protobuf_c_message_get_packed_size(y), n);
    a->len = b->len = 0;
    ck_assert_int_eq(sf_buf_reserve(a, n, NULL), SF_OK);
    ck_assert_int_eq(sf_buf_reserve(b, n, NULL), SF_OK);
    ck_assert_uint_eq(protobuf_c_message_pack(x, a->p), n);
    ck_assert_uint_eq(protobuf_c_message_pack(y, b->p), n);
    ck_assert_mem_eq(a->p, b->p, n);
}

/* The verdict and the values of sf_record_decode_borrowed on `raw` are
 * sf_record_decode's: the same status, and on success the same record
 * (both packed again give the same bytes). Returns 1 when the borrowing
 * decoder took the bytes itself, 0 when it left them to protobuf-c. */
static int same_as_protobuf_c(const uint8_t *raw, size_t len, sf_arena *arena, sf_buf *a,
                              sf_buf *b) {
    ck_assert_int_eq(sf_arena_reset(arena), SF_OK);
    ProtobufCMessage *m;
    int fast = sf_pb_unpack_borrowed(&spirefleet__label_record__descriptor, raw, len, arena, &m);
    ck_assert(fast == SF_OK || fast == SF_EFORMAT);
    Spirefleet__LabelRecord *pbc = spirefleet__label_record__unpack(NULL, len, raw);
    if (fast == SF_OK) { /* the subset is a subset: protobuf-c takes these bytes too */
        ck_assert_ptr_nonnull(pbc);
        packs_equal(&pbc->base, m, a, b);
    }
    if (pbc)
        spirefleet__label_record__free_unpacked(pbc, NULL);
    sf_err e1 = {0}, e2 = {0};
    Spirefleet__LabelRecord *r1 = NULL, *r2 = NULL;
    ck_assert_int_eq(sf_arena_reset(arena), SF_OK);
    int rc1 = sf_record_decode_borrowed(raw, len, 0, arena, &r1, &e1);
    int rc2 = sf_record_decode(raw, len, 0, NULL, &r2, &e2);
    ck_assert_int_eq(rc1, rc2);
    ck_assert_str_eq(e1.msg, e2.msg);
    if (rc2 == SF_OK) {
        packs_equal(&r1->base, &r2->base, a, b);
        spirefleet__label_record__free_unpacked(r2, NULL);
    }
    return fast == SF_OK;
}

/* Every record of a real self-play shard and of synthetic typical and
 * dense jobs decodes to protobuf-c's record, its tensors pointing into the
 * bytes it was given; and so does every mutation of them (a byte changed,
 * the bytes cut short, a byte inserted), decoded or refused alike. */
START_TEST(borrowed_decode_equals_protobuf_c_on_records_and_their_mutations) {
    char src[1024];
    snprintf(src, sizeof src, "%s/tests/fuzz/corpus/shard-file/run-job1.shard", SF_SOURCE_ROOT);
    sf_err err = {0};
    sf_shard_reader *r;
    ck_assert_msg(sf_shard_reader_open(src, &r, &err) == SF_OK, "%s", err.msg);
    enum { NREAL = 43, NSYN = 8, MAXREC = NREAL + 2 * NSYN };
    uint8_t *rec[MAXREC];
    size_t len[MAXREC], n = 0;
    for (uint64_t i = 0; i < NREAL; i++, n++) {
        const uint8_t *p;
        ck_assert_msg(sf_shard_reader_get_raw(r, i, &p, &len[n], NULL, &err) == SF_OK, "%s",
                      err.msg);
        ck_assert_ptr_nonnull(rec[n] = malloc(len[n] + 1));
        memcpy(rec[n], p, len[n]);
    }
    sf_shard_reader_close(r);
    for (int dense = 0; dense < 2; dense++) {
        synth_params p;
        synth_params_default(&p);
        p.dense = dense;
        for (uint64_t i = 0; i < NSYN; i++, n++)
            rec[n] = packed(&p, i * 7, &len[n]);
    }
    sf_arena arena;
    sf_arena_init(&arena, NULL);
    sf_buf a = {0}, b = {0};
    for (size_t k = 0; k < n; k++) {
        ck_assert_int_eq(same_as_protobuf_c(rec[k], len[k], &arena, &a, &b), 1);
        /* borrowed: the tensor bytes are the input's own */
        ck_assert_int_eq(sf_arena_reset(&arena), SF_OK);
        Spirefleet__LabelRecord *d;
        ck_assert_int_eq(sf_record_decode_borrowed(rec[k], len[k], k, &arena, &d, &err), SF_OK);
        const uint8_t *tc = d->inputs->token_cont->data.data;
        ck_assert(tc > rec[k] && tc + d->inputs->token_cont->data.len <= rec[k] + len[k]);
    }
    uint64_t seed = 0x9E3779B97F4A7C15ull, taken = 0, left = 0, refused = 0;
    uint8_t *mut = malloc(1 << 16);
    ck_assert_ptr_nonnull(mut);
    for (int round = 0; round < 6000; round++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t k = (size_t)(seed >> 33) % n, at = (size_t)(seed >> 13) % len[k];
        size_t m = len[k];
        memcpy(mut, rec[k], m);
        int how = round % 3;
        if (how == 0) {
            mut[at] ^= (uint8_t)(1u << (seed >> 5) % 8);
        } else if (how == 1) {
            m = at;
        } else {
            memmove(mut + at + 1, mut + at, m - at);
            mut[at] = (uint8_t)(seed >> 40);
            m++;
        }
        /* a fresh heap copy of exactly m bytes, so ASan sees any read past them */
        uint8_t *exact = malloc(m ? m : 1);
        ck_assert_ptr_nonnull(exact);
        memcpy(exact, mut, m);
        if (same_as_protobuf_c(exact, m, &arena, &a, &b))
            taken++;
        else
            left++;
        sf_err e = {0};
        Spirefleet__LabelRecord *d;
        ck_assert_int_eq(sf_arena_reset(&arena), SF_OK);
        if (sf_record_decode_borrowed(exact, m, 0, &arena, &d, &e) != SF_OK)
            refused++;
        free(exact);
    }
    /* both ways were taken, and some mutations were refused */
    ck_assert_uint_gt(taken, 1000);
    ck_assert_uint_gt(left, 500);
    ck_assert_uint_gt(refused, 1000);
    free(mut);
    sf_buf_free(&a);
    sf_buf_free(&b);
    sf_arena_free(&arena);
    for (size_t k = 0; k < n; k++)
        free(rec[k]);
}
END_TEST

/* What protobuf merges or keeps (a field given twice, an unknown field, a
 * repeated scalar not packed) is left to protobuf-c, whose record stands. */
START_TEST(borrowed_decode_leaves_merges_and_unknown_fields_to_protobuf_c) {
    synth_params p;
    synth_params_default(&p);
    size_t len;
    uint8_t *raw = packed(&p, 3, &len);
    uint8_t *buf = malloc(len + 64);
    ck_assert_ptr_nonnull(buf);
    sf_arena arena;
    sf_arena_init(&arena, NULL);
    sf_buf a = {0}, b = {0};
    ProtobufCMessage *m;
    /* schema_version (field 1) a second time: the last one counts */
    memcpy(buf, raw, len);
    buf[len] = 1 << 3 | 0;
    buf[len + 1] = 9;
    ck_assert_int_eq(sf_arena_reset(&arena), SF_OK);
    ck_assert_int_eq(
        sf_pb_unpack_borrowed(&spirefleet__label_record__descriptor, buf, len + 2, &arena, &m),
        SF_EFORMAT);
    ck_assert_int_eq(same_as_protobuf_c(buf, len + 2, &arena, &a, &b), 0);
    sf_err err = {0};
    Spirefleet__LabelRecord *d;
    ck_assert_int_eq(sf_arena_reset(&arena), SF_OK);
    ck_assert_int_eq(sf_record_decode_borrowed(buf, len + 2, 5, &arena, &d, &err), SF_EVERSION);
    ck_assert_str_eq(err.msg, "record 5: schema_version 9, this reader knows 4 (written by a newer "
                              "spirefleet: read it with that release)");
    /* an unknown field (number 99, varint): protobuf-c keeps it, the record reads */
    memcpy(buf, raw, len);
    buf[len] = (uint8_t)(99 << 3 & 0x7f) | 0x80;
    buf[len + 1] = 99 >> 4;
    buf[len + 2] = 1;
    ck_assert_int_eq(sf_arena_reset(&arena), SF_OK);
    ck_assert_int_eq(
        sf_pb_unpack_borrowed(&spirefleet__label_record__descriptor, buf, len + 3, &arena, &m),
        SF_EFORMAT);
    ck_assert_int_eq(same_as_protobuf_c(buf, len + 3, &arena, &a, &b), 0);
    ck_assert_int_eq(sf_arena_reset(&arena), SF_OK);
    ck_assert_int_eq(sf_record_decode_borrowed(buf, len + 3, 5, &arena, &d, &err), SF_OK);
    ck_assert_uint_eq(d->base.n_unknown_fields, 1);
    /* the length of `ids` (field 2, after schema_version's two bytes) and
     * then its tag written in k bytes: protobuf-c reads five at most */
    ck_assert_uint_eq(raw[0], 1 << 3 | 0);
    ck_assert_uint_eq(raw[2], 2 << 3 | 2);
    ck_assert_uint_lt(raw[3], 0x80);
    for (int what = 0; what < 2; what++)
        for (size_t k = 4; k <= 7; k++) {
            size_t at = what == 0 ? 3 : 2, v = raw[at], o = 0;
            memcpy(buf, raw, at);
            o = at;
            for (size_t j = 0; j + 1 < k; j++)
                buf[o++] = (uint8_t)((v & 0x7f) | 0x80), v >>= 7;
            buf[o++] = (uint8_t)v;
            memcpy(buf + o, raw + at + 1, len - at - 1);
            size_t n = o + len - at - 1;
            ck_assert_int_eq(same_as_protobuf_c(buf, n, &arena, &a, &b), k <= 5);
            ck_assert_int_eq(sf_arena_reset(&arena), SF_OK);
            ck_assert_int_eq(sf_record_decode_borrowed(buf, n, 5, &arena, &d, &err),
                             k <= 5 ? SF_OK : SF_EFORMAT);
        }
    /* a Tensor whose shape (field 2) is written unpacked: protobuf-c reads it */
    Spirefleet__Tensor t = SPIREFLEET__TENSOR__INIT;
    const uint8_t unpacked[] = {0x0a, 2, 'u', '8', 0x10, 3, 0x10, 4, 0x1a, 0};
    ck_assert_int_eq(sf_arena_reset(&arena), SF_OK);
    ck_assert_int_eq(sf_pb_unpack_borrowed(&spirefleet__tensor__descriptor, unpacked,
                                           sizeof unpacked, &arena, &m),
                     SF_EFORMAT);
    Spirefleet__Tensor *pt = spirefleet__tensor__unpack(NULL, sizeof unpacked, unpacked);
    ck_assert_ptr_nonnull(pt);
    ck_assert_uint_eq(pt->n_shape, 2);
    spirefleet__tensor__free_unpacked(pt, NULL);
    /* the same tensor packed: borrowed, equal to protobuf-c's */
    uint32_t shape[2] = {3, 4};
    uint8_t data[12] = {1, 2, 3};
    t.dtype = "u8";
    t.n_shape = 2;
    t.shape = shape;
    t.data.len = sizeof data;
    t.data.data = data;
    uint8_t tb[64];
    size_t tn = spirefleet__tensor__pack(&t, tb);
    ck_assert_int_eq(sf_arena_reset(&arena), SF_OK);
    ck_assert_int_eq(sf_pb_unpack_borrowed(&spirefleet__tensor__descriptor, tb, tn, &arena, &m),
                     SF_OK);
    Spirefleet__Tensor *bt = (Spirefleet__Tensor *)m;
    ck_assert_str_eq(bt->dtype, "u8");
    ck_assert_uint_eq(bt->n_shape, 2);
    ck_assert_uint_eq(bt->shape[1], 4);
    ck_assert_ptr_eq(bt->data.data, tb + tn - sizeof data);
    sf_buf_free(&a);
    sf_buf_free(&b);
    sf_arena_free(&arena);
    free(buf);
    free(raw);
}
END_TEST

/* ---- the batch reader ----------------------------------------------------------- */

/* Records from two shards, in a mixed order, padded to the batch's longest
 * token and query lists: each row equals the record read on its own, zeros
 * past its length, masks marking its tokens and queries. */
START_TEST(batch_reader_rows_equal_the_records_and_pad_with_zeros) {
    synth_params p, p2;
    synth_params_default(&p);
    synth_params_default(&p2);
    p2.job_id = 8;
    p2.seed_base = 5000;
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/a.shard", tmpdir);
    snprintf(b, sizeof b, "%s/b.shard", tmpdir);
    sf_err err = {0};
    uint8_t digest[32];
    ck_assert_msg(write_shard(a, &p, 40, &small_blocks, NULL, digest, &err) == SF_OK, "%s",
                  err.msg);
    ck_assert_msg(write_shard(b, &p2, 30, &small_blocks, NULL, digest, &err) == SF_OK, "%s",
                  err.msg);
    const char *paths[2] = {a, b};
    sf_batch_reader *br;
    ck_assert_msg(sf_batch_reader_open(paths, 2, 0, &br, &err) == SF_OK, "%s", err.msg);
    ck_assert_uint_eq(sf_batch_reader_shard_count(br, 1), 30);
    ck_assert_uint_eq(sf_batch_reader_shard_count(br, 2), 0);
    void *none[SF_BATCH_NFIELDS] = {0};
    ck_assert_int_eq(sf_batch_reader_emit(br, none, SF_BATCH_NFIELDS, &err), SF_ESTATE);

    enum { B = 5 };
    const uint32_t shard[B] = {1, 0, 0, 1, 0};
    const uint64_t index[B] = {29, 0, 39, 3, 17};
    sf_batch_dims d;
    ck_assert_msg(sf_batch_reader_load(br, shard, index, B, &d, &err) == SF_OK, "%s", err.msg);
    sf_shard_reader *rd[2];
    ck_assert_int_eq(sf_shard_reader_open(a, &rd[0], &err), SF_OK);
    ck_assert_int_eq(sf_shard_reader_open(b, &rd[1], &err), SF_OK);
    uint32_t t_max = 0, q_max = 0;
    for (int k = 0; k < B; k++) {
        const Spirefleet__LabelRecord *rec;
        ck_assert_int_eq(sf_shard_reader_get(rd[shard[k]], index[k], &rec, &err), SF_OK);
        t_max =
            rec->inputs->token_type->shape[0] > t_max ? rec->inputs->token_type->shape[0] : t_max;
        q_max = rec->inputs->query->shape[0] > q_max ? rec->inputs->query->shape[0] : q_max;
    }
    ck_assert_uint_eq(d.b, B);
    ck_assert_uint_eq(d.t, t_max);
    ck_assert_uint_eq(d.q, q_max);
    ck_assert_uint_eq(d.c, 4);
    ck_assert_uint_eq(d.f, 16);
    ck_assert_uint_eq(d.g, 8);

    /* every field, each buffer filled with 0xAB first: all of it is written */
    size_t T = d.t, Q = d.q;
    uint8_t *tt = malloc(B * T), *tm = malloc(B * T), *qm = malloc(B * Q);
    uint16_t *tc = malloc(2 * B * T * 4), *qq = malloc(2 * B * Q * 2);
    float *tf = malloc(4 * B * T * 16), *pol = malloc(4 * B * Q), *vb = malloc(4 * B * 21);
    uint64_t *seed = malloc(8 * B);
    int64_t *nt = malloc(8 * B);
    memset(tt, 0xAB, B * T);
    memset(tm, 0xAB, B * T);
    memset(qm, 0xAB, B * Q);
    memset(tc, 0xAB, 2 * B * T * 4);
    memset(tf, 0xAB, 4 * B * T * 16);
    memset(pol, 0xAB, 4 * B * Q);
    void *bufs[SF_BATCH_NFIELDS] = {0};
    bufs[SF_BATCH_TOKEN_TYPE] = tt;
    bufs[SF_BATCH_TOKEN_CAT] = tc;
    bufs[SF_BATCH_TOKEN_CONT] = tf;
    bufs[SF_BATCH_TOKEN_MASK] = tm;
    bufs[SF_BATCH_QUERY] = qq;
    bufs[SF_BATCH_QUERY_MASK] = qm;
    bufs[SF_BATCH_POLICY] = pol;
    bufs[SF_BATCH_VALUE_BINS] = vb;
    bufs[SF_BATCH_GAME_SEED] = seed;
    bufs[SF_BATCH_N_TOKENS] = nt;
    ck_assert_msg(sf_batch_reader_emit(br, bufs, SF_BATCH_NFIELDS, &err) == SF_OK, "%s", err.msg);
    for (int k = 0; k < B; k++) {
        const Spirefleet__LabelRecord *rec;
        ck_assert_int_eq(sf_shard_reader_get(rd[shard[k]], index[k], &rec, &err), SF_OK);
        const Spirefleet__Inputs *in = rec->inputs;
        size_t t = in->token_type->shape[0], q = in->query->shape[0];
        ck_assert_uint_eq((uint64_t)nt[k], t);
        ck_assert_uint_eq(seed[k], rec->ids->game_seed);
        ck_assert_mem_eq(tt + k * T, in->token_type->data.data, t);
        ck_assert_mem_eq(tc + k * T * 4, in->token_cat->data.data, 8 * t);
        ck_assert_mem_eq(tf + k * T * 16, in->token_cont->data.data, 64 * t);
        ck_assert_mem_eq(qq + k * Q * 2, in->query->data.data, 4 * q);
        ck_assert_mem_eq(pol + k * Q, rec->search->policy, 4 * q);
        ck_assert_mem_eq(vb + k * 21, rec->outcome->value_bins, 4 * 21);
        for (size_t i = 0; i < T; i++) {
            ck_assert_uint_eq(tm[k * T + i], i < t);
            if (i >= t) {
                ck_assert_uint_eq(tt[k * T + i], 0);
                for (int j = 0; j < 4; j++)
                    ck_assert_uint_eq(tc[(k * T + i) * 4 + j], 0);
                for (int j = 0; j < 16; j++)
                    ck_assert(tf[(k * T + i) * 16 + j] == 0.0f);
            }
        }
        for (size_t i = 0; i < Q; i++) {
            ck_assert_uint_eq(qm[k * Q + i], i < q);
            if (i >= q)
                ck_assert(pol[k * Q + i] == 0.0f);
        }
    }
    /* seeds: shard b's records come after seed_base 5000 */
    ck_assert_uint_ge(seed[0], 5000);
    ck_assert_uint_lt(seed[1], 5000);

    /* bad items: a shard out of range, a record out of range */
    const uint32_t bad_shard[1] = {2};
    const uint64_t bad_index[1] = {30};
    ck_assert_int_eq(sf_batch_reader_load(br, bad_shard, index, 1, &d, &err), SF_EINVAL);
    ck_assert_msg(strstr(err.msg, "shard 2 of 2"), "%s", err.msg);
    ck_assert_int_eq(sf_batch_reader_load(br, shard, bad_index, 1, &d, &err), SF_ENOTFOUND);
    ck_assert_msg(strstr(err.msg, "b.shard: record 30: out of range"), "%s", err.msg);
    ck_assert_int_eq(sf_batch_reader_emit(br, bufs, SF_BATCH_NFIELDS, &err), SF_ESTATE);
    ck_assert_int_eq(sf_batch_reader_load(br, shard, index, 0, &d, &err), SF_EINVAL);

    /* the field table: one name per field */
    ck_assert_int_eq(sf_batch_field_count(), SF_BATCH_NFIELDS);
    ck_assert_str_eq(sf_batch_field_name(SF_BATCH_TOKEN_CAT), "token_cat");
    ck_assert_str_eq(sf_batch_field_dims(SF_BATCH_TOKEN_CAT), "T,C");
    ck_assert_str_eq(sf_batch_field_dtype(SF_BATCH_GAME_SEED), "<u8");
    ck_assert_ptr_null(sf_batch_field_name(SF_BATCH_NFIELDS));
    for (int i = 0; i < SF_BATCH_NFIELDS; i++)
        for (int j = i + 1; j < SF_BATCH_NFIELDS; j++)
            ck_assert_str_ne(sf_batch_field_name(i), sf_batch_field_name(j));

    free(tt), free(tm), free(qm), free(tc), free(qq), free(tf), free(pol), free(vb);
    free(seed), free(nt);
    sf_shard_reader_close(rd[0]);
    sf_shard_reader_close(rd[1]);
    sf_batch_reader_close(br);
    /* a shard that does not open: its error, nothing leaked */
    const char *missing[2] = {a, "/nonexistent/x.shard"};
    ck_assert_int_eq(sf_batch_reader_open(missing, 2, 0, &br, &err), SF_ENOTFOUND);
    ck_assert_ptr_null(br);
}
END_TEST

/* A quarantine list (shard.h "Quarantine") comes from disk, maybe copied
 * from anywhere: every malformed line is refused naming file:line, whatever
 * its length (a 300-byte name once overflowed the parser's buffer), and a
 * good list round-trips through sf_shard_quarantine_add. */
START_TEST(quarantine_lists_refuse_bad_lines_and_round_trip) {
    char dir[512], path[600], longname[301];
    snprintf(dir, sizeof dir, "%s/qlist", tmpdir);
    ck_assert_msg(mkdir(dir, 0755) == 0 || errno == EEXIST, "%s: %s", dir, strerror(errno));
    snprintf(path, sizeof path, "%s/QUARANTINE", dir);
    unlink(path);
    memset(longname, 'a', 300);
    longname[300] = 0;
    const char *dig = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    char bad[7][420];
    snprintf(bad[0], sizeof bad[0], "%s %s 0123456789abcdef 1", dig, longname);
    snprintf(bad[1], sizeof bad[1], "%s a.shard 0123456789abcdef", dig);
    snprintf(bad[2], sizeof bad[2], "%s a.shard 0123456789abcdef 1 extra", dig);
    snprintf(bad[3], sizeof bad[3], "00112233 a.shard 0123456789abcdef 1");
    snprintf(bad[4], sizeof bad[4], "%s ../a.shard 0123456789abcdef 1", dig);
    snprintf(bad[5], sizeof bad[5], "%s a.shard 0123456789abcdef0123 1", dig);
    snprintf(bad[6], sizeof bad[6], "%s a.shard 0123456789abcdef 12x", dig);
    for (int k = 0; k < 7; k++) {
        FILE *f = fopen(path, "w");
        fprintf(f, "# comment\n%s\n", bad[k]);
        fclose(f);
        sf_shard_quarantine *q = NULL;
        sf_err e = {0};
        ck_assert_int_eq(sf_shard_quarantine_load(dir, &q, &e), SF_EFORMAT);
        char want[700];
        snprintf(want, sizeof want, "%s:2: expected", path);
        ck_assert_msg(strstr(e.msg, want) != NULL, "line %d: %s", k, e.msg);
        ck_assert_ptr_null(q);
    }
    unlink(path);
    sf_shard_quarantine_entry in = {0};
    for (int i = 0; i < 32; i++)
        in.digest[i] = (uint8_t)(i * 7);
    snprintf(in.name, sizeof in.name, "run-job000007.shard");
    snprintf(in.key_id, sizeof in.key_id, "0123456789abcdef");
    in.when_unix = 1764600000;
    sf_err e = {0};
    ck_assert_int_eq(sf_shard_quarantine_add(dir, &in, &e), SF_OK);
    ck_assert_int_eq(sf_shard_quarantine_add(dir, &in, &e), SF_OK); /* listed once */
    sf_shard_quarantine *q;
    ck_assert_int_eq(sf_shard_quarantine_load(dir, &q, &e), SF_OK);
    ck_assert_uint_eq(sf_shard_quarantine_count(q), 1);
    const sf_shard_quarantine_entry *out = sf_shard_quarantine_find(q, in.digest, NULL);
    ck_assert_ptr_nonnull(out);
    ck_assert_str_eq(out->name, in.name);
    ck_assert_str_eq(out->key_id, in.key_id);
    ck_assert_int_eq(out->when_unix, in.when_unix);
    sf_shard_quarantine_free(q);
}
END_TEST

/* Strings protobuf parses as proto3 `string` must be UTF-8 (Python's
 * protobuf refuses the message otherwise): a manifest string that is not,
 * top-level or in a submessage, fails verify naming the field; the writer
 * refuses a record with one; a valid multi-byte string passes. */
START_TEST(strings_that_are_not_utf8_are_refused) {
    static const struct {
        const char *s;
        int ok;
    } utf8[] = {
        {"plain", 1},
        {"W\xc3\xb6rker \xe2\x9c\x93 \xf0\x9d\x84\x9e", 1},
        {"\xff", 0},
        {"\xc3\x28", 0},         /* bad continuation */
        {"\xc0\x80", 0},         /* overlong NUL */
        {"\xe2\x82", 0},         /* cut short */
        {"\xed\xa0\x80", 0},     /* a UTF-16 surrogate */
        {"\xf4\x90\x80\x80", 0}, /* above U+10FFFF */
        /* past the eight-bytes-at-a-time ASCII run, and after it */
        {"0123456789abcdef0123456789abcdef\xc3\xb6", 1},
        {"0123456789abcdef\xff", 0},
        {"01234567\xc3\xb6"
         "01234567\xe2\x82",
         0},
        {"01234567\xc3\xb6"
         "0123456789abcdef",
         1},
        {"0123456\xc3"
         "89abcdef",
         0}, /* a lead byte inside the first eight */
    };
    for (size_t k = 0; k < sizeof utf8 / sizeof utf8[0]; k++)
        ck_assert_msg(sf_utf8_valid((const uint8_t *)utf8[k].s, strlen(utf8[k].s)) == utf8[k].ok,
                      "case %zu", k);
    synth_params p = default_params();
    sf_err err = {0};
    uint8_t d[32];
    sf_shard_info info = info_of(&p);
    info.worker_id = utf8[1].s;
    ck_assert_int_eq(write_shard_as(path_in("good.shard"), &info, &p, 3, NULL, NULL, d, &err),
                     SF_OK);
    ck_assert_msg(sf_shard_verify(path_in("good.shard"), NULL, &err) == SF_OK, "%s", err.msg);
    info.worker_id = "worker-\xff";
    ck_assert_int_eq(write_shard_as(path_in("w.shard"), &info, &p, 3, NULL, NULL, d, &err), SF_OK);
    ck_assert_int_eq(sf_shard_verify(path_in("w.shard"), NULL, &err), SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "manifest: worker_id is not valid UTF-8"), "%s", err.msg);
    sf_shard_reader *r = NULL;
    ck_assert_int_eq(sf_shard_reader_open(path_in("w.shard"), &r, &err), SF_ECORRUPT);
    ck_assert_ptr_null(r);
    synth_info(&p, &info);
    info.build_id = "\xc0\x80";
    ck_assert_int_eq(write_shard_as(path_in("b.shard"), &info, &p, 3, NULL, NULL, d, &err), SF_OK);
    ck_assert_int_eq(sf_shard_verify(path_in("b.shard"), NULL, &err), SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "manifest: build_id is not valid UTF-8"), "%s", err.msg);
    Spirefleet__Counter c0 = SPIREFLEET__COUNTER__INIT, c1 = SPIREFLEET__COUNTER__INIT;
    c0.name = "fine";
    c1.name = "bad\xed\xa0\x80";
    Spirefleet__Counter *cs[] = {&c0, &c1};
    Spirefleet__JobStats stats = SPIREFLEET__JOB_STATS__INIT;
    stats.n_counters = 2;
    stats.counters = cs;
    ck_assert_int_eq(write_shard(path_in("s.shard"), &p, 3, NULL, &stats, d, &err), SF_OK);
    ck_assert_int_eq(sf_shard_verify(path_in("s.shard"), NULL, &err), SF_ECORRUPT);
    ck_assert_msg(strstr(err.msg, "manifest: stats.counters[1].name is not valid UTF-8"), "%s",
                  err.msg);
    synth_info(&p, &info);
    sf_shard_writer *w = NULL;
    ck_assert_int_eq(sf_shard_writer_open(path_in("r.shard"), &info, NULL, &w, &err), SF_OK);
    synth_record *s = synth_at(&p, 0);
    s->rec.ids->encounter = "Jaw \xffWorm";
    append_refused(w, &s->rec, SF_EINVAL, "ids.encounter: not valid UTF-8");
    free(s);
    sf_shard_writer_abort(w);
}
END_TEST

#include "test-shard.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("shard", "shard", 300, make_tmpdir, remove_tmpdir)
