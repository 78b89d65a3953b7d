/*
 * neteval.c — the worker-side network evaluator (see neteval.h).
 */
#include "gpu-evald/neteval.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "gpu-evald/wire.h"

#define SF_NETEVAL_MAX_INFLIGHT 1024

typedef struct slot {
    int active;
    uint64_t id; /* request id = ticket */
    int n;
    sf_net_out *out;
    sf_buf nq;  /* u8 [n] query counts, to check and unpack the reply */
    sf_buf msg; /* the encoded request, kept for resends              */
    int attempts;
    uint64_t deadline;
} slot;

struct sf_neteval {
    int local;
    sf_neteval_opts o;
    char sha[65];
    char endpoint[256];
    sf_zsec_client curve; /* opts.curve's copy; on 0: plain */
    void *ctx;
    int own_ctx;
    void *sock;
    slot *slots;
    sf_neteval_done *doneq; /* ring of completed, not yet returned */
    int done_head, done_n;
    int active;
    int active_positions;
    uint32_t credit;
    int have_credit;
    uint64_t next_id;
    sf_buf scratch;
    sf_arena arena;
    sf_net *net; /* in-process */
    sf_neteval_stats st;
};

static int opts_fill(const sf_neteval_opts *in, sf_neteval_opts *o, sf_err *err) {
    *o = in ? *in : (sf_neteval_opts){0};
    if (o->max_inflight == 0)
        o->max_inflight = 8;
    if (o->timeout_ms == 0)
        o->timeout_ms = 5000;
    if (o->max_retries == 0)
        o->max_retries = 2;
    if (o->max_inflight < 1 || o->max_inflight > SF_NETEVAL_MAX_INFLIGHT)
        return sf_err_set(err, SF_EINVAL, "max_inflight %d out of range 1..%d", o->max_inflight,
                          SF_NETEVAL_MAX_INFLIGHT);
    if (o->timeout_ms < 1)
        return sf_err_set(err, SF_EINVAL, "timeout_ms %d < 1", o->timeout_ms);
    if (o->max_retries < 0 || o->max_retries > 100)
        return sf_err_set(err, SF_EINVAL, "max_retries %d out of range 0..100", o->max_retries);
    return SF_OK;
}

static sf_neteval *alloc_ev(const sf_neteval_opts *o) {
    sf_neteval *ev = calloc(1, sizeof *ev);
    if (!ev)
        return NULL;
    ev->o = *o;
    ev->slots = calloc((size_t)o->max_inflight, sizeof *ev->slots);
    ev->doneq = calloc((size_t)o->max_inflight, sizeof *ev->doneq);
    sf_arena_init(&ev->arena, NULL);
    if (!ev->slots || !ev->doneq) {
        free(ev->slots);
        free(ev->doneq);
        free(ev);
        return NULL;
    }
    return ev;
}

void sf_neteval_close(sf_neteval *ev) {
    if (!ev)
        return;
    if (ev->sock)
        zmq_close(ev->sock);
    if (ev->own_ctx && ev->ctx)
        zmq_ctx_term(ev->ctx);
    for (int i = 0; i < ev->o.max_inflight; i++) {
        sf_buf_free(&ev->slots[i].nq);
        sf_buf_free(&ev->slots[i].msg);
    }
    free(ev->slots);
    free(ev->doneq);
    sf_buf_free(&ev->scratch);
    sf_arena_free(&ev->arena);
    sf_net_free(ev->net);
    free(ev);
}

