/* label.c — the label record's format rules (docs/format.md); the value
 * targets follow the label contract (label/label.h). */
#include <math.h>
#include <string.h>

#include "shard/internal.h"

/* ---- format rules ---------------------------------------------------------- */

static size_t dtype_size(const char *dtype) {
    if (!dtype)
        return 0;
    if (strcmp(dtype, "u8") == 0)
        return 1;
    if (strcmp(dtype, "u16") == 0)
        return 2;
    if (strcmp(dtype, "i32") == 0 || strcmp(dtype, "u32") == 0 || strcmp(dtype, "f32") == 0)
        return 4;
    return 0;
}

/* Check one tensor: present, dtype `want`, rank `rank`, byte length equal to
 * the shape's product times the element size. Dimensions are capped so the
 * product cannot overflow. */
static int check_tensor(const Spirefleet__Tensor *t, const char *field, const char *want,
                        size_t rank, sf_err *err) {
    if (!t)
        return sf_err_set(err, SF_EINVAL, "%s: missing", field);
    size_t es = dtype_size(t->dtype);
    if (es == 0 || strcmp(t->dtype, want) != 0)
        return sf_err_set(err, SF_EINVAL, "%s: dtype '%.16s', expected '%s'", field,
                          t->dtype ? t->dtype : "", want);
    if (t->n_shape != rank)
        return sf_err_set(err, SF_EINVAL, "%s: rank %zu, expected %zu", field, t->n_shape, rank);
    uint64_t count = 1;
    for (size_t k = 0; k < rank; k++) {
        if (t->shape[k] > (1u << 24))
            return sf_err_set(err, SF_EINVAL, "%s: dimension %zu is %u (too large)", field, k,
                              t->shape[k]);
        count *= t->shape[k];
        if (count > SF_SHARD_MAX_RECORD_BYTES)
            return sf_err_set(err, SF_EINVAL, "%s: shape too large", field);
    }
    if ((uint64_t)t->data.len != count * es)
        return sf_err_set(err, SF_EINVAL, "%s: %zu data bytes, shape needs %llu", field,
                          t->data.len, (unsigned long long)(count * es));
    return SF_OK;
}

static float tensor_f32(const Spirefleet__Tensor *t, size_t k) {
    float v;
    uint32_t u = sf_le32(t->data.data + 4 * k);
    memcpy(&v, &u, sizeof v);
    return v;
}

static int check_floats(const float *v, size_t n, float lo, float hi, const char *field,
                        sf_err *err) {
    for (size_t k = 0; k < n; k++)
        if (!isfinite(v[k]) || v[k] < lo || v[k] > hi)
            return sf_err_set(err, SF_EINVAL, "%s[%zu] = %g outside [%g, %g]", field, k,
                              (double)v[k], (double)lo, (double)hi);
    return SF_OK;
}

static int check_inputs(const Spirefleet__Inputs *in, uint32_t *T, uint32_t *Q, sf_err *err) {
    int rc;
    if (!in)
        return sf_err_set(err, SF_EINVAL, "inputs: missing");
    if ((rc = check_tensor(in->token_type, "inputs.token_type", "u8", 1, err)) < 0 ||
        (rc = check_tensor(in->token_cat, "inputs.token_cat", "u16", 2, err)) < 0 ||
        (rc = check_tensor(in->token_cont, "inputs.token_cont", "f32", 2, err)) < 0 ||
        (rc = check_tensor(in->query, "inputs.query", "u16", 2, err)) < 0 ||
        (rc = check_tensor(in->query_cont, "inputs.query_cont", "f32", 2, err)) < 0 ||
        (rc = check_tensor(in->action_code, "inputs.action_code", "u32", 1, err)) < 0)
        return rc;
    *T = in->token_type->shape[0];
    *Q = in->query->shape[0];
    if (*T == 0)
        return sf_err_set(err, SF_EINVAL, "inputs.token_type: no tokens");
    if (*Q == 0)
        return sf_err_set(err, SF_EINVAL, "inputs.query: no legal actions");
    if (in->token_cat->shape[0] != *T || in->token_cont->shape[0] != *T)
        return sf_err_set(err, SF_EINVAL,
                          "inputs: token_cat has %u rows and token_cont %u, token_type has %u",
                          in->token_cat->shape[0], in->token_cont->shape[0], *T);
    if (in->query->shape[1] != 2)
        return sf_err_set(err, SF_EINVAL, "inputs.query: %u columns, expected 2",
                          in->query->shape[1]);
    if (in->query_cont->shape[0] != *Q || in->action_code->shape[0] != *Q)
        return sf_err_set(err, SF_EINVAL,
                          "inputs: query_cont has %u rows and action_code %u, query has %u",
                          in->query_cont->shape[0], in->action_code->shape[0], *Q);
    const uint8_t *q = in->query->data.data;
    for (uint32_t k = 0; k < 2 * *Q; k++) {
        uint32_t tok = (uint32_t)q[2 * k] | (uint32_t)q[2 * k + 1] << 8;
        if (tok >= *T)
            return sf_err_set(err, SF_EINVAL, "inputs.query[%u][%u] = %u, not a token (T = %u)",
                              k / 2, k % 2, tok, *T);
    }
    return SF_OK;
}

