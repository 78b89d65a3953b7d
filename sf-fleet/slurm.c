/*
 * slurm.c — `sf-fleet slurm`: a run's sbatch scripts (see slurm.h).
 *
 * The scripts follow from the config and three directories, and nothing
 * else (no clock, no host), so writing them again gives the same bytes:
 *
 *   workdir     the jobs' working directory (--chdir): slurm.workdir, or
 *               the directory this command runs in; a relative
 *               run.output_dir or model.bundle is relative to it
 *   output dir  run.output_dir made absolute: the ledger and shards, and
 *               the endpoint files the jobs find each other through
 *   script dir  --out, default <output dir>/slurm
 *
 * Why these choices (docs/operator.md, "Running on Slurm"):
 *   - separate jobs chained by dependencies (after:ID, "once it has
 *     started"), not a heterogeneous job: the components want different
 *     partitions and sizes, and a heterogeneous job must start all at once,
 *     which backfill often cannot place;
 *   - endpoints published in files on the shared filesystem, since no one
 *     knows before the jobs start which node or port they get; workers read
 *     the coordinator's again before every connection, so a coordinator
 *     requeued onto another node is found;
 *   - each script runs its program in the background and forwards signals
 *     to it, so SIGTERM (cancel, preemption, requeue) stops it cleanly and
 *     the pre-time-limit SIGUSR1 that --signal=B:USR1@N sends to the batch
 *     shell reaches the worker as a drain.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/io.h"
#include "fleet/wire.h"
#include "sf-fleet/cli.h"
#include "sf-fleet/slurm.h"

#define PATH_CAP 1200

/* Where things are, as the scripts name them (all absolute). */
typedef struct layout {
    const char *config_path; /* the config as given                        */
    char workdir[PATH_CAP];
    char output_dir[PATH_CAP];
    char out[PATH_CAP];      /* the script directory                      */
    char sf_fleet[PATH_CAP]; /* the programs on the compute nodes          */
    char gpu_evald[PATH_CAP];
    char evald_bind[PATH_CAP]; /* gpu-evald's --bind: evald.endpoint's host, any port */
    char keys[PATH_CAP];       /* the run's key directory, absolute; "": mode none  */
    int net;                   /* the run needs gpu-evald                     */
} layout;

static void usage(FILE *f) {
    fprintf(f, "usage: sf-fleet slurm CONFIG [--out DIR]\n"
               "Writes the run's sbatch scripts and submit.sh into DIR (default\n"
               "<run.output_dir>/slurm). See docs/operator.md, \"Running on Slurm\".\n");
}

/* `rel` made absolute against `base` (an absolute `rel` is kept). */
static int absolute(const char *base, const char *rel, char *out, size_t cap) {
    int n = rel[0] == '/' ? snprintf(out, cap, "%s", rel) : snprintf(out, cap, "%s/%s", base, rel);
    if (n < 0 || (size_t)n >= cap)
        return -1;
    /* drop "/./" and a trailing "/" or "/.", the usual leftovers of joining */
    for (char *p; (p = strstr(out, "/./"));)
        memmove(p, p + 2, strlen(p + 2) + 1);
    size_t l = strlen(out);
    if (l > 2 && !strcmp(out + l - 2, "/."))
        out[l -= 2] = '\0';
    while (l > 1 && out[l - 1] == '/')
        out[--l] = '\0';
    return 0;
}

/* A path the scripts will hold: checked, or why not (exit code 2). */
static int script_path(const char *what, const char *path) {
    if (sf_config_script_path_ok(path))
        return 0;
    fprintf(stderr, "sf-fleet slurm: %s is '%s': %s\n", what, path, SF_CFG_SCRIPT_PATH_RULE);
    return -1;
}

/* A tcp:// endpoint's host ("" for ipc://); `out` holds cap bytes. */
static void endpoint_host(const char *ep, char *out, size_t cap) {
    out[0] = '\0';
    if (strncmp(ep, "tcp://", 6))
        return;
    const char *colon = strrchr(ep + 6, ':');
    size_t l = colon ? (size_t)(colon - (ep + 6)) : strlen(ep + 6);
    snprintf(out, cap, "%.*s", (int)l, ep + 6);
}

static int loopback(const char *host) {
    return !strcmp(host, "localhost") || !strncmp(host, "127.", 4) || !strcmp(host, "[::1]");
}

