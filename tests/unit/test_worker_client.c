/* test_worker_client.c — the worker's side of the fleet protocol against a
 * scripted coordinator (a ROUTER in the test thread) that plays one real
 * job's upload and then falls silent, as a coordinator that died or is
 * restarting does: the worker keeps heartbeating for the job while it
 * waits for the verdict, reconnects within its liveness window and
 * delivers the shard to the "restarted" coordinator; and a stop request
 * during that wait ends the worker within the window, its shard kept. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "config_fixture.h"
#include "sf_check.h"
#include "sf_tmpdir.h"
#include "worker/worker.h"

SF_TMPDIR_OF_TESTS("sf-wclient")

/* A 1 s liveness window: long enough that a worker thread starved for a
 * few hundred milliseconds on a loaded machine still heartbeats within it. */
#define HB_MS    100
#define LIVENESS 10

typedef struct fake {
    void *ctx, *router;
    char endpoint[256];
    sf_run_config cfg;
    char digest[65];
    sf_config_scratch scratch;
    Spirefleet__RunConfig *run_msg;
} fake;

typedef struct worker_thread {
    sf_worker_opts o;
    volatile sig_atomic_t stop;
    sf_err err;
    int rc;
    atomic_int done;
    char scratch[400];
} worker_thread;

static void *worker_main(void *arg) {
    worker_thread *w = arg;
    w->rc = sf_worker_run(&w->o, &w->err);
    atomic_store(&w->done, 1);
    return NULL;
}

static void fake_open(fake *f, const char *sub) {
    config_of(&f->cfg,
              "run: {name: wtest, output_dir: '%s/%s'}\n"
              "seeds: {start: 0, count: 1, job_size: 1}\n"
              "play: {mode: fights, encounters: {weak: 1}}\n"
              "search: {simulations: 16, trees: 1}\n"
              "workers: {threads: 1, fights_per_thread: 1}\n",
              tmpdir, sub);
    ck_assert_int_eq(sf_config_digest(&f->cfg, f->digest), SF_OK);
    f->run_msg = sf_config_to_proto(&f->cfg, &f->scratch);
    f->ctx = zmq_ctx_new();
    f->router = zmq_socket(f->ctx, ZMQ_ROUTER);
    int zero = 0;
    zmq_setsockopt(f->router, ZMQ_LINGER, &zero, sizeof zero);
    ck_assert_int_eq(zmq_bind(f->router, "tcp://127.0.0.1:*"), 0);
    size_t n = sizeof f->endpoint;
    zmq_getsockopt(f->router, ZMQ_LAST_ENDPOINT, f->endpoint, &n);
}

static void fake_close(fake *f) {
    zmq_close(f->router);
    zmq_ctx_term(f->ctx);
}

/* One message within 50 ms: its body (NULL on none) and who sent it. */
static Spirefleet__Envelope *fake_recv(fake *f, uint8_t *ident, size_t *ilen) {
    zmq_pollitem_t it = {f->router, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, 50) <= 0)
        return NULL;
    int n = zmq_recv(f->router, ident, 256, 0);
    ck_assert_int_gt(n, 0);
    *ilen = (size_t)n;
    zmq_msg_t m;
    zmq_msg_init(&m);
    ck_assert_int_ge(zmq_msg_recv(&m, f->router, 0), 0);
    Spirefleet__Envelope *env = NULL;
    sf_err e = {0};
    ck_assert_msg(sf_wire_decode(zmq_msg_data(&m), zmq_msg_size(&m), &env, &e) == SF_OK, "%s",
                  e.msg);
    zmq_msg_close(&m);
    return env;
}

static void fake_send(fake *f, const uint8_t *ident, size_t ilen, Spirefleet__Envelope *env) {
    ck_assert_int_eq(sf_wire_send(f->router, ident, ilen, env, 0), SF_OK);
}

static void welcome(fake *f, const uint8_t *ident, size_t ilen) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Welcome w = SPIREFLEET__WELCOME__INIT;
    w.config = f->run_msg;
    w.config_digest = f->digest;
    w.heartbeat_ms = HB_MS;
    w.heartbeat_liveness = LIVENESS;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_WELCOME;
    env.welcome = &w;
    fake_send(f, ident, ilen, &env);
}

