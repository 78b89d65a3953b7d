/*
 * ledger.c — the coordinator's durable job ledger in one LMDB file.
 *
 * Databases: `meta` ("format" = LEDGER_FORMAT, "config" = packed
 * RunConfig, "digest" = hex config digest, "jobs" = job count as u64
 * little-endian, "created" = the job records written so far, u64
 * little-endian) and `jobs` (key = job id, u64 big-endian; value = packed
 * LedgerJob). A new run's jobs are written in chunks (ledger_create_jobs),
 * each transaction adding its jobs and moving "created", so a coordinator
 * killed or stopped while creating leaves jobs 1..created and goes on from
 * there. A ledger without "created" (written before chunks) holds every
 * job. Every stored value ends in a 16-byte BLAKE2b tag of the
 * database's name, the key and the value (record_tag), checked at load —
 * every record of both databases, "config" too, which nothing else reads —
 * so a flipped bit in a record, or a record moved under another key, is an
 * error naming the ledger and the record, not a done job with a wrong
 * digest.
 *
 * LMDB trusts its file's page structure: a truncated file or a damaged
 * B-tree page can make it read past the map or follow a wild pointer. So
 * an existing ledger is first read by a forked child (probe_ledger) running
 * the same open and load; only when that child finishes cleanly does the
 * coordinator read the file itself. A ledger is given room for its run
 * (ledger_reserve_bytes) with posix_fallocate when it is opened: for a new
 * one a full filesystem is then an error at the start ("No space left on
 * device"), never a mapped page that cannot be backed (SIGBUS), and the
 * commits of a run whose disk fills later land in space already held.
 *
 * The environment is opened with MDB_NOSYNC: commits reach the page cache
 * at once (so a killed process loses nothing) and ledger_commit() forces an
 * fsync whenever a job became done, before anyone is told.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/io.h"
#include "coordinator/internal.h"
#include "shard/shard.h"

#define LEDGER_FORMAT "spirefleet-ledger-2"
#define LEDGER_TAG    16 /* bytes of BLAKE2b at the end of every value */
/* Space a ledger claims up front: LEDGER_RESERVE for the meta pages and
 * the first transactions, and LEDGER_BYTES_PER_JOB per job (a record is
 * about 200 bytes with its tag; LMDB's copy-on-write pages about double
 * that). It grows past this as LMDB needs, like any file. */
#define LEDGER_RESERVE       (1u << 20)
#define LEDGER_BYTES_PER_JOB 512u
/* The probe child's time limit (unless co->probe_seconds): a damaged
 * ledger that makes LMDB loop is as damaged as one that makes it crash;
 * reading a sound one of a million jobs takes a second or two. */
#define PROBE_SECONDS 30
/* ... and a second more per this many jobs: a sound ledger of 3 million
 * jobs takes about 9 s to read on an idle core, several times that on a
 * busy one */
#define PROBE_JOBS_PER_EXTRA_SECOND 50000u

static int mdb_fail(sf_err *err, const char *path, const char *what, int rc) {
    return sf_err_set(err, SF_EIO, "%s: %s: %s", path, what, mdb_strerror(rc));
}

static void be64(uint64_t v, uint8_t out[8]) {
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (uint8_t)v;
}

void ledger_record_tag(char db, const void *key, size_t klen, const void *val, size_t vlen,
                       uint8_t tag[16]) {
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, LEDGER_TAG);
    crypto_generichash_update(&st, (const uint8_t *)&db, 1);
    uint8_t kl[8];
    be64(klen, kl);
    crypto_generichash_update(&st, kl, 8);
    crypto_generichash_update(&st, key, klen);
    crypto_generichash_update(&st, val, vlen);
    crypto_generichash_final(&st, tag, LEDGER_TAG);
}

/* Put `len` bytes of `data` under `k` with their tag. */
static int put_tagged(MDB_txn *txn, MDB_dbi dbi, char db, MDB_val *k, const void *data,
                      size_t len) {
    uint8_t small[1024];
    uint8_t *buf = len + LEDGER_TAG <= sizeof small ? small : malloc(len + LEDGER_TAG);
    if (!buf)
        return ENOMEM;
    memcpy(buf, data, len);
    ledger_record_tag(db, k->mv_data, k->mv_size, data, len, buf + len);
    MDB_val v = {len + LEDGER_TAG, buf};
    int rc = mdb_put(txn, dbi, k, &v, 0);
    if (buf != small)
        free(buf);
    return rc;
}

/* The value under `k` without its tag, or -1 when the tag does not match
 * (or the value is too short to have one). */
static int check_tagged(char db, const MDB_val *k, MDB_val *v) {
    if (v->mv_size < LEDGER_TAG)
        return -1;
    size_t n = v->mv_size - LEDGER_TAG;
    uint8_t tag[LEDGER_TAG];
    ledger_record_tag(db, k->mv_data, k->mv_size, v->mv_data, n, tag);
    if (sodium_memcmp(tag, (const uint8_t *)v->mv_data + n, LEDGER_TAG))
        return -1;
    v->mv_size = n;
    return 0;
}

/* Create the environment and open the file with `flags` (MDB_RDONLY for
 * the probe); the databases are created unless read-only. */
