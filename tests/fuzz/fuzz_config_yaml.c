/* fuzz_config_yaml.c — libFuzzer target: bytes as a YAML run configuration
 * (sf_config_parse). Any input must give SF_OK or SF_ECONFIG with a message,
 * never a crash, a leak or an out-of-bounds read; an accepted config must
 * print and parse back to the same digest. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sf_run_config a, b;
    sf_err err = {0};
    int rc = sf_config_parse((const char *)data, size, "fuzz.yaml", &a, &err);
    if (rc != SF_OK) {
        if (rc != SF_ECONFIG && rc != SF_ENOMEM)
            abort();
        if (!err.msg[0])
            abort(); /* every refusal says why */
        return 0;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return 0;
    sf_config_print(&a, m);
    fclose(m);
    if (sf_config_parse(buf, len, "printed", &b, &err) != SF_OK)
        abort(); /* what we print, we read */
    char da[65], db[65];
    if (sf_config_digest(&a, da) == SF_OK && sf_config_digest(&b, db) == SF_OK &&
        strcmp(da, db) != 0)
        abort();
    free(buf);
    return 0;
}
