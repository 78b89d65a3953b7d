/*
 * gate.c — the verdict of a gate run (docs/gate.md "A gate run").
 *
 * A gate job's shard carries one GatePair per seed. The verdict is a
 * function of the pairs in seed order only, so that it cannot depend on
 * which job finished first: the pairs of done jobs are folded in job order
 * (jobs are consecutive seed ranges) as long as every earlier job is done,
 * and the sequential test runs over that contiguous prefix. Jobs that
 * finish out of order wait until the gap before them closes. Once the test
 * decides (or reaches max_pairs) the coordinator issues no more jobs and
 * writes gate/pairs.jsonl and gate/verdict.json, both computed only from the
 * stored shards: a coordinator killed at any moment and restarted rewrites
 * the same bytes.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/io.h"
#include "coordinator/dashboard.h"
#include "coordinator/internal.h"
#include "gate/stats.h"
#include "proto/pbuf.h"
#include "shard/shard.h"

struct co_gate {
    sf_gate_rule rule;
    sf_sprt sprt;
    gate_copy ps;         /* the pairs folded, in seed order            */
    uint64_t next_job;    /* jobs[0..next_job) are folded                 */
    uint64_t seen_done;   /* jobs_done at the last fold attempt           */
    uint64_t seen_audits; /* open audits then                            */
    int written;          /* the verdict files are written                */
    char dir[320];
};

void sf_coordinator_gate_rule(const sf_run_config *cfg, sf_gate_rule *rule) {
    sf_gate_rule r = sf_gate_rule_default();
    r.alpha = cfg->gate.alpha;
    r.beta = cfg->gate.beta;
    r.delta0 = cfg->gate.delta0;
    r.delta1 = cfg->gate.delta1;
    r.min_pairs = cfg->gate.min_pairs;
    r.max_pairs = cfg->gate.max_pairs;
    r.metric = strcmp(cfg->gate.metric, "score") ? SF_GATE_METRIC_WIN : SF_GATE_METRIC_SCORE;
    *rule = r;
}

int gate_open(sf_coordinator *co, sf_err *err) {
    if (strcmp(co->cfg.kind, "gate"))
        return SF_OK;
    co_gate *g = calloc(1, sizeof *g);
    if (!g)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    co->gate = g;
    sf_coordinator_gate_rule(&co->cfg, &g->rule);
    g->seen_done = UINT64_MAX;
    snprintf(g->dir, sizeof g->dir, "%s/gate", co->cfg.output_dir);
    if (sf_mkdir_p(g->dir) < 0)
        return sf_err_set(err, SF_EIO, "%s: cannot create the directory: %s", g->dir,
                          strerror(errno));
    return sf_sprt_init(&g->sprt, &g->rule, NULL, 0, err);
}

void gate_close(sf_coordinator *co) {
    co_gate *g = co->gate;
    if (!g)
        return;
    gate_copy_free(&g->ps);
    free(g);
    co->gate = NULL;
}

/* A stored pair as the statistics take it (side a = candidate). */
static sf_gate_pair pair_of(const Spirefleet__GatePair *p) {
    return (sf_gate_pair){.won_a = (uint8_t)p->won_candidate,
                          .won_b = (uint8_t)p->won_champion,
                          .y_a = p->y_candidate,
                          .y_b = p->y_champion,
                          .class_id = (int32_t)p->class_id};
}

int gate_check_manifest(const sf_coordinator *co, const cjob *j, const Spirefleet__ShardManifest *m,
                        char *why, size_t cap) {
    if (!co->gate)
        return 0;
    if (m->record_count != 0 || m->n_gate_pairs != j->seed_count) {
        snprintf(why, cap, "a gate shard holds %llu pairs and %llu records; job %llu has %u seeds",
                 (unsigned long long)m->n_gate_pairs, (unsigned long long)m->record_count,
                 (unsigned long long)j->id, j->seed_count);
        return -1;
    }
    for (size_t i = 0; i < m->n_gate_pairs; i++) {
        const Spirefleet__GatePair *p = m->gate_pairs[i];
        sf_gate_pair gp = pair_of(p);
        sf_err e = {0};
        if (p->game_seed != j->seed_start + i) {
            snprintf(why, cap, "gate pair %zu is of seed %llu, expected %llu", i,
                     (unsigned long long)p->game_seed, (unsigned long long)(j->seed_start + i));
            return -1;
        }
        if (p->class_id >= SF_SHARD_GATE_CLASSES || sf_gate_pair_check(&gp, i, &e) < 0) {
            snprintf(why, cap, "gate pair of seed %llu: %s", (unsigned long long)p->game_seed,
                     e.msg[0] ? e.msg : "class out of range");
            return -1;
        }
    }
    return 0;
}

