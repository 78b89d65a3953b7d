/* dashboard.c — sf-fleet dashboard: a coordinator's dashboard on this
 * machine, fetched through the coordinator's CURVE socket with an
 * operator key (docs/operator.md "Dashboard"). The coordinator's own HTTP
 * server stays on loopback (or off); the operator's browser talks to a
 * server on 127.0.0.1 here, whose every request becomes one ApiRequest.
 *
 *   sf-fleet dashboard (ENDPOINT | RUN_DIR) [--keys DIR] [--port P|*]
 *
 * RUN_DIR: the run's output directory; the endpoint is read from its
 * coordinator.endpoint file (again for each request, so a coordinator
 * restarted elsewhere is followed) and the keys default to RUN_DIR/keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/endpoint_file.h"
#include "common/metrics_http.h"
#include "coordinator/coordinator.h"
#include "sf-fleet/cli.h"

enum { ASK_TIMEOUT_MS = 5000 };

typedef struct proxy {
    char endpoint[1100];      /* given, or read from endpoint_file per request */
    char endpoint_file[4200]; /* "" when an endpoint was given */
    const char *keys;
} proxy;

static char *no_metrics(void *ctx, size_t *len) {
    (void)ctx;
    static const char msg[] = "# the coordinator's /metrics is on its own HTTP server\n";
    *len = sizeof msg - 1;
    return strdup(msg);
}

/* Every path: one ApiRequest to the coordinator (libmicrohttpd's thread). */
static int forward(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    proxy *p = ctx;
    sf_err e = {0};
    char endpoint[1100];
    snprintf(endpoint, sizeof endpoint, "%s", p->endpoint);
    if (p->endpoint_file[0] &&
        sf_endpoint_file_read(p->endpoint_file, endpoint, sizeof endpoint, &e) != SF_OK)
        endpoint[0] = '\0';
    Spirefleet__Envelope *env = NULL;
    Spirefleet__ApiReply *a = NULL;
    int rc = endpoint[0] ? sf_fleet_api(endpoint, p->keys, req->path, ASK_TIMEOUT_MS, &env, &a, &e)
                         : SF_ENOTFOUND;
    if (rc < 0) { /* said to the browser, which keeps polling */
        char msg[SF_ERR_MSG_MAX + 64];
        int n = snprintf(msg, sizeof msg, "sf-fleet dashboard: %s\n",
                         endpoint[0] ? e.msg : "no coordinator serves this run now");
        rep->status = 502;
        rep->body = strdup(msg);
        rep->len = rep->body ? (size_t)n : 0;
        return rep->body ? 0 : -1;
    }
    rep->status = a->status;
    rep->body = malloc(a->body.len + 1);
    if (!rep->body) {
        sf_wire_free(env);
        return -1;
    }
    memcpy(rep->body, a->body.data, a->body.len);
    rep->len = a->body.len;
    /* the content type is one of the dashboard's few, kept as a static
     * string: the reply's copy is freed below */
    static const char *const types[] = {"text/html; charset=utf-8", "application/json",
                                        "application/schema+json", "text/plain; charset=utf-8"};
    rep->content_type = types[3];
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (a->content_type && !strcmp(a->content_type, types[i]))
            rep->content_type = types[i];
    sf_wire_free(env);
    return 0;
}

int cmd_dashboard(int argc, char **argv, volatile sig_atomic_t *stop) {
    const char *keys = NULL, *target = NULL;
    int port = SF_METRICS_ANY_PORT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--keys") && i + 1 < argc) {
            keys = argv[++i];
        } else if (!strcmp(argv[i], "--port") && i + 1 < argc) {
            sf_err e = {0};
            if (sf_metrics_port_parse(argv[++i], &port, &e) != SF_OK || port == SF_METRICS_OFF) {
                fprintf(stderr, "sf-fleet dashboard: --port %s: %s\n", argv[i],
                        port == SF_METRICS_OFF ? "0 would serve nothing" : e.msg);
                return 2;
            }
        } else if (argv[i][0] == '-' || target) {
            fprintf(stderr, "usage: sf-fleet dashboard (ENDPOINT | RUN_DIR) [--keys DIR] "
                            "[--port P|*]\n");
            return 2;
        } else {
            target = argv[i];
        }
    }
    if (!target) {
        fprintf(stderr,
                "usage: sf-fleet dashboard (ENDPOINT | RUN_DIR) [--keys DIR] [--port P|*]\n");
        return 2;
    }
    proxy p = {.keys = keys};
    struct stat st;
    char own_keys[4200];
    if (stat(target, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(p.endpoint_file, sizeof p.endpoint_file, "%s/" SF_FLEET_ENDPOINT_FILE, target);
        snprintf(own_keys, sizeof own_keys, "%s/keys", target);
        if (!p.keys && stat(own_keys, &st) == 0 && S_ISDIR(st.st_mode))
            p.keys = own_keys;
    } else {
        snprintf(p.endpoint, sizeof p.endpoint, "%s", target);
    }
    /* one question first: a key that is not an operator's, or no
     * coordinator, is said now rather than in the browser */
    char endpoint[1100];
    sf_err e = {0};
    snprintf(endpoint, sizeof endpoint, "%s", p.endpoint);
    if (p.endpoint_file[0] &&
        sf_endpoint_file_read(p.endpoint_file, endpoint, sizeof endpoint, &e) != SF_OK) {
        fprintf(stderr, "sf-fleet dashboard: %s: %s\n", target, e.msg);
        return 1;
    }
    Spirefleet__Envelope *env;
    Spirefleet__ApiReply *a;
    if (sf_fleet_api(endpoint, p.keys, "/api/status", ASK_TIMEOUT_MS, &env, &a, &e) < 0) {
        fprintf(stderr, "sf-fleet dashboard: %s\n", e.msg);
        return 1;
    }
    sf_wire_free(env);
    const sf_http_route routes[] = {{"/", forward, &p}};
    sf_metrics_http *h;
    if (sf_metrics_http_start_routes(NULL, port, no_metrics, NULL, routes, 1, &h, &e) != SF_OK) {
        fprintf(stderr, "sf-fleet dashboard: %s\n", e.msg);
        return 1;
    }
    printf("sf-fleet dashboard: http://127.0.0.1:%d/ shows the coordinator at %s (through its "
           "CURVE socket%s%s)\n",
           sf_metrics_http_port(h), target, p.keys ? ", keys in " : ", no keys",
           p.keys ? p.keys : "");
    fflush(stdout);
    while (!*stop) {
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
    }
    sf_metrics_http_stop(h);
    return 0;
}
