/*
 * test_dashboard.c — the coordinator's dashboard (coordinator/dashboard.h):
 * the JSON form of a message, the schema made from the same descriptors,
 * and the routes beside /metrics.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config_fixture.h"
#include "coordinator/dashboard.h"
#include "coordinator/internal.h"
#include "sf_check.h"
#include "sf_http.h"
#include "sf_tmpdir.h"

SF_TMPDIR_OF_TESTS("sf-dashboard")

static json_t *parse(const char *s) {
    json_error_t je;
    json_t *o = json_loads(s, 0, &je);
    ck_assert_msg(o != NULL, "%s: %s", je.text, s);
    return o;
}

START_TEST(a_message_is_every_field_in_field_order_nan_as_null) {
    Spirefleet__StatusReply r = SPIREFLEET__STATUS_REPLY__INIT;
    Spirefleet__SlowJob a = SPIREFLEET__SLOW_JOB__INIT, b = SPIREFLEET__SLOW_JOB__INIT;
    Spirefleet__SlowJob *slow[2] = {&a, &b};
    r.run = "r\"1";                 /* escaped, not cut */
    r.jobs_done = (1ull << 40) + 1; /* exact past 2^32 */
    r.eta_s = NAN;                  /* no number in JSON: null */
    r.labels_per_s = 1.5;
    r.complete = 1;
    a.job_id = 14;
    a.worker_id = "w1";
    a.running_s = 95.0;
    b.job_id = 15;
    b.worker_id = NULL; /* an unset string: "" */
    r.n_slow_jobs = 2;
    r.slow_jobs = slow;
    size_t len;
    char *s = sf_fleet_status_json(&r, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(strlen(s), len);
    json_t *o = parse(s);
    ck_assert_uint_eq(json_object_size(o), spirefleet__status_reply__descriptor.n_fields);
    ck_assert_str_eq(json_string_value(json_object_get(o, "run")), "r\"1");
    ck_assert_int_eq(json_integer_value(json_object_get(o, "jobs_done")), (1ll << 40) + 1);
    ck_assert(json_is_null(json_object_get(o, "eta_s")));
    ck_assert(json_real_value(json_object_get(o, "labels_per_s")) == 1.5);
    ck_assert(json_is_true(json_object_get(o, "complete")));
    ck_assert(json_is_false(json_object_get(o, "gate")));
    ck_assert_str_eq(json_string_value(json_object_get(o, "gate_decision")), "");
    json_t *sj = json_object_get(o, "slow_jobs");
    ck_assert_uint_eq(json_array_size(sj), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(sj, 0), "job_id")), 14);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(sj, 1), "worker_id")), "");
    ck_assert_uint_eq(json_array_size(json_object_get(o, "undecided_audits")), 0);
    /* field order: "run" (field 1) first, "champion" (59) last */
    ck_assert_ptr_eq(strstr(s, "{\"run\":"), s);
    ck_assert_ptr_nonnull(strstr(s, "\"waiting_reason\":\"\",\"worker_limit\":0,"));
    ck_assert_ptr_nonnull(
        strstr(s, "\"workers_refused_limit\":0,\"leases_on_previous_model\":0,\"champion\":\"\"}"));
    json_decref(o);
    free(s);
}
END_TEST

START_TEST(the_schema_requires_every_field_and_types_it) {
    size_t len;
    char *s = sf_dash_schema_json(&len);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s[len - 1], '\n');
    json_t *o = parse(s), *defs = json_object_get(o, "$defs");
    json_t *st = json_object_get(defs, "StatusReply");
    ck_assert_uint_eq(json_array_size(json_object_get(st, "required")),
                      spirefleet__status_reply__descriptor.n_fields);
    ck_assert(json_is_false(json_object_get(st, "additionalProperties")));
    json_t *props = json_object_get(st, "properties");
    json_t *eta = json_object_get(json_object_get(props, "eta_s"), "type");
    ck_assert_str_eq(json_string_value(json_array_get(eta, 0)), "number");
    ck_assert_str_eq(json_string_value(json_array_get(eta, 1)), "null");
    json_t *jobs = json_object_get(props, "jobs_done");
    ck_assert_str_eq(json_string_value(json_object_get(jobs, "type")), "integer");
    ck_assert_int_eq(json_integer_value(json_object_get(jobs, "minimum")), 0);
    json_t *items = json_object_get(json_object_get(props, "slow_jobs"), "items");
    ck_assert_str_eq(json_string_value(json_object_get(items, "$ref")), "#/$defs/SlowJob");
    ck_assert_ptr_nonnull(json_object_get(defs, "SlowJob"));
    ck_assert_ptr_nonnull(json_object_get(defs, "WorkerInfo"));
    json_t *eps = json_object_get(o, "x-endpoints");
    ck_assert_uint_eq(json_object_size(eps), 4);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(eps, "/api/errors"), "$ref")),
        "#/$defs/ErrorLog");
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(eps, "/api/workers"), "$ref")),
        "#/$defs/WorkersReply");
    json_decref(o);
    free(s);
}
END_TEST