static int env_open(sf_coordinator *co, unsigned flags, sf_err *err) {
    int rc = mdb_env_create(&co->env);
    if (rc)
        return mdb_fail(err, co->ledger_path, "mdb_env_create", rc);
    co->map_size = 64u << 20;
    mdb_env_set_mapsize(co->env, co->map_size);
    mdb_env_set_maxdbs(co->env, 4);
    rc = mdb_env_open(co->env, co->ledger_path, MDB_NOSUBDIR | MDB_NOSYNC | flags, 0644);
    if (rc) {
        mdb_env_close(co->env);
        co->env = NULL;
        return mdb_fail(err, co->ledger_path, "open", rc);
    }
    /* an existing ledger may be larger than our initial map */
    MDB_envinfo info;
    mdb_env_info(co->env, &info);
    if (info.me_mapsize > co->map_size)
        co->map_size = info.me_mapsize;
    int ro = (flags & MDB_RDONLY) != 0;
    MDB_txn *txn;
    rc = mdb_txn_begin(co->env, NULL, ro ? MDB_RDONLY : 0, &txn);
    if (rc)
        return mdb_fail(err, co->ledger_path, "begin", rc);
    rc = mdb_dbi_open(txn, "meta", ro ? 0 : MDB_CREATE, &co->dbi_meta);
    if (!rc)
        rc = mdb_dbi_open(txn, "jobs", ro ? 0 : MDB_CREATE, &co->dbi_jobs);
    if (rc == MDB_NOTFOUND && ro) {
        /* opened but never written (a new ledger) when the main database is
         * empty; otherwise its names are damaged */
        MDB_stat ms;
        int empty = mdb_stat(txn, 1 /* MAIN_DBI */, &ms) == 0 && ms.ms_entries == 0;
        mdb_txn_abort(txn);
        if (empty)
            return 0;
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: the ledger is damaged: its 'meta' or 'jobs' database is missing",
                          co->ledger_path);
    }
    if (!rc)
        rc = mdb_txn_commit(txn);
    else
        mdb_txn_abort(txn);
    if (rc)
        return mdb_fail(err, co->ledger_path, "open databases", rc);
    return 1;
}

/* Read every record of LMDB's free-page database: the coordinator's first
 * write reads them, so the probe must have. Each is an ID list whose first
 * word counts the rest. SF_OK or SF_ECORRUPT. */
static int check_freelist(sf_coordinator *co, sf_err *err) {
    MDB_txn *txn;
    MDB_cursor *cur;
    if (mdb_txn_begin(co->env, NULL, MDB_RDONLY, &txn))
        return SF_OK;
    int rc = mdb_cursor_open(txn, 0 /* FREE_DBI */, &cur);
    MDB_val k, v;
    int bad = 0;
    for (int op = MDB_FIRST; !rc && !bad && !(rc = mdb_cursor_get(cur, &k, &v, (MDB_cursor_op)op));
         op = MDB_NEXT) {
        size_t ids;
        if (v.mv_size < sizeof ids || v.mv_size % sizeof ids) {
            bad = 1;
            break;
        }
        memcpy(&ids, v.mv_data, sizeof ids);
        bad = ids != v.mv_size / sizeof ids - 1;
    }
    if (rc == MDB_NOTFOUND)
        rc = 0;
    mdb_txn_abort(txn);
    if (bad || rc)
        return sf_err_set(err, SF_ECORRUPT, "%s: the ledger is damaged: its free-page list %s",
                          co->ledger_path, rc ? mdb_strerror(rc) : "does not decode");
    return SF_OK;
}

/* The probe child: open read-only, load, report. Never returns. */
static void probe_child(sf_coordinator *co, int fd) {
    /* a fault ends this process at once, whatever handlers the host
     * process installed (a sanitizer's, a test harness's): the parent
     * reports the signal */
    static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGALRM};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        signal(faults[i], SIG_DFL);
    alarm(co->probe_seconds ? co->probe_seconds
                            : PROBE_SECONDS + (unsigned)(co->njobs / PROBE_JOBS_PER_EXTRA_SECOND));
    sf_err e = {0};
    co->env = NULL;
    int rc = env_open(co, MDB_RDONLY | MDB_NOLOCK, &e);
    if (rc == 1)
        rc = ledger_load(co, &e);
    if (rc >= 0)
        rc = check_freelist(co, &e);
    if (rc < 0) {
        sf_write_full(fd, e.msg, strlen(e.msg));
        _exit(-rc);
    }
    _exit(0);
}

/* Read an existing ledger in a child process first (see the top). Returns
 * SF_OK when the child loaded it cleanly, else the child's error, or
 * SF_ECORRUPT naming the signal that ended it. */
static int probe_ledger(sf_coordinator *co, sf_err *err) {
    int p[2];
    if (pipe(p) != 0)
        return sf_err_set(err, SF_EIO, "%s: cannot check the ledger: pipe: %s", co->ledger_path,
                          strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return sf_err_set(err, SF_EIO, "%s: cannot check the ledger: fork: %s", co->ledger_path,
                          strerror(errno));
    }
    if (pid == 0) {
        close(p[0]);
        probe_child(co, p[1]);
    }
    close(p[1]);
    char msg[SF_ERR_MSG_MAX] = "";
    size_t got = 0;
    sf_read_full(p[0], msg, sizeof msg - 1, &got);
    msg[got] = 0;
    close(p[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(status))
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: the ledger is damaged: reading it %s (signal %d, %s); move it "
                          "aside and rebuild it from the stored shards with `sf-fleet "
                          "rebuild-ledger CONFIG`",
                          co->ledger_path,
                          WTERMSIG(status) == SIGALRM ? "did not finish" : "crashed LMDB",
                          WTERMSIG(status), strsignal(WTERMSIG(status)));
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    if (code == 0)
        return SF_OK;
    if (!msg[0] || code > -SF_ECONFIG) /* not a report of probe_child's: it failed itself */
        return sf_err_set(err, SF_ECORRUPT,
                          "%s: the ledger is damaged: reading it failed (exit status %d); move "
                          "it aside and rebuild it from the stored shards with `sf-fleet "
                          "rebuild-ledger CONFIG`",
                          co->ledger_path, code);
    return sf_err_set(err, -code, "%s", msg);
}

/* Claim the run's room in the ledger file `fd` (see the top). SF_OK, or
 * SF_EIO with the OS reason (a filesystem without fallocate is no error). */
uint64_t sf_coordinator_ledger_bytes(uint64_t njobs) {
    return LEDGER_RESERVE + njobs * (uint64_t)LEDGER_BYTES_PER_JOB;
}

