/*
 * fetch.h — content-addressed downloads: a file named by its SHA-256,
 * fetched over HTTP(S) from a URL template into a local cache, resumed
 * where an earlier try stopped, and used only once its digest matches
 * (docs/operator.md "Model distribution").
 *
 * The template names the file by its digest: every "{sha256}" in it is
 * replaced by the 64 lower-case hex digits, so the same template points at
 * the coordinator (http://coord:9105/models/{sha256}), an object store or a
 * CDN in front of either. Nothing here trusts the server: the bytes are
 * hashed as they arrive and a file whose digest differs is deleted and
 * refused (SF_ECORRUPT), whoever served it.
 *
 * The cache holds <cache>/<sha256>.safetensors (complete and verified)
 * and, while a download is under way or was cut off, <sha256>.part; the
 * next try asks for the rest with an HTTP Range request (a server that
 * ignores Range sends the whole file, and the part starts over). Two
 * processes fetching the same digest into one cache take turns on the
 * part file's lock, and the second finds the first's result.
 *
 * libcurl does the transfers; the calls block the calling thread (run them
 * on a helper thread to keep working meanwhile, as the worker does). No
 * state is kept between calls.
 */
#ifndef SF_FETCH_H
#define SF_FETCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

enum {
    SF_FETCH_MAX_URL = 1024,       /* a template with its digest put in       */
    SF_FETCH_DEFAULT_ATTEMPTS = 4, /* tries per call, each resuming the last  */
    SF_FETCH_DEFAULT_STALL_S = 30, /* a transfer this long under 1 KiB/s ends */
    SF_FETCH_MAX_STAGGER_S = 3600, /* the longest stagger a config may ask    */
};

/* The largest file a fetch accepts unless told otherwise (2 GiB). */
#define SF_FETCH_DEFAULT_MAX_BYTES (2ull << 30)

typedef struct sf_fetch_opts {
    const char *url_template; /* http:// or https://, with "{sha256}" at least once */
    const char *cache_dir;    /* created when missing                                */
    /* Before the first byte is asked for, wait a uniformly random time in
     * [0, stagger_ms) (only when the file is not cached already): a new
     * model announced to a thousand workers then reaches the server spread
     * over that window instead of all at once. 0: no wait. */
    uint32_t stagger_ms;
    int attempts;                        /* 0: SF_FETCH_DEFAULT_ATTEMPTS; 1 s, 2 s, 4 s apart */
    uint32_t stall_s;                    /* 0: SF_FETCH_DEFAULT_STALL_S                        */
    uint64_t max_bytes;                  /* 0: SF_FETCH_DEFAULT_MAX_BYTES; larger is refused   */
    uint64_t random_seed;                /* the stagger's draw (e.g. from the worker's id)     */
    const volatile sig_atomic_t *cancel; /* non-zero: give up (SF_ESTATE); may be NULL */
} sf_fetch_opts;

/* What one call did, for logs and benchmarks. */
typedef struct sf_fetch_stats {
    int cached;            /* 1: the file was in the cache already (verified)  */
    int attempts;          /* HTTP transfers started                           */
    uint64_t resumed_from; /* bytes already in the part file when a try began  */
    uint64_t downloaded;   /* bytes received over HTTP by this call            */
    uint32_t staggered_ms; /* the stagger waited                               */
    double seconds;        /* the call's wall time                             */
} sf_fetch_stats;

/* Sleep `ms` milliseconds in 50-ms steps, returning early once *cancel
 * (may be NULL) is set: the fetch's stagger and back-off, and the
 * worker's probe interval (worker/models.c). */
void sf_fetch_sleep_ms(uint32_t ms, const volatile sig_atomic_t *cancel);

/* Whether `tmpl` is a usable template: http:// or https://, "{sha256}" at
 * least once, at most SF_FETCH_MAX_URL bytes once filled in, no spaces or
 * control characters. SF_OK, or SF_EINVAL naming what is wrong. */
int sf_fetch_template_check(const char *tmpl, sf_err *err);

/* The template with `sha256_hex` put in, into out[cap]. SF_OK, SF_EINVAL (a
 * bad template or digest), SF_EFULL (cap too small). */
int sf_fetch_url(const char *tmpl, const char *sha256_hex, char *out, size_t cap, sf_err *err);

/* The cached file of `sha256_hex` (64 lower-case hex digits) in
 * <cache>/<sha256>.safetensors, fetched when missing (see the header).
 * On SF_OK, `path` (cap bytes) names the verified file; `st` (may be NULL)
 * says what happened. Errors: SF_EINVAL (a bad template or digest),
 * SF_EIO (the cache directory, or every attempt failed: the message names
 * the URL, the HTTP status or libcurl's reason and the bytes held, which
 * the next call resumes from), SF_ECORRUPT (the file's digest is not
 * `sha256_hex`: the download is deleted), SF_EFULL (larger than
 * max_bytes), SF_ESTATE (cancelled; the part is kept). A cached file whose
 * digest no longer matches is deleted and fetched again. */
int sf_fetch_content(const sf_fetch_opts *o, const char *sha256_hex, char *path, size_t cap,
                     sf_fetch_stats *st, sf_err *err);

#endif
