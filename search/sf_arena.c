/*
 * sf-arena — play seeded fights or Act-1 gauntlets with one policy and print
 * the win rate and mean HP lost with 95% confidence intervals, per
 * encounter class (weak, strong, elite, boss).
 *
 *   sf-arena --policy search --sims 1000 --fights 200 --gauntlets 100 --jobs 2
 *
 * Policies: random (uniform over legal actions), greedy (the rollout
 * heuristic with tau = 0: the highest-priority card first, END_TURN only
 * when no card can be played, no potions), search (honest: belief root),
 * clairvoyant (search on the true state, for measuring the cost of
 * honesty), net (a network's raw policy: the highest logit over the legal
 * actions, no search; --model). --eval net makes the search evaluate its
 * leaves with the network of --model (in-process, or on --evald). --vs
 * POLICY plays a second policy on the same fights and adds the paired
 * difference (HP lost per fight, fights won per gauntlet, with a 95%
 * interval) and the discordant wins; search flags apply to both sides, and
 * --vs-FLAG (e.g. --vs-eval rollout, --vs-sims 100, --vs-model B) to the
 * second side only. Fight i of a class is encounter i mod |class| of that
 * pool, with seed sf_seed_derive(seed, class, i, 0); gauntlet g uses
 * sf_gauntlet_generate(sf_seed_derive(seed, 4, g, 0)). --start rewards
 * plays each fight from its own start, sf_start_sample(run seed = seed,
 * game seed = the fight's seed): an Act-1 prefix with rewards taken by
 * --picker (engine.h, docs/starts.md), the same for both sides. The same
 * seed gives the same fights to every policy (paired), and the same numbers
 * whatever --jobs and --threads are.
 *
 * Exit codes: 0 ok, 1 a fight failed, 2 bad arguments.
 */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/cli.h"
#include "search/netsearch.h"
#include "search/search.h"

static const char *prog = "sf-arena";

enum {
    POLICY_RANDOM = 0,
    POLICY_GREEDY = 1,
    POLICY_SEARCH = 2,
    POLICY_CLAIRVOYANT = 3,
    POLICY_NET = 4,
    POLICY_COUNT = 5
};
static const char *const policy_names[] = {"random", "greedy", "search", "clairvoyant", "net"};
static const char *const class_names[] = {"weak", "strong", "elite", "boss"};

typedef struct fight_result {
    int won, hp_start, hp_end, turns, fights_won;
    int max_turns;  /* the longest fight's turns                               */
    int turn_limit; /* fights ended at the turn cap                         */
    int deck_n, floor, relics_n, max_hp; /* the start (--start rewards)          */
    long decisions;
    uint64_t simulations;
    int error;
} fight_result;

typedef struct arena {
    int policy; /* the policy being played (set per pass)                  */
    sf_search_config cfg;
    int policies[2], n_policies; /* --policy and --vs                      */
    sf_search_config cfgs[2];
    sf_cli_net nets[2];            /* each side's --model / --evald              */
    sf_netsearch *models[2];       /* opened when the side uses a network        */
    sf_netsearch_session *session; /* this thread's, for this side         */
    sf_fight_spec spec;
    sf_start_opts start; /* --start, --picker                                  */
    uint64_t seed;
    int threads;
    /* work items: fights of each selected class, then gauntlets */
    int n_items;
    int *item_class; /* 0..3, or 4 for a gauntlet */
    int *item_index;
    fight_result *results; /* [n_policies][n_items]                      */
    int next;
    pthread_mutex_t lock;
    int pool_enc[4][SF_MAX_ACTIONS];
    int pool_n[4];
} arena;

/* One move of a fixed policy. */
static int policy_move(const arena *a, sf_search *s, const sf_state *st, uint64_t run_seed,
                       uint64_t decision, uint64_t *rng, sf_action *out, fight_result *fr) {
    if (a->policy == POLICY_RANDOM) {
        sf_action acts[SF_MAX_ACTIONS];
        int n = sf_engine_enumerate(st, acts, SF_MAX_ACTIONS);
        if (n <= 0)
            return SF_ESTATE;
        *rng = sf_mix64(*rng);
        *out = acts[*rng % (uint64_t)n];
        return SF_OK;
    }
    if (a->policy == POLICY_GREEDY)
        return sf_search_rollout_action(st, 0.0, rng, out);
    sf_err e = {0};
    if (a->policy == POLICY_NET) {
        int rc = sf_netsearch_policy_move(a->session, st, sf_seed_derive(run_seed, decision, 0, 2),
                                          out, &e);
        if (rc < 0)
            fprintf(stderr, "%s: raw policy: %s\n", prog, e.msg);
        return rc;
    }
    int rc = sf_search_begin(s, st, run_seed, decision, &e);
    if (rc == SF_OK)
        rc = a->session ? sf_search_run(s, 1, sf_netsearch_eval_fn, a->session, &e)
                        : sf_search_run(s, a->threads, NULL, NULL, &e);
    sf_search_result r;
    if (rc == SF_OK)
        rc = sf_search_result_get(s, &r, &e);
    if (rc < 0) {
        fprintf(stderr, "%s: search failed: %s\n", prog, e.msg);
        return rc;
    }
    fr->simulations += r.simulations;
    *out = r.chosen_action;
    return SF_OK;
}

