/* pull.c — shard sources and copying sealed shards between directories.
 *
 * sf_shard_pull knows a source only through sf_shard_source_ops (list,
 * fetch, close), so a network source slots in beside the directory source
 * below. A copy becomes visible at its final name only after it has been
 * fetched to a temporary name, verified completely and matched against the
 * listed digest; it never replaces a file. */
#define _GNU_SOURCE /* renameat2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/io.h"
#include "shard/internal.h"

/* ---- directory source -------------------------------------------------- */

typedef struct dir_source {
    sf_shard_source base;
    char *dir;
} dir_source;

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const sf_shard_entry *)a)->name, ((const sf_shard_entry *)b)->name);
}

static int dir_list(sf_shard_source *src, sf_shard_entry **out, size_t *nout, sf_err *err) {
    dir_source *d = (dir_source *)src;
    *out = NULL;
    *nout = 0;
    DIR *dh = opendir(d->dir);
    if (!dh)
        return sf_err_set(err, errno == ENOENT ? SF_ENOTFOUND : SF_EIO, "%s: %s", d->dir,
                          strerror(errno));
    sf_shard_entry *v = NULL;
    size_t n = 0, cap = 0;
    int rc = SF_OK;
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) {
        if (!sf_has_suffix(de->d_name, SF_SHARD_SUFFIX) || strlen(de->d_name) > SF_SHARD_NAME_MAX)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            sf_shard_entry *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory", d->dir);
                break;
            }
            v = nv;
        }
        sf_shard_entry *e = &v[n++];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", de->d_name);
    }
    closedir(dh);
    if (rc < 0) {
        free(v);
        return rc;
    }
    qsort(v, n, sizeof *v, cmp_entry);
    /* Opening a shard reads its trailer, structure pages and manifest: cheap
     * enough to list a directory of thousands. */
    size_t plen = strlen(d->dir) + SF_SHARD_NAME_MAX + 2;
    char *path = malloc(plen);
    if (!path) {
        free(v);
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", d->dir);
    }
    sf_shard_quarantine *q = NULL;
    sf_err qe = {0};
    if (sf_shard_quarantine_load(d->dir, &q, &qe) < 0) {
        free(path);
        free(v);
        return sf_err_set(err, qe.code, "%s", qe.msg);
    }
    for (size_t k = 0; k < n; k++) {
        snprintf(path, plen, "%s/%s", d->dir, v[k].name);
        sf_shard_reader *r = NULL;
        sf_err e = {0};
        if (sf_shard_reader_open(path, &r, &e) < 0) {
            snprintf(v[k].error, sizeof v[k].error, "%s", e.msg);
            v[k].error_code = e.code;
            continue;
        }
        const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
        memcpy(v[k].digest, m->content_digest.data, SF_SHARD_DIGEST_BYTES);
        v[k].records = m->record_count;
        v[k].bytes = sf_shard_reader_file_bytes(r);
        /* a directory offers a shard only under its canonical name */
        if (sf_shard_check_canonical_name(path, m->run_id, m->job_id, &e) < 0) {
            snprintf(v[k].error, sizeof v[k].error, "%s", e.msg);
            v[k].error_code = e.code;
        }
        const sf_shard_quarantine_entry *qe_ =
            sf_shard_quarantine_find(q, v[k].digest, m->worker_key_id ? m->worker_key_id : "");
        sf_shard_reader_close(r);
        if (qe_) {
            v[k].quarantined = 1;
            v[k].quarantined_unix = qe_->when_unix;
            snprintf(v[k].key_id, sizeof v[k].key_id, "%s", qe_->key_id);
        }
    }
    sf_shard_quarantine_free(q);
    free(path);
    *out = v;
    *nout = n;
    return SF_OK;
}

static int copy_file(const char *from, const char *to, sf_err *err) {
    struct stat st;
    int in = sf_shard_open_file(from, &st, err);
    if (in < 0)
        return in;
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        int e = errno;
        close(in);
        return sf_err_set(err, SF_EIO, "%s: %s", to, strerror(e));
    }
    int rc = SF_OK;
    static const size_t chunk = 1u << 20;
    uint8_t *buf = malloc(chunk);
    if (!buf)
        rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory", to);
    for (size_t got = chunk; rc == SF_OK && got == chunk;) {
        if (sf_read_full(in, buf, chunk, &got) < 0)
            rc = sf_err_set(err, SF_EIO, "%s: cannot read: %s", from, strerror(errno));
        else if (sf_write_full(out, buf, got) < 0)
            rc = sf_err_set(err, SF_EIO, "%s: cannot write: %s", to, strerror(errno));
    }
    if (rc == SF_OK && fsync(out) != 0)
        rc = sf_err_set(err, SF_EIO, "%s: fsync: %s", to, strerror(errno));
    free(buf);
    close(in);
    if (close(out) != 0 && rc == SF_OK)
        rc = sf_err_set(err, SF_EIO, "%s: close: %s", to, strerror(errno));
    return rc;
}

