/* fuzz_evald_wire.c — libFuzzer target: bytes from the network as a
 * gpu-evald request (server side) and as a reply (client side). Decoding
 * must refuse anything malformed with a status, never crash or read out of
 * bounds; a request that decodes must hold only valid positions. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-evald/wire.h"
#include "model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sf_arena arena;
    sf_arena_init(&arena, NULL);
    sf_err e = {0};
    sf_wire_request *w = NULL;
    uint64_t id;
    char model[65];
    if (sf_wire_request_decode(data, size, &arena, &w, &id, model, &e) == SF_OK) {
        for (int i = 0; i < w->n; i++)
            if (sf_pos_validate(&w->pos[i], &e) != SF_OK)
                abort(); /* decode promised valid positions */
        free(w);
    }
    sf_wire_reply r;
    if (sf_wire_reply_decode(data, size, &arena, &r, &e) == SF_OK && r.status == SF_OK) {
        /* Unpack against a request of 4 positions with 0..3 queries. */
        static sf_net_out out[4];
        const uint8_t nq[4] = {0, 1, 2, 3};
        (void)sf_wire_reply_outputs(&r, 4, nq, out, &e);
    }
    sf_arena_free(&arena);
    return 0;
}
