/*
 * config.c — the fleet's YAML run configuration: schema, defaults, parse
 * (libyaml document API, so every node carries its line and column),
 * validation, printing and the protobuf form.
 *
 * The schema is data: one row per scalar key with its type, range and
 * destination; the few structured keys (encounter mix, relic/potion lists,
 * c schedule) have small dedicated readers.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "engine/engine.h"
#include "proto/wire.h"

/* ---- defaults ----------------------------------------------------------- */

void sf_config_defaults(sf_run_config *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->output_dir, sizeof c->output_dir, "runs/<name>");
    c->run_seed = 1;
    c->seed_start = 0;
    c->job_size = 8;
    snprintf(c->kind, sizeof c->kind, "selfplay");
    snprintf(c->play.mode, sizeof c->play.mode, "fights");
    snprintf(c->play.deck, sizeof c->play.deck, "Strike*5,Defend*4,Bash");
    c->play.n_relics = 1;
    snprintf(c->play.relics[0], SF_CFG_NAME, "Burning Blood");
    c->play.hp = 80;
    c->play.max_hp = 80;
    c->search.simulations = 200;
    c->search.trees = 2;
    c->search.n_c_schedule = 3;
    c->search.c_schedule[0] = (sf_cfg_csched){500, 0.8};
    c->search.c_schedule[1] = (sf_cfg_csched){1000, 1.41};
    c->search.c_schedule[2] = (sf_cfg_csched){0, 2.5};
    c->search.widening_c = 5.79;
    c->search.widening_alpha = 0.44;
    c->search.rollout_tau = 32.0;
    snprintf(c->search.evaluator, sizeof c->search.evaluator, "rollout");
    c->search.gumbel_m = 16;
    c->search.gumbel_c_visit = 50.0;
    c->search.gumbel_c_scale = 1.0;
    c->search.cvar_alpha = 1.0;
    c->search.cvar_lambda = 0.0;
    c->search.max_rollout_plies = 200;
    snprintf(c->evald.endpoint, sizeof c->evald.endpoint, "tcp://127.0.0.1:5557");
    snprintf(c->evald.backend, sizeof c->evald.backend, "cpu");
    c->evald.max_batch = 256;
    c->evald.max_wait_us = 500;
    c->evald.timeout_ms = 5000;
    c->evald.retries = 2;
    c->workers.count = 2;
    c->workers.threads = 1;
    c->workers.fights_per_thread = 8;
    snprintf(c->coordinator.endpoint, sizeof c->coordinator.endpoint, "tcp://127.0.0.1:5555");
    c->coordinator.lease_seconds = 300;
    c->coordinator.heartbeat_ms = 1000;
    c->coordinator.heartbeat_liveness = 5;
    c->coordinator.metrics_port = 0;
    c->shard.zstd_level = 3;
    snprintf(c->labels.unsearched, sizeof c->labels.unsearched, "drop");
}

/* ---- schema ------------------------------------------------------------- */

/* T_SHA256: a SHA-256 a person typed: empty (none given) or 64 hex digits in
 * either case, stored in its canonical lower-case spelling (common.h), so the
 * labels, the manifests and the config digest see one spelling of a model. */
typedef enum { T_STR, T_SHA256, T_U32, T_U64, T_I32, T_F64, T_BOOL } ftype;

typedef struct field {
    const char *path; /* "search.simulations" */
    ftype type;
    size_t off, size;  /* destination in sf_run_config (size for strings) */
    double lo, hi;     /* numeric range, inclusive                       */
    const char *oneof; /* for strings: "a|b|c", or NULL for free text    */
} field;

#define F(path, type, member, lo, hi, oneof)                                                       \
    {                                                                                              \
        path, type, offsetof(sf_run_config, member), sizeof(((sf_run_config *)0)->member), lo, hi, \
            oneof                                                                                  \
    }