static int grow(gate_copy *g, size_t need, sf_err *err) {
    if (need <= g->cap)
        return SF_OK;
    size_t cap = g->cap ? g->cap : 1024;
    while (cap < need)
        cap *= 2;
    sf_gate_pair *p = realloc(g->pairs, cap * sizeof *p);
    if (p)
        g->pairs = p;
    uint64_t *s = p ? realloc(g->seeds, cap * sizeof *s) : NULL;
    if (s)
        g->seeds = s;
    char(*e)[SF_SHARD_GATE_ENCOUNTER_MAX] = s ? realloc(g->enc, cap * sizeof *e) : NULL;
    if (!e)
        return sf_err_set(err, SF_ENOMEM, "gate: out of memory for %zu pairs", cap);
    g->enc = e;
    g->cap = cap;
    return SF_OK;
}

/* Fold job j's pairs (its stored shard) until the test decides. */
static int fold_job(sf_coordinator *co, const cjob *j, sf_err *err) {
    co_gate *g = co->gate;
    char path[1200], name[CO_SHARD_NAME_MAX];
    snprintf(path, sizeof path, "%s/%s", co->shards_dir, co_job_shard(co, j, name));
    sf_shard_reader *r = NULL;
    int rc = sf_shard_reader_open(path, &r, err);
    if (rc < 0)
        return rc;
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    char why[256];
    if (gate_check_manifest(co, j, m, why, sizeof why) < 0) {
        sf_shard_reader_close(r);
        return sf_err_set(err, SF_EFORMAT, "%s: %s", path, why);
    }
    rc = grow(&g->ps, g->ps.n + m->n_gate_pairs, err);
    for (size_t i = 0; rc == SF_OK && i < m->n_gate_pairs; i++) {
        if (sf_sprt_decision(&g->sprt) != SF_GATE_CONTINUE)
            break;
        const Spirefleet__GatePair *p = m->gate_pairs[i];
        sf_gate_pair *gp = &g->ps.pairs[g->ps.n];
        *gp = pair_of(p);
        g->ps.seeds[g->ps.n] = p->game_seed;
        snprintf(g->ps.enc[g->ps.n], SF_SHARD_GATE_ENCOUNTER_MAX, "%s",
                 p->encounter ? p->encounter : "");
        double d = g->rule.metric == SF_GATE_METRIC_WIN ? (double)gp->won_a - (double)gp->won_b
                                                        : gp->y_a - gp->y_b;
        if (sf_sprt_add(&g->sprt, d) < 0)
            rc = sf_err_set(err, SF_EFORMAT, "%s: gate pair of seed %llu: %g is out of range", path,
                            (unsigned long long)p->game_seed, d);
        else
            g->ps.n++;
    }
    sf_shard_reader_close(r);
    return rc;
}

/* ---------------------------------------------------------------------------
 * The verdict files
 * ------------------------------------------------------------------------- */

static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *interval(double lo, double hi) {
    return json_pack("[oo]", num(lo), num(hi));
}

/* A side as played: the evaluator and the effective search settings. */
static json_t *side_json(const sf_run_config *cfg, int side) {
    const struct sf_cfg_gate_side *s = sf_config_gate_side(cfg, side);
    json_t *o = json_object();
    json_object_set_new(o, "evaluator", json_string(s->evaluator));
    if (!strcmp(s->evaluator, "net")) {
        json_object_set_new(o, "sha256", json_string(s->sha256));
        json_object_set_new(o, "leaf_mix", json_real(sf_config_leaf_mix(cfg, side)));
        /* search.puct_c as configured: 0 is the search's default c1 (1.25) */
        json_object_set_new(o, "puct_c", json_real(cfg->search.puct_c));
    }
    json_object_set_new(o, "simulations",
                        json_integer(s->simulations ? s->simulations : cfg->search.simulations));
    json_object_set_new(o, "trees", json_integer(s->trees ? s->trees : cfg->search.trees));
    json_object_set_new(o, "widening_c",
                        json_real(s->widening_c > 0 ? s->widening_c : cfg->search.widening_c));
    json_object_set_new(
        o, "widening_alpha",
        json_real(s->widening_alpha >= 0 ? s->widening_alpha : cfg->search.widening_alpha));
    json_object_set_new(o, "select", json_string(s->select));
    json_object_set_new(o, "salt", json_integer((json_int_t)s->salt));
    return o;
}

