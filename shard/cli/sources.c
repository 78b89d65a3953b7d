/* sources.c — where `sf-shard pull SRC DST` gets shards from.
 *
 * A source is anything implementing sf_shard_source_ops (shard.h). Plain
 * paths and file:// URIs are directories. Further schemes are rows of the
 * table below: "tcp://" is a coordinator (source_tcp.c). */
#include <string.h>

#include "shard/cli/cli.h"

typedef struct source_scheme {
    const char *prefix;
    int (*open)(const char *rest, const char *keys, sf_shard_source **out, sf_err *err);
    const char *missing; /* why it is not available, when open is NULL */
} source_scheme;

static int open_dir(const char *rest, const char *keys, sf_shard_source **out, sf_err *err) {
    (void)keys;
    return sf_shard_source_open_dir(rest, out, err);
}

static const source_scheme schemes[] = {
    {"file://", open_dir, NULL},
    {"tcp://", sf_cli_open_tcp_source, NULL},
};

int sf_cli_open_source(const char *uri, const char *keys, sf_shard_source **out, sf_err *err) {
    for (size_t k = 0; k < sizeof schemes / sizeof schemes[0]; k++) {
        size_t n = strlen(schemes[k].prefix);
        if (strncmp(uri, schemes[k].prefix, n) != 0)
            continue;
        if (!schemes[k].open)
            return sf_err_set(err, SF_EUNSUPPORTED, "%s: %s, which this build does not have", uri,
                              schemes[k].missing);
        return schemes[k].open(uri + n, keys, out, err);
    }
    if (strstr(uri, "://"))
        return sf_err_set(err, SF_EUNSUPPORTED, "%s: unknown source scheme", uri);
    return sf_shard_source_open_dir(uri, out, err);
}
