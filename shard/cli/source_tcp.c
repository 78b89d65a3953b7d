/* source_tcp.c — `sf-shard pull tcp://HOST:PORT DIR`: a coordinator as a
 * shard source. Lists the run's stored shards (ShardListRequest) and fetches
 * each in SF_FLEET_CHUNK (1 MiB) pieces (ShardFetch / ShardData) over one
 * DEALER socket (fleet.proto, fleet/wire.h sf_wire_ask). sf_shard_pull()
 * then verifies every copy completely and checks its content digest
 * against the listing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/io.h"
#include "fleet/wire.h"
#include "shard/cli/cli.h"

/* One DEALER serves every request of a pull; each answer may take this long
 * (a coordinator reads up to SF_FLEET_CHUNK from disk per fetch). */
#define TIMEOUT_MS 30000

typedef struct tcp_source {
    sf_shard_source base;
    void *zctx, *sock;
    sf_wire_watch watch; /* the socket's handshakes (fleet/wire.h) */
} tcp_source;

static int tcp_list(sf_shard_source *src, sf_shard_entry **entries, size_t *n, sf_err *err) {
    tcp_source *t = (tcp_source *)src;
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT, *rep;
    Spirefleet__ShardListRequest lr = SPIREFLEET__SHARD_LIST_REQUEST__INIT;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_LIST_REQUEST;
    req.shard_list_request = &lr;
    int rc = sf_wire_ask(t->sock, src->uri, &req, TIMEOUT_MS, &rep, err);
    if (rc < 0)
        return rc;
    if (rep->body_case != SPIREFLEET__ENVELOPE__BODY_SHARD_LIST) {
        sf_wire_free(rep);
        return sf_err_set(err, SF_EFORMAT, "%s: unexpected answer to a shard list request",
                          src->uri);
    }
    size_t k = rep->shard_list->n_shards;
    sf_shard_entry *e = calloc(k ? k : 1, sizeof *e);
    if (!e) {
        sf_wire_free(rep);
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < k; i++) {
        const Spirefleet__ShardInfo *s = rep->shard_list->shards[i];
        const char *name = s->name ? s->name : "";
        size_t l = strlen(name);
        /* a name from the network must be a plain file name */
        if (l == 0 || l > SF_SHARD_NAME_MAX || strchr(name, '/') || name[0] == '.' ||
            l < strlen(SF_SHARD_SUFFIX) ||
            strcmp(name + l - strlen(SF_SHARD_SUFFIX), SF_SHARD_SUFFIX)) {
            snprintf(e[i].name, sizeof e[i].name, "invalid-%zu%s", i, SF_SHARD_SUFFIX);
            snprintf(e[i].error, sizeof e[i].error, "the coordinator offered a bad name");
            continue;
        }
        memcpy(e[i].name, name, l + 1);
        /* canonical spelling only on the wire (common.h) */
        if (!sf_sha256_hex_canonical(s->content_digest) ||
            sf_unhex(s->content_digest, e[i].digest, SF_SHARD_DIGEST_BYTES) < 0)
            snprintf(e[i].error, sizeof e[i].error, "the listing's content digest is malformed");
        e[i].records = s->records;
        e[i].bytes = s->size;
        e[i].quarantined = s->quarantined;
        e[i].quarantined_unix = s->quarantined_unix;
        if (s->key_id && sf_str_is_name(s->key_id, SF_SHARD_KEY_ID_MAX))
            snprintf(e[i].key_id, sizeof e[i].key_id, "%s", s->key_id);
    }
    sf_wire_free(rep);
    *entries = e;
    *n = k;
    return SF_OK;
}