static json_t *verdict_json(const sf_coordinator *co, const gate_copy *g,
                            const sf_gate_verdict *v) {
    const sf_gate_rule *r = &co->gate->rule;
    json_t *o = json_object();
    json_object_set_new(o, "run", json_string(co->cfg.name));
    json_object_set_new(o, "config_digest", json_string(co->digest));
    json_object_set_new(o, SF_GATE_VKEY_VERDICT, json_string(sf_gate_decision_name(v->decision)));
    json_object_set_new(o, SF_GATE_VKEY_PAIRS, json_integer((json_int_t)v->pairs_used));
    json_object_set_new(o, "stop_pair", json_integer((json_int_t)v->stop_pair));
    json_object_set_new(o, "seeds",
                        v->pairs_used
                            ? interval((double)g->seeds[0], (double)g->seeds[v->pairs_used - 1])
                            : json_null());
    json_object_set_new(o, SF_GATE_VKEY_CHAMPION, side_json(&co->cfg, 0));
    json_object_set_new(o, SF_GATE_VKEY_CANDIDATE, side_json(&co->cfg, 1));
    json_object_set_new(
        o, "rule",
        json_pack("{s:s,s:f,s:f,s:f,s:f,s:I,s:I,s:f,s:I}", "metric", co->cfg.gate.metric, "alpha",
                  r->alpha, "beta", r->beta, "delta0", r->delta0, "delta1", r->delta1, "min_pairs",
                  (json_int_t)r->min_pairs, "max_pairs", (json_int_t)r->max_pairs, "level",
                  r->level, "boot_resamples", (json_int_t)r->boot_resamples));
    json_object_set_new(o, SF_GATE_VKEY_P_VALUE, num(v->p_value));
    json_object_set_new(o, SF_GATE_VKEY_LLR, num(v->llr));
    json_object_set_new(o, "llr_normal", num(v->llr_normal));
    json_object_set_new(o, SF_GATE_VKEY_LLR_BOUNDS, interval(v->llr_lower, v->llr_upper));
    json_object_set_new(o, SF_GATE_VKEY_SCORE_DIFF, num(v->score_diff));
    json_object_set_new(o, SF_GATE_VKEY_SCORE_DIFF_CI,
                        interval(v->score_diff_lo, v->score_diff_hi));
    json_object_set_new(o, SF_GATE_VKEY_WIN_RATE_DIFF, num(v->winrate.diff));
    json_object_set_new(o, "win_rate_diff_ci", interval(v->winrate.lo, v->winrate.hi));
    json_object_set_new(
        o, "win_rate",
        json_pack("{s:o,s:o}", "champion", num(v->win_rate_b), "candidate", num(v->win_rate_a)));
    json_object_set_new(
        o, "score",
        json_pack("{s:o,s:o}", "champion", num(v->score_b), "candidate", num(v->score_a)));
    json_object_set_new(o, "counts",
                        json_pack("{s:I,s:I,s:I,s:I}", "only_candidate", (json_int_t)v->only_a,
                                  "only_champion", (json_int_t)v->only_b, "both",
                                  (json_int_t)v->both, "neither", (json_int_t)v->neither));
    json_object_set_new(o, "sign_test",
                        json_pack("{s:o,s:o}", "p_greater", num(v->sign.p_greater), "p_two_sided",
                                  num(v->sign.p_two_sided)));
    json_object_set_new(o, "wilcoxon",
                        json_pack("{s:o,s:o,s:b,s:I,s:I}", "p_greater", num(v->wilcoxon.p_greater),
                                  "p_two_sided", num(v->wilcoxon.p_two_sided), "exact",
                                  v->wilcoxon.exact, "nonzero", (json_int_t)v->wilcoxon.n, "zeros",
                                  (json_int_t)v->wilcoxon.zeros));
    json_t *pc = json_object();
    for (uint32_t k = 0; k < v->n_classes && k < SF_SHARD_GATE_CLASSES; k++) {
        const sf_gate_class_stats *c = &v->classes[k];
        if (!c->pairs)
            continue;
        json_object_set_new(pc, sf_shard_gate_class_name(k),
                            json_pack("{s:I,s:I,s:I,s:I,s:I,s:o,s:o}", "pairs",
                                      (json_int_t)c->pairs, "only_candidate", (json_int_t)c->only_a,
                                      "only_champion", (json_int_t)c->only_b, "both",
                                      (json_int_t)c->both, "neither", (json_int_t)c->neither,
                                      "win_rate_diff", num(c->win_rate_diff), "score_diff",
                                      num(c->score_diff)));
    }
    json_object_set_new(o, SF_GATE_VKEY_PER_CLASS, pc);
    return o;
}

