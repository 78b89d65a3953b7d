/*
 * bench_backup.c — lease latency while `sf-fleet backup` copies the ledger
 * of the run the coordinator is serving (docs/operator.md "Backups").
 *
 *   backup.lease_p50_ms_idle, backup.lease_p99_ms_idle
 *                         JobRequest -> Job round trips of 50 DEALER
 *                         clients on loopback (security.mode none; each
 *                         lease given back at once with JobFailed, so the
 *                         coordinator commits to its ledger all the time),
 *                         against a coordinator serving a run of `jobs`
 *                         jobs, with no backup running
 *   backup.lease_p50_ms_during, backup.lease_p99_ms_during
 *                         the same, counting only the leases answered while
 *                         an `sf-fleet backup RUN_DIR DEST` process runs
 *                         (one after another, for the same time)
 *   backup.backup_s       the median wall time of those backups
 *   backup.ledger_mb      the live ledger file and its compacted copy
 *
 * usage: bench-backup SF_FLEET [seconds per phase (10)] [jobs (500000)] [nice]
 *        (nice: the backups run at nice 19)
 * JSON lines first, then a line in words.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "bench.h"
#include "bench_coord.h"
#include "coordinator/coordinator.h"

#define CLIENTS 50

/* Latencies in ms, grown as needed. */
/* `sf-fleet backup rundir dest` (at nice 19 when `niced`), output to
 * /dev/null. */
