/*
 * internal.h — the coordinator's inside: in-memory job and worker tables,
 * the LMDB ledger, the metrics server. For coordinator sources and their
 * white-box tests only.
 */
#ifndef SF_COORDINATOR_INTERNAL_H
#define SF_COORDINATOR_INTERNAL_H

#include <lmdb.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>

#include "common/metrics_http.h"
#include "common/sha256.h"
#include "common/zsec.h"
#include "coordinator/coordinator.h"
#include "gate/stats.h"
#include "shard/shard.h"

#define CO_NS_PER_MS           1000000ull
#define CO_NS_PER_S            1000000000ull
#define CO_WORKER_ID_MAX       64
#define CO_MAX_UPLOAD_BYTES    (4ull << 30) /* a shard larger than this is refused */
#define CO_MAX_FAILURES        3 /* a job that failed on this many workers is not issued again */
#define CO_MAX_WORKER_FAILURES 5 /* a worker reporting this many failures gets no more leases */
/* Leases one worker holds at once: the job it plays and the one whose shard
 * it is still uploading (worker/client.c overlaps the two). More is a
 * client hoarding jobs: it waits. */
#define CO_MAX_LEASES_PER_WORKER 2

enum { JS_PENDING = 0, JS_LEASED = 1, JS_DONE = 2 };

typedef struct cjob {
    uint64_t id;
    uint64_t seed_start;
    uint32_t seed_count;
    uint8_t state;    /* JS_*                                               */
    uint8_t dirty;    /* changed since the last ledger commit               */
    uint32_t attempt; /* leases granted so far                              */
    /* failure reports (in memory): the first CO_MAX_FAILURES distinct
     * worker slots and distinct identities (co_ident) that reported it;
     * a job is failed out when co_job_failed_out() says so */
    uint32_t failures;              /* distinct workers                    */
    int failed_by[CO_MAX_FAILURES]; /* their worker slots                  */
    uint32_t failed_idents;         /* distinct identities                 */
    int failed_ident[CO_MAX_FAILURES];
    int quarantined;    /* failed out and said so in the log (co_job_failed_out) */
    uint8_t queued;     /* in the pending queue (co_queue_push/co_queue_pop)     */
    int worker;         /* index in the worker table while leased, else -1    */
    uint64_t deadline;  /* lease deadline, monotonic ns                       */
    uint64_t lease_pos; /* index in the coordinator's leased[] while leased   */
    char worker_id[CO_WORKER_ID_MAX];
    uint32_t model; /* the model bound at the first lease: co_job_model(); 0: not yet */
    int maker;      /* identity (co_ident) that stored its shard in this process; -1: unknown */
    /* done (its shard's name is co_job_shard's: the run's name for it) */
    char content_digest[65];
    char file_sha256[65];
    uint64_t records, bytes;
    uint64_t fights, simulations, fallbacks, wins;
    uint64_t turn_limits; /* fights that ended at the turn cap (verified shard) */
    uint64_t leased_ns;   /* when the current lease began (monotonic; not persisted:
                             a lease restored at open counts from the open)   */
    /* progress while leased (not persisted) */
    uint64_t prog_fights, prog_labels;
    /* audit by re-execution (audit.c; the stage, who[] and digest[] are in
     * the ledger, so an audit survives a restart; the auditor playing it
     * does not) */
    uint8_t audit_stage;    /* 0 none; 1, 2: waiting for the 2nd, 3rd copy;
                               3: three different copies, waiting for an
                               operator (sf-fleet quarantine)               */
    int audit_worker;       /* worker slot playing it now, -1: none          */
    struct cjob_audit *aud; /* owned; set while audit_stage > 0 (and kept
                               after, until the job is freed)           */
} cjob;

/* A job's audit copies, apart from the job table: few jobs are audited, and
 * every job of a run of millions has an entry in the table. who[k]: the
 * identity (key id, or worker id without CURVE) of the stored shard's maker
 * (k = 0) and of each auditor; digest[k] what each one's copy held. */
