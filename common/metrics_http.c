/* metrics_http.c — the /metrics HTTP server (see metrics_http.h). The
 * listening socket is made here, so a failure to bind carries the OS's
 * reason, and handed to libmicrohttpd. */
#include "common/metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct sf_metrics_http {
    struct MHD_Daemon *daemon;
    sf_metrics_render_fn render;
    void *ctx;
    sf_http_route routes[SF_HTTP_MAX_ROUTES];
    int n_routes;
    int port;
    char url[96];
};

int sf_metrics_port_valid(int port) {
    return port == SF_METRICS_ANY_PORT || (port >= 0 && port <= 65535);
}

int sf_metrics_port_parse(const char *s, int *port, sf_err *err) {
    if (!strcmp(s, "*")) {
        *port = SF_METRICS_ANY_PORT;
        return SF_OK;
    }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < 0 || v > 65535)
        return sf_err_set(err, SF_EINVAL, "'%s': expected 0 (off), a port 1..65535 or *", s);
    *port = (int)v;
    return SF_OK;
}

/* The address to listen on for `endpoint`'s host (see the header): into
 * `sa`, with its length; the port is set by the caller. */
static socklen_t address_of(const char *endpoint, struct sockaddr_storage *sa) {
    memset(sa, 0, sizeof *sa);
    struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
    v4->sin_family = AF_INET;
    v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!endpoint || strncmp(endpoint, "tcp://", 6))
        return sizeof *v4; /* ipc://, none: this machine only */
    char host[64];
    const char *h = endpoint + 6, *colon = strrchr(h, ':');
    size_t n = colon ? (size_t)(colon - h) : 0;
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') { /* [v6] */
        h++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof host)
        return sizeof *v4;
    memcpy(host, h, n);
    host[n] = 0;
    if (!strcmp(host, "*")) {
        v4->sin_addr.s_addr = htonl(INADDR_ANY);
        return sizeof *v4;
    }
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1)
        return sizeof *v4;
    memset(sa, 0, sizeof *sa);
    v6->sin6_family = AF_INET6;
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1)
        return sizeof *v6;
    /* an interface or host name ZeroMQ resolved itself: stay on loopback */
    memset(sa, 0, sizeof *sa);
    v4->sin_family = AF_INET;
    v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return sizeof *v4;
}

static void address_text(const struct sockaddr_storage *sa, char *out, size_t cap) {
    if (sa->ss_family == AF_INET6) {
        char a[INET6_ADDRSTRLEN] = "";
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, a, sizeof a);
        snprintf(out, cap, "[%s]", a);
    } else {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)cap);
    }
}

/* A listening TCP socket at `sa` (port `port`, 0 for any), or -1 with the
 * message in err. *bound receives the port. */
static int listen_at(struct sockaddr_storage *sa, socklen_t len, int port, int *bound,
                     sf_err *err) {
    char where[64];
    address_text(sa, where, sizeof where);
    if (sa->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
    int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)sa, len) != 0 || listen(fd, 64) != 0) {
        sf_err_set(err, SF_EIO, "cannot serve /metrics on %s:%d: %s", where, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct sockaddr_storage got;
    socklen_t glen = sizeof got;
    *bound = port;
    if (getsockname(fd, (struct sockaddr *)&got, &glen) == 0)
        *bound = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                                 : ((struct sockaddr_in *)&got)->sin_port);
    return fd;
}

const char *sf_http_query(const sf_http_request *req, const char *key) {
    if (!req->conn)
        return NULL;
    return MHD_lookup_connection_value((struct MHD_Connection *)req->conn, MHD_GET_ARGUMENT_KIND,
                                       key);
}

/* Whether `path` is what route `rt` answers: the same path, or under it
 * when its prefix ends in '/'. */
static int route_matches(const sf_http_route *rt, const char *path, size_t *prefix_len) {
    size_t n = strlen(rt->prefix);
    *prefix_len = n;
    int dir = n > 0 && rt->prefix[n - 1] == '/';
    return dir ? strncmp(path, rt->prefix, n) == 0 : strcmp(path, rt->prefix) == 0;
}

int sf_http_dispatch(const sf_http_route *routes, int n, const char *path, sf_http_reply *rep) {
    char p[2048];
    size_t len = strcspn(path, "?");
    if (len >= sizeof p)
        return 0;
    memcpy(p, path, len);
    p[len] = '\0';
    for (int i = 0; i < n; i++) {
        size_t k;
        if (!route_matches(&routes[i], p, &k))
            continue;
        sf_http_request req = {"GET", p, p + k, NULL};
        *rep = (sf_http_reply){.status = MHD_HTTP_OK, .fd = -1};
        if (routes[i].fn(routes[i].ctx, &req, rep) < 0) {
            free(rep->body);
            if (rep->fd >= 0)
                close(rep->fd);
            *rep = (sf_http_reply){.fd = -1};
            return -1;
        }
        return 1;
    }
    return 0;
}

/* A single "bytes=" range of a file of `size` bytes (RFC 9110 §14.1.2):
 * 1 with [*first, *last] set, 0 when there is none to honour (absent,
 * several ranges, not bytes: the whole file is sent), -1 when it lies
 * outside the file (416). */
