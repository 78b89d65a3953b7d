/*
 * dashboard.c — the coordinator's read-only dashboard (dashboard.h): the
 * JSON form of a protobuf-c message and its schema, the snapshots the
 * loop publishes for the HTTP thread, and the routes.
 *
 * Why snapshots: a route runs on libmicrohttpd's thread while the loop
 * changes the worker table and the gate's pairs. The loop copies what the
 * routes read into co->dash under dash->lock every 250 ms (at most a few
 * hundred bytes per worker, and only the gate pairs folded since the last
 * copy); a route holds the lock only to copy that out again, and formats
 * its JSON after letting go. The gate document, whose bootstrap is the
 * costly part, is computed once per number of pairs and kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coordinator/dashboard.h"
#include "coordinator/internal.h"
#include "proto/pbjson.h"

/* the page, built in from coordinator/dashboard.html (embed_file.c) */
extern const unsigned char sf_dashboard_page[];
extern const size_t sf_dashboard_page_len;

/* ---------------------------------------------------------------------------
 * JSON of a message, and its schema
 * ------------------------------------------------------------------------- */

/* The dashboard's form of a message (dashboard.h): proto/pbjson.h with
 * enums by name and 64-bit integers as JSON integers. */
static json_t *message_json(const ProtobufCMessage *m) {
    static const sf_pbjson_opts form = {.enum_names = 1};
    return sf_pbjson_message(m, &form);
}

static char *dump(json_t *o, size_t flags, size_t *len) {
    char *s = o ? json_dumps(o, flags | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(o);
    *len = s ? strlen(s) : 0;
    return s;
}

char *sf_dash_message_json(const ProtobufCMessage *m, size_t *len) {
    return dump(message_json(m), JSON_COMPACT | JSON_PRESERVE_ORDER, len);
}

char *sf_fleet_status_json(const Spirefleet__StatusReply *st, size_t *len) {
    return sf_dash_message_json(&st->base, len);
}

/* The schema of one value of field f. */
static json_t *value_schema(const ProtobufCFieldDescriptor *f) {
    switch (f->type) {
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: return json_pack("{s:s,s:i}", "type", "integer", "minimum", 0);
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: return json_pack("{s:s}", "type", "integer");
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE: return json_pack("{s:[ss]}", "type", "number", "null");
    case PROTOBUF_C_TYPE_BOOL: return json_pack("{s:s}", "type", "boolean");
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES: return json_pack("{s:s}", "type", "string");
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumDescriptor *e = f->descriptor;
        json_t *names = json_array();
        for (unsigned k = 0; k < e->n_values; k++)
            json_array_append_new(names, json_string(e->values[k].name));
        return json_pack("{s:o}", "enum", names);
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessageDescriptor *sub = f->descriptor;
        char ref[200];
        snprintf(ref, sizeof ref, "#/$defs/%s", sub->short_name);
        return json_pack("{s:s}", "$ref", ref);
    }
    }
    return json_object();
}

/* Add the schema of message d (and of the messages its fields hold) to defs. */
static void message_schema(json_t *defs, const ProtobufCMessageDescriptor *d) {
    if (json_object_get(defs, d->short_name))
        return;
    json_t *props = json_object(), *req = json_array();
    json_object_set_new(defs, d->short_name,
                        json_pack("{s:s,s:o,s:o,s:b}", "type", "object", "properties", props,
                                  "required", req, "additionalProperties", 0));
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        json_t *v = value_schema(f);
        if (f->label == PROTOBUF_C_LABEL_REPEATED)
            v = json_pack("{s:s,s:o}", "type", "array", "items", v);
        json_object_set_new(props, f->name, v);
        json_array_append_new(req, json_string(f->name));
        if (f->type == PROTOBUF_C_TYPE_MESSAGE)
            message_schema(defs, f->descriptor);
    }
}

/* The message endpoints, in one table: path and message. */
static const struct {
    const char *path;
    const ProtobufCMessageDescriptor *d;
} MESSAGE_ENDPOINTS[] = {
    {"/api/status", &spirefleet__status_reply__descriptor},
    {"/api/workers", &spirefleet__workers_reply__descriptor},
    {"/api/rate", &spirefleet__rate_history__descriptor},
    {"/api/errors", &spirefleet__error_log__descriptor},
};

