/*
 * server.c — gpu-evald's server loop: one ZeroMQ ROUTER, dynamic batching
 * across clients, several models, error replies, canary gate, metrics.
 *
 * Flow
 *   Every message from a client (a DEALER, or a REQ with its empty
 *   delimiter) is decoded into a request and appended to that client's FIFO.
 *   A request that cannot be served (malformed, unknown or refused model,
 *   more positions than max_batch, over the client's credit) enters the FIFO
 *   already answered with an error reply, so replies leave strictly in
 *   request order: a client's FIFO is flushed from its head, only through
 *   answered requests.
 *
 * Batching
 *   Per model, a batch runs when its queued positions reach max_batch or
 *   when its oldest queued request has waited max_wait_us. The batch is
 *   filled round-robin over the clients, one request per client per round,
 *   starting one client further on each batch, so a client that floods the
 *   server still gets only its turn; and each client may have at most
 *   client_credit positions queued (the reply tells it the credit). A
 *   request is never split across batches.
 *
 * Allocation and threads
 *   Batch assembly uses arrays sized at creation (max_batch positions); a
 *   decoded request is one allocation, its reply another. Everything runs in
 *   the thread that calls sf_evald_run(), except the metrics endpoint, which
 *   libmicrohttpd serves from its own thread under `metrics_mu`.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/fetch.h"
#include "common/registry.h"
#include "common/zsec.h"
#include "gpu-evald/evald.h"
#include "gpu-evald/metrics.h"
#include "gpu-evald/wire.h"

#define SF_RID_MAX        255
#define SF_CLIENT_IDLE_NS (120ull * 1000000000ull)
#define SF_DRAIN_MAX      4096
/* Replies queued per client, in messages: a client that stops reading
 * gets this many before the rest are dropped (counted), so it cannot grow
 * the server without bound. Clients ask and wait, so few are ever queued. */
#define SF_SNDHWM 256
/* Largest request accepted: two max_batch requests of full positions
 * (128 tokens, 80 queries: under 12 KiB each packed), so that a request a
 * little over max_batch still gets an error reply rather than being cut
 * off by ZeroMQ, while a peer cannot make the server buffer gigabytes. */
#define SF_POSITION_WIRE_MAX 12288

enum { REQ_QUEUED = 0, REQ_RUNNING = 1, REQ_DONE = 2 };

typedef struct sf_req sf_req;
typedef struct sf_client sf_client;
typedef struct sf_model sf_model;

struct sf_req {
    sf_req *next;          /* client FIFO                             */
    sf_req *mprev, *mnext; /* model queue (QUEUED only)               */
    sf_client *client;
    sf_model *model;
    sf_wire_request *wire; /* NULL for error entries                  */
    int n;
    int state;
    uint64_t t_arrive;
    uint8_t *reply;
    size_t reply_len;
};

struct sf_client {
    uint8_t rid[SF_RID_MAX];
    size_t rid_len;
    int delim; /* REQ-style envelope: reply with an empty frame first */
    sf_req *head, *tail;
    int queued; /* positions QUEUED or RUNNING: the credit in use */
    uint64_t last_seen;
    uint64_t blocked; /* batch number in which its next request did not fit */
};

struct sf_model {
    char sha[65];
    sf_bundle *bundle;
    sf_net *net;
    int refused;
    char refuse_msg[SF_ERR_MSG_MAX];
    sf_req *qhead, *qtail; /* QUEUED requests in arrival order */
    int pending;           /* positions queued                 */
    int metrics_id;
    int hot;            /* loaded on demand from models_dir (may be dropped) */
    uint64_t last_used; /* monotonic ns of the last request naming it     */
};

struct sf_evald {
    sf_evald_opts o;
    atomic_int stop;
    void *zctx, *router;
    sf_zsec_server *zsec; /* keys_dir's ZAP handler; NULL: plain */
    char endpoint[256];
    sf_model **models;
    int n_models, cap_models;
    sf_client **clients;
    int n_clients, cap_clients;
    int rr;             /* round-robin start             */
    uint64_t batch_seq; /* batches assembled so far       */
    /* batch assembly, sized for max_batch: four arrays in one block */
    void *batch;
    sf_pos *bpos;
    sf_net_out *bout;
    sf_req **breq;
    sf_client **bcli;
    sf_arena arena;
    sf_buf scratch, msg;
    sf_metrics *metrics;
    /* a model fetched from models_url (one at a time; fetch_done set by
     * the helper thread when it ends) */
    pthread_t fetch_th;
    int fetching;
    atomic_int fetch_done;
    volatile sig_atomic_t fetch_cancel;
    char fetch_sha[SF_SHA256_HEX_LEN + 1];
    char fetch_msg[SF_ERR_MSG_MAX + 64];
};

