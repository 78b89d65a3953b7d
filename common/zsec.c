/*
 * zsec.c — key files, the ZAP handler and the per-message identity check
 * (see zsec.h). ZAP is RFC 27 (rfc.zeromq.org/spec/27): a REP socket on
 * inproc://zeromq.zap.01 answers each handshake with a status code and the
 * user id libzmq then attaches to the connection's messages.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/io.h"
#include "common/zsec.h"

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_DOMAIN   "spirefleet"
#define MAX_KEYS     65536 /* keys in one list                       */
#define RECHECK_NS   1000000000ull
#define KEY_FILE_MAX 4096 /* a key file is one short line            */
#define ZAP_FRAMES   7    /* RFC 27 request: version .. credentials  */
#define ZSEC_PATH    1024 /* a key file's path                      */

/* DIR/NAME (NAME may hold a '%s'-free suffix such as ".key"); paths too
 * long for the buffer are cut, and then name no file that exists. */
static void path_of(char *out, size_t cap, const char *dir, const char *name, const char *ext) {
    int n = snprintf(out, cap, "%s/%s%s", dir, name, ext);
    if (n < 0 || (size_t)n >= cap)
        out[0] = 0;
}

/* ---- key files ------------------------------------------------------------- */

/* The first key-looking line of a small text file: 40 Z85 characters,
 * '#' comments and blank lines skipped. */
static int read_key_line(const char *path, char key[SF_ZSEC_KEY_LEN + 1], sf_err *err) {
    char buf[KEY_FILE_MAX + 1];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sf_err_set(err, errno == ENOENT ? SF_ENOTFOUND : SF_EIO, "%s: cannot open: %s", path,
                          strerror(errno));
    ssize_t n = read(fd, buf, KEY_FILE_MAX);
    close(fd);
    if (n < 0)
        return sf_err_set(err, SF_EIO, "%s: cannot read: %s", path, strerror(errno));
    buf[n] = 0;
    int line = 0;
    for (char *p = buf, *next; p && *p; p = next) {
        next = strchr(p, '\n');
        if (next)
            *next++ = 0;
        line++;
        size_t len = strcspn(p, "\r");
        p[len] = 0;
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            p[--len] = 0;
        if (len == 0 || p[0] == '#')
            continue;
        uint8_t raw[32];
        if (len != SF_ZSEC_KEY_LEN || !zmq_z85_decode(raw, p))
            return sf_err_set(err, SF_EFORMAT,
                              "%s:%d: not a CURVE key (40 Z85 characters, as sf-fleet keygen "
                              "writes)",
                              path, line);
        memcpy(key, p, SF_ZSEC_KEY_LEN + 1);
        sodium_memzero(buf, sizeof buf);
        return SF_OK;
    }
    return sf_err_set(err, SF_EFORMAT, "%s: holds no key", path);
}

int sf_zsec_read_public(const char *path, char pub[SF_ZSEC_KEY_LEN + 1], sf_err *err) {
    return read_key_line(path, pub, err);
}

int sf_zsec_secret_mode_ok(unsigned mode, unsigned owner_uid) {
    return (mode & 077) == 0 || (owner_uid == 0 && (mode & 037) == 0);
}

int sf_zsec_read_secret(const char *path, sf_zsec_keypair *kp, sf_err *err) {
    struct stat st;
    if (stat(path, &st) != 0)
        return sf_err_set(err, errno == ENOENT ? SF_ENOTFOUND : SF_EIO, "%s: %s", path,
                          strerror(errno));
    if (!sf_zsec_secret_mode_ok((unsigned)st.st_mode, (unsigned)st.st_uid))
        return sf_err_set(err, SF_ESTATE,
                          "%s: mode %04o: a secret key must be readable by its owner only, "
                          "and writable by no one else (chmod 600 %s)",
                          path, (unsigned)(st.st_mode & 07777), path);
    int rc = read_key_line(path, kp->sec, err);
    if (rc < 0)
        return rc;
    if (zmq_curve_public(kp->pub, kp->sec) != 0)
        return sf_err_set(err, SF_EUNSUPPORTED, "%s: libzmq cannot derive a public key: %s", path,
                          zmq_strerror(zmq_errno()));
    return SF_OK;
}

