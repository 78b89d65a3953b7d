/* models.c — the worker's fetched models (see models.h). */
#include "worker/models.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "worker/worker.h"

enum { PROBE_RETRY_MS = 2000 };

struct sf_wm {
    sf_run_config cfg; /* the run's, with the evaluator's endpoint */
    int local;
    char cache[SF_CFG_PATH];
    uint64_t seed;
    pthread_mutex_t lock;
    char ready[SF_WM_READY_MAX][SF_SHA256_HEX_LEN + 1]; /* newest first */
    int n_ready;
    /* the helper thread */
    pthread_t th;
    int running;  /* started and not joined */
    int finished; /* set by the helper under lock */
    volatile sig_atomic_t cancel;
    char target[SF_SHA256_HEX_LEN + 1];
    int staggered; /* the helper waits the stagger first */
    char outcome[SF_ERR_MSG_MAX + 128];
    /* the last failed fetch: its model, why, and when it may be tried in
     * the background again */
    char failed[SF_SHA256_HEX_LEN + 1];
    char failed_why[SF_ERR_MSG_MAX];
    uint64_t retry_at_ns;
    uint32_t retry_s;
};

static void mark_ready_locked(sf_wm *m, const char *sha) {
    int at = m->n_ready < SF_WM_READY_MAX ? m->n_ready : SF_WM_READY_MAX - 1;
    for (int i = 0; i < m->n_ready; i++)
        if (!strcmp(m->ready[i], sha)) {
            at = i;
            break;
        }
    memmove(m->ready[1], m->ready[0], (size_t)at * sizeof m->ready[0]);
    snprintf(m->ready[0], sizeof m->ready[0], "%s", sha);
    if (at == m->n_ready)
        m->n_ready++;
}

static int is_ready_locked(const sf_wm *m, const char *sha) {
    for (int i = 0; i < m->n_ready; i++)
        if (!strcmp(m->ready[i], sha))
            return 1;
    return 0;
}

void sf_wm_mark_ready(sf_wm *m, const char *sha) {
    pthread_mutex_lock(&m->lock);
    mark_ready_locked(m, sha);
    pthread_mutex_unlock(&m->lock);
}

/* The bundles already in the cache, newest last marked (so first in the
 * list): a restarted worker says at once what it holds. Each is verified
 * again when a job uses it (common/fetch.h). */
static void seed_from_cache(sf_wm *m) {
    DIR *d = opendir(m->cache);
    if (!d)
        return;
    struct {
        char sha[SF_SHA256_HEX_LEN + 1];
        time_t mtime;
    } found[SF_WM_READY_MAX];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char sha[SF_SHA256_HEX_LEN + 1];
        if (strlen(e->d_name) != SF_SHA256_HEX_LEN + 12 ||
            strcmp(e->d_name + SF_SHA256_HEX_LEN, ".safetensors") != 0)
            continue;
        memcpy(sha, e->d_name, SF_SHA256_HEX_LEN);
        sha[SF_SHA256_HEX_LEN] = '\0';
        char path[SF_CFG_PATH + 96];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", m->cache, e->d_name);
        if (!sf_sha256_hex_canonical(sha) || stat(path, &sb) != 0)
            continue;
        int at = n < SF_WM_READY_MAX ? n++ : -1; /* keep the newest SF_WM_READY_MAX */
        if (at < 0) {
            at = 0;
            for (int i = 1; i < n; i++)
                if (found[i].mtime < found[at].mtime)
                    at = i;
            if (found[at].mtime >= sb.st_mtime)
                continue;
        }
        memcpy(found[at].sha, sha, sizeof sha);
        found[at].mtime = sb.st_mtime;
    }
    closedir(d);
    for (int k = 0; k < n; k++) { /* oldest first, so the newest ends first */
        int best = -1;
        for (int i = 0; i < n; i++)
            if (found[i].sha[0] && (best < 0 || found[i].mtime < found[best].mtime))
                best = i;
        mark_ready_locked(m, found[best].sha);
        found[best].sha[0] = '\0';
    }
}

