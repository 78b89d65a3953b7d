/*
 * gpu-evald — the batching inference server (docs/operator.md).
 *
 *   gpu-evald --backend cpu|cuda --models DIR --bind ENDPOINT
 *             --max-batch N --max-wait-us U
 *             [--model PATH[@SHA256]]... [--precision fp32|tf32|bf16]
 *             [--client-credit N] [--metrics-port P|*] [--threads N] [--device N]
 *             [--endpoint-file PATH] [--keys DIR | --security none] [--metrics-public]
 *
 *   --endpoint-file publishes the bound endpoint (a wildcard host replaced
 *   by this machine's name) in PATH once serving, for workers started with
 *   `sf-fleet worker --evald-file PATH` (common/endpoint_file.h), and
 *   removes it at exit.
 *
 *   Without --keys, gpu-evald serves anyone who reaches --bind: it binds
 *   only an address of this machine alone then (common.h sf_endpoint_is_loopback:
 *   tcp:// on 127.0.0.0/8, ::1 or localhost; ipc://; and inproc://), unless
 *   --security none says plain ZeroMQ on purpose (the run config's
 *   security.mode: none), and refuses anything else as bad usage.
 *
 * Exit status: 0 after SIGINT/SIGTERM, 1 on a load, bind or socket error,
 * 2 on bad usage, 3 when no model passed its canary (nothing is served).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/endpoint_file.h"
#include "common/fetch.h"
#include "gpu-evald/evald.h"

/* The one piece of process state: the server a signal should stop.
 * sf_evald_stop() is a single atomic store, safe in a signal handler. */
static sf_evald *volatile running;

static void on_signal(int sig) {
    (void)sig;
    if (running)
        sf_evald_stop(running);
}

static int usage(void) {
    fprintf(
        stderr,
        "usage: gpu-evald --backend cpu|cuda --bind ENDPOINT (--models DIR | --model "
        "PATH[@SHA256])...\n"
        "                 [--max-batch N] [--max-wait-us U] [--precision fp32|tf32|bf16]\n"
        "                 [--client-credit N] [--metrics-port P|*] [--threads N] [--device N]\n"
        "                 [--model-idle-s N] [--endpoint-file PATH] [--keys DIR | --security "
        "none]\n"
        "                 [--metrics-public] [--models-url TEMPLATE]\n"
        "--keys DIR: CURVE with DIR/server.key; only keys in DIR/clients and DIR/operators\n"
        "get in (sf-fleet keygen; docs/operator.md \"Security\"). Without it: plain, warned,\n"
        "and only on a loopback, ipc:// or inproc:// --bind, unless --security none (plain\n"
        "on any address: anyone who reaches it is served, like security.mode: none).\n"
        "/metrics binds 127.0.0.1 unless --metrics-public (then the --bind address).\n"
        "With --models DIR, a request for a model not loaded yet loads DIR/<sha256>.safetensors\n"
        "(canary first) without a restart; --model-idle-s drops such models after N idle s.\n");
    return 2;
}

