/*
 * evald.h — gpu-evald, the batching inference server: one ZeroMQ ROUTER,
 * dynamic batching across clients, several models at once, a canary gate
 * per model, Prometheus metrics. It runs networks through the model runtime
 * (model/model.h); its wire codec is gpu-evald/wire.h and the worker-side
 * client gpu-evald/neteval.h. docs/operator.md is the reference for running
 * it, docs/model.md "Wire protocol" for what it speaks.
 *
 * Errors are values (SF_OK or a negative SF_E* code, with the optional
 * sf_err naming what went wrong). The server runs its loop in the calling
 * thread; sf_evald_stop() may be called from any thread or a signal
 * handler. Nothing here keeps global state.
 */
#ifndef SF_EVALD_H
#define SF_EVALD_H

#include <stddef.h>
#include <stdio.h>

#include "common/common.h"
#include "common/metrics_http.h"
#include "model/model.h"

/* Server settings. Zero-initialise, then set what differs from the
 * defaults named here. */
typedef struct sf_evald_opts {
    const char *bind;  /* ZeroMQ endpoint of the ROUTER, e.g. "tcp://0.0.0.0:5555" */
    int max_batch;     /* positions per batch (default 256)                  */
    int max_wait_us;   /* a batch runs once its oldest request waited this
                        * long (default 2000)                               */
    int client_credit; /* positions one client may have queued (default
                        * 4 * max_batch); a request beyond it is refused   */
    int metrics_port;  /* /metrics (common/metrics_http.h): 0 off (default),
                        * 1..65535, SF_METRICS_ANY_PORT; at the ROUTER's
                        * address                                          */
    sf_net_opts net;   /* backend for every model                            */
    /* Hot swap (docs/model.md "Registry and hot swap"). `models_dir`: a
     * request naming a model this server does not hold loads
     * <models_dir>/<sha256>.safetensors (pinned by that SHA-256), runs its
     * canary and then serves it, without a restart; a model registry
     * names its bundles that way. `model_idle_s` > 0: a model loaded that
     * way and not asked for during that many seconds (nothing queued) is
     * dropped; models given at start stay. */
    const char *models_dir;
    int model_idle_s;
    /* With models_dir: a model missing there is fetched by its SHA-256
     * from this URL template (common/fetch.h: verified, resumable) into
     * models_dir on a helper thread, one at a time; meanwhile requests for
     * it are answered SF_ENOTFOUND "is being fetched", and the first one
     * after the fetch loads it as above. NULL: no fetching. */
    const char *models_url;
    FILE *log; /* log lines go here (default stderr)                 */
    /* A key directory (common/zsec.h): the ROUTER is a CURVE server with
     * its server.key, and only keys in its clients/ and operators/ get in
     * (the ZAP handler is bound first; a revoked key's requests are
     * dropped). NULL: plain ZeroMQ, warned at start. */
    const char *keys_dir;
    int metrics_public; /* /metrics at the ROUTER's address (0: 127.0.0.1) */
} sf_evald_opts;

typedef struct sf_evald sf_evald;

/* Create a server (no socket yet). Errors: SF_EINVAL for bad options. */
int sf_evald_create(const sf_evald_opts *opts, sf_evald **out, sf_err *err);

/* Load a bundle (pinned by `pin_sha256` when non-NULL), bind it to the
 * backend and run its canary. Returns SF_OK once the model is registered;
 * `*serving` (may be NULL) says whether it passed its canary. A model that
 * fails it stays registered but refused: a log line "canary FAILED ...
 * refusing to serve this model", the metric sf_evald_canary_ok{model} 0,
 * an error reply to every request naming it, *serving 0 and the canary's
 * message in `err`. Load and backend errors (SHA-256 mismatch included)
 * are returned as they are, and nothing is registered. Adding a model
 * whose SHA-256 is already registered is SF_EINVAL. */
int sf_evald_add_model(sf_evald *ev, const char *path, const char *pin_sha256, int *serving,
                       sf_err *err);

/* Add every "*.safetensors" file in `dir` (sorted by name). Returns the
 * first load error after trying them all, SF_EIO when `dir` cannot be
 * opened, or SF_ENOTFOUND when it holds no bundle (each logged); `*served` (may be NULL) receives
 * the number of models now served (canary passed). */
int sf_evald_add_models_dir(sf_evald *ev, const char *dir, int *served, sf_err *err);

/* Number of models that passed their canary and are served. */
int sf_evald_models_served(const sf_evald *ev);

/* Bind the ROUTER and start the metrics endpoint. Errors: SF_EIO (bind
 * failed, with the ZeroMQ or HTTP error), SF_ESTATE (no model served). */
int sf_evald_bind(sf_evald *ev, sf_err *err);

/* The metrics port actually bound (useful with SF_METRICS_ANY_PORT), or 0
 * when off. */
int sf_evald_metrics_port(const sf_evald *ev);

/* The ROUTER's endpoint as bound (ZMQ_LAST_ENDPOINT), e.g. with the port
 * chosen for "tcp://127.0.0.1:*". */
const char *sf_evald_endpoint(const sf_evald *ev);

/* Serve until sf_evald_stop(). Returns SF_OK after a stop, or SF_EIO on a
 * socket failure. */
int sf_evald_run(sf_evald *ev, sf_err *err);

/* Ask sf_evald_run() to return; safe from any thread and from a signal
 * handler (one atomic store). */
void sf_evald_stop(sf_evald *ev);

/* The metrics page as served on /metrics (Prometheus text format 0.0.4).
 * Writes at most `cap` bytes including the NUL; returns the full length. */
size_t sf_evald_metrics_text(sf_evald *ev, char *buf, size_t cap);

void sf_evald_free(sf_evald *ev);

#endif