static int reserve(const sf_coordinator *co, int fd, sf_err *err) {
    uint64_t bytes = sf_coordinator_ledger_bytes(co->njobs);
    int rc = posix_fallocate(fd, 0, (off_t)bytes);
    if (rc == 0 || rc == EOPNOTSUPP || rc == EINVAL)
        return SF_OK;
    return sf_err_set(err, SF_EIO, "%s: cannot reserve %llu bytes for the ledger: %s",
                      co->ledger_path, (unsigned long long)bytes, strerror(rc));
}

int ledger_open(sf_coordinator *co, sf_err *err) {
    struct stat st;
    int fresh = stat(co->ledger_path, &st) != 0 || st.st_size == 0;
    if (!fresh && !S_ISREG(st.st_mode))
        return sf_err_set(err, SF_EFORMAT, "%s: not a regular file", co->ledger_path);
    if (fresh) {
        /* LMDB writes the two meta pages at open: make sure they fit */
        int fd = open(co->ledger_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            return sf_err_set(err, SF_EIO, "%s: cannot create: %s", co->ledger_path,
                              strerror(errno));
        int rc = reserve(co, fd, err);
        /* back to empty: LMDB initialises only an empty file */
        if (ftruncate(fd, 0) != 0 && rc == SF_OK)
            rc = sf_err_set(err, SF_EIO, "%s: cannot truncate: %s", co->ledger_path,
                            strerror(errno));
        close(fd);
        if (rc < 0)
            return rc;
    } else {
        /* a big run's ledger takes seconds to read, twice: say why it waits */
        if (co->njobs > SF_COORD_CREATE_CHUNK)
            sf_log(co->log, co->log_ctx, "coordinator: reading the ledger's %llu jobs",
                   (unsigned long long)co->njobs);
        int rc = probe_ledger(co, err);
        if (rc < 0)
            return rc;
    }
    int rc = env_open(co, 0, err);
    if (rc < 0)
        return rc;
    int fd;
    if (mdb_env_get_fd(co->env, &fd))
        return SF_OK;
    sf_err re = {0};
    rc = reserve(co, fd, &re);
    if (rc < 0 && fresh)
        return sf_err_set(err, rc, "%s", re.msg);
    if (rc < 0) /* an existing ledger holds its pages already: go on */
        sf_log(co->log, co->log_ctx, "coordinator: %s", re.msg);
    return SF_OK;
}
void ledger_close(sf_coordinator *co) {
    if (co->env) {
        mdb_env_sync(co->env, 1);
        mdb_env_close(co->env);
        co->env = NULL;
    }
}

/* name: j's shard's name (co_job_shard); model: its model (co_job_model); who and digest: room for
 * the audit's identities and digests; counter: the one counter kept (the proto points into j and
 * into them). */
static void job_to_proto(const cjob *j, const char *name, const char *model,
                         Spirefleet__LedgerJob *m, Spirefleet__JobStats *st, const char *who[3],
                         const char *digest[3], Spirefleet__Counter *counter,
                         Spirefleet__Counter **counters) {
    spirefleet__ledger_job__init(m);
    spirefleet__job_stats__init(st);
    m->job_id = j->id;
    m->state = (Spirefleet__JobState)j->state;
    m->seed_start = j->seed_start;
    m->seed_count = j->seed_count;
    m->worker_id = (char *)j->worker_id;
    m->attempt = j->attempt;
    m->content_digest = (char *)j->content_digest;
    m->shard_name = (char *)name;
    m->records = j->records;
    m->bytes = j->bytes;
    m->file_sha256 = (char *)j->file_sha256;
    m->model_sha256 = (char *)model;
    m->audit_stage = j->audit_stage;
    m->n_audit_by = m->n_audit_digest = j->audit_stage;
    m->audit_by = (char **)who;
    m->audit_digest = (char **)digest;
    for (int k = 0; k < j->audit_stage; k++) { /* j->aud is set at a stage */
        who[k] = (char *)j->aud->who[k];
        digest[k] = (char *)j->aud->digest[k];
    }
    st->fights = j->fights;
    st->decisions = j->records;
    st->simulations = j->simulations;
    st->fallbacks = j->fallbacks;
    st->fights_won = j->wins;
    if (j->turn_limits) {
        spirefleet__counter__init(counter);
        counter->name = (char *)SF_SHARD_COUNTER_TURN_LIMIT;
        counter->value = j->turn_limits;
        counters[0] = counter;
        st->n_counters = 1;
        st->counters = counters;
    }
    m->stats = st;
}

static void copy_str(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src ? src : "");
}

static int put_job(sf_coordinator *co, MDB_txn *txn, const cjob *j) {
    Spirefleet__LedgerJob m;
    Spirefleet__JobStats st;
    Spirefleet__Counter counter, *counters[1];
    const char *who[3], *digest[3];
    char name[CO_SHARD_NAME_MAX];
    job_to_proto(j, co_job_shard(co, j, name), co_job_model(co, j), &m, &st, who, digest, &counter,
                 counters);
    uint8_t buf[2048];
    size_t n = spirefleet__ledger_job__get_packed_size(&m);
    if (n > sizeof buf)
        return MDB_BAD_VALSIZE;
    spirefleet__ledger_job__pack(&m, buf);
    uint8_t key[8];
    be64(j->id, key);
    MDB_val k = {8, key};
    return put_tagged(txn, co->dbi_jobs, 'j', &k, buf, n);
}

static int put_meta(MDB_txn *txn, MDB_dbi dbi, const char *key, const void *data, size_t len) {
    MDB_val k = {strlen(key), (void *)key};
    return put_tagged(txn, dbi, 'm', &k, data, len);
}

