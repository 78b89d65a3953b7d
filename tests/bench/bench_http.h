/*
 * bench_http.h — one plain HTTP/1.0 GET on a loopback port (of /metrics, as
 * a scraper makes it, or of a dashboard endpoint), for the benchmarks that
 * time the metrics server beside a busy loop. Header only.
 */
#ifndef SF_BENCH_HTTP_H
#define SF_BENCH_HTTP_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* GET `path` from 127.0.0.1:`port` into `buf` (`cap` bytes, NUL-ended; a
 * longer answer is cut). Returns 1 when the answer is 200, else 0 (no
 * connection, a short write, another status); *got, the bytes read. */
static inline int bench_http_get(int port, const char *path, char *buf, size_t cap, size_t *got) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = 0;
    *got = 0;
    buf[0] = 0;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
        char req[512];
        int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\n\r\n", path);
        ssize_t r;
        if (n > 0 && n < (int)sizeof req && write(fd, req, (size_t)n) == (ssize_t)n)
            while (*got + 1 < cap && (r = read(fd, buf + *got, cap - 1 - *got)) > 0)
                *got += (size_t)r;
        buf[*got] = 0;
        ok = strstr(buf, " 200 ") != NULL;
    }
    if (fd >= 0)
        close(fd);
    return ok;
}

/* GET /metrics (bench_http_get). */
static inline int bench_get_metrics(int port, char *buf, size_t cap, size_t *got) {
    return bench_http_get(port, "/metrics", buf, cap, got);
}

#endif
