/*
 * endpoint_file.h — an endpoint published in a file, for processes that do
 * not know in advance where a server will run.
 *
 *   Under a batch scheduler (Slurm) the coordinator and gpu-evald start on
 *   whichever node they are given and bind any free port; workers find them
 *   through a one-line file on the shared filesystem (docs/operator.md,
 *   "Running on Slurm"). The writer turns the endpoint as bound
 *   (ZMQ_LAST_ENDPOINT: "tcp://0.0.0.0:41234") into one another node can
 *   dial ("tcp://node17:41234": a wildcard host becomes this machine's host
 *   name) and replaces the file atomically (a temp file beside it, fsync,
 *   rename), so a reader sees the old line or the new one, never half of
 *   one.
 *
 * The file holds the endpoint and a newline, nothing else. Nothing here
 * keeps state; every call is reentrant.
 */
#ifndef SF_ENDPOINT_FILE_H
#define SF_ENDPOINT_FILE_H

#include <stddef.h>

#include "common/common.h"

/* The endpoint other machines dial to reach `bound`: a tcp:// endpoint whose
 * host is a wildcard ("*", "0.0.0.0", "[::]", "::") gets `host` instead
 * (NULL: this machine's host name, gethostname(2)); anything else (a named
 * or loopback host, ipc://) is copied as it is. Writes at most `cap` bytes
 * with the NUL. Returns SF_OK, or SF_EFULL when it does not fit. */
int sf_endpoint_reachable(const char *bound, const char *host, char *out, size_t cap);

/* Publish sf_endpoint_reachable(bound, NULL) in `path`, atomically (via
 * "PATH.tmp"). Errors: SF_EIO naming the path and the OS's reason,
 * SF_EFULL. */
int sf_endpoint_file_write(const char *path, const char *bound, sf_err *err);

/* Read the endpoint published in `path` into `out` (cap bytes with the NUL;
 * the trailing newline and spaces dropped). Errors: SF_ENOTFOUND when the
 * file does not exist (yet), SF_EIO when it cannot be read, SF_EFORMAT
 * when it is empty, holds more than one line or does not fit. */
int sf_endpoint_file_read(const char *path, char *out, size_t cap, sf_err *err);

#endif
