/* verify.c — checking a shard byte by byte and record by record.
 *
 * Pass 1 compares the CRC of every page with the seal trailer, without LMDB,
 * so a change anywhere in the file is found. When a page differs, pass 2
 * names it: a structure page, a record's compressed bytes (that record is
 * decoded to confirm), a block header, or bytes outside every record (an
 * overflow page header or the padding after a block). With every page
 * intact, pass 3 decodes every record, checks it against the manifest, and
 * recomputes the content digest. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/io.h"
#include "shard/internal.h"

static bool is_struct_page(const sf_trailer *t, uint64_t pg) {
    size_t lo = 0, hi = t->nstruct;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->struct_page[mid] < pg)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->nstruct && t->struct_page[lo] == pg;
}

/* Pass 1: every page's CRC. Sets *bad to the first mismatch (or -1) and
 * *struct_bad when any structure page mismatches. */
static int scan_pages(int fd, const char *path, const sf_trailer *t, int64_t *bad, bool *struct_bad,
                      sf_err *err) {
    *bad = -1;
    *struct_bad = false;
    size_t chunk_pages = (1u << 20) / t->page_size;
    uint8_t *buf = malloc(chunk_pages * t->page_size);
    if (!buf)
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
    int rc = SF_OK;
    for (uint64_t pg = 0; pg < t->npages; pg += chunk_pages) {
        uint64_t n = t->npages - pg < chunk_pages ? t->npages - pg : chunk_pages;
        int e = sf_pread_full(fd, buf, (size_t)n * t->page_size, pg * t->page_size);
        if (e < 0) {
            rc = sf_err_set(err, SF_EIO, "%s: reading page %llu: %s", path, (unsigned long long)pg,
                            sf_io_reason(e));
            goto out;
        }
        for (uint64_t k = 0; k < n; k++) {
            if (sf_crc32(buf + k * t->page_size, t->page_size) == t->page_crc[pg + k])
                continue;
            if (*bad < 0)
                *bad = (int64_t)(pg + k);
            if (is_struct_page(t, pg + k))
                *struct_bad = true;
        }
    }
out:
    free(buf);
    return rc;
}

/* Pass 2: which record (if any) owns the damaged page `bad`. */
static int name_damage(const char *path, const sf_trailer *t, uint64_t bad,
                       sf_shard_verify_report *rep, sf_err *err) {
    uint64_t lo = bad * t->page_size, hi = lo + t->page_size; /* damaged bytes */
    sf_shard_reader *r = NULL;
    sf_err inner = {0};
    int rc = sf_shard_reader_open_any(path, &r, &inner);
    if (rc < 0) /* the manifest's pages are structure pages, so this is rare */
        return sf_err_set(err, SF_ECORRUPT, "%s: page %llu: CRC mismatch (%s)", path,
                          (unsigned long long)bad, inner.msg);
    if (sf_shard_reader_count(r) > 0 &&
        sf_shard_reader_block_at(r, 0, &(uint64_t){0}, &(size_t){0}, &(sf_block_view){0}, &inner) ==
            SF_EUNSUPPORTED) {
        sf_shard_reader_close(r);
        return sf_err_set(err, SF_ECORRUPT, "%s: page %llu: CRC mismatch (%s)", path,
                          (unsigned long long)bad, inner.msg);
    }
    uint64_t count = sf_shard_reader_count(r);
    for (uint64_t i = 0; i < count;) {
        uint64_t voff;
        size_t vlen;
        sf_block_view b;
        rc = sf_shard_reader_block_at(r, i, &voff, &vlen, &b, &inner);
        if (rc < 0) { /* a damaged block header on this page */
            rep->bad_record = (int64_t)i;
            sf_shard_reader_close(r);
            return sf_err_set(err, SF_ECORRUPT, "%s: page %llu: CRC mismatch; %s", path,
                              (unsigned long long)bad, inner.msg);
        }
        uint64_t vstart = voff >= SF_LMDB_PAGEHDR ? voff - SF_LMDB_PAGEHDR : voff;
        if (hi > vstart && lo < voff + vlen) {
            uint64_t frames_off = voff + b.header_len;
            int64_t ra = -1, rb = -1;
            for (uint32_t j = 0; j < b.m; j++) {
                sf_frame_ref f;
                sf_block_frame(&b, j, &f);
                uint64_t fs = frames_off + (uint64_t)(f.z - b.frames);
                uint64_t fe = fs + f.zlen;
                if (!(hi > fs && lo < fe))
                    continue;
                if (ra < 0)
                    ra = (int64_t)f.first;
                rb = (int64_t)(f.first + f.n - 1);
                /* the frame's first record decodes the whole frame */
                const Spirefleet__LabelRecord *rec;
                rc = sf_shard_reader_get(r, f.first, &rec, &inner);
                if (rc < 0) {
                    rep->bad_record = (int64_t)f.first;
                    sf_shard_reader_close(r);
                    return sf_err_set(err, SF_ECORRUPT, "%s: page %llu: CRC mismatch; %s", path,
                                      (unsigned long long)bad, inner.msg);
                }
            }
            sf_shard_reader_close(r);
            if (ra >= 0) {
                /* zstd's checksum covers what a frame decodes to; a few bits
                 * (padding, unused header bits) change nothing it reads. */
                rep->bad_record = ra;
                return sf_err_set(err, SF_ECORRUPT,
                                  "%s: page %llu: CRC mismatch in the bytes of records %lld..%lld "
                                  "(they still decode: the change is in bits zstd does not "
                                  "read)",
                                  path, (unsigned long long)bad, (long long)ra, (long long)rb);
            }
            return sf_err_set(err, SF_ECORRUPT,
                              "%s: page %llu: CRC mismatch in the block of records %llu..%llu, "
                              "outside every record's bytes (page header or padding)",
                              path, (unsigned long long)bad, (unsigned long long)b.first,
                              (unsigned long long)(b.first + b.n - 1));
        }
        i = b.first + b.n;
    }
    sf_shard_reader_close(r);
    return sf_err_set(err, SF_ECORRUPT, "%s: page %llu: CRC mismatch in a page no block uses", path,
                      (unsigned long long)bad);
}

