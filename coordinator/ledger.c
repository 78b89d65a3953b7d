/*
 * ledger.c — the coordinator's durable job ledger in one LMDB file.
 *
 * Databases: `meta` ("config" = packed RunConfig, "digest" = hex config
 * digest, "jobs" = job count as u64 little-endian) and `jobs` (key = job id,
 * u64 big-endian; value = packed LedgerJob). The environment is opened with
 * MDB_NOSYNC: commits reach the page cache at once (so a killed process
 * loses nothing) and ledger_commit() forces an fsync whenever a job became
 * done, before anyone is told.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "coordinator/internal.h"

static int mdb_fail(sf_err *err, const char *path, const char *what, int rc) {
    return sf_err_set(err, SF_EIO, "%s: %s: %s", path, what, mdb_strerror(rc));
}

static void be64(uint64_t v, uint8_t out[8]) {
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (uint8_t)v;
}

int ledger_open(sf_coordinator *co, sf_err *err) {
    int rc = mdb_env_create(&co->env);
    if (rc)
        return mdb_fail(err, co->ledger_path, "mdb_env_create", rc);
    co->map_size = 64u << 20;
    mdb_env_set_mapsize(co->env, co->map_size);
    mdb_env_set_maxdbs(co->env, 4);
    rc = mdb_env_open(co->env, co->ledger_path, MDB_NOSUBDIR | MDB_NOSYNC, 0644);
    if (rc) {
        mdb_env_close(co->env);
        co->env = NULL;
        return mdb_fail(err, co->ledger_path, "open", rc);
    }
    /* an existing ledger may be larger than our initial map */
    MDB_envinfo info;
    mdb_env_info(co->env, &info);
    if (info.me_mapsize > co->map_size)
        co->map_size = info.me_mapsize;
    MDB_txn *txn;
    rc = mdb_txn_begin(co->env, NULL, 0, &txn);
    if (!rc)
        rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &co->dbi_meta);
    if (!rc)
        rc = mdb_dbi_open(txn, "jobs", MDB_CREATE, &co->dbi_jobs);
    if (!rc)
        rc = mdb_txn_commit(txn);
    else
        mdb_txn_abort(txn);
    if (rc)
        return mdb_fail(err, co->ledger_path, "open databases", rc);
    return SF_OK;
}

void ledger_close(sf_coordinator *co) {
    if (co->env) {
        mdb_env_sync(co->env, 1);
        mdb_env_close(co->env);
        co->env = NULL;
    }
}

static void job_to_proto(const cjob *j, Spirefleet__LedgerJob *m, Spirefleet__JobStats *st) {
    spirefleet__ledger_job__init(m);
    spirefleet__job_stats__init(st);
    m->job_id = j->id;
    m->state = (Spirefleet__JobState)j->state;
    m->seed_start = j->seed_start;
    m->seed_count = j->seed_count;
    m->worker_id = (char *)j->worker_id;
    m->attempt = j->attempt;
    m->content_digest = (char *)j->content_digest;
    m->shard_name = (char *)j->shard_name;
    m->records = j->records;
    m->bytes = j->bytes;
    m->file_sha256 = (char *)j->file_sha256;
    m->model_sha256 = (char *)j->model;
    st->fights = j->fights;
    st->decisions = j->records;
    st->simulations = j->simulations;
    st->fallbacks = j->fallbacks;
    st->fights_won = j->wins;
    m->stats = st;
}

static void copy_str(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src ? src : "");
}

static int put_job(sf_coordinator *co, MDB_txn *txn, const cjob *j) {
    Spirefleet__LedgerJob m;
    Spirefleet__JobStats st;
    job_to_proto(j, &m, &st);
    uint8_t buf[1024];
    size_t n = spirefleet__ledger_job__get_packed_size(&m);
    if (n > sizeof buf)
        return MDB_BAD_VALSIZE;
    spirefleet__ledger_job__pack(&m, buf);
    uint8_t key[8];
    be64(j->id, key);
    MDB_val k = {8, key}, v = {n, buf};
    return mdb_put(txn, co->dbi_jobs, &k, &v, 0);
}

static int put_meta(MDB_txn *txn, MDB_dbi dbi, const char *key, const void *data, size_t len) {
    MDB_val k = {strlen(key), (void *)key}, v = {len, (void *)data};
    return mdb_put(txn, dbi, &k, &v, 0);
}

/* Run fn in a write transaction, growing the map and retrying on MAP_FULL. */
static int write_txn(sf_coordinator *co, int (*fn)(sf_coordinator *, MDB_txn *), sf_err *err) {
    for (int attempt = 0; attempt < 8; attempt++) {
        MDB_txn *txn;
        int rc = mdb_txn_begin(co->env, NULL, 0, &txn);
        if (rc)
            return mdb_fail(err, co->ledger_path, "begin write", rc);
        rc = fn(co, txn);
        if (!rc)
            rc = mdb_txn_commit(txn);
        else
            mdb_txn_abort(txn);
        if (rc == MDB_MAP_FULL) {
            co->map_size *= 2;
            int r2 = mdb_env_set_mapsize(co->env, co->map_size);
            if (r2)
                return mdb_fail(err, co->ledger_path, "grow map", r2);
            continue;
        }
        if (rc)
            return mdb_fail(err, co->ledger_path, "commit", rc);
        return SF_OK;
    }
    return sf_err_set(err, SF_EIO, "%s: the ledger map could not grow to %zu bytes: %s",
                      co->ledger_path, co->map_size, mdb_strerror(MDB_MAP_FULL));
}