/* Play `st` to the end. */
static int play(const arena *a, sf_search *s, sf_state *st, uint64_t fight_seed, uint64_t ply0,
                fight_result *fr) {
    uint64_t rng = sf_mix64(fight_seed ^ 0x6172656E61ull);
    uint64_t run_seed = sf_mix64(fight_seed ^ 0x7365617263680000ull);
    uint64_t ply = ply0;
    while (!sf_engine_is_terminal(st)) {
        sf_action act;
        int rc = policy_move(a, s, st, run_seed, ply, &rng, &act, fr);
        if (rc < 0)
            return rc;
        if (sf_engine_apply(st, act, NULL) != SF_OK)
            return SF_ESTATE;
        fr->decisions++;
        ply++;
    }
    return SF_OK;
}

static int run_fight(const arena *a, sf_search *s, int cls, int i, fight_result *fr) {
    sf_fight_spec spec = a->spec;
    spec.encounter = a->pool_enc[cls][i % a->pool_n[cls]];
    uint64_t fight_seed = sf_seed_derive(a->seed, (uint64_t)cls, (uint64_t)i, 0);
    sf_err e = {0};
    if (a->start.start == SF_START_REWARDS) {
        sf_start_desc d;
        int rc = sf_start_sample(&a->start, a->seed, fight_seed, spec.encounter, &spec, &d, &e);
        if (rc < 0) {
            fprintf(stderr, "%s: %s fight %d: %s\n", prog, class_names[cls], i, e.msg);
            return rc;
        }
        fr->relics_n = d.relics_n;
        spec.max_turns = a->spec.max_turns; /* a sampled start has the default cap */
    }
    spec.seed = fight_seed;
    fr->deck_n = spec.deck_n;
    fr->floor = spec.floor;
    fr->max_hp = spec.max_hp;
    sf_state st;
    if (sf_engine_init(&st, &spec, &e) < 0) {
        fprintf(stderr, "%s: %s\n", prog, e.msg);
        return SF_EINVAL;
    }
    int rc = play(a, s, &st, spec.seed, 0, fr);
    if (rc < 0)
        return rc;
    sf_outcome o;
    sf_engine_outcome(&st, &o);
    fr->won = o.won;
    fr->fights_won = o.won;
    fr->hp_start = spec.hp;
    fr->hp_end = o.won ? o.hp : 0;
    fr->turns = fr->max_turns = o.turns;
    fr->turn_limit = o.turn_limit;
    return SF_OK;
}

static int run_gauntlet(const arena *a, sf_search *s, int g, fight_result *fr) {
    uint64_t gseed = sf_seed_derive(a->seed, 4, (uint64_t)g, 0);
    sf_gauntlet gt;
    sf_gauntlet_generate(gseed, &gt);
    sf_fight_spec spec = a->spec;
    spec.seed = gseed;
    fr->hp_start = spec.hp;
    fr->won = 0;
    for (int f = 0; f < gt.n; f++) {
        spec.encounter = gt.encounters[f];
        spec.floor = f + 1;
        sf_state st;
        sf_err e = {0};
        if (sf_engine_init(&st, &spec, &e) < 0) {
            fprintf(stderr, "%s: gauntlet %d fight %d: %s\n", prog, g, f, e.msg);
            return SF_EINVAL;
        }
        int rc = play(a, s, &st, sf_seed_derive(gseed, (uint64_t)f, 1, 0), (uint64_t)f << 16, fr);
        if (rc < 0)
            return rc;
        sf_outcome o;
        sf_engine_outcome(&st, &o);
        fr->turns += o.turns;
        fr->max_turns = o.turns > fr->max_turns ? o.turns : fr->max_turns;
        fr->turn_limit += o.turn_limit;
        if (!o.won) {
            fr->hp_end = 0;
            return SF_OK;
        }
        fr->fights_won++;
        fr->hp_end = o.hp;
        if (f + 1 < gt.n)
            sf_engine_carry_over(&st, &gt, f + 1, &spec);
    }
    fr->won = 1;
    return SF_OK;
}