/* A coordinator serving its metrics on any port, output_dir tmpdir/sub. */
static sf_coordinator *open_with_metrics(const char *sub) {
    sf_run_config cfg;
    config_of(&cfg,
              "run: {name: dtest, output_dir: '%s/%s'}\n"
              "seeds: {start: 0, count: 8, job_size: 4}\n"
              "coordinator: {endpoint: 'tcp://127.0.0.1:*'}\n"
              "security: {mode: none, audit_fraction: 0, audit_first_jobs: 0}\n",
              tmpdir, sub);
    sf_coord_opts o = {.metrics_port = SF_METRICS_ANY_PORT};
    sf_coordinator *co;
    sf_err e = {0};
    ck_assert_msg(sf_coordinator_open(&cfg, &o, &co, &e) == SF_OK, "%s", e.msg);
    return co;
}

START_TEST(metrics_stays_metrics_and_other_paths_are_404) {
    sf_coordinator *co = open_with_metrics("plain");
    int port = sf_coordinator_metrics_port(co);
    char buf[65536];
    sf_test_http(port, "GET /metrics", buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, " 200 "));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_jobs{run=\"dtest\",state=\"pending\"} 2"));
    sf_test_http(port, "GET /", buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, " 200 "));
    ck_assert_ptr_nonnull(strstr(buf, "text/html"));
    ck_assert_ptr_nonnull(strstr(buf, "<title>spirefleet dashboard</title>"));
    sf_test_http(port, "GET /nothing/here", buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, " 404 "));
    ck_assert_ptr_nonnull(strstr(buf, "{\"error\":\"no such page: the dashboard is at /\"}"));
    sf_test_http(port, "GET /api/status", buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "application/json"));
    ck_assert_ptr_nonnull(strstr(buf, "\"jobs_total\":2,\"jobs_pending\":2,"));
    sf_coordinator_close(co);
}
END_TEST

/* /api/errors: the newest SF_COORD_ERRORS_KEPT errors, newest first, with
 * the count of all; a line break in a reason never reaches the page raw. */
START_TEST(recent_errors_are_the_newest_kept_newest_first) {
    sf_coordinator *co = open_with_metrics("errors");
    char buf[65536];
    sf_test_http(sf_coordinator_metrics_port(co), "GET /api/errors", buf, sizeof buf);
    ck_assert_msg(strstr(buf, "\r\n\r\n{\"events\":[],\"total\":0}"), "%s", buf);
    for (int i = 0; i < SF_COORD_ERRORS_KEPT + 6; i++) {
        char who[16], detail[32];
        snprintf(who, sizeof who, "w%d", i);
        snprintf(detail, sizeof detail, "reason %d\nforged", i);
        co_note_error(co, who, "job failed", detail);
    }
    metrics_publish(co);
    sf_test_http(sf_coordinator_metrics_port(co), "GET /api/errors", buf, sizeof buf);
    json_t *o = json_loads(strstr(buf, "\r\n\r\n") + 4, 0, NULL);
    ck_assert_ptr_nonnull(o);
    json_t *ev = json_object_get(o, "events");
    ck_assert_int_eq(json_integer_value(json_object_get(o, "total")), SF_COORD_ERRORS_KEPT + 6);
    ck_assert_uint_eq(json_array_size(ev), SF_COORD_ERRORS_KEPT);
    json_t *first = json_array_get(ev, 0), *last = json_array_get(ev, SF_COORD_ERRORS_KEPT - 1);
    ck_assert_str_eq(json_string_value(json_object_get(first, "who")), "w69");
    ck_assert_str_eq(json_string_value(json_object_get(first, "what")), "job failed");
    ck_assert_str_eq(json_string_value(json_object_get(first, "detail")), "reason 69?forged");
    ck_assert_str_eq(json_string_value(json_object_get(last, "who")), "w6");
    ck_assert(json_real_value(json_object_get(first, "unix_s")) > 1.7e9);
    json_decref(o);
    sf_coordinator_close(co);
}
END_TEST

