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
 * is sent first as the routing frame. Returns SF_OK or SF_EIO. Never blocks
 * when `dontwait` is set (SF_EFULL if the socket would block). */
int sf_wire_send(void *socket, const uint8_t *identity, size_t identity_len,
                 Spirefleet__Envelope *env, int dontwait);

#endif