/* A server other nodes cannot reach is fine on one node (the tests) and a
 * mistake on many: say so, and go on. */
static void warn_unreachable(const char *key, const char *ep) {
    char host[256];
    endpoint_host(ep, host, sizeof host);
    if (strncmp(ep, "ipc://", 6) && !loopback(host))
        return;
    fprintf(stderr,
            "sf-fleet slurm: warning: %s %s is reachable from its own node only; for workers on "
            "other nodes bind tcp://*:PORT (or tcp://*:*)\n",
            key, ep);
}

/* Phase 2: the directories and programs the scripts name. Returns -1 on
 * success, else the exit code. */
static int slurm_layout(const sf_run_config *cfg, const char *out_arg, const char *self,
                        const char *evald, layout *l) {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
        fprintf(stderr, "sf-fleet slurm: cannot read the working directory: %s\n", strerror(errno));
        return 1;
    }
    int too_long = absolute(cwd, cfg->slurm.workdir[0] ? cfg->slurm.workdir : ".", l->workdir,
                            sizeof l->workdir) < 0 ||
                   absolute(l->workdir, cfg->output_dir, l->output_dir, sizeof l->output_dir) < 0;
    char keys[SF_CFG_PATH + 8];
    sf_config_keys_dir(cfg, keys, sizeof keys);
    if (!too_long && keys[0])
        too_long = absolute(l->workdir, keys, l->keys, sizeof l->keys) < 0;
    if (!too_long && out_arg)
        too_long = absolute(cwd, out_arg, l->out, sizeof l->out) < 0;
    else if (!too_long)
        too_long = absolute(l->output_dir, "slurm", l->out, sizeof l->out) < 0;
    /* the programs: slurm.bin_dir, else this sf-fleet and the gpu-evald
     * `sf-fleet run` would start (beside it, or in the build tree) */
    char self_dir[PATH_CAP];
    snprintf(self_dir, sizeof self_dir, "%s", self);
    char *slash = strrchr(self_dir, '/');
    if (slash)
        *slash = '\0';
    const char *bin = cfg->slurm.bin_dir[0] ? cfg->slurm.bin_dir : self_dir;
    char evald_real[PATH_MAX];
    const char *evald_path = "gpu-evald"; /* in bin */
    if (!cfg->slurm.bin_dir[0] && evald[0] == '/' && realpath(evald, evald_real))
        evald_path = evald_real; /* the build tree's, as `sf-fleet run` finds it */
    if (!too_long)
        too_long = absolute(bin, "sf-fleet", l->sf_fleet, sizeof l->sf_fleet) < 0 ||
                   absolute(bin, evald_path, l->gpu_evald, sizeof l->gpu_evald) < 0;
    if (too_long) {
        fprintf(stderr, "sf-fleet slurm: a path of the scripts is longer than %d bytes\n",
                PATH_CAP - 1);
        return 2;
    }
    if (script_path("the working directory (slurm.workdir)", l->workdir) < 0 ||
        script_path("run.output_dir, made absolute", l->output_dir) < 0 ||
        script_path("the script directory (--out)", l->out) < 0 ||
        script_path("sf-fleet's path (slurm.bin_dir)", l->sf_fleet) < 0 ||
        script_path("gpu-evald's path (slurm.bin_dir)", l->gpu_evald) < 0 ||
        (l->keys[0] && script_path("the key directory (security.keys)", l->keys) < 0))
        return 2;
    warn_unreachable("coordinator.endpoint", cfg->coordinator.endpoint);
    if (!strcmp(cfg->security.mode, "curve") &&
        cfg->slurm.workers > cfg->security.max_workers_per_key) {
        fprintf(stderr,
                "sf-fleet slurm: %s: slurm.workers %u share one worker key, above "
                "security.max_workers_per_key (%u): raise it, or give groups of workers keys "
                "of their own\n",
                l->config_path, cfg->slurm.workers, cfg->security.max_workers_per_key);
        return 2;
    }
    l->net = !strcmp(cfg->search.evaluator, "net");
    if (l->net) {
        if (strncmp(cfg->evald.endpoint, "tcp://", 6)) {
            fprintf(stderr,
                    "sf-fleet slurm: %s: evald.endpoint %s: gpu-evald runs as a job of its own, "
                    "on a GPU node; give it a tcp:// endpoint (tcp://*:*)\n",
                    l->config_path, cfg->evald.endpoint);
            return 2;
        }
        char host[256];
        endpoint_host(cfg->evald.endpoint, host, sizeof host);
        snprintf(l->evald_bind, sizeof l->evald_bind, "tcp://%s:*", host);
        warn_unreachable("evald.endpoint", cfg->evald.endpoint);
        if (strchr(cfg->model.bundle, '\'')) {
            fprintf(stderr, "sf-fleet slurm: model.bundle '%s' holds a quote\n", cfg->model.bundle);
            return 2;
        }
    }
    return -1;
}

