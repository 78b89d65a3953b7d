/*
 * bench_fleet_scale.c — a fleet simulator against one coordinator: N
 * simulated workers, each a DEALER socket with CURVE, multiplexed over a
 * few threads (and, past SIM_PER_PROC workers, a few processes: each
 * socket costs its process two descriptors), against `sf-fleet
 * coordinator` run as a child process so that its memory and descriptors
 * are its own.
 *
 * A simulated worker says Hello, asks for a job, heartbeats while it
 * "plays" it for --job-seconds (uniform in 0.5x..1.5x), then uploads a
 * real sealed shard of one synthetic record made for that job, its run,
 * config digest, seeds and the worker's key (the coordinator verifies all
 * of it), and asks again. Some fail as workers do: at a lease, --abandon
 * of them give it back (JobFailed), --forget of them drop it silently (the
 * lease expires and the job is issued again); at the end of a job,
 * --disconnect of them close their connection and come back under the
 * same worker id without uploading. The keys: max(1, N / 100) client keys
 * in the run's key directory, worker i using key i mod K.
 *
 * Figures (JSON lines, then one human line):
 *   scale.handshake_s          from the first connect to the last Welcome
 *   scale.lease_p50_ms / p99   JobRequest -> Job, in the measured window
 *   scale.heartbeats_per_s     heartbeats answered per second
 *   scale.uploads_per_s        shards stored (acknowledged ok) per second
 *   scale.coordinator_rss_mib  VmRSS of the coordinator at the end (_peak)
 *   scale.coordinator_fds      its open descriptors at the end
 *   scale.metrics_ms           one GET /metrics during the run (-1: none)
 *   scale.lost_jobs            jobs acknowledged stored that the ledger
 *                              does not hold as done with their shard
 *   scale.duplicated_jobs      jobs acknowledged stored more than once
 *
 * usage: bench-fleet-scale SF_FLEET [--workers N] [--seconds S]
 *        [--job-seconds J] [--heartbeat-ms H] [--abandon P] [--forget P]
 *        [--disconnect P] [--dir PARENT]   (PARENT: where the run's directory
 *        is made, default /tmp: its disk is the coordinator's)
 * Without --workers: N = 1000 (what `make bench` runs).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "bench.h"
#include "bench_http.h"
#include "common/sha256.h"
#include "common/zsec.h"
#include "coordinator/coordinator.h"
#include "label_synth.h"
#include "proc.h"

#define SIM_PER_PROC    4000 /* workers in one simulator process */
#define SIM_THREADS     2    /* threads in each                  */
#define SIM_MAX_SAMPLES 200000

typedef struct opts {
    int workers, keys;
    double seconds, job_seconds, abandon, forget, disconnect;
    int heartbeat_ms;
} opts;

/* What the simulator processes share with the parent (MAP_SHARED). */
typedef struct shared {
    atomic_int welcomed, refused;
    atomic_int measuring; /* set by the parent: the window is open */
    atomic_int stop;
    atomic_uint_fast64_t leases, heartbeats, uploads, dup_acks, rejected, deferred, abandoned,
        forgotten, disconnects, waits;
    atomic_uint_fast64_t nlat;
    char first_reject[256];
    atomic_int have_reject;
    char digest[65];
    atomic_int have_digest;
    double lat_ms[SIM_MAX_SAMPLES];
    /* followed by njobs bytes: how many times each job was acknowledged stored */
} shared;

static shared *g_sh;
static _Atomic uint8_t *g_stored;
static uint64_t g_njobs;

typedef enum { W_HELLO, W_ASK, W_WORK, W_OFFER, W_SEND, W_WAIT, W_DONE } wstate;

typedef struct sim_worker {
    void *s;
    int key, state, welcomed;
    char id[24];
    uint64_t job, seed_start, t_req, t_due, t_hb;
    uint32_t seed_count;
    uint8_t *shard;
    size_t shard_len;
    char file_sha[65], content[65];
} sim_worker;

typedef struct sim_thread {
    void *ctx;
    const opts *o;
    const char *endpoint, *keys_dir, *scratch;
    sf_zsec_client *secs; /* o->keys of them */
    char (*key_ids)[SF_ZSEC_ID_LEN + 1];
    sim_worker *w;
    int n;
    uint64_t rng;
    synth_record *rec;
} sim_thread;