void sf_zsec_key_id(const char *pub, char id[SF_ZSEC_ID_LEN + 1]) {
    uint8_t raw[32], h[32];
    id[0] = 0;
    if (!pub || strlen(pub) != SF_ZSEC_KEY_LEN || !zmq_z85_decode(raw, pub))
        return;
    crypto_hash_sha256(h, raw, sizeof raw);
    char hex[65];
    sf_hex(h, 32, hex);
    memcpy(id, hex, SF_ZSEC_ID_LEN);
    id[SF_ZSEC_ID_LEN] = 0;
}

static int write_text(const char *path, const char *text, mode_t mode, sf_err *err) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return sf_err_set(err, errno == EEXIST ? SF_ESTATE : SF_EIO, "%s: cannot create: %s", path,
                          strerror(errno));
    size_t len = strlen(text);
    int ok = write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
    int e = errno;
    close(fd);
    if (!ok) {
        unlink(path);
        return sf_err_set(err, SF_EIO, "%s: cannot write: %s", path, strerror(e));
    }
    return SF_OK;
}

static int make_dir(const char *dir, sf_err *err) {
    if (sf_mkdir_p(dir) < 0)
        return sf_err_set(err, SF_EIO, "%s: cannot create: %s", dir, strerror(errno));
    return SF_OK;
}

int sf_zsec_keygen(const char *dir, const char *name, sf_zsec_keypair *out, sf_err *err) {
    sf_zsec_keypair kp;
    if (zmq_curve_keypair(kp.pub, kp.sec) != 0)
        return sf_err_set(err, SF_EUNSUPPORTED, "libzmq cannot make CURVE keys: %s",
                          zmq_strerror(zmq_errno()));
    int rc = make_dir(dir, err);
    if (rc < 0)
        return rc;
    chmod(dir, 0700);
    char path[ZSEC_PATH], text[200];
    path_of(path, sizeof path, dir, name, ".key");
    snprintf(text, sizeof text, "# spirefleet CURVE secret key (%s); keep it private\n%s\n", name,
             kp.sec);
    rc = write_text(path, text, 0600, err);
    if (rc < 0)
        return rc;
    path_of(path, sizeof path, dir, name, ".pub");
    snprintf(text, sizeof text, "# spirefleet CURVE public key (%s)\n%s\n", name, kp.pub);
    unlink(path); /* a stale public half of a key that is gone */
    rc = write_text(path, text, 0644, err);
    sodium_memzero(text, sizeof text);
    if (rc == SF_OK && out)
        *out = kp;
    sodium_memzero(&kp, sizeof kp);
    return rc;
}

int sf_zsec_add_key(const char *dir, const char *name, const char *list, sf_err *err) {
    char path[ZSEC_PATH];
    if (list && !strcmp(name, SF_ZSEC_SERVER_NAME))
        return sf_err_set(err, SF_EINVAL,
                          "%s: '%s' is the server's key; a client or operator key needs another "
                          "name",
                          dir, name);
    if (list) { /* a key is in one list only: adding it to the other would change what it may do */
        const char *other =
            !strcmp(list, SF_ZSEC_CLIENTS_DIR) ? SF_ZSEC_OPERATORS_DIR : SF_ZSEC_CLIENTS_DIR;
        char odir[ZSEC_PATH];
        path_of(odir, sizeof odir, dir, other, "");
        path_of(path, sizeof path, odir, name, ".pub");
        if (access(path, F_OK) == 0)
            return sf_err_set(err, SF_ESTATE,
                              "%s: key '%s' is already listed in %s/; give the new key another "
                              "name (or move its .pub by hand to change what it may do)",
                              path, name, other);
    }
    path_of(path, sizeof path, dir, name, ".key");
    sf_zsec_keypair kp;
    int rc = access(path, F_OK) == 0 ? sf_zsec_read_secret(path, &kp, err)
                                     : sf_zsec_keygen(dir, name, &kp, err);
    if (rc < 0 || !list)
        return rc;
    char ldir[ZSEC_PATH], text[120];
    path_of(ldir, sizeof ldir, dir, list, "");
    if ((rc = make_dir(ldir, err)) < 0)
        return rc;
    path_of(path, sizeof path, ldir, name, ".pub");
    if (access(path, F_OK) == 0)
        return SF_OK;
    snprintf(text, sizeof text, "# %s\n%s\n", name, kp.pub);
    sodium_memzero(&kp, sizeof kp);
    return write_text(path, text, 0644, err);
}