static const field fields[] = {
    F("run.name", T_STR, name, 1, 0, NULL),
    F("run.output_dir", T_STR, output_dir, 1, 0, NULL),
    F("run.seed", T_U64, run_seed, 0, 1.8e19, NULL),
    F("run.kind", T_STR, kind, 1, 0, "selfplay"),
    F("seeds.start", T_U64, seed_start, 0, 1.8e19, NULL),
    F("seeds.count", T_U64, seed_count, 1, 1e12, NULL),
    F("seeds.job_size", T_U32, job_size, 1, 100000, NULL),
    F("play.mode", T_STR, play.mode, 1, 0, "fights|gauntlet"),
    F("play.deck", T_STR, play.deck, 1, 0, NULL),
    F("play.hp", T_U32, play.hp, 1, 999, NULL),
    F("play.max_hp", T_U32, play.max_hp, 1, 999, NULL),
    F("play.ascension", T_U32, play.ascension, 0, SF_MAX_ASCENSION, NULL),
    F("search.simulations", T_U32, search.simulations, 1, 10000000, NULL),
    F("search.trees", T_U32, search.trees, 1, 64, NULL), /* SF_SEARCH_MAX_TREES */
    F("search.widening_c", T_F64, search.widening_c, 0.01, 1000, NULL),
    F("search.widening_alpha", T_F64, search.widening_alpha, 0, 1, NULL),
    F("search.rollout_tau", T_F64, search.rollout_tau, 0.001, 1e6, NULL),
    F("search.evaluator", T_STR, search.evaluator, 1, 0, "rollout|net"),
    F("search.gumbel", T_BOOL, search.gumbel, 0, 1, NULL),
    F("search.gumbel_m", T_U32, search.gumbel_m, 1, 64, NULL),
    F("search.gumbel_c_visit", T_F64, search.gumbel_c_visit, 0, 1e6, NULL),
    F("search.gumbel_c_scale", T_F64, search.gumbel_c_scale, 0, 1e6, NULL),
    F("search.teacher_rollouts", T_U32, search.teacher_rollouts, 0, 10000, NULL),
    F("search.clairvoyant", T_BOOL, search.clairvoyant, 0, 1, NULL),
    F("search.cvar_alpha", T_F64, search.cvar_alpha, 0.001, 1, NULL),
    F("search.cvar_lambda", T_F64, search.cvar_lambda, 0, 1, NULL),
    F("search.max_rollout_plies", T_U32, search.max_rollout_plies, 1, 100000, NULL),
    F("model.bundle", T_STR, model.bundle, 0, 0, NULL),
    F("model.sha256", T_SHA256, model.sha256, 0, 0, NULL),
    F("evald.endpoint", T_STR, evald.endpoint, 1, 0, NULL),
    F("evald.spawn", T_BOOL, evald.spawn, 0, 1, NULL),
    F("evald.backend", T_STR, evald.backend, 1, 0, "cpu|cuda"),
    F("evald.max_batch", T_U32, evald.max_batch, 1, 65536, NULL),
    F("evald.max_wait_us", T_U32, evald.max_wait_us, 0, 10000000, NULL),
    F("evald.timeout_ms", T_U32, evald.timeout_ms, 1, 3600000, NULL),
    F("evald.retries", T_U32, evald.retries, 0, 100, NULL),
    F("workers.count", T_U32, workers.count, 0, 4096, NULL),
    F("workers.threads", T_U32, workers.threads, 1, 1024, NULL),
    F("workers.fights_per_thread", T_U32, workers.fights_per_thread, 1, 4096, NULL),
    F("coordinator.endpoint", T_STR, coordinator.endpoint, 1, 0, NULL),
    F("coordinator.lease_seconds", T_U32, coordinator.lease_seconds, 1, 604800, NULL),
    F("coordinator.heartbeat_ms", T_U32, coordinator.heartbeat_ms, 10, 600000, NULL),
    F("coordinator.heartbeat_liveness", T_U32, coordinator.heartbeat_liveness, 2, 1000, NULL),
    F("coordinator.metrics_port", T_U32, coordinator.metrics_port, 0, 65535, NULL),
    F("shard.zstd_level", T_I32, shard.zstd_level, -7, 22, NULL),
    F("labels.unsearched", T_STR, labels.unsearched, 1, 0, "drop|keep"),
};
#undef F

/* Structured keys handled by dedicated readers. */
static const char *const special_keys[] = {"play.encounters", "play.relics", "play.potions",
                                           "search.c_schedule"};

static const char *const sections[] = {"run",   "seeds",   "play",        "search", "model",
                                       "evald", "workers", "coordinator", "shard",  "labels"};

/* ---- parse context ------------------------------------------------------ */

typedef struct ctx {
    yaml_document_t *doc;
    const char *origin;
    sf_run_config *cfg;
    sf_err *err;
    /* where each key was given (NULL: not in the file), for messages */
    const yaml_node_t *at[sizeof fields / sizeof fields[0]];
    const yaml_node_t *special_at[sizeof special_keys / sizeof special_keys[0]];
    int problems;               /* reported so far; the first one is in err */
    sf_config_report_fn report; /* every problem, in file order (may be NULL) */
    void *report_ctx;
} ctx;

/* A broken cross-field or content rule: the key at fault and why. */
typedef void (*rule_fn)(void *ctx, const char *key, const char *why);
static int check_config(const sf_run_config *c, rule_fn bad, void *bad_ctx);

/* The node a key's value came from, or NULL when the file did not give it. */
static const yaml_node_t *node_of(const ctx *x, const char *key) {
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!strcmp(fields[i].path, key))
            return x->at[i];
    for (size_t i = 0; i < sizeof special_keys / sizeof special_keys[0]; i++)
        if (!strcmp(special_keys[i], key))
            return x->special_at[i];
    return NULL;
}

/* Report one problem (a whole line: "origin[:line:col]: ..."): the first
 * becomes the error, every one goes to the report callback. */