static int open_socket(sf_neteval *ev, sf_err *err) {
    if (ev->sock) {
        zmq_close(ev->sock);
        ev->sock = NULL;
    }
    ev->sock = zmq_socket(ev->ctx, ZMQ_DEALER);
    if (!ev->sock)
        return sf_err_set(err, SF_EIO, "zmq_socket: %s", zmq_strerror(errno));
    int zero = 0, hwm = 100000;
    zmq_setsockopt(ev->sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(ev->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(ev->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    int rc = sf_zsec_client_apply(&ev->curve, ev->sock, err);
    if (rc < 0)
        return rc;
    if (zmq_connect(ev->sock, ev->endpoint) != 0)
        return sf_err_set(err, SF_EIO, "cannot connect to %s: %s", ev->endpoint,
                          zmq_strerror(errno));
    return SF_OK;
}

int sf_neteval_connect(const sf_neteval_opts *opts, void *zmq_ctx, sf_neteval **out, sf_err *err) {
    *out = NULL;
    sf_neteval_opts o;
    int rc = opts_fill(opts, &o, err);
    if (rc != SF_OK)
        return rc;
    if (!o.endpoint || !o.endpoint[0] || strlen(o.endpoint) >= 256)
        return sf_err_set(err, SF_EINVAL, "no server endpoint (or longer than 255 bytes)");
    char sha[65]; /* either case accepted; lower case, as the server expects */
    if (!o.model_sha256)
        return sf_err_set(err, SF_EINVAL, "model_sha256 must be 64 hex digits");
    if (sf_sha256_hex_parse(o.model_sha256, sha, err) != SF_OK)
        return sf_err_prefix(err, "model_sha256");
    sf_neteval *ev = alloc_ev(&o);
    if (!ev)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    memcpy(ev->sha, sha, sizeof sha);
    snprintf(ev->endpoint, sizeof ev->endpoint, "%s", o.endpoint);
    if (o.curve)
        ev->curve = *o.curve;
    ev->o.curve = NULL; /* the copy above is what counts */
    ev->ctx = zmq_ctx;
    if (!ev->ctx) {
        ev->ctx = zmq_ctx_new();
        ev->own_ctx = 1;
        if (!ev->ctx) {
            sf_neteval_close(ev);
            return sf_err_set(err, SF_EIO, "zmq_ctx_new: %s", zmq_strerror(errno));
        }
    }
    if ((rc = open_socket(ev, err)) != SF_OK) {
        sf_neteval_close(ev);
        return rc;
    }
    *out = ev;
    return SF_OK;
}

int sf_neteval_open_local(const sf_bundle *b, const sf_neteval_opts *opts, sf_neteval **out,
                          sf_err *err) {
    *out = NULL;
    sf_neteval_opts o;
    int rc = opts_fill(opts, &o, err);
    if (rc != SF_OK)
        return rc;
    char pin[65];
    if (o.model_sha256 && sf_sha256_hex_parse(o.model_sha256, pin, err) != SF_OK)
        return sf_err_prefix(err, "model_sha256");
    if (o.model_sha256 && strcmp(pin, sf_bundle_sha256(b)) != 0)
        return sf_err_set(err, SF_ECORRUPT, "%s: SHA-256 is %s, the evaluator pins %s",
                          sf_bundle_path(b), sf_bundle_sha256(b), pin);
    sf_neteval *ev = alloc_ev(&o);
    if (!ev)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    ev->local = 1;
    memcpy(ev->sha, sf_bundle_sha256(b), 65);
    sf_net_opts no = {0};
    if ((rc = sf_net_create(b, &no, &ev->net, err)) != SF_OK) {
        sf_neteval_close(ev);
        return rc;
    }
    *out = ev;
    return SF_OK;
}

int sf_neteval_inflight(const sf_neteval *ev) {
    return ev->active + ev->done_n;
}

int sf_neteval_is_local(const sf_neteval *ev) {
    return ev->local;
}

void sf_neteval_stats_get(const sf_neteval *ev, sf_neteval_stats *out) {
    *out = ev->st;
}

static void push_done(sf_neteval *ev, uint64_t ticket, int status, int fell_back, const char *msg) {
    sf_neteval_done *d = &ev->doneq[(ev->done_head + ev->done_n) % ev->o.max_inflight];
    d->ticket = ticket;
    d->status = status;
    d->fell_back = fell_back;
    snprintf(d->error, sizeof d->error, "%s", msg ? msg : "");
    ev->done_n++;
}

static int pop_done(sf_neteval *ev, sf_neteval_done *done, int cap) {
    int k = 0;
    while (ev->done_n > 0 && k < cap) {
        done[k++] = ev->doneq[ev->done_head];
        ev->done_head = (ev->done_head + 1) % ev->o.max_inflight;
        ev->done_n--;
    }
    return k;
}

/* Finish slot `s` with `status`: on failure, try the fallback. */
static void complete(sf_neteval *ev, slot *s, int status, const char *msg) {
    int fell_back = 0;
    char text[SF_ERR_MSG_MAX];
    snprintf(text, sizeof text, "%s", msg ? msg : "");
    if (status != SF_OK && ev->o.fallback) {
        /* Rare path: recover the positions from the request we kept. */
        sf_wire_request *w = NULL;
        uint64_t id;
        char model[65];
        sf_err e = {0};
        if (sf_wire_request_decode(s->msg.p, s->msg.len, &ev->arena, &w, &id, model, &e) == SF_OK &&
            ev->o.fallback(ev->o.fallback_ctx, w->pos, w->n, s->out) == SF_OK) {
            fell_back = 1;
            status = SF_OK;
            ev->st.fallbacks++;
        }
        free(w);
    }
    if (status != SF_OK)
        ev->st.failures++;
    push_done(ev, s->id, status, fell_back, status == SF_OK && !fell_back ? NULL : text);
    s->active = 0;
    ev->active--;
    ev->active_positions -= s->n;
}

static void send_slot(sf_neteval *ev, slot *s, uint64_t now) {
    /* A send that cannot be queued (no peer yet and a full queue) counts as
     * lost: the deadline brings it back. */
    (void)zmq_send(ev->sock, s->msg.p, s->msg.len, ZMQ_DONTWAIT);
    s->attempts++;
    s->deadline = now + (uint64_t)ev->o.timeout_ms * 1000000ull;
}

int sf_neteval_submit(sf_neteval *ev, const sf_pos *pos, int n, sf_net_out *out, uint64_t *ticket,
                      sf_err *err) {
    if (n < 1 || n > SF_WIRE_MAX_POSITIONS)
        return sf_err_set(err, SF_EINVAL, "submit of %d positions (1..%d)", n,
                          SF_WIRE_MAX_POSITIONS);
    if (sf_neteval_inflight(ev) >= ev->o.max_inflight)
        return sf_err_set(err, SF_EFULL, "%d requests outstanding (max_inflight); poll first",
                          sf_neteval_inflight(ev));
    for (int i = 0; i < n; i++) {
        int rc = sf_pos_validate(&pos[i], err);
        if (rc != SF_OK)
            return sf_err_prefix(err, "position %d", i);
    }
    uint64_t id = ++ev->next_id;
    ev->st.requests++;
    ev->st.positions += (uint64_t)n;
    if (ev->local) {
        sf_err e = {0};
        int rc = sf_net_eval(ev->net, pos, n, out, &e);
        if (rc != SF_OK)
            ev->st.failures++;
        push_done(ev, id, rc, 0, rc == SF_OK ? NULL : e.msg);
        *ticket = id;
        return SF_OK;
    }
    if (ev->have_credit && ev->active_positions > 0 && ev->active_positions + n > (int)ev->credit)
        return sf_err_set(err, SF_EFULL,
                          "%d positions in flight + %d exceed the server's credit %u; poll first",
                          ev->active_positions, n, ev->credit);
    slot *s = NULL;
    for (int i = 0; i < ev->o.max_inflight && !s; i++)
        if (!ev->slots[i].active)
            s = &ev->slots[i];
    s->nq.len = 0;
    if (sf_buf_reserve(&s->nq, (size_t)n, NULL) != SF_OK)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    int rc = sf_wire_request_encode(id, ev->sha, pos, n, &ev->scratch, &s->msg, err);
    if (rc != SF_OK)
        return rc;
    for (int i = 0; i < n; i++)
        s->nq.p[i] = (uint8_t)pos[i].n_queries;
    s->active = 1;
    s->id = id;
    s->n = n;
    s->out = out;
    s->attempts = 0;
    ev->active++;
    ev->active_positions += n;
    send_slot(ev, s, sf_now_ns());
    *ticket = id;
    return SF_OK;
}

static slot *find_slot(sf_neteval *ev, uint64_t id) {
    for (int i = 0; i < ev->o.max_inflight; i++)
        if (ev->slots[i].active && ev->slots[i].id == id)
            return &ev->slots[i];
    return NULL;
}

static void handle_reply(sf_neteval *ev, const uint8_t *msg, size_t len) {
    sf_wire_reply r;
    sf_err e = {0};
    if (sf_wire_reply_decode(msg, len, &ev->arena, &r, &e) != SF_OK) {
        ev->st.stale_replies++; /* undecodable: cannot tell whose it is */
        return;
    }
    slot *s = find_slot(ev, r.id);
    if (!s) {
        ev->st.stale_replies++;
        return;
    }
    ev->st.replies++;
    ev->credit = r.credit;
    ev->have_credit = 1;
    if (r.status != SF_OK) {
        ev->st.server_errors++;
        char m[SF_ERR_MSG_MAX];
        snprintf(m, sizeof m, "server %s: %s", ev->endpoint, r.error);
        complete(ev, s, r.status, m);
        return;
    }
    if (sf_wire_reply_outputs(&r, s->n, s->nq.p, s->out, &e) != SF_OK) {
        ev->st.server_errors++;
        complete(ev, s, SF_EFORMAT, e.msg);
        return;
    }
    complete(ev, s, SF_OK, NULL);
}

/* Resend what timed out on a fresh socket; give up after max_retries. */
static int handle_deadlines(sf_neteval *ev, uint64_t now, sf_err *err) {
    int expired = 0;
    for (int i = 0; i < ev->o.max_inflight; i++)
        if (ev->slots[i].active && ev->slots[i].deadline <= now) {
            expired++;
            ev->st.timeouts++;
        }
    if (!expired)
        return SF_OK;
    /* Every request in flight went out on the old socket, whose replies
     * the server can no longer route to us: all of them go again. */
    int rc = open_socket(ev, err);
    if (rc != SF_OK)
        return rc;
    ev->st.reconnects++;
    for (int i = 0; i < ev->o.max_inflight; i++) {
        slot *s = &ev->slots[i];
        if (!s->active)
            continue;
        if (s->attempts > ev->o.max_retries) {
            char m[SF_ERR_MSG_MAX];
            snprintf(m, sizeof m, "no reply from %s after %d attempts of %d ms", ev->endpoint,
                     s->attempts, ev->o.timeout_ms);
            complete(ev, s, SF_ETIMEOUT, m);
        } else {
            ev->st.retries++;
            send_slot(ev, s, now);
        }
    }
    return SF_OK;
}

int sf_neteval_poll(sf_neteval *ev, int timeout_ms, sf_neteval_done *done, int cap, sf_err *err) {
    if (cap < 1)
        return sf_err_set(err, SF_EINVAL, "poll with no room for results");
    uint64_t start = sf_now_ns();
    uint64_t end = timeout_ms < 0 ? UINT64_MAX : start + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        if (ev->done_n > 0)
            return pop_done(ev, done, cap);
        if (ev->local || ev->active == 0)
            return 0;
        uint64_t now = sf_now_ns();
        uint64_t next = end;
        for (int i = 0; i < ev->o.max_inflight; i++)
            if (ev->slots[i].active && ev->slots[i].deadline < next)
                next = ev->slots[i].deadline;
        long wait_ms = next <= now ? 0 : (long)((next - now + 999999) / 1000000);
        zmq_pollitem_t item = {ev->sock, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, wait_ms) < 0 && errno != EINTR)
            return sf_err_set(err, SF_EIO, "zmq_poll: %s", zmq_strerror(errno));
        for (;;) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, ev->sock, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&m);
                break;
            }
            if (zmq_msg_more(&m)) {
                /* Not a reply of ours (one frame each): drop every part. */
                ev->st.stale_replies++;
                while (zmq_msg_more(&m) && zmq_msg_recv(&m, ev->sock, ZMQ_DONTWAIT) >= 0)
                    ;
            } else {
                handle_reply(ev, zmq_msg_data(&m), zmq_msg_size(&m));
            }
            zmq_msg_close(&m);
        }
        now = sf_now_ns();
        int rc = handle_deadlines(ev, now, err);
        if (rc != SF_OK)
            return rc;
        if (ev->done_n > 0)
            return pop_done(ev, done, cap);
        if (now >= end)
            return 0;
    }
}

int sf_neteval_eval(sf_neteval *ev, const sf_pos *pos, int n, sf_net_out *out, sf_err *err) {
    if (sf_neteval_inflight(ev) > 0)
        return sf_err_set(err, SF_ESTATE,
                          "sf_neteval_eval with %d requests outstanding; use submit and poll",
                          sf_neteval_inflight(ev));
    uint64_t ticket;
    int rc = sf_neteval_submit(ev, pos, n, out, &ticket, err);
    if (rc != SF_OK)
        return rc;
    sf_neteval_done d;
    for (;;) {
        int k = sf_neteval_poll(ev, -1, &d, 1, err);
        if (k < 0)
            return k;
        if (k == 1 && d.ticket == ticket)
            break;
    }
    if (d.status != SF_OK)
        return sf_err_set(err, d.status, "%s", d.error);
    return SF_OK;
}
