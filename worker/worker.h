/*
 * worker.h — the fleet worker: plays a job's seeds with honest search,
 * turns every searched decision into a label record, writes one sealed shard
 * per job and uploads it to the coordinator.
 *
 * Determinism (docs/architecture.md invariant 3, issue "Determinism")
 *   A job's shard content depends only on (job seeds, run config digest,
 *   model): every random choice is derived from the run seed and the game
 *   seed (encounter pick, engine streams, search seeds per decision), the
 *   search's result does not depend on threads or batching, and records are
 *   written in (seed, fight, decision) order whatever thread played them.
 *   So the same job gives the same content digest on 1 or 30 workers, with
 *   any thread count or fights-per-thread.
 *
 * Threads and multiplexing
 *   sf_job_run() plays seeds on `threads` threads. With the rollout
 *   evaluator a search runs to the end in one sf_search_step() call, so a
 *   thread plays one fight at a time; with a network evaluator each thread
 *   keeps up to `fights_per_thread` fights in flight,
 *   steps all its searches, sends one batch for all their leaf requests and
 *   feeds the answers back (search.h, "The resumable API").
 *
 * Fallbacks
 *   Every fallback is counted in the job's statistics (and the shard
 *   manifest): a search that returned nothing usable (the rollout policy's
 *   move is played instead) and evaluator failures answered by the
 *   heuristic. None is silent.
 *
 * Allocation
 *   Label buffers are allocated per decision (not a hot path); the searches'
 *   arrays are allocated once per thread (search.h).
 */
#ifndef SF_WORKER_H
#define SF_WORKER_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "common/common.h"
#include "engine/engine.h"
#include "fleet/config.h"
#include "fleet/wire.h"
#include "search/search.h"

/* A batch evaluator for network leaves (the gpu-evald client, or the cpu
 * backend in-process). Each job thread opens its own session (ZeroMQ sockets
 * and nets belong to one thread); eval(session, requests, n, out) fills
 * out[0..n) for the n leaf requests (search.h) as one batch. It returns
 * SF_OK or a negative code, in which case the worker answers those leaves
 * with the rollout heuristic and counts a fallback for each. */
typedef struct sf_batch_evaluator {
    int (*open)(void *ctx, void **session, sf_err *err); /* NULL: session = ctx */
    int (*eval)(void *session, const sf_eval_request *const *requests, int n, sf_eval_answer *out);
    /* Optional: eval() that calls meanwhile(meanwhile_ctx) at most once, while the
     * batch is away (sent to gpu-evald, not yet answered), so that work of
     * the caller's (the leaves' rollouts of a mixed evaluation) overlaps
     * it. NULL: the worker calls meanwhile() and then eval(). */
    int (*eval_overlap)(void *session, const sf_eval_request *const *requests, int n,
                        sf_eval_answer *out, void (*meanwhile)(void *), void *meanwhile_ctx);
    void (*close)(void *session); /* may be NULL */
    void *ctx;
    const char *model_sha256; /* recorded in labels (64 hex digits)             */
} sf_batch_evaluator;

/* The evaluator of a run with search.evaluator: net, or of a gate side
 * whose evaluator is net: the model is `model_sha256` (64 lower-case hex
 * digits; NULL: the config's model.sha256). Remote (bundle_path NULL):
 * every session connects to `evald.endpoint` (gpu-evald) and names the
 * model by its SHA-256, with the config's timeout and retries. Local
 * (bundle_path non-NULL): the bundle is loaded once (pinned by the SHA-256
 * when one is given) and every session runs the cpu backend in its
 * thread; for the cpu backend both give bit-identical answers
 * (gpu-evald/neteval.h), so the same job yields the same shard. Free with
 * sf_worker_evaluator_free(). A remote session is a CURVE client with the
 * worker key of the run's key directory (sf_config_keys_dir(): security.*;
 * plain with security.mode none). Errors: those of loading the bundle (a
 * SHA mismatch names both digests) or the keys (naming the file);
 * SF_ECONFIG for a remote evaluator without a well-formed SHA-256. */
