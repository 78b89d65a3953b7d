/* test_metrics_http.c — the /metrics server both the coordinator and
 * gpu-evald use (common/metrics_http.h): the port convention, the address
 * taken from the process's ZeroMQ endpoint, the answers, and errors that
 * carry the OS's reason. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/metrics_http.h"
#include "sf_check.h"
#include "sf_http.h"

static char *page(void *ctx, size_t *len) {
    const char *text = ctx;
    *len = strlen(text);
    return strdup(text);
}

static int open_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

START_TEST(ports_follow_one_convention) {
    int p = 7;
    sf_err e = {0};
    ck_assert_int_eq(sf_metrics_port_parse("0", &p, &e), SF_OK);
    ck_assert_int_eq(p, SF_METRICS_OFF);
    ck_assert_int_eq(sf_metrics_port_parse("9105", &p, &e), SF_OK);
    ck_assert_int_eq(p, 9105);
    ck_assert_int_eq(sf_metrics_port_parse("*", &p, &e), SF_OK);
    ck_assert_int_eq(p, SF_METRICS_ANY_PORT);
    ck_assert_int_eq(sf_metrics_port_parse("65536", &p, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "'65536': expected 0 (off), a port 1..65535 or *");
    ck_assert_int_eq(sf_metrics_port_parse("-1", &p, &e), SF_EINVAL);
    ck_assert(!sf_metrics_port_valid(-1)); /* it used to mean off for gpu-evald */
    sf_metrics_http *h = (sf_metrics_http *)&p;
    ck_assert_int_eq(sf_metrics_http_start(NULL, SF_METRICS_OFF, page, "", &h, &e), SF_OK);
    ck_assert_ptr_null(h);
    ck_assert_int_eq(sf_metrics_http_port(h), 0);
    ck_assert_str_eq(sf_metrics_http_url(h), "off");
    ck_assert_int_eq(sf_metrics_http_start(NULL, -1, page, "", &h, &e), SF_EINVAL);
    sf_metrics_http_stop(NULL);
}
END_TEST

START_TEST(serves_metrics_at_the_endpoints_address) {
    int before = open_fds();
    sf_metrics_http *h;
    sf_err e = {0};
    ck_assert_msg(sf_metrics_http_start("tcp://127.0.0.1:5555", SF_METRICS_ANY_PORT, page, "up 1\n",
                                        &h, &e) == SF_OK,
                  "%s", e.msg);
    int port = sf_metrics_http_port(h);
    ck_assert_int_gt(port, 0);
    char want[64];
    snprintf(want, sizeof want, "http://127.0.0.1:%d/metrics", port);
    ck_assert_str_eq(sf_metrics_http_url(h), want);
    char *buf = malloc(4096);
    sf_test_http(port, "GET /metrics", buf, 4096);
    ck_assert_msg(!strncmp(buf, "HTTP/1.0 200", 12) || !strncmp(buf, "HTTP/1.1 200", 12), "%s",
                  buf);
    ck_assert_ptr_nonnull(strstr(buf, "text/plain; version=0.0.4"));
    ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\nup 1\n"));
    sf_test_http(port, "GET /other", buf, 4096);
    ck_assert_msg(strstr(buf, " 404 "), "%s", buf);
    sf_test_http(port, "POST /metrics", buf, 4096);
    ck_assert_msg(strstr(buf, " 405 "), "%s", buf);
    /* the same port again: the OS's reason, with the address */
    sf_metrics_http *again;
    ck_assert_int_eq(sf_metrics_http_start("ipc:///tmp/x", port, page, "", &again, &e), SF_EIO);
    char msg[128];
    snprintf(msg, sizeof msg, "cannot serve /metrics on 127.0.0.1:%d: %s", port,
             strerror(EADDRINUSE));
    ck_assert_str_eq(e.msg, msg);
    sf_metrics_http_stop(h);
    free(buf);
    ck_assert_int_eq(open_fds(), before); /* the listening socket is closed */
}
END_TEST

START_TEST(a_wildcard_endpoint_serves_every_interface) {
    sf_metrics_http *h;
    sf_err e = {0};
    ck_assert_msg(
        sf_metrics_http_start("tcp://0.0.0.0:5555", SF_METRICS_ANY_PORT, page, "", &h, &e) == SF_OK,
        "%s", e.msg);
    ck_assert_ptr_nonnull(strstr(sf_metrics_http_url(h), "http://0.0.0.0:"));
    sf_metrics_http_stop(h);
    ck_assert_msg(sf_metrics_http_start("tcp://*:5555", SF_METRICS_ANY_PORT, page, "", &h, &e) ==
                      SF_OK,
                  "%s", e.msg);
    ck_assert_ptr_nonnull(strstr(sf_metrics_http_url(h), "http://0.0.0.0:"));
    sf_metrics_http_stop(h);
}
END_TEST

