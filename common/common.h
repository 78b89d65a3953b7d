/*
 * common.h — the few things every spirefleet module shares: the error value,
 * log sinks, a counter-based mixer for deriving seeds, and a monotonic
 * clock. (File plumbing is common/io.h.)
 *
 * Errors are values (see docs/CONTRIBUTING.md). A function that can fail
 * returns an `int` status: 0 (SF_OK) on success, one of the negative SF_E*
 * codes otherwise. When the caller passes a non-NULL `sf_err *`, the function
 * also writes a one-line, human-readable message that names the file, line,
 * field or record at fault. The message buffer is owned by the caller; nothing
 * here allocates. There are no globals: every function is reentrant.
 */
#ifndef SF_COMMON_H
#define SF_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Status codes. 0 is success; every failure is negative so `if (rc < 0)`
 * reads naturally. Keep sf_strerror() in step with this table. */
enum {
    SF_OK = 0,
    SF_EINVAL = -1,        /* an argument or input value is out of range        */
    SF_ENOMEM = -2,        /* an allocation failed                              */
    SF_EIO = -3,           /* an operating-system call failed (errno in message)*/
    SF_EFORMAT = -4,       /* bytes from disk or network do not decode          */
    SF_EVERSION = -5,      /* a schema, protocol or tokenizer version mismatch  */
    SF_ECORRUPT = -6,      /* a digest or checksum does not match               */
    SF_ENOTFOUND = -7,     /* a named file, key, model or record does not exist */
    SF_EFULL = -8,         /* a fixed-capacity buffer would overflow            */
    SF_ESTATE = -9,        /* the call is not valid in the object's state       */
    SF_ETIMEOUT = -10,     /* a deadline passed                                 */
    SF_EUNSUPPORTED = -11, /* a feature is not built in or not available    */
    SF_ECONFIG = -12,      /* a configuration file is invalid                   */
    SF_ECHILD = -13,       /* a child process failed (exit status in message)   */
    SF_EREMOTE = -14,      /* a peer answered with an error (its reason in msg) */
};

#define SF_ERR_MSG_MAX 512

/* The text of a macro's value ("50" for a macro defined as 50): for a
 * default that is printed or parsed as text but lives as a number. */
#define SF_STRINGIFY_(x) #x
#define SF_STRINGIFY(x)  SF_STRINGIFY_(x)

/* An error report: the status code and a message naming what went wrong.
 * Zero-initialise it (`sf_err e = {0};`) before use. */
typedef struct sf_err {
    int code;
    char msg[SF_ERR_MSG_MAX];
} sf_err;

/* Record `code` and a printf-style message in `err` (if non-NULL) and return
 * `code`, so callers can write `return sf_err_set(err, SF_EINVAL, "...")`.
 * A message longer than SF_ERR_MSG_MAX-1 bytes is truncated. */
