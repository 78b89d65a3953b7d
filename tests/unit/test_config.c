/* test_config.c — the fleet's YAML run configuration (fleet/config.h). */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "fleet/config.h"
#include "sf_check.h"

#ifndef SF_SOURCE_ROOT
#error "SF_SOURCE_ROOT must point at the source tree"
#endif

static int parse_str(const char *yaml, sf_run_config *cfg, sf_err *err) {
    return sf_config_parse(yaml, strlen(yaml), "inline.yaml", cfg, err);
}

START_TEST(minimal_config_gets_defaults) {
    sf_run_config c;
    sf_err e = {0};
    ck_assert_int_eq(parse_str("run: {name: demo}\nseeds: {count: 10}\n", &c, &e), SF_OK);
    ck_assert_str_eq(c.name, "demo");
    ck_assert_str_eq(c.output_dir, "runs/demo");
    ck_assert_uint_eq(c.seed_count, 10);
    ck_assert_uint_eq(c.job_size, 8);
    ck_assert_str_eq(c.play.mode, "fights");
    ck_assert_str_eq(c.play.deck, "Strike*5,Defend*4,Bash");
    ck_assert_int_eq(c.play.n_relics, 1);
    ck_assert_str_eq(c.play.relics[0], "Burning Blood");
    ck_assert_uint_eq(c.search.simulations, 200);
    ck_assert_int_eq(c.search.n_c_schedule, 3);
    ck_assert_double_eq(c.search.c_schedule[0].c, 0.8);
    ck_assert_uint_eq(c.search.c_schedule[1].below, 1000);
    ck_assert_double_eq(c.search.widening_c, 5.79);
    ck_assert_double_eq(c.search.widening_alpha, 0.44);
    ck_assert_double_eq(c.search.rollout_tau, 32.0);
    ck_assert_str_eq(c.search.evaluator, "rollout");
    ck_assert_uint_eq(c.coordinator.heartbeat_liveness, 5);
    ck_assert_int_eq(c.shard.zstd_level, 3);
    ck_assert_str_eq(c.labels.unsearched, "drop");
}
END_TEST

START_TEST(pools_spread_their_weight) {
    sf_run_config c;
    sf_err e = {0};
    ck_assert_int_eq(parse_str("run: {name: d}\nseeds: {count: 1}\n"
                               "play: {encounters: {weak: 1, boss: 1, Jaw Worm: 0.5}}\n",
                               &c, &e),
                     SF_OK);
    /* 4 weak encounters at 1/4 each (Jaw Worm +0.5 = 0.75), 3 bosses at 1/3 */
    ck_assert_int_eq(c.play.n_encounters, 7);
    double weak = 0, boss = 0, jaw = 0;
    for (int i = 0; i < c.play.n_encounters; i++) {
        int pool = sf_encounter_pool(c.play.encounters[i].id);
        if (pool == SF_POOL_WEAK)
            weak += c.play.encounters[i].weight;
        if (pool == SF_POOL_BOSS)
            boss += c.play.encounters[i].weight;
        if (c.play.encounters[i].id == sf_encounter_lookup("Jaw Worm"))
            jaw = c.play.encounters[i].weight;
    }
    ck_assert_double_eq_tol(weak, 1.5, 1e-12);
    ck_assert_double_eq_tol(boss, 1.0, 1e-12);
    ck_assert_double_eq_tol(jaw, 0.75, 1e-12);
}
END_TEST

/* Every file in tests/fixtures/configs/bad has "# expect: <text>" on its
 * first line; parsing it must fail with a message containing <text>. */
START_TEST(bad_configs_name_file_line_column_and_key) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/configs/bad", SF_SOURCE_ROOT);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int checked = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t l = strlen(ent->d_name);
        if (l < 6 || strcmp(ent->d_name + l - 5, ".yaml"))
            continue;
        char path[2048], line[512] = "";
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        FILE *f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
        fclose(f);
        line[strcspn(line, "\n")] = 0;
        ck_assert_msg(!strncmp(line, "# expect: ", 10), "%s: first line must be '# expect: ...'",
                      ent->d_name);
        sf_run_config c;
        sf_err e = {0};
        int rc = sf_config_load(path, &c, &e);
        ck_assert_msg(rc == SF_ECONFIG, "%s: expected SF_ECONFIG, got %d (%s)", ent->d_name, rc,
                      e.msg);
        ck_assert_msg(strstr(e.msg, line + 10) != NULL, "%s:\n  expected: %s\n  got:      %s",
                      ent->d_name, line + 10, e.msg);
        checked++;
    }
    closedir(d);
    ck_assert_int_ge(checked, 20);
}
END_TEST

typedef struct {
    int n;
    char lines[8][SF_ERR_MSG_MAX + 64];
} collected;

static void collect(void *ctx, const char *problem) {
    collected *c = ctx;
    if (c->n < 8)
        snprintf(c->lines[c->n], sizeof c->lines[0], "%s", problem);
    c->n++;
}

START_TEST(every_problem_is_reported_in_file_order) {
    const char *yaml = "run:\n"
                       "  bogus: 1\n"
                       "seeds:\n"
                       "  count: -4\n"
                       "search:\n"
                       "  trees: 0\n"
                       "  trees: 3\n"
                       "serach: {}\n";
    sf_run_config c;
    sf_err e = {0};
    collected got = {0};
    ck_assert_int_eq(sf_config_parse_all(yaml, strlen(yaml), "m.yaml", &c, collect, &got, &e),
                     SF_ECONFIG);
    ck_assert_int_eq(got.n, 6);
    ck_assert_str_eq(got.lines[0], "m.yaml:2:3: run.bogus: unknown key (run takes: name, "
                                   "output_dir, seed, kind)");
    ck_assert_str_eq(got.lines[1],
                     "m.yaml:4:10: seeds.count: expected a non-negative integer, got '-4'");
    ck_assert_str_eq(got.lines[2], "m.yaml:6:10: search.trees: 0 is out of range 1..64");
    ck_assert_str_eq(got.lines[3], "m.yaml:7:3: search.trees: given twice");
    ck_assert_ptr_nonnull(strstr(got.lines[4], "m.yaml:8:1: serach: unknown section"));
    ck_assert_str_eq(got.lines[5], "m.yaml: run.name: is required");
    /* the first problem is also the error */
    ck_assert_str_eq(e.msg, got.lines[0]);
    /* a syntax error is the one problem */
    collected syn = {0};
    ck_assert_int_eq(sf_config_parse_all("run: [", 6, "s.yaml", &c, collect, &syn, &e), SF_ECONFIG);
    ck_assert_int_eq(syn.n, 1);
    ck_assert_ptr_nonnull(strstr(syn.lines[0], "YAML syntax error"));
    ck_assert_str_eq(syn.lines[0], e.msg);
    /* cross-field rules run once the keys parse, and every broken one is
     * reported; so is a second document */
    collected cross = {0};
    const char *hp = "run: {name: x}\nseeds: {count: 1}\nplay: {hp: 90, max_hp: 80}\n"
                     "search: {simulations: 4, trees: 8}\n"
                     "coordinator: {endpoint: 'inproc://q'}\n---\nx: 1\n";
    ck_assert_int_eq(sf_config_parse_all(hp, strlen(hp), "h.yaml", &c, collect, &cross, &e),
                     SF_ECONFIG);
    ck_assert_int_eq(cross.n, 4);
    ck_assert_ptr_nonnull(
        strstr(cross.lines[0], "h.yaml:5:25: coordinator.endpoint: 'inproc://q'"));
    ck_assert_str_eq(cross.lines[1], "h.yaml:3:12: play.hp: 90 is above play.max_hp (80)");
    ck_assert_str_eq(cross.lines[2], "h.yaml:4:33: search.trees: 8 is above "
                                     "search.simulations (4): each tree runs at least one "
                                     "simulation");
    ck_assert_ptr_nonnull(strstr(cross.lines[3], "h.yaml:6:1: a second YAML document"));
    /* every bad name of a list, not only the first */
    collected names = {0};
    const char *pot = "run: {name: x}\nseeds: {count: 1}\nplay: {potions: [a, Fire Potion, b]}\n";
    ck_assert_int_eq(sf_config_parse_all(pot, strlen(pot), "p.yaml", &c, collect, &names, &e),
                     SF_ECONFIG);
    ck_assert_int_eq(names.n, 2);
    ck_assert_str_eq(names.lines[0], "p.yaml:3:18: play.potions: unknown name 'a'");
    ck_assert_str_eq(names.lines[1], "p.yaml:3:34: play.potions: unknown name 'b'");
}
END_TEST