char *sf_dash_schema_json(size_t *len) {
    json_t *defs = json_object(), *eps = json_object();
    for (size_t i = 0; i < sizeof MESSAGE_ENDPOINTS / sizeof MESSAGE_ENDPOINTS[0]; i++) {
        char ref[200];
        message_schema(defs, MESSAGE_ENDPOINTS[i].d);
        snprintf(ref, sizeof ref, "#/$defs/%s", MESSAGE_ENDPOINTS[i].d->short_name);
        json_object_set_new(eps, MESSAGE_ENDPOINTS[i].path, json_pack("{s:s}", "$ref", ref));
    }
    json_t *o =
        json_pack("{s:s,s:s,s:o,s:o}", "$schema", "https://json-schema.org/draft/2020-12/schema",
                  "title", "spirefleet coordinator dashboard (generated from proto/fleet.proto)",
                  "$defs", defs, "x-endpoints", eps);
    char *s = dump(o, JSON_INDENT(2) | JSON_SORT_KEYS, len);
    if (s) { /* a file ends in a newline: the terminator's byte holds it */
        char *t = realloc(s, *len + 2);
        if (!t) {
            free(s);
            return NULL;
        }
        t[(*len)++] = '\n';
        t[*len] = '\0';
        s = t;
    }
    return s;
}

/* ---------------------------------------------------------------------------
 * The snapshots
 * ------------------------------------------------------------------------- */

typedef struct dash_worker {
    char worker_id[CO_WORKER_ID_MAX];
    char key_id[SF_ZSEC_ID_LEN + 1];
    char host[64];
    uint32_t threads, failures;
    uint64_t jobs_done, labels, first_hello_ns, last_seen;
    int alive, quarantined;
    char waiting[160];
    char last_failure[160];
} dash_worker;

typedef struct rate_sample {
    double t_s, labels_per_s;
    uint64_t labels, jobs_done;
} rate_sample;

struct co_dash {
    pthread_mutex_t lock; /* everything below                           */
    dash_worker *workers;
    int n_workers, cap_workers;
    rate_sample ring[SF_DASH_RATE_SAMPLES];
    int ring_head, ring_n;
    uint64_t last_sample_ns;
    gate_copy gate; /* the pairs folded, as of the last publish          */
    int gate_decided;
    char *gate_body; /* /api/gate for gate_body_n pairs (a cache)      */
    size_t gate_len, gate_body_n;
    int gate_body_decided;
    char loop_json[SF_CFG_PATH + 32];             /* LOOP/loop.json, or "" */
    struct co_error errors[SF_COORD_ERRORS_KEPT]; /* co->errors, as of the last publish */
    uint64_t errors_total;
};

/* LOOP/loop.json when output_dir is LOOP/genG/KIND (sf-fleet/loop.c's
 * layout), else "". */
static void loop_path(const char *output_dir, char *out, size_t cap) {
    char d[SF_CFG_PATH];
    snprintf(d, sizeof d, "%s", output_dir);
    size_t n = strlen(d);
    while (n > 1 && d[n - 1] == '/')
        d[--n] = '\0';
    char *kind = strrchr(d, '/');
    out[0] = '\0';
    if (!kind)
        return;
    *kind = '\0';
    char *gen = strrchr(d, '/');
    const char *g = gen ? gen + 1 : d;
    if (strncmp(g, "gen", 3) || !g[3] || strspn(g + 3, "0123456789") != strlen(g + 3))
        return;
    if (gen)
        *gen = '\0';
    snprintf(out, cap, "%s/loop.json", gen ? (d[0] ? d : "/") : ".");
}

int dashboard_open(sf_coordinator *co, sf_err *err) {
    co_dash *d = calloc(1, sizeof *d);
    if (!d)
        return sf_err_set(err, SF_ENOMEM, "dashboard: out of memory");
    pthread_mutex_init(&d->lock, NULL);
    loop_path(co->cfg.output_dir, d->loop_json, sizeof d->loop_json);
    co->dash = d;
    return SF_OK;
}

void dashboard_close(sf_coordinator *co) {
    co_dash *d = co->dash;
    if (!d)
        return;
    pthread_mutex_destroy(&d->lock);
    free(d->workers);
    gate_copy_free(&d->gate);
    free(d->gate_body);
    free(d);
    co->dash = NULL;
}