static int dir_fetch(sf_shard_source *src, const sf_shard_entry *e, const char *dst_path,
                     sf_err *err) {
    dir_source *d = (dir_source *)src;
    size_t plen = strlen(d->dir) + strlen(e->name) + 2;
    char *path = malloc(plen);
    if (!path)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    snprintf(path, plen, "%s/%s", d->dir, e->name);
    int rc = copy_file(path, dst_path, err);
    free(path);
    return rc;
}

static void dir_close(sf_shard_source *src) {
    dir_source *d = (dir_source *)src;
    free(d->dir);
    free(d);
}

static const sf_shard_source_ops dir_ops = {dir_list, dir_fetch, dir_close};

int sf_shard_source_open_dir(const char *dir, sf_shard_source **out, sf_err *err) {
    *out = NULL;
    struct stat st;
    if (stat(dir, &st) != 0)
        return sf_err_set(err, errno == ENOENT ? SF_ENOTFOUND : SF_EIO, "%s: %s", dir,
                          strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return sf_err_set(err, SF_EINVAL, "%s: not a directory", dir);
    dir_source *d = calloc(1, sizeof *d);
    if (!d || !(d->dir = strdup(dir))) {
        free(d);
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", dir);
    }
    d->base.ops = &dir_ops;
    snprintf(d->base.uri, sizeof d->base.uri, "%s", dir);
    *out = &d->base;
    return SF_OK;
}

/* ---- pull -------------------------------------------------------------------- */

static void report(sf_shard_pull_report *rep, const sf_shard_entry *e, const char *action,
                   const char *why) {
    if (rep->on_shard)
        rep->on_shard(rep->ctx, e, action, why);
}

/* Pull one entry; returns SF_OK for copied or present, a negative code with
 * `why` filled otherwise. */
static int pull_one(sf_shard_source *src, const sf_shard_entry *e, const char *dst_dir,
                    sf_shard_pull_report *rep, sf_err *why) {
    if (e->error_code < 0)
        return sf_err_set(why, e->error_code, "%s", e->error);
    if (strchr(e->name, '/') || !sf_has_suffix(e->name, SF_SHARD_SUFFIX) ||
        strcmp(e->name, SF_SHARD_SUFFIX) == 0)
        return sf_err_set(why, SF_EINVAL, "%s: not a plain shard file name", e->name);
    size_t plen = strlen(dst_dir) + strlen(e->name) + 40;
    char *dst = malloc(plen), *tmp = malloc(plen);
    if (!dst || !tmp) {
        free(dst);
        free(tmp);
        return sf_err_set(why, SF_ENOMEM, "out of memory");
    }
    snprintf(dst, plen, "%s/%s", dst_dir, e->name);
    snprintf(tmp, plen, "%s/%s.%ld%s", dst_dir, e->name, (long)getpid(), SF_SHARD_TEMP_SUFFIX);
    int rc = SF_OK, replace = 0;
    struct stat st;
    if (stat(dst, &st) == 0) {
        sf_shard_reader *r = NULL;
        sf_err oe = {0};
        if (sf_shard_reader_open(dst, &r, &oe) < 0) {
            rc = sf_err_set(why, SF_ECORRUPT,
                            "%s exists and is not a readable shard (left untouched): %s", dst,
                            oe.msg);
        } else {
            const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
            sf_shard_quarantine *dq = NULL;
            sf_err qe = {0};
            int listed = sf_shard_quarantine_load(dst_dir, &dq, &qe) == SF_OK &&
                         sf_shard_quarantine_find(dq, m->content_digest.data,
                                                  m->worker_key_id ? m->worker_key_id : "") != NULL;
            sf_shard_quarantine_free(dq);
            if (memcmp(m->content_digest.data, e->digest, SF_SHARD_DIGEST_BYTES) == 0 && listed) {
                /* DST's copy is a quarantined key's; the source's, the same
                 * records played again by another key, takes its place */
                sf_shard_reader_close(r);
                replace = 1;
                goto fetch;
            }
            if (memcmp(m->content_digest.data, e->digest, SF_SHARD_DIGEST_BYTES) == 0) {
                rep->present++;
                report(rep, e, "present", NULL);
            } else {
                rc = sf_err_set(why, SF_ESTATE,
                                "%s exists with another content digest (left untouched)", dst);
            }
            sf_shard_reader_close(r);
        }
        goto out;
    }
fetch:
    unlink(tmp); /* a leftover of a pull that died with our pid */
    if ((rc = src->ops->fetch(src, e, tmp, why)) < 0)
        goto fail;
    sf_shard_verify_report vr;
    if ((rc = sf_shard_verify_any(tmp, &vr, why)) < 0) {
        sf_err_prefix(why, "the copy of %s failed verification", e->name);
        goto fail;
    }
    if (memcmp(vr.digest, e->digest, SF_SHARD_DIGEST_BYTES) != 0) {
        rc = sf_err_set(why, SF_ECORRUPT,
                        "%s: the copy's content digest differs from the "
                        "source's listing",
                        e->name);
        goto fail;
    }
    /* whatever the source (a coordinator too): DST is a directory, so the
     * copy goes in only under its canonical name */
    if (strcmp(e->name, vr.name) != 0) {
        sf_shard_reader *r = NULL;
        if ((rc = sf_shard_reader_open_any(tmp, &r, why)) == SF_OK) {
            const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
            rc = sf_shard_check_canonical_name(e->name, m->run_id, m->job_id, why);
            sf_shard_reader_close(r);
        }
        if (rc < 0)
            goto fail;
    }
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dst, replace ? 0 : RENAME_NOREPLACE) != 0) {
        rc = sf_err_set(why, errno == EEXIST ? SF_ESTATE : SF_EIO, "%s: rename: %s", dst,
                        strerror(errno));
        goto fail;
    }
    if ((rc = sf_fsync_parent(dst, why)) < 0)
        goto out;
    rep->copied++;
    rep->bytes_copied += vr.file_bytes;
    report(rep, e, "copied", NULL);
    goto out;