static void *worker(void *arg) {
    const arena *shared = arg;
    arena *lock_owner = arg;
    arena a[2];
    sf_search *s[2] = {NULL, NULL};
    for (int p = 0; p < shared->n_policies; p++) {
        a[p] = *shared;
        a[p].policy = shared->policies[p];
        a[p].cfg = shared->cfgs[p];
        a[p].session = NULL;
    }
    for (int p = 0; p < shared->n_policies; p++) {
        sf_err e = {0};
        int rc = SF_OK;
        if (shared->models[p])
            rc = sf_netsearch_session_open(shared->models[p], &a[p].session, &e);
        if (rc == SF_OK && (a[p].policy == POLICY_SEARCH || a[p].policy == POLICY_CLAIRVOYANT))
            rc = sf_search_create(&a[p].cfg, &s[p], &e);
        if (rc < 0) {
            fprintf(stderr, "%s: %s\n", prog, e.msg);
            pthread_mutex_lock(&lock_owner->lock);
            for (int i = 0; i < shared->n_items * shared->n_policies; i++)
                lock_owner->results[i].error = 1;
            lock_owner->next = shared->n_items;
            pthread_mutex_unlock(&lock_owner->lock);
            for (int q = 0; q <= p; q++) {
                sf_search_destroy(s[q]);
                sf_netsearch_session_close(a[q].session);
            }
            return NULL;
        }
    }
    for (;;) {
        pthread_mutex_lock(&lock_owner->lock);
        int i = lock_owner->next < shared->n_items ? lock_owner->next++ : -1;
        pthread_mutex_unlock(&lock_owner->lock);
        if (i < 0)
            break;
        for (int p = 0; p < shared->n_policies; p++) {
            fight_result *fr = &lock_owner->results[(size_t)p * shared->n_items + i];
            memset(fr, 0, sizeof *fr);
            int rc = shared->item_class[i] < 4
                         ? run_fight(&a[p], s[p], shared->item_class[i], shared->item_index[i], fr)
                         : run_gauntlet(&a[p], s[p], shared->item_index[i], fr);
            fr->error = rc < 0;
        }
    }
    for (int p = 0; p < shared->n_policies; p++) {
        sf_search_destroy(s[p]);
        sf_netsearch_session_close(a[p].session);
    }
    return NULL;
}

/* Wilson score interval for a proportion. */
static void wilson(int k, int n, double *lo, double *hi) {
    const double z = 1.959964;
    if (n == 0) {
        *lo = *hi = 0.0;
        return;
    }
    double p = (double)k / n, z2 = z * z;
    double den = 1.0 + z2 / n;
    double mid = (p + z2 / (2.0 * n)) / den;
    double half = z * sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / den;
    *lo = mid - half < 0.0 ? 0.0 : mid - half;
    *hi = mid + half > 1.0 ? 1.0 : mid + half;
}

/* Mean and normal 95% half-width. */
static void mean_ci(const double *x, int n, double *mean, double *half) {
    double m = 0.0, v = 0.0;
    for (int i = 0; i < n; i++)
        m += x[i];
    m = n ? m / n : 0.0;
    for (int i = 0; i < n; i++)
        v += (x[i] - m) * (x[i] - m);
    *mean = m;
    *half = n > 1 ? 1.959964 * sqrt(v / (n - 1) / n) : 0.0;
}

/* "rollout", "uniform" or "net <first 12 digits of the SHA-256>". */
static void evaluator_name(const arena *a, int p, char *out, size_t cap) {
    const sf_search_config *c = &a->cfgs[p];
    if (a->models[p] && c->leaf_mix > 0.0)
        snprintf(out, cap, "net %.12s, leaf mix %g", sf_netsearch_sha256(a->models[p]),
                 c->leaf_mix);
    else if (a->models[p])
        snprintf(out, cap, "net %.12s", sf_netsearch_sha256(a->models[p]));
    else
        snprintf(out, cap, "%s", c->evaluator == SF_EVAL_UNIFORM ? "uniform" : "rollout");
}

static void describe(const arena *a, int p, char *desc, size_t cap) {
    int pol = a->policies[p];
    const sf_search_config *c = &a->cfgs[p];
    char ev[64];
    evaluator_name(a, p, ev, sizeof ev);
    if (pol == POLICY_SEARCH || pol == POLICY_CLAIRVOYANT)
        snprintf(desc, cap, "%s (%d simulations, %d trees, %s, %s evaluator)", policy_names[pol],
                 c->simulations, c->trees, sf_search_select_name(c->select), ev);
    else if (pol == POLICY_NET)
        snprintf(desc, cap, "%s (raw policy of %s)", policy_names[pol], ev + 4);
    else
        snprintf(desc, cap, "%s", policy_names[pol]);
}