static void send_env(void *s, Spirefleet__Envelope *env) {
    sf_wire_send(s, NULL, 0, env, 1);
}

static double uniform(uint64_t *r) {
    return (double)(xorshift(r) >> 11) / 9007199254740992.0;
}

static void say_hello(sim_thread *t, sim_worker *w) {
    if (w->s)
        zmq_close(w->s);
    w->s = NULL;
    if (sf_wire_dealer_secure(t->ctx, t->endpoint, &t->secs[w->key], &w->s, NULL) != SF_OK) {
        fprintf(stderr, "bench-fleet-scale: cannot make a socket (descriptors?)\n");
        exit(1);
    }
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Hello h = SPIREFLEET__HELLO__INIT;
    h.protocol_version = SF_PROTOCOL_VERSION;
    h.worker_id = w->id;
    h.host = (char *)"sim";
    h.threads = 1;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    send_env(w->s, &env);
    w->state = W_HELLO;
    free(w->shard);
    w->shard = NULL;
    w->job = 0;
}

static void ask_job(sim_worker *w) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__JobRequest jr = SPIREFLEET__JOB_REQUEST__INIT;
    jr.worker_id = w->id;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_JOB_REQUEST;
    env.job_request = &jr;
    send_env(w->s, &env);
    w->state = W_ASK;
    w->t_req = sf_now_ns();
}

static void heartbeat(sim_worker *w, uint64_t job) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Heartbeat hb = SPIREFLEET__HEARTBEAT__INIT;
    hb.worker_id = w->id;
    hb.job_id = job;
    hb.waiting = (char *)"";
    env.body_case = SPIREFLEET__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    send_env(w->s, &env);
}

/* The job's shard: one synthetic record for its first seed, made with the
 * worker's key, read into memory; its file SHA-256 and content digest. */
static int make_shard(sim_thread *t, sim_worker *w) {
    synth_params p;
    synth_params_default(&p);
    p.run_id = "scale";
    p.job_id = w->job;
    p.seed_base = w->seed_start;
    p.config_digest = g_sh->digest;
    sf_shard_info info;
    synth_info(&p, &info);
    info.worker_key_id = t->key_ids[w->key];
    info.worker_id = w->id;
    info.worker_host = "sim";
    char path[1200];
    snprintf(path, sizeof path, "%s/%s-%llu.shard", t->scratch, w->id, (unsigned long long)w->job);
    sf_shard_writer_opts wo = {.hash_inline = 1, .initial_map_bytes = 1u << 20};
    sf_shard_writer *sw;
    sf_err e = {0};
    uint8_t dig[32], fh[32];
    if (sf_shard_writer_open(path, &info, &wo, &sw, &e) < 0)
        goto fail;
    synth_fill(t->rec, &p, 0);
    if (sf_shard_writer_append(sw, &t->rec->rec, &e) < 0) {
        sf_shard_writer_abort(sw);
        goto fail;
    }
    if (sf_shard_writer_seal(sw, NULL, dig, &e) < 0)
        goto fail;
    FILE *f = fopen(path, "rb");
    struct stat stt;
    if (!f || fstat(fileno(f), &stt) < 0) {
        if (f)
            fclose(f);
        goto fail;
    }
    w->shard_len = (size_t)stt.st_size;
    w->shard = malloc(w->shard_len);
    size_t got = fread(w->shard, 1, w->shard_len, f);
    fclose(f);
    unlink(path);
    if (got != w->shard_len || sf_sha256(w->shard, w->shard_len, fh, &e) < 0)
        goto fail;
    sf_hex(fh, 32, w->file_sha);
    sf_hex(dig, 32, w->content);
    return 0;
fail:
    fprintf(stderr, "bench-fleet-scale: cannot make a shard: %s\n", e.msg);
    exit(1);
}

static void offer(sim_worker *w) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardOffer o = SPIREFLEET__SHARD_OFFER__INIT;
    o.job_id = w->job;
    o.size = w->shard_len;
    o.file_sha256 = w->file_sha;
    o.content_digest = w->content;
    o.records = 1;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_OFFER;
    env.shard_offer = &o;
    send_env(w->s, &env);
    w->state = W_OFFER;
}

