/* shard_fixture.c — write test shards with the C writer, and what they hold.
 *
 *   shard-fixture [--format=1] OUTDIR
 *   shard-fixture [--format=1] OUTDIR N   (only a.shard, N records, no
 *                                          expected.jsonl: for benchmarks)
 *
 * --format=1 writes shard format 1 (a zstd frame per record, as shards
 * written before format 2 hold them) instead of the writer's default.
 *
 * Writes OUTDIR/a.shard (300 typical synthetic records, job 7),
 * OUTDIR/b.shard (120 dense records, job 8, zstd level 9, teacher block on
 * every 3rd record, two of its six fights ending as engine-limit losses) and OUTDIR/expected.jsonl:
 * per shard one line
 * {"shard", "digest", "records", "job_id", "seed_first", "seed_last"} and
 * then one line {"shard", "index", "record"} per record, the record as the
 * generator built it (in memory, before the writer saw it) in the JSON
 * layout of `sf-shard cat --json`. The Python reader test compares every
 * value it reads from the shards with these lines. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "label_synth.h"
#include "shard/cli/cli.h"

static int write_one(const char *dir, const char *name, const synth_params *p, uint64_t n,
                     const sf_shard_writer_opts *opts, FILE *out, int expect) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sf_shard_info info;
    synth_info(p, &info);
    sf_shard_writer *w = NULL;
    sf_err err = {0};
    if (sf_shard_writer_open(path, &info, opts, &w, &err) < 0) {
        fprintf(stderr, "shard-fixture: %s\n", err.msg);
        return 1;
    }
    synth_record *s = malloc(sizeof *s);
    if (!s)
        return 1;
    json_t *lines = json_array();
    uint64_t smin = UINT64_MAX, smax = 0, limited = 0, capped = 0, last_fight = UINT64_MAX;
    for (uint64_t i = 0; i < n; i++) {
        synth_fill(s, p, i);
        uint64_t fight = s->ids.game_seed * 12 + s->ids.fight_index;
        if (s->outcome.engine_limit && fight != last_fight)
            limited++;
        if (s->outcome.turn_limit && fight != last_fight)
            capped++;
        last_fight = fight;
        if (sf_shard_writer_append(w, &s->rec, &err) < 0) {
            fprintf(stderr, "shard-fixture: %s\n", err.msg);
            free(s);
            sf_shard_writer_abort(w);
            return 1;
        }
        smin = s->ids.game_seed < smin ? s->ids.game_seed : smin;
        smax = s->ids.game_seed > smax ? s->ids.game_seed : smax;
        if (!expect)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "shard", json_string(name));
        json_object_set_new(o, "index", json_integer((json_int_t)i));
        json_object_set_new(o, "record", sf_cli_message_json(&s->rec.base));
        json_array_append_new(lines, o);
    }
    free(s);
    Spirefleet__JobStats stats = SPIREFLEET__JOB_STATS__INIT;
    Spirefleet__Counter c = SPIREFLEET__COUNTER__INIT, *cs[1] = {&c};
    Spirefleet__Counter lc = SPIREFLEET__COUNTER__INIT, tc = SPIREFLEET__COUNTER__INIT;
    Spirefleet__Counter *lcs[2] = {&lc, &tc};
    lc.name = "engine_limit_fights";
    lc.value = limited;
    tc.name = "turn_limit_fights";
    tc.value = capped;
    stats.n_counters = 2;
    stats.counters = lcs;
    stats.decisions = n;
    stats.fallbacks = 1;
    c.name = "eval_timeout";
    c.value = 1;
    stats.n_fallback_by_kind = 1;
    stats.fallback_by_kind = cs;
    uint8_t digest[32];
    if (sf_shard_writer_seal(w, &stats, digest, &err) < 0) {
        fprintf(stderr, "shard-fixture: %s\n", err.msg);
        json_decref(lines);
        return 1;
    }
    char hex[65];
    sf_hex(digest, 32, hex);
    fprintf(out,
            "{\"shard\": \"%s\", \"digest\": \"%s\", \"records\": %" PRIu64 ", \"job_id\": %" PRIu64
            ", \"seed_first\": %" PRIu64 ", \"seed_last\": %" PRIu64 "}\n",
            name, hex, n, p->job_id, n ? smin : 0, n ? smax : 0);
    size_t k;
    json_t *o;
    json_array_foreach(lines, k, o) {
        char *txt = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
        if (!txt)
            return 1;
        fprintf(out, "%s\n", txt);
        free(txt);
    }
    json_decref(lines);
    return 0;
}

int main(int argc, char **argv) {
    sf_shard_writer_opts ao = {0};
    if (argc > 1 && strcmp(argv[1], "--format=1") == 0) {
        ao.format_version = 1;
        argv++;
        argc--;
    }
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: shard-fixture [--format=1] OUTDIR [N]\n");
        return 2;
    }
    synth_params a;
    synth_params_default(&a);
    if (argc == 3) {
        FILE *null = fopen("/dev/null", "w");
        uint64_t n = strtoull(argv[2], NULL, 10);
        int rc = !null || n == 0 || write_one(argv[1], "a.shard", &a, n, &ao, null, 0);
        if (null)
            fclose(null);
        return rc;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/expected.jsonl", argv[1]);
    FILE *out = fopen(path, "w");
    if (!out) {
        perror(path);
        return 1;
    }
    synth_params b = a;
    b.job_id = 8;
    b.seed_base = 50000;
    b.dense = 1;
    b.teacher_every = 3;
    b.engine_limit_every = 5;
    b.turn_limit_every = 3;
    sf_shard_writer_opts bo = {
        .zstd_level = 9, .block_bytes = 32 << 10, .format_version = ao.format_version};
    int rc = write_one(argv[1], "a.shard", &a, 300, &ao, out, 1) ||
             write_one(argv[1], "b.shard", &b, 120, &bo, out, 1);
    if (fclose(out) != 0)
        rc = 1;
    return rc;
}
