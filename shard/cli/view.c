/* view.c — `sf-shard cat` and `sf-shard stat`, and protobuf -> JSON. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/pbjson.h"
#include "shard/cli/cli.h"
#include "shard/internal.h"

/* ---- protobuf -> JSON, driven by the descriptors -------------------------- */

/* Tensor data as a flat array of numbers, by dtype (little-endian). */
static json_t *tensor_json(const Spirefleet__Tensor *t) {
    json_t *o = json_object(), *shape = json_array(), *data = json_array();
    json_object_set_new(o, "dtype", json_string(t->dtype));
    for (size_t k = 0; k < t->n_shape; k++)
        json_array_append_new(shape, json_integer(t->shape[k]));
    json_object_set_new(o, "shape", shape);
    const uint8_t *p = t->data.data;
    size_t n = t->data.len;
    if (strcmp(t->dtype, "u8") == 0) {
        for (size_t k = 0; k < n; k++)
            json_array_append_new(data, json_integer(p[k]));
    } else if (strcmp(t->dtype, "u16") == 0) {
        for (size_t k = 0; k + 2 <= n; k += 2)
            json_array_append_new(data, json_integer(p[k] | p[k + 1] << 8));
    } else if (strcmp(t->dtype, "u32") == 0) {
        for (size_t k = 0; k + 4 <= n; k += 4)
            json_array_append_new(data, json_integer(sf_le32(p + k)));
    } else if (strcmp(t->dtype, "i32") == 0) {
        for (size_t k = 0; k + 4 <= n; k += 4)
            json_array_append_new(data, json_integer((int32_t)sf_le32(p + k)));
    } else if (strcmp(t->dtype, "f32") == 0) {
        for (size_t k = 0; k + 4 <= n; k += 4) {
            uint32_t u = sf_le32(p + k);
            float f;
            memcpy(&f, &u, sizeof f);
            json_array_append_new(data, json_real(f));
        }
    }
    json_object_set_new(o, "data", data);
    return o;
}

/* sf-shard's special message: a Tensor as its values (pbjson's hook). */
static json_t *special(const ProtobufCMessage *m, void *ctx) {
    (void)ctx;
    return m->descriptor == &spirefleet__tensor__descriptor
               ? tensor_json((const Spirefleet__Tensor *)m)
               : NULL;
}

json_t *sf_cli_message_json(const ProtobufCMessage *m) {
    static const sf_pbjson_opts form = {.int64_strings = 1, .special = special};
    return sf_pbjson_message(m, &form);
}

/* ---- cat ------------------------------------------------------------------- */

static const char cat_help[] =
    "usage: sf-shard cat SHARD [--index I] [--json]\n"
    "\n"
    "Print records, one line each, in index order (or only record I).\n"
    "Default: a summary line per record. --json: one JSON object per line with\n"
    "every field ({\"index\": I, \"record\": {...}}); 64-bit integers are decimal\n"
    "strings, Tensors are {\"dtype\", \"shape\", \"data\": [flat values]}.\n"
    "Exit code 0, or 1 naming the record when one is damaged, 3 when SHARD cannot\n"
    "be read.\n";

static void summary_line(uint64_t i, const Spirefleet__LabelRecord *r) {
    uint64_t visits = 0;
    for (size_t k = 0; k < r->search->n_visits; k++)
        visits += r->search->visits[k];
    printf("#%" PRIu64 " seed=%" PRIu64 " fight=%u ply=%u turn=%u enc=%s T=%u Q=%u chosen=%u "
           "visits=%" PRIu64 " root=%.4f/%.4f won=%d hp=%u/%u y=%.4f%s\n",
           i, r->ids->game_seed, r->ids->fight_index, r->ids->decision_index, r->ids->turn,
           r->ids->encounter[0] ? r->ids->encounter : "-", r->inputs->token_type->shape[0],
           r->inputs->query->shape[0], r->search->chosen, visits, (double)r->search->root_raw_value,
           (double)r->search->root_search_value, r->outcome->won, r->outcome->final_hp,
           r->outcome->max_hp, (double)r->outcome->value,
           r->outcome->engine_limit ? " engine-limit"
           : r->outcome->turn_limit ? " turn-limit"
                                    : "");
}

