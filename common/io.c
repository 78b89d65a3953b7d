/* io.c — whole reads and writes, directory syncs (see io.h). */
#include "common/io.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The loops below: read or write at `off`, or at the file position when
 * `off` < 0, retrying EINTR and short transfers. A read stops at the end of
 * the file (*done < n); a write that makes no progress fails with ENOSPC. */
static int read_loop(int fd, void *buf, size_t n, int64_t off, size_t *done) {
    uint8_t *p = buf;
    *done = 0;
    while (*done < n) {
        ssize_t k = off < 0 ? read(fd, p + *done, n - *done)
                            : pread(fd, p + *done, n - *done, (off_t)(off + (int64_t)*done));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return SF_EIO;
        if (k == 0)
            break;
        *done += (size_t)k;
    }
    return SF_OK;
}

static int write_loop(int fd, const void *buf, size_t n, int64_t off) {
    const uint8_t *p = buf;
    for (size_t done = 0; done < n;) {
        ssize_t k = off < 0 ? write(fd, p + done, n - done)
                            : pwrite(fd, p + done, n - done, (off_t)(off + (int64_t)done));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = ENOSPC;
            return SF_EIO;
        }
        done += (size_t)k;
    }
    return SF_OK;
}

int sf_pread_full(int fd, void *buf, size_t n, uint64_t off) {
    size_t got;
    if (read_loop(fd, buf, n, (int64_t)off, &got) < 0)
        return SF_EIO;
    if (got < n) {
        errno = 0;
        return SF_EFORMAT;
    }
    return SF_OK;
}

int sf_pwrite_full(int fd, const void *buf, size_t n, uint64_t off) {
    return write_loop(fd, buf, n, (int64_t)off);
}

int sf_read_full(int fd, void *buf, size_t n, size_t *got) {
    return read_loop(fd, buf, n, -1, got);
}

int sf_write_full(int fd, const void *buf, size_t n) {
    return write_loop(fd, buf, n, -1);
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

int sf_write_file_durable(const char *path, const void *data, size_t len, sf_err *err) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return sf_err_set(err, SF_EINVAL, "%s: the path is too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return sf_err_set(err, SF_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    int rc = sf_write_full(fd, data, len);
    if (rc == SF_OK && fsync(fd) != 0)
        rc = SF_EIO;
    int why = errno;
    if (close(fd) != 0 && rc == SF_OK) {
        rc = SF_EIO;
        why = errno;
    }
    if (rc < 0) {
        unlink(tmp);
        return sf_err_set(err, SF_EIO, "%s: cannot write: %s", tmp, strerror(why));
    }
    if (rename(tmp, path) != 0) {
        rc =
            sf_err_set(err, SF_EIO, "%s: cannot rename %s over it: %s", path, tmp, strerror(errno));
        unlink(tmp);
        return rc;
    }
    return sf_fsync_parent(path, err);
}

int sf_open_regular(const char *path, struct stat *st, sf_err *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return sf_err_set(err, errno == ENOENT ? SF_ENOTFOUND : SF_EIO, "%s: cannot open: %s", path,
                          strerror(errno));
    int rc = SF_OK, flags;
    if (fstat(fd, st) != 0)
        rc = sf_err_set(err, SF_EIO, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(st->st_mode))
        rc = sf_err_set(err, SF_EFORMAT, "%s: not a regular file (%s)", path,
                        S_ISDIR(st->st_mode)                           ? "a directory"
                        : S_ISFIFO(st->st_mode)                        ? "a FIFO"
                        : S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? "a device"
                        : S_ISSOCK(st->st_mode)                        ? "a socket"
                                                                       : "another kind");
    else if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
        rc = sf_err_set(err, SF_EIO, "%s: cannot clear O_NONBLOCK: %s", path, strerror(errno));
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

int sf_read_line_file(const char *path, char *buf, size_t cap, sf_err *err) {
    struct stat st;
    int fd = sf_open_regular(path, &st, err);
    if (fd < 0)
        return fd;
    size_t got = 0, more = 0;
    char extra;
    int rc = cap ? sf_read_full(fd, buf, cap - 1, &got) : SF_EFULL;
    if (rc == SF_OK && got == cap - 1) /* full: is there more? */
        rc = sf_read_full(fd, &extra, 1, &more);
    int why = errno;
    close(fd);
    if (rc < 0)
        return sf_err_set(err, rc == SF_EFULL ? SF_EFORMAT : SF_EIO, "%s: cannot read: %s", path,
                          rc == SF_EFULL ? "no room" : strerror(why));
    buf[got] = '\0';
    if (more)
        return sf_err_set(err, SF_EFORMAT, "%s: longer than the %zu bytes one line may hold", path,
                          cap - 1);
    while (got && (buf[got - 1] == '\n' || buf[got - 1] == ' ' || buf[got - 1] == '\r'))
        buf[--got] = '\0';
    if (!got)
        return sf_err_set(err, SF_EFORMAT, "%s: empty", path);
    if (strchr(buf, '\n'))
        return sf_err_set(err, SF_EFORMAT, "%s: more than one line", path);
    return SF_OK;
}
