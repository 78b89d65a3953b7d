/* util.c — exit codes, error printing and argument parsing for sf-shard. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard/cli/cli.h"

int sf_cli_exit_code(int rc) {
    switch (rc) {
    case SF_OK: return SF_EXIT_OK;
    case SF_ESTATE:
    case SF_EFORMAT:
    case SF_ECORRUPT:
    case SF_EVERSION: return SF_EXIT_DATA;
    case SF_EINVAL:
    case SF_EUNSUPPORTED: return SF_EXIT_USAGE;
    default: return SF_EXIT_ERROR;
    }
}

int sf_cli_fail(int rc, const char *msg) {
    fprintf(stderr, "sf-shard: %s\n", msg);
    return sf_cli_exit_code(rc);
}

int sf_cli_usage_error(const char *cmd, const char *msg) {
    fprintf(stderr, "sf-shard %s: %s (try 'sf-shard %s --help')\n", cmd, msg, cmd);
    return SF_EXIT_USAGE;
}

int sf_cli_shard_arg(const char *cmd, const char *arg, const char **path) {
    if (arg[0] == '-')
        return sf_cli_usage_error(cmd, "unknown option");
    if (*path)
        return sf_cli_usage_error(cmd, "expected one shard");
    *path = arg;
    return 0;
}

int sf_cli_common_arg(const char *cmd, const char *help, const char *arg, int *as_json,
                      const char **path) {
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
        fputs(help, stdout);
        return SF_EXIT_OK;
    }
    if (as_json && strcmp(arg, "--json") == 0) {
        *as_json = 1;
        return -1;
    }
    int rc = sf_cli_shard_arg(cmd, arg, path);
    return rc ? rc : -1;
}

int sf_cli_open_shard(const char *cmd, const char *path, sf_shard_reader **r) {
    if (!path)
        return sf_cli_usage_error(cmd, "expected a shard");
    sf_err err = {0};
    int rc = sf_shard_reader_open(path, r, &err);
    return rc < 0 ? sf_cli_fail(rc, err.msg) : 0;
}

int sf_cli_parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int sf_cli_quarantined(const sf_shard_quarantine *q, const char *path) {
    if (sf_shard_quarantine_count(q) == 0)
        return 0;
    sf_shard_reader *r = NULL;
    sf_err e = {0};
    if (sf_shard_reader_open(path, &r, &e) < 0)
        return 0;
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    int hit = sf_shard_quarantine_find(q, m->content_digest.data,
                                       m->worker_key_id ? m->worker_key_id : "") != NULL;
    sf_shard_reader_close(r);
    return hit;
}