static void ack(fake *f, const uint8_t *ident, size_t ilen, int ok, int send) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardAck a = SPIREFLEET__SHARD_ACK__INIT;
    a.job_id = 1;
    a.ok = ok;
    a.duplicate = ok;
    a.send = send;
    a.reason = (char *)(ok ? "job already done" : "");
    env.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_ACK;
    env.shard_ack = &a;
    fake_send(f, ident, ilen, &env);
}

/* The coordinator's side until the last chunk of job 1's shard arrives:
 * Welcome, the job, heartbeats answered, a Wait for the next request (so
 * the worker uploads), the offer accepted. */
static void play_until_uploaded(fake *f, worker_thread *w) {
    uint8_t ident[256];
    size_t ilen;
    int jobs = 0;
    for (int polls = 0; polls < 1200; polls++) {
        ck_assert_msg(!atomic_load(&w->done), "the worker ended early: %s", w->err.msg);
        Spirefleet__Envelope *r = fake_recv(f, ident, &ilen);
        if (!r)
            continue;
        Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
        int last = 0;
        switch (r->body_case) {
        case SPIREFLEET__ENVELOPE__BODY_HELLO: welcome(f, ident, ilen); break;
        case SPIREFLEET__ENVELOPE__BODY_JOB_REQUEST:
            if (jobs++ == 0) {
                Spirefleet__Job j = SPIREFLEET__JOB__INIT;
                j.job_id = 1;
                j.kind = SPIREFLEET__JOB_KIND__JOB_SELFPLAY;
                j.seed_start = f->cfg.seed_start;
                j.seed_count = 1;
                j.attempt = 1;
                j.search = f->run_msg->search;
                j.model_sha256 = (char *)"rollout";
                j.config_digest = f->digest;
                j.lease_seconds = 60;
                env.body_case = SPIREFLEET__ENVELOPE__BODY_JOB;
                env.job = &j;
                fake_send(f, ident, ilen, &env);
            } else {
                Spirefleet__Wait wt = SPIREFLEET__WAIT__INIT;
                wt.retry_ms = HB_MS;
                env.body_case = SPIREFLEET__ENVELOPE__BODY_WAIT;
                env.wait = &wt;
                fake_send(f, ident, ilen, &env);
            }
            break;
        case SPIREFLEET__ENVELOPE__BODY_HEARTBEAT: {
            Spirefleet__Heartbeat hb = SPIREFLEET__HEARTBEAT__INIT;
            hb.worker_id = (char *)"coordinator";
            env.body_case = SPIREFLEET__ENVELOPE__BODY_HEARTBEAT;
            env.heartbeat = &hb;
            fake_send(f, ident, ilen, &env);
            break;
        }
        case SPIREFLEET__ENVELOPE__BODY_SHARD_OFFER: ack(f, ident, ilen, 0, 1); break;
        case SPIREFLEET__ENVELOPE__BODY_SHARD_CHUNK: last = r->shard_chunk->last; break;
        default: break;
        }
        sf_wire_free(r);
        if (last)
            return;
    }
    ck_abort_msg("the worker never uploaded job 1's shard");
}

/* A worker on a thread; with `ex`, one that yields (sf_worker_opts.yield:
 * as each run of a worker serving several) and says how it ended there. */
static void worker_start(worker_thread *w, fake *f, pthread_t *th, sf_worker_exit *ex) {
    memset(w, 0, sizeof *w);
    w->o.yield = ex != NULL;
    w->o.exit = ex;
    snprintf(w->scratch, sizeof w->scratch, "%s/scratch", tmpdir);
    w->o.endpoint = f->endpoint;
    w->o.worker_id = "w1";
    w->o.scratch_dir = w->scratch;
    w->o.stop = &w->stop;
    ck_assert_int_eq(pthread_create(th, NULL, worker_main, w), 0);
}

/* A fake coordinator `name` and a worker on a thread (`th`) that has
 * played its job and uploaded the shard. */
static void upload_under(fake *f, const char *name, worker_thread *w, pthread_t *th) {
    fake_open(f, name);
    worker_start(w, f, th, NULL);
    play_until_uploaded(f, w);
}

/* The coordinator falls silent after the last chunk (it died before its
 * verdict) and comes back: the worker heartbeats for job 1 while it waits,
 * Hellos again once the liveness window has passed (a bounded number of
 * heartbeats, not the two minutes of a verdict timeout), offers the shard
 * again, and the run ends normally. */
