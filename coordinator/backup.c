/*
 * backup.c — a run's backup and its restore (coordinator.h
 * sf_coordinator_backup / sf_coordinator_restore, docs/operator.md
 * "Backups").
 *
 * How it lives beside a serving coordinator: the coordinator holds an
 * flock on <output_dir>/coordinator.lock (open.c) and LMDB's own lock file,
 * ledger.lmdb-lock, which holds the reader table. The backup never touches
 * coordinator.lock; it opens the ledger read-only *with* LMDB's locking, so
 * its read transaction takes a slot in that reader table like any reader
 * of the coordinator's own. LMDB's writer then never reuses a page the
 * copy still reads, and the copy (mdb_env_copyfd2 with MDB_CP_COMPACT, one
 * read transaction) is the ledger as of one commit, while the coordinator
 * goes on committing: a reader never blocks LMDB's writer. Asking the
 * coordinator to copy over its operator socket would have put a walk of
 * the whole B-tree (seconds, for millions of jobs) inside its step loop,
 * which serves every lease; a separate process costs the loop nothing but
 * the pages the copy keeps alive.
 *
 * A damaged ledger is an error naming it, not a crash: the copy runs in a
 * forked child (LMDB trusts its pages; an assertion or a bus error ends
 * the child, and the parent names the file and the signal), and every
 * record's checksum is checked on the copy. ledger.c's probe is not used
 * for this: it reads with MDB_NOLOCK, safe only while nothing writes (the
 * coordinator runs it under its lock); under a serving coordinator such a
 * reader can follow a page the writer has just reused (seen as an LMDB
 * assertion in mdb_cursor_sibling under bench-backup's load).
 *
 * The shard manifest is read from the copy, not the live ledger, so the
 * manifest and the ledger in DEST say the same. A job the copy calls done
 * has its shard in shards/ already (the coordinator syncs the shard before
 * the commit that marks it done), so --with-shards finds every one, unless
 * a quarantine moved it aside after the copy was taken: the backup then
 * fails naming the shard, and a second one succeeds. Shards are sealed and
 * never rewritten, so a hard link is as good as a copy.
 *
 * DEST's files: ledger.lmdb (the compacted copy), config.yaml (the run's
 * config as the ledger holds it), keys/ (a copy of <output_dir>/keys, when
 * the run has one), shards/ (with shards) and shards.manifest, written
 * last: a directory without it is no complete backup, and restore refuses
 * it.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/io.h"
#include "coordinator/internal.h"

#define BACKUP_MANIFEST "shards.manifest"
#define BACKUP_CONFIG   "config.yaml"
/* Tries of the copy when the coordinator grew its map meanwhile
 * (MDB_MAP_RESIZED: the copy adopts the new size and starts again). */
#define BACKUP_COPY_TRIES 8

/* ---- files ------------------------------------------------------------------ */

/* A backup or a restore writes only into a directory that is new or
 * empty: SF_OK (made), or SF_EINVAL naming it. */
static int fresh_dir(const char *dir, sf_err *err) {
    struct stat st;
    if (lstat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return sf_err_set(err, SF_EINVAL, "%s: exists and is not a directory", dir);
        DIR *d = opendir(dir);
        if (!d)
            return sf_err_set(err, SF_EIO, "%s: cannot read: %s", dir, strerror(errno));
        struct dirent *e;
        int empty = 1;
        while (empty && (e = readdir(d)))
            empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        closedir(d);
        if (!empty)
            return sf_err_set(err, SF_EINVAL,
                              "%s: exists and is not empty (give a new or empty directory)", dir);
        return SF_OK;
    }
    if (sf_mkdir_p(dir) < 0)
        return sf_err_set(err, SF_EIO, "%s: cannot create: %s", dir, strerror(errno));
    return SF_OK;
}

/* Copy the regular file `from` to the new file `to` (mode `mode`), synced. */
static int copy_file(const char *from, const char *to, mode_t mode, sf_err *err) {
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return sf_err_set(err, SF_EIO, "%s: cannot open: %s", from, strerror(errno));
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (out < 0) {
        close(in);
        return sf_err_set(err, SF_EIO, "%s: cannot create: %s", to, strerror(errno));
    }
    static char buf[1 << 16];
    int rc = SF_OK;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = sf_err_set(err, SF_EIO, "%s: cannot read: %s", from, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        if (sf_write_full(out, buf, (size_t)n) < 0) {
            rc = sf_err_set(err, SF_EIO, "%s: cannot write: %s", to, strerror(errno));
            break;
        }
    }
    if (rc == SF_OK && fsync(out) != 0)
        rc = sf_err_set(err, SF_EIO, "%s: cannot sync: %s", to, strerror(errno));
    close(in);
    close(out);
    return rc;
}

