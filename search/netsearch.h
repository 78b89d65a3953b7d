/*
 * netsearch.h — a network as the search's evaluator: the bridge between the
 * search's leaf requests (search.h) and the network client of
 * gpu-evald/neteval.h, used by the worker and by the search tools.
 *
 * What it is
 *   sf_net_answer() turns one network output (sf_net_out: the 21-bin value
 *   of the label contract and the policy logits of the legal queries) into
 *   the sf_eval_answer the search reads. sf_netsearch is a model to play
 *   with — a bundle loaded once and evaluated in-process with the cpu
 *   backend, or a running gpu-evald named by endpoint and SHA-256 — from
 *   which each thread opens its own session (an sf_neteval, which belongs
 *   to one thread). A session answers search requests one position at a
 *   time (sf_netsearch_eval_fn, an sf_eval_fn) and gives the network's raw
 *   policy move (sf_netsearch_policy_move).
 *
 * Determinism: the cpu backend's outputs depend on the position and the
 * weights only (model/model.h), so a search evaluated through a session
 * gives the same result whatever the threads or batches around it.
 *
 * Errors are values: SF_OK or a negative SF_E* code with the optional
 * sf_err naming what went wrong.
 */
#ifndef SF_NETSEARCH_H
#define SF_NETSEARCH_H

#include "gpu-evald/neteval.h"
#include "search/search.h"

/* Fill `a` from the network's output for a position with n_actions legal
 * actions in engine order: has_dist = 1 with the value bins as they are;
 * priors = softmax of the policy logits when the network scored every legal
 * action (o->n_queries == n_actions; else uniform: has_priors = 0). */
void sf_net_answer(const sf_net_out *o, int n_actions, sf_eval_answer *a);

typedef struct sf_netsearch sf_netsearch;

/* Open a model. `model` is a bundle path, optionally pinned as PATH@SHA256
 * (a mismatch is an error), or — with `endpoint` — a bare SHA-256 naming a
 * model the server has loaded. With endpoint NULL the bundle is loaded and
 * evaluated in-process (cpu backend); with an endpoint (a running
 * gpu-evald) a path is only read for its SHA-256. Errors: those of
 * sf_bundle_load(), SF_EINVAL for a malformed pin or a bare SHA-256 without
 * an endpoint. */
int sf_netsearch_open(const char *model, const char *endpoint, sf_netsearch **out, sf_err *err);

/* The model's SHA-256, 64 lower-case hex digits (owned by `ns`). */
const char *sf_netsearch_sha256(const sf_netsearch *ns);

/* 1 when the model is evaluated in-process. */
int sf_netsearch_is_local(const sf_netsearch *ns);

void sf_netsearch_close(sf_netsearch *ns);

/* A session for one thread (its own sf_neteval). `ns` must outlive it. */
typedef struct sf_netsearch_session sf_netsearch_session;
int sf_netsearch_session_open(const sf_netsearch *ns, sf_netsearch_session **out, sf_err *err);
void sf_netsearch_session_close(sf_netsearch_session *s);

/* An sf_eval_fn over a session (ctx = the session): evaluates
 * request->feat (the search must run with request_feat = 1) and answers
 * with sf_net_answer(). Returns SF_OK, SF_EINVAL without tokens, or the
 * evaluation's error. Not thread-safe: give each thread its own session
 * (sf_search_run with threads = 1). */
int sf_netsearch_eval_fn(void *ctx, const sf_eval_request *request, sf_eval_answer *answer);

/* The network's raw policy at `truth`: the position the player sees
 * (sf_engine_belief_root seeded by `seed`, so hidden order never reaches
 * the network) is tokenized with its legal actions and the highest policy
 * logit wins (the lowest index on ties). Writes the action. Errors:
 * SF_ESTATE without a legal action, the evaluation's error. */
int sf_netsearch_policy_move(sf_netsearch_session *s, const sf_state *truth, uint64_t seed,
                             sf_action *out, sf_err *err);

#endif