static int problem(ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int problem(ctx *x, const char *fmt, ...) {
    char line[SF_ERR_MSG_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (x->problems++ == 0)
        sf_err_set(x->err, SF_ECONFIG, "%s", line);
    if (x->report)
        x->report(x->report_ctx, line);
    return SF_ECONFIG;
}

/* A problem with `key`, at node `n` (NULL: a key the file lacks). */
static int fail(ctx *x, const yaml_node_t *n, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(ctx *x, const yaml_node_t *n, const char *key, const char *fmt, ...) {
    char msg[SF_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n)
        return problem(x, "%s:%zu:%zu: %s: %s", x->origin, n->start_mark.line + 1,
                       n->start_mark.column + 1, key, msg);
    return problem(x, "%s: %s: %s", x->origin, key, msg);
}

static const char *scalar(const yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int parse_bool(const char *s, int *out) {
    static const char *const t[] = {"true", "True", "TRUE", "yes", "Yes", "on", "1"};
    static const char *const f[] = {"false", "False", "FALSE", "no", "No", "off", "0"};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(s, t[i]))
            return *out = 1, 1;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!strcmp(s, f[i]))
            return *out = 0, 1;
    return 0;
}

static int oneof_ok(const char *oneof, const char *v) {
    size_t lv = strlen(v);
    for (const char *p = oneof; *p;) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (l == lv && !strncmp(p, v, l))
            return 1;
        p += l + (bar ? 1 : 0);
    }
    return 0;
}

static int set_field(ctx *x, const field *f, const yaml_node_t *n) {
    const char *v = scalar(n);
    if (!v)
        return fail(x, n, f->path, "expected a scalar value, got a %s",
                    n->type == YAML_MAPPING_NODE ? "mapping" : "sequence");
    char *dst = (char *)x->cfg + f->off;
    char *end = NULL;
    if ((f->type == T_STR || f->type == T_SHA256) &&
        n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL")))
        return fail(x, n, f->path, "is null; give a value (quote it to mean the text)");
    switch (f->type) {
    case T_SHA256: {
        _Static_assert(sizeof(((sf_run_config *)0)->model.sha256) == SF_SHA256_HEX_LEN + 1,
                       "model.sha256 holds one canonical SHA-256");
        if (!v[0]) { /* "" gives no pin */
            dst[0] = '\0';
            return SF_OK;
        }
        sf_err e = {0};
        if (sf_sha256_hex_parse(v, dst, &e) != SF_OK)
            return fail(x, n, f->path, "%s", e.msg);
        return SF_OK;
    }
    case T_STR: {
        size_t l = strlen(v);
        if (l >= f->size)
            return fail(x, n, f->path, "too long (%zu characters, at most %zu)", l, f->size - 1);
        if ((size_t)f->lo > l)
            return fail(x, n, f->path, "must not be empty");
        if (f->oneof && !oneof_ok(f->oneof, v))
            return fail(x, n, f->path, "expected one of %s, got '%s'", f->oneof, v);
        memcpy(dst, v, l + 1);
        return SF_OK;
    }
    case T_BOOL: {
        int b;
        if (!parse_bool(v, &b))
            return fail(x, n, f->path, "expected true or false, got '%s'", v);
        *(int *)(void *)dst = b;
        return SF_OK;
    }
    case T_F64: {
        errno = 0;
        double d = strtod(v, &end);
        if (end == v || *end || errno || !isfinite(d))
            return fail(x, n, f->path, "expected a number, got '%s'", v);
        if (d < f->lo || d > f->hi)
            return fail(x, n, f->path, "%g is out of range %g..%g", d, f->lo, f->hi);
        *(double *)(void *)dst = d;
        return SF_OK;
    }
    default: break;
    }
    /* integers */
    errno = 0;
    if (v[0] == '-' && f->type != T_I32)
        return fail(x, n, f->path, "expected a non-negative integer, got '%s'", v);
    long long ll = 0;
    unsigned long long ull = 0;
    if (f->type == T_I32)
        ll = strtoll(v, &end, 10);
    else
        ull = strtoull(v, &end, 10);
    if (end == v || *end)
        return fail(x, n, f->path, "expected an integer, got '%s'", v);
    if (errno == ERANGE)
        return fail(x, n, f->path, "%s is out of range %.0f..%.0f", v, f->lo, f->hi);
    double d = f->type == T_I32 ? (double)ll : (double)ull;
    if (d < f->lo || d > f->hi)
        return fail(x, n, f->path, "%s is out of range %.0f..%.0f", v, f->lo, f->hi);
    switch (f->type) {
    case T_U32: *(uint32_t *)(void *)dst = (uint32_t)ull; break;
    case T_U64: *(uint64_t *)(void *)dst = (uint64_t)ull; break;
    case T_I32: *(int *)(void *)dst = (int)ll; break;
    default: break;
    }
    return SF_OK;
}

/* play.encounters: a mapping of encounter or pool name -> weight. A pool
 * (weak, strong, elite, boss, all) spreads its weight evenly over its
 * encounters, so {weak: 1, boss: 1} gives both classes the same share. */
static int add_encounter(ctx *x, const yaml_node_t *at, int id, double w) {
    sf_run_config *c = x->cfg;
    for (int i = 0; i < c->play.n_encounters; i++) {
        if (c->play.encounters[i].id == id) {
            c->play.encounters[i].weight += w;
            return SF_OK;
        }
    }
    if (c->play.n_encounters >= SF_CFG_MAX_ENCOUNTERS)
        return fail(x, at, "play.encounters", "too many encounters");
    c->play.encounters[c->play.n_encounters++] = (sf_cfg_encounter){id, w};
    return SF_OK;
}

static int read_encounters(ctx *x, const yaml_node_t *n) {
    if (n->type != YAML_MAPPING_NODE)
        return fail(x, n, "play.encounters", "expected a mapping of encounter name to weight");
    x->cfg->play.n_encounters = 0;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
        const char *name = scalar(k), *ws = scalar(v);
        if (!name)
            return fail(x, k, "play.encounters", "keys must be encounter or pool names");
        char *end;
        double w = ws ? strtod(ws, &end) : -1;
        if (!ws || end == ws || *end || !(w > 0) || !isfinite(w))
            return fail(x, v, "play.encounters", "weight of '%s' must be a positive number", name);
        int pool = !strcmp(name, "weak")     ? SF_POOL_WEAK
                   : !strcmp(name, "strong") ? SF_POOL_STRONG
                   : !strcmp(name, "elite")  ? SF_POOL_ELITE
                   : !strcmp(name, "boss")   ? SF_POOL_BOSS
                   : !strcmp(name, "all")    ? 99
                                             : -1;
        if (pool >= 0) {
            int members = 0;
            for (int e = 0; e < sf_encounter_count(); e++)
                members += pool == 99 || sf_encounter_pool(e) == pool;
            for (int e = 0; e < sf_encounter_count(); e++)
                if (pool == 99 || sf_encounter_pool(e) == pool)
                    if (add_encounter(x, k, e, w / members) < 0)
                        return SF_ECONFIG;
            continue;
        }
        int id = sf_encounter_lookup(name);
        if (id < 0)
            return fail(x, k, "play.encounters",
                        "unknown encounter '%s' (an Act-1 encounter name, or weak, strong, "
                        "elite, boss, all)",
                        name);
        if (add_encounter(x, k, id, w) < 0)
            return SF_ECONFIG;
    }
    if (x->cfg->play.n_encounters == 0)
        return fail(x, n, "play.encounters", "must name at least one encounter");
    return SF_OK;
}

static int read_names(ctx *x, const yaml_node_t *n, const char *key, int (*lookup)(const char *),
                      char (*out)[SF_CFG_NAME], int cap, int *count) {
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(x, n, key, "expected a list of names");
    *count = 0;
    int rc = SF_OK;
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        yaml_node_t *e = yaml_document_get_node(x->doc, *it);
        const char *v = scalar(e);
        if (*count >= cap)
            return fail(x, e, key, "at most %d entries", cap);
        /* every bad entry is reported, not just the first */
        if (!v)
            rc = fail(x, e, key, "list items must be names");
        else if (lookup(v) < 0)
            rc = fail(x, e, key, "unknown name '%s'", v);
        else if (strlen(v) >= SF_CFG_NAME)
            rc = fail(x, e, key, "name too long");
        else
            snprintf(out[(*count)++], SF_CFG_NAME, "%s", v);
    }
    return rc;
}