static int create_fn(sf_coordinator *co, MDB_txn *txn) {
    sf_config_scratch *s = malloc(sizeof *s);
    if (!s)
        return ENOMEM;
    Spirefleet__RunConfig *m = sf_config_to_proto(&co->cfg, s);
    size_t n = spirefleet__run_config__get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    int rc = ENOMEM;
    if (buf) {
        spirefleet__run_config__pack(m, buf);
        rc = put_meta(txn, co->dbi_meta, "config", buf, n);
        free(buf);
    }
    free(s);
    if (!rc)
        rc = put_meta(txn, co->dbi_meta, "digest", co->digest, 64);
    uint8_t cnt[8];
    for (int i = 0; i < 8; i++)
        cnt[i] = (uint8_t)(co->njobs >> (8 * i));
    if (!rc)
        rc = put_meta(txn, co->dbi_meta, "jobs", cnt, 8);
    for (uint64_t i = 0; i < co->njobs && !rc; i++)
        rc = put_job(co, txn, &co->jobs[i]);
    return rc;
}

int ledger_create(sf_coordinator *co, sf_err *err) {
    int rc = write_txn(co, create_fn, err);
    if (rc < 0)
        return rc;
    int src = mdb_env_sync(co->env, 1);
    if (src)
        return mdb_fail(err, co->ledger_path, "sync", src);
    for (uint64_t i = 0; i < co->njobs; i++)
        co->jobs[i].dirty = 0;
    return SF_OK;
}

int ledger_load(sf_coordinator *co, sf_err *err) {
    MDB_txn *txn;
    int rc = mdb_txn_begin(co->env, NULL, MDB_RDONLY, &txn);
    if (rc)
        return mdb_fail(err, co->ledger_path, "begin read", rc);
    MDB_val k = {6, (void *)"digest"}, v;
    rc = mdb_get(txn, co->dbi_meta, &k, &v);
    if (rc == MDB_NOTFOUND) {
        mdb_txn_abort(txn);
        return 0;
    }
    if (rc || v.mv_size != 64) {
        mdb_txn_abort(txn);
        return sf_err_set(err, SF_ECORRUPT, "%s: the run digest record is damaged",
                          co->ledger_path);
    }
    if (memcmp(v.mv_data, co->digest, 64)) {
        char stored[65];
        memcpy(stored, v.mv_data, 64);
        stored[64] = 0;
        mdb_txn_abort(txn);
        return sf_err_set(err, SF_ECONFIG,
                          "%s: this output dir holds a run with config digest %.12s..., but the "
                          "config given has %.12s...; use another run.output_dir or the original "
                          "config",
                          co->ledger_path, stored, co->digest);
    }
    MDB_cursor *cur;
    rc = mdb_cursor_open(txn, co->dbi_jobs, &cur);
    uint64_t loaded = 0;
    MDB_val key, val;
    for (int op = MDB_FIRST; !rc && !mdb_cursor_get(cur, &key, &val, (MDB_cursor_op)op);
         op = MDB_NEXT) {
        Spirefleet__LedgerJob *m = spirefleet__ledger_job__unpack(NULL, val.mv_size, val.mv_data);
        if (!m || m->job_id == 0 || m->job_id > co->njobs) {
            if (m)
                spirefleet__ledger_job__free_unpacked(m, NULL);
            rc = -1;
            break;
        }
        cjob *j = &co->jobs[m->job_id - 1];
        j->state = (uint8_t)(m->state <= SPIREFLEET__JOB_STATE__JOB_DONE ? m->state : 0);
        j->attempt = m->attempt;
        copy_str(j->worker_id, sizeof j->worker_id, m->worker_id);
        copy_str(j->content_digest, sizeof j->content_digest, m->content_digest);
        copy_str(j->file_sha256, sizeof j->file_sha256, m->file_sha256);
        copy_str(j->shard_name, sizeof j->shard_name, m->shard_name);
        copy_str(j->model, sizeof j->model, m->model_sha256);
        if (j->model[0] && strcmp(j->model, "rollout") && !sf_sha256_hex_canonical(j->model)) {
            spirefleet__ledger_job__free_unpacked(m, NULL);
            rc = -1;
            break;
        }
        j->records = m->records;
        j->bytes = m->bytes;
        if (m->stats) {
            j->fights = m->stats->fights;
            j->simulations = m->stats->simulations;
            j->fallbacks = m->stats->fallbacks;
            j->wins = m->stats->fights_won;
        }
        spirefleet__ledger_job__free_unpacked(m, NULL);
        loaded++;
    }
    if (cur)
        mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    if (rc)
        return sf_err_set(err, SF_ECORRUPT, "%s: a job record does not decode", co->ledger_path);
    if (loaded != co->njobs)
        return sf_err_set(err, SF_ECORRUPT, "%s: %llu job records, expected %llu", co->ledger_path,
                          (unsigned long long)loaded, (unsigned long long)co->njobs);
    return 1;
}

static int commit_fn(sf_coordinator *co, MDB_txn *txn) {
    int rc = 0;
    for (uint64_t k = 0; k < co->ndirty && !rc; k++)
        rc = put_job(co, txn, &co->jobs[co->dirty[k] - 1]);
    return rc;
}

int ledger_commit(sf_coordinator *co, sf_err *err) {
    if (co->ndirty == 0 && !co->need_sync)
        return SF_OK;
    if (co->ndirty > 0) {
        int rc = write_txn(co, commit_fn, err);
        if (rc < 0)
            return rc;
        for (uint64_t k = 0; k < co->ndirty; k++)
            co->jobs[co->dirty[k] - 1].dirty = 0;
        co->ndirty = 0;
    }
    if (co->need_sync) {
        int src = mdb_env_sync(co->env, 1);
        if (src)
            return mdb_fail(err, co->ledger_path, "sync", src);
        co->need_sync = 0;
    }
    return SF_OK;
}
