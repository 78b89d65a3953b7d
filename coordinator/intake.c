/*
 * intake.c — shard intake: an offer, its chunks, then the upload is
 * checked (size, file SHA-256, the shard's own verification, its manifest
 * against the job), stored in shards/ durably, and the job marked done. A
 * full disk defers an upload instead of failing it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/io.h"
#include "coordinator/internal.h"
#include "shard/shard.h"

static void send_ack_full(sf_coordinator *co, int wi, uint64_t job, int ok, int dup, int send,
                          uint32_t retry_ms, const char *reason) {
    cworker *w = &co->workers[wi];
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardAck a = SPIREFLEET__SHARD_ACK__INIT;
    a.job_id = job;
    a.ok = ok;
    a.duplicate = dup;
    a.send = send;
    a.retry_later = retry_ms > 0;
    a.retry_ms = retry_ms;
    a.reason = (char *)(reason ? reason : "");
    env.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_ACK;
    env.shard_ack = &a;
    co_queue_reply(co, w->ident, w->ident_len, &env);
}

static void send_ack(sf_coordinator *co, int wi, uint64_t job, int ok, int dup, int send,
                     const char *reason) {
    send_ack_full(co, wi, job, ok, dup, send, 0, reason);
}

/* Whether errno `e` says the filesystem has no room (as opposed to a
 * fault of the upload). */
static int no_room(int e) {
    return e == ENOSPC || e == EDQUOT;
}

/* The upload cannot be stored now because the disk is full (`what`: the
 * step, `e`: the errno): drop what was received and tell the worker to
 * keep its shard and offer it again later. Not a failure of the job or the
 * worker: nothing is counted against either, and the lease is kept (the
 * worker heartbeats for it). */
static void defer_upload(sf_coordinator *co, int wi, uint64_t job, const char *what, int e) {
    co_upload_discard(&co->workers[wi].up);
    co->st.uploads_deferred++;
    if (!co->st.uploads_paused)
        sf_log(co->log, co->log_ctx,
               "coordinator: %s: %s: uploads paused until space returns (workers keep their "
               "shards)",
               what, strerror(e));
    co->st.uploads_paused = 1;
    char why[SF_ERR_MSG_MAX];
    snprintf(why, sizeof why, "coordinator cannot store the upload now: %s: %s; retry later", what,
             strerror(e));
    uint32_t retry = co->cfg.coordinator.heartbeat_ms;
    send_ack_full(co, wi, job, 0, 0, 0, retry ? retry : 1000, why);
}

/* Room for an upload of `size` bytes in incoming/ (and the ledger's next
 * pages beside it): 0, or -1 with errno ENOSPC. */
#define UPLOAD_HEADROOM (2u << 20)
static int room_for(const sf_coordinator *co, uint64_t size) {
    struct statvfs vs;
    if (statvfs(co->incoming_dir, &vs) != 0)
        return 0; /* unknown: the write itself will say */
    uint64_t avail = (uint64_t)vs.f_bavail * vs.f_frsize;
    if (avail >= size + UPLOAD_HEADROOM)
        return 0;
    errno = ENOSPC;
    return -1;
}