int sf_zsec_ensure_dir(const char *dir, sf_err *err) {
    int rc = sf_zsec_add_key(dir, SF_ZSEC_SERVER_NAME, NULL, err);
    if (rc == SF_OK)
        rc = sf_zsec_add_key(dir, SF_ZSEC_WORKER_NAME, SF_ZSEC_CLIENTS_DIR, err);
    if (rc == SF_OK)
        rc = sf_zsec_add_key(dir, SF_ZSEC_OPERATOR_NAME, SF_ZSEC_OPERATORS_DIR, err);
    return rc;
}

/* ---- clients --------------------------------------------------------------- */

int sf_zsec_client_load(const char *dir, const char *name, sf_zsec_client *c, sf_err *err) {
    memset(c, 0, sizeof *c);
    if (!dir || !dir[0])
        return SF_OK;
    char path[ZSEC_PATH];
    path_of(path, sizeof path, dir, SF_ZSEC_SERVER_NAME, ".pub");
    int rc = sf_zsec_read_public(path, c->server_pub, err);
    if (rc == SF_OK) {
        path_of(path, sizeof path, dir, name, ".key");
        rc = sf_zsec_read_secret(path, &c->me, err);
    }
    if (rc < 0) {
        memset(c, 0, sizeof *c);
        return rc;
    }
    c->on = 1;
    return SF_OK;
}

int sf_zsec_client_load_any(const char *dir, sf_zsec_client *c, sf_err *err) {
    char path[ZSEC_PATH];
    path_of(path, sizeof path, dir ? dir : "", SF_ZSEC_OPERATOR_NAME, ".key");
    int op = dir && dir[0] && access(path, F_OK) == 0;
    return sf_zsec_client_load(dir, op ? SF_ZSEC_OPERATOR_NAME : SF_ZSEC_WORKER_NAME, c, err);
}

int sf_zsec_client_apply(const sf_zsec_client *c, void *sock, sf_err *err) {
    if (!c || !c->on)
        return SF_OK;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, c->server_pub, SF_ZSEC_KEY_LEN) != 0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, c->me.pub, SF_ZSEC_KEY_LEN) != 0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, c->me.sec, SF_ZSEC_KEY_LEN) != 0)
        return sf_err_set(err, SF_EIO, "cannot make a CURVE client socket: %s",
                          zmq_strerror(zmq_errno()));
    return SF_OK;
}

/* ---- servers --------------------------------------------------------------- */

typedef struct keylist {
    uint8_t (*keys)[32];
    uint32_t n;
} keylist;

struct sf_zsec_server {
    char dir[ZSEC_PATH];
    sf_zsec_keypair me;
    void *zap;     /* the handler thread's REP socket                   */
    void *wake_rx; /* the handler thread's: a message here means stop    */
    void *wake_tx; /* the closer's end of the same inproc pair          */
    pthread_t thread;
    int started;
    atomic_int stop, dead;
    atomic_int fail; /* sf_zsec_server_fail_for_test: stop as a failure would */
    char why[160];   /* why the thread stopped; written before `dead` is set */
    sf_log_fn log;
    void *log_ctx;
    pthread_mutex_t lock; /* the lists and the counts */
    keylist clients, operators;
    char (*denied)[SF_ZSEC_ID_LEN + 1]; /* key ids refused whatever the lists say */
    uint32_t n_denied;
    uint64_t signature;  /* of the files the lists in force were read from */
    uint64_t failed_sig; /* of files that failed to read (0: none): not retried, not logged again */
    uint64_t last_check; /* the owner's last timed check (sf_zsec_server_check, sf_zsec_peer) */
    sf_zsec_counts counts;
};

/* A cheap signature of a list's files (names, sizes, mtimes), so a change
 * is noticed without reading every key. */
