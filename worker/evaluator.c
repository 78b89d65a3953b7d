/*
 * evaluator.c — the worker's network evaluators (worker.h): a session per
 * job thread over gpu-evald/neteval.h, remote (ZeroMQ to gpu-evald) or
 * in-process (the cpu backend on a bundle loaded once).
 *
 * A session turns the search's leaf requests into positions
 * (sf_pos_from_feat: a view, no copy), evaluates them as one batch, and
 * answers with the 21-bin value distribution and the softmax priors over
 * the legal actions (sf_net_out_priors), as search.h expects.
 */
#include <stdlib.h>
#include <string.h>

#include "common/endpoint_file.h"
#include "gpu-evald/neteval.h"
#include "model/model.h"
#include "search/netsearch.h"
#include "worker/worker.h"

typedef struct eval_ctx {
    sf_batch_evaluator api;
    sf_run_config cfg;
    sf_bundle *bundle; /* in-process; NULL for remote */
    char sha[65];
    char endpoint_file[SF_CFG_PATH]; /* sf_worker_evaluator_follow, or "" */
    sf_zsec_client curve;            /* the run's keys (security.*), or plain */
} eval_ctx;

typedef struct session {
    sf_neteval *ev;
    int cap;
    sf_pos *pos;
    sf_net_out *out;
} session;

static int s_open(void *ctx, void **out, sf_err *err) {
    eval_ctx *c = ctx;
    session *s = calloc(1, sizeof *s);
    if (!s)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    sf_neteval_opts o = {0};
    o.model_sha256 = c->sha;
    o.timeout_ms = (int)c->cfg.evald.timeout_ms;
    o.max_retries = (int)c->cfg.evald.retries;
    o.curve = &c->curve;
    int rc;
    if (c->bundle) {
        rc = sf_neteval_open_local(c->bundle, &o, &s->ev, err);
    } else {
        /* followed: wherever gpu-evald serves now (a session opens per job) */
        char ep[SF_CFG_PATH];
        sf_err fe = {0};
        o.endpoint = c->endpoint_file[0] &&
                             sf_endpoint_file_read(c->endpoint_file, ep, sizeof ep, &fe) == SF_OK &&
                             !sf_endpoint_problem(ep)
                         ? ep
                         : c->cfg.evald.endpoint;
        rc = sf_neteval_connect(&o, NULL, &s->ev, err);
    }
    if (rc < 0) {
        free(s);
        return rc;
    }
    *out = s;
    return SF_OK;
}

static void s_close(void *p) {
    session *s = p;
    if (!s)
        return;
    sf_neteval_close(s->ev);
    free(s->pos);
    free(s->out);
    free(s);
}

static int s_eval_overlap(void *p, const sf_eval_request *const *reqs, int n, sf_eval_answer *ans,
                          void (*meanwhile)(void *), void *meanwhile_ctx) {
    session *s = p;
    if (n > s->cap) {
        sf_pos *pos = realloc(s->pos, sizeof *pos * (size_t)n);
        sf_net_out *out = pos ? realloc(s->out, sizeof *out * (size_t)n) : NULL;
        if (pos)
            s->pos = pos;
        if (!out)
            return SF_ENOMEM;
        s->out = out;
        s->cap = n;
    }
    for (int i = 0; i < n; i++) {
        if (!reqs[i]->feat)
            return SF_EINVAL; /* the search was created without request tokens */
        s->pos[i] = sf_pos_from_feat(reqs[i]->feat);
    }
    /* submit (in-process: evaluated here), the caller's work, then the
     * reply: sf_neteval_eval() with a gap in the middle */
    sf_err err = {0};
    uint64_t ticket;
    int rc = sf_neteval_submit(s->ev, s->pos, n, s->out, &ticket, &err);
    if (meanwhile)
        meanwhile(meanwhile_ctx);
    if (rc < 0)
        return rc;
    sf_neteval_done d;
    for (;;) {
        int k = sf_neteval_poll(s->ev, -1, &d, 1, &err);
        if (k < 0)
            return k;
        if (k == 1 && d.ticket == ticket)
            break;
    }
    if (d.status != SF_OK)
        return d.status;
    for (int i = 0; i < n; i++)
        sf_net_answer(&s->out[i], reqs[i]->n_actions, &ans[i]);
    return SF_OK;
}

