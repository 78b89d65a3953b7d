/* test_fetch.c — content-addressed downloads (common/fetch.h) against real
 * HTTP servers on loopback: the project's own (common/metrics_http.h, the
 * one the coordinator serves bundles from, Range included) and a bare one
 * that cuts the connection halfway. A bundle is fetched, verified and
 * cached; a corrupted download is refused and deleted; an interrupted one
 * is resumed from where it stopped; a cache file changed on disk is
 * fetched again. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fetch.h"
#include "common/metrics_http.h"
#include "common/sha256.h"
#include "sf_check.h"
#include "sf_tmpdir.h"

SF_TMPDIR_OF_TESTS("sf-fetch")

enum { SIZE = 300000 };

/* The content served and its digest; `bad` serves one flipped byte. */
typedef struct served {
    char *bytes;
    char sha[SF_SHA256_HEX_LEN + 1];
    char path[300];      /* the file on disk */
    char bad_path[300];  /* the same with one byte flipped */
    atomic_int requests; /* files served */
    atomic_int ranged;   /* of them with a Range header */
    int bad;
} served;

static char *metrics_page(void *ctx, size_t *len) {
    (void)ctx;
    *len = 0;
    return strdup("");
}

static int model_route(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    served *s = ctx;
    if (strcmp(req->rest, s->sha) != 0) {
        rep->status = 404;
        return 0;
    }
    atomic_fetch_add(&s->requests, 1);
    rep->fd = open(s->bad ? s->bad_path : s->path, O_RDONLY);
    rep->file_size = SIZE;
    rep->content_type = "application/octet-stream";
    return rep->fd >= 0 ? 0 : -1;
}

static void make_served(served *s) {
    memset(s, 0, sizeof *s);
    s->bytes = malloc(SIZE);
    ck_assert_ptr_nonnull(s->bytes);
    for (int i = 0; i < SIZE; i++)
        s->bytes[i] = (char)(sf_mix64((uint64_t)i) & 0xff);
    uint8_t d[SF_SHA256_BYTES];
    sf_err e = {0};
    ck_assert_int_eq(sf_sha256(s->bytes, SIZE, d, &e), SF_OK);
    sf_hex(d, sizeof d, s->sha);
    snprintf(s->path, sizeof s->path, "%s/served.bin", tmpdir);
    snprintf(s->bad_path, sizeof s->bad_path, "%s/served-bad.bin", tmpdir);
    FILE *f = fopen(s->path, "wb");
    ck_assert_int_eq(fwrite(s->bytes, 1, SIZE, f), SIZE);
    fclose(f);
    s->bytes[SIZE / 2] ^= 1;
    f = fopen(s->bad_path, "wb");
    ck_assert_int_eq(fwrite(s->bytes, 1, SIZE, f), SIZE);
    fclose(f);
    s->bytes[SIZE / 2] ^= 1;
}

static sf_metrics_http *serve(served *s, char *tmpl, size_t cap) {
    sf_http_route r[] = {{"/models/", model_route, s}};
    sf_metrics_http *h;
    sf_err e = {0};
    ck_assert_msg(sf_metrics_http_start_routes(NULL, SF_METRICS_ANY_PORT, metrics_page, NULL, r, 1,
                                               &h, &e) == SF_OK,
                  "%s", e.msg);
    snprintf(tmpl, cap, "http://127.0.0.1:%d/models/{sha256}", sf_metrics_http_port(h));
    return h;
}

static void assert_file_is(const char *path, const char *bytes, size_t n) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *got = malloc(n + 1);
    ck_assert_int_eq(fread(got, 1, n + 1, f), n);
    fclose(f);
    ck_assert_int_eq(memcmp(got, bytes, n), 0);
    free(got);
}

