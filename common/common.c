/* common.c — error values, log sinks, clock, hex and SHA-256 hex helpers
 * (see common.h). */
#include "common/common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int sf_err_set(sf_err *err, int code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

int sf_err_prefix(sf_err *err, const char *fmt, ...) {
    if (!err)
        return SF_EINVAL;
    char prefix[SF_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Build "prefix: message" by hand: snprintf with two %s of this size
     * trips -Wformat-truncation, and truncation is intended here. */
    char joined[SF_ERR_MSG_MAX];
    size_t np = strnlen(prefix, sizeof joined - 1);
    memcpy(joined, prefix, np);
    size_t pos = np;
    if (pos + 2 < sizeof joined) {
        joined[pos++] = ':';
        joined[pos++] = ' ';
    }
    size_t nm = strnlen(err->msg, sizeof err->msg);
    if (nm > sizeof joined - 1 - pos)
        nm = sizeof joined - 1 - pos;
    memcpy(joined + pos, err->msg, nm);
    joined[pos + nm] = '\0';
    memcpy(err->msg, joined, sizeof joined);
    return err->code;
}

void sf_vlog(sf_log_fn fn, void *ctx, const char *prefix, const char *fmt, va_list ap) {
    if (!fn)
        return;
    char line[SF_ERR_MSG_MAX];
    size_t n = strnlen(prefix, sizeof line - 1);
    memcpy(line, prefix, n);
    vsnprintf(line + n, sizeof line - n, fmt, ap);
    fn(ctx, line);
}

void sf_log(sf_log_fn fn, void *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sf_vlog(fn, ctx, "", fmt, ap);
    va_end(ap);
}

void sf_log_to_file(void *ctx, const char *line) {
    FILE *f = ctx;
    fprintf(f, "%s\n", line);
    fflush(f);
}

const char *sf_strerror(int code) {
    switch (code) {
    case SF_OK: return "success";
    case SF_EINVAL: return "invalid argument";
    case SF_ENOMEM: return "out of memory";
    case SF_EIO: return "i/o error";
    case SF_EFORMAT: return "malformed input";
    case SF_EVERSION: return "version mismatch";
    case SF_ECORRUPT: return "digest mismatch";
    case SF_ENOTFOUND: return "not found";
    case SF_EFULL: return "capacity exceeded";
    case SF_ESTATE: return "invalid state for this call";
    case SF_ETIMEOUT: return "timed out";
    case SF_EUNSUPPORTED: return "not supported";
    case SF_ECONFIG: return "invalid configuration";
    case SF_ECHILD: return "child process failed";
    case SF_EREMOTE: return "error reply from peer";
    default: return "unknown error";
    }
}

uint64_t sf_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t sf_wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

void sf_str_printable(char *dst, size_t cap, const char *src) {
    size_t i = 0;
    for (; src && src[i] && i + 1 < cap; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = c >= 0x20 && c <= 0x7e ? (char)c : '?';
    }
    dst[i] = '\0';
}

int sf_str_is_name(const char *s, size_t max_len) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > max_len || s[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("._:@+-", c)))
            return 0;
    }
    return 1;
}

void sf_hex(const uint8_t *bytes, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int sf_unhex(const char *hex, uint8_t *out, size_t n) {
    if (!hex || strlen(hex) != 2 * n)
        return SF_EFORMAT;
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return SF_EFORMAT;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return SF_OK;
}

bool sf_sha256_hex_valid(const char *s) {
    if (!s)
        return false;
    size_t n = 0;
    for (; n < SF_SHA256_HEX_LEN && s[n]; n++)
        if (hexval(s[n]) < 0)
            return false;
    return n == SF_SHA256_HEX_LEN && s[n] == '\0';
}

bool sf_sha256_hex_canonical(const char *s) {
    if (!sf_sha256_hex_valid(s))
        return false;
    for (size_t i = 0; i < SF_SHA256_HEX_LEN; i++)
        if (s[i] >= 'A' && s[i] <= 'F')
            return false;
    return true;
}

int sf_sha256_hex_parse(const char *s, char out[SF_SHA256_HEX_LEN + 1], sf_err *err) {
    if (!s)
        return sf_err_set(err, SF_EINVAL, "no SHA-256 given (NULL), expected 64 hex digits");
    size_t n = strlen(s);
    const char *more = n > 80 ? "..." : "";
    if (n != SF_SHA256_HEX_LEN)
        return sf_err_set(err, SF_EINVAL, "'%.80s%s' is not 64 hex digits (it has %zu characters)",
                          s, more, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (hexval((char)c) >= 0)
            continue;
        if (c >= 0x20 && c < 0x7f)
            return sf_err_set(err, SF_EINVAL,
                              "'%s' is not 64 hex digits (character %zu, '%c', is not a hex digit)",
                              s, i + 1, c);
        /* not quoted: a control byte would garble the message */
        return sf_err_set(err, SF_EINVAL,
                          "the value is not 64 hex digits (character %zu is the byte 0x%02x)",
                          i + 1, c);
    }
    for (size_t i = 0; i < n; i++)
        out[i] = s[i] >= 'A' && s[i] <= 'F' ? (char)(s[i] - 'A' + 'a') : s[i];
    out[n] = '\0';
    return SF_OK;
}

int sf_mkdir_p(const char *path) {
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return SF_EIO;
    }
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return SF_EIO;
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return SF_EIO;
    return SF_OK;
}

int sf_endpoint_is_loopback(const char *s) {
    if (!strncmp(s, "ipc://", 6))
        return 1;
    if (strncmp(s, "tcp://", 6))
        return 0;
    const char *h = s + 6;
    return !strncmp(h, "127.", 4) || !strncmp(h, "localhost:", 10) || !strncmp(h, "[::1]:", 6);
}