/* ---- the scripts ----------------------------------------------------------- */

/* "#SBATCH --NAME=VALUE", unless VALUE is empty (the cluster's default). */
static void sbatch_opt(FILE *f, const char *name, const char *value) {
    if (value && value[0])
        fprintf(f, "#SBATCH --%s=%s\n", name, value);
}

/* The options every job shares: name, partition, account, QOS, limit. */
static void sbatch_head(FILE *f, const sf_run_config *cfg, const char *what, const char *partition,
                        const char *time) {
    fprintf(f, "#SBATCH --job-name=%s-%s\n", cfg->name, what);
    sbatch_opt(f, "partition", partition);
    sbatch_opt(f, "account", cfg->slurm.account);
    sbatch_opt(f, "qos", cfg->slurm.qos);
    sbatch_opt(f, "time", time);
    fprintf(f, "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n");
}

/* The options after the sizes: requeue, log, directory. */
static void sbatch_tail(FILE *f, const layout *l, const char *log) {
    fprintf(f,
            "#SBATCH --requeue\n"
            "#SBATCH --open-mode=append\n"
            "#SBATCH --chdir=%s\n"
            "#SBATCH --output=%s/logs/%s\n"
            "set -u\n",
            l->workdir, l->out, log);
}

/* Wait for the program of "$pid" to exit, through the traps' interruptions
 * of `wait`; its exit status lands in $status. */
static const char wait_for_pid[] = "status=0\n"
                                   "wait \"$pid\" || status=$?\n"
                                   "while kill -0 \"$pid\" 2>/dev/null; do\n"
                                   "  status=0\n"
                                   "  wait \"$pid\" || status=$?\n"
                                   "done\n";

static void write_coordinator(FILE *f, const sf_run_config *cfg, const layout *l) {
    fprintf(f,
            "#!/bin/bash\n"
            "# The coordinator of run %s, written by `sf-fleet slurm` (docs/operator.md,\n"
            "# \"Running on Slurm\"). submit.sh submits it with the other jobs; submitted\n"
            "# alone it restarts the coordinator, which resumes from the ledger.\n",
            cfg->name);
    sbatch_head(f, cfg, "coordinator", cfg->slurm.partition, cfg->slurm.coordinator_time);
    fprintf(f, "#SBATCH --cpus-per-task=2\n");
    sbatch_tail(f, l, "coordinator-%j.out");
    fprintf(f,
            "endpoint_file='%s/" SF_FLEET_ENDPOINT_FILE "'\n"
            "echo \"coordinator: job ${SLURM_JOB_ID:-} restart ${SLURM_RESTART_COUNT:-0} on "
            "$(hostname)\"\n"
            "# Workers dial whatever this file names; a requeued coordinator writes its own.\n"
            "rm -f \"$endpoint_file\"\n"
            "'%s' coordinator '%s/fleet.yaml' --endpoint-file \"$endpoint_file\" "
            "--exit-when-done &\n"
            "pid=$!\n"
            "# Cancellation, preemption, requeue and the time limit send SIGTERM: the\n"
            "# coordinator stops cleanly (exit 3); the ledger holds every job's state.\n"
            "signalled=0\n"
            "trap 'signalled=1; kill -TERM \"$pid\" 2>/dev/null' TERM INT\n"
            "%s"
            "if [ \"$status\" = 3 ] && [ \"$signalled\" = 1 ]; then\n"
            "  exit 0 # Slurm stopped it; submitted again (or requeued) it resumes\n"
            "fi\n"
            "# The run is complete (0), was stopped with `sf-fleet stop` (3) or failed:\n"
            "# the jobs left (workers still queued, gpu-evald) have nothing more to do.\n"
            "others=$(awk '$1 != \"coordinator\" { print $2 }' '%s/jobs' 2>/dev/null)\n"
            "if [ -n \"$others\" ]; then\n"
            "  echo \"coordinator: exit $status; cancelling jobs $others\"\n"
            "  # shellcheck disable=SC2086 # one job id a word\n"
            "  scancel $others\n"
            "fi\n"
            "[ \"$status\" = 3 ] && status=0\n"
            "exit \"$status\"\n",
            l->output_dir, l->sf_fleet, l->out, wait_for_pid, l->out);
}