static int print_record(uint64_t i, const Spirefleet__LabelRecord *rec, int as_json) {
    if (!as_json) {
        summary_line(i, rec);
        return SF_OK;
    }
    json_t *o = json_object();
    char index[24]; /* a decimal string, as every 64-bit integer here */
    snprintf(index, sizeof index, "%" PRIu64, i);
    json_object_set_new(o, "index", json_string(index));
    json_object_set_new(o, "record", sf_cli_message_json(&rec->base));
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(o);
    if (!s)
        return SF_ENOMEM;
    puts(s);
    free(s);
    return SF_OK;
}

int sf_cli_cat(int argc, char **argv) {
    int rc;
    int as_json = 0, have_index = 0;
    uint64_t index = 0;
    const char *path = NULL;
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--index") == 0) {
            if (k + 1 >= argc || sf_cli_parse_u64(argv[k + 1], &index) != 0)
                return sf_cli_usage_error("cat", "--index needs a record index (0, 1, ...)");
            have_index = 1;
            k++;
        } else if ((rc = sf_cli_common_arg("cat", cat_help, argv[k], &as_json, &path)) >= 0) {
            return rc;
        }
    }
    sf_shard_reader *r = NULL;
    if ((rc = sf_cli_open_shard("cat", path, &r)) != 0)
        return rc;
    sf_err err = {0};
    uint64_t lo = 0, hi = sf_shard_reader_count(r);
    if (have_index) {
        if (index >= hi) {
            fprintf(stderr,
                    "sf-shard cat: %s: record %" PRIu64 " out of range (%" PRIu64 " records)\n",
                    path, index, hi);
            sf_shard_reader_close(r);
            return SF_EXIT_USAGE;
        }
        lo = index;
        hi = index + 1;
    }
    for (uint64_t i = lo; i < hi && rc == SF_OK; i++) {
        const Spirefleet__LabelRecord *rec;
        rc = sf_shard_reader_get(r, i, &rec, &err);
        if (rc == SF_OK && (rc = print_record(i, rec, as_json)) < 0)
            sf_err_set(&err, rc, "out of memory");
    }
    sf_shard_reader_close(r);
    return rc < 0 ? sf_cli_fail(rc, err.msg) : SF_EXIT_OK;
}

/* ---- stat ------------------------------------------------------------------------ */

static const char stat_help[] =
    "usage: sf-shard stat SHARD [--json]\n"
    "\n"
    "Summarise a shard: manifest (run, job, seeds, versions, model, digest),\n"
    "sizes (uncompressed, compressed, file; compression ratio and file/payload),\n"
    "and the labels read from every record: legal actions and tokens per\n"
    "decision, root visits, simulations, policy entropy (nats), searched and\n"
    "won fractions, fights ended at an engine limit or the turn cap, fallbacks,\n"
    "the value-target histogram (mean mass per bin, with each bin's support z\n"
    "from the label contract: bins 0..4 graded losses, 5..20 wins) and forecast\n"
    "coverage per horizon. --json: one JSON object.\n"
    "Exit code 0, 1 when a record is damaged, 3 when SHARD cannot be read.\n";

typedef struct label_stats {
    uint64_t n, searched, won, teacher, fallbacks, engine_limit, turn_limit;
    double q_sum, t_sum, visits_sum, sims_sum, entropy_sum;
    uint32_t q_min, q_max, t_min, t_max;
    double bins[SF_VALUE_BINS];
    uint64_t covered[SF_FORECAST_H];
} label_stats;

static int accumulate(void *ctx, uint64_t index, const Spirefleet__LabelRecord *r, sf_err *err) {
    (void)index;
    (void)err;
    label_stats *s = ctx;
    uint32_t Q = r->inputs->query->shape[0], T = r->inputs->token_type->shape[0];
    if (s->n == 0 || Q < s->q_min)
        s->q_min = Q;
    if (Q > s->q_max)
        s->q_max = Q;
    if (s->n == 0 || T < s->t_min)
        s->t_min = T;
    if (T > s->t_max)
        s->t_max = T;
    s->n++;
    s->q_sum += Q;
    s->t_sum += T;
    uint64_t visits = 0;
    double h = 0;
    for (uint32_t k = 0; k < Q; k++) {
        visits += r->search->visits[k];
        double p = r->search->policy[k];
        if (p > 0)
            h -= p * log(p);
    }
    s->visits_sum += (double)visits;
    s->sims_sum += r->search->simulations;
    s->entropy_sum += h;
    s->searched += r->search->searched != 0;
    s->fallbacks += r->search->fallbacks;
    s->won += r->outcome->won != 0;
    s->engine_limit += r->outcome->engine_limit != 0;
    s->turn_limit += r->outcome->turn_limit != 0;
    s->teacher += r->teacher != NULL;
    for (int b = 0; b < SF_VALUE_BINS; b++)
        s->bins[b] += r->outcome->value_bins[b];
    for (int k = 0; k < SF_FORECAST_H; k++)
        s->covered[k] += r->forecast->mask->data.data[k] != 0;
    return 0;
}

