/*
 * wire.h — the fleet's envelopes over ZeroMQ: every message between a
 * coordinator, its workers, operators and trainers is one packed
 * fleet.proto Spirefleet__Envelope.
 *
 *   Every ZeroMQ message body is one packed Spirefleet__Envelope whose
 *   `version` is SF_PROTOCOL_VERSION. sf_wire_decode() never trusts its input:
 *   malformed bytes, a wrong version or an empty body are errors, not crashes.
 *
 * Threading: all functions are reentrant; nothing here keeps state. A socket
 * passed in belongs to the calling thread (ZeroMQ sockets are not
 * thread-safe).
 */
#ifndef SF_FLEET_WIRE_H
#define SF_FLEET_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/zsec.h"
#include "proto/fleet.pb-c.h"

#define SF_PROTOCOL_VERSION 1

/* Largest fleet message a coordinator accepts (bytes): a 1 MiB ShardChunk
 * plus its envelope fits many times over. A peer sending more is
 * disconnected by ZeroMQ (ZMQ_MAXMSGSIZE) before anything is allocated for
 * it, so one bad client cannot exhaust the coordinator's memory. */
#define SF_FLEET_MAX_MSG (8 << 20)

/* Bytes of shard data in one ShardChunk (worker upload) or ShardData
 * (coordinator reply to a ShardFetch, which may ask for less). */
#define SF_FLEET_CHUNK (1u << 20)
_Static_assert(SF_FLEET_CHUNK + 4096 < SF_FLEET_MAX_MSG, "a chunk must fit a fleet message");

/* JobFailed.reason of a worker that abandons its job to shut down (SIGTERM):
 * the job is re-issued and not counted as failing. */
#define SF_JOB_ABANDONED "worker shutting down"

/* Whether `endpoint` can join fleet processes: "tcp://HOST:PORT" (PORT
 * 1..65535, or '*' for any free port when binding) or "ipc://PATH" (PATH at
 * most 107 bytes, the Unix socket limit). inproc:// is refused: it reaches
 * only threads of one process. Returns NULL when fine, else a static
 * sentence saying what is wrong (for "ENDPOINT: <sentence>" messages). */
const char *sf_endpoint_problem(const char *endpoint);

/* Pack `env` (its version is forced to SF_PROTOCOL_VERSION) into a new heap
 * buffer; *out and *len receive it, the caller frees it with free(). */
int sf_wire_encode(Spirefleet__Envelope *env, uint8_t **out, size_t *len);

/* Decode untrusted bytes. On success *out is an unpacked envelope the caller
 * frees with sf_wire_free(). Errors: SF_EFORMAT (not a valid envelope or no
 * body), SF_EVERSION (other protocol version; *out is freed). */
int sf_wire_decode(const uint8_t *data, size_t len, Spirefleet__Envelope **out, sf_err *err);

void sf_wire_free(Spirefleet__Envelope *env);

/* Send one envelope on a ZeroMQ socket: for a ROUTER, `identity` (len > 0)
 * is sent first as the routing frame. Returns SF_OK, SF_ENOMEM, or SF_EIO
 * with errno set to ZeroMQ's reason (zmq_strerror(errno)). Never blocks
 * when `dontwait` is set (SF_EFULL if the socket would block). */
int sf_wire_send(void *socket, const uint8_t *identity, size_t identity_len,
                 Spirefleet__Envelope *env, int dontwait);

/* The field name of an envelope's body ("status_request", "shard_ack"),
 * for messages; "no body" when none is set. Static storage. */
const char *sf_wire_body_name(const Spirefleet__Envelope *env);

/* ---------------------------------------------------------------------------
 * Talking to a coordinator from a DEALER
 *
 * One error convention for every client of a coordinator (sf-fleet status
 * and stop, sf-shard pull, the worker): a message starts with the endpoint
 * and says what failed, with ZeroMQ's or the decoder's reason:
 *   "tcp://10.0.0.1:5555: no answer to status_request within 3000 ms"
 *   "tcp://10.0.0.1:5555: cannot send shard_fetch: Resource temporarily
 *    unavailable"
 *   "tcp://10.0.0.1:5555: the coordinator answered shard_fetch with an
 *    error: no stored shard of that name"
 * and a timeout is SF_ETIMEOUT, a socket failure SF_EIO, bytes that do not
 * decode SF_EFORMAT or SF_EVERSION, an ErrorReply to a request SF_EREMOTE.
 * `endpoint` is used in messages only.
 * ------------------------------------------------------------------------- */

/* A DEALER on `zctx` connected to `endpoint`, with linger 0 (closing it
 * drops what is unsent: every caller waits for its answers). Connecting
 * does not wait for the peer. Errors: SF_EINVAL when ZeroMQ refuses the
 * endpoint ("ENDPOINT: not a valid endpoint: <reason>"), SF_EIO when no
 * socket can be made. */
