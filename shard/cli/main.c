/* main.c — sf-shard: list, inspect, verify, export and pull label shards.
 * This file holds the dispatcher and the directory commands (ls, verify,
 * pull); view.c has stat and cat, export.c has export. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sf_config.h"
#include "shard/cli/cli.h"
#include "shard/internal.h"

static const char usage_text[] =
    "usage: sf-shard COMMAND [ARGS]\n"
    "\n"
    "Inspect, verify, export and pull label shards (docs/trainer.md, docs/format.md).\n"
    "\n"
    "commands:\n"
    "  ls DIR                          table of the shards in DIR (sealed or not)\n"
    "  stat SHARD [--json]             counts, compression, label summaries\n"
    "  verify SHARD|DIR                check every byte and record of a shard, or of\n"
    "                                  every shard in DIR; names the first corruption\n"
    "  cat SHARD [--index I] [--json]  records, one line each (--json: JSON lines)\n"
    "  export SHARD --npz OUT          the records as numpy arrays in OUT (.npz)\n"
    "  pull SRC DST                    copy sealed shards from SRC (a directory or\n"
    "                                  file://DIR) into DST, skipping those present\n"
    "  COMMAND --help                  help for one command\n"
    "\n"
    "exit codes:\n"
    "  0  success\n"
    "  1  a shard is damaged, truncated, unsealed or of an unknown version,\n"
    "     or pull could not copy every shard\n"
    "  2  usage error\n"
    "  3  other failure (missing file, I/O error, out of memory)\n"
    "  4  pull: the coordinator refused the connection's security handshake\n"
    "     (CURVE keys: --keys DIR missing or not the run's)\n";

/* Whether the command was asked for its help (-h, --help): then `help` is
 * printed. */
static int shown_help(int argc, char **argv, const char *help) {
    for (int k = 1; k < argc; k++)
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            fputs(help, stdout);
            return 1;
        }
    return 0;
}

/* ---- names in a directory ------------------------------------------------- */

typedef struct name_list {
    char **v;
    size_t n;
} name_list;

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files in `dir` ending in .shard (and, with temps, writers' .tmp files). */
static int list_dir(const char *dir, int temps, name_list *out, sf_err *err) {
    out->v = NULL;
    out->n = 0;
    DIR *dh = opendir(dir);
    if (!dh)
        return sf_err_set(err, errno == ENOENT ? SF_ENOTFOUND : SF_EIO, "%s: %s", dir,
                          strerror(errno));
    size_t cap = 0;
    struct dirent *de;
    int rc = SF_OK;
    while ((de = readdir(dh)) != NULL) {
        int keep = sf_has_suffix(de->d_name, SF_SHARD_SUFFIX) ||
                   (temps && sf_has_suffix(de->d_name, SF_SHARD_TEMP_SUFFIX));
        if (!keep)
            continue;
        if (out->n == cap) {
            cap = cap ? cap * 2 : 32;
            char **v = realloc(out->v, cap * sizeof *v);
            if (!v) {
                rc = sf_err_set(err, SF_ENOMEM, "out of memory");
                break;
            }
            out->v = v;
        }
        if (!(out->v[out->n] = malloc(strlen(dir) + strlen(de->d_name) + 2))) {
            rc = sf_err_set(err, SF_ENOMEM, "out of memory");
            break;
        }
        sprintf(out->v[out->n++], "%s/%s", dir, de->d_name);
    }
    closedir(dh);
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, cmp_str);
    return rc;
}