/* Pass 3: every record decoded and checked against the manifest. */
int sf_shard_name(const char *run_id, uint64_t job_id, char *out, size_t cap) {
    return snprintf(out, cap, "%s-job%06llu%s", run_id, (unsigned long long)job_id,
                    SF_SHARD_SUFFIX);
}

int sf_shard_check_name(const char *path, const char *run_id, uint64_t job_id, sf_err *err) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base), sl = strlen(SF_SHARD_SUFFIX);
    if (n <= sl || strcmp(base + n - sl, SF_SHARD_SUFFIX))
        return SF_OK;
    /* "<run>-job<digits>" then optionally "-a<digits>", before the suffix */
    size_t end = n - sl, k = end;
    while (k > 0 && isdigit((unsigned char)base[k - 1]))
        k--;
    if (k < end && k >= 2 && base[k - 1] == 'a' && base[k - 2] == '-') {
        end = k - 2;
        for (k = end; k > 0 && isdigit((unsigned char)base[k - 1]);)
            k--;
    }
    if (k == end || k < 5 || memcmp(base + k - 4, "-job", 4))
        return SF_OK; /* not a stored shard's name */
    size_t run_len = k - 4;
    unsigned long long job = strtoull(base + k, NULL, 10);
    if (run_len != strlen(run_id) || memcmp(base, run_id, run_len) || job != job_id)
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: the name says run '%.*s' job %llu, the manifest run '%s' job %llu "
                          "(a renamed or swapped shard)",
                          path, (int)run_len, base, job, run_id, (unsigned long long)job_id);
    return SF_OK;
}

int sf_shard_check_canonical_name(const char *path, const char *run_id, uint64_t job_id,
                                  sf_err *err) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char want[SF_SHARD_NAME_MAX + 1];
    int n = sf_shard_name(run_id, job_id, want, sizeof want);
    if (n >= 0 && (size_t)n < sizeof want && strcmp(base, want) == 0)
        return SF_OK;
    return sf_err_set(err, SF_ECORRUPT,
                      "%s: not the canonical name of its shard: expected '%s' (run '%s', job "
                      "%llu); a directory holds each shard only under that name",
                      path, want, run_id, (unsigned long long)job_id);
}

/* What a record's key and fight are checked against: the previous record's
 * key and turn, and the first record of the current fight (its index,
 * outcome and encounter). O(1), whatever the record count. */
