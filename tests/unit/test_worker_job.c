/* test_worker_job.c — the labels a job writes, read back from its shard:
 * graded loss targets on boss fights and an improved policy that is not
 * flat there, the block forecast sampled where it carries information, the
 * raw and the searched root value, labels.unsearched, and the job counters
 * of the label contract (label/label.h, docs/format.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_fixture.h"
#include "gate/stats.h"
#include "sf_check.h"
#include "sf_tmpdir.h"
#include "shard/shard.h"
#include "worker/worker.h"

SF_TMPDIR_OF_TESTS("sf-job-test")

/* A run of `count` seeds playing `encounters` with the starter deck. */
static void run_config(sf_run_config *cfg, const char *encounters, int count, int sims,
                       const char *unsearched) {
    config_of(cfg,
              "run: {name: jobtest, seed: 77}\n"
              "seeds: {start: 0, count: %d, job_size: %d}\n"
              "play: {mode: fights, encounters: %s}\n"
              "search: {simulations: %d, trees: 2}\n"
              "labels: {unsearched: %s}\n",
              count, count, encounters, sims, unsearched);
}

/* Play the job and open its shard. */
/* Job 1 of `cfg` (every seed) played into TMPDIR/NAME.shard by `threads`
 * threads, evaluating with `ev` (NULL: in-process rollouts) and sealing
 * with config digest `digest` (NULL: cfg's own); the open shard. */
static sf_shard_reader *play_with(const sf_run_config *cfg, const char *digest, const char *name,
                                  int threads, const sf_batch_evaluator *ev, sf_job_result *res) {
    char own[65], path[400];
    if (!digest) {
        sf_config_digest(cfg, own);
        digest = own;
    }
    snprintf(path, sizeof path, "%s/%s.shard", tmpdir, name);
    sf_job_spec spec = {1, cfg->seed_start, (uint32_t)cfg->seed_count};
    sf_job_opts o = {
        .threads = threads, .fights_per_thread = ev ? 2 : 1, .worker_id = "test", .evaluator = ev};
    sf_err e = {0};
    int rc = sf_job_run(cfg, digest, &spec, &o, path, res, &e);
    ck_assert_msg(rc == SF_OK, "%s", e.msg);
    sf_shard_reader *r = NULL;
    rc = sf_shard_reader_open(path, &r, &e);
    ck_assert_msg(rc == SF_OK, "%s", e.msg);
    return r;
}

static sf_shard_reader *play(const sf_run_config *cfg, const char *name, sf_job_result *res) {
    return play_with(cfg, NULL, name, 2, NULL, res);
}

/* The shard `name` of a run_config() run, played. */
static sf_shard_reader *play_fights(const char *name, const char *encounters, int count, int sims,
                                    const char *unsearched, sf_job_result *res) {
    sf_run_config cfg;
    run_config(&cfg, encounters, count, sims, unsearched);
    return play(&cfg, name, res);
}

static uint64_t counter(const sf_shard_reader *r, const char *name) {
    const Spirefleet__JobStats *st = sf_shard_reader_manifest(r)->stats;
    for (size_t k = 0; st && k < st->n_counters; k++)
        if (!strcmp(st->counters[k]->name, name))
            return st->counters[k]->value;
    ck_abort_msg("no counter %s", name);
    return 0;
}

/* Record i of the shard, which must read. */
static const Spirefleet__LabelRecord *record(sf_shard_reader *r, uint64_t i) {
    const Spirefleet__LabelRecord *rec = NULL;
    sf_err e = {0};
    ck_assert_msg(sf_shard_reader_get(r, i, &rec, &e) == SF_OK, "record %llu: %s",
                  (unsigned long long)i, e.msg);
    return rec;
}