START_TEST(fetched_verified_and_cached) {
    served s;
    make_served(&s);
    char tmpl[128], cache[300], path[400], part[400];
    sf_metrics_http *h = serve(&s, tmpl, sizeof tmpl);
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    sf_fetch_opts o = {.url_template = tmpl, .cache_dir = cache, .stagger_ms = 200};
    sf_fetch_stats st;
    sf_err e = {0};
    ck_assert_msg(sf_fetch_content(&o, s.sha, path, sizeof path, &st, &e) == SF_OK, "%s", e.msg);
    char want[400];
    snprintf(want, sizeof want, "%s/%s.safetensors", cache, s.sha);
    ck_assert_str_eq(path, want);
    assert_file_is(path, s.bytes, SIZE);
    ck_assert_int_eq(st.cached, 0);
    ck_assert_int_eq(st.attempts, 1);
    ck_assert_uint_eq(st.downloaded, SIZE);
    ck_assert_uint_eq(st.resumed_from, 0);
    ck_assert_uint_lt(st.staggered_ms, 200);
    snprintf(part, sizeof part, "%s/%s.part", cache, s.sha);
    ck_assert_int_ne(access(part, F_OK), 0);
    /* again: from the cache, the server not asked */
    ck_assert_msg(sf_fetch_content(&o, s.sha, path, sizeof path, &st, &e) == SF_OK, "%s", e.msg);
    ck_assert_int_eq(st.cached, 1);
    ck_assert_uint_eq(st.downloaded, 0);
    ck_assert_uint_eq(st.staggered_ms, 0);
    ck_assert_int_eq(atomic_load(&s.requests), 1);
    /* a cached file changed on disk is fetched again */
    int fd = open(path, O_WRONLY);
    ck_assert_int_eq(pwrite(fd, "X", 1, 10), 1);
    close(fd);
    ck_assert_msg(sf_fetch_content(&o, s.sha, path, sizeof path, &st, &e) == SF_OK, "%s", e.msg);
    ck_assert_int_eq(st.cached, 0);
    ck_assert_uint_eq(st.downloaded, SIZE);
    assert_file_is(path, s.bytes, SIZE);
    ck_assert_int_eq(atomic_load(&s.requests), 2);
    /* a digest the server does not hold: 404, named */
    char other[SF_SHA256_HEX_LEN + 1];
    memset(other, 'a', SF_SHA256_HEX_LEN);
    other[SF_SHA256_HEX_LEN] = '\0';
    o.attempts = 1;
    ck_assert_int_eq(sf_fetch_content(&o, other, path, sizeof path, &st, &e), SF_ENOTFOUND);
    ck_assert_msg(strstr(e.msg, "HTTP status 404") && strstr(e.msg, other) &&
                      !strstr(e.msg, "resumes"),
                  "%s", e.msg);
    /* nothing to resume from: no part left behind */
    snprintf(part, sizeof part, "%s/%s.part", cache, other);
    ck_assert_int_ne(access(part, F_OK), 0);
    sf_metrics_http_stop(h);
    free(s.bytes);
}
END_TEST

START_TEST(a_corrupted_download_is_refused_and_deleted) {
    served s;
    make_served(&s);
    s.bad = 1;
    char tmpl[128], cache[300], path[400], part[400], msg[600];
    sf_metrics_http *h = serve(&s, tmpl, sizeof tmpl);
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    sf_fetch_opts o = {.url_template = tmpl, .cache_dir = cache};
    sf_err e = {0};
    ck_assert_int_eq(sf_fetch_content(&o, s.sha, path, sizeof path, NULL, &e), SF_ECORRUPT);
    uint8_t d[SF_SHA256_BYTES];
    char bad_sha[SF_SHA256_HEX_LEN + 1], url[200];
    s.bytes[SIZE / 2] ^= 1;
    ck_assert_int_eq(sf_sha256(s.bytes, SIZE, d, &e), SF_OK);
    sf_hex(d, sizeof d, bad_sha);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/models/%s", sf_metrics_http_port(h), s.sha);
    snprintf(msg, sizeof msg, "%s: the 300000 bytes served hash to %s, not %s: refused and deleted",
             url, bad_sha, s.sha);
    ck_assert_str_eq(e.msg, msg);
    snprintf(part, sizeof part, "%s/%s.part", cache, s.sha);
    ck_assert_int_ne(access(part, F_OK), 0);
    ck_assert_int_ne(access(path, F_OK), 0);
    sf_metrics_http_stop(h);
    free(s.bytes);
}
END_TEST

/* A bare HTTP server that answers one request with a 200 for the whole
 * file but closes after `cut` bytes of the body. */
typedef struct cutter {
    int lfd, port;
    const char *bytes;
    size_t cut;
} cutter;