START_TEST(endpoints_accept_bind_forms_and_refuse_the_rest) {
    const char *good[] = {"tcp://127.0.0.1:5555",    "tcp://*:5555",
                          "tcp://127.0.0.1:*",       "tcp://[::1]:65535",
                          "ipc://runs/x/evald.sock", "tcp://host.example:1"};
    const char *bad[] = {
        "inproc://x",           "tcp://127.0.0.1:0",   "tcp://127.0.0.1:65536", "tcp://127.0.0.1:",
        "tcp://:5555",          "tcp://127.0.0.1:55x", "tcp://127.0.0.1",       "ipc://",
        "udp://127.0.0.1:5555", "tcp://h:1000000"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char yaml[256];
        snprintf(yaml, sizeof yaml,
                 "run: {name: d}\nseeds: {count: 1}\ncoordinator: {endpoint: '%s'}\n"
                 "security: {keys: /etc/spirefleet/keys}\n",
                 good[i]);
        sf_run_config c;
        sf_err e = {0};
        ck_assert_msg(parse_str(yaml, &c, &e) == SF_OK, "%s: %s", good[i], e.msg);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char yaml[256];
        snprintf(yaml, sizeof yaml, "run: {name: d}\nseeds: {count: 1}\nevald: {endpoint: '%s'}\n",
                 bad[i]);
        sf_run_config c;
        sf_err e = {0};
        ck_assert_msg(parse_str(yaml, &c, &e) == SF_ECONFIG, "%s accepted", bad[i]);
        ck_assert_msg(strstr(e.msg, "inline.yaml:3:19: evald.endpoint: '") != NULL, "%s: %s",
                      bad[i], e.msg);
    }
}
END_TEST

/* A fleet bound beyond loopback needs keys, or says security.mode none
 * explicitly; the error points at the endpoint that binds beyond loopback
 * (before, at the security section or nowhere when the file had none), and
 * a loopback run needs nothing (its keys are generated). */
START_TEST(non_loopback_without_keys_is_an_error) {
    sf_run_config c;
    sf_err e = {0};
    const char *open_ =
        "run: {name: d}\nseeds: {count: 1}\ncoordinator: {endpoint: 'tcp://*:5555'}\n";
    ck_assert_int_eq(parse_str(open_, &c, &e), SF_ECONFIG);
    ck_assert_msg(strstr(e.msg, "inline.yaml:3:25: coordinator.endpoint: tcp://*:5555 binds "
                                "beyond this machine without security.keys") != NULL,
                  "%s", e.msg);
    const char *mode =
        "run: {name: d}\nseeds: {count: 1}\nevald: {endpoint: 'tcp://10.0.0.2:5557'}\n"
        "security: {mode: curve}\n";
    ck_assert_int_eq(parse_str(mode, &c, &e), SF_ECONFIG);
    ck_assert_msg(strstr(e.msg, "inline.yaml:3:19: evald.endpoint: tcp://10.0.0.2:5557 binds") !=
                      NULL,
                  "%s", e.msg);
    const char *none =
        "run: {name: d}\nseeds: {count: 1}\ncoordinator: {endpoint: 'tcp://*:5555'}\n"
        "security: {mode: none}\n";
    ck_assert_msg(parse_str(none, &c, &e) == SF_OK, "%s", e.msg);
    ck_assert_str_eq(c.security.mode, "none");
    char dir[300];
    sf_config_keys_dir(&c, dir, sizeof dir);
    ck_assert_str_eq(dir, "");
    const char *local = "run: {name: d, output_dir: /r}\nseeds: {count: 1}\n";
    ck_assert_msg(parse_str(local, &c, &e) == SF_OK, "%s", e.msg);
    sf_config_keys_dir(&c, dir, sizeof dir);
    ck_assert_str_eq(dir, "/r/keys");
    const char *bad = "run: {name: d}\nseeds: {count: 1}\nsecurity: {mode: tls}\n";
    ck_assert_int_eq(parse_str(bad, &c, &e), SF_ECONFIG);
    ck_assert_msg(strstr(e.msg, "inline.yaml:3:18: security.mode:") != NULL, "%s", e.msg);
}
END_TEST

/* A config path that is not a regular file is refused at once: a FIFO
 * used to block the tools until a writer came, a directory or a device
 * is no config either. */
START_TEST(non_regular_files_are_refused_without_blocking) {
    char dir[] = "/tmp/sf-config-fifo-XXXXXX", fifo[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/c.yaml", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    sf_run_config c;
    sf_err e = {0};
    ck_assert_int_eq(sf_config_load(fifo, &c, &e), SF_ECONFIG);
    ck_assert_msg(strstr(e.msg, "c.yaml: is not a regular file, not a config file"), "%s", e.msg);
    ck_assert_int_eq(sf_config_load(dir, &c, &e), SF_ECONFIG);
    ck_assert_msg(strstr(e.msg, "is a directory"), "%s", e.msg);
    ck_assert_int_eq(sf_config_load("/dev/zero", &c, &e), SF_ECONFIG);
    /* a path that cannot be opened is the OS's failure */
    ck_assert_int_eq(sf_config_load("/nonexistent/c.yaml", &c, &e), SF_EIO);
    unlink(fifo);
    rmdir(dir);
}
END_TEST

START_TEST(shipped_configs_are_valid) {
    const char *names[] = {"configs/local.yaml",     "configs/fleet-example.yaml",
                           "configs/local-net.yaml", "configs/gate.yaml",
                           "configs/loop.yaml",      "configs/loop-scale.yaml"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", SF_SOURCE_ROOT, names[i]);
        sf_run_config c;
        sf_err e = {0};
        ck_assert_msg(sf_config_load(path, &c, &e) == SF_OK, "%s: %s", names[i], e.msg);
    }
}
END_TEST

START_TEST(digest_ignores_execution_but_not_labels) {
    const char *base = "run: {name: d}\nseeds: {count: 16}\nsearch: {simulations: 300}\n";
    sf_run_config a, b;
    sf_err e = {0};
    char da[65], db[65];
    ck_assert_int_eq(parse_str(base, &a, &e), SF_OK);
    ck_assert_int_eq(sf_config_digest(&a, da), SF_OK);
    ck_assert_uint_eq(strlen(da), 64);
    /* how the run executes does not change what the labels are */
    ck_assert_int_eq(parse_str("run: {name: d, output_dir: /elsewhere}\nseeds: {count: 16}\n"
                               "search: {simulations: 300}\nworkers: {count: 7, threads: 3}\n"
                               "coordinator: {endpoint: 'tcp://*:9999'}\nshard: {zstd_level: 9}\n"
                               "security: {keys: /etc/spirefleet/keys, metrics_public: true}\n",
                               &b, &e),
                     SF_OK);
    ck_assert_int_eq(sf_config_digest(&b, db), SF_OK);
    ck_assert_str_eq(da, db);
    /* the search budget does */
    ck_assert_int_eq(
        parse_str("run: {name: d}\nseeds: {count: 16}\nsearch: {simulations: 301}\n", &b, &e),
        SF_OK);
    ck_assert_int_eq(sf_config_digest(&b, db), SF_OK);
    ck_assert_str_ne(da, db);
    /* so does which decisions become labels */
    ck_assert_int_eq(parse_str("run: {name: d}\nseeds: {count: 16}\nsearch: {simulations: 300}\n"
                               "labels: {unsearched: keep}\n",
                               &b, &e),
                     SF_OK);
    ck_assert_str_eq(b.labels.unsearched, "keep");
    ck_assert_int_eq(sf_config_digest(&b, db), SF_OK);
    ck_assert_str_ne(da, db);
}
END_TEST

/* SHA-256 of the empty string (FIPS 180-2), as typed in two cases. */
#define SHA_LOWER "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SHA_UPPER "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
#define NET_RUN(sha)                                                 \
    "run: {name: d}\nseeds: {count: 16}\nsearch: {evaluator: net}\n" \
    "model: {bundle: m.safetensors, sha256: \"" sha "\"}\n"

START_TEST(upper_case_model_sha256_is_stored_in_lower_case) {
    sf_run_config up, low;
    sf_err e = {0};
    ck_assert_msg(parse_str(NET_RUN(SHA_UPPER), &up, &e) == SF_OK, "%s", e.msg);
    ck_assert_str_eq(up.model.sha256, SHA_LOWER);
    /* same model, same config: one digest whichever case was typed */
    ck_assert_int_eq(parse_str(NET_RUN(SHA_LOWER), &low, &e), SF_OK);
    char du[65], dl[65];
    ck_assert_int_eq(sf_config_digest(&up, du), SF_OK);
    ck_assert_int_eq(sf_config_digest(&low, dl), SF_OK);
    ck_assert_str_eq(du, dl);
    /* the effective config (sf-fleet check) shows the stored spelling */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    sf_config_print(&up, m);
    fclose(m);
    ck_assert_ptr_nonnull(strstr(buf, "sha256: \"" SHA_LOWER "\""));
    free(buf);
    /* and so does the RunConfig the coordinator sends */
    sf_config_scratch *sc = malloc(sizeof *sc);
    ck_assert_str_eq(sf_config_to_proto(&up, sc)->model->sha256, SHA_LOWER);
    free(sc);
}
END_TEST

START_TEST(model_sha256_not_64_hex_digits_names_the_key) {
    sf_run_config c;
    sf_err e = {0};
    ck_assert_int_eq(parse_str(NET_RUN(SHA_LOWER "0"), &c, &e), SF_ECONFIG);
    ck_assert_str_eq(e.msg, "inline.yaml:4:40: model.sha256: '" SHA_LOWER
                            "0' is not 64 hex digits (it has 65 characters)");
    ck_assert_int_eq(parse_str(NET_RUN("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b"
                                       "7852b85g"),
                               &c, &e),
                     SF_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "inline.yaml:4:40: model.sha256: 'e3b0"));
    ck_assert_ptr_nonnull(strstr(e.msg, "(character 64, 'g', is not a hex digit)"));
    /* "" is no pin at all: fine for rollout, named as missing for net */
    ck_assert_int_eq(parse_str("run: {name: d}\nseeds: {count: 1}\nmodel: {sha256: ''}\n", &c, &e),
                     SF_OK);
    ck_assert_str_eq(c.model.sha256, "");
    ck_assert_int_eq(parse_str(NET_RUN(""), &c, &e), SF_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "model.sha256: a 64-digit hex SHA-256 is required"));
    ck_assert_int_eq(
        parse_str("run: {name: d}\nseeds: {count: 1}\nmodel: {sha256: null}\n", &c, &e),
        SF_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "model.sha256: is null"));
}
END_TEST

