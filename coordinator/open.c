/*
 * open.c — sf_coordinator_open in named steps (config, dirs, jobs, lock,
 * ledger, gate, recovery, security, router, metrics), the ledger rebuild,
 * and sf_coordinator_close, which undoes whatever the steps did.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/io.h"
#include "coordinator/internal.h"

/* The steps of sf_coordinator_open(), in order, like LMDB's env open: each
 * returns SF_OK or an error whose message names the step's path or
 * endpoint, and on any error the caller frees with sf_coordinator_close(),
 * which undoes what the steps before did. */

/* 1: the coordinator, its copy of the config, the RunConfig sent to workers
 * and the digest. */
static int open_config(sf_coordinator *co, const sf_run_config *cfg, const sf_coord_opts *opts,
                       sf_err *err) {
    co->cfg = *cfg;
    co->exit_when_done = opts ? opts->exit_when_done : 0;
    co->max_workers = opts && opts->max_workers > 0 ? opts->max_workers : SF_COORD_MAX_WORKERS;
    co->slow_after_ns =
        (uint64_t)(opts && opts->slow_after_ms > 0 ? opts->slow_after_ms : SF_COORD_SLOW_AFTER_MS) *
        CO_NS_PER_MS;
    co->log = opts ? opts->log : NULL;
    co->log_ctx = opts ? opts->log_ctx : NULL;
    co->stop = opts ? opts->stop : NULL;
    co->create_chunk = opts ? opts->create_chunk : 0;
    co->cfg_msg = malloc(sizeof *co->cfg_msg);
    if (!co->cfg_msg)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    co->run_msg = sf_config_to_proto(&co->cfg, co->cfg_msg);
    int rc = sf_config_digest(cfg, co->digest);
    return rc < 0 ? sf_err_set(err, rc, "cannot compute the config digest") : SF_OK;
}

/* 2: <output_dir>/shards and incoming. */
static int open_dirs(sf_coordinator *co, sf_err *err) {
    const char *dir = co->cfg.output_dir;
    snprintf(co->shards_dir, sizeof co->shards_dir, "%s/shards", dir);
    snprintf(co->incoming_dir, sizeof co->incoming_dir, "%s/incoming", dir);
    snprintf(co->ledger_path, sizeof co->ledger_path, "%s/ledger.lmdb", dir);
    snprintf(co->rejected_dir, sizeof co->rejected_dir, "%s/rejected", dir);
    const char *made[] = {co->shards_dir, co->incoming_dir};
    for (int i = 0; i < 2; i++)
        if (sf_mkdir_p(made[i]) < 0)
            return sf_err_set(err, SF_EIO, "%s: cannot create: %s", made[i], strerror(errno));
    return SF_OK;
}

/* 3: the job table (every job pending) and its queues. */
static int open_jobs(sf_coordinator *co, sf_err *err) {
    const sf_run_config *cfg = &co->cfg;
    co->njobs = (cfg->seed_count + cfg->job_size - 1) / cfg->job_size;
    co->jobs = calloc(co->njobs, sizeof *co->jobs);
    co->queue = calloc(co->njobs, sizeof *co->queue);
    co->dirty = calloc(co->njobs, sizeof *co->dirty);
    co->leased = calloc(co->njobs, sizeof *co->leased);
    co->audits = calloc(co->njobs, sizeof *co->audits);
    co->failing = calloc(co->njobs, sizeof *co->failing);
    if (!co->jobs || !co->queue || !co->dirty || !co->leased || !co->audits || !co->failing)
        return sf_err_set(err, SF_ENOMEM, "out of memory for %llu jobs",
                          (unsigned long long)co->njobs);
    for (uint64_t i = 0; i < co->njobs; i++) {
        cjob *j = &co->jobs[i];
        j->id = i + 1;
        j->seed_start = cfg->seed_start + i * cfg->job_size;
        uint64_t left = cfg->seed_count - i * cfg->job_size;
        j->seed_count = (uint32_t)(left < cfg->job_size ? left : cfg->job_size);
        j->worker = -1;
        j->audit_worker = -1;
        j->maker = -1;
    }
    return SF_OK;
}

