/*
 * coordinator.h — the fleet coordinator: a durable job ledger, leases, shard
 * intake, status and Prometheus metrics; plus the operator's client calls.
 *
 * What it does
 *   A run (fleet/config.h sf_run_config) is split into jobs of `seeds.job_size`
 *   consecutive seeds. The coordinator owns one ZeroMQ ROUTER; workers talk to
 *   it with fleet.proto envelopes (Hello -> Welcome, JobRequest -> Job / Wait /
 *   RunComplete, Heartbeat, Progress, ShardOffer / ShardChunk -> ShardAck,
 *   JobFailed); operators ask for Status and Stop; trainers list and fetch
 *   sealed shards (ShardListRequest / ShardFetch).
 *
 * Durability (docs/architecture.md invariants 1 and 2)
 *   The ledger is an LMDB file, `<output_dir>/ledger.lmdb`, holding the run's
 *   config and digest and every job: pending -> leased(worker, attempt) ->
 *   done(shard, content digest). A job is marked done only after its shard
 *   has been received whole (SHA-256 of the file checked), moved into
 *   `<output_dir>/shards/`, verified completely (sf_shard_verify: every page,
 *   every record, the content digest and the manifest's run, job and seeds)
 *   and synced, and the ledger commit that says so is synced before the
 *   worker is told. Lease grants are committed in groups without a sync: a
 *   lost grant only means the job is issued again, which is safe because a
 *   job's shard is deterministic and a result for a done job is dropped.
 *   Killed at any moment and restarted on the same output dir, the
 *   coordinator resumes from the ledger: leased jobs get a fresh lease
 *   period, a shard found in `shards/` whose job is not yet done is verified
 *   and adopted, half-received uploads are discarded. Restarting with a
 *   different config (another digest) is refused. Every ledger record
 *   carries a checksum and an existing ledger is read by a child process
 *   first (ledger.c), so a damaged ledger is an error naming the file, and
 *   sf_coordinator_rebuild_ledger() makes a new one from the shards. A new
 *   run's jobs are written in transactions of at most SF_COORD_CREATE_CHUNK
 *   jobs, each recording how many jobs exist so far (the ledger's "created"
 *   record): a coordinator stopped or killed while creating them goes on
 *   from there at its next open, never writing a job twice. A full
 *   disk is no failure: an upload that cannot be stored for lack of space
 *   (ENOSPC, EDQUOT) is answered retry_later and the worker keeps its shard.
 *
 * Security (common/zsec.h, docs/operator.md "Security")
 *   With security.mode curve (the default) the ROUTER is a CURVE server and
 *   a ZAP handler, bound on the coordinator's context before the ROUTER,
 *   admits only keys in <keys>/clients and <keys>/operators; a handshake
 *   with any other key fails before a message reaches the decoder. Every
 *   message is then checked against its connection's key: a revoked key's
 *   messages are refused, Stop needs an operator key, and a worker id is
 *   bound to the key that first said Hello with it (another key's Hello
 *   with that id, or its messages under that worker's routing id, are
 *   refused). With an empty security.keys the keys live in
 *   <output_dir>/keys, made at the first start (loopback runs only:
 *   fleet/config.h). /metrics binds loopback unless
 *   security.metrics_public.
 *
 * Untrusted input
 *   Only the holder of a job's lease may upload its shard (a lease restored
 *   from the ledger belongs to the worker id that held it); a worker id
 *   must be a plain name (sf_str_is_name) and every other string a peer
 *   sends is made printable (sf_str_printable) before a log line or a
 *   status shows it. Every frame is decoded with sf_wire_decode(). Garbage, wrong versions,
 *   bad framing and out-of-order messages are counted (decode_errors /
 *   protocol_errors), answered with an ErrorReply where a reply is possible,
 *   and never crash or block the loop.
 *
 * Threading
 *   One thread drives a coordinator (sf_coordinator_step / _serve). The
 *   metrics endpoint runs on libmicrohttpd's own thread and reads a snapshot
 *   under a mutex. Nothing here keeps global state.
 */
