/*
 * estimate.c — `sf-fleet check --estimate` (estimate.h): counts from the
 * config, rates measured on a real run or by a short timing run.
 */
#include "sf-fleet/estimate.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coordinator/coordinator.h"
#include "worker/worker.h"

/* Measured on `sf-fleet run` of configs/local.yaml (240 fights, 1000
 * simulations, rollout evaluator, 2 workers x 1 thread, built as build/ is:
 * -O2, not the release build's -O3 and profile): the sum over its 12
 * shards' manifests (`sf-shard stat SHARD --json`) of decisions (3675),
 * records (3214: every searched decision; labels.unsearched drop) and
 * simulations (3,214,000: 1000 a searched decision); the run's CPU time
 * from `/usr/bin/time -v` (user + system, workers included: 17.04 s); and
 * the shards' bytes (`du -sb shards`: 1,407,400). docs/operator.md
 * "Estimating a run" has the commands. */
#define MEASURED_DECISIONS_PER_FIGHT   (3675.0 / 240)      /* 15.31 */
#define MEASURED_SEARCHED_PER_FIGHT    (3214.0 / 240)      /* 13.39 */
#define MEASURED_CPU_S_PER_SIM         (17.04 / 3214000.0) /* 5.3 us */
#define MEASURED_SHARD_BYTES_PER_LABEL (1407400.0 / 3214)  /* 438 */

void sf_estimate_measured(sf_estimate_rates *r) {
    memset(r, 0, sizeof *r);
    r->fights_per_seed = 1;
    r->decisions_per_fight = MEASURED_DECISIONS_PER_FIGHT;
    r->searched_per_fight = MEASURED_SEARCHED_PER_FIGHT;
    r->cpu_s_per_sim = MEASURED_CPU_S_PER_SIM;
    r->shard_bytes_per_label = MEASURED_SHARD_BYTES_PER_LABEL;
    snprintf(r->source, sizeof r->source,
             "measured on configs/local.yaml (fights, rollout; docs/operator.md \"Estimating a "
             "run\")");
}

/* This process's user and system time so far, in seconds. */
static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int sf_estimate_calibrate(const sf_run_config *cfg, uint32_t seeds, const char *scratch_dir,
                          sf_estimate_rates *r, sf_err *err) {
    if (strcmp(cfg->kind, "selfplay") || sf_job_side_external(cfg, -1))
        return sf_err_set(err, SF_EUNSUPPORTED,
                          "it plays a job here, which needs a self-play run with the "
                          "rollout evaluator; time a network run with a short real run instead");
    char digest[65];
    int rc = sf_config_digest(cfg, digest);
    if (rc < 0)
        return sf_err_set(err, rc, "cannot compute the config digest");
    if (seeds > cfg->seed_count)
        seeds = (uint32_t)cfg->seed_count;
    char path[SF_CFG_PATH + 64];
    snprintf(path, sizeof path, "%s/sf-estimate-%d.shard", scratch_dir, (int)getpid());
    unlink(path);
    sf_job_spec job = {.job_id = 1, .seed_start = cfg->seed_start, .seed_count = seeds};
    sf_job_opts o = {.threads = 1, .fights_per_thread = 1, .worker_id = "estimate"};
    sf_job_result res;
    /* CPU time, not the job's wall time: on a shared machine the wall time
     * counts the others' work too */
    double cpu0 = cpu_seconds();
    rc = sf_job_run(cfg, digest, &job, &o, path, &res, err);
    double cpu = cpu_seconds() - cpu0;
    if (rc < 0)
        return rc;
    struct stat st;
    int got = stat(path, &st);
    unlink(path);
    if (got != 0)
        return sf_err_set(err, SF_EIO, "%s: %s", path, strerror(errno));
    if (res.fights == 0 || res.simulations == 0)
        return sf_err_set(err, SF_ESTATE, "the timing run played no simulation");
    memset(r, 0, sizeof *r);
    r->calibrated = 1;
    r->fights_per_seed = (double)res.fights / seeds;
    r->decisions_per_fight = (double)res.decisions / (double)res.fights;
    r->searched_per_fight = (double)res.searched / (double)res.fights;
    r->cpu_s_per_sim = cpu / (double)res.simulations;
    r->shard_bytes_per_label =
        res.records ? (double)st.st_size / (double)res.records : (double)st.st_size;
    snprintf(r->source, sizeof r->source,
             "calibrated here: %u seeds, %llu fights, %llu simulations in %.1f CPU seconds", seeds,
             (unsigned long long)res.fights, (unsigned long long)res.simulations, cpu);
    return SF_OK;
}