typedef struct cjob_audit {
    uint64_t deadline; /* the auditor's lease, monotonic ns */
    char who[3][CO_WORKER_ID_MAX];
    char digest[3][65];
} cjob_audit;

typedef struct upload {
    int active;
    uint64_t job_id;
    uint64_t size, received;
    char file_sha256[65];
    char content_digest[65];
    char path[1024];
    FILE *f;
    sf_sha256_ctx *sha; /* of the bytes received (owned; NULL when none) */
} upload;

/* An identity: a CURVE key (its key id), or without CURVE a worker id.
 * Audits, failure counts and lease shares are per identity, so one key
 * gains nothing by using many worker ids. In memory only: a restarted
 * coordinator starts every key afresh (each key's first jobs are audited
 * again). */
typedef struct co_ident {
    char id[CO_WORKER_ID_MAX];
    uint32_t jobs_stored;  /* shards of its workers stored in this process   */
    uint32_t early_audits; /* audits opened on its first stored jobs           */
    uint32_t failures;     /* failure reports from its workers                 */
    uint32_t alive;        /* its workers alive now                            */
    int failing;           /* failures - jobs_stored reached SF_COORD_MAX_KEY_FAILURES */
    int quarantined;       /* by sf-fleet quarantine or an audit               */
} co_ident;

typedef struct cworker {
    uint8_t ident[256]; /* ROUTER routing id */
    size_t ident_len;
    char worker_id[CO_WORKER_ID_MAX];
    char host[64];
    /* the authenticated CURVE key its id is bound to (the first that said
     * Hello with this id; "" in security mode none) and its id */
    char key[SF_ZSEC_KEY_LEN + 1];
    char key_id[SF_ZSEC_ID_LEN + 1];
    int who; /* index in the coordinator's identities (co_ident); -1 before Hello */
    uint32_t threads;
    uint32_t pid;          /* of the process behind the last Hello               */
    uint32_t replaced_pid; /* the process a newer one under this id took over */
    uint64_t last_seen;    /* monotonic ns */
    int alive;
    int hello; /* said Hello                                   */
    int told_complete;
    uint32_t failures; /* failure reports for jobs it held                  */
    int quarantined;   /* reached CO_MAX_WORKER_FAILURES: no more leases     */
    char last_failure[160];
    /* what it waits for before it takes a job (its last Heartbeat.waiting,
     * printable; "" when it plays or is ready): status shows it */
    char waiting[160];
    /* the dashboard's figures (since this coordinator started): shards it
     * stored, their label records, and when it first said Hello */
    uint64_t jobs_done, labels, first_hello_ns;
    upload up; /* at most one upload in flight per worker      */
} cworker;

/* A reply waiting for the ledger commit of this step. */
typedef struct reply {
    int worker; /* -1: use ident */
    uint8_t ident[256];
    size_t ident_len;
    uint8_t *bytes;
    size_t len;
} reply;

typedef struct co_gate co_gate;
typedef struct co_dash co_dash;

/* What a StatusReply built by status_reply_fill points into: it lives as
 * long as the reply is used. */
typedef struct status_scratch {
    char waiting_reason[160];
    char gate_decision[16];
    Spirefleet__SlowJob slow_msgs[SF_COORD_SLOW_SHOWN], *slow_ptrs[SF_COORD_SLOW_SHOWN];
    char slow_ids[SF_COORD_SLOW_SHOWN][64];
    Spirefleet__UndecidedAudit aud_msgs[SF_COORD_AUDITS_SHOWN], *aud_ptrs[SF_COORD_AUDITS_SHOWN];
    char aud_who[SF_COORD_AUDITS_SHOWN][3][64];
    char *aud_who_ptrs[SF_COORD_AUDITS_SHOWN][3];
} status_scratch;