/* A hard link where `from` and `to` share a filesystem, else a copy. *linked
 * counts the links, *copied the copies. */
static int link_or_copy(const char *from, const char *to, mode_t mode, uint64_t *linked,
                        uint64_t *copied, sf_err *err) {
    if (link(from, to) == 0) {
        (*linked)++;
        return SF_OK;
    }
    if (errno != EXDEV && errno != EPERM && errno != EMLINK)
        return sf_err_set(err, SF_EIO, "%s: cannot link to %s: %s", from, to, strerror(errno));
    (*copied)++;
    return copy_file(from, to, mode, err);
}

/* Copy the tree `from` (directories and regular files, modes kept) into the
 * new directory `to`; files are hard-linked when `link_files`. */
static int copy_tree(const char *from, const char *to, int link_files, uint64_t *linked,
                     uint64_t *copied, sf_err *err) {
    struct stat st;
    if (stat(from, &st) != 0)
        return sf_err_set(err, SF_EIO, "%s: %s", from, strerror(errno));
    if (mkdir(to, st.st_mode & 07777) != 0)
        return sf_err_set(err, SF_EIO, "%s: cannot create: %s", to, strerror(errno));
    DIR *d = opendir(from);
    if (!d)
        return sf_err_set(err, SF_EIO, "%s: cannot read: %s", from, strerror(errno));
    int rc = SF_OK;
    struct dirent *e;
    while (rc == SF_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char a[1400], b[1400];
        snprintf(a, sizeof a, "%s/%s", from, e->d_name);
        snprintf(b, sizeof b, "%s/%s", to, e->d_name);
        if (lstat(a, &st) != 0)
            rc = sf_err_set(err, SF_EIO, "%s: %s", a, strerror(errno));
        else if (S_ISDIR(st.st_mode))
            rc = copy_tree(a, b, link_files, linked, copied, err);
        else if (S_ISREG(st.st_mode) && link_files)
            rc = link_or_copy(a, b, st.st_mode & 07777, linked, copied, err);
        else if (S_ISREG(st.st_mode) && (rc = copy_file(a, b, st.st_mode & 07777, err)) == SF_OK)
            (*copied)++;
    }
    closedir(d);
    return rc == SF_OK ? sf_fsync_dir(to, err) : rc;
}

/* ---- the ledger copy -------------------------------------------------------- */

/* The consistent, compacted copy of the live ledger `src` into the new file
 * `dst` (see the top: read-only, with LMDB's reader table). */
static int copy_ledger(const char *src, const char *dst, uint64_t *bytes, sf_err *err) {
    MDB_env *env;
    int rc = mdb_env_create(&env);
    if (rc)
        return sf_err_set(err, SF_EIO, "%s: mdb_env_create: %s", src, mdb_strerror(rc));
    mdb_env_set_maxdbs(env, 4);
    rc = mdb_env_open(env, src, MDB_NOSUBDIR | MDB_RDONLY, 0644);
    if (rc) {
        mdb_env_close(env);
        return sf_err_set(err, SF_EIO, "%s: open read-only: %s", src, mdb_strerror(rc));
    }
    /* a backup killed mid-copy leaves its reader slot, which would keep the
     * coordinator's old pages alive: clear the slots of dead processes */
    int dead = 0;
    mdb_reader_check(env, &dead);
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        mdb_env_close(env);
        return sf_err_set(err, SF_EIO, "%s: cannot create: %s", dst, strerror(errno));
    }
    for (int t = 0; t < BACKUP_COPY_TRIES; t++) {
        if (ftruncate(out, 0) != 0 || lseek(out, 0, SEEK_SET) != 0) {
            rc = errno;
            break;
        }
        rc = mdb_env_copyfd2(env, out, MDB_CP_COMPACT);
        if (rc != MDB_MAP_RESIZED)
            break;
        mdb_env_set_mapsize(env, 0); /* the coordinator grew its map: adopt its size */
    }
    mdb_env_close(env);
    struct stat st;
    if (!rc && fsync(out) != 0)
        rc = errno;
    if (!rc && fstat(out, &st) == 0)
        *bytes = (uint64_t)st.st_size;
    close(out);
    if (rc)
        return sf_err_set(err, SF_EIO, "%s: copying it to %s: %s", src, dst, mdb_strerror(rc));
    return SF_OK;
}

