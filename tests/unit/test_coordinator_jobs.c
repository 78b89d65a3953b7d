/*
 * test_coordinator_jobs.c — a new run's jobs are created in chunks
 * (coordinator.h "Durability", ledger.c ledger_create_jobs): the same job
 * records as one transaction, resumable after a stop or a kill without a
 * job written twice, a stop request honoured between chunks, progress
 * shown.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config_fixture.h"
#include "coordinator/internal.h"
#include "sf_check.h"
#include "sf_tmpdir.h"

SF_TMPDIR_OF_TESTS("sf-coord-jobs")

/* 90 seeds in jobs of 4: 23 jobs, the last of 2 seeds. */
#define SEEDS 90
#define JOBS  23

static void make_cfg(sf_run_config *cfg, const char *sub) {
    config_of(cfg,
              "run: {name: jtest, output_dir: '%s/%s'}\n"
              "seeds: {start: 100, count: %d, job_size: 4}\n"
              "coordinator: {endpoint: 'tcp://127.0.0.1:*'}\n"
              "security: {mode: none, audit_fraction: 0, audit_first_jobs: 0}\n",
              tmpdir, sub, SEEDS);
}

/* The coordinator's log lines, kept; with stop_at set, *stop is raised
 * at the line "creating jobs: <stop_at> of ..."; with kill_at, the
 * process is killed there (SIGKILL: nothing cleans up). */
typedef struct watch {
    char text[4096];
    volatile sig_atomic_t stop;
    int stop_at, kill_at;
} watch;

static void on_line(void *ctx, const char *line) {
    watch *w = ctx;
    size_t used = strlen(w->text);
    snprintf(w->text + used, sizeof w->text - used, "%s\n", line);
    char at[64];
    if (w->stop_at) {
        snprintf(at, sizeof at, "creating jobs: %d of ", w->stop_at);
        if (strstr(line, at))
            w->stop = 1;
    }
    if (w->kill_at) {
        snprintf(at, sizeof at, "creating jobs: %d of ", w->kill_at);
        if (strstr(line, at))
            raise(SIGKILL);
    }
}

static int open_with(const sf_run_config *cfg, uint32_t chunk, watch *w, sf_coordinator **co,
                     sf_err *e) {
    sf_coord_opts o = {
        .metrics_port = 0, .log = on_line, .log_ctx = w, .stop = &w->stop, .create_chunk = chunk};
    return sf_coordinator_open(cfg, &o, co, e);
}

static sf_coordinator *open_ok(const sf_run_config *cfg, uint32_t chunk, watch *w) {
    sf_coordinator *co;
    sf_err e = {0};
    ck_assert_msg(open_with(cfg, chunk, w, &co, &e) == SF_OK, "%s", e.msg);
    return co;
}

/* BLAKE2b-256 (hex) of every job record of the ledger, keys and values in
 * key order, and how many there are: two ledgers with the same digest hold
 * the same jobs, byte for byte. */
