/* fuzz_fleet_wire.c — libFuzzer target: bytes from the network as a fleet
 * envelope (fleet/wire.h sf_wire_decode), and, when one decodes, the run
 * configuration it may carry (sf_config_from_proto, which validates every
 * field). Nothing may crash, leak or read out of bounds; every failure must
 * be an error value. */
#include <stdint.h>
#include <stdlib.h>

#include "fleet/config.h"
#include "fleet/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Spirefleet__Envelope *env = NULL;
    sf_err err = {0};
    if (sf_wire_decode(data, size, &env, &err) != SF_OK) {
        if (env)
            abort(); /* a refused envelope is never handed out */
        return 0;
    }
    const Spirefleet__RunConfig *rc = NULL;
    if (env->body_case == SPIREFLEET__ENVELOPE__BODY_WELCOME)
        rc = env->welcome->config;
    sf_run_config cfg;
    if (rc)
        (void)sf_config_from_proto(rc, &cfg, &err);
    sf_wire_free(env);
    return 0;
}
