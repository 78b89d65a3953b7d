/*
 * loop.c — sf-fleet loop CONFIG: the training loop of docs/loop.md.
 *
 * Generation 0 is self-play with rollout leaves. Then, for each generation
 * g = 1 .. loop.generations: train on the self-play labels of the
 * generations before it (newest first, the window of train.*), export the
 * network into the run's model registry, gate it against the champion,
 * promote or reject, and (except after the last gate) self-play with the
 * champion as the network evaluator. Each stage is an ordinary, resumable
 * process run by this driver: `sf-fleet run` on a derived config (its own
 * ledger under gen<g>/), `python3 -m spirefleet.train` (checkpoints) and
 * `python3 -m spirefleet.export`. The driver's state, loop.json, is
 * rewritten durably at every stage boundary, so a kill -9 of anything
 * resumes at the stage it was in, and every stage resumes from its own
 * durable state.
 *
 * One gpu-evald serves the whole loop from the registry (--models
 * <run>/models): a new champion or candidate is loaded on its first request
 * (canary first) without a restart, and models nobody asks for any more are
 * dropped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/io.h"
#include "common/registry.h"
#include "fleet/config.h"
#include "gate/stats.h"
#include "sf-fleet/cli.h"
#include "sf-fleet/loop_state.h"
#include "shard/shard.h"
#include "worker/worker.h"

/* Paths below the run directory fit the config's path fields: the
 * directory itself is at most LOOP_BASE_MAX bytes (checked at start). */
#define LOOP_BASE_MAX 150

typedef struct loop {
    const char *self, *config_path;
    sf_run_config cfg;
    char base[LOOP_BASE_MAX + 1];   /* run.output_dir                   */
    char models[LOOP_BASE_MAX + 8]; /* <base>/models: the registry      */
    char evald_ep[128];             /* ipc://<base>/evald.sock          */
    json_t *st;                     /* loop.json                              */
    volatile sig_atomic_t *stop;
    pid_t evald;
} loop;