/* A config that did not come from a file (built in memory, or a RunConfig
 * message) must hold the canonical spelling already: its digest is what the
 * fleet compares. */
START_TEST(a_config_struct_must_hold_the_canonical_spelling) {
    sf_run_config c;
    sf_err e = {0};
    ck_assert_int_eq(parse_str(NET_RUN(SHA_LOWER), &c, &e), SF_OK);
    ck_assert_int_eq(sf_config_validate(&c, "mem", &e), SF_OK);
    memcpy(c.model.sha256, SHA_UPPER, sizeof c.model.sha256);
    ck_assert_int_eq(sf_config_validate(&c, "mem", &e), SF_ECONFIG);
    ck_assert_str_eq(e.msg,
                     "mem: model.sha256: '" SHA_UPPER
                     "' is not in lower case; a SHA-256 is stored and sent as '" SHA_LOWER "'");
    /* a RunConfig message carrying it is refused the same way */
    sf_config_scratch *sc = malloc(sizeof *sc);
    Spirefleet__RunConfig *m = sf_config_to_proto(&c, sc);
    sf_run_config back;
    ck_assert_int_eq(sf_config_from_proto(m, &back, &e), SF_ECONFIG);
    ck_assert_ptr_nonnull(
        strstr(e.msg, "RunConfig: model.sha256: '" SHA_UPPER "' is not in lower"));
    free(sc);
    snprintf(c.model.sha256, sizeof c.model.sha256, "abc");
    ck_assert_int_eq(sf_config_validate(&c, "mem", &e), SF_ECONFIG);
    ck_assert_str_eq(e.msg, "mem: model.sha256: 'abc' is not 64 hex digits (it has 3 characters)");
}
END_TEST

START_TEST(printed_config_parses_back_to_the_same_digest) {
    char path[1024];
    snprintf(path, sizeof path, "%s/configs/fleet-example.yaml", SF_SOURCE_ROOT);
    sf_run_config a, b;
    sf_err e = {0};
    ck_assert_int_eq(sf_config_load(path, &a, &e), SF_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    sf_config_print(&a, m);
    fclose(m);
    ck_assert_msg(sf_config_parse(buf, len, "printed", &b, &e) == SF_OK, "%s\n%s", e.msg, buf);
    free(buf);
    char da[65], db[65];
    sf_config_digest(&a, da);
    sf_config_digest(&b, db);
    ck_assert_str_eq(da, db);
    ck_assert_int_eq(memcmp(&a.search, &b.search, sizeof a.search), 0);
}
END_TEST

/* ---- golden values ---------------------------------------------------------
 * The config digest is in every label, so it must not move when the code
 * that computes it does. Recorded before the schema table drove the printed
 * config and the RunConfig copy: the digest, the SHA-256 of the packed
 * RunConfig (every key, execution-only ones too) and the printed config of
 * the shipped configs and of one that sets every key
 * (tests/fixtures/configs/good/every-key.yaml). A change here is a change
 * of every run's identity: bump it only on purpose. */
typedef struct golden_config {
    const char *file;   /* under the source root */
    const char *digest; /* sf_config_digest */
    const char *bytes;  /* SHA-256 of the packed sf_config_to_proto */
} golden_config;

static const golden_config golden_configs[] = {
    {"configs/local.yaml", "c81e224201c84841918bf8fda1cecdbc166c0b81343226a2610ddc3172bd754b",
     "e0b88007bef87043731c9eeac4b5035ab8df04081014b429a80e608dccef2224"},
    {"configs/fleet-example.yaml",
     "df93807667ae76f357fdec86351fb211f2c60a7bbba4d399701111fae08886b0",
     "06f9e6a4c3518d0ed740235bb4aa8b834cf39e9dc233d64da02d0de3d79e54f9"},
    {"configs/local-net.yaml", "50de6c3d0d38c5d9dc3c1c9ddb0a188e196671cf94afcda7cf717bc74eb0fe04",
     /* its model pin follows the built tiny bundle (tests/integration/test_fleet_net.sh) */
     "a78234eaba7c9d5f087040580023990f7d44d4db811579c8de261a5616fdb463"},
    {"tests/fixtures/configs/good/every-key.yaml",
     "7e51124584a3c31e63c14fccb0c807e55b449ec89d3f321d8ebcea806bfcec9f",
     /* the bytes moved when every-key.yaml set coordinator.max_workers and
      * model.url (execution-only keys: the digest above did not) */
     "7081334b5a52cdd5673754fd5f6fc48da5d96c4dc63e130ff866afe5ae2f307e"},
    {"tests/fixtures/configs/good/every-gate-key.yaml",
     "72cfb477bc31d6fafd5a16b065aa754d493d738bda9f8ca1228bbe646122df45",
     "a36fe50658ccdd2c3a93b3fdda87a04bc87c54ba1c8e163856ff11a726326f49"},
};

static void load_source_config(const char *file, sf_run_config *c) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", SF_SOURCE_ROOT, file);
    sf_err e = {0};
    ck_assert_msg(sf_config_load(path, c, &e) == SF_OK, "%s: %s", file, e.msg);
}

START_TEST(digests_and_runconfig_bytes_are_golden) {
    for (size_t i = 0; i < sizeof golden_configs / sizeof golden_configs[0]; i++) {
        const golden_config *g = &golden_configs[i];
        sf_run_config c;
        load_source_config(g->file, &c);
        char digest[65];
        ck_assert_int_eq(sf_config_digest(&c, digest), SF_OK);
        int print = getenv("SF_PRINT_GOLDEN") != NULL; /* the rows below, recomputed */
        ck_assert_msg(print || !strcmp(digest, g->digest), "%s: config digest %s, golden %s",
                      g->file, digest, g->digest);
        sf_config_scratch *s = malloc(sizeof *s);
        ck_assert_ptr_nonnull(s);
        Spirefleet__RunConfig *m = sf_config_to_proto(&c, s);
        size_t n = spirefleet__run_config__get_packed_size(m);
        uint8_t *buf = malloc(n ? n : 1);
        ck_assert_ptr_nonnull(buf);
        spirefleet__run_config__pack(m, buf);
        uint8_t h[crypto_hash_sha256_BYTES];
        crypto_hash_sha256(h, buf, n);
        char hex[65];
        sf_hex(h, sizeof h, hex);
        if (print)
            fprintf(stderr, "    {\"%s\", \"%s\",\n     \"%s\"},\n", g->file, digest, hex);
        ck_assert_msg(print || !strcmp(hex, g->bytes), "%s: RunConfig bytes %s, golden %s", g->file,
                      hex, g->bytes);
        free(buf);
        free(s);
    }
}
END_TEST

