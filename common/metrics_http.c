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

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state) {
    (void)version, (void)upload, (void)upload_size, (void)state;
    sf_metrics_http *h = cls;
    struct MHD_Response *resp;
    unsigned code;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        static const char msg[] = "only GET\n";
        resp = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        code = MHD_HTTP_METHOD_NOT_ALLOWED;
    } else if (strcmp(url, "/metrics") != 0) {
        static const char msg[] = "not found: metrics are on /metrics\n";
        resp = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        code = MHD_HTTP_NOT_FOUND;
    } else {
        size_t len = 0;
        char *text = h->render(h->ctx, &len);
        if (!text)
            return MHD_NO;
        resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
        code = MHD_HTTP_OK;
    }
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    enum MHD_Result r = MHD_queue_response(conn, code, resp);
    MHD_destroy_response(resp);
    return r;
}

int sf_metrics_http_start(const char *endpoint, int port, sf_metrics_render_fn render, void *ctx,
                          sf_metrics_http **out, sf_err *err) {
    *out = NULL;
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