#ifndef SF_COORDINATOR_H
#define SF_COORDINATOR_H

#include <signal.h>
#include <stdint.h>

#include "common/common.h"
#include "fleet/config.h"
#include "fleet/wire.h"

typedef struct sf_coordinator sf_coordinator;

/* Options of sf_coordinator_open(); NULL options mean: bind and serve
 * metrics as the config says, log nothing. */
typedef struct sf_coord_opts {
    const char *bind; /* endpoint to bind; NULL: cfg->coordinator.endpoint      */
    /* /metrics (common/metrics_http.h): 0 off, 1..65535 that port,
     * SF_METRICS_ANY_PORT any free one, at the address the ROUTER is bound
     * to; sf-fleet passes coordinator.metrics_port unless --metrics-port. */
    int metrics_port;
    int exit_when_done; /* sf_coordinator_serve returns once every job is done
                           and the live workers were told (or a grace period)     */
    /* Where the coordinator's log lines go ("coordinator: job 3 failed on
     * w1: ...", adoptions, completion, stop): called from the thread that
     * opens and steps it, one line at a time (common.h). NULL: dropped. */
    sf_log_fn log;
    void *log_ctx;
    /* The most worker ids the run takes (a Hello under a new id past it is
     * refused): one listed key may say Hello under any number of ids, and
     * each keeps a slot. 0: SF_COORD_MAX_WORKERS. */
    int max_workers;
    /* A leased job is SLOW (status, /metrics) once it has run
     * SF_COORD_SLOW_FACTOR times the median of the last 256 completed
     * jobs, and at least this long. 0: SF_COORD_SLOW_AFTER_MS. */
    int slow_after_ms;
    /* Read between the ledger transactions that create a new run's jobs
     * (SF_COORD_CREATE_CHUNK jobs each): once non-zero, sf_coordinator_open
     * stops there and returns SF_ESTATE ("stopped while creating jobs: N of
     * M made"); what was written stays, and the next open goes on from it.
     * sf-fleet passes its SIGTERM/SIGINT flag. NULL: never stop. */
    const volatile sig_atomic_t *stop;
    /* Jobs per creation transaction; 0: SF_COORD_CREATE_CHUNK. */
    uint32_t create_chunk;
} sf_coord_opts;

/* Jobs one ledger transaction creates: bounds the memory of creation (LMDB
 * holds a transaction's dirty pages in memory, about 100 bytes a job) and
 * the time between two chances to stop (a chunk takes 0.1 to 0.3 s:
 * 3,000,000 jobs were created in 4 s on an idle core, 10 s on a busy one). */
#define SF_COORD_CREATE_CHUNK 50000

#define SF_COORD_SLOW_FACTOR    10    /* x the median completed job        */
#define SF_COORD_SLOW_AFTER_MS  30000 /* and at least this long            */
#define SF_COORD_SLOW_MIN_PEERS 3     /* completed jobs before any is SLOW */
#define SF_COORD_SLOW_SHOWN     8     /* slow jobs listed by name          */
#define SF_COORD_AUDITS_SHOWN   8     /* undecided audits listed by name   */
/* A key whose workers have reported this many more failures than the jobs
 * they stored gets no more leases, whatever worker ids it uses. */
#define SF_COORD_MAX_KEY_FAILURES 5

#define SF_COORD_MAX_WORKERS 65536

/* Counters and gauges, as served by Status and /metrics. */
/* Errors the dashboard's /api/errors keeps (the newest). */
#define SF_COORD_ERRORS_KEPT 64

