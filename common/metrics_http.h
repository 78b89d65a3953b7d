/*
 * metrics_http.h — the one HTTP /metrics server of the coordinator and
 * gpu-evald (libmicrohttpd), with one port convention (docs/operator.md
 * "Metrics"):
 *
 *   port   0 (the default): no HTTP server
 *          1..65535: that port
 *          SF_METRICS_ANY_PORT (`*` on a command line): any free port; the
 *          program prints the one it got
 *   where  the address of the process's own ZeroMQ endpoint as bound:
 *          tcp://127.0.0.1:P (the default endpoints) and ipc:// give
 *          loopback only; tcp://0.0.0.0:P (or *) every interface; any other
 *          address that address. So /metrics is reachable exactly from
 *          where the process's ZeroMQ socket is, and nowhere else.
 *
 * It answers GET and HEAD of /metrics with the page the owner renders
 * (Prometheus text format 0.0.4), of the owner's routes (below: the
 * coordinator's dashboard and its model bundles), 404 for other paths and
 * 405 for other methods. It waits on epoll (poll where epoll is missing), so descriptors
 * past 1,024 are no limit; at most SF_METRICS_MAX_CONNECTIONS clients are
 * served at once (more are refused at accept) and a connection idle for
 * SF_METRICS_IDLE_S seconds is closed.
 *
 * Threading: the server runs on libmicrohttpd's own thread, and `render`
 * is called there, so the owner renders from state it shares under a lock.
 * Errors are values; nothing here writes to stderr.
 */
#ifndef SF_METRICS_HTTP_H
#define SF_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

enum {
    SF_METRICS_MAX_CONNECTIONS = 512, /* clients served at once                     */
    SF_METRICS_IDLE_S = 10,           /* an idle connection is closed after this    */
    SF_METRICS_OFF = 0,               /* no HTTP server                                       */
    SF_METRICS_ANY_PORT = -2,         /* any free port (-1 is refused: it used to mean "off") */
};

/* Whether `port` follows the convention above (0, 1..65535 or
 * SF_METRICS_ANY_PORT). */
int sf_metrics_port_valid(int port);

/* Parse a command-line port: "0".."65535" or "*" (SF_METRICS_ANY_PORT).
 * Returns SF_OK, or SF_EINVAL ("expected 0 (off), a port 1..65535 or *"). */
int sf_metrics_port_parse(const char *s, int *port, sf_err *err);

/* The page: a new malloc'd buffer holding `*len` bytes of text that the
 * server frees, or NULL when out of memory (the request gets no answer). */
typedef char *(*sf_metrics_render_fn)(void *ctx, size_t *len);

typedef struct sf_metrics_http sf_metrics_http;

/* One HTTP request as a route sees it. Everything is owned by the server
 * and valid during the call only. */
typedef struct sf_http_request {
    const char *method; /* "GET" or "HEAD" (others never reach a route)     */
    const char *path;   /* the URL's path, e.g. "/models/<sha256>"            */
    const char *rest;   /* path past the route's prefix ("" for an exact one) */
    void *conn;         /* for sf_http_query; NULL: sf_http_dispatch's        */
} sf_http_request;

/* A query argument of `req` ("?k=v"), or NULL when absent (always NULL for
 * a request made by sf_http_dispatch). */
const char *sf_http_query(const sf_http_request *req, const char *key);

/* What a route answers. It sets `status` and either a body or a file:
 *   body  a malloc'd buffer of `len` bytes the server frees (NULL with len
 *         0: empty), sent as `content_type`;
 *   file  `fd` >= 0, open for reading, of `file_size` bytes; the server
 *         owns and closes it, and answers a Range request ("bytes=A-",
 *         "bytes=A-B", "bytes=-N") with 206 and that part, 416 when the
 *         range lies outside the file; "Accept-Ranges: bytes" always.
 * `etag` (quoted by the server) and `cache_control` are sent when set;
 * `sent` (when set) is increased, atomically, by the bytes of the file or
 * body queued for this answer (a range's length for a 206). */
typedef struct sf_http_reply {
    unsigned status;
    const char *content_type; /* static string; NULL: text/plain */
    char *body;
    size_t len;
    int fd; /* -1: no file (the server sets -1 before calling a route) */
    uint64_t file_size;
    char etag[80];
    const char *cache_control; /* static string or NULL */
    uint64_t *sent;            /* the owner's counter, or NULL */
} sf_http_reply;

/* A route: called on libmicrohttpd's thread for a GET or HEAD whose path
 * equals `prefix`, or starts with it when `prefix` ends in '/'. Returns 0
 * with `rep` filled, or -1 to drop the connection (out of memory). */
typedef int (*sf_http_route_fn)(void *ctx, const sf_http_request *req, sf_http_reply *rep);

typedef struct sf_http_route {
    const char *prefix; /* static string: "/api/status", "/models/", ... */
    sf_http_route_fn fn;
    void *ctx;
} sf_http_route;

enum { SF_HTTP_MAX_ROUTES = 16 };

/* Answer the GET of `path` (a URL path; a "?query" after it is dropped)
 * with the first of routes[0..n) that matches it, as the server does,
 * for an owner that takes requests another way too (the coordinator's
 * dashboard through its CURVE socket: `sf-fleet dashboard`). Returns 1
 * with `rep` filled (the caller owns rep->body and rep->fd), 0 when no
 * route matches (rep untouched), -1 when the route failed (nothing to
 * free). */
int sf_http_dispatch(const sf_http_route *routes, int n, const char *path, sf_http_reply *rep);

/* Serve /metrics on `port` at the address of `endpoint` (the process's own
 * ZeroMQ endpoint as bound, ZMQ_LAST_ENDPOINT; NULL: loopback). With
 * SF_METRICS_OFF, *out is NULL and the call succeeds. Errors: SF_EINVAL (a
 * port outside the convention), SF_EIO naming the address and the OS's
 * reason ("cannot serve /metrics on 127.0.0.1:9105: Address already in
 * use"). */
int sf_metrics_http_start(const char *endpoint, int port, sf_metrics_render_fn render, void *ctx,
                          sf_metrics_http **out, sf_err *err);

/* sf_metrics_http_start with `n_routes` (at most SF_HTTP_MAX_ROUTES, copied)
 * routes besides /metrics, tried in order; /metrics itself stays the
 * render function's. Errors as above, and SF_EINVAL for too many routes. */
int sf_metrics_http_start_routes(const char *endpoint, int port, sf_metrics_render_fn render,
                                 void *ctx, const sf_http_route *routes, int n_routes,
                                 sf_metrics_http **out, sf_err *err);

/* The port bound (0 for NULL, i.e. when off). */
int sf_metrics_http_port(const sf_metrics_http *h);

/* "http://ADDRESS:PORT/metrics" as bound, or "off" for NULL. Owned by the
 * server. */
const char *sf_metrics_http_url(const sf_metrics_http *h);

/* Stop serving and free (NULL is a no-op). `render` is not called after
 * this returns. */
void sf_metrics_http_stop(sf_metrics_http *h);

#endif
