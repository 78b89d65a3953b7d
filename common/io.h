/*
 * io.h — file plumbing every module shares: whole reads and writes that
 * survive EINTR and short transfers, and the fsync of a directory that
 * makes a rename or a link durable.
 *
 * Errors and reasons
 *   The fd-level calls return SF_OK or a negative SF_E* code and leave the
 *   reason in errno (0 when the file simply ended first), so the caller
 *   writes the message that names its file and step with sf_io_reason():
 *     "shard.tmp: reading page 12: Input/output error"
 *     "shard.tmp: reading page 12: the file ends first"
 *   The path-level calls take an sf_err and name the path themselves.
 *
 * Nothing here allocates except sf_fsync_parent (a copy of the path), and
 * every call is reentrant.
 */
#ifndef SF_IO_H
#define SF_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/common.h"

/* Read exactly `n` bytes at offset `off` of `fd` (pread until done).
 * Returns SF_OK; SF_EIO when a read fails (errno says why); SF_EFORMAT when
 * the file ends first (errno 0). */
int sf_pread_full(int fd, void *buf, size_t n, uint64_t off);

/* Write all `n` bytes at offset `off` of `fd` (pwrite until done). Returns
 * SF_OK or SF_EIO (errno says why; a write that makes no progress is
 * ENOSPC). */
int sf_pwrite_full(int fd, const void *buf, size_t n, uint64_t off);

/* Read from the file position until `n` bytes are in or the file ends;
 * *got receives how many were read (short only at end of file). Returns
 * SF_OK or SF_EIO (errno says why). */
int sf_read_full(int fd, void *buf, size_t n, size_t *got);

/* Write all `n` bytes at the file position. Returns SF_OK or SF_EIO (errno
 * says why). */
int sf_write_full(int fd, const void *buf, size_t n);

/* The reason to print for a failure of the calls above, read from errno:
 * strerror(errno), or "the file ends first" after SF_EFORMAT from
 * sf_pread_full. Call it before anything else can change errno. */
const char *sf_io_reason(int rc);

/* Flush a stdio stream and fsync its file. Returns SF_OK or SF_EIO (errno
 * says why). The stream stays open. */
int sf_fflush_sync(FILE *f);

/* fsync the directory `dir`, so that files created, renamed or linked into
 * it survive a crash. Errors: SF_EIO, "DIR: cannot sync the directory:
 * <reason>". */
int sf_fsync_dir(const char *dir, sf_err *err);

/* sf_fsync_dir() on the directory that holds `path` (its dirname). Errors:
 * those of sf_fsync_dir, SF_ENOMEM. */
int sf_fsync_parent(const char *path, sf_err *err);

/* Open `path` read-only (O_CLOEXEC) only when it is a regular file,
 * without ever blocking: O_NONBLOCK until fstat shows a regular file (a
 * FIFO or a device would otherwise block open() or read() forever), then
 * blocking again. Returns the descriptor (>= 0; the caller closes it) and
 * fills *st, or, naming the path in `err`: SF_ENOTFOUND (no such file),
 * SF_EFORMAT ("PATH: not a regular file (a FIFO)", "... (a directory)",
 * "... (a device)"), SF_EIO (the OS's reason). */
int sf_open_regular(const char *path, struct stat *st, sf_err *err);

/* Read the small text file at `path` — a one-line pointer such as an
 * endpoint file or a registry's champion file — into `buf` (cap bytes;
 * NUL-terminated, trailing newlines, CRs and spaces dropped). Opened
 * without blocking, so a FIFO cannot hang the caller. Errors, each naming
 * the path: SF_ENOTFOUND (no such file), SF_EIO (cannot open or read: the
 * OS's reason), SF_EFORMAT (not a regular file, empty, more than one line,
 * or cap - 1 bytes or more). */
int sf_read_line_file(const char *path, char *buf, size_t cap, sf_err *err);

/* Replace the file at `path` with `len` bytes of `data`, durably and
 * atomically: written to "<path>.tmp", fsynced, renamed over `path`, and
 * the directory fsynced, so a crash leaves either the old file or the new
 * one whole, never a mix. Errors: SF_EIO naming the file and the step
 * ("PATH.tmp: cannot write: <reason>"); the temp file is removed. */
int sf_write_file_durable(const char *path, const void *data, size_t len, sf_err *err);

#endif
