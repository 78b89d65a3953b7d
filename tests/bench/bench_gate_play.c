/*
 * bench_gate_play.c — the gate on real play (docs/gate.md "The gate on real
 * play"): gate jobs played in-process (sf_job_run, as a worker plays them)
 * and their pairs decided by the same verdict the coordinator computes.
 *
 *   gate_play.false_promotion   G gates of equal-strength sides that are not
 *                               identical (the candidate is the champion
 *                               with another search salt), each on its own
 *                               seed range, at alpha = 0.05: the promotion
 *                               rate and its 95 % Clopper-Pearson interval
 *   gate_play.power             gates of a clearly stronger candidate (more
 *                               simulations): promotion rate, mean and
 *                               median pairs to the decision
 *   gate_play.widening          one gate on Act-1 gauntlets: end-of-turn
 *                               widening C = 5.79, alpha = 0.44 (candidate)
 *                               against C = 2, alpha = 0.25 (champion) at
 *                               equal simulations; whatever it says
 *   gate_play.throughput        fights per second per thread of a gate job
 *                               against a self-play job on the same fights
 *                               and budget (gate_over_selfplay, target >= 0.9)
 *
 * usage: bench-gate-play [--quick]   (--quick: a few gates, for a smoke run)
 * JSON lines {"bench": ...} first on each figure's line, then a human line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coordinator/coordinator.h"
#include "gate/stats.h"
#include "shard/shard.h"
#include "worker/worker.h"

#define THREADS 2

static char tmpdir[64];

static void parse(const char *yaml, sf_run_config *cfg) {
    sf_err e = {0};
    if (sf_config_parse(yaml, strlen(yaml), "bench", cfg, &e) != SF_OK) {
        fprintf(stderr, "bench-gate-play: %s\n", e.msg);
        exit(1);
    }
}

/* Play seeds [start, start + count) of `cfg` as one job; return the
 * shard's seconds and append its pairs (gate runs) to *pairs. */
static double play(const sf_run_config *cfg, uint64_t start, uint32_t count, sf_gate_pair *pairs,
                   size_t *n, uint64_t *fights) {
    char digest[65], path[128];
    sf_config_digest(cfg, digest);
    snprintf(path, sizeof path, "%s/job.shard", tmpdir);
    unlink(path);
    sf_job_spec spec = {1, start, count};
    sf_job_opts o = {.threads = THREADS, .fights_per_thread = 2, .worker_id = "bench"};
    sf_job_result res;
    sf_err e = {0};
    if (sf_job_run(cfg, digest, &spec, &o, path, &res, &e) != SF_OK) {
        fprintf(stderr, "bench-gate-play: %s\n", e.msg);
        exit(1);
    }
    *fights += res.fights;
    if (pairs) {
        sf_shard_reader *r = NULL;
        if (sf_shard_reader_open(path, &r, &e) != SF_OK) {
            fprintf(stderr, "bench-gate-play: %s\n", e.msg);
            exit(1);
        }
        const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
        for (size_t i = 0; i < m->n_gate_pairs; i++) {
            const Spirefleet__GatePair *p = m->gate_pairs[i];
            pairs[(*n)++] = (sf_gate_pair){.won_a = (uint8_t)p->won_candidate,
                                           .won_b = (uint8_t)p->won_champion,
                                           .y_a = p->y_candidate,
                                           .y_b = p->y_champion,
                                           .class_id = (int32_t)p->class_id};
        }
        sf_shard_reader_close(r);
    }
    unlink(path);
    return res.seconds;
}

/* The coordinator's rule for the config, without the bootstrap (the
 * benchmark reads decisions and pair counts only). */
static sf_gate_rule rule_of(const sf_run_config *cfg) {
    sf_gate_rule r;
    sf_coordinator_gate_rule(cfg, &r);
    r.boot_resamples = 0;
    return r;
}

/* One gate from seed `start`: played `chunk` seeds at a time until the
 * verdict stops changing (decided, or max_pairs). */
static sf_gate_verdict gate(const sf_run_config *cfg, uint64_t start, uint32_t chunk,
                            uint64_t *fights, double *seconds) {
    sf_gate_rule rule = rule_of(cfg);
    sf_gate_pair *pairs = calloc(rule.max_pairs + chunk, sizeof *pairs);
    size_t n = 0;
    sf_gate_verdict v;
    sf_err e = {0};
    for (;;) {
        *seconds += play(cfg, start + n, chunk, pairs, &n, fights);
        if (sf_gate_verdict_compute(pairs, n, &rule, NULL, 0, NULL, 0, &v, &e) != SF_OK) {
            fprintf(stderr, "bench-gate-play: %s\n", e.msg);
            exit(1);
        }
        if (v.decision != SF_GATE_CONTINUE)
            break;
    }
    free(pairs);
    return v;
}