typedef struct record_order {
    uint64_t seed, prev_index, fight_first;
    uint32_t fight, decision, turn;
    uint32_t encounter_id, final_hp, max_hp, turns;
    float value;
    bool won, engine_limit, turn_limit;
} record_order;

/* Record i against the order of those before it (docs/format.md "What
 * verify checks"); counts a new fight (and whether it was won) into `rep`.
 * SF_ECORRUPT naming the record and both keys. */
static int check_order(const char *path, uint64_t i, const Spirefleet__LabelRecord *rec,
                       record_order *o, sf_shard_verify_report *rep, sf_err *err) {
    const Spirefleet__LabelIds *id = rec->ids;
    const Spirefleet__Outcome *out = rec->outcome;
    unsigned long long s = id->game_seed;
    unsigned f = id->fight_index, d = id->decision_index;
    if (id->turn == 0)
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: record %llu (seed %llu, fight %u, decision %u): turn 0; turns "
                          "count from 1",
                          path, (unsigned long long)i, s, f, d);
    bool same_fight = i > 0 && id->game_seed == o->seed && id->fight_index == o->fight;
    if (i > 0) {
        int cmp = id->game_seed != o->seed            ? (id->game_seed < o->seed ? -1 : 1)
                  : id->fight_index != o->fight       ? (id->fight_index < o->fight ? -1 : 1)
                  : id->decision_index != o->decision ? (id->decision_index < o->decision ? -1 : 1)
                                                      : 0;
        if (cmp == 0)
            return sf_err_set(err, SF_ECORRUPT,
                              "%s: record %llu: key (seed %llu, fight %u, decision %u) repeats "
                              "record %llu's: a decision is recorded once",
                              path, (unsigned long long)i, s, f, d,
                              (unsigned long long)o->prev_index);
        if (cmp < 0)
            return sf_err_set(err, SF_ECORRUPT,
                              "%s: record %llu: key (seed %llu, fight %u, decision %u) comes "
                              "before record %llu's key (seed %llu, fight %u, decision %u): "
                              "records go in (seed, fight, decision) order",
                              path, (unsigned long long)i, s, f, d,
                              (unsigned long long)o->prev_index, (unsigned long long)o->seed,
                              (unsigned)o->fight, (unsigned)o->decision);
    }
    if (same_fight) {
        if (id->turn < o->turn)
            return sf_err_set(err, SF_ECORRUPT,
                              "%s: record %llu (seed %llu, fight %u, decision %u): turn %u after "
                              "turn %u of record %llu: a fight's turns never go back",
                              path, (unsigned long long)i, s, f, d, (unsigned)id->turn,
                              (unsigned)o->turn, (unsigned long long)o->prev_index);
        if (out->won != o->won || out->final_hp != o->final_hp || out->max_hp != o->max_hp ||
            out->turns != o->turns || out->value != o->value ||
            out->engine_limit != o->engine_limit || out->turn_limit != o->turn_limit ||
            id->encounter_id != o->encounter_id)
            return sf_err_set(err, SF_ECORRUPT,
                              "%s: record %llu (seed %llu, fight %u): its outcome or encounter "
                              "differs from record %llu's, the fight's first record: a fight "
                              "has one end",
                              path, (unsigned long long)i, s, f,
                              (unsigned long long)o->fight_first);
    } else {
        rep->fights++;
        rep->fights_won += out->won ? 1 : 0;
        o->fight_first = i;
        o->encounter_id = id->encounter_id;
        o->won = out->won;
        o->final_hp = out->final_hp;
        o->max_hp = out->max_hp;
        o->turns = out->turns;
        o->value = out->value;
        o->engine_limit = out->engine_limit;
        o->turn_limit = out->turn_limit;
    }
    o->seed = id->game_seed;
    o->fight = id->fight_index;
    o->decision = id->decision_index;
    o->turn = id->turn;
    o->prev_index = i;
    return SF_OK;
}

