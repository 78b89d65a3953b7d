/*
 * proc.h — child server processes for the benchmarks: start one, learn its
 * endpoint from its log, read its resident memory.
 */
#ifndef SF_TESTS_PROC_H
#define SF_TESTS_PROC_H

#include <sys/types.h>

/* Resident set of process `pid` in MiB (VmRSS of /proc/PID/status), or -1
 * when it cannot be read. */
double sf_proc_rss_mib(pid_t pid);

/* Start argv[0] (an absolute or relative path, argv NULL-terminated) with
 * stdout to /dev/null and stderr to the file `log`, then wait up to 10 s
 * for a line of the log containing `marker` and copy the word after it into
 * endpoint[256]. Returns the child's pid, or -1 when the fork fails, the
 * child exits first or the marker never appears; then the child is reaped
 * and its log echoed to stderr. Buffered output is flushed before the fork.
 * The caller stops a returned child (kill, waitpid). */
pid_t sf_proc_spawn_server(char *const argv[], const char *log, const char *marker,
                           char endpoint[256]);

#endif
