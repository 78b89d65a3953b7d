/*
 * wire.h — the gpu-evald wire codec (proto/evald.proto), shared by the server
 * and the client library. Internal to gpu-evald.
 *
 * Decoding trusts nothing: every length is checked against n_positions and
 * the per-position counts before any array is read, every position is
 * validated (sf_pos_validate), and a failure is a status and a message that
 * names the field — never a crash. Encoding writes into grow-only buffers,
 * so after the first requests of a given size nothing is allocated.
 */
#ifndef SF_EVALD_WIRE_H
#define SF_EVALD_WIRE_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "proto/pbuf.h"

#define SF_WIRE_PROTOCOL 1
/* Most positions one request may carry (the server's max_batch is lower). */
#define SF_WIRE_MAX_POSITIONS 65536

/* ---- requests ---- */

/* Encode a request for positions[0..n) (already validated) into `msg`;
 * `scratch` holds the packed arrays. */
int sf_wire_request_encode(uint64_t id, const char *model_sha256, const sf_pos *pos, int n,
                           sf_buf *scratch, sf_buf *msg, sf_err *err);

/* A decoded request: `n` positions whose views point into this same
 * allocation. Free with free(). */
typedef struct sf_wire_request {
    uint64_t id;
    char model[65];
    int n;
    sf_pos *pos;
} sf_wire_request;

/* Decode and validate a request. On failure `*out` is NULL, `*id` and
 * `model` (65 bytes) hold what could be read (0 and "" otherwise) so the
 * error reply can name the request, and the status is SF_EFORMAT (does not
 * decode, lengths disagree), SF_EVERSION (protocol or tokenizer version)
 * or SF_EINVAL (a position out of range, message "position i: ...").
 * `arena` is used for unpacking; the result is one malloc'd block. */
int sf_wire_request_decode(const uint8_t *msg, size_t len, sf_arena *arena, sf_wire_request **out,
                           uint64_t *id, char model[65], sf_err *err);

/* ---- replies ---- */

/* Encode a reply. With status SF_OK, `out[0..n)` are the outputs; else
 * `error` explains and `out` may be NULL. */
int sf_wire_reply_encode(uint64_t id, const char *model_sha256, int status, const char *error,
                         const sf_net_out *out, int n, uint32_t credit, sf_buf *scratch,
                         sf_buf *msg, sf_err *err);

/* A decoded reply, valid until the arena is next prepared. */
typedef struct sf_wire_reply {
    uint64_t id;
    int status;
    const char *error;
    uint32_t credit;
    void *pb; /* the unpacked message */
} sf_wire_reply;

/* First step: unpack and read the header. */
int sf_wire_reply_decode(const uint8_t *msg, size_t len, sf_arena *arena, sf_wire_reply *out,
                         sf_err *err);

/* Second step (status SF_OK): copy the outputs into out[0..n), checking the
 * reply carries exactly n positions whose query counts are nq[0..n). */
int sf_wire_reply_outputs(const sf_wire_reply *r, int n, const uint8_t *nq, sf_net_out *out,
                          sf_err *err);

#endif