static int read_csched(ctx *x, const yaml_node_t *n) {
    const char *key = "search.c_schedule";
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(x, n, key, "expected a list of {below: N, c: X} entries");
    sf_run_config *c = x->cfg;
    c->search.n_c_schedule = 0;
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        yaml_node_t *e = yaml_document_get_node(x->doc, *it);
        if (e->type != YAML_MAPPING_NODE)
            return fail(x, e, key, "each entry must be a mapping {below: N, c: X}");
        if (c->search.n_c_schedule >= SF_CFG_MAX_CSCHED)
            return fail(x, e, key, "at most %d entries", SF_CFG_MAX_CSCHED);
        sf_cfg_csched s = {0, -1};
        for (yaml_node_pair_t *p = e->data.mapping.pairs.start; p < e->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
            yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
            const char *ks = scalar(k), *vs = scalar(v);
            char *end;
            if (ks && !strcmp(ks, "below") && vs) {
                unsigned long b = strtoul(vs, &end, 10);
                if (end == vs || *end || b > 100000000ul || vs[0] == '-')
                    return fail(x, v, "search.c_schedule.below",
                                "expected a simulation count, got '%s'", vs);
                s.below = (uint32_t)b;
            } else if (ks && !strcmp(ks, "c") && vs) {
                double d = strtod(vs, &end);
                if (end == vs || *end || !(d >= 0) || d > 100)
                    return fail(x, v, "search.c_schedule.c",
                                "expected a number in 0..100, got '%s'", vs);
                s.c = d;
            } else {
                return fail(x, k, key, "unknown key '%s' (expected below, c)", ks ? ks : "?");
            }
        }
        if (s.c < 0)
            return fail(x, e, key, "entry is missing 'c'");
        c->search.c_schedule[c->search.n_c_schedule++] = s;
    }
    if (c->search.n_c_schedule == 0)
        return fail(x, n, key, "must have at least one entry");
    return SF_OK;
}

