/*
 * bench_metrics.c — /metrics under load (common/metrics_http.h).
 *
 *   metrics.fleet_connections      DEALER peers connected to one in-process
 *                                  coordinator, each having said Hello
 *   metrics.gets_per_s_alone       GET /metrics answered per second with no
 *                                  fleet peer connected
 *   metrics.gets_per_s_loaded      the same with every peer connected and
 *                                  300 idle HTTP clients holding half a request
 *   metrics.loaded_over_alone      the ratio (the figure; > 0 means it still
 *                                  answers at all: select() mode did not past
 *                                  1,024 descriptors)
 *   metrics.answered_loaded        of the loaded GETs, how many got 200
 *
 * usage: bench-metrics [peers] (default 2000)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "bench.h"
#include "bench_coord.h"
#include "bench_http.h"
#include "common/metrics_http.h"
#include "coordinator/coordinator.h"

#define GETS 200
#define IDLE 300

static void emit(const char *name, double value, const char *unit) {
    printf("{\"bench\":\"metrics.%s\",\"value\":%.3f,\"unit\":\"%s\",\"n\":1,\"median\":%.3f}\n",
           name, value, unit, value);
}

typedef struct stepper {
    sf_coordinator *co;
    atomic_int stop;
} stepper;

static void *step_main(void *arg) {
    stepper *s = arg;
    sf_err e = {0};
    while (!atomic_load(&s->stop))
        if (sf_coordinator_step(s->co, 20, &e) < 0) {
            fprintf(stderr, "bench-metrics: %s\n", e.msg);
            break;
        }
    return NULL;
}

/* One GET /metrics; 1 when answered 200. */
static int get_metrics(int port) {
    char buf[16384];
    size_t got;
    return bench_get_metrics(port, buf, sizeof buf, &got);
}

/* GETS requests: per second, and how many were answered. */
static double gets_per_s(int port, int *answered) {
    uint64_t t0 = sf_now_ns();
    *answered = 0;
    for (int i = 0; i < GETS; i++)
        *answered += get_metrics(port);
    return GETS / ((double)(sf_now_ns() - t0) / 1e9);
}

int main(int argc, char **argv) {
    int peers = argc > 1 ? atoi(argv[1]) : 2000;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    char dir[] = "/tmp/sf-bench-metrics-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "run: {name: mbench, output_dir: '%s/run'}\n"
             "seeds: {start: 0, count: 100000, job_size: 10}\n"
             "coordinator: {endpoint: 'tcp://127.0.0.1:*', heartbeat_ms: 60000}\n",
             dir);
    sf_run_config cfg;
    sf_err e = {0};
    sf_coordinator *co;
    sf_coord_opts o = {.metrics_port = SF_METRICS_ANY_PORT};
    if (sf_config_parse(yaml, strlen(yaml), "bench.yaml", &cfg, &e) < 0 ||
        sf_coordinator_open(&cfg, &o, &co, &e) < 0) {
        fprintf(stderr, "bench-metrics: %s\n", e.msg);
        return 1;
    }
    int port = sf_coordinator_metrics_port(co);
    stepper st = {.co = co};
    pthread_t th;
    pthread_create(&th, NULL, step_main, &st);
    int answered;
    double alone = gets_per_s(port, &answered);

    void *ctx = zmq_ctx_new();
    zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, peers + 16);
    void **socks = calloc((size_t)peers, sizeof *socks);
    int connected = 0;
    for (int i = 0; i < peers; i++) {
        if (sf_wire_dealer(ctx, sf_coordinator_endpoint(co), &socks[i], &e) < 0) {
            fprintf(stderr, "bench-metrics: peer %d: %s\n", i, e.msg);
            break;
        }
        char id[32];
        snprintf(id, sizeof id, "peer%d", i);
        send_hello(socks[i], id, (uint32_t)i + 1);
        connected++;
    }
    /* every peer's Welcome back: the coordinator holds them all */
    int welcomed = 0;
    for (int i = 0; i < connected; i++) {
        Spirefleet__Envelope *r;
        if (sf_wire_recv(socks[i], "coordinator", 10000, &r, &e) == SF_OK) {
            welcomed += r->body_case == SPIREFLEET__ENVELOPE__BODY_WELCOME;
            sf_wire_free(r);
        }
    }
    int idle[IDLE], n_idle = 0;
    for (int i = 0; i < IDLE; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_port = htons((uint16_t)port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
            write(fd, "GET /me", 7) != 7) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        idle[n_idle++] = fd;
    }
    double loaded = gets_per_s(port, &answered);
    emit("fleet_connections", welcomed, "peers");
    emit("idle_http_clients", n_idle, "connections");
    emit("gets_per_s_alone", alone, "requests/s");
    emit("gets_per_s_loaded", loaded, "requests/s");
    emit("loaded_over_alone", loaded / alone, "ratio");
    emit("answered_loaded", answered, "of 200");
    for (int i = 0; i < n_idle; i++)
        close(idle[i]);
    for (int i = 0; i < connected; i++)
        zmq_close(socks[i]);
    zmq_ctx_term(ctx);
    free(socks);
    atomic_store(&st.stop, 1);
    pthread_join(th, NULL);
    sf_coordinator_close(co);
    return bench_rm_rf(dir) == 0 && answered == GETS && welcomed == peers ? 0 : 1;
}
