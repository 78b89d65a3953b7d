/*
 * bench_coord.h — what the benchmarks that drive a coordinator in-process
 * share: its serving loop on a thread of its own, and a fire-and-forget
 * send for the simulated clients. Header only; include after
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

#endif