struct sf_coordinator {
    sf_run_config cfg;
    char digest[65];
    sf_config_scratch *cfg_msg; /* the config as a RunConfig, built once (Welcome, Job) */
    Spirefleet__RunConfig *run_msg;
    char endpoint[512];
    char shards_dir[300], incoming_dir[300], ledger_path[300];
    char rejected_dir[300]; /* shards set aside at restart, each with its reason */
    int exit_when_done;

    void *zctx, *router;
    sf_zsec_server *zsec; /* the ZAP handler and key lists; NULL in mode none */

    MDB_env *env;
    MDB_dbi dbi_meta, dbi_jobs;
    size_t map_size;
    int need_sync;
    unsigned probe_seconds; /* ledger_open's probe time limit; 0: the default */

    cjob *jobs;
    uint64_t njobs;
    /* Job records in the ledger: njobs once creation is done; less while a
     * new run's jobs are being created in chunks (ledger_create_jobs). */
    uint64_t jobs_created;
    uint32_t create_chunk;             /* sf_coord_opts.create_chunk or the default */
    const volatile sig_atomic_t *stop; /* sf_coord_opts.stop; NULL: never */

    uint64_t *leased;  /* ids of the jobs in JS_LEASED, unordered              */
    uint64_t n_leased; /* (done is st.jobs_done; pending is the rest)          */
    uint64_t *dirty;   /* ids of jobs changed since the last commit           */
    uint64_t ndirty;
    uint64_t last_expire, last_publish; /* monotonic ns of the last timer runs */
    uint64_t *queue;                    /* pending job ids, FIFO ring                  */
    uint64_t q_head, q_len;
    uint64_t *audits; /* ids of jobs with an audit open (audit.c), unordered */
    uint64_t n_audits;
    uint64_t *failing; /* ids of jobs with a failure report, unordered      */
    uint64_t n_failing;

    /* The models jobs are bound to ("rollout" or hex), each kept once: a
     * job holds its index + 1 (cjob.model; co_job_model, co_job_set_model),
     * not 65 bytes of its own. */
    char (*models)[65];
    int n_models, cap_models;

    co_ident *idents; /* every identity that said Hello in this process    */
    int n_idents, cap_idents;
    int audits_off; /* copies of one job cannot be byte-identical here (a
                       network run on the cuda backend): no audit opens */

    cworker *workers;
    int nworkers, cap_workers;
    /* The workers by routing id (jobs.c): open addressing over worker
     * indexes, -1 empty, -2 deleted; widx_cap 0 means none (a failed
     * allocation), and co_worker_find then scans. */
    int *widx;
    uint32_t widx_cap, widx_used;
    int max_workers; /* sf_coord_opts.max_workers */

    reply *replies;
    int nreplies, cap_replies;
    size_t reply_bytes; /* queued since the last flush: bounds one step's memory */

    int stopping;
    sf_log_fn log; /* sf_coord_opts.log and its context */
    void *log_ctx;
    int lock_fd; /* flock on <output_dir>/coordinator.lock          */
    uint64_t started_ns, complete_ns;
    /* recent completions for the label rate and the SLOW rule: (time,
     * labels, seconds from lease to stored shard) ring */
    uint64_t done_t[256], done_labels[256];
    double done_secs[256];
    int done_head, done_n;
    uint64_t slow_after_ns; /* sf_coord_opts.slow_after_ms */

    sf_coord_status st;
    co_gate *gate;            /* gate runs only (gate.c); NULL otherwise */
    status_scratch status_sc; /* what a Status reply points into (status.c) */
    char champion[65];        /* model.champion: the champion last bound to a job */
    /* recent errors (co_note_error), a ring: the newest at errors_total - 1 */
    struct co_error {
        double unix_s;
        char who[64], what[48], detail[200];
    } errors[SF_COORD_ERRORS_KEPT];
    uint64_t errors_total;
    /* models.c: bundles served over HTTP (libmicrohttpd's thread; atomics) */
    uint64_t model_requests, model_bytes_served;
    char champion_why[SF_ERR_MSG_MAX]; /* why no champion could be bound, as logged */

