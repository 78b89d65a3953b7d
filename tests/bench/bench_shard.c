/* bench_shard.c — shard write and read speed, compression and file size.
 *
 *   bench-shard [RECORDS]     (default 20000; meson: `make bench`)
 *
 * Records are synthetic with the tokenizer's shapes (tests/support/
 * label_synth.h): "typical" positions, and "dense" ones whose continuous
 * features are all set (over 2 KB compressed, the overflow-page case). 1000
 * distinct records are generated first and appended in turn, so timing
 * covers only the shard code. Each timed figure is the median of 3 runs
 * (the digest-thread comparison: of 16 pairs); MB/s counts uncompressed
 * record bytes. Prints one JSON line per figure, then a human line. With
 * SF_BENCH_SHARD_WRITE_ONLY set it stops after the write and read figures
 * of both kinds. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "bench.h"
#include "common/sha256.h"
#include "label_synth.h"
#include "shard/batch.h"
#include "shard/internal.h"

#define RUNS 3
#define POOL 1000

static void emit(const char *name, double value, const char *unit, int n, const char *human) {
    printf("{\"bench\":\"shard.%s\",\"value\":%.6g,\"unit\":\"%s\",\"n\":%d,\"median\":%.6g}\n",
           name, value, unit, n, value);
    printf("  %s: %.4g %s  (%s)\n", name, value, unit, human);
}

static void die(const sf_err *err) {
    fprintf(stderr, "bench-shard: %s\n", err->msg);
    exit(1);
}

/* Write n records cycling through pool into a new shard at path (an old
 * file there is removed first); exits on an error. */
static void write_shard(const char *path, const sf_shard_info *info,
                        const sf_shard_writer_opts *opts, const synth_record *pool, uint64_t n) {
    sf_shard_writer *w;
    sf_err err = {0};
    unlink(path);
    if (sf_shard_writer_open(path, info, opts, &w, &err) < 0)
        die(&err);
    for (uint64_t i = 0; i < n; i++)
        if (sf_shard_writer_append(w, &pool[i % POOL].rec, &err) < 0)
            die(&err);
    if (sf_shard_writer_seal(w, NULL, NULL, &err) < 0)
        die(&err);
}

typedef struct result {
    double write_s, seq_s, rand_s;
    uint64_t raw, payload, file;
} result;

static result run_once(const char *path, synth_record *pool, const synth_params *p, uint64_t n,
                       int level, size_t block_bytes, uint32_t format, int keep, int hash_inline) {
    result res = {0};
    sf_shard_info info;
    synth_info(p, &info);
    sf_shard_writer_opts opts = {.zstd_level = level,
                                 .block_bytes = block_bytes,
                                 .format_version = format,
                                 .hash_inline = hash_inline};
    sf_err err = {0};
    uint64_t t0 = sf_now_ns();
    write_shard(path, &info, &opts, pool, n);
    res.write_s = (double)(sf_now_ns() - t0) / 1e9;

    sf_shard_reader *r;
    if (sf_shard_reader_open(path, &r, &err) < 0)
        die(&err);
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    res.raw = m->raw_bytes;
    res.payload = m->payload_bytes;
    res.file = sf_shard_reader_file_bytes(r);
    const Spirefleet__LabelRecord *rec;
    t0 = sf_now_ns();
    for (uint64_t i = 0; i < n; i++)
        if (sf_shard_reader_get(r, i, &rec, &err) < 0)
            die(&err);
    res.seq_s = (double)(sf_now_ns() - t0) / 1e9;
    /* Random order: a full-period LCG over [0, n) would need n a power of
     * two; a multiplicative step coprime with n visits every index once. */
    uint64_t step = 7919;
    while (n % step == 0)
        step += 2;
    t0 = sf_now_ns();
    for (uint64_t k = 0; k < n; k++)
        if (sf_shard_reader_get(r, (k * step + 17) % n, &rec, &err) < 0)
            die(&err);
    res.rand_s = (double)(sf_now_ns() - t0) / 1e9;
    sf_shard_reader_close(r);
    if (!keep)
        unlink(path);
    return res;
}

/* POOL distinct records of the default kind, dense or not (its params in
 * *p), to cycle through (malloc'd; exits when out of memory). */