static int check_search(const Spirefleet__SearchResult *s, uint32_t Q, sf_err *err) {
    if (!s)
        return sf_err_set(err, SF_EINVAL, "search: missing");
    if (s->n_visits != Q || s->n_q != Q || s->n_completed_q != Q || s->n_policy != Q)
        return sf_err_set(err, SF_EINVAL,
                          "search: visits/q/completed_q/policy have %zu/%zu/%zu/%zu entries, "
                          "expected Q = %u",
                          s->n_visits, s->n_q, s->n_completed_q, s->n_policy, Q);
    if (s->chosen >= Q)
        return sf_err_set(err, SF_EINVAL, "search.chosen = %u, only %u legal actions", s->chosen,
                          Q);
    if (s->n_tree_root_values != s->trees)
        return sf_err_set(err, SF_EINVAL, "search.tree_root_values: %zu entries for %u trees",
                          s->n_tree_root_values, s->trees);
    int rc = check_floats(s->policy, s->n_policy, 0.0f, 1.0f, "search.policy", err);
    if (rc < 0)
        return rc;
    if ((rc = check_floats(s->q, s->n_q, -1e30f, 1e30f, "search.q", err)) < 0 ||
        (rc = check_floats(s->completed_q, s->n_completed_q, -1e30f, 1e30f, "search.completed_q",
                           err)) < 0 ||
        (rc = check_floats(&s->leaf_mix, 1, 0.0f, 1.0f, "search.leaf_mix", err)) < 0)
        return rc;
    return SF_OK;
}

