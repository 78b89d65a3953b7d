/* fuzz_ledger_load.c — libFuzzer target: the bytes of a coordinator's
 * ledger.lmdb through ledger_open and ledger_load (the probe child, the
 * record checksums, the job checks) for the run of LEDGER_YAML, which made
 * the seed corpus (tests/fuzz/corpus/ledger-load/). The bytes go to one
 * temp file per process. Nothing may crash, leak or read out of bounds in
 * this process (a damaged file may crash the probe child: that is the
 * error it reports); a ledger that loads holds each job exactly as its
 * record checks passed: done jobs with canonical digests and their name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"
#include "coordinator/internal.h"
#include "shard/shard.h"

/* The run the seed ledgers are of (`sf-fleet run` on this config). */
#define LEDGER_YAML                                              \
    "run: {name: lfuzz, output_dir: /tmp/sf-fuzz-ledger-seed}\n" \
    "seeds: {start: 0, count: 8, job_size: 4}\n"                 \
    "play: {mode: fights, encounters: {weak: 1}}\n"              \
    "search: {simulations: 20, trees: 1}\n"                      \
    "workers: {count: 1, threads: 1, fights_per_thread: 1}\n"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static sf_coordinator co;
    static cjob jobs[2];
    static int ready;
    if (!ready) {
        sf_err e = {0};
        if (sf_config_parse(LEDGER_YAML, strlen(LEDGER_YAML), "fuzz.yaml", &co.cfg, &e) < 0 ||
            sf_config_digest(&co.cfg, co.digest) < 0)
            abort();
        snprintf(co.ledger_path, sizeof co.ledger_path, "/tmp/sf-fuzz-ledger-%d.lmdb",
                 (int)getpid());
        co.probe_seconds = 1; /* a ledger that makes LMDB loop: an error soon */
        ready = 1;
    }
    char lock[340];
    snprintf(lock, sizeof lock, "%s-lock", co.ledger_path);
    unlink(lock);
    sf_err err = {0};
    if (sf_write_file_durable(co.ledger_path, data, size, &err) < 0)
        abort();
    for (int i = 0; i < 2; i++)
        free(jobs[i].aud); /* a loaded audit's copies */
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < 2; i++) {
        jobs[i].id = (uint64_t)i + 1;
        jobs[i].seed_start = (uint64_t)i * 4;
        jobs[i].seed_count = 4;
        jobs[i].worker = -1;
    }
    co.jobs = jobs;
    co.njobs = 2;
    co.env = NULL;
    if (ledger_open(&co, &err) == SF_OK) {
        if (ledger_load(&co, &err) == 1)
            for (int i = 0; i < 2; i++) {
                char name[96], name2[CO_SHARD_NAME_MAX];
                sf_shard_name(co.cfg.name, jobs[i].id, name, sizeof name);
                if (jobs[i].state > JS_DONE || (jobs[i].state == JS_DONE &&
                                                (!sf_sha256_hex_canonical(jobs[i].content_digest) ||
                                                 strcmp(co_job_shard(&co, &jobs[i], name2), name))))
                    abort();
            }
        ledger_close(&co);
    } else if (!strstr(err.msg, co.ledger_path)) {
        abort(); /* every error names the file */
    }
    unlink(co.ledger_path);
    unlink(lock);
    return 0;
}