    /* metrics */
    sf_metrics_http *http; /* NULL when off */
    pthread_mutex_t snap_lock;
    sf_coord_status snap;
    co_dash *dash; /* the dashboard's snapshots (dashboard.c); NULL while off */
};

/* gate.c: a gate run's verdict (docs/gate.md "A gate run"). gate_open
 * sets co->gate for run.kind gate (and makes <output_dir>/gate); the rest
 * are no-ops without it. */
int gate_open(sf_coordinator *co, sf_err *err);
void gate_close(sf_coordinator *co);
/* 0 when the manifest of job j's shard holds what a gate job must (no
 * records, one valid pair per seed of the job, in seed order); -1 with the
 * reason in `why` otherwise. Always 0 for a self-play run. */
int gate_check_manifest(const sf_coordinator *co, const cjob *j, const Spirefleet__ShardManifest *m,
                        char *why, size_t cap);
/* Fold the pairs of done jobs that extend the contiguous prefix and, once
 * the sequential test decides, write gate/pairs.jsonl and gate/verdict.json
 * (SF_EIO / SF_ENOMEM when they cannot be written: fatal, like the
 * ledger). Cheap when nothing changed. */
int gate_advance(sf_coordinator *co, sf_err *err);
/* 1 once the verdict is written: no job is issued after it. */
int gate_decided(const sf_coordinator *co);
/* Done job j goes back to pending (a quarantine): if its pairs were
 * folded and no verdict is written, the test is folded again from the
 * start. */
void gate_job_undone(sf_coordinator *co, const cjob *j);
/* The gate's fields of a status (gate, pairs, LLR, bounds, decision). */
void gate_status(const sf_coordinator *co, sf_coord_status *st);

/* A copy of a gate's folded pairs, in seed order, that another thread
 * reads (the dashboard). gate_copy_update brings `c` up to the pairs
 * folded now, copying only the new ones (loop thread); gate_copy_dup makes
 * an independent copy; both SF_OK or SF_ENOMEM (`c` unchanged). */
typedef struct gate_copy {
    sf_gate_pair *pairs;
    uint64_t *seeds;
    char (*enc)[SF_SHARD_GATE_ENCOUNTER_MAX];
    size_t n, cap;
} gate_copy;
int gate_copy_update(const sf_coordinator *co, gate_copy *c, sf_err *err);
int gate_copy_dup(const gate_copy *from, gate_copy *to, sf_err *err);
void gate_copy_free(gate_copy *c);
/* /api/gate (dashboard.h) from the pairs of `c`: a malloc'd string of
 * *len bytes, or NULL with *err (SF_ENOTFOUND: not a gate run; SF_ENOMEM).
 * Reads only what gate_open fixed, so any thread may call it. */
char *gate_document(const sf_coordinator *co, const gate_copy *c, int decided, size_t *len,
                    sf_err *err);

/* status.c: a StatusReply of the status `st`, pointing into `st`, `sc`
 * and co's config (which must outlive it). Any thread: it reads only what
 * never changes after open. */
void status_reply_fill(const sf_coordinator *co, const sf_coord_status *st, status_scratch *sc,
                       Spirefleet__StatusReply *r);

/* dashboard.c: the dashboard's routes (dashboard.h) and the snapshots
 * they read. dashboard_open allocates co->dash (SF_ENOMEM);
 * dashboard_publish copies the workers, the rate sample due and the new
 * gate pairs (the loop's thread, from metrics_publish); dashboard_routes
 * appends its routes to `routes` (room for SF_HTTP_MAX_ROUTES) and
 * returns how many there are now. */
int dashboard_open(sf_coordinator *co, sf_err *err);
void dashboard_close(sf_coordinator *co);
void dashboard_publish(sf_coordinator *co, const sf_coord_status *st);
int dashboard_routes(sf_coordinator *co, sf_http_route *routes, int n);

/* jobs.c: a done job back to pending (its shard no longer in shards/)
 * or a leased one released; counted out of the totals, queued, committed
 * with the step. */
void co_job_undo(sf_coordinator *co, cjob *j);

