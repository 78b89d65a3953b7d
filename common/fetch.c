/* fetch.c — content-addressed downloads over libcurl (see fetch.h). */
#include "common/fetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/io.h"
#include "common/sha256.h"

/* ---- one transfer ------------------------------------------------------- */

typedef struct transfer {
    int fd;
    uint64_t have;    /* bytes in the part file (and in `h`)          */
    uint64_t start;   /* where this transfer's bytes go               */
    uint64_t max;     /* refuse a file larger than this               */
    sf_sha256_ctx *h; /* the digest of bytes [0, have)                */
    CURL *curl;
    int began;  /* the first body byte arrived                  */
    int failed; /* SF_E* when the callback stopped the transfer */
    char why[200];
    uint64_t received;
    const volatile sig_atomic_t *cancel;
} transfer;

/* Bytes [0, n) of fd into h. SF_OK or SF_EIO. */
static int hash_prefix(int fd, uint64_t n, sf_sha256_ctx *h) {
    char buf[1 << 16];
    for (uint64_t off = 0; off < n;) {
        size_t want = n - off < sizeof buf ? (size_t)(n - off) : sizeof buf;
        if (sf_pread_full(fd, buf, want, off) != SF_OK)
            return SF_EIO;
        sf_sha256_update(h, buf, want);
        off += want;
    }
    return SF_OK;
}

/* Whether the whole file at fd hashes to `want`: 1 yes, 0 no, <0 error. */
static int file_matches(int fd, uint64_t size, const char *want, char got[SF_SHA256_HEX_LEN + 1],
                        sf_err *err) {
    sf_sha256_ctx *h;
    int rc = sf_sha256_new(&h, err);
    if (rc < 0)
        return rc;
    uint8_t d[SF_SHA256_BYTES];
    rc = hash_prefix(fd, size, h);
    if (rc == SF_OK)
        rc = sf_sha256_final(h, d, err);
    sf_sha256_free(h);
    if (rc < 0)
        return rc == SF_EIO ? sf_err_set(err, SF_EIO, "read: %s", strerror(errno)) : rc;
    sf_hex(d, sizeof d, got);
    return strcmp(got, want) == 0;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud) {
    transfer *t = ud;
    size_t n = size * nmemb;
    if (!t->began) {
        t->began = 1;
        long code = 0;
        curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
        if (code == 200 && t->have > 0) { /* Range ignored: the whole file again */
            if (ftruncate(t->fd, 0) != 0) {
                t->failed = SF_EIO;
                snprintf(t->why, sizeof t->why, "truncate: %s", strerror(errno));
                return 0;
            }
            uint8_t dummy[SF_SHA256_BYTES];
            sf_sha256_final(t->h, dummy, NULL); /* starts again at the empty message */
            t->have = 0;
        }
        t->start = t->have;
    }
    if (t->have + n > t->max) {
        t->failed = SF_EFULL;
        snprintf(t->why, sizeof t->why, "larger than %" PRIu64 " bytes", t->max);
        return 0;
    }
    if (sf_pwrite_full(t->fd, p, n, t->have) != SF_OK) {
        t->failed = SF_EIO;
        snprintf(t->why, sizeof t->why, "write: %s", strerror(errno));
        return 0;
    }
    sf_sha256_update(t->h, p, n);
    t->have += n;
    t->received += n;
    return n;
}

/* A 206's Content-Range must start where the part ends. */
static size_t on_header(char *p, size_t size, size_t nmemb, void *ud) {
    transfer *t = ud;
    size_t n = size * nmemb;
    static const char key[] = "content-range:";
    if (n > sizeof key && !strncasecmp(p, key, sizeof key - 1)) {
        char line[160];
        size_t k = n < sizeof line - 1 ? n : sizeof line - 1;
        memcpy(line, p, k);
        line[k] = '\0';
        unsigned long long a = 0;
        if (sscanf(line + sizeof key - 1, " bytes %llu-", &a) == 1 && a != t->have) {
            t->failed = SF_EFORMAT;
            snprintf(t->why, sizeof t->why, "asked from byte %" PRIu64 ", got a range from %llu",
                     t->have, a);
            return 0;
        }
    }
    return n;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    (void)a, (void)b, (void)c, (void)d;
    const transfer *t = ud;
    return t->cancel && *t->cancel;
}