/* Run fn in a write transaction, growing the map and retrying on MAP_FULL. */
static int write_txn(sf_coordinator *co, int (*fn)(sf_coordinator *, MDB_txn *), sf_err *err) {
    for (int attempt = 0; attempt < 8; attempt++) {
        MDB_txn *txn;
        int rc = mdb_txn_begin(co->env, NULL, 0, &txn);
        if (rc)
            return mdb_fail(err, co->ledger_path, "begin write", rc);
        rc = fn(co, txn);
        if (!rc)
            rc = mdb_txn_commit(txn);
        else
            mdb_txn_abort(txn);
        if (rc == MDB_MAP_FULL) {
            co->map_size *= 2;
            int r2 = mdb_env_set_mapsize(co->env, co->map_size);
            if (r2)
                return mdb_fail(err, co->ledger_path, "grow map", r2);
            continue;
        }
        if (rc)
            return mdb_fail(err, co->ledger_path, "commit", rc);
        return SF_OK;
    }
    return sf_err_set(err, SF_EFULL, "%s: the ledger map could not grow to %zu bytes: %s",
                      co->ledger_path, co->map_size, mdb_strerror(MDB_MAP_FULL));
}

static int put_u64_meta(MDB_txn *txn, MDB_dbi dbi, const char *key, uint64_t v) {
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    return put_meta(txn, dbi, key, le, 8);
}

static int create_run_fn(sf_coordinator *co, MDB_txn *txn) {
    sf_config_scratch *s = malloc(sizeof *s);
    if (!s)
        return ENOMEM;
    Spirefleet__RunConfig *m = sf_config_to_proto(&co->cfg, s);
    size_t n = spirefleet__run_config__get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    int rc = ENOMEM;
    if (buf) {
        spirefleet__run_config__pack(m, buf);
        rc = put_meta(txn, co->dbi_meta, "config", buf, n);
        free(buf);
    }
    free(s);
    if (!rc)
        rc = put_meta(txn, co->dbi_meta, "format", LEDGER_FORMAT, strlen(LEDGER_FORMAT));
    if (!rc)
        rc = put_meta(txn, co->dbi_meta, "digest", co->digest, 64);
    if (!rc)
        rc = put_u64_meta(txn, co->dbi_meta, "jobs", co->njobs);
    if (!rc)
        rc = put_u64_meta(txn, co->dbi_meta, "created", 0);
    return rc;
}

int ledger_create_run(sf_coordinator *co, sf_err *err) {
    int rc = write_txn(co, create_run_fn, err);
    if (rc < 0)
        return rc;
    co->jobs_created = 0;
    int src = mdb_env_sync(co->env, 1);
    return src ? mdb_fail(err, co->ledger_path, "sync", src) : SF_OK;
}

/* The end (exclusive, 0-based) of the next chunk of jobs to create. */
static uint64_t chunk_end(const sf_coordinator *co) {
    uint64_t chunk = co->create_chunk ? co->create_chunk : SF_COORD_CREATE_CHUNK;
    uint64_t left = co->njobs - co->jobs_created;
    return co->jobs_created + (left < chunk ? left : chunk);
}

/* One chunk: its jobs and the new "created", in one transaction (write_txn
 * may run it again after growing the map: it writes the same records). */
static int create_chunk_fn(sf_coordinator *co, MDB_txn *txn) {
    uint64_t end = chunk_end(co);
    int rc = 0;
    for (uint64_t i = co->jobs_created; i < end && !rc; i++)
        rc = put_job(co, txn, &co->jobs[i]);
    if (!rc)
        rc = put_u64_meta(txn, co->dbi_meta, "created", end);
    return rc;
}

int ledger_create_jobs(sf_coordinator *co, sf_err *err) {
    uint64_t chunk = co->create_chunk ? co->create_chunk : SF_COORD_CREATE_CHUNK;
    /* progress only where creation takes more than one transaction */
    int show = co->njobs - co->jobs_created > chunk;
    uint64_t last_line = 0;
    while (co->jobs_created < co->njobs) {
        if (co->stop && *co->stop)
            return sf_err_set(err, SF_ESTATE,
                              "%s: stopped while creating jobs: %llu of %llu made; start the "
                              "coordinator again on this output dir to go on from there",
                              co->ledger_path, (unsigned long long)co->jobs_created,
                              (unsigned long long)co->njobs);
        uint64_t end = chunk_end(co);
        int rc = write_txn(co, create_chunk_fn, err);
        if (rc < 0)
            return rc;
        /* a whole number of chunks on disk, whatever happens next */
        int src = mdb_env_sync(co->env, 1);
        if (src)
            return mdb_fail(err, co->ledger_path, "sync", src);
        for (uint64_t i = co->jobs_created; i < end; i++)
            co->jobs[i].dirty = 0;
        co->jobs_created = end;
        uint64_t now = sf_now_ns();
        if (show && (last_line == 0 || end == co->njobs || now - last_line >= CO_NS_PER_S)) {
            sf_log(co->log, co->log_ctx, "coordinator: creating jobs: %llu of %llu",
                   (unsigned long long)end, (unsigned long long)co->njobs);
            last_line = now;
        }
    }
    return SF_OK;
}

/* The meta record `key` with its tag checked: 0 and the value, 1 when
 * absent, -1 (message in err) when damaged. */
static int get_meta(sf_coordinator *co, MDB_txn *txn, const char *key, MDB_val *v, sf_err *err) {
    MDB_val k = {strlen(key), (void *)key};
    int rc = mdb_get(txn, co->dbi_meta, &k, v);
    if (rc == MDB_NOTFOUND)
        return 1;
    if (rc) {
        mdb_fail(err, co->ledger_path, key, rc);
        return -1;
    }
    if (check_tagged('m', &k, v) < 0) {
        sf_err_set(err, SF_ECORRUPT,
                   "%s: the ledger is damaged: the run's '%s' record is damaged (its checksum "
                   "does not match)",
                   co->ledger_path, key);
        return -1;
    }
    return 0;
}