int sf_wire_dealer(void *zctx, const char *endpoint, void **sock, sf_err *err);

/* sf_wire_dealer() as a CURVE client of `sec` (common/zsec.h; NULL or
 * sec->on 0: plain). A CURVE server refuses an unknown key during the
 * handshake, before any message: the caller then sees a timeout
 * (sf_wire_dealer_watched, below, sees the refusal itself). */
int sf_wire_dealer_secure(void *zctx, const char *endpoint, const sf_zsec_client *sec, void **sock,
                          sf_err *err);

/* ---------------------------------------------------------------------------
 * Watching a DEALER's security handshake
 *
 * A CURVE server refuses a client during the handshake, before any message
 * (common/zsec.h): a client without keys, with a key the server does not
 * list, or with keys against a plain server never gets an answer, so a
 * request only times out. libzmq reports each handshake's outcome on a
 * socket monitor (zmq_socket_monitor); a watch reads those events, so the
 * client can say what is wrong within a second of connecting instead of
 * after its request's timeout. A watch belongs to the socket's thread.
 * ------------------------------------------------------------------------- */

typedef enum sf_wire_handshake {
    SF_WIRE_HS_PENDING = 0, /* no outcome yet: not connected, or handshaking   */
    SF_WIRE_HS_OK,          /* the latest handshake succeeded                   */
    SF_WIRE_HS_REFUSED,     /* the server refused the client's key (ZAP)        */
    SF_WIRE_HS_MISMATCH,    /* one side uses CURVE and the other does not       */
    SF_WIRE_HS_FAILED,      /* the peer dropped the connection mid-handshake, or
                               another protocol error (a server.pub that is not
                               the server's, a peer that is no ZeroMQ server)    */
} sf_wire_handshake;

typedef struct sf_wire_watch {
    void *sock; /* the watched socket; NULL: no watch                      */
    void *pair; /* the monitor's receiving end                             */
    int curve;  /* the client uses CURVE                                    */
    sf_wire_handshake state;
    int connected;     /* a connection is up and its handshake not over          */
    uint32_t failures; /* handshakes that failed since the watch began       */
} sf_wire_watch;

/* sf_wire_dealer_secure() with a watch `w` on its handshakes, started
 * before the connection so that no event is missed. Close the watch with
 * sf_wire_watch_close() before the socket. Errors: those of
 * sf_wire_dealer_secure(), SF_EIO when the monitor cannot be made. */
int sf_wire_dealer_watched(void *zctx, const char *endpoint, const sf_zsec_client *sec, void **sock,
                           sf_wire_watch *w, sf_err *err);

/* Read the monitor's events (waiting up to timeout_ms for the first; 0: only
 * those that have arrived) and return the latest outcome. A failed
 * outcome stays until a later handshake succeeds (ZeroMQ reconnects by
 * itself, and a key added to the server's lists is admitted then). */
sf_wire_handshake sf_wire_watch_poll(sf_wire_watch *w, int timeout_ms);

/* Stop watching (the socket stays open); a zeroed or closed watch is fine. */
void sf_wire_watch_close(sf_wire_watch *w);

/* A failed outcome as an error naming `peer` ("coordinator", "gpu-evald"),
 * `endpoint`, the likely cause and what to do, e.g. "coordinator at
 * tcp://10.0.0.1:5555 refused the connection's security handshake: this run
 * uses CURVE keys; pass --keys DIR (the run's keys directory, see
 * docs/operator.md "Security")". Returns SF_EREMOTE (the peer refused);
 * SF_OK, leaving err alone, when the outcome is not a failure. */
int sf_wire_handshake_error(const sf_wire_watch *w, const char *peer, const char *endpoint,
                            sf_err *err);

/* Wait up to timeout_ms (0: only what has arrived; -1: no limit) for one
 * message on a DEALER and decode it into *out (freed with sf_wire_free();
 * NULL on error). Frames after the first are read and dropped: a DEALER's
 * peer sends one. An ErrorReply is returned like any other envelope. */
int sf_wire_recv(void *sock, const char *endpoint, int timeout_ms, Spirefleet__Envelope **out,
                 sf_err *err);

/* One request, one answer: send `req` on a DEALER, then sf_wire_recv()
 * within timeout_ms. An ErrorReply is turned into SF_EREMOTE carrying the
 * peer's message, and *out is NULL. For clients that ask one thing at a
 * time (the coordinator only ever answers); the worker, whose heartbeats,
 * progress and unasked Stop interleave with its answers, sends with
 * sf_wire_send() and reads with sf_wire_recv() itself. */
int sf_wire_ask(void *sock, const char *endpoint, Spirefleet__Envelope *req, int timeout_ms,
                Spirefleet__Envelope **out, sf_err *err);

#endif