static uint64_t list_signature(const char *path) {
    uint64_t h = 1469598103934665603ull;
    struct stat st;
    if (stat(path, &st) != 0)
        return h;
    h = (h ^ (uint64_t)st.st_mtim.tv_sec) * 1099511628211ull;
    h = (h ^ (uint64_t)st.st_mtim.tv_nsec) * 1099511628211ull;
    if (!S_ISDIR(st.st_mode))
        return (h ^ (uint64_t)st.st_size) * 1099511628211ull;
    DIR *d = opendir(path);
    if (!d)
        return h;
    struct dirent *e;
    char p[ZSEC_PATH];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        path_of(p, sizeof p, path, e->d_name, "");
        uint64_t x = 0;
        for (const char *c = e->d_name; *c; c++)
            x = (x ^ (uint8_t)*c) * 1099511628211ull;
        if (stat(p, &st) == 0)
            x ^= (uint64_t)st.st_mtim.tv_sec * 31 + (uint64_t)st.st_mtim.tv_nsec * 7 +
                 (uint64_t)st.st_size;
        h += x * 0x9e3779b97f4a7c15ull; /* order-free: readdir's order varies */
    }
    closedir(d);
    return h;
}

static int list_add(keylist *l, const char *z85) {
    if (l->n == MAX_KEYS)
        return -1;
    if (l->n % 64 == 0) {
        uint8_t(*k)[32] = realloc(l->keys, sizeof *k * (l->n + 64));
        if (!k)
            return -1;
        l->keys = k;
    }
    zmq_z85_decode(l->keys[l->n++], z85);
    return 0;
}

/* Every *.pub in the directory `path` (a missing directory is an empty
 * list); a bad file is an error naming it. */
static int list_read(const char *path, keylist *l, sf_err *err) {
    memset(l, 0, sizeof *l);
    DIR *d = opendir(path);
    if (!d) {
        if (errno == ENOENT)
            return SF_OK;
        return sf_err_set(err, SF_EIO, "%s: cannot read the key list: %s", path, strerror(errno));
    }
    struct dirent *e;
    int rc = SF_OK;
    while (rc == SF_OK && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 5 || strcmp(e->d_name + len - 4, ".pub"))
            continue;
        char p[ZSEC_PATH], key[SF_ZSEC_KEY_LEN + 1];
        path_of(p, sizeof p, path, e->d_name, "");
        rc = sf_zsec_read_public(p, key, err);
        if (rc == SF_OK && list_add(l, key) < 0)
            rc = sf_err_set(err, SF_EFULL, "%s: more than %d keys", path, MAX_KEYS);
    }
    closedir(d);
    if (rc < 0) {
        free(l->keys);
        memset(l, 0, sizeof *l);
    }
    return rc;
}

static int list_has(const keylist *l, const uint8_t raw[32]) {
    for (uint32_t i = 0; i < l->n; i++)
        if (!memcmp(l->keys[i], raw, 32))
            return 1;
    return 0;
}

static uint64_t signature_of(const sf_zsec_server *s) {
    char a[ZSEC_PATH], b[ZSEC_PATH];
    path_of(a, sizeof a, s->dir, SF_ZSEC_CLIENTS_DIR, "");
    path_of(b, sizeof b, s->dir, SF_ZSEC_OPERATORS_DIR, "");
    return list_signature(a) * 3 + list_signature(b);
}

int sf_zsec_server_reload(sf_zsec_server *s, sf_err *err) {
    char a[ZSEC_PATH], b[ZSEC_PATH];
    path_of(a, sizeof a, s->dir, SF_ZSEC_CLIENTS_DIR, "");
    path_of(b, sizeof b, s->dir, SF_ZSEC_OPERATORS_DIR, "");
    uint64_t sig = signature_of(s);
    keylist c, o;
    int rc = list_read(a, &c, err);
    if (rc < 0)
        return rc;
    if ((rc = list_read(b, &o, err)) < 0) {
        free(c.keys);
        return rc;
    }
    pthread_mutex_lock(&s->lock);
    free(s->clients.keys);
    free(s->operators.keys);
    s->clients = c;
    s->operators = o;
    s->signature = sig;
    int first = s->counts.reloads++ == 0;
    s->counts.clients = c.n;
    s->counts.operators = o.n;
    pthread_mutex_unlock(&s->lock);
    if (!first) /* a change while serving: say what is in force now */
        sf_log(s->log, s->log_ctx, "security: %s reloaded: %u client key(s), %u operator key(s)",
               s->dir, c.n, o.n);
    return SF_OK;
}

/* Read the lists again when their files changed since they were read (or
 * since a read of them failed): from the handler thread before it judges a
 * handshake, and from the owner's thread on its timer. The signature is
 * taken before the files are read, so the lists in force are never older
 * than the signature stored with them; two threads reloading at once both
 * read whole lists and swap them under the lock. A read that fails keeps
 * the old lists, is logged once, and is tried again when the files change
 * again (a .pub caught half-written reads once it is complete). */