START_TEST(a_coordinator_restart_during_an_upload) {
    fake f;
    worker_thread w;
    pthread_t th;
    upload_under(&f, "restart", &w, &th);
    uint8_t ident[256];
    size_t ilen;
    int heartbeats = 0, hello_again = 0;
    for (int polls = 0; polls < 200 && !hello_again; polls++) {
        Spirefleet__Envelope *r = fake_recv(&f, ident, &ilen);
        if (!r)
            continue;
        if (r->body_case == SPIREFLEET__ENVELOPE__BODY_HEARTBEAT)
            heartbeats += r->heartbeat->job_id == 1;
        if (r->body_case == SPIREFLEET__ENVELOPE__BODY_HELLO)
            hello_again = 1;
        sf_wire_free(r);
    }
    ck_assert_msg(hello_again, "no Hello after the coordinator fell silent (%d heartbeats)",
                  heartbeats);
    /* one every HB_MS until LIVENESS intervals passed without an answer:
     * at most that many, and at least one (a starved worker thread sends
     * fewer in the same window: how many is the machine's speed) */
    ck_assert_int_ge(heartbeats, 1);
    ck_assert_int_le(heartbeats, LIVENESS + 2);
    welcome(&f, ident, ilen);
    int offers = 0, over = 0;
    for (int polls = 0; polls < 400 && !over; polls++) {
        Spirefleet__Envelope *r = fake_recv(&f, ident, &ilen);
        if (!r)
            continue;
        Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
        if (r->body_case == SPIREFLEET__ENVELOPE__BODY_SHARD_OFFER) {
            offers++;
            ack(&f, ident, ilen, 1, 0); /* the restarted coordinator had stored it */
        } else if (r->body_case == SPIREFLEET__ENVELOPE__BODY_JOB_REQUEST) {
            Spirefleet__RunComplete rc = SPIREFLEET__RUN_COMPLETE__INIT;
            env.body_case = SPIREFLEET__ENVELOPE__BODY_RUN_COMPLETE;
            env.run_complete = &rc;
            fake_send(&f, ident, ilen, &env);
            over = 1;
        } else {
            ck_assert_int_ne(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB_FAILED);
        }
        sf_wire_free(r);
    }
    ck_assert_int_eq(offers, 1);
    ck_assert_int_eq(over, 1);
    pthread_join(th, NULL);
    ck_assert_msg(w.rc == SF_OK, "%s", w.err.msg);
    fake_close(&f);
}
END_TEST

/* A stop request (SIGTERM) while the worker waits for a silent
 * coordinator's verdict: it ends within the liveness window (a bounded
 * number of heartbeats), reports nothing failed, and keeps the shard. */
START_TEST(a_stop_during_the_verdict_wait_is_prompt) {
    fake f;
    worker_thread w;
    pthread_t th;
    upload_under(&f, "stop", &w, &th);
    w.stop = 1;
    uint8_t ident[256];
    size_t ilen;
    int heartbeats = 0;
    for (int polls = 0; polls < 200 && !atomic_load(&w.done); polls++) {
        Spirefleet__Envelope *r = fake_recv(&f, ident, &ilen);
        if (!r)
            continue;
        ck_assert_int_ne(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB_FAILED);
        heartbeats += r->body_case == SPIREFLEET__ENVELOPE__BODY_HEARTBEAT;
        sf_wire_free(r);
    }
    ck_assert_msg(atomic_load(&w.done), "the worker did not stop (%d heartbeats since)",
                  heartbeats);
    ck_assert_int_le(heartbeats, LIVENESS + 2);
    pthread_join(th, NULL);
    ck_assert_msg(w.rc == SF_OK, "%s", w.err.msg);
    char kept[600];
    snprintf(kept, sizeof kept, "%s/wtest-job000001-a1.shard", w.scratch);
    ck_assert_int_eq(access(kept, F_OK), 0);
    fake_close(&f);
}
END_TEST

/* A worker serving several runs (sf_worker_opts.yield; docs/operator.md
 * "Fairness between runs") that gets a Wait after its job: it delivers the
 * job's shard to this run first (acknowledged), then leaves with a
 * Goodbye instead of waiting, and says it left idle after 1 job. */