/* A process with more than 1,024 descriptors open (a coordinator with
 * thousands of fleet connections), and 300 idle HTTP clients holding
 * connections with half a request: /metrics still answers, and the
 * connection limit turns clients past it away instead of hanging. */
START_TEST(many_descriptors_and_idle_clients_do_not_block_it) {
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < 4096) {
        rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < 2048) {
        fprintf(stderr, "# skipped: RLIMIT_NOFILE %llu\n", (unsigned long long)rl.rlim_cur);
        return;
    }
    enum { BUSY = 1200, IDLE = 300 };
    static int busy[BUSY], idle[IDLE];
    for (int i = 0; i < BUSY; i++) {
        busy[i] = open("/dev/null", O_RDONLY);
        ck_assert_int_ge(busy[i], 0);
    }
    sf_metrics_http *h;
    sf_err e = {0};
    ck_assert_msg(sf_metrics_http_start(NULL, SF_METRICS_ANY_PORT, page, "up 1\n", &h, &e) == SF_OK,
                  "%s", e.msg);
    int port = sf_metrics_http_port(h);
    for (int i = 0; i < IDLE; i++) {
        idle[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_port = htons((uint16_t)port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ck_assert_int_eq(connect(idle[i], (struct sockaddr *)&a, sizeof a), 0);
        ck_assert_int_eq(write(idle[i], "GET /metr", 9), 9);
    }
    ck_assert_int_gt(idle[IDLE - 1], 1024);
    char buf[4096];
    for (int k = 0; k < 3; k++) {
        sf_test_http(port, "GET /metrics", buf, sizeof buf);
        ck_assert_msg(strstr(buf, "200 OK") && strstr(buf, "\r\n\r\nup 1\n"), "%s", buf);
    }
    for (int i = 0; i < IDLE; i++)
        close(idle[i]);
    sf_metrics_http_stop(h);
    for (int i = 0; i < BUSY; i++)
        close(busy[i]);
}
END_TEST

/* Routes: an exact path with a body, a prefix with a file whose Range
 * requests get 206 and the exact bytes, 416 past the end. */
static int api_route(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    (void)ctx;
    const char *who = sf_http_query(req, "who");
    char text[64];
    int n = snprintf(text, sizeof text, "{\"who\":\"%s\"}", who ? who : "none");
    rep->body = strdup(text);
    rep->len = (size_t)n;
    rep->content_type = "application/json";
    return rep->body ? 0 : -1;
}

typedef struct served_file {
    const char *path;
    uint64_t sent; /* bytes queued, as the server counts them */
} served_file;

static int file_route(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    served_file *f = ctx;
    if (strcmp(req->rest, "f1")) {
        rep->status = 404;
        return 0;
    }
    rep->sent = &f->sent;
    rep->fd = open(f->path, O_RDONLY);
    rep->file_size = 1000;
    snprintf(rep->etag, sizeof rep->etag, "%s", "f1");
    rep->cache_control = "public, max-age=31536000, immutable";
    rep->content_type = "application/octet-stream";
    return rep->fd >= 0 ? 0 : -1;
}

START_TEST(routes_answer_and_files_honour_range) {
    char path[] = "/tmp/sf-http-file-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    char bytes[1000];
    for (int i = 0; i < 1000; i++)
        bytes[i] = (char)('a' + i % 26);
    ck_assert_int_eq(write(fd, bytes, sizeof bytes), (ssize_t)sizeof bytes);
    close(fd);
    served_file sf = {path, 0};
    sf_http_route routes[] = {{"/api/x", api_route, NULL}, {"/files/", file_route, &sf}};
    sf_metrics_http *h;
    sf_err e = {0};
    ck_assert_msg(sf_metrics_http_start_routes(NULL, SF_METRICS_ANY_PORT, page, "up 1\n", routes, 2,
                                               &h, &e) == SF_OK,
                  "%s", e.msg);
    int port = sf_metrics_http_port(h);
    char buf[4096];
    sf_test_http(port, "GET /api/x?who=op", buf, sizeof buf);
    ck_assert_msg(strstr(buf, "200 OK") && strstr(buf, "application/json") &&
                      strstr(buf, "\r\n\r\n{\"who\":\"op\"}"),
                  "%s", buf);
    sf_test_http(port, "GET /api/xy", buf, sizeof buf); /* exact: no prefix match */
    ck_assert_msg(strstr(buf, "404 Not Found"), "%s", buf);
    sf_test_http(port, "GET /metrics", buf, sizeof buf); /* still the render's */
    ck_assert_msg(strstr(buf, "\r\n\r\nup 1\n"), "%s", buf);
    size_t n = sf_test_http_headers(port, "GET /files/f1", "", buf, sizeof buf);
    char *body = strstr(buf, "\r\n\r\n");
    ck_assert_msg(strstr(buf, "200 OK") && strstr(buf, "Accept-Ranges: bytes") &&
                      strstr(buf, "ETag: \"f1\"") && strstr(buf, "immutable") && body,
                  "%s", buf);
    ck_assert_int_eq(n - (size_t)(body + 4 - buf), 1000);
    ck_assert_int_eq(memcmp(body + 4, bytes, 1000), 0);
    n = sf_test_http_headers(port, "GET /files/f1", "Range: bytes=990-\r\n", buf, sizeof buf);
    body = strstr(buf, "\r\n\r\n");
    ck_assert_msg(strstr(buf, "206 Partial Content") &&
                      strstr(buf, "Content-Range: bytes 990-999/1000"),
                  "%s", buf);
    ck_assert_int_eq(n - (size_t)(body + 4 - buf), 10);
    ck_assert_int_eq(memcmp(body + 4, bytes + 990, 10), 0);
    n = sf_test_http_headers(port, "GET /files/f1", "Range: bytes=100-103\r\n", buf, sizeof buf);
    body = strstr(buf, "\r\n\r\n");
    ck_assert_int_eq(n - (size_t)(body + 4 - buf), 4);
    ck_assert_int_eq(memcmp(body + 4, bytes + 100, 4), 0);
    sf_test_http_headers(port, "GET /files/f1", "Range: bytes=-5\r\n", buf, sizeof buf);
    ck_assert_msg(strstr(buf, "Content-Range: bytes 995-999/1000"), "%s", buf);
    sf_test_http_headers(port, "GET /files/f1", "Range: bytes=1000-\r\n", buf, sizeof buf);
    ck_assert_msg(strstr(buf, "416") && strstr(buf, "Content-Range: bytes */1000"), "%s", buf);
    /* a client that holds it: 304, no body, nothing counted as sent */
    n = sf_test_http_headers(port, "GET /files/f1", "If-None-Match: \"x\", \"f1\"\r\n", buf,
                             sizeof buf);
    body = strstr(buf, "\r\n\r\n");
    ck_assert_msg(strstr(buf, "304 Not Modified") && strstr(buf, "ETag: \"f1\"") && body &&
                      n == (size_t)(body + 4 - buf),
                  "%s", buf);
    sf_test_http_headers(port, "GET /files/f1", "If-None-Match: \"f2\"\r\n", buf, sizeof buf);
    ck_assert_msg(strstr(buf, "200 OK"), "%s", buf);
    sf_test_http(port, "HEAD /files/f1", buf, sizeof buf);
    ck_assert_msg(strstr(buf, "200 OK") && strstr(buf, "Content-Length: 1000") &&
                      !strstr(buf, "abcdefghij"),
                  "%s", buf);
    sf_test_http(port, "GET /files/nope", buf, sizeof buf);
    ck_assert_msg(strstr(buf, "404 Not Found"), "%s", buf);
    /* one Content-Type, the route's: not ours added again to its 404 */
    const char *ct = strstr(buf, "Content-Type:");
    ck_assert_msg(ct && !strstr(ct + 1, "Content-Type:"), "%s", buf);
    /* 1000 + 10 + 4 + 5 + 1000 bytes of file sent (the last: If-None-Match
     * "f2"); the 416, the 304 and the HEAD send none */
    ck_assert_uint_eq(__atomic_load_n(&sf.sent, __ATOMIC_RELAXED), 2019);
    sf_metrics_http_stop(h);
    unlink(path);
    sf_http_route many[SF_HTTP_MAX_ROUTES + 1];
    for (int i = 0; i <= SF_HTTP_MAX_ROUTES; i++)
        many[i] = routes[0];
    ck_assert_int_eq(sf_metrics_http_start_routes(NULL, SF_METRICS_ANY_PORT, page, "", many,
                                                  SF_HTTP_MAX_ROUTES + 1, &h, &e),
                     SF_EINVAL);
}
END_TEST

#include "test-metrics-http.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("metrics-http", "metrics-http", 60, NULL, NULL)