static void *cut_serve(void *arg) {
    cutter *c = arg;
    int fd = accept(c->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    char req[2048];
    ssize_t got = read(fd, req, sizeof req);
    (void)got;
    char head[160];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", SIZE);
    ck_assert_int_eq(write(fd, head, (size_t)n), n);
    ck_assert_int_eq(write(fd, c->bytes, c->cut), (ssize_t)c->cut);
    close(fd);
    return NULL;
}

START_TEST(an_interrupted_download_resumes_where_it_stopped) {
    served s;
    make_served(&s);
    cutter c = {.bytes = s.bytes, .cut = 123457};
    c.lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(c.lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(c.lfd, 4), 0);
    socklen_t al = sizeof a;
    getsockname(c.lfd, (struct sockaddr *)&a, &al);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, cut_serve, &c), 0);
    char tmpl[128], cache[300], path[400], part[400];
    snprintf(tmpl, sizeof tmpl, "http://127.0.0.1:%d/m/{sha256}", ntohs(a.sin_port));
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    sf_fetch_opts o = {.url_template = tmpl, .cache_dir = cache, .attempts = 1};
    sf_fetch_stats st;
    sf_err e = {0};
    ck_assert_int_eq(sf_fetch_content(&o, s.sha, path, sizeof path, &st, &e), SF_EIO);
    pthread_join(th, NULL);
    close(c.lfd);
    ck_assert_msg(strstr(e.msg, "123457 bytes held") && strstr(e.msg, "the next try resumes"), "%s",
                  e.msg);
    snprintf(part, sizeof part, "%s/%s.part", cache, s.sha);
    struct stat sb;
    ck_assert_int_eq(stat(part, &sb), 0);
    ck_assert_int_eq(sb.st_size, 123457);
    /* the next try, at a server that honours Range, asks for the rest only */
    sf_metrics_http *h = serve(&s, tmpl, sizeof tmpl);
    ck_assert_msg(sf_fetch_content(&o, s.sha, path, sizeof path, &st, &e) == SF_OK, "%s", e.msg);
    ck_assert_uint_eq(st.resumed_from, 123457);
    ck_assert_uint_eq(st.downloaded, SIZE - 123457);
    assert_file_is(path, s.bytes, SIZE);
    ck_assert_int_ne(access(part, F_OK), 0);
    sf_metrics_http_stop(h);
    free(s.bytes);
}
END_TEST

START_TEST(templates_and_digests_are_checked) {
    sf_err e = {0};
    ck_assert_int_eq(sf_fetch_template_check("http://h/m/{sha256}", &e), SF_OK);
    ck_assert_int_eq(sf_fetch_template_check("https://cdn/x/{sha256}.safetensors", &e), SF_OK);
    ck_assert_int_eq(sf_fetch_template_check("ftp://h/{sha256}", &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "URL template 'ftp://h/{sha256}': expected http:// or https://");
    ck_assert_int_eq(sf_fetch_template_check("http://h/model", &e), SF_EINVAL);
    ck_assert_str_eq(e.msg,
                     "URL template 'http://h/model' has no {sha256}: a model is fetched by its "
                     "SHA-256");
    ck_assert_int_eq(sf_fetch_template_check("http://h/a b/{sha256}", &e), SF_EINVAL);
    char url[200];
    const char *sha = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    ck_assert_int_eq(sf_fetch_url("http://h/{sha256}/{sha256}.st", sha, url, sizeof url, &e),
                     SF_OK);
    ck_assert_str_eq(url,
                     "http://h/00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff/"
                     "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff.st");
    ck_assert_int_eq(sf_fetch_url("http://h/{sha256}", "ABC", url, sizeof url, &e), SF_EINVAL);
    ck_assert_int_eq(sf_fetch_url("http://h/{sha256}", sha, url, 20, &e), SF_EFULL);
    sf_fetch_opts o = {.url_template = "http://h/{sha256}", .cache_dir = tmpdir};
    char path[300];
    ck_assert_int_eq(sf_fetch_content(&o, "../../etc/passwd", path, sizeof path, NULL, &e),
                     SF_EINVAL);
}
END_TEST

#include "test-fetch.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("fetch", "fetch", 60, tmpdir_make, tmpdir_remove)