/* What `sf-fleet check` prints for the every-key config, byte for byte. */
START_TEST(printed_config_is_golden) {
    sf_run_config c;
    load_source_config("tests/fixtures/configs/good/every-key.yaml", &c);
    char *got = NULL;
    size_t got_len = 0;
    FILE *m = open_memstream(&got, &got_len);
    sf_config_print(&c, m);
    fclose(m);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/configs/good/every-key.printed.yaml",
             SF_SOURCE_ROOT);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char want[8192];
    size_t want_len = fread(want, 1, sizeof want - 1, f);
    fclose(f);
    want[want_len] = '\0';
    ck_assert_msg(got_len == want_len && !memcmp(got, want, want_len),
                  "printed config differs from %s:\n%s", path, got);
    free(got);
}
END_TEST

START_TEST(proto_round_trip) {
    sf_run_config a, b;
    sf_err e = {0};
    ck_assert_int_eq(parse_str("run: {name: p}\nseeds: {count: 5, job_size: 2}\n"
                               "play: {mode: gauntlet, potions: [Fire Potion]}\n",
                               &a, &e),
                     SF_OK);
    sf_config_scratch *s = malloc(sizeof *s);
    Spirefleet__RunConfig *m = sf_config_to_proto(&a, s);
    size_t n = spirefleet__run_config__get_packed_size(m);
    uint8_t *buf = malloc(n);
    spirefleet__run_config__pack(m, buf);
    Spirefleet__RunConfig *back = spirefleet__run_config__unpack(NULL, n, buf);
    ck_assert_ptr_nonnull(back);
    ck_assert_int_eq(sf_config_from_proto(back, &b, &e), SF_OK);
    ck_assert_str_eq(b.play.mode, "gauntlet");
    ck_assert_str_eq(b.play.potions[0], "Fire Potion");
    ck_assert_uint_eq(b.job_size, 2);
    char da[65], db[65];
    sf_config_digest(&a, da);
    sf_config_digest(&b, db);
    ck_assert_str_eq(da, db);
    /* a RunConfig with a missing section is refused, not crashed on */
    Spirefleet__SearchConfig *keep = back->search;
    back->search = NULL;
    ck_assert_int_eq(sf_config_from_proto(back, &b, &e), SF_EFORMAT);
    back->search = keep;
    spirefleet__run_config__free_unpacked(back, NULL);
    free(buf);
    free(s);
}
END_TEST

/* ---- the schema table ------------------------------------------------------ */

START_TEST(schema_table_agrees_with_itself_and_fleet_proto) {
    sf_err e = {0};
    ck_assert_msg(sf_config_schema_check(&e) == SF_OK, "%s", e.msg);
}
END_TEST

static const char *wire_name(const sf_config_key *k) {
    return k->wire ? k->wire : k->path;
}

/* The row carrying RunConfig field `name`, or NULL; fails on two. */
static const sf_config_key *row_of_wire(const char *name) {
    size_t n;
    const sf_config_key *rows = sf_config_schema(&n), *found = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(wire_name(&rows[i]), name))
            continue;
        ck_assert_msg(!found, "RunConfig.%s: carried by %s and %s", name, found ? found->path : "",
                      rows[i].path);
        found = &rows[i];
    }
    return found;
}

/* Walks fleet.proto's descriptors on its own (not through config.c): a field
 * added to RunConfig or to one of its sections without a row fails here. */
START_TEST(every_runconfig_field_has_a_row) {
    const ProtobufCMessageDescriptor *d = &spirefleet__run_config__descriptor;
    size_t fields = 0;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[i];
        if (fd->type != PROTOBUF_C_TYPE_MESSAGE || fd->label == PROTOBUF_C_LABEL_REPEATED) {
            ck_assert_msg(row_of_wire(fd->name) != NULL, "RunConfig.%s has no schema row",
                          fd->name);
            fields++;
            continue;
        }
        const ProtobufCMessageDescriptor *sd = fd->descriptor;
        for (unsigned j = 0; j < sd->n_fields; j++) {
            char name[128];
            snprintf(name, sizeof name, "%s.%s", fd->name, sd->fields[j].name);
            ck_assert_msg(row_of_wire(name) != NULL, "RunConfig.%s has no schema row", name);
            fields++;
        }
    }
    size_t rows;
    sf_config_schema(&rows);
    ck_assert_uint_eq(fields, rows); /* and no row without a field */
}
END_TEST

/* The value of a row's RunConfig field in `m`, found by name (test-side). */
static const void *proto_value(const Spirefleet__RunConfig *m, const sf_config_key *k,
                               const ProtobufCFieldDescriptor **fd_out) {
    const char *name = wire_name(k), *dot = strchr(name, '.');
    const ProtobufCMessage *msg = &m->base;
    if (dot) {
        char section[64];
        snprintf(section, sizeof section, "%.*s", (int)(dot - name), name);
        const ProtobufCFieldDescriptor *sfd =
            protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, section);
        ck_assert_ptr_nonnull(sfd);
        msg = *(ProtobufCMessage *const *)(const void *)((const char *)m + sfd->offset);
        ck_assert_ptr_nonnull(msg);
        name = dot + 1;
    }
    const ProtobufCFieldDescriptor *fd =
        protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, name);
    ck_assert_msg(fd != NULL, "%s: no field %s", k->path, wire_name(k));
    *fd_out = fd;
    return (const char *)msg + fd->offset;
}

static int list_count(const sf_config_key *k, const sf_run_config *c) {
    return *(const int *)(const void *)((const char *)c + k->count_off);
}

/* Whether row `k` holds the same value in a and b. */
static int row_equal(const sf_config_key *k, const sf_run_config *a, const sf_run_config *b) {
    const char *x = (const char *)a + k->off, *y = (const char *)b + k->off;
    int n = list_count(k, a);
    switch (k->type) {
    case SF_CFG_STR:
    case SF_CFG_SHA256: return !strcmp(x, y);
    case SF_CFG_ENCOUNTERS:
    case SF_CFG_CSCHED: {
        size_t entry =
            k->type == SF_CFG_ENCOUNTERS ? sizeof(sf_cfg_encounter) : sizeof(sf_cfg_csched);
        if (n != list_count(k, b))
            return 0;
        for (int i = 0; i < n; i++) {
            const char *ex = x + (size_t)i * entry, *ey = y + (size_t)i * entry;
            if (k->type == SF_CFG_ENCOUNTERS
                    ? ((const sf_cfg_encounter *)(const void *)ex)->id !=
                              ((const sf_cfg_encounter *)(const void *)ey)->id ||
                          ((const sf_cfg_encounter *)(const void *)ex)->weight !=
                              ((const sf_cfg_encounter *)(const void *)ey)->weight
                    : ((const sf_cfg_csched *)(const void *)ex)->below !=
                              ((const sf_cfg_csched *)(const void *)ey)->below ||
                          ((const sf_cfg_csched *)(const void *)ex)->c !=
                              ((const sf_cfg_csched *)(const void *)ey)->c)
                return 0;
        }
        return 1;
    }
    case SF_CFG_NAMES:
        if (n != list_count(k, b))
            return 0;
        for (int i = 0; i < n; i++)
            if (strcmp(x + (size_t)i * SF_CFG_NAME, y + (size_t)i * SF_CFG_NAME))
                return 0;
        return 1;
    default: return !memcmp(x, y, k->size);
    }
}

/* Whether row `k` of `c` is what RunConfig `m` carries in the row's field. */
static int row_in_proto(const sf_config_key *k, const sf_run_config *c,
                        const Spirefleet__RunConfig *m) {
    const ProtobufCFieldDescriptor *fd;
    const void *p = proto_value(m, k, &fd);
    const void *x = (const char *)c + k->off;
    switch (k->type) {
    case SF_CFG_STR:
    case SF_CFG_SHA256: return !strcmp(*(char *const *)p, x);
    case SF_CFG_U32: return *(const uint32_t *)p == *(const uint32_t *)x;
    case SF_CFG_U64: return *(const uint64_t *)p == *(const uint64_t *)x;
    case SF_CFG_I32: return *(const int32_t *)p == *(const int *)x;
    case SF_CFG_F64: return *(const double *)p == *(const double *)x;
    case SF_CFG_BOOL: return *(const protobuf_c_boolean *)p == *(const int *)x;
    default:
        return *(const size_t *)(const void *)((const char *)p - fd->offset +
                                               fd->quantifier_offset) == (size_t)list_count(k, c);
    }
}

/* Every row, C -> RunConfig -> bytes -> RunConfig -> C, on every shipped
 * config, the defaults and the every-key config: each value lands in the
 * field the row names and comes back the same. In every-key.yaml each
 * value is non-zero, so a row the copy skipped could not pass. */
