/* models.c — the run's model bundles over HTTP, for workers and gpu-evald
 * instances without the registry's filesystem (docs/operator.md "Model
 * distribution"): GET /models/<sha256> on the coordinator's HTTP server
 * (common/metrics_http.h: where /metrics is served, Range and ETag
 * included), and the choice of model for a job leased to a worker that
 * fetches its own (co_choose_model).
 *
 * The route runs on libmicrohttpd's thread: it reads only the config
 * (fixed once the coordinator runs) and counts with atomics. A bundle is
 * served only under its own SHA-256 name from where the run keeps it: the
 * registry beside model.champion, or the pinned model.bundle and the gate
 * sides' bundles under their configured digests. A fetcher verifies the
 * digest itself (common/fetch.h), so nothing here hashes. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/registry.h"
#include "coordinator/internal.h"

/* Where the run keeps the bundle `sha` (canonical), into path[cap]; 0, or
 * -1 when this run names no such model. */
static int bundle_of(const sf_coordinator *co, const char *sha, char *path, size_t cap) {
    const sf_run_config *c = &co->cfg;
    if (c->model.sha256[0] && c->model.bundle[0] && !strcmp(sha, c->model.sha256))
        return snprintf(path, cap, "%s", c->model.bundle) < (int)cap ? 0 : -1;
    if (c->champion.sha256[0] && c->champion.bundle[0] && !strcmp(sha, c->champion.sha256))
        return snprintf(path, cap, "%s", c->champion.bundle) < (int)cap ? 0 : -1;
    if (c->candidate.sha256[0] && c->candidate.bundle[0] && !strcmp(sha, c->candidate.sha256))
        return snprintf(path, cap, "%s", c->candidate.bundle) < (int)cap ? 0 : -1;
    if (!c->model.champion[0])
        return -1;
    char dir[SF_CFG_PATH];
    if (sf_registry_dir_of(c->model.champion, dir, sizeof dir) != SF_OK)
        return -1;
    return sf_registry_bundle_path(dir, sha, path, cap) == SF_OK ? 0 : -1;
}

int co_models_route(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    sf_coordinator *co = ctx;
    static const char none[] = "no such model in this run\n";
    char path[SF_CFG_PATH + 96];
    struct stat sb;
    int fd = -1;
    if (sf_sha256_hex_canonical(req->rest) && bundle_of(co, req->rest, path, sizeof path) == 0)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        if (fd >= 0)
            close(fd);
        rep->status = 404;
        rep->body = strdup(none);
        rep->len = sizeof none - 1;
        return rep->body ? 0 : -1;
    }
    __atomic_fetch_add(&co->model_requests, 1, __ATOMIC_RELAXED);
    rep->fd = fd;
    rep->file_size = (uint64_t)sb.st_size;
    rep->content_type = "application/octet-stream";
    rep->cache_control = "public, max-age=31536000, immutable"; /* named by its content */
    snprintf(rep->etag, sizeof rep->etag, "%s", req->rest);
    rep->sent = &co->model_bytes_served;
    return 0;
}

/* Whether `sha` is among the worker's ready models. */
static int holds(const Spirefleet__JobRequest *jr, const char *sha) {
    for (size_t i = 0; i < jr->n_ready_models && i < 8; i++) /* as many as a worker sends */
        if (jr->ready_models[i] && !strcmp(jr->ready_models[i], sha))
            return 1;
    return 0;
}

const char *co_choose_model(sf_coordinator *co, const Spirefleet__JobRequest *jr,
                            const char *champion) {
    if (!jr || !jr->fetches_models || holds(jr, champion))
        return champion;
    for (int k = co->n_models; k-- > 0;) /* the newest bound first */
        if (strcmp(co->models[k], SF_REGISTRY_ROLLOUT) && holds(jr, co->models[k])) {
            co->st.leases_on_previous_model++;
            return co->models[k];
        }
    return champion; /* it holds none of this run's: it fetches the champion now */
}