/* Every record of `meta` with its tag checked, whatever its key, and the
 * run's stored config present: ledger_load reads "digest", "format" and
 * "jobs" through get_meta, but "config" (the packed RunConfig the run was
 * started with) is read by nothing at load, and a record under any other
 * key is a damaged one. 0, or -1 with SF_ECORRUPT in err naming the
 * record. */
static int check_meta(sf_coordinator *co, MDB_txn *txn, sf_err *err) {
    MDB_val k, v;
    int got = get_meta(co, txn, "config", &v, err);
    if (got == 1)
        sf_err_set(err, SF_ECORRUPT,
                   "%s: the ledger is damaged: the run's 'config' record is missing",
                   co->ledger_path);
    if (got != 0)
        return -1;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, co->dbi_meta, &cur), bad = 0;
    if (!rc) {
        for (int op = MDB_FIRST; !bad && !(rc = mdb_cursor_get(cur, &k, &v, (MDB_cursor_op)op));
             op = MDB_NEXT)
            bad = check_tagged('m', &k, &v) < 0;
        mdb_cursor_close(cur); /* k stays valid: the read transaction holds the page */
    }
    if (bad) {
        char name[33]; /* the key as text, for the message */
        size_t n = k.mv_size < sizeof name - 1 ? k.mv_size : sizeof name - 1;
        for (size_t i = 0; i < n; i++) {
            char c = ((const char *)k.mv_data)[i];
            name[i] = c >= ' ' && c <= '~' && c != '\'' ? c : '?';
        }
        name[n] = 0;
        sf_err_set(err, SF_ECORRUPT,
                   "%s: the ledger is damaged: the run's '%s' record is damaged (its checksum "
                   "does not match)",
                   co->ledger_path, name);
        return -1;
    }
    if (rc != MDB_NOTFOUND) {
        sf_err_set(err, SF_ECORRUPT, "%s: the ledger is damaged: reading the run's records: %s",
                   co->ledger_path, mdb_strerror(rc));
        return -1;
    }
    return 0;
}

/* Why a decoded job record cannot be job `id` of this run ("" when it can). */
static void job_problem(const sf_coordinator *co, uint64_t id, const Spirefleet__LedgerJob *m,
                        char *why, size_t cap) {
    why[0] = 0;
    if (m->job_id != id) {
        snprintf(why, cap, "is stored under job %llu but names job %llu", (unsigned long long)id,
                 (unsigned long long)m->job_id);
        return;
    }
    const cjob *j = &co->jobs[id - 1];
    if (m->state > SPIREFLEET__JOB_STATE__JOB_DONE)
        snprintf(why, cap, "has an unknown state %d", (int)m->state);
    else if (m->seed_start != j->seed_start || m->seed_count != j->seed_count)
        snprintf(why, cap, "names seeds %llu+%u, the run's job has %llu+%u",
                 (unsigned long long)m->seed_start, m->seed_count,
                 (unsigned long long)j->seed_start, j->seed_count);
    else if (m->worker_id && strlen(m->worker_id) >= CO_WORKER_ID_MAX)
        snprintf(why, cap, "has a worker id of %zu bytes", strlen(m->worker_id));
    else if (m->state == SPIREFLEET__JOB_STATE__JOB_DONE) {
        char name[96];
        sf_shard_name(co->cfg.name, id, name, sizeof name);
        if (!sf_sha256_hex_canonical(m->content_digest) || !sf_sha256_hex_canonical(m->file_sha256))
            snprintf(why, cap, "is done without a valid content digest and file SHA-256");
        else if (!m->shard_name || strcmp(m->shard_name, name))
            snprintf(why, cap, "is done with shard name '%.100s', expected %s",
                     m->shard_name ? m->shard_name : "", name);
    }
    if (why[0] || m->audit_stage == 0) {
        if (!why[0] && (m->n_audit_by || m->n_audit_digest))
            snprintf(why, cap, "has audit copies but no audit");
        return;
    }
    if (m->audit_stage > 3 || m->state != SPIREFLEET__JOB_STATE__JOB_DONE)
        snprintf(why, cap, "has an audit at stage %u in state %d", m->audit_stage, (int)m->state);
    else if (m->n_audit_by != m->audit_stage || m->n_audit_digest != m->audit_stage)
        snprintf(why, cap, "has an audit at stage %u with %zu identities and %zu digests",
                 m->audit_stage, m->n_audit_by, m->n_audit_digest);
    for (size_t k = 0; !why[0] && k < m->audit_stage; k++)
        if (!m->audit_by[k][0] || strlen(m->audit_by[k]) >= CO_WORKER_ID_MAX ||
            !sf_sha256_hex_canonical(m->audit_digest[k]))
            snprintf(why, cap, "has a malformed audit copy %zu", k);
}

/* ledger_load, step 1b: how many job records were created (the "created"
 * record; absent in a ledger written before chunked creation: all). 0, or
 * -1 with SF_ECORRUPT in err. */
static int load_created(sf_coordinator *co, MDB_txn *txn, sf_err *err) {
    MDB_val v;
    int got = get_meta(co, txn, "created", &v, err);
    if (got == 1) {
        co->jobs_created = co->njobs;
        return 0;
    }
    if (got < 0)
        return -1;
    uint64_t n = 0;
    for (int i = 0; v.mv_size == 8 && i < 8; i++)
        n |= (uint64_t)((const uint8_t *)v.mv_data)[i] << (8 * i);
    if (v.mv_size != 8 || n > co->njobs) {
        sf_err_set(err, SF_ECORRUPT,
                   "%s: the ledger is damaged: its 'created' record says %llu of %llu jobs",
                   co->ledger_path, (unsigned long long)n, (unsigned long long)co->njobs);
        return -1;
    }
    co->jobs_created = n;
    return 0;
}

