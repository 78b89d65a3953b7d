/* manifest.c — decoding and checking a shard manifest from disk. */
#include <string.h>

#include "shard/internal.h"

int sf_manifest_decode(const uint8_t *bytes, size_t len, Spirefleet__ShardManifest **out,
                       sf_err *err) {
    *out = NULL;
    if (len > SF_MANIFEST_MAX_BYTES)
        return sf_err_set(err, SF_EFORMAT, "manifest: %zu bytes, more than the %u allowed", len,
                          SF_MANIFEST_MAX_BYTES);
    Spirefleet__ShardManifest *m = spirefleet__shard_manifest__unpack(NULL, len, bytes);
    if (!m)
        return sf_err_set(err, SF_EFORMAT, "manifest: protobuf ShardManifest does not decode");
    int rc = SF_OK;
    char field[128];
    if (!sf_pb_strings_utf8(&m->base, field, sizeof field))
        rc = sf_err_set(err, SF_ECORRUPT, "manifest: %s is not valid UTF-8", field);
    else if (m->format_version < SF_SHARD_FORMAT_VERSION_MIN ||
             m->format_version > SF_SHARD_FORMAT_VERSION)
        rc = sf_err_set(err, SF_EVERSION, "manifest: format_version %u, this reader knows 1 and %d",
                        m->format_version, SF_SHARD_FORMAT_VERSION);
    else if (m->schema_version != SF_LABEL_SCHEMA_VERSION)
        rc = sf_err_set(err, SF_EVERSION, "manifest: schema_version %u, this reader knows %d (%s)",
                        m->schema_version, SF_LABEL_SCHEMA_VERSION,
                        sf_label_schema_note(m->schema_version));
    else if (m->content_digest.len != SF_SHARD_DIGEST_BYTES)
        rc = sf_err_set(err, SF_ECORRUPT, "manifest: content_digest has %zu bytes, expected %d",
                        m->content_digest.len, SF_SHARD_DIGEST_BYTES);
    else if (strcmp(m->compression, "zstd") != 0)
        rc = sf_err_set(err, SF_EFORMAT, "manifest: compression '%.32s', expected 'zstd'",
                        m->compression);
    else if (m->record_count > 0 && m->seed_first > m->seed_last)
        rc = sf_err_set(err, SF_ECORRUPT, "manifest: seed range %llu..%llu is empty",
                        (unsigned long long)m->seed_first, (unsigned long long)m->seed_last);
    else if ((m->record_count == 0) != (m->block_count == 0) || m->block_count > m->record_count)
        rc = sf_err_set(err, SF_ECORRUPT, "manifest: %llu records in %llu blocks",
                        (unsigned long long)m->record_count, (unsigned long long)m->block_count);
    else if (m->payload_bytes > m->raw_bytes + 64 * m->record_count + 4096 && m->record_count > 0)
        rc = sf_err_set(err, SF_ECORRUPT, "manifest: payload_bytes %llu for raw_bytes %llu",
                        (unsigned long long)m->payload_bytes, (unsigned long long)m->raw_bytes);
    else if (!m->run_id[0])
        rc = sf_err_set(err, SF_ECORRUPT, "manifest: empty run_id");
    /* Either case (data at rest, common.h): a shard sealed before writers
     * demanded lower case may spell its model in upper case. */
    else if (strcmp(m->model_sha256, "rollout") != 0 && !sf_sha256_hex_valid(m->model_sha256))
        rc = sf_err_set(err, SF_ECORRUPT,
                        "manifest: model_sha256 '%.80s' is neither 64 hex "
                        "digits nor 'rollout'",
                        m->model_sha256);
    else if (!sf_sha256_hex_valid(m->config_digest))
        rc = sf_err_set(err, SF_ECORRUPT, "manifest: config_digest '%.80s' is not 64 hex digits",
                        m->config_digest);
    if (rc < 0) {
        spirefleet__shard_manifest__free_unpacked(m, NULL);
        return rc;
    }
    *out = m;
    return SF_OK;
}
