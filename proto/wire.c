/*
 * wire.c — RunConfig <-> sf_run_config, the config digest, and envelope
 * framing over ZeroMQ (see wire.h).
 */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "proto/wire.h"

Spirefleet__RunConfig *sf_config_to_proto(const sf_run_config *c, sf_config_scratch *s) {
    memset(s, 0, sizeof *s);
    spirefleet__run_config__init(&s->run);
    spirefleet__play_config__init(&s->play);
    spirefleet__search_config__init(&s->search);
    spirefleet__model_config__init(&s->model);
    spirefleet__evald_config__init(&s->evald);
    spirefleet__worker_config__init(&s->workers);
    spirefleet__coordinator_config__init(&s->coordinator);
    spirefleet__shard_config__init(&s->shard);
    spirefleet__labels_config__init(&s->labels);

    Spirefleet__RunConfig *r = &s->run;
    r->name = (char *)c->name;
    r->output_dir = (char *)c->output_dir;
    r->run_seed = c->run_seed;
    r->seed_start = c->seed_start;
    r->seed_count = c->seed_count;
    r->job_size = c->job_size;
    r->kind = (char *)c->kind;

    s->play.mode = (char *)c->play.mode;
    for (int i = 0; i < c->play.n_encounters; i++) {
        spirefleet__encounter_weight__init(&s->enc[i]);
        s->enc[i].id = (uint32_t)c->play.encounters[i].id;
        s->enc[i].weight = c->play.encounters[i].weight;
        s->enc[i].name = (char *)"";
        s->enc_ptr[i] = &s->enc[i];
    }
    s->play.n_encounters = (size_t)c->play.n_encounters;
    s->play.encounters = s->enc_ptr;
    s->play.deck = (char *)c->play.deck;
    for (int i = 0; i < c->play.n_relics; i++)
        s->relic_ptr[i] = (char *)c->play.relics[i];
    s->play.n_relics = (size_t)c->play.n_relics;
    s->play.relics = s->relic_ptr;
    for (int i = 0; i < c->play.n_potions; i++)
        s->potion_ptr[i] = (char *)c->play.potions[i];
    s->play.n_potions = (size_t)c->play.n_potions;
    s->play.potions = s->potion_ptr;
    s->play.hp = c->play.hp;
    s->play.max_hp = c->play.max_hp;
    s->play.ascension = c->play.ascension;
    r->play = &s->play;

    Spirefleet__SearchConfig *q = &s->search;
    q->simulations = c->search.simulations;
    q->trees = c->search.trees;
    for (int i = 0; i < c->search.n_c_schedule; i++) {
        spirefleet__cschedule__init(&s->csched[i]);
        s->csched[i].below = c->search.c_schedule[i].below;
        s->csched[i].c = c->search.c_schedule[i].c;
        s->csched_ptr[i] = &s->csched[i];
    }
    q->n_c_schedule = (size_t)c->search.n_c_schedule;
    q->c_schedule = s->csched_ptr;
    q->widening_c = c->search.widening_c;
    q->widening_alpha = c->search.widening_alpha;
    q->rollout_tau = c->search.rollout_tau;
    q->evaluator = (char *)c->search.evaluator;
    q->gumbel = c->search.gumbel;
    q->gumbel_m = c->search.gumbel_m;
    q->gumbel_c_visit = c->search.gumbel_c_visit;
    q->gumbel_c_scale = c->search.gumbel_c_scale;
    q->teacher_rollouts = c->search.teacher_rollouts;
    q->clairvoyant = c->search.clairvoyant;
    q->cvar_alpha = c->search.cvar_alpha;
    q->cvar_lambda = c->search.cvar_lambda;
    q->max_rollout_plies = c->search.max_rollout_plies;
    r->search = q;

    s->model.bundle = (char *)c->model.bundle;
    s->model.sha256 = (char *)c->model.sha256;
    r->model = &s->model;

    s->evald.endpoint = (char *)c->evald.endpoint;
    s->evald.spawn = c->evald.spawn;
    s->evald.backend = (char *)c->evald.backend;
    s->evald.max_batch = c->evald.max_batch;
    s->evald.max_wait_us = c->evald.max_wait_us;
    s->evald.timeout_ms = c->evald.timeout_ms;
    s->evald.retries = c->evald.retries;
    r->evald = &s->evald;

    s->workers.count = c->workers.count;
    s->workers.threads = c->workers.threads;
    s->workers.fights_per_thread = c->workers.fights_per_thread;
    r->workers = &s->workers;

    s->coordinator.endpoint = (char *)c->coordinator.endpoint;
    s->coordinator.lease_seconds = c->coordinator.lease_seconds;
    s->coordinator.heartbeat_ms = c->coordinator.heartbeat_ms;
    s->coordinator.heartbeat_liveness = c->coordinator.heartbeat_liveness;
    s->coordinator.metrics_port = c->coordinator.metrics_port;
    r->coordinator = &s->coordinator;

    s->shard.zstd_level = c->shard.zstd_level;
    r->shard = &s->shard;

    s->labels.unsearched = (char *)c->labels.unsearched;
    r->labels = &s->labels;
    return r;
}