/* Append one JSON line (sorted keys, compact) to buf; takes `o`. */
static int append_line(sf_buf *buf, json_t *o, sf_err *err) {
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(o);
    int rc = s && sf_buf_append(buf, s, strlen(s), NULL) == SF_OK &&
                     sf_buf_append(buf, "\n", 1, NULL) == SF_OK
                 ? SF_OK
                 : sf_err_set(err, SF_ENOMEM, "gate: out of memory");
    free(s);
    return rc;
}

/* pairs.jsonl: one line per pair used, in seed order, with the running LLR
 * and the running mean score difference and its normal 95 % band (mean +-
 * 1.96 s / sqrt(n), s the sample deviation; the band is for the plot, the
 * verdict's interval is the bootstrap's). */
static json_t *pairs_array(const gate_copy *g, size_t n, const double *llr) {
    json_t *arr = json_array();
    double mean = 0, m2 = 0;
    for (size_t i = 0; arr && i < n; i++) {
        const sf_gate_pair *p = &g->pairs[i];
        double d = p->y_a - p->y_b, delta = d - mean;
        mean += delta / (double)(i + 1);
        m2 += delta * (d - mean);
        double half = i ? 1.96 * sqrt(m2 / (double)i / (double)(i + 1)) : 0.0;
        json_t *o =
            json_pack("{s:I,s:I,s:s,s:s,s:b,s:b,s:f,s:f,s:f,s:f,s:f,s:f}", SF_GATE_PKEY_PAIR,
                      (json_int_t)(i + 1), "seed", (json_int_t)g->seeds[i], "class",
                      sf_shard_gate_class_name((uint32_t)p->class_id), "encounter", g->enc[i],
                      "won_champion", p->won_b, "won_candidate", p->won_a, "y_champion", p->y_b,
                      "y_candidate", p->y_a, SF_GATE_PKEY_LLR, llr[i], SF_GATE_PKEY_SCORE_DIFF,
                      mean, SF_GATE_PKEY_SCORE_LO, mean - half, SF_GATE_PKEY_SCORE_HI, mean + half);
        if (!o || json_array_append_new(arr, o) < 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr;
}

/* pairs.jsonl: one line per pair used, in seed order, with the running LLR
 * and the running mean score difference and its normal 95 % band (mean +-
 * 1.96 s / sqrt(n), s the sample deviation; the band is for the plot, the
 * verdict's interval is the bootstrap's). */
static int pairs_jsonl(const gate_copy *g, size_t n, const double *llr, sf_buf *buf, sf_err *err) {
    json_t *arr = pairs_array(g, n, llr);
    if (!arr)
        return sf_err_set(err, SF_ENOMEM, "gate: out of memory");
    for (size_t i = 0; i < n; i++) {
        int rc = append_line(buf, json_incref(json_array_get(arr, i)), err);
        if (rc < 0) {
            json_decref(arr);
            return rc;
        }
    }
    json_decref(arr);
    return SF_OK;
}

static int write_verdict(sf_coordinator *co, sf_err *err) {
    co_gate *g = co->gate;
    size_t n = g->ps.n;
    sf_gate_verdict v;
    double *llr = malloc((n ? n : 1) * sizeof *llr);
    if (!llr)
        return sf_err_set(err, SF_ENOMEM, "gate: out of memory");
    int rc = sf_gate_verdict_compute(g->ps.pairs, n, &g->rule, NULL, 0, llr, n, &v, err);
    sf_buf buf = {0};
    char path[400];
    if (rc == SF_OK)
        rc = pairs_jsonl(&g->ps, (size_t)v.pairs_used, llr, &buf, err);
    if (rc == SF_OK) {
        snprintf(path, sizeof path, "%s/pairs.jsonl", g->dir);
        rc = sf_write_file_durable(path, buf.p, buf.len, err);
    }
    if (rc == SF_OK) {
        buf.len = 0;
        json_t *o = verdict_json(co, &g->ps, &v);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
        json_decref(o);
        snprintf(path, sizeof path, "%s/verdict.json", g->dir);
        rc = s ? SF_OK : sf_err_set(err, SF_ENOMEM, "gate: out of memory");
        if (rc == SF_OK) {
            size_t len = strlen(s);
            s[len] = '\n'; /* replaces the terminator: written by length */
            rc = sf_write_file_durable(path, s, len + 1, err);
        }
        free(s);
    }
    free(buf.p);
    free(llr);
    if (rc == SF_OK)
        sf_log(co->log, co->log_ctx,
               "coordinator: gate %s: %s after %llu pairs (LLR %.3f in [%.3f, %.3f], win-rate "
               "difference %+.4f, score difference %+.4f); %s",
               co->cfg.name, sf_gate_decision_name(v.decision), (unsigned long long)v.pairs_used,
               v.llr, v.llr_lower, v.llr_upper, v.winrate.diff, v.score_diff, path);
    return rc;
}

void gate_job_undone(sf_coordinator *co, const cjob *j) {
    co_gate *g = co->gate;
    if (!g || g->written || j->id > g->next_job)
        return;
    /* its pairs are in the test: fold again from the first job (the
     * sequential test has no way to take pairs out) */
    sf_err e = {0};
    g->ps.n = 0;
    g->next_job = 0;
    g->seen_done = UINT64_MAX;
    if (sf_sprt_init(&g->sprt, &g->rule, NULL, 0, &e) < 0)
        sf_log(co->log, co->log_ctx, "coordinator: gate: %s", e.msg);
}

int gate_advance(sf_coordinator *co, sf_err *err) {
    co_gate *g = co->gate;
    if (!g || g->written || (co->st.jobs_done == g->seen_done && co->n_audits == g->seen_audits))
        return SF_OK;
    g->seen_done = co->st.jobs_done;
    g->seen_audits = co->n_audits;
    /* a job is folded once its audit, if one opened, is decided: the
     * verdict never rests on a copy whose audit is open */
    while (sf_sprt_decision(&g->sprt) == SF_GATE_CONTINUE && g->next_job < co->njobs &&
           co->jobs[g->next_job].state == JS_DONE && !co->jobs[g->next_job].audit_stage) {
        sf_err e = {0};
        if (fold_job(co, &co->jobs[g->next_job], &e) < 0) {
            /* a stored, verified shard that cannot be read now: said, and
             * tried again when another job is done */
            sf_log(co->log, co->log_ctx, "coordinator: gate: %s", e.msg);
            return SF_OK;
        }
        g->next_job++;
    }
    int decided = sf_sprt_decision(&g->sprt) != SF_GATE_CONTINUE;
    /* every seed folded without a decision (max_pairs above the seeds a
     * config check would have refused): the verdict stands on what there is */
    int exhausted = g->next_job == co->njobs;
    if ((!decided && !exhausted) || co->n_audits > 0)
        return SF_OK; /* no verdict while any audit is open: a catch may undo folded jobs */
    int rc = write_verdict(co, err);
    if (rc == SF_OK)
        g->written = 1;
    return rc;
}

int gate_decided(const sf_coordinator *co) {
    return co->gate && co->gate->written;
}

const char *sf_coord_gate_outcome(const sf_coord_status *st, char *buf, size_t cap) {
    int decided = strcmp(st->gate_decision, SF_GATE_WORD_CONTINUE) != 0;
    unsigned long long pairs = (unsigned long long)st->gate_pairs;
    if (!st->gate)
        snprintf(buf, cap, "%s", "");
    else if (!decided)
        snprintf(buf, cap, "no decision yet after %llu pairs (LLR %.3f in [%.3f, %.3f])", pairs,
                 st->gate_llr, st->gate_lower, st->gate_upper);
    else if (st->gate_pairs < st->gate_max_pairs)
        snprintf(buf, cap,
                 "stopped early at pair %llu of %u: %s (LLR %.3f crossed the %s bound %.3f)", pairs,
                 st->gate_max_pairs, st->gate_decision, st->gate_llr,
                 st->gate_llr >= st->gate_upper ? "upper" : "lower",
                 st->gate_llr >= st->gate_upper ? st->gate_upper : st->gate_lower);
    else
        snprintf(buf, cap, "%s at max_pairs, pair %llu (LLR %.3f in [%.3f, %.3f])",
                 st->gate_decision, pairs, st->gate_llr, st->gate_lower, st->gate_upper);
    return buf;
}

void gate_status(const sf_coordinator *co, sf_coord_status *st) {
    const co_gate *g = co->gate;
    st->gate = g != NULL;
    if (!g)
        return;
    st->gate_pairs = sf_sprt_pairs(&g->sprt);
    st->gate_llr = sf_sprt_llr(&g->sprt);
    st->gate_lower = g->sprt.lower;
    st->gate_upper = g->sprt.upper;
    st->gate_min_pairs = g->rule.min_pairs;
    st->gate_max_pairs = g->rule.max_pairs;
    snprintf(st->gate_decision, sizeof st->gate_decision, "%s",
             sf_gate_decision_name(sf_sprt_decision(&g->sprt)));
}

/* ---------------------------------------------------------------------------
 * The dashboard's view (any thread, from a copy)
 * ------------------------------------------------------------------------- */

void gate_copy_free(gate_copy *c) {
    free(c->pairs);
    free(c->seeds);
    free(c->enc);
    memset(c, 0, sizeof *c);
}

int gate_copy_update(const sf_coordinator *co, gate_copy *c, sf_err *err) {
    const co_gate *g = co->gate;
    if (!g)
        return SF_OK;
    if (g->ps.n < c->n) /* folded again from the first job (gate_job_undone) */
        c->n = 0;
    if (g->ps.n == c->n) /* nothing new (and no pair yet: nothing allocated) */
        return SF_OK;
    int rc = grow(c, g->ps.n, err);
    if (rc < 0)
        return rc;
    size_t k = c->n, add = g->ps.n - k;
    memcpy(c->pairs + k, g->ps.pairs + k, add * sizeof *c->pairs);
    memcpy(c->seeds + k, g->ps.seeds + k, add * sizeof *c->seeds);
    memcpy(c->enc + k, g->ps.enc + k, add * sizeof *c->enc);
    c->n = g->ps.n;
    return SF_OK;
}

int gate_copy_dup(const gate_copy *from, gate_copy *to, sf_err *err) {
    memset(to, 0, sizeof *to);
    int rc = grow(to, from->n ? from->n : 1, err);
    if (rc < 0) {
        gate_copy_free(to);
        return rc;
    }
    memcpy(to->pairs, from->pairs, from->n * sizeof *to->pairs);
    memcpy(to->seeds, from->seeds, from->n * sizeof *to->seeds);
    memcpy(to->enc, from->enc, from->n * sizeof *to->enc);
    to->n = from->n;
    return SF_OK;
}

char *gate_document(const sf_coordinator *co, const gate_copy *c, int decided, size_t *len,
                    sf_err *err) {
    if (!co->gate) {
        sf_err_set(err, SF_ENOTFOUND, "run %s is not a gate run (run.kind %s)", co->cfg.name,
                   co->cfg.kind);
        return NULL;
    }
    double *llr = malloc((c->n ? c->n : 1) * sizeof *llr);
    if (!llr) {
        sf_err_set(err, SF_ENOMEM, "gate: out of memory");
        return NULL;
    }
    sf_gate_verdict v;
    char *s = NULL;
    if (sf_gate_verdict_compute(c->pairs, c->n, &co->gate->rule, NULL, 0, llr, c->n, &v, err) ==
        SF_OK) {
        json_t *o = json_object();
        json_object_set_new(o, SF_DASH_GATE_DECIDED, json_boolean(decided));
        json_object_set_new(o, SF_DASH_GATE_VERDICT, verdict_json(co, c, &v));
        json_object_set_new(o, SF_DASH_GATE_PAIRS, pairs_array(c, (size_t)v.pairs_used, llr));
        s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
        json_decref(o);
        if (!s)
            sf_err_set(err, SF_ENOMEM, "gate: out of memory");
    }
    free(llr);
    *len = s ? strlen(s) : 0;
    return s;
}
