/*
 * registry.c — the model registry's files (registry.h).
 */
#include <stdio.h>
#include <string.h>

#include "common/io.h"
#include "common/registry.h"

int sf_registry_bundle_path(const char *dir, const char *sha256, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s/%s.safetensors", dir, sha256);
    return n < 0 || (size_t)n >= cap ? SF_EFULL : SF_OK;
}

int sf_registry_dir_of(const char *champion_path, char *out, size_t cap) {
    const char *slash = strrchr(champion_path, '/');
    int n = !slash ? snprintf(out, cap, ".")
            : slash == champion_path
                ? snprintf(out, cap, "/")
                : snprintf(out, cap, "%.*s", (int)(slash - champion_path), champion_path);
    return n < 0 || (size_t)n >= cap ? SF_EFULL : SF_OK;
}

static int champion_name(const char *s) {
    return !strcmp(s, SF_REGISTRY_ROLLOUT) || sf_sha256_hex_canonical(s);
}

int sf_registry_champion_read(const char *path, char out[SF_SHA256_HEX_LEN + 1], sf_err *err) {
    char buf[SF_SHA256_HEX_LEN + 3]; /* the digits, a newline, one more: too long */
    int rc = sf_read_line_file(path, buf, sizeof buf, err);
    if (rc < 0)
        return rc;
    if (!champion_name(buf))
        return sf_err_set(err, SF_EFORMAT,
                          "%s: not a champion (one line: 64 lower-case hex digits or \"%s\")", path,
                          SF_REGISTRY_ROLLOUT);
    memcpy(out, buf, strlen(buf) + 1);
    return SF_OK;
}

int sf_registry_champion_write(const char *dir, const char *sha256, sf_err *err) {
    if (!champion_name(sha256))
        return sf_err_set(err, SF_EINVAL, "registry %s: '%.80s' is not a champion", dir, sha256);
    char path[4096], line[SF_SHA256_HEX_LEN + 2];
    if (snprintf(path, sizeof path, "%s/champion", dir) >= (int)sizeof path)
        return sf_err_set(err, SF_EFULL, "registry %.200s: path too long", dir);
    int n = snprintf(line, sizeof line, "%s\n", sha256);
    return sf_write_file_durable(path, line, (size_t)n, err);
}