static void warn(sf_estimate *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(sf_estimate *e, const char *fmt, ...) {
    if (e->n_warnings >= SF_ESTIMATE_MAX_WARNINGS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->warnings[e->n_warnings++], sizeof e->warnings[0], fmt, ap);
    va_end(ap);
}

static void note(sf_estimate *e, const char *text) {
    if (e->n_notes < SF_ESTIMATE_MAX_WARNINGS)
        snprintf(e->notes[e->n_notes++], sizeof e->notes[0], "%s", text);
}

/* Where the rates do not fit the config. */
static void notes_for(const sf_run_config *cfg, const sf_estimate_rates *r, sf_estimate *e) {
    if (!strcmp(cfg->kind, "gate"))
        note(e, "a gate run: fights are at most 2 a seed (the test may decide sooner), no labels; "
                "simulations count search.simulations, not the gate sides'");
    if (!r->calibrated && !strcmp(cfg->play.mode, "gauntlet"))
        note(e, "play.mode gauntlet: the measured rates are of single fights (one a seed); use "
                "--calibrate for a gauntlet's fights");
    if (sf_job_side_external(cfg, -1))
        note(e, "search.evaluator net: the CPU rate is the rollout evaluator's; a network's leaves "
                "cost what its gpu-evald takes: time a short real run");
}

void sf_estimate_compute(const sf_run_config *cfg, const sf_estimate_rates *r, sf_estimate *e) {
    memset(e, 0, sizeof *e);
    e->seeds = cfg->seed_count;
    e->jobs = (cfg->seed_count + cfg->job_size - 1) / cfg->job_size;
    int gate = !strcmp(cfg->kind, "gate");
    /* a gate seed is a pair: the champion's fight and the candidate's
     * (at most: the test may decide sooner) */
    e->fights = (double)e->seeds * (gate ? 2.0 : r->fights_per_seed);
    e->decisions = e->fights * r->decisions_per_fight;
    int keep = !strcmp(cfg->labels.unsearched, "keep");
    e->labels = gate ? 0 : e->fights * (keep ? r->decisions_per_fight : r->searched_per_fight);
    e->simulations = e->fights * r->searched_per_fight * cfg->search.simulations;
    e->cpu_s = e->simulations * r->cpu_s_per_sim;
    double threads = (double)cfg->workers.count * cfg->workers.threads;
    e->wall_s = threads > 0 ? e->cpu_s / threads : e->cpu_s;
    e->shard_bytes = e->labels * r->shard_bytes_per_label;
    e->ledger_bytes = (double)sf_coordinator_ledger_bytes(e->jobs);
    e->table_bytes = (double)sf_coordinator_table_bytes(e->jobs);
    notes_for(cfg, r, e);
    if (e->jobs > SF_ESTIMATE_WARN_JOBS)
        warn(e,
             "%llu jobs is more than %llu: the coordinator keeps every job in memory and the "
             "ledger; raise seeds.job_size (now %u) to make fewer, larger jobs",
             (unsigned long long)e->jobs, SF_ESTIMATE_WARN_JOBS, cfg->job_size);
    if (e->table_bytes > (double)SF_ESTIMATE_WARN_TABLE_BYTES)
        warn(e, "the coordinator's job tables need %.1f GiB of memory (more than %llu GiB)",
             e->table_bytes / (1 << 30), SF_ESTIMATE_WARN_TABLE_BYTES >> 30);
    if (e->ledger_bytes > (double)SF_ESTIMATE_WARN_LEDGER_BYTES)
        warn(e, "the ledger claims %.1f GiB (more than %llu GiB) in run.output_dir",
             e->ledger_bytes / (1 << 30), SF_ESTIMATE_WARN_LEDGER_BYTES >> 30);
    if (e->shard_bytes > (double)SF_ESTIMATE_WARN_SHARD_BYTES)
        warn(e, "the shards take about %.1f TB (more than 1 TB) in run.output_dir/shards",
             e->shard_bytes / 1e12);
}

/* n with a binary or decimal suffix, e.g. "3.2 GiB" */
static void bytes_text(double n, char *out, size_t cap) {
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (n >= 1024 && u < 5)
        n /= 1024, u++;
    snprintf(out, cap, u ? "%.1f %s" : "%.0f %s", n, unit[u]);
}

static void time_text(double s, char *out, size_t cap) {
    if (s < 120)
        snprintf(out, cap, "%.0f s", s);
    else if (s < 7200)
        snprintf(out, cap, "%.1f min", s / 60);
    else if (s < 172800)
        snprintf(out, cap, "%.1f h", s / 3600);
    else
        snprintf(out, cap, "%.1f days", s / 86400);
}

void sf_estimate_print(const sf_estimate *e, const sf_estimate_rates *r, FILE *out) {
    char shard[32], ledger[32], table[32], cpu[32], wall[32];
    bytes_text(e->shard_bytes, shard, sizeof shard);
    bytes_text(e->ledger_bytes, ledger, sizeof ledger);
    bytes_text(e->table_bytes, table, sizeof table);
    time_text(e->cpu_s, cpu, sizeof cpu);
    time_text(e->wall_s, wall, sizeof wall);
    fprintf(out, "# estimate (rates %s)\n", r->source);
    fprintf(out, "jobs:                %llu\n", (unsigned long long)e->jobs);
    fprintf(out, "seeds:               %llu\n", (unsigned long long)e->seeds);
    fprintf(out, "fights:              %.0f\n", e->fights);
    fprintf(out, "decisions:           ~%.0f  (%.2f a fight)\n", e->decisions,
            r->decisions_per_fight);
    fprintf(out, "labels:              ~%.0f\n", e->labels);
    fprintf(out, "simulations:         ~%.3g\n", e->simulations);
    fprintf(out, "cpu time:            ~%s  (%.3g s a simulation, one thread)\n", cpu,
            r->cpu_s_per_sim);
    fprintf(out, "wall time:           ~%s  (workers.count x workers.threads)\n", wall);
    fprintf(out, "shards:              ~%s  (%.0f bytes a label)\n", shard,
            r->shard_bytes_per_label);
    fprintf(out, "ledger:              %s  (claimed when created)\n", ledger);
    fprintf(out, "coordinator memory:  %s  (its job tables)\n", table);
    for (int i = 0; i < e->n_notes; i++)
        fprintf(out, "note: %s\n", e->notes[i]);
    for (int i = 0; i < e->n_warnings; i++)
        fprintf(out, "warning: %s\n", e->warnings[i]);
}

json_t *sf_estimate_to_json(const sf_estimate *e, const sf_estimate_rates *r) {
    json_t *w = json_array(), *notes = json_array();
    for (int i = 0; w && i < e->n_warnings; i++)
        json_array_append_new(w, json_string(e->warnings[i]));
    for (int i = 0; notes && i < e->n_notes; i++)
        json_array_append_new(notes, json_string(e->notes[i]));
    json_t *rates = json_pack(
        "{s:f,s:f,s:f,s:f,s:f,s:s}", "fights_per_seed", r->fights_per_seed, "decisions_per_fight",
        r->decisions_per_fight, "searched_per_fight", r->searched_per_fight, "cpu_s_per_sim",
        r->cpu_s_per_sim, "shard_bytes_per_label", r->shard_bytes_per_label, "source", r->source);
    if (!w || !rates || !notes) {
        json_decref(w);
        json_decref(rates);
        json_decref(notes);
        return NULL;
    }
    return json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:o,s:o,s:o}", "jobs",
                     (json_int_t)e->jobs, "seeds", (json_int_t)e->seeds, "fights", e->fights,
                     "decisions", e->decisions, "labels", e->labels, "simulations", e->simulations,
                     "cpu_seconds", e->cpu_s, "wall_seconds", e->wall_s, "shard_bytes",
                     e->shard_bytes, "ledger_bytes", e->ledger_bytes, "coordinator_table_bytes",
                     e->table_bytes, "rates", rates, "notes", notes, "warnings", w);
}