static synth_record *make_pool(synth_params *p, int dense) {
    synth_params_default(p);
    p->dense = dense;
    synth_record *pool = malloc(sizeof *pool * POOL);
    if (!pool)
        exit(1);
    for (uint64_t i = 0; i < POOL; i++)
        synth_fill(&pool[i], p, i);
    return pool;
}

/* The content digest's own cost: the seconds to hash n records of the pool
 * (`framed`: u64 little-endian length, then the packed bytes) as the writer
 * does (sf_shard_digest_add over common/sha256.h, libcrypto) or, for
 * comparison, with libsodium's SHA-256, which the writer used before. */
static double hash_seconds(uint8_t *const *framed, const size_t *len, uint64_t n, int sodium) {
    crypto_hash_sha256_state st;
    sf_sha256_ctx *h;
    sf_err err = {0};
    if (sf_sha256_new(&h, &err) < 0)
        die(&err);
    uint8_t out[32];
    uint64_t t0 = sf_now_ns();
    crypto_hash_sha256_init(&st);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *p = framed[i % POOL];
        if (sodium) {
            crypto_hash_sha256_update(&st, p, 8);
            crypto_hash_sha256_update(&st, p + 8, len[i % POOL]);
        } else {
            sf_shard_digest_add(h, p + 8, len[i % POOL]);
        }
    }
    if (sodium)
        crypto_hash_sha256_final(&st, out);
    else if (sf_sha256_final(h, out, &err) < 0)
        die(&err);
    double s = (double)(sf_now_ns() - t0) / 1e9;
    sf_sha256_free(h);
    return s;
}

