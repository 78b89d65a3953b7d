/* io.c — whole reads and writes, directory syncs (see io.h). */
#include "common/io.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sf_pread_full(int fd, void *buf, size_t n, uint64_t off) {
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t k = pread(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return SF_EIO;
        if (k == 0) {
            errno = 0;
            return SF_EFORMAT;
        }
        p += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return SF_OK;
}

int sf_pwrite_full(int fd, const void *buf, size_t n, uint64_t off) {
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t k = pwrite(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = ENOSPC;
            return SF_EIO;
        }
        p += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return SF_OK;
}

int sf_read_full(int fd, void *buf, size_t n, size_t *got) {
    uint8_t *p = buf;
    *got = 0;
    while (*got < n) {
        ssize_t k = read(fd, p + *got, n - *got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return SF_EIO;
        if (k == 0)
            break;
        *got += (size_t)k;
    }
    return SF_OK;
}

int sf_write_full(int fd, const void *buf, size_t n) {
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = ENOSPC;
            return SF_EIO;
        }
        p += k;
        n -= (size_t)k;
    }
    return SF_OK;
}

const char *sf_io_reason(int rc) {
    if (rc == SF_EFORMAT && errno == 0)
        return "the file ends first";
    return strerror(errno);
}

int sf_fflush_sync(FILE *f) {
    if (fflush(f) != 0 || fsync(fileno(f)) != 0)
        return SF_EIO;
    return SF_OK;
}

int sf_fsync_dir(const char *dir, sf_err *err) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        int rc = sf_err_set(err, SF_EIO, "%s: cannot sync the directory: %s", dir, strerror(errno));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    close(fd);
    return SF_OK;
}

int sf_fsync_parent(const char *path, sf_err *err) {
    char *copy = strdup(path);
    if (!copy)
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
    int rc = sf_fsync_dir(dirname(copy), err);
    free(copy);
    return rc;
}