START_TEST(boss_labels_rank_their_moves_and_grade_their_losses) {
    /* With the starter deck every boss fight is lost. Before graded losses
     * every Q at such a root was 0 and pi' was exactly uniform in 93 % of
     * the searched boss records; the loss targets were all 0. */
    sf_job_result res;
    sf_shard_reader *r = play_fights("boss", "{boss: 1}", 6, 200, "drop", &res);
    uint64_t n = sf_shard_reader_count(r), flat = 0, searched = 0, bad_loss = 0;
    double values[64];
    int n_values = 0;
    for (uint64_t i = 0; i < n; i++) {
        const Spirefleet__LabelRecord *rec = record(r, i);
        const Spirefleet__SearchResult *s = rec->search;
        ck_assert(s->searched); /* labels.unsearched: drop */
        searched++;
        double lo = 1.0, hi = 0.0;
        for (size_t a = 0; a < s->n_policy; a++) {
            lo = fmin(lo, s->policy[a]);
            hi = fmax(hi, s->policy[a]);
        }
        flat += hi - lo < 1e-4;
        const Spirefleet__Outcome *o = rec->outcome;
        if (!o->won) {
            bad_loss += !(o->value > 0.0f && o->value < (float)SF_VALUE_LOSS_MAX);
            int seen = 0;
            for (int k = 0; k < n_values; k++)
                seen |= fabs(values[k] - o->value) < 1e-7;
            if (!seen && n_values < 64)
                values[n_values++] = o->value;
        }
    }
    ck_assert_uint_gt(searched, 50);
    ck_assert_msg((double)flat <= 0.1 * (double)searched,
                  "pi' flat in %llu of %llu searched boss records", (unsigned long long)flat,
                  (unsigned long long)searched);
    ck_assert_uint_eq(bad_loss, 0); /* every loss target inside (0, 0.2) */
    ck_assert_int_ge(n_values, 4);  /* six lost fights, graded differently */
    ck_assert_uint_gt(counter(r, "unsearched_dropped"), 0);
    ck_assert_uint_eq(n + counter(r, "unsearched_dropped"), res.decisions);
    sf_shard_reader_close(r);
}
END_TEST

START_TEST(forecasts_root_values_and_unsearched_labels) {
    sf_job_result res;
    sf_shard_reader *r = play_fights("keep", "{weak: 1, strong: 1}", 6, 64, "keep", &res);
    uint64_t n = sf_shard_reader_count(r), unsearched = 0, block_seen = 0, differ = 0;
    ck_assert_uint_eq(n, res.decisions); /* keep: every decision is a label */
    for (uint64_t i = 0; i < n; i++) {
        const Spirefleet__LabelRecord *rec = record(r, i);
        const Spirefleet__SearchResult *s = rec->search;
        if (!s->searched) {
            unsearched++;
            ck_assert_uint_eq(s->n_policy, 1);
            ck_assert_float_eq(s->policy[0], 1.0f);
        } else {
            /* The searched value: each tree's Q(root) weighted by its N(root);
             * both trees ran the same number of simulations, so it is their
             * mean. It is not the evaluator's raw value of the root. */
            ck_assert_uint_eq(s->n_tree_root_values, 2);
            double mean = 0.5 * (s->tree_root_values[0] + s->tree_root_values[1]);
            ck_assert_double_eq_tol(s->root_search_value, mean, 1e-6);
            differ += fabsf(s->root_search_value - s->root_raw_value) > 1e-4f;
        }
        /* tensor bytes lie where the record put them, at any alignment */
        float f[SF_FORECAST_H * SF_FORECAST_COLS];
        memcpy(f, rec->forecast->target->data.data, sizeof f);
        const uint8_t *m = rec->forecast->mask->data.data;
        for (int h = 0; h < SF_FORECAST_H; h++)
            block_seen += m[h] && f[h * SF_FORECAST_COLS + SF_FORECAST_BLOCK_AT_ENEMY_TURN] > 0.0f;
    }
    ck_assert_uint_gt(unsearched, 0);
    ck_assert_uint_gt(differ, n / 4);
    /* The old column sampled the block just after it reset: always 0. */
    ck_assert_uint_gt(block_seen, 0);
    ck_assert_uint_eq(counter(r, "unsearched_dropped"), 0);
    ck_assert_uint_eq(counter(r, "engine_limit_fights"), 0);
    sf_shard_reader_close(r);
}
END_TEST

/* The shard `name` of a gate run of `count` seeds playing `play_yaml` (a
 * YAML flow mapping), the champion and the candidate given as YAML flow
 * mappings, played. */
static sf_shard_reader *play_gate(const char *name, const char *play_yaml, int count,
                                  const char *champion, const char *candidate, sf_job_result *res) {
    sf_run_config cfg;
    config_of(&cfg,
              "run: {name: gatetest, seed: 77, kind: gate}\n"
              "seeds: {start: 0, count: %d, job_size: %d}\n"
              "play: %s\n"
              "search: {simulations: 40, trees: 2}\n"
              "champion: %s\n"
              "candidate: %s\n"
              "gate: {min_pairs: 2, max_pairs: %d}\n",
              count, count, play_yaml, champion, candidate, count);
    return play(&cfg, name, res);
}