/* Per class: win rate (Wilson), mean HP lost (normal), gauntlet fights won. */
static void report(const arena *a, int p, int json, double seconds) {
    const fight_result *res = a->results + (size_t)p * a->n_items;
    int n_items = a->n_items, pol = a->policies[p];
    char desc[256];
    describe(a, p, desc, sizeof desc);
    if (!json) {
        printf("policy %s, seed %llu", desc, (unsigned long long)a->seed);
        if (a->start.start == SF_START_REWARDS)
            printf(", start rewards (picker %s)", sf_picker_name(a->start.picker));
        printf("\n");
        printf("%-9s %7s  %-24s %-24s %8s\n", "class", "n", "win rate [95% CI]",
               "mean HP lost [95% CI]", "turns");
    }
    double *hp = calloc((size_t)n_items + 1, sizeof(double));
    double *fw = calloc((size_t)n_items + 1, sizeof(double));
    uint64_t sims = 0;
    long decisions = 0;
    int rewards = a->start.start == SF_START_REWARDS;
    for (int c = 0; c <= 4 && hp && fw; c++) {
        int n = 0, won = 0, longest = 0, capped = 0;
        double turns = 0.0, deck = 0.0, hp0 = 0.0, maxhp = 0.0, floor = 0.0, relics = 0.0;
        for (int i = 0; i < n_items; i++) {
            if (a->item_class[i] != c)
                continue;
            const fight_result *r = &res[i];
            won += r->won;
            hp[n] = (double)(r->hp_start - r->hp_end);
            fw[n] = r->fights_won;
            turns += r->turns;
            longest = r->max_turns > longest ? r->max_turns : longest;
            capped += r->turn_limit;
            deck += r->deck_n;
            hp0 += r->hp_start;
            maxhp += r->max_hp;
            floor += r->floor;
            relics += r->relics_n;
            sims += r->simulations;
            decisions += r->decisions;
            n++;
        }
        if (n == 0)
            continue;
        double lo, hi, m, h, fm, fh;
        wilson(won, n, &lo, &hi);
        mean_ci(hp, n, &m, &h);
        mean_ci(fw, n, &fm, &fh);
        const char *cname = c < 4 ? class_names[c] : "gauntlet";
        if (json) {
            printf("{\"policy\":\"%s\",\"class\":\"%s\",\"n\":%d,\"wins\":%d,\"win_rate\":%.4f,"
                   "\"win_lo\":%.4f,\"win_hi\":%.4f,\"hp_lost\":%.3f,\"hp_lost_half\":%.3f",
                   policy_names[pol], cname, n, won, (double)won / n, lo, hi, m, h);
            if (c == 4)
                printf(",\"fights_won\":%.3f,\"fights_won_half\":%.3f", fm, fh);
            char ev[64];
            evaluator_name(a, p, ev, sizeof ev);
            printf(",\"mean_turns\":%.2f,\"longest_fight_turns\":%d,\"turn_limit_fights\":%d",
                   turns / n, longest, capped);
            printf(",\"leaf_mix\":%g,\"simulations\":%d,\"trees\":%d,\"evaluator\":\"%s\","
                   "\"model_sha256\":\"%s\",\"seed\":%llu",
                   a->cfgs[p].leaf_mix, a->cfgs[p].simulations, a->cfgs[p].trees,
                   a->models[p] ? "net" : ev, a->models[p] ? sf_netsearch_sha256(a->models[p]) : "",
                   (unsigned long long)a->seed);
            printf(",\"start\":\"%s\"", rewards ? "rewards" : "starter");
            if (rewards && c < 4)
                printf(",\"picker\":\"%s\",\"start_deck\":%.2f,\"start_hp\":%.2f,"
                       "\"start_max_hp\":%.2f,\"start_floor\":%.2f,\"start_relics\":%.2f",
                       sf_picker_name(a->start.picker), deck / n, hp0 / n, maxhp / n, floor / n,
                       relics / n);
            printf("}\n");
        } else {
            char wr[64], hl[64];
            snprintf(wr, sizeof wr, "%.3f [%.3f, %.3f]", (double)won / n, lo, hi);
            /* A normal interval can leave the range; print the part inside.
             * From a start below full HP, Burning Blood and potions can heal
             * more than the fight cost: HP lost may then be negative. */
            snprintf(hl, sizeof hl, "%.1f [%.1f, %.1f]", m, rewards ? m - h : fmax(m - h, 0.0),
                     m + h);
            printf("%-9s %7d  %-24s %-24s %8.1f", cname, n, wr, hl, turns / n);
            if (c == 4)
                printf("  fights won %.2f [%.2f, %.2f]", fm, fmax(fm - fh, 0.0), fm + fh);
            if (rewards && c < 4)
                printf("  start: deck %.1f, HP %.1f/%.1f, floor %.1f, relics %.2f", deck / n,
                       hp0 / n, maxhp / n, floor / n, relics / n);
            if (capped)
                printf("  TURN CAP: %d fight(s) ended there (turn-limit losses)", capped);
            printf("\n");
        }
    }
    if (!json)
        printf("%ld decisions, %llu simulations, %.1f s%s\n", decisions, (unsigned long long)sims,
               seconds, a->n_policies == 2 ? " (both policies)" : "");
    free(hp);
    free(fw);
}

/* --vs: the paired difference (first policy minus second) on the same
 * fights: HP lost with a normal 95% interval, and the discordant wins. */
