/*
 * sha256.h — SHA-256 (FIPS 180-4) of bytes, in one call or incrementally:
 * the one home for the digests spirefleet stores and compares (a shard's
 * content digest, a shard file's digest, a model bundle's and a tensor
 * file's sha256, a run config's digest).
 *
 * Backed by OpenSSL's libcrypto (EVP, which uses the CPU's SHA extensions
 * where it has them: about 5× libsodium's portable SHA-256 on the same
 * machine, docs/benchmarks.md "Hashing"). The digest is SHA-256 whatever the
 * backend, so digests recorded before stay comparable.
 */
#ifndef SF_SHA256_H
#define SF_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

#define SF_SHA256_BYTES 32

/* An incremental SHA-256: new, update any number of times, final. Opaque;
 * one thread at a time. */
typedef struct sf_sha256_ctx sf_sha256_ctx;

/* A fresh hash of the empty message in *out (free with sf_sha256_free).
 * SF_ENOMEM (or SF_EIO when libcrypto refuses the digest), *out NULL. */
int sf_sha256_new(sf_sha256_ctx **out, sf_err *err);

/* Append n bytes (n may be 0; p may then be NULL). Allocates nothing. A
 * failure inside libcrypto (none is known for SHA-256) is kept and reported
 * by sf_sha256_final, so hot loops need not check every call. */
void sf_sha256_update(sf_sha256_ctx *h, const void *p, size_t n);

/* Write the 32-byte digest of everything appended since new (or since the
 * last final) to out, then start again at the empty message. SF_EIO when an
 * update or this call failed in libcrypto (out is then zeroed). */
int sf_sha256_final(sf_sha256_ctx *h, uint8_t out[SF_SHA256_BYTES], sf_err *err);

/* Free h (NULL is fine). */
void sf_sha256_free(sf_sha256_ctx *h);

/* The digest of p[0..n) in one call. SF_ENOMEM or SF_EIO as above (out is
 * then zeroed). */
int sf_sha256(const void *p, size_t n, uint8_t out[SF_SHA256_BYTES], sf_err *err);

#endif