static int check_outcome(const Spirefleet__Outcome *o, sf_err *err) {
    if (!o)
        return sf_err_set(err, SF_EINVAL,
                          "outcome: missing (records are written when the "
                          "fight ends)");
    if (o->n_value_bins != SF_VALUE_BINS)
        return sf_err_set(err, SF_EINVAL, "outcome.value_bins: %zu entries, expected %d",
                          o->n_value_bins, SF_VALUE_BINS);
    int rc = check_floats(o->value_bins, o->n_value_bins, 0.0f, 1.0f, "outcome.value_bins", err);
    if (rc < 0)
        return rc;
    double sum = 0;
    for (size_t k = 0; k < o->n_value_bins; k++)
        sum += o->value_bins[k];
    if (fabs(sum - 1.0) > 1e-4)
        return sf_err_set(err, SF_EINVAL, "outcome.value_bins: sum %.6f, expected 1", sum);
    if (o->max_hp < 1 || o->final_hp > o->max_hp)
        return sf_err_set(err, SF_EINVAL, "outcome: final_hp %u, max_hp %u", o->final_hp,
                          o->max_hp);
    if (!isfinite(o->value) || o->value < 0.0f || o->value > 1.0f)
        return sf_err_set(err, SF_EINVAL, "outcome.value = %g outside [0, 1]", (double)o->value);
    if (o->engine_limit && o->won)
        return sf_err_set(err, SF_EINVAL, "outcome: an engine-limit end that is won");
    if (o->turn_limit && o->won)
        return sf_err_set(err, SF_EINVAL, "outcome: a turn-limit end that is won");
    if (o->turn_limit && o->engine_limit)
        return sf_err_set(err, SF_EINVAL, "outcome: both an engine-limit and a turn-limit end");
    if (o->escaped && !o->won)
        return sf_err_set(err, SF_EINVAL, "outcome: an escape that is not won");
    if (o->won && o->final_hp == 0)
        return sf_err_set(err, SF_EINVAL, "outcome: a won fight with final_hp 0");
    if (o->potions_left > SF_VALUE_POTIONS_MAX)
        return sf_err_set(err, SF_EINVAL, "outcome.potions_left = %u outside 0..%d",
                          o->potions_left, SF_VALUE_POTIONS_MAX);
    if (o->monster_hp_left > o->monster_hp_pool || o->monster_hp_pool > 0xFFFF)
        return sf_err_set(err, SF_EINVAL,
                          "outcome: monster_hp_left %u above monster_hp_pool %u (the pool "
                          "holds every monster's HP)",
                          o->monster_hp_left, o->monster_hp_pool);
    /* The targets are the contract's function of the facts recorded beside
     * them: y from the facts, and the bins encoding exactly y. */
    sf_fight_facts f = {.won = o->won,
                        .escaped = o->escaped,
                        .hp = (int)o->final_hp,
                        .max_hp = (int)o->max_hp,
                        .potions_left = (int)o->potions_left,
                        .turns = o->turns > 0xFFFF ? 0xFFFF : (int)o->turns,
                        .monster_hp_left = (int)o->monster_hp_left,
                        .monster_hp_pool = (int)o->monster_hp_pool};
    double y = sf_value_score(&f);
    if (fabs((double)o->value - y) > 1e-6)
        return sf_err_set(err, SF_EINVAL,
                          "outcome.value = %.7f, but the outcome's facts score %.7f "
                          "(label/label.h)",
                          (double)o->value, y);
    float want[SF_VALUE_BINS];
    sf_value_project(y, want);
    for (int k = 0; k < SF_VALUE_BINS; k++)
        if (fabsf(o->value_bins[k] - want[k]) > 1e-5f)
            return sf_err_set(err, SF_EINVAL,
                              "outcome.value_bins[%d] = %.6f, but the projection of value %.6f "
                              "puts %.6f there",
                              k, (double)o->value_bins[k], y, (double)want[k]);
    return SF_OK;
}

static int check_forecast(const Spirefleet__Forecast *f, sf_err *err) {
    int rc;
    if (!f)
        return sf_err_set(err, SF_EINVAL, "forecast: missing");
    if ((rc = check_tensor(f->target, "forecast.target", "f32", 2, err)) < 0 ||
        (rc = check_tensor(f->mask, "forecast.mask", "u8", 1, err)) < 0)
        return rc;
    if (f->target->shape[0] != SF_FORECAST_H || f->target->shape[1] != SF_FORECAST_COLS)
        return sf_err_set(err, SF_EINVAL, "forecast.target: shape [%u, %u], expected [%d, %d]",
                          f->target->shape[0], f->target->shape[1], SF_FORECAST_H,
                          SF_FORECAST_COLS);
    if (f->mask->shape[0] != SF_FORECAST_H)
        return sf_err_set(err, SF_EINVAL, "forecast.mask: shape [%u], expected [%d]",
                          f->mask->shape[0], SF_FORECAST_H);
    for (int h = 0; h < SF_FORECAST_H; h++) {
        if (f->mask->data.data[h] > 1)
            return sf_err_set(err, SF_EINVAL, "forecast.mask[%d] = %u, expected 0 or 1", h,
                              f->mask->data.data[h]);
        for (int c = 0; c < SF_FORECAST_COLS; c++)
            if (!isfinite(tensor_f32(f->target, (size_t)h * SF_FORECAST_COLS + c)))
                return sf_err_set(err, SF_EINVAL, "forecast.target[%d][%d] is not finite", h, c);
    }
    return SF_OK;
}

static int check_teacher(const Spirefleet__TeacherForecast *t, sf_err *err) {
    int rc;
    if (!t)
        return SF_OK; /* optional */
    if ((rc = check_tensor(t->mean, "teacher.mean", "f32", 2, err)) < 0 ||
        (rc = check_tensor(t->coverage, "teacher.coverage", "f32", 1, err)) < 0)
        return rc;
    if (t->mean->shape[0] != SF_FORECAST_H || t->mean->shape[1] != SF_FORECAST_COLS ||
        t->coverage->shape[0] != SF_FORECAST_H)
        return sf_err_set(err, SF_EINVAL,
                          "teacher: mean [%u, %u] / coverage [%u], expected "
                          "[%d, %d] / [%d]",
                          t->mean->shape[0], t->mean->shape[1], t->coverage->shape[0],
                          SF_FORECAST_H, SF_FORECAST_COLS, SF_FORECAST_H);
    return SF_OK;
}