static int s_eval(void *p, const sf_eval_request *const *reqs, int n, sf_eval_answer *ans) {
    return s_eval_overlap(p, reqs, n, ans, NULL, NULL);
}

int sf_worker_evaluator_new(const sf_run_config *cfg, const char *model_sha256,
                            const char *bundle_path, sf_batch_evaluator **out, sf_err *err) {
    *out = NULL;
    eval_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    c->cfg = *cfg;
    const char *pin = model_sha256 ? model_sha256 : cfg->model.sha256;
    snprintf(c->sha, sizeof c->sha, "%s", pin);
    if (bundle_path) {
        int rc = sf_bundle_load(bundle_path, c->sha[0] ? c->sha : NULL, &c->bundle, err);
        if (rc < 0) {
            free(c);
            return rc;
        }
        snprintf(c->sha, sizeof c->sha, "%s", sf_bundle_sha256(c->bundle));
    } else if (!c->sha[0]) {
        free(c);
        return sf_err_set(err, SF_ECONFIG,
                          "model.sha256: a remote evaluator needs the model's "
                          "64-digit SHA-256");
    } else if (!sf_sha256_hex_canonical(c->sha)) {
        /* it names the model in every label: the canonical spelling only
         * (a config file's is normalised when read, common.h) */
        free(c);
        return sf_err_set(err, SF_ECONFIG, "model.sha256: '%.64s' is not 64 lower-case hex digits",
                          pin);
    }
    if (!bundle_path) {
        /* gpu-evald is a CURVE server like the coordinator: the worker's key */
        char keys[SF_CFG_PATH + 8];
        sf_config_keys_dir(cfg, keys, sizeof keys);
        int rc = sf_zsec_client_load(keys, SF_ZSEC_WORKER_NAME, &c->curve, err);
        if (rc < 0) {
            free(c);
            return sf_err_prefix(err, "gpu-evald's keys");
        }
    }
    c->api.open = s_open;
    c->api.eval = s_eval;
    c->api.eval_overlap = s_eval_overlap;
    c->api.close = s_close;
    c->api.ctx = c;
    c->api.model_sha256 = c->sha;
    *out = &c->api;
    return SF_OK;
}

int sf_worker_evaluator_follow(sf_batch_evaluator *ev, const char *path) {
    eval_ctx *c = (eval_ctx *)ev; /* api is the first member */
    if (c->bundle)
        return SF_EINVAL;
    int n = snprintf(c->endpoint_file, sizeof c->endpoint_file, "%s", path);
    return n >= 0 && (size_t)n < sizeof c->endpoint_file ? SF_OK : SF_EFULL;
}

void sf_worker_evaluator_free(sf_batch_evaluator *ev) {
    if (!ev)
        return;
    eval_ctx *c = (eval_ctx *)ev; /* api is the first member */
    sf_bundle_free(c->bundle);
    free(c);
}

int sf_worker_evaluator_probe(const sf_batch_evaluator *ev, sf_err *err) {
    /* one real position: the opening of a Jaw Worm fight */
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    sf_state st;
    int rc = sf_engine_init(&st, &spec, err);
    if (rc < 0)
        return rc;
    sf_action acts[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(&st, acts, SF_MAX_ACTIONS);
    sf_feat *feat = malloc(sizeof *feat);
    if (!feat)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    sf_engine_feat(&st, acts, n, feat);
    sf_eval_request req = {.state = &st, .actions = acts, .n_actions = n, .feat = feat};
    const sf_eval_request *reqs[1] = {&req};
    sf_eval_answer ans;
    void *session = ev->ctx;
    rc = ev->open ? ev->open(ev->ctx, &session, err) : SF_OK;
    if (rc == SF_OK) {
        rc = ev->eval(session, reqs, 1, &ans);
        if (rc < 0)
            sf_err_set(err, rc, "the evaluator did not answer a test position: %s",
                       sf_strerror(rc));
        if (ev->close)
            ev->close(session);
    }
    free(feat);
    return rc;
}