static void reload_if_changed(sf_zsec_server *s) {
    uint64_t sig = signature_of(s);
    pthread_mutex_lock(&s->lock);
    int stale = sig != s->signature && sig != s->failed_sig;
    pthread_mutex_unlock(&s->lock);
    if (!stale)
        return;
    sf_err e = {0};
    if (sf_zsec_server_reload(s, &e) == SF_OK)
        return;
    pthread_mutex_lock(&s->lock);
    s->failed_sig = sig;
    pthread_mutex_unlock(&s->lock);
    sf_log(s->log, s->log_ctx, "security: keeping the old key lists: %s", e.msg);
}

/* The owner thread's timed check: at most once per RECHECK_NS, so that a
 * change reaches the lists (and the counts, and the log) within a second
 * even when no handshake and no message comes. */
static void recheck_due(sf_zsec_server *s) {
    uint64_t now = sf_now_ns();
    if (now - s->last_check < RECHECK_NS)
        return;
    s->last_check = now;
    reload_if_changed(s);
}

static int role_of(sf_zsec_server *s, const uint8_t raw[32]) {
    pthread_mutex_lock(&s->lock);
    int role = list_has(&s->operators, raw) ? SF_ZSEC_OPERATOR
               : list_has(&s->clients, raw) ? SF_ZSEC_CLIENT
                                            : SF_ZSEC_REFUSED;
    if (role != SF_ZSEC_REFUSED && s->n_denied) {
        char z85[SF_ZSEC_KEY_LEN + 1], id[SF_ZSEC_ID_LEN + 1];
        zmq_z85_encode(z85, raw, 32);
        sf_zsec_key_id(z85, id);
        for (uint32_t i = 0; i < s->n_denied; i++)
            if (!strcmp(s->denied[i], id))
                role = SF_ZSEC_REFUSED;
    }
    pthread_mutex_unlock(&s->lock);
    return role;
}

