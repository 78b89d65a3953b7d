/*
 * test_estimate.c — `sf-fleet check --estimate` (sf-fleet/estimate.h): the
 * arithmetic for a small config, each expected value worked out by hand
 * below from the config and the rates given.
 */
#include <jansson.h>
#include <string.h>

#include "config_fixture.h"
#include "sf-fleet/estimate.h"
#include "sf_check.h"

/* 10 seeds in jobs of 4 (3 jobs), 100 simulations, 2 workers x 3 threads. */
static void small_cfg(sf_run_config *cfg, const char *extra) {
    config_of(cfg,
              "run: {name: est, output_dir: /nonexistent/est}\n"
              "seeds: {start: 0, count: 10, job_size: 4}\n"
              "search: {simulations: 100}\n"
              "workers: {count: 2, threads: 3}\n"
              "security: {mode: none}\n%s",
              extra ? extra : "");
}

static const sf_estimate_rates rates = {
    .fights_per_seed = 1,
    .decisions_per_fight = 30,
    .searched_per_fight = 20,
    .cpu_s_per_sim = 1e-4,
    .shard_bytes_per_label = 500,
    .source = "test",
};

/* `e`, the estimate of small_cfg(cfg, extra) at `rates`. */
static void estimate_small(sf_run_config *cfg, const char *extra, sf_estimate *e) {
    small_cfg(cfg, extra);
    sf_estimate_compute(cfg, &rates, e);
}

START_TEST(the_estimate_of_a_small_config_is_its_arithmetic) {
    sf_run_config cfg;
    sf_estimate e;
    estimate_small(&cfg, NULL, &e);
    ck_assert_uint_eq(e.jobs, 3); /* ceil(10 / 4) */
    ck_assert_uint_eq(e.seeds, 10);
    ck_assert_double_eq(e.fights, 10);                /* one fight a seed */
    ck_assert_double_eq(e.decisions, 300);            /* 10 fights x 30 */
    ck_assert_double_eq(e.labels, 200);               /* labels.unsearched drop: the 20 searched */
    ck_assert_double_eq(e.simulations, 20000);        /* 10 x 20 searched x 100 simulations */
    ck_assert_double_eq_tol(e.cpu_s, 2.0, 1e-9);      /* 20000 x 1e-4 s */
    ck_assert_double_eq_tol(e.wall_s, 2.0 / 6, 1e-9); /* over 2 x 3 threads */
    ck_assert_double_eq(e.shard_bytes, 100000);       /* 200 labels x 500 bytes */
    /* the ledger's reserve (coordinator/ledger.c): 1 MiB and 512 bytes a job */
    ck_assert_double_eq(e.ledger_bytes, 1048576 + 3 * 512);
    ck_assert_double_gt(e.table_bytes, 3 * 100); /* some hundreds of bytes a job */
    ck_assert_int_eq(e.n_warnings, 0);
}
END_TEST

START_TEST(kept_unsearched_decisions_are_labels_too) {
    sf_run_config cfg;
    sf_estimate e;
    estimate_small(&cfg, "labels: {unsearched: keep}\n", &e);
    ck_assert_double_eq(e.labels, 300); /* every decision */
    ck_assert_double_eq(e.shard_bytes, 150000);
    ck_assert_double_eq(e.simulations, 20000); /* only searched ones cost simulations */
}
END_TEST

START_TEST(a_run_of_millions_of_jobs_is_warned_about) {
    sf_run_config cfg;
    config_of(&cfg, "run: {name: big, output_dir: /nonexistent/big}\n"
                    "seeds: {start: 0, count: 3000000, job_size: 1}\n"
                    "security: {mode: none}\n");
    sf_estimate e;
    sf_estimate_compute(&cfg, &rates, &e);
    ck_assert_uint_eq(e.jobs, 3000000);
    ck_assert_int_ge(e.n_warnings, 1);
    ck_assert_msg(strstr(e.warnings[0], "3000000 jobs is more than 1000000") &&
                      strstr(e.warnings[0], "raise seeds.job_size (now 1)"),
                  "%s", e.warnings[0]);
    /* the JSON form carries the same numbers and the warnings */
    json_t *j = sf_estimate_to_json(&e, &rates);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "jobs")), 3000000);
    ck_assert_int_eq((int)json_array_size(json_object_get(j, "warnings")), e.n_warnings);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "rates"), "source")),
                     "test");
    json_decref(j);
}
END_TEST

START_TEST(a_gauntlet_without_calibration_is_noted) {
    sf_run_config cfg;
    sf_estimate e;
    estimate_small(&cfg, "play: {mode: gauntlet}\n", &e);
    ck_assert_int_eq(e.n_notes, 1);
    ck_assert_msg(strstr(e.notes[0], "use --calibrate"), "%s", e.notes[0]);
    sf_estimate_rates cal = rates;
    cal.calibrated = 1;
    sf_estimate_compute(&cfg, &cal, &e);
    ck_assert_int_eq(e.n_notes, 0);
}
END_TEST

/* One real job of 2 seeds at 20 simulations (a fraction of a second). */
/* Rates a fights run can have: one fight a seed, some decisions a fight,
 * no more searched than made, and a cost for each simulation and label. */
static void rates_are_possible(const sf_estimate_rates *r) {
    ck_assert_double_eq(r->fights_per_seed, 1);
    ck_assert_double_gt(r->decisions_per_fight, 0);
    ck_assert_double_le(r->searched_per_fight, r->decisions_per_fight);
    ck_assert_double_gt(r->cpu_s_per_sim, 0);
    ck_assert_double_gt(r->shard_bytes_per_label, 0);
}

START_TEST(calibration_plays_a_job_and_measures_its_rates) {
    sf_run_config cfg;
    config_of(&cfg, "run: {name: cal, output_dir: /nonexistent/cal}\n"
                    "seeds: {start: 0, count: 10, job_size: 4}\n"
                    "search: {simulations: 20, trees: 1}\n"
                    "security: {mode: none}\n");
    sf_estimate_rates r;
    sf_err err = {0};
    ck_assert_msg(sf_estimate_calibrate(&cfg, 2, "/tmp", &r, &err) == SF_OK, "%s", err.msg);
    ck_assert(r.calibrated);
    rates_are_possible(&r);
    ck_assert_msg(strstr(r.source, "calibrated here: 2 seeds, 2 fights"), "%s", r.source);
}
END_TEST

START_TEST(the_measured_rates_are_there) {
    sf_estimate_rates r;
    sf_estimate_measured(&r);
    rates_are_possible(&r);
    ck_assert_double_gt(r.searched_per_fight, 0);
    ck_assert_msg(strstr(r.source, "configs/local.yaml"), "%s", r.source);
}
END_TEST

#include "test-estimate.tests.h" /* SF_TESTS (tests/meson.build) */
SF_CHECK_MAIN("estimate", "estimate", 60, NULL, NULL)