/* 4: one coordinator per output dir: an flock on coordinator.lock, which
 * holds the holder's pid for the next one's message. */
static int open_lock(sf_coordinator *co, sf_err *err) {
    char lock[400];
    snprintf(lock, sizeof lock, "%s/coordinator.lock", co->cfg.output_dir);
    co->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (co->lock_fd < 0)
        return sf_err_set(err, SF_EIO, "%s: cannot open: %s", lock, strerror(errno));
    if (flock(co->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        /* the holder writes its pid just after taking the lock, so a
         * coordinator that started at the same moment may not show one yet */
        char pid[24] = "", holder[40] = "";
        ssize_t got = pread(co->lock_fd, pid, sizeof pid - 1, 0);
        if (got > 0) {
            pid[got] = 0;
            pid[strcspn(pid, "\n")] = 0;
        }
        if (pid[0])
            snprintf(holder, sizeof holder, " (pid %s)", pid);
        return sf_err_set(err, SF_ESTATE,
                          "%s: another coordinator%s is serving this output dir; stop it first",
                          co->cfg.output_dir, holder);
    }
    char pidtxt[32];
    int pl = snprintf(pidtxt, sizeof pidtxt, "%d\n", (int)getpid());
    if (ftruncate(co->lock_fd, 0) != 0 || sf_pwrite_full(co->lock_fd, pidtxt, (size_t)pl, 0) < 0)
        sf_log(co->log, co->log_ctx, "coordinator: could not record the pid in %s: %s", lock,
               strerror(errno));
    return SF_OK;
}

/* 5: the ledger: the run found there (its digest must match), or a new
 * one; then the jobs not created yet (all of a new run's; the rest of a
 * run stopped while creating them), in chunks, stopping on co->stop. */
static int open_ledger(sf_coordinator *co, sf_err *err) {
    int rc = ledger_open(co, err);
    if (rc < 0)
        return rc;
    rc = ledger_load(co, err);
    if (rc == 0)
        rc = ledger_create_run(co, err);
    else if (rc == 1 && co->jobs_created < co->njobs)
        sf_log(co->log, co->log_ctx,
               "coordinator: %llu of %llu jobs were created before the last stop; creating the "
               "rest",
               (unsigned long long)co->jobs_created, (unsigned long long)co->njobs);
    if (rc < 0)
        return rc;
    return ledger_create_jobs(co, err);
}

/* 7: security: with mode curve the key directory (made for a local run
 * when security.keys is "") and the ZAP handler, on a context of its own
 * before any socket; mode none says at every start what it lets in. */
static int open_security(sf_coordinator *co, const char *bind, sf_err *err) {
    co->zctx = zmq_ctx_new();
    if (!co->zctx)
        return sf_err_set(err, SF_EIO, "cannot start ZeroMQ: %s", zmq_strerror(zmq_errno()));
    char dir[SF_CFG_PATH + 8];
    sf_config_keys_dir(&co->cfg, dir, sizeof dir);
    if (!dir[0]) {
        sf_log(co->log, co->log_ctx,
               "coordinator: WARNING: security.mode none: anyone who reaches %s can take jobs, "
               "upload shards, read status and stop the run",
               bind);
        return SF_OK;
    }
    int rc = co->cfg.security.keys[0] ? SF_OK : sf_zsec_ensure_dir(dir, err);
    if (rc == SF_OK)
        rc = sf_zsec_server_open(co->zctx, dir, co->log, co->log_ctx, &co->zsec, err);
    if (rc == SF_OK) /* keys quarantined before a restart stay refused */
        rc = co_quarantine_open(co, err);
    return rc < 0 ? sf_err_prefix(err, "security") : SF_OK;
}

/* 8: the ROUTER, bound at `bind`; co->endpoint is what it got. */
static int open_router(sf_coordinator *co, const char *bind, sf_err *err) {
    co->router = zmq_socket(co->zctx, ZMQ_ROUTER);
    if (!co->router)
        return sf_err_set(err, SF_EIO, "%s: cannot make a socket: %s", bind,
                          zmq_strerror(zmq_errno()));
    if (co->zsec && sf_zsec_server_apply(co->zsec, co->router, err) < 0)
        return sf_err_prefix(err, "%s", bind);
    /* Per-peer queues, in messages: a peer that stops reading gets at most
     * SNDHWM replies (each at most a SF_FLEET_CHUNK ShardData) queued before the
     * rest are dropped, so it cannot grow the coordinator without bound.
     * Every legitimate peer asks and waits, so a handful would do. */
    int one = 1, zero = 0, sndhwm = 64, rcvhwm = 1000;
    zmq_setsockopt(co->router, ZMQ_ROUTER_HANDOVER, &one, sizeof one);
    zmq_setsockopt(co->router, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(co->router, ZMQ_SNDHWM, &sndhwm, sizeof sndhwm);
    zmq_setsockopt(co->router, ZMQ_RCVHWM, &rcvhwm, sizeof rcvhwm);
    int64_t maxmsg = SF_FLEET_MAX_MSG;
    zmq_setsockopt(co->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (zmq_bind(co->router, bind) != 0)
        return sf_err_set(err, SF_EIO, "cannot bind %s: %s", bind, zmq_strerror(zmq_errno()));
    size_t elen = sizeof co->endpoint;
    zmq_getsockopt(co->router, ZMQ_LAST_ENDPOINT, co->endpoint, &elen);
    return SF_OK;
}

/* Rename the ledger (and its LMDB lock file) out of the way. */
static int move_ledger_aside(sf_coordinator *co, sf_ledger_rebuild *rep, sf_err *err) {
    rep->moved_to[0] = 0;
    if (access(co->ledger_path, F_OK) != 0)
        return SF_OK;
    snprintf(rep->moved_to, sizeof rep->moved_to, "%.300s.damaged-%lld", co->ledger_path,
             (long long)time(NULL));
    if (rename(co->ledger_path, rep->moved_to) != 0)
        return sf_err_set(err, SF_EIO, "%s: cannot move it to %s: %s", co->ledger_path,
                          rep->moved_to, strerror(errno));
    char lock[320];
    snprintf(lock, sizeof lock, "%s-lock", co->ledger_path);
    unlink(lock);
    return sf_fsync_dir(co->cfg.output_dir, err);
}

/* A coordinator with the run's state loaded (config, dirs, jobs, the
 * output dir's lock, the ledger, the gate, recovery), not yet serving; with
 * `rebuild` the old ledger is moved aside first, so one is built from the
 * shards. *out is set even on error (close it). */
static int open_run(const sf_run_config *cfg, const sf_coord_opts *opts, sf_ledger_rebuild *rebuild,
                    sf_coordinator **out, sf_err *err) {
    *out = NULL;
    if (sodium_init() < 0)
        return sf_err_set(err, SF_EIO, "libsodium failed to initialise");
    sf_coordinator *co = calloc(1, sizeof *co);
    if (!co)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    co->lock_fd = -1;
    pthread_mutex_init(&co->snap_lock, NULL);
    *out = co;
    int rc = open_config(co, cfg, opts, err);
    if (rc == SF_OK)
        rc = open_dirs(co, err);
    if (rc == SF_OK)
        rc = open_jobs(co, err);
    if (rc == SF_OK)
        rc = open_lock(co, err);
    if (rc == SF_OK && rebuild)
        rc = move_ledger_aside(co, rebuild, err);
    if (rc == SF_OK)
        rc = open_ledger(co, err);
    if (rc == SF_OK)
        rc = gate_open(co, err);
    if (rc == SF_OK)
        rc = co_open_recover(co, err);
    return rc;
}

/* Whether copies of one job can differ though every worker is honest:
 * a network evaluated by the cuda backend, which is not bit-identical
 * (cuBLAS may pick algorithms by batch shape; docs/model.md "Backends").
 * Audits compare copies byte for byte, so they are off then. */
static int copies_may_differ(const sf_run_config *cfg) {
    if (strcmp(cfg->evald.backend, "cuda"))
        return 0;
    int net = !strcmp(cfg->search.evaluator, "net");
    if (!strcmp(cfg->kind, "gate"))
        for (int side = 0; side < 2; side++)
            net |= !strcmp(sf_config_gate_side(cfg, side)->evaluator, "net");
    return net;
}

int sf_coordinator_open(const sf_run_config *cfg, const sf_coord_opts *opts, sf_coordinator **out,
                        sf_err *err) {
    *out = NULL;
    sf_coordinator *co;
    const char *bind = opts && opts->bind ? opts->bind : cfg->coordinator.endpoint;
    int port = opts ? opts->metrics_port : (int)cfg->coordinator.metrics_port;
    int rc = open_run(cfg, opts, NULL, &co, err);
    if (rc == SF_OK && copies_may_differ(cfg) &&
        cfg->security.audit_fraction + cfg->security.audit_first_jobs > 0) {
        co->audits_off = 1;
        sf_log(co->log, co->log_ctx,
               "coordinator: audits are off: the cuda backend is not bit-identical, so honest "
               "copies of a job differ (docs/operator.md \"Audits\")");
    }
    if (rc == SF_OK)
        rc = gate_advance(co, err);
    if (rc == SF_OK)
        rc = open_security(co, bind, err);
    if (rc == SF_OK)
        rc = open_router(co, bind, err);
    if (rc == SF_OK)
        rc = metrics_start(co, port, err);
    if (rc < 0) {
        if (co)
            sf_coordinator_close(co);
        return rc;
    }
    co->started_ns = sf_now_ns();
    metrics_publish(co);
    *out = co;
    return SF_OK;
}

int sf_coordinator_rebuild_ledger(const sf_run_config *cfg, const sf_coord_opts *opts,
                                  sf_ledger_rebuild *rep, sf_err *err) {
    memset(rep, 0, sizeof *rep);
    sf_coordinator *co;
    int rc = open_run(cfg, opts, rep, &co, err);
    if (co) {
        rep->jobs_total = co->njobs;
        rep->jobs_done = co->st.jobs_done;
        sf_coordinator_close(co);
    }
    return rc;
}

const char *sf_coordinator_endpoint(const sf_coordinator *co) {
    return co->endpoint;
}

int sf_coordinator_metrics_port(const sf_coordinator *co) {
    return sf_metrics_http_port(co->http);
}

const char *sf_coordinator_metrics_url(const sf_coordinator *co) {
    return sf_metrics_http_url(co->http);
}

void sf_coordinator_close(sf_coordinator *co) {
    if (!co)
        return;
    metrics_stop(co);
    for (int i = 0; i < co->nworkers; i++)
        co_upload_discard(&co->workers[i].up);
    for (int i = 0; i < co->nreplies; i++)
        free(co->replies[i].bytes);
    if (co->router)
        zmq_close(co->router);
    sf_zsec_server_close(co->zsec);
    if (co->zctx)
        zmq_ctx_term(co->zctx);
    if (co->env) {
        sf_err e = {0};
        ledger_commit(co, &e);
        ledger_close(co);
    }
    if (co->lock_fd >= 0)
        close(co->lock_fd); /* releases the flock */
    pthread_mutex_destroy(&co->snap_lock);
    free(co->replies);
    free(co->workers);
    free(co->widx);
    for (uint64_t i = 0; co->jobs && i < co->njobs; i++)
        free(co->jobs[i].aud);
    free(co->jobs);
    free(co->queue);
    free(co->dirty);
    free(co->leased);
    free(co->audits);
    free(co->failing);
    free(co->idents);
    free(co->models);
    free(co->cfg_msg);
    gate_close(co);
    free(co);
}