static void free_names(name_list *l) {
    for (size_t k = 0; k < l->n; k++)
        free(l->v[k]);
    free(l->v);
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- ls ------------------------------------------------------------------------ */

static const char ls_help[] =
    "usage: sf-shard ls DIR\n"
    "\n"
    "One line per shard file in DIR (*.shard, and writers' *.tmp files):\n"
    "  shard    file name\n"
    "  records  record count (from the manifest)\n"
    "  bytes    file size\n"
    "  ratio    compression ratio: uncompressed / compressed record bytes\n"
    "  run/job  the run id and job id\n"
    "  sealed   yes (\"yes, QUARANTINED\" when DIR's QUARANTINE lists it), or why\n"
    "           the file cannot be read (unsealed, truncated, corrupt, version);\n"
    "           details follow the table\n"
    "Exit code 0 when DIR could be listed (ls does not judge the shards; use verify).\n";

static const char *status_word(int rc) {
    switch (rc) {
    case SF_OK: return "yes";
    case SF_ESTATE: return "unsealed";
    case SF_EFORMAT: return "truncated";
    case SF_ECORRUPT: return "corrupt";
    case SF_EVERSION: return "version";
    default: return "error";
    }
}

/* The start of a command that takes exactly one argument (`expected`
 * names it in the usage error): its help when asked for, or a usage error;
 * -1 when the command goes on, else the exit code. */
static int one_arg(int argc, char **argv, const char *cmd, const char *help, const char *expected) {
    if (shown_help(argc, argv, help))
        return SF_EXIT_OK;
    if (argc != 2)
        return sf_cli_usage_error(cmd, expected);
    return -1;
}

/* list_dir, or its failure printed: 0, or the exit code. */
static int listed(const char *dir, int all, name_list *names) {
    sf_err err = {0};
    int rc = list_dir(dir, all, names, &err);
    if (rc < 0) {
        free_names(names);
        return sf_cli_fail(rc, err.msg);
    }
    return 0;
}

static int cmd_ls(int argc, char **argv) {
    int rc = one_arg(argc, argv, "ls", ls_help, "expected one directory");
    if (rc >= 0)
        return rc;
    name_list names;
    if ((rc = listed(argv[1], 1, &names)) != 0)
        return rc;
    sf_shard_quarantine *q = NULL; /* a list that does not load: nothing marked */
    sf_err qe = {0};
    if (sf_shard_quarantine_load(argv[1], &q, &qe) < 0)
        fprintf(stderr, "sf-shard ls: %s\n", qe.msg);
    printf("%-40s %9s %12s %6s  %-28s %s\n", "shard", "records", "bytes", "ratio", "run/job",
           "sealed");
    char **problems = calloc(names.n ? names.n : 1, sizeof *problems);
    uint64_t total_records = 0, total_bytes = 0;
    size_t sealed = 0;
    for (size_t k = 0; k < names.n; k++) {
        sf_shard_reader *r = NULL;
        sf_err e = {0};
        int orc = sf_shard_reader_open(names.v[k], &r, &e);
        struct stat st;
        unsigned long long bytes = stat(names.v[k], &st) == 0 ? (unsigned long long)st.st_size : 0;
        if (orc == SF_OK) {
            const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
            char runjob[64];
            snprintf(runjob, sizeof runjob, "%.40s/%llu", m->run_id, (unsigned long long)m->job_id);
            double ratio = m->payload_bytes ? (double)m->raw_bytes / (double)m->payload_bytes : 0;
            int listed = sf_shard_quarantine_find(q, m->content_digest.data,
                                                  m->worker_key_id ? m->worker_key_id : "") != NULL;
            printf("%-40s %9llu %12llu %6.2f  %-28s %s\n", base_name(names.v[k]),
                   (unsigned long long)m->record_count, bytes, ratio, runjob,
                   listed ? "yes, QUARANTINED" : "yes");
            total_records += m->record_count;
            total_bytes += bytes;
            sealed++;
            sf_shard_reader_close(r);
        } else {
            printf("%-40s %9s %12llu %6s  %-28s %s\n", base_name(names.v[k]), "-", bytes, "-", "-",
                   status_word(orc));
            if (problems)
                problems[k] = strdup(e.msg);
        }
    }
    printf("%zu files, %zu sealed, %llu records, %llu bytes\n", names.n, sealed,
           (unsigned long long)total_records, (unsigned long long)total_bytes);
    for (size_t k = 0; problems && k < names.n; k++)
        if (problems[k]) {
            printf("  %s\n", problems[k]);
            free(problems[k]);
        }
    free(problems);
    free_names(&names);
    sf_shard_quarantine_free(q);
    return SF_EXIT_OK;
}

/* ---- verify ---------------------------------------------------------------------- */

static const char verify_help[] =
    "usage: sf-shard verify SHARD|DIR\n"
    "\n"
    "Check a shard completely: the seal trailer, the CRC of every page, every\n"
    "record (decoded and checked against the format rules and the manifest; keys\n"
    "unique and in (seed, fight, decision) order) and the content digest. With a\n"
    "directory, check every *.shard in it; there a shard must have its canonical\n"
    "name (RUN-jobNNNNNN.shard of its manifest's run and job), and a second file\n"
    "with a content digest already seen is skipped with a warning naming both.\n"
    "Prints 'ok NAME RECORDS DIGEST' per good shard and 'FAIL: <file>: <where>:\n"
    "<why>' for a bad one (the first problem found: page, record index, reason).\n"
    "A single SHARD may have any name (a note on stderr says when it is not the\n"
    "canonical one).\n"
    "Exit code 0 when every shard is good, 1 when any is not, 3 when DIR or SHARD\n"
    "cannot be read.\n";

/* Verify `path`; `rep` receives what verification found. In a directory
 * (`in_dir`) the file must have its shard's canonical name (checked on the
 * manifest first, so a misnamed copy is not read through); alone it may
 * have any, with a note on stderr when it is not the canonical one. */
static int verify_one(const char *path, int in_dir, sf_shard_verify_report *rep) {
    sf_err err = {0};
    int rc = SF_OK;
    sf_shard_reader *r = NULL;
    *rep = (sf_shard_verify_report){.bad_record = -1, .bad_page = -1};
    if (in_dir && sf_shard_reader_open(path, &r, &err) == SF_OK) {
        const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
        rc = sf_shard_check_canonical_name(path, m->run_id, m->job_id, &err);
        sf_shard_reader_close(r);
    }
    if (rc == SF_OK) /* a file that does not open gets verify's own words */
        rc = sf_shard_verify(path, rep, &err);
    if (rc < 0) {
        printf("FAIL: %s\n", err.msg);
        return rc;
    }
    if (!in_dir && strcmp(base_name(path), rep->name) != 0)
        fprintf(stderr,
                "sf-shard: note: %s is not its shard's canonical name '%s': directory readers "
                "(verify DIR, pull, the Python readers) refuse it under this name\n",
                path, rep->name);
    char hex[65];
    sf_hex(rep->digest, sizeof rep->digest, hex);
    printf("ok %s %llu records %s\n", path, (unsigned long long)rep->records, hex);
    return SF_OK;
}

static int cmd_verify(int argc, char **argv) {
    int rc = one_arg(argc, argv, "verify", verify_help, "expected one shard or directory");
    if (rc >= 0)
        return rc;
    sf_shard_verify_report rep;
    if (!is_dir(argv[1]))
        return sf_cli_exit_code(verify_one(argv[1], 0, &rep));
    name_list names;
    if ((rc = listed(argv[1], 0, &names)) != 0)
        return rc;
    sf_err err = {0};
    size_t bad = 0, skipped = 0, dups = 0;
    int worst = SF_OK;
    sf_shard_quarantine *q = NULL;
    if (sf_shard_quarantine_load(argv[1], &q, &err) < 0) {
        free_names(&names);
        return sf_cli_fail(err.code, err.msg);
    }
    /* the content digest of each good shard with content, by name index
     * (canonical names alone keep a digest to one file: the records carry
     * the run and job; this holds even when that rule is broken) */
    uint8_t(*seen)[SF_SHARD_DIGEST_BYTES] = calloc(names.n ? names.n : 1, sizeof *seen);
    size_t *seen_at = calloc(names.n ? names.n : 1, sizeof *seen_at), nseen = 0;
    if (!seen || !seen_at) {
        free(seen);
        free(seen_at);
        sf_shard_quarantine_free(q);
        free_names(&names);
        return sf_cli_fail(SF_ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < names.n; k++) {
        if (sf_cli_quarantined(q, names.v[k])) {
            skipped++;
            continue;
        }
        int vrc = verify_one(names.v[k], 1, &rep);
        if (vrc < 0) {
            bad++;
            if (worst == SF_OK || sf_cli_exit_code(vrc) == SF_EXIT_DATA)
                worst = vrc;
            continue;
        }
        if (rep.records == 0)
            continue; /* nothing to count twice (and all empty shards share a digest) */
        size_t j = 0;
        while (j < nseen && memcmp(seen[j], rep.digest, SF_SHARD_DIGEST_BYTES) != 0)
            j++;
        if (j < nseen) {
            char hex[65];
            sf_hex(rep.digest, sizeof rep.digest, hex);
            dups++;
            fprintf(stderr,
                    "sf-shard: warning: %s holds the content of %s (the same content digest %s): "
                    "skipped, its records count once\n",
                    names.v[k], names.v[seen_at[j]], hex);
            continue;
        }
        memcpy(seen[nseen], rep.digest, SF_SHARD_DIGEST_BYTES);
        seen_at[nseen++] = k;
    }
    size_t counted = names.n - skipped - dups;
    printf("%zu shards, %zu good, %zu bad", counted, counted - bad, bad);
    if (skipped)
        printf(", %zu quarantined (skipped, listed in %s/%s)", skipped, argv[1],
               SF_SHARD_QUARANTINE_FILE);
    if (dups)
        printf(", %zu duplicates (skipped: the content digest of another file)", dups);
    printf("\n");
    free(seen);
    free(seen_at);
    sf_shard_quarantine_free(q);
    free_names(&names);
    return sf_cli_exit_code(worst);
}

/* ---- pull ---------------------------------------------------------------------------- */

static const char pull_help[] =
    "usage: sf-shard pull SRC DST [--keys DIR]\n"
    "\n"
    "Copy the sealed shards of SRC into the directory DST (created if missing).\n"
    "SRC is a directory (or file://DIR) or a coordinator (tcp://HOST:PORT); a\n"
    "coordinator with CURVE needs --keys DIR (default $SF_KEYS): its server.pub and\n"
    "an operator.key or worker.key (docs/operator.md \"Security\").\n"
    "A shard already in DST with the same content\n"
    "digest is skipped; every copy is written to a temporary name, verified\n"
    "completely, checked against the source's digest and only then renamed into\n"
    "place. A file in DST with the same name and another digest is never\n"
    "replaced (a conflict). One line per shard: copied, present, conflict or\n"
    "FAILED with the reason. Exit code 0 when every shard is copied or present,\n"
    "1 when any failed or conflicted, 3 when SRC or DST cannot be used, 4 when\n"
    "the coordinator refused the connection's security handshake (no --keys\n"
    "against a CURVE coordinator, or keys it does not list): said within\n"
    "seconds; no connection at all is given up after 30 s (exit 3).\n";

static void on_pulled(void *ctx, const sf_shard_entry *e, const char *action, const char *why) {
    (void)ctx;
    if (why)
        printf("%-8s %s: %s\n", strcmp(action, "failed") == 0 ? "FAILED" : action, e->name, why);
    else
        printf("%-8s %s (%llu records, %llu bytes)\n", action, e->name,
               (unsigned long long)e->records, (unsigned long long)e->bytes);
}

static int cmd_pull(int argc, char **argv) {
    if (shown_help(argc, argv, pull_help))
        return SF_EXIT_OK;
    /* --keys DIR (default $SF_KEYS): a CURVE key directory for tcp:// */
    const char *keys = getenv("SF_KEYS");
    if (argc == 5 && !strcmp(argv[3], "--keys"))
        keys = argv[4];
    else if (argc != 3)
        return sf_cli_usage_error("pull", "expected SRC and DST [--keys DIR]");
    sf_shard_source *src = NULL;
    sf_err err = {0};
    int rc = sf_cli_open_source(argv[1], keys, &src, &err);
    if (rc < 0)
        return sf_cli_fail(rc, err.msg);
    if ((rc = sf_cli_source_ready(src, &err)) < 0) {
        src->ops->close(src);
        fprintf(stderr, "sf-shard pull: %s\n", err.msg);
        return rc == SF_EREMOTE ? SF_EXIT_REFUSED : sf_cli_exit_code(rc);
    }
    sf_shard_pull_report rep = {.on_shard = on_pulled};
    rc = sf_shard_pull(src, argv[2], &rep, &err);
    src->ops->close(src);
    printf("%zu copied (%llu bytes), %zu present, %zu failed", rep.copied,
           (unsigned long long)rep.bytes_copied, rep.present, rep.failed);
    if (rep.quarantined)
        printf(", %zu quarantined (skipped, listed in %s/%s)", rep.quarantined, argv[2],
               SF_SHARD_QUARANTINE_FILE);
    printf("\n");
    if (rc < 0 && rep.failed == 0) /* the source or DST itself */
        return sf_cli_fail(rc, err.msg);
    return rep.failed ? SF_EXIT_DATA : SF_EXIT_OK;
}

/* ---- dispatch ------------------------------------------------------------------------------ */

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

static const command commands[] = {
    {"ls", cmd_ls},      {"stat", sf_cli_stat},     {"verify", cmd_verify},
    {"cat", sf_cli_cat}, {"export", sf_cli_export}, {"pull", cmd_pull},
};

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(usage_text, stderr);
        return SF_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage_text, stdout);
        return SF_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("sf-shard %s (shard format %d, label schema %d)\n", SF_VERSION,
               SF_SHARD_FORMAT_VERSION, SF_LABEL_SCHEMA_VERSION);
        return SF_EXIT_OK;
    }
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (strcmp(argv[1], commands[k].name) == 0)
            return commands[k].run(argc - 1, argv + 1);
    fprintf(stderr, "sf-shard: unknown command '%s'\n\n%s", argv[1], usage_text);
    return SF_EXIT_USAGE;
}