static int parse_range(const char *h, uint64_t size, uint64_t *first, uint64_t *last) {
    if (!h || strncmp(h, "bytes=", 6) != 0 || strchr(h, ','))
        return 0;
    const char *p = h + 6, *dash = strchr(p, '-');
    if (!dash)
        return 0;
    char *end;
    if (dash == p) { /* a suffix: the last N bytes */
        errno = 0;
        unsigned long long n = strtoull(dash + 1, &end, 10);
        if (end == dash + 1 || *end || errno)
            return 0;
        if (n == 0 || size == 0)
            return -1;
        *first = n >= size ? 0 : size - n;
        *last = size - 1;
        return 1;
    }
    errno = 0;
    unsigned long long a = strtoull(p, &end, 10);
    if (end != dash || errno)
        return 0;
    unsigned long long b = size ? size - 1 : 0;
    if (dash[1]) {
        b = strtoull(dash + 1, &end, 10);
        if (*end || errno || b < a)
            return 0;
        if (size && b > size - 1)
            b = size - 1;
    }
    if (a >= size)
        return -1;
    *first = a;
    *last = b;
    return 1;
}

/* The response for a route's file reply, honouring Range; NULL on failure
 * (the fd is closed either way). */
static struct MHD_Response *file_response(struct MHD_Connection *conn, sf_http_reply *rep,
                                          unsigned *code, uint64_t *body_bytes) {
    uint64_t first = 0, last = rep->file_size ? rep->file_size - 1 : 0;
    int r = parse_range(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Range"), rep->file_size,
                        &first, &last);
    struct MHD_Response *resp;
    char cr[96];
    if (r < 0) {
        close(rep->fd);
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        snprintf(cr, sizeof cr, "bytes */%llu", (unsigned long long)rep->file_size);
        if (resp)
            MHD_add_response_header(resp, "Content-Range", cr);
        *code = MHD_HTTP_RANGE_NOT_SATISFIABLE;
        return resp;
    }
    uint64_t n = rep->file_size ? last - first + 1 : 0;
    resp = MHD_create_response_from_fd_at_offset64(n, rep->fd, first);
    if (!resp) {
        close(rep->fd);
        return NULL;
    }
    *body_bytes = n;
    *code = rep->status;
    if (r > 0) {
        snprintf(cr, sizeof cr, "bytes %llu-%llu/%llu", (unsigned long long)first,
                 (unsigned long long)last, (unsigned long long)rep->file_size);
        MHD_add_response_header(resp, "Content-Range", cr);
        *code = MHD_HTTP_PARTIAL_CONTENT;
    }
    MHD_add_response_header(resp, "Accept-Ranges", "bytes");
    return resp;
}

/* Whether the request's If-None-Match names `etag` (quoted, in a list, or
 * "*"; RFC 9110 §13.1.2, weak comparison). */
static int etag_matches(struct MHD_Connection *conn, const char *etag) {
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "If-None-Match");
    if (!h)
        return 0;
    if (strchr(h, '*'))
        return 1;
    size_t n = strlen(etag);
    for (const char *p = strchr(h, '"'); p; p = strchr(p + 1, '"')) {
        if (!strncmp(p + 1, etag, n) && p[1 + n] == '"')
            return 1;
        p = strchr(p + 1, '"'); /* past this tag's closing quote */
        if (!p)
            break;
    }
    return 0;
}

/* A route's answer to this request, or NULL with *code 0 when no route
 * matches. */
