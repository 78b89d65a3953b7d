/*
 * zsec.h — CURVE security for the fleet's ZeroMQ sockets, failing closed:
 * key files, a ZAP handler with an allow-list, operator keys, and the
 * per-message identity check.
 *
 * Keys (RFC 32/Z85 text, libzmq's zmq_curve_keypair over libsodium)
 *   A public key file holds one line: the 40-character Z85 public key
 *   (lines starting with '#' and blank lines are skipped). A secret key file
 *   holds the 40-character Z85 secret key; the public key is derived from it
 *   (zmq_curve_public). A secret file that group or others may read is
 *   refused, naming the file and its mode. A key's id (sf_zsec_key_id) is
 *   the first 16 hex digits of the SHA-256 of its 32 raw bytes: what logs,
 *   status and shard manifests show.
 *
 * A key directory (SF_ZSEC_* names below; `sf-fleet keygen DIR` writes one)
 *   server.key / server.pub   the coordinator's and gpu-evald's keypair
 *   worker.key / worker.pub   a worker's keypair (its public key in clients/)
 *   operator.key / .pub       an operator's keypair (its public key in operators/)
 *   clients/NAME.pub          the allow-list: keys that may connect
 *   operators/NAME.pub        keys that may also send control messages (Stop,
 *                             quarantine); an operator key may connect too
 *   A client needs server.pub and its own .key; a server needs server.key,
 *   clients/ and operators/.
 *
 * Server side (sf_zsec_server)
 *   libzmq 4.3 lets a CURVE client with ANY key in when no ZAP handler is
 *   bound, so sf_zsec_server_open() binds inproc://zeromq.zap.01 on the
 *   context and starts the handler thread before the caller makes any CURVE
 *   server socket (sf_zsec_server_apply refuses to run otherwise). The
 *   handler admits a handshake only when the client's key is in clients/ or
 *   operators/, and reports the key as the connection's User-Id. The lists
 *   are read again when a file in them changes: the handler compares the
 *   files' signature (names, sizes, mtimes) with the lists' before it
 *   judges each handshake, so a key added or removed counts at the next
 *   handshake even on a server no admitted peer talks to; the owner's
 *   thread checks at most once per second from sf_zsec_server_check (every
 *   loop turn) and sf_zsec_peer; and sf_zsec_server_reload() (SIGHUP)
 *   reads them at once. A key removed from them is refused on its next
 *   message too, not only at its next handshake, since libzmq 4.3 cannot
 *   drop one connection of a ROUTER. If the handler thread dies,
 *   sf_zsec_peer() fails (SF_ESTATE): the caller treats it as fatal, because
 *   connections would then be let in.
 *
 * Mode none: no sf_zsec_server (NULL); sf_zsec_peer(NULL, ...) treats every
 * peer as an operator. Callers warn at every start.
 *
 * Threading: an sf_zsec_server is used by the thread that owns its sockets;
 * the handler thread shares only the lists, their signature and the counts
 * (under a mutex), and may re-read the lists itself.
 */
#ifndef SF_ZSEC_H
#define SF_ZSEC_H

#include <stdint.h>
#include <zmq.h>

#include "common/common.h"

#define SF_ZSEC_KEY_LEN 40 /* Z85 text of a 32-byte key */
#define SF_ZSEC_ID_LEN  16 /* hex digits of a key id     */

#define SF_ZSEC_SERVER_NAME   "server"
#define SF_ZSEC_WORKER_NAME   "worker"
#define SF_ZSEC_OPERATOR_NAME "operator"
#define SF_ZSEC_CLIENTS_DIR   "clients"
#define SF_ZSEC_OPERATORS_DIR "operators"

typedef struct sf_zsec_keypair {
    char pub[SF_ZSEC_KEY_LEN + 1];
    char sec[SF_ZSEC_KEY_LEN + 1];
} sf_zsec_keypair;

/* Make a keypair and write DIR/NAME.key (mode 0600) and DIR/NAME.pub
 * (0644), creating DIR (0700). Refuses to replace an existing NAME.key
 * (SF_ESTATE). `out` (may be NULL) receives the pair. SF_EIO names the
 * file. */
int sf_zsec_keygen(const char *dir, const char *name, sf_zsec_keypair *out, sf_err *err);

/* Read a public key file into pub (41 bytes). SF_EIO / SF_EFORMAT name the
 * file (and line). */
int sf_zsec_read_public(const char *path, char pub[SF_ZSEC_KEY_LEN + 1], sf_err *err);

/* Whether a secret key file of this mode and owner may be used: no one
 * but its owner may read or write it (mode & 077 == 0), or — what a
 * Kubernetes Secret volume with a pod fsGroup makes: root-owned, mode 0440
 * with the pod's group — it is owned by root and readable, not writable,
 * by its group and nothing for others (mode & 037 == 0; the rule
 * PostgreSQL applies to its server key). 1 yes, 0 no. */
int sf_zsec_secret_mode_ok(unsigned mode, unsigned owner_uid);

/* Read a secret key file (refused unless sf_zsec_secret_mode_ok: SF_ESTATE,
 * "PATH: mode 0644: a secret key must be readable by its owner only (chmod
 * 600 PATH)") and derive its public key. */
int sf_zsec_read_secret(const char *path, sf_zsec_keypair *kp, sf_err *err);

/* A key's id: 16 hex digits (17 bytes with the NUL) of SHA-256(raw key).
 * "" for a string that is not a Z85 key. */
void sf_zsec_key_id(const char *pub, char id[SF_ZSEC_ID_LEN + 1]);

