/*
 * trainer.c — the trainers' side of the ROUTER: the list of stored shards
 * (with the run's quarantine list) and their bytes, chunk by chunk
 * (docs/trainer.md, `sf-shard pull`).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"
#include "coordinator/internal.h"
#include "shard/shard.h"

void co_on_shard_list(sf_coordinator *co, const uint8_t *ident, size_t len) {
    uint64_t n = co->st.jobs_done;
    Spirefleet__ShardInfo *infos = calloc(n ? n : 1, sizeof *infos);
    Spirefleet__ShardInfo **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    char(*names)[CO_SHARD_NAME_MAX] = calloc(n ? n : 1, sizeof *names);
    if (!infos || !ptrs || !names) {
        free(infos);
        free(ptrs);
        free(names);
        co_reply_error(co, ident, len, SF_ENOMEM, "out of memory");
        return;
    }
    size_t k = 0;
    for (uint64_t i = 0; i < co->njobs && k < n; i++) {
        cjob *j = &co->jobs[i];
        if (j->state != JS_DONE)
            continue;
        spirefleet__shard_info__init(&infos[k]);
        infos[k].name = (char *)co_job_shard(co, j, names[k]);
        infos[k].job_id = j->id;
        infos[k].size = j->bytes;
        infos[k].file_sha256 = j->file_sha256;
        infos[k].content_digest = j->content_digest;
        infos[k].records = j->records;
        ptrs[k] = &infos[k];
        k++;
    }
    /* the run's quarantine list goes along: a puller skips those shards and
     * lists them for its own readers */
    sf_shard_quarantine *ql = NULL;
    sf_err qe = {0};
    if (sf_shard_quarantine_load(co->shards_dir, &ql, &qe) < 0)
        sf_log(co->log, co->log_ctx, "coordinator: %s", qe.msg);
    size_t nq = sf_shard_quarantine_count(ql);
    Spirefleet__ShardInfo *qinfos = calloc(nq ? nq : 1, sizeof *qinfos);
    Spirefleet__ShardInfo **all = calloc(k + nq + 1, sizeof *all);
    char(*qhex)[65] = calloc(nq ? nq : 1, sizeof *qhex);
    if (!qinfos || !all || !qhex)
        nq = 0;
    for (size_t i = 0; all && i < k; i++)
        all[i] = ptrs[i];
    for (size_t i = 0; i < nq; i++) {
        const sf_shard_quarantine_entry *q = sf_shard_quarantine_at(ql, i);
        spirefleet__shard_info__init(&qinfos[i]);
        sf_hex(q->digest, 32, qhex[i]);
        qinfos[i].name = (char *)q->name;
        qinfos[i].content_digest = qhex[i];
        qinfos[i].quarantined = 1;
        qinfos[i].key_id = (char *)q->key_id;
        qinfos[i].quarantined_unix = q->when_unix;
        all[k + i] = &qinfos[i];
    }
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardList l = SPIREFLEET__SHARD_LIST__INIT;
    l.n_shards = all ? k + nq : k;
    l.shards = all ? all : ptrs;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_LIST;
    env.shard_list = &l;
    co_queue_reply(co, ident, len, &env);
    free(infos);
    free(ptrs);
    free(names);
    free(qinfos);
    free(all);
    free(qhex);
    sf_shard_quarantine_free(ql);
}

/* The done job whose stored shard is called `name` (co_shard_name:
 * "<run>-job<digits>.shard"), or NULL: the job id is read from the name and
 * the name made again from it, so only the exact name finds it. */
static const cjob *job_of_shard(const sf_coordinator *co, const char *name) {
    char prefix[CO_SHARD_NAME_MAX + 8];
    int pl = snprintf(prefix, sizeof prefix, "%s-job", co->cfg.name);
    if (!name || pl < 0 || (size_t)pl >= sizeof prefix || strncmp(name, prefix, (size_t)pl))
        return NULL;
    uint64_t id = 0;
    for (const char *p = name + pl; *p >= '0' && *p <= '9' && id < co->njobs; p++)
        id = id * 10 + (uint64_t)(*p - '0');
    if (id == 0 || id > co->njobs || co->jobs[id - 1].state != JS_DONE)
        return NULL;
    char want[CO_SHARD_NAME_MAX];
    co_shard_name(co, id, want, sizeof want);
    return strcmp(want, name) ? NULL : &co->jobs[id - 1];
}

void co_on_shard_fetch(sf_coordinator *co, const uint8_t *ident, size_t len,
                       const Spirefleet__ShardFetch *f) {
    const cjob *j = job_of_shard(co, f->name);
    if (!j) {
        co_reply_error(co, ident, len, SF_ENOTFOUND, "no stored shard of that name");
        return;
    }
    char path[1200], name[CO_SHARD_NAME_MAX];
    snprintf(path, sizeof path, "%s/%s", co->shards_dir, co_job_shard(co, j, name));
    uint32_t want = f->length == 0 || f->length > SF_FLEET_CHUNK ? SF_FLEET_CHUNK : f->length;
    uint64_t left = f->offset < j->bytes ? j->bytes - f->offset : 0;
    size_t got = left < want ? (size_t)left : want;
    uint8_t *buf = malloc(want);
    if (!buf) {
        co_reply_error(co, ident, len, SF_ENOMEM, "out of memory");
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc = fd < 0 ? SF_EIO : sf_pread_full(fd, buf, got, f->offset);
    if (rc < 0) {
        char why[256];
        snprintf(why, sizeof why, "cannot read the stored shard %s: %s", name, sf_io_reason(rc));
        co_reply_error(co, ident, len, SF_EIO, why);
    }
    if (fd >= 0)
        close(fd);
    if (rc < 0) {
        free(buf);
        return;
    }
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardData d = SPIREFLEET__SHARD_DATA__INIT;
    d.name = name;
    d.offset = f->offset;
    d.data.data = buf;
    d.data.len = got;
    d.last = f->offset + got >= j->bytes;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_DATA;
    env.shard_data = &d;
    co_queue_reply(co, ident, len, &env);
    free(buf);
}