/* One HTTP transfer of `url` into t->fd from t->have on. SF_OK when the
 * server sent the rest (or said there is nothing after t->have: 416),
 * else an error in `why`. */
static int transfer_once(transfer *t, const char *url, uint32_t stall_s, char *why, size_t cap) {
    CURL *curl = curl_easy_init();
    if (!curl) {
        snprintf(why, cap, "libcurl would not start");
        return SF_ENOMEM;
    }
    char errbuf[CURL_ERROR_SIZE] = "", range[48];
    t->curl = curl;
    t->began = 0;
    t->failed = 0;
    t->why[0] = '\0';
    snprintf(range, sizeof range, "%" PRIu64 "-", t->have);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L); /* a CDN may redirect */
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, (long)stall_s);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, t);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    if (t->have > 0)
        curl_easy_setopt(curl, CURLOPT_RANGE, range);
    CURLcode cc = curl_easy_perform(curl);
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(curl);
    t->curl = NULL;
    if (cc == CURLE_OK)
        return SF_OK;
    if (cc == CURLE_HTTP_RETURNED_ERROR && code == 416 && t->have > 0)
        return SF_OK; /* nothing after the part: it is the whole file (checked next) */
    if (t->failed) {
        snprintf(why, cap, "%s", t->why);
        return t->failed;
    }
    if (cc == CURLE_ABORTED_BY_CALLBACK) {
        snprintf(why, cap, "cancelled");
        return SF_ESTATE;
    }
    if (cc == CURLE_HTTP_RETURNED_ERROR)
        snprintf(why, cap, "HTTP status %ld", code);
    else
        snprintf(why, cap, "%s", errbuf[0] ? errbuf : curl_easy_strerror(cc));
    return code == 404 ? SF_ENOTFOUND : SF_EIO;
}

/* ---- the cache ---------------------------------------------------------- */

/* The verified cached file `path`: 1 when it is there and whole, 0 when
 * absent (a file with another digest is deleted), <0 on an error. */
static int cached(const char *path, const char *sha, sf_err *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : sf_err_set(err, SF_EIO, "%s: %s", path, strerror(errno));
    struct stat sb;
    char got[SF_SHA256_HEX_LEN + 1];
    int rc = fstat(fd, &sb) == 0 ? file_matches(fd, (uint64_t)sb.st_size, sha, got, err)
                                 : sf_err_set(err, SF_EIO, "%s: %s", path, strerror(errno));
    close(fd);
    if (rc == 0)
        unlink(path); /* changed on disk since it was verified: fetch it again */
    return rc;
}

/* Download into the locked part file `pfd` and, when whole and matching,
 * rename it to `path`. */
static int download(const sf_fetch_opts *o, const char *sha, const char *url, int pfd,
                    const char *part, const char *path, sf_fetch_stats *st, sf_err *err) {
    struct stat sb;
    if (fstat(pfd, &sb) != 0)
        return sf_err_set(err, SF_EIO, "%s: %s", part, strerror(errno));
    transfer t = {.fd = pfd,
                  .have = (uint64_t)sb.st_size,
                  .max = o->max_bytes ? o->max_bytes : SF_FETCH_DEFAULT_MAX_BYTES,
                  .cancel = o->cancel};
    int rc = sf_sha256_new(&t.h, err);
    if (rc < 0)
        return rc;
    if (hash_prefix(pfd, t.have, t.h) != SF_OK) {
        sf_sha256_free(t.h);
        return sf_err_set(err, SF_EIO, "%s: %s", part, strerror(errno));
    }
    int attempts = o->attempts > 0 ? o->attempts : SF_FETCH_DEFAULT_ATTEMPTS;
    char why[256] = "";
    rc = SF_EIO;
    for (int a = 0; a < attempts; a++) {
        if (a > 0)
            sf_fetch_sleep_ms(1000u << (a - 1 < 4 ? a - 1 : 4), o->cancel);
        if (o->cancel && *o->cancel) {
            rc = SF_ESTATE;
            snprintf(why, sizeof why, "cancelled");
            break;
        }
        if (st) {
            if (a == 0)
                st->resumed_from = t.have;
            st->attempts++;
        }
        rc = transfer_once(&t, url, o->stall_s ? o->stall_s : SF_FETCH_DEFAULT_STALL_S, why,
                           sizeof why);
        if (rc == SF_OK || rc == SF_EFULL || rc == SF_ESTATE || rc == SF_ENOTFOUND)
            break;
    }
    if (st)
        st->downloaded += t.received;
    uint8_t d[SF_SHA256_BYTES];
    char got[SF_SHA256_HEX_LEN + 1];
    int frc = sf_sha256_final(t.h, d, err);
    sf_sha256_free(t.h);
    if (rc != SF_OK) {
        if (rc == SF_EFULL || t.have == 0)
            unlink(part); /* too large, or nothing to resume from */
        if (t.have == 0)
            return sf_err_set(err, rc, "%s: %s", url, why);
        return sf_err_set(err, rc, "%s: %s (%" PRIu64 " bytes held in %s%s)", url, why, t.have,
                          part, rc == SF_EFULL ? ", deleted" : "; the next try resumes");
    }
    if (frc < 0)
        return frc;
    sf_hex(d, sizeof d, got);
    if (strcmp(got, sha) != 0) {
        unlink(part);
        uint64_t before = st ? st->resumed_from : 0;
        if (before)
            return sf_err_set(err, SF_ECORRUPT,
                              "%s: the %" PRIu64 " bytes (%" PRIu64 " of them held from an "
                              "earlier try in %s) hash to %s, not %s: refused and deleted",
                              url, t.have, before, part, got, sha);
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: the %" PRIu64 " bytes served hash to %s, not %s: refused and "
                          "deleted",
                          url, t.have, got, sha);
    }
    if (fsync(pfd) != 0 || rename(part, path) != 0)
        return sf_err_set(err, SF_EIO, "%s: %s", path, strerror(errno));
    return sf_fsync_parent(path, err);
}