static int parse_int(const char *opt, const char *v, int lo, int hi, int *out) {
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "gpu-evald: %s %s: expected an integer in %d..%d\n", opt, v, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

int main(int argc, char **argv) {
    sf_evald_opts o = {0}; /* metrics_port 0: off */
    const char *models_dir = NULL, *endpoint_file = NULL;
    int plain_anywhere = 0; /* --security none */
    const char *models[64];
    int n_models = 0;
    enum {
        O_BACKEND = 1,
        O_PRECISION,
        O_MODELS,
        O_MODEL,
        O_BIND,
        O_MAX_BATCH,
        O_MAX_WAIT,
        O_CREDIT,
        O_METRICS,
        O_THREADS,
        O_IDLE,
        O_DEVICE,
        O_ENDPOINT_FILE,
        O_KEYS,
        O_SECURITY,
        O_METRICS_PUBLIC,
        O_MODELS_URL
    };
    static const struct option opts[] = {{"backend", required_argument, 0, O_BACKEND},
                                         {"precision", required_argument, 0, O_PRECISION},
                                         {"models", required_argument, 0, O_MODELS},
                                         {"model", required_argument, 0, O_MODEL},
                                         {"bind", required_argument, 0, O_BIND},
                                         {"max-batch", required_argument, 0, O_MAX_BATCH},
                                         {"max-wait-us", required_argument, 0, O_MAX_WAIT},
                                         {"client-credit", required_argument, 0, O_CREDIT},
                                         {"metrics-port", required_argument, 0, O_METRICS},
                                         {"threads", required_argument, 0, O_THREADS},
                                         {"model-idle-s", required_argument, 0, O_IDLE},
                                         {"device", required_argument, 0, O_DEVICE},
                                         {"endpoint-file", required_argument, 0, O_ENDPOINT_FILE},
                                         {"keys", required_argument, 0, O_KEYS},
                                         {"security", required_argument, 0, O_SECURITY},
                                         {"metrics-public", no_argument, 0, O_METRICS_PUBLIC},
                                         {"models-url", required_argument, 0, O_MODELS_URL},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    opterr = 0; /* our messages, in our words */
    int ch;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        const char *v = optarg;
        int bad = 0;
        switch (ch) {
        case 'h': usage(); return 0;
        case ':':
            fprintf(stderr, "gpu-evald: %s needs a value\n", argv[optind - 1]);
            return usage();
        case '?':
            /* optopt is also set for a known long option misused (--help=x) */
            if (optopt && strncmp(argv[optind - 1], "--", 2) != 0)
                fprintf(stderr, "gpu-evald: unknown option -%c\n", optopt);
            else
                fprintf(stderr, "gpu-evald: unknown or ambiguous option %s\n", argv[optind - 1]);
            return usage();
        case O_BACKEND:
            if (sf_backend_parse(v, &o.net.backend) != SF_OK) {
                fprintf(stderr, "gpu-evald: --backend %s: expected cpu or cuda\n", v);
                bad = 1;
            }
            break;
        case O_PRECISION:
            if (sf_precision_parse(v, &o.net.precision) != SF_OK) {
                fprintf(stderr, "gpu-evald: --precision %s: expected fp32, tf32 or bf16\n", v);
                bad = 1;
            }
            break;
        case O_MODELS: models_dir = o.models_dir = v; break;
        case O_MODELS_URL: {
            sf_err ue = {0};
            if (sf_fetch_template_check(v, &ue) != SF_OK) {
                fprintf(stderr, "gpu-evald: --models-url: %s\n", ue.msg);
                bad = 1;
            }
            o.models_url = v;
            break;
        }
        case O_IDLE: bad = parse_int("--model-idle-s", v, 0, 1 << 30, &o.model_idle_s); break;
        case O_MODEL:
            if (n_models == 64) {
                fprintf(stderr, "gpu-evald: at most 64 --model options\n");
                bad = 1;
            } else {
                models[n_models++] = v;
            }
            break;
        case O_BIND: o.bind = v; break;
        case O_KEYS: o.keys_dir = v; break;
        case O_SECURITY:
            if (strcmp(v, "none")) {
                fprintf(stderr,
                        "gpu-evald: --security %s: the only value is none (CURVE is --keys DIR)\n",
                        v);
                bad = 1;
            }
            plain_anywhere = 1;
            break;
        case O_METRICS_PUBLIC: o.metrics_public = 1; break;
        case O_MAX_BATCH: bad = parse_int("--max-batch", v, 1, 65536, &o.max_batch); break;
        case O_MAX_WAIT:
            bad = parse_int("--max-wait-us", v, 0, 10000000, &o.max_wait_us);
            if (!bad && o.max_wait_us == 0)
                o.max_wait_us = 1; /* 0 means "default" in the options struct */
            break;
        case O_CREDIT: bad = parse_int("--client-credit", v, 1, 1 << 24, &o.client_credit); break;
        case O_METRICS: {
            sf_err e = {0};
            bad = sf_metrics_port_parse(v, &o.metrics_port, &e) < 0;
            if (bad)
                fprintf(stderr, "gpu-evald: --metrics-port %s\n", e.msg);
            break;
        }
        case O_THREADS: bad = parse_int("--threads", v, 1, 256, &o.net.threads); break;
        case O_DEVICE: bad = parse_int("--device", v, 0, 64, &o.net.device); break;
        case O_ENDPOINT_FILE: endpoint_file = v; break;
        }
        if (bad)
            return usage();
    }
    if (optind < argc) {
        fprintf(stderr, "gpu-evald: unexpected argument %s\n", argv[optind]);
        return usage();
    }
    if (o.models_url && !models_dir) {
        fprintf(stderr, "gpu-evald: --models-url fetches into --models DIR: give it\n");
        return usage();
    }
    if (!o.bind || (!models_dir && n_models == 0)) {
        fprintf(stderr, "gpu-evald: --bind and --models (or --model) are required\n");
        return usage();
    }
    int keyed = o.keys_dir && o.keys_dir[0];
    if (plain_anywhere && keyed) {
        fprintf(stderr, "gpu-evald: --keys and --security none contradict each other: give one\n");
        return usage();
    }
    /* before any model is loaded: a server anyone could use is refused at
     * once, not after minutes of loading */
    if (!keyed && !plain_anywhere && !sf_endpoint_is_loopback(o.bind) &&
        strncmp(o.bind, "inproc://", 9)) {
        fprintf(stderr,
                "gpu-evald: --bind %s is reachable from other machines and there are no keys: "
                "anyone who reaches it would be served. Pass --keys DIR (a key directory made "
                "with `sf-fleet keygen DIR`), or --security none to serve plain ZeroMQ on "
                "purpose\n",
                o.bind);
        return 2;
    }
    sf_err e = {0};
    sf_evald *ev;
    if (sf_evald_create(&o, &ev, &e) != SF_OK) {
        fprintf(stderr, "gpu-evald: %s\n", e.msg);
        return 2;
    }
    int load_failed = 0;
    if (models_dir) {
        int served = 0;
        int rc = sf_evald_add_models_dir(ev, models_dir, &served, &e);
        /* an empty models dir is fine when models are fetched into it */
        if (rc != SF_OK && !(rc == SF_ENOTFOUND && o.models_url))
            load_failed = 1;
    }
    for (int i = 0; i < n_models; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s", models[i]);
        char *at = strrchr(path, '@');
        const char *pin = NULL;
        if (at &&
            !strchr(at + 1, '/')) { /* PATH@SHA256; an '@' inside a directory name is not a pin */
            /* typed by a person: either case, normalised in place (common.h) */
            if (sf_sha256_hex_parse(at + 1, at + 1, NULL) != SF_OK) {
                fprintf(stderr,
                        "gpu-evald: --model %s: '%s' after '@' is not a 64-digit hex SHA-256\n",
                        models[i], at + 1);
                sf_evald_free(ev);
                return usage();
            }
            *at = '\0';
            pin = at + 1;
        }
        sf_err e2 = {0};
        if (sf_evald_add_model(ev, path, pin, NULL, &e2) != SF_OK)
            load_failed = 1;
    }
    if (load_failed) {
        /* A pinned or named model that cannot be loaded is an operator error:
         * never serve a partial set silently. */
        fprintf(stderr, "gpu-evald: a model failed to load (see above); not serving\n");
        sf_evald_free(ev);
        return 1;
    }
    if (sf_evald_models_served(ev) == 0 && !o.models_url) { /* else: fetched when asked */
        fprintf(stderr, "gpu-evald: no model passed its canary; refusing to serve\n");
        sf_evald_free(ev);
        return 3;
    }
    if (sf_evald_bind(ev, &e) != SF_OK) {
        fprintf(stderr, "gpu-evald: %s\n", e.msg);
        sf_evald_free(ev);
        return 1;
    }
    if (endpoint_file &&
        sf_endpoint_file_write(endpoint_file, sf_evald_endpoint(ev), &e) != SF_OK) {
        fprintf(stderr, "gpu-evald: --endpoint-file %s\n", e.msg);
        sf_evald_free(ev);
        return 1;
    }
    running = ev;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int rc = sf_evald_run(ev, &e);
    running = NULL;
    if (endpoint_file)
        unlink(endpoint_file);
    if (rc != SF_OK)
        fprintf(stderr, "gpu-evald: %s\n", e.msg);
    else
        fprintf(stderr, "gpu-evald: stopped\n");
    sf_evald_free(ev);
    return rc == SF_OK ? 0 : 1;
}
