/*
 * neteval.h — the worker-side network evaluator: sends batches of tokenized
 * positions to gpu-evald over ZeroMQ (remote) or evaluates them with the
 * cpu backend in the calling thread (in-process), behind one interface.
 *
 * How a search thread uses it
 *   A thread multiplexes many resumable searches. It collects the leaf
 *   positions they are waiting on, submits them as one request
 *   (sf_neteval_submit: N positions in, a ticket out), goes on with other
 *   searches, and calls sf_neteval_poll() to learn which tickets are done;
 *   each done ticket's N outputs are in the array given at submit. Up to
 *   max_inflight requests may be outstanding.
 *
 * Failures
 *   A request unanswered after timeout_ms is sent again, up to max_retries
 *   times, on a fresh connection (the old socket is closed: a server that
 *   restarted or a stuck TCP connection does not keep the worker waiting).
 *   When the retries are used up, or the server answers with an error, the
 *   fallback (if set) evaluates the positions instead and the ticket
 *   completes with fell_back = 1; without a fallback the ticket completes
 *   with the error. Every retry, reconnect, timeout, server error and
 *   fallback is counted (sf_neteval_stats): none is silent.
 *
 * Determinism
 *   With the cpu backend a position's outputs do not depend on the batch
 *   (evald.h), and the wire carries the exact float bits, so remote and
 *   in-process evaluation give bit-identical outputs: the same job yields
 *   the same shard digest either way. (A fallback's outputs are its own.)
 *
 * Allocation and threads
 *   An sf_neteval belongs to one thread (ZeroMQ sockets are not
 *   thread-safe). Its buffers grow to the largest request seen and are then
 *   reused: after warm-up, submit and poll allocate nothing of their own
 *   (libzmq allocates its message frames internally).
 *
 * Errors are values: SF_OK or a negative SF_E* code, with the optional
 * sf_err naming what went wrong.
 */
#ifndef SF_NETEVAL_H
#define SF_NETEVAL_H

#include <stdint.h>

#include "common/common.h"
#include "common/zsec.h"
#include "model/model.h"

typedef struct sf_neteval sf_neteval;

/* Evaluate positions some other way when the network path fails (e.g. an
 * in-process net or a heuristic). Return SF_OK after filling out[0..n). */
typedef int (*sf_neteval_fallback_fn)(void *ctx, const sf_pos *pos, int n, sf_net_out *out);

typedef struct sf_neteval_opts {
    const char *endpoint;     /* remote: the server's ZeroMQ endpoint            */
    const char *model_sha256; /* 64 hex digits naming the model, either case
                               * (sent and compared in lower case; remote:
                               * required; in-process: checked when given)     */
    int max_inflight;         /* outstanding requests (default 8, max 1024)      */
    int timeout_ms;           /* per attempt (default 5000)                      */
    int max_retries;          /* resends after the first attempt (default 2)     */
    sf_neteval_fallback_fn fallback;
    void *fallback_ctx;
    /* remote: connect as this CURVE client (common/zsec.h; copied at
     * connect); NULL or curve->on 0: plain */
    const sf_zsec_client *curve;
} sf_neteval_opts;

typedef struct sf_neteval_stats {
    uint64_t requests;      /* submitted                                     */
    uint64_t positions;     /* submitted positions                           */
    uint64_t replies;       /* answered by the server (ok or error)          */
    uint64_t retries;       /* resends                                       */
    uint64_t reconnects;    /* sockets replaced                              */
    uint64_t timeouts;      /* attempts that ran out of time                 */
    uint64_t server_errors; /* error replies                                 */
    uint64_t fallbacks;     /* requests answered by the fallback             */
    uint64_t failures;      /* requests completed with an error              */
    uint64_t stale_replies; /* replies to requests no longer in flight       */
} sf_neteval_stats;

/* A completed request. */
typedef struct sf_neteval_done {
    uint64_t ticket;
    int status;    /* SF_OK, or the error (SF_ETIMEOUT, the server's status) */
    int fell_back; /* 1 when the fallback produced the outputs              */
    char error[SF_ERR_MSG_MAX];
} sf_neteval_done;

/* Connect to a server. `zmq_ctx` may be NULL (the evaluator makes its own)
 * or a context shared by the caller, which must outlive the evaluator.
 * Connecting does not wait for the server. Errors: SF_EINVAL (options),
 * SF_EIO (socket). */
int sf_neteval_connect(const sf_neteval_opts *opts, void *zmq_ctx, sf_neteval **out, sf_err *err);

/* In-process: evaluate with the cpu backend on `bundle` (which must outlive
 * the evaluator) in the calling thread. Errors: SF_EINVAL when
 * opts->model_sha256 is set and not 64 hex digits, SF_ECORRUPT when it
 * differs from the bundle's digest; those of sf_net_create(). */
int sf_neteval_open_local(const sf_bundle *bundle, const sf_neteval_opts *opts, sf_neteval **out,
                          sf_err *err);

/* Submit positions[0..n) (1 <= n <= 65536); their outputs will be written
 * to out[0..n), which must stay valid until the ticket completes. The
 * positions are validated and copied; the caller may reuse them at once.
 * In-process, the evaluation happens inside this call. Errors: SF_EINVAL (a
 * position out of range: nothing is sent), SF_EFULL (max_inflight requests
 * outstanding, or more positions than the server's credit: poll first). */
int sf_neteval_submit(sf_neteval *ev, const sf_pos *pos, int n, sf_net_out *out, uint64_t *ticket,
                      sf_err *err);

/* Wait up to timeout_ms (0: do not wait; -1: until something completes or
 * nothing is outstanding) for replies, handling timeouts and retries. Writes
 * up to `cap` completed requests to done[] and returns how many, or a
 * negative SF_E* on a socket failure. */
int sf_neteval_poll(sf_neteval *ev, int timeout_ms, sf_neteval_done *done, int cap, sf_err *err);

/* Submit and wait for this one request. Returns its status (SF_OK when
 * answered or fallen back). */
int sf_neteval_eval(sf_neteval *ev, const sf_pos *pos, int n, sf_net_out *out, sf_err *err);

/* Requests outstanding (submitted, not yet returned by poll). */
int sf_neteval_inflight(const sf_neteval *ev);

/* 1 for the in-process variant. */
int sf_neteval_is_local(const sf_neteval *ev);

void sf_neteval_stats_get(const sf_neteval *ev, sf_neteval_stats *out);

/* Close the socket (pending requests are abandoned) and free. NULL is a
 * no-op. */
void sf_neteval_close(sf_neteval *ev);

#endif
