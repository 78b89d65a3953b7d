/*
 * cli.h — internals of the sf-shard tool (the files of shard/cli/).
 *
 * Exit codes (also in `sf-shard --help` and docs/trainer.md):
 *   0  success
 *   1  a shard is damaged, truncated, unsealed, of an unknown version, or a
 *      pull could not copy every shard
 *   2  usage error (bad command, option or argument)
 *   3  any other failure (a missing file, an I/O error, out of memory)
 *   4  pull: the coordinator refused the connection's security handshake
 *      (no --keys against a CURVE coordinator, a key it does not list, or
 *      keys against one without CURVE); the message says which
 */
#ifndef SF_SHARD_CLI_H
#define SF_SHARD_CLI_H

#include <jansson.h>
#include <stdint.h>

#include "shard/shard.h"

enum {
    SF_EXIT_OK = 0,
    SF_EXIT_DATA = 1,
    SF_EXIT_USAGE = 2,
    SF_EXIT_ERROR = 3,
    SF_EXIT_REFUSED = 4
};

/* Map a status code to the exit codes above. */
int sf_cli_exit_code(int rc);

/* Print "sf-shard: <msg>" to stderr and return the exit code for `rc`. */
int sf_cli_fail(int rc, const char *msg);

/* Print "sf-shard CMD: <msg>" and a hint to stderr; returns SF_EXIT_USAGE. */
int sf_cli_usage_error(const char *cmd, const char *msg);

/* A command's argument `arg` that is not one of its options: an unknown
 * option, or a shard after the one in *path, is a usage error (its exit
 * code returned); else it is the shard, *path = arg, and 0 is returned. */
int sf_cli_shard_arg(const char *cmd, const char *arg, const char **path);

/* An argument of a shard-reading command (stat, cat, export) that is not
 * one of its own options: -h or --help (`help` printed: SF_EXIT_OK
 * returned), --json where the command takes it (as_json not NULL: *as_json
 * = 1), else the shard as sf_cli_shard_arg takes it. Returns -1 when the
 * command goes on, else its exit code. */
int sf_cli_common_arg(const char *cmd, const char *help, const char *arg, int *as_json,
                      const char **path);

/* Open the shard at `path` in *r; 0, or the exit code after printing why
 * (a usage error of command `cmd` when `path` is NULL: no shard given). */
int sf_cli_open_shard(const char *cmd, const char *path, sf_shard_reader **r);

/* Parse a non-negative decimal integer; returns 0 on success. */
int sf_cli_parse_u64(const char *s, uint64_t *out);

/* Commands: argv[0] is the command name. Each returns an exit code. */
int sf_cli_stat(int argc, char **argv);
int sf_cli_cat(int argc, char **argv);
int sf_cli_export(int argc, char **argv);

/* Any protobuf-c message as JSON (proto/pbjson.h), in sf-shard's form:
 * 64-bit integers as decimal strings (the proto3 JSON mapping), enums by
 * number, bytes as lowercase hex, Tensor messages as {"dtype", "shape",
 * "data": [flat values]}. Returns a new reference, or NULL when out of
 * memory. */
json_t *sf_cli_message_json(const ProtobufCMessage *m);

/* Whether the shard at `path` is in quarantine list `q` (by its content
 * digest; a file that does not open is not). */
int sf_cli_quarantined(const sf_shard_quarantine *q, const char *path);

/* Resolve a pull source: a directory path (or file://PATH). Other schemes
 * come from the table in sources.c. `keys`: a key directory
 * (common/zsec.h) for sources that authenticate (a coordinator), NULL or ""
 * for plain ZeroMQ. */
int sf_cli_open_source(const char *uri, const char *keys, sf_shard_source **out, sf_err *err);

/* A coordinator as a source: `rest` is "HOST:PORT" of tcp://HOST:PORT; a
 * CURVE client with the operator (or else worker) key of `keys`. */
int sf_cli_open_tcp_source(const char *rest, const char *keys, sf_shard_source **out, sf_err *err);

/* Wait until source `src` can be asked: for a coordinator, until its
 * security handshake is over (at most SF_CLI_CONNECT_MS); other sources
 * at once. SF_EREMOTE when the coordinator refused the handshake (the
 * message says why and what to do: exit code SF_EXIT_REFUSED),
 * SF_ETIMEOUT when no connection was made in time. */
#define SF_CLI_CONNECT_MS 30000
int sf_cli_source_ready(sf_shard_source *src, sf_err *err);

#endif