/* ledger_load, step 1: the run record. 1 when it is this run's (the
 * format, the config digest and the job count match); 0 when nothing was
 * ever committed (a new ledger); an error code (set in err) otherwise. */
static int load_run_record(sf_coordinator *co, MDB_txn *txn, sf_err *err) {
    MDB_val v, fk = {6, (void *)"format"}, dk = {6, (void *)"digest"};
    if (mdb_get(txn, co->dbi_meta, &dk, &v) == 0 &&
        mdb_get(txn, co->dbi_meta, &fk, &v) == MDB_NOTFOUND) /* before checksums */
        return sf_err_set(err, SF_EVERSION,
                          "%s: the ledger has no format record (written before %s, without "
                          "record checksums); rebuild it with `sf-fleet rebuild-ledger CONFIG`",
                          co->ledger_path, LEDGER_FORMAT);
    int got = get_meta(co, txn, "digest", &v, err);
    if (got == 1) {
        /* nothing was ever committed: a new ledger, unless jobs are there */
        MDB_stat ms;
        int rc = mdb_stat(txn, co->dbi_jobs, &ms);
        if (rc == 0 && ms.ms_entries == 0)
            return 0;
        return sf_err_set(err, SF_ECORRUPT, "%s: the ledger has job records but no run record",
                          co->ledger_path);
    }
    if (got == 0 && v.mv_size != 64)
        got = -1, sf_err_set(err, SF_ECORRUPT,
                             "%s: the ledger is damaged: the run's 'digest' record has %zu bytes, "
                             "not 64",
                             co->ledger_path, v.mv_size);
    if (got == 0 && check_meta(co, txn, err) < 0)
        got = -1;
    if (got < 0)
        return err ? err->code : SF_ECORRUPT;
    if (memcmp(v.mv_data, co->digest, 64)) {
        char stored[65];
        memcpy(stored, v.mv_data, 64);
        stored[64] = 0;
        return sf_err_set(err, SF_ECONFIG,
                          "%s: this output dir holds a run with config digest %.12s..., but the "
                          "config given has %.12s...; use another run.output_dir or the original "
                          "config (after an upgrade that added a config key, the same YAML has "
                          "another digest: start it in a fresh run.output_dir)",
                          co->ledger_path, stored, co->digest);
    }
    got = get_meta(co, txn, "format", &v, err);
    if (got == 0 &&
        (v.mv_size != strlen(LEDGER_FORMAT) || memcmp(v.mv_data, LEDGER_FORMAT, v.mv_size)))
        got = -1, sf_err_set(err, SF_EVERSION, "%s: the ledger's format is not %s", co->ledger_path,
                             LEDGER_FORMAT);
    if (got == 0) {
        got = get_meta(co, txn, "jobs", &v, err);
        uint64_t n = 0;
        for (int i = 0; got == 0 && v.mv_size == 8 && i < 8; i++)
            n |= (uint64_t)((const uint8_t *)v.mv_data)[i] << (8 * i);
        if (got == 0 && (v.mv_size != 8 || n != co->njobs))
            got = -1,
            sf_err_set(err, SF_ECORRUPT,
                       "%s: the run record holds %llu jobs, the config makes %llu", co->ledger_path,
                       (unsigned long long)n, (unsigned long long)co->njobs);
        else if (got == 1)
            got = -1,
            sf_err_set(err, SF_ECORRUPT, "%s: the job count record is missing", co->ledger_path);
        if (got == 0)
            got = load_created(co, txn, err);
    } else if (got == 1) { /* a run record but no format: damaged (the old ones are above) */
        got = -1,
        sf_err_set(err, SF_ECORRUPT, "%s: the ledger's format record is missing", co->ledger_path);
    }
    if (got < 0)
        return err ? err->code : SF_ECORRUPT;
    return 1;
}

/* ledger_load, step 2, one record: job record `id` (its checked, decoded
 * value m) into the job table. -1 when its model is not a model's name, -2
 * without memory (for its model or its audit). */
static int load_job(sf_coordinator *co, uint64_t id, const Spirefleet__LedgerJob *m) {
    cjob *j = &co->jobs[id - 1];
    j->state = (uint8_t)m->state;
    j->attempt = m->attempt;
    copy_str(j->worker_id, sizeof j->worker_id, m->worker_id);
    copy_str(j->content_digest, sizeof j->content_digest, m->content_digest);
    copy_str(j->file_sha256, sizeof j->file_sha256, m->file_sha256);
    const char *model = m->model_sha256 ? m->model_sha256 : "";
    if (model[0] && strcmp(model, "rollout") && !sf_sha256_hex_canonical(model))
        return -1;
    if (co_job_set_model(co, j, model) < 0)
        return -2;
    if (m->audit_stage && !j->aud && !(j->aud = calloc(1, sizeof *j->aud)))
        return -2;
    for (uint32_t k = 0; k < m->audit_stage; k++) {
        copy_str(j->aud->who[k], sizeof j->aud->who[k], m->audit_by[k]);
        copy_str(j->aud->digest[k], sizeof j->aud->digest[k], m->audit_digest[k]);
    }
    if (m->audit_stage)
        audit_restore(co, j, (uint8_t)m->audit_stage);
    j->records = m->records;
    j->bytes = m->bytes;
    if (m->stats) {
        j->fights = m->stats->fights;
        j->simulations = m->stats->simulations;
        j->fallbacks = m->stats->fallbacks;
        j->wins = m->stats->fights_won;
        for (size_t k = 0; k < m->stats->n_counters; k++)
            if (m->stats->counters[k]->name &&
                !strcmp(m->stats->counters[k]->name, SF_SHARD_COUNTER_TURN_LIMIT))
                j->turn_limits = m->stats->counters[k]->value;
    }
    return 0;
}

/* ledger_load, step 2: every job record, in job order, each checked (its
 * key, its place, its checksum, its decoding, job_problem) and loaded.
 * 1, or SF_ECORRUPT naming the record. */
