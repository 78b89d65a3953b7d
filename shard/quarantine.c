/* quarantine.c — a shard directory's quarantine list (shard.h): shards an
 * operator has removed from the data set (`sf-fleet quarantine`), by
 * content digest. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/io.h"
#include "shard/internal.h"

#define QLINE_MAX 400

struct sf_shard_quarantine {
    sf_shard_quarantine_entry *v;
    size_t n, cap;
};

static int q_push(sf_shard_quarantine *q, const sf_shard_quarantine_entry *e) {
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 16;
        sf_shard_quarantine_entry *v = realloc(q->v, cap * sizeof *v);
        if (!v)
            return SF_ENOMEM;
        q->v = v;
        q->cap = cap;
    }
    q->v[q->n++] = *e;
    return SF_OK;
}

static void list_path(const char *dir, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s/%s", dir, SF_SHARD_QUARANTINE_FILE);
    if (n < 0 || (size_t)n >= cap)
        out[0] = 0;
}

/* One line: DIGEST NAME KEY_ID UNIX; the file is ours, but a trainer may
 * have copied it from anywhere: every field is checked. */
static int parse_line(char *line, sf_shard_quarantine_entry *e) {
    char *save = NULL, *dig = strtok_r(line, " \t\r\n", &save);
    char *name = strtok_r(NULL, " \t\r\n", &save), *key = strtok_r(NULL, " \t\r\n", &save);
    char *when = strtok_r(NULL, " \t\r\n", &save), *end = NULL;
    if (!dig || !name || !key || !when || strtok_r(NULL, " \t\r\n", &save) ||
        !sf_sha256_hex_canonical(dig) || strchr(name, '/') || strlen(name) > SF_SHARD_NAME_MAX ||
        strlen(key) > SF_SHARD_KEY_ID_MAX)
        return -1;
    long long t = strtoll(when, &end, 10);
    if (end == when || *end)
        return -1;
    memset(e, 0, sizeof *e);
    if (sf_unhex(dig, e->digest, SF_SHARD_DIGEST_BYTES) < 0)
        return -1;
    memcpy(e->name, name, strlen(name) + 1);
    memcpy(e->key_id, key, strlen(key) + 1);
    e->when_unix = t;
    return 0;
}

int sf_shard_quarantine_load(const char *dir, sf_shard_quarantine **out, sf_err *err) {
    *out = NULL;
    sf_shard_quarantine *q = calloc(1, sizeof *q);
    if (!q)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    char path[1200];
    list_path(dir, path, sizeof path);
    FILE *f = fopen(path, "r");
    if (!f && errno != ENOENT) {
        free(q);
        return sf_err_set(err, SF_EIO, "%s: %s", path, strerror(errno));
    }
    char line[QLINE_MAX];
    int no = 0, rc = SF_OK;
    while (f && rc == SF_OK && fgets(line, sizeof line, f)) {
        no++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        sf_shard_quarantine_entry e;
        if (parse_line(line, &e) < 0)
            rc = sf_err_set(err, SF_EFORMAT,
                            "%s:%d: expected 'CONTENT_DIGEST NAME KEY_ID UNIX_TIME'", path, no);
        else if (q_push(q, &e) < 0)
            rc = sf_err_set(err, SF_ENOMEM, "out of memory");
    }
    if (f)
        fclose(f);
    if (rc < 0) {
        sf_shard_quarantine_free(q);
        return rc;
    }
    *out = q;
    return SF_OK;
}

const sf_shard_quarantine_entry *sf_shard_quarantine_find(const sf_shard_quarantine *q,
                                                          const uint8_t digest[32],
                                                          const char *key_id) {
    for (size_t i = 0; q && i < q->n; i++)
        if (!memcmp(q->v[i].digest, digest, SF_SHARD_DIGEST_BYTES) &&
            (!key_id || !key_id[0] || !strcmp(q->v[i].key_id, "-") ||
             !strcmp(q->v[i].key_id, key_id)))
            return &q->v[i];
    return NULL;
}

size_t sf_shard_quarantine_count(const sf_shard_quarantine *q) {
    return q ? q->n : 0;
}

const sf_shard_quarantine_entry *sf_shard_quarantine_at(const sf_shard_quarantine *q, size_t i) {
    return q && i < q->n ? &q->v[i] : NULL;
}

int sf_shard_quarantine_add(const char *dir, const sf_shard_quarantine_entry *e, sf_err *err) {
    sf_shard_quarantine *q;
    int rc = sf_shard_quarantine_load(dir, &q, err);
    if (rc < 0)
        return rc;
    const sf_shard_quarantine_entry *had = sf_shard_quarantine_find(q, e->digest, e->key_id);
    if (had && !strcmp(had->key_id, e->key_id)) {
        sf_shard_quarantine_free(q);
        return SF_OK;
    }
    rc = q_push(q, e) < 0 ? sf_err_set(err, SF_ENOMEM, "out of memory") : SF_OK;
    size_t cap = 128 + q->n * QLINE_MAX;
    char *text = rc == SF_OK ? malloc(cap) : NULL;
    if (rc == SF_OK && !text)
        rc = sf_err_set(err, SF_ENOMEM, "out of memory");
    size_t len = 0;
    if (text) {
        len += (size_t)snprintf(text, cap,
                                "# quarantined shards (sf-fleet quarantine): content digest, "
                                "name, worker key id, unix time\n");
        for (size_t i = 0; i < q->n; i++) {
            char hex[65];
            sf_hex(q->v[i].digest, SF_SHARD_DIGEST_BYTES, hex);
            len += (size_t)snprintf(text + len, cap - len, "%s %s %s %lld\n", hex, q->v[i].name,
                                    q->v[i].key_id[0] ? q->v[i].key_id : "-",
                                    (long long)q->v[i].when_unix);
        }
        char path[1200];
        list_path(dir, path, sizeof path);
        rc = sf_write_file_durable(path, text, len, err);
    }
    free(text);
    sf_shard_quarantine_free(q);
    return rc;
}

void sf_shard_quarantine_free(sf_shard_quarantine *q) {
    if (!q)
        return;
    free(q->v);
    free(q);
}
