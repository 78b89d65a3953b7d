/*
 * engine_positions.c — write a positions file of real engine positions
 * (docs/model.md, "Positions files"): random play through every Act-1
 * encounter, tokenized by sf_engine_feat() at each decision, every `stride`th
 * decision kept. Deterministic in its seed. The parity test feeds these to
 * PyTorch and to the cpu backend, and uses them as golden positions.
 *
 * usage: engine_positions SEED COUNT OUT
 */
#include <stdio.h>
#include <stdlib.h>

#include "engine/engine.h"
#include "model/model.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: engine_positions SEED COUNT OUT\n");
        return 2;
    }
    uint64_t seed = strtoull(argv[1], NULL, 10);
    int count = atoi(argv[2]);
    sf_err e = {0};
    sf_positions *ps;
    if (count < 1 || sf_positions_create(count, &ps, &e) != SF_OK) {
        fprintf(stderr, "engine_positions: bad count %s\n", argv[2]);
        return 2;
    }
    static sf_feat feat;
    const int stride = 3;
    long decision = 0;
    for (int fight = 0; sf_positions_count(ps) < count && fight < 100000; fight++) {
        sf_fight_spec spec;
        sf_fight_spec_default(&spec);
        spec.encounter = fight % sf_encounter_count();
        spec.seed = sf_seed_derive(seed, (uint64_t)fight, 0, 0);
        sf_state s;
        if (sf_engine_init(&s, &spec, &e) != SF_OK) {
            fprintf(stderr, "engine_positions: fight %d: %s\n", fight, e.msg);
            return 1;
        }
        for (int ply = 0; !sf_engine_is_terminal(&s) && sf_positions_count(ps) < count; ply++) {
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
            if (n <= 0)
                break;
            if (decision++ % stride == 0) {
                int rc = sf_engine_feat(&s, acts, n, &feat);
                sf_pos p = sf_pos_from_feat(&feat);
                if ((rc != SF_OK && rc != SF_EFULL) || sf_positions_add(ps, &p, &e) != SF_OK) {
                    fprintf(stderr, "engine_positions: fight %d ply %d: %s\n", fight, ply,
                            rc != SF_OK && rc != SF_EFULL ? sf_strerror(rc) : e.msg);
                    return 1;
                }
            }
            uint64_t r = sf_seed_derive(seed, (uint64_t)fight, (uint64_t)ply, 1);
            if (sf_engine_apply(&s, acts[r % (uint64_t)n], NULL) != SF_OK) {
                fprintf(stderr, "engine_positions: fight %d ply %d: illegal action\n", fight, ply);
                return 1;
            }
        }
    }
    if (sf_positions_write(ps, argv[3], &e) != SF_OK) {
        fprintf(stderr, "engine_positions: %s\n", e.msg);
        return 1;
    }
    printf("%d engine positions -> %s\n", sf_positions_count(ps), argv[3]);
    sf_positions_free(ps);
    return 0;
}