typedef struct pair_tally {
    int pairs, same, won[2];
    double y[2];
} pair_tally;

static pair_tally tally(const sf_shard_reader *r) {
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    pair_tally t = {0};
    for (size_t i = 0; i < m->n_gate_pairs; i++) {
        const Spirefleet__GatePair *p = m->gate_pairs[i];
        t.pairs++;
        t.same += p->won_champion == p->won_candidate && p->y_champion == p->y_candidate;
        t.won[0] += (int)p->won_champion;
        t.won[1] += (int)p->won_candidate;
        t.y[0] += p->y_champion;
        t.y[1] += p->y_candidate;
        ck_assert_uint_eq(p->game_seed, i); /* seed order, seeds 0.. */
        ck_assert(p->y_champion >= 0 && p->y_champion <= 1);
        ck_assert(p->y_candidate >= 0 && p->y_candidate <= 1);
        ck_assert_int_eq(p->won_champion, p->y_champion >= 0.5f);
        ck_assert_int_eq(p->won_candidate, p->y_candidate >= 0.5f);
    }
    return t;
}

START_TEST(gate_identical_sides_play_identical_games) {
    /* Same evaluator, same search, same salt: each pair plays the same
     * fight twice, from the same rewards start, with the same random
     * streams, so the results are equal pair by pair; a gate job writes
     * pairs and no labels, and sums the champion's starts. */
    sf_job_result res;
    sf_shard_reader *r = play_gate(
        "same", "{mode: fights, start: rewards, encounters: {weak: 1, strong: 1, elite: 1}}", 12,
        "{evaluator: rollout}", "{evaluator: rollout}", &res);
    ck_assert_uint_eq(res.records, 0);
    ck_assert_uint_eq(sf_shard_reader_count(r), 0);
    pair_tally t = tally(r);
    ck_assert_int_eq(t.pairs, 12);
    ck_assert_int_eq(t.same, 12);
    ck_assert_uint_eq(res.fights, 24); /* both sides, one fight per seed */
    ck_assert_uint_eq(counter(r, "start.fights"), 12);
    ck_assert_uint_gt(counter(r, "start.floor_sum"), 12);
    sf_shard_reader_close(r);
}
END_TEST

START_TEST(gate_salt_and_budget_separate_the_sides) {
    /* A different salt gives the candidate other decision streams: some
     * pairs then differ (each side still plays the same fight). A
     * candidate with 200 simulations against a champion with 2 scores
     * more over the same seeds. */
    sf_job_result res;
    sf_shard_reader *r = play_gate("salt", "{mode: fights, encounters: {strong: 1, elite: 1}}", 12,
                                   "{evaluator: rollout}", "{evaluator: rollout, salt: 5}", &res);
    pair_tally t = tally(r);
    ck_assert_int_eq(t.pairs, 12);
    ck_assert_int_lt(t.same, 12);
    sf_shard_reader_close(r);

    r = play_gate("budget", "{mode: fights, encounters: {strong: 1, elite: 1}}", 12,
                  "{evaluator: rollout, simulations: 2, trees: 1}",
                  "{evaluator: rollout, simulations: 200}", &res);
    t = tally(r);
    ck_assert_msg(t.y[1] > t.y[0] + 0.5, "candidate %.3f champion %.3f", t.y[1], t.y[0]);
    ck_assert_int_ge(t.won[1], t.won[0]);
    sf_shard_reader_close(r);
}
END_TEST

START_TEST(gate_gauntlets_score_the_whole_climb) {
    /* Gauntlet pairs: class 4; a cleared gauntlet scores its boss fight
     * (a win, in [0.5, 1]); one that died in fight k of n scores
     * (0.2 (k - 1) + that fight's score) / n, a loss in [0, 0.2), so
     * floor(5 n y) = k - 1 fights won. */
    sf_job_result res;
    sf_shard_reader *r = play_gate("gauntlet", "{mode: gauntlet}", 4, "{evaluator: rollout}",
                                   "{evaluator: rollout, salt: 1}", &res);
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    ck_assert_uint_eq(m->n_gate_pairs, 4);
    uint64_t fights = 0;
    for (size_t i = 0; i < m->n_gate_pairs; i++) {
        const Spirefleet__GatePair *p = m->gate_pairs[i];
        ck_assert_uint_eq(p->class_id, 4);
        ck_assert_str_eq(p->encounter, "gauntlet");
        sf_gauntlet g;
        sf_gauntlet_generate(p->game_seed, &g);
        const float ys[2] = {p->y_champion, p->y_candidate};
        const int won[2] = {p->won_champion, p->won_candidate};
        for (int s = 0; s < 2; s++) {
            ck_assert_int_eq(won[s], ys[s] >= 0.5f);
            ck_assert(ys[s] >= 0 && ys[s] <= 1 && (won[s] || ys[s] < 0.2f));
            /* fights this side played: all n when cleared, else k */
            fights += won[s] ? (uint64_t)g.n : (uint64_t)floor(5.0 * g.n * ys[s] + 1e-6) + 1;
        }
    }
    ck_assert_uint_eq(fights, res.fights); /* every fight of both sides accounted for */
    sf_shard_reader_close(r);
}
END_TEST