static uint64_t jobs_digest(sf_coordinator *co, char hex[65]) {
    MDB_txn *txn;
    MDB_cursor *cur;
    ck_assert_int_eq(mdb_txn_begin(co->env, NULL, MDB_RDONLY, &txn), 0);
    ck_assert_int_eq(mdb_cursor_open(txn, co->dbi_jobs, &cur), 0);
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    MDB_val k, v;
    uint64_t n = 0;
    for (int op = MDB_FIRST; mdb_cursor_get(cur, &k, &v, (MDB_cursor_op)op) == 0; op = MDB_NEXT) {
        crypto_generichash_update(&st, k.mv_data, k.mv_size);
        crypto_generichash_update(&st, v.mv_data, v.mv_size);
        n++;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    uint8_t d[32];
    crypto_generichash_final(&st, d, 32);
    sodium_bin2hex(hex, 65, d, 32);
    return n;
}

/* Every job of the run in the table, with the seeds the config gives it:
 * job i (1-based) has seeds 100 + 4 (i - 1) .. , 4 of them, the last 2. */
static void expect_job_table(const sf_coordinator *co) {
    ck_assert_uint_eq(co->njobs, JOBS);
    ck_assert_uint_eq(co->jobs_created, JOBS);
    for (uint64_t i = 1; i <= JOBS; i++) {
        const cjob *j = &co->jobs[i - 1];
        ck_assert_uint_eq(j->id, i);
        ck_assert_uint_eq(j->seed_start, 100 + 4 * (i - 1));
        ck_assert_uint_eq(j->seed_count, i < JOBS ? 4 : 2);
        ck_assert_int_eq(j->state, JS_PENDING);
    }
}

/* jobs_digest of this run's ledger as the coordinator wrote it before
 * creation was chunked (every job in one transaction): computed from that
 * version's ledger.lmdb with `mdb_dump -n -s jobs` and Python's
 * hashlib.blake2b(digest_size=32) over each key and value in order. */
#define JOBS_DIGEST_BEFORE_CHUNKS "c70caad9d6e05ae6ee0d9c5dc56bdcaa491bdcf47157a6bd0b77d37d308cbee5"

/* The reference: every job in one transaction (the chunk is larger than
 * the run), byte for byte what was written before creation was chunked. */
static uint64_t reference_digest(char hex[65]) {
    sf_run_config cfg;
    make_cfg(&cfg, "whole");
    watch w = {0};
    sf_coordinator *co = open_ok(&cfg, 0, &w);
    uint64_t n = jobs_digest(co, hex);
    ck_assert_str_eq(hex, JOBS_DIGEST_BEFORE_CHUNKS);
    ck_assert_msg(!strstr(w.text, "creating jobs"), "one transaction shows no progress:\n%s",
                  w.text);
    sf_coordinator_close(co);
    return n;
}

START_TEST(jobs_created_in_chunks_are_the_jobs_of_one_transaction) {
    char whole[65], chunked[65];
    ck_assert_uint_eq(reference_digest(whole), JOBS);
    sf_run_config cfg;
    make_cfg(&cfg, "chunked");
    watch w = {0};
    sf_coordinator *co = open_ok(&cfg, 5, &w);
    ck_assert_uint_eq(jobs_digest(co, chunked), JOBS);
    ck_assert_str_eq(chunked, whole);
    expect_job_table(co);
    /* five chunks (5, 10, 15, 20, 23): the first and the last are shown,
     * the others only a second after the previous line */
    ck_assert_msg(strstr(w.text, "coordinator: creating jobs: 5 of 23\n"), "%s", w.text);
    ck_assert_msg(strstr(w.text, "coordinator: creating jobs: 23 of 23\n"), "%s", w.text);
    sf_coordinator_close(co);
    /* reopened: nothing more to create, nothing shown */
    watch w2 = {0};
    co = open_ok(&cfg, 5, &w2);
    ck_assert_msg(!strstr(w2.text, "creating"), "%s", w2.text);
    ck_assert_uint_eq(jobs_digest(co, chunked), JOBS);
    ck_assert_str_eq(chunked, whole);
    sf_coordinator_close(co);
}
END_TEST

/* The start of a test that creates a run's jobs in pieces: `whole` the
 * reference digest of one transaction's jobs, `cfg` the run `name`. */
static void begin_pieces(sf_run_config *cfg, const char *name, char whole[65]) {
    ck_assert_uint_eq(reference_digest(whole), JOBS);
    make_cfg(cfg, name);
}

/* The end of such a test: the jobs `co` holds are those of one
 * transaction (`whole`), in the tables as in the ledger; closes `co`. */
static void end_pieces(sf_coordinator *co, const char whole[65]) {
    char got[65];
    ck_assert_uint_eq(jobs_digest(co, got), JOBS);
    ck_assert_str_eq(got, whole);
    expect_job_table(co);
    sf_coordinator_close(co);
}

START_TEST(a_stop_between_chunks_is_honoured_and_the_next_open_goes_on) {
    char whole[65];
    sf_run_config cfg;
    begin_pieces(&cfg, "stopped", whole);
    /* the stop request arrives while the first chunk (jobs 1..5) is
     * written: the coordinator stops before the second */
    watch w = {.stop_at = 5};
    sf_coordinator *co = NULL;
    sf_err e = {0};
    ck_assert_int_eq(open_with(&cfg, 5, &w, &co, &e), SF_ESTATE);
    ck_assert_ptr_null(co);
    ck_assert_msg(strstr(e.msg, "stopped while creating jobs: 5 of 23 made"), "%s", e.msg);
    /* the lock is free again and the ledger holds jobs 1..5: reopened, it
     * says so and creates 6..23 */
    watch w2 = {0};
    co = open_ok(&cfg, 5, &w2);
    ck_assert_msg(strstr(w2.text, "5 of 23 jobs were created before the last stop"), "%s", w2.text);
    ck_assert_msg(strstr(w2.text, "creating jobs: 10 of 23\n"), "%s", w2.text);
    end_pieces(co, whole);
}
END_TEST

START_TEST(a_coordinator_killed_while_creating_jobs_resumes_without_duplicates) {
    char whole[65];
    sf_run_config cfg;
    begin_pieces(&cfg, "killed", whole);
    /* a child creates the jobs and is killed (SIGKILL: no cleanup, the
     * lock and LMDB's reader table left as a crash leaves them) once the
     * first chunk is committed */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        watch w = {.kill_at = 5};
        sf_coordinator *co;
        sf_err e = {0};
        open_with(&cfg, 5, &w, &co, &e);
        _exit(0); /* not reached */
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    watch w = {0};
    sf_coordinator *co = open_ok(&cfg, 5, &w);
    ck_assert_msg(strstr(w.text, "5 of 23 jobs were created before the last stop"), "%s", w.text);
    end_pieces(co, whole);
}
END_TEST

/* The workers by routing id (jobs.c's index): each found among many, the
 * lower slot of two with one id, and a worker found under its new id, not
 * its old one, after it reconnects. */
START_TEST(workers_are_found_by_routing_id_through_the_index) {
    sf_run_config cfg;
    make_cfg(&cfg, "widx");
    watch w = {0};
    sf_coordinator *co = open_ok(&cfg, 0, &w);
    uint8_t id[5] = {0};
    for (uint32_t i = 0; i < 700; i++) { /* past several rebuilds */
        memcpy(id + 1, &i, 4);
        ck_assert_int_eq(co_worker_add(co, id, sizeof id), (int)i);
    }
    for (uint32_t i = 0; i < 700; i++) {
        memcpy(id + 1, &i, 4);
        ck_assert_int_eq(co_worker_find(co, id, sizeof id), (int)i);
    }
    uint32_t none = 9999, seven = 7, fresh = 12345;
    memcpy(id + 1, &none, 4);
    ck_assert_int_eq(co_worker_find(co, id, sizeof id), -1);
    ck_assert_int_eq(co_worker_find(co, id, 4), -1);
    memcpy(id + 1, &seven, 4); /* a second slot with worker 7's id */
    ck_assert_int_eq(co_worker_add(co, id, sizeof id), 700);
    ck_assert_int_eq(co_worker_find(co, id, sizeof id), 7);
    uint8_t other[5] = {0};
    memcpy(other + 1, &fresh, 4);
    co_worker_set_ident(co, 7, other, sizeof other); /* worker 7 reconnects */
    ck_assert_int_eq(co_worker_find(co, id, sizeof id), 700);
    ck_assert_int_eq(co_worker_find(co, other, sizeof other), 7);
    for (int k = 0; k < 2000; k++) { /* deletions fill the table: rebuilt */
        uint32_t a = 20000 + (uint32_t)k;
        memcpy(other + 1, &a, 4);
        co_worker_set_ident(co, 8, other, sizeof other);
    }
    ck_assert_int_eq(co_worker_find(co, other, sizeof other), 8);
    ck_assert_int_eq(co_worker_find(co, id, sizeof id), 700);
    sf_coordinator_close(co);
}
END_TEST

#include "test-coordinator-jobs.tests.h" /* SF_TESTS (tests/meson.build) */
SF_CHECK_MAIN("coordinator-jobs", "coordinator-jobs", 120, tmpdir_make, tmpdir_remove)
