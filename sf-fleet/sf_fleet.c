/*
 * sf-fleet — the operator's command.
 *
 *   sf-fleet run CONFIG [--workers N]   everything on this machine: the
 *                                        coordinator (in this process) and N
 *                                        worker processes; a progress line;
 *                                        a summary at the end
 *   sf-fleet coordinator CONFIG [--bind EP] [--metrics-port P|*]
 *                   [--endpoint-file PATH] [--exit-when-done]
 *                                        (--endpoint-file: publish the bound
 *                                        endpoint there, for workers started
 *                                        with --connect-file)
 *   sf-fleet worker (--connect EP | --connect-file PATH)... [--recheck S] [--threads T]
 *                   [--fights-per-thread G] [--id ID] [--scratch DIR] [--max-jobs N]
 *                   [--local-net BUNDLE | --evald EP | --evald-file PATH |
 *                    --fetch-models [--model-cache DIR]]
 *                                        (--local-net: evaluate a net run's leaves
 *                                        in-process instead of via gpu-evald;
 *                                        SIGUSR1 drains: finish the job in hand,
 *                                        upload it, leave)
 *   sf-fleet slurm CONFIG [--out DIR]    sbatch scripts for the run (slurm.c)
 *   sf-fleet status ENDPOINT             progress of a running coordinator
 *   sf-fleet status RUN_DIR              the same for the run in an output dir
 *                                        (through the coordinator.endpoint its
 *                                        coordinator publishes there, else
 *                                        from its ledger), or a loop's state
 *   sf-fleet stop ENDPOINT               ask it to stop
 *   sf-fleet check [--json] [--estimate [--calibrate]] CONFIG
 *                                        validate; print the effective config
 *                                        (YAML, or one line of JSON) and what
 *                                        the run will create and cost
 *   sf-fleet rebuild-ledger CONFIG       replace a damaged ledger with one
 *                                        built from the stored shards
 *   sf-fleet backup RUN_DIR DEST [--with-shards]
 *                                        a consistent copy of the run's
 *                                        ledger, config, keys and shard
 *                                        manifest (and shards), also while a
 *                                        coordinator serves it
 *   sf-fleet restore BACKUP RUN_DIR      a run directory from a backup, with
 *                                        RUN_DIR/config.yaml to resume it
 *
 * Exit codes: 0 success (run complete), 1 runtime failure, 2 bad arguments
 * or configuration, 3 stopped before the run completed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/endpoint_file.h"
#include "common/io.h"
#include "common/metrics_http.h"
#include "common/registry.h"
#include "coordinator/coordinator.h"
#include "coordinator/dashboard.h"
#include "gate/stats.h"
#include "sf-fleet/cli.h"
#include "sf-fleet/estimate.h"
#include "sf-fleet/slurm.h"
#include "worker/worker.h"

/* The one piece of process-wide state: what the signal handler has seen.
 * 1 = stop cleanly (finish nothing new, abandon the current job); a second
 * SIGINT aborts at once. */
static volatile sig_atomic_t g_stop;
/* SIGUSR1 (a worker): drain, that is take no new job, finish and upload the
 * one in hand, then leave. Slurm sends it before a time limit (--signal). */
static volatile sig_atomic_t g_drain;

static void on_drain(int sig) {
    (void)sig;
    g_drain = 1;
}

/* First SIGINT/SIGTERM: stop handing out work and shut down cleanly. A
 * second SIGINT kills at once, unless it lands within a second of the first:
 * wrappers such as timeout(1) deliver one interrupt to both the process and
 * its group, and that must not count as the operator pressing Ctrl-C twice.
 * Only this handler touches first_ns (SIGINT is blocked while it runs). */
static void on_signal(int sig) {
    static uint64_t first_ns;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (g_stop == 0)
        first_ns = now;
    else if (sig == SIGINT && now - first_ns > 1000000000ull)
        _exit(130);
    if (g_stop < 2 && (g_stop == 0 || now - first_ns > 1000000000ull))
        g_stop++;
}

static void install_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT); /* the handler never nests */
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct sigaction su;
    memset(&su, 0, sizeof su);
    su.sa_handler = on_drain;
    sigemptyset(&su.sa_mask);
    sigaction(SIGUSR1, &su, NULL);
}

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: sf-fleet run CONFIG [--workers N]\n"
        "       sf-fleet coordinator CONFIG [--bind ENDPOINT] [--metrics-port PORT|*]\n"
        "                       [--endpoint-file PATH] [--exit-when-done]\n"
        "       sf-fleet worker (--connect ENDPOINT | --connect-file PATH)... [--recheck S]\n"
        "                       [--threads T]\n"
        "                       [--fights-per-thread G] [--id ID] [--scratch DIR] [--max-jobs N]\n"
        "                       [--local-net BUNDLE | --evald ENDPOINT | --evald-file PATH |\n"
        "                        --fetch-models [--model-cache DIR]] [--model-url TEMPLATE]\n"
        "                       [--local-sides]\n"
        "                       [--keys DIR]\n"
        "       sf-fleet status ENDPOINT [--json] [--keys DIR]\n"
        "       sf-fleet dashboard (ENDPOINT | RUN_DIR) [--keys DIR] [--port P|*]\n"
        "       sf-fleet stop ENDPOINT [--keys DIR]\n"
        "       sf-fleet keygen DIR [--add NAME [--operator]]\n"
        "       sf-fleet quarantine ENDPOINT --worker KEY [--since T] [--keys DIR]\n"
        "       sf-fleet check [--json] [--estimate [--calibrate]] CONFIG\n"
        "       sf-fleet rebuild-ledger CONFIG\n"
        "       sf-fleet backup RUN_DIR DEST [--with-shards]\n"
        "       sf-fleet restore BACKUP RUN_DIR\n"
        "       sf-fleet slurm CONFIG [--out DIR]\n"
        "       sf-fleet gate report RUN_DIR [--out DIR]\n"
        "       sf-fleet loop CONFIG          self-play, train, gate, promote (docs/loop.md)\n"
        "       sf-fleet status RUN_DIR [--json]  a run's status (its output dir: from the\n"
        "                                     coordinator serving it, else its ledger)\n"
        "                                     or a loop's state (its directory)\n"
        "       sf-fleet siblings CONFIG --model BUNDLE [--seeds FILE] SHARD|DIR...\n"
        "                                     how a network ranks sibling moves\n"
        "--keys DIR (default $SF_KEYS): CURVE keys (docs/operator.md \"Security\").\n"
        "Exit codes: 0 ok, 1 failure, 2 bad arguments or config, 3 stopped early.\n"
        "See docs/operator.md.\n");
}

/* The one operand after the options (CONFIG), or NULL after printing the
 * usage. */
static const char *one_operand(int argc, char **argv) {
    if (optind == argc - 1)
        return argv[optind];
    usage(stderr);
    return NULL;
}

/* Whether an endpoint given on the command line can reach fleet processes;
 * prints why not, naming `what` ("--connect", "status", ...). */
static int endpoint_arg_ok(const char *what, const char *endpoint) {
    const char *why = sf_endpoint_problem(endpoint);
    if (why)
        fprintf(stderr, "sf-fleet: %s %s: %s\n", what, endpoint, why);
    return why == NULL;
}

static void print_problem(void *ctx, const char *problem) {
    int *n = ctx;
    if (++*n <= 20)
        fprintf(stderr, "sf-fleet: %s\n", problem);
}

/* Load a config, printing every problem in it (at most 20 lines). */
static int load(const char *path, sf_run_config *cfg) {
    sf_err err = {0};
    int n = 0;
    if (sf_config_load_all(path, cfg, print_problem, &n, &err) < 0) {
        if (n > 20)
            fprintf(stderr, "sf-fleet: %s: %d more problems not shown\n", path, n - 20);
        return -1;
    }
    return 0;
}

int sf_fleet_load(const char *path, sf_run_config *cfg) {
    return load(path, cfg);
}

void sf_fleet_warn_placeholder_sha(const char *path, const sf_run_config *cfg) {
    static const char zeros[] = "0000000000000000000000000000000000000000000000000000000000000000";
    if (!strcmp(cfg->model.sha256, zeros))
        fprintf(stderr,
                "sf-fleet: warning: %s: model.sha256 is all zeros, a placeholder: pin the "
                "SHA-256 of your bundle (sha256sum BUNDLE)\n",
                path);
}

