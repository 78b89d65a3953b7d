/* test_proto.c — protobuf-c round trip of the real LabelRecord schema. */
#include <stdlib.h>
#include <string.h>

#include "proto/label.pb-c.h"
#include "sf_check.h"

START_TEST(label_record_round_trip) {
    Spirefleet__LabelRecord rec = SPIREFLEET__LABEL_RECORD__INIT;
    Spirefleet__LabelIds ids = SPIREFLEET__LABEL_IDS__INIT;
    Spirefleet__SearchResult sr = SPIREFLEET__SEARCH_RESULT__INIT;
    Spirefleet__Inputs in = SPIREFLEET__INPUTS__INIT;
    Spirefleet__Tensor types = SPIREFLEET__TENSOR__INIT;

    ids.run_id = "run-a";
    ids.job_id = 42;
    ids.game_seed = 0xDEADBEEFCAFEull;
    ids.decision_index = 7;
    ids.model_sha256 = "rollout";
    uint32_t visits[3] = {10, 25, 965};
    float q[3] = {0.25f, 0.5f, 0.75f};
    sr.n_visits = 3;
    sr.visits = visits;
    sr.n_q = 3;
    sr.q = q;
    sr.chosen = 2;
    sr.root_raw_value = 0.7f;
    uint8_t tokens[5] = {1, 2, 3, 6, 6};
    uint32_t shape[1] = {5};
    types.dtype = "u8";
    types.n_shape = 1;
    types.shape = shape;
    types.data.len = 5;
    types.data.data = tokens;
    in.token_type = &types;
    rec.schema_version = 1;
    rec.ids = &ids;
    rec.search = &sr;
    rec.inputs = &in;

    size_t n = spirefleet__label_record__get_packed_size(&rec);
    uint8_t *buf = malloc(n);
    ck_assert_uint_eq(spirefleet__label_record__pack(&rec, buf), n);

    Spirefleet__LabelRecord *back = spirefleet__label_record__unpack(NULL, n, buf);
    ck_assert_ptr_nonnull(back);
    ck_assert_uint_eq(back->schema_version, 1);
    ck_assert_str_eq(back->ids->run_id, "run-a");
    ck_assert_uint_eq(back->ids->job_id, 42);
    ck_assert_uint_eq(back->ids->game_seed, 0xDEADBEEFCAFEull);
    ck_assert_uint_eq(back->ids->decision_index, 7);
    ck_assert_uint_eq(back->search->n_visits, 3);
    ck_assert_uint_eq(back->search->visits[2], 965);
    ck_assert_float_eq(back->search->q[1], 0.5f);
    ck_assert_uint_eq(back->search->chosen, 2);
    ck_assert_str_eq(back->inputs->token_type->dtype, "u8");
    ck_assert_uint_eq(back->inputs->token_type->data.len, 5);
    ck_assert_mem_eq(back->inputs->token_type->data.data, tokens, 5);
    ck_assert_ptr_null(back->outcome);
    spirefleet__label_record__free_unpacked(back, NULL);

    /* A truncated message must be refused, not half-read. */
    ck_assert_ptr_null(spirefleet__label_record__unpack(NULL, n - 3, buf));
    free(buf);
}
END_TEST

#include "test-proto.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("proto", "label", 0, NULL, NULL)
