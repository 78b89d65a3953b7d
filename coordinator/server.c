/*
 * server.c — the coordinator's ROUTER loop: read, dispatch, expire, commit,
 * reply.
 *
 * One step (sf_coordinator_step): poll, read every waiting message (each
 * handler may queue replies), expire leases of dead or late workers, commit
 * the ledger once for the whole step (synced when a job became done), then
 * send the queued replies. Replies therefore never promise what the ledger
 * has not recorded.
 *
 * The handlers live by concern: lease.c (Hello, job requests, heartbeats,
 * failure reports), intake.c (shard uploads), trainer.c (the trainers'
 * shard listing and fetches), status.c; the tables they share in jobs.c,
 * the limits per worker and per key in limits.c, open and recovery in
 * open.c and recovery.c.
 */

#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "coordinator/internal.h"

#define MAX_MSGS_PER_STEP 4096
/* A step stops reading requests once its queued replies hold this many
 * bytes (ShardData replies are up to SF_FLEET_CHUNK each), so a flood of fetches
 * cannot make one step buffer gigabytes; the rest wait in ZeroMQ's queue. */
#define MAX_REPLY_BYTES_PER_STEP (16u << 20)

void co_queue_reply(sf_coordinator *co, const uint8_t *ident, size_t ident_len,
                    Spirefleet__Envelope *env) {
    uint8_t *bytes;
    size_t len;
    if (sf_wire_encode(env, &bytes, &len) < 0)
        return;
    if (co_room_for_one((void **)&co->replies, co->nreplies, &co->cap_replies, sizeof *co->replies,
                        64) < 0) {
        free(bytes);
        return;
    }
    reply *r = &co->replies[co->nreplies++];
    co->reply_bytes += len;
    r->worker = -1;
    memcpy(r->ident, ident, ident_len);
    r->ident_len = ident_len;
    r->bytes = bytes;
    r->len = len;
}

static void flush_replies(sf_coordinator *co) {
    for (int i = 0; i < co->nreplies; i++) {
        reply *r = &co->replies[i];
        /* ROUTER_MANDATORY is off: a reply to a vanished peer is dropped. */
        zmq_send(co->router, r->ident, r->ident_len, ZMQ_SNDMORE | ZMQ_DONTWAIT);
        zmq_send(co->router, r->bytes, r->len, ZMQ_DONTWAIT);
        free(r->bytes);
    }
    co->nreplies = 0;
    co->reply_bytes = 0;
}

void co_reply_error(sf_coordinator *co, const uint8_t *ident, size_t len, int code,
                    const char *msg) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ErrorReply e = SPIREFLEET__ERROR_REPLY__INIT;
    e.code = code;
    e.message = (char *)msg;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_ERROR;
    env.error = &e;
    co_queue_reply(co, ident, len, &env);
}

/* A Refusal to the peer `ident`: why it gets nothing (sanitised text). */
void co_refuse(sf_coordinator *co, const uint8_t *ident, size_t len, const char *why) {
    co_note_error(co, "run", "refused", why);
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Refusal r = SPIREFLEET__REFUSAL__INIT;
    r.reason = (char *)why;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_REFUSAL;
    env.refusal = &r;
    co_queue_reply(co, ident, len, &env);
}

static void on_stop(sf_coordinator *co, const uint8_t *ident, size_t len, int role) {
    if (role != SF_ZSEC_OPERATOR) {
        co->st.auth_refused++;
        sf_log(co->log, co->log_ctx,
               "coordinator: refused a Stop from a key that is not an "
               "operator's");
        co_reply_error(co, ident, len, SF_ESTATE, "Stop needs an operator key (<keys>/operators)");
        return;
    }
    if (!co->stopping)
        sf_log(co->log, co->log_ctx, "coordinator: stop requested; finishing");
    co->stopping = 1;
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Stop s = SPIREFLEET__STOP__INIT;
    s.reason = (char *)"stopping";
    env.body_case = SPIREFLEET__ENVELOPE__BODY_STOP;
    env.stop = &s;
    co_queue_reply(co, ident, len, &env);
}

static void on_quarantine(sf_coordinator *co, const uint8_t *ident, size_t len,
                          const Spirefleet__Quarantine *q) {
    co_quarantine_report rep;
    sf_err e = {0};
    int rc = co_quarantine_key(co, q->key_id, q->since_unix, "an operator", &rep, &e);
    if (rc < 0) {
        co_reply_error(co, ident, len, rc, e.msg);
        return;
    }
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__QuarantineReply r = SPIREFLEET__QUARANTINE_REPLY__INIT;
    r.key_id = (char *)q->key_id;
    r.shards = rep.shards;
    r.jobs_reissued = rep.jobs;
    r.workers_alive = rep.workers_alive;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_QUARANTINE_REPLY;
    env.quarantine_reply = &r;
    co_queue_reply(co, ident, len, &env);
}