void dashboard_publish(sf_coordinator *co, const sf_coord_status *st) {
    co_dash *d = co->dash;
    if (!d)
        return;
    uint64_t now = sf_now_ns();
    pthread_mutex_lock(&d->lock);
    if (co->nworkers > d->cap_workers) {
        int cap = co->nworkers * 2;
        dash_worker *w = realloc(d->workers, (size_t)cap * sizeof *w);
        if (w) {
            d->workers = w;
            d->cap_workers = cap;
        }
    }
    d->n_workers = 0;
    for (int i = 0; i < co->nworkers && i < d->cap_workers; i++) {
        const cworker *w = &co->workers[i];
        if (!w->hello && !w->first_hello_ns) /* one that said Goodbye stays, "gone" */
            continue;
        dash_worker *o = &d->workers[d->n_workers++];
        memcpy(o->worker_id, w->worker_id, sizeof o->worker_id);
        memcpy(o->key_id, w->key_id, sizeof o->key_id);
        memcpy(o->host, w->host, sizeof o->host);
        memcpy(o->waiting, w->waiting, sizeof o->waiting);
        memcpy(o->last_failure, w->last_failure, sizeof o->last_failure);
        o->threads = w->threads;
        o->failures = w->failures;
        o->jobs_done = w->jobs_done;
        o->labels = w->labels;
        o->first_hello_ns = w->first_hello_ns;
        o->last_seen = w->last_seen;
        o->alive = w->alive;
        o->quarantined = w->quarantined;
    }
    if (d->ring_n == 0 || now - d->last_sample_ns >= SF_DASH_RATE_PERIOD_S * CO_NS_PER_S) {
        d->ring[d->ring_head] = (rate_sample){
            .t_s = co->started_ns ? (double)(now - co->started_ns) / 1e9 : 0.0,
            .labels_per_s = st->labels_per_s,
            .labels = st->labels,
            .jobs_done = st->jobs_done,
        };
        d->ring_head = (d->ring_head + 1) % SF_DASH_RATE_SAMPLES;
        if (d->ring_n < SF_DASH_RATE_SAMPLES)
            d->ring_n++;
        d->last_sample_ns = now;
    }
    if (d->errors_total != co->errors_total) { /* copied only when one was added */
        memcpy(d->errors, co->errors, sizeof d->errors);
        d->errors_total = co->errors_total;
    }
    sf_err e = {0};
    if (gate_copy_update(co, &d->gate, &e) < 0)
        sf_log(co->log, co->log_ctx, "coordinator: dashboard: %s", e.msg);
    d->gate_decided = gate_decided(co);
    pthread_mutex_unlock(&d->lock);
}

/* ---------------------------------------------------------------------------
 * The routes
 * ------------------------------------------------------------------------- */

static int reply_json(sf_http_reply *rep, unsigned status, char *body, size_t len) {
    if (!body)
        return -1;
    rep->status = status;
    rep->content_type = "application/json";
    rep->body = body;
    rep->len = len;
    rep->cache_control = "no-store";
    return 0;
}

/* 404 (or 500) with {"error": why}. */
static int reply_error(sf_http_reply *rep, unsigned status, const char *why) {
    size_t len = 0;
    char *s = dump(json_pack("{s:s}", "error", why), JSON_COMPACT, &len);
    return reply_json(rep, status, s, len);
}

static int route_page(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    (void)ctx;
    if (strcmp(req->path, "/") && strcmp(req->path, "/index.html"))
        return reply_error(rep, 404, "no such page: the dashboard is at /");
    char *body = malloc(sf_dashboard_page_len ? sf_dashboard_page_len : 1);
    if (!body)
        return -1;
    memcpy(body, sf_dashboard_page, sf_dashboard_page_len);
    rep->status = 200;
    rep->content_type = "text/html; charset=utf-8";
    rep->body = body;
    rep->len = sf_dashboard_page_len;
    rep->cache_control = "no-cache";
    return 0;
}

static int route_status(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    (void)req;
    sf_coordinator *co = ctx;
    sf_coord_status *st = malloc(sizeof *st);
    status_scratch *sc = malloc(sizeof *sc);
    if (!st || !sc) {
        free(st);
        free(sc);
        return -1;
    }
    pthread_mutex_lock(&co->snap_lock);
    *st = co->snap;
    pthread_mutex_unlock(&co->snap_lock);
    Spirefleet__StatusReply r = SPIREFLEET__STATUS_REPLY__INIT;
    status_reply_fill(co, st, sc, &r);
    size_t len;
    char *s = sf_fleet_status_json(&r, &len);
    free(st);
    free(sc);
    return reply_json(rep, 200, s, len);
}

