/*
 * siblings.c — sibling ranking (worker.h "Sibling ranking"): how well a
 * network's value orders the children of searched decisions, against the
 * search's own completed-Q, with the rollout evaluator's agreement as the
 * baseline.
 *
 * A self-play shard holds each searched decision's position as tokens, not
 * as an engine state; the state is rebuilt by replaying the fight: the
 * label's start text (sf_start_parse), its encounter, ascension and game
 * seed give the spec the worker started from, and the fight is played
 * again through every recorded decision's chosen action (a decision with
 * one legal action, which self-play does not label, is the only one
 * there is). The engine is deterministic, so the replay reaches the
 * worker's true positions; each is checked against the label's own tokens
 * and a fight whose replay disagrees is skipped and counted.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shard/shard.h"
#include "worker/worker.h"

int sf_siblings_agreement(const double *a, const double *b, int n, double tie, double *agree,
                          double *pairs) {
    double ag = 0.0, np = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double db = b[i] - b[j];
            if (fabs(db) < tie)
                continue;
            double da = a[i] - a[j];
            np += 1.0;
            ag += da == 0.0 ? 0.5 : (da > 0.0) == (db > 0.0) ? 1.0 : 0.0;
        }
    *agree = ag;
    *pairs = np;
    return np > 0.0;
}

double sf_siblings_kendall_tau_b(const double *a, const double *b, int n) {
    double conc = 0.0, disc = 0.0, ties_a = 0.0, ties_b = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double da = a[i] - a[j], db = b[i] - b[j];
            if (da == 0.0 && db == 0.0)
                continue; /* tied in both: in neither denominator term */
            if (da == 0.0)
                ties_a += 1.0;
            else if (db == 0.0)
                ties_b += 1.0;
            else if ((da > 0.0) == (db > 0.0))
                conc += 1.0;
            else
                disc += 1.0;
        }
    double den = sqrt((conc + disc + ties_a) * (conc + disc + ties_b));
    return den > 0.0 ? (conc - disc) / den : NAN;
}

/* ------------------------------------------------------------------------
 * Replaying a fight
 * ---------------------------------------------------------------------- */

typedef struct replay {
    int live;           /* a fight is being replayed                       */
    int broken;         /* its replay disagreed with the labels: skip it   */
    uint64_t game_seed; /* the fight's ids                                 */
    uint32_t fight;
    uint32_t ply; /* actions applied so far                          */
    sf_state truth;
} replay;

/* Start the replay of the fight of `rec` (its first label). */
static int replay_start(replay *rp, const sf_run_config *cfg, const Spirefleet__LabelRecord *rec) {
    const Spirefleet__LabelIds *id = rec->ids;
    memset(rp, 0, sizeof *rp);
    rp->live = 1;
    rp->game_seed = id->game_seed;
    rp->fight = id->fight_index;
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    sf_err e = {0};
    if (!id->start || !id->start[0] || sf_start_parse(id->start, &spec, NULL, &e) < 0) {
        rp->broken = 1;
        return SF_OK;
    }
    spec.encounter = (int)id->encounter_id;
    spec.ascension = (int)id->ascension;
    spec.seed = id->game_seed;
    spec.max_turns = (int)cfg->play.max_turns;
    if (sf_engine_init(&rp->truth, &spec, &e) < 0)
        rp->broken = 1;
    return SF_OK;
}

/* Play the forced decisions up to the label's ply (self-play does not
 * label a decision with one legal action). 0 when the replay broke. */
static int replay_to(replay *rp, uint32_t ply) {
    while (!rp->broken && rp->ply < ply) {
        sf_action acts[SF_MAX_ACTIONS];
        int n = sf_engine_enumerate(&rp->truth, acts, SF_MAX_ACTIONS);
        if (n != 1 || sf_engine_apply(&rp->truth, acts[0], NULL) != SF_OK)
            rp->broken = 1;
        rp->ply++;
    }
    return !rp->broken;
}

/* The label's tensor as bytes of `n` elements of `size`; NULL when its
 * length differs. */
static const uint8_t *tensor_bytes(const Spirefleet__Tensor *t, size_t n, size_t size) {
    return t && t->data.len == n * size ? t->data.data : NULL;
}