/* copy_ledger() in a forked child: LMDB trusts its file's page structure,
 * so a damaged ledger that would crash it (an assertion, a wild pointer)
 * is an error naming the file, as at the coordinator's open (ledger.c).
 * Not ledger.c's probe itself: that reads without LMDB's locks, safe only
 * while no coordinator writes. */
static int copy_ledger_checked(const char *src, const char *dst, uint64_t *bytes, sf_err *err) {
    int p[2];
    if (pipe(p) != 0)
        return sf_err_set(err, SF_EIO, "%s: pipe: %s", src, strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return sf_err_set(err, SF_EIO, "%s: fork: %s", src, strerror(errno));
    }
    if (pid == 0) {
        static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
        for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
            signal(faults[i], SIG_DFL);
        close(p[0]);
        sf_err e = {0};
        int rc = copy_ledger(src, dst, bytes, &e);
        sf_write_full(p[1], &rc, sizeof rc);
        sf_write_full(p[1], rc < 0 ? (const void *)&e : (const void *)bytes,
                      rc < 0 ? sizeof e : sizeof *bytes);
        _exit(0);
    }
    close(p[1]);
    int rc = SF_ECORRUPT, status = 0;
    size_t got = 0, want = 0;
    sf_read_full(p[0], &rc, sizeof rc, &got);
    if (got == sizeof rc)
        sf_read_full(p[0], rc < 0 ? (void *)err : (void *)bytes,
                     want = rc < 0 ? sizeof *err : sizeof *bytes, &got);
    close(p[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(status))
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: the ledger is damaged: copying it crashed LMDB (signal %d, %s)", src,
                          WTERMSIG(status), strsignal(WTERMSIG(status)));
    if (!want || got != want)
        return sf_err_set(err, SF_ECORRUPT, "%s: the ledger is damaged: copying it failed", src);
    return rc < 0 ? rc : SF_OK;
}

/* Read the ledger copy at co->ledger_path (ours alone: no lock; its
 * problems are the ledger's it was copied from, `origin`'s): its config
 * into co->cfg and its digest into rep; with `manifest`, one line per done
 * job into it ("JOB SHARD CONTENT_DIGEST BYTES FILE_SHA256"), and with
 * `shards_from`, each of those shards linked or copied into `shards_to`. */
