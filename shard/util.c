/* util.c — CRC-32, growable buffers, the unpack arena and path helpers. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/io.h"
#include "shard/internal.h"

uint32_t sf_crc32(const uint8_t *p, size_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    /* zlib takes uInt lengths: feed large buffers in pieces. */
    while (n > 0) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}

const uint8_t *sf_lmdb_map_base(const void *p, uint32_t page_size, uint64_t npages) {
    long os = sysconf(_SC_PAGESIZE);
    if (os <= 0 || page_size == 0 || page_size > (unsigned long)os ||
        (unsigned long)os % page_size != 0)
        return NULL;
    uintptr_t a = (uintptr_t)p;
    const uint8_t *page = (const uint8_t *)(a - a % page_size);
    uint64_t pgno = sf_le64(page);
    if (pgno >= npages)
        return NULL;
    return page - pgno * page_size;
}

/* ---- paths ------------------------------------------------------------------ */

bool sf_has_suffix(const char *name, const char *suffix) {
    size_t n = strlen(name), k = strlen(suffix);
    return n >= k && memcmp(name + n - k, suffix, k) == 0;
}

int sf_shard_open_file(const char *path, struct stat *st, sf_err *err) {
    int fd = sf_open_regular(path, st, err);
    if (fd == SF_ENOTFOUND)
        return sf_err_set(err, SF_ENOTFOUND, "%s: no such shard", path);
    if (fd == SF_EFORMAT && err) /* no shard at all, not a damaged one (exit 3, not 1) */
        err->code = SF_EIO;      /* the message, naming what the path is, stays */
    if (fd == SF_EFORMAT)
        return SF_EIO;
    return fd;
}