/* quarantine.c (docs/operator.md "Security"): remove a worker key's data.
 * Every done job whose stored shard's manifest names `key_id` (sealed at
 * or after since_unix; 0: any) has its shard listed in shards/QUARANTINE
 * and moved to <output_dir>/quarantined/, and goes back to pending; jobs
 * leased to workers with that key are released and those workers get no
 * more; the key is refused from now on (<output_dir>/quarantined-keys,
 * read again at start by co_quarantine_open). `who` names the reason in
 * the log ("an operator", "an audit"). SF_EINVAL for a malformed key id,
 * SF_EIO when the lists cannot be written. */
typedef struct co_quarantine_report {
    uint32_t shards, jobs;
    uint32_t workers_alive; /* connected workers left to play the jobs issued again */
} co_quarantine_report;
int co_quarantine_key(sf_coordinator *co, const char *key_id, int64_t since_unix, const char *who,
                      co_quarantine_report *rep, sf_err *err);
int co_quarantine_open(sf_coordinator *co, sf_err *err);

/* jobs.c: the identity of worker slot wi (co_ident), or NULL before
 * its Hello. */
co_ident *co_ident_of(sf_coordinator *co, int wi);
/* limits.c: identities that may still get jobs (neither quarantined nor
 * failing), with alive_only those with a worker alive now: audits and
 * lease shares need two of those. */
int co_usable_identities(const sf_coordinator *co, int alive_only);
/* jobs.c: done job j's stored copy does not hold up (`why`): the shard is moved
 * to rejected/ with the reason and the job goes back to pending. */
void co_job_replay(sf_coordinator *co, cjob *j, const char *why);

/* audit.c: a job's shard is byte-identical wherever it runs (docs/
 * architecture.md), so a fraction (security.audit_fraction) of done jobs
 * is played again by a worker of another identity and the content digests
 * compared; a mismatch goes to a third, and whoever disagrees with it is
 * quarantined (co_quarantine_key; without CURVE, the worker). */
/* The identity audits compare: the worker's key id, or its worker id. */
const char *audit_identity(const sf_coordinator *co, int wi);
/* Job j just became done, its shard from worker wi: maybe open an audit. */
void audit_on_done(sf_coordinator *co, cjob *j, int wi);
/* Two usable identities are there now: open each identity's early audits
 * (security.audit_first_jobs) on its jobs stored while it was alone. */
void audit_catch_up(sf_coordinator *co);
/* An audit worker wi may play now (its identity made no copy of it), or
 * NULL; leases it to wi. */
cjob *audit_take(sf_coordinator *co, int wi);
/* Whether wi's offer for done job j is the audit copy it was asked for. */
int audit_expects(const sf_coordinator *co, const cjob *j, int wi);
/* wi's audit copy of j verified with content digest `digest` (hex) and
 * `fallbacks` evaluator fallbacks (its manifest's): a copy with fallbacks
 * is not compared (its labels depend on a timeout), and a stored copy with
 * fallbacks that a clean copy contradicts is played again. */
void audit_result(sf_coordinator *co, cjob *j, int wi, const char *digest, uint64_t fallbacks);
/* Heartbeats renew an audit's lease; dead workers and late ones lose it. */
void audit_extend(sf_coordinator *co, cjob *j, int wi);
void audit_expire(sf_coordinator *co, uint64_t now, int dead_worker);
/* j leaves the done state (quarantined): its audit, if any, is dropped. */
void audit_cancel(sf_coordinator *co, cjob *j);
/* Identity `who` was quarantined: its copies leave every open audit (an
 * audit whose stored copy it made was cancelled with the job); an audit
 * left with only the stored copy asks for another, one left with two
 * differing copies asks for a third. */
void audit_forget(sf_coordinator *co, const char *who);
/* Open audits with differing copies (stage 2 or 3), for a status: the
 * first `cap` of them into out[] (job id, stage, the copies' makers);
 * returns how many there are. */
