/*
 * bench_coord.h — what the benchmarks that drive a coordinator in-process
 * share: its serving loop on a thread of its own, and fire-and-forget
 * sends for the simulated clients. Header only; include after
 * coordinator/coordinator.h.
 */
#ifndef SF_BENCH_COORD_H
#define SF_BENCH_COORD_H

#include <signal.h>

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

#endif
