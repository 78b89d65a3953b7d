/* export.c — `sf-shard export SHARD --npz OUT`: the records as numpy arrays.
 *
 * Variable-length parts (tokens, queries, trees) are concatenated over all
 * records with an offsets array of N+1 entries (CSR layout): record i's
 * tokens are token_type[token_offsets[i]:token_offsets[i+1]]. docs/format.md
 * lists every array. Entries are stored uncompressed (numpy reads them
 * without inflating); libzip writes the archive to a temporary file and
 * renames it into place when it closes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>

#include "shard/cli/cli.h"
#include "shard/internal.h"

static const char export_help[] =
    "usage: sf-shard export SHARD --npz OUT [--include-quarantined]\n"
    "\n"
    "Write every record of SHARD as numpy arrays into OUT (a .npz, read with\n"
    "numpy.load). Per-record scalars have shape [N]; tokens, queries and tree\n"
    "values are concatenated with *_offsets arrays of N+1 int64 entries.\n"
    "docs/format.md lists the arrays. Exit code 0, 1 naming the record when one\n"
    "is damaged or the shapes differ between records, 3 on I/O errors.\n"
    "A shard its directory's QUARANTINE list names is not exported (exit 1)\n"
    "unless --include-quarantined.\n";

enum { ARR_MAX = 48 };

typedef struct array {
    const char *name;
    const char *descr; /* numpy dtype: "|u1", "<u2", "<u4", "<f4", "<i8", "<u8" */
    size_t esize;
    int rank;         /* 1 or more; dims after the first are fixed */
    uint64_t dims[3]; /* dims[0] is the row count, filled at the end */
    sf_buf data;
} array;

typedef struct exporter {
    array a[ARR_MAX];
    int n;
    uint64_t records, tokens, queries, trees;
    uint32_t ncat, ncont, nqcont; /* fixed by the first record */
    const char *path;
} exporter;

static array *arr(exporter *x, const char *name, const char *descr, size_t esize, int rank,
                  uint64_t d1, uint64_t d2) {
    for (int k = 0; k < x->n; k++)
        if (strcmp(x->a[k].name, name) == 0)
            return &x->a[k];
    array *a = &x->a[x->n++];
    memset(a, 0, sizeof *a);
    a->name = name;
    a->descr = descr;
    a->esize = esize;
    a->rank = rank;
    a->dims[1] = d1;
    a->dims[2] = d2;
    return a;
}

static int put(exporter *x, const char *name, const char *descr, size_t esize, int rank,
               uint64_t d1, uint64_t d2, const void *p, size_t bytes) {
    return sf_buf_append(&arr(x, name, descr, esize, rank, d1, d2)->data, p, bytes, NULL);
}

#define PUT_SCALAR(x, name, descr, type, value)                                       \
    do {                                                                              \
        type v_ = (type)(value);                                                      \
        if ((rc = put((x), (name), (descr), sizeof v_, 1, 0, 0, &v_, sizeof v_)) < 0) \
            return rc;                                                                \
    } while (0)

static int put_tensor(exporter *x, const char *name, const char *descr, size_t esize, int rank,
                      uint64_t d1, uint64_t d2, const Spirefleet__Tensor *t) {
    return put(x, name, descr, esize, rank, d1, d2, t->data.data, t->data.len);
}

