/*
 * registry.h — a run's model registry on disk (docs/loop.md, "The
 * registry"): a directory of bundles named by their SHA-256 and a champion
 * file naming the one self-play uses.
 *
 *   <dir>/<sha256>.safetensors   every bundle exported into the registry
 *   <dir>/champion               one line: a bundle's SHA-256 (64 lower-case
 *                                hex digits) or "rollout" (no network yet)
 *   <dir>/history.jsonl          every promotion and rejection (the loop)
 *
 * The champion file is replaced atomically (temp, fsync, rename), so a
 * reader — the loop, a coordinator following the champion, an operator —
 * sees the old champion or the new one, never half of a line. Nothing here
 * keeps state; every call is reentrant.
 */
#ifndef SF_REGISTRY_H
#define SF_REGISTRY_H

#include <stddef.h>

#include "common/common.h"

/* The champion file's word for "no network yet": self-play with rollouts. */
#define SF_REGISTRY_ROLLOUT "rollout"

/* "<dir>/<sha256>.safetensors" into `out` (cap bytes with the NUL).
 * Returns SF_OK, or SF_EFULL when it does not fit. */
int sf_registry_bundle_path(const char *dir, const char *sha256, char *out, size_t cap);

/* The directory that holds the champion file `champion_path` (its dirname;
 * "." for a bare file name) into `out`. Returns SF_OK or SF_EFULL. */
int sf_registry_dir_of(const char *champion_path, char *out, size_t cap);

/* Read the champion file at `path` into `out`: a canonical SHA-256 or
 * SF_REGISTRY_ROLLOUT. Errors: SF_ENOTFOUND (no such file yet), SF_EIO
 * (cannot read, with the OS's reason), SF_EFORMAT (not one line holding
 * 64 lower-case hex digits or "rollout"); every message names the file. */
int sf_registry_champion_read(const char *path, char out[SF_SHA256_HEX_LEN + 1], sf_err *err);

/* Make `sha256` (canonical hex, or SF_REGISTRY_ROLLOUT) the champion of the
 * registry `dir`: <dir>/champion replaced durably and atomically. Errors:
 * SF_EINVAL (not a champion name), those of sf_write_file_durable. */
int sf_registry_champion_write(const char *dir, const char *sha256, sf_err *err);

#endif
