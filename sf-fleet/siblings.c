/*
 * siblings.c — `sf-fleet siblings`: how well a network's value ranks the
 * children of searched decisions in self-play shards (worker.h "Sibling
 * ranking", docs/trainer.md), and the same measurement for the loop's
 * candidates (loop.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/io.h"
#include "sf-fleet/cli.h"
#include "sf-fleet/loop_state.h"
#include "shard/shard.h"
#include "worker/worker.h"

/* Append a copy of `path` to *list (grown with realloc). */
static int push_path(const char *path, char ***list, size_t *n, sf_err *err) {
    char **grown = realloc(*list, sizeof **list * (*n + 1));
    if (grown)
        *list = grown;
    char *p = grown ? strdup(path) : NULL;
    if (!p)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    (*list)[(*n)++] = p;
    return SF_OK;
}

/* The sealed shards of `path` appended to *list: the shard itself, or a
 * directory's shards as every directory reader takes them (the directory
 * source of shard.h: name order, canonical names only, the directory's
 * QUARANTINE left out). */
static int add_shards(const char *path, char ***list, size_t *n, sf_err *err) {
    struct stat st;
    if (stat(path, &st) != 0)
        return sf_err_set(err, SF_ENOTFOUND, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return push_path(path, list, n, err);
    sf_shard_source *src;
    int rc = sf_shard_source_open_dir(path, &src, err);
    if (rc < 0)
        return rc;
    sf_shard_entry *v = NULL;
    size_t nv = 0;
    rc = src->ops->list(src, &v, &nv, err);
    for (size_t k = 0; rc == SF_OK && k < nv; k++) {
        if (v[k].error_code < 0)
            rc = sf_err_set(err, v[k].error_code, "%s", v[k].error);
        else if (!v[k].quarantined) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", path, v[k].name);
            rc = push_path(p, list, n, err);
        }
    }
    free(v);
    src->ops->close(src);
    return rc;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* NaN as JSON null. */
static json_t *real_or_null(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

int siblings_measure_json(const sf_run_config *cfg, const char *bundle, const char *const *paths,
                          size_t n_paths, uint64_t *seeds, size_t n_seeds, uint64_t max_decisions,
                          json_t **out, sf_err *err) {
    *out = NULL;
    char **shards = NULL;
    size_t n = 0;
    int rc = SF_OK;
    for (size_t i = 0; rc == SF_OK && i < n_paths; i++)
        rc = add_shards(paths[i], &shards, &n, err);
    sf_batch_evaluator *ev = NULL;
    if (rc == SF_OK)
        rc = sf_worker_evaluator_new(cfg, NULL, bundle, &ev, err);
    sf_siblings_report rep;
    if (rc == SF_OK) {
        if (seeds)
            qsort(seeds, n_seeds, sizeof *seeds, cmp_u64);
        sf_siblings_opts o = {.seeds = seeds, .n_seeds = n_seeds, .max_decisions = max_decisions};
        rc = sf_siblings_measure(cfg, (const char *const *)shards, n, ev, &o, &rep, err);
    }
    if (rc == SF_OK) {
        json_t *j = json_object();
        json_object_set_new(j, "model_sha256", json_string(ev->model_sha256));
        json_object_set_new(j, "shards", json_integer((json_int_t)n));
        json_object_set_new(j, SF_SIBLINGS_KEY_DECISIONS, json_integer((json_int_t)rep.decisions));
        json_object_set_new(j, "pairs", json_integer((json_int_t)rep.pairs));
        json_object_set_new(j, "fights", json_integer((json_int_t)rep.fights));
        json_object_set_new(j, "fights_skipped", json_integer((json_int_t)rep.fights_skipped));
        json_object_set_new(j, SF_SIBLINGS_KEY_NET_ACCURACY, real_or_null(rep.net_accuracy));
        json_object_set_new(j, SF_SIBLINGS_KEY_ROLLOUT_ACCURACY,
                            real_or_null(rep.rollout_accuracy));
        json_object_set_new(j, "net_kendall_tau", real_or_null(rep.net_tau));
        json_object_set_new(j, "rollout_kendall_tau", real_or_null(rep.rollout_tau));
        *out = j;
    }
    sf_worker_evaluator_free(ev);
    for (size_t i = 0; i < n; i++)
        free(shards[i]);
    free(shards);
    return rc;
}

/* The game seeds listed in `path`, one decimal number a line. */
static int read_seeds(const char *path, uint64_t **out, size_t *n, sf_err *err) {
    struct stat st;
    int fd = sf_open_regular(path, &st, err); /* a FIFO is refused, not waited on */
    if (fd < 0)
        return fd;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
    }
    size_t cap = 0;
    char line[64];
    int rc = SF_OK, ln = 0;
    while (rc == SF_OK && fgets(line, sizeof line, f)) {
        ln++;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(line, &end, 10);
        while (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t')
            end++;
        if (end == line || *end || errno || line[0] == '-') {
            rc = sf_err_set(err, SF_EINVAL, "%s:%d: not a game seed", path, ln);
            break;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            uint64_t *grown = realloc(*out, sizeof **out * cap);
            if (!grown) {
                rc = sf_err_set(err, SF_ENOMEM, "out of memory");
                break;
            }
            *out = grown;
        }
        (*out)[(*n)++] = v;
    }
    fclose(f);
    return rc;
}

int cmd_siblings(int argc, char **argv) {
    static const struct option opts[] = {{"model", required_argument, 0, 'm'},
                                         {"seeds", required_argument, 0, 's'},
                                         {"max-decisions", required_argument, 0, 'x'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *model = NULL, *seeds_path = NULL;
    unsigned long long max = 0;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "m:s:x:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'm': model = optarg; break;
        case 's': seeds_path = optarg; break;
        case 'x': {
            char *end;
            errno = 0;
            max = strtoull(optarg, &end, 10);
            if (*end || errno || optarg[0] == '-') {
                fprintf(stderr, "sf-fleet siblings: --max-decisions: '%s' is not a count\n",
                        optarg);
                return 2;
            }
            break;
        }
        case 'h':
            printf("usage: sf-fleet siblings CONFIG --model BUNDLE[@SHA256] [--seeds FILE]\n"
                   "                         [--max-decisions N] SHARD|DIR...\n"
                   "How well the network's value orders the children of the searched\n"
                   "decisions in the self-play shards of run CONFIG, against the search's\n"
                   "completed-Q, with one rollout per child as the baseline (docs/trainer.md\n"
                   "\"Sibling ranking\"). --seeds: only the game seeds listed (one a line).\n"
                   "Prints one JSON line.\n");
            return 0;
        default: return 2;
        }
    }
    if (optind > argc - 2 || !model) {
        fprintf(stderr, "usage: sf-fleet siblings CONFIG --model BUNDLE[@SHA256] [--seeds FILE] "
                        "[--max-decisions N] SHARD|DIR...\n");
        return 2;
    }
    sf_run_config cfg;
    if (sf_fleet_load(argv[optind], &cfg) < 0)
        return 2;
    char bundle[SF_CFG_PATH];
    snprintf(bundle, sizeof bundle, "%s", model);
    char *at = strrchr(bundle, '@');
    if (at)
        *at = 0;
    snprintf(cfg.model.sha256, sizeof cfg.model.sha256, "%s", at ? at + 1 : "");
    uint64_t *seeds = NULL;
    size_t n_seeds = 0;
    sf_err err = {0};
    int rc = seeds_path ? read_seeds(seeds_path, &seeds, &n_seeds, &err) : SF_OK;
    json_t *j = NULL;
    if (rc == SF_OK)
        rc = siblings_measure_json(&cfg, bundle, (const char *const *)argv + optind + 1,
                                   (size_t)(argc - optind - 1), seeds_path ? seeds : NULL, n_seeds,
                                   max, &j, &err);
    free(seeds);
    if (rc < 0) {
        fprintf(stderr, "sf-fleet siblings: %s\n", err.msg);
        return rc == SF_EINVAL || rc == SF_ENOTFOUND || rc == SF_EVERSION ? 2 : 1;
    }
    char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(j);
    if (!text)
        return 1;
    printf("%s\n", text);
    free(text);
    return 0;
}