static int read_copy(sf_coordinator *co, const char *origin, FILE *manifest,
                     const char *shards_from, const char *shards_to, sf_run_backup *rep,
                     sf_err *err) {
    int rc = ledger_env_open(co, MDB_RDONLY | MDB_NOLOCK, err);
    if (rc == 0)
        rc = sf_err_set(err, SF_ENOTFOUND, "%s: no run was ever recorded in this ledger", origin);
    MDB_txn *txn = NULL;
    if (rc > 0 && (rc = mdb_txn_begin(co->env, NULL, MDB_RDONLY, &txn)) != 0)
        rc = sf_err_set(err, SF_EIO, "%s: begin read: %s", co->ledger_path, mdb_strerror(rc));
    MDB_val v;
    int got = rc < 0 ? -1 : ledger_get_meta(co, txn, "config", &v, err);
    Spirefleet__RunConfig *m =
        got == 0 ? spirefleet__run_config__unpack(NULL, v.mv_size, v.mv_data) : NULL;
    if (got == 1)
        rc = sf_err_set(err, SF_ECORRUPT, "%s: the ledger is damaged: it holds no config", origin);
    else if (got == 0 && !m)
        rc = sf_err_set(err, SF_ECORRUPT, "%s: the ledger is damaged: its config does not decode",
                        origin);
    else if (got == 0 && (rc = sf_config_from_proto(m, &co->cfg, err)) < 0)
        sf_err_prefix(err, "%s: the run's config", origin);
    else if (got < 0 && rc >= 0)
        rc = err->code;
    if (m)
        spirefleet__run_config__free_unpacked(m, NULL);
    if (rc >= 0) {
        snprintf(rep->run, sizeof rep->run, "%s", co->cfg.name);
        rep->jobs_total = (co->cfg.seed_count + co->cfg.job_size - 1) / co->cfg.job_size;
        got = ledger_get_meta(co, txn, "digest", &v, err);
        if (got == 0 && v.mv_size == 64)
            memcpy(rep->digest, v.mv_data, 64);
        rc = got < 0 ? err->code : SF_OK;
    }
    MDB_cursor *cur = NULL;
    if (rc >= 0 && manifest && (rc = mdb_cursor_open(txn, co->dbi_jobs, &cur)) != 0)
        rc = sf_err_set(err, SF_EIO, "%s: %s", co->ledger_path, mdb_strerror(rc));
    MDB_val key, val;
    for (int op = MDB_FIRST; cur && rc >= 0; op = MDB_NEXT) {
        int g = mdb_cursor_get(cur, &key, &val, (MDB_cursor_op)op);
        if (g == MDB_NOTFOUND)
            break;
        Spirefleet__LedgerJob *j = NULL;
        if (g || ledger_check_tagged('j', &key, &val) < 0 ||
            !(j = spirefleet__ledger_job__unpack(NULL, val.mv_size, val.mv_data))) {
            rc = sf_err_set(err, SF_ECORRUPT,
                            "%s: the ledger is damaged: a job record does not %s (found in its "
                            "copy %s)",
                            origin, g ? mdb_strerror(g) : "check or decode", co->ledger_path);
            break;
        }
        if (j->state == SPIREFLEET__JOB_STATE__JOB_DONE) {
            rep->jobs_done++;
            fprintf(manifest, "%llu %s %s %llu %s\n", (unsigned long long)j->job_id, j->shard_name,
                    j->content_digest, (unsigned long long)j->bytes, j->file_sha256);
            if (shards_from) {
                char a[1200], b[1200];
                snprintf(a, sizeof a, "%s/%s", shards_from, j->shard_name);
                snprintf(b, sizeof b, "%s/%s", shards_to, j->shard_name);
                rc = link_or_copy(a, b, 0644, &rep->shards_linked, &rep->shards_copied, err);
            }
        }
        spirefleet__ledger_job__free_unpacked(j, NULL);
    }
    if (cur)
        mdb_cursor_close(cur);
    if (txn)
        mdb_txn_abort(txn);
    if (co->env) {
        mdb_env_close(co->env);
        co->env = NULL;
    }
    return rc < 0 ? rc : SF_OK;
}

/* co->cfg as YAML in `path`, its output_dir replaced by `output_dir` when
 * given; synced. */
static int write_config(sf_coordinator *co, const char *path, const char *output_dir, sf_err *err) {
    if (output_dir)
        snprintf(co->cfg.output_dir, sizeof co->cfg.output_dir, "%s", output_dir);
    FILE *f = fopen(path, "wx");
    if (!f)
        return sf_err_set(err, SF_EIO, "%s: cannot create: %s", path, strerror(errno));
    sf_config_print(&co->cfg, f);
    int rc = sf_fflush_sync(f);
    if (fclose(f) != 0 || rc < 0)
        return sf_err_set(err, SF_EIO, "%s: cannot write: %s", path, strerror(errno));
    return SF_OK;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    if (ftw->level > 0)
        remove(path);
    return 0;
}

/* Remove what a failed backup or restore wrote into `dir` (new or empty
 * before: everything in it is theirs), and `dir` too when it made it. */
static void empty_dir(const char *dir, int made) {
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    if (made)
        rmdir(dir);
}

/* ---- backup and restore ----------------------------------------------------- */