static int check_records(const char *path, sf_shard_verify_report *rep, sf_err *err) {
    sf_shard_reader *r = NULL;
    int rc = sf_shard_reader_open_any(path, &r, err);
    if (rc < 0)
        return rc;
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    sf_shard_name(m->run_id ? m->run_id : "", m->job_id, rep->name, sizeof rep->name);
    rc = sf_shard_check_name(path, m->run_id ? m->run_id : "", m->job_id, err);
    if (rc < 0) {
        sf_shard_reader_close(r);
        return rc;
    }
    sf_sha256_ctx *sha;
    if ((rc = sf_sha256_new(&sha, err)) < 0) {
        sf_shard_reader_close(r);
        return rc;
    }
    uint64_t raw_bytes = 0, payload = 0, smin = 0, smax = 0, capped = 0;
    record_order order = {0};
    uint64_t n = sf_shard_reader_count(r);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *raw;
        size_t len, flen;
        const Spirefleet__LabelRecord *rec;
        if ((rc = sf_shard_reader_get_raw(r, i, &raw, &len, &flen, err)) < 0 ||
            (rc = sf_shard_reader_decode_last(r, i, &rec, err)) < 0) {
            rep->bad_record = (int64_t)i;
            goto out;
        }
        sf_shard_digest_add(sha, raw, len);
        raw_bytes += len;
        payload += flen;
        const Spirefleet__LabelIds *ids = rec->ids;
        if (strcmp(ids->run_id, m->run_id) != 0 || ids->job_id != m->job_id ||
            ids->engine_version != m->engine_version ||
            ids->tokenizer_version != m->tokenizer_version ||
            strcmp(ids->model_sha256, m->model_sha256) != 0 ||
            strcmp(ids->config_digest, m->config_digest) != 0) {
            rep->bad_record = (int64_t)i;
            rc = sf_err_set(err, SF_ECORRUPT,
                            "%s: record %llu: ids (run '%.64s', job %llu) disagree with the "
                            "manifest (run '%.64s', job %llu) or its versions/model/config",
                            path, (unsigned long long)i, ids->run_id,
                            (unsigned long long)ids->job_id, m->run_id,
                            (unsigned long long)m->job_id);
            goto out;
        }
        /* records come in (seed, fight, decision) order, one outcome per
         * fight: a fight's first record says how it ended */
        uint64_t fights = rep->fights;
        if ((rc = check_order(path, i, rec, &order, rep, err)) < 0) {
            rep->bad_record = (int64_t)i;
            goto out;
        }
        if (rep->fights != fights && rec->outcome->turn_limit)
            capped++;
        if (i == 0 || ids->game_seed < smin)
            smin = ids->game_seed;
        if (i == 0 || ids->game_seed > smax)
            smax = ids->game_seed;
        rep->records = i + 1;
    }
    /* a gate shard's pairs, after the records, in seed order */
    sf_buf scratch = {0};
    for (size_t k = 0; k < m->n_gate_pairs && rc == SF_OK; k++) {
        const Spirefleet__GatePair *p = m->gate_pairs[k];
        rc = sf_shard_hash_gate_pair(sha, p, &scratch, err);
        if (n == 0 && k == 0)
            smin = smax = p->game_seed;
        if (p->game_seed < smin)
            smin = p->game_seed;
        if (p->game_seed > smax)
            smax = p->game_seed;
        if (rc == SF_OK && k > 0 && p->game_seed <= m->gate_pairs[k - 1]->game_seed)
            rc = sf_err_set(err, SF_ECORRUPT,
                            "%s: gate pair %zu (seed %llu) is not after seed "
                            "%llu: one pair per seed, in seed order",
                            path, k, (unsigned long long)p->game_seed,
                            (unsigned long long)m->gate_pairs[k - 1]->game_seed);
    }
    free(scratch.p);
    if (rc < 0)
        goto out;
    for (size_t k = 0; m->stats && k < m->stats->n_counters; k++)
        if (m->stats->counters[k]->name &&
            !strcmp(m->stats->counters[k]->name, SF_SHARD_COUNTER_TURN_LIMIT))
            rep->turn_limit_fights = m->stats->counters[k]->value;
    if (capped > rep->turn_limit_fights) {
        rc = sf_err_set(err, SF_ECORRUPT,
                        "%s: records of %llu fights ended at the turn cap, the manifest's "
                        "turn_limit_fights says %llu",
                        path, (unsigned long long)capped,
                        (unsigned long long)rep->turn_limit_fights);
        goto out;
    }
    if ((rc = sf_sha256_final(sha, rep->digest, err)) < 0)
        goto out;
    if (sodium_memcmp(rep->digest, m->content_digest.data, SF_SHARD_DIGEST_BYTES) != 0) {
        char want[65], got[65];
        sf_hex(m->content_digest.data, 32, want);
        sf_hex(rep->digest, 32, got);
        rc = sf_err_set(err, SF_ECORRUPT, "%s: content digest %s, the manifest says %s", path, got,
                        want);
    } else if (raw_bytes != m->raw_bytes || payload != m->payload_bytes) {
        rc = sf_err_set(err, SF_ECORRUPT,
                        "%s: records hold %llu raw / %llu compressed bytes, the manifest says "
                        "%llu / %llu",
                        path, (unsigned long long)raw_bytes, (unsigned long long)payload,
                        (unsigned long long)m->raw_bytes, (unsigned long long)m->payload_bytes);
    } else if ((n > 0 || m->n_gate_pairs > 0) && (smin != m->seed_first || smax != m->seed_last)) {
        rc = sf_err_set(err, SF_ECORRUPT,
                        "%s: records and pairs span seeds %llu..%llu, the manifest says %llu..%llu",
                        path, (unsigned long long)smin, (unsigned long long)smax,
                        (unsigned long long)m->seed_first, (unsigned long long)m->seed_last);
    }