typedef struct sf_coord_status {
    uint64_t jobs_total, jobs_pending, jobs_leased, jobs_done;
    uint64_t fights, labels, simulations, fallbacks;
    uint64_t fights_turn_limit; /* of them, fights that ended at the turn cap */
    uint64_t bytes_stored, shards_stored;
    double labels_per_s;    /* over the last minute of completed jobs           */
    double eta_s;           /* remaining jobs at the recent job completion rate */
    uint32_t workers_alive; /* alive and not waiting (below)                */
    /* alive workers that take no job while they wait for something (a
     * gpu-evald that does not answer: their Heartbeat.waiting), and the
     * reason one of them gave */
    uint32_t workers_waiting;
    char waiting_reason[160];
    int complete;
    uint64_t leases_granted, lease_expiries, reissues;
    uint64_t decode_errors, protocol_errors;
    uint64_t shards_rejected, duplicates_dropped, jobs_failed;
    /* security (common/zsec.h): handshakes the ZAP handler refused,
     * messages refused because their key was revoked or is not an
     * operator's where one is needed, or names another key's worker */
    uint64_t auth_denied, auth_refused;
    uint64_t shards_quarantined; /* removed by sf-fleet quarantine or an audit */
    /* audits by re-execution: opened, copies that agreed, mismatches sent
     * to a third worker, workers quarantined by one, undecided (three
     * digests) */
    uint64_t audits_opened, audits_passed, audits_mismatched, audits_caught, audits_undecided;
    /* audits open now (a run is not complete while one is), and those whose
     * copies differ, by name: stage 2 waits for a third key, stage 3 (three
     * different copies) for an operator's sf-fleet quarantine */
    uint64_t audits_open;
    uint64_t audits_differ; /* of them, those whose copies differ */
    int n_undecided;        /* of those, named below */
    struct sf_coord_audit {
        uint64_t job_id;
        int stage;
        char who[3][64]; /* key ids (worker ids without CURVE) of the copies */
    } undecided[SF_COORD_AUDITS_SHOWN];
    uint32_t keys_failing; /* keys whose workers get no more leases (failure reports) */
    uint32_t keys_known;   /* keys (identities) that said Hello since the start */
    uint64_t fights_in_progress, labels_in_progress; /* reported by leased jobs */
    uint64_t jobs_quarantined;    /* failed on 3 workers; the run cannot complete */
    uint64_t workers_quarantined; /* reported 5 failures; given no more jobs      */
    uint64_t workers_refused;     /* Hellos under a new id past sf_coord_opts.max_workers */
    uint64_t lease_limit_waits;   /* job requests answered Wait: the worker held
                                     CO_MAX_LEASES_PER_WORKER */
    /* model distribution (docs/operator.md): bundles served by GET
     * /models/<sha256> and their bytes; leases of a followed run bound to
     * an earlier champion because the worker was still fetching the new one */
    uint64_t model_requests, model_bytes_served, leases_on_previous_model;
    char last_failure[160];    /* the latest JobFailed reason (for operators)   */
    uint64_t uploads_deferred; /* answered retry_later: the disk was full       */
    int uploads_paused;        /* the latest upload was deferred (disk full)    */
    int cannot_finish;         /* every job not done is quarantined, or every key is failing */
    /* fairness between runs (docs/operator.md): coordinator.max_workers
     * (0: no limit), the live workers counted against it (waiting ones
     * too), and Hellos refused because the run was at it */
    uint32_t worker_limit, workers_admitted;
    uint64_t workers_refused_limit;
    /* jobs are waiting to be played (pending, or an audit wants a copy) and
     * no worker is alive: nothing happens until workers are started */
    int no_workers;
    /* gate runs (gate = 1): the sequential test on the contiguous prefix of
     * pairs (docs/gate.md): pairs folded, the LLR and Wald's bounds, and
     * the decision ("continue" while provisional) */
    int gate;
    uint64_t gate_pairs;
    uint32_t gate_min_pairs, gate_max_pairs;
    double gate_llr, gate_lower, gate_upper;
    char gate_decision[16];
    /* SLOW jobs (sf_coord_opts.slow_after_ms): leased jobs that have run far
     * longer than completed ones; the longest first, at most
     * SF_COORD_SLOW_SHOWN named. job_median_s: the median seconds from
     * lease to stored shard over the last 256 completed jobs (0: none yet);
     * longest_running_s: the oldest lease now held (0: none). */
    uint64_t jobs_slow;
    double job_median_s, longest_running_s;
    int n_slow;
    struct sf_coord_slow_job {
        uint64_t job_id;
        char worker_id[64];
        double running_s;
    } slow[SF_COORD_SLOW_SHOWN];
} sf_coord_status;

