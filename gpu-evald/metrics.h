/*
 * metrics.h — gpu-evald's Prometheus metrics: counters, the batch-size
 * histogram, queue-wait quantiles and evals/s per model, served on /metrics
 * by common/metrics_http.h from its own thread. Internal to gpu-evald.
 *
 * Every update takes `mu`; the HTTP thread takes it to render the page.
 */
#ifndef SF_EVALD_METRICS_H
#define SF_EVALD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/metrics_http.h"

typedef struct sf_metrics sf_metrics;

sf_metrics *sf_metrics_create(int max_batch);
void sf_metrics_free(sf_metrics *m);

/* Register a model; returns its id for the calls below. `canary_err`: the
 * canary's largest |error|; `canary_ratio`: its largest error relative to
 * the element's tolerance (<= 1 passed). */
int sf_metrics_add_model(sf_metrics *m, const char *sha, const char *path, const char *arch,
                         const char *backend, int serving, double canary_err, double canary_ratio);

/* Model `model_id` was dropped (hot swap): sf_evald_model_loaded{model} 0;
 * its counters stay, and adding the same SHA-256 again reuses its series. */
void sf_metrics_model_dropped(sf_metrics *m, int model_id);

/* model_id -1: not attributable to a model (e.g. an undecodable request). */
void sf_metrics_error(sf_metrics *m, int model_id, const char *kind);
void sf_metrics_request(sf_metrics *m, int model_id);
void sf_metrics_wait(sf_metrics *m, int model_id, double seconds);
void sf_metrics_batch(sf_metrics *m, int model_id, int positions, double seconds, uint64_t now_ns);
void sf_metrics_clients(sf_metrics *m, int n);

/* Serve /metrics on `port` at `endpoint`'s address (common/metrics_http.h:
 * 0 off, a port, SF_METRICS_ANY_PORT). Errors: those of
 * sf_metrics_http_start. */
int sf_metrics_start(sf_metrics *m, const char *endpoint, int port, sf_err *err);
int sf_metrics_port(const sf_metrics *m);        /* 0 when not serving */
const char *sf_metrics_url(const sf_metrics *m); /* "http://...", or "off" */
void sf_metrics_stop(sf_metrics *m);

/* Render the page (Prometheus text format 0.0.4); returns the full length,
 * writing at most cap bytes including the NUL. */
size_t sf_metrics_text(sf_metrics *m, char *buf, size_t cap);

#endif
