/* endpoint_file.c — endpoints published in files (see endpoint_file.h). */
#include "common/endpoint_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"

/* Hosts that mean "every interface" in a bound tcp:// endpoint. */
static int wildcard_host(const char *h, size_t len) {
    static const char *const any[] = {"*", "0.0.0.0", "[::]", "::", "[::0]"};
    for (size_t i = 0; i < sizeof any / sizeof any[0]; i++)
        if (strlen(any[i]) == len && !strncmp(h, any[i], len))
            return 1;
    return 0;
}

int sf_endpoint_reachable(const char *bound, const char *host, char *out, size_t cap) {
    const char *colon = !strncmp(bound, "tcp://", 6) ? strrchr(bound + 6, ':') : NULL;
    int n;
    if (colon && wildcard_host(bound + 6, (size_t)(colon - (bound + 6)))) {
        char name[256] = "localhost";
        if (!host) {
            if (gethostname(name, sizeof name - 1) != 0 || !name[0])
                snprintf(name, sizeof name, "localhost");
            name[sizeof name - 1] = '\0';
            host = name;
        }
        n = snprintf(out, cap, "tcp://%s%s", host, colon);
    } else {
        n = snprintf(out, cap, "%s", bound);
    }
    return n >= 0 && (size_t)n < cap ? SF_OK : SF_EFULL;
}

int sf_endpoint_file_write(const char *path, const char *bound, sf_err *err) {
    char line[1100], tmp[4200];
    if (sf_endpoint_reachable(bound, NULL, line, sizeof line - 1) < 0)
        return sf_err_set(err, SF_EFULL, "%s: the endpoint %s is too long", path, bound);
    size_t len = strlen(line);
    line[len++] = '\n';
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return sf_err_set(err, SF_EFULL, "%s: the path is too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return sf_err_set(err, SF_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    if (sf_write_full(fd, line, len) < 0 || fsync(fd) != 0) {
        int why = errno;
        close(fd);
        unlink(tmp);
        return sf_err_set(err, SF_EIO, "%s: cannot write: %s", tmp, strerror(why));
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        int why = errno;
        unlink(tmp);
        return sf_err_set(err, SF_EIO, "%s: cannot rename into place: %s", path, strerror(why));
    }
    return sf_fsync_parent(path, err);
}

int sf_endpoint_file_read(const char *path, char *out, size_t cap, sf_err *err) {
    return sf_read_line_file(path, out, cap, err);
}