static int read_special(ctx *x, const char *path, const yaml_node_t *n) {
    sf_run_config *c = x->cfg;
    if (!strcmp(path, "play.encounters"))
        return read_encounters(x, n);
    if (!strcmp(path, "play.relics"))
        return read_names(x, n, path, sf_relic_lookup, c->play.relics, SF_CFG_MAX_RELICS,
                          &c->play.n_relics);
    if (!strcmp(path, "play.potions"))
        return read_names(x, n, path, sf_potion_lookup, c->play.potions, SF_CFG_MAX_POTIONS,
                          &c->play.n_potions);
    return read_csched(x, n);
}

static int read_section(ctx *x, const char *section, const yaml_node_t *n) {
    if (n->type != YAML_MAPPING_NODE)
        return fail(x, n, section, "expected a mapping");
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
        const char *ks = scalar(k);
        if (!ks) {
            fail(x, k, section, "keys must be plain names");
            continue;
        }
        char path[96];
        snprintf(path, sizeof path, "%s.%s", section, ks);
        int handled = 0;
        for (size_t i = 0; i < sizeof special_keys / sizeof special_keys[0]; i++) {
            if (!strcmp(path, special_keys[i])) {
                handled = 1;
                if (x->special_at[i]) {
                    fail(x, k, path, "given twice");
                    break;
                }
                x->special_at[i] = v;
                read_special(x, path, v); /* a problem is reported; go on */
            }
        }
        for (size_t i = 0; i < sizeof fields / sizeof fields[0] && !handled; i++) {
            if (!strcmp(path, fields[i].path)) {
                handled = 1;
                if (x->at[i]) {
                    fail(x, k, path, "given twice");
                    break;
                }
                x->at[i] = v;
                set_field(x, &fields[i], v); /* a problem is reported; go on */
            }
        }
        if (!handled) {
            char keys[512] = "";
            size_t len = 0, pre = strlen(section);
            for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
                if (!strncmp(fields[i].path, section, pre) && fields[i].path[pre] == '.')
                    len += (size_t)snprintf(keys + len, sizeof keys - len, "%s%s", len ? ", " : "",
                                            fields[i].path + pre + 1);
            for (size_t i = 0; i < sizeof special_keys / sizeof special_keys[0]; i++)
                if (!strncmp(special_keys[i], section, pre) && special_keys[i][pre] == '.' &&
                    len < sizeof keys)
                    len += (size_t)snprintf(keys + len, sizeof keys - len, ", %s",
                                            special_keys[i] + pre + 1);
            fail(x, k, path, "unknown key (%s takes: %s)", section, keys);
        }
    }
    return SF_OK;
}

/* A broken rule, at the key's position in the file. */
static void rule_in_file(void *p, const char *key, const char *why) {
    ctx *x = p;
    const yaml_node_t *n = node_of(x, key);
    if (!n && !strcmp(key, "play.hp")) /* above a max_hp given alone: point there */
        n = node_of(x, "play.max_hp");
    fail(x, n, key, "%s", why);
}