static void bench(const char *tag, int dense, uint64_t n, const char *dir) {
    synth_params p;
    synth_record *pool = make_pool(&p, dense);
    char path[512];
    snprintf(path, sizeof path, "%s/bench-%s.shard", dir, tag);
    double w[RUNS], s[RUNS], rr[RUNS];
    result res = {0};
    for (int k = 0; k < RUNS; k++) {
        res = run_once(path, pool, &p, n, SF_SHARD_DEFAULT_LEVEL, 0, 0, 0, 0);
        w[k] = (double)n / res.write_s;
        s[k] = (double)n / res.seq_s;
        rr[k] = (double)n / res.rand_s;
    }
    uint8_t *packed[POOL];
    size_t plen[POOL];
    for (int i = 0; i < POOL; i++) {
        plen[i] = spirefleet__label_record__get_packed_size(&pool[i].rec);
        if (!(packed[i] = malloc(8 + plen[i])))
            exit(1);
        for (int k = 0; k < 8; k++)
            packed[i][k] = (uint8_t)((uint64_t)plen[i] >> (8 * k));
        spirefleet__label_record__pack(&pool[i].rec, packed[i] + 8);
    }
    double hs[RUNS], hso[RUNS];
    for (int k = 0; k < RUNS; k++) {
        hs[k] = hash_seconds(packed, plen, n, 0);
        hso[k] = hash_seconds(packed, plen, n, 1);
    }
    double hash_s = median(hs, RUNS), sodium_s = median(hso, RUNS);
    /* The writer's default (the digest on its helper thread) against the
     * digest inline, in PAIRS pairs of writes of a quarter of n (in turn
     * A-B and B-A), each pair with the digest alone timed over the same
     * records: per pair, inline / default seconds, the digest's share of
     * the inline write, and its visible share of the default write, the
     * time it adds beyond the inline write less its hashing; medians. */
    enum { PAIRS = 16 };
    uint64_t m = n / 4 > 0 ? n / 4 : 1;
    double speed[PAIRS], share_inl[PAIRS], share_vis[PAIRS], inline_rps[PAIRS];
    sf_shard_info info;
    synth_info(&p, &info);
    for (int k = 0; k < PAIRS; k++) {
        double t[2];
        for (int j = 0; j < 2; j++) {
            int inl = (j + k) % 2;
            sf_shard_writer_opts o = {.hash_inline = inl};
            uint64_t t0 = sf_now_ns();
            write_shard(path, &info, &o, pool, m);
            t[inl] = (double)(sf_now_ns() - t0) / 1e9;
        }
        double h = hash_seconds(packed, plen, m, 0);
        speed[k] = t[1] / t[0];
        share_inl[k] = h / t[1];
        share_vis[k] = (t[0] - (t[1] - h)) / t[0];
        inline_rps[k] = (double)m / t[1];
    }
    unlink(path);
    for (int i = 0; i < POOL; i++)
        free(packed[i]);
    double inline_s = (double)n / median(inline_rps, PAIRS);
    /* the same inline write with libsodium's hash in place of libcrypto's */
    double write_sodium_s = inline_s - hash_s + sodium_s;
    double mb = (double)res.raw / (double)n / 1e6; /* MB per record */
    char name[64], human[160];
    snprintf(human, sizeof human, "%s, SHA-256 of the records' bytes, libcrypto (the writer's)",
             tag);
    snprintf(name, sizeof name, "%s.digest_mb_per_s", tag);
    emit(name, (double)n * mb / hash_s, "MB/s", RUNS, human);
    snprintf(human, sizeof human, "%s, SHA-256 of the records' bytes, libsodium", tag);
    snprintf(name, sizeof name, "%s.digest_libsodium_mb_per_s", tag);
    emit(name, (double)n * mb / sodium_s, "MB/s", RUNS, human);
    snprintf(human, sizeof human,
             "%s, content digest seconds / write seconds, the digest on the appending thread", tag);
    snprintf(name, sizeof name, "%s.digest_share_of_write_inline", tag);
    emit(name, median(share_inl, PAIRS), "fraction", PAIRS, human);
    snprintf(human, sizeof human,
             "%s, the digest's visible share: (write - (inline write - digest)) / write, the "
             "digest on the helper thread (the default)",
             tag);
    snprintf(name, sizeof name, "%s.digest_share_of_write", tag);
    emit(name, median(share_vis, PAIRS), "fraction", PAIRS, human);
    snprintf(human, sizeof human, "%s, write records/s: helper-thread digest / inline digest", tag);
    snprintf(name, sizeof name, "%s.write_hash_thread_speedup", tag);
    emit(name, median(speed, PAIRS), "x", PAIRS, human);
    snprintf(human, sizeof human, "%s, the same inline with libsodium's SHA-256 in the writer",
             tag);
    snprintf(name, sizeof name, "%s.digest_share_of_write_libsodium", tag);
    emit(name, sodium_s / write_sodium_s, "fraction", RUNS, human);
    double wm = median(w, RUNS), sm = median(s, RUNS), rm = median(rr, RUNS);
    snprintf(human, sizeof human, "%s, %" PRIu64 " records, append+seal, zstd %d", tag, n,
             SF_SHARD_DEFAULT_LEVEL);
    snprintf(name, sizeof name, "%s.write_records_per_s", tag);
    emit(name, wm, "records/s", RUNS, human);
    snprintf(name, sizeof name, "%s.write_mb_per_s", tag);
    emit(name, wm * mb, "MB/s", RUNS, human);
    snprintf(human, sizeof human, "%s, %" PRIu64 " records, append+seal, the digest inline", tag,
             m);
    snprintf(name, sizeof name, "%s.write_records_per_s_hash_inline", tag);
    emit(name, median(inline_rps, PAIRS), "records/s", PAIRS, human);
    snprintf(human, sizeof human, "%s, get(i) in index order, decoded", tag);
    snprintf(name, sizeof name, "%s.read_seq_records_per_s", tag);
    emit(name, sm, "records/s", RUNS, human);
    snprintf(name, sizeof name, "%s.read_seq_mb_per_s", tag);
    emit(name, sm * mb, "MB/s", RUNS, human);
    snprintf(human, sizeof human, "%s, get(i) in a scattered order, decoded", tag);
    snprintf(name, sizeof name, "%s.read_random_records_per_s", tag);
    emit(name, rm, "records/s", RUNS, human);
    snprintf(name, sizeof name, "%s.read_random_mb_per_s", tag);
    emit(name, rm * mb, "MB/s", RUNS, human);
    snprintf(human, sizeof human, "%s, %.0f B raw -> %.0f B compressed per record", tag,
             (double)res.raw / n, (double)res.payload / n);
    snprintf(name, sizeof name, "%s.compression_ratio", tag);
    emit(name, (double)res.raw / res.payload, "x", 1, human);
    snprintf(human, sizeof human, "%s, file %" PRIu64 " B for %" PRIu64 " B of frames (limit 1.15)",
             tag, res.file, res.payload);
    snprintf(name, sizeof name, "%s.file_over_payload", tag);
    emit(name, (double)res.file / res.payload, "x", 1, human);
    /* The layout the blocks avoid: one record per LMDB value (a block closes
     * after every record), docs/format.md "blocks". */
    result naive = run_once(path, pool, &p, n, SF_SHARD_DEFAULT_LEVEL, 1, 1, 0, 0);
    snprintf(human, sizeof human, "%s, one record per LMDB value: file %" PRIu64 " B", tag,
             naive.file);
    snprintf(name, sizeof name, "%s.one_record_per_value_file_over_payload", tag);
    emit(name, (double)naive.file / naive.payload, "x", 1, human);
    /* Format 1 (a zstd frame per record) beside format 2 in the same run:
     * what grouping 16 records per frame gains in order and costs a
     * scattered single-record read (docs/format.md). */
    double s1[RUNS], r1[RUNS];
    result v1 = {0};
    for (int k = 0; k < RUNS; k++) {
        v1 = run_once(path, pool, &p, n, SF_SHARD_DEFAULT_LEVEL, 0, 1, 0, 0);
        s1[k] = (double)n / v1.seq_s;
        r1[k] = (double)n / v1.rand_s;
    }
    snprintf(human, sizeof human, "%s, format 1: get(i) in index order, decoded", tag);
    snprintf(name, sizeof name, "%s.format1_read_seq_records_per_s", tag);
    emit(name, median(s1, RUNS), "records/s", RUNS, human);
    snprintf(human, sizeof human, "%s, format 1: get(i) in a scattered order", tag);
    snprintf(name, sizeof name, "%s.format1_read_random_records_per_s", tag);
    emit(name, median(r1, RUNS), "records/s", RUNS, human);
    snprintf(human, sizeof human, "%s, in index order: format 2 / format 1", tag);
    snprintf(name, sizeof name, "%s.format2_over_format1_seq", tag);
    emit(name, sm / median(s1, RUNS), "x", RUNS, human);
    snprintf(human, sizeof human, "%s, scattered order: format 2 / format 1", tag);
    snprintf(name, sizeof name, "%s.format2_over_format1_random", tag);
    emit(name, rm / median(r1, RUNS), "x", RUNS, human);
    snprintf(human, sizeof human, "%s, format 1: %.0f B compressed per record", tag,
             (double)v1.payload / n);
    snprintf(name, sizeof name, "%s.format1_compression_ratio", tag);
    emit(name, (double)v1.raw / v1.payload, "x", 1, human);
    free(pool);
}

