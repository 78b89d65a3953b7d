/* netsearch.c — a network as the search's evaluator (netsearch.h). */
#include <stdlib.h>
#include <string.h>

#include "search/netsearch.h"

void sf_net_answer(const sf_net_out *o, int n_actions, sf_eval_answer *a) {
    memset(a, 0, sizeof *a);
    a->has_dist = 1;
    memcpy(a->dist, o->value, sizeof a->dist);
    if (o->n_queries == n_actions && n_actions > 0) {
        a->has_priors = 1;
        sf_net_out_priors(o, a->priors);
    }
}

struct sf_netsearch {
    sf_bundle *bundle; /* in-process; NULL for remote */
    char endpoint[256];
    char sha[65];
};

struct sf_netsearch_session {
    sf_neteval *ev;
    sf_net_out out;
    sf_feat feat;
};

int sf_netsearch_open(const char *model, const char *endpoint, sf_netsearch **out, sf_err *err) {
    *out = NULL;
    if (!model || !*model)
        return sf_err_set(err, SF_EINVAL, "--model: a bundle path (PATH[@SHA256]) is needed");
    sf_netsearch *ns = calloc(1, sizeof *ns);
    if (!ns)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    if (endpoint && strlen(endpoint) >= sizeof ns->endpoint) {
        free(ns);
        return sf_err_set(err, SF_EINVAL, "--evald: endpoint too long");
    }
    if (endpoint)
        snprintf(ns->endpoint, sizeof ns->endpoint, "%s", endpoint);
    if (endpoint && sf_sha256_hex_valid(model)) { /* a model the server has */
        sf_sha256_hex_parse(model, ns->sha, NULL);
        *out = ns;
        return SF_OK;
    }
    char path[4096], pin[65] = "";
    snprintf(path, sizeof path, "%s", model);
    char *at = strrchr(path, '@');
    if (at) {
        *at = '\0';
        int rc = sf_sha256_hex_parse(at + 1, pin, err);
        if (rc < 0) {
            free(ns);
            return sf_err_prefix(err, "--model %s: pinned SHA-256", model);
        }
    }
    int rc = sf_bundle_load(path, pin[0] ? pin : NULL, &ns->bundle, err);
    if (rc < 0) {
        free(ns);
        return rc;
    }
    memcpy(ns->sha, sf_bundle_sha256(ns->bundle), 65);
    if (endpoint) { /* remote: the file only named the model */
        sf_bundle_free(ns->bundle);
        ns->bundle = NULL;
    }
    *out = ns;
    return SF_OK;
}

const char *sf_netsearch_sha256(const sf_netsearch *ns) {
    return ns->sha;
}

int sf_netsearch_is_local(const sf_netsearch *ns) {
    return ns->bundle != NULL;
}

void sf_netsearch_close(sf_netsearch *ns) {
    if (!ns)
        return;
    sf_bundle_free(ns->bundle);
    free(ns);
}

int sf_netsearch_session_open(const sf_netsearch *ns, sf_netsearch_session **out, sf_err *err) {
    *out = NULL;
    sf_netsearch_session *s = calloc(1, sizeof *s);
    if (!s)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    sf_neteval_opts o = {0};
    o.model_sha256 = ns->sha;
    int rc;
    if (ns->bundle) {
        rc = sf_neteval_open_local(ns->bundle, &o, &s->ev, err);
    } else {
        o.endpoint = ns->endpoint;
        rc = sf_neteval_connect(&o, NULL, &s->ev, err);
    }
    if (rc < 0) {
        free(s);
        return rc;
    }
    *out = s;
    return SF_OK;
}

void sf_netsearch_session_close(sf_netsearch_session *s) {
    if (!s)
        return;
    sf_neteval_close(s->ev);
    free(s);
}

int sf_netsearch_eval_fn(void *ctx, const sf_eval_request *request, sf_eval_answer *answer) {
    sf_netsearch_session *s = ctx;
    if (!request->feat)
        return SF_EINVAL;
    sf_pos pos = sf_pos_from_feat(request->feat);
    int rc = sf_neteval_eval(s->ev, &pos, 1, &s->out, NULL);
    if (rc < 0)
        return rc;
    sf_net_answer(&s->out, request->n_actions, answer);
    return SF_OK;
}

int sf_netsearch_policy_move(sf_netsearch_session *s, const sf_state *truth, uint64_t seed,
                             sf_action *out, sf_err *err) {
    sf_state seen;
    sf_engine_belief_root(truth, seed, &seen);
    sf_action acts[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(&seen, acts, SF_MAX_ACTIONS);
    if (n <= 0)
        return sf_err_set(err, SF_ESTATE, "raw policy: no legal action");
    if (n == 1) {
        *out = acts[0];
        return SF_OK;
    }
    sf_engine_feat(&seen, acts, n, &s->feat); /* SF_EFULL keeps what fits */
    sf_pos pos = sf_pos_from_feat(&s->feat);
    int rc = sf_neteval_eval(s->ev, &pos, 1, &s->out, err);
    if (rc < 0)
        return rc;
    int best = 0, nq = s->out.n_queries < n ? s->out.n_queries : n;
    for (int q = 1; q < nq; q++)
        if (s->out.policy[q] > s->out.policy[best])
            best = q;
    *out = acts[best];
    return SF_OK;
}
