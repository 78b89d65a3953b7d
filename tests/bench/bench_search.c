/* bench_search.c — search speed on the real engine, on positions whose
 * values vary.
 *
 *   bench-search [TINY_BUNDLE]     (meson: `make bench` passes the tiny bundle)
 *
 * Position sets (each deterministic):
 *   strong, elite     the opening of a strong / elite Act-1 fight from a
 *                     "rewards" start (the deck, relics, potions and HP an
 *                     Act-1 run reaches it with: play.start: rewards,
 *                     docs/starts.md), 10 game seeds each;
 *   midfight          strong and elite fights from rewards starts, played
 *                     3-12 decisions in by the engine's heuristic policy;
 *   boss_rewards      the boss fight from rewards starts;
 *   boss_starter      the three boss openings with the starter deck (where
 *                     every rollout loses: the figure kept from before, one
 *                     row).
 * Each set: one 8,000-simulation search per position, 1 tree, 1 thread,
 * heuristic-rollout evaluator: simulations/s, rollouts/s (leaf evaluations:
 * a simulation that stops at a transposition costs none) and the mean and
 * spread of the root values (values vary: not all 0). Root-parallel
 * scaling: the same 8,000 simulations over 8 trees on 1 and on 2 threads,
 * alternately per position, over the strong, elite, midfight and
 * boss_rewards sets (the ratio of the totals, and the median of the
 * per-position ratios); with the process CPU time of each side, whose ratio
 * (2 threads / 1 thread, the same work) is what the second thread costs in
 * contention (shared lines, locks, allocation): on a machine shared with
 * other jobs the wall-clock speedup measures the neighbours too, the CPU
 * time much less. With TINY_BUNDLE: the same positions searched with the
 * tiny network as the leaf evaluator in-process (cpu backend), 400
 * simulations: simulations/s and network evaluations/s on one thread.
 * One JSON line per figure (docs/benchmarks.md), then human lines. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "search/netsearch.h"
#include "search/search.h"

#define SIMS     8000
#define PER_SET  10
#define RUN_SEED 0x5eedull

typedef struct posset {
    const char *key, *what;
    sf_state st[PER_SET];
    uint64_t seed[PER_SET];
    int n;
} posset;

static void die(const char *what, const sf_err *e) {
    fprintf(stderr, "bench-search: %s: %s\n", what, e->msg);
    exit(1);
}

static void emit(const char *name, double v, const char *unit, int n, const char *what) {
    printf("{\"bench\":\"search.%s\",\"value\":%.6g,\"unit\":\"%s\",\"n\":%d,\"median\":%.6g}\n",
           name, v, unit, n, v);
    printf("  search.%s: %.6g %s (%s)\n", name, v, unit, what);
    fflush(stdout);
}

static int legal(const sf_state *s) {
    sf_action a[SF_MAX_ACTIONS];
    return sf_engine_enumerate(s, a, SF_MAX_ACTIONS);
}

/* The fight a rewards start reaches against a fight of `pool`. */
static void rewards_fight(int pool, uint64_t game_seed, sf_state *st) {
    sf_start_opts o;
    sf_start_opts_default(&o);
    o.start = SF_START_REWARDS;
    sf_fight_spec spec;
    sf_err e = {0};
    if (sf_start_sample(&o, RUN_SEED, game_seed, SF_START_CLASS(pool), &spec, NULL, &e) < 0)
        die("rewards start", &e);
    spec.seed = game_seed;
    if (sf_engine_init(st, &spec, &e) < 0)
        die("fight", &e);
}

/* Play `k` heuristic decisions (tau 1), then on to a position with a choice;
 * a fight that ends first is replaced by the next game seed's. */
static void midfight(int pool, uint64_t game_seed, int k, sf_state *st) {
    for (uint64_t g = game_seed;; g += 1000) {
        rewards_fight(pool, g, st);
        uint64_t rng = sf_mix64(g) | 1;
        for (int i = 0; !sf_engine_is_terminal(st) && (i < k || legal(st) < 2); i++) {
            sf_action a;
            if (sf_engine_heuristic_action(st, 1.0, &rng, &a) < 0 ||
                sf_engine_apply(st, a, NULL) < 0) {
                fprintf(stderr, "bench-search: the heuristic policy found no legal move\n");
                exit(1);
            }
        }
        if (!sf_engine_is_terminal(st))
            return;
    }
}