/* The decision rule of a gate run's `gate` section (gate/stats.h): alpha,
 * beta, delta0, delta1, min_pairs, max_pairs and the metric from the
 * config; the interval level, bootstrap resamples and seed are
 * sf_gate_rule_default()'s. The coordinator's verdict uses it; so does any
 * tool that decides gate pairs the same way. */
struct sf_gate_rule;
void sf_coordinator_gate_rule(const sf_run_config *cfg, struct sf_gate_rule *rule);

/* What a run's ledger holds, read without a coordinator: the status of a
 * run that no coordinator serves (sf-fleet status RUN_DIR). */
typedef struct sf_ledger_summary {
    char run[SF_CFG_NAME]; /* run.name of the config the run was started with */
    char kind[16];         /* run.kind: "selfplay" or "gate"                  */
    char digest[65];       /* its config digest (hex)                         */
    uint64_t jobs_total, jobs_done;
    uint64_t jobs_leased;                         /* leased when the ledger was last written: issued
                                                     again when a coordinator resumes the run       */
    uint64_t records, fights, simulations, bytes; /* of the done jobs        */
} sf_ledger_summary;

/* Read the ledger of the run in `output_dir` (<output_dir>/ledger.lmdb)
 * read-only, without taking the coordinator's lock: a coordinator may be
 * serving the run meanwhile (the summary is then as of its last commit;
 * the read takes a slot in LMDB's reader table, ledger.lmdb-lock, so the
 * coordinator's commits never overwrite what it reads).
 * As at sf_coordinator_open(), the file is read in a child process first,
 * so a damaged ledger is an error, not a crash. Errors, each naming the
 * path: SF_ENOTFOUND (no ledger there, or one no run was ever committed
 * to), SF_ECORRUPT / SF_EVERSION (a damaged or old ledger: its records'
 * checksums, decoding, the config record), SF_EIO. */
int sf_coordinator_ledger_summary(const char *output_dir, sf_ledger_summary *out, sf_err *err);

/* A gate run's sequential test in words, for logs and summaries, from a
 * status with st->gate set (sf_coordinator_status), into buf (cap bytes,
 * NUL-terminated; returns buf):
 *   "stopped early at pair 23 of 400: promote (LLR 3.214 crossed the upper
 *    bound 3.178)"                  a bound crossed before max_pairs
 *   "inconclusive at max_pairs, pair 400 (LLR 1.020 in [-3.178, 3.178])"
 *   "no decision yet after 12 pairs (LLR 0.512 in [-3.178, 3.178])"
 * and "" for a run that is no gate. */
const char *sf_coord_gate_outcome(const sf_coord_status *st, char *buf, size_t cap);

/* Open (or resume) the run in cfg->output_dir and bind the ROUTER. Creates
 * the directory, the ledger and its jobs on first start. Errors: SF_ECONFIG
 * when the ledger holds a run with another config digest, SF_EIO for files
 * and sockets (the message names the path or endpoint), SF_EFORMAT when
 * the ledger path is not a regular file, SF_EINVAL for a
 * metrics port outside the convention. */
int sf_coordinator_open(const sf_run_config *cfg, const sf_coord_opts *opts, sf_coordinator **out,
                        sf_err *err);

/* The endpoint actually bound (tcp://host:port with the real port when the
 * config asked for port 0 or '*'). Owned by the coordinator. */
/* What sf_coordinator_rebuild_ledger() did. */
typedef struct sf_ledger_rebuild {
    char moved_to[400];  /* where the old ledger went ("" when there was none) */
    uint64_t jobs_total; /* jobs of the run                                    */
    uint64_t jobs_done;  /* done in the new ledger: a sealed, verified shard   */
} sf_ledger_rebuild;