/* Records per zstd frame (format 2's frame_records, G): typical records
 * written with G = 1..256 and read back in index order, undecoded
 * (get_raw: the zstd work alone) and decoded (get), median of 3 passes;
 * and the compression each G gives. What SF_SHARD_DEFAULT_FRAME_RECORDS
 * was chosen from (docs/benchmarks.md "Records per zstd frame"). */
static void bench_frames(const char *dir, uint64_t n) {
    synth_params p;
    synth_record *pool = make_pool(&p, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/bench-frames.shard", dir);
    static const uint32_t gs[] = {1, 4, 8, 16, 32, 64, 256};
    sf_shard_info info;
    synth_info(&p, &info);
    for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++) {
        sf_shard_writer_opts opts = {.frame_records = gs[gi]};
        sf_err err = {0};
        write_shard(path, &info, &opts, pool, n);
        double raw_s[RUNS], get_s[RUNS];
        sf_shard_reader *r;
        uint64_t raw = 0, payload = 0;
        for (int k = 0; k < RUNS; k++) {
            if (sf_shard_reader_open(path, &r, &err) < 0)
                die(&err);
            raw = sf_shard_reader_manifest(r)->raw_bytes;
            payload = sf_shard_reader_manifest(r)->payload_bytes;
            uint64_t t0 = sf_now_ns();
            for (uint64_t i = 0; i < n; i++) {
                const uint8_t *b;
                size_t len;
                if (sf_shard_reader_get_raw(r, i, &b, &len, NULL, &err) < 0)
                    die(&err);
            }
            raw_s[k] = (double)(sf_now_ns() - t0) / 1e9;
            sf_shard_reader_close(r);
            if (sf_shard_reader_open(path, &r, &err) < 0)
                die(&err);
            t0 = sf_now_ns();
            for (uint64_t i = 0; i < n; i++) {
                const Spirefleet__LabelRecord *rec;
                if (sf_shard_reader_get(r, i, &rec, &err) < 0)
                    die(&err);
            }
            get_s[k] = (double)(sf_now_ns() - t0) / 1e9;
            sf_shard_reader_close(r);
        }
        char name[64], human[160];
        snprintf(name, sizeof name, "typical.g%u.zstd_us_per_record", gs[gi]);
        snprintf(human, sizeof human,
                 "typical, %u records a frame: get_raw in index order (zstd alone)", gs[gi]);
        emit(name, median(raw_s, RUNS) / (double)n * 1e6, "us/record", RUNS, human);
        snprintf(name, sizeof name, "typical.g%u.read_seq_records_per_s", gs[gi]);
        snprintf(human, sizeof human, "typical, %u records a frame: get in index order", gs[gi]);
        emit(name, (double)n / median(get_s, RUNS), "records/s", RUNS, human);
        snprintf(name, sizeof name, "typical.g%u.compression_ratio", gs[gi]);
        snprintf(human, sizeof human, "typical, %u records a frame: raw / compressed", gs[gi]);
        emit(name, (double)raw / (double)payload, "x", 1, human);
    }
    unlink(path);
    free(pool);
}