static pid_t start_backup(const char *fleet, const char *rundir, const char *dest, int niced) {
    bench_rm_rf(dest);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            close(fd);
        }
        if (niced && nice(19) < 0)
            _exit(126);
        execl(fleet, fleet, "backup", rundir, dest, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static double file_mb(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (double)st.st_size / 1048576.0 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench-backup SF_FLEET [seconds] [jobs] [nice]\n");
        return 2;
    }
    const char *fleet = argv[1];
    double seconds = argc > 2 ? atof(argv[2]) : 10;
    unsigned long long jobs = argc > 3 ? strtoull(argv[3], NULL, 10) : 500000;
    int niced = argc > 4 && !strcmp(argv[4], "nice");
    char tmp[] = "/tmp/bench-backup-XXXXXX";
    if (!mkdtemp(tmp))
        return 1;
    char yaml[1024], rundir[256], dest[256], ledger[300], copy[300];
    snprintf(rundir, sizeof rundir, "%s/run", tmp);
    snprintf(dest, sizeof dest, "%s/backup", tmp);
    snprintf(ledger, sizeof ledger, "%s/ledger.lmdb", rundir);
    snprintf(copy, sizeof copy, "%s/ledger.lmdb", dest);
    snprintf(yaml, sizeof yaml,
             "run: {name: backupbench, output_dir: '%s'}\n"
             "seeds: {count: %llu, job_size: 1}\n"
             "coordinator: {endpoint: 'tcp://127.0.0.1:*', lease_seconds: 600,"
             " heartbeat_ms: 60000}\n"
             "security: {mode: none, audit_fraction: 0}\n",
             rundir, jobs);
    sf_run_config cfg;
    sf_err e = {0};
    sf_coordinator *co;
    sf_coord_opts o = {.metrics_port = 0};
    if (sf_config_parse(yaml, strlen(yaml), "backup", &cfg, &e) < 0 ||
        sf_coordinator_open(&cfg, &o, &co, &e) < 0) {
        fprintf(stderr, "bench-backup: %s\n", e.msg);
        bench_rm_rf(tmp);
        return 1;
    }
    serve_arg arg = {co, 0};
    pthread_t th;
    pthread_create(&th, NULL, serve, &arg);
    void *ctx = zmq_ctx_new();
    void *socks[CLIENTS];
    zmq_pollitem_t items[CLIENTS];
    uint64_t sent[CLIENTS];
    bench_lease_clients_open(ctx, sf_coordinator_endpoint(co), NULL, socks, items, CLIENTS);
    bench_lat idle = {0}, during = {0};
    double backups[1024];
    int nbackups = 0, welcomed = 0;
    /* phase 0: no backup for `seconds` once every client is welcomed;
     * phase 1: backups one after another for `seconds` */
    int phase = -1;
    pid_t backup = -1;
    uint64_t phase_t0 = 0, backup_t0 = 0, start = sf_now_ns();
    while (phase < 2) {
        uint64_t now = sf_now_ns();
        if ((double)(now - start) / 1e9 > 60 + 3 * seconds)
            break;
        if (phase >= 0 && (double)(now - phase_t0) / 1e9 >= seconds && backup < 0) {
            phase++;
            phase_t0 = now;
        }
        if (backup > 0) {
            int status;
            if (waitpid(backup, &status, WNOHANG) == backup) {
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                    fprintf(stderr, "bench-backup: sf-fleet backup failed (status %d)\n", status);
                else if (nbackups < 1024)
                    backups[nbackups++] = (double)(sf_now_ns() - backup_t0) / 1e9;
                backup = -1;
            }
        }
        if (phase == 1 && backup < 0 && (double)(now - phase_t0) / 1e9 < seconds) {
            backup_t0 = sf_now_ns();
            backup = start_backup(fleet, rundir, dest, niced);
        }
        /* leases count while no backup runs (phase 0) or while one does */
        bench_lat *into = phase == 0 ? &idle : phase == 1 && backup > 0 ? &during : NULL;
        int before = welcomed;
        bench_lease_turn(socks, items, sent, CLIENTS, &welcomed, 20,
                         into ? bench_lat_on_lease : NULL, into);
        if (before < CLIENTS && welcomed == CLIENTS) {
            phase = 0;
            phase_t0 = sf_now_ns();
        }
    }
    if (backup > 0) {
        kill(backup, SIGKILL);
        waitpid(backup, NULL, 0);
    }
    double live_mb = file_mb(ledger), copy_mb = file_mb(copy);
    arg.stop = 1;
    pthread_join(th, NULL);
    for (int i = 0; i < CLIENTS; i++)
        zmq_close(socks[i]);
    zmq_ctx_term(ctx);
    sf_coordinator_close(co);
    bench_rm_rf(tmp);
    double i50 = bench_lat_pct(&idle, 0.5), i99 = bench_lat_pct(&idle, 0.99);
    double d50 = bench_lat_pct(&during, 0.5), d99 = bench_lat_pct(&during, 0.99);
    double bs = nbackups ? median(backups, nbackups) : 0;
    printf("{\"bench\":\"backup.lease_p50_ms_idle\",\"value\":%.3f,\"unit\":\"ms\",\"n\":%d}\n",
           i50, idle.n);
    printf("{\"bench\":\"backup.lease_p99_ms_idle\",\"value\":%.3f,\"unit\":\"ms\",\"n\":%d}\n",
           i99, idle.n);
    printf("{\"bench\":\"backup.lease_p50_ms_during\",\"value\":%.3f,\"unit\":\"ms\",\"n\":%d}\n",
           d50, during.n);
    printf("{\"bench\":\"backup.lease_p99_ms_during\",\"value\":%.3f,\"unit\":\"ms\",\"n\":%d}\n",
           d99, during.n);
    printf("{\"bench\":\"backup.backup_s\",\"value\":%.3f,\"unit\":\"s\",\"n\":%d}\n", bs,
           nbackups);
    printf("{\"bench\":\"backup.ledger_mb\",\"live\":%.1f,\"copy\":%.1f,\"jobs\":%llu}\n", live_mb,
           copy_mb, jobs);
    printf("backup: lease p99 %.2f ms without a backup, %.2f ms during %d backups%s of a %llu-job "
           "ledger (%.0f MB live, %.0f MB compacted, %.2f s each)\n",
           i99, d99, nbackups, niced ? " at nice 19" : "", jobs, live_mb, copy_mb, bs);
    free(idle.v);
    free(during.v);
    return idle.n && during.n && nbackups ? 0 : 1;
}