START_TEST(the_loop_page_needs_a_loop_generation_dir) {
    sf_coordinator *co = open_with_metrics("notaloop/selfplay");
    char buf[65536], want[600];
    sf_test_http(sf_coordinator_metrics_port(co), "GET /api/loop", buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, " 404 "));
    snprintf(want, sizeof want,
             "run dtest is not a training loop's generation (its output_dir "
             "%s/notaloop/selfplay is not LOOP/genG/KIND)",
             tmpdir);
    ck_assert_msg(strstr(buf, want) != NULL, "%s", buf);
    sf_coordinator_close(co);
    /* LOOP/gen2/selfplay without LOOP/loop.json: 404 naming the file */
    co = open_with_metrics("L/gen2/selfplay");
    sf_test_http(sf_coordinator_metrics_port(co), "GET /api/loop", buf, sizeof buf);
    snprintf(want, sizeof want, "%s/L/loop.json: No such file or directory", tmpdir);
    ck_assert_msg(strstr(buf, " 404 ") && strstr(buf, want), "%s", buf);
    sf_coordinator_close(co);
}
END_TEST

/* /api/gate as pairs arrive: three pairs folded, no decision yet. The
 * candidate wins pairs 1 and 3 alone, pair 2 is a tie: the document says
 * "continue", not decided, with one entry per pair and the running LLR of
 * the last equal to the verdict's. */
START_TEST(the_gate_document_follows_the_pairs_folded_so_far) {
    sf_run_config cfg;
    config_of(&cfg,
              "run: {name: gdash, output_dir: '%s/gate', kind: gate}\n"
              "seeds: {start: 0, count: 100, job_size: 10}\n"
              "play: {mode: fights, encounters: {weak: 1}}\n"
              "champion: {evaluator: rollout, simulations: 3}\n"
              "candidate: {evaluator: rollout, simulations: 100}\n"
              "gate: {min_pairs: 20, max_pairs: 100}\n"
              "coordinator: {endpoint: 'tcp://127.0.0.1:*'}\n"
              "security: {mode: none, audit_fraction: 0, audit_first_jobs: 0}\n",
              tmpdir);
    sf_coord_opts o = {0};
    sf_coordinator *co;
    sf_err e = {0};
    ck_assert_msg(sf_coordinator_open(&cfg, &o, &co, &e) == SF_OK, "%s", e.msg);
    sf_gate_pair pairs[3] = {{.won_a = 1, .won_b = 0, .y_a = 0.8, .y_b = 0.1},
                             {.won_a = 1, .won_b = 1, .y_a = 0.5, .y_b = 0.5},
                             {.won_a = 1, .won_b = 0, .y_a = 0.9, .y_b = 0.15}};
    uint64_t seeds[3] = {0, 1, 2};
    char enc[3][SF_SHARD_GATE_ENCOUNTER_MAX] = {"a", "b", "c"};
    gate_copy c = {.pairs = pairs, .seeds = seeds, .enc = enc, .n = 3, .cap = 3};
    size_t len;
    char *s = gate_document(co, &c, 0, &len, &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    json_t *d = parse(s), *v = json_object_get(d, SF_DASH_GATE_VERDICT);
    json_t *ps = json_object_get(d, SF_DASH_GATE_PAIRS);
    ck_assert(json_is_false(json_object_get(d, SF_DASH_GATE_DECIDED)));
    ck_assert_str_eq(json_string_value(json_object_get(v, SF_GATE_VKEY_VERDICT)),
                     SF_GATE_WORD_CONTINUE);
    ck_assert_int_eq(json_integer_value(json_object_get(v, SF_GATE_VKEY_PAIRS)), 3);
    ck_assert_uint_eq(json_array_size(ps), 3);
    json_t *last = json_array_get(ps, 2);
    ck_assert_int_eq(json_integer_value(json_object_get(last, SF_GATE_PKEY_PAIR)), 3);
    ck_assert_str_eq(json_string_value(json_object_get(last, "encounter")), "c");
    ck_assert(json_real_value(json_object_get(last, SF_GATE_PKEY_LLR)) ==
              json_real_value(json_object_get(v, SF_GATE_VKEY_LLR)));
    /* the running mean score difference after 3 pairs: (0.7 + 0 + 0.75) / 3 */
    ck_assert(fabs(json_real_value(json_object_get(last, SF_GATE_PKEY_SCORE_DIFF)) - 1.45 / 3) <
              1e-12);
    json_decref(d);
    free(s);
    sf_coordinator_close(co);
}
END_TEST

#include "test-dashboard.tests.h" /* SF_TESTS (tests/meson.build) */
SF_CHECK_MAIN("dashboard", "dashboard", 60, tmpdir_make, tmpdir_remove)