START_TEST(gate_equal_strength_is_rarely_promoted) {
    /* A seeded batch of 12 small gates, each on its own 60 seeds, of sides
     * of equal strength that are not identical (another salt): decided by
     * the verdict the coordinator computes (alpha 0.05, delta1 0.1,
     * min_pairs 30). At most 2 promotions: P(X >= 3) = 0.020 for
     * X ~ Bin(12, 0.05) (1 - 0.95^12 - 12 0.05 0.95^11 - 66 0.05^2 0.95^10),
     * so a gate that promoted more often than alpha would show here. The
     * sides differ: some pairs must be discordant. */
    sf_job_result res;
    sf_shard_reader *r =
        play_gate("batch", "{mode: fights, encounters: {strong: 1, elite: 1, boss: 1}}", 720,
                  "{evaluator: rollout, simulations: 3, trees: 1}",
                  "{evaluator: rollout, simulations: 3, trees: 1, salt: 9}", &res);
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    ck_assert_uint_eq(m->n_gate_pairs, 720);
    sf_gate_rule rule = sf_gate_rule_default();
    rule.alpha = rule.beta = 0.05;
    rule.delta1 = 0.1;
    rule.min_pairs = 30;
    rule.max_pairs = 60;
    rule.boot_resamples = 0;
    int promoted = 0, discordant = 0;
    for (int g = 0; g < 12; g++) {
        sf_gate_pair pairs[60];
        for (int i = 0; i < 60; i++) {
            const Spirefleet__GatePair *p = m->gate_pairs[g * 60 + i];
            pairs[i] = (sf_gate_pair){.won_a = (uint8_t)p->won_candidate,
                                      .won_b = (uint8_t)p->won_champion,
                                      .y_a = p->y_candidate,
                                      .y_b = p->y_champion,
                                      .class_id = (int32_t)p->class_id};
        }
        sf_gate_verdict v;
        sf_err e = {0};
        ck_assert_msg(sf_gate_verdict_compute(pairs, 60, &rule, NULL, 0, NULL, 0, &v, &e) == SF_OK,
                      "%s", e.msg);
        ck_assert_int_ne(v.decision, SF_GATE_CONTINUE);
        promoted += v.decision == SF_GATE_PROMOTE;
        discordant += (int)(v.only_a + v.only_b);
    }
    ck_assert_int_le(promoted, 2);
    ck_assert_int_gt(discordant, 0);
    sf_shard_reader_close(r);
}
END_TEST

START_TEST(rewards_starts_are_recorded_and_summarised) {
    /* play.start rewards: every label names its start (the compact text
     * of docs/starts.md, version SF_START_VERSION) and the manifest sums
     * the starts in counters. */
    sf_run_config cfg;
    config_of(&cfg, "run: {name: starts, seed: 5}\n"
                    "seeds: {start: 0, count: 6, job_size: 6}\n"
                    "play: {mode: fights, start: rewards, encounters: {elite: 1, boss: 1}}\n"
                    "search: {simulations: 20, trees: 1}\n");
    sf_job_result res;
    sf_shard_reader *r = play(&cfg, "starts", &res);
    uint64_t n = sf_shard_reader_count(r);
    ck_assert_uint_gt(n, 0);
    for (uint64_t i = 0; i < n; i++) {
        const Spirefleet__LabelRecord *rec = record(r, i);
        ck_assert_str_ne(rec->ids->start, "");
        ck_assert_uint_eq(rec->ids->start_version, SF_START_VERSION);
    }
    ck_assert_uint_eq(counter(r, "start.fights"), 6);
    uint64_t cards = counter(r, "start.deck_cards");
    ck_assert_uint_gt(cards, 6 * 10); /* elites and bosses come after card rewards */
    ck_assert_uint_ge(counter(r, "start.floor_sum"), 6 * 3);
    ck_assert_uint_le(counter(r, "start.hp_sum"), counter(r, "start.max_hp_sum"));
    ck_assert_uint_ge(counter(r, "start.card.Strike"), 1);
    sf_shard_reader_close(r);
}
END_TEST