static int add_record(void *ctx, uint64_t i, const Spirefleet__LabelRecord *r, sf_err *err) {
    exporter *x = ctx;
    const Spirefleet__Inputs *in = r->inputs;
    uint32_t T = in->token_type->shape[0], Q = in->query->shape[0];
    if (i == 0) {
        x->ncat = in->token_cat->shape[1];
        x->ncont = in->token_cont->shape[1];
        x->nqcont = in->query_cont->shape[1];
    } else if (in->token_cat->shape[1] != x->ncat || in->token_cont->shape[1] != x->ncont ||
               in->query_cont->shape[1] != x->nqcont) {
        return sf_err_set(err, SF_EFORMAT,
                          "%s: record %" PRIu64 ": feature widths %u/%u/%u differ from record "
                          "0's %u/%u/%u; cannot stack them",
                          x->path, i, in->token_cat->shape[1], in->token_cont->shape[1],
                          in->query_cont->shape[1], x->ncat, x->ncont, x->nqcont);
    }
    int rc;
    const Spirefleet__LabelIds *id = r->ids;
    if (i == 0) {
        PUT_SCALAR(x, "token_offsets", "<i8", int64_t, 0);
        PUT_SCALAR(x, "query_offsets", "<i8", int64_t, 0);
        PUT_SCALAR(x, "tree_offsets", "<i8", int64_t, 0);
    }
    x->tokens += T;
    x->queries += Q;
    x->trees += r->search->n_tree_root_values;
    PUT_SCALAR(x, "token_offsets", "<i8", int64_t, x->tokens);
    PUT_SCALAR(x, "query_offsets", "<i8", int64_t, x->queries);
    PUT_SCALAR(x, "tree_offsets", "<i8", int64_t, x->trees);
    PUT_SCALAR(x, "game_seed", "<u8", uint64_t, id->game_seed);
    PUT_SCALAR(x, "fight_index", "<u4", uint32_t, id->fight_index);
    PUT_SCALAR(x, "decision_index", "<u4", uint32_t, id->decision_index);
    PUT_SCALAR(x, "turn", "<u4", uint32_t, id->turn);
    PUT_SCALAR(x, "encounter_id", "<u4", uint32_t, id->encounter_id);
    PUT_SCALAR(x, "ascension", "<u4", uint32_t, id->ascension);

    if ((rc = put_tensor(x, "token_type", "|u1", 1, 1, 0, 0, in->token_type)) < 0 ||
        (rc = put_tensor(x, "token_cat", "<u2", 2, 2, x->ncat, 0, in->token_cat)) < 0 ||
        (rc = put_tensor(x, "token_cont", "<f4", 4, 2, x->ncont, 0, in->token_cont)) < 0 ||
        (rc = put_tensor(x, "query", "<u2", 2, 2, 2, 0, in->query)) < 0 ||
        (rc = put_tensor(x, "query_cont", "<f4", 4, 2, x->nqcont, 0, in->query_cont)) < 0 ||
        (rc = put_tensor(x, "action_code", "<u4", 4, 1, 0, 0, in->action_code)) < 0)
        return rc;

    const Spirefleet__SearchResult *s = r->search;
    if ((rc = put(x, "visits", "<u4", 4, 1, 0, 0, s->visits, 4 * s->n_visits)) < 0 ||
        (rc = put(x, "q", "<f4", 4, 1, 0, 0, s->q, 4 * s->n_q)) < 0 ||
        (rc = put(x, "completed_q", "<f4", 4, 1, 0, 0, s->completed_q, 4 * s->n_completed_q)) < 0 ||
        (rc = put(x, "policy", "<f4", 4, 1, 0, 0, s->policy, 4 * s->n_policy)) < 0 ||
        (rc = put(x, "tree_root_values", "<f4", 4, 1, 0, 0, s->tree_root_values,
                  4 * s->n_tree_root_values)) < 0)
        return rc;
    PUT_SCALAR(x, "chosen", "<u4", uint32_t, s->chosen);
    PUT_SCALAR(x, "root_raw_value", "<f4", float, s->root_raw_value);
    PUT_SCALAR(x, "root_search_value", "<f4", float, s->root_search_value);
    PUT_SCALAR(x, "rollouts_cut_off", "<u4", uint32_t, s->rollouts_cut_off);
    PUT_SCALAR(x, "leaf_mix", "<f4", float, s->leaf_mix);
    PUT_SCALAR(x, "simulations", "<u4", uint32_t, s->simulations);
    PUT_SCALAR(x, "trees", "<u4", uint32_t, s->trees);
    PUT_SCALAR(x, "searched", "|u1", uint8_t, s->searched);
    PUT_SCALAR(x, "fallbacks", "<u4", uint32_t, s->fallbacks);

    const Spirefleet__Outcome *o = r->outcome;
    PUT_SCALAR(x, "won", "|u1", uint8_t, o->won);
    PUT_SCALAR(x, "final_hp", "<u4", uint32_t, o->final_hp);
    PUT_SCALAR(x, "max_hp", "<u4", uint32_t, o->max_hp);
    PUT_SCALAR(x, "turns", "<u4", uint32_t, o->turns);
    PUT_SCALAR(x, "potions_used", "<u4", uint32_t, o->potions_used);
    PUT_SCALAR(x, "potions_left", "<u4", uint32_t, o->potions_left);
    PUT_SCALAR(x, "monster_hp_left", "<u4", uint32_t, o->monster_hp_left);
    PUT_SCALAR(x, "monster_hp_pool", "<u4", uint32_t, o->monster_hp_pool);
    PUT_SCALAR(x, "engine_limit", "|u1", uint8_t, o->engine_limit);
    PUT_SCALAR(x, "turn_limit", "|u1", uint8_t, o->turn_limit);
    PUT_SCALAR(x, "value", "<f4", float, o->value);
    if ((rc = put(x, "value_bins", "<f4", 4, 2, SF_VALUE_BINS, 0, o->value_bins,
                  4 * SF_VALUE_BINS)) < 0 ||
        (rc = put_tensor(x, "forecast", "<f4", 4, 3, SF_FORECAST_H, SF_FORECAST_COLS,
                         r->forecast->target)) < 0 ||
        (rc = put_tensor(x, "forecast_mask", "|u1", 1, 2, SF_FORECAST_H, 0, r->forecast->mask)) < 0)
        return rc;

    /* The teacher block is optional: zeros and rollouts = 0 where absent. */
    static const uint8_t zeros[4 * SF_FORECAST_H * SF_FORECAST_COLS];
    const Spirefleet__TeacherForecast *t = r->teacher;
    PUT_SCALAR(x, "teacher_rollouts", "<u4", uint32_t, t ? t->rollouts : 0);
    if ((rc = put(x, "teacher_mean", "<f4", 4, 3, SF_FORECAST_H, SF_FORECAST_COLS,
                  t ? t->mean->data.data : zeros, sizeof zeros)) < 0 ||
        (rc = put(x, "teacher_coverage", "<f4", 4, 2, SF_FORECAST_H, 0,
                  t ? t->coverage->data.data : zeros, 4 * SF_FORECAST_H)) < 0)
        return rc;
    x->records++;
    return SF_OK;
}