static void on_reply(sim_thread *t, sim_worker *w, const Spirefleet__Envelope *env) {
    const opts *o = t->o;
    uint64_t now = sf_now_ns();
    switch (env->body_case) {
    case SPIREFLEET__ENVELOPE__BODY_WELCOME:
        if (!atomic_load(&g_sh->have_digest)) {
            snprintf(g_sh->digest, sizeof g_sh->digest, "%s", env->welcome->config_digest);
            atomic_store(&g_sh->have_digest, 1);
        }
        if (!w->welcomed++) /* a reconnection is welcomed again */
            atomic_fetch_add(&g_sh->welcomed, 1);
        ask_job(w);
        break;
    case SPIREFLEET__ENVELOPE__BODY_REFUSAL:
        atomic_fetch_add(&g_sh->refused, 1);
        w->state = W_DONE;
        break;
    case SPIREFLEET__ENVELOPE__BODY_JOB: {
        if (w->state != W_ASK)
            break;
        if (atomic_load(&g_sh->measuring)) {
            atomic_fetch_add(&g_sh->leases, 1);
            uint64_t k = atomic_fetch_add(&g_sh->nlat, 1);
            if (k < SIM_MAX_SAMPLES)
                g_sh->lat_ms[k] = (double)(now - w->t_req) / 1e6;
        }
        w->job = env->job->job_id;
        w->seed_start = env->job->seed_start;
        w->seed_count = env->job->seed_count;
        double r = uniform(&t->rng);
        if (r < o->abandon) {
            Spirefleet__Envelope back = SPIREFLEET__ENVELOPE__INIT;
            Spirefleet__JobFailed jf = SPIREFLEET__JOB_FAILED__INIT;
            jf.job_id = w->job;
            jf.reason = (char *)SF_JOB_ABANDONED;
            back.body_case = SPIREFLEET__ENVELOPE__BODY_JOB_FAILED;
            back.job_failed = &jf;
            send_env(w->s, &back);
            atomic_fetch_add(&g_sh->abandoned, 1);
            ask_job(w);
        } else if (r < o->abandon + o->forget) {
            atomic_fetch_add(&g_sh->forgotten, 1); /* silently: its lease expires */
            ask_job(w);
        } else {
            w->state = W_WORK;
            w->t_due = now + (uint64_t)(o->job_seconds * (0.5 + uniform(&t->rng)) * 1e9);
            w->t_hb = now + (uint64_t)o->heartbeat_ms * 1000000u;
        }
        break;
    }
    case SPIREFLEET__ENVELOPE__BODY_WAIT:
        atomic_fetch_add(&g_sh->waits, 1);
        w->state = W_WAIT;
        w->t_due = now + (uint64_t)(env->wait->retry_ms ? env->wait->retry_ms : 1000) * 1000000u;
        break;
    case SPIREFLEET__ENVELOPE__BODY_RUN_COMPLETE: w->state = W_DONE; break;
    case SPIREFLEET__ENVELOPE__BODY_HEARTBEAT:
        if (atomic_load(&g_sh->measuring))
            atomic_fetch_add(&g_sh->heartbeats, 1);
        break;
    case SPIREFLEET__ENVELOPE__BODY_SHARD_ACK: {
        const Spirefleet__ShardAck *a = env->shard_ack;
        if (a->job_id != w->job || (w->state != W_OFFER && w->state != W_SEND))
            break;
        if (a->send) {
            Spirefleet__Envelope c = SPIREFLEET__ENVELOPE__INIT;
            Spirefleet__ShardChunk ch = SPIREFLEET__SHARD_CHUNK__INIT;
            ch.job_id = w->job;
            ch.data.data = w->shard;
            ch.data.len = w->shard_len; /* one chunk: the shard is a few KB */
            ch.last = 1;
            c.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_CHUNK;
            c.shard_chunk = &ch;
            send_env(w->s, &c);
            w->state = W_SEND;
            break;
        }
        if (a->ok && !a->duplicate) {
            if (atomic_load(&g_sh->measuring))
                atomic_fetch_add(&g_sh->uploads, 1);
            if (w->job >= 1 && w->job <= g_njobs)
                atomic_fetch_add(&g_stored[w->job - 1], 1);
        } else if (a->ok) {
            atomic_fetch_add(&g_sh->dup_acks, 1);
        } else if (a->retry_later) {
            atomic_fetch_add(&g_sh->deferred, 1);
            w->state = W_WORK; /* offered again at t_due */
            w->t_due = now + (uint64_t)(a->retry_ms ? a->retry_ms : 1000) * 1000000u;
            break;
        } else {
            atomic_fetch_add(&g_sh->rejected, 1);
            if (!atomic_exchange(&g_sh->have_reject, 1))
                snprintf(g_sh->first_reject, sizeof g_sh->first_reject, "job %llu: %s",
                         (unsigned long long)a->job_id, a->reason ? a->reason : "");
        }
        free(w->shard);
        w->shard = NULL;
        w->job = 0;
        ask_job(w);
        break;
    }
    default: break;
    }
}

