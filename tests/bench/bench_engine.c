/*
 * bench_engine.c — engine speed and size.
 *
 * Random fights per second: the starter deck (5 Strike, 4 Defend, Bash,
 * Burning Blood, 80 HP), uniform random legal actions until the fight ends,
 * cycling through all 20 Act-1 encounters, fight setup (sf_engine_init)
 * included. Each figure is the median of R runs (default 5); the 2-thread
 * figure runs one independent stream of fights per thread (pthreads) and
 * reports both the total and the per-core rate.
 *
 * Also: ns per sf_engine_apply (replayed over recorded positions, minus the
 * cost of the state copy each replay needs), ns per random-play step
 * (enumerate + pick + apply), state bytes, state copies/s, identity
 * hashes/s and feat calls/s.
 *
 * Output: one JSON line per figure,
 *   {"bench":"engine.<name>","value":N,"unit":"...","n":runs,"median":N}
 * then a human line. Options: --fights N (per run and thread, default
 * 20000), --runs R (default 5), --positions N (default 4096), --fights-only
 * (the one-thread random fights alone, and the decisions and wins they
 * took: what tests/bench/bench_release.sh compares between two builds).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "common/common.h"
#include "engine/engine.h"

typedef struct opts {
    int fights, runs, positions, fights_only;
} opts;

static void clobber(void *p) {
    __asm__ volatile("" : : "g"(p) : "memory");
}

static void report(const char *name, const char *unit, double *v, int n, const char *what) {
    double lo = v[0], hi = v[0];
    for (int i = 1; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    double med = median(v, n);
    printf("{\"bench\":\"engine.%s\",\"value\":%.6g,\"unit\":\"%s\",\"n\":%d,\"median\":%.6g}\n",
           name, med, unit, n, med);
    printf("engine.%s: %.6g %s (%s; median of %d, min %.6g, max %.6g)\n", name, med, unit, what, n,
           lo, hi);
    fflush(stdout);
}

/* ---- random fights ------------------------------------------------------ */

typedef struct fight_job {
    uint64_t seed;
    int fights;
    long applies;
    long wins;
    int error;
} fight_job;

static void *run_fights(void *arg) {
    fight_job *job = arg;
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    int n_enc = sf_encounter_count();
    uint64_t r = sf_mix64(job->seed) | 1;
    for (int f = 0; f < job->fights; f++) {
        spec.encounter = f % n_enc;
        spec.seed = sf_seed_derive(job->seed, (uint64_t)f, 0, 0);
        sf_state s;
        if (sf_engine_init(&s, &spec, NULL) < 0) {
            job->error = 1;
            return NULL;
        }
        while (!sf_engine_is_terminal(&s)) {
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
            if (sf_engine_apply(&s, acts[xorshift(&r) % (uint64_t)n], NULL) < 0) {
                job->error = 1;
                return NULL;
            }
            job->applies++;
        }
        sf_outcome o;
        sf_engine_outcome(&s, &o);
        job->wins += o.won;
    }
    return NULL;
}

/* One run with `threads` threads of `fights` each; returns fights/s (all
 * threads together) and the steps taken. */
static double fights_run(int threads, int fights, uint64_t seed, long *steps, long *wins) {
    fight_job jobs[2];
    pthread_t tid[2];
    uint64_t t0 = sf_now_ns();
    for (int i = 0; i < threads; i++) {
        jobs[i] = (fight_job){sf_seed_derive(seed, (uint64_t)i, 1, 0), fights, 0, 0, 0};
        if (pthread_create(&tid[i], NULL, run_fights, &jobs[i]) != 0) {
            fprintf(stderr, "bench-engine: pthread_create failed\n");
            exit(1);
        }
    }
    *steps = *wins = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        if (jobs[i].error) {
            fprintf(stderr, "bench-engine: the engine refused a fight or an action\n");
            exit(1);
        }
        *steps += jobs[i].applies;
        *wins += jobs[i].wins;
    }
    double secs = (double)(sf_now_ns() - t0) / 1e9;
    return (double)threads * fights / secs;
}

/* ---- recorded positions ------------------------------------------------- */

typedef struct positions {
    sf_state *states;
    sf_action *action; /* the random action played from each */
    sf_action (*acts)[SF_MAX_ACTIONS];
    int *n_acts;
    int n;
} positions;

/* Sample every 3rd decision of random fights across all encounters. */
static void record(positions *p, int n) {
    p->states = aligned_alloc(64, sizeof(sf_state) * (size_t)n);
    p->action = malloc(sizeof(sf_action) * (size_t)n);
    p->acts = malloc(sizeof *p->acts * (size_t)n);
    p->n_acts = malloc(sizeof(int) * (size_t)n);
    if (!p->states || !p->action || !p->acts || !p->n_acts) {
        fprintf(stderr, "bench-engine: out of memory for %d positions\n", n);
        exit(1);
    }
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    uint64_t r = 0x5EED;
    int k = 0;
    for (int f = 0; k < n; f++) {
        spec.encounter = f % sf_encounter_count();
        spec.seed = sf_seed_derive(77, (uint64_t)f, 0, 0);
        sf_state s;
        sf_engine_init(&s, &spec, NULL);
        for (int step = 0; !sf_engine_is_terminal(&s) && k < n; step++) {
            sf_action acts[SF_MAX_ACTIONS];
            int na = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
            sf_action a = acts[xorshift(&r) % (uint64_t)na];
            if (step % 3 == 0) {
                p->states[k] = s;
                p->action[k] = a;
                memcpy(p->acts[k], acts, sizeof acts);
                p->n_acts[k] = na;
                k++;
            }
            sf_engine_apply(&s, a, NULL);
        }
    }
    p->n = k;
}