int sf_shard_record_check(const Spirefleet__LabelRecord *rec, sf_err *err) {
    if (!rec)
        return sf_err_set(err, SF_EINVAL, "record: NULL");
    if (rec->schema_version != SF_LABEL_SCHEMA_VERSION)
        return sf_err_set(err, SF_EVERSION, "schema_version %u, this reader knows %d (%s)",
                          rec->schema_version, SF_LABEL_SCHEMA_VERSION,
                          sf_label_schema_note(rec->schema_version));
    if (!rec->ids)
        return sf_err_set(err, SF_EINVAL, "ids: missing");
    char field[128];
    if (!sf_pb_strings_utf8(&rec->base, field, sizeof field))
        return sf_err_set(err, SF_EINVAL, "%s: not valid UTF-8", field);
    uint32_t T = 0, Q = 0;
    int rc;
    if ((rc = check_inputs(rec->inputs, &T, &Q, err)) < 0 ||
        (rc = check_search(rec->search, Q, err)) < 0 ||
        (rc = check_outcome(rec->outcome, err)) < 0 ||
        (rc = check_forecast(rec->forecast, err)) < 0 ||
        (rc = check_teacher(rec->teacher, err)) < 0)
        return rc;
    return SF_OK;
}

/* The format rules on a decoded record, the error naming `index`. */
static int check_decoded(const Spirefleet__LabelRecord *rec, uint64_t index, sf_err *err) {
    int rc = sf_shard_record_check(rec, err);
    return rc < 0 ? sf_err_prefix(err, "record %llu", (unsigned long long)index) : SF_OK;
}

int sf_record_decode(const uint8_t *raw, size_t len, uint64_t index, ProtobufCAllocator *alloc,
                     Spirefleet__LabelRecord **out, sf_err *err) {
    *out = NULL;
    Spirefleet__LabelRecord *rec = spirefleet__label_record__unpack(alloc, len, raw);
    if (!rec)
        return sf_err_set(err, SF_EFORMAT, "record %llu: protobuf LabelRecord does not decode",
                          (unsigned long long)index);
    int rc = check_decoded(rec, index, err);
    if (rc < 0) {
        spirefleet__label_record__free_unpacked(rec, alloc);
        return rc;
    }
    *out = rec;
    return SF_OK;
}

int sf_record_decode_borrowed(const uint8_t *raw, size_t len, uint64_t index, sf_arena *arena,
                              Spirefleet__LabelRecord **out, sf_err *err) {
    *out = NULL;
    ProtobufCMessage *m;
    int rc = sf_pb_unpack_borrowed(&spirefleet__label_record__descriptor, raw, len, arena, &m);
    if (rc == SF_ENOMEM)
        return sf_err_set(err, SF_ENOMEM, "record %llu: out of memory", (unsigned long long)index);
    if (rc != SF_OK) /* outside the borrowing decoder's subset: protobuf-c decides */
        return sf_record_decode(raw, len, index, &arena->pb, out, err);
    if ((rc = check_decoded((Spirefleet__LabelRecord *)m, index, err)) < 0)
        return rc;
    *out = (Spirefleet__LabelRecord *)m;
    return SF_OK;
}

/* ---- the content digest's entries ----------------------------------------- */

void sf_shard_digest_add(sf_sha256_ctx *sha, const uint8_t *p, size_t n) {
    uint8_t lenle[8];
    sf_put_le64(lenle, n);
    sf_sha256_update(sha, lenle, sizeof lenle);
    sf_sha256_update(sha, p, n);
}

int sf_shard_hash_gate_pair(sf_sha256_ctx *sha, const Spirefleet__GatePair *pair, sf_buf *scratch,
                            sf_err *err) {
    size_t n = spirefleet__gate_pair__get_packed_size(pair);
    scratch->len = 0;
    if (sf_buf_reserve(scratch, n, NULL) < 0)
        return sf_err_set(err, SF_ENOMEM, "gate pair: out of memory");
    scratch->len = spirefleet__gate_pair__pack(pair, scratch->p);
    sf_shard_digest_add(sha, scratch->p, scratch->len);
    return SF_OK;
}