static const char *str_of(json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static int gen_of(const loop *l) {
    return (int)json_integer_value(json_object_get(l->st, SF_LOOP_KEY_GENERATION));
}

/* Durable: temp, fsync, rename (common/io.h). */
static int save_state(loop *l, sf_err *err) {
    char path[SF_CFG_PATH + 16];
    snprintf(path, sizeof path, "%s/loop.json", l->base);
    char *s = json_dumps(l->st, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    if (!s)
        return sf_err_set(err, SF_ENOMEM, "loop: out of memory");
    int rc = sf_write_file_durable(path, s, strlen(s), err);
    free(s);
    return rc;
}

static int load_state(loop *l, sf_err *err) {
    char path[SF_CFG_PATH + 16];
    snprintf(path, sizeof path, "%s/loop.json", l->base);
    if (access(path, F_OK) != 0) {
        l->st = json_pack("{s:s,s:s,s:i,s:s,s:s,s:[],s:[]}", SF_LOOP_KEY_RUN, l->cfg.name,
                          SF_LOOP_KEY_CONFIG_DIGEST, "", SF_LOOP_KEY_GENERATION, 0,
                          SF_LOOP_KEY_STAGE, SF_LOOP_STAGE_SELFPLAY, SF_LOOP_KEY_CHAMPION,
                          SF_LOOP_ROLLOUT, SF_LOOP_KEY_HISTORY, SF_LOOP_KEY_GENERATIONS);
        char digest[65];
        sf_config_digest(&l->cfg, digest);
        json_object_set_new(l->st, SF_LOOP_KEY_CONFIG_DIGEST, json_string(digest));
        return save_state(l, err);
    }
    json_error_t je;
    l->st = json_load_file(path, 0, &je);
    if (!l->st || !json_is_object(l->st))
        return sf_err_set(err, SF_EFORMAT, "%s:%d: %s", path, je.line, je.text);
    char digest[65];
    sf_config_digest(&l->cfg, digest);
    if (strcmp(str_of(l->st, SF_LOOP_KEY_CONFIG_DIGEST), digest))
        return sf_err_set(err, SF_ECONFIG,
                          "%s: this loop was started with config %.12s..., not %.12s...: use "
                          "another run.output_dir for another config",
                          path, str_of(l->st, SF_LOOP_KEY_CONFIG_DIGEST), digest);
    return SF_OK;
}

static void set_stage(loop *l, const char *stage) {
    json_object_set_new(l->st, SF_LOOP_KEY_STAGE, json_string(stage));
}

/* The record of generation g in loop.json (created on first use). */
static json_t *gen_rec(loop *l, int g) {
    json_t *a = json_object_get(l->st, SF_LOOP_KEY_GENERATIONS);
    while ((int)json_array_size(a) <= g)
        json_array_append_new(a,
                              json_pack("{s:i}", SF_LOOP_KEY_GENERATION, (int)json_array_size(a)));
    return json_array_get(a, (size_t)g);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------------------
 * Children
 * ------------------------------------------------------------------------- */

/* Run argv to completion with its output appended to `log` (stdout to
 * `out` instead when not NULL). A stop request is passed on (SIGTERM) and
 * waited for. Returns the exit status (0 ok), 3 when stopped, -1 when it
 * could not start or died of a signal. */
static int run_child(loop *l, char *const argv[], const char *log, const char *out) {
    pid_t parent = getpid(), pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int fo = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : fd;
        if (fd >= 0 && fo >= 0) {
            dup2(fo, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        execv(argv[0], argv);
        fprintf(stderr, "sf-fleet loop: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0, forwarded = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, 0);
        if (w == pid)
            break;
        if (w < 0 && errno == EINTR && *l->stop && !forwarded) {
            kill(pid, SIGTERM);
            forwarded = 1;
        }
    }
    if (*l->stop)
        return 3;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A killed driver's stage child (told by PDEATHSIG) may still be stopping
 * and hold its run directory's coordinator lock: wait, up to a minute,
 * until the lock is free before starting the stage again. */
static void wait_for_lock(loop *l, const char *run_dir) {
    char path[SF_CFG_PATH + 32];
    snprintf(path, sizeof path, "%.200s/coordinator.lock", run_dir);
    for (int tries = 0; tries < 600 && !*l->stop; tries++) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            return; /* never started: nothing holds it */
        int free_now = flock(fd, LOCK_EX | LOCK_NB) == 0;
        close(fd);
        if (free_now)
            return;
        if (tries == 0)
            fprintf(stderr, "loop: waiting for the previous run in %s to stop\n", run_dir);
        usleep(100 * 1000);
    }
}

static int mkdirs(const char *dir, sf_err *err) {
    if (sf_mkdir_p(dir) < 0)
        return sf_err_set(err, SF_EIO, "%s: cannot create: %s", dir, strerror(errno));
    return SF_OK;
}

/* ---------------------------------------------------------------------------
 * Stage configs
 * ------------------------------------------------------------------------- */

/* The keys a derived run of kind `kind` cannot hold go back to their
 * defaults (the loop's own keys, a gate's sides in a self-play run, ...):
 * the schema's row flags say which. */
static void keep_kind(sf_run_config *c, unsigned kind) {
    sf_run_config d;
    sf_config_defaults(&d);
    size_t n;
    const sf_config_key *rows = sf_config_schema(&n);
    for (size_t i = 0; i < n; i++) {
        unsigned kinds = rows[i].flags & SF_CFG_KINDS;
        if (!kinds || (kinds & kind))
            continue;
        memcpy((char *)c + rows[i].off, (const char *)&d + rows[i].off, rows[i].size);
        if (rows[i].count_off)
            memcpy((char *)c + rows[i].count_off, (const char *)&d + rows[i].count_off,
                   sizeof(int));
    }
}

/* Write `c` as YAML to `path` (checked first). */
static int write_config(const sf_run_config *c, const char *path, sf_err *err) {
    int rc = sf_config_validate(c, path, err);
    if (rc < 0)
        return rc;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return sf_err_set(err, SF_ENOMEM, "loop: out of memory");
    fprintf(m, "# Written by sf-fleet loop from %s; do not edit (docs/loop.md).\n", c->name);
    sf_config_print(c, m);
    fclose(m);
    rc = sf_write_file_durable(path, text, len, err);
    free(text);
    return rc;
}

static void model_path(const loop *l, const char *sha, char *out, size_t cap) {
    sf_registry_bundle_path(l->models, sha, out, cap); /* fits: LOOP_BASE_MAX */
}

/* The loop's config as generation g's run of kind `kind` (SF_CFG_* bit
 * `kind_bit`): only that kind's keys kept, named NAME-<tag>g, its output
 * in <base>/gen<g>/<kind>. */
static void stage_config(const loop *l, int g, unsigned kind_bit, const char *kind, const char *tag,
                         sf_run_config *c) {
    *c = l->cfg;
    keep_kind(c, kind_bit);
    snprintf(c->kind, sizeof c->kind, "%s", kind);
    snprintf(c->name, sizeof c->name, "%.40s-%s%d", l->cfg.name, tag, g);
    snprintf(c->output_dir, sizeof c->output_dir, "%.150s/gen%d/%s", l->base, g, kind);
}

/* Generation g's self-play run: its own seeds, the champion's evaluator
 * (followed through the registry's champion file). */
static int selfplay_config(loop *l, int g, char *path, size_t cap, sf_err *err) {
    sf_run_config c;
    stage_config(l, g, SF_CFG_SELFPLAY, "selfplay", "gen", &c);
    c.seed_start = l->cfg.seed_start + (uint64_t)g * l->cfg.seed_count;
    const char *champ = str_of(l->st, SF_LOOP_KEY_CHAMPION);
    if (strcmp(champ, SF_LOOP_ROLLOUT)) {
        /* follow the registry: each job is bound to the champion when it
         * is first leased, so a promotion reaches self-play without an edit */
        snprintf(c.search.evaluator, sizeof c.search.evaluator, "net");
        if (l->cfg.loop.net_simulations) /* a network simulation costs many rollout ones */
            c.search.simulations = l->cfg.loop.net_simulations;
        c.model.bundle[0] = c.model.sha256[0] = '\0';
        snprintf(c.model.champion, sizeof c.model.champion, "%s/champion", l->models);
        snprintf(c.evald.endpoint, sizeof c.evald.endpoint, "%s", l->evald_ep);
        c.evald.spawn = 0;
    } else {
        c.search.leaf_mix = 0; /* rollout leaves: nothing to mix (a gate's network sides mix) */
    }
    snprintf(path, cap, "%s/gen%d/selfplay.yaml", l->base, g);
    int rc = mkdirs(c.output_dir, err);
    return rc < 0 ? rc : write_config(&c, path, err);
}

static void side(loop *l, struct sf_cfg_gate_side *s, const char *sha) {
    memset(s, 0, sizeof *s);
    s->widening_alpha = -1;
    s->leaf_mix = -1; /* search.leaf_mix, for a network side */
    snprintf(s->select, sizeof s->select, "same");
    if (!strcmp(sha, SF_LOOP_ROLLOUT)) {
        snprintf(s->evaluator, sizeof s->evaluator, "rollout");
        return;
    }
    snprintf(s->evaluator, sizeof s->evaluator, "net");
    model_path(l, sha, s->bundle, sizeof s->bundle);
    snprintf(s->sha256, sizeof s->sha256, "%s", sha);
}

/* Generation g's gate: the candidate against the champion, on seeds of its
 * own after every self-play generation's. */
static int gate_config(loop *l, int g, char *path, size_t cap, sf_err *err) {
    sf_run_config c;
    stage_config(l, g, SF_CFG_GATE, "gate", "gate", &c);
    c.seed_start = l->cfg.seed_start + (uint64_t)(l->cfg.loop.generations + 1) * l->cfg.seed_count +
                   (uint64_t)(g - 1) * l->cfg.loop.gate_seeds;
    c.seed_count = l->cfg.loop.gate_seeds;
    side(l, &c.champion, str_of(l->st, SF_LOOP_KEY_CHAMPION));
    side(l, &c.candidate, str_of(l->st, SF_LOOP_KEY_CANDIDATE));
    snprintf(c.evald.endpoint, sizeof c.evald.endpoint, "%s", l->evald_ep);
    c.evald.spawn = 0;
    snprintf(path, cap, "%s/gen%d/gate.yaml", l->base, g);
    int rc = mkdirs(c.output_dir, err);
    return rc < 0 ? rc : write_config(&c, path, err);
}

/* ---------------------------------------------------------------------------
 * gpu-evald for the loop's networks
 * ------------------------------------------------------------------------- */

static int evald_up(loop *l, const char *sha, sf_err *err) {
    if (l->evald > 0 && waitpid(l->evald, NULL, WNOHANG) == 0)
        return SF_OK;
    char prog[4200], batch[16], wait[16], log[SF_CFG_PATH + 32];
    sibling(l->self, "gpu-evald", "gpu-evald", prog, sizeof prog);
    snprintf(batch, sizeof batch, "%u", l->cfg.evald.max_batch);
    snprintf(wait, sizeof wait, "%u", l->cfg.evald.max_wait_us);
    snprintf(log, sizeof log, "%s/logs/evald.log", l->base);
    char *args[] = {prog,
                    "--backend",
                    l->cfg.evald.backend,
                    "--bind",
                    l->evald_ep,
                    "--models",
                    l->models,
                    "--model-idle-s",
                    "600",
                    "--max-batch",
                    batch,
                    "--max-wait-us",
                    wait,
                    NULL,
                    NULL,
                    NULL};
    char keys[SF_CFG_PATH + 8];
    sf_config_keys_dir(&l->cfg, keys, sizeof keys);
    if (keys[0]) { /* the loop's keys: its runs' workers are let in */
        args[13] = "--keys";
        args[14] = keys;
    }
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        execvp(prog, args);
        _exit(127);
    }
    if (pid < 0)
        return sf_err_set(err, SF_EIO, "cannot start gpu-evald: %s", strerror(errno));
    l->evald = pid;
    /* answering with the model the next stage needs */
    sf_run_config q = l->cfg;
    snprintf(q.evald.endpoint, sizeof q.evald.endpoint, "%s", l->evald_ep);
    int rc = evald_wait_model(&q, sha, pid, 60, err);
    if (rc == SF_ECHILD) { /* it exited and was reaped */
        l->evald = 0;
        sf_err_prefix(err, "see %s", log);
    }
    return rc;
}

/* ---------------------------------------------------------------------------
 * Stages
 * ------------------------------------------------------------------------- */

static void stage_log(loop *l, const char *stage, int g, char *out, size_t cap) {
    snprintf(out, cap, "%s/logs/gen%d-%s.log", l->base, g, stage);
}

/* Labels in the sealed shards of a directory. */
static uint64_t count_labels(const char *dir) {
    DIR *d = opendir(dir);
    uint64_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 7 || strcmp(e->d_name + len - 6, ".shard"))
            continue;
        char path[SF_CFG_PATH + 300];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        sf_shard_reader *r = NULL;
        sf_err err = {0};
        if (sf_shard_reader_open(path, &r, &err) == SF_OK)
            n += sf_shard_reader_count(r);
        sf_shard_reader_close(r);
    }
    if (d)
        closedir(d);
    return n;
}

/* Stage `stage` ("selfplay" or "gate") of generation g: `sf-fleet run` on
 * its derived config `path` (its run directory gen<g>/<stage>, its log
 * logs/gen<g>-<stage>.log), said as `what`. *seconds receives its wall
 * time. SF_ESTATE when the run was stopped (exit 3), SF_ECHILD on a failure. */
static int run_fleet_stage(loop *l, int g, const char *stage, const char *path, const char *what,
                           double *seconds, sf_err *err) {
    char log[SF_CFG_PATH + 64], run_dir[SF_CFG_PATH + 32];
    stage_log(l, stage, g, log, sizeof log);
    snprintf(run_dir, sizeof run_dir, "%.150s/gen%d/%.8s", l->base, g, stage);
    wait_for_lock(l, run_dir);
    fprintf(stderr, "loop: generation %d: %s (log %s)\n", g, what, log);
    double t0 = now_s();
    char *args[] = {(char *)l->self, "run", (char *)path, NULL};
    int st = run_child(l, args, log, NULL);
    *seconds = now_s() - t0;
    if (st != 0)
        return st == 3 ? SF_ESTATE
                       : sf_err_set(err, SF_ECHILD, "generation %d: %s failed (exit %d); see %s", g,
                                    stage, st, log);
    return SF_OK;
}

static int stage_selfplay(loop *l, int g, sf_err *err) {
    char path[SF_CFG_PATH + 64], shards[SF_CFG_PATH + 64], what[128];
    int rc = selfplay_config(l, g, path, sizeof path, err);
    const char *champ = str_of(l->st, SF_LOOP_KEY_CHAMPION);
    if (rc == SF_OK && strcmp(champ, SF_LOOP_ROLLOUT))
        rc = evald_up(l, champ, err);
    if (rc < 0)
        return rc;
    snprintf(what, sizeof what, "self-play with %s%.12s",
             strcmp(champ, SF_LOOP_ROLLOUT) ? "network " : "", champ);
    double secs;
    rc = run_fleet_stage(l, g, SF_LOOP_STAGE_SELFPLAY, path, what, &secs, err);
    if (rc < 0)
        return rc;
    snprintf(shards, sizeof shards, "%s/gen%d/selfplay/shards", l->base, g);
    json_t *r = gen_rec(l, g);
    json_object_set_new(r, SF_LOOP_KEY_LABELS, json_integer((json_int_t)count_labels(shards)));
    json_object_set_new(r, SF_LOOP_KEY_SELFPLAY_MODEL, json_string(champ));
    json_object_set_new(r, SF_LOOP_KEY_SELFPLAY_SECONDS, json_real(secs));
    return SF_OK;
}

/* The last line of a file that parses as a JSON object. */
static json_t *last_json(const char *path) {
    FILE *f = fopen(path, "r");
    json_t *last = NULL;
    char line[1 << 16];
    while (f && fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        if (json_is_object(o)) {
            json_decref(last);
            last = o;
        } else {
            json_decref(o);
        }
    }
    if (f)
        fclose(f);
    return last;
}

static int stage_train(loop *l, int g, sf_err *err) {
    char cfg[SF_CFG_PATH + 64], log[SF_CFG_PATH + 64], ck[SF_CFG_PATH + 64], out[SF_CFG_PATH + 64];
    snprintf(cfg, sizeof cfg, "%s/gen%d/selfplay.yaml", l->base, g - 1);
    snprintf(ck, sizeof ck, "%s/gen%d/train", l->base, g);
    snprintf(out, sizeof out, "%s/gen%d/train.json", l->base, g);
    stage_log(l, SF_LOOP_STAGE_TRAIN, g, log, sizeof log);
    int rc = mkdirs(ck, err);
    if (rc < 0)
        return rc;
    /* the self-play generations so far, newest first */
    enum { MAXARG = 1100 };
    char(*dirs)[SF_CFG_PATH + 40] = calloc((size_t)g, sizeof *dirs);
    char *args[MAXARG];
    int k = 0;
    if (!dirs)
        return sf_err_set(err, SF_ENOMEM, "loop: out of memory");
    args[k++] = "/usr/bin/python3";
    args[k++] = "-m";
    args[k++] = "spirefleet.train";
    args[k++] = cfg;
    args[k++] = "--checkpoint";
    args[k++] = ck;
    args[k++] = "--parent-sha256";
    args[k++] = (char *)str_of(l->st, SF_LOOP_KEY_CHAMPION);
    args[k++] = "--shards";
    for (int h = g - 1; h >= 0 && k < MAXARG - 1; h--) {
        snprintf(dirs[h], sizeof dirs[h], "%s/gen%d/selfplay/shards", l->base, h);
        args[k++] = dirs[h];
    }
    args[k] = NULL;
    fprintf(stderr, "loop: generation %d: training on generations %d..0 (log %s)\n", g, g - 1, log);
    python_path(l->self);
    double t0 = now_s();
    int st = run_child(l, args, log, out);
    free(dirs);
    if (st != 0)
        return st == 3 ? SF_ESTATE
                       : sf_err_set(err, SF_ECHILD,
                                    "generation %d: training failed (exit %d); see %s", g, st, log);
    json_t *res = last_json(out);
    if (!res)
        return sf_err_set(err, SF_EFORMAT, "%s: the trainer printed no result", out);
    json_t *r = gen_rec(l, g);
    json_object_set_new(r, SF_LOOP_KEY_TRAIN, res);
    json_object_set_new(r, SF_LOOP_KEY_TRAIN_SECONDS, json_real(now_s() - t0));
    return SF_OK;
}

/* The most held-out decisions a candidate's sibling ranking reads: enough
 * for an agreement within about a point (thousands of pairs), a few
 * seconds of cpu. */
#define SIBLINGS_DECISIONS 2000

/* How the candidate of generation g ranks sibling moves (worker.h "Sibling
 * ranking"): on the self-play labels of generations g-1..0 of the games
 * the trainer held out (its val_seeds), against the search's completed-Q,
 * with the rollout's own agreement beside it. Recorded as the
 * generation's "siblings"; a failure is reported and recorded, never
 * fatal (the gate decides, this explains). */
static void measure_siblings(loop *l, int g, const char *bundle) {
    json_t *r = gen_rec(l, g);
    json_t *seeds_j =
        json_object_get(json_object_get(r, SF_LOOP_KEY_TRAIN), SF_TRAIN_RESULT_VAL_SEEDS);
    size_t n_seeds = json_array_size(seeds_j);
    uint64_t *seeds = calloc(n_seeds ? n_seeds : 1, sizeof *seeds);
    char(*dirs)[SF_CFG_PATH + 40] = calloc((size_t)g, sizeof *dirs);
    const char **paths = calloc((size_t)g, sizeof *paths);
    sf_err err = {0};
    json_t *out = NULL;
    int rc = seeds && dirs && paths ? SF_OK : sf_err_set(&err, SF_ENOMEM, "out of memory");
    for (size_t i = 0; rc == SF_OK && i < n_seeds; i++)
        seeds[i] = (uint64_t)json_integer_value(json_array_get(seeds_j, i));
    int k = 0;
    for (int h = g - 1; rc == SF_OK && h >= 0; h--) {
        snprintf(dirs[h], sizeof dirs[h], "%s/gen%d/selfplay/shards", l->base, h);
        paths[k++] = dirs[h];
    }
    if (rc == SF_OK && n_seeds == 0)
        rc = sf_err_set(&err, SF_ESTATE, "the trainer recorded no held-out games");
    if (rc == SF_OK) {
        sf_run_config c = l->cfg;
        c.model.sha256[0] = 0;
        rc = siblings_measure_json(&c, bundle, paths, (size_t)k, seeds, n_seeds, SIBLINGS_DECISIONS,
                                   &out, &err);
    }
    if (rc == SF_OK) {
        json_t *na = json_object_get(out, SF_SIBLINGS_KEY_NET_ACCURACY);
        json_t *ra = json_object_get(out, SF_SIBLINGS_KEY_ROLLOUT_ACCURACY);
        fprintf(stderr,
                "loop: generation %d: sibling ranking on %lld held-out decisions: network %.3f, "
                "rollout %.3f (pairwise agreement with completed-Q)\n",
                g, (long long)json_integer_value(json_object_get(out, SF_SIBLINGS_KEY_DECISIONS)),
                json_number_value(na), json_number_value(ra));
    } else {
        fprintf(stderr, "loop: generation %d: no sibling ranking: %s\n", g, err.msg);
        out = json_pack("{s:s}", SF_SIBLINGS_KEY_ERROR, err.msg);
    }
    json_object_set_new(r, SF_LOOP_KEY_SIBLINGS, out);
    free(seeds);
    free(dirs);
    free(paths);
}

static int stage_export(loop *l, int g, sf_err *err) {
    char log[SF_CFG_PATH + 64], out[SF_CFG_PATH + 64], tmp[SF_CFG_PATH + 64], digest[65];
    json_t *r = gen_rec(l, g);
    const char *ck = str_of(json_object_get(r, SF_LOOP_KEY_TRAIN), SF_TRAIN_RESULT_CHECKPOINT);
    if (!ck[0])
        return sf_err_set(err, SF_EFORMAT, "generation %d: no checkpoint recorded", g);
    stage_log(l, SF_LOOP_STAGE_EXPORT, g, log, sizeof log);
    snprintf(out, sizeof out, "%s/gen%d/export.json", l->base, g);
    snprintf(tmp, sizeof tmp, "%s/gen%d/candidate.safetensors", l->base, g);
    sf_config_digest(&l->cfg, digest);
    char *args[] = {"/usr/bin/python3",
                    "-m",
                    "spirefleet.export",
                    (char *)ck,
                    tmp,
                    "--parent-sha256",
                    (char *)str_of(l->st, SF_LOOP_KEY_CHAMPION),
                    "--config-digest",
                    digest,
                    NULL};
    python_path(l->self);
    double t0 = now_s();
    int st = run_child(l, args, log, out);
    if (st != 0)
        return st == 3 ? SF_ESTATE
                       : sf_err_set(err, SF_ECHILD,
                                    "generation %d: export failed (exit %d); see %s", g, st, log);
    json_t *res = last_json(out);
    const char *sha = str_of(res, SF_EXPORT_RESULT_SHA256);
    char canon[SF_SHA256_HEX_LEN + 1];
    if (!res || sf_sha256_hex_parse(sha, canon, err) < 0) {
        json_decref(res);
        return sf_err_set(err, SF_EFORMAT, "%s: the exporter printed no SHA-256", out);
    }
    json_decref(res);
    /* the registry holds bundles by SHA-256; the name is what gpu-evald
     * hot-loads (gpu-evald/evald.h) */
    char dst[SF_CFG_PATH + 100];
    model_path(l, canon, dst, sizeof dst);
    if (rename(tmp, dst) != 0 && access(dst, F_OK) != 0)
        return sf_err_set(err, SF_EIO, "%s: cannot move the bundle into the registry: %s", dst,
                          strerror(errno));
    if (sf_fsync_dir(l->models, err) < 0)
        return SF_EIO;
    json_object_set_new(l->st, SF_LOOP_KEY_CANDIDATE, json_string(canon));
    json_object_set_new(r, SF_LOOP_KEY_CANDIDATE, json_string(canon));
    json_object_set_new(r, SF_LOOP_KEY_EXPORT_SECONDS, json_real(now_s() - t0));
    measure_siblings(l, g, dst);
    fprintf(stderr, "loop: generation %d: candidate %.12s... in %s\n", g, canon, l->models);
    return SF_OK;
}

static int stage_gate(loop *l, int g, sf_err *err) {
    char path[SF_CFG_PATH + 64], what[128];
    int rc = gate_config(l, g, path, sizeof path, err);
    if (rc == SF_OK)
        rc = evald_up(l, str_of(l->st, SF_LOOP_KEY_CANDIDATE), err);
    if (rc < 0)
        return rc;
    snprintf(what, sizeof what, "gate %.12s... against %.12s", str_of(l->st, SF_LOOP_KEY_CANDIDATE),
             str_of(l->st, SF_LOOP_KEY_CHAMPION));
    double secs;
    rc = run_fleet_stage(l, g, SF_LOOP_STAGE_GATE, path, what, &secs, err);
    if (rc < 0)
        return rc;
    json_object_set_new(gen_rec(l, g), SF_LOOP_KEY_GATE_SECONDS, json_real(secs));
    return SF_OK;
}

/* The registry's champion pointer and history (docs/loop.md "Registry"),
 * both rewritten whole and durably from loop.json. */
static int write_registry(loop *l, sf_err *err) {
    char path[SF_CFG_PATH + 32];
    int rc = sf_registry_champion_write(l->models, str_of(l->st, SF_LOOP_KEY_CHAMPION), err);
    if (rc < 0)
        return rc;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(l->st, SF_LOOP_KEY_HISTORY), i, h) {
        char *s = json_dumps(h, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
        fprintf(m, "%s\n", s ? s : "{}");
        free(s);
    }
    fclose(m);
    snprintf(path, sizeof path, "%s/history.jsonl", l->models);
    rc = sf_write_file_durable(path, text ? text : "", len, err);
    free(text);
    return rc;
}

static int stage_decide(loop *l, int g, sf_err *err) {
    char path[SF_CFG_PATH + 64], rel[64];
    snprintf(rel, sizeof rel, "gen%d/gate/gate/verdict.json", g); /* below the run dir */
    snprintf(path, sizeof path, "%s/%s", l->base, rel);
    json_error_t je;
    json_t *v = json_load_file(path, 0, &je);
    if (!v)
        return sf_err_set(err, SF_EFORMAT, "%s: %s", path, je.text);
    const char *verdict = str_of(v, SF_GATE_VKEY_VERDICT);
    int decision = sf_gate_decision_lookup(verdict);
    if (decision != SF_GATE_PROMOTE && decision != SF_GATE_REJECT &&
        decision != SF_GATE_INCONCLUSIVE) {
        json_decref(v);
        return sf_err_set(err, SF_EFORMAT,
                          "%s: verdict \"%s\" is not a finished gate's decision (promote, "
                          "reject or inconclusive)",
                          path, verdict);
    }
    const char *cand = str_of(l->st, SF_LOOP_KEY_CANDIDATE);
    json_t *h = json_pack(
        "{s:i,s:s,s:s,s:s,s:O,s:O,s:O,s:O,s:s}", SF_LOOP_KEY_GENERATION, g, SF_LOOP_KEY_CANDIDATE,
        cand, SF_LOOP_KEY_CHAMPION, str_of(l->st, SF_LOOP_KEY_CHAMPION), SF_LOOP_KEY_VERDICT,
        verdict, SF_LOOP_KEY_PAIRS, json_object_get(v, SF_GATE_VKEY_PAIRS), SF_LOOP_KEY_LLR,
        json_object_get(v, SF_GATE_VKEY_LLR), SF_LOOP_KEY_SCORE_DIFF,
        json_object_get(v, SF_GATE_VKEY_SCORE_DIFF), SF_LOOP_KEY_WIN_RATE_DIFF,
        json_object_get(v, SF_GATE_VKEY_WIN_RATE_DIFF), SF_LOOP_KEY_GATE, rel);
    json_array_append_new(json_object_get(l->st, SF_LOOP_KEY_HISTORY), h);
    json_object_set(gen_rec(l, g), SF_LOOP_KEY_VERDICT, json_object_get(h, SF_LOOP_KEY_VERDICT));
    json_object_set(gen_rec(l, g), SF_LOOP_KEY_SCORE_DIFF,
                    json_object_get(v, SF_GATE_VKEY_SCORE_DIFF));
    fprintf(stderr, "loop: generation %d: %s after %lld pairs (score difference %+.4f)\n", g,
            verdict, (long long)json_integer_value(json_object_get(v, SF_GATE_VKEY_PAIRS)),
            json_real_value(json_object_get(v, SF_GATE_VKEY_SCORE_DIFF)));
    if (decision == SF_GATE_PROMOTE)
        json_object_set_new(l->st, SF_LOOP_KEY_CHAMPION, json_string(cand));
    json_decref(v);
    return write_registry(l, err);
}

/* The learning curve and every generation's gate report. */
static void reports(loop *l) {
    char log[SF_CFG_PATH + 64];
    snprintf(log, sizeof log, "%s/logs/report.log", l->base);
    char *args[] = {"/usr/bin/python3", "-m", "spirefleet.loop_report", l->base, NULL};
    python_path(l->self);
    if (run_child(l, args, log, NULL) == 0)
        fprintf(stderr,
                "loop: learning curve %s/learning.png; gate reports "
                "%s/gen*/gate/gate/report.html\n",
                l->base, l->base);
    else
        fprintf(stderr, "loop: the reports failed; see %s\n", log);
}

/* ---------------------------------------------------------------------------
 * The command
 * ------------------------------------------------------------------------- */

int cmd_loop(int argc, char **argv, const char *self, volatile sig_atomic_t *stop) {
    if (argc != 2) {
        fprintf(stderr, "usage: sf-fleet loop CONFIG   (docs/loop.md)\n");
        return 2;
    }
    loop l = {.self = self, .config_path = argv[1], .stop = stop};
    sf_err err = {0};
    if (sf_config_load(argv[1], &l.cfg, &err) < 0) {
        fprintf(stderr, "sf-fleet: %s\n", err.msg);
        return 2;
    }
    if (strcmp(l.cfg.kind, "loop")) {
        fprintf(stderr, "sf-fleet loop: %s: run.kind is %s; a loop needs run.kind: loop\n", argv[1],
                l.cfg.kind);
        return 2;
    }
    if (strlen(l.cfg.output_dir) > LOOP_BASE_MAX || strlen(l.cfg.output_dir) + 11 > 107) {
        fprintf(stderr,
                "sf-fleet loop: %s: run.output_dir '%s' is too long for a loop (its gpu-evald "
                "socket, <output_dir>/evald.sock, must fit 107 bytes)\n",
                argv[1], l.cfg.output_dir);
        return 2;
    }
    snprintf(l.base, sizeof l.base, "%s", l.cfg.output_dir);
    snprintf(l.models, sizeof l.models, "%s/models", l.base);
    snprintf(l.evald_ep, sizeof l.evald_ep, "ipc://%.96s/evald.sock", l.base);
    char logs[SF_CFG_PATH + 8];
    snprintf(logs, sizeof logs, "%s/logs", l.base);
    int rc = mkdirs(l.models, &err);
    if (rc == SF_OK)
        rc = mkdirs(logs, &err);
    /* one key directory for the loop's gpu-evald and every run it derives
     * (an execution key: the runs' digests do not change) */
    if (rc == SF_OK && !strcmp(l.cfg.security.mode, "curve") && !l.cfg.security.keys[0]) {
        snprintf(l.cfg.security.keys, sizeof l.cfg.security.keys, "%.200s/keys", l.base);
        rc = sf_zsec_ensure_dir(l.cfg.security.keys, &err);
    }
    if (rc == SF_OK)
        rc = load_state(&l, &err);
    int G = (int)l.cfg.loop.generations;
    while (rc == SF_OK && strcmp(str_of(l.st, SF_LOOP_KEY_STAGE), SF_LOOP_STAGE_DONE)) {
        int g = gen_of(&l);
        const char *stage = str_of(l.st, SF_LOOP_KEY_STAGE);
        const char *next = SF_LOOP_STAGE_DONE;
        if (!strcmp(stage, SF_LOOP_STAGE_SELFPLAY)) {
            rc = stage_selfplay(&l, g, &err);
            json_object_set_new(l.st, SF_LOOP_KEY_GENERATION, json_integer(g + 1));
            next = SF_LOOP_STAGE_TRAIN;
        } else if (!strcmp(stage, SF_LOOP_STAGE_TRAIN)) {
            rc = stage_train(&l, g, &err);
            next = SF_LOOP_STAGE_EXPORT;
        } else if (!strcmp(stage, SF_LOOP_STAGE_EXPORT)) {
            rc = stage_export(&l, g, &err);
            next = SF_LOOP_STAGE_GATE;
        } else if (!strcmp(stage, SF_LOOP_STAGE_GATE)) {
            rc = stage_gate(&l, g, &err);
            next = SF_LOOP_STAGE_DECIDE;
        } else if (!strcmp(stage, SF_LOOP_STAGE_DECIDE)) {
            rc = stage_decide(&l, g, &err);
            next = g < G ? SF_LOOP_STAGE_SELFPLAY : SF_LOOP_STAGE_DONE;
        } else {
            rc = sf_err_set(&err, SF_EFORMAT, "%s/loop.json: unknown stage '%s'", l.base, stage);
        }
        if (rc == SF_OK) {
            set_stage(&l, next);
            rc = save_state(&l, &err);
        } else if (!strcmp(stage, SF_LOOP_STAGE_SELFPLAY)) {
            json_object_set_new(l.st, SF_LOOP_KEY_GENERATION,
                                json_integer(g)); /* not done: again */
        }
    }
    int code = 0;
    if (rc == SF_OK) {
        reports(&l);
        fprintf(stderr, "loop: %s done: %d generations, champion %s\n", l.cfg.name, G,
                str_of(l.st, SF_LOOP_KEY_CHAMPION));
    } else if (rc == SF_ESTATE && *stop) {
        fprintf(stderr,
                "loop: stopped in generation %d, stage %s; run `sf-fleet loop %s` again "
                "to resume\n",
                gen_of(&l), str_of(l.st, SF_LOOP_KEY_STAGE), argv[1]);
        code = 3;
    } else {
        fprintf(stderr, "sf-fleet loop: %s\n", err.msg);
        code = rc == SF_ECONFIG ? 2 : 1;
    }
    if (l.evald > 0) {
        kill(l.evald, SIGTERM);
        waitpid(l.evald, NULL, 0);
    }
    json_decref(l.st);
    return code;
}

int loop_status(const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/loop.json", dir);
    json_error_t je;
    json_t *st = json_load_file(path, 0, &je);
    if (!st) {
        fprintf(stderr, "sf-fleet status: %s: %s (a loop's run directory holds loop.json)\n", path,
                je.text);
        return 1;
    }
    printf("loop %s: generation %lld, stage %s, champion %s\n", str_of(st, SF_LOOP_KEY_RUN),
           (long long)json_integer_value(json_object_get(st, SF_LOOP_KEY_GENERATION)),
           str_of(st, SF_LOOP_KEY_STAGE), str_of(st, SF_LOOP_KEY_CHAMPION));
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(st, SF_LOOP_KEY_GENERATIONS), i, r) {
        if (json_object_get(r, SF_LOOP_KEY_LABELS))
            printf("  gen %zu: labels %lld", i,
                   (long long)json_integer_value(json_object_get(r, SF_LOOP_KEY_LABELS)));
        else if (!strcmp(str_of(st, SF_LOOP_KEY_STAGE), SF_LOOP_STAGE_DONE))
            printf("  gen %zu: (no self-play after the last gate)", i);
        else
            printf("  gen %zu: (no self-play yet)", i);
        json_t *val = json_object_get(json_object_get(r, SF_LOOP_KEY_TRAIN), SF_TRAIN_RESULT_VAL);
        if (val)
            printf("%s val value %.3f policy %.3f",
                   json_object_get(r, SF_LOOP_KEY_LABELS) ? "," : "",
                   json_number_value(json_object_get(val, "value")),
                   json_number_value(json_object_get(val, "policy")));
        json_t *sib = json_object_get(r, SF_LOOP_KEY_SIBLINGS);
        if (json_is_real(json_object_get(sib, SF_SIBLINGS_KEY_NET_ACCURACY)))
            printf(", siblings %.3f (rollout %.3f)",
                   json_number_value(json_object_get(sib, SF_SIBLINGS_KEY_NET_ACCURACY)),
                   json_number_value(json_object_get(sib, SF_SIBLINGS_KEY_ROLLOUT_ACCURACY)));
        if (json_object_get(r, SF_LOOP_KEY_VERDICT))
            printf(", gate %s (score difference %+.4f)", str_of(r, SF_LOOP_KEY_VERDICT),
                   json_number_value(json_object_get(r, SF_LOOP_KEY_SCORE_DIFF)));
        printf("\n");
    }
    json_decref(st);
    return 0;
}
