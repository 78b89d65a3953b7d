/* fetch_url.c — what of common/fetch.h needs no libcurl: the URL
 * templates, checked and filled in (so the run config, fleet/config.c,
 * checks model.url without linking it), and the cancellable sleep. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/fetch.h"

#define TEMPLATE_KEY "{sha256}"

int sf_fetch_template_check(const char *tmpl, sf_err *err) {
    if (!tmpl || !*tmpl)
        return sf_err_set(err, SF_EINVAL, "the URL template is empty");
    if (strncmp(tmpl, "http://", 7) != 0 && strncmp(tmpl, "https://", 8) != 0)
        return sf_err_set(err, SF_EINVAL, "URL template '%.200s': expected http:// or https://",
                          tmpl);
    if (!strstr(tmpl, TEMPLATE_KEY))
        return sf_err_set(err, SF_EINVAL,
                          "URL template '%.200s' has no " TEMPLATE_KEY
                          ": a model is fetched by its SHA-256",
                          tmpl);
    for (const unsigned char *p = (const unsigned char *)tmpl; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return sf_err_set(err, SF_EINVAL,
                              "URL template '%.200s': a space or control character at byte %d",
                              tmpl, (int)(p - (const unsigned char *)tmpl));
    char probe[SF_FETCH_MAX_URL];
    return sf_fetch_url(tmpl, "0000000000000000000000000000000000000000000000000000000000000000",
                        probe, sizeof probe, err);
}

int sf_fetch_url(const char *tmpl, const char *sha256_hex, char *out, size_t cap, sf_err *err) {
    if (!sf_sha256_hex_canonical(sha256_hex))
        return sf_err_set(err, SF_EINVAL, "'%.80s' is not 64 lower-case hex digits",
                          sha256_hex ? sha256_hex : "(null)");
    size_t n = 0, keylen = strlen(TEMPLATE_KEY);
    for (const char *p = tmpl; *p;) {
        const char *piece = p;
        size_t len = 1;
        if (!strncmp(p, TEMPLATE_KEY, keylen)) {
            piece = sha256_hex;
            len = SF_SHA256_HEX_LEN;
            p += keylen;
        } else {
            p++;
        }
        if (n + len >= cap)
            return sf_err_set(err, SF_EFULL, "URL template '%.200s': longer than %zu bytes", tmpl,
                              cap - 1);
        memcpy(out + n, piece, len);
        n += len;
    }
    out[n] = '\0';
    return SF_OK;
}

void sf_fetch_sleep_ms(uint32_t ms, const volatile sig_atomic_t *cancel) {
    while (ms > 0 && !(cancel && *cancel)) {
        uint32_t step = ms < 50 ? ms : 50;
        struct timespec ts = {0, (long)step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}