int sf_coordinator_backup(const char *output_dir, const char *dest, int with_shards,
                          sf_run_backup *rep, sf_err *err) {
    memset(rep, 0, sizeof *rep);
    char src[400];
    snprintf(src, sizeof src, "%s/ledger.lmdb", output_dir);
    struct stat st;
    if (stat(src, &st) != 0 || st.st_size == 0)
        return sf_err_set(err, SF_ENOTFOUND, "%s: no ledger: no run was started in %s", src,
                          output_dir);
    if (!S_ISREG(st.st_mode))
        return sf_err_set(err, SF_EFORMAT, "%s: not a regular file", src);
    int made = access(dest, F_OK) != 0;
    int rc = fresh_dir(dest, err);
    if (rc < 0)
        return rc;
    sf_coordinator *co = calloc(1, sizeof *co);
    char *text = NULL;
    size_t len = 0;
    FILE *manifest = open_memstream(&text, &len);
    if (!co || !manifest) {
        free(co);
        if (manifest)
            fclose(manifest);
        free(text);
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    }
    char shards_from[400], shards_to[1100], path[1100];
    snprintf(co->ledger_path, sizeof co->ledger_path, "%s/ledger.lmdb", dest);
    rc = copy_ledger_checked(src, co->ledger_path, &rep->ledger_bytes, err);
    snprintf(shards_from, sizeof shards_from, "%s/shards", output_dir);
    snprintf(shards_to, sizeof shards_to, "%s/shards", dest);
    if (rc == SF_OK && with_shards && mkdir(shards_to, 0755) != 0)
        rc = sf_err_set(err, SF_EIO, "%s: cannot create: %s", shards_to, strerror(errno));
    if (rc == SF_OK)
        rc = read_copy(co, src, manifest, with_shards ? shards_from : NULL, shards_to, rep, err);
    if (rc == SF_OK && with_shards)
        rc = sf_fsync_dir(shards_to, err);
    char keys[400];
    snprintf(keys, sizeof keys, "%s/keys", output_dir);
    snprintf(path, sizeof path, "%s/keys", dest);
    if (rc == SF_OK && stat(keys, &st) == 0 && S_ISDIR(st.st_mode)) {
        uint64_t l = 0, c = 0;
        rc = copy_tree(keys, path, 0, &l, &c, err);
        rep->keys = 1;
    }
    snprintf(path, sizeof path, "%s/%s", dest, BACKUP_CONFIG);
    if (rc == SF_OK)
        rc = write_config(co, path, NULL, err);
    fclose(manifest);
    if (rc == SF_OK) {
        /* last: its presence says the backup is whole */
        char head[300];
        int hl = snprintf(head, sizeof head,
                          "# spirefleet backup of run %s, config digest %s: %llu of %llu jobs "
                          "done\n# job shard content_digest bytes file_sha256\n",
                          rep->run, rep->digest, (unsigned long long)rep->jobs_done,
                          (unsigned long long)rep->jobs_total);
        char *all = malloc((size_t)hl + len + 1);
        snprintf(path, sizeof path, "%s/%s", dest, BACKUP_MANIFEST);
        if (!all)
            rc = sf_err_set(err, SF_ENOMEM, "out of memory");
        else {
            memcpy(all, head, (size_t)hl);
            memcpy(all + hl, text, len);
            rc = sf_write_file_durable(path, all, (size_t)hl + len, err);
            free(all);
        }
    }
    if (rc == SF_OK)
        rc = sf_fsync_dir(dest, err);
    if (rc < 0) /* what it wrote goes: DEST was new or empty */
        empty_dir(dest, made);
    free(text);
    free(co);
    return rc;
}

int sf_coordinator_restore(const char *backup_dir, const char *output_dir, sf_run_backup *rep,
                           sf_err *err) {
    memset(rep, 0, sizeof *rep);
    char path[1100], to[1100];
    snprintf(path, sizeof path, "%s/%s", backup_dir, BACKUP_MANIFEST);
    if (access(path, R_OK) != 0)
        return sf_err_set(err, SF_ENOTFOUND,
                          "%s: %s: not a complete backup (sf-fleet backup writes it last)", path,
                          strerror(errno));
    int made = access(output_dir, F_OK) != 0;
    int rc = fresh_dir(output_dir, err);
    if (rc < 0)
        return rc;
    sf_coordinator *co = calloc(1, sizeof *co);
    if (!co)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    snprintf(path, sizeof path, "%s/ledger.lmdb", backup_dir);
    snprintf(co->ledger_path, sizeof co->ledger_path, "%s/ledger.lmdb", output_dir);
    rc = copy_file(path, co->ledger_path, 0644, err);
    if (rc == SF_OK)
        rc = read_copy(co, path, NULL, NULL, NULL, rep, err);
    struct stat st;
    const char *trees[] = {"keys", "shards"};
    for (int i = 0; i < 2 && rc == SF_OK; i++) {
        snprintf(path, sizeof path, "%s/%s", backup_dir, trees[i]);
        snprintf(to, sizeof to, "%s/%s", output_dir, trees[i]);
        uint64_t linked = 0, copied = 0;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            rc = copy_tree(path, to, i == 1, &linked, &copied, err);
        if (i == 0)
            rep->keys = linked + copied > 0;
        else {
            rep->shards_linked = linked;
            rep->shards_copied = copied;
        }
    }
    snprintf(path, sizeof path, "%s/%s", output_dir, BACKUP_CONFIG);
    if (rc == SF_OK)
        rc = write_config(co, path, output_dir, err);
    if (rc == SF_OK)
        rc = sf_fsync_dir(output_dir, err);
    if (rc < 0)
        empty_dir(output_dir, made);
    free(co);
    return rc;
}