/* Timers: heartbeats while working, the end of a job (upload, or a
 * disconnect), the end of a Wait. */
static void on_time(sim_thread *t, sim_worker *w, uint64_t now) {
    const opts *o = t->o;
    if (w->state == W_WORK || w->state == W_WAIT || w->state == W_OFFER || w->state == W_SEND) {
        if (now >= w->t_hb) {
            heartbeat(w, w->state == W_WAIT ? 0 : w->job);
            w->t_hb = now + (uint64_t)o->heartbeat_ms * 1000000u;
        }
    }
    if (w->state == W_WAIT && now >= w->t_due) {
        ask_job(w);
    } else if (w->state == W_WORK && now >= w->t_due) {
        if (!w->shard && uniform(&t->rng) < o->disconnect) {
            atomic_fetch_add(&g_sh->disconnects, 1);
            say_hello(t, w); /* the same id, a new connection; the job is lost */
            return;
        }
        if (!w->shard)
            make_shard(t, w);
        offer(w);
    }
}

static void *sim_run(void *p) {
    sim_thread *t = p;
    zmq_pollitem_t *items = calloc((size_t)t->n, sizeof *items);
    t->rec = malloc(sizeof *t->rec);
    for (int i = 0; i < t->n; i++) {
        say_hello(t, &t->w[i]);
        t->w[i].t_hb = sf_now_ns() + (uint64_t)t->o->heartbeat_ms * 1000000u;
    }
    sf_err e = {0};
    while (!atomic_load(&g_sh->stop)) {
        for (int i = 0; i < t->n; i++)
            items[i] = (zmq_pollitem_t){t->w[i].s, 0, ZMQ_POLLIN, 0};
        zmq_poll(items, t->n, 5);
        uint64_t now = sf_now_ns();
        for (int i = 0; i < t->n; i++) {
            sim_worker *w = &t->w[i];
            if (items[i].revents & ZMQ_POLLIN) {
                zmq_msg_t m;
                zmq_msg_init(&m);
                while (w->s && zmq_msg_recv(&m, w->s, ZMQ_DONTWAIT) >= 0) {
                    Spirefleet__Envelope *env = NULL;
                    if (sf_wire_decode(zmq_msg_data(&m), zmq_msg_size(&m), &env, &e) == SF_OK) {
                        on_reply(t, w, env);
                        sf_wire_free(env);
                    }
                }
                zmq_msg_close(&m);
            }
            on_time(t, w, now);
        }
    }
    for (int i = 0; i < t->n; i++) {
        if (t->w[i].s)
            zmq_close(t->w[i].s);
        free(t->w[i].shard);
    }
    free(items);
    free(t->rec);
    return NULL;
}