int sf_zsec_server_deny(sf_zsec_server *s, const char *key_id, sf_err *err) {
    if (!key_id || strlen(key_id) != SF_ZSEC_ID_LEN ||
        strspn(key_id, "0123456789abcdef") != SF_ZSEC_ID_LEN)
        return sf_err_set(err, SF_EINVAL, "'%.40s' is not a key id (16 lower-case hex digits)",
                          key_id ? key_id : "");
    pthread_mutex_lock(&s->lock);
    int rc = SF_OK, seen = 0;
    for (uint32_t i = 0; i < s->n_denied; i++)
        seen |= !strcmp(s->denied[i], key_id);
    if (!seen) {
        char(*d)[SF_ZSEC_ID_LEN + 1] = realloc(s->denied, sizeof *d * (s->n_denied + 1));
        if (!d) {
            rc = sf_err_set(err, SF_ENOMEM, "out of memory");
        } else {
            s->denied = d;
            memcpy(s->denied[s->n_denied++], key_id, SF_ZSEC_ID_LEN + 1);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Answer one ZAP request (frames already read). */
static void zap_answer(sf_zsec_server *s, zmq_msg_t *f, int nf) {
    const char *status = "400", *text = "malformed ZAP request";
    char user[SF_ZSEC_KEY_LEN + 1] = "";
    if (nf == ZAP_FRAMES && zmq_msg_size(&f[0]) == 3 && !memcmp(zmq_msg_data(&f[0]), "1.0", 3)) {
        int curve = zmq_msg_size(&f[5]) == 5 && !memcmp(zmq_msg_data(&f[5]), "CURVE", 5);
        if (!curve || zmq_msg_size(&f[6]) != 32) {
            text = "only CURVE is accepted";
        } else {
            const uint8_t *raw = zmq_msg_data(&f[6]);
            zmq_z85_encode(user, raw, 32);
            /* judged against the lists as they are on disk now: a key
             * added (or removed) a moment ago counts at once, even on a
             * server no admitted peer talks to */
            reload_if_changed(s);
            if (role_of(s, raw) != SF_ZSEC_REFUSED) {
                status = "200";
                text = "OK";
            } else {
                text = "key not in the allow-list";
            }
        }
    }
    int ok = !strcmp(status, "200");
    pthread_mutex_lock(&s->lock);
    if (ok)
        s->counts.handshakes_allowed++;
    else
        s->counts.handshakes_denied++;
    pthread_mutex_unlock(&s->lock);
    if (!ok) {
        char id[SF_ZSEC_ID_LEN + 1];
        sf_zsec_key_id(user, id);
        sf_log(s->log, s->log_ctx, "security: refused a connection (key id %s): %s",
               id[0] ? id : "none", text);
    }
    /* reply: version, request id, status code, status text, user id, metadata */
    zmq_send(s->zap, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(s->zap, nf >= 2 ? zmq_msg_data(&f[1]) : "", nf >= 2 ? zmq_msg_size(&f[1]) : 0,
             ZMQ_SNDMORE);
    zmq_send(s->zap, status, 3, ZMQ_SNDMORE);
    zmq_send(s->zap, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(s->zap, ok ? user : "", ok ? SF_ZSEC_KEY_LEN : 0, ZMQ_SNDMORE);
    zmq_send(s->zap, "", 0, 0);
}

static void *zap_thread(void *arg) {
    sf_zsec_server *s = arg;
    while (!atomic_load(&s->stop)) {
        zmq_pollitem_t it[2] = {{s->zap, 0, ZMQ_POLLIN, 0}, {s->wake_rx, 0, ZMQ_POLLIN, 0}};
        int n = zmq_poll(it, 2, 1000);
        if (n < 0) {
            if (zmq_errno() == EINTR)
                continue;
            break;
        }
        if (atomic_load(&s->fail)) {
            errno = EFAULT;
            break;
        }
        if (n == 0 || (it[1].revents & ZMQ_POLLIN) || !(it[0].revents & ZMQ_POLLIN))
            continue; /* woken to stop: the loop's test */
        zmq_msg_t f[ZAP_FRAMES + 1];
        int nf = 0, more = 1, bad = 0;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, s->zap, 0) < 0) {
                zmq_msg_close(&m);
                bad = 1;
                break;
            }
            more = zmq_msg_more(&m);
            if (nf < ZAP_FRAMES + 1)
                f[nf++] = m;
            else
                zmq_msg_close(&m);
        }
        if (!bad)
            zap_answer(s, f, nf);
        for (int i = 0; i < nf; i++)
            zmq_msg_close(&f[i]);
        if (bad && zmq_errno() != EINTR)
            break;
    }
    if (!atomic_load(&s->stop)) {
        snprintf(s->why, sizeof s->why, "%s",
                 atomic_load(&s->fail) ? "stopped by a test" : zmq_strerror(zmq_errno()));
        atomic_store(&s->dead, 1);
        sf_log(s->log, s->log_ctx, "security: the ZAP handler stopped: %s", s->why);
    }
    zmq_close(s->zap);
    zmq_close(s->wake_rx);
    s->zap = s->wake_rx = NULL;
    return NULL;
}

int sf_zsec_server_open(void *zctx, const char *dir, sf_log_fn log, void *log_ctx,
                        sf_zsec_server **out, sf_err *err) {
    *out = NULL;
    sf_zsec_server *s = calloc(1, sizeof *s);
    if (!s)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    s->log = log;
    s->log_ctx = log_ctx;
    pthread_mutex_init(&s->lock, NULL);
    char path[ZSEC_PATH];
    path_of(path, sizeof path, dir, SF_ZSEC_SERVER_NAME, ".key");
    int rc = sf_zsec_read_secret(path, &s->me, err);
    if (rc == SF_OK)
        rc = sf_zsec_server_reload(s, err);
    if (rc == SF_OK) {
        s->zap = zmq_socket(zctx, ZMQ_REP);
        int zero = 0;
        if (!s->zap)
            rc = sf_err_set(err, SF_EIO, "cannot make the ZAP socket: %s",
                            zmq_strerror(zmq_errno()));
        else if (zmq_setsockopt(s->zap, ZMQ_LINGER, &zero, sizeof zero),
                 zmq_bind(s->zap, ZAP_ENDPOINT) != 0)
            rc = sf_err_set(err, SF_EIO, "cannot bind %s: %s", ZAP_ENDPOINT,
                            zmq_strerror(zmq_errno()));
    }
    if (rc == SF_OK) { /* close() wakes the thread at once instead of at its next poll */
        char wake[64];
        snprintf(wake, sizeof wake, "inproc://sf-zsec-wake-%p", (void *)s);
        int zero = 0;
        s->wake_rx = zmq_socket(zctx, ZMQ_PAIR);
        s->wake_tx = zmq_socket(zctx, ZMQ_PAIR);
        if (!s->wake_rx || !s->wake_tx || zmq_bind(s->wake_rx, wake) != 0 ||
            zmq_setsockopt(s->wake_tx, ZMQ_LINGER, &zero, sizeof zero) != 0 ||
            zmq_connect(s->wake_tx, wake) != 0)
            rc = sf_err_set(err, SF_EIO, "cannot make the ZAP handler's wake-up pair: %s",
                            zmq_strerror(zmq_errno()));
    }
    if (rc == SF_OK) {
        if (pthread_create(&s->thread, NULL, zap_thread, s) != 0)
            rc = sf_err_set(err, SF_EIO, "cannot start the ZAP handler thread");
        else
            s->started = 1;
    }
    if (rc < 0) {
        sf_zsec_server_close(s);
        return rc;
    }
    s->last_check = sf_now_ns();
    *out = s;
    return SF_OK;
}

int sf_zsec_server_apply(sf_zsec_server *s, void *sock, sf_err *err) {
    if (!s || !s->started || atomic_load(&s->dead))
        return sf_err_set(err, SF_ESTATE, "no ZAP handler is running: refusing to serve CURVE");
    int one = 1;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) != 0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, s->me.sec, SF_ZSEC_KEY_LEN) != 0 ||
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN, strlen(ZAP_DOMAIN)) != 0)
        return sf_err_set(err, SF_EIO, "cannot make a CURVE server socket: %s",
                          zmq_strerror(zmq_errno()));
    return SF_OK;
}