/* Ten Defends against a Blue Slaver with 999 HP: neither side can end the
 * fight, which the game would let go on forever (the stall of
 * docs/engine.md "The turn cap"). */
#define STALL_PLAY                                                                           \
    "{mode: fights, encounters: {Blue Slaver: 1}, deck: 'Defend*10', hp: 999, max_hp: 999, " \
    "max_turns: 12}"

START_TEST(a_stalled_fight_ends_at_the_turn_cap_and_its_labels_say_so) {
    sf_run_config cfg;
    config_of(&cfg, "run: {name: stall, seed: 3}\n"
                    "seeds: {start: 0, count: 3, job_size: 3}\n"
                    "play: " STALL_PLAY "\n"
                    "search: {simulations: 30, trees: 1}\n");
    sf_job_result res;
    sf_shard_reader *r = play(&cfg, "stall", &res);
    ck_assert_uint_eq(res.fights, 3);
    ck_assert_uint_eq(res.wins, 0);
    ck_assert_uint_eq(counter(r, "turn_limit_fights"), 3);
    ck_assert_uint_eq(counter(r, "engine_limit_fights"), 0);
    uint64_t n = sf_shard_reader_count(r), last_turn = 0;
    ck_assert_uint_gt(n, 12);
    for (uint64_t i = 0; i < n; i++) {
        const Spirefleet__LabelRecord *rec = record(r, i);
        const Spirefleet__Outcome *o = rec->outcome;
        ck_assert(o->turn_limit && !o->won && !o->engine_limit);
        ck_assert_uint_eq(o->turns, 12);
        ck_assert_uint_gt(o->final_hp, 0);
        /* untouched monster, 12 turns: 0.2 * (0.75*0 + 0.25*12/22) */
        ck_assert_uint_eq(o->monster_hp_left, o->monster_hp_pool);
        ck_assert_float_eq_tol(o->value, (float)(0.2 * 0.25 * 12.0 / 22.0), 1e-7f);
        ck_assert_uint_le(rec->ids->turn, 12);
        last_turn = rec->ids->turn > last_turn ? rec->ids->turn : last_turn;
    }
    ck_assert_uint_eq(last_turn, 12); /* the last turn was played */
    sf_shard_reader_close(r);
}
END_TEST

START_TEST(a_gate_job_stops_a_stalled_fight_the_same_way) {
    /* Both sides play the stall to the cap: each pair scores the same
     * graded loss, 0.2 * 0.25 * 12/22. */
    sf_job_result res;
    sf_shard_reader *r = play_gate("gate-stall", STALL_PLAY, 2, "{evaluator: rollout}",
                                   "{evaluator: rollout, salt: 3}", &res);
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    ck_assert_uint_eq(m->n_gate_pairs, 2);
    for (size_t i = 0; i < m->n_gate_pairs; i++) {
        const Spirefleet__GatePair *p = m->gate_pairs[i];
        ck_assert(!p->won_champion && !p->won_candidate);
        ck_assert_float_eq_tol(p->y_champion, (float)(0.2 * 0.25 * 12.0 / 22.0), 1e-7f);
        ck_assert_float_eq_tol(p->y_candidate, (float)(0.2 * 0.25 * 12.0 / 22.0), 1e-7f);
    }
    ck_assert_uint_eq(counter(r, "turn_limit_fights"), 4); /* both sides' fights */
    sf_shard_reader_close(r);
}
END_TEST