START_TEST(every_row_round_trips_through_runconfig) {
    /* every-key.yaml (self-play), every-gate-key.yaml (a gate),
     * every-loop-key.yaml (a loop) and every-follow-key.yaml (self-play
     * following a champion) together set every key: each file can set only
     * its run kind's keys, and a pinned model excludes a followed one. */
    const char *files[] = {"tests/fixtures/configs/good/every-key.yaml",
                           "tests/fixtures/configs/good/every-gate-key.yaml",
                           "tests/fixtures/configs/good/every-loop-key.yaml",
                           "tests/fixtures/configs/good/every-follow-key.yaml",
                           "configs/local.yaml",
                           "configs/fleet-example.yaml",
                           "configs/local-net.yaml",
                           "configs/gate.yaml",
                           NULL};
    size_t nrows;
    const sf_config_key *rows = sf_config_schema(&nrows);
    int *set_somewhere = calloc(nrows, sizeof *set_somewhere);
    ck_assert_ptr_nonnull(set_somewhere);
    for (int f = 0; files[f]; f++) {
        sf_run_config a, b;
        sf_err e = {0};
        if (files[f]) {
            load_source_config(files[f], &a);
        } else {
            ck_assert_int_eq(parse_str("run: {name: d}\nseeds: {count: 1}\n", &a, &e), SF_OK);
        }
        const char *what = files[f] ? files[f] : "(defaults)";
        sf_config_scratch *s = malloc(sizeof *s);
        ck_assert_ptr_nonnull(s);
        Spirefleet__RunConfig *m = sf_config_to_proto(&a, s);
        for (size_t i = 0; i < nrows; i++)
            ck_assert_msg(row_in_proto(&rows[i], &a, m), "%s: %s is not in RunConfig.%s", what,
                          rows[i].path, wire_name(&rows[i]));
        size_t n = spirefleet__run_config__get_packed_size(m);
        uint8_t *buf = malloc(n ? n : 1);
        ck_assert_ptr_nonnull(buf);
        spirefleet__run_config__pack(m, buf);
        Spirefleet__RunConfig *back = spirefleet__run_config__unpack(NULL, n, buf);
        ck_assert_ptr_nonnull(back);
        ck_assert_msg(sf_config_from_proto(back, &b, &e) == SF_OK, "%s: %s", what, e.msg);
        for (size_t i = 0; i < nrows; i++) {
            ck_assert_msg(row_equal(&rows[i], &a, &b), "%s: %s changed on the way", what,
                          rows[i].path);
            if (f < 4) { /* the every-*-key files */
                const char *v = (const char *)&a + rows[i].off;
                int set = rows[i].type >= SF_CFG_ENCOUNTERS ? list_count(&rows[i], &a) > 0 : 0;
                for (size_t j = 0; j < rows[i].size && !set; j++)
                    set = v[j] != 0;
                set_somewhere[i] |= set;
            }
        }
        spirefleet__run_config__free_unpacked(back, NULL);
        free(buf);
        free(s);
    }
    for (size_t i = 0; i < nrows; i++)
        ck_assert_msg(set_somewhere[i],
                      "every-key.yaml / every-gate-key.yaml / every-loop-key.yaml / "
                      "every-follow-key.yaml: %s is "
                      "zero in all; give it a value",
                      rows[i].path);
    free(set_somewhere);
}
END_TEST

/* from_proto checks a message's values as the YAML path checks a file's,
 * and names the field. */
START_TEST(runconfig_values_are_checked_like_yaml) {
    sf_run_config a, b;
    sf_err e = {0};
    ck_assert_int_eq(parse_str("run: {name: d}\nseeds: {count: 4}\n", &a, &e), SF_OK);
    sf_config_scratch *s = malloc(sizeof *s);
    ck_assert_ptr_nonnull(s);
    Spirefleet__RunConfig *m = sf_config_to_proto(&a, s);
    m->search->trees = 0;
    ck_assert_int_eq(sf_config_from_proto(m, &b, &e), SF_EFORMAT);
    ck_assert_str_eq(e.msg, "RunConfig.search.trees: 0 is out of range 1..64");
    m = sf_config_to_proto(&a, s);
    m->search->evaluator = (char *)"oracle";
    ck_assert_int_eq(sf_config_from_proto(m, &b, &e), SF_EFORMAT);
    ck_assert_str_eq(e.msg,
                     "RunConfig.search.evaluator: expected one of rollout|net, got 'oracle'");
    m = sf_config_to_proto(&a, s);
    m->search->widening_c = NAN;
    ck_assert_int_eq(sf_config_from_proto(m, &b, &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "RunConfig.search.widening_c: expected a number"));
    m = sf_config_to_proto(&a, s);
    m->job_size = 0;
    ck_assert_int_eq(sf_config_from_proto(m, &b, &e), SF_EFORMAT);
    ck_assert_str_eq(e.msg, "RunConfig.job_size: 0 is out of range 1..100000");
    m = sf_config_to_proto(&a, s);
    m->labels = NULL;
    ck_assert_int_eq(sf_config_from_proto(m, &b, &e), SF_EFORMAT);
    ck_assert_str_eq(e.msg, "RunConfig.labels: the section is missing");
    free(s);
}
END_TEST

/* sf_config_to_json (`sf-fleet check --json`): one object per section,
 * every row's key in it with the struct's value; a u64 beyond jansson's
 * integers as its decimal text. */
START_TEST(json_config_has_every_row_with_its_value) {
    sf_run_config c;
    load_source_config("tests/fixtures/configs/good/every-key.yaml", &c);
    char *text = sf_config_to_json(&c);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_null(strchr(text, '\n')); /* one line */
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    ck_assert_msg(root != NULL, "not JSON: %s", je.text);
    size_t nrows, keys_seen = 0;
    const sf_config_key *rows = sf_config_schema(&nrows);
    for (size_t i = 0; i < nrows; i++) {
        const sf_config_key *k = &rows[i];
        const char *dot = strchr(k->path, '.');
        char section[64];
        snprintf(section, sizeof section, "%.*s", (int)(dot - k->path), k->path);
        json_t *sec = json_object_get(root, section);
        ck_assert_msg(json_is_object(sec), "%s: no section object", section);
        json_t *v = json_object_get(sec, dot + 1);
        ck_assert_msg(v != NULL, "%s: missing from the JSON", k->path);
        keys_seen++;
        const void *at = (const char *)&c + k->off;
        switch (k->type) {
        case SF_CFG_STR:
        case SF_CFG_SHA256: ck_assert_str_eq(json_string_value(v), (const char *)at); break;
        case SF_CFG_U32:
            ck_assert_msg(json_is_integer(v) && json_integer_value(v) == *(const uint32_t *)at,
                          "%s", k->path);
            break;
        case SF_CFG_U64:
            ck_assert_msg(json_is_integer(v) &&
                              (uint64_t)json_integer_value(v) == *(const uint64_t *)at,
                          "%s", k->path);
            break;
        case SF_CFG_I32:
            ck_assert_msg(json_is_integer(v) && json_integer_value(v) == *(const int *)at, "%s",
                          k->path);
            break;
        case SF_CFG_F64:
            ck_assert_msg(json_is_real(v) && json_real_value(v) == *(const double *)at, "%s",
                          k->path);
            break;
        case SF_CFG_BOOL:
            ck_assert_msg(json_is_boolean(v) && json_is_true(v) == !!*(const int *)at, "%s",
                          k->path);
            break;
        case SF_CFG_ENCOUNTERS:
            ck_assert_msg(json_is_object(v) && (int)json_object_size(v) == list_count(k, &c), "%s",
                          k->path);
            break;
        default:
            ck_assert_msg(json_is_array(v) && (int)json_array_size(v) == list_count(k, &c), "%s",
                          k->path);
            break;
        }
    }
    size_t in_json = 0;
    const char *name;
    json_t *sec;
    json_object_foreach(root, name, sec) in_json += json_object_size(sec);
    ck_assert_uint_eq(in_json, keys_seen); /* nothing but the rows */
    json_t *t = json_object_get(root, "train");
    ck_assert_str_eq(json_string_value(json_object_get(t, "arch")), "base");
    ck_assert_double_eq(json_real_value(json_object_get(t, "lr")), 0.0005);
    json_t *cs = json_object_get(json_object_get(root, "search"), "c_schedule");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(cs, 0), "below")), 300);
    ck_assert_ptr_null(json_object_get(json_array_get(cs, 2), "below"));
    json_decref(root);
    free(text);

    sf_err e = {0};
    ck_assert_int_eq(
        parse_str("run: {name: d, seed: 18000000000000000000}\nseeds: {count: 1}\n", &c, &e),
        SF_OK);
    text = sf_config_to_json(&c);
    ck_assert_ptr_nonnull(text);
    root = json_loads(text, 0, &je);
    ck_assert_ptr_nonnull(root);
    t = json_object_get(root, "run");
    ck_assert_str_eq(json_string_value(json_object_get(t, "seed")), "18000000000000000000");
    /* the defaults are filled in */
    t = json_object_get(root, "train");
    ck_assert_int_eq(json_integer_value(json_object_get(t, "steps")), 2000);
    ck_assert_str_eq(json_string_value(json_object_get(t, "arch")), "tiny");
    json_decref(root);
    free(text);
}
END_TEST