int sf_zsec_server_check(sf_zsec_server *s, sf_err *err) {
    if (!s)
        return SF_OK;
    if (atomic_load(&s->dead))
        return sf_err_set(err, SF_ESTATE,
                          "the ZAP handler has stopped (%s): no CURVE handshake can be checked, "
                          "refusing to serve",
                          s->why);
    recheck_due(s);
    return SF_OK;
}

void sf_zsec_server_fail_for_test(sf_zsec_server *s) {
    if (!s || !s->started)
        return;
    atomic_store(&s->fail, 1);
    zmq_send(s->wake_tx, "", 0, ZMQ_DONTWAIT);
    while (!atomic_load(&s->dead))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
}

int sf_zsec_peer(sf_zsec_server *s, zmq_msg_t *msg, char *key, sf_err *err) {
    if (key)
        key[0] = 0;
    if (!s)
        return SF_ZSEC_OPERATOR;
    if (atomic_load(&s->dead))
        return sf_zsec_server_check(s, err);
    recheck_due(s);
    const char *user = zmq_msg_gets(msg, "User-Id");
    uint8_t raw[32];
    int role = SF_ZSEC_REFUSED;
    if (user && strlen(user) == SF_ZSEC_KEY_LEN && zmq_z85_decode(raw, user)) {
        role = role_of(s, raw);
        if (key)
            memcpy(key, user, SF_ZSEC_KEY_LEN + 1);
    }
    if (role == SF_ZSEC_REFUSED) {
        pthread_mutex_lock(&s->lock);
        s->counts.messages_refused++;
        pthread_mutex_unlock(&s->lock);
    }
    return role;
}

void sf_zsec_server_counts(sf_zsec_server *s, sf_zsec_counts *c) {
    memset(c, 0, sizeof *c);
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    *c = s->counts;
    pthread_mutex_unlock(&s->lock);
}

void sf_zsec_server_close(sf_zsec_server *s) {
    if (!s)
        return;
    atomic_store(&s->stop, 1);
    if (s->started) {
        zmq_send(s->wake_tx, "", 0, ZMQ_DONTWAIT);
        pthread_join(s->thread, NULL);
    } else {
        if (s->zap)
            zmq_close(s->zap);
        if (s->wake_rx)
            zmq_close(s->wake_rx);
    }
    if (s->wake_tx)
        zmq_close(s->wake_tx);
    pthread_mutex_destroy(&s->lock);
    free(s->clients.keys);
    free(s->operators.keys);
    free(s->denied);
    sodium_memzero(&s->me, sizeof s->me);
    free(s);
}