static void handle(sf_coordinator *co, const uint8_t *ident, size_t ilen, const uint8_t *data,
                   size_t dlen, int role, const char *key) {
    Spirefleet__Envelope *env = NULL;
    sf_err err = {0};
    int rc = sf_wire_decode(data, dlen, &env, &err);
    if (rc < 0) {
        co->st.decode_errors++;
        co_reply_error(co, ident, ilen, rc, err.msg);
        return;
    }
    /* Messages anyone may send. */
    switch (env->body_case) {
    case SPIREFLEET__ENVELOPE__BODY_HELLO: co_on_hello(co, ident, ilen, env->hello, key); goto done;
    case SPIREFLEET__ENVELOPE__BODY_STATUS_REQUEST: co_on_status(co, ident, ilen); goto done;
    case SPIREFLEET__ENVELOPE__BODY_STOP: on_stop(co, ident, ilen, role); goto done;
    case SPIREFLEET__ENVELOPE__BODY_API_REQUEST:
        co_on_api_request(co, ident, ilen, env->api_request, role);
        goto done;
    case SPIREFLEET__ENVELOPE__BODY_QUARANTINE:
        if (role != SF_ZSEC_OPERATOR) {
            co->st.auth_refused++;
            sf_log(co->log, co->log_ctx,
                   "coordinator: refused a Quarantine from a key that is not an operator's");
            co_reply_error(co, ident, ilen, SF_ESTATE,
                           "Quarantine needs an operator key (<keys>/operators)");
        } else {
            on_quarantine(co, ident, ilen, env->quarantine);
        }
        goto done;
    case SPIREFLEET__ENVELOPE__BODY_SHARD_LIST_REQUEST:
        co_on_shard_list(co, ident, ilen);
        goto done;
    case SPIREFLEET__ENVELOPE__BODY_SHARD_FETCH:
        co_on_shard_fetch(co, ident, ilen, env->shard_fetch);
        goto done;
    default: break;
    }
    /* Messages only a worker that said Hello may send. */
    int wi = co_worker_find(co, ident, ilen);
    /* a worker that went dead (or said Goodbye) comes back through Hello,
     * which a run at coordinator.max_workers refuses: its heartbeats alone
     * do not take a place */
    uint32_t most = co->cfg.coordinator.max_workers;
    if (wi < 0 || !co->workers[wi].hello ||
        (most && !co->workers[wi].alive && co_workers_admitted(co) >= most)) {
        co->st.protocol_errors++;
        co_reply_error(co, ident, ilen, SF_ESTATE, "unknown worker: send Hello first");
        goto done;
    }
    cworker *w = &co->workers[wi];
    if (strcmp(w->key, key)) {
        /* another key under this worker's routing id (ZMQ_ROUTING_ID can
         * be chosen by a client): nothing it says counts */
        co->st.auth_refused++;
        co_reply_error(co, ident, ilen, SF_ESTATE, "this connection's key is not the worker's");
        goto done;
    }
    w->last_seen = sf_now_ns();
    co_worker_set_alive(co, wi, 1);
    switch (env->body_case) {
    case SPIREFLEET__ENVELOPE__BODY_JOB_REQUEST: co_on_job_request(co, wi, env->job_request); break;
    case SPIREFLEET__ENVELOPE__BODY_HEARTBEAT: co_on_heartbeat(co, wi, env->heartbeat); break;
    case SPIREFLEET__ENVELOPE__BODY_PROGRESS: co_on_progress(co, wi, env->progress); break;
    case SPIREFLEET__ENVELOPE__BODY_SHARD_OFFER: co_on_shard_offer(co, wi, env->shard_offer); break;
    case SPIREFLEET__ENVELOPE__BODY_SHARD_CHUNK: co_on_shard_chunk(co, wi, env->shard_chunk); break;
    case SPIREFLEET__ENVELOPE__BODY_JOB_FAILED: co_on_job_failed(co, wi, env->job_failed); break;
    case SPIREFLEET__ENVELOPE__BODY_GOODBYE: co_on_goodbye(co, wi, env->goodbye); break;
    default:
        co->st.protocol_errors++;
        co_reply_error(co, ident, ilen, SF_ESTATE, "unexpected message for a coordinator");
        break;
    }
done:
    sf_wire_free(env);
}

static void expire(sf_coordinator *co) {
    uint64_t now = sf_now_ns();
    if (now - co->last_expire < 50 * CO_NS_PER_MS)
        return;
    co->last_expire = now;
    uint64_t silent = (uint64_t)co->cfg.coordinator.heartbeat_ms *
                      co->cfg.coordinator.heartbeat_liveness * CO_NS_PER_MS;
    for (int i = 0; i < co->nworkers; i++)
        if (co->workers[i].alive && now - co->workers[i].last_seen > silent)
            co_worker_dead(co, i);
    for (uint64_t k = co->n_leased; k-- > 0;) { /* release_job swaps from the end */
        cjob *j = &co->jobs[co->leased[k] - 1];
        if (now > j->deadline)
            co_release_job(co, j, 1);
    }
    audit_expire(co, now, -1);
}

/* A step's reading: one waiting request received (at most three frames
 * kept), its sender's key checked before a byte of it is decoded, and
 * handled. 1; 0 when nothing waits; or the error that stops the
 * coordinator (the ZAP handler died: nothing may be let in). */
