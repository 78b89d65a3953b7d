/*
 * quarantine.c — removing a worker key's data in one step (internal.h
 * co_quarantine_key; docs/operator.md "Security"). The shards go into the
 * run's quarantine list (shard.h "Quarantine") and out of shards/ (kept in
 * quarantined/, nothing deleted), their jobs are issued again, and the key
 * is refused by the ZAP handler and on its live connections.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/io.h"
#include "coordinator/internal.h"
#include "shard/shard.h"

static void keys_path(const sf_coordinator *co, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s/quarantined-keys", co->cfg.output_dir);
    if (n < 0 || (size_t)n >= cap)
        out[0] = 0;
}

static int key_id_ok(const char *id) {
    return id && strlen(id) == SF_ZSEC_ID_LEN && strspn(id, "0123456789abcdef") == SF_ZSEC_ID_LEN;
}

/* Append the key to <output_dir>/quarantined-keys (rewritten durably). */
static int remember_key(sf_coordinator *co, const char *key_id, sf_err *err) {
    char path[600], text[64 * 1024] = "";
    keys_path(co, path, sizeof path);
    FILE *f = fopen(path, "r");
    size_t len = 0;
    if (f) {
        len = fread(text, 1, sizeof text - 64, f);
        fclose(f);
        text[len] = 0;
    }
    char line[SF_ZSEC_ID_LEN + 2];
    snprintf(line, sizeof line, "%s\n", key_id);
    if (strstr(text, line))
        return SF_OK;
    memcpy(text + len, line, strlen(line));
    len += strlen(line);
    return sf_write_file_durable(path, text, len, err);
}

int co_quarantine_open(sf_coordinator *co, sf_err *err) {
    char path[600];
    keys_path(co, path, sizeof path);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? SF_OK : sf_err_set(err, SF_EIO, "%s: %s", path, strerror(errno));
    char line[128];
    int no = 0, rc = SF_OK;
    while (rc == SF_OK && fgets(line, sizeof line, f)) {
        no++;
        line[strcspn(line, "\n")] = 0;
        if (!key_id_ok(line))
            rc = sf_err_set(err, SF_EFORMAT, "%s:%d: not a key id", path, no);
        else
            rc = sf_zsec_server_deny(co->zsec, line, err);
    }
    fclose(f);
    return rc;
}

/* Job j's stored shard, if its manifest names the key (sealed at or after
 * since): listed, moved aside, the job undone. 1 when quarantined. */
static int quarantine_job(sf_coordinator *co, cjob *j, const char *key_id, int64_t since,
                          sf_err *err) {
    char path[1200], name[CO_SHARD_NAME_MAX];
    co_job_shard(co, j, name);
    snprintf(path, sizeof path, "%s/%s", co->shards_dir, name);
    sf_shard_reader *r = NULL;
    sf_err e = {0};
    if (sf_shard_reader_open(path, &r, &e) < 0)
        return 0; /* the restart's recheck deals with a shard that is gone */
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    int hit = m->worker_key_id && !strcmp(m->worker_key_id, key_id) && m->created_unix >= since;
    sf_shard_quarantine_entry qe = {0};
    if (hit) {
        memcpy(qe.digest, m->content_digest.data, 32);
        snprintf(qe.name, sizeof qe.name, "%s", name);
        snprintf(qe.key_id, sizeof qe.key_id, "%s", key_id);
        qe.when_unix = (int64_t)time(NULL);
    }
    sf_shard_reader_close(r);
    if (!hit)
        return 0;
    /* listed first: a crash after this leaves a listed shard in shards/,
     * which readers already skip */
    int rc = sf_shard_quarantine_add(co->shards_dir, &qe, err);
    if (rc < 0)
        return rc;
    char dir[400], to[1400], hex[65];
    snprintf(dir, sizeof dir, "%s/quarantined", co->cfg.output_dir);
    sf_hex(qe.digest, 32, hex);
    snprintf(to, sizeof to, "%s/%.12s-%s", dir, hex, name);
    if (sf_mkdir_p(dir) < 0 || rename(path, to) != 0)
        return sf_err_set(err, SF_EIO, "cannot move %s to %s: %s", path, to, strerror(errno));
    if ((rc = sf_fsync_dir(co->shards_dir, err)) < 0)
        return rc;
    co_job_undo(co, j);
    return 1;
}

int co_quarantine_key(sf_coordinator *co, const char *key_id, int64_t since_unix, const char *who,
                      co_quarantine_report *rep, sf_err *err) {
    memset(rep, 0, sizeof *rep);
    if (!key_id_ok(key_id))
        return sf_err_set(err, SF_EINVAL, "'%.40s' is not a key id (16 lower-case hex digits)",
                          key_id ? key_id : "");
    if (!co->zsec)
        return sf_err_set(err, SF_ESTATE,
                          "security.mode none: workers have no keys to quarantine by");
    int rc = remember_key(co, key_id, err);
    if (rc == SF_OK)
        rc = sf_zsec_server_deny(co->zsec, key_id, err);
    if (rc < 0)
        return rc;
    for (int i = 0; i < co->nworkers; i++) {
        cworker *w = &co->workers[i];
        if (strcmp(w->key_id, key_id))
            continue;
        if (!w->quarantined)
            co->st.workers_quarantined++;
        w->quarantined = 1;
        for (uint64_t k = co->n_leased; k-- > 0;) {
            cjob *j = &co->jobs[co->leased[k] - 1];
            if (j->worker == i) {
                co_job_undo(co, j);
                rep->jobs++;
            }
        }
    }
    for (uint64_t i = 0; i < co->njobs; i++) {
        cjob *j = &co->jobs[i];
        if (j->state != JS_DONE)
            continue;
        rc = quarantine_job(co, j, key_id, since_unix, err);
        if (rc < 0)
            return rc;
        rep->shards += (uint32_t)rc;
        rep->jobs += (uint32_t)rc;
    }
    co->st.shards_quarantined += rep->shards;
    for (int i = 0; i < co->n_idents; i++)
        if (!strcmp(co->idents[i].id, key_id))
            co->idents[i].quarantined = 1;
    audit_forget(co, key_id); /* its audit copies no longer count */
    co->complete_ns = 0;      /* the run is not complete while those jobs are pending */
    int alive = 0;
    for (int i = 0; i < co->nworkers; i++)
        alive += co->workers[i].alive && !co->workers[i].quarantined;
    rep->workers_alive = (uint32_t)alive;
    sf_log(co->log, co->log_ctx,
           "coordinator: key %s quarantined by %s: %u shard(s) listed in %s/%s, %u job(s) "
           "issued again; the key is refused from now on%s",
           key_id, who, rep->shards, co->shards_dir, SF_SHARD_QUARANTINE_FILE, rep->jobs,
           rep->jobs && !alive ? "; NO WORKER is connected to play them: start workers" : "");
    return SF_OK;
}