int sf_err_set(sf_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prefix the message already in `err` with `prefix: ` (for adding context
 * such as a file name as an error travels up). Returns err->code, or
 * SF_EINVAL when err is NULL. */
int sf_err_prefix(sf_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A static English name for a status code ("invalid argument", ...).
 * Never NULL. */
const char *sf_strerror(int code);

/* ---- log sinks ------------------------------------------------------------
 *
 * Libraries never write to stderr themselves: a library that has something
 * to say (the coordinator, the worker) takes a sink in its options, a
 * function and its context, and hands it one line at a time, without the
 * trailing newline. A NULL function drops the lines. Programs choose where
 * lines go (sf_log_to_file writes them to a FILE *). Each library says from
 * which threads its sink is called. */
typedef void (*sf_log_fn)(void *ctx, const char *line);

/* Format one line (at most SF_ERR_MSG_MAX - 1 bytes; longer is cut) and hand
 * it to `fn` with `ctx`; nothing when `fn` is NULL. */
void sf_log(sf_log_fn fn, void *ctx, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The same from a va_list, the line starting with `prefix` (a library's
 * "12:00:01.250 worker w1: "). */
void sf_vlog(sf_log_fn fn, void *ctx, const char *prefix, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* A sink for programs: `ctx` is a FILE *; writes the line and a newline and
 * flushes. */
void sf_log_to_file(void *ctx, const char *line);

/* SplitMix64 finaliser (Steele, Lea & Flood 2014): a bijective 64-bit mixer.
 * Used to derive independent seeds from (seed, index) tuples: never derive a
 * seed as plain `base + i`. */
static inline uint64_t sf_mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Derive a seed from a base seed and up to three integer coordinates, e.g.
 * (run seed, decision index, tree index). Deterministic and order-sensitive. */
static inline uint64_t sf_seed_derive(uint64_t base, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t h = sf_mix64(base);
    h = sf_mix64(h ^ a);
    h = sf_mix64(h ^ (b * 0xD6E8FEB86659FD93ull));
    return sf_mix64(h ^ (c * 0xA0761D6478BD642Full));
}

/* Monotonic time in nanoseconds (CLOCK_MONOTONIC). For measurement only:
 * nothing that decides a label may read the clock. */
uint64_t sf_now_ns(void);

/* Wall-clock time in seconds since the Unix epoch (CLOCK_REALTIME). */
int64_t sf_wall_s(void);

/* Create a directory and its missing parents (like `mkdir -p`, mode 0755).
 * Returns SF_OK, or SF_EIO with errno set. */
int sf_mkdir_p(const char *path);

/* A string from the network or a file made safe for a log line: at most
 * cap - 1 bytes of `src` copied into `dst` (NUL-terminated; cap >= 1),
 * every byte outside printable ASCII (0x20..0x7e) replaced by '?', so a
 * peer cannot end a log line, forge the next one or move the terminal. */
void sf_str_printable(char *dst, size_t cap, const char *src);

/* 1 when `s` is 1..max_len bytes of [A-Za-z0-9._:@+-] and does not start
 * with '.': safe inside a file name and a log line as it is. */
int sf_str_is_name(const char *s, size_t max_len);

/* Whether a ZeroMQ `endpoint` reaches only this machine: ipc://, or tcp://
 * on 127.0.0.0/8, ::1 or localhost. The one rule for where a server may
 * listen without CURVE keys (the run config's check, gpu-evald's --bind). */
int sf_endpoint_is_loopback(const char *endpoint);

/* Hex-encode `n` bytes into `out` (2n+1 bytes, NUL-terminated). */
void sf_hex(const uint8_t *bytes, size_t n, char *out);

/* Parse 2n hex digits from `hex` into `out`. Returns SF_OK or SF_EFORMAT
 * when the string has the wrong length or a non-hex character. */
int sf_unhex(const char *hex, uint8_t *out, size_t n);

/* ---- SHA-256 digests spelled in hex ------------------------------------------
 *
 * A SHA-256 (a model pin, a shard's content digest, a file digest, the run's
 * config digest) is written as SF_SHA256_HEX_LEN hex digits. Its canonical
 * spelling is lower case, the one sf_hex() writes, and it is the only one
 * spirefleet stores or sends, so one model or file has one spelling in every
 * label, manifest, ledger entry, request and metric.
 *
 * The case rule:
 *   - Where a person types a digest, either case is accepted and normalised
 *     at once with sf_sha256_hex_parse(): a run config's model.sha256, the
 *     BUNDLE@SHA256 pin of gpu-evald --model, sf-model --sha256, and the pins
 *     given to the APIs those reach (sf_bundle_load, sf_neteval_*). Only the
 *     lower-case form travels on from there.
 *   - Where a program wrote the digest, only the canonical spelling is valid
 *     (sf_sha256_hex_canonical()): fleet and evald wire messages (ShardOffer,
 *     ShardList, EvalRequest, a RunConfig message), a sf_run_config handed to
 *     sf_config_validate, and what a shard writer is asked to record.
 *   - Reading data at rest accepts either case (sf_sha256_hex_valid()): a
 *     shard manifest sealed before this rule can carry an upper-case
 *     model_sha256 that its config spelled so, and the shard stays readable.
 *
 * None of these allocates; all are reentrant. */

enum { SF_SHA256_HEX_LEN = 64 }; /* hex digits in a SHA-256 (65 bytes with the NUL) */

/* Whether `s` is exactly 64 hex digits, in either case. False for NULL. */
bool sf_sha256_hex_valid(const char *s);

/* Whether `s` is exactly 64 lower-case hex digits: the canonical spelling.
 * False for NULL. */
bool sf_sha256_hex_canonical(const char *s);

/* Check that `s` is 64 hex digits in either case and write its canonical
 * (lower-case) spelling, NUL-terminated, to `out` (65 bytes, caller-owned;
 * `out` may be `s` itself to normalise in place). Returns SF_OK, or
 * SF_EINVAL when `s` is NULL, has another length or holds a non-hex
 * character; then `out` is not written and the message says which, quoting
 * `s` (at most 80 characters; not when it holds a control byte), e.g.
 * "'abc' is not 64 hex digits (it has 3 characters)", for the caller to
 * prefix with the field or file. */
int sf_sha256_hex_parse(const char *s, char out[SF_SHA256_HEX_LEN + 1], sf_err *err);

#endif