/* z with Phi(z) = 1 - p for the small p of a gate (p in (0, 0.5)): the
 * inverse of erfc by Newton's method from a rational start. */
static double erfcinv_approx(double y) {
    double x = 0.0;
    for (int i = 0; i < 100; i++) {
        double f = erfc(x) - y, df = -2.0 / sqrt(M_PI) * exp(-x * x);
        double nx = x - f / df;
        if (fabs(nx - x) < 1e-15)
            return nx;
        x = nx;
    }
    return x;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void batch(const char *name, const char *yaml, int gates, uint64_t seed0, uint32_t chunk) {
    sf_run_config cfg;
    parse(yaml, &cfg);
    int promoted = 0, rejected = 0, inconclusive = 0;
    uint64_t *used = calloc((size_t)gates, sizeof *used), fights = 0;
    uint64_t seeds = (uint64_t)cfg.gate.max_pairs + chunk;
    double seconds = 0, sum = 0, discordant = 0, score = 0;
    for (int g = 0; g < gates; g++) {
        sf_gate_verdict v = gate(&cfg, seed0 + (uint64_t)g * seeds, chunk, &fights, &seconds);
        promoted += v.decision == SF_GATE_PROMOTE;
        rejected += v.decision == SF_GATE_REJECT;
        inconclusive += v.decision == SF_GATE_INCONCLUSIVE;
        used[g] = v.pairs_used;
        sum += (double)v.pairs_used;
        discordant += (double)(v.only_a + v.only_b) / (double)v.pairs_used;
        score += v.score_diff;
    }
    qsort(used, (size_t)gates, sizeof *used, cmp_u64);
    /* The fixed-size one-sided McNemar test with the same alpha and power
     * 1 - beta at Delta = delta1 and the observed discordance pi (normal
     * approximation, Connor 1987): n = ((z_a sqrt(pi) + z_b sqrt(pi -
     * delta1^2)) / delta1)^2. */
    double pi = discordant / gates, d1 = cfg.gate.delta1;
    double za = sqrt(2) * erfcinv_approx(2 * cfg.gate.alpha),
           zb = sqrt(2) * erfcinv_approx(2 * cfg.gate.beta);
    double fixed = pi > d1 * d1 ? pow((za * sqrt(pi) + zb * sqrt(pi - d1 * d1)) / d1, 2) : NAN;
    double lo, hi, rate = (double)promoted / gates;
    sf_err e = {0};
    sf_gate_clopper_pearson(promoted, gates, 0.95, &lo, &hi, &e);
    double median =
        gates % 2 ? (double)used[gates / 2] : 0.5 * (double)(used[gates / 2 - 1] + used[gates / 2]);
    printf("{\"bench\":\"gate_play.%s\",\"gates\":%d,\"promoted\":%d,\"rejected\":%d,"
           "\"inconclusive\":%d,\"promotion_rate\":%.4f,\"ci95\":[%.4f,%.4f],"
           "\"pairs_mean\":%.1f,\"pairs_median\":%.1f,\"discordance\":%.4f,\"score_diff\":%.4f,"
           "\"metric\":\"%s\","
           "\"alpha\":%g,\"beta\":%g,\"delta1\":%g,\"min_pairs\":%u,\"max_pairs\":%u,"
           "\"fixed_n_same_errors\":%.0f,\"fights\":%llu,\"fights_per_s\":%.1f}\n",
           name, gates, promoted, rejected, inconclusive, rate, lo, hi, sum / gates, median,
           discordant / gates, score / gates, cfg.gate.metric, cfg.gate.alpha, cfg.gate.beta,
           cfg.gate.delta1, cfg.gate.min_pairs, cfg.gate.max_pairs, fixed,
           (unsigned long long)fights, (double)fights / seconds);
    printf("# %s: %d gates, promoted %d (%.1f %% [%.1f, %.1f]), rejected %d, inconclusive %d; "
           "pairs mean %.0f, median %.0f (a fixed-size test with the same errors: %.0f); "
           "discordance %.3f, mean score difference %+.4f\n",
           name, gates, promoted, 100 * rate, 100 * lo, 100 * hi, rejected, inconclusive,
           sum / gates, median, fixed, discordant / gates, score / gates);
    fflush(stdout);
    free(used);
}

/* Fights per second per thread: a gate job (both sides at the budget)
 * against a self-play job on the same seeds. */
static void throughput(uint32_t seeds) {
    const char *common = "seeds: {start: 0, count: 1000, job_size: 1000}\n"
                         "play: {mode: fights, encounters: {weak: 1, strong: 1, elite: 1}}\n"
                         "search: {simulations: 200, trees: 2}\n";
    char y1[1024], y2[1024];
    snprintf(y1, sizeof y1, "run: {name: tp, seed: 3}\n%s", common);
    snprintf(y2, sizeof y2,
             "run: {name: tp, seed: 3, kind: gate}\n%s"
             "candidate: {salt: 1}\ngate: {min_pairs: 1, max_pairs: 1000}\n",
             common);
    sf_run_config sp, gt;
    parse(y1, &sp);
    parse(y2, &gt);
    uint64_t f_sp = 0, f_gt = 0;
    double s_sp = play(&sp, 0, seeds, NULL, &(size_t){0}, &f_sp);
    double s_gt = play(&gt, 0, seeds, NULL, &(size_t){0}, &f_gt);
    double r_sp = (double)f_sp / s_sp / THREADS, r_gt = (double)f_gt / s_gt / THREADS;
    printf("{\"bench\":\"gate_play.throughput\",\"selfplay_fights_per_s_thread\":%.2f,"
           "\"gate_fights_per_s_thread\":%.2f,\"gate_over_selfplay\":%.3f,\"seeds\":%u,"
           "\"simulations\":200}\n",
           r_sp, r_gt, r_gt / r_sp, seeds);
    printf("# throughput at 200 simulations: self-play %.2f fights/s/thread, gate %.2f "
           "(ratio %.3f)\n",
           r_sp, r_gt, r_gt / r_sp);
    fflush(stdout);
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sf-bench-gate-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("bench-gate-play: mkdtemp");
        return 1;
    }
    throughput(quick ? 12 : 60);
    /* equal strength, not identical: another salt; cheap sides */
    batch("false_promotion",
          "run: {name: fp, seed: 17, kind: gate}\n"
          "seeds: {start: 0, count: 100000000, job_size: 50}\n"
          "play: {mode: fights, encounters: {weak: 1, strong: 1, elite: 1, boss: 1}}\n"
          "search: {simulations: 3, trees: 1}\n"
          "candidate: {salt: 1}\n"
          "gate: {alpha: 0.05, beta: 0.05, delta1: 0.1, min_pairs: 50, max_pairs: 300}\n",
          quick ? 4 : 200, 1000000, 50);
    batch("power",
          "run: {name: pw, seed: 19, kind: gate}\n"
          "seeds: {start: 0, count: 100000000, job_size: 50}\n"
          "play: {mode: fights, encounters: {weak: 1, strong: 1, elite: 1, boss: 1}}\n"
          "search: {simulations: 10, trees: 1}\n"
          "candidate: {simulations: 100, trees: 2}\n"
          "gate: {alpha: 0.05, beta: 0.05, delta1: 0.05, min_pairs: 50, max_pairs: 2000}\n",
          quick ? 2 : 20, 50000000, 50);
    batch("power_1000",
          "run: {name: pk, seed: 29, kind: gate}\n"
          "seeds: {start: 0, count: 100000000, job_size: 50}\n"
          "play: {mode: fights, start: rewards, encounters: {elite: 1, boss: 1}}\n"
          "search: {simulations: 100, trees: 2}\n"
          "candidate: {simulations: 1000, trees: 4}\n"
          "gate: {alpha: 0.05, beta: 0.05, delta1: 0.05, min_pairs: 50, max_pairs: 2000}\n",
          quick ? 1 : 3, 70000000, 25);
    batch("widening",
          "run: {name: wd, seed: 23, kind: gate}\n"
          "seeds: {start: 0, count: 100000000, job_size: 10}\n"
          "play: {mode: gauntlet}\n"
          "search: {simulations: 100, trees: 2}\n"
          "champion: {widening_c: 2.0, widening_alpha: 0.25}\n"
          "candidate: {widening_c: 5.79, widening_alpha: 0.44}\n"
          "gate: {metric: score, alpha: 0.05, beta: 0.05, delta1: 0.02, min_pairs: 100, "
          "max_pairs: 400}\n",
          1, 90000000, quick ? 10 : 40);
    rmdir(tmpdir);
    return 0;
}