int sf_worker_evaluator_new(const sf_run_config *cfg, const char *model_sha256,
                            const char *bundle_path, sf_batch_evaluator **out, sf_err *err);
void sf_worker_evaluator_free(sf_batch_evaluator *ev);

/* Make a remote evaluator follow the endpoint gpu-evald publishes in `path`
 * (common/endpoint_file.h): each session reads it when it opens (a job
 * thread opens one per job), so the next job reaches a gpu-evald that was
 * restarted elsewhere; the endpoint the evaluator was made with while the
 * file cannot be read. SF_EINVAL for an in-process evaluator, SF_EFULL for
 * a path too long. */
int sf_worker_evaluator_follow(sf_batch_evaluator *ev, const char *path);

/* Evaluate one real position through `ev` (a session of its own). The
 * worker calls it before taking jobs, so an unreachable gpu-evald is found
 * and reported at once rather than as a job of fallbacks. */
int sf_worker_evaluator_probe(const sf_batch_evaluator *ev, sf_err *err);

typedef struct sf_job_spec {
    uint64_t job_id;
    uint64_t seed_start;
    uint32_t seed_count;
} sf_job_spec;

typedef struct sf_job_result {
    uint64_t records;
    uint64_t fights, wins, decisions, searched;
    uint64_t simulations;
    uint64_t fallbacks_search, fallbacks_eval;
    uint8_t digest[32]; /* the shard's content digest                        */
    double seconds;
} sf_job_result;

typedef struct sf_job_opts {
    int threads;           /* >= 1                                           */
    int fights_per_thread; /* >= 1                                           */
    const char *worker_id;
    /* provenance in the shard's manifest (label.proto): the worker's CURVE
     * key id ("" without CURVE) and host; NULL: "" */
    const char *worker_key_id, *worker_host;
    const sf_batch_evaluator *evaluator; /* required when the config says net */
    /* gate runs: the evaluator of side 0 (champion) and 1 (candidate),
     * required for a side whose evaluator is net; `evaluator` is unused */
    const sf_batch_evaluator *side_evaluator[2];
    const volatile sig_atomic_t *stop; /* non-zero: abandon the job (SF_ESTATE) */
    /* progress callback (may be NULL): called from worker threads */
    void (*on_progress)(void *ctx, uint64_t fights_done, uint64_t labels_done);
    void *progress_ctx;
} sf_job_opts;

/* Play job `job` of run `cfg` (digest `config_digest`, 64 hex digits) and
 * write its sealed shard at `shard_path` (which must not exist). Fills
 * `res`. Errors: SF_EINVAL for a bad config or options, SF_ESTATE when
 * *stop became non-zero (the temp file is removed), SF_EIO from the shard
 * writer. */
int sf_job_run(const sf_run_config *cfg, const char *config_digest, const sf_job_spec *job,
               const sf_job_opts *opts, const char *shard_path, sf_job_result *res, sf_err *err);

/* 1 when side `side` (0 champion, 1 candidate; -1: the self-play search)
 * of run `cfg` evaluates leaves with a network (evaluator "net"). */
int sf_job_side_external(const sf_run_config *cfg, int side);

/* Which Act-1 encounter seed `game_seed` plays in "fights" mode: a weighted
 * pick from play.encounters (every encounter equally when empty) with a
 * uniform number derived from (run seed, game seed). */
int sf_job_encounter(const sf_run_config *cfg, uint64_t game_seed);

/* ---------------------------------------------------------------------------
 * The fleet client
 * ------------------------------------------------------------------------- */
/* How sf_worker_run ended (sf_worker_opts.exit), for a caller that serves
 * several runs in turn (sf-fleet worker with several coordinators;
 * docs/operator.md "Fairness between runs"). */
typedef enum sf_worker_end {
    SF_WORKER_END_OVER = 0,    /* the run is complete, or its coordinator said Stop     */
    SF_WORKER_END_LEFT,        /* *stop, a drain, max_jobs, or a fatal error           */
    SF_WORKER_END_REFUSED,     /* yield: the coordinator refused the Hello (why)       */
    SF_WORKER_END_IDLE,        /* yield: it had no job for this worker (a Wait)        */
    SF_WORKER_END_UNREACHABLE, /* yield: no endpoint, or no answer to one Hello (why)  */
    SF_WORKER_END_SERVED,      /* yield: serve_ms passed; left between two jobs        */
} sf_worker_end;