/* DIR/NAME.key (made when missing, kept when there) and its public half
 * in DIR/LIST/NAME.pub (LIST SF_ZSEC_CLIENTS_DIR or SF_ZSEC_OPERATORS_DIR;
 * NULL: none): one more worker or operator. A key already in the other
 * list is refused (SF_ESTATE: adding `worker` as an operator would make
 * every worker host an operator), and so is NAME "server" with a list
 * (SF_EINVAL). */
int sf_zsec_add_key(const char *dir, const char *name, const char *list, sf_err *err);

/* A local run's key directory, made when missing: server, worker and
 * operator keypairs, clients/worker.pub, operators/operator.pub. Existing
 * keys are kept. */
int sf_zsec_ensure_dir(const char *dir, sf_err *err);

/* ---- clients --------------------------------------------------------------- */

/* A client's CURVE settings: `on` 0 means plain (mode none). */
typedef struct sf_zsec_client {
    int on;
    char server_pub[SF_ZSEC_KEY_LEN + 1];
    sf_zsec_keypair me;
} sf_zsec_client;

/* Load DIR/server.pub and DIR/NAME.key (NAME: SF_ZSEC_WORKER_NAME,
 * SF_ZSEC_OPERATOR_NAME); dir NULL or "" gives a plain client (on = 0). */
int sf_zsec_client_load(const char *dir, const char *name, sf_zsec_client *c, sf_err *err);

/* sf_zsec_client_load with NAME operator when DIR/operator.key exists,
 * else worker: what sf-fleet status / stop and sf-shard pull use. */
int sf_zsec_client_load_any(const char *dir, sf_zsec_client *c, sf_err *err);

/* Make `sock` a CURVE client of c (before zmq_connect); nothing when c is
 * NULL or plain. SF_EIO when libzmq refuses (built without CURVE). */
int sf_zsec_client_apply(const sf_zsec_client *c, void *sock, sf_err *err);

/* ---- servers --------------------------------------------------------------- */

typedef struct sf_zsec_server sf_zsec_server;

/* What a peer may do. */
enum { SF_ZSEC_REFUSED = 0, SF_ZSEC_CLIENT = 1, SF_ZSEC_OPERATOR = 2 };

typedef struct sf_zsec_counts {
    uint64_t handshakes_allowed, handshakes_denied; /* by the ZAP handler      */
    uint64_t messages_refused;                      /* revoked keys' messages  */
    uint64_t reloads;                               /* list re-reads           */
    uint32_t clients, operators;                    /* keys in the lists now   */
} sf_zsec_counts;

/* Load DIR/server.key and the lists, bind the ZAP handler on zctx and start
 * its thread. `log` (may be NULL) receives a line for each denied
 * handshake and each reload, from the handler thread or the caller's.
 * SF_EIO when inproc://zeromq.zap.01 is taken on zctx or a file cannot be
 * read (named). */
int sf_zsec_server_open(void *zctx, const char *dir, sf_log_fn log, void *log_ctx,
                        sf_zsec_server **out, sf_err *err);

/* Make `sock` a CURVE server (before zmq_bind): ZMQ_CURVE_SERVER, the
 * secret key, the ZAP domain. */
int sf_zsec_server_apply(sf_zsec_server *s, void *sock, sf_err *err);

/* The role of the peer that sent `msg` (any frame of a received message):
 * SF_ZSEC_OPERATOR or SF_ZSEC_CLIENT when its authenticated key (User-Id)
 * is in the lists now, SF_ZSEC_REFUSED when not (revoked since its
 * handshake; counted). `key` (may be NULL; 41 bytes) receives the key, ""
 * in mode none. s NULL (mode none): SF_ZSEC_OPERATOR. Returns SF_ESTATE
 * when the handler thread has died (fatal for the caller). */
int sf_zsec_peer(sf_zsec_server *s, zmq_msg_t *msg, char *key, sf_err *err);

/* SF_OK while the ZAP handler runs (or s is NULL: mode none); SF_ESTATE,
 * with the handler's reason, once its thread has stopped on its own: no
 * handshake is checked any more (libzmq 4.3 lets a CURVE client in when
 * no handler answers), so the caller must stop serving at once. Servers
 * call it every loop turn, not only when a message arrives: it is also
 * the lists' timer (at most once a second, a stat of the key files; a
 * clock read otherwise), so a change is in force, counted and logged
 * within a second on an idle server. */
int sf_zsec_server_check(sf_zsec_server *s, sf_err *err);

/* Tests of the callers' fail-closed path: make the handler thread stop as
 * its own failure would, and return once it has (s is then dead). */
void sf_zsec_server_fail_for_test(sf_zsec_server *s);

/* Refuse the key with this id (16 hex digits) from now on, whatever the
 * lists say: its handshakes and its live connections' messages (a
 * quarantined worker). Held in memory: the caller keeps it durable.
 * SF_EINVAL for a malformed id, SF_ENOMEM. */
int sf_zsec_server_deny(sf_zsec_server *s, const char *key_id, sf_err *err);

/* Read the lists again now (SIGHUP). Errors leave the old lists in force. */
int sf_zsec_server_reload(sf_zsec_server *s, sf_err *err);

void sf_zsec_server_counts(sf_zsec_server *s, sf_zsec_counts *c);

/* Stop the handler and free (NULL: no-op). Call after closing the CURVE
 * sockets and before zmq_ctx_term(). */
void sf_zsec_server_close(sf_zsec_server *s);

#endif
