/*
 * cli.h — what sf-fleet's commands share across its source files (the
 * program's own header; nothing outside sf-fleet/ includes it).
 */
#ifndef SF_FLEET_CLI_H
#define SF_FLEET_CLI_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "fleet/config.h"
#include "worker/worker.h"

/* The file in a run's output directory that holds the endpoint of the
 * coordinator serving it, while one does (sf-fleet run and coordinator
 * write it, slurm's coordinator job too; status RUN_DIR reads it). */
#define SF_FLEET_ENDPOINT_FILE "coordinator.endpoint"

/* Load a config as every sf-fleet command does, printing each problem
 * ("sf-fleet: FILE:LINE:COLUMN: key: ...", at most 20). 0, or -1. */
int sf_fleet_load(const char *path, sf_run_config *cfg);

/* Warn on stderr ("sf-fleet: warning: PATH: model.sha256 is all zeros, a
 * placeholder: ...") when the config at `path` pins its model to the
 * example configs' placeholder SHA-256 of zeros: `check` and `slurm` say
 * it, before anything runs with a model that cannot be the real one. */
void sf_fleet_warn_placeholder_sha(const char *path, const sf_run_config *cfg);

/* A program built beside sf-fleet (<build root>/<dir>/<name>, found from
 * sf-fleet's own path `self`), else <name> to be found on PATH. */
void sibling(const char *self, const char *dir, const char *name, char *out, size_t cap);

/* Put the spirefleet Python package beside sf-fleet in the build tree (when
 * it is there) in front of PYTHONPATH, for /usr/bin/python3 children. */
void python_path(const char *self);

/* Wait until the gpu-evald of process `pid`, at cfg->evald.endpoint,
 * answers a real position with model `sha` (its canary passed and it
 * serves), probing every 100 ms for at most `seconds`. SF_ECHILD when the
 * process exited first, SF_ETIMEOUT when it never answered (with the last
 * probe's reason), or the evaluator's errors. */
int evald_wait_model(const sf_run_config *cfg, const char *sha, pid_t pid, int seconds,
                     sf_err *err);

/* sf-fleet worker with several runs (sf-fleet/runs.c; docs/operator.md
 * "Fairness between runs"): each run is a coordinator's endpoint or the
 * file it publishes it in (one of the two set). */
#define SF_FLEET_MAX_RUNS 16
/* --recheck's default: seconds a worker serves a lower-priority run before
 * it tries the runs before it again (between two jobs) */
#define SF_FLEET_RECHECK_DEFAULT_S 60
typedef struct sf_fleet_run_ref {
    const char *endpoint, *endpoint_file;
} sf_fleet_run_ref;

/* Serve runs[0..n) in priority order (first: highest) with the options of
 * `base` (its endpoint, endpoint_file, yield, serve_ms and exit are set per
 * run): a run that refuses the worker (at its coordinator.max_workers),
 * has no job for it, does not answer or is over sends it on to the next;
 * serving a run below one not over, it tries them again from the first
 * after `recheck_s` seconds, between two jobs. Returns once every run is
 * over, on *base->stop or a drain, or after base->max_jobs jobs in all:
 * SF_OK; a run that fails (a config digest this build does not share, ...)
 * is logged and not served again, and its error returned at the end.
 * SF_EINVAL for n outside 1..SF_FLEET_MAX_RUNS. */
int sf_fleet_serve_runs(const sf_worker_opts *base, const sf_fleet_run_ref *runs, int n,
                        uint32_t recheck_s, sf_err *err);

/* sf-fleet loop CONFIG (sf-fleet/loop.c, docs/loop.md): `argv[0]` is
 * "loop"; `stop` becomes non-zero on SIGINT / SIGTERM. Exit codes as the
 * other commands: 0 done, 1 failure, 2 bad arguments or config, 3 stopped. */
int cmd_loop(int argc, char **argv, const char *self, volatile sig_atomic_t *stop);

/* sf-fleet dashboard (ENDPOINT | RUN_DIR) [--keys DIR] [--port P|*]
 * (sf-fleet/dashboard.c, docs/operator.md "Dashboard"): serve a
 * coordinator's dashboard on 127.0.0.1 here, each request asked through
 * its CURVE socket with an operator key, until `stop`. `argv[0]` is
 * "dashboard". Returns an exit code (2: bad arguments; 1: no answer or a
 * key that is not an operator's). */
int cmd_dashboard(int argc, char **argv, volatile sig_atomic_t *stop);

/* sf-fleet status RUN_DIR for a loop's directory: its state (generation,
 * stage, champion, labels, the last verdicts). Returns an exit code. */
int loop_status(const char *dir);

/* sf-fleet siblings CONFIG --model BUNDLE ... (sf-fleet/siblings.c):
 * `argv[0]` is "siblings". Returns an exit code. */
int cmd_siblings(int argc, char **argv);

/* The sibling ranking (worker.h sf_siblings_measure) of the bundle at
 * `bundle` (pinned by cfg->model.sha256 when set) on the shards of
 * paths[0..n_paths) (shards or directories of them), restricted to the
 * game seeds seeds[0..n_seeds) when seeds is not NULL (sorted in place),
 * at most max_decisions decisions (0: all), as a JSON object (*out, the
 * caller's reference): model_sha256, shards, decisions, pairs, fights,
 * fights_skipped, net_/rollout_pairwise_accuracy, net_/rollout_kendall_tau
 * (null when there was nothing to measure). */
struct json_t;
int siblings_measure_json(const sf_run_config *cfg, const char *bundle, const char *const *paths,
                          size_t n_paths, uint64_t *seeds, size_t n_seeds, uint64_t max_decisions,
                          struct json_t **out, sf_err *err);

#endif
