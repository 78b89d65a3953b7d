/* proc.c — see proc.h. */
#include "proc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

double sf_proc_rss_mib(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    double v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            v = atof(line + 6) / 1024.0;
    if (f)
        fclose(f);
    return v;
}

static void echo_log(const char *log) {
    FILE *f = fopen(log, "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        fprintf(stderr, "  | %s", line);
    if (f)
        fclose(f);
}

pid_t sf_proc_spawn_server(char *const argv[], const char *log, const char *marker,
                           char endpoint[256]) {
    endpoint[0] = 0;
    fflush(NULL); /* the child must not print this process's buffered lines */
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen(log, "w", stderr))
            _exit(126);
        execv(argv[0], argv);
        fprintf(stderr, "cannot run %s\n", argv[0]);
        fflush(stderr);
        _exit(127);
    }
    for (int i = 0; i < 200 && !endpoint[0]; i++) {
        usleep(50000);
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "%s exited (status %d) before serving; its log:\n", argv[0], status);
            echo_log(log);
            return -1;
        }
        FILE *f = fopen(log, "r");
        char line[1024];
        while (f && fgets(line, sizeof line, f)) {
            char *at = strstr(line, marker);
            if (at && sscanf(at + strlen(marker), "%255s", endpoint) != 1)
                endpoint[0] = 0;
        }
        if (f)
            fclose(f);
    }
    if (!endpoint[0]) {
        fprintf(stderr, "%s did not come up in 10 s; its log:\n", argv[0]);
        echo_log(log);
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}
