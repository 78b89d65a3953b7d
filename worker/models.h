/*
 * models.h — the worker's models when it does not share the registry's
 * filesystem (private to worker/; docs/operator.md "Model distribution").
 *
 * With model.url set, the worker learns from each Job which champion to
 * fetch next (Job.next_model_sha256), fetches it on a helper thread after
 * a random stagger while it plays jobs on the model it holds, and tells
 * the coordinator in every JobRequest which models it can evaluate now, so
 * the coordinator binds new jobs to the new champion only once it is here.
 *
 *   in-process (--fetch-models): a model is ready once its bundle is in the
 *     cache, verified (common/fetch.h);
 *   gpu-evald (started with --models-url, fetching for itself): a model is
 *     ready once gpu-evald answers a probe with it.
 *
 * Threading: one helper thread at a time, joined by sf_wm_close; every call
 * is made from the worker's thread. Errors are values; the helper's
 * outcome is read with sf_wm_poll for the worker's log.
 */
#ifndef SF_WORKER_MODELS_H
#define SF_WORKER_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/fetch.h"
#include "fleet/config.h"

enum { SF_WM_READY_MAX = 8 }; /* models said ready, newest first */

typedef struct sf_wm sf_wm;

/* A fetcher for the run `cfg` (copied; model.url must be set): `local` 1
 * fetches bundles into `cache_dir` (created when missing), 0 probes the
 * run's gpu-evald (`evald_endpoint`, NULL: cfg's). `seed` draws the
 * stagger. SF_OK, SF_ENOMEM, or SF_EINVAL for a bad model.url. */
int sf_wm_open(const sf_run_config *cfg, int local, const char *cache_dir,
               const char *evald_endpoint, uint64_t seed, sf_wm **out, sf_err *err);

/* Cancel a fetch under way (its part file is kept for the next start) and
 * free. NULL is a no-op. */
void sf_wm_close(sf_wm *m);

/* The models ready now, newest first, copied into out; returns how many
 * (at most SF_WM_READY_MAX). */
int sf_wm_ready(sf_wm *m, char out[SF_WM_READY_MAX][SF_SHA256_HEX_LEN + 1]);

/* Start fetching `sha` on the helper thread (after the stagger) unless it
 * is ready, under way, or another fetch is, or its last fetch failed less
 * than the back-off ago (SF_WM_RETRY_S, doubling to SF_WM_RETRY_MAX_S, so
 * a mirror without the model is not asked at every job). Returns 1 when it
 * started. */
int sf_wm_prefetch(sf_wm *m, const char *sha);

enum {
    SF_WM_RETRY_S = 30,      /* a failed background fetch: first back-off */
    SF_WM_RETRY_MAX_S = 600, /* and its most                                */
};

/* Where `sha` stands: SF_WM_HELD (ready), SF_WM_FETCHING (the helper is on
 * it), SF_WM_FAILED (the helper's last fetch of it failed: the reason in
 * why, cap bytes), SF_WM_NONE. */
typedef enum { SF_WM_NONE, SF_WM_FETCHING, SF_WM_HELD, SF_WM_FAILED } sf_wm_state;
sf_wm_state sf_wm_state_of(sf_wm *m, const char *sha, char *why, size_t cap);

/* Start fetching `sha` now, without stagger or back-off, unless the helper
 * is busy (then 0: call again once it is done). A job's model: the worker
 * holds no lease meanwhile and waits, heartbeating, for
 * sf_wm_state_of to leave SF_WM_FETCHING. Returns 1 when it started. */
int sf_wm_fetch_start(sf_wm *m, const char *sha);

/* A finished helper's outcome, once: 1 with a log line in msg ("model
 * <sha> ready: ..." or why it failed), 0 when there is nothing new. */
int sf_wm_poll(sf_wm *m, char *msg, size_t cap);

/* In-process: the path of `sha`'s bundle, a model held (SF_WM_HELD), into
 * path[cap], verified again on this thread (common/fetch.h); a cached copy
 * that went bad is fetched again here, without stagger. Errors: those of
 * sf_fetch_content. */
int sf_wm_fetch_now(sf_wm *m, const char *sha, char *path, size_t cap, sf_fetch_stats *st,
                    sf_err *err);

/* Mark `sha` ready (a gpu-evald that just served a job's model). */
void sf_wm_mark_ready(sf_wm *m, const char *sha);

#endif