static int load_jobs(sf_coordinator *co, MDB_txn *txn, sf_err *err) {
    MDB_cursor *cur = NULL;
    int rc = mdb_cursor_open(txn, co->dbi_jobs, &cur);
    uint64_t loaded = 0;
    MDB_val key, val;
    char why[200] = "";
    int gr = 0, nomem = 0;
    for (int op = MDB_FIRST;
         !rc && !why[0] && !(gr = mdb_cursor_get(cur, &key, &val, (MDB_cursor_op)op));
         op = MDB_NEXT) {
        uint64_t id = 0;
        for (size_t i = 0; key.mv_size == 8 && i < 8; i++)
            id = id << 8 | ((const uint8_t *)key.mv_data)[i];
        if (key.mv_size != 8 || id == 0 || id > co->njobs || id <= loaded) {
            snprintf(why, sizeof why, "a job record has the key of no job of the run");
            break;
        }
        if (id > co->jobs_created) {
            snprintf(why, sizeof why, "job %llu has a record, but only %llu jobs were created",
                     (unsigned long long)id, (unsigned long long)co->jobs_created);
            break;
        }
        if (id != loaded + 1) {
            snprintf(why, sizeof why, "job %llu's record is missing",
                     (unsigned long long)(loaded + 1));
            break;
        }
        if (check_tagged('j', &key, &val) < 0) {
            snprintf(why, sizeof why, "job %llu's record is damaged (its checksum does not match)",
                     (unsigned long long)id);
            break;
        }
        Spirefleet__LedgerJob *m = spirefleet__ledger_job__unpack(NULL, val.mv_size, val.mv_data);
        if (!m) {
            snprintf(why, sizeof why, "job %llu's record does not decode", (unsigned long long)id);
            break;
        }
        char prob[160];
        job_problem(co, id, m, prob, sizeof prob);
        if (prob[0])
            snprintf(why, sizeof why, "job %llu's record %s", (unsigned long long)id, prob);
        else if ((rc = load_job(co, id, m)) == -2)
            nomem = 1;
        spirefleet__ledger_job__free_unpacked(m, NULL);
        if (rc || why[0])
            break;
        loaded = id;
    }
    if (!rc && !why[0] && gr != MDB_NOTFOUND)
        rc = gr;
    if (cur)
        mdb_cursor_close(cur);
    if (nomem)
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory loading job %llu", co->ledger_path,
                          (unsigned long long)(loaded + 1));
    if (rc)
        return sf_err_set(err, SF_ECORRUPT, "%s: the ledger is damaged: reading the jobs: %s",
                          co->ledger_path, mdb_strerror(rc));
    if (why[0])
        return sf_err_set(err, SF_ECORRUPT, "%s: the ledger is damaged: %s", co->ledger_path, why);
    if (loaded != co->jobs_created)
        return sf_err_set(
            err, SF_ECORRUPT, "%s: the ledger is damaged: job records stop at %llu of %llu",
            co->ledger_path, (unsigned long long)loaded, (unsigned long long)co->jobs_created);
    return 1;
}

/* In one read transaction: the run record (step 1), then the jobs (step 2). */
int ledger_load(sf_coordinator *co, sf_err *err) {
    MDB_txn *txn;
    int rc = mdb_txn_begin(co->env, NULL, MDB_RDONLY, &txn);
    if (rc)
        return mdb_fail(err, co->ledger_path, "begin read", rc);
    rc = load_run_record(co, txn, err);
    if (rc == 1)
        rc = load_jobs(co, txn, err);
    mdb_txn_abort(txn);
    return rc;
}

/* ---- a summary without a coordinator --------------------------------------- */

/* The job records in one read transaction, tallied into `s`. */
static int summary_jobs(sf_coordinator *co, MDB_txn *txn, sf_ledger_summary *s, sf_err *err) {
    MDB_cursor *cur = NULL;
    MDB_val key, val;
    int rc = mdb_cursor_open(txn, co->dbi_jobs, &cur);
    for (int op = MDB_FIRST; !rc && !(rc = mdb_cursor_get(cur, &key, &val, (MDB_cursor_op)op));
         op = MDB_NEXT) {
        Spirefleet__LedgerJob *m = NULL;
        if (check_tagged('j', &key, &val) < 0 ||
            !(m = spirefleet__ledger_job__unpack(NULL, val.mv_size, val.mv_data))) {
            mdb_cursor_close(cur);
            return sf_err_set(err, SF_ECORRUPT,
                              "%s: the ledger is damaged: a job record does not check or decode",
                              co->ledger_path);
        }
        s->jobs_leased += m->state == SPIREFLEET__JOB_STATE__JOB_LEASED;
        if (m->state == SPIREFLEET__JOB_STATE__JOB_DONE) {
            s->jobs_done++;
            s->records += m->records;
            s->bytes += m->bytes;
            s->fights += m->stats ? m->stats->fights : 0;
            s->simulations += m->stats ? m->stats->simulations : 0;
        }
        spirefleet__ledger_job__free_unpacked(m, NULL);
    }
    if (cur)
        mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? SF_OK : mdb_fail(err, co->ledger_path, "reading the jobs", rc);
}