static void report_paired(const arena *a, int json) {
    const fight_result *r0 = a->results, *r1 = a->results + a->n_items;
    double *d = calloc((size_t)a->n_items + 1, sizeof(double));
    if (!d)
        return;
    char side[2][160];
    for (int p = 0; p < 2; p++) {
        int pol = a->policies[p];
        char ev[64];
        evaluator_name(a, p, ev, sizeof ev);
        if (pol == POLICY_SEARCH || pol == POLICY_CLAIRVOYANT)
            snprintf(side[p], sizeof side[p], "%s[%s, %d sims]", policy_names[pol], ev,
                     a->cfgs[p].simulations);
        else if (pol == POLICY_NET)
            snprintf(side[p], sizeof side[p], "%s[%s]", policy_names[pol], ev + 4);
        else
            snprintf(side[p], sizeof side[p], "%s", policy_names[pol]);
    }
    if (!json)
        printf("paired: %s minus %s on the same fights\n%-9s %7s  %-28s %s\n", side[0], side[1],
               "class", "n", "HP lost difference [95% CI]", "wins only first / only second");
    for (int c = 0; c <= 4; c++) {
        int n = 0, only0 = 0, only1 = 0;
        for (int i = 0; i < a->n_items; i++) {
            if (a->item_class[i] != c)
                continue;
            /* fights: HP lost; gauntlets: fights won (HP lost is 80 for
             * every gauntlet that ends at its boss) */
            d[n++] = c < 4 ? (double)(r0[i].hp_start - r0[i].hp_end) -
                                 (double)(r1[i].hp_start - r1[i].hp_end)
                           : (double)(r0[i].fights_won - r1[i].fights_won);
            only0 += r0[i].won && !r1[i].won;
            only1 += r1[i].won && !r0[i].won;
        }
        if (n == 0)
            continue;
        double m, h;
        mean_ci(d, n, &m, &h);
        const char *cname = c < 4 ? class_names[c] : "gauntlet";
        const char *what = c < 4 ? "hp_lost_diff" : "fights_won_diff";
        if (json)
            printf("{\"paired\":\"%s-%s\",\"class\":\"%s\",\"n\":%d,\"%s\":%.3f,"
                   "\"%s_half\":%.3f,\"wins_only_first\":%d,\"wins_only_second\":%d}\n",
                   policy_names[a->policies[0]], policy_names[a->policies[1]], cname, n, what, m,
                   what, h, only0, only1);
        else {
            char buf[64];
            snprintf(buf, sizeof buf, "%+.2f [%+.2f, %+.2f]%s", m, m - h, m + h,
                     c < 4 ? "" : " fights");
            printf("%-9s %7d  %-28s %d / %d\n", cname, n, buf, only0, only1);
        }
    }
    free(d);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: sf-arena --policy random|greedy|search|clairvoyant|net [--vs POLICY]\n"
            "                [--fights N] [--gauntlets N] [--classes weak,strong,elite,boss]\n"
            "                [--encounter NAME] [--seed S] [--start starter|rewards]\n"
            "                [--picker random|greedy]\n"
            "                [--jobs J] [--threads T] [--json] [search flags] [fight flags]\n"
            "Plays N fights per encounter class (default 200) and G gauntlets (default 0);\n"
            "--encounter: play only that encounter, N times (sf-play --list names them).\n"
            "--jobs: fights played at once; --threads: threads per search (1 with a\n"
            "network: use --jobs).\n"
            "--policy net: a network's raw policy (--model). --vs POLICY: a second side on\n"
            "the same fights; --vs-FLAG applies a search flag to it only (--vs-eval rollout,\n"
            "--vs-sims 100, --vs-model B).\n\n%s\n%s\n%s",
            sf_cli_fight_usage, sf_cli_start_usage, sf_cli_search_usage);
}

/* What the command line asks for beyond the arena's own fields. */
typedef struct arena_args {
    long fights, gauntlets, jobs, threads;
    int classes[4], classes_given, json;
    int vs; /* --vs POLICY; -2 when not given */
    sf_cli_flags shared;
    struct {
        char name[64];
        const char *value;
    } vs_flags[32]; /* --vs-FLAG, in order, for the second side only */
    int n_vs_flags;
} arena_args;

/* Exit codes of main; CONTINUE: the step passed, go on. */
enum { CONTINUE = -1, RC_OK = 0, RC_FAILED = 1, RC_USAGE = 2 };

/* --policy / --vs: the policy named `value`. */
static int parse_policy(const char *flag, const char *value, int *out) {
    for (int p = 0; p < POLICY_COUNT; p++)
        if (strcmp(value, policy_names[p]) == 0) {
            *out = p;
            return CONTINUE;
        }
    fprintf(stderr, "%s: --%s: expected random, greedy, search, clairvoyant or net\n", prog, flag);
    return RC_USAGE;
}

/* --classes weak,strong,...: the classes to play. */
static int parse_classes(const char *value, arena_args *o) {
    o->classes_given = 1;
    memset(o->classes, 0, sizeof o->classes);
    char buf[256];
    if (sf_cli_list(prog, "classes", value, sizeof buf) < 0)
        return RC_USAGE;
    snprintf(buf, sizeof buf, "%s", value);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = -1;
        for (int c = 0; c < 4; c++)
            if (strcmp(t, class_names[c]) == 0)
                k = c;
        if (k < 0) {
            fprintf(stderr, "%s: --classes: unknown class '%s'\n", prog, t);
            return RC_USAGE;
        }
        o->classes[k] = 1;
    }
    return CONTINUE;
}