static int copy_str(char *dst, size_t cap, const char *src, const char *field, sf_err *err) {
    if (!src)
        src = "";
    size_t l = strlen(src);
    if (l >= cap)
        return sf_err_set(err, SF_EFORMAT, "RunConfig.%s: too long (%zu bytes)", field, l);
    memcpy(dst, src, l + 1);
    return SF_OK;
}

#define COPY(dst, src, field)                                \
    do {                                                     \
        if (copy_str(dst, sizeof(dst), src, field, err) < 0) \
            return SF_EFORMAT;                               \
    } while (0)

int sf_config_from_proto(const Spirefleet__RunConfig *m, sf_run_config *c, sf_err *err) {
    if (!m || !m->play || !m->search || !m->model || !m->evald || !m->workers || !m->coordinator ||
        !m->shard || !m->labels)
        return sf_err_set(err, SF_EFORMAT, "RunConfig: a section is missing");
    memset(c, 0, sizeof *c);
    COPY(c->name, m->name, "name");
    COPY(c->output_dir, m->output_dir, "output_dir");
    c->run_seed = m->run_seed;
    c->seed_start = m->seed_start;
    c->seed_count = m->seed_count;
    c->job_size = m->job_size;
    COPY(c->kind, m->kind, "kind");
    COPY(c->play.mode, m->play->mode, "play.mode");
    if (m->play->n_encounters > SF_CFG_MAX_ENCOUNTERS)
        return sf_err_set(err, SF_EFORMAT, "RunConfig.play.encounters: too many");
    for (size_t i = 0; i < m->play->n_encounters; i++) {
        c->play.encounters[i].id = (int)m->play->encounters[i]->id;
        c->play.encounters[i].weight = m->play->encounters[i]->weight;
    }
    c->play.n_encounters = (int)m->play->n_encounters;
    COPY(c->play.deck, m->play->deck, "play.deck");
    if (m->play->n_relics > SF_CFG_MAX_RELICS || m->play->n_potions > SF_CFG_MAX_POTIONS)
        return sf_err_set(err, SF_EFORMAT, "RunConfig.play: too many relics or potions");
    for (size_t i = 0; i < m->play->n_relics; i++)
        COPY(c->play.relics[i], m->play->relics[i], "play.relics");
    c->play.n_relics = (int)m->play->n_relics;
    for (size_t i = 0; i < m->play->n_potions; i++)
        COPY(c->play.potions[i], m->play->potions[i], "play.potions");
    c->play.n_potions = (int)m->play->n_potions;
    c->play.hp = m->play->hp;
    c->play.max_hp = m->play->max_hp;
    c->play.ascension = m->play->ascension;
    const Spirefleet__SearchConfig *q = m->search;
    c->search.simulations = q->simulations;
    c->search.trees = q->trees;
    if (q->n_c_schedule > SF_CFG_MAX_CSCHED)
        return sf_err_set(err, SF_EFORMAT, "RunConfig.search.c_schedule: too many entries");
    for (size_t i = 0; i < q->n_c_schedule; i++) {
        c->search.c_schedule[i].below = q->c_schedule[i]->below;
        c->search.c_schedule[i].c = q->c_schedule[i]->c;
    }
    c->search.n_c_schedule = (int)q->n_c_schedule;
    c->search.widening_c = q->widening_c;
    c->search.widening_alpha = q->widening_alpha;
    c->search.rollout_tau = q->rollout_tau;
    COPY(c->search.evaluator, q->evaluator, "search.evaluator");
    c->search.gumbel = q->gumbel;
    c->search.gumbel_m = q->gumbel_m;
    c->search.gumbel_c_visit = q->gumbel_c_visit;
    c->search.gumbel_c_scale = q->gumbel_c_scale;
    c->search.teacher_rollouts = q->teacher_rollouts;
    c->search.clairvoyant = q->clairvoyant;
    c->search.cvar_alpha = q->cvar_alpha;
    c->search.cvar_lambda = q->cvar_lambda;
    c->search.max_rollout_plies = q->max_rollout_plies;
    COPY(c->model.bundle, m->model->bundle, "model.bundle");
    COPY(c->model.sha256, m->model->sha256, "model.sha256");
    COPY(c->evald.endpoint, m->evald->endpoint, "evald.endpoint");
    c->evald.spawn = m->evald->spawn;
    COPY(c->evald.backend, m->evald->backend, "evald.backend");
    c->evald.max_batch = m->evald->max_batch;
    c->evald.max_wait_us = m->evald->max_wait_us;
    c->evald.timeout_ms = m->evald->timeout_ms;
    c->evald.retries = m->evald->retries;
    c->workers.count = m->workers->count;
    c->workers.threads = m->workers->threads;
    c->workers.fights_per_thread = m->workers->fights_per_thread;
    COPY(c->coordinator.endpoint, m->coordinator->endpoint, "coordinator.endpoint");
    c->coordinator.lease_seconds = m->coordinator->lease_seconds;
    c->coordinator.heartbeat_ms = m->coordinator->heartbeat_ms;
    c->coordinator.heartbeat_liveness = m->coordinator->heartbeat_liveness;
    c->coordinator.metrics_port = m->coordinator->metrics_port;
    c->shard.zstd_level = m->shard->zstd_level;
    COPY(c->labels.unsearched, m->labels->unsearched, "labels.unsearched");
    if (c->search.simulations == 0 || c->search.trees == 0 || c->job_size == 0 ||
        c->workers.threads == 0 || c->workers.fights_per_thread == 0)
        return sf_err_set(err, SF_EFORMAT, "RunConfig: a required count is zero");
    return sf_config_validate(c, "RunConfig", err);
}