static json_t *stats_json(const char *path, sf_shard_reader *r, const label_stats *s) {
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    double n = s->n ? (double)s->n : 1;
    json_t *o = json_object(), *lab = json_object(), *bins = json_array(), *cov = json_array();
    json_t *supports = json_array();
    json_object_set_new(o, "shard", json_string(path));
    json_object_set_new(o, "manifest", sf_cli_message_json(&m->base));
    json_object_set_new(o, "file_bytes", json_integer((json_int_t)sf_shard_reader_file_bytes(r)));
    json_object_set_new(o, "compression_ratio",
                        json_real(m->payload_bytes ? (double)m->raw_bytes / m->payload_bytes : 0));
    json_object_set_new(
        o, "file_over_payload",
        json_real(m->payload_bytes ? (double)sf_shard_reader_file_bytes(r) / m->payload_bytes : 0));
    json_object_set_new(lab, "records", json_integer((json_int_t)s->n));
    json_object_set_new(lab, "mean_legal_actions", json_real(s->q_sum / n));
    json_object_set_new(lab, "mean_tokens", json_real(s->t_sum / n));
    json_object_set_new(lab, "mean_visits", json_real(s->visits_sum / n));
    json_object_set_new(lab, "mean_simulations", json_real(s->sims_sum / n));
    json_object_set_new(lab, "mean_policy_entropy", json_real(s->entropy_sum / n));
    json_object_set_new(lab, "searched_fraction", json_real((double)s->searched / n));
    json_object_set_new(lab, "won_fraction", json_real((double)s->won / n));
    json_object_set_new(lab, "engine_limit_records", json_integer((json_int_t)s->engine_limit));
    json_object_set_new(lab, "turn_limit_records", json_integer((json_int_t)s->turn_limit));
    json_object_set_new(lab, "fallbacks", json_integer((json_int_t)s->fallbacks));
    json_object_set_new(lab, "teacher_records", json_integer((json_int_t)s->teacher));
    for (int b = 0; b < SF_VALUE_BINS; b++) {
        json_array_append_new(bins, json_real(s->bins[b] / n));
        json_array_append_new(supports, json_real(sf_value_support(b)));
    }
    json_object_set_new(lab, "value_histogram", bins);
    json_object_set_new(lab, "value_supports", supports);
    for (int k = 0; k < SF_FORECAST_H; k++)
        json_array_append_new(cov, json_real((double)s->covered[k] / n));
    json_object_set_new(lab, "forecast_coverage", cov);
    json_object_set_new(o, "labels", lab);
    return o;
}