START_TEST(seed_268_of_the_local_config_ends_well_below_the_cap) {
    /* configs/local.yaml's game seed 268: a Blue Slaver from a rewards
     * start whose deck shuts the monster down (Disarm x2, Intimidate,
     * Shockwave x2, Orichalcum). Before the turn discount of the win score
     * this fight never ended at 1,000 simulations (55,300 turns at 600):
     * ending the turn always looked up to 1 HP better than attacking. With
     * the discount's fast rate from turn 12 it is won well below the cap of
     * 50 (docs/search.md "Finishing fights"). The turn it ends on moves with
     * every change to the state's bytes (the searches' chance draws are
     * salted from them): turn 17 at engine version 4, 20 to 33 across the
     * layouts of version 6, whose start also holds Champion Belt and a
     * Cultist Potion that now act; a stall would reach the cap. */
    sf_run_config cfg;
    char path[1024];
    snprintf(path, sizeof path, "%s/configs/local.yaml", SF_SOURCE_ROOT);
    sf_err e = {0};
    ck_assert_msg(sf_config_load(path, &cfg, &e) == SF_OK, "%s", e.msg);
    ck_assert_uint_eq(cfg.search.simulations, 1000);
    ck_assert_uint_eq(cfg.search.trees, 4);
    cfg.seed_start = 268;
    cfg.seed_count = 1;
    sf_job_result res;
    sf_shard_reader *r = play(&cfg, "seed268", &res);
    ck_assert_uint_eq(res.fights, 1);
    ck_assert_uint_eq(res.wins, 1);
    uint64_t n = sf_shard_reader_count(r);
    ck_assert_str_eq(record(r, 0)->ids->encounter, "Blue Slaver");
    const Spirefleet__Outcome *o = record(r, n - 1)->outcome; /* valid until the next get */
    ck_assert(o->won && !o->turn_limit);
    ck_assert_uint_le(o->turns, SF_MAX_TURNS_DEFAULT * 3 / 4);
    if (getenv("SF_PRINT_GOLDEN"))
        printf("# seed 268: won on turn %u with %u/%u HP, %llu labels\n", o->turns, o->final_hp,
               o->max_hp, (unsigned long long)n);
    sf_shard_reader_close(r);
}
END_TEST

/* A network that says 0.4 with uniform priors; with `overlap` it also
 * offers eval_overlap and counts the calls that ran the caller's work. */
typedef struct fake_net {
    int overlaps;
} fake_net;

static int fake_eval(void *session, const sf_eval_request *const *reqs, int n,
                     sf_eval_answer *out) {
    (void)session;
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].value = 0.4;
        out[i].has_priors = 1;
        for (int k = 0; k < reqs[i]->n_actions; k++)
            out[i].priors[k] = 1.0f / (float)reqs[i]->n_actions;
    }
    return SF_OK;
}

static int fake_eval_overlap(void *session, const sf_eval_request *const *reqs, int n,
                             sf_eval_answer *out, void (*meanwhile)(void *), void *ctx) {
    ((fake_net *)session)->overlaps++;
    meanwhile(ctx);
    return fake_eval(session, reqs, n, out);
}

START_TEST(mixed_leaf_labels_carry_lambda_and_overlap_changes_nothing) {
    /* search.leaf_mix 0.5 with a network: every label says 0.5; the
     * leaves' rollouts played while the batch is away (eval_overlap) or
     * before it give the same shard, digest for digest. */
    sf_run_config cfg;
    config_of(&cfg,
              "run: {name: mixed, seed: 5}\n"
              "seeds: {start: 0, count: 4, job_size: 4}\n"
              "play: {mode: fights, encounters: {Jaw Worm: 1, Cultist: 1}}\n"
              "search: {simulations: 40, trees: 2, evaluator: net, leaf_mix: 0.5}\n"
              "model: {bundle: fake.safetensors, sha256: '%064d'}\n",
              7);
    ck_assert_double_eq(cfg.search.leaf_mix, 0.5);
    char digest[65], hex[2][65];
    sf_config_digest(&cfg, digest);
    fake_net net = {0};
    for (int overlap = 0; overlap < 2; overlap++) {
        sf_batch_evaluator ev = {.eval = fake_eval,
                                 .eval_overlap = overlap ? fake_eval_overlap : NULL,
                                 .ctx = &net,
                                 .model_sha256 = cfg.model.sha256};
        sf_job_result res;
        sf_shard_reader *r = play_with(&cfg, digest, overlap ? "mixed1" : "mixed0", 1, &ev, &res);
        ck_assert_uint_eq(res.fallbacks_eval, 0);
        sf_hex(res.digest, 32, hex[overlap]);
        ck_assert_uint_gt(sf_shard_reader_count(r), 10);
        for (uint64_t i = 0; i < sf_shard_reader_count(r); i++) {
            const Spirefleet__LabelRecord *rec = record(r, i);
            ck_assert_float_eq(rec->search->leaf_mix, 0.5f);
            ck_assert_str_eq(rec->ids->model_sha256, cfg.model.sha256);
        }
        sf_shard_reader_close(r);
    }
    ck_assert_int_gt(net.overlaps, 0);
    ck_assert_str_eq(hex[0], hex[1]);
}
END_TEST