/* Bytes of batch field i for the loaded dims (the library's table). */
static size_t field_bytes(int i, const sf_batch_dims *d) {
    const char *t = sf_batch_field_dtype(i), *dims = sf_batch_field_dims(i);
    size_t n = t[strlen(t) - 1] == '?' ? 1 : (size_t)(t[strlen(t) - 1] - '0');
    n *= d->b;
    for (const char *c = dims; *c; c++) {
        if (*c == ',')
            continue;
        if (*c >= '0' && *c <= '9') {
            n *= strtoul(c, (char **)&c, 10);
            c--;
            continue;
        }
        n *= *c == 'T' ? d->t : *c == 'Q' ? d->q : *c == 'C' ? d->c : *c == 'F' ? d->f : d->g;
    }
    return n;
}

/* The C batch reader alone (no Python): batches of 1,024 loaded in index
 * order (each frame decoded once) and emitted into every field's buffer;
 * records/s, median of 3 passes over the shard. */
static void bench_batch(const char *dir, uint64_t n) {
    synth_params p;
    synth_record *pool = make_pool(&p, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/bench-batch.shard", dir);
    (void)run_once(path, pool, &p, n, SF_SHARD_DEFAULT_LEVEL, 0, 0, 1, 0);
    free(pool);
    sf_batch_reader *br;
    sf_err err = {0};
    const char *paths[1] = {path};
    if (sf_batch_reader_open(paths, 1, 0, &br, &err) < 0)
        die(&err);
    enum { B = 1024 };
    static uint32_t shard[B];
    static uint64_t rec[B];
    void *bufs[SF_BATCH_NFIELDS] = {0};
    size_t cap[SF_BATCH_NFIELDS] = {0};
    double rate[RUNS];
    for (int k = 0; k < RUNS; k++) {
        uint64_t t0 = sf_now_ns();
        for (uint64_t lo = 0; lo < n; lo += B) {
            size_t m = n - lo < B ? (size_t)(n - lo) : B;
            for (size_t j = 0; j < m; j++)
                rec[j] = lo + j;
            sf_batch_dims d;
            if (sf_batch_reader_load(br, shard, rec, m, &d, &err) < 0)
                die(&err);
            for (int i = 0; i < SF_BATCH_NFIELDS; i++) {
                size_t need = field_bytes(i, &d);
                if (need > cap[i]) {
                    free(bufs[i]);
                    if (!(bufs[i] = malloc(need))) {
                        fprintf(stderr, "bench-shard: %zu bytes for %s: out of memory\n", need,
                                sf_batch_field_name(i));
                        exit(1);
                    }
                    cap[i] = need;
                }
            }
            if (sf_batch_reader_emit(br, bufs, SF_BATCH_NFIELDS, &err) < 0)
                die(&err);
        }
        rate[k] = (double)n / ((double)(sf_now_ns() - t0) / 1e9);
    }
    emit("batch_load_emit_records_per_s", median(rate, RUNS), "records/s", RUNS,
         "C batch reader, typical records, batches of 1024 in index order, every field emitted");
    for (int i = 0; i < SF_BATCH_NFIELDS; i++)
        free(bufs[i]);
    sf_batch_reader_close(br);
    unlink(path);
}

/* One record's decode and format checks, the batch reader's way (tensor
 * bytes borrowed from the decompressed frame, sf_record_decode_borrowed)
 * against protobuf-c's unpack into the same arena (sf_record_decode), over
 * the same packed records, the two timed alternately; records/s of each,
 * median of RUNS, and their ratio. */
static void bench_decode(const char *kind, int dense) {
    synth_params p;
    synth_record *pool = make_pool(&p, dense);
    uint8_t **raw = malloc(POOL * sizeof *raw);
    size_t *len = malloc(POOL * sizeof *len);
    if (!raw || !len)
        exit(1);
    for (size_t k = 0; k < POOL; k++) {
        len[k] = spirefleet__label_record__get_packed_size(&pool[k].rec);
        if (!(raw[k] = malloc(len[k])))
            exit(1);
        spirefleet__label_record__pack(&pool[k].rec, raw[k]);
    }
    free(pool);
    sf_arena arena;
    sf_arena_init(&arena, NULL);
    sf_err err = {0};
    enum { REPS = 20 };
    double rate[2][RUNS];
    for (int k = 0; k < RUNS; k++) {
        for (int way = 0; way < 2; way++) {
            uint64_t t0 = sf_now_ns();
            for (int rep = 0; rep < REPS; rep++)
                for (size_t i = 0; i < POOL; i++) {
                    Spirefleet__LabelRecord *rec;
                    if (sf_arena_reset(&arena) < 0) {
                        fprintf(stderr, "bench-shard: out of memory\n");
                        exit(1);
                    }
                    int rc = way ? sf_record_decode_borrowed(raw[i], len[i], i, &arena, &rec, &err)
                                 : sf_record_decode(raw[i], len[i], i, &arena.pb, &rec, &err);
                    if (rc < 0)
                        die(&err);
                }
            rate[way][k] = (double)(REPS * POOL) / ((double)(sf_now_ns() - t0) / 1e9);
        }
    }
    double pbc = median(rate[0], RUNS), borrowed = median(rate[1], RUNS);
    char name[64], human[160];
    snprintf(name, sizeof name, "%s.decode_protobuf_c_records_per_s", kind);
    snprintf(human, sizeof human, "%s: protobuf-c unpack into an arena + format checks", kind);
    emit(name, pbc, "records/s", RUNS, human);
    snprintf(name, sizeof name, "%s.decode_borrowed_records_per_s", kind);
    snprintf(human, sizeof human, "%s: the batch reader's borrowing decode + format checks", kind);
    emit(name, borrowed, "records/s", RUNS, human);
    snprintf(name, sizeof name, "%s.decode_borrowed_over_protobuf_c", kind);
    snprintf(human, sizeof human, "%s: borrowing decode / protobuf-c, same records, same run",
             kind);
    emit(name, borrowed / pbc, "x", RUNS, human);
    sf_arena_free(&arena);
    for (size_t k = 0; k < POOL; k++)
        free(raw[k]);
    free(raw);
    free(len);
}

int main(int argc, char **argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000;
    if (n == 0)
        n = 20000;
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    bench("typical", 0, n, dir);
    bench("dense", 1, n / 2, dir);
    if (getenv("SF_BENCH_SHARD_WRITE_ONLY"))
        return 0;
    bench_frames(dir, n);
    bench_decode("typical", 0);
    bench_decode("dense", 1);
    bench_batch(dir, n);
    return 0;
}
