/*
 * bench_coord.h — what the benchmarks that drive a coordinator in-process
 * share: its serving loop on a thread of its own, and fire-and-forget
 * sends for the simulated clients. Header only; include after
 * coordinator/coordinator.h.
 */
#ifndef SF_BENCH_COORD_H
#define SF_BENCH_COORD_H

#include <signal.h>
#include <stdio.h>
#include <zmq.h>

#include "coordinator/coordinator.h"
#include "fleet/wire.h"

/* The coordinator `co` serves until `stop` is set (serve() on a thread). */
typedef struct serve_arg {
    sf_coordinator *co;
    volatile sig_atomic_t stop;
} serve_arg;

static inline void *serve(void *p) {
    serve_arg *a = p;
    sf_err e = {0};
    sf_coordinator_serve(a->co, &a->stop, &e);
    return NULL;
}

/* One envelope to the coordinator on DEALER `s`; a benchmark client does
 * not stop for a failed send (the next lease shows it). */
static inline void send_env(void *s, Spirefleet__Envelope *env) {
    sf_wire_send(s, NULL, 0, env, 0);
}

/* Gives job `job` back on DEALER `s` as abandoned (a worker holds at most
 * CO_MAX_LEASES_PER_WORKER leases, so a lease benchmark returns each one
 * before it asks again). */
static inline void send_abandon(void *s, uint64_t job) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__JobFailed jf = SPIREFLEET__JOB_FAILED__INIT;
    jf.job_id = job;
    jf.reason = (char *)SF_JOB_ABANDONED;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_JOB_FAILED;
    env.job_failed = &jf;
    send_env(s, &env);
}

/* A simulated worker's Hello on DEALER `s`: worker id `id`, process id
 * `pid` (0: none), this build's protocol version. */
static inline void send_hello(void *s, const char *id, uint32_t pid) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Hello h = SPIREFLEET__HELLO__INIT;
    h.protocol_version = SF_PROTOCOL_VERSION;
    h.worker_id = (char *)id;
    h.pid = pid;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    send_env(s, &env);
}

/* Open a lease benchmark's n clients: DEALERs to `endpoint` (CURVE with
 * `sec`, or plain with NULL) into socks[0..n) and items, each saying Hello
 * as "bench-<i>". */
static inline void bench_lease_clients_open(void *ctx, const char *endpoint,
                                            const sf_zsec_client *sec, void **socks,
                                            zmq_pollitem_t *items, int n) {
    for (int i = 0; i < n; i++) {
        sf_wire_dealer_secure(ctx, endpoint, sec, &socks[i], NULL);
        char id[32];
        snprintf(id, sizeof id, "bench-%d", i);
        send_hello(socks[i], id, 0);
        items[i] = (zmq_pollitem_t){socks[i], 0, ZMQ_POLLIN, 0};
    }
}

/* One turn of a lease benchmark's clients: DEALERs socks[0..n) (polled
 * through items) that ask for a job as soon as they are welcomed or have
 * given the last one back. Waits up to `ms` for answers; each Welcome adds
 * to *welcomed and asks; each Job calls on_lease(ctx, milliseconds since
 * that client asked) (on_lease may be NULL), gives the job back and asks
 * again. sent[i]: when client i last asked (monotonic ns). Returns the
 * leases of this turn. */
static inline int bench_lease_turn(void **socks, zmq_pollitem_t *items, uint64_t *sent, int n,
                                   int *welcomed, int ms, void (*on_lease)(void *, double),
                                   void *ctx) {
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__JobRequest jr = SPIREFLEET__JOB_REQUEST__INIT;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_JOB_REQUEST;
    req.job_request = &jr;
    int leases = 0;
    if (zmq_poll(items, n, ms) <= 0)
        return 0;
    for (int i = 0; i < n; i++) {
        if (!(items[i].revents & ZMQ_POLLIN))
            continue;
        zmq_msg_t m;
        zmq_msg_init(&m);
        while (zmq_msg_recv(&m, socks[i], ZMQ_DONTWAIT) >= 0) {
            Spirefleet__Envelope *env = NULL;
            if (sf_wire_decode(zmq_msg_data(&m), zmq_msg_size(&m), &env, NULL) != SF_OK)
                continue;
            uint64_t t = sf_now_ns();
            if (env->body_case == SPIREFLEET__ENVELOPE__BODY_WELCOME) {
                ++*welcomed;
                sent[i] = sf_now_ns();
                send_env(socks[i], &req);
            } else if (env->body_case == SPIREFLEET__ENVELOPE__BODY_JOB) {
                leases++;
                if (on_lease)
                    on_lease(ctx, (double)(t - sent[i]) / 1e6);
                send_abandon(socks[i], env->job->job_id);
                sent[i] = sf_now_ns();
                send_env(socks[i], &req);
            }
            sf_wire_free(env);
        }
        zmq_msg_close(&m);
    }
    return leases;
}

#endif