static void print_stats(const char *path, sf_shard_reader *r, const label_stats *s) {
    const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
    double n = s->n ? (double)s->n : 1;
    char digest[65], when[32] = "-";
    sf_hex(m->content_digest.data, 32, digest);
    time_t t = (time_t)m->created_unix;
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    uint64_t fb = sf_shard_reader_file_bytes(r);
    printf("shard       %s (sealed; format %u, schema %u)\n", path, m->format_version,
           m->schema_version);
    printf("run/job     %s / %" PRIu64 "   seeds %" PRIu64 "..%" PRIu64 "\n", m->run_id, m->job_id,
           m->seed_first, m->seed_last);
    printf("written     by %s at %s\n", m->worker_id[0] ? m->worker_id : "-", when);
    /* provenance comes from whoever wrote the shard: printable only */
    char key[40], host[80], build[80];
    sf_str_printable(key, sizeof key, m->worker_key_id);
    sf_str_printable(host, sizeof host, m->worker_host);
    sf_str_printable(build, sizeof build, m->build_id);
    printf("provenance  key %s, host %s, build %s\n", key[0] ? key : "-", host[0] ? host : "-",
           build[0] ? build : "-");
    printf("versions    engine %u, tokenizer %u\n", m->engine_version, m->tokenizer_version);
    printf("model       %s\nconfig      %s\ndigest      %s\n", m->model_sha256, m->config_digest,
           digest);
    printf("records     %" PRIu64 " in %" PRIu64 " blocks\n", m->record_count, m->block_count);
    printf("bytes       %" PRIu64 " raw, %" PRIu64
           " compressed (zstd %d, ratio %.2f), file %" PRIu64 " (%.3f x compressed)\n",
           m->raw_bytes, m->payload_bytes, m->compression_level,
           m->payload_bytes ? (double)m->raw_bytes / m->payload_bytes : 0, fb,
           m->payload_bytes ? (double)fb / m->payload_bytes : 0);
    printf("labels\n");
    printf("  legal actions   mean %.2f (min %u, max %u)\n", s->q_sum / n, s->q_min, s->q_max);
    printf("  tokens          mean %.1f (min %u, max %u)\n", s->t_sum / n, s->t_min, s->t_max);
    printf("  root visits     mean %.1f   simulations mean %.1f\n", s->visits_sum / n,
           s->sims_sum / n);
    printf("  policy entropy  mean %.3f nats\n", s->entropy_sum / n);
    printf("  searched        %.1f%%   won %.1f%%   fallbacks %" PRIu64 "   teacher %" PRIu64 "\n",
           100.0 * s->searched / n, 100.0 * s->won / n, s->fallbacks, s->teacher);
    printf("  ended at        engine limit %" PRIu64 ", turn cap %" PRIu64 " (records)\n",
           s->engine_limit, s->turn_limit);
    printf("  value target (mean mass per bin; bins 0..%d graded losses, %d..%d wins)\n",
           SF_VALUE_LOSS_BINS - 1, SF_VALUE_LOSS_BINS, SF_VALUE_BINS - 1);
    for (int b = 0; b < SF_VALUE_BINS; b++) {
        double v = s->bins[b] / n;
        int bar = (int)lround(v * 50);
        printf("    %2d  z=%.3f  %.4f  ", b, sf_value_support(b), v);
        for (int k = 0; k < bar; k++)
            putchar('#');
        putchar('\n');
    }
    printf("  forecast coverage  ");
    for (int k = 0; k < SF_FORECAST_H; k++)
        printf("h=%d %.1f%%  ", k + 1, 100.0 * s->covered[k] / n);
    putchar('\n');
    if (m->stats) {
        const Spirefleet__JobStats *js = m->stats;
        printf("job stats   fights %" PRIu64 " (won %" PRIu64 "), decisions %" PRIu64
               ", simulations %" PRIu64 ", fallbacks %" PRIu64 ", %.1f s\n",
               js->fights, js->fights_won, js->decisions, js->simulations, js->fallbacks,
               js->wall_seconds);
        for (size_t k = 0; k < js->n_fallback_by_kind; k++)
            printf("  fallback %-24s %" PRIu64 "\n", js->fallback_by_kind[k]->name,
                   js->fallback_by_kind[k]->value);
        for (size_t k = 0; k < js->n_counters; k++)
            printf("  %-33s %" PRIu64 "\n", js->counters[k]->name, js->counters[k]->value);
    }
}

int sf_cli_stat(int argc, char **argv) {
    int rc;
    int as_json = 0;
    const char *path = NULL;
    for (int k = 1; k < argc; k++)
        if ((rc = sf_cli_common_arg("stat", stat_help, argv[k], &as_json, &path)) >= 0)
            return rc;
    sf_shard_reader *r = NULL;
    if ((rc = sf_cli_open_shard("stat", path, &r)) != 0)
        return rc;
    sf_err err = {0};
    label_stats s = {0};
    rc = sf_shard_reader_foreach(r, accumulate, &s, &err);
    if (rc == SF_OK) {
        if (as_json) {
            json_t *o = stats_json(path, r, &s);
            char *txt = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
            json_decref(o);
            if (txt)
                puts(txt);
            free(txt);
        } else {
            print_stats(path, r, &s);
        }
    }
    sf_shard_reader_close(r);
    return rc < 0 ? sf_cli_fail(rc, err.msg) : SF_EXIT_OK;
}