static void write_worker(FILE *f, const sf_run_config *cfg, const layout *l) {
    char array[32], cpus[16], signal[32];
    snprintf(array, sizeof array, "0-%u", cfg->slurm.workers - 1);
    snprintf(cpus, sizeof cpus, "%u",
             cfg->slurm.cpus_per_worker ? cfg->slurm.cpus_per_worker : cfg->workers.threads);
    snprintf(signal, sizeof signal, "B:USR1@%u", cfg->slurm.signal_seconds);
    fprintf(f,
            "#!/bin/bash\n"
            "# The workers of run %s, one per array task, written by `sf-fleet slurm`\n"
            "# (docs/operator.md, \"Running on Slurm\"). More workers later:\n"
            "#   sbatch --array=%u-%u %s/worker.sbatch\n",
            cfg->name, cfg->slurm.workers, 2 * cfg->slurm.workers - 1, l->out);
    sbatch_head(f, cfg, "worker", cfg->slurm.partition, cfg->slurm.worker_time);
    sbatch_opt(f, "array", array);
    sbatch_opt(f, "cpus-per-task", cpus);
    sbatch_opt(f, "mem", cfg->slurm.mem_per_worker);
    if (cfg->slurm.signal_seconds)
        sbatch_opt(f, "signal", signal);
    sbatch_tail(f, l, "worker-%A_%a.out");
    fprintf(f,
            "task=${SLURM_ARRAY_TASK_ID:-0}\n"
            "id=%s-w$task-r${SLURM_RESTART_COUNT:-0}\n"
            "scratch=${TMPDIR:-/tmp}/spirefleet-%s-w$task\n"
            "# Shards an earlier run of this task had not uploaded are played again\n"
            "# by the fleet (their leases expired): drop them.\n"
            "rm -rf \"$scratch\"\n"
            "echo \"worker $id: job ${SLURM_JOB_ID:-} on $(hostname)\"\n",
            cfg->name, cfg->name);
    fprintf(f, "'%s' worker --connect-file '%s/" SF_FLEET_ENDPOINT_FILE "' \\\n", l->sf_fleet,
            l->output_dir);
    if (l->net)
        fprintf(f, "  --evald-file \"%s/evald-$((task %% %u)).endpoint\" \\\n", l->output_dir,
                cfg->slurm.gpus_per_evald);
    if (l->keys[0]) /* CURVE: server.pub and worker.key (docs/operator.md "Security") */
        fprintf(f, "  --keys '%s' \\\n", l->keys);
    fprintf(f,
            "  --id \"$id\" --scratch \"$scratch\" &\n"
            "pid=$!\n"
            "# --signal=B:USR1 comes before the time limit: drain (finish and upload\n"
            "# the job in hand, then leave).\n"
            "trap 'kill -USR1 \"$pid\" 2>/dev/null' USR1\n"
            "# Cancellation, preemption, requeue: abandon the job in hand, which the\n"
            "# coordinator issues again at once.\n"
            "trap 'kill -TERM \"$pid\" 2>/dev/null' TERM INT\n"
            "%s"
            "rm -rf \"$scratch\"\n"
            "echo \"worker $id: exit $status\"\n"
            "# 0: the run is complete; 3: drained or stopped, its work handed back.\n"
            "case $status in 0 | 3) exit 0 ;; esac\n"
            "exit \"$status\"\n",
            wait_for_pid);
}