static struct MHD_Response *route_response(sf_metrics_http *h, struct MHD_Connection *conn,
                                           const char *url, const char *method, unsigned *code,
                                           int *failed) {
    for (int i = 0; i < h->n_routes; i++) {
        const sf_http_route *rt = &h->routes[i];
        size_t n;
        if (!route_matches(rt, url, &n))
            continue;
        sf_http_request req = {method, url, url + n, conn};
        sf_http_reply rep = {.status = MHD_HTTP_OK, .fd = -1};
        if (rt->fn(rt->ctx, &req, &rep) < 0) {
            free(rep.body);
            if (rep.fd >= 0)
                close(rep.fd);
            *failed = 1;
            return NULL;
        }
        struct MHD_Response *resp;
        uint64_t body_bytes = rep.len;
        if (rep.etag[0] && rep.status == MHD_HTTP_OK && etag_matches(conn, rep.etag)) {
            /* the client holds this content already (If-None-Match): 304 */
            free(rep.body);
            if (rep.fd >= 0)
                close(rep.fd);
            rep.body = NULL;
            rep.fd = -1;
            rep.len = body_bytes = 0;
            rep.status = MHD_HTTP_NOT_MODIFIED;
        }
        if (rep.fd >= 0) {
            free(rep.body);
            body_bytes = 0;
            resp = file_response(conn, &rep, code, &body_bytes);
        } else {
            *code = rep.status;
            resp = rep.body
                       ? MHD_create_response_from_buffer(rep.len, rep.body, MHD_RESPMEM_MUST_FREE)
                       : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
            if (!resp)
                free(rep.body);
        }
        if (!resp) {
            *failed = 1;
            return NULL;
        }
        MHD_add_response_header(resp, "Content-Type",
                                rep.content_type ? rep.content_type : "text/plain; charset=utf-8");
        if (rep.etag[0]) {
            char etag[sizeof rep.etag + 2];
            snprintf(etag, sizeof etag, "\"%s\"", rep.etag);
            MHD_add_response_header(resp, "ETag", etag);
        }
        if (rep.cache_control)
            MHD_add_response_header(resp, "Cache-Control", rep.cache_control);
        if (rep.sent && strcmp(method, "HEAD") != 0)
            __atomic_fetch_add(rep.sent, body_bytes, __ATOMIC_RELAXED);
        return resp;
    }
    return NULL;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state) {
    (void)version, (void)upload, (void)upload_size, (void)state;
    sf_metrics_http *h = cls;
    struct MHD_Response *resp;
    unsigned code = 0;
    int failed = 0, plain = 0; /* plain: one of ours below, text/plain */
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        static const char msg[] = "only GET\n";
        resp = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        code = MHD_HTTP_METHOD_NOT_ALLOWED;
        plain = 1;
    } else if (strcmp(url, "/metrics") == 0) {
        size_t len = 0;
        char *text = h->render(h->ctx, &len);
        if (!text)
            return MHD_NO;
        resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
        code = MHD_HTTP_OK;
        if (resp)
            MHD_add_response_header(resp, "Content-Type",
                                    "text/plain; version=0.0.4; charset=utf-8");
    } else if ((resp = route_response(h, conn, url, method, &code, &failed)) != NULL || failed) {
        if (!resp)
            return MHD_NO;
    } else {
        static const char msg[] = "not found: metrics are on /metrics\n";
        resp = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        code = MHD_HTTP_NOT_FOUND;
        plain = 1;
    }
    if (!resp)
        return MHD_NO;
    if (plain) /* a route's answer carries its own Content-Type */
        MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
    enum MHD_Result r = MHD_queue_response(conn, code, resp);
    MHD_destroy_response(resp);
    return r;
}

int sf_metrics_http_start(const char *endpoint, int port, sf_metrics_render_fn render, void *ctx,
                          sf_metrics_http **out, sf_err *err) {
    return sf_metrics_http_start_routes(endpoint, port, render, ctx, NULL, 0, out, err);
}

int sf_metrics_http_start_routes(const char *endpoint, int port, sf_metrics_render_fn render,
                                 void *ctx, const sf_http_route *routes, int n_routes,
                                 sf_metrics_http **out, sf_err *err) {
    *out = NULL;
    if (n_routes < 0 || n_routes > SF_HTTP_MAX_ROUTES)
        return sf_err_set(err, SF_EINVAL, "%d HTTP routes: at most %d", n_routes,
                          (int)SF_HTTP_MAX_ROUTES);
    if (!sf_metrics_port_valid(port))
        return sf_err_set(err, SF_EINVAL,
                          "metrics port %d: expected 0 (off), 1..65535 or any free port", port);
    if (port == SF_METRICS_OFF)
        return SF_OK;
    sf_metrics_http *h = calloc(1, sizeof *h);
    if (!h)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    h->render = render;
    h->ctx = ctx;
    for (int i = 0; i < n_routes; i++)
        h->routes[i] = routes[i];
    h->n_routes = n_routes;
    struct sockaddr_storage sa;
    socklen_t len = address_of(endpoint, &sa);
    char where[64];
    address_text(&sa, where, sizeof where);
    int fd = listen_at(&sa, len, port == SF_METRICS_ANY_PORT ? 0 : port, &h->port, err);
    if (fd < 0) {
        free(h);
        return SF_EIO;
    }
    /* epoll (or poll): no FD_SETSIZE bound, so a process with thousands
     * of fleet connections open still serves; the connection limit and
     * the idle timeout keep idle clients from holding it. */
    unsigned flags =
        (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL_INTERNAL_THREAD
                                                                : MHD_USE_POLL_INTERNAL_THREAD) |
        (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, answer, h, MHD_OPTION_LISTEN_SOCKET, fd,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SF_METRICS_IDLE_S,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)SF_METRICS_MAX_CONNECTIONS,
                                 MHD_OPTION_END);
    if (!h->daemon) {
        /* the socket is libmicrohttpd's once given: it closes what it keeps */
        int why = errno, h_port = h->port;
        free(h);
        return sf_err_set(err, SF_EIO, "cannot serve /metrics on %s:%d: libmicrohttpd: %s", where,
                          h_port, why ? strerror(why) : "it did not start");
    }
    snprintf(h->url, sizeof h->url, "http://%s:%d/metrics", where, h->port);
    *out = h;
    return SF_OK;
}

int sf_metrics_http_port(const sf_metrics_http *h) {
    return h ? h->port : 0;
}

const char *sf_metrics_http_url(const sf_metrics_http *h) {
    return h ? h->url : "off";
}

void sf_metrics_http_stop(sf_metrics_http *h) {
    if (!h)
        return;
    MHD_stop_daemon(h->daemon); /* closes the listening socket */
    free(h);
}
