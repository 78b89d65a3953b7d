/*
 * estimate.h — what a run config will create and cost, before it runs
 * (`sf-fleet check --estimate CONFIG`, docs/operator.md "Estimating a
 * run"): jobs, fights, decisions, labels, simulations, CPU time, the bytes
 * of its sealed shards and of its ledger, and the coordinator's memory for
 * its job tables, with a warning for each past a documented size.
 *
 * Counts that the config fixes (jobs, seeds, fights in fights mode) are
 * exact; the rest are a measured rate times a count: the rates of one
 * measured run (sf_estimate_measured, each constant naming where it came
 * from), or of a short timing run on this machine (sf_estimate_calibrate:
 * one small job of the config played here, as a worker would). Pure
 * arithmetic apart from the calibration; no global state.
 */
#ifndef SF_FLEET_ESTIMATE_H
#define SF_FLEET_ESTIMATE_H

#include <stdint.h>
#include <stdio.h>

#include "common/common.h"
#include "fleet/config.h"

/* The rates an estimate multiplies by. */
typedef struct sf_estimate_rates {
    double fights_per_seed;       /* 1 in fights mode; a gauntlet's fights */
    double decisions_per_fight;   /* every decision the player makes       */
    double searched_per_fight;    /* of them, searched (more than one legal action) */
    double cpu_s_per_sim;         /* one thread's seconds per simulation   */
    double shard_bytes_per_label; /* a sealed shard's bytes per label (manifest included) */
    char source[200];             /* where they come from, for the output */
    int calibrated;               /* from sf_estimate_calibrate on this config */
} sf_estimate_rates;

/* The warnings' sizes (docs/operator.md "Estimating a run"). */
#define SF_ESTIMATE_WARN_JOBS         1000000ull   /* jobs: the coordinator holds each in memory */
#define SF_ESTIMATE_WARN_TABLE_BYTES  (4ull << 30) /* the coordinator's job tables    */
#define SF_ESTIMATE_WARN_SHARD_BYTES  1000000000000ull /* 1 TB of shards         */
#define SF_ESTIMATE_WARN_LEDGER_BYTES (4ull << 30)     /* the ledger file         */
#define SF_ESTIMATE_MAX_WARNINGS      4

typedef struct sf_estimate {
    uint64_t jobs, seeds;
    double fights, decisions, labels, simulations;
    double cpu_s;  /* all threads together                                  */
    double wall_s; /* cpu_s over workers.count x workers.threads            */
    double shard_bytes, ledger_bytes, table_bytes;
    int n_warnings;
    char warnings[SF_ESTIMATE_MAX_WARNINGS][240];
    /* where the rates do not fit the config (a gauntlet or a network
     * evaluator without --calibrate, a gate run): the numbers it makes
     * rough */
    int n_notes;
    char notes[SF_ESTIMATE_MAX_WARNINGS][240];
} sf_estimate;

/* The rates measured on a real run of configs/local.yaml (fights mode,
 * the rollout evaluator), named in docs/operator.md with the command that
 * measured them. They apply to a config of that kind; for a gauntlet or a
 * network evaluator use sf_estimate_calibrate. */
void sf_estimate_measured(sf_estimate_rates *r);

/* Rates from playing one job of `seeds` seeds (the config's first seeds)
 * here on one thread, into a temporary shard under `scratch_dir` (removed
 * after). SF_EUNSUPPORTED for a network evaluator or a gate run (the
 * timing run needs a model server); the job's errors otherwise. */
int sf_estimate_calibrate(const sf_run_config *cfg, uint32_t seeds, const char *scratch_dir,
                          sf_estimate_rates *r, sf_err *err);

/* The estimate of `cfg` with rates `r`. */
void sf_estimate_compute(const sf_run_config *cfg, const sf_estimate_rates *r, sf_estimate *e);

/* As text (aligned lines, a "note:" and a "warning:" line each) or as one
 * JSON object (jobs, seeds, fights, decisions, labels, simulations,
 * cpu_seconds, wall_seconds, shard_bytes, ledger_bytes,
 * coordinator_table_bytes, rates {...}, notes [...], warnings [...]), in a
 * jansson value the caller owns. */
void sf_estimate_print(const sf_estimate *e, const sf_estimate_rates *r, FILE *out);
struct json_t;
struct json_t *sf_estimate_to_json(const sf_estimate *e, const sf_estimate_rates *r);

#endif