static void write_evald(FILE *f, const sf_run_config *cfg, const layout *l) {
    char gres[32];
    snprintf(gres, sizeof gres, "gpu:%u", cfg->slurm.gpus_per_evald);
    fprintf(f,
            "#!/bin/bash\n"
            "# gpu-evald for run %s, one server per GPU of the job, written by\n"
            "# `sf-fleet slurm` (docs/operator.md, \"Running on Slurm\"). Worker task I\n"
            "# uses server I %% %u, through the endpoint file that server publishes.\n",
            cfg->name, cfg->slurm.gpus_per_evald);
    sbatch_head(f, cfg, "evald",
                cfg->slurm.gpu_partition[0] ? cfg->slurm.gpu_partition : cfg->slurm.partition,
                cfg->slurm.evald_time);
    sbatch_opt(f, "gres", gres);
    sbatch_opt(f, "cpus-per-task", "2");
    sbatch_tail(f, l, "evald-%j.out");
    fprintf(f,
            "echo \"gpu-evald: job ${SLURM_JOB_ID:-} restart ${SLURM_RESTART_COUNT:-0} on "
            "$(hostname), GPUs ${CUDA_VISIBLE_DEVICES:-none}\"\n"
            "pids=\n"
            "%s%s%s"
            "for k in $(seq 0 %u); do\n"
            "  rm -f \"%s/evald-$k.endpoint\"\n"
            "  '%s' --backend %s --model '%s@%s' --device \"$k\" \\\n"
            "    --bind '%s' --max-batch %u --max-wait-us %u --metrics-port '*' \\\n"
            "    --endpoint-file \"%s/evald-$k.endpoint\"%s%s%s &\n"
            "  pids=\"$pids $!\"\n"
            "done\n"
            "# Cancellation, preemption, requeue: every server stops.\n"
            "trap 'kill -TERM $pids 2>/dev/null' TERM INT\n"
            "# One server that ends (a model that fails its canary, a GPU lost)\n"
            "# ends the job, so it shows as failed instead of serving with a hole.\n"
            "status=0\n"
            "wait -n || status=$?\n"
            "# shellcheck disable=SC2086 # one pid a word\n"
            "kill -TERM $pids 2>/dev/null\n"
            "wait\n"
            "exit \"$status\"\n",
            /* the keys a coordinator makes at its first start (security.keys
             * empty) may come after this job starts */
            l->keys[0] ? "until [ -e '" : "", l->keys,
            l->keys[0] ? "/server.key' ]; do sleep 1; done\n" : "", cfg->slurm.gpus_per_evald - 1,
            l->output_dir, l->gpu_evald, cfg->evald.backend, cfg->model.bundle, cfg->model.sha256,
            l->evald_bind, cfg->evald.max_batch, cfg->evald.max_wait_us, l->output_dir,
            /* security.mode none: plain on purpose (gpu-evald refuses a
             * non-loopback --bind without keys otherwise) */
            l->keys[0] ? " --keys '" : "", l->keys, l->keys[0] ? "'" : " --security none");
}

static void write_submit(FILE *f, const sf_run_config *cfg, const layout *l) {
    fprintf(f,
            "#!/bin/sh\n"
            "# Submit run %s to Slurm, written by `sf-fleet slurm` (docs/operator.md,\n"
            "# \"Running on Slurm\"): the coordinator first, then %sthe workers, which\n"
            "# start once it has started. Arguments go to every sbatch (--reservation=R).\n"
            "# The job ids go to jobs; the coordinator's job cancels the others when\n"
            "# the run ends.\n"
            "set -eu\n"
            "dir='%s'\n"
            "mkdir -p \"$dir/logs\"\n"
            "coordinator=$(sbatch --parsable \"$@\" \"$dir/coordinator.sbatch\")\n"
            "coordinator=${coordinator%%%%;*}\n"
            "echo \"coordinator $coordinator\" >\"$dir/jobs.tmp\"\n"
            "after=--dependency=after:$coordinator\n",
            cfg->name, l->net ? "gpu-evald and " : "", l->out);
    if (l->net)
        fprintf(f, "evald=$(sbatch --parsable \"$after\" --kill-on-invalid-dep=yes \"$@\" "
                   "\"$dir/evald.sbatch\")\n"
                   "evald=${evald%%%%;*}\n"
                   "echo \"evald $evald\" >>\"$dir/jobs.tmp\"\n");
    fprintf(f, "workers=$(sbatch --parsable \"$after\" --kill-on-invalid-dep=yes \"$@\" "
               "\"$dir/worker.sbatch\")\n"
               "workers=${workers%%%%;*}\n"
               "echo \"workers $workers\" >>\"$dir/jobs.tmp\"\n"
               "mv \"$dir/jobs.tmp\" \"$dir/jobs\"\n"
               "cat \"$dir/jobs\"\n");
}

/* ---- writing ------------------------------------------------------------------ */

/* Write `path` from what `fill` prints, through a temp file and a rename,
 * with `mode`. 0, or -1 after saying why. */