void co_on_shard_offer(sf_coordinator *co, int wi, const Spirefleet__ShardOffer *o) {
    cworker *w = &co->workers[wi];
    if (o->job_id == 0 || o->job_id > co->njobs) {
        co->st.protocol_errors++;
        send_ack(co, wi, o->job_id, 0, 0, 0, "no such job");
        return;
    }
    cjob *j = &co->jobs[o->job_id - 1];
    const co_ident *me = co_ident_of(co, wi);
    if (me && (me->failing || me->quarantined)) {
        co->st.shards_rejected++;
        send_ack(co, wi, o->job_id, 0, 0, 0,
                 "this key gets no more jobs (failure reports): its shards are not taken");
        return;
    }
    int audit = j->state == JS_DONE && audit_expects(co, j, wi);
    if (j->state == JS_DONE && !audit) {
        /* idempotent by job id: the first copy stored wins */
        co->st.duplicates_dropped++;
        send_ack(co, wi, o->job_id, 1, 1, 0, "job already done");
        return;
    }
    /* Only the lease holder uploads a job's shard (a lease restored from
     * the ledger belongs to the worker id that held it): anyone else's
     * shard, however well formed, is refused before a byte is stored. */
    if (!audit && !co_claim_lease(co, j, wi)) {
        co->st.protocol_errors++;
        co->st.shards_rejected++;
        char why[160];
        snprintf(why, sizeof why, "job %llu is not leased to %s: only its lease holder uploads it",
                 (unsigned long long)o->job_id, w->worker_id);
        sf_log(co->log, co->log_ctx, "coordinator: refused a shard offer: %s", why);
        co_note_error(co, w->worker_id, "shard offer refused", why);
        send_ack(co, wi, o->job_id, 0, 0, 0, why);
        return;
    }
    /* A worker writes both digests with sf_hex: the canonical spelling is the
     * only one on the wire (common.h), and the one the received file's are
     * compared with. */
    if (!sf_sha256_hex_canonical(o->file_sha256) || !sf_sha256_hex_canonical(o->content_digest) ||
        o->size == 0 || o->size > CO_MAX_UPLOAD_BYTES) {
        co->st.protocol_errors++;
        send_ack(co, wi, o->job_id, 0, 0, 0, "bad offer: size or digests");
        return;
    }
    co_upload_discard(&w->up);
    upload *u = &w->up;
    u->active = 1;
    u->job_id = o->job_id;
    u->size = o->size;
    snprintf(u->file_sha256, sizeof u->file_sha256, "%s", o->file_sha256);
    snprintf(u->content_digest, sizeof u->content_digest, "%s", o->content_digest);
    snprintf(u->path, sizeof u->path, "%s/job%06llu-w%d.part", co->incoming_dir,
             (unsigned long long)o->job_id, wi);
    if (room_for(co, o->size) < 0) {
        char what[1200];
        snprintf(what, sizeof what, "%s: %llu bytes offered", co->incoming_dir,
                 (unsigned long long)o->size);
        u->active = 0;
        defer_upload(co, wi, o->job_id, what, ENOSPC);
        return;
    }
    u->f = fopen(u->path, "wb");
    if (!u->f && no_room(errno)) {
        int e = errno;
        u->active = 0;
        defer_upload(co, wi, o->job_id, u->path, e);
        return;
    }
    if (!u->f) {
        char why[SF_ERR_MSG_MAX];
        snprintf(why, sizeof why, "coordinator cannot write the upload: %s", strerror(errno));
        u->active = 0;
        send_ack(co, wi, o->job_id, 0, 0, 0, why);
        return;
    }
    sf_err he = {0};
    if (sf_sha256_new(&u->sha, &he) < 0) {
        co_upload_discard(u);
        send_ack(co, wi, o->job_id, 0, 0, 0, he.msg);
        return;
    }
    send_ack(co, wi, o->job_id, 0, 0, 1, NULL);
}

/* finish_upload, step 1: the received file closed (synced) and its size
 * and file SHA-256 checked against the offer; a problem goes into `why`.
 * -1 when a full disk deferred the upload (answered already). */
static int upload_close(sf_coordinator *co, int wi, char *why, size_t cap) {
    upload *u = &co->workers[wi].up;
    uint8_t h[32];
    char hex[65];
    sf_err he = {0};
    if (sf_sha256_final(u->sha, h, &he) < 0)
        snprintf(why, cap, "coordinator cannot hash the upload: %s", he.msg);
    sf_hex(h, 32, hex);
    int ok = sf_fflush_sync(u->f) == SF_OK;
    int write_errno = errno;
    fclose(u->f);
    u->f = NULL;
    if (!ok && no_room(write_errno)) {
        char what[1100];
        snprintf(what, sizeof what, "%s", u->path);
        defer_upload(co, wi, u->job_id, what, write_errno);
        return -1;
    }
    if (!ok)
        snprintf(why, cap, "coordinator could not write the upload: %s", strerror(write_errno));
    else if (u->received != u->size)
        snprintf(why, cap, "received %llu bytes, offered %llu", (unsigned long long)u->received,
                 (unsigned long long)u->size);
    else if (strcmp(hex, u->file_sha256))
        snprintf(why, cap, "file SHA-256 mismatch (got %.12s..., offered %.12s...)", hex,
                 u->file_sha256);
    return 0;
}

/* finish_upload, step 2: the shard verifies, holds the content digest
 * offered, and its manifest names this run, config and job, the job's
 * seeds and model and the uploader's key (and what a gate job must).
 * `sims` and `fallbacks` get the sealed manifest's counts. A problem goes
 * into `why`. */