START_TEST(puct_c_reaches_the_network_search) {
    /* search.puct_c: 0 and the search's default (1.25) play the same
     * fights, label for label; 0.25 weighs the prior less and changes the
     * searches' visits, so the labels (each decision's visit counts) differ.
     * The same config digest is passed to all three, so only the play can
     * tell them apart. */
    static const char *const cs[3] = {"0", "1.25", "0.25"};
    char hex[3][65], digest[65];
    uint64_t visits_total[3];
    for (int k = 0; k < 3; k++) {
        sf_run_config cfg;
        config_of(&cfg,
                  "run: {name: puct, seed: 5}\n"
                  "seeds: {start: 0, count: 2, job_size: 2}\n"
                  "play: {mode: fights, encounters: {Jaw Worm: 1}}\n"
                  "search: {simulations: 60, trees: 1, evaluator: net, puct_c: %s}\n"
                  "model: {bundle: fake.safetensors, sha256: '%064d'}\n",
                  cs[k], 7);
        if (k == 0)
            sf_config_digest(&cfg, digest);
        fake_net net = {0};
        sf_batch_evaluator ev = {.eval = fake_eval, .ctx = &net, .model_sha256 = cfg.model.sha256};
        sf_job_result res;
        sf_shard_reader *r = play_with(&cfg, digest, cs[k], 1, &ev, &res);
        sf_hex(res.digest, 32, hex[k]);
        ck_assert_uint_gt(sf_shard_reader_count(r), 2);
        visits_total[k] = 0;
        const Spirefleet__LabelRecord *rec = record(r, 0);
        for (size_t i = 0; i < rec->search->n_visits; i++)
            visits_total[k] += rec->search->visits[i];
        sf_shard_reader_close(r);
    }
    ck_assert_str_eq(hex[0], hex[1]);
    ck_assert_str_ne(hex[0], hex[2]);
    ck_assert_uint_eq(visits_total[0], 60); /* every simulation reached the root's edges */
}
END_TEST

START_TEST(sibling_agreement_and_kendall_tau_by_hand) {
    /* a = (0.1, 0.2, 0.3, 0.3), b = (0.5, 0.4, 0.9, 0.9): pairs (0,1)
     * discordant; (0,2), (0,3), (1,2), (1,3) concordant; (2,3) tied in
     * both. Agreement with tie 0: every pair counts (|0| < 0 is false), the
     * tie in a on (2,3) for one half: 4.5 of 6; with tie 0.05 the (2,3)
     * pair drops: 4 of 5.
     * tau-b = (C - D) / sqrt((C + D + Ta)(C + D + Tb)) = (4 - 1) / 5 =
     * 0.6. */
    const double a[4] = {0.1, 0.2, 0.3, 0.3}, b[4] = {0.5, 0.4, 0.9, 0.9};
    double agree, pairs;
    ck_assert_int_eq(sf_siblings_agreement(a, b, 4, 0.0, &agree, &pairs), 1);
    ck_assert_double_eq(agree, 4.5);
    ck_assert_double_eq(pairs, 6.0);
    ck_assert_int_eq(sf_siblings_agreement(a, b, 4, 0.05, &agree, &pairs), 1);
    ck_assert_double_eq(agree, 4.0);
    ck_assert_double_eq(pairs, 5.0);
    ck_assert_double_eq_tol(sf_siblings_kendall_tau_b(a, b, 4), 0.6, 1e-15);
    /* ties in one side only: a = (1, 1, 2), b = (1, 2, 3): C = 2 ((0,2),
     * (1,2)), D = 0, Ta = 1 ((0,1)), Tb = 0: 2 / sqrt(3 * 2) = 0.816497 */
    const double c[3] = {1, 1, 2}, d[3] = {1, 2, 3};
    ck_assert_double_eq_tol(sf_siblings_kendall_tau_b(c, d, 3), 2.0 / sqrt(6.0), 1e-15);
    /* a constant side has no order */
    const double k[3] = {0.5, 0.5, 0.5};
    ck_assert(isnan(sf_siblings_kendall_tau_b(k, d, 3)));
    ck_assert_int_eq(sf_siblings_agreement(a, k, 3, 0.001, &agree, &pairs), 0);
}
END_TEST

