/*
 * fuzz_engine_json.c — libFuzzer target: arbitrary bytes as a saved state.
 *
 * The bytes are parsed as JSON and loaded with sf_engine_from_json(); when
 * a document is accepted, the state must be safe to use: enumerate, apply,
 * tokenize, hash and render it for a few steps. The "raw" field is where
 * the interesting bytes live; the seed corpus holds real saved states so
 * the fuzzer mutates from valid base64.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)data, size, 0, &jerr);
    if (!doc)
        return 0;
    sf_state s;
    sf_err err = {0};
    int rc = sf_engine_from_json(doc, &s, &err);
    json_decref(doc);
    if (rc < 0) {
        if (err.code != rc || !err.msg[0])
            abort(); /* every refusal carries its message */
        return 0;
    }
    static sf_feat f;
    char text[8192];
    for (int step = 0; step < 64 && !sf_engine_is_terminal(&s); step++) {
        sf_action acts[SF_MAX_ACTIONS];
        int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
        if (n <= 0)
            break;
        (void)sf_engine_feat(&s, acts, n, &f);
        (void)sf_engine_identity(&s);
        (void)sf_engine_render_text(&s, text, sizeof text);
        json_t *again = sf_engine_to_json(&s);
        json_decref(again);
        sf_engine_apply(&s, acts[(size_t)step * 7 % (size_t)n], NULL);
    }
    return 0;
}