static void build_sets(posset *sets) {
    sets[0] = (posset){.key = "strong", .what = "strong-fight openings, rewards starts"};
    sets[1] = (posset){.key = "elite", .what = "elite-fight openings, rewards starts"};
    sets[2] = (posset){.key = "midfight", .what = "strong/elite fights 3-12 decisions in"};
    sets[3] = (posset){.key = "boss_rewards", .what = "boss-fight openings, rewards starts"};
    sets[4] = (posset){.key = "boss_starter", .what = "boss openings, starter deck"};
    for (int i = 0; i < PER_SET; i++) {
        uint64_t g = 1 + (uint64_t)i;
        rewards_fight(SF_POOL_STRONG, g, &sets[0].st[i]);
        rewards_fight(SF_POOL_ELITE, g, &sets[1].st[i]);
        midfight(i % 2 ? SF_POOL_ELITE : SF_POOL_STRONG, 100 + g, 3 + i, &sets[2].st[i]);
        rewards_fight(SF_POOL_BOSS, g, &sets[3].st[i]);
        for (int s = 0; s < 4; s++)
            sets[s].seed[i] = 500 + g;
    }
    static const char *const bosses[] = {"The Guardian", "Hexaghost", "Slime Boss"};
    for (int i = 0; i < 9; i++) {
        sf_fight_spec spec;
        sf_fight_spec_default(&spec);
        spec.encounter = sf_encounter_lookup(bosses[i % 3]);
        spec.seed = 100 + (uint64_t)(i / 3);
        sf_err e = {0};
        if (sf_engine_init(&sets[4].st[i], &spec, &e) < 0)
            die("boss fight", &e);
        sets[4].seed[i] = spec.seed;
    }
    sets[4].n = 9;
    for (int s = 0; s < 4; s++)
        sets[s].n = PER_SET;
}

static sf_search *make(int sims, int trees, int external) {
    sf_search_config c;
    sf_search_config_default(&c);
    c.simulations = sims;
    c.trees = trees;
    if (external) {
        c.evaluator = SF_EVAL_EXTERNAL;
        c.request_feat = 1;
    }
    sf_search *s = NULL;
    sf_err e = {0};
    if (sf_search_create(&c, &s, &e) < 0)
        die("search", &e);
    return s;
}

/* CPU seconds of every thread of this process so far. */
static double cpu_secs(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) {
        perror("bench-search: clock_gettime");
        exit(1);
    }
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One decision; returns seconds. */
static double one(sf_search *s, const sf_state *st, uint64_t seed, int threads,
                  sf_netsearch_session *net, sf_search_result *r) {
    sf_err e = {0};
    uint64_t t0 = sf_now_ns();
    if (sf_search_begin(s, st, seed, 0, &e) < 0 ||
        sf_search_run(s, threads, net ? sf_netsearch_eval_fn : NULL, net, &e) < 0 ||
        sf_search_result_get(s, r, &e) < 0)
        die("search run", &e);
    return (double)(sf_now_ns() - t0) * 1e-9;
}

typedef struct totals {
    double secs, sims, evals, stops, v_sum, v_sq;
    int n, nonzero;
} totals;

static void add(totals *t, double secs, const sf_search_result *r) {
    t->secs += secs;
    t->sims += (double)r->simulations;
    t->evals += (double)r->evaluations;
    t->stops += (double)r->transposition_stops;
    t->v_sum += r->root_search_value;
    t->v_sq += r->root_search_value * r->root_search_value;
    t->nonzero += r->root_search_value > 1e-9;
    t->n++;
}

