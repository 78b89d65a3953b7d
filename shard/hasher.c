/* hasher.c — a writer's content digest, one frame at a time, on a helper
 * thread.
 *
 * The digest is SHA-256 over every record's u64 little-endian length and
 * packed bytes, in index order (docs/format.md). SHA-256 is one serial
 * stream, and at SHA-NI speed it is still a sixth of a writer's work; what
 * can be saved is the waiting: the helper hashes frame k while the writer
 * compresses it and packs frame k+1's records, and the writer waits only
 * when it hands over frame k+1 (or seals, aborts or frees). The bytes
 * hashed, and so the digest, are the same as hashing inline. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "shard/internal.h"

struct sf_frame_hasher {
    sf_sha256_ctx *sha; /* borrowed from the writer */
    uint32_t *ends;     /* the submitted frame's record ends (a copy) */
    const uint8_t *raw; /* the submitted frame's bytes (borrowed) */
    uint32_t n;
    int threaded, busy, stop;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t go, done;
};

static void hash_frame(sf_sha256_ctx *sha, const uint8_t *raw, const uint32_t *ends, uint32_t n) {
    uint32_t start = 0;
    for (uint32_t k = 0; k < n; k++) {
        sf_shard_digest_add(sha, raw + start, ends[k] - start);
        start = ends[k];
    }
}

static void *hasher_main(void *arg) {
    sf_frame_hasher *h = arg;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (!h->busy && !h->stop)
            pthread_cond_wait(&h->go, &h->lock);
        if (!h->busy)
            break;
        pthread_mutex_unlock(&h->lock);
        hash_frame(h->sha, h->raw, h->ends, h->n);
        pthread_mutex_lock(&h->lock);
        h->busy = 0;
        pthread_cond_signal(&h->done);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* Start h's helper thread with its lock and conditions; 0 (and nothing
 * left to destroy) when any of them cannot be had. */
static int start_helper(sf_frame_hasher *h) {
    if (pthread_mutex_init(&h->lock, NULL) != 0)
        return 0;
    int go = pthread_cond_init(&h->go, NULL) == 0;
    int done = go && pthread_cond_init(&h->done, NULL) == 0;
    int started = 0;
    if (done) {
        /* the helper takes no signals: they stay with the caller's
         * threads, whose handlers and EINTRs expect them */
        sigset_t all, old;
        sigfillset(&all);
        int masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
        started = pthread_create(&h->thread, NULL, hasher_main, h) == 0;
        if (masked)
            pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (!started) {
        if (done)
            pthread_cond_destroy(&h->done);
        if (go)
            pthread_cond_destroy(&h->go);
        pthread_mutex_destroy(&h->lock);
    }
    return started;
}

int sf_frame_hasher_new(sf_sha256_ctx *sha, int threaded, sf_frame_hasher **out, sf_err *err) {
    *out = NULL;
    sf_frame_hasher *h = calloc(1, sizeof *h);
    uint32_t *ends = malloc(sizeof *ends * SF_SHARD_MAX_BLOCK_RECORDS);
    if (!h || !ends) {
        free(h);
        free(ends);
        return sf_err_set(err, SF_ENOMEM, "content digest: out of memory");
    }
    h->sha = sha;
    h->ends = ends;
    h->threaded = threaded && start_helper(h);
    *out = h;
    return SF_OK;
}

int sf_frame_hasher_threaded(const sf_frame_hasher *h) {
    return h->threaded;
}

void sf_frame_hasher_wait(sf_frame_hasher *h) {
    if (!h->threaded)
        return;
    pthread_mutex_lock(&h->lock);
    while (h->busy)
        pthread_cond_wait(&h->done, &h->lock);
    pthread_mutex_unlock(&h->lock);
}

void sf_frame_hasher_submit(sf_frame_hasher *h, const uint8_t *raw, const uint32_t *ends,
                            uint32_t n) {
    if (!h->threaded) {
        hash_frame(h->sha, raw, ends, n);
        return;
    }
    pthread_mutex_lock(&h->lock);
    while (h->busy)
        pthread_cond_wait(&h->done, &h->lock);
    memcpy(h->ends, ends, sizeof *ends * n);
    h->raw = raw;
    h->n = n;
    h->busy = 1;
    pthread_cond_signal(&h->go);
    pthread_mutex_unlock(&h->lock);
}

void sf_frame_hasher_free(sf_frame_hasher *h) {
    if (!h)
        return;
    if (h->threaded) {
        pthread_mutex_lock(&h->lock);
        h->stop = 1;
        pthread_cond_signal(&h->go);
        pthread_mutex_unlock(&h->lock);
        pthread_join(h->thread, NULL);
        pthread_cond_destroy(&h->go);
        pthread_cond_destroy(&h->done);
        pthread_mutex_destroy(&h->lock);
    }
    free(h->ends);
    free(h);
}