fail:
    unlink(tmp);
out:
    free(dst);
    free(tmp);
    return rc;
}

int sf_shard_pull(sf_shard_source *src, const char *dst_dir, sf_shard_pull_report *rep_io,
                  sf_err *err) {
    sf_shard_pull_report local = {0};
    sf_shard_pull_report *rep = rep_io ? rep_io : &local;
    if (mkdir(dst_dir, 0755) != 0 && errno != EEXIST)
        return sf_err_set(err, SF_EIO, "%s: cannot create: %s", dst_dir, strerror(errno));
    struct stat st;
    if (stat(dst_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return sf_err_set(err, SF_EINVAL, "%s: not a directory", dst_dir);
    sf_shard_entry *entries = NULL;
    size_t n = 0;
    int rc = src->ops->list(src, &entries, &n, err);
    if (rc < 0)
        return sf_err_prefix(err, "listing %s", src->uri);
    int first = SF_OK;
    /* the quarantined entries first: a copy DST holds of one is then known
     * as such when the shard played again under the same name comes */
    for (size_t i = 0; i < 2 * n; i++) {
        size_t k = i % n;
        if ((i < n) != (entries[k].quarantined != 0))
            continue;
        sf_err why = {0};
        if (entries[k].quarantined) {
            /* not copied; the destination learns of it, so a copy it got
             * earlier is skipped by its readers too */
            sf_shard_quarantine_entry qe = {0};
            memcpy(qe.digest, entries[k].digest, SF_SHARD_DIGEST_BYTES);
            snprintf(qe.name, sizeof qe.name, "%s", entries[k].name);
            snprintf(qe.key_id, sizeof qe.key_id, "%s",
                     entries[k].key_id[0] ? entries[k].key_id : "-");
            qe.when_unix = entries[k].quarantined_unix;
            rc = sf_shard_quarantine_add(dst_dir, &qe, &why);
            if (rc == SF_OK) {
                rep->quarantined++;
                report(rep, &entries[k], "quarantined", NULL);
                continue;
            }
        } else {
            rc = pull_one(src, &entries[k], dst_dir, rep, &why);
        }
        if (rc < 0) {
            rep->failed++;
            report(rep, &entries[k], rc == SF_ESTATE ? "conflict" : "failed", why.msg);
            if (first == SF_OK) {
                first = rc;
                sf_err_set(err, rc, "%s", why.msg);
            }
        }
    }
    free(entries);
    return first;
}