int sf_wm_open(const sf_run_config *cfg, int local, const char *cache_dir,
               const char *evald_endpoint, uint64_t seed, sf_wm **out, sf_err *err) {
    *out = NULL;
    int rc = sf_fetch_template_check(cfg->model.url, err);
    if (rc < 0)
        return rc;
    sf_wm *m = calloc(1, sizeof *m);
    if (!m)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    m->cfg = *cfg;
    if (evald_endpoint)
        snprintf(m->cfg.evald.endpoint, sizeof m->cfg.evald.endpoint, "%s", evald_endpoint);
    m->local = local;
    snprintf(m->cache, sizeof m->cache, "%s", cache_dir ? cache_dir : "");
    m->seed = seed;
    pthread_mutex_init(&m->lock, NULL);
    if (local)
        seed_from_cache(m);
    *out = m;
    return SF_OK;
}

void sf_wm_close(sf_wm *m) {
    if (!m)
        return;
    m->cancel = 1;
    if (m->running)
        pthread_join(m->th, NULL);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

int sf_wm_ready(sf_wm *m, char out[SF_WM_READY_MAX][SF_SHA256_HEX_LEN + 1]) {
    pthread_mutex_lock(&m->lock);
    int n = m->n_ready;
    memcpy(out, m->ready, (size_t)n * sizeof m->ready[0]);
    pthread_mutex_unlock(&m->lock);
    return n;
}

/* gpu-evald fetches for itself (--models-url): the model is ready once it
 * answers a probe with it. */
static int probe_until_served(sf_wm *m, char *why, size_t cap) {
    uint32_t stagger = m->staggered ? m->cfg.model.stagger_s * 1000u : 0;
    if (stagger)
        sf_fetch_sleep_ms((uint32_t)(sf_mix64(m->seed ^ sf_now_ns()) % stagger), &m->cancel);
    while (!m->cancel) {
        sf_batch_evaluator *ev = NULL;
        sf_err e = {0};
        int rc = sf_worker_evaluator_new(&m->cfg, m->target, NULL, &ev, &e);
        if (rc == SF_OK)
            rc = sf_worker_evaluator_probe(ev, &e);
        sf_worker_evaluator_free(ev);
        if (rc == SF_OK)
            return SF_OK;
        snprintf(why, cap, "%s", e.msg);
        sf_fetch_sleep_ms(PROBE_RETRY_MS, &m->cancel);
    }
    return SF_ESTATE;
}

static void *helper(void *arg) {
    sf_wm *m = arg;
    char msg[sizeof m->outcome], why[SF_ERR_MSG_MAX] = "";
    int rc;
    if (m->local) {
        sf_fetch_opts o = {.url_template = m->cfg.model.url,
                           .cache_dir = m->cache,
                           .stagger_ms = m->staggered ? m->cfg.model.stagger_s * 1000u : 0,
                           .random_seed = m->seed,
                           .cancel = &m->cancel};
        char path[SF_CFG_PATH + 96];
        sf_fetch_stats st;
        sf_err e = {0};
        rc = sf_fetch_content(&o, m->target, path, sizeof path, &st, &e);
        snprintf(why, sizeof why, "%s", e.msg);
        if (rc == SF_OK)
            snprintf(msg, sizeof msg,
                     "model %.12s... ready: %s (%llu bytes in %.1f s after a %.1f s stagger%s)",
                     m->target, st.cached ? "in the cache" : "fetched",
                     (unsigned long long)st.downloaded, st.seconds, st.staggered_ms / 1000.0,
                     st.resumed_from ? ", resumed" : "");
        else
            snprintf(msg, sizeof msg, "model %.12s...: fetch failed: %s", m->target, e.msg);
    } else {
        rc = probe_until_served(m, why, sizeof why);
        snprintf(msg, sizeof msg, "model %.12s...%s", m->target,
                 rc == SF_OK ? " ready: gpu-evald serves it" : ": probe cancelled");
    }
    pthread_mutex_lock(&m->lock);
    if (rc == SF_OK) {
        mark_ready_locked(m, m->target);
        if (!strcmp(m->failed, m->target))
            m->failed[0] = '\0';
        m->retry_s = 0;
    } else if (rc != SF_ESTATE) { /* not a cancel: back off before the next try */
        m->retry_s = m->retry_s ? m->retry_s * 2 : SF_WM_RETRY_S;
        if (m->retry_s > SF_WM_RETRY_MAX_S)
            m->retry_s = SF_WM_RETRY_MAX_S;
        m->retry_at_ns = sf_now_ns() + (uint64_t)m->retry_s * 1000000000ull;
        snprintf(m->failed, sizeof m->failed, "%s", m->target);
        snprintf(m->failed_why, sizeof m->failed_why, "%s", why);
    }
    snprintf(m->outcome, sizeof m->outcome, "%s", msg);
    m->finished = 1;
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

/* Join a finished helper (worker's thread). */
static void reap(sf_wm *m) {
    pthread_mutex_lock(&m->lock);
    int done = m->finished;
    pthread_mutex_unlock(&m->lock);
    if (m->running && done) {
        pthread_join(m->th, NULL);
        m->running = 0;
    }
}

/* Start the helper on `sha`: `staggered` waits the stagger first, and
 * `backoff` skips a model whose last fetch failed within the back-off. */
static int start(sf_wm *m, const char *sha, int staggered, int backoff) {
    if (!sha || !sf_sha256_hex_canonical(sha))
        return 0;
    reap(m);
    pthread_mutex_lock(&m->lock);
    int skip = m->running || is_ready_locked(m, sha) ||
               (backoff && !strcmp(m->failed, sha) && sf_now_ns() < m->retry_at_ns);
    pthread_mutex_unlock(&m->lock);
    if (skip)
        return 0;
    m->staggered = staggered;
    snprintf(m->target, sizeof m->target, "%s", sha);
    m->finished = 0;
    m->outcome[0] = '\0';
    if (pthread_create(&m->th, NULL, helper, m) != 0)
        return 0;
    m->running = 1;
    return 1;
}

int sf_wm_prefetch(sf_wm *m, const char *sha) {
    return start(m, sha, 1, 1);
}

int sf_wm_fetch_start(sf_wm *m, const char *sha) {
    return start(m, sha, 0, 0);
}

sf_wm_state sf_wm_state_of(sf_wm *m, const char *sha, char *why, size_t cap) {
    reap(m);
    pthread_mutex_lock(&m->lock);
    sf_wm_state st = is_ready_locked(m, sha)                  ? SF_WM_HELD
                     : m->running && !strcmp(m->target, sha)  ? SF_WM_FETCHING
                     : !m->running && !strcmp(m->failed, sha) ? SF_WM_FAILED
                                                              : SF_WM_NONE;
    if (st == SF_WM_FAILED && why)
        snprintf(why, cap, "%s", m->failed_why);
    pthread_mutex_unlock(&m->lock);
    return st;
}

int sf_wm_poll(sf_wm *m, char *msg, size_t cap) {
    pthread_mutex_lock(&m->lock);
    int got = m->finished && m->outcome[0];
    if (got) {
        snprintf(msg, cap, "%s", m->outcome);
        m->outcome[0] = '\0';
    }
    pthread_mutex_unlock(&m->lock);
    reap(m);
    return got;
}

int sf_wm_fetch_now(sf_wm *m, const char *sha, char *path, size_t cap, sf_fetch_stats *st,
                    sf_err *err) {
    sf_fetch_opts o = {.url_template = m->cfg.model.url,
                       .cache_dir = m->cache,
                       .random_seed = m->seed,
                       .cancel = &m->cancel};
    int rc = sf_fetch_content(&o, sha, path, cap, st, err);
    if (rc == SF_OK)
        sf_wm_mark_ready(m, sha);
    return rc;
}
