/*
 * recovery.c — a restarted coordinator's recovery (coordinator.h
 * "Durability"): half-received uploads go, done jobs must still hold their
 * shards, stored shards the ledger missed are adopted, leases get one
 * liveness window. A shard that cannot be used is set aside in rejected/,
 * never deleted.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"
#include "coordinator/internal.h"
#include "shard/shard.h"

/* Move a shard that cannot be used out of shards/ into rejected/, with a
 * <name>.why file saying why: nothing stored is deleted, and a person can
 * look at it. */
void co_set_aside(sf_coordinator *co, const char *name, const char *why) {
    char from[1200], to[1200], note[1300];
    snprintf(from, sizeof from, "%s/%s", co->shards_dir, name);
    snprintf(to, sizeof to, "%s/%s", co->rejected_dir, name);
    snprintf(note, sizeof note, "%s.why", to);
    if (sf_mkdir_p(co->rejected_dir) < 0 || rename(from, to) != 0) {
        sf_log(co->log, co->log_ctx, "coordinator: cannot move %s aside (%s): %s", from,
               strerror(errno), why);
        return;
    }
    char text[SF_ERR_MSG_MAX + 8];
    int n = snprintf(text, sizeof text, "%s\n", why);
    sf_err e = {0};
    sf_write_file_durable(note, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1, &e);
    sf_fsync_dir(co->shards_dir, &e);
    sf_log(co->log, co->log_ctx, "coordinator: moved %s to %s: %s", from, to, why);
}

/* At restart, every job the ledger calls done must still have its shard,
 * sealed and naming that job with the content digest the ledger recorded
 * (the trailer and every structure page are checked on open); a job whose
 * shard is missing or not that shard goes back to pending, and the file,
 * if any, is set aside. */