static int parse_uint(const char *s, const char *what, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "sf-fleet: %s must be an integer in %d..%d, got '%s'\n", what, lo, hi, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Open the coordinator of `cfg` (bind: NULL for the config's endpoint;
 * metrics: metrics_http.h) with the log sink `log`, `log_ctx`
 * (sf_log_to_file and stderr, or sf-fleet run's run_log). Returns -1 when
 * open, else the exit code after printing why after `who`: 2 when the
 * ledger holds another config, 3 when a signal stopped it while it created
 * the run's jobs (the next start goes on from there), 1 otherwise. */
static int open_coordinator(const char *who, const sf_run_config *cfg, const char *bind,
                            int metrics, int exit_when_done, sf_log_fn log, void *log_ctx,
                            sf_coordinator **co) {
    sf_coord_opts o = {.bind = bind,
                       .metrics_port = metrics,
                       .exit_when_done = exit_when_done,
                       .log = log,
                       .log_ctx = log_ctx,
                       .stop = &g_stop};
    sf_err err = {0};
    if (sf_coordinator_open(cfg, &o, co, &err) == SF_OK)
        return -1;
    fprintf(stderr, "%s: %s\n", who, err.msg);
    if (err.code == SF_ESTATE && g_stop)
        return 3;
    return err.code == SF_ECONFIG ? 2 : 1;
}

/* ---- check ---------------------------------------------------------------- */

/* check CONFIG: "# CONFIG: valid; config digest D" and the effective config
 * as YAML on stdout. check --json CONFIG: one line of JSON on stdout,
 * {"config_digest": D, "config": the effective config (sf_config_to_json:
 * what programs read the defaults from)}, and the "valid; config digest"
 * line on stderr for people. --estimate adds what the run will create and
 * cost (estimate.h): a section after the YAML, or "estimate" in the JSON;
 * --calibrate takes the estimate's rates from one small job played here
 * instead of the measured ones. */
static int cmd_check(int argc, char **argv) {
    int json = 0, estimate = 0, calibrate = 0;
    for (int i = 1; i < argc - 1; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--estimate"))
            estimate = 1;
        else if (!strcmp(argv[i], "--calibrate"))
            estimate = calibrate = 1;
        else {
            usage(stderr);
            return 2;
        }
    }
    if (argc < 2 || argv[argc - 1][0] == '-') {
        usage(stderr);
        return 2;
    }
    const char *path = argv[argc - 1];
    sf_run_config cfg;
    if (load(path, &cfg) < 0)
        return 2;
    char digest[65];
    if (sf_config_digest(&cfg, digest) < 0) {
        fprintf(stderr, "sf-fleet: %s: out of memory\n", path);
        return 1;
    }
    fprintf(json ? stderr : stdout, "# %s: valid; config digest %s\n", path, digest);
    sf_fleet_warn_placeholder_sha(path, &cfg);
    sf_estimate_rates rates;
    sf_estimate est;
    if (estimate) {
        sf_estimate_measured(&rates);
        if (calibrate) {
            const char *tmp = getenv("TMPDIR");
            sf_err err = {0};
            /* 32 fights: about a second of CPU for the demo's config; a
             * fight's length varies too much for fewer to say much */
            uint32_t seeds = cfg.seed_count < 32 ? (uint32_t)cfg.seed_count : 32;
            fprintf(stderr, "sf-fleet: %s: timing %u seeds on one thread...\n", path, seeds);
            if (sf_estimate_calibrate(&cfg, seeds, tmp && tmp[0] ? tmp : "/tmp", &rates, &err) <
                0) {
                fprintf(stderr, "sf-fleet: %s: --calibrate: %s\n", path, err.msg);
                return 1;
            }
        }
        sf_estimate_compute(&cfg, &rates, &est);
        for (int i = 0; json && i < est.n_warnings; i++)
            fprintf(stderr, "sf-fleet: warning: %s: %s\n", path, est.warnings[i]);
    }
    if (!json) {
        sf_config_print(&cfg, stdout);
        if (estimate)
            sf_estimate_print(&est, &rates, stdout);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    char *text = sf_config_to_json(&cfg);
    json_t *eff = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    json_t *doc = eff ? json_pack("{s:s,s:o}", "config_digest", digest, "config", eff) : NULL;
    if (doc && estimate)
        json_object_set_new(doc, "estimate", sf_estimate_to_json(&est, &rates));
    char *line = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!line) {
        fprintf(stderr, "sf-fleet: %s: out of memory\n", path);
        return 1;
    }
    printf("%s\n", line);
    free(line);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* ---- rebuild-ledger ------------------------------------------------------- */

/* A damaged ledger (the coordinator refuses to start on it, naming what is
 * wrong) is replaced by one built from the sealed shards in shards/. */
static int cmd_rebuild_ledger(int argc, char **argv) {
    if (argc != 2) {
        usage(stderr);
        return 2;
    }
    sf_run_config cfg;
    if (load(argv[1], &cfg) < 0)
        return 2;
    sf_ledger_rebuild rep;
    sf_err err = {0};
    sf_coord_opts o = {.log = sf_log_to_file, .log_ctx = stderr};
    if (sf_coordinator_rebuild_ledger(&cfg, &o, &rep, &err) < 0) {
        fprintf(stderr, "sf-fleet rebuild-ledger: %s\n", err.msg);
        return 1;
    }
    if (rep.moved_to[0])
        printf("old ledger moved to %s\n", rep.moved_to);
    printf("new ledger: %llu of %llu jobs done from the shards in %s/shards; the others will be "
           "issued again\n",
           (unsigned long long)rep.jobs_done, (unsigned long long)rep.jobs_total, cfg.output_dir);
    return 0;
}

/* ---- backup and restore --------------------------------------------------- */

/* backup RUN_DIR DEST [--with-shards]: a consistent copy of a run's ledger,
 * config, keys and shard manifest (and shards), while a coordinator may be
 * serving it (coordinator.h sf_coordinator_backup). */
static int cmd_backup(int argc, char **argv) {
    int with_shards = 0, n = 0;
    const char *args[2] = {NULL, NULL};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--with-shards"))
            with_shards = 1;
        else if (argv[i][0] == '-' || n == 2) {
            fprintf(stderr, "sf-fleet backup: unexpected '%s'\n", argv[i]);
            n = -1;
            break;
        } else
            args[n++] = argv[i];
    }
    if (n != 2) {
        fprintf(stderr, "usage: sf-fleet backup RUN_DIR DEST [--with-shards]\n");
        return 2;
    }
    sf_run_backup rep;
    sf_err err = {0};
    if (sf_coordinator_backup(args[0], args[1], with_shards, &rep, &err) < 0) {
        fprintf(stderr, "sf-fleet backup: %s\n", err.msg);
        return err.code == SF_EINVAL ? 2 : 1;
    }
    printf("backup of run %s in %s: ledger %llu bytes (compacted), %llu of %llu jobs done, ",
           rep.run, args[1], (unsigned long long)rep.ledger_bytes,
           (unsigned long long)rep.jobs_done, (unsigned long long)rep.jobs_total);
    if (with_shards)
        printf("%llu shards (%llu linked, %llu copied)", (unsigned long long)rep.jobs_done,
               (unsigned long long)rep.shards_linked, (unsigned long long)rep.shards_copied);
    else
        printf("shards listed in shards.manifest, not copied");
    printf("%s\n", rep.keys ? ", keys" : "");
    return 0;
}

/* restore BACKUP RUN_DIR: a run directory made from a backup, with the
 * config to resume it (coordinator.h sf_coordinator_restore). */
static int cmd_restore(int argc, char **argv) {
    if (argc != 3 || argv[1][0] == '-' || argv[2][0] == '-') {
        fprintf(stderr, "usage: sf-fleet restore BACKUP RUN_DIR\n");
        return 2;
    }
    /* the restored config names its output dir: absolute, to resume from anywhere */
    char dir[SF_CFG_PATH], cwd[SF_CFG_PATH - 32];
    if (argv[2][0] == '/' || !getcwd(cwd, sizeof cwd))
        snprintf(dir, sizeof dir, "%s", argv[2]);
    else if ((size_t)snprintf(dir, sizeof dir, "%s/%s", cwd, argv[2]) >= sizeof dir) {
        fprintf(stderr, "sf-fleet restore: %s: path too long\n", argv[2]);
        return 2;
    }
    sf_run_backup rep;
    sf_err err = {0};
    if (sf_coordinator_restore(argv[1], dir, &rep, &err) < 0) {
        fprintf(stderr, "sf-fleet restore: %s\n", err.msg);
        return err.code == SF_EINVAL ? 2 : 1;
    }
    printf("restored run %s into %s: ledger, %llu shards%s\n", rep.run, dir,
           (unsigned long long)(rep.shards_linked + rep.shards_copied), rep.keys ? ", keys" : "");
    printf("resume it with: sf-fleet run %s/config.yaml (or sf-fleet coordinator "
           "%s/config.yaml)\n",
           dir, dir);
    return 0;
}

/* ---- keys ----------------------------------------------------------------- */

/* Take "--keys DIR" out of argv (it may come anywhere after the command);
 * its value, else $SF_KEYS, else NULL (plain). */
static const char *keys_arg(int *argc, char **argv) {
    const char *keys = getenv("SF_KEYS");
    for (int i = 1; i + 1 < *argc; i++)
        if (!strcmp(argv[i], "--keys")) {
            keys = argv[i + 1];
            for (int j = i; j + 2 <= *argc; j++)
                argv[j] = argv[j + 2];
            *argc -= 2;
            break;
        }
    return keys && keys[0] ? keys : NULL;
}

/* keygen DIR: a key directory (common/zsec.h): server, worker and
 * operator keypairs and the lists, keeping keys already there.
 * keygen DIR --add NAME [--operator]: one more client key, NAME.key, its
 * public half in clients/ (operators/ with --operator). */
static int cmd_keygen(int argc, char **argv) {
    const char *add = NULL;
    int op = 0;
    if (argc >= 4 && !strcmp(argv[2], "--add")) {
        add = argv[3];
        op = argc == 5 && !strcmp(argv[4], "--operator");
        if (argc > 5 || (argc == 5 && !op)) {
            usage(stderr);
            return 2;
        }
    } else if (argc != 2) {
        usage(stderr);
        return 2;
    }
    if (add && !sf_str_is_name(add, 63)) {
        fprintf(stderr,
                "sf-fleet keygen: --add %s: a key name is 1..63 of A-Z a-z 0-9 . _ : @ + -\n", add);
        return 2;
    }
    sf_err err = {0};
    char have[SF_CFG_PATH + 80];
    snprintf(have, sizeof have, "%s/%s.key", argv[1], add ? add : "");
    if (add && access(have, F_OK) == 0) { /* --add makes a new key; it never reuses one */
        fprintf(stderr, "sf-fleet keygen: %s exists: --add makes a new key; choose another name\n",
                have);
        return 1;
    }
    int rc =
        add ? sf_zsec_add_key(argv[1], add, op ? SF_ZSEC_OPERATORS_DIR : SF_ZSEC_CLIENTS_DIR, &err)
            : sf_zsec_ensure_dir(argv[1], &err);
    if (rc < 0) {
        fprintf(stderr, "sf-fleet keygen: %s\n", err.msg);
        return 1;
    }
    if (add)
        printf("%s/%s.key: %s key (its public half in %s/%s/%s.pub)\n", argv[1], add,
               op ? "an operator" : "a client", argv[1],
               op ? SF_ZSEC_OPERATORS_DIR : SF_ZSEC_CLIENTS_DIR, add);
    else
        printf(
            "%s: server.key, worker.key, operator.key, clients/, operators/\n"
            "  coordinator and gpu-evald hosts: the directory without worker.key and operator.key\n"
            "  worker hosts: server.pub and worker.key; operators: server.pub and operator.key\n",
            argv[1]);
    return 0;
}

/* ---- quarantine ----------------------------------------------------------- */

/* A worker key as given: its id (16 hex digits), its Z85 text, or a file
 * holding it (a .pub). Writes the id; -1 after saying why not. */
static int key_id_arg(const char *arg, char id[SF_ZSEC_ID_LEN + 1]) {
    if (strlen(arg) == SF_ZSEC_ID_LEN && strspn(arg, "0123456789abcdef") == SF_ZSEC_ID_LEN) {
        memcpy(id, arg, SF_ZSEC_ID_LEN + 1);
        return 0;
    }
    sf_zsec_key_id(arg, id);
    if (id[0])
        return 0;
    char pub[SF_ZSEC_KEY_LEN + 1];
    sf_err e = {0};
    if (sf_zsec_read_public(arg, pub, &e) < 0) {
        fprintf(stderr,
                "sf-fleet quarantine: --worker %s: not a key id, a key or a key file (%s)\n", arg,
                e.msg);
        return -1;
    }
    sf_zsec_key_id(pub, id);
    return 0;
}

/* --since: unix seconds or YYYY-MM-DDTHH:MM:SSZ (UTC). */
static int since_arg(const char *arg, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (end != arg && !*end && !errno && v >= 0) {
        *out = v;
        return 0;
    }
    struct tm tm = {0};
    int used = 0;
    if (sscanf(arg, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &used) == 6 &&
        !arg[used] && tm.tm_mon >= 1 && tm.tm_mon <= 12 && tm.tm_mday >= 1 && tm.tm_mday <= 31) {
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        *out = (int64_t)timegm(&tm);
        return 0;
    }
    fprintf(stderr,
            "sf-fleet quarantine: --since %s: expected unix seconds or "
            "YYYY-MM-DDTHH:MM:SSZ\n",
            arg);
    return -1;
}

static int cmd_quarantine(int argc, char **argv) {
    const char *keys = keys_arg(&argc, argv), *worker = NULL;
    int64_t since = 0;
    static const struct option opts[] = {
        {"worker", required_argument, 0, 'w'}, {"since", required_argument, 0, 's'}, {0, 0, 0, 0}};
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch == 'w')
            worker = optarg;
        else if (ch != 's' || since_arg(optarg, &since) < 0)
            return 2;
    }
    const char *ep = one_operand(argc, argv);
    if (!ep || !worker) {
        if (ep)
            usage(stderr);
        return 2;
    }
    char id[SF_ZSEC_ID_LEN + 1];
    if (!endpoint_arg_ok("quarantine", ep) || key_id_arg(worker, id) < 0)
        return 2;
    uint32_t shards = 0, jobs = 0, alive = 0;
    sf_err err = {0};
    if (sf_fleet_quarantine(ep, keys, id, since, 30000, &shards, &jobs, &alive, &err) < 0) {
        fprintf(stderr, "sf-fleet: %s\n", err.msg);
        return 1;
    }
    printf("key %s quarantined: %u shard(s) listed in the run's shards/QUARANTINE, %u job(s) "
           "issued again; the key is refused from now on\n",
           id, shards, jobs);
    if (jobs > 0 && alive == 0)
        printf("NO WORKERS: no worker is connected to play the %u job(s) issued again; start "
               "workers (sf-fleet worker --connect %s --keys DIR)\n",
               jobs, ep);
    return 0;
}