typedef struct sf_worker_exit {
    sf_worker_end end;
    char why[SF_ERR_MSG_MAX]; /* REFUSED, UNREACHABLE: the reason; else ""           */
    int jobs;                 /* jobs this call took (and finished or gave back)      */
} sf_worker_exit;

typedef struct sf_worker_opts {
    const char *endpoint; /* coordinator, e.g. tcp://10.0.0.1:5555            */
    /* Or where the coordinator publishes its endpoint (endpoint NULL;
     * common/endpoint_file.h): read before every connection, so a worker
     * follows a coordinator restarted elsewhere; while the file is missing
     * or names no usable endpoint the worker waits, retrying with backoff. */
    const char *endpoint_file;
    const char *worker_id; /* NULL: "<hostname>-<pid>"                        */
    /* A key directory (common/zsec.h): CURVE to the coordinator and to
     * gpu-evald with its worker.key and server.pub. NULL: plain ZeroMQ,
     * which only a coordinator with security.mode none answers. */
    const char *keys_dir;
    int threads;              /* 0: workers.threads of the run config             */
    int fights_per_thread;    /* 0: workers.fights_per_thread                     */
    const char *scratch_dir;  /* local shards before upload; NULL: $TMPDIR or /tmp */
    int max_jobs;             /* stop after this many jobs (0 = no limit)         */
    const char *local_bundle; /* net runs: evaluate in-process with this bundle
                                 instead of connecting to the run's gpu-evald */
    int local_sides;          /* gate runs: evaluate each net side in-process
                                 from the bundle its config names, instead of
                                 the run's gpu-evald */
    /* net runs: gpu-evald's endpoint instead of the run config's
     * evald.endpoint; or the file where gpu-evald publishes it, read (and
     * waited for) until the server answers, before any job is taken. At
     * most one of local_bundle, evald_endpoint and evald_file. */
    const char *evald_endpoint;
    const char *evald_file;
    /* net self-play runs with model.url (docs/operator.md "Model
     * distribution"): 1 evaluates in-process with each job's bundle
     * fetched by its SHA-256 into model_cache (NULL: <scratch>/models),
     * the next champion fetched ahead while jobs go on. Excludes
     * local_bundle, evald_endpoint and evald_file. Without it, a run with
     * model.url probes its gpu-evald (which fetches for itself,
     * --models-url) for the next champion instead. */
    int fetch_models;
    const char *model_cache;
    /* This worker's own URL template in place of the run's model.url (a
     * mirror or CDN near it); NULL: the run's. */
    const char *model_url;
    /* 1: finish nothing new, abandon the current job (JobFailed so the
     * coordinator re-issues it) and return; 2: return at once. */
    const volatile sig_atomic_t *stop;
    /* Non-zero: drain. Take no new job; the one in hand is finished and
     * uploaded, then sf_worker_run returns SF_OK. A job the coordinator
     * hands out after the drain began is given back at once (JobFailed, so
     * it is re-issued without waiting for its lease). May be NULL. */
    const volatile sig_atomic_t *drain;
    /* Where the worker's log lines go ("12:00:01.250 worker w1: job 3:
     * ..."): called from the thread that runs sf_worker_run, one line at a
     * time (common.h). NULL: dropped. */
    sf_log_fn log;
    void *log_ctx;
    /* Several runs (docs/operator.md "Fairness between runs"). Non-zero
     * `yield`: the worker does not wait on this run but returns SF_OK with
     * the reason in *exit, so that its caller tries its next run: when the
     * Hello is refused (a run at coordinator.max_workers), when one Hello
     * gets no answer (or the endpoint file names none), when a job request
     * is answered Wait, and, with serve_ms > 0, between two jobs once it
     * has served that many milliseconds. It never leaves mid-job: the shard
     * of a finished job is delivered first, and it holds no lease when it
     * goes. Leaving a run it was admitted to, it says Goodbye, so the
     * coordinator frees its place at once. */
    int yield;
    uint32_t serve_ms;
    sf_worker_exit *exit; /* filled when non-NULL */
} sf_worker_opts;