/* One simulator process: workers [first, first + n). */
static void sim_process(const opts *o, const char *endpoint, const char *keys, const char *tmp,
                        int first, int n) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    void *ctx = zmq_ctx_new();
    zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, n + 64);
    zmq_ctx_set(ctx, ZMQ_IO_THREADS, 1);
    sf_zsec_client *secs = calloc((size_t)o->keys, sizeof *secs);
    char(*ids)[SF_ZSEC_ID_LEN + 1] = calloc((size_t)o->keys, sizeof *ids);
    for (int k = 0; k < o->keys; k++) {
        char name[32];
        snprintf(name, sizeof name, k ? "sim%d" : SF_ZSEC_WORKER_NAME, k);
        sf_err e = {0};
        if (sf_zsec_client_load(keys, name, &secs[k], &e) < 0) {
            fprintf(stderr, "bench-fleet-scale: %s\n", e.msg);
            _exit(1);
        }
        sf_zsec_key_id(secs[k].me.pub, ids[k]);
    }
    /* The shards are made where fsync costs nothing (the writer syncs three
     * times per shard): the simulator stands for many machines, and its
     * disk is not the coordinator's. */
    char scratch[1200];
    snprintf(scratch, sizeof scratch, "%s/sim-%d", tmp, first);
    if (access("/dev/shm", W_OK) == 0)
        snprintf(scratch, sizeof scratch, "/dev/shm/sf-bench-scale-%d-%d", (int)getppid(), first);
    mkdir(scratch, 0700);
    sim_worker *w = calloc((size_t)n, sizeof *w);
    for (int i = 0; i < n; i++) {
        snprintf(w[i].id, sizeof w[i].id, "sim-%d", first + i);
        w[i].key = (first + i) % o->keys;
    }
    sim_thread th[SIM_THREADS];
    pthread_t pt[SIM_THREADS];
    int per = (n + SIM_THREADS - 1) / SIM_THREADS, at = 0, nt = 0;
    for (; nt < SIM_THREADS && at < n; nt++, at += per) {
        th[nt] = (sim_thread){.ctx = ctx,
                              .o = o,
                              .endpoint = endpoint,
                              .keys_dir = keys,
                              .scratch = scratch,
                              .secs = secs,
                              .key_ids = ids,
                              .w = w + at,
                              .n = at + per > n ? n - at : per,
                              .rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)(first + at + 1)};
        pthread_create(&pt[nt], NULL, sim_run, &th[nt]);
    }
    for (int i = 0; i < nt; i++)
        pthread_join(pt[i], NULL);
    zmq_ctx_term(ctx);
    bench_rm_rf(scratch);
    _exit(0);
}

/* ---- the coordinator's side ---------------------------------------------- */