static void logf_(sf_evald *ev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(sf_evald *ev, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("gpu-evald: ", ev->o.log);
    vfprintf(ev->o.log, fmt, ap);
    fputc('\n', ev->o.log);
    fflush(ev->o.log);
    va_end(ap);
}

int sf_evald_create(const sf_evald_opts *opts, sf_evald **out, sf_err *err) {
    *out = NULL;
    sf_evald_opts o = *opts;
    if (!o.bind || !o.bind[0])
        return sf_err_set(err, SF_EINVAL, "no bind endpoint (--bind)");
    if (o.max_batch == 0)
        o.max_batch = 256;
    if (o.max_batch < 1 || o.max_batch > SF_WIRE_MAX_POSITIONS)
        return sf_err_set(err, SF_EINVAL, "max_batch %d out of range 1..%d", o.max_batch,
                          SF_WIRE_MAX_POSITIONS);
    if (o.max_wait_us == 0)
        o.max_wait_us = 2000;
    if (o.max_wait_us < 0 || o.max_wait_us > 10000000)
        return sf_err_set(err, SF_EINVAL, "max_wait_us %d out of range 0..10000000", o.max_wait_us);
    if (o.client_credit == 0)
        o.client_credit = 4 * o.max_batch;
    if (o.client_credit < o.max_batch)
        return sf_err_set(err, SF_EINVAL, "client_credit %d is below max_batch %d", o.client_credit,
                          o.max_batch);
    if (!sf_metrics_port_valid(o.metrics_port))
        return sf_err_set(err, SF_EINVAL,
                          "metrics port %d: expected 0 (off), 1..65535 or SF_METRICS_ANY_PORT",
                          o.metrics_port);
    if (!o.log)
        o.log = stderr;
    o.net.max_batch = o.max_batch;
    sf_evald *ev = calloc(1, sizeof *ev);
    if (!ev)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    ev->o = o;
    atomic_init(&ev->stop, 0);
    sf_arena_init(&ev->arena, NULL);
    size_t mb = (size_t)o.max_batch;
    const size_t size[4] = {mb * sizeof *ev->bpos, mb * sizeof *ev->bout, mb * sizeof *ev->breq,
                            mb * sizeof *ev->bcli};
    size_t at[4], total = 0;
    for (int i = 0; i < 4; i++) {
        at[i] = total;
        total += (size[i] + 63) & ~(size_t)63; /* each at a 64-byte offset */
    }
    unsigned char *b = ev->batch = calloc(1, total);
    if (b) {
        ev->bpos = (void *)(b + at[0]);
        ev->bout = (void *)(b + at[1]);
        ev->breq = (void *)(b + at[2]);
        ev->bcli = (void *)(b + at[3]);
    }
    ev->metrics = sf_metrics_create(o.max_batch);
    if (!b || !ev->metrics) {
        sf_evald_free(ev);
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    }
    *out = ev;
    return SF_OK;
}

static void req_free(sf_req *r) {
    if (!r)
        return;
    free(r->wire);
    free(r->reply);
    free(r);
}

void sf_evald_free(sf_evald *ev) {
    if (!ev)
        return;
    if (ev->fetching) { /* the part file stays for the next start to resume */
        ev->fetch_cancel = 1;
        pthread_join(ev->fetch_th, NULL);
    }
    sf_metrics_stop(ev->metrics);
    for (int i = 0; i < ev->n_clients; i++) {
        for (sf_req *r = ev->clients[i]->head, *nx; r; r = nx) {
            nx = r->next;
            req_free(r);
        }
        free(ev->clients[i]);
    }
    free(ev->clients);
    for (int i = 0; i < ev->n_models; i++) {
        sf_net_free(ev->models[i]->net);
        sf_bundle_free(ev->models[i]->bundle);
        free(ev->models[i]);
    }
    free(ev->models);
    if (ev->router)
        zmq_close(ev->router);
    sf_zsec_server_close(ev->zsec);
    if (ev->zctx)
        zmq_ctx_term(ev->zctx);
    sf_metrics_free(ev->metrics);
    sf_arena_free(&ev->arena);
    sf_buf_free(&ev->scratch);
    sf_buf_free(&ev->msg);
    free(ev->batch);
    free(ev);
}

/* Drop the hot-loaded models idle for model_idle_s (nothing queued: a
 * batch runs to completion before the loop comes back here). */
static void models_evict(sf_evald *ev, uint64_t now) {
    if (ev->o.model_idle_s <= 0)
        return;
    uint64_t idle = (uint64_t)ev->o.model_idle_s * 1000000000ull;
    for (int i = 0; i < ev->n_models;) {
        sf_model *m = ev->models[i];
        if (!m->hot || m->qhead || now - m->last_used < idle) {
            i++;
            continue;
        }
        logf_(ev, "model %s: not asked for in %d s; dropped", m->sha, ev->o.model_idle_s);
        sf_metrics_model_dropped(ev->metrics, m->metrics_id);
        sf_net_free(m->net);
        sf_bundle_free(m->bundle);
        free(m);
        ev->models[i] = ev->models[--ev->n_models];
    }
}

static sf_model *find_model(sf_evald *ev, const char *sha) {
    for (int i = 0; i < ev->n_models; i++)
        if (strcmp(ev->models[i]->sha, sha) == 0)
            return ev->models[i];
    return NULL;
}

int sf_evald_add_model(sf_evald *ev, const char *path, const char *pin, int *serving, sf_err *err) {
    if (serving)
        *serving = 0;
    sf_bundle *b;
    int rc = sf_bundle_load(path, pin, &b, err);
    if (rc != SF_OK) {
        logf_(ev, "cannot load model %s: %s", path, err ? err->msg : sf_strerror(rc));
        return rc;
    }
    if (find_model(ev, sf_bundle_sha256(b))) {
        rc =
            sf_err_set(err, SF_EINVAL, "%s: model %s is already served", path, sf_bundle_sha256(b));
        sf_bundle_free(b);
        return rc;
    }
    sf_net *net;
    if ((rc = sf_net_create(b, &ev->o.net, &net, err)) != SF_OK) {
        logf_(ev, "cannot bind model %s to the %s backend: %s", path,
              sf_backend_name(ev->o.net.backend), err ? err->msg : sf_strerror(rc));
        sf_bundle_free(b);
        return rc;
    }
    if (ev->n_models == ev->cap_models) {
        int cap = ev->cap_models ? 2 * ev->cap_models : 4;
        sf_model **m = realloc(ev->models, (size_t)cap * sizeof *m);
        if (!m) {
            sf_net_free(net);
            sf_bundle_free(b);
            return sf_err_set(err, SF_ENOMEM, "out of memory");
        }
        ev->models = m;
        ev->cap_models = cap;
    }
    sf_model *m = calloc(1, sizeof *m);
    if (!m) {
        sf_net_free(net);
        sf_bundle_free(b);
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    }
    memcpy(m->sha, sf_bundle_sha256(b), 65);
    m->bundle = b;
    m->net = net;
    /* The canary gate: golden positions through this very backend before
     * the model may take traffic. */
    sf_canary_report rep;
    sf_err cerr = {0};
    rc = sf_net_canary(net, b, &rep, &cerr);
    if (rc != SF_OK) {
        m->refused = 1;
        memcpy(m->refuse_msg, cerr.msg, sizeof m->refuse_msg);
        logf_(ev, "canary FAILED for model %s (%s): %s; refusing to serve this model", m->sha, path,
              cerr.msg);
        sf_err_set(err, SF_ECORRUPT, "%s", cerr.msg);
    } else {
        logf_(ev,
              "model %s (%s, arch %s, %s/%s) passed its canary: %d golden positions, max "
              "|error| %.3g, at most %.2f of its %s tolerance (nearest: position %d %s); serving",
              m->sha, path, sf_bundle_arch(b)->name, sf_backend_name(ev->o.net.backend),
              sf_precision_name(ev->o.net.precision), rep.positions, rep.max_abs_err, rep.max_ratio,
              sf_precision_name(rep.precision), rep.worst_position, rep.worst.where);
    }
    m->metrics_id = sf_metrics_add_model(ev->metrics, m->sha, path, sf_bundle_arch(b)->name,
                                         sf_backend_name(ev->o.net.backend), !m->refused,
                                         rep.max_abs_err, rep.max_ratio);
    ev->models[ev->n_models++] = m;
    if (serving)
        *serving = !m->refused;
    return SF_OK;
}

static void *fetch_main(void *arg) {
    sf_evald *ev = arg;
    sf_fetch_opts o = {.url_template = ev->o.models_url,
                       .cache_dir = ev->o.models_dir,
                       .cancel = &ev->fetch_cancel};
    char path[4200];
    sf_fetch_stats st;
    sf_err e = {0};
    if (sf_fetch_content(&o, ev->fetch_sha, path, sizeof path, &st, &e) == SF_OK)
        snprintf(ev->fetch_msg, sizeof ev->fetch_msg,
                 "model %s fetched into %.300s (%llu bytes in %.1f s%s)", ev->fetch_sha, path,
                 (unsigned long long)st.downloaded, st.seconds, st.resumed_from ? ", resumed" : "");
    else
        snprintf(ev->fetch_msg, sizeof ev->fetch_msg, "model %s: fetch failed: %.400s",
                 ev->fetch_sha, e.msg);
    atomic_store(&ev->fetch_done, 1);
    return NULL;
}

/* Join a finished fetch and log it. */
static void fetch_reap(sf_evald *ev) {
    if (ev->fetching && atomic_load(&ev->fetch_done)) {
        pthread_join(ev->fetch_th, NULL);
        ev->fetching = 0;
        logf_(ev, "%s", ev->fetch_msg);
    }
}

/* Start fetching `sha` (canonical) from models_url unless a fetch is under
 * way. Returns 1 when `sha` is being fetched now, 2 when another model is
 * (`sha` waits for it), 0 when no fetch could start. */
static int fetch_start(sf_evald *ev, const char *sha) {
    fetch_reap(ev);
    if (ev->fetching) /* one at a time: `sha` is fetched when asked for after this one */
        return !strcmp(ev->fetch_sha, sha) ? 1 : 2;
    snprintf(ev->fetch_sha, sizeof ev->fetch_sha, "%s", sha);
    atomic_store(&ev->fetch_done, 0);
    if (pthread_create(&ev->fetch_th, NULL, fetch_main, ev) != 0)
        return 0;
    ev->fetching = 1;
    logf_(ev, "model %s is not in %s: fetching it from %s", sha, ev->o.models_dir,
          ev->o.models_url);
    return 1;
}

/* A model this server does not hold, from models_dir: <dir>/<sha>.safetensors
 * loaded, pinned by `sha` and canaried (sf_evald_add_model), or NULL when
 * there is no such file or it does not load (logged). `sha` comes from the
 * wire: only 64 lower-case hex digits make a file name. With models_url,
 * *fetching is 1 while `sha` is being fetched, 2 while it waits for
 * another model's fetch (fetch_start). */
static sf_model *hot_load(sf_evald *ev, const char *sha, int *fetching) {
    *fetching = 0;
    if (!ev->o.models_dir || !sf_sha256_hex_canonical(sha))
        return NULL;
    char path[4200];
    if (ev->o.models_url)
        fetch_reap(ev);
    if (ev->fetching && !strcmp(ev->fetch_sha, sha)) {
        *fetching = 1; /* the file appears only once verified, but wait for the log line */
        return NULL;
    }
    if (sf_registry_bundle_path(ev->o.models_dir, sha, path, sizeof path) != SF_OK)
        return NULL;
    if (access(path, R_OK) != 0) {
        if (ev->o.models_url)
            *fetching = fetch_start(ev, sha);
        return NULL;
    }
    sf_err e = {0};
    if (sf_evald_add_model(ev, path, sha, NULL, &e) != SF_OK && !find_model(ev, sha))
        return NULL;
    sf_model *m = find_model(ev, sha);
    if (m) {
        m->hot = 1;
        logf_(ev, "model %s hot-loaded from %s", sha, path);
    }
    return m;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sf_evald_add_models_dir(sf_evald *ev, const char *dir, int *served, sf_err *err) {
    DIR *d = opendir(dir);
    if (!d) {
        int rc = sf_err_set(err, SF_EIO, "models dir %s: %s", dir, strerror(errno));
        logf_(ev, "%s", err ? err->msg : "models dir: cannot open");
        return rc;
    }
    char **names = NULL;
    int n = 0, cap = 0, rc = SF_OK;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 12 || strcmp(e->d_name + l - 12, ".safetensors") != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nn = realloc(names, (size_t)cap * sizeof *nn);
            if (!nn) {
                rc = sf_err_set(err, SF_ENOMEM, "out of memory");
                break;
            }
            names = nn;
        }
        size_t plen = strlen(dir) + l + 2;
        names[n] = malloc(plen);
        if (!names[n]) {
            rc = sf_err_set(err, SF_ENOMEM, "out of memory");
            break;
        }
        snprintf(names[n], plen, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (rc == SF_OK) {
        if (n > 1) /* names is NULL when the dir holds no bundle */
            qsort(names, (size_t)n, sizeof *names, cmp_str);
        for (int i = 0; i < n; i++) {
            sf_err e2 = {0};
            int r = sf_evald_add_model(ev, names[i], NULL, NULL, &e2);
            if (r != SF_OK && rc == SF_OK) {
                rc = r;
                if (err)
                    *err = e2;
            }
        }
        if (n == 0 && rc == SF_OK) {
            /* an empty dir is almost always a wrong path: say so, never idle */
            rc = sf_err_set(err, SF_ENOTFOUND, "models dir %s holds no *.safetensors bundle", dir);
            logf_(ev, "models dir %s holds no *.safetensors bundle", dir);
        }
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (served)
        *served = sf_evald_models_served(ev);
    return rc;
}

int sf_evald_models_served(const sf_evald *ev) {
    int k = 0;
    for (int i = 0; i < ev->n_models; i++)
        k += !ev->models[i]->refused;
    return k;
}

int sf_evald_bind(sf_evald *ev, sf_err *err) {
    if (sf_evald_models_served(ev) == 0 && !ev->o.models_url) /* else: fetched when asked */
        return sf_err_set(err, SF_ESTATE, "no model passed its canary; nothing to serve");
    ev->zctx = zmq_ctx_new();
    if (!ev->zctx)
        return sf_err_set(err, SF_EIO, "zmq_ctx_new: %s", zmq_strerror(errno));
    /* the ZAP handler before any socket: libzmq admits any CURVE key when
     * none is bound */
    if (ev->o.keys_dir && ev->o.keys_dir[0]) {
        int rc = sf_zsec_server_open(ev->zctx, ev->o.keys_dir, sf_log_to_file, ev->o.log, &ev->zsec,
                                     err);
        if (rc < 0)
            return sf_err_prefix(err, "--keys");
    } else {
        logf_(ev, "WARNING: no --keys: plain ZeroMQ, anyone who reaches %s can use this server",
              ev->o.bind);
    }
    ev->router = zmq_socket(ev->zctx, ZMQ_ROUTER);
    if (!ev->router)
        return sf_err_set(err, SF_EIO, "zmq_socket: %s", zmq_strerror(errno));
    if (ev->zsec && sf_zsec_server_apply(ev->zsec, ev->router, err) < 0)
        return sf_err_prefix(err, "%s", ev->o.bind);
    int one = 1, zero = 0, hwm = SF_SNDHWM;
    int64_t maxmsg = 2 * (int64_t)ev->o.max_batch * SF_POSITION_WIRE_MAX + 65536;
    zmq_setsockopt(ev->router, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(ev->router, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(ev->router, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(ev->router, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(ev->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (zmq_bind(ev->router, ev->o.bind) != 0)
        return sf_err_set(err, SF_EIO, "cannot bind %s: %s", ev->o.bind, zmq_strerror(errno));
    size_t len = sizeof ev->endpoint;
    if (zmq_getsockopt(ev->router, ZMQ_LAST_ENDPOINT, ev->endpoint, &len) != 0)
        snprintf(ev->endpoint, sizeof ev->endpoint, "%s", ev->o.bind);
    int rc = sf_metrics_start(ev->metrics, ev->o.metrics_public ? ev->endpoint : NULL,
                              ev->o.metrics_port, err);
    if (rc != SF_OK)
        return rc;
    logf_(ev,
          "serving %d model(s) on %s (backend %s, max_batch %d, max_wait_us %d, credit %d); "
          "metrics %s",
          sf_evald_models_served(ev), ev->endpoint, sf_backend_name(ev->o.net.backend),
          ev->o.max_batch, ev->o.max_wait_us, ev->o.client_credit, sf_metrics_url(ev->metrics));
    return SF_OK;
}

int sf_evald_metrics_port(const sf_evald *ev) {
    return sf_metrics_port(ev->metrics);
}

const char *sf_evald_endpoint(const sf_evald *ev) {
    return ev->endpoint;
}

void sf_evald_stop(sf_evald *ev) {
    atomic_store(&ev->stop, 1);
}

size_t sf_evald_metrics_text(sf_evald *ev, char *buf, size_t cap) {
    return sf_metrics_text(ev->metrics, buf, cap);
}

/* ---------------------------------------------------------------------------
 * Clients and replies
 * ------------------------------------------------------------------------- */
static sf_client *client_get(sf_evald *ev, const uint8_t *rid, size_t len, uint64_t now) {
    for (int i = 0; i < ev->n_clients; i++) {
        sf_client *c = ev->clients[i];
        if (c->rid_len == len && memcmp(c->rid, rid, len) == 0) {
            c->last_seen = now;
            return c;
        }
    }
    if (ev->n_clients == ev->cap_clients) {
        int cap = ev->cap_clients ? 2 * ev->cap_clients : 16;
        sf_client **cs = realloc(ev->clients, (size_t)cap * sizeof *cs);
        if (!cs)
            return NULL;
        ev->clients = cs;
        ev->cap_clients = cap;
    }
    sf_client *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    memcpy(c->rid, rid, len);
    c->rid_len = len;
    c->last_seen = now;
    ev->clients[ev->n_clients++] = c;
    sf_metrics_clients(ev->metrics, ev->n_clients);
    return c;
}

/* Forget clients that have nothing queued and have been silent a while. */
static void clients_evict(sf_evald *ev, uint64_t now) {
    for (int i = 0; i < ev->n_clients;) {
        sf_client *c = ev->clients[i];
        if (!c->head && now - c->last_seen > SF_CLIENT_IDLE_NS) {
            free(c);
            ev->clients[i] = ev->clients[--ev->n_clients];
            sf_metrics_clients(ev->metrics, ev->n_clients);
        } else {
            i++;
        }
    }
}

static uint32_t credit_left(const sf_evald *ev, const sf_client *c) {
    int left = ev->o.client_credit - c->queued;
    return left > 0 ? (uint32_t)left : 0;
}

/* Send every answered request at the head of the client's FIFO. */
static void client_flush(sf_evald *ev, sf_client *c) {
    while (c->head && c->head->state == REQ_DONE) {
        sf_req *r = c->head;
        int ok = zmq_send(ev->router, c->rid, c->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0;
        if (ok && c->delim)
            ok = zmq_send(ev->router, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0;
        if (ok)
            ok = zmq_send(ev->router, r->reply, r->reply_len, ZMQ_DONTWAIT) >= 0;
        if (!ok) /* the client went away (EHOSTUNREACH) or stopped reading */
            sf_metrics_error(ev->metrics, -1, "reply_dropped");
        c->head = r->next;
        if (!c->head)
            c->tail = NULL;
        req_free(r);
    }
}

static void client_append(sf_client *c, sf_req *r) {
    r->client = c;
    r->next = NULL;
    if (c->tail)
        c->tail->next = r;
    else
        c->head = r;
    c->tail = r;
}

/* Answer `r` with an error (it is already in its client's FIFO). */
static void req_fail(sf_evald *ev, sf_req *r, uint64_t id, const char *model, int status,
                     const char *msg) {
    sf_err e = {0};
    if (sf_wire_reply_encode(id, model, status, msg, NULL, 0, credit_left(ev, r->client),
                             &ev->scratch, &ev->msg, &e) == SF_OK) {
        r->reply = malloc(ev->msg.len);
        if (r->reply) {
            memcpy(r->reply, ev->msg.p, ev->msg.len);
            r->reply_len = ev->msg.len;
        }
    }
    r->state = REQ_DONE;
}

static const char *error_kind(int status) {
    switch (status) {
    case SF_EFORMAT: return "malformed";
    case SF_EVERSION: return "version";
    case SF_EINVAL: return "invalid_position";
    case SF_ENOTFOUND: return "unknown_model";
    case SF_EFULL: return "over_limit";
    case SF_ECORRUPT: return "model_refused";
    default: return "backend";
    }
}

static void model_enqueue(sf_model *m, sf_req *r) {
    r->mnext = NULL;
    r->mprev = m->qtail;
    if (m->qtail)
        m->qtail->mnext = r;
    else
        m->qhead = r;
    m->qtail = r;
    m->pending += r->n;
}

static void model_dequeue(sf_model *m, sf_req *r) {
    if (r->mprev)
        r->mprev->mnext = r->mnext;
    else
        m->qhead = r->mnext;
    if (r->mnext)
        r->mnext->mprev = r->mprev;
    else
        m->qtail = r->mprev;
    r->mprev = r->mnext = NULL;
    m->pending -= r->n;
}

/* One message from the ROUTER: frames [routing id][""]?[payload]. A
 * message with another number of payload frames still gets its error reply
 * in order; only one without a usable routing id cannot be answered. */
static void handle_message(sf_evald *ev, zmq_msg_t *frames, int nframes, uint64_t now) {
    if (nframes < 2 || zmq_msg_size(&frames[0]) > SF_RID_MAX) {
        sf_metrics_error(ev->metrics, -1, "malformed");
        return; /* nobody to answer */
    }
    int delim = nframes >= 3 && zmq_msg_size(&frames[1]) == 0;
    int payload_frames = nframes - 1 - delim;
    sf_client *c = client_get(ev, zmq_msg_data(&frames[0]), zmq_msg_size(&frames[0]), now);
    sf_req *r = calloc(1, sizeof *r);
    if (!c || !r) {
        free(r);
        logf_(ev, "out of memory taking a request");
        return;
    }
    c->delim = delim;
    r->t_arrive = now;
    client_append(c, r);
    zmq_msg_t *payload = &frames[nframes - 1];
    sf_err e = {0};
    uint64_t id = 0;
    char model[65] = "";
    sf_wire_request *w = NULL;
    sf_model *m = NULL;
    int rc = payload_frames == 1
                 ? sf_wire_request_decode(zmq_msg_data(payload), zmq_msg_size(payload), &ev->arena,
                                          &w, &id, model, &e)
                 : sf_err_set(&e, SF_EFORMAT, "expected one payload frame, got %d", payload_frames);
    if (rc == SF_OK) {
        m = find_model(ev, w->model);
        int fetching = 0;
        if (!m)
            m = hot_load(ev, w->model, &fetching);
        if (!m && fetching == 2)
            rc = sf_err_set(&e, SF_ENOTFOUND,
                            "model %s waits: model %.12s... is being fetched first (one at a "
                            "time); ask again",
                            w->model, ev->fetch_sha);
        else if (!m && fetching)
            rc = sf_err_set(&e, SF_ENOTFOUND, "model %s is being fetched from %s; ask again",
                            w->model, ev->o.models_url);
        else if (!m)
            rc = sf_err_set(&e, SF_ENOTFOUND, "unknown model %s (this server has %d models)",
                            w->model, ev->n_models);
        else if (m->refused) {
            rc = sf_err_set(&e, SF_ECORRUPT, "%s", m->refuse_msg);
            sf_err_prefix(&e, "model %s is refused (canary failed at load)", m->sha);
        } else if (w->n > ev->o.max_batch)
            rc = sf_err_set(&e, SF_EFULL, "request of %d positions exceeds max_batch %d", w->n,
                            ev->o.max_batch);
        else if (c->queued + w->n > ev->o.client_credit)
            rc = sf_err_set(&e, SF_EFULL,
                            "over credit: %d positions already queued for this client, credit %d",
                            c->queued, ev->o.client_credit);
    }
    if (rc != SF_OK) {
        free(w);
        sf_metrics_error(ev->metrics, m ? m->metrics_id : -1, error_kind(rc));
        req_fail(ev, r, id, model, rc, e.msg);
        client_flush(ev, c); /* goes out now if nothing is ahead of it */
        return;
    }
    r->wire = w;
    r->n = w->n;
    r->model = m;
    m->last_used = now;
    c->queued += w->n;
    model_enqueue(m, r);
    sf_metrics_request(ev->metrics, m->metrics_id);
}

/* Run one batch of model `m`. */
static void run_batch(sf_evald *ev, sf_model *m, uint64_t now) {
    int n = 0, nreq = 0;
    int nc = ev->n_clients;
    /* Round-robin: one request per client per round, in each client's
     * arrival order; a client whose next request does not fit sits out the
     * rest of this batch (its requests are never reordered). */
    int progress = 1;
    uint64_t batch = ++ev->batch_seq;
    while (progress && n < ev->o.max_batch) {
        progress = 0;
        for (int k = 0; k < nc && n < ev->o.max_batch; k++) {
            int ci = (ev->rr + k) % nc;
            sf_client *c = ev->clients[ci];
            if (c->blocked == batch)
                continue;
            sf_req *r = c->head;
            while (r && !(r->state == REQ_QUEUED && r->model == m))
                r = r->next;
            if (!r)
                continue;
            if (n + r->n > ev->o.max_batch) {
                c->blocked = batch;
                continue;
            }
            r->state = REQ_RUNNING;
            model_dequeue(m, r);
            for (int i = 0; i < r->n; i++)
                ev->bpos[n + i] = r->wire->pos[i];
            ev->breq[nreq++] = r;
            n += r->n;
            progress = 1;
        }
    }
    if (nc)
        ev->rr = (ev->rr + 1) % nc;
    if (n == 0)
        return;
    sf_err e = {0};
    uint64_t t0 = sf_now_ns();
    int rc = sf_net_eval(m->net, ev->bpos, n, ev->bout, &e);
    uint64_t t1 = sf_now_ns();
    int off = 0;
    for (int i = 0; i < nreq; i++) {
        sf_req *r = ev->breq[i];
        r->client->queued -= r->n;
        sf_metrics_wait(ev->metrics, m->metrics_id, (double)(t0 - r->t_arrive) / 1e9);
        if (rc == SF_OK) {
            sf_err e2 = {0};
            if (sf_wire_reply_encode(r->wire->id, m->sha, SF_OK, NULL, ev->bout + off, r->n,
                                     credit_left(ev, r->client), &ev->scratch, &ev->msg,
                                     &e2) == SF_OK &&
                (r->reply = malloc(ev->msg.len)) != NULL) {
                memcpy(r->reply, ev->msg.p, ev->msg.len);
                r->reply_len = ev->msg.len;
                r->state = REQ_DONE;
            } else {
                req_fail(ev, r, r->wire->id, m->sha, SF_ENOMEM, "server out of memory");
            }
        } else {
            sf_metrics_error(ev->metrics, m->metrics_id, "backend");
            req_fail(ev, r, r->wire->id, m->sha, rc, e.msg);
        }
        off += r->n;
    }
    if (rc != SF_OK)
        logf_(ev, "batch of %d positions for model %s failed: %s", n, m->sha, e.msg);
    sf_metrics_batch(ev->metrics, m->metrics_id, n, (double)(t1 - t0) / 1e9, now);
    /* Flushing frees the requests it sends: take the clients first. */
    for (int i = 0; i < nreq; i++)
        ev->bcli[i] = ev->breq[i]->client;
    for (int i = 0; i < nreq; i++)
        client_flush(ev, ev->bcli[i]);
}

/* The model whose batch should run now, or NULL; `*wait_us` receives how
 * long until the next one is due (for the poll timeout). */
static sf_model *ready_model(sf_evald *ev, uint64_t now, int64_t *wait_us) {
    sf_model *best = NULL;
    uint64_t best_t = UINT64_MAX;
    *wait_us = 100000;
    for (int i = 0; i < ev->n_models; i++) {
        sf_model *m = ev->models[i];
        if (!m->qhead)
            continue;
        uint64_t due = m->qhead->t_arrive + (uint64_t)ev->o.max_wait_us * 1000u;
        if (m->pending >= ev->o.max_batch || due <= now) {
            if (m->qhead->t_arrive < best_t) {
                best = m;
                best_t = m->qhead->t_arrive;
            }
        } else {
            int64_t w = (int64_t)(due - now) / 1000;
            if (w < *wait_us)
                *wait_us = w;
        }
    }
    return best;
}

int sf_evald_run(sf_evald *ev, sf_err *err) {
    if (!ev->router)
        return sf_err_set(err, SF_ESTATE, "sf_evald_run before sf_evald_bind");
    zmq_msg_t frames[4];
    for (int i = 0; i < 4; i++)
        zmq_msg_init(&frames[i]);
    uint64_t last_evict = sf_now_ns();
    int rc = SF_OK;
    while (!atomic_load(&ev->stop)) {
        uint64_t now = sf_now_ns();
        int64_t wait_us;
        sf_model *m = ready_model(ev, now, &wait_us);
        if (m) {
            run_batch(ev, m, now);
            continue;
        }
        /* zmq_poll's resolution is a millisecond: round up, so a batch is
         * never run before its max_wait is over (at most ~1 ms late). */
        zmq_pollitem_t item = {ev->router, 0, ZMQ_POLLIN, 0};
        long timeout_ms = (long)((wait_us + 999) / 1000);
        if (zmq_poll(&item, 1, timeout_ms) < 0) {
            if (errno == EINTR)
                continue;
            rc = sf_err_set(err, SF_EIO, "zmq_poll: %s", zmq_strerror(errno));
            break;
        }
        if ((rc = sf_zsec_server_check(ev->zsec, err)) < 0)
            break; /* no one's handshake is checked any more: serve no one */
        /* Drain what arrived, then batch. */
        for (int k = 0; k < SF_DRAIN_MAX; k++) {
            int nf = 0, more = 1, got = 1;
            while (more) {
                zmq_msg_t *f = &frames[nf < 3 ? nf : 3];
                if (zmq_msg_recv(f, ev->router, ZMQ_DONTWAIT) < 0) {
                    got = 0;
                    break;
                }
                nf++;
                more = zmq_msg_more(f);
            }
            if (!got)
                break;
            now = sf_now_ns();
            /* the connection's key, checked before a byte is decoded */
            int role = sf_zsec_peer(ev->zsec, &frames[nf < 4 ? nf - 1 : 3], NULL, err);
            if (role < 0) {
                rc = role; /* the ZAP handler died: serve no one */
                break;
            }
            if (role != SF_ZSEC_REFUSED)
                handle_message(ev, frames, nf > 4 ? 4 : nf, now);
        }
        if (rc < 0)
            break;
        if (now - last_evict > 1000000000ull) {
            clients_evict(ev, now);
            models_evict(ev, now);
            last_evict = now;
        }
    }
    for (int i = 0; i < 4; i++)
        zmq_msg_close(&frames[i]);
    return rc;
}