int sf_fetch_content(const sf_fetch_opts *o, const char *sha256_hex, char *path, size_t cap,
                     sf_fetch_stats *st, sf_err *err) {
    uint64_t t0 = sf_now_ns();
    if (st)
        memset(st, 0, sizeof *st);
    char url[SF_FETCH_MAX_URL], part[4200];
    int rc = sf_fetch_template_check(o->url_template, err);
    if (rc == SF_OK)
        rc = sf_fetch_url(o->url_template, sha256_hex, url, sizeof url, err);
    if (rc < 0)
        return rc;
    if (sf_mkdir_p(o->cache_dir) < 0)
        return sf_err_set(err, SF_EIO, "model cache %s: %s", o->cache_dir, strerror(errno));
    if ((size_t)snprintf(path, cap, "%s/%s.safetensors", o->cache_dir, sha256_hex) >= cap ||
        (size_t)snprintf(part, sizeof part, "%s/%s.part", o->cache_dir, sha256_hex) >= sizeof part)
        return sf_err_set(err, SF_EFULL, "model cache path %s: too long", o->cache_dir);
    for (int staggered = 0;;) {
        if ((rc = cached(path, sha256_hex, err)) != 0) {
            if (rc > 0 && st) {
                st->cached = st->attempts == 0;
                st->seconds = (double)(sf_now_ns() - t0) / 1e9;
            }
            return rc > 0 ? SF_OK : rc;
        }
        if (!staggered && o->stagger_ms > 0) {
            uint32_t ms =
                (uint32_t)(sf_mix64(o->random_seed ^ sf_mix64(sf_now_ns())) % o->stagger_ms);
            sf_fetch_sleep_ms(ms, o->cancel);
            if (st)
                st->staggered_ms = ms;
        }
        staggered = 1;
        int pfd = open(part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (pfd < 0)
            return sf_err_set(err, SF_EIO, "%s: %s", part, strerror(errno));
        if (flock(pfd, LOCK_EX) != 0) {
            close(pfd);
            return sf_err_set(err, SF_EIO, "%s: lock: %s", part, strerror(errno));
        }
        /* another process may have finished (and renamed) this part while
         * we waited for its lock: then look in the cache again */
        struct stat a, b;
        if (fstat(pfd, &a) != 0 || stat(part, &b) != 0 || a.st_ino != b.st_ino ||
            a.st_dev != b.st_dev) {
            close(pfd);
            continue;
        }
        rc = download(o, sha256_hex, url, pfd, part, path, st, err);
        close(pfd); /* releases the lock */
        if (st)
            st->seconds = (double)(sf_now_ns() - t0) / 1e9;
        return rc;
    }
}