static int read_one(sf_coordinator *co, sf_err *err) {
    zmq_msg_t parts[3];
    int nparts = 0, more = 1, got = 0;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, co->router, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            break;
        }
        got = 1;
        more = zmq_msg_more(&m);
        if (nparts < 3)
            parts[nparts++] = m;
        else
            zmq_msg_close(&m);
    }
    if (!got)
        return 0;
    /* who sent it (the key its connection authenticated with), before
     * a byte of it is decoded */
    char key[SF_ZSEC_KEY_LEN + 1];
    int role = sf_zsec_peer(co->zsec, &parts[nparts - 1], key, err);
    if (role < 0) {
        for (int i = 0; i < nparts; i++)
            zmq_msg_close(&parts[i]);
        return role;
    }
    if (role == SF_ZSEC_REFUSED) {
        co->st.auth_refused++;
        if (zmq_msg_size(&parts[0]) <= 255)
            co_reply_error(co, zmq_msg_data(&parts[0]), zmq_msg_size(&parts[0]), SF_ESTATE,
                           "this key is no longer allowed");
    } else if (nparts == 2 && zmq_msg_size(&parts[0]) <= 255) {
        /* [identity][body]; anything else is a framing error */
        handle(co, zmq_msg_data(&parts[0]), zmq_msg_size(&parts[0]), zmq_msg_data(&parts[1]),
               zmq_msg_size(&parts[1]), role, key);
    } else {
        co->st.decode_errors++;
        if (nparts >= 1 && zmq_msg_size(&parts[0]) <= 255)
            co_reply_error(co, zmq_msg_data(&parts[0]), zmq_msg_size(&parts[0]), SF_EFORMAT,
                           "expected exactly one message frame");
    }
    for (int i = 0; i < nparts; i++)
        zmq_msg_close(&parts[i]);
    return 1;
}

/* The run just became complete: logged, and the idle workers waiting on a
 * Wait are told now. */
static void announce_complete(sf_coordinator *co) {
    co->complete_ns = sf_now_ns();
    if (gate_decided(co) && co->st.jobs_done < co->njobs) {
        /* the test crossed a bound: the jobs left were never played */
        sf_coord_status st = {0};
        char outcome[200];
        gate_status(co, &st);
        sf_log(co->log, co->log_ctx,
               "coordinator: run %s complete: the gate %s; %llu of %llu jobs played", co->cfg.name,
               sf_coord_gate_outcome(&st, outcome, sizeof outcome),
               (unsigned long long)co->st.jobs_done, (unsigned long long)co->njobs);
    } else {
        sf_log(co->log, co->log_ctx, "coordinator: run %s complete: %llu jobs, %llu labels",
               co->cfg.name, (unsigned long long)co->njobs, (unsigned long long)co->st.labels);
    }
    for (int i = 0; i < co->nworkers; i++) {
        cworker *w = &co->workers[i];
        if (w->alive && !w->told_complete)
            co_tell_complete(co, w);
    }
}

int sf_coordinator_step(sf_coordinator *co, int timeout_ms, sf_err *err) {
    zmq_pollitem_t item = {co->router, 0, ZMQ_POLLIN, 0};
    zmq_poll(&item, 1, timeout_ms);
    /* a dead ZAP handler lets any CURVE key shake hands: stop, whether or
     * not anything arrived */
    int rc = sf_zsec_server_check(co->zsec, err);
    if (rc < 0)
        return rc;
    for (int n = 0; n < MAX_MSGS_PER_STEP && co->reply_bytes < MAX_REPLY_BYTES_PER_STEP; n++) {
        rc = read_one(co, err);
        if (rc < 0)
            return rc;
        if (rc == 0)
            break;
    }
    expire(co);
    rc = ledger_commit(co, err);
    if (rc == SF_OK) /* after the commit: the verdict reads only durable shards */
        rc = gate_advance(co, err);
    if (rc < 0)
        return rc;
    if (co_all_done(co) && !co->complete_ns)
        announce_complete(co);
    flush_replies(co); /* only now: replies never promise what the ledger has not recorded */
    uint64_t now = sf_now_ns();
    if (now - co->last_publish > 250 * CO_NS_PER_MS) {
        metrics_publish(co);
        co->last_publish = now;
    }
    return SF_OK;
}

int sf_coordinator_serve(sf_coordinator *co, const volatile sig_atomic_t *stop, sf_err *err) {
    while (!(stop && *stop) && !co->stopping) {
        int rc = sf_coordinator_step(co, 100, err);
        if (rc < 0)
            return rc;
        if (co->exit_when_done && co->complete_ns) {
            /* linger until every live worker has heard RunComplete, or for
             * two heartbeat periods */
            int waiting = 0;
            for (int i = 0; i < co->nworkers; i++)
                waiting |= co->workers[i].alive && !co->workers[i].told_complete;
            uint64_t grace = 2ull * co->cfg.coordinator.heartbeat_ms * CO_NS_PER_MS;
            if (!waiting || sf_now_ns() - co->complete_ns > grace)
                break;
        }
    }
    /* a last round so that Stop and RunComplete replies go out */
    return sf_coordinator_step(co, 0, err);
}
