/* bench_search.c — search speed on the real engine: simulations per second
 * on one thread with the rollout evaluator from the opening of each Act-1
 * boss fight (starter deck, 8,000 simulations per decision), the latency of
 * one 8,000-simulation decision with 8 trees on 1 and 2 threads, and the
 * memory of such a search. One JSON line per figure (docs/benchmarks.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "search/search.h"

#define RUNS 5

static double mean(const double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s / n;
}

static void emit(const char *name, const double *v, int n, const char *unit) {
    double tmp[64];
    memcpy(tmp, v, sizeof(double) * (size_t)n);
    printf("{\"bench\":\"search.%s\",\"value\":%.1f,\"unit\":\"%s\",\"n\":%d,\"median\":%.1f}\n",
           name, mean(v, n), unit, n, median(tmp, n));
}

/* One decision at the opening of `encounter`; returns seconds. */
static double one(sf_search *s, const char *encounter, uint64_t seed, int threads,
                  sf_search_result *r) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    spec.encounter = sf_encounter_lookup(encounter);
    spec.seed = seed;
    sf_state st;
    sf_err e = {0};
    if (sf_engine_init(&st, &spec, &e) < 0) {
        fprintf(stderr, "bench: %s\n", e.msg);
        exit(1);
    }
    uint64_t t0 = sf_now_ns();
    if (sf_search_begin(s, &st, seed, 0, &e) < 0 || sf_search_run(s, threads, NULL, NULL, &e) < 0 ||
        sf_search_result_get(s, r, &e) < 0) {
        fprintf(stderr, "bench: %s\n", e.msg);
        exit(1);
    }
    return (double)(sf_now_ns() - t0) * 1e-9;
}

static sf_search *make(int sims, int trees, int stop) {
    sf_search_config c;
    sf_search_config_default(&c);
    c.simulations = sims;
    c.trees = trees;
    c.stop_at_transposition = stop;
    sf_search *s = NULL;
    sf_err e = {0};
    if (sf_search_create(&c, &s, &e) < 0) {
        fprintf(stderr, "bench: %s\n", e.msg);
        exit(1);
    }
    return s;
}

int main(void) {
    static const char *const bosses[] = {"The Guardian", "Hexaghost", "Slime Boss"};
    static const char *const keys[] = {"the_guardian", "hexaghost", "slime_boss"};
    const int sims = 8000;
    sf_search_result r;
    double all_sims[3 * RUNS], all_evals[3 * RUNS];
    int na = 0;

    sf_search *s1 = make(sims, 1, 1);
    for (int b = 0; b < 3; b++) {
        double sps[RUNS], eps[RUNS];
        for (int i = 0; i < RUNS; i++) {
            double t = one(s1, bosses[b], 100 + (uint64_t)i, 1, &r);
            sps[i] = (double)r.simulations / t;
            eps[i] = (double)r.evaluations / t;
            all_sims[na] = sps[i];
            all_evals[na++] = eps[i];
        }
        char name[96];
        snprintf(name, sizeof name, "sims_per_s_1thread.%s", keys[b]);
        emit(name, sps, RUNS, "simulations/s");
        snprintf(name, sizeof name, "evals_per_s_1thread.%s", keys[b]);
        emit(name, eps, RUNS, "evaluations/s");
    }
    emit("sims_per_s_1thread.bosses", all_sims, na, "simulations/s");
    emit("evals_per_s_1thread.bosses", all_evals, na, "evaluations/s");
    double mem = (double)sf_search_memory(s1);
    emit("memory_8000sims_1tree", &mem, 1, "bytes");
    sf_search_destroy(s1);

    /* Without the transposition stop every simulation descends to a leaf. */
    sf_search *s0 = make(sims, 1, 0);
    na = 0;
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < RUNS; i++) {
            double t = one(s0, bosses[b], 100 + (uint64_t)i, 1, &r);
            all_sims[na++] = (double)r.simulations / t;
        }
    emit("sims_per_s_1thread_no_stop.bosses", all_sims, na, "simulations/s");
    sf_search_destroy(s0);

    /* Latency of one decision: 8,000 simulations over 8 root-parallel trees
     * (threads take the next tree as they free up), 1 vs 2 threads. */
    sf_search *s2 = make(sims, 8, 1);
    double lat1[3 * RUNS], lat2[3 * RUNS];
    na = 0;
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < RUNS; i++) {
            lat1[na] = 1e3 * one(s2, bosses[b], 200 + (uint64_t)i, 1, &r);
            lat2[na++] = 1e3 * one(s2, bosses[b], 200 + (uint64_t)i, 2, &r);
        }
    double speedup[3 * RUNS];
    for (int i = 0; i < na; i++)
        speedup[i] = lat1[i] / lat2[i];
    emit("latency_8000sims_8trees_1thread", lat1, na, "ms");
    emit("latency_8000sims_8trees_2threads", lat2, na, "ms");
    double m1 = median(lat1, na), m2 = median(lat2, na);
    printf("{\"bench\":\"search.speedup_2threads\",\"value\":%.3f,\"unit\":\"x\",\"n\":%d,"
           "\"median\":%.3f}\n",
           mean(speedup, na), na, m1 / m2);
    sf_search_destroy(s2);
    printf("search: 8000-simulation boss openings, rollout evaluator; 8 trees take %.1f ms on 1 "
           "thread and %.1f ms on 2 (x%.2f)\n",
           m1, m2, m1 / m2);
    return 0;
}