/* ---- status / stop -------------------------------------------------------- */

/* The status of the coordinator at `endpoint`, printed (0), or 1 after
 * saying why not (`quiet`: in err only). */
/* With `json`, the document /api/status serves (coordinator/dashboard.h). */
static int endpoint_status(const char *endpoint, const char *keys, int quiet, int json,
                           sf_err *err) {
    Spirefleet__Envelope *env;
    Spirefleet__StatusReply *st;
    if (sf_fleet_status(endpoint, keys, 3000, &env, &st, err) < 0) {
        if (!quiet)
            fprintf(stderr, "sf-fleet: %s\n", err->msg);
        return 1;
    }
    int rc = 0;
    if (json) {
        size_t len;
        char *s = sf_fleet_status_json(st, &len);
        if (!s || fwrite(s, 1, len, stdout) != len || putchar('\n') == EOF) {
            fprintf(stderr, "sf-fleet status: cannot write the JSON to stdout\n");
            rc = 1;
        }
        free(s);
    } else {
        sf_fleet_print_status(st, stdout);
    }
    sf_wire_free(env);
    return rc;
}

/* loop.json as it is (what the dashboard's /api/loop serves). */
static int print_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "sf-fleet status: %s: %s\n", path, strerror(errno));
        return 1;
    }
    char buf[8192];
    size_t n;
    int ok = 1;
    while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0)
        ok = fwrite(buf, 1, n, stdout) == n;
    ok = ok && !ferror(f);
    fclose(f);
    if (!ok)
        fprintf(stderr, "sf-fleet status: %s: cannot copy it to stdout\n", path);
    return ok ? 0 : 1;
}

/* A run no coordinator serves: what its ledger holds, in the shape of the
 * status a coordinator gives (its first lines), and the gate's verdict. */