int audit_undecided(const sf_coordinator *co, struct sf_coord_audit *out, int cap);
/* Ledger load: done job j had an audit at `stage` (1, 2, 3) with its
 * audit_who / audit_digest filled; it is open again, waiting for an
 * auditor. */
void audit_restore(sf_coordinator *co, cjob *j, uint8_t stage);

/* jobs.c: j changed; the next ledger commit writes it. */
void job_touch(sf_coordinator *co, cjob *j);

/* jobs.c: the tables. */
/* Room for element n of the array *v (capacity *cap elements of `size`
 * bytes): doubled when full, `first` elements at first. 0, or -1 without
 * memory (*v and *cap unchanged). */
int co_room_for_one(void **v, int n, int *cap, size_t size, int first);
/* The set of leased jobs (co->leased), O(1) each way. */
void co_leased_add(sf_coordinator *co, cjob *j);
void co_leased_remove(sf_coordinator *co, cjob *j);
/* The pending queue: push (once per job), pop (the next job that may be
 * issued; 0: none), and give back the id just popped. */
void co_queue_push(sf_coordinator *co, uint64_t id);
uint64_t co_queue_pop(sf_coordinator *co);
void co_queue_unpop(sf_coordinator *co, uint64_t id);
/* The index of identity `id` in co->idents, added if new; -1 without
 * memory. */
int co_ident_index(sf_coordinator *co, const char *id);
/* The model job j is bound to ("rollout" or 64 hex digits; "" before its
 * first lease), and binding it (`model` "": unbound); -1 without memory
 * or for a name longer than 64 bytes. */
const char *co_job_model(const sf_coordinator *co, const cjob *j);
int co_job_set_model(sf_coordinator *co, cjob *j, const char *model);
/* The stored shard's file name of `job`. */
void co_shard_name(const sf_coordinator *co, uint64_t job, char *out, size_t cap);
/* Job j's stored shard's name in out (co_shard_name) when j is done, else
 * ""; returns out. Not kept per job: every job of a run of millions has an
 * entry in the table, and the name follows from the run and the job. */
#define CO_SHARD_NAME_MAX 96
const char *co_job_shard(const sf_coordinator *co, const cjob *j, char out[CO_SHARD_NAME_MAX]);
/* Worker slots: the one of routing id `ident` (-1: none; of two with the
 * same id, the lower index), found through an index, O(1) per message; a
 * new one (-1 without memory); worker wi's routing id changed (the only way
 * to change it: the index follows); liveness (kept per identity too); a
 * dead worker's upload and leases go. */
int co_worker_find(sf_coordinator *co, const uint8_t *ident, size_t len);
int co_worker_add(sf_coordinator *co, const uint8_t *ident, size_t len);
void co_worker_set_ident(sf_coordinator *co, int wi, const uint8_t *ident, size_t len);
void co_worker_set_alive(sf_coordinator *co, int wi, int alive);
void co_worker_dead(sf_coordinator *co, int wi);
/* Drop an upload in flight (its .part file too). */
void co_upload_discard(upload *u);
/* Done job j pending again: its shard and totals forgotten, written by
 * the next commit, synced. */
void co_job_pending(sf_coordinator *co, cjob *j);
/* Add a done job to the run's totals. */
void co_count_done(sf_coordinator *co, const cjob *j);
/* A leased job back to the queue (`expired`: counted as a lease expiry). */
void co_release_job(sf_coordinator *co, cjob *j, int expired);
/* Whether leased job j is worker wi's (also restored from the ledger under
 * its worker id, not claimed yet); co_claim_lease then makes it wi's slot's. */
int co_lease_is(const sf_coordinator *co, const cjob *j, int wi);
int co_claim_lease(sf_coordinator *co, cjob *j, int wi);
/* Every job done (or a gate's verdict written) and no audit open. */
int co_all_done(const sf_coordinator *co);

/* limits.c: limits per worker and per key. */
/* Whether job j has failed out of the run (not issued again). */
int co_job_failed_out(const sf_coordinator *co, const cjob *j);
/* Failed-out pending jobs that another identity may now play go back into
 * the queue. */