/* Replace a damaged (or lost) ledger of the run in cfg->output_dir with a
 * new one built from the sealed shards in <output_dir>/shards: the old
 * ledger.lmdb is renamed to ledger.lmdb.damaged-<unix seconds> (kept for a
 * person to look at), a new ledger with every job pending is written, and
 * each shard whose manifest names its job, run and config and that
 * verifies is adopted as that job's result (the restart's adoption; a
 * shard that does not is moved to rejected/ with its reason). Binds
 * nothing; takes the output dir's lock, so no coordinator may be serving
 * it. Errors: those of sf_coordinator_open's file steps (SF_ESTATE while a
 * coordinator holds the lock, SF_EIO naming the path and the OS reason). */
int sf_coordinator_rebuild_ledger(const sf_run_config *cfg, const sf_coord_opts *opts,
                                  sf_ledger_rebuild *rep, sf_err *err);

/* What sf_coordinator_backup() / sf_coordinator_restore() did. */
typedef struct sf_run_backup {
    char run[SF_CFG_NAME];  /* run.name of the run in the ledger copy       */
    char digest[65];        /* its config digest (hex)                       */
    uint64_t jobs_total;    /* jobs of the run                               */
    uint64_t jobs_done;     /* done in the copy: the manifest's lines        */
    uint64_t ledger_bytes;  /* the compacted copy's size                     */
    uint64_t shards_linked; /* shards hard-linked (same filesystem)          */
    uint64_t shards_copied; /* shards copied (another filesystem)            */
    int keys;               /* <output_dir>/keys was there and was copied    */
} sf_run_backup;

/* Back up the run in `output_dir` into `dest` (docs/operator.md "Backups";
 * backup.c says how it lives beside a serving coordinator): a consistent,
 * compacted copy of the ledger as of one commit (dest/ledger.lmdb), the
 * run's config as the ledger holds it (dest/config.yaml), a copy of
 * <output_dir>/keys when there is one (dest/keys), with `with_shards` the
 * stored shards of the copy's done jobs (dest/shards, hard links where the
 * filesystem allows, else copies), and last dest/shards.manifest: a line
 * "JOB SHARD CONTENT_DIGEST BYTES FILE_SHA256" per done job after two "#"
 * lines. A coordinator may be serving the run meanwhile: the backup takes
 * no lock of its and never blocks its writes. `dest` must be absent or an
 * empty directory; a backup that fails removes what it wrote. Errors, each
 * naming the path: SF_ENOTFOUND (no ledger in output_dir), SF_EFORMAT (not
 * a regular file), SF_ECORRUPT (a damaged ledger: LMDB refused or crashed
 * copying it, in a child process, or a record's checksum or decoding
 * failed), SF_EINVAL (dest exists and is not an empty directory), SF_EIO. */
int sf_coordinator_backup(const char *output_dir, const char *dest, int with_shards,
                          sf_run_backup *rep, sf_err *err);

/* Make `output_dir` (absent or empty) a run directory from the backup in
 * `backup_dir`: its ledger, keys and shards, and output_dir/config.yaml,
 * the backup's config with run.output_dir set to `output_dir` (pass an
 * absolute path), which sf-fleet run or coordinator resumes; done jobs
 * whose shards the backup lacks are played again at the resume
 * (recovery.c). Fills rep's run, digest, jobs_total, keys and shard
 * counts. Errors: SF_ENOTFOUND when backup_dir has no shards.manifest (not
 * a complete backup), SF_EINVAL for a non-empty output_dir, SF_EIO and
 * SF_ECORRUPT naming the path. */
int sf_coordinator_restore(const char *backup_dir, const char *output_dir, sf_run_backup *rep,
                           sf_err *err);

const char *sf_coordinator_endpoint(const sf_coordinator *co);

/* The metrics port actually bound, 0 when disabled; and its URL
 * ("http://127.0.0.1:9105/metrics", or "off"), owned by the coordinator. */