static int route_workers(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    (void)req;
    sf_coordinator *co = ctx;
    co_dash *d = co->dash;
    pthread_mutex_lock(&d->lock);
    int n = d->n_workers;
    dash_worker *w = malloc((size_t)(n ? n : 1) * sizeof *w);
    if (w)
        memcpy(w, d->workers, (size_t)n * sizeof *w);
    pthread_mutex_unlock(&d->lock);
    Spirefleet__WorkerInfo *m = calloc((size_t)(n ? n : 1), sizeof *m);
    Spirefleet__WorkerInfo **ptrs = calloc((size_t)(n ? n : 1), sizeof *ptrs);
    char *s = NULL;
    size_t len = 0;
    if (w && m && ptrs) {
        uint64_t now = sf_now_ns();
        for (int i = 0; i < n; i++) {
            spirefleet__worker_info__init(&m[i]);
            m[i].worker_id = w[i].worker_id;
            m[i].key_id = w[i].key_id;
            m[i].host = w[i].host;
            m[i].threads = w[i].threads;
            m[i].jobs_done = w[i].jobs_done;
            m[i].labels = w[i].labels;
            /* from its first Hello to its last message: a worker gone
             * keeps the rate it had */
            double up = w[i].first_hello_ns && w[i].last_seen > w[i].first_hello_ns
                            ? (double)(w[i].last_seen - w[i].first_hello_ns) / 1e9
                            : 0.0;
            m[i].labels_per_s = up > 0 ? (double)w[i].labels / up : 0.0;
            m[i].last_heartbeat_s =
                now > w[i].last_seen ? (double)(now - w[i].last_seen) / 1e9 : 0.0;
            m[i].alive = w[i].alive;
            m[i].failures = w[i].failures;
            m[i].quarantined = w[i].quarantined;
            m[i].waiting = w[i].waiting;
            m[i].last_failure = w[i].last_failure;
            ptrs[i] = &m[i];
        }
        Spirefleet__WorkersReply r = SPIREFLEET__WORKERS_REPLY__INIT;
        r.n_workers = (size_t)n;
        r.workers = ptrs;
        s = sf_dash_message_json(&r.base, &len);
    }
    free(w);
    free(m);
    free(ptrs);
    return reply_json(rep, 200, s, len);
}

static int route_rate(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    (void)req;
    sf_coordinator *co = ctx;
    co_dash *d = co->dash;
    rate_sample *ring = malloc(sizeof d->ring);
    if (!ring)
        return -1;
    pthread_mutex_lock(&d->lock);
    int n = d->ring_n, head = d->ring_head;
    memcpy(ring, d->ring, sizeof d->ring);
    pthread_mutex_unlock(&d->lock);
    Spirefleet__RateSample *m = calloc((size_t)(n ? n : 1), sizeof *m);
    Spirefleet__RateSample **ptrs = calloc((size_t)(n ? n : 1), sizeof *ptrs);
    char *s = NULL;
    size_t len = 0;
    if (m && ptrs) {
        for (int i = 0; i < n; i++) { /* oldest first */
            const rate_sample *x =
                &ring[(head - n + i + SF_DASH_RATE_SAMPLES) % SF_DASH_RATE_SAMPLES];
            spirefleet__rate_sample__init(&m[i]);
            m[i].t_s = x->t_s;
            m[i].labels = x->labels;
            m[i].labels_per_s = x->labels_per_s;
            m[i].jobs_done = x->jobs_done;
            ptrs[i] = &m[i];
        }
        Spirefleet__RateHistory r = SPIREFLEET__RATE_HISTORY__INIT;
        r.n_samples = (size_t)n;
        r.samples = ptrs;
        s = sf_dash_message_json(&r.base, &len);
    }
    free(ring);
    free(m);
    free(ptrs);
    return reply_json(rep, 200, s, len);
}