/* ---- docs/operator.md's schema table ---------------------------------------- */

/* Split a markdown table row into cells at '|' not escaped as '\|'. */
static int table_cells(char *line, char *cells[], int cap) {
    int n = 0;
    char *p = line;
    if (*p == '|')
        p++;
    char *start = p;
    for (; *p && n < cap; p++) {
        if (*p == '|' && p[-1] != '\\') {
            *p = '\0';
            cells[n++] = start;
            start = p + 1;
        }
    }
    for (int i = 0; i < n; i++) { /* trim */
        while (*cells[i] == ' ')
            cells[i]++;
        size_t l = strlen(cells[i]);
        while (l && cells[i][l - 1] == ' ')
            cells[i][--l] = '\0';
    }
    return n;
}

/* Split "a, b, c" into items (in place); backticks and a trailing
 * parenthesis (" (off)") are dropped. */
static int items(char *cell, char *out[], int cap) {
    int n = 0;
    for (char *p = cell; p && n < cap;) {
        char *comma = strstr(p, ", ");
        if (comma)
            *comma = '\0';
        char *paren = strstr(p, " (");
        if (paren)
            *paren = '\0';
        size_t l = strlen(p);
        if (l >= 2 && p[0] == '`' && p[l - 1] == '`') {
            p[l - 1] = '\0';
            p++;
        }
        out[n++] = p;
        p = comma ? comma + 2 : NULL;
    }
    return n;
}

/* The default as docs/operator.md spells it. */
static void doc_default(const sf_config_key *k, char *out, size_t cap) {
    if (k->type != SF_CFG_NAMES) {
        snprintf(out, cap, "%s", k->def ? k->def : "");
        return;
    }
    size_t len = (size_t)snprintf(out, cap, "[");
    for (const char *p = k->def ? k->def : ""; *p && len + 3 < cap; p++)
        len += (size_t)(*p == '|' ? snprintf(out + len, cap - len, ", ")
                                  : snprintf(out + len, cap - len, "%c", *p));
    snprintf(out + len, cap - len, "]");
}

/* The table lists every row and nothing else, with the row's default (the
 * encounter mix and c schedule defaults are prose), and the digest
 * paragraph names exactly the execution-only rows. */
START_TEST(operator_md_schema_table_matches_the_rows) {
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/operator.md", SF_SOURCE_ROOT);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t nrows;
    const sf_config_key *rows = sf_config_schema(&nrows);
    int *seen = calloc(nrows, sizeof *seen);
    ck_assert_ptr_nonnull(seen);
    char line[2048], exec_list[4096] = "";
    int in_schema = 0, listed = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        /* the digest paragraph: from the phrase to ')' across line breaks */
        const char *phrase = "execution-only fields cleared (";
        char *cl = strstr(line, phrase);
        size_t el = strlen(exec_list);
        if (cl)
            snprintf(exec_list, sizeof exec_list, "%s", cl + strlen(phrase));
        else if (el && !strchr(exec_list, ')'))
            snprintf(exec_list + el, sizeof exec_list - el, " %s", line);
        if (!strcmp(line, "### Schema")) {
            in_schema = 1;
            continue;
        }
        if (!in_schema || strncmp(line, "| `", 3)) {
            if (in_schema && listed && line[0] != '|')
                in_schema = 0; /* the table ended */
            continue;
        }
        char *cells[8], *keys[8], *defs[8];
        ck_assert_int_ge(table_cells(line, cells, 8), 4);
        int nk = items(cells[0], keys, 8), nd = items(cells[2], defs, 8);
        char section[64] = "";
        for (int i = 0; i < nk; i++) {
            char key[128];
            if (strchr(keys[i], '.')) {
                snprintf(section, sizeof section, "%.*s", (int)(strchr(keys[i], '.') - keys[i]),
                         keys[i]);
                snprintf(key, sizeof key, "%s", keys[i]);
            } else {
                snprintf(key, sizeof key, "%s.%s", section, keys[i]);
            }
            const sf_config_key *k = NULL;
            for (size_t r = 0; r < nrows; r++)
                if (!strcmp(rows[r].path, key))
                    k = &rows[r], seen[r]++;
            ck_assert_msg(k != NULL, "operator.md lists %s, which is no key of fleet/config.c",
                          key);
            listed++;
            if (k->type == SF_CFG_ENCOUNTERS || k->type == SF_CFG_CSCHED)
                continue; /* prose */
            const char *doc = nd == nk ? defs[i] : nd == 1 ? defs[0] : NULL;
            ck_assert_msg(doc != NULL, "operator.md: %s: one default per key, or one for all", key);
            if (!strcmp(doc, "**required**")) {
                ck_assert_msg(k->flags & SF_CFG_REQUIRED, "operator.md: %s is not required", key);
                continue;
            }
            ck_assert_msg(!(k->flags & SF_CFG_REQUIRED), "operator.md: %s is required", key);
            char want[256];
            doc_default(k, want, sizeof want);
            if (!strcmp(doc, "—"))
                doc = "";
            ck_assert_msg(!strcmp(doc, want), "operator.md: %s defaults to '%s', not '%s'", key,
                          want, doc);
        }
    }
    fclose(f);
    for (size_t r = 0; r < nrows; r++)
        ck_assert_msg(seen[r] == 1, "operator.md's schema table lists %s %d times", rows[r].path,
                      seen[r]);
    /* "(`run.output_dir`, `evald.*`, ...)": the rows flagged SF_CFG_EXEC */
    char *close = strchr(exec_list, ')');
    ck_assert_msg(close != NULL, "operator.md: no 'execution-only fields cleared (...)'");
    *close = '\0';
    char *named[32];
    int nn = items(exec_list, named, 32);
    for (size_t r = 0; r < nrows; r++) {
        int listed_exec = 0;
        for (int i = 0; i < nn; i++) {
            size_t l = strlen(named[i]);
            if (l > 2 && !strcmp(named[i] + l - 2, ".*"))
                listed_exec |= !strncmp(rows[r].path, named[i], l - 1);
            else
                listed_exec |= !strcmp(rows[r].path, named[i]);
        }
        ck_assert_msg(listed_exec == !!(rows[r].flags & SF_CFG_EXEC),
                      "operator.md: %s is %s the digest", rows[r].path,
                      listed_exec ? "named as left out of, but is in" : "in, but is left out of");
    }
    free(seen);
}
END_TEST

/* ---- scalars read one way (YAML 1.2 core schema; fleet/config.c "values") */

#define BASE "run: {name: x}\nseeds: {count: 4}\n"

/* `yaml` is refused, and the first problem is exactly `want`. */
static void refused_as(const char *yaml, const char *want) {
    sf_run_config c;
    sf_err e = {0};
    ck_assert_msg(parse_str(yaml, &c, &e) == SF_ECONFIG, "accepted:\n%s", yaml);
    ck_assert_msg(!strcmp(e.msg, want), "\n  expected: %s\n  got:      %s", want, e.msg);
}

static void accepted(const char *yaml, sf_run_config *c) {
    sf_err e = {0};
    ck_assert_msg(parse_str(yaml, c, &e) == SF_OK, "%s\n%s", yaml, e.msg);
}

/* YAML 1.1 reads yes/no/on/off/y/n as booleans, YAML 1.2 as text; quotes
 * make text in both. Only the core schema's six spellings are booleans. */
START_TEST(booleans_are_true_or_false_never_yes_no_or_quoted) {
    sf_run_config c;
    const char *t[] = {"true", "True", "TRUE"}, *f[] = {"false", "False", "FALSE"};
    for (int i = 0; i < 3; i++) {
        char y[128];
        snprintf(y, sizeof y, BASE "search: {gumbel: %s, clairvoyant: %s}\n", t[i], f[i]);
        accepted(y, &c);
        ck_assert_int_eq(c.search.gumbel, 1);
        ck_assert_int_eq(c.search.clairvoyant, 0);
    }
    refused_as(BASE "search: {gumbel: no}\n",
               "inline.yaml:3:18: search.gumbel: 'no' is a boolean in YAML 1.1 and text in YAML "
               "1.2; write false");
    refused_as(BASE "search: {gumbel: off}\n",
               "inline.yaml:3:18: search.gumbel: 'off' is a boolean in YAML 1.1 and text in YAML "
               "1.2; write false");
    refused_as(BASE "search: {gumbel: On}\n",
               "inline.yaml:3:18: search.gumbel: 'On' is a boolean in YAML 1.1 and text in YAML "
               "1.2; write true");
    refused_as(BASE "search: {gumbel: y}\n",
               "inline.yaml:3:18: search.gumbel: 'y' is a boolean in YAML 1.1 and text in YAML "
               "1.2; write true");
    refused_as(BASE "search: {gumbel: \"no\"}\n",
               "inline.yaml:3:18: search.gumbel: expected true or false, got 'no' quoted, which "
               "YAML reads as text; write true or false without quotes");
    refused_as(BASE "search: {gumbel: 'true'}\n",
               "inline.yaml:3:18: search.gumbel: expected true or false, got 'true' quoted, "
               "which YAML reads as text; write true or false without quotes");
    refused_as(BASE "search: {gumbel: 1}\n",
               "inline.yaml:3:18: search.gumbel: expected true or false, got '1'");
}
END_TEST