/* 1 when the replayed position tokenizes as the label says it did. */
static int same_position(const sf_state *truth, const sf_action *acts, int n,
                         const Spirefleet__Inputs *in, sf_feat *feat) {
    sf_engine_feat(truth, acts, n, feat);
    size_t t = (size_t)feat->n_tokens;
    const uint8_t *type = tensor_bytes(in->token_type, t, 1);
    const uint8_t *cat = tensor_bytes(in->token_cat, t * SF_FEAT_NCAT, 2);
    const uint8_t *cont = tensor_bytes(in->token_cont, t * SF_FEAT_NCONT, 4);
    const uint8_t *code = tensor_bytes(in->action_code, (size_t)n, 4);
    if (!type || !cat || !cont || !code || memcmp(type, feat->type, t) ||
        memcmp(cat, feat->cat, t * SF_FEAT_NCAT * 2) ||
        memcmp(cont, feat->cont, t * SF_FEAT_NCONT * 4))
        return 0;
    for (int i = 0; i < n; i++) {
        uint32_t c;
        memcpy(&c, code + 4 * (size_t)i, 4);
        if (c != sf_action_code(acts[i]))
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------
 * One decision's children
 * ---------------------------------------------------------------------- */

typedef struct children {
    int n;
    sf_state state[SF_MAX_ACTIONS];
    sf_action acts[SF_MAX_ACTIONS][SF_MAX_ACTIONS];
    int n_acts[SF_MAX_ACTIONS];
    sf_feat feat[SF_MAX_ACTIONS];
    sf_eval_request req[SF_MAX_ACTIONS];
    const sf_eval_request *reqp[SF_MAX_ACTIONS];
    sf_eval_answer ans[SF_MAX_ACTIONS];
    double net[SF_MAX_ACTIONS], rollout[SF_MAX_ACTIONS], cq[SF_MAX_ACTIONS];
} children;

static double outcome_value(const sf_state *s) {
    sf_outcome o;
    sf_engine_outcome(s, &o);
    return sf_value_of_outcome(&o);
}

/* The children of the decision at `truth` (its legal actions `acts`): each
 * action applied to the position the player sees (the belief root, so a
 * child's draws are a sample, never the hidden order), valued by the
 * network (exactly when the fight ends there) and by one rollout of the
 * rollout evaluator. */
static int value_children(const sf_run_config *cfg, const sf_state *truth, const sf_action *acts,
                          int n, uint64_t seed, void *session, const sf_batch_evaluator *ev,
                          children *ch, sf_err *err) {
    sf_state root;
    sf_engine_belief_root(truth, sf_seed_derive(seed, 0, 0, 0x7369626cull), &root);
    int k = 0;
    ch->n = n;
    for (int i = 0; i < n; i++) {
        sf_state *c = &ch->state[i];
        *c = root;
        if (sf_engine_apply(c, acts[i], NULL) != SF_OK)
            return sf_err_set(err, SF_ESTATE, "a legal action was refused on the belief root");
        /* the rollout evaluator's value of this child: one rollout */
        sf_state tmp = *c;
        uint64_t rng = sf_seed_derive(seed, (uint64_t)i, 1, 0x726f6cull);
        ch->rollout[i] = sf_search_rollout(&tmp, cfg->search.rollout_tau,
                                           (int)cfg->search.max_rollout_plies, &rng, NULL);
        if (sf_engine_is_terminal(c)) {
            ch->net[i] = outcome_value(c);
            continue;
        }
        ch->n_acts[i] = sf_engine_enumerate(c, ch->acts[i], SF_MAX_ACTIONS);
        sf_engine_feat(c, ch->acts[i], ch->n_acts[i], &ch->feat[i]);
        sf_eval_request *r = &ch->req[i];
        memset(r, 0, sizeof *r);
        r->state = c;
        r->actions = ch->acts[i];
        r->n_actions = ch->n_acts[i];
        r->feat = &ch->feat[i];
        r->ticket = (uint64_t)i + 1;
        ch->reqp[k++] = r;
    }
    if (k == 0)
        return SF_OK;
    memset(ch->ans, 0, sizeof(sf_eval_answer) * (size_t)k);
    int rc = ev->eval(session, ch->reqp, k, ch->ans);
    if (rc < 0)
        return sf_err_set(err, rc, "the network failed to evaluate %d children", k);
    for (int j = 0; j < k; j++) {
        const sf_eval_answer *a = &ch->ans[j];
        ch->net[ch->reqp[j]->ticket - 1] = a->has_dist ? sf_value_mean(a->dist) : a->value;
    }
    return SF_OK;
}

/* ------------------------------------------------------------------------
 * The measurement
 * ---------------------------------------------------------------------- */

static int seed_wanted(const sf_siblings_opts *o, uint64_t seed) {
    if (!o || !o->seeds)
        return 1;
    size_t lo = 0, hi = o->n_seeds;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->seeds[mid] < seed)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < o->n_seeds && o->seeds[lo] == seed;
}

typedef struct sums {
    double net_agree, roll_agree, pairs, net_tau, roll_tau;
    uint64_t taus;
} sums;

/* One searched record of the replayed fight: measure its children. */
static int measure_decision(const sf_run_config *cfg, replay *rp,
                            const Spirefleet__LabelRecord *rec, const sf_siblings_opts *o,
                            void *session, const sf_batch_evaluator *ev, children *ch,
                            sf_feat *feat, sums *s, sf_siblings_report *out, sf_err *err) {
    sf_action acts[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(&rp->truth, acts, SF_MAX_ACTIONS);
    const Spirefleet__SearchResult *sr = rec->search;
    if (n < 1 || (size_t)n != sr->n_completed_q ||
        !same_position(&rp->truth, acts, n, rec->inputs, feat)) {
        rp->broken = 1;
        return SF_OK;
    }
    if (sr->searched && n >= 2) {
        uint64_t seed = sf_seed_derive(rp->game_seed, rp->fight, rp->ply, 0x7369626c696e67ull);
        int rc = value_children(cfg, &rp->truth, acts, n, seed, session, ev, ch, err);
        if (rc < 0)
            return rc;
        for (int i = 0; i < n; i++)
            ch->cq[i] = sr->completed_q[i];
        double tie = o && o->tie > 0.0 ? o->tie : SF_SIBLINGS_TIE;
        double ag, np, rag, rnp;
        sf_siblings_agreement(ch->net, ch->cq, n, tie, &ag, &np);
        sf_siblings_agreement(ch->rollout, ch->cq, n, tie, &rag, &rnp);
        s->net_agree += ag;
        s->roll_agree += rag;
        s->pairs += np;
        double tn = sf_siblings_kendall_tau_b(ch->net, ch->cq, n);
        double tr = sf_siblings_kendall_tau_b(ch->rollout, ch->cq, n);
        if (isfinite(tn) && isfinite(tr)) {
            s->net_tau += tn;
            s->roll_tau += tr;
            s->taus++;
        }
        out->decisions++;
    }
    /* on to the next decision: the chosen action */
    if (sr->chosen >= (uint32_t)n || sf_engine_apply(&rp->truth, acts[sr->chosen], NULL) != SF_OK)
        rp->broken = 1;
    rp->ply++;
    return SF_OK;
}

int sf_siblings_measure(const sf_run_config *cfg, const char *const *shards, size_t n_shards,
                        const sf_batch_evaluator *ev, const sf_siblings_opts *o,
                        sf_siblings_report *out, sf_err *err) {
    memset(out, 0, sizeof *out);
    if (!ev || !ev->eval)
        return sf_err_set(err, SF_EINVAL, "siblings: no network to measure");
    void *session = ev->ctx;
    if (ev->open && ev->open(ev->ctx, &session, err) < 0)
        return sf_err_prefix(err, "siblings: the network");
    children *ch = malloc(sizeof *ch);
    sf_feat *feat = malloc(sizeof *feat);
    replay *rp = malloc(sizeof *rp);
    int rc = ch && feat && rp ? SF_OK : sf_err_set(err, SF_ENOMEM, "out of memory");
    sums s = {0};
    /* a fight of a seed not asked for is not replayed, and reading stops
     * at the decision cap */
#define SIBLINGS_FULL() (o && o->max_decisions && out->decisions >= o->max_decisions)
    for (size_t k = 0; rc == SF_OK && k < n_shards && !SIBLINGS_FULL(); k++) {
        sf_shard_reader *r = NULL;
        if ((rc = sf_shard_reader_open(shards[k], &r, err)) < 0)
            break;
        memset(rp, 0, sizeof *rp);
        uint64_t count = sf_shard_reader_count(r);
        for (uint64_t i = 0; rc == SF_OK && i < count && !SIBLINGS_FULL(); i++) {
            const Spirefleet__LabelRecord *rec;
            if ((rc = sf_shard_reader_get(r, i, &rec, err)) < 0)
                break;
            const Spirefleet__LabelIds *id = rec->ids;
            if (!seed_wanted(o, id->game_seed))
                continue;
            if (!rp->live || id->game_seed != rp->game_seed || id->fight_index != rp->fight) {
                if (rp->live) {
                    out->fights++;
                    out->fights_skipped += (uint64_t)rp->broken;
                }
                replay_start(rp, cfg, rec);
            }
            if (rp->broken || !replay_to(rp, id->decision_index))
                continue;
            rc = measure_decision(cfg, rp, rec, o, session, ev, ch, feat, &s, out, err);
        }
        if (rp->live) {
            out->fights++;
            out->fights_skipped += (uint64_t)rp->broken;
        }
        sf_shard_reader_close(r);
    }
#undef SIBLINGS_FULL
    out->pairs = (uint64_t)s.pairs;
    out->net_accuracy = s.pairs > 0 ? s.net_agree / s.pairs : NAN;
    out->rollout_accuracy = s.pairs > 0 ? s.roll_agree / s.pairs : NAN;
    out->net_tau = s.taus ? s.net_tau / (double)s.taus : NAN;
    out->rollout_tau = s.taus ? s.roll_tau / (double)s.taus : NAN;
    if (ev->open && ev->close)
        ev->close(session);
    free(ch);
    free(feat);
    free(rp);
    return rc;
}
