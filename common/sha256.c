/* sha256.c — SHA-256 over libcrypto's EVP interface (sha256.h). */
#include "common/sha256.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

struct sf_sha256_ctx {
    EVP_MD_CTX *ctx;
    int failed; /* an update failed: final reports it */
};

static int start(sf_sha256_ctx *h, sf_err *err) {
    h->failed = 0;
    if (EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1)
        return sf_err_set(err, SF_EIO, "sha256: libcrypto refused to start a SHA-256");
    return SF_OK;
}

int sf_sha256_new(sf_sha256_ctx **out, sf_err *err) {
    *out = NULL;
    sf_sha256_ctx *h = calloc(1, sizeof *h);
    if (!h || !(h->ctx = EVP_MD_CTX_new())) {
        free(h);
        return sf_err_set(err, SF_ENOMEM, "sha256: out of memory");
    }
    int rc = start(h, err);
    if (rc < 0) {
        sf_sha256_free(h);
        return rc;
    }
    *out = h;
    return SF_OK;
}

void sf_sha256_update(sf_sha256_ctx *h, const void *p, size_t n) {
    if (n > 0 && EVP_DigestUpdate(h->ctx, p, n) != 1)
        h->failed = 1;
}

int sf_sha256_final(sf_sha256_ctx *h, uint8_t out[SF_SHA256_BYTES], sf_err *err) {
    unsigned len = 0;
    int ok = !h->failed && EVP_DigestFinal_ex(h->ctx, out, &len) == 1 && len == SF_SHA256_BYTES;
    int rc = start(h, err);
    if (!ok) {
        memset(out, 0, SF_SHA256_BYTES);
        return sf_err_set(err, SF_EIO, "sha256: libcrypto failed while hashing");
    }
    return rc;
}

void sf_sha256_free(sf_sha256_ctx *h) {
    if (!h)
        return;
    EVP_MD_CTX_free(h->ctx);
    free(h);
}

int sf_sha256(const void *p, size_t n, uint8_t out[SF_SHA256_BYTES], sf_err *err) {
    unsigned len = 0;
    /* EVP_Digest wants a non-NULL pointer even for no bytes */
    static const uint8_t none[1];
    if (EVP_Digest(n ? p : none, n, out, &len, EVP_sha256(), NULL) != 1 || len != SF_SHA256_BYTES) {
        memset(out, 0, SF_SHA256_BYTES);
        return sf_err_set(err, SF_EIO, "sha256: libcrypto failed to hash %zu bytes", n);
    }
    return SF_OK;
}