/* A quoted or block scalar is text in every YAML, so never a number. */
START_TEST(quoted_numbers_are_text) {
    refused_as("run: {name: x}\nseeds: {count: \"4\"}\n",
               "inline.yaml:2:16: seeds.count: expected an integer, got '4' quoted, which YAML "
               "reads as text; write the number without quotes");
    refused_as(BASE "search: {widening_alpha: '0.5'}\n",
               "inline.yaml:3:26: search.widening_alpha: expected a number, got '0.5' quoted, "
               "which YAML reads as text; write the number without quotes");
    refused_as("run: {name: x}\nseeds:\n  count: |-\n    4\n",
               "inline.yaml:3:10: seeds.count: expected an integer, got '4' as a block scalar, "
               "which YAML reads as text; write the number without quotes");
    refused_as(BASE "play: {encounters: {weak: \"1\"}}\n",
               "inline.yaml:3:27: play.encounters: weight of 'weak' must be a positive number, "
               "got '1' quoted, which YAML reads as text");
    refused_as(BASE "search: {c_schedule: [{below: '10', c: 1}, {c: 2}]}\n",
               "inline.yaml:3:31: search.c_schedule.below: expected an integer, got '10' quoted, "
               "which YAML reads as text; write the number without quotes");
    /* text keys take quoted values, and a number's spelling as text */
    sf_run_config c;
    accepted("run: {name: \"4\"}\nseeds: {count: 4}\n", &c);
    ck_assert_str_eq(c.name, "4");
}
END_TEST

/* Integers: [-+]?[0-9]+ in decimal; what YAML 1.1 and 1.2 read apart, or
 * only one of them reads as a number, is refused with the reason. */
START_TEST(integers_are_plain_decimal_digits) {
    sf_run_config c;
    accepted(BASE "search: {simulations: +300}\nshard: {zstd_level: -0}\n", &c);
    ck_assert_uint_eq(c.search.simulations, 300);
    ck_assert_int_eq(c.shard.zstd_level, 0);
    accepted("run: {name: x, seed: 0}\nseeds: {count: 4}\n", &c);
    ck_assert_uint_eq(c.run_seed, 0);
    /* 010 is 8 in YAML 1.1, 10 in YAML 1.2 */
    refused_as("run: {name: x}\nseeds: {count: 010}\n",
               "inline.yaml:2:16: seeds.count: '010' has a leading zero, which YAML 1.1 reads as "
               "octal and YAML 1.2 as decimal; write it without the leading zero");
    refused_as(BASE "shard: {zstd_level: -05}\n",
               "inline.yaml:3:21: shard.zstd_level: '-05' has a leading zero, which YAML 1.1 "
               "reads as octal and YAML 1.2 as decimal; write it without the leading zero");
    refused_as("run: {name: x}\nseeds: {count: 0x10}\n",
               "inline.yaml:2:16: seeds.count: '0x10' is hexadecimal (16); write the number in "
               "decimal");
    refused_as("run: {name: x}\nseeds: {count: 0o10}\n",
               "inline.yaml:2:16: seeds.count: '0o10' is octal (8); write the number in decimal");
    refused_as("run: {name: x}\nseeds: {count: 1e3}\n",
               "inline.yaml:2:16: seeds.count: expected an integer, got the float '1e3' (write "
               "1000)");
    refused_as("run: {name: x}\nseeds: {count: 4.0}\n",
               "inline.yaml:2:16: seeds.count: expected an integer, got the float '4.0' (write "
               "4)");
    refused_as("run: {name: x}\nseeds: {count: .5}\n",
               "inline.yaml:2:16: seeds.count: expected an integer, got '.5'");
    refused_as("run: {name: x}\nseeds: {count: 1_000}\n",
               "inline.yaml:2:16: seeds.count: '1_000' is 1000 in YAML 1.1 and text in YAML 1.2; "
               "write 1000 (without '_')");
    refused_as("run: {name: x}\nseeds: {count: 1:30}\n",
               "inline.yaml:2:16: seeds.count: '1:30' is a base-60 number in YAML 1.1 and text "
               "in YAML 1.2; write the number in decimal");
    refused_as("run: {name: x}\nseeds: {count: inf}\n",
               "inline.yaml:2:16: seeds.count: expected an integer, got 'inf'");
    refused_as("run: {name: x}\nseeds: {count: -4}\n",
               "inline.yaml:2:16: seeds.count: expected a non-negative integer, got '-4'");
    refused_as(BASE "search: {c_schedule: [{below: 0x10, c: 1}, {c: 2}]}\n",
               "inline.yaml:3:31: search.c_schedule.below: '0x10' is hexadecimal (16); write the "
               "number in decimal");
}
END_TEST

/* Numbers: the core schema's float, [-+]?(.5|5|5.|5.5)([eE][-+]?[0-9]+)?,
 * finite; never C's other spellings (hexadecimal floats, inf, nan). */
START_TEST(numbers_follow_the_core_schema_float) {
    sf_run_config c;
    const struct {
        const char *v;
        double want;
    } ok[] = {{".5", 0.5}, {"+.5", 0.5}, {"5e-1", 0.5},  {"5E-1", 0.5}, {"1.", 1.0},
              {"0", 0},    {"1", 1},     {"0.25", 0.25}, {"00.5", 0.5}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char y[128];
        snprintf(y, sizeof y, BASE "search: {widening_alpha: %s}\n", ok[i].v);
        accepted(y, &c);
        ck_assert_double_eq(c.search.widening_alpha, ok[i].want);
    }
    refused_as(BASE "search: {widening_alpha: 0x1p-1}\n",
               "inline.yaml:3:26: search.widening_alpha: expected a number, got '0x1p-1' (write "
               "the number in decimal)");
    refused_as(BASE "search: {widening_alpha: inf}\n",
               "inline.yaml:3:26: search.widening_alpha: expected a number, got 'inf'");
    refused_as(BASE "search: {widening_alpha: nan}\n",
               "inline.yaml:3:26: search.widening_alpha: expected a number, got 'nan'");
    refused_as(BASE "search: {widening_alpha: .nan}\n",
               "inline.yaml:3:26: search.widening_alpha: expected a finite number, got '.nan'");
    refused_as(BASE "search: {widening_alpha: -.inf}\n",
               "inline.yaml:3:26: search.widening_alpha: expected a finite number, got '-.inf'");
    refused_as(BASE "search: {widening_alpha: 1e400}\n",
               "inline.yaml:3:26: search.widening_alpha: '1e400' is too large, or too near 0, "
               "for a double");
    refused_as(BASE "search: {widening_alpha: 0_5}\n",
               "inline.yaml:3:26: search.widening_alpha: '0_5' is 05 in YAML 1.1 and text in "
               "YAML 1.2; write 05 (without '_')");
    refused_as(BASE "search: {widening_c: 010}\n",
               "inline.yaml:3:22: search.widening_c: '010' has a leading zero, which YAML 1.1 "
               "reads as octal and YAML 1.2 as decimal; write it without the leading zero");
    refused_as(BASE "play: {encounters: {weak: 0x1p1}}\n",
               "inline.yaml:3:27: play.encounters: weight of 'weak': expected a number, got "
               "'0x1p1' (write the number in decimal)");
    refused_as(BASE "search: {c_schedule: [{c: infinity}]}\n",
               "inline.yaml:3:27: search.c_schedule.c: expected a number, got 'infinity'");
}
END_TEST

/* Every integer key refuses one above its range, and 10^12 and 2^64 where
 * they are above it, naming the key and the range; a value between the
 * range's top and 2^64 is compared exactly, not as a rounded double. */