START_TEST(siblings_replay_every_fight_of_a_shard) {
    /* A self-play job's shard, measured with a network that says 0.4 for
     * every child still fighting: every fight replays to positions that
     * tokenize as their labels (none skipped), every searched decision
     * with two or more actions is measured, and the rollout baseline
     * orders siblings better than chance. */
    sf_run_config cfg;
    config_of(&cfg, "run: {name: sib, seed: 21}\n"
                    "seeds: {start: 0, count: 4, job_size: 4}\n"
                    "play: {mode: fights, start: rewards, encounters: {strong: 1, elite: 1}}\n"
                    "search: {simulations: 200, trees: 2}\n");
    sf_job_result res;
    sf_shard_reader *r = play(&cfg, "sib", &res);
    uint64_t want = 0;
    for (uint64_t i = 0; i < sf_shard_reader_count(r); i++) {
        const Spirefleet__LabelRecord *rec = record(r, i);
        want += rec->search->searched && rec->search->n_completed_q >= 2;
    }
    sf_shard_reader_close(r);
    char path[400];
    snprintf(path, sizeof path, "%s/sib.shard", tmpdir);
    const char *shards[1] = {path};
    fake_net net = {0};
    sf_batch_evaluator ev = {.eval = fake_eval, .ctx = &net, .model_sha256 = "fake"};
    sf_siblings_report rep;
    sf_err e = {0};
    ck_assert_msg(sf_siblings_measure(&cfg, shards, 1, &ev, NULL, &rep, &e) == SF_OK, "%s", e.msg);
    ck_assert_uint_eq(rep.fights, 4);
    ck_assert_uint_eq(rep.fights_skipped, 0);
    ck_assert_uint_eq(rep.decisions, want);
    ck_assert_uint_gt(rep.pairs, rep.decisions);
    /* the fake network values every live child 0.4: such a pair is a tie
     * for it and counts one half; only children that end the fight (valued
     * by their outcome) lift it above 0.5, and one rollout per child does
     * better */
    ck_assert_msg(rep.net_accuracy > 0.5 && rep.net_accuracy < rep.rollout_accuracy,
                  "network %.3f, rollout %.3f", rep.net_accuracy, rep.rollout_accuracy);
    ck_assert_msg(rep.rollout_accuracy > 0.55, "rollout agreement %.3f", rep.rollout_accuracy);
    /* a seed filter and a decision limit */
    uint64_t only[1] = {2};
    sf_siblings_opts o = {.seeds = only, .n_seeds = 1, .max_decisions = 3};
    ck_assert_int_eq(sf_siblings_measure(&cfg, shards, 1, &ev, &o, &rep, &e), SF_OK);
    ck_assert_uint_le(rep.decisions, 3);
    ck_assert_uint_gt(rep.decisions, 0);
    ck_assert_uint_eq(rep.fights, 1); /* only seed 2's fight is replayed */
}
END_TEST

/* Golden digests: a small job's shard content digest and a search result's
 * bytes, recorded from this code. A change that is meant to leave labels
 * alone (a refactor, a move of code) must leave them equal; one that means
 * to change them updates them here and says why in its commit. Printed
 * with SF_PRINT_GOLDEN=1. */
#define GOLDEN_JOB_DIGEST "b874f13dc3ec02121298fbe41b84a9705cd07ce09b64cc42c1baf12b9ff2ba52"

START_TEST(golden_job_digest) {
    sf_run_config cfg;
    run_config(&cfg, "{weak: 1, strong: 1, elite: 1, boss: 1}", 8, 100, "drop");
    char digest[65], path[400], hex[65];
    sf_config_digest(&cfg, digest);
    snprintf(path, sizeof path, "%s/golden.shard", tmpdir);
    sf_job_spec spec = {3, cfg.seed_start, (uint32_t)cfg.seed_count};
    sf_job_opts o = {.threads = 2, .fights_per_thread = 2, .worker_id = "golden"};
    sf_job_result res;
    sf_err e = {0};
    ck_assert_msg(sf_job_run(&cfg, digest, &spec, &o, path, &res, &e) == SF_OK, "%s", e.msg);
    sf_hex(res.digest, 32, hex);
    if (getenv("SF_PRINT_GOLDEN"))
        printf("# golden job digest %s (%llu records)\n", hex, (unsigned long long)res.records);
    ck_assert_str_eq(hex, GOLDEN_JOB_DIGEST);
}
END_TEST

#include "test-worker-job.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("worker-job", "labels", 300, tmpdir_make, tmpdir_remove)