/* --vs-FLAG: a search or network flag for the second side only, checked
 * now and applied after the shared ones (kept in order for the replay). */
static int note_vs_flag(const arena *a, const char *name, const char *value, arena_args *o) {
    if (o->n_vs_flags == (int)(sizeof o->vs_flags / sizeof o->vs_flags[0])) {
        fprintf(stderr, "%s: too many --vs- flags\n", prog);
        return RC_USAGE;
    }
    sf_search_config probe = a->cfg;
    sf_cli_net nprobe = {0};
    int rc = sf_cli_search_flag(prog, name + 3, value, &probe);
    if (rc == 0)
        rc = sf_cli_net_flag(prog, name + 3, value, &nprobe);
    if (rc < 0)
        return RC_USAGE;
    if (rc == 0) {
        fprintf(stderr, "%s: --%s: '--%s' is not a search flag\n", prog, name, name + 3);
        return RC_USAGE;
    }
    snprintf(o->vs_flags[o->n_vs_flags].name, sizeof o->vs_flags[0].name, "%s", name + 3);
    o->vs_flags[o->n_vs_flags++].value = value;
    return CONTINUE;
}

/* One of sf-arena's own flags. */
static int parse_own_flag(const char *name, const char *value, arena *a, arena_args *o) {
    if (strcmp(name, "help") == 0) {
        usage(stdout);
        return RC_OK;
    }
    if (strcmp(name, "json") == 0) {
        o->json = 1;
        return CONTINUE;
    }
    if (strcmp(name, "policy") == 0)
        return parse_policy(name, value, &a->policy);
    if (strcmp(name, "vs") == 0)
        return parse_policy(name, value, &o->vs);
    if (strcmp(name, "classes") == 0)
        return parse_classes(value, o);
    if (strcmp(name, "seed") == 0)
        return sf_cli_u64(prog, name, value, &a->seed) < 0 ? RC_USAGE : CONTINUE;
    static const struct {
        const char *name;
        long lo, hi;
        size_t field;
    } counts[] = {
        {"fights", 0, 1000000, offsetof(arena_args, fights)},
        {"gauntlets", 0, 1000000, offsetof(arena_args, gauntlets)},
        {"jobs", 1, 256, offsetof(arena_args, jobs)},
        {"threads", 1, SF_SEARCH_MAX_TREES, offsetof(arena_args, threads)},
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (strcmp(name, counts[i].name) == 0)
            return sf_cli_int(prog, name, value, counts[i].lo, counts[i].hi,
                              (long *)(void *)((char *)o + counts[i].field)) < 0
                       ? RC_USAGE
                       : CONTINUE;
    fprintf(stderr, "%s: unknown flag '--%s'\n", prog, name);
    usage(stderr);
    return RC_USAGE;
}

/* Step 1: the command line, into `a` (the first side) and `o`. */
static int parse_args(int argc, char **argv, arena *a, arena_args *o) {
    for (int i = 1; i < argc; i++) {
        char name[64];
        const char *value;
        if (sf_cli_next_flag(prog, argc, argv, &i, name, &value) < 0)
            return RC_USAGE;
        if (strncmp(name, "vs-", 3) == 0) {
            int rc = note_vs_flag(a, name, value, o);
            if (rc != CONTINUE)
                return rc;
            continue;
        }
        int rc = sf_cli_shared_flag(prog, name, value, &o->shared);
        if (rc < 0)
            return RC_USAGE;
        if (rc == 1)
            continue;
        if ((rc = parse_own_flag(name, value, a, o)) != CONTINUE)
            return rc;
    }
    return CONTINUE;
}

/* Step 2: the rules between flags that need no side set up. */
static int check_args(arena *a, const arena_args *o) {
    if (a->policy < 0) {
        fprintf(stderr, "%s: --policy is required\n", prog);
        usage(stderr);
        return RC_USAGE;
    }
    /* the start rules (a player flag with --start rewards, --picker
     * without it), then the one of gauntlets */
    if (sf_cli_start_check(prog, &o->shared) < 0)
        return RC_USAGE;
    if (a->start.start == SF_START_REWARDS && o->gauntlets > 0) {
        fprintf(stderr,
                "%s: --start rewards has no effect on gauntlets (they start from the "
                "starter deck); drop --gauntlets or --start\n",
                prog);
        return RC_USAGE;
    }
    a->start.ascension = a->spec.ascension;
    if (o->n_vs_flags > 0 && o->vs < 0) {
        fprintf(stderr, "%s: --vs-%s needs --vs POLICY\n", prog, o->vs_flags[0].name);
        return RC_USAGE;
    }
    return CONTINUE;
}

/* Step 3a: the second side's search: the first side's, then --vs-FLAGs.
 * Returns whether --vs-leaf-mix was given. */
static int configure_vs_side(arena *a, const arena_args *o) {
    a->cfgs[1] = a->cfg;
    a->cfgs[1].root = SF_ROOT_BELIEF; /* --clairvoyant turns the first side only */
    a->nets[1] = a->nets[0];
    int vs_mix_given = 0;
    for (int k = 0; k < o->n_vs_flags; k++) {
        vs_mix_given |= !strcmp(o->vs_flags[k].name, "leaf-mix");
        if (sf_cli_search_flag(prog, o->vs_flags[k].name, o->vs_flags[k].value, &a->cfgs[1]) == 0)
            sf_cli_net_flag(prog, o->vs_flags[k].name, o->vs_flags[k].value, &a->nets[1]);
    }
    return vs_mix_given;
}

/* Step 3b: side p's policy and search, checked; *uses_net: whether it
 * plays a network. */
static int check_side(arena *a, int p, int vs_mix_given, long threads, int *uses_net) {
    sf_err e = {0};
    if (a->policies[p] == POLICY_SEARCH && a->cfgs[p].root == SF_ROOT_CLAIRVOYANT)
        a->policies[p] = POLICY_CLAIRVOYANT;
    a->cfgs[p].root = a->policies[p] == POLICY_CLAIRVOYANT ? SF_ROOT_CLAIRVOYANT : SF_ROOT_BELIEF;
    if (sf_search_config_validate(&a->cfgs[p], &e) < 0) {
        fprintf(stderr, "%s: %s%s\n", prog, p ? "--vs side: " : "", e.msg);
        return RC_USAGE;
    }
    int searches = a->policies[p] == POLICY_SEARCH || a->policies[p] == POLICY_CLAIRVOYANT;
    *uses_net =
        a->policies[p] == POLICY_NET || (searches && a->cfgs[p].evaluator == SF_EVAL_EXTERNAL);
    if (!searches && a->cfgs[p].evaluator == SF_EVAL_EXTERNAL)
        a->cfgs[p].evaluator = SF_EVAL_ROLLOUT; /* only a search has leaves */
    int mixes = searches && a->cfgs[p].evaluator == SF_EVAL_EXTERNAL;
    if (p == 1 && !vs_mix_given && !mixes)
        a->cfgs[p].leaf_mix = 0.0; /* inherited by a side without a network: unused */
    if (a->cfgs[p].leaf_mix > 0.0 && !mixes) {
        fprintf(stderr, "%s: %s--%sleaf-mix mixes a network's leaf values: it needs --%seval net\n",
                prog, p ? "the --vs side's " : "", p ? "vs-" : "", p ? "vs-" : "");
        return RC_USAGE;
    }
    if (*uses_net && !a->nets[p].model[0]) {
        fprintf(stderr, "%s: %s%s needs --%smodel PATH[@SHA256]\n", prog,
                p ? "the --vs side's " : "",
                a->policies[p] == POLICY_NET ? "--policy net" : "--eval net", p ? "vs-" : "");
        return RC_USAGE;
    }
    if (*uses_net && threads > 1) {
        fprintf(stderr,
                "%s: --threads %ld: a network is evaluated in each job's own thread; use "
                "--jobs for parallel fights\n",
                prog, threads);
        return RC_USAGE;
    }
    return CONTINUE;
}

/* Step 3: both sides' policies and searches, checked, and their networks
 * opened. */
static int set_up_sides(arena *a, const arena_args *o) {
    a->n_policies = o->vs >= 0 ? 2 : 1;
    a->policies[0] = a->policy;
    a->policies[1] = o->vs;
    int vs_mix_given = configure_vs_side(a, o);
    a->cfgs[0] = a->cfg;
    a->threads = (int)o->threads;
    int uses_net[2] = {0, 0};
    for (int p = 0; p < a->n_policies; p++) {
        int rc = check_side(a, p, vs_mix_given, o->threads, &uses_net[p]);
        if (rc != CONTINUE)
            return rc;
    }
    /* A --model no side plays with is a mistake (the second side inherits
     * the first's, so an unused inherited one is not). */
    int vs_net_given = a->n_policies == 2 && (strcmp(a->nets[1].model, a->nets[0].model) ||
                                              strcmp(a->nets[1].endpoint, a->nets[0].endpoint));
    if ((a->nets[0].model[0] || a->nets[0].endpoint[0]) && !uses_net[0] && !uses_net[1]) {
        fprintf(stderr, "%s: --%s has no effect without --eval net or --policy net\n", prog,
                a->nets[0].model[0] ? "model" : "evald");
        return RC_USAGE;
    }
    if (vs_net_given && !uses_net[1]) {
        fprintf(stderr, "%s: --vs-model/--vs-evald: the --vs side plays no network\n", prog);
        return RC_USAGE;
    }
    sf_err e = {0};
    for (int p = 0; p < a->n_policies; p++)
        if (uses_net[p] &&
            sf_netsearch_open(a->nets[p].model, a->nets[p].endpoint[0] ? a->nets[p].endpoint : NULL,
                              &a->models[p], &e) < 0) {
            fprintf(stderr, "%s: %s\n", prog, e.msg);
            return RC_USAGE;
        }
    return CONTINUE;
}

/* Step 4: the encounter pools and the work items: `fights` fights of each
 * chosen class (only --encounter's, when given), then the gauntlets. */
static int choose_items(arena *a, arena_args *o) {
    int encounter_given = o->shared.encounter_given;
    for (int enc = 0; enc < sf_encounter_count(); enc++) {
        int pool = sf_encounter_pool(enc);
        if (pool >= 0 && pool < 4 && (!encounter_given || enc == a->spec.encounter))
            a->pool_enc[pool][a->pool_n[pool]++] = enc;
    }
    if (encounter_given) {
        /* --encounter NAME: every fight of its class is that encounter */
        int pool = sf_encounter_pool(a->spec.encounter);
        if (o->classes_given && !o->classes[pool]) {
            fprintf(stderr, "%s: --encounter %s is a %s encounter, which --classes leaves out\n",
                    prog, sf_encounter_name(a->spec.encounter), class_names[pool]);
            return RC_USAGE;
        }
        if (o->gauntlets > 0) {
            fprintf(stderr,
                    "%s: --encounter has no effect on gauntlets (the seed draws their "
                    "fights); drop --gauntlets or --encounter\n",
                    prog);
            return RC_USAGE;
        }
        memset(o->classes, 0, sizeof o->classes);
        o->classes[pool] = 1;
    }
    int n_items = 0;
    for (int c = 0; c < 4; c++)
        if (o->classes[c] && a->pool_n[c])
            n_items += (int)o->fights;
    n_items += (int)o->gauntlets;
    if (n_items == 0) {
        fprintf(stderr,
                "%s: nothing to play (no fights in the chosen classes and no "
                "gauntlets)\n",
                prog);
        return RC_USAGE;
    }
    a->n_items = n_items;
    a->item_class = calloc((size_t)n_items + 1, sizeof(int));
    a->item_index = calloc((size_t)n_items + 1, sizeof(int));
    a->results = calloc((size_t)n_items * 2 + 1, sizeof(fight_result));
    if (!a->item_class || !a->item_index || !a->results) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return RC_FAILED;
    }
    int k = 0;
    for (int c = 0; c < 4; c++)
        if (o->classes[c] && a->pool_n[c])
            for (int i = 0; i < o->fights; i++, k++) {
                a->item_class[k] = c;
                a->item_index[k] = i;
            }
    for (int g = 0; g < o->gauntlets; g++, k++) {
        a->item_class[k] = 4;
        a->item_index[k] = g;
    }
    return CONTINUE;
}

