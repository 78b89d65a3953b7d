/*
 * sf_http.h — one HTTP/1.0 request to a port on 127.0.0.1, for the tests of
 * the /metrics servers (common/metrics_http.h and gpu-evald's).
 */
#ifndef SF_HTTP_H
#define SF_HTTP_H

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

/* Send "<line> HTTP/1.0" (line: "GET /metrics") with the extra header
 * lines `headers` ("Range: bytes=0-9\r\n", or "") and read the whole
 * answer, headers included, into buf (NUL-terminated, at most cap - 1
 * bytes). Returns the bytes read. */
static inline size_t sf_test_http_headers(int port, const char *line, const char *headers,
                                          char *buf, size_t cap) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char req[512];
    int n = snprintf(req, sizeof req, "%s HTTP/1.0\r\nHost: localhost\r\n%s\r\n", line, headers);
    ck_assert_int_eq(write(fd, req, (size_t)n), n);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < cap && (r = read(fd, buf + got, cap - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    close(fd);
    return got;
}

/* sf_test_http_headers with no extra header. */
static inline void sf_test_http(int port, const char *line, char *buf, size_t cap) {
    sf_test_http_headers(port, line, "", buf, cap);
}

#endif