/* The run record (config, digest, job count) and the jobs, read-only. */
static int summary_read(sf_coordinator *co, sf_ledger_summary *s, sf_err *err) {
    /* A coordinator may be committing meanwhile: a reader without LMDB's
     * reader table (MDB_NOLOCK) can then follow a page the writer has just
     * reused, so read through it whenever it exists. Without the lock file
     * no coordinator has ever opened the ledger, and none writes it. */
    char lock[sizeof co->ledger_path + 8];
    snprintf(lock, sizeof lock, "%s-lock", co->ledger_path);
    int rc = env_open(co, access(lock, W_OK) == 0 ? MDB_RDONLY : MDB_RDONLY | MDB_NOLOCK, err);
    if (rc == 0)
        return sf_err_set(err, SF_ENOTFOUND, "%s: no run was ever recorded in this ledger",
                          co->ledger_path);
    MDB_txn *txn = NULL;
    if (rc > 0 && (rc = mdb_txn_begin(co->env, NULL, MDB_RDONLY, &txn)) != 0)
        rc = mdb_fail(err, co->ledger_path, "begin read", rc);
    MDB_val v;
    int got = rc < 0 ? -1 : get_meta(co, txn, "config", &v, err);
    Spirefleet__RunConfig *m =
        got == 0 ? spirefleet__run_config__unpack(NULL, v.mv_size, v.mv_data) : NULL;
    if (got == 1)
        rc = sf_err_set(err, SF_ENOTFOUND, "%s: no run was ever recorded in this ledger",
                        co->ledger_path);
    else if (got == 0 && !m)
        rc = sf_err_set(err, SF_ECORRUPT, "%s: the ledger is damaged: its config does not decode",
                        co->ledger_path);
    else if (got == 0 && (rc = sf_config_from_proto(m, &co->cfg, err)) < 0)
        sf_err_prefix(err, "%s: the run's config", co->ledger_path);
    else if (got < 0)
        rc = err->code;
    if (m)
        spirefleet__run_config__free_unpacked(m, NULL);
    if (rc >= 0) {
        snprintf(s->run, sizeof s->run, "%s", co->cfg.name);
        snprintf(s->kind, sizeof s->kind, "%s", co->cfg.kind);
        s->jobs_total = (co->cfg.seed_count + co->cfg.job_size - 1) / co->cfg.job_size;
        got = get_meta(co, txn, "digest", &v, err);
        if (got == 0 && v.mv_size == 64)
            memcpy(s->digest, v.mv_data, 64);
        rc = got < 0 ? err->code : summary_jobs(co, txn, s, err);
    }
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

int sf_coordinator_ledger_summary(const char *output_dir, sf_ledger_summary *out, sf_err *err) {
    memset(out, 0, sizeof *out);
    sf_coordinator *co = calloc(1, sizeof *co);
    if (!co)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    snprintf(co->ledger_path, sizeof co->ledger_path, "%s/ledger.lmdb", output_dir);
    struct stat st;
    int rc = SF_OK, p[2] = {-1, -1};
    if (stat(co->ledger_path, &st) != 0 || st.st_size == 0)
        rc = sf_err_set(err, SF_ENOTFOUND, "%s: no ledger: no run was started in %s",
                        co->ledger_path, output_dir);
    else if (!S_ISREG(st.st_mode))
        rc = sf_err_set(err, SF_EFORMAT, "%s: not a regular file", co->ledger_path);
    else if (pipe(p) != 0)
        rc = sf_err_set(err, SF_EIO, "%s: pipe: %s", co->ledger_path, strerror(errno));
    pid_t pid = rc < 0 ? -1 : fork();
    if (rc == SF_OK && pid < 0)
        rc = sf_err_set(err, SF_EIO, "%s: fork: %s", co->ledger_path, strerror(errno));
    if (pid == 0) { /* the child reads; the parent takes its answer */
        close(p[0]);
        alarm(PROBE_SECONDS);
        sf_err e = {0};
        int crc = summary_read(co, out, &e);
        sf_write_full(p[1], &crc, sizeof crc);
        sf_write_full(p[1], crc < 0 ? (const void *)&e : (const void *)out,
                      crc < 0 ? sizeof e : sizeof *out);
        _exit(0);
    }
    if (pid > 0) {
        close(p[1]);
        p[1] = -1;
        int crc = SF_ECORRUPT, status = 0;
        size_t got = 0, want = 0;
        sf_read_full(p[0], &crc, sizeof crc, &got);
        if (got == sizeof crc && crc >= 0)
            sf_read_full(p[0], out, want = sizeof *out, &got);
        else if (got == sizeof crc)
            sf_read_full(p[0], err, want = sizeof *err, &got);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got != want || !want)
            rc = sf_err_set(err, SF_ECORRUPT, "%s: the ledger is damaged: reading it failed",
                            co->ledger_path);
        else
            rc = crc < 0 ? err->code : SF_OK;
    }
    for (int i = 0; i < 2; i++)
        if (p[i] >= 0)
            close(p[i]);
    free(co);
    return rc;
}

static int commit_fn(sf_coordinator *co, MDB_txn *txn) {
    int rc = 0;
    for (uint64_t k = 0; k < co->ndirty && !rc; k++)
        rc = put_job(co, txn, &co->jobs[co->dirty[k] - 1]);
    return rc;
}

int ledger_commit(sf_coordinator *co, sf_err *err) {
    if (co->ndirty == 0 && !co->need_sync)
        return SF_OK;
    if (co->ndirty > 0) {
        int rc = write_txn(co, commit_fn, err);
        if (rc < 0)
            return rc;
        for (uint64_t k = 0; k < co->ndirty; k++)
            co->jobs[co->dirty[k] - 1].dirty = 0;
        co->ndirty = 0;
    }
    if (co->need_sync) {
        int src = mdb_env_sync(co->env, 1);
        if (src)
            return mdb_fail(err, co->ledger_path, "sync", src);
        co->need_sync = 0;
    }
    return SF_OK;
}

/* ---- for backup.c ----------------------------------------------------------- */

int ledger_env_open(sf_coordinator *co, unsigned flags, sf_err *err) {
    return env_open(co, flags, err);
}
int ledger_get_meta(sf_coordinator *co, MDB_txn *txn, const char *key, MDB_val *v, sf_err *err) {
    return get_meta(co, txn, key, v, err);
}
int ledger_check_tagged(char db, const MDB_val *k, MDB_val *v) {
    return check_tagged(db, k, v);
}