/* Step 5: play every item on `jobs` threads (this one included); returns
 * the seconds it took. */
static double play_items(arena *a, long jobs) {
    uint64_t t0 = sf_now_ns();
    pthread_t tid[256];
    int started = 0;
    for (int j = 1; j < jobs; j++)
        if (pthread_create(&tid[started], NULL, worker, a) == 0)
            started++;
    worker(a);
    for (int j = 0; j < started; j++)
        pthread_join(tid[j], NULL);
    return (double)(sf_now_ns() - t0) * 1e-9;
}

/* Step 6: the report of each side, and the paired one of two; returns
 * RC_FAILED when a fight failed. */
static int report_all(const arena *a, int json, double seconds) {
    int failed = 0;
    for (int i = 0; i < a->n_items * a->n_policies; i++)
        failed |= a->results[i].error;
    for (int p = 0; p < a->n_policies; p++)
        report(a, p, json, seconds);
    if (a->n_policies == 2)
        report_paired(a, json);
    if (failed) {
        fprintf(stderr, "%s: some fights failed\n", prog);
        return RC_FAILED;
    }
    return RC_OK;
}

int main(int argc, char **argv) {
    arena a;
    memset(&a, 0, sizeof a);
    a.policy = -1;
    sf_fight_spec_default(&a.spec);
    sf_start_opts_default(&a.start);
    sf_search_config_default(&a.cfg);
    a.seed = 1;
    a.threads = 1;
    arena_args o = {.fights = 200, .gauntlets = 0, .jobs = 1, .threads = 1};
    o.vs = -2;
    for (int c = 0; c < 4; c++)
        o.classes[c] = 1;
    o.shared = (sf_cli_flags){.cfg = &a.cfg, .net = &a.nets[0], .start = &a.start, .spec = &a.spec};
    int rc = parse_args(argc, argv, &a, &o);
    if (rc == CONTINUE)
        rc = check_args(&a, &o);
    if (rc == CONTINUE)
        rc = set_up_sides(&a, &o);
    if (rc == CONTINUE)
        rc = choose_items(&a, &o);
    if (rc == CONTINUE) {
        pthread_mutex_init(&a.lock, NULL);
        double seconds = play_items(&a, o.jobs);
        rc = report_all(&a, o.json, seconds);
        pthread_mutex_destroy(&a.lock);
    }
    free(a.item_class);
    free(a.item_index);
    free(a.results);
    sf_netsearch_close(a.models[0]);
    sf_netsearch_close(a.models[1]);
    return rc;
}