int sf_coordinator_metrics_port(const sf_coordinator *co);
const char *sf_coordinator_metrics_url(const sf_coordinator *co);

/* One round: wait up to timeout_ms for traffic, handle every waiting message,
 * expire leases and dead workers, commit the ledger, send the replies.
 * Returns SF_OK, or (fatal) SF_EIO when the ledger cannot be written,
 * SF_EFULL when its map cannot grow, SF_ESTATE once the ZAP handler has
 * stopped (common/zsec.h). */
int sf_coordinator_step(sf_coordinator *co, int timeout_ms, sf_err *err);

/* Loop over steps until *stop becomes non-zero, a Stop message arrives, or
 * (with exit_when_done) the run is complete. */
int sf_coordinator_serve(sf_coordinator *co, const volatile sig_atomic_t *stop, sf_err *err);

void sf_coordinator_status(sf_coordinator *co, sf_coord_status *st);

/* What a run of `njobs` jobs holds (sf-fleet check --estimate): the bytes
 * of the coordinator's job tables in memory (every job has an entry while
 * it runs), and the bytes the ledger file claims when it is created (its
 * reserve, ledger.c: the file grows past it only when LMDB needs more). */
uint64_t sf_coordinator_table_bytes(uint64_t njobs);
uint64_t sf_coordinator_ledger_bytes(uint64_t njobs);

/* Close sockets, the HTTP server and the ledger (NULL is a no-op). */
void sf_coordinator_close(sf_coordinator *co);

/* ---------------------------------------------------------------------------
 * Operator and trainer clients (one short-lived DEALER each)
 * ------------------------------------------------------------------------- */

/* Each asks as a CURVE client with the operator key (else the worker key)
 * of the key directory `keys` (common/zsec.h sf_zsec_client_load_any);
 * NULL or "": plain, which only a security.mode none coordinator answers.
 * A coordinator that refuses the key answers nothing: SF_ETIMEOUT, whose
 * message then says to check the keys. */

/* Ask a coordinator for its status. *out is freed with sf_wire_free() on its
 * envelope: the call returns the envelope and points *reply into it.
 * Errors: SF_ETIMEOUT when nothing answers within timeout_ms. */
int sf_fleet_status(const char *endpoint, const char *keys, int timeout_ms,
                    Spirefleet__Envelope **env, Spirefleet__StatusReply **reply, sf_err *err);

/* Ask a coordinator to stop the run (workers finish nothing new). Needs an
 * operator key: otherwise SF_EREMOTE with the coordinator's refusal. */
int sf_fleet_stop(const char *endpoint, const char *keys, int timeout_ms, sf_err *err);

/* Quarantine a worker key's data (an operator key only; fleet.proto
 * Quarantine): key_id is 16 hex digits (common/zsec.h sf_zsec_key_id),
 * since_unix 0 for every shard. *shards and *jobs receive the counts,
 * *workers_alive the connected workers left to play those jobs (0: the
 * operator must start some). */
int sf_fleet_quarantine(const char *endpoint, const char *keys, const char *key_id,
                        int64_t since_unix, int timeout_ms, uint32_t *shards, uint32_t *jobs,
                        uint32_t *workers_alive, sf_err *err);

/* Ask a coordinator for one document of its dashboard (fleet.proto
 * ApiRequest; an operator key only): `path` as the dashboard's HTTP
 * server takes it ("/", "/api/status", ...). *out is freed with
 * sf_wire_free() on its envelope; *reply points into it (status 200, or
 * 404 with the reason as body). Errors: those of sf_fleet_status, and
 * SF_EREMOTE with the coordinator's refusal of a key that is not an
 * operator's. */
int sf_fleet_api(const char *endpoint, const char *keys, const char *path, int timeout_ms,
                 Spirefleet__Envelope **env, Spirefleet__ApiReply **reply, sf_err *err);

/* Write a Status reply in human form. */
void sf_fleet_print_status(const Spirefleet__StatusReply *st, FILE *out);

#endif