void co_requeue_failing(sf_coordinator *co);
/* The leases worker wi holds; whether its identity may take one more. */
uint32_t co_leases_held(const sf_coordinator *co, int wi);
int co_key_may_lease(const sf_coordinator *co, int wi);
/* Whether a Hello under a new worker id from `key` may join (0), or -1
 * with the reason in `why` (counted, the first one logged): the key's live
 * worker ids or the run's worker ids are at their most. */
int co_may_join(sf_coordinator *co, const char *key, char *why, size_t cap);
/* Fairness between runs (docs/operator.md): the live workers the run
 * counts against coordinator.max_workers (waiting ones too); and whether a
 * Hello for worker slot wi (-1: a worker id not seen yet) may be admitted
 * (0), or -1 with the reason in `why` ("run NAME is at its worker limit
 * (N, coordinator.max_workers)"; counted, the first one logged). A worker
 * alive now (one reconnecting) keeps its place; a dead one, or one that
 * said Goodbye, asks like a new one. */
uint32_t co_workers_admitted(const sf_coordinator *co);
int co_may_admit(sf_coordinator *co, int wi, char *why, size_t cap);
/* A Goodbye from worker wi: it leaves the run (its place is free at once;
 * a lease it still held is released, counted as an expiry). */
void co_on_goodbye(sf_coordinator *co, int wi, const Spirefleet__Goodbye *g);
/* A failure report for leased job j from its holder wi (`why`: its
 * printable reason), counted against the worker, its key and the job. */
void co_count_failure(sf_coordinator *co, int wi, cjob *j, const char *why);

/* server.c: replies, queued until the step's ledger commit. */
void co_queue_reply(sf_coordinator *co, const uint8_t *ident, size_t ident_len,
                    Spirefleet__Envelope *env);
void co_reply_error(sf_coordinator *co, const uint8_t *ident, size_t len, int code,
                    const char *msg);
/* A Refusal to the peer `ident`: why it gets nothing (sanitised text). */
void co_refuse(sf_coordinator *co, const uint8_t *ident, size_t len, const char *why);

/* The handlers, by concern (server.c dispatches): lease.c ... */
void co_on_hello(sf_coordinator *co, const uint8_t *ident, size_t len, const Spirefleet__Hello *h,
                 const char *key);
void co_on_job_request(sf_coordinator *co, int wi, const Spirefleet__JobRequest *jr);

/* Keep an error for the dashboard's "Recent errors" (/api/errors): who
 * ("run", a worker or key id), what happened (a short static phrase) and
 * why (printable; cut to fit). The loop's thread only. */
void co_note_error(sf_coordinator *co, const char *who, const char *what, const char *detail);

/* metrics.c: an operator's ApiRequest: the dashboard document at its
 * path (coordinator/dashboard.h), answered as an ApiReply; a key that is
 * not an operator's gets an ErrorReply. */
void co_on_api_request(sf_coordinator *co, const uint8_t *ident, size_t len,
                       const Spirefleet__ApiRequest *q, int role);

/* models.c: GET /models/<sha256> (an sf_http_route_fn; ctx the
 * coordinator), and the model a followed run's job is bound to when `jr`
 * comes from a worker that fetches its models: the champion when it holds
 * it (or holds none of the run's yet), else the newest model bound before
 * that it does hold, counted in st.leases_on_previous_model. */
int co_models_route(void *ctx, const sf_http_request *req, sf_http_reply *rep);
const char *co_choose_model(sf_coordinator *co, const Spirefleet__JobRequest *jr,
                            const char *champion);