START_TEST(every_integer_key_names_itself_and_its_range) {
    size_t n;
    const sf_config_key *k = sf_config_schema(&n);
    int checked = 0;
    for (size_t i = 0; i < n; i++) {
        if (k[i].type != SF_CFG_U32 && k[i].type != SF_CFG_U64 && k[i].type != SF_CFG_I32)
            continue;
        const char *dot = strchr(k[i].path, '.');
        int sec = (int)(dot - k[i].path);
        char above[32];
        snprintf(above, sizeof above, "%llu", (unsigned long long)k[i].hi + 1);
        const char *values[] = {above, "1000000000000", "18446744073709551616"};
        for (int v = 0; v < 3; v++) {
            if (v == 1 && k[i].hi >= 1e12)
                continue;
            char y[256], want[256];
            const char *rest = !strcmp(k[i].path, "seeds.count") ? "" : ", count: 4";
            if (!strncmp(k[i].path, "run.", 4))
                snprintf(y, sizeof y, "run: {name: x, %s: %s}\nseeds: {count: 4}\n", dot + 1,
                         values[v]);
            else if (!strncmp(k[i].path, "seeds.", 6))
                snprintf(y, sizeof y, "run: {name: x}\nseeds: {%s: %s%s}\n", dot + 1, values[v],
                         rest);
            else
                snprintf(y, sizeof y, BASE "%.*s: {%s: %s}\n", sec, k[i].path, dot + 1, values[v]);
            sf_run_config c;
            sf_err e = {0};
            ck_assert_msg(parse_str(y, &c, &e) == SF_ECONFIG, "%s: %s accepted", k[i].path,
                          values[v]);
            snprintf(want, sizeof want, ": %s: %s is out of range %.0f..%.0f", k[i].path, values[v],
                     k[i].lo, k[i].hi);
            ck_assert_msg(strstr(e.msg, want) && !strncmp(e.msg, "inline.yaml:", 12),
                          "\n  expected: ...%s\n  got:      %s", want, e.msg);
            checked++;
        }
    }
    ck_assert_int_ge(checked, 60);
}
END_TEST

/* 100,000 levels: the parse stops at the first node deeper than 8, named
 * by its path, as the only problem (before the tree is loaded, so the time
 * does not grow with the square of the depth). */
START_TEST(deep_nesting_stops_at_the_depth_limit) {
    const int levels = 100000;
    const char *open[] = {"[", "{a: "};
    const char *close[] = {"]", "}"};
    const char *want[] = {"inline.yaml:3:15: play: nested deeper than 8 levels (no key of the "
                          "schema is)",
                          "inline.yaml:3:36: play.a.a.a.a.a.a.a.a: nested deeper than 8 levels "
                          "(no key of the schema is)"};
    for (int s = 0; s < 2; s++) {
        size_t ol = strlen(open[s]), cap = strlen(BASE) + 8 + levels * (ol + 1) + 8;
        char *y = malloc(cap), *p = y;
        ck_assert_ptr_nonnull(y);
        p += sprintf(p, BASE "play: ");
        for (int i = 0; i < levels; i++)
            p = (char *)memcpy(p, open[s], ol) + ol;
        for (int i = 0; i < levels; i++)
            *p++ = close[s][0];
        *p++ = '\n';
        sf_run_config c;
        sf_err e = {0};
        collected got = {0};
        ck_assert_int_eq(
            sf_config_parse_all(y, (size_t)(p - y), "inline.yaml", &c, collect, &got, &e),
            SF_ECONFIG);
        ck_assert_int_eq(got.n, 1);
        ck_assert_str_eq(e.msg, want[s]);
        free(y);
    }
}
END_TEST

/* A mapping of 100,000 keys with one given twice: the second is reported
 * at its line, naming the first's (by one sort, not by comparing each key
 * with every one before it). */
START_TEST(a_key_given_twice_among_many_is_found) {
    const int n = 100000;
    size_t cap = strlen(BASE) + 32 + (size_t)n * 16;
    char *y = malloc(cap), *p = y;
    ck_assert_ptr_nonnull(y);
    p += sprintf(p, BASE "play:\n  encounters:\n");
    for (int i = 0; i < n; i++)
        p += sprintf(p, "    k%d: 1\n", i);
    p += sprintf(p, "    k7: 1\n");
    sf_run_config c;
    sf_err e = {0};
    collected got = {0};
    ck_assert_int_eq(sf_config_parse_all(y, (size_t)(p - y), "inline.yaml", &c, collect, &got, &e),
                     SF_ECONFIG);
    ck_assert_int_eq(got.n, 1);
    /* BASE is lines 1-2, play 3, encounters 4, k0 5: k7 is line 12 */
    ck_assert_str_eq(e.msg, "inline.yaml:100005:5: play.encounters.k7: given twice (first at "
                            "line 12); YAML would keep one silently");
    free(y);
}
END_TEST

/* !!str 4 is text, like "4"; the loaded tree cannot tell it from 4, so
 * every explicit tag is refused from the parser's events. */
START_TEST(an_explicit_str_tag_is_refused) {
    refused_as("run: {name: x}\nseeds: {count: !!str 4}\n",
               "inline.yaml:2:16: seeds.count: YAML tag 'tag:yaml.org,2002:str' is not allowed "
               "(write the plain value; quote it to mean text)");
    refused_as("run: {name: !!str x}\nseeds: {count: 4}\n",
               "inline.yaml:1:13: run.name: YAML tag 'tag:yaml.org,2002:str' is not allowed "
               "(write the plain value; quote it to mean text)");
}
END_TEST

/* Replace every "from" in `in` with "to", into a new string. */
static char *replaced(const char *in, const char *from, const char *to) {
    size_t fl = strlen(from), tl = strlen(to), n = 0;
    for (const char *p = strstr(in, from); p; p = strstr(p + fl, from))
        n++;
    char *out = malloc(strlen(in) + n * tl + 1), *o = out;
    ck_assert_ptr_nonnull(out);
    for (const char *p = in;;) {
        const char *at = strstr(p, from);
        size_t l = at ? (size_t)(at - p) : strlen(p);
        memcpy(o, p, l), o += l;
        if (!at)
            break;
        memcpy(o, to, tl), o += tl;
        p = at + fl;
    }
    *o = '\0';
    return out;
}

static void digest_of(const char *yaml, char hex[65]) {
    sf_run_config c;
    sf_err e = {0};
    ck_assert_msg(sf_config_parse(yaml, strlen(yaml), "v.yaml", &c, &e) == SF_OK, "%s", e.msg);
    ck_assert_int_eq(sf_config_digest(&c, hex), SF_OK);
}

/* YAML allows a byte order mark before the document, CRLF (or CR) line
 * ends, and a tab between "key:" and its value: each reads exactly like
 * the plain file (same digest, same positions in errors). A tab in the
 * indentation is a syntax error that says so; a byte order mark inside a
 * value is refused. */
START_TEST(bom_crlf_and_tab_after_colon_read_like_the_plain_file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/configs/local.yaml", SF_SOURCE_ROOT);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char plain[1 << 16];
    size_t len = fread(plain, 1, sizeof plain - 1, f);
    fclose(f);
    plain[len] = '\0';
    char want[65], got[65];
    digest_of(plain, want);
    char *bom = malloc(len + 4);
    ck_assert_ptr_nonnull(bom);
    memcpy(bom, "\xef\xbb\xbf", 3);
    memcpy(bom + 3, plain, len + 1);
    char *crlf = replaced(plain, "\n", "\r\n"), *cr = replaced(plain, "\n", "\r");
    char *tab = replaced(plain, ": ", ":\t"), *bom_crlf = replaced(bom, "\n", "\r\n");
    const char *variants[] = {bom, crlf, cr, tab, bom_crlf};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        digest_of(variants[i], got);
        ck_assert_msg(!strcmp(want, got), "variant %zu reads differently", i);
    }
    free(bom), free(crlf), free(cr), free(tab), free(bom_crlf);
    const char *bad = "run:\n  name: x\nseeds:\n  count: q\n";
    const char *msg = "inline.yaml:4:10: seeds.count: expected an integer, got 'q'";
    refused_as(bad, msg);
    char *v = replaced(bad, "\n", "\r\n");
    refused_as(v, msg);
    free(v);
    refused_as("\xef\xbb\xbfrun:\n  name: x\nseeds:\n  count: q\n", msg);
    refused_as("run:\n\tname: x\nseeds:\n  count: 4\n",
               "inline.yaml:2:1: YAML syntax error: found character that cannot start any token "
               "(a tab: YAML indents with spaces only)");
    refused_as("run:\n  name: \xef\xbb\xbfx\nseeds:\n  count: 4\n",
               "inline.yaml:2:9: run.name: a byte order mark (U+FEFF at offset 0) in a value");
}
END_TEST

#include "test-config.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("config", "config", 0, NULL, NULL)
