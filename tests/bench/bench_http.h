/*
 * bench_http.h — one plain HTTP/1.0 GET of /metrics on a loopback port, as
 * a scraper makes it, for the benchmarks that time the metrics server
 * beside a busy loop. Header only.
 */
#ifndef SF_BENCH_HTTP_H
#define SF_BENCH_HTTP_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* GET /metrics from 127.0.0.1:`port` into `buf` (`cap` bytes, NUL-ended;
 * a longer answer is cut). Returns 1 when the answer is 200, else 0 (no
 * connection, a short write, another status); *got, the bytes read. */
static inline int bench_get_metrics(int port, char *buf, size_t cap, size_t *got) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = 0;
    *got = 0;
    buf[0] = 0;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
        static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
        ssize_t r;
        if (write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1))
            while (*got + 1 < cap && (r = read(fd, buf + *got, cap - 1 - *got)) > 0)
                *got += (size_t)r;
        buf[*got] = 0;
        ok = strstr(buf, " 200 ") != NULL;
    }
    if (fd >= 0)
        close(fd);
    return ok;
}

#endif