out:
    sf_sha256_free(sha);
    sf_shard_reader_close(r);
    return rc;
}

int sf_shard_verify(const char *path, sf_shard_verify_report *rep_out, sf_err *err) {
    if (rep_out)
        *rep_out = (sf_shard_verify_report){.bad_record = -1, .bad_page = -1};
    int rc = sf_shard_refuse_temp(path, err);
    return rc < 0 ? rc : sf_shard_verify_any(path, rep_out, err);
}

int sf_shard_verify_any(const char *path, sf_shard_verify_report *rep_out, sf_err *err) {
    sf_shard_verify_report rep = {.bad_record = -1, .bad_page = -1};
    sf_trailer t = {0};
    int rc;
    if (sodium_init() < 0) {
        rc = sf_err_set(err, SF_EIO, "%s: libsodium failed to initialise", path);
        goto done;
    }
    struct stat st;
    int fd = sf_shard_open_file(path, &st, err);
    if (fd < 0) {
        rc = fd;
        goto done;
    }
    rep.file_bytes = (uint64_t)st.st_size;
    rc = sf_trailer_read(fd, path, rep.file_bytes, &t, err);
    if (rc == SF_OK) {
        rep.pages = t.npages;
        bool struct_bad = false;
        rc = scan_pages(fd, path, &t, &rep.bad_page, &struct_bad, err);
        if (rc == SF_OK && rep.bad_page >= 0) {
            if (struct_bad)
                rc = sf_err_set(err, SF_ECORRUPT,
                                "%s: page %lld: CRC mismatch%s; an LMDB structure page (B-tree, "
                                "meta, free list or manifest) is damaged, so records are not "
                                "located",
                                path, (long long)rep.bad_page,
                                is_struct_page(&t, (uint64_t)rep.bad_page) ? "" : " (and more)");
            else
                rc = name_damage(path, &t, (uint64_t)rep.bad_page, &rep, err);
        }
    }
    close(fd);
    if (rc == SF_OK)
        rc = check_records(path, &rep, err);
done:
    sf_trailer_free(&t);
    if (rep_out)
        *rep_out = rep;
    return rc;
}

int sf_shard_file_sha256(const char *path, char hex[65], uint64_t *size, sf_err *err) {
    *size = 0;
    struct stat sb;
    int fd = sf_shard_open_file(path, &sb, err);
    if (fd < 0)
        return fd;
    sf_sha256_ctx *st;
    int rc = sf_sha256_new(&st, err);
    if (rc < 0) {
        close(fd);
        return sf_err_prefix(err, "%s", path);
    }
    uint8_t buf[65536];
    size_t n = sizeof buf;
    while (rc == SF_OK && n == sizeof buf) {
        if (sf_read_full(fd, buf, sizeof buf, &n) < 0)
            rc = sf_err_set(err, SF_EIO, "%s: cannot read: %s", path, strerror(errno));
        sf_sha256_update(st, buf, n);
        *size += n;
    }
    close(fd);
    uint8_t h[SF_SHA256_BYTES];
    if (sf_sha256_final(st, h, rc == SF_OK ? err : NULL) < 0 && rc == SF_OK)
        rc = sf_err_prefix(err, "%s", path);
    sf_sha256_free(st);
    sf_hex(h, 32, hex);
    return rc;
}
