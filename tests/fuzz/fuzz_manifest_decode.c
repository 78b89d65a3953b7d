/* fuzz_manifest_decode.c — libFuzzer target: the bytes of the `manifest`
 * entry of a shard's `meta` database through sf_manifest_decode (protobuf
 * decode, versions, digest length, hex fields, counts). Nothing may crash,
 * leak or read out of bounds; a manifest that passes has a 32-byte digest. */
#include <stdint.h>
#include <stdlib.h>

#include "shard/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Spirefleet__ShardManifest *m = NULL;
    sf_err err = {0};
    if (sf_manifest_decode(data, size, &m, &err) == SF_OK) {
        if (m->content_digest.len != SF_SHARD_DIGEST_BYTES || !m->run_id[0])
            abort();
        spirefleet__shard_manifest__free_unpacked(m, NULL);
    }
    return 0;
}