/* Connect, say Hello, then request, play and upload jobs until the run is
 * complete, the coordinator says Stop, *stop is set or a drain ends (or,
 * with opts->yield, the run has no place or no job for this worker now:
 * opts->exit says which). Reconnects with backoff when the coordinator is
 * silent for heartbeat_liveness intervals. Returns SF_OK at a clean end;
 * SF_ESTATE when refused (without yield), SF_EVERSION for a config digest
 * that does not match this build's, SF_EINVAL for bad options. */
int sf_worker_run(const sf_worker_opts *opts, sf_err *err);

/* ---------------------------------------------------------------------------
 * Sibling ranking (siblings.c; docs/trainer.md "Sibling ranking")
 *
 * How well a network's value orders the children of searched decisions,
 * measured against the search's own completed-Q in self-play labels, with
 * the rollout evaluator as the baseline: for each searched decision of the
 * shards (the fights are replayed from the labels' start texts, game seeds
 * and chosen actions, each position checked against the label's tokens),
 * every legal action is applied to the position the player sees (the
 * belief root) and the child valued by the network (exactly, where the
 * fight ends) and by one rollout. Over the pairs of children whose
 * completed-Q differ by at least `tie`, the pairwise accuracy is the share
 * the value orders the same way (a tied value counts one half); Kendall's
 * tau-b per decision is averaged over the decisions.
 * ------------------------------------------------------------------------- */

#define SF_SIBLINGS_TIE 0.005 /* completed-Q closer than this: not a pair (about 1 HP) */

typedef struct sf_siblings_opts {
    const uint64_t *seeds; /* only these game seeds, ascending; NULL: every one */
    size_t n_seeds;
    uint64_t max_decisions; /* stop measuring after this many; 0: no limit      */
    double tie;             /* 0: SF_SIBLINGS_TIE                               */
} sf_siblings_opts;

typedef struct sf_siblings_report {
    uint64_t decisions;                    /* searched decisions measured                      */
    uint64_t pairs;                        /* sibling pairs counted (completed-Q apart >= tie) */
    uint64_t fights;                       /* fights met in the shards                         */
    uint64_t fights_skipped;               /* of them, fights whose replay disagreed           */
    double net_accuracy, rollout_accuracy; /* pairwise, in [0, 1]; NaN: no pairs */
    double net_tau, rollout_tau;           /* mean Kendall tau-b; NaN: none      */
} sf_siblings_report;

/* Measure `ev` (its own session) on the self-play shards[0..n_shards) of run
 * `cfg` (the run whose labels they are: its play.max_turns and rollout
 * settings). Errors: those of reading a shard (naming it), of the network
 * (SF_E* of its eval), SF_ENOMEM. A fight whose replay disagrees with its
 * labels (a decision the search could not serve, played without a label)
 * is skipped and counted, not an error. */
int sf_siblings_measure(const sf_run_config *cfg, const char *const *shards, size_t n_shards,
                        const sf_batch_evaluator *ev, const sf_siblings_opts *opts,
                        sf_siblings_report *out, sf_err *err);

/* Over the pairs i < j of a[0..n), b[0..n) with |b_i - b_j| >= tie: *pairs
 * counts them and *agree those a orders as b does (a_i == a_j: one half).
 * Returns 1 when there is a pair. */
int sf_siblings_agreement(const double *a, const double *b, int n, double tie, double *agree,
                          double *pairs);

/* Kendall's tau-b of a and b (n values each): (C - D) / sqrt((C + D + Ta) *
 * (C + D + Tb)), C and D the concordant and discordant pairs, Ta (Tb) the
 * pairs tied in a (b) only. NaN when a or b is constant. */
double sf_siblings_kendall_tau_b(const double *a, const double *b, int n);

#endif