int sf_config_parse_all(const char *text, size_t len, const char *origin, sf_run_config *cfg,
                        sf_config_report_fn report, void *report_ctx, sf_err *err) {
    sf_config_defaults(cfg);
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return sf_err_set(err, SF_ENOMEM, "%s: cannot initialise the YAML parser", origin);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    ctx x = {.doc = &doc,
             .origin = origin,
             .cfg = cfg,
             .err = err,
             .report = report,
             .report_ctx = report_ctx};
    if (!yaml_parser_load(&parser, &doc)) {
        int rc =
            problem(&x, "%s:%zu:%zu: YAML syntax error: %s", origin, parser.problem_mark.line + 1,
                    parser.problem_mark.column + 1, parser.problem ? parser.problem : "unknown");
        yaml_parser_delete(&parser);
        return rc;
    }
    int rc = SF_OK;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        rc = problem(&x, "%s: the file is empty", origin);
    } else if (root->type != YAML_MAPPING_NODE) {
        rc = fail(&x, root, "(top level)", "expected a mapping of sections");
    } else {
        for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(&doc, p->key);
            yaml_node_t *v = yaml_document_get_node(&doc, p->value);
            const char *ks = scalar(k);
            int known = 0;
            for (size_t i = 0; i < sizeof sections / sizeof sections[0] && ks; i++)
                known |= !strcmp(ks, sections[i]);
            if (!known)
                fail(&x, k, ks ? ks : "(key)",
                     "unknown section (expected run, seeds, play, search, model, evald, "
                     "workers, coordinator, shard)");
            else
                read_section(&x, ks, v);
        }
        if (!cfg->name[0] && !node_of(&x, "run.name"))
            fail(&x, NULL, "run.name", "is required");
        if (cfg->seed_count == 0 && !node_of(&x, "seeds.count"))
            fail(&x, NULL, "seeds.count", "is required");
        rc = x.problems ? SF_ECONFIG : SF_OK;
    }

    if (rc == SF_OK && !strcmp(cfg->output_dir, "runs/<name>"))
        snprintf(cfg->output_dir, sizeof cfg->output_dir, "runs/%s", cfg->name);
    /* The rules between keys need every key read: checked once all parsed,
     * each broken one reported. */
    if (rc == SF_OK && check_config(cfg, rule_in_file, &x) > 0)
        rc = SF_ECONFIG;
    if (root) {
        /* A config is one YAML document: a second one after '---' would be
         * silently ignored, so refuse it. */
        yaml_document_t next;
        if (!yaml_parser_load(&parser, &next)) {
            rc = problem(&x, "%s:%zu:%zu: YAML syntax error: %s", origin,
                         parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                         parser.problem ? parser.problem : "unknown");
        } else {
            if (yaml_document_get_root_node(&next))
                rc = problem(&x,
                             "%s:%zu:%zu: a second YAML document; a run config is one document "
                             "(remove the '---' and what follows)",
                             origin, next.start_mark.line + 1, next.start_mark.column + 1);
            yaml_document_delete(&next);
        }
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

int sf_config_parse(const char *text, size_t len, const char *origin, sf_run_config *cfg,
                    sf_err *err) {
    return sf_config_parse_all(text, len, origin, cfg, NULL, NULL, err);
}

/* The whole file into a new heap buffer (*buf, caller frees), at most 16 MiB. */
static int read_file(const char *path, char **buf_out, size_t *len_out, sf_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return sf_err_set(err, SF_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fclose(f);
        return sf_err_set(err, SF_EIO, "%s: is a directory, not a config file", path);
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 > cap) {
            cap = cap ? cap * 2 : 8192;
            if (cap > (1u << 24)) {
                free(buf);
                fclose(f);
                return sf_err_set(err, SF_ECONFIG, "%s: larger than 16 MiB", path);
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    int rd_err = ferror(f);
    fclose(f);
    if (rd_err) {
        free(buf);
        return sf_err_set(err, SF_EIO, "%s: read error", path);
    }
    *buf_out = buf;
    *len_out = len;
    return SF_OK;
}

int sf_config_load(const char *path, sf_run_config *cfg, sf_err *err) {
    return sf_config_load_all(path, cfg, NULL, NULL, err);
}

int sf_config_load_all(const char *path, sf_run_config *cfg, sf_config_report_fn report,
                       void *report_ctx, sf_err *err) {
    sf_err local = {0};
    if (!err)
        err = &local;
    char *buf = NULL;
    size_t len = 0;
    int rc = read_file(path, &buf, &len, err);
    if (rc < 0) {
        sf_config_defaults(cfg);
        if (report)
            report(report_ctx, err->msg);
        return rc;
    }
    rc = sf_config_parse_all(buf, len, path, cfg, report, report_ctx, err);
    free(buf);
    return rc;
}

/* ---- validation ----------------------------------------------------------- */

/* A run name becomes part of file names (shards, scratch files): letters,
 * digits, '.', '_' and '-', not starting with '.'. */
static int name_ok(const char *s) {
    if (!s[0] || s[0] == '.')
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

/* Documented in wire.h. ZeroMQ would wrap a port above 65535 silently. */
const char *sf_endpoint_problem(const char *s) {
    if (!strncmp(s, "inproc://", 9))
        return "inproc:// reaches only threads of one process, and the coordinator, workers "
               "and gpu-evald are separate processes; use tcp://HOST:PORT or ipc://PATH";
    if (!strncmp(s, "ipc://", 6)) {
        size_t l = strlen(s + 6);
        if (l == 0)
            return "ipc:// needs a socket path";
        if (l > 107)
            return "the ipc:// path is longer than 107 bytes (the Unix socket limit)";
        return NULL;
    }
    if (strncmp(s, "tcp://", 6))
        return "not a tcp://HOST:PORT or ipc://PATH endpoint";
    const char *colon = strrchr(s + 6, ':');
    if (!colon || colon == s + 6)
        return "tcp:// needs HOST:PORT (PORT a number 1..65535, or * for any free port)";
    const char *port = colon + 1;
    if (!strcmp(port, "*"))
        return NULL;
    unsigned long p = 0;
    size_t digits = 0;
    for (const char *q = port; *q; q++, digits++) {
        if (*q < '0' || *q > '9' || digits >= 6)
            return "the tcp:// port must be a number 1..65535, or *";
        p = p * 10 + (unsigned long)(*q - '0');
    }
    if (digits == 0 || p == 0 || p > 65535)
        return "the tcp:// port must be a number 1..65535, or *";
    return NULL;
}

/* The cross-field and content rules, shared by sf_config_validate() and the
 * YAML parser (which adds the line and column of the key). Every broken rule
 * is passed to `bad` with the offending key's path; returns how many. */
static int check_config(const sf_run_config *c, rule_fn bad, void *bad_ctx) {
    int n = 0;
    char why[SF_ERR_MSG_MAX];
#define BAD(k, ...)                             \
    do {                                        \
        snprintf(why, sizeof why, __VA_ARGS__); \
        bad(bad_ctx, (k), why);                 \
        n++;                                    \
    } while (0)
    if (!name_ok(c->name))
        BAD("run.name",
            "'%s' may hold only letters, digits, '.', '_' and '-' and must not start with '.' "
            "(it names files)",
            c->name);
    const char *p;
    if ((p = sf_endpoint_problem(c->coordinator.endpoint)))
        BAD("coordinator.endpoint", "'%s': %s", c->coordinator.endpoint, p);
    if ((p = sf_endpoint_problem(c->evald.endpoint)))
        BAD("evald.endpoint", "'%s': %s", c->evald.endpoint, p);
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    sf_err e = {0};
    if (sf_deck_parse(c->play.deck, &spec, &e) < 0)
        BAD("play.deck", "%s", strncmp(e.msg, "deck: ", 6) ? e.msg : e.msg + 6);
    if (c->play.hp > c->play.max_hp)
        BAD("play.hp", "%u is above play.max_hp (%u)", c->play.hp, c->play.max_hp);
    for (int i = 0; i < c->play.n_relics; i++)
        if (sf_relic_lookup(c->play.relics[i]) < 0)
            BAD("play.relics", "unknown relic '%s'", c->play.relics[i]);
    for (int i = 0; i < c->play.n_potions; i++)
        if (sf_potion_lookup(c->play.potions[i]) < 0)
            BAD("play.potions", "unknown potion '%s'", c->play.potions[i]);
    for (int i = 0; i < c->play.n_encounters; i++)
        if (c->play.encounters[i].id < 0 || c->play.encounters[i].id >= sf_encounter_count() ||
            !(c->play.encounters[i].weight > 0))
            BAD("play.encounters", "entry %d is invalid", i);
    if (c->play.n_encounters > 0 && !strcmp(c->play.mode, "gauntlet"))
        BAD("play.encounters",
            "applies to play.mode fights only; a gauntlet draws its fights from the act's "
            "pools (remove it or set play.mode: fights)");
    if (c->search.trees > c->search.simulations)
        BAD("search.trees",
            "%u is above search.simulations (%u): each tree runs at least one simulation",
            c->search.trees, c->search.simulations);
    for (int i = 1; i < c->search.n_c_schedule; i++) {
        uint32_t prev = c->search.c_schedule[i - 1].below, cur = c->search.c_schedule[i].below;
        if (prev == 0 || (cur != 0 && cur <= prev)) {
            BAD("search.c_schedule", "'below' must increase, with only the last entry unbounded");
            break;
        }
    }
    if (!strcmp(c->search.evaluator, "net")) {
        if (!c->model.bundle[0])
            BAD("model.bundle", "required when search.evaluator is net");
        if (!c->model.sha256[0])
            BAD("model.sha256", "a 64-digit hex SHA-256 is required when search.evaluator is net");
    }
    /* A config file's model.sha256 was normalised when read (T_SHA256); a
     * config built in memory or from a RunConfig message must already hold
     * the canonical spelling, or its digest would name the model differently. */
    if (c->model.sha256[0] && !sf_sha256_hex_canonical(c->model.sha256)) {
        sf_err e = {0};
        char lower[SF_SHA256_HEX_LEN + 1];
        if (sf_sha256_hex_parse(c->model.sha256, lower, &e) != SF_OK)
            BAD("model.sha256", "%s", e.msg);
        else
            BAD("model.sha256", "'%s' is not in lower case; a SHA-256 is stored and sent as '%s'",
                c->model.sha256, lower);
    }
    if (c->seed_start + c->seed_count < c->seed_start)
        BAD("seeds.count", "seeds.start + seeds.count overflows");
    return n;
#undef BAD
}

typedef struct first_rule {
    const char *origin;
    sf_err *err;
    int seen;
} first_rule;

static void keep_first(void *p, const char *key, const char *why) {
    first_rule *f = p;
    if (f->seen++ == 0)
        sf_err_set(f->err, SF_ECONFIG, "%s: %s: %s", f->origin, key, why);
}

int sf_config_validate(const sf_run_config *c, const char *origin, sf_err *err) {
    first_rule f = {origin, err, 0};
    return check_config(c, keep_first, &f) > 0 ? SF_ECONFIG : SF_OK;
}

/* ---- printing ------------------------------------------------------------- */

/* The shortest decimal that reads back as the same double. */
static const char *num(double v, char buf[32]) {
    if (v == (double)(long long)v && v > -1e15 && v < 1e15) {
        snprintf(buf, 32, "%lld", (long long)v);
        return buf;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

static void print_str(FILE *o, const char *key, const char *v) {
    fprintf(o, "  %s: \"", key);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', o);
        fputc(*p, o);
    }
    fprintf(o, "\"\n");
}

void sf_config_print(const sf_run_config *c, FILE *o) {
    fprintf(o, "run:\n");
    print_str(o, "name", c->name);
    print_str(o, "output_dir", c->output_dir);
    fprintf(o, "  seed: %llu\n", (unsigned long long)c->run_seed);
    print_str(o, "kind", c->kind);
    fprintf(o, "seeds:\n  start: %llu\n  count: %llu\n  job_size: %u\n",
            (unsigned long long)c->seed_start, (unsigned long long)c->seed_count, c->job_size);
    fprintf(o, "play:\n");
    print_str(o, "mode", c->play.mode);
    if (c->play.n_encounters == 0)
        fprintf(o, "  # encounters: every Act-1 encounter, equally (the default)\n");
    else
        fprintf(o, "  encounters:\n");
    char b1[32], b2[32], b3[32], b4[32];
    for (int i = 0; i < c->play.n_encounters; i++)
        fprintf(o, "    \"%s\": %s\n", sf_encounter_name(c->play.encounters[i].id),
                num(c->play.encounters[i].weight, b1));
    print_str(o, "deck", c->play.deck);
    fprintf(o, "  relics: [");
    for (int i = 0; i < c->play.n_relics; i++)
        fprintf(o, "%s\"%s\"", i ? ", " : "", c->play.relics[i]);
    fprintf(o, "]\n  potions: [");
    for (int i = 0; i < c->play.n_potions; i++)
        fprintf(o, "%s\"%s\"", i ? ", " : "", c->play.potions[i]);
    fprintf(o, "]\n  hp: %u\n  max_hp: %u\n  ascension: %u\n", c->play.hp, c->play.max_hp,
            c->play.ascension);
    fprintf(o, "search:\n  simulations: %u\n  trees: %u\n  c_schedule:\n", c->search.simulations,
            c->search.trees);
    for (int i = 0; i < c->search.n_c_schedule; i++) {
        if (c->search.c_schedule[i].below)
            fprintf(o, "    - {below: %u, c: %s}\n", c->search.c_schedule[i].below,
                    num(c->search.c_schedule[i].c, b1));
        else
            fprintf(o, "    - {c: %s}             # every other budget\n",
                    num(c->search.c_schedule[i].c, b1));
    }
    fprintf(o, "  widening_c: %s\n  widening_alpha: %s\n  rollout_tau: %s\n",
            num(c->search.widening_c, b1), num(c->search.widening_alpha, b2),
            num(c->search.rollout_tau, b3));
    print_str(o, "evaluator", c->search.evaluator);
    fprintf(o,
            "  gumbel: %s\n  gumbel_m: %u\n  gumbel_c_visit: %s\n  gumbel_c_scale: %s\n"
            "  teacher_rollouts: %u\n  clairvoyant: %s\n  cvar_alpha: %s\n"
            "  cvar_lambda: %s\n  max_rollout_plies: %u\n",
            c->search.gumbel ? "true" : "false", c->search.gumbel_m,
            num(c->search.gumbel_c_visit, b1), num(c->search.gumbel_c_scale, b2),
            c->search.teacher_rollouts, c->search.clairvoyant ? "true" : "false",
            num(c->search.cvar_alpha, b3), num(c->search.cvar_lambda, b4),
            c->search.max_rollout_plies);
    fprintf(o, "model:\n");
    print_str(o, "bundle", c->model.bundle);
    print_str(o, "sha256", c->model.sha256);
    fprintf(o, "evald:\n");
    print_str(o, "endpoint", c->evald.endpoint);
    fprintf(o, "  spawn: %s\n", c->evald.spawn ? "true" : "false");
    print_str(o, "backend", c->evald.backend);
    fprintf(o, "  max_batch: %u\n  max_wait_us: %u\n  timeout_ms: %u\n  retries: %u\n",
            c->evald.max_batch, c->evald.max_wait_us, c->evald.timeout_ms, c->evald.retries);
    fprintf(o, "workers:\n  count: %u\n  threads: %u\n  fights_per_thread: %u\n", c->workers.count,
            c->workers.threads, c->workers.fights_per_thread);
    fprintf(o, "coordinator:\n");
    print_str(o, "endpoint", c->coordinator.endpoint);
    fprintf(o,
            "  lease_seconds: %u\n  heartbeat_ms: %u\n  heartbeat_liveness: %u\n"
            "  metrics_port: %u\n",
            c->coordinator.lease_seconds, c->coordinator.heartbeat_ms,
            c->coordinator.heartbeat_liveness, c->coordinator.metrics_port);
    fprintf(o, "shard:\n  zstd_level: %d\n", c->shard.zstd_level);
    fprintf(o, "labels:\n");
    print_str(o, "unsearched", c->labels.unsearched);
}