static void report(const char *key, const char *what, const totals *t, const char *evals_name,
                   const char *evals_unit) {
    char name[96], human[200];
    snprintf(human, sizeof human, "%s: %d positions, 1 thread", what, t->n);
    snprintf(name, sizeof name, "sims_per_s_1thread.%s", key);
    emit(name, t->sims / t->secs, "simulations/s", t->n, human);
    snprintf(name, sizeof name, "%s.%s", evals_name, key);
    emit(name, t->evals / t->secs, evals_unit, t->n, human);
    snprintf(name, sizeof name, "transposition_stop_share.%s", key);
    emit(name, t->stops / t->sims, "fraction", t->n, "simulations that ended at a transposition");
    double mean = t->v_sum / t->n, var = t->v_sq / t->n - mean * mean;
    snprintf(name, sizeof name, "root_value_mean.%s", key);
    snprintf(human, sizeof human, "root search value: sd %.3f, %d of %d positions above 0",
             sqrt(var > 0 ? var : 0), t->nonzero, t->n);
    emit(name, mean, "value", t->n, human);
}

int main(int argc, char **argv) {
    static posset sets[5];
    build_sets(sets);
    sf_search_result r;

    /* rollouts, 1 tree, 1 thread */
    sf_search *s1 = make(SIMS, 1, 0);
    totals all = {0};
    for (int k = 0; k < 5; k++) {
        totals t = {0};
        for (int i = 0; i < sets[k].n; i++) {
            double secs = one(s1, &sets[k].st[i], sets[k].seed[i], 1, NULL, &r);
            add(&t, secs, &r);
            if (k < 4)
                add(&all, secs, &r);
        }
        report(sets[k].key, sets[k].what, &t, "rollouts_per_s_1thread", "rollouts/s");
    }
    report("varied", "strong, elite, midfight and boss_rewards together", &all,
           "rollouts_per_s_1thread", "rollouts/s");
    double mem = (double)sf_search_memory(s1);
    emit("memory_8000sims_1tree", mem, "bytes", 1, "one 8,000-simulation tree");
    sf_search_destroy(s1);

    /* root-parallel scaling: 8 trees, 1 then 2 threads, position by position */
    sf_search *s8 = make(SIMS, 8, 0);
    double t1 = 0, t2 = 0, ev1 = 0, ev2 = 0, c1 = 0, c2 = 0, per[4 * PER_SET];
    int np = 0;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < sets[k].n; i++, np++) {
            double c0 = cpu_secs();
            double a = one(s8, &sets[k].st[i], sets[k].seed[i], 1, NULL, &r);
            double cm = cpu_secs();
            ev1 += (double)r.evaluations;
            double b = one(s8, &sets[k].st[i], sets[k].seed[i], 2, NULL, &r);
            c2 += cpu_secs() - cm;
            c1 += cm - c0;
            ev2 += (double)r.evaluations;
            t1 += a;
            t2 += b;
            per[np] = a / b;
        }
    sf_search_destroy(s8);
    const char *sc = "8,000 simulations over 8 trees, the varied positions";
    emit("latency_8000sims_8trees_1thread.varied", 1e3 * t1 / np, "ms", np, sc);
    emit("latency_8000sims_8trees_2threads.varied", 1e3 * t2 / np, "ms", np, sc);
    emit("rollouts_per_s_per_thread_2threads.varied", ev2 / t2 / 2, "rollouts/s", np, sc);
    emit("speedup_2threads.varied", t1 / t2, "x", np, "total time on 1 thread / on 2");
    emit("speedup_2threads_median.varied", median(per, np), "x", np,
         "median over positions of time on 1 thread / on 2 (a burst of other load moves it less)");
    emit("cpu_time_ratio_2threads.varied", c2 / c1, "x", np,
         "process CPU time on 2 threads / on 1, the same searches (1: no contention cost)");
    (void)ev1;

    /* the tiny network as the leaf evaluator, in-process */
    if (argc > 1) {
        sf_netsearch *ns = NULL;
        sf_netsearch_session *ses = NULL;
        sf_err e = {0};
        if (sf_netsearch_open(argv[1], NULL, &ns, &e) < 0 ||
            sf_netsearch_session_open(ns, &ses, &e) < 0)
            die(argv[1], &e);
        sf_search *sn = make(400, 1, 1);
        totals t = {0};
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < 4; i++)
                add(&t, one(sn, &sets[k].st[i], sets[k].seed[i], 1, ses, &r), &r);
        report("net_tiny", "400 simulations, tiny network leaves (cpu, in-process)", &t,
               "net_evals_per_s_1thread", "evaluations/s");
        sf_search_destroy(sn);
        sf_netsearch_session_close(ses);
        sf_netsearch_close(ns);
    }
    return 0;
}