static void upload_verify(sf_coordinator *co, int wi, const cjob *j, sf_shard_verify_report *rep,
                          uint64_t *sims, uint64_t *fallbacks, char *why, size_t cap) {
    const upload *u = &co->workers[wi].up;
    const char *key_id = co->workers[wi].key_id;
    sf_err verr = {0};
    if (sf_shard_verify(u->path, rep, &verr) < 0) {
        snprintf(why, cap, "shard does not verify: %s", verr.msg);
        return;
    }
    char dig[65];
    sf_hex(rep->digest, 32, dig);
    if (strcmp(dig, u->content_digest)) {
        snprintf(why, cap, "content digest mismatch");
        return;
    }
    sf_shard_reader *r = NULL;
    if (sf_shard_reader_open(u->path, &r, &verr) < 0) {
        snprintf(why, cap, "%s", verr.msg);
        return;
    }
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    if (m->job_id != j->id || strcmp(m->run_id ? m->run_id : "", co->cfg.name) ||
        strcmp(m->config_digest ? m->config_digest : "", co->digest))
        snprintf(why, cap, "manifest names another run, job or config");
    else if (m->seed_first < j->seed_start || m->seed_last >= j->seed_start + j->seed_count)
        snprintf(why, cap, "manifest seeds lie outside the job");
    else if (!co->gate && j->model &&
             strcmp(m->model_sha256 ? m->model_sha256 : "", co_job_model(co, j)))
        snprintf(why, cap, "manifest names model %.12s..., the job's is %.12s...",
                 m->model_sha256 ? m->model_sha256 : "", co_job_model(co, j));
    else if (co->zsec && strcmp(m->worker_key_id ? m->worker_key_id : "", key_id))
        /* provenance must name the key that uploaded it: quarantine
         * by key then finds every shard a key made */
        snprintf(why, cap, "manifest names worker key id '%.16s', the uploader's is %s",
                 m->worker_key_id ? m->worker_key_id : "", key_id);
    else
        gate_check_manifest(co, j, m, why, cap);
    if (m->stats) {
        *sims = m->stats->simulations;
        *fallbacks = m->stats->fallbacks;
    }
    sf_shard_reader_close(r);
}

/* An upload refused (`why`): dropped, counted, answered. */
static void upload_reject(sf_coordinator *co, int wi, uint64_t job_id, const char *why) {
    co->st.shards_rejected++;
    char what[48];
    snprintf(what, sizeof what, "shard of job %llu refused", (unsigned long long)job_id);
    co_note_error(co, co->workers[wi].worker_id, what, why);
    co_upload_discard(&co->workers[wi].up);
    send_ack(co, wi, job_id, 0, 0, 0, why);
}

/* finish_upload, step 3: the verified file stored as shards/<name>,
 * durably. 0; or -1 when it could not be (refused or deferred, answered
 * already). Never replaces: a file already there is an earlier copy of
 * this job (a re-issued job finds it, a restart adopts it). */
static int upload_store(sf_coordinator *co, int wi, const char *name) {
    upload *u = &co->workers[wi].up;
    char final[1200], why[SF_ERR_MSG_MAX + 64];
    snprintf(final, sizeof final, "%s/%s", co->shards_dir, name);
    if (link(u->path, final) != 0 && errno != EEXIST) {
        if (no_room(errno)) {
            defer_upload(co, wi, u->job_id, final, errno);
            return -1;
        }
        snprintf(why, sizeof why, "cannot store the shard as %.300s: %s", final, strerror(errno));
        upload_reject(co, wi, u->job_id, why);
        return -1;
    }
    unlink(u->path);
    u->path[0] = 0;
    /* Not done until the name is durable: otherwise the ledger could say
     * done for a shard a crash loses. The stored copy stays. */
    sf_err serr = {0};
    if (sf_fsync_dir(co->shards_dir, &serr) < 0) {
        snprintf(why, sizeof why, "cannot store the shard: %s", serr.msg);
        upload_reject(co, wi, u->job_id, why);
        return -1;
    }
    return 0;
}

/* finish_upload, step 4: job j is done, its shard stored (under
 * co_job_shard's name) from worker wi's upload. The totals come from the verified shard: fights and
 * wins counted in its records, simulations and fallbacks from its sealed
 * manifest (what the worker's offer said is not used). */
static void job_done(sf_coordinator *co, int wi, cjob *j, const sf_shard_verify_report *rep,
                     uint64_t sims, uint64_t fallbacks) {
    const upload *u = &co->workers[wi].up;
    if (j->state == JS_LEASED)
        co_leased_remove(co, j);
    j->state = JS_DONE;
    j->worker = -1;
    snprintf(j->content_digest, sizeof j->content_digest, "%s", u->content_digest);
    snprintf(j->file_sha256, sizeof j->file_sha256, "%s", u->file_sha256);
    j->records = rep->records;
    j->bytes = rep->file_bytes;
    j->fights = rep->fights;
    j->wins = rep->fights_won;
    j->simulations = sims;
    j->fallbacks = fallbacks;
    j->turn_limits = rep->turn_limit_fights;
    co_ident *maker = co_ident_of(co, wi);
    if (maker)
        maker->jobs_stored++;
    co->workers[wi].jobs_done++;
    co->workers[wi].labels += j->records;
    j->maker = co->workers[wi].who;
    job_touch(co, j);
    co->need_sync = 1;
    co_count_done(co, j);
    co->done_t[co->done_head] = sf_now_ns();
    co->done_labels[co->done_head] = j->records;
    co->done_secs[co->done_head] =
        j->leased_ns ? (double)(co->done_t[co->done_head] - j->leased_ns) / 1e9 : 0.0;
    co->done_head = (co->done_head + 1) % 256;
    if (co->done_n < 256)
        co->done_n++;
}

