/* fuzz_config_yaml.c — libFuzzer target: bytes as a YAML run configuration
 * (sf_config_parse). Any input must give SF_OK or SF_ECONFIG with a message,
 * never a crash, a leak or an out-of-bounds read; an accepted config must
 * print and parse back to the same digest, and come back from its RunConfig
 * message (packed and unpacked) with the same digest too, and its JSON form
 * (sf_config_to_json) must be one line of valid JSON. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fleet/config.h"

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
    char *json = sf_config_to_json(&a);
    if (json) {
        json_t *root = json_loads(json, 0, NULL);
        if (!root || strchr(json, '\n'))
            abort(); /* one line of JSON */
        json_decref(root);
        free(json);
    }
    sf_config_scratch *s = malloc(sizeof *s);
    if (!s)
        return 0;
    Spirefleet__RunConfig *msg = sf_config_to_proto(&a, s);
    size_t n = spirefleet__run_config__get_packed_size(msg);
    uint8_t *packed = malloc(n ? n : 1);
    if (packed) {
        spirefleet__run_config__pack(msg, packed);
        Spirefleet__RunConfig *back = spirefleet__run_config__unpack(NULL, n, packed);
        if (!back)
            abort(); /* what we pack, we unpack */
        if (sf_config_from_proto(back, &b, &err) != SF_OK)
            abort(); /* what we send, a worker accepts */
        if (sf_config_digest(&b, db) == SF_OK && strcmp(da, db) != 0)
            abort();
        spirefleet__run_config__free_unpacked(back, NULL);
        free(packed);
    }
    free(s);
    return 0;
}