static double apply_ns_run(const positions *p) {
    sf_state tmp;
    uint64_t t0 = sf_now_ns();
    for (int i = 0; i < p->n; i++) {
        tmp = p->states[i];
        clobber(&tmp);
        sf_engine_apply(&tmp, p->action[i], NULL);
        clobber(&tmp);
    }
    uint64_t t1 = sf_now_ns();
    for (int i = 0; i < p->n; i++) {
        tmp = p->states[i];
        clobber(&tmp);
    }
    uint64_t t2 = sf_now_ns();
    double net = (double)(t1 - t0) - (double)(t2 - t1);
    return net / p->n;
}

static double copies_run(const positions *p, int reps) {
    enum { RING = 256 };
    static sf_state dst[8];
    int ring = p->n < RING ? p->n : RING;
    uint64_t t0 = sf_now_ns();
    for (int k = 0; k < reps; k++) {
        dst[k & 7] = p->states[k % ring];
        clobber(&dst[k & 7]);
    }
    return reps / ((double)(sf_now_ns() - t0) / 1e9);
}

static double identity_run(const positions *p, int reps) {
    uint64_t acc = 0;
    uint64_t t0 = sf_now_ns();
    for (int k = 0; k < reps; k++)
        acc ^= sf_engine_identity(&p->states[k % p->n]).lo;
    double secs = (double)(sf_now_ns() - t0) / 1e9;
    clobber(&acc);
    return reps / secs;
}

static double feat_run(const positions *p, int reps, sf_feat *f) {
    uint64_t t0 = sf_now_ns();
    for (int k = 0; k < reps; k++) {
        int i = k % p->n;
        sf_engine_feat(&p->states[i], p->acts[i], p->n_acts[i], f);
        clobber(f);
    }
    return reps / ((double)(sf_now_ns() - t0) / 1e9);
}

static int parse_opt(int argc, char **argv, opts *o) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fights-only")) {
            o->fights_only = 1;
            continue;
        }
        int *dst = !strcmp(argv[i], "--fights")      ? &o->fights
                   : !strcmp(argv[i], "--runs")      ? &o->runs
                   : !strcmp(argv[i], "--positions") ? &o->positions
                                                     : NULL;
        char *end = NULL;
        long v = dst && i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
        if (!dst || !end || *end || v < 1 || v > 100000000) {
            fprintf(stderr,
                    "usage: bench-engine [--fights N] [--runs R] [--positions N] "
                    "[--fights-only]\n"
                    "bench-engine: bad argument '%s'\n",
                    argv[i]);
            return -1;
        }
        *dst = (int)v;
        i++;
    }
    return 0;
}

int main(int argc, char **argv) {
    opts o = {20000, 5, 4096, 0};
    if (parse_opt(argc, argv, &o) < 0)
        return 2;
    enum { MAX_RUNS = 64 };
    if (o.runs > MAX_RUNS)
        o.runs = MAX_RUNS;
    double v[MAX_RUNS], w[MAX_RUNS], x[MAX_RUNS];
    long steps = 0, wins = 0, all_steps = 0, all_wins = 0;

    for (int r = 0; r < o.runs; r++) {
        uint64_t t0 = sf_now_ns();
        v[r] = fights_run(1, o.fights, 1000 + (uint64_t)r, &steps, &wins);
        w[r] = (double)(sf_now_ns() - t0) / (double)steps;
        all_steps += steps;
        all_wins += wins;
    }
    report("fights_per_s_1t", "fights/s", v, o.runs,
           "1 thread, starter deck, random play, all 20 encounters, setup included");
    if (o.fights_only) {
        /* the work done, so that two builds can be checked to play the
         * same fights */
        double d[1] = {(double)all_steps}, k[1] = {(double)all_wins};
        report("fights_1t_decisions", "decisions", d, 1, "decisions taken over every run");
        report("fights_1t_wins", "fights", k, 1, "fights won over every run");
        return 0;
    }
    report("step_ns", "ns", w, o.runs, "enumerate + random pick + apply, per decision");

    for (int r = 0; r < o.runs; r++) {
        v[r] = fights_run(2, o.fights, 2000 + (uint64_t)r, &steps, &wins);
        x[r] = v[r] / 2.0;
    }
    report("fights_per_s_2t", "fights/s", v, o.runs, "2 threads together");
    report("fights_per_s_per_core_2t", "fights/s", x, o.runs, "2 threads, per core");

    positions p;
    record(&p, o.positions);
    for (int r = 0; r < o.runs; r++)
        v[r] = apply_ns_run(&p);
    report("apply_ns", "ns", v, o.runs, "sf_engine_apply over recorded positions, copy excluded");

    double bytes[1] = {(double)sizeof(sf_state)};
    report("state_bytes", "bytes", bytes, 1, "sizeof(sf_state)");

    int reps = 2000000;
    for (int r = 0; r < o.runs; r++)
        v[r] = copies_run(&p, reps);
    report("copies_per_s", "copies/s", v, o.runs, "sf_state assignment, 256-state ring");

    for (int r = 0; r < o.runs; r++)
        v[r] = identity_run(&p, reps / 4);
    report("identity_per_s", "hashes/s", v, o.runs, "sf_engine_identity (XXH3-128)");

    sf_feat *f = malloc(sizeof *f);
    if (!f)
        return 1;
    for (int r = 0; r < o.runs; r++)
        v[r] = feat_run(&p, reps / 10, f);
    report("feat_per_s", "calls/s", v, o.runs, "sf_engine_feat with every legal action queried");
    free(f);
    free(p.states);
    free(p.action);
    free(p.acts);
    free(p.n_acts);
    return 0;
}
