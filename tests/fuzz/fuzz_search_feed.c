/* fuzz_search_feed.c — evaluator answers come from the network: whatever
 * bytes arrive as an sf_eval_answer, sf_search_feed() must reject what is
 * invalid (non-finite or out-of-range values, bad distributions or priors)
 * without changing anything, accept the rest, and the search must run to
 * its end without a crash. Each input is a sequence of answers. */
#include <stdint.h>
#include <string.h>

#include "search/search.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static sf_search *s;
    static sf_state st;
    sf_err e = {0};
    if (!s) {
        sf_search_config c;
        sf_search_config_default(&c);
        c.simulations = 64;
        c.trees = 2;
        c.evaluator = SF_EVAL_EXTERNAL;
        c.request_feat = 0;
        c.distributional = 1;
        if (sf_search_create(&c, &s, &e) < 0)
            __builtin_trap();
        sf_fight_spec spec;
        sf_fight_spec_default(&spec);
        spec.encounter = sf_encounter_lookup("Jaw Worm");
        spec.seed = 1;
        if (sf_engine_init(&st, &spec, &e) < 0)
            __builtin_trap();
    }
    if (sf_search_begin(s, &st, 1, 0, &e) < 0)
        __builtin_trap();
    size_t pos = 0;
    const sf_eval_request *reqs[4];
    int n = 0, rc, rounds = 0;
    while ((rc = sf_search_step(s, reqs, 4, &n, &e)) == SF_SEARCH_PENDING && rounds++ < 10000) {
        for (int i = 0; i < n; i++) {
            sf_eval_answer a;
            memset(&a, 0, sizeof a);
            size_t take = size - pos < sizeof a ? size - pos : sizeof a;
            memcpy(&a, data + pos, take);
            pos += take;
            if (sf_search_feed(s, reqs[i], &a, &e) < 0) {
                /* rejected: the request stays open; answer it validly */
                memset(&a, 0, sizeof a);
                a.value = 0.5;
                if (sf_search_feed(s, reqs[i], &a, &e) < 0)
                    __builtin_trap();
            }
        }
    }
    if (rc != SF_SEARCH_DONE)
        __builtin_trap();
    sf_search_result r;
    if (sf_search_result_get(s, &r, &e) < 0 || r.simulations != 64)
        __builtin_trap();
    return 0;
}