/* The upload is complete: check, verify, store, and mark the job done (an
 * audit's copy is compared, never stored). */
static void finish_upload(sf_coordinator *co, int wi) {
    upload *u = &co->workers[wi].up;
    uint64_t job_id = u->job_id;
    char why[SF_ERR_MSG_MAX + 64] = "";
    if (upload_close(co, wi, why, sizeof why) < 0)
        return;
    cjob *j = &co->jobs[job_id - 1];
    int audit = j->state == JS_DONE && audit_expects(co, j, wi);
    if (!why[0] && j->state == JS_DONE && !audit) {
        co_upload_discard(u);
        co->st.duplicates_dropped++;
        send_ack(co, wi, job_id, 1, 1, 0, "job already done");
        return;
    }
    /* the lease may have been given up (or expired) while the bytes came */
    if (!why[0] && !audit && !(j->state == JS_LEASED && co_lease_is(co, j, wi)))
        snprintf(why, sizeof why, "job %llu is no longer leased to %s", (unsigned long long)job_id,
                 co->workers[wi].worker_id);
    sf_shard_verify_report rep;
    uint64_t simulations = 0, fallbacks = 0; /* the sealed manifest's */
    if (!why[0])
        upload_verify(co, wi, j, &rep, &simulations, &fallbacks, why, sizeof why);
    if (why[0]) {
        if (audit)
            j->audit_worker = -1; /* another worker may bring a copy that verifies */
        upload_reject(co, wi, job_id, why);
        return;
    }
    if (audit) {
        /* compared, never stored: the stored copy stays unless it loses */
        char dig[65];
        sf_hex(rep.digest, 32, dig);
        co_upload_discard(u);
        send_ack(co, wi, job_id, 1, 1, 0, "audit copy compared");
        audit_result(co, j, wi, dig, fallbacks);
        return;
    }
    char name[96];
    co_shard_name(co, job_id, name, sizeof name);
    if (upload_store(co, wi, name) < 0)
        return;
    job_done(co, wi, j, &rep, simulations, fallbacks);
    sf_sha256_free(u->sha);
    memset(u, 0, sizeof *u);
    if (co->st.uploads_paused)
        sf_log(co->log, co->log_ctx, "coordinator: stored job %llu's shard: uploads resume",
               (unsigned long long)job_id);
    co->st.uploads_paused = 0;
    send_ack(co, wi, job_id, 1, 0, 0, NULL);
    audit_on_done(co, j, wi);
}

void co_on_shard_chunk(sf_coordinator *co, int wi, const Spirefleet__ShardChunk *c) {
    upload *u = &co->workers[wi].up;
    if (!u->active || u->job_id != c->job_id) {
        co->st.protocol_errors++;
        send_ack(co, wi, c->job_id, 0, 0, 0, "chunk without an accepted offer");
        return;
    }
    if (c->offset != u->received || c->data.len > SF_FLEET_CHUNK ||
        u->received + c->data.len > u->size) {
        co->st.protocol_errors++;
        co_upload_discard(u);
        send_ack(co, wi, c->job_id, 0, 0, 0, "chunk out of order or beyond the offered size");
        return;
    }
    if (c->data.len && fwrite(c->data.data, 1, c->data.len, u->f) != c->data.len) {
        if (no_room(errno)) {
            char what[1100];
            snprintf(what, sizeof what, "%s", u->path);
            defer_upload(co, wi, c->job_id, what, errno);
            return;
        }
        char why[SF_ERR_MSG_MAX];
        snprintf(why, sizeof why, "coordinator cannot write the upload: %s", strerror(errno));
        co_upload_discard(u);
        send_ack(co, wi, c->job_id, 0, 0, 0, why);
        return;
    }
    sf_sha256_update(u->sha, c->data.data, c->data.len);
    u->received += c->data.len;
    if (c->last)
        finish_upload(co, wi);
}