void co_on_heartbeat(sf_coordinator *co, int wi, const Spirefleet__Heartbeat *hb);
void co_on_progress(sf_coordinator *co, int wi, const Spirefleet__Progress *p);
void co_on_job_failed(sf_coordinator *co, int wi, const Spirefleet__JobFailed *f);
/* A RunComplete to w (w->told_complete set). */
void co_tell_complete(sf_coordinator *co, cworker *w);
/* ... intake.c ... */
void co_on_shard_offer(sf_coordinator *co, int wi, const Spirefleet__ShardOffer *o);
void co_on_shard_chunk(sf_coordinator *co, int wi, const Spirefleet__ShardChunk *c);
/* ... status.c ... */
void co_on_status(sf_coordinator *co, const uint8_t *ident, size_t len);
/* ... trainer.c. */
void co_on_shard_list(sf_coordinator *co, const uint8_t *ident, size_t len);
void co_on_shard_fetch(sf_coordinator *co, const uint8_t *ident, size_t len,
                       const Spirefleet__ShardFetch *f);

/* recovery.c: move shards/<name> into rejected/ with <name>.why saying
 * why (nothing stored is deleted). */
void co_set_aside(sf_coordinator *co, const char *name, const char *why);
/* sf_coordinator_open's recovery step (coordinator.h "Durability"). */
int co_open_recover(sf_coordinator *co, sf_err *err);

/* ledger.c */
/* Open co->ledger_path: an existing ledger is first loaded by a forked
 * child (a damaged file that would crash or hang LMDB is then SF_ECORRUPT
 * naming the file and the signal); a new one has its first pages reserved
 * (a full filesystem: SF_EIO with the OS reason). */
int ledger_open(sf_coordinator *co, sf_err *err);
/* The 16-byte BLAKE2b tag that ends every stored value: of the database
 * ('m' meta, 'j' jobs), the key and the value. */
void ledger_record_tag(char db, const void *key, size_t klen, const void *val, size_t vlen,
                       uint8_t tag[16]);
void ledger_close(sf_coordinator *co);
/* Load the run: returns 1 if a run was found (jobs loaded), 0 if the ledger
 * is new. SF_ECONFIG when the stored digest differs from co->digest;
 * SF_ECORRUPT naming the file and the record when a record's checksum does
 * not match, a record does not decode or does not fit its job, or a job's
 * record is missing; SF_EVERSION for a ledger without the format record. */
int ledger_load(sf_coordinator *co, sf_err *err);
/* A new ledger's run record (format, config, digest, job count, and no job
 * created yet), synced. */
int ledger_create_run(sf_coordinator *co, sf_err *err);
/* Create the jobs from co->jobs_created to co->njobs (pending), at most
 * co->create_chunk per transaction, each transaction also moving the
 * "created" record, and synced: killed at any moment, the ledger holds a
 * whole number of chunks and says how many jobs. Logs "creating jobs: N of
 * M" after the first chunk and then at most once a second when it takes
 * more than one. Between chunks *co->stop is read: SF_ESTATE once set. */
int ledger_create_jobs(sf_coordinator *co, sf_err *err);
/* Write every dirty job in one transaction; sync if co->need_sync. */
int ledger_commit(sf_coordinator *co, sf_err *err);
/* For backup.c, which reads a ledger copy with ledger.c's own steps: open
 * co->ledger_path with `flags` (1: the run's databases are there, 0: a
 * ledger never written, or an error); a meta record with its tag checked
 * (0 found, 1 absent, -1 damaged); a value's tag checked and cut off (0,
 * or -1 when it does not match). */
int ledger_env_open(sf_coordinator *co, unsigned flags, sf_err *err);
int ledger_get_meta(sf_coordinator *co, MDB_txn *txn, const char *key, MDB_val *v, sf_err *err);
int ledger_check_tagged(char db, const MDB_val *k, MDB_val *v);

/* metrics.c: serve /metrics on `port` (metrics_http.h) at co->endpoint's
 * address; SF_METRICS_OFF serves nothing. */
int metrics_start(sf_coordinator *co, int port, sf_err *err);
void metrics_stop(sf_coordinator *co);
void metrics_publish(sf_coordinator *co);
/* The Prometheus text exposition of a status snapshot (for tests). */
int metrics_render(const sf_coord_status *st, const char *run, char *buf, size_t cap);

#endif
