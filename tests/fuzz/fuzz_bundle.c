/* fuzz_bundle.c — libFuzzer target: bytes from disk as a model bundle.
 * The safetensors parser, the bundle validator and the golden-position
 * reader must refuse anything malformed with an error, never crash. A
 * bundle that does load (from the seed corpus) is bound to the cpu backend
 * and its canary run, so the forward pass sees fuzzed weights too. */
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sf_err e = {0};
    sf_tensorfile *tf = NULL;
    if (sf_tensorfile_parse(data, size, "fuzz", &tf, &e) == SF_OK) {
        sf_positions *ps = NULL;
        if (sf_positions_from_file(tf, "", &ps, &e) == SF_OK)
            sf_positions_free(ps);
        sf_tensorfile_free(tf);
    }
    sf_bundle *b = NULL;
    if (sf_bundle_load_mem(data, size, "fuzz", NULL, &b, &e) == SF_OK) {
        const sf_arch *a = sf_bundle_arch(b);
        /* Keep each run short: only small networks are evaluated. */
        if (sf_arch_params(a) < 2000000 && a->n_layers <= 4) {
            sf_net *net = NULL;
            if (sf_net_create(b, NULL, &net, &e) == SF_OK) {
                sf_canary_report r;
                (void)sf_net_canary(net, b, &r, &e);
                sf_net_free(net);
            }
        }
        sf_bundle_free(b);
    }
    return 0;
}