static void recheck_done_jobs(sf_coordinator *co) {
    for (uint64_t i = 0; i < co->njobs; i++) {
        cjob *j = &co->jobs[i];
        if (j->state != JS_DONE)
            continue;
        char name[96], path[400], why[SF_ERR_MSG_MAX + 64] = "";
        co_shard_name(co, j->id, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", co->shards_dir, name);
        sf_shard_reader *r = NULL;
        sf_err e = {0};
        int missing = access(path, F_OK) != 0;
        if (missing) {
            snprintf(why, sizeof why, "%.400s is missing", path);
        } else if (sf_shard_reader_open(path, &r, &e) < 0) {
            snprintf(why, sizeof why, "%s", e.msg);
        } else {
            const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
            char dig[65] = "";
            if (m->content_digest.len == 32)
                sf_hex(m->content_digest.data, 32, dig);
            if (m->job_id != j->id || strcmp(dig, j->content_digest))
                snprintf(
                    why, sizeof why,
                    "%.400s holds job %llu with content digest %.12s..., the ledger's job %llu "
                    "has %.12s...",
                    path, (unsigned long long)m->job_id, dig, (unsigned long long)j->id,
                    j->content_digest);
        }
        sf_shard_reader_close(r);
        if (!why[0])
            continue;
        if (!missing)
            co_set_aside(co, name, why);
        else
            sf_log(co->log, co->log_ctx, "coordinator: job %llu's shard: %s; re-issuing it",
                   (unsigned long long)j->id, why);
        audit_cancel(co, j); /* its copies were of a shard that is gone */
        co_job_pending(co, j);
    }
}

static int name_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the files in shards/, sorted (*n of them; free each and the
 * array), read once: asking the filesystem about every job that is not
 * done would be a system call per job (millions, at a big run's start).
 * *whole is 0 when the list could not be made whole (no memory, no
 * directory listing): then every job is asked about after all. */
static char **stored_names(sf_coordinator *co, size_t *n, int *whole) {
    *n = 0;
    *whole = 0;
    DIR *d = opendir(co->shards_dir);
    if (!d)
        return NULL;
    *whole = 1;
    char **v = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (*n == cap) {
            size_t want = cap ? cap * 2 : 64;
            char **t = realloc(v, want * sizeof *v);
            if (!t) {
                *whole = 0;
                break;
            }
            v = t;
            cap = want;
        }
        if (!(v[*n] = strdup(e->d_name))) {
            *whole = 0;
            break;
        }
        (*n)++;
    }
    closedir(d);
    if (*n)
        qsort(v, *n, sizeof *v, name_cmp);
    return v;
}

/* A shard in shards/ whose job the ledger does not call done: the
 * coordinator stopped between storing it and committing. Verify and adopt. */
static void adopt_stored_shards(sf_coordinator *co) {
    size_t n_stored;
    int whole;
    char **stored = stored_names(co, &n_stored, &whole);
    for (uint64_t i = 0; i < co->njobs && (n_stored > 0 || !whole); i++) {
        cjob *j = &co->jobs[i];
        if (j->state == JS_DONE)
            continue;
        char name[96], path[1200];
        co_shard_name(co, j->id, name, sizeof name);
        const char *key = name;
        if (whole && !bsearch(&key, stored, n_stored, sizeof *stored, name_cmp))
            continue;
        snprintf(path, sizeof path, "%s/%s", co->shards_dir, name);
        if (access(path, F_OK) != 0)
            continue;
        sf_shard_verify_report rep;
        sf_err e = {0};
        sf_shard_reader *r = NULL;
        int ok =
            sf_shard_verify(path, &rep, &e) == SF_OK && sf_shard_reader_open(path, &r, &e) == 0;
        if (ok) {
            const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
            char why[256] = "";
            ok = m->job_id == j->id &&
                 !strcmp(m->config_digest ? m->config_digest : "", co->digest) &&
                 gate_check_manifest(co, j, m, why, sizeof why) == 0;
            /* the model: the one its lease bound, else (a lost binding)
             * the manifest's, which an audit of the job then plays */
            const char *mm = m->model_sha256 ? m->model_sha256 : "";
            const char *jm = co_job_model(co, j);
            if (ok && !co->gate && jm[0] && strcmp(mm, jm)) {
                ok = 0;
                snprintf(why, sizeof why, "manifest names model %.12s..., the job's is %.12s...",
                         mm, jm);
            }
            if (ok && !co->gate && !jm[0] && co_job_set_model(co, j, mm) < 0) {
                ok = 0;
                snprintf(why, sizeof why, "no memory for its model");
            }
            if (!ok && why[0])
                snprintf(e.msg, sizeof e.msg, "%s", why);
            if (ok && m->stats) {
                j->simulations = m->stats->simulations;
                j->fallbacks = m->stats->fallbacks;
            }
            if (ok) {
                j->fights = rep.fights;
                j->wins = rep.fights_won;
                j->turn_limits = rep.turn_limit_fights;
            }
        }
        sf_shard_reader_close(r);
        if (!ok) {
            char why[SF_ERR_MSG_MAX + 32];
            snprintf(why, sizeof why, "does not verify: %s", e.msg[0] ? e.msg : "(no reason)");
            co_set_aside(co, name, why);
            continue;
        }
        /* the file digest is recomputed: it is what trainers' pulls check */
        uint64_t size;
        if (sf_shard_file_sha256(path, j->file_sha256, &size, &e) < 0) {
            sf_log(co->log, co->log_ctx, "coordinator: not adopting %s: %s", path, e.msg);
            continue;
        }
        sf_hex(rep.digest, 32, j->content_digest);
        j->records = rep.records;
        j->bytes = rep.file_bytes;
        j->state = JS_DONE;
        job_touch(co, j);
        co->need_sync = 1;
        sf_log(co->log, co->log_ctx, "coordinator: adopted %s for job %llu", name,
               (unsigned long long)j->id);
    }
    for (size_t k = 0; k < n_stored; k++)
        free(stored[k]);
    free(stored);
}

static void clear_incoming(sf_coordinator *co) {
    DIR *d = opendir(co->incoming_dir);
    if (!d)
        return;
    struct dirent *e;
    char path[1400];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", co->incoming_dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* 6: recovery (coordinator.h "Durability"): half-received uploads go,
 * stored shards the ledger does not call done are adopted, leased jobs get
 * one liveness window, pending ones are queued; then one commit. */
int co_open_recover(sf_coordinator *co, sf_err *err) {
    clear_incoming(co);
    recheck_done_jobs(co);
    adopt_stored_shards(co);
    uint64_t now = sf_now_ns();
    uint64_t window = (uint64_t)co->cfg.coordinator.heartbeat_ms *
                      co->cfg.coordinator.heartbeat_liveness * CO_NS_PER_MS;
    for (uint64_t i = 0; i < co->njobs; i++) {
        cjob *j = &co->jobs[i];
        if (j->state == JS_PENDING) {
            co_queue_push(co, j->id);
        } else if (j->state == JS_LEASED) {
            co_leased_add(co, j);
            /* Whoever held it has one liveness window to say so (a heartbeat
             * or progress naming the job renews the full lease); otherwise
             * the job goes back to pending instead of waiting out a lease. */
            j->worker = -1;
            j->deadline = now + window;
            j->leased_ns = now;
        } else {
            co_count_done(co, j);
        }
    }
    return ledger_commit(co, err);
}
