/*
 * dashboard_schema.c — a build tool: writes the JSON Schema of the
 * dashboard's message endpoints (coordinator/dashboard.h
 * sf_dash_schema_json, made from proto/fleet.proto's descriptors) to OUT,
 * the file the tests validate /api responses against.
 *
 * usage: dashboard_schema OUT. Exit 0, or 1 with a message naming OUT.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/dashboard.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: dashboard_schema OUT\n");
        return 1;
    }
    size_t len;
    char *s = sf_dash_schema_json(&len);
    FILE *f = s ? fopen(argv[1], "w") : NULL;
    if (!f || fwrite(s, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "dashboard_schema: %s: %s\n", argv[1],
                s ? strerror(errno) : "out of memory");
        free(s);
        return 1;
    }
    free(s);
    return 0;
}