static int route_errors(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    (void)req;
    sf_coordinator *co = ctx;
    co_dash *d = co->dash;
    struct co_error *ring = malloc(sizeof d->errors);
    if (!ring)
        return -1;
    pthread_mutex_lock(&d->lock);
    uint64_t total = d->errors_total;
    memcpy(ring, d->errors, sizeof d->errors);
    pthread_mutex_unlock(&d->lock);
    int n = total < SF_COORD_ERRORS_KEPT ? (int)total : SF_COORD_ERRORS_KEPT;
    Spirefleet__ErrorEvent m[SF_COORD_ERRORS_KEPT], *ptrs[SF_COORD_ERRORS_KEPT];
    for (int i = 0; i < n; i++) { /* newest first */
        const struct co_error *x = &ring[(total - 1 - (uint64_t)i) % SF_COORD_ERRORS_KEPT];
        spirefleet__error_event__init(&m[i]);
        m[i].unix_s = x->unix_s;
        m[i].who = (char *)x->who;
        m[i].what = (char *)x->what;
        m[i].detail = (char *)x->detail;
        ptrs[i] = &m[i];
    }
    Spirefleet__ErrorLog log = SPIREFLEET__ERROR_LOG__INIT;
    log.n_events = (size_t)n;
    log.events = ptrs;
    log.total = total;
    size_t len = 0;
    char *body = sf_dash_message_json(&log.base, &len);
    free(ring);
    return reply_json(rep, 200, body, len);
}

static char *dup_bytes(const char *s, size_t len) {
    char *t = malloc(len + 1);
    if (t) {
        memcpy(t, s, len);
        t[len] = '\0';
    }
    return t;
}

static int route_gate(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    (void)req;
    sf_coordinator *co = ctx;
    co_dash *d = co->dash;
    if (!co->gate) {
        char why[400];
        snprintf(why, sizeof why, "run %s is not a gate run (run.kind %s)", co->cfg.name,
                 co->cfg.kind);
        return reply_error(rep, 404, why);
    }
    gate_copy c;
    sf_err e = {0};
    pthread_mutex_lock(&d->lock);
    int decided = d->gate_decided;
    if (d->gate_body && d->gate_body_n == d->gate.n && d->gate_body_decided == decided) {
        char *s = dup_bytes(d->gate_body, d->gate_len);
        size_t len = d->gate_len;
        pthread_mutex_unlock(&d->lock);
        return reply_json(rep, 200, s, len);
    }
    int rc = gate_copy_dup(&d->gate, &c, &e);
    pthread_mutex_unlock(&d->lock);
    if (rc < 0)
        return reply_error(rep, 500, e.msg);
    size_t len = 0;
    char *s = gate_document(co, &c, decided, &len, &e);
    size_t n = c.n;
    gate_copy_free(&c);
    if (!s)
        return reply_error(rep, 500, e.msg);
    char *keep = dup_bytes(s, len);
    pthread_mutex_lock(&d->lock);
    if (keep) {
        free(d->gate_body);
        d->gate_body = keep;
        d->gate_len = len;
        d->gate_body_n = n;
        d->gate_body_decided = decided;
    }
    pthread_mutex_unlock(&d->lock);
    return reply_json(rep, 200, s, len);
}

static int route_loop(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    (void)req;
    sf_coordinator *co = ctx;
    const char *path = co->dash->loop_json;
    char why[SF_CFG_PATH + 200];
    if (!path[0]) {
        snprintf(why, sizeof why,
                 "run %s is not a training loop's generation (its output_dir %s is not "
                 "LOOP/genG/KIND)",
                 co->cfg.name, co->cfg.output_dir);
        return reply_error(rep, 404, why);
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) < 0) {
        snprintf(why, sizeof why, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return reply_error(rep, 404, why);
    }
    rep->status = 200;
    rep->content_type = "application/json";
    rep->fd = fd;
    rep->file_size = (uint64_t)sb.st_size;
    rep->cache_control = "no-store";
    return 0;
}

static int route_schema(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    (void)ctx;
    (void)req;
    size_t len;
    char *s = sf_dash_schema_json(&len);
    return reply_json(rep, 200, s, len);
}

int dashboard_routes(sf_coordinator *co, sf_http_route *routes, int n) {
    static const struct {
        const char *prefix;
        sf_http_route_fn fn;
    } ROUTES[] = {
        {"/api/status", route_status}, {"/api/workers", route_workers},
        {"/api/rate", route_rate},     {"/api/errors", route_errors},
        {"/api/gate", route_gate},     {"/api/loop", route_loop},
        {"/api/schema", route_schema}, {"/", route_page}, /* last: a prefix of every path */
    };
    for (size_t i = 0; i < sizeof ROUTES / sizeof ROUTES[0] && n < SF_HTTP_MAX_ROUTES; i++)
        routes[n++] = (sf_http_route){ROUTES[i].prefix, ROUTES[i].fn, co};
    return n;
}
