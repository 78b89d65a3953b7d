/* replay.c — run a libFuzzer target over its corpus without libFuzzer, so
 * every build (and the ASan/UBSan one) replays the seeds and any crash
 * reproducer committed there. Arguments: files or directories. TAP output:
 * one test per input. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path, int *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("not ok %d - %s: cannot open\n", ++*n, path);
        return 1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                return 1;
            }
            buf = b;
        }
        size_t k = fread(buf + len, 1, cap - len, f);
        if (k == 0)
            break;
        len += k;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    printf("ok %d - %s (%zu bytes)\n", ++*n, path, len);
    return 0;
}

static int cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    int n = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            printf("not ok %d - %s: missing\n", ++n, argv[i]);
            bad++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad += run_file(argv[i], &n);
            continue;
        }
        DIR *d = opendir(argv[i]);
        char *names[4096];
        int m = 0;
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL && m < 4096)
            if (de->d_name[0] != '.') {
                names[m] = malloc(strlen(argv[i]) + strlen(de->d_name) + 2);
                sprintf(names[m++], "%s/%s", argv[i], de->d_name);
            }
        if (d)
            closedir(d);
        qsort(names, (size_t)m, sizeof *names, cmp);
        for (int k = 0; k < m; k++) {
            bad += run_file(names[k], &n);
            free(names[k]);
        }
    }
    printf("1..%d\n", n);
    return bad || n == 0 ? 1 : 0;
}