static int write_file(const char *path, int mode, const sf_run_config *cfg, const layout *l,
                      void (*fill)(FILE *, const sf_run_config *, const layout *)) {
    char *text = NULL, tmp[PATH_CAP + 8];
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) {
        fprintf(stderr, "sf-fleet slurm: out of memory\n");
        return -1;
    }
    fill(m, cfg, l);
    fclose(m);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    int rc = fd < 0 ? SF_EIO : sf_write_full(fd, text, len);
    int why = errno;
    if (fd >= 0 && (close(fd) != 0 || (rc == SF_OK && chmod(tmp, (mode_t)mode) != 0)))
        rc = SF_EIO, why = errno;
    if (rc == SF_OK && rename(tmp, path) != 0)
        rc = SF_EIO, why = errno;
    free(text);
    if (rc == SF_OK)
        return 0;
    unlink(tmp);
    fprintf(stderr, "sf-fleet slurm: %s: cannot write: %s\n", path, strerror(why));
    return -1;
}

/* The config the coordinator job reads: the file as given, byte for byte. */
static void copy_config(FILE *f, const sf_run_config *cfg, const layout *l) {
    (void)cfg;
    FILE *in = fopen(l->config_path, "rb");
    char buf[8192];
    size_t n;
    while (in && (n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, f);
    if (in)
        fclose(in);
}

/* Phase 3: the files. Returns 0, or the exit code. */
static int slurm_write(const sf_run_config *cfg, layout *l) {
    char logs[PATH_CAP + 8], path[PATH_CAP + 32];
    snprintf(logs, sizeof logs, "%s/logs", l->out);
    if (sf_mkdir_p(logs) < 0) {
        fprintf(stderr, "sf-fleet slurm: %s: cannot create: %s\n", logs, strerror(errno));
        return 1;
    }
    static const struct {
        const char *name;
        int mode, net_only;
        void (*fill)(FILE *, const sf_run_config *, const layout *);
    } files[] = {{"coordinator.sbatch", 0755, 0, write_coordinator},
                 {"evald.sbatch", 0755, 1, write_evald},
                 {"worker.sbatch", 0755, 0, write_worker},
                 {"submit.sh", 0755, 0, write_submit}};
    /* the config first, unless --out is where it already is */
    char here[PATH_MAX], there[PATH_MAX];
    snprintf(path, sizeof path, "%s/fleet.yaml", l->out);
    if (!(realpath(l->config_path, here) && realpath(path, there) && !strcmp(here, there)) &&
        write_file(path, 0644, cfg, l, copy_config) < 0)
        return 1;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", l->out, files[i].name);
        if (files[i].net_only && !l->net) {
            unlink(path); /* a net run's, from an earlier config */
            continue;
        }
        if (write_file(path, files[i].mode, cfg, l, files[i].fill) < 0)
            return 1;
    }
    return 0;
}

int sf_fleet_slurm(int argc, char **argv, const char *self, const char *evald) {
    static const struct option opts[] = {
        {"out", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *out = NULL;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'o': out = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return 2;
    }
    layout *l = calloc(1, sizeof *l);
    sf_run_config *cfg = malloc(sizeof *cfg);
    int code = l && cfg ? -1 : 1;
    if (code < 0) { /* phase 1: the config, checked as `sf-fleet check` does */
        l->config_path = argv[optind];
        code = sf_fleet_load(l->config_path, cfg) < 0 ? 2 : -1;
        if (code < 0)
            sf_fleet_warn_placeholder_sha(l->config_path, cfg);
    }
    if (code < 0)
        code = slurm_layout(cfg, out, self, evald, l);
    if (code < 0)
        code = slurm_write(cfg, l);
    if (code == 0)
        printf("sf-fleet slurm: run %s: scripts in %s\n"
               "  submit:   %s/submit.sh\n"
               "  watch:    squeue --name=%s-coordinator,%s-worker%s%s%s\n"
               "            sf-fleet status $(cat %s/" SF_FLEET_ENDPOINT_FILE ")%s%s%s\n",
               cfg->name, l->out, l->out, cfg->name, cfg->name, l->net ? "," : "",
               l->net ? cfg->name : "", l->net ? "-evald" : "", l->output_dir,
               l->keys[0] ? " --keys '" : "", l->keys, l->keys[0] ? "'" : "");
    free(l);
    free(cfg);
    return code < 0 ? 1 : code;
}