static int count_fds(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

static double cpu_s(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* One GET /metrics: milliseconds to the whole answer, -1 when not 200. */
static double get_metrics(int port, size_t *bytes) {
    static char buf[1 << 20];
    uint64_t t0 = sf_now_ns();
    int ok = bench_get_metrics(port, buf, sizeof buf, bytes);
    return ok ? (double)(sf_now_ns() - t0) / 1e6 : -1;
}

/* The metrics port from the coordinator's log line "(metrics http://H:P/...". */
static int metrics_port(const char *log) {
    FILE *f = fopen(log, "r");
    char line[2048];
    int port = -1;
    while (f && fgets(line, sizeof line, f)) {
        char *at = strstr(line, "(metrics http://");
        if (at && (at = strchr(at + 16, ':')))
            port = atoi(at + 1);
    }
    if (f)
        fclose(f);
    return port;
}

/* The live coordinator's status, asked with the run's operator key: the
 * counters a reopened ledger does not keep (expiries, reissues). */
static int live_status(const char *keys, const char *endpoint, uint64_t *expiries,
                       uint64_t *reissues, uint64_t *protocol_errors) {
    sf_zsec_client sec;
    void *ctx = zmq_ctx_new(), *s = NULL;
    int ok = 0;
    if (sf_zsec_client_load_any(keys, &sec, NULL) == SF_OK &&
        sf_wire_dealer_secure(ctx, endpoint, &sec, &s, NULL) == SF_OK) {
        Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT, *rep = NULL;
        Spirefleet__StatusRequest sr = SPIREFLEET__STATUS_REQUEST__INIT;
        req.body_case = SPIREFLEET__ENVELOPE__BODY_STATUS_REQUEST;
        req.status_request = &sr;
        if (sf_wire_ask(s, "the coordinator", &req, 10000, &rep, NULL) == SF_OK && rep &&
            rep->body_case == SPIREFLEET__ENVELOPE__BODY_STATUS_REPLY) {
            *expiries = rep->status_reply->lease_expiries;
            *reissues = rep->status_reply->reissues;
            *protocol_errors = rep->status_reply->protocol_errors;
            ok = 1;
        }
        if (rep)
            sf_wire_free(rep);
    }
    if (s)
        zmq_close(s);
    zmq_ctx_term(ctx);
    return ok ? 0 : -1;
}

static void emit(const char *name, double value, const char *unit, int workers) {
    printf("{\"bench\":\"scale.%s\",\"value\":%.3f,\"unit\":\"%s\",\"workers\":%d}\n", name, value,
           unit, workers);
}

static double pct(double *v, uint64_t n, double q) {
    if (!n)
        return -1;
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    uint64_t k = (uint64_t)(q * (double)n);
    return v[k >= n ? n - 1 : k];
}

static void usage(void) {
    fprintf(stderr, "usage: bench-fleet-scale SF_FLEET [--workers N] [--seconds S] "
                    "[--job-seconds J] [--heartbeat-ms H] [--abandon P] [--forget P] "
                    "[--disconnect P] [--dir PARENT]\n");
    exit(2);
}

int main(int argc, char **argv) {
    if (argc < 2)
        usage();
    const char *fleet = argv[1], *parent = "/tmp";
    opts o = {.workers = 1000,
              .seconds = 20,
              .job_seconds = 10,
              .heartbeat_ms = 1000,
              .abandon = 0.01,
              .forget = 0.01,
              .disconnect = 0.005};
    /* each flag takes a value: an int (i) or a double (d) option */
    const struct {
        const char *flag;
        int *i;
        double *d;
    } flags[] = {{"--workers", &o.workers, NULL},         {"--seconds", NULL, &o.seconds},
                 {"--job-seconds", NULL, &o.job_seconds}, {"--heartbeat-ms", &o.heartbeat_ms, NULL},
                 {"--abandon", NULL, &o.abandon},         {"--forget", NULL, &o.forget},
                 {"--disconnect", NULL, &o.disconnect}};
    const size_t nflags = sizeof flags / sizeof *flags;
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 >= argc)
            usage();
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--dir")) {
            parent = v;
            continue;
        }
        size_t f = 0;
        while (f < nflags && strcmp(k, flags[f].flag))
            f++;
        if (f == nflags)
            usage();
        if (flags[f].i)
            *flags[f].i = atoi(v);
        else
            *flags[f].d = atof(v);
    }
    if (o.workers < 1 || o.seconds <= 0 || o.job_seconds <= 0 || o.heartbeat_ms < 10)
        usage();
    o.keys = o.workers / 100 > 1 ? o.workers / 100 : 1;
    /* jobs: enough that the run never completes in the window */
    g_njobs = (uint64_t)((double)o.workers * (o.seconds + 120) / o.job_seconds * 2) + 1000;

    char tmp[900];
    snprintf(tmp, sizeof tmp, "%s/sf-bench-scale-XXXXXX", parent);
    if (!mkdtemp(tmp))
        return 1;
    char run[1100], keys[1200], cfgpath[1200], log[1200];
    snprintf(run, sizeof run, "%s/run", tmp);
    snprintf(keys, sizeof keys, "%s/keys", run);
    snprintf(cfgpath, sizeof cfgpath, "%s/scale.yaml", tmp);
    snprintf(log, sizeof log, "%s/coordinator.log", tmp);
    sf_err e = {0};
    mkdir(run, 0700);
    if (sf_zsec_ensure_dir(keys, &e) < 0) {
        fprintf(stderr, "bench-fleet-scale: %s\n", e.msg);
        return 1;
    }
    for (int k = 1; k < o.keys; k++) {
        char name[32];
        snprintf(name, sizeof name, "sim%d", k);
        if (sf_zsec_add_key(keys, name, SF_ZSEC_CLIENTS_DIR, &e) < 0) {
            fprintf(stderr, "bench-fleet-scale: %s\n", e.msg);
            return 1;
        }
    }
    /* 10 s, or ten heartbeats when they are slower */
    int lease_s = o.heartbeat_ms > 1000 ? o.heartbeat_ms / 100 : 10;
    FILE *cf = fopen(cfgpath, "w");
    if (!cf)
        return 1;
    fprintf(cf,
            "run: {name: scale, output_dir: '%s'}\n"
            "seeds: {count: %llu, job_size: 1}\n"
            "coordinator: {endpoint: 'tcp://127.0.0.1:*', lease_seconds: %d,"
            " heartbeat_ms: %d}\n"
            "security: {mode: curve, audit_fraction: 0, audit_first_jobs: 0,"
            " max_workers_per_key: 256}\n",
            run, (unsigned long long)g_njobs, lease_s, o.heartbeat_ms);
    fclose(cf);

    char *const args[] = {(char *)fleet,       "coordinator",    cfgpath, "--bind",
                          "tcp://127.0.0.1:*", "--metrics-port", "*",     NULL};
    char endpoint[256];
    pid_t co = sf_proc_spawn_server(args, log, "serving on ", endpoint);
    if (co < 0)
        return 1;
    int mport = metrics_port(log);
    usleep(500000);
    double rss_idle = sf_proc_rss_mib(co); /* the job table and ledger, no peer yet */
    int fds_idle = count_fds(co);

    size_t shsize = sizeof(shared) + g_njobs;
    g_sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED)
        return 1;
    g_stored = (_Atomic uint8_t *)((char *)g_sh + sizeof(shared));

    int nproc = (o.workers + SIM_PER_PROC - 1) / SIM_PER_PROC;
    pid_t sims[64];
    uint64_t t_start = sf_now_ns();
    fflush(NULL);
    for (int p = 0; p < nproc && p < 64; p++) {
        int first = p * o.workers / nproc, last = (p + 1) * o.workers / nproc;
        sims[p] = fork();
        if (sims[p] == 0)
            sim_process(&o, endpoint, keys, tmp, first, last - first);
    }
    /* the handshakes: everyone welcomed, or 120 s */
    while (atomic_load(&g_sh->welcomed) + atomic_load(&g_sh->refused) < o.workers &&
           (double)(sf_now_ns() - t_start) / 1e9 < 120)
        usleep(20000);
    double handshake_s = (double)(sf_now_ns() - t_start) / 1e9;
    int welcomed = atomic_load(&g_sh->welcomed);
    /* settle for one job length, then measure */
    usleep((useconds_t)(o.job_seconds * 1e6));
    double cpu0 = cpu_s(co);
    uint64_t t0 = sf_now_ns();
    atomic_store(&g_sh->measuring, 1);
    double rss_peak = 0, metrics_ms = -1;
    size_t metrics_bytes = 0;
    int fds_peak = 0, fetched = 0;
    while ((double)(sf_now_ns() - t0) / 1e9 < o.seconds) {
        usleep(250000);
        double r = sf_proc_rss_mib(co);
        int f = count_fds(co);
        rss_peak = r > rss_peak ? r : rss_peak;
        fds_peak = f > fds_peak ? f : fds_peak;
        if (!fetched && (double)(sf_now_ns() - t0) / 1e9 > o.seconds / 2) {
            fetched = 1;
            metrics_ms = mport > 0 ? get_metrics(mport, &metrics_bytes) : -1;
        }
    }
    atomic_store(&g_sh->measuring, 0);
    double secs = (double)(sf_now_ns() - t0) / 1e9;
    double co_cpu = (cpu_s(co) - cpu0) / secs;
    double rss = sf_proc_rss_mib(co);
    int fds = count_fds(co);
    atomic_store(&g_sh->stop, 1);
    for (int p = 0; p < nproc && p < 64; p++)
        waitpid(sims[p], NULL, 0);
    /* the simulators' CPU (the coordinator is not reaped yet), over the
     * whole run: handshakes, settling and the window */
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    double sim_cpu = ((double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6) /
                     ((double)(sf_now_ns() - t_start) / 1e9);
    uint64_t expiries = 0, reissues = 0, perrs = 0;
    if (live_status(keys, endpoint, &expiries, &reissues, &perrs) < 0)
        fprintf(stderr, "bench-fleet-scale: the coordinator did not answer a status request\n");
    kill(co, SIGTERM);
    int status = 0;
    waitpid(co, &status, 0);

    /* The ledger: every job acknowledged stored is done, with its shard,
     * exactly once. */
    sf_run_config cfg;
    sf_coordinator *c;
    sf_coord_status st = {0};
    sf_coord_opts co_o = {.bind = "tcp://127.0.0.1:*", .metrics_port = 0};
    if (sf_config_load(cfgpath, &cfg, &e) < 0 || sf_coordinator_open(&cfg, &co_o, &c, &e) < 0) {
        fprintf(stderr, "bench-fleet-scale: the ledger: %s\n", e.msg);
        return 1;
    }
    sf_coordinator_status(c, &st);
    sf_coordinator_close(c);
    uint64_t acked = 0, dup = 0, lost = 0;
    for (uint64_t j = 0; j < g_njobs; j++) {
        uint8_t n = atomic_load(&g_stored[j]);
        if (!n)
            continue;
        acked++;
        dup += n > 1;
        char name[128], path[1400];
        sf_shard_name("scale", j + 1, name, sizeof name);
        snprintf(path, sizeof path, "%s/shards/%s", run, name);
        struct stat sb;
        lost += stat(path, &sb) != 0;
    }
    if (st.jobs_done < acked)
        lost += acked - st.jobs_done > lost ? acked - st.jobs_done - lost : 0;

    uint64_t nl = atomic_load(&g_sh->nlat);
    nl = nl < SIM_MAX_SAMPLES ? nl : SIM_MAX_SAMPLES;
    double p50 = pct(g_sh->lat_ms, nl, 0.5), p99 = pct(g_sh->lat_ms, nl, 0.99);
    double hbs = (double)atomic_load(&g_sh->heartbeats) / secs;
    double ups = (double)atomic_load(&g_sh->uploads) / secs;
    double lps = (double)atomic_load(&g_sh->leases) / secs;
    int n = o.workers;
    emit("welcomed", welcomed, "workers", n);
    emit("handshake_s", handshake_s, "s", n);
    emit("lease_p50_ms", p50, "ms", n);
    emit("lease_p99_ms", p99, "ms", n);
    emit("leases_per_s", lps, "leases/s", n);
    emit("heartbeats_per_s", hbs, "heartbeats/s", n);
    emit("uploads_per_s", ups, "uploads/s", n);
    emit("coordinator_cpu", co_cpu, "cores", n);
    emit("simulator_cpu", sim_cpu, "cores", n);
    emit("coordinator_rss_idle_mib", rss_idle, "MiB", n);
    emit("coordinator_rss_per_worker_kib", (rss - rss_idle) * 1024 / welcomed, "KiB", n);
    emit("coordinator_rss_mib", rss, "MiB", n);
    emit("coordinator_rss_peak_mib", rss_peak, "MiB", n);
    emit("coordinator_fds", fds, "fds", n);
    emit("coordinator_fds_peak", fds_peak, "fds", n);
    emit("metrics_ms", metrics_ms, "ms", n);
    emit("lost_jobs", (double)lost, "jobs", n);
    emit("duplicated_jobs", (double)dup, "jobs", n);
    printf("scale: %d workers (%d keys, %d welcomed in %.1f s), %.0f s measured: lease p50 %.2f ms "
           "p99 %.2f ms, %.0f leases/s, %.0f heartbeats/s, %.1f uploads/s; coordinator %.2f "
           "cores (simulator %.2f), RSS %.1f MiB (peak %.1f; %.1f before any worker, %llu jobs), "
           "%d fds (%d before); /metrics %s in %.1f ms (%zu "
           "bytes); "
           "ledger: %llu jobs done, %llu acknowledged stored, %llu lost, %llu duplicated; "
           "failures: %llu abandoned, %llu forgotten, %llu disconnects, %llu rejected, %llu "
           "deferred, %llu duplicate acks, %llu waits, %d refused; lease expiries %llu, "
           "reissues %llu, protocol errors %llu\n",
           n, o.keys, welcomed, handshake_s, secs, p50, p99, lps, hbs, ups, co_cpu, sim_cpu, rss,
           rss_peak, rss_idle, (unsigned long long)g_njobs, fds, fds_idle,
           metrics_ms >= 0 ? "answered" : "NOT answered", metrics_ms, metrics_bytes,
           (unsigned long long)st.jobs_done, (unsigned long long)acked, (unsigned long long)lost,
           (unsigned long long)dup, (unsigned long long)atomic_load(&g_sh->abandoned),
           (unsigned long long)atomic_load(&g_sh->forgotten),
           (unsigned long long)atomic_load(&g_sh->disconnects),
           (unsigned long long)atomic_load(&g_sh->rejected),
           (unsigned long long)atomic_load(&g_sh->deferred),
           (unsigned long long)atomic_load(&g_sh->dup_acks),
           (unsigned long long)atomic_load(&g_sh->waits), atomic_load(&g_sh->refused),
           (unsigned long long)expiries, (unsigned long long)reissues, (unsigned long long)perrs);
    if (atomic_load(&g_sh->have_reject))
        printf("scale: first rejected upload: %s\n", g_sh->first_reject);
    int rc = welcomed == n && lost == 0 && dup == 0 && metrics_ms >= 0 ? 0 : 1;
    if (!rc)
        bench_rm_rf(tmp);
    else
        fprintf(stderr, "bench-fleet-scale: kept %s (the coordinator's log: %s)\n", tmp, log);
    munmap(g_sh, shsize);
    return rc;
}