START_TEST(a_yielding_worker_delivers_then_leaves_on_a_wait) {
    fake f;
    worker_thread w;
    pthread_t th;
    sf_worker_exit ex;
    memset(&ex, 0xff, sizeof ex); /* every field must be written */
    fake_open(&f, "yield");
    worker_start(&w, &f, &th, &ex);
    play_until_uploaded(&f, &w);
    uint8_t ident[256];
    size_t ilen;
    int acked = 0, goodbye = 0, requests_after = 0;
    for (int polls = 0; polls < 400 && !goodbye; polls++) {
        Spirefleet__Envelope *r = fake_recv(&f, ident, &ilen);
        if (!r)
            continue;
        Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
        if (!acked) { /* the verdict on the shard, to the heartbeat's sender */
            ack(&f, ident, ilen, 1, 0);
            acked = 1;
        }
        if (r->body_case == SPIREFLEET__ENVELOPE__BODY_JOB_REQUEST) {
            requests_after++;
            Spirefleet__Wait wt = SPIREFLEET__WAIT__INIT;
            wt.retry_ms = HB_MS;
            env.body_case = SPIREFLEET__ENVELOPE__BODY_WAIT;
            env.wait = &wt;
            fake_send(&f, ident, ilen, &env);
        } else if (r->body_case == SPIREFLEET__ENVELOPE__BODY_GOODBYE) {
            ck_assert_str_eq(r->goodbye->worker_id, "w1");
            ck_assert_str_eq(r->goodbye->reason, "no job here now; serving its next run");
            goodbye = 1;
        } else {
            ck_assert_int_ne(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB_FAILED);
        }
        sf_wire_free(r);
    }
    ck_assert_msg(goodbye, "no Goodbye (%d job requests after the upload)", requests_after);
    ck_assert_int_eq(requests_after, 1); /* one Wait, and it left */
    pthread_join(th, NULL);
    ck_assert_msg(w.rc == SF_OK, "%s", w.err.msg);
    ck_assert_int_eq(ex.end, SF_WORKER_END_IDLE);
    ck_assert_str_eq(ex.why, "");
    ck_assert_int_eq(ex.jobs, 1);
    char gone[600];
    snprintf(gone, sizeof gone, "%s/wtest-job000001-a1.shard", w.scratch);
    ck_assert_int_eq(access(gone, F_OK), -1); /* delivered, so removed */
    fake_close(&f);
}
END_TEST

/* A run at its worker limit refuses the Hello: a yielding worker returns
 * SF_OK at once with the refusal's reason (for its next run), sends
 * nothing more (it was never admitted: no Goodbye), and took no job. */
START_TEST(a_yielding_worker_refused_returns_the_reason) {
    fake f;
    worker_thread w;
    pthread_t th;
    sf_worker_exit ex;
    memset(&ex, 0xff, sizeof ex);
    fake_open(&f, "refused");
    worker_start(&w, &f, &th, &ex);
    uint8_t ident[256];
    size_t ilen;
    int hellos = 0, others = 0;
    for (int polls = 0; polls < 400 && !atomic_load(&w.done); polls++) {
        Spirefleet__Envelope *r = fake_recv(&f, ident, &ilen);
        if (!r)
            continue;
        if (r->body_case == SPIREFLEET__ENVELOPE__BODY_HELLO) {
            hellos++;
            Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
            Spirefleet__Refusal no = SPIREFLEET__REFUSAL__INIT;
            no.reason = (char *)"run wtest is at its worker limit (1, coordinator.max_workers)";
            env.body_case = SPIREFLEET__ENVELOPE__BODY_REFUSAL;
            env.refusal = &no;
            fake_send(&f, ident, ilen, &env);
        } else {
            others++;
        }
        sf_wire_free(r);
    }
    pthread_join(th, NULL);
    ck_assert_msg(w.rc == SF_OK, "%s", w.err.msg);
    ck_assert_int_eq(hellos, 1);
    ck_assert_int_eq(ex.end, SF_WORKER_END_REFUSED);
    ck_assert_str_eq(ex.why, "refused by the coordinator: run wtest is at its worker limit (1, "
                             "coordinator.max_workers)");
    ck_assert_int_eq(ex.jobs, 0);
    Spirefleet__Envelope *late = fake_recv(&f, ident, &ilen); /* a Goodbye would be here */
    others += late != NULL;
    sf_wire_free(late);
    ck_assert_int_eq(others, 0);
    fake_close(&f);
}
END_TEST

#include "test-worker-client.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("worker-client", "liveness", 120, tmpdir_make, tmpdir_remove)