/* The .npy v1.0 header: magic, version, little-endian header length, and a
 * Python dict literal padded with spaces to a multiple of 64 bytes. */
static int npy_header(const array *a, char *out, size_t cap, size_t *len) {
    char dict[256], shape[96];
    if (a->rank == 1)
        snprintf(shape, sizeof shape, "(%" PRIu64 ",)", a->dims[0]);
    else if (a->rank == 2)
        snprintf(shape, sizeof shape, "(%" PRIu64 ", %" PRIu64 ")", a->dims[0], a->dims[1]);
    else
        snprintf(shape, sizeof shape, "(%" PRIu64 ", %" PRIu64 ", %" PRIu64 ")", a->dims[0],
                 a->dims[1], a->dims[2]);
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     a->descr, shape);
    size_t total = 10 + (size_t)n + 1;
    size_t padded = (total + 63) / 64 * 64;
    if (padded > cap || padded - 10 > 65535)
        return -1;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (char)((padded - 10) & 0xff);
    out[9] = (char)((padded - 10) >> 8);
    memcpy(out + 10, dict, (size_t)n);
    memset(out + 10 + n, ' ', padded - 10 - (size_t)n - 1);
    out[padded - 1] = '\n';
    *len = padded;
    return 0;
}

static int write_npz(exporter *x, const char *out, sf_err *err) {
    struct stat st;
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
        return sf_err_set(err, SF_EINVAL, "--npz %s: is a directory; give a file name (OUT.npz)",
                          out);
    int zerr = 0;
    zip_t *z = zip_open(out, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
    if (!z) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        int rc = sf_err_set(err, SF_EIO, "%s: %s", out, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return rc;
    }
    char headers[ARR_MAX][256];
    for (int k = 0; k < x->n; k++) {
        array *a = &x->a[k];
        uint64_t row = a->esize;
        for (int d = 1; d < a->rank; d++)
            row *= a->dims[d];
        a->dims[0] = row ? a->data.len / row : 0;
        size_t hlen;
        if (npy_header(a, headers[k], sizeof headers[k], &hlen) != 0) {
            zip_discard(z);
            return sf_err_set(err, SF_EINVAL, "%s: npy header for %s too long", out, a->name);
        }
        zip_buffer_fragment_t frags[2] = {{(zip_uint8_t *)headers[k], hlen},
                                          {a->data.p ? a->data.p : (zip_uint8_t *)headers[k], 0}};
        frags[1].length = a->data.len;
        zip_source_t *src = zip_source_buffer_fragment(z, frags, 2, 0);
        char name[80];
        snprintf(name, sizeof name, "%s.npy", a->name);
        zip_int64_t idx = src ? zip_file_add(z, name, src, ZIP_FL_ENC_UTF_8) : -1;
        if (idx < 0) {
            if (src)
                zip_source_free(src);
            int rc = sf_err_set(err, SF_EIO, "%s: adding %s: %s", out, name, zip_strerror(z));
            zip_discard(z);
            return rc;
        }
        zip_set_file_compression(z, (zip_uint64_t)idx, ZIP_CM_STORE, 0);
    }
    if (zip_close(z) != 0) {
        int rc = sf_err_set(err, SF_EIO, "%s: %s", out, zip_strerror(z));
        zip_discard(z);
        return rc;
    }
    return SF_OK;
}

int sf_cli_export(int argc, char **argv) {
    int rc;
    const char *path = NULL, *out = NULL;
    int include_quarantined = 0;
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--npz") == 0) {
            if (k + 1 >= argc)
                return sf_cli_usage_error("export", "--npz needs an output file");
            out = argv[++k];
        } else if (strcmp(argv[k], "--include-quarantined") == 0) {
            include_quarantined = 1;
        } else if ((rc = sf_cli_common_arg("export", export_help, argv[k], NULL, &path)) >= 0) {
            return rc;
        }
    }
    if (!path || !out)
        return sf_cli_usage_error("export", "expected SHARD --npz OUT");
    sf_shard_reader *r = NULL;
    if ((rc = sf_cli_open_shard("export", path, &r)) != 0)
        return rc;
    sf_err err = {0};
    /* a shard its directory's quarantine list names is not exported */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    sf_shard_quarantine *q = NULL;
    if (!include_quarantined && sf_shard_quarantine_load(dir, &q, &err) == SF_OK &&
        sf_shard_quarantine_find(q, sf_shard_reader_manifest(r)->content_digest.data,
                                 sf_shard_reader_manifest(r)->worker_key_id
                                     ? sf_shard_reader_manifest(r)->worker_key_id
                                     : "")) {
        sf_shard_quarantine_free(q);
        sf_shard_reader_close(r);
        printf("%s: quarantined (listed in %s/%s): not exported; --include-quarantined exports "
               "it\n",
               path, dir, SF_SHARD_QUARANTINE_FILE);
        return SF_EXIT_DATA;
    }
    sf_shard_quarantine_free(q);
    exporter *x = calloc(1, sizeof *x);
    if (!x) {
        sf_shard_reader_close(r);
        return sf_cli_fail(SF_ENOMEM, "out of memory");
    }
    x->path = path;
    rc = sf_shard_reader_foreach(r, add_record, x, &err);
    if (rc < 0 && !err.msg[0])
        sf_err_set(&err, rc, "%s: out of memory", path);
    if (rc == SF_OK && x->records == 0)
        rc = sf_err_set(&err, SF_EINVAL, "%s: no records to export", path);
    if (rc == SF_OK)
        rc = write_npz(x, out, &err);
    if (rc == SF_OK)
        printf("%s: %" PRIu64 " records, %d arrays\n", out, x->records, x->n);
    for (int k = 0; k < x->n; k++)
        sf_buf_free(&x->a[k].data);
    free(x);
    sf_shard_reader_close(r);
    return rc < 0 ? sf_cli_fail(rc, err.msg) : SF_EXIT_OK;
}
