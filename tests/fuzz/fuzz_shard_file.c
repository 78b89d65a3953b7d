/* fuzz_shard_file.c — libFuzzer target: the bytes of a whole shard file
 * through the reader (seal trailer, structure-page CRCs, LMDB, manifest,
 * every record) and through sf_shard_verify. The bytes go to one temp file
 * per process (a shard is read from a file: LMDB maps it). Nothing may
 * crash, leak or read out of bounds; a shard that opens has as many
 * readable-or-refused records as it says, and one that verifies opens. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/io.h"
#include "shard/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[64];
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/sf-fuzz-shard-%d.shard", (int)getpid());
    }
    sf_err err = {0};
    if (sf_write_file_durable(path, data, size, &err) < 0)
        abort();
    sf_shard_reader *r = NULL;
    int opened = sf_shard_reader_open_any(path, &r, &err) == SF_OK;
    if (opened) {
        uint64_t n = sf_shard_reader_count(r);
        if (!sf_shard_reader_manifest(r))
            abort();
        for (uint64_t i = 0; i < n && i < 4096; i++) {
            const Spirefleet__LabelRecord *rec = NULL;
            sf_err e = {0};
            if (sf_shard_reader_get(r, i, &rec, &e) == SF_OK && !rec)
                abort();
        }
        sf_shard_reader_close(r);
    }
    sf_shard_verify_report rep;
    if (sf_shard_verify_any(path, &rep, &err) == SF_OK && !opened)
        abort(); /* what verifies must open */
    unlink(path);
    return 0;
}
