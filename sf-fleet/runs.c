/*
 * runs.c — one worker serving several runs in priority order (sf-fleet
 * worker with --connect / --connect-file given more than once;
 * docs/operator.md "Fairness between runs").
 *
 * The worker library serves one coordinator per sf_worker_run call; this
 * loop calls it with sf_worker_opts.yield, so each call returns instead of
 * waiting when its run has no place for the worker (a Refusal, e.g. at
 * coordinator.max_workers), no job for it (a Wait), no answer, or is over;
 * the worker then tries its next run. Serving a run below another that is
 * not over, it leaves between two jobs every `recheck` seconds and tries
 * the runs from the first again, so a gate started later (listed first)
 * gets its workers. The library never leaves mid-job: a finished shard is
 * delivered to its own run first, and it says Goodbye to free its place.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sf-fleet/cli.h"

/* Pauses between rounds in which no run had anything for the worker. */
#define IDLE_PAUSE_FIRST_MS 500
#define IDLE_PAUSE_MAX_MS   8000

/* The run's name in the log: its position and where it is. */
static void run_label(const sf_fleet_run_ref *runs, int n, int i, char *out, size_t cap) {
    snprintf(out, cap, "run %d of %d (%s%.300s)", i + 1, n, runs[i].endpoint ? "" : "file ",
             runs[i].endpoint ? runs[i].endpoint : runs[i].endpoint_file);
}

/* Sleep `ms` in 100 ms steps, ending early on a stop or a drain. */
static void pause_ms(const sf_worker_opts *base, int ms) {
    for (int waited = 0; waited < ms; waited += 100) {
        if ((base->stop && *base->stop) || (base->drain && *base->drain))
            return;
        usleep(100000);
    }
}

int sf_fleet_serve_runs(const sf_worker_opts *base, const sf_fleet_run_ref *runs, int n,
                        uint32_t recheck_s, sf_err *err) {
    if (n < 1 || n > SF_FLEET_MAX_RUNS)
        return sf_err_set(err, SF_EINVAL, "worker: %d runs given; 1..%d are served", n,
                          SF_FLEET_MAX_RUNS);
    int over[SF_FLEET_MAX_RUNS] = {0}, jobs = 0, pause = IDLE_PAUSE_FIRST_MS;
    int failed = SF_OK; /* the last run dropped for an error */
    sf_err last = {0};
    char label[400];
    for (;;) {
        int first = -1; /* the highest-priority run not over */
        for (int i = 0; i < n && first < 0; i++)
            if (!over[i])
                first = i;
        if (first < 0)
            break;
        int served = 0;
        for (int i = first; i < n && !served; i++) {
            if (over[i])
                continue;
            if ((base->stop && *base->stop) || (base->drain && *base->drain))
                return failed ? sf_err_set(err, failed, "%s", last.msg) : SF_OK;
            if (base->max_jobs && jobs >= base->max_jobs)
                return SF_OK;
            sf_worker_exit ex = {0};
            sf_worker_opts o = *base;
            o.endpoint = runs[i].endpoint;
            o.endpoint_file = runs[i].endpoint_file;
            o.yield = 1;
            o.serve_ms = i > first ? recheck_s * 1000u : 0; /* a higher run to re-check */
            o.max_jobs = base->max_jobs ? base->max_jobs - jobs : 0;
            o.exit = &ex;
            sf_err e = {0};
            int rc = sf_worker_run(&o, &e);
            jobs += ex.jobs;
            run_label(runs, n, i, label, sizeof label);
            if (rc < 0) {
                sf_log(base->log, base->log_ctx, "sf-fleet worker: %s: %s; not served again", label,
                       e.msg);
                over[i] = 1;
                failed = rc;
                last = e;
                continue;
            }
            switch (ex.end) {
            case SF_WORKER_END_OVER:
                sf_log(base->log, base->log_ctx, "sf-fleet worker: %s is over%s", label,
                       i + 1 < n ? "; trying the next run" : "");
                over[i] = 1;
                break;
            case SF_WORKER_END_LEFT:
                return failed ? sf_err_set(err, failed, "%s", last.msg) : SF_OK;
            case SF_WORKER_END_REFUSED:
            case SF_WORKER_END_UNREACHABLE:
                sf_log(base->log, base->log_ctx, "sf-fleet worker: %s: %s; trying the next run",
                       label, ex.why);
                break;
            case SF_WORKER_END_IDLE:
                sf_log(base->log, base->log_ctx,
                       "sf-fleet worker: %s has no job for this worker now; trying the next run",
                       label);
                break;
            case SF_WORKER_END_SERVED:
                sf_log(base->log, base->log_ctx,
                       "sf-fleet worker: served %s for %u s; re-checking the runs before it", label,
                       recheck_s);
                served = 1;
                break;
            }
            if (ex.jobs)
                pause = IDLE_PAUSE_FIRST_MS;
        }
        if (!served) { /* a round in which no run took the worker for long */
            pause_ms(base, pause);
            pause = pause * 2 > IDLE_PAUSE_MAX_MS ? IDLE_PAUSE_MAX_MS : pause * 2;
        }
    }
    sf_log(base->log, base->log_ctx, "sf-fleet worker: every run is over");
    return failed ? sf_err_set(err, failed, "%s", last.msg) : SF_OK;
}