static int ledger_status(const char *dir) {
    sf_ledger_summary s;
    sf_err err = {0};
    if (sf_coordinator_ledger_summary(dir, &s, &err) < 0) {
        fprintf(stderr, "sf-fleet status: %s\n", err.msg);
        return 1;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/gate/verdict.json", dir);
    json_t *v = !strcmp(s.kind, "gate") ? json_load_file(path, 0, NULL) : NULL;
    const char *verdict = json_string_value(json_object_get(v, SF_GATE_VKEY_VERDICT));
    int complete = s.jobs_done == s.jobs_total || verdict;
    printf("run %s (config %.12s)  %s\n", s.run, s.digest,
           complete ? "COMPLETE (no coordinator serves it)"
                    : "STOPPED: no coordinator serves it; `sf-fleet run CONFIG` resumes it");
    printf("jobs: %llu done, 0 leased, %llu pending of %llu\n", (unsigned long long)s.jobs_done,
           (unsigned long long)(s.jobs_total - s.jobs_done), (unsigned long long)s.jobs_total);
    printf("fights %llu, labels %llu, simulations %llu\n", (unsigned long long)s.fights,
           (unsigned long long)s.records, (unsigned long long)s.simulations);
    printf("stored %.1f MB in %s/shards (the ledger, %s/ledger.lmdb, as last written)\n",
           (double)s.bytes / 1e6, dir, dir);
    if (verdict)
        printf("gate: %s after %lld pairs (%s)\n", verdict,
               (long long)json_integer_value(json_object_get(v, SF_GATE_VKEY_PAIRS)), path);
    json_decref(v);
    return 0;
}

/* sf-fleet status RUN_DIR: a loop's directory (loop.json), or a run's
 * output directory: the status of the coordinator serving it, found
 * through the endpoint it publishes there, or else what its ledger
 * holds. The run's own key directory (DIR/keys) is used when no --keys
 * or SF_KEYS is given. */
static int run_dir_status(const char *dir, const char *keys, int json) {
    char path[4200], endpoint[1100], own_keys[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/loop.json", dir);
    if (access(path, F_OK) == 0)
        return json ? print_file(path) : loop_status(dir);
    snprintf(own_keys, sizeof own_keys, "%s/keys", dir);
    if (!keys && stat(own_keys, &st) == 0 && S_ISDIR(st.st_mode))
        keys = own_keys;
    snprintf(path, sizeof path, "%s/" SF_FLEET_ENDPOINT_FILE, dir);
    sf_err err = {0};
    if (sf_endpoint_file_read(path, endpoint, sizeof endpoint, &err) == SF_OK) {
        if (endpoint_status(endpoint, keys, 1, json, &err) == 0)
            return 0;
        fprintf(stderr, "sf-fleet status: %s: no answer from the coordinator at %s (%s): %s\n", dir,
                endpoint, path, err.msg);
    }
    snprintf(path, sizeof path, "%s/ledger.lmdb", dir);
    if (access(path, F_OK) == 0 && json) {
        fprintf(stderr,
                "sf-fleet status --json: %s: no coordinator serves this run (--json is what a "
                "coordinator answers; without it, status prints what the ledger holds)\n",
                dir);
        return 1;
    }
    if (access(path, F_OK) == 0)
        return ledger_status(dir);
    fprintf(stderr,
            "sf-fleet status: %s: no run here: a run's output directory (run.output_dir) holds "
            "ledger.lmdb, a loop's directory loop.json\n",
            dir);
    return 2;
}

static int cmd_status(int argc, char **argv) {
    const char *keys = keys_arg(&argc, argv);
    int json = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--json")) {
            json = 1;
            for (int j = i; j + 1 <= argc; j++)
                argv[j] = argv[j + 1];
            argc--;
            break;
        }
    if (argc != 2) {
        usage(stderr);
        return 2;
    }
    struct stat dir_st;
    if (stat(argv[1], &dir_st) == 0 && S_ISDIR(dir_st.st_mode))
        return run_dir_status(argv[1], keys, json);
    if (!endpoint_arg_ok("status", argv[1]))
        return 2;
    sf_err err = {0};
    return endpoint_status(argv[1], keys, 0, json, &err);
}

static int cmd_stop(int argc, char **argv) {
    const char *keys = keys_arg(&argc, argv);
    if (argc != 2) {
        usage(stderr);
        return 2;
    }
    if (!endpoint_arg_ok("stop", argv[1]))
        return 2;
    sf_err err = {0};
    if (sf_fleet_stop(argv[1], keys, 3000, &err) < 0) {
        fprintf(stderr, "sf-fleet: %s\n", err.msg);
        return 1;
    }
    printf("stop requested\n");
    return 0;
}

/* ---- worker --------------------------------------------------------------- */

/* The worker's runs, in the order --connect and --connect-file name them
 * (their priority); 0, or -1 when there are more than SF_FLEET_MAX_RUNS. */
static int add_run(sf_fleet_run_ref *runs, int *n, const char *endpoint, const char *file) {
    if (*n >= SF_FLEET_MAX_RUNS) {
        fprintf(stderr, "sf-fleet worker: at most %d runs (--connect, --connect-file)\n",
                SF_FLEET_MAX_RUNS);
        return -1;
    }
    runs[*n].endpoint = endpoint;
    runs[(*n)++].endpoint_file = file;
    return 0;
}

static int cmd_worker(int argc, char **argv) {
    sf_worker_opts o = {0};
    sf_fleet_run_ref runs[SF_FLEET_MAX_RUNS];
    int n_runs = 0, recheck = SF_FLEET_RECHECK_DEFAULT_S;
    o.keys_dir = keys_arg(&argc, argv);
    static const struct option opts[] = {{"connect", required_argument, 0, 'c'},
                                         {"threads", required_argument, 0, 't'},
                                         {"fights-per-thread", required_argument, 0, 'g'},
                                         {"id", required_argument, 0, 'i'},
                                         {"scratch", required_argument, 0, 's'},
                                         {"max-jobs", required_argument, 0, 'm'},
                                         {"local-net", required_argument, 0, 'l'},
                                         {"connect-file", required_argument, 0, 'C'},
                                         {"evald", required_argument, 0, 'e'},
                                         {"evald-file", required_argument, 0, 'E'},
                                         {"local-sides", no_argument, 0, 'L'},
                                         {"fetch-models", no_argument, 0, 'F'},
                                         {"model-cache", required_argument, 0, 'M'},
                                         {"model-url", required_argument, 0, 'U'},
                                         {"recheck", required_argument, 0, 'R'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "c:t:g:i:s:m:l:Lh", opts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            if (!endpoint_arg_ok("worker --connect", optarg) ||
                add_run(runs, &n_runs, optarg, NULL) < 0)
                return 2;
            break;
        case 'C':
            if (add_run(runs, &n_runs, NULL, optarg) < 0)
                return 2;
            break;
        case 'R':
            if (parse_uint(optarg, "--recheck", 1, 86400, &recheck) < 0)
                return 2;
            break;
        case 'e': o.evald_endpoint = optarg; break;
        case 'E': o.evald_file = optarg; break;
        case 't':
            if (parse_uint(optarg, "--threads", 1, 1024, &o.threads) < 0)
                return 2;
            break;
        case 'g':
            if (parse_uint(optarg, "--fights-per-thread", 1, 4096, &o.fights_per_thread) < 0)
                return 2;
            break;
        case 'i': o.worker_id = optarg; break;
        case 's': o.scratch_dir = optarg; break;
        case 'm':
            if (parse_uint(optarg, "--max-jobs", 0, 1 << 30, &o.max_jobs) < 0)
                return 2;
            break;
        case 'l': o.local_bundle = optarg; break;
        case 'L': o.local_sides = 1; break;
        case 'F': o.fetch_models = 1; break;
        case 'M': o.model_cache = optarg; break;
        case 'U': o.model_url = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (n_runs == 0) {
        fprintf(stderr, "sf-fleet worker: give a run: --connect ENDPOINT or --connect-file PATH "
                        "(several, in priority order, for several runs)\n");
        return 2;
    }
    if (!!o.local_bundle + !!o.evald_endpoint + !!o.evald_file + o.fetch_models > 1) {
        fprintf(stderr, "sf-fleet worker: --local-net, --evald, --evald-file and --fetch-models "
                        "exclude each other\n");
        return 2;
    }
    if (o.evald_endpoint && !endpoint_arg_ok("worker --evald", o.evald_endpoint))
        return 2;
    install_signals();
    o.stop = &g_stop;
    o.drain = &g_drain;
    o.log = sf_log_to_file;
    o.log_ctx = stderr;
    sf_err err = {0};
    int rc;
    if (n_runs == 1) { /* one run: its worker waits on it, as it always has */
        o.endpoint = runs[0].endpoint;
        o.endpoint_file = runs[0].endpoint_file;
        rc = sf_worker_run(&o, &err);
    } else {
        rc = sf_fleet_serve_runs(&o, runs, n_runs, (uint32_t)recheck, &err);
    }
    if (rc < 0) {
        fprintf(stderr, "sf-fleet worker: %s\n", err.msg);
        return 1;
    }
    return g_stop || g_drain ? 3 : 0;
}

/* ---- coordinator ---------------------------------------------------------- */

/* Publish the coordinator's endpoint in `path` (--endpoint-file, or the
 * run's own, run_endpoint_file). */
static int publish_endpoint(const char *path, const sf_coordinator *co) {
    sf_err e = {0};
    if (sf_endpoint_file_write(path, sf_coordinator_endpoint(co), &e) == SF_OK)
        return 0;
    fprintf(stderr, "sf-fleet: cannot publish the coordinator's endpoint: %s\n", e.msg);
    return -1;
}

/* <output_dir>/coordinator.endpoint: where every coordinator of the run
 * (sf-fleet coordinator, sf-fleet run) publishes its endpoint while it
 * serves, for sf-fleet status RUN_DIR. */
static void run_endpoint_file(const sf_run_config *cfg, char *out, size_t cap) {
    snprintf(out, cap, "%s/" SF_FLEET_ENDPOINT_FILE, cfg->output_dir);
}

/* Remove the published endpoint at exit, unless a successor (a requeued
 * coordinator on another node) has written its own there meanwhile. */
static void unpublish_endpoint(const char *path, const sf_coordinator *co) {
    char mine[1100], theirs[1100];
    sf_err e = {0};
    if (sf_endpoint_reachable(sf_coordinator_endpoint(co), NULL, mine, sizeof mine) == SF_OK &&
        sf_endpoint_file_read(path, theirs, sizeof theirs, &e) == SF_OK && !strcmp(mine, theirs))
        unlink(path);
}

static int cmd_coordinator(int argc, char **argv) {
    const char *bind = NULL, *path = NULL, *endpoint_file = NULL;
    int metrics = 0, metrics_given = 0, exit_when_done = 0;
    sf_err perr = {0};
    static const struct option opts[] = {{"bind", required_argument, 0, 'b'},
                                         {"metrics-port", required_argument, 0, 'p'},
                                         {"endpoint-file", required_argument, 0, 'f'},
                                         {"exit-when-done", no_argument, 0, 'x'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "b:p:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'b': bind = optarg; break;
        case 'f': endpoint_file = optarg; break;
        case 'x': exit_when_done = 1; break;
        case 'p':
            if (sf_metrics_port_parse(optarg, &metrics, &perr) < 0) {
                fprintf(stderr, "sf-fleet: --metrics-port %s\n", perr.msg);
                return 2;
            }
            metrics_given = 1;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!(path = one_operand(argc, argv)))
        return 2;
    if (bind && !endpoint_arg_ok("coordinator --bind", bind))
        return 2;
    sf_run_config cfg;
    if (load(path, &cfg) < 0)
        return 2;
    if (!metrics_given)
        metrics = (int)cfg.coordinator.metrics_port;
    install_signals();
    sf_coordinator *co;
    int code = open_coordinator("sf-fleet coordinator", &cfg, bind, metrics, exit_when_done,
                                sf_log_to_file, stderr, &co);
    if (code >= 0)
        return code;
    if (endpoint_file && publish_endpoint(endpoint_file, co) < 0) {
        sf_coordinator_close(co);
        return 1;
    }
    char own_file[SF_CFG_PATH + 32]; /* for sf-fleet status RUN_DIR */
    run_endpoint_file(&cfg, own_file, sizeof own_file);
    int own = !endpoint_file || strcmp(endpoint_file, own_file);
    if (own && publish_endpoint(own_file, co) < 0)
        own = 0; /* said; status RUN_DIR then reads the ledger */
    sf_err err = {0};
    char keys[SF_CFG_PATH + 8];
    sf_config_keys_dir(&cfg, keys, sizeof keys);
    fprintf(stderr, "coordinator: run %s serving on %s (metrics %s; %s%s)\n", cfg.name,
            sf_coordinator_endpoint(co), sf_coordinator_metrics_url(co),
            keys[0] ? "CURVE, keys in " : "security.mode none: NO authentication", keys);
    int rc = sf_coordinator_serve(co, &g_stop, &err);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    if (endpoint_file)
        unpublish_endpoint(endpoint_file, co);
    if (own)
        unpublish_endpoint(own_file, co);
    sf_coordinator_close(co);
    if (rc < 0) {
        fprintf(stderr, "sf-fleet coordinator: %s\n", err.msg);
        return 1;
    }
    return st.complete ? 0 : 3;
}

/* ---- run: the embedded default ------------------------------------------- */

/* In a child of `sf-fleet run`: die with the parent, so a parent killed
 * with -9 leaves no orphan worker or gpu-evald behind. */
static void die_with(pid_t parent) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) /* the parent died before prctl took effect */
        _exit(1);
}

/* In a child: send stdout and stderr to <output_dir>/logs/<name>. */
static void log_to(const sf_run_config *cfg, const char *name) {
    char dir[1200], path[1300];
    snprintf(dir, sizeof dir, "%s/logs", cfg->output_dir);
    sf_mkdir_p(dir);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
}

/* Size of a file now (0 when it does not exist), so that only what a child
 * writes after this point is echoed by echo_log_since(). */
static off_t file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? sb.st_size : 0;
}

/* Copy the last `max_lines` lines a child wrote to `path` since `from` onto
 * stderr, each prefixed with `tag`, so the operator sees why it failed
 * without opening the log. Best effort: a read error prints nothing. */
static void echo_log_since(const char *path, off_t from, const char *tag, int max_lines) {
    char buf[8192];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t start = end - from > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : from;
    size_t n = start >= 0 && end > start ? (size_t)(end - start) : 0;
    int rc = n ? sf_pread_full(fd, buf, n, (uint64_t)start) : SF_EFORMAT;
    close(fd);
    if (rc < 0)
        return;
    buf[n] = 0;
    char *p = buf + n;
    for (int lines = 0; p > buf; p--)
        if (p[-1] == '\n' && p != buf + n && ++lines > max_lines)
            break;
    for (char *line = p; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        fprintf(stderr, "%s%.*s\n", tag, (int)len, line);
        line += len + (nl ? 1 : 0);
    }
}

/* This program's directory in the build tree (build/sf-fleet), from which
 * the build root is TO_BUILD_ROOT: the other programs are found there. */
#define TO_BUILD_ROOT ".."

/* A program built beside this one (<build root>/<dir>/<name>), else <name>
 * on PATH. */
void sibling(const char *self, const char *dir, const char *name, char *out, size_t cap) {
    const char *slash = strrchr(self, '/');
    if (slash) {
        snprintf(out, cap, "%.*s/" TO_BUILD_ROOT "/%s/%s", (int)(slash - self), self, dir, name);
        if (access(out, X_OK) == 0)
            return;
    }
    snprintf(out, cap, "%s", name);
}

/* The models a run's gpu-evald serves, as PATH@SHA256: a self-play run's
 * pinned model, or each gate side's network (once when both name the same
 * one). Returns how many (0 for a run that follows a champion: its
 * gpu-evald serves the registry). */
static int run_models(const sf_run_config *cfg, char out[2][SF_CFG_PATH + 80]) {
    if (strcmp(cfg->kind, "gate")) {
        if (!sf_job_side_external(cfg, -1) || cfg->model.champion[0]) /* followed: --models */
            return 0;
        snprintf(out[0], sizeof out[0], "%s@%s", cfg->model.bundle, cfg->model.sha256);
        return 1;
    }
    int n = 0;
    for (int side = 0; side < 2; side++) {
        const struct sf_cfg_gate_side *g = sf_config_gate_side(cfg, side);
        if (!sf_job_side_external(cfg, side) ||
            (side == 1 && n == 1 && !strcmp(cfg->champion.sha256, g->sha256)))
            continue;
        snprintf(out[n++], sizeof out[0], "%s@%s", g->bundle, g->sha256);
    }
    return n;
}

static pid_t spawn_evald(const char *self, const sf_run_config *cfg) {
    char prog[4200], models[2][SF_CFG_PATH + 80], batch[16], wait[16];
    sibling(self, "gpu-evald", "gpu-evald", prog, sizeof prog);
    int n = run_models(cfg, models);
    snprintf(batch, sizeof batch, "%u", cfg->evald.max_batch);
    snprintf(wait, sizeof wait, "%u", cfg->evald.max_wait_us);
    pid_t parent = getpid(), pid = fork();
    if (pid != 0)
        return pid;
    die_with(parent);
    log_to(cfg, "evald.log");
    char *args[20] = {prog,
                      "--backend",
                      (char *)cfg->evald.backend,
                      "--bind",
                      (char *)cfg->evald.endpoint,
                      "--max-batch",
                      batch,
                      "--max-wait-us",
                      wait};
    int k = 9;
    for (int i = 0; i < n; i++) {
        args[k++] = "--model";
        args[k++] = models[i];
    }
    char registry[SF_CFG_PATH];
    if (cfg->model.champion[0] &&
        sf_registry_dir_of(cfg->model.champion, registry, sizeof registry) == SF_OK) {
        args[k++] = "--models"; /* the champion, and each one after it, hot-loaded */
        args[k++] = registry;
    }
    char keys[SF_CFG_PATH + 8];
    sf_config_keys_dir(cfg, keys, sizeof keys);
    if (keys[0]) { /* the run's keys: its workers are let in, no one else */
        args[k++] = "--keys";
        args[k++] = keys;
    } else { /* security.mode none: plain on evald.endpoint, whatever its address */
        args[k++] = "--security";
        args[k++] = "none";
    }
    args[k] = NULL;
    execvp(prog, args);
    perror("sf-fleet: exec gpu-evald");
    _exit(127);
}

/* Wait until the spawned gpu-evald answers a real position with the run's
 * model (its canary passed and it serves), so no worker starts against a
 * server that is still loading: the worker's own probe
 * (sf_worker_evaluator_probe), tried every 100 ms. */
int evald_wait_model(const sf_run_config *cfg, const char *sha, pid_t pid, int seconds,
                     sf_err *err) {
    sf_run_config quick = *cfg;
    quick.evald.timeout_ms = 100;
    quick.evald.retries = 0;
    sf_batch_evaluator *ev;
    int rc = sf_worker_evaluator_new(&quick, sha, NULL, &ev, err);
    if (rc < 0)
        return rc;
    rc = SF_ETIMEOUT;
    for (int tries = 0; tries < seconds * 10 && rc == SF_ETIMEOUT; tries++) {
        sf_err pe = {0};
        if (waitpid(pid, NULL, WNOHANG) == pid) /* a load or canary failure: its log */
            rc = sf_err_set(err, SF_ECHILD, "gpu-evald exited at start");
        else if (sf_worker_evaluator_probe(ev, &pe) == SF_OK)
            rc = SF_OK;
        else if (tries + 1 == seconds * 10)
            sf_err_set(err, SF_ETIMEOUT, "gpu-evald does not answer for model %.12s...: %s", sha,
                       pe.msg);
    }
    sf_worker_evaluator_free(ev);
    return rc;
}

/* Wait until the spawned gpu-evald answers with every model the run needs. */
static int wait_evald(const sf_run_config *cfg, pid_t pid, int seconds) {
    char models[2][SF_CFG_PATH + 80];
    int n = run_models(cfg, models);
    sf_err ce = {0};
    if (cfg->model.champion[0] && /* a followed run: its champion of now */
        sf_registry_champion_read(cfg->model.champion, models[0] + 1, &ce) == SF_OK &&
        strcmp(models[0] + 1, SF_REGISTRY_ROLLOUT)) {
        models[0][0] = '@';
        n = 1;
    }
    for (int i = 0; i < n; i++) {
        sf_err e = {0};
        if (evald_wait_model(cfg, strrchr(models[i], '@') + 1, pid, seconds, &e) < 0)
            return -1;
    }
    return 0;
}

static pid_t spawn_worker(const char *self, const char *endpoint, const sf_run_config *cfg,
                          int index) {
    pid_t parent = getpid(), pid = fork();
    if (pid != 0)
        return pid;
    die_with(parent);
    /* the worker's log goes to <output_dir>/logs/w<i>.log, so the progress
     * line stays readable */
    char logname[32];
    snprintf(logname, sizeof logname, "w%d.log", index);
    log_to(cfg, logname);
    char threads[16], fights[16], id[96], scratch[1200];
    snprintf(threads, sizeof threads, "%u", cfg->workers.threads);
    snprintf(fights, sizeof fights, "%u", cfg->workers.fights_per_thread);
    snprintf(id, sizeof id, "%s-w%d", cfg->name, index);
    snprintf(scratch, sizeof scratch, "%s/work/w%d", cfg->output_dir, index);
    char keys[SF_CFG_PATH + 8];
    sf_config_keys_dir(cfg, keys, sizeof keys);
    char *args[] = {(char *)self,
                    "worker",
                    "--connect",
                    (char *)endpoint,
                    "--threads",
                    threads,
                    "--fights-per-thread",
                    fights,
                    "--id",
                    id,
                    "--scratch",
                    scratch,
                    keys[0] ? "--keys" : NULL,
                    keys,
                    NULL};
    execv(self, args);
    perror("sf-fleet: exec worker");
    _exit(127);
}

/* After "workers N" in the progress line: who is connected but waits, and
 * for what (sf_coord_status.workers_waiting), or "". */
static const char *progress_waiting(const sf_coord_status *st, char *buf, size_t cap) {
    if (!st->workers_waiting)
        return "";
    snprintf(buf, cap, " (%u waiting: %s)", st->workers_waiting, st->waiting_reason);
    return buf;
}

/* The progress line counts what `sf-fleet status` counts: stored jobs,
 * fights and labels (a leased job's are not in until its shard is). On a
 * terminal it is a bar redrawn in place (its text is kept in `bar`, for
 * run_log to draw it again after a log line); otherwise one line each
 * time. An unknown ETA (no job stored in the last minute, or none can
 * finish) reads "ETA --". */
static void progress_line(const sf_coord_status *st, int tty, double elapsed, char *bar,
                          size_t bar_cap) {
    double frac = st->jobs_total ? (double)st->jobs_done / (double)st->jobs_total : 0.0;
    char slow[160] = "";
    if (st->n_slow > 0)
        snprintf(slow, sizeof slow, "  SLOW: job %llu on %s (%.0f s, median job %.1f s)",
                 (unsigned long long)st->slow[0].job_id, st->slow[0].worker_id,
                 st->slow[0].running_s, st->job_median_s);
    const char *state = st->cannot_finish    ? "  CANNOT FINISH"
                        : st->uploads_paused ? "  UPLOADS PAUSED (disk full)"
                                             : slow;
    char waiting_buf[200];
    const char *waiting = progress_waiting(st, waiting_buf, sizeof waiting_buf);
    if (tty) {
        char hashes[31], eta[32] = "--";
        int filled = (int)(frac * 30.0 + 0.5);
        for (int i = 0; i < 30; i++)
            hashes[i] = i < filled ? '#' : '.';
        hashes[30] = 0;
        if (st->eta_s >= 0)
            snprintf(eta, sizeof eta, "%.0fs", st->eta_s);
        snprintf(bar, bar_cap,
                 "[%s] jobs %llu/%llu  fights %llu  labels %llu  %.0f labels/s  workers %u%s  "
                 "ETA %s%s   ",
                 hashes, (unsigned long long)st->jobs_done, (unsigned long long)st->jobs_total,
                 (unsigned long long)st->fights, (unsigned long long)st->labels, st->labels_per_s,
                 st->workers_alive, waiting, eta, state);
        fprintf(stderr, "\r%s", bar);
    } else {
        fprintf(stderr,
                "progress: %.0fs jobs %llu/%llu fights %llu labels %llu (%.0f/s) workers %u%s%s\n",
                elapsed, (unsigned long long)st->jobs_done, (unsigned long long)st->jobs_total,
                (unsigned long long)st->fights, (unsigned long long)st->labels, st->labels_per_s,
                st->workers_alive, waiting, state);
    }
}

/* What `sf-fleet run` holds while it runs; its phases below share it. */
typedef struct fleet_run {
    const char *self, *config_path;
    sf_run_config cfg;
    sf_coordinator *co;
    sf_coord_status st;
    pid_t workers[4096]; /* live worker children, unordered */
    int n_workers;
    pid_t evald; /* a spawned gpu-evald, or 0 */
    int tty;
    char bar[1024];                       /* the progress bar on the terminal's line, or "" */
    char endpoint_file[SF_CFG_PATH + 32]; /* published, or "" */
    uint64_t t0;
    int stopped_early, failed;
    sf_err err;
} fleet_run;

/* The coordinator's log sink in `sf-fleet run` (ctx: the fleet_run): a log
 * line printed while the progress bar is on the terminal's line clears
 * that line first, and the bar is drawn again below it, so a log line
 * never lands in the middle of the bar. */
static void run_log(void *ctx, const char *line) {
    const fleet_run *r = ctx;
    if (r->bar[0])
        fputs("\r\033[K", stderr);
    fprintf(stderr, "%s\n", line);
    if (r->bar[0])
        fprintf(stderr, "\r%s", r->bar);
    fflush(stderr);
}

/* Phase 1: the options (-1: go on, else the exit code). */
static int run_parse_args(int argc, char **argv, int *workers, const char **config) {
    static const struct option opts[] = {
        {"workers", required_argument, 0, 'w'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int ch;
    *workers = -1;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "w:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'w':
            if (parse_uint(optarg, "--workers", 0, 4096, workers) < 0)
                return 2;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    *config = one_operand(argc, argv);
    return *config ? -1 : 2;
}

/* Phase 2: the config and the in-process coordinator (-1: go on). */
static int run_open(fleet_run *r, int workers) {
    if (load(r->config_path, &r->cfg) < 0)
        return 2;
    if (workers >= 0)
        r->cfg.workers.count = (uint32_t)workers;
    if (!strcmp(r->cfg.security.mode, "curve") &&
        r->cfg.workers.count > r->cfg.security.max_workers_per_key) {
        fprintf(stderr,
                "sf-fleet: %s: %u workers would share the run's one worker key, above "
                "security.max_workers_per_key (%u): raise it or start fewer workers\n",
                r->config_path, r->cfg.workers.count, r->cfg.security.max_workers_per_key);
        return 2;
    }
    install_signals();
    int code = open_coordinator("sf-fleet", &r->cfg, NULL, (int)r->cfg.coordinator.metrics_port, 1,
                                run_log, r, &r->co);
    if (code >= 0)
        return code;
    run_endpoint_file(&r->cfg, r->endpoint_file, sizeof r->endpoint_file);
    if (publish_endpoint(r->endpoint_file, r->co) < 0)
        r->endpoint_file[0] = 0; /* said; status RUN_DIR then reads the ledger */
    sf_coordinator_status(r->co, &r->st);
    fprintf(stderr,
            "sf-fleet: run %s: %llu jobs (%llu already done), %u workers x %u threads, "
            "coordinator %s, output %s\n",
            r->cfg.name, (unsigned long long)r->st.jobs_total, (unsigned long long)r->st.jobs_done,
            r->cfg.workers.count, r->cfg.workers.threads, sf_coordinator_endpoint(r->co),
            r->cfg.output_dir);
    return -1;
}

/* An ipc:// endpoint's directory must exist before gpu-evald binds it. */
static void make_ipc_dir(const char *endpoint) {
    if (strncmp(endpoint, "ipc://", 6))
        return;
    char dir[SF_CFG_PATH];
    size_t len = strnlen(endpoint + 6, sizeof dir - 1);
    memcpy(dir, endpoint + 6, len);
    dir[len] = 0;
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        sf_mkdir_p(dir);
    }
}

static void stop_child(pid_t pid, int sig) {
    kill(pid, sig);
    waitpid(pid, NULL, 0);
}

/* Phase 3: a gpu-evald, when the config spawns one, serving before any
 * worker starts (0: ready or not needed; 1: it failed, the exit code). */
static int run_start_evald(fleet_run *r) {
    const sf_run_config *cfg = &r->cfg;
    char models[2][SF_CFG_PATH + 80];
    int n = run_models(cfg, models);
    if (!cfg->evald.spawn || (n == 0 && !cfg->model.champion[0]) || r->st.complete ||
        cfg->workers.count == 0)
        return 0;
    char log_path[1300];
    snprintf(log_path, sizeof log_path, "%s/logs/evald.log", cfg->output_dir);
    off_t log_from = file_size(log_path);
    make_ipc_dir(cfg->evald.endpoint);
    r->evald = spawn_evald(r->self, cfg);
    if (r->evald < 0 || wait_evald(cfg, r->evald, 60) < 0) {
        fprintf(stderr, "sf-fleet: gpu-evald did not come up on %s; its log (%s) ends:\n",
                cfg->evald.endpoint, log_path);
        echo_log_since(log_path, log_from, "  gpu-evald| ", 8);
        if (r->evald > 0)
            stop_child(r->evald, SIGTERM);
        r->evald = 0;
        return 1;
    }
    fprintf(stderr, "sf-fleet: gpu-evald (%s backend) serving %s%s on %s\n", cfg->evald.backend,
            n ? models[0] : "the champion of ", n ? "" : cfg->model.champion, cfg->evald.endpoint);
    return 0;
}

/* Phase 4: the worker children. */
static void run_start_workers(fleet_run *r) {
    const char *ep = sf_coordinator_endpoint(r->co);
    for (uint32_t i = 0; i < r->cfg.workers.count && !r->st.complete; i++) {
        pid_t p = spawn_worker(r->self, ep, &r->cfg, (int)i);
        if (p > 0)
            r->workers[r->n_workers++] = p;
    }
}

/* Forget the workers that exited; with `report`, say which failed, so a
 * crash does not go unnoticed. */
static void reap_workers(fleet_run *r, int report) {
    int status;
    pid_t dead;
    while ((dead = waitpid(-1, &status, WNOHANG)) > 0)
        for (int i = 0; i < r->n_workers; i++) {
            if (r->workers[i] != dead)
                continue;
            r->workers[i] = r->workers[--r->n_workers];
            if (report && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
                fprintf(stderr, "\nsf-fleet: worker pid %d exited (status %d)\n", (int)dead,
                        status);
        }
}

/* Whether the run cannot go on (it says why): every remaining job is
 * quarantined, or every worker is gone. */
static int run_stuck(fleet_run *r) {
    const sf_coord_status *st = &r->st;
    if (st->cannot_finish && st->jobs_leased == 0) {
        if (st->jobs_quarantined >= st->jobs_total - st->jobs_done)
            fprintf(stderr,
                    "\nsf-fleet: %llu job(s) failed on %d workers each; the run cannot "
                    "complete. Last failure: %s\n",
                    (unsigned long long)st->jobs_quarantined, 3, st->last_failure);
        else
            fprintf(stderr,
                    "\nsf-fleet: the workers' key reported %d more failures than jobs it "
                    "stored and gets no more jobs; the run cannot complete. Last failure: %s\n",
                    SF_COORD_MAX_KEY_FAILURES, st->last_failure);
        r->failed = 1;
        return 1;
    }
    if (r->n_workers == 0 && !st->complete && r->cfg.workers.count > 0) {
        fprintf(stderr, "\nsf-fleet: every worker has exited before the run completed\n");
        return 1;
    }
    return 0;
}

/* Phase 5: step the coordinator until the run completes, a signal asks to
 * stop, or it cannot go on. Returns SF_OK, or the step's error (r->err). */
static int run_loop(fleet_run *r) {
    r->tty = isatty(STDERR_FILENO);
    r->t0 = sf_now_ns();
    uint64_t last = 0, every = r->tty ? 200000000ull : 5000000000ull;
    const char *ms = getenv("SF_PROGRESS_MS"); /* log scrapers and tests: another period */
    if (ms && *ms) {
        char *end;
        unsigned long long v = strtoull(ms, &end, 10);
        if (*end == '\0' && v > 0 && v <= 3600000)
            every = v * 1000000ull;
    }
    while (!r->st.complete) {
        if (g_stop) {
            r->stopped_early = 1;
            break;
        }
        int rc = sf_coordinator_step(r->co, 100, &r->err);
        if (rc < 0)
            return sf_err_prefix(&r->err, "coordinator");
        sf_coordinator_status(r->co, &r->st);
        uint64_t now = sf_now_ns();
        if (now - last > every) {
            progress_line(&r->st, r->tty, (double)(now - r->t0) / 1e9, r->bar, sizeof r->bar);
            last = now;
        }
        reap_workers(r, 1);
        if (run_stuck(r)) {
            r->stopped_early = 1;
            break;
        }
    }
    return SF_OK;
}

/* Phase 6: the children go. Workers hear RunComplete on their next request
 * (the coordinator keeps stepping), or SIGTERM when stopping early (they
 * abandon their job, which stays pending); whoever is left after 10 s is
 * killed; then gpu-evald. */
static void run_shutdown(fleet_run *r) {
    if (r->bar[0])
        fputc('\n', stderr);
    r->bar[0] = 0;
    uint64_t deadline = sf_now_ns() + 10000000000ull;
    if (r->stopped_early)
        for (int i = 0; i < r->n_workers; i++)
            kill(r->workers[i], g_stop >= 2 ? SIGKILL : SIGTERM);
    while (r->n_workers > 0 && sf_now_ns() < deadline) {
        sf_err ignored = {0};
        if (!r->stopped_early)
            sf_coordinator_step(r->co, 50, &ignored);
        else
            usleep(50000);
        reap_workers(r, 0);
    }
    for (int i = 0; i < r->n_workers; i++)
        stop_child(r->workers[i], SIGKILL);
    r->n_workers = 0;
    if (r->evald > 0)
        stop_child(r->evald, SIGTERM);
    r->evald = 0;
}

/* The sf-shard built beside this binary, relative to the working directory
 * when it is below it; else "sf-shard". */
static void shard_tool(const char *self, char *tool, size_t cap) {
    snprintf(tool, cap, "sf-shard");
    const char *slash = strrchr(self, '/');
    if (!slash)
        return;
    char guess[4200], real[4096], cwd[4096];
    snprintf(guess, sizeof guess, "%.*s/" TO_BUILD_ROOT "/shard/sf-shard", (int)(slash - self),
             self);
    if (!realpath(guess, real) || access(real, X_OK) != 0)
        return;
    size_t n = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
    snprintf(tool, cap, "%s", n && !strncmp(real, cwd, n) && real[n] == '/' ? real + n + 1 : real);
}

/* Phase 7: what the run did and where it is; the exit code. */
static int run_summary(const fleet_run *r) {
    const sf_coord_status *st = &r->st;
    const char *dir = r->cfg.output_dir;
    printf("\nrun %s %s in %.1f s\n", r->cfg.name,
           st->complete ? "complete"
           : r->failed  ? "FAILED"
                        : "stopped",
           (double)(sf_now_ns() - r->t0) / 1e9);
    printf("  jobs %llu/%llu%s, shards %llu, records %llu, fights %llu, simulations %llu\n",
           (unsigned long long)st->jobs_done, (unsigned long long)st->jobs_total,
           st->complete && st->jobs_done < st->jobs_total ? " (the gate needed no more)" : "",
           (unsigned long long)st->shards_stored, (unsigned long long)st->labels,
           (unsigned long long)st->fights, (unsigned long long)st->simulations);
    printf("  fallbacks %llu, lease expiries %llu, re-issues %llu, rejected shards %llu\n",
           (unsigned long long)st->fallbacks, (unsigned long long)st->lease_expiries,
           (unsigned long long)st->reissues, (unsigned long long)st->shards_rejected);
    if (st->fights_turn_limit)
        printf("  %llu fight(s) ended at the turn cap (play.max_turns %u): turn-limit losses\n",
               (unsigned long long)st->fights_turn_limit, r->cfg.play.max_turns);
    char tool[4200];
    shard_tool(r->self, tool, sizeof tool);
    printf("  shards in %s/shards (%.2f MB), worker logs in %s/logs\n", dir,
           (double)st->bytes_stored / 1e6, dir);
    if (st->shards_stored > 0) {
        printf("  inspect:  %s verify %s/shards\n", tool, dir);
        printf("            %s ls %s/shards\n", tool, dir);
        printf("            %s cat %s/shards/<shard> --index 0 --json\n", tool, dir);
    }
    if (st->gate) {
        char outcome[200];
        printf("  gate: %s\n", sf_coord_gate_outcome(st, outcome, sizeof outcome));
        if (strcmp(st->gate_decision, SF_GATE_WORD_CONTINUE))
            printf("  verdict:  %s/gate/verdict.json; report: sf-fleet gate report %s\n", dir, dir);
    }
    if (!st->complete && !r->failed)
        printf("  run `sf-fleet run %s` again to resume from the ledger\n", r->config_path);
    return st->complete ? 0 : r->failed ? 1 : 3;
}

/* The coordinator goes, and the endpoint it published with it. */
static void run_close(fleet_run *r) {
    if (r->endpoint_file[0])
        unpublish_endpoint(r->endpoint_file, r->co);
    sf_coordinator_close(r->co);
    r->co = NULL;
}

/* sf-fleet run: the phases above in order; a phase that fails says which
 * step failed and the later ones do not run. */
static int cmd_run(int argc, char **argv, const char *self) {
    fleet_run r = {.self = self};
    int workers, code = run_parse_args(argc, argv, &workers, &r.config_path);
    if (code < 0)
        code = run_open(&r, workers);
    if (code >= 0)
        return code;
    if (run_start_evald(&r) != 0) {
        run_close(&r);
        return 1;
    }
    run_start_workers(&r);
    int rc = run_loop(&r);
    run_shutdown(&r);
    sf_coordinator_status(r.co, &r.st);
    run_close(&r);
    if (rc < 0) {
        fprintf(stderr, "sf-fleet: %s\n", r.err.msg);
        return 1;
    }
    return run_summary(&r);
}

/* ---- gate report ----------------------------------------------------------- */

/* sf-fleet gate report RUN_DIR [--out DIR]: the HTML report of a decided
 * gate (python -m spirefleet.gate_report, under Debian's python3, with the
 * package beside this program in the build tree when it is there). */
void python_path(const char *self) {
    char pkg[4200];
    sibling(self, "python", "spirefleet", pkg, sizeof pkg);
    char *slash = strrchr(pkg, '/');
    if (!slash || access(pkg, F_OK) != 0)
        return;
    *slash = 0;
    const char *old = getenv("PYTHONPATH");
    char path[8400];
    snprintf(path, sizeof path, "%s%s%s", pkg, old && *old ? ":" : "", old ? old : "");
    setenv("PYTHONPATH", path, 1);
}

static int cmd_gate(int argc, char **argv, const char *self) {
    if (argc < 3 || strcmp(argv[1], "report")) {
        usage(stderr);
        return 2;
    }
    python_path(self);
    char *args[8] = {"/usr/bin/python3", "-m", "spirefleet.gate_report"};
    int k = 3;
    for (int i = 2; i < argc && k < 7; i++)
        args[k++] = argv[i];
    args[k] = NULL;
    execv(args[0], args);
    fprintf(stderr, "sf-fleet gate report: cannot run %s: %s\n", args[0], strerror(errno));
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        snprintf(self, sizeof self, "%s", argv[0]);
    else
        self[n] = 0;
    if (!strcmp(cmd, "run"))
        return cmd_run(argc - 1, argv + 1, self);
    if (!strcmp(cmd, "coordinator"))
        return cmd_coordinator(argc - 1, argv + 1);
    if (!strcmp(cmd, "worker"))
        return cmd_worker(argc - 1, argv + 1);
    if (!strcmp(cmd, "status"))
        return cmd_status(argc - 1, argv + 1);
    if (!strcmp(cmd, "dashboard")) {
        install_signals();
        return cmd_dashboard(argc - 1, argv + 1, &g_stop);
    }
    if (!strcmp(cmd, "stop"))
        return cmd_stop(argc - 1, argv + 1);
    if (!strcmp(cmd, "check"))
        return cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "rebuild-ledger"))
        return cmd_rebuild_ledger(argc - 1, argv + 1);
    if (!strcmp(cmd, "backup"))
        return cmd_backup(argc - 1, argv + 1);
    if (!strcmp(cmd, "restore"))
        return cmd_restore(argc - 1, argv + 1);
    if (!strcmp(cmd, "keygen"))
        return cmd_keygen(argc - 1, argv + 1);
    if (!strcmp(cmd, "quarantine"))
        return cmd_quarantine(argc - 1, argv + 1);
    if (!strcmp(cmd, "slurm")) {
        char evald[4200];
        sibling(self, "gpu-evald", "gpu-evald", evald, sizeof evald);
        return sf_fleet_slurm(argc - 1, argv + 1, self, evald);
    }
    if (!strcmp(cmd, "gate"))
        return cmd_gate(argc - 1, argv + 1, self);
    if (!strcmp(cmd, "siblings"))
        return cmd_siblings(argc - 1, argv + 1);
    if (!strcmp(cmd, "loop")) {
        install_signals();
        return cmd_loop(argc - 1, argv + 1, self, &g_stop);
    }
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "sf-fleet: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