static int tcp_fetch(sf_shard_source *src, const sf_shard_entry *e, const char *dst, sf_err *err) {
    tcp_source *t = (tcp_source *)src;
    FILE *f = fopen(dst, "wb");
    if (!f)
        return sf_err_set(err, SF_EIO, "%s: cannot create: %s", dst, strerror(errno));
    uint64_t off = 0;
    int rc = SF_OK;
    for (;;) {
        Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT, *rep;
        Spirefleet__ShardFetch fr = SPIREFLEET__SHARD_FETCH__INIT;
        fr.name = (char *)e->name;
        fr.offset = off;
        fr.length = SF_FLEET_CHUNK; /* the most a coordinator answers */
        req.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_FETCH;
        req.shard_fetch = &fr;
        rc = sf_wire_ask(t->sock, src->uri, &req, TIMEOUT_MS, &rep, err);
        if (rc < 0)
            break;
        if (rep->body_case != SPIREFLEET__ENVELOPE__BODY_SHARD_DATA ||
            rep->shard_data->offset != off ||
            (!rep->shard_data->last && !rep->shard_data->data.len)) {
            sf_wire_free(rep);
            rc = sf_err_set(err, SF_EFORMAT, "%s: bad answer fetching %s at %llu", src->uri,
                            e->name, (unsigned long long)off);
            break;
        }
        size_t len = rep->shard_data->data.len;
        int last = rep->shard_data->last;
        if (len && fwrite(rep->shard_data->data.data, 1, len, f) != len)
            rc = sf_err_set(err, SF_EIO, "%s: cannot write: %s", dst, strerror(errno));
        sf_wire_free(rep);
        off += len;
        if (rc < 0 || last)
            break;
        if (off > e->bytes)
            rc = sf_err_set(err, SF_EFORMAT, "%s: %s is longer than listed", src->uri, e->name);
        if (rc < 0)
            break;
    }
    if (sf_fflush_sync(f) < 0 && rc == SF_OK)
        rc = sf_err_set(err, SF_EIO, "%s: cannot sync: %s", dst, strerror(errno));
    fclose(f);
    return rc;
}

static void tcp_close(sf_shard_source *src) {
    tcp_source *t = (tcp_source *)src;
    sf_wire_watch_close(&t->watch);
    if (t->sock)
        zmq_close(t->sock);
    if (t->zctx)
        zmq_ctx_term(t->zctx);
    free(t);
}

static const sf_shard_source_ops tcp_ops = {tcp_list, tcp_fetch, tcp_close};

int sf_cli_open_tcp_source(const char *rest, const char *keys, sf_shard_source **out, sf_err *err) {
    sf_zsec_client sec;
    int krc = sf_zsec_client_load_any(keys, &sec, err);
    if (krc < 0)
        return krc;
    tcp_source *t = calloc(1, sizeof *t);
    if (!t)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    t->base.ops = &tcp_ops;
    snprintf(t->base.uri, sizeof t->base.uri, "tcp://%s", rest);
    t->zctx = zmq_ctx_new();
    int rc = t->zctx ? sf_wire_dealer_watched(t->zctx, t->base.uri, &sec, &t->sock, &t->watch, err)
                     : sf_err_set(err, SF_EIO, "%s: cannot start ZeroMQ: %s", t->base.uri,
                                  zmq_strerror(zmq_errno()));
    if (rc < 0) {
        tcp_close(&t->base);
        return rc;
    }
    *out = &t->base;
    return SF_OK;
}

/* A CURVE coordinator never answers a client it refuses (no keys, a key it
 * does not list): without this wait a pull would sit out its request's
 * timeout and say only "no answer". The handshake's outcome comes within
 * a round trip of connecting. */
int sf_cli_source_ready(sf_shard_source *src, sf_err *err) {
    if (src->ops != &tcp_ops)
        return SF_OK;
    tcp_source *t = (tcp_source *)src;
    for (int waited = 0; waited < SF_CLI_CONNECT_MS; waited += 100) {
        sf_wire_handshake hs = sf_wire_watch_poll(&t->watch, 100);
        if (hs == SF_WIRE_HS_OK)
            return SF_OK;
        if (hs != SF_WIRE_HS_PENDING)
            return sf_wire_handshake_error(&t->watch, "coordinator", src->uri, err);
    }
    return sf_err_set(err, SF_ETIMEOUT,
                      "%s: no connection within %d s: is a coordinator serving there (sf-fleet "
                      "status %s)?",
                      src->uri, SF_CLI_CONNECT_MS / 1000, src->uri);
}