/* The digest covers what decides the labels: the run identity, seeds and
 * job split, what is played, the search and the model. Where and how the
 * run executes (output dir, worker counts and threads, endpoints, batching,
 * lease and heartbeat timing, compression level) is left out, so the same
 * run on 1 or 30 workers carries the same digest in every label. */
int sf_config_digest(const sf_run_config *cfg, char hex[65]) {
    sf_run_config c = *cfg;
    memset(c.output_dir, 0, sizeof c.output_dir);
    memset(&c.evald, 0, sizeof c.evald);
    memset(&c.workers, 0, sizeof c.workers);
    memset(&c.coordinator, 0, sizeof c.coordinator);
    memset(&c.shard, 0, sizeof c.shard);
    memset(c.model.bundle, 0, sizeof c.model.bundle); /* pinned by sha256, not path */
    sf_config_scratch *s = malloc(sizeof *s);
    if (!s)
        return SF_ENOMEM;
    Spirefleet__RunConfig *m = sf_config_to_proto(&c, s);
    size_t n = spirefleet__run_config__get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        free(s);
        return SF_ENOMEM;
    }
    spirefleet__run_config__pack(m, buf);
    uint8_t h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, buf, n);
    sf_hex(h, sizeof h, hex);
    free(buf);
    free(s);
    return SF_OK;
}

/* ---- envelopes ------------------------------------------------------------ */

int sf_wire_encode(Spirefleet__Envelope *env, uint8_t **out, size_t *len) {
    env->version = SF_PROTOCOL_VERSION;
    size_t n = spirefleet__envelope__get_packed_size(env);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return SF_ENOMEM;
    spirefleet__envelope__pack(env, buf);
    *out = buf;
    *len = n;
    return SF_OK;
}

int sf_wire_decode(const uint8_t *data, size_t len, Spirefleet__Envelope **out, sf_err *err) {
    *out = NULL;
    Spirefleet__Envelope *env = spirefleet__envelope__unpack(NULL, len, data);
    if (!env)
        return sf_err_set(err, SF_EFORMAT, "malformed envelope (%zu bytes)", len);
    if (env->version != SF_PROTOCOL_VERSION) {
        int v = (int)env->version;
        spirefleet__envelope__free_unpacked(env, NULL);
        return sf_err_set(err, SF_EVERSION, "protocol version %d, this build speaks %d", v,
                          SF_PROTOCOL_VERSION);
    }
    if (env->body_case == SPIREFLEET__ENVELOPE__BODY__NOT_SET) {
        spirefleet__envelope__free_unpacked(env, NULL);
        return sf_err_set(err, SF_EFORMAT, "envelope has no message body");
    }
    *out = env;
    return SF_OK;
}

void sf_wire_free(Spirefleet__Envelope *env) {
    if (env)
        spirefleet__envelope__free_unpacked(env, NULL);
}

int sf_wire_send(void *socket, const uint8_t *identity, size_t identity_len,
                 Spirefleet__Envelope *env, int dontwait) {
    uint8_t *buf;
    size_t n;
    if (sf_wire_encode(env, &buf, &n) < 0)
        return SF_ENOMEM;
    int flags = dontwait ? ZMQ_DONTWAIT : 0;
    int rc = SF_OK;
    if (identity_len > 0 && zmq_send(socket, identity, identity_len, flags | ZMQ_SNDMORE) < 0)
        rc = zmq_errno() == EAGAIN ? SF_EFULL : SF_EIO;
    if (rc == SF_OK && zmq_send(socket, buf, n, flags) < 0)
        rc = zmq_errno() == EAGAIN ? SF_EFULL : SF_EIO;
    free(buf);
    return rc;
}
